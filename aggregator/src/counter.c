/* Continual counters: the binary tree, logarithmic and hybrid mechanisms (docs/derivations.md 11;
 * CSS10). The tree keeps, besides the exact and noisy p-sums, the partial sums of the noisy p-sums
 * from the top level down, so a release costs O(1) and an input costs O(lowest set bit), which is
 * O(1) amortised, without subtracting anything (no drift over 10^8 inputs). */
#include "counter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

struct agg_tree {
    uint64_t horizon;
    uint64_t count;
    uint32_t levels;   /* Lv for the current horizon */
    uint32_t capacity; /* levels the storage holds (>= levels) */
    double epsilon, lo, hi;
    double scale;      /* (hi - lo) Lv / epsilon */
    double *alpha;     /* exact p-sums, [capacity] */
    double *alpha_hat; /* noisy p-sums, [capacity] */
    double *top;       /* top[j]: sum of alpha_hat[i] over set bits i >= j of count, [capacity+1] */
    double store[];
};

struct agg_hybrid {
    agg_logmech log;
    agg_tree *tree; /* B_k for the current k; capacity AGG_TREE_MAX_LEVELS */
    double lo, hi, epsilon;
};

/* Bitwise equality, so a restored state must carry exactly the configured parameters. */
static int same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static uint32_t lowest_bit(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_ctzll(x);
#else
    uint32_t i = 0;
    while (!(x & 1)) {
        x >>= 1;
        i++;
    }
    return i;
#endif
}

static uint32_t popcount64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__builtin_popcountll(x);
#else
    uint32_t n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
#endif
}

static int is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

uint32_t agg_tree_levels(uint64_t horizon)
{
    uint32_t n = 0;
    for (; horizon; horizon >>= 1)
        n++;
    return n;
}

static ldpb_err check_params(double epsilon, double lo, double hi)
{
    if (!isfinite(epsilon) || !isfinite(lo) || !isfinite(hi))
        return LDPB_EINVAL;
    if (!(epsilon > 0) || !(lo < hi) || !isfinite(hi - lo) || !isfinite((hi - lo) / epsilon))
        return LDPB_ERANGE;
    return LDPB_OK;
}

/* ---- binary tree ------------------------------------------------------------------------ */

static void tree_reset(agg_tree *t, uint64_t horizon)
{
    t->horizon = horizon;
    t->count = 0;
    t->levels = agg_tree_levels(horizon);
    t->scale = (t->hi - t->lo) * (double)t->levels / t->epsilon;
    memset(t->store, 0, (3 * (size_t)t->capacity + 1) * sizeof(double));
}

static ldpb_err tree_alloc(agg_tree **out, uint32_t capacity, double epsilon, double lo, double hi)
{
    size_t n = 3 * (size_t)capacity + 1;
    agg_tree *t = calloc(1, sizeof *t + n * sizeof(double));
    if (!t)
        return LDPB_ENOMEM;
    t->capacity = capacity;
    t->epsilon = epsilon;
    t->lo = lo;
    t->hi = hi;
    t->alpha = t->store;
    t->alpha_hat = t->store + capacity;
    t->top = t->store + 2 * (size_t)capacity;
    *out = t;
    return LDPB_OK;
}

ldpb_err agg_tree_new(agg_tree **out, uint64_t horizon, double epsilon, double lo, double hi)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    ldpb_err err = check_params(epsilon, lo, hi);
    if (err != LDPB_OK)
        return err;
    if (horizon == 0)
        return LDPB_ERANGE;
    if (!isfinite((hi - lo) * (double)agg_tree_levels(horizon) / epsilon))
        return LDPB_ERANGE; /* the node noise scale would overflow */
    agg_tree *t = NULL;
    err = tree_alloc(&t, agg_tree_levels(horizon), epsilon, lo, hi);
    if (err != LDPB_OK)
        return err;
    tree_reset(t, horizon);
    *out = t;
    return LDPB_OK;
}

void agg_tree_free(agg_tree *t)
{
    if (!t)
        return;
    /* The exact p-sums are raw-reward data of a trusted aggregator. */
    sodium_memzero(t, sizeof *t + (3 * (size_t)t->capacity + 1) * sizeof(double));
    free(t);
}

