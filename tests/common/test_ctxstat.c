/* The local contextual mode's on-device mechanism (ldpb/ctxstat.h): calibration against figures
 * computed by hand, the packing, clipping, every refusal, the admissibility check, and the law of
 * the exact samplers (CKS20, Alg. 1-3) on fixed seeds.
 *
 * Statistical checks: each uses a fixed seed and a threshold whose false-failure probability for
 * a correct sampler is at most 1e-9 (chi-square quantiles at 1 - 1e-9, binomial and mean checks at
 * 6.1 standard deviations, two-sided 1e-9 under the normal approximation, which at these sample
 * sizes is accurate to far better than the factor that would matter); about 15 checks, so the
 * whole file fails falsely with probability below 2e-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>

#include "ctxstat_internal.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"

#define Z_1E9 6.1 /* P(|N(0,1)| > 6.1) = 1.06e-9 */

static ldpb_rng *seeded(const char *text)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, text);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    return rng;
}

static ldpb_ctxstat *make(uint32_t d, double eps, double delta, double L, double B)
{
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, d, eps, delta);
    o.feature_norm = L;
    o.reward_bound = B;
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &o), LDPB_OK);
    return m;
}

/* Hand computation (docs/derivations.md): ell = ln(1/delta), sqrt(rho) = sqrt(ell + eps) -
 * sqrt(ell), Delta0 = sqrt(2) (L^2 + B^2), sigma0 = Delta0 / sqrt(2 rho), g the largest power of
 * two <= min(sigma0, Delta0) 2^-20, Delta = Delta0 + 2 g sqrt(n), sigma = Delta / sqrt(2 rho).
 *  d = 5, eps = 1, delta = 0.1: ell = 2.302585, sqrt(rho) = 1.817302 - 1.517427 = 0.299875,
 *    rho = 0.0899250; sigma0 = 2.828427 / 0.424088 = 6.66942; g = 2^-19 (Delta0 2^-20 =
 *    2.70e-6, and 2^-19 = 1.91e-6); Delta = 2.828427 + 2 * 1.907e-6 * sqrt(21) = 2.828445,
 *    sigma = 6.66948.
 *  d = 10, eps = 1, delta = 1e-6: ell = 13.815511, sqrt(rho) = 3.849092 - 3.716922 = 0.132170,
 *    rho = 0.0174689; sigma0 = 2.828427 / 0.186917 = 15.1321; g = 2^-19 again (Delta0 is the
 *    smaller); Delta = 2.828427 + 2 * 1.907e-6 * sqrt(66) = 2.828458, sigma = 15.1322.
 * (L is taken as L (1 + 1e-9), the accepted norm tolerance: invisible at these digits.) */
static void calibration_hand_values(void **state)
{
    (void)state;
    struct {
        uint32_t d;
        double eps, delta, L, B;
        double grid, sigma, rho; /* by hand, to the digits shown */
    } c[] = {
        {5, 1.0, 0.1, 1.0, 1.0, 0x1p-19, 6.66948, 0.0899250},
        {10, 1.0, 1e-6, 1.0, 1.0, 0x1p-19, 15.1322, 0.0174689},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        ldpb_ctxstat *m = make(c[i].d, c[i].eps, c[i].delta, c[i].L, c[i].B);
        assert_true(ldpb_ctxstat_grid(m) == c[i].grid);
        assert_true(fabs(ldpb_ctxstat_sigma(m) / c[i].sigma - 1.0) < 1e-5);
        assert_true(fabs(ldpb_ctxstat_rho(m) / c[i].rho - 1.0) < 1e-5);
        /* rounded up, never down: the implemented epsilon is at most the request, and within
         * the rounding of sigma^2 to an integer number of squared grid units */
        double ee = ldpb_ctxstat_epsilon_effective(m);
        assert_true(ee <= c[i].eps && ee > c[i].eps * (1.0 - 1e-9));
        double rho = ldpb_ctxstat_rho(m), ell = log(1.0 / c[i].delta);
        assert_true(fabs(rho + 2.0 * sqrt(rho * ell) - ee) < 1e-12);
        /* sigma^2 in grid units is the integer the sampler uses */
        double units = ldpb_ctxstat_sigma(m) / ldpb_ctxstat_grid(m);
        assert_true(fabs(units * units / (double)ctxstat_sigma2_units(m) - 1.0) < 1e-12);
        assert_true(units >= 0x1p20 && units < 0x1p23);
        ldpb_ctxstat_free(m);
    }
    /* sigma scales with L^2 + B^2 (the sensitivity), and the grid with sigma */
    ldpb_ctxstat *a = make(3, 1.0, 1e-3, 1.0, 1.0), *b = make(3, 1.0, 1e-3, 2.0, 2.0);
    assert_true(fabs(ldpb_ctxstat_sigma(b) / ldpb_ctxstat_sigma(a) - 4.0) < 1e-5);
    assert_true(ldpb_ctxstat_grid(b) == 4.0 * ldpb_ctxstat_grid(a));
    ldpb_ctxstat_free(a);
    ldpb_ctxstat_free(b);
}

