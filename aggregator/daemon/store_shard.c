/* Row shards of the SQLite store (store_shard.h): S databases of report and decision rows, each
 * with a writer thread that runs what the committer hands it (a batch's rows, retention, COMMIT,
 * ROLLBACK, the cleanup of an unapplied batch) and waits for the next. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store_be.h"
#include "store_shard.h"
#include "wal_vfs.h"

#define say agg_store_say

/* A shard's tables: those of aggregator.db with the batch that wrote each row, and `shard`, which
 * says which shard of how many the file is (a file moved to another place is refused). */
static const char shard_schema_sql[] =
    "CREATE TABLE IF NOT EXISTS shard("
    " id INTEGER PRIMARY KEY CHECK (id = 1), shard INTEGER NOT NULL, shards INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BLOB PRIMARY KEY, experiment INTEGER NOT NULL, arm INTEGER NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon REAL NOT NULL, propensity REAL NOT NULL,"
    " policy_version INTEGER NOT NULL, value REAL NOT NULL, expires_at_ms INTEGER NOT NULL,"
    " reported_at_ms INTEGER NOT NULL, batch INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BLOB PRIMARY KEY, experiment INTEGER NOT NULL, arm INTEGER NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon REAL NOT NULL, propensity REAL NOT NULL,"
    " policy_version INTEGER NOT NULL, issued_at_ms INTEGER NOT NULL,"
    " expires_at_ms INTEGER NOT NULL, retain_until_ms INTEGER NOT NULL,"
    " batch INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS decisions_by_retention ON decisions(retain_until_ms);";

enum {
    CMD_IDLE,
    CMD_ROWS,
    CMD_PRUNE_EXPIRED,
    CMD_PRUNE_OLDEST,
    CMD_COMMIT,
    CMD_ROLLBACK,
    CMD_CLEAN,
    CMD_STOP
};

/* One row of a shard's part of a batch, in the order it is written. */
typedef struct sel_row {
    const uint8_t *id;
    size_t len;
    size_t i; /* in the batch */
    int decision;
} sel_row;

typedef struct shard {
    agg_shards *set;
    unsigned idx;
    sqlite3 *db;
    sqlite3_stmt *begin, *commit, *rollback, *add_report, *has_report, *add_decision;
    sqlite3_stmt *prune_expired, *prune_oldest, *remove;
    int in_txn; /* BEGIN done, neither COMMIT nor ROLLBACK yet */
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cmd; /* CMD_IDLE when done */
    ldpb_err res;
    uint64_t out_n;
    sel_row *sel;
    size_t sel_cap;
    char errmsg[AGG_STORE_ERRMAX];
} shard;

struct agg_shards {
    unsigned n;
    shard *sh;
    uint64_t batch; /* the batch being written: applied + 1 */
    int dirty;      /* committed rows of an unapplied batch may remain */
    uint64_t clean_above;
    /* the parameters of the command under way */
    agg_store_batch_row *rows;
    size_t n_rows;
    uint64_t before_ms, limit, count;
    char errmsg[AGG_STORE_ERRMAX];
};

unsigned agg_shard_of(const uint8_t *id, size_t len, unsigned n)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a, 64 bits */
    for (size_t i = 0; i < len; i++)
        h = (h ^ id[i]) * 1099511628211u;
    return n ? (unsigned)(h % n) : 0;
}

int agg_shard_path(char *out, size_t cap, const char *dir, unsigned i)
{
    return (size_t)snprintf(out, cap, "%s/aggregator-rows-%u.db", dir, i) < cap;
}

static ldpb_err fail(shard *h, const char *what)
{
    say(h->errmsg, "rows database %u: %s: %s", h->idx, what, sqlite3_errmsg(h->db));
    return LDPB_EIO;
}

static ldpb_err step_done(shard *h, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? LDPB_OK : fail(h, what);
}

static ldpb_err ensure_txn(shard *h)
{
    if (h->in_txn)
        return LDPB_OK;
    ldpb_err err = step_done(h, h->begin, "BEGIN");
    h->in_txn = !err;
    return err;
}

