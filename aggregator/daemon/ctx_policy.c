/* The daemon's contextual policies: see ctx_policy.h. */
#include "ctx_policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "ldpb/wire.h"

#define CTX_STATE_VERSION       1u
#define CTX_LOCAL_STATE_VERSION 2u

typedef struct ctx_policy {
    agg_policy hdr;
    agg_linucb *lin;     /* the central and non-private policies */
    agg_ldp_linucb *ldp; /* the local contextual mode's */
    uint64_t *pulls;     /* reports observed per arm, for status pages */
    /* the local policy's model, as agg_ldp_linucb_model gave it for `model_reports` reports */
    double *model;
    double model_shift, model_beta;
    int model_valid;
} ctx_policy;

static ldpb_err ctx_choose_refused(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    (void)p, (void)env, (void)arm;
    return LDPB_ENOTSUP;
}

static ldpb_err ctx_observe_refused(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    (void)p, (void)env, (void)arm, (void)obs;
    return LDPB_ENOTSUP;
}

static ldpb_err ctx_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    if (p->ldp) {
        size_t ldp_len = 0;
        ldpb_err err = agg_ldp_linucb_save(p->ldp, NULL, 0, &ldp_len);
        if (err != LDPB_ERANGE)
            return err ? err : LDPB_EINVAL;
        *len = 1 + ldp_len;
        if (!buf || cap < *len)
            return LDPB_ERANGE;
        buf[0] = CTX_LOCAL_STATE_VERSION;
        return agg_ldp_linucb_save(p->ldp, buf + 1, cap - 1, &ldp_len);
    }
    size_t lin_len = 0;
    ldpb_err err = agg_linucb_save(p->lin, NULL, 0, &lin_len);
    if (err != LDPB_ERANGE)
        return err ? err : LDPB_EINVAL;
    size_t k = p->hdr.cfg.k, head = 1 + 4 + 8 * k;
    *len = head + lin_len;
    if (!buf || cap < *len)
        return LDPB_ERANGE;
    buf[0] = CTX_STATE_VERSION;
    for (int i = 0; i < 4; i++)
        buf[1 + i] = (uint8_t)(k >> (8 * i));
    for (size_t a = 0; a < k; a++)
        for (int i = 0; i < 8; i++)
            buf[5 + 8 * a + (size_t)i] = (uint8_t)(p->pulls[a] >> (8 * i));
    return agg_linucb_save(p->lin, buf + head, cap - head, &lin_len);
}

static ldpb_err ctx_restore(agg_policy *pp, const uint8_t *buf, size_t len)
{
    ctx_policy *p = (ctx_policy *)pp;
    if (p->ldp) {
        if (!buf || len < 1 || buf[0] != CTX_LOCAL_STATE_VERSION)
            return LDPB_ECORRUPT;
        p->model_valid = 0;
        return agg_ldp_linucb_restore(p->ldp, buf + 1, len - 1);
    }
    size_t k = p->hdr.cfg.k, head = 1 + 4 + 8 * k;
    if (!buf || len < head || buf[0] != CTX_STATE_VERSION)
        return LDPB_ECORRUPT;
    uint32_t kk = 0;
    for (int i = 0; i < 4; i++)
        kk |= (uint32_t)buf[1 + i] << (8 * i);
    if (kk != k)
        return LDPB_ECORRUPT;
    uint64_t *pulls = calloc(k, sizeof *pulls);
    if (!pulls)
        return LDPB_ENOMEM;
    for (size_t a = 0; a < k; a++)
        for (int i = 0; i < 8; i++)
            pulls[a] |= (uint64_t)buf[5 + 8 * a + (size_t)i] << (8 * i);
    /* linucb restores all or nothing, so the counts are replaced only with it */
    ldpb_err err = agg_linucb_restore(p->lin, buf + head, len - head);
    if (!err) {
        free(p->pulls);
        p->pulls = pulls;
        pulls = NULL;
    }
    free(pulls);
    return err;
}