static void packing_index(void **state)
{
    (void)state;
    for (uint32_t d = 1; d <= LDPB_CTXSTAT_D_MAX; d++) {
        size_t expect = 0;
        for (uint32_t i = 0; i <= d; i++)
            for (uint32_t j = i; j <= d; j++) {
                assert_int_equal(ldpb_ctxstat_index(d, i, j), expect);
                assert_int_equal(ldpb_ctxstat_index(d, j, i), expect);
                expect++;
            }
        assert_int_equal(expect, LDPB_CTXSTAT_VALUES(d));
        assert_int_equal(ldpb_ctxstat_index(d, 0, d + 1), SIZE_MAX);
    }
    ldpb_ctxstat *m = make(4, 1.0, 0.1, 1.0, 1.0);
    assert_int_equal(ldpb_ctxstat_values(m), 15);
    assert_int_equal(ldpb_ctxstat_get_opts(m)->d, 4);
    ldpb_ctxstat_free(m);
}

/* The report's mean is v v^T entry by entry (unbiased rounding, zero-mean noise), in the packed
 * order, with y clipped to [-B, B]: a wrong index, a missing clip or a biased rounding moves some
 * mean by far more than 6.1 standard errors (sigma / sqrt(N) = 0.047 here). */
static void mean_is_outer_product(void **state)
{
    (void)state;
    const uint32_t d = 3;
    ldpb_ctxstat *m = make(d, 1.0, 0.1, 1.0, 0.5);
    ldpb_rng *rng = seeded("ctxstat-mean");
    const double x[3] = {0.6, -0.3, 0.7}; /* norm 0.97 */
    const double y = 3.0;                 /* clipped to 0.5 */
    const double v[4] = {0.6, -0.3, 0.7, 0.5};
    enum { N = 20000 };
    double sum[10] = {0}, out[10];
    for (int r = 0; r < N; r++) {
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, y, out), LDPB_OK);
        for (size_t i = 0; i < 10; i++)
            sum[i] += out[i];
    }
    double se = ldpb_ctxstat_sigma(m) / sqrt((double)N);
    for (uint32_t i = 0; i <= d; i++)
        for (uint32_t j = i; j <= d; j++) {
            double mean = sum[ldpb_ctxstat_index(d, i, j)] / N;
            assert_true(fabs(mean - v[i] * v[j]) < Z_1E9 * se);
        }
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
}

/* Clipping is exact and draws nothing extra: y beyond B gives the same report as y = B from the
 * same stream; a refused call draws nothing. */
