/* The smith2013 presets of `ldpb sim`: private FTAL (Smith & Thakurta 2013) on stochastic experts,
 * full information (smith2013-experts) and bandit (smith2013-bandit). PFTAL is not a K-armed
 * policy of the engine (aggregator/sim/src/pftal.h), so these presets have their own run loop here:
 * a horizon sweep (every decade from 10^3 to the horizon) for each p and epsilon, regret.csv and
 * summary.csv with the same headers as the other presets (regret.csv: the curve of the largest
 * horizon; summary.csv: one row per horizon of the sweep), meta.txt, run.txt, a gnuplot script,
 * and the fitted log-log slope of regret against T on stdout. docs/sim.md describes the instance
 * and every choice. */
#ifndef LDPB_TOOLS_SIM_FTAL_H
#define LDPB_TOOLS_SIM_FTAL_H

#include <stddef.h>

/* 1 for "smith2013-experts" and "smith2013-bandit". */
int simftal_is_preset(const char *name);

/* The preset names and one-line summaries, for --help. */
const char *simftal_preset_summary(size_t i, const char **name);

typedef struct simftal_args {
    const char *preset;
    const char *horizon, *trials, *epsilons, *ks; /* NULL: the preset's */
    const char *seed;                             /* never NULL */
    const char *out;                              /* never NULL */
    unsigned threads;
    int no_plots, quiet;
    int argc;
    char **argv;
    /* `ldpb sim`'s gnuplot helpers: found on PATH, and run in a directory (exit status). */
    int (*have_gnuplot)(void);
    int (*run_gnuplot)(const char *dir);
} simftal_args;

/* Runs the preset; returns the exit status of `ldpb sim` (0, 1 runtime, 2 usage), messages on
 * stderr, the table on stdout. */
int simftal_run(const simftal_args *a);

#endif