ldpb_err agg_tree_push(agg_tree *t, agg_noise *noise, double z, double *release)
{
    if (!t || !noise || isnan(z))
        return LDPB_EINVAL;
    if (!(z >= t->lo && z <= t->hi))
        return LDPB_ERANGE;
    if (t->count >= t->horizon)
        return LDPB_ESTATE;
    uint64_t n = t->count + 1;
    uint32_t i = lowest_bit(n); /* < levels because n <= horizon < 2^levels */
    /* The lower p-sums merge into level i. */
    double a = z;
    for (uint32_t j = 0; j < i; j++)
        a += t->alpha[j];
    /* Node i is complete now: its noise is drawn here, once (Chan, Shi & Song 2011, the binary
     * mechanism), on a grid (docs/privacy.md). One input moves it by at most hi - lo. */
    double hat;
    ldpb_err err = agg_noise_release(noise, a, t->hi - t->lo, t->scale, &hat);
    if (err != LDPB_OK)
        return err;
    /* The lower levels empty. One loop for the three arrays: short, and kept off memset. */
    double s = t->top[i + 1] + hat;
    for (uint32_t j = 0; j < i; j++) {
        t->alpha[j] = 0;
        t->alpha_hat[j] = 0;
        t->top[j] = s;
    }
    t->alpha[i] = a;
    t->alpha_hat[i] = hat;
    t->top[i] = s;
    t->count = n;
    if (release)
        *release = s;
    return LDPB_OK;
}

double agg_tree_release(const agg_tree *t)
{
    return t->top[0];
}

uint64_t agg_tree_count(const agg_tree *t)
{
    return t->count;
}

uint64_t agg_tree_horizon(const agg_tree *t)
{
    return t->horizon;
}

uint32_t agg_tree_depth(const agg_tree *t)
{
    return t->levels;
}

double agg_tree_noise_scale(const agg_tree *t)
{
    return t->scale;
}

double agg_tree_exact(const agg_tree *t)
{
    double s = 0;
    for (uint32_t j = t->levels; j-- > 0;)
        if (t->count >> j & 1)
            s += t->alpha[j];
    return s;
}

ldpb_err agg_tree_node(const agg_tree *t, uint32_t level, double *exact, double *noisy)
{
    if (!t)
        return LDPB_EINVAL;
    if (level >= t->levels)
        return LDPB_ERANGE;
    if (exact)
        *exact = t->alpha[level];
    if (noisy)
        *noisy = t->alpha_hat[level];
    return LDPB_OK;
}

void agg_tree_save(const agg_tree *t, agg_wbuf *w)
{
    agg_put_u64(w, t->horizon);
    agg_put_u64(w, t->count);
    agg_put_f64(w, t->epsilon);
    agg_put_f64(w, t->lo);
    agg_put_f64(w, t->hi);
    for (uint32_t j = 0; j < t->levels; j++) {
        agg_put_f64(w, t->alpha[j]);
        agg_put_f64(w, t->alpha_hat[j]);
    }
}

/* The top-down sums exactly as agg_tree_push builds them: additions at set bits only, from the
 * highest level down, so a restored tree releases bit-identical values. */
static void tree_rebuild_top(agg_tree *t)
{
    t->top[t->levels] = 0;
    for (uint32_t j = t->levels; j-- > 0;)
        t->top[j] = (t->count >> j & 1) ? t->top[j + 1] + t->alpha_hat[j] : t->top[j + 1];
}

/* Reads a tree record that must have `t`'s parameters and horizon `horizon`, checks it, and only
 * then loads it into `t` (reset to that horizon). */
static ldpb_err tree_load(agg_tree *t, uint64_t horizon, agg_rbuf *r)
{
    double alpha[AGG_TREE_MAX_LEVELS], alpha_hat[AGG_TREE_MAX_LEVELS];
    uint32_t levels = agg_tree_levels(horizon);
    if (agg_get_u64(r) != horizon)
        return LDPB_ECORRUPT;
    uint64_t count = agg_get_u64(r);
    double eps = agg_get_f64(r), lo = agg_get_f64(r), hi = agg_get_f64(r);
    if (r->bad || count > horizon || !same_f64(eps, t->epsilon) || !same_f64(lo, t->lo) ||
        !same_f64(hi, t->hi) || levels > t->capacity)
        return LDPB_ECORRUPT;
    /* A p-sum at level j adds 2^j inputs in [lo, hi]; allow for rounding. */
    double bound = fmax(fabs(t->lo), fabs(t->hi)) * (1 + 1e-9);
    for (uint32_t j = 0; j < levels; j++) {
        alpha[j] = agg_get_f64(r);
        alpha_hat[j] = agg_get_f64(r);
        if (r->bad || !isfinite(alpha[j]) || !isfinite(alpha_hat[j]))
            return LDPB_ECORRUPT;
        if (!(count >> j & 1) && (alpha[j] != 0 || alpha_hat[j] != 0))
            return LDPB_ECORRUPT;
        if (fabs(alpha[j]) > ldexp(bound, (int)j))
            return LDPB_ECORRUPT;
    }
    tree_reset(t, horizon);
    t->count = count;
    memcpy(t->alpha, alpha, levels * sizeof(double));
    memcpy(t->alpha_hat, alpha_hat, levels * sizeof(double));
    tree_rebuild_top(t);
    return LDPB_OK;
}

