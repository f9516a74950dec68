/* The aggregator's durable state, behind one seam with a backend per store URL scheme
 * (store_be.h): "sqlite:" (the default), one SQLite database (WAL, synchronous=FULL) in the state
 * directory, state_dir/aggregator.db; "postgresql://..." (libpq's URI), a PostgreSQL database
 * (synchronous_commit on). Either way the state directory holds the lock, the identity marker and
 * the replay log. Tables of schema version 2 (docs/aggregator.md lists every column):
 *   meta         schema version, and the learning problem of the experiment `default` (policy,
 *                mode, K, the parameters the policy reads): a restart whose `default` differs is
 *                refused, as in version 1
 *   experiments  one row per experiment, running or stopped: name, settings text, origin,
 *                the policy's saved state and its counters, updated in the same transaction as
 *                the reports they reflect
 *   reports      one row per counted report, keyed by assignment id (unique across experiments:
 *                single use, idempotent), with its experiment
 *   decisions    the propensity log of issued assignments, with their experiment and the time
 *                retention may delete them (written asynchronously; best effort)
 *   nodes        (version 3) one row per node that wrote the database: its name (unique),
 *                start and last write times, and the generation of its last transaction
 *   exp_node_state  (version 3) the partial policy state and counters of an additive experiment
 *                written by a node other than the one whose state its `experiments` row holds
 *                (experiments.node): several nodes on one PostgreSQL (docs/aggregator.md)
 *   node_key     (version 3) the public key every node of the database serves with
 * A state of version 1 (one experiment, a `state` table) is migrated at open, in one
 * transaction, into the experiment `default`; one of version 2 gets the tables and the column of
 * version 3 (its experiments' states become the opening node's).
 *
 * The calls of version 1 keep their meaning, applied to the experiment `default`: agg_store_load,
 * agg_store_put_state, agg_store_arm_counts, agg_store_export_csv(_url), and a row whose
 * `experiment` is 0.
 *
 * A store handle is used by one thread at a time (the committer); not thread-safe. */
#ifndef LDPB_AGG_STORE_H
#define LDPB_AGG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ldpb/err.h"
#include "policy.h"

#define AGG_STORE_SCHEMA_VERSION 3
#define AGG_STORE_EXP_NAME_MAX   64 /* as AGG_EXPERIMENT_NAME_MAX (config.h) */
#define AGG_STORE_DEFAULT_EXP    "default"
#define AGG_STORE_DB_NAME        "aggregator.db"
#define AGG_STORE_ERRMAX         512
#define AGG_STORE_NODE_NAME_MAX  64

typedef struct agg_store agg_store;

/* What the state belongs to: rows schema_version, and for the experiment `default` policy, mode,
 * arms (params.k) and one per parameter of agg_policy_params(), named as the parameter. On every
 * open of an existing state the rows of the policy, the mode, k and the parameters in `reads` are
 * compared; the others cannot change what the state means, and are stored as 0 ("raw" for the
 * mechanism).
 *
 * `policy` NULL (and `default_settings` NULL) says the configuration has no experiment `default`:
 * nothing of it is compared, a fresh state gets no `default` row, and a state of version 1 (which
 * holds `default` only) is refused. With `policy` set, a fresh state (or a state that had no
 * `default` so far) gets the row `default` (id 1 in a fresh state) with its first transaction,
 * and a version-1 state migrates into it when its meta rows match. */
typedef struct agg_store_meta {
    const char *policy;
    const char *mode;
    agg_policy_config params;
    unsigned reads; /* AGG_PARAM_* bits the policy reads: agg_policy_reads() */
    int new_state;  /* --new-state: the operator starts a new state where the database is gone */
    const char *store_url; /* --store: NULL or "sqlite:" for SQLite, "postgresql://..." */
    /* The settings text of `default` (agg_exp_config_format), stored in its row when the store
     * creates it. NULL with `policy` set: a caller of version 1; the row gets the compared meta
     * rows as "key = value" lines instead. */
    const char *default_settings;
    /* How long decisions of a migrated version-1 state stay after their expiry: their
     * retain_until_ms = expires_at_ms + this (0: a caller that prunes with the version-1 cutoff,
     * now minus the retention, as agg_store_prune_decisions's `expired_before_ms`). */
    uint64_t default_retention_ms;
    /* Tests only: runs inside the open's transaction, after the schema's creation or migration
     * and the meta's checks, before its COMMIT; a nonzero return fails the open (LDPB_EIO,
     * rolled back), and a hook that never returns is a crash in the middle of the migration. */
    int (*open_hook)(void *ctx);
    void *open_hook_ctx;
    /* This node's name (agg_store_node_name_valid; NULL: "default"). PostgreSQL: one process per
     * name and database (a session advisory lock); several names share a database. SQLite:
     * unused (one node). */
    const char *node_name;
    /* The public key the node serves with (NULL: not checked). PostgreSQL records the first
     * node's and refuses another (LDPB_ESTATE): every node of a database must accept the
     * others' assignments. */
    const uint8_t *public_key;
    size_t public_key_len;
    /* --check-config: the open runs every check in its transaction and never commits it (rolled
     * back when the store is closed), writes no state_id marker, and refuses (LDPB_ESTATE) a
     * state that a start would migrate, instead of migrating it: the store is left as it was. */
    int check_only;
    /* SQLite: the report and decision rows split over this many databases (store_shard.h; 0 or
     * 1: every row in aggregator.db, the layout of a state without shards). Fixed when the state
     * is created: a state of another number is refused (LDPB_ESTATE). */
    unsigned row_shards;
} agg_store_meta;

