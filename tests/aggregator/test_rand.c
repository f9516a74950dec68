/* The aggregator's generators (aggregator/src/rand.c): xoshiro256++ and splitmix64 against their
 * reference outputs, then every sampler against its law.
 *
 * Statistical checks use fixed seeds and z = 5 tolerances on a sample moment whose standard
 * error is known or estimated from the sample: each such check fails by chance with probability
 * about 5.7e-7 (two-sided normal tail at 5 sigma), and the file has fewer than 80 of them. The
 * law checks against GSL's distribution functions add 14 KS tests and 9 chi-square tests at the
 * 1e-6 level and 28 tail frequencies at z = 5 (about 1e-6 each: binomial counts near 200). So a
 * correct implementation fails some seed with probability below 2e-4. A failing check prints
 * the seed and the numbers. */
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
#include <gsl/gsl_errno.h>

#include "rand.h"

#define Z 5.0

/* Running moments of a sample (Welford), enough for the mean, the variance and the standard
 * error of the sample variance through the fourth central moment. */
typedef struct moments {
    double n, mean, m2;
    double *xs;
    size_t cap, len;
} moments;

static void mom_init(moments *m, size_t cap)
{
    memset(m, 0, sizeof *m);
    m->xs = malloc((cap ? cap : 1) * sizeof *m->xs);
    assert_non_null(m->xs);
    m->cap = cap;
}

static void mom_add(moments *m, double x)
{
    m->n += 1.0;
    double d = x - m->mean;
    m->mean += d / m->n;
    m->m2 += d * (x - m->mean);
    if (m->len < m->cap)
        m->xs[m->len++] = x;
}

static double mom_var(const moments *m)
{
    return m->m2 / (m->n - 1.0);
}

/* Standard error of the sample variance, sqrt((mu4 - sigma^4) / n), from the sample. */
static double mom_var_se(const moments *m)
{
    double mu4 = 0.0, v = m->m2 / m->n;
    for (size_t i = 0; i < m->len; i++) {
        double d = m->xs[i] - m->mean;
        mu4 += d * d * d * d;
    }
    mu4 /= (double)m->len;
    return sqrt((mu4 - v * v) / m->n);
}

static void mom_fini(moments *m)
{
    free(m->xs);
}

static void expect_close(const char *what, uint64_t seed, double got, double want, double se)
{
    if (fabs(got - want) > Z * se) {
        print_error("%s (seed %llu): got %.10g, want %.10g +- %.3g (%g standard errors)\n", what,
                    (unsigned long long)seed, got, want, Z * se, fabs(got - want) / se);
        fail();
    }
}

/* Checks the mean and variance of n draws of `draw` against the law's. */
static void check_moments(const char *what, uint64_t seed, size_t n, double mean, double var,
                          double (*draw)(agg_rand *, const double *), const double *args)
{
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    moments m;
    mom_init(&m, n);
    for (size_t i = 0; i < n; i++) {
        double x = draw(&r, args);
        if (!isfinite(x)) {
            print_error("%s (seed %llu): non-finite draw %g\n", what, (unsigned long long)seed, x);
            fail();
        }
        mom_add(&m, x);
    }
    expect_close(what, seed, m.mean, mean, sqrt(var / (double)n));
    expect_close(what, seed, mom_var(&m), var, mom_var_se(&m));
    mom_fini(&m);
}

static void xoshiro_reference_output(void **state)
{
    (void)state;
    /* The reference implementation (Blackman and Vigna) from state {1, 2, 3, 4}. */
    static const uint64_t want[10] = {
        41943041u,
        58720359u,
        3588806011781223u,
        3591011842654386u,
        9228616714210784205u,
        9973669472204895162u,
        14011001112246962877u,
        12406186145184390807u,
        15849039046786891736u,
        10450023813501588000u,
    };
    agg_rand r = {{1, 2, 3, 4}};
    for (int i = 0; i < 10; i++)
        assert_true(agg_rand_u64(&r) == want[i]);
}

