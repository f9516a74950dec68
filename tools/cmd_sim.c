/* ldpb sim: simulate bandit algorithms under local, central or no privacy and write regret
 * curves, a summary and plots (the options and the CSV header are a contract; docs/sim.md
 * is the manual). The command parses options, builds the plan (aggregator/sim/src/plan.c) and runs
 * the batch on the engine (aggregator/sim/src/sim.c) through libldpb-sim's public API (ldpb/sim.h,
 * the calls the Python package makes) with a progress line on stderr, writes the files
 * (aggregator/sim/src/report.c, plot.c), runs gnuplot, and prints a summary with the paper claims
 * that the run can check (docs/sim.md lists them). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "commands.h"
#include "ctxrun.h"
#include "api_internal.h"
#include "ftal.h"
#include "ldpb/sim.h"
#include "ldpb/rng.h"
#include "nas.h"
#include "outdir.h"
#include "plan.h"
#include "plot.h"
#include "poison.h"
#include "report.h"
#include "sim.h"

#ifndef LDPB_VERSION_STRING
#define LDPB_VERSION_STRING "unknown"
#endif

#define PROG "ldpb sim"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

#define THREADS_MAX 1024
#define ECHO_MAX    40
#define PATH_BYTES  4096

struct args {
    simplan_opts plan;
    const char *seed;
    const char *threads;
    const char *out;
    const char *gaps; /* sajed2019-nas only */
    const char *poison_fraction, *poison_strategy;
    int no_plots;
    int quiet;
};

static void usage(FILE *f)
{
    char gamma_readers[128], eps_arm_readers[128];
    agg_policy_readers(AGG_PARAM_GAMMA, gamma_readers, sizeof gamma_readers);
    agg_policy_readers(AGG_PARAM_EPS_ARM, eps_arm_readers, sizeof eps_arm_readers);
    fprintf(f,
            "usage: ldpb sim --preset NAME [--trials N] [--horizon T] [--threads N] [--seed S]\n"
            "                [--out DIR] [--epsilons LIST] [--k LIST] [--algorithms LIST]\n"
            "                [--mechanisms LIST] [--kappa K] [--gamma G] [--eps-arm E]\n"
            "                [--tau N] [--threshold B]\n"
            "                [--poison-fraction F] [--poison-strategy S]\n"
            "                [--no-plots] [--quiet]\n"
            "       ldpb sim (--means LIST | --laws LIST) --algorithms LIST [--mechanisms LIST]\n"
            "                [--epsilons LIST] [--horizon T] [--trials N] [...]\n"
            "\n"
            "Simulates bandit algorithms on an instance and writes, under DIR:\n"
            "  regret.csv   mean cumulative pseudo-regret and its 95%% interval across trials at\n"
            "               log-spaced t (%u per decade), one row group per configuration\n"
            "  summary.csv  final regret per configuration (mean, interval, sd, median, min, max)\n"
            "  robust.csv   regret.csv's rows plus the median of 24 means and Gini's mean\n"
            "               difference below and above it (Tossou & Dimitrakakis 2017)\n"
            "  meta.txt     the parameters (no dates); run.txt: wall time, threads, date\n"
            "  plots/       regret vs t on log-log axes with lower-bound shapes (PNG and SVG)\n"
            "The same seed gives byte-identical CSV files whatever the number of threads.\n"
            "\n"
            "options (LIST is comma-separated):\n"
            "  --preset NAME        a paper's experiment (below); --horizon, --trials,\n"
            "                       --epsilons and --k replace its values; --algorithms and\n"
            "                       --mechanisms keep only the listed ones of it\n"
            "  --means LIST         custom instance of Bernoulli arms, means in [0, 1]\n"
            "  --laws LIST          custom instance, each arm a law: bernoulli:P, beta:A:B,\n"
            "                       twopoint:LO:HI, uniform:LO:HI, each optionally '*N'\n"
            "                       (e.g. 'bernoulli:0.9,beta:4:1*5,uniform:0:1*4')\n"
            "  --algorithms LIST    algorithms to run (required for a custom instance):\n",
            SIMPLAN_PER_DECADE);
    size_t n;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    static const struct {
        agg_model model;
        const char *what;
    } groups[] = {{AGG_MODEL_NONPRIVATE, "non-private"},
                  {AGG_MODEL_LOCAL, "local DP (LOCAL)"},
                  {AGG_MODEL_CENTRAL, "central DP (CENTRAL)"}};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        fprintf(f, "                         %-21s", groups[g].what);
        const char *sep = "";
        for (size_t i = 0; i < n; i++)
            if (all[i]->model == groups[g].model) {
                fprintf(f, "%s%s", sep, all[i]->name);
                sep = ", ";
            }
        fputc('\n', f);
    }
    fprintf(f,
            "  --mechanisms LIST    linear, quadratic, exponential, laplace: each LOCAL algorithm\n"
            "                       runs with every listed mechanism it accepts (default: all);\n"
            "                       an error if it accepts none (CSV: none for the others)\n"
            "  --epsilons LIST      epsilons in (0, %g]; LOCAL and CENTRAL algorithms run once\n"
            "                       per epsilon, non-private ones once (CSV epsilon inf)\n"
            "                       (custom default: %s)\n"
            "  --k LIST             sajed2019 presets only: the K sweep, each in [2, %u]\n"
            "  --horizon T          rounds per trial, a whole number in [K, 1e12]; scientific\n"
            "                       notation is fine (1e5, 5e7) (custom default: %llu)\n"
            "  --trials N           independent trials per configuration, in [1, 1e6]\n"
            "                       (custom default: %llu)\n"
            "  --seed S             any text; every random stream derives from it (default %s)\n"
            "  --threads N          worker threads, in [1, %d] (default: online CPUs)\n"
            "  --out DIR            output directory, created if missing (default %s)\n"
            "  --kappa K            quadratic mechanism curvature, in [-1, 1] (default %g)\n"
            "  --gamma G            dp-ucb: failure probability in (0, 1) (default 1/T); the\n"
            "                       EXP3 family: exploration rate in (0, 1] (default Auer et\n"
            "                       al. 2002, Cor. 3.2). Read by: %s\n"
            "  --eps-arm E          per-arm tree budget of the algorithms that read it: %s;\n"
            "                       above an epsilon of the run it is refused (default epsilon)\n"
            "  --tau N              exp3-tau's block length, in [1, T] (default ceil(T^(1/3)))\n"
            "  --threshold B        dp-exp3-lap / ldp-exp3-lap: accept observations in\n"
            "                       [-B, 1 + B], B > 0 (default ln(T)/epsilon); bound-min:\n"
            "                       the B that minimises the regret bound (docs/derivations.md)\n"
            "  --poison-fraction F  each round goes, with probability F in [0, 0.5], to a\n"
            "                       poisoning device that reports the extreme value the\n"
            "                       aggregator admits for the arm's mechanism (a bit 0/1,\n"
            "                       a laplace real 100/epsilon beyond [0, 1], a raw reward\n"
            "                       0/1); regret is the honest devices' (docs/sim.md,\n"
            "                       \"Poisoning\"); stochastic instances only, not the\n"
            "                       contextual, ftal, nas or tossou2017 presets\n"
            "  --poison-strategy S  demote-best (default: the lowest value for the best arm,\n"
            "                       the highest for the others) or promote-worst (the highest\n"
            "                       for the worst arm, the lowest for the others)\n"
            "  --no-plots           write the CSV files only\n"
            "  --quiet              no progress line on stderr\n"
            "  -h, --help           print this help and exit\n"
            "\n"
            "presets:\n",
            LDPB_EPSILON_MAX, SIMPLAN_CUSTOM_EPS, AGG_ENV_K_MAX,
            (unsigned long long)SIMPLAN_CUSTOM_HORIZON, (unsigned long long)SIMPLAN_CUSTOM_TRIALS,
            SIMPLAN_DEFAULT_SEED, THREADS_MAX, SIMPLAN_DEFAULT_OUT, LDPB_KAPPA_DEFAULT,
            gamma_readers, eps_arm_readers);
    size_t np;
    const simplan_preset_info *pi = simplan_presets(&np);
    for (size_t i = 0; i < np; i++) {
        fprintf(f, "  %s\n", pi[i].name);
        const char *s = pi[i].summary;
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            fprintf(f, "      %.*s\n", (int)len, s);
            s += len + (nl ? 1 : 0);
        }
    }
    fprintf(f,
            "  %s\n      Shariff & Sheffet 2018 (App. D): contextual, d = %u, %u unit actions per\n"
            "      round, gaps 0.1 and 0, rewards in {-1, +1}; linucb vs jdp-linucb-wishart\n"
            "      and jdp-linucb-gaussian at eps 1, delta %g, and the local mode\n"
            "      ldp-linucb-gaussian (per-report delta the same); T = 5e7, 35 trials\n"
            "      (takes --horizon, --trials, --algorithms, --epsilons)\n",
            SIMCTX_PRESET, SIMCTX_D, SIMCTX_D * SIMCTX_D, SIMCTX_DELTA);
    const char *fname;
    for (size_t i = 0; simftal_preset_summary(i, &fname); i++) {
        fprintf(f, "  %s\n", fname);
        const char *s = simftal_preset_summary(i, &fname);
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            fprintf(f, "      %.*s\n", (int)len, s);
            s += len + (nl ? 1 : 0);
        }
    }
    fprintf(f,
            "  %s\n"
            "      a stopping experiment, not a regret run: DP-NAS and DP exponential NAS\n"
            "      (SS19 Algs. 1, 2) on samples in {-1, +1} with mean Delta until they halt;\n"
            "      --gaps LIST (Delta, each in [%g, 1), default %s) x --epsilons\n"
            "      (default %s); --algorithms dp-nas,dp-exp-nas; alpha %g, beta %g;\n"
            "      %llu trials. Writes DIR/%s (samples to stop against the rate of SS19\n"
            "      Thm 3.3, wrong-decision and failure rates against beta), meta.txt,\n"
            "      run.txt and plots/, but no regret.csv or summary.csv (no regret here);\n"
            "      --means, --laws, --mechanisms, --k, --horizon, --kappa, --gamma and\n"
            "      --eps-arm do not apply\n",
            SIMNAS_PRESET, SIMNAS_GAP_MIN, SIMNAS_GAPS, SIMNAS_EPS, SIMNAS_ALPHA, SIMNAS_BETA,
            (unsigned long long)SIMNAS_TRIALS, SIMNAS_CSV);
    fprintf(f,
            "\n"
            "Regret is pseudo-regret from the true means (against a tossou2017 adversary:\n"
            "regret against the best fixed arm); the interval is mean -/+\n"
            "t(0.975, n-1) sd/sqrt(n) over n trials. Central-DP noise is the fast textbook\n"
            "Laplace sampler (AGG_NOISE_FAST), allowed in simulation only.\n"
            "Exit status: 0 success, 1 runtime error (I/O, memory, gnuplot), 2 bad arguments.\n");
}

