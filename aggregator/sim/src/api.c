/* The simulation half of libldpb-sim's public API (ldpb/sim.h): option texts in, the plan of
 * `ldpb sim` built from them, the engine's batch run, the regret curves out. `ldpb sim` runs its
 * K-armed presets and custom instances through these calls too (tools/cmd_sim.c), so the
 * numbers are the command's by construction. The contextual preset shariff2018 runs through its
 * own plan and batch runner (ctxrun.h), the ones `ldpb sim --preset shariff2018` calls
 * (tools/cmd_sim_ctx.c), with its curves reduced exactly as its regret.csv writer does. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "api_internal.h"
#include "ctxrun.h"
#include "ftal.h"
#include "ldpb/rng.h"
#include "ldpb/sim.h"
#include "nas.h"
#include "outdir.h"
#include "poison.h"

#define THREADS_MAX 1024u

struct ldpb_sim {
    simplan_opts opts; /* points into texts[] */
    char *texts[16];
    char *seed;
    char *poison_fraction, *poison_strategy; /* texts of the two poisoning options */
    agg_poison poison;                       /* parsed from them by ldpb_sim_prepare */
    unsigned threads;
    ldpb_sim_progress_fn progress;
    void *progress_ctx;
    int ran;     /* 1 once ldpb_sim_prepare was called, whatever its outcome */
    int planned; /* the plan is built */
    int done;    /* the batch has run */
    simplan plan;
    simreport report;
    double **regret;
    double seconds;
    char errmsg[SIMPLAN_ERRMSG_MAX];
    /* shariff2018 (ctx set): its plan (the curves go to report.mean, lo and hi), and per
     * configuration its title and epsilon's value */
    int ctx;
    simctx_plan ctxplan;
    double *ctx_eps;
    char ctx_title[SIMCTX_CFG_MAX][96];
    /* sajed2019-nas (nas set): its grid (gaps: the text of its own option) and, once run, the
     * text of the stopping.csv the command writes */
    char *gaps;
    int nas;
    simnas_plan nasplan;
    char *table;
};

/* The options of `ldpb sim` that shape the plan, by their command-line names. */
static const struct {
    const char *name;
    size_t offset;
} plan_opts[] = {
    {"preset", offsetof(simplan_opts, preset)},
    {"means", offsetof(simplan_opts, means)},
    {"laws", offsetof(simplan_opts, laws)},
    {"algorithms", offsetof(simplan_opts, algorithms)},
    {"mechanisms", offsetof(simplan_opts, mechanisms)},
    {"epsilons", offsetof(simplan_opts, epsilons)},
    {"k", offsetof(simplan_opts, ks)},
    {"horizon", offsetof(simplan_opts, horizon)},
    {"trials", offsetof(simplan_opts, trials)},
    {"kappa", offsetof(simplan_opts, kappa)},
    {"gamma", offsetof(simplan_opts, gamma)},
    {"eps-arm", offsetof(simplan_opts, eps_arm)},
    {"tau", offsetof(simplan_opts, tau)},
    {"threshold", offsetof(simplan_opts, threshold)},
};
#define N_PLAN_OPTS (sizeof plan_opts / sizeof plan_opts[0])

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > (long)THREADS_MAX ? THREADS_MAX : (unsigned)n;
}

unsigned ldpb_sim_abi_version(void)
{
    return LDPB_SIM_ABI_VERSION;
}

ldpb_err ldpb_sim_new(ldpb_sim **out)
{
    if (!out)
        return LDPB_EINVAL;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return LDPB_ENOMEM;
    (*out)->threads = online_cpus();
    return LDPB_OK;
}

void ldpb_sim_free(ldpb_sim *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < N_PLAN_OPTS; i++)
        free(s->texts[i]);
    free(s->seed);
    free(s->poison_fraction);
    free(s->poison_strategy);
    if (s->regret && !s->ctx)
        for (size_t c = 0; c < s->plan.n_cfg; c++)
            free(s->regret[c]);
    if (s->regret && s->ctx)
        for (size_t c = 0; c < s->ctxplan.n_cfg; c++)
            free(s->regret[c]);
    free(s->regret);
    free(s->ctx_eps);
    if (s->ctx)
        simctx_plan_fini(&s->ctxplan);
    if (s->nas)
        simnas_fini(&s->nasplan);
    free(s->gaps);
    free(s->table);
    simreport_fini(&s->report);
    simplan_fini(&s->plan);
    free(s);
}

