/* Inside the store seam (store.h): what store.c shares with its backends. A backend is one table
 * of operations (agg_store_ops), chosen by the scheme of the store URL; store.c keeps what every
 * backend does alike: the state directory's lock, the schema version and the migration's order,
 * the meta rows and their comparison, the pending meta and `default` of a fresh state, which
 * experiment a row of experiment 0 belongs to, the count of decision rows, retention's
 * arithmetic, the test hooks. */
#ifndef LDPB_AGG_STORE_BE_H
#define LDPB_AGG_STORE_BE_H

#include "ldpb/detail.h"
#include "state_id.h"
#include "store.h"

#define agg_store_say(out, ...) ldpb_detailf((out), AGG_STORE_ERRMAX, __VA_ARGS__)

/* One meta row: its key, its text for a configuration, and whether an open compares it. */
typedef struct agg_meta_row {
    const char *key;
    char value[64];
    int compared;
} agg_meta_row;

typedef struct agg_store_ops {
    const char *scheme; /* the URL's scheme, "sqlite" or "postgresql" */
    const char *alias;  /* another spelling of it ("postgres", as libpq accepts), or NULL */
    /* Connects, and in one transaction brings the schema to AGG_STORE_SCHEMA_VERSION (creating it,
     * or migrating version 1 through agg_store_settle_meta, or refusing another version), checks
     * the meta (agg_store_settle_meta) and settles the identity (state_id.h; a state that holds
     * data is !s->fresh) into s->ident; then sets s->decision_rows. Runs with the state directory
     * locked; `s->be` is the backend's own, freed by close. */
    ldpb_err (*open)(agg_store *s, const char *url, const char *dir, const agg_store_meta *m,
                     char *errmsg);
    void (*close)(agg_store *s);
    /* The state and counters of experiment `exp` (an id that exists), checked against its
     * reports. */
    ldpb_err (*load)(agg_store *s, int64_t exp, uint8_t **blob, size_t *len, agg_store_counters *c);
    /* Every stored experiment, ordered by id, checked as load checks one; *out malloc'd. */
    ldpb_err (*experiments)(agg_store *s, agg_store_exp **out, size_t *n);
    /* Inserts an experiment row: id `want` (> 0), or the next id (max + 1) when `want` is 0;
     * LDPB_ESTATE when the name exists. */
    ldpb_err (*add_experiment)(agg_store *s, int64_t want, const char *name, const char *settings,
                               int from_config, int64_t *id);
    /* *found = 0 when no row has this id. */
    ldpb_err (*set_running)(agg_store *s, int64_t id, int running, int *found);
    ldpb_err (*set_settings)(agg_store *s, int64_t id, const char *settings, int *found);
    ldpb_err (*begin)(agg_store *s);
    ldpb_err (*write_meta)(agg_store *s, const agg_meta_row *rows, size_t n);
    ldpb_err (*commit)(agg_store *s);
    void (*rollback)(agg_store *s);
    /* Rows come with their experiment resolved (> 0) and, for decisions, retain_until_ms set. */
    ldpb_err (*add_report)(agg_store *s, const agg_store_row *r, int *is_new);
    ldpb_err (*has_report)(agg_store *s, const uint8_t *id, size_t id_len, int *exists);
    ldpb_err (*remove_report)(agg_store *s, const uint8_t *id, size_t id_len);
    /* *added: rows inserted (0 for a decision already logged). */
    ldpb_err (*add_decision)(agg_store *s, const agg_store_row *d, uint64_t *added);
    /* store.h's agg_store_write_batch, rows resolved as for add_report and add_decision; NULL:
     * store.c writes them one by one through those three (agg_store_batch_one_by_one). A
     * decision's `found` is what store.c counts into the decision rows. SQLite's hands them to
     * its row shards (store_shard.h), PostgreSQL's sends them in one pipeline. */
    ldpb_err (*write_batch)(agg_store *s, agg_store_batch_row *rows, size_t n);
    /* Deletes up to `limit` decisions whose retain_until_ms is before `before_ms`, earliest
     * first. */
    ldpb_err (*prune_expired)(agg_store *s, uint64_t before_ms, uint64_t limit, uint64_t *n);
    /* Deletes the `count` decisions whose retain_until_ms comes first. */
    ldpb_err (*prune_oldest)(agg_store *s, uint64_t count, uint64_t *n);
    /* *found = 0 when no experiment has this id. `exclusive`: store.h's
     * agg_store_put_exp_partial (1), or 2 for agg_store_take_exp_state. */
    ldpb_err (*put_state)(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                          const agg_store_counters *c, int exclusive, int *found);
    /* store.h's agg_store_partials; NULL: a backend of one node (none). */
    ldpb_err (*partials)(agg_store *s, agg_store_partial **out, size_t *n);
    /* 1 when the database cannot be reached now (agg_store_unavailable); NULL: never. */
    int (*unavailable)(const agg_store *s);
    /* 1 when the last failure was the database ending the transaction to break a deadlock or a
     * serialization conflict (agg_store_conflict); NULL: never. */
    int (*conflict)(const agg_store *s);
    /* store.h's agg_store_needs_reload and agg_store_reloaded; NULL: never needed. */
    int (*needs_reload)(const agg_store *s);
    void (*reloaded)(agg_store *s);
    /* counts[] zeroed by the caller. */
    ldpb_err (*arm_counts)(agg_store *s, int64_t exp, uint64_t *counts, uint32_t k);
    /* `experiment`: a name, or NULL for all; `with_name`: the 11th column (0: the 10 columns of
     * version 1, for agg_store_export_csv_url, whose `experiment` is "default" and for which a
     * state without it has no rows). */
    ldpb_err (*export_csv)(const char *url, const char *dir, const char *experiment, int with_name,
                           FILE *out, char *errmsg);
    /* NULL where the backend's own tools back it up: `no_backup` says which. */
    ldpb_err (*backup)(const char *url, const char *dir, const char *dest, char *errmsg);
    const char *no_backup;
    /* issue 19: sequenced experiments (store_seq.h); NULL: a sole node, the sequencer of all */
    const struct agg_store_seq_ops *seq;
    /* store.h's agg_store_experiments_changed and agg_store_catalog; NULL: a backend of one
     * node, whose experiments change only through it */
    int (*experiments_changed)(agg_store *s);
    ldpb_err (*catalog)(agg_store *s, agg_store_exp **out, size_t *n);
    /* store.h's agg_store_put_node_counts and agg_store_shared_counts; NULL: one node */
    ldpb_err (*put_counts)(agg_store *s, int64_t exp, uint64_t duplicates, uint64_t assignments);
    ldpb_err (*shared_counts)(agg_store *s, agg_store_counts *v, size_t n);
} agg_store_ops;

