/* LDP-UCB-L (Ren, Zhou, Liu and Shroff 2020, index and threshold from their
 * DPclass.py::pull_CTL): UCB on Laplace-privatized rewards y = clip(x,0,1) + Lap(1/eps).
 *
 * Round t (1-based: one more than the observations so far):
 *   U = { a : n_a <= 4 ln t }   (forced exploration: below it the Bernstein radius is not valid)
 *   U nonempty: pull the arm of U with the fewest reports, lowest index among equals (this is
 *               round-robin over U; docs/derivations.md 8);
 *   otherwise:  argmax_a ysum_a/n_a + sqrt(2 ln t / n_a) + sqrt(32 ln t / (eps^2 n_a)).
 * The threshold uses 4 ln t with counts from 0 (derivations.md 8; RZLS20's code: 4 ln(t+1) with
 * counts from 1). Both radius terms scale as sqrt(ln t / n_a), so the index is
 * mean_a + c sqrt(ln t / n_a) with c = sqrt(2) + sqrt(32)/eps. Reports are never clipped or
 * rounded here (docs/derivations.md 6); their mean is unbiased for the mean reward, and describe()
 * gives the index's radius once the arm has left forced exploration. The engine is
 * ucb_family.c. */
#include <math.h>

#include "ucb_family.h"

extern const agg_policy_ops agg_policy_ldp_ucb_l;

static ldpb_err prepare(const agg_policy_config *cfg, agg_ucb_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    ldpb_err err = agg_policy_check_epsilon(cfg, "ldp-ucb-l", errmsg);
    if (err)
        return err;
    if (cfg->mechanism != LDPB_MECH_LAPLACE) /* its radius is for Laplace noise */
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ucb-l: mechanism %s is not laplace; ldp-ucb-l needs "
                                 "Laplace reports (use ldp-ucb-b for Bernoulli mechanisms)",
                                 ldpb_mech_kind_name(cfg->mechanism));
    par->c = sqrt(2.0) + sqrt(32.0) / cfg->epsilon;
    return LDPB_OK;
}

static const agg_ucb_variant variant = {
    .ops = &agg_policy_ldp_ucb_l,
    .state_version = 1,
    .obs = AGG_UCB_OBS_REAL,
    .ln_scale = 1.0,
    .forced = 4.0,
    .prepare = prepare,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ucb_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ldp_ucb_l = {
    .name = "ldp-ucb-l",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 1,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
    .create = create,
    AGG_UCB_OPS_SHARED,
};
