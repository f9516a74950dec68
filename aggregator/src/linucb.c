/* LinUCB and joint-DP LinUCB (Shariff & Sheffet 2018, Alg. 1): see linucb.h. */
#include "linucb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>

#include "ldpb/linalg.h"
#include "statefmt.h"

/* 2: the tree (binary or padded) in the header */
#define STATE_VERSION 2

struct agg_linucb {
    agg_linucb_config cfg;
    agg_linucb_constants c;
    uint32_t d, p; /* p = d + 1 */
    uint64_t t;    /* observations so far: the prefix count of the next release */
    int primed;    /* the noise slots have been drawn */
    uint64_t failures;
    double *M;        /* p x p exact sum of v v^T */
    double *slots;    /* m x p x p noise */
    double *nsum;     /* p x p sum of the slots */
    double *V;        /* d x d release (then its Cholesky factor) */
    double *u;        /* d */
    double *theta;    /* d */
    double *w;        /* d scratch */
    double *evals;    /* d, for the ridge on a Cholesky failure */
    double *inv_diag; /* d: 1 / L_ii of the current factor */
    gsl_eigen_symm_workspace *eig;
    double *vcopy; /* d x d scratch for the eigenvalue repair */
    /* exact: the statistics, the slots and their sum in grid units (M, slots, nsum unused) */
    int64_t *Mq, *slotq, *nsumq;
    /* exact Wishart: each level's node data sum in units vgrid^2 (zero while its bit is clear);
     * slotq then holds each level's released node (data and sample) in units grid, and Mq stays
     * zero */
    int64_t *Aq;
};

static int wgrid(const agg_linucb *p)
{
    return p->cfg.exact && p->cfg.variant == AGG_LINUCB_WISHART;
}

void agg_linucb_config_init(agg_linucb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->variant = AGG_LINUCB_PLAIN;
    cfg->epsilon = 1.0;
    cfg->delta = 0.1;
    cfg->L = 1.0;
    cfg->S = 1.0;
    cfg->sigma = 1.0;
    cfg->rho = 1.0;
}

const char *agg_linucb_variant_name(agg_linucb_variant v)
{
    switch (v) {
    case AGG_LINUCB_PLAIN:
        return "linucb";
    case AGG_LINUCB_WISHART:
        return "jdp-linucb-wishart";
    case AGG_LINUCB_GAUSSIAN:
        return "jdp-linucb-gaussian";
    }
    return "unknown";
}

const char *agg_linucb_tree_name(agg_linucb_tree t)
{
    switch (t) {
    case AGG_LINUCB_TREE_AUTO:
        return "auto";
    case AGG_LINUCB_TREE_BINARY:
        return "binary";
    case AGG_LINUCB_TREE_PADDED:
        return "padded";
    }
    return "unknown";
}

agg_linucb_variant agg_linucb_variant_find(const char *name)
{
    for (int v = AGG_LINUCB_PLAIN; v <= AGG_LINUCB_GAUSSIAN; v++)
        if (name && strcmp(name, agg_linucb_variant_name((agg_linucb_variant)v)) == 0)
            return (agg_linucb_variant)v;
    return (agg_linucb_variant)0;
}

static int pos_finite(double v)
{
    return v > 0.0 && isfinite(v);
}

static double zcdp_to_eps(double rho, double delta)
{
    return rho + 2.0 * sqrt(rho * log(1.0 / delta));
}

/* The Gaussian variant's privacy in zCDP (docs/privacy.md sec. 10.2), and with exact its grid.
 * Per node, noise with variance V off the diagonal and 2V on it, against a change D of the
 * symmetric node sum, is (sum_{i<j} D_ij^2 / (2V) + sum_i D_ii^2 / (4V))-zCDP, which is
 * ||D||_F^2 / (4V) (continuous: SS18; discrete: Canonne, Kamath & Steinke 2020, Thm 14, per
 * coordinate, summed). ||D||_F <= Ltilde^2 (add/remove) or sqrt(2) Ltilde^2 (replace). With the
 * grid every entry of the rounded datum is within one unit of v_i v_j / g, which adds at most
 * (d+1) (add/remove) or 2 (d+1) (replace) to sqrt(4 V) sqrt(rho) in grid units (Minkowski over
 * the weighted entries). N is chosen so that the discrete add/remove rho per node is at most the
 * continuous one: every conclusion of the paper's calibration holds for the discrete release. */
static ldpb_err gaussian_privacy(const agg_linucb_config *cfg, agg_linucb_constants *c,
                                 const char *name, char errmsg[AGG_ERRMSG_MAX])
{
    const double q = (double)cfg->d + 1.0, lt2 = c->Ltilde * c->Ltilde, s = c->sigma_noise;
    const double m = (double)c->m;
    double rho = lt2 * lt2 / (4.0 * s * s), rho_r = 2.0 * rho;
    if (cfg->exact) {
        /* the largest power of two <= min(s, Ltilde^2) 2^-20, unless (s/g)^2 would pass 2^54 */
        int e;
        frexp(fmin(s, lt2), &e);
        double g = ldexp(1.0, e - 21);
        if (s / g > 0x1p27) {
            frexp(s, &e);
            g = ldexp(1.0, e - 27);
        }
        const double lt2e = lt2 * (1.0 + 0x1p-40); /* rounding of ||v||^2 and v_i v_j */
        double x = (s / g) * (lt2e + q * g) / lt2;
        double units = ceil(x * x * (1.0 + 0x1p-40));
        if (!(units >= 1.0 && 2.0 * units <= 0x1p56))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: the exact sampler needs a noise variance of at most "
                                     "2^55 grid units (epsilon %g too small)",
                                     name, cfg->epsilon);
        double cap = ceil(lt2e / g) + 1.0; /* one datum's largest entry, in grid units */
        if (!((double)cfg->horizon * cap <= 0x1p61))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: horizon %llu too long for 64-bit grid sums", name,
                                     (unsigned long long)cfg->horizon);
        c->grid = g;
        c->sigma2_units = (uint64_t)units;
        double a = lt2e / g + q, ar = M_SQRT2 * lt2e / g + 2.0 * q;
        rho = a * a / (4.0 * units);
        rho_r = ar * ar / (4.0 * units);
    }
    c->rho_tree = m * rho;
    c->rho_tree_replace = m * rho_r;
    c->eps_zcdp = zcdp_to_eps(c->rho_tree, cfg->delta);
    c->eps_zcdp_replace = zcdp_to_eps(c->rho_tree_replace, cfg->delta);
    return LDPB_OK;
}

/* The Wishart grid release (docs/privacy.md sec. 10.3 derives every constant here).
 * WG_TAIL_X: a node sample is redrawn when an entry / Ltilde^2 passes T = k + 2 sqrt(k x) + 2x,
 * x = 100 (W_ii / Ltilde^2 is chi-square with k degrees of freedom; Laurent & Massart 2000,
 * Lemma 1: P(chi^2_k > T) <= e^-x; |W_ij| <= sqrt(W_ii W_jj) for the off-diagonal entries).
 * WG_ETA, WG_BETA: the sampler assumption, each normal within WG_ETA (absolute) and each
 * chi-square within WG_ETA (relative) of an ideal draw under a coupling, except with
 * probability WG_BETA per draw. */
#define WG_TAIL_X 100.0
#define WG_ETA    0x1p-50
#define WG_BETA   0x1p-40
/* the share of delta set aside for delta_grid: the node budget is computed for
 * delta (1 - WG_SHARE), and a configuration whose delta_grid exceeds delta WG_SHARE is refused */