static ldpb_err replace_text(char **slot, const char *value)
{
    char *copy = NULL;
    if (value) {
        copy = strdup(value);
        if (!copy)
            return LDPB_ENOMEM;
    }
    free(*slot);
    *slot = copy;
    return LDPB_OK;
}

static ldpb_err set_threads(ldpb_sim *s, const char *value)
{
    if (!value) {
        s->threads = online_cpus();
        return LDPB_OK;
    }
    char *end;
    errno = 0;
    unsigned long n = strtoul(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end || errno || n < 1 || n > THREADS_MAX) {
        snprintf(s->errmsg, sizeof s->errmsg, "threads must be an integer in [1, %u]", THREADS_MAX);
        return LDPB_ERANGE;
    }
    s->threads = (unsigned)n;
    return LDPB_OK;
}

ldpb_err ldpb_sim_set(ldpb_sim *s, const char *name, const char *value)
{
    if (!s || !name)
        return LDPB_EINVAL;
    if (s->ran) {
        snprintf(s->errmsg, sizeof s->errmsg, "the batch has run; options are fixed");
        return LDPB_ESTATE;
    }
    if (strcmp(name, "seed") == 0)
        return replace_text(&s->seed, value);
    if (strcmp(name, "threads") == 0)
        return set_threads(s, value);
    if (strcmp(name, "poison-fraction") == 0)
        return replace_text(&s->poison_fraction, value);
    if (strcmp(name, "poison-strategy") == 0)
        return replace_text(&s->poison_strategy, value);
    if (strcmp(name, "gaps") == 0)
        return replace_text(&s->gaps, value);
    for (size_t i = 0; i < N_PLAN_OPTS; i++) {
        if (strcmp(name, plan_opts[i].name) != 0)
            continue;
        ldpb_err err = replace_text(&s->texts[i], value);
        if (err)
            return err;
        *(const char **)((char *)&s->opts + plan_opts[i].offset) = s->texts[i];
        return LDPB_OK;
    }
    char e[64];
    snprintf(s->errmsg, sizeof s->errmsg, "unknown option '%s'", tool_echo(e, sizeof e, name));
    return LDPB_EINVAL;
}

void ldpb_sim_set_progress(ldpb_sim *s, ldpb_sim_progress_fn fn, void *ctx)
{
    if (!s)
        return;
    s->progress = fn;
    s->progress_ctx = ctx;
}

static void progress_adapter(void *ctx, const agg_sim_progress *g)
{
    const ldpb_sim *s = ctx;
    ldpb_sim_progress p = {g->rounds_done, g->rounds_total, g->runs_done, g->runs_total,
                           g->work_done};
    s->progress(s->progress_ctx, &p);
}

int ldpb_sim_preset_runnable(const char *name)
{
    size_t n;
    const simplan_preset_info *info = simplan_presets(&n);
    for (size_t i = 0; name && i < n; i++)
        if (strcmp(info[i].name, name) == 0)
            return 1;
    return name && (strcmp(name, SIMCTX_PRESET) == 0 || strcmp(name, SIMNAS_PRESET) == 0);
}

const char *ldpb_sim_preset_name(size_t i)
{
    size_t n;
    const simplan_preset_info *info = simplan_presets(&n);
    if (i < n)
        return info[i].name;
    i -= n;
    const char *name = NULL;
    for (size_t j = 0; simftal_preset_summary(j, &name); j++, i--)
        if (i == 0)
            return name;
    if (i == 0)
        return SIMNAS_PRESET;
    if (i == 1)
        return SIMCTX_PRESET;
    return NULL;
}

static ldpb_err run_batch(ldpb_sim *s, const char *seed_text)
{
    agg_sim_config *sc = calloc(s->plan.n_cfg, sizeof *sc);
    s->regret = calloc(s->plan.n_cfg, sizeof *s->regret);
    ldpb_err err = LDPB_ENOMEM;
    if (!sc || !s->regret)
        goto done;
    for (size_t c = 0; c < s->plan.n_cfg; c++) {
        s->regret[c] = calloc((size_t)s->plan.trials * s->plan.n_checkpoints, sizeof **s->regret);
        if (!s->regret[c])
            goto done;
    }
    simplan_sim_configs(&s->plan, sc);
    for (size_t c = 0; c < s->plan.n_cfg; c++)
        sc[c].poison = &s->poison;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    char msg[AGG_ERRMSG_MAX] = "";
    double start = simout_now_seconds();
    err = agg_sim_run_batch(sc, s->plan.n_cfg, s->plan.trials, seed, s->threads, s->regret,
                            s->progress ? progress_adapter : NULL, s, msg);
    s->seconds = simout_now_seconds() - start;
    if (err) {
        snprintf(s->errmsg, sizeof s->errmsg, "simulation failed: %s",
                 msg[0] ? msg : ldpb_strerror(err));
        goto done;
    }
    err = simreport_compute(&s->report, &s->plan, s->regret);
done:
    if (err == LDPB_ENOMEM)
        snprintf(s->errmsg, sizeof s->errmsg, "%s", ldpb_strerror(err));
    free(sc);
    return err;
}

