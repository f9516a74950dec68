/* Local differential privacy mechanisms: the Bernoulli mechanism with the linear (CTB),
 * quadratic and exponential probability functions, and a floating-point-safe Laplace mechanism
 * on a power-of-two grid. The math and the guarantees are in docs/privacy.md.
 *
 * A mechanism is configured once (ldpb_mech_new checks admissibility and computes the
 * effective epsilon of what is actually implemented) and is then immutable: one ldpb_mech may
 * be shared by many threads, each drawing from its own ldpb_rng. Privatizing allocates nothing. */
#ifndef LDPB_MECH_H
#define LDPB_MECH_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pinned values: they travel on the wire and are stored in ledgers. */
typedef enum ldpb_mech_kind {
    LDPB_MECH_LINEAR = 1,      /* Bernoulli, p(x) = p0 + s x (CTB at max span) */
    LDPB_MECH_QUADRATIC = 2,   /* Bernoulli, p(x) = p0 + (1-kappa) s x + kappa s x^2 */
    LDPB_MECH_EXPONENTIAL = 3, /* Bernoulli, p(x) = p0 + s (e^{lambda x}-1)/(e^lambda-1) */
    LDPB_MECH_LAPLACE = 4,     /* x + discrete Laplace noise of scale 1/epsilon on a grid */
} ldpb_mech_kind;

/* Per-report epsilon must lie in (0, LDPB_EPSILON_MAX]. Beyond 10 a Bernoulli report is
 * essentially the reward itself, and no deployment should ask for that. */
#define LDPB_EPSILON_MAX   10.0
#define LDPB_KAPPA_DEFAULT 0.5

typedef struct ldpb_mech_opts {
    ldpb_mech_kind kind;
    double epsilon;  /* requested per-report epsilon, (0, LDPB_EPSILON_MAX] */
    double kappa;    /* quadratic curvature in [-1, 1]; default LDPB_KAPPA_DEFAULT */
    double lambda;   /* exponential rate, nonzero; 0 (default) means lambda = epsilon */
    double p0, p1;   /* Bernoulli endpoints p(0), p(1); 0 (default) means the max-span pair
                        1/(e^eps+1), e^eps/(e^eps+1). Custom pairs must satisfy
                        0 < p0 <= p1 < 1 and the epsilon-LDP conditions. */
    double range_lo; /* rewards are rescaled from [range_lo, range_hi] to [0,1] and clipped; */
    double range_hi; /* default [0, 1]; both finite with range_lo < range_hi */
} ldpb_mech_opts;

typedef struct ldpb_mech ldpb_mech;

/* Fills `opts` with the defaults for `kind` at `epsilon`. */
LDPB_API void ldpb_mech_opts_init(ldpb_mech_opts *opts, ldpb_mech_kind kind, double epsilon);

/* Validates `opts` and builds the mechanism. Errors: LDPB_EINVAL for NULL, an unknown kind or a
 * non-finite parameter; LDPB_ERANGE for epsilon outside (0, LDPB_EPSILON_MAX], kappa outside
 * [-1, 1], an empty reward range, inadmissible endpoints, or an effective epsilon (computed from
 * the implemented integer thresholds) above the requested one; LDPB_ENOMEM. The options are
 * copied. Free with ldpb_mech_free(). */
LDPB_API ldpb_err ldpb_mech_new(ldpb_mech **out, const ldpb_mech_opts *opts);

/* Accepts NULL. */
LDPB_API void ldpb_mech_free(ldpb_mech *mech);

/* Privatizes one raw reward: rescale and clip to [0,1], then draw the mechanism's output from
 * `rng` (0.0 or 1.0 for the Bernoulli kinds, a multiple of the grid step for Laplace). Errors:
 * LDPB_EINVAL for NULL arguments or a NaN or infinite reward; nothing is drawn then. */
LDPB_API ldpb_err ldpb_mech_privatize(const ldpb_mech *mech, ldpb_rng *rng, double reward,
                                      double *out);

/* Privatizes rewards[0..n-1] into out[0..n-1] (which may be the same array), exactly as n calls
 * of ldpb_mech_privatize in order: the same draws from rng, the same outputs. For a simulation or
 * a researcher's data set; the loop stays in C. LDPB_EINVAL for NULL arguments (rewards and out
 * may be NULL when n is 0) or any NaN or infinite reward, checked before anything is drawn: on
 * an error nothing is written and the generator is untouched. */
