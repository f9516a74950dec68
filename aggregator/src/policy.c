/* The policy registry, config defaults, the config checks most policies share, and the
 * generic wrappers that validate what every policy would otherwise validate itself (arm index,
 * observation domain of the privacy model) before dispatching through the ops table. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ldpb/mech_table.h"
#include "policy.h"

/* Non-private baselines and LDP policies (aggregator/policies/). */
extern const agg_policy_ops agg_policy_ucb1;
extern const agg_policy_ops agg_policy_ts;
extern const agg_policy_ops agg_policy_se;
extern const agg_policy_ops agg_policy_ldp_ts_b;
extern const agg_policy_ops agg_policy_ldp_ucb_b;
extern const agg_policy_ops agg_policy_ldp_ucb_l;
extern const agg_policy_ops agg_policy_ldp_se;
/* Central-DP policies: one extern line here and one entry in the table below each. */
extern const agg_policy_ops agg_policy_dp_ucb;
extern const agg_policy_ops agg_policy_dp_ucb_bound;
extern const agg_policy_ops agg_policy_dp_se;
/* Adversarial bandits (aggregator/policies/exp3_family.c). */
extern const agg_policy_ops agg_policy_exp3;
extern const agg_policy_ops agg_policy_dp_exp3_lap;
extern const agg_policy_ops agg_policy_ldp_exp3_lap;
extern const agg_policy_ops agg_policy_exp3_tau;
extern const agg_policy_ops agg_policy_dp_se_doubling;

/* One entry per line (the trailing comments keep clang-format from packing the table). */
static const agg_policy_ops *const registry[] = {
    &agg_policy_ucb1,         /* Auer, Cesa-Bianchi and Fischer 2002 */
    &agg_policy_ts,           /* Agrawal and Goyal 2012 */
    &agg_policy_se,           /* docs/derivations.md 9, non-private */
    &agg_policy_ldp_ts_b,     /* Jiang, Zhao and Li 2023 */
    &agg_policy_ldp_ucb_b,    /* Ren, Zhou, Liu and Shroff 2020 */
    &agg_policy_ldp_ucb_l,    /* Ren, Zhou, Liu and Shroff 2020 */
    &agg_policy_ldp_se,       /* docs/derivations.md 9 */
    &agg_policy_dp_ucb,       /* Mishra and Thakurta 2015 */
    &agg_policy_dp_ucb_bound, /* Tossou and Dimitrakakis 2016 */
    &agg_policy_dp_se,        /* Sajed and Sheffet 2019 */
    &agg_policy_exp3,         /* Auer et al. 2002 */
    &agg_policy_dp_exp3_lap,  /* Tossou & Dimitrakakis 2017, Alg. 1, central */
    &agg_policy_ldp_exp3_lap, /* the same on the clients' Laplace reports */
    &agg_policy_exp3_tau,     /* Tossou & Dimitrakakis 2017, Sec. 3.2 */
    /* the same under the doubling schedule (docs/derivations.md 10.1) */
    &agg_policy_dp_se_doubling,
};

const agg_policy_ops *const *agg_policy_all(size_t *count)
{
    if (count)
        *count = sizeof registry / sizeof registry[0];
    return registry;
}

const agg_policy_ops *agg_policy_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

#define PARAM(bit, name, type, field, in_header)                                                   \
    {                                                                                              \
        bit, name, type, offsetof(agg_policy_config, field), in_header                             \
    }

/* One row per field after k, in the struct's order, which is also the order of the saved state
 * header (statefmt.c): do not reorder. */
static const agg_param_info params[] = {
    PARAM(AGG_PARAM_HORIZON, "horizon", AGG_PARAM_TYPE_U64, horizon, 1),
    PARAM(AGG_PARAM_EPSILON, "epsilon", AGG_PARAM_TYPE_F64, epsilon, 1),
    PARAM(AGG_PARAM_MECHANISM, "mechanism", AGG_PARAM_TYPE_MECH, mechanism, 1),
    PARAM(AGG_PARAM_KAPPA, "kappa", AGG_PARAM_TYPE_F64, kappa, 1),
    PARAM(AGG_PARAM_BETA, "beta", AGG_PARAM_TYPE_F64, beta, 1),
    PARAM(AGG_PARAM_GAMMA, "gamma", AGG_PARAM_TYPE_F64, gamma, 1),
    PARAM(AGG_PARAM_EPS_ARM, "eps_arm", AGG_PARAM_TYPE_F64, eps_arm, 1),
    PARAM(AGG_PARAM_TAU, "tau", AGG_PARAM_TYPE_U64, tau, 0),
    PARAM(AGG_PARAM_THRESHOLD, "threshold", AGG_PARAM_TYPE_F64, threshold, 0),
};

const agg_param_info *agg_policy_params(size_t *count)
{
    if (count)
        *count = sizeof params / sizeof params[0];
    return params;
}

const agg_param_info *agg_policy_param_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof params / sizeof params[0]; i++)
        if (strcmp(params[i].name, name) == 0)
            return &params[i];
    return NULL;
}

