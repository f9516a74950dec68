/* The robust statistics of `ldpb sim` (aggregator/sim/src/report.c) against values computed by
 * hand, the epsilon the tossou2017 presets give dp-exp3-lap, and the presets' plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"
#include "report.h"

/* Median of means: 1..12 in 4 groups of 3 -> means 2, 5, 8, 11 -> median (5 + 8)/2 = 6.5; with
 * 3 groups of 4 -> 2.5, 6.5, 10.5 -> 6.5; 10 values in 4 groups of 3, 3, 2, 2 (trial order):
 * {1,2,100}, {4,5,6}, {7,8}, {9,10} -> 34.33, 5, 7.5, 9.5 -> (7.5 + 9.5)/2 = 8.5; more groups
 * than values: every value its own group, the median. A stride picks every other value. */
static void median_of_means(void **state)
{
    (void)state;
    double x[12], scratch[12];
    for (int i = 0; i < 12; i++)
        x[i] = i + 1;
    assert_true(simstat_median_of_means(x, 12, 1, 4, scratch) == 6.5);
    assert_true(simstat_median_of_means(x, 12, 1, 3, scratch) == 6.5);
    double y[10] = {1, 2, 100, 4, 5, 6, 7, 8, 9, 10};
    assert_true(simstat_median_of_means(y, 10, 1, 4, scratch) == 8.5);
    assert_true(simstat_median_of_means(y, 10, 1, 24, scratch) == 6.5);
    assert_true(simstat_median_of_means(x, 6, 2, 2, scratch) == 6.0); /* {1,3,5},{7,9,11} */
}

/* GMD of 1, 2, 4: pairs |1-2| + |1-4| + |2-4| = 6 over 3 pairs = 2; the formula
 * 2/(3*2) * ((-2)*1 + 0*2 + 2*4) = 2 too. Split around 3 of {1, 2, 4, 7, 3}: below {1, 2, 3}
 * -> (1 + 2 + 1)/3 = 4/3; above {3, 4, 7} -> (1 + 4 + 3)/3 = 8/3; the center value is in both. */
static void gini_mean_difference(void **state)
{
    (void)state;
    double s[3] = {1, 2, 4};
    assert_true(fabs(simstat_gmd_sorted(s, 3) - 2.0) < 1e-15);
    assert_true(simstat_gmd_sorted(s, 1) == 0.0);
    double x[5] = {1, 2, 4, 7, 3}, scratch[5], lo, hi;
    simstat_gmd_split(x, 5, 1, 3.0, scratch, &lo, &hi);
    assert_true(fabs(lo - 4.0 / 3.0) < 1e-15);
    assert_true(fabs(hi - 8.0 / 3.0) < 1e-15);
    double same[4] = {5, 5, 5, 5};
    simstat_gmd_split(same, 4, 1, 5.0, scratch, &lo, &hi);
    assert_true(lo == 0.0 && hi == 0.0);
}

/* EXP3-tau's epsilon at T = 2^18, tau = 64, delta' = 1/T: 4.99 + 1.01 = 6.003 (hand-computed from
 * the formula in plan.h); the preset runs dp-exp3-lap at 6 (rounded down to 0.01). */
static void td17_presets(void **state)
{
    (void)state;
    assert_true(fabs(simplan_td17_epsilon(262144) - 6.003181) < 1e-6);
    const char *advs[] = {"deterministic", "stochastic", "fully-oblivious", "oblivious",
                          "switching"};
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "tossou2017-%s", advs[i]);
        simplan_opts o = {0};
        o.preset = name;
        simplan plan;
        char msg[SIMPLAN_ERRMSG_MAX];
        if (simplan_build(&plan, &o, msg) != LDPB_OK) {
            print_error("%s: %s\n", name, msg);
            fail();
        }
        assert_int_equal(plan.horizon, 262144);
        assert_int_equal(plan.trials, 720);
        assert_int_equal(plan.n_inst, 1);
        assert_non_null(plan.inst[0].adv);
        assert_null(plan.inst[0].env);
        assert_int_equal(plan.inst[0].k, 4);
        assert_int_equal(plan.n_cfg, 3);
        assert_string_equal(plan.cfg[0].ops->name, "exp3");
        assert_string_equal(plan.cfg[1].ops->name, "dp-exp3-lap");
        assert_string_equal(plan.cfg[1].eps_text, "6");
        assert_string_equal(plan.cfg[2].ops->name, "exp3-tau");
        simplan_fini(&plan);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(median_of_means),
        cmocka_unit_test(gini_mean_difference),
        cmocka_unit_test(td17_presets),
    };
    return cmocka_run_group_tests_name("simstats", tests, NULL, NULL);
}
