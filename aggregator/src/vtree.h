/* Tree-based aggregation for vectors (Smith & Thakurta 2013, §2.1 and App. A): the continual
 * release of prefix sums v_t = z_1 + ... + z_t of vectors z_t in R^p with ||z_t||_2 <= L'.
 *
 * The dyadic structure is the scalar binary tree's (counter.h): Lv = ceil(log2(T + 1)) levels, one
 * node completed per input, the release at t the sum of popcount(t) noisy nodes. Each input enters
 * at most Lv nodes, so each node gets the budget eps0 = eps / Lv. Replacing one z_t moves a node
 * sum by at most 2 L' in L2 norm, and each node carries the "L2-Laplace" (K-norm) noise with
 * density proportional to exp(-eps0 ||b||_2 / (2 L')), which is eps0-DP for that sensitivity by the
 * triangle inequality. ST13 state the norm is Gamma distributed but not the density; ours is
 * sampled as b = r u with r ~ Gamma(shape p, scale 2 L' Lv / eps) and u uniform on the unit
 * sphere, so E||b||^2 = p (p + 1) (2 L' Lv / eps)^2 and each coordinate has variance E||b||^2 / p.
 *
 * Privacy noise comes only from the agg_noise source (the secure generator in the service; a
 * seeded one in simulations and tests). The radius and direction are computed in floating point
 * from its uniforms (logarithms, Box-Muller), without the grid construction that protects the
 * scalar Laplace of docs/privacy.md §5 against floating-point attacks (Mironov 2012); nothing in
 * the daemon uses this tree yet, and a served PFTAL would need such a construction first. epsilon =
 * INFINITY builds the same tree without noise, the nonprivate baseline of the simulator; it draws
 * nothing.
 *
 * The exact node sums are kept (the mechanism needs them); accessors that return them are for
 * tests and state files, never for an observer. Not thread-safe. */
#ifndef LDPB_AGG_VTREE_H
#define LDPB_AGG_VTREE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "rand.h"
#include "statefmt.h"

/* The largest dimension accepted: far beyond any experts problem the simulator runs, and it keeps
 * the state's size (2 Lv p doubles) bounded for a restore of untrusted bytes. */
#define AGG_VTREE_MAX_DIM 4096u

typedef struct agg_vtree agg_vtree;

/* Creates a tree for up to `horizon` vectors in R^dim of L2 norm at most `l2_bound`, with total
 * budget `epsilon` (INFINITY: no noise). Errors, with a message in errmsg (may be NULL):
 * LDPB_EINVAL for NULL out or a NaN parameter; LDPB_ERANGE for dim 0 or above AGG_VTREE_MAX_DIM,
 * horizon 0, epsilon <= 0, l2_bound <= 0 or not finite; LDPB_ENOMEM. */
ldpb_err agg_vtree_new(agg_vtree **out, uint32_t dim, uint64_t horizon, double epsilon,
                       double l2_bound, char errmsg[AGG_ERRMSG_MAX]);
/* Accepts NULL. Wipes the state before freeing. */
void agg_vtree_free(agg_vtree *t);

/* Feeds z[0..dim-1]: completes one node, draws its noise once (dim + dim uniforms from `noise`,
 * which may be NULL only when epsilon is INFINITY) and updates the release. Errors:
 * LDPB_EINVAL for NULL tree/z, a missing noise source or a non-finite z[i]; LDPB_ERANGE if
 * ||z||_2 > l2_bound (1e-9 relative slack for rounding); LDPB_ESTATE once `horizon` vectors were
 * fed. On error nothing changes. */
ldpb_err agg_vtree_push(agg_vtree *t, agg_noise *noise, const double *z);

/* The private prefix sum after the inputs so far (zeros before the first): dim doubles, valid
 * until the next push or restore. */
const double *agg_vtree_release(const agg_vtree *t);
/* The exact prefix sum into out[0..dim-1] (not private). */
void agg_vtree_exact(const agg_vtree *t, double *out);
uint32_t agg_vtree_dim(const agg_vtree *t);
uint64_t agg_vtree_count(const agg_vtree *t);
uint32_t agg_vtree_depth(const agg_vtree *t);
/* The scale 2 L' Lv / eps of each node's Gamma radius (0 without noise). */
double agg_vtree_noise_scale(const agg_vtree *t);

/* Appends the state: dim, horizon, count, epsilon, l2_bound, then per level the exact and the
 * noisy node sums. */
void agg_vtree_save(const agg_vtree *t, agg_wbuf *w);
/* Reads one record saved by a tree with the same parameters, checking every field (same
 * parameters, count <= horizon, finite values, empty levels zero, exact node sums within
 * 2^level L'): LDPB_ECORRUPT otherwise, and the tree is unchanged. LDPB_EINVAL for NULL. */
ldpb_err agg_vtree_restore(agg_vtree *t, agg_rbuf *r);

#endif
