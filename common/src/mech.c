/* Mechanism configuration, validation, names and the per-report entry points shared by all
 * kinds. The families themselves live in mech_bernoulli.c and mech_laplace.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mech_internal.h"

void ldpb_mech_opts_init(ldpb_mech_opts *opts, ldpb_mech_kind kind, double epsilon)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->kind = kind;
    opts->epsilon = epsilon;
    opts->kappa = LDPB_KAPPA_DEFAULT;
    opts->lambda = 0.0;
    opts->p0 = 0.0;
    opts->p1 = 0.0;
    opts->range_lo = 0.0;
    opts->range_hi = 1.0;
}

/* The table row of a kind that ldpb_mech_new builds: a local one. */
static const ldpb_mech_desc *local_desc(ldpb_mech_kind kind)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)kind);
    return ldpb_mech_desc_scalar(d) ? d : NULL;
}

static int kind_is_bernoulli(ldpb_mech_kind kind)
{
    const ldpb_mech_desc *d = local_desc(kind);
    return d && d->output == LDPB_MECH_OUTPUT_BIT;
}

static ldpb_err validate_common(const ldpb_mech_opts *o)
{
    if (!local_desc(o->kind))
        return LDPB_EINVAL;
    if (isnan(o->epsilon))
        return LDPB_EINVAL;
    if (!(o->epsilon > 0.0 && o->epsilon <= LDPB_EPSILON_MAX))
        return LDPB_ERANGE;
    /* Every parameter must be a number, even those the kind ignores: a NaN in a config is a
     * caller bug worth reporting, whichever mechanism it is paired with. */
    if (!isfinite(o->range_lo) || !isfinite(o->range_hi) || !isfinite(o->kappa) ||
        !isfinite(o->lambda) || !isfinite(o->p0) || !isfinite(o->p1))
        return LDPB_EINVAL;
    if (!(o->range_lo < o->range_hi) || !isfinite(o->range_hi - o->range_lo))
        return LDPB_ERANGE;
    return LDPB_OK;
}

ldpb_err ldpb_mech_new(ldpb_mech **out, const ldpb_mech_opts *opts)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!opts)
        return LDPB_EINVAL;
    ldpb_err err = validate_common(opts);
    if (err)
        return err;
    struct ldpb_mech *m = calloc(1, sizeof *m);
    if (!m)
        return LDPB_ENOMEM;
    m->opts = *opts;
    m->range_width = opts->range_hi - opts->range_lo;
    m->desc = local_desc(opts->kind);
    err = m->desc->init(m);
    if (err) {
        free(m);
        return err;
    }
    *out = m;
    return LDPB_OK;
}

void ldpb_mech_free(ldpb_mech *mech)
{
    free(mech);
}

static double unit_of(const ldpb_mech *m, double reward)
{
    /* A division, not a multiplication by the reciprocal, so that range_hi maps to exactly 1.
     * Callers have rejected NaN and infinity already. */
    double x = (reward - m->opts.range_lo) / m->range_width;
    return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

ldpb_err ldpb_mech_unit_reward(const ldpb_mech *mech, double reward, double *x01)
{
    if (!mech || !x01 || !isfinite(reward))
        return LDPB_EINVAL;
    *x01 = unit_of(mech, reward);
    return LDPB_OK;
}

static void sample_unit(const ldpb_mech *m, ldpb_rng *rng, double x01, double *out)
{
    m->desc->sample(m, rng, x01, out);
}

ldpb_err ldpb_mech_privatize(const ldpb_mech *mech, ldpb_rng *rng, double reward, double *out)
{
    if (!mech || !rng || !out || !isfinite(reward))
        return LDPB_EINVAL;
    sample_unit(mech, rng, unit_of(mech, reward), out);
    return LDPB_OK;
}

ldpb_err ldpb_mech_privatize_batch(const ldpb_mech *mech, ldpb_rng *rng, const double *rewards,
                                   size_t n, double *out)
{
    if (!mech || !rng || (n > 0 && (!rewards || !out)))
        return LDPB_EINVAL;
    /* All or nothing: a bad value found halfway would leave a half-written output whose drawn
     * part already spent randomness the caller cannot see. */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(rewards[i]))
            return LDPB_EINVAL;
    for (size_t i = 0; i < n; i++)
        sample_unit(mech, rng, unit_of(mech, rewards[i]), &out[i]);
    return LDPB_OK;
}

