/* Several aggregator nodes on one PostgreSQL (docs/aggregator.md, "Several nodes on one
 * PostgreSQL"), with real daemons on the throwaway PostgreSQL of the suite's fixture: a report
 * acked by one node and resent to another is a duplicate; an assignment of one node is honoured
 * by another; two nodes serving one additive experiment count each report once and serve the
 * sum within a merge interval or so; a node with another key, a second process of one node name
 * and a second node of an experiment whose statistics do not add are refused; two nodes serve
 * one contextual experiment whose statistics add (linucb, ldp-linucb-gaussian); the database
 * stopped (immediate) and restarted under load: reports get LDPB_EBUSY while it is down, no
 * acked report is lost, and the node serves again by itself; a node starts beside another's
 * writing transaction without waiting on its table lock. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
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

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A second node `b` beside `a`: its own directory, state_dir and listen URLs, a's database and
 * a's key (every node of a database serves with one key). */
static void second_node(const dt_daemon *a, dt_daemon *b)
{
    assert_int_equal(dt_daemon_init(b), 0);
    snprintf(b->store, sizeof b->store, "%s", a->store);
    snprintf(b->key, sizeof b->key, "%s", a->key);
    b->server = a->server;
}

static void write_conf(dt_daemon *d, const char *node, const char *extra)
{
    char conf[1024];
    snprintf(conf, sizeof conf,
             "arms = %d\nassignment_ttl_s = 600\nlog_level = warn\nnode_name = %s\n"
             "merge_interval_ms = 100\n%s",
             K, node, extra ? extra : "");
    assert_int_equal(dt_daemon_write_config(d, conf), 0);
}

/* One assignment from `c`; 0 if it came. */
static int assign(dt_client *c, uint8_t *id, size_t *id_len, int *mech, double *eps)
{
    uint32_t arm;
    return dt_assign(c, &arm, mech, eps, id, id_len);
}

/* Its report: 1 acked new, 2 acked duplicate, -code for an error, 0 nothing. */
static int report(dt_client *c, const uint8_t *id, size_t id_len, int mech, double eps, int bit)
{
    dt_reply r;
    if (dt_report(c, id, id_len, mech, eps, 1, (uint32_t)bit, 0, &r) != 0)
        return 0;
    int dup = -1, out = 0;
    if (dt_is_ack(&r, &dup))
        out = dup ? 2 : 1;
    else if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR)
        out = -(int)r.env->error->code;
    dt_reply_clear(&r);
    return out;
}

static uint64_t pulls_sum(dt_client *c)
{
    uint64_t pulls[K], reports = 0, sum = 0;
    if (dt_status(c, pulls, K, &reports) != K)
        return 0;
    for (int a = 0; a < K; a++)
        sum += pulls[a];
    return sum;
}

/* Whether `log` holds `text`. */
static int log_has(const dt_daemon *d, const char *text)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* Prints the lines of `d`'s log that hold `text` (a failing test says why). */
static void print_log_lines(const dt_daemon *d, const char *text)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return;
    char line[2048];
    while (fgets(line, sizeof line, f))
        if (strstr(line, text))
            print_message("log: %s", line);
    fclose(f);
}

/* Two nodes: a report acked by one, resent to the other, is a duplicate; an assignment of one
 * is reported to the other; each node's reports are counted once and both serve the sum within
 * about one merge interval (staleness figures printed). */
