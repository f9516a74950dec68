/* Not a test: the calibration of test_daemon_ldpctx_e2e's learning bound. Plays RUNS independent
 * runs of the test's game (ctx_env.h's instance, environment seed 11, d 3, K 5, epsilon 10 and
 * delta 1e-5 per report, horizon ROUNDS, alpha 1/horizon as the daemon's default) through the
 * library pieces the daemon and the client use (agg_ldp_linucb for the sum and the model,
 * ldpb_ctxmodel to choose, ldpb_ctxstat to privatize), with per-run seeds for the device noise and
 * the tie breaks, and prints per run the best-arm share of rounds 1-500 and of the last 1000, the
 * mean regret of the last 1000, and the cosine between the model's estimate theta and the true
 * theta = e_1 in the models handed to the devices of rounds 501 and ROUNDS (500 and ROUNDS - 1
 * reports). Usage: ldpctx_e2e_calibrate RUNS ROUNDS. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctx_env.h"
#include "ldp_linucb.h"
#include "ldpb/ctxmodel.h"

/* cos(theta_hat, e_1): the estimate's alignment with the instance's theta. */
static double cosine(const ldpb_ctxmodel *m, double *theta)
{
    ldpb_ctxmodel_theta(m, theta);
    double s = 0.0;
    for (int j = 0; j < CTX_D; j++)
        s += theta[j] * theta[j];
    return s > 0.0 ? theta[0] / sqrt(s) : 0.0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s RUNS ROUNDS\n", argv[0]);
        return 2;
    }
    int runs = atoi(argv[1]), n = atoi(argv[2]);
    printf("run early_share late_share late_regret cos_500 cos_end\n");
    for (int run = 0; run < runs; run++) {
        agg_ldp_linucb_config c;
        agg_ldp_linucb_config_init(&c);
        c.d = CTX_D;
        c.epsilon = 10.0;
        c.delta = 1e-5;
        c.feature_norm = c.reward_bound = c.theta_norm = c.noise_sigma = 1.0;
        c.horizon = (uint64_t)n;
        c.alpha = 1.0 / (double)n;
        agg_ldp_linucb *p = NULL;
        char msg[AGG_ERRMSG_MAX];
        ldpb_ctxmodel *m = NULL;
        ldpb_rng *noise = NULL, *ties = NULL;
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        char text[64];
        snprintf(text, sizeof text, "ldpctx calibrate noise %d", run);
        ldpb_rng_seed_from_text(seed, text);
        if (agg_ldp_linucb_new(&p, &c, msg) != LDPB_OK || ldpb_ctxmodel_new(&m, CTX_D) ||
            ldpb_rng_new_seeded(&noise, seed)) {
            fprintf(stderr, "%s\n", msg);
            return 1;
        }
        snprintf(text, sizeof text, "ldpctx calibrate ties %d", run);
        ldpb_rng_seed_from_text(seed, text);
        if (ldpb_rng_new_seeded(&ties, seed))
            return 1;
        agg_rand er;
        agg_rand_seed_u64(&er, 11);
        double x[CTX_K * CTX_D], stats[LDPB_CTXSTAT_VALUES_MAX], z[LDPB_CTXSTAT_VALUES_MAX];
        int early = 0, late = 0;
        double regret = 0.0, cos500 = 0.0, cosend = 0.0, theta[CTX_D];
        for (int t = 0; t < n; t++) {
            ctx_env_features(&er, x);
            double shift, beta;
            uint32_t arm = 0, nt = 1;
            if (agg_ldp_linucb_model(p, stats, &shift, &beta) ||
                ldpb_ctxmodel_load(m, stats, LDPB_CTXSTAT_VALUES(CTX_D), shift, beta, NULL) ||
                ldpb_ctxmodel_choose(m, ties, x, CTX_K, &arm, &nt))
                return 1;
            if (t == 500)
                cos500 = cosine(m, theta);
            if (t == n - 1) /* the last model handed out: n - 1 reports */
                cosend = cosine(m, theta);
            double y = ctx_env_reward(&er, x + arm * CTX_D);
            if (ldpb_ctxstat_privatize(agg_ldp_linucb_mech(p), noise, x + arm * CTX_D, y, z) ||
                agg_ldp_linucb_add(p, z, LDPB_CTXSTAT_VALUES(CTX_D)))
                return 1;
            double r = ctx_env_regret(x, arm);
            if (t < 500)
                early += r == 0.0;
            if (t >= n - 1000) {
                late += r == 0.0;
                regret += r;
            }
        }
        printf("%d %.4f %.4f %.5f %.5f %.5f\n", run, early / 500.0, late / 1000.0, regret / 1000.0,
               cos500, cosend);
        agg_ldp_linucb_free(p);
        ldpb_ctxmodel_free(m);
        ldpb_rng_free(noise);
        ldpb_rng_free(ties);
    }
    return 0;
}
