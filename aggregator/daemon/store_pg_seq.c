/* The PostgreSQL side of sequenced experiments (store_seq.h): the sequencer lock, the fencing
 * version and the rows other nodes leave unobserved. Statements are sent unprepared
 * (PQexecParams): they run a few times a second, and survive a reconnect without re-preparing. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg_seq.h"
#include "store_seq.h"

#define say agg_store_say

static ldpb_err seq_fail(agg_store *s, const char *what)
{
    PGconn *c = agg_pg_conn(s);
    char why[AGG_STORE_ERRMAX];
    snprintf(why, sizeof why, "%s", c ? PQerrorMessage(c) : "no connection");
    size_t n = strlen(why);
    while (n > 0 && (why[n - 1] == '\n' || why[n - 1] == ' '))
        why[--n] = '\0';
    say(s->errmsg, "%s: %s", what, why[0] ? why : "the database connection is lost");
    return LDPB_EIO;
}

static PGresult *exec_params(agg_store *s, const char *sql, int n, const char *const *v,
                             const int *len, const int *fmt)
{
    return PQexecParams(agg_pg_conn(s), sql, n, NULL, v, len, fmt, 0);
}

static int column_exists(agg_store *s, const char *table, const char *column)
{
    const char *v[2] = {table, column};
    PGresult *r = exec_params(s,
                              "SELECT 1 FROM information_schema.columns WHERE table_schema ="
                              " current_schema() AND table_name = $1 AND column_name = $2",
                              2, v, NULL, NULL);
    int out = PQresultStatus(r) != PGRES_TUPLES_OK ? -1 : PQntuples(r) > 0;
    PQclear(r);
    return out;
}

ldpb_err agg_pg_seq_schema(agg_store *s)
{
    /* Checked first: ALTER TABLE takes the table's exclusive lock even when it adds nothing, which
     * would make every node's start wait on the others' transactions. */
    static const struct {
        const char *table, *column, *sql;
    } cols[] = {
        {"experiments", "seq_epoch",
         "ALTER TABLE experiments ADD COLUMN seq_epoch BIGINT NOT NULL DEFAULT 0"},
        {"reports", "observed",
         "ALTER TABLE reports ADD COLUMN observed BOOLEAN NOT NULL DEFAULT TRUE"},
        {"reports", "seq", "ALTER TABLE reports ADD COLUMN seq BIGSERIAL"},
        {"reports", "context", "ALTER TABLE reports ADD COLUMN context BYTEA"},
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        int have = column_exists(s, cols[i].table, cols[i].column);
        if (have < 0)
            return seq_fail(s, "reading the columns of sequenced experiments");
        if (have)
            continue;
        PGresult *r = PQexec(agg_pg_conn(s), cols[i].sql);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
            return seq_fail(s, "adding the columns of sequenced experiments");
    }
    /* Checked first too: CREATE INDEX IF NOT EXISTS takes a SHARE lock on `reports` before it
     * finds the index there, so a node starting beside nodes under load waited on their batches
     * while holding its open's locks (store_pg.c, pg_create, saw that end in a deadlock). */
    PGresult *r = PQexec(agg_pg_conn(s), "SELECT to_regclass('reports_unobserved') IS NULL");
    int missing = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                      ? strcmp(PQgetvalue(r, 0, 0), "t") == 0
                      : -1;
    PQclear(r);
    if (missing < 0)
        return seq_fail(s, "reading the index of unobserved reports");
    if (!missing)
        return LDPB_OK;
    r = PQexec(agg_pg_conn(s), "CREATE INDEX IF NOT EXISTS reports_unobserved"
                               " ON reports(experiment, seq) WHERE NOT observed");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? LDPB_OK : seq_fail(s, "creating the index of unobserved reports");
}

/* An int8 text field; -1 if it is not one. */
static int field_i64(const PGresult *r, int row, int col, int64_t *v)
{
    if (PQgetisnull(r, row, col))
        return -1;
    const char *t = PQgetvalue(r, row, col);
    char *end;
    long long x = strtoll(t, &end, 10);
    if (end == t || *end)
        return -1;
    *v = x;
    return 0;
}