static const tool_option options[] = {
    {"preset", TOOL_OPT_VALUE, offsetof(struct args, plan.preset)},
    {"means", TOOL_OPT_VALUE, offsetof(struct args, plan.means)},
    {"laws", TOOL_OPT_VALUE, offsetof(struct args, plan.laws)},
    {"algorithms", TOOL_OPT_VALUE, offsetof(struct args, plan.algorithms)},
    {"mechanisms", TOOL_OPT_VALUE, offsetof(struct args, plan.mechanisms)},
    {"epsilons", TOOL_OPT_VALUE, offsetof(struct args, plan.epsilons)},
    {"k", TOOL_OPT_VALUE, offsetof(struct args, plan.ks)},
    {"horizon", TOOL_OPT_VALUE, offsetof(struct args, plan.horizon)},
    {"trials", TOOL_OPT_VALUE, offsetof(struct args, plan.trials)},
    {"kappa", TOOL_OPT_VALUE, offsetof(struct args, plan.kappa)},
    {"gamma", TOOL_OPT_VALUE, offsetof(struct args, plan.gamma)},
    {"eps-arm", TOOL_OPT_VALUE, offsetof(struct args, plan.eps_arm)},
    {"tau", TOOL_OPT_VALUE, offsetof(struct args, plan.tau)},
    {"threshold", TOOL_OPT_VALUE, offsetof(struct args, plan.threshold)},
    {"seed", TOOL_OPT_VALUE, offsetof(struct args, seed)},
    {"threads", TOOL_OPT_VALUE, offsetof(struct args, threads)},
    {"out", TOOL_OPT_VALUE, offsetof(struct args, out)},
    {"gaps", TOOL_OPT_VALUE, offsetof(struct args, gaps)},
    {"poison-fraction", TOOL_OPT_VALUE, offsetof(struct args, poison_fraction)},
    {"poison-strategy", TOOL_OPT_VALUE, offsetof(struct args, poison_strategy)},
    {"no-plots", TOOL_OPT_FLAG, offsetof(struct args, no_plots)},
    {"quiet", TOOL_OPT_FLAG, offsetof(struct args, quiet)},
};

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const tool_parse_spec spec = {PROG, options, sizeof options / sizeof options[0], usage,
                                         1};
    memset(a, 0, sizeof *a);
    return tool_parse_options(&spec, argc, argv, a);
}

