/* SQLite durability for the aggregator (store.h). Every statement is prepared once; a batch is
 * one transaction of INSERT OR IGNOREs plus the policy state row, so its COMMIT makes the reports
 * and the state that counts them durable together (synchronous=FULL: the WAL is fsynced at every
 * commit). A lock file (flock) keeps a second daemon off the same state directory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ldpb/mech_table.h"
#include "ldpb/detail.h"
#include "state_id.h"
#include "store.h"

struct agg_store {
    sqlite3 *db;
    int lock_fd;
    sqlite3_stmt *begin, *commit, *rollback;
    sqlite3_stmt *add_report, *has_report, *add_decision, *put_state;
    sqlite3_stmt *prune_expired, *prune_oldest;
    uint64_t decision_rows; /* committed rows of `decisions` */
    int64_t decision_delta; /* rows added (+) or deleted (-) by the open transaction */
    int inject_disk_full;   /* agg_store_inject_disk_full */
    /* The meta rows of a fresh state, written by the first transaction (with the first data),
     * so a start that is refused or fails after the open leaves no meta behind. */
    struct meta_row *pending_meta;
    size_t n_pending_meta;
    char errmsg[AGG_STORE_ERRMAX];
    agg_store_commit_hook commit_hook; /* tests only */
    void *commit_hook_ctx;
    agg_state_ident ident; /* state_id.h */
};

#define say(out, ...) ldpb_detailf((out), AGG_STORE_ERRMAX, __VA_ARGS__)

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS state("
    " id INTEGER PRIMARY KEY CHECK (id = 1), policy_state BLOB NOT NULL,"
    " policy_version INTEGER NOT NULL, reports INTEGER NOT NULL, duplicates INTEGER NOT NULL,"
    " assignments INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BLOB PRIMARY KEY, arm INTEGER NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon REAL NOT NULL, propensity REAL NOT NULL, policy_version INTEGER NOT NULL,"
    " value REAL NOT NULL, expires_at_ms INTEGER NOT NULL, reported_at_ms INTEGER NOT NULL)"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BLOB PRIMARY KEY, arm INTEGER NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon REAL NOT NULL, propensity REAL NOT NULL, policy_version INTEGER NOT NULL,"
    " issued_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL) WITHOUT ROWID;"
    /* Retention deletes the oldest decisions first, a chunk per transaction: without this index
     * every chunk would scan the whole table. */
    "CREATE INDEX IF NOT EXISTS decisions_by_expiry ON decisions(expires_at_ms);"
    /* The state's identity (state_id.h). A database of an older version gets the table (empty)
     * at its first open here and an identity by migration. */
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BLOB NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms INTEGER NOT NULL);";

static ldpb_err sql_fail(agg_store *s, const char *what)
{
    say(s->errmsg, "%s: %s", what, sqlite3_errmsg(s->db));
    return LDPB_EIO;
}

static ldpb_err exec(agg_store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        say(s->errmsg, "%s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return LDPB_EIO;
    }
    return LDPB_OK;
}

static ldpb_err prepare(agg_store *s, sqlite3_stmt **st, const char *sql)
{
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
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

void agg_store_close(agg_store *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->begin);
    sqlite3_finalize(s->commit);
    sqlite3_finalize(s->rollback);
    sqlite3_finalize(s->add_report);
    sqlite3_finalize(s->has_report);
    sqlite3_finalize(s->add_decision);
    sqlite3_finalize(s->put_state);
    sqlite3_finalize(s->prune_expired);
    sqlite3_finalize(s->prune_oldest);
    sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    free(s->pending_meta);
    free(s);
}

/* One meta row: its key, its text for a configuration, and whether an open compares it. */
typedef struct meta_row {
    const char *key;
    char value[64];
    int compared;
} meta_row;

#define META_ROWS_MAX 16

/* The rows of `m`: schema_version, policy, mode, arms, then every parameter of
 * agg_policy_params() by its name, with 0 ("raw" for the mechanism) for those the policy does
 * not read (the text earlier states hold for an unused kappa, epsilon or mechanism). */
