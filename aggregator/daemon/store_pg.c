/* The PostgreSQL backend of the store (store.h, store_be.h), for one node, through libpq. The
 * tables are SQLite's (schema version AGG_STORE_SCHEMA_VERSION, docs/aggregator.md) in PostgreSQL's
 * types; a batch is one transaction, and a report is acked only after its COMMIT returned with
 * synchronous_commit on (set for the session at every connect), so an acked report is in the
 * server's flushed WAL. The report id is the primary key of `reports`: a resent report finds its
 * row and is answered as a duplicate.
 *
 * One node per database: the connection holds a session advisory lock (pg_try_advisory_lock), so
 * a second ldpb-aggregator on the same database is refused as a second one on the same state_dir
 * is by the lock file. The state directory is still required: it holds that lock file, the
 * identity marker (state_id.h; the identity row is in the database) and the replay log.
 *
 * A lost connection is taken up again by the next transaction (agg_store_begin): PQreset, the
 * session settings, the advisory lock and the prepared statements again. Until then every
 * transaction fails with LDPB_EIO, which the daemon answers as "resend". A COMMIT whose answer
 * was lost with the connection may have happened: the state row carries a generation, written
 * one higher by each transaction, and after the reconnect the generation read tells which. If it
 * did happen, the daemon's memory no longer matches the database (the batch was answered
 * "resend" and its policy update dropped), so every later transaction fails until the daemon is
 * restarted, which reloads the state and acks the resent reports as duplicates. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "state_id.h"
#include "store_be.h"

#define say agg_store_say

/* pg_try_advisory_lock's key: "ldpbaggr" read as a big-endian integer. */
#define PG_LOCK_KEY     "7810475985062594418"
#define PG_LOCK_WAIT_MS 3000

typedef struct pg_store {
    PGconn *conn;
    char *url;
    uint64_t generation;         /* the committed state row's */
    uint64_t pending_generation; /* written by the open transaction */
    int in_doubt;                /* a COMMIT's answer was lost: resolved at the reconnect */
    int stuck;                   /* that COMMIT happened: no more transactions until a restart */
} pg_store;

#define BE(s) ((pg_store *)(s)->be)

/* Version 1, in PostgreSQL's types; `generation` is this backend's (the file's header says why). */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS state("
    " id INTEGER PRIMARY KEY CHECK (id = 1), policy_state BYTEA NOT NULL,"
    " policy_version BIGINT NOT NULL, reports BIGINT NOT NULL, duplicates BIGINT NOT NULL,"
    " assignments BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL,"
    " generation BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BYTEA PRIMARY KEY, arm BIGINT NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon DOUBLE PRECISION NOT NULL, propensity DOUBLE PRECISION NOT NULL,"
    " policy_version BIGINT NOT NULL, value DOUBLE PRECISION NOT NULL,"
    " expires_at_ms BIGINT NOT NULL, reported_at_ms BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BYTEA PRIMARY KEY, arm BIGINT NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon DOUBLE PRECISION NOT NULL, propensity DOUBLE PRECISION NOT NULL,"
    " policy_version BIGINT NOT NULL, issued_at_ms BIGINT NOT NULL,"
    " expires_at_ms BIGINT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS decisions_by_expiry ON decisions(expires_at_ms);"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BYTEA NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms BIGINT NOT NULL);";

