/* The simulation engine behind `ldpb sim`: runs one policy on one environment for a horizon,
 * with the client layer privatizing each reward for LOCAL policies (the production mechanism
 * code), and records cumulative pseudo-regret (from the true means, never from privatized
 * values) at checkpoints. Trials are independent jobs with their own random streams, so a batch
 * gives byte-identical results whatever the number of threads.
 *
 * Random streams of trial i under a 32-byte seed (ldpb_rng_new_seeded_stream ids):
 *   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, arm)  rewards of one arm: the n-th pull of an arm
 *                                               gets the n-th reward of that arm's stream, so
 *                                               every algorithm in a trial faces the same rewards
 *   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_CLIENT, 0) client LDP noise
 *   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_CLIENT, 1) which rounds are poisoned (poison.h)
 *   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_POLICY, 0) the policy's decisions (agg_rand)
 *   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_NOISE, 0)  central-DP noise
 * Policies with an epoch fast-forward (agg_policy_ops.plan, dp-se) draw an arm's rewards for a
 * whole block as one Binomial sum from that arm's stream: equal in law to per-pull rewards, not
 * pathwise. */
#ifndef LDPB_AGG_SIM_H
#define LDPB_AGG_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "adversary.h"
#include "env.h"
#include "ldpb/err.h"
#include "ldpb/mech.h"
#include "poison.h"
#include "policy.h"
#include "rand.h"

#define AGG_SIM_PURPOSE_ENV    0u
#define AGG_SIM_PURPOSE_CLIENT 1u
#define AGG_SIM_PURPOSE_POLICY 2u
#define AGG_SIM_PURPOSE_NOISE  3u
#define AGG_SIM_STREAM(trial, purpose, arm)                                                        \
    (((uint64_t)(trial) << 32) | ((uint64_t)(purpose) << 28) | (uint64_t)(arm))

/* One configuration: which policy, under which privacy parameters, on which environment. */
typedef struct agg_sim_config {
    const char *algorithm; /* a policy name of the registry: "ucb1", "ldp-ts-b", "dp-se", ... */
    /* The policy's parameters (policy.h). params.horizon is the run's length T >= k;
     * params.mechanism is the clients' mechanism of a LOCAL policy and 0 for the others;
     * params.k is 0 or the environment's number of arms (the arms come from env). */
    agg_policy_config params;
    const agg_env *env;          /* borrowed */
    const uint64_t *checkpoints; /* strictly increasing, each in [1, T], the last == T */
    size_t n_checkpoints;
    agg_noise_kind noise_kind; /* central-DP noise: AGG_NOISE_FAST is allowed in simulation */
    int no_fast_forward;       /* 1: run round by round even where the policy could
                                  fast-forward (tests and timing; the results are equal in law) */
    /* An adversarial game instead of `env` (exactly one of the two is set): the trial's gains
     * come from agg_adv_game on stream AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, 0), the learner
     * observes the gain it received (0 on a switch against the switching adversary), and regret
     * is against the best fixed arm in hindsight at each checkpoint, max_i sum_{s<=t} g_{i,s} minus
     * the learner's gains (realized, so it can be negative). Borrowed. */
    const agg_adv *adv;
    /* Poisoning devices (poison.h; borrowed; NULL or fraction 0: none). Stochastic environments
     * only; the run is then round by round, and the regret is the honest devices'. */
    const agg_poison *poison;
} agg_sim_config;

/* Fills the defaults: no algorithm, environment or checkpoints; params as agg_policy_config_init
 * but mechanism 0 (horizon 0, epsilon 1, kappa LDPB_KAPPA_DEFAULT, beta, gamma and eps_arm 0: the
 * policies' defaults), AGG_NOISE_FAST, fast-forward allowed. */
void agg_sim_config_init(agg_sim_config *cfg);