static int field_double(const PGresult *r, int row, int col, double *v)
{
    if (PQgetisnull(r, row, col))
        return -1;
    const char *t = PQgetvalue(r, row, col);
    char *end;
    *v = strtod(t, &end);
    return end == t || *end ? -1 : 0;
}

/* Columns: epoch, updated_at_ms, policy_version, reports, duplicates, assignments, state (binary
 * results are not asked for: the state is read as bytea's hex text). */
#define ROW_COLUMNS "seq_epoch, updated_at_ms, policy_version, reports, duplicates, assignments"

static ldpb_err read_row(agg_store *s, const PGresult *r, int with_state, agg_store_seq_state *st)
{
    int64_t v[6];
    for (int i = 0; i < 6; i++)
        if (field_i64(r, 0, i, &v[i]) != 0 || (i >= 2 && v[i] < 0)) {
            say(s->errmsg, "an experiment row with a bad counter (column %d)", i);
            return LDPB_ECORRUPT;
        }
    st->epoch = v[0];
    st->updated_at_ms = v[1];
    st->c.policy_version = (uint64_t)v[2];
    st->c.reports = (uint64_t)v[3];
    st->c.duplicates = (uint64_t)v[4];
    st->c.assignments = (uint64_t)v[5];
    st->blob = NULL;
    st->len = 0;
    if (!with_state || PQgetisnull(r, 0, 6))
        return LDPB_OK;
    size_t len = 0;
    unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 6), &len);
    if (!raw)
        return LDPB_ENOMEM;
    if (len > 0) {
        st->blob = malloc(len);
        if (!st->blob) {
            PQfreemem(raw);
            return LDPB_ENOMEM;
        }
        memcpy(st->blob, raw, len);
        st->len = len;
    }
    PQfreemem(raw);
    return LDPB_OK;
}

static int exp_key(agg_store *s, int64_t exp, char *buf, size_t cap)
{
    if (exp <= 0 || exp > INT32_MAX) {
        say(s->errmsg, "experiment id %" PRId64 " is outside the sequencer locks' key range", exp);
        return -1;
    }
    snprintf(buf, cap, "%" PRId64, exp);
    return 0;
}

static ldpb_err pg_seq_acquire(agg_store *s, int64_t exp, int *got, agg_store_seq_state *st)
{
    *got = 0;
    char id[24];
    if (exp_key(s, exp, id, sizeof id))
        return LDPB_EINVAL;
    /* agg_store_begin: takes a lost connection up again (store_pg.c), and writes the row of a
     * `default` new to the state, whose epoch this transaction then bumps */
    ldpb_err err = agg_store_begin(s);
    if (err)
        return err;
    const char *v[1] = {id};
    PGresult *r = exec_params(s,
                              "SELECT pg_try_advisory_lock("
                              "1818522481"
                              ", $1::int)",
                              1, v, NULL, NULL);
    int held = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
               strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    err = PQresultStatus(r) == PGRES_TUPLES_OK ? LDPB_OK : seq_fail(s, "taking a sequencer lock");
    PQclear(r);
    if (err || !held) {
        agg_store_rollback(s);
        return err;
    }
    /* The bump waits for a transaction of the previous sequencer still holding the row, then
     * returns the state that transaction committed: the new sequencer continues from there. */
    /* The row becomes this node's too (experiments.node): its state is the sequencer's to write
     * (store_pg.c's put_state writes only a row that is this node's). */
    const char *vn[2] = {id, agg_store_node_name(s)};
    r = exec_params(s,
                    "UPDATE experiments SET seq_epoch = seq_epoch + 1, node = $2 WHERE id ="
                    " $1::bigint RETURNING " ROW_COLUMNS ", state",
                    2, vn, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        err = PQresultStatus(r) == PGRES_TUPLES_OK ? LDPB_ENOEXPERIMENT
                                                   : seq_fail(s, "bumping the fencing version");
        if (err == LDPB_ENOEXPERIMENT)
            say(s->errmsg, "no experiment with id %s", id);
    } else {
        err = read_row(s, r, 1, st);
    }
    PQclear(r);
    if (!err)
        err = agg_store_commit(s);
    if (err) {
        agg_store_rollback(s);
        free(st->blob);
        st->blob = NULL;
        agg_store_seq_release(s, exp);
        return err;
    }
    *got = 1;
    return LDPB_OK;
}

