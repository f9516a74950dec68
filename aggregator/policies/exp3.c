/* EXP3 (Auer, Cesa-Bianchi, Freund and Schapire 2002), non-private, on raw gains in [0,1].
 * The engine is exp3_family.c. */
#include "exp3_family.h"

extern const agg_policy_ops agg_policy_exp3;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_exp3_new(out, cfg, &agg_policy_exp3, AGG_EXP3_PLAIN, errmsg);
}

const agg_policy_ops agg_policy_exp3 = {
    .name = "exp3",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 0,
    .params = AGG_PARAM_HORIZON | AGG_PARAM_GAMMA,
    .create = create,
    AGG_EXP3_OPS_SHARED,
};
