/* Contextual environment and trial runner: see ctxsim.h. */
#include "ctxsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxmodel.h"
#include "sim.h"

ldpb_err agg_ctx_env_check(const agg_ctx_env_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: NULL configuration");
    if (cfg->d < 2 || cfg->d > AGG_LINUCB_D_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: d %u outside [2, %u]", cfg->d,
                                 AGG_LINUCB_D_MAX);
    if (cfg->k < 1 || cfg->k > AGG_LINUCB_ACTIONS_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: k %u outside [1, %u]", cfg->k,
                                 AGG_LINUCB_ACTIONS_MAX);
    if (!(cfg->best > 0.0 && cfg->best <= 1.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: best %g outside (0, 1]", cfg->best);
    if (!(cfg->gap >= 0.0 && cfg->gap < 2.0 * cfg->best))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: gap %g outside [0, 2 best)",
                                 cfg->gap);
    if (cfg->reward != AGG_CTX_REWARD_BOUNDED && cfg->reward != AGG_CTX_REWARD_GAUSSIAN)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: unknown reward kind %d",
                                 (int)cfg->reward);
    return LDPB_OK;
}

static ldpb_err seed_stream(agg_rand *r, const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t id)
{
    ldpb_rng *src = NULL;
    ldpb_err err = ldpb_rng_new_seeded_stream(&src, seed, id);
    if (err)
        return err;
    agg_rand_seed(r, src);
    ldpb_rng_free(src);
    return LDPB_OK;
}

/* A uniform unit vector (normalised Gaussian). */
static void unit_vector(agg_rand *r, double *v, uint32_t d)
{
    double n2;
    do {
        n2 = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            v[j] = agg_rand_normal(r);
            n2 += v[j] * v[j];
        }
    } while (!(n2 > 1e-300));
    double s = 1.0 / sqrt(n2);
    for (uint32_t j = 0; j < d; j++)
        v[j] *= s;
}

ldpb_err agg_ctx_env_start(agg_ctx_env *e, const agg_ctx_env_config *cfg,
                           const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial)
{
    ldpb_err err = agg_ctx_env_check(cfg, NULL);
    if (err)
        return err;
    memset(e, 0, sizeof *e);
    e->cfg = *cfg;
    e->half = 0.5 * ((double)cfg->d - 1.0);
    err = seed_stream(&e->ctx, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_ENV, 0));
    if (!err)
        err = seed_stream(&e->rew, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_ENV, 1));
    if (err)
        return err;
    unit_vector(&e->ctx, e->theta, cfg->d);
    return LDPB_OK;
}

/* x = proj theta + sqrt(1 - proj^2) w, w a uniform unit direction orthogonal to theta. */
static void action(agg_ctx_env *e, double proj, double *x)
{
    const uint32_t d = e->cfg.d;
    double w[AGG_LINUCB_D_MAX], n2;
    do {
        double dot = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            w[j] = agg_rand_normal(&e->ctx);
            dot += w[j] * e->theta[j];
        }
        n2 = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            w[j] -= dot * e->theta[j];
            n2 += w[j] * w[j];
        }
    } while (!(n2 > 1e-24));
    double s = sqrt(fmax(0.0, 1.0 - proj * proj) / n2);
    for (uint32_t j = 0; j < d; j++)
        x[j] = proj * e->theta[j] + s * w[j];
}

void agg_ctx_env_round(agg_ctx_env *e, double *x, double *mean)
{
    const uint32_t d = e->cfg.d, k = e->cfg.k;
    const double hi = e->cfg.best - e->cfg.gap, lo = -e->cfg.best;
    uint32_t opt = (uint32_t)agg_rand_below(&e->ctx, k);
    for (uint32_t a = 0; a < k; a++) {
        double proj;
        if (a == opt) {
            proj = e->cfg.best;
        } else {
            do {
                proj = 2.0 * agg_rand_beta(&e->ctx, e->half, e->half) - 1.0;
            } while (!(proj >= lo && proj <= hi));
        }
        action(e, proj, x + (size_t)a * d);
        double m = 0.0;
        for (uint32_t j = 0; j < d; j++)
            m += e->theta[j] * x[(size_t)a * d + j];
        mean[a] = m;
    }
}

double agg_ctx_env_reward(agg_ctx_env *e, double mean)
{
    if (e->cfg.reward == AGG_CTX_REWARD_GAUSSIAN)
        return mean + agg_rand_normal(&e->rew);
    return agg_rand_uniform(&e->rew) < 0.5 * (1.0 + mean) ? 1.0 : -1.0;
}

