/* Tree-based aggregation for vectors with L2-Laplace node noise (vtree.h). */
#include "vtree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"

struct agg_vtree {
    uint32_t dim, levels;
    uint64_t horizon, count;
    double epsilon, l2_bound;
    double scale;     /* 2 L' Lv / eps; 0 without noise */
    double *exact;    /* [level * dim + i] exact node sums (not private) */
    double *noisy;    /* [level * dim + i] node sums plus their noise */
    double *released; /* [i] sum of the noisy nodes at the set bits of count */
    double *tmp;      /* [2 * dim] scratch for push (new node, noise) */
};

static void wipe(void *p, size_t n)
{
    volatile unsigned char *q = p;
    while (n--)
        *q++ = 0;
}

ldpb_err agg_vtree_new(agg_vtree **out, uint32_t dim, uint64_t horizon, double epsilon,
                       double l2_bound, char errmsg[AGG_ERRMSG_MAX])
{
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "vtree: NULL output");
    *out = NULL;
    if (isnan(epsilon) || isnan(l2_bound))
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "vtree: epsilon or L2 bound is NaN");
    if (dim == 0 || dim > AGG_VTREE_MAX_DIM)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "vtree: dimension %u outside [1, %u]", dim,
                                 AGG_VTREE_MAX_DIM);
    if (horizon == 0)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "vtree: horizon must be at least 1");
    if (!(epsilon > 0))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "vtree: epsilon %g must be positive (INFINITY: no noise)",
                                 epsilon);
    if (!(l2_bound > 0) || !isfinite(l2_bound))
        return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                 "vtree: L2 bound %g must be positive and finite", l2_bound);
    agg_vtree *t = calloc(1, sizeof *t);
    if (!t)
        return LDPB_ENOMEM;
    t->dim = dim;
    t->horizon = horizon;
    t->levels = agg_tree_levels(horizon);
    t->epsilon = epsilon;
    t->l2_bound = l2_bound;
    t->scale = isinf(epsilon) ? 0.0 : 2.0 * l2_bound * (double)t->levels / epsilon;
    size_t n = (size_t)t->levels * dim;
    t->exact = calloc(n, sizeof *t->exact);
    t->noisy = calloc(n, sizeof *t->noisy);
    t->released = calloc(dim, sizeof *t->released);
    t->tmp = calloc(2 * (size_t)dim, sizeof *t->tmp);
    if (!t->exact || !t->noisy || !t->released || !t->tmp) {
        agg_vtree_free(t);
        return LDPB_ENOMEM;
    }
    *out = t;
    return LDPB_OK;
}

void agg_vtree_free(agg_vtree *t)
{
    if (!t)
        return;
    size_t n = (size_t)t->levels * t->dim;
    if (t->exact)
        wipe(t->exact, n * sizeof *t->exact);
    if (t->noisy)
        wipe(t->noisy, n * sizeof *t->noisy);
    if (t->released)
        wipe(t->released, t->dim * sizeof *t->released);
    if (t->tmp)
        wipe(t->tmp, 2 * (size_t)t->dim * sizeof *t->tmp);
    free(t->exact);
    free(t->noisy);
    free(t->released);
    free(t->tmp);
    free(t);
}

/* b = r u, r ~ Gamma(dim, scale) as a sum of dim unit exponentials (dim is an integer, so this
 * is the exact law), u = g / ||g|| for g standard Gaussian (Box-Muller), uniform on the sphere. */
static void l2_laplace(agg_noise *noise, uint32_t dim, double scale, double *b)
{
    double r = 0.0;
    for (uint32_t i = 0; i < dim; i++)
        r -= log(agg_noise_uniform_pos(noise));
    double norm2;
    do {
        norm2 = 0.0;
        for (uint32_t i = 0; i < dim; i += 2) {
            double rad = sqrt(-2.0 * log(agg_noise_uniform_pos(noise)));
            double ang = 6.283185307179586 * agg_noise_uniform_pos(noise);
            b[i] = rad * cos(ang);
            if (i + 1 < dim)
                b[i + 1] = rad * sin(ang);
        }
        for (uint32_t i = 0; i < dim; i++)
            norm2 += b[i] * b[i];
    } while (!(norm2 > 0.0));
    double f = scale * r / sqrt(norm2);
    for (uint32_t i = 0; i < dim; i++)
        b[i] *= f;
}

static void rebuild_release(agg_vtree *t)
{
    memset(t->released, 0, t->dim * sizeof *t->released);
    for (uint32_t j = t->levels; j-- > 0;)
        if (t->count >> j & 1)
            for (uint32_t i = 0; i < t->dim; i++)
                t->released[i] += t->noisy[(size_t)j * t->dim + i];
}

