/* The gnuplot figures of `ldpb sim` (plot.h). Three kinds of figure, each one log-log panel of
 * cumulative pseudo-regret against t with a shaded 95% band per curve:
 *   by epsilon    one per (instance, epsilon): every private configuration at that epsilon and
 *                 the non-private baselines (JZL23 Fig. 2 style; SS19 per-(K, eps) panels);
 *   by algorithm  one per (instance, private algorithm x mechanism) run at two or more epsilons:
 *                 its curves across epsilon and the non-private baselines;
 *   K sweep       one per (preset, algorithm x mechanism, epsilon) when the preset sweeps K (SS19
 *                 Figs 5-12): the curves across K.
 * Reference shapes (derivations.md 13) are dashed: Lai-Robbins, the DJW-based LDP shape for LOCAL
 * runs, the Shariff-Sheffet central shape for CENTRAL runs. Colours are stable across figures:
 * one per algorithm x mechanism, one per epsilon, one per K. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"

#define PNG_TERM                                                                                   \
    "set terminal pngcairo size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 "            \
    "background rgb 'white'"
#define SVG_TERM                                                                                   \
    "set terminal svg size 1200,820 enhanced font 'DejaVu Sans,13' linewidth 1.2 "                 \
    "background rgb 'white'"

static const char *const tab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
/* Sequential (plasma, without its pale yellow end): small epsilon or K dark, large bright. */
static const char *const plasma[] = {"#0d0887", "#5c01a6", "#9c179e",
                                     "#cc4778", "#ed7953", "#f0a100"};
static const char *const greys[] = {"#000000", "#555555", "#999999"};
static const int point_types[] = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10, 12, 14};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct curve {
    size_t cfg;
    const char *color;
    char label[96];
};

struct ref {
    double coef;
    const char *color;
    int dt;
    char label[160];
};

struct figure {
    char stem[160];
    char title[640];
    struct curve *curves;
    size_t n_curves;
    struct ref *refs;
    size_t n_refs;
    double cap; /* T * largest gap over the figure's instances: no regret exceeds it */
};

struct ctx {
    const simreport *r;
    const simplan *p;
    FILE *gp;
    long figures;
    /* distinct values in plan order, for stable colours */
    size_t *pair_of_cfg; /* private cfg -> index of its (algorithm, mechanism) */
    size_t *eps_of_cfg;  /* cfg -> index of its epsilon among the private ones */
    size_t n_eps;
};

static const char *seq_color(size_t i, size_t n)
{
    if (n > N_OF(plasma))
        return tab10[i % N_OF(tab10)];
    if (n <= 1)
        return plasma[0];
    return plasma[(i * (N_OF(plasma) - 1) + (n - 1) / 2) / (n - 1)];
}

/* The colour of a private algorithm x mechanism: tab10 without its grey, which (with black)
 * marks the non-private baselines. */
static const char *pair_color(size_t i)
{
    static const size_t order[] = {0, 1, 2, 3, 4, 5, 6, 8, 9};
    return tab10[order[i % N_OF(order)]];
}

/* A gnuplot double-quoted string: backslash and quote escaped, newline as \\n. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int is_private(const simplan_config *c)
{
    return c->ops->model != AGG_MODEL_NONPRIVATE;
}

static void pair_label(char *dst, size_t cap, const simplan_config *c)
{
    if (c->ops->model == AGG_MODEL_LOCAL)
        snprintf(dst, cap, "%s, %s", c->ops->name, ldpb_mech_kind_name(c->mechanism));
    else if (c->ops->model == AGG_MODEL_CENTRAL)
        snprintf(dst, cap, "%s (central)", c->ops->name);
    else
        snprintf(dst, cap, "%s (non-private)", c->ops->name);
}

static void pair_stem(char *dst, size_t cap, const simplan_config *c)
{
    if (c->ops->model == AGG_MODEL_LOCAL)
        snprintf(dst, cap, "%s-%s", c->ops->name, ldpb_mech_kind_name(c->mechanism));
    else
        snprintf(dst, cap, "%s", c->ops->name);
}

static int same_pair(const simplan_config *a, const simplan_config *b)
{
    return a->ops == b->ops && a->mechanism == b->mechanism;
}

/* The instance's part of a file name: its label, with "-k<K>" when the label has several K. */
static void inst_stem(const struct ctx *x, size_t inst, char *dst, size_t cap)
{
    const simplan_instance *in = &x->p->inst[inst];
    size_t same = 0;
    for (size_t i = 0; i < x->p->n_inst; i++)
        same += strcmp(x->p->inst[i].label, in->label) == 0;
    if (same > 1)
        snprintf(dst, cap, "%s-k%u", in->label, in->k);
    else
        snprintf(dst, cap, "%s", in->label);
}