static size_t meta_rows(const agg_store_meta *m, meta_row *rows)
{
    size_t n = 0;
    rows[n].key = "schema_version";
    snprintf(rows[n].value, sizeof rows[n].value, "%d", AGG_STORE_SCHEMA_VERSION);
    rows[n++].compared = 1;
    rows[n].key = "policy";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->policy);
    rows[n++].compared = 1;
    rows[n].key = "mode";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->mode);
    rows[n++].compared = 1;
    rows[n].key = "arms";
    snprintf(rows[n].value, sizeof rows[n].value, "%" PRIu32, m->params.k);
    rows[n++].compared = 1;
    size_t np;
    const agg_param_info *pi = agg_policy_params(&np);
    for (size_t i = 0; i < np && n < META_ROWS_MAX; i++, n++) {
        rows[n].key = pi[i].name;
        rows[n].compared = (m->reads & pi[i].bit) != 0;
        if (rows[n].compared)
            agg_policy_param_text(&pi[i], &m->params, rows[n].value, sizeof rows[n].value);
        else
            snprintf(rows[n].value, sizeof rows[n].value, "%s",
                     pi[i].type == AGG_PARAM_TYPE_MECH ? "raw" : "0");
    }
    return n;
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

/* Writes the meta rows of a fresh state, or checks them against `m`. */
static ldpb_err check_meta(agg_store *s, const agg_store_meta *m, char *errmsg)
{
    meta_row rows[META_ROWS_MAX];
    size_t n_rows = meta_rows(m, rows);
    sqlite3_stmt *st = NULL;
    ldpb_err err = LDPB_OK;
    sqlite3_int64 n = query_count(s, "SELECT count(*) FROM meta");
    if (n < 0) {
        err = sql_fail(s, "reading meta");
        goto fail;
    }
    if (n == 0) {
        /* Data without meta is no state this program wrote: adopting it would attach the
         * configuration of today to reports and a policy state of unknown origin. */
        sqlite3_int64 data = query_count(s, "SELECT (SELECT count(*) FROM state) +"
                                            " (SELECT count(*) FROM reports) +"
                                            " (SELECT count(*) FROM decisions)");
        if (data < 0) {
            err = sql_fail(s, "reading the state");
            goto fail;
        }
        if (data > 0) {
            say(errmsg,
                "state: the database holds %lld rows of reports, decisions or policy state "
                "but no meta rows saying which configuration they belong to",
                (long long)data);
            err = LDPB_ECORRUPT;
            goto fail;
        }
        /* Fresh: the rows wait for the first transaction (agg_store_begin). */
        s->pending_meta = malloc(n_rows * sizeof *s->pending_meta);
        if (!s->pending_meta) {
            say(errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        memcpy(s->pending_meta, rows, n_rows * sizeof *rows);
        s->n_pending_meta = n_rows;
        return LDPB_OK;
    }
    err = prepare(s, &st, "SELECT value FROM meta WHERE key = ?1");
    if (err)
        goto fail;
    for (size_t i = 0; i < n_rows; i++) {
        if (!rows[i].compared)
            continue;
        sqlite3_bind_text(st, 1, rows[i].key, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
            sqlite3_reset(st);
            if (rc != SQLITE_DONE) {
                err = sql_fail(s, "reading meta");
                goto fail;
            }
            say(errmsg, "state: meta has no '%s' row", rows[i].key);
            err = LDPB_ECORRUPT;
            goto fail;
        }
        const char *have = (const char *)sqlite3_column_text(st, 0);
        if (!have || strcmp(have, rows[i].value) != 0) {
            if (i == 0)
                say(errmsg,
                    "the state in this directory has schema version %s; this ldpb-aggregator "
                    "reads version %s (use the matching version, or another state_dir)",
                    have ? have : "NULL", rows[i].value);
            else
                say(errmsg,
                    "the state in this directory belongs to another configuration: %s is '%s' "
                    "there but '%s' now (use another state_dir, or the old configuration)",
                    rows[i].key, have ? have : "NULL", rows[i].value);
            sqlite3_reset(st);
            err = LDPB_ESTATE;
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return LDPB_OK;
fail:
    if (!errmsg[0])
        say(errmsg, "%s", s->errmsg);
    sqlite3_finalize(st);
    return err;
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
static ldpb_err make_private(const char *path, int create, char *errmsg)
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

ldpb_err agg_store_open(agg_store **out, const char *dir, const agg_store_meta *meta, char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !dir || !meta || !errmsg)
        return LDPB_EINVAL;
    *out = NULL;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        say(errmsg, "state_dir %s: cannot create: %s", dir, strerror(errno));
        return LDPB_EINVAL; /* the configured path is unusable */
    }
    agg_store *s = calloc(1, sizeof *s);
    if (!s)
        return LDPB_ENOMEM;
    s->lock_fd = -1;
    ldpb_err err = LDPB_EIO;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/lock", dir) >= sizeof path) {
        say(errmsg, "state_dir %s: path too long", dir);
        err = LDPB_EINVAL;
        goto fail;
    }
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        int e = errno;
        say(errmsg, "%s: cannot open: %s", path, strerror(e));
        if (e == ENOTDIR || e == EACCES || e == EROFS)
            err = LDPB_EINVAL; /* state_dir is not a directory we may write */
        goto fail;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        say(errmsg, "state_dir %s is in use by another ldpb-aggregator (%s is locked)", dir, path);
        err = LDPB_ESTATE;
        goto fail;
    }
    /* The lock held must be the file at the path: a start that fails removes the lock file it
     * created while holding it (main.c), and a lock on a file no longer named excludes nobody. */
    struct stat held, named;
    if (fstat(s->lock_fd, &held) != 0 || stat(path, &named) != 0 || held.st_ino != named.st_ino ||
        held.st_dev != named.st_dev) {
        say(errmsg,
            "state_dir %s is in use by another ldpb-aggregator (%s was removed while locking)", dir,
            path);
        err = LDPB_ESTATE;
        goto fail;
    }
    static const char *const sidecars[] = {"-wal", "-shm"};
    for (size_t i = 0; i < 2; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s%s", dir, AGG_STORE_DB_NAME, sidecars[i]) >=
            sizeof path) {
            say(errmsg, "state_dir %s: path too long", dir);
            err = LDPB_EINVAL;
            goto fail;
        }
        err = make_private(path, 0, errmsg);
        if (err)
            goto fail;
    }
    snprintf(path, sizeof path, "%s/%s", dir, AGG_STORE_DB_NAME);
    err = make_private(path, 1, errmsg);
    if (err)
        goto fail;
    err = LDPB_EIO;
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    if (exec(s, "PRAGMA journal_mode=WAL") || exec(s, "PRAGMA synchronous=FULL") ||
        exec(s, "PRAGMA busy_timeout=5000") || exec(s, "BEGIN IMMEDIATE")) {
        say(errmsg, "%s: %s", path, s->errmsg);
        goto fail;
    }
    if (exec(s, schema_sql)) {
        say(errmsg, "%s: cannot create the schema: %s", path, s->errmsg);
        exec(s, "ROLLBACK");
        goto fail;
    }
    err = check_meta(s, meta, errmsg);
    if (!err)
        err = agg_state_id_settle(s->db, dir, s->pending_meta == NULL, meta->new_state, &s->ident,
                                  errmsg, AGG_STORE_ERRMAX);
    if (err) {
        exec(s, "ROLLBACK");
        goto fail;
    }
    if (exec(s, "COMMIT")) {
        say(errmsg, "%s: %s", path, s->errmsg);
        err = LDPB_EIO;
        goto fail;
    }
    /* After the COMMIT: a marker without its database would read as a lost database. */
    err = agg_state_id_record(dir, &s->ident, errmsg, AGG_STORE_ERRMAX);
    if (err)
        goto fail;
    err = prepare(s, &s->begin, "BEGIN");
    if (!err)
        err = prepare(s, &s->commit, "COMMIT");
    if (!err)
        err = prepare(s, &s->rollback, "ROLLBACK");
    if (!err)
        err = prepare(s, &s->add_report,
                      "INSERT OR IGNORE INTO reports(assignment_id, arm, mechanism, epsilon,"
                      " propensity, policy_version, value, expires_at_ms, reported_at_ms)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    if (!err)
        err = prepare(s, &s->has_report, "SELECT 1 FROM reports WHERE assignment_id = ?1");
    if (!err)
        err = prepare(s, &s->add_decision,
                      "INSERT OR IGNORE INTO decisions(assignment_id, arm, mechanism, epsilon,"
                      " propensity, policy_version, issued_at_ms, expires_at_ms)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!err)
        err = prepare(s, &s->put_state,
                      "INSERT OR REPLACE INTO state(id, policy_state, policy_version, reports,"
                      " duplicates, assignments, updated_at_ms)"
                      " VALUES (1, ?1, ?2, ?3, ?4, ?5, CAST((julianday('now') - 2440587.5) * "
                      "86400000.0 AS INTEGER))");
    if (!err)
        err = prepare(s, &s->prune_expired,
                      "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM"
                      " decisions WHERE expires_at_ms < ?1 ORDER BY expires_at_ms LIMIT ?2)");
    if (!err)
        err = prepare(s, &s->prune_oldest,
                      "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM"
                      " decisions ORDER BY expires_at_ms LIMIT ?1)");
    if (!err)
        err = count_decisions(s);
    if (err) {
        say(errmsg, "%s: %s", path, s->errmsg);
        goto fail;
    }
    *out = s;
    return LDPB_OK;
fail:
    agg_store_close(s);
    return err;
}

ldpb_err agg_store_load(agg_store *s, uint8_t **blob, size_t *len, agg_store_counters *c)
{
    *blob = NULL;
    *len = 0;
    memset(c, 0, sizeof *c);
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st,
                           "SELECT policy_state, policy_version, reports, duplicates, assignments,"
                           " (SELECT count(*) FROM reports) FROM state WHERE id = 1");
    if (err)
        return err;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_stmt *cnt = NULL;
        err = prepare(s, &cnt, "SELECT count(*) FROM reports");
        if (!err && sqlite3_step(cnt) == SQLITE_ROW && sqlite3_column_int64(cnt, 0) != 0) {
            say(s->errmsg, "reports are stored but the policy state is missing");
            err = LDPB_ECORRUPT;
        }
        sqlite3_finalize(cnt);
        sqlite3_finalize(st);
        return err;
    }
    if (rc != SQLITE_ROW) {
        err = sql_fail(s, "reading the state");
        goto done;
    }
    sqlite3_int64 v[5];
    for (int i = 0; i < 5; i++) {
        v[i] = sqlite3_column_int64(st, i + 1);
        if (v[i] < 0) {
            say(s->errmsg, "negative counter in the state row");
            err = LDPB_ECORRUPT;
            goto done;
        }
    }
    if (v[0] != v[1] || v[1] != v[4]) {
        say(s->errmsg,
            "the state counts %lld reports (policy version %lld) but the reports table has "
            "%lld",
            (long long)v[1], (long long)v[0], (long long)v[4]);
        err = LDPB_ECORRUPT;
        goto done;
    }
    c->policy_version = (uint64_t)v[0];
    c->reports = (uint64_t)v[1];
    c->duplicates = (uint64_t)v[2];
    c->assignments = (uint64_t)v[3];
    int n = sqlite3_column_bytes(st, 0);
    const void *p = sqlite3_column_blob(st, 0);
    if (n <= 0 || !p) {
        say(s->errmsg, "the policy state is empty");
        err = LDPB_ECORRUPT;
        goto done;
    }
    *blob = malloc((size_t)n);
    if (!*blob) {
        err = LDPB_ENOMEM;
        goto done;
    }
    memcpy(*blob, p, (size_t)n);
    *len = (size_t)n;
done:
    sqlite3_finalize(st);
    return err;
}

