/* The aggregator's side of the local contextual mode: see ldp_linucb.h. */
#include "ldp_linucb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxmodel.h"
#include "linucb.h"
#include "statefmt.h"

#define STATE_VERSION 1
#define NAME          "ldp-linucb-gaussian"

/* Exactness. Every admissible report is a multiple of the mechanism's grid step g = 2^-k
 * (ldpb_ctxstat_check), so z / g is an integer, obtained exactly (a power-of-two scaling). The
 * sum is kept as one int64 per packed entry in grid units: integer addition is exact and
 * associative, so the released sum is the same bit for bit whatever the order reports arrive
 * in, and a saved state restores to the same sum. Compensated floating-point summation would
 * only be approximately exact and order dependent. Overflow is excluded by construction: a
 * report's entry is at most units_max grid steps in magnitude (the admissible range of
 * ldpb_ctxstat_check), and the configuration refuses a horizon above INT64_MAX / units_max. The
 * only rounding left is the conversion of the final sum to a double for the model. */
struct agg_ldp_linucb {
    agg_ldp_linucb_config cfg;
    ldpb_ctxstat *mech;
    ldpb_ctxmodel *model; /* to compute ln det V of the model handed out */
    size_t nv;            /* packed values per report */
    double grid, sigma;
    int64_t units_max; /* largest |entry| of an admissible report, in grid units */
    double admit;      /* > 0: agg_ldp_linucb_new_admitting's bound in place of the check's */
    uint64_t n;        /* reports summed */
    uint64_t repairs;  /* models whose V needed the ctxmodel ridge */
    int64_t units[LDPB_CTXSTAT_VALUES_MAX];
    /* Tests only (agg_ldp_linucb_new_noiseless): unprivatized reports, summed as doubles, and
     * LinUCB's regulariser rho. */
    int noiseless;
    double rho;
    double exact[LDPB_CTXSTAT_VALUES_MAX];
};

void agg_ldp_linucb_config_init(agg_ldp_linucb_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->epsilon = 1.0;
    cfg->delta = 1e-6;
    cfg->feature_norm = 1.0;
    cfg->reward_bound = 1.0;
    cfg->theta_norm = 1.0;
    cfg->noise_sigma = 1.0;
    cfg->alpha = 0.01;
}

static int pos_finite(double v)
{
    return v > 0.0 && isfinite(v);
}

static ldpb_err check_config(const agg_ldp_linucb_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    if (!cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": NULL configuration");
    if (cfg->d < 1 || cfg->d > LDPB_CTXSTAT_D_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": d %u outside [1, %u]", cfg->d,
                                 LDPB_CTXSTAT_D_MAX);
    /* the device mechanism's ranges (ldpb/ctxstat.h), checked here to name the field */
    const struct {
        const char *field;
        double value, min, max;
        const char *range;
    } f[] = {
        {"epsilon", cfg->epsilon, LDPB_CTXSTAT_EPSILON_MIN, LDPB_EPSILON_MAX, "[0.0001, 10]"},
        {"delta", cfg->delta, 0.0, LDPB_CTXSTAT_DELTA_MAX, "(0, 0.1]"},
        {"L (feature_norm)", cfg->feature_norm, LDPB_CTXSTAT_BOUND_MIN, LDPB_CTXSTAT_BOUND_MAX,
         "[1e-06, 1e+06]"},
        {"B (reward_bound)", cfg->reward_bound, LDPB_CTXSTAT_BOUND_MIN, LDPB_CTXSTAT_BOUND_MAX,
         "[1e-06, 1e+06]"},
        {"S (theta_norm)", cfg->theta_norm, 0.0, INFINITY, "(0, inf)"},
        {"sigma (noise_sigma)", cfg->noise_sigma, 0.0, INFINITY, "(0, inf)"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (isnan(f[i].value))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": %s is NaN", f[i].field);
        if (!(pos_finite(f[i].value) && f[i].value >= f[i].min && f[i].value <= f[i].max))
            return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": %s %g outside %s", f[i].field,
                                     f[i].value, f[i].range);
    }
    if (isnan(cfg->alpha))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": alpha is NaN");
    if (!(cfg->alpha > 0.0 && cfg->alpha < 1.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": alpha %g outside (0, 1)", cfg->alpha);
    if (cfg->horizon < 1)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": horizon 0 (at least 1 report)");
    return LDPB_OK;
}