static void clipping_and_refusals_draw_nothing(void **state)
{
    (void)state;
    const uint32_t d = 2;
    ldpb_ctxstat *m = make(d, 2.0, 1e-3, 1.0, 1.0);
    double a[6], b[6];
    const double x[2] = {0.6, 0.8};
    ldpb_rng *r1 = seeded("clip"), *r2 = seeded("clip");
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, x, 7.5, a), LDPB_OK);
    assert_int_equal(ldpb_ctxstat_privatize(m, r2, x, 1.0, b), LDPB_OK);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, x, -7.5, a), LDPB_OK);
    assert_int_equal(ldpb_ctxstat_privatize(m, r2, x, -1.0, b), LDPB_OK);
    assert_memory_equal(a, b, sizeof a);

    /* refusals, then both streams must still agree */
    const double nan_x[2] = {NAN, 0.0}, inf_x[2] = {INFINITY, 0.0};
    const double long_x[2] = {0.6 * (1.0 + 1e-6), 0.8}; /* beyond L's 1e-9 tolerance */
    const double ulp_x[2] = {0.6 * (1.0 + 1e-12), 0.8}; /* within it: accepted */
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, long_x, 0.0, a), LDPB_ERANGE);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, nan_x, 0.0, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, inf_x, 0.0, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, x, NAN, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, x, INFINITY, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(NULL, r1, x, 0.0, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, NULL, x, 0.0, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, NULL, 0.0, a), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, x, 0.0, NULL), LDPB_EINVAL);
    assert_true(ldpb_rng_u64(r1) == ldpb_rng_u64(r2));
    assert_int_equal(ldpb_ctxstat_privatize(m, r1, ulp_x, 0.0, a), LDPB_OK);
    ldpb_rng_free(r1);
    ldpb_rng_free(r2);
    ldpb_ctxstat_free(m);
}

static void construction_refusals(void **state)
{
    (void)state;
    ldpb_ctxstat *m = (ldpb_ctxstat *)&m;
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, 3, 1.0, 0.01);
    assert_int_equal(ldpb_ctxstat_new(NULL, &o), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxstat_new(&m, NULL), LDPB_EINVAL);
    assert_null(m);
    struct {
        const char *what;
        int field; /* 0 kind, 1 d, 2 eps, 3 delta, 4 L, 5 B */
        double value;
        ldpb_err want;
    } bad[] = {
        {"kind 0", 0, 0, LDPB_EINVAL},
        {"kind 2", 0, 2, LDPB_EINVAL},
        {"d 0", 1, 0, LDPB_ERANGE},
        {"d 33", 1, 33, LDPB_ERANGE},
        {"eps NaN", 2, NAN, LDPB_EINVAL},
        {"eps inf", 2, INFINITY, LDPB_EINVAL},
        {"eps 0", 2, 0.0, LDPB_ERANGE},
        {"eps -1", 2, -1.0, LDPB_ERANGE},
        {"eps 10.5", 2, 10.5, LDPB_ERANGE},
        {"eps 9e-5", 2, 9e-5, LDPB_ERANGE},
        {"delta NaN", 3, NAN, LDPB_EINVAL},
        {"delta 0", 3, 0.0, LDPB_ERANGE},
        {"delta 0.2", 3, 0.2, LDPB_ERANGE},
        {"L NaN", 4, NAN, LDPB_EINVAL},
        {"L inf", 4, INFINITY, LDPB_EINVAL},
        {"L 0", 4, 0.0, LDPB_ERANGE},
        {"L -1", 4, -1.0, LDPB_ERANGE},
        {"L 2e6", 4, 2e6, LDPB_ERANGE},
        {"L 1e-7", 4, 1e-7, LDPB_ERANGE},
        {"B NaN", 5, NAN, LDPB_EINVAL},
        {"B -inf", 5, -INFINITY, LDPB_EINVAL},
        {"B 0", 5, 0.0, LDPB_ERANGE},
        {"B 2e6", 5, 2e6, LDPB_ERANGE},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ldpb_ctxstat_opts_init(&o, 3, 1.0, 0.01);
        switch (bad[i].field) {
        case 0:
            o.kind = (ldpb_ctxstat_kind)(int)bad[i].value;
            break;
        case 1:
            o.d = (uint32_t)bad[i].value;
            break;
        case 2:
            o.epsilon = bad[i].value;
            break;
        case 3:
            o.delta = bad[i].value;
            break;
        case 4:
            o.feature_norm = bad[i].value;
            break;
        default:
            o.reward_bound = bad[i].value;
            break;
        }
        m = (ldpb_ctxstat *)&m;
        ldpb_err err = ldpb_ctxstat_new(&m, &o);
        if (err != bad[i].want)
            fail_msg("%s: got %d, want %d", bad[i].what, (int)err, (int)bad[i].want);
        assert_null(m);
    }
    /* the edges of every range are accepted */
    const double edges[][5] = {
        {1, 1e-4, 1e-12, 1e-6, 1e-6}, {32, 1e-4, 1e-12, 1e6, 1e-6}, {32, 10.0, 0.1, 1e6, 1e6}};
    for (size_t i = 0; i < 3; i++) {
        ldpb_ctxstat_opts_init(&o, (uint32_t)edges[i][0], edges[i][1], edges[i][2]);
        o.feature_norm = edges[i][3];
        o.reward_bound = edges[i][4];
        assert_int_equal(ldpb_ctxstat_new(&m, &o), LDPB_OK);
        assert_true(ldpb_ctxstat_epsilon_effective(m) <= edges[i][1]);
        /* and the sampler works at both ends of its range */
        double x[32] = {0}, z[LDPB_CTXSTAT_VALUES_MAX];
        x[0] = o.feature_norm;
        ldpb_rng *rng = seeded("edges");
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, -o.reward_bound, z), LDPB_OK);
        assert_int_equal(ldpb_ctxstat_check(m, z, ldpb_ctxstat_values(m), NULL), LDPB_OK);
        ldpb_rng_free(rng);
        ldpb_ctxstat_free(m);
    }
    ldpb_ctxstat_free(NULL);
    assert_null(ldpb_ctxstat_get_opts(NULL));
    assert_int_equal(ldpb_ctxstat_values(NULL), 0);
    assert_true(isnan(ldpb_ctxstat_sigma(NULL)) && isnan(ldpb_ctxstat_grid(NULL)) &&
                isnan(ldpb_ctxstat_rho(NULL)) && isnan(ldpb_ctxstat_epsilon_effective(NULL)));
}

