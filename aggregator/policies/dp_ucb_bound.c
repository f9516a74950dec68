/* dp-ucb-bound: Tossou & Dimitrakakis' DP-UCB-Bound (algorithms.md 4.2). One hybrid mechanism
 * per arm over that arm's rewards with the full eps (parallel composition), so the horizon need
 * not be known, and the index
 *     index_a = s_hat_a / n_a + sqrt(2 ln t / n_a) + nu_a(t) / n_a,
 *     nu_a(t) = (sqrt(8)/eps) ln(4 t^4) * (1 if n_a is a power of two, else 1 + ln n_a),
 * after one initial pull of every arm; t is the round being chosen (observations so far + 1).
 * Per round O(K): s_hat_a/n_a, 1/sqrt(n_a) and the nu factor over n_a are cached per arm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "policy.h"
#include "statefmt.h"

#define DP_UCB_BOUND_STATE_VERSION 1

typedef struct dp_ucb_bound {
    agg_policy base;
    uint64_t observed;
    uint32_t rr;
    uint32_t unpulled;
    uint64_t *n;         /* [k] */
    double *shat;        /* [k] released noisy sum */
    double *mean;        /* [k] shat / n */
    double *inv_sqrt;    /* [k] 1 / sqrt(n) */
    double *nu_weight;   /* [k] (1 or 1 + ln n) / n */
    agg_hybrid **hybrid; /* [k] */
} dp_ucb_bound;

extern const agg_policy_ops agg_policy_dp_ucb_bound;

static void dp_ucb_bound_free(agg_policy *pp)
{
    dp_ucb_bound *p = (dp_ucb_bound *)pp;
    if (!p)
        return;
    if (p->hybrid)
        for (uint32_t a = 0; a < p->base.cfg.k; a++)
            agg_hybrid_free(p->hybrid[a]);
    free(p->hybrid);
    free(p->n);
    free(p->shat);
    free(p->mean);
    free(p->inv_sqrt);
    free(p->nu_weight);
    free(p);
}

static ldpb_err dp_ucb_bound_create(agg_policy **out, const agg_policy_config *cfg,
                                    char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "dp-ucb-bound: NULL argument");
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "dp-ucb-bound", 0, errmsg);
    if (err == LDPB_OK)
        err = agg_policy_check_epsilon(cfg, "dp-ucb-bound", errmsg);
    if (err != LDPB_OK)
        return err;

    uint32_t k = cfg->k;
    dp_ucb_bound *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "dp-ucb-bound: out of memory");
    p->base.ops = &agg_policy_dp_ucb_bound;
    p->base.cfg = *cfg;
    p->unpulled = k;
    p->n = calloc(k, sizeof *p->n);
    p->shat = calloc(k, sizeof *p->shat);
    p->mean = calloc(k, sizeof *p->mean);
    p->inv_sqrt = calloc(k, sizeof *p->inv_sqrt);
    p->nu_weight = calloc(k, sizeof *p->nu_weight);
    p->hybrid = calloc(k, sizeof *p->hybrid);
    err = LDPB_ENOMEM;
    if (!p->n || !p->shat || !p->mean || !p->inv_sqrt || !p->nu_weight || !p->hybrid)
        goto fail;
    for (uint32_t a = 0; a < k; a++)
        if ((err = agg_hybrid_new(&p->hybrid[a], cfg->epsilon, 0.0, 1.0)) != LDPB_OK)
            goto fail;
    *out = &p->base;
    return LDPB_OK;
fail:
    dp_ucb_bound_free(&p->base);
    if (err == LDPB_ENOMEM)
        return agg_policy_refuse(errmsg, err, "dp-ucb-bound: out of memory");
    return agg_policy_refuse(
        errmsg, err, "dp-ucb-bound: epsilon %g too small: the noise scale overflows", cfg->epsilon);
}

