/* The EXP3 family under delayed feedback (exp3_family.c, observe_with_propensity): a report
 * that arrives after other reports moved the distribution updates with the probability of its own
 * choice, so its importance weight is the one EXP3's unbiased estimate needs; the generic wrapper
 * refuses a probability outside (0, 1]; a probability below gamma / K is raised to it; EXP3-tau and
 * the policies without the op observe as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "exp3_family.h"
#include "policy.h"

#define K 4

static agg_policy *make(const char *name)
{
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = K;
    c.horizon = 10000;
    c.gamma = 0.1;
    if (strcmp(name, "ldp-exp3-lap") == 0)
        c.mechanism = LDPB_MECH_LAPLACE;
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_policy_new(&p, name, &c, msg), LDPB_OK);
    return p;
}

/* G_i, EXP3's cumulative importance-weighted gain of arm i (describe: G_i / updates). */
static double gain_sum(const agg_policy *p, uint32_t arm)
{
    agg_arm_status st[K];
    uint64_t updates = 0;
    assert_int_equal(agg_policy_describe(p, st, K), LDPB_OK);
    agg_exp3_params(p, NULL, NULL, NULL, &updates, NULL);
    return st[arm].estimate * (double)updates;
}

static void late_report_uses_its_choice(void **state)
{
    (void)state;
    const char *names[] = {"exp3", "ldp-exp3-lap"};
    for (int n = 0; n < 2; n++) {
        agg_policy *p = make(names[n]);
        agg_rand r;
        agg_rand_seed_u64(&r, 9);
        agg_policy_env env = {&r, NULL};
        /* arm 0 is chosen; then ten reports of arm 1 arrive first and lower arm 0's probability */
        double p0 = 0.0, now[K];
        uint32_t a = 0;
        do {
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
        } while (a != 0);
        assert_int_equal(agg_policy_propensity(p, &p0), LDPB_OK);
        for (int i = 0; i < 10; i++)
            assert_int_equal(agg_policy_observe_with_propensity(p, &env, 1, 1.0, 0.25), LDPB_OK);
        assert_int_equal(agg_exp3_probs(p, now, K), LDPB_OK);
        assert_true(now[0] < 0.9 * p0);
        double g = 1.0, before = gain_sum(p, 0);
        if (strcmp(names[n], "ldp-exp3-lap") == 0) {
            double b = 0.0;
            agg_exp3_params(p, NULL, &b, NULL, NULL, NULL);
            g = (1.0 + b) / (1.0 + 2.0 * b); /* a report of 1, rescaled */
        }
        assert_int_equal(agg_policy_observe_with_propensity(p, &env, 0, 1.0, p0), LDPB_OK);
        double got = gain_sum(p, 0) - before;
        /* g / p0, not g / p_now: the two differ by over 10% here */
        assert_true(fabs(got - g / p0) <= 1e-9 * (g / p0));
        assert_true(fabs(got - g / now[0]) > 0.05 * (g / p0));
        agg_policy_free(p);
    }
}

/* observe() keeps the simulator's rule, the probability at observation time. */
static void observe_uses_the_current_probability(void **state)
{
    (void)state;
    agg_policy *p = make("exp3");
    agg_rand r;
    agg_rand_seed_u64(&r, 3);
    agg_policy_env env = {&r, NULL};
    for (int i = 0; i < 10; i++)
        assert_int_equal(agg_policy_observe(p, &env, 1, 1.0), LDPB_OK);
    double now[K];
    assert_int_equal(agg_exp3_probs(p, now, K), LDPB_OK);
    double before = gain_sum(p, 0);
    assert_int_equal(agg_policy_observe(p, &env, 0, 1.0), LDPB_OK);
    assert_true(fabs(gain_sum(p, 0) - before - 1.0 / now[0]) <= 1e-9 / now[0]);
    agg_policy_free(p);
}

