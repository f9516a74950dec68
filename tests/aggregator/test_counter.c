/* Continual counters and stopping rules (aggregator/src/counter.c, stopping.c): the binary tree
 * releases unbiased prefix sums built from exactly popcount(t) noisy nodes, every input enters at
 * most Lv nodes, the error variance is 2 popcount(t) (Lv/eps)^2, the hybrid mechanism's
 * error matches its construction, state round-trips exactly, and DP-NAS / DP exponential NAS halt
 * with the right sign and never too early. Statistical checks use fixed seeds, print the seed when
 * they fail and state their false-failure probability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "counter.h"
#include "rand.h"
#include "statefmt.h"
#include "stopping.h"

/* A failed statistical check names its seed and numbers before failing. */
#define CHECK_STAT(cond, seed, ...)                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_error("seed %llu: ", (unsigned long long)(seed));                                \
            print_error(__VA_ARGS__);                                                              \
            print_error("\n");                                                                     \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

typedef struct fast_noise {
    agg_rand rand;
    agg_noise *noise;
} fast_noise;

static void fast_noise_init(fast_noise *f, uint64_t seed)
{
    agg_rand_seed_u64(&f->rand, seed);
    assert_int_equal(agg_noise_new(&f->noise, AGG_NOISE_FAST, NULL, &f->rand), LDPB_OK);
}

