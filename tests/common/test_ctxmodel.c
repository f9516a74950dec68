/* The device's model of the local contextual mode (ldpb/ctxmodel.h): decisions, theta and ln det V
 * against a brute-force computation that inverts V explicitly; the repair of an indefinite V by
 * the smallest doubling ridge; the uniform tie-break; every refusal.
 *
 * The tie-break check is a chi-square test on a fixed seed at the 1 - 1e-9 quantile (false
 * failure probability 1e-9); everything else is deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>

#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"

#define DM LDPB_CTXSTAT_D_MAX

static ldpb_rng *seeded(const char *text)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, text);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    return rng;
}

static double uniform(ldpb_rng *rng, double lo, double hi)
{
    return lo + (hi - lo) * ldpb_rng_double(rng);
}

/* Gauss-Jordan inverse with partial pivoting of the d x d matrix a (destroyed); returns ln|det|. */
static double invert(double *a, double *inv, uint32_t d)
{
    double logdet = 0.0;
    for (uint32_t i = 0; i < d; i++)
        for (uint32_t j = 0; j < d; j++)
            inv[i * d + j] = i == j;
    for (uint32_t c = 0; c < d; c++) {
        uint32_t piv = c;
        for (uint32_t r = c + 1; r < d; r++)
            if (fabs(a[r * d + c]) > fabs(a[piv * d + c]))
                piv = r;
        for (uint32_t j = 0; j < d; j++) {
            double t = a[c * d + j];
            a[c * d + j] = a[piv * d + j];
            a[piv * d + j] = t;
            t = inv[c * d + j];
            inv[c * d + j] = inv[piv * d + j];
            inv[piv * d + j] = t;
        }
        double p = a[c * d + c];
        logdet += log(fabs(p));
        for (uint32_t j = 0; j < d; j++) {
            a[c * d + j] /= p;
            inv[c * d + j] /= p;
        }
        for (uint32_t r = 0; r < d; r++) {
            if (r == c)
                continue;
            double f = a[r * d + c];
            for (uint32_t j = 0; j < d; j++) {
                a[r * d + j] -= f * a[c * d + j];
                inv[r * d + j] -= f * inv[c * d + j];
            }
        }
    }
    return logdet;
}

/* Random instances: S is the packed sum of m outer products of (x, y) plus symmetric noise (as
 * an aggregator's sum of privatized reports would be), V = S_xx + shift I. */
static void choose_matches_brute_force(void **state)
{
    (void)state;
    ldpb_rng *rng = seeded("ctxmodel-brute");
    const uint32_t dims[] = {1, 2, 5, 10, 32};
    int decisions = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const uint32_t d = dims[di];
        const size_t n = LDPB_CTXSTAT_VALUES(d);
        ldpb_ctxmodel *m = NULL;
        assert_int_equal(ldpb_ctxmodel_new(&m, d), LDPB_OK);
        for (int inst = 0; inst < 20; inst++) {
            double stats[LDPB_CTXSTAT_VALUES_MAX] = {0};
            int rounds = (int)ldpb_rng_uniform(rng, 50);
            for (int r = 0; r < rounds; r++) {
                double v[DM + 1];
                for (uint32_t i = 0; i <= d; i++)
                    v[i] = uniform(rng, -1.0, 1.0);
                for (uint32_t i = 0; i <= d; i++)
                    for (uint32_t j = i; j <= d; j++)
                        stats[ldpb_ctxstat_index(d, i, j)] += v[i] * v[j];
            }
            for (size_t i = 0; i < n; i++)
                stats[i] += uniform(rng, -0.3, 0.3);
            double shift = uniform(rng, 2.0, 5.0), beta = uniform(rng, 0.0, 3.0);
            int repaired = -1;
            assert_int_equal(ldpb_ctxmodel_load(m, stats, n, shift, beta, &repaired), LDPB_OK);
            assert_int_equal(repaired, 0);

            double V[DM * DM], Vinv[DM * DM], u[DM];
            for (uint32_t i = 0; i < d; i++) {
                for (uint32_t j = 0; j < d; j++)
                    V[i * d + j] = stats[ldpb_ctxstat_index(d, i, j)] + (i == j ? shift : 0.0);
                u[i] = stats[ldpb_ctxstat_index(d, i, d)];
            }
            double logdet = invert(V, Vinv, d);
            assert_true(fabs(ldpb_ctxmodel_logdet(m) - logdet) < 1e-9 * (1.0 + fabs(logdet)));
            double theta[DM], want[DM];
            assert_int_equal(ldpb_ctxmodel_theta(m, theta), LDPB_OK);
            for (uint32_t i = 0; i < d; i++) {
                want[i] = 0.0;
                for (uint32_t j = 0; j < d; j++)
                    want[i] += Vinv[i * d + j] * u[j];
                assert_true(fabs(theta[i] - want[i]) < 1e-9 * (1.0 + fabs(want[i])));
            }
            enum { K = 20 };
            double x[K * DM], best = -HUGE_VAL, second = -HUGE_VAL;
            uint32_t best_arm = 0;
            for (uint32_t a = 0; a < K; a++) {
                double *xa = x + (size_t)a * d, mean = 0.0, q = 0.0;
                for (uint32_t i = 0; i < d; i++)
                    xa[i] = uniform(rng, -1.0, 1.0) / sqrt((double)d);
                for (uint32_t i = 0; i < d; i++) {
                    mean += want[i] * xa[i];
                    for (uint32_t j = 0; j < d; j++)
                        q += xa[i] * Vinv[i * d + j] * xa[j];
                }
                double idx = mean + beta * sqrt(q);
                if (idx > best) {
                    second = best;
                    best = idx;
                    best_arm = a;
                } else if (idx > second) {
                    second = idx;
                }
            }
            uint32_t arm = 99, ties = 99;
            assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, K, &arm, &ties), LDPB_OK);
            if (best - second > 1e-9) { /* a clear winner: rounding cannot reorder it */
                assert_int_equal(arm, best_arm);
                assert_int_equal(ties, 1);
                decisions++;
            }
        }
        ldpb_ctxmodel_free(m);
    }
    assert_true(decisions >= 95); /* nearly every instance decided, not skipped */
    ldpb_rng_free(rng);
}