static void test_two_nodes(void **state)
{
    (void)state;
    dt_daemon a, b;
    assert_int_equal(dt_daemon_init(&a), 0);
    write_conf(&a, "node-a", NULL);
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);
    second_node(&a, &b);
    write_conf(&b, "node-b", NULL);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    dt_client ca, cb;
    assert_int_equal(dt_client_open(&ca, a.ipc_url, a.server.pk, 5000), 0);
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);

    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    int mech;
    double eps;
    assert_int_equal(assign(&ca, id, &id_len, &mech, &eps), 0);
    assert_int_equal(report(&ca, id, id_len, mech, eps, 1), 1);
    assert_int_equal(report(&cb, id, id_len, mech, eps, 1), 2); /* resent to node-b */
    assert_int_equal(report(&ca, id, id_len, mech, eps, 1), 2);
    /* node-b's assignment, reported to node-a: the key and the state identity are shared */
    assert_int_equal(assign(&cb, id, &id_len, &mech, &eps), 0);
    assert_int_equal(report(&ca, id, id_len, mech, eps, 0), 1);
    assert_int_equal(report(&cb, id, id_len, mech, eps, 0), 2);

    /* 30 reports to each node, each assigned and reported on its own node. */
    enum { PER_NODE = 30 };
    dt_client *cs[2] = {&ca, &cb};
    for (int i = 0; i < 2 * PER_NODE; i++) {
        dt_client *c = cs[i % 2];
        assert_int_equal(assign(c, id, &id_len, &mech, &eps), 0);
        assert_int_equal(report(c, id, id_len, mech, eps, i % 3 == 0), 1);
    }
    uint64_t t0 = now_ms();
    const uint64_t want = 2 + 2 * PER_NODE;
    uint64_t got_a = 0, got_b = 0, t_a = 0, t_b = 0;
    /* Polled against a deadline far beyond the bound below, so that a slow merge fails with its
     * latency printed, not as a timeout. */
    while (now_ms() - t0 < 30000u * LDPB_TEST_SLOWDOWN && (!t_a || !t_b)) {
        if (!t_a && (got_a = pulls_sum(&ca)) == want)
            t_a = now_ms() - t0;
        if (!t_b && (got_b = pulls_sum(&cb)) == want)
            t_b = now_ms() - t0;
        sleep_ms(5);
    }
    print_message("merged pulls %" PRIu64 " (node-a) and %" PRIu64 " (node-b) of %" PRIu64
                  ", served %" PRIu64 " ms and %" PRIu64
                  " ms after the last ack (merge_interval_ms = 100)\n",
                  got_a, got_b, want, t_a, t_b);
    assert_int_equal(got_a, want);
    assert_int_equal(got_b, want);
    /* Never more than the sum: each report counted once. */
    sleep_ms(300);
    assert_int_equal(pulls_sum(&ca), want);
    assert_int_equal(pulls_sum(&cb), want);
    /* The staleness docs/aggregator.md promises: about merge_interval_ms (100 ms here) plus a
     * commit. A loaded 2-core machine or a sanitizer build stretches a refresh by scheduling
     * slices, so the bound is generous (50 intervals, scaled); a merge that stopped refreshing
     * (the defect this guards) never gets there at all. */
    assert_true(t_a < 5000u * LDPB_TEST_SLOWDOWN && t_b < 5000u * LDPB_TEST_SLOWDOWN);

    dt_client_close(&ca);
    dt_client_close(&cb);
    /* Restarted, each node restores its own partial and serves the same sum. */
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);
    assert_int_equal(pulls_sum(&cb), want);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&a);
}

/* One assignment of the experiment elim from `c` and its report (a bit): 1 acked, 2 acked as a
 * duplicate, -code an error (the assignment's or the report's), 0 no answer. */
static int elim_round(dt_client *c)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    ar.experiment = (char *)"elim";
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    dt_reply r;
    if (dt_client_call(c, &env, &r) != 0 || r.kind != 1) {
        dt_reply_clear(&r);
        return 0;
    }
    if (r.env->body_case != LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
        int code =
            r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR ? -(int)r.env->error->code : 0;
        dt_reply_clear(&r);
        return code;
    }
    Ldpb__V1__Assignment *as = r.env->assignment;
    Ldpb__V1__Envelope renv = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    renv.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    renv.report = &rep;
    rep.assignment_id = as->assignment_id;
    rep.mechanism = as->mechanism;
    rep.epsilon = as->epsilon;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    rep.experiment = (char *)"elim";
    dt_reply rr;
    int out = 0;
    if (dt_client_call(c, &renv, &rr) == 0) {
        int dup = -1;
        if (dt_is_ack(&rr, &dup))
            out = dup ? 2 : 1;
        else if (rr.kind == 1 && rr.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR)
            out = -(int)rr.env->error->code;
    }
    dt_reply_clear(&rr);
    dt_reply_clear(&r);
    return out;
}

