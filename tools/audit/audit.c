/* The audit engine: a plan (inputs, output regions, the claimed mechanism's probabilities), the
 * sampling loop, Clopper-Pearson intervals and the three checks, the default sample-size rule
 * and its exact power, and the command line of `ldpb audit`. The statistics are explained in
 * docs/audit.md; the comments here say how they are computed.
 *
 * GSL supplies ln B(a, b) and the normal quantile; the caller must have called
 * gsl_set_error_handler_off(), and every GSL status is checked. The regularized incomplete
 * beta function is evaluated here (continued fraction, no iteration cap short of convergence)
 * because GSL's gsl_cdf_beta_Pinv and gsl_sf_beta_inc give up (GSL_EMAXITER) once the counts
 * reach about 10^5 - the sizes this audit works at. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sf_gamma.h>

#include "audit.h"
#include "ldpb/mech_table.h"

#define EXIT_USAGE 2

/* Plan sizes: 11 Bernoulli inputs; Laplace 5 inputs, 9 edges (10 bins), 14 regions. */
#define INPUTS_MAX  11
#define EDGES_MAX   9
#define REGIONS_MAX 14
#define BINS_MAX    (EDGES_MAX + 1)

/* The power rule's sample size is multiplied by this margin, which covers the difference
 * between its normal approximation and the exact binomial tails (tests/tools/test_audit.c
 * checks the exact miss probability over a grid of epsilon). */
#define RULE_MARGIN 1.1

/* Time caps on the default: about 4 s of Bernoulli draws (11 inputs at 25-45 ns) and about
 * 1.5 s of Laplace draws (5 inputs at 110-150 ns) on a current x86-64 core. The Bernoulli cap
 * sits above the rule's 6.9e6 at epsilon 0.1, so it binds only below about 0.09. */
#define DEFAULT_CAP_BERNOULLI 8000000ULL
#define DEFAULT_CAP_LAPLACE   2000000ULL

/* The continued fraction converges in O(sqrt(a + b)) terms at worst; 10^7 is far beyond what
 * counts up to AUDIT_SAMPLES_MAX need and only stops a runaway loop. */
#define CF_ITER_MAX    10000000L
#define SOLVE_ITER_MAX 2000

struct plan {
    audit_opts o;
    ldpb_mech *claimed;
    double grid;
    size_t n_inputs;
    double inputs[INPUTS_MAX];
    size_t n_edges;
    double edges[EDGES_MAX];
    size_t n_regions;
    audit_region regions[REGIONS_MAX];
    size_t first_bin[REGIONS_MAX], last_bin[REGIONS_MAX];
};

/* The report handed out, with the plan its pointers refer to. */
struct report_box {
    audit_report pub; /* first: audit_report_free casts back */
    struct plan plan;
    audit_cell cells[INPUTS_MAX * REGIONS_MAX];
};

/* The audit runs every local mechanism of the mechanism table; a bit-output one is audited on
 * its two outputs, a real-output one on regions of the grid. */
static const ldpb_mech_desc *local_desc(ldpb_mech_kind kind)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)kind);
    return ldpb_mech_desc_scalar(d) ? d : NULL;
}

static int is_bernoulli_kind(ldpb_mech_kind kind)
{
    const ldpb_mech_desc *d = local_desc(kind);
    return d && d->output == LDPB_MECH_OUTPUT_BIT;
}

void audit_opts_init(audit_opts *o, ldpb_mech_kind kind, double epsilon)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->epsilon = epsilon;
    o->kappa = LDPB_KAPPA_DEFAULT;
    o->samples = 0;
    o->alpha = AUDIT_ALPHA_DEFAULT;
}

static ldpb_err validate(const audit_opts *o)
{
    if (!o)
        return LDPB_EINVAL;
    if (!local_desc(o->kind))
        return LDPB_EINVAL;
    if (isnan(o->epsilon) || isnan(o->alpha) || !isfinite(o->kappa))
        return LDPB_EINVAL;
    if (!(o->epsilon >= AUDIT_EPSILON_MIN && o->epsilon <= LDPB_EPSILON_MAX))
        return LDPB_ERANGE;
    if (ldpb_mech_check_kappa((int)o->kind, 1, o->kappa, "audit", NULL) == LDPB_ERANGE)
        return LDPB_ERANGE;
    if (o->samples != 0 && (o->samples < AUDIT_SAMPLES_MIN || o->samples > AUDIT_SAMPLES_MAX))
        return LDPB_ERANGE;
    if (!(o->alpha >= AUDIT_ALPHA_MIN && o->alpha <= AUDIT_ALPHA_MAX))
        return LDPB_ERANGE;
    return LDPB_OK;
}

static ldpb_err build_mech(const audit_opts *o, double epsilon, ldpb_mech **out)
{
    ldpb_mech_opts mo;
    ldpb_err err = ldpb_mech_desc_opts((int)o->kind, epsilon, o->kappa, &mo);
    return err ? err : ldpb_mech_new(out, &mo);
}

/* ------------------------------------------------------------------------------------------ */
/* The plan: inputs, bin edges and regions.                                                    */