/* Validates a configuration (the policy would accept it; mechanism allowed for the policy;
 * checkpoints well-formed) without running it: creates and frees the policy (and, for LOCAL
 * policies, the clients' mechanism). LDPB_EINVAL or LDPB_ERANGE with a precise message in errmsg
 * (may be NULL), e.g. "sim: ucb1: checkpoints[3] = 10 is not above checkpoints[2] = 10 (must be
 * strictly increasing)" or the policy's own refusal; LDPB_ENOMEM. */
ldpb_err agg_sim_check(const agg_sim_config *cfg, char errmsg[AGG_ERRMSG_MAX]);

/* Runs trial `trial` (< 2^32): regret[j] receives the cumulative pseudo-regret after
 * checkpoints[j] rounds, sum_a pulls_a(t) Delta_a (exact per arm); pulls[a] the final pull count
 * of arm a (pulls may be NULL). Deterministic in (cfg, seed, trial). A policy with an epoch
 * fast-forward (dp-se) on all-Bernoulli arms is run an epoch at a time unless
 * cfg->no_fast_forward. Errors: those of
 * agg_sim_check; LDPB_EINVAL for a NULL seed or regret, LDPB_ERANGE for trial >= 2^32; a policy
 * or mechanism failure during the run with the round in the message. Thread-safe: concurrent
 * trials may share cfg and its environment. */
ldpb_err agg_sim_run_trial(const agg_sim_config *cfg, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                           uint64_t trial, double *regret, uint64_t *pulls,
                           char errmsg[AGG_ERRMSG_MAX]);

/* A batch: n_configs configurations x trials, run on `threads` threads (>= 1). Results are
 * written to regret[(c * trials + i) * n_checkpoints(c) ...]: one array per configuration,
 * regret_out[c], of trials * cfg[c].n_checkpoints doubles, trial-major. progress (may be NULL)
 * is called from worker threads, serialized, with the rounds completed so far and the total; it
 * must not block long. The first error stops the batch and is returned with its message. */
/* Every configuration is checked before anything runs (errors name it: "config 2: ..."); trials
 * must be <= 2^32. The calling thread is one of the workers; the largest jobs start first. A
 * trial's result does not depend on which thread runs it, so the output is byte-identical for
 * any `threads` (a thread that cannot be started only makes the batch slower). progress is
 * called at most once per 2^20 rounds of each worker plus once when each worker finishes; the
 * last call reports the totals. A runtime error of one trial stops every worker at its next
 * job or its next 2^20 rounds; the output arrays are then incomplete. */
typedef struct agg_sim_progress {
    uint64_t rounds_done, rounds_total, runs_done, runs_total;
    /* The estimated share of the batch's cost done, in [0, 1]: rounds weighted by the per-round
     * cost of their configuration, so fast-forwarded trials (millions of rounds in microseconds)
     * do not make a time estimate from rounds_done wrong by a factor of two. */
    double work_done;
} agg_sim_progress;
typedef void (*agg_sim_progress_fn)(void *ctx, const agg_sim_progress *p);
ldpb_err agg_sim_run_batch(const agg_sim_config *cfgs, size_t n_configs, uint64_t trials,
                           const uint8_t seed[LDPB_RNG_SEED_BYTES], unsigned threads,
                           double *const *regret_out, agg_sim_progress_fn progress,
                           void *progress_ctx, char errmsg[AGG_ERRMSG_MAX]);

/* Log-spaced checkpoints: `per_decade` points per factor of 10 from 1 to horizon (rounded to
 * integers, duplicates removed), always including horizon. Returns how many were written (at most
 * cap; call with out NULL to size). */
/* The points are round(10^(j / per_decade)) below horizon, then horizon itself; per_decade 0
 * gives horizon alone and horizon 0 gives nothing. If cap is too small, the first cap - 1
 * points and horizon are written, so the result is always a valid checkpoint list. */
size_t agg_sim_checkpoints(uint64_t horizon, unsigned per_decade, uint64_t *out, size_t cap);

#endif
