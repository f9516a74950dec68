/* The UCB family engine (ucb_family.h): state, choice, update, state format and describe() of
 * UCB1, LDP-UCB-B and LDP-UCB-L. */
#include "ucb_family.h"

#include <math.h>
#include <stdlib.h>

#include "statefmt.h"

typedef struct ucb_arm {
    uint64_t n;
    double sum;        /* rewards or reports; for bits the number of ones (an integer) */
    double mean;       /* sum / n, recomputed (not updated) so restore reproduces it exactly */
    double inv_sqrt_n; /* 1 / sqrt(n) */
} ucb_arm;

typedef struct ucb {
    agg_policy base;
    const agg_ucb_variant *v;
    agg_ucb_params par;
    uint64_t t;        /* observations so far */
    uint32_t unpulled; /* arms with n = 0 */
    ucb_arm arms[];
} ucb;

ldpb_err agg_ucb_new(agg_policy **out, const agg_policy_config *cfg, const agg_ucb_variant *v,
                     char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    const char *name = v->ops->name;
    ldpb_err err = agg_policy_check_k(cfg, name, 0, errmsg);
    if (err)
        return err;
    agg_ucb_params par = {.mech = NULL, .w = 1.0, .c = 1.0};
    if (v->prepare && (err = v->prepare(cfg, &par, errmsg)) != LDPB_OK)
        return err;
    ucb *u = calloc(1, sizeof *u + (size_t)cfg->k * sizeof u->arms[0]);
    if (!u) {
        ldpb_mech_free(par.mech);
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory for %u arms", name,
                                 cfg->k);
    }
    u->base.ops = v->ops;
    u->base.cfg = *cfg;
    u->v = v;
    u->par = par;
    u->unpulled = cfg->k;
    *out = &u->base;
    return LDPB_OK;
}

/* The exploration width c sqrt(ln_scale ln t) of round t (1-based), given ln t. */
static double width(const ucb *u, double ln_t)
{
    return sqrt(u->v->ln_scale * ln_t) * u->par.c;
}

ldpb_err agg_ucb_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    ucb *u = (ucb *)p;
    uint32_t k = p->cfg.k;
    double forced = u->v->forced;
    double ln_t;
    if (forced > 0.0) {
        /* The arm with the fewest reports is under the threshold whenever any arm is, so one
         * minimum suffices (round-robin over the arms under it). */
        ln_t = log((double)(u->t + 1));
        uint32_t fewest = 0;
        for (uint32_t a = 1; a < k; a++)
            if (u->arms[a].n < u->arms[fewest].n)
                fewest = a;
        if ((double)u->arms[fewest].n <= forced * ln_t) {
            *arm = fewest;
            return LDPB_OK;
        }
    } else {
        if (u->unpulled > 0) {
            for (uint32_t a = 0; a < k; a++)
                if (u->arms[a].n == 0) {
                    *arm = a;
                    return LDPB_OK;
                }
        }
        ln_t = log((double)(u->t + 1));
    }
    double wd = width(u, ln_t);
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, u->arms[a].mean + wd * u->arms[a].inv_sqrt_n, env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

static void arm_refresh(ucb_arm *a)
{
    a->mean = a->sum / (double)a->n;
    a->inv_sqrt_n = 1.0 / sqrt((double)a->n);
}

ldpb_err agg_ucb_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    (void)env;
    ucb *u = (ucb *)p;
    ucb_arm *a = &u->arms[arm];
    if (a->n == 0)
        u->unpulled--;
    a->n++;
    a->sum += obs;
    arm_refresh(a);
    u->t++;
    return LDPB_OK;
}

ldpb_err agg_ucb_merge(agg_policy *dst, const agg_policy *src)
{
    ucb *d = (ucb *)dst;
    const ucb *s = (const ucb *)src;
    const uint64_t n_max = (uint64_t)1 << 53; /* what restore accepts of a count */
    for (uint32_t a = 0; a < dst->cfg.k; a++)
        if (d->arms[a].n > n_max || s->arms[a].n > n_max - d->arms[a].n ||
            !isfinite(d->arms[a].sum + s->arms[a].sum))
            return LDPB_ERANGE;
    if (s->t > UINT64_MAX - d->t)
        return LDPB_ERANGE;
    uint32_t unpulled = 0;
    for (uint32_t a = 0; a < dst->cfg.k; a++) {
        ucb_arm *x = &d->arms[a];
        if (s->arms[a].n) {
            x->n += s->arms[a].n;
            x->sum += s->arms[a].sum;
            arm_refresh(x);
        }
        unpulled += x->n == 0;
    }
    d->unpulled = unpulled;
    d->t += s->t;
    return LDPB_OK;
}