static void pg_seq_release(agg_store *s, int64_t exp)
{
    char id[24];
    if (exp_key(s, exp, id, sizeof id) || PQstatus(agg_pg_conn(s)) != CONNECTION_OK)
        return;
    const char *v[1] = {id};
    /* Session locks count how often they were taken: released until none is held. Asked
     * through pg_locks, so a lock this session lost with its connection draws no warning. */
    for (int i = 0; i < 16; i++) {
        PGresult *r = exec_params(s,
                                  "SELECT pg_advisory_unlock(1818522481, $1::int) FROM pg_locks"
                                  " WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
                                  " AND classid = 1818522481 AND objid = $1::int"
                                  " AND objsubid = 2 AND granted",
                                  1, v, NULL, NULL);
        int more = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                   strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        if (!more)
            break;
    }
}

static ldpb_err pg_seq_fence(agg_store *s, int64_t exp, int64_t epoch, int *held)
{
    *held = 0;
    char id[24], ep[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    snprintf(ep, sizeof ep, "%" PRId64, epoch);
    const char *v[2] = {id, ep};
    /* A row lock, and the check under it (re-checked on the newest row version when it had to
     * wait): a bump by a new sequencer waits for this COMMIT. A lock, not an UPDATE, so the
     * check writes no row version. */
    PGresult *r = exec_params(s,
                              "SELECT 1 FROM experiments WHERE id = $1::bigint"
                              " AND seq_epoch = $2::bigint FOR NO KEY UPDATE",
                              2, v, NULL, NULL);
    ldpb_err err =
        PQresultStatus(r) == PGRES_TUPLES_OK ? LDPB_OK : seq_fail(s, "checking the fence");
    *held = !err && PQntuples(r) == 1;
    PQclear(r);
    if (!err && !*held)
        say(s->errmsg,
            "experiment %s: fenced out (its seq_epoch is no longer %s: another node took over as "
            "its sequencer)",
            id, ep);
    return err;
}

static ldpb_err pg_seq_defer(agg_store *s, const uint8_t *id, size_t id_len, const double *x,
                             size_t nx)
{
    const char *v[2] = {(const char *)id, (const char *)x};
    int len[2] = {(int)id_len, x ? (int)(nx * sizeof *x) : 0}, fmt[2] = {1, 1};
    PGresult *r = exec_params(s,
                              "UPDATE reports SET observed = FALSE, context = $2"
                              " WHERE assignment_id = $1",
                              2, v, len, fmt);
    ldpb_err err = PQresultStatus(r) == PGRES_COMMAND_OK
                       ? LDPB_OK
                       : seq_fail(s, "leaving a report to the sequencer");
    if (!err && strcmp(PQcmdTuples(r), "1") != 0) {
        say(s->errmsg, "leaving a report to the sequencer: its row is not there");
        err = LDPB_EIO;
    }
    PQclear(r);
    return err;
}

void agg_store_seq_pending_free(agg_store_pending *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].x);
    free(v);
}