static uint32_t popcount(uint64_t x)
{
    uint32_t n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* ---- binary tree --------------------------------------------------------------------------- */

static void tree_levels_cover_the_horizon(void **state)
{
    (void)state;
    assert_int_equal(agg_tree_levels(0), 0);
    assert_int_equal(agg_tree_levels(1), 1);
    assert_int_equal(agg_tree_levels(2), 2);
    assert_int_equal(agg_tree_levels(3), 2);
    assert_int_equal(agg_tree_levels(4), 3);
    assert_int_equal(agg_tree_levels(127), 7);
    assert_int_equal(agg_tree_levels(128), 8);
    /* docs/derivations.md 11: T = 5e7 needs 26 levels; worst prefix variance 35152/eps^2. */
    assert_int_equal(agg_tree_levels(50000000), 26);
    assert_int_equal(agg_tree_levels(UINT64_MAX), 64);
    agg_tree *t = NULL;
    assert_int_equal(agg_tree_new(&t, 50000000, 1.0, 0.0, 1.0), LDPB_OK);
    assert_int_equal(agg_tree_depth(t), 26);
    assert_true(fabs(agg_tree_noise_scale(t) - 26.0) < 1e-12);
    assert_true(fabs(2 * 26 * pow(agg_tree_noise_scale(t), 2) - 35152.0) < 1e-6);
    agg_tree_free(t);
}

/* After every input: the release is the sum of the noisy p-sums at the set bits of t (exactly
 * popcount(t) nodes), every other level is empty, the exact p-sums tile [1, t] with dyadic
 * intervals, and no completed node's noise changes later. */
static void tree_release_uses_popcount_nodes(void **state)
{
    (void)state;
    enum { T = 300 };
    fast_noise f;
    fast_noise_init(&f, 11);
    agg_tree *t = NULL;
    assert_int_equal(agg_tree_new(&t, T, 0.5, 0.0, 1.0), LDPB_OK);
    double z[T + 1], prefix[T + 1], kept[AGG_TREE_MAX_LEVELS] = {0};
    prefix[0] = 0;
    for (uint64_t n = 1; n <= T; n++) {
        z[n] = (double)((n * 37) % 11) / 10.0;
        prefix[n] = prefix[n - 1] + z[n];
        double rel = 0;
        assert_int_equal(agg_tree_push(t, f.noise, z[n], &rel), LDPB_OK);
        assert_true(rel == agg_tree_release(t));
        assert_int_equal(agg_tree_count(t), n);
        double sum_noisy = 0;
        uint32_t used = 0;
        for (uint32_t j = agg_tree_depth(t); j-- > 0;) {
            double ex, no;
            assert_int_equal(agg_tree_node(t, j, &ex, &no), LDPB_OK);
            if (!(n >> j & 1)) {
                assert_true(ex == 0 && no == 0);
                continue;
            }
            used++;
            sum_noisy += no;
        }
        /* Interval of level j: (start, start + 2^j] with start = n with bits <= j cleared. */
        for (uint32_t j = 0; j < agg_tree_depth(t); j++) {
            if (!(n >> j & 1))
                continue;
            uint64_t hi = n & ~(((uint64_t)1 << j) - 1);
            uint64_t lo = hi - ((uint64_t)1 << j);
            double ex;
            assert_int_equal(agg_tree_node(t, j, &ex, NULL), LDPB_OK);
            assert_true(fabs(ex - (prefix[hi] - prefix[lo])) < 1e-9);
        }
        assert_int_equal(used, popcount(n));
        /* Levels above the one just completed keep their noisy p-sum: noise is drawn once per
         * node, when it completes, never again at a release. */
        uint32_t low = 0;
        while (!(n >> low & 1))
            low++;
        for (uint32_t j = 0; j < agg_tree_depth(t); j++) {
            double no;
            assert_int_equal(agg_tree_node(t, j, NULL, &no), LDPB_OK);
            if (j > low)
                assert_true(memcmp(&no, &kept[j], sizeof no) == 0);
            kept[j] = no;
        }
        assert_true(fabs(rel - sum_noisy) <= 1e-9 * (1 + fabs(rel)));
        assert_true(fabs(agg_tree_exact(t) - prefix[n]) < 1e-9);
    }
    agg_tree_free(t);
    agg_noise_free(f.noise);
}

/* An impulse at position s enters exactly the nodes completed at n = s, s + lowbit(s), ... up
 * to T: one per level at most, so at most Lv. */
static void tree_input_enters_at_most_lv_nodes(void **state)
{
    (void)state;
    enum { T = 100 };
    fast_noise f;
    fast_noise_init(&f, 12);
    for (uint64_t s = 1; s <= T; s++) {
        agg_tree *t = NULL;
        assert_int_equal(agg_tree_new(&t, T, 1.0, 0.0, 1.0), LDPB_OK);
        uint32_t lv = agg_tree_depth(t);
        uint32_t entered = 0;
        for (uint64_t n = 1; n <= T; n++) {
            assert_int_equal(agg_tree_push(t, f.noise, n == s ? 1.0 : 0.0, NULL), LDPB_OK);
            uint32_t level = 0;
            while (!(n >> level & 1))
                level++;
            double ex;
            assert_int_equal(agg_tree_node(t, level, &ex, NULL), LDPB_OK);
            if (ex == 1.0)
                entered++;
        }
        /* The node completed at time n covers (n - lowbit(n), n]; those holding s are
         * n = s, s + lowbit(s), ... (each step raises the level, hence at most Lv). */
        uint32_t expect = 0;
        for (uint64_t n = s; n <= T; n += n & (~n + 1))
            expect++;
        assert_int_equal(entered, expect);
        assert_true(entered >= 1 && entered <= lv);
        agg_tree_free(t);
    }
    agg_noise_free(f.noise);
}

/* The tree's variance with FAST noise: over 1e5 trials, the error at t has mean 0 and variance
 * 2 popcount(t) (Lv/eps)^2 within 5%. The sample variance of a sum of k Laplace terms has
 * relative standard error sqrt((2 + 3/k)/n) <= 0.71% at n = 1e5, so 5% is >= 7 standard errors
 * (false failure < 1e-11 per t); the mean is checked at 5 standard errors (< 6e-7 per t). Over the
 * 9 times checked the false-failure probability is below 1e-5. */
static void tree_error_variance_matches_a8(void **state)
{
    (void)state;
    enum { T = 127, TRIALS = 100000, NT = 9 };
    const uint64_t ts[NT] = {1, 2, 3, 7, 8, 13, 64, 85, 127};
    const uint64_t seed = 20240501;
    const double eps = 1.0;
    fast_noise f;
    fast_noise_init(&f, seed);
    agg_rand inputs;
    agg_rand_seed_u64(&inputs, seed + 1);
    double sum[NT] = {0}, sumsq[NT] = {0};
    agg_tree *t = NULL;
    assert_int_equal(agg_tree_new(&t, T, eps, 0.0, 1.0), LDPB_OK);
    const double lv = 7; /* ceil(log2(127 + 1)) */
    for (int trial = 0; trial < TRIALS; trial++) {
        agg_tree_free(t);
        assert_int_equal(agg_tree_new(&t, T, eps, 0.0, 1.0), LDPB_OK);
        double exact = 0;
        int next = 0;
        for (uint64_t n = 1; n <= T; n++) {
            double z = agg_rand_uniform(&inputs), rel;
            exact += z;
            assert_int_equal(agg_tree_push(t, f.noise, z, &rel), LDPB_OK);
            if (next < NT && n == ts[next]) {
                double err = rel - exact;
                sum[next] += err;
                sumsq[next] += err * err;
                next++;
            }
        }
    }
    for (int i = 0; i < NT; i++) {
        double mean = sum[i] / TRIALS;
        double var = sumsq[i] / TRIALS - mean * mean;
        double expect = 2.0 * popcount(ts[i]) * (lv / eps) * (lv / eps);
        CHECK_STAT(fabs(var / expect - 1) < 0.05, seed, "t %llu: variance %g, expected %g",
                   (unsigned long long)ts[i], var, expect);
        CHECK_STAT(fabs(mean) < 5 * sqrt(expect / TRIALS), seed, "t %llu: mean error %g",
                   (unsigned long long)ts[i], mean);
    }
    agg_tree_free(t);
    agg_noise_free(f.noise);
}

/* The same with the production (SECURE) noise, smaller: 1e4 trials, T = 31, tolerance 15% on
 * the variance (relative standard error <= 2.3%, so >= 6.5 standard errors: false failure
 * < 1e-9 per t) and 5 standard errors on the mean (< 6e-7 per t). */
static void tree_error_variance_secure(void **state)
{
    (void)state;
    enum { T = 31, TRIALS = 10000, NT = 4 };
    const uint64_t ts[NT] = {1, 7, 16, 31};
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {7};
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_SECURE, rng, NULL), LDPB_OK);
    const double eps = 2.0;
    double sum[NT] = {0}, sumsq[NT] = {0};
    for (int trial = 0; trial < TRIALS; trial++) {
        agg_tree *t = NULL;
        assert_int_equal(agg_tree_new(&t, T, eps, 0.0, 1.0), LDPB_OK);
        double exact = 0;
        int next = 0;
        for (uint64_t n = 1; n <= T; n++) {
            double z = (double)(n % 3) / 2, rel;
            exact += z;
            assert_int_equal(agg_tree_push(t, noise, z, &rel), LDPB_OK);
            if (next < NT && n == ts[next]) {
                sum[next] += rel - exact;
                sumsq[next] += (rel - exact) * (rel - exact);
                next++;
            }
        }
        agg_tree_free(t);
    }
    for (int i = 0; i < NT; i++) {
        double mean = sum[i] / TRIALS;
        double var = sumsq[i] / TRIALS - mean * mean;
        double expect = 2.0 * popcount(ts[i]) * (5 / eps) * (5 / eps); /* Lv = 5 for T = 31 */
        CHECK_STAT(fabs(var / expect - 1) < 0.15, 7, "t %llu: variance %g, expected %g",
                   (unsigned long long)ts[i], var, expect);
        CHECK_STAT(fabs(mean) < 5 * sqrt(expect / TRIALS), 7, "t %llu: mean error %g",
                   (unsigned long long)ts[i], mean);
    }
    agg_noise_free(noise);
    ldpb_rng_free(rng);
}

