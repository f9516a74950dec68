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
    err = seed_stream(&e->ctx, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_ENV, 0));
    if (!err)
        err = seed_stream(&e->rew, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_ENV, 1));
    if (err)
        return err;
    unit_vector(&e->ctx, e->theta, cfg->d);
    return LDPB_OK;
}

/* The optimal action from a vector x of rotation-invariant law (a proposal: d normals,
 * normalised): x = best theta* + sqrt(1 - best^2) w, w the direction of its component orthogonal
 * to theta*, which is uniform on the unit sphere orthogonal to theta* (redrawn in the null event
 * that the component vanishes). */
static void optimal_action(agg_ctx_env *e, double *restrict x)
{
    const uint32_t d = e->cfg.d;
    const double *restrict th = e->theta;
    const double proj = e->cfg.best;
    double n2;
    for (;;) {
        /* Twice: when x is nearly parallel to theta* one pass leaves a component along theta*
         * of the order of the rounding of the large one it removed (Gram-Schmidt, "twice is
         * enough"); x would then miss unit norm by far more than rounding. */
        for (int pass = 0; pass < 2; pass++) {
            double dot = 0.0;
            for (uint32_t j = 0; j < d; j++)
                dot += x[j] * th[j];
            for (uint32_t j = 0; j < d; j++)
                x[j] -= dot * th[j];
        }
        n2 = 0.0;
        for (uint32_t j = 0; j < d; j++)
            n2 += x[j] * x[j];
        if (n2 > 1e-24)
            break;
        agg_rand_normal_fill(&e->ctx, x, d);
    }
    double s = sqrt(fmax(0.0, 1.0 - proj * proj) / n2);
    for (uint32_t j = 0; j < d; j++)
        x[j] = proj * th[j] + s * x[j];
}

/* x = g / ||g|| for g of d normals already in x, and its projection <theta*, x> if that lies in
 * [lo, hi]; NAN (the proposal is refused) otherwise. Written without branches: whether a proposal
 * is accepted is a coin flip the branch predictor cannot learn. */
static inline double propose(const double *restrict th, uint32_t d, double lo, double hi,
                             double *restrict x)
{
    double n2 = 0.0;
    for (uint32_t j = 0; j < d; j++)
        n2 += x[j] * x[j];
    int nonzero = n2 > 1e-300;
    double s = nonzero ? 1.0 / sqrt(n2) : 0.0, m = 0.0;
    for (uint32_t j = 0; j < d; j++) {
        x[j] *= s;
        m += th[j] * x[j];
    }
    int ok = nonzero & (m >= lo) & (m <= hi);
    return ok ? m : NAN;
}

/* Suboptimal actions. For U uniform on the unit sphere, P = <theta*, U> has the law
 * 2 Beta((d-1)/2, (d-1)/2) - 1, and the direction of U - P theta* is uniform on the unit sphere
 * orthogonal to theta* and independent of P. So a uniform unit vector redrawn until its projection
 * lies in [lo, hi] is exactly a projection from that Beta law truncated to [lo, hi] completed by an
 * independent uniform orthogonal direction, the construction of ctxsim.h, for d normals per
 * proposal instead of a Beta draw (two Gammas) plus d normals.
 *
 * A round draws the k d normals of its first proposals in one batch straight into x, normalises
 * them in a loop of its own (the square roots and divisions of different actions overlap instead
 * of each waiting on its accept branch), then redraws the refused proposals one action at a time.
 * Every action's proposals are disjoint runs of i.i.d. normals, so the k actions stay independent
 * whichever order the draws are taken in. */
void agg_ctx_env_round(agg_ctx_env *e, double *restrict x, double *restrict mean)
{
    const uint32_t d = e->cfg.d, k = e->cfg.k;
    const double hi = e->cfg.best - e->cfg.gap, lo = -e->cfg.best;
    const double *restrict th = e->theta;
    uint32_t opt = (uint32_t)agg_rand_below(&e->ctx, k);
    agg_rand_normal_fill(&e->ctx, x, (size_t)k * d);
    for (uint32_t a = 0; a < k; a++)
        mean[a] = a == opt ? 0.0 : propose(th, d, lo, hi, x + (size_t)a * d);
    for (uint32_t a = 0; a < k; a++) {
        double *xa = x + (size_t)a * d;
        if (a == opt) {
            optimal_action(e, xa);
            double m = 0.0;
            for (uint32_t j = 0; j < d; j++)
                m += th[j] * xa[j];
            mean[a] = m;
            continue;
        }
        while (isnan(mean[a])) {
            agg_rand_normal_fill(&e->ctx, xa, d);
            mean[a] = propose(th, d, lo, hi, xa);
        }
    }
}

/* The round's one draw of the reward stream, and the reward it gives an action of mean `mean`:
 * split so that policies run side by side (agg_ctx_sim_run_group) share the draw. */
static double reward_draw(agg_ctx_env *e)
{
    if (e->cfg.reward == AGG_CTX_REWARD_GAUSSIAN)
        return agg_rand_normal(&e->rew);
    return agg_rand_uniform(&e->rew);
}

static double reward_of(const agg_ctx_env *e, double draw, double mean)
{
    if (e->cfg.reward == AGG_CTX_REWARD_GAUSSIAN)
        return mean + draw;
    return draw < 0.5 * (1.0 + mean) ? 1.0 : -1.0;
}