/* Every privatized report is admissible; every kind of tampering is refused with a reason. */
static void check_admits_reports_refuses_tampering(void **state)
{
    (void)state;
    const uint32_t d = 4;
    ldpb_ctxstat *m = make(d, 1.0, 1e-6, 1.0, 1.0);
    ldpb_rng *rng = seeded("check");
    const size_t n = LDPB_CTXSTAT_VALUES(d);
    double z[LDPB_CTXSTAT_VALUES(4)];
    char detail[160];
    const double x[4] = {0.5, 0.5, 0.5, 0.5 - 1e-3};
    for (int r = 0; r < 2000; r++) {
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, -0.3 + r * 1e-4, z), LDPB_OK);
        assert_int_equal(ldpb_ctxstat_check(m, z, n, detail), LDPB_OK);
        assert_string_equal(detail, "");
    }
    assert_int_equal(ldpb_ctxstat_check(m, z, n, NULL), LDPB_OK);
    const double g = ldpb_ctxstat_grid(m);
    /* The bound of derivations.md sec. 16, recomputed here: max(L, B)^2 plus one grid step plus
     * c sigma, 2 n exp(-c^2 / 2) = 1e-12 over the n = 15 values (c = 7.878). */
    const double c = sqrt(2.0 * log(2.0 * (double)n / 1e-12));
    assert_true(c > 7.87 && c < 7.89);
    const double lim = ldpb_ctxstat_limit(m);
    const double want = 1.0 + g + c * ldpb_ctxstat_sigma(m);
    assert_true(lim >= want && lim < want * (1.0 + 1e-8)); /* the rounding allowances only */
    assert_true(isnan(ldpb_ctxstat_limit(NULL)));
    struct {
        double value;
        const char *reason;
    } bad[] = {
        {NAN, "not finite"},
        {INFINITY, "not finite"},
        {-INFINITY, "not finite"},
        {0.5 * g, "grid"},
        {1.0 + 0.25 * g, "grid"},
        {0x1p-1074, "grid"},
        {ldexp(floor(ldexp(lim, 20)) + 2.0, -20), "outside"},
        {-1e300, "outside"},
        /* the old bound's extreme, L^2 + B^2 + 40 sigma: admitted before, never reached by an
         * honest report */
        {ldexp(floor(ldexp(2.0 + 40.0 * ldpb_ctxstat_sigma(m), 17)), -17), "outside"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double t[LDPB_CTXSTAT_VALUES(4)];
        memcpy(t, z, sizeof t);
        t[i % n] = bad[i].value;
        assert_int_equal(ldpb_ctxstat_check(m, t, n, detail), LDPB_EPROTO);
        if (!strstr(detail, bad[i].reason))
            fail_msg("value %g: detail \"%s\" lacks \"%s\"", bad[i].value, detail, bad[i].reason);
        assert_int_equal(ldpb_ctxstat_check(m, t, n, NULL), LDPB_EPROTO);
    }
    /* the largest admissible magnitude on the grid is accepted */
    double t[LDPB_CTXSTAT_VALUES(4)];
    memcpy(t, z, sizeof t);
    t[0] = -ldexp(floor(ldexp(lim, 17)), -17);
    assert_int_equal(ldpb_ctxstat_check(m, t, n, detail), LDPB_OK);
    assert_int_equal(ldpb_ctxstat_check(m, z, n - 1, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "needs 15"));
    assert_int_equal(ldpb_ctxstat_check(m, z, n + 1, detail), LDPB_EPROTO);
    assert_int_equal(ldpb_ctxstat_check(m, NULL, n, detail), LDPB_EPROTO);
    assert_int_equal(ldpb_ctxstat_check(NULL, z, n, detail), LDPB_EPROTO);
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
}

