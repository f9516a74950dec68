/* Poisoning of the local contextual mode (ctxpoison.h; docs/privacy.md, "Poisoning"): crafted
 * reports at the former admission bound L^2 + B^2 + 40 sigma are refused by the present one and
 * the honest devices' regret stays below uniform play; the same reports admitted under the former
 * bound push it above (the control showing the attack is real); reports aimed at the present
 * bound are admitted (the residual threat the docs measure). Also the admitting constructor the
 * measurement uses.
 *
 * Fails on the former bound: ldpb_ctxstat_check then admits the crafted reports of
 * former_bound_reports_refused, and its regret is the control's (1.05 against uniform's 0.61,
 * 200 trials).
 *
 * The regret checks compare means over N = 200 trials (fixed seed) of a trial's honest regret
 * per report and uniform play's in the same rounds. Measured (seed below): 0.19 honest with the
 * crafted reports refused, 1.05 under the former bound, uniform 0.61, so each check has a margin
 * above 0.4. The per-trial difference lies in [-1.5, 1.5] (regrets in [0, 1.5]: best 0.75,
 * means >= -0.75), so by Hoeffding another seed fails a check with probability at most
 * exp(-2 N 0.4^2 / 3^2) = 8e-4 whatever the law; with the measured per-trial standard deviations
 * (0.14 and 0.07, 40 trials) the margin is over 40 standard errors, a normal tail below 1e-300. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ctxpoison.h"
#include "ldp_linucb.h"
#include "ldpb/ctxstat.h"

#define TRIALS 200u

static const uint8_t SEED[LDPB_RNG_SEED_BYTES] = {'p', 'o', 'i', 's', 'o', 'n', 't'};

/* d = 2, 4 actions a round, gap 0.1; epsilon 1, delta 0.1 (sigma 6.67: learnable in 3,030
 * reports); 1% of the reports crafted (30). */
static agg_ctx_poison_config config(void)
{
    agg_ctx_poison_config c;
    memset(&c, 0, sizeof c);
    agg_ldp_linucb_config_init(&c.policy);
    c.policy.d = 2;
    c.policy.horizon = 3030;
    c.policy.epsilon = 1.0;
    c.policy.delta = 0.1;
    c.env = (agg_ctx_env_config){
        .d = 2, .k = 4, .best = 0.75, .gap = 0.1, .reward = AGG_CTX_REWARD_BOUNDED};
    c.fraction = 0.01;
    c.attack = AGG_CTX_POISON_FLIP;
    return c;
}

/* L^2 + B^2 + 40 sigma for the configuration's mechanism (L = B = 1). */
static double former_bound(const agg_ctx_poison_config *c)
{
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, c->policy.d, c->policy.epsilon, c->policy.delta);
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &o), LDPB_OK);
    double b = 2.0 + 40.0 * ldpb_ctxstat_sigma(m);
    ldpb_ctxstat_free(m);
    return b;
}

typedef struct totals {
    double regret, uniform; /* per honest report, mean over trials */
    uint64_t crafted, refused;
} totals;

static totals run_trials(const agg_ctx_poison_config *c)
{
    totals t = {0};
    for (uint64_t i = 0; i < TRIALS; i++) {
        agg_ctx_poison_result r;
        char errmsg[AGG_ERRMSG_MAX] = "";
        ldpb_err err = agg_ctx_poison_run(c, SEED, i, &r, errmsg);
        if (err)
            fail_msg("trial %llu: %s", (unsigned long long)i, errmsg);
        assert_int_equal(r.honest + r.crafted, c->policy.horizon);
        t.regret += r.regret / (double)r.honest / TRIALS;
        t.uniform += r.uniform / (double)r.honest / TRIALS;
        t.crafted += r.crafted;
        t.refused += r.refused;
    }
    print_message("    attack %s, %g%% crafted, admit %g, aim %g: regret %.4f, uniform %.4f, "
                  "%llu of %llu crafted refused\n",
                  agg_ctx_poison_attack_name(c->attack), 100.0 * c->fraction, c->admit, c->aim,
                  t.regret, t.uniform, (unsigned long long)t.refused,
                  (unsigned long long)t.crafted);
    return t;
}

