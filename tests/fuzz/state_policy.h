/* What fuzz_state and gen_state_corpus share: every policy the daemon can restore (the registry's
 * K-armed policies and the contextual ones of aggregator/daemon/ctx_policy.h), made from a name
 * and a variant byte with a fixed configuration, and driven for some rounds with valid
 * observations so that its state is a real one.
 *
 * An input of fuzz_state is: the policy's name, NUL, the variant byte, then the state's bytes.
 * The name (rather than an index) keeps the committed corpus meaningful when policies are added.
 * Variant bits 0-1 pick the clients' mechanism (a LOCAL policy reads it; a policy that refuses
 * the mechanism is not made), bit 2 a second horizon. */
#ifndef LDPB_FUZZ_STATE_POLICY_H
#define LDPB_FUZZ_STATE_POLICY_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_policy.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"
#include "policy.h"

enum { STATE_K = 3, STATE_D = 2, STATE_NAME_MAX = 40 };

typedef struct state_run {
    agg_rand rand, noise_rand, obs;
    agg_noise *noise;
    agg_policy_env env;
    ldpb_rng *rng; /* the local contextual policy's simulated devices */
} state_run;

static inline int state_run_open(state_run *r, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    agg_rand_seed_u64(&r->rand, seed);
    agg_rand_seed_u64(&r->noise_rand, seed + 1);
    agg_rand_seed_u64(&r->obs, seed + 2);
    uint8_t s[LDPB_RNG_SEED_BYTES] = {(uint8_t)seed, 0x5e};
    if (agg_noise_new(&r->noise, AGG_NOISE_FAST, NULL, &r->noise_rand) != LDPB_OK ||
        ldpb_rng_new_seeded(&r->rng, s) != LDPB_OK)
        return -1;
    r->env.rand = &r->rand;
    r->env.noise = r->noise;
    return 0;
}

static inline void state_run_close(state_run *r)
{
    agg_noise_free(r->noise);
    ldpb_rng_free(r->rng);
}

/* The policy `name` under variant `v`, or NULL when the variant's configuration is one the
 * policy refuses (or the name is unknown). */
static inline agg_policy *state_policy_make(const char *name, uint8_t v)
{
    static const ldpb_mech_kind mechs[4] = {LDPB_MECH_QUADRATIC, LDPB_MECH_LINEAR,
                                            LDPB_MECH_LAPLACE, LDPB_MECH_EXPONENTIAL};
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = STATE_K;
    cfg.horizon = (v & 4) ? 60 : 4000;
    cfg.epsilon = 1.0;
    cfg.beta = 0.05;
    cfg.gamma = 0.01;
    cfg.mechanism = mechs[v & 3];
    agg_policy *p = NULL;
    if (agg_ctx_policy_find(name)) {
        agg_ctx_params cp = {STATE_D, 0.1, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0};
        if (agg_ctx_policy_new(&p, name, &cfg, &cp, NULL) != LDPB_OK)
            return NULL;
        return p;
    }
    if (!agg_policy_find(name) || agg_policy_new(&p, name, &cfg, NULL) != LDPB_OK)
        return NULL;
    return p;
}

/* One round with a valid observation: choose, then observe (errors, e.g. past the horizon, are
 * the policy's answer and are returned). */
static inline ldpb_err state_policy_round(agg_policy *p, state_run *r)
{
    double u = agg_rand_uniform(&r->obs);
    if (agg_ctx_policy_is_local(p)) {
        const ldpb_ctxstat *m = agg_ctx_policy_mech(p);
        double z[LDPB_CTXSTAT_VALUES_MAX];
        const double x[STATE_D] = {0.6 * u, 0.8 * u};
        ldpb_err err = ldpb_ctxstat_privatize(m, r->rng, x, u, z);
        return err ? err : agg_ctx_policy_observe(p, &r->env, 0, z, 0.0);
    }
    if (agg_ctx_policy_is(p)) {
        double x[STATE_K * STATE_D];
        for (size_t i = 0; i < STATE_K * STATE_D; i++)
            x[i] = 0.7 * agg_rand_uniform(&r->obs) - 0.35;
        uint32_t arm = 0, ties = 0;
        char reason[256];
        ldpb_err err = agg_ctx_policy_choose(p, &r->env, x, STATE_K * STATE_D, &arm, &ties, reason);
        return err ? err : agg_ctx_policy_observe(p, &r->env, arm, x + STATE_D * arm, u);
    }
    uint32_t arm = 0;
    ldpb_err err = agg_policy_choose(p, &r->env, &arm);
    if (err)
        return err;
    double obs;
    if (p->ops->model == AGG_MODEL_LOCAL && !agg_policy_mech_reports_bits(&p->cfg))
        obs = (u - 0.5) * 6.0 + 0.2 * arm;
    else if (p->ops->model == AGG_MODEL_LOCAL)
        obs = u < 0.3 + 0.2 * arm ? 1.0 : 0.0;
    else
        obs = floor(u * 8.0 * (0.4 + 0.3 * arm)) / 8.0;
    double prob = 1.0;
    if (agg_policy_propensity(p, &prob) != LDPB_OK)
        prob = 1.0;
    return agg_policy_observe_with_propensity(p, &r->env, arm, obs, prob);
}

/* The policy's saved state in a malloc'd buffer (NULL on failure). */
static inline uint8_t *state_policy_save(const agg_policy *p, size_t *len)
{
    *len = 0;
    if (agg_policy_save(p, NULL, 0, len) != LDPB_ERANGE)
        return NULL;
    uint8_t *buf = malloc(*len ? *len : 1);
    size_t got = 0;
    if (!buf || agg_policy_save(p, buf, *len, &got) != LDPB_OK || got != *len) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The names of every policy fuzz_state covers, in a fixed order: the registry, then the
 * contextual policies. *count gets how many. */
static inline const char *state_policy_name(size_t i, size_t *count)
{
    static const char *const ctx[] = {"linucb", "jdp-linucb-wishart", "jdp-linucb-gaussian",
                                      "ldp-linucb-gaussian"};
    size_t n = 0;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    *count = n + sizeof ctx / sizeof ctx[0];
    if (i < n)
        return all[i]->name;
    return i < *count ? ctx[i - n] : NULL;
}

#endif
