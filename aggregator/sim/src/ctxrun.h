/* The contextual preset of `ldpb sim` ("shariff2018", docs/sim.md): Shariff & Sheffet 2018's
 * private-vs-non-private experiment (their App. D, run with the authors' experiment settings):
 * d = 5, k = d^2 = 25 fresh unit-norm actions per round, theta* a random unit vector, the optimal
 * action's mean 0.75, rewards on {-1, +1}, gaps 0.1 ("large") and 0 ("small"), (eps, delta) =
 * (1, 0.1), n = 5e7, 35 runs; LinUCB (rho = 1, alpha = 1/n) against JDP LinUCB with shifted
 * Wishart and with Gaussian tree noise (alpha = 1/(2n)), and beside them ldpb's local contextual
 * mode (ldp_linucb.h: devices choose on the device and send (epsilon, delta)-LDP statistics, the
 * same epsilon and per-user delta, alpha = 1/(2n)). The plan, a threaded batch runner and
 * the CSV writers, under the contracts of report.h (same headers, number formats and row order
 * rules). */
#ifndef LDPB_TOOLS_SIM_CTXRUN_H
#define LDPB_TOOLS_SIM_CTXRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctxsim.h"
#include "ldpb/err.h"

#define SIMCTX_PRESET     "shariff2018"
#define SIMCTX_D          5u
#define SIMCTX_HORIZON    50000000ULL
#define SIMCTX_TRIALS     35ULL
#define SIMCTX_EPSILON    1.0
#define SIMCTX_DELTA      0.1
#define SIMCTX_CFG_MAX    64u
#define SIMCTX_ERRMSG_MAX 320

typedef struct simctx_cfg {
    char label[48];    /* the preset column: "shariff2018-gap0.1" */
    char eps_text[32]; /* "inf" for linucb */
    double gap;
    agg_ctx_sim_config sim; /* checkpoints borrowed from the plan */
    /* The local contextual mode ("ldp-linucb-gaussian"): ldp is run instead of sim.policy
     * (sim.env and the checkpoints are the same). */
    int local;
    agg_ctx_ldp_sim_config ldp;
} simctx_cfg;

#define SIMCTX_LOCAL_NAME "ldp-linucb-gaussian"

/* The algorithm column of a configuration, and whether it is private (every one but linucb). */
const char *simctx_alg_name(const simctx_cfg *c);
int simctx_is_private(const simctx_cfg *c);

typedef struct simctx_plan {
    uint64_t horizon, trials;
    simctx_cfg cfg[SIMCTX_CFG_MAX];
    size_t n_cfg;
    uint64_t *checkpoints;
    size_t n_checkpoints;
} simctx_plan;

/* Builds the plan from the option texts (NULL: the preset's value): horizon and trials as
 * `ldpb sim` parses them, algorithms a comma list of linucb, jdp-linucb-wishart,
 * jdp-linucb-gaussian, ldp-linucb-gaussian, epsilons a comma list (the private algorithms run at
 * each). Every configuration is checked by the policy. LDPB_EINVAL / LDPB_ERANGE with one line in
 * errmsg. */
ldpb_err simctx_plan_build(simctx_plan *plan, const char *horizon, const char *trials,
                           const char *algorithms, const char *epsilons,
                           char errmsg[SIMCTX_ERRMSG_MAX]);
void simctx_plan_fini(simctx_plan *plan);

typedef void (*simctx_progress_fn)(void *ctx, uint64_t jobs_done, uint64_t jobs_total);

/* Runs every (configuration, trial) on `threads` threads: regret[c][i * n_checkpoints + j],
 * fails[c] the summed Cholesky failures of configuration c (for the local mode: the models
 * whose V needed the device's ridge). The result does not depend on the
 * thread count. The first error stops the batch. */
ldpb_err simctx_run(const simctx_plan *plan, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                    unsigned threads, double *const *regret, uint64_t *fails,
                    simctx_progress_fn progress, void *progress_ctx,
                    char errmsg[SIMCTX_ERRMSG_MAX]);

/* regret.csv and summary.csv (report.h's headers). 0, or -1 on a write error. */
int simctx_write_regret(const simctx_plan *plan, double *const *regret, FILE *f);
int simctx_write_summary(const simctx_plan *plan, double *const *regret, FILE *f);

/* The gnuplot script and data files under plots_dir (which, and plots_dir/data, must exist):
 * one log-log figure per gap, <label>.png and .svg. Returns the number of figures or -1. */
long simctx_write_plots(const simctx_plan *plan, double *const *regret, const char *plots_dir);

#endif
