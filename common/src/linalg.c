/* LinUCB's dense linear algebra (ldpb/linalg.h). The floating-point order of every loop is the
 * one the aggregator's LinUCB has always used: its committed results reproduce bit for bit. */
#include "ldpb/linalg.h"

#include <math.h>

int ldpb_linalg_cholesky(double *a, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        double *rj = a + (size_t)j * n;
        double s = rj[j];
        for (uint32_t k = 0; k < j; k++)
            s -= rj[k] * rj[k];
        if (!(s > 0.0) || !isfinite(s))
            return -1;
        double ljj = sqrt(s), inv = 1.0 / ljj;
        rj[j] = ljj;
        for (uint32_t i = j + 1; i < n; i++) {
            double *ri = a + (size_t)i * n;
            double t = ri[j];
            for (uint32_t k = 0; k < j; k++)
                t -= ri[k] * rj[k];
            ri[j] = t * inv;
        }
    }
    return 0;
}

double ldpb_linalg_chol_solve(const double *Lf, uint32_t d, const double *u, double *inv_diag,
                              double *w, double *theta)
{
    for (uint32_t i = 0; i < d; i++)
        inv_diag[i] = 1.0 / Lf[i * d + i];
    double ld = 0.0;
    for (uint32_t i = 0; i < d; i++)
        ld += log(Lf[i * d + i]);
    for (uint32_t i = 0; i < d; i++) {
        double acc = u[i];
        for (uint32_t j = 0; j < i; j++)
            acc -= Lf[i * d + j] * w[j];
        w[i] = acc * inv_diag[i];
    }
    for (uint32_t i = d; i-- > 0;) {
        double acc = w[i];
        for (uint32_t j = i + 1; j < d; j++)
            acc -= Lf[j * d + i] * theta[j];
        theta[i] = acc * inv_diag[i];
    }
    return 2.0 * ld;
}

double ldpb_linalg_ucb_index(const double *Lf, const double *inv_diag, const double *theta,
                             double beta, const double *x, uint32_t d, double *w)
{
    double mean = 0.0, q = 0.0;
    for (uint32_t i = 0; i < d; i++) {
        double acc = x[i];
        for (uint32_t j = 0; j < i; j++)
            acc -= Lf[i * d + j] * w[j];
        double wi = acc * inv_diag[i];
        w[i] = wi;
        q += wi * wi;
        mean += theta[i] * x[i];
    }
    return mean + beta * sqrt(q);
}
