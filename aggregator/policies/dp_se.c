/* dp-se: Sajed & Sheffet's DP Successive Elimination (SS19: Sajed & Sheffet 2019, Algorithm 3).
 * Epoch e pulls every arm of S r = ceil(R_e) times round robin, then adds Lap(1/(eps r)) once to
 * each arm's epoch mean and eliminates every arm whose noisy mean trails the best by more than
 * 2 h_e + 2 c_e. Means and counts start afresh each epoch (the privacy proof needs it), |S| in
 * R_e, h_e, c_e is the size at the epoch start, and a run that ends mid-epoch eliminates nothing.
 * Once one arm is left it is pulled for the rest of the run. O(1) per round; O(|S|) at an epoch
 * end. */
#include "dp_se.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "statefmt.h"

#define DP_SE_STATE_VERSION 1

typedef struct dp_se {
    agg_policy base;
    double beta, eps;
    uint32_t epoch;       /* current epoch e >= 1 */
    uint32_t s_start;     /* |S| at the start of the epoch */
    uint32_t n_active;    /* |S| now (changes only at epoch ends) */
    uint32_t n_full;      /* arms of S whose quota for this epoch is complete */
    uint32_t ptr;         /* round-robin position in active[] */
    agg_dp_se_params par; /* of the current epoch */
    uint32_t *active;     /* [k] S in ascending order, first n_active entries */
    uint8_t *in_s;        /* [k] */
    uint64_t *cnt;        /* [k] rewards this epoch */
    double *sum;          /* [k] their sum */
    uint64_t *pulls;      /* [k] all observations */
    double *est;          /* [k] last released mutilde (NaN before the first) */
    double *radius;       /* [k] h_e + c_e of the epoch that released est */
} dp_se;

extern const agg_policy_ops agg_policy_dp_se;

void agg_dp_se_epoch_params(uint32_t s_size, uint32_t epoch, double beta, double epsilon,
                            agg_dp_se_params *out)
{
    double e = (double)epoch, s = (double)s_size;
    double delta = ldexp(1.0, -(int)epoch);
    double l8 = log(8 * s * e * e / beta);
    double l4 = log(4 * s * e * e / beta);
    double a = 32 * l8 / (delta * delta);
    double b = 8 * l4 / (epsilon * delta);
    out->R = (a > b ? a : b) + 1;
    double cap = ldexp(1.0, 63);
    out->r = out->R >= cap ? (uint64_t)1 << 63 : (uint64_t)ceil(out->R);
    out->h = sqrt(l8 / (2 * out->R));
    out->c = l4 / (out->R * epsilon);
}

static void dp_se_free(agg_policy *pp)
{
    dp_se *p = (dp_se *)pp;
    if (!p)
        return;
    /* The epoch sums are exact reward data of a trusted aggregator. */
    if (p->sum)
        sodium_memzero(p->sum, p->base.cfg.k * sizeof *p->sum);
    free(p->active);
    free(p->in_s);
    free(p->cnt);
    free(p->sum);
    free(p->pulls);
    free(p->est);
    free(p->radius);
    free(p);
}

/* Opens epoch `epoch` with the current S: fresh sums and counts for every arm. */
static void start_epoch(dp_se *p, uint32_t epoch)
{
    uint32_t k = p->base.cfg.k;
    p->epoch = epoch;
    p->s_start = p->n_active;
    p->n_full = 0;
    p->ptr = 0;
    agg_dp_se_epoch_params(p->s_start, epoch, p->beta, p->eps, &p->par);
    memset(p->cnt, 0, k * sizeof *p->cnt);
    memset(p->sum, 0, k * sizeof *p->sum);
}