/* Whether `name` is a node name: 1..AGG_STORE_NODE_NAME_MAX bytes of [A-Za-z0-9._-]. */
int agg_store_node_name_valid(const char *name);

/* The open store's node name ("default" where none was given). */
const char *agg_store_node_name(const agg_store *s);

/* 1 when the last failure was the database being unreachable (its connection lost and not
 * yet taken up again, or taken up again after a COMMIT in doubt that went through, until the
 * states are reloaded): the daemon answers "busy, resend" rather than an I/O error. */
int agg_store_unavailable(const agg_store *s);

/* 1 when the last failure was the database ending the transaction to break a deadlock or a
 * serialization conflict between nodes (PostgreSQL's SQLSTATE 40P01, 40001), the connection
 * sound: rolled back, the same transaction run again may well succeed. */
int agg_store_conflict(const agg_store *s);

/* 1 when a COMMIT whose answer was lost with the connection turned out, at the reconnect, to
 * have gone through (PostgreSQL): the caller's memory lacks that transaction, so every
 * transaction fails until it has reloaded its states (agg_store_experiments) and called
 * agg_store_reloaded. */
int agg_store_needs_reload(const agg_store *s);
void agg_store_reloaded(agg_store *s);

/* Whether `url` names a store backend ("sqlite:", "postgresql://...", "postgres://..."), without
 * connecting. LDPB_EINVAL with `errmsg` (AGG_STORE_ERRMAX bytes). */
ldpb_err agg_store_check_url(const char *url, char *errmsg);

/* The scheme `url` names: "sqlite" (NULL and "" too), "postgresql", or "" for none known. */
const char *agg_store_scheme_of(const char *url);

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
    uint64_t at_ms;     /* issued (decision) or received (report) */
    double value;       /* reports only */
    int64_t experiment; /* its id (agg_store_exp.id); 0: the experiment `default` */
    /* Decisions: when retention may delete the row (expiry + the experiment's retention); 0:
     * expires_at_ms (a caller of version 1, pruning with its own cutoff). */
    uint64_t retain_until_ms;
} agg_store_row;

/* The process-wide SQLite settings the daemon runs with, before any store is opened (a later call
 * changes nothing). SQLite's memory statistics (`memstatus` nonzero keeps them) take one
 * process-wide mutex on every allocation and free, which the committer and the row shards'
 * writers would all contend for; nothing in the daemon reads them. */
void agg_store_process_init(int memstatus);

/* Opens (creating the directory, mode 0700, and the database if needed) the state in `dir`
 * and checks its meta against `meta`; the meta rows (and the row `default`) are written only by
 * the first transaction to a state that has none (a fresh state, or one new to `default`), and
 * never when the open fails. A state of schema version 1 is migrated in the open's transaction
 * when its meta matches `meta`'s `default` (refused, and left as it was, otherwise). Errors:
 * LDPB_EIO (cannot create or open, with SQLite's reason), LDPB_ESTATE (the state belongs to
 * another configuration or another schema version: `errmsg` names the field, the stored and the
 * configured value; a state of version 1 and a configuration without `default`; or the identity
 * rules of state_id.h refuse it: a database gone while its state_id file remains), LDPB_ECORRUPT
 * (unreadable or inconsistent tables, data without meta), LDPB_EINVAL (default_settings without
 * policy, an unknown URL scheme), LDPB_ENOMEM. `errmsg` has AGG_STORE_ERRMAX bytes. */
