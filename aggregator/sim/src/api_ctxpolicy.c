/* The contextual half of libldpb-sim's policy API (ldpb/sim.h, ldpb_ctxpolicy_*): the engine's
 * central contextual policies (linucb.h) and the local contextual mode (ldp_linucb.h with the
 * device's ldpb_ctxmodel and ldpb_ctxstat), driven step by step. The two families answer through
 * one table of operations (kind_ops); the configuration follows the daemon's (ctx_policy.c), so
 * a policy here decides as the daemon's would for the same inputs and generator. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "api_internal.h"
#include "ldp_linucb.h"
#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"
#include "ldpb/sim.h"
#include "linucb.h"
#include "rand.h"

/* The device's tolerance on ||x|| beyond L (ldpb/ctxstat.h; the client checks rows the same). */
#define NORM_TOL 1e-9

typedef struct kind_ops kind_ops;

struct ldpb_ctxpolicy {
    const kind_ops *ops;
    const char *name;
    int model; /* agg_model */
    uint32_t d;
    double L;
    ldpb_rng *rng; /* every draw: tie breaks (through rand), tree noise, device noise */
    agg_rand rand;
    agg_noise *noise;
    agg_linucb *lin;     /* central and non-private */
    agg_ldp_linucb *ldp; /* local */
    ldpb_ctxmodel *dev;  /* local: the device's model */
};

struct kind_ops {
    ldpb_err (*create)(ldpb_ctxpolicy *p, const ldpb_ctxpolicy_params *prm, char *msg);
    ldpb_err (*choose)(ldpb_ctxpolicy *p, const double *x, uint32_t n, uint32_t *arm,
                       uint32_t *ties);
    ldpb_err (*observe)(ldpb_ctxpolicy *p, const double *x, double y);
    ldpb_err (*save)(const ldpb_ctxpolicy *p, uint8_t *buf, size_t cap, size_t *len);
    ldpb_err (*restore)(ldpb_ctxpolicy *p, const uint8_t *buf, size_t len);
    uint64_t (*rounds)(const ldpb_ctxpolicy *p);
};

/* ---- central: linucb.h ------------------------------------------------------------------- */

static ldpb_err central_create(ldpb_ctxpolicy *p, const ldpb_ctxpolicy_params *prm, char *msg)
{
    agg_linucb_config lc;
    agg_linucb_config_init(&lc);
    lc.variant = agg_linucb_variant_find(p->name);
    lc.d = prm->d;
    lc.horizon = prm->horizon;
    lc.epsilon = prm->epsilon;
    lc.delta = prm->delta;
    lc.alpha = prm->alpha;
    lc.L = prm->L;
    lc.S = prm->S;
    lc.sigma = prm->sigma;
    lc.rho = prm->rho;
    /* as the daemon serves it (ctx_policy.c): the Gaussian release on its grid, exact noise */
    lc.exact = lc.variant == AGG_LINUCB_GAUSSIAN;
    ldpb_err err = agg_noise_new(&p->noise, AGG_NOISE_SECURE, p->rng, NULL);
    if (err)
        return agg_policy_refuse(msg, err, "cannot create the noise source: %s",
                                 ldpb_strerror(err));
    return agg_linucb_new(&p->lin, &lc, msg);
}

static ldpb_err central_choose(ldpb_ctxpolicy *p, const double *x, uint32_t n, uint32_t *arm,
                               uint32_t *ties)
{
    agg_policy_env env = {&p->rand, p->noise};
    return agg_linucb_choose(p->lin, &env, x, n, arm, ties);
}

static ldpb_err central_observe(ldpb_ctxpolicy *p, const double *x, double y)
{
    agg_policy_env env = {&p->rand, p->noise};
    return agg_linucb_observe(p->lin, &env, x, y);
}

static ldpb_err central_save(const ldpb_ctxpolicy *p, uint8_t *buf, size_t cap, size_t *len)
{
    return agg_linucb_save(p->lin, buf, cap, len);
}

static ldpb_err central_restore(ldpb_ctxpolicy *p, const uint8_t *buf, size_t len)
{
    return agg_linucb_restore(p->lin, buf, len);
}

static uint64_t central_rounds(const ldpb_ctxpolicy *p)
{
    return agg_linucb_rounds(p->lin);
}

/* ---- local: ldp_linucb.h, the device's ctxmodel and ctxstat ------------------------------ */

