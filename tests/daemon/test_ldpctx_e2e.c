/* The local contextual mode served by the real ldpb-aggregator to real clients (the client
 * library over ipc:// and tcp://): devices fetch the model, choose on the device, and report only
 * their privatized (x, y) statistics (docs/protocol.md, "Local model"). The model learns the easy
 * instance of ctx_env.h, the sum survives a kill -9 bit for bit with every acknowledged report
 * in it once, an old-style assign is refused with a clear error (never a silent arm 0), bad
 * statistics are refused over the wire, and the ledger charges (epsilon, delta) once per
 * assignment and resends the stored values. */
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
#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "ldpb/err.h"

#define LOCAL_CONF(horizon)                                                                        \
    "arms = 2\nmode = local\npolicy = ldp-linucb-gaussian\nd = 3\nepsilon = 10\n"                  \
    "delta = 0.1\nhorizon = " #horizon "\nlog_level = warn\n"
#define N_STATS 10 /* LDPB_CTXSTAT_VALUES(3) */

static ldpb_client *client_new_rng(const dt_daemon *d, const char *url, const char *ledger,
                                   ldpb_rng *noise)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.rng = noise;
    o.server_url = url;
    memcpy(o.server_public_key, d->server.pk, LDPB_KEY_BYTES);
    o.ledger_path = ledger;
    o.lifetime_budget = 1e6;
    o.epsilon_cap = 10.0;
    o.lifetime_delta = 0.5;
    o.per_report_delta_cap = 0.1;
    o.timeout_ms = 5000;
    ldpb_client *c = NULL;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    return c;
}

static ldpb_client *client_new(const dt_daemon *d, const char *url, const char *ledger)
{
    return client_new_rng(d, url, ledger, NULL);
}

static void start(dt_daemon *d, const char *extra)
{
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, extra), 0);
    int st = 0;
    assert_int_equal(dt_daemon_start(d, NULL, &st), 0);
}

/* Plays n rounds on the device: the arm is chosen by the client library from the model, the
 * reward drawn, the statistics reported. Returns the number of rounds that chose the best arm;
 * *regret (may be NULL) gets the summed regret. */
static int play(ldpb_client *c, agg_rand *env, int n, double *regret)
{
    double x[CTX_K * CTX_D];
    int best = 0;
    if (regret)
        *regret = 0.0;
    for (int t = 0; t < n; t++) {
        ctx_env_features(env, x);
        ldpb_assignment a;
        ldpb_err e = ldpb_client_assign_local(c, x, CTX_K, CTX_D, &a);
        if (e)
            print_message("assign_local: %s\n", ldpb_client_errmsg(c));
        assert_int_equal(e, LDPB_OK);
        assert_true(a.arm < CTX_K);
        assert_int_equal(a.mechanism, LDPB_CLIENT_MECH_GAUSSIAN_STATS);
        assert_true(a.propensity > 0.0 && a.propensity <= 1.0);
        double y = ctx_env_reward(env, x + a.arm * CTX_D);
        e = ldpb_client_report_local(c, &a, x + a.arm * CTX_D, CTX_D, y);
        if (e)
            print_message("report_local: %s\n", ldpb_client_errmsg(c));
        assert_int_equal(e, LDPB_OK);
        double r = ctx_env_regret(x, a.arm);
        best += r == 0.0;
        if (regret)
            *regret += r;
    }
    return best;
}

static uint64_t reports_of(ldpb_client *c)
{
    ldpb_status st;
    assert_int_equal(ldpb_client_status(c, &st), LDPB_OK);
    assert_string_equal(st.policy, "ldp-linucb-gaussian");
    assert_string_equal(st.model, "local");
    uint64_t r = st.reports;
    ldpb_status_clear(&st);
    return r;
}

