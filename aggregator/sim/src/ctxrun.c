/* The shariff2018 preset of `ldpb sim`: see ctxrun.h. */
#include "ctxrun.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "report.h"
#include "sim.h"

static const double GAPS[] = {0.1, 0.0}; /* the authors' "large" and "small" gaps */

static ldpb_err refuse(char errmsg[SIMCTX_ERRMSG_MAX], ldpb_err err, const char *what,
                       const char *text, const char *why)
{
    snprintf(errmsg, SIMCTX_ERRMSG_MAX, "%s '%s': %s", what, text, why);
    return err;
}

/* The local mode at the JDP configurations' epsilon and delta: delta is per report, and a
 * simulated device reports once, so it is the same per-user (epsilon, delta) as JDP's
 * (docs/sim.md). alpha = 1/(2n) as the authors' private runs; L = B = 1 (unit actions, rewards in
 * {-1, +1}), S = 1, sigma = 1 as the JDP configurations. */
static ldpb_err local_cfg(const simctx_plan *plan, simctx_cfg *c, double eps,
                          char errmsg[SIMCTX_ERRMSG_MAX])
{
    c->local = 1;
    agg_linucb_config_init(&c->sim.policy);
    c->sim.policy.d = SIMCTX_D;
    c->sim.policy.horizon = plan->horizon;
    agg_ldp_linucb_config *lc = &c->ldp.policy;
    agg_ldp_linucb_config_init(lc);
    lc->d = SIMCTX_D;
    lc->epsilon = eps;
    lc->delta = SIMCTX_DELTA;
    lc->feature_norm = 1.0;
    lc->reward_bound = 1.0;
    lc->theta_norm = 1.0;
    lc->noise_sigma = 1.0;
    lc->alpha = 0.5 / (double)plan->horizon;
    lc->horizon = plan->horizon;
    simplan_format_double(c->eps_text, sizeof c->eps_text, eps);
    c->sim.env.d = SIMCTX_D;
    c->sim.env.k = SIMCTX_D * SIMCTX_D;
    c->sim.env.best = 0.75;
    c->sim.env.gap = c->gap;
    c->sim.env.reward = AGG_CTX_REWARD_BOUNDED;
    c->sim.checkpoints = plan->checkpoints;
    c->sim.n_checkpoints = plan->n_checkpoints;
    c->sim.noise_kind = AGG_NOISE_FAST;
    c->ldp.env = c->sim.env;
    c->ldp.checkpoints = plan->checkpoints;
    c->ldp.n_checkpoints = plan->n_checkpoints;
    c->ldp.noise_kind = AGG_NOISE_FAST;
    char msg[AGG_ERRMSG_MAX];
    agg_ldp_linucb *probe = NULL;
    ldpb_err err = agg_ldp_linucb_new(&probe, lc, msg);
    agg_ldp_linucb_free(probe);
    if (!err)
        err = agg_ctx_env_check(&c->sim.env, msg);
    if (err)
        snprintf(errmsg, SIMCTX_ERRMSG_MAX, "%s", msg);
    return err;
}

const char *simctx_alg_name(const simctx_cfg *c)
{
    return c->local ? SIMCTX_LOCAL_NAME : agg_linucb_variant_name(c->sim.policy.variant);
}

int simctx_is_private(const simctx_cfg *c)
{
    return c->local || c->sim.policy.variant != AGG_LINUCB_PLAIN;
}

void simctx_plan_fini(simctx_plan *plan)
{
    free(plan->checkpoints);
    memset(plan, 0, sizeof *plan);
}

