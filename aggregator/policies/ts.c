/* Thompson sampling, the non-private baseline (Agrawal and Goyal 2012/2013).
 *
 * Prior Beta(1,1) per arm; the engine is ts_family.c. An observation x in [0,1] is binarized
 * z ~ Bern(x) with env->rand (the Agrawal-Goyal trick; a reward of exactly 0 or 1 is used as is and
 * draws nothing), then S or F of the arm grows. */
#include <math.h>

#include "ts_family.h"

/* describe(): a 95% Hoeffding interval for the binarized mean. */
#define TS_DESCRIBE_DELTA 0.05

extern const agg_policy_ops agg_policy_ts;

static int success(agg_policy_env *env, double reward)
{
    if (reward == 0.0 || reward == 1.0)
        return reward == 1.0;
    return agg_rand_uniform(env->rand) < reward;
}

/* The binarized reward z has mean mu exactly, so S/(S+F) is unbiased for mu; the interval is a
 * (fixed-n, not simultaneous) 95% Hoeffding interval. */
static ldpb_err estimate(const ldpb_mech *mech, uint64_t s, uint64_t n, agg_arm_status *st)
{
    (void)mech;
    double mean = (double)s / (double)n;
    double rad = sqrt(log(2.0 / TS_DESCRIBE_DELTA) / (2.0 * (double)n));
    st->estimate = mean;
    st->ci_low = mean - rad;
    st->ci_high = mean + rad;
    return LDPB_OK;
}

static const agg_ts_variant variant = {
    .ops = &agg_policy_ts,
    .state_version = 1,
    .success = success,
    .prepare = NULL,
    .estimate = estimate,
};

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    return agg_ts_new(out, cfg, &variant, errmsg);
}

const agg_policy_ops agg_policy_ts = {
    .name = "ts",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 1,
    .params = 0,
    .choose_is_draw = 1,
    .create = create,
    AGG_TS_OPS_SHARED,
};
