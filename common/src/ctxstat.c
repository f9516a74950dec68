/* The local contextual mode's on-device mechanism (ldpb/ctxstat.h; docs/privacy.md, "Local
 * contextual mode"; the calibration is derived in docs/derivations.md).
 *
 * Everything random happens on the integer grid of step g = 2^-k, as in mech_laplace.c, so the
 * output's floating-point representation carries nothing about the input (Mironov, CCS 2012):
 *   1. each packed entry v_i v_j, in grid units, is randomly rounded (unbiased) to an integer R;
 *   2. an integer Z with P(Z = z) proportional to exp(-z^2 / (2 N)) is added, N = (sigma/g)^2 an
 *      integer (the discrete Gaussian of Canonne, Kamath & Steinke 2020), drawn with integer
 *      arithmetic only: Bernoulli(exp(-gamma)) for rational gamma (CKS20, Alg. 1), the discrete
 *      Laplace (Alg. 2) and the rejection step that turns it into the discrete Gaussian (Alg. 3);
 *   3. the output is (R + Z) g, exact in a double (|R + Z| < 2^53).
 *
 * The rationals of Alg. 3 are (|Y| t - N)^2 / (2 N t^2) with N <= 2^56 and t <= 2^28 + 1:
 * numerators and denominators need up to 124 bits, so they are held in a 128-bit integer of two
 * 64-bit words (u128 below: 32-bit targets such as armhf have no unsigned __int128; the results,
 * and so the seeded draws, are the same on every target). The one departure from the exact
 * law: the discrete Laplace proposal is conditioned on |Y| < 2^62 / t, at least 64 standard
 * deviations (2^41 at the usual N near 2^41), which keeps every product inside 128 bits and
 * |R + Z| below 2^53. The Gaussian step accepts a proposal that far out with probability below
 * exp(-63^2 / 2), so the output law loses less than exp(-1900) of its mass: no experiment can
 * see it. */
#include "ctxstat_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/detail.h"
#include "ldpb/detail_bytes.h"
#include "ldpb/mech.h"
#include "mech_internal.h"
#include "rng_internal.h"

/* Unsigned 128-bit arithmetic, only what the samplers need. */
typedef struct u128 {
    uint64_t hi, lo;
} u128;

static u128 u128_of(uint64_t v)
{
    return (u128){0, v};
}

static int u128_lt(u128 a, u128 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

static int u128_is_zero(u128 a)
{
    return (a.hi | a.lo) == 0;
}

static u128 u128_sub(u128 a, u128 b)
{
    return (u128){a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};
}

/* The full product of two 64-bit words. */
static u128 u128_mul64(uint64_t a, uint64_t b)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    return (u128){p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32), (mid << 32) | (p00 & 0xffffffffu)};
}

/* a * b modulo 2^128 (the callers stay below 2^128: see the top of the file). */
static u128 u128_mul(u128 a, uint64_t b)
{
    u128 r = u128_mul64(a.lo, b);
    r.hi += a.hi * b;
    return r;
}

/* Bits needed to write a (0 for 0). */
static int u128_bits(u128 a)
{
    int bits = 0;
    uint64_t w = a.hi ? a.hi : a.lo;
    while (w) {
        bits++;
        w >>= 1;
    }
    return a.hi ? bits + 64 : bits;
}

/* n / d and n % d, d >= 1: schoolbook, one bit at a time (64-bit division when both fit). */
static u128 u128_divmod(u128 n, u128 d, u128 *rem)
{
    if (n.hi == 0 && d.hi == 0) {
        *rem = u128_of(n.lo % d.lo);
        return u128_of(n.lo / d.lo);
    }
    u128 q = {0, 0}, r = {0, 0};
    for (int i = u128_bits(n) - 1; i >= 0; i--) {
        uint64_t bit = i >= 64 ? (n.hi >> (i - 64)) & 1 : (n.lo >> i) & 1;
        r = (u128){(r.hi << 1) | (r.lo >> 63), (r.lo << 1) | bit};
        if (!u128_lt(r, d)) {
            r = u128_sub(r, d);
            if (i >= 64)
                q.hi |= (uint64_t)1 << (i - 64);
            else
                q.lo |= (uint64_t)1 << i;
        }
    }
    *rem = r;
    return q;
}

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

