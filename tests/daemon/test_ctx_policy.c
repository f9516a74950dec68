/* The daemon's contextual policies (ctx_policy.h): the checks of a feature set with their codes
 * and reasons, 1/ties, save/restore identity mid-run (the restored copy decides exactly as the
 * original, as the committer's copy must), refusal of corrupt or foreign state bytes, and the
 * K-armed ops refusing to choose or observe. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctx_env.h"
#include "ctx_policy.h"

static agg_policy *make(const char *name, uint32_t d)
{
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = CTX_K;
    cfg.horizon = 1000;
    cfg.epsilon = 1.0;
    agg_ctx_params cp = {d, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX] = "";
    ldpb_err e = agg_ctx_policy_new(&p, name, &cfg, &cp, msg);
    if (e)
        print_message("%s\n", msg);
    assert_int_equal(e, LDPB_OK);
    assert_true(agg_ctx_policy_is(p));
    return p;
}

static void test_checks(void **state)
{
    (void)state;
    agg_policy *p = make("linucb", CTX_D);
    agg_rand r;
    agg_rand_seed_u64(&r, 1);
    agg_policy_env env = {&r, NULL};
    double x[CTX_K * CTX_D];
    ctx_env_features(&r, x);
    uint32_t arm = 99, ties = 0;
    char reason[256];
    assert_int_equal(agg_ctx_policy_choose(p, &env, x, CTX_K * CTX_D - 1, &arm, &ties, reason),
                     LDPB_EINVAL);
    assert_non_null(strstr(reason, "context has 14 values"));
    x[5] = INFINITY;
    assert_int_equal(agg_ctx_policy_choose(p, &env, x, CTX_K * CTX_D, &arm, &ties, reason),
                     LDPB_EINVAL);
    assert_non_null(strstr(reason, "context[5] (arm 1, feature 2) is not finite"));
    ctx_env_features(&r, x);
    x[12] *= 1.0 + 1e-6;
    assert_int_equal(agg_ctx_policy_choose(p, &env, x, CTX_K * CTX_D, &arm, &ties, reason),
                     LDPB_ERANGE);
    assert_non_null(strstr(reason, "row of arm 4 has norm"));
    /* a fresh state ties every row of exactly the same norm: 1/ties is the logged propensity */
    memset(x, 0, sizeof x);
    for (int a = 0; a < CTX_K; a++)
        x[a * CTX_D + a % CTX_D] = 1.0;
    assert_int_equal(agg_ctx_policy_choose(p, &env, x, CTX_K * CTX_D, &arm, &ties, reason),
                     LDPB_OK);
    assert_int_equal(ties, CTX_K);
    assert_int_equal(agg_policy_choose(p, &env, &arm), LDPB_ENOTSUP);
    assert_int_equal(agg_policy_observe(p, &env, 0, 0.5), LDPB_ENOTSUP);
    assert_int_equal(agg_ctx_policy_observe(p, &env, CTX_K, x, 0.5), LDPB_EINVAL);
    assert_int_equal(agg_ctx_policy_observe(p, &env, 0, x, 1.5), LDPB_EINVAL);
    agg_policy_free(p);
}

/* Plays `n` rounds on p with the environment stream `e` and decisions from `r`. */
static void play(agg_policy *p, agg_policy_env *env, agg_rand *e, int n, uint32_t *arms)
{
    double x[CTX_K * CTX_D];
    char reason[256];
    for (int t = 0; t < n; t++) {
        ctx_env_features(e, x);
        uint32_t arm = 0, ties = 0;
        assert_int_equal(agg_ctx_policy_choose(p, env, x, CTX_K * CTX_D, &arm, &ties, reason),
                         LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(p, env, arm, x + arm * CTX_D,
                                                ctx_env_reward(e, x + arm * CTX_D)),
                         LDPB_OK);
        if (arms)
            arms[t] = arm;
    }
}