/* Bernoulli(exp(-num/den)) at rationals below 1, at 1 and above it. */
static void bern_exp_frequencies(void **state)
{
    (void)state;
    const uint64_t cases[][2] = {{0, 1}, {3, 10}, {1, 1}, {5, 2}, {7, 3}, {1, 1ULL << 60}};
    ldpb_rng *rng = seeded("bern-exp");
    enum { N = 200000 };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double p = exp(-(double)cases[c][0] / (double)cases[c][1]);
        long hits = 0;
        for (int i = 0; i < N; i++)
            hits += ctxstat_bern_exp(rng, cases[c][0], cases[c][1]);
        if (p == 1.0) {
            assert_int_equal(hits, N);
            continue;
        }
        double sd = sqrt(p * (1.0 - p) / N);
        if (!(fabs((double)hits / N - p) < Z_1E9 * sd))
            fail_msg("exp(-%llu/%llu): %g against %g", (unsigned long long)cases[c][0],
                     (unsigned long long)cases[c][1], (double)hits / N, p);
    }
    ldpb_rng_free(rng);
}

/* Chi-square of n draws against the pmf p over a support [lo, hi] (values outside fall in the
 * two tail cells, whose probabilities are 1 minus the rest); fails beyond the 1 - 1e-9 quantile. */
static void chi_square(const char *what, const int64_t *draws, size_t n, int64_t lo, int64_t hi,
                       double (*pmf)(int64_t y, double param), double param)
{
    size_t cells = (size_t)(hi - lo + 1) + 2;
    double *count = calloc(cells, sizeof *count), *prob = calloc(cells, sizeof *prob);
    assert_non_null(count);
    assert_non_null(prob);
    double inside = 0.0;
    for (int64_t y = lo; y <= hi; y++) {
        prob[(size_t)(y - lo) + 1] = pmf(y, param);
        inside += pmf(y, param);
    }
    /* split the outside mass between the tails by symmetry of the laws tested (lo = -hi) */
    prob[0] = prob[cells - 1] = (1.0 - inside) / 2.0;
    for (size_t i = 0; i < n; i++) {
        size_t c = draws[i] < lo ? 0 : (draws[i] > hi ? cells - 1 : (size_t)(draws[i] - lo) + 1);
        count[c] += 1.0;
    }
    double chi2 = 0.0;
    size_t used = 0;
    for (size_t c = 0; c < cells; c++) {
        double e = prob[c] * (double)n;
        if (e < 5.0) { /* pooled into the statistic only through the other cells' deficit */
            assert_true(count[c] <= 5.0 + 12.0 * sqrt(5.0));
            continue;
        }
        chi2 += (count[c] - e) * (count[c] - e) / e;
        used++;
    }
    double crit = gsl_cdf_chisq_Qinv(1e-9, (double)(used - 1));
    if (!(chi2 < crit))
        fail_msg("%s: chi2 %.2f >= %.2f (df %zu)", what, chi2, crit, used - 1);
    free(count);
    free(prob);
}

