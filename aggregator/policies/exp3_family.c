/* The EXP3 engine (exp3_family.h).
 *
 * EXP3 (Auer et al. 2002): with importance-weighted gain estimates G_i, play
 *     p_i = (1 - gamma) w_i / sum_j w_j + gamma / K,   w_i = exp(eta G_i),  eta = gamma / K,
 * and after playing i with gain g add g / p_i to G_i. The weights overflow a double long before a
 * long run ends (eta G grows by up to 1 a round), so the state is the log-weights s_i = eta G_i
 * and a reference ref with every w_i = exp(s_i - ref) cached. Gains are never negative, so s only
 * grows; ref moves to the largest s whenever an update lifts s more than SHIFT above it, which
 * keeps every w_i <= e^SHIFT and the largest >= 1 (so the sum neither overflows nor vanishes).
 * Each w_i is always recomputed as exp(s_i - ref), never updated multiplicatively, so a restored
 * state reproduces the cached weights bit for bit. Per round: one draw over K probabilities, one
 * exp for the updated arm (K exps once in at least SHIFT rounds), and a K-term sum.
 *
 * DP-EXP3-Lap (Tossou & Dimitrakakis 2017, Alg. 1): the observed gain plus Laplace(1/eps) noise
 * is accepted only inside [-b, 1 + b] and rescaled to (y + b) / (1 + 2b); a rejected observation
 * changes nothing (EXP3's update counter does not advance). In the central variant the policy adds
 * the noise from env->noise; in the local variant the observation is already the client's Laplace
 * report, so no second noise is added. Either way each gain is noised once, which is what the
 * eps-DP of TD17 Thm 3.2 rests on.
 *
 * EXP3-tau (TD17 Sec. 3.2): EXP3 tuned for n = ceil(T/tau) rounds draws an arm at the start of
 * each block of tau rounds (the last block ends at T), the arm is played for the whole block, and
 * EXP3 is fed the block's average gain once all its observations are in. So it switches arms at
 * most ceil(T/tau) - 1 times. An observation of another arm than the current block's (a late
 * report of an earlier block, in a service) is ignored; a block whose observations did not all
 * arrive is fed the average of those that did when the next block starts.
 *
 * observe() divides a gain by the arm's probability under the current weights: in a sequential
 * game (the simulator) that is the probability it was chosen with. A service's reports arrive
 * late and out of order, after other reports moved the weights, and g / p_now is then a biased
 * estimate of the gain; observe_with_propensity() divides by the probability recorded at the
 * choice (the daemon keeps it in the assignment), which keeps E[g 1{I = i} / p_i] = g_i. A
 * probability below gamma / K, the least any arm ever has under this configuration, cannot come
 * from one of its choices; it is raised to gamma / K, which caps one report's weight at K / gamma
 * as in EXP3's analysis. EXP3-tau feeds a block once, with the probability of the block's draw,
 * which no other update moves before the block is fed, so it has no use for the recorded one. */
#include "exp3_family.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "statefmt.h"

#define EXP3_STATE_VERSION 1
#define SHIFT              512.0

typedef struct exp3 {
    agg_policy base;
    agg_exp3_kind kind;
    double gamma, eta, mix; /* mix = gamma / K */
    double b, lap_scale;    /* DP-EXP3-Lap: threshold, 1/eps */
    uint64_t tau;           /* 1 unless EXP3-tau */
    uint64_t horizon;
    /* state */
    uint64_t updates;  /* accepted EXP3 updates */
    uint64_t rejected; /* DP-EXP3-Lap observations outside [-b, 1 + b] */
    uint64_t rounds;   /* choose() calls */
    double ref;
    int has_last;
    uint32_t last_arm;
    double last_prob;
    /* EXP3-tau block (has_last: a block is open) */
    uint64_t block_len, block_chosen, block_obs;
    double block_sum;
    int block_fed;
    double z;      /* sum of w, in arm order */
    double *s;     /* [k] log-weights eta G_i */
    double *w;     /* [k] exp(s_i - ref) */
    uint64_t *obs; /* [k] observations per arm (describe) */
} exp3;

uint64_t agg_exp3_icbrt_ceil(uint64_t x)
{
    uint64_t r = (uint64_t)cbrt((double)x);
    while (r > 0 && r * r * r >= x)
        r--;
    while (r * r * r < x)
        r++;
    return r;
}