static ldpb_err ctx_describe(const agg_policy *pp, agg_arm_status *arms, uint32_t k)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    /* A linear model has no per-arm mean: an arm's reward depends on the request's features. */
    for (uint32_t a = 0; a < k; a++) {
        arms[a].pulls = p->pulls[a];
        arms[a].estimate = NAN;
        arms[a].ci_low = arms[a].ci_high = NAN;
        arms[a].active = 1;
    }
    return LDPB_OK;
}

static void ctx_free(agg_policy *pp)
{
    ctx_policy *p = (ctx_policy *)pp;
    if (!p)
        return;
    agg_linucb_free(p->lin);
    agg_ldp_linucb_free(p->ldp);
    free(p->pulls);
    free(p->model);
    free(p);
}

/* The statistics of `linucb` (the Gram matrix and b vector, as sums of per-round terms) and of
 * `ldp-linucb-gaussian` (the sum of the devices' privatized statistics) add: several nodes keep
 * partial states and serve the merge (docs/aggregator.md, "Several nodes on one PostgreSQL").
 * The JDP variants keep noise trees indexed by the round: no merge, they are sequenced. */
static ldpb_err ctx_merge(agg_policy *dp, const agg_policy *sp)
{
    ctx_policy *d = (ctx_policy *)dp;
    const ctx_policy *s = (const ctx_policy *)sp;
    if (d->ldp && s->ldp) {
        ldpb_err err = agg_ldp_linucb_merge(d->ldp, s->ldp);
        if (!err)
            d->model_valid = 0; /* the model handed out is derived from the sum */
        return err;
    }
    if (!d->lin || !s->lin)
        return LDPB_EINVAL;
    const uint32_t k = dp->cfg.k;
    for (uint32_t a = 0; a < k; a++)
        if (s->pulls[a] > UINT64_MAX - d->pulls[a])
            return LDPB_ERANGE;
    ldpb_err err = agg_linucb_merge(d->lin, s->lin);
    for (uint32_t a = 0; !err && a < k; a++)
        d->pulls[a] += s->pulls[a];
    return err;
}

#define CTX_OPS(nm, mdl, par, adds)                                                                \
    {                                                                                              \
        .name = nm, .model = mdl, .mergeable = adds, .params = par, .choose_is_draw = 0,           \
        .create = NULL, .choose = ctx_choose_refused, .observe = ctx_observe_refused,              \
        .save = ctx_save, .restore = ctx_restore, .describe = ctx_describe, .free = ctx_free,      \
        .merge = (adds) ? ctx_merge : NULL,                                                        \
    }

static const agg_policy_ops ops_linucb =
    CTX_OPS("linucb", AGG_MODEL_NONPRIVATE, AGG_PARAM_HORIZON, 1);
static const agg_policy_ops ops_wishart =
    CTX_OPS("jdp-linucb-wishart", AGG_MODEL_CENTRAL, AGG_PARAM_HORIZON | AGG_PARAM_EPSILON, 0);
static const agg_policy_ops ops_gaussian =
    CTX_OPS("jdp-linucb-gaussian", AGG_MODEL_CENTRAL, AGG_PARAM_HORIZON | AGG_PARAM_EPSILON, 0);
static const agg_policy_ops ops_ldp_gaussian =
    CTX_OPS("ldp-linucb-gaussian", AGG_MODEL_LOCAL, AGG_PARAM_HORIZON | AGG_PARAM_EPSILON, 1);

