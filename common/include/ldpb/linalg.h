/* The small dense linear algebra LinUCB needs, shared by the aggregator's LinUCB (central mode)
 * and the device's model (ldpb/ctxmodel.h, local mode), so the two decide with the same
 * arithmetic in the same order. Internal to the build: not installed, not part of the client
 * library's API (no LDPB_API; the installed library keeps these symbols local). */
#ifndef LDPB_LINALG_H
#define LDPB_LINALG_H

#include <stddef.h>
#include <stdint.h>

/* In-place lower Cholesky factor of the n x n row-major symmetric matrix a (the strict upper
 * triangle is left as it was): 0, or -1 if a is not numerically positive definite. The
 * Cholesky-Banachiewicz loop: at d = 10 it costs about a tenth of GSL's recursive
 * gsl_linalg_cholesky_decomp1 through the reference BLAS (measured in the aggregator's LinUCB). */
int ldpb_linalg_cholesky(double *a, uint32_t n);

/* Given the lower factor Lf of V (d x d, row-major) and u (d): fills inv_diag[i] = 1 / Lf_ii and
 * theta = V^-1 u (forward then backward substitution, w is d scratch), and returns ln det V. */
double ldpb_linalg_chol_solve(const double *Lf, uint32_t d, const double *u, double *inv_diag,
                              double *w, double *theta);

/* LinUCB's optimistic index of action x under the factor: <theta, x> + beta ||x||_{V^-1}, with
 * ||x||_{V^-1}^2 = ||Lf^-1 x||^2 (w is d scratch). */
double ldpb_linalg_ucb_index(const double *Lf, const double *inv_diag, const double *theta,
                             double beta, const double *x, uint32_t d, double *w);

#endif