static void add_region(struct plan *p, size_t first, size_t last)
{
    size_t r = p->n_regions++;
    p->first_bin[r] = first;
    p->last_bin[r] = last;
    p->regions[r].lo = first == 0 ? -INFINITY : p->edges[first - 1];
    p->regions[r].hi = last == p->n_edges ? INFINITY : p->edges[last];
}

/* Laplace edges sit at (m + 0.5) * grid. A left edge at or below v keeps {y <= m g} with
 * m = floor(v / g); a right edge keeps {y >= m g} with m = ceil(v / g). Every left region
 * {y <= m g} with m <= 0 and right region {y >= m g} with m >= 1/g has probability ratio
 * exactly e^(lambda S) between inputs 0 and 1 under the discrete Laplace law. */
static ldpb_err plan_laplace(struct plan *p)
{
    double g = p->grid, S = 1.0 / g, b = 1.0 / p->o.epsilon;
    double e[EDGES_MAX] = {
        (floor(-2.0 * b * S) + 0.5) * g,      /* y <= -2b */
        (floor(-b * S) + 0.5) * g,            /* y <= -b */
        0.5 * g,                              /* y <= 0 */
        (floor(0.25 * S) + 0.5) * g,          /* y <= 0.25: quarters of (0, 1) */
        (floor(0.50 * S) + 0.5) * g,          /* y <= 0.5 */
        (floor(0.75 * S) + 0.5) * g,          /* y <= 0.75 */
        (S - 0.5) * g,                        /* y >= 1 */
        (ceil((1.0 + b) * S) - 0.5) * g,      /* y >= 1 + b */
        (ceil((1.0 + 2.0 * b) * S) - 0.5) * g /* y >= 1 + 2b */
    };
    for (size_t i = 0; i < EDGES_MAX; i++) {
        if (!isfinite(e[i]) || (i > 0 && !(e[i] > e[i - 1])))
            return LDPB_ERANGE;
        p->edges[i] = e[i];
    }
    p->n_edges = EDGES_MAX;
    for (size_t i = 0; i < 5; i++)
        p->inputs[i] = 0.25 * (double)i;
    p->n_inputs = 5;
    /* Bins 0..9 are (-inf,-2b) [-2b,-b) [-b,0] (0,.25] ... (.75,1) [1,1+b) [1+b,1+2b) [1+2b,inf)
     * (edges rounded to the grid as above). Regions, in order of their lower edge: the three
     * left tails, every bounded bin, the three right tails. */
    add_region(p, 0, 0);
    add_region(p, 0, 1);
    add_region(p, 0, 2);
    for (size_t bin = 1; bin <= 8; bin++)
        add_region(p, bin, bin);
    add_region(p, 7, 9);
    add_region(p, 8, 9);
    add_region(p, 9, 9);
    return LDPB_OK;
}

static ldpb_err plan_init(struct plan *p, const audit_opts *o)
{
    memset(p, 0, sizeof *p);
    p->o = *o;
    ldpb_err err = build_mech(o, o->epsilon, &p->claimed);
    if (err)
        return err;
    if (is_bernoulli_kind(o->kind)) {
        p->grid = NAN;
        p->n_inputs = INPUTS_MAX;
        for (size_t i = 0; i < INPUTS_MAX; i++)
            p->inputs[i] = (double)i / 10.0;
        p->n_edges = 1;
        p->edges[0] = 0.5;
        add_region(p, 1, 1); /* y = 1 */
        return LDPB_OK;
    }
    p->grid = ldpb_mech_laplace_grid(p->claimed);
    err = plan_laplace(p);
    if (err) {
        ldpb_mech_free(p->claimed);
        p->claimed = NULL;
    }
    return err;
}

static void plan_fini(struct plan *p)
{
    ldpb_mech_free(p->claimed);
    p->claimed = NULL;
}

/* P(lo <= x + L < hi) for L ~ Laplace(0, b), each term computed where it is small. */
static double laplace_region(double x, double b, double lo, double hi)
{
    double u = lo - x, v = hi - x; /* u < v; may be infinite */
    if (u >= 0.0)
        return 0.5 * (exp(-u / b) - exp(-v / b));
    if (v <= 0.0)
        return 0.5 * (exp(v / b) - exp(u / b));
    return 1.0 - 0.5 * exp(u / b) - 0.5 * exp(-v / b);
}

/* The probability of every (input, region) cell under the claimed kind (and kappa) at
 * `epsilon`: the Bernoulli nominal p(x) of a mechanism built at that epsilon, or the
 * continuous Laplace(x, 1/epsilon) law. */
