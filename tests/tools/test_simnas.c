/* The stopping experiment of `ldpb sim --preset sajed2019-nas` (aggregator/sim/src/nas.c): the rate
 * of Sajed & Sheffet 2019 Thm 3.3, samples to stop on a tiny grid within a stated band of that
 * rate, the failure rate of the (alpha, beta) stopping rules against beta, determinism across
 * thread counts, and the grid's refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nas.h"

static void build(simnas_plan *p, const char *algs, const char *gaps, const char *eps,
                  const char *trials)
{
    simnas_opts o = {algs, eps, gaps, trials};
    char msg[SIMPLAN_ERRMSG_MAX];
    ldpb_err err = simnas_build(p, &o, msg);
    if (err)
        print_error("%s\n", msg);
    assert_int_equal(err, LDPB_OK);
}

/* The theorem's t0 + t1 + t2 by hand at gap 0.1, eps 1, alpha 0.5, beta 0.05:
 * L = ln(ln 20 / 0.05) = 4.09290, t0 = L / 0.0025 = 1637.16, t1 = L / 0.1 = 40.929,
 * t2 = ln 20 / 0.05 = 59.915. */
static void rate_matches_theorem_3_3(void **state)
{
    (void)state;
    double l = log(log(20.0) / 0.05);
    double want = l / 0.0025 + l / 0.1 + log(20.0) / 0.05;
    assert_true(fabs(simnas_rate(0.1, 1, 0.5, 0.05) - want) < 1e-9 * want);
    assert_true(fabs(want - 1738.0) < 0.1);
    simnas_plan p;
    build(&p, "dp-nas", "0.1", "1", "1");
    assert_int_equal(p.cell[0].budget, (uint64_t)ceil(2000 * want));
    simnas_fini(&p);
}

static simnas_stats *run(const simnas_plan *p, const char *seed_text, unsigned threads,
                         simnas_trial **trials_out)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    simnas_trial *t = calloc(p->n_cell * (size_t)p->trials, sizeof *t);
    simnas_stats *s = calloc(p->n_cell, sizeof *s);
    assert_non_null(t);
    assert_non_null(s);
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(simnas_run(p, seed, threads, t, msg), LDPB_OK);
    assert_int_equal(simnas_reduce(p, t, s), LDPB_OK);
    if (trials_out)
        *trials_out = t;
    else
        free(t);
    return s;
}

/* Gaps {0.2, 0.4, 0.8} x eps {0.25, 1}, 40 trials, seed "nas-band". Band: every cell's mean
 * samples within [15, 80] x (t0 + t1 + t2) and within [0.6, 1.6] x C for DP-NAS ([0.4, 2.5] for
 * the exponential rule, whose halts are powers of two), and DP-NAS's log-log slope in 1/gap
 * within 0.25 of the rate's. Measured at the paper-scale run (results/sajed2019-nas): C = 38
 * (DP-NAS) and 28 (exponential), every cell within [0.83, 1.16] x C for DP-NAS. A DP-NAS trial's
 * samples have a coefficient of variation near 0.1, so a 40-trial mean is within 5% of its
 * expectation except with probability below 1e-6; the exponential rule's cells can flip between
 * two powers of two, which the wider band allows. A rule off by a constant factor in h_t or c_t
 * (or testing at the wrong times) leaves the band. */
static void samples_follow_the_rate(void **state)
{
    (void)state;
    simnas_plan p;
    build(&p, "dp-nas,dp-exp-nas", "0.2,0.4,0.8", "0.25,1", "40");
    simnas_trial *t;
    simnas_stats *s = run(&p, "nas-band", 2, &t);
    for (size_t a = 0; a < 2; a++) {
        double lo, hi, cst = simnas_constant(&p, s, a, &lo, &hi);
        print_message("%s: C = %.3g, spread [%.3g, %.3g]\n", p.cell[a * 6].algorithm, cst, lo, hi);
        for (size_t i = 0; i < 6; i++) {
            assert_true(s[a * 6 + i].ratio >= 15 && s[a * 6 + i].ratio <= 80);
        }
        if (a == 0) {
            assert_true(lo >= 0.6 && hi <= 1.6);
            for (size_t e = 0; e < 2; e++) {
                double m, th;
                simnas_slope_gap(&p, s, a, e, &m, &th);
                print_message("  slope in 1/gap at eps %s: %.3f (theory %.3f)\n",
                              p.cell[e].eps_text, m, th);
                assert_true(fabs(m - th) <= 0.25);
            }
        } else {
            assert_true(lo >= 0.4 && hi <= 2.5);
        }
    }
    /* The exponential rule tests only at t = 2^k. */
    for (size_t c = 6; c < 12; c++)
        for (uint64_t i = 0; i < p.trials; i++) {
            uint64_t n = t[c * p.trials + i].samples;
            assert_true(n >= 2 && (n & (n - 1)) == 0);
        }
    free(t);
    free(s);
    simnas_fini(&p);
}

