/* Private stopping rules of Sajed & Sheffet 2019 (Algs. 1, 2): DP-NAS tests after every
 * sample, DP exponential NAS only at t = 2^k (k >= 1). Both learn the mean mu != 0 of an i.i.d.
 * stream in [-R, R] to within alpha |mu| with probability >= 1 - beta, and are eps-DP: a sparse
 * vector test with threshold noise B ~ Lap(12R/eps) drawn once at init and fresh
 * A_t ~ Lap(12R/eps) per test (eps/2), and a final Lap(4R/eps)/t on the released mean (eps/2).
 *
 * Nothing but the halting time and the final estimate may be released; the running mean is kept
 * private in the struct. Since the rule never halts when mu = 0, a sample budget caps it.
 *
 * Caller-owned struct; not thread-safe. */
#ifndef LDPB_AGG_STOPPING_H
#define LDPB_AGG_STOPPING_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "rand.h"

typedef enum agg_nas_kind {
    AGG_NAS_EVERY_STEP = 1,  /* DP-NAS, Algorithm 1 */
    AGG_NAS_EXPONENTIAL = 2, /* DP exponential NAS, Algorithm 2 */
} agg_nas_kind;

typedef enum agg_nas_state {
    AGG_NAS_RUNNING = 0,   /* more samples needed */
    AGG_NAS_HALTED = 1,    /* halted; agg_nas_estimate() has the private mean */
    AGG_NAS_EXHAUSTED = 2, /* the budget ran out without halting; nothing is released */
} agg_nas_state;

typedef struct agg_nas_opts {
    agg_nas_kind kind;
    double epsilon;  /* > 0, finite */
    double alpha;    /* relative accuracy, (0, 1); default 0.5 (SS19 4, two-arm use) */
    double beta;     /* failure probability, (0, 1); default 0.05 */
    double range;    /* R: samples lie in [-R, R]; default 1 */
    uint64_t budget; /* the most samples it takes, >= 1; default UINT64_MAX */
} agg_nas_opts;

/* Fills the defaults above for `kind` and `epsilon`. */
void agg_nas_opts_init(agg_nas_opts *o, agg_nas_kind kind, double epsilon);

typedef struct agg_nas {
    agg_nas_opts opts;
    double sigma1, sigma2, sigma3; /* 12R/eps, 12R/eps, 4R/eps */
    double threshold_noise;        /* B, drawn once */
    uint64_t t;                    /* samples taken */
    double sum;                    /* exact running sum (private) */
    agg_nas_state state;
    double estimate; /* Xbar_t + Lap(sigma3)/t once halted */
} agg_nas;

/* Validates `opts` and starts a rule, drawing B from `noise`. On an invalid option returns
 * LDPB_EINVAL (NULL, non-finite, unknown kind) or LDPB_ERANGE (out of range) and writes a message
 * naming the field and its bound into errmsg (may be NULL) of errmsg_len bytes. */
ldpb_err agg_nas_init(agg_nas *s, const agg_nas_opts *opts, agg_noise *noise, char *errmsg,
                      size_t errmsg_len);

/* Feeds one sample x in [-R, R] and sets *state (may be NULL). A halting test draws a fresh A_t;
 * on halting the estimate's noise is drawn once. Errors: LDPB_EINVAL for NULL or NaN,
 * LDPB_ERANGE for x outside [-R, R], LDPB_ESTATE once halted or exhausted. */
ldpb_err agg_nas_push(agg_nas *s, agg_noise *noise, double x, agg_nas_state *state);

/* The number of samples at which the next halting test happens (t + 1 for DP-NAS, the next power
 * of two for the exponential rule), capped by the budget. */
uint64_t agg_nas_next_check(const agg_nas *s);

/* Exponential rule only: feeds `count` samples at once whose sum is `sum` (each in [-R, R]), so a
 * simulator need not draw them one by one. The block must not run past the next test
 * (agg_nas_next_check). Identical to feeding the samples one by one whenever their partial sums
 * are exact in double precision (for instance integer-valued samples, as for differences of
 * Bernoulli rewards). Errors: as agg_nas_push, plus LDPB_ERANGE for count 0, a block past the next
 * test, or |sum| > R count; LDPB_ESTATE for the DP-NAS kind. */
ldpb_err agg_nas_push_block(agg_nas *s, agg_noise *noise, uint64_t count, double sum,
                            agg_nas_state *state);

/* The private estimate of mu. LDPB_ESTATE unless halted. */
ldpb_err agg_nas_estimate(const agg_nas *s, double *estimate);

#endif
