/* The SQLite backend of the store (store.h, store_be.h): one database, aggregator.db, in the
 * state directory (WAL, synchronous=FULL: the WAL is fsynced at every commit; opened through
 * wal_vfs.h, which writes a commit's frames in one call). Every statement is
 * prepared once; a batch is one transaction of INSERT OR IGNOREs plus one state_log row holding
 * the states of every experiment it touched, so its COMMIT makes the reports and the states that
 * count them durable together.
 *
 * The state log (docs/aggregator.md, "The state log"): put_state adds the experiment's state and
 * counters to the commit's state_log row (state_log_codec.h) instead of rewriting its row in
 * `experiments`. Rewriting rows of many experiments dirtied a page of `experiments` each, and a
 * row per experiment cost an insert each; one row per commit costs one insert however many
 * experiments the batch spans. The open replays the log in commit order into `cur` (each
 * experiment's last logged state), which readers take before the row; once STATE_LOG_MAX states
 * are logged, the COMMIT that reaches it first writes each experiment's last state into its row
 * and empties the log, in the same transaction (so no crash can see half of it). Closing compacts
 * too, so a cleanly stopped database has an empty log. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "state_id.h"
#include "state_log_codec.h"
#include "store_be.h"
#include "store_shard.h"
#include "wal_vfs.h"

typedef struct sq_store {
    sqlite3 *db;
    sqlite3_stmt *begin, *commit, *rollback;
    sqlite3_stmt *add_report, *has_report, *add_decision, *has_experiment;
    sqlite3_stmt *prune_expired, *prune_oldest, *arm_counts, *add_experiment;
    int64_t log_states; /* states in the committed rows of state_log */
    /* known[id]: experiment `id` was found in `experiments`, so put_state need not look again
     * (rows are never deleted; a rollback, which may take back a row just added, clears it) */
    uint8_t *known;
    size_t known_cap;
    /* The open transaction's states: arena is its state_log row as it is encoded (the header,
     * written by the COMMIT, then the entries as put_state adds them); pend[i] points at entry
     * i's state in it, for `cur` once the COMMIT is done. */
    struct sq_pending {
        int64_t exp;
        agg_store_counters c;
        size_t off, len; /* in arena */
    } * pend;
    size_t n_pend, cap_pend;
    uint8_t *arena;
    size_t arena_len, arena_cap;
    sqlite3_stmt *put_log, *put_exp_state;
    /* Each experiment's last state in the committed log (open addressing by id, cap_cur a power
     * of two or 0, id 0 free): what readers take before its row, and compaction writes there. */
    struct sq_cur {
        int64_t exp;
        agg_store_counters c;
        uint8_t *state;
        size_t len;
    } * cur;
    size_t n_cur, cap_cur;
    /* Row shards (store_shard.h; NULL: every row here): the last applied batch is
     * row_shards.applied_batch, written by each COMMIT that holds rows of the shards. */
    agg_shards *shards;
    sqlite3_stmt *put_applied;
    /* Retention's floor: no committed decision has retain_until_ms below retain_floor (0: not
     * known), so a prune before it deletes nothing and need not run its query, which cost about
     * 2% of the committer's CPU at every commit. txn_floor is the open transaction's (its inserts
     * lower it, a prune that leaves nothing expired raises it); its COMMIT makes it the
     * committed one, a rollback drops it. */
    uint64_t retain_floor, txn_floor;
    sqlite3_stmt *min_retain;
} sq_store;

/* States logged in state_log that trigger its compaction: a restore replays at most this many
 * (about 150 bytes each for a small policy), and compaction's cost (one UPDATE per experiment in
 * the log) is spread over this many logged states. */
#define STATE_LOG_MAX 16384

#define say   agg_store_say
#define BE(s) ((sq_store *)(s)->be)

/* The tables version 3 adds (store.h). */
#define NODE_TABLES_SQL                                                                            \
    "CREATE TABLE IF NOT EXISTS nodes("                                                            \
    " id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, started_at_ms INTEGER NOT NULL,"          \
    " last_seen_ms INTEGER NOT NULL, generation INTEGER NOT NULL DEFAULT 0);"                      \
    "CREATE TABLE IF NOT EXISTS exp_node_state("                                                   \
    " experiment INTEGER NOT NULL, node TEXT NOT NULL, state BLOB NOT NULL,"                       \
    " policy_version INTEGER NOT NULL, reports INTEGER NOT NULL, duplicates INTEGER NOT NULL,"     \
    " assignments INTEGER NOT NULL, committed_at_ms INTEGER NOT NULL,"                             \
    " PRIMARY KEY (experiment, node)) WITHOUT ROWID;"                                              \
    "CREATE TABLE IF NOT EXISTS node_key("                                                         \
    " id INTEGER PRIMARY KEY CHECK (id = 1), public_key BLOB NOT NULL,"                            \
    " created_at_ms INTEGER NOT NULL);"

/* The state log (above): a row per commit, `states` in the encoding of state_log_codec.h; seq
 * orders them (appended at max + 1; emptied whole by compaction). A database of version 2 made
 * before the log gets it at its next open, and loses the indexes by experiment. */
#define STATE_LOG_SQL                                                                              \
    "CREATE TABLE IF NOT EXISTS state_log(seq INTEGER PRIMARY KEY, states BLOB NOT NULL);"
static const char upgrade_sql[] = STATE_LOG_SQL "DROP INDEX IF EXISTS reports_by_experiment;"
                                                "DROP INDEX IF EXISTS decisions_by_experiment;";

/* Version 3 (the node tables, nodes, exp_node_state and node_key, are PostgreSQL's, kept here
 * so that one schema describes both backends; SQLite is one node and leaves them empty). No index
 * leads with `experiment`: with reports spread over many experiments such an
 * index dirtied a page per report and experiment (its entries of one experiment sit together),
 * which cost a commit more than the rows themselves (docs/performance.md, "Experiments"); the
 * queries of one experiment (arm counts, export) scan instead, and the restore counts every
 * experiment's reports in one pass. The index by retain_until_ms serves retention (one ordered
 * delete across experiments). */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS experiments("
    " id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, settings TEXT NOT NULL,"
    " origin TEXT NOT NULL CHECK (origin IN ('config', 'runtime')),"
    " running INTEGER NOT NULL, state BLOB, policy_version INTEGER NOT NULL DEFAULT 0,"
    " reports INTEGER NOT NULL DEFAULT 0, duplicates INTEGER NOT NULL DEFAULT 0,"
    " assignments INTEGER NOT NULL DEFAULT 0, created_at_ms INTEGER NOT NULL,"
    " updated_at_ms INTEGER NOT NULL, node TEXT);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BLOB PRIMARY KEY, experiment INTEGER NOT NULL, arm INTEGER NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon REAL NOT NULL, propensity REAL NOT NULL,"
    " policy_version INTEGER NOT NULL, value REAL NOT NULL, expires_at_ms INTEGER NOT NULL,"
    " reported_at_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BLOB PRIMARY KEY, experiment INTEGER NOT NULL, arm INTEGER NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon REAL NOT NULL, propensity REAL NOT NULL,"
    " policy_version INTEGER NOT NULL, issued_at_ms INTEGER NOT NULL,"
    " expires_at_ms INTEGER NOT NULL, retain_until_ms INTEGER NOT NULL) WITHOUT ROWID;"
    /* Retention deletes the decisions retained least long first, a chunk per transaction:
     * without this index every chunk would scan the whole table. */
    "CREATE INDEX IF NOT EXISTS decisions_by_retention ON decisions(retain_until_ms);"
    /* The state's identity (state_id.h). A database of an older version gets the table (empty)
     * at its first open here and an identity by migration. */
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BLOB NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms INTEGER NOT NULL);" NODE_TABLES_SQL
        STATE_LOG_SQL;

/* Version 1 to 2, in the open transaction (agg_meta_reader.migrate): the old tables renamed, the
 * new ones created, the rows copied with the experiment `default` (id 1), the old ones dropped.
 * ?1 settings (NULL: no row `default`, for empty tables), ?2 the retention added to expiry. */
static const char migrate_rename_sql[] =
    "ALTER TABLE reports RENAME TO v1_reports;"
    "ALTER TABLE decisions RENAME TO v1_decisions;"
    "DROP INDEX IF EXISTS decisions_by_expiry;"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BLOB NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms INTEGER NOT NULL);";
static const char *const migrate_copy_sql[] = {
    "INSERT INTO experiments(id, name, settings, origin, running, state, policy_version,"
    " reports, duplicates, assignments, created_at_ms, updated_at_ms)"
    " SELECT 1, 'default', ?1, 'config', 1, s.policy_state, coalesce(s.policy_version, 0),"
    " coalesce(s.reports, 0), coalesce(s.duplicates, 0), coalesce(s.assignments, 0), ?3,"
    " coalesce(s.updated_at_ms, ?3) FROM (SELECT 1) LEFT JOIN state s ON s.id = 1"
    " WHERE ?1 IS NOT NULL",
    "INSERT INTO reports(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
    " policy_version, value, expires_at_ms, reported_at_ms)"
    " SELECT assignment_id, 1, arm, mechanism, epsilon, propensity, policy_version, value,"
    " expires_at_ms, reported_at_ms FROM v1_reports",
    "INSERT INTO decisions(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
    " policy_version, issued_at_ms, expires_at_ms, retain_until_ms)"
    " SELECT assignment_id, 1, arm, mechanism, epsilon, propensity, policy_version,"
    " issued_at_ms, expires_at_ms, expires_at_ms + ?2 FROM v1_decisions",
    "DROP TABLE v1_reports",
    "DROP TABLE v1_decisions",
    "DROP TABLE state",
};