/* The poisoning options (docs/sim.md, "Poisoning"); `ldpb sim` passes its texts on, so these
 * messages are the command's too. */
static ldpb_err parse_poison(ldpb_sim *s)
{
    char e[64];
    s->poison.fraction = 0.0;
    s->poison.strategy = AGG_POISON_DEMOTE_BEST;
    if (s->poison_strategy &&
        agg_poison_strategy_parse(s->poison_strategy, &s->poison.strategy) != LDPB_OK) {
        snprintf(s->errmsg, sizeof s->errmsg,
                 "--poison-strategy '%s' is neither demote-best nor promote-worst",
                 tool_echo(e, sizeof e, s->poison_strategy));
        return LDPB_EINVAL;
    }
    if (!s->poison_fraction) {
        if (!s->poison_strategy)
            return LDPB_OK;
        snprintf(s->errmsg, sizeof s->errmsg, "--poison-strategy needs --poison-fraction");
        return LDPB_EINVAL;
    }
    char *end = NULL;
    errno = 0;
    double f = strtod(s->poison_fraction, &end);
    if (end == s->poison_fraction || *end != '\0' || errno != 0 || !(f >= 0.0 && f <= 0.5)) {
        snprintf(s->errmsg, sizeof s->errmsg, "--poison-fraction '%s' is not a number in [0, 0.5]",
                 tool_echo(e, sizeof e, s->poison_fraction));
        return LDPB_ERANGE;
    }
    s->poison.fraction = f;
    return LDPB_OK;
}

/* Poisoning devices report privatized rewards; an adversarial game has no such devices. */
static ldpb_err check_poison_plan(ldpb_sim *s)
{
    for (size_t i = 0; i < s->plan.n_inst && s->poison.fraction > 0.0; i++)
        if (s->plan.inst[i].adv) {
            snprintf(s->errmsg, sizeof s->errmsg,
                     "--poison-fraction needs a stochastic instance; %s is an adversarial game",
                     s->plan.inst[i].label);
            return LDPB_EINVAL;
        }
    return LDPB_OK;
}

/* ---- shariff2018 ---------------------------------------------------------------------------- */

/* A preset with a runner of its own takes the plan options `takes` names (a comma list) and
 * seed and threads; any other set option is refused (as the command refuses it). */
static ldpb_err check_unused(ldpb_sim *s, const char *preset, const char *takes)
{
    const char *bad = NULL;
    for (size_t i = 0; i < N_PLAN_OPTS && !bad; i++) {
        size_t n = strlen(plan_opts[i].name);
        const char *at = strstr(takes, plan_opts[i].name);
        int taken = at && (at == takes || at[-1] == ',') && (at[n] == ',' || at[n] == '\0');
        if (s->texts[i] && i > 0 && !taken)
            bad = plan_opts[i].name;
    }
    if (!bad && (s->poison_fraction || s->poison_strategy))
        bad = "poison-fraction";
    if (!bad && s->gaps && strcmp(preset, SIMNAS_PRESET) != 0)
        bad = "gaps";
    if (!bad)
        return LDPB_OK;
    snprintf(s->errmsg, sizeof s->errmsg, "%s does not apply to preset %s (it takes %s)", bad,
             preset, takes);
    return LDPB_EINVAL;
}

/* The options `ldpb sim --preset shariff2018` takes (horizon, trials, algorithms, epsilons, seed,
 * threads); the others are refused as the command refuses them (tools/cmd_sim_ctx.c). */
static ldpb_err ctx_prepare(ldpb_sim *s)
{
    ldpb_err err = check_unused(s, SIMCTX_PRESET, "horizon,trials,algorithms,epsilons");
    if (err)
        return err;
    gsl_set_error_handler_off();
    char msg[SIMCTX_ERRMSG_MAX];
    err = simctx_plan_build(&s->ctxplan, s->opts.horizon, s->opts.trials, s->opts.algorithms,
                            s->opts.epsilons, msg);
    if (err) {
        snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
        return err;
    }
    s->ctx = 1;
    s->planned = 1;
    s->errmsg[0] = '\0';
    return LDPB_OK;
}

