/* Several nodes on one PostgreSQL store (docs/aggregator.md, "Several nodes on one PostgreSQL").
 *
 * An additive experiment (its policy has the merge op: its state is a sum of per-report terms)
 * is served by every node at once: each node keeps and commits the partial state of its own
 * reports (store.h, agg_store_put_exp_partial), in the transaction of those reports, and serves
 * the merge of its own partial with the others' last committed ones, read every
 * merge_interval_ms by the committer (agg_cluster_tick). The staleness of what is served (the
 * time from another node's COMMIT of a partial until this node serves it) is sampled at every
 * refresh that brings a new partial; its p99 is in the stats and /metrics.
 *
 * Any other experiment is sequenced (server_seq.h): one node, its sequencer, observes it and the
 * others commit its reports for it; agg_cluster_may_serve keeps the refusal for what can be
 * neither (a non-additive experiment without a sequencer path).
 *
 * Everything here runs on the committer thread (or before the server starts), except
 * agg_cluster_stats. With a SQLite store nothing of it is active. */
#ifndef LDPB_AGG_SERVER_CLUSTER_H
#define LDPB_AGG_SERVER_CLUSTER_H

#include <stdint.h>

#include "experiment.h"
#include "ldpb/err.h"
#include "store.h"

typedef struct agg_server agg_server;
typedef struct agg_cluster agg_cluster;
typedef struct agg_cluster_exp agg_cluster_exp;

/* Whether experiment `e`'s statistics add across nodes: a policy with the merge op, K-armed or
 * contextual (linucb, ldp-linucb-gaussian). */
int agg_cluster_additive(const agg_experiment *e);

/* Whether this node may serve the stored experiment `st` (built as `e`): LDPB_OK, or
 * LDPB_ESTATE with `errmsg` (AGG_SERVER_ERRMAX bytes) where the experiment does not add and its
 * state is another node's. Until a sequencer serves such experiments from any node, this is the
 * one place that decides it. */
ldpb_err agg_cluster_may_serve(agg_server *s, const agg_experiment *e, const agg_store_exp *st,
                               char *errmsg);

/* After the experiments are restored, before the server starts: on a PostgreSQL store, every
 * additive experiment gets its own partial (its restored state) and serves the merge with the
 * other nodes' partials read now. LDPB_ENOMEM; a database that cannot be read now leaves the
 * merge to the next refresh. */
ldpb_err agg_cluster_init(agg_server *s, char *errmsg);
void agg_cluster_fini(agg_server *s);
void agg_cluster_exp_free(agg_cluster_exp *c);

/* The committer's hooks. agg_cluster_own: the instance the committer copies, observes into and
 * saves for experiment `e` (this node's partial), or NULL where that is the served one (an
 * experiment that is not merged). agg_cluster_published: after the COMMIT of a batch that changed
 * the partial (observed into e->next): the partial becomes e->next's, and the served state is
 * rebuilt from it and the others' partials. agg_cluster_refused: a write of `e`'s state was
 * refused as another node's (LDPB_ESTATE): this node stops serving it. */
agg_policy *agg_cluster_own(agg_server *s, agg_experiment *e);
void agg_cluster_published(agg_server *s, agg_experiment *e);
void agg_cluster_refused(agg_server *s, agg_experiment *e);
/* The committer's reload (reload_states): this node's partial of `e` from the database's bytes,
 * and the merge served again. */
ldpb_err agg_cluster_reload(agg_server *s, agg_experiment *e, const uint8_t *blob, size_t len);

/* The committer, between batches: reads the others' partials when merge_interval_ms has passed
 * since the last read, and serves the new merges. agg_cluster_due_us: when that is next (mono
 * microseconds; UINT64_MAX with nothing to merge). */
void agg_cluster_tick(agg_server *s);
uint64_t agg_cluster_due_us(agg_server *s);

/* The staleness of the merged states served (ms): p99 of the last samples (0 with none), the
 * number of samples, the refreshes done. */
void agg_cluster_stats(agg_server *s, uint64_t *p99_ms, uint64_t *samples, uint64_t *refreshes);

#endif