static ldpb_err model_probs(const struct plan *p, double epsilon, double *probs)
{
    size_t nr = p->n_regions;
    if (!is_bernoulli_kind(p->o.kind)) {
        double b = 1.0 / epsilon;
        for (size_t i = 0; i < p->n_inputs; i++)
            for (size_t r = 0; r < nr; r++)
                probs[i * nr + r] =
                    laplace_region(p->inputs[i], b, p->regions[r].lo, p->regions[r].hi);
        return LDPB_OK;
    }
    ldpb_mech *m = NULL;
    const ldpb_mech *use = p->claimed;
    if (epsilon != p->o.epsilon) {
        ldpb_err err = build_mech(&p->o, epsilon, &m);
        if (err)
            return err;
        use = m;
    }
    for (size_t i = 0; i < p->n_inputs; i++)
        probs[i * nr] = ldpb_mech_prob_one_nominal(use, p->inputs[i]);
    ldpb_mech_free(m);
    return LDPB_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Binomial tails and Clopper-Pearson bounds.                                                  */

/* The continued fraction of I_x(a, b) (modified Lentz; Numerical Recipes 6.4). */
static ldpb_err beta_cf(double a, double b, double x, double *out)
{
    const double tiny = 1e-300;
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < tiny)
        d = tiny;
    d = 1.0 / d;
    double h = d;
    for (long m = 1; m <= CF_ITER_MAX; m++) {
        double dm = (double)m, m2 = 2.0 * dm;
        double aa = dm * (b - dm) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + dm) * (qab + dm) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = fabs(d) < tiny ? tiny : d;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < 4.0 * DBL_EPSILON) {
            *out = h;
            return LDPB_OK;
        }
    }
    return LDPB_ERANGE;
}

/* The regularized incomplete beta function I_x(a, b) in *lower and 1 - I_x(a, b) in *upper,
 * for a, b > 0. The continued fraction is evaluated on the side where it converges fast, which
 * is also the side whose tail is the smaller one, so a small result keeps its relative
 * precision. */
static ldpb_err beta_inc(double a, double b, double x, double *lower, double *upper)
{
    if (x <= 0.0) {
        *lower = 0.0;
        *upper = 1.0;
        return LDPB_OK;
    }
    if (x >= 1.0) {
        *lower = 1.0;
        *upper = 0.0;
        return LDPB_OK;
    }
    gsl_sf_result lnb;
    if (gsl_sf_lnbeta_e(a, b, &lnb) != GSL_SUCCESS)
        return LDPB_ERANGE;
    double front = exp(a * log(x) + b * log1p(-x) - lnb.val);
    double cf;
    ldpb_err err;
    if (x < (a + 1.0) / (a + b + 2.0)) {
        err = beta_cf(a, b, x, &cf);
        if (err)
            return err;
        *lower = front * cf / a;
        *upper = 1.0 - *lower;
    } else {
        err = beta_cf(b, a, 1.0 - x, &cf);
        if (err)
            return err;
        *upper = front * cf / b;
        *lower = 1.0 - *upper;
    }
    return LDPB_OK;
}

/* P(K >= k) for K ~ Binomial(n, p). */
static ldpb_err tail_ge(uint64_t n, uint64_t k, double p, double *out)
{
    if (k == 0) {
        *out = 1.0;
        return LDPB_OK;
    }
    if (k > n) {
        *out = 0.0;
        return LDPB_OK;
    }
    double lower, upper;
    ldpb_err err = beta_inc((double)k, (double)(n - k) + 1.0, p, &lower, &upper);
    *out = lower;
    return err;
}

/* P(K <= k) for K ~ Binomial(n, p). */
static ldpb_err tail_le(uint64_t n, uint64_t k, double p, double *out)
{
    if (k >= n) {
        *out = 1.0;
        return LDPB_OK;
    }
    double lower, upper;
    ldpb_err err = beta_inc((double)k + 1.0, (double)(n - k), p, &lower, &upper);
    *out = upper;
    return err;
}

/* The Clopper-Pearson bound for p from k of n at one-sided level t: the lower bound solves
 * P_p(K >= k) = t, the upper bound P_p(K <= k) = t. Bisection in p, geometric while the bracket
 * spans orders of magnitude so tiny bounds come out with full relative precision; the bracket's
 * outer end is returned, which only widens the interval. */
static ldpb_err cp_bound(uint64_t n, uint64_t k, double t, int upper, double *out)
{
    if (!upper && k == 0) {
        *out = 0.0;
        return LDPB_OK;
    }
    if (upper && k == n) {
        *out = 1.0;
        return LDPB_OK;
    }
    double lo = 0.0, hi = 1.0;
    for (int iter = 0; iter < SOLVE_ITER_MAX; iter++) {
        double mid;
        if (lo == 0.0)
            mid = hi / 16.0;
        else if (hi > 4.0 * lo)
            mid = sqrt(lo) * sqrt(hi);
        else
            mid = lo + 0.5 * (hi - lo);
        if (!(mid > lo && mid < hi) || hi - lo <= 4.0 * DBL_EPSILON * hi) {
            *out = upper ? hi : lo;
            return LDPB_OK;
        }
        double tail;
        ldpb_err err = upper ? tail_le(n, k, mid, &tail) : tail_ge(n, k, mid, &tail);
        if (err)
            return err;
        /* tail_ge rises with p, tail_le falls: move the end on the root's far side. */
        if ((tail < t) == !upper)
            lo = mid;
        else
            hi = mid;
    }
    return LDPB_ERANGE;
}

