/* UCB1, the non-private baseline (algorithms.md 2.1; Auer, Cesa-Bianchi and Fischer 2002).
 *
 * Rounds 1..K pull each arm once (lowest unpulled index first); afterwards round t pulls
 *     argmax_a  sum_a / n_a + sqrt(2 ln t / n_a),
 * ties broken uniformly at random with env->rand. t is the 1-based number of the round being
 * decided, i.e. one more than the observations so far. Only the pulled arm's index terms change
 * between rounds, so each arm caches its mean and 1/sqrt(n_a); a round costs one log, one sqrt and
 * K multiply-adds. choose() reads the state without changing it: a report that never arrives
 * simply leaves the arm's count unchanged. */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "statefmt.h"

#define UCB1_STATE_VERSION 1

typedef struct ucb1_arm {
    uint64_t n;
    double sum;
    double mean;       /* sum / n, recomputed (not updated) so restore reproduces it exactly */
    double inv_sqrt_n; /* 1 / sqrt(n) */
} ucb1_arm;

typedef struct ucb1 {
    agg_policy base;
    uint64_t t;        /* observations so far */
    uint32_t unpulled; /* arms with n = 0 */
    ucb1_arm arms[];
} ucb1;

extern const agg_policy_ops agg_policy_ucb1;

static ldpb_err create(agg_policy **out, const agg_policy_config *cfg, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    ldpb_err err = agg_policy_check_k(cfg, "ucb1", 0, errmsg);
    if (err)
        return err;
    ucb1 *u = calloc(1, sizeof *u + (size_t)cfg->k * sizeof u->arms[0]);
    if (!u)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "ucb1: out of memory for %u arms", cfg->k);
    u->base.ops = &agg_policy_ucb1;
    u->base.cfg = *cfg;
    u->unpulled = cfg->k;
    *out = &u->base;
    return LDPB_OK;
}

static ldpb_err choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    ucb1 *u = (ucb1 *)p;
    uint32_t k = p->cfg.k;
    if (u->unpulled > 0) {
        for (uint32_t a = 0; a < k; a++)
            if (u->arms[a].n == 0) {
                *arm = a;
                return LDPB_OK;
            }
    }
    double width = sqrt(2.0 * log((double)(u->t + 1)));
    agg_argmax m;
    agg_argmax_init(&m);
    for (uint32_t a = 0; a < k; a++)
        agg_argmax_offer(&m, a, u->arms[a].mean + width * u->arms[a].inv_sqrt_n, env->rand);
    *arm = m.arm;
    return LDPB_OK;
}

static void arm_refresh(ucb1_arm *a)
{
    a->mean = a->sum / (double)a->n;
    a->inv_sqrt_n = 1.0 / sqrt((double)a->n);
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    (void)env;
    ucb1 *u = (ucb1 *)p;
    ucb1_arm *a = &u->arms[arm];
    if (a->n == 0)
        u->unpulled--;
    a->n++;
    a->sum += obs;
    arm_refresh(a);
    u->t++;
    return LDPB_OK;
}

static ldpb_err save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const ucb1 *u = (const ucb1 *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, UCB1_STATE_VERSION);
    agg_put_u64(&w, u->t);
    for (uint32_t a = 0; a < p->cfg.k; a++) {
        agg_put_u64(&w, u->arms[a].n);
        agg_put_f64(&w, u->arms[a].sum);
    }
    return agg_wbuf_finish(&w, len);
}

/* Decodes `buf` and checks it (rewards lie in [0,1], so 0 <= sum_a <= n_a; t = sum of n_a); with
 * commit set, also installs it. Run once without commit so a bad state changes nothing. */
static ldpb_err decode(ucb1 *u, const uint8_t *buf, size_t len, int commit)
{
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &u->base, UCB1_STATE_VERSION);
    if (err)
        return err;
    uint64_t t = agg_get_u64(&r), total = 0;
    uint32_t unpulled = 0;
    for (uint32_t i = 0; i < u->base.cfg.k; i++) {
        uint64_t n = agg_get_u64(&r);
        double sum = agg_get_f64(&r);
        if (!(sum >= 0.0 && sum <= (double)n) || n > t - total)
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

static ldpb_err restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    ucb1 *u = (ucb1 *)p;
    ldpb_err err = decode(u, buf, len, 0);
    return err ? err : decode(u, buf, len, 1);
}

/* The interval is the index's own confidence radius sqrt(2 ln t / n), the one the next decision
 * adds; it is not clipped to [0,1]. */
static ldpb_err describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const ucb1 *u = (const ucb1 *)p;
    double width = sqrt(2.0 * log((double)(u->t + 1)));
    for (uint32_t i = 0; i < k; i++) {
        const ucb1_arm *a = &u->arms[i];
        arms[i].pulls = a->n;
        arms[i].active = 1;
        if (a->n == 0) {
            arms[i].estimate = arms[i].ci_low = arms[i].ci_high = NAN;
            continue;
        }
        arms[i].estimate = a->mean;
        arms[i].ci_low = a->mean - width * a->inv_sqrt_n;
        arms[i].ci_high = a->mean + width * a->inv_sqrt_n;
    }
    return LDPB_OK;
}

static void destroy(agg_policy *p)
{
    free(p);
}

const agg_policy_ops agg_policy_ucb1 = {
    .name = "ucb1",
    .model = AGG_MODEL_NONPRIVATE,
    .mergeable = 1,
    .create = create,
    .choose = choose,
    .observe = observe,
    .save = save,
    .restore = restore,
    .describe = describe,
    .free = destroy,
};