static sqlite3_int64 to_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

/* Parameters 1..7, the columns a report row and a decision row share, in that order. */
static void bind_row_head(sqlite3_stmt *st, const agg_store_row *r)
{
    sqlite3_bind_blob(st, 1, r->id, (int)r->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, r->experiment);
    sqlite3_bind_int64(st, 3, r->arm);
    sqlite3_bind_text(st, 4, r->mechanism, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, r->epsilon);
    sqlite3_bind_double(st, 6, r->propensity);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)r->policy_version);
}

void agg_sqlite_bind_report(sqlite3_stmt *st, const agg_store_row *r)
{
    bind_row_head(st, r);
    sqlite3_bind_double(st, 8, r->value);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)r->expires_at_ms);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)r->at_ms);
}

void agg_sqlite_bind_decision(sqlite3_stmt *st, const agg_store_row *d)
{
    bind_row_head(st, d);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)d->at_ms);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)d->expires_at_ms);
    sqlite3_bind_int64(st, 10, to_i64(d->retain_until_ms));
}

static ldpb_err put_report(shard *h, const agg_store_row *r, int *is_new)
{
    sqlite3_stmt *st = h->add_report;
    agg_sqlite_bind_report(st, r);
    sqlite3_bind_int64(st, 11, to_i64(h->set->batch));
    ldpb_err err = step_done(h, st, "inserting a report");
    *is_new = !err && sqlite3_changes(h->db) == 1;
    return err;
}

static ldpb_err put_decision(shard *h, const agg_store_row *d, uint64_t *added)
{
    sqlite3_stmt *st = h->add_decision;
    agg_sqlite_bind_decision(st, d);
    sqlite3_bind_int64(st, 11, to_i64(h->set->batch));
    ldpb_err err = step_done(h, st, "logging a decision");
    *added += err ? 0 : (uint64_t)sqlite3_changes(h->db);
    return err;
}

static ldpb_err lookup(shard *h, const uint8_t *id, size_t len, int *exists)
{
    sqlite3_stmt *st = h->has_report;
    sqlite3_bind_blob(st, 1, id, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(h, "looking up a report");
    *exists = rc == SQLITE_ROW;
    return LDPB_OK;
}

/* Decisions first, then by id (the B-tree's order), then batch order for equal ids. */
static int sel_order(const void *pa, const void *pb)
{
    const sel_row *a = pa, *b = pb;
    if (a->decision != b->decision)
        return a->decision ? -1 : 1;
    size_t m = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->id, b->id, m);
    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* This shard's rows of the batch (the set's rows, kind, status). */