/* Inserts the pending meta rows in the open transaction. */
static ldpb_err write_pending_meta(agg_store *s)
{
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st, "INSERT INTO meta(key, value) VALUES (?1, ?2)");
    for (size_t i = 0; i < s->n_pending_meta && !err; i++) {
        sqlite3_bind_text(st, 1, s->pending_meta[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, s->pending_meta[i].value, -1, SQLITE_STATIC);
        err = step_done(s, st, "writing meta");
    }
    sqlite3_finalize(st);
    return err;
}

ldpb_err agg_store_begin(agg_store *s)
{
    s->decision_delta = 0;
    ldpb_err err = step_done(s, s->begin, "BEGIN");
    if (!err && s->pending_meta)
        err = write_pending_meta(s);
    return err;
}

ldpb_err agg_store_commit(agg_store *s)
{
    if (s->inject_disk_full) {
        say(s->errmsg, "COMMIT: database or disk is full (injected by agg_store_inject_disk_full)");
        return LDPB_EIO;
    }
    if (s->commit_hook && s->commit_hook(s->commit_hook_ctx)) {
        say(s->errmsg, "COMMIT: failed by the test hook");
        return LDPB_EIO;
    }
    ldpb_err err = step_done(s, s->commit, "COMMIT");
    if (!err) {
        s->decision_rows = (uint64_t)((int64_t)s->decision_rows + s->decision_delta);
        s->decision_delta = 0;
        free(s->pending_meta); /* durable now */
        s->pending_meta = NULL;
        s->n_pending_meta = 0;
    }
    return err;
}

