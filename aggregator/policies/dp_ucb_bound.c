/* dp-ucb-bound: Tossou & Dimitrakakis' DP-UCB-Bound (2016; docs/derivations.md 12). One hybrid
 * per arm over that arm's rewards with the full eps (parallel composition), so the horizon need
 * not be known, and the index
 *     index_a = s_hat_a / n_a + sqrt(2 ln t / n_a) + nu_a(t) / n_a,
 *     nu_a(t) = (sqrt(8)/eps) ln(4 t^4) * (1 if n_a is a power of two, else 1 + ln n_a),
 * after one initial pull of every arm. s_hat_a / n_a and the nu factor over n_a are cached per
 * arm; the engine is dp_ucb_family.c. */
#include <math.h>

#include "dp_ucb_family.h"

extern const agg_policy_ops agg_policy_dp_ucb_bound;

static ldpb_err prepare(const agg_policy_config *cfg, agg_dp_ucb_params *par,
                        char errmsg[AGG_ERRMSG_MAX])
{
    (void)errmsg;
    par->eps = cfg->epsilon;
    return LDPB_OK;
}

static void terms(const agg_dp_ucb_params *par, uint64_t c, double inv, double shat, double *mean,
                  double *nu_weight)
{
    (void)par;
    *mean = shat * inv;
    /* The logarithmic part alone at powers of two; the binary part adds a factor 1 + ln n. */
    *nu_weight = ((c & (c - 1)) == 0 ? 1.0 : 1.0 + log((double)c)) * inv;
}

static double round_nu(const agg_dp_ucb_params *par, double log_t)
{
    return sqrt(8.0) / par->eps * (log(4.0) + 4 * log_t); /* ln(4 t^4) */
}

static void estimate(const agg_dp_ucb_params *par, uint64_t n, double shat, double mean,
                     double nu_weight, double nu, double *est, double *nu_radius)
{
    (void)par;
    (void)n;
    (void)shat;
    *est = mean;
    *nu_radius = nu * nu_weight;
}

static const agg_dp_ucb_variant variant = {
    .ops = &agg_policy_dp_ucb_bound,
    .state_version = 1,
    .need_horizon = 0,
    .counter = AGG_DP_UCB_HYBRID,
    .eps_name = "epsilon",
    .scale_name = "noise scale",
    .prepare = prepare,
    .terms = terms,
    .round_nu = round_nu,
    .estimate = estimate,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_dp_ucb_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_dp_ucb_bound = {
    .name = "dp-ucb-bound",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .params = AGG_PARAM_EPSILON,
    .create = create,
    AGG_DP_UCB_OPS_SHARED,
};
