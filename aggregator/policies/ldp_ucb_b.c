/* LDP-UCB-B (Ren, Zhou, Liu and Shroff 2020, index from their DPclass.py, which differs below):
 * UCB1 run on the privatized bits of any Bernoulli mechanism (CTB = linear, or quadratic /
 * exponential as in JZL23), on the privatized scale:
 *     argmax_a  ysum_a / n_a + sqrt(2 ln t / n_a)
 * after an initial round-robin (lowest unpulled index first). All arms share one mechanism, so
 * the argmax equals that of the de-biased index mu_hat + w sqrt(2 ln t / n) with w = 1/s (the
 * linear case). The mechanism itself runs on the client; the aggregator builds the same
 * configuration only to validate it and to de-bias for describe() (exact for linear, with the
 * index's radius on the unit scale, w sqrt(2 ln t / n); the plug-in p^-1(ybar) without an interval
 * for quadratic and exponential). The engine is ucb_family.c.
 *
 * Not as in their code: DPclass.py starts every arm with one phantom pull of reward 0 (n_a = 1,
 * mean 0) and no round-robin, and np.argmax breaks ties toward the lowest index; here each arm is
 * pulled once and ties are broken uniformly at random. On the ren2020 preset that costs about 1%
 * more regret than their code (docs/sim.md, "Where ren2020 differs"). */
#include "ucb_family.h"

extern const agg_policy_ops agg_policy_ldp_ucb_b;

static ldpb_err prepare(const agg_policy_config *cfg, agg_ucb_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    if (!agg_policy_mech_reports_bits(cfg))
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ucb-b: mechanism %s is not a Bernoulli mechanism "
                                 "(one that reports a bit); use ldp-ucb-l",
                                 ldpb_mech_kind_name(cfg->mechanism));
    ldpb_err err = agg_policy_mech_new(cfg, "ldp-ucb-b", &par->mech, errmsg);
    if (err)
        return err;
    double p0, p1;
    ldpb_mech_endpoints(par->mech, &p0, &p1);
    par->w = 1.0 / (p1 - p0);
    return LDPB_OK;
}

static const agg_ucb_variant variant = {
    .ops = &agg_policy_ldp_ucb_b,
    .state_version = 1,
    .obs = AGG_UCB_OBS_BIT,
    .ln_scale = 2.0,
    .forced = 0.0,
    .prepare = prepare,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ucb_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ldp_ucb_b = {
    .name = "ldp-ucb-b",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 1,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM | AGG_PARAM_KAPPA,
    .create = create,
    AGG_UCB_OPS_SHARED,
};
