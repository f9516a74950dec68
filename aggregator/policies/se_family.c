/* The successive elimination engine (se_family.h): state, epochs, state format and describe() of
 * SE and LDP-SE. */
#include "se_family.h"

#include <math.h>
#include <stdlib.h>

#include "statefmt.h"

/* Beyond this r_e no run can finish the epoch; capping keeps the arithmetic in range. */
#define SE_R_MAX ((uint64_t)1 << 62)

typedef struct arm {
    uint64_t n;      /* reports this epoch (after the end: the survivor's reports since) */
    double sum;      /* their sum (for CTB the number of ones) */
    uint64_t pulls;  /* every report received for the arm, used or not */
    double last_est; /* estimate at the end of the last epoch the arm finished; NaN before */
    double last_rad; /* that epoch's rad(r_e); NaN before */
    uint8_t active;
} arm;

typedef struct se {
    agg_policy base;
    const agg_se_variant *v;
    agg_se_params par;
    uint32_t e;       /* current epoch, from 1 */
    uint32_t m;       /* |S| */
    int done;         /* |S| = 1 */
    double L;         /* L_e (derived from e, m, beta) */
    uint64_t r;       /* r_e (derived) */
    uint32_t full;    /* arms of S with r_e reports this epoch (derived) */
    uint32_t cursor;  /* position in order[] of the next arm to pull */
    uint32_t *order;  /* the arms of S in index order */
    double *estimate; /* scratch for the epoch end */
    arm arms[];
} se;

void agg_se_free(agg_policy *p)
{
    se *x = (se *)p;
    if (!x)
        return;
    ldpb_mech_free(x->par.mech);
    free(x->order);
    free(x->estimate);
    free(x);
}

/* L_e and r_e for epoch e with m arms in S. */
static void epoch_constants(const se *x, uint32_t e, uint32_t m, double *L, uint64_t *r)
{
    double de = (double)e;
    double delta = ldexp(1.0, -(int)(e > 2000 ? 2000 : e));
    *L = log(8.0 * (double)m * de * de / x->par.beta);
    double rr = floor(x->par.rcoef * *L / (delta * delta)) + 1.0;
    if (x->par.r_at_least_L && rr < ceil(*L))
        rr = ceil(*L);
    *r = rr >= (double)SE_R_MAX ? SE_R_MAX : (uint64_t)rr;
}

static double radius(const se *x, uint64_t n)
{
    return x->par.rho * sqrt(x->L / (double)n);
}

static void epoch_begin(se *x)
{
    x->e++;
    epoch_constants(x, x->e, x->m, &x->L, &x->r);
    for (uint32_t j = 0; j < x->m; j++) {
        x->arms[x->order[j]].n = 0;
        x->arms[x->order[j]].sum = 0.0;
    }
    x->full = 0;
    x->cursor = 0;
}

static void epoch_end(se *x)
{
    double rad = radius(x, x->r);
    double best = -HUGE_VAL;
    for (uint32_t j = 0; j < x->m; j++) {
        arm *a = &x->arms[x->order[j]];
        x->estimate[j] = x->v->estimate(&x->par, a->sum, x->r);
        if (x->estimate[j] > best)
            best = x->estimate[j];
    }
    uint32_t kept = 0;
    for (uint32_t j = 0; j < x->m; j++) {
        uint32_t i = x->order[j];
        arm *a = &x->arms[i];
        a->last_est = x->estimate[j];
        a->last_rad = rad;
        a->n = 0;
        a->sum = 0.0;
        if (best - x->estimate[j] > 2.0 * rad)
            a->active = 0;
        else
            x->order[kept++] = i;
    }
    x->m = kept;
    if (kept == 1) {
        /* The survivor's running estimate is a one-arm estimate: its radius uses |S| = 1. */
        epoch_constants(x, x->e, 1, &x->L, &x->r);
        x->done = 1;
        x->cursor = 0;
        x->full = 0;
        return;
    }
    epoch_begin(x);
}