static ldpb_err read_pending(agg_store *s, const PGresult *r, int i, agg_store_pending *p)
{
    int64_t seq = 0, arm = 0;
    if (field_i64(r, i, 0, &seq) || field_i64(r, i, 1, &arm) || arm < 0 || arm > UINT32_MAX ||
        field_double(r, i, 2, &p->value) || field_double(r, i, 3, &p->propensity)) {
        say(s->errmsg, "an unobserved report with a bad field");
        return LDPB_ECORRUPT;
    }
    p->seq = seq;
    p->arm = (uint32_t)arm;
    if (PQgetisnull(r, i, 4))
        return LDPB_OK;
    size_t len = 0;
    unsigned char *raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 4), &len);
    if (!raw)
        return LDPB_ENOMEM;
    if (len % sizeof(double)) {
        PQfreemem(raw);
        say(s->errmsg, "an unobserved report whose features are not whole doubles");
        return LDPB_ECORRUPT;
    }
    p->nx = len / sizeof(double);
    p->x = malloc(len ? len : 1);
    if (p->x)
        memcpy(p->x, raw, len);
    PQfreemem(raw);
    return p->x ? LDPB_OK : LDPB_ENOMEM;
}

static ldpb_err pg_seq_pending(agg_store *s, int64_t exp, size_t max, agg_store_pending **out,
                               size_t *n)
{
    *out = NULL;
    *n = 0;
    char id[24], lim[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    snprintf(lim, sizeof lim, "%zu", max);
    const char *v[2] = {id, lim};
    PGresult *r = exec_params(s,
                              "SELECT seq, arm, value, propensity, context FROM reports"
                              " WHERE experiment = $1::bigint AND NOT observed"
                              " ORDER BY seq LIMIT $2::bigint",
                              2, v, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return seq_fail(s, "reading unobserved reports");
    }
    int rows = PQntuples(r);
    ldpb_err err = LDPB_OK;
    if (rows > 0) {
        *out = calloc((size_t)rows, sizeof **out);
        if (!*out)
            err = LDPB_ENOMEM;
    }
    for (int i = 0; i < rows && !err; i++) {
        err = read_pending(s, r, i, &(*out)[i]);
        (*n)++;
    }
    PQclear(r);
    if (err) {
        agg_store_seq_pending_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return err;
}

static ldpb_err pg_seq_mark(agg_store *s, int64_t exp, const agg_store_pending *v, size_t n)
{
    if (n == 0)
        return LDPB_OK;
    /* '{1,2,...}': one statement for the round */
    size_t cap = n * 21 + 3;
    char *arr = malloc(cap);
    if (!arr)
        return LDPB_ENOMEM;
    size_t at = 0;
    arr[at++] = '{';
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(arr + at, cap - at, "%s%" PRId64, i ? "," : "", v[i].seq);
    snprintf(arr + at, cap - at, "}");
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    const char *p[2] = {id, arr};
    PGresult *r = exec_params(s,
                              "UPDATE reports SET observed = TRUE, context = NULL"
                              " WHERE experiment = $1::bigint AND NOT observed"
                              " AND seq = ANY($2::bigint[])",
                              2, p, NULL, NULL);
    free(arr);
    ldpb_err err =
        PQresultStatus(r) == PGRES_COMMAND_OK ? LDPB_OK : seq_fail(s, "marking reports observed");
    if (!err && strtoull(PQcmdTuples(r), NULL, 10) != n) {
        say(s->errmsg, "marking %zu reports observed: only %s were still unobserved", n,
            PQcmdTuples(r));
        err = LDPB_ECORRUPT;
    }
    PQclear(r);
    return err;
}

static ldpb_err pg_seq_read(agg_store *s, int64_t exp, uint64_t have_version,
                            agg_store_seq_state *st)
{
    char id[24], ver[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    snprintf(ver, sizeof ver, "%" PRIu64,
             have_version > INT64_MAX ? (uint64_t)INT64_MAX : have_version);
    ldpb_err err = agg_store_begin(s);
    if (err)
        return err;
    const char *v[2] = {id, ver};
    PGresult *r = exec_params(s,
                              "SELECT " ROW_COLUMNS ", CASE WHEN policy_version <> $2::bigint"
                              " THEN state END FROM experiments WHERE id = $1::bigint",
                              2, v, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        err = seq_fail(s, "reading a sequenced experiment's state");
    else if (PQntuples(r) != 1) {
        say(s->errmsg, "no experiment with id %s", id);
        err = LDPB_ENOEXPERIMENT;
    } else
        err = read_row(s, r, 1, st);
    PQclear(r);
    if (!err)
        err = agg_store_commit(s);
    if (err) {
        agg_store_rollback(s);
        free(st->blob);
        st->blob = NULL;
    }
    return err;
}

static ldpb_err pg_seq_waiting(agg_store *s, int64_t *ids, size_t max, size_t *n)
{
    *n = 0;
    char lim[24];
    snprintf(lim, sizeof lim, "%zu", max);
    ldpb_err err = agg_store_begin(s);
    if (err)
        return err;
    const char *v[1] = {lim};
    PGresult *r = exec_params(s,
                              "SELECT DISTINCT experiment FROM reports WHERE NOT observed"
                              " ORDER BY experiment LIMIT $1::bigint",
                              1, v, NULL, NULL);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        err = seq_fail(s, "looking for unobserved reports");
    for (int i = 0; !err && i < PQntuples(r) && *n < max; i++)
        if (field_i64(r, i, 0, &ids[*n]) == 0)
            (*n)++;
    PQclear(r);
    agg_store_rollback(s); /* read only */
    return err;
}

const agg_store_seq_ops agg_store_pg_seq_ops = {
    .acquire = pg_seq_acquire,
    .release = pg_seq_release,
    .fence = pg_seq_fence,
    .defer = pg_seq_defer,
    .pending = pg_seq_pending,
    .mark = pg_seq_mark,
    .read = pg_seq_read,
    .waiting = pg_seq_waiting,
};

/* ---- the seam: a backend without these operations is a sole node ------------------------- */

int agg_store_seq_shared(const agg_store *s)
{
    return s->ops->seq != NULL;
}

ldpb_err agg_store_seq_acquire(agg_store *s, int64_t exp, int *got, agg_store_seq_state *st)
{
    memset(st, 0, sizeof *st);
    if (!s->ops->seq) {
        *got = 1;
        return LDPB_OK;
    }
    return s->ops->seq->acquire(s, exp, got, st);
}

void agg_store_seq_release(agg_store *s, int64_t exp)
{
    if (s->ops->seq)
        s->ops->seq->release(s, exp);
}

ldpb_err agg_store_seq_fence(agg_store *s, int64_t exp, int64_t epoch, int *held)
{
    *held = 1;
    return s->ops->seq ? s->ops->seq->fence(s, exp, epoch, held) : LDPB_OK;
}

ldpb_err agg_store_seq_defer(agg_store *s, const uint8_t *id, size_t id_len, const double *x,
                             size_t nx)
{
    if (!s->ops->seq) {
        say(s->errmsg, "a sole node is the sequencer of every experiment: nothing to defer");
        return LDPB_EINVAL;
    }
    return s->ops->seq->defer(s, id, id_len, x, nx);
}

ldpb_err agg_store_seq_pending(agg_store *s, int64_t exp, size_t max, agg_store_pending **out,
                               size_t *n)
{
    *out = NULL;
    *n = 0;
    return s->ops->seq ? s->ops->seq->pending(s, exp, max, out, n) : LDPB_OK;
}

ldpb_err agg_store_seq_mark(agg_store *s, int64_t exp, const agg_store_pending *v, size_t n)
{
    return s->ops->seq ? s->ops->seq->mark(s, exp, v, n) : LDPB_OK;
}

ldpb_err agg_store_seq_waiting(agg_store *s, int64_t *ids, size_t max, size_t *n)
{
    *n = 0;
    return s->ops->seq ? s->ops->seq->waiting(s, ids, max, n) : LDPB_OK;
}

ldpb_err agg_store_seq_read(agg_store *s, int64_t exp, uint64_t have_version,
                            agg_store_seq_state *st)
{
    memset(st, 0, sizeof *st);
    if (!s->ops->seq) {
        say(s->errmsg, "a sole node serves its own state");
        return LDPB_EINVAL;
    }
    return s->ops->seq->read(s, exp, have_version, st);
}