/* Refusals at start, exit 2 with a clear message: a node with another key; a second process of
 * one node name. A second node of an experiment whose statistics do not add is its sequencer's
 * follower (issue 19, server_seq.h). */
static void test_refusals(void **state)
{
    (void)state;
    dt_daemon a, b, c;
    assert_int_equal(dt_daemon_init(&a), 0);
    write_conf(&a, "node-a", "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n");
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);

    /* another key: dt_daemon_init made its own */
    assert_int_equal(dt_daemon_init(&c), 0);
    snprintf(c.store, sizeof c.store, "%s", a.store);
    write_conf(&c, "node-c", "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n");
    int st = 0;
    assert_int_equal(dt_daemon_start(&c, NULL, &st), -1);
    assert_int_equal(st, 2);
    assert_true(log_has(&c, "uses the same key file"));
    dt_daemon_cleanup(&c);

    /* the same node name, another state_dir */
    second_node(&a, &b);
    write_conf(&b, "node-a", "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n");
    assert_int_equal(dt_daemon_start(&b, NULL, &st), -1);
    assert_int_equal(st, 2);
    assert_true(log_has(&b, "node name 'node-a' is in use by another ldpb-aggregator"));

    /* elim's state becomes node-a's with its first report; node-b may not serve it */
    dt_client ca;
    assert_int_equal(dt_client_open(&ca, a.ipc_url, a.server.pk, 5000), 0);
    assert_int_equal(elim_round(&ca), 1);
    dt_client_close(&ca);
    /* issue 19 (server_seq.h): elim's statistics do not add, so node-a, which took its
     * sequencer lock first, observes it; node-b serves it too, as a follower */
    write_conf(&b, "node-b", "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n");
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    assert_false(log_has(&b, "do not add across nodes"));
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);

    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&a);
}

/* Two nodes that both started serving an experiment whose statistics do not add, before either
 * committed its state: the first to commit takes it, the other finds the row taken at its own
 * commit and stops serving that experiment (its report is not acked, never counted into a
 * second state), and goes on serving the others. */
static void test_non_additive_race(void **state)
{
    (void)state;
    static const char elim[] = "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n";
    dt_daemon a, b;
    assert_int_equal(dt_daemon_init(&a), 0);
    write_conf(&a, "node-a", elim);
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);
    second_node(&a, &b);
    write_conf(&b, "node-b", elim);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    dt_client ca, cb;
    assert_int_equal(dt_client_open(&ca, a.ipc_url, a.server.pk, 5000), 0);
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);
    /* Both start before either has committed the experiment's state. Since experiments whose
     * statistics do not add are sequenced (docs/aggregator.md, "Sequenced experiments"), the node
     * without the sequencer lock commits its reports for the sequencer instead of losing the
     * race: both serve elim, and neither stops serving it. */
    assert_int_equal(elim_round(&ca), 1);
    assert_int_equal(elim_round(&cb), 1);
    assert_false(log_has(&b, "this node no longer serves it"));
    assert_false(log_has(&a, "this node no longer serves it"));
    /* node-b serves `default` too, and node-a elim */
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    int mech;
    double eps;
    /* (assignments pause until a commit succeeds again: the probe, within a second or so) */
    int got = -1;
    for (int i = 0; i < 100 && got != 0; i++) {
        got = assign(&cb, id, &id_len, &mech, &eps);
        if (got)
            sleep_ms(50);
    }
    assert_int_equal(got, 0);
    assert_int_equal(report(&cb, id, id_len, mech, eps, 1), 1);
    assert_int_equal(elim_round(&ca), 1);
    dt_client_close(&ca);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&a);
}

/* ---- contextual experiments whose statistics add ------------------------------------------ */

#define CX_K 3
#define CX_D 3

