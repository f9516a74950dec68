/* The configured mechanism. Immutable after ldpb_mech_new, which is what makes one instance
 * safe to share across threads. */
#ifndef LDPB_MECH_INTERNAL_H
#define LDPB_MECH_INTERNAL_H

#include <stdint.h>

#include "ldpb/mech.h"
#include "ldpb/mech_table.h"

/* Laplace grid exponents: outputs are multiples of 2^-k. */
#define LAPLACE_K_MAX 40
/* Bits of |Z| drawn individually; the rest comes from the block loop. */
#define LAPLACE_BITS_MAX 48

struct ldpb_mech {
    ldpb_mech_opts opts;
    const ldpb_mech_desc *desc; /* the table row of opts.kind */
    double eps_eff;
    double range_width; /* range_hi - range_lo, finite and > 0 */

    /* Bernoulli: nominal p(x) = p0 + s * shape(x), shape(0) = 0, shape(1) = 1. */
    double p0, s;
    double lambda;       /* exponential only */
    double expm1_lambda; /* expm1(lambda), exponential only */
    int exp_use_expm1;   /* tiny |lambda|: exp(lx) - 1 would cancel to nothing */
    uint64_t t0, t1;     /* implemented endpoint thresholds: P(1|x) = t/2^64 */

    /* Laplace: two-sided geometric noise in grid units, |Z| = M*A + B, M = 2^nbits. */
    int k;                            /* grid step 2^-k */
    int nbits;                        /* bits of B, >= k */
    uint64_t block_units;             /* M */
    uint64_t grid_units;              /* S = 2^k: the sensitivity of the unit input in grid units */
    double grid;                      /* 2^-k */
    double lambda_unit;               /* privacy loss per grid unit of shift */
    uint64_t t_block;                 /* P(A continues) = exp(-lambda_unit * M) */
    uint32_t t_bit[LAPLACE_BITS_MAX]; /* P(bit i of B) = t/2^32 ~ 1/(1 + exp(lambda_unit 2^i)) */
};

/* Validation and construction of each family; they fill eps_eff or refuse. */
ldpb_err mech_bernoulli_init(struct ldpb_mech *m);
ldpb_err mech_laplace_init(struct ldpb_mech *m);

double mech_bernoulli_nominal(const struct ldpb_mech *m, double x01);
uint64_t mech_bernoulli_threshold(const struct ldpb_mech *m, double x01);
void mech_laplace_sample(const struct ldpb_mech *m, ldpb_rng *rng, double x01, double *out);
void mech_bernoulli_sample(const struct ldpb_mech *m, ldpb_rng *rng, double x01, double *out);

/* Rounds a nonnegative long double up to a double that is at least as large, plus one ulp to
 * cover the error of the libm call that produced it. */
double mech_round_up(long double v);

#endif