/* The adversarial review's attack: 1% of the reports at the former bound. Refused, every one,
 * and the honest devices learn as if it were not there. */
static void former_bound_reports_refused(void **state)
{
    (void)state;
    agg_ctx_poison_config c = config();
    c.aim = former_bound(&c);
    totals t = run_trials(&c);
    assert_int_equal(t.crafted, 30u * TRIALS);
    assert_int_equal(t.refused, t.crafted);
    assert_true(t.regret < t.uniform);
}

/* The control: the same reports admitted under the former bound push the honest regret above
 * uniform play's. */
static void former_bound_admitted_is_worse_than_uniform(void **state)
{
    (void)state;
    agg_ctx_poison_config c = config();
    c.admit = former_bound(&c);
    totals t = run_trials(&c);
    assert_int_equal(t.refused, 0);
    assert_true(t.regret > t.uniform);
}

/* The residual threat: reports at the present bound are admitted (their effect is measured by
 * bench_ctx_poison and in docs/privacy.md, not asserted here). */
static void present_bound_reports_admitted(void **state)
{
    (void)state;
    agg_ctx_poison_config c = config();
    agg_ctx_poison_result r;
    assert_int_equal(agg_ctx_poison_run(&c, SEED, 0, &r, NULL), LDPB_OK);
    assert_int_equal(r.crafted, 30);
    assert_int_equal(r.refused, 0);
    c.fraction = 0.6;
    char errmsg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_ctx_poison_run(&c, SEED, 0, &r, errmsg), LDPB_ERANGE);
    assert_non_null(strstr(errmsg, "fraction 0.6"));
    c.fraction = 0.01;
    c.attack = (agg_ctx_poison_attack)AGG_CTX_POISON_ATTACKS;
    assert_int_equal(agg_ctx_poison_run(&c, SEED, 0, &r, errmsg), LDPB_EINVAL);
    assert_null(agg_ctx_poison_attack_name(c.attack));
}

/* agg_ldp_linucb_new_admitting: no bound below the mechanism's; values up to the bound on the
 * grid admitted, anything else refused without change. */
static void admitting_constructor(void **state)
{
    (void)state;
    agg_ctx_poison_config c = config();
    agg_ldp_linucb *p = NULL;
    assert_int_equal(agg_ldp_linucb_new(&p, &c.policy, NULL), LDPB_OK);
    const double lim = ldpb_ctxstat_limit(agg_ldp_linucb_mech(p));
    const double g = ldpb_ctxstat_grid(agg_ldp_linucb_mech(p));
    agg_ldp_linucb_free(p);
    char errmsg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_ldp_linucb_new_admitting(&p, &c.policy, lim * 0.5, errmsg), LDPB_ERANGE);
    assert_null(p);
    assert_non_null(strstr(errmsg, "admission bound"));
    assert_int_equal(agg_ldp_linucb_new_admitting(&p, &c.policy, 0.0, errmsg), LDPB_ERANGE);
    assert_int_equal(agg_ldp_linucb_new_admitting(&p, &c.policy, NAN, errmsg), LDPB_ERANGE);
    const double admit = former_bound(&c);
    assert_int_equal(agg_ldp_linucb_new_admitting(&p, &c.policy, admit, errmsg), LDPB_OK);
    const size_t nv = LDPB_CTXSTAT_VALUES(2);
    double z[LDPB_CTXSTAT_VALUES(2)] = {0};
    z[0] = floor(admit / g) * g;
    assert_int_equal(agg_ldp_linucb_add(p, z, nv), LDPB_OK);
    const double bad[] = {z[0] + g, 0.5 * g, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        z[1] = bad[i];
        assert_int_equal(agg_ldp_linucb_add(p, z, nv), LDPB_EPROTO);
    }
    z[1] = 0.0;
    assert_int_equal(agg_ldp_linucb_add(p, z, nv - 1), LDPB_EPROTO);
    assert_int_equal(agg_ldp_linucb_reports(p), 1);
    agg_ldp_linucb_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(former_bound_reports_refused),
        cmocka_unit_test(former_bound_admitted_is_worse_than_uniform),
        cmocka_unit_test(present_bound_reports_admitted),
        cmocka_unit_test(admitting_constructor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