#define WG_SHARE 0x1p-4

static ldpb_err wishart_grid(const agg_linucb_config *cfg, agg_linucb_constants *c,
                             const char *name, char errmsg[AGG_ERRMSG_MAX])
{
    const double q = (double)cfg->d + 1.0, m = (double)c->m, k = c->k, n = (double)cfg->horizon;
    const double lt2 = c->Ltilde * c->Ltilde, x = WG_TAIL_X;
    const double T = k + 2.0 * sqrt(k * x) + 2.0 * x;
    /* the data grid: the largest power of two <= Ltilde 2^-20 whose integers stay below 2^62:
     * a node of at most 2n data (each entry at most Ltilde^2 / h^2 units) plus a sample (at
     * most T Ltilde^2 / h^2 units); the release sums m such nodes in units g >= h^2 (below) */
    int e2;
    frexp(c->Ltilde, &e2);
    double h = ldexp(1.0, e2 - 21);
    const double wlt2 = T * lt2 * (1.0 + 0x1p-40);
    while ((2.0 * n * lt2 + wlt2) / (h * h) + 2.0 > 0x1p62 && h < c->Ltilde)
        h *= 2.0;
    if (!(h <= c->Ltilde * 0x1p-8))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: horizon %llu or degrees of freedom %g too large for the "
                                 "64-bit grid release",
                                 name, (unsigned long long)cfg->horizon, k);
    const double gd = h * h;
    /* the node grid: the largest power of two <= Ltilde^2 sqrt(k) / 16 (its rounding adds a
     * variance g^2 / 12 per node, below 1/3072 of the sample's), at least gd; doubled while
     * delta_grid exceeds delta WG_SHARE, up to Ltilde^2 sqrt(k - q - 1): every entry's density is
     * at most 1 / (Ltilde^2 sqrt(k - q - 1)), and the window bound needs it at most 1 / g */
    frexp(lt2 * sqrt(k) / 16.0, &e2);
    double g = fmax(ldexp(1.0, e2 - 1), gd);
    const double gmax = k > q + 1.0 ? lt2 * sqrt(k - q - 1.0) : 0.0;
    const double err =
        lt2 * (T * (2.0 * WG_ETA + (q + 2.0) * 0x1p-53) + WG_ETA * (2.0 * sqrt(q * T) + 1.0));
    const double nent = q * (q + 1.0) / 2.0, a = m * (1.0 + exp(c->eps_node));
    double dg = a * (nent * (8.0 * err / g + WG_BETA) + 2.0 * q * exp(-x));
    while (dg > cfg->delta * WG_SHARE && 2.0 * g <= gmax) {
        g *= 2.0;
        dg = a * (nent * (8.0 * err / g + WG_BETA) + 2.0 * q * exp(-x));
    }
    if (!(g <= gmax))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: k %g too small for the grid release",
                                 name, k);
    if (!(m * ((2.0 * n * lt2 + wlt2) / g + 2.0) <= 0x1p62))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: horizon %llu too long for the 64-bit grid release", name,
                                 (unsigned long long)cfg->horizon);
    c->vgrid = h;
    c->grid = g;
    c->wishart_tail = T;
    c->wishart_float_err = err;
    c->delta_grid = dg;
    c->delta_total = cfg->delta * (1.0 - WG_SHARE) + dg;
    if (!(dg <= cfg->delta * WG_SHARE))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: the grid release needs delta %g for its floating-point "
                                 "sampler, more than delta / 16 = %g",
                                 name, dg, cfg->delta * WG_SHARE);
    /* each released node is within g/2 of the ideal one entrywise: the m nodes of a release
     * move its eigenvalues by at most m q g / 2 (Frobenius norm), so Prop. 9's bounds widen
     * by that much, and gamma (a bound on the noise vector's V^-1 norm) by the vector's move,
     * at most m g sqrt(d) / 2 in norm, over sqrt(rho_min) */
    c->rho_min -= m * q * g / 2.0;
    c->rho_max += m * q * g / 2.0;
    if (!(c->rho_min > 0.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: the grid step %g leaves no positive rho_min", name, g);
    c->gamma += m * g * sqrt(q - 1.0) / (2.0 * sqrt(c->rho_min));
    return LDPB_OK;
}

/* The Wishart variant's constants (SS18 sec. 4.1, Prop. 9, Eq. (4)), and with exact its grid. */
static ldpb_err wishart_constants(const agg_linucb_config *cfg, agg_linucb_constants *out,
                                  const char *name, char errmsg[AGG_ERRMSG_MAX])
{
    const double eps = cfg->epsilon, lt = out->Ltilde, lt2 = lt * lt, m = (double)out->m;
    const double d = (double)cfg->d, n = (double)cfg->horizon, alpha = out->alpha;
    /* the grid release takes its share WG_SHARE of delta out of the budget first */
    const int wg = cfg->exact && !cfg->zero_noise;
    const double delta = wg ? cfg->delta * (1.0 - WG_SHARE) : cfg->delta;
    /* SS18 sec. 4.1: Sheffet 2015's per-node condition k >= d + 1 + 28 ln(4/delta0) / eps0^2
     * with the per-node budget (eps/sqrt(8 m ln(2/delta)), delta/(2m)) of the tree. That
     * split composes to at most eps only while m eps0 (e^eps0 - 1) <= eps/2; beyond, eps0 is
     * the exact solution of advanced composition (agg_linucb_wishart_eps_node). */
    double extra;
    out->eps_node = agg_linucb_wishart_eps_node(m, eps, delta);
    out->delta_node = delta / (2.0 * m);
    if (out->eps_node == eps / sqrt(8.0 * m * log(2.0 / delta)))
        extra = ceil(224.0 * m * log(8.0 * m / delta) * log(2.0 / delta) / (eps * eps));
    else
        extra = ceil(28.0 * log(4.0 / out->delta_node) / (out->eps_node * out->eps_node));
    out->eps_total = agg_linucb_wishart_eps_total(m, out->eps_node, delta);
    out->k = d + 1.0 + extra;
    if (!(out->k < 9007199254740992.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: Wishart degrees of freedom %g "
                                 "too large (epsilon too small)",
                                 name, out->k);
    double smk = sqrt(m * out->k);
    double a8 = sqrt(d) + sqrt(2.0 * log(8.0 * n / alpha));
    double a2 = sqrt(d) + sqrt(2.0 * log(2.0 * n / alpha));
    if (!(smk > a8))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: sqrt(m k) = %g must exceed sqrt(d) + sqrt(2 ln(8n/alpha)) "
                                 "= %g (SS18 Prop. 9)",
                                 name, smk, a8);
    out->wishart_unshifted_rho_min = lt2 * (smk - a8) * (smk - a8);
    out->wishart_unshifted_rho_max = lt2 * (smk + a8) * (smk + a8);
    out->wishart_unshifted_gamma = lt * a2;
    double c = lt2 * (smk - a8) * (smk - a8) - 4.0 * lt2 * smk * a8;
    if (c > 0.0) { /* SS18 Eq. (4) */
        out->shift = -c;
        out->rho_min = 4.0 * lt2 * smk * a8;
        out->rho_max = 8.0 * lt2 * smk * a8;
        out->gamma = lt * sqrt(smk * a2);
    } else {
        out->shift = 0.0;
        out->rho_min = out->wishart_unshifted_rho_min;
        out->rho_max = out->wishart_unshifted_rho_max;
        out->gamma = out->wishart_unshifted_gamma;
    }
    out->delta_total = delta;
    if (wg) {
        ldpb_err err = wishart_grid(cfg, out, name, errmsg);
        if (err)
            return err;
    }
    return LDPB_OK;
}

ldpb_err agg_linucb_constants_of(const agg_linucb_config *cfg, agg_linucb_constants *out,
                                 char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg || !out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "linucb: NULL configuration");
    memset(out, 0, sizeof *out);
    agg_linucb_variant v = cfg->variant;
    if (v != AGG_LINUCB_PLAIN && v != AGG_LINUCB_WISHART && v != AGG_LINUCB_GAUSSIAN)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "linucb: unknown variant %d", (int)v);
    const char *name = agg_linucb_variant_name(v);
    if (cfg->d < 1 || cfg->d > AGG_LINUCB_D_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: d %u outside [1, %u]", name, cfg->d,
                                 AGG_LINUCB_D_MAX);
    if (cfg->horizon < 1 || cfg->horizon > AGG_LINUCB_HORIZON_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: horizon %llu outside [1, 2^40]", name,
                                 (unsigned long long)cfg->horizon);
    const double n = (double)cfg->horizon;
    const struct {
        const char *field;
        double value;
    } positive[] = {{"L", cfg->L}, {"S", cfg->S}, {"sigma", cfg->sigma}};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (!pos_finite(positive[i].value))
            return agg_policy_refuse(errmsg, isnan(positive[i].value) ? LDPB_EINVAL : LDPB_ERANGE,
                                     "%s: %s %g must be finite and > 0", name, positive[i].field,
                                     positive[i].value);
    double alpha = cfg->alpha == 0.0 ? 1.0 / n : cfg->alpha;
    if (!(alpha > 0.0 && alpha < 1.0))
        return agg_policy_refuse(errmsg, isnan(alpha) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "%s: alpha %g outside (0, 1)", name, alpha);
    out->alpha = alpha;
    uint64_t nm1 = cfg->horizon - 1;
    uint32_t bits = 0;
    while (nm1) {
        bits++;
        nm1 >>= 1;
    }
    out->m = 1 + bits;
    if (cfg->tree != AGG_LINUCB_TREE_AUTO && cfg->tree != AGG_LINUCB_TREE_BINARY &&
        cfg->tree != AGG_LINUCB_TREE_PADDED)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: unknown tree %d", name, (int)cfg->tree);
    if (v == AGG_LINUCB_WISHART && cfg->tree == AGG_LINUCB_TREE_BINARY)
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: tree binary refused: the Wishart bounds and shift (SS18 "
                                 "Prop. 9, Eq. (4)) need m node samples in every release (tree "
                                 "padded)",
                                 name);
    out->tree = (v == AGG_LINUCB_GAUSSIAN && cfg->tree != AGG_LINUCB_TREE_PADDED)
                    ? AGG_LINUCB_TREE_BINARY
                    : AGG_LINUCB_TREE_PADDED;
    const double m = (double)out->m;
    if (v == AGG_LINUCB_PLAIN || cfg->zero_noise) {
        if (!pos_finite(cfg->rho))
            return agg_policy_refuse(errmsg, isnan(cfg->rho) ? LDPB_EINVAL : LDPB_ERANGE,
                                     "%s: rho %g must be finite and > 0", name, cfg->rho);
    }
    if (v != AGG_LINUCB_PLAIN) {
        if (isnan(cfg->epsilon) || isnan(cfg->delta) || isnan(cfg->Ltilde))
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "%s: epsilon, delta and Ltilde must "
                                     "not be NaN",
                                     name);
        if (!(cfg->epsilon > 0.0 && cfg->epsilon <= LDPB_EPSILON_MAX))
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: epsilon %g outside (0, %g]", name,
                                     cfg->epsilon, LDPB_EPSILON_MAX);
        if (!(cfg->delta > 0.0 && cfg->delta < 1.0))
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: delta %g outside (0, 1)", name,
                                     cfg->delta);
        double lt = cfg->Ltilde == 0.0 ? sqrt(cfg->L * cfg->L + 1.0) : cfg->Ltilde;
        if (!(lt >= cfg->L) || !isfinite(lt))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: Ltilde %g must be finite and >= L %g (it bounds "
                                     "||x||^2 + y^2)",
                                     name, lt, cfg->L);
        out->Ltilde = lt;
    }
    const double eps = cfg->epsilon, delta = cfg->delta, lt = out->Ltilde, lt2 = lt * lt;
    if (v == AGG_LINUCB_WISHART) {
        ldpb_err err = wishart_constants(cfg, out, name, errmsg);
        if (err)
            return err;
    } else if (v == AGG_LINUCB_GAUSSIAN) {
        /* SS18 Prop. 11 and its shift by 2 Upsilon. */
        double l4 = log(4.0 / delta);
        out->sigma_noise = sqrt(16.0 * m * lt2 * lt2 * l4 * l4 / (eps * eps));
        agg_linucb_gaussian_bounds(out->sigma_noise, m, cfg->d, log(2.0 * n / alpha), &out->upsilon,
                                   &out->rho_min, &out->rho_max, &out->gamma);
        out->shift = 2.0 * out->upsilon;
        out->delta_total = delta;
        if (!cfg->zero_noise) {
            ldpb_err err = gaussian_privacy(cfg, out, name, errmsg);
            if (err)
                return err;
        }
    }
    if (cfg->exact && (v == AGG_LINUCB_PLAIN || cfg->zero_noise))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: exact (grid) noise needs a noisy JDP variant", name);
    if (v == AGG_LINUCB_PLAIN || cfg->zero_noise) {
        out->shift = cfg->rho;
        out->rho_min = out->rho_max = cfg->rho;
        out->gamma = 0.0;
    }
    return LDPB_OK;
}

