/* End-to-end tests of the one-round-trip request (report_and_assign) and report batches against
 * the real ldpb-aggregator: old and new clients side by side on one daemon; a batch whose reports
 * are answered each on its own (fresh, duplicate, unknown, invalid); kill -9 under batched load
 * loses no acknowledged report and counts none twice; the client's on-disk report queue survives
 * a restart of the client and flushes the values the ledger holds, never new draws. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <nanomsg/nn.h>
#include <sqlite3.h>

#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/err.h"

#define K 3

static const char conf[] = "arms = 3\n"
                           "policy = ldp-ts-b\n"
                           "mechanism = linear\n"
                           "epsilon = 1\n"
                           "assignment_ttl_s = 60\n"
                           "log_level = warn\n";

/* The pipeline's threads beyond the defaults (docs/aggregator.md, "The pipeline"): four workers
 * over the harness's two listen URLs (ipc and tcp: two listeners, two workers each) and two
 * repliers sealing and sending the answers of committed reports. */
static const char pipeline[] = "workers = 4\n"
                               "repliers = 2\n";

static void start_with(dt_daemon *d, const char *extra)
{
    char c[512];
    snprintf(c, sizeof c, "%s%s", conf, extra);
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, c), 0);
    assert_int_equal(dt_daemon_start(d, NULL, NULL), 0);
}

static void start(dt_daemon *d)
{
    start_with(d, "");
}

static void stop(dt_daemon *d)
{
    assert_int_equal(dt_daemon_signal_wait(d, SIGTERM), 0);
    dt_daemon_cleanup(d);
}

/* The databases holding report rows: aggregator.db (i = 0), then the row shards
 * aggregator-rows-<i - 1>.db (row_shards); 0 past the last. */
static int rows_db(const dt_daemon *d, int i, char *path, size_t cap)
{
    if (i == 0)
        snprintf(path, cap, "%s/aggregator.db", d->state_dir);
    else
        snprintf(path, cap, "%s/aggregator-rows-%d.db", d->state_dir, i - 1);
    return access(path, F_OK) == 0;
}

