/* Aggregator-side estimates from privatized reports (algorithms.md 1.6-1.7). They live in
 * common because they are the exact inverses of the mechanisms and must use the implemented
 * endpoints, not the nominal ones. */
#include <math.h>

#include "mech_internal.h"

/* The implemented endpoints: the de-biasing inverts what the sampler does, not the formula. */
static void endpoints(const ldpb_mech *m, double *p0, double *s)
{
    *p0 = ldexp((double)m->t0, -64);
    *s = ldexp((double)m->t1, -64) - *p0;
}

/* The privatized mean on the shape's scale, held inside [0, 1] for the plug-in inverses. */
static double unit_of_mean(const ldpb_mech *m, double mean)
{
    double p0, s;
    endpoints(m, &p0, &s);
    double u = s > 0.0 ? (mean - p0) / s : 0.0;
    return u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
}

double mech_debias_laplace(const ldpb_mech *m, double mean)
{
    (void)m;
    return mean;
}

double mech_debias_linear(const ldpb_mech *m, double mean)
{
    double p0, s;
    endpoints(m, &p0, &s);
    return s > 0.0 ? (mean - p0) / s : NAN;
}

double mech_debias_quadratic(const ldpb_mech *m, double mean)
{
    /* Plug-in inverse of p on [0,1]; the privatized mean is first held inside [p0, p1]. */
    double u = unit_of_mean(m, mean);
    double a = m->opts.kappa, b = 1.0 - m->opts.kappa;
    if (fabs(a) < 1e-12)
        return u / b;
    /* a x^2 + b x - u = 0, the root in [0,1], written to avoid cancellation. */
    double disc = b * b + 4.0 * a * u;
    double denom = b + sqrt(disc > 0.0 ? disc : 0.0);
    return denom > 0.0 ? 2.0 * u / denom : 0.0; /* kappa = 1 and u = 0: the root is 0 */
}

double mech_debias_exponential(const ldpb_mech *m, double mean)
{
    return log1p(unit_of_mean(m, mean) * m->expm1_lambda) / m->lambda;
}

ldpb_err ldpb_mech_debias_mean(const ldpb_mech *mech, double sum, uint64_t n, double *mu_hat,
                               int *exact)
{
    if (!mech || !mu_hat || n == 0 || !isfinite(sum))
        return LDPB_EINVAL;
    *mu_hat = mech->desc->debias(mech, sum / (double)n);
    if (exact)
        *exact = mech->desc->exact_debias;
    return LDPB_OK;
}

double mech_radius_laplace(const ldpb_mech *m, double nn, double delta)
{
    /* Split delta between the reward (Hoeffding) and the noise (Bernstein for a
     * sub-exponential variable with nu = 2b, alpha = sqrt(2) b, b = 1/eps). */
    double l = log(4.0 / delta);
    double eps = m->opts.epsilon;
    double gauss = sqrt(8.0 * l / (eps * eps * nn));
    double tail = 2.0 * sqrt(2.0) * l / (eps * nn);
    return sqrt(l / (2.0 * nn)) + (gauss > tail ? gauss : tail);
}

double mech_radius_bernoulli(const ldpb_mech *m, double nn, double delta)
{
    double p0, s;
    endpoints(m, &p0, &s);
    return sqrt(log(2.0 / delta) / (2.0 * nn)) / s;
}

ldpb_err ldpb_mech_debias_radius(const ldpb_mech *mech, uint64_t n, double delta, double *radius)
{
    if (!mech || !radius || n == 0 || isnan(delta))
        return LDPB_EINVAL;
    if (!(delta > 0.0 && delta < 1.0))
        return LDPB_ERANGE;
    *radius = mech->desc->radius(mech, (double)n, delta);
    return LDPB_OK;
}
