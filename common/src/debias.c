/* Aggregator-side estimates from privatized reports (docs/derivations.md 5-6). They live in
 * common because they are the exact inverses of the mechanisms and must use the implemented
 * endpoints, not the nominal ones. Each family implements its own (the `debias` and `radius` of
 * its rows of the mechanism table, in mech_bernoulli.c and mech_laplace.c). */
#include <math.h>

#include "mech_internal.h"

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

ldpb_err ldpb_mech_debias_radius(const ldpb_mech *mech, uint64_t n, double delta, double *radius)
{
    if (!mech || !radius || n == 0 || isnan(delta))
        return LDPB_EINVAL;
    if (!(delta > 0.0 && delta < 1.0))
        return LDPB_ERANGE;
    *radius = mech->desc->radius(mech, (double)n, delta);
    return LDPB_OK;
}
