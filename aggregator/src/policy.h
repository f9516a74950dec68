/* The policy interface: one ops table that every bandit algorithm implements, so the daemon,
 * the simulator and the load generator drive any of them the same way (design.md 3).
 *
 * A policy keeps sufficient statistics, never histories. It is created from a config (refused
 * with a precise message when the config is invalid, algorithms.md 10.1), chooses arms, observes
 * (arm, observation) where the observation is what the privacy model delivers (a privatized bit,
 * a privatized real, or a raw reward), saves and restores its whole state as versioned bytes,
 * describes its per-arm state, and says whether two states can be merged across shards.
 *
 * Policies are not thread-safe; the caller serializes calls on one instance. */
#ifndef LDPB_AGG_POLICY_H
#define LDPB_AGG_POLICY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/mech.h"
#include "rand.h"

/* Which privacy model a policy belongs to, and so what its observations are. */
typedef enum agg_model {
    AGG_MODEL_NONPRIVATE = 1, /* raw rewards in [0,1], no privacy */
    AGG_MODEL_LOCAL = 2,      /* privatized by the client: a bit (Bernoulli kinds) or a real */
    AGG_MODEL_CENTRAL = 3,    /* raw rewards in [0,1]; the policy adds central-DP noise */
} agg_model;

typedef struct agg_policy_config {
    uint32_t k;               /* arms, >= 2 */
    uint64_t horizon;         /* T; 0 if unknown (policies that need T refuse) */
    double epsilon;           /* LDP per-report epsilon or central epsilon */
    ldpb_mech_kind mechanism; /* LOCAL: the client mechanism (decides bit vs real) */
    double kappa;             /* quadratic curvature (LOCAL, quadratic), default 0.5 */
    double beta;              /* SE / LDP-SE / DP-SE confidence; 0 means 1/T */
    double gamma;             /* DP-UCB failure probability; 0 means 1/T. EXP3 family: the
                                 exploration rate in (0, 1]; 0 means Auer et al. 2002 Cor. 3.2 */
    double eps_arm;           /* DP-UCB per-arm tree budget; 0 means epsilon */
    uint64_t tau;             /* exp3-tau block length in [1, T]; 0 means ceil(T^(1/3)) */
    double threshold;         /* (l)dp-exp3-lap acceptance half-width b > 0; 0 means ln(T)/eps */
} agg_policy_config;

/* Sets every field to its default (k = 0, horizon = 0, epsilon = 1, linear, kappa 0.5, 0s). */
void agg_policy_config_init(agg_policy_config *cfg);

/* Per-arm state for status pages and describe(). estimate is on the unit reward scale where the
 * algorithm has one (de-biased for LDP), with a confidence interval when it has one (else NaN). */
typedef struct agg_arm_status {
    uint64_t pulls;
    double estimate;
    double ci_low, ci_high;
    int active; /* 0 once eliminated (SE family) */
} agg_arm_status;

/* Randomness handed to choose/observe: decisions draw from `rand`, privacy noise from `noise`
 * (NULL for policies that add none). */
typedef struct agg_policy_env {
    agg_rand *rand;
    agg_noise *noise;
} agg_policy_env;

/* Room for a precise refusal message: "dp-se: beta 1.5 outside (0, 1)". */
#define AGG_ERRMSG_MAX 256

typedef struct agg_policy agg_policy;