static ldpb_err sql_fail(agg_store *s, const char *what)
{
    say(s->errmsg, "%s: %s", what, sqlite3_errmsg(BE(s)->db));
    return LDPB_EIO;
}

static ldpb_err exec(agg_store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(BE(s)->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        say(s->errmsg, "%s", msg ? msg : sqlite3_errmsg(BE(s)->db));
        sqlite3_free(msg);
        return LDPB_EIO;
    }
    return LDPB_OK;
}

static ldpb_err prepare(agg_store *s, sqlite3_stmt **st, const char *sql)
{
    if (sqlite3_prepare_v3(BE(s)->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return sql_fail(s, "prepare");
    return LDPB_OK;
}

/* Runs a prepared statement that returns no rows, then resets it. */
static ldpb_err step_done(agg_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        return sql_fail(s, what);
    return LDPB_OK;
}

static ldpb_err compact_log(agg_store *s);
static ldpb_err flush_states(agg_store *s);

/* ---- the log's current states (sq_store.cur) ---------------------------------------------- */

static size_t cur_slot(const sq_store *b, int64_t exp)
{
    size_t mask = b->cap_cur - 1, i = (size_t)((uint64_t)exp * 0x9e3779b97f4a7c15u >> 20) & mask;
    while (b->cur[i].exp && b->cur[i].exp != exp)
        i = (i + 1) & mask;
    return i;
}

static const struct sq_cur *cur_find(const sq_store *b, int64_t exp)
{
    if (!b->n_cur || exp <= 0)
        return NULL;
    const struct sq_cur *e = &b->cur[cur_slot(b, exp)];
    return e->exp ? e : NULL;
}

/* Makes `len` bytes of `state` and `c` experiment exp's (>= 1) current state. */
static ldpb_err cur_put(sq_store *b, int64_t exp, const agg_store_counters *c, const uint8_t *state,
                        size_t len)
{
    if (b->n_cur + 1 > b->cap_cur / 2) { /* at most half full: probes stay short */
        size_t cap = b->cap_cur ? b->cap_cur * 2 : 64;
        struct sq_cur *old = b->cur, *t = calloc(cap, sizeof *t);
        if (!t)
            return LDPB_ENOMEM;
        size_t old_cap = b->cap_cur;
        b->cur = t;
        b->cap_cur = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].exp)
                b->cur[cur_slot(b, old[i].exp)] = old[i];
        free(old);
    }
    struct sq_cur *e = &b->cur[cur_slot(b, exp)];
    if (!e->exp || e->len != len) {
        uint8_t *m = realloc(e->state, len);
        if (!m)
            return LDPB_ENOMEM;
        e->state = m;
    }
    if (!e->exp)
        b->n_cur++;
    e->exp = exp;
    e->c = *c;
    e->len = len;
    memcpy(e->state, state, len);
    return LDPB_OK;
}

static void cur_clear(sq_store *b)
{
    for (size_t i = 0; i < b->cap_cur; i++) {
        free(b->cur[i].state);
        b->cur[i] = (struct sq_cur){0};
    }
    b->n_cur = 0;
}

static ldpb_err compact_log(agg_store *s);
static ldpb_err replay_log(agg_store *s);

static void sq_close(agg_store *s)
{
    sq_store *b = BE(s);
    if (!b)
        return;
    /* A cleanly stopped state keeps its states in their rows (best effort: a failure leaves the
     * log, which the next open reads as it is). */
    if (b->begin && b->log_states > 0 && sqlite3_get_autocommit(b->db) && !exec(s, "BEGIN")) {
        if (compact_log(s) || exec(s, "COMMIT"))
            (void)exec(s, "ROLLBACK");
    }
    sqlite3_finalize(b->begin);
    sqlite3_finalize(b->commit);
    sqlite3_finalize(b->rollback);
    sqlite3_finalize(b->add_report);
    sqlite3_finalize(b->has_report);
    sqlite3_finalize(b->add_decision);
    sqlite3_finalize(b->has_experiment);
    sqlite3_finalize(b->put_log);
    sqlite3_finalize(b->put_exp_state);
    cur_clear(b);
    free(b->cur);
    free(b->known);
    free(b->pend);
    free(b->arena);
    sqlite3_finalize(b->prune_expired);
    sqlite3_finalize(b->prune_oldest);
    sqlite3_finalize(b->arm_counts);
    sqlite3_finalize(b->add_experiment);
    sqlite3_finalize(b->put_applied);
    sqlite3_finalize(b->min_retain);
    agg_shards_close(b->shards); /* the writers stop; the attached files close with db */
    if (b->db && !sqlite3_get_autocommit(b->db))
        sqlite3_exec(b->db, "ROLLBACK", NULL, NULL, NULL); /* --check-config's open */
    sqlite3_close(b->db);                                  /* checkpoints the WAL */
    free(b);
    s->be = NULL;
}

/* The first integer of a one-row, one-column query; -1 on failure. */
static sqlite3_int64 query_count(agg_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (prepare(s, &st, sql))
        return -1;
    sqlite3_int64 n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

/* The committed size of `decisions`, counted once at open; the transactions keep it current. */
static ldpb_err count_decisions(agg_store *s)
{
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st, "SELECT count(*) FROM decisions");
    if (err)
        return err;
    if (sqlite3_step(st) == SQLITE_ROW)
        s->decision_rows = (uint64_t)sqlite3_column_int64(st, 0);
    else
        err = sql_fail(s, "counting decisions");
    sqlite3_finalize(st);
    return err;
}

/* Creates the database file 0600, or brings an existing one (and a -wal or -shm left beside it)
 * to 0600, before SQLite opens it: SQLite creates its -wal and -shm files with the database
 * file's permissions, so the reports never become readable by group or others through a
 * permissive umask or directory. A symbolic link or a non-regular file is refused. */
ldpb_err agg_sqlite_make_private(const char *path, int create, char *errmsg)
{
    int fd = open(
        path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (create ? O_CREAT : 0),
        0600);
    if (fd < 0) {
        if (!create && errno == ENOENT)
            return LDPB_OK;
        int link = errno == ELOOP;
        say(errmsg, "%s: cannot open: %s", path, link ? "it is a symbolic link" : strerror(errno));
        return link ? LDPB_EINVAL : LDPB_EIO;
    }
    ldpb_err err = LDPB_OK;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        say(errmsg, "%s: cannot stat: %s", path, strerror(errno));
        err = LDPB_EIO;
    } else if (!S_ISREG(st.st_mode)) {
        say(errmsg, "%s: not a regular file", path);
        err = LDPB_EINVAL;
    } else if ((st.st_mode & 0777) != 0600 && fchmod(fd, 0600) != 0) {
        say(errmsg, "%s: cannot make it mode 0600: %s", path, strerror(errno));
        err = LDPB_EIO;
    }
    close(fd);
    return err;
}

static int64_t sq_count_meta(agg_store *s)
{
    int64_t n = query_count(s, "SELECT count(*) FROM meta");
    if (n < 0)
        sql_fail(s, "reading meta");
    return n;
}

static int64_t sq_count_data(agg_store *s, int shape)
{
    int64_t n = query_count(s, shape == 1 ? "SELECT (SELECT count(*) FROM state) +"
                                            " (SELECT count(*) FROM reports) +"
                                            " (SELECT count(*) FROM decisions)"
                                          : "SELECT (SELECT count(*) FROM experiments) +"
                                            " (SELECT count(*) FROM reports) +"
                                            " (SELECT count(*) FROM decisions)");
    if (n < 0)
        sql_fail(s, "reading the state");
    return n;
}

static int sq_shape(agg_store *s)
{
    int64_t n = query_count(s, "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                               " AND name = 'experiments') * 2 + (SELECT count(*) FROM"
                               " sqlite_master WHERE type = 'table' AND name = 'state')");
    if (n < 0) {
        sql_fail(s, "reading the schema");
        return -1;
    }
    if (n < 2)
        return (int)n;
    int64_t v3 = query_count(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                                " name = 'nodes'");
    if (v3 < 0) {
        sql_fail(s, "reading the schema");
        return -1;
    }
    return v3 ? 3 : 2;
}

static ldpb_err sq_create(agg_store *s)
{
    ldpb_err err = exec(s, schema_sql);
    if (err) {
        char why[AGG_STORE_ERRMAX];
        snprintf(why, sizeof why, "%s", s->errmsg);
        say(s->errmsg, "cannot create the schema: %s", why);
    }
    return err;
}

static int sq_get_meta(agg_store *s, const char *key, char *value, size_t cap)
{
    sqlite3_stmt *st = NULL;
    if (prepare(s, &st, "SELECT value FROM meta WHERE key = ?1"))
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), got = -1;
    if (rc == SQLITE_ROW) {
        const char *have = (const char *)sqlite3_column_text(st, 0);
        snprintf(value, cap, "%s", have ? have : "NULL");
        got = 1;
    } else if (rc == SQLITE_DONE) {
        got = 0;
    } else {
        sql_fail(s, "reading meta");
    }
    sqlite3_finalize(st);
    return got;
}

static int sq_find(agg_store *s, const char *name, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    if (prepare(s, &st, "SELECT id FROM experiments WHERE name = ?1"))
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st), got = -1;
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        got = 1;
    } else if (rc == SQLITE_DONE) {
        got = 0;
    } else {
        sql_fail(s, "reading experiments");
    }
    sqlite3_finalize(st);
    return got;
}

static int64_t sq_next_id(agg_store *s)
{
    int64_t n = query_count(s, "SELECT coalesce(max(id), 0) + 1 FROM experiments");
    if (n < 0)
        sql_fail(s, "reading experiments");
    return n;
}

