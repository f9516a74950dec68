/* The merge op of the contextual policies (ctx_policy.h): `linucb` and `ldp-linucb-gaussian`
 * keep sums (the Gram matrix and b vector; the devices' privatized statistics), so two
 * instances that observed two halves of the reports, merged, equal one that observed all; the
 * jdp-linucb-* keep noise trees and have no merge.
 *
 * Byte equality needs sums that are exact in any order. The local mode's sums are integers in
 * grid units: always exact. LinUCB's are doubles: with features and rewards on a coarse dyadic
 * grid (multiples of 1/8, products multiples of 1/64, sums far below 2^53 / 64) every partial
 * sum is exact and the bytes agree; with arbitrary real features the two orders round
 * differently, so there the released V and u are compared within n * 2^-50 relative to the
 * largest entry (each of the n additions rounds by at most half an ulp, 2^-53 relative, in
 * either order). Deterministic (fixed seeds): no false failures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctx_policy.h"
#include "ldpb/rng.h"
#include "rand.h"

#define K 4
#define D 3
#define N 2000

static agg_policy *make(const char *name, uint32_t k)
{
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = k;
    cfg.horizon = 10000;
    cfg.epsilon = 1.0;
    agg_ctx_params cp = {D, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX] = "";
    ldpb_err e = agg_ctx_policy_new(&p, name, &cfg, &cp, msg);
    if (e)
        print_message("%s\n", msg);
    assert_int_equal(e, LDPB_OK);
    return p;
}

static size_t saved(const agg_policy *p, uint8_t *buf, size_t cap)
{
    size_t len = 0;
    assert_int_equal(agg_policy_save(p, buf, cap, &len), LDPB_OK);
    return len;
}

static void assert_same_bytes(const agg_policy *a, const agg_policy *b)
{
    static uint8_t x[1 << 14], y[1 << 14];
    size_t lx = saved(a, x, sizeof x), ly = saved(b, y, sizeof y);
    assert_int_equal(lx, ly);
    assert_memory_equal(x, y, lx);
}

/* A feature row of norm <= sqrt(3) * 4/8 < 1 = L on the grid of 1/8. */
static void dyadic_row(agg_rand *r, double *x)
{
    for (int j = 0; j < D; j++)
        x[j] = ((double)agg_rand_below(r, 9) - 4.0) / 8.0;
}

static void test_linucb_split_equals_whole(void **state)
{
    (void)state;
    agg_policy *a = make("linucb", K), *b = make("linucb", K), *whole = make("linucb", K);
    assert_non_null(a->ops->merge);
    assert_true(a->ops->mergeable);
    agg_rand r, re;
    agg_rand_seed_u64(&r, 19);
    agg_rand_seed_u64(&re, 1);
    agg_policy_env env = {&re, NULL};
    for (int i = 0; i < N; i++) {
        double x[D];
        dyadic_row(&r, x);
        uint32_t arm = agg_rand_below(&r, K);
        double y = (double)agg_rand_below(&r, 9) / 8.0;
        /* arm 0 never on b: the merge must fill an arm b lacks */
        int to_a = arm == 0 || agg_rand_below(&r, 3) == 0;
        assert_int_equal(agg_ctx_policy_observe(to_a ? a : b, &env, arm, x, y), LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(whole, &env, arm, x, y), LDPB_OK);
    }
    assert_int_equal(agg_policy_merge(a, b), LDPB_OK);
    assert_same_bytes(a, whole);
    assert_int_equal(agg_ctx_policy_rounds(a), N);
    agg_arm_status sa[K], sw[K];
    assert_int_equal(agg_policy_describe(a, sa, K), LDPB_OK);
    assert_int_equal(agg_policy_describe(whole, sw, K), LDPB_OK);
    for (int k = 0; k < K; k++)
        assert_int_equal(sa[k].pulls, sw[k].pulls);
    /* the merged state chooses as the whole does (same factorisation of the same sums) */
    for (int i = 0; i < 50; i++) {
        double xs[K * D];
        for (int k = 0; k < K; k++)
            dyadic_row(&r, xs + k * D);
        agg_rand ra, rw;
        agg_rand_seed_u64(&ra, 100 + (uint64_t)i);
        agg_rand_seed_u64(&rw, 100 + (uint64_t)i);
        agg_policy_env ea = {&ra, NULL}, ew = {&rw, NULL};
        uint32_t arm_a = 0, arm_w = 0, ta = 0, tw = 0;
        char reason[256];
        assert_int_equal(agg_ctx_policy_choose(a, &ea, xs, K * D, &arm_a, &ta, reason), LDPB_OK);
        assert_int_equal(agg_ctx_policy_choose(whole, &ew, xs, K * D, &arm_w, &tw, reason),
                         LDPB_OK);
        assert_int_equal(arm_a, arm_w);
        assert_int_equal(ta, tw);
    }
    /* an empty instance changes nothing */
    agg_policy *empty = make("linucb", K);
    assert_int_equal(agg_policy_merge(a, empty), LDPB_OK);
    assert_same_bytes(a, whole);
    /* another configuration: k through policy.h, d through the state's header */
    agg_policy *other = make("linucb", K + 1);
    assert_int_equal(agg_policy_merge(a, other), LDPB_EINVAL);
    agg_policy_free(other);
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = K;
    cfg.horizon = 10000;
    cfg.epsilon = 1.0;
    agg_ctx_params cp = {D + 1, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_ctx_policy_new(&other, "linucb", &cfg, &cp, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, other), LDPB_EINVAL);
    assert_same_bytes(a, whole);
    agg_policy_free(other);
    agg_policy_free(empty);
    agg_policy_free(a);
    agg_policy_free(b);
    agg_policy_free(whole);
}

