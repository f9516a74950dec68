/* The aggregator's side of the local contextual mode ("ldp-linucb-gaussian"): devices choose
 * their arm on the device from the model handed out with each assignment (ldpb/ctxmodel.h) and
 * report their (x, y) statistics privatized on the device (ldpb/ctxstat.h); this object only
 * checks and sums those reports and computes the model's regulariser shift and beta_t from the
 * number summed -- it never sees a context, a reward or a chosen arm.
 *
 * The sum of n reports carries the sum of n independent discrete Gaussian noises per packed
 * entry; the shift that keeps V = S_xx + shift I positive definite with probability 1 - alpha
 * over the horizon, and the rho_min, rho_max, gamma that enter beta_t (Shariff & Sheffet 2018,
 * Prop. 4), follow SS18 sec. 4.2 with the noise of n device reports in place of the tree's m
 * nodes (docs/derivations.md). */
#ifndef LDPB_AGG_LDP_LINUCB_H
#define LDPB_AGG_LDP_LINUCB_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/ctxstat.h"
#include "ldpb/err.h"
#include "policy.h"

typedef struct agg_ldp_linucb_config {
    uint32_t d;          /* [1, LDPB_CTXSTAT_D_MAX] */
    double epsilon;      /* per device report, as ldpb_ctxstat_opts */
    double delta;        /* per device report */
    double feature_norm; /* L */
    double reward_bound; /* B */
    double theta_norm;   /* S: ||theta*|| <= S */
    double noise_sigma;  /* the rewards' sub-Gaussian noise parameter (SS18's sigma) */
    double alpha;        /* failure probability of the confidence sets, (0, 1) */
    uint64_t horizon;    /* T >= 1: the number of reports the shift is made to cover */
} agg_ldp_linucb_config;

typedef struct agg_ldp_linucb agg_ldp_linucb;

/* Defaults: d 0 and horizon 0 (must be set), epsilon 1, delta 1e-6, L = B = S = sigma = 1,
 * alpha 0.01. */
void agg_ldp_linucb_config_init(agg_ldp_linucb_config *cfg);

/* Checks the configuration (a precise reason in errmsg on LDPB_EINVAL / LDPB_ERANGE) and
 * builds the mechanism devices must use. */
ldpb_err agg_ldp_linucb_new(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                            char errmsg[AGG_ERRMSG_MAX]);
void agg_ldp_linucb_free(agg_ldp_linucb *p);
const agg_ldp_linucb_config *agg_ldp_linucb_get_config(const agg_ldp_linucb *p);

/* The mechanism every report must come from (its parameters go out with each assignment). */
const ldpb_ctxstat *agg_ldp_linucb_mech(const agg_ldp_linucb *p);

/* Adds one report (ldpb_ctxstat_values() values). Refused without change: LDPB_EPROTO if
 * ldpb_ctxstat_check refuses it, LDPB_ESTATE once `horizon` reports were summed. */
ldpb_err agg_ldp_linucb_add(agg_ldp_linucb *p, const double *z, size_t n);
uint64_t agg_ldp_linucb_reports(const agg_ldp_linucb *p);

/* The model to hand out now: the packed sum (ldpb_ctxstat_values() values), the shift and beta
 * for the current number of reports. */
ldpb_err agg_ldp_linucb_model(agg_ldp_linucb *p, double *stats, double *shift, double *beta);

/* The bounds behind the model after n reports (docs/derivations.md sec. 15): the per-report
 * sub-Gaussian parameter of a packed entry's noise sd_entry = sqrt(sigma^2 + g^2/4), count =
 * max(n, 1), Upsilon, shift = 2 Upsilon, rho_min = Upsilon, rho_max = 3 Upsilon, gamma (SS18
 * Prop. 11 through agg_linucb_gaussian_bounds), and rho_min_beta = rho_min at one report, the
 * regulariser the ln det term of beta_t is taken against so that it holds uniformly over the
 * rounds. */
typedef struct agg_ldp_linucb_bounds {
    double sd_entry, count;
    double upsilon, shift, rho_min, rho_max, gamma, rho_min_beta;
} agg_ldp_linucb_bounds;
ldpb_err agg_ldp_linucb_bounds_at(const agg_ldp_linucb *p, uint64_t n, agg_ldp_linucb_bounds *b);

/* Models handed out whose V the noise had left indefinite (ldpb_ctxmodel_load's ridge). */
uint64_t agg_ldp_linucb_repairs(const agg_ldp_linucb *p);

/* Tests only: the same object with the privacy taken out -- add() sums unprivatized packed
 * (x, y) statistics as doubles (any finite values), and the model is LinUCB's: shift rho,
 * rho_min = rho_max = rho, gamma 0. It must then decide exactly as `linucb`. Nothing outside
 * the tests calls it. */
ldpb_err agg_ldp_linucb_new_noiseless(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                                      double rho, char errmsg[AGG_ERRMSG_MAX]);

/* Simulation and tests only: the same policy admitting every report of the right length whose
 * values are on the grid and at most `admit` (>= ldpb_ctxstat_limit, else LDPB_ERANGE) in
 * magnitude, in place of ldpb_ctxstat_check's bound. It exists to measure what a looser bound --
 * the former L^2 + B^2 + 40 sigma -- lets a crafted report do (ctxpoison.h); the daemon never
 * builds one. */
ldpb_err agg_ldp_linucb_new_admitting(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                                      double admit, char errmsg[AGG_ERRMSG_MAX]);

/* Adds the summed reports of `src` (a policy of the same configuration) into `dst`, as if dst
 * had summed them too: the sums are integers in grid units, so the result is exactly one
 * instance's that summed every report, in any order. The model is derived from the sum: the
 * caller recomputes it. LDPB_EINVAL for another configuration, LDPB_ERANGE where the reports
 * would pass the horizon; dst is then unchanged. */
ldpb_err agg_ldp_linucb_merge(agg_ldp_linucb *dst, const agg_ldp_linucb *src);

/* Versioned bytes of the state, as agg_linucb_save/restore (restore refuses another
 * configuration, truncated or non-finite data with LDPB_ECORRUPT). */
ldpb_err agg_ldp_linucb_save(const agg_ldp_linucb *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_ldp_linucb_restore(agg_ldp_linucb *p, const uint8_t *buf, size_t len);

#endif
