/* libldpb-sim's public API (ldpb/sim.h) through the shared library itself, so the sanitizer run
 * covers what the Python package calls (its own tests cannot load sanitized libraries): a custom
 * batch and its curves, option and state errors, the presets only `ldpb sim` runs, a policy step
 * by step with save/restore, and the audit's verdict and refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/sim.h"

static ldpb_sim *custom(const char *threads)
{
    ldpb_sim *s = NULL;
    assert_int_equal(ldpb_sim_new(&s), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "means", "0.9,0.6,0.5"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "algorithms", "ucb1,ldp-ts-b,dp-se"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "mechanisms", "linear"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "horizon", "2000"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "trials", "3"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "seed", "api"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "threads", threads), LDPB_OK);
    return s;
}

static void progress(void *ctx, const ldpb_sim_progress *p)
{
    (*(int *)ctx)++;
    assert_true(p->work_done >= 0.0 && p->work_done <= 1.0);
}

static void sim_batch_and_curves(void **state)
{
    (void)state;
    ldpb_sim *s = custom("1"), *t = custom("2");
    assert_int_equal(ldpb_sim_abi_version(), LDPB_SIM_ABI_VERSION);
    assert_int_equal(ldpb_sim_n_configs(s), 0);
    assert_null(ldpb_sim_regret(s, 0));
    int calls = 0;
    ldpb_sim_set_progress(s, progress, &calls);
    assert_int_equal(ldpb_sim_run(s), LDPB_OK);
    assert_int_equal(ldpb_sim_run(t), LDPB_OK);
    assert_string_equal(ldpb_sim_errmsg(s), "");
    size_t n_cfg = ldpb_sim_n_configs(s);
    assert_int_equal(n_cfg, 3);
    assert_int_equal(ldpb_sim_trials(s), 3);
    assert_int_equal(ldpb_sim_horizon(s), 2000);
    const uint64_t *tp = NULL;
    size_t n = ldpb_sim_checkpoints(s, &tp);
    assert_true(n > 10 && tp[n - 1] == 2000);
    for (size_t c = 0; c < n_cfg; c++) {
        ldpb_sim_config_info info;
        assert_int_equal(ldpb_sim_config(s, c, &info), LDPB_OK);
        assert_string_equal(info.preset, "custom");
        assert_int_equal(info.k, 3);
        const double *r = ldpb_sim_regret(s, c), *r2 = ldpb_sim_regret(t, c);
        /* the threads do not change the numbers */
        assert_memory_equal(r, r2, 3 * n * sizeof *r);
        const double *mean, *lo, *hi;
        assert_int_equal(ldpb_sim_curve(s, c, &mean, &lo, &hi), LDPB_OK);
        for (size_t j = 0; j < n; j++) {
            double m = (r[j] + r[n + j] + r[2 * n + j]) / 3.0;
            assert_true(fabs(mean[j] - m) <= 1e-9 * (1.0 + fabs(m)));
            assert_true(lo[j] <= mean[j] && mean[j] <= hi[j]);
        }
    }
    ldpb_sim_config_info info;
    assert_int_equal(ldpb_sim_config(s, n_cfg, &info), LDPB_ERANGE);
    assert_int_equal(ldpb_sim_curve(s, n_cfg, NULL, NULL, NULL), LDPB_ERANGE);
    assert_null(ldpb_sim_regret(s, n_cfg));
    assert_int_equal(ldpb_sim_run(s), LDPB_ESTATE);
    assert_int_equal(ldpb_sim_set(s, "trials", "4"), LDPB_ESTATE);
    ldpb_sim_free(s);
    ldpb_sim_free(t);
    ldpb_sim_free(NULL);
}

