/* The stopping experiment of `ldpb sim --preset sajed2019-nas` (nas.h): grid, trials on a
 * thread pool, reduction, slopes, stopping.csv and the gnuplot figures. */
#include "nas.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "cli_text.h"
#include "rand.h"
#include "sim.h"

#define ECHO_MAX  40
#define ITEMS_MAX 64

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ldpb_err
fail(char errmsg[SIMPLAN_ERRMSG_MAX], ldpb_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, SIMPLAN_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    return err;
}

/* Splits a comma-separated list into at most ITEMS_MAX trimmed items of buf. */
static ldpb_err split(const char *opt, const char *text, char *buf, size_t cap, char **item,
                      size_t *n, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    if (strlen(text) >= cap)
        return fail(errmsg, LDPB_ERANGE, "--%s: the list is too long", opt);
    strcpy(buf, text);
    *n = 0;
    char *s = buf;
    for (;;) {
        char *comma = strchr(s, ',');
        if (comma)
            *comma = '\0';
        while (*s == ' ')
            s++;
        size_t len = strlen(s);
        while (len && s[len - 1] == ' ')
            s[--len] = '\0';
        if (len == 0)
            return fail(errmsg, LDPB_EINVAL, "--%s '%s' has an empty item", opt,
                        tool_echo(e, sizeof e, text));
        if (*n == ITEMS_MAX)
            return fail(errmsg, LDPB_ERANGE, "--%s: more than %d items", opt, ITEMS_MAX);
        item[(*n)++] = s;
        if (!comma)
            break;
        s = comma + 1;
    }
    return LDPB_OK;
}

/* Parses a list of distinct finite numbers in (lo, hi] (or [lo, hi) with lo_closed). */
static ldpb_err numbers(const char *opt, const char *text, double lo, double hi, int lo_closed,
                        double *out, char (*out_text)[32], size_t *n,
                        char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char buf[2048], *item[ITEMS_MAX], e[ECHO_MAX + 4];
    ldpb_err err = split(opt, text, buf, sizeof buf, item, n, errmsg);
    if (err)
        return err;
    for (size_t i = 0; i < *n; i++) {
        char *end;
        double v = strtod(item[i], &end);
        if (*end != '\0' || end == item[i] || !isfinite(v))
            return fail(errmsg, LDPB_EINVAL, "--%s: '%s' is not a finite number", opt,
                        tool_echo(e, sizeof e, item[i]));
        int ok = lo_closed ? (v >= lo && v < hi) : (v > lo && v <= hi);
        if (!ok)
            return fail(errmsg, LDPB_ERANGE, "--%s: %s outside %c%g, %g%c", opt,
                        tool_echo(e, sizeof e, item[i]), lo_closed ? '[' : '(', lo, hi,
                        lo_closed ? ')' : ']');
        for (size_t j = 0; j < i; j++)
            if (out[j] == v)
                return fail(errmsg, LDPB_EINVAL, "--%s: %s and %s are the same value", opt,
                            out_text[j], tool_echo(e, sizeof e, item[i]));
        out[i] = v;
        simplan_format_double(out_text[i], sizeof out_text[i], v);
    }
    return LDPB_OK;
}

double simnas_rate(double gap, double eps, double alpha, double beta)
{
    double l = log(log(1 / (alpha * gap)) / beta);
    double t0 = l / (alpha * alpha * gap * gap);
    double t1 = l / (eps * gap);
    double t2 = log(1 / beta) / (eps * alpha * gap);
    return t0 + t1 + t2;
}