static int add_curve(struct figure *f, size_t cfg, const char *color, const char *label)
{
    struct curve *c = realloc(f->curves, (f->n_curves + 1) * sizeof *c);
    if (!c)
        return -1;
    f->curves = c;
    c += f->n_curves++;
    c->cfg = cfg;
    c->color = color;
    snprintf(c->label, sizeof c->label, "%s", label);
    return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int
add_ref(struct figure *f, double coef, const char *color, int dt, const char *fmt, ...)
{
    struct ref *r = realloc(f->refs, (f->n_refs + 1) * sizeof *r);
    if (!r)
        return -1;
    f->refs = r;
    r += f->n_refs++;
    r->coef = coef;
    r->color = color;
    r->dt = dt;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->label, sizeof r->label, fmt, ap);
    va_end(ap);
    return 0;
}

static void figure_reset(struct figure *f)
{
    free(f->curves);
    free(f->refs);
    memset(f, 0, sizeof *f);
}

/* The largest regret a run can show: T times the largest gap, or T against an adversary (gains
 * in [0, 1]). */
static double regret_cap(const simplan *p, const simplan_instance *in)
{
    return (double)p->horizon * (in->env ? simref_max_gap(in->env) : 1.0);
}

static const char *lr_label(const simplan_instance *in)
{
    return in->bernoulli ? "Lai–Robbins shape  Σ_a Δ_a ln t / KL(μ_a, μ^*)"
                         : "Lai–Robbins shape  Σ_a ln t / Δ_a";
}

/* Writes one figure: bands first, then lines and markers, then the reference shapes, once for
 * PNG and once for SVG. */
