/* The on-device mechanism of the local contextual mode: one round's (x, y) second-moment
 * statistics, the packed upper triangle of v v^T for v = (x, y) in R^{d+1}, privatized on the
 * device with multivariate discrete Gaussian noise on a power-of-two grid before anything leaves
 * it. The aggregator only sums such reports (docs/privacy.md, "Local contextual mode").
 *
 * Clipping: x must have norm <= feature_norm (L) and |y| <= reward_bound (B) -- x beyond L is an
 * error, y is clipped -- so ||v||^2 <= L^2 + B^2 and any two devices' statistics differ by at most
 * sqrt(2) (L^2 + B^2) in L2 over the packed triangle (replacement neighbours: the device's whole
 * input changes). The noise scale is calibrated through zero-concentrated DP (Canonne, Kamath &
 * Steinke 2020, discrete Gaussian; Bun & Steinke 2016, Prop. 1.3) so that each report is
 * (epsilon, delta)-LDP; the derivation is in docs/derivations.md.
 *
 * Immutable once built: one ldpb_ctxstat may be shared by threads, each with its own ldpb_rng. */
#ifndef LDPB_CTXSTAT_H
#define LDPB_CTXSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/detail_bytes.h"
#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* feature dimension d, [1, LDPB_CTXSTAT_D_MAX] */
#define LDPB_CTXSTAT_D_MAX 32u
/* per-report delta in (0, LDPB_CTXSTAT_DELTA_MAX]; deployments should use far less
 * (docs/privacy.md) */
#define LDPB_CTXSTAT_DELTA_MAX 0.1
/* L and B must lie in [LDPB_CTXSTAT_BOUND_MIN, LDPB_CTXSTAT_BOUND_MAX]: the grid and noise
 * arithmetic are sized for that span (ctxstat.c). */
#define LDPB_CTXSTAT_BOUND_MIN 1e-6
#define LDPB_CTXSTAT_BOUND_MAX 1e6
/* The smallest per-report epsilon: below it the noise would need more than 2^56 squared grid
 * units (ctxstat.c); such a report carries nothing useful anyway. */
#define LDPB_CTXSTAT_EPSILON_MIN 1e-4
/* values in one report: the upper triangle (diagonal included) of the (d+1) x (d+1) matrix */
#define LDPB_CTXSTAT_VALUES(d)  ((size_t)((d) + 1u) * ((d) + 2u) / 2u)
#define LDPB_CTXSTAT_VALUES_MAX LDPB_CTXSTAT_VALUES(LDPB_CTXSTAT_D_MAX)

/* Pinned: travels on the wire and is stored in ledgers. */
typedef enum ldpb_ctxstat_kind {
    LDPB_CTXSTAT_GAUSSIAN = 1,
} ldpb_ctxstat_kind;

typedef struct ldpb_ctxstat_opts {
    ldpb_ctxstat_kind kind;
    uint32_t d;
    double epsilon;      /* per report, [LDPB_CTXSTAT_EPSILON_MIN, LDPB_EPSILON_MAX] */
    double delta;        /* per report, (0, LDPB_CTXSTAT_DELTA_MAX] */
    double feature_norm; /* L > 0, finite: the largest ||x|| a device may report */
    double reward_bound; /* B > 0, finite: rewards are clipped to [-B, B] */
} ldpb_ctxstat_opts;

typedef struct ldpb_ctxstat ldpb_ctxstat;

/* Gaussian kind, L = B = 1. */
LDPB_API void ldpb_ctxstat_opts_init(ldpb_ctxstat_opts *opts, uint32_t d, double epsilon,
                                     double delta);

/* Validates and builds. LDPB_EINVAL: NULL, unknown kind, a non-finite value; LDPB_ERANGE: d,
 * epsilon, delta, L or B outside its range. */
LDPB_API ldpb_err ldpb_ctxstat_new(ldpb_ctxstat **out, const ldpb_ctxstat_opts *opts);
LDPB_API void ldpb_ctxstat_free(ldpb_ctxstat *m);
LDPB_API const ldpb_ctxstat_opts *ldpb_ctxstat_get_opts(const ldpb_ctxstat *m);

/* LDPB_CTXSTAT_VALUES(d). */
LDPB_API size_t ldpb_ctxstat_values(const ldpb_ctxstat *m);

/* Position of entry (i, j), i <= j <= d, in the packed triangle (row-major upper triangle:
 * (0,0), (0,1), ..., (0,d), (1,1), ...). Index d is the reward coordinate. */
LDPB_API size_t ldpb_ctxstat_index(uint32_t d, uint32_t i, uint32_t j);

/* Privatizes one round: x (d finite values, ||x|| <= L, else LDPB_ERANGE), y (finite, clipped to
 * [-B, B]); writes ldpb_ctxstat_values(m) values to out, each a multiple of the grid step.
 * Nothing is drawn on error. */
LDPB_API ldpb_err ldpb_ctxstat_privatize(const ldpb_ctxstat *m, ldpb_rng *rng, const double *x,
                                         double y, double *out);

/* Whether a received report is admissible: n == ldpb_ctxstat_values(m), every value finite, on
 * the grid, and at most ldpb_ctxstat_limit(m) in magnitude. LDPB_EPROTO otherwise, with the reason
 * in detail (NULL or LDPB_DETAIL_BYTES). */
LDPB_API ldpb_err ldpb_ctxstat_check(const ldpb_ctxstat *m, const double *z, size_t n,
                                     char *detail);

/* The admission bound of ldpb_ctxstat_check is set where an honest report lies with overwhelming
 * probability: an honest report is refused with probability at most LDPB_CTXSTAT_FALSE_REFUSAL
 * (docs/derivations.md sec. 16). A tighter bound leaves a crafted report less pull on the sum
 * (docs/privacy.md, "Poisoning"). */
#define LDPB_CTXSTAT_FALSE_REFUSAL 1e-12

/* The largest admissible |value|: M + g + c sigma, with M = max(L (1 + 1e-9) (1 + 2^-40), B)^2
 * bounding every honest |v_i v_j|, g one rounding step, and c = sqrt(2 ln(2 n /
 * LDPB_CTXSTAT_FALSE_REFUSAL)) (n values; c is 7.9 at d = 5, 8.3 at d = 32). NAN for NULL. */
LDPB_API double ldpb_ctxstat_limit(const ldpb_ctxstat *m);

/* The implemented parameters: grid step 2^-k, the discrete Gaussian's sigma (in value units,
 * per packed entry), its zCDP rho, and the epsilon it gives at the configured delta (<= the
 * requested epsilon). */
LDPB_API double ldpb_ctxstat_grid(const ldpb_ctxstat *m);
LDPB_API double ldpb_ctxstat_sigma(const ldpb_ctxstat *m);
LDPB_API double ldpb_ctxstat_rho(const ldpb_ctxstat *m);
LDPB_API double ldpb_ctxstat_epsilon_effective(const ldpb_ctxstat *m);

#ifdef __cplusplus
}
#endif

#endif