static double dgauss_pmf(int64_t y, double s2)
{
    double norm = 0.0;
    for (int64_t k = -2000; k <= 2000; k++)
        norm += exp(-(double)(k * k) / (2.0 * s2));
    return exp(-(double)(y * y) / (2.0 * s2)) / norm;
}

static double dlaplace_pmf(int64_t y, double t)
{
    double q = exp(-1.0 / t);
    return (1.0 - q) / (1.0 + q) * pow(q, fabs((double)y));
}

/* The samplers' laws, exactly: small parameters where every cell is resolved. A scale error of
 * 1% or a doubled zero (the "-0" of the sign step) exceeds the critical value many times. */
static void sampler_laws(void **state)
{
    (void)state;
    enum { N = 400000 };
    int64_t *draws = malloc(N * sizeof *draws);
    assert_non_null(draws);
    ldpb_rng *rng = seeded("dgauss-law");
    const uint64_t s2s[] = {1, 2, 7, 50};
    for (size_t c = 0; c < sizeof s2s / sizeof s2s[0]; c++) {
        for (int i = 0; i < N; i++)
            draws[i] = ctxstat_dgauss(rng, s2s[c]);
        char what[64];
        snprintf(what, sizeof what, "discrete Gaussian sigma^2 %llu", (unsigned long long)s2s[c]);
        int64_t h = (int64_t)ceil(6.5 * sqrt((double)s2s[c]));
        chi_square(what, draws, N, -h, h, dgauss_pmf, (double)s2s[c]);
    }
    const uint64_t ts[] = {1, 3, 10};
    for (size_t c = 0; c < sizeof ts / sizeof ts[0]; c++) {
        for (int i = 0; i < N; i++)
            draws[i] = ctxstat_dlaplace(rng, ts[c]);
        char what[64];
        snprintf(what, sizeof what, "discrete Laplace t %llu", (unsigned long long)ts[c]);
        int64_t h = (int64_t)(12 * ts[c]);
        chi_square(what, draws, N, -h, h, dlaplace_pmf, (double)ts[c]);
    }
    free(draws);
    ldpb_rng_free(rng);
}

/* At the production scale (sigma / g in [2^20, 2^21)) cells are far wider than the grid, so the
 * discrete law equals the normal one in every cell to within exp(-2 pi^2 sigma^2) (Poisson
 * summation): 20 equiprobable cells of N(0, sigma^2). */
static void sampler_law_production_scale(void **state)
{
    (void)state;
    ldpb_ctxstat *m = make(5, 1.0, 0.1, 1.0, 1.0);
    const uint64_t s2 = ctxstat_sigma2_units(m);
    const double sd = sqrt((double)s2);
    ldpb_rng *rng = seeded("dgauss-production");
    enum { N = 200000, CELLS = 20 };
    double count[CELLS] = {0};
    double sum2 = 0.0;
    for (int i = 0; i < N; i++) {
        double y = (double)ctxstat_dgauss(rng, s2) / sd;
        sum2 += y * y;
        double u = 0.5 * erfc(-y / sqrt(2.0));
        int c = (int)(u * CELLS);
        count[c < CELLS ? c : CELLS - 1] += 1.0;
    }
    double chi2 = 0.0, e = (double)N / CELLS;
    for (int c = 0; c < CELLS; c++)
        chi2 += (count[c] - e) * (count[c] - e) / e;
    assert_true(chi2 < gsl_cdf_chisq_Qinv(1e-9, CELLS - 1));
    /* the variance, at 6.1 standard errors (Var of y^2 is 2) */
    assert_true(fabs(sum2 / N - 1.0) < Z_1E9 * sqrt(2.0 / N));
    /* the largest variance parameter the sampler accepts, 2^56: the variance, as above */
    sum2 = 0.0;
    for (int i = 0; i < N / 10; i++) {
        double y = (double)ctxstat_dgauss(rng, (uint64_t)1 << 56) * 0x1p-28;
        sum2 += y * y;
    }
    assert_true(fabs(sum2 / (N / 10) - 1.0) < Z_1E9 * sqrt(2.0 / (N / 10)));
    ldpb_rng_free(rng);
    ldpb_ctxstat_free(m);
}

