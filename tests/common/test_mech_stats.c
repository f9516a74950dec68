/* Statistical checks of the mechanisms' output distributions, on fixed seeds (so a run is
 * reproducible) with tolerances set so that a correct implementation fails the whole program
 * with probability at most 1e-9 (Bonferroni over every check below), and mutation checks showing
 * that the same tests catch a mechanism with the wrong epsilon.
 *
 * Budget: STAT_CHECKS checks share FALSE_FAILURE_TOTAL = 1e-9, so each gets alpha = 1e-9 / 180.
 *  - Frequencies (Bernoulli reports, Laplace empirical CDF points) are sums of independent
 *    indicators: Bernstein's inequality P(|mean - p| >= t) <= 2 exp(-N t^2 / (2 (p(1-p) + t/3)))
 *    gives a rigorous tolerance (7.3 sigma at p = 0.27, N = 1e6).
 *  - Laplace sample mean and variance use the normal approximation at z(alpha / 10). The factor
 *    10 covers the approximation error in the tail: for the mean, Laplace noise is symmetric and
 *    its excess kurtosis 3 moves the tail at z = 7.2 by a factor exp(z^4 * 3 / (24 N)) ~ 1.001;
 *    for the variance, Z^2 has skewness 592 / 20^1.5 = 6.6, and Cramer's correction
 *    exp(z^3 * 6.6 / (6 sqrt N)) is 1.8 at N = 5e5.
 * On failure each check prints the seed text (ldpb_rng_seed_from_text) that reproduces it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ldpb/mech.h"
#include "ldpb/rng.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define FALSE_FAILURE_TOTAL 1e-9
/* 3 Bernoulli kinds x 5 eps x 5 x, plus 5 eps x 3 x x (mean, variance, 5 CDF points). */
#define STAT_CHECKS (3 * 5 * 5 + 5 * 3 * 7)
#define ALPHA       (FALSE_FAILURE_TOTAL / STAT_CHECKS)

enum { N_BERNOULLI = 1000000, N_LAPLACE = 500000 };

static const double eps_list[] = {0.1, 0.5, 1.0, 2.0, 4.0};

/* z with P(|N(0,1)| > z) = alpha, by bisection on erfc. */
static double z_two_sided(double alpha)
{
    double lo = 0.0, hi = 40.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (erfc(mid / sqrt(2.0)) > alpha)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The smallest t with 2 exp(-n t^2 / (2 (var + t/3))) <= alpha: the positive root of
 * n t^2 - (2L/3) t - 2 L var = 0 with L = ln(2/alpha). */
static double bernstein_tolerance(double var, double n, double alpha)
{
    double L = log(2.0 / alpha);
    double b = 2.0 * L / 3.0;
    return (b + sqrt(b * b + 8.0 * n * L * var)) / (2.0 * n);
}

static ldpb_rng *rng_for(const char *seed_text)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    return rng;
}

static ldpb_mech *make(ldpb_mech_kind kind, double eps)
{
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, kind, eps);
    ldpb_mech *m = NULL;
    assert_int_equal(ldpb_mech_new(&m, &o), LDPB_OK);
    return m;
}

/* Reports whether |got - want| <= tol; prints the reproducing seed when not (unless quiet). */
static int within(const char *what, const char *seed_text, double got, double want, double tol,
                  int quiet)
{
    if (fabs(got - want) <= tol)
        return 1;
    if (!quiet) {
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        ldpb_rng_seed_from_text(seed, seed_text);
        char hex[2 * LDPB_RNG_SEED_BYTES + 1];
        for (int i = 0; i < LDPB_RNG_SEED_BYTES; i++)
            snprintf(hex + 2 * i, 3, "%02x", seed[i]);
        print_error("%s: got %.10g, want %.10g +- %.3g (%.1f tolerances off)\n"
                    "  seed text \"%s\" = %s\n",
                    what, got, want, tol, fabs(got - want) / tol, seed_text, hex);
    }
    return 0;
}

