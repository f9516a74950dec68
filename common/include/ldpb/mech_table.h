/* The mechanism table: one descriptor per mechanism the protocol knows, including "raw" (no local
 * mechanism: the central and non-private modes send the reward itself). Every module that needs
 * to know what a mechanism is (its name, its wire value, whether a report carries a bit or a real,
 * which parameters it reads, how to build it, whether a reported value is admissible) asks this
 * table instead of testing the kind, so that the checks on the privacy boundary cannot drift
 * apart. docs/privacy.md ("Adding a mechanism") lists the files a new row touches.
 *
 * Build-internal: not installed with the client library (its functions are made local there). */
#ifndef LDPB_MECH_TABLE_H
#define LDPB_MECH_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/detail_bytes.h"
#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The id of the "raw" row. Ids are the wire values (Ldpb__V1__Mechanism) and, for the local
 * mechanisms, the ldpb_mech_kind values; wire.c pins the two enums to this table. */
#define LDPB_MECH_ID_RAW 5

/* The id of the local contextual mode's mechanism ("gaussian-stats"): discrete Gaussian noise on
 * one round's packed (x, y) statistics, an (epsilon, delta)-LDP vector built by ldpb_ctxstat_new
 * (ldpb/ctxstat.h) from the parameters an Assignment.local_model carries, not by ldpb_mech_new. */
#define LDPB_MECH_ID_GAUSSIAN_STATS 6

/* A report of a local mechanism with a real output is admissible only within this many noise
 * scales (1/epsilon) of [0, 1]: an honest report falls outside with probability about e^-100, and
 * a value beyond it would let one report move an estimate arbitrarily far. */
#define LDPB_MECH_REAL_SCALES_MAX 100.0

/* Size of the optional `detail` buffers below: common's one size (ldpb/detail_bytes.h). */
#define LDPB_MECH_DETAIL_BYTES LDPB_DETAIL_BYTES

typedef enum ldpb_mech_output {
    LDPB_MECH_OUTPUT_BIT = 1,    /* the report is 0 or 1 (Report.bit on the wire) */
    LDPB_MECH_OUTPUT_REAL = 2,   /* the report is a real number (Report.real on the wire) */
    LDPB_MECH_OUTPUT_VECTOR = 3, /* the report is a vector of reals (Report.stats on the wire) */
} ldpb_mech_output;

/* Parameters a mechanism reads besides epsilon (ldpb_mech_desc.params). */
#define LDPB_MECH_PARAM_KAPPA     0x1u /* ldpb_mech_opts.kappa, sent as Assignment.kappa */
#define LDPB_MECH_PARAM_LAMBDA    0x2u /* ldpb_mech_opts.lambda */
#define LDPB_MECH_PARAM_ENDPOINTS 0x4u /* ldpb_mech_opts.p0, p1 */
#define LDPB_MECH_PARAM_STATS     0x8u /* delta, d, L, B (Assignment.local_model) */

typedef struct ldpb_mech_desc {
    int id;           /* wire value; the ldpb_mech_kind of a local mechanism */
    const char *name; /* command line, config files, CSV, ledger dumps */
    int local;        /* 1: an LDP mechanism, epsilon in (0, LDPB_EPSILON_MAX], built by
                         ldpb_mech_new (or, for the vector output, ldpb_ctxstat_new); 0: raw,
                         epsilon exactly 0, nothing to build */
    ldpb_mech_output output;
    unsigned params;  /* LDPB_MECH_PARAM_* */
    int exact_debias; /* the de-biased mean is exact and unbiased for any reward law */

    /* The implementation, for local rows (NULL for raw), in the family's own source file, which
     * defines the row. mech.c and debias.c dispatch here. */
    ldpb_err (*init)(struct ldpb_mech *m); /* validate the kind's own parameters, fill eps_eff */
    void (*sample)(const struct ldpb_mech *m, ldpb_rng *rng, double x01, double *out);
    double (*debias)(const struct ldpb_mech *m, double mean); /* mean report -> mean reward */
    double (*radius)(const struct ldpb_mech *m, double n, double delta); /* (1-delta) radius */
    /* Bernoulli rows: p(x) = p0 + s * shape(x), shape(0) = 0, shape(1) = 1. */
    double (*shape)(const struct ldpb_mech *m, double x01);
} ldpb_mech_desc;

