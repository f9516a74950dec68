/* The contextual environment's samplers and the group runner (aggregator/sim/src/ctxsim.c): the
 * suboptimal actions' projections on theta* have the truncated law 2 Beta((d-1)/2, (d-1)/2) - 1,
 * every action's direction orthogonal to theta* is uniform on that sphere whatever the projection,
 * the optimal action sits at a uniform position; agg_rand_normal_fill is agg_rand_normal's stream;
 * policies run side by side against one environment get exactly the regret they get alone.
 *
 * Statistical checks use fixed seeds. A Kolmogorov-Smirnov statistic D_n of n i.i.d. draws is
 * compared with the Dvoretzky-Kiefer-Wolfowitz-Massart bound P(D_n > e) <= 2 exp(-2 n e^2), at
 * e for 1e-6; chi-square statistics with their 1 - 1e-6 quantile; a binomial count with its
 * two-sided normal 1e-6 bound. There are 29 such checks, so the false-failure probability of the
 * file is below 3e-5. */
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

#include "ctxsim.h"
#include "rand.h"

static const uint8_t SEED[LDPB_RNG_SEED_BYTES] = {11, 5, 8, 13};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The law of one coordinate of a uniform unit vector of R^m (m >= 2), truncated to [lo, hi]. */
static double coord_cdf(double p, uint32_t m, double lo, double hi)
{
    double h = 0.5 * ((double)m - 1.0);
    double flo = gsl_cdf_beta_P(0.5 * (lo + 1.0), h, h);
    double fhi = gsl_cdf_beta_P(0.5 * (hi + 1.0), h, h);
    double f = gsl_cdf_beta_P(0.5 * (fmin(fmax(p, lo), hi) + 1.0), h, h);
    return (f - flo) / (fhi - flo);
}

/* D_n of v (sorted in place) against coord_cdf, checked against the DKW-Massart bound. */
static void ks_check(const char *what, double *v, size_t n, uint32_t m, double lo, double hi)
{
    qsort(v, n, sizeof *v, cmp_double);
    double dmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double f = coord_cdf(v[i], m, lo, hi);
        dmax = fmax(dmax, fmax(f - (double)i / (double)n, (double)(i + 1) / (double)n - f));
    }
    double crit = sqrt(log(2.0 / 1e-6) / (2.0 * (double)n));
    if (!(dmax <= crit)) {
        print_error("%s: KS D = %.5f over %zu draws, bound %.5f\n", what, dmax, n, crit);
        fail();
    }
}

/* A unit vector orthogonal to theta* (Gram-Schmidt on a coordinate axis). */
static void orthogonal_axis(const double *theta, uint32_t d, double *e)
{
    uint32_t j0 = 0;
    for (uint32_t j = 1; j < d; j++)
        if (fabs(theta[j]) < fabs(theta[j0]))
            j0 = j;
    double n2 = 0.0;
    for (uint32_t j = 0; j < d; j++) {
        e[j] = (j == j0 ? 1.0 : 0.0) - theta[j0] * theta[j];
        n2 += e[j] * e[j];
    }
    for (uint32_t j = 0; j < d; j++)
        e[j] /= sqrt(n2);
}

/* Over d in {2, 3, 5, 8} and both gaps' shapes: unit norms; exactly one action of mean `best`;
 * the suboptimal projections follow the truncated law (KS); the coordinate of their orthogonal
 * direction on a fixed axis orthogonal to theta* follows the law of a coordinate of a uniform
 * unit vector of R^(d-1) (KS), separately for projections below and above 0, which fails if the
 * direction depends on the projection; the same for the optimal actions; the optimal position is
 * uniform over the k slots (chi-square). On the pre-sphere code (Beta projection + separately
 * drawn direction) these laws held as well: they pin the law the new construction must keep.
 * A mutant drawing each proposal uniformly in the cube [-1, 1]^d before normalising fails the
 * projection check (d = 2: D = 0.057, d = 5: D = 0.017, against a bound of 0.0082). */
