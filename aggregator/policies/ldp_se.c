/* LDP-SE: successive elimination on LDP reports (algorithms.md 2.6, derived from DP-SE 4.5).
 *
 *   S = all arms; e = 0
 *   epoch: e += 1; Delta_e = 2^-e; L_e = ln(8 |S| e^2 / beta) with |S| at the epoch's start;
 *          forget all counts (mandatory: older reports break the union bound);
 *          r_e = the smallest integer with rad(r_e) < Delta_e / 4;
 *          pull every arm of S r_e times, round-robin; mu_hat_a = de-biased mean of the epoch;
 *          remove every a with max_b mu_hat_b - mu_hat_a > 2 rad(r_e)   (strictly greater)
 *   once |S| = 1, pull the survivor in every remaining round.
 *
 * Mechanisms: CTB (linear) with rad(r) = w sqrt(L / (2r)), w = 1/s from the implemented
 * endpoints (the width of the interval a de-biased report lies in; (e^eps+1)/(e^eps-1) for the
 * nominal ones), so r_e = floor(8 w^2 L / Delta^2) + 1; or CTL (Laplace) with
 * rad(r) = sqrt(L/(2r)) + sqrt(8L/(eps^2 r)), so r_e = max(ceil(L), floor(16 c^2 L / Delta^2) + 1)
 * with c = 1/sqrt(2) + sqrt(8)/eps (the Bernstein part needs r >= L). Quadratic and exponential
 * are refused: with non-binary rewards their mean is not identifiable from the reports (1.6).
 * Both radii are rho sqrt(L / r) for a constant rho; r_e is computed from the closed forms.
 *
 * Driving: choose() returns the arm under a round-robin cursor and changes nothing; observe()
 * counts a report for an active arm that still needs reports this epoch, advances the cursor past
 * it, and closes the epoch when every arm of S has r_e reports (O(|S|), amortized O(1) per round).
 * Other reports (an eliminated arm, an arm already at r_e) are post-processing, safe to drop, and
 * are dropped, only counted in `pulls`. After |S| = 1 the survivor's reports accumulate into a
 * running mean for describe(). The horizon may end in the middle of an epoch; nothing depends on
 * it except the default beta = 1/T. The state merges across shards only within one epoch, so the
 * policy is not declared mergeable. */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define LDP_SE_STATE_VERSION 1

/* Beyond this r_e no run can finish the epoch; capping keeps the arithmetic in range. */
#define LDP_SE_R_MAX ((uint64_t)1 << 62)

typedef struct arm {
    uint64_t n;      /* reports this epoch (after the end: the survivor's reports since) */
    double sum;      /* their sum (for CTB the number of ones) */
    uint64_t pulls;  /* every report received for the arm, used or not */
    double last_est; /* de-biased mean at the end of the last epoch the arm finished; NaN before */
    double last_rad; /* that epoch's rad(r_e); NaN before */
    uint8_t active;
} arm;

typedef struct ldp_se {
    agg_policy base;
    ldpb_mech *mech;
    double beta;
    double rho;       /* rad(r) = rho sqrt(L / r) */
    double rcoef;     /* r_e = floor(rcoef L / Delta^2) + 1 (the closed forms above) */
    int laplace;      /* CTL: r_e >= L as well */
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
} ldp_se;

extern const agg_policy_ops agg_policy_ldp_se;

static void destroy(agg_policy *p)
{
    ldp_se *x = (ldp_se *)p;
    if (!x)
        return;
    ldpb_mech_free(x->mech);
    free(x->order);
    free(x->estimate);
    free(x);
}

/* L_e and r_e for epoch e with m arms in S. */
static void epoch_constants(const ldp_se *x, uint32_t e, uint32_t m, double *L, uint64_t *r)
{
    double de = (double)e;
    double delta = ldexp(1.0, -(int)(e > 2000 ? 2000 : e));
    *L = log(8.0 * (double)m * de * de / x->beta);
    double rr = floor(x->rcoef * *L / (delta * delta)) + 1.0;
    if (x->laplace && rr < ceil(*L))
        rr = ceil(*L);
    *r = rr >= (double)LDP_SE_R_MAX ? LDP_SE_R_MAX : (uint64_t)rr;
}

static double radius(const ldp_se *x, uint64_t n)
{
    return x->rho * sqrt(x->L / (double)n);
}

static void epoch_begin(ldp_se *x)
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

static double debiased(const ldp_se *x, double sum, uint64_t n)
{
    double mu = NAN;
    if (ldpb_mech_debias_mean(x->mech, sum, n, &mu, NULL) != LDPB_OK)
        return NAN; /* unreachable: n > 0 and sum finite */
    return mu;
}