ldpb_err agg_tree_restore(agg_tree *t, agg_rbuf *r)
{
    if (!t || !r)
        return LDPB_EINVAL;
    return tree_load(t, t->horizon, r);
}

/* ---- logarithmic mechanism -------------------------------------------------------------- */

ldpb_err agg_logmech_init(agg_logmech *m, double epsilon, double lo, double hi)
{
    if (!m)
        return LDPB_EINVAL;
    ldpb_err err = check_params(epsilon, lo, hi);
    if (err != LDPB_OK)
        return err;
    memset(m, 0, sizeof *m);
    m->epsilon = epsilon;
    m->lo = lo;
    m->hi = hi;
    return LDPB_OK;
}

ldpb_err agg_logmech_push(agg_logmech *m, agg_noise *noise, double z, double *release)
{
    if (!m || !noise || isnan(z))
        return LDPB_EINVAL;
    if (!(z >= m->lo && z <= m->hi))
        return LDPB_ERANGE;
    if (m->count == UINT64_MAX)
        return LDPB_ESTATE;
    double noisy = m->noisy + z;
    if (is_pow2(m->count + 1)) {
        /* Each input lies in exactly one increment between powers of two: one draw per power.
         * The part of `noisy` released before is public, so one input moves it by at most
         * hi - lo. */
        ldpb_err err =
            agg_noise_release(noise, noisy, m->hi - m->lo, (m->hi - m->lo) / m->epsilon, &noisy);
        if (err != LDPB_OK)
            return err;
        m->released = noisy;
    }
    m->count++;
    m->exact += z;
    m->noisy = noisy;
    if (release)
        *release = m->released;
    return LDPB_OK;
}

/* ---- hybrid mechanism ------------------------------------------------------------------- */

/* Index k of the block (2^k, 2^(k+1)) that holds count c, c not a power of two. */
static uint32_t block_of(uint64_t c)
{
    return agg_tree_levels(c) - 1;
}

ldpb_err agg_hybrid_new(agg_hybrid **out, double epsilon, double lo, double hi)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    ldpb_err err = check_params(epsilon, lo, hi);
    if (err != LDPB_OK)
        return err;
    if (!isfinite(2 * (hi - lo) * AGG_TREE_MAX_LEVELS / epsilon))
        return LDPB_ERANGE; /* the largest B_k's noise scale would overflow */
    agg_hybrid *h = calloc(1, sizeof *h);
    if (!h)
        return LDPB_ENOMEM;
    err = agg_logmech_init(&h->log, epsilon / 2, lo, hi);
    if (err == LDPB_OK)
        err = tree_alloc(&h->tree, AGG_TREE_MAX_LEVELS, epsilon / 2, lo, hi);
    if (err != LDPB_OK) {
        free(h);
        return err;
    }
    tree_reset(h->tree, 1);
    h->lo = lo;
    h->hi = hi;
    h->epsilon = epsilon;
    *out = h;
    return LDPB_OK;
}

void agg_hybrid_free(agg_hybrid *h)
{
    if (!h)
        return;
    agg_tree_free(h->tree);
    sodium_memzero(h, sizeof *h);
    free(h);
}

