/* Many experiments in one ldpb-aggregator, end to end against the real binary (label e2e):
 * - one device (one ledger file) in three experiments: its budget runs out across them, and the
 *   next request in whichever experiment gets LDPB_EBUDGET, also after the handle is reopened;
 * - an old client (no experiment field on the wire, the existing API) is served by `default`,
 *   and nothing it sends is counted in another experiment;
 * - kill -9 under load spread over 100 experiments: per experiment, no acked report lost and
 *   none counted twice (the way of counting of test_e2e.c's kill -9 test, per experiment). */
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

#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/err.h"

#define K 3

/* An experiment section of the daemon's configuration: ldp-ts-b, linear, epsilon 1, K arms. */
static int section(char *buf, size_t cap, const char *name)
{
    return snprintf(buf, cap,
                    "\n[experiment %s]\npolicy = ldp-ts-b\nmode = local\narms = %d\n"
                    "mechanism = linear\nepsilon = 1\n",
                    name, K);
}

/* ---- raw requests naming an experiment (NULL: the field absent, as an old client sends) ---- */

static int x_assign(dt_client *c, const char *exp, uint32_t *arm, uint8_t *id, size_t *id_len,
                    dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    ar.experiment = (char *)exp;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    if (dt_client_call(c, &env, r) != 0)
        return -1;
    if (r->kind != 1 || r->env->body_case != LDPB__V1__ENVELOPE__BODY_ASSIGNMENT)
        return -1;
    const Ldpb__V1__Assignment *a = r->env->assignment;
    *arm = a->arm;
    memcpy(id, a->assignment_id.data, a->assignment_id.len);
    *id_len = a->assignment_id.len;
    return 0;
}

/* A Bernoulli report of `bit` under the linear mechanism at epsilon 1 (the experiments'). */
static int x_report(dt_client *c, const char *exp, const uint8_t *id, size_t id_len, uint32_t bit,
                    dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    rep.experiment = (char *)exp;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = LDPB__V1__MECHANISM__LINEAR;
    rep.epsilon = 1.0;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = bit;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    return dt_client_call(c, &env, r);
}

/* Pulls per arm and the counted reports of experiment `exp`; returns the arm count, or -1
 * (then *code gets the Error's code, if the reply was one). */
static int x_status(dt_client *c, const char *exp, uint64_t *pulls, uint64_t *reports,
                    uint32_t *code)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    sr.experiment = (char *)exp;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    dt_reply r;
    *code = 0;
    if (dt_client_call(c, &env, &r) != 0)
        return -1;
    int n = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_STATUS) {
        const Ldpb__V1__Status *st = r.env->status;
        n = (int)st->n_arms;
        for (size_t i = 0; i < st->n_arms && i < K; i++)
            pulls[i] = st->arms[i]->pulls;
        *reports = st->reports;
    } else if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        *code = r.env->error->code;
    }
    dt_reply_clear(&r);
    return n;
}

/* ---- the database's counts, from --export-csv ------------------------------------------------ */

/* The index of column `name` in a CSV header line, or -1. */
static int column(const char *header, const char *name)
{
    int i = 0;
    size_t n = strlen(name);
    for (const char *p = header;; i++) {
        const char *end = p + strcspn(p, ",\r\n");
        if ((size_t)(end - p) == n && strncmp(p, name, n) == 0)
            return i;
        if (*end != ',')
            return -1;
        p = end + 1;
    }
}

