/* The optional parts of every policy's ops table hold what they claim, for every policy of the
 * registry, so callers can rely on them instead of testing names:
 *   params         a parameter outside agg_policy_reads() changes nothing (same choices, same
 *                  describe(), and the saved state restores under the other value); one inside
 *                  it makes a saved state refuse to restore (LDPB_ECORRUPT);
 *   choose_is_draw choose() leaves the saved state byte-identical however often it is called;
 *   plan/observe_block  feeding each epoch's rewards as one block per arm gives the same saved
 *                  state at every epoch end as choose/observe round by round. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

enum { K = 3 };

/* A run's generators: decisions, central noise, and the observations fed back. */
typedef struct run {
    agg_rand rand, noise_rand, obs;
    agg_noise *noise;
    agg_policy_env env;
} run;

static void run_open(run *r, uint64_t seed)
{
    agg_rand_seed_u64(&r->rand, seed);
    agg_rand_seed_u64(&r->noise_rand, seed + 1);
    agg_rand_seed_u64(&r->obs, seed + 2);
    r->noise = NULL;
    assert_int_equal(agg_noise_new(&r->noise, AGG_NOISE_FAST, NULL, &r->noise_rand), LDPB_OK);
    r->env.rand = &r->rand;
    r->env.noise = r->noise;
}

static void run_close(run *r)
{
    agg_noise_free(r->noise);
}

/* An observation of arm a valid for p's model: a bit, a real (Laplace reports) or a reward on
 * the dyadic grid of eighths in [0, 1]. */
static double observation(const agg_policy *p, run *r, uint32_t a)
{
    double u = agg_rand_uniform(&r->obs);
    if (p->ops->model == AGG_MODEL_LOCAL && p->cfg.mechanism == LDPB_MECH_LAPLACE)
        return (u - 0.5) * 6.0 + 0.2 * a;
    if (p->ops->model == AGG_MODEL_LOCAL)
        return u < 0.3 + 0.2 * a ? 1.0 : 0.0;
    return floor(u * 8.0 * (0.4 + 0.3 * a)) / 8.0;
}

static agg_policy *create(const char *name, const agg_policy_config *cfg)
{
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_policy_new(&p, name, cfg, msg);
    if (err)
        fail_msg("%s: %s", name, msg);
    return p;
}

/* A configuration every policy of the registry accepts, with the mechanism the policy supports
 * that reads the most parameters (quadratic reads kappa). */
static void base_config(const agg_policy_ops *ops, agg_policy_config *c)
{
    agg_policy_config_init(c);
    c->k = K;
    c->horizon = 4000;
    c->epsilon = 1.0;
    c->beta = 0.05;
    c->gamma = 0.01;
    if (ops->model != AGG_MODEL_LOCAL)
        return;
    static const ldpb_mech_kind order[] = {LDPB_MECH_QUADRATIC, LDPB_MECH_LINEAR,
                                           LDPB_MECH_LAPLACE};
    for (size_t i = 0; i < 3; i++) {
        c->mechanism = order[i];
        agg_policy *p = NULL;
        if (agg_policy_new(&p, ops->name, c, NULL) == LDPB_OK) {
            agg_policy_free(p);
            return;
        }
    }
    fail_msg("%s accepts no mechanism", ops->name);
}

/* c with parameter `bit` set to another valid value. */
static void other_value(agg_policy_config *c, const agg_policy_ops *ops, agg_param bit)
{
    switch (bit) {
    case AGG_PARAM_HORIZON:
        c->horizon = 6000;
        return;
    case AGG_PARAM_EPSILON:
        c->epsilon = 0.5;
        return;
    case AGG_PARAM_MECHANISM:
        /* Outside LOCAL any kind will do; a LOCAL policy reads it (and refuses some). */
        c->mechanism = ops->model == AGG_MODEL_LOCAL && c->mechanism == LDPB_MECH_QUADRATIC
                           ? LDPB_MECH_EXPONENTIAL
                       : c->mechanism == LDPB_MECH_LAPLACE ? LDPB_MECH_LINEAR
                                                           : LDPB_MECH_LAPLACE;
        return;
    case AGG_PARAM_KAPPA:
        c->kappa = -0.3;
        return;
    case AGG_PARAM_BETA:
        c->beta = 0.02;
        return;
    case AGG_PARAM_GAMMA:
        c->gamma = 0.001;
        return;
    case AGG_PARAM_EPS_ARM:
        c->eps_arm = 0.5;
        return;
    case AGG_PARAM_TAU:
        c->tau = 7;
        return;
    case AGG_PARAM_THRESHOLD:
        c->threshold = 3.0;
        return;
    }
}

