/* How `ldpb loadgen --experiments N --zipf S` spreads devices over experiments (tools/
 * exp_spread.c): the draws follow P(i) proportional to 1/(i+1)^S (chi-square goodness of fit),
 * the same seed gives the same spread, and the names and limits are those of the aggregator's
 * experiment names. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exp_spread.h"

/* Upper 1e-6 quantiles of the chi-square law (computed from the regularized incomplete gamma
 * function): with a fixed seed each goodness-of-fit check below is deterministic, and over
 * seeds it would fail with probability 1e-6 when the draws follow the law. */
#define CHI2_9_Q1E6  44.81
#define CHI2_99_Q1E6 180.79

/* Pearson's statistic of `draws` seeded draws against the probabilities of `law` (which may
 * be another spread than the one drawn from). */
static double chi2(const tool_exp_spread *drawn, const tool_exp_spread *law, uint64_t seed,
                   uint32_t draws)
{
    uint64_t *count = calloc(drawn->n, sizeof *count);
    assert_non_null(count);
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    for (uint32_t j = 0; j < draws; j++) {
        uint32_t i = tool_exp_spread_draw(drawn, &r);
        assert_true(i < drawn->n);
        count[i]++;
    }
    double x = 0.0;
    for (uint32_t i = 0; i < drawn->n; i++) {
        double e = tool_exp_spread_prob(law, i) * draws;
        x += ((double)count[i] - e) * ((double)count[i] - e) / e;
    }
    free(count);
    return x;
}

static void test_uniform(void **state)
{
    (void)state;
    tool_exp_spread s;
    assert_int_equal(tool_exp_spread_init(&s, 10, 0.0, NULL, NULL, 0), LDPB_OK);
    for (uint32_t i = 0; i < 10; i++)
        assert_true(fabs(tool_exp_spread_prob(&s, i) - 0.1) < 1e-15);
    double x = chi2(&s, &s, 1, 100000);
    print_message("uniform over 10: chi2 %.2f (9 dof)\n", x);
    assert_true(x < CHI2_9_Q1E6);
    tool_exp_spread_free(&s);
}

static void test_zipf(void **state)
{
    (void)state;
    tool_exp_spread s, near;
    assert_int_equal(tool_exp_spread_init(&s, 100, 1.0, NULL, NULL, 0), LDPB_OK);
    /* P(i) = (1/(i+1)) / H_100 */
    double h = 0.0;
    for (int i = 100; i >= 1; i--)
        h += 1.0 / i;
    double sum = 0.0;
    for (uint32_t i = 0; i < 100; i++) {
        assert_true(fabs(tool_exp_spread_prob(&s, i) - 1.0 / ((i + 1.0) * h)) < 1e-12);
        sum += tool_exp_spread_prob(&s, i);
    }
    assert_true(fabs(sum - 1.0) < 1e-12);
    double x = chi2(&s, &s, 2, 200000);
    print_message("zipf 1 over 100: chi2 %.2f (99 dof)\n", x);
    assert_true(x < CHI2_99_Q1E6);
    /* The check has power: the same draws against exponent 0.9 are far outside. */
    assert_int_equal(tool_exp_spread_init(&near, 100, 0.9, NULL, NULL, 0), LDPB_OK);
    x = chi2(&s, &near, 2, 200000);
    print_message("zipf 1 draws against zipf 0.9: chi2 %.2f\n", x);
    assert_true(x > 10 * CHI2_99_Q1E6);
    tool_exp_spread_free(&near);
    tool_exp_spread_free(&s);
}

static void test_steep_and_single(void **state)
{
    (void)state;
    tool_exp_spread s;
    /* Exponent 100: all but 2^-100 of the mass on experiment 0. */
    assert_int_equal(tool_exp_spread_init(&s, 5, 100.0, NULL, NULL, 0), LDPB_OK);
    agg_rand r;
    agg_rand_seed_u64(&r, 3);
    for (int j = 0; j < 10000; j++)
        assert_int_equal(tool_exp_spread_draw(&s, &r), 0);
    tool_exp_spread_free(&s);
    assert_int_equal(tool_exp_spread_init(&s, 1, 2.0, NULL, NULL, 0), LDPB_OK);
    assert_true(tool_exp_spread_prob(&s, 0) == 1.0);
    assert_int_equal(tool_exp_spread_draw(&s, &r), 0);
    tool_exp_spread_free(&s);
}

