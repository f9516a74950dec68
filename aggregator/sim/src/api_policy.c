/* The policy half of libldpb-sim's public API (ldpb/sim.h): one policy of the registry with its
 * own generators, driven step by step by a caller that owns the environment. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "ldpb/rng.h"
#include "ldpb/sim.h"
#include "policy.h"
#include "rand.h"

struct ldpb_policy {
    agg_policy *p;
    ldpb_rng *rng; /* tie breaks seed agg_rand from it; central-DP noise draws from it */
    agg_rand rand;
    agg_noise *noise;
    agg_policy_env env;
};

void ldpb_policy_params_init(ldpb_policy_params *p)
{
    if (!p)
        return;
    agg_policy_config c;
    agg_policy_config_init(&c);
    p->k = c.k;
    p->horizon = c.horizon;
    p->epsilon = c.epsilon;
    p->mechanism = (int)c.mechanism;
    p->kappa = c.kappa;
    p->beta = c.beta;
    p->gamma = c.gamma;
    p->eps_arm = c.eps_arm;
    p->tau = c.tau;
    p->threshold = c.threshold;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
say(char *errmsg, size_t errlen, const char *fmt, ...)
{
    if (!errmsg || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, errlen, fmt, ap);
    va_end(ap);
}

static ldpb_err make_rng(const char *seed, ldpb_rng **out)
{
    if (!seed)
        return ldpb_rng_new_system(out);
    uint8_t bytes[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(bytes, seed);
    return ldpb_rng_new_seeded(out, bytes);
}

ldpb_err ldpb_policy_new(ldpb_policy **out, const char *name, const ldpb_policy_params *params,
                         const char *seed, char *errmsg, size_t errlen)
{
    say(errmsg, errlen, "%s", "");
    if (!out || !name || !params) {
        if (out)
            *out = NULL;
        say(errmsg, errlen, "NULL argument");
        return LDPB_EINVAL;
    }
    *out = NULL;
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = params->k;
    c.horizon = params->horizon;
    c.epsilon = params->epsilon;
    c.mechanism = (ldpb_mech_kind)params->mechanism;
    c.kappa = params->kappa;
    c.beta = params->beta;
    c.gamma = params->gamma;
    c.eps_arm = params->eps_arm;
    c.tau = params->tau;
    c.threshold = params->threshold;
    ldpb_policy *p = calloc(1, sizeof *p);
    if (!p) {
        say(errmsg, errlen, "%s", ldpb_strerror(LDPB_ENOMEM));
        return LDPB_ENOMEM;
    }
    ldpb_err err = make_rng(seed, &p->rng);
    if (err) {
        say(errmsg, errlen, "cannot create the random generator: %s", ldpb_strerror(err));
        goto fail;
    }
    agg_rand_seed(&p->rand, p->rng);
    err = agg_noise_new(&p->noise, AGG_NOISE_SECURE, p->rng, NULL);
    if (err) {
        say(errmsg, errlen, "cannot create the noise source: %s", ldpb_strerror(err));
        goto fail;
    }
    char msg[AGG_ERRMSG_MAX] = "";
    err = agg_policy_new(&p->p, name, &c, msg);
    if (err) {
        char e[48];
        if (!agg_policy_find(name))
            say(errmsg, errlen, "unknown policy '%s'", tool_echo(e, sizeof e, name));
        else
            say(errmsg, errlen, "%s", msg[0] ? msg : ldpb_strerror(err));
        goto fail;
    }
    p->env.rand = &p->rand;
    p->env.noise = p->noise;
    *out = p;
    return LDPB_OK;
fail:
    ldpb_policy_free(p);
    return err;
}

void ldpb_policy_free(ldpb_policy *p)
{
    if (!p)
        return;
    agg_policy_free(p->p);
    agg_noise_free(p->noise);
    ldpb_rng_free(p->rng);
    free(p);
}

ldpb_err ldpb_policy_choose(ldpb_policy *p, uint32_t *arm)
{
    if (!p || !arm)
        return LDPB_EINVAL;
    return agg_policy_choose(p->p, &p->env, arm);
}

ldpb_err ldpb_policy_observe(ldpb_policy *p, uint32_t arm, double obs)
{
    if (!p)
        return LDPB_EINVAL;
    return agg_policy_observe(p->p, &p->env, arm, obs);
}

ldpb_err ldpb_policy_observe_with_propensity(ldpb_policy *p, uint32_t arm, double obs, double prob)
{
    if (!p)
        return LDPB_EINVAL;
    return agg_policy_observe_with_propensity(p->p, &p->env, arm, obs, prob);
}

ldpb_err ldpb_policy_propensity(const ldpb_policy *p, double *prob)
{
    if (!p || !prob)
        return LDPB_EINVAL;
    if (!p->p->ops->propensity)
        return LDPB_ENOTSUP;
    return agg_policy_propensity(p->p, prob);
}

ldpb_err ldpb_policy_save(const ldpb_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    if (!p || !len)
        return LDPB_EINVAL;
    return agg_policy_save(p->p, buf, cap, len);
}

ldpb_err ldpb_policy_restore(ldpb_policy *p, const uint8_t *buf, size_t len)
{
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    return agg_policy_restore(p->p, buf, len);
}

ldpb_err ldpb_policy_describe(const ldpb_policy *p, ldpb_policy_arm *arms, uint32_t k)
{
    if (!p || !arms)
        return LDPB_EINVAL;
    if (k != p->p->cfg.k)
        return LDPB_ERANGE;
    agg_arm_status *st = calloc(k, sizeof *st);
    if (!st)
        return LDPB_ENOMEM;
    ldpb_err err = agg_policy_describe(p->p, st, k);
    for (uint32_t a = 0; err == LDPB_OK && a < k; a++) {
        arms[a].pulls = st[a].pulls;
        arms[a].estimate = st[a].estimate;
        arms[a].ci_low = st[a].ci_low;
        arms[a].ci_high = st[a].ci_high;
        arms[a].active = st[a].active;
    }
    free(st);
    return err;
}

uint32_t ldpb_policy_k(const ldpb_policy *p)
{
    return p ? p->p->cfg.k : 0;
}

const char *ldpb_policy_name(const ldpb_policy *p)
{
    return p ? p->p->ops->name : NULL;
}

const char *ldpb_policy_model(const ldpb_policy *p)
{
    return p ? simapi_model_name(p->p->ops->model) : NULL;
}

const char *ldpb_policy_name_at(size_t i)
{
    size_t n;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    return i < n ? all[i]->name : NULL;
}

const char *ldpb_policy_model_of(const char *name)
{
    const agg_policy_ops *ops = name ? agg_policy_find(name) : NULL;
    return ops ? simapi_model_name(ops->model) : NULL;
}