/* Counted reports per arm in the daemon's database (and its row shards), and their sum. */
static uint64_t db_counts(const dt_daemon *d, uint64_t *counts)
{
    char path[256];
    memset(counts, 0, K * sizeof *counts);
    uint64_t sum = 0;
    for (int i = 0; rows_db(d, i, path, sizeof path); i++) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(
            sqlite3_prepare_v2(db, "SELECT arm, count(*) FROM reports GROUP BY arm", -1, &st, NULL),
            SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t arm = sqlite3_column_int64(st, 0);
            assert_true(arm >= 0 && arm < K);
            counts[arm] += (uint64_t)sqlite3_column_int64(st, 1);
            sum += (uint64_t)sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    return sum;
}

/* The stored value of one report, or -1 if none. */
static double db_value(const dt_daemon *d, const uint8_t *id, size_t id_len)
{
    char path[256];
    double v = -1.0;
    for (int i = 0; v < 0 && rows_db(d, i, path, sizeof path); i++) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM reports WHERE assignment_id = ?",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_blob(st, 1, id, (int)id_len, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    return v;
}

typedef struct rec {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    uint32_t bit;
} rec;

static int assign_rec(dt_client *c, rec *r)
{
    int mech;
    double eps;
    return dt_assign(c, &r->arm, &mech, &eps, r->id, &r->id_len);
}

/* Sends a batch of the reports `recs[0..n)` (LINEAR, epsilon 1, their bits). */
static int send_batch(dt_client *c, const rec *recs, size_t n, dt_reply *out)
{
    Ldpb__V1__Report *reps = calloc(n, sizeof *reps);
    Ldpb__V1__Report **ptrs = calloc(n, sizeof *ptrs);
    assert_non_null(reps);
    assert_non_null(ptrs);
    for (size_t i = 0; i < n; i++) {
        Ldpb__V1__Report init = LDPB__V1__REPORT__INIT;
        reps[i] = init;
        reps[i].assignment_id.data = (uint8_t *)recs[i].id;
        reps[i].assignment_id.len = recs[i].id_len;
        reps[i].mechanism = LDPB__V1__MECHANISM__LINEAR;
        reps[i].epsilon = 1.0;
        reps[i].value_case = LDPB__V1__REPORT__VALUE_BIT;
        reps[i].bit = recs[i].bit;
        ptrs[i] = &reps[i];
    }
    Ldpb__V1__ReportBatch b = LDPB__V1__REPORT_BATCH__INIT;
    b.n_reports = n;
    b.reports = ptrs;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    env.report_batch = &b;
    int rc = dt_client_call(c, &env, out);
    free(reps);
    free(ptrs);
    return rc;
}

static const Ldpb__V1__BatchAck *batch_ack(const dt_reply *r, size_t n)
{
    assert_int_equal(r->kind, 1);
    assert_int_equal(r->env->body_case, LDPB__V1__ENVELOPE__BODY_BATCH_ACK);
    assert_int_equal(r->env->batch_ack->n_results, n);
    return r->env->batch_ack;
}

static uint32_t code_of(const Ldpb__V1__ReportResult *r)
{
    return r->has_code ? r->code : 0;
}

static int dup_of(const Ldpb__V1__ReportResult *r)
{
    return r->has_duplicate && r->duplicate;
}

static uint64_t reports_counted(dt_daemon *d)
{
    dt_client c;
    assert_int_equal(dt_client_open(&c, d->ipc_url, d->server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0;
    assert_int_equal(dt_status(&c, pulls, K, &reports), K);
    dt_client_close(&c);
    return reports;
}

/* v1 clients (assign, then report) and clients of one round trip per report, interleaved on
 * one daemon: every report counted once, every reply of the kind its request asks for. */
static void test_mixed_old_and_new_clients(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d);
    ldpb_client *old_c = NULL, *new_c = NULL;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d.ipc_url;
    memcpy(o.server_public_key, d.server.pk, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_client_new(&old_c, &o), LDPB_OK);
    o.server_url = d.tcp_url;
    assert_int_equal(ldpb_client_new(&new_c, &o), LDPB_OK);
    dt_client raw;
    assert_int_equal(dt_client_open(&raw, d.ipc_url, d.server.pk, 5000), 0);

    enum { ROUNDS = 20 };
    ldpb_assignment a_new, next;
    assert_int_equal(ldpb_client_assign(new_c, NULL, 0, &a_new), LDPB_OK);
    for (int i = 0; i < ROUNDS; i++) {
        ldpb_assignment a_old;
        assert_int_equal(ldpb_client_assign(old_c, NULL, 0, &a_old), LDPB_OK);
        int acked = 0;
        ldpb_err e = ldpb_client_report_and_assign(new_c, &a_new, 0.5, NULL, 0, &next, &acked);
        if (e)
            print_message("report_and_assign: %s\n", ldpb_client_errmsg(new_c));
        assert_int_equal(e, LDPB_OK);
        assert_int_equal(acked, 1);
        assert_true(next.arm < K);
        assert_true(next.id_len > 0 && memcmp(next.id, a_new.id, next.id_len) != 0);
        assert_int_equal(ldpb_client_report(old_c, &a_old, 0.5), LDPB_OK);
        a_new = next;
    }
    /* A resent report_and_assign: the report is a duplicate, a new assignment comes all the
     * same (the same value, from the ledger). */
    ldpb_assignment prev = a_new;
    assert_int_equal(ldpb_client_report_and_assign(new_c, &prev, 0.5, NULL, 0, &next, NULL),
                     LDPB_OK);
    ldpb_assignment again;
    assert_int_equal(ldpb_client_report_and_assign(new_c, &prev, 0.5, NULL, 0, &again, NULL),
                     LDPB_OK);
    assert_true(memcmp(again.id, next.id, next.id_len) != 0);
    /* On the wire: the new reply carries the duplicate flag. */
    rec r;
    assert_int_equal(assign_rec(&raw, &r), 0);
    for (int pass = 0; pass < 2; pass++) {
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        rep.assignment_id.data = r.id;
        rep.assignment_id.len = r.id_len;
        rep.mechanism = LDPB__V1__MECHANISM__LINEAR;
        rep.epsilon = 1.0;
        rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
        rep.bit = 1;
        Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
        Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
        ra.report = &rep;
        ra.next = &ar;
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
        env.report_and_assign = &ra;
        dt_reply rep_out;
        assert_int_equal(dt_client_call(&raw, &env, &rep_out), 0);
        assert_int_equal(rep_out.kind, 1);
        assert_int_equal(rep_out.env->body_case, LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT);
        const Ldpb__V1__AckAndAssignment *aa = rep_out.env->ack_and_assignment;
        assert_memory_equal(aa->ack->assignment_id.data, r.id, r.id_len);
        assert_int_equal(aa->ack->duplicate, pass == 1);
        assert_int_equal(aa->next_case, LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT);
        assert_true(aa->assignment->arm < K);
        dt_reply_clear(&rep_out);
    }
    /* An unknown id gets the Error a Report would, and no assignment. */
    {
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        uint8_t bogus[16] = {1, 2, 3};
        rep.assignment_id.data = bogus;
        rep.assignment_id.len = sizeof bogus;
        rep.mechanism = LDPB__V1__MECHANISM__LINEAR;
        rep.epsilon = 1.0;
        rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
        Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
        Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
        ra.report = &rep;
        ra.next = &ar;
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
        env.report_and_assign = &ra;
        dt_reply rep_out;
        assert_int_equal(dt_client_call(&raw, &env, &rep_out), 0);
        assert_true(dt_is_error(&rep_out, 1, LDPB_ENOTFOUND));
        dt_reply_clear(&rep_out);
    }
    dt_client_close(&raw);
    ldpb_client_free(old_c);
    ldpb_client_free(new_c);
    /* ROUNDS from each client, the two report_and_assign above (one a duplicate: + 1), the
     * raw pair (+ 1). */
    uint64_t counts[K];
    assert_int_equal(reports_counted(&d), 2 * ROUNDS + 1 + 1);
    assert_int_equal(db_counts(&d, counts), 2 * ROUNDS + 1 + 1);
    stop(&d);
}

/* One batch: fresh reports, one already counted, one twice in the batch, an unknown id, an
 * epsilon above the assignment's, another mechanism. Each gets its own result; only the fresh
 * ones (and the first of the pair) are counted. */
static void test_batch_results_each_their_own(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    enum { FRESH = 5 };
    rec recs[FRESH + 1];
    for (int i = 0; i <= FRESH; i++) {
        assert_int_equal(assign_rec(&c, &recs[i]), 0);
        recs[i].bit = (uint32_t)(i & 1);
    }
    /* recs[FRESH] is counted before the batch */
    dt_reply r;
    assert_int_equal(dt_report(&c, recs[FRESH].id, recs[FRESH].id_len, LDPB__V1__MECHANISM__LINEAR,
                               1.0, 1, 0, 0, &r),
                     0);
    int dup = -1;
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
    uint64_t before = reports_counted(&d);

    rec b[FRESH + 4];
    memcpy(b, recs, FRESH * sizeof *b); /* 0..4 fresh */
    b[FRESH] = recs[FRESH];             /* 5: already counted */
    b[FRESH + 1] = recs[0];             /* 6: the same as 0, in the same batch */
    memset(&b[FRESH + 2], 0, sizeof b[0]);
    b[FRESH + 2].id_len = 16; /* 7: never issued */
    memset(b[FRESH + 2].id, 0xab, 16);
    b[FRESH + 3] = recs[1]; /* 8: sent with another epsilon, below */
    size_t n = FRESH + 4;
    Ldpb__V1__Report *reps = calloc(n, sizeof *reps);
    Ldpb__V1__Report **ptrs = calloc(n, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        Ldpb__V1__Report init = LDPB__V1__REPORT__INIT;
        reps[i] = init;
        reps[i].assignment_id.data = b[i].id;
        reps[i].assignment_id.len = b[i].id_len;
        reps[i].mechanism = LDPB__V1__MECHANISM__LINEAR;
        reps[i].epsilon = 1.0;
        reps[i].value_case = LDPB__V1__REPORT__VALUE_BIT;
        reps[i].bit = b[i].bit;
        ptrs[i] = &reps[i];
    }
    reps[FRESH + 3].epsilon = 2.0; /* above the assignment's: LDPB_ERANGE */
    /* and one more: the first fresh report's twin with another mechanism would be a
     * duplicate id; an EXPONENTIAL report for recs[2] instead: LDPB_EINVAL */
    Ldpb__V1__Report extra = reps[2];
    extra.mechanism = LDPB__V1__MECHANISM__EXPONENTIAL;
    Ldpb__V1__Report **ptrs2 = calloc(n + 1, sizeof *ptrs2);
    memcpy(ptrs2, ptrs, n * sizeof *ptrs);
    ptrs2[n] = &extra;
    Ldpb__V1__ReportBatch rb = LDPB__V1__REPORT_BATCH__INIT;
    rb.n_reports = n + 1;
    rb.reports = ptrs2;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    env.report_batch = &rb;
    assert_int_equal(dt_client_call(&c, &env, &r), 0);
    const Ldpb__V1__BatchAck *ba = batch_ack(&r, n + 1);
    for (size_t i = 0; i < n + 1; i++) {
        const Ldpb__V1__ReportResult *res = ba->results[i];
        const Ldpb__V1__Report *sent = ptrs2[i];
        assert_int_equal(res->assignment_id.len, sent->assignment_id.len);
        assert_memory_equal(res->assignment_id.data, sent->assignment_id.data,
                            sent->assignment_id.len);
    }
    for (int i = 0; i < FRESH; i++) {
        assert_int_equal(code_of(ba->results[i]), 0);
        assert_false(dup_of(ba->results[i]));
    }
    assert_int_equal(code_of(ba->results[FRESH]), 0);
    assert_true(dup_of(ba->results[FRESH]));
    assert_int_equal(code_of(ba->results[FRESH + 1]), 0);
    assert_true(dup_of(ba->results[FRESH + 1]));
    assert_int_equal(code_of(ba->results[FRESH + 2]), LDPB_ENOTFOUND);
    assert_int_equal(code_of(ba->results[FRESH + 3]), LDPB_ERANGE);
    assert_int_equal(code_of(ba->results[n]), LDPB_EINVAL);
    dt_reply_clear(&r);
    free(reps);
    free(ptrs);
    free(ptrs2);
    assert_int_equal(reports_counted(&d), before + FRESH);

    /* The batch limit: LDPB_WIRE_BATCH_MAX + 1 reports are refused as a whole. */
    size_t big = LDPB_WIRE_BATCH_MAX + 1;
    rec *many = calloc(big, sizeof *many);
    for (size_t i = 0; i < big; i++)
        many[i] = recs[0];
    assert_int_equal(send_batch(&c, many, big, &r), 0);
    assert_true(dt_is_error(&r, 1, LDPB_EPROTO));
    dt_reply_clear(&r);
    /* and exactly the limit is served */
    assert_int_equal(send_batch(&c, many, LDPB_WIRE_BATCH_MAX, &r), 0);
    ba = batch_ack(&r, LDPB_WIRE_BATCH_MAX);
    for (size_t i = 0; i < LDPB_WIRE_BATCH_MAX; i++)
        assert_true(dup_of(ba->results[i]));
    dt_reply_clear(&r);
    free(many);
    assert_int_equal(reports_counted(&d), before + FRESH);
    dt_client_close(&c);
    stop(&d);
}

/* The assignment ids (hex) of the reported rows of --export-csv, sorted; their number. */
static int hex_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t export_reported(const dt_daemon *d, char ***out)
{
    char path[256], err[512], line[1024];
    snprintf(path, sizeof path, "%s/export.csv", d->dir);
    unlink(path);
    const char *args[] = {"--config", d->conf, "--export-csv", path, NULL};
    int st = dt_daemon_run(d, args, err, sizeof err);
    if (st != 0)
        fail_msg("--export-csv exited %d: %s", st, err);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",value,"));
    size_t n = 0, cap = 1024;
    char **ids = malloc(cap * sizeof *ids);
    assert_non_null(ids);
    while (fgets(line, sizeof line, f)) {
        /* assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,... */
        char *p = line;
        for (int c = 0; c < 6 && p; c++)
            p = strchr(p + 1, ',');
        assert_non_null(p);
        if (p[1] == ',')
            continue; /* assigned, not reported */
        if (n == cap) {
            cap *= 2;
            ids = realloc(ids, cap * sizeof *ids);
            assert_non_null(ids);
        }
        ids[n++] = strndup(line, strcspn(line, ","));
    }
    fclose(f);
    qsort(ids, n, sizeof *ids, hex_cmp);
    *out = ids;
    return n;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

static int id_in(char **ids, size_t n, const rec *r)
{
    char hex[2 * LDPB_WIRE_ID_MAX + 1], *key = hex;
    for (size_t i = 0; i < r->id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", r->id[i]);
    return bsearch(&key, ids, n, sizeof *ids, hex_cmp) != NULL;
}

/* Batched load for kill -9: each thread takes BATCH assignments, reports them in one batch and
 * records each report's result, until a request fails (the daemon is gone). */
#define LOAD_THREADS 4
#define BATCH        16
#define LOAD_MAX     (BATCH * 400)

typedef struct load_rec {
    rec r;
    int reported;
    int acked;
} load_rec;

typedef struct load_arg {
    const dt_daemon *d;
    const char *url;
    load_rec *recs;
    size_t n;
} load_arg;

/* Reports acked so far by the load threads: the kill comes once the load is going. */
static atomic_size_t load_acked;

static void *load_main(void *p)
{
    load_arg *a = p;
    dt_client c;
    if (dt_client_open(&c, a->url, a->d->server.pk, 1000) != 0)
        return NULL;
    while (a->n + BATCH <= LOAD_MAX) {
        load_rec *lr = &a->recs[a->n];
        rec batch[BATCH];
        size_t got = 0;
        for (; got < BATCH; got++) {
            if (assign_rec(&c, &lr[got].r) != 0)
                break;
            lr[got].r.bit = lr[got].r.arm & 1;
            batch[got] = lr[got].r;
        }
        a->n += got;
        if (got < BATCH)
            break;
        for (size_t i = 0; i < BATCH; i++)
            lr[i].reported = 1;
        dt_reply rep;
        if (send_batch(&c, batch, BATCH, &rep) != 0)
            break;
        int ok = rep.kind == 1 && rep.env->body_case == LDPB__V1__ENVELOPE__BODY_BATCH_ACK &&
                 rep.env->batch_ack->n_results == BATCH;
        for (size_t i = 0; ok && i < BATCH; i++) {
            const Ldpb__V1__ReportResult *res = rep.env->batch_ack->results[i];
            lr[i].acked = code_of(res) == 0 && !dup_of(res);
            atomic_fetch_add(&load_acked, (size_t)lr[i].acked);
        }
        dt_reply_clear(&rep);
        if (!ok)
            break;
    }
    dt_client_close(&c);
    return NULL;
}

/* kill -9 under batched load from clients on both listen URLs, then a restart: every acked
 * report counted exactly once, the others at most once; resending everything then counts each
 * exactly once. `extra`: configuration lines beyond the test's. `exported`: --export-csv's
 * reported rows are then the counted ones, every acked report among them. */
static void kill9_batched_x(const char *extra, int exported)
{
    dt_daemon d;
    start_with(&d, extra);
    static load_rec recs[LOAD_THREADS][LOAD_MAX];
    memset(recs, 0, sizeof recs);
    load_arg args[LOAD_THREADS];
    pthread_t th[LOAD_THREADS];
    atomic_store(&load_acked, 0);
    for (int i = 0; i < LOAD_THREADS; i++) {
        args[i] = (load_arg){&d, i % 2 ? d.tcp_url : d.ipc_url, recs[i], 0};
        assert_int_equal(pthread_create(&th[i], NULL, load_main, &args[i]), 0);
    }
    /* at least the BATCH acks asserted below, whatever the machine's speed */
    ldpb_test_wait_count(&load_acked, 4 * BATCH, 800);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_join(th[i], NULL);
    size_t total = 0, acked = 0;
    for (int i = 0; i < LOAD_THREADS; i++)
        for (size_t j = 0; j < args[i].n; j++) {
            total += recs[i][j].reported;
            acked += recs[i][j].acked;
        }
    print_message("kill -9 after %zu batched reports sent, %zu acked\n", total, acked);
    assert_true(acked >= BATCH);

    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    uint64_t db[K];
    uint64_t reports = reports_counted(&d);
    assert_int_equal(db_counts(&d, db), reports);
    assert_true(reports >= acked && reports <= total);
    if (exported) {
        char path[256]; /* the rows are in the four shards, none in aggregator.db */
        assert_true(rows_db(&d, 4, path, sizeof path) && !rows_db(&d, 5, path, sizeof path));
        char **ids = NULL;
        size_t n = export_reported(&d, &ids);
        assert_int_equal(n, reports);
        for (int i = 0; i < LOAD_THREADS; i++)
            for (size_t j = 0; j < args[i].n; j++)
                if (recs[i][j].acked)
                    assert_true(id_in(ids, n, &recs[i][j].r));
        free_ids(ids, n);
    }

    /* Resend everything in batches: every acked report is a duplicate, and afterwards each
     * report sent is counted exactly once. */
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t expect[K] = {0};
    size_t dups_of_acked = 0;
    for (int i = 0; i < LOAD_THREADS; i++) {
        for (size_t j = 0; j < args[i].n; j += BATCH) {
            rec batch[BATCH];
            size_t m = 0;
            for (size_t k = j; k < args[i].n && k < j + BATCH; k++)
                if (recs[i][k].reported) {
                    batch[m++] = recs[i][k].r;
                    expect[recs[i][k].r.arm]++;
                }
            if (!m)
                continue;
            dt_reply rep;
            assert_int_equal(send_batch(&c, batch, m, &rep), 0);
            const Ldpb__V1__BatchAck *ba = batch_ack(&rep, m);
            size_t at = 0;
            for (size_t k = j; k < args[i].n && k < j + BATCH; k++) {
                if (!recs[i][k].reported)
                    continue;
                assert_int_equal(code_of(ba->results[at]), 0);
                if (recs[i][k].acked) {
                    assert_true(dup_of(ba->results[at]));
                    dups_of_acked++;
                }
                at++;
            }
            dt_reply_clear(&rep);
        }
    }
    assert_int_equal(dups_of_acked, acked);
    assert_int_equal(reports_counted(&d), total);
    assert_int_equal(db_counts(&d, db), total);
    for (int a = 0; a < K; a++)
        assert_int_equal(db[a], expect[a]);
    dt_client_close(&c);
    if (exported) {
        char **ids = NULL;
        size_t n = export_reported(&d, &ids);
        assert_int_equal(n, total);
        for (int i = 0; i < LOAD_THREADS; i++)
            for (size_t j = 0; j < args[i].n; j++)
                if (recs[i][j].reported)
                    assert_true(id_in(ids, n, &recs[i][j].r));
        free_ids(ids, n);
    }
    stop(&d);
}

static void kill9_batched(const char *extra)
{
    kill9_batched_x(extra, 0);
}

/* Reports that find no aggregator wait in the client's queue file; a new handle (the app
 * restarted) flushes them in batches once the aggregator is back. The values delivered are the
 * ledger's: the budget spent does not move and each stored value equals the ledger's. */
static void test_client_queue_survives_restart(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d);
    char ledger[300], queue[300];
    snprintf(ledger, sizeof ledger, "%s/device.ledger", d.dir);
    snprintf(queue, sizeof queue, "%s/device.queue", d.dir);
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d.ipc_url;
    memcpy(o.server_public_key, d.server.pk, LDPB_KEY_BYTES);
    o.ledger_path = ledger;
    o.queue_path = queue;
    o.timeout_ms = 300;
    o.max_attempts = 1;
    ldpb_client *c = NULL;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    enum { N = 40 };
    static ldpb_assignment as[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(ldpb_client_assign(c, NULL, 0, &as[i]), LDPB_OK);
    /* Half are queued on purpose (offline first), the rest find the aggregator gone. */
    for (int i = 0; i < N / 2; i++)
        assert_int_equal(ldpb_client_queue_report(c, &as[i], 0.75), LDPB_OK);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    for (int i = N / 2; i < N; i++)
        assert_int_equal(ldpb_client_report(c, &as[i], 0.75), LDPB_ETIMEDOUT);
    assert_int_equal(ldpb_client_queued(c), N);
    ldpb_flush_stats st;
    assert_int_equal(ldpb_client_flush(c, 8, &st), LDPB_ETIMEDOUT);
    assert_int_equal(st.left, N);
    double spent = ldpb_ledger_spent(ldpb_client_ledger(c));
    assert_true(spent == (double)N);
    ldpb_client_free(c);

    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    o.timeout_ms = 5000;
    o.max_attempts = 3;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    assert_int_equal(ldpb_client_queued(c), N);
    assert_int_equal(ldpb_client_flush(c, 8, &st), LDPB_OK);
    assert_int_equal(st.acked, N);
    assert_int_equal(st.duplicates + st.refused + st.left, 0);
    assert_int_equal(ldpb_client_queued(c), 0);
    assert_true(ldpb_ledger_spent(ldpb_client_ledger(c)) == spent);
    for (int i = 0; i < N; i++) {
        ldpb_ledger_entry e;
        assert_int_equal(ldpb_ledger_lookup(ldpb_client_ledger(c), as[i].id, as[i].id_len, &e),
                         LDPB_OK);
        assert_true(db_value(&d, as[i].id, as[i].id_len) == e.value);
    }
    ldpb_client_free(c);
    /* The emptied queue stays empty after a restart. */
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    assert_int_equal(ldpb_client_queued(c), 0);
    ldpb_client_free(c);
    assert_int_equal(reports_counted(&d), N);

    /* A damaged queue file is refused, not silently dropped. */
    FILE *f = fopen(queue, "r+b");
    assert_non_null(f);
    fputc('X', f);
    fclose(f);
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_ECORRUPT);
    stop(&d);
}

static void test_kill9_batched(void **state)
{
    (void)state;
    kill9_batched("");
}

static void test_kill9_batched_pipeline(void **state)
{
    (void)state;
    kill9_batched(pipeline);
}

/* Many clients over both listeners of a daemon with several workers and repliers: each client
 * takes assignments and reports them one at a time and in batches; every report is acked exactly
 * once, and the daemon and its database count exactly the reports sent, per arm. */
#define MANY_CLIENTS 24
#define MANY_ROUNDS  40

typedef struct many_arg {
    const dt_daemon *d;
    const char *url;
    uint64_t per_arm[K];
    size_t sent, acked;
    int failed;
} many_arg;

static void *many_main(void *p)
{
    many_arg *a = p;
    dt_client c;
    if (dt_client_open(&c, a->url, a->d->server.pk, 10000) != 0) {
        a->failed = 1;
        return NULL;
    }
    for (int round = 0; round < MANY_ROUNDS && !a->failed; round++) {
        size_t n = round % 2 ? 3 : 1; /* alternately one report and a batch of three */
        rec batch[3];
        for (size_t i = 0; i < n; i++) {
            if (assign_rec(&c, &batch[i]) != 0) {
                a->failed = 1;
                break;
            }
            batch[i].bit = (uint32_t)(round + i) & 1;
        }
        if (a->failed)
            break;
        dt_reply rep;
        if (send_batch(&c, batch, n, &rep) != 0 || rep.kind != 1 ||
            rep.env->body_case != LDPB__V1__ENVELOPE__BODY_BATCH_ACK ||
            rep.env->batch_ack->n_results != n) {
            a->failed = 1;
        } else {
            for (size_t i = 0; i < n; i++) {
                const Ldpb__V1__ReportResult *res = rep.env->batch_ack->results[i];
                if (code_of(res) != 0 || dup_of(res)) {
                    a->failed = 1;
                    break;
                }
                a->per_arm[batch[i].arm]++;
                a->acked++;
            }
            a->sent += n;
        }
        dt_reply_clear(&rep);
    }
    dt_client_close(&c);
    return NULL;
}

static void pipeline_exact_count(const char *extra)
{
    dt_daemon d;
    start_with(&d, extra);
    static many_arg args[MANY_CLIENTS];
    pthread_t th[MANY_CLIENTS];
    for (int i = 0; i < MANY_CLIENTS; i++) {
        args[i] = (many_arg){.d = &d, .url = i % 2 ? d.tcp_url : d.ipc_url};
        assert_int_equal(pthread_create(&th[i], NULL, many_main, &args[i]), 0);
    }
    uint64_t expect[K] = {0};
    size_t sent = 0, acked = 0;
    for (int i = 0; i < MANY_CLIENTS; i++) {
        pthread_join(th[i], NULL);
        assert_false(args[i].failed);
        sent += args[i].sent;
        acked += args[i].acked;
        for (int a = 0; a < K; a++)
            expect[a] += args[i].per_arm[a];
    }
    assert_int_equal(sent, (size_t)MANY_CLIENTS * (MANY_ROUNDS / 2) * 4);
    assert_int_equal(acked, sent);
    assert_int_equal(reports_counted(&d), sent);
    uint64_t db[K];
    assert_int_equal(db_counts(&d, db), sent);
    for (int a = 0; a < K; a++)
        assert_int_equal(db[a], expect[a]);
    stop(&d);
}

static void test_pipeline_exact_count(void **state)
{
    (void)state;
    pipeline_exact_count(pipeline);
}

/* row_shards (docs/aggregator.md, "Row shards"): the rows written by four writer threads into
 * four databases, the same exact counts; kill -9 under load, the restart deleting the rows of a
 * batch the shards committed and aggregator.db did not; the export equal to the counted set. */
static const char shards[] = "workers = 4\n"
                             "repliers = 2\n"
                             "row_shards = 4\n";

static void test_shards_exact_count(void **state)
{
    (void)state;
    pipeline_exact_count(shards);
}

static void test_kill9_batched_shards(void **state)
{
    (void)state;
    kill9_batched_x(shards, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_old_and_new_clients),
        cmocka_unit_test(test_batch_results_each_their_own),
        cmocka_unit_test(test_kill9_batched),
        cmocka_unit_test(test_kill9_batched_pipeline),
        cmocka_unit_test(test_pipeline_exact_count),
        cmocka_unit_test(test_shards_exact_count),
        cmocka_unit_test(test_kill9_batched_shards),
        cmocka_unit_test(test_client_queue_survives_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