static ldpb_err local_create(ldpb_ctxpolicy *p, const ldpb_ctxpolicy_params *prm, char *msg)
{
    agg_ldp_linucb_config lc;
    agg_ldp_linucb_config_init(&lc);
    lc.d = prm->d;
    lc.epsilon = prm->epsilon;
    lc.delta = prm->delta;
    lc.feature_norm = prm->L;
    lc.reward_bound = prm->B;
    lc.theta_norm = prm->S;
    lc.noise_sigma = prm->sigma;
    /* 0 means 1/horizon, as the daemon's configuration says */
    /* 0 means 1/horizon; anything else goes to the policy, which refuses it outside (0, 1) */
    lc.alpha = prm->alpha == 0.0 ? 1.0 / (double)(prm->horizon ? prm->horizon : 1) : prm->alpha;
    lc.horizon = prm->horizon;
    ldpb_err err = agg_ldp_linucb_new(&p->ldp, &lc, msg);
    if (err)
        return err;
    err = ldpb_ctxmodel_new(&p->dev, prm->d);
    return err ? agg_policy_refuse(msg, err, "%s: cannot create the device model: %s", p->name,
                                   ldpb_strerror(err))
               : LDPB_OK;
}

static ldpb_err check_rows(const double *x, uint32_t n, uint32_t d, double L)
{
    for (uint32_t i = 0; i < n; i++) {
        double s = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            double v = x[(size_t)i * d + j];
            if (!isfinite(v))
                return LDPB_EINVAL;
            s += v * v;
        }
        if (sqrt(s) > L * (1.0 + NORM_TOL))
            return LDPB_ERANGE;
    }
    return LDPB_OK;
}

/* The device's step of a round: the model the aggregator hands out now, loaded and chosen from
 * (the simulator's local runner does the same, ctxsim.c). */
static ldpb_err local_choose(ldpb_ctxpolicy *p, const double *x, uint32_t n, uint32_t *arm,
                             uint32_t *ties)
{
    if (n == 0 || n > AGG_LINUCB_ACTIONS_MAX)
        return LDPB_ERANGE;
    ldpb_err err = check_rows(x, n, p->d, p->L);
    if (err)
        return err;
    double stats[LDPB_CTXSTAT_VALUES_MAX], shift, beta;
    err = agg_ldp_linucb_model(p->ldp, stats, &shift, &beta);
    if (!err)
        err = ldpb_ctxmodel_load(p->dev, stats, LDPB_CTXSTAT_VALUES(p->d), shift, beta, NULL);
    return err ? err : ldpb_ctxmodel_choose(p->dev, p->rng, x, n, arm, ties);
}

static ldpb_err local_observe(ldpb_ctxpolicy *p, const double *x, double y)
{
    double z[LDPB_CTXSTAT_VALUES_MAX];
    ldpb_err err = ldpb_ctxpolicy_privatize(p, x, y, z);
    return err ? err : agg_ldp_linucb_add(p->ldp, z, LDPB_CTXSTAT_VALUES(p->d));
}

static ldpb_err local_save(const ldpb_ctxpolicy *p, uint8_t *buf, size_t cap, size_t *len)
{
    return agg_ldp_linucb_save(p->ldp, buf, cap, len);
}

static ldpb_err local_restore(ldpb_ctxpolicy *p, const uint8_t *buf, size_t len)
{
    return agg_ldp_linucb_restore(p->ldp, buf, len);
}

static uint64_t local_rounds(const ldpb_ctxpolicy *p)
{
    return agg_ldp_linucb_reports(p->ldp);
}

static const kind_ops central_ops = {central_create, central_choose,  central_observe,
                                     central_save,   central_restore, central_rounds};
static const kind_ops local_ops = {local_create, local_choose,  local_observe,
                                   local_save,   local_restore, local_rounds};

static const struct {
    const char *name;
    int model;
    const kind_ops *ops;
} registry[] = {
    {"linucb", AGG_MODEL_NONPRIVATE, &central_ops},
    {"jdp-linucb-wishart", AGG_MODEL_CENTRAL, &central_ops},
    {"jdp-linucb-gaussian", AGG_MODEL_CENTRAL, &central_ops},
    {"ldp-linucb-gaussian", AGG_MODEL_LOCAL, &local_ops},
};
#define N_REGISTRY (sizeof registry / sizeof registry[0])

/* ---- the public API ------------------------------------------------------------------------ */

void ldpb_ctxpolicy_params_init(ldpb_ctxpolicy_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof *p);
    p->epsilon = 1.0;
    p->delta = 0.1;
    p->L = 1.0;
    p->B = 1.0;
    p->S = 1.0;
    p->sigma = 1.0;
    p->rho = 1.0;
}