ldpb_err ldpb_mech_privatize_unit(const ldpb_mech *mech, ldpb_rng *rng, double x01, double *out)
{
    if (!mech || !rng || !out || !isfinite(x01))
        return LDPB_EINVAL;
    double x = x01 < 0.0 ? 0.0 : (x01 > 1.0 ? 1.0 : x01);
    sample_unit(mech, rng, x, out);
    return LDPB_OK;
}

ldpb_mech_kind ldpb_mech_get_kind(const ldpb_mech *mech)
{
    return mech->opts.kind;
}

double ldpb_mech_epsilon(const ldpb_mech *mech)
{
    return mech->opts.epsilon;
}

double ldpb_mech_epsilon_effective(const ldpb_mech *mech)
{
    return mech->eps_eff;
}

const ldpb_mech_opts *ldpb_mech_get_opts(const ldpb_mech *mech)
{
    return &mech->opts;
}

int ldpb_mech_is_bernoulli(const ldpb_mech *mech)
{
    return mech->desc->output == LDPB_MECH_OUTPUT_BIT;
}

static double clip01(double x)
{
    if (isnan(x))
        return NAN;
    return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

double ldpb_mech_prob_one_nominal(const ldpb_mech *mech, double x01)
{
    if (!kind_is_bernoulli(mech->opts.kind) || isnan(x01))
        return NAN;
    return mech_bernoulli_nominal(mech, clip01(x01));
}

double ldpb_mech_prob_one(const ldpb_mech *mech, double x01)
{
    if (!kind_is_bernoulli(mech->opts.kind) || isnan(x01))
        return NAN;
    return ldexp((double)mech_bernoulli_threshold(mech, clip01(x01)), -64);
}

void ldpb_mech_endpoints(const ldpb_mech *mech, double *p0, double *p1)
{
    int bern = kind_is_bernoulli(mech->opts.kind);
    if (p0)
        *p0 = bern ? ldexp((double)mech->t0, -64) : NAN;
    if (p1)
        *p1 = bern ? ldexp((double)mech->t1, -64) : NAN;
}

double ldpb_mech_laplace_grid(const ldpb_mech *mech)
{
    return mech->desc->output == LDPB_MECH_OUTPUT_REAL ? mech->grid : NAN;
}

double ldpb_mech_noise_variance(const ldpb_mech *mech)
{
    if (mech->desc->output != LDPB_MECH_OUTPUT_REAL)
        return NAN;
    /* Discrete Laplace with ratio q per grid unit: Var = 2q / (1-q)^2 grid units squared. */
    double q = exp(-mech->lambda_unit);
    double one_minus_q = -expm1(-mech->lambda_unit);
    return 2.0 * q / (one_minus_q * one_minus_q) * mech->grid * mech->grid;
}

double mech_round_up(long double v)
{
    double d = (double)v;
    while ((long double)d < v)
        d = nextafter(d, INFINITY);
    return nextafter(d, INFINITY);
}

/* The names of the local rows of the mechanism table ("raw" is not an ldpb_mech_kind). */
const char *ldpb_mech_kind_name(ldpb_mech_kind kind)
{
    const ldpb_mech_desc *d = local_desc(kind);
    return d ? d->name : "unknown";
}

ldpb_err ldpb_mech_kind_from_name(const char *name, ldpb_mech_kind *kind)
{
    if (!name || !kind)
        return LDPB_EINVAL;
    const ldpb_mech_desc *d = ldpb_mech_desc_by_name(name);
    if (!ldpb_mech_desc_scalar(d))
        return LDPB_EINVAL;
    *kind = (ldpb_mech_kind)d->id;
    return LDPB_OK;
}
