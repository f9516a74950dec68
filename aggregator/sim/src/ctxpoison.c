/* Poisoning of the local contextual mode: see ctxpoison.h. */
#include "ctxpoison.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxmodel.h"
#include "sim.h"

#define NAME "ctxpoison"

typedef void (*craft_fn)(const agg_ctx_env *e, uint32_t d, double a, double *z);

static void craft_flip(const agg_ctx_env *e, uint32_t d, double a, double *z)
{
    for (uint32_t i = 0; i < d; i++)
        z[ldpb_ctxstat_index(d, i, d)] = e->theta[i] > 0.0 ? -a : a;
}

static void craft_flip_shrink(const agg_ctx_env *e, uint32_t d, double a, double *z)
{
    craft_flip(e, d, a, z);
    for (uint32_t i = 0; i < d; i++)
        z[ldpb_ctxstat_index(d, i, i)] = -a;
}

static void craft_flip_grow(const agg_ctx_env *e, uint32_t d, double a, double *z)
{
    craft_flip(e, d, a, z);
    for (uint32_t i = 0; i < d; i++)
        z[ldpb_ctxstat_index(d, i, i)] = a;
}

static const struct {
    const char *name;
    craft_fn craft;
} ATTACKS[AGG_CTX_POISON_ATTACKS] = {
    [AGG_CTX_POISON_FLIP] = {"flip", craft_flip},
    [AGG_CTX_POISON_FLIP_SHRINK] = {"flip-shrink", craft_flip_shrink},
    [AGG_CTX_POISON_FLIP_GROW] = {"flip-grow", craft_flip_grow},
};

const char *agg_ctx_poison_attack_name(agg_ctx_poison_attack a)
{
    return (unsigned)a < AGG_CTX_POISON_ATTACKS ? ATTACKS[a].name : NULL;
}

static ldpb_err check_cfg(const agg_ctx_poison_config *c, uint64_t trial,
                          char errmsg[AGG_ERRMSG_MAX])
{
    if (c->policy.d != c->env.d)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": policy d %u != env d %u", c->policy.d,
                                 c->env.d);
    if (!(c->fraction >= 0.0 && c->fraction <= 0.5))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": fraction %g outside [0, 0.5]",
                                 c->fraction);
    if ((unsigned)c->attack >= AGG_CTX_POISON_ATTACKS)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": unknown attack %d", (int)c->attack);
    if (!(c->admit >= 0.0 && isfinite(c->admit)) || !(c->aim >= 0.0 && isfinite(c->aim)) ||
        !(c->clip >= 0.0 && isfinite(c->clip)))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 NAME ": admit, aim and clip must be >= 0, finite");
    if (trial >= (1ULL << 32))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": trial %llu >= 2^32",
                                 (unsigned long long)trial);
    return agg_ctx_env_check(&c->env, errmsg);
}

/* The largest multiple of the grid g (a power of two) at most `bound`. */
static double on_grid(double bound, double g)
{
    return floor(bound / g) * g;
}

/* The scratch of one trial. */
typedef struct run {
    agg_ldp_linucb *agg;
    ldpb_ctxmodel *dev;
    ldpb_rng *trng, *crng;
    agg_ctx_env *env;
    double *x, *mean;
    agg_rand fast;
} run;

static void run_free(run *r)
{
    agg_ldp_linucb_free(r->agg);
    ldpb_ctxmodel_free(r->dev);
    ldpb_rng_free(r->trng);
    ldpb_rng_free(r->crng);
    free(r->env);
    free(r->x);
    free(r->mean);
}

static ldpb_err run_start(run *r, const agg_ctx_poison_config *c,
                          const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                          char errmsg[AGG_ERRMSG_MAX])
{
    memset(r, 0, sizeof *r);
    ldpb_err err = c->admit > 0.0
                       ? agg_ldp_linucb_new_admitting(&r->agg, &c->policy, c->admit, errmsg)
                       : agg_ldp_linucb_new(&r->agg, &c->policy, errmsg);
    if (err)
        return err;
    r->env = malloc(sizeof *r->env);
    r->x = malloc((size_t)c->env.k * c->env.d * sizeof *r->x);
    r->mean = malloc((size_t)c->env.k * sizeof *r->mean);
    if (!r->env || !r->x || !r->mean)
        return LDPB_ENOMEM;
    err = ldpb_ctxmodel_new(&r->dev, c->env.d);
    if (!err)
        err = agg_ctx_env_start(r->env, &c->env, seed, trial);
    if (!err)
        err = ldpb_rng_new_seeded_stream(&r->trng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_POLICY, 0));
    if (!err)
        err = ldpb_rng_new_seeded_stream(&r->crng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_CLIENT, 0));
    if (err)
        return agg_policy_refuse(errmsg, err, NAME ": cannot set up trial %llu: %s",
                                 (unsigned long long)trial, ldpb_strerror(err));
    agg_rand_seed(&r->fast, r->crng);
    return LDPB_OK;
}

