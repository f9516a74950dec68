/* The daemon's contextual policies: LinUCB (nonprivate) and the joint-DP LinUCB of Shariff &
 * Sheffet 2018 (central), linucb.h, behind the agg_policy header so that the server saves,
 * restores, describes and frees them like any other policy. They cannot choose or observe
 * through the K-armed ops (choose and observe refuse with LDPB_ENOTSUP): the server drives them
 * with agg_ctx_policy_choose (the request's K x d feature set) and agg_ctx_policy_observe (the
 * assigned arm's features and its raw reward), docs/aggregator.md, "Contextual policies".
 *
 * Saved state: version byte 1 | k u32 | pulls per arm (k x u64) | linucb.h's bytes, little-endian.
 *
 * The local contextual mode's policy, ldp-linucb-gaussian (ldp_linucb.h), is served through the
 * same functions: it chooses nothing (devices choose from the model, agg_ctx_policy_model) and
 * observes a report's privatized statistics (agg_ctx_policy_observe with x = the stats). Saved
 * state: version byte 2 | ldp_linucb.h's bytes.
 *
 * `linucb` and `ldp-linucb-gaussian` have the merge op (policy.h): their statistics are sums (the
 * Gram matrix and b vector; the privatized (x, y) statistics), so several nodes serve them from
 * partial states. The jdp-linucb-* keep noise trees indexed by the round: no merge.
 *
 * Not thread-safe, as every policy. */
#ifndef LDPB_AGG_CTX_POLICY_H
#define LDPB_AGG_CTX_POLICY_H

#include <stdint.h>

#include "ldp_linucb.h"
#include "linucb.h"
#include "policy.h"

/* The daemon options of the contextual policies (d, delta, alpha, feature_norm, theta_norm,
 * noise_sigma, rho); horizon and epsilon come from agg_policy_config. */
typedef struct agg_ctx_params {
    uint32_t d;
    double delta, alpha, L, S, sigma, rho;
    double B; /* ldp-linucb-gaussian: the reward bound devices clip to */
} agg_ctx_params;

/* The ops of a contextual policy name ("linucb", "jdp-linucb-wishart", "jdp-linucb-gaussian",
 * "ldp-linucb-gaussian"), or NULL: for the configuration's name and mode checks. */
const agg_policy_ops *agg_ctx_policy_find(const char *name);

/* 1 if p is a contextual policy of this file. */
int agg_ctx_policy_is(const agg_policy *p);

/* 1 if p is the local contextual mode's policy (devices choose; reports carry statistics). */
int agg_ctx_policy_is_local(const agg_policy *p);

/* The local policy's model to hand out (ldpb_ctxstat_values of its mechanism, at most
 * LDPB_CTXSTAT_VALUES_MAX values in stats) and the mechanism devices must use. Computed once per
 * change of the sum (observe and restore change it), so assignments in between cost a copy. */
ldpb_err agg_ctx_policy_model(agg_policy *p, double *stats, size_t *n, double *shift, double *beta);
const ldpb_ctxstat *agg_ctx_policy_mech(const agg_policy *p);

/* Creates the policy `name` for cfg->k arms. Refusals as agg_linucb_new's, with its message;
 * also LDPB_ERANGE when k x d exceeds what an AssignRequest carries (LDPB_WIRE_CONTEXT_MAX). */
ldpb_err agg_ctx_policy_new(agg_policy **out, const char *name, const agg_policy_config *cfg,
                            const agg_ctx_params *cp, char errmsg[AGG_ERRMSG_MAX]);

/* The configured dimension d and the norm bound L. */
uint32_t agg_ctx_policy_d(const agg_policy *p);
double agg_ctx_policy_norm_bound(const agg_policy *p);

/* Checks the feature set x (n values, row-major k x d) and chooses; *ties gets how many arms
 * attained the maximum index (the logged propensity is 1/ties). LDPB_EINVAL with `reason` for a
 * wrong number of values or a non-finite one, LDPB_ERANGE for a row longer than L. */
ldpb_err agg_ctx_policy_choose(agg_policy *p, agg_policy_env *env, const double *x, size_t n,
                               uint32_t *arm, uint32_t *ties, char reason[256]);

/* Reports observed so far, and the horizon n (observe refuses more, LDPB_ESTATE). */
uint64_t agg_ctx_policy_rounds(const agg_policy *p);
uint64_t agg_ctx_policy_horizon(const agg_policy *p);

/* Observes the reward y in [0, 1] of `arm`, whose features were x (d values). The local policy
 * adds x as a report's statistics (ldpb_ctxstat_values of its mechanism) and ignores arm and y:
 * LDPB_EPROTO for a report its mechanism's check refuses, LDPB_ESTATE past the horizon. */
ldpb_err agg_ctx_policy_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, const double *x,
                                double y);

#endif