ldpb_err simctx_plan_build(simctx_plan *plan, const char *horizon, const char *trials,
                           const char *algorithms, const char *epsilons,
                           char errmsg[SIMCTX_ERRMSG_MAX])
{
    memset(plan, 0, sizeof *plan);
    plan->horizon = SIMCTX_HORIZON;
    plan->trials = SIMCTX_TRIALS;
    const char *why;
    if (horizon && (why = simplan_parse_count(horizon, &plan->horizon)))
        return refuse(errmsg, LDPB_EINVAL, "--horizon", horizon, why);
    if (plan->horizon < 1 || plan->horizon > AGG_LINUCB_HORIZON_MAX)
        return refuse(errmsg, LDPB_ERANGE, "--horizon", horizon, "must be in [1, 2^40]");
    if (trials && (why = simplan_parse_count(trials, &plan->trials)))
        return refuse(errmsg, LDPB_EINVAL, "--trials", trials, why);
    if (plan->trials < 1 || plan->trials > SIMPLAN_TRIALS_MAX)
        return refuse(errmsg, LDPB_ERANGE, "--trials", trials, "must be in [1, 10^6]");

    /* want[1..3]: the linucb variants; want[4]: the local mode */
    int want[5] = {0, 1, 1, 1, 1};
    if (algorithms) {
        memset(want, 0, sizeof want);
        char buf[256];
        if (strlen(algorithms) >= sizeof buf)
            return refuse(errmsg, LDPB_EINVAL, "--algorithms", algorithms, "too long");
        strcpy(buf, algorithms);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int v = strcmp(tok, SIMCTX_LOCAL_NAME) == 0 ? 4 : (int)agg_linucb_variant_find(tok);
            if (!v)
                return refuse(errmsg, LDPB_EINVAL, "--algorithms", tok,
                              "not an algorithm of shariff2018 (linucb, jdp-linucb-wishart, "
                              "jdp-linucb-gaussian, " SIMCTX_LOCAL_NAME ")");
            want[v] = 1;
        }
    }
    double eps[16];
    size_t n_eps = 0;
    if (epsilons) {
        char buf[256];
        if (strlen(epsilons) >= sizeof buf)
            return refuse(errmsg, LDPB_EINVAL, "--epsilons", epsilons, "too long");
        strcpy(buf, epsilons);
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            char *end;
            double e = strtod(tok, &end);
            if (end == tok || *end || !(e > 0.0 && e <= LDPB_EPSILON_MAX))
                return refuse(errmsg, LDPB_ERANGE, "--epsilons", tok,
                              "each must be a number in (0, 10]");
            if (n_eps == sizeof eps / sizeof eps[0])
                return refuse(errmsg, LDPB_ERANGE, "--epsilons", epsilons, "at most 16 values");
            eps[n_eps++] = e;
        }
    } else {
        eps[n_eps++] = SIMCTX_EPSILON;
    }

    size_t nc = agg_sim_checkpoints(plan->horizon, SIMPLAN_PER_DECADE, NULL, 0);
    plan->checkpoints = calloc(nc, sizeof *plan->checkpoints);
    if (!plan->checkpoints)
        return LDPB_ENOMEM;
    plan->n_checkpoints =
        agg_sim_checkpoints(plan->horizon, SIMPLAN_PER_DECADE, plan->checkpoints, nc);
    for (size_t g = 0; g < sizeof GAPS / sizeof GAPS[0]; g++) {
        for (int v = AGG_LINUCB_PLAIN; v <= AGG_LINUCB_GAUSSIAN + 1; v++) {
            if (!want[v])
                continue;
            size_t ne = v == AGG_LINUCB_PLAIN ? 1 : n_eps;
            for (size_t e = 0; e < ne; e++) {
                if (plan->n_cfg == SIMCTX_CFG_MAX) {
                    simctx_plan_fini(plan);
                    return refuse(errmsg, LDPB_ERANGE, "--epsilons", epsilons,
                                  "too many configurations");
                }
                simctx_cfg *c = &plan->cfg[plan->n_cfg++];
                char gap[32];
                simplan_format_double(gap, sizeof gap, GAPS[g]);
                snprintf(c->label, sizeof c->label, "%s-gap%s", SIMCTX_PRESET, gap);
                c->gap = GAPS[g];
                if (v == AGG_LINUCB_GAUSSIAN + 1) {
                    ldpb_err err = local_cfg(plan, c, eps[e], errmsg);
                    if (err) {
                        simctx_plan_fini(plan);
                        return err;
                    }
                    continue;
                }
                agg_linucb_config *pc = &c->sim.policy;
                agg_linucb_config_init(pc);
                pc->variant = (agg_linucb_variant)v;
                pc->d = SIMCTX_D;
                pc->horizon = plan->horizon;
                pc->delta = SIMCTX_DELTA;
                if (v == AGG_LINUCB_PLAIN) {
                    pc->alpha = 1.0 / (double)plan->horizon;
                    snprintf(c->eps_text, sizeof c->eps_text, "inf");
                } else {
                    /* the authors' private runs: alpha = 1/(2n) */
                    pc->alpha = 0.5 / (double)plan->horizon;
                    pc->epsilon = eps[e];
                    simplan_format_double(c->eps_text, sizeof c->eps_text, eps[e]);
                }
                c->sim.env.d = SIMCTX_D;
                c->sim.env.k = SIMCTX_D * SIMCTX_D;
                c->sim.env.best = 0.75;
                c->sim.env.gap = GAPS[g];
                c->sim.env.reward = AGG_CTX_REWARD_BOUNDED;
                c->sim.checkpoints = plan->checkpoints;
                c->sim.n_checkpoints = plan->n_checkpoints;
                c->sim.noise_kind = AGG_NOISE_FAST;
                char msg[AGG_ERRMSG_MAX];
                agg_linucb_constants k;
                ldpb_err err = agg_linucb_constants_of(pc, &k, msg);
                if (!err)
                    err = agg_ctx_env_check(&c->sim.env, msg);
                if (err) {
                    snprintf(errmsg, SIMCTX_ERRMSG_MAX, "%s", msg);
                    simctx_plan_fini(plan);
                    return err;
                }
            }
        }
    }
    if (plan->n_cfg == 0) {
        simctx_plan_fini(plan);
        return refuse(errmsg, LDPB_EINVAL, "--algorithms", algorithms, "selects nothing");
    }
    return LDPB_OK;
}