static ldpb_err run_with(const char *name, const char *value, char *msg, size_t cap)
{
    ldpb_sim *s = NULL;
    assert_int_equal(ldpb_sim_new(&s), LDPB_OK);
    ldpb_err err = ldpb_sim_set(s, name, value);
    if (!err)
        err = ldpb_sim_set(s, "horizon", "100");
    if (!err)
        err = ldpb_sim_run(s);
    snprintf(msg, cap, "%s", ldpb_sim_errmsg(s));
    ldpb_sim_free(s);
    return err;
}

static void sim_errors(void **state)
{
    (void)state;
    char msg[320];
    assert_int_equal(run_with("preset", "nope", msg, sizeof msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "unknown preset 'nope'"));
    assert_int_equal(run_with("preset", "smith2013-bandit", msg, sizeof msg), LDPB_ENOTSUP);
    assert_non_null(strstr(msg, "ldpb sim --preset smith2013-bandit"));
    /* sajed2019-nas runs, but takes no horizon (run_with sets one) */
    assert_int_equal(run_with("preset", "sajed2019-nas", msg, sizeof msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "horizon does not apply to preset sajed2019-nas"));
    assert_int_equal(run_with("gaps", "0.1", msg, sizeof msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "gaps applies to preset sajed2019-nas only"));
    assert_int_equal(run_with("frobnicate", "1", msg, sizeof msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "unknown option 'frobnicate'"));
    assert_int_equal(run_with("threads", "0", msg, sizeof msg), LDPB_ERANGE);
    assert_int_equal(run_with("seed", "", msg, sizeof msg), LDPB_EINVAL);
    assert_int_equal(ldpb_sim_new(NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_sim_run(NULL), LDPB_EINVAL);
    assert_true(ldpb_sim_preset_runnable("jiang2023"));
    assert_true(ldpb_sim_preset_runnable("shariff2018"));
    assert_true(ldpb_sim_preset_runnable("sajed2019-nas"));
    assert_false(ldpb_sim_preset_runnable("smith2013-experts"));
    size_t i = 0;
    int nas = 0;
    for (const char *n; (n = ldpb_sim_preset_name(i)) != NULL; i++)
        nas |= strcmp(n, "sajed2019-nas") == 0;
    assert_true(nas && i >= 15);
}

/* sajed2019-nas gives its table (the CSV `ldpb sim` writes; python_simulation compares the
 * bytes with the command's) and no curves. */
static void nas_table(void **state)
{
    (void)state;
    ldpb_sim *s = NULL;
    assert_int_equal(ldpb_sim_new(&s), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "preset", "sajed2019-nas"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "trials", "5"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "gaps", "0.4,0.8"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "epsilons", "1"), LDPB_OK);
    const char *name = "x";
    assert_null(ldpb_sim_table(s, &name));
    assert_null(name);
    assert_int_equal(ldpb_sim_run(s), LDPB_OK);
    const char *t = ldpb_sim_table(s, &name);
    assert_non_null(t);
    assert_string_equal(name, "stopping.csv");
    assert_true(strncmp(t, "preset,algorithm,epsilon,gap,", 29) == 0);
    size_t lines = 0;
    for (const char *c = t; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 1 + 2 * 2); /* header, 2 algorithms x 2 gaps x 1 epsilon */
    assert_int_equal(ldpb_sim_n_configs(s), 0);
    assert_null(ldpb_sim_regret(s, 0));
    ldpb_sim_free(s);
}