ldpb_err agg_vtree_push(agg_vtree *t, agg_noise *noise, const double *z)
{
    if (!t || !z || (!noise && t->scale > 0))
        return LDPB_EINVAL;
    double n2 = 0.0;
    for (uint32_t i = 0; i < t->dim; i++) {
        if (!isfinite(z[i]))
            return LDPB_EINVAL;
        n2 += z[i] * z[i];
    }
    if (sqrt(n2) > t->l2_bound * (1 + 1e-9))
        return LDPB_ERANGE;
    if (t->count >= t->horizon)
        return LDPB_ESTATE;
    uint64_t c = t->count + 1;
    uint32_t lvl = 0;
    while (!(c >> lvl & 1))
        lvl++;
    /* The new node covers the 2^lvl inputs ending at c: z plus the (now merged) lower nodes. */
    double *node = t->tmp, *b = t->tmp + t->dim;
    memcpy(node, z, t->dim * sizeof *node);
    for (uint32_t j = 0; j < lvl; j++)
        for (uint32_t i = 0; i < t->dim; i++)
            node[i] += t->exact[(size_t)j * t->dim + i];
    if (t->scale > 0)
        l2_laplace(noise, t->dim, t->scale, b);
    else
        memset(b, 0, t->dim * sizeof *b);
    for (uint32_t j = 0; j < lvl; j++)
        for (uint32_t i = 0; i < t->dim; i++) {
            t->exact[(size_t)j * t->dim + i] = 0.0;
            t->noisy[(size_t)j * t->dim + i] = 0.0;
        }
    for (uint32_t i = 0; i < t->dim; i++) {
        t->exact[(size_t)lvl * t->dim + i] = node[i];
        t->noisy[(size_t)lvl * t->dim + i] = node[i] + b[i];
    }
    t->count = c;
    rebuild_release(t);
    return LDPB_OK;
}

const double *agg_vtree_release(const agg_vtree *t)
{
    return t->released;
}

void agg_vtree_exact(const agg_vtree *t, double *out)
{
    memset(out, 0, t->dim * sizeof *out);
    for (uint32_t j = t->levels; j-- > 0;)
        if (t->count >> j & 1)
            for (uint32_t i = 0; i < t->dim; i++)
                out[i] += t->exact[(size_t)j * t->dim + i];
}

uint32_t agg_vtree_dim(const agg_vtree *t)
{
    return t->dim;
}

uint64_t agg_vtree_count(const agg_vtree *t)
{
    return t->count;
}

uint32_t agg_vtree_depth(const agg_vtree *t)
{
    return t->levels;
}

double agg_vtree_noise_scale(const agg_vtree *t)
{
    return t->scale;
}

void agg_vtree_save(const agg_vtree *t, agg_wbuf *w)
{
    agg_put_u32(w, t->dim);
    agg_put_u64(w, t->horizon);
    agg_put_u64(w, t->count);
    agg_put_f64(w, t->epsilon);
    agg_put_f64(w, t->l2_bound);
    size_t n = (size_t)t->levels * t->dim;
    for (size_t i = 0; i < n; i++)
        agg_put_f64(w, t->exact[i]);
    for (size_t i = 0; i < n; i++)
        agg_put_f64(w, t->noisy[i]);
}

static int same_f64(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

ldpb_err agg_vtree_restore(agg_vtree *t, agg_rbuf *r)
{
    if (!t || !r)
        return LDPB_EINVAL;
    uint32_t dim = agg_get_u32(r);
    uint64_t horizon = agg_get_u64(r), count = agg_get_u64(r);
    double eps = agg_get_f64(r), bound = agg_get_f64(r);
    if (r->bad || dim != t->dim || horizon != t->horizon || count > horizon ||
        !same_f64(eps, t->epsilon) || !same_f64(bound, t->l2_bound))
        return LDPB_ECORRUPT;
    size_t n = (size_t)t->levels * t->dim;
    double *exact = calloc(n, sizeof *exact), *noisy = calloc(n, sizeof *noisy);
    ldpb_err err = (exact && noisy) ? LDPB_OK : LDPB_ENOMEM;
    for (size_t i = 0; err == LDPB_OK && i < n; i++)
        exact[i] = agg_get_f64(r);
    for (size_t i = 0; err == LDPB_OK && i < n; i++)
        noisy[i] = agg_get_f64(r);
    for (uint32_t j = 0; err == LDPB_OK && j < t->levels; j++) {
        int set = (int)(count >> j & 1);
        double n2 = 0.0, lim = ldexp(t->l2_bound, (int)j) * (1 + 1e-9);
        for (uint32_t i = 0; i < t->dim; i++) {
            double e = exact[(size_t)j * t->dim + i], y = noisy[(size_t)j * t->dim + i];
            if (r->bad || !isfinite(e) || !isfinite(y) || (!set && (e != 0.0 || y != 0.0)) ||
                (t->scale == 0 && y != e))
                err = LDPB_ECORRUPT;
            n2 += e * e;
        }
        if (sqrt(n2) > lim)
            err = LDPB_ECORRUPT;
    }
    if (err == LDPB_OK && r->bad)
        err = LDPB_ECORRUPT;
    if (err == LDPB_OK) {
        memcpy(t->exact, exact, n * sizeof *exact);
        memcpy(t->noisy, noisy, n * sizeof *noisy);
        t->count = count;
        rebuild_release(t);
    }
    if (exact)
        wipe(exact, n * sizeof *exact);
    if (noisy)
        wipe(noisy, n * sizeof *noisy);
    free(exact);
    free(noisy);
    return err;
}
