/* Poisoning devices in the scalar simulation (poison.h, `ldpb sim --poison-fraction`): the
 * extreme admissible reports of every kind of mechanism, the strategies, that
 * a fraction of 0 changes nothing bit for bit, that poisoned rounds are not counted as honest
 * pulls, that the attack raises the regret it is meant to raise, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/mech_table.h"
#include "poison.h"
#include "sim.h"

#define T_RUN  4000u
#define TRIALS 20u

static agg_env *two_arms(double best, double other)
{
    agg_law laws[2] = {{AGG_LAW_BERNOULLI, other, 0.0}, {AGG_LAW_BERNOULLI, best, 0.0}};
    agg_env *env = NULL;
    assert_int_equal(agg_env_new(&env, laws, 2, NULL), LDPB_OK);
    return env;
}

static void make_cfg(agg_sim_config *c, const char *alg, ldpb_mech_kind mech, const agg_env *env,
                     const uint64_t *cp)
{
    agg_sim_config_init(c);
    c->algorithm = alg;
    c->env = env;
    c->params.horizon = T_RUN;
    c->params.mechanism = mech;
    c->checkpoints = cp;
    c->n_checkpoints = 1;
}

static double run(const agg_sim_config *c, uint64_t trial, uint64_t pulls[2])
{
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {'s', 'p'};
    double regret = -1.0;
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_sim_run_trial(c, seed, trial, &regret, pulls, msg);
    if (err)
        fail_msg("%s: %s", c->algorithm, msg);
    return regret;
}

/* Bits 0 and 1; raw rewards 0 and 1; a Laplace real at the table's edge: admitted, and the next
 * double outwards refused. */
static void extremes(void **state)
{
    (void)state;
    double lo, hi;
    assert_int_equal(agg_poison_extremes(LDPB_MECH_LINEAR, 1.0, &lo, &hi), LDPB_OK);
    assert_true(lo == 0.0 && hi == 1.0);
    assert_int_equal(agg_poison_extremes((ldpb_mech_kind)0, 0.0, &lo, &hi), LDPB_OK);
    assert_true(lo == 0.0 && hi == 1.0);
    const double eps[] = {0.1, 1.0, 10.0};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(agg_poison_extremes(LDPB_MECH_LAPLACE, eps[i], &lo, &hi), LDPB_OK);
        assert_true(fabs(hi - (1.0 + LDPB_MECH_REAL_SCALES_MAX / eps[i])) < 1e-9 * hi);
        assert_true(fabs(lo + LDPB_MECH_REAL_SCALES_MAX / eps[i]) < 1e-9 * hi);
        assert_int_equal(ldpb_mech_check_value(LDPB_MECH_LAPLACE, eps[i], 0, lo, "", NULL),
                         LDPB_OK);
        assert_int_equal(ldpb_mech_check_value(LDPB_MECH_LAPLACE, eps[i], 0, hi, "", NULL),
                         LDPB_OK);
        assert_int_not_equal(
            ldpb_mech_check_value(LDPB_MECH_LAPLACE, eps[i], 0, nextafter(hi, INFINITY), "", NULL),
            LDPB_OK);
        assert_int_not_equal(
            ldpb_mech_check_value(LDPB_MECH_LAPLACE, eps[i], 0, nextafter(lo, -INFINITY), "", NULL),
            LDPB_OK);
    }
    assert_int_equal(
        agg_poison_extremes((ldpb_mech_kind)LDPB_MECH_ID_GAUSSIAN_STATS, 1.0, &lo, &hi),
        LDPB_EINVAL);
    assert_int_equal(agg_poison_extremes(LDPB_MECH_LAPLACE, 0.0, &lo, &hi), LDPB_EINVAL);
    assert_int_equal(agg_poison_extremes(LDPB_MECH_LAPLACE, 1.0, NULL, &hi), LDPB_EINVAL);
}

static void strategies_and_rounds(void **state)
{
    (void)state;
    agg_poison_strategy s;
    assert_int_equal(agg_poison_strategy_parse("promote-worst", &s), LDPB_OK);
    assert_int_equal(s, AGG_POISON_PROMOTE_WORST);
    assert_string_equal(agg_poison_strategy_name(AGG_POISON_DEMOTE_BEST), "demote-best");
    assert_int_equal(agg_poison_strategy_parse("promote", &s), LDPB_EINVAL);
    assert_null(agg_poison_strategy_name((agg_poison_strategy)7));
    agg_poison p = {0.01, AGG_POISON_DEMOTE_BEST};
    assert_true(agg_poison_value(&p, 1, 1, 0, -5.0, 6.0) == -5.0);
    assert_true(agg_poison_value(&p, 0, 1, 0, -5.0, 6.0) == 6.0);
    p.strategy = AGG_POISON_PROMOTE_WORST;
    assert_true(agg_poison_value(&p, 0, 1, 0, -5.0, 6.0) == 6.0);
    assert_true(agg_poison_value(&p, 1, 1, 0, -5.0, 6.0) == -5.0);
    p.fraction = 0.5;
    assert_int_equal(agg_poison_check(&p), LDPB_OK);
    p.fraction = 0.6;
    assert_int_equal(agg_poison_check(&p), LDPB_ERANGE);
    p.fraction = NAN;
    assert_int_equal(agg_poison_check(&p), LDPB_ERANGE);
    p.fraction = 0.1;
    p.strategy = (agg_poison_strategy)0;
    assert_int_equal(agg_poison_check(&p), LDPB_EINVAL);
}