/* The grid step is the largest power of two at most min(sigma, Delta) 2^-GRID_BITS: rounding to
 * it moves a value by far less than anything the noise lets an observer resolve, and it adds
 * 2 g sqrt(n) to the sensitivity Delta, a relative 2^-19 sqrt(n) at most. At tiny epsilon sigma
 * is many times Delta, and the step is kept at least sigma 2^-GRID_BITS_MAX so that N = (sigma /
 * g)^2 stays within the sampler's 2^56 (the rounding then costs more, up to 5% of Delta at
 * LDPB_CTXSTAT_EPSILON_MIN, d = 32, delta = 1e-12; nothing at the usual epsilon). */
#define GRID_BITS     20
#define GRID_BITS_MAX 26
/* Accepted ||x|| beyond L, relative: a context normalised to norm L in floating point may come
 * out an ulp longer. The sensitivity is computed for L (1 + NORM_TOL). */
#define NORM_TOL 1e-9
/* Covers the rounding of the products v_i v_j and of ||x||^2 in double (each relative error is
 * below 2^-50 for d <= 32): the sensitivity is computed for values this much larger. */
#define FP_SLACK 0x1p-40
/* Variance parameters the sampler accepts: 2 N t^2 < 2^114 and (|Y| t)^2 < 2^124 fit 128 bits. */
#define SIGMA2_MAX ((uint64_t)1 << 56)
/* Alg. 1's loop continues past step K with probability gamma^K / K!; past 2^13 steps that is
 * below 1 / 8192! (about 10^-28000), and den * K stays within 128 bits. */
#define BERN_K_MAX ((uint64_t)1 << 13)

struct ldpb_ctxstat {
    ldpb_ctxstat_opts opts;
    size_t n;        /* packed values */
    int k;           /* grid step 2^-k */
    double grid;     /* 2^-k */
    uint64_t sigma2; /* N = (sigma / g)^2, an integer */
    double sigma, rho, eps_eff;
    double limit; /* check(): |z| <= limit (admission_limit) */
};

/* ---- exact samplers (integer arithmetic only) ----------------------------------------------- */

/* Uniform in [0, bound), bound >= 1, exactly (rejection). */
static u128 uniform128(ldpb_rng *rng, u128 bound)
{
    if (bound.hi == 0)
        return u128_of(ldpb_rng_uniform(rng, bound.lo));
    if (bound.hi == 1 && bound.lo == 0) /* 2^64 */
        return u128_of(ldpb_rng_u64(rng));
    int bits = u128_bits(u128_sub(bound, u128_of(1)));
    uint64_t mask = bits >= 128 ? UINT64_MAX : (((uint64_t)1 << (bits - 64)) - 1);
    for (;;) {
        u128 x;
        x.hi = rng_next_u64(rng) & mask; /* the high word is drawn first */
        x.lo = rng_next_u64(rng);
        if (u128_lt(x, bound))
            return x;
    }
}

/* 1 with probability num / den, 0 <= num <= den, den >= 1. */
static int bern_ratio(ldpb_rng *rng, u128 num, u128 den)
{
    return u128_lt(uniform128(rng, den), num);
}

/* exp(-gamma) for gamma = num / den in [0, 1] (CKS20, Alg. 1): draw A_K ~ Bernoulli(gamma / K)
 * for K = 1, 2, ... until one is 0; the answer is whether that K is odd. */
static int bern_exp_unit(ldpb_rng *rng, u128 num, u128 den)
{
    uint64_t k = 1;
    while (k < BERN_K_MAX && bern_ratio(rng, num, u128_mul(den, k)))
        k++;
    return (int)(k & 1);
}

/* exp(-gamma) for any rational gamma = num / den >= 0: exp(-1) floor(gamma) times, then the
 * fractional part (CKS20, Alg. 1, second half); stops at the first 0. */
static int bern_exp128(ldpb_rng *rng, u128 num, u128 den)
{
    if (!u128_lt(den, num))
        return bern_exp_unit(rng, num, den);
    u128 frac;
    u128 whole = u128_divmod(num, den, &frac);
    for (; !u128_is_zero(whole); whole = u128_sub(whole, u128_of(1)))
        if (!bern_exp_unit(rng, u128_of(1), u128_of(1)))
            return 0;
    return bern_exp_unit(rng, frac, den);
}

int ctxstat_bern_exp(ldpb_rng *rng, uint64_t num, uint64_t den)
{
    return bern_exp128(rng, u128_of(num), u128_of(den));
}

