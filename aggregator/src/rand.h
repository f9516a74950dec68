/* Randomness inside the aggregator.
 *
 * agg_rand is a fast non-cryptographic generator (xoshiro256++) for the *decisions* of a policy
 * (Thompson samples, tie breaks) and for simulated environments: neither is privacy noise, and a
 * simulation needs tens of millions of draws per second. It is always seeded explicitly, from an
 * ldpb_rng (system or seeded), never from the clock.
 *
 * agg_noise is the source of central-DP *privacy noise* (tree nodes, DP-SE epoch means, SVT
 * thresholds). In the service it is AGG_NOISE_SECURE: libsodium-keyed ChaCha20 through ldpb_rng
 * and the floating-point-safe grid Laplace of common/ (scaled). Simulations may choose
 * AGG_NOISE_FAST (textbook inverse-CDF Laplace from an agg_rand), which is acceptable in a
 * simulation only (docs/privacy.md 5.1 says why). */
#ifndef LDPB_AGG_RAND_H
#define LDPB_AGG_RAND_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

typedef struct agg_rand {
    uint64_t s[4];
} agg_rand;

/* Seeds from 32 bytes of `src` (never all-zero state). */
void agg_rand_seed(agg_rand *r, ldpb_rng *src);
/* Seeds deterministically from a 64-bit value through splitmix64 (tests). */
void agg_rand_seed_u64(agg_rand *r, uint64_t seed);

uint64_t agg_rand_u64(agg_rand *r);
/* Uniform in [0,1) with 53 bits; uniform in (0,1) for logs. */
double agg_rand_uniform(agg_rand *r);
double agg_rand_uniform_pos(agg_rand *r);
/* Unbiased integer in [0, bound), bound > 0. */
uint64_t agg_rand_below(agg_rand *r, uint64_t bound);
double agg_rand_normal(agg_rand *r);
/* out[j] ~ N(0, 1) for j < n: the same draws, in the same order, as n calls of agg_rand_normal,
 * with the generator state kept in registers across the batch (the contextual environment draws
 * d normals per candidate action). */
void agg_rand_normal_fill(agg_rand *r, double *out, size_t n);
/* Gamma(shape, 1), shape > 0 (Marsaglia-Tsang; shape < 1 by the boosting identity). */
double agg_rand_gamma(agg_rand *r, double shape);
/* Beta(a, b), a, b > 0. */
double agg_rand_beta(agg_rand *r, double a, double b);

/* The shape-dependent constants of the Gamma sampler, computed once (one sqrt) for a caller that
 * draws many times at the same shape: Thompson sampling keeps one per arm and parameter and
 * refreshes only the pulled arm's. Draws have the same law as agg_rand_gamma / agg_rand_beta. */
typedef struct agg_gamma_shape {
    double d, c;      /* Marsaglia-Tsang constants of the (boosted) shape */
    double k;         /* c^2 / 12, the constant of the sampler's squeeze */
    double inv_shape; /* 1 / shape when boosted (0 otherwise: unused) */
    int boost;        /* shape < 1: Gamma(shape + 1) * U^(1/shape) */
} agg_gamma_shape;

void agg_gamma_shape_init(agg_gamma_shape *g, double shape);
double agg_rand_gamma_shape(agg_rand *r, const agg_gamma_shape *g);
double agg_rand_beta_shapes(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b);
/* out[j] ~ Beta(a[j], b[j]) for j < n, drawn in that order: the same stream as n calls of
 * agg_rand_beta_shapes, with the generator state kept in registers across the batch. */
void agg_rand_beta_fill(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b, size_t n,
                        double *out);
/* The index of the largest of n >= 1 draws theta[j] ~ Beta(a[j], b[j]) (drawn as
 * agg_rand_beta_fill would), ties broken uniformly at random from the same generator: Thompson
 * sampling's choice without storing the draws, the comparisons overlapping the sampling. */
uint32_t agg_rand_beta_argmax(agg_rand *r, const agg_gamma_shape *a, const agg_gamma_shape *b,
                              uint32_t n);