/* A raw local-model request (the harness's own sealed frames); the reply is kept in *r. */
static void raw_local_assign(dt_client *h, int local_model, const double *ctx, size_t n_ctx,
                             dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    ar.has_local_model = local_model >= 0;
    ar.local_model = local_model > 0;
    ar.context = (double *)ctx;
    ar.n_context = n_ctx;
    assert_int_equal(dt_client_call(h, &env, r), 0);
}

/* The model's packed sum as an assignment hands it out. */
static void model_of(dt_client *h, double stats[N_STATS])
{
    dt_reply r;
    raw_local_assign(h, 1, NULL, 0, &r);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    const Ldpb__V1__LocalModel *lm = r.env->assignment->local_model;
    assert_non_null(lm);
    assert_int_equal(lm->n_stats, N_STATS);
    memcpy(stats, lm->stats, sizeof(double) * N_STATS);
    dt_reply_clear(&r);
}

/* cos(theta_hat, e_1) of the model the daemon hands out now. */
static double cosine_of(dt_client *h)
{
    dt_reply r;
    raw_local_assign(h, 1, NULL, 0, &r);
    assert_int_equal(r.kind, 1);
    const Ldpb__V1__LocalModel *lm = r.env->assignment->local_model;
    ldpb_ctxmodel *m = NULL;
    assert_int_equal(ldpb_ctxmodel_new(&m, CTX_D), LDPB_OK);
    assert_int_equal(ldpb_ctxmodel_load(m, lm->stats, lm->n_stats, lm->shift, lm->beta, NULL),
                     LDPB_OK);
    dt_reply_clear(&r);
    double theta[CTX_D], s = 0.0;
    assert_int_equal(ldpb_ctxmodel_theta(m, theta), LDPB_OK);
    ldpb_ctxmodel_free(m);
    for (int j = 0; j < CTX_D; j++)
        s += theta[j] * theta[j];
    return s > 0.0 ? theta[0] / sqrt(s) : 0.0;
}

/* Learning across a kill -9, 4000 rounds at epsilon 10 and delta 1e-5 per report, d 3, K 5. The
 * device's noise comes from a seeded generator and the daemon's sum and model are deterministic,
 * so the run is the one ldpctx_e2e_calibrate computes for its run 0 but for tie breaks (the
 * first round's model is empty, so its unit rows tie, and the client breaks ties with its own
 * unseeded generator): best-arm share 0.520 in rounds 1-500 and 0.672 in the last 1000 there,
 * 0.520 to 0.522 and 0.672 in the runs of this test seen so far. The assertions, and how often they
 * fail for a seed drawn at random (20000 runs of `ldpctx_e2e_calibrate 20000 4000`): the model's
 * estimate theta is aligned with the true theta = e_1, cos > 0.6 (never: the smallest cosine was
 * 0.673, mean 0.887, sd 0.030); the devices' choices beat a uniform chooser in the last 1000
 * rounds, best-arm share above 1/5 (20 of 20000 runs fail it: local noise at these settings makes
 * the per-run share erratic, mean 0.46 in rounds 1-500 and 0.57 in the last 1000, sd 0.10). The
 * restart restores the committed sum exactly (compared value by value) with every acknowledged
 * report in it once. */