/* 1 if `d` is a local row with a scalar output, the rows ldpb_mech_new builds (every local row
 * but the vector one); 0 for NULL. */
LDPB_API int ldpb_mech_desc_scalar(const ldpb_mech_desc *d);

/* All rows, in id order; *count receives their number. */
LDPB_API const ldpb_mech_desc *const *ldpb_mech_table(size_t *count);

/* The row with this id (wire value) or name; NULL if none. */
LDPB_API const ldpb_mech_desc *ldpb_mech_desc_of(int id);
LDPB_API const ldpb_mech_desc *ldpb_mech_desc_by_name(const char *name);

/* Whether `epsilon` suits the mechanism `id`: (0, LDPB_EPSILON_MAX] for a local one, exactly 0
 * for raw. LDPB_EINVAL for an unknown id or a NaN or infinite epsilon, LDPB_ERANGE otherwise.
 * `what` names the message in `detail` (NULL or LDPB_MECH_DETAIL_BYTES). */
LDPB_API ldpb_err ldpb_mech_check_epsilon(int id, double epsilon, const char *what, char *detail);

/* Whether `kappa` (has_kappa: it was given) suits the mechanism `id`: only a mechanism that
 * reads kappa may carry one, and it must lie in [-1, 1]. */
LDPB_API ldpb_err ldpb_mech_check_kappa(int id, int has_kappa, double kappa, const char *what,
                                        char *detail);

/* The format of a report's value, the part the wire decoder checks (a failure there is a
 * malformed message): the mechanism `id` is known and `epsilon` suits it (as
 * ldpb_mech_check_epsilon), a bit comes from a bit-output mechanism and is 0 or 1, a real comes
 * from a real-output mechanism and is finite. A vector-output mechanism has neither (LDPB_EINVAL:
 * its reports are checked by ldpb_ctxstat_check). LDPB_EINVAL for the wrong field, an unknown id or
 * a non-finite number; LDPB_ERANGE for a bit other than 0 or 1 or an epsilon out of range. */
LDPB_API ldpb_err ldpb_mech_check_field(int id, double epsilon, int is_bit, double value,
                                        const char *what, char *detail);

/* THE admissibility rule of a report: is `value`, carried as a bit (is_bit) or as a real, a value
 * that the mechanism `id` at `epsilon` can produce? ldpb_mech_check_field first; then the real of
 * a local mechanism must lie within LDPB_MECH_REAL_SCALES_MAX / epsilon of [0, 1], and a raw
 * reward within [0, 1] (LDPB_ERANGE). The daemon's report check, the policies' observation check
 * and the client's ledger all call this; the wire decoder calls ldpb_mech_check_field, its first
 * half, so that the two cannot disagree on what is well-formed. */
LDPB_API ldpb_err ldpb_mech_check_value(int id, double epsilon, int is_bit, double value,
                                        const char *what, char *detail);

/* Fills `opts` for the local mechanism `id` at `epsilon` with the defaults, setting kappa only if
 * the mechanism reads it. LDPB_EINVAL if `id` is not a scalar local mechanism. */
LDPB_API ldpb_err ldpb_mech_desc_opts(int id, double epsilon, double kappa, ldpb_mech_opts *opts);

/* Builds the mechanism `id` at `epsilon` (and kappa) exactly as a client does for an assignment,
 * and checks that its reports can be de-biased (a finite confidence radius): what an aggregator
 * must verify before it asks clients for it. LDPB_OK for raw at epsilon 0. LDPB_EINVAL for the
 * vector row (its policy builds it with ldpb_ctxstat_new, which checks its parameters). Otherwise
 * the error of ldpb_mech_new, or LDPB_ERANGE for a mechanism whose reports carry no information
 * about the reward (a Bernoulli mechanism whose implemented endpoints coincide). */
LDPB_API ldpb_err ldpb_mech_check_serviceable(int id, double epsilon, double kappa, char *detail);

#ifdef __cplusplus
}
#endif

#endif