static ldpb_err dp_se_create(agg_policy **out, const agg_policy_config *cfg,
                             char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "dp-se: NULL argument");
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "dp-se", 0, errmsg);
    if (err == LDPB_OK)
        err = agg_policy_check_epsilon(cfg, "dp-se", errmsg);
    if (err != LDPB_OK)
        return err;
    if (cfg->beta == 0 && cfg->horizon == 0)
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "dp-se: beta 0 means 1/T, but the horizon T is unknown (0)");
    double beta = cfg->beta == 0 ? 1.0 / (double)cfg->horizon : cfg->beta;
    if (!(beta > 0 && beta < 1))
        return agg_policy_refuse(errmsg, isnan(beta) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "dp-se: beta %g outside (0, 1)", beta);

    uint32_t k = cfg->k;
    dp_se *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "dp-se: out of memory");
    p->base.ops = &agg_policy_dp_se;
    p->base.cfg = *cfg;
    p->beta = beta;
    p->eps = cfg->epsilon;
    p->active = calloc(k, sizeof *p->active);
    p->in_s = calloc(k, sizeof *p->in_s);
    p->cnt = calloc(k, sizeof *p->cnt);
    p->sum = calloc(k, sizeof *p->sum);
    p->pulls = calloc(k, sizeof *p->pulls);
    p->est = calloc(k, sizeof *p->est);
    p->radius = calloc(k, sizeof *p->radius);
    if (!p->active || !p->in_s || !p->cnt || !p->sum || !p->pulls || !p->est || !p->radius) {
        dp_se_free(&p->base);
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "dp-se: out of memory");
    }
    for (uint32_t a = 0; a < k; a++) {
        p->active[a] = a;
        p->in_s[a] = 1;
        p->est[a] = NAN;
        p->radius[a] = NAN;
    }
    p->n_active = k;
    start_epoch(p, 1);
    *out = &p->base;
    return LDPB_OK;
}

static ldpb_err dp_se_choose(agg_policy *pp, agg_policy_env *env, uint32_t *arm)
{
    dp_se *p = (dp_se *)pp;
    if (!p || !env || !env->noise || !arm)
        return LDPB_EINVAL;
    if (p->n_active == 1) {
        *arm = p->active[0];
        return LDPB_OK;
    }
    /* Round robin over S, skipping arms whose quota is complete. While the epoch runs some arm
     * of S is still short (the last completed quota ends the epoch), so this finds one. */
    uint32_t i = p->ptr;
    while (p->cnt[p->active[i]] >= p->par.r)
        i = i + 1 == p->n_active ? 0 : i + 1;
    *arm = p->active[i];
    p->ptr = i + 1 == p->n_active ? 0 : i + 1;
    return LDPB_OK;
}

/* The epoch end (Alg. 3): noise once per arm of S, then elimination with a strict >, then a fresh
 * epoch if more than one arm is left. An error (the noise source's, practically impossible) leaves
 * the epoch half ended: the caller must discard the state, as the server does. */
static ldpb_err end_epoch(dp_se *p, agg_noise *noise)
{
    double rr = (double)p->par.r;
    double scale = 1 / (p->eps * rr); /* r = ceil(R_e): docs/derivations.md 10 */
    double width = 2 * p->par.h + 2 * p->par.c;
    double best = -INFINITY;
    for (uint32_t i = 0; i < p->n_active; i++) {
        uint32_t a = p->active[i];
        /* One reward moves the mean of r by at most 1/r; released on a grid (docs/privacy.md). */
        ldpb_err err = agg_noise_release(noise, p->sum[a] / rr, 1 / rr, scale, &p->est[a]);
        if (err != LDPB_OK)
            return err;
        p->radius[a] = p->par.h + p->par.c;
        if (p->est[a] > best)
            best = p->est[a];
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->n_active; i++) {
        uint32_t a = p->active[i];
        if (best - p->est[a] > width)
            p->in_s[a] = 0;
        else
            p->active[kept++] = a;
    }
    p->n_active = kept;
    if (kept > 1) {
        start_epoch(p, p->epoch + 1);
        return LDPB_OK;
    }
    /* One arm left: no more epochs; it is pulled for the rest of the run. The last epoch's
     * number and parameters stay as they were. */
    memset(p->cnt, 0, p->base.cfg.k * sizeof *p->cnt);
    memset(p->sum, 0, p->base.cfg.k * sizeof *p->sum);
    p->n_full = 0;
    p->ptr = 0;
    return LDPB_OK;
}

