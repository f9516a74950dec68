/* The smith2013 presets of `ldpb sim` (ftal.h). */
#include "ftal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli_text.h"
#include "ldpb/rng.h"
#include "pftal.h"
#include "plan.h"
#include "report.h"
#include "sim.h"

#define PROG       "ldpb sim"
#define MAX_EPS    16
#define MAX_KS     8
#define MAX_HORIZ  16
#define SWEEP_FROM 1000ULL
#define GAP        0.1 /* expert 0's mean loss is 0.5 - GAP; every other expert's is 0.5 */

struct preset {
    const char *name;
    agg_pftal_mode mode;
    const char *algorithm, *baseline; /* CSV names: private, nonprivate */
    uint32_t ks[MAX_KS];
    size_t n_ks;
    uint64_t horizon, trials;
    const char *summary;
};

static const struct preset presets[] = {
    {"smith2013-experts",
     AGG_PFTAL_FULL,
     "pftal",
     "ftal",
     {4, 16},
     2,
     1000000,
     100,
     "private FTAL, full information (Smith & Thakurta 2013 Alg. 1, experts of their Table 1):\n"
     "p in {4,16} stochastic experts (mean losses 0.4 and 0.5), eps in {0.1,0.5,1,2} and\n"
     "nonprivate FTAL, a horizon sweep 1e3..1e6 with the log-log slope of regret against T"},
    {"smith2013-bandit",
     AGG_PFTAL_BANDIT,
     "pftal-bandit",
     "ftal-bandit",
     {3, 5},
     2,
     1000000,
     100,
     "bandit private FTAL (Smith & Thakurta 2013 §3, one-point gradients) as a K-armed\n"
     "bandit on the simplex: K in {3,5}, the same losses, eps in {0.1,0.5,1,2} and nonprivate,\n"
     "a horizon sweep 1e3..1e6 with the log-log slope"},
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

static const double default_eps[] = {0.1, 0.5, 1, 2, INFINITY};

int simftal_is_preset(const char *name)
{
    for (size_t i = 0; name && i < N_PRESETS; i++)
        if (strcmp(name, presets[i].name) == 0)
            return 1;
    return 0;
}

const char *simftal_preset_summary(size_t i, const char **name)
{
    if (i >= N_PRESETS)
        return NULL;
    *name = presets[i].name;
    return presets[i].summary;
}

struct cfg {
    uint32_t k;
    double eps;
    char eps_text[32];
};

struct run {
    const struct preset *p;
    struct cfg cfg[MAX_KS * MAX_EPS];
    size_t n_cfg;
    uint64_t horizons[MAX_HORIZ];
    size_t n_h;
    uint64_t trials;
    uint64_t *cp; /* checkpoints of the largest horizon */
    size_t n_cp;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    double *final; /* [(c * n_h + h) * trials + i] */
    double *curve; /* [(c * trials + i) * n_cp + j] */
    /* the job queue */
    pthread_mutex_t mu;
    uint64_t next, n_jobs, done_rounds, total_rounds;
    ldpb_err err;
    char msg[AGG_ERRMSG_MAX];
    int quiet;
    const simftal_args *args;
    double seconds; /* wall time of the batch */
    unsigned threads;
};

static int usage_error(const char *what, const char *arg)
{
    return tool_usage_error(PROG, what, arg);
}

static int parse_eps(const char *text, double *eps, char (*txt)[32], size_t *n)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return 1;
    *n = 0;
    int bad = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !bad; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strcmp(tok, "inf") == 0 ? INFINITY : strtod(tok, &end);
        if (*n == MAX_EPS || (!isinf(v) && (*end != '\0' || !(v > 0) || v > LDPB_EPSILON_MAX))) {
            bad = 1;
            break;
        }
        eps[*n] = v;
        simplan_format_double(txt[*n], 32, v);
        (*n)++;
    }
    free(copy);
    if (bad || *n == 0) {
        char what[128];
        snprintf(what, sizeof what,
                 "--epsilons: give up to 16 values in (0, %g] or inf, comma-separated:",
                 LDPB_EPSILON_MAX);
        usage_error(what, text);
        return 1;
    }
    return 0;
}

