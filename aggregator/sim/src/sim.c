/* The simulation engine (sim.h): one trial is a policy, an environment whose arms each draw from
 * their own stream, the clients' production mechanism for LOCAL policies, and pseudo-regret
 * kept exactly as sum_a pulls_a * Delta_a; a batch runs trials on a pthread pool and writes each
 * trial's result to a fixed slot, so the output does not depend on the number of threads.
 *
 * A policy with an epoch fast-forward (agg_policy_ops.plan and observe_block: dp-se) on
 * Bernoulli arms is run one epoch at a time: its round order inside an epoch is fixed (policy.h),
 * so the pull counts at any round are known in closed form, and the epoch's rewards enter as one
 * Binomial sum per arm (equal in law to per-round Bernoulli rewards). */
#include "sim.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Progress granularity: a trial reports (and looks for a cancellation) every 2^20 rounds. */
#define SIM_TICK ((uint64_t)1 << 20)

/* Stream ids hold the trial in 32 bits and the arm in 28 (AGG_SIM_STREAM). */
#define SIM_TRIAL_MAX ((uint64_t)1 << 32)

void agg_sim_config_init(agg_sim_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->algorithm = NULL;
    agg_policy_config_init(&cfg->params);
    cfg->params.mechanism = (ldpb_mech_kind)0;
    cfg->env = NULL;
    cfg->checkpoints = NULL;
    cfg->n_checkpoints = 0;
    cfg->noise_kind = AGG_NOISE_FAST;
    cfg->no_fast_forward = 0;
    cfg->adv = NULL;
    cfg->poison = NULL;
}

/* Arms of the configuration's game: the environment's or the adversary's. */
static uint32_t sim_arms(const agg_sim_config *cfg)
{
    return cfg->adv ? agg_adv_arms(cfg->adv) : agg_env_arms(cfg->env);
}

/* ---- validation ------------------------------------------------------------------------- */

static const char *model_name(agg_model m)
{
    switch (m) {
    case AGG_MODEL_NONPRIVATE:
        return "non-private";
    case AGG_MODEL_LOCAL:
        return "LOCAL";
    case AGG_MODEL_CENTRAL:
        return "CENTRAL";
    }
    return "unknown";
}

/* Everything agg_sim_check checks except what creating the policy and the mechanism checks;
 * sets *ops to the policy. */
static ldpb_err check_plain(const agg_sim_config *cfg, const agg_policy_ops **ops,
                            char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: no configuration");
    if (!cfg->algorithm)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: no algorithm");
    *ops = agg_policy_find(cfg->algorithm);
    if (!*ops) {
        char known[160] = "";
        size_t n = 0, used = 0;
        const agg_policy_ops *const *all = agg_policy_all(&n);
        for (size_t i = 0; i < n && used < sizeof known; i++) {
            int w =
                snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", all[i]->name);
            if (w < 0)
                break;
            used += (size_t)w;
        }
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: unknown algorithm '%.40s' (known: %s)",
                                 cfg->algorithm, known);
    }
    const char *name = (*ops)->name;
    if (!cfg->env == !cfg->adv)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: %s: %s", name,
                                 cfg->env ? "both an environment and an adversary"
                                          : "no environment");
    uint32_t k = sim_arms(cfg);
    if (cfg->params.k != 0 && cfg->params.k != k)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s: params.k = %u but the game has %u arms", name,
                                 cfg->params.k, k);
    uint64_t T = cfg->params.horizon;
    if (T == 0 || T < k)
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "sim: %s: horizon T = %llu is below the number of arms k = %u",
                                 name, (unsigned long long)T, k);
    agg_model model = (*ops)->model;
    ldpb_mech_kind mechanism = cfg->params.mechanism;
    if (model == AGG_MODEL_LOCAL && mechanism == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s is a LOCAL policy and needs a client mechanism "
                                 "(mechanism 0 given)",
                                 name);
    if (model != AGG_MODEL_LOCAL && mechanism != 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s is a %s policy that observes raw rewards; "
                                 "mechanism must be 0, not %s",
                                 name, model_name(model), ldpb_mech_kind_name(mechanism));
    if (model == AGG_MODEL_CENTRAL && cfg->noise_kind != AGG_NOISE_SECURE &&
        cfg->noise_kind != AGG_NOISE_FAST)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s: central noise kind %d is neither secure (%d) nor "
                                 "fast (%d)",
                                 name, (int)cfg->noise_kind, (int)AGG_NOISE_SECURE,
                                 (int)AGG_NOISE_FAST);
    if (!cfg->checkpoints || cfg->n_checkpoints == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s: no checkpoints (the last must be the horizon %llu)",
                                 name, (unsigned long long)T);
    const uint64_t *cp = cfg->checkpoints;
    size_t n = cfg->n_checkpoints;
    for (size_t j = 0; j < n; j++) {
        if (cp[j] < 1 || cp[j] > T)
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "sim: %s: checkpoints[%zu] = %llu outside [1, T = %llu]", name,
                                     j, (unsigned long long)cp[j], (unsigned long long)T);
        if (j > 0 && cp[j] <= cp[j - 1])
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "sim: %s: checkpoints[%zu] = %llu is not above "
                                     "checkpoints[%zu] = %llu (must be strictly increasing)",
                                     name, j, (unsigned long long)cp[j], j - 1,
                                     (unsigned long long)cp[j - 1]);
    }
    if (cp[n - 1] != T)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s: the last checkpoint %llu is not the horizon T = %llu",
                                 name, (unsigned long long)cp[n - 1], (unsigned long long)T);
    if (cfg->poison && agg_poison_check(cfg->poison) != LDPB_OK)
        return agg_policy_refuse(errmsg, agg_poison_check(cfg->poison),
                                 "sim: %s: poisoning fraction outside [0, 0.5] or unknown "
                                 "strategy",
                                 name);
    if (cfg->poison && cfg->poison->fraction > 0.0 && cfg->adv)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "sim: %s: poisoning needs a stochastic environment, not an "
                                 "adversarial game",
                                 name);
    return LDPB_OK;
}