static ldpb_err sq_migrate(agg_store *s, const char *settings, uint64_t retention_ms)
{
    ldpb_err err = exec(s, migrate_rename_sql);
    if (!err)
        err = exec(s, schema_sql);
    int64_t now = agg_store_now_ms();
    for (size_t i = 0; !err && i < sizeof migrate_copy_sql / sizeof migrate_copy_sql[0]; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(BE(s)->db, migrate_copy_sql[i], -1, &st, NULL) != SQLITE_OK) {
            sqlite3_finalize(st);
            return sql_fail(s, "migrating");
        }
        int np = sqlite3_bind_parameter_count(st);
        if (np >= 1)
            sqlite3_bind_text(st, 1, settings, -1, SQLITE_STATIC); /* NULL binds NULL */
        if (np >= 2)
            sqlite3_bind_int64(
                st, 2, retention_ms > INT64_MAX / 2 ? INT64_MAX / 2 : (sqlite3_int64)retention_ms);
        if (np >= 3)
            sqlite3_bind_int64(st, 3, now);
        if (sqlite3_step(st) != SQLITE_DONE)
            err = sql_fail(s, "migrating");
        sqlite3_finalize(st);
    }
    return err;
}

/* Version 2 to 3: the column and the tables (empty: one node, whose name SQLite never needs). */
static ldpb_err sq_migrate_v2(agg_store *s, const char *node)
{
    (void)node;
    int64_t has = query_count(s, "SELECT count(*) FROM pragma_table_info('experiments')"
                                 " WHERE name = 'node'");
    if (has < 0)
        return sql_fail(s, "migrating");
    ldpb_err err = has ? LDPB_OK : exec(s, "ALTER TABLE experiments ADD COLUMN node TEXT");
    if (!err)
        err = exec(s, NODE_TABLES_SQL);
    return err;
}

static const agg_meta_reader sq_meta_reader = {sq_shape,      sq_create,   sq_count_meta,
                                               sq_count_data, sq_get_meta, sq_find,
                                               sq_next_id,    sq_migrate,  sq_migrate_v2};

/* Row shards (store_shard.h): aggregator.db's row of how many there are and the last batch
 * whose states it holds. A state without shards has no such table. */
#define ROW_SHARDS_SQL                                                                             \
    "CREATE TABLE IF NOT EXISTS row_shards(id INTEGER PRIMARY KEY CHECK (id = 1),"                 \
    " shards INTEGER NOT NULL, applied_batch INTEGER NOT NULL);"

/* The shards' databases attached to `db` as rows0 ... (outside a transaction: SQLite attaches
 * nothing inside one). */
static ldpb_err attach_files(sqlite3 *db, const char *dir, unsigned n, char *errmsg)
{
    char path[4096], name[16];
    for (unsigned i = 0; i < n; i++) {
        sqlite3_stmt *st = NULL;
        snprintf(name, sizeof name, "rows%u", i);
        char sql[64];
        snprintf(sql, sizeof sql, "ATTACH DATABASE ?1 AS %s", name);
        int ok = agg_shard_path(path, sizeof path, dir, i) &&
                 sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!ok) {
            say(errmsg, "%s: cannot attach: %s", path, sqlite3_errmsg(db));
            return LDPB_EIO;
        }
    }
    return LDPB_OK;
}

/* The columns of a report and of a decision row that aggregator.db and the shards share. */
static const char report_cols[] = "assignment_id, experiment, arm, mechanism, epsilon, propensity,"
                                  " policy_version, value, expires_at_ms, reported_at_ms";
static const char decision_cols[] = "assignment_id, experiment, arm, mechanism, epsilon,"
                                    " propensity, policy_version, issued_at_ms, expires_at_ms,"
                                    " retain_until_ms";

/* Temporary views `reports` and `decisions` over the attached shards, which the queries of one
 * database read unchanged (an unqualified name is looked up in the temporary schema first): the
 * rows of applied batches only. After the schema's creation, whose unqualified names they would
 * take. */
