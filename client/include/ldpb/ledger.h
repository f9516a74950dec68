/* The device's privacy ledger: how much epsilon (and delta) this device has spent, against a
 * lifetime budget and a per-report cap for each, and the privatized value released for every
 * assignment. Reports compose by basic composition: the spends add up (docs/ledger.md).
 *
 * Two rules make it the privacy authority on the device:
 *  - one privatization per assignment id: asking again for an id returns the bytes released the
 *    first time, never a fresh draw, so a retry can never become an averaging attack;
 *  - the spend is durable before the value is released: the whole ledger is written to a
 *    temporary file, fsynced, renamed over the old one and the directory fsynced, and only then
 *    does ldpb_ledger_privatize return the value. A crash loses no spend.
 * A ledger file that fails validation is LDPB_ECORRUPT, never silently reset to zero.
 *
 * Thread safety: a ledger handle is not thread-safe; serialize calls on one handle. Two
 * processes must not open the same file (an advisory lock refuses the second with LDPB_ESTATE). */
#ifndef LDPB_LEDGER_H
#define LDPB_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The local contextual mode's mechanism (ldpb/ctxstat.h, built by the client library). */
typedef struct ldpb_ctxstat ldpb_ctxstat;

/* Assignment ids are opaque bytes chosen by the aggregator. */
#define LDPB_ASSIGNMENT_ID_MAX 64

/* Experiment names: 1 to 64 bytes of [a-z0-9._-]; "" (and "default") is the experiment
 * "default" (docs/client.md, "Experiments"). */
#define LDPB_EXPERIMENT_NAME_MAX 64

/* Limits of one ledger: the lifetime budget (spend is kept in units of 2^-32 epsilon, which must
 * stay exact in 64 bits) and the number of stored entries (about 86 MB of file at most). */
#define LDPB_LEDGER_BUDGET_MAX  1e6
#define LDPB_LEDGER_ENTRIES_MAX (1u << 20)
/* The largest lifetime delta budget (spent delta is kept in units of 2^-63). */
#define LDPB_LEDGER_DELTA_MAX 0.5

typedef struct ldpb_ledger_opts {
    double lifetime_budget; /* total epsilon this device may ever spend; in
                               [2^-32, LDPB_LEDGER_BUDGET_MAX] */
    double per_report_cap;  /* largest epsilon one report may spend; > 0, <= lifetime_budget */
    /* The delta of the (epsilon, delta) mechanisms (the local contextual mode's statistics,
     * ldpb_ledger_privatize_stats): the total delta this device may ever spend, in [0,
     * LDPB_LEDGER_DELTA_MAX], and the largest one report may spend, in [0, lifetime_delta]. 0
     * (the default) refuses every report with a delta: an app opts in to delta explicitly. */
    double lifetime_delta;
    double per_report_delta_cap;
} ldpb_ledger_opts;

/* One released report, as stored and as returned on a repeat. */
typedef struct ldpb_ledger_entry {
    uint8_t assignment_id[LDPB_ASSIGNMENT_ID_MAX];
    size_t assignment_id_len;
    ldpb_mech_kind kind;
    double epsilon; /* the effective epsilon charged for this report */
    double value;   /* the privatized output: 0/1 for Bernoulli kinds, a real for Laplace */
    double delta;   /* the delta charged: 0 but for a statistics report */
    size_t n_stats; /* a statistics report's values (ldpb_ledger_lookup_stats), else 0 */
    /* The experiment of the assignment: "" for "default" (and for every entry of a ledger file
     * written before experiments). */
    char experiment[LDPB_EXPERIMENT_NAME_MAX + 1];
} ldpb_ledger_entry;

typedef struct ldpb_ledger ldpb_ledger;

/* Defaults: lifetime budget 100, per-report cap LDPB_EPSILON_MAX, no delta budget (0, 0). */
LDPB_API void ldpb_ledger_opts_init(ldpb_ledger_opts *opts);

/* Opens the ledger at `path`, creating it with `opts` if it does not exist. An existing ledger
 * keeps the budget and cap it was created with (a larger budget cannot be granted by reopening;
 * `opts` may be NULL then). The one exception is the delta budget of a ledger that has none (one
 * created without, or by a library that predates delta): the first open whose `opts` gives one
 * sets it, durably, and from then on it is kept like the epsilon budget. `path` NULL makes an
 * in-memory ledger (for simulations only; it protects nothing across restarts). Errors: LDPB_EINVAL
 * (NULL out, NULL opts for a new ledger, non-finite opts; `path` or "<path>.lock" is a symbolic
 * link, a directory, a FIFO, a socket or a device: refused at once, never waited on), LDPB_ERANGE
 * (opts out of range), LDPB_EIO, LDPB_ECORRUPT (the file failed validation; it is left untouched),
 * LDPB_ESTATE (locked by another process or handle; the lock is flock on "<path>.lock"),
 * LDPB_ENOMEM (also: the file is larger than this process can address, over 2 GiB on a 32-bit
 * target; it is left untouched), LDPB_ECRYPTO (libsodium failed to initialise). */
LDPB_API ldpb_err ldpb_ledger_open(ldpb_ledger **out, const char *path,
                                   const ldpb_ledger_opts *opts);

/* Releases the handle and its lock. Accepts NULL. */
LDPB_API void ldpb_ledger_close(ldpb_ledger *ledger);