static void tree_refuses_misuse(void **state)
{
    (void)state;
    fast_noise f;
    fast_noise_init(&f, 13);
    agg_tree *t = NULL;
    assert_int_equal(agg_tree_new(NULL, 4, 1.0, 0.0, 1.0), LDPB_EINVAL);
    assert_int_equal(agg_tree_new(&t, 0, 1.0, 0.0, 1.0), LDPB_ERANGE);
    assert_null(t);
    assert_int_equal(agg_tree_new(&t, 4, 0.0, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_tree_new(&t, 4, -1.0, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_tree_new(&t, 4, NAN, 0.0, 1.0), LDPB_EINVAL);
    assert_int_equal(agg_tree_new(&t, 4, INFINITY, 0.0, 1.0), LDPB_EINVAL);
    assert_int_equal(agg_tree_new(&t, 4, 1e-310, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_tree_new(&t, 4, 1.0, 1.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_tree_new(&t, 4, 1.0, 0.0, 1.0), LDPB_OK);
    assert_int_equal(agg_tree_push(t, NULL, 0.5, NULL), LDPB_EINVAL);
    assert_int_equal(agg_tree_push(t, f.noise, NAN, NULL), LDPB_EINVAL);
    assert_int_equal(agg_tree_push(t, f.noise, 1.5, NULL), LDPB_ERANGE);
    assert_int_equal(agg_tree_push(t, f.noise, -0.1, NULL), LDPB_ERANGE);
    assert_int_equal(agg_tree_count(t), 0);
    assert_true(agg_tree_release(t) == 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(agg_tree_push(t, f.noise, 1.0, NULL), LDPB_OK);
    double before = agg_tree_release(t);
    assert_int_equal(agg_tree_push(t, f.noise, 1.0, NULL), LDPB_ESTATE);
    assert_true(agg_tree_release(t) == before);
    assert_int_equal(agg_tree_node(t, 3, NULL, NULL), LDPB_ERANGE);
    assert_int_equal(agg_tree_node(t, 2, NULL, NULL), LDPB_OK);
    agg_tree_free(t);
    agg_tree_free(NULL);
    /* A symmetric range works and scales the noise by its width. */
    assert_int_equal(agg_tree_new(&t, 8, 2.0, -0.5, 0.5), LDPB_OK);
    assert_true(fabs(agg_tree_noise_scale(t) - 4 * 1.0 / 2.0) < 1e-12);
    assert_int_equal(agg_tree_push(t, f.noise, -0.5, NULL), LDPB_OK);
    agg_tree_free(t);
    agg_noise_free(f.noise);
}

static size_t tree_save_bytes(const agg_tree *t, uint8_t *buf, size_t cap)
{
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_tree_save(t, &w);
    size_t len = 0;
    assert_int_equal(agg_wbuf_finish(&w, &len), LDPB_OK);
    return len;
}

static ldpb_err tree_restore_bytes(agg_tree *t, const uint8_t *buf, size_t len)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_tree_restore(t, &r);
    if (err == LDPB_OK && !agg_rbuf_done(&r))
        return LDPB_ECORRUPT;
    return err;
}

/* Save mid-run, continue; restore into a fresh tree and continue with the same noise stream:
 * bit-identical releases. Then every way of corrupting the record is refused, the tree unchanged.
 */
static void tree_state_round_trips(void **state)
{
    (void)state;
    enum { T = 200, CUT = 77 };
    fast_noise f;
    fast_noise_init(&f, 14);
    agg_tree *a = NULL, *b = NULL;
    assert_int_equal(agg_tree_new(&a, T, 0.7, 0.0, 1.0), LDPB_OK);
    assert_int_equal(agg_tree_new(&b, T, 0.7, 0.0, 1.0), LDPB_OK);
    for (int n = 1; n <= CUT; n++)
        assert_int_equal(agg_tree_push(a, f.noise, (n % 5) / 4.0, NULL), LDPB_OK);
    uint8_t buf[4096];
    size_t len = tree_save_bytes(a, buf, sizeof buf);
    agg_rand saved_rand = f.rand;
    double rel_a[T], rel_b[T];
    for (int n = CUT + 1; n <= T; n++)
        assert_int_equal(agg_tree_push(a, f.noise, (n % 7) / 6.0, &rel_a[n - 1]), LDPB_OK);
    assert_int_equal(tree_restore_bytes(b, buf, len), LDPB_OK);
    assert_int_equal(agg_tree_count(b), CUT);
    f.rand = saved_rand;
    for (int n = CUT + 1; n <= T; n++)
        assert_int_equal(agg_tree_push(b, f.noise, (n % 7) / 6.0, &rel_b[n - 1]), LDPB_OK);
    assert_memory_equal(rel_a + CUT, rel_b + CUT, (T - CUT) * sizeof(double));

    /* Corruptions, against a tree holding a known state. */
    agg_tree *c = NULL;
    assert_int_equal(agg_tree_new(&c, T, 0.7, 0.0, 1.0), LDPB_OK);
    uint8_t good[4096];
    memcpy(good, buf, len);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(tree_restore_bytes(c, good, cut), LDPB_ECORRUPT);
    uint8_t bad[4096];
    /* horizon, count > horizon, epsilon, lo, hi */
    const size_t fields[] = {0, 8, 16, 24, 32};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        memcpy(bad, good, len);
        bad[fields[i] + 6] ^= 0x40;
        assert_int_equal(tree_restore_bytes(c, bad, len), LDPB_ECORRUPT);
    }
    /* CUT = 77 = 0b1001101: level 1 is empty and must hold zeros. */
    memcpy(bad, good, len);
    bad[40 + 16 + 7] = 0x3f; /* alpha[1] = a nonzero double */
    assert_int_equal(tree_restore_bytes(c, bad, len), LDPB_ECORRUPT);
    /* A NaN noisy p-sum at a used level. */
    memcpy(bad, good, len);
    memset(bad + 40 + 8, 0xff, 8);
    assert_int_equal(tree_restore_bytes(c, bad, len), LDPB_ECORRUPT);
    /* An exact p-sum at level 0 above its range (one input in [0,1]). */
    memcpy(bad, good, len);
    {
        double big = 2.0;
        uint64_t bits;
        memcpy(&bits, &big, 8);
        for (int i = 0; i < 8; i++)
            bad[40 + i] = (uint8_t)(bits >> (8 * i));
    }
    assert_int_equal(tree_restore_bytes(c, bad, len), LDPB_ECORRUPT);
    assert_int_equal(agg_tree_count(c), 0);
    /* A different configuration refuses the record. */
    agg_tree *other = NULL;
    assert_int_equal(agg_tree_new(&other, T, 0.8, 0.0, 1.0), LDPB_OK);
    assert_int_equal(tree_restore_bytes(other, good, len), LDPB_ECORRUPT);
    assert_int_equal(tree_restore_bytes(c, good, len), LDPB_OK);
    assert_int_equal(agg_tree_restore(NULL, NULL), LDPB_EINVAL);
    agg_tree_free(other);
    agg_tree_free(c);
    agg_tree_free(a);
    agg_tree_free(b);
    agg_noise_free(f.noise);
}

/* ---- logarithmic and hybrid mechanisms ------------------------------------------------------ */

/* L(t) changes only at powers of two, and its error there is a sum of k + 1 Lap(Delta/eps). */
static void logmech_releases_at_powers_of_two(void **state)
{
    (void)state;
    fast_noise f;
    fast_noise_init(&f, 15);
    agg_logmech m;
    assert_int_equal(agg_logmech_init(&m, 0.0, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_logmech_init(&m, NAN, 0.0, 1.0), LDPB_EINVAL);
    assert_int_equal(agg_logmech_init(&m, 1.0, 0.0, 1.0), LDPB_OK);
    assert_int_equal(agg_logmech_push(&m, f.noise, 2.0, NULL), LDPB_ERANGE);
    assert_int_equal(agg_logmech_push(&m, NULL, 0.5, NULL), LDPB_EINVAL);
    double last = 0;
    for (uint64_t n = 1; n <= 64; n++) {
        double rel;
        assert_int_equal(agg_logmech_push(&m, f.noise, 1.0, &rel), LDPB_OK);
        if ((n & (n - 1)) == 0)
            assert_true(rel != last);
        else
            assert_true(rel == last);
        last = rel;
    }
    agg_noise_free(f.noise);
}

/* Over 2e4 trials, the hybrid error at t (powers of two and in between) has mean 0 and the
 * variance of its construction, agg_hybrid_error_variance: (k+1) Lap(2/eps) terms from the
 * logarithmic part and popcount(t - 2^k) Lap(2k/eps) terms from B_k (k levels). A B_k with k + 1
 * levels would be off by a factor up to ((k+1)/k)^2. The variance tolerance of 10% is >= 6
 * relative standard errors (<= sqrt(5/2e4) = 1.6%): false failure < 2e-9 per t; the mean at 5
 * standard errors: < 6e-7 per t; < 2e-5 over the 16 times. */
static void hybrid_error_matches_construction(void **state)
{
    (void)state;
    enum { T = 100, TRIALS = 20000, NT = 16 };
    const uint64_t ts[NT] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32, 45, 63, 64, 100};
    const uint64_t seed = 99;
    const double eps = 1.5;
    fast_noise f;
    fast_noise_init(&f, seed);
    double sum[NT] = {0}, sumsq[NT] = {0};
    for (int trial = 0; trial < TRIALS; trial++) {
        agg_hybrid *h = NULL;
        assert_int_equal(agg_hybrid_new(&h, eps, 0.0, 1.0), LDPB_OK);
        int next = 0;
        for (uint64_t n = 1; n <= T; n++) {
            double z = (double)((n * 13 + (uint64_t)trial) % 5) / 4, rel;
            assert_int_equal(agg_hybrid_push(h, f.noise, z, &rel), LDPB_OK);
            if (next < NT && n == ts[next]) {
                double err = rel - agg_hybrid_exact(h);
                sum[next] += err;
                sumsq[next] += err * err;
                next++;
            }
        }
        agg_hybrid_free(h);
    }
    for (int i = 0; i < NT; i++) {
        double mean = sum[i] / TRIALS;
        double var = sumsq[i] / TRIALS - mean * mean;
        double expect = agg_hybrid_error_variance(ts[i], eps, 1.0);
        CHECK_STAT(fabs(var / expect - 1) < 0.10, seed, "t %llu: variance %g, expected %g",
                   (unsigned long long)ts[i], var, expect);
        CHECK_STAT(fabs(mean) < 5 * sqrt(expect / TRIALS), seed, "t %llu: mean error %g",
                   (unsigned long long)ts[i], mean);
    }
    /* The construction's numbers: at 2^k, k + 1 terms of variance 2 (2/eps)^2 each; at
     * 45 = 32 + 13, k = 5 and popcount(13) = 3 terms of variance 2 (10/eps)^2. */
    double b = 2 / eps;
    assert_true(fabs(agg_hybrid_error_variance(32, eps, 1.0) - 6 * 2 * b * b) < 1e-9);
    assert_true(fabs(agg_hybrid_error_variance(45, eps, 1.0) -
                     (6 * 2 * b * b + 3 * 2 * (5 * b) * (5 * b))) < 1e-9);
    assert_true(agg_hybrid_error_variance(0, eps, 1.0) == 0);
    agg_noise_free(f.noise);
}

/* H(t) = L(t) at powers of two and L(2^k) + B_k(t - 2^k) in between, with L at eps/2 and B_k a
 * fresh tree at eps/2 of horizon 2^k - 1: a shadow built from those parts, drawing from an
 * identical noise stream in the same order, releases bit-identical values. */
static void hybrid_structure(void **state)
{
    (void)state;
    fast_noise f, g;
    fast_noise_init(&f, 16);
    fast_noise_init(&g, 16);
    const double eps = 0.8;
    agg_hybrid *h = NULL;
    assert_int_equal(agg_hybrid_new(&h, 0.0, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_hybrid_new(&h, 1e-310, 0.0, 1.0), LDPB_ERANGE);
    assert_int_equal(agg_hybrid_new(&h, eps, 0.0, 1.0), LDPB_OK);
    assert_int_equal(agg_hybrid_push(h, f.noise, 1.5, NULL), LDPB_ERANGE);
    assert_int_equal(agg_hybrid_push(h, f.noise, NAN, NULL), LDPB_EINVAL);
    assert_int_equal(agg_hybrid_push(h, NULL, 0.5, NULL), LDPB_EINVAL);
    assert_true(agg_hybrid_release(h) == 0);
    agg_logmech log;
    assert_int_equal(agg_logmech_init(&log, eps / 2, 0.0, 1.0), LDPB_OK);
    agg_tree *block = NULL;
    uint64_t block_start = 0;
    for (uint64_t n = 1; n <= 300; n++) {
        double z = (double)(n % 9) / 8, rel, expect;
        assert_int_equal(agg_hybrid_push(h, f.noise, z, &rel), LDPB_OK);
        if ((n & (n - 1)) == 0) {
            assert_int_equal(agg_logmech_push(&log, g.noise, z, &expect), LDPB_OK);
        } else {
            if (n == block_start * 2 + 1 || !block) {
                uint64_t p = (uint64_t)1 << (agg_tree_levels(n) - 1);
                agg_tree_free(block);
                assert_int_equal(agg_tree_new(&block, p - 1, eps / 2, 0.0, 1.0), LDPB_OK);
                assert_int_equal(agg_tree_depth(block), agg_tree_levels(n) - 1);
                block_start = p;
            }
            double b;
            assert_int_equal(agg_tree_push(block, g.noise, z, &b), LDPB_OK);
            assert_int_equal(agg_logmech_push(&log, g.noise, z, NULL), LDPB_OK);
            expect = log.released + b;
        }
        assert_true(rel == expect);
        assert_true(rel == agg_hybrid_release(h));
        assert_int_equal(agg_hybrid_count(h), n);
        assert_true(fabs(agg_hybrid_exact(h) - log.exact) < 1e-12);
    }
    agg_tree_free(block);
    agg_hybrid_free(h);
    agg_hybrid_free(NULL);
    agg_noise_free(f.noise);
    agg_noise_free(g.noise);
}

static size_t hybrid_save_bytes(const agg_hybrid *h, uint8_t *buf, size_t cap)
{
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_hybrid_save(h, &w);
    size_t len = 0;
    assert_int_equal(agg_wbuf_finish(&w, &len), LDPB_OK);
    return len;
}

static ldpb_err hybrid_restore_bytes(agg_hybrid *h, const uint8_t *buf, size_t len)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_hybrid_restore(h, &r);
    if (err == LDPB_OK && !agg_rbuf_done(&r))
        return LDPB_ECORRUPT;
    return err;
}

/* At every cut point (before the first block, at and around powers of two) a restored hybrid
 * continues bit-identically; truncations and a wrong B_k count are refused. */
static void hybrid_state_round_trips(void **state)
{
    (void)state;
    const uint64_t cuts[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 100};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        fast_noise f;
        fast_noise_init(&f, 17 + c);
        agg_hybrid *a = NULL, *b = NULL;
        assert_int_equal(agg_hybrid_new(&a, 0.9, 0.0, 1.0), LDPB_OK);
        assert_int_equal(agg_hybrid_new(&b, 0.9, 0.0, 1.0), LDPB_OK);
        for (uint64_t n = 1; n <= cuts[c]; n++)
            assert_int_equal(agg_hybrid_push(a, f.noise, (n % 3) / 2.0, NULL), LDPB_OK);
        uint8_t buf[4096];
        size_t len = hybrid_save_bytes(a, buf, sizeof buf);
        agg_rand saved = f.rand;
        double ra[80], rb[80];
        for (int n = 0; n < 80; n++)
            assert_int_equal(agg_hybrid_push(a, f.noise, (n % 4) / 3.0, &ra[n]), LDPB_OK);
        for (size_t cut = 0; cut < len; cut++)
            assert_int_equal(hybrid_restore_bytes(b, buf, cut), LDPB_ECORRUPT);
        assert_int_equal(agg_hybrid_count(b), 0);
        if (cuts[c] >= 3) {
            uint8_t bad[4096];
            memcpy(bad, buf, len);
            bad[56 + 8] ^= 1; /* B_k's count */
            assert_int_equal(hybrid_restore_bytes(b, bad, len), LDPB_ECORRUPT);
        }
        uint8_t bad[4096];
        memcpy(bad, buf, len);
        bad[0] ^= 0x10; /* the count no longer matches B_k's shape */
        assert_int_equal(hybrid_restore_bytes(b, bad, len), LDPB_ECORRUPT);
        assert_int_equal(hybrid_restore_bytes(b, buf, len), LDPB_OK);
        f.rand = saved;
        for (int n = 0; n < 80; n++)
            assert_int_equal(agg_hybrid_push(b, f.noise, (n % 4) / 3.0, &rb[n]), LDPB_OK);
        assert_memory_equal(ra, rb, sizeof ra);
        agg_hybrid_free(a);
        agg_hybrid_free(b);
        agg_noise_free(f.noise);
    }
}

/* ---- stopping rules ------------------------------------------------------------------------- */

static void nas_refuses_invalid_options(void **state)
{
    (void)state;
    fast_noise f;
    fast_noise_init(&f, 30);
    agg_nas s;
    agg_nas_opts o;
    char msg[256];
    agg_nas_opts_init(&o, AGG_NAS_EVERY_STEP, 0.0);
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "epsilon 0 must be > 0"));
    agg_nas_opts_init(&o, AGG_NAS_EVERY_STEP, NAN);
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_EINVAL);
    agg_nas_opts_init(&o, AGG_NAS_EVERY_STEP, 1.0);
    o.alpha = 1.0;
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "alpha 1 outside (0, 1)"));
    agg_nas_opts_init(&o, AGG_NAS_EXPONENTIAL, 1.0);
    o.beta = 0;
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "beta 0 outside (0, 1)"));
    agg_nas_opts_init(&o, AGG_NAS_EXPONENTIAL, 1.0);
    o.range = -1;
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "range R -1"));
    agg_nas_opts_init(&o, AGG_NAS_EXPONENTIAL, 1.0);
    o.budget = 0;
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "budget"));
    agg_nas_opts_init(&o, (agg_nas_kind)7, 1.0);
    assert_int_equal(agg_nas_init(&s, &o, f.noise, msg, sizeof msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "kind"));
    agg_nas_opts_init(&o, AGG_NAS_EVERY_STEP, 1.0);
    assert_int_equal(agg_nas_init(&s, &o, NULL, msg, sizeof msg), LDPB_EINVAL);
    /* SS19 Alg. 1: R = 1, eps = 1 gives sigma1 = sigma2 = 12, sigma3 = 4. */
    assert_int_equal(agg_nas_init(&s, &o, f.noise, NULL, 0), LDPB_OK);
    assert_true(s.sigma1 == 12 && s.sigma2 == 12 && s.sigma3 == 4);
    double est;
    assert_int_equal(agg_nas_estimate(&s, &est), LDPB_ESTATE);
    assert_int_equal(agg_nas_push(&s, f.noise, 1.5, NULL), LDPB_ERANGE);
    assert_int_equal(agg_nas_push(&s, f.noise, NAN, NULL), LDPB_EINVAL);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 2, 0.0, NULL), LDPB_ESTATE);
    agg_noise_free(f.noise);
}

