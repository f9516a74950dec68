/* The Thompson Sampling engine: TS (AG12) and LDP-TS-B (JZL23) are one algorithm on different
 * observations. Prior Beta(1,1) per arm; a round draws theta_a ~ Beta(S_a + 1, F_a + 1) for every
 * arm and pulls the argmax (ties, which have probability zero but are handled, uniformly at random
 * with env->rand); an observation adds to S or F of its arm. This engine holds the counts, the
 * choice, the update, the state format and describe(); each algorithm's file gives only what is
 * its own as an agg_ts_variant: its name (in its ops table), how an observation becomes a success
 * or a failure, its config checks and describe()'s estimate.
 *
 * Speed: the Gamma constants of both posterior parameters are cached per arm and refreshed only
 * for the observed arm, and the K Beta draws of a round come from one agg_rand_beta_fill batch
 * into a scratch array allocated at creation (nothing is allocated per round). */
#ifndef LDPB_AGG_TS_FAMILY_H
#define LDPB_AGG_TS_FAMILY_H

#include "policy.h"

typedef struct agg_ts_variant {
    const agg_policy_ops *ops; /* the algorithm's ops table: its name and model */
    uint8_t state_version;
    /* 1 if the (validated) observation is a success, 0 if a failure; may draw from env->rand. */
    int (*success)(agg_policy_env *env, double obs);
    /* The algorithm's own config checks after k (refusals name it); may build the clients'
     * mechanism into *mech, which the engine keeps for estimate() and frees. NULL: none. */
    ldpb_err (*prepare)(const agg_policy_config *cfg, ldpb_mech **mech,
                        char errmsg[AGG_ERRMSG_MAX]);
    /* Fills st->estimate and the interval (left NaN if none) of an arm with s successes out of
     * n > 0 observations. */
    ldpb_err (*estimate)(const ldpb_mech *mech, uint64_t s, uint64_t n, agg_arm_status *st);
} agg_ts_variant;

/* create() for a variant: checks k, runs v->prepare, allocates. */
ldpb_err agg_ts_new(agg_policy **out, const agg_policy_config *cfg, const agg_ts_variant *v,
                    char errmsg[AGG_ERRMSG_MAX]);

/* The rest of the ops table, shared by every variant. */
ldpb_err agg_ts_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_ts_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
ldpb_err agg_ts_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_ts_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_ts_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_ts_free(agg_policy *p);
/* Adds src's per-arm successes and failures into dst: the posterior is those counts. */
ldpb_err agg_ts_merge(agg_policy *dst, const agg_policy *src);

/* The ops table entries every variant shares, after its own name, model, mergeable and
 * create: `.create = create, AGG_TS_OPS_SHARED,`. */
#define AGG_TS_OPS_SHARED                                                                          \
    .choose = agg_ts_choose, .observe = agg_ts_observe, .save = agg_ts_save,                       \
    .restore = agg_ts_restore, .describe = agg_ts_describe, .free = agg_ts_free,                   \
    .merge = agg_ts_merge

#endif
