/* Thompson sampling, the non-private baseline (algorithms.md 2.2; Agrawal and Goyal 2012/2013).
 *
 * Prior Beta(1,1) per arm. Round: theta_a ~ Beta(S_a + 1, F_a + 1) for every arm, pull the argmax
 * (ties, which have probability zero but are handled, uniformly at random with env->rand).
 * Observation x in [0,1] is binarized z ~ Bern(x) with env->rand (the Agrawal-Goyal trick; a
 * reward of exactly 0 or 1 is used as is and draws nothing), then S or F of the arm grows.
 *
 * Speed: the Gamma constants of both posterior parameters are cached per arm and refreshed only
 * for the observed arm, and the K Beta draws of a round come from one agg_rand_beta_fill batch
 * into a scratch array allocated at creation (nothing is allocated per round). */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define TS_STATE_VERSION 1

/* describe(): a 95% Hoeffding interval for the binarized mean. */
#define TS_DESCRIBE_DELTA 0.05

typedef struct ts {
    agg_policy base;
    uint64_t *s, *f;          /* successes and failures per arm */
    agg_gamma_shape *gs, *gf; /* Gamma(S_a + 1), Gamma(F_a + 1) constants */
    double *theta;            /* scratch for one round's samples */
} ts;

extern const agg_policy_ops agg_policy_ts;

static void destroy(agg_policy *p)
{
    ts *x = (ts *)p;
    if (!x)
        return;
    free(x->s);
    free(x->f);
    free(x->gs);
    free(x->gf);
    free(x->theta);
    free(x);
}

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "ts", 0, errmsg);
    if (err)
        return err;
    size_t k = cfg->k;
    ts *x = calloc(1, sizeof *x);
    if (!x)
        goto nomem;
    x->base.ops = &agg_policy_ts;
    x->base.cfg = *cfg;
    x->s = calloc(k, sizeof *x->s);
    x->f = calloc(k, sizeof *x->f);
    x->gs = calloc(k, sizeof *x->gs);
    x->gf = calloc(k, sizeof *x->gf);
    x->theta = calloc(k, sizeof *x->theta);
    if (!x->s || !x->f || !x->gs || !x->gf || !x->theta)
        goto nomem;
    for (size_t a = 0; a < k; a++) {
        agg_gamma_shape_init(&x->gs[a], 1.0);
        agg_gamma_shape_init(&x->gf[a], 1.0);
    }
    *out = &x->base;
    return LDPB_OK;
nomem:
    destroy(x ? &x->base : NULL);
    return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ts: out of memory for %u arms", cfg->k);
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    ts *x = (ts *)p;
    uint32_t k = p->cfg.k;
    agg_rand_beta_fill(env->rand, x->gs, x->gf, k, x->theta);
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, x->theta[a], env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t a, double reward)
{
    ts *x = (ts *)p;
    int z;
    if (reward == 0.0 || reward == 1.0)
        z = reward == 1.0;
    else
        z = agg_rand_uniform(env->rand) < reward;
    if (z) {
        x->s[a]++;
        agg_gamma_shape_init(&x->gs[a], (double)x->s[a] + 1.0);
    } else {
        x->f[a]++;
        agg_gamma_shape_init(&x->gf[a], (double)x->f[a] + 1.0);
    }
    return LDPB_OK;
}

static ldpb_err save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ts *x = (const ts *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, TS_STATE_VERSION);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, x->s[a]);
        agg_put_u64(&w, x->f[a]);
    }
    return agg_wbuf_finish(&w, len);
}

/* Any counts are a valid posterior; they only have to be representable exactly as the doubles
 * the sampler uses (below 2^53) and their sum must not overflow. */
static ldpb_err decode(ts *x, const uint8_t *buf, size_t len, int commit)
{
    const uint64_t count_max = (uint64_t)1 << 53;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &x->base, TS_STATE_VERSION);
    if (err)
        return err;
    for (uint32_t a = 0; a < x->base.cfg.k; a++) {
        uint64_t s = agg_get_u64(&r), f = agg_get_u64(&r);
        if (s > count_max || f > count_max)
            return LDPB_ECORRUPT;
        if (commit) {
            x->s[a] = s;
            x->f[a] = f;
            agg_gamma_shape_init(&x->gs[a], (double)s + 1.0);
            agg_gamma_shape_init(&x->gf[a], (double)f + 1.0);
        }
    }
    return agg_rbuf_done(&r) ? LDPB_OK : LDPB_ECORRUPT;
}

static ldpb_err restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ts *x = (ts *)p;
    ldpb_err err = decode(x, buf, len, 0);
    return err ? err : decode(x, buf, len, 1);
}

/* The binarized reward z has mean mu exactly, so S/(S+F) is unbiased for mu; the interval is a
 * (fixed-n, not simultaneous) 95% Hoeffding interval. */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ts *x = (const ts *)p;
    for (uint32_t a = 0; a < k; a++) {
        uint64_t n = x->s[a] + x->f[a];
        arms[a].pulls = n;
        arms[a].active = 1;
        if (n == 0) {
            arms[a].estimate = arms[a].ci_low = arms[a].ci_high = NAN;
            continue;
        }
        double mean = (double)x->s[a] / (double)n;
        double rad = sqrt(log(2.0 / TS_DESCRIBE_DELTA) / (2.0 * (double)n));
        arms[a].estimate = mean;
        arms[a].ci_low = mean - rad;
        arms[a].ci_high = mean + rad;
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_ts = {
    .name = "ts",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 1,
    .create = create,
    .choose = choose,
    .observe = observe,
    .save = save,
    .restore = restore,
    .describe = describe,
    .free = destroy,
};