static ldpb_err dp_ucb_bound_choose(agg_policy *pp, agg_policy_env *env, uint32_t *arm)
{
    dp_ucb_bound *p = (dp_ucb_bound *)pp;
    if (!p || !env || !env->rand || !env->noise || !arm)
        return LDPB_EINVAL;
    uint32_t k = p->base.cfg.k;
    if (p->unpulled) {
        uint32_t a = p->rr;
        while (p->n[a] != 0)
            a = a + 1 == k ? 0 : a + 1;
        p->rr = a + 1 == k ? 0 : a + 1;
        *arm = a;
        return LDPB_OK;
    }
    double log_t = log((double)p->observed + 1);
    double width = sqrt(2 * log_t);
    double nu = sqrt(8.0) / p->base.cfg.epsilon * (log(4.0) + 4 * log_t); /* ln(4 t^4) */
    /* Ties (possible only between equal noisy sums) are broken at random. */
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, p->mean[a] + width * p->inv_sqrt[a] + nu * p->nu_weight[a],
                         env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

static void refresh_arm(dp_ucb_bound *p, uint32_t a)
{
    uint64_t c = p->n[a];
    double inv = 1 / (double)c;
    p->mean[a] = p->shat[a] * inv;
    p->inv_sqrt[a] = sqrt(inv);
    /* The logarithmic part alone at powers of two; the binary part adds a factor 1 + ln n. */
    p->nu_weight[a] = ((c & (c - 1)) == 0 ? 1.0 : 1.0 + log((double)c)) * inv;
}

static ldpb_err dp_ucb_bound_observe(agg_policy *pp, agg_policy_env *env, uint32_t arm, double obs)
{
    dp_ucb_bound *p = (dp_ucb_bound *)pp;
    if (!p || !env || !env->noise || arm >= p->base.cfg.k || isnan(obs))
        return LDPB_EINVAL;
    double release;
    ldpb_err err = agg_hybrid_push(p->hybrid[arm], env->noise, obs, &release);
    if (err != LDPB_OK)
        return err;
    if (p->n[arm]++ == 0)
        p->unpulled--;
    p->observed++;
    p->shat[arm] = release;
    refresh_arm(p, arm);
    return LDPB_OK;
}

static ldpb_err dp_ucb_bound_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const dp_ucb_bound *p = (const dp_ucb_bound *)pp;
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, pp, DP_UCB_BOUND_STATE_VERSION);
    agg_put_u64(&w, p->observed);
    agg_put_u32(&w, p->rr);
    for (uint32_t a = 0; a < p->base.cfg.k; a++)
        agg_hybrid_save(p->hybrid[a], &w);
    return agg_wbuf_finish(&w, len);
}

static ldpb_err dp_ucb_bound_restore(agg_policy *pp, const uint8_t *buf, size_t len)
{
    dp_ucb_bound *p = (dp_ucb_bound *)pp;
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    agg_policy *tmp_base = NULL;
    ldpb_err err = dp_ucb_bound_create(&tmp_base, &p->base.cfg, NULL);
    if (err != LDPB_OK)
        return err;
    dp_ucb_bound *q = (dp_ucb_bound *)tmp_base;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    err = agg_state_get_header(&r, pp, DP_UCB_BOUND_STATE_VERSION);
    if (err != LDPB_OK)
        goto done;
    err = LDPB_ECORRUPT;
    q->observed = agg_get_u64(&r);
    q->rr = agg_get_u32(&r);
    if (r.bad || q->rr >= q->base.cfg.k)
        goto done;
    uint64_t total = 0;
    for (uint32_t a = 0; a < q->base.cfg.k; a++) {
        if (agg_hybrid_restore(q->hybrid[a], &r) != LDPB_OK)
            goto done;
        q->n[a] = agg_hybrid_count(q->hybrid[a]);
        total += q->n[a];
        if (q->n[a]) {
            q->unpulled--;
            q->shat[a] = agg_hybrid_release(q->hybrid[a]);
            refresh_arm(q, a);
        }
    }
    if (!agg_rbuf_done(&r) || total != q->observed)
        goto done;
    dp_ucb_bound swap = *p;
    *p = *q;
    *q = swap;
    err = LDPB_OK;
done:
    dp_ucb_bound_free(&q->base);
    return err;
}

static ldpb_err dp_ucb_bound_describe(const agg_policy *pp, agg_arm_status *arms, uint32_t k)
{
    const dp_ucb_bound *p = (const dp_ucb_bound *)pp;
    if (!p || !arms || k != p->base.cfg.k)
        return LDPB_EINVAL;
    double log_t = log((double)p->observed + 1);
    double width = sqrt(2 * log_t);
    double nu = sqrt(8.0) / p->base.cfg.epsilon * (log(4.0) + 4 * log_t);
    for (uint32_t a = 0; a < k; a++) {
        agg_arm_status *s = &arms[a];
        s->pulls = p->n[a];
        s->active = 1;
        if (p->n[a] == 0) {
            s->estimate = s->ci_low = s->ci_high = NAN;
            continue;
        }
        s->estimate = p->mean[a];
        double radius = width * p->inv_sqrt[a] + nu * p->nu_weight[a];
        s->ci_low = s->estimate - radius;
        s->ci_high = s->estimate + radius;
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_dp_ucb_bound = {
    .name = "dp-ucb-bound",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .create = dp_ucb_bound_create,
    .choose = dp_ucb_bound_choose,
    .observe = dp_ucb_bound_observe,
    .save = dp_ucb_bound_save,
    .restore = dp_ucb_bound_restore,
    .describe = dp_ucb_bound_describe,
    .free = dp_ucb_bound_free,
};