/* Frequency of ones among n reports of `m` at x, seeded by `seed_text`. */
static double frequency_of_ones(const ldpb_mech *m, const char *seed_text, double x, int n)
{
    ldpb_rng *rng = rng_for(seed_text);
    long ones = 0;
    for (int i = 0; i < n; i++) {
        double y = -1;
        assert_int_equal(ldpb_mech_privatize_unit(m, rng, x, &y), LDPB_OK);
        assert_true(y == 0.0 || y == 1.0);
        ones += y == 1.0;
    }
    ldpb_rng_free(rng);
    return (double)ones / n;
}

static const double bern_x[] = {0.0, 0.25, 0.5, 0.75, 1.0};

/* 75 checks: the frequency of ones is P(1 | x) = ldpb_mech_prob_one(x). */
static void bernoulli_frequencies(void **state)
{
    (void)state;
    const ldpb_mech_kind kinds[] = {LDPB_MECH_LINEAR, LDPB_MECH_QUADRATIC, LDPB_MECH_EXPONENTIAL};
    int failed = 0;
    for (size_t k = 0; k < COUNT(kinds); k++) {
        for (size_t e = 0; e < COUNT(eps_list); e++) {
            ldpb_mech *m = make(kinds[k], eps_list[e]);
            for (size_t i = 0; i < COUNT(bern_x); i++) {
                char text[128], what[160];
                snprintf(text, sizeof text, "test_mech_stats v1 %s eps=%g x=%g",
                         ldpb_mech_kind_name(kinds[k]), eps_list[e], bern_x[i]);
                double p = ldpb_mech_prob_one(m, bern_x[i]);
                double f = frequency_of_ones(m, text, bern_x[i], N_BERNOULLI);
                double tol = bernstein_tolerance(p * (1.0 - p), N_BERNOULLI, ALPHA);
                snprintf(what, sizeof what, "frequency of ones, %s", text);
                failed += !within(what, text, f, p, tol, 0);
            }
            ldpb_mech_free(m);
        }
    }
    assert_int_equal(failed, 0);
}

/* Mutation: a linear mechanism built for eps = 1.1 must fail the frequency check against the
 * eps = 1 probabilities, at x = 0 and x = 1. The gap |p(1.1) - p(1)| = 0.0192 at both ends is
 * 5.9 tolerances (tolerance 3.2e-3, sigma 4.4e-4), so a miss needs a deviation of 36 sigma in
 * the wrong direction: probability below 1e-250 (Bernstein). */
static void frequency_check_catches_wrong_epsilon(void **state)
{
    (void)state;
    ldpb_mech *right = make(LDPB_MECH_LINEAR, 1.0);
    ldpb_mech *wrong = make(LDPB_MECH_LINEAR, 1.1);
    const double xs[] = {0.0, 1.0};
    for (size_t i = 0; i < COUNT(xs); i++) {
        char text[128];
        snprintf(text, sizeof text, "test_mech_stats v1 mutation eps=1.1 x=%g", xs[i]);
        double p = ldpb_mech_prob_one(right, xs[i]);
        double f = frequency_of_ones(wrong, text, xs[i], N_BERNOULLI);
        double tol = bernstein_tolerance(p * (1.0 - p), N_BERNOULLI, ALPHA);
        assert_true(fabs(ldpb_mech_prob_one(wrong, xs[i]) - p) > 3.5 * tol);
        if (within("mutation", text, f, p, tol, 1))
            print_error("the eps=1.1 mechanism passed as eps=1 (seed text \"%s\")\n", text);
        assert_false(within("mutation", text, f, p, tol, 1));
    }
    ldpb_mech_free(right);
    ldpb_mech_free(wrong);
}

