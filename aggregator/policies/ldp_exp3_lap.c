/* DP-EXP3-Lap in the local model: the observation is the client's Laplace report (mechanism
 * laplace), so no second noise; eps-LDP per report by the client's mechanism. The engine is
 * exp3_family.c. */
#include "exp3_family.h"

extern const agg_policy_ops agg_policy_ldp_exp3_lap;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_exp3_new(out, cfg, &agg_policy_ldp_exp3_lap, AGG_EXP3_LAP_LOCAL, errmsg);
}

const agg_policy_ops agg_policy_ldp_exp3_lap = {
    .name = "ldp-exp3-lap",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 0,
    .params = AGG_PARAM_HORIZON | AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM | AGG_PARAM_GAMMA |
              AGG_PARAM_THRESHOLD,
    .create = create,
    AGG_EXP3_OPS_SHARED,
};