static ldpb_client *cx_client(const dt_daemon *d)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d->ipc_url;
    memcpy(o.server_public_key, d->server.pk, LDPB_KEY_BYTES);
    o.lifetime_budget = 1e6;
    o.epsilon_cap = 10.0;
    o.lifetime_delta = 0.5;
    o.per_report_delta_cap = 0.1;
    o.timeout_ms = 5000;
    o.allow_raw = 1;
    ldpb_client *c = NULL;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    return c;
}

/* Round i's K x d features: unit rows, deterministic. */
static void cx_features(int i, double x[CX_K * CX_D])
{
    for (int a = 0; a < CX_K; a++) {
        double t = 0.37 * i + 2.1 * a;
        x[a * CX_D + 0] = 0.6 * cos(t);
        x[a * CX_D + 1] = 0.6 * sin(t);
        x[a * CX_D + 2] = 0.8;
    }
}

/* One round through the library, on the node of `c`; `local`: the local contextual mode. */
static void cx_round(ldpb_client *c, int local, int i)
{
    double x[CX_K * CX_D];
    cx_features(i, x);
    ldpb_assignment a;
    ldpb_err e = local ? ldpb_client_assign_local(c, x, CX_K, CX_D, &a)
                       : ldpb_client_assign(c, x, CX_K * CX_D, &a);
    if (e)
        print_message("assign: %s\n", ldpb_client_errmsg(c));
    assert_int_equal(e, LDPB_OK);
    assert_true(a.arm < CX_K);
    double y = 0.5 + 0.4 * x[a.arm * CX_D];
    e = local ? ldpb_client_report_local(c, &a, x + a.arm * CX_D, CX_D, y)
              : ldpb_client_report_context(c, &a, x + a.arm * CX_D, CX_D, y);
    if (e)
        print_message("report: %s\n", ldpb_client_errmsg(c));
    assert_int_equal(e, LDPB_OK);
}

/* The reports in the state node `c` serves: the per-arm pulls of linucb's merged state. The
 * local mode keeps no per-arm count and its status counts this node's reports only; its horizon
 * is the two nodes' reports together, so its served state holds all of them exactly when the
 * node refuses to hand out a model for having summed its horizon. */
static uint64_t cx_served(ldpb_client *c, int local, uint64_t horizon)
{
    if (local) {
        double x[CX_K * CX_D];
        cx_features(0, x);
        ldpb_assignment a;
        ldpb_err e = ldpb_client_assign_local(c, x, CX_K, CX_D, &a);
        return e && strstr(ldpb_client_errmsg(c), "has summed its horizon") ? horizon : 0;
    }
    ldpb_status st;
    if (ldpb_client_status(c, &st) != LDPB_OK)
        return 0;
    uint64_t sum = 0;
    for (uint32_t a = 0; a < st.n_arms; a++)
        sum += st.arms[a].pulls;
    ldpb_status_clear(&st);
    return sum;
}

/* Two nodes serve one contextual experiment whose statistics add: each node observes its own
 * reports into its partial state and serves the merge, so both serve every report within a
 * merge interval or so. Before the merge op, ldp-linucb-gaussian was refused on the second node
 * (its reports there failed) and fails this test; linucb was sequenced, which also serves every
 * report from both nodes, so its half passes either way and guards the merged path only. */