static void seeding(void **state)
{
    (void)state;
    /* splitmix64 from 0: its published first four outputs. */
    agg_rand r;
    agg_rand_seed_u64(&r, 0);
    assert_true(r.s[0] == 0xe220a8397b1dcdafu);
    assert_true(r.s[1] == 0x6e789e6aa1b965f4u);
    assert_true(r.s[2] == 0x06c45d188009454fu);
    assert_true(r.s[3] == 0xf88bb8a8724c81ecu);

    /* From an ldpb_rng: the first 32 bytes of the stream, little-endian; same seed, same state;
     * another seed, another state. */
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {0};
    ldpb_rng *a = NULL, *b = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&a, seed), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded(&b, seed), LDPB_OK);
    agg_rand ra, rb;
    agg_rand_seed(&ra, a);
    uint64_t first = ldpb_rng_u64(b);
    assert_true(ra.s[0] == first);
    ldpb_rng_free(b);
    seed[0] = 1;
    assert_int_equal(ldpb_rng_new_seeded(&b, seed), LDPB_OK);
    agg_rand_seed(&rb, b);
    assert_memory_not_equal(ra.s, rb.s, sizeof ra.s);
    assert_true((ra.s[0] | ra.s[1] | ra.s[2] | ra.s[3]) != 0);
    ldpb_rng_free(a);
    ldpb_rng_free(b);
}

static void uniform_ranges_and_moments(void **state)
{
    (void)state;
    const uint64_t seed = 11;
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    enum { N = 1000000 };
    moments m, mp;
    mom_init(&m, 0);
    mom_init(&mp, 0);
    for (int i = 0; i < N; i++) {
        double u = agg_rand_uniform(&r), v = agg_rand_uniform_pos(&r);
        assert_true(u >= 0.0 && u < 1.0);
        assert_true(v > 0.0 && v < 1.0);
        mom_add(&m, u);
        mom_add(&mp, v);
    }
    double se = sqrt(1.0 / 12.0 / N);
    expect_close("uniform mean", seed, m.mean, 0.5, se);
    expect_close("uniform_pos mean", seed, mp.mean, 0.5, se);
    /* Var of the sample variance of U(0,1): (1/80 - 1/144) / n. */
    expect_close("uniform var", seed, mom_var(&m), 1.0 / 12.0, sqrt((1.0 / 80 - 1.0 / 144) / N));
    mom_fini(&m);
    mom_fini(&mp);
}

static void below_is_unbiased(void **state)
{
    (void)state;
    const uint64_t seed = 12;
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    for (int i = 0; i < 1000; i++)
        assert_true(agg_rand_below(&r, 1) == 0);

    /* bound = 3 * 2^62: a plain x % bound would return values below 2^62 with probability 1/2
     * instead of 1/3 (the wrap-around doubles them), which this detects at ~100 sigma. */
    const uint64_t big = (uint64_t)3 << 62;
    enum { N = 200000 };
    int low = 0;
    for (int i = 0; i < N; i++) {
        uint64_t x = agg_rand_below(&r, big);
        assert_true(x < big);
        low += x < ((uint64_t)1 << 62);
    }
    expect_close("below(3*2^62) < 2^62", seed, (double)low / N, 1.0 / 3.0, sqrt(2.0 / 9.0 / N));

    /* A small bound: chi-square over 7 cells, 6 degrees of freedom; 40 is beyond its 1 - 1e-6
     * quantile (about 35.9). */
    enum { CELLS = 7, M = 700000 };
    double count[CELLS] = {0};
    for (int i = 0; i < M; i++) {
        uint64_t x = agg_rand_below(&r, CELLS);
        assert_true(x < CELLS);
        count[x] += 1.0;
    }
    double chi2 = 0.0, e = (double)M / CELLS;
    for (int c = 0; c < CELLS; c++)
        chi2 += (count[c] - e) * (count[c] - e) / e;
    if (chi2 > 40.0) {
        print_error("below(7) chi-square %g (seed %llu)\n", chi2, (unsigned long long)seed);
        fail();
    }
}

