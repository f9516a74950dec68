/* Private Follow-The-Approximate-Leader (Smith & Thakurta 2013, "ST13"), for learning with p
 * experts over the probability simplex, with central pure eps-DP under continual observation
 * (one whole loss vector replaced; adaptive adversaries allowed, ST13 Thms 3 and 5).
 *
 * PFTAL is not a K-armed choose/observe policy: in the full-information game it sees the whole
 * loss vector of every round, and in the bandit game it plays a point of the simplex. So it has
 * its own game loop here (agg_pftal_run_trial) rather than an entry in the policy registry; the
 * simulator calls that loop for the smith2013 presets (docs/sim.md).
 *
 * Full information (ST13 Alg. 1, run on regularised losses as in their App. C): the round-t loss
 * is linear, f_t(w) = <c_t, w> with c_t in [0,1]^p, and PFTAL runs on
 * h_t(w) = f_t(w) + (H/2)||w||^2, which is H-strongly convex with gradient c_t + H w_t at the
 * played point; its L2 norm is at most L = sqrt(p) + H on the simplex. The gradients go into the
 * vector tree (vtree.h) with that bound, and the next point is the leader on the quadratic
 * surrogates, in closed form
 *     w_{t+1} = Proj_simplex( wbar_t - v_hat_t / (H t) ),
 * wbar_t the mean of w_1..w_t and v_hat_t the tree's release. The first point is the barycentre.
 * (ST13 Alg. 1 prints "Output w_t" after computing w_{t+1}; w_{t+1} is played.)
 *
 * Bandit (ST13 §3, one-point gradient estimate of Flaxman, Kalai and McMahan): the simplex has no
 * interior in R^p, so the learner works in its affine hull, the (p-1)-dimensional plane
 * sum(w) = 1, re-centred at the barycentre c = 1/p. There it contains the ball of radius
 * r = 1/sqrt(p (p - 1)) (the inscribed ball) and lies in the ball of radius sqrt((p - 1)/p). With
 * smoothing radius beta < r and xi = beta / r, the centres stay in the shrunk set
 * C_xi = c + (1 - xi)(simplex - c), so the played point w_hat_t = w~_t + beta u_t, u_t uniform on
 * the unit sphere of the plane, is in the simplex. The learner samples an arm I_t from w_hat_t and
 * sees only that arm's loss c_t[I_t], an unbiased estimate of <c_t, w_hat_t>; the value fed to the
 * estimate is h = c_t[I_t] + (H/2)||w_hat_t||^2 in [0, B], B = 1 + H/2, and the gradient estimate
 * g_t = ((p - 1)/beta) h u_t has norm at most (p - 1) B / beta, the tree's bound. The next centre
 * is Proj_{C_xi}(mean(w~_1..w~_t) - v_hat_t / (H t)). Euclidean projection commutes with the
 * homothety about c, so Proj_{C_xi}(y) = c + (1 - xi) (Proj_simplex(c + (y - c)/(1 - xi)) - c).
 * The tree runs in R^p: a component of the noise along (1, ..., 1) leaves the projection onto the
 * simplex unchanged (the projection is invariant under adding a multiple of that vector).
 *
 * The direction u_t and the arm I_t are the algorithm's own randomness (an agg_rand), not privacy
 * noise; the privacy noise is the tree's, from agg_noise. epsilon = INFINITY runs the same
 * learner without noise: the nonprivate FTAL (FTRL with a quadratic regulariser) baseline. */
#ifndef LDPB_AGG_PFTAL_H
#define LDPB_AGG_PFTAL_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "rand.h"
#include "statefmt.h"
#include "vtree.h"

#define AGG_PFTAL_MAX_P 1024u

typedef enum agg_pftal_mode { AGG_PFTAL_FULL = 1, AGG_PFTAL_BANDIT = 2 } agg_pftal_mode;

typedef struct agg_pftal_params {
    agg_pftal_mode mode;
    uint32_t p;       /* experts (arms), >= 2 */
    uint64_t horizon; /* T >= 1: the tree's size */
    double epsilon;   /* > 0; INFINITY: no noise */
    double h;         /* strong convexity H of the regularised losses, > 0 and finite */
    double beta;      /* bandit only: smoothing radius in (0, r), r = 1/sqrt(p (p - 1)) */
} agg_pftal_params;

/* Euclidean projection of y[0..n-1] onto the probability simplex, exact, O(n log n): sort y
 * descending, find the largest j with u_j - (sum_{i<=j} u_i - 1)/j > 0, shift by that threshold
 * and clip at 0 (Held, Wolfe and Crowder 1974; Duchi et al. 2008, Fig. 1). scratch holds n doubles;
 * out may equal y. Non-finite inputs give a NaN output. */
void agg_simplex_project(const double *y, uint32_t n, double *out, double *scratch);

/* The inscribed radius 1/sqrt(p (p - 1)) of the simplex in its plane. */
double agg_pftal_inner_radius(uint32_t p);
/* The tree's L2 bound for these parameters: sqrt(p) + H (full), (p - 1)(1 + H/2)/beta (bandit). */
double agg_pftal_l2_bound(const agg_pftal_params *prm);

