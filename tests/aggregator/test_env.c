/* Simulated environments (aggregator/sim/src/env.c): laws and their means, the presets of
 * JZL23/RZLS20 and SS19 (docs/sim.md) against worked values, and the list parser's errors.
 *
 * Sample-mean checks use fixed seeds and a z = 5 tolerance with the law's exact standard error:
 * each fails by chance with probability 5.7e-7; with under 40 of them the file's false-failure
 * probability is below 2.5e-5. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "env.h"

static double law_var(const agg_law *l)
{
    switch (l->kind) {
    case AGG_LAW_BERNOULLI:
        return l->a * (1.0 - l->a);
    case AGG_LAW_BETA: {
        double s = l->a + l->b;
        return l->a * l->b / (s * s * (s + 1.0));
    }
    case AGG_LAW_TWOPOINT:
        return 0.25 * (l->b - l->a) * (l->b - l->a);
    case AGG_LAW_UNIFORM:
        return (l->b - l->a) * (l->b - l->a) / 12.0;
    }
    return NAN;
}

/* Every arm's sample mean against its true mean, and every sample inside [0,1]. */
static void check_sample_means(const agg_env *env, uint64_t seed, int n)
{
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    for (uint32_t a = 0; a < agg_env_arms(env); a++) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            double x = agg_env_sample(env, a, &r);
            assert_true(x >= 0.0 && x <= 1.0);
            sum += x;
        }
        double mean = agg_env_mean(env, a);
        double se = sqrt(law_var(agg_env_law(env, a)) / n);
        if (fabs(sum / n - mean) > 5.0 * se + 1e-12) {
            print_error("arm %u (seed %llu): sample mean %.6f, true %.6f, se %.2g\n", a,
                        (unsigned long long)seed, sum / n, mean, se);
            fail();
        }
    }
}

static void laws_and_means(void **state)
{
    (void)state;
    const agg_law laws[] = {
        {AGG_LAW_BERNOULLI, 0.9, 0}, {AGG_LAW_BETA, 4, 1},       {AGG_LAW_BETA, 1, 3},
        {AGG_LAW_BETA, 2.5, 0.7},    {AGG_LAW_TWOPOINT, 0.4, 1}, {AGG_LAW_UNIFORM, 0, 1},
        {AGG_LAW_UNIFORM, 0.2, 0.3}, {AGG_LAW_BERNOULLI, 0, 0},  {AGG_LAW_TWOPOINT, 0.5, 0.5},
    };
    const double means[] = {0.9, 0.8, 0.25, 2.5 / 3.2, 0.7, 0.5, 0.25, 0.0, 0.5};
    agg_env *env = NULL;
    char msg[AGG_ERRMSG_MAX];
    uint32_t k = sizeof laws / sizeof laws[0];
    assert_int_equal(agg_env_new(&env, laws, k, msg), LDPB_OK);
    assert_string_equal(msg, "");
    assert_int_equal(agg_env_arms(env), k);
    for (uint32_t a = 0; a < k; a++)
        assert_true(fabs(agg_env_mean(env, a) - means[a]) < 1e-15);
    assert_true(agg_env_best_mean(env) == 0.9);
    assert_true(isnan(agg_env_mean(env, k)));
    assert_null(agg_env_law(env, k));
    check_sample_means(env, 1, 200000);

    /* Two-point really takes only its two values, each half the time (checked above). */
    agg_rand r;
    agg_rand_seed_u64(&r, 2);
    for (int i = 0; i < 1000; i++) {
        double x = agg_env_sample(env, 4, &r);
        assert_true(x == 0.4 || x == 1.0);
        double b = agg_env_sample(env, 0, &r);
        assert_true(b == 0.0 || b == 1.0);
    }
    agg_env_free(env);
    agg_env_free(NULL);
}