static int parse_threads(const char *text, unsigned *out)
{
    char e[ECHO_MAX + 4];
    uint64_t v;
    const char *why = simplan_parse_count(text, &v);
    if (why) {
        fprintf(stderr, "%s: --threads '%s' %s\n", PROG, tool_echo(e, sizeof e, text), why);
        return EXIT_USAGE;
    }
    if (v < 1 || v > THREADS_MAX) {
        fprintf(stderr, "%s: --threads %s outside [1, %d]\n", PROG, tool_echo(e, sizeof e, text),
                THREADS_MAX);
        return EXIT_USAGE;
    }
    *out = (unsigned)v;
    return 0;
}

/* The progress line: at most once a second, in place on a terminal (carriage return), a new
 * line every 10 s otherwise; nothing during the first second. */
struct progress {
    int enabled, tty;
    double start, last, last_line;
    size_t width; /* of the line on screen, to blank it */
};

static void progress_cb(void *ctx, const ldpb_sim_progress *g)
{
    struct progress *p = ctx;
    if (!p->enabled)
        return;
    double t = simout_now_seconds(), el = t - p->start;
    if (el < 1.0 || t - p->last < 1.0 || (!p->tty && t - p->last_line < 10.0))
        return;
    p->last = t;
    p->last_line = t;
    double frac = g->rounds_total ? (double)g->rounds_done / (double)g->rounds_total : 0.0;
    double work = g->work_done;
    char line[160], left[48] = "";
    if (work > 0.0 && work < 1.0)
        snprintf(left, sizeof left, ", ~%.0f s left", el * (1.0 - work) / work);
    int n = snprintf(line, sizeof line, "sim: %llu/%llu runs, %.1f%% of rounds, %.0f s elapsed%s",
                     (unsigned long long)g->runs_done, (unsigned long long)g->runs_total,
                     100.0 * frac, el, left);
    size_t len = n > 0 ? (size_t)n : 0;
    if (p->tty) {
        fprintf(stderr, "\r%s%*s", line, p->width > len ? (int)(p->width - len) : 0, "");
        p->width = len;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

static void progress_clear(struct progress *p)
{
    if (p->enabled && p->tty && p->width) {
        fprintf(stderr, "\r%*s\r", (int)p->width, "");
        fflush(stderr);
    }
}

/* Writes a file through a temporary name and a rename, so a reader never sees half of it. */
static int write_text(const char *dir, const char *name, int (*fn)(const void *, FILE *),
                      const void *ctx)
{
    char path[PATH_BYTES], tmp[PATH_BYTES + 8];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot create %s: %s\n", PROG, tmp, strerror(errno));
        return EXIT_RUNTIME;
    }
    int bad = fn(ctx, f);
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        (void)remove(tmp);
        fprintf(stderr, "%s: cannot write %s: %s\n", PROG, path, strerror(err));
        return EXIT_RUNTIME;
    }
    return 0;
}

static int regret_fn(const void *ctx, FILE *f)
{
    return simreport_write_regret(ctx, f);
}

static int summary_fn(const void *ctx, FILE *f)
{
    return simreport_write_summary(ctx, f);
}

static int robust_fn(const void *ctx, FILE *f)
{
    return simreport_write_robust(ctx, f);
}

/* A word of the command line as the shell would need it. */
static void put_shell_word(FILE *f, const char *s)
{
    if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._,:=/+-") ==
                  strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

struct meta_ctx {
    const simplan *plan;
    const agg_poison *poison;
    int argc;
    char **argv;
    const char *seed;
};

static int write_meta(const struct meta_ctx *m, FILE *f)
{
    const simplan *p = m->plan;
    char T[32], beta[32];
    simplan_format_count(T, sizeof T, p->horizon);
    simplan_format_double(beta, sizeof beta, p->beta);
    fprintf(f, "# ldpb sim: the parameters of this run (no dates, so a rerun gives the same\n"
               "# file; wall time and date are in run.txt). docs/sim.md explains each line.\n");
    fprintf(f, "command: ldpb");
    for (int i = 0; i < m->argc; i++) {
        fputc(' ', f);
        put_shell_word(f, m->argv[i]);
    }
    fprintf(f, "\nversion: %s\n", LDPB_VERSION_STRING);
    fprintf(f, "preset: %s\n", p->preset);
    fprintf(f, "seed: ");
    put_shell_word(f, m->seed);
    fprintf(f, " (32-byte key = ldpb_rng_seed_from_text; trial i, purpose, arm -> ChaCha20 "
               "stream, see docs/sim.md)\n");
    fprintf(f, "horizon: %llu (%s)\ntrials: %llu\n", (unsigned long long)p->horizon, T,
            (unsigned long long)p->trials);
    fprintf(f, "checkpoints: %zu, log-spaced, %u per decade, from %llu to %llu\n", p->n_checkpoints,
            SIMPLAN_PER_DECADE, (unsigned long long)p->checkpoints[0],
            (unsigned long long)p->checkpoints[p->n_checkpoints - 1]);
    if (p->inst[0].adv)
        fprintf(f, "regret: against the best fixed arm in hindsight at each checkpoint, max_i "
                   "sum_{s<=t} g_i,s - sum_{s<=t} (the learner's gain), realized gains; a switch "
                   "gains 0 against the switching adversary\n");
    else
        fprintf(f, "regret: pseudo-regret sum_t (mu* - mu(a_t)) from the true means\n");
    fprintf(f, "statistics: mean over trials; 95%% interval mean -/+ t(0.975, n-1) sd/sqrt(n), "
               "Student t, n = trials (n = 1: the interval is the mean, sd 0)\n");
    fprintf(f, "central noise: AGG_NOISE_FAST (textbook inverse-CDF Laplace on a seeded "
               "xoshiro256++ stream; simulation only)\n");
    fprintf(f, "local mechanisms: production ldpb_mech code; Bernoulli endpoints max-span "
               "p0 = 1/(e^eps+1), p1 = e^eps/(e^eps+1)\n");
    fprintf(f, "kappa (quadratic): %.17g\nlambda (exponential): epsilon\n", p->kappa);
    fprintf(f, "beta (se, ldp-se, dp-se): 1/T = %s\n", beta);
    if (p->gamma == 0 && p->eps_arm == 0) {
        fprintf(f, "dp-ucb: gamma = 1/T, eps_arm = epsilon (policy defaults)\n");
    } else {
        char g[32] = "1/T", e[32] = "epsilon";
        if (p->gamma != 0)
            simplan_format_double(g, sizeof g, p->gamma);
        if (p->eps_arm != 0)
            simplan_format_double(e, sizeof e, p->eps_arm);
        fprintf(f, "dp-ucb: gamma = %s, eps_arm = %s\n", g, e);
    }
    if (p->gamma == 0)
        fprintf(f, "exp3 family: gamma = min(1, sqrt(K ln K / ((e-1) n))), n = T (exp3-tau: "
                   "ceil(T/tau)) (policy default)\n");
    fprintf(f, "dp-exp3-lap threshold b = ln(T)/epsilon; exp3-tau tau = ceil(T^(1/3)) (policy "
               "defaults unless set below)\n");
    if (p->tau)
        fprintf(f, "tau (exp3-tau): %llu (--tau)\n", (unsigned long long)p->tau);
    if (p->threshold > 0.0)
        fprintf(f, "threshold (dp-exp3-lap, ldp-exp3-lap): %.17g (--threshold)\n", p->threshold);
    else if (p->threshold == AGG_EXP3_THRESHOLD_BOUND_MIN)
        fprintf(f, "threshold (dp-exp3-lap, ldp-exp3-lap): bound-min (--threshold), b = max(0, "
                   "ln(epsilon sqrt(T) / (2 C sqrt(K ln K))) / epsilon), C = 2 sqrt(e - 1)\n");
    fprintf(f,
            "robust.csv: median of means over min(%u, trials) groups in trial order; GMD of "
            "the trials <= and >= it\n",
            SIMREPORT_MOM_GROUPS);
    for (size_t i = 0; i < p->n_inst; i++) {
        const simplan_instance *in = &p->inst[i];
        if (in->adv) {
            const agg_adv_params *ap = agg_adv_get_params(in->adv);
            fprintf(f,
                    "instance: %s k=%u adversary=%s det_const=%.17g det_period=%llu "
                    "det_rest=%.17g stoch_first=%.17g stoch_rest=%.17g obl_eps=%.17g "
                    "obl_period=%llu sw_sigma=%.17g sw_eps=%.17g source=%s\n",
                    in->label, in->k, agg_adv_kind_name(ap->kind), ap->det_const,
                    (unsigned long long)ap->det_period, ap->det_rest, ap->stoch_first,
                    ap->stoch_rest, ap->obl_eps, (unsigned long long)ap->obl_period, ap->sw_sigma,
                    ap->sw_eps, in->source);
            continue;
        }
        size_t need = simplan_env_text(in->env, NULL, 0) + 1;
        char *text = malloc(need);
        if (!text) {
            errno = ENOMEM;
            return -1;
        }
        simplan_env_text(in->env, text, need);
        fprintf(f, "instance: %s k=%u laws=%s source=%s\n", in->label, in->k, text, in->source);
        free(text);
    }
    if (m->poison->fraction > 0.0)
        fprintf(f,
                "poisoning: each round with probability %.17g (stream: trial i, purpose client, "
                "id 1), strategy %s, each the extreme admissible report; regret counts the "
                "honest devices' rounds only\n",
                m->poison->fraction, agg_poison_strategy_name(m->poison->strategy));
    fprintf(f, "configurations: %zu\n", p->n_cfg);
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        fprintf(f, "config %zu: %s %s %s epsilon=%s k=%u\n", c, p->inst[cfg->instance].label,
                cfg->ops->name, simplan_mech_name(cfg), cfg->eps_text, p->inst[cfg->instance].k);
    }
    return ferror(f) ? -1 : 0;
}

