/* Contextual linear bandits: LinUCB and the joint-DP LinUCB of Shariff & Sheffet 2018 (Alg. 1,
 * "LinUCB with changing perturbations"), with the tree mechanism over the (d+1)x(d+1) Gram
 * matrix of v = (x, y) and Wishart (SS18 sec. 4.1) or symmetric Gaussian (SS18 sec. 4.2) node
 * noise, each with its shift.
 *
 * Interface. A contextual policy cannot use the K-armed ops table (policy.h): each round brings a
 * decision set, one feature vector per action, and the policy learns from the chosen vector, not
 * from an arm index. So it has its own small interface with the same conventions (checked
 * configuration with a precise refusal, save/restore as versioned bytes that are untrusted input,
 * randomness through agg_policy_env: decisions from env->rand, privacy noise from env->noise):
 *
 *   agg_linucb_choose(p, env, x, n, &arm, &ties)   x is n x d, row-major: action i is x[i*d ..]
 *   agg_linucb_observe(p, env, x_arm, y)           the chosen action's vector and its reward
 *
 * Decisions. The chosen action maximises the optimistic index <theta~, x> + beta_t ||x||_{V^-1}.
 * The argmax is deterministic: its propensity is 1 when one action attains the maximum. Exact
 * ties are broken uniformly at random from env->rand (agg_argmax); `ties` returns how many
 * actions attained it, and the propensity of the logged choice is then exactly 1/ties.
 *
 * Privacy (JDP variants; central model: the aggregator sees contexts and rewards). Rewards are
 * clipped so that ||x||^2 + y^2 <= Ltilde^2 (SS18 sec. 3's bound on the data) and actions longer
 * than L are refused, so the stated noise is calibrated to the data actually summed. The tree
 * keeps m = 1 + ceil(log2 n) noise slots, one per level; a release sums the exact prefix of
 * (x, y)(x, y)^T and all m slots. A level's slot holds the noise of the tree node stored there
 * while its bit of the prefix count is set (a node completed draws a fresh sample). What it
 * holds while the bit is clear depends on the tree (agg_linucb_tree):
 *   binary  zero: the release sums popcount(t) <= m node samples, SS18's binary mechanism
 *           (sec. 4.2). The Gaussian variant's bounds (Prop. 11) and its +2 Upsilon shift are
 *           computed for m samples and hold for any sum of at most m, so this is its default.
 *   padded  an independent data-free sample, redrawn at every change of the level, so every
 *           release carries exactly m samples. Prop. 9 and the Wishart shift (Eq. (4)) are
 *           computed for exactly m samples and over-subtract from fewer, so the Wishart variant
 *           requires it; for the Gaussian variant it is available and only adds noise.
 * Either way each datum enters at most m nodes, each with its own noise (the privacy argument is
 * SS18's, per node). docs/privacy.md states the calibration.
 *
 * GSL: the repair of an indefinite release uses GSL's symmetric eigensolver, which reports
 * failures through GSL's error handler, whose default aborts. A program using these policies
 * calls gsl_set_error_handler_off() once at start (ldpb sim and the benches do); every GSL status
 * is then checked here. */
#ifndef LDPB_AGG_LINUCB_H
#define LDPB_AGG_LINUCB_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "policy.h"
#include "rand.h"

typedef enum agg_linucb_variant {
    AGG_LINUCB_PLAIN = 1,    /* "linucb": regulariser rho I, no noise */
    AGG_LINUCB_WISHART = 2,  /* "jdp-linucb-wishart": Wishart nodes, SS18 Eq. (4) shift */
    AGG_LINUCB_GAUSSIAN = 3, /* "jdp-linucb-gaussian": symmetric Gaussian nodes, 2 Upsilon shift */
} agg_linucb_variant;

/* How the tree fills the slots of levels that hold no node (above). AUTO resolves to BINARY for
 * the Gaussian variant and PADDED for the Wishart variant; BINARY with Wishart is refused. */
typedef enum agg_linucb_tree {
    AGG_LINUCB_TREE_AUTO = 0,
    AGG_LINUCB_TREE_BINARY = 1, /* "binary": SS18's tree, popcount(t) samples per release */
    AGG_LINUCB_TREE_PADDED = 2, /* "padded": exactly m samples per release */
} agg_linucb_tree;

const char *agg_linucb_tree_name(agg_linucb_tree t);

