/* Private Follow-The-Approximate-Leader over the simplex and its game loop (pftal.h). */
#include "pftal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "sim.h"

struct agg_pftal {
    agg_pftal_params prm;
    double xi;       /* bandit: beta / r */
    uint64_t rounds; /* losses observed */
    int pending;     /* bandit: a point was played and awaits its loss */
    agg_vtree *tree;
    double *w;       /* [p] the point (full) or centre (bandit) of the next round */
    double *sum_w;   /* [p] sum of the points (centres) of the rounds observed */
    double *u;       /* [p] bandit: the pending direction */
    double *w_hat;   /* [p] bandit: the pending played point */
    double *scratch; /* [2p] */
};

static int desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

void agg_simplex_project(const double *y, uint32_t n, double *out, double *scratch)
{
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(y[i])) {
            for (uint32_t j = 0; j < n; j++)
                out[j] = NAN;
            return;
        }
    memcpy(scratch, y, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, desc);
    double cum = 0.0, theta = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        cum += scratch[j];
        double th = (cum - 1.0) / (double)(j + 1);
        /* The condition holds for a prefix of j (Duchi et al. 2008, Lemma 2): the last j where
         * it holds gives the threshold. j = 0 always holds. */
        if (j == 0 || scratch[j] - th > 0)
            theta = th;
    }
    double s = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        out[i] = y[i] - theta > 0 ? y[i] - theta : 0.0;
        s += out[i];
    }
    /* Rounding can leave the sum a few ulps from 1; renormalising keeps the point on the simplex
     * to 1e-15 without moving it measurably. */
    if (s > 0)
        for (uint32_t i = 0; i < n; i++)
            out[i] /= s;
}

double agg_pftal_inner_radius(uint32_t p)
{
    return 1.0 / sqrt((double)p * (double)(p - 1));
}

double agg_pftal_l2_bound(const agg_pftal_params *prm)
{
    if (prm->mode == AGG_PFTAL_BANDIT)
        return (double)(prm->p - 1) * (1.0 + prm->h / 2) / prm->beta;
    return sqrt((double)prm->p) + prm->h;
}

void agg_pftal_tune(agg_pftal_params *prm)
{
    if (!prm || prm->p < 2 || prm->p > AGG_PFTAL_MAX_P || prm->horizon == 0)
        return;
    double p = prm->p, T = (double)prm->horizon, L;
    if (prm->mode == AGG_PFTAL_BANDIT) {
        prm->beta = agg_pftal_inner_radius(prm->p) * fmin(0.5, 4 * pow(T, -0.25));
        L = (p - 1) / prm->beta;
    } else {
        L = sqrt(p);
    }
    double lv = agg_tree_levels(prm->horizon);
    double n = isinf(prm->epsilon) ? 0.0 : 2 * L * sqrt(p * (p + 1)) * pow(lv, 1.5) / prm->epsilon;
    prm->h = sqrt(L * (L + n) / T);
    if (prm->mode == AGG_PFTAL_BANDIT)
        prm->h /= 10; /* the bound L = (p - 1) B / beta is far above the typical ||g_t|| */
}

ldpb_err agg_pftal_new(agg_pftal **out, const agg_pftal_params *prm, char errmsg[AGG_ERRMSG_MAX])
{
    if (!out || !prm)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "pftal: NULL argument");
    *out = NULL;
    const char *name = prm->mode == AGG_PFTAL_BANDIT ? "pftal-bandit" : "pftal";
    if (prm->mode != AGG_PFTAL_FULL && prm->mode != AGG_PFTAL_BANDIT)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "pftal: unknown mode %d", (int)prm->mode);
    if (isnan(prm->epsilon) || isnan(prm->h) || isnan(prm->beta))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: epsilon, H or beta is NaN", name);
    if (prm->p < 2 || prm->p > AGG_PFTAL_MAX_P)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: p = %u experts outside [2, %u]", name,
                                 prm->p, AGG_PFTAL_MAX_P);
    if (prm->horizon == 0)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: horizon must be at least 1", name);
    if (!(prm->epsilon > 0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: epsilon %g must be positive (inf: nonprivate)", name,
                                 prm->epsilon);
    if (!(prm->h > 0) || isinf(prm->h))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: strong convexity H = %g must be positive and finite", name,
                                 prm->h);
    double r = agg_pftal_inner_radius(prm->p);
    if (prm->mode == AGG_PFTAL_BANDIT && !(prm->beta > 0 && prm->beta < r))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "%s: beta = %g must lie in (0, r), r = 1/sqrt(p(p-1)) = %g (the "
                                 "simplex's inscribed radius; ST13 Thm 6 needs beta < r)",
                                 name, prm->beta, r);
    agg_pftal *f = calloc(1, sizeof *f);
    if (!f)
        return LDPB_ENOMEM;
    f->prm = *prm;
    if (prm->mode == AGG_PFTAL_FULL)
        f->prm.beta = 0;
    f->xi = prm->mode == AGG_PFTAL_BANDIT ? prm->beta / r : 0.0;
    uint32_t p = prm->p;
    f->w = calloc(p, sizeof *f->w);
    f->sum_w = calloc(p, sizeof *f->sum_w);
    f->u = calloc(p, sizeof *f->u);
    f->w_hat = calloc(p, sizeof *f->w_hat);
    f->scratch = calloc(2 * (size_t)p, sizeof *f->scratch);
    ldpb_err err = (f->w && f->sum_w && f->u && f->w_hat && f->scratch) ? LDPB_OK : LDPB_ENOMEM;
    if (err == LDPB_OK)
        err = agg_vtree_new(&f->tree, p, prm->horizon, prm->epsilon, agg_pftal_l2_bound(&f->prm),
                            errmsg);
    if (err != LDPB_OK) {
        agg_pftal_free(f);
        return err;
    }
    for (uint32_t i = 0; i < p; i++)
        f->w[i] = 1.0 / p;
    *out = f;
    return LDPB_OK;
}