/* The statements of the batches, prepared on every connection. */
static const struct {
    const char *name;
    const char *sql;
} stmts[] = {
    {"add_report",
     "INSERT INTO reports(assignment_id, arm, mechanism, epsilon, propensity, policy_version,"
     " value, expires_at_ms, reported_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
     " ON CONFLICT (assignment_id) DO NOTHING"},
    {"has_report", "SELECT 1 FROM reports WHERE assignment_id = $1"},
    {"remove_report", "DELETE FROM reports WHERE assignment_id = $1"},
    {"add_decision",
     "INSERT INTO decisions(assignment_id, arm, mechanism, epsilon, propensity, policy_version,"
     " issued_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
     " ON CONFLICT (assignment_id) DO NOTHING"},
    {"put_state",
     "INSERT INTO state(id, policy_state, policy_version, reports, duplicates, assignments,"
     " updated_at_ms, generation) VALUES (1, $1, $2, $3, $4, $5,"
     " (extract(epoch FROM clock_timestamp()) * 1000)::bigint, $6)"
     " ON CONFLICT (id) DO UPDATE SET policy_state = EXCLUDED.policy_state,"
     " policy_version = EXCLUDED.policy_version, reports = EXCLUDED.reports,"
     " duplicates = EXCLUDED.duplicates, assignments = EXCLUDED.assignments,"
     " updated_at_ms = EXCLUDED.updated_at_ms, generation = EXCLUDED.generation"},
    {"prune_expired",
     "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
     " WHERE expires_at_ms < $1 ORDER BY expires_at_ms LIMIT $2)"},
    {"prune_oldest",
     "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
     " ORDER BY expires_at_ms LIMIT $1)"},
    {"write_meta", "INSERT INTO meta(key, value) VALUES ($1, $2)"},
};
#define N_STMTS (sizeof stmts / sizeof stmts[0])

/* The server's message without its trailing newline. */
static void pg_reason(PGconn *conn, char *out, size_t cap)
{
    snprintf(out, cap, "%s", conn ? PQerrorMessage(conn) : "out of memory");
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
}

static ldpb_err pg_fail(agg_store *s, const char *what)
{
    char why[AGG_STORE_ERRMAX];
    pg_reason(BE(s)->conn, why, sizeof why);
    say(s->errmsg, "%s: %s", what, why[0] ? why : "the database connection is lost");
    return LDPB_EIO;
}

/* Runs `sql` (no parameters); `want` is PGRES_COMMAND_OK or PGRES_TUPLES_OK. The result, kept
 * only when `res` is not NULL, is the caller's to PQclear. */
static ldpb_err run(agg_store *s, const char *sql, ExecStatusType want, PGresult **res,
                    const char *what)
{
    PGresult *r = PQexec(BE(s)->conn, sql);
    if (PQresultStatus(r) != want) {
        ldpb_err err = pg_fail(s, what);
        PQclear(r);
        return err;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return LDPB_OK;
}

/* Runs a prepared statement; parameters are text except those marked binary (bytea). */
static PGresult *run_prepared(agg_store *s, const char *name, int n, const char *const *values,
                              const int *lengths, const int *formats)
{
    return PQexecPrepared(BE(s)->conn, name, n, values, lengths, formats, 0);
}

static ldpb_err check_result(agg_store *s, PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) == want)
        return LDPB_OK;
    return pg_fail(s, what);
}