/* V = [[1, 0], [0, -0.5]] (shift 0): the ridges tried are 1e-9 * 2^j (the largest |V_ii| is 1);
 * the first that makes V positive definite is j = 29 (0.537 > 0.5), so ln det V = ln((1 + r)(r -
 * 0.5)) with r = 2^29 1e-9. One doubling more or less gives another determinant. */
static void indefinite_repaired_by_smallest_ridge(void **state)
{
    (void)state;
    ldpb_ctxmodel *m = NULL;
    assert_int_equal(ldpb_ctxmodel_new(&m, 2), LDPB_OK);
    /* packed (0,0) (0,1) (0,2) (1,1) (1,2) (2,2) */
    const double stats[6] = {1.0, 0.0, 0.25, -0.5, 0.5, 7.0};
    int repaired = 0;
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 0.0, 1.0, &repaired), LDPB_OK);
    assert_int_equal(repaired, 1);
    const double r = 0x1p29 * 1e-9;
    assert_true(fabs(ldpb_ctxmodel_logdet(m) - log((1.0 + r) * (r - 0.5))) < 1e-12);
    double theta[2];
    assert_int_equal(ldpb_ctxmodel_theta(m, theta), LDPB_OK);
    assert_true(fabs(theta[0] - 0.25 / (1.0 + r)) < 1e-12);
    assert_true(fabs(theta[1] - 0.5 / (r - 0.5)) < 1e-9);

    /* a positive definite V is not touched */
    const double fine[6] = {1.0, 0.0, 0.25, 0.0, 0.5, 7.0};
    assert_int_equal(ldpb_ctxmodel_load(m, fine, 6, 0.5, 1.0, &repaired), LDPB_OK);
    assert_int_equal(repaired, 0);
    assert_true(fabs(ldpb_ctxmodel_logdet(m) - log(1.5 * 0.5)) < 1e-12);

    /* an off-diagonal of 1e12 against ridges up to 2^60 1e-9 = 1.15e9: no repair helps, and the
     * model is unloaded rather than left half-built */
    const double hopeless[6] = {1.0, 1e12, 0.0, 1.0, 0.0, 0.0};
    assert_int_equal(ldpb_ctxmodel_load(m, hopeless, 6, 0.0, 1.0, &repaired), LDPB_ESTATE);
    assert_int_equal(repaired, 0);
    assert_true(isnan(ldpb_ctxmodel_logdet(m)));
    ldpb_rng *rng = seeded("unloaded");
    const double x[2] = {0.1, 0.2};
    uint32_t arm;
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 1, &arm, NULL), LDPB_ESTATE);
    assert_int_equal(ldpb_ctxmodel_theta(m, theta), LDPB_ESTATE);
    ldpb_rng_free(rng);
    ldpb_ctxmodel_free(m);
}

/* Four identical actions: each chosen with probability 1/4, ties = 4. A unique maximiser draws
 * nothing from the generator. */
