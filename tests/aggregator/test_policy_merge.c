/* The merge op (policy.h): the policies whose state is a sum of per-report terms add the
 * statistics of two instances, so that several aggregator nodes can each keep the partial state
 * of their own reports and serve the merge. For each: reports split between two instances and
 * merged give the same saved state, byte for byte, as all of them observed by one; the op is
 * exactly where `mergeable` says; a different configuration and a policy without the op are
 * refused; a K-armed merge has no horizon to check (the policies do not read it: one instance
 * observes past it, so the merge accepts the same). Deterministic (fixed seeds, observations
 * whose sums are exact in double precision): no false failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "rand.h"

#define K 4
#define N 3000

static agg_policy_config config_of(const agg_policy_ops *ops)
{
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = K;
    cfg.horizon = 100000;
    cfg.epsilon = 1.0;
    cfg.mechanism = strcmp(ops->name, "ldp-ucb-l") == 0 ? LDPB_MECH_LAPLACE : LDPB_MECH_LINEAR;
    return cfg;
}

/* An observation the policy accepts whose sums stay exact: a bit, or a multiple of 1/8 in
 * [-4, 4] for the real reports of the Laplace mechanism. */
static double observation(const agg_policy_ops *ops, agg_rand *r)
{
    if (strcmp(ops->name, "ldp-ucb-l") == 0)
        return ((double)agg_rand_below(r, 65) - 32.0) / 8.0;
    return (double)agg_rand_below(r, 2);
}

static size_t saved(const agg_policy *p, uint8_t *buf, size_t cap)
{
    size_t len = 0;
    assert_int_equal(agg_policy_save(p, buf, cap, &len), LDPB_OK);
    return len;
}