/* A job is one trial of a group: consecutive configurations with the same environment (one gap),
 * run side by side by agg_ctx_sim_run_group so that their decision sets are drawn once. Each
 * configuration's regret is the same bit for bit as when it runs alone. */
struct batch {
    const simctx_plan *plan;
    const uint8_t *seed;
    double *const *regret;
    uint64_t *fails;
    simctx_progress_fn progress;
    void *progress_ctx;
    pthread_mutex_t lock;
    uint64_t next, done, total, jobs;
    size_t group_first[SIMCTX_CFG_MAX + 1]; /* group g is [group_first[g], group_first[g + 1]) */
    size_t n_groups;
    ldpb_err err;
    char *errmsg;
};

static int same_group(const simctx_cfg *a, const simctx_cfg *b)
{
    /* the local mode has its own trial runner: never grouped */
    return !a->local && !b->local && a->sim.env.d == b->sim.env.d && a->sim.env.k == b->sim.env.k &&
           a->sim.env.best == b->sim.env.best && a->sim.env.gap == b->sim.env.gap &&
           a->sim.env.reward == b->sim.env.reward;
}

/* Groups consecutive configurations of one environment, unless that would leave threads idle. */
static void make_groups(struct batch *b, unsigned threads)
{
    const simctx_plan *p = b->plan;
    b->n_groups = 0;
    for (size_t c = 0; c < p->n_cfg; c++)
        if (c == 0 || !same_group(&p->cfg[c - 1], &p->cfg[c]))
            b->group_first[b->n_groups++] = c;
    if (b->n_groups * p->trials < threads) {
        b->n_groups = p->n_cfg;
        for (size_t c = 0; c < p->n_cfg; c++)
            b->group_first[c] = c;
    }
    b->group_first[b->n_groups] = p->n_cfg;
    b->jobs = b->n_groups * p->trials;
}