/* Adds a validated block to an arm of S and ends the epoch when it completes the last quota. */
static ldpb_err add_block(dp_se *p, agg_noise *noise, uint32_t arm, uint64_t count, double sum)
{
    p->pulls[arm] += count;
    if (p->n_active == 1)
        return LDPB_OK;
    p->cnt[arm] += count;
    p->sum[arm] += sum;
    if (p->cnt[arm] == p->par.r && ++p->n_full == p->n_active)
        return end_epoch(p, noise);
    return LDPB_OK;
}

static ldpb_err dp_se_observe(agg_policy *pp, agg_policy_env *env, uint32_t arm, double obs)
{
    dp_se *p = (dp_se *)pp;
    if (!p || !env || !env->noise || arm >= p->base.cfg.k || isnan(obs))
        return LDPB_EINVAL;
    if (!(obs >= 0 && obs <= 1))
        return LDPB_ERANGE;
    if (!p->in_s[arm] || (p->n_active > 1 && p->cnt[arm] >= p->par.r)) {
        /* A late answer for an eliminated arm, or beyond the arm's quota for this epoch (possible
         * when choices run ahead of observations): counted as a pull, but it never enters an
         * epoch mean, so each reward still affects at most one mean of r rewards. */
        p->pulls[arm]++;
        return LDPB_OK;
    }
    return add_block(p, env->noise, arm, 1, obs);
}

static const dp_se *as_dp_se(const agg_policy *p)
{
    return p && p->ops == &agg_policy_dp_se ? (const dp_se *)p : NULL;
}

ldpb_err agg_dp_se_plan(const agg_policy *pp, uint32_t *epoch, uint32_t *arms, uint64_t *remaining,
                        uint32_t cap, uint32_t *n_active)
{
    const dp_se *p = as_dp_se(pp);
    if (!p || !epoch || !n_active || (cap && (!arms || !remaining)))
        return LDPB_EINVAL;
    *epoch = p->epoch;
    *n_active = p->n_active;
    if (cap < p->n_active)
        return LDPB_ERANGE;
    for (uint32_t i = 0; i < p->n_active; i++) {
        uint32_t a = p->active[i];
        arms[i] = a;
        remaining[i] = p->n_active == 1 ? UINT64_MAX : p->par.r - p->cnt[a];
    }
    return LDPB_OK;
}

ldpb_err agg_dp_se_observe_block(agg_policy *pp, agg_policy_env *env, uint32_t arm, uint64_t count,
                                 double sum)
{
    dp_se *p = (dp_se *)as_dp_se(pp);
    if (!p || !env || !env->noise || arm >= p->base.cfg.k || isnan(sum))
        return LDPB_EINVAL;
    if (!p->in_s[arm])
        return LDPB_ESTATE;
    if (p->n_active > 1 && count > p->par.r - p->cnt[arm])
        return LDPB_ERANGE;
    if (!(sum >= 0 && sum <= (double)count))
        return LDPB_ERANGE;
    if (count == 0)
        return LDPB_OK;
    return add_block(p, env->noise, arm, count, sum);
}

static ldpb_err dp_se_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const dp_se *p = (const dp_se *)pp;
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, pp, DP_SE_STATE_VERSION);
    agg_put_u32(&w, p->epoch);
    agg_put_u32(&w, p->s_start);
    agg_put_u32(&w, p->ptr);
    for (uint32_t a = 0; a < p->base.cfg.k; a++) {
        agg_put_u8(&w, p->in_s[a]);
        agg_put_u64(&w, p->cnt[a]);
        agg_put_f64(&w, p->sum[a]);
        agg_put_u64(&w, p->pulls[a]);
        agg_put_f64(&w, p->est[a]);
        agg_put_f64(&w, p->radius[a]);
    }
    return agg_wbuf_finish(&w, len);
}

/* NaN (not released yet) or a finite value. */
static int nan_or_finite(double x)
{
    return isnan(x) || isfinite(x);
}