static size_t param_size(const agg_param_info *pi)
{
    switch (pi->type) {
    case AGG_PARAM_TYPE_U64:
        return sizeof(uint64_t);
    case AGG_PARAM_TYPE_F64:
        return sizeof(double);
    case AGG_PARAM_TYPE_MECH:
        return sizeof(ldpb_mech_kind);
    }
    return 0;
}

int agg_policy_param_same(const agg_param_info *pi, const agg_policy_config *a,
                          const agg_policy_config *b)
{
    return memcmp((const char *)a + pi->offset, (const char *)b + pi->offset, param_size(pi)) == 0;
}

void agg_policy_param_text(const agg_param_info *pi, const agg_policy_config *cfg, char *buf,
                           size_t cap)
{
    const char *field = (const char *)cfg + pi->offset;
    switch (pi->type) {
    case AGG_PARAM_TYPE_U64: {
        uint64_t v;
        memcpy(&v, field, sizeof v);
        snprintf(buf, cap, "%llu", (unsigned long long)v);
        return;
    }
    case AGG_PARAM_TYPE_F64: {
        double v;
        memcpy(&v, field, sizeof v);
        snprintf(buf, cap, "%.17g", v);
        return;
    }
    case AGG_PARAM_TYPE_MECH: {
        ldpb_mech_kind v;
        memcpy(&v, field, sizeof v);
        snprintf(buf, cap, "%s", ldpb_mech_kind_name(v));
        return;
    }
    }
    snprintf(buf, cap, "?");
}

unsigned agg_policy_reads(const agg_policy_ops *ops, const agg_policy_config *cfg)
{
    unsigned m = ops->params;
    /* kappa matters only to a mechanism that reads it (the mechanism table says which). */
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)cfg->mechanism);
    if (!d || !(d->params & LDPB_MECH_PARAM_KAPPA))
        m &= ~(unsigned)AGG_PARAM_KAPPA;
    return m;
}

void agg_policy_readers(agg_param bit, char *dst, size_t cap)
{
    size_t used = 0;
    if (cap)
        dst[0] = '\0';
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++) {
        if (!(registry[i]->params & bit) || used >= cap)
            continue;
        int w = snprintf(dst + used, cap - used, "%s%s", used ? ", " : "", registry[i]->name);
        if (w < 0)
            return;
        used += (size_t)w;
    }
    if (used == 0 && cap)
        snprintf(dst, cap, "none");
}

void agg_policy_config_init(agg_policy_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->k = 0;
    cfg->horizon = 0;
    cfg->epsilon = 1.0;
    cfg->mechanism = LDPB_MECH_LINEAR;
    cfg->kappa = LDPB_KAPPA_DEFAULT;
    cfg->beta = 0.0;
    cfg->gamma = 0.0;
    cfg->eps_arm = 0.0;
    cfg->tau = 0;
    cfg->threshold = 0.0;
}

ldpb_err agg_policy_refuse(char errmsg[AGG_ERRMSG_MAX], ldpb_err err, const char *fmt, ...)
{
    if (errmsg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errmsg, AGG_ERRMSG_MAX, fmt, ap);
        va_end(ap);
    }
    return err;
}

ldpb_err agg_policy_check_k(const agg_policy_config *cfg, const char *name, int need_horizon,
                            char errmsg[AGG_ERRMSG_MAX])
{
    if (cfg->k < 2 || cfg->k > AGG_POLICY_K_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: k %u outside [2, %u]", name, cfg->k,
                                 AGG_POLICY_K_MAX);
    if (need_horizon && cfg->horizon == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: needs the horizon T (horizon 0)", name);
    if (cfg->horizon != 0 && cfg->horizon < cfg->k)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: horizon %llu < k %u", name,
                                 (unsigned long long)cfg->horizon, cfg->k);
    return LDPB_OK;
}

ldpb_err agg_policy_check_epsilon(const agg_policy_config *cfg, const char *name,
                                  char errmsg[AGG_ERRMSG_MAX])
{
    if (isnan(cfg->epsilon))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: epsilon is NaN", name);
    if (!(cfg->epsilon > 0.0 && cfg->epsilon <= LDPB_EPSILON_MAX))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: epsilon %g outside (0, %g]", name,
                                 cfg->epsilon, LDPB_EPSILON_MAX);
    return LDPB_OK;
}

ldpb_err agg_policy_mech_new(const agg_policy_config *cfg, const char *name, ldpb_mech **out,
                             char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_epsilon(cfg, name, errmsg);
    if (err)
        return err;
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)cfg->mechanism);
    if (!ldpb_mech_desc_scalar(d))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: unknown mechanism %d", name,
                                 (int)cfg->mechanism);
    if (d->params & LDPB_MECH_PARAM_KAPPA) {
        if (isnan(cfg->kappa))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: kappa is NaN", name);
        if (ldpb_mech_check_kappa(d->id, 1, cfg->kappa, "config", NULL) != LDPB_OK)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: kappa %g outside [-1, 1]", name,
                                     cfg->kappa);
    }
    ldpb_mech_opts o;
    ldpb_mech_desc_opts(d->id, cfg->epsilon, cfg->kappa, &o);
    err = ldpb_mech_new(out, &o);
    if (err == LDPB_ENOMEM)
        return agg_policy_refuse(errmsg, err, "%s: out of memory", name);
    if (err)
        return agg_policy_refuse(errmsg, err, "%s: %s mechanism refused at epsilon %g", name,
                                 ldpb_mech_kind_name(cfg->mechanism), cfg->epsilon);
    return LDPB_OK;
}

