/* The model a device chooses from in the local contextual mode: the aggregator's sum of
 * privatized (x, y) statistics S (packed as in ldpb/ctxstat.h), the regulariser shift, and the
 * confidence width beta. The device factorises V = S_xx + shift I, estimates theta = V^-1 S_xy,
 * and picks argmax_a <theta, x_a> + beta ||x_a||_{V^-1} over its own K feature rows (LinUCB on
 * released statistics, Shariff & Sheffet 2018, Alg. 1). The aggregator runs the same code in
 * simulations, so device and simulator decide identically.
 *
 * Not thread-safe (scratch space inside); build one per thread. */
#ifndef LDPB_CTXMODEL_H
#define LDPB_CTXMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ldpb_ctxmodel ldpb_ctxmodel;

/* d in [1, LDPB_CTXSTAT_D_MAX]. */
LDPB_API ldpb_err ldpb_ctxmodel_new(ldpb_ctxmodel **out, uint32_t d);
LDPB_API void ldpb_ctxmodel_free(ldpb_ctxmodel *m);

/* Loads a model: stats (LDPB_CTXSTAT_VALUES(d) finite values), shift >= 0 and beta >= 0 finite.
 * Factorises V; if the noise left V indefinite, adds the smallest ridge (doubling from 1e-9 of
 * the largest diagonal) that makes it positive definite and counts it in *repaired (may be NULL;
 * set to 1 when a ridge was added, else 0) -- deterministic, so every device and the simulator
 * agree. LDPB_EINVAL for bad values, LDPB_ESTATE if no ridge up to 2^60 times the start helps. */
LDPB_API ldpb_err ldpb_ctxmodel_load(ldpb_ctxmodel *m, const double *stats, size_t n_stats,
                                     double shift, double beta, int *repaired);

/* Chooses among n_actions rows of x (row-major, d finite values each): the index maximising the
 * UCB, ties broken uniformly at random from rng; *ties (may be NULL) = number of maximisers.
 * LDPB_ESTATE before a successful load, LDPB_EINVAL for NULL or non-finite input, LDPB_ERANGE for
 * n_actions == 0. */
LDPB_API ldpb_err ldpb_ctxmodel_choose(ldpb_ctxmodel *m, ldpb_rng *rng, const double *x,
                                       uint32_t n_actions, uint32_t *arm, uint32_t *ties);

/* ln det V of the loaded model (after any repair); beta_t of Shariff & Sheffet 2018, Prop. 4 is a
 * function of it, so the aggregator loads the model it hands out to compute beta. */
LDPB_API double ldpb_ctxmodel_logdet(const ldpb_ctxmodel *m);

/* The current estimate theta (d values). */
LDPB_API ldpb_err ldpb_ctxmodel_theta(const ldpb_ctxmodel *m, double *theta);

#ifdef __cplusplus
}
#endif

#endif