static ldpb_err dp_se_restore(agg_policy *pp, const uint8_t *buf, size_t len)
{
    dp_se *p = (dp_se *)pp;
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    agg_policy *tmp_base = NULL;
    ldpb_err err = dp_se_create(&tmp_base, &p->base.cfg, NULL);
    if (err != LDPB_OK)
        return err;
    dp_se *q = (dp_se *)tmp_base;
    uint32_t k = q->base.cfg.k;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    err = agg_state_get_header(&r, pp, DP_SE_STATE_VERSION);
    if (err != LDPB_OK)
        goto done;
    err = LDPB_ECORRUPT;
    uint32_t epoch = agg_get_u32(&r), s_start = agg_get_u32(&r), ptr = agg_get_u32(&r);
    /* Epoch 64 would need 4^64 pulls per arm; anything near it is not a real state. */
    if (r.bad || epoch < 1 || epoch > 64 || s_start < 1 || s_start > k)
        goto done;
    uint32_t n_active = 0;
    for (uint32_t a = 0; a < k; a++) {
        uint8_t in = agg_get_u8(&r);
        q->cnt[a] = agg_get_u64(&r);
        q->sum[a] = agg_get_f64(&r);
        q->pulls[a] = agg_get_u64(&r);
        q->est[a] = agg_get_f64(&r);
        q->radius[a] = agg_get_f64(&r);
        if (r.bad || in > 1 || !nan_or_finite(q->est[a]) || !nan_or_finite(q->radius[a]))
            goto done;
        if (isnan(q->est[a]) != isnan(q->radius[a]) || q->pulls[a] < q->cnt[a])
            goto done;
        if (!(q->sum[a] >= 0 && q->sum[a] <= (double)q->cnt[a]))
            goto done;
        q->in_s[a] = in;
        if (in)
            q->active[n_active++] = a;
        else if (q->cnt[a] != 0)
            goto done;
    }
    if (!agg_rbuf_done(&r) || n_active < 1 || n_active > s_start)
        goto done;
    /* Eliminations happen only at epoch ends, so S is the same all epoch long; only the final
     * phase (one arm left) keeps the last epoch's |S|. */
    if (n_active != s_start && n_active != 1)
        goto done;
    q->n_active = n_active;
    agg_dp_se_epoch_params(s_start, epoch, q->beta, q->eps, &q->par);
    q->epoch = epoch;
    q->s_start = s_start;
    q->n_full = 0;
    for (uint32_t i = 0; i < n_active; i++) {
        uint64_t c = q->cnt[q->active[i]];
        if (n_active > 1 && c > q->par.r)
            goto done;
        if (n_active > 1 && c == q->par.r)
            q->n_full++;
    }
    if (n_active > 1 && (q->n_full == n_active || ptr >= n_active))
        goto done;
    if (n_active == 1 && (ptr != 0 || q->cnt[q->active[0]] != 0))
        goto done;
    q->ptr = ptr;
    dp_se swap = *p;
    *p = *q;
    *q = swap;
    err = LDPB_OK;
done:
    dp_se_free(&q->base);
    return err;
}

static ldpb_err dp_se_describe(const agg_policy *pp, agg_arm_status *arms, uint32_t k)
{
    const dp_se *p = (const dp_se *)pp;
    if (!p || !arms || k != p->base.cfg.k)
        return LDPB_EINVAL;
    for (uint32_t a = 0; a < k; a++) {
        agg_arm_status *s = &arms[a];
        s->pulls = p->pulls[a];
        s->active = p->in_s[a];
        s->estimate = p->est[a];
        s->ci_low = p->est[a] - p->radius[a];
        s->ci_high = p->est[a] + p->radius[a];
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_dp_se = {
    .name = "dp-se",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_HORIZON | AGG_PARAM_BETA,
    .create = dp_se_create,
    .choose = dp_se_choose,
    .observe = dp_se_observe,
    .save = dp_se_save,
    .restore = dp_se_restore,
    .describe = dp_se_describe,
    .free = dp_se_free,
    .plan = agg_dp_se_plan,
    .observe_block = agg_dp_se_observe_block,
};
