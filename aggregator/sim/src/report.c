/* Statistics, lower-bound shapes and CSV files of `ldpb sim` (report.h). Numbers are printed
 * with "%.6g" and integers with "%llu"/"%u"; the library never calls setlocale, so the decimal
 * point is always '.'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "report.h"

double simstat_t975(uint64_t n)
{
    if (n < 2)
        return 0.0;
    return gsl_cdf_tdist_Pinv(0.975, (double)(n - 1));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void simstat_compute(const double *x, size_t n, size_t stride, double *scratch, simstat *out)
{
    double sum = 0.0, mn = x[0], mx = x[0];
    for (size_t i = 0; i < n; i++) {
        double v = x[i * stride];
        sum += v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    double mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = x[i * stride] - mean;
        ss += d * d;
    }
    /* Equal values have no spread; rounding in the mean must not invent one. */
    double sd = n > 1 && mx > mn ? sqrt(ss / (double)(n - 1)) : 0.0;
    double half = simstat_t975(n) * sd / sqrt((double)n);
    out->mean = mean;
    out->sd = sd;
    out->lo = mean - half;
    out->hi = mean + half;
    out->min = mn;
    out->max = mx;
    out->median = NAN;
    if (scratch) {
        for (size_t i = 0; i < n; i++)
            scratch[i] = x[i * stride];
        qsort(scratch, n, sizeof *scratch, cmp_double);
        out->median = 0.5 * (scratch[(n - 1) / 2] + scratch[n / 2]);
    }
}

double simstat_median_of_means(const double *x, size_t n, size_t stride, size_t groups,
                               double *scratch)
{
    size_t g = groups < n ? groups : n;
    if (g == 0)
        g = 1;
    size_t base = n / g, extra = n % g, at = 0;
    for (size_t i = 0; i < g; i++) {
        size_t len = base + (i < extra);
        double sum = 0.0;
        for (size_t j = 0; j < len; j++)
            sum += x[(at + j) * stride];
        scratch[i] = sum / (double)len;
        at += len;
    }
    qsort(scratch, g, sizeof *scratch, cmp_double);
    return 0.5 * (scratch[(g - 1) / 2] + scratch[g / 2]);
}

double simstat_gmd_sorted(const double *sorted, size_t n)
{
    if (n < 2)
        return 0.0;
    double sum = 0.0, nn = (double)n;
    for (size_t i = 0; i < n; i++)
        sum += (2.0 * (double)(i + 1) - nn - 1.0) * sorted[i];
    return 2.0 * sum / (nn * (nn - 1.0));
}

void simstat_gmd_split(const double *x, size_t n, size_t stride, double center, double *scratch,
                       double *below, double *above)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = x[i * stride];
    qsort(scratch, n, sizeof *scratch, cmp_double);
    size_t lo = 0, hi0 = n; /* scratch[0..lo) <= center, scratch[hi0..n) >= center */
    while (lo < n && scratch[lo] <= center)
        lo++;
    while (hi0 > 0 && scratch[hi0 - 1] >= center)
        hi0--;
    *below = simstat_gmd_sorted(scratch, lo);
    *above = simstat_gmd_sorted(scratch + hi0, n - hi0);
}

double simref_zeta(double eps)
{
    double a = exp(2.0 * eps);
    double b = expm1(eps);
    return (a < 4.0 ? a : 4.0) * b * b;
}

/* KL(Bern(p) || Bern(q)) with 0 ln 0 = 0; +inf when q puts no mass where p does. */
static double kl_bernoulli(double p, double q)
{
    double s = 0.0;
    if (p > 0.0)
        s += q > 0.0 ? p * log(p / q) : INFINITY;
    if (p < 1.0)
        s += q < 1.0 ? (1.0 - p) * log((1.0 - p) / (1.0 - q)) : INFINITY;
    return s;
}

double simref_lai_robbins(const agg_env *env, int bernoulli)
{
    if (!bernoulli)
        return simref_inv_gaps(env);
    double best = agg_env_best_mean(env), c = 0.0;
    for (uint32_t a = 0; a < agg_env_arms(env); a++) {
        double gap = best - agg_env_mean(env, a);
        if (gap > 0.0) {
            double kl = kl_bernoulli(agg_env_mean(env, a), best);
            if (isfinite(kl) && kl > 0.0)
                c += gap / kl;
        }
    }
    return c;
}

double simref_inv_gaps(const agg_env *env)
{
    double best = agg_env_best_mean(env), c = 0.0;
    for (uint32_t a = 0; a < agg_env_arms(env); a++) {
        double gap = best - agg_env_mean(env, a);
        if (gap > 0.0)
            c += 1.0 / gap;
    }
    return c;
}

double simref_ldp(const agg_env *env, double eps)
{
    return simref_inv_gaps(env) / simref_zeta(eps);
}

double simref_central(uint32_t k, double eps)
{
    return (double)(k - 1) / (200.0 * eps);
}

double simref_max_gap(const agg_env *env)
{
    double best = agg_env_best_mean(env), g = 0.0;
    for (uint32_t a = 0; a < agg_env_arms(env); a++) {
        double d = best - agg_env_mean(env, a);
        g = d > g ? d : g;
    }
    return g;
}

