/* The aggregator's durable state, behind one seam with a backend per store URL scheme
 * (store_be.h): "sqlite:" (the default), one SQLite database (WAL, synchronous=FULL) in the state
 * directory, state_dir/aggregator.db; "postgresql://..." (libpq's URI), a PostgreSQL database
 * (synchronous_commit on). Either way the state directory holds the lock, the identity marker and
 * the replay log. Tables (docs/aggregator.md lists every column):
 *   meta       the configuration the state belongs to (schema version, policy, K, mechanism,
 *              epsilon, kappa, mode, horizon, beta, gamma, eps_arm); a restart with another
 * configuration is refused state      one row: the policy's saved state, its version (reports
 * counted) and counters, updated in the same transaction as the reports it reflects reports    one
 * row per counted report, keyed by assignment id (single use, idempotent) decisions  the propensity
 * log of issued assignments (written asynchronously; best effort)
 *
 * A store handle is used by one thread at a time (the committer); not thread-safe. */
#ifndef LDPB_AGG_STORE_H
#define LDPB_AGG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ldpb/err.h"
#include "policy.h"

#define AGG_STORE_SCHEMA_VERSION 1
#define AGG_STORE_DB_NAME        "aggregator.db"
#define AGG_STORE_ERRMAX         512

typedef struct agg_store agg_store;

/* What the state belongs to: rows schema_version, policy, mode, arms (params.k) and one per
 * parameter of agg_policy_params(), named as the parameter. On every open of an existing state
 * the rows of the policy, the mode, k and the parameters in `reads` are compared; the others
 * cannot change what the state means, and are stored as 0 ("raw" for the mechanism). */
typedef struct agg_store_meta {
    const char *policy;
    const char *mode;
    agg_policy_config params;
    unsigned reads; /* AGG_PARAM_* bits the policy reads: agg_policy_reads() */
    int new_state;  /* --new-state: the operator starts a new state where the database is gone */
    const char *store_url; /* --store: NULL or "sqlite:" for SQLite, "postgresql://..." */
} agg_store_meta;

/* Whether `url` names a store backend ("sqlite:", "postgresql://...", "postgres://..."), without
 * connecting. LDPB_EINVAL with `errmsg` (AGG_STORE_ERRMAX bytes). */
ldpb_err agg_store_check_url(const char *url, char *errmsg);

/* The scheme of the open store's backend: "sqlite" or "postgresql". */
const char *agg_store_backend(const agg_store *s);

typedef struct agg_store_counters {
    uint64_t policy_version; /* reports counted by the policy state */
    uint64_t reports;        /* rows of `reports` (equal to policy_version) */
    uint64_t duplicates;     /* resent reports acked as duplicates */
    uint64_t assignments;    /* assignments issued (logged or not) */
} agg_store_counters;

/* A report or decision row. */
typedef struct agg_store_row {
    const uint8_t *id;
    size_t id_len;
    uint32_t arm;
    const char *mechanism;
    double epsilon;
    double propensity;
    uint64_t policy_version;
    uint64_t expires_at_ms;
    uint64_t at_ms; /* issued (decision) or received (report) */
    double value;   /* reports only */
} agg_store_row;

/* Opens (creating the directory, mode 0700, and the database if needed) the state in `dir`
 * and checks its meta against `meta`; the meta rows are written only to a state that has none
 * and holds no data, and never when the open fails. Errors: LDPB_EIO (cannot create or open,
 * with SQLite's reason), LDPB_ESTATE (the state belongs to another configuration or another
 * schema version: `errmsg` names the field, the stored and the configured value; or the identity
 * rules of state_id.h refuse it: a database gone while its state_id file remains), LDPB_ECORRUPT
 * (unreadable or inconsistent tables, data without meta), LDPB_ENOMEM. `errmsg` has
 * AGG_STORE_ERRMAX bytes. */
ldpb_err agg_store_open(agg_store **out, const char *dir, const agg_store_meta *meta, char *errmsg);

/* The state's identity (state_id.h), settled by agg_store_open: AGG_STATE_ID_BYTES bytes; whether
 * tokens of versions 1 and 2 are still accepted (a migrated state); and one line for the log
 * saying which state this is and whether it was just created. */
const uint8_t *agg_store_state_id(const agg_store *s);
int agg_store_legacy_tokens(const agg_store *s);
const char *agg_store_state_note(const agg_store *s);

/* Closes the database (checkpointing the WAL). Accepts NULL. */
void agg_store_close(agg_store *s);

/* The saved policy state and counters. *blob is NULL (and *len 0) for a fresh state; otherwise
 * malloc'd, freed by the caller. Errors: LDPB_EIO, LDPB_ECORRUPT, LDPB_ENOMEM. */
ldpb_err agg_store_load(agg_store *s, uint8_t **blob, size_t *len, agg_store_counters *c);