int64_t ctxstat_dlaplace(ldpb_rng *rng, uint64_t t)
{
    const uint64_t x_cap = ((uint64_t)1 << 62) / t;
    for (;;) {
        uint64_t u = ldpb_rng_uniform(rng, t);
        if (!bern_exp_unit(rng, u128_of(u), u128_of(t)))
            continue;
        uint64_t v = 0;
        while (v <= x_cap / t && bern_exp_unit(rng, u128_of(1), u128_of(1)))
            v++;
        uint64_t x = u + t * v; /* <= t - 1 + x_cap + t: no overflow */
        if (x >= x_cap)
            continue; /* |Y| >= 2^62 / t: outside the support kept (see the top of the file) */
        int negative = (int)(rng_next_u32(rng) & 1);
        if (negative && x == 0)
            continue; /* otherwise 0 would come twice as often as it should */
        return negative ? -(int64_t)x : (int64_t)x;
    }
}

static uint64_t isqrt64(uint64_t n)
{
    uint64_t r = (uint64_t)sqrt((double)n);
    while (r * r > n)
        r--;
    while ((r + 1) * (r + 1) <= n)
        r++;
    return r;
}

int64_t ctxstat_dgauss(ldpb_rng *rng, uint64_t sigma2)
{
    /* t = floor(sigma) + 1 and the acceptance exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) =
     * exp(-(|Y| t - N)^2 / (2 N t^2)) of CKS20, Alg. 3, with N = sigma2. */
    const uint64_t t = isqrt64(sigma2) + 1;
    const u128 den = u128_mul(u128_mul64(2 * sigma2, t), t);
    for (;;) {
        int64_t y = ctxstat_dlaplace(rng, t);
        uint64_t a = (uint64_t)(y < 0 ? -y : y) * t; /* < 2^62 */
        uint64_t diff = a >= sigma2 ? a - sigma2 : sigma2 - a;
        if (bern_exp128(rng, u128_mul64(diff, diff), den))
            return y;
    }
}

/* ---- calibration ----------------------------------------------------------------------------- */

void ldpb_ctxstat_opts_init(ldpb_ctxstat_opts *opts, uint32_t d, double epsilon, double delta)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->kind = LDPB_CTXSTAT_GAUSSIAN;
    opts->d = d;
    opts->epsilon = epsilon;
    opts->delta = delta;
    opts->feature_norm = 1.0;
    opts->reward_bound = 1.0;
}

static ldpb_err check_opts(const ldpb_ctxstat_opts *o)
{
    if (o->kind != LDPB_CTXSTAT_GAUSSIAN)
        return LDPB_EINVAL;
    if (!isfinite(o->epsilon) || !isfinite(o->delta) || !isfinite(o->feature_norm) ||
        !isfinite(o->reward_bound))
        return LDPB_EINVAL;
    if (o->d < 1 || o->d > LDPB_CTXSTAT_D_MAX)
        return LDPB_ERANGE;
    if (!(o->epsilon >= LDPB_CTXSTAT_EPSILON_MIN && o->epsilon <= LDPB_EPSILON_MAX))
        return LDPB_ERANGE;
    if (!(o->delta > 0.0 && o->delta <= LDPB_CTXSTAT_DELTA_MAX))
        return LDPB_ERANGE;
    if (!(o->feature_norm >= LDPB_CTXSTAT_BOUND_MIN && o->feature_norm <= LDPB_CTXSTAT_BOUND_MAX))
        return LDPB_ERANGE;
    if (!(o->reward_bound >= LDPB_CTXSTAT_BOUND_MIN && o->reward_bound <= LDPB_CTXSTAT_BOUND_MAX))
        return LDPB_ERANGE;
    return LDPB_OK;
}

/* epsilon of rho-zCDP at delta (Bun & Steinke 2016, Prop. 1.3). */
static long double zcdp_epsilon(long double rho, long double log_inv_delta)
{
    return rho + 2.0L * sqrtl(rho * log_inv_delta);
}