static void mixed_preset_is_section_9_1(void **state)
{
    (void)state;
    agg_env *env = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_env_preset(&env, "mixed", 0, msg), LDPB_OK);
    assert_int_equal(agg_env_arms(env), 20);
    /* 0.9 Bernoulli; five Beta(4,1); five two-point {0.4, 1}; five Bernoulli 0.6; four U[0,1]. */
    for (uint32_t a = 0; a < 20; a++) {
        const agg_law *l = agg_env_law(env, a);
        if (a == 0) {
            assert_int_equal(l->kind, AGG_LAW_BERNOULLI);
            assert_true(l->a == 0.9);
        } else if (a <= 5) {
            assert_int_equal(l->kind, AGG_LAW_BETA);
            assert_true(l->a == 4 && l->b == 1);
        } else if (a <= 10) {
            assert_int_equal(l->kind, AGG_LAW_TWOPOINT);
            assert_true(l->a == 0.4 && l->b == 1.0);
        } else if (a <= 15) {
            assert_int_equal(l->kind, AGG_LAW_BERNOULLI);
            assert_true(l->a == 0.6);
        } else {
            assert_int_equal(l->kind, AGG_LAW_UNIFORM);
            assert_true(l->a == 0 && l->b == 1);
        }
    }
    static const double level[] = {0.9, 0.8, 0.7, 0.6, 0.5};
    for (uint32_t a = 0; a < 20; a++)
        assert_true(fabs(agg_env_mean(env, a) - level[(a + 4) / 5]) < 1e-15);
    check_sample_means(env, 3, 50000);
    /* E[X^2] of the laws (0.9, 2/3, 0.58, 0.6, 1/3; docs/derivations.md 5) through the variance. */
    static const double ex2[] = {0.9, 2.0 / 3.0, 0.58, 0.6, 1.0 / 3.0};
    for (int g = 0; g < 5; g++) {
        uint32_t a = g == 0 ? 0 : (uint32_t)(1 + 5 * (g - 1));
        double m = agg_env_mean(env, a);
        assert_true(fabs(law_var(agg_env_law(env, a)) + m * m - ex2[g]) < 1e-12);
    }
    agg_env_free(env);

    assert_int_equal(agg_env_preset(&env, "mixed-bernoulli", 20, msg), LDPB_OK);
    for (uint32_t a = 0; a < 20; a++) {
        assert_int_equal(agg_env_law(env, a)->kind, AGG_LAW_BERNOULLI);
        assert_true(fabs(agg_env_mean(env, a) - level[(a + 4) / 5]) < 1e-15);
    }
    agg_env_free(env);

    assert_int_equal(agg_env_preset(&env, "mixed", 5, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "20 arms"));
    assert_null(env);
    assert_int_equal(agg_env_preset(&env, "c9", 5, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "unknown preset 'c9'"));
    assert_int_equal(agg_env_preset(&env, "c2", 1, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "k in [2,"));
}