ldpb_err agg_se_beta(const agg_policy_config *cfg, const char *name, double *beta,
                     char errmsg[AGG_ERRMSG_MAX])
{
    double b = cfg->beta;
    if (isnan(b))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: beta is NaN", name);
    if (b == 0.0) {
        if (cfg->horizon == 0)
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "%s: beta 0 means 1/T, but the horizon is unknown (0)", name);
        b = 1.0 / (double)cfg->horizon;
    }
    if (!(b > 0.0 && b < 1.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: beta %g outside (0, 1)", name, b);
    *beta = b;
    return LDPB_OK;
}

ldpb_err agg_se_new(agg_policy **out, const agg_policy_config *cfg, const agg_se_variant *v,
                    char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, v->ops->name, 0, errmsg);
    if (err)
        return err;
    agg_se_params par = {.mech = NULL, .beta = 0.0, .rho = 0.0, .rcoef = 0.0, .r_at_least_L = 0};
    if ((err = v->prepare(cfg, &par, errmsg)) != LDPB_OK)
        return err;
    se *x = calloc(1, sizeof *x + (size_t)cfg->k * sizeof x->arms[0]);
    if (!x) {
        ldpb_mech_free(par.mech);
        goto nomem;
    }
    x->base.ops = v->ops;
    x->base.cfg = *cfg;
    x->v = v;
    x->par = par;
    x->order = calloc(cfg->k, sizeof *x->order);
    x->estimate = calloc(cfg->k, sizeof *x->estimate);
    if (!x->order || !x->estimate)
        goto nomem;
    for (uint32_t i = 0; i < cfg->k; i++) {
        x->arms[i].active = 1;
        x->arms[i].last_est = x->arms[i].last_rad = NAN;
        x->order[i] = i;
    }
    x->m = cfg->k;
    epoch_begin(x);
    *out = &x->base;
    return LDPB_OK;
nomem:
    agg_se_free(x ? &x->base : NULL);
    return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory for %u arms", v->ops->name,
                             cfg->k);
}

ldpb_err agg_se_choose(agg_policy *p, agg_policy_env *env, uint32_t *out)
{
    (void)env;
    const se *x = (const se *)p;
    *out = x->order[x->cursor];
    return LDPB_OK;
}

ldpb_err agg_se_observe(agg_policy *p, agg_policy_env *env, uint32_t i, double y)
{
    (void)env;
    se *x = (se *)p;
    arm *a = &x->arms[i];
    a->pulls++;
    if (x->done) {
        if (a->active) {
            a->n++;
            a->sum += y;
        }
        return LDPB_OK;
    }
    if (!a->active || a->n >= x->r)
        return LDPB_OK;
    a->n++;
    a->sum += y;
    if (a->n == x->r && ++x->full == x->m) {
        epoch_end(x);
        return LDPB_OK;
    }
    if (x->order[x->cursor] == i) {
        do
            x->cursor = x->cursor + 1 == x->m ? 0 : x->cursor + 1;
        while (x->arms[x->order[x->cursor]].n >= x->r);
    }
    return LDPB_OK;
}

ldpb_err agg_se_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const se *x = (const se *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, x->v->state_version);
    agg_put_u32(&w, x->e);
    agg_put_u8(&w, (uint8_t)x->done);
    agg_put_u32(&w, x->cursor);
    for (uint32_t i = 0; i < p->cfg.k; i++) {
        const arm *a = &x->arms[i];
        agg_put_u8(&w, a->active);
        agg_put_u64(&w, a->n);
        agg_put_f64(&w, a->sum);
        agg_put_u64(&w, a->pulls);
        agg_put_f64(&w, a->last_est);
        agg_put_f64(&w, a->last_rad);
    }
    return agg_wbuf_finish(&w, len);
}

/* Checks everything the invariants imply and, with commit, installs. The epoch constants, |S|,
 * the order of S and the count of full arms are derived, not stored. */