/* The admission bound (docs/derivations.md sec. 16). An honest entry is (R + Z) g with R the
 * unbiased rounding of v_i v_j / g and Z ~ N_Z(0, N):
 *   - |v_i v_j| <= M = max(Lt, B)^2, Lt = L (1 + NORM_TOL) (1 + FP_SLACK) the longest row
 *     privatize() accepts with the rounding of the products (|x_i x_j| <= ||x||^2 / 2 <= Lt^2,
 *     |x_i y| <= Lt B, y^2 <= B^2), so |R g| <= M + g;
 *   - the discrete Gaussian is sigma-sub-Gaussian (CKS20, sec. 2; sigma = g sqrt(N)), so
 *     P(|Z g| > c sigma) <= 2 exp(-c^2 / 2), and over the n independent entries of a report
 *     P(any) <= 2 n exp(-c^2 / 2) = LDPB_CTXSTAT_FALSE_REFUSAL at c = sqrt(2 ln(2 n / p)). The
 *     sampler's cut at 64 standard deviations only removes tail mass (< exp(-1900)).
 * The bound used to be L^2 + B^2 + 40 sigma: five times as much room for a crafted report, none
 * of it reached by honest ones. A relative 2^-40 absorbs the rounding of this double arithmetic
 * (every term is positive, a handful of operations). */
static double admission_limit(const ldpb_ctxstat_opts *o, size_t n, double g, double sigma)
{
    const double lt = o->feature_norm * (1.0 + NORM_TOL) * (1.0 + FP_SLACK);
    const double r = lt > o->reward_bound ? lt : o->reward_bound;
    const double c = sqrt(2.0 * log(2.0 * (double)n / LDPB_CTXSTAT_FALSE_REFUSAL));
    return (r * r + g + c * sigma) * (1.0 + FP_SLACK);
}

static ldpb_err build(ldpb_ctxstat **out, const ldpb_ctxstat_opts *opts, uint32_t divisor)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!opts || divisor < 1)
        return LDPB_EINVAL;
    ldpb_err err = check_opts(opts);
    if (err)
        return err;
    const long double L = (long double)opts->feature_norm * (1.0L + NORM_TOL);
    const long double B = opts->reward_bound;
    const long double ell = logl(1.0L / (long double)opts->delta);
    const long double eps = opts->epsilon;
    /* sqrt(rho) = sqrt(ell + eps) - sqrt(ell), written without the cancellation */
    const long double sqrt_rho = eps / (sqrtl(ell + eps) + sqrtl(ell));
    const long double rho = sqrt_rho * sqrt_rho;
    const long double delta0 = sqrtl(2.0L) * (L * L + B * B) * (1.0L + FP_SLACK);
    const long double sigma0 = delta0 / sqrtl(2.0L * rho);

    const long double fine = fminl(sigma0, delta0) * ldexpl(1.0L, -GRID_BITS);
    int k = -(int)floorl(log2l(fine));
    while (ldexpl(1.0L, -k) > fine)
        k++;
    while (ldexpl(1.0L, -k) < sigma0 * ldexpl(1.0L, -GRID_BITS_MAX))
        k--;
    const size_t n = LDPB_CTXSTAT_VALUES(opts->d);
    const long double g = ldexpl(1.0L, -k);
    /* the randomized rounding moves each of the n values by less than g, each report's */
    const long double delta_eff_units = (delta0 + 2.0L * g * sqrtl((long double)n)) / g;
    long double n_real = delta_eff_units * delta_eff_units / (2.0L * rho);
    if (!(n_real < (long double)SIGMA2_MAX / 2.0L))
        return LDPB_ERANGE; /* not below LDPB_CTXSTAT_EPSILON_MIN */
    uint64_t sigma2 = (uint64_t)ceill(n_real * (1.0L + 1e-12L));
    long double rho_impl = 0.0L, eps_impl = 0.0L;
    for (;;) {
        uint64_t s2 = sigma2 / ((uint64_t)divisor * divisor);
        s2 = s2 < 1 ? 1 : s2;
        rho_impl = delta_eff_units * delta_eff_units / (2.0L * (long double)s2);
        eps_impl = zcdp_epsilon(rho_impl, ell);
        if (divisor > 1 || mech_round_up(eps_impl) <= opts->epsilon) {
            sigma2 = s2;
            break;
        }
        sigma2 += 1 + sigma2 / 1000000000u; /* never taken in practice: the 1e-12 covers it */
    }
    if (sigma2 > SIGMA2_MAX)
        return LDPB_ERANGE;

    ldpb_ctxstat *m = calloc(1, sizeof *m);
    if (!m)
        return LDPB_ENOMEM;
    m->opts = *opts;
    m->n = n;
    m->k = k;
    m->grid = ldexp(1.0, -k);
    m->sigma2 = sigma2;
    m->sigma = (double)(sqrtl((long double)sigma2) * g);
    m->rho = mech_round_up(rho_impl);
    m->eps_eff = mech_round_up(eps_impl);
    m->limit = admission_limit(opts, n, m->grid, m->sigma);
    *out = m;
    return LDPB_OK;
}