#define AGG_LINUCB_D_MAX       64u
#define AGG_LINUCB_ACTIONS_MAX 65536u
#define AGG_LINUCB_HORIZON_MAX (1ULL << 40)

typedef struct agg_linucb_config {
    agg_linucb_variant variant;
    uint32_t d;       /* feature dimension, [1, AGG_LINUCB_D_MAX] */
    uint64_t horizon; /* n, [1, AGG_LINUCB_HORIZON_MAX]: the tree's depth; observe refuses more */
    double epsilon;   /* JDP epsilon, (0, LDPB_EPSILON_MAX] (JDP variants) */
    double delta;     /* JDP delta, (0, 1) (JDP variants) */
    double alpha;     /* failure probability of the confidence sets, (0, 1); 0 means 1/n */
    double L;         /* bound on every action's norm, > 0 */
    double Ltilde;    /* privacy bound: ||x||^2 + y^2 <= Ltilde^2, >= L; 0 means sqrt(L^2 + 1) */
    double S;         /* bound on ||theta*||, > 0 */
    double sigma;     /* sub-Gaussian parameter of the reward noise, > 0 */
    double rho;       /* LinUCB's regulariser, > 0 (plain only) */
    agg_linucb_tree tree; /* JDP variants: AUTO (default), BINARY or PADDED */
    /* jdp-linucb-gaussian only: the served, floating-point-safe release of docs/privacy.md sec.
     * 10.2 (1; the daemon sets it): every entry of (x, y)(x, y)^T is randomly rounded to the
     * grid g, the sums are kept in integers and each node's noise is the exact discrete Gaussian
     * with variance parameter sigma2_units (2 sigma2_units on the diagonal) in grid units, drawn
     * from an AGG_NOISE_SECURE source (others are refused at the first draw). 0: floating-point
     * normals (the simulator's fast path, not for serving).
     * jdp-linucb-wishart: the served grid release of sec. 10.3 (the daemon sets it): each datum
     * v is randomly rounded to the grid vgrid (norm kept <= Ltilde exactly), the tree's node
     * data sums are kept in integers (units vgrid^2), each node's Wishart sample is drawn in
     * floating point from the secure stream (53-bit Box-Muller normals, Marsaglia-Tsang
     * chi-squares), and the node is released once, as round(node sum + sample) to the coarse
     * grid g computed exactly in integers; a release is the integer sum of its nodes times g. */
    int exact;
    /* Tests only: a JDP variant whose node noise is zero and whose regulariser and bounds are
     * LinUCB's (H = rho I, rho_min = rho_max = rho, gamma = 0): the private code path (tree,
     * slots, clipping) without noise, which must decide exactly as LinUCB. */
    int zero_noise;
} agg_linucb_config;

/* Defaults: plain, d 0 (must be set), horizon 0 (must be set), epsilon 1, delta 0.1, alpha 0,
 * L 1, Ltilde 0, S 1, sigma 1, rho 1, tree AUTO. */
void agg_linucb_config_init(agg_linucb_config *cfg);

/* The CLI / CSV names, and the variant of a name (0 if unknown). */
const char *agg_linucb_variant_name(agg_linucb_variant v);
agg_linucb_variant agg_linucb_variant_find(const char *name);

/* The constants a configuration implies (SS18 sec. 4; docs/privacy.md):
 *   m        1 + ceil(log2 n), noise slots per release
 *   k        Wishart degrees of freedom per node, d + 1 + ceil(28 ln(4/delta0) / eps0^2) (SS18
 *            sec. 4.1) with the per-node budget (eps0, delta0) = (eps_node, delta_node): SS18's
 *            (eps/sqrt(8 m ln(2/delta)), delta/(2m)), k then written d + 1 + ceil(224 m
 *            ln(8m/delta) ln(2/delta) / eps^2), unless that composes to more than eps
 *            (agg_linucb_wishart_eps_node); eps_total <= eps is the composed total
 *   sigma_noise  Gaussian per-node standard deviation, sqrt(16 m Ltilde^4 ln(4/delta)^2 / eps^2)
 *   upsilon  Gaussian operator-norm bound of the d x d block (SS18 Prop. 11)
 *   shift    added to the diagonal of the released d x d block: rho (plain), -c (Wishart, SS18
 *            Eq. (4); 0 when c <= 0, the unshifted bounds then apply), 2 upsilon (Gaussian)
 *   rho_min, rho_max, gamma   the accurate bounds of SS18 Def. 3 after the shift
 *   wishart_unshifted_*       Prop. 9's bounds before the shift (for reference and tests) */