static void policy_steps(void **state)
{
    (void)state;
    ldpb_policy_params pp;
    ldpb_policy_params_init(&pp);
    pp.k = 4;
    pp.horizon = 500;
    char msg[256];
    ldpb_policy *p = NULL, *q = NULL;
    assert_int_equal(ldpb_policy_new(&p, "dp-se", &pp, "seed", msg, sizeof msg), LDPB_OK);
    assert_int_equal(ldpb_policy_new(&q, "dp-se", &pp, NULL, msg, sizeof msg), LDPB_OK);
    assert_string_equal(ldpb_policy_model(p), "central");
    assert_int_equal(ldpb_policy_k(p), 4);
    for (int i = 0; i < 200; i++) {
        uint32_t arm;
        assert_int_equal(ldpb_policy_choose(p, &arm), LDPB_OK);
        assert_true(arm < 4);
        assert_int_equal(ldpb_policy_observe(p, arm, arm == 0 ? 1.0 : 0.0), LDPB_OK);
    }
    size_t len = 0;
    assert_int_equal(ldpb_policy_save(p, NULL, 0, &len), LDPB_ERANGE);
    uint8_t *buf = malloc(len), *again = malloc(len);
    assert_non_null(buf);
    assert_non_null(again);
    assert_int_equal(ldpb_policy_save(p, buf, len, &len), LDPB_OK);
    assert_int_equal(ldpb_policy_restore(q, buf, len), LDPB_OK);
    size_t len2 = 0;
    assert_int_equal(ldpb_policy_save(q, again, len, &len2), LDPB_OK);
    assert_int_equal(len2, len);
    assert_memory_equal(buf, again, len);
    assert_int_equal(ldpb_policy_restore(q, buf, len / 2), LDPB_ECORRUPT);
    ldpb_policy_arm arms[4];
    assert_int_equal(ldpb_policy_describe(p, arms, 4), LDPB_OK);
    assert_int_equal(arms[0].pulls + arms[1].pulls + arms[2].pulls + arms[3].pulls, 200);
    assert_int_equal(ldpb_policy_describe(p, arms, 3), LDPB_ERANGE);
    double prob;
    assert_int_equal(ldpb_policy_propensity(p, &prob), LDPB_ENOTSUP);
    assert_int_equal(ldpb_policy_observe(p, 4, 1.0), LDPB_EINVAL);
    assert_int_equal(ldpb_policy_observe(p, 0, NAN), LDPB_EINVAL);
    free(buf);
    free(again);
    ldpb_policy_free(p);
    ldpb_policy_free(q);
    ldpb_policy_free(NULL);

    ldpb_policy *bad = (ldpb_policy *)&bad;
    assert_int_equal(ldpb_policy_new(&bad, "nope", &pp, NULL, msg, sizeof msg), LDPB_EINVAL);
    assert_null(bad);
    assert_string_equal(msg, "unknown policy 'nope'");
    pp.k = 1;
    assert_int_not_equal(ldpb_policy_new(&bad, "ucb1", &pp, NULL, msg, sizeof msg), LDPB_OK);
    assert_true(msg[0] != '\0');
    assert_string_equal(ldpb_policy_model_of("ldp-ts-b"), "local");
    assert_null(ldpb_policy_model_of("nope"));
    assert_string_equal(ldpb_policy_name_at(0), "ucb1");
}

/* Every contextual policy through the public API: a seeded run twice gives the same decisions
 * and state, save/restore round-trips, bad input is refused without a crash. */