double agg_exp3_threshold_bound_min(uint32_t k, uint64_t horizon, double epsilon)
{
    /* docs/derivations.md, "DP-EXP3-Lap's threshold": the minimiser of (1 + 2b) C sqrt(T K ln K)
     * + T e^(-eps b), C = 2 sqrt(e - 1) (Auer et al. 2002, Cor. 3.2) */
    double kk = (double)k, t = (double)horizon;
    if (k < 2) /* EXP3 has no regret with one arm: nothing to trade against, keep the default */
        return log(t) / epsilon;
    double c = 2.0 * sqrt(M_E - 1.0);
    double b = log(epsilon * sqrt(t) / (2.0 * c * sqrt(kk * log(kk)))) / epsilon;
    return b > 0.0 ? b : 0.0;
}

static double default_gamma(uint32_t k, uint64_t n)
{
    double kk = (double)k;
    double g = sqrt(kk * log(kk) / ((M_E - 1.0) * (double)n));
    return g < 1.0 ? g : 1.0;
}

ldpb_err agg_exp3_new(agg_policy **out, const agg_policy_config *cfg, const agg_policy_ops *ops,
                      agg_exp3_kind kind, char errmsg[AGG_ERRMSG_MAX])
{
    *out = NULL;
    const char *name = ops->name;
    int lap = kind == AGG_EXP3_LAP_CENTRAL || kind == AGG_EXP3_LAP_LOCAL;
    int need_t = cfg->gamma == 0.0 || (lap && cfg->threshold <= 0.0) ||
                 (kind == AGG_EXP3_TAU && cfg->tau == 0);
    ldpb_err err = agg_policy_check_k(cfg, name, 0, errmsg);
    if (err)
        return err;
    if (need_t && cfg->horizon == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                 "%s: needs the horizon T for its default %s (horizon 0)", name,
                                 cfg->gamma == 0.0 ? "gamma"
                                 : lap             ? "threshold"
                                                   : "tau");
    if (isnan(cfg->gamma))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: gamma is NaN", name);
    if (!(cfg->gamma >= 0.0 && cfg->gamma <= 1.0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: gamma %g outside (0, 1] (0: default)",
                                 name, cfg->gamma);
    double b = 0.0, scale = 0.0;
    if (lap) {
        if ((err = agg_policy_check_epsilon(cfg, name, errmsg)) != LDPB_OK)
            return err;
        if (kind == AGG_EXP3_LAP_LOCAL && cfg->mechanism != LDPB_MECH_LAPLACE)
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "%s: mechanism %s is not laplace (DP-EXP3-Lap observes the "
                                     "clients' Laplace reports)",
                                     name, ldpb_mech_kind_name(cfg->mechanism));
        if (isnan(cfg->threshold))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: threshold is NaN", name);
        if (!((cfg->threshold >= 0.0 && cfg->threshold < HUGE_VAL) ||
              cfg->threshold == AGG_EXP3_THRESHOLD_BOUND_MIN))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: threshold %g outside (0, inf) (0: ln(T)/epsilon; -1: "
                                     "bound-min)",
                                     name, cfg->threshold);
        if (cfg->threshold == AGG_EXP3_THRESHOLD_BOUND_MIN)
            b = agg_exp3_threshold_bound_min(cfg->k, cfg->horizon, cfg->epsilon);
        else
            b = cfg->threshold > 0.0 ? cfg->threshold : log((double)cfg->horizon) / cfg->epsilon;
        scale = 1.0 / cfg->epsilon;
    }
    uint64_t tau = 1, n = cfg->horizon;
    if (kind == AGG_EXP3_TAU) {
        if (cfg->horizon != 0 && cfg->tau > cfg->horizon)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: tau %llu outside [1, T = %llu]",
                                     name, (unsigned long long)cfg->tau,
                                     (unsigned long long)cfg->horizon);
        tau = cfg->tau ? cfg->tau : agg_exp3_icbrt_ceil(cfg->horizon);
        n = cfg->horizon / tau + (cfg->horizon % tau != 0);
    }
    exp3 *e = calloc(1, sizeof *e);
    if (e) {
        e->s = calloc(cfg->k, sizeof *e->s);
        e->w = calloc(cfg->k, sizeof *e->w);
        e->obs = calloc(cfg->k, sizeof *e->obs);
    }
    if (!e || !e->s || !e->w || !e->obs) {
        if (e) {
            free(e->s);
            free(e->w);
            free(e->obs);
        }
        free(e);
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "%s: out of memory for %u arms", name,
                                 cfg->k);
    }
    e->base.ops = ops;
    e->base.cfg = *cfg;
    e->kind = kind;
    e->gamma = cfg->gamma > 0.0 ? cfg->gamma : default_gamma(cfg->k, n);
    e->eta = e->gamma / (double)cfg->k;
    e->mix = e->gamma / (double)cfg->k;
    e->b = b;
    e->lap_scale = scale;
    e->tau = tau;
    e->horizon = cfg->horizon;
    for (uint32_t i = 0; i < cfg->k; i++)
        e->w[i] = 1.0;
    e->z = (double)cfg->k;
    *out = &e->base;
    return LDPB_OK;
}

