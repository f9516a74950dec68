/* The UCB family engine: UCB1 (ACF02), LDP-UCB-B and LDP-UCB-L (RZLS20) are one algorithm,
 *     argmax_a  sum_a / n_a + c sqrt(s ln t / n_a)
 * after an exploration phase, on different observations. This engine holds the state, the
 * choice, the update, the state format and describe(); each algorithm's file gives only what is
 * its own as an agg_ucb_variant: its name (in its ops table), what an observation is, the index's
 * exploration term (s, c), its forced exploration and its config checks.
 *
 * t is the 1-based number of the round being decided (observations so far + 1); ties are broken
 * uniformly at random with env->rand. Each arm caches its mean and 1/sqrt(n_a), so a round costs
 * one log, one sqrt and K multiply-adds. choose() changes nothing: a report that never arrives
 * simply leaves the arm's count unchanged. */
#ifndef LDPB_AGG_UCB_FAMILY_H
#define LDPB_AGG_UCB_FAMILY_H

#include "policy.h"

/* What an observation is, and so how the per-arm sum is saved and checked on restore. */
typedef enum agg_ucb_obs {
    AGG_UCB_OBS_UNIT = 1, /* a raw reward in [0,1]: sum saved as f64, 0 <= sum_a <= n_a */
    AGG_UCB_OBS_BIT,      /* a privatized bit: the count of ones saved as u64, <= n_a <= 2^53 */
    AGG_UCB_OBS_REAL,     /* an unbounded real (Laplace): sum saved as f64, finite, 0 if n_a = 0 */
} agg_ucb_obs;

/* What create() derives from the config for the engine: the clients' mechanism (NULL if none;
 * the engine de-biases with it in describe() and frees it), the unit-scale factor w of the
 * interval describe() reports (1 if none), and the exploration coefficient c (1 if none). */
typedef struct agg_ucb_params {
    ldpb_mech *mech;
    double w;
    double c;
} agg_ucb_params;

typedef struct agg_ucb_variant {
    const agg_policy_ops *ops; /* the algorithm's ops table: its name and model */
    uint8_t state_version;
    agg_ucb_obs obs;
    /* The exploration term is c sqrt(ln_scale ln t / n_a). */
    double ln_scale;
    /* 0: pull every arm once, lowest unpulled index first. > 0: while the fewest reports of any
     * arm are <= forced ln t, pull that arm (lowest index among equals); describe() gives an
     * interval only for arms past that threshold. */
    double forced;
    /* The algorithm's own config checks after k (refusals name it); fills params. NULL: none. */
    ldpb_err (*prepare)(const agg_policy_config *cfg, agg_ucb_params *params,
                        char errmsg[AGG_ERRMSG_MAX]);
} agg_ucb_variant;

/* create() for a variant: checks k, runs v->prepare, allocates. */
ldpb_err agg_ucb_new(agg_policy **out, const agg_policy_config *cfg, const agg_ucb_variant *v,
                     char errmsg[AGG_ERRMSG_MAX]);

/* The rest of the ops table, shared by every variant. */
ldpb_err agg_ucb_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_ucb_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
ldpb_err agg_ucb_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_ucb_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_ucb_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_ucb_free(agg_policy *p);
/* Adds src's per-arm counts and sums (and rounds) into dst: the UCB state is those sums. */
ldpb_err agg_ucb_merge(agg_policy *dst, const agg_policy *src);

/* The ops table entries every variant shares, after its own name, model, mergeable and
 * create: `.create = create, AGG_UCB_OPS_SHARED,`. */
#define AGG_UCB_OPS_SHARED                                                                         \
    .choose = agg_ucb_choose, .observe = agg_ucb_observe, .save = agg_ucb_save,                    \
    .restore = agg_ucb_restore, .describe = agg_ucb_describe, .free = agg_ucb_free,                \
    .merge = agg_ucb_merge

#endif