static ldpb_err shard_views(sqlite3 *db, unsigned n, char *errmsg)
{
    const char *rcols = report_cols, *dcols = decision_cols;
    size_t cap = 1024 + (size_t)n * 512;
    char *sql = malloc(cap);
    if (!sql) {
        say(errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    for (int t = 0; t < 2; t++) {
        size_t len =
            (size_t)snprintf(sql, cap, "CREATE TEMP VIEW %s AS ", t ? "decisions" : "reports");
        for (unsigned i = 0; i < n; i++)
            len += (size_t)snprintf(sql + len, cap - len,
                                    "%sSELECT %s FROM rows%u.%s WHERE batch <= (SELECT"
                                    " applied_batch FROM main.row_shards)",
                                    i ? " UNION ALL " : "", t ? dcols : rcols, i,
                                    t ? "decisions" : "reports");
        char *msg = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
            say(errmsg, "the views of the row shards: %s", msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            free(sql);
            return LDPB_EIO;
        }
    }
    free(sql);
    return LDPB_OK;
}

static ldpb_err attach_shards(sqlite3 *db, const char *dir, unsigned n, char *errmsg)
{
    ldpb_err err = attach_files(db, dir, n, errmsg);
    return err ? err : shard_views(db, n, errmsg);
}

/* The state's row shards (1: none), from its row_shards table; -1 on failure. */
static int64_t stored_shards(sqlite3 *db, uint64_t *applied)
{
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                           " name = 'row_shards'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    *applied = 0;
    if (n != 1)
        return n < 0 ? -1 : 1;
    n = -1;
    if (sqlite3_prepare_v2(db, "SELECT shards, applied_batch FROM row_shards WHERE id = 1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 1) >= 0) {
        n = sqlite3_column_int64(st, 0);
        *applied = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return n >= 1 && n <= AGG_SHARDS_MAX ? n : -1;
}

/* Inside the open's transaction: the configuration's row shards against the state's. A state
 * that holds data keeps its number (its rows are where agg_shard_of put them); a fresh one takes
 * the configuration's. *create: a new sharded state. */
static ldpb_err settle_shards(agg_store *s, unsigned want, const char *path, char *errmsg,
                              uint64_t *applied, int *create)
{
    *create = 0;
    int64_t stored = stored_shards(BE(s)->db, applied);
    if (stored < 0) {
        say(errmsg, "%s: unreadable row_shards table: %s", path, sqlite3_errmsg(BE(s)->db));
        return LDPB_ECORRUPT;
    }
    if ((unsigned)stored == want)
        return LDPB_OK;
    if (!s->fresh) {
        say(errmsg,
            "%s: the state keeps its report and decision rows in %lld database%s (row_shards = "
            "%lld), the configuration says row_shards = %u: the number is fixed when a state is "
            "created",
            path, (long long)stored, stored > 1 ? "s" : "", (long long)stored, want);
        return LDPB_ESTATE;
    }
    *applied = 0;
    *create = want > 1;
    char sql[256];
    if (want > 1)
        snprintf(sql, sizeof sql,
                 ROW_SHARDS_SQL
                 "DELETE FROM row_shards;"
                 " INSERT INTO row_shards(id, shards, applied_batch) VALUES (1, %u, 0);",
                 want);
    else
        snprintf(sql, sizeof sql, "DROP TABLE row_shards;");
    if (exec(s, sql)) {
        say(errmsg, "%s: %s", path, s->errmsg);
        return LDPB_EIO;
    }
    return LDPB_OK;
}

/* --check-config of a sharded state: its shards attached before the open's transaction, so that
 * the restore's checks count their rows (the views, shard_views, come after the schema's
 * creation); no writer starts and nothing is deleted (the views read the applied batches only).
 * A shard file missing is refused here, not created. *n: the state's shards. */
/* Every one of the state's n shard files is there: a missing one is refused, never created (an
 * attach would create it empty). */
static ldpb_err shard_files_present(const char *dir, unsigned n, char *errmsg)
{
    char path[4096];
    struct stat st;
    for (unsigned i = 0; i < n; i++) {
        if (!agg_shard_path(path, sizeof path, dir, i) || stat(path, &st) != 0) {
            say(errmsg, "%s: missing: the state keeps its rows in %u databases", path, n);
            return LDPB_ESTATE;
        }
    }
    return LDPB_OK;
}

static ldpb_err check_shards(agg_store *s, const char *dir, int64_t *n, char *errmsg)
{
    uint64_t applied = 0;
    *n = stored_shards(BE(s)->db, &applied);
    if (*n <= 1)
        return LDPB_OK; /* none, or a table the open's checks report */
    ldpb_err err = shard_files_present(dir, (unsigned)*n, errmsg);
    return err ? err : attach_files(BE(s)->db, dir, (unsigned)*n, errmsg);
}

/* The least retain_until_ms of every decision: aggregator.db's, or the row shards' (the committed
 * rows of their attached files; a row a writer's open transaction deleted still counts, which
 * only makes the floor lower). */
static ldpb_err prepare_min_retain(agg_store *s)
{
    sq_store *b = BE(s);
    if (!b->shards)
        return prepare(s, &b->min_retain, "SELECT min(retain_until_ms) FROM main.decisions");
    char sql[64 + AGG_SHARDS_MAX * 72];
    size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT min(m) FROM (");
    for (unsigned i = 0; i < s->row_shards; i++)
        len += (size_t)snprintf(sql + len, sizeof sql - len,
                                "%sSELECT min(retain_until_ms) AS m FROM rows%u.decisions",
                                i ? " UNION ALL " : "", i);
    snprintf(sql + len, sizeof sql - len, ")");
    return prepare(s, &b->min_retain, sql);
}

/* The statements of the batches, prepared once. */
static ldpb_err prepare_all(agg_store *s)
{
    sq_store *b = BE(s);
    ldpb_err err = prepare(s, &b->begin, "BEGIN");
    if (!err)
        err = prepare(s, &b->commit, "COMMIT");
    if (!err)
        err = prepare(s, &b->rollback, "ROLLBACK");
    if (!err)
        err =
            prepare(s, &b->add_report,
                    "INSERT OR IGNORE INTO main.reports(assignment_id, experiment, arm, mechanism,"
                    " epsilon, propensity, policy_version, value, expires_at_ms, reported_at_ms)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!err)
        err = prepare(s, &b->has_report, "SELECT 1 FROM main.reports WHERE assignment_id = ?1");
    if (!err)
        err = prepare(
            s, &b->add_decision,
            "INSERT OR IGNORE INTO main.decisions(assignment_id, experiment, arm, mechanism,"
            " epsilon, propensity, policy_version, issued_at_ms, expires_at_ms,"
            " retain_until_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    if (!err)
        err = prepare(s, &b->has_experiment, "SELECT 1 FROM experiments WHERE id = ?1");
    if (!err)
        err = prepare(s, &b->prune_expired,
                      "DELETE FROM main.decisions WHERE assignment_id IN (SELECT assignment_id"
                      " FROM main.decisions WHERE retain_until_ms < ?1 ORDER BY retain_until_ms"
                      " LIMIT ?2)");
    if (!err)
        err = prepare(s, &b->prune_oldest,
                      "DELETE FROM main.decisions WHERE assignment_id IN (SELECT assignment_id"
                      " FROM main.decisions ORDER BY retain_until_ms LIMIT ?1)");
    /* A name that exists inserts nothing (sqlite3_changes 0). Without an id, SQLite's next
     * rowid: max + 1. */
    if (!err)
        err = prepare(s, &b->add_experiment,
                      "INSERT INTO experiments(id, name, settings, origin, running,"
                      " created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?5)"
                      " ON CONFLICT (name) DO NOTHING");
    if (!err)
        err = prepare_min_retain(s);
    if (!err)
        err = prepare(s, &b->arm_counts,
                      "SELECT arm, count(*) FROM reports WHERE experiment = ?1 GROUP BY arm");
    if (!err)
        err = count_decisions(s);
    return err;
}

/* The URL is "sqlite:" (or "sqlite:" followed by nothing else): the database is always
 * state_dir/aggregator.db, beside the files that belong to it (lock, state_id, replay log). */
static ldpb_err sq_open(agg_store *s, const char *url, const char *dir, const agg_store_meta *meta,
                        char *errmsg)
{
    (void)url;
    sq_store *b = calloc(1, sizeof *b);
    if (!b)
        return LDPB_ENOMEM;
    s->be = b;
    char path[4096];
    ldpb_err err;
    static const char *const sidecars[] = {"-wal", "-shm"};
    for (size_t i = 0; i < 2; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s%s", dir, AGG_STORE_DB_NAME, sidecars[i]) >=
            sizeof path) {
            say(errmsg, "state_dir %s: path too long", dir);
            return LDPB_EINVAL;
        }
        err = agg_sqlite_make_private(path, 0, errmsg);
        if (err)
            return err;
    }
    snprintf(path, sizeof path, "%s/%s", dir, AGG_STORE_DB_NAME);
    err = agg_sqlite_make_private(path, 1, errmsg);
    if (err)
        return err;
    /* wal_vfs.h: a commit's WAL frames in one write (NULL: the default VFS) */
    if (sqlite3_open_v2(path, &b->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                        agg_wal_vfs_name()) != SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", path, b->db ? sqlite3_errmsg(b->db) : "out of memory");
        return LDPB_EIO;
    }
    sqlite3_extended_result_codes(b->db, 1);
    if (sqlite3_libversion_number() < 3033000) { /* compaction's UPDATE ... FROM */
        say(errmsg, "%s: SQLite %s is too old: the store needs 3.33 or later", path,
            sqlite3_libversion());
        return LDPB_EIO;
    }
    if (exec(s, "PRAGMA journal_mode=WAL") || exec(s, "PRAGMA synchronous=FULL") ||
        exec(s, "PRAGMA busy_timeout=5000")) {
        say(errmsg, "%s: %s", path, s->errmsg);
        return LDPB_EIO;
    }
    int64_t checked_shards = 0;
    if (meta->check_only && (err = check_shards(s, dir, &checked_shards, errmsg)) != LDPB_OK)
        return err;
    if (exec(s, "BEGIN IMMEDIATE")) {
        say(errmsg, "%s: %s", path, s->errmsg);
        return LDPB_EIO;
    }
    err = agg_store_settle_meta(s, &sq_meta_reader, meta, errmsg);
    if (!err && exec(s, upgrade_sql)) {
        say(errmsg, "%s: adding the state log: %s", path, s->errmsg);
        err = LDPB_EIO;
    }
    /* An empty log of the per-experiment layout of unreleased development builds (one that
     * such a build's clean stop left) is replaced; one with rows is refused by replay_log. */
    if (!err &&
        query_count(
            s, "SELECT count(*) FROM pragma_table_info('state_log') WHERE name = 'states'") == 0 &&
        query_count(s, "SELECT count(*) FROM state_log") == 0 &&
        exec(s, "DROP TABLE state_log;" STATE_LOG_SQL)) {
        say(errmsg, "%s: replacing the empty state log: %s", path, s->errmsg);
        err = LDPB_EIO;
    }
    if (!err && (err = replay_log(s)) != LDPB_OK)
        say(errmsg, "%s: %s", path, s->errmsg);
    if (!err)
        err = agg_state_id_settle(b->db, dir, !s->fresh, meta->new_state, &s->ident, errmsg,
                                  AGG_STORE_ERRMAX);
    unsigned want_shards = meta->row_shards > 1 ? meta->row_shards : 1;
    uint64_t applied = 0;
    int create_shards = 0;
    if (!err && want_shards > AGG_SHARDS_MAX) {
        say(errmsg, "row_shards = %u: 1 to %d expected", want_shards, AGG_SHARDS_MAX);
        err = LDPB_EINVAL;
    }
    if (!err)
        err = settle_shards(s, want_shards, path, errmsg, &applied, &create_shards);
    if (!err && checked_shards > 1)
        err = shard_views(b->db, (unsigned)checked_shards, errmsg);
    if (!err && meta->open_hook && meta->open_hook(meta->open_hook_ctx)) {
        say(errmsg, "%s: the open failed by the test hook", path);
        err = LDPB_EIO;
    }

    if (err) {
        exec(s, "ROLLBACK");
        return err;
    }
    /* --check-config: the transaction stays open until the close rolls it back. */
    if (!meta->check_only && exec(s, "COMMIT")) {
        say(errmsg, "%s: %s", path, s->errmsg);
        return LDPB_EIO;
    }
    /* After the COMMIT: a marker without its database would read as a lost database. */
    err =
        meta->check_only ? LDPB_OK : agg_state_id_record(dir, &s->ident, errmsg, AGG_STORE_ERRMAX);
    if (err)
        return err;
    if (want_shards > 1 && !meta->check_only) {
        err = agg_shards_open(&b->shards, dir, want_shards, applied, create_shards, errmsg);
        if (!err)
            err = attach_shards(b->db, dir, want_shards, errmsg);
        if (!err &&
            prepare(s, &b->put_applied, "UPDATE row_shards SET applied_batch = ?1 WHERE id = 1")) {
            say(errmsg, "%s: %s", path, s->errmsg);
            err = LDPB_EIO;
        }
        if (err)
            return err;
        s->row_shards = want_shards;
    }
    err = prepare_all(s);
    if (err)
        say(errmsg, "%s: %s", path, s->errmsg);
    return err;
}

/* At the open: the log's rows in commit order into `cur` (a later state of an experiment replaces
 * an earlier one), and the count of states they hold. */
static ldpb_err replay_log(agg_store *s)
{
    sq_store *b = BE(s);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(b->db, "SELECT seq, states FROM state_log ORDER BY seq", -1, &st,
                           NULL) != SQLITE_OK) {
        /* e.g. the per-experiment rows of an unreleased development layout */
        say(s->errmsg, "the state log is not of this version's layout: %s", sqlite3_errmsg(b->db));
        sqlite3_finalize(st);
        return LDPB_ECORRUPT;
    }
    ldpb_err err = LDPB_OK;
    int rc;
    b->log_states = 0;
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 seq = sqlite3_column_int64(st, 0);
        const uint8_t *p = sqlite3_column_blob(st, 1);
        size_t n = (size_t)sqlite3_column_bytes(st, 1);
        agg_slog_entry *e = NULL;
        size_t count = 0;
        char why[160];
        if (sqlite3_column_type(st, 1) != SQLITE_BLOB) {
            say(s->errmsg, "state log row %lld: not a blob", (long long)seq);
            err = LDPB_ECORRUPT;
            break;
        }
        err = agg_slog_decode(p, n, &e, &count, why, sizeof why);
        if (err) {
            say(s->errmsg, "state log row %lld: %s", (long long)seq, why);
            break;
        }
        for (size_t i = 0; i < count && !err; i++)
            if ((err = cur_put(b, e[i].exp, &e[i].c, e[i].state, e[i].len)) != LDPB_OK)
                say(s->errmsg, "out of memory");
        b->log_states += (int64_t)count;
        free(e);
    }
    if (!err && rc != SQLITE_DONE)
        err = sql_fail(s, "reading the state log");
    sqlite3_finalize(st);
    return err;
}

/* The columns every experiment query reads, after id and name: state, policy_version, reports,
 * duplicates, assignments (from its row; read_state takes its last logged state from `cur`
 * instead where it has one), the count of its reports. EXP_FROM(filter) joins what they read:
 * `filter` restricts the reports to one experiment (or is empty); the reports are counted in one
 * pass, not a scan per experiment. */
#define EXP_COLUMNS                                                                                \
    "e.state, e.policy_version, e.reports, e.duplicates, e.assignments, coalesce(c.n, 0)"
#define EXP_FROM(filter)                                                                           \
    " FROM experiments e LEFT JOIN (SELECT experiment, count(*) AS n FROM reports" filter          \
    " GROUP BY experiment) c ON c.experiment = e.id"

/* Experiment `exp`'s state and counters: its last logged state if it has one, else the columns
 * at `col` (EXP_COLUMNS); checked against its count of reports. */
static ldpb_err read_state(agg_store *s, sqlite3_stmt *st, int col, int64_t exp, const char *name,
                           uint8_t **blob, size_t *len, agg_store_counters *c)
{
    int64_t v[5];
    for (int i = 0; i < 5; i++)
        v[i] = sqlite3_column_int64(st, col + 1 + i);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    const void *p = sqlite3_column_blob(st, col);
    int has_state = sqlite3_column_type(st, col) != SQLITE_NULL;
    const struct sq_cur *l = cur_find(BE(s), exp);
    if (l) { /* the decoder bounds these: states of 1 .. 2^32 - 1 bytes, counters <= 2^63 - 1 */
        v[0] = (int64_t)l->c.policy_version;
        v[1] = (int64_t)l->c.reports;
        v[2] = (int64_t)l->c.duplicates;
        v[3] = (int64_t)l->c.assignments;
        n = l->len;
        p = l->state;
        has_state = 1;
    }
    if (has_state && (n == 0 || !p)) {
        say(s->errmsg, "experiment '%s': the policy state is empty", name);
        return LDPB_ECORRUPT;
    }
    ldpb_err err = agg_store_check_counts(s, name, has_state, v);
    if (err)
        return err;
    c->policy_version = (uint64_t)v[0];
    c->reports = (uint64_t)v[1];
    c->duplicates = (uint64_t)v[2];
    c->assignments = (uint64_t)v[3];
    *blob = NULL;
    *len = 0;
    if (!has_state)
        return LDPB_OK;
    *blob = malloc(n);
    if (!*blob) {
        say(s->errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    memcpy(*blob, p, n);
    *len = n;
    return LDPB_OK;
}

static ldpb_err sq_load(agg_store *s, int64_t exp, uint8_t **blob, size_t *len,
                        agg_store_counters *c)
{
    *blob = NULL;
    *len = 0;
    memset(c, 0, sizeof *c);
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(
        s, &st,
        "SELECT e.name, " EXP_COLUMNS EXP_FROM(" WHERE experiment = ?1") " WHERE e.id = ?1");
    if (err)
        return err;
    sqlite3_bind_int64(st, 1, exp);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        err = read_state(s, st, 1, exp, name ? name : "?", blob, len, c);
    } else if (rc == SQLITE_DONE) {
        say(s->errmsg, "no experiment with id %lld", (long long)exp);
        err = LDPB_ENOEXPERIMENT;
    } else {
        err = sql_fail(s, "reading the state");
    }
    sqlite3_finalize(st);
    return err;
}

/* One row of the experiments query into `e`. */
static ldpb_err read_exp(agg_store *s, sqlite3_stmt *st, agg_store_exp *e)
{
    e->id = sqlite3_column_int64(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    const char *settings = (const char *)sqlite3_column_text(st, 2);
    const char *origin = (const char *)sqlite3_column_text(st, 3);
    if (!name || !agg_store_exp_name_valid(name) || !settings || !origin) {
        say(s->errmsg, "experiment %lld: a malformed row", (long long)e->id);
        return LDPB_ECORRUPT;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->from_config = strcmp(origin, "config") == 0;
    e->running = sqlite3_column_int64(st, 4) != 0;
    e->settings = strdup(settings);
    if (!e->settings) {
        say(s->errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    return read_state(s, st, 5, e->id, e->name, &e->state, &e->state_len, &e->counters);
}

static ldpb_err sq_experiments(agg_store *s, agg_store_exp **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    ldpb_err err =
        prepare(s, &st,
                "SELECT e.id, e.name, e.settings, e.origin, e.running, " EXP_COLUMNS EXP_FROM(
                    "") " ORDER BY e.id");
    if (err)
        return err;
    agg_store_exp *v = NULL;
    size_t nv = 0, cap = 0;
    int rc;
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nv == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            agg_store_exp *w = realloc(v, ncap * sizeof *w);
            if (!w) {
                say(s->errmsg, "out of memory");
                err = LDPB_ENOMEM;
                break;
            }
            v = w;
            cap = ncap;
        }
        memset(&v[nv], 0, sizeof v[nv]);
        err = read_exp(s, st, &v[nv++]);
    }
    if (!err && rc != SQLITE_DONE)
        err = sql_fail(s, "reading experiments");
    sqlite3_finalize(st);
    if (err) {
        agg_store_experiments_free(v, nv);
        return err;
    }
    *out = v;
    *n = nv;
    return LDPB_OK;
}

static ldpb_err sq_add_experiment(agg_store *s, int64_t want, const char *name,
                                  const char *settings, int from_config, int64_t *id)
{
    sqlite3_stmt *st = BE(s)->add_experiment;
    if (want > 0)
        sqlite3_bind_int64(st, 1, want);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, settings, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, from_config ? "config" : "runtime", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, agg_store_now_ms());
    ldpb_err err = step_done(s, st, "adding an experiment");
    if (err)
        return err;
    if (sqlite3_changes(BE(s)->db) == 0) {
        int64_t have = 0;
        if (sq_find(s, name, &have) == 1)
            say(s->errmsg, "the experiment '%s' exists (id %lld)", name, (long long)have);
        else
            say(s->errmsg, "the experiment '%s' exists", name);
        return LDPB_ESTATE;
    }
    *id = sqlite3_last_insert_rowid(BE(s)->db);
    return LDPB_OK;
}

/* An UPDATE of one experiment row by id (?1) with one more parameter (?2). */
static ldpb_err update_exp(agg_store *s, const char *sql, int64_t id, const char *text, int64_t num,
                           int *found)
{
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st, sql);
    if (err)
        return err;
    sqlite3_bind_int64(st, 1, id);
    if (text)
        sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(st, 2, num);
    err = sqlite3_step(st) == SQLITE_DONE ? LDPB_OK : sql_fail(s, "updating an experiment");
    sqlite3_finalize(st);
    *found = !err && sqlite3_changes(BE(s)->db) == 1;
    return err;
}

static ldpb_err sq_set_running(agg_store *s, int64_t id, int running, int *found)
{
    return update_exp(s, "UPDATE experiments SET running = ?2 WHERE id = ?1", id, NULL, running,
                      found);
}

static ldpb_err sq_set_settings(agg_store *s, int64_t id, const char *settings, int *found)
{
    return update_exp(s, "UPDATE experiments SET settings = ?2 WHERE id = ?1", id, settings, 0,
                      found);
}

/* Inserts meta rows in the open transaction. */
static ldpb_err sq_write_meta(agg_store *s, const agg_meta_row *rows, size_t n)
{
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
    for (size_t i = 0; i < n && !err; i++) {
        sqlite3_bind_text(st, 1, rows[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, rows[i].value, -1, SQLITE_STATIC);
        err = step_done(s, st, "writing meta");
    }
    sqlite3_finalize(st);
    return err;
}

static ldpb_err sq_begin(agg_store *s)
{
    BE(s)->txn_floor = BE(s)->retain_floor;
    return step_done(s, BE(s)->begin, "BEGIN");
}

/* Writes one state into experiment `exp`'s row (in the open transaction). */
static ldpb_err put_exp_state(agg_store *s, int64_t exp, const agg_store_counters *c,
                              const uint8_t *state, size_t len)
{
    sq_store *b = BE(s);
    ldpb_err err = LDPB_OK;
    if (!b->put_exp_state)
        err = prepare(s, &b->put_exp_state,
                      "UPDATE experiments SET state = ?2, policy_version = ?3, reports = ?4,"
                      " duplicates = ?5, assignments = ?6, updated_at_ms ="
                      " CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
                      " WHERE id = ?1");
    if (err)
        return err;
    sqlite3_stmt *st = b->put_exp_state;
    sqlite3_bind_int64(st, 1, exp);
    sqlite3_bind_blob64(st, 2, state, len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)c->policy_version);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)c->reports);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)c->duplicates);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)c->assignments);
    return step_done(s, st, "compacting the state log");
}