/* docs/privacy.md section 11 derives the grid step g and the noise N = (sigma/g)^2 from what an
 * Assignment carries (d, epsilon, delta, L, B), so that a device written from the docs alone
 * puts its reports on the aggregator's grid. This recomputes both in plain double arithmetic,
 * step by step as the docs say, over a sweep of every parameter's range, and requires exactly the
 * mechanism's g, and its N to a relative 1e-12 (the code works in long double, which moves N
 * by a few units at most; the docs say so). */
static void documented_grid_derivation(void **state)
{
    (void)state;
    static const uint32_t ds[] = {1, 2, 5, 10, 32};
    static const double epss[] = {1e-4, 0.01, 0.1, 1, 3, 10};
    static const double deltas[] = {1e-12, 1e-9, 1e-6, 1e-3, 0.1};
    static const double bounds[] = {1e-6, 0.3, 1, 7, 1e6};
    size_t checked = 0;
    for (size_t a = 0; a < 5; a++)
        for (size_t b = 0; b < 6; b++)
            for (size_t c = 0; c < 5; c++)
                for (size_t e = 0; e < 5; e++) {
                    const uint32_t d = ds[a];
                    const double eps = epss[b], delta = deltas[c];
                    const double L = bounds[e], B = bounds[(e + a) % 5];
                    ldpb_ctxstat_opts o;
                    ldpb_ctxstat_opts_init(&o, d, eps, delta);
                    o.feature_norm = L;
                    o.reward_bound = B;
                    ldpb_ctxstat *m = NULL;
                    if (ldpb_ctxstat_new(&m, &o) != LDPB_OK)
                        continue; /* outside the sampler's range (tiny epsilon) */
                    /* the steps of privacy.md section 11, "The grid and the exact sampler" */
                    const double Lp = L * (1.0 + 1e-9);
                    const double delta0 = sqrt(2.0) * (Lp * Lp + B * B) * (1.0 + 0x1p-40);
                    const double ell = log(1.0 / delta);
                    const double sqrt_rho = eps / (sqrt(ell + eps) + sqrt(ell));
                    const double rho = sqrt_rho * sqrt_rho;
                    const double sigma0 = delta0 / sqrt(2.0 * rho);
                    const double fine = fmin(sigma0, delta0) * 0x1p-20;
                    int k = (int)ceil(-log2(fine));
                    while (ldexp(1.0, -k) > fine)
                        k++;
                    while (ldexp(1.0, -(k - 1)) <= fine)
                        k--;
                    while (ldexp(1.0, -k) < sigma0 * 0x1p-26)
                        k--;
                    const double g = ldexp(1.0, -k);
                    const double n = (double)LDPB_CTXSTAT_VALUES(d);
                    const double units = (delta0 + 2.0 * g * sqrt(n)) / g;
                    const double big_n = ceil(units * units / (2.0 * rho) * (1.0 + 1e-12));
                    if (ldpb_ctxstat_grid(m) != g)
                        fail_msg("d %u eps %g delta %g L %g B %g: grid %a, documented %a", d, eps,
                                 delta, L, B, ldpb_ctxstat_grid(m), g);
                    /* double rounds the steps a little differently from long double */
                    const double got_n = (double)ctxstat_sigma2_units(m);
                    if (fabs(got_n - big_n) > 1e-12 * big_n)
                        fail_msg("d %u eps %g delta %g L %g B %g: N %llu, documented %.17g", d, eps,
                                 delta, L, B, (unsigned long long)ctxstat_sigma2_units(m), big_n);
                    ldpb_ctxstat_free(m);
                    checked++;
                }
    assert_true(checked > 600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calibration_hand_values),
        cmocka_unit_test(packing_index),
        cmocka_unit_test(mean_is_outer_product),
        cmocka_unit_test(clipping_and_refusals_draw_nothing),
        cmocka_unit_test(construction_refusals),
        cmocka_unit_test(check_admits_reports_refuses_tampering),
        cmocka_unit_test(bern_exp_frequencies),
        cmocka_unit_test(sampler_laws),
        cmocka_unit_test(sampler_law_production_scale),
        cmocka_unit_test(documented_grid_derivation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
