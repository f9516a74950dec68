/* Several ldpb-aggregator nodes on one PostgreSQL database, end to end against the real binary
 * (label e2e, postgres: registered with the throwaway server of tests/support/pg_throwaway.sh).
 * Three nodes with their own node_name, listen URLs and state directories share one key file
 * and one database (docs/aggregator.md, "Several nodes on one PostgreSQL"):
 * - a report resent to another node is acked as a duplicate, also when two nodes receive the
 *   same report at the same moment (exactly one of them counts it);
 * - kill -9 of one of the three under load: acked <= counted <= acked + unanswered, and after
 *   every report is resent to the survivors each is counted exactly once (the way of counting
 *   of test_e2e.c's kill -9 test, over the database all nodes write);
 * - the database stopped (fast) for a second under load and started again: the nodes reconnect
 *   by themselves, no acked report is lost, each counted once after the resends;
 * - two experiments of different policies (ldp-ts-b, whose statistics add, and the central-DP
 *   dp-ucb, sequenced) served by all three nodes: every node's Status converges to the
 *   database's counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "ldpb/err.h"

#define NODES 3
#define K     3

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the cluster ------------------------------------------------------------------------------
 */

typedef struct cluster {
    dt_daemon n[NODES];
    int metrics_port[NODES]; /* each node's /metrics on 127.0.0.1 */
} cluster;

/* Three nodes (node1..node3) on node 1's database and key, each configured with `extra`, started
 * one after the other. */
static void cluster_start(cluster *cl, const char *extra)
{
    for (int i = 0; i < NODES; i++)
        assert_int_equal(dt_daemon_init(&cl->n[i]), 0);
    /* Registered only with the PostgreSQL fixture: without it this is a failure, not a skip. */
    assert_true(cl->n[0].store[0] != '\0');
    for (int i = 1; i < NODES; i++) {
        /* dt_daemon_init made each its own database and key; the cluster uses node 1's. */
        snprintf(cl->n[i].store, sizeof cl->n[i].store, "%s", cl->n[0].store);
        snprintf(cl->n[i].key, sizeof cl->n[i].key, "%s", cl->n[0].key);
        cl->n[i].server = cl->n[0].server;
    }
    for (int i = 0; i < NODES; i++) {
        char conf[4096];
        cl->metrics_port[i] = dt_free_port();
        snprintf(conf, sizeof conf,
                 "node_name = node%d\nlog_level = warn\nmetrics = 127.0.0.1:%d\n%s", i + 1,
                 cl->metrics_port[i], extra);
        assert_int_equal(dt_daemon_write_config(&cl->n[i], conf), 0);
        int st = -1;
        if (dt_daemon_start(&cl->n[i], NULL, &st) != 0)
            fail_msg("node%d did not start (exit %d); its log is %s", i + 1, st, cl->n[i].log);
    }
}

static void cluster_stop(cluster *cl)
{
    for (int i = NODES - 1; i >= 0; i--) {
        if (cl->n[i].pid > 0)
            assert_int_equal(dt_daemon_signal_wait(&cl->n[i], SIGTERM), 0);
        dt_daemon_cleanup(&cl->n[i]);
    }
}

/* ---- requests naming an experiment (NULL: `default`) --------------------------------------------
 */

static int x_assign(dt_client *c, const char *exp, uint32_t *arm, int *mech, double *eps,
                    uint8_t *id, size_t *id_len)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    ar.experiment = (char *)exp;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    dt_reply r;
    if (dt_client_call(c, &env, &r) != 0)
        return -1;
    int ok = r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    if (ok) {
        const Ldpb__V1__Assignment *a = r.env->assignment;
        *arm = a->arm;
        *mech = (int)a->mechanism;
        *eps = a->epsilon;
        memcpy(id, a->assignment_id.data, a->assignment_id.len);
        *id_len = a->assignment_id.len;
    }
    dt_reply_clear(&r);
    return ok ? 0 : -1;
}

/* A report of arm & 1: a bit under the local experiments' linear mechanism, a real in [0, 1]
 * for the central one (mechanism raw). */
static int x_report(dt_client *c, const char *exp, const uint8_t *id, size_t id_len, uint32_t arm,
                    int mech, double eps, dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    rep.experiment = (char *)exp;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = (Ldpb__V1__Mechanism)mech;
    rep.epsilon = eps;
    if (mech == LDPB__V1__MECHANISM__RAW) {
        rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
        rep.real = (double)(arm & 1);
    } else {
        rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
        rep.bit = arm & 1;
    }
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    return dt_client_call(c, &env, r);
}