double agg_ctx_env_reward(agg_ctx_env *e, double mean)
{
    return reward_of(e, reward_draw(e), mean);
}

/* One policy of a group and its own generators. */
typedef struct member {
    const agg_ctx_sim_config *cfg;
    agg_linucb *pol;
    ldpb_rng *nrng;
    agg_noise *noise;
    agg_rand prand, nrand;
    double cum;
    size_t next;
} member;

static int same_env(const agg_ctx_sim_config *a, const agg_ctx_sim_config *b)
{
    if (a->env.d != b->env.d || a->env.k != b->env.k || a->env.best != b->env.best ||
        a->env.gap != b->env.gap || a->env.reward != b->env.reward ||
        a->policy.horizon != b->policy.horizon || a->n_checkpoints != b->n_checkpoints)
        return 0;
    for (size_t j = 0; j < a->n_checkpoints; j++)
        if (a->checkpoints[j] != b->checkpoints[j])
            return 0;
    return 1;
}

static ldpb_err check_sim(const agg_ctx_sim_config *cfg, uint64_t trial,
                          char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg || !cfg->checkpoints || cfg->n_checkpoints == 0)
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
    return agg_ctx_env_check(&cfg->env, errmsg);
}

static ldpb_err member_start(member *m, const agg_ctx_sim_config *cfg,
                             const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                             char errmsg[AGG_ERRMSG_MAX])
{
    m->cfg = cfg;
    ldpb_err err = agg_linucb_new(&m->pol, &cfg->policy, errmsg);
    if (err)
        return err;
    err = seed_stream(&m->prand, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_POLICY, 0));
    if (!err)
        err = ldpb_rng_new_seeded_stream(&m->nrng, seed,
                                         AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_NOISE, 0));
    if (!err && cfg->noise_kind == AGG_NOISE_FAST)
        agg_rand_seed(&m->nrand, m->nrng);
    if (!err)
        err = agg_noise_new(&m->noise, cfg->noise_kind, m->nrng, &m->nrand);
    if (err)
        agg_policy_refuse(errmsg, err, "ctxsim: %s: cannot set up trial %llu: %s",
                          agg_linucb_variant_name(cfg->policy.variant), (unsigned long long)trial,
                          ldpb_strerror(err));
    return err;
}

static void member_stop(member *m)
{
    agg_linucb_free(m->pol);
    agg_noise_free(m->noise);
    ldpb_rng_free(m->nrng);
}

ldpb_err agg_ctx_sim_run_group(const agg_ctx_sim_config *const *cfgs, size_t n,
                               const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                               double *const *regret, uint64_t *chol_failures,
                               char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfgs || n == 0 || !seed || !regret)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: NULL argument");
    for (size_t i = 0; i < n; i++) {
        ldpb_err err = check_sim(cfgs[i], trial, errmsg);
        if (err)
            return err;
        if (!regret[i])
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "ctxsim: NULL argument");
        if (!same_env(cfgs[0], cfgs[i]))
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "ctxsim: a group's configurations differ in environment, "
                                     "horizon or checkpoints");
    }
    const agg_ctx_sim_config *c0 = cfgs[0];
    const uint32_t d = c0->env.d, k = c0->env.k;
    member *mb = calloc(n, sizeof *mb);
    agg_ctx_env *env = malloc(sizeof *env);
    double *x = malloc((size_t)k * d * sizeof *x);
    double *mean = malloc((size_t)k * sizeof *mean);
    ldpb_err err = LDPB_OK;
    if (!mb || !env || !x || !mean) {
        err = LDPB_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n && !err; i++)
        err = member_start(&mb[i], cfgs[i], seed, trial, errmsg);
    if (!err)
        err = agg_ctx_env_start(env, &c0->env, seed, trial);
    if (err)
        goto done;
    for (uint64_t t = 1; t <= c0->policy.horizon; t++) {
        agg_ctx_env_round(env, x, mean);
        double draw = reward_draw(env);
        for (size_t i = 0; i < n; i++) {
            member *m = &mb[i];
            agg_policy_env penv = {&m->prand, m->noise};
            uint32_t arm = 0;
            err = agg_linucb_choose(m->pol, &penv, x, k, &arm, NULL);
            if (!err)
                err = agg_linucb_observe(m->pol, &penv, x + (size_t)arm * d,
                                         reward_of(env, draw, mean[arm]));
            if (err) {
                agg_policy_refuse(errmsg, err, "ctxsim: %s: round %llu of trial %llu: %s",
                                  agg_linucb_variant_name(m->cfg->policy.variant),
                                  (unsigned long long)t, (unsigned long long)trial,
                                  ldpb_strerror(err));
                goto done;
            }
            m->cum += c0->env.best - mean[arm];
            while (m->next < c0->n_checkpoints && c0->checkpoints[m->next] == t)
                regret[i][m->next++] = m->cum;
        }
    }
    if (chol_failures)
        for (size_t i = 0; i < n; i++)
            chol_failures[i] = agg_linucb_cholesky_failures(mb[i].pol);
done:
    if (mb)
        for (size_t i = 0; i < n; i++)
            member_stop(&mb[i]);
    free(mb);
    free(env);
    free(x);
    free(mean);
    return err;
}

ldpb_err agg_ctx_sim_run_trial(const agg_ctx_sim_config *cfg,
                               const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                               double *regret, uint64_t *chol_failures, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ctx_sim_run_group(&cfg, 1, seed, trial, &regret, chol_failures, errmsg);
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