/* Fills prm->h (and prm->beta for the bandit) from mode, p, horizon and epsilon, the choice of
 * the smith2013 presets (docs/sim.md). ST13 fix these only up to constants; ours balance the two
 * terms of the regret of FTAL on regularised linear losses, H T (the regulariser's cost) against
 * L (L + N) / H (the gradients' and the tree noise's), with L the gradient bound without H and
 * N = 2 L sqrt(p (p + 1)) Lv^1.5 / eps the scale of the norm of the noise in a release (Lv nodes):
 *     H = sqrt(L (L + N) / T),
 * and the bandit's beta = r min(1/2, 4 T^(-1/4)), the rate of ST13 Thm 6 for an adaptive
 * adversary (a Bernoulli stream is oblivious, but the regularised general-convex case of their §3
 * is O~(T^{3/4}) either way), with the bandit's H divided by 10. The constants 4 and 1/10 are
 * ours, from a nonprivate pilot at p = 4, T = 10^5 (docs/sim.md): with 1 and 1 the learner barely
 * leaves the barycentre at that scale. No-op on NULL or an invalid p or horizon. */
void agg_pftal_tune(agg_pftal_params *prm);

typedef struct agg_pftal agg_pftal;

/* Validates and creates. Errors with a message naming the parameter: LDPB_EINVAL (NULL, NaN,
 * unknown mode), LDPB_ERANGE (p outside [2, AGG_PFTAL_MAX_P], horizon 0, epsilon <= 0, H <= 0 or
 * infinite, bandit beta outside (0, r)), LDPB_ENOMEM. */
ldpb_err agg_pftal_new(agg_pftal **out, const agg_pftal_params *prm, char errmsg[AGG_ERRMSG_MAX]);
void agg_pftal_free(agg_pftal *f);

/* The point to play next (full information) or the centre w~_t (bandit): p doubles. */
const double *agg_pftal_point(const agg_pftal *f);
uint64_t agg_pftal_rounds(const agg_pftal *f);

/* Full information: the loss vector c[0..p-1] of the round, each in [0, 1], of the point
 * agg_pftal_point played. LDPB_EINVAL (NULL, NaN, wrong mode), LDPB_ERANGE (a loss outside
 * [0, 1]), LDPB_ESTATE after `horizon` rounds. Nothing changes on error. */
ldpb_err agg_pftal_observe_full(agg_pftal *f, agg_noise *noise, const double *c);

/* Bandit: draws u_t and the played point w_hat_t (written to w_hat, p doubles, may be NULL),
 * samples the arm from it and returns the arm in *arm. LDPB_EINVAL (NULL, wrong mode),
 * LDPB_ESTATE after `horizon` rounds or if a played point awaits its loss. */
ldpb_err agg_pftal_play_bandit(agg_pftal *f, agg_rand *rnd, double *w_hat, uint32_t *arm);
/* Bandit: the loss in [0, 1] of the arm just played. LDPB_EINVAL, LDPB_ERANGE, LDPB_ESTATE (no
 * point played). */
ldpb_err agg_pftal_observe_bandit(agg_pftal *f, agg_noise *noise, double loss);

/* State: mode, p, horizon, epsilon, H, beta, rounds, the pending flag, the point, the sum of the
 * points, the pending direction and played point, then the tree. Restore needs a learner with
 * the same parameters and checks every field (feasible point, finite sums): LDPB_ECORRUPT, and
 * the learner is unchanged. */
void agg_pftal_save(const agg_pftal *f, agg_wbuf *w);
ldpb_err agg_pftal_restore(agg_pftal *f, agg_rbuf *r);

/* ---- the game of the smith2013 presets ------------------------------------------------------ */

/* Stochastic experts: expert i's loss in round t is Bernoulli(means[i]), drawn for every expert
 * every round from the trial's environment stream before the learner moves (so the learners of
 * a trial face the same losses, and the full-information learner sees all of them). Regret is
 * the pseudo-regret sum_t <means, w_t> - t min(means), with w_t the played point (full) or the
 * played point w_hat_t (bandit: the arm is sampled from it). */
typedef struct agg_pftal_game {
    agg_pftal_params params;
    const double *means;         /* p values in [0, 1] */
    const uint64_t *checkpoints; /* strictly increasing in [1, horizon], last == horizon */
    size_t n_checkpoints;
} agg_pftal_game;

/* Runs trial `trial`: regret[j] after checkpoints[j] rounds. Streams as the engine's (sim.h):
 * ENV for losses, POLICY for u_t and arms, NOISE (AGG_NOISE_FAST) for the tree. Errors with a
 * message. Thread-safe for distinct regret arrays. */
ldpb_err agg_pftal_run_trial(const agg_pftal_game *g, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                             uint64_t trial, double *regret, char errmsg[AGG_ERRMSG_MAX]);

#endif