static void test_local_learns_and_restarts(void **state)
{
    (void)state;
    dt_daemon d;
    /* one device plays every round here, so each report's delta is small enough for 4000 of
     * them to fit its delta budget of 0.5 */
    start(&d, "arms = 2\nmode = local\npolicy = ldp-linucb-gaussian\nd = 3\nepsilon = 10\n"
              "delta = 1e-5\nhorizon = 4000\nlog_level = warn\n");
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "ldpctx calibrate noise 0");
    ldpb_rng *noise = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&noise, seed), LDPB_OK);
    ldpb_client *c = client_new_rng(&d, d.ipc_url, NULL, noise);
    agg_rand env;
    agg_rand_seed_u64(&env, 11);
    int early = play(c, &env, 500, NULL);
    play(c, &env, 1500, NULL);
    assert_int_equal(reports_of(c), 2000);
    dt_client h;
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    double before[N_STATS], after[N_STATS];
    model_of(&h, before);
    dt_client_close(&h);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(reports_of(c), 2000);
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    model_of(&h, after);
    dt_client_close(&h);
    assert_memory_equal(before, after, sizeof before);
    play(c, &env, 1000, NULL);
    double regret = 0.0, last = 0.0;
    int late = play(c, &env, 999, &regret);
    /* the model the last device gets (3999 reports; past the horizon there is none) */
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    double cos = cosine_of(&h);
    dt_client_close(&h);
    late += play(c, &env, 1, &last);
    regret += last;
    assert_int_equal(reports_of(c), 4000);
    print_message("ldp-linucb-gaussian: best-arm share %.3f in rounds 1-500, %.3f in rounds "
                  "3001-4000 (mean regret %.4f), cos(theta, e_1) %.4f\n",
                  early / 500.0, late / 1000.0, regret / 1000.0, cos);
    assert_true(cos > 0.6);
    assert_true(late / 1000.0 > 0.2);
    ldpb_client_free(c);
    ldpb_rng_free(noise);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* An old-style request to the local policy is refused with LDPB_ENOTSUP and a reason naming the
 * local mode, by the client library (which never reports arm 0 for it) and over the raw wire; a
 * local-model request with a context is refused (the features must stay on the device); and a
 * local-model request to a central contextual or a K-armed daemon is refused, not answered with
 * an arm the device did not choose. */
static void test_old_style_assign_refused(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, LOCAL_CONF(100));
    ldpb_client *c = client_new(&d, d.tcp_url, NULL);
    double x[CTX_K * CTX_D];
    agg_rand env;
    agg_rand_seed_u64(&env, 3);
    ctx_env_features(&env, x);
    ldpb_assignment a;
    assert_int_equal(ldpb_client_assign(c, x, CTX_K * CTX_D, &a), LDPB_ENOTSUP);
    assert_non_null(strstr(ldpb_client_errmsg(c), "local contextual mode"));
    assert_int_equal(a.id_len, 0);
    assert_int_equal(ldpb_client_assign(c, NULL, 0, &a), LDPB_ENOTSUP);

    dt_client h;
    assert_int_equal(dt_client_open(&h, d.tcp_url, d.server.pk, 5000), 0);
    dt_reply r;
    raw_local_assign(&h, -1, NULL, 0, &r);
    assert_true(dt_is_error(&r, 1, LDPB_ENOTSUP));
    assert_non_null(strstr(r.reason, "AssignRequest.local_model"));
    dt_reply_clear(&r);
    raw_local_assign(&h, 1, x, CTX_K * CTX_D, &r);
    assert_true(dt_is_error(&r, 1, LDPB_EINVAL));
    assert_non_null(strstr(r.reason, "carries no context"));
    dt_reply_clear(&r);
    dt_client_close(&h);
    assert_int_equal(reports_of(c), 0);
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);

    /* The other way round: a device that asks for a model from a daemon that has none. */
    start(&d, "arms = 5\nmode = central\npolicy = jdp-linucb-gaussian\nd = 3\nepsilon = 1\n"
              "horizon = 100\nlog_level = warn\n");
    c = client_new(&d, d.ipc_url, NULL);
    assert_int_equal(ldpb_client_assign_local(c, x, CTX_K, CTX_D, &a), LDPB_ENOTSUP);
    assert_non_null(strstr(ldpb_client_errmsg(c), "hands out no model"));
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* Reports the daemon must refuse, sent over the wire with the harness's own frames (each with
 * its code and reason; nothing is counted): statistics of the wrong length, off the grid, beyond
 * the admissible range, a delta other than the assignment's, a non-finite value (refused by the
 * decoder as a malformed message), a plain real value; then a valid one is counted. */