void agg_pftal_free(agg_pftal *f)
{
    if (!f)
        return;
    agg_vtree_free(f->tree);
    free(f->w);
    free(f->sum_w);
    free(f->u);
    free(f->w_hat);
    free(f->scratch);
    free(f);
}

const double *agg_pftal_point(const agg_pftal *f)
{
    return f->w;
}

uint64_t agg_pftal_rounds(const agg_pftal *f)
{
    return f->rounds;
}

/* The next point (centre) from the release: the leader of the quadratic surrogates,
 * Proj(wbar_t - v_hat_t / (H t)), projected on the simplex or on C_xi. */
static void next_point(agg_pftal *f)
{
    uint32_t p = f->prm.p;
    double t = (double)f->rounds, ht = f->prm.h * t;
    const double *v = agg_vtree_release(f->tree);
    double *y = f->scratch + p, c = 1.0 / p, s = 1.0 - f->xi;
    for (uint32_t i = 0; i < p; i++) {
        y[i] = f->sum_w[i] / t - v[i] / ht;
        if (f->xi > 0)
            y[i] = c + (y[i] - c) / s;
    }
    agg_simplex_project(y, p, f->w, f->scratch);
    if (f->xi > 0)
        for (uint32_t i = 0; i < p; i++)
            f->w[i] = c + s * (f->w[i] - c);
}

ldpb_err agg_pftal_observe_full(agg_pftal *f, agg_noise *noise, const double *c)
{
    if (!f || !c || f->prm.mode != AGG_PFTAL_FULL)
        return LDPB_EINVAL;
    uint32_t p = f->prm.p;
    for (uint32_t i = 0; i < p; i++) {
        if (isnan(c[i]))
            return LDPB_EINVAL;
        if (!(c[i] >= 0 && c[i] <= 1))
            return LDPB_ERANGE;
    }
    if (f->rounds >= f->prm.horizon)
        return LDPB_ESTATE;
    double *g = f->scratch;
    for (uint32_t i = 0; i < p; i++)
        g[i] = c[i] + f->prm.h * f->w[i];
    ldpb_err err = agg_vtree_push(f->tree, noise, g);
    if (err != LDPB_OK)
        return err;
    for (uint32_t i = 0; i < p; i++)
        f->sum_w[i] += f->w[i];
    f->rounds++;
    next_point(f);
    return LDPB_OK;
}

ldpb_err agg_pftal_play_bandit(agg_pftal *f, agg_rand *rnd, double *w_hat, uint32_t *arm)
{
    if (!f || !rnd || !arm || f->prm.mode != AGG_PFTAL_BANDIT)
        return LDPB_EINVAL;
    if (f->pending || f->rounds >= f->prm.horizon)
        return LDPB_ESTATE;
    uint32_t p = f->prm.p;
    /* Uniform on the unit sphere of the plane sum = 0: a standard Gaussian in R^p with its mean
     * removed is a standard Gaussian of that (p-1)-dimensional subspace. */
    double n2;
    do {
        double m = 0.0;
        for (uint32_t i = 0; i < p; i++) {
            f->u[i] = agg_rand_normal(rnd);
            m += f->u[i];
        }
        m /= p;
        n2 = 0.0;
        for (uint32_t i = 0; i < p; i++) {
            f->u[i] -= m;
            n2 += f->u[i] * f->u[i];
        }
    } while (!(n2 > 0));
    double inv = 1.0 / sqrt(n2), beta = f->prm.beta, s = 0.0;
    for (uint32_t i = 0; i < p; i++) {
        f->u[i] *= inv;
        /* w~ in C_xi puts the ball of radius beta around it inside the simplex; clip the last
         * ulps of rounding so the sampling weights are never negative. */
        f->w_hat[i] = fmax(0.0, f->w[i] + beta * f->u[i]);
        s += f->w_hat[i];
    }
    double x = agg_rand_uniform(rnd) * s, acc = 0.0;
    uint32_t a = p - 1;
    for (uint32_t i = 0; i < p; i++) {
        acc += f->w_hat[i];
        if (x < acc && f->w_hat[i] > 0) {
            a = i;
            break;
        }
    }
    while (f->w_hat[a] <= 0 && a > 0)
        a--;
    if (w_hat)
        memcpy(w_hat, f->w_hat, p * sizeof *w_hat);
    *arm = a;
    f->pending = 1;
    return LDPB_OK;
}