ldpb_err agg_hybrid_push(agg_hybrid *h, agg_noise *noise, double z, double *release)
{
    if (!h || !noise || isnan(z))
        return LDPB_EINVAL;
    if (!(z >= h->lo && z <= h->hi))
        return LDPB_ERANGE;
    if (h->log.count == UINT64_MAX)
        return LDPB_ESTATE;
    uint64_t c = h->log.count + 1;
    if (!is_pow2(c)) {
        uint32_t k = block_of(c);
        /* The first input after 2^k opens B_k afresh: horizon 2^k - 1, k levels. */
        if (c == ((uint64_t)1 << k) + 1)
            tree_reset(h->tree, ((uint64_t)1 << k) - 1);
        ldpb_err err = agg_tree_push(h->tree, noise, z, NULL);
        if (err != LDPB_OK)
            return err;
    }
    ldpb_err err = agg_logmech_push(&h->log, noise, z, NULL);
    if (err != LDPB_OK)
        return err;
    if (release)
        *release = agg_hybrid_release(h);
    return LDPB_OK;
}

double agg_hybrid_release(const agg_hybrid *h)
{
    uint64_t c = h->log.count;
    if (c == 0 || is_pow2(c))
        return h->log.released;
    return h->log.released + agg_tree_release(h->tree);
}

uint64_t agg_hybrid_count(const agg_hybrid *h)
{
    return h->log.count;
}

double agg_hybrid_exact(const agg_hybrid *h)
{
    return h->log.exact;
}

double agg_hybrid_error_variance(uint64_t count, double epsilon, double delta)
{
    if (count == 0)
        return 0;
    uint32_t k = block_of(count);
    double b_log = 2 * delta / epsilon;
    double v = (double)(k + 1) * 2 * b_log * b_log;
    uint64_t rest = count - ((uint64_t)1 << k);
    if (rest) {
        double b_tree = 2 * delta * (double)k / epsilon;
        v += (double)popcount64(rest) * 2 * b_tree * b_tree;
    }
    return v;
}

/* The horizon of the tree B_k that belongs to a count: B_k for 2^k < count < 2^(k+1), the
 * completed B_k at count 2^(k+1), and the untouched initial horizon-1 tree while count <= 2. */
static uint64_t hybrid_tree_horizon(uint64_t count)
{
    if (count < 3)
        return 1;
    uint32_t k = is_pow2(count) ? block_of(count - 1) : block_of(count);
    return ((uint64_t)1 << k) - 1;
}

/* The number of inputs B_k holds at `count`. */
static uint64_t hybrid_tree_count(uint64_t count)
{
    if (count < 3)
        return 0;
    if (is_pow2(count))
        return count / 2 - 1;
    return count - ((uint64_t)1 << block_of(count));
}

void agg_hybrid_save(const agg_hybrid *h, agg_wbuf *w)
{
    agg_put_u64(w, h->log.count);
    agg_put_f64(w, h->epsilon);
    agg_put_f64(w, h->lo);
    agg_put_f64(w, h->hi);
    agg_put_f64(w, h->log.exact);
    agg_put_f64(w, h->log.noisy);
    agg_put_f64(w, h->log.released);
    agg_tree_save(h->tree, w);
}

ldpb_err agg_hybrid_restore(agg_hybrid *h, agg_rbuf *r)
{
    if (!h || !r)
        return LDPB_EINVAL;
    uint64_t count = agg_get_u64(r);
    double eps = agg_get_f64(r), lo = agg_get_f64(r), hi = agg_get_f64(r);
    double exact = agg_get_f64(r), noisy = agg_get_f64(r), released = agg_get_f64(r);
    if (r->bad || count == UINT64_MAX || !same_f64(eps, h->epsilon) || !same_f64(lo, h->lo) ||
        !same_f64(hi, h->hi))
        return LDPB_ECORRUPT;
    if (!isfinite(exact) || !isfinite(noisy) || !isfinite(released))
        return LDPB_ECORRUPT;
    double bound = fmax(fabs(h->lo), fabs(h->hi)) * (1 + 1e-9);
    if (fabs(exact) > bound * (double)count)
        return LDPB_ECORRUPT;
    if (count == 0 && (noisy != 0 || released != 0))
        return LDPB_ECORRUPT;
    /* Check the tree's record on a copy of its position, so a bad record changes nothing. */
    agg_rbuf probe = *r;
    if (agg_get_u64(&probe) != hybrid_tree_horizon(count) ||
        agg_get_u64(&probe) != hybrid_tree_count(count) || probe.bad)
        return LDPB_ECORRUPT;
    ldpb_err err = tree_load(h->tree, hybrid_tree_horizon(count), r);
    if (err != LDPB_OK)
        return err;
    h->log.count = count;
    h->log.exact = exact;
    h->log.noisy = noisy;
    h->log.released = released;
    return LDPB_OK;
}