static void action_laws(void **state)
{
    (void)state;
    static const uint32_t dims[] = {2, 3, 5, 8};
    static const double gaps[] = {0.1, 0.0};
    enum { K = 10, ROUNDS = 12000 };
    const size_t cap = (size_t)ROUNDS * K;
    double *proj = malloc(cap * sizeof *proj);
    double *lower = malloc(cap * sizeof *lower);
    double *upper = malloc(cap * sizeof *upper);
    double *opt_c = malloc((size_t)ROUNDS * sizeof *opt_c);
    assert_non_null(proj);
    assert_non_null(lower);
    assert_non_null(upper);
    assert_non_null(opt_c);
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        for (size_t gi = 0; gi < sizeof gaps / sizeof gaps[0]; gi++) {
            const uint32_t d = dims[di];
            const double gap = gaps[gi];
            agg_ctx_env_config ec = {
                .d = d, .k = K, .best = 0.75, .gap = gap, .reward = AGG_CTX_REWARD_BOUNDED};
            agg_ctx_env e;
            assert_int_equal(agg_ctx_env_start(&e, &ec, SEED, 17 + di), LDPB_OK);
            double axis[AGG_LINUCB_D_MAX];
            orthogonal_axis(e.theta, d, axis);
            double x[K * AGG_LINUCB_D_MAX], mean[K];
            size_t np = 0, nl = 0, nu = 0, no = 0;
            uint64_t pos[K] = {0};
            for (int t = 0; t < ROUNDS; t++) {
                agg_ctx_env_round(&e, x, mean);
                int opt = -1;
                for (uint32_t a = 0; a < K; a++) {
                    const double *xa = x + (size_t)a * d;
                    double n2 = 0.0, m = 0.0, c = 0.0;
                    for (uint32_t j = 0; j < d; j++) {
                        n2 += xa[j] * xa[j];
                        m += e.theta[j] * xa[j];
                        c += axis[j] * xa[j];
                    }
                    assert_true(fabs(n2 - 1.0) < 1e-12);
                    assert_true(fabs(m - mean[a]) < 1e-12);
                    /* the orthogonal direction's coordinate: <w, axis> = <x, axis> / |x_perp| */
                    c /= sqrt(fmax(1e-300, 1.0 - m * m));
                    if (fabs(m - 0.75) < 1e-12) {
                        assert_int_equal(opt, -1);
                        opt = (int)a;
                        opt_c[no++] = c;
                        continue;
                    }
                    assert_true(m >= -0.75 && m <= 0.75 - gap);
                    proj[np++] = m;
                    if (m < 0.0)
                        lower[nl++] = c;
                    else
                        upper[nu++] = c;
                }
                assert_true(opt >= 0);
                pos[opt]++;
            }
            char what[64];
            snprintf(what, sizeof what, "d %u gap %g: projection", d, gap);
            ks_check(what, proj, np, d, -0.75, 0.75 - gap);
            if (d >= 3) {
                snprintf(what, sizeof what, "d %u gap %g: direction, projection < 0", d, gap);
                ks_check(what, lower, nl, d - 1, -1.0, 1.0);
                snprintf(what, sizeof what, "d %u gap %g: direction, projection >= 0", d, gap);
                ks_check(what, upper, nu, d - 1, -1.0, 1.0);
            } else {
                /* d = 2: the direction is one of the two unit vectors orthogonal to theta* */
                size_t plus = 0;
                for (size_t i = 0; i < nl; i++)
                    plus += lower[i] > 0.0;
                for (size_t i = 0; i < nu; i++)
                    plus += upper[i] > 0.0;
                double z =
                    ((double)plus - 0.5 * (double)(nl + nu)) / sqrt(0.25 * (double)(nl + nu));
                assert_true(fabs(z) < 4.892); /* two-sided normal 1e-6 */
            }
            if (gi == 0 && d >= 3) {
                snprintf(what, sizeof what, "d %u: optimal action's direction", d);
                ks_check(what, opt_c, no, d - 1, -1.0, 1.0);
            }
            if (gi == 0) {
                double chi = 0.0, want = (double)ROUNDS / K;
                for (uint32_t a = 0; a < K; a++)
                    chi += ((double)pos[a] - want) * ((double)pos[a] - want) / want;
                if (!(chi <= gsl_cdf_chisq_Qinv(1e-6, K - 1))) {
                    print_error("d %u: optimal position chi-square %.2f\n", d, chi);
                    fail();
                }
            }
        }
    }
    free(proj);
    free(lower);
    free(upper);
    free(opt_c);
}

/* agg_rand_normal_fill draws what as many agg_rand_normal calls draw, in order, and leaves the
 * generator where they leave it: 10^6 draws, so the ziggurat's wedge and tail paths (about 1% of
 * draws) are taken thousands of times inside batches of every length 1..64. */