ldpb_err agg_pftal_observe_bandit(agg_pftal *f, agg_noise *noise, double loss)
{
    if (!f || f->prm.mode != AGG_PFTAL_BANDIT || isnan(loss))
        return LDPB_EINVAL;
    if (!(loss >= 0 && loss <= 1))
        return LDPB_ERANGE;
    if (!f->pending)
        return LDPB_ESTATE;
    uint32_t p = f->prm.p;
    double n2 = 0.0;
    for (uint32_t i = 0; i < p; i++)
        n2 += f->w_hat[i] * f->w_hat[i];
    double hval = loss + f->prm.h / 2 * n2, k = (double)(p - 1) / f->prm.beta * hval;
    double *g = f->scratch;
    for (uint32_t i = 0; i < p; i++)
        g[i] = k * f->u[i];
    ldpb_err err = agg_vtree_push(f->tree, noise, g);
    if (err != LDPB_OK)
        return err;
    for (uint32_t i = 0; i < p; i++)
        f->sum_w[i] += f->w[i];
    f->rounds++;
    f->pending = 0;
    next_point(f);
    return LDPB_OK;
}

void agg_pftal_save(const agg_pftal *f, agg_wbuf *w)
{
    agg_put_u32(w, (uint32_t)f->prm.mode);
    agg_put_u32(w, f->prm.p);
    agg_put_u64(w, f->prm.horizon);
    agg_put_f64(w, f->prm.epsilon);
    agg_put_f64(w, f->prm.h);
    agg_put_f64(w, f->prm.beta);
    agg_put_u64(w, f->rounds);
    agg_put_u8(w, (uint8_t)f->pending);
    for (uint32_t i = 0; i < f->prm.p; i++) {
        agg_put_f64(w, f->w[i]);
        agg_put_f64(w, f->sum_w[i]);
        agg_put_f64(w, f->u[i]);
        agg_put_f64(w, f->w_hat[i]);
    }
    agg_vtree_save(f->tree, w);
}

static int same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

ldpb_err agg_pftal_restore(agg_pftal *f, agg_rbuf *r)
{
    if (!f || !r)
        return LDPB_EINVAL;
    uint32_t p = f->prm.p;
    uint32_t mode = agg_get_u32(r), rp = agg_get_u32(r);
    uint64_t horizon = agg_get_u64(r);
    double eps = agg_get_f64(r), h = agg_get_f64(r), beta = agg_get_f64(r);
    uint64_t rounds = agg_get_u64(r);
    uint8_t pending = agg_get_u8(r);
    if (r->bad || mode != (uint32_t)f->prm.mode || rp != p || horizon != f->prm.horizon ||
        !same_f64(eps, f->prm.epsilon) || !same_f64(h, f->prm.h) || !same_f64(beta, f->prm.beta) ||
        rounds > horizon || pending > 1 ||
        (pending && (f->prm.mode != AGG_PFTAL_BANDIT || rounds == horizon)))
        return LDPB_ECORRUPT;
    double *buf = calloc(4 * (size_t)p, sizeof *buf);
    if (!buf)
        return LDPB_ENOMEM;
    ldpb_err err = LDPB_OK;
    double s = 0.0;
    for (uint32_t i = 0; i < 4 * p; i++) {
        buf[i] = agg_get_f64(r);
        if (!isfinite(buf[i]))
            err = LDPB_ECORRUPT;
    }
    for (uint32_t i = 0; err == LDPB_OK && i < p; i++) {
        double wi = buf[4 * i], swi = buf[4 * i + 1];
        if (wi < 0 || wi > 1 || swi < 0 || swi > (double)rounds * (1 + 1e-9))
            err = LDPB_ECORRUPT;
        s += wi;
    }
    if (err == LDPB_OK && fabs(s - 1.0) > 1e-9)
        err = LDPB_ECORRUPT;
    if (r->bad)
        err = LDPB_ECORRUPT;
    /* The tree restores last, only if everything before it is sound; it leaves itself unchanged
     * on error, and nothing of f is written before it succeeds. */
    if (err == LDPB_OK) {
        agg_rbuf peek = *r; /* the tree's count, checked before the tree is touched */
        (void)agg_get_u32(&peek);
        (void)agg_get_u64(&peek);
        if (agg_get_u64(&peek) != rounds)
            err = LDPB_ECORRUPT;
    }
    if (err == LDPB_OK)
        err = agg_vtree_restore(f->tree, r);
    if (err == LDPB_OK) {
        for (uint32_t i = 0; i < p; i++) {
            f->w[i] = buf[4 * i];
            f->sum_w[i] = buf[4 * i + 1];
            f->u[i] = buf[4 * i + 2];
            f->w_hat[i] = buf[4 * i + 3];
        }
        f->rounds = rounds;
        f->pending = pending;
    }
    free(buf);
    return err;
}