static void ss19_means_match_the_table(void **state)
{
    (void)state;
    /* SS19 sec. 5's C2-C4 formulas (docs/sim.md) worked out (6 decimals where not exact). */
    static const double c2_3[] = {0.75, 0.5, 0.25}, c3_3[] = {0.75, 0.375, 0.25},
                        c4_3[] = {0.75, 0.625, 0.25};
    static const double c2_5[] = {0.75, 0.625, 0.5, 0.375, 0.25},
                        c3_5[] = {0.75, 0.53125, 0.375, 0.28125, 0.25},
                        c4_5[] = {0.75, 0.71875, 0.625, 0.46875, 0.25};
    static const double c2_10[] = {0.75,    .694444, .638889, .583333, .527778,
                                   .472222, .416667, .361111, .305556, 0.25};
    static const double c3_10[] = {0.75,    .645062, .552469, .472222, .404321,
                                   .348765, .305556, .274691, .256173, 0.25};
    static const double c4_10[] = {0.75,    .743827, .725309, .694444, .651235,
                                   .595679, .527778, .447531, .354938, 0.25};
    static const struct {
        agg_ss19_setting s;
        uint32_t k;
        const double *want;
    } rows[] = {
        {AGG_SS19_C2, 3, c2_3},   {AGG_SS19_C3, 3, c3_3},   {AGG_SS19_C4, 3, c4_3},
        {AGG_SS19_C2, 5, c2_5},   {AGG_SS19_C3, 5, c3_5},   {AGG_SS19_C4, 5, c4_5},
        {AGG_SS19_C2, 10, c2_10}, {AGG_SS19_C3, 10, c3_10}, {AGG_SS19_C4, 10, c4_10},
    };
    double got[10];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_int_equal(agg_env_ss19_means(rows[i].s, rows[i].k, got), LDPB_OK);
        for (uint32_t a = 0; a < rows[i].k; a++)
            if (fabs(got[a] - rows[i].want[a]) > 5.1e-7) {
                print_error("C%d K=%u arm %u: %.7f, table %.6f\n", (int)rows[i].s, rows[i].k, a + 1,
                            got[a], rows[i].want[a]);
                fail();
            }
    }
    double c1[20];
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C1, 20, c1), LDPB_OK);
    assert_true(c1[0] == 0.75);
    for (int a = 1; a < 20; a++)
        assert_true(c1[a] == 0.7);
    /* K = 20 rows of the table, as formulas. */
    double c2[20], c3[20], c4[20];
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C2, 20, c2), LDPB_OK);
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C3, 20, c3), LDPB_OK);
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C4, 20, c4), LDPB_OK);
    for (int i = 1; i <= 20; i++) {
        assert_true(fabs(c2[i - 1] - (0.75 - 0.5 * (i - 1) / 19.0)) < 1e-15);
        assert_true(fabs(c3[i - 1] - (0.25 + 0.5 * (i - 20) * (i - 20) / 361.0)) < 1e-15);
        assert_true(fabs(c4[i - 1] - (0.75 - 0.5 * (i - 1) * (i - 1) / 361.0)) < 1e-15);
    }
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C2, 1, c2), LDPB_ERANGE);
    assert_int_equal(agg_env_ss19_means((agg_ss19_setting)7, 5, c2), LDPB_EINVAL);
    assert_int_equal(agg_env_ss19_means(AGG_SS19_C2, 5, NULL), LDPB_EINVAL);

    /* The presets are these means, every arm Bernoulli; K = 0 is the paper's K = 5. */
    agg_env *env = NULL;
    assert_int_equal(agg_env_preset(&env, "c3", 0, NULL), LDPB_OK);
    assert_int_equal(agg_env_arms(env), 5);
    for (uint32_t a = 0; a < 5; a++) {
        assert_int_equal(agg_env_law(env, a)->kind, AGG_LAW_BERNOULLI);
        assert_true(agg_env_mean(env, a) == c3_5[a]);
    }
    assert_true(agg_env_best_mean(env) == 0.75);
    check_sample_means(env, 4, 100000);
    agg_env_free(env);
}