typedef struct agg_policy_ops {
    const char *name; /* the CLI / CSV name: "ucb1", "ldp-ts-b", "dp-se", ... */
    agg_model model;
    int mergeable; /* 1 if states of shards can be merged (algorithms.md 2.0, 10) */
    ldpb_err (*create)(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX]);
    ldpb_err (*choose)(agg_policy *p, agg_policy_env *env, uint32_t *arm);
    ldpb_err (*observe)(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
    /* Writes the state (with a version byte) into buf; *len gets the size. With buf NULL or
     * cap too small, returns LDPB_ERANGE and sets *len to the size needed. */
    ldpb_err (*save)(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
    /* Replaces the state of a policy created with the same config. LDPB_ECORRUPT for bytes
     * that do not decode to a valid state of this config (untrusted input). */
    ldpb_err (*restore)(agg_policy *p, const uint8_t *buf, size_t len);
    /* Fills arms[0..k-1]. */
    ldpb_err (*describe)(const agg_policy *p, agg_arm_status *arms, uint32_t k);
    void (*free)(agg_policy *p);
    /* Optional (NULL when the policy cannot say): the exact probability with which the last
     * choose() picked the arm it returned, for a propensity log. LDPB_ESTATE before any choice. */
    ldpb_err (*propensity)(const agg_policy *p, double *prob);
} agg_policy_ops;

/* Every implementation starts with this header so the generic wrappers can dispatch. */
struct agg_policy {
    const agg_policy_ops *ops;
    agg_policy_config cfg;
};

/* The registry of every policy, and lookup by name (NULL if unknown). */
const agg_policy_ops *const *agg_policy_all(size_t *count);
const agg_policy_ops *agg_policy_find(const char *name);

/* Largest k a policy accepts: per-arm state is a few dozen bytes, so this bounds a policy at a
 * few hundred MiB and keeps every per-arm count and index computation far from overflow. */
#define AGG_POLICY_K_MAX (1u << 24)

/* Helpers for policy implementations (not for callers).
 *
 * agg_policy_refuse formats a refusal into errmsg (may be NULL) and returns err, so a create
 * function can say `return agg_policy_refuse(errmsg, LDPB_ERANGE, "ucb1: k %u < 2", k);`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
ldpb_err
agg_policy_refuse(char errmsg[AGG_ERRMSG_MAX], ldpb_err err, const char *fmt, ...);

/* The checks of algorithms.md 10.1 most policies share, each refusing with a message that names
 * the policy, the field and the bound: k in [2, AGG_POLICY_K_MAX]; horizon >= k when known
 * (need_horizon: horizon must also be known, > 0); epsilon finite and in (0, LDPB_EPSILON_MAX]. */
ldpb_err agg_policy_check_k(const agg_policy_config *cfg, const char *name, int need_horizon,
                            char errmsg[AGG_ERRMSG_MAX]);
ldpb_err agg_policy_check_epsilon(const agg_policy_config *cfg, const char *name,
                                  char errmsg[AGG_ERRMSG_MAX]);

/* Builds the clients' mechanism described by cfg (mechanism, epsilon, kappa for quadratic;
 * max-span endpoints) so an LDP policy can de-bias with the implemented endpoints. Refuses with a
 * message naming the policy: an unknown kind or NaN (LDPB_EINVAL), epsilon or kappa out of range
 * (LDPB_ERANGE), LDPB_ENOMEM. Free with ldpb_mech_free(). */
ldpb_err agg_policy_mech_new(const agg_policy_config *cfg, const char *name, ldpb_mech **out,
                             char errmsg[AGG_ERRMSG_MAX]);

/* Argmax with ties broken uniformly at random by reservoir sampling: the j-th value found equal
 * to the running maximum replaces the choice with probability 1/j, drawn from `rand` only when a
 * tie occurs. Offer values in arm order; NaN is never offered. */
typedef struct agg_argmax {
    double best;
    uint32_t arm;
    uint32_t ties;
} agg_argmax;

static inline void agg_argmax_init(agg_argmax *m)
{
    m->best = -HUGE_VAL;
    m->arm = 0;
    m->ties = 0;
}

static inline void agg_argmax_offer(agg_argmax *m, uint32_t arm, double v, agg_rand *rand)
{
    if (v > m->best) {
        m->best = v;
        m->arm = arm;
        m->ties = 1;
    } else if (v == m->best) {
        m->ties++;
        if (agg_rand_below(rand, m->ties) == 0)
            m->arm = arm;
    }
}

/* Generic wrappers: validate the arguments common to all policies (arm < k, finite
 * observation, obs in {0,1} for bit observations, in [0,1] for raw rewards) and dispatch. */
ldpb_err agg_policy_new(agg_policy **out, const char *name, const agg_policy_config *cfg,
                        char errmsg[AGG_ERRMSG_MAX]);
ldpb_err agg_policy_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_policy_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
ldpb_err agg_policy_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_policy_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_policy_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_policy_free(agg_policy *p);
/* The probability of the last choice (the optional op); LDPB_ESTATE when the policy has no such
 * op or has not chosen yet. */
ldpb_err agg_policy_propensity(const agg_policy *p, double *prob);

#endif
