/* The empirical privacy audit behind `ldpb audit` (docs/audit.md): draws many outputs of a
 * target mechanism at a grid of inputs and checks them against the *claimed* mechanism with
 * Clopper-Pearson intervals that hold simultaneously (Bonferroni) with probability 1 - alpha:
 *   privacy  - no lower confidence bound on ln(P(S|x) / P(S|x')) exceeds the claimed epsilon;
 *   fidelity - every interval contains the claimed mechanism's probability of that region;
 *   support  - every output is one the claimed mechanism can produce.
 * The target is any sampler callback, so the production mechanisms and deliberately broken ones
 * go through the same code. Internal to the ldpb tool and its tests; nothing here prints. */
#ifndef LDPB_TOOLS_AUDIT_H
#define LDPB_TOOLS_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Family-wise probability that a correct mechanism FAILs, and its accepted range. */
#define AUDIT_ALPHA_DEFAULT 1e-9
#define AUDIT_ALPHA_MIN     1e-15
#define AUDIT_ALPHA_MAX     0.5
/* Draws per input. */
#define AUDIT_SAMPLES_MIN 100
#define AUDIT_SAMPLES_MAX 1000000000ULL
/* Claimed epsilon range: (AUDIT_EPSILON_MIN, LDPB_EPSILON_MAX]. Below 1e-3 an audit needs more
 * than 10^9 draws per input to resolve anything. */
#define AUDIT_EPSILON_MIN 1e-3
/* The default sample size is chosen so that a mechanism whose epsilon is AUDIT_INFLATION times
 * the claimed one FAILs with probability at least 1 - AUDIT_BETA (docs/audit.md). */
#define AUDIT_INFLATION 1.1
#define AUDIT_BETA      1e-9

/* Draws one output of the target at unit input x01 from `rng` into *y. Returns 0 on success;
 * any other value (an ldpb_err) stops the audit, and audit_run returns it. */
typedef int (*audit_sample_fn)(void *ctx, ldpb_rng *rng, double x01, double *y);

typedef struct audit_opts {
    ldpb_mech_kind kind; /* the claimed mechanism ... */
    double epsilon;      /* ... its epsilon, in [AUDIT_EPSILON_MIN, LDPB_EPSILON_MAX] ... */
    double kappa;        /* ... and its curvature (quadratic only) */
    uint64_t samples;    /* draws per input; 0 (default) means audit_default_samples() */
    double alpha;        /* family-wise false-FAIL probability (default AUDIT_ALPHA_DEFAULT) */
} audit_opts;

/* Fills `o` with the defaults for a claim of `kind` at `epsilon`. */
void audit_opts_init(audit_opts *o, ldpb_mech_kind kind, double epsilon);

/* A set of outputs: lo <= y < hi. The Bernoulli kinds have one region, y = 1 ([0.5, inf));
 * Laplace regions have edges at half-grid offsets, so no output of the claimed mechanism lies
 * on an edge. */
typedef struct audit_region {
    double lo, hi;
} audit_region;

/* One (input, region) cell: how often the target's output fell in the region. [lo, hi] is the
 * two-sided Clopper-Pearson interval for the probability p of the region at level
 * 1 - audit_report.level, [qlo, qhi] the same interval for 1 - p (each bound computed directly,
 * so small bounds keep their relative precision). */
typedef struct audit_cell {
    uint64_t count;
    double estimate; /* count / samples */
    double lo, hi;
    double qlo, qhi;
    double nominal; /* the claimed mechanism's probability of the region */
    int ok;         /* lo <= nominal <= hi */
} audit_cell;

typedef struct audit_report {
    audit_opts opts; /* as run: samples and alpha resolved */
    double grid;     /* Laplace: the claimed mechanism's output grid; NaN for Bernoulli */
    size_t n_inputs;
    const double *inputs;
    size_t n_regions;
    const audit_region *regions;
    audit_cell *cells; /* n_inputs * n_regions, cells[i * n_regions + r] */
    double level;      /* per-interval two-sided error: alpha / (n_inputs * n_regions) */

    /* Privacy: the largest lower confidence bound on ln(P(S|x_num) / P(S|x_den)) over ordered
     * pairs of inputs and over every region S and its complement, clamped below at 0. */
    double eps_lower;
    size_t priv_num, priv_den, priv_region; /* where it was attained */
    int priv_complement;                    /* 1 if on the complement of the region */
    int privacy_ok;                         /* eps_lower <= claimed epsilon */

    /* Fidelity: cells whose interval excludes the nominal probability, and the most deviant
     * of them (largest |estimate - nominal| / standard deviation) when there is one. */
    size_t fidelity_failures;
    size_t worst_cell;
    int fidelity_ok;

    /* Support: outputs the claimed mechanism cannot produce (not 0/1 for Bernoulli; not a
     * finite multiple of the grid for Laplace). */
    uint64_t off_support;
    int support_ok;

    /* An upper bound on the probability that this audit PASSes a mechanism of the same kind at
     * AUDIT_INFLATION * epsilon (exact binomial tails, best single cell); NaN where that
     * mechanism cannot be built (epsilon above LDPB_EPSILON_MAX / AUDIT_INFLATION). */
    double miss;

    int pass; /* privacy_ok && fidelity_ok && support_ok */
} audit_report;