double agg_linucb_wishart_eps_total(double m, double eps0, double delta)
{
    return sqrt(2.0 * m * log(2.0 / delta)) * eps0 + m * eps0 * expm1(eps0);
}

double agg_linucb_wishart_eps_node(double m, double eps, double delta)
{
    double split = eps / sqrt(8.0 * m * log(2.0 / delta));
    if (agg_linucb_wishart_eps_total(m, split, delta) <= eps)
        return split;
    /* the total increases strictly in eps0: bisect on [0, split], keeping lo feasible */
    double lo = 0.0, hi = split;
    for (int i = 0; i < 200 && lo < hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi)
            break;
        if (agg_linucb_wishart_eps_total(m, mid, delta) <= eps)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void agg_linucb_gaussian_bounds(double sd, double count, uint32_t d, double l2n, double *upsilon,
                                double *rho_min, double *rho_max, double *gamma)
{
    const double dd = (double)d;
    double u = sd * sqrt(2.0 * count) * (4.0 * sqrt(dd) + 2.0 * l2n);
    *upsilon = u;
    *rho_min = u;
    *rho_max = 3.0 * u;
    *gamma = sqrt(1.0 / u) * sqrt(count) * sd * (sqrt(dd) + sqrt(2.0 * l2n));
}

double agg_linucb_beta(double sigma, double alpha, uint32_t d, double logdet_v, double rho_min,
                       double rho_max, double S, double gamma)
{
    double arg = 2.0 * log(2.0 / alpha) + logdet_v - (double)d * log(rho_min);
    return sigma * sqrt(arg > 0.0 ? arg : 0.0) + S * sqrt(rho_max) + gamma;
}

void agg_linucb_free(agg_linucb *p)
{
    if (!p)
        return;
    if (p->eig)
        gsl_eigen_symm_free(p->eig);
    free(p->M);
    free(p->slots);
    free(p->nsum);
    free(p->V);
    free(p->u);
    free(p->theta);
    free(p->w);
    free(p->evals);
    free(p->inv_diag);
    free(p->vcopy);
    free(p->Mq);
    free(p->slotq);
    free(p->nsumq);
    free(p->Aq);
    free(p);
}

ldpb_err agg_linucb_new(agg_linucb **out, const agg_linucb_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "linucb: NULL output");
    *out = NULL;
    agg_linucb_constants c;
    ldpb_err err = agg_linucb_constants_of(cfg, &c, errmsg);
    if (err)
        return err;
    agg_linucb *p = calloc(1, sizeof *p);
    if (!p)
        return LDPB_ENOMEM;
    p->cfg = *cfg;
    p->c = c;
    p->d = cfg->d;
    p->p = cfg->d + 1;
    size_t pp = (size_t)p->p * p->p, dd = (size_t)p->d * p->d;
    p->M = calloc(pp, sizeof *p->M);
    p->slots = calloc(pp * c.m, sizeof *p->slots);
    p->nsum = calloc(pp, sizeof *p->nsum);
    p->V = calloc(dd, sizeof *p->V);
    p->vcopy = calloc(dd, sizeof *p->vcopy);
    p->u = calloc(p->d, sizeof *p->u);
    p->theta = calloc(p->d, sizeof *p->theta);
    p->w = calloc(p->d, sizeof *p->w);
    p->evals = calloc(p->d, sizeof *p->evals);
    p->inv_diag = calloc(p->d, sizeof *p->inv_diag);
    p->eig = gsl_eigen_symm_alloc(p->d);
    if (cfg->exact) {
        p->Mq = calloc(pp, sizeof *p->Mq);
        p->slotq = calloc(pp * c.m, sizeof *p->slotq);
        p->nsumq = calloc(pp, sizeof *p->nsumq);
        if (cfg->variant == AGG_LINUCB_WISHART && !(p->Aq = calloc(pp * c.m, sizeof *p->Aq))) {
            agg_linucb_free(p);
            return LDPB_ENOMEM;
        }
    }
    if (!p->M || !p->slots || !p->nsum || !p->V || !p->vcopy || !p->u || !p->theta || !p->w ||
        !p->evals || !p->inv_diag || !p->eig ||
        (cfg->exact && (!p->Mq || !p->slotq || !p->nsumq))) {
        agg_linucb_free(p);
        return LDPB_ENOMEM;
    }
    *out = p;
    return LDPB_OK;
}