static int meta_fn(const void *ctx, FILE *f)
{
    return write_meta(ctx, f);
}

struct run_ctx {
    double seconds;
    unsigned threads;
    uint64_t rounds;
};

static int run_fn(const void *ctx, FILE *f)
{
    const struct run_ctx *r = ctx;
    char date[64] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "# ldpb sim: facts of this execution that do not affect the results\n");
    fprintf(f, "date: %s\nwall_seconds: %.3f\nthreads: %u\nrounds: %llu\nrounds_per_second: %.4g\n",
            date, r->seconds, r->threads, (unsigned long long)r->rounds,
            r->seconds > 0 ? (double)r->rounds / r->seconds : 0.0);
    return ferror(f) ? -1 : 0;
}

/* Draws the run's figures: `gnuplot plots.gp` in dir (outdir.h). */
static int run_gnuplot(const char *dir)
{
    return simout_run_gnuplot(dir, SIMPLOT_SCRIPT);
}

/* Runs gnuplot on the figures' script in plots_dir, or warns that it is not on PATH (the CSV
 * files are written either way). 0, with *drawn set, or -1 after saying why gnuplot failed. */
static int draw_figures(const char *plots_dir, int *drawn)
{
    *drawn = 0;
    if (!simout_have_program("gnuplot")) {
        fprintf(stderr,
                "%s: warning: gnuplot not found on PATH; plots skipped (the CSV files are "
                "written; to draw later: cd %s && gnuplot %s)\n",
                PROG, plots_dir, SIMPLOT_SCRIPT);
        return 0;
    }
    int st = run_gnuplot(plots_dir);
    if (st != 0) {
        fprintf(stderr, "%s: gnuplot failed (status %d); see %s/gnuplot.log\n", PROG, st,
                plots_dir);
        return -1;
    }
    *drawn = 1;
    return 0;
}

static void config_name(char *dst, size_t cap, const simplan *p, const simplan_config *c)
{
    snprintf(dst, cap, "%s %s %s eps %s k %u", p->inst[c->instance].label, c->ops->name,
             simplan_mech_name(c), c->eps_text, p->inst[c->instance].k);
}

static void print_table(const simplan *p, const simreport *r)
{
    size_t w_label = strlen("preset"), w_alg = strlen("algorithm"), w_eps = strlen("epsilon");
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        size_t l = strlen(p->inst[cfg->instance].label);
        w_label = l > w_label ? l : w_label;
        w_alg = strlen(cfg->ops->name) > w_alg ? strlen(cfg->ops->name) : w_alg;
        w_eps = strlen(cfg->eps_text) > w_eps ? strlen(cfg->eps_text) : w_eps;
    }
    printf("%-*s  %-*s  %-11s  %-*s  %5s  %14s  %s\n", (int)w_label, "preset", (int)w_alg,
           "algorithm", "mechanism", (int)w_eps, "epsilon", "k", "final regret", "95% interval");
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        const simstat *s = &r->final[c];
        char iv[64];
        snprintf(iv, sizeof iv, "[%.6g, %.6g]", s->lo, s->hi);
        printf("%-*s  %-*s  %-11s  %-*s  %5u  %14.6g  %s\n", (int)w_label,
               p->inst[cfg->instance].label, (int)w_alg, cfg->ops->name, simplan_mech_name(cfg),
               (int)w_eps, cfg->eps_text, p->inst[cfg->instance].k, s->mean, iv);
    }
}

static long find_cfg(const simplan *p, size_t inst, const char *alg, ldpb_mech_kind mech,
                     double eps)
{
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        if (cfg->instance == inst && strcmp(cfg->ops->name, alg) == 0 && cfg->mechanism == mech &&
            cfg->epsilon == eps)
            return (long)c;
    }
    return -1;
}