const uint8_t *agg_store_state_id(const agg_store *s)
{
    return s->ident.id;
}

int agg_store_legacy_tokens(const agg_store *s)
{
    return s->ident.legacy_tokens;
}

const char *agg_store_state_note(const agg_store *s)
{
    return s->ident.note;
}

void agg_store_set_commit_hook(agg_store *s, agg_store_commit_hook fn, void *ctx)
{
    s->commit_hook = fn;
    s->commit_hook_ctx = ctx;
}

void agg_store_rollback(agg_store *s)
{
    s->decision_delta = 0;
    if (sqlite3_get_autocommit(s->db))
        return; /* SQLite already rolled the transaction back */
    (void)step_done(s, s->rollback, "ROLLBACK");
}

ldpb_err agg_store_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    sqlite3_stmt *st = s->add_report;
    sqlite3_bind_blob(st, 1, r->id, (int)r->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, r->arm);
    sqlite3_bind_text(st, 3, r->mechanism, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, r->epsilon);
    sqlite3_bind_double(st, 5, r->propensity);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)r->policy_version);
    sqlite3_bind_double(st, 7, r->value);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)r->expires_at_ms);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->at_ms);
    ldpb_err err = step_done(s, st, "inserting a report");
    *is_new = !err && sqlite3_changes(s->db) == 1;
    return err;
}