const agg_linucb_config *agg_linucb_get_config(const agg_linucb *p)
{
    return &p->cfg;
}

const agg_linucb_constants *agg_linucb_get_constants(const agg_linucb *p)
{
    return &p->c;
}

uint64_t agg_linucb_rounds(const agg_linucb *p)
{
    return p->t;
}

uint64_t agg_linucb_cholesky_failures(const agg_linucb *p)
{
    return p->failures;
}

int agg_linucb_cholesky(double *a, uint32_t n)
{
    return ldpb_linalg_cholesky(a, n);
}

static int noisy(const agg_linucb *p)
{
    return p->cfg.variant != AGG_LINUCB_PLAIN && !p->cfg.zero_noise;
}

/* One node sample into s (p x p, symmetric). Wishart W_p(Ltilde^2 I, k) by the Bartlett
 * decomposition: A lower triangular with A_ii = sqrt(chi^2_{k-i}) and standard normal entries
 * below the diagonal; W = Ltilde^2 A A^T, exact in law. Gaussian: the symmetrised matrix of SS18
 * sec. 4.2, N(0, s^2) off the diagonal and N(0, 2 s^2) on it. */
static ldpb_err draw_node(agg_linucb *p, agg_noise *noise, double *s)
{
    const uint32_t q = p->p;
    if (p->cfg.variant == AGG_LINUCB_WISHART) {
        double A[(AGG_LINUCB_D_MAX + 1) * (AGG_LINUCB_D_MAX + 1)];
        for (uint32_t i = 0; i < q; i++) {
            for (uint32_t j = 0; j < i; j++)
                A[i * q + j] = agg_noise_normal(noise);
            double chi = 2.0 * agg_noise_gamma(noise, 0.5 * (p->c.k - (double)i));
            A[i * q + i] = sqrt(chi);
        }
        double l2 = p->c.Ltilde * p->c.Ltilde;
        for (uint32_t i = 0; i < q; i++)
            for (uint32_t j = 0; j <= i; j++) {
                double acc = 0.0;
                for (uint32_t r = 0; r <= j; r++)
                    acc += A[i * q + r] * A[j * q + r];
                s[i * q + j] = s[j * q + i] = l2 * acc;
            }
    } else {
        double sd = p->c.sigma_noise;
        for (uint32_t i = 0; i < q; i++) {
            s[i * q + i] = sqrt(2.0) * sd * agg_noise_normal(noise);
            for (uint32_t j = i + 1; j < q; j++)
                s[i * q + j] = s[j * q + i] = sd * agg_noise_normal(noise);
        }
    }
    for (size_t i = 0; i < (size_t)q * q; i++)
        if (!isfinite(s[i]))
            return LDPB_ESTATE;
    return LDPB_OK;
}

/* exact: one Gaussian node sample in grid units, the discrete Gaussian with variance parameter
 * N off the diagonal and 2N on it (docs/privacy.md sec. 10.2), from the secure source only. */
static ldpb_err draw_node_exact(agg_linucb *p, agg_noise *noise, int64_t *s)
{
    const uint32_t q = p->p;
    const uint64_t n2 = p->c.sigma2_units;
    for (uint32_t i = 0; i < q; i++) {
        ldpb_err err = agg_noise_dgauss(noise, 2 * n2, &s[i * q + i]);
        for (uint32_t j = i + 1; err == LDPB_OK && j < q; j++)
            if ((err = agg_noise_dgauss(noise, n2, &s[i * q + j])) == LDPB_OK)
                s[j * q + i] = s[i * q + j];
        if (err)
            return err;
    }
    return LDPB_OK;
}

/* The sum of the slots, recomputed from scratch (no drift from adding and subtracting). */
static void sum_slots(agg_linucb *p)
{
    size_t pp = (size_t)p->p * p->p;
    memset(p->nsum, 0, pp * sizeof *p->nsum);
    if (p->cfg.exact)
        memset(p->nsumq, 0, pp * sizeof *p->nsumq);
    for (uint32_t l = 0; l < p->c.m; l++) {
        const double *s = p->slots + l * pp;
        for (size_t i = 0; i < pp; i++)
            p->nsum[i] += s[i];
        for (size_t i = 0; p->cfg.exact && i < pp; i++)
            p->nsumq[i] += p->slotq[l * pp + i];
    }
}

/* Entry idx of the released (d+1)x(d+1) statistics, before the shift: the exact sums plus the
 * noise. exact: computed from the integer sum alone, so its bits are a function of what the
 * mechanism releases (the integer), never of the statistics and the noise apart. */
static double released(const agg_linucb *p, size_t idx)
{
    if (p->cfg.exact)
        return (double)(p->Mq[idx] + p->nsumq[idx]) * p->c.grid;
    return p->M[idx] + (noisy(p) ? p->nsum[idx] : 0.0);
}