static double draw_normal(agg_rand *r, const double *args)
{
    (void)args;
    return agg_rand_normal(r);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void normal_law(void **state)
{
    (void)state;
    const uint64_t seed = 13;
    check_moments("normal", seed, 1000000, 0.0, 1.0, draw_normal, NULL);

    /* Kolmogorov-Smirnov against Phi, and the tail beyond the ziggurat's base layer R (drawn by
     * the separate tail sampler): P(|X| > R) = erfc(R / sqrt 2) = 2.58e-4. */
    enum { N = 200000, T = 2000000 };
    agg_rand r;
    agg_rand_seed_u64(&r, seed + 1);
    double *xs = malloc(N * sizeof *xs);
    assert_non_null(xs);
    for (int i = 0; i < N; i++)
        xs[i] = agg_rand_normal(&r);
    qsort(xs, N, sizeof *xs, cmp_double);
    double d = 0.0;
    for (int i = 0; i < N; i++) {
        double f = 0.5 * erfc(-xs[i] / sqrt(2.0));
        double lo = f - (double)i / N, hi = (double)(i + 1) / N - f;
        d = fmax(d, fmax(lo, hi));
    }
    free(xs);
    /* P(D_n > c / sqrt n) ~ 2 exp(-2 c^2); c = 2.68 gives 1.1e-6. */
    if (d * sqrt((double)N) > 2.68) {
        print_error("normal KS statistic %g (seed %llu)\n", d, (unsigned long long)seed + 1);
        fail();
    }
    const double R = 3.6541528853610088;
    double p = erfc(R / sqrt(2.0));
    int tail = 0, pos = 0;
    for (int i = 0; i < T; i++) {
        double x = agg_rand_normal(&r);
        if (fabs(x) > R) {
            tail++;
            pos += x > 0.0;
        }
    }
    expect_close("normal tail beyond R", seed + 1, (double)tail / T, p, sqrt(p * (1 - p) / T));
    expect_close("normal tail sign", seed + 1, (double)pos / tail, 0.5, sqrt(0.25 / tail));
}

static double draw_gamma(agg_rand *r, const double *args)
{
    return agg_rand_gamma(r, args[0]);
}

static void gamma_law(void **state)
{
    (void)state;
    static const double shapes[] = {0.05, 0.3, 1.0, 2.5, 57.0, 1e6};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "gamma(%g)", shapes[i]);
        check_moments(what, 20 + i, 400000, shapes[i], shapes[i], draw_gamma, &shapes[i]);
    }
}

static double draw_beta(agg_rand *r, const double *args)
{
    return agg_rand_beta(r, args[0], args[1]);
}

static void beta_law(void **state)
{
    (void)state;
    static const double ab[][2] = {{1, 1},   {4, 1},       {0.5, 0.5}, {57, 12},
                                   {2, 1e5}, {0.01, 0.02}, {0.3, 3}};
    for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) {
        double a = ab[i][0], b = ab[i][1];
        double mean = a / (a + b), var = a * b / ((a + b) * (a + b) * (a + b + 1));
        char what[64];
        snprintf(what, sizeof what, "beta(%g, %g)", a, b);
        check_moments(what, 40 + i, 400000, mean, var, draw_beta, ab[i]);
    }
    /* Tiny shapes put nearly all mass at 0 and 1; the log-space path must not produce 0/0. */
    agg_rand r;
    agg_rand_seed_u64(&r, 49);
    for (int i = 0; i < 10000; i++) {
        double x = agg_rand_beta(&r, 1e-300, 1e-300);
        assert_true(x >= 0.0 && x <= 1.0);
    }
}

static void prepared_shapes_give_the_same_stream(void **state)
{
    (void)state;
    /* agg_rand_gamma_shape = agg_rand_gamma and agg_rand_beta_fill = repeated
     * agg_rand_beta_shapes = agg_rand_beta, draw for draw (boosted shapes included). */
    static const double a[] = {1, 3, 0.5, 120, 7.5, 1};
    static const double b[] = {1, 9, 2, 0.2, 7.5, 4000};
    enum { K = sizeof a / sizeof a[0], ROUNDS = 2000 };
    agg_gamma_shape ga[K], gb[K];
    for (int i = 0; i < K; i++) {
        agg_gamma_shape_init(&ga[i], a[i]);
        agg_gamma_shape_init(&gb[i], b[i]);
    }
    agg_rand r1, r2, r3;
    agg_rand_seed_u64(&r1, 50);
    r2 = r3 = r1;
    for (int t = 0; t < ROUNDS; t++) {
        double fill[K];
        agg_rand_beta_fill(&r1, ga, gb, K, fill);
        for (int i = 0; i < K; i++) {
            assert_true(fill[i] == agg_rand_beta_shapes(&r2, &ga[i], &gb[i]));
            assert_true(fill[i] == agg_rand_beta(&r3, a[i], b[i]));
        }
        assert_memory_equal(r1.s, r2.s, sizeof r1.s);
    }
    for (int i = 0; i < 1000; i++)
        assert_true(agg_rand_gamma_shape(&r1, &ga[i % K]) == agg_rand_gamma(&r2, a[i % K]));
}