/* Transactions: begin, then rows, then put_state, then commit (or rollback). LDPB_EIO on any
 * SQLite failure (the message is in agg_store_errmsg). */
ldpb_err agg_store_begin(agg_store *s);
ldpb_err agg_store_commit(agg_store *s);
void agg_store_rollback(agg_store *s);

/* For fault-injection tests: `fn` runs inside agg_store_commit, after every row and the state of
 * the transaction are written and before the COMMIT; a nonzero return makes that COMMIT fail
 * (LDPB_EIO, the transaction left open for agg_store_rollback) as a full disk would. NULL
 * removes it. */
typedef int (*agg_store_commit_hook)(void *ctx);
void agg_store_set_commit_hook(agg_store *s, agg_store_commit_hook fn, void *ctx);

/* Inserts a report unless its id is there: *is_new = 1 if inserted, 0 if already counted. */
ldpb_err agg_store_add_report(agg_store *s, const agg_store_row *r, int *is_new);

/* *exists = 1 if a report with this id was counted. */
ldpb_err agg_store_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists);

/* Deletes the report with this id, inside the open transaction: the committer takes back a
 * report it inserted when the policy refuses to learn from it. */
ldpb_err agg_store_remove_report(agg_store *s, const uint8_t *id, size_t id_len);

/* Logs an issued assignment (ignored if already logged). */
ldpb_err agg_store_add_decision(agg_store *s, const agg_store_row *d);

/* Retention of the propensity log, inside the open transaction: deletes decisions whose expiry
 * is before `expired_before_ms`, then, while more than `max_rows` remain, the ones expiring
 * first; `limit` rows at most in all, so one transaction's extra work stays bounded. *deleted
 * gets how many went. */
ldpb_err agg_store_prune_decisions(agg_store *s, uint64_t expired_before_ms, uint64_t max_rows,
                                   uint64_t limit, uint64_t *deleted);

/* Rows of `decisions`, the open transaction's changes included. */
uint64_t agg_store_decision_rows(const agg_store *s);

/* Tests only: while `on`, every agg_store_commit fails with LDPB_EIO as SQLite does on a full
 * disk (the caller then rolls back). Simulates the disk-full condition the assignment gate
 * reacts to (docs/aggregator.md, "Retention and a full disk"). */
void agg_store_inject_disk_full(agg_store *s, int on);

/* Replaces the policy state and counters. */
ldpb_err agg_store_put_state(agg_store *s, const uint8_t *blob, size_t len,
                             const agg_store_counters *c);

/* Counted reports per arm (counts[0..k-1], zeroed first). LDPB_EIO; LDPB_ECORRUPT for an arm
 * outside [0, k). */
ldpb_err agg_store_arm_counts(agg_store *s, uint64_t *counts, uint32_t k);

/* The last error message of the backend. */
const char *agg_store_errmsg(const agg_store *s);

/* Writes the propensity log of the state in `dir` as CSV to `out` (docs/aggregator.md: columns
 * assignment_id, arm, propensity, policy_version, mechanism, epsilon, value, issued_at_ms,
 * expires_at_ms, reported_at_ms; one row per issued assignment, value and reported_at_ms empty
 * when unreported, plus reports whose decision row was not logged or was deleted by retention).
 * Opens the database read-only (SQLITE_OPEN_READONLY), so it can run beside the daemon and never
 * writes the state. Errors: LDPB_EIO, LDPB_ECORRUPT. */
ldpb_err agg_store_export_csv(const char *dir, FILE *out, char *errmsg);

/* The same for the store `url` (NULL: SQLite in `dir`); PostgreSQL reads in one REPEATABLE READ
 * READ ONLY transaction. */
ldpb_err agg_store_export_csv_url(const char *url, const char *dir, FILE *out, char *errmsg);

/* Copies the state in `dir` into the SQLite database `dest` (an empty or new file) with SQLite's
 * online backup API: a consistent snapshot taken beside a running daemon (read-only on the
 * source). `dest` is left in WAL mode, ready to be a state_dir's aggregator.db. Errors: LDPB_EIO,
 * LDPB_ECORRUPT (not an aggregator state). */
ldpb_err agg_store_backup(const char *dir, const char *dest, char *errmsg);

/* The same for the store `url` (NULL: SQLite in `dir`). A PostgreSQL store is backed up with
 * PostgreSQL's own tools (pg_dump, or base backups and WAL archiving): LDPB_ENOTSUP, with a
 * message saying so (docs/aggregator.md); agg_store_backup_check tells it beforehand (LDPB_OK,
 * LDPB_ENOTSUP, LDPB_EINVAL for an unknown scheme). */
ldpb_err agg_store_backup_url(const char *url, const char *dir, const char *dest, char *errmsg);
ldpb_err agg_store_backup_check(const char *url, char *errmsg);

#endif