static void test_bad_stats_refused(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, LOCAL_CONF(100));
    dt_client h;
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    dt_reply r;
    raw_local_assign(&h, 1, NULL, 0, &r);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    const Ldpb__V1__Assignment *as = r.env->assignment;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = as->assignment_id.len;
    memcpy(id, as->assignment_id.data, id_len);
    double eps = as->epsilon, delta = as->local_model->delta;
    assert_int_equal(as->mechanism, LDPB__V1__MECHANISM__GAUSSIAN_STATS);
    assert_int_equal(as->local_model->d, CTX_D);
    assert_true(as->propensity == 1.0 && as->arm == 0);
    dt_reply_clear(&r);

    /* an honest report from the same mechanism, to perturb */
    ldpb_ctxstat_opts mo;
    ldpb_ctxstat_opts_init(&mo, CTX_D, eps, delta);
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &mo), LDPB_OK);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_system(&rng), LDPB_OK);
    const double xs[CTX_D] = {0.6, 0.8, 0.0};
    double z[N_STATS + 5];
    assert_int_equal(ldpb_ctxstat_privatize(m, rng, xs, 0.5, z), LDPB_OK);
    double grid = ldpb_ctxstat_grid(m);

    struct {
        const char *what;
        size_t n;
        int idx;      /* value to change, -1 none */
        double value; /* its new value */
        double delta;
        uint32_t code;
        const char *reason;
    } cases[] = {
        {"d = 2's length", 6, -1, 0.0, delta, LDPB_EPROTO, "report.stats"},
        {"off the grid", N_STATS, 2, 0.0, delta, LDPB_EPROTO, "report.stats"},
        {"beyond the range", N_STATS, 0, 1e9, delta, LDPB_EPROTO, "report.stats"},
        {"another delta", N_STATS, -1, 0.0, delta / 2, LDPB_EINVAL, "delta"},
        {"not finite", N_STATS, 4, INFINITY, delta, LDPB_EPROTO, "not a finite number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double v[N_STATS + 5];
        memcpy(v, z, sizeof v);
        if (cases[i].idx >= 0)
            v[cases[i].idx] = i == 1 ? z[2] + grid / 3.0 : cases[i].value;
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        env.report = &rep;
        rep.assignment_id.data = id;
        rep.assignment_id.len = id_len;
        rep.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
        rep.epsilon = eps;
        rep.has_delta = 1;
        rep.delta = cases[i].delta;
        rep.stats = v;
        rep.n_stats = cases[i].n;
        assert_int_equal(dt_client_call(&h, &env, &r), 0);
        if (!dt_is_error(&r, 1, cases[i].code) || !strstr(r.reason, cases[i].reason))
            fail_msg("%s: kind %d, reason '%s'", cases[i].what, r.kind, r.reason);
        dt_reply_clear(&r);
    }
    uint64_t pulls[2], reports = 99;
    assert_true(dt_status(&h, pulls, 2, &reports) >= 0);
    assert_int_equal(reports, 0);

    /* the honest report is counted, once */
    for (int k = 0; k < 2; k++) {
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        env.report = &rep;
        rep.assignment_id.data = id;
        rep.assignment_id.len = id_len;
        rep.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
        rep.epsilon = eps;
        rep.has_delta = 1;
        rep.delta = delta;
        rep.stats = z;
        rep.n_stats = N_STATS;
        assert_int_equal(dt_client_call(&h, &env, &r), 0);
        int dup = -1;
        assert_true(dt_is_ack(&r, &dup));
        assert_int_equal(dup, k == 1);
        dt_reply_clear(&r);
    }
    assert_true(dt_status(&h, pulls, 2, &reports) >= 0);
    assert_int_equal(reports, 1);
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
    dt_client_close(&h);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The device's ledger charges each local report's (epsilon, delta) once; reporting the same
 * assignment again (a lost ack, a restart of the app) resends the stored statistics, which the
 * daemon acknowledges as a duplicate, and spends nothing more. The report paths that cannot
 * carry statistics refuse a local assignment; a device without a delta budget cannot take
 * part. */
static void test_ledger_charges_and_resends(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, LOCAL_CONF(100));
    char ledger[256];
    snprintf(ledger, sizeof ledger, "%s/device.ledger", d.dir);
    ldpb_client *c = client_new(&d, d.ipc_url, ledger);
    const ldpb_ledger *l = ldpb_client_ledger(c);
    double x[CTX_K * CTX_D];
    agg_rand env;
    agg_rand_seed_u64(&env, 5);
    ctx_env_features(&env, x);
    ldpb_assignment a;
    assert_int_equal(ldpb_client_assign_local(c, x, CTX_K, CTX_D, &a), LDPB_OK);
    assert_true(a.epsilon == 10.0 && a.local_delta == 0.1 && a.local_d == CTX_D);
    assert_true(ldpb_ledger_spent(l) == 0.0 && ldpb_ledger_delta_spent(l) == 0.0);
    /* the paths without statistics refuse it, and charge nothing */
    assert_int_equal(ldpb_client_report(c, &a, 0.5), LDPB_EINVAL);
    assert_int_equal(ldpb_client_queue_report(c, &a, 0.5), LDPB_EINVAL);
    assert_true(ldpb_ledger_spent(l) == 0.0);

    assert_int_equal(ldpb_client_report_local(c, &a, x + a.arm * CTX_D, CTX_D, 0.7), LDPB_OK);
    assert_true(ldpb_ledger_spent(l) == 10.0);
    double dspent = ldpb_ledger_delta_spent(l);
    assert_true(dspent >= 0.1 && dspent < 0.1 + 1e-15);
    double z1[N_STATS], z2[N_STATS];
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_lookup_stats(l, a.id, a.id_len, &e, z1, N_STATS), LDPB_OK);
    assert_int_equal(e.n_stats, N_STATS);
    /* a resend: a different reward is ignored, the stored values go out, the daemon counts once */
    assert_int_equal(ldpb_client_report_local(c, &a, x + a.arm * CTX_D, CTX_D, 0.1), LDPB_OK);
    assert_int_equal(ldpb_ledger_lookup_stats(l, a.id, a.id_len, &e, z2, N_STATS), LDPB_OK);
    assert_memory_equal(z1, z2, sizeof z1);
    assert_true(ldpb_ledger_spent(l) == 10.0 && ldpb_ledger_delta_spent(l) == dspent);
    assert_int_equal(reports_of(c), 1);
    ldpb_client_free(c);

    /* after a restart of the app, from the ledger file */
    c = client_new(&d, d.ipc_url, ledger);
    l = ldpb_client_ledger(c);
    assert_int_equal(ldpb_client_report_local(c, &a, x + a.arm * CTX_D, CTX_D, 0.2), LDPB_OK);
    assert_int_equal(ldpb_ledger_lookup_stats(l, a.id, a.id_len, &e, z2, N_STATS), LDPB_OK);
    assert_memory_equal(z1, z2, sizeof z1);
    assert_true(ldpb_ledger_spent(l) == 10.0);
    assert_int_equal(reports_of(c), 1);
    ldpb_client_free(c);

    /* a device whose ledger grants no delta */
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = d.ipc_url;
    memcpy(o.server_public_key, d.server.pk, LDPB_KEY_BYTES);
    o.epsilon_cap = 10.0;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    assert_int_equal(ldpb_client_assign_local(c, x, CTX_K, CTX_D, &a), LDPB_EBUDGET);
    assert_non_null(strstr(ldpb_client_errmsg(c), "delta"));
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The saved sum belongs to its configuration: a restart with another d (not in the state's meta
 * rows) or another reward bound is refused at start, never silently reset or misread. */
