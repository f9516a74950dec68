/* The aggregator service as a library (main.c is a thin shell over it): the request handler that
 * opens sealed frames and answers assign, report and status requests; the committer that makes
 * reports durable in groups before acknowledging them; and the transport (a listener of
 * ldpb/transport.h bound to every listen URL, served by several worker threads).
 *
 * Every request is answered exactly once: a frame that cannot be authenticated with a
 * PLAIN_ERROR frame, anything after the frame opens with a sealed Envelope (Assignment, Ack,
 * Status or Error with a code and a reason). docs/aggregator.md describes the design.
 *
 * Threads: agg_server_handle may run on many threads at once, each with its own agg_worker;
 * agg_server_commit_batch runs on one thread at a time (the committer, or the caller when the
 * server was not started). */
#ifndef LDPB_AGG_SERVER_H
#define LDPB_AGG_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ldpb/err.h"
#include "policy.h"
#include "store.h"

#define AGG_SERVER_ERRMAX 512

typedef struct agg_server agg_server;
typedef struct agg_worker agg_worker;

/* A log line: `level` is an agg_log_level, `msg` one line without a newline. Called from any
 * server thread; must be thread-safe. */
typedef void (*agg_log_fn)(void *ctx, int level, const char *msg);

/* Where a reply goes: the transport's handle for one received request. */
typedef struct agg_reply_to {
    void *route;  /* the transport's reply route (ldpb_tp_route), opaque */
    uint64_t tag; /* embedders' own tag (tests, fuzzing) */
} agg_reply_to;

/* Tags with this bit are the server's own: a reply_to of an inner frame of a relay batch, whose
 * route is the batch's reply collector (server_reply.c). Embedders' tags leave it clear. */
#define AGG_REPLY_RELAY (UINT64_C(1) << 63)

/* Delivers the reply `frame` for `to`. Called exactly once per handled request, from a worker or
 * from the committer; it owns `to` from then on (frees the header whether or not it sends). */
typedef void (*agg_send_fn)(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len);

#define AGG_COMMIT_BUCKETS 13

/* A committed transaction's phases, timed apart (ldpb_commit_phase_seconds_total): */
enum {
    AGG_PHASE_ROWS,    /* BEGIN and the report and decision rows (the shards' writers, if any) */
    AGG_PHASE_OBSERVE, /* the policies' observe, the states' write, retention */
    AGG_PHASE_COMMIT,  /* COMMIT: the shards' and then aggregator.db's, with their fdatasyncs */
    AGG_COMMIT_PHASES
};
extern const char *const agg_commit_phase_names[AGG_COMMIT_PHASES];

typedef struct agg_server_stats {
    uint64_t requests;        /* frames handled */
    uint64_t assignments;     /* assignments issued (persisted across restarts) */
    uint64_t reports;         /* reports counted (= policy version) */
    uint64_t duplicates;      /* resent reports acked as duplicates */
    uint64_t status;          /* status replies */
    uint64_t plain_errors;    /* PLAIN_ERROR replies (frame not authenticated) */
    uint64_t errors[32];      /* sealed Error replies by code (ldpb_err) */
    uint64_t batches;         /* committed transactions */
    uint64_t batch_items;     /* reports and decisions in them */
    uint64_t commit_failures; /* transactions rolled back */
    uint64_t commit_retries;  /* transactions the database ended (deadlock), run again */
    uint64_t commit_us;       /* total time in commit, microseconds */
    /* that time by phase (AGG_PHASE_*): where a node bound by its transactions spends them */
    uint64_t commit_phase_us[AGG_COMMIT_PHASES];
    uint64_t decisions_dropped; /* decisions not logged because the queue was full */
    uint64_t send_failures;     /* replies the transport could not send */
    uint64_t relay_batches;     /* relay batches accepted (their inner frames are in requests) */
    uint64_t queue_depth;       /* items waiting for the committer now */
    uint64_t multi_experiment_batches; /* committed transactions holding items of more than one
                                          experiment */
    uint64_t experiments;              /* experiments known (running or stopped) */
    uint64_t experiments_running;
    /* committed transactions by duration: [b] counts those above bucket b-1's bound and at most
     * agg_commit_bucket_us[b]; the last slot those above every bound */
    uint64_t commit_hist[AGG_COMMIT_BUCKETS + 1];
    uint64_t replay_entries;   /* nonces remembered now */
    uint64_t replay_evicted;   /* nonces forgotten early because the replay cache was full */
    uint64_t replay_window_ms; /* how far behind the aggregator's clock a request may be now:
                                  replay_window_s, or less while the cache is full */
    /* the disk (docs/aggregator.md, "Retention and a full disk") */
    uint64_t assignments_paused; /* 1 while assignments are refused (commits fail or state_dir
                                    is below min_free_mb) */
    uint64_t decisions_deleted;  /* decisions removed by retention */
    uint64_t decision_rows;      /* decisions the propensity log holds */
    uint64_t free_bytes;         /* free space in state_dir at the last check */

    /* several nodes on one PostgreSQL (server_cluster.h): the staleness of the merged states
     * served, ms from another node's COMMIT until served here (p99 of the last 4096 samples),
     * the samples, the reads of the other nodes' partials */
    uint64_t merge_staleness_p99_ms;
    uint64_t merge_staleness_samples;
    uint64_t merge_refreshes;

    uint64_t key_derivations;         /* X25519 derivations for keys not in the key cache */
    uint64_t key_derivations_refused; /* frames refused (LDPB_EBUSY) by the derivation budget */
} agg_server_stats;

