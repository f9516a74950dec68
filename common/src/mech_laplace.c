/* The Laplace mechanism (CTL, Ren et al. 2020; docs/privacy.md 5), safe in floating point.
 *
 * Textbook Laplace sampling (x + b * log(uniform)) leaks the input through the irregular
 * spacing of doubles (Mironov, CCS 2012). Here, as in Google's differential-privacy library,
 * everything random happens on the integer grid of step g = 2^-k:
 *   1. the unit input x is randomly rounded to R in {floor(x/g), ceil(x/g)} (unbiased: E[R g] = x),
 *   2. integer noise Z with P(Z = z) proportional to exp(-lambda |z|) (discrete Laplace) is added,
 *   3. the output is (R + Z) * g, exactly representable.
 * Inputs 0 and 1 are grid points and R ranges over [0, S] with S = 2^k, so a shift of the input
 * moves R by at most S units and the loss is at most lambda * S per report.
 *
 * Z is drawn without logarithms: |Z| = G = M*A + B with M = 2^n (n >= k) where A is geometric
 * with ratio e^{-lambda M} (a loop of Bernoulli trials) and the n bits of B are independent
 * Bernoulli variables with P(bit i) = 1 / (1 + e^{lambda 2^i}) (the truncated geometric
 * factorizes over bits); a fair sign
 * bit with rejection of "-0" makes it two-sided. Each Bernoulli compares a uniform word with an
 * integer threshold (64-bit for A, 32-bit for the bits of B, which halves the keystream a report
 * needs), so the implemented law is exactly computable and the effective epsilon below bounds
 * it, threshold rounding included. */
#include <math.h>
#include <string.h>

#include "mech_internal.h"
#include "rng_internal.h"

#define TWO64 18446744073709551616.0L

/* Resolution 2^-16 of the noise scale 1/eps: the grid's effect on the output distribution is
 * far below anything a report's noise lets an observer resolve. */
#define LAPLACE_RESOLUTION_BITS 16

/* Relative slack kept between the requested epsilon and lambda * S, to absorb the rounding of
 * the 32-bit bit thresholds (each perturbs a log-odds by at most ~2^-30). At small eps that is not
 * enough and lambda is lowered further (see mech_laplace_init). */
#define LAPLACE_EPS_SLACK 1e-7L

#define TWO32 4294967296.0L

static uint32_t prob_threshold32(long double p)
{
    long double t = floorl(ldexpl(p, 32) + 0.5L);
    if (t < 1.0L)
        return 1;
    if (t >= TWO32)
        return UINT32_MAX;
    return (uint32_t)t;
}

static uint64_t prob_threshold_l(long double p)
{
    long double t = floorl(ldexpl(p, 64) + 0.5L);
    if (t < 1.0L)
        return 1;
    if (t >= TWO64)
        return UINT64_MAX;
    return (uint64_t)t;
}

/* Builds the thresholds for a per-unit loss `lam` and returns the rigorous bound on the loss of
 * a shift of at most S units: for |u - v| <= S, ln w(u) - ln w(v) <= lam |u - v| + |delta_A| +
 * sum |delta_i|, where the deltas are the implemented log-odds minus the ideal ones (a shift of
 * at most S units changes the block count A by at most one and may flip every bit). */
static long double build_thresholds(struct ldpb_mech *m, long double lam)
{
    long double S = (long double)m->grid_units;
    long double block = (long double)m->block_units;
    m->t_block = prob_threshold_l(expl(-lam * block));
    long double bound = lam * S;
    bound += fabsl(logl((long double)m->t_block / TWO64) + lam * block);
    for (int i = 0; i < m->nbits; i++) {
        long double w = ldexpl(lam, i);
        uint32_t t = prob_threshold32(1.0L / (1.0L + expl(w)));
        m->t_bit[i] = t;
        bound += fabsl(logl((long double)t / (TWO32 - (long double)t)) + w);
    }
    /* Cover the libm error of each logl term generously. */
    return bound + (long double)(m->nbits + 2) * 1e-17L * (1.0L + lam * S);
}

/* Rounds of lowering lambda by the measured rounding error; one is enough in practice. */
#define LAPLACE_FIT_ROUNDS 8