static void contextual_two_nodes(int local)
{
    enum { PER_NODE = 15 };
    char conf[512];
    dt_daemon a, b;
    const char *pol = local ? "mode = local\npolicy = ldp-linucb-gaussian\nepsilon = 10\n"
                              "delta = 0.01\n"
                            : "mode = nonprivate\nallow_nonprivate = true\npolicy = linucb\n";
    assert_int_equal(dt_daemon_init(&a), 0);
    snprintf(conf, sizeof conf,
             "arms = %d\nd = %d\nhorizon = %d\n%sassignment_ttl_s = 600\nlog_level = warn\n"
             "node_name = node-a\nmerge_interval_ms = 100\n",
             CX_K, CX_D, local ? 2 * PER_NODE : 1000, pol);
    assert_int_equal(dt_daemon_write_config(&a, conf), 0);
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);
    second_node(&a, &b);
    snprintf(conf, sizeof conf,
             "arms = %d\nd = %d\nhorizon = %d\n%sassignment_ttl_s = 600\nlog_level = warn\n"
             "node_name = node-b\nmerge_interval_ms = 100\n",
             CX_K, CX_D, local ? 2 * PER_NODE : 1000, pol);
    assert_int_equal(dt_daemon_write_config(&b, conf), 0);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    ldpb_client *ca = cx_client(&a), *cb = cx_client(&b);
    for (int i = 0; i < 2 * PER_NODE; i++)
        cx_round(i % 2 ? cb : ca, local, i);
    const uint64_t want = 2 * PER_NODE;
    uint64_t t0 = now_ms(), got_a = 0, got_b = 0;
    while (now_ms() - t0 < 30000u * LDPB_TEST_SLOWDOWN && (got_a != want || got_b != want)) {
        got_a = cx_served(ca, local, want);
        got_b = cx_served(cb, local, want);
        sleep_ms(20);
    }
    print_message("%s: node-a serves %" PRIu64 ", node-b %" PRIu64 " of %" PRIu64
                  " reports, %" PRIu64 " ms after the last ack\n",
                  local ? "ldp-linucb-gaussian" : "linucb", got_a, got_b, want, now_ms() - t0);
    assert_int_equal(got_a, want);
    assert_int_equal(got_b, want);
    /* both keep serving (linucb: a round more on each; the local mode is at its horizon) */
    if (!local) {
        cx_round(ca, local, 100);
        cx_round(cb, local, 101);
    }
    assert_false(log_has(&a, "does not merge") || log_has(&b, "does not merge"));
    assert_false(log_has(&a, "do not add") || log_has(&b, "do not add"));
    ldpb_client_free(ca);
    ldpb_client_free(cb);
    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&a);
}

static void test_linucb_two_nodes(void **state)
{
    (void)state;
    contextual_two_nodes(0);
}

static void test_ldp_linucb_two_nodes(void **state)
{
    (void)state;
    contextual_two_nodes(1);
}

/* ---- the database stopped under load ------------------------------------------------------ */

enum { LOADERS = 2, ACKED_MAX = 20000 };

typedef struct loader {
    dt_daemon *d;
    atomic_int *stop;
    uint8_t (*acked)[LDPB_WIRE_ID_MAX]; /* ids acked as new */
    size_t *acked_len;
    int *acked_mech;
    double *acked_eps;
    size_t n_acked;
    size_t busy, eio, other, timeouts, assign_refused;
    /* read by the main thread while the loaders run: its waits poll them */
    atomic_size_t *total_acked;
    atomic_uint_fast64_t last_ack_ms;
} loader;

/* Assigns and reports until told to stop; a report answered "busy" (or not at all) is resent,
 * as a client does, until acked. */
static void *load_main(void *arg)
{
    loader *l = arg;
    dt_client c;
    if (dt_client_open(&c, l->d->ipc_url, l->d->server.pk, 3000) != 0)
        return NULL;
    while (!atomic_load(l->stop) && l->n_acked < ACKED_MAX) {
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        int mech;
        double eps;
        if (assign(&c, id, &id_len, &mech, &eps) != 0) {
            l->assign_refused++; /* LDPB_EBUSY while commits fail */
            sleep_ms(20);
            continue;
        }
        for (;;) {
            int r = report(&c, id, id_len, mech, eps, 1);
            if (r == 1 || r == 2) {
                if (r == 1) {
                    memcpy(l->acked[l->n_acked], id, id_len);
                    l->acked_len[l->n_acked] = id_len;
                    l->acked_mech[l->n_acked] = mech;
                    l->acked_eps[l->n_acked] = eps;
                    l->n_acked++;
                    atomic_fetch_add(l->total_acked, 1);
                }
                atomic_store(&l->last_ack_ms, now_ms());
                break;
            }
            if (r == -LDPB_EBUSY)
                l->busy++;
            else if (r == -LDPB_EIO)
                l->eio++;
            else if (r == 0)
                l->timeouts++;
            else
                l->other++;
            if (r != -LDPB_EBUSY && r != 0 && r != -LDPB_EIO)
                break;
            sleep_ms(50);
            if (r == 0)
                dt_client_reconnect(&c, l->d->ipc_url, 3000);
        }
    }
    dt_client_close(&c);
    return NULL;
}

