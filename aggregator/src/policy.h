/* The policy interface: one ops table that every bandit algorithm implements, so the daemon,
 * the simulator and the load generator drive any of them the same way.
 *
 * A policy keeps sufficient statistics, never histories. It is created from a config (refused
 * with a precise message when the config is invalid), chooses arms, observes
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

/* The one definition of a policy's parameters: the daemon's configuration, the simulator's, the
 * state's meta rows and the header of every saved policy state all hold this struct, and the
 * table of agg_policy_params() names and types each field after k for all of them. */
typedef struct agg_policy_config {
    uint32_t k;               /* arms, >= 2 */
    uint64_t horizon;         /* T; 0 if unknown (policies that need T refuse) */
    double epsilon;           /* LDP per-report epsilon or central epsilon */
    ldpb_mech_kind mechanism; /* LOCAL: the client mechanism (decides bit vs real) */
    double kappa;             /* quadratic curvature (LOCAL, quadratic), default 0.5 */
    double beta;              /* SE / LDP-SE / DP-SE confidence; 0 means 1/T */
    double gamma;             /* DP-UCB failure probability; 0 means 1/T. EXP3 family: the
                                 exploration rate in (0, 1]; 0 means Auer et al. 2002 Cor. 3.2 */
    double eps_arm;           /* DP-UCB per-arm tree budget, <= epsilon; 0 means epsilon */
    uint64_t tau;             /* exp3-tau block length in [1, T]; 0 means ceil(T^(1/3)) */
    double threshold;         /* (l)dp-exp3-lap acceptance half-width b > 0; 0 means ln(T)/eps,
                               * AGG_EXP3_THRESHOLD_BOUND_MIN the bound-minimising b */
} agg_policy_config;

/* Sets every field to its default (k = 0, horizon = 0, epsilon = 1, linear, kappa 0.5, 0s). */
/* The threshold value that selects DP-EXP3-Lap's bound-minimising b (exp3_family.h); its name in
 * the daemon's configuration and in `ldpb sim --threshold` is "bound-min". */
#define AGG_EXP3_THRESHOLD_BOUND_MIN (-1.0)

void agg_policy_config_init(agg_policy_config *cfg);

/* The parameters after k, one bit each: a policy's ops table says which of them it reads. */
typedef enum agg_param {
    AGG_PARAM_HORIZON = 1u << 0,
    AGG_PARAM_EPSILON = 1u << 1,
    AGG_PARAM_MECHANISM = 1u << 2,
    AGG_PARAM_KAPPA = 1u << 3,
    AGG_PARAM_BETA = 1u << 4,
    AGG_PARAM_GAMMA = 1u << 5,
    AGG_PARAM_EPS_ARM = 1u << 6,
    AGG_PARAM_TAU = 1u << 7,
    AGG_PARAM_THRESHOLD = 1u << 8,
} agg_param;

typedef enum agg_param_type {
    AGG_PARAM_TYPE_U64 = 1, /* uint64_t */
    AGG_PARAM_TYPE_F64,     /* double */
    AGG_PARAM_TYPE_MECH,    /* ldpb_mech_kind, encoded as u32 */
} agg_param_type;

typedef struct agg_param_info {
    agg_param bit;
    const char *name; /* the daemon's option and meta key, and `ldpb sim --NAME` ('_' as '-') */
    agg_param_type type;
    size_t offset; /* of the field in agg_policy_config */
    /* 1 for the parameters every saved state's header carries (those of the first state
     * format); a later parameter is saved by the policies that read it, in their own state. */
    int in_header;
} agg_param_info;

/* Every parameter after k, in the order of agg_policy_config (and of the saved state header). */
const agg_param_info *agg_policy_params(size_t *count);

/* The parameter called `name` ("eps_arm"), or NULL. */
const agg_param_info *agg_policy_param_find(const char *name);

/* 1 if the field of `pi` is bit-identical in a and b. */
int agg_policy_param_same(const agg_param_info *pi, const agg_policy_config *a,
                          const agg_policy_config *b);

/* The field of `pi` in cfg as text that reads back exactly: a decimal integer, "%.17g", or the
 * mechanism's name. */