static void epoch_end(ldp_se *x)
{
    double rad = radius(x, x->r);
    double best = -HUGE_VAL;
    for (uint32_t j = 0; j < x->m; j++) {
        arm *a = &x->arms[x->order[j]];
        x->estimate[j] = debiased(x, a->sum, x->r);
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

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "ldp-se", 0, errmsg);
    if (err)
        return err;
    if (cfg->mechanism != LDPB_MECH_LINEAR && cfg->mechanism != LDPB_MECH_LAPLACE)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-se: mechanism %s not supported: the mean reward is only "
                                 "identifiable from linear (CTB) or laplace (CTL) reports",
                                 ldpb_mech_kind_name(cfg->mechanism));
    double beta = cfg->beta;
    if (isnan(beta))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "ldp-se: beta is NaN");
    if (beta == 0.0) {
        if (cfg->horizon == 0)
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "ldp-se: beta 0 means 1/T, but the horizon is unknown (0)");
        beta = 1.0 / (double)cfg->horizon;
    }
    if (!(beta > 0.0 && beta < 1.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "ldp-se: beta %g outside (0, 1)", beta);
    ldpb_mech *mech = NULL;
    err = agg_policy_mech_new(cfg, "ldp-se", &mech, errmsg);
    if (err)
        return err;
    ldp_se *x = calloc(1, sizeof *x + (size_t)cfg->k * sizeof x->arms[0]);
    if (!x) {
        ldpb_mech_free(mech);
        goto nomem;
    }
    x->base.ops = &agg_policy_ldp_se;
    x->base.cfg = *cfg;
    x->mech = mech;
    x->order = calloc(cfg->k, sizeof *x->order);
    x->estimate = calloc(cfg->k, sizeof *x->estimate);
    if (!x->order || !x->estimate)
        goto nomem;
    x->beta = beta;
    x->laplace = cfg->mechanism == LDPB_MECH_LAPLACE;
    if (x->laplace) {
        double c = sqrt(0.5) + sqrt(8.0) / cfg->epsilon;
        x->rho = c;
        x->rcoef = 16.0 * c * c;
    } else {
        double p0, p1;
        ldpb_mech_endpoints(mech, &p0, &p1);
        double w = 1.0 / (p1 - p0);
        x->rho = sqrt(0.5) * w;
        x->rcoef = 8.0 * w * w;
    }
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
    destroy(x ? &x->base : NULL);
    return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ldp-se: out of memory for %u arms", cfg->k);
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *out)
{
    (void)env;
    const ldp_se *x = (const ldp_se *)p;
    *out = x->order[x->cursor];
    return LDPB_OK;
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t i, double y)
{
    (void)env;
    ldp_se *x = (ldp_se *)p;
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

static ldpb_err save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ldp_se *x = (const ldp_se *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, LDP_SE_STATE_VERSION);
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

/* A sum that reports of this mechanism can produce: for CTB an integer count of ones in [0, n],
 * for CTL any finite value (zero without reports). */
static int sum_valid(const ldp_se *x, uint64_t n, double sum)
{
    if (!isfinite(sum) || (n == 0 && sum != 0.0))
        return 0;
    if (x->laplace)
        return 1;
    return sum >= 0.0 && sum <= (double)n && sum == floor(sum);
}

/* Checks everything the invariants imply and, with commit, installs. The epoch constants, |S|,
 * the order of S and the count of full arms are derived, not stored. */
static ldpb_err decode(ldp_se *x, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &x->base, LDP_SE_STATE_VERSION);
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
        if (n > pulls || !sum_valid(x, n, sum))
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

static ldpb_err restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ldp_se *x = (ldp_se *)p;
    ldpb_err err = decode(x, buf, len, 0);
    return err ? err : decode(x, buf, len, 1);
}

/* Per arm: the running de-biased mean of the current epoch (of the survivor's reports once
 * |S| = 1) with rad(n) under the current L, when the arm has reports; otherwise the estimate and
 * radius of the last epoch it finished. For CTL the radius needs n >= L, below that it is NaN. */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ldp_se *x = (const ldp_se *)p;
    for (uint32_t i = 0; i < k; i++) {
        const arm *a = &x->arms[i];
        arms[i].pulls = a->pulls;
        arms[i].active = a->active;
        double est = a->last_est, rad = a->last_rad;
        if (a->n > 0) {
            est = debiased(x, a->sum, a->n);
            rad = x->laplace && (double)a->n < x->L ? NAN : radius(x, a->n);
        }
        arms[i].estimate = est;
        arms[i].ci_low = est - rad;
        arms[i].ci_high = est + rad;
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_ldp_se = {
    .name = "ldp-se",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 0,
    .create = create,
    .choose = choose,
    .observe = observe,
    .save = save,
    .restore = restore,
    .describe = describe,
    .free = destroy,
};