void agg_ldp_linucb_free(agg_ldp_linucb *p)
{
    if (!p)
        return;
    ldpb_ctxstat_free(p->mech);
    ldpb_ctxmodel_free(p->model);
    free(p);
}

static ldpb_err build(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg, double admit,
                      char errmsg[AGG_ERRMSG_MAX])
{
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, NAME ": NULL output");
    *out = NULL;
    ldpb_err err = check_config(cfg, errmsg);
    if (err)
        return err;
    agg_ldp_linucb *p = calloc(1, sizeof *p);
    if (!p)
        return LDPB_ENOMEM;
    p->cfg = *cfg;
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, cfg->d, cfg->epsilon, cfg->delta);
    o.kind = LDPB_CTXSTAT_GAUSSIAN;
    o.feature_norm = cfg->feature_norm;
    o.reward_bound = cfg->reward_bound;
    err = ldpb_ctxstat_new(&p->mech, &o);
    if (err) {
        agg_policy_refuse(errmsg, err, NAME ": the device mechanism refuses the configuration: %s",
                          ldpb_strerror(err));
        goto fail;
    }
    err = ldpb_ctxmodel_new(&p->model, cfg->d);
    if (err)
        goto fail;
    p->nv = ldpb_ctxstat_values(p->mech);
    p->grid = ldpb_ctxstat_grid(p->mech);
    p->sigma = ldpb_ctxstat_sigma(p->mech);
    /* the device mechanism's own admission bound, so the two can never disagree */
    const double limit = ldpb_ctxstat_limit(p->mech);
    if (admit > 0.0 && !(isfinite(admit) && admit >= limit)) {
        err = agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": admission bound %g below %g", admit,
                                limit);
        goto fail;
    }
    p->admit = admit;
    double um = floor((admit > 0.0 ? admit : limit) / p->grid) + 1.0;
    if (!(um >= 1.0 && um < 0x1p62)) {
        err = agg_policy_refuse(errmsg, LDPB_ERANGE,
                                NAME ": a report spans %g grid steps (L, B too large for the "
                                     "grid)",
                                um);
        goto fail;
    }
    p->units_max = (int64_t)um;
    uint64_t hmax = (uint64_t)(INT64_MAX / p->units_max);
    if (cfg->horizon > hmax) {
        err = agg_policy_refuse(errmsg, LDPB_ERANGE,
                                NAME ": horizon %llu above %llu (the exact sum of that many "
                                     "reports must fit 63 bits of grid steps)",
                                (unsigned long long)cfg->horizon, (unsigned long long)hmax);
        goto fail;
    }
    *out = p;
    return LDPB_OK;
fail:
    agg_ldp_linucb_free(p);
    return err;
}

ldpb_err agg_ldp_linucb_new(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                            char errmsg[AGG_ERRMSG_MAX])
{
    return build(out, cfg, 0.0, errmsg);
}

ldpb_err agg_ldp_linucb_new_admitting(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                                      double admit, char errmsg[AGG_ERRMSG_MAX])
{
    if (!(admit > 0.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": admission bound %g not > 0", admit);
    return build(out, cfg, admit, errmsg);
}

ldpb_err agg_ldp_linucb_new_noiseless(agg_ldp_linucb **out, const agg_ldp_linucb_config *cfg,
                                      double rho, char errmsg[AGG_ERRMSG_MAX])
{
    if (!pos_finite(rho))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, NAME ": rho %g must be finite and > 0", rho);
    ldpb_err err = build(out, cfg, 0.0, errmsg);
    if (err)
        return err;
    (*out)->noiseless = 1;
    (*out)->rho = rho;
    return LDPB_OK;
}

const agg_ldp_linucb_config *agg_ldp_linucb_get_config(const agg_ldp_linucb *p)
{
    return &p->cfg;
}

const ldpb_ctxstat *agg_ldp_linucb_mech(const agg_ldp_linucb *p)
{
    return p->mech;
}

uint64_t agg_ldp_linucb_reports(const agg_ldp_linucb *p)
{
    return p->n;
}

uint64_t agg_ldp_linucb_repairs(const agg_ldp_linucb *p)
{
    return p->repairs;
}