/* Field i of a CSV line (no quoted commas in these columns) into out. */
static void field(const char *line, int i, char *out, size_t cap)
{
    const char *p = line;
    for (int j = 0; j < i && p; j++) {
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    assert_non_null(p);
    size_t n = strcspn(p, ",\r\n");
    assert_true(n < cap);
    memcpy(out, p, n);
    out[n] = '\0';
}

/* Reported rows per experiment index (names PREFIX + index, n of them) and arm, counted from
 * the whole state exported as CSV. */
static void db_counts(const dt_daemon *d, const char *prefix, int n, uint64_t (*counts)[K])
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/counts.csv", d->dir);
    unlink(path);
    const char *args[] = {"--config", d->conf, "--export-csv", path, NULL};
    assert_int_equal(dt_daemon_run(d, args, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    memset(counts, 0, (size_t)n * sizeof *counts);
    char line[1024], v[128];
    assert_non_null(fgets(line, sizeof line, f));
    int c_arm = column(line, "arm"), c_at = column(line, "reported_at_ms"),
        c_exp = column(line, "experiment");
    assert_true(c_arm >= 0 && c_at >= 0 && c_exp >= 0);
    size_t plen = strlen(prefix);
    while (fgets(line, sizeof line, f)) {
        field(line, c_at, v, sizeof v);
        if (v[0] == '\0')
            continue; /* assigned, not reported */
        field(line, c_exp, v, sizeof v);
        assert_int_equal(strncmp(v, prefix, plen), 0);
        long e = strtol(v + plen, NULL, 10);
        assert_true(e >= 0 && e < n);
        field(line, c_arm, v, sizeof v);
        long arm = strtol(v, NULL, 10);
        assert_true(arm >= 0 && arm < K);
        counts[e][arm]++;
    }
    fclose(f);
}

/* ---- one device, three experiments, one budget ----------------------------------------------- */

static void open_device(ldpb_client **c, const dt_daemon *d, const char *ledger)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d->ipc_url;
    memcpy(o.server_public_key, d->server.pk, sizeof o.server_public_key);
    o.ledger_path = ledger;
    o.lifetime_budget = 5.0; /* five reports at epsilon 1 */
    o.per_report_cap = 1.0;
    o.timeout_ms = 5000;
    assert_int_equal(ldpb_client_new(c, &o), LDPB_OK);
}

static void test_budget_across_experiments(void **state)
{
    (void)state;
    static const char *const exps[3] = {"alpha", "beta", "gamma"};
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    char extra[1024] = "log_level = warn\n";
    for (int i = 0; i < 3; i++)
        section(extra + strlen(extra), sizeof extra - strlen(extra), exps[i]);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);

    char ledger[256];
    snprintf(ledger, sizeof ledger, "%s/device.ledger", d.dir);
    ldpb_client *c;
    open_device(&c, &d, ledger);
    /* Five reports, round robin over the three experiments: alpha, beta, gamma, alpha, beta. */
    uint64_t sent[3] = {0};
    for (int i = 0; i < 5; i++) {
        ldpb_assignment a;
        assert_int_equal(ldpb_client_assign_in(c, exps[i % 3], NULL, 0, &a), LDPB_OK);
        assert_string_equal(a.experiment, exps[i % 3]);
        assert_int_equal(ldpb_client_report(c, &a, 1.0), LDPB_OK);
        sent[i % 3]++;
    }
    /* The sixth, in gamma, which has spent only 1 of the device's 5: the budget is the
     * device's, not the experiment's. */
    ldpb_assignment a;
    assert_int_equal(ldpb_client_assign_in(c, "gamma", NULL, 0, &a), LDPB_EBUDGET);
    assert_int_equal(ldpb_client_assign_in(c, "alpha", NULL, 0, &a), LDPB_EBUDGET);
    ldpb_client_free(c);
    /* The ledger file keeps it: reopened, every experiment is refused. */
    open_device(&c, &d, ledger);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ldpb_client_assign_in(c, exps[i], NULL, 0, &a), LDPB_EBUDGET);
    /* Each experiment counted exactly its own reports. */
    for (int i = 0; i < 3; i++) {
        ldpb_status st;
        assert_int_equal(ldpb_client_status_in(c, exps[i], &st), LDPB_OK);
        assert_int_equal(st.reports, sent[i]);
        ldpb_status_clear(&st);
    }
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- an old client is served by `default` ---------------------------------------------------- */