void agg_policy_param_text(const agg_param_info *pi, const agg_policy_config *cfg, char *buf,
                           size_t cap);

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
    int mergeable; /* 1 if states of shards can be merged (exact sums, no noise) */
    /* The AGG_PARAM_* bits of the parameters the policy reads besides k (kappa only matters
     * with the quadratic mechanism: ask agg_policy_reads). Two configurations that agree on
     * these behave the same, so a saved state restores under either. */
    unsigned params;
    /* 1 if choose() only draws an arm from a distribution the state defines and changes
     * nothing else (Thompson sampling): repeated calls then estimate the probability of the arm
     * chosen. 0 for policies that choose deterministically (ties aside) or advance a pointer,
     * which extra calls would disturb. */
    int choose_is_draw;
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
    /* Optional epoch fast-forward, for a simulator (both NULL when the policy has none). A
     * policy with these pulls in epochs: at an epoch's start every active arm needs the same
     * number of pulls, and choose() goes round robin over the active arms in ascending order,
     * skipping those whose quota is complete.
     *
     * plan: the current epoch (>= 1), *n_active active arms, arms[i] (ascending) and
     * remaining[i] the pulls it still needs in the epoch (UINT64_MAX once one arm is left).
     * LDPB_ERANGE if cap < *n_active (*n_active is still set).
     *
     * observe_block: `count` rewards of `arm` at once whose sum is `sum`, the same as observing
     * them one by one whenever the running sums are exact in double precision (0/1 rewards). A
     * block that completes the epoch ends it as single observations would. LDPB_ERANGE if count
     * exceeds the arm's remaining pulls or sum is outside [0, count]; LDPB_ESTATE for an
     * inactive arm. */
    ldpb_err (*plan)(const agg_policy *p, uint32_t *epoch, uint32_t *arms, uint64_t *remaining,
                     uint32_t cap, uint32_t *n_active);
    ldpb_err (*observe_block)(agg_policy *p, agg_policy_env *env, uint32_t arm, uint64_t count,
                              double sum);
    /* Optional (NULL when the policy cannot say): the exact probability with which the last
     * choose() picked the arm it returned, for a propensity log. LDPB_ESTATE before any choice. */
    ldpb_err (*propensity)(const agg_policy *p, double *prob);
    /* Optional (NULL: observe() serves): observe with `prob`, the probability the arm was
     * chosen with, recorded at the choice. A service's reports arrive late and out of order,
     * after other observations moved the distribution, so an importance-weighted update must use
     * the probability of its own choice, not the current one. prob is in (0, 1]. */
    ldpb_err (*observe_with_propensity)(agg_policy *p, agg_policy_env *env, uint32_t arm,
                                        double obs, double prob);
    /* Optional (NULL: the statistics do not add): adds the statistics of `src`, a policy created
     * with the same config, into `dst`, so that dst is as if it had observed both sets of
     * reports (in any order). Only for a state that is a sum of per-report terms with no noise
     * and no order: several nodes each keep the partial state of their own reports and serve
     * the merge (docs/aggregator.md, "Several nodes"). LDPB_ERANGE where a sum would leave the
     * range the state format accepts; dst is then unchanged. */
    ldpb_err (*merge)(agg_policy *dst, const agg_policy *src);
} agg_policy_ops;

/* Every implementation starts with this header so the generic wrappers can dispatch. */
struct agg_policy {
    const agg_policy_ops *ops;
    agg_policy_config cfg;
};

/* The registry of every policy, and lookup by name (NULL if unknown). */
const agg_policy_ops *const *agg_policy_all(size_t *count);
const agg_policy_ops *agg_policy_find(const char *name);

/* The AGG_PARAM_* bits the policy of `ops` reads under cfg: ops->params, without kappa unless
 * cfg->mechanism is quadratic. */
unsigned agg_policy_reads(const agg_policy_ops *ops, const agg_policy_config *cfg);

/* Writes the names of the policies that read parameter `bit` into dst, comma-separated ("dp-ucb"
 * or "none"); for --help texts and refusals. */
void agg_policy_readers(agg_param bit, char *dst, size_t cap);

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

/* The parameter checks most policies share, each refusing with a message that names
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

/* What the mechanism table says of cfg->mechanism: its reports are bits (the Bernoulli family), or
 * its de-biased mean is exact for any reward law. An unknown kind answers 1, so that the policy
 * goes on to agg_policy_mech_new, which refuses it as unknown. */
int agg_policy_mech_reports_bits(const agg_policy_config *cfg);
int agg_policy_mech_exact(const agg_policy_config *cfg);

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
/* As agg_policy_observe, for an observation whose choice had probability prob (in (0, 1], else
 * LDPB_EINVAL): the op observe_with_propensity when the policy has it, else observe (prob is then
 * unused). */
ldpb_err agg_policy_observe_with_propensity(agg_policy *p, agg_policy_env *env, uint32_t arm,
                                            double obs, double prob);
ldpb_err agg_policy_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_policy_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_policy_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_policy_free(agg_policy *p);
/* The merge op: LDPB_ENOTSUP where the policy has none, LDPB_EINVAL for policies of different
 * ops or configs (k, or any parameter). */
ldpb_err agg_policy_merge(agg_policy *dst, const agg_policy *src);
/* The probability of the last choice (the optional op); LDPB_ESTATE when the policy has no such
 * op or has not chosen yet. */
ldpb_err agg_policy_propensity(const agg_policy *p, double *prob);

#endif