/* Continuous Laplace(x, b) CDF. */
static double laplace_cdf(double t, double x, double b)
{
    return t < x ? 0.5 * exp((t - x) / b) : 1.0 - 0.5 * exp(-(t - x) / b);
}

/* CDF of the discrete law the sampler targets: R g + Z g with R the randomized rounding of x
 * (up with probability frac) and P(Z = z) proportional to q^|z|, q = e^{-eps g}. */
static double discrete_cdf(double t, double x, double eps, double g)
{
    double q = exp(-eps * g);
    double scaled = x / g, lower = floor(scaled), frac = scaled - lower;
    double sum = 0.0;
    for (int up = 0; up <= 1; up++) {
        double w = up ? frac : 1.0 - frac;
        double m = floor(t / g) - (lower + up); /* Z <= m */
        double p = m >= 0 ? 1.0 - pow(q, m + 1.0) / (1.0 + q) : pow(q, -m) / (1.0 + q);
        sum += w * p;
    }
    return sum;
}

struct moments {
    double mean, var;
    long below[5];
};

static const double cdf_at[5] = {-2.0, -0.5, 0.0, 0.5, 2.0}; /* in noise scales from x */

static void sample_laplace(const ldpb_mech *m, const char *seed_text, double x, int n,
                           struct moments *out)
{
    ldpb_rng *rng = rng_for(seed_text);
    double b = 1.0 / ldpb_mech_epsilon(m);
    double mean = 0.0, m2 = 0.0;
    for (size_t j = 0; j < COUNT(cdf_at); j++)
        out->below[j] = 0;
    for (int i = 0; i < n; i++) {
        double y = NAN;
        assert_int_equal(ldpb_mech_privatize_unit(m, rng, x, &y), LDPB_OK);
        double d = y - mean; /* Welford */
        mean += d / (i + 1);
        m2 += d * (y - mean);
        for (size_t j = 0; j < COUNT(cdf_at); j++)
            out->below[j] += y <= x + cdf_at[j] * b;
    }
    out->mean = mean;
    out->var = m2 / (n - 1);
    ldpb_rng_free(rng);
}

/* 105 checks: for each eps and x, the mean is x (the randomized rounding is unbiased), the
 * variance is the discrete Laplace variance plus the rounding term frac(1-frac) g^2, and the
 * empirical CDF at x + {-2, -0.5, 0, 0.5, 2} / eps matches the continuous Laplace(x, 1/eps).
 *
 * The grid is fine enough for the continuous CDF: g <= 2^-16 / eps, and the discrete law differs
 * from the continuous one by O(eps g) = O(2^-16) at any point (the rounding moves the centre by
 * less than g, where the density is at most eps / 2; the atoms of the discrete Laplace add
 * ~ eps g / 4). The code below computes the discrete CDF at every point checked and asserts the
 * difference is below 4e-6 and below 1% of the tolerance (~3e-3): the largest, eps g / 4 =
 * 2^-18 = 3.8e-6, is the atom at t = x when x is a grid point. */