/* PostgreSQL stopped with -m immediate (no shutdown: crash recovery at its start) and started
 * again a second later, under load: the reports of the batches that fail are answered
 * LDPB_EBUSY (resend), never LDPB_EIO; every acked report is in the database (resent, a
 * duplicate); the node serves again by itself. */
static void test_database_stopped(void **state)
{
    (void)state;
    static uint8_t acked[LOADERS][ACKED_MAX][LDPB_WIRE_ID_MAX];
    static size_t acked_len[LOADERS][ACKED_MAX];
    static int acked_mech[LOADERS][ACKED_MAX];
    static double acked_eps[LOADERS][ACKED_MAX];
    dt_daemon a;
    assert_int_equal(dt_daemon_init(&a), 0);
    write_conf(&a, "node-a", "error_log_interval_s = 0\n"); /* every failure's reason logged */
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);
    atomic_int stop = 0;
    atomic_size_t total_acked = 0;
    loader l[LOADERS];
    pthread_t th[LOADERS];
    for (int i = 0; i < LOADERS; i++) {
        memset(&l[i], 0, sizeof l[i]);
        atomic_init(&l[i].last_ack_ms, 0);
        l[i].d = &a;
        l[i].stop = &stop;
        l[i].acked = acked[i];
        l[i].acked_len = acked_len[i];
        l[i].acked_mech = acked_mech[i];
        l[i].acked_eps = acked_eps[i];
        l[i].total_acked = &total_acked;
        assert_int_equal(pthread_create(&th[i], NULL, load_main, &l[i]), 0);
    }
    /* The load is under way (reports acked) before the database stops, however slow the machine:
     * a bounce before the first batch would test nothing. */
    assert_true(ldpb_test_wait_count(&total_acked, 20, 100));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bash '%s' bounce '%s' 1 immediate", getenv("LDPB_TEST_PG_SCRIPT"),
             getenv("LDPB_TEST_PG_STATE"));
    uint64_t down = now_ms();
    assert_int_equal(system(cmd), 0);
    uint64_t up = now_ms();
    /* Until a report is acked after the restart (the node serves again by itself): polled, as a
     * loaded machine or a sanitizer build may take seconds to reconnect and commit. */
    for (uint64_t end = up + 30000u * LDPB_TEST_SLOWDOWN; now_ms() < end; sleep_ms(20)) {
        int again = 0;
        for (int i = 0; i < LOADERS; i++)
            again |= atomic_load(&l[i].last_ack_ms) > up;
        if (again)
            break;
    }
    uint64_t served_ms = now_ms() - up;
    atomic_store(&stop, 1);
    size_t n_acked = 0, busy = 0, eio = 0, other = 0, timeouts = 0, refused = 0;
    uint64_t last = 0;
    for (int i = 0; i < LOADERS; i++) {
        pthread_join(th[i], NULL);
        n_acked += l[i].n_acked;
        busy += l[i].busy;
        eio += l[i].eio;
        other += l[i].other;
        timeouts += l[i].timeouts;
        refused += l[i].assign_refused;
        if (atomic_load(&l[i].last_ack_ms) > last)
            last = atomic_load(&l[i].last_ack_ms);
    }
    print_message("database stopped (immediate) for %" PRIu64
                  " ms: %zu reports acked, %zu answered "
                  "LDPB_EBUSY, %zu LDPB_EIO, %zu other, %zu unanswered, %zu assignments refused; "
                  "an ack %" PRIu64 " ms after the restart\n",
                  up - down, n_acked, busy, eio, other, timeouts, refused, served_ms);
    if (eio || other)
        print_log_lines(&a, "answered 'I/O error'");
    assert_true(busy > 0);
    assert_int_equal(eio, 0);
    assert_int_equal(other, 0);
    assert_true(last > up); /* it serves again, by itself */

    /* Every acked report is counted: resent, each is a duplicate. */
    dt_client c;
    assert_int_equal(dt_client_open(&c, a.ipc_url, a.server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0;
    assert_int_equal(dt_status(&c, pulls, K, &reports), K);
    assert_true(reports >= n_acked);
    for (int i = 0; i < LOADERS; i++)
        for (size_t j = 0; j < l[i].n_acked; j++)
            assert_int_equal(
                report(&c, acked[i][j], acked_len[i][j], acked_mech[i][j], acked_eps[i][j], 1), 2);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    dt_daemon_cleanup(&a);
}

/* One number from `sql` on the database of `d` (psql, the store URL); -1 if none. */
static long psql_number(const dt_daemon *d, const char *sql)
{
    char line[64];
    return dt_pg_query(d, sql, line, sizeof line) == 0 ? strtol(line, NULL, 10) : -1;
}

/* A node starts beside nodes whose batches are writing: its open checks the schema without DDL,
 * whose table locks (CREATE INDEX IF NOT EXISTS takes SHARE on its table even when the index is
 * there) would wait behind their row inserts and time out (lock_timeout 5 s: exit 1) or deadlock.
 * The batches are stood in for by a session holding ROW EXCLUSIVE, the lock a batch's writes
 * take, on the tables they write, for 20 s. */
static void test_start_beside_writers(void **state)
{
    (void)state;
    dt_daemon a, b;
    assert_int_equal(dt_daemon_init(&a), 0);
    write_conf(&a, "node-a", NULL);
    assert_int_equal(dt_daemon_start(&a, NULL, NULL), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "psql -Atq '%s' -c 'BEGIN; LOCK TABLE reports, decisions, exp_node_state, "
             "commit_generation IN ROW EXCLUSIVE MODE;"
             " SELECT pg_sleep(20); COMMIT;' >/dev/null 2>&1",
             a.store);
    FILE *writer = popen(cmd, "r");
    assert_non_null(writer);
    long held = 0;
    for (uint64_t end = now_ms() + 10000u * LDPB_TEST_SLOWDOWN; held < 4 && now_ms() < end;) {
        held = psql_number(
            &a, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid ="
                " l.relation WHERE c.relname IN ('reports', 'decisions', 'exp_node_state',"
                " 'commit_generation') AND l.mode = 'RowExclusiveLock' AND"
                " l.granted");
        if (held < 4)
            sleep_ms(50);
    }
    assert_int_equal(held, 4);
    second_node(&a, &b);
    write_conf(&b, "node-b", NULL);
    uint64_t t0 = now_ms();
    int st = 0;
    int started = dt_daemon_start(&b, NULL, &st);
    print_message("node-b started in %" PRIu64 " ms beside a writer holding the batches' tables\n",
                  now_ms() - t0);
    assert_int_equal(started, 0);
    /* the writer still holds its lock: node-b did not wait for it */
    assert_int_equal(psql_number(&a, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid ="
                                     " l.relation WHERE c.relname = 'reports' AND l.mode ="
                                     " 'RowExclusiveLock' AND l.granted"),
                     1);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&a, SIGTERM), 0);
    /* the writer's session ended (its sleep is the test's, not the check's) */
    psql_number(&a, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query"
                    " LIKE '%pg_sleep(20)%' AND pid <> pg_backend_pid()");
    pclose(writer);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&a);
}

int main(void)
{
    if (!getenv("LDPB_TEST_PG_STATE")) {
        fprintf(stderr, "test_nodes: no throwaway PostgreSQL (LDPB_TEST_PG_STATE); run through "
                        "ctest, whose fixture starts one\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_nodes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_non_additive_race),
        cmocka_unit_test(test_linucb_two_nodes),
        cmocka_unit_test(test_ldp_linucb_two_nodes),
        cmocka_unit_test(test_database_stopped),
        cmocka_unit_test(test_start_beside_writers),
    };
    return cmocka_run_group_tests_name("nodes on one PostgreSQL", tests, NULL, NULL);
}