static int parse_ks(const char *text, uint32_t *ks, size_t *n, agg_pftal_mode mode)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return 1;
    *n = 0;
    int bad = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        uint64_t v;
        if (*n == MAX_KS || simplan_parse_count(tok, &v) || v < 2 ||
            v > (mode == AGG_PFTAL_FULL ? 64 : 16)) {
            bad = 1;
            break;
        }
        ks[(*n)++] = (uint32_t)v;
    }
    free(copy);
    if (bad || *n == 0) {
        usage_error(mode == AGG_PFTAL_FULL
                        ? "--k: give up to 8 numbers of experts in [2, 64], comma-separated:"
                        : "--k: give up to 8 numbers of arms in [2, 16], comma-separated:",
                    text);
        return 1;
    }
    return 0;
}

static void game_for(const struct run *r, size_t c, uint64_t horizon, agg_pftal_game *g,
                     double *means)
{
    memset(g, 0, sizeof *g);
    g->params.mode = r->p->mode;
    g->params.p = r->cfg[c].k;
    g->params.horizon = horizon;
    g->params.epsilon = r->cfg[c].eps;
    agg_pftal_tune(&g->params);
    means[0] = 0.5 - GAP;
    for (uint32_t i = 1; i < r->cfg[c].k; i++)
        means[i] = 0.5;
    g->means = means;
}

/* Job j: the largest horizon first (index h from the end), then configuration, then trial. */
static void *worker(void *ctx)
{
    struct run *r = ctx;
    double means[64];
    char msg[AGG_ERRMSG_MAX];
    for (;;) {
        pthread_mutex_lock(&r->mu);
        uint64_t j = r->next < r->n_jobs && r->err == LDPB_OK ? r->next++ : UINT64_MAX;
        pthread_mutex_unlock(&r->mu);
        if (j == UINT64_MAX)
            return NULL;
        uint64_t per_h = r->n_cfg * r->trials;
        size_t h = r->n_h - 1 - (size_t)(j / per_h);
        size_t c = (size_t)(j % per_h / r->trials);
        uint64_t i = j % r->trials;
        agg_pftal_game g;
        game_for(r, c, r->horizons[h], &g, means);
        int top = h + 1 == r->n_h;
        uint64_t last = r->horizons[h];
        double *out = top ? r->curve + (c * r->trials + i) * r->n_cp : NULL;
        double one;
        g.checkpoints = top ? r->cp : &last;
        g.n_checkpoints = top ? r->n_cp : 1;
        ldpb_err err = agg_pftal_run_trial(&g, r->seed, i, top ? out : &one, msg);
        pthread_mutex_lock(&r->mu);
        if (err != LDPB_OK && r->err == LDPB_OK) {
            r->err = err;
            snprintf(r->msg, sizeof r->msg, "%s", msg);
        }
        r->final[(c * r->n_h + h) * r->trials + i] = top ? out[r->n_cp - 1] : one;
        r->done_rounds += r->horizons[h];
        if (!r->quiet)
            fprintf(stderr, "\r%s: %5.1f%% of %llu rounds", PROG,
                    100.0 * (double)r->done_rounds / (double)r->total_rounds,
                    (unsigned long long)r->total_rounds);
        pthread_mutex_unlock(&r->mu);
    }
}

static const char *alg_name(const struct run *r, size_t c)
{
    return isinf(r->cfg[c].eps) ? r->p->baseline : r->p->algorithm;
}

static const char *mech_name(const struct run *r, size_t c)
{
    return isinf(r->cfg[c].eps) ? "none" : "tree-l2";
}

static int write_file(const char *dir, const char *name, int (*fn)(const struct run *, FILE *),
                      const struct run *r)
{
    char path[4200], tmp[4210];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot create %s: %s\n", PROG, tmp, strerror(errno));
        return 1;
    }
    int bad = fn(r, f);
    if (fclose(f) != 0)
        bad = 1;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", PROG, path, strerror(errno));
        (void)remove(tmp);
        return 1;
    }
    return 0;
}