static void refresh_z(exp3 *e)
{
    double z = 0.0;
    for (uint32_t i = 0; i < e->base.cfg.k; i++)
        z += e->w[i];
    e->z = z;
}

static void refresh_all(exp3 *e)
{
    for (uint32_t i = 0; i < e->base.cfg.k; i++)
        e->w[i] = exp(e->s[i] - e->ref);
    refresh_z(e);
}

static inline double prob_of(const exp3 *e, uint32_t arm)
{
    return e->w[arm] * ((1.0 - e->gamma) / e->z) + e->mix;
}

/* One draw from p: the first arm whose running sum passes u (the last arm if rounding leaves the
 * sum just below u; its probability is at least gamma/K > 0). */
static uint32_t draw(exp3 *e, agg_rand *rand, double *prob)
{
    uint32_t k = e->base.cfg.k;
    double u = agg_rand_uniform(rand);
    double f = (1.0 - e->gamma) / e->z, mix = e->mix, c = 0.0;
    for (uint32_t i = 0; i + 1 < k; i++) {
        double p = e->w[i] * f + mix;
        c += p;
        if (u < c) {
            *prob = p;
            return i;
        }
    }
    *prob = e->w[k - 1] * f + mix;
    return k - 1;
}

/* EXP3's update with gain g in [0, 1] for `arm` chosen with probability prob (0: the current). */
static void update(exp3 *e, uint32_t arm, double g, double prob)
{
    e->updates++;
    if (!(g > 0.0))
        return;
    if (prob == 0.0)
        prob = prob_of(e, arm);
    else if (prob < e->mix)
        prob = e->mix;
    e->s[arm] += e->eta * g / prob;
    if (e->s[arm] - e->ref > SHIFT) {
        e->ref = e->s[arm];
        refresh_all(e);
    } else {
        e->w[arm] = exp(e->s[arm] - e->ref);
        refresh_z(e);
    }
}

/* Feeds an open, unfed EXP3-tau block with the average of its observations (if any). */
static void feed_block(exp3 *e)
{
    if (e->block_fed)
        return;
    e->block_fed = 1;
    if (e->block_obs > 0)
        update(e, e->last_arm, e->block_sum / (double)e->block_obs, 0.0);
}

ldpb_err agg_exp3_choose(agg_policy *p, agg_policy_env *env, uint32_t *arm)
{
    exp3 *e = (exp3 *)p;
    if (e->kind == AGG_EXP3_TAU && e->has_last && e->block_chosen < e->block_len) {
        e->block_chosen++;
        e->rounds++;
        *arm = e->last_arm;
        return LDPB_OK;
    }
    if (e->kind == AGG_EXP3_TAU && e->has_last)
        feed_block(e);
    e->last_arm = draw(e, env->rand, &e->last_prob);
    e->has_last = 1;
    if (e->kind == AGG_EXP3_TAU) {
        uint64_t len = e->tau;
        if (e->horizon && e->rounds < e->horizon && e->horizon - e->rounds < len)
            len = e->horizon - e->rounds;
        e->block_len = len;
        e->block_chosen = 1;
        e->block_obs = 0;
        e->block_sum = 0.0;
        e->block_fed = 0;
    }
    e->rounds++;
    *arm = e->last_arm;
    return LDPB_OK;
}