/* Arbitrary real features: the statistics agree to rounding, not to the byte. */
static void test_linucb_real_features(void **state)
{
    (void)state;
    agg_linucb_config lc;
    agg_linucb_config_init(&lc);
    lc.d = D;
    lc.horizon = 10000;
    agg_linucb *a = NULL, *b = NULL, *w = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_linucb_new(&a, &lc, msg), LDPB_OK);
    assert_int_equal(agg_linucb_new(&b, &lc, msg), LDPB_OK);
    assert_int_equal(agg_linucb_new(&w, &lc, msg), LDPB_OK);
    agg_rand r;
    agg_rand_seed_u64(&r, 7);
    agg_policy_env env = {&r, NULL};
    for (int i = 0; i < N; i++) {
        double x[D], s = 0.0;
        for (int j = 0; j < D; j++) {
            x[j] = agg_rand_normal(&r);
            s += x[j] * x[j];
        }
        for (int j = 0; j < D; j++)
            x[j] /= sqrt(s) * 1.01;
        double y = agg_rand_uniform(&r);
        assert_int_equal(agg_linucb_observe(i % 2 ? a : b, &env, x, y), LDPB_OK);
        assert_int_equal(agg_linucb_observe(w, &env, x, y), LDPB_OK);
    }
    assert_int_equal(agg_linucb_merge(a, b), LDPB_OK);
    assert_int_equal(agg_linucb_rounds(a), N);
    double va[D * D], ua[D], vw[D * D], uw[D];
    assert_int_equal(agg_linucb_release(a, &env, va, ua), LDPB_OK);
    assert_int_equal(agg_linucb_release(w, &env, vw, uw), LDPB_OK);
    double big = 0.0;
    for (int i = 0; i < D * D; i++)
        big = fmax(big, fabs(vw[i]));
    const double tol = (double)N * 0x1p-50 * big;
    for (int i = 0; i < D * D; i++)
        assert_true(fabs(va[i] - vw[i]) <= tol);
    for (int i = 0; i < D; i++)
        assert_true(fabs(ua[i] - uw[i]) <= tol);
    agg_linucb_free(a);
    agg_linucb_free(b);
    agg_linucb_free(w);
}