static void ctxpolicy_steps(void **state)
{
    (void)state;
    enum { D = 3, K = 5, T = 60 };
    const char *names[] = {"linucb", "jdp-linucb-wishart", "jdp-linucb-gaussian",
                           "ldp-linucb-gaussian"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ldpb_ctxpolicy_params pp;
        ldpb_ctxpolicy_params_init(&pp);
        pp.d = D;
        pp.horizon = T + 1;
        char msg[256];
        ldpb_ctxpolicy *p[2] = {NULL, NULL}, *q = NULL;
        for (int r = 0; r < 2; r++)
            assert_int_equal(ldpb_ctxpolicy_new(&p[r], names[i], &pp, "s", msg, sizeof msg),
                             LDPB_OK);
        assert_int_equal(ldpb_ctxpolicy_new(&q, names[i], &pp, NULL, msg, sizeof msg), LDPB_OK);
        assert_string_equal(ldpb_ctxpolicy_name(q), names[i]);
        assert_string_equal(ldpb_ctxpolicy_model(q), ldpb_ctxpolicy_model_of(names[i]));
        assert_int_equal(ldpb_ctxpolicy_d(q), D);
        uint64_t lcg = 12345;
        for (int t = 0; t < T; t++) {
            double x[K * D];
            for (int j = 0; j < K * D; j++) {
                lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
                x[j] = ((double)(lcg >> 11) / 9007199254740992.0 - 0.5) / 2.0; /* |x| < 0.5 */
            }
            uint32_t arm[2], ties;
            for (int r = 0; r < 2; r++) {
                assert_int_equal(ldpb_ctxpolicy_choose(p[r], x, K, &arm[r], &ties), LDPB_OK);
                assert_true(arm[r] < K && ties >= 1);
                double y = x[arm[r] * D] > 0 ? 1.0 : -1.0;
                assert_int_equal(ldpb_ctxpolicy_observe(p[r], x + arm[r] * D, y), LDPB_OK);
            }
            assert_int_equal(arm[0], arm[1]);
        }
        assert_int_equal(ldpb_ctxpolicy_rounds(p[0]), T);
        size_t len = 0, len2 = 0;
        assert_int_equal(ldpb_ctxpolicy_save(p[0], NULL, 0, &len), LDPB_ERANGE);
        uint8_t *a = malloc(len), *b = malloc(len);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(ldpb_ctxpolicy_save(p[0], a, len, &len), LDPB_OK);
        assert_int_equal(ldpb_ctxpolicy_save(p[1], b, len, &len2), LDPB_OK);
        assert_int_equal(len, len2);
        assert_memory_equal(a, b, len);
        assert_int_equal(ldpb_ctxpolicy_restore(q, a, len), LDPB_OK);
        assert_int_equal(ldpb_ctxpolicy_rounds(q), T);
        assert_int_equal(ldpb_ctxpolicy_save(q, b, len, &len2), LDPB_OK);
        assert_memory_equal(a, b, len);
        assert_int_equal(ldpb_ctxpolicy_restore(q, a, len / 2), LDPB_ECORRUPT);
        free(a);
        free(b);

        double x[K * D] = {0}, z[64];
        x[1] = NAN;
        uint32_t arm;
        assert_int_equal(ldpb_ctxpolicy_choose(q, x, K, &arm, NULL), LDPB_EINVAL);
        x[1] = 2.0; /* longer than L = 1 */
        assert_int_equal(ldpb_ctxpolicy_choose(q, x, K, &arm, NULL), LDPB_ERANGE);
        assert_int_equal(ldpb_ctxpolicy_choose(q, x, 0, &arm, NULL), LDPB_ERANGE);
        assert_int_equal(ldpb_ctxpolicy_observe(q, x + D, NAN), LDPB_EINVAL);
        int local = strcmp(names[i], "ldp-linucb-gaussian") == 0;
        assert_int_equal(ldpb_ctxpolicy_report_len(q), local ? (D + 1) * (D + 2) / 2 : 0);
        if (local) {
            assert_int_equal(ldpb_ctxpolicy_privatize(q, x + D, 0.5, z), LDPB_OK);
            assert_int_equal(ldpb_ctxpolicy_add_report(q, z, 3), LDPB_EPROTO);
            double keep = z[0];
            z[0] = 1e9;
            assert_int_equal(ldpb_ctxpolicy_add_report(q, z, (D + 1) * (D + 2) / 2), LDPB_EPROTO);
            z[0] = keep;
            assert_int_equal(ldpb_ctxpolicy_add_report(q, z, (D + 1) * (D + 2) / 2), LDPB_OK);
            assert_int_equal(ldpb_ctxpolicy_rounds(q), T + 1);
        } else {
            assert_int_equal(ldpb_ctxpolicy_privatize(q, x + D, 0.5, z), LDPB_ENOTSUP);
            assert_int_equal(ldpb_ctxpolicy_add_report(q, z, 1), LDPB_ENOTSUP);
            assert_int_equal(ldpb_ctxpolicy_observe(q, x + D, 0.5), LDPB_OK);
        }
        /* the horizon is reached: one more is refused */
        assert_int_equal(ldpb_ctxpolicy_observe(q, x + D, 0.5), LDPB_ESTATE);
        for (int r = 0; r < 2; r++)
            ldpb_ctxpolicy_free(p[r]);
        ldpb_ctxpolicy_free(q);
    }
    ldpb_ctxpolicy_free(NULL);
    ldpb_ctxpolicy_params pp;
    ldpb_ctxpolicy_params_init(&pp);
    char msg[256];
    ldpb_ctxpolicy *bad = (ldpb_ctxpolicy *)&bad;
    assert_int_equal(ldpb_ctxpolicy_new(&bad, "ucb1", &pp, NULL, msg, sizeof msg), LDPB_EINVAL);
    assert_null(bad);
    assert_string_equal(msg, "unknown contextual policy 'ucb1'");
    pp.horizon = 10; /* d 0 */
    assert_int_not_equal(ldpb_ctxpolicy_new(&bad, "linucb", &pp, NULL, msg, sizeof msg), LDPB_OK);
    assert_true(msg[0] != '\0');
    pp.d = 2;
    pp.delta = 1.5;
    assert_int_not_equal(
        ldpb_ctxpolicy_new(&bad, "jdp-linucb-gaussian", &pp, NULL, msg, sizeof msg), LDPB_OK);
    assert_non_null(strstr(msg, "delta"));
    /* A negative alpha is refused by every policy, the local one too (it once became 1/T). */
    pp.delta = 0.1;
    pp.alpha = -0.5;
    for (size_t i = 0; ldpb_ctxpolicy_name_at(i); i++) {
        bad = (ldpb_ctxpolicy *)&bad;
        assert_int_equal(
            ldpb_ctxpolicy_new(&bad, ldpb_ctxpolicy_name_at(i), &pp, NULL, msg, sizeof msg),
            LDPB_ERANGE);
        assert_null(bad);
        assert_non_null(strstr(msg, "alpha"));
    }
    assert_string_equal(ldpb_ctxpolicy_name_at(3), "ldp-linucb-gaussian");
    assert_null(ldpb_ctxpolicy_name_at(4));
    assert_null(ldpb_ctxpolicy_model_of("ucb1"));
}