static int regret_csv(const struct run *r, FILE *f)
{
    fputs(SIMREPORT_REGRET_HEADER "\n", f);
    for (size_t c = 0; c < r->n_cfg; c++)
        for (size_t j = 0; j < r->n_cp; j++) {
            simstat s;
            simstat_compute(r->curve + c * r->trials * r->n_cp + j, (size_t)r->trials, r->n_cp,
                            NULL, &s);
            fprintf(f, "%s,%s,%s,%s,%u,%llu,%.6g,%.6g,%.6g,%llu\n", r->p->name, alg_name(r, c),
                    mech_name(r, c), r->cfg[c].eps_text, r->cfg[c].k, (unsigned long long)r->cp[j],
                    s.mean, s.lo, s.hi, (unsigned long long)r->trials);
        }
    return ferror(f) ? -1 : 0;
}

static simstat final_stat(const struct run *r, size_t c, size_t h, double *scratch)
{
    simstat s;
    simstat_compute(r->final + (c * r->n_h + h) * r->trials, (size_t)r->trials, 1, scratch, &s);
    return s;
}

static int summary_csv(const struct run *r, FILE *f)
{
    double *scratch = malloc((size_t)r->trials * sizeof *scratch);
    if (!scratch)
        return -1;
    fputs(SIMREPORT_SUMMARY_HEADER "\n", f);
    for (size_t c = 0; c < r->n_cfg; c++)
        for (size_t h = 0; h < r->n_h; h++) {
            simstat s = final_stat(r, c, h, scratch);
            fprintf(f, "%s,%s,%s,%s,%u,%llu,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", r->p->name,
                    alg_name(r, c), mech_name(r, c), r->cfg[c].eps_text, r->cfg[c].k,
                    (unsigned long long)r->horizons[h], (unsigned long long)r->trials, s.mean, s.lo,
                    s.hi, s.sd, s.median, s.min, s.max);
        }
    free(scratch);
    return ferror(f) ? -1 : 0;
}

static int meta_txt(const struct run *r, FILE *f)
{
    const simftal_args *a = r->args;
    fprintf(f, "# ldpb sim: the parameters of this run (no dates; wall time is in run.txt).\n"
               "# docs/sim.md (smith2013 presets) explains each line.\ncommand: ldpb");
    for (int i = 0; i < a->argc; i++)
        fprintf(f, " %s", a->argv[i]);
    fprintf(f,
            "\npreset: %s\nseed: %s (streams as the engine's: trial i, purpose ENV losses, "
            "POLICY directions and arms, NOISE tree noise)\n",
            r->p->name, a->seed);
    fprintf(f, "trials: %llu\nhorizons:", (unsigned long long)r->trials);
    for (size_t h = 0; h < r->n_h; h++)
        fprintf(f, " %llu", (unsigned long long)r->horizons[h]);
    fprintf(f,
            "\ninstance: stochastic experts, expert 0 mean loss %.2f, the others 0.5; every "
            "expert's Bernoulli loss drawn every round\n",
            0.5 - GAP);
    fprintf(f, "regret: pseudo-regret sum_t <means, w_t> - t min(means), w_t the played point "
               "(bandit: the point the arm is sampled from)\n");
    fprintf(f, "losses fed to PFTAL: h_t(w) = <c_t, w> + (H/2)||w||^2 (ST13 App. C)\n");
    fprintf(f, "tree noise: L2-Laplace nodes, radius Gamma(p, 2 L' Lv/eps), AGG_NOISE_FAST "
               "(simulation only)\n");
    fprintf(f, "configurations: %zu\n", r->n_cfg);
    for (size_t c = 0; c < r->n_cfg; c++)
        for (size_t h = 0; h < r->n_h; h++) {
            agg_pftal_game g;
            double means[64];
            game_for(r, c, r->horizons[h], &g, means);
            fprintf(f, "config %zu: %s %s epsilon=%s k=%u T=%llu H=%.6g beta=%.6g L'=%.6g\n", c,
                    alg_name(r, c), mech_name(r, c), r->cfg[c].eps_text, r->cfg[c].k,
                    (unsigned long long)r->horizons[h], g.params.h, g.params.beta,
                    agg_pftal_l2_bound(&g.params));
        }
    return ferror(f) ? -1 : 0;
}

