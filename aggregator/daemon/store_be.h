/* Inside the store seam (store.h): what store.c shares with its backends. A backend is one table
 * of operations (agg_store_ops), chosen by the scheme of the store URL; store.c keeps what every
 * backend does alike: the state directory's lock, the meta rows and their comparison, the pending
 * meta of a fresh state, the count of decision rows, retention's arithmetic, the test hooks. */
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
    /* Connects, brings the schema to AGG_STORE_SCHEMA_VERSION (or refuses another version), and
     * in one transaction checks the meta (agg_store_settle_meta) and settles the identity
     * (state_id.h) into s->ident; then sets s->decision_rows. Runs with the state directory
     * locked; `s->be` is the backend's own, freed by close. */
    ldpb_err (*open)(agg_store *s, const char *url, const char *dir, const agg_store_meta *m,
                     char *errmsg);
    void (*close)(agg_store *s);
    ldpb_err (*load)(agg_store *s, uint8_t **blob, size_t *len, agg_store_counters *c);
    ldpb_err (*begin)(agg_store *s);
    ldpb_err (*write_meta)(agg_store *s, const agg_meta_row *rows, size_t n);
    ldpb_err (*commit)(agg_store *s);
    void (*rollback)(agg_store *s);
    ldpb_err (*add_report)(agg_store *s, const agg_store_row *r, int *is_new);
    ldpb_err (*has_report)(agg_store *s, const uint8_t *id, size_t id_len, int *exists);
    ldpb_err (*remove_report)(agg_store *s, const uint8_t *id, size_t id_len);
    /* *added: rows inserted (0 for a decision already logged). */
    ldpb_err (*add_decision)(agg_store *s, const agg_store_row *d, uint64_t *added);
    /* Deletes up to `limit` decisions expiring before `before_ms`, earliest first. */
    ldpb_err (*prune_expired)(agg_store *s, uint64_t before_ms, uint64_t limit, uint64_t *n);
    /* Deletes the `count` decisions expiring first. */
    ldpb_err (*prune_oldest)(agg_store *s, uint64_t count, uint64_t *n);
    ldpb_err (*put_state)(agg_store *s, const uint8_t *blob, size_t len,
                          const agg_store_counters *c);
    /* counts[] zeroed by the caller. */
    ldpb_err (*arm_counts)(agg_store *s, uint64_t *counts, uint32_t k);
    ldpb_err (*export_csv)(const char *url, const char *dir, FILE *out, char *errmsg);
    /* NULL where the backend's own tools back it up: `no_backup` says which. */
    ldpb_err (*backup)(const char *url, const char *dir, const char *dest, char *errmsg);
    const char *no_backup;
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
    /* The meta rows of a fresh state, written by the first transaction (with the first data),
     * so a start that is refused or fails after the open leaves no meta behind. */
    agg_meta_row *pending_meta;
    size_t n_pending_meta;
    char errmsg[AGG_STORE_ERRMAX];
    agg_store_commit_hook commit_hook; /* tests only */
    void *commit_hook_ctx;
    agg_state_ident ident; /* state_id.h */
};

/* How a backend reads what agg_store_settle_meta compares: the number of meta rows; the number
 * of rows of state, reports and decisions; one meta value by key (1 found, 0 not, -1 failure).
 * Counts are -1 on failure; the failures leave their reason in s->errmsg. */
typedef struct agg_meta_reader {
    int64_t (*count_meta)(agg_store *s);
    int64_t (*count_data)(agg_store *s);
    int (*get)(agg_store *s, const char *key, char *value, size_t cap);
} agg_meta_reader;

/* Checks the stored meta against `m`, or, for a fresh state, keeps the rows in s->pending_meta for
 * the first transaction. The rules and messages of store.h's agg_store_open. */
ldpb_err agg_store_settle_meta(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                               char *errmsg);

#endif
