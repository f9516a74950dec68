/* dp-ucb: Mishra & Thakurta's private UCB (algorithms.md 4.1). One binary tree mechanism per arm
 * over that arm's rewards (leaf = the arm's pull count), each with budget eps_arm (default eps,
 * parallel composition; eps/K reproduces MT15 literally), and the UCB index widened by
 * nu = (Lv^2 / eps_arm) ln(K T Lv / gamma) to absorb the tree noise:
 *     index_a = s_hat_a / n_a + sqrt(2 ln t / n_a) + nu / n_a,
 * after one initial pull of every arm. t is the round being chosen (observations so far + 1).
 * Per round O(K): s_hat_a/n_a + nu/n_a and 1/sqrt(n_a) are cached and change only for the
 * observed arm, so a choice costs one log, one sqrt and K multiply-adds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "policy.h"
#include "statefmt.h"

#define DP_UCB_STATE_VERSION 1

typedef struct dp_ucb {
    agg_policy base;
    uint64_t horizon;
    double eps_arm, gamma, nu;
    uint64_t observed; /* observations so far, all arms */
    uint32_t rr;       /* where the initial round robin looks next */
    uint32_t unpulled; /* arms not observed yet */
    uint64_t *n;       /* [k] observations per arm */
    double *shat;      /* [k] released noisy sum */
    double *base_idx;  /* [k] (shat + nu) / n */
    double *inv_sqrt;  /* [k] 1 / sqrt(n) */
    agg_tree **tree;   /* [k] */
} dp_ucb;

extern const agg_policy_ops agg_policy_dp_ucb;

static void dp_ucb_free(agg_policy *pp)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p)
        return;
    if (p->tree)
        for (uint32_t a = 0; a < p->base.cfg.k; a++)
            agg_tree_free(p->tree[a]);
    free(p->tree);
    free(p->n);
    free(p->shat);
    free(p->base_idx);
    free(p->inv_sqrt);
    free(p);
}

static ldpb_err dp_ucb_create(agg_policy **out, const agg_policy_config *cfg,
                              char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "dp-ucb: NULL argument");
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "dp-ucb", 1, errmsg);
    if (err == LDPB_OK)
        err = agg_policy_check_epsilon(cfg, "dp-ucb", errmsg);
    if (err != LDPB_OK)
        return err;
    double gamma = cfg->gamma == 0 ? 1.0 / (double)cfg->horizon : cfg->gamma;
    if (!(gamma > 0 && gamma < 1))
        return agg_policy_refuse(errmsg, isnan(gamma) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "dp-ucb: gamma %g outside (0, 1)", cfg->gamma);
    double eps_arm = cfg->eps_arm == 0 ? cfg->epsilon : cfg->eps_arm;
    if (!isfinite(eps_arm) || !(eps_arm > 0))
        return agg_policy_refuse(errmsg, isnan(eps_arm) ? LDPB_EINVAL : LDPB_ERANGE,
                                 "dp-ucb: eps_arm %g must be > 0 and finite", cfg->eps_arm);

    uint32_t k = cfg->k;
    double lv = (double)agg_tree_levels(cfg->horizon);
    double nu = lv * lv / eps_arm * log((double)k * (double)cfg->horizon * lv / gamma);
    if (!isfinite(nu))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "dp-ucb: eps_arm %g too small: nu overflows",
                                 eps_arm);
    dp_ucb *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "dp-ucb: out of memory");
    p->base.ops = &agg_policy_dp_ucb;
    p->base.cfg = *cfg;
    p->horizon = cfg->horizon;
    p->eps_arm = eps_arm;
    p->gamma = gamma;
    p->nu = nu;
    p->unpulled = k;
    p->n = calloc(k, sizeof *p->n);
    p->shat = calloc(k, sizeof *p->shat);
    p->base_idx = calloc(k, sizeof *p->base_idx);
    p->inv_sqrt = calloc(k, sizeof *p->inv_sqrt);
    p->tree = calloc(k, sizeof *p->tree);
    err = LDPB_ENOMEM;
    if (!p->n || !p->shat || !p->base_idx || !p->inv_sqrt || !p->tree)
        goto fail;
    for (uint32_t a = 0; a < k; a++)
        if ((err = agg_tree_new(&p->tree[a], cfg->horizon, eps_arm, 0.0, 1.0)) != LDPB_OK)
            goto fail;
    *out = &p->base;
    return LDPB_OK;
fail:
    dp_ucb_free(&p->base);
    if (err == LDPB_ENOMEM)
        return agg_policy_refuse(errmsg, err, "dp-ucb: out of memory");
    return agg_policy_refuse(
        errmsg, err, "dp-ucb: eps_arm %g too small: the tree noise scale overflows", eps_arm);
}

