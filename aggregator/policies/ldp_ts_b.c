/* LDP-TS-B (algorithms.md 2.3; Jiang, Zhao and Li 2023): Thompson sampling on the bits of a
 * Bernoulli mechanism (linear = CTB, quadratic or exponential; one probability function p and
 * one epsilon for all arms, so the privatized means mu'_a = E[p(X_a)] are on one scale).
 *
 * The reports of an arm are i.i.d. Bern(mu'_a), so Beta(S_a + 1, F_a + 1) is the exact posterior
 * of mu'_a under the Beta(1,1) prior. Round: theta_a ~ Beta(S_a + 1, F_a + 1) for every arm, pull
 * the argmax (ties uniformly at random with env->rand); a report y in {0,1} adds to S or F. The
 * optional clamp of theta into [p0, p1] (2.3, ASSUMED) is not applied: the spec's default is the
 * plain posterior sample.
 *
 * The mechanism runs on the client; the aggregator builds the same configuration to validate it
 * and to de-bias in describe(): exact for linear, the plug-in p^-1(ybar) otherwise (1.6). Speed as
 * in ts.c: cached Gamma constants, one batched Beta fill per round, no allocation per round. */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define LDP_TS_B_STATE_VERSION 1

/* describe(): a 95% Hoeffding interval, on the unit scale for the linear mechanism. */
#define LDP_TS_B_DESCRIBE_DELTA 0.05

typedef struct ldp_ts_b {
    agg_policy base;
    ldpb_mech *mech;
    uint64_t *s, *f;
    agg_gamma_shape *gs, *gf;
    double *theta;
} ldp_ts_b;

extern const agg_policy_ops agg_policy_ldp_ts_b;

static void destroy(agg_policy *p)
{
    ldp_ts_b *x = (ldp_ts_b *)p;
    if (!x)
        return;
    ldpb_mech_free(x->mech);
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
    ldpb_err err = agg_policy_check_k(cfg, "ldp-ts-b", 0, errmsg);
    if (err)
        return err;
    if (cfg->mechanism == LDPB_MECH_LAPLACE)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ts-b: mechanism laplace is not a Bernoulli mechanism "
                                 "(linear, quadratic or exponential)");
    ldpb_mech *mech = NULL;
    err = agg_policy_mech_new(cfg, "ldp-ts-b", &mech, errmsg);
    if (err)
        return err;
    size_t k = cfg->k;
    ldp_ts_b *x = calloc(1, sizeof *x);
    if (!x) {
        ldpb_mech_free(mech);
        goto nomem;
    }
    x->base.ops = &agg_policy_ldp_ts_b;
    x->base.cfg = *cfg;
    x->mech = mech;
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
    return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ldp-ts-b: out of memory for %u arms", cfg->k);
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    ldp_ts_b *x = (ldp_ts_b *)p;
    uint32_t k = p->cfg.k;
    agg_rand_beta_fill(env->rand, x->gs, x->gf, k, x->theta);
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, x->theta[a], env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t a, double bit)
{
    (void)env;
    ldp_ts_b *x = (ldp_ts_b *)p;
    if (bit == 1.0) {
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
    const ldp_ts_b *x = (const ldp_ts_b *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, LDP_TS_B_STATE_VERSION);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, x->s[a]);
        agg_put_u64(&w, x->f[a]);
    }
    return agg_wbuf_finish(&w, len);
}

/* As ts.c: any counts below 2^53 are a valid posterior. */
static ldpb_err decode(ldp_ts_b *x, const uint8_t *buf, size_t len, int commit)
{
    const uint64_t count_max = (uint64_t)1 << 53;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &x->base, LDP_TS_B_STATE_VERSION);
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
    ldp_ts_b *x = (ldp_ts_b *)p;
    ldpb_err err = decode(x, buf, len, 0);
    return err ? err : decode(x, buf, len, 1);
}

/* De-biased S/(S+F) (1.6): exact and unbiased for linear, with a 95% Hoeffding interval scaled by
 * 1/s; the plug-in approximation p^-1(ybar) for quadratic and exponential, without an interval
 * (the mean reward is not identifiable from the reports then). */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ldp_ts_b *x = (const ldp_ts_b *)p;
    for (uint32_t a = 0; a < k; a++) {
        uint64_t n = x->s[a] + x->f[a];
        arms[a].pulls = n;
        arms[a].active = 1;
        arms[a].estimate = arms[a].ci_low = arms[a].ci_high = NAN;
        if (n == 0)
            continue;
        int exact = 0;
        ldpb_err err =
            ldpb_mech_debias_mean(x->mech, (double)x->s[a], n, &arms[a].estimate, &exact);
        if (err)
            return err;
        double rad;
        if (exact &&
            ldpb_mech_debias_radius(x->mech, n, LDP_TS_B_DESCRIBE_DELTA, &rad) == LDPB_OK) {
            arms[a].ci_low = arms[a].estimate - rad;
            arms[a].ci_high = arms[a].estimate + rad;
        }
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_ldp_ts_b = {
    .name = "ldp-ts-b",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 1,
    .create = create,
    .choose = choose,
    .observe = observe,
    .save = save,
    .restore = restore,
    .describe = describe,
    .free = destroy,
};