/* Audits `sample` (with `ctx`, drawing from `rng`) against the claim in `opts`. Errors:
 * LDPB_EINVAL for NULL arguments, an unknown kind or a non-finite parameter; LDPB_ERANGE for
 * epsilon, kappa, samples or alpha outside their ranges (or a numerical failure of the interval
 * computation, which does not happen within them); LDPB_ENOMEM; or the sampler's own nonzero
 * status. A FAIL verdict is not an error: it is in (*out)->pass. Free with audit_report_free(). */
ldpb_err audit_run(const audit_opts *opts, audit_sample_fn sample, void *ctx, ldpb_rng *rng,
                   audit_report **out);

/* Accepts NULL. */
void audit_report_free(audit_report *report);

/* The default draws per input for a claim (kind, epsilon, kappa) at family-wise level alpha:
 * the power rule of docs/audit.md, clamped to [AUDIT_DEFAULT_MIN, the kind's time cap]. Errors
 * as audit_run for the parameters. */
#define AUDIT_DEFAULT_MIN 100000ULL
ldpb_err audit_default_samples(const audit_opts *opts, uint64_t *samples);

/* An upper bound on the probability that an audit with `opts` (samples resolved as audit_run
 * does) PASSes a mechanism of the claimed kind and kappa whose true epsilon is
 * `inflation` * epsilon: the smallest, over cells, exact binomial probability that the cell's
 * interval still contains the nominal probability. LDPB_ERANGE if that mechanism cannot exist
 * (inflation * epsilon above LDPB_EPSILON_MAX for the Bernoulli kinds, inflation <= 0). */
ldpb_err audit_miss_probability(const audit_opts *opts, double inflation, double *miss);

/* Writes a region of the report in words into buf, as snprintf does: "y = 1" for the
 * Bernoulli kinds; for Laplace the grid values it holds ("y <= 0", "0 < y <= 0.25",
 * "1 <= y < 2", "y >= 1"), wrapped in "not (...)" for the complement. */
size_t audit_region_text(const audit_report *report, size_t region, int complement, char *buf,
                         size_t len);

/* Writes the verdict line, without newline, into buf (truncated to len, always terminated):
 * "PASS: <mech> eps=<eps> ..." or "FAIL: <mech> eps=<eps> <reason>". Returns the length the
 * whole line needs, as snprintf does. */
size_t audit_verdict(const audit_report *report, char *buf, size_t len);

/* The two-sided Clopper-Pearson interval for a binomial probability from k successes in n
 * trials at confidence 1 - level (level/2 in each tail), as the audit computes it. Each bound
 * is within a relative 1e-8 of the exact one (the rounding of 1 - p costs digits as n grows:
 * 2e-13 at n = 10^5, 6e-10 at 10^9), an error equivalent to changing the level by less than a
 * relative 1e-6. LDPB_EINVAL for k > n or n == 0, LDPB_ERANGE for level outside (0, 1) or a
 * numerical failure. */
ldpb_err audit_cp_interval(uint64_t n, uint64_t k, double level, double *lo, double *hi);

/* A sampler for a production mechanism: ctx is a const ldpb_mech *; draws with
 * ldpb_mech_privatize_unit. */
int audit_sample_mech(void *ctx, ldpb_rng *rng, double x01, double *y);

/* The command line of `ldpb audit` (argv[0] is "audit"):
 *   -m MECH -e EPS [-n|--samples N] [--alpha A] [--kappa K] [--seed S] [-h|--help]
 * On success fills `cli` (seed points into argv) and returns 0; on a usage error writes one
 * line (no newline) into err and returns 2. help is set for -h/--help, and nothing else is then
 * required. */
typedef struct audit_cli {
    audit_opts opts;
    const char *seed; /* NULL: the system's secure generator */
    int help;
} audit_cli;

int audit_cli_parse(int argc, char **argv, audit_cli *cli, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