ldpb_err agg_ldp_linucb_add(agg_ldp_linucb *p, const double *z, size_t n)
{
    if (!p || !z)
        return LDPB_EINVAL;
    if (p->n >= p->cfg.horizon)
        return LDPB_ESTATE;
    if (p->noiseless) {
        if (n != p->nv)
            return LDPB_EPROTO;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(z[i]))
                return LDPB_EPROTO;
        for (size_t i = 0; i < n; i++)
            p->exact[i] += z[i];
        p->n++;
        return LDPB_OK;
    }
    ldpb_err err = p->admit > 0.0 ? (n == p->nv ? LDPB_OK : LDPB_EPROTO)
                                  : ldpb_ctxstat_check(p->mech, z, n, NULL);
    if (err)
        return err;
    int64_t u[LDPB_CTXSTAT_VALUES_MAX];
    for (size_t i = 0; i < n; i++) {
        double s = z[i] / p->grid; /* exact: a power-of-two scaling of a grid multiple */
        /* after the mechanism's check this refuses nothing and only keeps the sum exact
         * regardless; with a bound of agg_ldp_linucb_new_admitting it is the whole check (NaN
         * and the infinities fail the comparison) */
        if (!(fabs(s) <= (double)p->units_max) || s != floor(s) ||
            (p->admit > 0.0 && !(fabs(z[i]) <= p->admit)))
            return LDPB_EPROTO;
        u[i] = (int64_t)s;
    }
    for (size_t i = 0; i < n; i++)
        p->units[i] += u[i];
    p->n++;
    return LDPB_OK;
}

ldpb_err agg_ldp_linucb_bounds_at(const agg_ldp_linucb *p, uint64_t n, agg_ldp_linucb_bounds *b)
{
    if (!p || !b)
        return LDPB_EINVAL;
    memset(b, 0, sizeof *b);
    if (p->noiseless) {
        b->shift = b->rho_min = b->rho_max = b->rho_min_beta = p->rho;
        return LDPB_OK;
    }
    const agg_ldp_linucb_config *c = &p->cfg;
    /* Per packed entry and report: the discrete Gaussian (sigma-sub-Gaussian) plus the
     * device's unbiased rounding to the grid (within one step: (g/2)-sub-Gaussian), so n
     * reports give an (sd sqrt(n))-sub-Gaussian entry (docs/derivations.md sec. 15). Before
     * the first report there is no noise; the bounds of one report still hold for V = shift I
     * and keep the regulariser positive. */
    b->sd_entry = sqrt(p->sigma * p->sigma + 0.25 * p->grid * p->grid);
    b->count = n > 1 ? (double)n : 1.0;
    const double l2n = log(2.0 * (double)c->horizon / c->alpha);
    agg_linucb_gaussian_bounds(b->sd_entry, b->count, c->d, l2n, &b->upsilon, &b->rho_min,
                               &b->rho_max, &b->gamma);
    b->shift = 2.0 * b->upsilon;
    /* the self-normalised bound of SS18 Prop. 4 is applied with the one regulariser rho_min(1)
     * <= rho_min(n) for every n, so it holds uniformly over the rounds (derivations.md 15) */
    double u1, r1max, g1;
    agg_linucb_gaussian_bounds(b->sd_entry, 1.0, c->d, l2n, &u1, &b->rho_min_beta, &r1max, &g1);
    return LDPB_OK;
}

ldpb_err agg_ldp_linucb_model(agg_ldp_linucb *p, double *stats, double *shift, double *beta)
{
    if (!p || !stats || !shift || !beta)
        return LDPB_EINVAL;
    for (size_t i = 0; i < p->nv; i++)
        stats[i] = p->noiseless ? p->exact[i] : (double)p->units[i] * p->grid;
    agg_ldp_linucb_bounds b;
    ldpb_err err = agg_ldp_linucb_bounds_at(p, p->n, &b);
    if (err)
        return err;
    int repaired = 0;
    err = ldpb_ctxmodel_load(p->model, stats, p->nv, b.shift, 0.0, &repaired);
    if (err)
        return err;
    if (repaired)
        p->repairs++;
    const agg_ldp_linucb_config *c = &p->cfg;
    double bt = agg_linucb_beta(c->noise_sigma, c->alpha, c->d, ldpb_ctxmodel_logdet(p->model),
                                b.rho_min_beta, b.rho_max, c->theta_norm, b.gamma);
    if (!isfinite(bt))
        return LDPB_ESTATE;
    *shift = b.shift;
    *beta = bt;
    return LDPB_OK;
}