int agg_policy_mech_reports_bits(const agg_policy_config *cfg)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)cfg->mechanism);
    return !d || !d->local || d->output == LDPB_MECH_OUTPUT_BIT;
}

int agg_policy_mech_exact(const agg_policy_config *cfg)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)cfg->mechanism);
    return !d || !d->local || d->exact_debias;
}

ldpb_err agg_policy_new(agg_policy **out, const char *name, const agg_policy_config *cfg,
                        char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "no output pointer");
    *out = NULL;
    if (!name || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "no policy name or config");
    const agg_policy_ops *ops = agg_policy_find(name);
    if (!ops)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "unknown policy '%s'", name);
    ldpb_err err = ops->create(out, cfg, errmsg);
    assert(err != LDPB_OK || (*out && (*out)->ops == ops && (*out)->cfg.k == cfg->k));
    return err;
}

ldpb_err agg_policy_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    if (!p || !env || !env->rand || !arm)
        return LDPB_EINVAL;
    ldpb_err err = p->ops->choose(p, env, arm);
    assert(err != LDPB_OK || *arm < p->cfg.k);
    return err;
}

/* The observation domain of the privacy model (policy.h), as the mechanism table's admissibility
 * rule states it: raw rewards in [0,1] for the central and non-private models; for LOCAL policies
 * a value the configured mechanism can report at the configured epsilon (a bit, or a real within
 * LDPB_MECH_REAL_SCALES_MAX noise scales of [0,1]), the rule the daemon applies to every report. */
static int observation_valid(const agg_policy *p, double obs)
{
    if (p->ops->model != AGG_MODEL_LOCAL)
        return ldpb_mech_check_value(LDPB_MECH_ID_RAW, 0.0, 0, obs, "observation", NULL) == LDPB_OK;
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)p->cfg.mechanism);
    if (!ldpb_mech_desc_scalar(d))
        return 0;
    return ldpb_mech_check_value(d->id, p->cfg.epsilon, d->output == LDPB_MECH_OUTPUT_BIT, obs,
                                 "observation", NULL) == LDPB_OK;
}

ldpb_err agg_policy_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    if (!p || !env || !env->rand)
        return LDPB_EINVAL;
    if (arm >= p->cfg.k || !observation_valid(p, obs))
        return LDPB_EINVAL;
    return p->ops->observe(p, env, arm, obs);
}

ldpb_err agg_policy_observe_with_propensity(agg_policy *p, agg_policy_env *env, uint32_t arm,
                                            double obs, double prob)
{
    if (!p || !env || !env->rand)
        return LDPB_EINVAL;
    if (arm >= p->cfg.k || !observation_valid(p, obs) || !(prob > 0.0 && prob <= 1.0))
        return LDPB_EINVAL;
    if (!p->ops->observe_with_propensity)
        return p->ops->observe(p, env, arm, obs);
    return p->ops->observe_with_propensity(p, env, arm, obs, prob);
}

ldpb_err agg_policy_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    if (!p || !len)
        return LDPB_EINVAL;
    return p->ops->save(p, buf, cap, len);
}

ldpb_err agg_policy_restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    if (!p || (!buf && len > 0))
        return LDPB_EINVAL;
    return p->ops->restore(p, buf, len);
}

ldpb_err agg_policy_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    if (!p || !arms || k != p->cfg.k)
        return LDPB_EINVAL;
    return p->ops->describe(p, arms, k);
}

void agg_policy_free(agg_policy *p)
{
    if (p)
        p->ops->free(p);
}

ldpb_err agg_policy_propensity(const agg_policy *p, double *prob)
{
    if (!p || !prob)
        return LDPB_EINVAL;
    if (!p->ops->propensity)
        return LDPB_ESTATE;
    return p->ops->propensity(p, prob);
}

ldpb_err agg_policy_merge(agg_policy *dst, const agg_policy *src)
{
    if (!dst || !src || dst->ops != src->ops || dst->cfg.k != src->cfg.k)
        return LDPB_EINVAL;
    size_t n = 0;
    const agg_param_info *pi = agg_policy_params(&n);
    for (size_t i = 0; i < n; i++)
        if (!agg_policy_param_same(&pi[i], &dst->cfg, &src->cfg))
            return LDPB_EINVAL;
    if (!dst->ops->merge)
        return LDPB_ENOTSUP;
    return dst->ops->merge(dst, src);
}