/* The Wishart grid release's samplers (docs/privacy.md sec. 10.3), from the secure stream's
 * 53-bit uniforms: Box-Muller normals (the inputs of log, cos and sin are exact dyadic
 * rationals, so each output is a few ulps from the exact function of the same uniforms) and
 * Marsaglia & Tsang's (2000) chi-square from them. Not GSL's Ziggurat: its abscissa has 24 bits
 * (about 2^-22 absolute), far coarser than the sampler assumption of sec. 10.3 allows. */
typedef struct hr_src {
    agg_noise *n;
    double spare;
    int has;
} hr_src;

static double hr_normal(hr_src *s)
{
    if (s->has) {
        s->has = 0;
        return s->spare;
    }
    double u1 = agg_noise_uniform_pos(s->n), u2 = agg_noise_uniform_pos(s->n);
    double r = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
    s->spare = r * sin(a);
    s->has = 1;
    return r * cos(a);
}

/* chi^2_nu = 2 Gamma(nu / 2), nu >= 2 (shape >= 1: no boosting needed) */
static double hr_chisq(hr_src *s, double nu)
{
    const double dd = 0.5 * nu - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * dd);
    for (;;) {
        double x = hr_normal(s), v = 1.0 + c * x;
        if (v <= 0.0)
            continue;
        v = v * v * v;
        double u = agg_noise_uniform_pos(s->n);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + dd * (1.0 - v + log(v)))
            return 2.0 * dd * v;
    }
}

/* One W_p(Ltilde^2 I, k) sample by the Bartlett decomposition (as draw_node), redrawn while an
 * entry passes the tail bound T Ltilde^2 (or is not finite). The test looks at the sample only,
 * never at the data, so the redraw conditions the noise on an event of probability at least
 * 1 - p e^-100, data-independent; the release's law moves by at most that (counted in
 * delta_grid). Refusing instead would stop the service on an event that reveals nothing. */
static ldpb_err wishart_sample_hr(agg_linucb *p, agg_noise *noise, double *W)
{
    if (agg_noise_get_kind(noise) != AGG_NOISE_SECURE)
        return LDPB_EINVAL;
    const uint32_t q = p->p;
    const double l2 = p->c.Ltilde * p->c.Ltilde;
    const double cap = p->c.wishart_tail * l2 * (1.0 + 0x1p-40);
    hr_src src = {noise, 0.0, 0};
    for (int attempt = 0; attempt < 16; attempt++) {
        double A[(AGG_LINUCB_D_MAX + 1) * (AGG_LINUCB_D_MAX + 1)];
        for (uint32_t i = 0; i < q; i++) {
            for (uint32_t j = 0; j < i; j++)
                A[i * q + j] = hr_normal(&src);
            A[i * q + i] = sqrt(hr_chisq(&src, p->c.k - (double)i));
        }
        int ok = 1;
        for (uint32_t i = 0; i < q; i++)
            for (uint32_t j = 0; j <= i; j++) {
                double acc = 0.0;
                for (uint32_t r = 0; r <= j; r++)
                    acc += A[i * q + r] * A[j * q + r];
                W[i * q + j] = W[j * q + i] = l2 * acc;
                ok &= fabs(W[i * q + j]) <= cap; /* false for NaN */
            }
        if (ok)
            return LDPB_OK;
    }
    return LDPB_ESTATE;
}

/* floor(a / 2^j) for j in [0, 62], without relying on the sign of a right shift */
static int64_t floor_div_pow2(int64_t a, int j)
{
    int64_t d = (int64_t)1 << j, qt = a / d;
    return (a % d < 0) ? qt - 1 : qt;
}

/* R = the nearest multiple of the grid g to A gd + w (ties up), in units g, computed exactly:
 * w / gd is an exact scaling, its floor and fraction are exact, and the rest is integer. A is
 * the node's data sum in units gd = vgrid^2, g = 2^j gd. */
static int64_t grid_round(const agg_linucb *p, int64_t A, double w)
{
    const double gd = p->c.vgrid * p->c.vgrid, s = w / gd, fl = floor(s), f = s - fl;
    int j;
    frexp(p->c.grid / gd, &j);
    j -= 1;
    int64_t X = A + (int64_t)fl;
    if (j == 0)
        return X + (f >= 0.5);
    int64_t Q = floor_div_pow2(X, j), rem = X - Q * ((int64_t)1 << j);
    int64_t half = (int64_t)1 << (j - 1);
    return Q + (rem >= half); /* rem + f >= half: f < 1 cannot lift rem < half past it */
}

/* The Wishart grid release of level l: a fresh sample added to the level's node data sum and
 * rounded to the grid, replacing the level's released node in the running sum. */
static ldpb_err wgrid_set_level(agg_linucb *p, agg_noise *noise, uint32_t l)
{
    const size_t pp = (size_t)p->p * p->p;
    double W[(AGG_LINUCB_D_MAX + 1) * (AGG_LINUCB_D_MAX + 1)];
    ldpb_err err = wishart_sample_hr(p, noise, W);
    if (err)
        return err;
    for (size_t i = 0; i < pp; i++) {
        int64_t r = grid_round(p, p->Aq[l * pp + i], W[i]);
        p->nsumq[i] += r - p->slotq[l * pp + i];
        p->slotq[l * pp + i] = r;
    }
    return LDPB_OK;
}

/* Draws the sample of level l (or clears it, fresh = 0) and updates the running sum. */
static ldpb_err set_slot(agg_linucb *p, agg_noise *noise, uint32_t l, int fresh)
{
    size_t pp = (size_t)p->p * p->p;
    ldpb_err err = LDPB_OK;
    if (wgrid(p))
        return wgrid_set_level(p, noise, l); /* the padded tree: every level is fresh */
    if (p->cfg.exact) {
        int64_t nq[(AGG_LINUCB_D_MAX + 1) * (AGG_LINUCB_D_MAX + 1)];
        if (fresh)
            err = draw_node_exact(p, noise, nq);
        else
            memset(nq, 0, pp * sizeof *nq);
        for (size_t i = 0; err == LDPB_OK && i < pp; i++) {
            p->nsumq[i] += nq[i] - p->slotq[l * pp + i];
            p->slotq[l * pp + i] = nq[i];
        }
        return err;
    }
    double nd[(AGG_LINUCB_D_MAX + 1) * (AGG_LINUCB_D_MAX + 1)];
    if (fresh)
        err = draw_node(p, noise, nd);
    else
        memset(nd, 0, pp * sizeof *nd);
    double *slot = p->slots + l * pp;
    for (size_t i = 0; err == LDPB_OK && i < pp; i++) {
        p->nsum[i] += nd[i] - slot[i];
        slot[i] = nd[i];
    }
    return err;
}

/* The padded tree's data-free samples of the empty prefix. The binary tree's empty prefix has
 * no node and no noise: its slots stay zero. */
static ldpb_err prime(agg_linucb *p, agg_policy_env *env)
{
    if (p->primed || !noisy(p))
        return LDPB_OK;
    if (p->c.tree == AGG_LINUCB_TREE_BINARY) {
        p->primed = 1;
        return LDPB_OK;
    }
    if (!env || !env->noise)
        return LDPB_EINVAL;
    for (uint32_t l = 0; l < p->c.m; l++) {
        ldpb_err err = set_slot(p, env->noise, l, 1);
        if (err)
            return err;
    }
    sum_slots(p);
    p->primed = 1;
    return LDPB_OK;
}