static void emit(struct ctx *x, const struct figure *f)
{
    const simplan *p = x->p;
    const simreport *r = x->r;
    FILE *gp = x->gp;
    size_t nc = p->n_checkpoints;
    double T = (double)p->horizon;

    /* y range: from the decade below the smallest positive mean at t >= 10 to above the largest
     * upper bound, or the reference shapes at T as far as any regret can go. */
    double lo = INFINITY, hi = 0.0;
    for (size_t i = 0; i < f->n_curves; i++) {
        size_t c = f->curves[i].cfg;
        for (size_t j = 0; j < nc; j++) {
            double m = r->mean[c * nc + j];
            if (m > 0.0 && (p->checkpoints[j] >= 10 || T < 10) && m < lo)
                lo = m;
            if (r->hi[c * nc + j] > hi)
                hi = r->hi[c * nc + j];
        }
    }
    for (size_t i = 0; i < f->n_refs; i++) {
        double v = f->refs[i].coef * log(T);
        v = v < f->cap ? v : f->cap;
        hi = v > hi ? v : hi;
    }
    double ymin = isfinite(lo) ? pow(10.0, floor(log10(lo))) : 0.1;
    double ymax = hi > ymin ? hi * 1.6 : ymin * 10.0;

    x->figures++;
    fprintf(gp, "\n# figure %ld: %s\nreset\n", x->figures, f->stem);
    fprintf(gp, "set encoding utf8\n" PNG_TERM "\nset output '%s.png'\nset logscale xy\n", f->stem);
    fprintf(gp, "set xrange [1:%.17g]\nset yrange [%.6g:%.6g]\nYMIN = %.6g\n", T, ymin, ymax, ymin);
    fprintf(gp, "set format x '10^{%%L}'\nset format y '10^{%%L}'\n");
    /* Against an adversary: regret against the best fixed arm in hindsight, realized gains. */
    int adversarial = f->n_curves > 0 && p->inst[p->cfg[f->curves[0].cfg].instance].adv;
    fprintf(gp, "set xlabel 'round t'\nset ylabel '%s'\n",
            adversarial ? "regret against the best fixed arm" : "cumulative pseudo-regret");
    fprintf(gp, "set title ");
    put_string(gp, f->title);
    fprintf(gp, " noenhanced\n");
    fprintf(gp, "set grid xtics ytics mxtics mytics lc rgb '#e4e4e4' lw 1, lc rgb '#f2f2f2' lw "
                "1\nset mxtics 10\nset mytics 10\n");
    fprintf(gp,
            "set key top left Left reverse box opaque font ',11' spacing 1.15 samplen 3 width 1\n");
    fprintf(gp, "set style fill transparent solid 0.16 noborder\nset samples 300\n");
    fprintf(gp, "set pointintervalbox 0.01\nset bmargin 5\n");
    fprintf(gp,
            "set label 1 'bands: 95%% CI of the mean%s' at screen 0.985, screen 0.018 right font "
            "',9' tc rgb '#555555' noenhanced\n",
            adversarial ? " (median of means and GMD: robust.csv)"
                        : ";  broken lines: lower-bound shapes (docs/derivations.md 13), "
                          "reference only");
    fprintf(gp, "plot \\\n");
    int first = 1;
    for (size_t i = 0; i < f->n_curves; i++) {
        fprintf(gp,
                "%s  'data/c%zu.dat' using 1:($3 > YMIN ? $3 : YMIN):($4 > YMIN ? $4 : YMIN) "
                "with filledcurves lc rgb '%s' notitle",
                first ? "" : ", \\\n", f->curves[i].cfg, f->curves[i].color);
        first = 0;
    }
    for (size_t i = 0; i < f->n_curves; i++) {
        fprintf(gp,
                ", \\\n  'data/c%zu.dat' using 1:($2 > 0 ? $2 : 1/0) with linespoints lw 2.2 "
                "lc rgb '%s' pt %d ps 1.1 pi 10 title ",
                f->curves[i].cfg, f->curves[i].color, point_types[i % N_OF(point_types)]);
        put_string(gp, f->curves[i].label);
        fprintf(gp, " noenhanced");
    }
    for (size_t i = 0; i < f->n_refs; i++) {
        /* A shape that stays below the axis would only add a legend entry with no curve. */
        if (!(f->refs[i].coef * log(T) > ymin))
            continue;
        fprintf(gp,
                ", \\\n  (x > 1.5 ? %.10g * log(x) : 1/0) with lines dt %d lw 1.8 lc rgb '%s' "
                "title ",
                f->refs[i].coef, f->refs[i].dt, f->refs[i].color);
        put_string(gp, f->refs[i].label);
    }
    fprintf(gp, "\n" SVG_TERM "\nset output '%s.svg'\nreplot\nunset output\n", f->stem);
}

static void title_line(const struct ctx *x, const simplan_instance *in, const char *what, char *dst,
                       size_t cap)
{
    char T[32];
    simplan_format_count(T, sizeof T, x->p->horizon);
    snprintf(dst, cap, "%s: %s\n%s;  T = %s,  %llu trial%s", in->label, in->title, what, T,
             (unsigned long long)x->p->trials, x->p->trials == 1 ? "" : "s");
}

/* The reference shapes for a set of configurations at one epsilon on one instance. */
static int refs_for_eps(struct figure *f, const simplan_instance *in, int local, int central,
                        double eps, const char *eps_text)
{
    if (!in->env)
        return 0; /* the stochastic lower-bound shapes say nothing about an adversary */
    if (add_ref(f, simref_lai_robbins(in->env, in->bernoulli), "#333333", 2, "%s", lr_label(in)))
        return -1;
    if (local && add_ref(f, simref_ldp(in->env, eps), "#8b0000", 4,
                         "LDP shape  Σ_a ln t / (ζ(ε) Δ_a),  ε = %s", eps_text))
        return -1;
    if (central && (add_ref(f, simref_central(in->k, eps), "#00008b", 3,
                            "central-DP shape  (K-1) ln t / (200 ε),  ε = %s", eps_text) ||
                    add_ref(f, simref_central(in->k, eps) + simref_inv_gaps(in->env), "#006400", 5,
                            "(K-1) ln t / (200 ε) + Σ_a ln t / Δ_a")))
        return -1;
    return 0;
}

