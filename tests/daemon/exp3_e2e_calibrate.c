/* Not a test: the calibration of test_exp3_e2e.c's learning bounds. Runs the same game without
 * the daemon: the ldp-exp3-lap policy of the library and the clients' Laplace mechanism, K = 3,
 * reward 1 on arm 2 and 0 elsewhere, horizon 4000, epsilon 4; 300 rounds observed one by one,
 * then 2700 rounds whose reports arrive in groups of 4 after their assignments (the test's four
 * concurrent clients), each observed with its assignment's propensity as the daemon does. Prints
 * the range of the best arm's share in the first 300 rounds and in the last 1350, and how many
 * runs the test's bounds would fail. Usage: exp3_e2e_calibrate [RUNS] (default 100000). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp3_family.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"
#include "policy.h"

#define EARLY_MAX 0.65
#define LATE_MIN  0.6
#define GAIN_MIN  0.2

int main(int argc, char **argv)
{
    long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    double emin = 1, emax = 0, lmin = 1, lmax = 0, esum = 0, lsum = 0, dmin = 1;
    long bad = 0;
    for (long r = 0; r < runs; r++) {
        agg_policy_config cfg;
        agg_policy_config_init(&cfg);
        cfg.k = 3;
        cfg.horizon = 4000;
        cfg.epsilon = 4;
        cfg.mechanism = LDPB_MECH_LAPLACE;
        agg_policy *p = NULL;
        char msg[AGG_ERRMSG_MAX];
        uint8_t seed[LDPB_RNG_SEED_BYTES] = {0};
        memcpy(seed, &r, sizeof r);
        ldpb_rng *rng = NULL;
        ldpb_mech *m = NULL;
        ldpb_mech_opts mo;
        ldpb_mech_opts_init(&mo, LDPB_MECH_LAPLACE, cfg.epsilon);
        if (agg_policy_new(&p, "ldp-exp3-lap", &cfg, msg) || ldpb_rng_new_seeded(&rng, seed) ||
            ldpb_mech_new(&m, &mo)) {
            fprintf(stderr, "setup failed\n");
            return 1;
        }
        agg_rand rand;
        agg_rand_seed_u64(&rand, (uint64_t)r);
        agg_policy_env env = {&rand, NULL};
        int early = 0, late = 0, late_n = 0, np = 0;
        uint32_t parm[4];
        double pprob[4], pval[4];
        for (int t = 0; t < 3000; t++) {
            uint32_t arm;
            double prob, v;
            if (agg_policy_choose(p, &env, &arm) || agg_policy_propensity(p, &prob) ||
                ldpb_mech_privatize(m, rng, arm == 2 ? 1.0 : 0.0, &v))
                return 1;
            if (t < 300) {
                early += arm == 2;
                if (agg_policy_observe_with_propensity(p, &env, arm, v, prob))
                    return 1;
                continue;
            }
            if (t >= 300 + 1350) {
                late += arm == 2;
                late_n++;
            }
            parm[np] = arm;
            pprob[np] = prob;
            pval[np] = v;
            if (++np == 4) {
                for (int i = 0; i < 4; i++)
                    if (agg_policy_observe_with_propensity(p, &env, parm[i], pval[i], pprob[i]))
                        return 1;
                np = 0;
            }
        }
        double e = early / 300.0, l = (double)late / late_n;
        esum += e;
        lsum += l;
        emin = e < emin ? e : emin;
        emax = e > emax ? e : emax;
        lmin = l < lmin ? l : lmin;
        lmax = l > lmax ? l : lmax;
        dmin = l - e < dmin ? l - e : dmin;
        bad += !(e <= EARLY_MAX && l >= LATE_MIN && l - e >= GAIN_MIN);
        agg_policy_free(p);
        ldpb_rng_free(rng);
        ldpb_mech_free(m);
    }
    printf("%ld runs: first 300 rounds mean %.3f [%.3f, %.3f]; last 1350 mean %.3f [%.3f, %.3f];"
           " least gain %.3f; %ld fail the test's bounds\n",
           runs, esum / runs, emin, emax, lsum / runs, lmin, lmax, dmin, bad);
    return 0;
}