static void test_state_needs_its_configuration(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, LOCAL_CONF(100));
    ldpb_client *c = client_new(&d, d.ipc_url, NULL);
    agg_rand env;
    agg_rand_seed_u64(&env, 9);
    play(c, &env, 3, NULL);
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    const char *other[] = {
        "arms = 2\nmode = local\npolicy = ldp-linucb-gaussian\nd = 4\nepsilon = 10\n"
        "delta = 0.1\nhorizon = 100\nlog_level = warn\n",
        "arms = 2\nmode = local\npolicy = ldp-linucb-gaussian\nd = 3\nepsilon = 10\n"
        "delta = 0.1\nhorizon = 100\nreward_bound = 2\nlog_level = warn\n",
    };
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(dt_daemon_write_config(&d, other[i]), 0);
        int st = 0;
        assert_int_equal(dt_daemon_start(&d, NULL, &st), -1);
        assert_int_not_equal(st, 0);
    }
    assert_int_equal(dt_daemon_write_config(&d, LOCAL_CONF(100)), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    c = client_new(&d, d.ipc_url, NULL);
    assert_int_equal(reports_of(c), 3);
    ldpb_client_free(c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The sizes docs/protocol.md ("Local model") gives at d = 10, as Envelope plaintexts with a
 * request id whose varint takes 9 bytes (the C client's ids: a random 63-bit start, counting
 * up): the request, the Assignment on a fresh daemon and after a counted report (the same: only
 * its policy_version, the count of reports, changes its length), and the Report. */
static size_t packed(const Ldpb__V1__Envelope *env)
{
    return ldpb__v1__envelope__get_packed_size(env);
}

static void test_local_sizes(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, "arms = 2\nmode = local\npolicy = ldp-linucb-gaussian\nd = 10\nepsilon = 1\n"
              "delta = 1e-6\nhorizon = 100\nlog_level = warn\n");
    dt_client h;
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    h.next_id = (UINT64_C(1) << 62) + 12345; /* a 9-byte varint */
    enum { D10_STATS = 66 };

    Ldpb__V1__Envelope req = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    req.protocol_version = LDPB_PROTOCOL_VERSION;
    req.has_request_id = 1;
    req.request_id = h.next_id;
    req.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    req.assign_request = &ar;
    ar.has_local_model = 1;
    ar.local_model = 1;
    ar.has_max_epsilon = 1;
    ar.max_epsilon = 1.0;
    assert_int_equal(packed(&req), 25);

    dt_reply r;
    raw_local_assign(&h, 1, NULL, 0, &r);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    const Ldpb__V1__Assignment *as = r.env->assignment;
    assert_int_equal(as->assignment_id.len, 62);
    assert_int_equal(as->local_model->n_stats, D10_STATS);
    assert_int_equal(packed(r.env), 691);
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = as->assignment_id.len;
    memcpy(id, as->assignment_id.data, id_len);
    ldpb_ctxstat_opts mo;
    ldpb_ctxstat_opts_init(&mo, 10, as->epsilon, as->local_model->delta);
    dt_reply_clear(&r);

    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &mo), LDPB_OK);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_system(&rng), LDPB_OK);
    const double xs[10] = {0.6, 0.8};
    double z[D10_STATS];
    assert_int_equal(ldpb_ctxstat_privatize(m, rng, xs, 0.5, z), LDPB_OK);
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = h.next_id;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = id;
    rep.assignment_id.len = id_len;
    rep.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
    rep.epsilon = mo.epsilon;
    rep.has_delta = 1;
    rep.delta = mo.delta;
    rep.stats = z;
    rep.n_stats = D10_STATS;
    assert_int_equal(packed(&env), 630);
    assert_int_equal(dt_client_call(&h, &env, &r), 0);
    assert_true(dt_is_ack(&r, NULL));
    dt_reply_clear(&r);

    raw_local_assign(&h, 1, NULL, 0, &r);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    assert_int_equal(r.env->assignment->policy_version, 1);
    assert_int_equal(packed(r.env), 691);
    /* only the policy version (the reports counted, a varint) grows it */
    r.env->assignment->policy_version = 127;
    assert_int_equal(packed(r.env), 691);
    r.env->assignment->policy_version = 128;
    assert_int_equal(packed(r.env), 692);
    r.env->assignment->policy_version = 16384;
    assert_int_equal(packed(r.env), 693);
    dt_reply_clear(&r);
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
    dt_client_close(&h);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A local report inside a ReportBatch gets code 1 in its own result of the BatchAck (the
 * frame is answered, per result); inside a ReportAndAssign the whole request is answered with a
 * sealed Error 1 and no assignment (docs/protocol.md, "Contexts" and "Local model"), whose reason
 * asks for the statistics, not the features. Neither counts the report, which a single Report
 * then counts. */