static void *worker(void *arg)
{
    struct batch *b = arg;
    const simctx_plan *p = b->plan;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        if (b->err || b->next == b->jobs) {
            pthread_mutex_unlock(&b->lock);
            return NULL;
        }
        uint64_t job = b->next++;
        pthread_mutex_unlock(&b->lock);
        size_t g = (size_t)(job / p->trials);
        uint64_t i = job % p->trials;
        size_t c0 = b->group_first[g], n = b->group_first[g + 1] - c0;
        const agg_ctx_sim_config *cfgs[SIMCTX_CFG_MAX];
        double *rows[SIMCTX_CFG_MAX];
        uint64_t f[SIMCTX_CFG_MAX] = {0};
        for (size_t j = 0; j < n; j++) {
            cfgs[j] = &p->cfg[c0 + j].sim;
            rows[j] = b->regret[c0 + j] + i * p->n_checkpoints;
        }
        char msg[AGG_ERRMSG_MAX] = "";
        /* a local-mode configuration is a group of its own (make_groups) */
        ldpb_err err = p->cfg[c0].local
                           ? agg_ctx_ldp_sim_run_trial(&p->cfg[c0].ldp, b->seed, i, rows[0], f, msg)
                           : agg_ctx_sim_run_group(cfgs, n, b->seed, i, rows, f, msg);
        pthread_mutex_lock(&b->lock);
        if (err && !b->err) {
            b->err = err;
            snprintf(b->errmsg, SIMCTX_ERRMSG_MAX, "%s", msg);
        }
        for (size_t j = 0; j < n; j++)
            b->fails[c0 + j] += f[j];
        b->done += n;
        if (b->progress)
            b->progress(b->progress_ctx, b->done, b->total);
        pthread_mutex_unlock(&b->lock);
    }
}

ldpb_err simctx_run(const simctx_plan *plan, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                    unsigned threads, double *const *regret, uint64_t *fails,
                    simctx_progress_fn progress, void *progress_ctx, char errmsg[SIMCTX_ERRMSG_MAX])
{
    struct batch b = {.plan = plan,
                      .seed = seed,
                      .regret = regret,
                      .fails = fails,
                      .progress = progress,
                      .progress_ctx = progress_ctx,
                      .total = plan->trials * plan->n_cfg,
                      .errmsg = errmsg};
    errmsg[0] = '\0';
    memset(fails, 0, plan->n_cfg * sizeof *fails);
    if (pthread_mutex_init(&b.lock, NULL) != 0)
        return LDPB_ENOMEM;
    if (threads < 1)
        threads = 1;
    make_groups(&b, threads);
    pthread_t *tid = calloc(threads, sizeof *tid);
    unsigned started = 0;
    if (tid)
        for (; started + 1 < threads; started++)
            if (pthread_create(&tid[started], NULL, worker, &b) != 0)
                break;
    worker(&b);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    pthread_mutex_destroy(&b.lock);
    return b.err;
}

static const char *alg_name(const simctx_cfg *c)
{
    return simctx_alg_name(c);
}

int simctx_write_regret(const simctx_plan *plan, double *const *regret, FILE *f)
{
    fprintf(f, "%s\n", SIMREPORT_REGRET_HEADER);
    for (size_t c = 0; c < plan->n_cfg; c++) {
        const simctx_cfg *cfg = &plan->cfg[c];
        for (size_t j = 0; j < plan->n_checkpoints; j++) {
            simstat s;
            simstat_compute(regret[c] + j, (size_t)plan->trials, plan->n_checkpoints, NULL, &s);
            fprintf(f, "%s,%s,none,%s,%u,%llu,%.6g,%.6g,%.6g,%llu\n", cfg->label, alg_name(cfg),
                    cfg->eps_text, cfg->sim.env.k, (unsigned long long)plan->checkpoints[j], s.mean,
                    s.lo, s.hi, (unsigned long long)plan->trials);
        }
    }
    return ferror(f) ? -1 : 0;
}

int simctx_write_summary(const simctx_plan *plan, double *const *regret, FILE *f)
{
    double *scratch = malloc((size_t)plan->trials * sizeof *scratch);
    if (!scratch)
        return -1;
    fprintf(f, "%s\n", SIMREPORT_SUMMARY_HEADER);
    size_t j = plan->n_checkpoints - 1;
    for (size_t c = 0; c < plan->n_cfg; c++) {
        const simctx_cfg *cfg = &plan->cfg[c];
        simstat s;
        simstat_compute(regret[c] + j, (size_t)plan->trials, plan->n_checkpoints, scratch, &s);
        fprintf(f, "%s,%s,none,%s,%u,%llu,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", cfg->label,
                alg_name(cfg), cfg->eps_text, cfg->sim.env.k, (unsigned long long)plan->horizon,
                (unsigned long long)plan->trials, s.mean, s.lo, s.hi, s.sd, s.median, s.min, s.max);
    }
    free(scratch);
    return ferror(f) ? -1 : 0;
}