/* A +-1 sample with mean mu. */
static double pm_one(agg_rand *r, double mu)
{
    return agg_rand_uniform(r) < (1 + mu) / 2 ? 1.0 : -1.0;
}

/* mu = +-0.3, alpha = 0.5, beta = 1e-4, eps = 1: each kind halts within the 1e6 budget with the
 * sign of mu and an estimate within alpha |mu| in 10 runs per sign. By Thm 3.1 / Cor. 3.2 each
 * run fails with probability <= beta (and Thm 3.3 bounds the halting time of the exponential rule
 * well inside the budget), so the false-failure probability is <= 40 beta = 4e-3; the bounds are
 * loose and no failure occurs at these seeds. */
static void nas_halts_with_the_right_sign(void **state)
{
    (void)state;
    for (int kind = AGG_NAS_EVERY_STEP; kind <= AGG_NAS_EXPONENTIAL; kind++) {
        for (int run = 0; run < 20; run++) {
            uint64_t seed = 1000 + (uint64_t)kind * 100 + (uint64_t)run;
            double mu = run % 2 ? -0.3 : 0.3;
            fast_noise f;
            fast_noise_init(&f, seed);
            agg_rand data;
            agg_rand_seed_u64(&data, seed ^ 0xda7a);
            agg_nas_opts o;
            agg_nas_opts_init(&o, (agg_nas_kind)kind, 1.0);
            o.beta = 1e-4;
            o.budget = 1000000;
            agg_nas s;
            assert_int_equal(agg_nas_init(&s, &o, f.noise, NULL, 0), LDPB_OK);
            agg_nas_state st = AGG_NAS_RUNNING;
            while (st == AGG_NAS_RUNNING)
                assert_int_equal(agg_nas_push(&s, f.noise, pm_one(&data, mu), &st), LDPB_OK);
            CHECK_STAT(st == AGG_NAS_HALTED, seed, "kind %d did not halt", kind);
            double est;
            assert_int_equal(agg_nas_estimate(&s, &est), LDPB_OK);
            CHECK_STAT(est * mu > 0 && fabs(est - mu) <= 0.5 * fabs(mu), seed,
                       "kind %d: estimate %g for mu %g after %llu samples", kind, est, mu,
                       (unsigned long long)s.t);
            if (kind == AGG_NAS_EXPONENTIAL)
                assert_true((s.t & (s.t - 1)) == 0 && s.t >= 2);
            assert_int_equal(agg_nas_push(&s, f.noise, 1.0, NULL), LDPB_ESTATE);
            agg_noise_free(f.noise);
        }
    }
}