ldpb_err simnas_build(simnas_plan *plan, const simnas_opts *o, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    memset(plan, 0, sizeof *plan);
    double gaps[ITEMS_MAX], eps[ITEMS_MAX];
    char gap_text[ITEMS_MAX][32], eps_text[ITEMS_MAX][32];
    size_t n_gap, n_eps, n_alg;
    ldpb_err err = numbers("gaps", o->gaps ? o->gaps : SIMNAS_GAPS, SIMNAS_GAP_MIN, 1, 1, gaps,
                           gap_text, &n_gap, errmsg);
    if (!err)
        err = numbers("epsilons", o->epsilons ? o->epsilons : SIMNAS_EPS, 0, LDPB_EPSILON_MAX, 0,
                      eps, eps_text, &n_eps, errmsg);
    if (err)
        return err;
    char abuf[512], *alg[ITEMS_MAX], e[ECHO_MAX + 4];
    agg_nas_kind kinds[2];
    const char *names[2];
    err = split("algorithms", o->algorithms ? o->algorithms : SIMNAS_ALGS, abuf, sizeof abuf, alg,
                &n_alg, errmsg);
    if (err)
        return err;
    if (n_alg > 2)
        return fail(errmsg, LDPB_EINVAL, "--algorithms: %s takes dp-nas and dp-exp-nas only",
                    SIMNAS_PRESET);
    for (size_t i = 0; i < n_alg; i++) {
        if (strcmp(alg[i], "dp-nas") == 0) {
            kinds[i] = AGG_NAS_EVERY_STEP;
            names[i] = "dp-nas";
        } else if (strcmp(alg[i], "dp-exp-nas") == 0) {
            kinds[i] = AGG_NAS_EXPONENTIAL;
            names[i] = "dp-exp-nas";
        } else {
            return fail(errmsg, LDPB_EINVAL,
                        "--algorithms: '%s' is not a stopping rule of %s (dp-nas, dp-exp-nas)",
                        tool_echo(e, sizeof e, alg[i]), SIMNAS_PRESET);
        }
        if (i == 1 && kinds[0] == kinds[1])
            return fail(errmsg, LDPB_EINVAL, "--algorithms: %s given twice", names[1]);
    }
    uint64_t trials = SIMNAS_TRIALS;
    if (o->trials) {
        const char *why = simplan_parse_count(o->trials, &trials);
        if (why)
            return fail(errmsg, LDPB_EINVAL, "--trials '%s' %s", tool_echo(e, sizeof e, o->trials),
                        why);
        if (trials < 1 || trials > SIMPLAN_TRIALS_MAX)
            return fail(errmsg, LDPB_ERANGE, "--trials %s outside [1, 1e6]",
                        tool_echo(e, sizeof e, o->trials));
    }
    plan->n_cell = n_alg * n_gap * n_eps;
    plan->cell = calloc(plan->n_cell, sizeof *plan->cell);
    if (!plan->cell)
        return fail(errmsg, LDPB_ENOMEM, "out of memory");
    plan->n_alg = n_alg;
    plan->n_gap = n_gap;
    plan->n_eps = n_eps;
    plan->trials = trials;
    plan->alpha = SIMNAS_ALPHA;
    plan->beta = SIMNAS_BETA;
    size_t c = 0;
    for (size_t a = 0; a < n_alg; a++)
        for (size_t g = 0; g < n_gap; g++)
            for (size_t k = 0; k < n_eps; k++, c++) {
                simnas_cell *x = &plan->cell[c];
                x->kind = kinds[a];
                x->algorithm = names[a];
                x->gap = gaps[g];
                x->eps = eps[k];
                x->gap_index = g;
                x->eps_index = k;
                memcpy(x->gap_text, gap_text[g], sizeof x->gap_text);
                memcpy(x->eps_text, eps_text[k], sizeof x->eps_text);
                x->rate = simnas_rate(x->gap, x->eps, plan->alpha, plan->beta);
                x->budget = (uint64_t)ceil(SIMNAS_TU_FACTOR * x->rate);
            }
    return LDPB_OK;
}

void simnas_fini(simnas_plan *plan)
{
    free(plan->cell);
    memset(plan, 0, sizeof *plan);
}