static void test_old_client_default(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    char extra[1024];
    int n = snprintf(extra, sizeof extra,
                     "log_level = warn\npolicy = ldp-ts-b\nmode = local\narms = %d\n"
                     "mechanism = linear\nepsilon = 1\n",
                     K);
    section(extra + n, sizeof extra - (size_t)n, "other");
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);

    /* Frames without the experiment field, exactly as a client built before experiments. */
    dt_client raw;
    assert_int_equal(dt_client_open(&raw, d.tcp_url, d.server.pk, 5000), 0);
    for (int i = 0; i < 4; i++) {
        uint32_t arm;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        dt_reply r;
        assert_int_equal(x_assign(&raw, NULL, &arm, id, &id_len, &r), 0);
        dt_reply_clear(&r);
        assert_int_equal(x_report(&raw, NULL, id, id_len, arm & 1, &r), 0);
        int dup = 1;
        assert_true(dt_is_ack(&r, &dup));
        assert_int_equal(dup, 0);
        dt_reply_clear(&r);
    }
    /* The existing client API (no experiment) too. */
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d.ipc_url;
    memcpy(o.server_public_key, d.server.pk, sizeof o.server_public_key);
    o.timeout_ms = 5000;
    ldpb_client *c;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    ldpb_assignment a;
    assert_int_equal(ldpb_client_assign(c, NULL, 0, &a), LDPB_OK);
    assert_string_equal(a.experiment, "");
    assert_int_equal(ldpb_client_report(c, &a, 0.5), LDPB_OK);
    ldpb_status st;
    assert_int_equal(ldpb_client_status(c, &st), LDPB_OK);
    assert_int_equal(st.reports, 5);
    ldpb_status_clear(&st);
    ldpb_client_free(c);

    /* Five in default, whether asked for with no name or by its name; none in `other`. */
    uint64_t pulls[K], reports = 0;
    uint32_t code;
    assert_int_equal(x_status(&raw, NULL, pulls, &reports, &code), K);
    assert_int_equal(reports, 5);
    assert_int_equal(x_status(&raw, "default", pulls, &reports, &code), K);
    assert_int_equal(reports, 5);
    assert_int_equal(x_status(&raw, "other", pulls, &reports, &code), K);
    assert_int_equal(reports, 0);
    assert_int_equal(x_status(&raw, "nosuch", pulls, &reports, &code), -1);
    assert_int_equal(code, LDPB_ENOEXPERIMENT);
    dt_client_close(&raw);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- kill -9 under load over 100 experiments ------------------------------------------------- */

#define N_EXP        100
#define LOAD_THREADS 4
#define LOAD_MAX     4000

typedef struct load_rec {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    int exp;
    int reported; /* a report was sent */
    int acked;
} load_rec;

typedef struct load_arg {
    const dt_daemon *d;
    const char *url;
    int thread;
    load_rec *recs;
    size_t n;
} load_arg;

static void exp_name(int i, char out[16])
{
    snprintf(out, 16, "e%d", i);
}

/* Each thread assigns and reports in a loop, each round in the next experiment of its own
 * stride, recording each assignment and whether its report was acknowledged, until a request
 * fails (the daemon is gone). */
/* Reports acked so far by the load threads: the kill comes once the load has spread. */
static atomic_size_t load_acked;

static void *load_main(void *p)
{
    load_arg *a = p;
    dt_client c;
    if (dt_client_open(&c, a->url, a->d->server.pk, 1000) != 0)
        return NULL;
    while (a->n < LOAD_MAX) {
        load_rec *r = &a->recs[a->n];
        r->exp = (int)((a->n * 7u + (size_t)a->thread * 31u) % N_EXP);
        char name[16];
        exp_name(r->exp, name);
        dt_reply rep;
        int ok = x_assign(&c, name, &r->arm, r->id, &r->id_len, &rep) == 0;
        dt_reply_clear(&rep);
        if (!ok)
            break;
        a->n++;
        r->reported = 1;
        if (x_report(&c, name, r->id, r->id_len, r->arm & 1, &rep) != 0)
            break;
        int dup = 0;
        r->acked = dt_is_ack(&rep, &dup) && !dup;
        atomic_fetch_add(&load_acked, (size_t)r->acked);
        int got = rep.kind;
        dt_reply_clear(&rep);
        if (!got)
            break;
    }
    dt_client_close(&c);
    return NULL;
}