static int run_txt(const struct run *r, FILE *f)
{
    char date[64] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "# ldpb sim: facts of this execution that do not affect the results\n");
    fprintf(f, "date: %s\nwall_seconds: %.3f\nthreads: %u\nrounds: %llu\nrounds_per_second: %.4g\n",
            date, r->seconds, r->threads, (unsigned long long)r->total_rounds,
            r->seconds > 0 ? (double)r->total_rounds / r->seconds : 0.0);
    return ferror(f) ? -1 : 0;
}

/* Least-squares slope of log(mean regret) on log(T) over the sweep (positive means only). */
static double fit_slope(const struct run *r, size_t c, size_t from)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (size_t h = from; h < r->n_h; h++) {
        simstat s = final_stat(r, c, h, NULL);
        if (!(s.mean > 0))
            continue;
        double x = log((double)r->horizons[h]), y = log(s.mean);
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        n++;
    }
    if (n < 2)
        return NAN;
    return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

static int plot_files(const struct run *r, const char dir[4200])
{
    char path[4300];
    FILE *f;
    for (size_t c = 0; c < r->n_cfg; c++) {
        snprintf(path, sizeof path, "%s/data/c%zu.dat", dir, c);
        if (!(f = fopen(path, "w")))
            return 1;
        fprintf(f, "# T mean ci95_low ci95_high (%s %s eps=%s k=%u)\n", alg_name(r, c),
                mech_name(r, c), r->cfg[c].eps_text, r->cfg[c].k);
        for (size_t h = 0; h < r->n_h; h++) {
            simstat s = final_stat(r, c, h, NULL);
            fprintf(f, "%llu %.6g %.6g %.6g\n", (unsigned long long)r->horizons[h], s.mean, s.lo,
                    s.hi);
        }
        if (fclose(f) != 0)
            return 1;
    }
    snprintf(path, sizeof path, "%s/plots.gp", dir);
    if (!(f = fopen(path, "w")))
        return 1;
    double rate = r->p->mode == AGG_PFTAL_FULL ? 0.5 : 0.75;
    fprintf(f,
            "# %s: mean final regret against the horizon T (95%% intervals), log-log, with\n"
            "# the rate T^%.2f of Smith & Thakurta 2013 (dashed, through the eps = 1 point "
            "at the largest T).\n",
            r->p->name, rate);
    fprintf(f, "set logscale xy\nset key left top\nset grid\nset xlabel 'horizon T'\n"
               "set ylabel 'mean pseudo-regret at T'\n");
    for (size_t ki = 0; ki < r->n_cfg; ki++) {
        uint32_t k = r->cfg[ki].k;
        int first = 1;
        for (size_t c = 0; c < ki; c++)
            if (r->cfg[c].k == k)
                first = 0;
        if (!first)
            continue;
        double anchor = NAN;
        for (size_t c = 0; c < r->n_cfg; c++)
            if (r->cfg[c].k == k && r->cfg[c].eps == 1)
                anchor = final_stat(r, c, r->n_h - 1, NULL).mean;
        for (int fmt = 0; fmt < 2; fmt++) {
            fprintf(f, "set terminal %s\nset output '%s-k%u.%s'\n",
                    fmt ? "svg size 800,560" : "pngcairo size 800,560", r->p->name, k,
                    fmt ? "svg" : "png");
            fprintf(f, "set title '%s, k = %u, %llu trials'\nplot ", r->p->name, k,
                    (unsigned long long)r->trials);
            int any = 0;
            for (size_t c = 0; c < r->n_cfg; c++) {
                if (r->cfg[c].k != k)
                    continue;
                fprintf(f, "%s'data/c%zu.dat' using 1:2:3:4 with yerrorlines title '%s eps=%s'",
                        any ? ", " : "", c, alg_name(r, c), r->cfg[c].eps_text);
                any = 1;
            }
            if (isfinite(anchor) && anchor > 0)
                fprintf(f, ", %.6g*(x/%llu)**%.2f with lines dashtype 2 title 'T^{%.2f}'", anchor,
                        (unsigned long long)r->horizons[r->n_h - 1], rate, rate);
            fprintf(f, "\n");
        }
    }
    return fclose(f) != 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int mkdir_p(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    return -1;
}

int simftal_run(const simftal_args *a)
{
    const struct preset *p = NULL;
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(a->preset, presets[i].name) == 0)
            p = &presets[i];
    if (!p)
        return usage_error("unknown preset", a->preset);
    struct run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return 1;
    }
    int rc = 2;
    r->p = p;
    r->quiet = a->quiet;
    double eps[MAX_EPS];
    char eps_text[MAX_EPS][32];
    size_t n_eps = 0, n_ks = p->n_ks;
    uint32_t ks[MAX_KS];
    memcpy(ks, p->ks, sizeof ks);
    uint64_t T = p->horizon;
    r->trials = p->trials;
    if (a->epsilons) {
        if (parse_eps(a->epsilons, eps, eps_text, &n_eps))
            goto out;
    } else {
        for (size_t i = 0; i < sizeof default_eps / sizeof *default_eps; i++) {
            eps[n_eps] = default_eps[i];
            simplan_format_double(eps_text[n_eps], 32, eps[n_eps]);
            n_eps++;
        }
    }
    if (a->ks && parse_ks(a->ks, ks, &n_ks, p->mode))
        goto out;
    if (a->horizon && (simplan_parse_count(a->horizon, &T) || T < 10 || T > 100000000ULL)) {
        usage_error("--horizon: give a whole number in [10, 1e8]:", a->horizon);
        goto out;
    }
    if (a->trials &&
        (simplan_parse_count(a->trials, &r->trials) || r->trials < 1 || r->trials > 100000)) {
        usage_error("--trials: give a whole number in [1, 100000]:", a->trials);
        goto out;
    }
    /* Nonprivate first, then epsilon as given, per k. */
    for (size_t ki = 0; ki < n_ks; ki++) {
        for (int pass = 0; pass < 2; pass++)
            for (size_t e = 0; e < n_eps; e++) {
                if ((pass == 0) != (isinf(eps[e]) != 0))
                    continue;
                struct cfg *c = &r->cfg[r->n_cfg++];
                c->k = ks[ki];
                c->eps = eps[e];
                memcpy(c->eps_text, eps_text[e], 32);
            }
    }
    for (uint64_t h = SWEEP_FROM; h < T && r->n_h + 1 < MAX_HORIZ; h *= 10)
        r->horizons[r->n_h++] = h;
    r->horizons[r->n_h++] = T;
    rc = 1;
    size_t n_cp = agg_sim_checkpoints(T, SIMPLAN_PER_DECADE, NULL, 0);
    r->cp = calloc(n_cp, sizeof *r->cp);
    r->final = calloc(r->n_cfg * r->n_h * r->trials, sizeof *r->final);
    r->curve = calloc(r->n_cfg * r->trials * n_cp, sizeof *r->curve);
    if (!r->cp || !r->final || !r->curve) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto out;
    }
    r->n_cp = agg_sim_checkpoints(T, SIMPLAN_PER_DECADE, r->cp, n_cp);
    /* Refuse a configuration PFTAL would refuse before anything runs. */
    for (size_t c = 0; c < r->n_cfg; c++)
        for (size_t h = 0; h < r->n_h; h++) {
            agg_pftal_game g;
            double means[64];
            agg_pftal *f = NULL;
            char msg[AGG_ERRMSG_MAX];
            game_for(r, c, r->horizons[h], &g, means);
            if (agg_pftal_new(&f, &g.params, msg) != LDPB_OK) {
                fprintf(stderr, "%s: %s\n", PROG, msg);
                rc = 2;
                goto out;
            }
            agg_pftal_free(f);
        }
    char plots[4200], data[4210];
    snprintf(plots, sizeof plots, "%s/plots", a->out);
    snprintf(data, sizeof data, "%s/data", plots);
    if (mkdir_p(a->out) || (!a->no_plots && (mkdir_p(plots) || mkdir_p(data)))) {
        fprintf(stderr, "%s: cannot create the output directory %s: %s\n", PROG, a->out,
                strerror(errno));
        goto out;
    }
    ldpb_rng_seed_from_text(r->seed, a->seed);
    r->n_jobs = r->n_h * r->n_cfg * r->trials;
    for (size_t h = 0; h < r->n_h; h++)
        r->total_rounds += r->horizons[h] * r->n_cfg * r->trials;
    pthread_mutex_init(&r->mu, NULL);
    unsigned nt = a->threads ? a->threads : 1;
    pthread_t *tid = calloc(nt, sizeof *tid);
    unsigned started = 0;
    double t0 = now_s();
    for (unsigned i = 1; tid && i < nt; i++)
        if (pthread_create(&tid[started], NULL, worker, r) == 0)
            started++;
    worker(r);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    double seconds = now_s() - t0;
    pthread_mutex_destroy(&r->mu);
    if (!a->quiet)
        fprintf(stderr, "\r%60s\r", "");
    if (r->err != LDPB_OK) {
        fprintf(stderr, "%s: simulation failed: %s\n", PROG, r->msg);
        goto out;
    }
    r->args = a;
    r->seconds = seconds;
    r->threads = nt;
    if (write_file(a->out, "regret.csv", regret_csv, r) ||
        write_file(a->out, "summary.csv", summary_csv, r) ||
        write_file(a->out, "meta.txt", meta_txt, r) || write_file(a->out, "run.txt", run_txt, r))
        goto out;
    int plots_ok = 0;
    if (!a->no_plots) {
        if (plot_files(r, plots)) {
            fprintf(stderr, "%s: cannot write the plot files in %s\n", PROG, plots);
            goto out;
        }
        if (!a->have_gnuplot || !a->have_gnuplot()) {
            fprintf(stderr,
                    "%s: warning: gnuplot not found on PATH; plots skipped (cd %s && "
                    "gnuplot plots.gp)\n",
                    PROG, plots);
        } else if (a->run_gnuplot(plots) != 0) {
            fprintf(stderr, "%s: gnuplot failed; see %s/gnuplot.log\n", PROG, plots);
            goto out;
        } else {
            plots_ok = 1;
        }
    }
    printf("%s: %s, %zu configurations x %zu horizons x %llu trials, seed '%s': %.1f s on %u "
           "thread%s\n\n",
           PROG, p->name, r->n_cfg, r->n_h, (unsigned long long)r->trials, a->seed, seconds, nt,
           nt == 1 ? "" : "s");
    printf("mean pseudo-regret at each horizon (the barycentre's is %.2g (k-1)/k T), and the\n"
           "least-squares slope of log regret on log T: over all horizons, and over the last\n"
           "two decades\n",
           GAP);
    printf("%-13s %-7s %4s", "algorithm", "epsilon", "k");
    for (size_t h = 0; h < r->n_h; h++) {
        char t[32];
        simplan_format_count(t, sizeof t, r->horizons[h]);
        printf(" %11s", t);
    }
    printf(" %7s %7s\n", "slope", "last2");
    for (size_t c = 0; c < r->n_cfg; c++) {
        printf("%-13s %-7s %4u", alg_name(r, c), r->cfg[c].eps_text, r->cfg[c].k);
        for (size_t h = 0; h < r->n_h; h++)
            printf(" %11.4g", final_stat(r, c, h, NULL).mean);
        double s_all = fit_slope(r, c, 0), s_last = fit_slope(r, c, r->n_h > 3 ? r->n_h - 3 : 0);
        printf(" %7.3f %7.3f\n", s_all, s_last);
    }
    printf("\nclaim (Smith & Thakurta 2013, %s):\nprivate regret O~(%s / eps), a log-log "
           "slope of at most %s plus polylog terms;\nslope 1 is linear regret (no learning).\n",
           p->mode == AGG_PFTAL_FULL ? "Table 1 experts row, Thm 4 via App. C"
                                     : "Thm 6 and §3, general convex via regularisation",
           p->mode == AGG_PFTAL_FULL ? "sqrt(p T)" : "T^{3/4}",
           p->mode == AGG_PFTAL_FULL ? "0.5" : "0.75");
    printf("\nwrote %s/regret.csv, %s/summary.csv, %s/meta.txt, %s/run.txt%s%s\n", a->out, a->out,
           a->out, a->out, plots_ok ? ", figures in " : "", plots_ok ? plots : "");
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    free(r->cp);
    free(r->final);
    free(r->curve);
    free(r);
    return rc;
}