/* Inside the open transaction: each experiment's last state, logged (`cur`) or of this
 * transaction (pend, later), into its row, and the log emptied. The log's pages are freed without
 * being overwritten with zeros (secure_delete FAST for the DELETE, then as it was), unlike those
 * of deleted decisions: zeroing would write each freed page of the log once more, and whoever
 * reads the file's free pages reads the file, every report and the current states with it. */
static ldpb_err compact_log(agg_store *s)
{
    sq_store *b = BE(s);
    ldpb_err err = LDPB_OK;
    for (size_t i = 0; i < b->cap_cur && !err; i++)
        if (b->cur[i].exp)
            err = put_exp_state(s, b->cur[i].exp, &b->cur[i].c, b->cur[i].state, b->cur[i].len);
    for (size_t i = 0; i < b->n_pend && !err; i++)
        err = put_exp_state(s, b->pend[i].exp, &b->pend[i].c, b->arena + b->pend[i].off,
                            b->pend[i].len);
    if (err)
        return err;
    sqlite3_int64 secure = query_count(s, "PRAGMA secure_delete");
    char restore[40];
    snprintf(restore, sizeof restore, "PRAGMA secure_delete = %s",
             secure == 0   ? "OFF"
             : secure == 2 ? "FAST"
                           : "ON");
    err = exec(s, "PRAGMA secure_delete = FAST; DELETE FROM state_log;");
    if (secure >= 0 && exec(s, restore) && !err)
        err = LDPB_EIO;
    if (err) {
        char why[AGG_STORE_ERRMAX];
        snprintf(why, sizeof why, "%s", s->errmsg);
        say(s->errmsg, "compacting the state log: %s", why);
    }
    return err;
}

