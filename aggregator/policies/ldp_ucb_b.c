/* LDP-UCB-B (algorithms.md 2.4; Ren, Zhou, Liu and Shroff 2020, index from their DPclass.py):
 * UCB1 run on the privatized bits of any Bernoulli mechanism (CTB = linear, or quadratic /
 * exponential as in JZL23), on the privatized scale:
 *     argmax_a  ysum_a / n_a + sqrt(2 ln t / n_a)
 * after an initial round-robin (lowest unpulled index first). Ties are broken uniformly at random
 * with env->rand; t is the 1-based number of the round being decided. All arms share one
 * mechanism, so the argmax equals that of the de-biased index mu_hat + w sqrt(2 ln t / n) with
 * w = 1/s (the linear case). The mechanism itself runs on the client; the aggregator builds the
 * same configuration only to validate it and to de-bias for describe(). */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define LDP_UCB_B_STATE_VERSION 1

typedef struct arm {
    uint64_t n;
    double ysum; /* number of 1 reports: an integer, kept as a double for the index */
    double mean;
    double inv_sqrt_n;
} arm;

typedef struct ldp_ucb_b {
    agg_policy base;
    ldpb_mech *mech; /* the clients' mechanism: de-biasing and the scale factor w = 1/s */
    double w;
    uint64_t t;
    uint32_t unpulled;
    arm arms[];
} ldp_ucb_b;

extern const agg_policy_ops agg_policy_ldp_ucb_b;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "ldp-ucb-b", 0, errmsg);
    if (err)
        return err;
    if (cfg->mechanism == LDPB_MECH_LAPLACE)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "ldp-ucb-b: mechanism laplace is not a Bernoulli mechanism "
                                 "(linear, quadratic or exponential); use ldp-ucb-l");
    ldpb_mech *mech = NULL;
    err = agg_policy_mech_new(cfg, "ldp-ucb-b", &mech, errmsg);
    if (err)
        return err;
    ldp_ucb_b *u = calloc(1, sizeof *u + (size_t)cfg->k * sizeof u->arms[0]);
    if (!u) {
        ldpb_mech_free(mech);
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ldp-ucb-b: out of memory for %u arms",
                                 cfg->k);
    }
    double p0, p1;
    ldpb_mech_endpoints(mech, &p0, &p1);
    u->base.ops = &agg_policy_ldp_ucb_b;
    u->base.cfg = *cfg;
    u->mech = mech;
    u->w = 1.0 / (p1 - p0);
    u->unpulled = cfg->k;
    *out = &u->base;
    return LDPB_OK;
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *out)
{
    ldp_ucb_b *u = (ldp_ucb_b *)p;
    uint32_t k = p->cfg.k;
    if (u->unpulled > 0) {
        for (uint32_t a = 0; a < k; a++)
            if (u->arms[a].n == 0) {
                *out = a;
                return LDPB_OK;
            }
    }
    double width = sqrt(2.0 * log((double)(u->t + 1)));
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

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t i, double bit)
{
    (void)env;
    ldp_ucb_b *u = (ldp_ucb_b *)p;
    arm *a = &u->arms[i];
    if (a->n == 0)
        u->unpulled--;
    a->n++;
    a->ysum += bit;
    arm_refresh(a);
    u->t++;
    return LDPB_OK;
}

static ldpb_err save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ldp_ucb_b *u = (const ldp_ucb_b *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, LDP_UCB_B_STATE_VERSION);
    agg_put_u64(&w, u->t);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, u->arms[a].n);
        agg_put_u64(&w, (uint64_t)u->arms[a].ysum);
    }
    return agg_wbuf_finish(&w, len);
}

/* Checks (ones_a <= n_a, t = sum of n_a) and, with commit, installs; see ucb1.c. The count of
 * ones is stored as an integer: it is one, exactly, below 2^53 reports per arm. */
static ldpb_err decode(ldp_ucb_b *u, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &u->base, LDP_UCB_B_STATE_VERSION);
    if (err)
        return err;
    uint64_t t = agg_get_u64(&r), total = 0;
    uint32_t unpulled = 0;
    for (uint32_t i = 0; i < u->base.cfg.k; i++) {
        uint64_t n = agg_get_u64(&r);
        uint64_t ones = agg_get_u64(&r);
        if (ones > n || n > t - total || n > ((uint64_t)1 << 53))
            return LDPB_ECORRUPT;
        total += n;
        unpulled += n == 0;
        if (commit) {
            u->arms[i].n = n;
            u->arms[i].ysum = (double)ones;
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

static ldpb_err restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ldp_ucb_b *u = (ldp_ucb_b *)p;
    ldpb_err err = decode(u, buf, len, 0);
    return err ? err : decode(u, buf, len, 1);
}

/* De-biased estimate (algorithms.md 1.6): exact for the linear mechanism, with the index's
 * radius on the unit scale, w sqrt(2 ln t / n); for quadratic and exponential the plug-in
 * p^-1(ybar), which is biased for non-binary rewards, so no interval is given (NaN). */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ldp_ucb_b *u = (const ldp_ucb_b *)p;
    double width = sqrt(2.0 * log((double)(u->t + 1)));
    for (uint32_t i = 0; i < k; i++) {
        const arm *a = &u->arms[i];
        arms[i].pulls = a->n;
        arms[i].active = 1;
        arms[i].estimate = arms[i].ci_low = arms[i].ci_high = NAN;
        if (a->n == 0)
            continue;
        int exact = 0;
        ldpb_err err = ldpb_mech_debias_mean(u->mech, a->ysum, a->n, &arms[i].estimate, &exact);
        if (err)
            return err;
        if (exact) {
            double rad = u->w * width * a->inv_sqrt_n;
            arms[i].ci_low = arms[i].estimate - rad;
            arms[i].ci_high = arms[i].estimate + rad;
        }
    }
    return LDPB_OK;
}

static void destroy(agg_policy *p)
{
    ldp_ucb_b *u = (ldp_ucb_b *)p;
    ldpb_mech_free(u->mech);
    free(u);
}

const agg_policy_ops agg_policy_ldp_ucb_b = {
    .name = "ldp-ucb-b",
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
