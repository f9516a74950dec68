/* The contextual policies served by the real ldpb-aggregator to real clients (the client library
 * over ipc:// and tcp://): jdp-linucb-gaussian (central) and linucb (nonprivate) learn the easy
 * linear instance of ctx_env.h from each request's K x d feature set, survive a kill -9 with
 * every counted report, log propensity 1/ties (their argmax is deterministic; exact ties occur
 * only in a fresh state, whose index is the same for all unit rows), and refuse bad contexts over
 * the wire with the documented codes; a non-contextual daemon ignores a context (docs/protocol.md,
 * "Contexts"). */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctx_env.h"
#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/err.h"

static ldpb_client *client_new(const dt_daemon *d, const char *url)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = url;
    memcpy(o.server_public_key, d->server.pk, LDPB_KEY_BYTES);
    o.lifetime_budget = 1e6;
    o.timeout_ms = 5000;
    o.allow_raw = 1;
    ldpb_client *c = NULL;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    return c;
}

static void start(dt_daemon *d, const char *extra)
{
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, extra), 0);
    int st = 0;
    assert_int_equal(dt_daemon_start(d, NULL, &st), 0);
}

/* Plays n rounds of the instance through the library; returns the regret summed over the last
 * `window` of them. */
static double play(ldpb_client *c, agg_rand *env, int n, int window)
{
    double regret = 0.0, x[CTX_K * CTX_D];
    for (int t = 0; t < n; t++) {
        ctx_env_features(env, x);
        ldpb_assignment a;
        ldpb_err e = ldpb_client_assign(c, x, CTX_K * CTX_D, &a);
        if (e)
            print_message("assign: %s\n", ldpb_client_errmsg(c));
        assert_int_equal(e, LDPB_OK);
        assert_true(a.arm < CTX_K);
        assert_int_equal(a.mechanism, LDPB_CLIENT_MECH_RAW);
        /* 1/ties exactly; ties happen only while V is a multiple of I (unit rows) */
        double inv = 1.0 / a.propensity;
        assert_true(inv >= 1.0 && inv <= CTX_K && inv == floor(inv));
        if (t > 0)
            assert_true(a.propensity == 1.0);
        double y = ctx_env_reward(env, x + a.arm * CTX_D);
        e = ldpb_client_report_context(c, &a, x + a.arm * CTX_D, CTX_D, y);
        if (e)
            print_message("report: %s\n", ldpb_client_errmsg(c));
        assert_int_equal(e, LDPB_OK);
        if (t >= n - window)
            regret += ctx_env_regret(x, a.arm);
    }
    return regret;
}

static uint64_t reports_of(ldpb_client *c, const char *policy)
{
    ldpb_status st;
    assert_int_equal(ldpb_client_status(c, &st), LDPB_OK);
    assert_string_equal(st.policy, policy);
    assert_int_equal(st.n_arms, CTX_K);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < CTX_K; i++)
        sum += st.arms[i].pulls;
    assert_int_equal(sum, st.reports);
    uint64_t r = st.reports;
    ldpb_status_clear(&st);
    return r;
}

/* Learning across a kill -9. With 4000 rounds (horizon 4000, epsilon 10, delta 0.1, d 3, K 5) the
 * mean regret of the last 1000 rounds was at most 0.2015 in 2000 runs of the same game with
 * independent decisions and noise (ctx_e2e_calibrate 2000 4000 1000 jdp-linucb-gaussian 10 4000:
 * median 0.109, 99th percentile 0.175, sd 0.024), against 0.330 for uniform choices. So the bound
 * 0.25 fails with probability below 1/2000 by that count; a normal fit (5.8 sd) puts it below
 * 1e-8. The restart restores the committed state, so the law of the run is the calibrated one. */
