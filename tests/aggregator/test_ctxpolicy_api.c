/* libldpb-sim's contextual policy API (ldpb_ctxpolicy_*) and its shariff2018 simulation against
 * the engine's own runners (ctxsim.h, ctxrun.h): the step API in the preset's environment decides
 * as the runner does, and ldpb_sim_run on the preset gives the regret of simctx_run. Linked
 * against the static library for the runners; the public-API cases are in test_sim_api.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctxrun.h"
#include "ctxsim.h"
#include "ldpb/rng.h"
#include "ldpb/sim.h"
#include "report.h"

#define D 3u
#define K 4u
#define N 300u

/* linucb through ldpb_ctxpolicy, fed the decision sets and reward draws of trial `trial` of the
 * runner's environment, against agg_ctx_sim_run_trial: the same cumulative regret at every
 * round, bit for bit. The tie breaks come from different generators, so the comparison holds
 * where every choice had one maximiser, which the test checks (ties == 1) from round 2 on; in
 * round 1 every index is beta ||x|| with ||x|| = 1, so the round-1 choice is taken from the
 * runner's run of 1 round. */
static void linucb_steps_equal_runner(void **state)
{
    (void)state;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "ctx-api");
    agg_ctx_env_config ec = {D, K, 0.75, 0.1, AGG_CTX_REWARD_BOUNDED};
    agg_ctx_sim_config sc;
    memset(&sc, 0, sizeof sc);
    agg_linucb_config_init(&sc.policy);
    sc.policy.variant = AGG_LINUCB_PLAIN;
    sc.policy.d = D;
    sc.policy.horizon = N;
    sc.env = ec;
    sc.noise_kind = AGG_NOISE_FAST;
    uint64_t cps[N];
    for (uint32_t t = 0; t < N; t++)
        cps[t] = t + 1;
    sc.checkpoints = cps;
    sc.n_checkpoints = N;
    double want[N];
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_ctx_sim_run_trial(&sc, seed, 0, want, NULL, msg), LDPB_OK);

    ldpb_ctxpolicy_params pp;
    ldpb_ctxpolicy_params_init(&pp);
    pp.d = D;
    pp.horizon = N;
    ldpb_ctxpolicy *p = NULL;
    char err[256];
    assert_int_equal(ldpb_ctxpolicy_new(&p, "linucb", &pp, "any", err, sizeof err), LDPB_OK);
    agg_ctx_env env;
    assert_int_equal(agg_ctx_env_start(&env, &ec, seed, 0), LDPB_OK);
    double x[K * D], mean[K], cum = 0.0;
    for (uint32_t t = 1; t <= N; t++) {
        agg_ctx_env_round(&env, x, mean);
        uint32_t arm = 0, ties = 0;
        assert_int_equal(ldpb_ctxpolicy_choose(p, x, K, &arm, &ties), LDPB_OK);
        if (t == 1) {
            /* the runner's round-1 choice, from its regret: the arm with that mean */
            uint32_t a = 0;
            while (a < K && ec.best - mean[a] != want[0])
                a++;
            assert_true(a < K);
            arm = a;
        } else {
            assert_int_equal(ties, 1);
        }
        double y = agg_ctx_env_reward(&env, mean[arm]);
        assert_int_equal(ldpb_ctxpolicy_observe(p, x + (size_t)arm * D, y), LDPB_OK);
        cum += ec.best - mean[arm];
        assert_true(cum == want[t - 1]);
    }
    assert_int_equal(ldpb_ctxpolicy_rounds(p), N);
    /* the horizon is the tree's: one more observation is refused */
    assert_int_equal(ldpb_ctxpolicy_observe(p, x, 0.0), LDPB_ESTATE);
    ldpb_ctxpolicy_free(p);
}

/* ldpb_sim_run on shariff2018 returns simctx_run's regret (as `ldpb sim` runs it) and the
 * curves its regret.csv writer reduces. */
static void shariff2018_through_the_api(void **state)
{
    (void)state;
    ldpb_sim *s = NULL;
    assert_int_equal(ldpb_sim_new(&s), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "preset", "shariff2018"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "horizon", "200"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "trials", "3"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "seed", "5"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "threads", "2"), LDPB_OK);
    assert_int_equal(ldpb_sim_run(s), LDPB_OK);

    simctx_plan plan;
    char msg[SIMCTX_ERRMSG_MAX];
    assert_int_equal(simctx_plan_build(&plan, "200", "3", NULL, NULL, msg), LDPB_OK);
    assert_int_equal(ldpb_sim_n_configs(s), plan.n_cfg);
    assert_int_equal(ldpb_sim_trials(s), 3);
    const uint64_t *t = NULL;
    assert_int_equal(ldpb_sim_checkpoints(s, &t), plan.n_checkpoints);
    double **regret = calloc(plan.n_cfg, sizeof *regret);
    assert_non_null(regret);
    for (size_t c = 0; c < plan.n_cfg; c++)
        assert_non_null(regret[c] = calloc(3 * plan.n_checkpoints, sizeof **regret));
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "5");
    uint64_t fails[SIMCTX_CFG_MAX];
    assert_int_equal(simctx_run(&plan, seed, 1, regret, fails, NULL, NULL, msg), LDPB_OK);
    for (size_t c = 0; c < plan.n_cfg; c++) {
        ldpb_sim_config_info info;
        assert_int_equal(ldpb_sim_config(s, c, &info), LDPB_OK);
        assert_string_equal(info.algorithm, simctx_alg_name(&plan.cfg[c]));
        assert_string_equal(info.preset, plan.cfg[c].label);
        assert_memory_equal(ldpb_sim_regret(s, c), regret[c],
                            3 * plan.n_checkpoints * sizeof **regret);
        const double *mean, *lo, *hi;
        assert_int_equal(ldpb_sim_curve(s, c, &mean, &lo, &hi), LDPB_OK);
        size_t j = plan.n_checkpoints - 1;
        simstat st;
        simstat_compute(regret[c] + j, 3, plan.n_checkpoints, NULL, &st);
        assert_true(mean[j] == st.mean && lo[j] == st.lo && hi[j] == st.hi);
        free(regret[c]);
    }
    free(regret);
    simctx_plan_fini(&plan);
    ldpb_sim_free(s);

    /* the options the preset does not take are refused as the command refuses them */
    assert_int_equal(ldpb_sim_new(&s), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "preset", "shariff2018"), LDPB_OK);
    assert_int_equal(ldpb_sim_set(s, "k", "5"), LDPB_OK);
    assert_int_equal(ldpb_sim_prepare(s), LDPB_EINVAL);
    assert_non_null(strstr(ldpb_sim_errmsg(s), "k does not apply"));
    ldpb_sim_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linucb_steps_equal_runner),
        cmocka_unit_test(shariff2018_through_the_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