/* Builds V = M_dd + N_dd + shift I and u = M_d,d + N_d,d, factorises V (lower Cholesky in V),
 * and returns ln det V. A failure is counted and repaired with the smallest ridge that makes V
 * positive definite (SS18 bound the probability; the repair keeps the policy running). */
static ldpb_err factor(agg_linucb *p, agg_policy_env *env, double *logdet)
{
    ldpb_err err = prime(p, env);
    if (err)
        return err;
    const uint32_t d = p->d, q = p->p;
    for (uint32_t i = 0; i < d; i++) {
        for (uint32_t j = 0; j < d; j++)
            p->V[i * d + j] = released(p, (size_t)i * q + j);
        p->V[i * d + i] += p->c.shift;
        p->u[i] = released(p, (size_t)i * q + d);
    }
    memcpy(p->vcopy, p->V, (size_t)d * d * sizeof *p->V);
    int st = agg_linucb_cholesky(p->V, d);
    if (st != 0) {
        p->failures++;
        gsl_matrix_view cv = gsl_matrix_view_array(p->vcopy, d, d);
        gsl_vector_view ev = gsl_vector_view_array(p->evals, d);
        double lo = 0.0, scale = 0.0;
        for (uint32_t i = 0; i < d; i++)
            scale = fmax(scale, fabs(p->vcopy[i * d + i]));
        /* eigen_symm destroys its input: keep the matrix for the retries */
        double keep[AGG_LINUCB_D_MAX * AGG_LINUCB_D_MAX];
        memcpy(keep, p->vcopy, (size_t)d * d * sizeof *keep);
        if (gsl_eigen_symm(&cv.matrix, &ev.vector, p->eig) != GSL_SUCCESS)
            return LDPB_ESTATE;
        lo = p->evals[0];
        for (uint32_t i = 1; i < d; i++)
            lo = fmin(lo, p->evals[i]);
        double ridge = (lo < 0.0 ? -lo : 0.0) + 1e-9 * (scale > 1.0 ? scale : 1.0);
        for (int attempt = 0; attempt < 60; attempt++) {
            memcpy(p->V, keep, (size_t)d * d * sizeof *keep);
            for (uint32_t i = 0; i < d; i++)
                p->V[i * d + i] += ridge;
            if (agg_linucb_cholesky(p->V, d) == 0) {
                st = 0;
                break;
            }
            ridge *= 2.0;
        }
        if (st != 0)
            return LDPB_ESTATE;
    }
    *logdet = ldpb_linalg_chol_solve(p->V, d, p->u, p->inv_diag, p->w, p->theta);
    return LDPB_OK;
}

/* The Wishart grid release's data: v randomly rounded to the grid h = vgrid (unbiased per
 * coordinate, coins from the noise source), then kept within the norm bound exactly: if the
 * rounded vector passes ||v^|| <= Ltilde (checked in integers against Ltilde^2 / h^2, an exact
 * scaling), each coordinate is truncated toward zero instead (||v^|| <= ||v||), and the largest
 * is then stepped toward zero while the bound still fails (the clip is computed in floating
 * point). The node that completes at this round (level top, the number of trailing ones of t)
 * takes the datum and merges the levels below it: its data sum is v^ v^^T plus theirs, in
 * integers (units h^2), and theirs are cleared. Sheffet's mechanism then sees data whose
 * neighbours differ by one rank-one v^ v^^T with ||v^|| <= Ltilde, as its proof requires. */
static ldpb_err wgrid_add(agg_linucb *p, agg_noise *noise, const double *v)
{
    const uint32_t q = p->p;
    const size_t pp = (size_t)q * q;
    const double h = p->c.vgrid, lim = p->c.Ltilde * p->c.Ltilde / (h * h);
    int64_t vq[AGG_LINUCB_D_MAX + 1], n2 = 0;
    for (uint32_t i = 0; i < q; i++) {
        ldpb_err err = agg_noise_round(noise, v[i] / h, &vq[i]);
        if (err)
            return err;
        n2 += vq[i] * vq[i];
    }
    if ((double)n2 > lim) {
        n2 = 0;
        for (uint32_t i = 0; i < q; i++) {
            vq[i] = (int64_t)trunc(v[i] / h);
            n2 += vq[i] * vq[i];
        }
    }
    while ((double)n2 > lim) {
        uint32_t big = 0;
        for (uint32_t i = 1; i < q; i++)
            if (llabs(vq[i]) > llabs(vq[big]))
                big = i;
        n2 -= 2 * llabs(vq[big]) - 1;
        vq[big] += vq[big] > 0 ? -1 : 1;
    }
    uint32_t top = 0;
    while (top < p->c.m && ((p->t >> top) & 1u))
        top++;
    int64_t *node = p->Aq + (size_t)top * pp;
    for (uint32_t i = 0; i < q; i++)
        for (uint32_t j = 0; j < q; j++)
            node[i * q + j] = vq[i] * vq[j];
    for (uint32_t l = 0; l < top; l++)
        for (size_t i = 0; i < pp; i++) {
            node[i] += p->Aq[l * pp + i];
            p->Aq[l * pp + i] = 0;
        }
    return LDPB_OK;
}

static ldpb_err check_action(const agg_linucb *p, const double *x)
{
    double n2 = 0.0;
    for (uint32_t j = 0; j < p->d; j++) {
        if (!isfinite(x[j]))
            return LDPB_EINVAL;
        n2 += x[j] * x[j];
    }
    double lim = p->cfg.L * (1.0 + 1e-9);
    return n2 <= lim * lim ? LDPB_OK : LDPB_ERANGE;
}

ldpb_err agg_linucb_choose(agg_linucb *p, agg_policy_env *env, const double *x, uint32_t n,
                           uint32_t *arm, uint32_t *ties)
{
    if (!p || !env || !env->rand || !x || !arm)
        return LDPB_EINVAL;
    if (n < 1 || n > AGG_LINUCB_ACTIONS_MAX)
        return LDPB_ERANGE;
    const uint32_t d = p->d;
    for (uint32_t a = 0; a < n; a++) {
        ldpb_err err = check_action(p, x + (size_t)a * d);
        if (err)
            return err;
    }
    double logdet;
    ldpb_err err = factor(p, env, &logdet);
    if (err)
        return err;
    double beta = agg_linucb_beta(p->cfg.sigma, p->c.alpha, d, logdet, p->c.rho_min, p->c.rho_max,
                                  p->cfg.S, p->c.gamma);
    agg_argmax am;
    agg_argmax_init(&am);
    for (uint32_t a = 0; a < n; a++) {
        double idx =
            ldpb_linalg_ucb_index(p->V, p->inv_diag, p->theta, beta, x + (size_t)a * d, d, p->w);
        if (isnan(idx))
            return LDPB_ESTATE;
        agg_argmax_offer(&am, a, idx, env->rand);
    }
    *arm = am.arm;
    if (ties)
        *ties = am.ties;
    return LDPB_OK;
}