static ldpb_err observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs, double prob)
{
    exp3 *e = (exp3 *)p;
    if (arm >= p->cfg.k || !isfinite(obs))
        return LDPB_EINVAL;
    switch (e->kind) {
    case AGG_EXP3_PLAIN:
        break;
    case AGG_EXP3_TAU:
        e->obs[arm]++;
        if (!e->has_last || arm != e->last_arm || e->block_fed)
            return LDPB_OK;
        e->block_sum += obs;
        if (++e->block_obs >= e->block_len)
            feed_block(e);
        return LDPB_OK;
    case AGG_EXP3_LAP_CENTRAL:
        if (!env || !env->noise)
            return LDPB_EINVAL;
        {
            /* A gain in [0, 1] has sensitivity 1; the release is floating-point safe with the
             * secure source (on a grid, docs/privacy.md 5.7) and the textbook draw in simulation.
             */
            ldpb_err err = agg_noise_release(env->noise, obs, 1.0, e->lap_scale, &obs);
            if (err)
                return err;
            if (isnan(obs))
                return LDPB_ESTATE;
        }
        /* fall through */
    case AGG_EXP3_LAP_LOCAL:
        if (!(obs >= -e->b && obs <= 1.0 + e->b)) {
            e->obs[arm]++;
            e->rejected++;
            return LDPB_OK;
        }
        obs = (obs + e->b) / (1.0 + 2.0 * e->b);
        if (obs > 1.0)
            obs = 1.0; /* rounding only: the interval maps onto [0, 1] */
        break;
    }
    e->obs[arm]++;
    update(e, arm, obs, prob);
    return LDPB_OK;
}

ldpb_err agg_exp3_observe(agg_policy *p, agg_policy_env *env, uint32_t arm, double obs)
{
    return observe(p, env, arm, obs, 0.0);
}

ldpb_err agg_exp3_observe_with_propensity(agg_policy *p, agg_policy_env *env, uint32_t arm,
                                          double obs, double prob)
{
    if (!(prob > 0.0 && prob <= 1.0))
        return LDPB_EINVAL;
    return observe(p, env, arm, obs, prob);
}

ldpb_err agg_exp3_propensity(const agg_policy *p, double *prob)
{
    const exp3 *e = (const exp3 *)p;
    if (!e->has_last)
        return LDPB_ESTATE;
    *prob = e->last_prob;
    return LDPB_OK;
}

ldpb_err agg_exp3_probs(const agg_policy *p, double *probs, uint32_t k)
{
    if (!p || !probs || k != p->cfg.k || p->ops->choose != agg_exp3_choose)
        return LDPB_EINVAL;
    const exp3 *e = (const exp3 *)p;
    for (uint32_t i = 0; i < k; i++)
        probs[i] = prob_of(e, i);
    return LDPB_OK;
}

void agg_exp3_params(const agg_policy *p, double *gamma, double *threshold, uint64_t *tau,
                     uint64_t *updates, uint64_t *rejected)
{
    const exp3 *e = (const exp3 *)p;
    if (gamma)
        *gamma = e->gamma;
    if (threshold)
        *threshold = e->b;
    if (tau)
        *tau = e->tau;
    if (updates)
        *updates = e->updates;
    if (rejected)
        *rejected = e->rejected;
}

/* The state: the config fields the common header does not carry (tau, threshold), counters, the
 * last choice, the block, ref, then per arm s_i and the observation count. */
ldpb_err agg_exp3_save(const agg_policy *p, uint8_t *buf, size_t cap, size_t *len)
{
    const exp3 *e = (const exp3 *)p;
    agg_wbuf w;
    agg_wbuf_init(&w, buf, cap);
    agg_state_put_header(&w, p, EXP3_STATE_VERSION);
    agg_put_u64(&w, p->cfg.tau);
    agg_put_f64(&w, p->cfg.threshold);
    agg_put_u64(&w, e->updates);
    agg_put_u64(&w, e->rejected);
    agg_put_u64(&w, e->rounds);
    agg_put_u8(&w, (uint8_t)e->has_last);
    agg_put_u32(&w, e->last_arm);
    agg_put_f64(&w, e->last_prob);
    agg_put_u64(&w, e->block_len);
    agg_put_u64(&w, e->block_chosen);
    agg_put_u64(&w, e->block_obs);
    agg_put_f64(&w, e->block_sum);
    agg_put_u8(&w, (uint8_t)e->block_fed);
    agg_put_f64(&w, e->ref);
    for (uint32_t i = 0; i < p->cfg.k; i++) {
        agg_put_f64(&w, e->s[i]);
        agg_put_u64(&w, e->obs[i]);
    }
    return agg_wbuf_finish(&w, len);
}