static ldpb_err write_rows(shard *h)
{
    agg_shards *set = h->set;
    if (set->n_rows > h->sel_cap) {
        sel_row *p = realloc(h->sel, set->n_rows * sizeof *p);
        if (!p) {
            say(h->errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        h->sel = p;
        h->sel_cap = set->n_rows;
    }
    size_t m = 0;
    for (size_t i = 0; i < set->n_rows; i++) {
        const agg_store_row *r = &set->rows[i].row;
        if (agg_shard_of(r->id, r->id_len, set->n) == h->idx)
            h->sel[m++] = (sel_row){r->id, r->id_len, i, set->rows[i].kind == AGG_BATCH_DECISION};
    }
    h->out_n = 0;
    if (m == 0)
        return LDPB_OK;
    qsort(h->sel, m, sizeof *h->sel, sel_order);
    ldpb_err err = ensure_txn(h);
    for (size_t k = 0; k < m && !err; k++) {
        agg_store_batch_row *b = &set->rows[h->sel[k].i];
        if (b->kind == AGG_BATCH_DECISION) {
            uint64_t before = h->out_n;
            err = put_decision(h, &b->row, &h->out_n);
            b->found = h->out_n != before;
        } else if (b->kind == AGG_BATCH_LOOKUP) {
            err = lookup(h, b->row.id, b->row.id_len, &b->found);
        } else {
            err = put_report(h, &b->row, &b->found);
        }
    }
    return err;
}

static ldpb_err prune(shard *h, sqlite3_stmt *st, uint64_t a, uint64_t b, int two)
{
    h->out_n = 0;
    ldpb_err err = ensure_txn(h);
    if (err)
        return err;
    sqlite3_bind_int64(st, 1, to_i64(a));
    if (two)
        sqlite3_bind_int64(st, 2, to_i64(b));
    err = step_done(h, st, "deleting old decisions");
    h->out_n = err ? 0 : (uint64_t)sqlite3_changes(h->db);
    return err;
}

/* Deletes the committed rows of batches above `above`, in a transaction of its own. */
static ldpb_err clean(shard *h, uint64_t above)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "BEGIN; DELETE FROM reports WHERE batch > %" PRIu64
             "; DELETE FROM decisions WHERE batch > %" PRIu64 "; COMMIT;",
             above, above);
    char *msg = NULL;
    if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        say(h->errmsg, "rows database %u: deleting the rows of an unapplied batch: %s", h->idx,
            msg ? msg : sqlite3_errmsg(h->db));
        sqlite3_free(msg);
        if (!sqlite3_get_autocommit(h->db))
            sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        return LDPB_EIO;
    }
    return LDPB_OK;
}

static ldpb_err run_cmd(shard *h, int cmd)
{
    agg_shards *set = h->set;
    switch (cmd) {
    case CMD_ROWS:
        return write_rows(h);
    case CMD_PRUNE_EXPIRED:
        return prune(h, h->prune_expired, set->before_ms, set->limit, 1);
    case CMD_PRUNE_OLDEST:
        return prune(h, h->prune_oldest, set->count, 0, 0);
    case CMD_COMMIT: {
        if (!h->in_txn)
            return LDPB_OK;
        ldpb_err err = step_done(h, h->commit, "COMMIT");
        if (!err || sqlite3_get_autocommit(h->db))
            h->in_txn = 0;
        return err;
    }
    case CMD_ROLLBACK:
        if (h->in_txn && !sqlite3_get_autocommit(h->db))
            (void)step_done(h, h->rollback, "ROLLBACK");
        h->in_txn = 0;
        return LDPB_OK;
    case CMD_CLEAN:
        return clean(h, set->clean_above);
    default:
        return LDPB_OK;
    }
}

