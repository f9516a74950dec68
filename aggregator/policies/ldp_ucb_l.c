/* LDP-UCB-L (algorithms.md 2.5; Ren, Zhou, Liu and Shroff 2020, index and threshold from their
 * DPclass.py::pull_CTL): UCB on Laplace-privatized rewards y = clip(x,0,1) + Lap(1/eps).
 *
 * Round t (1-based: one more than the observations so far):
 *   U = { a : n_a <= 4 ln t }   (forced exploration: below it the Bernstein radius is not valid)
 *   U nonempty: pull the arm of U with the fewest reports, lowest index among equals (this is
 *               round-robin over U, which 2.5 allows; the arm with the fewest reports is in U
 *               whenever U is nonempty, so one minimum suffices);
 *   otherwise:  argmax_a ysum_a/n_a + sqrt(2 ln t / n_a) + sqrt(32 ln t / (eps^2 n_a)),
 *               ties broken uniformly at random with env->rand.
 * The threshold uses 4 ln t with counts from 0 (2.5 allows this or RZLS20's 4 ln(t+1) with
 * counts from 1). Both radius terms scale as sqrt(ln t / n_a), so the index is
 * mean_a + sqrt(ln t) * c / sqrt(n_a) with c = sqrt(2) + sqrt(32)/eps, and each arm caches mean
 * and 1/sqrt(n_a). Reports are never clipped or rounded here (the pitfall of 1.7). */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define LDP_UCB_L_STATE_VERSION 1

typedef struct arm {
    uint64_t n;
    double ysum;
    double mean;
    double inv_sqrt_n;
} arm;

typedef struct ldp_ucb_l {
    agg_policy base;
    double c; /* sqrt(2) + sqrt(32) / eps */
    uint64_t t;
    arm arms[];
} ldp_ucb_l;

extern const agg_policy_ops agg_policy_ldp_ucb_l;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "ldp-ucb-l", 0, errmsg);
    if (!err)
        err = agg_policy_check_epsilon(cfg, "ldp-ucb-l", errmsg);
    if (err)
        return err;
    if (cfg->mechanism != LDPB_MECH_LAPLACE)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ucb-l: mechanism %s is not laplace; ldp-ucb-l needs "
                                 "Laplace reports (use ldp-ucb-b for Bernoulli mechanisms)",
                                 ldpb_mech_kind_name(cfg->mechanism));
    ldp_ucb_l *u = calloc(1, sizeof *u + (size_t)cfg->k * sizeof u->arms[0]);
    if (!u)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ldp-ucb-l: out of memory for %u arms",
                                 cfg->k);
    u->base.ops = &agg_policy_ldp_ucb_l;
    u->base.cfg = *cfg;
    u->c = sqrt(2.0) + sqrt(32.0) / cfg->epsilon;
    *out = &u->base;
    return LDPB_OK;
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *out)
{
    ldp_ucb_l *u = (ldp_ucb_l *)p;
    uint32_t k = p->cfg.k;
    double ln_t = log((double)(u->t + 1));
    uint32_t fewest = 0;
    for (uint32_t a = 1; a < k; a++)
        if (u->arms[a].n < u->arms[fewest].n)
            fewest = a;
    if ((double)u->arms[fewest].n <= 4.0 * ln_t) {
        *out = fewest;
        return LDPB_OK;
    }
    double width = sqrt(ln_t) * u->c;
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, u->arms[a].mean + width * u->arms[a].inv_sqrt_n, env->rand);
    *out = m.arm;
    return LDPB_OK;
}

static void arm_refresh(arm *a)
{
    a->mean = a->ysum / (double)a->n;
    a->inv_sqrt_n = 1.0 / sqrt((double)a->n);
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t i, double y)
{
    (void)env;
    ldp_ucb_l *u = (ldp_ucb_l *)p;
    arm *a = &u->arms[i];
    a->n++;
    a->ysum += y;
    arm_refresh(a);
    u->t++;
    return LDPB_OK;
}

static ldpb_err save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ldp_ucb_l *u = (const ldp_ucb_l *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, LDP_UCB_L_STATE_VERSION);
    agg_put_u64(&w, u->t);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, u->arms[a].n);
        agg_put_f64(&w, u->arms[a].ysum);
    }
    return agg_wbuf_finish(&w, len);
}

/* Checks (finite sums, a zero sum for an arm without reports, t = sum of n_a) and, with commit,
 * installs; see ucb1.c. Laplace reports are unbounded, so no range applies to the sums. */
static ldpb_err decode(ldp_ucb_l *u, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &u->base, LDP_UCB_L_STATE_VERSION);
    if (err)
        return err;
    uint64_t t = agg_get_u64(&r), total = 0;
    for (uint32_t i = 0; i < u->base.cfg.k; i++) {
        uint64_t n = agg_get_u64(&r);
        double ysum = agg_get_f64(&r);
        if (!isfinite(ysum) || (n == 0 && ysum != 0.0) || n > t - total)
            return LDPB_ECORRUPT;
        total += n;
        if (commit) {
            u->arms[i].n = n;
            u->arms[i].ysum = ysum;
            if (n > 0)
                arm_refresh(&u->arms[i]);
            else
                u->arms[i].mean = u->arms[i].inv_sqrt_n = 0.0;
        }
    }
    if (!agg_rbuf_done(&r) || total != t)
        return LDPB_ECORRUPT;
    if (commit)
        u->t = t;
    return LDPB_OK;
}

static ldpb_err restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ldp_ucb_l *u = (ldp_ucb_l *)p;
    ldpb_err err = decode(u, buf, len, 0);
    return err ? err : decode(u, buf, len, 1);
}

/* The mean of Laplace reports is unbiased for the mean reward (1.7). The interval is the index's
 * radius, valid once the arm has left forced exploration (n_a > 4 ln t); before that it is NaN. */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ldp_ucb_l *u = (const ldp_ucb_l *)p;
    double ln_t = log((double)(u->t + 1));
    double width = sqrt(ln_t) * u->c;
    for (uint32_t i = 0; i < k; i++) {
        const arm *a = &u->arms[i];
        arms[i].pulls = a->n;
        arms[i].active = 1;
        arms[i].estimate = arms[i].ci_low = arms[i].ci_high = NAN;
        if (a->n == 0)
            continue;
        arms[i].estimate = a->mean;
        if ((double)a->n > 4.0 * ln_t) {
            arms[i].ci_low = a->mean - width * a->inv_sqrt_n;
            arms[i].ci_high = a->mean + width * a->inv_sqrt_n;
        }
    }
    return LDPB_OK;
}

static void destroy(agg_policy *p)
{
    free(p);
}

const agg_policy_ops agg_policy_ldp_ucb_l = {
    .name = "ldp-ucb-l",
    .model = AGG_MODEL_LOCAL,
    .mergeable = 1,
    .create = create,
    .choose = choose,
    .observe = observe,
    .save = save,
    .restore = restore,
    .describe = describe,
    .free = destroy,
};