static ldpb_err decode(se *x, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &x->base, x->v->state_version);
    if (err)
        return err;
    uint32_t k = x->base.cfg.k;
    uint32_t e = agg_get_u32(&r);
    uint8_t done = agg_get_u8(&r);
    uint32_t cursor = agg_get_u32(&r);
    size_t arms_at = r.pos;
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint8_t active = agg_get_u8(&r);
        (void)agg_get_u64(&r);
        (void)agg_get_f64(&r);
        (void)agg_get_u64(&r);
        (void)agg_get_f64(&r);
        (void)agg_get_f64(&r);
        if (active > 1)
            return LDPB_ECORRUPT;
        m += active;
    }
    if (!agg_rbuf_done(&r) || e == 0 || done > 1 || m == 0 || (done == 1) != (m == 1) ||
        cursor >= m || (done && cursor != 0))
        return LDPB_ECORRUPT;
    double L;
    uint64_t rmax;
    epoch_constants(x, e, m, &L, &rmax);
    r.pos = arms_at;
    uint32_t full = 0, j = 0;
    uint64_t cursor_n = 0;
    for (uint32_t i = 0; i < k; i++) {
        uint8_t active = agg_get_u8(&r);
        uint64_t n = agg_get_u64(&r);
        double sum = agg_get_f64(&r);
        uint64_t pulls = agg_get_u64(&r);
        double last_est = agg_get_f64(&r), last_rad = agg_get_f64(&r);
        int has_last = !isnan(last_est);
        if (n > pulls || !x->v->sum_valid(&x->par, n, sum))
            return LDPB_ECORRUPT;
        if (has_last ? !(isfinite(last_est) && isfinite(last_rad) && last_rad > 0.0)
                     : !isnan(last_rad))
            return LDPB_ECORRUPT;
        /* Eliminated arms finished the epoch that removed them and hold no counts; arms of S
         * have finished every epoch before the current one (all of them once |S| = 1), and
         * hold at most r_e reports. */
        if (!active && (n != 0 || !has_last))
            return LDPB_ECORRUPT;
        if (active && has_last != (e > 1 || done))
            return LDPB_ECORRUPT;
        if (active && !done && n > rmax)
            return LDPB_ECORRUPT;
        if (active) {
            full += !done && n == rmax;
            if (j == cursor)
                cursor_n = n;
            j++;
        }
        if (commit) {
            arm *a = &x->arms[i];
            a->active = active;
            a->n = n;
            a->sum = sum;
            a->pulls = pulls;
            a->last_est = last_est;
            a->last_rad = last_rad;
        }
    }
    if (!done && (full == m || cursor_n >= rmax))
        return LDPB_ECORRUPT;
    if (!commit)
        return LDPB_OK;
    x->e = e;
    x->m = m;
    x->done = done;
    x->L = L;
    x->r = rmax;
    x->full = full;
    x->cursor = cursor;
    j = 0;
    for (uint32_t i = 0; i < k; i++)
        if (x->arms[i].active)
            x->order[j++] = i;
    return LDPB_OK;
}

ldpb_err agg_se_restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    se *x = (se *)p;
    ldpb_err err = decode(x, buf, len, 0);
    return err ? err : decode(x, buf, len, 1);
}

/* Per arm: the running estimate of the current epoch (of the survivor's reports once
 * |S| = 1) with rad(n) under the current L, when the arm has reports; otherwise the estimate and
 * radius of the last epoch it finished. Where the radius needs n >= L, below that it is NaN. */
ldpb_err agg_se_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const se *x = (const se *)p;
    for (uint32_t i = 0; i < k; i++) {
        const arm *a = &x->arms[i];
        arms[i].pulls = a->pulls;
        arms[i].active = a->active;
        double est = a->last_est, rad = a->last_rad;
        if (a->n > 0) {
            est = x->v->estimate(&x->par, a->sum, a->n);
            rad = x->par.r_at_least_L && (double)a->n < x->L ? NAN : radius(x, a->n);
        }
        arms[i].estimate = est;
        arms[i].ci_low = est - rad;
        arms[i].ci_high = est + rad;
    }
    return LDPB_OK;
}
