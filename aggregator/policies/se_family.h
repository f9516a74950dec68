/* The successive elimination engine: SE (the non-private baseline) and LDP-SE (docs/derivations.md
 * 9) are one algorithm with a different radius and observation:
 *
 *   S = all arms; e = 0
 *   epoch: e += 1; Delta_e = 2^-e; L_e = ln(8 |S| e^2 / beta) with |S| at the epoch's start;
 *          forget all counts (mandatory: older reports break the union bound);
 *          r_e = the smallest integer with rad(r_e) < Delta_e / 4;
 *          pull every arm of S r_e times, round-robin; mu_hat_a = (de-biased) mean of the epoch;
 *          remove every a with max_b mu_hat_b - mu_hat_a > 2 rad(r_e)   (strictly greater)
 *   once |S| = 1, pull the survivor in every remaining round.
 *
 * rad(r) = rho sqrt(L / r) and r_e = floor(rcoef L / Delta^2) + 1 (at least ceil(L) where the
 * radius needs r >= L), from constants each algorithm derives from its config.
 *
 * Driving: choose() returns the arm under a round-robin cursor and changes nothing; observe()
 * counts a report for an active arm that still needs reports this epoch, advances the cursor past
 * it, and closes the epoch when every arm of S has r_e reports (O(|S|), amortized O(1) per round).
 * Other reports (an eliminated arm, an arm already at r_e) are post-processing, safe to drop (the
 * estimates need exactly r_e per arm), and are dropped, only counted in `pulls`. After |S| = 1 the
 * survivor's reports accumulate into a running mean for describe(). The horizon may end in the
 * middle of an epoch; nothing depends on it except the default beta = 1/T. The state merges
 * across shards only within one epoch, so the policies are not declared mergeable.
 *
 * This engine holds the state, the epochs, the state format and describe(); each algorithm's file
 * gives only what is its own as an agg_se_variant: its name (in its ops table), its config checks
 * and constants, its estimate of a mean, and which sums its observations can produce. */
#ifndef LDPB_AGG_SE_FAMILY_H
#define LDPB_AGG_SE_FAMILY_H

#include "policy.h"

/* What an algorithm derives from its config for the engine. */
typedef struct agg_se_params {
    ldpb_mech *mech;  /* the clients' mechanism, or NULL; the engine frees it */
    double beta;      /* confidence, in (0, 1) */
    double rho;       /* rad(r) = rho sqrt(L / r) */
    double rcoef;     /* r_e = floor(rcoef L / Delta^2) + 1 */
    int r_at_least_L; /* the radius needs r >= L: r_e >= ceil(L), no radius below L */
} agg_se_params;

typedef struct agg_se_variant {
    const agg_policy_ops *ops; /* the algorithm's ops table: its name and model */
    uint8_t state_version;
    /* The algorithm's own config checks after k (refusals name it); fills par. */
    ldpb_err (*prepare)(const agg_policy_config *cfg, agg_se_params *par,
                        char errmsg[AGG_ERRMSG_MAX]);
    /* The estimate of the mean reward from n > 0 observations summing to sum. */
    double (*estimate)(const agg_se_params *par, double sum, uint64_t n);
    /* 1 if n observations can sum to sum (restore's check of untrusted bytes). */
    int (*sum_valid)(const agg_se_params *par, uint64_t n, double sum);
} agg_se_variant;

/* Resolves cfg->beta (0 means 1/T) into *beta in (0, 1), refusing with messages that name the
 * policy: NaN or 0 with an unknown horizon (LDPB_EINVAL), outside (0, 1) (LDPB_ERANGE). */
ldpb_err agg_se_beta(const agg_policy_config *cfg, const char *name, double *beta,
                     char errmsg[AGG_ERRMSG_MAX]);

/* create() for a variant: checks k, runs v->prepare, allocates. */
ldpb_err agg_se_new(agg_policy **out, const agg_policy_config *cfg, const agg_se_variant *v,
                    char errmsg[AGG_ERRMSG_MAX]);

/* The rest of the ops table, shared by every variant. */
ldpb_err agg_se_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_se_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
ldpb_err agg_se_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_se_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_se_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
void agg_se_free(agg_policy *p);

/* The ops table entries every variant shares, after its own name, model, mergeable and
 * create: `.create = create, AGG_SE_OPS_SHARED,`. */
#define AGG_SE_OPS_SHARED                                                                          \
    .choose = agg_se_choose, .observe = agg_se_observe, .save = agg_se_save,                       \
    .restore = agg_se_restore, .describe = agg_se_describe, .free = agg_se_free

#endif
