/* One experiment of the service (docs/aggregator.md, "Experiments"): a learning problem with its
 * own policy, its own committed state and counters, served under a name next to others. What was
 * the whole service's policy state sits here, once per experiment; what is the service's (keys,
 * queues, the committer's buffers and noise source, the transport) stays in agg_server.
 *
 * Memory: an idle experiment holds its settings, two instances of its policy (the served one and
 * the committer's copy, swapped on publish) and, in central mode only, the served instance's noise
 * source. The committer's generators and buffers are the server's, shared by every experiment.
 *
 * The registry maps names to experiments: a sorted array of pointers under a read-write lock,
 * taken for reading by every request's lookup and for writing only to add one. Experiments are
 * never freed while the server lives (a stopped one keeps its state), so a pointer looked up stays
 * valid without the lock. */
#ifndef LDPB_AGG_EXPERIMENT_H
#define LDPB_AGG_EXPERIMENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ldpb/ctxstat.h"
#include "ldpb/err.h"
#include "ldpb/mech_table.h"
#include "ldpb/rng.h"
#include "policy.h"
#include "rand.h"
#include "store.h"

#define AGG_EXPERIMENT_DEFAULT "default"

/* Room for an experiment's settings text (agg_exp_config_format). */
#define AGG_EXP_SETTINGS_MAX 4096

typedef struct agg_experiment {
    agg_exp_config ec; /* its settings (owned copy); ec.name is its name */
    int64_t store_id;  /* experiments.id in the store; 0 = the default experiment's row */
    atomic_int running;
    /* ec.decision_retention_s as the committer reads it: a reload may change it meanwhile */
    atomic_uint_fast64_t retention_s;
    int from_config; /* declared by the configuration (else created at run time) */
    int declared;    /* committer-free scratch for a reload: still in the configuration */
    int diverged;    /* several nodes: its settings in the database are not this node's (under
                        exp_mu): not served here until a restart */
    size_t index;    /* position in declaration/creation order */

    agg_policy *policy; /* served: always a committed state */
    agg_policy *next;   /* the committer's copy, until its COMMIT publishes it (a swap) */
    pthread_mutex_t policy_mu;
    agg_rand rand;       /* the served instance's decisions */
    ldpb_rng *noise_rng; /* central mode only: the served instance's noise source (never drawn */
    agg_noise *noise;    /* by choose(), but required by it) */
    uint64_t policy_version; /* under policy_mu */
    int mc_propensity;       /* ops->choose_is_draw without ops->propensity */
    int contextual;          /* ctx_policy.h */
    int local_ctx;           /* the local contextual mode: devices choose */
    /* A contextual policy's feature dimension, fixed when the experiment is built: workers read
     * it without policy_mu, which they could not do through `policy` (the committer swaps it). */
    uint32_t ctx_d;
    /* Likewise fixed at build: the two instances' operations (one table), and in the local
     * contextual mode the device mechanism of the first instance, which is never changed after
     * it is made and lives as long as the experiment, whichever instance is served. */
    const agg_policy_ops *ops;
    const ldpb_ctxstat *ctx_mech;
    int wire_mechanism; /* what every assignment asks for */
    double wire_epsilon;
    const ldpb_mech_desc *wire_desc;

    /* Several nodes on one PostgreSQL (server_cluster.h), committer only: this node's partial
     * state and the other nodes' of an additive experiment; NULL otherwise. */
    struct agg_cluster_exp *cl;

    agg_store_counters committed;                                /* committer only */
    atomic_uint_fast64_t n_reports, n_duplicates, n_assignments; /* this node's */
    /* Several nodes, an additive experiment: the other nodes' counts as the last merge refresh
     * read them from their partial states (server_cluster.c); 0 otherwise. A sequenced one
     * (counts_db set once read): peer_duplicates and peer_assignments are the other nodes' to
     * add while this node is its sequencer, follow_* while it follows (store.h's
     * agg_store_counts). */
    atomic_uint_fast64_t peer_reports, peer_duplicates, peer_assignments;
    atomic_uint_fast64_t follow_duplicates, follow_assignments;
    atomic_int counts_db;

    /* committer only, during one batch */
    int touched, observed;
    uint64_t b_new, b_dup;
    agg_store_counters pending; /* what the batch's transaction stores, published after COMMIT */

    /* issue 19, sequenced experiments (server_seq.h): this node's role (AGG_SEQ_*), its fencing
     * version while it is the sequencer (under the server's store_mu), a fence failure for the
     * sequencer thread to act on, and that thread's own timers. */
    atomic_int seq_role;
    int64_t seq_epoch;
    atomic_int seq_deposed;
    uint64_t seq_next_try_us, seq_next_refresh_us;
} agg_experiment;

/* Builds an experiment from checked settings (copied): its policy instances, the served
 * instance's generator (seeded from `seed`, which the caller serializes) and, in central mode, its
 * noise source. LDPB_EINVAL (the policy refuses the settings), LDPB_ENOMEM, LDPB_ECRYPTO; `errmsg`
 * (AGG_SERVER_ERRMAX bytes) says which. */
ldpb_err agg_experiment_new(agg_experiment **out, const agg_exp_config *ec, ldpb_rng *seed,
                            char *errmsg);
void agg_experiment_free(agg_experiment *e);

/* Restores a stored state blob into both instances and sets the counters. */
ldpb_err agg_experiment_restore(agg_experiment *e, const uint8_t *blob, size_t len,
                                const agg_store_counters *c);

/* The experiment's counts across the nodes of a shared store, for ldpb status and the operator's
 * ExperimentInfo: this node's own plus the other nodes' as last read (each report counted once:
 * each node's partial counts only the reports it took). On one node, this node's. */
void agg_experiment_counts(const agg_experiment *e, uint64_t *reports, uint64_t *duplicates,
                           uint64_t *assignments);

/* 1 if `name` is NULL, empty or "default". */
int agg_experiment_is_default_name(const char *name);

typedef struct agg_exp_registry {
    pthread_rwlock_t mu;
    agg_experiment **by_name;  /* sorted by name */
    agg_experiment **by_order; /* in declaration/creation order */
    size_t n, cap;
} agg_exp_registry;

void agg_registry_init(agg_exp_registry *r);
/* Frees every experiment. */
void agg_registry_fini(agg_exp_registry *r);
/* The experiment named `name`, running or not; NULL if none. */
agg_experiment *agg_registry_find(agg_exp_registry *r, const char *name);
/* Adds `e` (its name not yet present): LDPB_OK, LDPB_ENOMEM, LDPB_ESTATE (the name is taken). */
ldpb_err agg_registry_add(agg_exp_registry *r, agg_experiment *e);
/* The number of experiments and the i-th in declaration/creation order (i < n, read-locked). */
size_t agg_registry_count(agg_exp_registry *r);
agg_experiment *agg_registry_at(agg_exp_registry *r, size_t i);
/* Up to `max` experiments whose names sort bytewise after `after` (NULL or "": from the first),
 * in name order, into out; their number. *more: others follow. */
size_t agg_registry_page(agg_exp_registry *r, const char *after, agg_experiment **out, size_t max,
                         int *more);

#endif
