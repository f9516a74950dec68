/* The store's part of sequenced experiments (issue 19; docs/aggregator.md, "Sequenced
 * experiments"): the calls server_seq.c makes through the store seam. A backend answers them
 * through its agg_store_seq_ops (store_be.h); a backend without them (SQLite: one node, always
 * the sequencer) answers as a sole node would: every lock is taken, every fence holds, nothing is
 * ever left unobserved.
 *
 * PostgreSQL (store_pg_seq.c): the sequencer of experiment `exp` is the node whose session holds
 * the advisory lock (AGG_SEQ_LOCK_NS, exp) in the two-key space; `experiments.seq_epoch` is the
 * fencing version, one higher for every node that takes the lock. A report of a sequenced
 * experiment committed by another node is a row of `reports` with observed = false (and its
 * features in `context` for a contextual policy); the sequencer observes those rows in the order
 * of their `seq` (a bigserial) in its own fenced transactions and marks them observed. The
 * experiment's `reports` counter counts observed rows only.
 *
 * All calls are made under the server's store_mu (the store handle is one thread's at a time). */
#ifndef LDPB_AGG_STORE_SEQ_H
#define LDPB_AGG_STORE_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The namespace of the sequencer locks: "ldsq" read as a big-endian int4. */
#define AGG_SEQ_LOCK_NS 1818522481

/* An experiment's row as the sequencer found it when it took the lock, or as a follower reads it
 * to serve it. `blob` malloc'd (NULL when the experiment has no state yet, or, for a refresh,
 * when its policy_version has not moved). */
typedef struct agg_store_seq_state {
    int64_t epoch;
    int64_t
        updated_at_ms; /* when the row was last written (the previous sequencer's last commit) */
    uint8_t *blob;
    size_t len;
    agg_store_counters c;
} agg_store_seq_state;

/* A report committed by another node, not yet observed. `x`: its d features (contextual
 * policies), malloc'd, or NULL. */
typedef struct agg_store_pending {
    int64_t seq;
    uint32_t arm;
    double value, propensity;
    double *x;
    size_t nx;
} agg_store_pending;

/* Whether the backend has several nodes to sequence among (0: SQLite, a sole node). */
int agg_store_seq_shared(const agg_store *s);

/* Outside a transaction: tries the sequencer lock of `exp`. Taken (*got = 1): the epoch is bumped
 * in a transaction of its own, and *st gets the new epoch and the experiment's last committed
 * state and counters (blob freed by the caller). Not taken: *got = 0, st untouched. A sole node
 * always takes it (epoch 0, st->blob NULL: keep the state it restored). LDPB_EIO. */
ldpb_err agg_store_seq_acquire(agg_store *s, int64_t exp, int *got, agg_store_seq_state *st);

/* Outside a transaction: gives the lock of `exp` back (a deposed sequencer). */
void agg_store_seq_release(agg_store *s, int64_t exp);

/* Inside the open transaction, before a sequencer writes `exp`'s state: *held = 1 if the row's
 * seq_epoch is still `epoch`, and the row is then locked until the COMMIT, so no other node can
 * take over in between; *held = 0: deposed, the caller must roll back. LDPB_EIO. */
ldpb_err agg_store_seq_fence(agg_store *s, int64_t exp, int64_t epoch, int *held);

/* Inside the open transaction, on a node that is not `exp`'s sequencer: the report `id` just
 * inserted is left for the sequencer (observed = false), with its features x (nx values, or
 * NULL). LDPB_EIO. */
ldpb_err agg_store_seq_defer(agg_store *s, const uint8_t *id, size_t id_len, const double *x,
                             size_t nx);

/* Inside the open transaction: up to `max` unobserved reports of `exp` in seq order. *out
 * malloc'd (NULL when *n is 0), freed with agg_store_seq_pending_free. LDPB_EIO, LDPB_ECORRUPT,
 * LDPB_ENOMEM. */
ldpb_err agg_store_seq_pending(agg_store *s, int64_t exp, size_t max, agg_store_pending **out,
                               size_t *n);
void agg_store_seq_pending_free(agg_store_pending *v, size_t n);

/* Outside a transaction: the experiments that have unobserved reports (ids ascending, at most
 * `max` of them, into ids[]): one read of the partial index for every experiment, so an idle
 * sequencer's poll costs one query. *n gets how many. LDPB_EIO. */
ldpb_err agg_store_seq_waiting(agg_store *s, int64_t *ids, size_t max, size_t *n);

/* Inside the open transaction: the `n` reports of `v` marked observed. LDPB_EIO; LDPB_ECORRUPT
 * when fewer rows were still unobserved (another sequencer marked them: impossible while the
 * fence holds). */
ldpb_err agg_store_seq_mark(agg_store *s, int64_t exp, const agg_store_pending *v, size_t n);

/* Outside a transaction: the committed row of `exp`, for a follower serving it: st->blob only
 * when its policy_version differs from `have_version`. LDPB_EIO, LDPB_ENOEXPERIMENT. */
ldpb_err agg_store_seq_read(agg_store *s, int64_t exp, uint64_t have_version,
                            agg_store_seq_state *st);

/* The operations a backend gives (store_be.h: agg_store_ops.seq). */
typedef struct agg_store_seq_ops {
    ldpb_err (*acquire)(agg_store *s, int64_t exp, int *got, agg_store_seq_state *st);
    void (*release)(agg_store *s, int64_t exp);
    ldpb_err (*fence)(agg_store *s, int64_t exp, int64_t epoch, int *held);
    ldpb_err (*defer)(agg_store *s, const uint8_t *id, size_t id_len, const double *x, size_t nx);
    ldpb_err (*pending)(agg_store *s, int64_t exp, size_t max, agg_store_pending **out, size_t *n);
    ldpb_err (*mark)(agg_store *s, int64_t exp, const agg_store_pending *v, size_t n);
    ldpb_err (*read)(agg_store *s, int64_t exp, uint64_t have_version, agg_store_seq_state *st);
    ldpb_err (*waiting)(agg_store *s, int64_t *ids, size_t max, size_t *n);
} agg_store_seq_ops;

extern const agg_store_seq_ops agg_store_pg_seq_ops;

#endif