static ldpb_err dp_ucb_choose(agg_policy *pp, agg_policy_env *env, uint32_t *arm)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p || !env || !env->rand || !env->noise || !arm)
        return LDPB_EINVAL;
    uint32_t k = p->base.cfg.k;
    if (p->unpulled) {
        /* Initial round robin over the arms not observed yet. */
        uint32_t a = p->rr;
        while (p->n[a] != 0)
            a = a + 1 == k ? 0 : a + 1;
        p->rr = a + 1 == k ? 0 : a + 1;
        *arm = a;
        return LDPB_OK;
    }
    double width = sqrt(2 * log((double)p->observed + 1));
    /* Ties (possible only between equal noisy sums) are broken at random. */
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, p->base_idx[a] + width * p->inv_sqrt[a], env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

/* The cached per-arm terms, from n and the release only, so restore recomputes them exactly. */
static void refresh_arm(dp_ucb *p, uint32_t a)
{
    double inv = 1 / (double)p->n[a];
    p->base_idx[a] = (p->shat[a] + p->nu) * inv;
    p->inv_sqrt[a] = sqrt(inv);
}

static ldpb_err dp_ucb_observe(agg_policy *pp, agg_policy_env *env, uint32_t arm, double obs)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p || !env || !env->noise || arm >= p->base.cfg.k || isnan(obs))
        return LDPB_EINVAL;
    double release;
    ldpb_err err = agg_tree_push(p->tree[arm], env->noise, obs, &release);
    if (err != LDPB_OK)
        return err;
    if (p->n[arm]++ == 0)
        p->unpulled--;
    p->observed++;
    p->shat[arm] = release;
    refresh_arm(p, arm);
    return LDPB_OK;
}

static ldpb_err dp_ucb_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const dp_ucb *p = (const dp_ucb *)pp;
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, pp, DP_UCB_STATE_VERSION);
    agg_put_u64(&w, p->observed);
    agg_put_u32(&w, p->rr);
    for (uint32_t a = 0; a < p->base.cfg.k; a++)
        agg_tree_save(p->tree[a], &w); /* the count in the tree is n_a */
    return agg_wbuf_finish(&w, len);
}

static ldpb_err dp_ucb_restore(agg_policy *pp, const uint8_t *buf, size_t len)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    /* Decode into a fresh policy and swap only when every field checked out. */
    agg_policy *tmp_base = NULL;
    ldpb_err err = dp_ucb_create(&tmp_base, &p->base.cfg, NULL);
    if (err != LDPB_OK)
        return err;
    dp_ucb *q = (dp_ucb *)tmp_base;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    err = agg_state_get_header(&r, pp, DP_UCB_STATE_VERSION);
    if (err != LDPB_OK)
        goto done;
    err = LDPB_ECORRUPT;
    q->observed = agg_get_u64(&r);
    q->rr = agg_get_u32(&r);
    if (r.bad || q->rr >= q->base.cfg.k)
        goto done;
    uint64_t total = 0;
    for (uint32_t a = 0; a < q->base.cfg.k; a++) {
        if (agg_tree_restore(q->tree[a], &r) != LDPB_OK)
            goto done;
        q->n[a] = agg_tree_count(q->tree[a]);
        total += q->n[a];
        if (q->n[a]) {
            q->unpulled--;
            q->shat[a] = agg_tree_release(q->tree[a]);
            refresh_arm(q, a);
        }
    }
    if (!agg_rbuf_done(&r) || total != q->observed)
        goto done;
    dp_ucb swap = *p;
    *p = *q;
    *q = swap;
    err = LDPB_OK;
done:
    dp_ucb_free(&q->base);
    return err;
}

static ldpb_err dp_ucb_describe(const agg_policy *pp, agg_arm_status *arms, uint32_t k)
{
    const dp_ucb *p = (const dp_ucb *)pp;
    if (!p || !arms || k != p->base.cfg.k)
        return LDPB_EINVAL;
    double width = sqrt(2 * log((double)p->observed + 1));
    for (uint32_t a = 0; a < k; a++) {
        agg_arm_status *s = &arms[a];
        s->pulls = p->n[a];
        s->active = 1;
        if (p->n[a] == 0) {
            s->estimate = s->ci_low = s->ci_high = NAN;
            continue;
        }
        double n = (double)p->n[a];
        s->estimate = p->shat[a] / n;
        double radius = width * p->inv_sqrt[a] + p->nu / n;
        s->ci_low = s->estimate - radius;
        s->ci_high = s->estimate + radius;
    }
    return LDPB_OK;
}

const agg_policy_ops agg_policy_dp_ucb = {
    .name = "dp-ucb",
    .model = AGG_MODEL_CENTRAL,
    .mergeable = 0,
    .create = dp_ucb_create,
    .choose = dp_ucb_choose,
    .observe = dp_ucb_observe,
    .save = dp_ucb_save,
    .restore = dp_ucb_restore,
    .describe = dp_ucb_describe,
    .free = dp_ucb_free,
};
