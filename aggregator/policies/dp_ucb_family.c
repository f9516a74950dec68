/* The central-DP UCB engine (dp_ucb_family.h): counters, choice, update, state format and
 * describe() of dp-ucb and dp-ucb-bound. */
#include "dp_ucb_family.h"

#include <math.h>
#include <stdlib.h>

#include "counter.h"
#include "statefmt.h"

typedef struct dp_ucb {
    agg_policy base;
    const agg_dp_ucb_variant *v;
    agg_dp_ucb_params par;
    uint64_t observed;   /* observations so far, all arms */
    uint32_t rr;         /* where the initial round robin looks next */
    uint32_t unpulled;   /* arms not observed yet */
    uint64_t *n;         /* [k] observations per arm */
    double *shat;        /* [k] released noisy sum */
    double *base_idx;    /* [k] the variant's per-arm term (see terms()) */
    double *inv_sqrt;    /* [k] 1 / sqrt(n) */
    double *nu_weight;   /* [k] the per-arm factor of a per-round nu */
    agg_tree **tree;     /* [k] for AGG_DP_UCB_TREE, else NULL */
    agg_hybrid **hybrid; /* [k] for AGG_DP_UCB_HYBRID, else NULL */
} dp_ucb;

void agg_dp_ucb_free(agg_policy *pp)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p)
        return;
    for (uint32_t a = 0; a < p->base.cfg.k; a++) {
        if (p->tree)
            agg_tree_free(p->tree[a]);
        if (p->hybrid)
            agg_hybrid_free(p->hybrid[a]);
    }
    free(p->tree);
    free(p->hybrid);
    free(p->n);
    free(p->shat);
    free(p->base_idx);
    free(p->inv_sqrt);
    free(p->nu_weight);
    free(p);
}

ldpb_err agg_dp_ucb_new(agg_policy **out, const agg_policy_config *cfg, const agg_dp_ucb_variant *v,
                        char errmsg[AGG_ERRMSG_MAX])
{
    const char *name = v->ops->name;
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: NULL argument", name);
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, name, v->need_horizon, errmsg);
    if (err == LDPB_OK)
        err = agg_policy_check_epsilon(cfg, name, errmsg);
    if (err != LDPB_OK)
        return err;
    agg_dp_ucb_params par = {.eps = cfg->epsilon, .nu = 0.0};
    if ((err = v->prepare(cfg, &par, errmsg)) != LDPB_OK)
        return err;

    uint32_t k = cfg->k;
    dp_ucb *p = calloc(1, sizeof *p);
    if (!p)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory", name);
    p->base.ops = v->ops;
    p->base.cfg = *cfg;
    p->v = v;
    p->par = par;
    p->unpulled = k;
    p->n = calloc(k, sizeof *p->n);
    p->shat = calloc(k, sizeof *p->shat);
    p->base_idx = calloc(k, sizeof *p->base_idx);
    p->inv_sqrt = calloc(k, sizeof *p->inv_sqrt);
    p->nu_weight = calloc(k, sizeof *p->nu_weight);
    if (v->counter == AGG_DP_UCB_TREE)
        p->tree = calloc(k, sizeof *p->tree);
    else
        p->hybrid = calloc(k, sizeof *p->hybrid);
    err = LDPB_ENOMEM;
    if (!p->n || !p->shat || !p->base_idx || !p->inv_sqrt || !p->nu_weight ||
        (!p->tree && !p->hybrid))
        goto fail;
    for (uint32_t a = 0; a < k; a++) {
        if (p->tree)
            err = agg_tree_new(&p->tree[a], cfg->horizon, par.eps, 0.0, 1.0);
        else
            err = agg_hybrid_new(&p->hybrid[a], par.eps, 0.0, 1.0);
        if (err != LDPB_OK)
            goto fail;
    }
    *out = &p->base;
    return LDPB_OK;
fail:
    agg_dp_ucb_free(&p->base);
    if (err == LDPB_ENOMEM)
        return agg_policy_refuse(errmsg, err, "%s: out of memory", name);
    return agg_policy_refuse(errmsg, err, "%s: %s %g too small: the %s overflows", name,
                             v->eps_name, par.eps, v->scale_name);
}

ldpb_err agg_dp_ucb_choose(agg_policy *pp, agg_policy_env *env, uint32_t *arm)
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
    double log_t = log((double)p->observed + 1);
    double width = sqrt(2 * log_t);
    agg_argmax m;
    agg_argmax_init(&m);
    if (p->v->round_nu) {
        double nu = p->v->round_nu(&p->par, log_t);
        for (uint32_t a = 0; a < k; a++)
            agg_argmax_offer(&m, a, p->base_idx[a] + width * p->inv_sqrt[a] + nu * p->nu_weight[a],
                             env->rand);
    } else {
        for (uint32_t a = 0; a < k; a++)
            agg_argmax_offer(&m, a, p->base_idx[a] + width * p->inv_sqrt[a], env->rand);
    }
    *arm = m.arm;
    return LDPB_OK;
}