/* agg_rand_beta_argmax draws exactly what agg_rand_beta_fill draws and returns the index of the
 * largest (continuous draws: no ties in practice). */
static void beta_argmax_is_the_argmax_of_the_fill(void **state)
{
    (void)state;
    static const double a[] = {1, 3, 0.5, 12, 7.5, 1, 2000, 40, 0.2};
    static const double b[] = {1, 3, 0.4, 12, 7.5, 1.2, 2100, 35, 0.3};
    enum { K = sizeof a / sizeof a[0], ROUNDS = 5000 };
    agg_gamma_shape ga[K], gb[K];
    for (int i = 0; i < K; i++) {
        agg_gamma_shape_init(&ga[i], a[i]);
        agg_gamma_shape_init(&gb[i], b[i]);
    }
    agg_rand r1, r2;
    agg_rand_seed_u64(&r1, 51);
    r2 = r1;
    unsigned hits[K] = {0};
    for (int t = 0; t < ROUNDS; t++) {
        double fill[K];
        agg_rand_beta_fill(&r1, ga, gb, K, fill);
        uint32_t want = 0;
        for (uint32_t i = 1; i < K; i++)
            if (fill[i] > fill[want])
                want = i;
        uint32_t got = agg_rand_beta_argmax(&r2, ga, gb, K);
        assert_int_equal(got, want);
        assert_memory_equal(r1.s, r2.s, sizeof r1.s);
        hits[got]++;
    }
    /* Not always the same arm: the comparison does something. */
    int winners = 0;
    for (int i = 0; i < K; i++)
        winners += hits[i] > 0;
    assert_true(winners >= 3);
}

/* Exact ties (tiny boosted shapes draw Beta = 0 exactly) are broken uniformly: 4 tied arms over
 * 40000 rounds, each count within 6 sd (86.6) of 10000; false failure probability < 1e-8. */
static void beta_argmax_breaks_ties_uniformly(void **state)
{
    (void)state;
    enum { K = 4, ROUNDS = 40000 };
    agg_gamma_shape ga[K], gb[K];
    for (int i = 0; i < K; i++) {
        agg_gamma_shape_init(&ga[i], 1e-300);
        agg_gamma_shape_init(&gb[i], 1.0);
    }
    agg_rand r;
    agg_rand_seed_u64(&r, 52);
    double one[1];
    agg_rand_beta_fill(&r, ga, gb, 1, one);
    assert_true(one[0] == 0.0); /* the premise: these draws tie at 0 */
    unsigned hits[K] = {0};
    for (int t = 0; t < ROUNDS; t++)
        hits[agg_rand_beta_argmax(&r, ga, gb, K)]++;
    for (int i = 0; i < K; i++)
        assert_true(hits[i] > 10000 - 520 && hits[i] < 10000 + 520);
}

/* The whole law, not just two moments. The draws are mapped through the law's CDF (GSL), which
 * must give uniforms: a Kolmogorov-Smirnov test (P(sqrt(n) D > 2.68) ~ 1.1e-6), and the
 * frequencies of both 1e-3 tails, where the Marsaglia-Tsang squeezes and the ziggurat's wedges
 * and tail decide (z = 5 each). A squeeze that accepted too much would show here first. */
static void check_law(const char *what, uint64_t seed, double *xs, size_t n,
                      double (*cdf)(double, const double *), const double *args)
{
    const double p = 1e-3;
    size_t lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        xs[i] = cdf(xs[i], args);
        lo += xs[i] < p;
        hi += xs[i] > 1.0 - p;
    }
    char tail[96];
    snprintf(tail, sizeof tail, "%s lower 1e-3 tail", what);
    expect_close(tail, seed, (double)lo / (double)n, p, sqrt(p * (1 - p) / (double)n));
    snprintf(tail, sizeof tail, "%s upper 1e-3 tail", what);
    expect_close(tail, seed, (double)hi / (double)n, p, sqrt(p * (1 - p) / (double)n));
    qsort(xs, n, sizeof *xs, cmp_double);
    double d = 0.0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fmax(xs[i] - (double)i / (double)n, (double)(i + 1) / (double)n - xs[i]));
    if (d * sqrt((double)n) > 2.68) {
        print_error("%s (seed %llu): KS statistic sqrt(n) D = %g > 2.68\n", what,
                    (unsigned long long)seed, d * sqrt((double)n));
        fail();
    }
}