/* The paper claims (docs/sim.md) that the configurations of this run can check, on the final
 * mean regret (point estimates: read them with the intervals above). */
static void print_claims(const simplan *p, const simreport *r)
{
    char T[32];
    simplan_format_count(T, sizeof T, p->horizon);
    int header = 0;
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        if (strcmp(cfg->ops->name, "dp-se") != 0)
            continue;
        long u = find_cfg(p, cfg->instance, "dp-ucb", 0, cfg->epsilon);
        if (u < 0)
            continue;
        if (!header) {
            printf("\nclaim A5 (SS19 5, stated at T = 5e7): DP-SE's regret is at "
                   "least 5x below DP-UCB's; here at T = %s\n",
                   T);
            printf("  %-14s %5s  %-8s %14s %14s %8s\n", "preset", "k", "epsilon", "dp-ucb", "dp-se",
                   "ratio");
            header = 1;
        }
        double a = r->final[u].mean, b = r->final[c].mean;
        double ratio = b > 0 ? a / b : INFINITY;
        printf("  %-14s %5u  %-8s %14.6g %14.6g %8.3g  %s\n", p->inst[cfg->instance].label,
               p->inst[cfg->instance].k, cfg->eps_text, a, b, ratio,
               ratio >= 5.0 ? "holds" : "does not hold");
    }
    /* A6: a trial's regret stops growing once DP-SE is down to one arm (the best, on these
     * instances), so the mean curve is exactly flat from the checkpoint by which every trial
     * got there; a curve still rising at T is a run too short for the claim's condition. */
    header = 0;
    size_t nj = p->n_checkpoints;
    for (size_t c = 0; c < p->n_cfg && nj > 1; c++) {
        const simplan_config *cfg = &p->cfg[c];
        if (strcmp(cfg->ops->name, "dp-se") != 0)
            continue;
        if (!header) {
            printf("\nclaim A6 (SS19 5): DP-SE's regret curve ends flat once one "
                   "arm is left; the mean curve of this run\n");
            header = 1;
        }
        const double *m = r->mean + c * nj;
        size_t j = nj - 1;
        while (j > 0 && m[j - 1] == m[nj - 1])
            j--;
        char at[32];
        if (j < nj - 1) {
            simplan_format_count(at, sizeof at, p->checkpoints[j]);
            printf("  %-14s %5u  %-8s flat from t = %s (regret %.6g): holds\n",
                   p->inst[cfg->instance].label, p->inst[cfg->instance].k, cfg->eps_text, at,
                   m[nj - 1]);
        } else {
            printf("  %-14s %5u  %-8s still rising at T = %s (regret %.6g): some trial has more "
                   "than one arm left; not reached\n",
                   p->inst[cfg->instance].label, p->inst[cfg->instance].k, cfg->eps_text, T,
                   m[nj - 1]);
        }
    }
    header = 0;
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        if (strcmp(cfg->ops->name, "ldp-ts-b") != 0 || cfg->mechanism != LDPB_MECH_LINEAR)
            continue;
        long u = find_cfg(p, cfg->instance, "ldp-ucb-b", LDPB_MECH_LINEAR, cfg->epsilon);
        if (u < 0)
            continue;
        if (!header) {
            printf("\nclaim A3 (JZL23 5): LDP-TS-B (linear) has lower regret "
                   "than LDP-UCB-B (linear); at T = %s\n",
                   T);
            printf("  %-14s %-8s %14s %14s\n", "preset", "epsilon", "ldp-ts-b", "ldp-ucb-b");
            header = 1;
        }
        double a = r->final[c].mean, b = r->final[u].mean;
        printf("  %-14s %-8s %14.6g %14.6g  %s\n", p->inst[cfg->instance].label, cfg->eps_text, a,
               b, a < b ? "holds" : "does not hold");
    }
    header = 0;
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        if (cfg->ops->model != AGG_MODEL_LOCAL)
            continue;
        /* The first configuration of each (instance, algorithm, mechanism) checks the group. */
        int first = 1, n = 0;
        for (size_t d = 0; d < p->n_cfg; d++) {
            const simplan_config *o = &p->cfg[d];
            if (o->instance == cfg->instance && o->ops == cfg->ops &&
                o->mechanism == cfg->mechanism) {
                first &= d >= c;
                n++;
            }
        }
        if (!first || n < 2)
            continue;
        if (!header) {
            printf("\nclaim A4 (JZL23 5): regret of LDP algorithms decreases "
                   "as epsilon grows; at T = %s\n",
                   T);
            header = 1;
        }
        /* Violations: a pair eps < eps' whose regret does not decrease. */
        char name[160], bad[128] = "";
        config_name(name, sizeof name, p, cfg);
        for (size_t d = 0; d < p->n_cfg && !bad[0]; d++)
            for (size_t e = 0; e < p->n_cfg && !bad[0]; e++) {
                const simplan_config *x = &p->cfg[d], *y = &p->cfg[e];
                if (x->instance != cfg->instance || y->instance != cfg->instance ||
                    x->ops != cfg->ops || y->ops != cfg->ops || x->mechanism != cfg->mechanism ||
                    y->mechanism != cfg->mechanism || !(x->epsilon < y->epsilon))
                    continue;
                if (!(r->final[e].mean < r->final[d].mean))
                    snprintf(bad, sizeof bad, "does not hold: %.6g at epsilon %s, %.6g at %s",
                             r->final[d].mean, x->eps_text, r->final[e].mean, y->eps_text);
            }
        printf("  %s %s %s: %s\n", p->inst[cfg->instance].label, cfg->ops->name,
               simplan_mech_name(cfg), bad[0] ? bad : "holds");
    }
}

/* Claim A7 (Tossou & Dimitrakakis 2017, Sec. 4) on the median of means at T: DP-EXP3-Lap is
 * "very competitive" with EXP3 against the oblivious and weaker adversaries (read here as within
 * a factor 2), EXP3-tau is worse than DP-EXP3-Lap there, and EXP3-tau beats both against the
 * switching-cost adversary. */