static void test_jdp_gaussian_learns_and_restarts(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 5\nmode = central\npolicy = jdp-linucb-gaussian\nd = 3\nepsilon = 10\n"
              "delta = 0.1\nhorizon = 4000\nlog_level = warn\n");
    ldpb_client *c = client_new(&d, d.ipc_url);
    agg_rand env;
    agg_rand_seed_u64(&env, 7);
    play(c, &env, 2000, 0);
    assert_int_equal(reports_of(c, "jdp-linucb-gaussian"), 2000);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(reports_of(c, "jdp-linucb-gaussian"), 2000);
    double regret = play(c, &env, 2000, 1000);
    print_message("jdp-linucb-gaussian: mean regret of the last 1000 rounds %.4f\n",
                  regret / 1000.0);
    assert_true(regret / 1000.0 < 0.25);
    assert_int_equal(reports_of(c, "jdp-linucb-gaussian"), 4000);
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* LinUCB (nonprivate): the last 500 of 1500 rounds have mean regret below 0.05 (the library's
 * run of the same game, ctx_e2e_calibrate 3 1500 500 linucb 1 1500, has 0.005; the daemon's
 * decisions depend only on the reports and on tie breaks, and past the first round this instance
 * has no exact ties). */
static void test_linucb_nonprivate_learns(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 5\nmode = nonprivate\nallow_nonprivate = true\npolicy = linucb\nd = 3\n"
              "horizon = 1500\nlog_level = warn\n");
    ldpb_client *c = client_new(&d, d.tcp_url);
    agg_rand env;
    agg_rand_seed_u64(&env, 7);
    double regret = play(c, &env, 1500, 500);
    print_message("linucb: mean regret of the last 500 rounds %.4f\n", regret / 500.0);
    assert_true(regret / 500.0 < 0.05);
    assert_int_equal(reports_of(c, "linucb"), 1500);
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* Sends an AssignRequest with `n` raw context values (no sender checks) and returns the reply. */
static void assign_raw(dt_client *c, const double *x, size_t n, dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    ar.n_context = n;
    ar.context = (double *)x;
    assert_int_equal(dt_client_call(c, &env, r), 0);
}

static void report_raw(dt_client *c, const uint8_t *id, size_t id_len, const double *x, size_t n,
                       dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = LDPB__V1__MECHANISM__RAW;
    rep.epsilon = 0.0;
    rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
    rep.real = 0.5;
    rep.n_context = n;
    rep.context = (double *)x;
    assert_int_equal(dt_client_call(c, &env, r), 0);
}

static void expect_error(const dt_reply *r, uint32_t code, const char *in_reason)
{
    if (!dt_is_error(r, 1, code) || !strstr(r->reason, in_reason))
        print_message("reply kind %d, reason '%s'\n", r->kind, r->reason);
    assert_true(dt_is_error(r, 1, code));
    assert_non_null(strstr(r->reason, in_reason));
}

/* Every violation of the context rules over the wire, each with its code and reason; a report
 * whose features are not the assigned arm's is refused. */