static void ctx_progress(void *ctx, uint64_t done, uint64_t total)
{
    const ldpb_sim *s = ctx;
    const uint64_t per_job = s->ctxplan.horizon;
    ldpb_sim_progress p = {done * per_job, total * per_job, done, total,
                           total ? (double)done / (double)total : 1.0};
    s->progress(s->progress_ctx, &p);
}

/* The run, then each configuration's curve reduced as simctx_write_regret reduces it. */
static ldpb_err ctx_run(ldpb_sim *s, const char *seed_text)
{
    const simctx_plan *pl = &s->ctxplan;
    const size_t nc = pl->n_cfg, nj = pl->n_checkpoints;
    ldpb_err err = LDPB_ENOMEM;
    uint64_t *fails = calloc(nc, sizeof *fails);
    s->regret = calloc(nc, sizeof *s->regret);
    s->ctx_eps = calloc(nc, sizeof *s->ctx_eps);
    s->report.mean = calloc(nc * nj, sizeof *s->report.mean);
    s->report.lo = calloc(nc * nj, sizeof *s->report.lo);
    s->report.hi = calloc(nc * nj, sizeof *s->report.hi);
    if (!fails || !s->regret || !s->ctx_eps || !s->report.mean || !s->report.lo || !s->report.hi)
        goto done;
    for (size_t c = 0; c < nc; c++)
        if (!(s->regret[c] = calloc((size_t)pl->trials * nj, sizeof **s->regret)))
            goto done;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    char msg[SIMCTX_ERRMSG_MAX] = "";
    double start = simout_now_seconds();
    err = simctx_run(pl, seed, s->threads, s->regret, fails, s->progress ? ctx_progress : NULL, s,
                     msg);
    s->seconds = simout_now_seconds() - start;
    if (err) {
        /* the runner's message is one line of at most SIMCTX_ERRMSG_MAX - 1 bytes; the prefix
         * takes 19 of the handle's SIMPLAN_ERRMSG_MAX */
        snprintf(s->errmsg, sizeof s->errmsg, "simulation failed: %.*s",
                 (int)(sizeof s->errmsg - 20), msg[0] ? msg : ldpb_strerror(err));
        goto done;
    }
    for (size_t c = 0; c < nc; c++) {
        const simctx_cfg *cfg = &pl->cfg[c];
        for (size_t j = 0; j < nj; j++) {
            simstat st;
            simstat_compute(s->regret[c] + j, (size_t)pl->trials, nj, NULL, &st);
            s->report.mean[c * nj + j] = st.mean;
            s->report.lo[c * nj + j] = st.lo;
            s->report.hi[c * nj + j] = st.hi;
        }
        s->ctx_eps[c] = simctx_is_private(cfg) ? strtod(cfg->eps_text, NULL) : INFINITY;
        snprintf(s->ctx_title[c], sizeof s->ctx_title[c],
                 "Shariff and Sheffet 2018: d = %u, %u actions/round, gap %g", cfg->sim.env.d,
                 cfg->sim.env.k, cfg->gap);
    }
done:
    if (err == LDPB_ENOMEM)
        snprintf(s->errmsg, sizeof s->errmsg, "%s", ldpb_strerror(err));
    free(fails);
    return err;
}

/* ---- sajed2019-nas ------------------------------------------------------------------------- */

static ldpb_err nas_prepare(ldpb_sim *s)
{
    ldpb_err err = check_unused(s, SIMNAS_PRESET, "trials,algorithms,epsilons,gaps");
    if (err)
        return err;
    simnas_opts o = {s->opts.algorithms, s->opts.epsilons, s->gaps, s->opts.trials};
    s->nas = 1; /* simnas_fini is safe after a failed build */
    err = simnas_build(&s->nasplan, &o, s->errmsg);
    if (err)
        return err;
    s->planned = 1;
    s->errmsg[0] = '\0';
    return LDPB_OK;
}