/* mu = 0.001: halting before 1e5 samples would need |Xbar_t| >= 3 h_t >= 0.04 while
 * |Xbar_t - mu| <= h_t, i.e. one of the events of Thm 3.1 that fail with probability <= beta.
 * 10 runs per kind at beta = 1e-4: false failure <= 2e-3 by the theorem (far less in fact). */
static void nas_never_halts_early_on_a_tiny_mean(void **state)
{
    (void)state;
    for (int kind = AGG_NAS_EVERY_STEP; kind <= AGG_NAS_EXPONENTIAL; kind++) {
        for (int run = 0; run < 10; run++) {
            uint64_t seed = 5000 + (uint64_t)kind * 100 + (uint64_t)run;
            fast_noise f;
            fast_noise_init(&f, seed);
            agg_rand data;
            agg_rand_seed_u64(&data, seed ^ 0xda7a);
            agg_nas_opts o;
            agg_nas_opts_init(&o, (agg_nas_kind)kind, 1.0);
            o.beta = 1e-4;
            o.budget = 100000;
            agg_nas s;
            assert_int_equal(agg_nas_init(&s, &o, f.noise, NULL, 0), LDPB_OK);
            agg_nas_state st = AGG_NAS_RUNNING;
            while (st == AGG_NAS_RUNNING)
                assert_int_equal(agg_nas_push(&s, f.noise, pm_one(&data, 0.001), &st), LDPB_OK);
            CHECK_STAT(st == AGG_NAS_EXHAUSTED, seed, "kind %d halted at %llu", kind,
                       (unsigned long long)s.t);
            assert_int_equal(s.t, 100000);
            double est;
            assert_int_equal(agg_nas_estimate(&s, &est), LDPB_ESTATE);
            assert_int_equal(agg_nas_push(&s, f.noise, 1.0, NULL), LDPB_ESTATE);
            agg_noise_free(f.noise);
        }
    }
}