/* The pulls per arm of `exp` that node `d` serves (its policy state: with several nodes the
 * merge of every node's, or the sequencer's), into pulls[0..K-1]; 0, or -1 without a Status. */
static int x_pulls(const dt_daemon *d, const char *exp, uint64_t *pulls)
{
    dt_client c;
    if (dt_client_open(&c, d->ipc_url, d->server.pk, 5000) != 0)
        return -1;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    sr.experiment = (char *)exp;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    dt_reply r;
    int n = -1;
    if (dt_client_call(&c, &env, &r) == 0 && r.kind == 1 &&
        r.env->body_case == LDPB__V1__ENVELOPE__BODY_STATUS && r.env->status->n_arms == K) {
        for (int a = 0; a < K; a++)
            pulls[a] = r.env->status->arms[a]->pulls;
        n = 0;
    }
    dt_reply_clear(&r);
    dt_client_close(&c);
    return n;
}

/* Every running node serves the database's pulls per arm of `exp` (`want`) within 30 s (more
 * in a sanitizer build): the merged (or sequenced) state a node serves is refreshed every
 * merge_interval_ms (100 ms by default), which a loaded machine may stretch well past 5 s. So no
 * report is counted twice, or left out, by what any node serves. */
static void assert_served(cluster *cl, const char *exp, const uint64_t *want)
{
    for (int i = 0; i < NODES; i++) {
        if (cl->n[i].pid <= 0)
            continue;
        uint64_t got[K] = {0};
        int same = 0;
        for (long end = now_ms() + 30000L * LDPB_TEST_SLOWDOWN; !same && now_ms() < end;
             sleep_ms(50))
            same = x_pulls(&cl->n[i], exp, got) == 0 && memcmp(got, want, sizeof got) == 0;
        if (!same)
            fail_msg("node%d serves pulls %llu %llu %llu of %s, the database holds %llu %llu %llu",
                     i + 1, (unsigned long long)got[0], (unsigned long long)got[1],
                     (unsigned long long)got[2], exp ? exp : "default", (unsigned long long)want[0],
                     (unsigned long long)want[1], (unsigned long long)want[2]);
    }
}

/* ---- the database's counts, from --export-csv (any node's configuration: one database) ------ */

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

/* Reported rows per arm of experiment `exp` ("default" for NULL) in the database. */
static void db_counts(const dt_daemon *d, const char *exp, uint64_t *counts)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/counts.csv", d->dir);
    unlink(path);
    const char *args[] = {"--config", d->conf, "--export-csv", path, NULL};
    int st = dt_daemon_run(d, args, err, sizeof err);
    if (st != 0)
        fail_msg("--export-csv exited %d: %s", st, err);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    memset(counts, 0, K * sizeof *counts);
    char line[1024], v[128];
    assert_non_null(fgets(line, sizeof line, f));
    int c_arm = column(line, "arm"), c_at = column(line, "reported_at_ms"),
        c_exp = column(line, "experiment");
    assert_true(c_arm >= 0 && c_at >= 0 && c_exp >= 0);
    while (fgets(line, sizeof line, f)) {
        field(line, c_at, v, sizeof v);
        if (v[0] == '\0')
            continue; /* assigned, not reported */
        field(line, c_exp, v, sizeof v);
        if (strcmp(v, exp ? exp : "default") != 0)
            continue;
        field(line, c_arm, v, sizeof v);
        long arm = strtol(v, NULL, 10);
        assert_true(arm >= 0 && arm < K);
        counts[arm]++;
    }
    fclose(f);
}

static uint64_t sum3(const uint64_t *c)
{
    return c[0] + c[1] + c[2];
}

/* ---- a report resent to another node ------------------------------------------------------------
 */

static const char ts_conf[] = "arms = 3\npolicy = ldp-ts-b\nmechanism = linear\nepsilon = 1\n"
                              "assignment_ttl_s = 120\n";

/* Reports one assignment of node `from` through node `to`; returns the ack's duplicate flag, or
 * fails. */
