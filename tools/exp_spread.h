/* How `ldpb loadgen --experiments N [--zipf S]` spreads its simulated devices over experiments:
 * experiment i (0-based) of N is drawn with probability proportional to 1/(i+1)^S (a Zipf law
 * over the index; S = 0 is uniform), once per device, from the caller's seeded generator, and
 * named PREFIX + i (exp_spread.c). */
#ifndef LDPB_TOOLS_EXP_SPREAD_H
#define LDPB_TOOLS_EXP_SPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "rand.h"

/* As the aggregator's limits: 1..64 bytes of [a-z0-9._-] per name, at most 100000 experiments. */
#define TOOL_EXP_NAME_MAX 64u
#define TOOL_EXP_MAX      100000u
#define TOOL_ZIPF_MAX     100.0

typedef struct tool_exp_spread {
    uint32_t n;
    double zipf;
    double *cdf; /* cdf[i] = P(index <= i); cdf[n - 1] == 1; NULL when zipf == 0 or n == 1 */
    /* The names are prefix + index; no prefix with n == 1: the experiment `default` */
    char prefix[TOOL_EXP_NAME_MAX + 1];
    int is_default;
} tool_exp_spread;

/* Sets up `n` experiments named `prefix` + index (NULL prefix: "e", or `default` alone when
 * n == 1) with Zipf exponent `zipf` in [0, TOOL_ZIPF_MAX]. LDPB_EINVAL/LDPB_ERANGE with a
 * one-line reason in `why` (cap bytes) for a bad count, exponent or prefix (the longest name
 * must be a valid experiment name); LDPB_ENOMEM. */
ldpb_err tool_exp_spread_init(tool_exp_spread *s, uint32_t n, double zipf, const char *prefix,
                              char *why, size_t cap);
void tool_exp_spread_free(tool_exp_spread *s);

/* One device's experiment index in [0, n). */
uint32_t tool_exp_spread_draw(const tool_exp_spread *s, agg_rand *r);

/* P(index == i), as the draws follow it. */
double tool_exp_spread_prob(const tool_exp_spread *s, uint32_t i);

/* The name of experiment i into out (TOOL_EXP_NAME_MAX + 1 bytes). */
void tool_exp_spread_name(const tool_exp_spread *s, uint32_t i, char out[TOOL_EXP_NAME_MAX + 1]);

#endif
