/* dp-se (DP Successive Elimination, Sajed & Sheffet 2019, Alg. 3): the helpers beyond the
 * ops table. A simulator uses them to fast-forward an epoch: instead of R_e Bernoulli rewards per
 * arm it reads the epoch's plan, draws one Binomial sum per arm and feeds it as a block, with the
 * same result as choose/observe one round at a time (for 0/1 rewards, whose sums are exact).
 *
 * Round order, for a simulator that must stop mid-epoch at the horizon: choose() goes round robin
 * over S in ascending arm order, skipping arms whose quota for the epoch is complete, starting
 * from the first arm of S at each epoch start. */
#ifndef LDPB_AGG_DP_SE_H
#define LDPB_AGG_DP_SE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "policy.h"

/* The quantities of epoch e with |S| = s_size arms at its start (SS19 Alg. 3):
 * R = max(32 ln(8 s e^2/beta) / Delta^2, 8 ln(4 s e^2/beta) / (eps Delta)) + 1, Delta = 2^-e;
 * r = ceil(R), the pulls per arm (saturating at 2^63, far beyond any horizon);
 * h = sqrt(ln(8 s e^2/beta) / (2 R)); c = ln(4 s e^2/beta) / (R eps).
 * The epoch's noise is Lap(1/(eps r)) per arm; an arm j is eliminated when
 * max_i mutilde_i - mutilde_j > 2 h + 2 c. */
typedef struct agg_dp_se_params {
    double R;
    uint64_t r;
    double h;
    double c;
} agg_dp_se_params;

/* Pure: fills *out for the given epoch (>= 1), |S| (>= 1), beta in (0,1) and eps > 0. */
void agg_dp_se_epoch_params(uint32_t s_size, uint32_t epoch, double beta, double epsilon,
                            agg_dp_se_params *out);

/* The current epoch of a dp-se policy: *epoch (>= 1), *n_active = |S|, and for i < |S| the arm
 * arms[i] (ascending) and remaining[i], the pulls it still needs before the epoch ends (0 once its
 * quota is complete). Once |S| = 1 the survivor is pulled forever: remaining[0] = UINT64_MAX.
 * `arms` and `remaining` hold `cap` entries; LDPB_ERANGE if cap < |S| (*n_active is still set).
 * LDPB_EINVAL for NULL or a policy that is not dp-se; LDPB_ESTATE under the doubling schedule,
 * whose phase ends cut epochs short. */
ldpb_err agg_dp_se_plan(const agg_policy *p, uint32_t *epoch, uint32_t *arms, uint64_t *remaining,
                        uint32_t cap, uint32_t *n_active);

/* Not available under the doubling schedule (LDPB_ESTATE), like agg_dp_se_plan.
 * Feeds `count` rewards of `arm` at once whose sum is `sum` (each reward in [0,1]); identical to
 * observing them one by one whenever the running sums are exact in double precision (0/1
 * rewards, or rewards on a coarse dyadic grid). If the block completes the epoch, the epoch ends
 * here exactly as with single observations (noise drawn from env->noise, eliminations).
 * Errors: LDPB_EINVAL for NULL, a NULL env->noise, a policy that is not dp-se, arm >= k or a NaN
 * sum; LDPB_ESTATE if the arm has been eliminated; LDPB_ERANGE if count exceeds the arm's
 * remaining pulls in the epoch or sum is outside [0, count]. count 0 with sum 0 does nothing. */
ldpb_err agg_dp_se_observe_block(agg_policy *p, agg_policy_env *env, uint32_t arm, uint64_t count,
                                 double sum);

/* The doubling schedule of a dp-se policy with horizon 0 and beta 0 (or dp-se-doubling): *phase = j
 * >= 1, *phase_t the observations already in phase j (phase j holds 2^j, so phase j starts after
 * 2^j - 2 observations), *epoch the epoch of Algorithm 3 inside the phase. *phase = 0 and
 * *phase_t = 0 for a dp-se with a known horizon. LDPB_EINVAL for NULL or another policy. */
ldpb_err agg_dp_se_schedule(const agg_policy *p, uint32_t *phase, uint64_t *phase_t,
                            uint32_t *epoch);

#endif
