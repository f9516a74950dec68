/* Continual counters for central differential privacy: they release a private running sum after
 * every input of a stream whose items lie in a known interval [lo, hi] (docs/derivations.md 11).
 *
 * - agg_tree: the binary tree mechanism for a known horizon T. Lv = ceil(log2(T + 1)) levels, each
 *   completed node carries Lap((hi - lo) Lv / eps) noise drawn exactly once, when the node
 *   completes; the release at t sums popcount(t) noisy dyadic p-sums. O(1) amortised per input.
 * - agg_logmech: the logarithmic mechanism (noise added at powers of two only).
 * - agg_hybrid: the hybrid mechanism for an unknown horizon: a logarithmic mechanism at eps/2
 *   plus, between 2^k and 2^(k+1), a fresh binary tree at eps/2.
 *
 * Privacy noise comes only from agg_noise_laplace(). Each input enters at most Lv tree nodes (one
 * per level), so a tree is eps-DP for inputs differing by at most hi - lo in one place.
 *
 * The exact (un-noised) values are kept because the mechanism needs them; the accessors that
 * return them exist for tests and state files and must never be released to an observer.
 *
 * Not thread-safe: one caller per counter. */
#ifndef LDPB_AGG_COUNTER_H
#define LDPB_AGG_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "rand.h"
#include "statefmt.h"

/* Enough levels for any 64-bit horizon. */
#define AGG_TREE_MAX_LEVELS 64

/* Lv = ceil(log2(horizon + 1)), the number of bits of `horizon` (0 for horizon 0). */
uint32_t agg_tree_levels(uint64_t horizon);

/* ---- binary tree mechanism (Chan, Shi & Song 2010) ---------------------------------------- */

typedef struct agg_tree agg_tree;

/* Creates a tree for up to `horizon` inputs in [lo, hi] with total budget `epsilon`.
 * Errors: LDPB_EINVAL for NULL or a non-finite parameter; LDPB_ERANGE for horizon 0, epsilon <= 0
 * or lo >= hi; LDPB_ENOMEM. Free with agg_tree_free(). */
ldpb_err agg_tree_new(agg_tree **out, uint64_t horizon, double epsilon, double lo, double hi);
/* Accepts NULL. Wipes the state before freeing. */
void agg_tree_free(agg_tree *t);

/* Feeds the next input z: completes exactly one node (the level of the lowest set bit of the new
 * count), draws its noise once from `noise`, and sets *release (may be NULL) to the private
 * prefix sum. Errors: LDPB_EINVAL for NULL tree/noise or a NaN z; LDPB_ERANGE if z is outside
 * [lo, hi]; LDPB_ESTATE once `horizon` inputs were fed. On error nothing changes. */
ldpb_err agg_tree_push(agg_tree *t, agg_noise *noise, double z, double *release);

/* The private prefix sum after the inputs fed so far (0 before the first input). O(1). */
double agg_tree_release(const agg_tree *t);
/* Inputs fed so far. */
uint64_t agg_tree_count(const agg_tree *t);
uint64_t agg_tree_horizon(const agg_tree *t);
/* Levels Lv and the Laplace scale (hi - lo) Lv / eps of each node. */
uint32_t agg_tree_depth(const agg_tree *t);
double agg_tree_noise_scale(const agg_tree *t);
/* The exact prefix sum, as the sum of the exact p-sums the release uses (not private). */
double agg_tree_exact(const agg_tree *t);
/* The exact and noisy p-sums held at `level` (both 0 when the level's bit of the count is 0).
 * LDPB_ERANGE for level >= Lv. For tests and audits. */
ldpb_err agg_tree_node(const agg_tree *t, uint32_t level, double *exact, double *noisy);

/* Appends the state (statefmt.h, little-endian): horizon, count, epsilon, lo, hi, then per level
 * the exact and the noisy p-sum. */
void agg_tree_save(const agg_tree *t, agg_wbuf *w);
/* Reads one record saved by a tree created with the same parameters. Checks every field (same
 * parameters, count <= horizon, finite values, empty levels zero, exact p-sums within their
 * range): LDPB_ECORRUPT otherwise, and the tree is left unchanged (the reader may have advanced).
 * LDPB_EINVAL for NULL. */
ldpb_err agg_tree_restore(agg_tree *t, agg_rbuf *r);

/* ---- logarithmic mechanism (Chan, Shi & Song 2010) ---------------------------------------- */

/* Caller-owned. Release L(t) changes only when t is a power of two. */
typedef struct agg_logmech {
    uint64_t count;  /* inputs fed */
    double epsilon;  /* budget; noise Lap((hi - lo) / epsilon) */
    double lo, hi;   /* input range */
    double exact;    /* exact running sum (not private) */
    double noisy;    /* running sum plus the noise drawn so far */
    double released; /* beta at the last power of two: the release L(t) */
} agg_logmech;

/* Errors: LDPB_EINVAL for NULL or non-finite; LDPB_ERANGE for epsilon <= 0 or lo >= hi. */
ldpb_err agg_logmech_init(agg_logmech *m, double epsilon, double lo, double hi);
/* Feeds z in [lo, hi]; draws one Laplace when the new count is a power of two. *release (may be
 * NULL) gets L(t). Errors as agg_tree_push (LDPB_ESTATE at count 2^64 - 1). */
ldpb_err agg_logmech_push(agg_logmech *m, agg_noise *noise, double z, double *release);

/* ---- hybrid mechanism (Chan, Shi & Song 2010) --------------------------------------------- */

typedef struct agg_hybrid agg_hybrid;

/* Creates a hybrid counter (unbounded horizon) for inputs in [lo, hi] with total budget eps:
 * a logarithmic mechanism at eps/2 and, for inputs t in (2^k, 2^(k+1)), a fresh binary tree
 * B_k at eps/2 fed with index t - 2^k. B_k receives at most 2^k - 1 inputs, so its horizon is
 * 2^k - 1 and it has k levels (the smallest Lv that covers every index it releases,
 * docs/derivations.md 11). Errors as agg_tree_new. Free with agg_hybrid_free(). */
ldpb_err agg_hybrid_new(agg_hybrid **out, double epsilon, double lo, double hi);
void agg_hybrid_free(agg_hybrid *h);
/* Feeds z: H(t) = L(t) at powers of two, else L(2^k) + B_k(t - 2^k). Errors as agg_tree_push
 * (LDPB_ESTATE at count 2^64 - 1). */
ldpb_err agg_hybrid_push(agg_hybrid *h, agg_noise *noise, double z, double *release);
double agg_hybrid_release(const agg_hybrid *h);
uint64_t agg_hybrid_count(const agg_hybrid *h);
/* The exact running sum (not private). */
double agg_hybrid_exact(const agg_hybrid *h);
/* Variance of H(t) - S(t) after `count` inputs, from the construction:
 * (k+1) 2 (2 Delta/eps)^2 for the logarithmic part at 2^k <= count, plus
 * popcount(count - 2^k) 2 (2 Delta k/eps)^2 for B_k. */
double agg_hybrid_error_variance(uint64_t count, double epsilon, double delta);

/* As agg_tree_save / agg_tree_restore: the logarithmic part, then the current B_k. */
void agg_hybrid_save(const agg_hybrid *h, agg_wbuf *w);
ldpb_err agg_hybrid_restore(agg_hybrid *h, agg_rbuf *r);

#endif