ldpb_err agg_store_open(agg_store **out, const char *dir, const agg_store_meta *meta, char *errmsg);

/* The state's identity (state_id.h), settled by agg_store_open: AGG_STATE_ID_BYTES bytes; whether
 * tokens of versions 1 and 2 are still accepted (a migrated state); and one line for the log
 * saying which state this is and whether it was just created. */
const uint8_t *agg_store_state_id(const agg_store *s);
int agg_store_legacy_tokens(const agg_store *s);
const char *agg_store_state_note(const agg_store *s);

/* Closes the database (checkpointing the WAL). Accepts NULL. */
void agg_store_close(agg_store *s);

/* The saved policy state and counters of the experiment `default`. *blob is NULL (and *len 0) for a
 * fresh state; otherwise malloc'd, freed by the caller. Errors: LDPB_EIO, LDPB_ECORRUPT,
 * LDPB_ENOMEM. */
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

/* The databases the report and decision rows are split over: 1, or the row_shards of a SQLite
 * state (agg_store_meta.row_shards, store_shard.h). */
unsigned agg_store_row_shards(const agg_store *s);

/* Tests only: `fn` runs inside agg_store_commit of a sharded state after the row shards have
 * committed and before aggregator.db does; nonzero fails that COMMIT (LDPB_EIO, the caller
 * rolls back and the shards' rows of the batch are deleted), and a hook that never returns (the
 * process exits) is a crash between the two. NULL removes it. */
void agg_store_set_shard_hook(agg_store *s, agg_store_commit_hook fn, void *ctx);

/* Inserts a report unless its id is there (in whichever experiment): *is_new = 1 if inserted, 0
 * if already counted. LDPB_ENOEXPERIMENT for a row of experiment 0 where there is no `default`. */
ldpb_err agg_store_add_report(agg_store *s, const agg_store_row *r, int *is_new);

/* *exists = 1 if a report with this id was counted. */
ldpb_err agg_store_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists);

/* Deletes the report with this id, inside the open transaction: the committer takes back a
 * report it inserted when the policy refuses to learn from it. */
ldpb_err agg_store_remove_report(agg_store *s, const uint8_t *id, size_t id_len);

/* Logs an issued assignment (ignored if already logged). */
ldpb_err agg_store_add_decision(agg_store *s, const agg_store_row *d);

/* One row of agg_store_write_batch: what the row is, and what writing it found. */
typedef enum agg_batch_kind {
    AGG_BATCH_DECISION, /* agg_store_add_decision; found: 1 logged now, 0 already logged */
    AGG_BATCH_REPORT,   /* agg_store_add_report; found: 1 new, 0 already counted */
    AGG_BATCH_LOOKUP,   /* agg_store_has_report (an expired report); found: 1 counted, 0 not */
} agg_batch_kind;

typedef struct agg_store_batch_row {
    agg_batch_kind kind;
    agg_store_row row; /* for AGG_BATCH_LOOKUP only id and id_len are read */
    int found;         /* out */
} agg_store_batch_row;

/* Inside the open transaction: rows[0..n) written in their order, each exactly as its
 * agg_store_add_decision, agg_store_add_report or agg_store_has_report would (a row sees the rows
 * before it: the first of two reports of one id is the new one), in one round trip to a database
 * server. On failure (LDPB_EIO, LDPB_ENOEXPERIMENT) the `found` values are undefined and the
 * transaction is to be rolled back: none of the rows is written. */
ldpb_err agg_store_write_batch(agg_store *s, agg_store_batch_row *rows, size_t n);

/* Retention of the propensity log, inside the open transaction: deletes decisions whose
 * retain_until_ms is before `expired_before_ms` (one ordered delete across every experiment),
 * then, while more than `max_rows` remain, the ones whose retain_until_ms comes first; `limit` rows
 * at most in all, so one transaction's extra work stays bounded. *deleted gets how many went. */
ldpb_err agg_store_prune_decisions(agg_store *s, uint64_t expired_before_ms, uint64_t max_rows,
                                   uint64_t limit, uint64_t *deleted);

/* Rows of `decisions`, the open transaction's changes included. */
uint64_t agg_store_decision_rows(const agg_store *s);

/* Tests only: while `on`, every agg_store_commit fails with LDPB_EIO as SQLite does on a full
 * disk (the caller then rolls back). Simulates the disk-full condition the assignment gate
 * reacts to (docs/aggregator.md, "Retention and a full disk"). */
void agg_store_inject_disk_full(agg_store *s, int on);