static int report_via(cluster *cl, int to, const uint8_t *id, size_t id_len, uint32_t arm)
{
    dt_client c;
    assert_int_equal(dt_client_open(&c, cl->n[to].ipc_url, cl->n[to].server.pk, 5000), 0);
    dt_reply r;
    assert_int_equal(x_report(&c, NULL, id, id_len, arm, LDPB__V1__MECHANISM__LINEAR, 1.0, &r), 0);
    int dup = -1;
    if (!dt_is_ack(&r, &dup))
        fail_msg("node%d did not ack the report (%s)", to + 1, r.reason);
    dt_reply_clear(&r);
    dt_client_close(&c);
    return dup;
}

static void assign_at(cluster *cl, int at, uint32_t *arm, uint8_t *id, size_t *id_len)
{
    dt_client c;
    assert_int_equal(dt_client_open(&c, cl->n[at].tcp_url, cl->n[at].server.pk, 5000), 0);
    int mech;
    double eps;
    assert_int_equal(x_assign(&c, NULL, arm, &mech, &eps, id, id_len), 0);
    dt_client_close(&c);
}

/* Two threads send the same report to two nodes at the same moment. */
typedef struct race_arg {
    cluster *cl;
    int node;
    const uint8_t *id;
    size_t id_len;
    uint32_t arm;
    pthread_barrier_t *go;
    int dup;
} race_arg;

static void *race_main(void *p)
{
    race_arg *a = p;
    dt_client c;
    a->dup = -1;
    if (dt_client_open(&c, a->cl->n[a->node].ipc_url, a->cl->n[a->node].server.pk, 5000) != 0)
        return NULL;
    pthread_barrier_wait(a->go);
    dt_reply r;
    if (x_report(&c, NULL, a->id, a->id_len, a->arm, LDPB__V1__MECHANISM__LINEAR, 1.0, &r) == 0 &&
        !dt_is_ack(&r, &a->dup))
        a->dup = -1;
    dt_reply_clear(&r);
    dt_client_close(&c);
    return NULL;
}

static void test_resend_other_node(void **state)
{
    (void)state;
    static cluster cl;
    cluster_start(&cl, ts_conf);
    uint32_t arm;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    /* Issued by node 1, reported to node 1, resent to nodes 2 and 3: duplicates there. */
    assign_at(&cl, 0, &arm, id, &id_len);
    assert_int_equal(report_via(&cl, 0, id, id_len, arm), 0);
    assert_int_equal(report_via(&cl, 1, id, id_len, arm), 1);
    assert_int_equal(report_via(&cl, 2, id, id_len, arm), 1);
    /* Issued by node 2, reported first to node 3 (one key, one state identity), then to node 1. */
    assign_at(&cl, 1, &arm, id, &id_len);
    assert_int_equal(report_via(&cl, 2, id, id_len, arm), 0);
    assert_int_equal(report_via(&cl, 0, id, id_len, arm), 1);
    /* The same report to two nodes at once, 30 times: exactly one of each pair counts it. */
    enum { RACES = 30 };
    for (int i = 0; i < RACES; i++) {
        assign_at(&cl, i % NODES, &arm, id, &id_len);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        race_arg a[2] = {{&cl, i % NODES, id, id_len, arm, &go, -1},
                         {&cl, (i + 1) % NODES, id, id_len, arm, &go, -1}};
        pthread_t th[2];
        for (int t = 0; t < 2; t++)
            assert_int_equal(pthread_create(&th[t], NULL, race_main, &a[t]), 0);
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
        pthread_barrier_destroy(&go);
        assert_true(a[0].dup >= 0 && a[1].dup >= 0);
        assert_int_equal(a[0].dup + a[1].dup, 1);
    }
    uint64_t db[K];
    db_counts(&cl.n[0], NULL, db);
    assert_int_equal(sum3(db), 2 + RACES);
    assert_served(&cl, NULL, db);
    cluster_stop(&cl);
}

/* ---- load over the three nodes ----------------------------------------------------------------
 */

#define LOAD_THREADS 6 /* thread t on node t % NODES */
#define LOAD_MAX     3000

typedef struct load_rec {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    int mech;
    double eps;
    const char *exp;
    int reported; /* a report was sent */
    int acked;    /* acked as new */
} load_rec;

typedef struct load_arg {
    const dt_daemon *d;
    load_rec *recs;
    size_t n;
    const atomic_int *stop; /* run until set */
    int stop_on_silence;    /* 1: end at the first request without a reply (the node is dead) */
    const char *const *exp; /* experiments taken in turn (NULL-terminated); NULL: `default` */
    size_t refused;         /* requests answered with an error */
} load_arg;