long simctx_write_plots(const simctx_plan *plan, double *const *regret, const char *plots_dir)
{
    static const char *const colors[] = {"#000000", "#1f77b4", "#d62728", "#2ca02c",
                                         "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
    char path[4200];
    for (size_t c = 0; c < plan->n_cfg; c++) {
        snprintf(path, sizeof path, "%s/data/c%zu.dat", plots_dir, c);
        FILE *f = fopen(path, "w");
        if (!f)
            return -1;
        fprintf(f, "# t mean ci95_low ci95_high: %s %s eps %s\n", plan->cfg[c].label,
                alg_name(&plan->cfg[c]), plan->cfg[c].eps_text);
        for (size_t j = 0; j < plan->n_checkpoints; j++) {
            simstat s;
            simstat_compute(regret[c] + j, (size_t)plan->trials, plan->n_checkpoints, NULL, &s);
            fprintf(f, "%llu %.6g %.6g %.6g\n", (unsigned long long)plan->checkpoints[j],
                    fmax(s.mean, 1e-3), fmax(s.lo, 1e-3), fmax(s.hi, 1e-3));
        }
        if (fclose(f) != 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/plots.gp", plots_dir);
    FILE *gp = fopen(path, "w");
    if (!gp)
        return -1;
    fprintf(gp,
            "# ldpb sim --preset %s: regret of LinUCB, JDP LinUCB and the local mode, one figure "
            "per gap.\n"
            "# Render: gnuplot plots.gp\n",
            SIMCTX_PRESET);
    long figures = 0;
    for (size_t g = 0; g < sizeof GAPS / sizeof GAPS[0]; g++) {
        size_t first = plan->n_cfg;
        for (size_t c = 0; c < plan->n_cfg; c++)
            if (plan->cfg[c].gap == GAPS[g] && first == plan->n_cfg)
                first = c;
        if (first == plan->n_cfg)
            continue;
        const char *stem = plan->cfg[first].label;
        char T[32];
        simplan_format_count(T, sizeof T, plan->horizon);
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0)
                fprintf(gp,
                        "set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' "
                        "background rgb 'white'\nset output '%s.png'\n",
                        stem);
            else
                fprintf(gp,
                        "set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' "
                        "background rgb 'white'\nset output '%s.svg'\n",
                        stem);
            fprintf(gp,
                    "set logscale xy\nset format x '10^{%%L}'\nset format y '10^{%%L}'\n"
                    "set xrange [1:%llu]\nset xlabel 'round t'\n"
                    "set ylabel 'cumulative pseudo-regret'\n"
                    "set title 'Shariff and Sheffet 2018: d = %u, %u actions/round, gap %g, "
                    "n = %s, %llu runs, {/Symbol d} = %g'\n"
                    "set key top left box opaque\nset grid\n"
                    "set style fill transparent solid 0.16 noborder\nplot \\\n",
                    (unsigned long long)plan->horizon, SIMCTX_D, SIMCTX_D * SIMCTX_D, GAPS[g], T,
                    (unsigned long long)plan->trials, SIMCTX_DELTA);
            int first_curve = 1;
            size_t col = 0;
            for (size_t c = 0; c < plan->n_cfg; c++) {
                if (plan->cfg[c].gap != GAPS[g])
                    continue;
                const char *color = colors[col++ % (sizeof colors / sizeof colors[0])];
                fprintf(gp,
                        "%s  'data/c%zu.dat' using 1:3:4 with filledcurves lc rgb '%s' notitle, "
                        "\\\n  'data/c%zu.dat' using 1:2 with lines lw 2 lc rgb '%s' title "
                        "'%s%s%s'",
                        first_curve ? "" : ", \\\n", c, color, c, color, alg_name(&plan->cfg[c]),
                        !simctx_is_private(&plan->cfg[c]) ? "" : ", {/Symbol e} = ",
                        !simctx_is_private(&plan->cfg[c]) ? "" : plan->cfg[c].eps_text);
                first_curve = 0;
            }
            fprintf(gp, "\nunset output\n");
        }
        figures++;
    }
    if (fclose(gp) != 0)
        return -1;
    return figures;
}