/* The exponential rule fed in blocks up to each test point equals one-by-one feeding: same
 * halting time, same estimate, same noise consumed. */
static void nas_blocks_equal_single_samples(void **state)
{
    (void)state;
    for (int run = 0; run < 6; run++) {
        uint64_t seed = 7000 + (uint64_t)run;
        double mu = run % 2 ? 0.2 : -0.25;
        agg_nas_opts o;
        agg_nas_opts_init(&o, AGG_NAS_EXPONENTIAL, 0.5);
        o.budget = run == 5 ? 3000 : 1u << 24;
        fast_noise fa, fb;
        fast_noise_init(&fa, seed);
        fast_noise_init(&fb, seed);
        agg_rand da, db;
        agg_rand_seed_u64(&da, seed + 1);
        agg_rand_seed_u64(&db, seed + 1);
        agg_nas a, b;
        assert_int_equal(agg_nas_init(&a, &o, fa.noise, NULL, 0), LDPB_OK);
        assert_int_equal(agg_nas_init(&b, &o, fb.noise, NULL, 0), LDPB_OK);
        agg_nas_state sa = AGG_NAS_RUNNING, sb = AGG_NAS_RUNNING;
        while (sa == AGG_NAS_RUNNING)
            assert_int_equal(agg_nas_push(&a, fa.noise, pm_one(&da, mu), &sa), LDPB_OK);
        while (sb == AGG_NAS_RUNNING) {
            uint64_t next = agg_nas_next_check(&b);
            uint64_t count = next - b.t;
            /* split the stretch into two blocks when it is long enough */
            uint64_t first = count > 3 ? count / 3 : count;
            double s1 = 0, s2 = 0;
            for (uint64_t i = 0; i < first; i++)
                s1 += pm_one(&db, mu);
            assert_int_equal(agg_nas_push_block(&b, fb.noise, first, s1, &sb), LDPB_OK);
            if (first < count) {
                assert_int_equal(sb, AGG_NAS_RUNNING);
                assert_int_equal(agg_nas_push_block(&b, fb.noise, count - first + 1, 0.0, NULL),
                                 LDPB_ERANGE);
                for (uint64_t i = first; i < count; i++)
                    s2 += pm_one(&db, mu);
                assert_int_equal(agg_nas_push_block(&b, fb.noise, count - first, s2, &sb), LDPB_OK);
            }
        }
        assert_int_equal(sa, sb);
        assert_int_equal(a.t, b.t);
        assert_true(a.sum == b.sum);
        assert_true(memcmp(&a.estimate, &b.estimate, sizeof a.estimate) == 0);
        assert_memory_equal(&fa.rand, &fb.rand, sizeof fa.rand);
        if (run == 5)
            assert_int_equal(sa, AGG_NAS_EXHAUSTED);
        agg_noise_free(fa.noise);
        agg_noise_free(fb.noise);
    }
    /* Malformed blocks. */
    fast_noise f;
    fast_noise_init(&f, 7100);
    agg_nas_opts o;
    agg_nas_opts_init(&o, AGG_NAS_EXPONENTIAL, 1.0);
    agg_nas s;
    assert_int_equal(agg_nas_init(&s, &o, f.noise, NULL, 0), LDPB_OK);
    assert_int_equal(agg_nas_next_check(&s), 2);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 0, 0.0, NULL), LDPB_ERANGE);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 3, 0.0, NULL), LDPB_ERANGE);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 2, 2.5, NULL), LDPB_ERANGE);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 2, NAN, NULL), LDPB_EINVAL);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 1, 1.0, NULL), LDPB_OK);
    assert_int_equal(agg_nas_next_check(&s), 2);
    assert_int_equal(agg_nas_push_block(&s, f.noise, 1, 1.0, NULL), LDPB_OK);
    assert_int_equal(agg_nas_next_check(&s), 4);
    agg_noise_free(f.noise);
}

