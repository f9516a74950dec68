/* LDP-TS-B (Jiang, Zhao and Li 2023, Alg. 1): Thompson sampling on the bits of a
 * Bernoulli mechanism (linear = CTB, quadratic or exponential; one probability function p and
 * one epsilon for all arms, so the privatized means mu'_a = E[p(X_a)] are on one scale).
 *
 * The reports of an arm are i.i.d. Bern(mu'_a), so Beta(S_a + 1, F_a + 1) is the exact posterior
 * of mu'_a under the Beta(1,1) prior; a report y in {0,1} adds to S or F (the engine is
 * ts_family.c). An optional clamp of theta into [p0, p1] (not in JZL23) is not applied: the
 * algorithm is the plain posterior sample.
 *
 * The mechanism runs on the client; the aggregator builds the same configuration to validate it
 * and to de-bias in describe(): exact for linear, p^-1(ybar) otherwise (docs/derivations.md 5). */
#include "ts_family.h"

/* describe(): a 95% Hoeffding interval, on the unit scale for the linear mechanism. */
#define LDP_TS_B_DESCRIBE_DELTA 0.05

extern const agg_policy_ops agg_policy_ldp_ts_b;

static ldpb_err prepare(const agg_policy_config *cfg, ldpb_mech **mech, char errmsg[AGG_ERRMSG_MAX])
{
    if (!agg_policy_mech_reports_bits(cfg))
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ts-b: mechanism %s is not a Bernoulli mechanism "
                                 "(one that reports a bit)",
                                 ldpb_mech_kind_name(cfg->mechanism));
    return agg_policy_mech_new(cfg, "ldp-ts-b", mech, errmsg);
}

static int success(agg_policy_env *env, double bit)
{
    (void)env;
    return bit == 1.0;
}

/* De-biased S/(S+F): exact and unbiased for linear, with a 95% Hoeffding interval scaled by
 * 1/s; the plug-in approximation p^-1(ybar) for quadratic and exponential, without an interval
 * (the mean reward is not identifiable from the reports then). */
static ldpb_err estimate(const ldpb_mech *mech, uint64_t s, uint64_t n, agg_arm_status *st)
{
    int exact = 0;
    ldpb_err err = ldpb_mech_debias_mean(mech, (double)s, n, &st->estimate, &exact);
    if (err)
        return err;
    double rad;
    if (exact && ldpb_mech_debias_radius(mech, n, LDP_TS_B_DESCRIBE_DELTA, &rad) == LDPB_OK) {
        st->ci_low = st->estimate - rad;
        st->ci_high = st->estimate + rad;
    }
    return LDPB_OK;
}

static const agg_ts_variant variant = {
    .ops = &agg_policy_ldp_ts_b,
    .state_version = 1,
    .success = success,
    .prepare = prepare,
    .estimate = estimate,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ts_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ldp_ts_b = {
    .name = "ldp-ts-b",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 1,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM | AGG_PARAM_KAPPA,
    .choose_is_draw = 1,
    .create = create,
    AGG_TS_OPS_SHARED,
};