/* Privatizes `reward` with `mech` for the assignment `id`, charging the mechanism's effective
 * epsilon. If `id` was privatized before, returns the stored entry and draws nothing (the
 * reward is ignored); if that entry used a different mechanism kind or epsilon, LDPB_ESTATE.
 * Errors: LDPB_EINVAL (NULL, empty or too long id, NaN/inf reward), LDPB_EBUDGET (the charge
 * exceeds the per-report cap or the remaining lifetime budget, or the ledger holds
 * LDPB_LEDGER_ENTRIES_MAX entries; nothing is spent), LDPB_ENOMEM, LDPB_EIO (the spend could not
 * be made durable; nothing is released and the in-memory state is unchanged; after a failure past
 * the rename every later new draw is LDPB_EIO too: close and reopen). */
LDPB_API ldpb_err ldpb_ledger_privatize(ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                                        const ldpb_mech *mech, ldpb_rng *rng, double reward,
                                        ldpb_ledger_entry *out);

/* ldpb_ledger_privatize for an assignment of experiment `experiment` (NULL, "" or "default":
 * the experiment "default", exactly as ldpb_ledger_privatize). The entry records the experiment;
 * the charge comes out of the one budget every experiment shares. An id privatized before in
 * another experiment is LDPB_ESTATE (nothing is drawn). Also LDPB_EINVAL for a name that is not an
 * experiment name. */
LDPB_API ldpb_err ldpb_ledger_privatize_in(ldpb_ledger *ledger, const char *experiment,
                                           const uint8_t *id, size_t id_len, const ldpb_mech *mech,
                                           ldpb_rng *rng, double reward, ldpb_ledger_entry *out);

/* The local contextual mode's report (ldpb/ctxstat.h): privatizes the statistics of features x
 * (d values) and reward y with `mech` for the assignment `id`, charging the mechanism's epsilon
 * and delta, and writes the ldpb_ctxstat_values(mech) values to `stats` (room for `cap`). As
 * ldpb_ledger_privatize: one privatization per id (a repeat returns the stored values and draws
 * nothing; LDPB_ESTATE if that entry has another kind, epsilon or delta), the spend durable
 * before the values are returned. Errors as ldpb_ledger_privatize's, and LDPB_ERANGE for a cap
 * below the values or an x longer than the mechanism's bound (nothing is spent); LDPB_EBUDGET
 * also when the delta exceeds the per-report delta cap or the remaining delta budget. */
LDPB_API ldpb_err ldpb_ledger_privatize_stats(ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                                              const ldpb_ctxstat *mech, ldpb_rng *rng,
                                              const double *x, double y, ldpb_ledger_entry *out,
                                              double *stats, size_t cap);

/* ldpb_ledger_privatize_stats in experiment `experiment`, as ldpb_ledger_privatize_in. */
LDPB_API ldpb_err ldpb_ledger_privatize_stats_in(ldpb_ledger *ledger, const char *experiment,
                                                 const uint8_t *id, size_t id_len,
                                                 const ldpb_ctxstat *mech, ldpb_rng *rng,
                                                 const double *x, double y, ldpb_ledger_entry *out,
                                                 double *stats, size_t cap);

/* Looks up a released entry and, for a statistics report, copies its values to `stats` (room for
 * `cap`; LDPB_ERANGE if too small). `stats` may be NULL for the other kinds. */
LDPB_API ldpb_err ldpb_ledger_lookup_stats(const ldpb_ledger *ledger, const uint8_t *id,
                                           size_t id_len, ldpb_ledger_entry *out, double *stats,
                                           size_t cap);

/* Looks up a released entry. LDPB_OK and *out filled, or LDPB_ESTATE if the id is unknown. */
LDPB_API ldpb_err ldpb_ledger_lookup(const ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                                     ldpb_ledger_entry *out);

/* Epsilon spent so far, what remains of the lifetime budget, the options in force, and the
 * number of stored entries. */
LDPB_API double ldpb_ledger_spent(const ldpb_ledger *ledger);
LDPB_API double ldpb_ledger_remaining(const ldpb_ledger *ledger);
LDPB_API ldpb_ledger_opts ldpb_ledger_get_opts(const ldpb_ledger *ledger);
LDPB_API size_t ldpb_ledger_count(const ldpb_ledger *ledger);

/* The epsilon (and delta, if `delta` is not NULL) charged to the entries of experiment
 * `experiment` (NULL, "" or "default": the experiment "default"), and their number (`count`, may
 * be NULL). Their sum over every experiment is what the entries charged: at most
 * ldpb_ledger_spent, which is what counts against the budget. -1 for a NULL ledger. */
LDPB_API double ldpb_ledger_spent_in(const ldpb_ledger *ledger, const char *experiment,
                                     double *delta, size_t *count);

/* Would a report at `epsilon` be allowed now? LDPB_OK or LDPB_EBUDGET (LDPB_EINVAL for a NULL
 * ledger or an epsilon that is not finite and > 0); spends nothing. */
LDPB_API ldpb_err ldpb_ledger_check(const ldpb_ledger *ledger, double epsilon);

/* The same for a report at (epsilon, delta), delta finite and >= 0. */
LDPB_API ldpb_err ldpb_ledger_check_delta(const ldpb_ledger *ledger, double epsilon, double delta);

/* Delta spent so far (rounded up to the ledger's unit, 2^-63) and what remains. */
LDPB_API double ldpb_ledger_delta_spent(const ldpb_ledger *ledger);
LDPB_API double ldpb_ledger_delta_remaining(const ldpb_ledger *ledger);

#ifdef __cplusplus
}
#endif

#endif