const agg_policy_ops *agg_ctx_policy_find(const char *name)
{
    const agg_policy_ops *all[] = {&ops_linucb, &ops_wishart, &ops_gaussian, &ops_ldp_gaussian};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

int agg_ctx_policy_is(const agg_policy *p)
{
    return p && (p->ops == &ops_linucb || p->ops == &ops_wishart || p->ops == &ops_gaussian ||
                 p->ops == &ops_ldp_gaussian);
}

int agg_ctx_policy_is_local(const agg_policy *p)
{
    return p && p->ops == &ops_ldp_gaussian;
}

/* The local contextual mode's policy: the aggregator only sums the devices' statistics. */
static ldpb_err ldp_policy_new(ctx_policy *p, const agg_policy_config *cfg,
                               const agg_ctx_params *cp, char errmsg[AGG_ERRMSG_MAX])
{
    agg_ldp_linucb_config lc;
    agg_ldp_linucb_config_init(&lc);
    lc.d = cp->d;
    lc.epsilon = cfg->epsilon;
    lc.delta = cp->delta;
    lc.feature_norm = cp->L;
    lc.reward_bound = cp->B;
    lc.theta_norm = cp->S;
    lc.noise_sigma = cp->sigma;
    /* 0 means 1/horizon, as for the other contextual policies (config.c) */
    /* 0 means 1/horizon; anything else goes to the policy, which refuses it outside (0, 1) */
    lc.alpha = cp->alpha == 0.0 ? 1.0 / (double)(cfg->horizon ? cfg->horizon : 1) : cp->alpha;
    lc.horizon = cfg->horizon;
    ldpb_err err = agg_ldp_linucb_new(&p->ldp, &lc, errmsg);
    if (err)
        return err;
    p->model = malloc(LDPB_CTXSTAT_VALUES_MAX * sizeof *p->model);
    return p->model ? LDPB_OK
                    : agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", p->hdr.ops->name);
}

ldpb_err agg_ctx_policy_new(agg_policy **out, const char *name, const agg_policy_config *cfg,
                            const agg_ctx_params *cp, char errmsg[AGG_ERRMSG_MAX])
{
    if (!out || !cfg || !cp)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "contextual policy: NULL argument");
    *out = NULL;
    const agg_policy_ops *ops = agg_ctx_policy_find(name);
    if (!ops)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "unknown contextual policy '%s'",
                                 name ? name : "(null)");
    if (ops == &ops_ldp_gaussian) {
        ctx_policy *p = calloc(1, sizeof *p);
        if (!p)
            return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", ops->name);
        p->hdr.ops = ops;
        p->hdr.cfg = *cfg;
        p->pulls = calloc(cfg->k ? cfg->k : 1, sizeof *p->pulls);
        ldpb_err err = p->pulls
                           ? ldp_policy_new(p, cfg, cp, errmsg)
                           : agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", ops->name);
        if (err) {
            ctx_free(&p->hdr);
            return err;
        }
        *out = &p->hdr;
        return LDPB_OK;
    }
    if (cfg->k < 2 || cp->d == 0 || (uint64_t)cfg->k * cp->d > LDPB_WIRE_CONTEXT_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: arms x d = %u x %u must be in [2, %u] (the features of "
                                 "every arm travel in one AssignRequest)",
                                 ops->name, (unsigned)cfg->k, (unsigned)cp->d,
                                 LDPB_WIRE_CONTEXT_MAX);
    agg_linucb_config lc;
    agg_linucb_config_init(&lc);
    lc.variant = agg_linucb_variant_find(name);
    lc.d = cp->d;
    lc.horizon = cfg->horizon;
    lc.epsilon = cfg->epsilon;
    lc.delta = cp->delta;
    lc.alpha = cp->alpha;
    lc.L = cp->L;
    lc.S = cp->S;
    lc.sigma = cp->sigma;
    lc.rho = cp->rho;
    /* both served releases live on a grid (docs/privacy.md): the Gaussian with exact discrete
     * Gaussian noise (sec. 10.2), the Wishart with its samples rounded to the grid and each node
     * released once, in integers (sec. 10.3) */
    lc.exact = lc.variant == AGG_LINUCB_GAUSSIAN || lc.variant == AGG_LINUCB_WISHART;
    /* linucb.h: GSL's default handler aborts; every status is checked there instead. */
    gsl_set_error_handler_off();
    ctx_policy *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", ops->name);
    p->hdr.ops = ops;
    p->hdr.cfg = *cfg;
    p->pulls = calloc(cfg->k, sizeof *p->pulls);
    ldpb_err err = p->pulls
                       ? agg_linucb_new(&p->lin, &lc, errmsg)
                       : agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", ops->name);
    if (err) {
        ctx_free(&p->hdr);
        return err;
    }
    *out = &p->hdr;
    return LDPB_OK;
}

uint32_t agg_ctx_policy_d(const agg_policy *pp)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    return p->ldp ? agg_ldp_linucb_get_config(p->ldp)->d : agg_linucb_get_config(p->lin)->d;
}