/* The policy's configuration: k from the environment; the fields the model ignores (epsilon
 * without privacy, the mechanism outside LOCAL) keep their defaults. */
static void policy_config(const agg_sim_config *cfg, const agg_policy_ops *ops,
                          agg_policy_config *pc)
{
    agg_policy_config def;
    agg_policy_config_init(&def);
    *pc = cfg->params;
    pc->k = sim_arms(cfg);
    if (ops->model == AGG_MODEL_NONPRIVATE)
        pc->epsilon = def.epsilon;
    if (ops->model != AGG_MODEL_LOCAL)
        pc->mechanism = def.mechanism;
}

ldpb_err agg_sim_check(const agg_sim_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    const agg_policy_ops *ops = NULL;
    ldpb_err err = check_plain(cfg, &ops, errmsg);
    if (err)
        return err;
    agg_policy_config pc;
    policy_config(cfg, ops, &pc);
    agg_policy *p = NULL;
    err = agg_policy_new(&p, ops->name, &pc, errmsg);
    agg_policy_free(p);
    if (err == LDPB_OK && ops->model == AGG_MODEL_LOCAL) {
        ldpb_mech *mech = NULL;
        err = agg_policy_mech_new(&pc, ops->name, &mech, errmsg);
        ldpb_mech_free(mech);
    }
    return err;
}

/* ---- one trial -------------------------------------------------------------------------- */

/* Called with the rounds done since the last call: at least SIM_TICK, except the last call of a
 * trial. Returns nonzero to cancel the trial. */
typedef struct tick_hook {
    int (*fn)(void *ctx, uint64_t rounds);
    void *ctx;
} tick_hook;

typedef struct sim_trial {
    const agg_sim_config *cfg;
    const agg_env *env;
    uint32_t k;
    agg_policy *p;
    ldpb_mech *mech;     /* LOCAL only */
    ldpb_rng *client;    /* LOCAL only */
    ldpb_rng *noise_rng; /* CENTRAL only */
    agg_noise *noise;    /* CENTRAL only */
    agg_rand prand, nrand;
    agg_rand *erand;  /* [k] one reward stream per arm */
    uint64_t *pulls;  /* [k] */
    uint64_t *tmp;    /* [k] pull counts at a checkpoint inside a fast-forwarded epoch */
    double *gap;      /* [k] best mean - mean */
    uint32_t *arms;   /* [k] epoch plan (fast-forward) */
    uint64_t *remain; /* [k] epoch plan (fast-forward) */
    agg_policy_env penv;
    agg_adv_game *game; /* adversarial games only */
    double *gains;      /* [k] this round's gains */
    double *cum;        /* [k] cumulative gains of each arm */
    const tick_hook *hook;
    uint64_t unreported; /* rounds done since the hook was last called */
    int cancelled;
    /* poisoning devices (poison.h): on when cfg->poison has a fraction > 0 */
    const agg_poison *poison;
    agg_rand poison_rand; /* which rounds are poisoned: AGG_SIM_STREAM(i, CLIENT, 1) */
    uint32_t best, worst;
    double poison_lo, poison_hi;
} sim_trial;

