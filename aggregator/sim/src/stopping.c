/* DP-NAS and DP exponential NAS (SS19, Algs. 1 and 2): the sparse vector test on the running
 * sum with a threshold noise drawn once, and one Laplace on the released mean. */
#include "stopping.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void agg_nas_opts_init(agg_nas_opts *o, agg_nas_kind kind, double epsilon)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->epsilon = epsilon;
    o->alpha = 0.5;
    o->beta = 0.05;
    o->range = 1;
    o->budget = UINT64_MAX;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static ldpb_err
refuse(ldpb_err err, char *msg, size_t len, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return err;
}

static int in_open_unit(double x)
{
    return x > 0 && x < 1;
}

ldpb_err agg_nas_init(agg_nas *s, const agg_nas_opts *o, agg_noise *noise, char *errmsg,
                      size_t errmsg_len)
{
    if (errmsg && errmsg_len)
        errmsg[0] = '\0';
    if (!s || !o || !noise)
        return refuse(LDPB_EINVAL, errmsg, errmsg_len, "dp-nas: NULL argument");
    if (o->kind != AGG_NAS_EVERY_STEP && o->kind != AGG_NAS_EXPONENTIAL)
        return refuse(LDPB_EINVAL, errmsg, errmsg_len, "dp-nas: unknown kind %d", (int)o->kind);
    if (!isfinite(o->epsilon) || !(o->epsilon > 0))
        return refuse(isnan(o->epsilon) ? LDPB_EINVAL : LDPB_ERANGE, errmsg, errmsg_len,
                      "dp-nas: epsilon %g must be > 0 and finite", o->epsilon);
    if (!in_open_unit(o->alpha))
        return refuse(isnan(o->alpha) ? LDPB_EINVAL : LDPB_ERANGE, errmsg, errmsg_len,
                      "dp-nas: alpha %g outside (0, 1)", o->alpha);
    if (!in_open_unit(o->beta))
        return refuse(isnan(o->beta) ? LDPB_EINVAL : LDPB_ERANGE, errmsg, errmsg_len,
                      "dp-nas: beta %g outside (0, 1)", o->beta);
    if (!isfinite(o->range) || !(o->range > 0))
        return refuse(isnan(o->range) ? LDPB_EINVAL : LDPB_ERANGE, errmsg, errmsg_len,
                      "dp-nas: range R %g must be > 0 and finite", o->range);
    if (o->budget == 0)
        return refuse(LDPB_ERANGE, errmsg, errmsg_len, "dp-nas: budget 0 must be >= 1");
    memset(s, 0, sizeof *s);
    s->opts = *o;
    s->sigma1 = 12 * o->range / o->epsilon;
    s->sigma2 = 12 * o->range / o->epsilon;
    s->sigma3 = 4 * o->range / o->epsilon;
    /* B is drawn once for the whole run (a redraw per query breaks the SVT's privacy). */
    s->threshold_noise = agg_noise_laplace(noise, s->sigma1);
    s->state = AGG_NAS_RUNNING;
    return LDPB_OK;
}

static int is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

/* Whether the rule tests at sample count t. */
static int is_check(const agg_nas *s, uint64_t t)
{
    if (s->opts.kind == AGG_NAS_EVERY_STEP)
        return 1;
    return t >= 2 && is_pow2(t);
}

/* The halting test at the current t (a check point): |Xbar| >= h (1 + 1/alpha) + (c + B + A)/t. */
static void test_and_settle(agg_nas *s, agg_noise *noise)
{
    const agg_nas_opts *o = &s->opts;
    double t = (double)s->t;
    /* DP-NAS's logs use t; the exponential rule's use the doubling index k = log2 t. */
    double u = o->kind == AGG_NAS_EVERY_STEP ? t : log2(t);
    double a = agg_noise_laplace(noise, s->sigma2);
    double xbar = s->sum / t;
    double h = o->range * sqrt(2 / t * log(16 * u * u / o->beta));
    double c = s->sigma1 * log(4 / o->beta) + s->sigma2 * log(8 * u * u / o->beta) +
               s->sigma3 / o->alpha * log(4 / o->beta);
    if (fabs(xbar) >= h * (1 + 1 / o->alpha) + (c + s->threshold_noise + a) / t) {
        s->estimate = xbar + agg_noise_laplace(noise, s->sigma3) / t;
        s->state = AGG_NAS_HALTED;
    }
}

static void after_samples(agg_nas *s, agg_noise *noise)
{
    if (is_check(s, s->t))
        test_and_settle(s, noise);
    if (s->state == AGG_NAS_RUNNING && s->t >= s->opts.budget)
        s->state = AGG_NAS_EXHAUSTED;
}

ldpb_err agg_nas_push(agg_nas *s, agg_noise *noise, double x, agg_nas_state *state)
{
    if (!s || !noise || isnan(x))
        return LDPB_EINVAL;
    if (s->state != AGG_NAS_RUNNING)
        return LDPB_ESTATE;
    if (!(fabs(x) <= s->opts.range))
        return LDPB_ERANGE;
    s->t++;
    s->sum += x;
    after_samples(s, noise);
    if (state)
        *state = s->state;
    return LDPB_OK;
}

uint64_t agg_nas_next_check(const agg_nas *s)
{
    uint64_t next;
    if (s->opts.kind == AGG_NAS_EVERY_STEP || s->t < 2) {
        next = s->opts.kind == AGG_NAS_EVERY_STEP ? s->t + 1 : 2;
    } else {
        /* The smallest power of two above t; saturates at the top of the range. */
        uint64_t p = 2;
        while (p <= s->t && p <= UINT64_MAX / 2)
            p <<= 1;
        next = p > s->t ? p : UINT64_MAX;
    }
    return next < s->opts.budget ? next : s->opts.budget;
}

ldpb_err agg_nas_push_block(agg_nas *s, agg_noise *noise, uint64_t count, double sum,
                            agg_nas_state *state)
{
    if (!s || !noise || isnan(sum))
        return LDPB_EINVAL;
    if (s->state != AGG_NAS_RUNNING || s->opts.kind != AGG_NAS_EXPONENTIAL)
        return LDPB_ESTATE;
    if (count == 0 || count > agg_nas_next_check(s) - s->t)
        return LDPB_ERANGE;
    if (!(fabs(sum) <= s->opts.range * (double)count))
        return LDPB_ERANGE;
    s->t += count;
    s->sum += sum;
    after_samples(s, noise);
    if (state)
        *state = s->state;
    return LDPB_OK;
}

ldpb_err agg_nas_estimate(const agg_nas *s, double *estimate)
{
    if (!s || !estimate)
        return LDPB_EINVAL;
    if (s->state != AGG_NAS_HALTED)
        return LDPB_ESTATE;
    *estimate = s->estimate;
    return LDPB_OK;
}
