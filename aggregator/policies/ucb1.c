/* UCB1, the non-private baseline (Auer, Cesa-Bianchi and Fischer 2002).
 *
 * Rounds 1..K pull each arm once (lowest unpulled index first); afterwards round t pulls
 *     argmax_a  sum_a / n_a + sqrt(2 ln t / n_a),
 * on raw rewards in [0,1]. The engine is ucb_family.c; the interval describe() gives is the
 * index's own radius sqrt(2 ln t / n). */
#include "ucb_family.h"

extern const agg_policy_ops agg_policy_ucb1;

static const agg_ucb_variant variant = {
    .ops = &agg_policy_ucb1,
    .state_version = 1,
    .obs = AGG_UCB_OBS_UNIT,
    .ln_scale = 2.0,
    .forced = 0.0,
    .prepare = NULL,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ucb_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ucb1 = {
    .name = "ucb1",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 1,
    .params = 0,
    .create = create,
    AGG_UCB_OPS_SHARED,
};