/* The (alpha, beta) guarantee: a halt outside alpha |mu| (or no halt by t_U) has probability at
 * most beta = 0.05 per trial. Pooled over 2 x 2 x 2 cells x 60 trials = 480 trials, Hoeffding
 * gives P(rate >= beta + 0.1) <= exp(-2 480 0.01) < 7e-5 when the guarantee holds (and the true
 * failure probability is far below beta: none in 32000 trials at paper scale). */
static void failures_within_beta(void **state)
{
    (void)state;
    simnas_plan p;
    build(&p, "dp-nas,dp-exp-nas", "0.4,0.8", "0.25,1", "60");
    simnas_stats *s = run(&p, "nas-beta", 2, NULL);
    uint64_t fails = 0, wrong = 0, n = 0;
    for (size_t c = 0; c < p.n_cell; c++) {
        fails += p.trials - s[c].halted + s[c].inexact;
        wrong += s[c].wrong;
        n += p.trials;
        assert_true(s[c].wrong <= p.trials - s[c].halted + s[c].inexact);
        assert_true(s[c].failure_hi > s[c].failure);
    }
    assert_true((double)fails / (double)n <= p.beta + 0.1);
    assert_true((double)wrong / (double)n <= p.beta + 0.1);
    free(s);
    simnas_fini(&p);
}

/* Each trial depends on (seed, cell, trial) only. */
static void same_results_for_any_thread_count(void **state)
{
    (void)state;
    simnas_plan p;
    build(&p, "dp-nas,dp-exp-nas", "0.4,0.8", "0.5,1", "12");
    simnas_trial *a, *b;
    simnas_stats *s1 = run(&p, "threads", 1, &a), *s2 = run(&p, "threads", 3, &b);
    for (size_t i = 0; i < p.n_cell * (size_t)p.trials; i++) {
        assert_int_equal(a[i].samples, b[i].samples);
        assert_int_equal(a[i].halted, b[i].halted);
        assert_memory_equal(&a[i].estimate, &b[i].estimate, sizeof a[i].estimate);
    }
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    FILE *f = open_memstream(&x, &nx), *g = open_memstream(&y, &ny);
    assert_int_equal(simnas_write_csv(&p, s1, f), 0);
    assert_int_equal(simnas_write_csv(&p, s2, g), 0);
    fclose(f);
    fclose(g);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    assert_true(strncmp(x, SIMNAS_HEADER "\n", strlen(SIMNAS_HEADER) + 1) == 0);
    free(x);
    free(y);
    free(a);
    free(b);
    free(s1);
    free(s2);
    simnas_fini(&p);
}

static void grid_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *algs, *gaps, *eps, *trials;
        ldpb_err want;
        const char *msg;
    } cases[] = {
        {NULL, "0.5,1", NULL, NULL, LDPB_ERANGE, "--gaps: 1 outside [0.001, 1)"},
        {NULL, "0", NULL, NULL, LDPB_ERANGE, "--gaps: 0 outside [0.001, 1)"},
        {NULL, "0.1,x", NULL, NULL, LDPB_EINVAL, "--gaps: 'x' is not a finite number"},
        {NULL, "0.1,0.1", NULL, NULL, LDPB_EINVAL, "--gaps: 0.1 and 0.1 are the same value"},
        {NULL, "0.1,", NULL, NULL, LDPB_EINVAL, "--gaps '0.1,' has an empty item"},
        {NULL, NULL, "0", NULL, LDPB_ERANGE, "--epsilons: 0 outside (0,"},
        {"dp-se", NULL, NULL, NULL, LDPB_EINVAL, "--algorithms: 'dp-se' is not a stopping rule"},
        {"dp-nas,dp-nas", NULL, NULL, NULL, LDPB_EINVAL, "--algorithms: dp-nas given twice"},
        {NULL, NULL, NULL, "0", LDPB_ERANGE, "--trials 0 outside [1, 1e6]"},
        {NULL, NULL, NULL, "ten", LDPB_EINVAL, "--trials 'ten' is not a whole number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        simnas_plan p;
        simnas_opts o = {cases[i].algs, cases[i].eps, cases[i].gaps, cases[i].trials};
        char msg[SIMPLAN_ERRMSG_MAX] = "";
        ldpb_err err = simnas_build(&p, &o, msg);
        if (err != cases[i].want || strncmp(msg, cases[i].msg, strlen(cases[i].msg)) != 0)
            print_error("case %zu: %d '%s'\n", i, (int)err, msg);
        assert_int_equal(err, cases[i].want);
        assert_true(strncmp(msg, cases[i].msg, strlen(cases[i].msg)) == 0);
        simnas_fini(&p);
    }
    /* The defaults: 2 rules x 5 gaps x 4 epsilons, 1000 trials. */
    simnas_plan p;
    build(&p, NULL, NULL, NULL, NULL);
    assert_int_equal(p.n_cell, 40);
    assert_int_equal(p.trials, 1000);
    assert_string_equal(p.cell[0].algorithm, "dp-nas");
    assert_string_equal(p.cell[39].algorithm, "dp-exp-nas");
    simnas_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rate_matches_theorem_3_3),
        cmocka_unit_test(samples_follow_the_rate),
        cmocka_unit_test(failures_within_beta),
        cmocka_unit_test(same_results_for_any_thread_count),
        cmocka_unit_test(grid_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
