/* DP-EXP3-Lap in the central model (Tossou & Dimitrakakis 2017, Alg. 1): the aggregator adds
 * Laplace(1/eps) to each raw gain, eps-DP (TD17 Thm 3.2). The engine is exp3_family.c. */
#include "exp3_family.h"

extern const agg_policy_ops agg_policy_dp_exp3_lap;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_exp3_new(out, cfg, &agg_policy_dp_exp3_lap, AGG_EXP3_LAP_CENTRAL, errmsg);
}

const agg_policy_ops agg_policy_dp_exp3_lap = {
    .name = "dp-exp3-lap",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .params = AGG_PARAM_HORIZON | AGG_PARAM_EPSILON | AGG_PARAM_GAMMA | AGG_PARAM_THRESHOLD,
    .create = create,
    AGG_EXP3_OPS_SHARED,
};
