/* Row shards of the SQLite store (row_shards = S > 1; docs/aggregator.md, "Row shards"): the
 * report and decision rows split by assignment id over S databases beside aggregator.db,
 * state_dir/aggregator-rows-<i>.db, each with its own WAL and its own writer thread, so the rows
 * of a batch are inserted and synced in parallel while aggregator.db keeps the experiments, the
 * states and the number of the last batch whose states it holds (`applied`).
 *
 * A batch's rows carry its number. The order of a batch's COMMITs is: every shard (in parallel),
 * then aggregator.db with applied = the batch; a batch is acked only after both. So a shard row
 * whose batch is above the applied one belongs to a batch that was never acked and whose reports
 * no state counts: such rows are deleted at the open and after a failed COMMIT, and the resends
 * of their reports are counted once.
 *
 * A report or decision always goes to the shard agg_shard_of(id), so a resent report is checked
 * against the rows of the one database that may hold it. Used by the committer thread only (the
 * writers run what it hands them and wait). */
#ifndef LDPB_AGG_STORE_SHARD_H
#define LDPB_AGG_STORE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "store.h"

#define AGG_SHARDS_MAX 8 /* SQLite attaches at most 10 databases to a connection */

typedef struct agg_shards agg_shards;

/* The shard of an assignment id among n: FNV-1a of its bytes, mod n. Part of the layout of a
 * sharded state (its rows are where this puts them): never to change. */
unsigned agg_shard_of(const uint8_t *id, size_t len, unsigned n);

/* The file of shard i: state_dir/aggregator-rows-<i>.db. */
int agg_shard_path(char *out, size_t cap, const char *dir, unsigned i);

/* Opens (creating, mode 0600) the n shard databases of `dir`, deletes their rows of batches
 * above `applied` (one COMMIT each), and starts their writers. `create`: a new sharded state,
 * where a shard file with rows is refused (it belongs to a lost state). */
ldpb_err agg_shards_open(agg_shards **out, const char *dir, unsigned n, uint64_t applied,
                         int create, char *errmsg);
void agg_shards_close(agg_shards *sh);

/* The number of the batch being written (applied + 1), whose rows the open transactions hold. */
uint64_t agg_shards_batch(const agg_shards *sh);

/* Whether any shard holds rows of the open batch (begun and not yet committed). */
int agg_shards_active(const agg_shards *sh);

/* The parameters ?1..?10 of a report's or a decision's INSERT, in the column order that
 * aggregator.db and the row shards share (the shards add ?11, the batch). */
struct sqlite3_stmt;
/* A database file or its -wal/-shm opened without following a link (created if `create`, else
 * absent is fine), refused unless a regular file, made mode 0600 (store_sqlite.c). */
ldpb_err agg_sqlite_make_private(const char *path, int create, char *errmsg);
void agg_sqlite_bind_report(struct sqlite3_stmt *st, const agg_store_row *r);
void agg_sqlite_bind_decision(struct sqlite3_stmt *st, const agg_store_row *d);

/* Each shard's rows of rows[0..n) (store.h's agg_store_write_batch) written by its writer, in
 * parallel, inside the shard's open transaction (begun as needed), each row's `found` as
 * agg_store_write_batch says. Within a shard the rows go in the order of rows[] for equal ids: a
 * report sent twice in one batch, the first is the new one. */
ldpb_err agg_shards_rows(agg_shards *sh, agg_store_batch_row *rows, size_t n, char *errmsg);

/* One row at a time, on the calling thread (the writers idle): the store's single-row calls. */
ldpb_err agg_shards_add_report(agg_shards *sh, const agg_store_row *r, int *is_new, char *errmsg);
ldpb_err agg_shards_add_decision(agg_shards *sh, const agg_store_row *d, uint64_t *added,
                                 char *errmsg);
ldpb_err agg_shards_has_report(agg_shards *sh, const uint8_t *id, size_t len, int *exists,
                               char *errmsg);
ldpb_err agg_shards_remove_report(agg_shards *sh, const uint8_t *id, size_t len, char *errmsg);

/* Retention in each shard's open transaction, in parallel: decisions retained until before
 * `before_ms` (up to `limit` per shard); then the `count` retained least long, spread evenly
 * (count / S, rounded up, per shard, the earliest of each). *n: rows deleted in all. */
ldpb_err agg_shards_prune_expired(agg_shards *sh, uint64_t before_ms, uint64_t limit, uint64_t *n,
                                  char *errmsg);
ldpb_err agg_shards_prune_oldest(agg_shards *sh, uint64_t count, uint64_t *n, char *errmsg);

/* COMMITs every shard with an open transaction, in parallel. On a failure the others that
 * committed hold rows of an unapplied batch: agg_shards_rollback deletes them. */
ldpb_err agg_shards_commit(agg_shards *sh, char *errmsg);

/* The batch is applied (aggregator.db committed it): the next batch gets the next number. */
void agg_shards_applied(agg_shards *sh);

/* Rolls back the open transactions and deletes the committed rows of batches above `applied`
 * (read back from aggregator.db by the caller). Until that succeeds every agg_shards_rows fails
 * (and retries it first). */
void agg_shards_rollback(agg_shards *sh, uint64_t applied);

/* Last error text of the shards (after a failed call). */
const char *agg_shards_errmsg(const agg_shards *sh);

#endif