/* A text field as an unsigned integer; -1 if it is not one. */
static int field_u64(const PGresult *r, int row, int col, uint64_t *v)
{
    if (PQgetisnull(r, row, col))
        return -1;
    const char *t = PQgetvalue(r, row, col);
    if (t[0] == '-' || t[0] == '\0')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(t, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

/* A one-row, one-column count; -1 on failure. */
static int64_t query_count(agg_store *s, const char *sql, const char *what)
{
    PGresult *r = NULL;
    if (run(s, sql, PGRES_TUPLES_OK, &r, what))
        return -1;
    uint64_t n = 0;
    int64_t out = PQntuples(r) == 1 && field_u64(r, 0, 0, &n) == 0 ? (int64_t)n : -1;
    if (out < 0)
        say(s->errmsg, "%s: not a count", what);
    PQclear(r);
    return out;
}

/* What every connection needs before its first transaction: durable commits, the one-node lock,
 * the statements. LDPB_ESTATE when another node holds the lock. */
static ldpb_err session_setup(agg_store *s)
{
    /* Explicit, whatever the server's or the role's default: an ack waits for the WAL flush. */
    ldpb_err err = run(s,
                       "SET synchronous_commit = on; SET client_min_messages = warning;"
                       " SET lock_timeout = '5s'",
                       PGRES_COMMAND_OK, NULL, "setting up the session");
    if (err)
        return err;
    /* The session of a daemon that just exited (or was killed) ends on the server a moment
     * after its socket closes, and only then is its lock released: a restart waits for that,
     * up to PG_LOCK_WAIT_MS. */
    int held = 0;
    for (int waited = 0; !held && waited <= PG_LOCK_WAIT_MS; waited += 50) {
        if (waited > 0)
            nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
        PGresult *r = NULL;
        err = run(s, "SELECT pg_try_advisory_lock(" PG_LOCK_KEY ")", PGRES_TUPLES_OK, &r,
                  "taking the advisory lock");
        if (err)
            return err;
        held = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
    }
    if (!held) {
        say(s->errmsg,
            "the database is in use by another ldpb-aggregator (it holds the advisory lock %s); "
            "one node per database",
            PG_LOCK_KEY);
        return LDPB_ESTATE;
    }
    return LDPB_OK;
}

static ldpb_err prepare_all(agg_store *s)
{
    for (size_t i = 0; i < N_STMTS; i++) {
        PGresult *r = PQprepare(BE(s)->conn, stmts[i].name, stmts[i].sql, 0, NULL);
        ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "preparing a statement");
        PQclear(r);
        if (err)
            return err;
    }
    return LDPB_OK;
}

/* The state row's generation (0 without a row); -1 on failure. */
static int64_t read_generation(agg_store *s)
{
    PGresult *r = NULL;
    if (run(s, "SELECT generation FROM state WHERE id = 1", PGRES_TUPLES_OK, &r,
            "reading the state's generation"))
        return -1;
    uint64_t g = 0;
    int64_t out = PQntuples(r) == 0 ? 0 : field_u64(r, 0, 0, &g) == 0 ? (int64_t)g : -1;
    PQclear(r);
    return out;
}

/* Takes a lost connection up again (the file's header says what a COMMIT in doubt becomes). */
static ldpb_err reconnect(agg_store *s)
{
    pg_store *b = BE(s);
    PQreset(b->conn);
    if (PQstatus(b->conn) != CONNECTION_OK)
        return pg_fail(s, "reconnecting to the database");
    ldpb_err err = session_setup(s);
    if (!err)
        err = prepare_all(s);
    if (err)
        return err == LDPB_ESTATE ? LDPB_EIO : err;
    if (b->in_doubt) {
        int64_t g = read_generation(s);
        if (g < 0)
            return LDPB_EIO;
        b->in_doubt = 0;
        if ((uint64_t)g != b->generation)
            b->stuck = 1;
    }
    return LDPB_OK;
}

static ldpb_err pg_begin(agg_store *s)
{
    pg_store *b = BE(s);
    if (!b->stuck && PQstatus(b->conn) != CONNECTION_OK && reconnect(s))
        return LDPB_EIO;
    if (b->stuck) {
        say(s->errmsg,
            "a COMMIT whose answer was lost with the database connection went through: restart "
            "ldpb-aggregator to reload the state (the reports of that batch were answered "
            "'resend' and are then acked as duplicates)");
        return LDPB_EIO;
    }
    ldpb_err err = run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN");
    if (err && PQstatus(b->conn) != CONNECTION_OK) {
        /* The server went away while the connection was idle: once more on a new one. */
        if (reconnect(s) || b->stuck)
            return LDPB_EIO;
        err = run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN");
    }
    return err;
}

static ldpb_err pg_commit(agg_store *s)
{
    pg_store *b = BE(s);
    PGresult *r = PQexec(b->conn, "COMMIT");
    /* A COMMIT of a failed transaction answers ROLLBACK (COMMAND_OK, tag "ROLLBACK"). */
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(r), "COMMIT") == 0;
    PQclear(r);
    if (ok) {
        b->generation = b->pending_generation;
        return LDPB_OK;
    }
    if (PQstatus(b->conn) != CONNECTION_OK)
        b->in_doubt = b->pending_generation != b->generation;
    return pg_fail(s, "COMMIT");
}