/* Replaces the policy state and counters of the experiment `default` (LDPB_ENOEXPERIMENT where
 * the state has none). */
ldpb_err agg_store_put_state(agg_store *s, const uint8_t *blob, size_t len,
                             const agg_store_counters *c);

/* Counted reports per arm of the experiment `default` (counts[0..k-1], zeroed first). LDPB_EIO;
 * LDPB_ECORRUPT for an arm outside [0, k). */
ldpb_err agg_store_arm_counts(agg_store *s, uint64_t *counts, uint32_t k);

/* The last error message of the backend. */
const char *agg_store_errmsg(const agg_store *s);

/* Writes the propensity log of the experiment `default` of the state in `dir` as CSV to `out`
 * (docs/aggregator.md: columns
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

/* ---- experiments (schema version 2) --------------------------------------------------------- */

/* One experiment as stored. */
typedef struct agg_store_exp {
    int64_t id;
    char name[AGG_STORE_EXP_NAME_MAX + 1];
    char *settings;  /* malloc'd: the settings text (agg_exp_config_format) */
    int from_config; /* origin: 1 the configuration, 0 created at runtime */
    int running;
    uint8_t *state; /* malloc'd; NULL (state_len 0) for an experiment without a saved state */
    size_t state_len;
    agg_store_counters counters;
    /* Version 3: the node whose state `state` and `counters` are: this node's own partial of
     * the experiment. `owner` names the node whose state the experiments row holds ("" none
     * yet); where it is another node, this node's own partial is its exp_node_state row (none:
     * no state) and `others` says other nodes hold partial states. */
    char owner[AGG_STORE_NODE_NAME_MAX + 1];
    int others;
} agg_store_exp;

/* Every experiment, running or stopped, with its state and counters, ordered by id: one query.
 * The `default` that the store creates with the first transaction of a fresh state is listed
 * before that transaction too (its id is known). *out malloc'd (NULL when *n is 0), freed with
 * agg_store_experiments_free. Errors: LDPB_EIO, LDPB_ECORRUPT (an experiment whose counters do
 * not match its reports, or reports without a state: the message names it), LDPB_ENOMEM. */
ldpb_err agg_store_experiments(agg_store *s, agg_store_exp **out, size_t *n);
void agg_store_experiments_free(agg_store_exp *v, size_t n);

/* The id of the experiment `default`, or 0 when the state has none. */
int64_t agg_store_default_experiment(const agg_store *s);

/* Inside an open transaction (agg_store_begin). Adds a running experiment without a state.
 * `name`: 1..64 bytes of [a-z0-9._-]; `default` is the store's own (agg_store_meta) and refused
 * here. LDPB_EINVAL (a bad name or settings NULL), LDPB_ESTATE (the name exists: the message says
 * so), LDPB_EIO. */
ldpb_err agg_store_add_experiment(agg_store *s, const char *name, const char *settings,
                                  int from_config, int64_t *id);

/* Inside an open transaction: marks experiment `id` (0: `default`) running or stopped.
 * LDPB_ENOEXPERIMENT if there is no such experiment, LDPB_EIO. */
ldpb_err agg_store_set_running(agg_store *s, int64_t id, int running);

/* Inside an open transaction: replaces the settings text of experiment `id` (0: `default`), for
 * a change the caller allows (the decision retention). LDPB_ENOEXPERIMENT, LDPB_EINVAL, LDPB_EIO.
 */
ldpb_err agg_store_set_settings(agg_store *s, int64_t id, const char *settings);

/* Inside an open transaction: replaces experiment `id`'s (0: `default`) policy state and
 * counters. LDPB_ENOEXPERIMENT, LDPB_EIO. */
ldpb_err agg_store_put_exp_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                 const agg_store_counters *c);

/* Inside an open transaction: replaces this node's partial state and counters of experiment
 * `exp` (an additive one: their sum over nodes is the experiment's state): the experiments row
 * where no other node's state is there, else this node's exp_node_state row. Where `exclusive`,
 * another node's state in the experiments row refuses the write (LDPB_ESTATE, a statistic that
 * does not add cannot be split across nodes): agg_store_put_exp_state is this with exclusive.
 * LDPB_ENOEXPERIMENT, LDPB_EIO. */
ldpb_err agg_store_put_exp_partial(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                   const agg_store_counters *c, int exclusive);

/* Inside an open transaction: experiment `exp`'s state and counters into its experiments row,
 * which becomes this node's whichever node's it was (a node that took the experiment over; the
 * caller fences it). LDPB_ENOEXPERIMENT, LDPB_EIO. */
