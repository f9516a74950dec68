/* EXP3-tau (Tossou & Dimitrakakis 2017, Sec. 3.2): EXP3 in blocks of tau rounds on raw gains; its
 * privacy comes from EXP3's own sampling (TD17 Thm 3.5), not from noise, so it is served as
 * non-private. The engine is exp3_family.c. */
#include "exp3_family.h"

extern const agg_policy_ops agg_policy_exp3_tau;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_exp3_new(out, cfg, &agg_policy_exp3_tau, AGG_EXP3_TAU, errmsg);
}

const agg_policy_ops agg_policy_exp3_tau = {
    .name = "exp3-tau",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 0,
    .params = AGG_PARAM_HORIZON | AGG_PARAM_GAMMA | AGG_PARAM_TAU,
    .create = create,
    AGG_EXP3_OPS_SHARED,
};