static double cdf_gamma(double x, const double *args)
{
    return gsl_cdf_gamma_P(x, args[0], 1.0);
}

static double cdf_beta(double x, const double *args)
{
    return gsl_cdf_beta_P(x, args[0], args[1]);
}

/* A high-power check where the accept/reject decisions matter most: small shapes, where a
 * Marsaglia-Tsang squeeze leaves the most proposals to the exact test. CELL_DRAWS draws fall into
 * CELLS cells of equal probability (edges from GSL's quantile function); the chi-square statistic
 * with CELLS - 1 degrees of freedom is compared with its 1 - 1e-6 quantile. A squeeze that
 * wrongly accepted 0.1% of the proposals at shape 1 fails it; the KS test above does not see
 * that below ~10^7 draws. */
enum { CELLS = 128, CELL_DRAWS = 4000000, CELL_CHUNK = 1000 };

typedef void (*fill_fn)(agg_rand *r, const double *args, double *out, size_t n);
typedef double (*quantile_fn)(double p, const double *args);

static void check_cells(const char *what, uint64_t seed, fill_fn fill, quantile_fn quantile,
                        const double *args)
{
    double edges[CELLS - 1], count[CELLS] = {0}, buf[CELL_CHUNK];
    for (int c = 1; c < CELLS; c++) {
        edges[c - 1] = quantile((double)c / CELLS, args);
        assert_true(isfinite(edges[c - 1]) && (c == 1 || edges[c - 1] > edges[c - 2]));
    }
    agg_rand r;
    agg_rand_seed_u64(&r, seed);
    for (int done = 0; done < CELL_DRAWS; done += CELL_CHUNK) {
        fill(&r, args, buf, CELL_CHUNK);
        for (int i = 0; i < CELL_CHUNK; i++) {
            int lo = 0, hi = CELLS - 1; /* the cell: the number of edges <= x */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (edges[mid] <= buf[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            count[lo] += 1.0;
        }
    }
    double chi2 = 0.0, e = (double)CELL_DRAWS / CELLS;
    for (int c = 0; c < CELLS; c++)
        chi2 += (count[c] - e) * (count[c] - e) / e;
    double crit = gsl_cdf_chisq_Qinv(1e-6, CELLS - 1);
    if (!(chi2 <= crit)) {
        print_error("%s (seed %llu): chi-square %g over %d equiprobable cells > %g\n", what,
                    (unsigned long long)seed, chi2, CELLS, crit);
        fail();
    }
}

static void fill_gamma(agg_rand *r, const double *args, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = agg_rand_gamma(r, args[0]);
}

/* Through agg_rand_beta_fill in rounds of 20 arms, as ts.c draws. */
static void fill_beta(agg_rand *r, const double *args, double *out, size_t n)
{
    enum { K = 20 };
    agg_gamma_shape ga[K], gb[K];
    for (int j = 0; j < K; j++) {
        agg_gamma_shape_init(&ga[j], args[0]);
        agg_gamma_shape_init(&gb[j], args[1]);
    }
    assert_true(n % K == 0);
    for (size_t i = 0; i < n; i += K)
        agg_rand_beta_fill(r, ga, gb, K, out + i);
}

static double quantile_gamma(double p, const double *args)
{
    return gsl_cdf_gamma_Pinv(p, args[0], 1.0);
}

static double quantile_beta(double p, const double *args)
{
    return gsl_cdf_beta_Pinv(p, args[0], args[1]);
}

static void small_shapes_in_cells(void **state)
{
    (void)state;
    static const double g[] = {0.3, 1.0, 1.5, 3.0, 20.0};
    static const double ab[][2] = {{1, 1}, {2, 5}, {13, 4}, {250, 40}};
    for (size_t s = 0; s < sizeof g / sizeof g[0]; s++) {
        char what[64];
        snprintf(what, sizeof what, "gamma(%g)", g[s]);
        check_cells(what, 100 + s, fill_gamma, quantile_gamma, &g[s]);
    }
    for (size_t s = 0; s < sizeof ab / sizeof ab[0]; s++) {
        char what[64];
        snprintf(what, sizeof what, "beta(%g, %g)", ab[s][0], ab[s][1]);
        check_cells(what, 110 + s, fill_beta, quantile_beta, ab[s]);
    }
}

static void gamma_law_against_cdf(void **state)
{
    (void)state;
    static const double shapes[] = {0.3, 1.0, 1.5, 3.0, 20.0, 300.0};
    enum { N = 200000 };
    double *xs = malloc(N * sizeof *xs);
    assert_non_null(xs);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const uint64_t seed = 80 + s;
        agg_rand r;
        agg_rand_seed_u64(&r, seed);
        for (int i = 0; i < N; i++)
            xs[i] = agg_rand_gamma(&r, shapes[s]);
        char what[64];
        snprintf(what, sizeof what, "gamma(%g)", shapes[s]);
        check_law(what, seed, xs, N, cdf_gamma, &shapes[s]);
    }
    free(xs);
}

static void beta_law_against_cdf(void **state)
{
    (void)state;
    /* Shapes as Thompson sampling meets them (small and large counts, skewed posteriors) plus
     * boosted ones below 1. Drawn through agg_rand_beta_fill in rounds of K, as ts.c does. */
    static const double ab[][2] = {{1, 1},    {2, 5},       {1, 40},    {13, 4},
                                   {250, 40}, {9000, 1100}, {0.5, 0.5}, {0.3, 3}};
    enum { N = 200000, K = 20 };
    double *xs = malloc(N * sizeof *xs);
    assert_non_null(xs);
    for (size_t s = 0; s < sizeof ab / sizeof ab[0]; s++) {
        const uint64_t seed = 90 + s;
        agg_rand r;
        agg_rand_seed_u64(&r, seed);
        agg_gamma_shape ga[K], gb[K];
        for (int j = 0; j < K; j++) {
            agg_gamma_shape_init(&ga[j], ab[s][0]);
            agg_gamma_shape_init(&gb[j], ab[s][1]);
        }
        for (int i = 0; i < N; i += K)
            agg_rand_beta_fill(&r, ga, gb, K, xs + i);
        char what[64];
        snprintf(what, sizeof what, "beta(%g, %g)", ab[s][0], ab[s][1]);
        check_law(what, seed, xs, N, cdf_beta, ab[s]);
    }
    free(xs);
}

static void binomial_law(void **state)
{
    (void)state;
    agg_rand r;
    agg_rand_seed_u64(&r, 60);
    assert_true(agg_rand_binomial(&r, 0, 0.5) == 0);
    assert_true(agg_rand_binomial(&r, 1000, 0.0) == 0);
    assert_true(agg_rand_binomial(&r, 1000, 1.0) == 1000);
    assert_true(agg_rand_binomial(&r, UINT64_MAX, 1.0) == UINT64_MAX);

    /* Small n (inversion), moderate n (BTPE), and large n p (1 - p) or n beyond GSL's int range
     * (the order-statistic split), each against n p and n p (1 - p). At (1.5e9, 0.4) GSL's BTPE
     * alone gives an 11% excess variance (an int overflow in its squeeze), 11 standard errors
     * here. */
    static const struct {
        uint64_t n;
        double p;
        int draws;
    } cases[] = {
        {1, 0.3, 200000},          {20, 0.3, 200000},           {1000, 0.5, 200000},
        {1000000, 0.999, 100000},  {10000000, 0.5, 50000},      {1500000000, 0.4, 20000},
        {3000000000u, 0.2, 20000}, {1000000000000u, 0.3, 4000}, {(uint64_t)1 << 62, 1e-15, 4000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t n = cases[i].n;
        double p = cases[i].p, np = (double)n * p, var = np * (1.0 - p);
        agg_rand_seed_u64(&r, 61 + i);
        moments m;
        mom_init(&m, (size_t)cases[i].draws);
        for (int j = 0; j < cases[i].draws; j++) {
            uint64_t x = agg_rand_binomial(&r, n, p);
            assert_true(x <= n);
            mom_add(&m, (double)x - np); /* centred: keeps the huge-n moments exact */
        }
        char what[64];
        snprintf(what, sizeof what, "binomial(%llu, %g)", (unsigned long long)n, p);
        expect_close(what, 61 + i, m.mean, 0.0, sqrt(var / m.n));
        expect_close(what, 61 + i, mom_var(&m), var, mom_var_se(&m));
        mom_fini(&m);
    }
}

static double draw_laplace(agg_rand *r, const double *args)
{
    return agg_rand_laplace(r, args[0]);
}

/* P(|X| > scale) = 1/e for Laplace. */
static void check_laplace_tail(const char *what, uint64_t seed, const double *xs, size_t n,
                               double scale)
{
    size_t over = 0;
    for (size_t i = 0; i < n; i++)
        over += fabs(xs[i]) > scale;
    double p = exp(-1.0);
    expect_close(what, seed, (double)over / (double)n, p, sqrt(p * (1 - p) / (double)n));
}

static void laplace_law(void **state)
{
    (void)state;
    const double scale = 2.5;
    check_moments("laplace", 70, 1000000, 0.0, 2.0 * scale * scale, draw_laplace, &scale);
    enum { N = 400000 };
    double *xs = malloc(N * sizeof *xs);
    assert_non_null(xs);
    agg_rand r;
    agg_rand_seed_u64(&r, 71);
    for (int i = 0; i < N; i++)
        xs[i] = agg_rand_laplace(&r, scale);
    check_laplace_tail("laplace tail", 71, xs, N, scale);
    free(xs);
}

static void noise_sources(void **state)
{
    (void)state;
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {7};
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    agg_rand fast;
    agg_rand_seed_u64(&fast, 72);

    agg_noise *n = NULL;
    assert_int_equal(agg_noise_new(NULL, AGG_NOISE_FAST, NULL, &fast), LDPB_EINVAL);
    assert_int_equal(agg_noise_new(&n, AGG_NOISE_SECURE, NULL, &fast), LDPB_EINVAL);
    assert_null(n);
    assert_int_equal(agg_noise_new(&n, AGG_NOISE_FAST, rng, NULL), LDPB_EINVAL);
    assert_int_equal(agg_noise_new(&n, (agg_noise_kind)9, rng, &fast), LDPB_EINVAL);
    agg_noise_free(NULL);

    const double scale = 3.0;
    enum { N = 400000 };
    double *xs = malloc(N * sizeof *xs);
    assert_non_null(xs);
    for (int kind = AGG_NOISE_SECURE; kind <= AGG_NOISE_FAST; kind++) {
        assert_int_equal(agg_noise_new(&n, (agg_noise_kind)kind, rng, &fast), LDPB_OK);
        assert_int_equal(agg_noise_get_kind(n), kind);
        assert_true(isnan(agg_noise_laplace(n, 0.0)));
        assert_true(isnan(agg_noise_laplace(n, -1.0)));
        assert_true(isnan(agg_noise_laplace(n, INFINITY)));
        assert_true(isnan(agg_noise_laplace(n, NAN)));
        moments m;
        mom_init(&m, N);
        for (int i = 0; i < N; i++) {
            xs[i] = agg_noise_laplace(n, scale);
            mom_add(&m, xs[i]);
        }
        const char *what = kind == AGG_NOISE_SECURE ? "secure noise" : "fast noise";
        /* The secure noise has scale 1 + 1e-7 (the grid mechanism never adds less than asked),
         * far inside the tolerance. */
        expect_close(what, 73, m.mean, 0.0, sqrt(2.0 * scale * scale / N));
        expect_close(what, 73, mom_var(&m), 2.0 * scale * scale, mom_var_se(&m));
        check_laplace_tail(what, 73, xs, N, scale);
        if (kind == AGG_NOISE_SECURE) {
            /* Outputs are the grid values times the scale: multiples of 3 * 2^-16. */
            for (int i = 0; i < 1000; i++) {
                double g = xs[i] / scale * 65536.0;
                assert_true(fabs(g - round(g)) < 1e-6);
            }
        }
        mom_fini(&m);
        agg_noise_free(n);
    }
    free(xs);
    ldpb_rng_free(rng);
}

int main(void)
{
    gsl_set_error_handler_off(); /* a quantile that fails returns NaN and the test says so */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(xoshiro_reference_output),
        cmocka_unit_test(seeding),
        cmocka_unit_test(uniform_ranges_and_moments),
        cmocka_unit_test(below_is_unbiased),
        cmocka_unit_test(normal_law),
        cmocka_unit_test(gamma_law),
        cmocka_unit_test(beta_law),
        cmocka_unit_test(prepared_shapes_give_the_same_stream),
        cmocka_unit_test(beta_argmax_is_the_argmax_of_the_fill),
        cmocka_unit_test(beta_argmax_breaks_ties_uniformly),
        cmocka_unit_test(gamma_law_against_cdf),
        cmocka_unit_test(beta_law_against_cdf),
        cmocka_unit_test(small_shapes_in_cells),
        cmocka_unit_test(binomial_law),
        cmocka_unit_test(laplace_law),
        cmocka_unit_test(noise_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