static uint8_t *save(const agg_policy *p, size_t *len)
{
    assert_int_equal(agg_policy_save(p, NULL, 0, len), LDPB_ERANGE);
    uint8_t *b = malloc(*len);
    assert_non_null(b);
    assert_int_equal(agg_policy_save(p, b, *len, len), LDPB_OK);
    return b;
}

static void declared_params_are_the_ones_read(void **state)
{
    (void)state;
    size_t n, np;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    const agg_param_info *pi = agg_policy_params(&np);
    for (size_t i = 0; i < n; i++) {
        agg_policy_config base;
        base_config(all[i], &base);
        unsigned reads = agg_policy_reads(all[i], &base);
        for (size_t j = 0; j < np; j++) {
            agg_policy_config alt = base;
            other_value(&alt, all[i], pi[j].bit);
            agg_policy *a = create(all[i]->name, &base);
            agg_policy *b = NULL;
            ldpb_err err = agg_policy_new(&b, all[i]->name, &alt, NULL);
            if (reads & pi[j].bit) {
                /* A value it reads may be refused; if not, the states are not interchangeable. */
                if (err == LDPB_OK) {
                    size_t len;
                    uint8_t *bytes = save(a, &len);
                    if (agg_policy_restore(b, bytes, len) != LDPB_ECORRUPT)
                        fail_msg("%s: a state saved under another %s restores", all[i]->name,
                                 pi[j].name);
                    free(bytes);
                }
                agg_policy_free(a);
                agg_policy_free(b);
                continue;
            }
            if (err)
                fail_msg("%s refuses another %s, which it does not read", all[i]->name, pi[j].name);
            run ra, rb;
            run_open(&ra, 11 + i);
            run_open(&rb, 11 + i);
            for (int t = 0; t < 600; t++) {
                uint32_t x, y;
                assert_int_equal(agg_policy_choose(a, &ra.env, &x), LDPB_OK);
                assert_int_equal(agg_policy_choose(b, &rb.env, &y), LDPB_OK);
                if (x != y)
                    fail_msg("%s: another %s changed round %d's arm", all[i]->name, pi[j].name,
                             t + 1);
                double o = observation(a, &ra, x);
                assert_true(o == observation(b, &rb, y));
                assert_int_equal(agg_policy_observe(a, &ra.env, x, o), LDPB_OK);
                assert_int_equal(agg_policy_observe(b, &rb.env, y, o), LDPB_OK);
            }
            agg_arm_status sa[K], sb[K];
            memset(sa, 0, sizeof sa);
            memset(sb, 0, sizeof sb);
            assert_int_equal(agg_policy_describe(a, sa, K), LDPB_OK);
            assert_int_equal(agg_policy_describe(b, sb, K), LDPB_OK);
            if (memcmp(sa, sb, sizeof sa) != 0)
                fail_msg("%s: another %s changed describe()", all[i]->name, pi[j].name);
            size_t len;
            uint8_t *bytes = save(a, &len);
            agg_policy *c = create(all[i]->name, &alt);
            assert_int_equal(agg_policy_restore(c, bytes, len), LDPB_OK);
            free(bytes);
            agg_policy_free(c);
            run_close(&ra);
            run_close(&rb);
            agg_policy_free(a);
            agg_policy_free(b);
        }
    }
}