typedef struct agg_linucb_constants {
    uint32_t m;
    agg_linucb_tree tree; /* resolved: BINARY or PADDED (PADDED for plain, where it is moot) */
    double alpha, Ltilde;
    double k, sigma_noise, upsilon, shift;
    double eps_node, delta_node, eps_total; /* Wishart: per-node budget and its composed total */
    /* Gaussian: the zCDP of the whole tree (m nodes per datum) for add/remove and for replace
     * neighbours, and the epsilon at delta that each converts to (Bun & Steinke 2016, Prop. 1.3:
     * rho + 2 sqrt(rho ln(1/delta))); both are below epsilon. With exact, the discrete
     * calibration's (rounding included). */
    double rho_tree, rho_tree_replace, eps_zcdp, eps_zcdp_replace;
    /* exact (Gaussian): the grid step g (a power of two) and the integer variance parameter N
     * of each off-diagonal entry in grid units, N >= ((s/g) (1 + 2^-40 + (d+1) g / Ltilde^2))^2 */
    double grid;
    uint64_t sigma2_units;
    /* exact (Wishart, docs/privacy.md sec. 10.3): the data grid vgrid (a power of two; node data
     * sums are integers in units vgrid^2, grid is a power-of-two multiple of it), the tail bound
     * T on a node sample's entries / Ltilde^2 (a sample beyond it is redrawn), the bound
     * wishart_float_err on a sample entry's floating-point error under the sampler assumption
     * stated there, and delta_grid, what the floating-point sampler adds to delta (counted in
     * delta_total = delta + delta_grid). */
    double vgrid, wishart_tail, wishart_float_err, delta_grid, delta_total;
    double rho_min, rho_max, gamma;
    double wishart_unshifted_rho_min, wishart_unshifted_rho_max, wishart_unshifted_gamma;
} agg_linucb_constants;

/* Checks cfg and computes its constants. LDPB_EINVAL (unknown variant, NaN) or LDPB_ERANGE with
 * a message naming the variant, the field and its bound, e.g. "jdp-linucb-gaussian: delta 1.5
 * outside (0, 1)". errmsg may be NULL. */
ldpb_err agg_linucb_constants_of(const agg_linucb_config *cfg, agg_linucb_constants *out,
                                 char errmsg[AGG_ERRMSG_MAX]);

/* Advanced composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014, Thm 3.20) of m
 * (eps0, delta0)-DP nodes with slack delta' = delta/2: the total epsilon
 * sqrt(2 m ln(2/delta)) eps0 + m eps0 (e^eps0 - 1). */
double agg_linucb_wishart_eps_total(double m, double eps0, double delta);
/* The Wishart per-node epsilon: SS18's split eps/sqrt(8 m ln(2/delta)) when its total is at most
 * eps (always for eps up to about 2), otherwise the largest eps0 whose total is at most eps
 * (bisection; the total is increasing in eps0). Never above SS18's split. */
double agg_linucb_wishart_eps_node(double m, double eps, double delta);

/* SS18 Prop. 11's bounds for a noise matrix whose entries each have standard deviation (or
 * sub-Gaussian parameter) sd * sqrt(count), shifted by 2 Upsilon: Upsilon = sd sqrt(2 count)
 * (4 sqrt(d) + 2 l2n), rho_min = Upsilon, rho_max = 3 Upsilon, gamma = sqrt(1/Upsilon)
 * sqrt(count) sd (sqrt(d) + sqrt(2 l2n)), with l2n = ln(2n/alpha). The central Gaussian variant
 * calls it with (sigma_noise, m), the local contextual mode (ldp_linucb.c) with the per-report
 * parameter and the number of reports summed (docs/derivations.md says why the same bound
 * holds there). */
void agg_linucb_gaussian_bounds(double sd, double count, uint32_t d, double l2n, double *upsilon,
                                double *rho_min, double *rho_max, double *gamma);

/* beta_t of SS18 Prop. 4 in its data-dependent form, the square root clamped at 0:
 *   sigma sqrt(max(0, 2 ln(2/alpha) + logdet_v - d ln rho_min)) + S sqrt(rho_max) + gamma. */