static void print_claim_a7(const simplan *p, const simreport *r)
{
    size_t nj = p->n_checkpoints;
    int header = 0;
    for (size_t i = 0; i < p->n_inst; i++) {
        const simplan_instance *in = &p->inst[i];
        if (!in->adv)
            continue;
        long e = find_cfg(p, i, "exp3", 0, INFINITY), t = find_cfg(p, i, "exp3-tau", 0, INFINITY);
        long d = -1;
        for (size_t c = 0; c < p->n_cfg && d < 0; c++)
            if (p->cfg[c].instance == i && strcmp(p->cfg[c].ops->name, "dp-exp3-lap") == 0)
                d = (long)c;
        if (e < 0 || t < 0 || d < 0)
            continue;
        if (!header) {
            printf("\nclaim A7 (TD17 4): median of means of the regret at T\n");
            header = 1;
        }
        double me = r->mom[(size_t)e * nj + nj - 1], md = r->mom[(size_t)d * nj + nj - 1],
               mt = r->mom[(size_t)t * nj + nj - 1];
        printf("  %-28s exp3 %.6g  dp-exp3-lap (epsilon %s) %.6g  exp3-tau %.6g\n", in->label, me,
               p->cfg[d].eps_text, md, mt);
        if (agg_adv_switch_costs(in->adv)) {
            printf("    exp3-tau below both under switching costs: %s\n",
                   mt < me && mt < md ? "holds" : "does not hold");
        } else {
            printf("    dp-exp3-lap / exp3 = %.3g (within 2x: %s); exp3-tau above dp-exp3-lap: "
                   "%s\n",
                   md / me, md <= 2.0 * me ? "holds" : "does not hold",
                   mt > md ? "holds" : "does not hold");
        }
    }
}

static int gnuplot_on_path(void)
{
    return simout_have_program("gnuplot");
}

/* The smith2013 presets run private FTAL, which is not a K-armed policy of the engine: their own
 * loop (aggregator/sim/src/ftal.c) takes the options that apply and refuses the others. */
static int run_ftal_preset(const struct args *a, int argc, char **argv, const char *seed,
                           const char *out, unsigned threads)
{
    const char *bad = a->plan.means        ? "--means"
                      : a->plan.laws       ? "--laws"
                      : a->plan.algorithms ? "--algorithms"
                      : a->plan.mechanisms ? "--mechanisms"
                      : a->plan.kappa      ? "--kappa"
                      : a->plan.gamma      ? "--gamma"
                      : a->plan.eps_arm    ? "--eps-arm"
                      : a->plan.tau        ? "--tau"
                      : a->plan.threshold  ? "--threshold"
                      : a->gaps            ? "--gaps"
                                           : NULL;
    if (bad) {
        char what[160];
        snprintf(what, sizeof what,
                 "%s does not apply to the smith2013 presets (they take --horizon, --trials, "
                 "--epsilons, --k)",
                 bad);
        return tool_usage_error(PROG, what, NULL);
    }
    simftal_args fa = {.preset = a->plan.preset,
                       .horizon = a->plan.horizon,
                       .trials = a->plan.trials,
                       .epsilons = a->plan.epsilons,
                       .ks = a->plan.ks,
                       .seed = seed,
                       .out = out,
                       .threads = threads,
                       .no_plots = a->no_plots,
                       .quiet = a->quiet,
                       .argc = argc,
                       .argv = argv,
                       .have_gnuplot = gnuplot_on_path,
                       .run_gnuplot = run_gnuplot};
    return simftal_run(&fa);
}

struct nas_meta {
    const simnas_plan *plan;
    int argc;
    char **argv;
    const char *seed;
};

static int nas_meta_fn(const void *ctx, FILE *f)
{
    const struct nas_meta *m = ctx;
    const simnas_plan *p = m->plan;
    fprintf(f, "# ldpb sim: the parameters of this run (no dates, so a rerun gives the same\n"
               "# file; wall time and date are in run.txt). docs/sim.md explains each line.\n");
    fprintf(f, "command: ldpb");
    for (int i = 0; i < m->argc; i++) {
        fputc(' ', f);
        put_shell_word(f, m->argv[i]);
    }
    fprintf(f, "\nversion: %s\npreset: %s\nseed: ", LDPB_VERSION_STRING, SIMNAS_PRESET);
    put_shell_word(f, m->seed);
    fprintf(f, " (trial i, cell pair p: samples stream (i, env, p), noise stream (i, noise, p))\n");
    fprintf(f, "trials: %llu\nalpha: %.17g\nbeta: %.17g\nrange R: 1\n",
            (unsigned long long)p->trials, p->alpha, p->beta);
    fprintf(f, "samples: X in {-1, +1}, P(X = 1) = (1 + gap)/2, so E X = gap\n");
    fprintf(f, "budget: ceil(2000 (t0 + t1 + t2)), the t_U of SS19 Thm 3.3; a trial that reaches "
               "it counts as a failure\n");
    fprintf(f, "noise: AGG_NOISE_FAST (simulation only)\n");
    for (size_t c = 0; c < p->n_cell; c++)
        fprintf(f, "cell %zu: %s gap=%s epsilon=%s rate=%.10g t_upper=%llu\n", c,
                p->cell[c].algorithm, p->cell[c].gap_text, p->cell[c].eps_text, p->cell[c].rate,
                (unsigned long long)p->cell[c].budget);
    return ferror(f) ? -1 : 0;
}

struct nas_csv {
    const simnas_plan *plan;
    const simnas_stats *stats;
};

static int nas_csv_fn(const void *ctx, FILE *f)
{
    const struct nas_csv *c = ctx;
    return simnas_write_csv(c->plan, c->stats, f);
}

/* The console report of the stopping experiment: the table, the fitted constant and slopes, and
 * the claims (docs/sim.md). */
static void nas_print(const simnas_plan *p, const simnas_stats *st)
{
    printf("%-11s %-6s %-6s %13s  %-27s %12s %8s %6s %6s %9s %9s\n", "algorithm", "gap", "eps",
           "mean samples", "95% interval", "rate", "ratio", "wrong", "fail", "fail rate",
           "upper 95%");
    for (size_t c = 0; c < p->n_cell; c++) {
        const simnas_cell *x = &p->cell[c];
        const simnas_stats *s = &st[c];
        char ci[64];
        snprintf(ci, sizeof ci, "[%.6g, %.6g]", s->samples.lo, s->samples.hi);
        printf("%-11s %-6s %-6s %13.6g  %-27s %12.6g %8.4g %6llu %6llu %9.4g %9.3g\n", x->algorithm,
               x->gap_text, x->eps_text, s->samples.mean, ci, x->rate, s->ratio,
               (unsigned long long)s->wrong,
               (unsigned long long)(p->trials - s->halted + s->inexact), s->failure, s->failure_hi);
    }
    printf(
        "\nrate = t0 + t1 + t2 of SS19 Thm 3.3 (R = 1, alpha %g, beta %g); ratio = mean / rate\n",
        p->alpha, p->beta);
    for (size_t a = 0; a < p->n_alg; a++) {
        const char *alg = p->cell[a * p->n_gap * p->n_eps].algorithm;
        double lo, hi, cst = simnas_constant(p, st, a, &lo, &hi);
        printf("\n%s: samples = C (t0 + t1 + t2) with C = %.4g (geometric mean); every cell "
               "within [%.3g, %.3g] x C\n",
               alg, cst, lo, hi);
        if (p->n_gap > 1) {
            printf("  log-log slope in 1/gap:    ");
            for (size_t e = 0; e < p->n_eps; e++) {
                double m, t;
                simnas_slope_gap(p, st, a, e, &m, &t);
                printf(" eps %s: %.3f (theory %.3f)%s", p->cell[e].eps_text, m, t,
                       e + 1 < p->n_eps ? ";" : "\n");
            }
        }
        if (p->n_eps > 1) {
            printf("  log-log slope in 1/eps:    ");
            for (size_t g = 0; g < p->n_gap; g++) {
                double m, t;
                simnas_slope_eps(p, st, a, g, &m, &t);
                printf(" gap %s: %.3f (theory %.3f)%s", p->cell[g * p->n_eps].gap_text, m, t,
                       g + 1 < p->n_gap ? ";" : "\n");
            }
        }
    }
    uint64_t n = 0, wrong = 0, fails = 0, late = 0;
    double worst_hi = 0;
    for (size_t c = 0; c < p->n_cell; c++) {
        n += p->trials;
        wrong += st[c].wrong;
        fails += p->trials - st[c].halted + st[c].inexact;
        late += p->trials - st[c].halted;
        worst_hi = fmax(worst_hi, st[c].failure_hi);
    }
    printf("\nclaim (SS19 Thm 3.1, Cor. 3.2): each rule errs (halts outside alpha |mu|, or not by "
           "t_U) with probability <= beta = %g\n",
           p->beta);
    printf("  %llu of %llu trials failed (%llu with the wrong sign, %llu not halted by t_U); the "
           "largest per-cell upper 95%% bound is %.3g: %s\n",
           (unsigned long long)fails, (unsigned long long)n, (unsigned long long)wrong,
           (unsigned long long)late, worst_hi, worst_hi <= p->beta ? "holds" : "not shown");
}

