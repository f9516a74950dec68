/* LDP-SE: successive elimination on LDP reports (docs/derivations.md 9, after SS19's DP-SE); the
 * engine, with the algorithm and how it is driven, is se_family.c. mu_hat_a is the de-biased mean
 * of the epoch's reports.
 *
 * Mechanisms: CTB (linear) with rad(r) = w sqrt(L / (2r)), w = 1/s from the implemented
 * endpoints (the width of the interval a de-biased report lies in; (e^eps+1)/(e^eps-1) for the
 * nominal ones), so r_e = floor(8 w^2 L / Delta^2) + 1; or CTL (Laplace) with
 * rad(r) = sqrt(L/(2r)) + sqrt(8L/(eps^2 r)), so r_e = max(ceil(L), floor(16 c^2 L / Delta^2) + 1)
 * with c = 1/sqrt(2) + sqrt(8)/eps (the Bernstein part needs r >= L). Quadratic and exponential
 * are refused: with non-binary rewards their mean is not identifiable (docs/derivations.md 5).
 * Both radii are rho sqrt(L / r) for a constant rho; r_e is computed from the closed forms. */
#include <math.h>

#include "se_family.h"

extern const agg_policy_ops agg_policy_ldp_se;

static ldpb_err prepare(const agg_policy_config *cfg, agg_se_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    if (!agg_policy_mech_exact(cfg))
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-se: mechanism %s not supported: the mean reward is only "
                                 "identifiable from linear (CTB) or laplace (CTL) reports",
                                 ldpb_mech_kind_name(cfg->mechanism));
    ldpb_err err = agg_se_beta(cfg, "ldp-se", &par->beta, errmsg);
    if (!err)
        err = agg_policy_mech_new(cfg, "ldp-se", &par->mech, errmsg);
    if (err)
        return err;
    par->r_at_least_L = !agg_policy_mech_reports_bits(cfg);
    if (par->r_at_least_L) {
        double c = sqrt(0.5) + sqrt(8.0) / cfg->epsilon;
        par->rho = c;
        par->rcoef = 16.0 * c * c;
    } else {
        double p0, p1;
        ldpb_mech_endpoints(par->mech, &p0, &p1);
        double w = 1.0 / (p1 - p0);
        par->rho = sqrt(0.5) * w;
        par->rcoef = 8.0 * w * w;
    }
    return LDPB_OK;
}

static double estimate(const agg_se_params *par, double sum, uint64_t n)
{
    double mu = NAN;
    if (ldpb_mech_debias_mean(par->mech, sum, n, &mu, NULL) != LDPB_OK)
        return NAN; /* unreachable: n > 0 and sum finite */
    return mu;
}

/* A sum that reports of this mechanism can produce: for CTB an integer count of ones in [0, n],
 * for CTL any finite value (zero without reports). */
static int sum_valid(const agg_se_params *par, uint64_t n, double sum)
{
    if (!isfinite(sum) || (n == 0 && sum != 0.0))
        return 0;
    if (par->r_at_least_L)
        return 1;
    return sum >= 0.0 && sum <= (double)n && sum == floor(sum);
}

static const agg_se_variant variant = {
    .ops = &agg_policy_ldp_se,
    .state_version = 1,
    .prepare = prepare,
    .estimate = estimate,
    .sum_valid = sum_valid,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_se_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ldp_se = {
    .name = "ldp-se",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 0,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM | AGG_PARAM_HORIZON | AGG_PARAM_BETA,
    .create = create,
    AGG_SE_OPS_SHARED,
};