/* The run, reduced and written as `ldpb sim` writes stopping.csv (tools/cmd_sim.c). */
static ldpb_err nas_run(ldpb_sim *s, const char *seed_text)
{
    const simnas_plan *pl = &s->nasplan;
    simnas_trial *trials = calloc(pl->n_cell * (size_t)pl->trials, sizeof *trials);
    simnas_stats *stats = calloc(pl->n_cell, sizeof *stats);
    size_t len = 0;
    FILE *f = NULL;
    ldpb_err err = LDPB_ENOMEM;
    if (!trials || !stats)
        goto done;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    char msg[AGG_ERRMSG_MAX] = "";
    double start = simout_now_seconds();
    err = simnas_run(pl, seed, s->threads, trials, msg);
    s->seconds = simout_now_seconds() - start;
    if (err) {
        snprintf(s->errmsg, sizeof s->errmsg, "simulation failed: %s",
                 msg[0] ? msg : ldpb_strerror(err));
        goto done;
    }
    err = simnas_reduce(pl, trials, stats);
    if (err)
        goto done;
    err = LDPB_ENOMEM;
    if (!(f = open_memstream(&s->table, &len)))
        goto done;
    int bad = simnas_write_csv(pl, stats, f);
    if (fclose(f) == 0 && !bad)
        err = LDPB_OK;
done:
    if (err == LDPB_ENOMEM)
        snprintf(s->errmsg, sizeof s->errmsg, "%s", ldpb_strerror(err));
    free(trials);
    free(stats);
    return err;
}

const char *ldpb_sim_table(const ldpb_sim *s, const char **file_name)
{
    int have = s && s->done && s->table;
    if (file_name)
        *file_name = have ? SIMNAS_CSV : NULL;
    return have ? s->table : NULL;
}

ldpb_err ldpb_sim_prepare(ldpb_sim *s)
{
    if (!s)
        return LDPB_EINVAL;
    if (s->ran) {
        snprintf(s->errmsg, sizeof s->errmsg, "the batch is already prepared");
        return LDPB_ESTATE;
    }
    s->ran = 1;
    const char *seed_text = s->seed ? s->seed : SIMPLAN_DEFAULT_SEED;
    if (seed_text[0] == '\0') {
        snprintf(s->errmsg, sizeof s->errmsg, "seed needs a non-empty text");
        return LDPB_EINVAL;
    }
    const char *preset = s->opts.preset;
    if (preset && !ldpb_sim_preset_runnable(preset) &&
        (strcmp(preset, SIMNAS_PRESET) == 0 || strcmp(preset, SIMCTX_PRESET) == 0 ||
         simftal_is_preset(preset))) {
        char e[48];
        snprintf(s->errmsg, sizeof s->errmsg,
                 "preset '%s' has a runner of its own: run it with `ldpb sim --preset %s`",
                 tool_echo(e, sizeof e, preset), e);
        return LDPB_ENOTSUP;
    }
    if (preset && strcmp(preset, SIMCTX_PRESET) == 0)
        return ctx_prepare(s);
    if (preset && strcmp(preset, SIMNAS_PRESET) == 0)
        return nas_prepare(s);
    if (s->gaps) {
        snprintf(s->errmsg, sizeof s->errmsg, "gaps applies to preset %s only", SIMNAS_PRESET);
        return LDPB_EINVAL;
    }
    ldpb_err err = parse_poison(s);
    if (err)
        return err;
    gsl_set_error_handler_off();
    err = simplan_build(&s->plan, &s->opts, s->errmsg);
    if (err == LDPB_OK)
        err = check_poison_plan(s); /* the plan is freed with the handle */
    if (err == LDPB_OK) {
        s->planned = 1;
        s->errmsg[0] = '\0';
    }
    return err;
}

ldpb_err ldpb_sim_run(ldpb_sim *s)
{
    if (!s)
        return LDPB_EINVAL;
    if (!s->ran) {
        ldpb_err err = ldpb_sim_prepare(s);
        if (err)
            return err;
    }
    if (!s->planned || s->done || s->regret) {
        snprintf(s->errmsg, sizeof s->errmsg, "%s",
                 s->planned ? "the batch has already run" : "the batch could not be planned");
        return LDPB_ESTATE;
    }
    gsl_set_error_handler_off();
    const char *seed_text = s->seed ? s->seed : SIMPLAN_DEFAULT_SEED;
    ldpb_err err = s->ctx   ? ctx_run(s, seed_text)
                   : s->nas ? nas_run(s, seed_text)
                            : run_batch(s, seed_text);
    if (err == LDPB_OK) {
        s->done = 1;
        s->errmsg[0] = '\0';
    }
    return err;
}

