/* Contextual simulation: the environment of Shariff & Sheffet 2018's experiments and a trial
 * runner for the contextual policies of linucb.h (docs/sim.md, "shariff2018").
 *
 * Environment (the authors' experiment code for SS18 App. D): theta* is a uniformly random unit
 * vector in R^d. Every round brings a fresh decision set of k unit vectors: one optimal action
 * whose projection on theta* is `best` (0.75), at a uniformly random position, and k - 1 actions
 * whose projection is drawn from the law of one coordinate of a uniform unit vector (Beta((d-1)/2,
 * (d-1)/2) mapped to [-1, 1]) truncated to [-best, best - gap], each completed by an independent
 * uniformly random direction orthogonal to theta* so that it has norm 1. A suboptimal action is
 * drawn as one uniform unit vector (d normals, normalised) redrawn until its projection lies in
 * that interval, which has exactly this law (ctxsim.c says why). Rewards: bounded on
 * {-1, +1} with mean <theta*, x> (P(+1) = (1 + <theta*, x>)/2), or <theta*, x> + N(0, 1).
 * Pseudo-regret of a round: best - <theta*, x_t>.
 *
 * Streams of trial i (ldpb_rng_new_seeded_stream ids, as sim.h): AGG_SIM_STREAM(i, ENV, 0) draws
 * theta* and every decision set; AGG_SIM_STREAM(i, ENV, 1) one uniform (or normal) per round
 * that sets that round's reward for whichever action is chosen (common random numbers); POLICY
 * the tie breaks; NOISE the tree noise. So every algorithm of a trial faces the same theta*, the
 * same decision sets and the same reward draws. */
#ifndef LDPB_AGG_CTXSIM_H
#define LDPB_AGG_CTXSIM_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/rng.h"
#include "ldp_linucb.h"
#include "linucb.h"
#include "rand.h"

typedef enum agg_ctx_reward {
    AGG_CTX_REWARD_BOUNDED = 1,  /* {-1, +1} with mean <theta*, x> */
    AGG_CTX_REWARD_GAUSSIAN = 2, /* <theta*, x> + N(0, 1) */
} agg_ctx_reward;

typedef struct agg_ctx_env_config {
    uint32_t d;  /* >= 2 */
    uint32_t k;  /* actions per round, >= 1 */
    double best; /* projection of the optimal action, (0, 1] */
    double gap;  /* suboptimal projections are <= best - gap; gap in [0, 2 best) */
    agg_ctx_reward reward;
} agg_ctx_env_config;

/* One trial's environment: theta* and the two generators. */
typedef struct agg_ctx_env {
    agg_ctx_env_config cfg;
    double theta[AGG_LINUCB_D_MAX];
    agg_rand ctx, rew;
} agg_ctx_env;

/* LDPB_ERANGE with a message for a configuration out of range. */
ldpb_err agg_ctx_env_check(const agg_ctx_env_config *cfg, char errmsg[AGG_ERRMSG_MAX]);

/* Seeds the trial's streams and draws theta*. */
ldpb_err agg_ctx_env_start(agg_ctx_env *e, const agg_ctx_env_config *cfg,
                           const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial);

/* The next decision set into x (k x d) and the actions' means <theta*, x> into mean (k). */
void agg_ctx_env_round(agg_ctx_env *e, double *x, double *mean);

/* The reward of this round for an action of mean `mean`: one draw of the reward stream. */
double agg_ctx_env_reward(agg_ctx_env *e, double mean);

typedef struct agg_ctx_sim_config {
    agg_linucb_config policy; /* policy.d must equal env.d; policy.horizon is the run's length */
    agg_ctx_env_config env;
    const uint64_t *checkpoints; /* strictly increasing, last == horizon */
    size_t n_checkpoints;
    agg_noise_kind noise_kind; /* AGG_NOISE_FAST is allowed in simulation */
} agg_ctx_sim_config;

/* Runs trial `trial`: regret[j] gets the cumulative pseudo-regret after checkpoints[j] rounds;
 * *chol_failures (may be NULL) the rounds whose release was not positive definite. */
ldpb_err agg_ctx_sim_run_trial(const agg_ctx_sim_config *cfg,
                               const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                               double *regret, uint64_t *chol_failures,
                               char errmsg[AGG_ERRMSG_MAX]);

/* Runs trial `trial` of n >= 1 configurations side by side against one environment: they must
 * agree in env, policy.horizon and checkpoints (LDPB_EINVAL otherwise). regret[i] and
 * chol_failures[i] (chol_failures may be NULL) are configuration i's, bit for bit what
 * agg_ctx_sim_run_trial gives it alone: the environment's streams do not depend on the policies
 * and each policy keeps its own POLICY and NOISE streams. The decision sets and the reward draw
 * are made once per round for the group instead of once per configuration. */
ldpb_err agg_ctx_sim_run_group(const agg_ctx_sim_config *const *cfgs, size_t n,
                               const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                               double *const *regret, uint64_t *chol_failures,
                               char errmsg[AGG_ERRMSG_MAX]);
/* The local contextual mode (ldp_linucb.h) in the same environment. Every round is a new device:
 * it receives the aggregator's current model (agg_ldp_linucb_model), loads it into its own
 * ldpb_ctxmodel, chooses among the round's actions with ldpb_ctxmodel_choose (ties from stream
 * AGG_SIM_STREAM(i, POLICY, 0)), privatizes its (x, y) statistics and the aggregator adds the
 * report. Device noise comes from stream AGG_SIM_STREAM(i, CLIENT, 0): SECURE runs the devices'
 * own mechanism (ldpb_ctxstat_privatize, the exact discrete Gaussian sampler); FAST draws the
 * same report with agg_ctx_ldp_privatize_fast. Environment streams as above, so a trial faces
 * the same theta*, decision sets and reward draws as the central policies. */
typedef struct agg_ctx_ldp_sim_config {
    agg_ldp_linucb_config policy; /* policy.d == env.d; policy.horizon is the run's length */
    agg_ctx_env_config env;
    const uint64_t *checkpoints; /* strictly increasing, last == horizon */
    size_t n_checkpoints;
    agg_noise_kind noise_kind;
} agg_ctx_ldp_sim_config;

/* As agg_ctx_sim_run_trial; *repairs (may be NULL) gets the rounds whose model V was not
 * positive definite before the device's ridge (agg_ldp_linucb_repairs). */
ldpb_err agg_ctx_ldp_sim_run_trial(const agg_ctx_ldp_sim_config *cfg,
                                   const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                                   double *regret, uint64_t *repairs, char errmsg[AGG_ERRMSG_MAX]);

/* Simulation only: the report ldpb_ctxstat_privatize(m, ...) would send, with the same clipping
 * (||x|| <= L else LDPB_ERANGE, y clipped to [-B, B]), the same unbiased randomized rounding of
 * each packed entry to the grid g, and the discrete Gaussian noise N_Z(0, (sigma/g)^2) in grid
 * units replaced by a fast standard normal times sigma/g rounded to the nearest integer. The two
 * laws differ by about 0.0202 (g/sigma)^2 in total variation per entry (computed numerically;
 * docs/sim.md), below 2e-14 since ldpb_ctxstat keeps sigma/g >= 2^20. Never for a real device:
 * agg_rand is not a secure generator and the rounded normal is a floating-point sampler. */
ldpb_err agg_ctx_ldp_privatize_fast(const ldpb_ctxstat *m, agg_rand *r, const double *x, double y,
                                    double *out);

#endif