static void test_bad_contexts_refused(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 5\nmode = central\npolicy = jdp-linucb-wishart\nd = 3\nepsilon = 1\n"
              "horizon = 1000\nfeature_norm = 1\nlog_level = warn\n");
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    double x[300];
    agg_rand env;
    agg_rand_seed_u64(&env, 3);
    ctx_env_features(&env, x);
    dt_reply r;

    assign_raw(&c, x, CTX_K * CTX_D - 1, &r); /* wrong length */
    expect_error(&r, LDPB_EINVAL, "context has 14 values");
    dt_reply_clear(&r);
    assign_raw(&c, NULL, 0, &r); /* no context at all */
    expect_error(&r, LDPB_EINVAL, "context has 0 values");
    dt_reply_clear(&r);

    x[4] = NAN; /* refused by the decoder, before the policy */
    assign_raw(&c, x, CTX_K * CTX_D, &r);
    expect_error(&r, LDPB_EPROTO, "not a finite number");
    dt_reply_clear(&r);
    ctx_env_features(&env, x);

    x[7] *= 1.5; /* arm 2's row longer than L = 1 */
    assign_raw(&c, x, CTX_K * CTX_D, &r);
    expect_error(&r, LDPB_ERANGE, "row of arm 2 has norm");
    dt_reply_clear(&r);
    ctx_env_features(&env, x);

    for (int i = 0; i < 300; i++) /* 257 values: above the wire limit */
        x[i] = 0.01;
    assign_raw(&c, x, 257, &r);
    /* the reason docs/protocol.md, "Contexts", quotes */
    expect_error(&r, LDPB_EPROTO, "AssignRequest.context has more than 256 values");
    dt_reply_clear(&r);

    /* A good request, then reports: without features, with another arm's, with too many. */
    ctx_env_features(&env, x);
    assign_raw(&c, x, CTX_K * CTX_D, &r);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = r.env->assignment->assignment_id.len;
    memcpy(id, r.env->assignment->assignment_id.data, id_len);
    uint32_t arm = r.env->assignment->arm;
    assert_true(r.env->assignment->propensity == 1.0);
    dt_reply_clear(&r);
    report_raw(&c, id, id_len, NULL, 0, &r);
    expect_error(&r, LDPB_EINVAL, "report context has 0 values");
    dt_reply_clear(&r);
    uint32_t other = (arm + 1) % CTX_K;
    report_raw(&c, id, id_len, x + other * CTX_D, CTX_D, &r);
    expect_error(&r, LDPB_ENOTFOUND, "not the assigned arm's features");
    dt_reply_clear(&r);
    report_raw(&c, id, id_len, x, 65, &r);
    expect_error(&r, LDPB_EPROTO, "Report.context has more than 64 values");
    dt_reply_clear(&r);
    /* Batches and report_and_assign carry no features: a contextual aggregator refuses the
     * report in them with code 1, and counts nothing (docs/protocol.md, "Contexts"). */
    Ldpb__V1__Report good = LDPB__V1__REPORT__INIT;
    good.assignment_id.data = id;
    good.assignment_id.len = id_len;
    good.mechanism = LDPB__V1__MECHANISM__RAW;
    good.value_case = LDPB__V1__REPORT__VALUE_REAL;
    good.real = 0.5;
    good.n_context = CTX_D;
    good.context = x + arm * CTX_D;
    Ldpb__V1__Report *reps[1] = {&good};
    Ldpb__V1__ReportBatch batch = LDPB__V1__REPORT_BATCH__INIT;
    batch.n_reports = 1;
    batch.reports = reps;
    Ldpb__V1__Envelope benv = LDPB__V1__ENVELOPE__INIT;
    benv.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    benv.report_batch = &batch;
    assert_int_equal(dt_client_call(&c, &benv, &r), 0);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_BATCH_ACK);
    assert_int_equal(r.env->batch_ack->n_results, 1);
    assert_int_equal(r.env->batch_ack->results[0]->code, LDPB_EINVAL);
    dt_reply_clear(&r);
    Ldpb__V1__AssignRequest next = LDPB__V1__ASSIGN_REQUEST__INIT;
    next.n_context = CTX_K * CTX_D;
    next.context = x;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    ra.report = &good;
    ra.next = &next;
    Ldpb__V1__Envelope renv = LDPB__V1__ENVELOPE__INIT;
    renv.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    renv.report_and_assign = &ra;
    assert_int_equal(dt_client_call(&c, &renv, &r), 0);
    expect_error(&r, LDPB_EINVAL, "serves a contextual policy");
    dt_reply_clear(&r);

    report_raw(&c, id, id_len, x + arm * CTX_D, CTX_D, &r);
    int dup = -1;
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0); /* the refused batch and report_and_assign counted nothing */
    dt_reply_clear(&r);

    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The horizon: once the policy has learned from `horizon` reports, assignments are refused
 * (LDPB_ESTATE); a report of an assignment issued before that but arriving after is acknowledged
 * and counted, not learned from (it does not fail the batch and stall the daemon). */