static void trial_fini(sim_trial *tr)
{
    agg_policy_free(tr->p);
    ldpb_mech_free(tr->mech);
    ldpb_rng_free(tr->client);
    agg_noise_free(tr->noise);
    ldpb_rng_free(tr->noise_rng);
    free(tr->erand);
    free(tr->pulls);
    free(tr->tmp);
    free(tr->gap);
    free(tr->arms);
    free(tr->remain);
    agg_adv_game_free(tr->game);
    free(tr->gains);
    free(tr->cum);
}

/* Seeds `r` from stream `id` of the seed. */
static ldpb_err seed_rand(agg_rand *r, const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t id)
{
    ldpb_rng *src = NULL;
    ldpb_err err = ldpb_rng_new_seeded_stream(&src, seed, id);
    if (err)
        return err;
    agg_rand_seed(r, src);
    ldpb_rng_free(src);
    return LDPB_OK;
}

static ldpb_err trial_init(sim_trial *tr, const agg_sim_config *cfg, const agg_policy_ops *ops,
                           const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t i,
                           char errmsg[AGG_ERRMSG_MAX])
{
    const char *name = ops->name;
    tr->cfg = cfg;
    tr->env = cfg->env;
    uint32_t k = tr->k = sim_arms(cfg);
    agg_policy_config pc;
    policy_config(cfg, ops, &pc);
    ldpb_err err = agg_policy_new(&tr->p, name, &pc, errmsg);
    if (err)
        return err;
    tr->erand = calloc(k, sizeof *tr->erand);
    tr->pulls = calloc(k, sizeof *tr->pulls);
    tr->tmp = calloc(k, sizeof *tr->tmp);
    tr->gap = calloc(k, sizeof *tr->gap);
    tr->arms = calloc(k, sizeof *tr->arms);
    tr->remain = calloc(k, sizeof *tr->remain);
    if (!tr->erand || !tr->pulls || !tr->tmp || !tr->gap || !tr->arms || !tr->remain)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "sim: %s: out of memory for %u arms", name,
                                 k);
    if (cfg->adv) {
        agg_rand ar;
        tr->gains = calloc(k, sizeof *tr->gains);
        tr->cum = calloc(k, sizeof *tr->cum);
        if (!tr->gains || !tr->cum)
            return agg_policy_refuse(errmsg, LDPB_ENOMEM, "sim: %s: out of memory for %u arms",
                                     name, k);
        err = seed_rand(&ar, seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, 0));
        if (err)
            goto rng_fail;
        err = agg_adv_game_new(&tr->game, cfg->adv, &ar);
        if (err)
            return agg_policy_refuse(errmsg, err, "sim: %s: cannot create the game: %s", name,
                                     ldpb_strerror(err));
    }
    double best = cfg->adv ? 0.0 : agg_env_best_mean(tr->env);
    for (uint32_t a = 0; a < k && !cfg->adv; a++) {
        tr->gap[a] = best - agg_env_mean(tr->env, a);
        err = seed_rand(&tr->erand[a], seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, a));
        if (err)
            goto rng_fail;
    }
    if (cfg->poison && cfg->poison->fraction > 0.0) {
        tr->poison = cfg->poison;
        for (uint32_t a = 1; a < k; a++) {
            tr->best = tr->gap[a] < tr->gap[tr->best] ? a : tr->best;
            tr->worst = tr->gap[a] > tr->gap[tr->worst] ? a : tr->worst;
        }
        err = agg_poison_extremes(ops->model == AGG_MODEL_LOCAL ? pc.mechanism : 0, pc.epsilon,
                                  &tr->poison_lo, &tr->poison_hi);
        if (err)
            return agg_policy_refuse(errmsg, err, "sim: %s: no admissible extremes to poison",
                                     name);
        err = seed_rand(&tr->poison_rand, seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_CLIENT, 1));
        if (err)
            goto rng_fail;
    }
    err = seed_rand(&tr->prand, seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_POLICY, 0));
    if (err)
        goto rng_fail;
    tr->penv.rand = &tr->prand;
    tr->penv.noise = NULL;
    if (ops->model == AGG_MODEL_LOCAL) {
        err = agg_policy_mech_new(&pc, name, &tr->mech, errmsg);
        if (err)
            return err;
        err = ldpb_rng_new_seeded_stream(&tr->client, seed,
                                         AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_CLIENT, 0));
        if (err)
            goto rng_fail;
    }
    if (ops->model == AGG_MODEL_CENTRAL) {
        err = ldpb_rng_new_seeded_stream(&tr->noise_rng, seed,
                                         AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_NOISE, 0));
        if (err)
            goto rng_fail;
        if (cfg->noise_kind == AGG_NOISE_FAST)
            agg_rand_seed(&tr->nrand, tr->noise_rng);
        err = agg_noise_new(&tr->noise, cfg->noise_kind, tr->noise_rng, &tr->nrand);
        if (err)
            return agg_policy_refuse(errmsg, err, "sim: %s: cannot create the central noise: %s",
                                     name, ldpb_strerror(err));
        tr->penv.noise = tr->noise;
    }
    return LDPB_OK;