static void ties_broken_uniformly(void **state)
{
    (void)state;
    ldpb_ctxmodel *m = NULL;
    assert_int_equal(ldpb_ctxmodel_new(&m, 3), LDPB_OK);
    double stats[10] = {0};
    stats[ldpb_ctxstat_index(3, 0, 3)] = 1.0;
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 10, 1.0, 0.5, NULL), LDPB_OK);
    ldpb_rng *rng = seeded("ties");
    const double same[4 * 3] = {0.5, 0.1, 0.0, 0.5, 0.1, 0.0, 0.5, 0.1, 0.0, 0.5, 0.1, 0.0};
    enum { N = 40000 };
    double count[4] = {0};
    for (int i = 0; i < N; i++) {
        uint32_t arm = 9, ties = 0;
        assert_int_equal(ldpb_ctxmodel_choose(m, rng, same, 4, &arm, &ties), LDPB_OK);
        assert_int_equal(ties, 4);
        assert_true(arm < 4);
        count[arm] += 1.0;
    }
    double chi2 = 0.0;
    for (int a = 0; a < 4; a++)
        chi2 += (count[a] - N / 4.0) * (count[a] - N / 4.0) / (N / 4.0);
    assert_true(chi2 < gsl_cdf_chisq_Qinv(1e-9, 3.0));

    /* action 2 has the largest mean (theta = (0.5, 0, 0)) */
    const double distinct[3 * 3] = {0.1, 0.0, 0.0, -0.2, 0.0, 0.0, 0.4, 0.0, 0.0};
    ldpb_rng *r1 = seeded("unique"), *r2 = seeded("unique");
    uint32_t arm = 9, ties = 0;
    assert_int_equal(ldpb_ctxmodel_choose(m, r1, distinct, 3, &arm, &ties), LDPB_OK);
    assert_int_equal(arm, 2);
    assert_int_equal(ties, 1);
    assert_true(ldpb_rng_u64(r1) == ldpb_rng_u64(r2));
    ldpb_rng_free(r1);
    ldpb_rng_free(r2);
    ldpb_rng_free(rng);
    ldpb_ctxmodel_free(m);
}

static void refusals(void **state)
{
    (void)state;
    ldpb_ctxmodel *m = (ldpb_ctxmodel *)&m;
    assert_int_equal(ldpb_ctxmodel_new(NULL, 3), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_new(&m, 0), LDPB_ERANGE);
    assert_null(m);
    assert_int_equal(ldpb_ctxmodel_new(&m, DM + 1), LDPB_ERANGE);
    assert_int_equal(ldpb_ctxmodel_new(&m, 2), LDPB_OK);
    double stats[6] = {1, 0, 0, 1, 0, 0};
    double x[2] = {0.1, 0.1}, theta[2];
    uint32_t arm = 0;
    ldpb_rng *rng = seeded("refusals");
    assert_true(isnan(ldpb_ctxmodel_logdet(m)));
    assert_true(isnan(ldpb_ctxmodel_logdet(NULL)));
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 1, &arm, NULL), LDPB_ESTATE);
    assert_int_equal(ldpb_ctxmodel_theta(m, theta), LDPB_ESTATE);
    int rep = 7;
    assert_int_equal(ldpb_ctxmodel_load(NULL, stats, 6, 1.0, 1.0, &rep), LDPB_EINVAL);
    assert_int_equal(rep, 0);
    assert_int_equal(ldpb_ctxmodel_load(m, NULL, 6, 1.0, 1.0, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 5, 1.0, 1.0, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, -1.0, 1.0, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, NAN, 1.0, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, INFINITY, 1.0, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 1.0, -0.5, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 1.0, NAN, NULL), LDPB_EINVAL);
    stats[4] = NAN;
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 1.0, 1.0, NULL), LDPB_EINVAL);
    stats[4] = INFINITY;
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 1.0, 1.0, NULL), LDPB_EINVAL);
    stats[4] = 0.0;
    assert_int_equal(ldpb_ctxmodel_load(m, stats, 6, 0.0, 0.0, NULL), LDPB_OK);
    assert_int_equal(ldpb_ctxmodel_choose(NULL, rng, x, 1, &arm, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_choose(m, NULL, x, 1, &arm, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, NULL, 1, &arm, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 1, NULL, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 0, &arm, NULL), LDPB_ERANGE);
    x[1] = NAN;
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 1, &arm, NULL), LDPB_EINVAL);
    x[1] = -INFINITY;
    assert_int_equal(ldpb_ctxmodel_choose(m, rng, x, 1, &arm, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_theta(m, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ctxmodel_theta(NULL, theta), LDPB_EINVAL);
    ldpb_ctxmodel_free(NULL);
    ldpb_ctxmodel_free(m);
    ldpb_rng_free(rng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(choose_matches_brute_force),
        cmocka_unit_test(indefinite_repaired_by_smallest_ridge),
        cmocka_unit_test(ties_broken_uniformly),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