static void laplace_moments_and_cdf(void **state)
{
    (void)state;
    const double xs[] = {0.0, 0.3, 1.0};
    double z = z_two_sided(ALPHA / 10.0);
    int failed = 0;
    for (size_t e = 0; e < COUNT(eps_list); e++) {
        double eps = eps_list[e];
        ldpb_mech *m = make(LDPB_MECH_LAPLACE, eps);
        double g = ldpb_mech_laplace_grid(m), b = 1.0 / eps;
        for (size_t i = 0; i < COUNT(xs); i++) {
            char text[128], what[200];
            snprintf(text, sizeof text, "test_mech_stats v1 laplace eps=%g x=%g", eps, xs[i]);
            struct moments mo;
            sample_laplace(m, text, xs[i], N_LAPLACE, &mo);

            double frac = xs[i] / g - floor(xs[i] / g);
            double var = ldpb_mech_noise_variance(m) + frac * (1.0 - frac) * g * g;
            snprintf(what, sizeof what, "mean, %s", text);
            failed += !within(what, text, mo.mean, xs[i], z * sqrt(var / N_LAPLACE), 0);
            /* Var(s^2) ~ (mu4 - sigma^4) / N with mu4 = 6 sigma^4 for Laplace. */
            snprintf(what, sizeof what, "variance, %s", text);
            failed += !within(what, text, mo.var, var, z * sqrt(5.0 / N_LAPLACE) * var, 0);

            for (size_t j = 0; j < COUNT(cdf_at); j++) {
                double t = xs[i] + cdf_at[j] * b;
                double F = laplace_cdf(t, xs[i], b);
                double tol = bernstein_tolerance(F * (1.0 - F), N_LAPLACE, ALPHA);
                double gap = fabs(discrete_cdf(t, xs[i], eps, g) - F);
                if (!(gap < 0.01 * tol))
                    print_error("grid too coarse: |F_disc - F| = %g at eps=%g x=%g t=%g\n", gap,
                                eps, xs[i], t);
                assert_true(gap < 4e-6 && gap < 0.01 * tol);
                snprintf(what, sizeof what, "CDF at x%+gb, %s", cdf_at[j], text);
                failed += !within(what, text, (double)mo.below[j] / N_LAPLACE, F, tol, 0);
            }
        }
        ldpb_mech_free(m);
    }
    assert_int_equal(failed, 0);
}

/* Mutation: Laplace built for eps = 1.1 has variance 1/1.21 of the eps = 1 noise (-17.4%); the
 * variance check's tolerance is 2.3% (sd 0.32%), so a miss needs a 48-sd deviation. */
static void variance_check_catches_wrong_epsilon(void **state)
{
    (void)state;
    ldpb_mech *right = make(LDPB_MECH_LAPLACE, 1.0);
    ldpb_mech *wrong = make(LDPB_MECH_LAPLACE, 1.1);
    const char *text = "test_mech_stats v1 mutation laplace eps=1.1 x=0.3";
    struct moments mo;
    sample_laplace(wrong, text, 0.3, N_LAPLACE, &mo);
    double g = ldpb_mech_laplace_grid(right);
    double frac = 0.3 / g - floor(0.3 / g);
    double var = ldpb_mech_noise_variance(right) + frac * (1.0 - frac) * g * g;
    double tol = z_two_sided(ALPHA / 10.0) * sqrt(5.0 / N_LAPLACE) * var;
    assert_true(var - ldpb_mech_noise_variance(wrong) > 4.0 * tol);
    if (within("mutation", text, mo.var, var, tol, 1))
        print_error("the eps=1.1 Laplace passed as eps=1 (seed text \"%s\")\n", text);
    assert_false(within("mutation", text, mo.var, var, tol, 1));
    ldpb_mech_free(right);
    ldpb_mech_free(wrong);
}

/* The tolerance helpers themselves: z against the inverse of erfc computed independently with
 * mpmath at 40 digits (6.10941020486939714, 1.95996398454005424), and the Bernstein tolerance
 * against its defining equation. */
static void tolerance_helpers(void **state)
{
    (void)state;
    assert_true(fabs(z_two_sided(1e-9) - 6.109410204869) < 1e-9);
    assert_true(fabs(z_two_sided(0.05) - 1.959963984540) < 1e-9);
    double L = log(2.0 / 1e-6), t = bernstein_tolerance(0.25, 1e6, 1e-6);
    assert_true(fabs(1e6 * t * t - 2.0 * L * (0.25 + t / 3.0)) < 1e-9);
    assert_true(t > 0.0 && t < 0.01);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tolerance_helpers),
        cmocka_unit_test(bernoulli_frequencies),
        cmocka_unit_test(frequency_check_catches_wrong_epsilon),
        cmocka_unit_test(laplace_moments_and_cdf),
        cmocka_unit_test(variance_check_catches_wrong_epsilon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