rng_fail:
    return agg_policy_refuse(errmsg, err, "sim: %s: cannot create a seeded stream: %s", name,
                             ldpb_strerror(err));
}

/* Cumulative pseudo-regret of the pull counts `n`: exact per arm, summed in arm order. */
static double regret_of(const sim_trial *tr, const uint64_t *n)
{
    double r = 0.0;
    for (uint32_t a = 0; a < tr->k; a++)
        r += (double)n[a] * tr->gap[a];
    return r;
}

/* Accounts `rounds` more rounds; calls the hook every SIM_TICK rounds. Nonzero: cancelled. */
static int advance(sim_trial *tr, uint64_t rounds)
{
    if (!tr->hook)
        return 0;
    tr->unreported += rounds;
    if (tr->unreported < SIM_TICK)
        return 0;
    uint64_t n = tr->unreported;
    tr->unreported = 0;
    if (tr->hook->fn(tr->hook->ctx, n)) {
        tr->cancelled = 1;
        return 1;
    }
    return 0;
}

/* Rounds t0 + 1 .. t1, one at a time. The ops are called directly: the engine itself supplies
 * what the generic wrappers check (env->rand set, rewards in [0,1] from the environment, the
 * mechanism's own outputs), and only the chosen arm is checked before it indexes anything. */
static ldpb_err run_rounds(sim_trial *tr, uint64_t t0, uint64_t t1, char errmsg[AGG_ERRMSG_MAX])
{
    agg_policy *p = tr->p;
    ldpb_err (*choose)(agg_policy *, agg_policy_env *, uint32_t *) = p->ops->choose;
    ldpb_err (*observe)(agg_policy *, agg_policy_env *, uint32_t, double) = p->ops->observe;
    agg_policy_env *penv = &tr->penv;
    const agg_env *env = tr->env;
    const ldpb_mech *mech = tr->mech;
    ldpb_rng *client = tr->client;
    agg_rand *erand = tr->erand;
    uint64_t *pulls = tr->pulls;
    uint32_t k = tr->k;
    const char *what = "choose";
    ldpb_err err = LDPB_OK;
    uint64_t t;
    for (t = t0; t < t1; t++) {
        uint32_t arm;
        err = choose(p, penv, &arm);
        if (err)
            goto fail;
        if (arm >= k) {
            err = LDPB_ESTATE;
            goto fail;
        }
        if (tr->poison && agg_rand_uniform(&tr->poison_rand) < tr->poison->fraction) {
            /* a poisoning device: no draw, no pull counted (poison.h) */
            err = observe(p, penv, arm,
                          agg_poison_value(tr->poison, arm, tr->best, tr->worst, tr->poison_lo,
                                           tr->poison_hi));
            if (err) {
                what = "observe";
                goto fail;
            }
            continue;
        }
        double x = agg_env_sample(env, arm, &erand[arm]);
        if (mech) {
            err = ldpb_mech_privatize(mech, client, x, &x);
            if (err) {
                what = "privatize";
                goto fail;
            }
        }
        err = observe(p, penv, arm, x);
        if (err) {
            what = "observe";
            goto fail;
        }
        pulls[arm]++;
    }
    return LDPB_OK;
fail:
    return agg_policy_refuse(errmsg, err, "sim: %s: %s failed in round %llu: %s", p->ops->name,
                             what, (unsigned long long)(t + 1), ldpb_strerror(err));
}

/* The round-by-round engine: rounds in runs up to the next checkpoint or progress tick. */
static ldpb_err run_per_round(sim_trial *tr, double *regret, char errmsg[AGG_ERRMSG_MAX])
{
    const uint64_t *cp = tr->cfg->checkpoints;
    uint64_t T = tr->cfg->params.horizon, t = 0;
    size_t j = 0;
    while (t < T) {
        uint64_t stop = cp[j];
        uint64_t to_tick = SIM_TICK - tr->unreported; /* unreported < SIM_TICK */
        if (stop - t > to_tick)
            stop = t + to_tick;
        ldpb_err err = run_rounds(tr, t, stop, errmsg);
        if (err)
            return err;
        uint64_t done = stop - t;
        t = stop;
        if (t == cp[j])
            regret[j++] = regret_of(tr, tr->pulls);
        if (advance(tr, done))
            return LDPB_ESTATE;
    }
    return LDPB_OK;
}