static ldpb_err seeded(agg_rand *r, const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t id)
{
    ldpb_rng *src = NULL;
    ldpb_err err = ldpb_rng_new_seeded_stream(&src, seed, id);
    if (err)
        return err;
    agg_rand_seed(r, src);
    ldpb_rng_free(src);
    return LDPB_OK;
}

ldpb_err simnas_run_trial(const simnas_plan *plan, size_t cell_index,
                          const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                          simnas_trial *out)
{
    if (!plan || !seed || !out || cell_index >= plan->n_cell || trial >= ((uint64_t)1 << 32))
        return LDPB_EINVAL;
    const simnas_cell *c = &plan->cell[cell_index];
    uint64_t pair = c->gap_index * plan->n_eps + c->eps_index;
    agg_rand draws, nrand;
    agg_noise *noise = NULL;
    ldpb_err err = seeded(&draws, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_ENV, pair));
    if (!err)
        err = seeded(&nrand, seed, AGG_SIM_STREAM(trial, AGG_SIM_PURPOSE_NOISE, pair));
    if (!err)
        err = agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nrand);
    if (err)
        return err;
    agg_nas_opts o;
    agg_nas_opts_init(&o, c->kind, c->eps);
    o.alpha = plan->alpha;
    o.beta = plan->beta;
    o.budget = c->budget;
    agg_nas s;
    err = agg_nas_init(&s, &o, noise, NULL, 0);
    double p = (1 + c->gap) / 2; /* P(X = +1): E X = gap */
    agg_nas_state st = AGG_NAS_RUNNING;
    while (!err && st == AGG_NAS_RUNNING) {
        if (c->kind == AGG_NAS_EVERY_STEP) {
            err = agg_nas_push(&s, noise, agg_rand_uniform(&draws) < p ? 1.0 : -1.0, &st);
        } else {
            /* Integer sums are exact, so a block equals its samples one by one (stopping.h). */
            uint64_t n = agg_nas_next_check(&s) - s.t;
            uint64_t ones = agg_rand_binomial(&draws, n, p);
            err = agg_nas_push_block(&s, noise, n, 2.0 * (double)ones - (double)n, &st);
        }
    }
    if (!err) {
        out->samples = s.t;
        out->halted = st == AGG_NAS_HALTED;
        out->estimate = NAN;
        if (out->halted)
            err = agg_nas_estimate(&s, &out->estimate);
    }
    agg_noise_free(noise);
    return err;
}

struct pool {
    const simnas_plan *plan;
    const uint8_t *seed;
    simnas_trial *out;
    size_t *order; /* cells, most expensive first */
    atomic_size_t next;
    atomic_int failed;
    ldpb_err err;
    char *errmsg;
    pthread_mutex_t lock;
};

static void *worker(void *arg)
{
    struct pool *w = arg;
    uint64_t trials = w->plan->trials;
    size_t total = w->plan->n_cell * (size_t)trials;
    for (;;) {
        size_t j = atomic_fetch_add(&w->next, 1);
        if (j >= total || atomic_load(&w->failed))
            break;
        size_t c = w->order[j / trials];
        uint64_t i = j % trials;
        ldpb_err err = simnas_run_trial(w->plan, c, w->seed, i, &w->out[c * trials + i]);
        if (err) {
            pthread_mutex_lock(&w->lock);
            if (!atomic_exchange(&w->failed, 1)) {
                w->err = err;
                snprintf(w->errmsg, AGG_ERRMSG_MAX, "sim: %s gap %s eps %s trial %llu: %s",
                         w->plan->cell[c].algorithm, w->plan->cell[c].gap_text,
                         w->plan->cell[c].eps_text, (unsigned long long)i, ldpb_strerror(err));
            }
            pthread_mutex_unlock(&w->lock);
            break;
        }
    }
    return NULL;
}

/* Estimated cost: DP-NAS draws and tests every sample, the exponential rule a few blocks. */
static double cost(const simnas_cell *c)
{
    return c->kind == AGG_NAS_EVERY_STEP ? c->rate : log2(c->rate);
}