static void split_equals_whole(const agg_policy_ops *ops)
{
    agg_policy_config cfg = config_of(ops);
    agg_policy *a = NULL, *b = NULL, *whole = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_policy_new(&a, ops->name, &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_new(&b, ops->name, &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_new(&whole, ops->name, &cfg, msg), LDPB_OK);
    agg_rand r, ra, rb, rw;
    agg_rand_seed_u64(&r, 19);
    agg_rand_seed_u64(&ra, 1);
    agg_rand_seed_u64(&rb, 2);
    agg_rand_seed_u64(&rw, 3);
    agg_policy_env ea = {&ra, NULL}, eb = {&rb, NULL}, ew = {&rw, NULL};
    for (int i = 0; i < N; i++) {
        /* arms unevenly, one of them never on `b`: a merge must also fill an arm it lacks */
        uint32_t arm = agg_rand_below(&r, K);
        double obs = observation(ops, &r);
        int to_a = arm == 0 || agg_rand_below(&r, 3) == 0;
        assert_int_equal(agg_policy_observe(to_a ? a : b, to_a ? &ea : &eb, arm, obs), LDPB_OK);
        assert_int_equal(agg_policy_observe(whole, &ew, arm, obs), LDPB_OK);
    }
    assert_int_equal(agg_policy_merge(a, b), LDPB_OK);
    static uint8_t x[1 << 16], y[1 << 16];
    size_t lx = saved(a, x, sizeof x), ly = saved(whole, y, sizeof y);
    assert_int_equal(lx, ly);
    assert_memory_equal(x, y, lx);
    agg_arm_status sa[K], sw[K];
    assert_int_equal(agg_policy_describe(a, sa, K), LDPB_OK);
    assert_int_equal(agg_policy_describe(whole, sw, K), LDPB_OK);
    for (int k = 0; k < K; k++)
        assert_int_equal(sa[k].pulls, sw[k].pulls);
    /* merging an empty instance changes nothing */
    agg_policy *empty = NULL;
    assert_int_equal(agg_policy_new(&empty, ops->name, &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, empty), LDPB_OK);
    assert_int_equal(saved(a, x, sizeof x), ly);
    assert_memory_equal(x, y, ly);
    /* another configuration (k) is refused */
    agg_policy_config other = cfg;
    other.k = K + 1;
    agg_policy *c = NULL;
    assert_int_equal(agg_policy_new(&c, ops->name, &other, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, c), LDPB_EINVAL);
    other = cfg;
    other.epsilon = 0.5;
    agg_policy_free(c);
    assert_int_equal(agg_policy_new(&c, ops->name, &other, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, c), LDPB_EINVAL);
    agg_policy_free(c);
    agg_policy_free(empty);
    agg_policy_free(a);
    agg_policy_free(b);
    agg_policy_free(whole);
}

static void merge_where_mergeable(void **state)
{
    (void)state;
    size_t n = 0;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    size_t with_merge = 0;
    for (size_t i = 0; i < n; i++) {
        /* the op exactly where the registry says the statistics add (no noise, no order) */
        assert_int_equal(all[i]->merge != NULL, all[i]->mergeable);
        if (all[i]->merge) {
            split_equals_whole(all[i]);
            with_merge++;
        }
    }
    static const char *const additive[] = {"ucb1", "ts", "ldp-ts-b", "ldp-ucb-b", "ldp-ucb-l"};
    for (size_t i = 0; i < sizeof additive / sizeof additive[0]; i++)
        assert_non_null(agg_policy_find(additive[i])->merge);
    assert_int_equal(with_merge, sizeof additive / sizeof additive[0]);
}

static void no_merge_refused(void **state)
{
    (void)state;
    const agg_policy_ops *ops = agg_policy_find("se");
    assert_non_null(ops);
    agg_policy_config cfg = config_of(ops);
    agg_policy *a = NULL, *b = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_policy_new(&a, "se", &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_new(&b, "se", &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(a, b), LDPB_ENOTSUP);
    agg_policy *u = NULL;
    assert_int_equal(agg_policy_new(&u, "ucb1", &cfg, msg), LDPB_OK);
    assert_int_equal(agg_policy_merge(u, a), LDPB_EINVAL); /* another policy */
    agg_policy_free(u);
    agg_policy_free(a);
    agg_policy_free(b);
}

/* The contextual merges refuse a sum past the horizon because their state is bounded by it (a
 * restore refuses more rounds). No K-armed policy with a merge reads the horizon: one instance
 * observes past any horizon, its state saves and restores, so the merge of two partials past it
 * is accepted too, equal to the whole, and what several nodes serve is what one node would. A
 * K-armed additive policy that reads the horizon would have to check it in its merge: this test
 * then fails, naming it. */
static void k_armed_merge_past_horizon(void **state)
{
    (void)state;
    size_t n = 0;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    enum { HORIZON = 10, EACH = 3 * HORIZON };
    for (size_t i = 0; i < n; i++) {
        const agg_policy_ops *ops = all[i];
        if (!ops->merge)
            continue;
        agg_policy_config cfg = config_of(ops);
        cfg.horizon = HORIZON;
        if (agg_policy_reads(ops, &cfg) & AGG_PARAM_HORIZON)
            fail_msg("%s reads the horizon and merges: its merge must refuse a sum past it",
                     ops->name);
        agg_policy *a = NULL, *b = NULL, *whole = NULL, *back = NULL;
        char msg[AGG_ERRMSG_MAX];
        assert_int_equal(agg_policy_new(&a, ops->name, &cfg, msg), LDPB_OK);
        assert_int_equal(agg_policy_new(&b, ops->name, &cfg, msg), LDPB_OK);
        assert_int_equal(agg_policy_new(&whole, ops->name, &cfg, msg), LDPB_OK);
        assert_int_equal(agg_policy_new(&back, ops->name, &cfg, msg), LDPB_OK);
        agg_rand r, env_r;
        agg_rand_seed_u64(&r, 7);
        agg_rand_seed_u64(&env_r, 8);
        agg_policy_env env = {&env_r, NULL};
        for (int j = 0; j < 2 * EACH; j++) {
            uint32_t arm = (uint32_t)(j % K);
            double x = observation(ops, &r);
            assert_int_equal(agg_policy_observe(j < EACH ? a : b, &env, arm, x), LDPB_OK);
            assert_int_equal(agg_policy_observe(whole, &env, arm, x), LDPB_OK);
        }
        static uint8_t bw[1 << 16], bm[1 << 16];
        size_t lw = saved(whole, bw, sizeof bw);
        assert_int_equal(agg_policy_restore(back, bw, lw), LDPB_OK); /* one node's, past T */
        assert_int_equal(agg_policy_merge(a, b), LDPB_OK);
        size_t lm = saved(a, bm, sizeof bm);
        assert_int_equal(lm, lw);
        assert_memory_equal(bm, bw, lw);
        agg_policy_free(a);
        agg_policy_free(b);
        agg_policy_free(whole);
        agg_policy_free(back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merge_where_mergeable),
        cmocka_unit_test(no_merge_refused),
        cmocka_unit_test(k_armed_merge_past_horizon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