static void normal_fill_is_the_normal_stream(void **state)
{
    (void)state;
    agg_rand a, b;
    agg_rand_seed_u64(&a, 2024);
    agg_rand_seed_u64(&b, 2024);
    double buf[64];
    size_t total = 0, tails = 0;
    for (size_t len = 1; total < 1000000; len = len % 64 + 1) {
        agg_rand_normal_fill(&a, buf, len);
        for (size_t j = 0; j < len; j++) {
            double z = agg_rand_normal(&b);
            assert_memory_equal(&buf[j], &z, sizeof z);
            tails += fabs(z) > 3.6541528853610088;
        }
        total += len;
    }
    assert_memory_equal(a.s, b.s, sizeof a.s);
    assert_true(tails > 100); /* P(|Z| > R) = 2.6e-4: about 260 expected */
    agg_rand_normal_fill(&a, buf, 0);
    assert_memory_equal(a.s, b.s, sizeof a.s);
}

static agg_ctx_sim_config sim_cfg(agg_linucb_variant v, uint64_t horizon, const uint64_t *cp,
                                  size_t ncp, agg_ctx_reward reward)
{
    agg_ctx_sim_config c;
    memset(&c, 0, sizeof c);
    agg_linucb_config_init(&c.policy);
    c.policy.variant = v;
    c.policy.d = 5;
    c.policy.horizon = horizon;
    c.policy.delta = 0.1;
    c.policy.alpha = 0.5 / (double)horizon;
    if (v != AGG_LINUCB_PLAIN)
        c.policy.epsilon = 1.0;
    c.env.d = 5;
    c.env.k = 25;
    c.env.best = 0.75;
    c.env.gap = 0.1;
    c.env.reward = reward;
    c.checkpoints = cp;
    c.n_checkpoints = ncp;
    c.noise_kind = AGG_NOISE_FAST;
    return c;
}

/* Three policies side by side give each the regret and Cholesky-failure count it gets alone, bit
 * for bit, for both reward kinds; a group whose environments differ is refused. */
static void group_equals_separate_runs(void **state)
{
    (void)state;
    const uint64_t cp[] = {1, 10, 100, 1000, 3000};
    const size_t ncp = sizeof cp / sizeof cp[0];
    static const agg_ctx_reward rewards[] = {AGG_CTX_REWARD_BOUNDED, AGG_CTX_REWARD_GAUSSIAN};
    for (size_t r = 0; r < 2; r++) {
        agg_ctx_sim_config c[3] = {
            sim_cfg(AGG_LINUCB_PLAIN, 3000, cp, ncp, rewards[r]),
            sim_cfg(AGG_LINUCB_WISHART, 3000, cp, ncp, rewards[r]),
            sim_cfg(AGG_LINUCB_GAUSSIAN, 3000, cp, ncp, rewards[r]),
        };
        double alone[3][5], together[3][5];
        uint64_t f_alone[3], f_together[3];
        for (int i = 0; i < 3; i++)
            assert_int_equal(agg_ctx_sim_run_trial(&c[i], SEED, 6, alone[i], &f_alone[i], NULL),
                             LDPB_OK);
        const agg_ctx_sim_config *cfgs[3] = {&c[0], &c[1], &c[2]};
        double *rows[3] = {together[0], together[1], together[2]};
        assert_int_equal(agg_ctx_sim_run_group(cfgs, 3, SEED, 6, rows, f_together, NULL), LDPB_OK);
        assert_memory_equal(alone, together, sizeof alone);
        assert_memory_equal(f_alone, f_together, sizeof f_alone);
        /* the policies differ, so equal rows are not an accident of one policy run thrice */
        assert_true(alone[0][ncp - 1] != alone[2][ncp - 1]);
    }
    agg_ctx_sim_config a = sim_cfg(AGG_LINUCB_PLAIN, 3000, cp, ncp, AGG_CTX_REWARD_BOUNDED);
    agg_ctx_sim_config b = a;
    b.env.gap = 0.0;
    const agg_ctx_sim_config *cfgs[2] = {&a, &b};
    double ra[5], rb[5];
    double *rows[2] = {ra, rb};
    char msg[AGG_ERRMSG_MAX] = "";
    assert_int_equal(agg_ctx_sim_run_group(cfgs, 2, SEED, 0, rows, NULL, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "differ"));
    assert_int_equal(agg_ctx_sim_run_group(cfgs, 0, SEED, 0, rows, NULL, NULL), LDPB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(action_laws),
        cmocka_unit_test(normal_fill_is_the_normal_stream),
        cmocka_unit_test(group_equals_separate_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