/* Inside the open transaction: its states as one state_log row. */
static ldpb_err flush_states(agg_store *s)
{
    sq_store *b = BE(s);
    ldpb_err err = LDPB_OK;
    if (!b->put_log)
        err = prepare(s, &b->put_log, "INSERT INTO state_log(states) VALUES (?1)");
    if (err)
        return err;
    agg_slog_put_header(b->arena, (uint32_t)b->n_pend);
    if (sqlite3_bind_blob64(b->put_log, 1, b->arena, b->arena_len, SQLITE_STATIC) != SQLITE_OK)
        return sql_fail(s, "writing the policy states");
    return step_done(s, b->put_log, "writing the policy states");
}

/* The open transaction's states are committed: into `cur`, the arena emptied. */
static void pending_done(sq_store *b, int committed, int compacted)
{
    if (committed && compacted) {
        cur_clear(b);
        b->log_states = 0;
    } else if (committed) {
        for (size_t i = 0; i < b->n_pend; i++)
            if (cur_put(b, b->pend[i].exp, &b->pend[i].c, b->arena + b->pend[i].off,
                        b->pend[i].len)) {
                /* Only the in-memory copy is short: read the committed log again. */
                b->log_states = -1;
                break;
            }
        if (b->log_states >= 0)
            b->log_states += (int64_t)b->n_pend;
    }
    b->n_pend = 0;
    b->arena_len = 0;
}

/* Before aggregator.db's COMMIT: the batch's number as applied (in its transaction), then every
 * shard's COMMIT, in parallel: a crash before aggregator.db's leaves shard rows of a batch above
 * the applied one, which the next open deletes. */
static ldpb_err commit_shards(agg_store *s)
{
    sq_store *b = BE(s);
    sqlite3_bind_int64(b->put_applied, 1, (sqlite3_int64)agg_shards_batch(b->shards));
    ldpb_err err = step_done(s, b->put_applied, "writing the applied batch");
    if (!err)
        err = agg_shards_commit(b->shards, s->errmsg);
    if (!err && s->shard_hook && s->shard_hook(s->shard_hook_ctx)) {
        say(s->errmsg, "COMMIT: failed by the test hook, after the row shards' COMMITs");
        err = LDPB_EIO;
    }
    return err;
}

static ldpb_err sq_commit(agg_store *s)
{
    sq_store *b = BE(s);
    if (b->log_states < 0) { /* a failed cur_put (above): rebuild cur from the log */
        cur_clear(b);
        ldpb_err err = replay_log(s);
        if (err)
            return err;
    }
    int compact = b->n_pend && b->log_states + (int64_t)b->n_pend >= STATE_LOG_MAX;
    ldpb_err err = LDPB_OK;
    if (compact)
        err = compact_log(s); /* writes this transaction's states into the rows too */
    else if (b->n_pend)
        err = flush_states(s);
    int sharded = b->shards && agg_shards_active(b->shards);
    if (!err && sharded)
        err = commit_shards(s);
    if (!err)
        err = step_done(s, b->commit, "COMMIT");
    if (!err && sharded)
        agg_shards_applied(b->shards);
    if (!err)
        b->retain_floor = b->txn_floor;
    pending_done(b, !err, compact);
    return err;
}

static void sq_rollback(agg_store *s)
{
    BE(s)->n_pend = 0;
    BE(s)->arena_len = 0;
    if (BE(s)->known)
        memset(BE(s)->known, 0, BE(s)->known_cap);
    if (!sqlite3_get_autocommit(BE(s)->db)) /* else SQLite already rolled it back */
        (void)step_done(s, BE(s)->rollback, "ROLLBACK");
    if (BE(s)->shards) {
        /* The applied batch as aggregator.db has it now: the shards' rows above it go. */
        uint64_t applied = 0;
        if (stored_shards(BE(s)->db, &applied) > 1)
            agg_shards_rollback(BE(s)->shards, applied);
        else
            agg_shards_rollback(BE(s)->shards, agg_shards_batch(BE(s)->shards) - 1);
    }
}

static ldpb_err sq_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    if (BE(s)->shards)
        return agg_shards_add_report(BE(s)->shards, r, is_new, s->errmsg);
    sqlite3_stmt *st = BE(s)->add_report;
    agg_sqlite_bind_report(st, r);
    ldpb_err err = step_done(s, st, "inserting a report");
    *is_new = !err && sqlite3_changes(BE(s)->db) == 1;
    return err;
}

static ldpb_err sq_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists)
{
    if (BE(s)->shards)
        return agg_shards_has_report(BE(s)->shards, id, id_len, exists, s->errmsg);
    sqlite3_stmt *st = BE(s)->has_report;
    sqlite3_bind_blob(st, 1, id, (int)id_len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(s, "looking up a report");
    *exists = rc == SQLITE_ROW;
    return LDPB_OK;
}

/* Prepared on each call: it runs only when a policy refuses a report, which is rare. */
static ldpb_err sq_remove_report(agg_store *s, const uint8_t *id, size_t id_len)
{
    if (BE(s)->shards)
        return agg_shards_remove_report(BE(s)->shards, id, id_len, s->errmsg);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(BE(s)->db, "DELETE FROM main.reports WHERE assignment_id = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return sql_fail(s, "prepare");
    }
    sqlite3_bind_blob(st, 1, id, (int)id_len, SQLITE_STATIC);
    ldpb_err err = sqlite3_step(st) == SQLITE_DONE ? LDPB_OK : sql_fail(s, "removing a report");
    sqlite3_finalize(st);
    return err;
}

/* A decision of the open transaction lowers its retention floor. */
static void floor_lower(sq_store *b, uint64_t retain_until_ms)
{
    uint64_t stored = retain_until_ms > INT64_MAX ? INT64_MAX : retain_until_ms; /* as bound */
    if (stored < b->txn_floor)
        b->txn_floor = stored;
}

static ldpb_err sq_add_decision(agg_store *s, const agg_store_row *d, uint64_t *added)
{
    floor_lower(BE(s), d->retain_until_ms);
    if (BE(s)->shards)
        return agg_shards_add_decision(BE(s)->shards, d, added, s->errmsg);
    sqlite3_stmt *st = BE(s)->add_decision;
    agg_sqlite_bind_decision(st, d);
    ldpb_err err = step_done(s, st, "logging a decision");
    *added = err ? 0 : (uint64_t)sqlite3_changes(BE(s)->db);
    return err;
}

static sqlite3_int64 to_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

/* A batch's rows: handed to the row shards' writers at once where the state has shards (each
 * writes its own in parallel), else one by one (a row costs no round trip here). */
static ldpb_err sq_write_batch(agg_store *s, agg_store_batch_row *rows, size_t n)
{
    if (!BE(s)->shards)
        return agg_store_batch_one_by_one(s, rows, n); /* through sq_add_decision */
    for (size_t i = 0; i < n; i++)
        if (rows[i].kind == AGG_BATCH_DECISION)
            floor_lower(BE(s), rows[i].row.retain_until_ms);
    return agg_shards_rows(BE(s)->shards, rows, n, s->errmsg);
}

/* Runs a prepared DELETE and returns the rows it removed in *n. */
static ldpb_err prune_step(agg_store *s, sqlite3_stmt *st, uint64_t *n)
{
    ldpb_err err = step_done(s, st, "deleting old decisions");
    *n = err ? 0 : (uint64_t)sqlite3_changes(BE(s)->db);
    return err;
}

/* After a prune that left no decision retained until before `before_ms`: the transaction's floor
 * from the rows themselves, their least retain_until_ms (prepare_min_retain, through the
 * retention index), and at least `before_ms`. */
static ldpb_err floor_raise(agg_store *s, uint64_t before_ms)
{
    sq_store *b = BE(s);
    uint64_t floor = before_ms;
    sqlite3_stmt *st = b->min_retain;
    int rc = sqlite3_step(st);
    sqlite3_int64 least = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_NULL)
        floor = UINT64_MAX; /* no decision: nothing is due until one comes */
    else if (rc == SQLITE_ROW && least > 0 && (uint64_t)least > floor)
        floor = (uint64_t)least;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sql_fail(s, "reading the retention floor");
    if (floor > b->txn_floor)
        b->txn_floor = floor;
    return LDPB_OK;
}

static ldpb_err sq_prune_expired(agg_store *s, uint64_t before_ms, uint64_t limit, uint64_t *n)
{
    sq_store *b = BE(s);
    *n = 0;
    if (before_ms <= b->txn_floor)
        return LDPB_OK; /* nothing is retained until before it */
    ldpb_err err;
    if (b->shards) {
        err = agg_shards_prune_expired(b->shards, before_ms, limit, n, s->errmsg);
    } else {
        sqlite3_bind_int64(b->prune_expired, 1, to_i64(before_ms));
        sqlite3_bind_int64(b->prune_expired, 2, to_i64(limit));
        err = prune_step(s, b->prune_expired, n);
    }
    if (!err && *n < limit)
        err = floor_raise(s, before_ms);
    return err;
}