void simreport_fini(simreport *r)
{
    if (!r)
        return;
    free(r->mean);
    free(r->lo);
    free(r->hi);
    free(r->final);
    free(r->mom);
    free(r->gmd_below);
    free(r->gmd_above);
    memset(r, 0, sizeof *r);
}

ldpb_err simreport_compute(simreport *r, const simplan *plan, double *const *regret)
{
    size_t nc = plan->n_checkpoints, n = plan->n_cfg;
    size_t trials = (size_t)plan->trials;
    memset(r, 0, sizeof *r);
    r->plan = plan;
    r->mean = calloc(n * nc, sizeof *r->mean);
    r->lo = calloc(n * nc, sizeof *r->lo);
    r->hi = calloc(n * nc, sizeof *r->hi);
    r->final = calloc(n, sizeof *r->final);
    r->mom = calloc(n * nc, sizeof *r->mom);
    r->gmd_below = calloc(n * nc, sizeof *r->gmd_below);
    r->gmd_above = calloc(n * nc, sizeof *r->gmd_above);
    r->mom_groups = trials < SIMREPORT_MOM_GROUPS ? trials : SIMREPORT_MOM_GROUPS;
    double *scratch = calloc(trials, sizeof *scratch);
    if (!r->mean || !r->lo || !r->hi || !r->final || !r->mom || !r->gmd_below || !r->gmd_above ||
        !scratch) {
        free(scratch);
        simreport_fini(r);
        return LDPB_ENOMEM;
    }
    for (size_t c = 0; c < n; c++) {
        for (size_t j = 0; j < nc; j++) {
            simstat s;
            simstat_compute(regret[c] + j, trials, nc, j + 1 == nc ? scratch : NULL, &s);
            r->mean[c * nc + j] = s.mean;
            r->lo[c * nc + j] = s.lo;
            r->hi[c * nc + j] = s.hi;
            if (j + 1 == nc)
                r->final[c] = s;
            size_t x = c * nc + j;
            r->mom[x] =
                simstat_median_of_means(regret[c] + j, trials, nc, SIMREPORT_MOM_GROUPS, scratch);
            simstat_gmd_split(regret[c] + j, trials, nc, r->mom[x], scratch, &r->gmd_below[x],
                              &r->gmd_above[x]);
        }
    }
    free(scratch);
    return LDPB_OK;
}

static int finish(FILE *f)
{
    return ferror(f) ? -1 : 0;
}

int simreport_write_regret(const simreport *r, FILE *f)
{
    const simplan *p = r->plan;
    size_t nc = p->n_checkpoints;
    fputs(SIMREPORT_REGRET_HEADER "\n", f);
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        const simplan_instance *in = &p->inst[cfg->instance];
        for (size_t j = 0; j < nc; j++)
            fprintf(f, "%s,%s,%s,%s,%u,%llu,%.6g,%.6g,%.6g,%llu\n", in->label, cfg->ops->name,
                    simplan_mech_name(cfg), cfg->eps_text, in->k,
                    (unsigned long long)p->checkpoints[j], r->mean[c * nc + j], r->lo[c * nc + j],
                    r->hi[c * nc + j], (unsigned long long)p->trials);
        if (ferror(f))
            return -1;
    }
    return finish(f);
}

int simreport_write_summary(const simreport *r, FILE *f)
{
    const simplan *p = r->plan;
    fputs(SIMREPORT_SUMMARY_HEADER "\n", f);
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        const simplan_instance *in = &p->inst[cfg->instance];
        const simstat *s = &r->final[c];
        fprintf(f, "%s,%s,%s,%s,%u,%llu,%llu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", in->label,
                cfg->ops->name, simplan_mech_name(cfg), cfg->eps_text, in->k,
                (unsigned long long)p->horizon, (unsigned long long)p->trials, s->mean, s->lo,
                s->hi, s->sd, s->median, s->min, s->max);
    }
    return finish(f);
}

int simreport_write_robust(const simreport *r, FILE *f)
{
    const simplan *p = r->plan;
    size_t nc = p->n_checkpoints;
    fputs(SIMREPORT_ROBUST_HEADER "\n", f);
    for (size_t c = 0; c < p->n_cfg; c++) {
        const simplan_config *cfg = &p->cfg[c];
        const simplan_instance *in = &p->inst[cfg->instance];
        for (size_t j = 0; j < nc; j++) {
            size_t x = c * nc + j;
            fprintf(f, "%s,%s,%s,%s,%u,%llu,%.6g,%.6g,%.6g,%llu,%.6g,%.6g,%.6g,%zu\n", in->label,
                    cfg->ops->name, simplan_mech_name(cfg), cfg->eps_text, in->k,
                    (unsigned long long)p->checkpoints[j], r->mean[x], r->lo[x], r->hi[x],
                    (unsigned long long)p->trials, r->mom[x], r->gmd_below[x], r->gmd_above[x],
                    r->mom_groups);
        }
        if (ferror(f))
            return -1;
    }
    return finish(f);
}