ldpb_err ldpb_ctxstat_new(ldpb_ctxstat **out, const ldpb_ctxstat_opts *opts)
{
    return build(out, opts, 1);
}

ldpb_err ctxstat_new_underscaled(ldpb_ctxstat **out, const ldpb_ctxstat_opts *opts,
                                 uint32_t divisor)
{
    return build(out, opts, divisor);
}

void ldpb_ctxstat_free(ldpb_ctxstat *m)
{
    free(m);
}

const ldpb_ctxstat_opts *ldpb_ctxstat_get_opts(const ldpb_ctxstat *m)
{
    return m ? &m->opts : NULL;
}

size_t ldpb_ctxstat_values(const ldpb_ctxstat *m)
{
    return m ? m->n : 0;
}

size_t ldpb_ctxstat_index(uint32_t d, uint32_t i, uint32_t j)
{
    if (i > j) {
        uint32_t s = i;
        i = j;
        j = s;
    }
    if (j > d)
        return SIZE_MAX;
    /* row i starts after rows 0..i-1, of lengths d + 1, d, ..., d + 2 - i */
    size_t p = (size_t)d + 1;
    return (size_t)i * p - (size_t)i * (i ? i - 1 : 0) / 2 + (j - i);
}

double ldpb_ctxstat_grid(const ldpb_ctxstat *m)
{
    return m ? m->grid : NAN;
}

double ldpb_ctxstat_sigma(const ldpb_ctxstat *m)
{
    return m ? m->sigma : NAN;
}

double ldpb_ctxstat_rho(const ldpb_ctxstat *m)
{
    return m ? m->rho : NAN;
}

double ldpb_ctxstat_epsilon_effective(const ldpb_ctxstat *m)
{
    return m ? m->eps_eff : NAN;
}

double ldpb_ctxstat_limit(const ldpb_ctxstat *m)
{
    return m ? m->limit : NAN;
}

uint64_t ctxstat_sigma2_units(const ldpb_ctxstat *m)
{
    return m->sigma2;
}

/* ---- privatize and check --------------------------------------------------------------------- */

ldpb_err ldpb_ctxstat_privatize(const ldpb_ctxstat *m, ldpb_rng *rng, const double *x, double y,
                                double *out)
{
    if (!m || !rng || !x || !out || !isfinite(y))
        return LDPB_EINVAL;
    const uint32_t d = m->opts.d;
    double v[LDPB_CTXSTAT_D_MAX + 1];
    double n2 = 0.0;
    for (uint32_t i = 0; i < d; i++) {
        if (!isfinite(x[i]))
            return LDPB_EINVAL;
        v[i] = x[i];
        n2 += x[i] * x[i];
    }
    const double lim = m->opts.feature_norm * (1.0 + NORM_TOL);
    if (!(n2 <= lim * lim))
        return LDPB_ERANGE;
    const double b = m->opts.reward_bound;
    v[d] = y > b ? b : (y < -b ? -b : y);
    size_t idx = 0;
    for (uint32_t i = 0; i <= d; i++)
        for (uint32_t j = i; j <= d; j++, idx++) {
            int64_t r = rng_round_grid(rng, ldexp(v[i] * v[j], m->k)); /* |r| < 2^24 */
            int64_t z = ctxstat_dgauss(rng, m->sigma2);
            out[idx] = ldexp((double)(r + z), -m->k);
        }
    return LDPB_OK;
}

ldpb_err ldpb_ctxstat_check(const ldpb_ctxstat *m, const double *z, size_t n, char *detail)
{
    say(detail, "%s", "");
    if (!m || (!z && n > 0)) {
        say(detail, "no mechanism or no values");
        return LDPB_EPROTO;
    }
    if (n != m->n) {
        say(detail, "%zu values; d = %u needs %zu", n, m->opts.d, m->n);
        return LDPB_EPROTO;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(z[i])) {
            say(detail, "value %zu is not finite", i);
            return LDPB_EPROTO;
        }
        if (!(fabs(z[i]) <= m->limit)) {
            say(detail, "value %zu = %.17g outside [-%.17g, %.17g]", i, z[i], m->limit, m->limit);
            return LDPB_EPROTO;
        }
        double s = ldexp(z[i], m->k);
        if (s != floor(s)) {
            say(detail, "value %zu = %.17g is not a multiple of the grid 2^-%d", i, z[i], m->k);
            return LDPB_EPROTO;
        }
    }
    return LDPB_OK;
}