extern const agg_store_ops agg_store_sqlite_ops;
extern const agg_store_ops agg_store_pg_ops;

struct agg_store {
    const agg_store_ops *ops;
    void *be; /* the backend's connection and statements */
    int lock_fd;
    uint64_t decision_rows; /* committed rows of `decisions` */
    int64_t decision_delta; /* rows added (+) or deleted (-) by the open transaction */
    int inject_disk_full;   /* agg_store_inject_disk_full */
    int fresh;              /* the database held no state at open */
    /* The meta rows of a fresh state, or of a `default` new to the state, written by the first
     * transaction (with the first data), so a start that is refused or fails after the open
     * leaves no meta behind. */
    agg_meta_row *pending_meta;
    size_t n_pending_meta;
    /* The row `default`, written with pending_meta: its settings (malloc'd), or NULL. */
    char *pending_default;
    /* The settings of a stored `default`, replaced by the first transaction: the configuration's
     * (agg_store_meta.default_settings, malloc'd), whose `default` the meta rows just matched. */
    char *pending_settings;
    int64_t default_id; /* 0: no `default` (nor a pending one) */
    char errmsg[AGG_STORE_ERRMAX];
    unsigned row_shards;              /* 1, or the SQLite row shards (store_shard.h) */
    agg_store_commit_hook shard_hook; /* tests only: agg_store_set_shard_hook */
    void *shard_hook_ctx;
    agg_store_commit_hook commit_hook; /* tests only */
    void *commit_hook_ctx;
    agg_state_ident ident;                  /* state_id.h */
    char node[AGG_STORE_NODE_NAME_MAX + 1]; /* agg_store_meta.node_name, or "default" */
};