static void pg_rollback(agg_store *s)
{
    pg_store *b = BE(s);
    b->pending_generation = b->generation;
    if (PQstatus(b->conn) != CONNECTION_OK || PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        return;
    PQclear(PQexec(b->conn, "ROLLBACK"));
}

static void u64_text(char *buf, size_t cap, uint64_t v)
{
    snprintf(buf, cap, "%" PRIu64, v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v);
}

static ldpb_err pg_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    char arm[24], eps[32], prop[32], ver[24], val[32], exp[24], at[24];
    snprintf(arm, sizeof arm, "%" PRIu32, r->arm);
    snprintf(eps, sizeof eps, "%.17g", r->epsilon);
    snprintf(prop, sizeof prop, "%.17g", r->propensity);
    u64_text(ver, sizeof ver, r->policy_version);
    snprintf(val, sizeof val, "%.17g", r->value);
    u64_text(exp, sizeof exp, r->expires_at_ms);
    u64_text(at, sizeof at, r->at_ms);
    const char *v[9] = {(const char *)r->id, arm, r->mechanism, eps, prop, ver, val, exp, at};
    int len[9] = {(int)r->id_len}, fmt[9] = {1};
    PGresult *res = run_prepared(s, "add_report", 9, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "inserting a report");
    *is_new = !err && strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return err;
}

static ldpb_err pg_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists)
{
    const char *v[1] = {(const char *)id};
    int len[1] = {(int)id_len}, fmt[1] = {1};
    PGresult *res = run_prepared(s, "has_report", 1, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_TUPLES_OK, "looking up a report");
    *exists = !err && PQntuples(res) > 0;
    PQclear(res);
    return err;
}

static ldpb_err pg_remove_report(agg_store *s, const uint8_t *id, size_t id_len)
{
    const char *v[1] = {(const char *)id};
    int len[1] = {(int)id_len}, fmt[1] = {1};
    PGresult *res = run_prepared(s, "remove_report", 1, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "removing a report");
    PQclear(res);
    return err;
}

static ldpb_err pg_add_decision(agg_store *s, const agg_store_row *d, uint64_t *added)
{
    char arm[24], eps[32], prop[32], ver[24], at[24], exp[24];
    snprintf(arm, sizeof arm, "%" PRIu32, d->arm);
    snprintf(eps, sizeof eps, "%.17g", d->epsilon);
    snprintf(prop, sizeof prop, "%.17g", d->propensity);
    u64_text(ver, sizeof ver, d->policy_version);
    u64_text(at, sizeof at, d->at_ms);
    u64_text(exp, sizeof exp, d->expires_at_ms);
    const char *v[8] = {(const char *)d->id, arm, d->mechanism, eps, prop, ver, at, exp};
    int len[8] = {(int)d->id_len}, fmt[8] = {1};
    PGresult *res = run_prepared(s, "add_decision", 8, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "logging a decision");
    *added = !err && strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return err;
}

/* Runs a prepared DELETE of decisions and returns the rows it removed in *n. */
static ldpb_err prune_run(agg_store *s, const char *name, int n_params, const char *const *v,
                          uint64_t *n)
{
    PGresult *res = run_prepared(s, name, n_params, v, NULL, NULL);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "deleting old decisions");
    *n = 0;
    if (!err)
        *n = strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return err;
}

static ldpb_err pg_prune_expired(agg_store *s, uint64_t before_ms, uint64_t limit, uint64_t *n)
{
    char before[24], lim[24];
    u64_text(before, sizeof before, before_ms);
    u64_text(lim, sizeof lim, limit);
    const char *v[2] = {before, lim};
    return prune_run(s, "prune_expired", 2, v, n);
}