static void audit_verdicts(void **state)
{
    (void)state;
    ldpb_audit_result r;
    char msg[256];
    assert_int_equal(ldpb_audit_mech("laplace", 1.0, NAN, 2000, 0.0, "api", &r, msg, sizeof msg),
                     LDPB_OK);
    assert_true(r.pass);
    assert_int_equal(r.samples, 2000);
    assert_true(strncmp(r.verdict, "PASS: laplace eps=1 samples=2000 ", 33) == 0);
    assert_int_equal(ldpb_audit_mech("linear", 20.0, NAN, 0, 0.0, NULL, &r, msg, sizeof msg),
                     LDPB_ERANGE);
    assert_non_null(strstr(msg, "epsilon 20 outside"));
    assert_int_equal(ldpb_audit_mech("gauss", 1.0, NAN, 0, 0.0, NULL, &r, msg, sizeof msg),
                     LDPB_EINVAL);
    assert_int_equal(ldpb_audit_mech("--help", 1.0, NAN, 0, 0.0, NULL, &r, msg, sizeof msg),
                     LDPB_EINVAL);
    assert_int_equal(ldpb_audit_mech(NULL, 1.0, NAN, 0, 0.0, NULL, &r, msg, sizeof msg),
                     LDPB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_batch_and_curves),
        cmocka_unit_test(sim_errors),
        cmocka_unit_test(nas_table),
        cmocka_unit_test(policy_steps),
        cmocka_unit_test(ctxpolicy_steps),
        cmocka_unit_test(audit_verdicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