ldpb_err agg_store_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists)
{
    sqlite3_stmt *st = s->has_report;
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
ldpb_err agg_store_remove_report(agg_store *s, const uint8_t *id, size_t id_len)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM reports WHERE assignment_id = ?1", -1, &st, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(st);
        return sql_fail(s, "prepare");
    }
    sqlite3_bind_blob(st, 1, id, (int)id_len, SQLITE_STATIC);
    ldpb_err err = sqlite3_step(st) == SQLITE_DONE ? LDPB_OK : sql_fail(s, "removing a report");
    sqlite3_finalize(st);
    return err;
}

ldpb_err agg_store_add_decision(agg_store *s, const agg_store_row *d)
{
    sqlite3_stmt *st = s->add_decision;
    sqlite3_bind_blob(st, 1, d->id, (int)d->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, d->arm);
    sqlite3_bind_text(st, 3, d->mechanism, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, d->epsilon);
    sqlite3_bind_double(st, 5, d->propensity);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)d->policy_version);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)d->at_ms);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)d->expires_at_ms);
    ldpb_err err = step_done(s, st, "logging a decision");
    if (!err)
        s->decision_delta += sqlite3_changes(s->db);
    return err;
}

static sqlite3_int64 to_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

/* Runs a prepared DELETE and returns the rows it removed in *n. */
static ldpb_err prune_step(agg_store *s, sqlite3_stmt *st, uint64_t *n)
{
    ldpb_err err = step_done(s, st, "deleting old decisions");
    *n = err ? 0 : (uint64_t)sqlite3_changes(s->db);
    s->decision_delta -= (int64_t)*n;
    return err;
}