static int run_nas(const struct args *a, int argc, char **argv, unsigned threads,
                   const char *seed_text, const char *out)
{
    static const struct {
        const char *name;
        size_t off;
    } na[] = {{"means", offsetof(struct args, plan.means)},
              {"laws", offsetof(struct args, plan.laws)},
              {"mechanisms", offsetof(struct args, plan.mechanisms)},
              {"k", offsetof(struct args, plan.ks)},
              {"horizon", offsetof(struct args, plan.horizon)},
              {"kappa", offsetof(struct args, plan.kappa)},
              {"gamma", offsetof(struct args, plan.gamma)},
              {"eps-arm", offsetof(struct args, plan.eps_arm)},
              {"tau", offsetof(struct args, plan.tau)},
              {"threshold", offsetof(struct args, plan.threshold)}};
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++)
        if (*(const char *const *)((const char *)a + na[i].off)) {
            fprintf(stderr, "%s: --%s does not apply to --preset %s (a stopping experiment)\n",
                    PROG, na[i].name, SIMNAS_PRESET);
            return EXIT_USAGE;
        }
    simnas_plan plan;
    simnas_opts o = {a->plan.algorithms, a->plan.epsilons, a->gaps, a->plan.trials};
    char errmsg[SIMPLAN_ERRMSG_MAX], plots_dir[PATH_BYTES], data_dir[PATH_BYTES + 8];
    ldpb_err err = simnas_build(&plan, &o, errmsg);
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, errmsg);
        simnas_fini(&plan);
        return err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    int rc = EXIT_RUNTIME;
    simnas_trial *trials = calloc(plan.n_cell * (size_t)plan.trials, sizeof *trials);
    simnas_stats *stats = calloc(plan.n_cell, sizeof *stats);
    if (!trials || !stats) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_strerror(LDPB_ENOMEM));
        goto done;
    }
    snprintf(plots_dir, sizeof plots_dir, "%s/plots", out);
    snprintf(data_dir, sizeof data_dir, "%s/data", plots_dir);
    if (simout_make_dirs(out) != 0 ||
        (!a->no_plots && (simout_make_dirs(plots_dir) || simout_make_dirs(data_dir)))) {
        fprintf(stderr, "%s: cannot create the output directory %s: %s\n", PROG, out,
                strerror(errno));
        goto done;
    }
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    double t0 = simout_now_seconds();
    char msg[AGG_ERRMSG_MAX];
    err = simnas_run(&plan, seed, threads, trials, msg);
    double seconds = simout_now_seconds() - t0;
    if (err) {
        fprintf(stderr, "%s: simulation failed: %s\n", PROG, msg[0] ? msg : ldpb_strerror(err));
        goto done;
    }
    if (simnas_reduce(&plan, trials, stats) != LDPB_OK) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_strerror(LDPB_ENOMEM));
        goto done;
    }
    uint64_t samples = 0;
    for (size_t i = 0; i < plan.n_cell * (size_t)plan.trials; i++)
        samples += trials[i].samples;
    struct nas_csv csv = {&plan, stats};
    struct nas_meta meta = {&plan, argc, argv, seed_text};
    struct run_ctx run = {seconds, threads, samples};
    if (write_text(out, SIMNAS_CSV, nas_csv_fn, &csv) ||
        write_text(out, "meta.txt", nas_meta_fn, &meta) || write_text(out, "run.txt", run_fn, &run))
        goto done;
    long figures = 0;
    int plots_ok = 0;
    if (!a->no_plots) {
        figures = simnas_write_plots(&plan, stats, plots_dir, errmsg, sizeof errmsg);
        if (figures < 0) {
            fprintf(stderr, "%s: %s\n", PROG, errmsg);
            goto done;
        }
        if (draw_figures(plots_dir, &plots_ok) != 0)
            goto done;
    }
    printf("%s: %s, %zu cells x %llu trial%s, seed '%s': %.1f s on %u thread%s\n\n", PROG,
           SIMNAS_PRESET, plan.n_cell, (unsigned long long)plan.trials, plan.trials == 1 ? "" : "s",
           seed_text, seconds, threads, threads == 1 ? "" : "s");
    nas_print(&plan, stats);
    printf("\nwrote %s/%s, %s/meta.txt, %s/run.txt", out, SIMNAS_CSV, out, out);
    if (plots_ok)
        printf(", %ld figure%s in %s (PNG and SVG)", figures, figures == 1 ? "" : "s", plots_dir);
    printf("\n");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    free(trials);
    free(stats);
    simnas_fini(&plan);
    return rc;
}

/* The poisoning options are parsed and checked by libldpb-sim (ldpb_sim_prepare); only the
 * presets with runners of their own, which never reach it, are refused here. 0 or an exit status.
 */