/* The epoch fast-forward on Bernoulli arms, one epoch per step (see the file comment). At each
 * epoch start every arm of S needs the same r pulls and the epoch's round m (1-based) pulls arms[(m
 * - 1) mod |S|], so after m rounds arm i of the plan has m / |S| + (i < m mod |S|). */
static ldpb_err run_epochs_fast(sim_trial *tr, double *regret, char errmsg[AGG_ERRMSG_MAX])
{
    const uint64_t *cp = tr->cfg->checkpoints;
    size_t ncp = tr->cfg->n_checkpoints, j = 0;
    uint64_t T = tr->cfg->params.horizon, t = 0;
    uint32_t k = tr->k;
    const agg_policy_ops *ops = tr->p->ops;
    const char *name = ops->name;
    while (t < T) {
        uint32_t epoch, n;
        ldpb_err err = ops->plan(tr->p, &epoch, tr->arms, tr->remain, k, &n);
        if (err)
            return agg_policy_refuse(errmsg, err, "sim: %s: plan failed: %s", name,
                                     ldpb_strerror(err));
        /* Once |S| = 1 the plan gives the survivor UINT64_MAX pulls: a last "epoch" that the
         * horizon cuts, so the survivor takes every remaining round and regret grows linearly. */
        uint64_t left = T - t;
        uint64_t r = tr->remain[0];
        for (uint32_t i = 1; i < n; i++)
            if (tr->remain[i] != r)
                return agg_policy_refuse(errmsg, LDPB_ESTATE,
                                         "sim: %s: epoch %u is not at its start", name, epoch);
        int cut = r > left / n; /* n r > left: the horizon ends the run inside this epoch */
        uint64_t span = cut ? left : (uint64_t)n * r;
        for (; j < ncp && cp[j] - t <= span; j++) {
            uint64_t m = cp[j] - t, q = m / n, rem = m % n;
            memcpy(tr->tmp, tr->pulls, k * sizeof *tr->tmp);
            for (uint32_t i = 0; i < n; i++)
                tr->tmp[tr->arms[i]] += q + (i < rem);
            regret[j] = regret_of(tr, tr->tmp);
        }
        if (cut) {
            /* Nothing is eliminated on a partial epoch (and the survivor's phase has no end),
             * so the policy need not see these rounds. */
            uint64_t q = left / n, rem = left % n;
            for (uint32_t i = 0; i < n; i++)
                tr->pulls[tr->arms[i]] += q + (i < rem);
            tr->unreported += tr->hook ? left : 0;
            break;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t a = tr->arms[i];
            double p = agg_env_law(tr->env, a)->a;
            uint64_t ones = agg_rand_binomial(&tr->erand[a], r, p);
            err = ops->observe_block(tr->p, &tr->penv, a, r, (double)ones);
            if (err)
                return agg_policy_refuse(errmsg, err,
                                         "sim: %s: block of %llu rewards of arm %u in epoch %u "
                                         "refused: %s",
                                         name, (unsigned long long)r, a, epoch, ldpb_strerror(err));
            tr->pulls[a] += r;
        }
        t += span;
        if (advance(tr, span))
            return LDPB_ESTATE;
    }
    return LDPB_OK;
}

/* An adversarial game (agg_sim_config.adv): every round the adversary's gains for all arms are
 * drawn whatever the learner plays, so every policy of a trial plays the same gain table. Regret
 * at a checkpoint is the best arm's cumulative gain minus the learner's, both summed in round
 * order. */