/* Figures by epsilon for instance i. */
static int by_eps(struct ctx *x, size_t inst)
{
    const simplan *p = x->p;
    const simplan_instance *in = &p->inst[inst];
    struct figure f = {0};
    char stem[96], what[128], label[96];
    inst_stem(x, inst, stem, sizeof stem);
    for (size_t e = 0; e < x->n_eps || (e == 0 && x->n_eps == 0); e++) {
        int local = 0, central = 0, any_private = 0;
        double eps = 0.0;
        const char *eps_text = "";
        for (size_t c = 0; c < p->n_cfg; c++) {
            const simplan_config *cfg = &p->cfg[c];
            if (cfg->instance != inst || !is_private(cfg) || x->eps_of_cfg[c] != e)
                continue;
            any_private = 1;
            local |= cfg->ops->model == AGG_MODEL_LOCAL;
            central |= cfg->ops->model == AGG_MODEL_CENTRAL;
            eps = cfg->epsilon;
            eps_text = cfg->eps_text;
        }
        if (!any_private && x->n_eps > 0)
            continue;
        figure_reset(&f);
        f.cap = regret_cap(p, in);
        size_t grey = 0;
        for (size_t c = 0; c < p->n_cfg; c++) {
            const simplan_config *cfg = &p->cfg[c];
            if (cfg->instance != inst || (is_private(cfg) && x->eps_of_cfg[c] != e))
                continue;
            pair_label(label, sizeof label, cfg);
            const char *color =
                is_private(cfg) ? pair_color(x->pair_of_cfg[c]) : greys[grey++ % N_OF(greys)];
            if (add_curve(&f, c, color, label))
                goto oom;
        }
        if (any_private) {
            snprintf(f.stem, sizeof f.stem, "%s-eps%s", stem, eps_text);
            snprintf(what, sizeof what, "every algorithm at ε = %s", eps_text);
        } else {
            snprintf(f.stem, sizeof f.stem, "%s", stem);
            snprintf(what, sizeof what, "non-private algorithms");
        }
        title_line(x, in, what, f.title, sizeof f.title);
        if (refs_for_eps(&f, in, local, central, eps, eps_text))
            goto oom;
        emit(x, &f);
    }
    figure_reset(&f);
    return 0;
oom:
    figure_reset(&f);
    return -1;
}

/* Figures by algorithm x mechanism across epsilon for instance i. */
static int by_alg(struct ctx *x, size_t inst)
{
    const simplan *p = x->p;
    const simplan_instance *in = &p->inst[inst];
    struct figure f = {0};
    char stem[96], pstem[64], what[160], label[96];
    inst_stem(x, inst, stem, sizeof stem);
    for (size_t c0 = 0; c0 < p->n_cfg; c0++) {
        const simplan_config *lead = &p->cfg[c0];
        if (lead->instance != inst || !is_private(lead))
            continue;
        int seen = 0;
        size_t n_eps = 0;
        for (size_t c = 0; c < p->n_cfg; c++) {
            if (p->cfg[c].instance != inst || !same_pair(&p->cfg[c], lead))
                continue;
            seen |= c < c0;
            n_eps++;
        }
        if (seen || n_eps < 2)
            continue;
        figure_reset(&f);
        f.cap = regret_cap(p, in);
        for (size_t c = 0; c < p->n_cfg; c++) {
            const simplan_config *cfg = &p->cfg[c];
            if (cfg->instance != inst || !same_pair(cfg, lead))
                continue;
            const char *color = seq_color(x->eps_of_cfg[c], x->n_eps);
            snprintf(label, sizeof label, "ε = %s", cfg->eps_text);
            if (add_curve(&f, c, color, label))
                goto oom;
        }
        size_t grey = 0;
        for (size_t c = 0; c < p->n_cfg; c++) {
            const simplan_config *cfg = &p->cfg[c];
            if (cfg->instance != inst || is_private(cfg))
                continue;
            pair_label(label, sizeof label, cfg);
            if (add_curve(&f, c, greys[grey++ % N_OF(greys)], label))
                goto oom;
        }
        if (in->env && add_ref(&f, simref_lai_robbins(in->env, in->bernoulli), "#333333", 2, "%s",
                               lr_label(in)))
            goto oom;
        for (size_t c = 0; c < p->n_cfg && in->env; c++) {
            const simplan_config *cfg = &p->cfg[c];
            if (cfg->instance != inst || !same_pair(cfg, lead))
                continue;
            const char *color = seq_color(x->eps_of_cfg[c], x->n_eps);
            int rc = cfg->ops->model == AGG_MODEL_LOCAL
                         ? add_ref(&f, simref_ldp(in->env, cfg->epsilon), color, 4,
                                   "LDP shape, ε = %s", cfg->eps_text)
                         : add_ref(&f, simref_central(in->k, cfg->epsilon), color, 3,
                                   "central-DP shape (K-1) ln t / (200 ε), ε "
                                   "= %s",
                                   cfg->eps_text);
            if (rc)
                goto oom;
        }
        pair_stem(pstem, sizeof pstem, lead);
        pair_label(label, sizeof label, lead);
        snprintf(f.stem, sizeof f.stem, "%s-%s", stem, pstem);
        snprintf(what, sizeof what, "%s across ε", label);
        title_line(x, in, what, f.title, sizeof f.title);
        emit(x, &f);
    }
    figure_reset(&f);
    return 0;
oom:
    figure_reset(&f);
    return -1;
}