/* Fraction 0 is the unpoisoned run bit for bit, fast-forward included; a poisoned round is not an
 * honest pull. */
static void zero_changes_nothing(void **state)
{
    (void)state;
    agg_env *env = two_arms(0.6, 0.5);
    const uint64_t cp[1] = {T_RUN};
    const struct {
        const char *alg;
        ldpb_mech_kind mech;
    } algs[] = {{"ucb1", 0},
                {"ldp-ucb-b", LDPB_MECH_LINEAR},
                {"ldp-ucb-l", LDPB_MECH_LAPLACE},
                {"dp-se", 0}};
    agg_poison none = {0.0, AGG_POISON_DEMOTE_BEST}, some = {0.1, AGG_POISON_DEMOTE_BEST};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        agg_sim_config c;
        make_cfg(&c, algs[i].alg, algs[i].mech, env, cp);
        uint64_t p0[2], p1[2], p2[2];
        double r0 = run(&c, 3, p0);
        c.poison = &none;
        double r1 = run(&c, 3, p1);
        assert_memory_equal(&r0, &r1, sizeof r0);
        assert_memory_equal(p0, p1, sizeof p0);
        assert_int_equal(p0[0] + p0[1], T_RUN);
        c.poison = &some;
        (void)run(&c, 3, p2);
        /* about 400 of the 4,000 rounds poisoned (sd 19): honest pulls 3,600 +- 200 */
        assert_true(p2[0] + p2[1] > T_RUN - 600 && p2[0] + p2[1] < T_RUN - 200);
    }
    agg_env_free(env);
}

/* The attack does what it is for. Arms 0.6 and 0.5, each round poisoned with probability 0.2,
 * demote-best: the best arm's reports average about 0.8 * 0.6 = 0.48 against the other's
 * 0.8 * 0.5 + 0.2 = 0.6, so UCB1 and LDP-UCB-B settle on the wrong arm and the honest regret
 * approaches 0.1 per honest round (about 320 over the about 3,200 honest rounds). Means of 20
 * trials, fixed seed, against the threshold 210. Measured: ucb1 58.6 (sd 11.9) clean, 281.3
 * (sd 6.4) poisoned; ldp-ucb-b 120.9 (sd 28.3), 292.6 (sd 7.2). The nearest mean is 14 standard
 * errors from the threshold, so another seed fails with probability below 1e-40 under the
 * normal approximation. */
static void attack_raises_regret(void **state)
{
    (void)state;
    agg_env *env = two_arms(0.6, 0.5);
    const uint64_t cp[1] = {T_RUN};
    const struct {
        const char *alg;
        ldpb_mech_kind mech;
    } algs[] = {{"ucb1", 0}, {"ldp-ucb-b", LDPB_MECH_LINEAR}};
    agg_poison some = {0.2, AGG_POISON_DEMOTE_BEST};
    for (size_t i = 0; i < sizeof algs / sizeof algs[0]; i++) {
        agg_sim_config c;
        make_cfg(&c, algs[i].alg, algs[i].mech, env, cp);
        double clean = 0.0, poisoned = 0.0, c2 = 0.0, p2 = 0.0;
        for (uint64_t t = 0; t < TRIALS; t++) {
            c.poison = NULL;
            double r = run(&c, t, NULL);
            clean += r / TRIALS;
            c2 += r * r / TRIALS;
            c.poison = &some;
            r = run(&c, t, NULL);
            poisoned += r / TRIALS;
            p2 += r * r / TRIALS;
        }
        print_message("    %s: clean %.1f (sd %.1f), 20%% demote-best %.1f (sd %.1f)\n",
                      algs[i].alg, clean, sqrt(fmax(c2 - clean * clean, 0.0)), poisoned,
                      sqrt(fmax(p2 - poisoned * poisoned, 0.0)));
        assert_true(clean < 210.0);
        assert_true(poisoned > 210.0);
    }
    agg_env_free(env);
}

static void refusals(void **state)
{
    (void)state;
    agg_env *env = two_arms(0.6, 0.5);
    const uint64_t cp[1] = {T_RUN};
    agg_sim_config c;
    make_cfg(&c, "ucb1", 0, env, cp);
    agg_poison bad = {0.6, AGG_POISON_DEMOTE_BEST};
    c.poison = &bad;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_sim_check(&c, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "poisoning"));
    agg_adv_params ap;
    agg_adv_params_init(&ap, AGG_ADV_DETERMINISTIC, 2, T_RUN);
    agg_adv *adv = NULL;
    assert_int_equal(agg_adv_new(&adv, &ap, NULL), LDPB_OK);
    agg_poison ok = {0.1, AGG_POISON_DEMOTE_BEST};
    c.poison = &ok;
    c.env = NULL;
    c.adv = adv;
    assert_int_equal(agg_sim_check(&c, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "stochastic"));
    agg_adv_free(adv);
    agg_env_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(extremes),
        cmocka_unit_test(strategies_and_rounds),
        cmocka_unit_test(zero_changes_nothing),
        cmocka_unit_test(attack_raises_regret),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
