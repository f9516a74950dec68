/* The policy registry, config defaults, the shared config checks of algorithms.md 10.1, and the
 * generic wrappers that validate what every policy would otherwise validate itself (arm index,
 * observation domain of the privacy model) before dispatching through the ops table. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* One entry per line (the trailing comments keep clang-format from packing the table). */
static const agg_policy_ops *const registry[] = {
    &agg_policy_ucb1,         /* algorithms.md 2.1 */
    &agg_policy_ts,           /* 2.2 */
    &agg_policy_se,           /* 2.6, non-private */
    &agg_policy_ldp_ts_b,     /* 2.3 */
    &agg_policy_ldp_ucb_b,    /* 2.4 */
    &agg_policy_ldp_ucb_l,    /* 2.5 */
    &agg_policy_ldp_se,       /* 2.6 */
    &agg_policy_dp_ucb,       /* 4.1 */
    &agg_policy_dp_ucb_bound, /* 4.2 */
    &agg_policy_dp_se,        /* 4.5 */
    &agg_policy_exp3,         /* Auer et al. 2002 */
    &agg_policy_dp_exp3_lap,  /* Tossou & Dimitrakakis 2017, Alg. 1, central */
    &agg_policy_ldp_exp3_lap, /* the same on the clients' Laplace reports */
    &agg_policy_exp3_tau,     /* Tossou & Dimitrakakis 2017, Sec. 3.2 */
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
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, cfg->mechanism, cfg->epsilon);
    switch (cfg->mechanism) {
    case LDPB_MECH_QUADRATIC:
        if (isnan(cfg->kappa))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: kappa is NaN", name);
        if (!(cfg->kappa >= -1.0 && cfg->kappa <= 1.0))
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: kappa %g outside [-1, 1]", name,
                                     cfg->kappa);
        o.kappa = cfg->kappa;
        break;
    case LDPB_MECH_LINEAR:
    case LDPB_MECH_EXPONENTIAL:
    case LDPB_MECH_LAPLACE:
        break;
    default:
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: unknown mechanism %d", name,
                                 (int)cfg->mechanism);
    }
    err = ldpb_mech_new(out, &o);
    if (err == LDPB_ENOMEM)
        return agg_policy_refuse(errmsg, err, "%s: out of memory", name);
    if (err)
        return agg_policy_refuse(errmsg, err, "%s: %s mechanism refused at epsilon %g", name,
                                 ldpb_mech_kind_name(cfg->mechanism), cfg->epsilon);
    return LDPB_OK;
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

/* The observation domain of the privacy model (policy.h): raw rewards in [0,1]; for LOCAL
 * policies a bit from a Bernoulli mechanism or any finite privatized real from Laplace. */
static int observation_valid(const agg_policy *p, double obs)
{
    if (!isfinite(obs))
        return 0;
    switch (p->ops->model) {
    case AGG_MODEL_NONPRIVATE:
    case AGG_MODEL_CENTRAL:
        return obs >= 0.0 && obs <= 1.0;
    case AGG_MODEL_LOCAL:
        if (p->cfg.mechanism == LDPB_MECH_LAPLACE)
            return 1;
        return obs == 0.0 || obs == 1.0;
    }
    return 0;
}

ldpb_err agg_policy_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    if (!p || !env || !env->rand)
        return LDPB_EINVAL;
    if (arm >= p->cfg.k || !observation_valid(p, obs))
        return LDPB_EINVAL;
    return p->ops->observe(p, env, arm, obs);
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