const char *ldpb_sim_errmsg(const ldpb_sim *s)
{
    return s ? s->errmsg : "";
}

size_t ldpb_sim_n_configs(const ldpb_sim *s)
{
    return !s || !s->done ? 0 : s->ctx ? s->ctxplan.n_cfg : s->plan.n_cfg;
}

uint64_t ldpb_sim_trials(const ldpb_sim *s)
{
    return !s || !s->done ? 0 : s->ctx ? s->ctxplan.trials : s->plan.trials;
}

uint64_t ldpb_sim_horizon(const ldpb_sim *s)
{
    return !s || !s->done ? 0 : s->ctx ? s->ctxplan.horizon : s->plan.horizon;
}

size_t ldpb_sim_checkpoints(const ldpb_sim *s, const uint64_t **t)
{
    if (!s || !s->done) {
        if (t)
            *t = NULL;
        return 0;
    }
    if (t)
        *t = s->ctx ? s->ctxplan.checkpoints : s->plan.checkpoints;
    return s->ctx ? s->ctxplan.n_checkpoints : s->plan.n_checkpoints;
}

double ldpb_sim_seconds(const ldpb_sim *s)
{
    return s && s->done ? s->seconds : 0.0;
}

static const char *model_name(agg_model m)
{
    switch (m) {
    case AGG_MODEL_LOCAL:
        return "local";
    case AGG_MODEL_CENTRAL:
        return "central";
    case AGG_MODEL_NONPRIVATE:
        return "nonprivate";
    }
    return "unknown";
}

const char *simapi_model_name(int model)
{
    return model_name((agg_model)model);
}

ldpb_err ldpb_sim_config(const ldpb_sim *s, size_t c, ldpb_sim_config_info *out)
{
    if (!s || !out)
        return LDPB_EINVAL;
    if (!s->done)
        return LDPB_ESTATE;
    if (c >= ldpb_sim_n_configs(s))
        return LDPB_ERANGE;
    if (s->ctx) {
        const simctx_cfg *x = &s->ctxplan.cfg[c];
        out->preset = x->label;
        out->algorithm = simctx_alg_name(x);
        out->mechanism = "none";
        out->epsilon = x->eps_text;
        out->epsilon_value = s->ctx_eps[c];
        out->k = x->sim.env.k;
        out->model = x->local ? "local" : simctx_is_private(x) ? "central" : "nonprivate";
        out->title = s->ctx_title[c];
        return LDPB_OK;
    }
    const simplan_config *cfg = &s->plan.cfg[c];
    const simplan_instance *in = &s->plan.inst[cfg->instance];
    out->preset = in->label;
    out->algorithm = cfg->ops->name;
    out->mechanism = simplan_mech_name(cfg);
    out->epsilon = cfg->eps_text;
    out->epsilon_value = cfg->epsilon;
    out->k = in->k;
    out->model = model_name(cfg->ops->model);
    out->title = in->title;
    return LDPB_OK;
}

const double *ldpb_sim_regret(const ldpb_sim *s, size_t c)
{
    if (!s || !s->done || c >= ldpb_sim_n_configs(s))
        return NULL;
    return s->regret[c];
}

ldpb_err ldpb_sim_curve(const ldpb_sim *s, size_t c, const double **mean, const double **ci_low,
                        const double **ci_high)
{
    if (!s)
        return LDPB_EINVAL;
    if (!s->done)
        return LDPB_ESTATE;
    if (c >= ldpb_sim_n_configs(s))
        return LDPB_ERANGE;
    size_t off = c * (s->ctx ? s->ctxplan.n_checkpoints : s->plan.n_checkpoints);
    if (mean)
        *mean = s->report.mean + off;
    if (ci_low)
        *ci_low = s->report.lo + off;
    if (ci_high)
        *ci_high = s->report.hi + off;
    return LDPB_OK;
}

const simplan *simapi_plan(const ldpb_sim *s)
{
    return s && s->planned && !s->ctx ? &s->plan : NULL;
}

const simreport *simapi_report(const ldpb_sim *s)
{
    return s && s->done && !s->ctx ? &s->report : NULL;
}

const agg_poison *simapi_poison(const ldpb_sim *s)
{
    return &s->poison;
}

unsigned simapi_threads(const ldpb_sim *s)
{
    return s->threads;
}

const char *simapi_plan_opt(size_t i, size_t *offset)
{
    if (i >= N_PLAN_OPTS)
        return NULL;
    *offset = plan_opts[i].offset;
    return plan_opts[i].name;
}