/* Decodes and checks (see ucb_family.c's decode: once without commit, then with). */
static ldpb_err decode(exp3 *e, const uint8_t *buf, size_t len, int commit)
{
    const agg_policy_config *cfg = &e->base.cfg;
    agg_rbuf r;
    agg_rbuf_init(&r, buf, len);
    ldpb_err err = agg_state_get_header(&r, &e->base, EXP3_STATE_VERSION);
    if (err)
        return err;
    uint64_t tau = agg_get_u64(&r);
    double threshold = agg_get_f64(&r);
    /* Only the parameters this policy reads tie the state to a configuration (the ops table's
     * params say which), as for the header's. */
    unsigned reads = agg_policy_reads(e->base.ops, cfg);
    if (((reads & AGG_PARAM_TAU) && tau != cfg->tau) ||
        ((reads & AGG_PARAM_THRESHOLD) &&
         memcmp(&threshold, &cfg->threshold, sizeof threshold) != 0))
        return LDPB_ECORRUPT;
    uint64_t updates = agg_get_u64(&r), rejected = agg_get_u64(&r), rounds = agg_get_u64(&r);
    uint8_t has_last = agg_get_u8(&r);
    uint32_t last_arm = agg_get_u32(&r);
    double last_prob = agg_get_f64(&r);
    uint64_t block_len = agg_get_u64(&r), block_chosen = agg_get_u64(&r),
             block_obs = agg_get_u64(&r);
    double block_sum = agg_get_f64(&r);
    uint8_t block_fed = agg_get_u8(&r);
    double ref = agg_get_f64(&r);
    if (has_last > 1 || block_fed > 1 || last_arm >= cfg->k ||
        (has_last ? !(last_prob > 0.0 && last_prob <= 1.0) : last_prob != 0.0) ||
        !(ref >= 0.0 && ref < HUGE_VAL))
        return LDPB_ECORRUPT;
    int lap = e->kind == AGG_EXP3_LAP_CENTRAL || e->kind == AGG_EXP3_LAP_LOCAL;
    if (e->kind == AGG_EXP3_TAU && has_last
            ? (block_chosen > block_len || block_len > e->tau || block_obs > block_len ||
               !(block_sum >= 0.0 && block_sum <= (double)block_obs))
            : (block_len || block_chosen || block_obs || block_fed || block_sum != 0.0 ||
               signbit(block_sum)))
        return LDPB_ECORRUPT;
    if (!lap && rejected != 0)
        return LDPB_ECORRUPT;
    double smax = 0.0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < cfg->k; i++) {
        double s = agg_get_f64(&r);
        uint64_t o = agg_get_u64(&r);
        if (!(s >= 0.0 && s < HUGE_VAL) || o > UINT64_MAX - total)
            return LDPB_ECORRUPT;
        total += o;
        if (s > smax)
            smax = s;
        if (commit) {
            e->s[i] = s;
            e->obs[i] = o;
        }
    }
    if (!agg_rbuf_done(&r) || ref > smax || smax - ref > SHIFT || updates > total ||
        rejected > total - updates)
        return LDPB_ECORRUPT;
    if (commit) {
        e->updates = updates;
        e->rejected = rejected;
        e->rounds = rounds;
        e->has_last = has_last;
        e->last_arm = last_arm;
        e->last_prob = last_prob;
        e->block_len = block_len;
        e->block_chosen = block_chosen;
        e->block_obs = block_obs;
        e->block_sum = block_sum;
        e->block_fed = block_fed;
        e->ref = ref;
        refresh_all(e);
    }
    return LDPB_OK;
}

ldpb_err agg_exp3_restore(agg_policy *p, const uint8_t *buf, size_t len)
{
    exp3 *e = (exp3 *)p;
    ldpb_err err = decode(e, buf, len, 0);
    return err ? err : decode(e, buf, len, 1);
}

/* The estimate is G_i / (accepted updates): EXP3's unbiased estimate of arm i's average gain per
 * round (on DP-EXP3-Lap's rescaled scale); no interval. */
ldpb_err agg_exp3_describe(const agg_policy *p, agg_arm_status *arms, uint32_t k)
{
    const exp3 *e = (const exp3 *)p;
    for (uint32_t i = 0; i < k; i++) {
        arms[i].pulls = e->obs[i];
        arms[i].active = 1;
        arms[i].estimate = e->updates ? e->s[i] / e->eta / (double)e->updates : NAN;
        arms[i].ci_low = arms[i].ci_high = NAN;
    }
    return LDPB_OK;
}

void agg_exp3_free(agg_policy *p)
{
    exp3 *e = (exp3 *)p;
    if (!e)
        return;
    free(e->s);
    free(e->w);
    free(e->obs);
    free(e);
}