/* Reports acked so far by the load threads: the fault comes once the load is going. */
static atomic_size_t load_acked;

static void *load_main(void *p)
{
    load_arg *a = p;
    dt_client c;
    /* A reply slower than this counts as none (refused): 2 s, scaled for sanitizer builds (with
     * the daemons starved, scripts/loop-under-load.sh -s, one request in 449 took longer). */
    if (dt_client_open(&c, a->d->ipc_url, a->d->server.pk, 2000 * LDPB_TEST_SLOWDOWN) != 0)
        return NULL;
    size_t turn = 0;
    while (!atomic_load(a->stop) && a->n < LOAD_MAX) {
        load_rec *r = &a->recs[a->n];
        r->exp = a->exp ? a->exp[turn++] : NULL;
        if (a->exp && !a->exp[turn])
            turn = 0;
        if (x_assign(&c, r->exp, &r->arm, &r->mech, &r->eps, r->id, &r->id_len) != 0) {
            a->refused++; /* LDPB_EBUSY while commits fail, or no reply */
            if (a->stop_on_silence)
                break;
            sleep_ms(20);
            continue;
        }
        a->n++;
        r->reported = 1;
        dt_reply rep;
        if (x_report(&c, r->exp, r->id, r->id_len, r->arm, r->mech, r->eps, &rep) != 0)
            break;
        int dup = 0;
        r->acked = dt_is_ack(&rep, &dup) && !dup;
        atomic_fetch_add(&load_acked, (size_t)r->acked);
        a->refused += !r->acked;
        int got = rep.kind;
        dt_reply_clear(&rep);
        if (!got && a->stop_on_silence)
            break;
    }
    dt_client_close(&c);
    return NULL;
}

static load_rec recs[LOAD_THREADS][LOAD_MAX];

/* Runs LOAD_THREADS clients over the nodes for `ms`; `during` (may be NULL) runs in the test's
 * thread after `fault_ms` once the load is going (some reports acked: after a fixed time alone, a
 * slow machine may not have acked any yet), and the load goes on for the rest of `ms` after it. */
static void run_load(cluster *cl, load_arg *args, long ms, int stop_on_silence,
                     const char *const *exp, long fault_ms, void (*during)(cluster *))
{
    memset(recs, 0, sizeof recs);
    pthread_t th[LOAD_THREADS];
    static atomic_int stop;
    atomic_store(&stop, 0);
    long start = now_ms();
    atomic_store(&load_acked, 0);
    for (int t = 0; t < LOAD_THREADS; t++) {
        args[t] = (load_arg){&cl->n[t % NODES], recs[t], 0, &stop, stop_on_silence, exp, 0};
        assert_int_equal(pthread_create(&th[t], NULL, load_main, &args[t]), 0);
    }
    if (during) {
        ldpb_test_wait_count(&load_acked, 20, fault_ms);
        during(cl);
    }
    long left = start + ms - now_ms();
    if (left > 0)
        sleep_ms(left);
    atomic_store(&stop, 1);
    for (int t = 0; t < LOAD_THREADS; t++)
        pthread_join(th[t], NULL);
}

typedef struct tally {
    size_t sent, acked, refused;
} tally;

static tally count_load(const load_arg *args)
{
    tally s = {0, 0, 0};
    for (int t = 0; t < LOAD_THREADS; t++) {
        s.refused += args[t].refused;
        for (size_t j = 0; j < args[t].n; j++) {
            s.sent += recs[t][j].reported;
            s.acked += recs[t][j].acked;
        }
    }
    return s;
}

/* Resends every report of the load, thread t's through node `via[t % NODES]`: the ones acked
 * before are duplicates; then the database holds each report exactly once (per arm, per
 * experiment) and every running node serves that count. */