static void test_same_seed_same_spread(void **state)
{
    (void)state;
    tool_exp_spread s;
    assert_int_equal(tool_exp_spread_init(&s, 1000, 1.2, NULL, NULL, 0), LDPB_OK);
    agg_rand a, b, c;
    agg_rand_seed_u64(&a, 42);
    agg_rand_seed_u64(&b, 42);
    agg_rand_seed_u64(&c, 43);
    int differs = 0;
    for (int j = 0; j < 1000; j++) {
        uint32_t x = tool_exp_spread_draw(&s, &a);
        assert_int_equal(x, tool_exp_spread_draw(&s, &b));
        differs |= x != tool_exp_spread_draw(&s, &c);
    }
    assert_true(differs);
    tool_exp_spread_free(&s);
}

static void test_names(void **state)
{
    (void)state;
    tool_exp_spread s;
    char name[TOOL_EXP_NAME_MAX + 1];
    /* One experiment and no prefix: today's runs, against `default`. */
    assert_int_equal(tool_exp_spread_init(&s, 1, 0.0, NULL, NULL, 0), LDPB_OK);
    assert_true(s.is_default);
    tool_exp_spread_name(&s, 0, name);
    assert_string_equal(name, "default");
    tool_exp_spread_free(&s);
    assert_int_equal(tool_exp_spread_init(&s, 1, 0.0, "exp-", NULL, 0), LDPB_OK);
    assert_false(s.is_default);
    tool_exp_spread_name(&s, 0, name);
    assert_string_equal(name, "exp-0");
    tool_exp_spread_free(&s);
    assert_int_equal(tool_exp_spread_init(&s, 10000, 0.0, NULL, NULL, 0), LDPB_OK);
    tool_exp_spread_name(&s, 0, name);
    assert_string_equal(name, "e0");
    tool_exp_spread_name(&s, 9999, name);
    assert_string_equal(name, "e9999");
    tool_exp_spread_free(&s);

    /* The longest name has 64 bytes: a 59-byte prefix fits 5 digits, a 60-byte one does not. */
    char prefix[61];
    memset(prefix, 'p', 60);
    prefix[60] = '\0';
    char why[128];
    assert_int_equal(tool_exp_spread_init(&s, 100000, 0.0, prefix, why, sizeof why), LDPB_EINVAL);
    assert_non_null(strstr(why, "64 bytes"));
    prefix[59] = '\0';
    assert_int_equal(tool_exp_spread_init(&s, 100000, 0.0, prefix, why, sizeof why), LDPB_OK);
    tool_exp_spread_name(&s, 99999, name);
    assert_int_equal(strlen(name), 64);
    tool_exp_spread_free(&s);
    assert_int_equal(tool_exp_spread_init(&s, 3, 0.0, "Exp", why, sizeof why), LDPB_EINVAL);
    assert_non_null(strstr(why, "a-z"));
    assert_int_equal(tool_exp_spread_init(&s, 3, 0.0, "e/", why, sizeof why), LDPB_EINVAL);
}

static void test_limits(void **state)
{
    (void)state;
    tool_exp_spread s;
    char why[128];
    assert_int_equal(tool_exp_spread_init(&s, 0, 0.0, NULL, why, sizeof why), LDPB_ERANGE);
    assert_int_equal(tool_exp_spread_init(&s, TOOL_EXP_MAX + 1, 0.0, NULL, why, sizeof why),
                     LDPB_ERANGE);
    assert_int_equal(tool_exp_spread_init(&s, 2, -0.5, NULL, why, sizeof why), LDPB_ERANGE);
    assert_int_equal(tool_exp_spread_init(&s, 2, NAN, NULL, why, sizeof why), LDPB_ERANGE);
    assert_int_equal(tool_exp_spread_init(&s, 2, 100.5, NULL, why, sizeof why), LDPB_ERANGE);
    assert_int_equal(tool_exp_spread_init(&s, TOOL_EXP_MAX, 3.0, NULL, why, sizeof why), LDPB_OK);
    tool_exp_spread_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_zipf),
        cmocka_unit_test(test_steep_and_single),
        cmocka_unit_test(test_same_seed_same_spread),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