ldpb_err simnas_run(const simnas_plan *plan, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                    unsigned threads, simnas_trial *out, char errmsg[AGG_ERRMSG_MAX])
{
    errmsg[0] = '\0';
    if (threads < 1)
        threads = 1;
    struct pool w;
    memset(&w, 0, sizeof w);
    w.plan = plan;
    w.seed = seed;
    w.out = out;
    w.errmsg = errmsg;
    w.order = malloc(plan->n_cell * sizeof *w.order);
    pthread_t *tid = calloc(threads, sizeof *tid);
    if (!w.order || !tid) {
        free(w.order);
        free(tid);
        snprintf(errmsg, AGG_ERRMSG_MAX, "sim: out of memory");
        return LDPB_ENOMEM;
    }
    for (size_t c = 0; c < plan->n_cell; c++)
        w.order[c] = c;
    /* The most expensive cells first, so that no long cell starts last (insertion sort: a few
     * dozen cells). The results do not depend on the order. */
    for (size_t i = 1; i < plan->n_cell; i++) {
        size_t v = w.order[i], j = i;
        for (; j > 0 && cost(&plan->cell[w.order[j - 1]]) < cost(&plan->cell[v]); j--)
            w.order[j] = w.order[j - 1];
        w.order[j] = v;
    }
    atomic_init(&w.next, 0);
    atomic_init(&w.failed, 0);
    pthread_mutex_init(&w.lock, NULL);
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, worker, &w) == 0)
            started++;
    worker(&w);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&w.lock);
    free(w.order);
    free(tid);
    return atomic_load(&w.failed) ? w.err : LDPB_OK;
}

ldpb_err simnas_reduce(const simnas_plan *plan, const simnas_trial *trials, simnas_stats *stats)
{
    uint64_t n = plan->trials;
    double *x = malloc(n * sizeof *x), *scratch = malloc(n * sizeof *scratch);
    if (!x || !scratch) {
        free(x);
        free(scratch);
        return LDPB_ENOMEM;
    }
    for (size_t c = 0; c < plan->n_cell; c++) {
        const simnas_cell *cell = &plan->cell[c];
        simnas_stats *s = &stats[c];
        memset(s, 0, sizeof *s);
        for (uint64_t i = 0; i < n; i++) {
            const simnas_trial *t = &trials[c * n + i];
            x[i] = (double)t->samples;
            if (!t->halted)
                continue;
            s->halted++;
            s->wrong += !(t->estimate > 0);
            s->inexact += !(fabs(t->estimate - cell->gap) <= plan->alpha * cell->gap);
        }
        simstat_compute(x, n, 1, scratch, &s->samples);
        s->ratio = s->samples.mean / cell->rate;
        uint64_t k = n - s->halted + s->inexact;
        s->failure = (double)k / (double)n;
        s->failure_hi = k >= n ? 1.0 : gsl_cdf_beta_Pinv(0.95, (double)k + 1, (double)(n - k));
    }
    free(x);
    free(scratch);
    return LDPB_OK;
}

static size_t cell_of(const simnas_plan *p, size_t a, size_t g, size_t e)
{
    return (a * p->n_gap + g) * p->n_eps + e;
}

/* Least-squares slope of y on x over n points. */
static double slope(const double *x, const double *y, size_t n)
{
    if (n < 2)
        return NAN;
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i] / (double)n;
        my += y[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    return sxy / sxx;
}

void simnas_slope_gap(const simnas_plan *plan, const simnas_stats *stats, size_t a, size_t e,
                      double *measured, double *theory)
{
    double x[ITEMS_MAX], y[ITEMS_MAX], z[ITEMS_MAX];
    for (size_t g = 0; g < plan->n_gap; g++) {
        size_t c = cell_of(plan, a, g, e);
        x[g] = log(1 / plan->cell[c].gap);
        y[g] = log(stats[c].samples.mean);
        z[g] = log(plan->cell[c].rate);
    }
    *measured = slope(x, y, plan->n_gap);
    *theory = slope(x, z, plan->n_gap);
}

