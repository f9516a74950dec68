/* dp-ucb: private UCB (Mishra & Thakurta 2015, MT15). One binary tree mechanism per arm
 * over that arm's rewards (leaf = the arm's pull count), each with budget eps_arm (default eps,
 * parallel composition; eps/K reproduces MT15 literally; above eps it is refused), and the UCB
 * index widened by nu = (Lv^2 / eps_arm) ln(K T Lv / gamma) to absorb the tree noise
 * (docs/derivations.md 12):
 *     index_a = s_hat_a / n_a + sqrt(2 ln t / n_a) + nu / n_a,
 * after one initial pull of every arm. nu is constant, so (s_hat_a + nu) / n_a is cached per arm.
 * The engine is dp_ucb_family.c. */
#include <math.h>

#include "counter.h"
#include "dp_ucb_family.h"

extern const agg_policy_ops agg_policy_dp_ucb;

static ldpb_err prepare(const agg_policy_config *cfg, agg_dp_ucb_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    double gamma = cfg->gamma == 0 ? 1.0 / (double)cfg->horizon : cfg->gamma;
    if (!(gamma > 0 && gamma < 1))
        return agg_policy_refuse(errmsg, isnan(gamma) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "dp-ucb: gamma %g outside (0, 1)", cfg->gamma);
    double eps_arm = cfg->eps_arm == 0 ? cfg->epsilon : cfg->eps_arm;
    if (!isfinite(eps_arm) || !(eps_arm > 0))
        return agg_policy_refuse(errmsg, isnan(eps_arm) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "dp-ucb: eps_arm %g must be > 0 and finite", cfg->eps_arm);
    /* A reward enters only its own arm's tree, so the run is eps_arm-DP (parallel composition):
     * above epsilon, the stated epsilon would understate the loss. */
    if (eps_arm > cfg->epsilon)
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "dp-ucb: eps_arm %g is above epsilon %g: the run would be "
                                 "eps_arm-DP, not epsilon-DP (set eps_arm <= epsilon, or 0 for "
                                 "epsilon)",
                                 eps_arm, cfg->epsilon);
    double lv = (double)agg_tree_levels(cfg->horizon);
    double nu = lv * lv / eps_arm * log((double)cfg->k * (double)cfg->horizon * lv / gamma);
    if (!isfinite(nu))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "dp-ucb: eps_arm %g too small: nu overflows",
                                 eps_arm);
    par->eps = eps_arm;
    par->nu = nu;
    return LDPB_OK;
}

static void terms(const agg_dp_ucb_params *par, uint64_t n, double inv, double shat, double *base,
                  double *nu_weight)
{
    (void)n;
    (void)nu_weight;
    *base = (shat + par->nu) * inv;
}

static void estimate(const agg_dp_ucb_params *par, uint64_t n, double shat, double base,
                     double nu_weight, double round_nu, double *est, double *nu_radius)
{
    (void)base;
    (void)nu_weight;
    (void)round_nu;
    *est = shat / (double)n;
    *nu_radius = par->nu / (double)n;
}

static const agg_dp_ucb_variant variant = {
    .ops = &agg_policy_dp_ucb,
    .state_version = 1,
    .need_horizon = 1,
    .counter = AGG_DP_UCB_TREE,
    .eps_name = "eps_arm",
    .scale_name = "tree noise scale",
    .prepare = prepare,
    .terms = terms,
    .round_nu = NULL,
    .estimate = estimate,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_dp_ucb_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_dp_ucb = {
    .name = "dp-ucb",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_HORIZON | AGG_PARAM_GAMMA | AGG_PARAM_EPS_ARM,
    .create = create,
    AGG_DP_UCB_OPS_SHARED,
};