/* ---- the game ----------------------------------------------------------------------------- */

ldpb_err agg_pftal_run_trial(const agg_pftal_game *g, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                             uint64_t trial, double *regret, char errmsg[AGG_ERRMSG_MAX])
{
    if (!g || !seed || !regret || !g->means || !g->checkpoints || g->n_checkpoints == 0)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "pftal game: NULL argument");
    if (trial >= (1ull << 32))
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "pftal game: trial %llu >= 2^32",
                                 (unsigned long long)trial);
    const agg_pftal_params *prm = &g->params;
    for (size_t j = 0; j < g->n_checkpoints; j++)
        if (g->checkpoints[j] == 0 || g->checkpoints[j] > prm->horizon ||
            (j > 0 && g->checkpoints[j] <= g->checkpoints[j - 1]) ||
            (j + 1 == g->n_checkpoints && g->checkpoints[j] != prm->horizon))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "pftal game: checkpoints[%zu] is out of order or range", j);
    agg_pftal *f = NULL;
    ldpb_rng *rs[3] = {NULL, NULL, NULL};
    agg_noise *noise = NULL;
    double *c = NULL, *w_hat = NULL;
    agg_rand env, pol, fast;
    ldpb_err err = agg_pftal_new(&f, prm, errmsg);
    uint32_t p = prm->p;
    double best = 1.0;
    for (uint32_t i = 0; err == LDPB_OK && i < p; i++) {
        if (!(g->means[i] >= 0 && g->means[i] <= 1))
            err = agg_policy_refuse(errmsg, LDPB_ERANGE, "pftal game: means[%u] outside [0, 1]", i);
        else
            best = fmin(best, g->means[i]);
    }
    const uint32_t purposes[3] = {AGG_SIM_PURPOSE_ENV, AGG_SIM_PURPOSE_POLICY,
                                  AGG_SIM_PURPOSE_NOISE};
    for (int i = 0; err == LDPB_OK && i < 3; i++)
        err = ldpb_rng_new_seeded_stream(&rs[i], seed, AGG_SIM_STREAM(trial, purposes[i], 0));
    if (err == LDPB_OK) {
        agg_rand_seed(&env, rs[0]);
        agg_rand_seed(&pol, rs[1]);
        agg_rand_seed(&fast, rs[2]);
        err = agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &fast);
    }
    if (err == LDPB_OK) {
        c = calloc(p, sizeof *c);
        w_hat = calloc(p, sizeof *w_hat);
        if (!c || !w_hat)
            err = LDPB_ENOMEM;
    }
    double reg = 0.0;
    size_t next = 0;
    for (uint64_t t = 1; err == LDPB_OK && t <= prm->horizon; t++) {
        for (uint32_t i = 0; i < p; i++)
            c[i] = agg_rand_uniform(&env) < g->means[i] ? 1.0 : 0.0;
        const double *w = agg_pftal_point(f);
        if (prm->mode == AGG_PFTAL_BANDIT) {
            uint32_t arm;
            err = agg_pftal_play_bandit(f, &pol, w_hat, &arm);
            if (err == LDPB_OK) {
                w = w_hat;
                err = agg_pftal_observe_bandit(f, noise, c[arm]);
            }
        }
        double lw = 0.0;
        for (uint32_t i = 0; i < p; i++)
            lw += g->means[i] * w[i];
        reg += lw - best;
        if (err == LDPB_OK && prm->mode == AGG_PFTAL_FULL)
            err = agg_pftal_observe_full(f, noise, c);
        if (err != LDPB_OK)
            agg_policy_refuse(errmsg, err, "pftal game: round %llu: %s", (unsigned long long)t,
                              ldpb_strerror(err));
        if (next < g->n_checkpoints && t == g->checkpoints[next])
            regret[next++] = reg;
    }
    free(c);
    free(w_hat);
    agg_noise_free(noise);
    for (int i = 0; i < 3; i++)
        ldpb_rng_free(rs[i]);
    agg_pftal_free(f);
    return err;
}