static void test_ldp_split_equals_whole(void **state)
{
    (void)state;
    const char *nm = "ldp-linucb-gaussian";
    agg_policy *a = make(nm, K), *b = make(nm, K), *whole = make(nm, K);
    assert_non_null(a->ops->merge);
    const ldpb_ctxstat *m = agg_ctx_policy_mech(a);
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {5, 1};
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    agg_rand r;
    agg_rand_seed_u64(&r, 23);
    agg_policy_env env = {&r, NULL};
    double z[LDPB_CTXSTAT_VALUES_MAX];
    for (int i = 0; i < 300; i++) {
        double x[D];
        dyadic_row(&r, x);
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, agg_rand_uniform(&r), z), LDPB_OK);
        agg_policy *half = agg_rand_below(&r, 3) == 0 ? a : b;
        assert_int_equal(agg_ctx_policy_observe(half, &env, 0, z, 0.0), LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(whole, &env, 0, z, 0.0), LDPB_OK);
    }
    /* a's cached model (of its half) must not survive the merge */
    double s1[LDPB_CTXSTAT_VALUES_MAX], s2[LDPB_CTXSTAT_VALUES_MAX];
    size_t n1 = 0, n2 = 0;
    double sh1, be1, sh2, be2;
    assert_int_equal(agg_ctx_policy_model(a, s1, &n1, &sh1, &be1), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, b), LDPB_OK);
    assert_same_bytes(a, whole);
    assert_int_equal(agg_ctx_policy_rounds(a), 300);
    assert_int_equal(agg_ctx_policy_model(a, s1, &n1, &sh1, &be1), LDPB_OK);
    assert_int_equal(agg_ctx_policy_model(whole, s2, &n2, &sh2, &be2), LDPB_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(s1, s2, n1 * sizeof *s1);
    assert_true(sh1 == sh2 && be1 == be2);
    /* past the horizon between them: refused, a unchanged */
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = K;
    cfg.horizon = 10000;
    cfg.epsilon = 1.0;
    agg_ctx_params cp = {D, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    char msg[AGG_ERRMSG_MAX];
    agg_policy *lin = make("linucb", K);
    assert_int_equal(agg_policy_merge(a, lin), LDPB_EINVAL); /* another policy */
    agg_policy_free(lin);
    cfg.horizon = 400;
    agg_policy *small = NULL, *small2 = NULL;
    assert_int_equal(agg_ctx_policy_new(&small, nm, &cfg, &cp, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, small), LDPB_EINVAL); /* another horizon */
    assert_int_equal(agg_ctx_policy_new(&small2, nm, &cfg, &cp, msg), LDPB_OK);
    for (int i = 0; i < 250; i++) {
        double x[D];
        dyadic_row(&r, x);
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, 0.5, z), LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(small, &env, 0, z, 0.0), LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(small2, &env, 0, z, 0.0), LDPB_OK);
    }
    static uint8_t before[1 << 14], after[1 << 14];
    size_t lb = saved(small, before, sizeof before);
    assert_int_equal(agg_policy_merge(small, small2), LDPB_ERANGE);
    assert_int_equal(saved(small, after, sizeof after), lb);
    assert_memory_equal(before, after, lb);
    agg_policy_free(small);
    agg_policy_free(small2);
    ldpb_rng_free(rng);
    agg_policy_free(a);
    agg_policy_free(b);
    agg_policy_free(whole);
}

/* The JDP variants keep noise trees indexed by the round: no merge, refused as such. */
static void test_jdp_no_merge(void **state)
{
    (void)state;
    const char *names[] = {"jdp-linucb-gaussian", "jdp-linucb-wishart"};
    for (size_t i = 0; i < 2; i++) {
        agg_policy *a = make(names[i], K), *b = make(names[i], K);
        assert_null(a->ops->merge);
        assert_false(a->ops->mergeable);
        assert_int_equal(agg_policy_merge(a, b), LDPB_ENOTSUP);
        agg_policy_free(a);
        agg_policy_free(b);
    }
    assert_non_null(agg_ctx_policy_find("linucb")->merge);
    assert_non_null(agg_ctx_policy_find("ldp-linucb-gaussian")->merge);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linucb_split_equals_whole),
        cmocka_unit_test(test_linucb_real_features),
        cmocka_unit_test(test_ldp_split_equals_whole),
        cmocka_unit_test(test_jdp_no_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