static ldpb_err pg_prune_oldest(agg_store *s, uint64_t count, uint64_t *n)
{
    char cnt[24];
    u64_text(cnt, sizeof cnt, count);
    const char *v[1] = {cnt};
    return prune_run(s, "prune_oldest", 1, v, n);
}

static ldpb_err pg_put_state(agg_store *s, const uint8_t *blob, size_t len,
                             const agg_store_counters *c)
{
    if (len > (size_t)INT32_MAX) {
        say(s->errmsg, "the policy state (%zu bytes) is too large", len);
        return LDPB_EIO;
    }
    pg_store *b = BE(s);
    char ver[24], rep[24], dup[24], asg[24], gen[24];
    u64_text(ver, sizeof ver, c->policy_version);
    u64_text(rep, sizeof rep, c->reports);
    u64_text(dup, sizeof dup, c->duplicates);
    u64_text(asg, sizeof asg, c->assignments);
    b->pending_generation = b->generation + 1;
    u64_text(gen, sizeof gen, b->pending_generation);
    const char *v[6] = {(const char *)blob, ver, rep, dup, asg, gen};
    int lens[6] = {(int)len}, fmt[6] = {1};
    PGresult *res = run_prepared(s, "put_state", 6, v, lens, fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "writing the policy state");
    PQclear(res);
    return err;
}

static ldpb_err pg_write_meta(agg_store *s, const agg_meta_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v[2] = {rows[i].key, rows[i].value};
        PGresult *res = run_prepared(s, "write_meta", 2, v, NULL, NULL);
        ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "writing meta");
        PQclear(res);
        if (err)
            return err;
    }
    return LDPB_OK;
}

static ldpb_err pg_arm_counts(agg_store *s, uint64_t *counts, uint32_t k)
{
    PGresult *r = NULL;
    ldpb_err err = run(s, "SELECT arm, count(*) FROM reports GROUP BY arm", PGRES_TUPLES_OK, &r,
                       "counting reports");
    if (err)
        return err;
    for (int i = 0; i < PQntuples(r) && !err; i++) {
        uint64_t arm = 0, n = 0;
        if (field_u64(r, i, 0, &arm) || field_u64(r, i, 1, &n) || arm >= k) {
            say(s->errmsg, "a stored report has arm %s outside [0, %u)", PQgetvalue(r, i, 0), k);
            err = LDPB_ECORRUPT;
        } else {
            counts[arm] = n;
        }
    }
    PQclear(r);
    return err;
}

static ldpb_err pg_load(agg_store *s, uint8_t **blob, size_t *len, agg_store_counters *c)
{
    *blob = NULL;
    *len = 0;
    memset(c, 0, sizeof *c);
    PGresult *r = NULL;
    ldpb_err err = run(s,
                       "SELECT policy_state, policy_version, reports, duplicates, assignments,"
                       " (SELECT count(*) FROM reports), generation FROM state WHERE id = 1",
                       PGRES_TUPLES_OK, &r, "reading the state");
    if (err)
        return err;
    if (PQntuples(r) == 0) {
        PQclear(r);
        int64_t n = query_count(s, "SELECT count(*) FROM reports", "counting reports");
        if (n < 0)
            return LDPB_EIO;
        if (n > 0) {
            say(s->errmsg, "reports are stored but the policy state is missing");
            return LDPB_ECORRUPT;
        }
        return LDPB_OK;
    }
    uint64_t v[6];
    for (int i = 0; i < 6; i++) {
        if (field_u64(r, 0, i + 1, &v[i])) {
            say(s->errmsg, "negative or malformed counter in the state row");
            PQclear(r);
            return LDPB_ECORRUPT;
        }
    }
    if (v[0] != v[1] || v[1] != v[4]) {
        say(s->errmsg,
            "the state counts %" PRIu64 " reports (policy version %" PRIu64 ") but the reports "
            "table has %" PRIu64,
            v[1], v[0], v[4]);
        PQclear(r);
        return LDPB_ECORRUPT;
    }
    c->policy_version = v[0];
    c->reports = v[1];
    c->duplicates = v[2];
    c->assignments = v[3];
    BE(s)->generation = BE(s)->pending_generation = v[5];
    size_t n = 0;
    unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 0), &n);
    PQclear(r);
    if (!p)
        return LDPB_ENOMEM;
    if (n == 0) {
        PQfreemem(p);
        say(s->errmsg, "the policy state is empty");
        return LDPB_ECORRUPT;
    }
    *blob = malloc(n);
    if (*blob) {
        memcpy(*blob, p, n);
        *len = n;
    }
    PQfreemem(p);
    return *blob ? LDPB_OK : LDPB_ENOMEM;
}