ldpb_err audit_cp_interval(uint64_t n, uint64_t k, double level, double *lo, double *hi)
{
    if (!lo || !hi || n == 0 || k > n)
        return LDPB_EINVAL;
    if (!(level > 0.0 && level < 1.0))
        return LDPB_ERANGE;
    ldpb_err err = cp_bound(n, k, level / 2.0, 0, lo);
    return err ? err : cp_bound(n, k, level / 2.0, 1, hi);
}

/* The largest k whose interval's lower bound is <= p (P_p(K >= k) >= t), and the smallest k
 * whose upper bound is >= p (P_p(K <= k) >= t): the cell accepts p iff k_lo <= k <= k_hi. */
static ldpb_err acceptance(uint64_t n, double t, double p, uint64_t *k_lo, uint64_t *k_hi)
{
    uint64_t lo = 0, hi = n; /* k_hi in [lo, hi]: P(K >= 0) = 1 >= t */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        double tail;
        ldpb_err err = tail_ge(n, mid, p, &tail);
        if (err)
            return err;
        if (tail >= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    *k_hi = lo;
    lo = 0;
    hi = n; /* k_lo in [lo, hi]: P(K <= n) = 1 >= t */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        double tail;
        ldpb_err err = tail_le(n, mid, p, &tail);
        if (err)
            return err;
        if (tail >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    *k_lo = lo;
    return LDPB_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Power: the default sample size and the exact miss probability.                              */

/* The epsilon of the mechanism the power rule must catch, or NaN if none can be built. */
static double alternative_epsilon(const audit_opts *o, double inflation)
{
    double e = inflation * o->epsilon;
    if (!(inflation > 0.0) || !isfinite(e))
        return NAN;
    if (is_bernoulli_kind(o->kind) && e > LDPB_EPSILON_MAX)
        return NAN;
    return e;
}

static size_t cell_count(const struct plan *p)
{
    return p->n_inputs * p->n_regions;
}

/* Rounds up to two significant digits, so the defaults read well. */
static uint64_t round_up_2sig(uint64_t n)
{
    uint64_t scale = 1;
    while (n / scale >= 100)
        scale *= 10;
    return (n + scale - 1) / scale * scale;
}

ldpb_err audit_default_samples(const audit_opts *opts, uint64_t *samples)
{
    if (!samples)
        return LDPB_EINVAL;
    ldpb_err err = validate(opts);
    if (err)
        return err;
    double eps_alt = alternative_epsilon(opts, AUDIT_INFLATION);
    if (isnan(eps_alt)) {
        /* Above LDPB_EPSILON_MAX / AUDIT_INFLATION no inflated Bernoulli mechanism exists: the
         * default stays at its value for the largest claim that has one. */
        audit_opts at_max = *opts;
        at_max.epsilon = LDPB_EPSILON_MAX / AUDIT_INFLATION;
        while (AUDIT_INFLATION * at_max.epsilon > LDPB_EPSILON_MAX)
            at_max.epsilon = nextafter(at_max.epsilon, 0.0);
        return audit_default_samples(&at_max, samples);
    }
    struct plan p;
    err = plan_init(&p, opts);
    if (err)
        return err;
    size_t cells = cell_count(&p);
    double nom[INPUTS_MAX * REGIONS_MAX], alt[INPUTS_MAX * REGIONS_MAX];
    uint64_t cap = is_bernoulli_kind(opts->kind) ? DEFAULT_CAP_BERNOULLI : DEFAULT_CAP_LAPLACE;
    double best = INFINITY;
    err = model_probs(&p, opts->epsilon, nom);
    if (!err)
        err = model_probs(&p, eps_alt, alt);
    if (err)
        goto done;
    double z_a = gsl_cdf_ugaussian_Qinv(opts->alpha / (double)cells / 2.0);
    double z_b = gsl_cdf_ugaussian_Qinv(AUDIT_BETA);
    if (!isfinite(z_a) || !isfinite(z_b)) {
        err = LDPB_ERANGE;
        goto done;
    }
    /* One cell detects the alternative with probability >= 1 - beta when its estimate, with
     * standard deviation sqrt(p1 (1 - p1) / n) around p1, lies beyond z_a standard deviations
     * sqrt(p0 (1 - p0) / n) from p0: n >= ((z_a sd0 + z_b sd1) / |p1 - p0|)^2. */
    for (size_t c = 0; c < cells; c++) {
        double p0 = nom[c], p1 = alt[c], d = fabs(p1 - p0);
        if (!(d > 0.0))
            continue;
        double need = (z_a * sqrt(p0 * (1.0 - p0)) + z_b * sqrt(p1 * (1.0 - p1))) / d;
        need *= need;
        if (need < best)
            best = need;
    }
    double want = RULE_MARGIN * best;
    uint64_t n = !(want < (double)cap) ? cap : (uint64_t)ceil(want);
    n = n < AUDIT_DEFAULT_MIN ? AUDIT_DEFAULT_MIN : round_up_2sig(n);
    *samples = n > cap ? cap : n;
done:
    plan_fini(&p);
    return err;
}

static ldpb_err miss_with_plan(const struct plan *p, uint64_t n, double inflation, double *miss)
{
    size_t cells = cell_count(p);
    double nom[INPUTS_MAX * REGIONS_MAX], alt[INPUTS_MAX * REGIONS_MAX];
    double eps_alt = alternative_epsilon(&p->o, inflation);
    if (isnan(eps_alt))
        return LDPB_ERANGE;
    ldpb_err err = model_probs(p, p->o.epsilon, nom);
    if (!err)
        err = model_probs(p, eps_alt, alt);
    if (err)
        return err;
    double t = p->o.alpha / (double)cells / 2.0;
    double best = 1.0;
    for (size_t c = 0; c < cells; c++) {
        if (nom[c] == alt[c])
            continue;
        uint64_t k_lo, k_hi;
        double above, below;
        err = acceptance(n, t, nom[c], &k_lo, &k_hi);
        if (!err)
            err = tail_ge(n, k_lo, alt[c], &above);
        if (!err)
            err = tail_le(n, k_hi, alt[c], &below);
        if (err)
            return err;
        /* P(k_lo <= K <= k_hi) is at most either one-sided tail; use the smaller. */
        double m = above < below ? above : below;
        if (k_lo > k_hi)
            m = 0.0;
        if (m < best)
            best = m;
    }
    *miss = best;
    return LDPB_OK;
}

static ldpb_err resolve_samples(const audit_opts *o, uint64_t *n)
{
    if (o->samples) {
        *n = o->samples;
        return LDPB_OK;
    }
    return audit_default_samples(o, n);
}

ldpb_err audit_miss_probability(const audit_opts *opts, double inflation, double *miss)
{
    if (!miss)
        return LDPB_EINVAL;
    ldpb_err err = validate(opts);
    if (err)
        return err;
    uint64_t n;
    err = resolve_samples(opts, &n);
    if (err)
        return err;
    struct plan p;
    err = plan_init(&p, opts);
    if (err)
        return err;
    err = miss_with_plan(&p, n, inflation, miss);
    plan_fini(&p);
    return err;
}

/* ------------------------------------------------------------------------------------------ */
/* The audit.                                                                                  */

int audit_sample_mech(void *ctx, ldpb_rng *rng, double x01, double *y)
{
    return (int)ldpb_mech_privatize_unit((const ldpb_mech *)ctx, rng, x01, y);
}

/* The bin of a finite output: the number of edges at or below it. */
static size_t bin_of(const struct plan *p, double y)
{
    size_t bin = 0;
    while (bin < p->n_edges && p->edges[bin] <= y)
        bin++;
    return bin;
}

/* Whether the claimed mechanism can produce y: 0 or 1 for Bernoulli, a finite multiple of the
 * grid for Laplace (y / g is exact: g is a power of two). */
static int in_support(const struct plan *p, double y)
{
    if (is_bernoulli_kind(p->o.kind))
        return y == 0.0 || y == 1.0;
    double scaled = y / p->grid;
    return isfinite(scaled) && fabs(scaled) < 0x1p53 && scaled == floor(scaled);
}

/* Draws n outputs at each input and counts them per bin. Outputs the claimed mechanism cannot
 * produce are counted in *off as well; those that are not finite belong to no bin. */
static ldpb_err draw(const struct plan *p, uint64_t n, audit_sample_fn sample, void *ctx,
                     ldpb_rng *rng, uint64_t bins[INPUTS_MAX][BINS_MAX], uint64_t *off)
{
    *off = 0;
    for (size_t i = 0; i < p->n_inputs; i++) {
        double x = p->inputs[i];
        for (uint64_t s = 0; s < n; s++) {
            double y;
            int rc = sample(ctx, rng, x, &y);
            if (rc)
                return (ldpb_err)rc;
            if (!in_support(p, y))
                (*off)++;
            if (isfinite(y))
                bins[i][bin_of(p, y)]++;
        }
    }
    return LDPB_OK;
}

static ldpb_err fill_cell(audit_cell *c, uint64_t n, uint64_t k, double t, double nominal)
{
    c->count = k;
    c->estimate = (double)k / (double)n;
    c->nominal = nominal;
    ldpb_err err = cp_bound(n, k, t, 0, &c->lo);
    if (!err)
        err = cp_bound(n, k, t, 1, &c->hi);
    if (!err)
        err = cp_bound(n, n - k, t, 0, &c->qlo);
    if (!err)
        err = cp_bound(n, n - k, t, 1, &c->qhi);
    c->ok = !err && c->lo <= nominal && nominal <= c->hi;
    return err;
}

/* ln(a / b) for a lower bound a and an upper bound b; -inf when a is 0. */
static double log_ratio(double a, double b)
{
    return a > 0.0 ? log(a) - log(b) : -INFINITY;
}

static void check_privacy(audit_report *r)
{
    size_t nr = r->n_regions;
    double best = -INFINITY;
    for (size_t i = 0; i < r->n_inputs; i++) {
        for (size_t j = 0; j < r->n_inputs; j++) {
            if (i == j)
                continue;
            for (size_t g = 0; g < nr; g++) {
                const audit_cell *num = &r->cells[i * nr + g], *den = &r->cells[j * nr + g];
                double in = log_ratio(num->lo, den->hi);
                double out = log_ratio(num->qlo, den->qhi);
                if (in > best || out > best) {
                    best = in > out ? in : out;
                    r->priv_num = i;
                    r->priv_den = j;
                    r->priv_region = g;
                    r->priv_complement = out > in;
                }
            }
        }
    }
    r->eps_lower = best > 0.0 ? best : 0.0;
    r->privacy_ok = !(r->eps_lower > r->opts.epsilon);
}

static void check_fidelity(audit_report *r)
{
    size_t cells = r->n_inputs * r->n_regions;
    double worst = -1.0;
    r->fidelity_failures = 0;
    r->worst_cell = 0;
    for (size_t c = 0; c < cells; c++) {
        const audit_cell *cell = &r->cells[c];
        if (cell->ok)
            continue;
        r->fidelity_failures++;
        double var = cell->nominal * (1.0 - cell->nominal) / (double)r->opts.samples;
        double dev = fabs(cell->estimate - cell->nominal) / sqrt(var > 0.0 ? var : DBL_MIN);
        if (dev > worst) {
            worst = dev;
            r->worst_cell = c;
        }
    }
    r->fidelity_ok = r->fidelity_failures == 0;
}

ldpb_err audit_run(const audit_opts *opts, audit_sample_fn sample, void *ctx, ldpb_rng *rng,
                   audit_report **out)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!sample || !rng)
        return LDPB_EINVAL;
    ldpb_err err = validate(opts);
    if (err)
        return err;
    uint64_t n;
    err = resolve_samples(opts, &n);
    if (err)
        return err;
    struct report_box *box = calloc(1, sizeof *box);
    if (!box)
        return LDPB_ENOMEM;
    struct plan *p = &box->plan;
    audit_report *r = &box->pub;
    err = plan_init(p, opts);
    if (err) {
        free(box);
        return err;
    }
    r->opts = *opts;
    r->opts.samples = n;
    r->grid = p->grid;
    r->n_inputs = p->n_inputs;
    r->inputs = p->inputs;
    r->n_regions = p->n_regions;
    r->regions = p->regions;
    r->cells = box->cells;
    size_t cells = cell_count(p);
    r->level = opts->alpha / (double)cells;

    uint64_t bins[INPUTS_MAX][BINS_MAX];
    double nom[INPUTS_MAX * REGIONS_MAX];
    memset(bins, 0, sizeof bins);
    err = draw(p, n, sample, ctx, rng, bins, &r->off_support);
    if (!err)
        err = model_probs(p, opts->epsilon, nom);
    if (err)
        goto fail;
    for (size_t i = 0; i < p->n_inputs; i++) {
        for (size_t g = 0; g < p->n_regions; g++) {
            uint64_t k = 0;
            for (size_t bin = p->first_bin[g]; bin <= p->last_bin[g]; bin++)
                k += bins[i][bin];
            size_t c = i * p->n_regions + g;
            err = fill_cell(&r->cells[c], n, k, r->level / 2.0, nom[c]);
            if (err)
                goto fail;
        }
    }
    check_privacy(r);
    check_fidelity(r);
    r->support_ok = r->off_support == 0;
    r->pass = r->privacy_ok && r->fidelity_ok && r->support_ok;
    r->miss = NAN;
    if (!isnan(alternative_epsilon(opts, AUDIT_INFLATION))) {
        err = miss_with_plan(p, n, AUDIT_INFLATION, &r->miss);
        if (err)
            goto fail;
    }
    *out = r;
    return LDPB_OK;

fail:
    plan_fini(p);
    free(box);
    return err;
}

void audit_report_free(audit_report *report)
{
    if (!report)
        return;
    struct report_box *box = (struct report_box *)report;
    plan_fini(&box->plan);
    free(box);
}

/* ------------------------------------------------------------------------------------------ */
/* The verdict line.                                                                           */

size_t audit_region_text(const audit_report *r, size_t region, int complement, char *buf,
                         size_t len)
{
    int n;
    const audit_region *g = &r->regions[region];
    double h = 0.5 * r->grid;
    if (isnan(r->grid))
        n = snprintf(buf, len, "y = %d", complement ? 0 : 1);
    else if (isinf(g->lo))
        n = snprintf(buf, len, "%sy <= %.6g%s", complement ? "not (" : "", g->hi - h,
                     complement ? ")" : "");
    else if (isinf(g->hi))
        n = snprintf(buf, len, "%sy >= %.6g%s", complement ? "not (" : "", g->lo + h,
                     complement ? ")" : "");
    else if (g->lo >= 1.0 - r->grid) /* right of the inputs: name the edges it starts at */
        n = snprintf(buf, len, "%s%.6g <= y < %.6g%s", complement ? "not (" : "", g->lo + h,
                     g->hi + h, complement ? ")" : "");
    else if (g->hi + h == 1.0) /* up to the right tail, which starts at 1 */
        n = snprintf(buf, len, "%s%.6g < y < 1%s", complement ? "not (" : "", g->lo - h,
                     complement ? ")" : "");
    else
        n = snprintf(buf, len, "%s%.6g < y <= %.6g%s", complement ? "not (" : "", g->lo - h,
                     g->hi - h, complement ? ")" : "");
    return n < 0 ? 0 : (size_t)n;
}

/* Appends to buf like snprintf at offset *pos, tracking the length the whole text needs. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t len, size_t *pos,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos += (size_t)n;
}

size_t audit_verdict(const audit_report *r, char *buf, size_t len)
{
    const char *mech = ldpb_mech_kind_name(r->opts.kind);
    char where[96];
    size_t pos = 0;
    if (len > 0)
        buf[0] = '\0';
    if (r->pass) {
        append(buf, len, &pos, "PASS: %s eps=%g samples=%llu alpha=%g eps_lower=%.4f", mech,
               r->opts.epsilon, (unsigned long long)r->opts.samples, r->opts.alpha, r->eps_lower);
        if (!isnan(r->miss))
            append(buf, len, &pos, " miss(%.1f*eps)<=%.1e", AUDIT_INFLATION, r->miss);
        return pos;
    }
    append(buf, len, &pos, "FAIL: %s eps=%g", mech, r->opts.epsilon);
    const char *sep = " ";
    if (!r->privacy_ok) {
        audit_region_text(r, r->priv_region, r->priv_complement, where, sizeof where);
        append(buf, len, &pos, "%sprivacy: epsilon lower bound %.4f > %g (x=%g vs x=%g, %s)", sep,
               r->eps_lower, r->opts.epsilon, r->inputs[r->priv_num], r->inputs[r->priv_den],
               where);
        sep = "; ";
    }
    if (!r->fidelity_ok) {
        const audit_cell *c = &r->cells[r->worst_cell];
        audit_region_text(r, r->worst_cell % r->n_regions, 0, where, sizeof where);
        append(buf, len, &pos,
               "%sfidelity: %zu of %zu intervals exclude the nominal probability (worst x=%g "
               "%s: %.6g not in [%.6g, %.6g])",
               sep, r->fidelity_failures, r->n_inputs * r->n_regions,
               r->inputs[r->worst_cell / r->n_regions], where, c->nominal, c->lo, c->hi);
        sep = "; ";
    }
    if (!r->support_ok)
        append(buf, len, &pos, "%ssupport: %llu outputs the claimed mechanism cannot produce", sep,
               (unsigned long long)r->off_support);
    return pos;
}

/* ------------------------------------------------------------------------------------------ */
/* The command line.                                                                           */

struct raw_args {
    const char *mech, *epsilon, *samples, *alpha, *kappa, *seed;
};

static const struct cli_option {
    char short_name; /* 0: long only */
    const char *long_name;
    size_t offset; /* of the const char * in struct raw_args; SIZE_MAX for --help */
} cli_options[] = {
    {'m', "mechanism", offsetof(struct raw_args, mech)},
    {'e', "epsilon", offsetof(struct raw_args, epsilon)},
    {'n', "samples", offsetof(struct raw_args, samples)},
    {0, "alpha", offsetof(struct raw_args, alpha)},
    {0, "kappa", offsetof(struct raw_args, kappa)},
    {0, "seed", offsetof(struct raw_args, seed)},
    {'h', "help", SIZE_MAX},
};

static const struct cli_option *find_cli_option(const char *arg, const char **inline_value)
{
    size_t n_opts = sizeof cli_options / sizeof cli_options[0];
    *inline_value = NULL;
    if (arg[0] != '-' || arg[1] == '\0')
        return NULL;
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; i < n_opts; i++) {
            if (strlen(cli_options[i].long_name) == len &&
                strncmp(cli_options[i].long_name, name, len) == 0) {
                *inline_value = eq ? eq + 1 : NULL;
                return &cli_options[i];
            }
        }
        return NULL;
    }
    for (size_t i = 0; i < n_opts; i++) {
        if (cli_options[i].short_name == arg[1]) {
            *inline_value = arg[2] ? arg + 2 : NULL;
            return &cli_options[i];
        }
    }
    return NULL;
}