static void save_restore(const char *name)
{
    agg_policy *p = make(name, CTX_D), *q = make(name, CTX_D), *other = make(name, CTX_D + 1);
    agg_rand r, e;
    agg_rand_seed_u64(&r, 2);
    agg_rand_seed_u64(&e, 3);
    static const uint8_t seed0[LDPB_RNG_SEED_BYTES] = {4};
    ldpb_rng *s0 = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&s0, seed0), LDPB_OK);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_SECURE, s0, NULL), LDPB_OK);
    agg_policy_env env = {&r, noise};
    play(p, &env, &e, 200, NULL);
    size_t len = 0;
    assert_int_equal(agg_policy_save(p, NULL, 0, &len), LDPB_ERANGE);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(agg_policy_save(p, buf, len, &len), LDPB_OK);
    assert_int_equal(agg_policy_restore(q, buf, len), LDPB_OK);
    /* the same generators' states for both continuations; the privacy noise from two secure
     * streams of one seed (the served Gaussian draws from the secure stream only) */
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {9, 9};
    ldpb_rng *g1 = NULL, *g2 = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&g1, seed), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded(&g2, seed), LDPB_OK);
    agg_rand r2 = r, e2 = e;
    agg_noise *noise1 = NULL, *noise2 = NULL;
    assert_int_equal(agg_noise_new(&noise1, AGG_NOISE_SECURE, g1, NULL), LDPB_OK);
    assert_int_equal(agg_noise_new(&noise2, AGG_NOISE_SECURE, g2, NULL), LDPB_OK);
    agg_policy_env env1 = {&r, noise1}, env2 = {&r2, noise2};
    uint32_t a1[100], a2[100];
    play(p, &env1, &e, 100, a1);
    play(q, &env2, &e2, 100, a2);
    assert_memory_equal(a1, a2, sizeof a1);
    agg_arm_status s1[CTX_K], s2[CTX_K];
    assert_int_equal(agg_policy_describe(p, s1, CTX_K), LDPB_OK);
    assert_int_equal(agg_policy_describe(q, s2, CTX_K), LDPB_OK);
    uint64_t sum = 0;
    for (int i = 0; i < CTX_K; i++) {
        assert_int_equal(s1[i].pulls, s2[i].pulls);
        assert_true(isnan(s1[i].estimate));
        sum += s1[i].pulls;
    }
    assert_int_equal(sum, 300);
    /* corrupt, truncated or another configuration's bytes are refused, the state kept */
    assert_int_equal(agg_policy_restore(other, buf, len), LDPB_ECORRUPT);
    assert_int_equal(agg_policy_restore(q, buf, len - 1), LDPB_ECORRUPT);
    buf[0] ^= 0xff;
    assert_int_equal(agg_policy_restore(q, buf, len), LDPB_ECORRUPT);
    buf[0] ^= 0xff;
    buf[1] ^= 1; /* k */
    assert_int_equal(agg_policy_restore(q, buf, len), LDPB_ECORRUPT);
    assert_int_equal(agg_policy_describe(q, s2, CTX_K), LDPB_OK);
    assert_int_equal(s2[0].pulls, s1[0].pulls);
    free(buf);
    agg_noise_free(noise);
    ldpb_rng_free(s0);
    agg_noise_free(noise1);
    agg_noise_free(noise2);
    ldpb_rng_free(g1);
    ldpb_rng_free(g2);
    agg_policy_free(p);
    agg_policy_free(q);
    agg_policy_free(other);
}

static void test_save_restore_linucb(void **state)
{
    (void)state;
    save_restore("linucb");
}

static void test_save_restore_gaussian(void **state)
{
    (void)state;
    save_restore("jdp-linucb-gaussian");
}

static void test_save_restore_wishart(void **state)
{
    (void)state;
    save_restore("jdp-linucb-wishart");
}

static void test_config_refused(void **state)
{
    (void)state;
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = 30;
    cfg.horizon = 100;
    agg_ctx_params cp = {10, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX] = "";
    assert_int_equal(agg_ctx_policy_new(&p, "linucb", &cfg, &cp, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "arms x d = 30 x 10"));
    cfg.k = 5;
    cp.delta = 1.5;
    assert_int_equal(agg_ctx_policy_new(&p, "jdp-linucb-gaussian", &cfg, &cp, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "delta"));
    assert_int_equal(agg_ctx_policy_new(&p, "ucb1", &cfg, &cp, msg), LDPB_EINVAL);
    assert_null(p);
    assert_null(agg_ctx_policy_find("ucb1"));
    assert_non_null(agg_ctx_policy_find("jdp-linucb-wishart"));
}

/* The local contextual mode's policy behind the same header: it chooses nothing, observes a
 * report's statistics (refusing ones its mechanism's check refuses), hands out the model of
 * exactly what it summed (cached between changes, fresh after each), and saves and restores all
 * of it; foreign bytes (another policy's state) are refused. */
