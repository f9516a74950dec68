/* dp-se: Sajed & Sheffet's DP Successive Elimination (SS19: Sajed & Sheffet 2019, Algorithm 3).
 * Epoch e pulls every arm of S r = ceil(R_e) times round robin, then adds Lap(1/(eps r)) once to
 * each arm's epoch mean and eliminates every arm whose noisy mean trails the best by more than
 * 2 h_e + 2 c_e. Means and counts start afresh each epoch (the privacy proof needs it), |S| in
 * R_e, h_e, c_e is the size at the epoch start, and a run that ends mid-epoch eliminates nothing.
 * Once one arm is left it is pulled for the rest of the run. O(1) per round; O(|S|) at an epoch
 * end.
 *
 * Unknown horizon (horizon 0 with beta 0, or the dp-se-doubling entry, which never reads the
 * horizon): the doubling schedule. Phase j = 1, 2, ... is a fresh run of Algorithm 3 on the next
 * 2^j observations, with every arm back in S, fresh sums, epochs from 1 and beta_j = 2^-j (the 1/T
 * of a known horizon T = 2^j) unless beta is given. Each reward enters one phase only, so the run
 * is eps-DP by parallel composition; docs/derivations.md 10.1 has the accounting and the regret
 * cost. */
#include "dp_se.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "statefmt.h"

#define DP_SE_STATE_VERSION 1
/* The doubling schedule's state adds the phase and its observation count. */
#define DP_SE_DOUBLING_STATE_VERSION 2
/* Phase 62 holds 2^62 observations: far beyond any service's lifetime, and 2^j stays exact. */
#define DP_SE_PHASE_MAX 62

typedef struct dp_se {
    agg_policy base;
    double beta, eps;
    uint32_t epoch;       /* current epoch e >= 1 */
    uint32_t s_start;     /* |S| at the start of the epoch */
    uint32_t n_active;    /* |S| now (changes only at epoch ends) */
    uint32_t n_full;      /* arms of S whose quota for this epoch is complete */
    uint32_t ptr;         /* round-robin position in active[] */
    agg_dp_se_params par; /* of the current epoch */
    int doubling;         /* unknown horizon: the doubling schedule */
    uint32_t phase;       /* doubling: the current phase j >= 1 (0 otherwise) */
    uint64_t phase_t;     /* doubling: observations in this phase, < 2^phase */
    uint32_t *active;     /* [k] S in ascending order, first n_active entries */
    uint8_t *in_s;        /* [k] */
    uint64_t *cnt;        /* [k] rewards this epoch */
    double *sum;          /* [k] their sum */
    uint64_t *pulls;      /* [k] all observations */
    double *est;          /* [k] last released mutilde (NaN before the first) */
    double *radius;       /* [k] h_e + c_e of the epoch that released est */
} dp_se;

extern const agg_policy_ops agg_policy_dp_se;
extern const agg_policy_ops agg_policy_dp_se_doubling;

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

/* Starts phase j of the doubling schedule: Algorithm 3 afresh with every arm in S. */
static void start_phase(dp_se *p, uint32_t j)
{
    uint32_t k = p->base.cfg.k;
    p->phase = j;
    p->phase_t = 0;
    p->beta = p->base.cfg.beta != 0 ? p->base.cfg.beta : ldexp(1.0, -(int)j);
    for (uint32_t a = 0; a < k; a++) {
        p->active[a] = a;
        p->in_s[a] = 1;
    }
    p->n_active = k;
    start_epoch(p, 1);
}

static ldpb_err create_as(agg_policy **out, const agg_policy_config *cfg, const agg_policy_ops *ops,
                          char errmsg[AGG_ERRMSG_MAX])
{
    const char *name = ops->name;
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: NULL argument", name);
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, name, 0, errmsg);
    if (err == LDPB_OK)
        err = agg_policy_check_epsilon(cfg, name, errmsg);
    if (err != LDPB_OK)
        return err;
    /* Algorithm 3 needs T only for beta = 1/T: a given beta runs without a horizon as before,
     * while beta 0 and no horizon mean the doubling schedule with beta_j = 2^-j. */
    int doubling = ops == &agg_policy_dp_se_doubling || (cfg->horizon == 0 && cfg->beta == 0);
    double beta = cfg->beta == 0 ? (doubling ? 0.5 : 1.0 / (double)cfg->horizon) : cfg->beta;
    if (!(beta > 0 && beta < 1))
        return agg_policy_refuse(errmsg, isnan(beta) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "%s: beta %g outside (0, 1)", name, beta);

    uint32_t k = cfg->k;
    dp_se *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", name);
    p->base.ops = ops;
    p->base.cfg = *cfg;
    p->beta = beta;
    p->doubling = doubling;
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
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", name);
    }
    for (uint32_t a = 0; a < k; a++) {
        p->est[a] = NAN;
        p->radius[a] = NAN;
    }
    if (doubling) {
        start_phase(p, 1);
    } else {
        for (uint32_t a = 0; a < k; a++) {
            p->active[a] = a;
            p->in_s[a] = 1;
        }
        p->n_active = k;
        start_epoch(p, 1);
    }
    *out = &p->base;
    return LDPB_OK;
}