static void test_kill9_many_experiments(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    static char extra[N_EXP * 128 + 256];
    snprintf(extra, sizeof extra, "assignment_ttl_s = 60\nlog_level = warn\n");
    for (int i = 0; i < N_EXP; i++) {
        char name[16];
        exp_name(i, name);
        section(extra + strlen(extra), sizeof extra - strlen(extra), name);
    }
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);

    static load_rec recs[LOAD_THREADS][LOAD_MAX];
    memset(recs, 0, sizeof recs);
    load_arg args[LOAD_THREADS];
    pthread_t th[LOAD_THREADS];
    atomic_store(&load_acked, 0);
    for (int i = 0; i < LOAD_THREADS; i++) {
        args[i] = (load_arg){&d, i % 2 ? d.tcp_url : d.ipc_url, i, recs[i], 0};
        assert_int_equal(pthread_create(&th[i], NULL, load_main, &args[i]), 0);
    }
    /* Acks enough for the spread asserted below: a thread's first N_EXP reports go to distinct
     * experiments, so 2 * N_EXP acks over the LOAD_THREADS threads touch N_EXP / 2 of them at
     * least (with LOAD_THREADS <= 4). A fixed second acked too few on a slow machine. */
    ldpb_test_wait_count(&load_acked, 2 * N_EXP, 1000);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    for (int i = 0; i < LOAD_THREADS; i++)
        pthread_join(th[i], NULL);

    static uint64_t total[N_EXP], acked[N_EXP], expect[N_EXP][K];
    memset(total, 0, sizeof total);
    memset(acked, 0, sizeof acked);
    memset(expect, 0, sizeof expect);
    size_t all = 0, all_acked = 0;
    int touched = 0;
    for (int i = 0; i < LOAD_THREADS; i++)
        for (size_t j = 0; j < args[i].n; j++) {
            const load_rec *r = &recs[i][j];
            total[r->exp] += (uint64_t)r->reported;
            acked[r->exp] += (uint64_t)r->acked;
            expect[r->exp][r->arm] += (uint64_t)r->reported;
            all += (size_t)r->reported;
            all_acked += (size_t)r->acked;
        }
    for (int e = 0; e < N_EXP; e++)
        touched += acked[e] > 0;
    print_message("kill -9 after %zu reports sent, %zu acked, %d of %d experiments acked some\n",
                  all, all_acked, touched, N_EXP);
    assert_true(touched >= N_EXP / 2); /* the load did spread */

    /* After the restart each experiment holds every report acked in it (and possibly unacked
     * ones committed before the kill): its status and the database agree. */
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    static uint64_t db[N_EXP][K];
    db_counts(&d, "e", N_EXP, db);
    for (int e = 0; e < N_EXP; e++) {
        char name[16];
        exp_name(e, name);
        uint64_t pulls[K], reports = 0, sum = 0;
        uint32_t code;
        assert_int_equal(x_status(&c, name, pulls, &reports, &code), K);
        for (int a = 0; a < K; a++) {
            assert_int_equal(pulls[a], db[e][a]);
            sum += db[e][a];
        }
        assert_int_equal(sum, reports);
        assert_true(reports >= acked[e] && reports <= total[e]);
    }

    /* Resend every report in its experiment: the acked ones are duplicates; each is counted
     * exactly once, in its own experiment. */
    size_t dups_of_acked = 0;
    for (int i = 0; i < LOAD_THREADS; i++)
        for (size_t j = 0; j < args[i].n; j++) {
            const load_rec *r = &recs[i][j];
            if (!r->reported)
                continue;
            char name[16];
            exp_name(r->exp, name);
            dt_reply rep;
            assert_int_equal(x_report(&c, name, r->id, r->id_len, r->arm & 1, &rep), 0);
            int dup = 0;
            assert_true(dt_is_ack(&rep, &dup));
            if (r->acked) {
                assert_int_equal(dup, 1);
                dups_of_acked++;
            }
            dt_reply_clear(&rep);
        }
    assert_int_equal(dups_of_acked, all_acked);
    db_counts(&d, "e", N_EXP, db);
    for (int e = 0; e < N_EXP; e++) {
        char name[16];
        exp_name(e, name);
        uint64_t pulls[K], reports = 0;
        uint32_t code;
        assert_int_equal(x_status(&c, name, pulls, &reports, &code), K);
        for (int a = 0; a < K; a++) {
            assert_int_equal(db[e][a], expect[e][a]);
            assert_int_equal(pulls[a], expect[e][a]);
        }
        assert_int_equal(reports, total[e]);
    }
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_across_experiments),
        cmocka_unit_test(test_old_client_default),
        cmocka_unit_test(test_kill9_many_experiments),
    };
    if (getenv("LDPB_TEST_FILTER")) /* e.g. LDPB_TEST_FILTER='test_kill9*' */
        cmocka_set_test_filter(getenv("LDPB_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
