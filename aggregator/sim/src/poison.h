/* Poisoning devices in the scalar simulation (`ldpb sim --poison-fraction F`; docs/sim.md,
 * "Poisoning"; docs/privacy.md, "Poisoning"). A fraction of the rounds go to devices that do not
 * run the mechanism: assigned an arm like any device, they report the most damaging value the
 * aggregator admits for that arm's mechanism (ldpb_mech_check_value: a bit 0 or 1, a Laplace
 * real up to LDPB_MECH_REAL_SCALES_MAX / epsilon beyond [0, 1], a raw reward 0 or 1), the
 * input-independent attack on LDP protocols of Cao, Jia & Gong (USENIX Security 2021), aimed at
 * the bandit's choice by a strategy:
 *   demote-best    the lowest admissible value for the best arm, the highest for every other;
 *   promote-worst  the highest for the worst arm, the lowest for every other.
 * Each round is a poisoning device's with probability f, independently (the simulator draws
 * it from a stream of its own, AGG_SIM_STREAM(i, CLIENT, 1): a fixed spacing would alias with
 * the round-robin order of the elimination policies and hit one arm only). Such a round draws
 * nothing from the environment's or the honest clients' streams and its pull is not counted: the
 * regret is the honest devices'. */
#ifndef LDPB_AGG_POISON_H
#define LDPB_AGG_POISON_H

#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/mech.h"

typedef enum agg_poison_strategy {
    AGG_POISON_DEMOTE_BEST = 1,
    AGG_POISON_PROMOTE_WORST = 2,
} agg_poison_strategy;

typedef struct agg_poison {
    double fraction; /* of the rounds, [0, 0.5]; 0: none */
    agg_poison_strategy strategy;
} agg_poison;

/* "demote-best", "promote-worst"; NULL for another value. */
const char *agg_poison_strategy_name(agg_poison_strategy s);
/* The strategy named `name`; LDPB_EINVAL if none. */
ldpb_err agg_poison_strategy_parse(const char *name, agg_poison_strategy *out);

/* LDPB_ERANGE for a fraction outside [0, 0.5] or NaN, LDPB_EINVAL for an unknown strategy. */
ldpb_err agg_poison_check(const agg_poison *p);

/* The lowest and highest report the aggregator admits from mechanism `mechanism` at `epsilon`
 * (0: no local mechanism, raw rewards in [0, 1]). */
ldpb_err agg_poison_extremes(ldpb_mech_kind mechanism, double epsilon, double *lo, double *hi);

/* The report of a poisoning device assigned `arm`. */
double agg_poison_value(const agg_poison *p, uint32_t arm, uint32_t best, uint32_t worst, double lo,
                        double hi);

#endif