/* The cached per-arm terms, from n and the release only, so restore recomputes them exactly. */
static void refresh_arm(dp_ucb *p, uint32_t a)
{
    double inv = 1 / (double)p->n[a];
    p->v->terms(&p->par, p->n[a], inv, p->shat[a], &p->base_idx[a], &p->nu_weight[a]);
    p->inv_sqrt[a] = sqrt(inv);
}

ldpb_err agg_dp_ucb_observe(agg_policy *pp, agg_policy_env *env, uint32_t arm, double obs)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p || !env || !env->noise || arm >= p->base.cfg.k || isnan(obs))
        return LDPB_EINVAL;
    double release;
    ldpb_err err = p->tree ? agg_tree_push(p->tree[arm], env->noise, obs, &release)
                           : agg_hybrid_push(p->hybrid[arm], env->noise, obs, &release);
    if (err != LDPB_OK)
        return err;
    if (p->n[arm]++ == 0)
        p->unpulled--;
    p->observed++;
    p->shat[arm] = release;
    refresh_arm(p, arm);
    return LDPB_OK;
}

ldpb_err agg_dp_ucb_save(const agg_policy *pp, uint8_t *buf, size_t cap, size_t *len)
{
    const dp_ucb *p = (const dp_ucb *)pp;
    if (!p || !len)
        return LDPB_EINVAL;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, pp, p->v->state_version);
    agg_put_u64(&w, p->observed);
    agg_put_u32(&w, p->rr);
    for (uint32_t a = 0; a < p->base.cfg.k; a++) { /* the count in the counter is n_a */
        if (p->tree)
            agg_tree_save(p->tree[a], &w);
        else
            agg_hybrid_save(p->hybrid[a], &w);
    }
    return agg_wbuf_finish(&w, len);
}

ldpb_err agg_dp_ucb_restore(agg_policy *pp, const uint8_t *buf, size_t len)
{
    dp_ucb *p = (dp_ucb *)pp;
    if (!p || (!buf && len))
        return LDPB_EINVAL;
    /* Decode into a fresh policy and swap only when every field checked out. */
    agg_policy *tmp_base = NULL;
    ldpb_err err = agg_dp_ucb_new(&tmp_base, &p->base.cfg, p->v, NULL);
    if (err != LDPB_OK)
        return err;
    dp_ucb *q = (dp_ucb *)tmp_base;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    err = agg_state_get_header(&r, pp, p->v->state_version);
    if (err != LDPB_OK)
        goto done;
    err = LDPB_ECORRUPT;
    q->observed = agg_get_u64(&r);
    q->rr = agg_get_u32(&r);
    if (r.bad || q->rr >= q->base.cfg.k)
        goto done;
    uint64_t total = 0;
    for (uint32_t a = 0; a < q->base.cfg.k; a++) {
        if ((q->tree ? agg_tree_restore(q->tree[a], &r) : agg_hybrid_restore(q->hybrid[a], &r)) !=
            LDPB_OK)
            goto done;
        q->n[a] = q->tree ? agg_tree_count(q->tree[a]) : agg_hybrid_count(q->hybrid[a]);
        total += q->n[a];
        if (q->n[a]) {
            q->unpulled--;
            q->shat[a] = q->tree ? agg_tree_release(q->tree[a]) : agg_hybrid_release(q->hybrid[a]);
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
    agg_dp_ucb_free(&q->base);
    return err;
}

ldpb_err agg_dp_ucb_describe(const agg_policy *pp, agg_arm_status *arms, uint32_t k)
{
    const dp_ucb *p = (const dp_ucb *)pp;
    if (!p || !arms || k != p->base.cfg.k)
        return LDPB_EINVAL;
    double log_t = log((double)p->observed + 1);
    double width = sqrt(2 * log_t);
    double nu = p->v->round_nu ? p->v->round_nu(&p->par, log_t) : 0.0;
    for (uint32_t a = 0; a < k; a++) {
        agg_arm_status *s = &arms[a];
        s->pulls = p->n[a];
        s->active = 1;
        if (p->n[a] == 0) {
            s->estimate = s->ci_low = s->ci_high = NAN;
            continue;
        }
        double nu_radius;
        p->v->estimate(&p->par, p->n[a], p->shat[a], p->base_idx[a], p->nu_weight[a], nu,
                       &s->estimate, &nu_radius);
        double radius = width * p->inv_sqrt[a] + nu_radius;
        s->ci_low = s->estimate - radius;
        s->ci_high = s->estimate + radius;
    }
    return LDPB_OK;
}