/* Binomial(n, p): the number of successes of n Bernoulli(p) trials, exact law. */
uint64_t agg_rand_binomial(agg_rand *r, uint64_t n, double p);
/* Textbook Laplace(0, scale) by inversion: for simulations only (see above). */
double agg_rand_laplace(agg_rand *r, double scale);

typedef enum agg_noise_kind { AGG_NOISE_SECURE = 1, AGG_NOISE_FAST = 2 } agg_noise_kind;

typedef struct agg_noise agg_noise;

/* SECURE: draws from `rng` (borrowed; must outlive the noise source). FAST: draws from `fast`
 * (borrowed). Exactly one of them is used according to `kind`. */
ldpb_err agg_noise_new(agg_noise **out, agg_noise_kind kind, ldpb_rng *rng, agg_rand *fast);
void agg_noise_free(agg_noise *n);
agg_noise_kind agg_noise_get_kind(const agg_noise *n);
/* A Laplace(0, scale) draw, scale > 0 and finite. */
double agg_noise_laplace(agg_noise *n, double scale);
/* A standard normal draw, and a Gamma(shape, 1) draw (shape > 0 and finite; NaN otherwise), for
 * the matrix noise of joint-DP LinUCB (Gaussian entries; chi-square diagonals of the Bartlett
 * decomposition of a Wishart matrix). SECURE draws through GSL's samplers (Ziggurat normal,
 * Marsaglia-Tsang gamma) fed by the ChaCha20 stream; FAST draws from the agg_rand. These are
 * textbook floating-point samplers: unlike the Laplace above they are not snapped to a grid.
 * The served JDP releases do not use them: the Gaussian draws agg_noise_dgauss, the Wishart its
 * own 53-bit samplers on a grid (linucb.c; docs/privacy.md sec. 10.2, 10.3). */
double agg_noise_normal(agg_noise *n);
double agg_noise_gamma(agg_noise *n, double shape);

/* An integer Z with P(Z = z) proportional to exp(-z^2 / (2 sigma2)), sigma2 in [1, 2^56]: the
 * exact discrete Gaussian of common/ (Canonne, Kamath & Steinke 2020, Alg. 3; integer arithmetic
 * only, conditioned on |Z| < 2^62 / (floor(sqrt(sigma2)) + 1), which moves less than exp(-1900)
 * of the law). SECURE only: LDPB_EINVAL for a FAST source, a NULL argument or sigma2 out of
 * range. */
ldpb_err agg_noise_dgauss(agg_noise *n, uint64_t sigma2, int64_t *out);
/* Unbiased random rounding of x (|x| < 2^62) to floor(x) or floor(x) + 1, up with probability
 * x - floor(x) (to 2^-53), from either kind of source. LDPB_EINVAL for NULL, a non-finite x or
 * |x| >= 2^62. */
ldpb_err agg_noise_round(agg_noise *n, double x, int64_t *out);

/* A uniform draw in (0, 1) from the same source (SECURE: 53 bits of the ChaCha20 stream, 0
 * redrawn): the building block of the vector tree's Gamma radius and Gaussian direction. */
double agg_noise_uniform_pos(agg_noise *n);

/* Releases x plus Laplace noise of scale `scale`, where `sens` bounds how far one individual's
 * data can move x (so the release is (sens/scale)-DP for that individual). FAST: x + Laplace,
 * exactly as x + agg_noise_laplace(n, scale) (simulations only). SECURE: the floating-point-safe
 * release of docs/privacy.md 5.7: x is rounded to the nearest point of a power-of-two grid and
 * exact discrete Laplace noise on the same grid (common/'s sampler) is added, so *out is an exact
 * multiple of that grid whose low bits carry nothing about x; the rounding is paid for with a noise
 * scale very slightly above `scale`, never with epsilon. LDPB_EINVAL for scale (or, SECURE, sens)
 * <= 0 or not finite, or (SECURE) a non-finite x; LDPB_ERANGE if |x| is beyond 2^51 grid steps or
 * no grid mechanism meets the bound for this shape; LDPB_ENOMEM. */
ldpb_err agg_noise_release(agg_noise *n, double x, double sens, double scale, double *out);

#endif