ldpb_err agg_ctx_sim_run_trial(const agg_ctx_sim_config *cfg,
                               const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                               double *regret, uint64_t *chol_failures, char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg || !seed || !regret || !cfg->checkpoints || cfg->n_checkpoints == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: NULL argument");
    const char *name = agg_linucb_variant_name(cfg->policy.variant);
    if (cfg->policy.d != cfg->env.d)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: %s: policy d %u != env d %u", name,
                                 cfg->policy.d, cfg->env.d);
    if (cfg->checkpoints[cfg->n_checkpoints - 1] != cfg->policy.horizon)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: last checkpoint != horizon");
    if (trial >= (1ULL << 32))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: trial %llu >= 2^32",
                                 (unsigned long long)trial);
    ldpb_err err = agg_ctx_env_check(&cfg->env, errmsg);
    if (err)
        return err;
    agg_linucb *pol = NULL;
    ldpb_rng *nrng = NULL;
    agg_noise *noise = NULL;
    agg_ctx_env *env = NULL;
    double *x = NULL, *mean = NULL;
    agg_rand prand, nrand;
    err = agg_linucb_new(&pol, &cfg->policy, errmsg);
    if (err)
        goto done;
    env = malloc(sizeof *env);
    x = malloc((size_t)cfg->env.k * cfg->env.d * sizeof *x);
    mean = malloc((size_t)cfg->env.k * sizeof *mean);
    if (!env || !x || !mean) {
        err = LDPB_ENOMEM;
        goto done;
    }
    err = agg_ctx_env_start(env, &cfg->env, seed, trial);
    if (!err)
        err = seed_stream(&prand, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_POLICY, 0));
    if (!err)
        err = ldpb_rng_new_seeded_stream(&nrng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_NOISE, 0));
    if (!err && cfg->noise_kind == AGG_NOISE_FAST)
        agg_rand_seed(&nrand, nrng);
    if (!err)
        err = agg_noise_new(&noise, cfg->noise_kind, nrng, &nrand);
    if (err) {
        agg_policy_refuse(errmsg, err, "ctxsim: %s: cannot set up trial %llu: %s", name,
                          (unsigned long long)trial, ldpb_strerror(err));
        goto done;
    }
    agg_policy_env penv = {&prand, noise};
    double cum = 0.0;
    size_t next = 0;
    const uint32_t d = cfg->env.d;
    for (uint64_t t = 1; t <= cfg->policy.horizon; t++) {
        agg_ctx_env_round(env, x, mean);
        uint32_t arm = 0;
        err = agg_linucb_choose(pol, &penv, x, cfg->env.k, &arm, NULL);
        if (!err) {
            double y = agg_ctx_env_reward(env, mean[arm]);
            err = agg_linucb_observe(pol, &penv, x + (size_t)arm * d, y);
        }
        if (err) {
            agg_policy_refuse(errmsg, err, "ctxsim: %s: round %llu of trial %llu: %s", name,
                              (unsigned long long)t, (unsigned long long)trial, ldpb_strerror(err));
            goto done;
        }
        cum += cfg->env.best - mean[arm];
        while (next < cfg->n_checkpoints && cfg->checkpoints[next] == t)
            regret[next++] = cum;
    }
    if (chol_failures)
        *chol_failures = agg_linucb_cholesky_failures(pol);
done:
    agg_linucb_free(pol);
    agg_noise_free(noise);
    ldpb_rng_free(nrng);
    free(env);
    free(x);
    free(mean);
    return err;
}

/* The device's tolerance on ||x|| beyond L (ctxstat.c: a context normalised to norm L in floating
 * point may come out an ulp longer); kept equal so both paths refuse the same actions. */
#define AGG_CTX_LDP_NORM_TOL 1e-9

ldpb_err agg_ctx_ldp_privatize_fast(const ldpb_ctxstat *m, agg_rand *r, const double *x, double y,
                                    double *out)
{
    if (!m || !r || !x || !out || !isfinite(y))
        return LDPB_EINVAL;
    const ldpb_ctxstat_opts *o = ldpb_ctxstat_get_opts(m);
    const uint32_t d = o->d;
    double v[LDPB_CTXSTAT_D_MAX + 1], n2 = 0.0;
    for (uint32_t j = 0; j < d; j++) {
        if (!isfinite(x[j]))
            return LDPB_EINVAL;
        v[j] = x[j];
        n2 += x[j] * x[j];
    }
    const double lim = o->feature_norm * (1.0 + AGG_CTX_LDP_NORM_TOL);
    if (!(n2 <= lim * lim))
        return LDPB_ERANGE;
    v[d] = y > o->reward_bound ? o->reward_bound : (y < -o->reward_bound ? -o->reward_bound : y);
    const double g = ldpb_ctxstat_grid(m), sg = ldpb_ctxstat_sigma(m) / g;
    size_t k = 0;
    for (uint32_t i = 0; i <= d; i++)
        for (uint32_t j = i; j <= d; j++) {
            double s = v[i] * v[j] / g; /* exact scaling by a power of two */
            double lo = floor(s);
            double units = lo + (agg_rand_uniform(r) < s - lo ? 1.0 : 0.0);
            units += nearbyint(sg * agg_rand_normal(r));
            out[k++] = units * g;
        }
    return LDPB_OK;
}