void simnas_slope_eps(const simnas_plan *plan, const simnas_stats *stats, size_t a, size_t g,
                      double *measured, double *theory)
{
    double x[ITEMS_MAX], y[ITEMS_MAX], z[ITEMS_MAX];
    for (size_t e = 0; e < plan->n_eps; e++) {
        size_t c = cell_of(plan, a, g, e);
        x[e] = log(1 / plan->cell[c].eps);
        y[e] = log(stats[c].samples.mean);
        z[e] = log(plan->cell[c].rate);
    }
    *measured = slope(x, y, plan->n_eps);
    *theory = slope(x, z, plan->n_eps);
}

double simnas_constant(const simnas_plan *plan, const simnas_stats *stats, size_t a,
                       double *spread_lo, double *spread_hi)
{
    size_t per = plan->n_gap * plan->n_eps;
    double sum = 0;
    for (size_t i = 0; i < per; i++)
        sum += log(stats[a * per + i].ratio);
    double cst = exp(sum / (double)per);
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < per; i++) {
        double r = stats[a * per + i].ratio / cst;
        lo = fmin(lo, r);
        hi = fmax(hi, r);
    }
    *spread_lo = lo;
    *spread_hi = hi;
    return cst;
}

int simnas_write_csv(const simnas_plan *plan, const simnas_stats *stats, FILE *f)
{
    fprintf(f, "%s\n", SIMNAS_HEADER);
    for (size_t c = 0; c < plan->n_cell; c++) {
        const simnas_cell *x = &plan->cell[c];
        const simnas_stats *s = &stats[c];
        fprintf(f,
                "%s,%s,%s,%s,%.17g,%.17g,%llu,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,"
                "%.10g,%llu,%llu,%llu,%llu,%.10g,%.10g\n",
                SIMNAS_PRESET, x->algorithm, x->eps_text, x->gap_text, plan->alpha, plan->beta,
                (unsigned long long)plan->trials, s->samples.mean, s->samples.lo, s->samples.hi,
                s->samples.sd, s->samples.median, s->samples.min, s->samples.max, x->rate, s->ratio,
                (unsigned long long)x->budget, (unsigned long long)s->halted,
                (unsigned long long)s->wrong, (unsigned long long)s->inexact, s->failure,
                s->failure_hi);
    }
    return ferror(f) ? -1 : 0;
}

#define PNG_TERM                                                                                   \
    "set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 "            \
    "background rgb 'white'"
#define SVG_TERM                                                                                   \
    "set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 "                 \
    "background rgb 'white'"

static const char *const plasma[] = {"#0d0887", "#5c01a6", "#9c179e",
                                     "#cc4778", "#ed7953", "#f0a100"};

/* One figure: per series (index) of the data file, points with error bars and the fitted rate
 * dashed. by_gap: x is the gap and the series are the epsilons; else x is epsilon. */