static void *writer_main(void *p)
{
    shard *h = p;
    char name[16];
    snprintf(name, sizeof name, "ldpb-rows%u", h->idx);
    prctl(PR_SET_NAME, name, 0, 0, 0); /* its CPU time by name (bench/run_shard_bench.sh) */
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (h->cmd == CMD_IDLE)
            pthread_cond_wait(&h->cv, &h->mu);
        int cmd = h->cmd;
        if (cmd == CMD_STOP)
            break;
        pthread_mutex_unlock(&h->mu);
        ldpb_err res = run_cmd(h, cmd);
        pthread_mutex_lock(&h->mu);
        h->res = res;
        h->cmd = CMD_IDLE;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Hands `cmd` to every writer and waits for all: the first failure's code and message. */
static ldpb_err fan_out(agg_shards *set, int cmd, uint64_t *n)
{
    for (unsigned i = 0; i < set->n; i++) {
        shard *h = &set->sh[i];
        pthread_mutex_lock(&h->mu);
        h->cmd = cmd;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
    ldpb_err err = LDPB_OK;
    if (n)
        *n = 0;
    for (unsigned i = 0; i < set->n; i++) {
        shard *h = &set->sh[i];
        pthread_mutex_lock(&h->mu);
        while (h->cmd != CMD_IDLE)
            pthread_cond_wait(&h->cv, &h->mu);
        pthread_mutex_unlock(&h->mu);
        if (h->res && !err) {
            err = h->res;
            snprintf(set->errmsg, sizeof set->errmsg, "%s", h->errmsg);
        }
        if (n)
            *n += h->out_n;
    }
    return err;
}

static ldpb_err prepare_shard(shard *h)
{
    static const struct {
        size_t off;
        const char *sql;
    } stmts[] = {
        {offsetof(shard, begin), "BEGIN"},
        {offsetof(shard, commit), "COMMIT"},
        {offsetof(shard, rollback), "ROLLBACK"},
        {offsetof(shard, add_report),
         "INSERT OR IGNORE INTO reports(assignment_id, experiment, arm, mechanism, epsilon,"
         " propensity, policy_version, value, expires_at_ms, reported_at_ms, batch)"
         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"},
        {offsetof(shard, has_report), "SELECT 1 FROM reports WHERE assignment_id = ?1"},
        {offsetof(shard, add_decision),
         "INSERT OR IGNORE INTO decisions(assignment_id, experiment, arm, mechanism, epsilon,"
         " propensity, policy_version, issued_at_ms, expires_at_ms, retain_until_ms, batch)"
         " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"},
        {offsetof(shard, prune_expired),
         "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
         " WHERE retain_until_ms < ?1 ORDER BY retain_until_ms LIMIT ?2)"},
        {offsetof(shard, prune_oldest),
         "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
         " ORDER BY retain_until_ms LIMIT ?1)"},
        {offsetof(shard, remove), "DELETE FROM reports WHERE assignment_id = ?1"},
    };
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        sqlite3_stmt **st = (sqlite3_stmt **)((char *)h + stmts[i].off);
        if (sqlite3_prepare_v3(h->db, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) !=
            SQLITE_OK)
            return fail(h, "prepare");
    }
    return LDPB_OK;
}

static int64_t count1(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Opens shard h->idx of `n`: schema, its `shard` row checked (or written), and the rows of
 * batches above `applied` deleted. */
static ldpb_err open_shard(shard *h, const char *dir, unsigned n, uint64_t applied, int create,
                           char *errmsg)
{
    char path[4096], side[4200];
    if (!agg_shard_path(path, sizeof path, dir, h->idx)) {
        say(errmsg, "state_dir %s: path too long", dir);
        return LDPB_EINVAL;
    }
    struct stat st;
    int existed = stat(path, &st) == 0 && st.st_size > 0;
    for (int k = 0; k < 2; k++) {
        snprintf(side, sizeof side, "%s%s", path, k ? "-shm" : "-wal");
        ldpb_err err = agg_sqlite_make_private(side, 0, errmsg);
        if (err)
            return err;
    }
    ldpb_err err = agg_sqlite_make_private(path, 1, errmsg);
    if (err)
        return err;
    /* a writer's commit in one WAL write, as aggregator.db's (wal_vfs.h) */
    if (sqlite3_open_v2(path, &h->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                        agg_wal_vfs_name()) != SQLITE_OK) {
        say(errmsg, "%s: cannot open: %s", path, h->db ? sqlite3_errmsg(h->db) : "out of memory");
        return LDPB_EIO;
    }
    sqlite3_extended_result_codes(h->db, 1);
    char *msg = NULL;
    char sql[sizeof shard_schema_sql + 256];
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;"
             " BEGIN IMMEDIATE; %s"
             " INSERT OR IGNORE INTO shard(id, shard, shards) VALUES (1, %u, %u);",
             shard_schema_sql, h->idx, n);
    if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        say(errmsg, "%s: %s", path, msg ? msg : sqlite3_errmsg(h->db));
        sqlite3_free(msg);
        return LDPB_EIO;
    }
    int64_t idx = count1(h->db, "SELECT shard FROM shard"),
            of = count1(h->db, "SELECT shards FROM shard"),
            rows = create && existed ? count1(h->db, "SELECT (SELECT count(*) FROM reports) +"
                                                     " (SELECT count(*) FROM decisions)")
                                     : 0;
    if (idx != (int64_t)h->idx || of != (int64_t)n) {
        say(errmsg, "%s: holds rows database %lld of %lld, expected %u of %u", path, (long long)idx,
            (long long)of, h->idx, n);
        err = LDPB_ESTATE;
    } else if (create && existed && rows != 0) {
        say(errmsg,
            "%s: holds rows of a state whose aggregator.db is gone: move it away (or restore "
            "aggregator.db) before starting a new state",
            path);
        err = LDPB_ESTATE;
    }
    if (!err && sqlite3_exec(h->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
        say(errmsg, "%s: %s", path, msg ? msg : sqlite3_errmsg(h->db));
        sqlite3_free(msg);
        err = LDPB_EIO;
    }
    if (err) {
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        return err;
    }
    if (clean(h, applied)) {
        say(errmsg, "%s", h->errmsg);
        return LDPB_EIO;
    }
    err = prepare_shard(h);
    if (err)
        say(errmsg, "%s", h->errmsg);
    return err;
}

ldpb_err agg_shards_open(agg_shards **out, const char *dir, unsigned n, uint64_t applied,
                         int create, char *errmsg)
{
    *out = NULL;
    if (n < 2 || n > AGG_SHARDS_MAX) {
        say(errmsg, "row_shards = %u: 1 to %d expected", n, AGG_SHARDS_MAX);
        return LDPB_EINVAL;
    }
    agg_shards *set = calloc(1, sizeof *set);
    shard *sh = set ? calloc(n, sizeof *sh) : NULL;
    if (!sh) {
        free(set);
        say(errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    set->n = n;
    set->sh = sh;
    set->batch = applied + 1;
    ldpb_err err = LDPB_OK;
    for (unsigned i = 0; i < n; i++) {
        sh[i].set = set;
        sh[i].idx = i;
        pthread_mutex_init(&sh[i].mu, NULL);
        pthread_cond_init(&sh[i].cv, NULL);
    }
    for (unsigned i = 0; i < n && !err; i++)
        err = open_shard(&sh[i], dir, n, applied, create, errmsg);
    for (unsigned i = 0; i < n && !err; i++) {
        if (pthread_create(&sh[i].th, NULL, writer_main, &sh[i]) != 0) {
            say(errmsg, "cannot start the writer of rows database %u", i);
            err = LDPB_ENOMEM;
        } else {
            sh[i].started = 1;
        }
    }
    if (err) {
        agg_shards_close(set);
        return err;
    }
    *out = set;
    return LDPB_OK;
}

void agg_shards_close(agg_shards *set)
{
    if (!set)
        return;
    for (unsigned i = 0; i < set->n; i++) {
        shard *h = &set->sh[i];
        if (h->started) {
            pthread_mutex_lock(&h->mu);
            h->cmd = CMD_STOP;
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
            pthread_join(h->th, NULL);
        }
        if (h->db && !sqlite3_get_autocommit(h->db))
            sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_stmt *all[] = {h->begin,      h->commit,        h->rollback,
                               h->add_report, h->has_report,    h->add_decision,
                               h->remove,     h->prune_expired, h->prune_oldest};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            sqlite3_finalize(all[k]);
        sqlite3_close(h->db); /* checkpoints its WAL */
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
        free(h->sel);
    }
    free(set->sh);
    free(set);
}

uint64_t agg_shards_batch(const agg_shards *set)
{
    return set->batch;
}

int agg_shards_active(const agg_shards *set)
{
    for (unsigned i = 0; i < set->n; i++)
        if (set->sh[i].in_txn)
            return 1;
    return 0;
}

/* A failed COMMIT's committed rows first: no batch is written over them. */
static ldpb_err settle_dirty(agg_shards *set, char *errmsg)
{
    if (!set->dirty)
        return LDPB_OK;
    ldpb_err err = fan_out(set, CMD_CLEAN, NULL);
    if (err) {
        say(errmsg, "%s", set->errmsg);
        return err;
    }
    set->dirty = 0;
    return LDPB_OK;
}

ldpb_err agg_shards_rows(agg_shards *set, agg_store_batch_row *rows, size_t n, char *errmsg)
{
    ldpb_err err = settle_dirty(set, errmsg);
    if (err || n == 0)
        return err;
    set->rows = rows;
    set->n_rows = n;
    err = fan_out(set, CMD_ROWS, NULL);
    set->rows = NULL;
    if (err)
        say(errmsg, "%s", set->errmsg);
    return err;
}

static shard *shard_for(agg_shards *set, const uint8_t *id, size_t len)
{
    return &set->sh[agg_shard_of(id, len, set->n)];
}

ldpb_err agg_shards_add_report(agg_shards *set, const agg_store_row *r, int *is_new, char *errmsg)
{
    *is_new = 0;
    shard *h = shard_for(set, r->id, r->id_len);
    ldpb_err err = settle_dirty(set, errmsg);
    if (!err && (err = ensure_txn(h)) == LDPB_OK)
        err = put_report(h, r, is_new);
    if (err && h->errmsg[0])
        say(errmsg, "%s", h->errmsg);
    return err;
}

ldpb_err agg_shards_add_decision(agg_shards *set, const agg_store_row *d, uint64_t *added,
                                 char *errmsg)
{
    *added = 0;
    shard *h = shard_for(set, d->id, d->id_len);
    ldpb_err err = settle_dirty(set, errmsg);
    if (!err && (err = ensure_txn(h)) == LDPB_OK)
        err = put_decision(h, d, added);
    if (err && h->errmsg[0])
        say(errmsg, "%s", h->errmsg);
    return err;
}

ldpb_err agg_shards_has_report(agg_shards *set, const uint8_t *id, size_t len, int *exists,
                               char *errmsg)
{
    *exists = 0;
    shard *h = shard_for(set, id, len);
    ldpb_err err = lookup(h, id, len, exists);
    if (err)
        say(errmsg, "%s", h->errmsg);
    return err;
}

ldpb_err agg_shards_remove_report(agg_shards *set, const uint8_t *id, size_t len, char *errmsg)
{
    shard *h = shard_for(set, id, len);
    ldpb_err err = ensure_txn(h);
    if (!err) {
        sqlite3_bind_blob(h->remove, 1, id, (int)len, SQLITE_STATIC);
        err = step_done(h, h->remove, "removing a report");
    }
    if (err)
        say(errmsg, "%s", h->errmsg);
    return err;
}

ldpb_err agg_shards_prune_expired(agg_shards *set, uint64_t before_ms, uint64_t limit, uint64_t *n,
                                  char *errmsg)
{
    set->before_ms = before_ms;
    set->limit = limit;
    ldpb_err err = fan_out(set, CMD_PRUNE_EXPIRED, n);
    if (err)
        say(errmsg, "%s", set->errmsg);
    return err;
}

ldpb_err agg_shards_prune_oldest(agg_shards *set, uint64_t count, uint64_t *n, char *errmsg)
{
    set->count = count / set->n + (count % set->n != 0);
    ldpb_err err = fan_out(set, CMD_PRUNE_OLDEST, n);
    if (err)
        say(errmsg, "%s", set->errmsg);
    return err;
}

ldpb_err agg_shards_commit(agg_shards *set, char *errmsg)
{
    set->dirty = 1; /* until aggregator.db applies the batch, or its rows are deleted */
    set->clean_above = set->batch - 1;
    ldpb_err err = fan_out(set, CMD_COMMIT, NULL);
    if (err)
        say(errmsg, "%s", set->errmsg);
    return err;
}

void agg_shards_applied(agg_shards *set)
{
    set->dirty = 0;
    set->batch++;
}

void agg_shards_rollback(agg_shards *set, uint64_t applied)
{
    (void)fan_out(set, CMD_ROLLBACK, NULL);
    set->batch = applied + 1;
    set->clean_above = applied;
    if (set->dirty && !fan_out(set, CMD_CLEAN, NULL))
        set->dirty = 0;
}

const char *agg_shards_errmsg(const agg_shards *set)
{
    return set->errmsg;
}
