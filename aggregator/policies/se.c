/* SE: non-private successive elimination, the baseline of the SE family. It mirrors LDP-SE
 * (docs/derivations.md 9) on raw rewards in [0,1], with the Hoeffding radius of [0,1] rewards:
 * rad(r) = sqrt(L / (2r)), so r_e = floor(8 L / Delta^2) + 1 (the CTB formulas with w = 1);
 * beta defaults to 1/T. The estimate of an arm is the plain mean of its epoch rewards. The
 * engine, with the algorithm and how it is driven, is se_family.c. */
#include <math.h>

#include "se_family.h"

extern const agg_policy_ops agg_policy_se;

static ldpb_err prepare(const agg_policy_config *cfg, agg_se_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    ldpb_err err = agg_se_beta(cfg, "se", &par->beta, errmsg);
    if (err)
        return err;
    par->rho = sqrt(0.5);
    par->rcoef = 8.0;
    return LDPB_OK;
}

static double estimate(const agg_se_params *par, double sum, uint64_t n)
{
    (void)par;
    return sum / (double)n;
}

/* A sum n rewards in [0,1] can produce. */
static int sum_valid(const agg_se_params *par, uint64_t n, double sum)
{
    (void)par;
    return sum >= 0.0 && sum <= (double)n;
}

static const agg_se_variant variant = {
    .ops = &agg_policy_se,
    .state_version = 1,
    .prepare = prepare,
    .estimate = estimate,
    .sum_valid = sum_valid,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_se_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_se = {
    .name = "se",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 0,
    .params = AGG_PARAM_HORIZON | AGG_PARAM_BETA,
    .create = create,
    AGG_SE_OPS_SHARED,
};
