/* Adversaries (adversary.h). */
#include "adversary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct agg_adv {
    agg_adv_params p;
};

struct agg_adv_game {
    agg_adv_params p;
    agg_rand r;
    uint64_t t;   /* rounds generated */
    uint32_t chi; /* switching: the best arm */
    double m[66]; /* switching: m[j] = W of the latest round s with delta(s) >= j (W_0 = 0) */
    double *last; /* [k] oblivious: the gains repeated between fresh rounds */
};

static const char *const kind_names[] = {
    NULL, "deterministic", "stochastic", "fully-oblivious", "oblivious", "switching"};

agg_adv_kind agg_adv_kind_parse(const char *name)
{
    for (int i = 1; name && i <= AGG_ADV_SWITCHING; i++)
        if (strcmp(name, kind_names[i]) == 0)
            return (agg_adv_kind)i;
    return (agg_adv_kind)0;
}

const char *agg_adv_kind_name(agg_adv_kind kind)
{
    return kind >= AGG_ADV_DETERMINISTIC && kind <= AGG_ADV_SWITCHING ? kind_names[kind]
                                                                      : "unknown";
}

void agg_adv_params_init(agg_adv_params *p, agg_adv_kind kind, uint32_t k, uint64_t horizon)
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->k = k;
    p->horizon = horizon;
    p->det_const = 0.38;
    p->det_period = 3;
    p->det_rest = 0.0;
    p->stoch_first = 0.55;
    p->stoch_rest = 0.5;
    p->obl_eps = 0.05;
    p->obl_period = 200;
    p->sw_sigma = 0.0;
    p->sw_eps = 0.0;
}

static ldpb_err unit(const char *kind, const char *field, double v, double lo, double hi,
                     char errmsg[AGG_ERRMSG_MAX])
{
    if (isnan(v))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "adversary %s: %s is NaN", kind, field);
    if (!(v >= lo && v <= hi))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "adversary %s: %s %g outside [%g, %g]", kind,
                                 field, v, lo, hi);
    return LDPB_OK;
}

ldpb_err agg_adv_new(agg_adv **out, const agg_adv_params *in, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !in)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "adversary: NULL argument");
    *out = NULL;
    const char *kn = agg_adv_kind_name(in->kind);
    if (in->kind < AGG_ADV_DETERMINISTIC || in->kind > AGG_ADV_SWITCHING)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "adversary: unknown kind %d", (int)in->kind);
    if (in->k < 2 || in->k > AGG_POLICY_K_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "adversary %s: k %u outside [2, %u]", kn,
                                 in->k, AGG_POLICY_K_MAX);
    if (in->horizon < 2)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "adversary %s: horizon %llu < 2", kn,
                                 (unsigned long long)in->horizon);
    agg_adv_params p = *in;
    ldpb_err err = LDPB_OK;
    switch (p.kind) {
    case AGG_ADV_DETERMINISTIC:
        if ((err = unit(kn, "det_const", p.det_const, 0, 1, errmsg)) ||
            (err = unit(kn, "det_rest", p.det_rest, 0, 1, errmsg)))
            return err;
        if (p.det_period < 1)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "adversary %s: det_period 0 (>= 1)", kn);
        break;
    case AGG_ADV_STOCHASTIC:
        if ((err = unit(kn, "stoch_first", p.stoch_first, 0, 1, errmsg)) ||
            (err = unit(kn, "stoch_rest", p.stoch_rest, 0, 1, errmsg)))
            return err;
        break;
    case AGG_ADV_OBLIVIOUS:
        if (p.obl_period < 1)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "adversary %s: obl_period 0 (>= 1)", kn);
        /* fall through */
    case AGG_ADV_FULLY_OBLIVIOUS:
        if ((err = unit(kn, "obl_eps", p.obl_eps, 0, 0.25, errmsg)))
            return err;
        break;
    case AGG_ADV_SWITCHING: {
        double l2 = 9.0 * log2((double)p.horizon);
        if (p.sw_sigma == 0.0)
            p.sw_sigma = 1.0 / l2;
        if (p.sw_eps == 0.0)
            p.sw_eps = cbrt((double)p.k / (double)p.horizon) / l2;
        if ((err = unit(kn, "sw_sigma", p.sw_sigma, 0, 1, errmsg)) ||
            (err = unit(kn, "sw_eps", p.sw_eps, 0, 1, errmsg)))
            return err;
        break;
    }
    }
    agg_adv *a = malloc(sizeof *a);
    if (!a)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "adversary %s: out of memory", kn);
    a->p = p;
    *out = a;
    return LDPB_OK;
}

