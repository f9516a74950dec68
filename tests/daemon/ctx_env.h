/* The easy linear instance of the contextual end-to-end test and its calibration: K arms whose
 * features are independent uniform directions of the positive orthant of R^d (unit norm), and
 * reward y = <theta, x> + 0.1 N(0, 1) clipped to [0, 1] with theta = e_1 (so ||theta|| = 1 = S
 * and the mean reward x_1 lies in [0, 1]). Regret is against the best arm of each round. */
#ifndef LDPB_TEST_CTX_ENV_H
#define LDPB_TEST_CTX_ENV_H

#include <math.h>
#include <stdint.h>

#include "rand.h"

#define CTX_K 5
#define CTX_D 3

/* Draws the K x d feature set of a round into x (row-major). */
static inline void ctx_env_features(agg_rand *r, double x[CTX_K * CTX_D])
{
    for (int a = 0; a < CTX_K; a++) {
        double s = 0.0;
        for (int j = 0; j < CTX_D; j++) {
            double g = fabs(agg_rand_normal(r));
            x[a * CTX_D + j] = g;
            s += g * g;
        }
        s = sqrt(s);
        for (int j = 0; j < CTX_D; j++)
            x[a * CTX_D + j] = s > 0.0 ? x[a * CTX_D + j] / s : (j == 0);
    }
}

/* The reward of arm a's features, and the regret of choosing a. */
static inline double ctx_env_reward(agg_rand *r, const double *xa)
{
    double y = xa[0] + 0.1 * agg_rand_normal(r);
    return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
}

static inline double ctx_env_regret(const double x[CTX_K * CTX_D], uint32_t a)
{
    double best = 0.0;
    for (int i = 0; i < CTX_K; i++)
        if (x[i * CTX_D] > best)
            best = x[i * CTX_D];
    return best - x[a * CTX_D];
}

#endif
