/* The Bernoulli mechanism with the linear, quadratic and exponential probability functions
 * (docs/derivations.md 1-4). Every function is written as p(x) = p0 + s * shape(x) with
 * shape(0) = 0 and shape(1) = 1, so the endpoints alone carry the privacy guarantee.
 *
 * What is implemented is not p(x) but an integer threshold t(x): the report is 1 iff a uniform
 * 64-bit word is below t(x), so P(1 | x) = t(x) / 2^64 exactly. The endpoint thresholds are
 * rounded towards the inside of [p0, p1] and every t(x) is clamped into [t0, t1]; the effective
 * epsilon is computed from t0 and t1 themselves, so it bounds the privacy loss of the code as it
 * runs, whatever floating-point error p(x) carries in between. */
#include <math.h>

#include "mech_internal.h"
#include "rng_internal.h"

#define TWO64 18446744073709551616.0L

/* Most endpoint-nudging rounds needed in practice is a handful; the cap only stops a loop. */
#define NUDGE_ROUNDS_MAX 80

static double shape_linear(const struct ldpb_mech *m, double x)
{
    (void)m;
    return x;
}

static double shape_quadratic(const struct ldpb_mech *m, double x)
{
    return x * ((1.0 - m->opts.kappa) + m->opts.kappa * x);
}

static double shape_exponential(const struct ldpb_mech *m, double x)
{
    /* exp(lx) - 1 costs half of expm1; its cancellation near x = 0 is ~1e-16 absolute, which
     * is negligible against the curve's height expm1(l) unless l itself is tiny. */
    if (m->exp_use_expm1)
        return expm1(m->lambda * x) / m->expm1_lambda;
    return (exp(m->lambda * x) - 1.0) / m->expm1_lambda;
}

double mech_bernoulli_nominal(const struct ldpb_mech *m, double x01)
{
    return m->p0 + m->s * m->desc->shape(m, x01);
}

static uint64_t prob_to_threshold(double p)
{
    double scaled = ldexp(p, 64);
    if (!(scaled > 0.0))
        return 0;
    if (scaled >= 18446744073709551616.0)
        return UINT64_MAX;
    return (uint64_t)scaled;
}

uint64_t mech_bernoulli_threshold(const struct ldpb_mech *m, double x01)
{
    uint64_t t = prob_to_threshold(mech_bernoulli_nominal(m, x01));
    t = t < m->t0 ? m->t0 : t;
    return t > m->t1 ? m->t1 : t;
}

void mech_bernoulli_sample(const struct ldpb_mech *m, ldpb_rng *rng, double x01, double *out)
{
    uint64_t t = mech_bernoulli_threshold(m, x01);
    *out = (double)ct_lt_u64(rng_next_u64(rng), t);
}

/* max(ln(t1/t0), ln((2^64-t0)/(2^64-t1))): the worst ratio over both outputs (JZL23 Thm 1).
 * Written as log1p of the exact integer gap so that tiny epsilons keep full relative precision;
 * a plain log of the ratio loses ~2^-64 absolute, more than the ulp added on rounding up. */
static double threshold_epsilon(uint64_t t0, uint64_t t1)
{
    long double gap = (long double)(t1 - t0);
    long double up = log1pl(gap / (long double)t0);
    long double down = log1pl(gap / (TWO64 - (long double)t1));
    return mech_round_up(up > down ? up : down);
}

static double nominal_epsilon(double p0, double p1)
{
    double gap = p1 - p0;
    double up = log1p(gap / p0);
    double down = log1p(gap / (1.0 - p1));
    return up > down ? up : down;
}

ldpb_err mech_bernoulli_init(struct ldpb_mech *m)
{
    const ldpb_mech_opts *o = &m->opts;
    double eps = o->epsilon;

    if (!isfinite(o->kappa) || !isfinite(o->lambda) || !isfinite(o->p0) || !isfinite(o->p1))
        return LDPB_EINVAL;
    if ((m->desc->params & LDPB_MECH_PARAM_KAPPA) && !(o->kappa >= -1.0 && o->kappa <= 1.0))
        return LDPB_ERANGE;

    double p0, p1;
    if (o->p0 == 0.0 && o->p1 == 0.0) {
        /* Max-span endpoints (docs/derivations.md 2), both computed without cancellation. */
        p0 = 1.0 / (1.0 + exp(eps));
        p1 = 1.0 / (1.0 + exp(-eps));
    } else {
        p0 = o->p0;
        p1 = o->p1;
        if (!(p0 > 0.0 && p0 <= p1 && p1 < 1.0))
            return LDPB_ERANGE;
        /* The relative guard of docs/derivations.md 3 plus the absolute error of writing the
         * endpoints as doubles (~2^-53 each): at tiny eps that error dominates, and the
         * thresholds below are nudged inside the request anyway. */
        if (nominal_epsilon(p0, p1) > eps * (1.0 + 1e-12) + 0x1p-50)
            return LDPB_ERANGE;
    }
    m->p0 = p0;
    m->s = p1 - p0;

    if (m->desc->params & LDPB_MECH_PARAM_LAMBDA) {
        m->lambda = o->lambda == 0.0 ? eps : o->lambda;
        /* Beyond |lambda| = 700 expm1 overflows; such a curve is a step function anyway. */
        if (!(fabs(m->lambda) <= 700.0))
            return LDPB_ERANGE;
        m->expm1_lambda = expm1(m->lambda);
        m->exp_use_expm1 = fabs(m->lambda) < 0x1p-10;
    }

    /* Round inwards, then keep nudging inwards (doubling steps) until the bound computed from the
     * integers is within the request. The nudge moves a threshold by at most ~2^12 units of
     * 2^-64: far below any statistical effect. */
    long double t0l = ceill(ldexpl((long double)p0, 64));
    long double t1l = floorl(ldexpl((long double)p1, 64));
    if (!(t0l >= 1.0L && t1l < TWO64 && t0l <= t1l))
        return LDPB_ERANGE;
    uint64_t t0 = (uint64_t)t0l, t1 = (uint64_t)t1l;
    double eps_eff = threshold_epsilon(t0, t1);
    uint64_t step = 1;
    for (int round = 0; eps_eff > eps; round++) {
        if (round >= NUDGE_ROUNDS_MAX || t1 - t0 < 2 * step)
            return LDPB_ERANGE;
        t0 += step;
        t1 -= step;
        step *= 2;
        eps_eff = threshold_epsilon(t0, t1);
    }
    m->t0 = t0;
    m->t1 = t1;
    m->eps_eff = eps_eff;
    return LDPB_OK;
}