static void test_horizon_reached(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 5\nmode = nonprivate\nallow_nonprivate = true\npolicy = linucb\nd = 3\n"
              "horizon = 5\nlog_level = error\n");
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    agg_rand env;
    agg_rand_seed_u64(&env, 5);
    double x[2][CTX_K * CTX_D];
    uint8_t id[2][LDPB_WIRE_ID_MAX];
    size_t id_len[2];
    uint32_t arm[2];
    dt_reply r;
    int dup = -1;
    for (int t = 0; t < 6; t++) {
        /* rounds 0-3 one at a time; rounds 4 and 5 both assigned before either is reported */
        int slot = t < 4 ? 0 : t - 4;
        ctx_env_features(&env, x[slot]);
        assign_raw(&c, x[slot], CTX_K * CTX_D, &r);
        assert_int_equal(r.kind, 1);
        assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
        id_len[slot] = r.env->assignment->assignment_id.len;
        memcpy(id[slot], r.env->assignment->assignment_id.data, id_len[slot]);
        arm[slot] = r.env->assignment->arm;
        dt_reply_clear(&r);
        if (t < 4 || t == 5)
            for (int j = 0; j <= (t == 5); j++) {
                report_raw(&c, id[j], id_len[j], x[j] + arm[j] * CTX_D, CTX_D, &r);
                assert_true(dt_is_ack(&r, &dup));
                assert_int_equal(dup, 0);
                dt_reply_clear(&r);
            }
    }
    ctx_env_features(&env, x[0]);
    assign_raw(&c, x[0], CTX_K * CTX_D, &r);
    expect_error(&r, LDPB_ESTATE, "horizon of 5 reports");
    dt_reply_clear(&r);
    uint64_t pulls[CTX_K], reports = 0, sum = 0;
    assert_int_equal(dt_status(&c, pulls, CTX_K, &reports), CTX_K);
    for (int a = 0; a < CTX_K; a++)
        sum += pulls[a];
    assert_int_equal(reports, 6);
    assert_int_equal(sum, 5);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A non-contextual daemon ignores a context (in the request and in the report). */
static void test_noncontextual_ignores_context(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 3\nmode = nonprivate\nallow_nonprivate = true\npolicy = ucb1\n"
              "log_level = warn\n");
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    double x[7] = {1, 2, 3, 4, 5, 6, 7};
    dt_reply r;
    assign_raw(&c, x, 7, &r);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = r.env->assignment->assignment_id.len;
    memcpy(id, r.env->assignment->assignment_id.data, id_len);
    dt_reply_clear(&r);
    report_raw(&c, id, id_len, x, 2, &r);
    int dup = -1;
    assert_true(dt_is_ack(&r, &dup));
    dt_reply_clear(&r);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A contextual policy's configuration errors: d missing, arms x d above the wire's 256. */
static void test_contextual_config_refused(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    char err[2048];
    assert_int_equal(dt_daemon_write_config(&d, "arms = 5\nmode = central\n"
                                                "policy = jdp-linucb-gaussian\nhorizon = 100\n"),
                     0);
    const char *args[] = {"--config", d.conf, "--check-config", NULL};
    int st = dt_daemon_run(&d, args, err, sizeof err);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(err, "needs d"));
    assert_int_equal(dt_daemon_write_config(&d, "arms = 30\nmode = central\nd = 10\n"
                                                "policy = jdp-linucb-gaussian\nhorizon = 100\n"),
                     0);
    st = dt_daemon_run(&d, args, err, sizeof err);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(err, "arms x d <= 256"));
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_contexts_refused),
        cmocka_unit_test(test_noncontextual_ignores_context),
        cmocka_unit_test(test_horizon_reached),
        cmocka_unit_test(test_contextual_config_refused),
        cmocka_unit_test(test_linucb_nonprivate_learns),
        cmocka_unit_test(test_jdp_gaussian_learns_and_restarts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