static void test_local_batch_refused(void **state)
{
    (void)state;
    dt_daemon d;
    start(&d, LOCAL_CONF(100));
    dt_client h;
    assert_int_equal(dt_client_open(&h, d.ipc_url, d.server.pk, 5000), 0);
    dt_reply r;
    raw_local_assign(&h, 1, NULL, 0, &r);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    const Ldpb__V1__Assignment *as = r.env->assignment;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = as->assignment_id.len;
    memcpy(id, as->assignment_id.data, id_len);
    ldpb_ctxstat_opts mo;
    ldpb_ctxstat_opts_init(&mo, CTX_D, as->epsilon, as->local_model->delta);
    dt_reply_clear(&r);
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &mo), LDPB_OK);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_system(&rng), LDPB_OK);
    const double xs[CTX_D] = {0.6, 0.8, 0.0};
    double z[N_STATS];
    assert_int_equal(ldpb_ctxstat_privatize(m, rng, xs, 0.5, z), LDPB_OK);
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    rep.assignment_id.data = id;
    rep.assignment_id.len = id_len;
    rep.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
    rep.epsilon = mo.epsilon;
    rep.has_delta = 1;
    rep.delta = mo.delta;
    rep.stats = z;
    rep.n_stats = N_STATS;

    Ldpb__V1__Report *reps[2] = {&rep, &rep};
    Ldpb__V1__ReportBatch batch = LDPB__V1__REPORT_BATCH__INIT;
    batch.n_reports = 2;
    batch.reports = reps;
    Ldpb__V1__Envelope benv = LDPB__V1__ENVELOPE__INIT;
    benv.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    benv.report_batch = &batch;
    assert_int_equal(dt_client_call(&h, &benv, &r), 0);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_BATCH_ACK);
    assert_int_equal(r.env->batch_ack->n_results, 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(r.env->batch_ack->results[i]->code, LDPB_EINVAL);
    dt_reply_clear(&r);

    Ldpb__V1__AssignRequest next = LDPB__V1__ASSIGN_REQUEST__INIT;
    next.has_local_model = 1;
    next.local_model = 1;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    ra.report = &rep;
    ra.next = &next;
    Ldpb__V1__Envelope renv = LDPB__V1__ENVELOPE__INIT;
    renv.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    renv.report_and_assign = &ra;
    assert_int_equal(dt_client_call(&h, &renv, &r), 0);
    assert_true(dt_is_error(&r, 1, LDPB_EINVAL));
    /* the reason names the statistics and never asks for the features (the old one did) */
    assert_non_null(strstr(r.reason, "serves the local contextual mode"));
    assert_non_null(strstr(r.reason, "Report.stats"));
    assert_null(strstr(r.reason, "Report.context"));
    dt_reply_clear(&r);

    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    assert_int_equal(dt_client_call(&h, &env, &r), 0);
    int dup = -1;
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0); /* neither refused frame counted it */
    dt_reply_clear(&r);
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
    dt_client_close(&h);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_style_assign_refused),
        cmocka_unit_test(test_bad_stats_refused),
        cmocka_unit_test(test_ledger_charges_and_resends),
        cmocka_unit_test(test_local_learns_and_restarts),
        cmocka_unit_test(test_state_needs_its_configuration),
        cmocka_unit_test(test_local_sizes),
        cmocka_unit_test(test_local_batch_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