static void resend_all(cluster *cl, const load_arg *args, const int *via, const char *const *exps)
{
    dt_client c[NODES];
    for (int i = 0; i < NODES; i++)
        if (cl->n[i].pid > 0)
            assert_int_equal(dt_client_open(&c[i], cl->n[i].ipc_url, cl->n[i].server.pk, 5000), 0);
    enum { EXPS_MAX = 4 };
    uint64_t expect[EXPS_MAX][K];
    memset(expect, 0, sizeof expect);
    size_t dups_of_acked = 0, acked = 0;
    for (int t = 0; t < LOAD_THREADS; t++)
        for (size_t j = 0; j < args[t].n; j++) {
            const load_rec *r = &recs[t][j];
            int e = 0;
            while (exps && exps[e] && r->exp && strcmp(exps[e], r->exp) != 0)
                e++;
            assert_true(e < EXPS_MAX);
            expect[e][r->arm]++;
            dt_reply rep;
            assert_int_equal(x_report(&c[via[t % NODES]], r->exp, r->id, r->id_len, r->arm, r->mech,
                                      r->eps, &rep),
                             0);
            int dup = 0;
            if (!dt_is_ack(&rep, &dup))
                fail_msg("a resent report was refused: %s", rep.reason);
            if (r->acked) {
                acked++;
                dups_of_acked += dup == 1;
            }
            dt_reply_clear(&rep);
        }
    assert_int_equal(dups_of_acked, acked);
    for (int i = 0; i < NODES; i++)
        if (cl->n[i].pid > 0)
            dt_client_close(&c[i]);
    const dt_daemon *any = cl->n[via[0]].pid > 0 ? &cl->n[via[0]] : &cl->n[via[1]];
    for (int e = 0; e == 0 || (exps && exps[e]); e++) {
        const char *name = exps ? exps[e] : NULL;
        uint64_t db[K];
        db_counts(any, name, db);
        for (int a = 0; a < K; a++)
            if (db[a] != expect[e][a])
                fail_msg("%s arm %d: %llu in the database, %llu reports sent",
                         name ? name : "default", a, (unsigned long long)db[a],
                         (unsigned long long)expect[e][a]);
        assert_served(cl, name, db);
    }
}

/* ---- kill -9 of one of three under load --------------------------------------------------------
 */

static void kill_node1(cluster *cl)
{
    assert_int_equal(dt_daemon_signal_wait(&cl->n[0], SIGKILL), 128 + SIGKILL);
}

static void test_kill9_one_of_three(void **state)
{
    (void)state;
    static cluster cl;
    cluster_start(&cl, ts_conf);
    static load_arg args[LOAD_THREADS];
    run_load(&cl, args, 2000, 1, NULL, 700, kill_node1);
    tally s = count_load(args);
    print_message("kill -9 of node1: %zu reports sent, %zu acked, %zu unanswered or refused\n",
                  s.sent, s.acked, s.refused);
    assert_true(s.acked > 0);
    /* Before any resend: the database holds every acked report, and no more than were sent. */
    uint64_t db[K];
    db_counts(&cl.n[1], NULL, db);
    print_message("counted %llu\n", (unsigned long long)sum3(db));
    assert_true(sum3(db) >= s.acked);
    assert_true(sum3(db) <= s.acked + s.refused);
    assert_true(sum3(db) <= s.sent);
    /* Every report resent to the survivors: each counted exactly once, across the nodes. */
    static const int via[NODES] = {1, 2, 1};
    resend_all(&cl, args, via, NULL);
    /* node1 restarts under its name (its session's lock is gone) and serves the same counts. */
    assert_int_equal(dt_daemon_start(&cl.n[0], NULL, NULL), 0);
    db_counts(&cl.n[0], NULL, db);
    assert_served(&cl, NULL, db);
    cluster_stop(&cl);
}

/* ---- the database stopped and started under load -----------------------------------------------
 */

static void bounce_db(cluster *cl)
{
    (void)cl;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bash '%s' bounce '%s' 1", getenv("LDPB_TEST_PG_SCRIPT"),
             getenv("LDPB_TEST_PG_STATE"));
    assert_int_equal(system(cmd), 0);
}

static void test_database_bounce(void **state)
{
    (void)state;
    static cluster cl;
    cluster_start(&cl, ts_conf);
    static load_arg args[LOAD_THREADS];
    run_load(&cl, args, 4000, 0, NULL, 700, bounce_db);
    tally s = count_load(args);
    print_message("database stopped for 1 s: %zu reports sent, %zu acked, %zu refused\n", s.sent,
                  s.acked, s.refused);
    assert_true(s.refused > 0); /* the outage was seen */
    assert_true(s.acked > 0);
    /* The same nodes, never restarted, took load again after the outage (they reconnected). */
    for (int i = 0; i < NODES; i++)
        assert_true(cl.n[i].pid > 0);
    static const int via[NODES] = {1, 2, 0};
    resend_all(&cl, args, via, NULL);
    cluster_stop(&cl);
}

/* ---- two experiments of different policies ------------------------------------------------------
 */