static void parse_list(void **state)
{
    (void)state;
    agg_env *env = NULL, *ref = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_env_parse(&env,
                                   " bernoulli : 0.9 , beta:4:1 * 2,twopoint:0.4:1,"
                                   "uniform:0:1*3 ,bernoulli:1e-1",
                                   msg),
                     LDPB_OK);
    assert_string_equal(msg, "");
    assert_int_equal(agg_env_arms(env), 8);
    static const double means[] = {0.9, 0.8, 0.8, 0.7, 0.5, 0.5, 0.5, 0.1};
    for (uint32_t a = 0; a < 8; a++)
        assert_true(fabs(agg_env_mean(env, a) - means[a]) < 1e-15);
    agg_env_free(env);

    /* The parsed mixed list is the preset. */
    assert_int_equal(
        agg_env_parse(
            &env, "bernoulli:0.9,beta:4:1*5,twopoint:0.4:1*5,bernoulli:0.6*5,uniform:0:1*4", msg),
        LDPB_OK);
    assert_int_equal(agg_env_preset(&ref, "mixed", 20, msg), LDPB_OK);
    for (uint32_t a = 0; a < 20; a++) {
        const agg_law *x = agg_env_law(env, a), *y = agg_env_law(ref, a);
        assert_true(x->kind == y->kind && x->a == y->a && x->b == y->b);
    }
    agg_env_free(env);
    agg_env_free(ref);

    static const struct {
        const char *spec;
        ldpb_err err;
        const char *msg;
    } bad[] = {
        {"", LDPB_EINVAL, "empty arm list"},
        {"   ", LDPB_EINVAL, "empty arm list"},
        {"gauss:0.5", LDPB_EINVAL, "item 1 ('gauss:0.5'): unknown law 'gauss'"},
        {"bernoulli:0.5,,bernoulli:0.2", LDPB_EINVAL, "item 2 (''): expected a law"},
        {"bernoulli:0.5,", LDPB_EINVAL, "item 2 (''): expected a law"},
        {"bernoulli", LDPB_EINVAL, "bernoulli needs 1 parameter (bernoulli:P), got 0"},
        {"beta:4", LDPB_EINVAL, "item 1 ('beta:4'): beta needs 2 parameters (beta:A:B), got 1"},
        {"bernoulli:0.5:0.2", LDPB_EINVAL, "bernoulli needs 1 parameter"},
        {"beta:1:2:3", LDPB_EINVAL, "too many parameters, expected beta:A:B"},
        {"bernoulli:abc", LDPB_EINVAL, "bad number, expected bernoulli:P"},
        {"bernoulli:nan", LDPB_EINVAL, "bad number"},
        {"bernoulli:inf", LDPB_EINVAL, "bad number"},
        {"bernoulli:1e999", LDPB_EINVAL, "bad number"},
        {"bernoulli:0.5x", LDPB_EINVAL, "unexpected 'x'"},
        {"bernoulli:0.5*", LDPB_EINVAL, "expected a repeat count after '*'"},
        {"bernoulli:0.5*0", LDPB_ERANGE, "repeat count outside [1, 16777216]"},
        {"bernoulli:0.5*99999999999999999999", LDPB_ERANGE, "repeat count outside"},
        {"bernoulli:0.5*16777216,bernoulli:0.1", LDPB_ERANGE, "item 2 ('bernoulli:0.1'): more"},
        {"bernoulli:1.5", LDPB_ERANGE, "item 1 ('bernoulli:1.5'): bernoulli p 1.5 outside [0, 1]"},
        {"bernoulli:-0.1", LDPB_ERANGE, "outside [0, 1]"},
        {"beta:0:1", LDPB_ERANGE, "beta parameters 0, 1 must both be finite and > 0"},
        {"twopoint:0.6:0.4", LDPB_ERANGE, "twopoint needs 0 <= lo <= hi <= 1, got 0.6, 0.4"},
        {"uniform:0:2", LDPB_ERANGE, "item 1 ('uniform:0:2'): uniform needs 0 <= lo <= hi <= 1"},
        {"bernoulli:0.5,uniform:-1:0", LDPB_ERANGE, "item 2 ('uniform:-1:0')"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ldpb_err err = agg_env_parse(&env, bad[i].spec, msg);
        if (err != bad[i].err || !strstr(msg, bad[i].msg)) {
            print_error("'%s': got %s '%s', want %s '%s'\n", bad[i].spec, ldpb_errname(err), msg,
                        ldpb_errname(bad[i].err), bad[i].msg);
            fail();
        }
        assert_null(env);
    }
    assert_int_equal(agg_env_parse(&env, NULL, msg), LDPB_EINVAL);
    assert_int_equal(agg_env_parse(NULL, "bernoulli:0.5", msg), LDPB_EINVAL);
    assert_int_equal(agg_env_parse(&env, "bernoulli:0.5", NULL), LDPB_OK);
    agg_env_free(env);
}

static void new_refuses_bad_laws(void **state)
{
    (void)state;
    agg_env *env = NULL;
    char msg[AGG_ERRMSG_MAX];
    agg_law ok = {AGG_LAW_BERNOULLI, 0.5, 0};
    assert_int_equal(agg_env_new(&env, &ok, 0, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "k 0 outside [1, 16777216]"));
    assert_int_equal(agg_env_new(&env, NULL, 1, msg), LDPB_EINVAL);
    agg_law laws[2] = {ok, {AGG_LAW_BETA, 2, NAN}};
    assert_int_equal(agg_env_new(&env, laws, 2, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "arm 2: beta parameter is NaN"));
    laws[1] = (agg_law){(agg_law_kind)42, 0, 0};
    assert_int_equal(agg_env_new(&env, laws, 2, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "arm 2: unknown law kind 42"));
    laws[1] = (agg_law){AGG_LAW_BETA, 1, INFINITY};
    assert_int_equal(agg_env_new(&env, laws, 2, msg), LDPB_ERANGE);
    laws[1] = (agg_law){AGG_LAW_UNIFORM, NAN, 1};
    assert_int_equal(agg_env_new(&env, laws, 2, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "arm 2: uniform bound is NaN"));
    assert_null(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(laws_and_means),
        cmocka_unit_test(mixed_preset_is_section_9_1),
        cmocka_unit_test(ss19_means_match_the_table),
        cmocka_unit_test(parse_list),
        cmocka_unit_test(new_refuses_bad_laws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
