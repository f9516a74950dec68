/* The Thompson Sampling engine (ts_family.h): state, choice, update, state format and describe()
 * of TS and LDP-TS-B. */
#include "ts_family.h"

#include <math.h>
#include <stdlib.h>

#include "statefmt.h"

typedef struct ts {
    agg_policy base;
    const agg_ts_variant *v;
    ldpb_mech *mech;          /* the clients' mechanism, or NULL */
    uint64_t *s, *f;          /* successes and failures per arm */
    agg_gamma_shape *gs, *gf; /* Gamma(S_a + 1), Gamma(F_a + 1) constants */
} ts;

void agg_ts_free(agg_policy *p)
{
    ts *x = (ts *)p;
    if (!x)
        return;
    ldpb_mech_free(x->mech);
    free(x->s);
    free(x->f);
    free(x->gs);
    free(x->gf);
    free(x);
}

ldpb_err agg_ts_new(agg_policy **out, const agg_policy_config *cfg, const agg_ts_variant *v,
                    char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, v->ops->name, 0, errmsg);
    if (err)
        return err;
    ldpb_mech *mech = NULL;
    if (v->prepare && (err = v->prepare(cfg, &mech, errmsg)) != LDPB_OK)
        return err;
    size_t k = cfg->k;
    ts *x = calloc(1, sizeof *x);
    if (!x) {
        ldpb_mech_free(mech);
        goto nomem;
    }
    x->base.ops = v->ops;
    x->base.cfg = *cfg;
    x->v = v;
    x->mech = mech;
    x->s = calloc(k, sizeof *x->s);
    x->f = calloc(k, sizeof *x->f);
    x->gs = calloc(k, sizeof *x->gs);
    x->gf = calloc(k, sizeof *x->gf);
    if (!x->s || !x->f || !x->gs || !x->gf)
        goto nomem;
    for (size_t a = 0; a < k; a++) {
        agg_gamma_shape_init(&x->gs[a], 1.0);
        agg_gamma_shape_init(&x->gf[a], 1.0);
    }
    *out = &x->base;
    return LDPB_OK;
nomem:
    agg_ts_free(x ? &x->base : NULL);
    return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory for %u arms", v->ops->name,
                             cfg->k);
}

ldpb_err agg_ts_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    ts *x = (ts *)p;
    *arm = agg_rand_beta_argmax(env->rand, x->gs, x->gf, p->cfg.k);
    return LDPB_OK;
}

ldpb_err agg_ts_observe(agg_policy *p, agg_policy_env *env, uint32_t a, double obs)
{
    ts *x = (ts *)p;
    if (x->v->success(env, obs)) {
        x->s[a]++;
        agg_gamma_shape_init(&x->gs[a], (double)x->s[a] + 1.0);
    } else {
        x->f[a]++;
        agg_gamma_shape_init(&x->gf[a], (double)x->f[a] + 1.0);
    }
    return LDPB_OK;
}

ldpb_err agg_ts_merge(agg_policy *dst, const agg_policy *src)
{
    ts *d = (ts *)dst;
    const ts *s = (const ts *)src;
    const uint64_t count_max = (uint64_t)1 << 53; /* as decode() accepts */
    for (uint32_t a = 0; a < dst->cfg.k; a++)
        if (s->s[a] > count_max - d->s[a] || s->f[a] > count_max - d->f[a] ||
            d->s[a] + s->s[a] > count_max - (d->f[a] + s->f[a]))
            return LDPB_ERANGE;
    for (uint32_t a = 0; a < dst->cfg.k; a++) {
        if (s->s[a]) {
            d->s[a] += s->s[a];
            agg_gamma_shape_init(&d->gs[a], (double)d->s[a] + 1.0);
        }
        if (s->f[a]) {
            d->f[a] += s->f[a];
            agg_gamma_shape_init(&d->gf[a], (double)d->f[a] + 1.0);
        }
    }
    return LDPB_OK;
}

ldpb_err agg_ts_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ts *x = (const ts *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, x->v->state_version);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, x->s[a]);
        agg_put_u64(&w, x->f[a]);
    }
    return agg_wbuf_finish(&w, len);
}

/* Any counts are a valid posterior; they only have to be representable exactly as the doubles
 * the sampler uses (below 2^53) and their sum must not overflow. */
static ldpb_err decode(ts *x, const uint8_t *buf, size_t len, int commit)
{
    const uint64_t count_max = (uint64_t)1 << 53;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &x->base, x->v->state_version);
    if (err)
        return err;
    for (uint32_t a = 0; a < x->base.cfg.k; a++) {
        uint64_t s = agg_get_u64(&r), f = agg_get_u64(&r);
        if (s > count_max || f > count_max)
            return LDPB_ECORRUPT;
        if (commit) {
            x->s[a] = s;
            x->f[a] = f;
            agg_gamma_shape_init(&x->gs[a], (double)s + 1.0);
            agg_gamma_shape_init(&x->gf[a], (double)f + 1.0);
        }
    }
    return agg_rbuf_done(&r) ? LDPB_OK : LDPB_ECORRUPT;
}

ldpb_err agg_ts_restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ts *x = (ts *)p;
    ldpb_err err = decode(x, buf, len, 0);
    return err ? err : decode(x, buf, len, 1);
}

ldpb_err agg_ts_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ts *x = (const ts *)p;
    for (uint32_t a = 0; a < k; a++) {
        uint64_t n = x->s[a] + x->f[a];
        arms[a].pulls = n;
        arms[a].active = 1;
        arms[a].estimate = arms[a].ci_low = arms[a].ci_high = NAN;
        if (n == 0)
            continue;
        ldpb_err err = x->v->estimate(x->mech, x->s[a], n, &arms[a]);
        if (err)
            return err;
    }
    return LDPB_OK;
}