/* K-sweep figures for the label of instance `inst` (its first instance only calls this). */
static int by_k(struct ctx *x, size_t inst)
{
    const simplan *p = x->p;
    const simplan_instance *in = &p->inst[inst];
    size_t n_k = 0;
    for (size_t i = 0; i < p->n_inst; i++)
        n_k += strcmp(p->inst[i].label, in->label) == 0;
    if (n_k < 2)
        return 0;
    struct figure f = {0};
    char pstem[64], label[96], T[32];
    simplan_format_count(T, sizeof T, p->horizon);
    for (size_t c0 = 0; c0 < p->n_cfg; c0++) {
        const simplan_config *lead = &p->cfg[c0];
        if (lead->instance != inst || !is_private(lead))
            continue;
        figure_reset(&f);
        size_t k_index = 0;
        for (size_t i = 0; i < p->n_inst; i++) {
            const simplan_instance *ii = &p->inst[i];
            if (strcmp(ii->label, in->label) != 0)
                continue;
            for (size_t c = 0; c < p->n_cfg; c++) {
                const simplan_config *cfg = &p->cfg[c];
                if (cfg->instance != i || !same_pair(cfg, lead) || cfg->epsilon != lead->epsilon)
                    continue;
                const char *color = seq_color(k_index, n_k);
                snprintf(label, sizeof label, "K = %u", ii->k);
                if (add_curve(&f, c, color, label))
                    goto oom;
                double cap = regret_cap(p, ii);
                f.cap = cap > f.cap ? cap : f.cap;
                int rc =
                    cfg->ops->model == AGG_MODEL_LOCAL
                        ? add_ref(&f, simref_ldp(ii->env, cfg->epsilon), color, 4,
                                  "LDP shape, K = %u", ii->k)
                        : add_ref(&f,
                                  simref_central(ii->k, cfg->epsilon) + simref_inv_gaps(ii->env),
                                  color, 2,
                                  "(K-1) ln t / (200 ε) + Σ_a ln t / "
                                  "Δ_a, K = %u",
                                  ii->k);
                if (rc)
                    goto oom;
            }
            k_index++;
        }
        pair_stem(pstem, sizeof pstem, lead);
        pair_label(label, sizeof label, lead);
        snprintf(f.stem, sizeof f.stem, "%s-%s-eps%s-ksweep", in->label, pstem, lead->eps_text);
        snprintf(f.title, sizeof f.title, "%s: %s across K\n%s at ε = %s;  T = %s,  %llu trial%s",
                 in->label, strchr(in->title, ',') ? strchr(in->title, ',') + 2 : in->title, label,
                 lead->eps_text, T, (unsigned long long)p->trials, p->trials == 1 ? "" : "s");
        emit(x, &f);
    }
    figure_reset(&f);
    return 0;
oom:
    figure_reset(&f);
    return -1;
}