ldpb_err agg_ctx_ldp_sim_run_trial(const agg_ctx_ldp_sim_config *cfg,
                                   const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                                   double *regret, uint64_t *repairs, char errmsg[AGG_ERRMSG_MAX])
{
    const char *name = "ldp-linucb-gaussian";
    if (!cfg || !seed || !regret || !cfg->checkpoints || cfg->n_checkpoints == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: NULL argument");
    if (cfg->policy.d != cfg->env.d)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: %s: policy d %u != env d %u", name,
                                 cfg->policy.d, cfg->env.d);
    if (cfg->checkpoints[cfg->n_checkpoints - 1] != cfg->policy.horizon)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: last checkpoint != horizon");
    if (trial >= (1ULL << 32))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ctxsim: trial %llu >= 2^32",
                                 (unsigned long long)trial);
    if (cfg->noise_kind != AGG_NOISE_FAST && cfg->noise_kind != AGG_NOISE_SECURE)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: unknown noise kind %d",
                                 (int)cfg->noise_kind);
    ldpb_err err = agg_ctx_env_check(&cfg->env, errmsg);
    if (err)
        return err;
    agg_ldp_linucb *agg = NULL;
    ldpb_ctxmodel *dev = NULL;
    ldpb_rng *trng = NULL, *crng = NULL;
    agg_ctx_env *env = NULL;
    double *x = NULL, *mean = NULL;
    agg_rand fast;
    err = agg_ldp_linucb_new(&agg, &cfg->policy, errmsg);
    if (err)
        goto done;
    env = malloc(sizeof *env);
    x = malloc((size_t)cfg->env.k * cfg->env.d * sizeof *x);
    mean = malloc((size_t)cfg->env.k * sizeof *mean);
    if (!env || !x || !mean) {
        err = LDPB_ENOMEM;
        goto done;
    }
    err = ldpb_ctxmodel_new(&dev, cfg->env.d);
    if (!err)
        err = agg_ctx_env_start(env, &cfg->env, seed, trial);
    if (!err)
        err = ldpb_rng_new_seeded_stream(&trng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_POLICY, 0));
    if (!err)
        err = ldpb_rng_new_seeded_stream(&crng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_CLIENT, 0));
    if (err) {
        agg_policy_refuse(errmsg, err, "ctxsim: %s: cannot set up trial %llu: %s", name,
                          (unsigned long long)trial, ldpb_strerror(err));
        goto done;
    }
    if (cfg->noise_kind == AGG_NOISE_FAST)
        agg_rand_seed(&fast, crng);
    const ldpb_ctxstat *mech = agg_ldp_linucb_mech(agg);
    const size_t nv = ldpb_ctxstat_values(mech);
    double stats[LDPB_CTXSTAT_VALUES_MAX], report[LDPB_CTXSTAT_VALUES_MAX];
    double cum = 0.0;
    size_t next = 0;
    const uint32_t d = cfg->env.d;
    for (uint64_t t = 1; t <= cfg->policy.horizon; t++) {
        agg_ctx_env_round(env, x, mean);
        double shift, beta;
        uint32_t arm = 0;
        err = agg_ldp_linucb_model(agg, stats, &shift, &beta);
        if (!err)
            err = ldpb_ctxmodel_load(dev, stats, nv, shift, beta, NULL);
        if (!err)
            err = ldpb_ctxmodel_choose(dev, trng, x, cfg->env.k, &arm, NULL);
        if (!err) {
            double y = agg_ctx_env_reward(env, mean[arm]);
            const double *xa = x + (size_t)arm * d;
            err = cfg->noise_kind == AGG_NOISE_FAST
                      ? agg_ctx_ldp_privatize_fast(mech, &fast, xa, y, report)
                      : ldpb_ctxstat_privatize(mech, crng, xa, y, report);
        }
        if (!err)
            err = agg_ldp_linucb_add(agg, report, nv);
        if (err) {
            agg_policy_refuse(errmsg, err, "ctxsim: %s: round %llu of trial %llu: %s", name,
                              (unsigned long long)t, (unsigned long long)trial, ldpb_strerror(err));
            goto done;
        }
        cum += cfg->env.best - mean[arm];
        while (next < cfg->n_checkpoints && cfg->checkpoints[next] == t)
            regret[next++] = cum;
    }
    if (repairs)
        *repairs = agg_ldp_linucb_repairs(agg);
done:
    agg_ldp_linucb_free(agg);
    ldpb_ctxmodel_free(dev);
    ldpb_rng_free(trng);
    ldpb_rng_free(crng);
    free(env);
    free(x);
    free(mean);
    return err;
}