/* ---- central noise on a grid (docs/privacy.md) ------------------------------------------ */

/* Whether v is an integer multiple of 2^e. */
static int on_grid(double v, int e)
{
    double u = ldexp(v, -e);
    return u == nearbyint(u);
}

/* The releases' grid is a power of two no finer than 2^-17 of the noise scale (the mechanism's
 * resolution), so every release must be a multiple of 2^(floor(log2 scale) - 18). A textbook
 * release (an arbitrary double sum plus noise) is not: its low bits carry the sum. */
static int coarse_grid(double scale)
{
    return (int)floor(log2(scale)) - 18;
}

static void secure_tree_and_hybrid_releases_lie_on_a_grid(void **state)
{
    (void)state;
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {11};
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_SECURE, rng, NULL), LDPB_OK);
    agg_tree *t = NULL;
    assert_int_equal(agg_tree_new(&t, 1000, 1.0, 0.0, 1.0), LDPB_OK);
    int e_tree = coarse_grid(agg_tree_noise_scale(t));
    agg_hybrid *h = NULL;
    assert_int_equal(agg_hybrid_new(&h, 1.0, 0.0, 1.0), LDPB_OK);
    int e_hybrid = coarse_grid(2.0); /* its smallest scale: log part and B_1, 1 / (eps / 2) */
    for (int n = 1; n <= 1000; n++) {
        double z = fmod(0.1234567 * n + 1.0 / 3, 1.0), rt, rh;
        assert_int_equal(agg_tree_push(t, noise, z, &rt), LDPB_OK);
        assert_int_equal(agg_hybrid_push(h, noise, z, &rh), LDPB_OK);
        if (!on_grid(rt, e_tree) || !on_grid(rh, e_hybrid))
            fail_msg("n %d: release %.17g (tree) or %.17g (hybrid) is off the grid", n, rt, rh);
    }
    agg_hybrid_free(h);
    agg_tree_free(t);
    agg_noise_free(noise);
    ldpb_rng_free(rng);
}