static ldpb_err sq_prune_oldest(agg_store *s, uint64_t count, uint64_t *n)
{
    if (BE(s)->shards)
        return agg_shards_prune_oldest(BE(s)->shards, count, n, s->errmsg);
    sqlite3_bind_int64(BE(s)->prune_oldest, 1, to_i64(count));
    return prune_step(s, BE(s)->prune_oldest, n);
}

/* *found: experiment `id` has a row (looked up once per id, then remembered in known[]). */
static ldpb_err experiment_known(agg_store *s, int64_t id, int *found)
{
    sq_store *b = BE(s);
    *found = 0;
    if (id <= 0)
        return LDPB_OK;
    if ((uint64_t)id < b->known_cap && b->known[id]) {
        *found = 1;
        return LDPB_OK;
    }
    sqlite3_stmt *st = b->has_experiment;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(s, "looking up an experiment");
    *found = rc == SQLITE_ROW;
    /* ids are the largest plus one, so a handful of bytes per experiment; an id past 2^20 (more
     * than experiments_max allows) is looked up each time instead */
    if (*found && (uint64_t)id >= b->known_cap && id < ((int64_t)1 << 20)) {
        size_t cap = (size_t)id * 2 + 64;
        uint8_t *k = realloc(b->known, cap);
        if (!k)
            return LDPB_OK; /* only the memo is lost */
        memset(k + b->known_cap, 0, cap - b->known_cap);
        b->known = k;
        b->known_cap = cap;
    }
    if (*found && (uint64_t)id < b->known_cap)
        b->known[id] = 1;
    return LDPB_OK;
}

static ldpb_err sq_put_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                             const agg_store_counters *c, int exclusive, int *found)
{
    (void)exclusive; /* one node: every state is its own */
    sq_store *b = BE(s);
    ldpb_err err = experiment_known(s, exp, found);
    if (err || !*found)
        return err;
    if (len == 0 || len > UINT32_MAX || c->policy_version > INT64_MAX || c->reports > INT64_MAX ||
        c->duplicates > INT64_MAX || c->assignments > INT64_MAX || b->n_pend >= UINT32_MAX) {
        say(s->errmsg, "a policy state of %zu bytes or its counters cannot be stored", len);
        return LDPB_EINVAL;
    }
    if (b->n_pend == b->cap_pend) {
        size_t cap = b->cap_pend ? b->cap_pend * 2 : 64;
        struct sq_pending *p = realloc(b->pend, cap * sizeof *p);
        if (!p)
            goto oom;
        b->pend = p;
        b->cap_pend = cap;
    }
    size_t need = AGG_SLOG_FIXED + len + (b->arena_len ? 0 : AGG_SLOG_HEADER);
    if (need > b->arena_cap - b->arena_len) {
        if (need > SIZE_MAX / 4 - b->arena_len)
            goto oom;
        size_t cap = (b->arena_len + need) * 2 + 4096;
        uint8_t *a = realloc(b->arena, cap);
        if (!a)
            goto oom;
        b->arena = a;
        b->arena_cap = cap;
    }
    if (b->arena_len == 0)
        b->arena_len = AGG_SLOG_HEADER; /* written by flush_states */
    agg_slog_put_fixed(b->arena + b->arena_len, exp, c, (uint32_t)len);
    b->arena_len += AGG_SLOG_FIXED;
    memcpy(b->arena + b->arena_len, blob, len);
    b->pend[b->n_pend++] = (struct sq_pending){exp, *c, b->arena_len, len};
    b->arena_len += len;
    return LDPB_OK;
oom:
    say(s->errmsg, "out of memory");
    return LDPB_ENOMEM;
}

static ldpb_err sq_arm_counts(agg_store *s, int64_t exp, uint64_t *counts, uint32_t k)
{
    sqlite3_stmt *st = BE(s)->arm_counts;
    sqlite3_bind_int64(st, 1, exp);
    ldpb_err err = LDPB_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 arm = sqlite3_column_int64(st, 0);
        if (arm < 0 || arm >= (sqlite3_int64)k) {
            say(s->errmsg, "a stored report has arm %lld outside [0, %u)", (long long)arm, k);
            err = LDPB_ECORRUPT;
            break;
        }
        counts[arm] = (uint64_t)sqlite3_column_int64(st, 1);
    }
    if (!err && rc != SQLITE_DONE)
        err = sql_fail(s, "counting reports");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return err;
}

/* ---- export ------------------------------------------------------------------------------ */

static void csv_num(FILE *out, sqlite3_stmt *st, int col, int is_real)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return;
    if (is_real)
        fprintf(out, "%.17g", sqlite3_column_double(st, col));
    else
        fprintf(out, "%lld", (long long)sqlite3_column_int64(st, col));
}

/* The export's query: version 1's tables (every row is `default`'s) or version 2's, for every
 * experiment or one (?1 its id). Columns: the 10 of the CSV, then the experiment's name. */
static void export_sql(char *sql, size_t cap, int v1, int one)
{
    const char *name_d = v1 ? "'default'" : "e.name";
    const char *join_d = v1 ? "" : " JOIN experiments e ON e.id = d.experiment";
    const char *join_r = v1 ? "" : " JOIN experiments e ON e.id = r.experiment";
    snprintf(sql, cap,
             "SELECT d.assignment_id, d.arm, d.propensity, d.policy_version, d.mechanism,"
             " d.epsilon, r.value, d.issued_at_ms, d.expires_at_ms, r.reported_at_ms, %s"
             " FROM decisions d%s LEFT JOIN reports r ON r.assignment_id = d.assignment_id%s"
             " UNION ALL "
             "SELECT r.assignment_id, r.arm, r.propensity, r.policy_version, r.mechanism,"
             " r.epsilon, r.value, NULL, r.expires_at_ms, r.reported_at_ms, %s FROM reports r%s"
             " WHERE %sNOT EXISTS (SELECT 1 FROM decisions d WHERE d.assignment_id ="
             " r.assignment_id) ORDER BY 9, 1",
             name_d, join_d, one ? " WHERE d.experiment = ?1" : "", name_d, join_r,
             one ? "r.experiment = ?1 AND " : "");
}

static void csv_row(FILE *out, sqlite3_stmt *st, int with_name)
{
    const uint8_t *id = sqlite3_column_blob(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    for (int i = 0; i < n; i++)
        fprintf(out, "%02x", id[i]);
    const unsigned char *mech = sqlite3_column_text(st, 4);
    fprintf(out, ",%lld,%.17g,%lld,%s,%.17g,", (long long)sqlite3_column_int64(st, 1),
            sqlite3_column_double(st, 2), (long long)sqlite3_column_int64(st, 3),
            mech ? (const char *)mech : "", sqlite3_column_double(st, 5));
    csv_num(out, st, 6, 1);
    fputc(',', out);
    csv_num(out, st, 7, 0);
    fputc(',', out);
    csv_num(out, st, 8, 0);
    fputc(',', out);
    csv_num(out, st, 9, 0);
    if (with_name) {
        const unsigned char *name = sqlite3_column_text(st, 10);
        fprintf(out, ",%s", name ? (const char *)name : "");
    }
    fputc('\n', out);
}

/* Which tables the export reads (1 or 2), and the id of `experiment` in them (0: every one; -1:
 * none of that name). LDPB_ECORRUPT for no aggregator state. */
static ldpb_err export_target(sqlite3 *db, const char *path, const char *experiment, int *v1,
                              int64_t *id, char *errmsg)
{
    sqlite3_stmt *st = NULL;
    int shape = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                           " name = 'experiments') * 2 + (SELECT count(*) FROM sqlite_master"
                           " WHERE type = 'table' AND name = 'state')",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        shape = (int)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (shape <= 0) {
        say(errmsg, "%s: not an ldpb-aggregator state: %s", path,
            shape < 0 ? sqlite3_errmsg(db) : "no experiments or state table");
        return shape < 0 ? LDPB_EIO : LDPB_ECORRUPT;
    }
    *v1 = shape == 1;
    *id = 0;
    if (!experiment)
        return LDPB_OK;
    if (*v1) {
        *id = strcmp(experiment, AGG_STORE_DEFAULT_EXP) == 0 ? 0 : -1;
        return LDPB_OK;
    }
    *id = -1;
    int rc = SQLITE_ERROR;
    if (sqlite3_prepare_v2(db, "SELECT id FROM experiments WHERE name = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, experiment, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
            *id = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        say(errmsg, "%s: not an ldpb-aggregator state: %s", path, sqlite3_errmsg(db));
        return LDPB_ECORRUPT;
    }
    return LDPB_OK;
}

static ldpb_err sq_export_csv(const char *url, const char *dir, const char *experiment,
                              int with_name, FILE *out, char *errmsg)
{
    (void)url;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, AGG_STORE_DB_NAME) >= sizeof path) {
        say(errmsg, "state_dir %s: path too long", dir);
        return LDPB_EINVAL;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    ldpb_err err = LDPB_EIO;
    /* Read-only: a read-write connection that closes last checkpoints the WAL into the
     * database, so exporting a live (or killed) daemon's state would write it. */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        goto done;
    }
    sqlite3_busy_timeout(db, 5000);
    /* Row shards: their rows through the views of attach_shards, those of the batches applied
     * in the snapshot of aggregator.db that the transaction reads first (a shard commits before
     * aggregator.db does, so its snapshot, taken later, holds them all). */
    uint64_t applied = 0;
    int64_t shards = stored_shards(db, &applied);
    if (shards > 1 && (err = attach_shards(db, dir, (unsigned)shards, errmsg)) != LDPB_OK)
        goto done;
    err = LDPB_EIO;
    /* One read transaction: the experiment's id and its rows from one snapshot. */
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        say(errmsg, "%s: %s", path, sqlite3_errmsg(db));
        goto done;
    }
    int v1 = 0;
    int64_t id = 0;
    err = export_target(db, path, experiment, &v1, &id, errmsg);
    if (err)
        goto done;
    err = LDPB_EIO;
    if (id < 0 && with_name) {
        say(errmsg, "%s: no experiment '%s' in this state", path, experiment);
        err = LDPB_ENOEXPERIMENT;
        goto done;
    }
    char sql[2048];
    export_sql(sql, sizeof sql, v1, experiment && !(v1 && id == 0));
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        say(errmsg, "%s: not an ldpb-aggregator state: %s", path, sqlite3_errmsg(db));
        err = LDPB_ECORRUPT;
        goto done;
    }
    sqlite3_bind_int64(st, 1, id); /* -1 (a version-1 caller's `default` missing): no rows */
    fprintf(out,
            "assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,issued_at_ms,"
            "expires_at_ms,reported_at_ms%s\n",
            with_name ? ",experiment" : "");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        csv_row(out, st, with_name);
    if (rc != SQLITE_DONE) {
        say(errmsg, "%s: %s", path, sqlite3_errmsg(db));
        goto done;
    }
    if (fflush(out) != 0 || ferror(out)) {
        say(errmsg, "writing the CSV failed: %s", strerror(errno));
        goto done;
    }
    err = LDPB_OK;
done:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return err;
}

/* ---- backup ------------------------------------------------------------------------------ */

/* A sharded state's backup (docs/aggregator.md, "Backup"): the shards attached to the read-only
 * source, then one read transaction that reads aggregator.db first, so that the shards' snapshots
 * are all taken after its own. A shard COMMITs a batch before aggregator.db records it as
 * applied, so those later snapshots hold every row of every batch that aggregator.db's snapshot
 * counts; the views (shard_views) leave out the rows of later batches. Each shard file must be
 * the one its name says (its `shard` row), as at the daemon's open. */
static ldpb_err shards_snapshot(sqlite3 *src, const char *dir, unsigned n, char *errmsg)
{
    char path[4096];
    ldpb_err err = shard_files_present(dir, n, errmsg);
    if (!err)
        err = attach_shards(src, dir, n, errmsg);
    if (err)
        return err;
    if (sqlite3_exec(src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        say(errmsg, "%s", sqlite3_errmsg(src));
        return LDPB_EIO;
    }
    uint64_t applied = 0;
    if (stored_shards(src, &applied) != (int64_t)n) { /* aggregator.db's snapshot begins here */
        say(errmsg, "unreadable row_shards table: %s", sqlite3_errmsg(src));
        return LDPB_ECORRUPT;
    }
    for (unsigned i = 0; i < n; i++) {
        char sql[64];
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql, "SELECT shard, shards FROM rows%u.shard", i);
        int rc = sqlite3_prepare_v2(src, sql, -1, &st, NULL) == SQLITE_OK ? sqlite3_step(st)
                                                                          : SQLITE_ERROR;
        int64_t idx = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1,
                of = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) : -1;
        agg_shard_path(path, sizeof path, dir, i);
        if (rc != SQLITE_ROW)
            say(errmsg, "%s: not a rows database: %s", path, sqlite3_errmsg(src));
        else if (idx != (int64_t)i || of != (int64_t)n)
            say(errmsg, "%s: holds rows database %lld of %lld, expected %u of %u", path,
                (long long)idx, (long long)of, i, n);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW || idx != (int64_t)i || of != (int64_t)n)
            return LDPB_ESTATE;
    }
    return LDPB_OK;
}

/* The rows of one view of `src` (temp.reports or temp.decisions) into the same table of `dst`. A
 * row already there (none in the copy of a sharded aggregator.db) fails the INSERT. */
static ldpb_err copy_rows(sqlite3 *src, sqlite3 *dst, const char *table, const char *cols,
                          const char *dest, char *errmsg)
{
    char sql[512];
    sqlite3_stmt *sel = NULL, *ins = NULL;
    ldpb_err err = LDPB_EIO;
    snprintf(sql, sizeof sql, "SELECT %s FROM temp.%s", cols, table);
    if (sqlite3_prepare_v2(src, sql, -1, &sel, NULL) != SQLITE_OK) {
        say(errmsg, "reading the %s of the row shards: %s", table, sqlite3_errmsg(src));
        goto done;
    }
    snprintf(sql, sizeof sql,
             "INSERT INTO main.%s(%s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", table,
             cols);
    if (sqlite3_prepare_v2(dst, sql, -1, &ins, NULL) != SQLITE_OK) {
        say(errmsg, "%s: %s", dest, sqlite3_errmsg(dst));
        goto done;
    }
    int rc;
    while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
        for (int c = 0; c < 10; c++)
            sqlite3_bind_value(ins, c + 1, sqlite3_column_value(sel, c));
        int wr = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (wr != SQLITE_DONE) {
            say(errmsg, "%s: copying the %s: %s", dest, table, sqlite3_errmsg(dst));
            goto done;
        }
    }
    if (rc != SQLITE_DONE) {
        say(errmsg, "reading the %s of the row shards: %s", table, sqlite3_errmsg(src));
        goto done;
    }
    err = LDPB_OK;
done:
    sqlite3_finalize(sel);
    sqlite3_finalize(ins);
    return err;
}

/* The copy of aggregator.db in `dst` made a state of one database: the shards' applied rows in
 * its own tables, and no row_shards table, so that it opens as a state without shards. */
static ldpb_err merge_shards(sqlite3 *src, sqlite3 *dst, const char *dest, char *errmsg)
{
    if (sqlite3_exec(dst, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        say(errmsg, "%s: %s", dest, sqlite3_errmsg(dst));
        return LDPB_EIO;
    }
    ldpb_err err = copy_rows(src, dst, "reports", report_cols, dest, errmsg);
    if (!err)
        err = copy_rows(src, dst, "decisions", decision_cols, dest, errmsg);
    if (!err &&
        sqlite3_exec(dst, "DROP TABLE main.row_shards; COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        say(errmsg, "%s: %s", dest, sqlite3_errmsg(dst));
        err = LDPB_EIO;
    }
    if (err && !sqlite3_get_autocommit(dst))
        sqlite3_exec(dst, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

static ldpb_err sq_backup(const char *url, const char *dir, const char *dest, char *errmsg)
{
    (void)url;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, AGG_STORE_DB_NAME) >= sizeof path) {
        say(errmsg, "state_dir %s: path too long", dir);
        return LDPB_EINVAL;
    }
    sqlite3 *src = NULL, *dst = NULL;
    sqlite3_stmt *st = NULL;
    ldpb_err err = LDPB_EIO;
    if (sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", path, src ? sqlite3_errmsg(src) : "out of memory");
        goto done;
    }
    sqlite3_busy_timeout(src, 5000);
    /* Refuse what is not an aggregator state before copying it. */
    if (sqlite3_prepare_v2(src, "SELECT count(*) FROM meta", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) == 0) {
        say(errmsg, "%s: not an ldpb-aggregator state: %s", path, sqlite3_errmsg(src));
        err = LDPB_ECORRUPT;
        goto done;
    }
    sqlite3_finalize(st);
    st = NULL;
    uint64_t applied = 0;
    int64_t shards = stored_shards(src, &applied);
    if (shards > 1 && (err = shards_snapshot(src, dir, (unsigned)shards, errmsg)) != LDPB_OK)
        goto done;
    err = LDPB_EIO;
    if (sqlite3_open_v2(dest, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", dest, dst ? sqlite3_errmsg(dst) : "out of memory");
        goto done;
    }
    /* One step copies every page under one read transaction of the source (with row shards,
     * the one shards_snapshot began): a consistent snapshot, and in WAL mode the daemon's
     * commits go on meanwhile. */
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) {
        say(errmsg, "%s: cannot start the backup: %s", dest, sqlite3_errmsg(dst));
        goto done;
    }
    int rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        say(errmsg, "backup of %s failed: %s", path, sqlite3_errstr(rc));
        goto done;
    }
    if (shards > 1 && (err = merge_shards(src, dst, dest, errmsg)) != LDPB_OK)
        goto done;
    err = LDPB_EIO;
    if (sqlite3_exec(dst, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
        say(errmsg, "%s: %s", dest, sqlite3_errmsg(dst));
        goto done;
    }
    err = LDPB_OK;
done:
    sqlite3_finalize(st);
    if (dst && sqlite3_close(dst) != SQLITE_OK && !err) {
        say(errmsg, "%s: cannot close", dest);
        err = LDPB_EIO;
    }
    sqlite3_close(src); /* ends the read transaction of a sharded state */
    return err;
}

const agg_store_ops agg_store_sqlite_ops = {
    .scheme = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .load = sq_load,
    .experiments = sq_experiments,
    .add_experiment = sq_add_experiment,
    .set_running = sq_set_running,
    .set_settings = sq_set_settings,
    .begin = sq_begin,
    .write_meta = sq_write_meta,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .add_report = sq_add_report,
    .has_report = sq_has_report,
    .remove_report = sq_remove_report,
    .add_decision = sq_add_decision,
    .write_batch = sq_write_batch,
    .prune_expired = sq_prune_expired,
    .prune_oldest = sq_prune_oldest,
    .put_state = sq_put_state,
    .arm_counts = sq_arm_counts,
    .export_csv = sq_export_csv,
    .backup = sq_backup,
};

void agg_store_process_init(int memstatus)
{
    /* SQLITE_MISUSE once SQLite is initialized: the settings then stay as they are */
    (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, memstatus ? 1 : 0);
}