ldpb_err agg_linucb_observe(agg_linucb *p, agg_policy_env *env, const double *x_arm, double y)
{
    if (!p || !x_arm || !isfinite(y))
        return LDPB_EINVAL;
    ldpb_err err = check_action(p, x_arm);
    if (err)
        return err;
    if (p->t >= p->cfg.horizon)
        return LDPB_ESTATE;
    err = prime(p, env);
    if (err)
        return err;
    if (noisy(p) && (!env || !env->noise))
        return LDPB_EINVAL;
    if (p->cfg.exact && agg_noise_get_kind(env->noise) != AGG_NOISE_SECURE)
        return LDPB_EINVAL; /* the exact sampler draws from the secure stream only */
    const uint32_t d = p->d, q = p->p;
    double v[AGG_LINUCB_D_MAX + 1];
    double n2 = 0.0;
    for (uint32_t j = 0; j < d; j++) {
        v[j] = x_arm[j];
        n2 += v[j] * v[j];
    }
    if (p->cfg.variant != AGG_LINUCB_PLAIN) {
        double room = p->c.Ltilde * p->c.Ltilde - n2;
        double lim = room > 0.0 ? sqrt(room) : 0.0;
        y = y > lim ? lim : (y < -lim ? -lim : y);
    }
    v[d] = y;
    if (wgrid(p)) {
        if ((err = wgrid_add(p, env->noise, v)) != LDPB_OK)
            return err;
    } else if (p->cfg.exact) {
        /* each entry v_i v_j / g (exact division by a power of two) randomly rounded, |.| <=
         * Ltilde^2 / g < 2^62; the sums stay below 2^61 (constants_of checks the horizon) */
        for (uint32_t i = 0; i < q; i++)
            for (uint32_t j = i; j < q; j++) {
                int64_t w;
                err = agg_noise_round(env->noise, v[i] * v[j] / p->c.grid, &w);
                if (err)
                    return err;
                p->Mq[i * q + j] += w;
                p->Mq[j * q + i] = p->Mq[i * q + j];
            }
    } else {
        for (uint32_t i = 0; i < q; i++)
            for (uint32_t j = 0; j < q; j++)
                p->M[i * q + j] += v[i] * v[j];
    }
    /* levels 0..top change: top is completed (its bit is set in t + 1), the ones below merge
     * into it (their bits clear) */
    uint64_t changed = p->t ^ (p->t + 1);
    if (noisy(p)) {
        const int binary = p->c.tree == AGG_LINUCB_TREE_BINARY;
        for (uint32_t l = 0; l < p->c.m && (changed >> l); l++) {
            const int completed = ((p->t + 1) >> l) & 1u;
            if ((err = set_slot(p, env->noise, l, completed || !binary)) != LDPB_OK)
                return err;
        }
        /* the running sum is exact up to rounding; a full recount every 4096 rounds keeps the
         * rounding from accumulating (the slots' entries reach Ltilde^2 m k). The binary tree
         * recounts every round (m (d+1)^2 additions), so a release is exactly its nodes' sum. */
        if (binary || changed >> 12)
            sum_slots(p);
    }
    p->t++;
    return LDPB_OK;
}

ldpb_err agg_linucb_release(agg_linucb *p, agg_policy_env *env, double *v, double *u)
{
    if (!p || !v || !u)
        return LDPB_EINVAL;
    const uint32_t d = p->d, q = p->p;
    ldpb_err err = prime(p, env);
    if (err)
        return err;
    for (uint32_t i = 0; i < d; i++) {
        for (uint32_t j = 0; j < d; j++)
            v[i * d + j] = released(p, (size_t)i * q + j);
        v[i * d + i] += p->c.shift;
        u[i] = released(p, (size_t)i * q + d);
    }
    return LDPB_OK;
}

ldpb_err agg_linucb_noise_sum(agg_linucb *p, agg_policy_env *env, double *out)
{
    if (!p || !out)
        return LDPB_EINVAL;
    ldpb_err err = prime(p, env);
    if (err)
        return err;
    size_t pp = (size_t)p->p * p->p;
    if (p->cfg.exact)
        for (size_t i = 0; i < pp; i++)
            out[i] = (double)p->nsumq[i] * p->c.grid;
    else if (noisy(p))
        memcpy(out, p->nsum, pp * sizeof *out);
    else
        memset(out, 0, pp * sizeof *out);
    return LDPB_OK;
}

static void put_header(agg_wbuf *w, const agg_linucb *p)
{
    const agg_linucb_config *c = &p->cfg;
    agg_put_u8(w, 'L');
    agg_put_u8(w, 'C');
    agg_put_u8(w, 'S');
    agg_put_u8(w, 'T');
    agg_put_u8(w, STATE_VERSION);
    agg_put_u32(w, (uint32_t)c->variant);
    agg_put_u32(w, c->d);
    agg_put_u64(w, c->horizon);
    agg_put_u32(w, (uint32_t)(c->zero_noise != 0));
    agg_put_u32(w, (uint32_t)p->c.tree);
    agg_put_u32(w, (uint32_t)(c->exact != 0));
    const double f[] = {c->epsilon, c->delta, c->alpha, c->L, c->Ltilde, c->S, c->sigma, c->rho};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        agg_put_f64(w, f[i]);
}

ldpb_err agg_linucb_save(const agg_linucb *p, uint8_t *buf, size_t cap, size_t *len)
{
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    put_header(&w, p);
    size_t pp = (size_t)p->p * p->p;
    agg_put_u64(&w, p->t);
    agg_put_u8(&w, (uint8_t)p->primed);
    agg_put_u64(&w, p->failures);
    for (size_t i = 0; i < pp; i++)
        agg_put_f64(&w, p->M[i]);
    for (size_t i = 0; i < pp * p->c.m; i++)
        agg_put_f64(&w, p->slots[i]);
    for (size_t i = 0; p->cfg.exact && i < pp; i++)
        agg_put_u64(&w, (uint64_t)p->Mq[i]);
    for (size_t i = 0; p->cfg.exact && i < pp * p->c.m; i++)
        agg_put_u64(&w, (uint64_t)p->slotq[i]);
    for (size_t i = 0; wgrid(p) && i < pp * p->c.m; i++)
        agg_put_u64(&w, (uint64_t)p->Aq[i]);
    return agg_wbuf_finish(&w, len);
}

/* 1 if a and b were made with the same configuration: their state headers agree byte for byte. */
static int same_config(const agg_linucb *a, const agg_linucb *b)
{
    uint8_t ha[128], hb[128];
    agg_wbuf wa, wb;
    agg_wbuf_init(&wa, ha, sizeof ha);
    agg_wbuf_init(&wb, hb, sizeof hb);
    put_header(&wa, a);
    put_header(&wb, b);
    return wa.len <= sizeof ha && wa.len == wb.len && memcmp(ha, hb, wa.len) == 0;
}

ldpb_err agg_linucb_merge(agg_linucb *dst, const agg_linucb *src)
{
    if (!dst || !src || !same_config(dst, src))
        return LDPB_EINVAL;
    /* the noisy variants' state holds a noise tree indexed by the round: no sum of two */
    if (dst->cfg.variant != AGG_LINUCB_PLAIN)
        return LDPB_ENOTSUP;
    const size_t pp = (size_t)dst->p * dst->p;
    if (src->t > dst->cfg.horizon - dst->t)
        return LDPB_ERANGE; /* restore refuses more rounds than the horizon */
    for (size_t i = 0; i < pp; i++)
        if (!isfinite(dst->M[i] + src->M[i]))
            return LDPB_ERANGE;
    for (size_t i = 0; i < pp; i++)
        dst->M[i] += src->M[i];
    dst->t += src->t;
    dst->primed |= src->primed;
    dst->failures += src->failures;
    /* choose() factorises V from M on every call: no cached factor to recompute here */
    return LDPB_OK;
}