static ldpb_err run_adversarial(sim_trial *tr, double *regret, char errmsg[AGG_ERRMSG_MAX])
{
    agg_policy *p = tr->p;
    ldpb_err (*choose)(agg_policy *, agg_policy_env *, uint32_t *) = p->ops->choose;
    ldpb_err (*observe)(agg_policy *, agg_policy_env *, uint32_t, double) = p->ops->observe;
    const uint64_t *cp = tr->cfg->checkpoints;
    uint64_t T = tr->cfg->params.horizon;
    uint32_t k = tr->k, prev = UINT32_MAX;
    int switch_costs = agg_adv_switch_costs(tr->cfg->adv);
    double *gains = tr->gains, *cum = tr->cum, got = 0.0;
    const char *what = "choose";
    ldpb_err err = LDPB_OK;
    size_t j = 0;
    uint64_t t = 0, since_tick = 0;
    for (; t < T; t++) {
        agg_adv_game_next(tr->game, gains);
        for (uint32_t a = 0; a < k; a++)
            cum[a] += gains[a];
        uint32_t arm;
        err = choose(p, &tr->penv, &arm);
        if (err)
            goto fail;
        if (arm >= k) {
            err = LDPB_ESTATE;
            goto fail;
        }
        double x = switch_costs && prev != UINT32_MAX && arm != prev ? 0.0 : gains[arm];
        prev = arm;
        got += x;
        tr->pulls[arm]++;
        if (tr->mech) {
            err = ldpb_mech_privatize(tr->mech, tr->client, x, &x);
            if (err) {
                what = "privatize";
                goto fail;
            }
        }
        err = observe(p, &tr->penv, arm, x);
        if (err) {
            what = "observe";
            goto fail;
        }
        if (t + 1 == cp[j]) {
            double best = cum[0];
            for (uint32_t a = 1; a < k; a++)
                if (cum[a] > best)
                    best = cum[a];
            regret[j++] = best - got;
        }
        if (++since_tick == SIM_TICK) {
            since_tick = 0;
            if (advance(tr, SIM_TICK))
                return LDPB_ESTATE;
        }
    }
    if (since_tick)
        tr->unreported += tr->hook ? since_tick : 0;
    return LDPB_OK;
fail:
    return agg_policy_refuse(errmsg, err, "sim: %s: %s failed in round %llu: %s", p->ops->name,
                             what, (unsigned long long)(t + 1), ldpb_strerror(err));
}

static int can_fast_forward(const agg_sim_config *cfg, const agg_policy_ops *ops)
{
    if (cfg->no_fast_forward || cfg->adv || !ops->plan || !ops->observe_block ||
        (cfg->poison && cfg->poison->fraction > 0.0))
        return 0;
    for (uint32_t a = 0; a < agg_env_arms(cfg->env); a++)
        if (agg_env_law(cfg->env, a)->kind != AGG_LAW_BERNOULLI)
            return 0;
    return 1;
}

/* agg_sim_run_trial with a progress hook (NULL: none); *cancelled is set when the hook
 * cancelled the trial (the return value is then LDPB_ESTATE and errmsg is not set). */
static ldpb_err run_trial(const agg_sim_config *cfg, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                          uint64_t i, double *regret, uint64_t *pulls, const tick_hook *hook,
                          int *cancelled, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    *cancelled = 0;
    const agg_policy_ops *ops = NULL;
    ldpb_err err = check_plain(cfg, &ops, errmsg);
    if (err)
        return err;
    if (!seed || !regret)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: %s: no seed or regret array",
                                 ops->name);
    if (i >= SIM_TRIAL_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "sim: %s: trial %llu outside [0, 2^32)",
                                 ops->name, (unsigned long long)i);
    sim_trial tr;
    memset(&tr, 0, sizeof tr);
    tr.hook = hook;
    err = trial_init(&tr, cfg, ops, seed, i, errmsg);
    if (err == LDPB_OK)
        err = cfg->adv                     ? run_adversarial(&tr, regret, errmsg)
              : can_fast_forward(cfg, ops) ? run_epochs_fast(&tr, regret, errmsg)
                                           : run_per_round(&tr, regret, errmsg);
    if (err == LDPB_OK && pulls)
        memcpy(pulls, tr.pulls, tr.k * sizeof *pulls);
    if (err == LDPB_OK && hook && tr.unreported)
        hook->fn(hook->ctx, tr.unreported);
    *cancelled = tr.cancelled;
    trial_fini(&tr);
    return err;
}

ldpb_err agg_sim_run_trial(const agg_sim_config *cfg, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                           uint64_t trial, double *regret, uint64_t *pulls,
                           char errmsg[AGG_ERRMSG_MAX])
{
    int cancelled;
    return run_trial(cfg, seed, trial, regret, pulls, NULL, &cancelled, errmsg);
}

/* ---- batches ---------------------------------------------------------------------------- */

typedef struct job {
    size_t c;      /* configuration */
    uint64_t i;    /* trial */
    double weight; /* estimated cost, for biggest-first scheduling */
} job;