double agg_ctx_policy_norm_bound(const agg_policy *pp)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    return p->ldp ? agg_ldp_linucb_get_config(p->ldp)->feature_norm
                  : agg_linucb_get_config(p->lin)->L;
}

uint64_t agg_ctx_policy_rounds(const agg_policy *pp)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    return p->ldp ? agg_ldp_linucb_reports(p->ldp) : agg_linucb_rounds(p->lin);
}

uint64_t agg_ctx_policy_horizon(const agg_policy *pp)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    return p->ldp ? agg_ldp_linucb_get_config(p->ldp)->horizon
                  : agg_linucb_get_config(p->lin)->horizon;
}

const ldpb_ctxstat *agg_ctx_policy_mech(const agg_policy *pp)
{
    const ctx_policy *p = (const ctx_policy *)pp;
    return p->ldp ? agg_ldp_linucb_mech(p->ldp) : NULL;
}

ldpb_err agg_ctx_policy_model(agg_policy *pp, double *stats, size_t *n, double *shift, double *beta)
{
    ctx_policy *p = (ctx_policy *)pp;
    if (!p->ldp)
        return LDPB_EINVAL;
    size_t values = ldpb_ctxstat_values(agg_ldp_linucb_mech(p->ldp));
    if (!p->model_valid) {
        /* beta needs ln det V, a factorisation: once per change, not once per assignment */
        ldpb_err err = agg_ldp_linucb_model(p->ldp, p->model, &p->model_shift, &p->model_beta);
        if (err)
            return err;
        p->model_valid = 1;
    }
    memcpy(stats, p->model, values * sizeof *stats);
    *n = values;
    *shift = p->model_shift;
    *beta = p->model_beta;
    return LDPB_OK;
}

ldpb_err agg_ctx_policy_choose(agg_policy *pp, agg_policy_env *env, const double *x, size_t n,
                               uint32_t *arm, uint32_t *ties, char reason[256])
{
    ctx_policy *p = (ctx_policy *)pp;
    uint32_t d = agg_ctx_policy_d(pp), k = p->hdr.cfg.k;
    double L = agg_ctx_policy_norm_bound(pp);
    if (n != (size_t)k * d) {
        snprintf(reason, 256,
                 "context has %zu values; this aggregator's contextual policy needs the "
                 "features of each of its %u arms, %u x %u = %u values",
                 n, (unsigned)k, (unsigned)k, (unsigned)d, (unsigned)(k * d));
        return LDPB_EINVAL;
    }
    for (uint32_t a = 0; a < k; a++) {
        double s = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            double v = x[(size_t)a * d + j];
            if (!isfinite(v)) {
                snprintf(reason, 256, "context[%u] (arm %u, feature %u) is not finite",
                         (unsigned)(a * d + j), (unsigned)a, (unsigned)j);
                return LDPB_EINVAL;
            }
            s += v * v;
        }
        /* the policy's own tolerance (linucb.h): a client's normalisation may round up */
        if (sqrt(s) > L * (1.0 + 1e-9)) {
            snprintf(reason, 256,
                     "context row of arm %u has norm %.17g, above this aggregator's bound L = %g",
                     (unsigned)a, sqrt(s), L);
            return LDPB_ERANGE;
        }
    }
    ldpb_err err = agg_linucb_choose(p->lin, env, x, k, arm, ties);
    if (err)
        snprintf(reason, 256, "the policy failed to choose an arm");
    return err;
}

ldpb_err agg_ctx_policy_observe(agg_policy *pp, agg_policy_env *env, uint32_t arm, const double *x,
                                double y)
{
    ctx_policy *p = (ctx_policy *)pp;
    if (p->ldp) {
        (void)env;
        if (!x)
            return LDPB_EINVAL;
        ldpb_err err =
            agg_ldp_linucb_add(p->ldp, x, ldpb_ctxstat_values(agg_ldp_linucb_mech(p->ldp)));
        if (!err)
            p->model_valid = 0;
        return err;
    }
    if (arm >= p->hdr.cfg.k || !x || !(y >= 0.0 && y <= 1.0))
        return LDPB_EINVAL;
    ldpb_err err = agg_linucb_observe(p->lin, env, x, y);
    if (!err)
        p->pulls[arm]++;
    return err;
}