static ldpb_err dp_se_create(agg_policy **out, const agg_policy_config *cfg,
                             char errmsg[AGG_ERRMSG_MAX])
{
    return create_as(out, cfg, &agg_policy_dp_se, errmsg);
}

static ldpb_err dp_se_doubling_create(agg_policy **out, const agg_policy_config *cfg,
                                      char errmsg[AGG_ERRMSG_MAX])
{
    return create_as(out, cfg, &agg_policy_dp_se_doubling, errmsg);
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
    } else {
        ldpb_err err = add_block(p, env->noise, arm, 1, obs);
        if (err)
            return err;
    }
    /* Phases count observations, not their values, so where a phase ends says nothing about the
     * data; a late answer of the last phase lands in the new one, still in one mean only. */
    if (p->doubling && ++p->phase_t == (uint64_t)1 << p->phase && p->phase < DP_SE_PHASE_MAX)
        start_phase(p, p->phase + 1);
    return LDPB_OK;
}

static const dp_se *as_dp_se(const agg_policy *p)
{
    return p && (p->ops == &agg_policy_dp_se || p->ops == &agg_policy_dp_se_doubling)
               ? (const dp_se *)p
               : NULL;
}

ldpb_err agg_dp_se_plan(const agg_policy *pp, uint32_t *epoch, uint32_t *arms, uint64_t *remaining,
                        uint32_t cap, uint32_t *n_active)
{
    const dp_se *p = as_dp_se(pp);
    if (!p || !epoch || !n_active || (cap && (!arms || !remaining)))
        return LDPB_EINVAL;
    if (p->doubling)
        return LDPB_ESTATE;
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
    if (p->doubling || !p->in_s[arm])
        return LDPB_ESTATE;
    if (p->n_active > 1 && count > p->par.r - p->cnt[arm])
        return LDPB_ERANGE;
    if (!(sum >= 0 && sum <= (double)count))
        return LDPB_ERANGE;
    if (count == 0)
        return LDPB_OK;
    return add_block(p, env->noise, arm, count, sum);
}

ldpb_err agg_dp_se_schedule(const agg_policy *pp, uint32_t *phase, uint64_t *phase_t,
                            uint32_t *epoch)
{
    const dp_se *p = as_dp_se(pp);
    if (!p || !phase || !phase_t || !epoch)
        return LDPB_EINVAL;
    *phase = p->phase;
    *phase_t = p->phase_t;
    *epoch = p->epoch;
    return LDPB_OK;
}

static ldpb_err dp_se_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const dp_se *p = (const dp_se *)pp;
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, pp, p->doubling ? DP_SE_DOUBLING_STATE_VERSION : DP_SE_STATE_VERSION);
    agg_put_u32(&w, p->epoch);
    agg_put_u32(&w, p->s_start);
    agg_put_u32(&w, p->ptr);
    if (p->doubling) {
        agg_put_u32(&w, p->phase);
        agg_put_u64(&w, p->phase_t);
    }
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
    ldpb_err err = create_as(&tmp_base, &p->base.cfg, p->base.ops, NULL);
    if (err != LDPB_OK)
        return err;
    dp_se *q = (dp_se *)tmp_base;
    uint32_t k = q->base.cfg.k;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    err = agg_state_get_header(&r, pp,
                               q->doubling ? DP_SE_DOUBLING_STATE_VERSION : DP_SE_STATE_VERSION);
    if (err != LDPB_OK)
        goto done;
    err = LDPB_ECORRUPT;
    uint32_t epoch = agg_get_u32(&r), s_start = agg_get_u32(&r), ptr = agg_get_u32(&r);
    /* Epoch 64 would need 4^64 pulls per arm; anything near it is not a real state. */
    if (r.bad || epoch < 1 || epoch > 64 || s_start < 1 || s_start > k)
        goto done;
    if (q->doubling) {
        uint32_t phase = agg_get_u32(&r);
        uint64_t phase_t = agg_get_u64(&r);
        if (r.bad || phase < 1 || phase > DP_SE_PHASE_MAX ||
            (phase < DP_SE_PHASE_MAX && phase_t >= (uint64_t)1 << phase))
            goto done;
        start_phase(q, phase);
        q->phase_t = phase_t;
    }
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

/* The same algorithm under the doubling schedule whatever the horizon, so that a simulator,
 * which always knows T, can run DP-SE as a service without a horizon would. No fast-forward: the
 * phase ends cut epochs. */
const agg_policy_ops agg_policy_dp_se_doubling = {
    .name = "dp-se-doubling",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .params = AGG_PARAM_EPSILON | AGG_PARAM_BETA,
    .create = dp_se_doubling_create,
    .choose = dp_se_choose,
    .observe = dp_se_observe,
    .save = dp_se_save,
    .restore = dp_se_restore,
    .describe = dp_se_describe,
    .free = dp_se_free,
};