ldpb_err agg_ucb_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ucb *u = (const ucb *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, u->v->state_version);
    agg_put_u64(&w, u->t);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, u->arms[a].n);
        if (u->v->obs == AGG_UCB_OBS_BIT)
            agg_put_u64(&w, (uint64_t)u->arms[a].sum);
        else
            agg_put_f64(&w, u->arms[a].sum);
    }
    return agg_wbuf_finish(&w, len);
}

/* Reads one arm's sum and checks it against n: what n observations of this kind can produce.
 * The count of ones is stored as an integer: it is one, exactly, below 2^53 reports per arm;
 * Laplace reports are unbounded, so no range applies to their sums. */
static int get_sum(agg_rbuf *r, agg_ucb_obs obs, uint64_t n, double *sum)
{
    switch (obs) {
    case AGG_UCB_OBS_UNIT:
        *sum = agg_get_f64(r);
        return *sum >= 0.0 && *sum <= (double)n;
    case AGG_UCB_OBS_BIT: {
        uint64_t ones = agg_get_u64(r);
        *sum = (double)ones;
        return ones <= n && n <= ((uint64_t)1 << 53);
    }
    case AGG_UCB_OBS_REAL:
        *sum = agg_get_f64(r);
        return isfinite(*sum) && !(n == 0 && *sum != 0.0);
    }
    return 0;
}

/* Decodes `buf` and checks it (each sum is one n_a observations can produce; t = sum of n_a);
 * with commit set, also installs it. Run once without commit so a bad state changes nothing. */
static ldpb_err decode(ucb *u, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &u->base, u->v->state_version);
    if (err)
        return err;
    uint64_t t = agg_get_u64(&r), total = 0;
    uint32_t unpulled = 0;
    for (uint32_t i = 0; i < u->base.cfg.k; i++) {
        uint64_t n = agg_get_u64(&r);
        double sum;
        if (!get_sum(&r, u->v->obs, n, &sum) || n > t - total)
            return LDPB_ECORRUPT;
        total += n;
        unpulled += n == 0;
        if (commit) {
            u->arms[i].n = n;
            u->arms[i].sum = sum;
            if (n > 0)
                arm_refresh(&u->arms[i]);
            else
                u->arms[i].mean = u->arms[i].inv_sqrt_n = 0.0;
        }
    }
    if (!agg_rbuf_done(&r) || total != t)
        return LDPB_ECORRUPT;
    if (commit) {
        u->t = t;
        u->unpulled = unpulled;
    }
    return LDPB_OK;
}

ldpb_err agg_ucb_restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ucb *u = (ucb *)p;
    ldpb_err err = decode(u, buf, len, 0);
    return err ? err : decode(u, buf, len, 1);
}

/* The estimate is the mean of the observations, de-biased with the clients' mechanism when there
 * is one (docs/derivations.md 5: exact for linear; the plug-in p^-1(ybar) for quadratic and
 * exponential, biased for non-binary rewards, so no interval then). The interval is the index's
 * own radius, the one the next decision adds, scaled to the unit scale by w and not clipped to
 * [0,1]; with forced exploration only once the arm is past the threshold (NaN before). */
ldpb_err agg_ucb_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ucb *u = (const ucb *)p;
    double ln_t = log((double)(u->t + 1));
    double wd = width(u, ln_t);
    for (uint32_t i = 0; i < k; i++) {
        const ucb_arm *a = &u->arms[i];
        arms[i].pulls = a->n;
        arms[i].active = 1;
        arms[i].estimate = arms[i].ci_low = arms[i].ci_high = NAN;
        if (a->n == 0)
            continue;
        int exact = 1;
        if (u->par.mech) {
            exact = 0;
            ldpb_err err =
                ldpb_mech_debias_mean(u->par.mech, a->sum, a->n, &arms[i].estimate, &exact);
            if (err)
                return err;
        } else {
            arms[i].estimate = a->mean;
        }
        if (exact && (double)a->n > u->v->forced * ln_t) {
            double rad = u->par.w * wd * a->inv_sqrt_n;
            arms[i].ci_low = arms[i].estimate - rad;
            arms[i].ci_high = arms[i].estimate + rad;
        }
    }
    return LDPB_OK;
}

void agg_ucb_free(agg_policy *p)
{
    ucb *u = (ucb *)p;
    if (!u)
        return;
    ldpb_mech_free(u->par.mech);
    free(u);
}