static int poison_applies(const struct args *a)
{
    if (!a->poison_fraction && !a->poison_strategy)
        return 0;
    if (a->plan.preset &&
        (strcmp(a->plan.preset, SIMNAS_PRESET) == 0 || strcmp(a->plan.preset, SIMCTX_PRESET) == 0 ||
         simftal_is_preset(a->plan.preset))) {
        char e[ECHO_MAX + 4];
        fprintf(stderr, "%s: --poison-%s does not apply to --preset %s\n", PROG,
                a->poison_fraction ? "fraction" : "strategy",
                tool_echo(e, sizeof e, a->plan.preset));
        return EXIT_USAGE;
    }
    return 0;
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

/* The K-armed presets and custom instances go through libldpb-sim's public API (ldpb/sim.h), the
 * calls the Python package makes, so both give the same numbers for the same seed. */
static ldpb_sim *sim_from_args(const struct args *a, const char *seed_text, unsigned threads)
{
    ldpb_sim *sim = NULL;
    if (ldpb_sim_new(&sim) != LDPB_OK)
        return NULL;
    char t[16];
    snprintf(t, sizeof t, "%u", threads);
    ldpb_err err = ldpb_sim_set(sim, "seed", seed_text);
    if (!err)
        err = ldpb_sim_set(sim, "threads", t);
    const char *name;
    size_t offset;
    for (size_t i = 0; !err && (name = simapi_plan_opt(i, &offset)) != NULL; i++) {
        const char *v = *(const char *const *)((const char *)&a->plan + offset);
        if (v)
            err = ldpb_sim_set(sim, name, v);
    }
    if (!err && a->poison_fraction)
        err = ldpb_sim_set(sim, "poison-fraction", a->poison_fraction);
    if (!err && a->poison_strategy)
        err = ldpb_sim_set(sim, "poison-strategy", a->poison_strategy);
    if (err) {
        ldpb_sim_free(sim);
        return NULL;
    }
    return sim;
}

int cmd_sim(int argc, char **argv)
{
    struct args a;
    ldpb_sim *sim = NULL;
    char errmsg[SIMPLAN_ERRMSG_MAX];
    char plots_dir[PATH_BYTES], data_dir[PATH_BYTES + 8];
    unsigned threads = online_cpus();
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (a.threads && parse_threads(a.threads, &threads))
        return EXIT_USAGE;
    if ((rc = poison_applies(&a)) != 0)
        return rc;
    const char *seed_text = a.seed ? a.seed : SIMPLAN_DEFAULT_SEED;
    if (seed_text[0] == '\0')
        return tool_usage_error(PROG, "--seed needs a non-empty text", NULL);
    const char *out = a.out ? a.out : SIMPLAN_DEFAULT_OUT;
    if (out[0] == '\0')
        return tool_usage_error(PROG, "--out needs a directory name", NULL);
    if (strlen(out) > PATH_BYTES - 64)
        return tool_usage_error(PROG, "--out path is too long:", out);
    if (a.plan.preset && strcmp(a.plan.preset, SIMNAS_PRESET) == 0)
        return run_nas(&a, argc, argv, threads, seed_text, out);
    if (a.gaps)
        return tool_usage_error(PROG, "--gaps applies to --preset " SIMNAS_PRESET " only", NULL);

    gsl_set_error_handler_off();
    if (a.plan.preset && strcmp(a.plan.preset, SIMCTX_PRESET) == 0)
        return cmd_sim_ctx(&a.plan, seed_text, threads, out, a.no_plots, a.quiet, argc, argv);
    if (simftal_is_preset(a.plan.preset))
        return run_ftal_preset(&a, argc, argv, seed_text, out, threads);
    sim = sim_from_args(&a, seed_text, threads);
    if (!sim) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_strerror(LDPB_ENOMEM));
        return EXIT_RUNTIME;
    }
    ldpb_err err = ldpb_sim_prepare(sim);
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_sim_errmsg(sim));
        ldpb_sim_free(sim);
        return err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    const simplan *plan = simapi_plan(sim);
    rc = EXIT_RUNTIME;

    snprintf(plots_dir, sizeof plots_dir, "%s/plots", out);
    snprintf(data_dir, sizeof data_dir, "%s/data", plots_dir);
    if (simout_make_dirs(out) != 0 ||
        (!a.no_plots && (simout_make_dirs(plots_dir) || simout_make_dirs(data_dir)))) {
        fprintf(stderr, "%s: cannot create the output directory %s: %s\n", PROG, out,
                strerror(errno));
        goto done;
    }

    struct progress prog = {.enabled = !a.quiet, .tty = isatty(STDERR_FILENO)};
    prog.start = prog.last = prog.last_line = simout_now_seconds();
    ldpb_sim_set_progress(sim, progress_cb, &prog);
    err = ldpb_sim_run(sim);
    double seconds = simout_now_seconds() - prog.start;
    progress_clear(&prog);
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_sim_errmsg(sim));
        goto done;
    }
    const simreport *rep = simapi_report(sim);
    struct meta_ctx meta = {plan, simapi_poison(sim), argc, argv, seed_text};
    struct run_ctx run = {seconds, threads, plan->rounds_total};
    if (write_text(out, "regret.csv", regret_fn, rep) ||
        write_text(out, "summary.csv", summary_fn, rep) ||
        write_text(out, "robust.csv", robust_fn, rep) ||
        write_text(out, "meta.txt", meta_fn, &meta) || write_text(out, "run.txt", run_fn, &run))
        goto done;

    long figures = 0;
    int plots_ok = 0;
    if (!a.no_plots) {
        figures = simplot_write(rep, plots_dir, errmsg, sizeof errmsg);
        if (figures < 0) {
            fprintf(stderr, "%s: %s\n", PROG, errmsg);
            goto done;
        }
        if (draw_figures(plots_dir, &plots_ok) != 0)
            goto done;
    }

    char T[32];
    simplan_format_count(T, sizeof T, plan->horizon);
    printf("%s: %s, %zu configuration%s x %llu trial%s, T = %s, seed '%s': %.1f s on %u "
           "thread%s\n\n",
           PROG, plan->preset, plan->n_cfg, plan->n_cfg == 1 ? "" : "s",
           (unsigned long long)plan->trials, plan->trials == 1 ? "" : "s", T, seed_text, seconds,
           threads, threads == 1 ? "" : "s");
    const agg_poison *poison = simapi_poison(sim);
    if (poison->fraction > 0.0)
        printf("poisoning: each round with probability %g, %s; regret is the honest devices' "
               "(the paper claims are not checked)\n\n",
               poison->fraction, agg_poison_strategy_name(poison->strategy));
    print_table(plan, rep);
    if (poison->fraction == 0.0) { /* the papers' claims are about honest runs */
        print_claims(plan, rep);
        print_claim_a7(plan, rep);
    }
    printf("\nwrote %s/regret.csv, %s/summary.csv, %s/robust.csv, %s/meta.txt, %s/run.txt", out,
           out, out, out, out);
    if (plots_ok)
        printf(", %ld figure%s in %s (PNG and SVG)", figures, figures == 1 ? "" : "s", plots_dir);
    printf("\n");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    ldpb_sim_free(sim);
    return rc;
}
