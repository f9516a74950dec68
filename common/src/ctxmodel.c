/* The model a device chooses from in the local contextual mode (ldpb/ctxmodel.h). The
 * factorisation, the solve and the UCB index are the aggregator's LinUCB's own (ldpb/linalg.h),
 * so a device and the central policy given the same statistics compute the same numbers. */
#include "ldpb/ctxmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxstat.h"
#include "ldpb/linalg.h"

/* The repair's ridges: RIDGE_START times the largest |V_ii| (at least 1), doubled up to
 * RIDGE_DOUBLINGS times. */
#define RIDGE_START     1e-9
#define RIDGE_DOUBLINGS 60

struct ldpb_ctxmodel {
    uint32_t d;
    int loaded;
    double beta, logdet;
    double V[LDPB_CTXSTAT_D_MAX * LDPB_CTXSTAT_D_MAX]; /* the lower factor once loaded */
    double keep[LDPB_CTXSTAT_D_MAX * LDPB_CTXSTAT_D_MAX];
    double u[LDPB_CTXSTAT_D_MAX];
    double theta[LDPB_CTXSTAT_D_MAX];
    double inv_diag[LDPB_CTXSTAT_D_MAX];
    double w[LDPB_CTXSTAT_D_MAX];
};

ldpb_err ldpb_ctxmodel_new(ldpb_ctxmodel **out, uint32_t d)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (d < 1 || d > LDPB_CTXSTAT_D_MAX)
        return LDPB_ERANGE;
    ldpb_ctxmodel *m = calloc(1, sizeof *m);
    if (!m)
        return LDPB_ENOMEM;
    m->d = d;
    *out = m;
    return LDPB_OK;
}

void ldpb_ctxmodel_free(ldpb_ctxmodel *m)
{
    free(m);
}

ldpb_err ldpb_ctxmodel_load(ldpb_ctxmodel *m, const double *stats, size_t n_stats, double shift,
                            double beta, int *repaired)
{
    if (repaired)
        *repaired = 0;
    if (!m || !stats || n_stats != LDPB_CTXSTAT_VALUES(m->d) || !isfinite(shift) ||
        !(shift >= 0.0) || !isfinite(beta) || !(beta >= 0.0))
        return LDPB_EINVAL;
    for (size_t i = 0; i < n_stats; i++)
        if (!isfinite(stats[i]))
            return LDPB_EINVAL;
    const uint32_t d = m->d;
    m->loaded = 0;
    for (uint32_t i = 0; i < d; i++) {
        for (uint32_t j = i; j < d; j++)
            m->keep[i * d + j] = m->keep[j * d + i] = stats[ldpb_ctxstat_index(d, i, j)];
        m->keep[i * d + i] += shift;
        m->u[i] = stats[ldpb_ctxstat_index(d, i, d)];
    }
    const size_t bytes = (size_t)d * d * sizeof *m->V;
    memcpy(m->V, m->keep, bytes);
    if (ldpb_linalg_cholesky(m->V, d) != 0) {
        /* The noise left V indefinite: the smallest ridge of the doubling sequence that makes it
         * positive definite. Deterministic, so every device and the simulator agree. */
        double scale = 0.0;
        for (uint32_t i = 0; i < d; i++)
            scale = fmax(scale, fabs(m->keep[i * d + i]));
        double ridge = RIDGE_START * (scale > 1.0 ? scale : 1.0);
        int ok = 0;
        for (int attempt = 0; attempt <= RIDGE_DOUBLINGS && !ok; attempt++, ridge *= 2.0) {
            memcpy(m->V, m->keep, bytes);
            for (uint32_t i = 0; i < d; i++)
                m->V[i * d + i] += ridge;
            ok = ldpb_linalg_cholesky(m->V, d) == 0;
        }
        if (!ok)
            return LDPB_ESTATE;
        if (repaired)
            *repaired = 1;
    }
    m->logdet = ldpb_linalg_chol_solve(m->V, d, m->u, m->inv_diag, m->w, m->theta);
    m->beta = beta;
    m->loaded = 1;
    return LDPB_OK;
}

ldpb_err ldpb_ctxmodel_choose(ldpb_ctxmodel *m, ldpb_rng *rng, const double *x, uint32_t n_actions,
                              uint32_t *arm, uint32_t *ties)
{
    if (!m || !rng || !x || !arm)
        return LDPB_EINVAL;
    if (!m->loaded)
        return LDPB_ESTATE;
    if (n_actions == 0)
        return LDPB_ERANGE;
    const uint32_t d = m->d;
    for (size_t i = 0; i < (size_t)n_actions * d; i++)
        if (!isfinite(x[i]))
            return LDPB_EINVAL;
    double best = -HUGE_VAL;
    uint32_t choice = 0, count = 0;
    for (uint32_t a = 0; a < n_actions; a++) {
        double idx =
            ldpb_linalg_ucb_index(m->V, m->inv_diag, m->theta, m->beta, x + (size_t)a * d, d, m->w);
        if (isnan(idx)) /* finite rows so large that the index overflowed */
            return LDPB_EINVAL;
        if (idx > best) {
            best = idx;
            choice = a;
            count = 1;
        } else if (idx == best) {
            /* reservoir: the j-th maximiser replaces the choice with probability 1/j */
            count++;
            if (ldpb_rng_uniform(rng, count) == 0)
                choice = a;
        }
    }
    *arm = choice;
    if (ties)
        *ties = count;
    return LDPB_OK;
}

double ldpb_ctxmodel_logdet(const ldpb_ctxmodel *m)
{
    return m && m->loaded ? m->logdet : NAN;
}

ldpb_err ldpb_ctxmodel_theta(const ldpb_ctxmodel *m, double *theta)
{
    if (!m || !theta)
        return LDPB_EINVAL;
    if (!m->loaded)
        return LDPB_ESTATE;
    memcpy(theta, m->theta, (size_t)m->d * sizeof *theta);
    return LDPB_OK;
}
