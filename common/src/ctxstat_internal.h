/* The pieces of the contextual statistics mechanism (ctxstat.c) that its tests drive directly:
 * the exact samplers, and a constructor with a deliberately reduced noise scale so the privacy
 * audit can show that it detects an under-noised mechanism. Nothing outside common/ and the
 * tests sees this; no public knob reduces the noise. */
#ifndef LDPB_CTXSTAT_INTERNAL_H
#define LDPB_CTXSTAT_INTERNAL_H

#include <stdint.h>

#include "ldpb/ctxstat.h"

/* 1 with probability exactly exp(-num / den), den > 0 (Canonne, Kamath & Steinke 2020, Alg. 1). */
int ctxstat_bern_exp(ldpb_rng *rng, uint64_t num, uint64_t den);

/* Discrete Laplace with scale t >= 1: P(Y = y) proportional to exp(-|y| / t) (CKS20, Alg. 2),
 * conditioned on |Y| < 2^62 / t (see ctxstat.c for why that is invisible). */
int64_t ctxstat_dlaplace(ldpb_rng *rng, uint64_t t);

/* Discrete Gaussian with integer variance parameter sigma2 in [1, 2^44]: P(Y = y) proportional
 * to exp(-y^2 / (2 sigma2)) (CKS20, Alg. 3, with t = floor(sqrt(sigma2)) + 1). */
int64_t ctxstat_dgauss(ldpb_rng *rng, uint64_t sigma2);

/* As ldpb_ctxstat_new, with the noise standard deviation divided by `divisor` (>= 1; 1 is the
 * production mechanism). The reported sigma, rho and epsilon_effective are those of the reduced
 * noise. For the audit's negative control only. */
ldpb_err ctxstat_new_underscaled(ldpb_ctxstat **out, const ldpb_ctxstat_opts *opts,
                                 uint32_t divisor);

/* The noise variance in grid units (sigma / grid)^2, an integer. */
uint64_t ctxstat_sigma2_units(const ldpb_ctxstat *m);

#endif