/* An exact state's integers, from untrusted bytes: the float arrays unused (zero), the sums
 * symmetric and within t rounded data (so later sums cannot overflow), every noise entry inside
 * the sampler's support |Z| < 2^62 / (floor(sqrt(2N)) + 1) <= 2^62 / (floor(sqrt(N)) + 1), and
 * the binary tree's empty levels zero (checked by the caller for the slots). */
static int exact_state_bad(const agg_linucb *p, uint64_t t, const double *M, const double *slots,
                           const int64_t *Mq, const int64_t *slotq)
{
    const uint32_t q = p->p;
    const size_t pp = (size_t)q * q, ns = pp * p->c.m;
    const double lt2e = p->c.Ltilde * p->c.Ltilde * (1.0 + 0x1p-40);
    const double cap = (double)t * (ceil(lt2e / p->c.grid) + 1.0);
    const double zcap = 0x1p62 / (floor(sqrt((double)p->c.sigma2_units)) + 1.0);
    for (size_t i = 0; i < pp; i++)
        if (M[i] != 0.0 || Mq[i] != Mq[(i % q) * q + i / q] || !(fabs((double)Mq[i]) <= cap))
            return 1;
    for (size_t i = 0; i < ns; i++)
        if (slots[i] != 0.0 || !(fabs((double)slotq[i]) < zcap) ||
            slotq[i] != slotq[(i / pp) * pp + (i % pp % q) * q + (i % pp) / q])
            return 1;
    if (p->c.tree == AGG_LINUCB_TREE_BINARY)
        for (uint32_t l = 0; l < p->c.m; l++)
            for (size_t i = 0; !((t >> l) & 1u) && i < pp; i++)
                if (slotq[l * pp + i] != 0)
                    return 1;
    return 0;
}

/* A Wishart grid state's integers, from untrusted bytes: the float arrays and Mq unused (zero);
 * each level's node data sum symmetric, zero while its bit of t is clear, and within the 2^l
 * data of unit-bounded norm a node of level l holds (|A_ij| <= 2^l Ltilde^2 / h^2, A_ii >= 0);
 * each released node symmetric and within one grid step plus the tail bound T Ltilde^2 of its
 * data sum (so later sums cannot overflow). */
static int wgrid_state_bad(const agg_linucb *p, uint64_t t, const double *M, const double *slots,
                           const int64_t *Mq, const int64_t *slotq, const int64_t *Aq)
{
    const uint32_t q = p->p;
    const size_t pp = (size_t)q * q;
    const double gd = p->c.vgrid * p->c.vgrid, lt2 = p->c.Ltilde * p->c.Ltilde;
    const double wcap = p->c.wishart_tail * lt2 * (1.0 + 0x1p-40) / p->c.grid + 2.0;
    for (size_t i = 0; i < pp; i++)
        if (M[i] != 0.0 || Mq[i] != 0)
            return 1;
    for (uint32_t l = 0; l < p->c.m; l++) {
        const int set = (t >> l) & 1u;
        const double acap = ldexp(lt2 / gd, (int)l);
        for (size_t i = 0; i < pp; i++) {
            const size_t a = l * pp + i, b = l * pp + (i % q) * q + i / q;
            const double A = (double)Aq[a];
            if (slots[a] != 0.0 || Aq[a] != Aq[b] || slotq[a] != slotq[b] || (!set && Aq[a] != 0) ||
                !(fabs(A) <= acap) || (i % (q + 1) == 0 && A < 0.0) ||
                !(fabs((double)slotq[a] - A * gd / p->c.grid) <= wcap))
                return 1;
        }
    }
    return 0;
}

ldpb_err agg_linucb_restore(agg_linucb *p, const uint8_t *buf, size_t len)
{
    if (!p || !buf)
        return LDPB_EINVAL;
    /* the header must be byte-identical to this configuration's */
    agg_wbuf hw;
    uint8_t hdr[128];
    agg_wbuf_init(&hw, hdr, sizeof hdr);
    put_header(&hw, p);
    if (hw.len > sizeof hdr || len < hw.len || memcmp(buf, hdr, hw.len) != 0)
        return LDPB_ECORRUPT;
    agg_rbuf r;
    agg_rbuf_init(&r, buf + hw.len, len - hw.len);
    size_t pp = (size_t)p->p * p->p, ns = pp * p->c.m;
    uint64_t t = agg_get_u64(&r);
    uint8_t primed = agg_get_u8(&r);
    uint64_t failures = agg_get_u64(&r);
    double *M = malloc(pp * sizeof *M), *slots = malloc(ns * sizeof *slots);
    int64_t *Mq = calloc(pp, sizeof *Mq), *slotq = calloc(ns, sizeof *slotq);
    int64_t *Aq = calloc(ns, sizeof *Aq);
    ldpb_err err = LDPB_ECORRUPT;
    if (!M || !slots || !Mq || !slotq || !Aq) {
        err = LDPB_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < pp; i++)
        M[i] = agg_get_f64(&r);
    for (size_t i = 0; i < ns; i++)
        slots[i] = agg_get_f64(&r);
    for (size_t i = 0; p->cfg.exact && i < pp; i++)
        Mq[i] = (int64_t)agg_get_u64(&r);
    for (size_t i = 0; p->cfg.exact && i < ns; i++)
        slotq[i] = (int64_t)agg_get_u64(&r);
    for (size_t i = 0; wgrid(p) && i < ns; i++)
        Aq[i] = (int64_t)agg_get_u64(&r);
    if (!agg_rbuf_done(&r) || t > p->cfg.horizon || primed > 1)
        goto done;
    if (wgrid(p) ? wgrid_state_bad(p, t, M, slots, Mq, slotq, Aq)
                 : (p->cfg.exact && exact_state_bad(p, t, M, slots, Mq, slotq)))
        goto done;
    for (size_t i = 0; i < pp; i++)
        if (!isfinite(M[i]))
            goto done;
    /* a JDP variant's statistics are sums of t clipped outer products: |M_ij| <= t Ltilde^2,
     * M_ii >= 0 (the slack covers the rounding of t additions) */
    if (p->cfg.variant != AGG_LINUCB_PLAIN && !p->cfg.exact) {
        double lim = (double)t * p->c.Ltilde * p->c.Ltilde * (1.0 + 1e-9 + (double)t * 0x1p-52);
        for (size_t i = 0; i < pp; i++)
            if (!(fabs(M[i]) <= lim) || (i % (p->p + 1) == 0 && M[i] < 0.0))
                goto done;
    }
    for (size_t i = 0; i < ns; i++)
        if (!isfinite(slots[i]))
            goto done;
    /* the binary tree has no noise at a level without a node */
    if (p->c.tree == AGG_LINUCB_TREE_BINARY)
        for (uint32_t l = 0; l < p->c.m; l++)
            for (size_t i = 0; !((t >> l) & 1u) && i < pp; i++)
                if (slots[l * pp + i] != 0.0)
                    goto done;
    memcpy(p->M, M, pp * sizeof *M);
    memcpy(p->slots, slots, ns * sizeof *slots);
    if (p->cfg.exact) {
        memcpy(p->Mq, Mq, pp * sizeof *Mq);
        memcpy(p->slotq, slotq, ns * sizeof *slotq);
    }
    if (wgrid(p))
        memcpy(p->Aq, Aq, ns * sizeof *Aq);
    p->t = t;
    p->primed = primed;
    p->failures = failures;
    sum_slots(p);
    err = LDPB_OK;
done:
    free(M);
    free(slots);
    free(Mq);
    free(slotq);
    free(Aq);
    return err;
}