/* How a backend shows agg_store_settle_meta the database, inside the open transaction. Counts
 * are -1 on failure, leaving the reason in s->errmsg.
 *   shape        3 or 2: the tables of that version are there; 1: those of version 1 (a `state`
 *                table); 0: none
 *   create       creates the tables of version 3 that are missing
 *   count_meta   rows of meta
 *   count_data   rows of reports and decisions, plus those of experiments (version 2) or
 *                state (version 1)
 *   get          one meta value by key: 1 found, 0 not, -1 failure
 *   find         the id of experiment `name`: 1 found, 0 not, -1 failure
 *   next_id      the id the next experiment row gets (max + 1)
 *   migrate      version 1 to 2: the tables rebuilt with their `experiment` columns, every row of
 *                reports and decisions given `default` (id 1), decisions' retain_until_ms =
 *                expires_at_ms + retention_ms, the state row and its counters moved into the
 *                row `default` (settings `settings`, origin config, running) when `settings` is
 *                not NULL, the table state dropped, the tables of version 3 created; schema_version
 *                is left to the caller
 *   migrate_v2   version 2 to 3: the tables nodes, exp_node_state and node_key and the column
 *                experiments.node added, every stored state given to node `node`; schema_version
 *                is left to the caller */
typedef struct agg_meta_reader {
    int (*shape)(agg_store *s);
    ldpb_err (*create)(agg_store *s);
    int64_t (*count_meta)(agg_store *s);
    int64_t (*count_data)(agg_store *s, int shape);
    int (*get)(agg_store *s, const char *key, char *value, size_t cap);
    int (*find)(agg_store *s, const char *name, int64_t *id);
    int64_t (*next_id)(agg_store *s);
    ldpb_err (*migrate)(agg_store *s, const char *settings, uint64_t retention_ms);
    ldpb_err (*migrate_v2)(agg_store *s, const char *node);
} agg_meta_reader;

/* Settles the schema and checks the stored meta against `m` (migrating a state of version 1), or,
 * for a fresh state, keeps the rows in s->pending_meta for the first transaction. The rules and
 * messages of store.h's agg_store_open. */
ldpb_err agg_store_settle_meta(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                               char *errmsg);

/* Inside a transaction: the pending meta rows, `default` and its settings (agg_store_begin writes
 * them with the first transaction); agg_store_pending_done after its COMMIT. A backend shared by
 * several nodes writes them in the open's transaction instead, so that the next node to open
 * finds them (and compares). */
ldpb_err agg_store_write_pending(agg_store *s);
/* write_batch's per-row path, for a backend whose write_batch has nothing better to do with a
 * batch (SQLite without row shards). */
ldpb_err agg_store_batch_one_by_one(agg_store *s, agg_store_batch_row *rows, size_t n);
void agg_store_pending_done(agg_store *s);

/* Milliseconds since the epoch, for created_at_ms. */
int64_t agg_store_now_ms(void);

/* Checks one experiment's stored counters against the count of its reports: LDPB_ECORRUPT with
 * s->errmsg naming it. `has_state`: a state blob is stored (non-empty). */
ldpb_err agg_store_check_counts(agg_store *s, const char *name, int has_state, const int64_t v[5]);

#endif