ldpb_err agg_store_prune_decisions(agg_store *s, uint64_t expired_before_ms, uint64_t max_rows,
                                   uint64_t limit, uint64_t *deleted)
{
    *deleted = 0;
    uint64_t n = 0;
    sqlite3_bind_int64(s->prune_expired, 1, to_i64(expired_before_ms));
    sqlite3_bind_int64(s->prune_expired, 2, to_i64(limit));
    ldpb_err err = prune_step(s, s->prune_expired, &n);
    *deleted += n;
    uint64_t rows = agg_store_decision_rows(s);
    if (!err && rows > max_rows && *deleted < limit) {
        uint64_t excess = rows - max_rows, room = limit - *deleted;
        sqlite3_bind_int64(s->prune_oldest, 1, to_i64(excess < room ? excess : room));
        err = prune_step(s, s->prune_oldest, &n);
        *deleted += n;
    }
    return err;
}

uint64_t agg_store_decision_rows(const agg_store *s)
{
    int64_t rows = (int64_t)s->decision_rows + s->decision_delta;
    return rows > 0 ? (uint64_t)rows : 0;
}

void agg_store_inject_disk_full(agg_store *s, int on)
{
    s->inject_disk_full = on;
}

ldpb_err agg_store_put_state(agg_store *s, const uint8_t *blob, size_t len,
                             const agg_store_counters *c)
{
    sqlite3_stmt *st = s->put_state;
    sqlite3_bind_blob64(st, 1, blob, len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)c->policy_version);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)c->reports);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)c->duplicates);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)c->assignments);
    return step_done(s, st, "writing the policy state");
}

ldpb_err agg_store_arm_counts(agg_store *s, uint64_t *counts, uint32_t k)
{
    memset(counts, 0, (size_t)k * sizeof *counts);
    sqlite3_stmt *st = NULL;
    ldpb_err err = prepare(s, &st, "SELECT arm, count(*) FROM reports GROUP BY arm");
    if (err)
        return err;
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
    sqlite3_finalize(st);
    return err;
}

const char *agg_store_errmsg(const agg_store *s)
{
    return s ? s->errmsg : "no store";
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

ldpb_err agg_store_export_csv(const char *dir, FILE *out, char *errmsg)
{
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
    static const char sql[] =
        "SELECT d.assignment_id, d.arm, d.propensity, d.policy_version, d.mechanism, d.epsilon,"
        " r.value, d.issued_at_ms, d.expires_at_ms, r.reported_at_ms"
        " FROM decisions d LEFT JOIN reports r ON r.assignment_id = d.assignment_id"
        " UNION ALL "
        "SELECT r.assignment_id, r.arm, r.propensity, r.policy_version, r.mechanism, r.epsilon,"
        " r.value, NULL, r.expires_at_ms, r.reported_at_ms FROM reports r"
        " WHERE NOT EXISTS (SELECT 1 FROM decisions d WHERE d.assignment_id = r.assignment_id)"
        " ORDER BY 9, 1";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        say(errmsg, "%s: not an ldpb-aggregator state: %s", path, sqlite3_errmsg(db));
        err = LDPB_ECORRUPT;
        goto done;
    }
    fputs("assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,issued_at_ms,"
          "expires_at_ms,reported_at_ms\n",
          out);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
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
        fputc('\n', out);
    }
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

ldpb_err agg_store_backup(const char *dir, const char *dest, char *errmsg)
{
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
    if (sqlite3_open_v2(dest, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", dest, dst ? sqlite3_errmsg(dst) : "out of memory");
        goto done;
    }
    /* One step copies every page under one read transaction of the source: a consistent
     * snapshot, and in WAL mode the daemon's commits go on meanwhile. */
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
    sqlite3_close(src);
    return err;
}
