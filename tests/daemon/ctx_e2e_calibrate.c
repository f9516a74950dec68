/* Not a test: the calibration of test_daemon_ctx_e2e's learning bound. Plays RUNS independent
 * runs of ctx_env.h's instance (environment seed 7, as the test; decisions and noise from per-run
 * seeds) through the policy library, and prints per run the mean regret of the last WINDOW rounds
 * and uniform play's. Usage: ctx_e2e_calibrate RUNS ROUNDS WINDOW POLICY EPSILON HORIZON, e.g.
 * `ctx_e2e_calibrate 2000 4000 1000 jdp-linucb-gaussian 10 4000` (the test's bound: 0.25). */
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "ctx_env.h"
#include "linucb.h"

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s RUNS ROUNDS WINDOW POLICY EPSILON HORIZON\n", argv[0]);
        return 2;
    }
    gsl_set_error_handler_off();
    int runs = atoi(argv[1]), n = atoi(argv[2]), window = atoi(argv[3]);
    for (int run = 0; run < runs; run++) {
        agg_linucb_config c;
        agg_linucb_config_init(&c);
        c.variant = agg_linucb_variant_find(argv[4]);
        c.d = CTX_D;
        c.horizon = strtoull(argv[6], NULL, 10);
        c.epsilon = atof(argv[5]);
        c.delta = 0.1;
        agg_linucb *p = NULL;
        char msg[AGG_ERRMSG_MAX];
        if (agg_linucb_new(&p, &c, msg) != LDPB_OK) {
            fprintf(stderr, "%s\n", msg);
            return 1;
        }
        agg_rand dr, er, nr;
        agg_rand_seed_u64(&dr, 1000u + (uint64_t)run);
        agg_rand_seed_u64(&er, 7);
        agg_rand_seed_u64(&nr, 99u + (uint64_t)run);
        agg_noise *noise = NULL;
        if (agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nr) != LDPB_OK)
            return 1;
        agg_policy_env env = {&dr, noise};
        double regret = 0.0, uniform = 0.0, x[CTX_K * CTX_D];
        for (int t = 0; t < n; t++) {
            ctx_env_features(&er, x);
            uint32_t a = 0, ties = 0;
            if (agg_linucb_choose(p, &env, x, CTX_K, &a, &ties) != LDPB_OK ||
                agg_linucb_observe(p, &env, x + a * CTX_D, ctx_env_reward(&er, x + a * CTX_D)) !=
                    LDPB_OK)
                return 1;
            if (t >= n - window) {
                regret += ctx_env_regret(x, a);
                for (uint32_t i = 0; i < CTX_K; i++)
                    uniform += ctx_env_regret(x, i) / CTX_K;
            }
        }
        printf("%d %.4f %.4f\n", run, regret / window, uniform / window);
        agg_linucb_free(p);
        agg_noise_free(noise);
    }
    return 0;
}