/* ---- de-biasing (docs/derivations.md 5): the inverses of what the sampler implements -----------
 */

/* The implemented endpoints: the de-biasing inverts what the sampler does, not the formula. */
static void endpoints(const struct ldpb_mech *m, double *p0, double *s)
{
    *p0 = ldexp((double)m->t0, -64);
    *s = ldexp((double)m->t1, -64) - *p0;
}

/* The privatized mean on the shape's scale, held inside [0, 1] for the plug-in inverses. */
static double unit_of_mean(const struct ldpb_mech *m, double mean)
{
    double p0, s;
    endpoints(m, &p0, &s);
    double u = s > 0.0 ? (mean - p0) / s : 0.0;
    return u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
}

static double debias_linear(const struct ldpb_mech *m, double mean)
{
    double p0, s;
    endpoints(m, &p0, &s);
    return s > 0.0 ? (mean - p0) / s : NAN;
}

static double debias_quadratic(const struct ldpb_mech *m, double mean)
{
    /* Plug-in inverse of p on [0,1]; the privatized mean is first held inside [p0, p1]. */
    double u = unit_of_mean(m, mean);
    double a = m->opts.kappa, b = 1.0 - m->opts.kappa;
    if (fabs(a) < 1e-12)
        return u / b;
    /* a x^2 + b x - u = 0, the root in [0,1], written to avoid cancellation. */
    double disc = b * b + 4.0 * a * u;
    double denom = b + sqrt(disc > 0.0 ? disc : 0.0);
    return denom > 0.0 ? 2.0 * u / denom : 0.0; /* kappa = 1 and u = 0: the root is 0 */
}

static double debias_exponential(const struct ldpb_mech *m, double mean)
{
    return log1p(unit_of_mean(m, mean) * m->expm1_lambda) / m->lambda;
}

/* Hoeffding on the report scale, scaled by 1/s: infinite when the endpoints coincide. */
static double radius_bernoulli(const struct ldpb_mech *m, double n, double delta)
{
    double p0, s;
    endpoints(m, &p0, &s);
    return sqrt(log(2.0 / delta) / (2.0 * n)) / s;
}

/* ---- the rows of the mechanism table (mech_table.c lists them) ----------------------------- */

const ldpb_mech_desc mech_row_linear = {
    .id = LDPB_MECH_LINEAR,
    .name = "linear",
    .local = 1,
    .output = LDPB_MECH_OUTPUT_BIT,
    .params = LDPB_MECH_PARAM_ENDPOINTS,
    .exact_debias = 1,
    .init = mech_bernoulli_init,
    .sample = mech_bernoulli_sample,
    .debias = debias_linear,
    .radius = radius_bernoulli,
    .shape = shape_linear,
};

const ldpb_mech_desc mech_row_quadratic = {
    .id = LDPB_MECH_QUADRATIC,
    .name = "quadratic",
    .local = 1,
    .output = LDPB_MECH_OUTPUT_BIT,
    .params = LDPB_MECH_PARAM_KAPPA | LDPB_MECH_PARAM_ENDPOINTS,
    .exact_debias = 0,
    .init = mech_bernoulli_init,
    .sample = mech_bernoulli_sample,
    .debias = debias_quadratic,
    .radius = radius_bernoulli,
    .shape = shape_quadratic,
};

const ldpb_mech_desc mech_row_exponential = {
    .id = LDPB_MECH_EXPONENTIAL,
    .name = "exponential",
    .local = 1,
    .output = LDPB_MECH_OUTPUT_BIT,
    .params = LDPB_MECH_PARAM_LAMBDA | LDPB_MECH_PARAM_ENDPOINTS,
    .exact_debias = 0,
    .init = mech_bernoulli_init,
    .sample = mech_bernoulli_sample,
    .debias = debias_exponential,
    .radius = radius_bernoulli,
    .shape = shape_exponential,
};