ldpb_err mech_laplace_init(struct ldpb_mech *m)
{
    double eps = m->opts.epsilon;
    int k = LAPLACE_RESOLUTION_BITS + (int)ceil(log2(eps));
    k = k < 0 ? 0 : (k > LAPLACE_K_MAX ? LAPLACE_K_MAX : k);
    /* Below eps = 1 the block ratio e^{-eps} would make the loop long; J more bits of G are
     * drawn as independent bits instead, so the loop continues with probability <= 1/e. */
    int j = eps < 1.0 ? (int)ceil(-log2(eps)) : 0;
    int nbits = k + j > LAPLACE_BITS_MAX ? LAPLACE_BITS_MAX : k + j;
    m->k = k;
    m->nbits = nbits;
    m->grid_units = (uint64_t)1 << k;
    m->block_units = (uint64_t)1 << nbits;
    m->grid = ldexp(1.0, -k);
    long double S = (long double)m->grid_units;

    /* lambda * S is kept a little below eps so the threshold rounding fits under the request.
     * The rounding error is absolute (~2^-31 per 32-bit threshold), so at small eps the first
     * guess may not fit: then lambda is lowered by what the bound overshoots, and again. */
    long double lam = (long double)(double)((long double)eps * (1.0L - LAPLACE_EPS_SLACK) / S);
    for (int round = 0;; round++) {
        long double bound = build_thresholds(m, lam);
        double eps_eff = mech_round_up(bound);
        if (eps_eff <= eps) {
            /* lam is a double value, so the variance formula uses exactly this lambda. */
            m->lambda_unit = (double)lam;
            m->eps_eff = eps_eff;
            return LDPB_OK;
        }
        long double excess = (long double)eps_eff - (long double)eps;
        long double next = lam - 2.0L * excess / S;
        /* Rounding error comparable to eps itself: no useful mechanism at this resolution. */
        if (round + 1 >= LAPLACE_FIT_ROUNDS || next <= lam * 0.5L)
            return LDPB_ERANGE;
        lam = (long double)(double)next;
    }
}

/* |Z| below 2^52 keeps (R + Z) * g exact. Reaching the cap needs 2^(52-nbits) consecutive
 * block successes of probability <= 1/e each: less likely than 2^-4000. Such a draw is rejected
 * and redrawn, which leaves the law unchanged to that precision. */
#define LAPLACE_G_CAP ((uint64_t)1 << 52)

/* The n bits of B. When the buffer holds all 4n bytes, one bounds/fork check and one wipe cover
 * them all; the bytes consumed, and so the stream, are the same as drawing them one by one. */
static uint64_t sample_low_bits(const struct ldpb_mech *m, ldpb_rng *rng)
{
    size_t need = 4 * (size_t)m->nbits;
    uint64_t b = 0;
    if (rng->pos + need <= RNG_BUF_BYTES && !rng_fork_check_needed(rng)) {
        const uint8_t *p = rng->buf + rng->pos;
        for (int i = 0; i < m->nbits; i++, p += 4) {
            uint32_t u =
                (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            b |= ct_lt_u64(u, m->t_bit[i]) << i;
        }
        memset(rng->buf + rng->pos, 0, need);
        rng->pos += need;
        return b;
    }
    for (int i = 0; i < m->nbits; i++)
        b |= ct_lt_u64(rng_next_u32(rng), m->t_bit[i]) << i;
    return b;
}

static uint64_t sample_magnitude(const struct ldpb_mech *m, ldpb_rng *rng)
{
    uint64_t a_cap = LAPLACE_G_CAP / m->block_units;
    for (;;) {
        uint64_t a = 0;
        while (ct_lt_u64(rng_next_u64(rng), m->t_block) && a < a_cap)
            a++;
        if (a >= a_cap)
            continue;
        return a * m->block_units + sample_low_bits(m, rng);
    }
}

void mech_laplace_sample(const struct ldpb_mech *m, ldpb_rng *rng, double x01, double *out)
{
    double scaled = x01 * (double)m->grid_units; /* exact: a power-of-two scaling */
    int64_t r = rng_round_grid(rng, scaled);

    int64_t z;
    for (;;) {
        uint64_t negative = rng_next_u32(rng) & 1;
        uint64_t g = sample_magnitude(m, rng);
        if (negative && g == 0)
            continue; /* otherwise zero would be drawn twice as often as it should */
        z = negative ? -(int64_t)g : (int64_t)g;
        break;
    }
    *out = (double)(r + z) * m->grid;
}

/* ---- de-biasing and the row of the mechanism table (mech_table.c lists it) ------------------ */

/* The noise has mean 0 and the rounding is unbiased: the report mean is the reward mean. */
static double debias_laplace(const struct ldpb_mech *m, double mean)
{
    (void)m;
    return mean;
}

static double radius_laplace(const struct ldpb_mech *m, double n, double delta)
{
    /* Split delta between the reward (Hoeffding) and the noise (Bernstein for a
     * sub-exponential variable with nu = 2b, alpha = sqrt(2) b, b = 1/eps). */
    double l = log(4.0 / delta);
    double eps = m->opts.epsilon;
    double gauss = sqrt(8.0 * l / (eps * eps * n));
    double tail = 2.0 * sqrt(2.0) * l / (eps * n);
    return sqrt(l / (2.0 * n)) + (gauss > tail ? gauss : tail);
}

const ldpb_mech_desc mech_row_laplace = {
    .id = LDPB_MECH_LAPLACE,
    .name = "laplace",
    .local = 1,
    .output = LDPB_MECH_OUTPUT_REAL,
    .params = 0,
    .exact_debias = 1,
    .init = mech_laplace_init,
    .sample = mech_laplace_sample,
    .debias = debias_laplace,
    .radius = radius_laplace,
};
