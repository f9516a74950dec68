/* The stopping experiment of `ldpb sim --preset sajed2019-nas` (docs/sim.md): DP-NAS and DP
 * exponential NAS (Sajed & Sheffet 2019, Algs. 1 and 2; aggregator/sim/src/stopping.h) run on
 * i.i.d. samples X_t in {-1, +1} with mean Delta (R = 1) until they halt, for every (algorithm,
 * Delta, epsilon) of a grid. Per cell it reports the samples to stop (mean, 95% interval, spread),
 * the rate of SS19 Thm 3.3, t0 + t1 + t2, the share of trials that halted with the wrong sign or
 * outside the promised accuracy alpha |mu| (to compare with beta), and fits the log-log slopes of
 * the samples in 1/Delta and 1/epsilon next to the same slopes of the rate.
 *
 * Random streams of trial i in cell pair p = (Delta index) * n_eps + (epsilon index), both
 * algorithms alike: samples AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, p), noise (AGG_NOISE_FAST,
 * simulation only) AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_NOISE, p). A trial's result depends on
 * (seed, cell, trial) only, so the files are byte-identical whatever the number of threads. */
#ifndef LDPB_TOOLS_SIM_NAS_H
#define LDPB_TOOLS_SIM_NAS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ldpb/err.h"
#include "ldpb/rng.h"
#include "plan.h"
#include "report.h"
#include "stopping.h"

#define SIMNAS_PRESET  "sajed2019-nas"
#define SIMNAS_CSV     "stopping.csv"
#define SIMNAS_ALPHA   0.5
#define SIMNAS_BETA    0.05
#define SIMNAS_GAPS    "0.05,0.1,0.2,0.4,0.8"
#define SIMNAS_EPS     "0.1,0.25,0.5,1"
#define SIMNAS_ALGS    "dp-nas,dp-exp-nas"
#define SIMNAS_TRIALS  1000ULL
#define SIMNAS_GAP_MIN 0.001
/* Thm 3.3 promises a halt by t_U = 2000 (t0 + t1 + t2) with probability >= 1 - beta; a trial
 * is stopped there and counted as a failure. */
#define SIMNAS_TU_FACTOR 2000.0

#define SIMNAS_HEADER                                                                              \
    "preset,algorithm,epsilon,gap,alpha,beta,trials,mean_samples,ci95_low,ci95_high,sd,median,"    \
    "min,max,rate,ratio,t_upper,halted,wrong_sign,inaccurate,failure_rate,failure_ci95_high"

typedef struct simnas_cell {
    agg_nas_kind kind;
    const char *algorithm; /* "dp-nas" or "dp-exp-nas" */
    double gap, eps;
    size_t gap_index, eps_index;
    char gap_text[32], eps_text[32];
    uint64_t budget; /* ceil(t_U) */
    double rate;     /* t0 + t1 + t2 of SS19 Thm 3.3 (R = 1) */
} simnas_cell;

/* Cells in the order algorithm, Delta, epsilon (each as given). */
typedef struct simnas_plan {
    simnas_cell *cell;
    size_t n_cell;
    size_t n_alg, n_gap, n_eps;
    uint64_t trials;
    double alpha, beta;
} simnas_plan;

typedef struct simnas_opts {
    const char *algorithms; /* NULL: SIMNAS_ALGS */
    const char *epsilons;   /* NULL: SIMNAS_EPS */
    const char *gaps;       /* NULL: SIMNAS_GAPS */
    const char *trials;     /* NULL: SIMNAS_TRIALS */
} simnas_opts;

/* Parses and validates the grid: algorithms among dp-nas, dp-exp-nas; epsilons in
 * (0, LDPB_EPSILON_MAX]; gaps in [SIMNAS_GAP_MIN, 1); trials in [1, 1e6]; no duplicates. Usage
 * errors return LDPB_EINVAL or LDPB_ERANGE with one line naming the option and value. */
ldpb_err simnas_build(simnas_plan *plan, const simnas_opts *o, char errmsg[SIMPLAN_ERRMSG_MAX]);
void simnas_fini(simnas_plan *plan);

/* SS19 Thm 3.3 with R = 1: with L = ln((1/beta) ln(1/(alpha gap))),
 * t0 = L / (alpha gap)^2, t1 = L / (eps gap), t2 = ln(1/beta) / (eps alpha gap); returns
 * t0 + t1 + t2 (the theorem's t_U is 2000 times it). */
double simnas_rate(double gap, double eps, double alpha, double beta);

typedef struct simnas_trial {
    uint64_t samples; /* at the halt, or the budget */
    int halted;
    double estimate; /* NaN unless halted */
} simnas_trial;

/* One trial of one cell (cell_index < plan->n_cell), deterministic in (seed, cell, trial). */
ldpb_err simnas_run_trial(const simnas_plan *plan, size_t cell_index,
                          const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                          simnas_trial *out);

/* Every trial of every cell on `threads` threads (>= 1); out[c * trials + i]. */
ldpb_err simnas_run(const simnas_plan *plan, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                    unsigned threads, simnas_trial *out, char errmsg[AGG_ERRMSG_MAX]);

typedef struct simnas_stats {
    simstat samples;
    double ratio;      /* mean samples / rate */
    uint64_t halted;   /* by t_U */
    uint64_t wrong;    /* halted with estimate <= 0 (the sign of mu is wrong) */
    uint64_t inexact;  /* halted with |estimate - gap| > alpha gap */
    double failure;    /* (trials - halted + inexact) / trials: the (alpha, beta) rule's failures */
    double failure_hi; /* one-sided 95% Clopper-Pearson upper bound of the failure probability */
} simnas_stats;

/* Reduces the trials; stats has n_cell entries. LDPB_ENOMEM. */
ldpb_err simnas_reduce(const simnas_plan *plan, const simnas_trial *trials, simnas_stats *stats);

/* The least-squares slope of ln(mean samples) (theory: ln(rate)) against ln(1/gap) over the gaps
 * of (algorithm a, epsilon e), or against ln(1/eps) over the epsilons of (a, gap g). NaN with
 * fewer than two points. */
void simnas_slope_gap(const simnas_plan *plan, const simnas_stats *stats, size_t a, size_t e,
                      double *measured, double *theory);
void simnas_slope_eps(const simnas_plan *plan, const simnas_stats *stats, size_t a, size_t g,
                      double *measured, double *theory);

/* The constant C of algorithm a: the geometric mean over its cells of mean samples / rate, so
 * that C (t0 + t1 + t2) is the theorem's curve fitted to the run; *spread_lo and *spread_hi are
 * the smallest and largest ratio / C. */
double simnas_constant(const simnas_plan *plan, const simnas_stats *stats, size_t a,
                       double *spread_lo, double *spread_hi);

/* stopping.csv: SIMNAS_HEADER, then one row per cell. 0, or -1 on a write error. */
int simnas_write_csv(const simnas_plan *plan, const simnas_stats *stats, FILE *f);

/* Writes plots_dir/data/nas-*.dat and plots_dir/plots.gp: per algorithm, samples to stop
 * against Delta (one curve per epsilon) and against epsilon (one per Delta), 95% error bars, and
 * C (t0 + t1 + t2) dashed. Returns the number of figures, or -1 with a message in errmsg. */
long simnas_write_plots(const simnas_plan *plan, const simnas_stats *stats, const char *plots_dir,
                        char *errmsg, size_t cap);

#endif