static void put_header(agg_wbuf *w, const agg_ldp_linucb *p)
{
    const agg_ldp_linucb_config *c = &p->cfg;
    agg_put_u8(w, 'L');
    agg_put_u8(w, 'D');
    agg_put_u8(w, 'L');
    agg_put_u8(w, 'U');
    agg_put_u8(w, STATE_VERSION);
    agg_put_u32(w, c->d);
    agg_put_u64(w, c->horizon);
    agg_put_u8(w, (uint8_t)p->noiseless);
    /* the grid and sigma too: a sum in grid units means nothing under another calibration */
    const double f[] = {c->epsilon,     c->delta, c->feature_norm, c->reward_bound, c->theta_norm,
                        c->noise_sigma, c->alpha, p->grid,         p->sigma,        p->rho};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        agg_put_f64(w, f[i]);
}

ldpb_err agg_ldp_linucb_save(const agg_ldp_linucb *p, uint8_t *buf, size_t cap, size_t *len)
{
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    put_header(&w, p);
    agg_put_u64(&w, p->n);
    agg_put_u64(&w, p->repairs);
    for (size_t i = 0; i < p->nv; i++) {
        if (p->noiseless)
            agg_put_f64(&w, p->exact[i]);
        else
            agg_put_u64(&w, (uint64_t)p->units[i]);
    }
    return agg_wbuf_finish(&w, len);
}

ldpb_err agg_ldp_linucb_merge(agg_ldp_linucb *dst, const agg_ldp_linucb *src)
{
    if (!dst || !src)
        return LDPB_EINVAL;
    uint8_t ha[128], hb[128];
    agg_wbuf wa, wb;
    agg_wbuf_init(&wa, ha, sizeof ha);
    agg_wbuf_init(&wb, hb, sizeof hb);
    put_header(&wa, dst);
    put_header(&wb, src);
    if (wa.len > sizeof ha || wa.len != wb.len || memcmp(ha, hb, wa.len) != 0 ||
        dst->admit != src->admit || dst->nv != src->nv)
        return LDPB_EINVAL;
    if (src->n > dst->cfg.horizon - dst->n)
        return LDPB_ERANGE; /* restore refuses more reports than the horizon */
    /* each sum stays within n * units_max (restore's bound), so nothing overflows: the horizon
     * bounds n */
    for (size_t i = 0; dst->noiseless && i < dst->nv; i++)
        if (!isfinite(dst->exact[i] + src->exact[i]))
            return LDPB_ERANGE;
    for (size_t i = 0; i < dst->nv; i++) {
        if (dst->noiseless)
            dst->exact[i] += src->exact[i];
        else
            dst->units[i] += src->units[i];
    }
    dst->n += src->n;
    dst->repairs += src->repairs;
    return LDPB_OK;
}

ldpb_err agg_ldp_linucb_restore(agg_ldp_linucb *p, const uint8_t *buf, size_t len)
{
    if (!p || !buf)
        return LDPB_EINVAL;
    agg_wbuf hw;
    uint8_t hdr[128];
    agg_wbuf_init(&hw, hdr, sizeof hdr);
    put_header(&hw, p);
    if (hw.len > sizeof hdr || len < hw.len || memcmp(buf, hdr, hw.len) != 0)
        return LDPB_ECORRUPT;
    agg_rbuf r;
    agg_rbuf_init(&r, buf + hw.len, len - hw.len);
    uint64_t n = agg_get_u64(&r), repairs = agg_get_u64(&r);
    int64_t units[LDPB_CTXSTAT_VALUES_MAX];
    double exact[LDPB_CTXSTAT_VALUES_MAX];
    for (size_t i = 0; i < p->nv; i++) {
        if (p->noiseless)
            exact[i] = agg_get_f64(&r);
        else
            units[i] = (int64_t)agg_get_u64(&r);
    }
    if (!agg_rbuf_done(&r) || n > p->cfg.horizon)
        return LDPB_ECORRUPT;
    /* n admissible reports cannot sum beyond n * units_max steps (no overflow: the horizon
     * bound) */
    const int64_t lim = (int64_t)n * p->units_max;
    for (size_t i = 0; i < p->nv; i++) {
        if (p->noiseless ? !isfinite(exact[i]) : (units[i] > lim || units[i] < -lim))
            return LDPB_ECORRUPT;
    }
    p->n = n;
    p->repairs = repairs;
    if (p->noiseless)
        memcpy(p->exact, exact, p->nv * sizeof *exact);
    else
        memcpy(p->units, units, p->nv * sizeof *units);
    return LDPB_OK;
}