static void refusals_and_floor(void **state)
{
    (void)state;
    agg_policy *p = make("exp3");
    agg_rand r;
    agg_rand_seed_u64(&r, 5);
    agg_policy_env env = {&r, NULL};
    const double bad[] = {0.0, -0.1, 1.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(agg_policy_observe_with_propensity(p, &env, 0, 1.0, bad[i]), LDPB_EINVAL);
    uint64_t updates = 1;
    agg_exp3_params(p, NULL, NULL, NULL, &updates, NULL);
    assert_int_equal(updates, 0);
    /* 1e-6 is below gamma / K = 0.025, the least probability of any choice: weighted as 0.025 */
    assert_int_equal(agg_policy_observe_with_propensity(p, &env, 2, 1.0, 1e-6), LDPB_OK);
    assert_true(fabs(gain_sum(p, 2) - 1.0 / 0.025) <= 1e-9 / 0.025);
    agg_policy_free(p);

    /* a policy without the op observes as observe() would */
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = K;
    agg_policy *u = NULL, *v = NULL;
    assert_int_equal(agg_policy_new(&u, "ucb1", &c, NULL), LDPB_OK);
    assert_int_equal(agg_policy_new(&v, "ucb1", &c, NULL), LDPB_OK);
    assert_int_equal(agg_policy_observe_with_propensity(u, &env, 1, 0.75, 0.5), LDPB_OK);
    assert_int_equal(agg_policy_observe(v, &env, 1, 0.75), LDPB_OK);
    uint8_t bu[256], bv[256];
    size_t lu = 0, lv = 0;
    assert_int_equal(agg_policy_save(u, bu, sizeof bu, &lu), LDPB_OK);
    assert_int_equal(agg_policy_save(v, bv, sizeof bv, &lv), LDPB_OK);
    assert_int_equal(lu, lv);
    assert_memory_equal(bu, bv, lu);
    agg_policy_free(u);
    agg_policy_free(v);
}

/* EXP3-tau feeds its block with the probability of the block's draw, with or without a
 * recorded one: the two routes give the same state. */
static void exp3_tau_ignores_the_recorded_probability(void **state)
{
    (void)state;
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = K;
    c.horizon = 1000;
    c.tau = 3;
    agg_policy *p = NULL, *q = NULL;
    assert_int_equal(agg_policy_new(&p, "exp3-tau", &c, NULL), LDPB_OK);
    assert_int_equal(agg_policy_new(&q, "exp3-tau", &c, NULL), LDPB_OK);
    agg_rand rp, rq;
    agg_rand_seed_u64(&rp, 11);
    agg_rand_seed_u64(&rq, 11);
    agg_policy_env ep = {&rp, NULL}, eq = {&rq, NULL};
    for (int t = 0; t < 60; t++) {
        uint32_t a, b;
        assert_int_equal(agg_policy_choose(p, &ep, &a), LDPB_OK);
        assert_int_equal(agg_policy_choose(q, &eq, &b), LDPB_OK);
        assert_int_equal(a, b);
        double g = a == 1 ? 0.9 : 0.2;
        assert_int_equal(agg_policy_observe_with_propensity(p, &ep, a, g, 0.5), LDPB_OK);
        assert_int_equal(agg_policy_observe(q, &eq, a, g), LDPB_OK);
    }
    uint8_t bp[512], bq[512];
    size_t lp = 0, lq = 0;
    assert_int_equal(agg_policy_save(p, bp, sizeof bp, &lp), LDPB_OK);
    assert_int_equal(agg_policy_save(q, bq, sizeof bq, &lq), LDPB_OK);
    assert_int_equal(lp, lq);
    assert_memory_equal(bp, bq, lp);
    agg_policy_free(p);
    agg_policy_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(late_report_uses_its_choice),
        cmocka_unit_test(observe_uses_the_current_probability),
        cmocka_unit_test(refusals_and_floor),
        cmocka_unit_test(exp3_tau_ignores_the_recorded_probability),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