LDPB_API ldpb_err ldpb_mech_privatize_batch(const ldpb_mech *mech, ldpb_rng *rng,
                                            const double *rewards, size_t n, double *out);

/* As ldpb_mech_privatize, for a value already on the unit scale (clipped to [0,1], not
 * rescaled). The audit drives the mechanism through this. */
LDPB_API ldpb_err ldpb_mech_privatize_unit(const ldpb_mech *mech, ldpb_rng *rng, double x01,
                                           double *out);

/* Maps a raw reward to [0,1] as privatize does. LDPB_EINVAL for NaN or infinity. */
LDPB_API ldpb_err ldpb_mech_unit_reward(const ldpb_mech *mech, double reward, double *x01);

/* The configured kind, the requested epsilon, and the effective epsilon: an upper bound, rounded
 * up, on the privacy loss of the implementation as built (integer thresholds, grid), never above
 * the requested epsilon. */
LDPB_API ldpb_mech_kind ldpb_mech_get_kind(const ldpb_mech *mech);
LDPB_API double ldpb_mech_epsilon(const ldpb_mech *mech);
LDPB_API double ldpb_mech_epsilon_effective(const ldpb_mech *mech);
LDPB_API const ldpb_mech_opts *ldpb_mech_get_opts(const ldpb_mech *mech);

/* 1 for the three Bernoulli kinds, 0 for Laplace. */
LDPB_API int ldpb_mech_is_bernoulli(const ldpb_mech *mech);

/* Bernoulli kinds: the nominal p(x) in double precision (the formula), and the implemented
 * probability threshold(x) / 2^64 that the sampler uses. x is clipped to [0,1]. Both return NaN
 * for Laplace. */
LDPB_API double ldpb_mech_prob_one_nominal(const ldpb_mech *mech, double x01);
LDPB_API double ldpb_mech_prob_one(const ldpb_mech *mech, double x01);

/* Bernoulli kinds: the implemented endpoints p(0), p(1) (threshold / 2^64). */
LDPB_API void ldpb_mech_endpoints(const ldpb_mech *mech, double *p0, double *p1);

/* Laplace: the grid step 2^-k (outputs and rounded inputs are multiples of it), and the variance
 * of the ideal discrete Laplace law on the grid that the sampler implements with 32- and 64-bit
 * integer thresholds, excluding the input's randomized rounding, which adds
 * frac(x/g)(1-frac(x/g)) g^2 <= g^2/4. NaN for Bernoulli. */
LDPB_API double ldpb_mech_laplace_grid(const ldpb_mech *mech);
LDPB_API double ldpb_mech_noise_variance(const ldpb_mech *mech);

/* Aggregator-side de-biasing (docs/derivations.md 5-6) of `n` reports summing to `sum`, to the
 * unit reward scale. Linear Bernoulli and Laplace are exact and unbiased; for quadratic and
 * exponential with non-binary rewards the mean is not identifiable, so the plug-in inverse
 * p^-1(mean) is returned and *exact is set to 0 (label it approximate). The result is not
 * clipped: an unbiased estimate may leave [0,1]. LDPB_EINVAL if n == 0 or sum is not finite. */
LDPB_API ldpb_err ldpb_mech_debias_mean(const ldpb_mech *mech, double sum, uint64_t n,
                                        double *mu_hat, int *exact);

/* A (1 - delta) confidence radius on the unit scale for the de-biased mean of n reports:
 * Hoeffding scaled by 1/s for Bernoulli, Hoeffding plus Bernstein for Laplace. */
LDPB_API ldpb_err ldpb_mech_debias_radius(const ldpb_mech *mech, uint64_t n, double delta,
                                          double *radius);

/* Names used on the command line, in CSV and in config files: "linear", "quadratic",
 * "exponential", "laplace". kind_name returns "unknown" for other values. */
LDPB_API const char *ldpb_mech_kind_name(ldpb_mech_kind kind);
LDPB_API ldpb_err ldpb_mech_kind_from_name(const char *name, ldpb_mech_kind *kind);

#ifdef __cplusplus
}
#endif

#endif
