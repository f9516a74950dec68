/* The EXP3 family (adversarial bandits): plain EXP3 (Auer, Cesa-Bianchi, Freund and Schapire
 * 2002, "Exp3"), DP-EXP3-Lap in the central model (the aggregator adds Laplace noise to each gain)
 * and in the local model (the observation already is the client's Laplace report), and EXP3-tau
 * (EXP3 in mini-batches of tau rounds; Tossou & Dimitrakakis 2017, Sec. 3.2, after Arora, Dekel and
 * Tewari 2012). One engine; the variants differ in how an observation becomes an EXP3 gain.
 *
 * Parameters (agg_policy_config): gamma is EXP3's exploration rate in (0, 1], 0 meaning Auer et
 * al. 2002 Cor. 3.2's min(1, sqrt(K ln K / ((e - 1) n))) with n = T (n = ceil(T/tau) for
 * EXP3-tau); threshold is DP-EXP3-Lap's acceptance half-width b > 0, 0 meaning ln(T)/epsilon and
 * AGG_EXP3_THRESHOLD_BOUND_MIN ("bound-min") the b that minimises the regret bound
 * (agg_exp3_threshold_bound_min); tau is EXP3-tau's block length in [1, T], 0 meaning
 * ceil(T^(1/3)) (exact integer cube root). */
#ifndef LDPB_AGG_EXP3_FAMILY_H
#define LDPB_AGG_EXP3_FAMILY_H

#include "policy.h"

typedef enum agg_exp3_kind {
    AGG_EXP3_PLAIN = 1,
    AGG_EXP3_LAP_CENTRAL = 2, /* dp-exp3-lap: Laplace(1/eps) from env->noise on every gain */
    AGG_EXP3_LAP_LOCAL = 3,   /* ldp-exp3-lap: the observation is the client's Laplace report */
    AGG_EXP3_TAU = 4,         /* exp3-tau */
} agg_exp3_kind;

/* DP-EXP3-Lap's bound-minimising threshold, max(0, ln(eps sqrt(T) / (2 C sqrt(K ln K))) / eps)
 * with C = 2 sqrt(e - 1) (docs/derivations.md derives it): about 0.92 at T = 2^18, K = 4, eps = 6,
 * where ln(T)/eps is 2.08. T >= 1, eps > 0; with K = 1 it is ln(T)/eps. */
double agg_exp3_threshold_bound_min(uint32_t k, uint64_t horizon, double epsilon);

ldpb_err agg_exp3_new(agg_policy **out, const agg_policy_config *cfg, const agg_policy_ops *ops,
                      agg_exp3_kind kind, char errmsg[AGG_ERRMSG_MAX]);
ldpb_err agg_exp3_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm);
ldpb_err agg_exp3_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs);
/* observe() with the probability recorded at the choice, in (0, 1] (exp3_family.c says why). */
ldpb_err agg_exp3_observe_with_propensity(agg_policy *p, agg_policy_env *env, uint32_t arm,
                                          double obs, double prob);
ldpb_err agg_exp3_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_exp3_restore(agg_policy *p, const uint8_t *buf, size_t len);
ldpb_err agg_exp3_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k);
ldpb_err agg_exp3_propensity(const agg_policy *p, double *prob);
void agg_exp3_free(agg_policy *p);

#define AGG_EXP3_OPS_SHARED                                                                        \
    .choose = agg_exp3_choose, .observe = agg_exp3_observe, .save = agg_exp3_save,                 \
    .restore = agg_exp3_restore, .describe = agg_exp3_describe, .free = agg_exp3_free,             \
    .propensity = agg_exp3_propensity, .observe_with_propensity = agg_exp3_observe_with_propensity

/* The distribution the next fresh draw would use, probs[0..k-1] (tests, status pages). */
ldpb_err agg_exp3_probs(const agg_policy *p, double *probs, uint32_t k);

/* The resolved parameters: gamma, the Laplace threshold b (0 unless DP-EXP3-Lap), the block
 * length tau (1 unless EXP3-tau), and the counters: accepted EXP3 updates and rejected
 * observations (DP-EXP3-Lap). Any pointer may be NULL. */
void agg_exp3_params(const agg_policy *p, double *gamma, double *threshold, uint64_t *tau,
                     uint64_t *updates, uint64_t *rejected);

/* ceil(cbrt(x)) in integers: pow(2^18, 1/3) is 63.999..., so a floating cube root can be off by
 * one at exact cubes. */
uint64_t agg_exp3_icbrt_ceil(uint64_t x);

#endif