/* ---- open ------------------------------------------------------------------------------------ */

static int64_t pg_count_meta(agg_store *s)
{
    return query_count(s, "SELECT count(*) FROM meta", "reading meta");
}

static int64_t pg_count_data(agg_store *s)
{
    return query_count(s,
                       "SELECT (SELECT count(*) FROM state) + (SELECT count(*) FROM reports) +"
                       " (SELECT count(*) FROM decisions)",
                       "reading the state");
}

static int pg_get_meta(agg_store *s, const char *key, char *value, size_t cap)
{
    const char *v[1] = {key};
    PGresult *r = PQexecParams(BE(s)->conn, "SELECT value FROM meta WHERE key = $1", 1, NULL, v,
                               NULL, NULL, 0);
    int got = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(s, "reading meta");
    } else if (PQntuples(r) == 0) {
        got = 0;
    } else {
        snprintf(value, cap, "%s", PQgetvalue(r, 0, 0));
        got = 1;
    }
    PQclear(r);
    return got;
}

static const agg_meta_reader pg_meta_reader = {pg_count_meta, pg_count_data, pg_get_meta};

/* The identity row (state_id.h), read and written in the open transaction. */
static int pg_id_read(void *ctx, uint8_t id[AGG_STATE_ID_BYTES], int *legacy, char *errmsg,
                      size_t errcap)
{
    agg_store *s = ctx;
    PGresult *r = PQexec(BE(s)->conn, "SELECT state_id, legacy_tokens FROM identity WHERE id = 1");
    int got = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(s, "reading the identity");
        ldpb_detailf(errmsg, errcap, "%s", s->errmsg);
    } else if (PQntuples(r) == 0) {
        got = 0;
    } else {
        size_t n = 0;
        unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 0), &n);
        if (!p || n != AGG_STATE_ID_BYTES) {
            ldpb_detailf(errmsg, errcap, "the identity row holds %zu bytes, not %u", n,
                         AGG_STATE_ID_BYTES);
        } else {
            memcpy(id, p, AGG_STATE_ID_BYTES);
            *legacy = strcmp(PQgetvalue(r, 0, 1), "0") != 0;
            got = 1;
        }
        PQfreemem(p);
    }
    PQclear(r);
    return got;
}

static ldpb_err pg_id_insert(void *ctx, const agg_state_ident *ident, int64_t created_ms,
                             char *errmsg, size_t errcap)
{
    agg_store *s = ctx;
    char legacy[4], created[24];
    snprintf(legacy, sizeof legacy, "%d", ident->legacy_tokens ? 1 : 0);
    snprintf(created, sizeof created, "%" PRId64, created_ms);
    const char *v[3] = {(const char *)ident->id, legacy, created};
    int len[3] = {AGG_STATE_ID_BYTES}, fmt[3] = {1};
    PGresult *r = PQexecParams(BE(s)->conn,
                               "INSERT INTO identity(id, state_id, legacy_tokens, created_at_ms)"
                               " VALUES (1, $1, $2, $3)",
                               3, NULL, v, len, fmt, 0);
    ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "writing the identity");
    PQclear(r);
    if (err)
        ldpb_detailf(errmsg, errcap, "%s", s->errmsg);
    return err;
}