static const char two_conf[] = "assignment_ttl_s = 120\n"
                               "[experiment add]\narms = 3\npolicy = ldp-ts-b\nmode = local\n"
                               "mechanism = linear\nepsilon = 1\n"
                               "[experiment cen]\narms = 3\npolicy = dp-ucb\nmode = central\n"
                               "horizon = 100000\nepsilon = 1\n";

static void test_two_experiments(void **state)
{
    (void)state;
    static cluster cl;
    cluster_start(&cl, two_conf);
    static const char *const exps[] = {"add", "cen", NULL};
    static load_arg args[LOAD_THREADS];
    run_load(&cl, args, 1500, 1, exps, 0, NULL);
    tally s = count_load(args);
    print_message("two experiments over three nodes: %zu reports sent, %zu acked\n", s.sent,
                  s.acked);
    assert_int_equal(s.refused, 0);
    assert_int_equal(s.acked, s.sent);
    static const int via[NODES] = {2, 0, 1};
    resend_all(&cl, args, via, exps);
    cluster_stop(&cl);
}

/* ---- the sequencer of the central experiment killed -------------------------------------------
 */

/* The value of the metric line that starts with `name ` in GET /metrics of node i; -1 if absent
 * or the node does not answer. */
static double metric(const cluster *cl, int i, const char *name)
{
    static char buf[65536];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)cl->metrics_port[i]);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    size_t len = 0;
    ssize_t r;
    if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1))
        while (len + 1 < sizeof buf && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
            len += (size_t)r;
    buf[len] = '\0';
    close(fd);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(buf, key);
    return at ? strtod(at + strlen(key), NULL) : -1;
}

#define SEQ_ROLE "ldpb_seq_experiments{role=\"sequencer\"}"

/* The node that is the sequencer of the one sequenced experiment, waiting up to `ms`. */
static int sequencer_of(const cluster *cl, int except, long ms)
{
    for (long end = now_ms() + ms; now_ms() < end; sleep_ms(20))
        for (int i = 0; i < NODES; i++)
            if (i != except && cl->n[i].pid > 0 && metric(cl, i, SEQ_ROLE) == 1.0)
                return i;
    return -1;
}

/* The takeover's bound: 5 s, scaled in a sanitizer build (slower nodes, slower polls). */
#define TAKEOVER_MS (5000L * LDPB_TEST_SLOWDOWN)

static int victim = -1;
static long killed_at_ms, took_over_ms;

static void kill_sequencer(cluster *cl)
{
    killed_at_ms = now_ms();
    assert_int_equal(dt_daemon_signal_wait(&cl->n[victim], SIGKILL), 128 + SIGKILL);
    int next = sequencer_of(cl, victim, TAKEOVER_MS);
    took_over_ms = now_ms() - killed_at_ms;
    if (next < 0)
        fail_msg("no node took over the sequencer of node%d within %ld ms", victim + 1,
                 TAKEOVER_MS);
    print_message(
        "node%d killed; node%d is the sequencer %ld ms later (metrics polled every 20 ms)\n",
        victim + 1, next + 1, took_over_ms);
}

static void test_sequencer_killed(void **state)
{
    (void)state;
    static cluster cl;
    cluster_start(&cl, two_conf);
    static const char *const exps[] = {"add", "cen", NULL};
    victim = sequencer_of(&cl, -1, 30000L * LDPB_TEST_SLOWDOWN); /* the start's election */
    assert_true(victim >= 0);
    static load_arg args[LOAD_THREADS];
    run_load(&cl, args, 2500, 1, exps, 800, kill_sequencer);
    tally s = count_load(args);
    print_message("sequencer killed under load: %zu reports sent, %zu acked\n", s.sent, s.acked);
    assert_true(s.acked > 0);
    assert_true(took_over_ms <= TAKEOVER_MS);
    int via[NODES];
    for (int i = 0; i < NODES; i++)
        via[i] = i == victim ? (victim + 1) % NODES : i;
    resend_all(&cl, args, via, exps);
    cluster_stop(&cl);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (getenv("LDPB_TEST_FILTER"))
        cmocka_set_test_filter(getenv("LDPB_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resend_other_node), cmocka_unit_test(test_kill9_one_of_three),
        cmocka_unit_test(test_database_bounce),   cmocka_unit_test(test_two_experiments),
        cmocka_unit_test(test_sequencer_killed),
    };
    return cmocka_run_group_tests_name("cluster", tests, NULL, NULL);
}