/* Mironov (2012): with textbook floating-point Laplace, x + noise and x' + noise differ in their
 * low bits whatever the noise, so a release tells neighbouring sums apart. Here two one-node trees
 * fed neighbouring sums (2^-30 apart, within one grid step) and the same noise stream release
 * bit-identical values, 2000 times. */
static void secure_release_hides_low_bits(void **state)
{
    (void)state;
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {12};
    ldpb_rng *ra = NULL, *rb = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&ra, seed), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded(&rb, seed), LDPB_OK);
    agg_noise *na = NULL, *nb = NULL;
    assert_int_equal(agg_noise_new(&na, AGG_NOISE_SECURE, ra, NULL), LDPB_OK);
    assert_int_equal(agg_noise_new(&nb, AGG_NOISE_SECURE, rb, NULL), LDPB_OK);
    const double x = 1.0 / 3, x2 = 1.0 / 3 + 0x1p-30;
    for (int i = 0; i < 2000; i++) {
        agg_tree *ta = NULL, *tb = NULL;
        double a, b;
        assert_int_equal(agg_tree_new(&ta, 1, 0.5, 0.0, 1.0), LDPB_OK);
        assert_int_equal(agg_tree_new(&tb, 1, 0.5, 0.0, 1.0), LDPB_OK);
        assert_int_equal(agg_tree_push(ta, na, x, &a), LDPB_OK);
        assert_int_equal(agg_tree_push(tb, nb, x2, &b), LDPB_OK);
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("draw %d: %.17g and %.17g tell the neighbouring sums apart", i, a, b);
        agg_tree_free(ta);
        agg_tree_free(tb);
    }
    agg_noise_free(na);
    agg_noise_free(nb);
    ldpb_rng_free(ra);
    ldpb_rng_free(rb);
}

/* The grid release keeps the Laplace law: mean x within 5 standard errors (false failure
 * < 6e-7) and variance 2 scale^2 within 10% (the sample variance's relative standard error is
 * sqrt(5 / N) = 1.6% at N = 20000: > 6 standard errors, false failure < 1e-9), the grid's
 * compensation included. Bad arguments are refused; FAST is the textbook draw. */
static void release_law_and_arguments(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {13};
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_SECURE, rng, NULL), LDPB_OK);
    const double x = 123.456789, sens = 0.01, scale = 0.04;
    double sum = 0, sumsq = 0;
    for (int i = 0; i < N; i++) {
        double r;
        assert_int_equal(agg_noise_release(noise, x, sens, scale, &r), LDPB_OK);
        assert_true(on_grid(r, coarse_grid(scale)));
        sum += r - x;
        sumsq += (r - x) * (r - x);
    }
    double mean = sum / N, var = sumsq / N - mean * mean, expect = 2 * scale * scale;
    CHECK_STAT(fabs(mean) < 5 * sqrt(expect / N), 13, "mean error %g", mean);
    CHECK_STAT(fabs(var / expect - 1) < 0.10, 13, "variance %g, expected %g", var, expect);
    double r;
    assert_int_equal(agg_noise_release(noise, NAN, sens, scale, &r), LDPB_EINVAL);
    assert_int_equal(agg_noise_release(noise, x, 0, scale, &r), LDPB_EINVAL);
    assert_int_equal(agg_noise_release(noise, x, sens, INFINITY, &r), LDPB_EINVAL);
    assert_int_equal(agg_noise_release(noise, 1e300, sens, scale, &r), LDPB_ERANGE);
    agg_noise_free(noise);

    agg_rand fa, fb;
    agg_rand_seed_u64(&fa, 5);
    agg_rand_seed_u64(&fb, 5);
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &fa), LDPB_OK);
    assert_int_equal(agg_noise_release(noise, x, sens, scale, &r), LDPB_OK);
    assert_true(r == x + agg_rand_laplace(&fb, scale));
    agg_noise_free(noise);
    ldpb_rng_free(rng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tree_levels_cover_the_horizon),
        cmocka_unit_test(tree_release_uses_popcount_nodes),
        cmocka_unit_test(tree_input_enters_at_most_lv_nodes),
        cmocka_unit_test(tree_error_variance_matches_a8),
        cmocka_unit_test(tree_error_variance_secure),
        cmocka_unit_test(tree_refuses_misuse),
        cmocka_unit_test(tree_state_round_trips),
        cmocka_unit_test(logmech_releases_at_powers_of_two),
        cmocka_unit_test(hybrid_error_matches_construction),
        cmocka_unit_test(hybrid_structure),
        cmocka_unit_test(hybrid_state_round_trips),
        cmocka_unit_test(nas_refuses_invalid_options),
        cmocka_unit_test(nas_halts_with_the_right_sign),
        cmocka_unit_test(nas_never_halts_early_on_a_tiny_mean),
        cmocka_unit_test(nas_blocks_equal_single_samples),
        cmocka_unit_test(secure_tree_and_hybrid_releases_lie_on_a_grid),
        cmocka_unit_test(secure_release_hides_low_bits),
        cmocka_unit_test(release_law_and_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