typedef struct batch {
    const agg_sim_config *cfgs;
    const uint8_t *seed;
    uint64_t trials;
    double *const *out;
    job *jobs;
    size_t n_jobs;
    pthread_mutex_t lock; /* guards everything below */
    size_t next;
    int failed;
    ldpb_err err;
    char errmsg[AGG_ERRMSG_MAX];
    uint64_t rounds_done, rounds_total, runs_done, runs_total;
    double work_done, work_total; /* in job_weight units */
    agg_sim_progress_fn progress;
    void *progress_ctx;
} batch;

typedef struct worker {
    batch *b;
    uint64_t rounds;                    /* not yet reported */
    uint64_t runs;                      /* finished, not yet reported */
    double work;                        /* not yet reported, in job_weight units */
    double job_per_round, job_credited; /* the running job's weight per round, and what of its
                                           weight `work` has counted so far */
} worker;

/* Under the lock: publishes the worker's counts and calls the progress callback. */
static void publish_locked(worker *w)
{
    batch *b = w->b;
    b->rounds_done += w->rounds;
    b->runs_done += w->runs;
    b->work_done += w->work;
    w->rounds = w->runs = 0;
    w->work = 0.0;
    if (b->progress) {
        double f = b->work_total > 0.0 ? b->work_done / b->work_total : 1.0;
        if (b->runs_done == b->runs_total || f > 1.0)
            f = 1.0;
        agg_sim_progress p = {b->rounds_done, b->rounds_total, b->runs_done, b->runs_total, f};
        b->progress(b->progress_ctx, &p);
    }
}

/* The trial hook: at least SIM_TICK rounds (or a trial's last few) are reported at once. */
static int worker_tick(void *ctx, uint64_t rounds)
{
    worker *w = ctx;
    w->rounds += rounds;
    w->work += (double)rounds * w->job_per_round;
    w->job_credited += (double)rounds * w->job_per_round;
    if (w->rounds < SIM_TICK)
        return 0;
    pthread_mutex_lock(&w->b->lock);
    int failed = w->b->failed;
    publish_locked(w);
    pthread_mutex_unlock(&w->b->lock);
    return failed;
}

static void *worker_main(void *arg)
{
    worker w = {arg, 0, 0, 0.0, 0.0, 0.0};
    batch *b = w.b;
    tick_hook hook = {worker_tick, &w};
    char msg[AGG_ERRMSG_MAX];
    for (;;) {
        pthread_mutex_lock(&b->lock);
        if (b->failed || b->next == b->n_jobs) {
            pthread_mutex_unlock(&b->lock);
            break;
        }
        job jb = b->jobs[b->next++];
        pthread_mutex_unlock(&b->lock);
        const agg_sim_config *cfg = &b->cfgs[jb.c];
        w.job_per_round = jb.weight / (double)cfg->params.horizon;
        w.job_credited = 0.0;
        double *slot = b->out[jb.c] + jb.i * cfg->n_checkpoints;
        int cancelled = 0;
        ldpb_err err = run_trial(cfg, b->seed, jb.i, slot, NULL, &hook, &cancelled, msg);
        if (err) {
            pthread_mutex_lock(&b->lock);
            if (!b->failed && !cancelled) {
                b->failed = 1;
                b->err = err;
                agg_policy_refuse(b->errmsg, err, "config %zu, trial %llu: %s", jb.c,
                                  (unsigned long long)jb.i, msg);
            }
            pthread_mutex_unlock(&b->lock);
            break;
        }
        w.runs++;
        if (jb.weight > w.job_credited)
            w.work += jb.weight - w.job_credited;
        if (w.rounds >= SIM_TICK) {
            pthread_mutex_lock(&b->lock);
            publish_locked(&w);
            pthread_mutex_unlock(&b->lock);
        }
    }
    if (w.rounds || w.runs) {
        pthread_mutex_lock(&b->lock);
        publish_locked(&w);
        pthread_mutex_unlock(&b->lock);
    }
    return NULL;
}

static int job_cmp(const void *x, const void *y)
{
    const job *a = x, *b = y;
    if (a->weight != b->weight)
        return a->weight > b->weight ? -1 : 1;
    if (a->c != b->c)
        return a->c < b->c ? -1 : 1;
    return a->i < b->i ? -1 : (a->i > b->i);
}

/* A rough per-trial cost: rounds times per-round work, or a few epochs when fast-forwarded. */
static double job_weight(const agg_sim_config *cfg)
{
    const agg_policy_ops *ops = agg_policy_find(cfg->algorithm);
    double k = (double)sim_arms(cfg);
    if (can_fast_forward(cfg, ops))
        return 64.0 * k;
    return (double)cfg->params.horizon * (k + 8.0);
}

