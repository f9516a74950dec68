/* Sequenced experiments (issue 19; docs/aggregator.md, "Sequenced experiments"): on a store that
 * several nodes share (PostgreSQL), an experiment whose statistics do not add across nodes (every
 * central-DP policy) is observed by one node only, its sequencer, chosen by an advisory lock per
 * experiment and fenced by experiments.seq_epoch (store_seq.h).
 *
 *   sequencer  observes its own reports in its batches, as a sole node does, after checking the
 *              fence in the same transaction; and, in a thread of its own (the sequencer
 *              thread), the reports other nodes left unobserved, in their commit order, in fenced
 *              transactions. A fence that fails (another node took the lock and bumped the epoch)
 *              rolls the whole transaction back: the noise drawn for it is never published, the
 *              batch is answered "resend", and the node steps down to follower.
 *   follower   commits each report as a row left to the sequencer (acked after that COMMIT, so an
 *              acked report is durable) and serves the sequencer's last committed state, read
 *              every AGG_SEQ_REFRESH_MS; it polls the lock every AGG_SEQ_POLL_MS and, when the
 *              sequencer's session ends (its process died, or it lost the database), takes it,
 *              bumps the epoch and continues from the last committed state (a takeover: logged
 *              with its timing, counted in /metrics).
 *
 * On SQLite (one node) and for experiments whose statistics add, none of this runs: the committer
 * observes as it always did. */
#ifndef LDPB_AGG_SERVER_SEQ_H
#define LDPB_AGG_SERVER_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "experiment.h"
#include "ldpb/err.h"

struct agg_server;

enum {
    AGG_SEQ_UNATTACHED = 0, /* not yet known: treated as a follower (its rows wait) */
    AGG_SEQ_LEADER = 1,
    AGG_SEQ_FOLLOWER = 2,
};

#define AGG_SEQ_POLL_MS     100 /* a follower tries the lock this often */
#define AGG_SEQ_REFRESH_MS  100 /* a follower re-reads the served state this often */
#define AGG_SEQ_DRAIN_MS    20  /* the sequencer looks for unobserved rows this often */
#define AGG_SEQ_WAITING_MAX 256 /* experiments with waiting rows read per round (more: all) */

/* Whether experiment `e` is sequenced on this server's store: a shared store and a policy whose
 * statistics do not add (central mode). */
int agg_seq_sequenced(struct agg_server *s, const agg_experiment *e);

/* After the experiments are restored (server_restore.c): every sequenced experiment tries its
 * lock; the ones taken continue from the state committed last (read again under the lock), the
 * others are followers. LDPB_EIO, LDPB_ENOMEM, with errmsg. */
ldpb_err agg_seq_attach(struct agg_server *s, char *errmsg);

/* The committer's hook (server_commit.c), inside the batch's transaction, for a sequenced
 * experiment: a follower leaves the batch's new reports of `e` to the sequencer and writes no
 * state (*done = 1: nothing more for `e`); the sequencer checks its fence (*done = 0: observe as
 * usual; LDPB_ESTATE when fenced out, the caller rolls back). */
ldpb_err agg_seq_commit_hook(struct agg_server *s, agg_experiment *e, size_t n, int *done);

/* The sequencer thread, started and joined with the committer. */
ldpb_err agg_seq_start(struct agg_server *s);
void agg_seq_stop(struct agg_server *s);

/* What /metrics shows. */
typedef struct agg_seq_stats {
    uint64_t leader_of, follower_of; /* sequenced experiments by this node's role now */
    uint64_t takeovers;              /* locks taken after another node held them */
    uint64_t last_takeover_ms;       /* the last takeover's gap (see agg_seq_takeover) */
    uint64_t fenced;                 /* transactions refused by the fence, rolled back */
    uint64_t observed_deferred;      /* other nodes' reports observed as the sequencer */
} agg_seq_stats;
void agg_seq_stats_get(struct agg_server *s, agg_seq_stats *o);

void agg_seq_free(struct agg_server *s);

#endif