static const agg_state_id_rows pg_id_rows = {pg_id_read, pg_id_insert, "the PostgreSQL database",
                                             "was it restored from an older backup, or replaced?"};

/* Connects to `url`; LDPB_EINVAL (the configured store cannot be reached or logged into) with
 * the server's reason. The password, if the URL has one, is never echoed. */
static PGconn *connect_url(const char *url, char *errmsg)
{
    PGconn *conn = PQconnectdb(url);
    if (PQstatus(conn) != CONNECTION_OK) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store cannot be reached: %s", why);
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

/* In the open transaction: the schema (created where missing), the meta, the identity. */
static ldpb_err settle(agg_store *s, const char *dir, const agg_store_meta *meta, char *errmsg)
{
    if (run(s, schema_sql, PGRES_COMMAND_OK, NULL, "creating the schema")) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    /* Tables of the same names but another shape are no store of this version. */
    if (prepare_all(s)) {
        say(errmsg,
            "the database holds tables that are not those of an ldpb-aggregator store of schema "
            "version %d (%s): use another database",
            AGG_STORE_SCHEMA_VERSION, s->errmsg);
        return LDPB_ESTATE;
    }
    ldpb_err err = agg_store_settle_meta(s, &pg_meta_reader, meta, errmsg);
    if (!err)
        err = agg_state_id_settle_rows(&pg_id_rows, s, dir, s->pending_meta == NULL,
                                       meta->new_state, &s->ident, errmsg, AGG_STORE_ERRMAX);
    return err;
}

static ldpb_err pg_open(agg_store *s, const char *url, const char *dir, const agg_store_meta *meta,
                        char *errmsg)
{
    pg_store *b = calloc(1, sizeof *b);
    if (!b)
        return LDPB_ENOMEM;
    s->be = b;
    b->url = strdup(url);
    if (!b->url)
        return LDPB_ENOMEM;
    b->conn = connect_url(url, errmsg);
    if (!b->conn)
        return LDPB_EINVAL;
    ldpb_err err = session_setup(s);
    if (err) {
        say(errmsg, "%s", s->errmsg);
        return err == LDPB_ESTATE ? LDPB_ESTATE : LDPB_EINVAL;
    }
    /* One transaction: a start that is refused leaves the database as it was. The advisory
     * lock, held already, keeps two first starts from racing on CREATE TABLE. */
    if (run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN")) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    err = settle(s, dir, meta, errmsg);
    if (err) {
        pg_rollback(s);
        return err;
    }
    if (run(s, "COMMIT", PGRES_COMMAND_OK, NULL, "COMMIT")) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    /* After the COMMIT: a marker without its database would read as a lost database. */
    err = agg_state_id_record(dir, &s->ident, errmsg, AGG_STORE_ERRMAX);
    if (err)
        return err;
    int64_t rows = query_count(s, "SELECT count(*) FROM decisions", "counting decisions");
    int64_t gen = rows < 0 ? -1 : read_generation(s);
    if (rows < 0 || gen < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    s->decision_rows = (uint64_t)rows;
    b->generation = b->pending_generation = (uint64_t)gen;
    return LDPB_OK;
}

static void pg_close(agg_store *s)
{
    pg_store *b = BE(s);
    if (!b)
        return;
    /* Released here, not by the session's end, which the server sees only a moment after the
     * socket closes: a restart right after finds the lock free. */
    if (PQstatus(b->conn) == CONNECTION_OK && PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        PQclear(PQexec(b->conn, "SELECT pg_advisory_unlock_all()"));
    PQfinish(b->conn);
    free(b->url);
    free(b);
    s->be = NULL;
}

/* ---- export and backup ----------------------------------------------------------------------- */

/* A PostgreSQL double as the SQLite backend writes it (%.17g), so both export the same text. */
static void csv_field(FILE *out, const PGresult *r, int row, int col, int is_real)
{
    if (PQgetisnull(r, row, col))
        return;
    const char *t = PQgetvalue(r, row, col);
    if (is_real)
        fprintf(out, "%.17g", strtod(t, NULL));
    else
        fputs(t, out);
}

static ldpb_err pg_export_csv(const char *url, const char *dir, FILE *out, char *errmsg)
{
    (void)dir;
    PGconn *conn = connect_url(url, errmsg);
    if (!conn)
        return LDPB_EIO;
    ldpb_err err = LDPB_EIO;
    /* One snapshot, never a write: the daemon may be running. */
    PGresult *r = PQexec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    r = NULL;
    if (ok)
        r = PQexec(conn,
                   "SELECT encode(d.assignment_id, 'hex'), d.arm, d.propensity, d.policy_version,"
                   " d.mechanism, d.epsilon, r.value, d.issued_at_ms, d.expires_at_ms,"
                   " r.reported_at_ms"
                   " FROM decisions d LEFT JOIN reports r ON r.assignment_id = d.assignment_id"
                   " UNION ALL "
                   "SELECT encode(r.assignment_id, 'hex'), r.arm, r.propensity,"
                   " r.policy_version, r.mechanism, r.epsilon, r.value, NULL, r.expires_at_ms,"
                   " r.reported_at_ms FROM reports r WHERE NOT EXISTS (SELECT 1 FROM decisions d"
                   " WHERE d.assignment_id = r.assignment_id)"
                   " ORDER BY 9, 1");
    if (!ok || PQresultStatus(r) != PGRES_TUPLES_OK) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store: not an ldpb-aggregator state: %s", why);
        err = LDPB_ECORRUPT;
        goto done;
    }
    fputs("assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,issued_at_ms,"
          "expires_at_ms,reported_at_ms\n",
          out);
    for (int i = 0; i < PQntuples(r); i++) {
        fprintf(out, "%s,%s,%.17g,%s,%s,%.17g,", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                strtod(PQgetvalue(r, i, 2), NULL), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
                strtod(PQgetvalue(r, i, 5), NULL));
        csv_field(out, r, i, 6, 1);
        fputc(',', out);
        csv_field(out, r, i, 7, 0);
        fputc(',', out);
        csv_field(out, r, i, 8, 0);
        fputc(',', out);
        csv_field(out, r, i, 9, 0);
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out)) {
        say(errmsg, "writing the CSV failed: %s", strerror(errno));
        goto done;
    }
    err = LDPB_OK;
done:
    PQclear(r);
    PQfinish(conn);
    return err;
}

const agg_store_ops agg_store_pg_ops = {
    .scheme = "postgresql",
    .alias = "postgres",
    .open = pg_open,
    .close = pg_close,
    .load = pg_load,
    .begin = pg_begin,
    .write_meta = pg_write_meta,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .add_report = pg_add_report,
    .has_report = pg_has_report,
    .remove_report = pg_remove_report,
    .add_decision = pg_add_decision,
    .prune_expired = pg_prune_expired,
    .prune_oldest = pg_prune_oldest,
    .put_state = pg_put_state,
    .arm_counts = pg_arm_counts,
    .export_csv = pg_export_csv,
    /* PostgreSQL's tools do this better than a copy by us could: pg_dump takes a consistent
     * snapshot beside the running daemon, base backups with WAL archiving give point-in-time
     * recovery. */
    .backup = NULL,
    .no_backup = "--backup copies the SQLite store only; back a PostgreSQL store up with "
                 "PostgreSQL's tools: pg_dump --format=custom (a consistent snapshot beside the "
                 "running daemon), or base backups with WAL archiving (docs/aggregator.md, \"The "
                 "store: SQLite or PostgreSQL\")",
};