/* The robust aggregate tried: every value clipped to +-c (c on the grid; 0: none). */
static void clip_report(double *z, size_t n, double c)
{
    for (size_t i = 0; c > 0.0 && i < n; i++)
        z[i] = z[i] > c ? c : (z[i] < -c ? -c : z[i]);
}

/* One honest device's round: the model, the choice, the reward, the report. */
static ldpb_err honest_round(run *r, const agg_ctx_poison_config *c, double clip,
                             agg_ctx_poison_result *res)
{
    const ldpb_ctxstat *mech = agg_ldp_linucb_mech(r->agg);
    const size_t nv = ldpb_ctxstat_values(mech);
    const uint32_t d = c->env.d, k = c->env.k;
    double stats[LDPB_CTXSTAT_VALUES_MAX], report[LDPB_CTXSTAT_VALUES_MAX], shift, beta;
    uint32_t arm = 0;
    agg_ctx_env_round(r->env, r->x, r->mean);
    ldpb_err err = agg_ldp_linucb_model(r->agg, stats, &shift, &beta);
    if (!err)
        err = ldpb_ctxmodel_load(r->dev, stats, nv, shift, beta, NULL);
    if (!err)
        err = ldpb_ctxmodel_choose(r->dev, r->trng, r->x, k, &arm, NULL);
    if (!err) {
        double y = agg_ctx_env_reward(r->env, r->mean[arm]);
        err = agg_ctx_ldp_privatize_fast(mech, &r->fast, r->x + (size_t)arm * d, y, report);
    }
    if (!err) {
        clip_report(report, nv, clip);
        err = agg_ldp_linucb_add(r->agg, report, nv);
    }
    if (err)
        return err;
    double avg = 0.0;
    for (uint32_t a = 0; a < k; a++)
        avg += r->mean[a];
    res->regret += c->env.best - r->mean[arm];
    res->uniform += c->env.best - avg / k;
    res->honest++;
    return LDPB_OK;
}

ldpb_err agg_ctx_poison_run(const agg_ctx_poison_config *cfg,
                            const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                            agg_ctx_poison_result *res, char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg || !seed || !res)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": NULL argument");
    memset(res, 0, sizeof *res);
    ldpb_err err = check_cfg(cfg, trial, errmsg);
    if (err)
        return err;
    run r;
    err = run_start(&r, cfg, seed, trial, errmsg);
    if (err)
        goto done;
    const ldpb_ctxstat *mech = agg_ldp_linucb_mech(r.agg);
    const size_t nv = ldpb_ctxstat_values(mech);
    const double g = ldpb_ctxstat_grid(mech);
    double bound = cfg->admit > 0.0 ? cfg->admit : ldpb_ctxstat_limit(mech);
    if (cfg->aim > 0.0)
        bound = cfg->aim;
    const double clip = on_grid(cfg->clip * ldpb_ctxstat_sigma(mech), g);
    if (clip > 0.0 && bound > clip)
        bound = clip;
    double crafted[LDPB_CTXSTAT_VALUES_MAX] = {0};
    ATTACKS[cfg->attack].craft(r.env, cfg->env.d, on_grid(bound, g), crafted);
    for (uint64_t t = 1; t <= cfg->policy.horizon; t++) {
        if (floor((double)t * cfg->fraction) > floor((double)(t - 1) * cfg->fraction)) {
            res->crafted++;
            err = agg_ldp_linucb_add(r.agg, crafted, nv);
            if (err == LDPB_EPROTO) {
                res->refused++;
                err = LDPB_OK;
            } else if (err) {
                goto fail;
            }
            continue;
        }
        err = honest_round(&r, cfg, clip, res);
        if (err)
            goto fail;
    }
    res->repairs = agg_ldp_linucb_repairs(r.agg);
    goto done;
fail:
    agg_policy_refuse(errmsg, err, NAME ": report %llu of trial %llu: %s",
                      (unsigned long long)(res->honest + res->crafted), (unsigned long long)trial,
                      ldpb_strerror(err));
done:
    run_free(&r);
    return err;
}