/* Copies at most 40 bytes of s for a message, replacing control and non-ASCII bytes. */
static const char *echo(char dst[48], const char *s)
{
    size_t i = 0;
    for (; s[i] && i < 40; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (s[i]) {
        memcpy(dst + i, "...", 3);
        i += 3;
    }
    dst[i] = '\0';
    return dst;
}

/* Writes "what 'text'after" (or just "what") into err; returns the usage exit status. */
static int usage_error(char *err, size_t errlen, const char *what, const char *text,
                       const char *after)
{
    char e[48];
    if (text)
        snprintf(err, errlen, "%s '%s'%s", what, echo(e, text), after ? after : "");
    else
        snprintf(err, errlen, "%s", what);
    return EXIT_USAGE;
}

/* Parses all of text as a finite double. */
static int parse_number(const char *text, double *out)
{
    char *end;
    if (!text[0] || isspace((unsigned char)text[0]))
        return -1;
    errno = 0;
    double v = strtod(text, &end);
    if (*end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_whole(const char *text, uint64_t *out)
{
    size_t n = strlen(text);
    if (n == 0 || strspn(text, "0123456789") != n)
        return -1;
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE)
        v = ULLONG_MAX;
    *out = (uint64_t)v;
    return 0;
}

static int check_values(const struct raw_args *a, audit_cli *cli, char *err, size_t errlen)
{
    audit_opts *o = &cli->opts;
    ldpb_mech_kind kind;
    double eps;
    char e[48];
    if (!a->mech)
        return usage_error(
            err, errlen, "missing -m MECH (linear, quadratic, exponential or laplace)", NULL, NULL);
    if (!a->epsilon)
        return usage_error(err, errlen, "missing -e EPS", NULL, NULL);
    if (ldpb_mech_kind_from_name(a->mech, &kind) != LDPB_OK)
        return usage_error(err, errlen, "unknown mechanism", a->mech,
                           " (expected linear, quadratic, exponential or laplace)");
    if (parse_number(a->epsilon, &eps))
        return usage_error(err, errlen, "epsilon", a->epsilon, " is not a finite number");
    if (!(eps >= AUDIT_EPSILON_MIN && eps <= LDPB_EPSILON_MAX)) {
        snprintf(err, errlen, "epsilon %s outside [%g, %g]", echo(e, a->epsilon), AUDIT_EPSILON_MIN,
                 LDPB_EPSILON_MAX);
        return EXIT_USAGE;
    }
    audit_opts_init(o, kind, eps);
    if (a->samples) {
        if (parse_whole(a->samples, &o->samples))
            return usage_error(err, errlen, "samples", a->samples, " is not a whole number");
        if (o->samples < AUDIT_SAMPLES_MIN || o->samples > AUDIT_SAMPLES_MAX) {
            snprintf(err, errlen, "samples %s outside [%d, %llu]", echo(e, a->samples),
                     AUDIT_SAMPLES_MIN, (unsigned long long)AUDIT_SAMPLES_MAX);
            return EXIT_USAGE;
        }
    }
    if (a->alpha) {
        if (parse_number(a->alpha, &o->alpha))
            return usage_error(err, errlen, "alpha", a->alpha, " is not a finite number");
        if (!(o->alpha >= AUDIT_ALPHA_MIN && o->alpha <= AUDIT_ALPHA_MAX)) {
            snprintf(err, errlen, "alpha %s outside [%g, %g]", echo(e, a->alpha), AUDIT_ALPHA_MIN,
                     AUDIT_ALPHA_MAX);
            return EXIT_USAGE;
        }
    }
    if (a->kappa) {
        if (!(ldpb_mech_desc_of((int)kind)->params & LDPB_MECH_PARAM_KAPPA))
            return usage_error(err, errlen, "--kappa applies only to the quadratic mechanism, not",
                               a->mech, NULL);
        if (parse_number(a->kappa, &o->kappa))
            return usage_error(err, errlen, "kappa", a->kappa, " is not a finite number");
        if (!(o->kappa >= -1.0 && o->kappa <= 1.0))
            return usage_error(err, errlen, "kappa", a->kappa, " outside [-1, 1]");
    }
    if (a->seed && a->seed[0] == '\0')
        return usage_error(err, errlen, "--seed needs a non-empty text (omit it for secure noise)",
                           NULL, NULL);
    cli->seed = a->seed;
    return 0;
}

int audit_cli_parse(int argc, char **argv, audit_cli *cli, char *err, size_t errlen)
{
    struct raw_args a;
    char e[48];
    if (!cli || !err || errlen == 0 || argc < 0 || (argc > 0 && !argv)) {
        if (err && errlen)
            err[0] = '\0';
        return EXIT_USAGE;
    }
    memset(&a, 0, sizeof a);
    memset(cli, 0, sizeof *cli);
    err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value;
        const struct cli_option *opt = find_cli_option(arg, &value);
        if (!opt) {
            if (arg[0] == '-')
                return usage_error(err, errlen, "unknown option", arg, NULL);
            return usage_error(err, errlen, "unexpected argument", arg, NULL);
        }
        if (opt->offset == SIZE_MAX) {
            if (value)
                return usage_error(err, errlen, "option takes no value:", arg, NULL);
            cli->help = 1;
            return 0;
        }
        if (!value) {
            if (i + 1 >= argc)
                return usage_error(err, errlen, "missing value for option", arg, NULL);
            value = argv[++i];
        }
        const char **slot = (const char **)((char *)&a + opt->offset);
        if (*slot) {
            snprintf(err, errlen, "option --%s given twice", echo(e, opt->long_name));
            return EXIT_USAGE;
        }
        *slot = value;
    }
    return check_values(&a, cli, err, errlen);
}