void agg_adv_free(agg_adv *a)
{
    free(a);
}

uint32_t agg_adv_arms(const agg_adv *a)
{
    return a->p.k;
}

const agg_adv_params *agg_adv_get_params(const agg_adv *a)
{
    return &a->p;
}

int agg_adv_switch_costs(const agg_adv *a)
{
    return a->p.kind == AGG_ADV_SWITCHING;
}

static void fully_oblivious(agg_adv_game *g, double *gains)
{
    double e = g->p.obl_eps;
    for (uint32_t i = 0; i < g->p.k; i++) {
        double lo = i == 0 ? 0.5 : 0.5 - e, width = 2.0 * e;
        double q = lo + width * agg_rand_uniform(&g->r);
        gains[i] = agg_rand_uniform(&g->r) < q ? 1.0 : 0.0;
    }
}

ldpb_err agg_adv_game_new(agg_adv_game **out, const agg_adv *a, const agg_rand *r)
{
    if (!out || !a || !r)
        return LDPB_EINVAL;
    *out = NULL;
    agg_adv_game *g = calloc(1, sizeof *g);
    if (!g)
        return LDPB_ENOMEM;
    g->p = a->p;
    g->r = *r;
    if (g->p.kind == AGG_ADV_OBLIVIOUS) {
        g->last = calloc(g->p.k, sizeof *g->last);
        if (!g->last) {
            free(g);
            return LDPB_ENOMEM;
        }
        fully_oblivious(g, g->last);
    }
    if (g->p.kind == AGG_ADV_SWITCHING)
        g->chi = (uint32_t)agg_rand_below(&g->r, g->p.k);
    *out = g;
    return LDPB_OK;
}

void agg_adv_game_free(agg_adv_game *g)
{
    if (!g)
        return;
    free(g->last);
    free(g);
}

void agg_adv_game_next(agg_adv_game *g, double *gains)
{
    uint64_t t = ++g->t;
    uint32_t k = g->p.k;
    switch (g->p.kind) {
    case AGG_ADV_DETERMINISTIC:
        gains[0] = g->p.det_const;
        gains[1] = t % 2 == 0 ? 1.0 : 0.0;
        if (k > 2)
            gains[2] = t % g->p.det_period == 0 ? 1.0 : 0.0;
        for (uint32_t i = 3; i < k; i++)
            gains[i] = g->p.det_rest;
        break;
    case AGG_ADV_STOCHASTIC:
        for (uint32_t i = 0; i < k; i++)
            gains[i] =
                agg_rand_uniform(&g->r) < (i == 0 ? g->p.stoch_first : g->p.stoch_rest) ? 1.0 : 0.0;
        break;
    case AGG_ADV_FULLY_OBLIVIOUS:
        fully_oblivious(g, gains);
        break;
    case AGG_ADV_OBLIVIOUS:
        if (t % g->p.obl_period == 0)
            fully_oblivious(g, g->last);
        memcpy(gains, g->last, k * sizeof *gains);
        break;
    case AGG_ADV_SWITCHING: {
        /* rho(t) is the latest round before t whose delta exceeds delta(t) (the rounds between
         * have smaller delta), so m[delta(t) + 1] holds W_rho(t). */
        unsigned d = (unsigned)__builtin_ctzll(t);
        double w = g->m[d + 1] + g->p.sw_sigma * agg_rand_normal(&g->r);
        for (unsigned j = 0; j <= d; j++)
            g->m[j] = w;
        for (uint32_t i = 0; i < k; i++) {
            double loss = w + 0.5 - (i == g->chi ? g->p.sw_eps : 0.0);
            loss = loss < 0.0 ? 0.0 : loss > 1.0 ? 1.0 : loss;
            gains[i] = 1.0 - loss;
        }
        break;
    }
    }
}