static void figure(FILE *gp, const simnas_plan *plan, size_t a, int x_gap, double cst,
                   const char *stem, const char *data)
{
    const simnas_cell *c0 = &plan->cell[a * plan->n_gap * plan->n_eps];
    size_t n_series = x_gap ? plan->n_eps : plan->n_gap;
    fprintf(gp, "\n# %s\nreset\n" PNG_TERM "\nset output '%s.png'\n", stem, stem);
    fprintf(gp,
            "set logscale xy\nset grid\nset key outside right top\nset format y '10^{%%L}'\n"
            "set xlabel '%s'\nset ylabel 'samples to stop (mean, 95%% interval)'\n",
            x_gap ? "gap {/Symbol D} = E X (X in \\{-1, +1\\})" : "{/Symbol e}");
    fprintf(gp,
            "set title \"%s (Sajed and Sheffet 2019, Alg. %d): samples to stop, %llu trials,\\n"
            "{/Symbol a} = %g, {/Symbol b} = %g; dashed: %.3g (t_0 + t_1 + t_2) of Thm 3.3\"\n",
            c0->algorithm, c0->kind == AGG_NAS_EVERY_STEP ? 1 : 2, (unsigned long long)plan->trials,
            plan->alpha, plan->beta, cst);
    fprintf(gp, "plot \\\n");
    for (size_t s = 0; s < n_series; s++) {
        const simnas_cell *c = &plan->cell[x_gap ? cell_of(plan, a, 0, s) : cell_of(plan, a, s, 0)];
        const char *col = plasma[(s * (sizeof plasma / sizeof plasma[0] - 1)) /
                                 (n_series > 1 ? n_series - 1 : 1)];
        fprintf(gp,
                "  '%s' index %zu using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '%s' "
                "title '%s = %s', \\\n"
                "  '%s' index %zu using 1:5 with lines dt 2 lw 1.5 lc rgb '%s' notitle%s\n",
                data, s, col, x_gap ? "{/Symbol e}" : "{/Symbol D}",
                x_gap ? c->eps_text : c->gap_text, data, s, col, s + 1 < n_series ? ", \\" : "");
    }
    fprintf(gp, "unset output\n" SVG_TERM "\nset output '%s.svg'\nreplot\nunset output\n", stem);
}

long simnas_write_plots(const simnas_plan *plan, const simnas_stats *stats, const char *plots_dir,
                        char *errmsg, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/plots.gp", plots_dir);
    FILE *gp = fopen(path, "w");
    if (!gp) {
        snprintf(errmsg, cap, "cannot create %s", path);
        return -1;
    }
    fprintf(gp, "# ldpb sim --preset %s: the figures of docs/sim.md\n", SIMNAS_PRESET);
    long figures = 0;
    for (size_t a = 0; a < plan->n_alg; a++) {
        double lo, hi, cst = simnas_constant(plan, stats, a, &lo, &hi);
        const char *alg = plan->cell[a * plan->n_gap * plan->n_eps].algorithm;
        for (int x_gap = 1; x_gap >= 0; x_gap--) {
            char rel[128];
            snprintf(rel, sizeof rel, "data/%s-by-%s.dat", alg, x_gap ? "gap" : "eps");
            snprintf(path, sizeof path, "%s/%s", plots_dir, rel);
            FILE *d = fopen(path, "w");
            if (!d) {
                fclose(gp);
                snprintf(errmsg, cap, "cannot create %s", path);
                return -1;
            }
            fprintf(d, "# x mean ci95_low ci95_high C*rate; one block per %s\n",
                    x_gap ? "epsilon" : "gap");
            size_t n_series = x_gap ? plan->n_eps : plan->n_gap;
            size_t n_x = x_gap ? plan->n_gap : plan->n_eps;
            for (size_t s = 0; s < n_series; s++) {
                for (size_t i = 0; i < n_x; i++) {
                    size_t c = x_gap ? cell_of(plan, a, i, s) : cell_of(plan, a, s, i);
                    const simnas_cell *x = &plan->cell[c];
                    fprintf(d, "%.10g %.10g %.10g %.10g %.10g\n", x_gap ? x->gap : x->eps,
                            stats[c].samples.mean, stats[c].samples.lo, stats[c].samples.hi,
                            cst * x->rate);
                }
                fprintf(d, "\n\n");
            }
            int bad = ferror(d);
            if (fclose(d) != 0 || bad) {
                fclose(gp);
                snprintf(errmsg, cap, "cannot write %s", path);
                return -1;
            }
            char stem[128];
            snprintf(stem, sizeof stem, "%s-by-%s", alg, x_gap ? "gap" : "eps");
            figure(gp, plan, a, x_gap, cst, stem, rel);
            figures++;
        }
    }
    int bad = ferror(gp);
    if (fclose(gp) != 0 || bad) {
        snprintf(errmsg, cap, "cannot write %s/plots.gp", plots_dir);
        return -1;
    }
    return figures;
}
