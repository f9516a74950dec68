/* Statistics and files of `ldpb sim`: mean and Student-t 95% interval across trials at every
 * checkpoint, the final-regret summary, the lower-bound shapes of docs/derivations.md 13, and the
 * CSV writers (fixed column order, fixed row order, locale-independent number formats, so one
 * seed gives byte-identical files whatever the thread count). */
#ifndef LDPB_TOOLS_SIM_REPORT_H
#define LDPB_TOOLS_SIM_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "env.h"
#include "ldpb/err.h"
#include "plan.h"

#define SIMREPORT_REGRET_HEADER                                                                    \
    "preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,trials"
#define SIMREPORT_SUMMARY_HEADER                                                                   \
    "preset,algorithm,mechanism,epsilon,k,horizon,trials,mean_regret,ci95_low,ci95_high,sd,"       \
    "median,min,max"

/* robust.csv: regret.csv's rows with the summaries of Tossou & Dimitrakakis 2017, Sec. 4 added:
 * the median of means over mom_groups groups and Gini's mean difference of the trials at or
 * above it and at or below it. */
#define SIMREPORT_ROBUST_HEADER                                                                    \
    "preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,trials,mom_regret,"     \
    "gmd_below,gmd_above,mom_groups"
#define SIMREPORT_MOM_GROUPS 24 /* TD17's a0: 1 - e^(-a0/8) = 0.95 */

/* Median of means: x[0], x[stride], ... (n >= 1) cut in trial order into g = min(groups, n)
 * groups whose sizes differ by at most one (the first n mod g one larger), the median of the g
 * group means (the mean of the two middle ones when g is even). scratch: n doubles. */
double simstat_median_of_means(const double *x, size_t n, size_t stride, size_t groups,
                               double *scratch);
/* Gini's mean difference 2/(n(n-1)) sum_i (2i - n - 1) x_(i) of sorted values (0 for n < 2). */
double simstat_gmd_sorted(const double *sorted, size_t n);
/* GMD of the values <= center and of the values >= center (a value equal to center is in both).
 * scratch: n doubles. */
void simstat_gmd_split(const double *x, size_t n, size_t stride, double center, double *scratch,
                       double *below, double *above);

/* Across-trial statistics of one quantity. With n = 1 the interval collapses to the mean and sd
 * is 0: one trial says nothing about the spread. */
typedef struct simstat {
    double mean;
    double sd;     /* sample standard deviation (n - 1) */
    double lo, hi; /* mean -/+ t_{0.975, n-1} sd / sqrt(n) */
    double median, min, max;
} simstat;

/* The 0.975 quantile of Student's t with n - 1 degrees of freedom; 0 for n < 2. */
double simstat_t975(uint64_t n);

/* Statistics of x[0], x[stride], ..., x[(n-1) stride] (n >= 1). scratch (n doubles) is used for
 * the median; with scratch NULL, median is NaN. Deterministic: sums run in index order. */
void simstat_compute(const double *x, size_t n, size_t stride, double *scratch, simstat *out);

/* The reference shapes of docs/derivations.md 13, as coefficients c of c * ln t:
 *   lai_robbins  sum over suboptimal arms of Delta_a / KL(mu_a, mu*) when every arm is
 *                Bernoulli (the Bernoulli-KL version), else sum 1 / Delta_a;
 *   ldp          sum 1 / (zeta(eps) Delta_a), zeta(eps) = min(4, e^{2 eps}) (e^eps - 1)^2;
 *   central      (K - 1) / (200 eps) (Shariff-Sheffet), and central + sum 1 / Delta_a. */
double simref_zeta(double eps);
double simref_lai_robbins(const agg_env *env, int bernoulli);
double simref_inv_gaps(const agg_env *env);
double simref_ldp(const agg_env *env, double eps);
double simref_central(uint32_t k, double eps);
/* The largest gap mu* - mu_a: T times it bounds any regret, so plots cap references there. */
double simref_max_gap(const agg_env *env);

/* The results of a batch, reduced: per configuration and checkpoint the mean and interval, and
 * the final statistics. */
typedef struct simreport {
    const simplan *plan;                 /* borrowed */
    double *mean, *lo, *hi;              /* [cfg * n_checkpoints + j] */
    simstat *final;                      /* [cfg] */
    double *mom, *gmd_below, *gmd_above; /* [cfg * n_checkpoints + j] */
    size_t mom_groups;
} simreport;

/* Reduces regret[c] (trials x n_checkpoints doubles, trial-major, as agg_sim_run_batch writes
 * them). LDPB_ENOMEM. */
ldpb_err simreport_compute(simreport *r, const simplan *plan, double *const *regret);
void simreport_fini(simreport *r);

/* Writes the CSV files. Return 0, or -1 on a write error (errno set by stdio). */
int simreport_write_regret(const simreport *r, FILE *f);
int simreport_write_summary(const simreport *r, FILE *f);
int simreport_write_robust(const simreport *r, FILE *f);

#endif