static void choose_is_draw_changes_nothing(void **state)
{
    (void)state;
    size_t n, draws = 0;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    for (size_t i = 0; i < n; i++) {
        if (!all[i]->choose_is_draw)
            continue;
        draws++;
        agg_policy_config c;
        base_config(all[i], &c);
        agg_policy *p = create(all[i]->name, &c);
        run r;
        run_open(&r, 40 + i);
        for (int t = 0; t < 200; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &r.env, &a), LDPB_OK);
            assert_int_equal(agg_policy_observe(p, &r.env, a, observation(p, &r, a)), LDPB_OK);
        }
        size_t l0, l1;
        uint8_t *before = save(p, &l0);
        uint32_t seen = 0;
        for (int t = 0; t < 500; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &r.env, &a), LDPB_OK);
            seen |= 1u << a;
        }
        uint8_t *after = save(p, &l1);
        assert_int_equal(l0, l1);
        assert_memory_equal(before, after, l0);
        /* A draw, not a fixed choice: after 200 rewards more than one arm still comes up. */
        assert_true(seen & (seen - 1));
        free(before);
        free(after);
        run_close(&r);
        agg_policy_free(p);
    }
    assert_true(draws >= 1);
}

static void epoch_blocks_equal_rounds(void **state)
{
    (void)state;
    enum { EPOCHS = 4 };
    size_t n, with_plan = 0;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    for (size_t i = 0; i < n; i++) {
        const agg_policy_ops *ops = all[i];
        assert_true(!ops->plan == !ops->observe_block);
        if (!ops->plan)
            continue;
        with_plan++;
        agg_policy_config c;
        base_config(ops, &c);
        c.horizon = 1000000;
        agg_policy *one = create(ops->name, &c), *blk = create(ops->name, &c);
        run r1, r2;
        run_open(&r1, 70 + i);
        run_open(&r2, 70 + i);
        /* Rewards: the n-th pull of arm a gets bit (a, n) in both runs. */
        uint64_t pulls1[K] = {0}, pulls2[K] = {0};
        agg_rand bits;
        for (int e = 0; e < EPOCHS; e++) {
            uint32_t epoch, arms[K], m;
            uint64_t rem[K];
            assert_int_equal(ops->plan(one, &epoch, arms, rem, K, &m), LDPB_OK);
            if (m == 1)
                break;
            uint64_t total = 0;
            for (uint32_t j = 0; j < m; j++) {
                assert_int_equal(rem[j], rem[0]); /* an epoch start */
                total += rem[j];
            }
            for (uint64_t t = 0; t < total; t++) {
                uint32_t a;
                assert_int_equal(agg_policy_choose(one, &r1.env, &a), LDPB_OK);
                agg_rand_seed_u64(&bits, (uint64_t)a << 40 | pulls1[a]++);
                double x = agg_rand_uniform(&bits) < 0.3 + 0.2 * a ? 1.0 : 0.0;
                assert_int_equal(agg_policy_observe(one, &r1.env, a, x), LDPB_OK);
            }
            for (uint32_t j = 0; j < m; j++) {
                uint32_t a = arms[j];
                double sum = 0;
                for (uint64_t t = 0; t < rem[j]; t++) {
                    agg_rand_seed_u64(&bits, (uint64_t)a << 40 | pulls2[a]++);
                    sum += agg_rand_uniform(&bits) < 0.3 + 0.2 * a ? 1.0 : 0.0;
                }
                assert_int_equal(ops->observe_block(blk, &r2.env, a, rem[j], sum), LDPB_OK);
            }
            size_t l1, l2;
            uint8_t *s1 = save(one, &l1), *s2 = save(blk, &l2);
            assert_int_equal(l1, l2);
            assert_memory_equal(s1, s2, l1);
            free(s1);
            free(s2);
        }
        run_close(&r1);
        run_close(&r2);
        agg_policy_free(one);
        agg_policy_free(blk);
    }
    assert_true(with_plan >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(declared_params_are_the_ones_read),
        cmocka_unit_test(choose_is_draw_changes_nothing),
        cmocka_unit_test(epoch_blocks_equal_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
