/* Aggregator-side estimates from privatized reports (docs/derivations.md 5-6). They live in
 * common because they are the exact inverses of the mechanisms and must use the implemented
 * endpoints, not the nominal ones. */
#include <math.h>

#include "mech_internal.h"

ldpb_err ldpb_mech_debias_mean(const ldpb_mech *mech, double sum, uint64_t n, double *mu_hat,
                               int *exact)
{
    if (!mech || !mu_hat || n == 0 || !isfinite(sum))
        return LDPB_EINVAL;
    double mean = sum / (double)n;
    int is_exact = 1;
    double mu;
    double p0 = ldexp((double)mech->t0, -64);
    double s = ldexp((double)mech->t1, -64) - p0;
    switch (mech->opts.kind) {
    case LDPB_MECH_LAPLACE:
        mu = mean;
        break;
    case LDPB_MECH_LINEAR:
        mu = s > 0.0 ? (mean - p0) / s : NAN;
        break;
    case LDPB_MECH_QUADRATIC: {
        /* Plug-in inverse of p on [0,1]; the privatized mean is first held inside [p0, p1]. */
        is_exact = 0;
        double u = s > 0.0 ? (mean - p0) / s : 0.0;
        u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
        double a = mech->opts.kappa, b = 1.0 - mech->opts.kappa;
        if (fabs(a) < 1e-12) {
            mu = u / b;
        } else {
            /* a x^2 + b x - u = 0, the root in [0,1], written to avoid cancellation. */
            double disc = b * b + 4.0 * a * u;
            double denom = b + sqrt(disc > 0.0 ? disc : 0.0);
            mu = denom > 0.0 ? 2.0 * u / denom : 0.0; /* kappa = 1 and u = 0: the root is 0 */
        }
        break;
    }
    case LDPB_MECH_EXPONENTIAL: {
        is_exact = 0;
        double u = s > 0.0 ? (mean - p0) / s : 0.0;
        u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
        mu = log1p(u * mech->expm1_lambda) / mech->lambda;
        break;
    }
    default:
        return LDPB_EINVAL;
    }
    *mu_hat = mu;
    if (exact)
        *exact = is_exact;
    return LDPB_OK;
}

ldpb_err ldpb_mech_debias_radius(const ldpb_mech *mech, uint64_t n, double delta, double *radius)
{
    if (!mech || !radius || n == 0 || isnan(delta))
        return LDPB_EINVAL;
    if (!(delta > 0.0 && delta < 1.0))
        return LDPB_ERANGE;
    double nn = (double)n;
    if (mech->opts.kind == LDPB_MECH_LAPLACE) {
        /* Split delta between the reward (Hoeffding) and the noise (Bernstein for a
         * sub-exponential variable with nu = 2b, alpha = sqrt(2) b, b = 1/eps). */
        double l = log(4.0 / delta);
        double eps = mech->opts.epsilon;
        double gauss = sqrt(8.0 * l / (eps * eps * nn));
        double tail = 2.0 * sqrt(2.0) * l / (eps * nn);
        *radius = sqrt(l / (2.0 * nn)) + (gauss > tail ? gauss : tail);
        return LDPB_OK;
    }
    double s = ldexp((double)mech->t1, -64) - ldexp((double)mech->t0, -64);
    *radius = sqrt(log(2.0 / delta) / (2.0 * nn)) / s;
    return LDPB_OK;
}