/* Upper bounds (microseconds) of the commit duration histogram's buckets. */
extern const double agg_commit_bucket_us[AGG_COMMIT_BUCKETS];

/* Builds a server from a checked config (agg_config_check): loads the secret key and the
 * allow-list, opens the state in state_dir (refusing another configuration's state), creates the
 * policy and restores it. Nothing is bound and no thread runs until agg_server_start. Errors:
 * LDPB_EINVAL / LDPB_ERANGE (the config, or a file or directory it names: the key, the
 * allow-list, the state directory), LDPB_EIO, LDPB_ECRYPTO, LDPB_ESTATE (state of another
 * configuration, or in use), LDPB_ECORRUPT, LDPB_ENOMEM; `errmsg` (AGG_SERVER_ERRMAX
 * bytes) says what and where. `cfg` must outlive the server. `log` may be NULL. */
ldpb_err agg_server_new(agg_server **out, const agg_config *cfg, agg_log_fn log, void *log_ctx,
                        char *errmsg);

/* Replaces the transport for replies (before agg_server_start, or instead of it): tests and the
 * fuzz target collect replies in memory. */
void agg_server_set_sender(agg_server *s, agg_send_fn send, void *ctx);

/* Binds the listen URLs, starts the workers, the committer and the metrics endpoint. Errors:
 * LDPB_EINVAL (a listen URL the transport refuses: bad syntax, unknown interface, no permission),
 * LDPB_ETRANSPORT (a URL cannot be bound now: address in use; `errmsg` names it), LDPB_EIO (metrics
 * address), LDPB_ENOMEM, LDPB_ESTATE (already started). On failure everything started is stopped.
 */
ldpb_err agg_server_start(agg_server *s, char *errmsg);

/* Drains and stops: workers answer what has arrived (up to a short deadline), the committer
 * commits and acks everything queued, then the sockets close. Safe to call once started; a
 * no-op otherwise. */
void agg_server_stop(agg_server *s);

/* Stops if needed, closes the state and frees everything (keys wiped). Accepts NULL. */
void agg_server_free(agg_server *s);

/* A worker's private buffers and generator. LDPB_ENOMEM, LDPB_ECRYPTO. */
ldpb_err agg_worker_new(agg_worker **out);
void agg_worker_free(agg_worker *w);

/* Handles one received message (`len` bytes, any content) and answers it through the sender:
 * at once, or (a valid report) once the committer has made it durable. Never fails. */
void agg_server_handle(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len,
                       agg_reply_to to);

/* Commits one batch of what is queued (up to batch_max items) and sends its replies. Returns the
 * number of items processed (0 if the queue was empty). Only for servers not started (the
 * committer thread does this otherwise). */
size_t agg_server_commit_batch(agg_server *s);

/* Tests only: while `on`, every commit fails as on a full disk (agg_store_inject_disk_full).
 * Only for servers not started, from the thread that calls agg_server_commit_batch. */
void agg_server_inject_disk_full(agg_server *s, int on);
/* For fault-injection tests: runs `fn` between a batch's observes and its COMMIT (see
 * agg_store_set_commit_hook). Only while no committer thread runs. */
void agg_server_set_commit_hook(agg_server *s, agg_store_commit_hook fn, void *ctx);

/* Applies a re-read configuration's experiments (SIGHUP): new ones start, stopped ones declared
 * again with equal settings resume, the configuration-declared ones no longer declared stop
 * (their state is kept; runtime-created ones are untouched), and a change of a running one's
 * settings is refused and logged, leaving it as it runs (only its decision retention may change).
 * Service settings are not reloaded: those that differ are logged. `next` may be freed after.
 * LDPB_OK, or LDPB_ESTATE if *refused > 0 changes were refused. */
ldpb_err agg_server_reload(agg_server *s, const agg_config *next, size_t *refused);

/* A snapshot of the counters. */
void agg_server_stats_get(agg_server *s, agg_server_stats *out);

/* One experiment's counters for /metrics. */
typedef struct agg_exp_stats {
    char name[65];
    uint64_t reports, duplicates, assignments;
    int running;
} agg_exp_stats;

/* The counters of the first `max` experiments in declaration/creation order into out[0..),
 * their number returned; the others' counters summed into *rest (name "_other"), their number
 * in *n_rest. */
size_t agg_server_experiment_stats(agg_server *s, agg_exp_stats *out, size_t max,
                                   agg_exp_stats *rest, size_t *n_rest);
/* How many experiments get labelled series on /metrics (metrics_experiments_max). */
size_t agg_server_metrics_experiments_max(const agg_server *s);

/* The default experiment's number of arms (0 if there is none), and its served policy's per-arm
 * state (pulls, estimate, interval) into arms[0..k) for k at least that number, under the policy
 * lock (a scrape waits at most for the committer's copy of the state). The served state is always a
 * committed one. LDPB_ERANGE if k is too small; the policy's describe() errors. */
uint32_t agg_server_arms(const agg_server *s);
ldpb_err agg_server_describe(agg_server *s, agg_arm_status *arms, uint32_t k);

#endif
