/* The central-DP UCB engine: dp-ucb (MT15, binary tree mechanism) and dp-ucb-bound (TD16, hybrid
 * mechanism) are one algorithm. One continual counter per arm releases a private running sum
 * s_hat_a of the arm's rewards (leaf = the arm's pull count), and after one initial pull of every
 * arm round t (observations so far + 1) pulls
 *     argmax_a  s_hat_a / n_a + sqrt(2 ln t / n_a) + nu / n_a,
 * ties broken at random (possible only between equal noisy sums). The engine holds the counters,
 * the choice, the update, the state format and describe(); each algorithm's file gives only what
 * is its own as an agg_dp_ucb_variant: its name (in its ops table), its counter, its config
 * checks and its nu term (a constant folded into the cached per-arm term, or a per-round factor
 * times a per-arm weight).
 *
 * Per round O(K): the per-arm terms and 1/sqrt(n_a) are cached and change only for the observed
 * arm, so a choice costs one log, one sqrt (and the per-round nu) and K multiply-adds. */
#ifndef LDPB_AGG_DP_UCB_FAMILY_H
#define LDPB_AGG_DP_UCB_FAMILY_H

#include "policy.h"

typedef enum agg_dp_ucb_counter {
    AGG_DP_UCB_TREE = 1, /* agg_tree over the known horizon, budget par.eps */
    AGG_DP_UCB_HYBRID,   /* agg_hybrid, horizon unknown, budget par.eps */
} agg_dp_ucb_counter;

/* What an algorithm derives from its config for the engine. */
typedef struct agg_dp_ucb_params {
    double eps; /* each arm's counter budget */
    double nu;  /* a constant nu, if the algorithm has one */
} agg_dp_ucb_params;

typedef struct agg_dp_ucb_variant {
    const agg_policy_ops *ops; /* the algorithm's ops table: its name and model */
    uint8_t state_version;
    int need_horizon; /* the horizon must be known (agg_policy_check_k) */
    agg_dp_ucb_counter counter;
    /* Names for the refusal when a counter cannot be built from par.eps: "<policy>: <eps_name>
     * <eps> too small: the <scale_name> overflows". */
    const char *eps_name, *scale_name;
    /* The algorithm's own config checks after k and epsilon (refusals name it); fills par. */
    ldpb_err (*prepare)(const agg_policy_config *cfg, agg_dp_ucb_params *par,
                        char errmsg[AGG_ERRMSG_MAX]);
    /* The cached terms of an arm with n > 0 rewards, inv = 1/n, release shat: *base is the index
     * without the sqrt(2 ln t / n) term and without a per-round nu, *nu_weight the per-arm factor
     * of the per-round nu (unused without one). */
    void (*terms)(const agg_dp_ucb_params *par, uint64_t n, double inv, double shat, double *base,
                  double *nu_weight);
    /* The per-round nu factor from ln t; NULL if nu is constant (then folded into *base). */
    double (*round_nu)(const agg_dp_ucb_params *par, double log_t);
    /* describe(): the estimate of an arm with n > 0 rewards and the nu part of its radius. */
    void (*estimate)(const agg_dp_ucb_params *par, uint64_t n, double shat, double base,
                     double nu_weight, double round_nu, double *est, double *nu_radius);
} agg_dp_ucb_variant;

/* create() for a variant: checks the arguments, k and epsilon, runs v->prepare, allocates. */
ldpb_err agg_dp_ucb_new(agg_policy **out, const agg_policy_config *cfg, const agg_dp_ucb_variant *v,
                        char errmsg[AGG_ERRMSG_MAX]);

/* The rest of the ops table, shared by every variant. */
ldpb_err agg_dp_ucb_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_dp_ucb_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
ldpb_err agg_dp_ucb_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_dp_ucb_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_dp_ucb_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_dp_ucb_free(agg_policy *p);

/* The ops table entries every variant shares, after its own name, model, mergeable and
 * create: `.create = create, AGG_DP_UCB_OPS_SHARED,`. */
#define AGG_DP_UCB_OPS_SHARED                                                                      \
    .choose = agg_dp_ucb_choose, .observe = agg_dp_ucb_observe, .save = agg_dp_ucb_save,           \
    .restore = agg_dp_ucb_restore, .describe = agg_dp_ucb_describe, .free = agg_dp_ucb_free

#endif