static int write_data(const simreport *r, const char *dir, size_t c)
{
    const simplan *p = r->plan;
    size_t nc = p->n_checkpoints;
    char path[4096];
    snprintf(path, sizeof path, "%s/data/c%zu.dat", dir, c);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const simplan_config *cfg = &p->cfg[c];
    fprintf(f, "# %s %s %s epsilon %s k %u\n# t mean_regret ci95_low ci95_high\n",
            p->inst[cfg->instance].label, cfg->ops->name, simplan_mech_name(cfg), cfg->eps_text,
            p->inst[cfg->instance].k);
    for (size_t j = 0; j < nc; j++)
        fprintf(f, "%llu %.6g %.6g %.6g\n", (unsigned long long)p->checkpoints[j],
                r->mean[c * nc + j], r->lo[c * nc + j], r->hi[c * nc + j]);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -1;
    return 0;
}

long simplot_write(const simreport *r, const char *plots_dir, char *errmsg, size_t cap)
{
    const simplan *p = r->plan;
    struct ctx x = {.r = r, .p = p};
    char path[4096];
    long rc = -1;
    double *eps_vals = NULL;

    x.pair_of_cfg = calloc(p->n_cfg, sizeof *x.pair_of_cfg);
    x.eps_of_cfg = calloc(p->n_cfg, sizeof *x.eps_of_cfg);
    eps_vals = calloc(p->n_cfg, sizeof *eps_vals);
    if (!x.pair_of_cfg || !x.eps_of_cfg || !eps_vals) {
        snprintf(errmsg, cap, "out of memory");
        goto done;
    }
    size_t n_pairs = 0;
    for (size_t c = 0; c < p->n_cfg; c++) {
        if (!is_private(&p->cfg[c]))
            continue;
        size_t k = 0;
        for (; k < c; k++)
            if (same_pair(&p->cfg[k], &p->cfg[c]))
                break;
        x.pair_of_cfg[c] = k < c ? x.pair_of_cfg[k] : n_pairs++;
        size_t e = 0;
        for (; e < x.n_eps; e++)
            if (eps_vals[e] == p->cfg[c].epsilon)
                break;
        if (e == x.n_eps)
            eps_vals[x.n_eps++] = p->cfg[c].epsilon;
        x.eps_of_cfg[c] = e;
    }

    for (size_t c = 0; c < p->n_cfg; c++)
        if (write_data(r, plots_dir, c)) {
            snprintf(errmsg, cap, "cannot write %s/data/c%zu.dat: %s", plots_dir, c,
                     strerror(errno));
            goto done;
        }
    snprintf(path, sizeof path, "%s/%s", plots_dir, SIMPLOT_SCRIPT);
    x.gp = fopen(path, "w");
    if (!x.gp) {
        snprintf(errmsg, cap, "cannot create %s: %s", path, strerror(errno));
        goto done;
    }
    fprintf(x.gp,
            "# Figures of `ldpb sim` (docs/sim.md). Run from this directory:\n"
            "#   gnuplot %s\n# Data: data/c<N>.dat, configuration N of summary.csv "
            "(0-based row), columns t mean ci95_low ci95_high.\n",
            SIMPLOT_SCRIPT);
    for (size_t i = 0; i < p->n_inst; i++) {
        int first_of_label = 1;
        for (size_t j = 0; j < i; j++)
            first_of_label &= strcmp(p->inst[j].label, p->inst[i].label) != 0;
        if (by_eps(&x, i) || by_alg(&x, i) || (first_of_label && by_k(&x, i))) {
            snprintf(errmsg, cap, "out of memory");
            fclose(x.gp);
            goto done;
        }
    }
    int bad = ferror(x.gp);
    if (fclose(x.gp) != 0 || bad) {
        snprintf(errmsg, cap, "cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    rc = x.figures;
done:
    free(x.pair_of_cfg);
    free(x.eps_of_cfg);
    free(eps_vals);
    return rc;
}