static ldpb_err make_rng(const char *seed, ldpb_rng **out)
{
    if (!seed)
        return ldpb_rng_new_system(out);
    uint8_t bytes[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(bytes, seed);
    return ldpb_rng_new_seeded(out, bytes);
}

ldpb_err ldpb_ctxpolicy_new(ldpb_ctxpolicy **out, const char *name,
                            const ldpb_ctxpolicy_params *params, const char *seed, char *errmsg,
                            size_t errlen)
{
    char msg[AGG_ERRMSG_MAX] = "";
    ldpb_err err = LDPB_EINVAL;
    ldpb_ctxpolicy *p = NULL;
    if (out)
        *out = NULL;
    if (!out || !name || !params) {
        snprintf(msg, sizeof msg, "NULL argument");
        goto done;
    }
    size_t i = 0;
    while (i < N_REGISTRY && strcmp(registry[i].name, name) != 0)
        i++;
    if (i == N_REGISTRY) {
        char e[48];
        snprintf(msg, sizeof msg, "unknown contextual policy '%s'", tool_echo(e, sizeof e, name));
        goto done;
    }
    err = LDPB_ENOMEM;
    if (!(p = calloc(1, sizeof *p))) {
        snprintf(msg, sizeof msg, "%s", ldpb_strerror(err));
        goto done;
    }
    p->ops = registry[i].ops;
    p->name = registry[i].name;
    p->model = registry[i].model;
    p->d = params->d;
    p->L = params->L;
    err = make_rng(seed, &p->rng);
    if (err) {
        snprintf(msg, sizeof msg, "cannot create the random generator: %s", ldpb_strerror(err));
        goto done;
    }
    agg_rand_seed(&p->rand, p->rng);
    /* linucb.h: GSL's default handler aborts; every status is checked there instead */
    gsl_set_error_handler_off();
    err = p->ops->create(p, params, msg);
done:
    if (errmsg && errlen)
        snprintf(errmsg, errlen, "%s", err && !msg[0] ? ldpb_strerror(err) : err ? msg : "");
    if (err) {
        ldpb_ctxpolicy_free(p);
        return err;
    }
    *out = p;
    return LDPB_OK;
}

void ldpb_ctxpolicy_free(ldpb_ctxpolicy *p)
{
    if (!p)
        return;
    agg_linucb_free(p->lin);
    agg_ldp_linucb_free(p->ldp);
    ldpb_ctxmodel_free(p->dev);
    agg_noise_free(p->noise);
    ldpb_rng_free(p->rng);
    free(p);
}

ldpb_err ldpb_ctxpolicy_choose(ldpb_ctxpolicy *p, const double *x, uint32_t n_actions,
                               uint32_t *arm, uint32_t *ties)
{
    if (!p || !x || !arm)
        return LDPB_EINVAL;
    return p->ops->choose(p, x, n_actions, arm, ties);
}

ldpb_err ldpb_ctxpolicy_observe(ldpb_ctxpolicy *p, const double *x_arm, double y)
{
    if (!p || !x_arm || !isfinite(y))
        return LDPB_EINVAL;
    return p->ops->observe(p, x_arm, y);
}

size_t ldpb_ctxpolicy_report_len(const ldpb_ctxpolicy *p)
{
    return p && p->ldp ? LDPB_CTXSTAT_VALUES(p->d) : 0;
}

ldpb_err ldpb_ctxpolicy_privatize(ldpb_ctxpolicy *p, const double *x, double y, double *out)
{
    if (!p || !x || !out)
        return LDPB_EINVAL;
    if (!p->ldp)
        return LDPB_ENOTSUP;
    return ldpb_ctxstat_privatize(agg_ldp_linucb_mech(p->ldp), p->rng, x, y, out);
}

ldpb_err ldpb_ctxpolicy_add_report(ldpb_ctxpolicy *p, const double *z, size_t n)
{
    if (!p || !z)
        return LDPB_EINVAL;
    if (!p->ldp)
        return LDPB_ENOTSUP;
    return agg_ldp_linucb_add(p->ldp, z, n);
}

ldpb_err ldpb_ctxpolicy_save(const ldpb_ctxpolicy *p, uint8_t *buf, size_t cap, size_t *len)
{
    if (!p || !len)
        return LDPB_EINVAL;
    return p->ops->save(p, buf, cap, len);
}

ldpb_err ldpb_ctxpolicy_restore(ldpb_ctxpolicy *p, const uint8_t *buf, size_t len)
{
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    return p->ops->restore(p, buf, len);
}

uint64_t ldpb_ctxpolicy_rounds(const ldpb_ctxpolicy *p)
{
    return p ? p->ops->rounds(p) : 0;
}

uint32_t ldpb_ctxpolicy_d(const ldpb_ctxpolicy *p)
{
    return p ? p->d : 0;
}

const char *ldpb_ctxpolicy_name(const ldpb_ctxpolicy *p)
{
    return p ? p->name : NULL;
}

const char *ldpb_ctxpolicy_model(const ldpb_ctxpolicy *p)
{
    return p ? simapi_model_name(p->model) : NULL;
}

const char *ldpb_ctxpolicy_name_at(size_t i)
{
    return i < N_REGISTRY ? registry[i].name : NULL;
}

const char *ldpb_ctxpolicy_model_of(const char *name)
{
    for (size_t i = 0; name && i < N_REGISTRY; i++)
        if (strcmp(registry[i].name, name) == 0)
            return simapi_model_name(registry[i].model);
    return NULL;
}
