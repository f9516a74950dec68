/* ldpb sim --preset shariff2018: the contextual experiment (aggregator/sim/src/ctxrun.c) with the
 * files of every `ldpb sim` run (regret.csv, summary.csv, meta.txt, run.txt, plots/) and a closing
 * note on the paper's ordering. docs/sim.md is the manual. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "ctxrun.h"
#include "ldpb/rng.h"
#include "outdir.h"
#include "plan.h"
#include "report.h"

#define PROG "ldpb sim"

struct prog {
    int enabled;
    double start, last;
};

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    struct prog *p = ctx;
    double t = simout_now_seconds();
    if (!p->enabled || (t - p->last < 10.0 && done != total))
        return;
    p->last = t;
    fprintf(stderr, "sim: %llu/%llu runs, %.0f s elapsed\n", (unsigned long long)done,
            (unsigned long long)total, t - p->start);
}

static FILE *open_out(const char *out, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", out, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "%s: cannot create %s: %s\n", PROG, path, strerror(errno));
    return f;
}

static int close_out(FILE *f, int bad, const char *name)
{
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "%s: cannot write %s\n", PROG, name);
        return 1;
    }
    return 0;
}

static double final_mean(const simctx_plan *p, double *const *regret, size_t c)
{
    simstat s;
    simstat_compute(regret[c] + p->n_checkpoints - 1, (size_t)p->trials, p->n_checkpoints, NULL,
                    &s);
    return s.mean;
}

int cmd_sim_ctx(const simplan_opts *o, const char *seed_text, unsigned threads, const char *out,
                int no_plots, int quiet, int argc, char **argv)
{
    const char *unused[][2] = {{"--means", o->means},           {"--laws", o->laws},
                               {"--mechanisms", o->mechanisms}, {"--k", o->ks},
                               {"--kappa", o->kappa},           {"--gamma", o->gamma},
                               {"--eps-arm", o->eps_arm}};
    for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
        if (unused[i][1]) {
            fprintf(stderr,
                    "%s: %s does not apply to --preset %s (it takes --horizon, --trials, "
                    "--algorithms, --epsilons)\n",
                    PROG, unused[i][0], SIMCTX_PRESET);
            return 2;
        }
    simctx_plan plan;
    char errmsg[SIMCTX_ERRMSG_MAX];
    ldpb_err err =
        simctx_plan_build(&plan, o->horizon, o->trials, o->algorithms, o->epsilons, errmsg);
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, errmsg);
        return err == LDPB_ENOMEM ? 1 : 2;
    }
    int rc = 1;
    double **regret = calloc(plan.n_cfg, sizeof *regret);
    uint64_t *fails = calloc(plan.n_cfg, sizeof *fails);
    char plots_dir[4200], data_dir[4300];
    snprintf(plots_dir, sizeof plots_dir, "%s/plots", out);
    snprintf(data_dir, sizeof data_dir, "%s/data", plots_dir);
    if (!regret || !fails)
        goto oom;
    for (size_t c = 0; c < plan.n_cfg; c++)
        if (!(regret[c] = calloc((size_t)plan.trials * plan.n_checkpoints, sizeof **regret)))
            goto oom;
    if (simout_make_dirs(out) != 0 ||
        (!no_plots && (simout_make_dirs(plots_dir) || simout_make_dirs(data_dir)))) {
        fprintf(stderr, "%s: cannot create the output directory %s: %s\n", PROG, out,
                strerror(errno));
        goto done;
    }
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    struct prog pr = {
        .enabled = !quiet, .start = simout_now_seconds(), .last = simout_now_seconds()};
    err = simctx_run(&plan, seed, threads, regret, fails, progress, &pr, errmsg);
    double seconds = simout_now_seconds() - pr.start;
    if (err) {
        fprintf(stderr, "%s: simulation failed: %s\n", PROG,
                errmsg[0] ? errmsg : ldpb_strerror(err));
        goto done;
    }
    FILE *f;
    if (!(f = open_out(out, "regret.csv")) ||
        close_out(f, simctx_write_regret(&plan, regret, f), "regret.csv"))
        goto done;
    if (!(f = open_out(out, "summary.csv")) ||
        close_out(f, simctx_write_summary(&plan, regret, f), "summary.csv"))
        goto done;
    char T[32];
    simplan_format_count(T, sizeof T, plan.horizon);
    if (!(f = open_out(out, "meta.txt")))
        goto done;
    fprintf(f, "# ldpb sim: the parameters of this run (the same give the same CSV files)\n");
    fprintf(f, "command: ldpb");
    for (int i = 0; i < argc; i++)
        fprintf(f, " %s", argv[i]);
    fprintf(f, "\npreset: %s\nseed: %s\nhorizon: %llu\ntrials: %llu\n", SIMCTX_PRESET, seed_text,
            (unsigned long long)plan.horizon, (unsigned long long)plan.trials);
    fprintf(f,
            "environment: d = %u, %u unit-norm actions per round, theta* uniform on the "
            "sphere, best mean 0.75, rewards in {-1, +1}\n",
            SIMCTX_D, SIMCTX_D * SIMCTX_D);
    fprintf(f, "delta: %g\nnoise: fast simulation generators (AGG_NOISE_FAST)\n", SIMCTX_DELTA);
    int any_local = 0;
    for (size_t c = 0; c < plan.n_cfg; c++)
        any_local |= plan.cfg[c].local;
    if (any_local)
        fprintf(f,
                "device_noise: %s: each round's report is drawn with the fast generators as a "
                "rounded normal in grid units in place of the exact discrete Gaussian sampler "
                "devices use (same clipping and rounding; total variation to the exact law "
                "0.0202 (g/sigma)^2 <= 2e-14 per entry, docs/sim.md); per-report delta = "
                "delta\n",
                SIMCTX_LOCAL_NAME);
    for (size_t c = 0; c < plan.n_cfg; c++) {
        if (plan.cfg[c].local) {
            agg_ldp_linucb *lp = NULL;
            agg_ldp_linucb_bounds b0, bn;
            if (agg_ldp_linucb_new(&lp, &plan.cfg[c].ldp.policy, NULL) == LDPB_OK &&
                agg_ldp_linucb_bounds_at(lp, 1, &b0) == LDPB_OK &&
                agg_ldp_linucb_bounds_at(lp, plan.horizon, &bn) == LDPB_OK) {
                const ldpb_ctxstat *m = agg_ldp_linucb_mech(lp);
                fprintf(f,
                        "config %zu: %s %s eps %s delta_per_report %g alpha %.6g sigma %.6g "
                        "grid %.6g epsilon_effective %.6g shift_at_1 %.6g shift_at_n %.6g "
                        "rho_min_at_n %.6g rho_max_at_n %.6g gamma_at_n %.6g model_repairs "
                        "%llu\n",
                        c, plan.cfg[c].label, SIMCTX_LOCAL_NAME, plan.cfg[c].eps_text,
                        plan.cfg[c].ldp.policy.delta, plan.cfg[c].ldp.policy.alpha,
                        ldpb_ctxstat_sigma(m), ldpb_ctxstat_grid(m),
                        ldpb_ctxstat_epsilon_effective(m), b0.shift, bn.shift, bn.rho_min,
                        bn.rho_max, bn.gamma, (unsigned long long)fails[c]);
            }
            agg_ldp_linucb_free(lp);
            continue;
        }
        const agg_linucb_config *pc = &plan.cfg[c].sim.policy;
        agg_linucb_constants k;
        agg_linucb_constants_of(pc, &k, NULL);
        fprintf(f,
                "config %zu: %s %s eps %s alpha %.6g m %u k %.17g shift %.6g rho_min %.6g "
                "rho_max %.6g gamma %.6g cholesky_failures %llu%s%s\n",
                c, plan.cfg[c].label, agg_linucb_variant_name(pc->variant), plan.cfg[c].eps_text,
                k.alpha, k.m, k.k, k.shift, k.rho_min, k.rho_max, k.gamma,
                (unsigned long long)fails[c], pc->variant == AGG_LINUCB_PLAIN ? "" : " tree ",
                pc->variant == AGG_LINUCB_PLAIN ? "" : agg_linucb_tree_name(k.tree));
    }
    if (close_out(f, ferror(f), "meta.txt"))
        goto done;
    if (!(f = open_out(out, "run.txt")))
        goto done;
    {
        char date[64] = "unknown";
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm))
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
        uint64_t rounds = plan.horizon * plan.trials * plan.n_cfg;
        fprintf(f, "# ldpb sim: facts of this execution that do not affect the results\n");
        fprintf(f,
                "date: %s\nwall_seconds: %.3f\nthreads: %u\nrounds: %llu\n"
                "rounds_per_second: %.4g\n",
                date, seconds, threads, (unsigned long long)rounds,
                seconds > 0 ? (double)rounds / seconds : 0.0);
    }
    if (close_out(f, ferror(f), "run.txt"))
        goto done;
    long figures = 0;
    if (!no_plots) {
        figures = simctx_write_plots(&plan, regret, plots_dir);
        if (figures < 0) {
            fprintf(stderr, "%s: cannot write the plots under %s\n", PROG, plots_dir);
            goto done;
        }
        int st = simout_run_gnuplot(plots_dir, "plots.gp");
        if (st == 127) {
            fprintf(stderr,
                    "%s: warning: gnuplot not found; plots skipped (cd %s && gnuplot "
                    "plots.gp)\n",
                    PROG, plots_dir);
            figures = 0;
        } else if (st != 0) {
            fprintf(stderr, "%s: gnuplot failed (status %d); see %s/gnuplot.log\n", PROG, st,
                    plots_dir);
            goto done;
        }
    }

    printf("%s: %s, %zu configurations x %llu trials, T = %s, seed '%s': %.1f s on %u thread%s\n\n",
           PROG, SIMCTX_PRESET, plan.n_cfg, (unsigned long long)plan.trials, T, seed_text, seconds,
           threads, threads == 1 ? "" : "s");
    printf("%-20s  %-20s  %-7s  %14s  %23s  %s\n", "preset", "algorithm", "epsilon", "final regret",
           "95% interval", "cholesky failures");
    for (size_t c = 0; c < plan.n_cfg; c++) {
        simstat s;
        simstat_compute(regret[c] + plan.n_checkpoints - 1, (size_t)plan.trials, plan.n_checkpoints,
                        NULL, &s);
        printf("%-20s  %-20s  %-7s  %14.6g  [%10.6g, %10.6g]  %llu\n", plan.cfg[c].label,
               simctx_alg_name(&plan.cfg[c]), plan.cfg[c].eps_text, s.mean, s.lo, s.hi,
               (unsigned long long)fails[c]);
    }
    /* SS18 App. D's claim: the private curves lie above the non-private one. */
    printf("\nclaim (Shariff & Sheffet 2018, App. D): private regret above LinUCB's\n");
    for (size_t c = 0; c < plan.n_cfg; c++) {
        if (plan.cfg[c].local || plan.cfg[c].sim.policy.variant == AGG_LINUCB_PLAIN)
            continue;
        size_t base = plan.n_cfg;
        for (size_t b = 0; b < plan.n_cfg; b++)
            if (plan.cfg[b].gap == plan.cfg[c].gap && !simctx_is_private(&plan.cfg[b]))
                base = b;
        if (base == plan.n_cfg)
            continue;
        double r = final_mean(&plan, regret, c), r0 = final_mean(&plan, regret, base);
        printf("  %-20s %-20s eps %-4s %12.6g vs linucb %12.6g  ratio %.3g  %s\n",
               plan.cfg[c].label, agg_linucb_variant_name(plan.cfg[c].sim.policy.variant),
               plan.cfg[c].eps_text, r, r0, r0 > 0 ? r / r0 : INFINITY,
               r > r0 ? "holds" : "does not hold");
    }
    /* The local mode beside JDP (issue: show its regret next to JDP LinUCB): a ratio only;
     * the paper makes no claim about it. */
    int header = 0;
    for (size_t c = 0; c < plan.n_cfg; c++) {
        if (!plan.cfg[c].local)
            continue;
        size_t base = plan.n_cfg;
        for (size_t b = 0; b < plan.n_cfg; b++)
            if (plan.cfg[b].gap == plan.cfg[c].gap && !plan.cfg[b].local &&
                plan.cfg[b].sim.policy.variant == AGG_LINUCB_GAUSSIAN &&
                strcmp(plan.cfg[b].eps_text, plan.cfg[c].eps_text) == 0)
                base = b;
        if (base == plan.n_cfg)
            continue;
        if (!header)
            printf("\nlocal mode (ldpb; no claim in the paper): regret of %s against "
                   "jdp-linucb-gaussian at the same epsilon and per-user delta\n",
                   SIMCTX_LOCAL_NAME);
        header = 1;
        double r = final_mean(&plan, regret, c), r0 = final_mean(&plan, regret, base);
        printf("  %-20s %-20s eps %-4s %12.6g vs jdp-linucb-gaussian %12.6g  ratio %.3g\n",
               plan.cfg[c].label, SIMCTX_LOCAL_NAME, plan.cfg[c].eps_text, r, r0,
               r0 > 0 ? r / r0 : INFINITY);
    }
    printf("\nwrote %s/regret.csv, %s/summary.csv, %s/meta.txt, %s/run.txt", out, out, out, out);
    if (figures > 0)
        printf(", %ld figure%s in %s (PNG and SVG)", figures, figures == 1 ? "" : "s", plots_dir);
    printf("\n");
    rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    goto done;
oom:
    fprintf(stderr, "%s: %s\n", PROG, ldpb_strerror(LDPB_ENOMEM));
done:
    if (regret)
        for (size_t c = 0; c < plan.n_cfg; c++)
            free(regret[c]);
    free(regret);
    free(fails);
    simctx_plan_fini(&plan);
    return rc;
}