ldpb_err agg_sim_run_batch(const agg_sim_config *cfgs, size_t n_configs, uint64_t trials,
                           const uint8_t seed[LDPB_RNG_SEED_BYTES], unsigned threads,
                           double *const *regret_out, agg_sim_progress_fn progress,
                           void *progress_ctx, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if ((!cfgs && n_configs) || !seed || (!regret_out && n_configs))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: batch: NULL argument");
    if (threads < 1)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "sim: batch: threads 0 (at least 1)");
    if (trials > SIM_TRIAL_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "sim: batch: trials %llu above 2^32",
                                 (unsigned long long)trials);
    uint64_t rounds_total = 0;
    for (size_t c = 0; c < n_configs; c++) {
        char msg[AGG_ERRMSG_MAX];
        ldpb_err err = agg_sim_check(&cfgs[c], msg);
        if (err)
            return agg_policy_refuse(errmsg, err, "config %zu: %s", c, msg);
        if (!regret_out[c] && trials)
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "config %zu: no regret array", c);
        uint64_t T = cfgs[c].params.horizon;
        if (trials && T > (UINT64_MAX - rounds_total) / trials)
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "sim: batch: total rounds overflow 64 bits at config %zu", c);
        rounds_total += T * trials;
    }
    if (n_configs > SIZE_MAX / sizeof(job) / (trials ? trials : 1))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "sim: batch: too many jobs");
    size_t n_jobs = n_configs * (size_t)trials;
    if (n_jobs == 0)
        return LDPB_OK;

    batch b;
    memset(&b, 0, sizeof b);
    b.cfgs = cfgs;
    b.seed = seed;
    b.trials = trials;
    b.out = regret_out;
    b.n_jobs = n_jobs;
    b.rounds_total = rounds_total;
    b.runs_total = n_jobs;
    b.progress = progress;
    b.progress_ctx = progress_ctx;
    b.jobs = malloc(n_jobs * sizeof *b.jobs);
    if (!b.jobs)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "sim: batch: out of memory for %zu jobs",
                                 n_jobs);
    for (size_t c = 0, x = 0; c < n_configs; c++) {
        double w = job_weight(&cfgs[c]);
        for (uint64_t i = 0; i < trials; i++, x++)
            b.jobs[x] = (job){c, i, w};
        b.work_total += w * (double)trials;
    }
    qsort(b.jobs, n_jobs, sizeof *b.jobs, job_cmp);
    if (pthread_mutex_init(&b.lock, NULL) != 0) {
        free(b.jobs);
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "sim: batch: cannot create a mutex");
    }

    /* The calling thread is one of the workers. A thread that cannot be started only makes the
     * batch slower: every job still runs, and its result does not depend on who runs it. */
    unsigned extra = threads - 1;
    if (extra > n_jobs - 1)
        extra = (unsigned)(n_jobs - 1);
    pthread_t *tid = extra ? calloc(extra, sizeof *tid) : NULL;
    unsigned started = 0;
    if (tid)
        for (; started < extra; started++)
            if (pthread_create(&tid[started], NULL, worker_main, &b) != 0)
                break;
    worker_main(&b);
    for (unsigned x = 0; x < started; x++)
        pthread_join(tid[x], NULL);
    free(tid);
    pthread_mutex_destroy(&b.lock);
    free(b.jobs);
    if (b.failed) {
        if (errmsg)
            memcpy(errmsg, b.errmsg, AGG_ERRMSG_MAX);
        return b.err;
    }
    return LDPB_OK;
}

/* ---- checkpoints ------------------------------------------------------------------------ */

size_t agg_sim_checkpoints(uint64_t horizon, unsigned per_decade, uint64_t *out, size_t cap)
{
    if (horizon == 0)
        return 0;
    size_t n = 0;
    uint64_t last = 0;
    double pd = (double)per_decade;
    for (double j = 0; per_decade > 0; j++) {
        double v = nearbyint(pow(10.0, j / pd));
        if (!(v < 0x1p64))
            break;
        uint64_t x = (uint64_t)v;
        if (x >= horizon)
            break;
        if (x == last)
            continue;
        if (out) {
            if (n + 1 >= cap)
                break; /* keep room for the horizon */
            out[n] = x;
        }
        n++;
        last = x;
        /* Points closer than one apart round to the same integer: skip to the first j whose
         * point can round above x (one early, so rounding in log10 cannot skip a point). */
        double skip = ceil(pd * log10((double)x + 0.5)) - 2;
        if (skip > j)
            j = skip;
    }
    if (out && cap == 0)
        return 0;
    if (out)
        out[n] = horizon;
    return n + 1;
}