ldpb_err agg_store_take_exp_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                  const agg_store_counters *c);

/* One committed partial state of another node (agg_store_partials). */
typedef struct agg_store_partial {
    int64_t experiment;
    char node[AGG_STORE_NODE_NAME_MAX + 1];
    uint8_t *state; /* malloc'd */
    size_t state_len;
    uint64_t policy_version;
    uint64_t reports;
    uint64_t duplicates, assignments; /* that node's counts of the experiment */
    uint64_t age_ms;                  /* the database's clock now minus its commit's */
} agg_store_partial;

/* Outside a transaction: every partial state the other nodes committed (rows of experiments
 * held by another node, and exp_node_state rows of other nodes but for those of counts only,
 * agg_store_put_node_counts). *out malloc'd (NULL when *n is
 * 0), freed with agg_store_partials_free. SQLite: none. LDPB_EIO, LDPB_ENOMEM. */
ldpb_err agg_store_partials(agg_store *s, agg_store_partial **out, size_t *n);
void agg_store_partials_free(agg_store_partial *v, size_t n);

/* Outside a transaction: whether another node (or this one) may have created, stopped, resumed
 * or changed an experiment since the last call: 1 once the database's notification of such a
 * change arrived (PostgreSQL: LISTEN ldpb_experiments, sent by every transaction that writes an
 * experiments row's name, settings or running flag), or after a reconnect (a notification may
 * have been lost with the connection); then agg_store_catalog tells what. 0 otherwise, and
 * always on SQLite (one node). Reads what the connection holds, no round trip. */
int agg_store_experiments_changed(agg_store *s);

/* Outside a transaction: every stored experiment's id, name, settings, origin and running flag
 * (no state, counters zero), ordered by id, one query; freed with agg_store_experiments_free.
 * SQLite: none (*n = 0). LDPB_EIO, LDPB_ENOMEM, LDPB_ECORRUPT. */
ldpb_err agg_store_catalog(agg_store *s, agg_store_exp **out, size_t *n);

/* Inside an open transaction, several nodes: this node's counts of a sequenced experiment `exp`
 * whose state another node (its sequencer) writes: `duplicates` answered in this transaction
 * (added to the stored ones) and its `assignments` so far (replacing them), in this node's
 * exp_node_state row with an empty state. SQLite: nothing (one node). LDPB_EIO. */
ldpb_err agg_store_put_node_counts(agg_store *s, int64_t exp, uint64_t duplicates,
                                   uint64_t assignments);

/* The other nodes' counts of one sequenced experiment (agg_store_shared_counts), to add to this
 * node's own live ones: lead_* where this node is its sequencer (the followers' count rows; its
 * own reports, duplicates and assignments are in the experiments row it writes), follow_* where
 * it is a follower (its reports are the sequencer's; the duplicates are every node's as
 * committed, this one's included; the assignments every other node's). */
typedef struct agg_store_counts {
    int64_t experiment; /* in */
    uint64_t lead_duplicates, lead_assignments, follow_duplicates, follow_assignments;
    int found;
} agg_store_counts;

/* Outside a transaction, several nodes: the counts of the sequenced experiments v[i].experiment
 * (above), one query. SQLite: nothing found. LDPB_EIO, LDPB_ENOMEM. */
ldpb_err agg_store_shared_counts(agg_store *s, agg_store_counts *v, size_t n);

/* Counted reports per arm of experiment `exp` (0: `default`), through an index on (experiment,
 * arm): counts[0..k-1], zeroed first. LDPB_EIO; LDPB_ECORRUPT for an arm outside [0, k). */
ldpb_err agg_store_arm_counts_exp(agg_store *s, int64_t exp, uint64_t *counts, uint32_t k);

/* The propensity log as agg_store_export_csv_url writes it, with an 11th column `experiment` (its
 * name), for the experiment named `experiment` or, NULL, for every experiment (one snapshot, the
 * same order: expires_at_ms, then assignment_id). A state of version 1 not yet migrated is read
 * as the experiment `default`. LDPB_ENOEXPERIMENT for a name the state does not have; LDPB_EIO,
 * LDPB_ECORRUPT, LDPB_EINVAL (URL). */
ldpb_err agg_store_export_csv_exp(const char *url, const char *dir, const char *experiment,
                                  FILE *out, char *errmsg);

/* Whether `name` is an experiment name: 1..64 bytes of [a-z0-9._-]. */
int agg_store_exp_name_valid(const char *name);

#endif