double agg_linucb_beta(double sigma, double alpha, uint32_t d, double logdet_v, double rho_min,
                       double rho_max, double S, double gamma);

/* In-place lower Cholesky factor of the n x n row-major symmetric matrix a (the strict upper
 * triangle is left as it was): 0, or -1 if a is not numerically positive definite. The
 * Cholesky-Banachiewicz loop, used for the per-round refactorisation instead of GSL's
 * gsl_linalg_cholesky_decomp1, whose recursive path through the reference BLAS costs more than
 * the whole rest of a round at d = 10 (about 1.5 us against 0.15 us, measured); the tests check
 * it against GSL's factor. The loop is ldpb_linalg_cholesky (ldpb/linalg.h), which the device's
 * model of the local contextual mode shares, with the solve and the UCB index. */
int agg_linucb_cholesky(double *a, uint32_t n);

typedef struct agg_linucb agg_linucb;

ldpb_err agg_linucb_new(agg_linucb **out, const agg_linucb_config *cfg,
                        char errmsg[AGG_ERRMSG_MAX]);
void agg_linucb_free(agg_linucb *p);
const agg_linucb_config *agg_linucb_get_config(const agg_linucb *p);
const agg_linucb_constants *agg_linucb_get_constants(const agg_linucb *p);

/* Chooses among n (1..AGG_LINUCB_ACTIONS_MAX) actions x[0..n*d-1] (finite, each of norm <= L up
 * to a relative 1e-9). *ties (may be NULL) gets the number of actions that attained the maximum
 * index. JDP variants need env->noise (slots are drawn lazily at first use). LDPB_EINVAL for a
 * NULL argument or a non-finite entry, LDPB_ERANGE for n out of range or an action too long. */
ldpb_err agg_linucb_choose(agg_linucb *p, agg_policy_env *env, const double *x, uint32_t n,
                           uint32_t *arm, uint32_t *ties);

/* Records the chosen action's vector x_arm (d entries) and its reward y (finite). JDP variants
 * clip y to |y| <= sqrt(Ltilde^2 - ||x||^2). LDPB_ESTATE after n observations. */
ldpb_err agg_linucb_observe(agg_linucb *p, agg_policy_env *env, const double *x_arm, double y);

/* Rounds observed so far, and the rounds whose released d x d matrix was not positive definite
 * (Cholesky failed; the minimal extra ridge that restores definiteness was then added). For the
 * JDP variants SS18 bound their rate by alpha/(2n) per round. */
uint64_t agg_linucb_rounds(const agg_linucb *p);
uint64_t agg_linucb_cholesky_failures(const agg_linucb *p);

/* The d x d matrix V_t and the vector u~_t of the current release (what choose() factorises),
 * for tests: v is d*d row-major, u has d entries. Same errors as choose() for the noise. */
ldpb_err agg_linucb_release(agg_linucb *p, agg_policy_env *env, double *v, double *u);

/* The sum of the m noise slots, (d+1)x(d+1) row-major, for tests of the noise law (m node
 * samples with the padded tree, popcount(rounds) with the binary one). The Wishart grid release
 * (exact) keeps no noise apart from the data: there it is the release before the shift, which
 * is the noise alone before the first observation. */
ldpb_err agg_linucb_noise_sum(agg_linucb *p, agg_policy_env *env, double *out);

/* Adds the statistics of `src` (a policy of the same configuration) into `dst`, as if dst had
 * observed src's rounds too: M and the round count add (in floating point: the sum of the two
 * partial sums, which may differ from one running sum in its last bits). Only the non-private
 * variant: LDPB_ENOTSUP for a JDP one (its noise tree is indexed by the round), LDPB_EINVAL for
 * another configuration, LDPB_ERANGE where the rounds would pass the horizon or a sum would
 * overflow; dst is then unchanged. */
ldpb_err agg_linucb_merge(agg_linucb *dst, const agg_linucb *src);

/* Versioned bytes of the whole state (statistics, noise slots, counters), as policy.h's save:
 * LDPB_ERANGE with *len set when buf is NULL or too small. restore refuses (LDPB_ECORRUPT) bytes
 * of another variant or configuration, truncated or non-finite data. */
ldpb_err agg_linucb_save(const agg_linucb *p, uint8_t *buf, size_t cap, size_t *len);
ldpb_err agg_linucb_restore(agg_linucb *p, const uint8_t *buf, size_t len);

#endif