static void test_local_policy(void **state)
{
    (void)state;
    agg_policy *p = make("ldp-linucb-gaussian", CTX_D), *q = make("ldp-linucb-gaussian", CTX_D);
    assert_true(agg_ctx_policy_is_local(p));
    assert_int_equal(p->ops->model, AGG_MODEL_LOCAL);
    agg_rand r;
    agg_rand_seed_u64(&r, 3);
    agg_policy_env env = {&r, NULL};
    uint32_t arm = 0;
    assert_int_equal(agg_policy_choose(p, &env, &arm), LDPB_ENOTSUP);
    const ldpb_ctxstat *m = agg_ctx_policy_mech(p);
    assert_non_null(m);
    assert_int_equal(ldpb_ctxstat_get_opts(m)->d, CTX_D);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_system(&rng), LDPB_OK);
    double z[LDPB_CTXSTAT_VALUES_MAX], sum[LDPB_CTXSTAT_VALUES_MAX] = {0};
    double s1[LDPB_CTXSTAT_VALUES_MAX], s2[LDPB_CTXSTAT_VALUES_MAX];
    size_t n = 0, n2 = 0;
    double shift, beta, shift2, beta2;
    const double x[CTX_D] = {0.6, 0.0, 0.8};
    for (int t = 0; t < 5; t++) {
        assert_int_equal(agg_ctx_policy_model(p, s1, &n, &shift, &beta), LDPB_OK);
        assert_int_equal(n, LDPB_CTXSTAT_VALUES(CTX_D));
        for (size_t i = 0; i < n; i++)
            assert_true(fabs(s1[i] - sum[i]) <= 1e-9 * (1.0 + fabs(sum[i])));
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, 0.5, z), LDPB_OK);
        assert_int_equal(agg_ctx_policy_observe(p, &env, 0, z, 0.0), LDPB_OK);
        for (size_t i = 0; i < n; i++)
            sum[i] += z[i];
    }
    assert_int_equal(agg_ctx_policy_rounds(p), 5);
    z[0] += ldpb_ctxstat_grid(m) / 3.0; /* off the grid */
    assert_int_equal(agg_ctx_policy_observe(p, &env, 0, z, 0.0), LDPB_EPROTO);
    assert_int_equal(agg_ctx_policy_rounds(p), 5);

    uint8_t buf[8192];
    size_t len = 0;
    assert_int_equal(p->ops->save(p, buf, sizeof buf, &len), LDPB_OK);
    /* q's cached model (of nothing) must not survive the restore */
    assert_int_equal(agg_ctx_policy_model(q, s2, &n2, &shift2, &beta2), LDPB_OK);
    assert_int_equal(q->ops->restore(q, buf, len), LDPB_OK);
    assert_int_equal(agg_ctx_policy_rounds(q), 5);
    assert_int_equal(agg_ctx_policy_model(p, s1, &n, &shift, &beta), LDPB_OK);
    assert_int_equal(agg_ctx_policy_model(q, s2, &n2, &shift2, &beta2), LDPB_OK);
    assert_int_equal(n, n2);
    assert_memory_equal(s1, s2, n * sizeof *s1);
    assert_true(shift == shift2 && beta == beta2);

    /* another policy's state, and a truncated one */
    agg_policy *g = make("jdp-linucb-gaussian", CTX_D);
    size_t glen = 0;
    assert_int_equal(g->ops->save(g, NULL, 0, &glen), LDPB_ERANGE);
    uint8_t *gb = malloc(glen);
    assert_non_null(gb);
    assert_int_equal(g->ops->save(g, gb, glen, &glen), LDPB_OK);
    assert_int_equal(q->ops->restore(q, gb, glen), LDPB_ECORRUPT);
    assert_int_equal(g->ops->restore(g, buf, len), LDPB_ECORRUPT);
    assert_int_equal(q->ops->restore(q, buf, len - 1), LDPB_ECORRUPT);
    assert_int_equal(agg_ctx_policy_rounds(q), 5);
    free(gb);
    agg_policy_free(g);
    ldpb_rng_free(rng);
    agg_policy_free(p);
    agg_policy_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_save_restore_linucb),
        cmocka_unit_test(test_save_restore_gaussian),
        cmocka_unit_test(test_save_restore_wishart),
        cmocka_unit_test(test_config_refused),
        cmocka_unit_test(test_local_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
