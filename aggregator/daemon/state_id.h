/* The identity of an aggregator state: 16 random bytes created with the state, kept in the
 * database (table `identity`) and, as a marker, in the file `state_id` of the state directory.
 *
 * Why: assignment tokens are MACed under a key derived from the server's secret key, which lives
 * outside the database. Without an identity, a state whose database was deleted, truncated or
 * replaced by an empty one restarts with the same key, so every assignment issued before, acked
 * or not, stays valid and its report is counted again. The identity goes into the token key
 * (assign_token.h, version 3), so the tokens of one state are unknown to any other; and the
 * marker file, which outlives a lost database, lets a start tell "a new directory" from "a
 * directory whose database is gone" (refused unless the operator says --new-state).
 *
 * Rules at open (D: the database's identity, M: the marker file's):
 *   D and M equal                     the state as before
 *   D, no M                           M is written (a backup restored into a new directory)
 *   D and M differ                    LDPB_ESTATE: the database belongs to another state
 *   no D, database holds a state, M   LDPB_ESTATE: the database lost the commit holding D
 *                                     (a deleted -wal file), and maybe acked reports with it
 *   no D, database holds a state,     migration of a state written before identities: one is
 *   no M                              created, and the tokens of versions 1 and 2 (which only
 *                                     such a state issued) stay accepted until they expire
 *   no D, empty database, M           LDPB_ESTATE (the database is gone) unless new_state
 *   no D, empty database, no M        a new state: D and then M are written
 * and new_state on a database that holds a state or an identity is LDPB_ESTATE too, so a
 * forgotten --new-state cannot hide a later loss. */
#ifndef LDPB_AGG_STATE_ID_H
#define LDPB_AGG_STATE_ID_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "ldpb/err.h"

#define AGG_STATE_ID_BYTES 16u
#define AGG_STATE_ID_FILE  "state_id"
#define AGG_STATE_ID_NOTE  256

typedef struct agg_state_ident {
    uint8_t id[AGG_STATE_ID_BYTES];
    int legacy_tokens; /* migrated: token versions 1 and 2 are still accepted */
    int write_marker;  /* the marker file must be (re)written once the database has committed */
    char note[AGG_STATE_ID_NOTE]; /* one line for the log: what happened to the identity */
} agg_state_ident;

/* Where a store keeps its identity row (one per backend, store.h): `read` gives 1 and the row,
 * 0 when there is none, -1 on failure (with `errmsg`); `insert` writes the row of `ident`. Both
 * run inside the caller's open write transaction. */
typedef struct agg_state_id_rows {
    int (*read)(void *ctx, uint8_t id[AGG_STATE_ID_BYTES], int *legacy, char *errmsg,
                size_t errcap);
    ldpb_err (*insert)(void *ctx, const agg_state_ident *ident, int64_t created_ms, char *errmsg,
                       size_t errcap);
    const char *db_name;   /* for the messages: "aggregator.db" */
    const char *loss_hint; /* how such a database loses commits: "was aggregator.db-wal deleted?" */
} agg_state_id_rows;

/* The rules above, over the identity row that `rows` reads and writes for `ctx`. */
ldpb_err agg_state_id_settle_rows(const agg_state_id_rows *rows, void *ctx, const char *dir,
                                  int holds_state, int new_state, agg_state_ident *out,
                                  char *errmsg, size_t errcap);

/* Reads or creates the identity inside the caller's open write transaction on `db`, whose schema
 * has the table `identity`; `holds_state` says whether the database has meta or data rows.
 * Errors: LDPB_ESTATE (rules above; `errmsg`, `errcap` bytes, says what and what to do),
 * LDPB_ECORRUPT (an unreadable marker or identity row), LDPB_EIO, LDPB_ECRYPTO. */
ldpb_err agg_state_id_settle(sqlite3 *db, const char *dir, int holds_state, int new_state,
                             agg_state_ident *out, char *errmsg, size_t errcap);

/* Writes the marker file of `ident` in `dir` if settle asked for it (mode 0600, through a
 * temporary file, fsynced, renamed, the directory fsynced); call after the database's COMMIT.
 * LDPB_EIO with `errmsg`. */
ldpb_err agg_state_id_record(const char *dir, agg_state_ident *ident, char *errmsg, size_t errcap);

/* Lower-case hex of an identity into `hex` (2 * AGG_STATE_ID_BYTES + 1 bytes). */
void agg_state_id_hex(const uint8_t id[AGG_STATE_ID_BYTES], char *hex);

#endif
