/* The aggregator service's parts (server.h), shared by the files that hold them:
 *   server.c           setup: construction, start, stop, free, counters, small helpers
 *   server_recv.c      receiving and dispatch: a worker's loop, opening frames, relay batches
 *   server_handlers.c  the request handlers: assign, report, report_and_assign, report_batch,
 *                      status
 *   server_commit.c    the committer: its queue, the group commit, publishing the state
 *   server_reply.c     the reply path: sealing, the collectors of multi-part replies, relay
 *                      replies, the transport's send
 *
 * Locks, always taken in this order and never held across I/O:
 *   seal_mu    the key cache and the replay cache (neither is thread-safe)
 *   exp_mu     the set of experiments (create, stop, reload); the registry's rwlock under it
 *   store_mu   the store handle (a transaction of the committer, or of a create or a stop)
 *   policy_mu  an experiment's served policy, its decision generator, and its policy version
 *   queue_mu   the committer's queue
 * The served policy only ever holds committed states: the committer observes a batch into its
 * own copy ("next", with its own noise source), writes that state in the batch's transaction, and
 * publishes it to the served policy only after the COMMIT succeeds, so no assignment, status or
 * metric is computed from central-DP noise that a failed commit or a crash could discard and a
 * retry draw again (docs/aggregator.md, "Central noise is released once it is durable"). The
 * committer holds policy_mu only to copy the served state out and to publish (a pointer swap);
 * the observes and the SQL run outside it, so assignments keep flowing during an fsync. */
#ifndef LDPB_AGG_SERVER_INTERNAL_H
#define LDPB_AGG_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "assign_token.h"
#include "ctx_policy.h"
#include "experiment.h"
#include "ldpb/detail.h"
#include "ldpb/keyfile.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/relay.h"
#include "ldpb/seal.h"
#include "ldpb/secmem.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "metrics.h"
#include "nonce_log.h"
#include "policy.h"
#include "rand.h"
#include "server.h"
#include "server_cluster.h"
#include "store.h"

/* A worker polls its socket this often, so a stop is noticed within it. */
#define RECV_TIMEOUT_MS 100
/* After a stop, workers keep answering what arrives until a receive times out, at most this
 * long, so requests already on the wire are answered rather than dropped. */
#define DRAIN_MAX_MS 2000
/* The transport may drop replies still queued when it closes: give the last ones this long. */
#define LINGER_MS 200
/* Frames a little above LDPB_FRAME_MAX are received so they can be answered with an error;
 * anything larger makes the listener drop the connection. */
#define RECV_MAX_BYTES    (4 * LDPB_FRAME_MAX)
#define SEND_BUFFER_BYTES (4 << 20)
/* A decision alone does not wake the committer (that cost an fsync per assignment under light
 * load): decisions wait for the next report's transaction, for this long at most, or until this
 * many of them are queued. */
#define DECISION_DELAY_MS 50
#define DECISION_BATCH    256
/* While a worker serves a relay batch's inner frames (enqueue_hold), the committer leaves their
 * reports queued until the last is in, so a batch's reports share one COMMIT and one fdatasync
 * instead of being split at whatever frame the committer woke on; for at most this long after
 * the queue became non-empty, so a slow batch or several workers holding in turn never keep the
 * queue waiting for longer (docs/aggregator.md, "Where the CPU goes", through a relay). */
#define HOLD_MAX_US 2000
/* A privatized Laplace value further than this many noise scales from [0,1] has probability
 * below e^-100 for an honest client: refuse it before it can swamp a sum. */
#define LAPLACE_MAX_SCALES 100.0
/* The committer checks the state directory's free space, and retries a failing commit with an
 * empty transaction, this often even without traffic, so assignments resume by themselves. */
#define HEALTH_CHECK_MS 1000
/* Under load the committer reads the free space (statvfs) before a transaction only when the
 * last reading is this old, or while space is low: at hundreds of commits a second a reading per
 * commit cost about 2% of the committer's CPU, and free space that a commit consumes in 20 ms is
 * far below min_free_mb's default. */
#define SPACE_CHECK_US 20000
/* Decisions deleted by retention per transaction, beyond the batch's own: deleting a large
 * backlog never makes one transaction (and the reports waiting on it) much longer. */
#define PRUNE_CHUNK 1024

/* At most one line per interval for an error that repeats; the rest are counted. */
typedef struct log_limit {
    uint64_t last_us;    /* when the last line was logged; 0: never */
    uint64_t suppressed; /* occurrences not logged since */
} log_limit;

typedef enum item_kind { ITEM_REPORT = 1, ITEM_DECISION = 2 } item_kind;

/* One entry of the committer's queue. */
typedef struct item {
    item_kind kind;
    agg_experiment *exp; /* the experiment it belongs to */
    int expired;         /* report received after the assignment's expiry */
    agg_token tok;
    uint8_t id[AGG_TOKEN_BYTES];
    double value;
    /* contextual reports: the assigned arm's d features (malloc'd; answer_report frees them) */
    double *x;
    uint64_t at_ms;
    /* reports: how to answer */
    uint8_t client_pk[LDPB_KEY_BYTES];
    ldpb_seal_key key;
    uint64_t request_id;
    int has_request_id;
    agg_reply_to to;
    /* Non-NULL: the report is one of a report_and_assign or a report_batch, whose one reply the
     * collector sends once its last report is answered (key and to above are then unused). */
    struct collector *coll;
    uint32_t slot;
} item;

/* A report answered after its commit, waiting for a replier (the reply stage). */
typedef struct reply_job {
    item it;
    int status; /* as batch_status, or LDPB_EIO for a failed commit */
} reply_job;

struct agg_worker {
    ldpb_rng *rng;
    uint8_t pt[LDPB_PLAINTEXT_MAX];
    uint8_t enc[LDPB_PLAINTEXT_MAX];
    uint8_t frame[LDPB_FRAME_MAX];
    agg_arm_status *arms;
    Ldpb__V1__ArmStatus *arm_msgs;
    Ldpb__V1__ArmStatus **arm_ptrs;
    uint32_t arms_cap;
    /* Non-NULL while do_assign runs for a report_and_assign: its reply is kept, not sent. */
    struct collector *capture;
    ldpb_relay_entry relay_in[LDPB_RELAY_ENTRIES_MAX]; /* a relay batch's inner frames */
};

struct agg_server {
    const agg_config *cfg;
    agg_log_fn log;
    void *log_ctx;
    agg_send_fn send;
    void *send_ctx;

    ldpb_keypair kp;
    agg_token_key token_key;
    ldpb_keycache *kc;
    ldpb_replay *rp;
    agg_nonce_log *nlog;    /* the replay window across restarts (nonce_log.h) */
    int replay_full_logged; /* under seal_mu */
    /* under seal_mu: mono_us() of the last warning that the derivation budget was spent */
    uint64_t budget_warned_us;
    pthread_mutex_t seal_mu;

    agg_store *store;
    agg_cluster *cluster; /* server_cluster.h: NULL with a SQLite store */
    /* The experiments (experiment.h); `def` is "default" (NULL if the configuration has none).
     * exp_mu serializes what changes the set (a create, a stop, a reload) and guards seed_rng. */
    agg_exp_registry exps;
    agg_experiment *def;
    pthread_mutex_t exp_mu;
    ldpb_rng *seed_rng;
    /* The store is one handle: the committer's transactions and an operator's change take turns. */
    pthread_mutex_t store_mu;
    uint8_t *admins; /* the admin list's keys, LDPB_KEY_BYTES each */
    size_t n_admins;

    /* the committer's queue: a ring of items */
    item *q;
    size_t q_cap, q_head, q_count;
    size_t q_reports;            /* reports among the queued items */
    uint64_t q_waiting_since_us; /* mono_us() when the queue became non-empty or was last drained */
    size_t q_holds;              /* workers inside enqueue_hold .. enqueue_release */
    pthread_mutex_t queue_mu;
    pthread_cond_t queue_cv;
    int committer_stop;

    /* committer-only state */
    item *batch;
    int *batch_status; /* per item: 0 new, 1 duplicate, else an ldpb_err to answer */
    /* The order in which a batch's rows are written: by table, then assignment id (write_rows) */
    const item **batch_order;
    agg_store_batch_row *batch_rows; /* the batch's rows in that order (agg_store_write_batch) */
    uint8_t *save_buf, *snap_buf;
    size_t save_cap, snap_cap;
    agg_worker *cw;
    agg_experiment **touched; /* the experiments of the batch (batch_max of them at most) */
    size_t n_touched;
    log_limit commit_log;
    log_limit refusal_log; /* committer only: reports the policy refused */
    /* Why assignments are refused (docs/aggregator.md, "Retention and a full disk"): the last
     * transaction failed, or state_dir has less than min_free_mb free. Set and cleared by the
     * committer, read by the workers. */
    atomic_int commits_failing, space_low;
    uint64_t space_checked_us; /* committer only: check_space's last reading (mono_us) */
    /* The committer's generators, shared by every experiment's `next` (only the committer draws
     * from them): the only source of central noise in the service. */
    ldpb_rng *next_rng, *next_noise_rng;
    agg_rand next_rand;
    agg_noise *next_noise;

    /* The reply stage (docs/aggregator.md, "The pipeline"): the committer hands each batch's
     * answers to the repliers, which seal and send them, so the serial section ends with the
     * publish. Without repliers (repliers = 0, or a server not started) the committer answers. */
    reply_job *rj; /* a ring */
    size_t rj_cap, rj_head, rj_count;
    pthread_mutex_t reply_mu;
    pthread_cond_t reply_cv;      /* jobs waiting, or reply_stop */
    pthread_cond_t reply_room_cv; /* room for the next batch */
    int reply_stop;
    pthread_t *repliers;
    struct worker_arg *replier_args;
    size_t n_repliers;

    /* transport */
    /* One listener per listen URL, while started: each is its own socket (its own lock), served by
     * its own workers; a request's reply leaves through the listener it came from (the
     * agg_reply_to's tag is the listener's index). */
    ldpb_tp *tps[AGG_LISTEN_MAX];
    size_t n_tps;
    int started;
    atomic_int stopping;
    pthread_t *workers;
    struct worker_arg *worker_args;
    size_t want_workers; /* max(workers, listen URLs) */
    size_t n_workers;
    pthread_t committer;
    int committer_running;
    agg_metrics *metrics;

    /* counters */
    atomic_uint_fast64_t n_requests, n_status, n_plain_errors, n_errors[32];
    atomic_uint_fast64_t n_assignments, n_reports, n_duplicates;
    atomic_uint_fast64_t n_batches, n_batch_items, n_commit_failures, commit_us;
    atomic_uint_fast64_t n_commit_retries; /* transactions run again after a deadlock */
    atomic_uint_fast64_t commit_hist[AGG_COMMIT_BUCKETS + 1]; /* per bucket, +Inf last */
    atomic_uint_fast64_t commit_phase_us[AGG_COMMIT_PHASES];
    uint64_t txn_phase_us[AGG_COMMIT_PHASES]; /* the committer's: its last transaction's */
    atomic_uint_fast64_t n_decisions_dropped, n_send_failures;
    atomic_uint_fast64_t n_relay_batches;
    atomic_uint_fast64_t n_multi_exp_batches;
    atomic_uint_fast64_t n_decisions_deleted, n_decision_rows, free_bytes;

    /* issue 19: the sequencer thread of sequenced experiments (server_seq.h) */
    struct agg_seq *seq;
};

#define say(out, ...) ldpb_detailf((out), AGG_SERVER_ERRMAX, __VA_ARGS__)

/* ---- report_and_assign and report_batch ---------------------------------------------------- */

/* One reply for several reports (a batch) or for a report and an assignment. The worker that
 * receives the request holds one reference until it has queued every report, and each queued
 * report holds one; whoever drops the last sends the reply and frees the collector, so the reply
 * goes out exactly once, after the last report is durable (or refused), on whichever thread
 * that is. */
typedef struct slot_result {
    int status;    /* the committer's answer: 0 counted, 1 duplicate, else an ldpb_err */
    uint32_t code; /* nonzero: refused before the committer (LDPB_EINVAL is 1, hence apart) */
    uint8_t id_len;
    uint8_t id[LDPB_WIRE_ID_MAX];
} slot_result;

typedef struct collector {
    atomic_uint left;
    int is_batch;
    uint8_t client_pk[LDPB_KEY_BYTES];
    ldpb_seal_key key;
    uint64_t request_id;
    int has_request_id;
    agg_reply_to to;
    /* report_and_assign: what do_assign answered, captured */
    int captured;
    Ldpb__V1__Assignment a;
    uint8_t a_id[AGG_TOKEN_BYTES];
    uint32_t err_code;
    char err_reason[LDPB_WIRE_STRING_MAX + 1];
    /* the captured assignment's decision, counted and logged only if the reply carries it */
    int decision_held;
    item decision;
    uint32_t n;
    slot_result slots[];
} collector;

/* ---- relay batches ----------------------------------------------------------------------- */

/* One relay batch in flight (docs/protocol.md section 11): its inner frames run through
 * handle_frame like direct ones, each with a reply_to naming this collector and its slot, and
 * the replies gather here. A report's reply comes from the committer after its COMMIT, so the
 * batch is answered when the last reply arrives, from whichever thread delivers it. */
typedef struct relay_batch {
    pthread_mutex_t mu;
    size_t outstanding; /* replies still to come; +1 while the worker is dispatching */
    size_t n;
    agg_reply_to to;         /* the relay's */
    ldpb_relay_entry *slots; /* the relay's ids; the replies, as they arrive */
    uint8_t **copies;        /* owned copies of the replies (NULL: not yet, or no memory) */
} relay_batch;

typedef struct worker_arg {
    agg_server *s;
    agg_worker *w;
    size_t listener; /* workers: the index of the listener it receives on */
} worker_arg;

/* server.c: small helpers */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void logf_(agg_server *s, int level, const char *fmt, ...);
uint64_t mono_us(void);
int log_limit_pass(log_limit *l, uint64_t interval_s, uint64_t *suppressed);
void count_error(agg_server *s, ldpb_err code);

/* server_reply.c: the reply path */
/* An empty reply envelope of this protocol version that echoes the request's id (the caller
 * sets the body). */
Ldpb__V1__Envelope reply_envelope(int has_request_id, uint64_t request_id);
void send_plain_error(agg_server *s, agg_worker *w, agg_reply_to to, ldpb_err code,
                      const char *reason);
void send_sealed(agg_server *s, agg_worker *w, agg_reply_to to,
                 const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                 Ldpb__V1__Envelope *env);
void send_sealed_error(agg_server *s, agg_worker *w, agg_reply_to to,
                       const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                       uint64_t request_id, int has_request_id, ldpb_err code, const char *reason);
collector *collector_new(uint32_t n, const uint8_t *client_pk, const ldpb_seal_key *key,
                         const Ldpb__V1__Envelope *req, agg_reply_to to);
void collector_settle(agg_server *s, agg_worker *w, struct collector *c, uint32_t slot, int status);
void answer_report(agg_server *s, agg_worker *w, item *it, int status);
/* The answers of s->batch[0..n): each report's batch_status, or `failed` for all when it is not
 * LDPB_OK (LDPB_EIO, or LDPB_EBUSY while the database is unreachable); handed to the repliers
 * when they run. */
void answer_batch(agg_server *s, size_t n, ldpb_err failed);
void *replier_main(void *arg);
void relay_finish(agg_server *s, relay_batch *b);
void tp_send_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len);

/* server_handlers.c: one request each, answered exactly once (now or after the commit) */
void do_assign(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);
void do_report(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);
void do_report_and_assign(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                          const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);
void do_report_batch(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                     const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);
void do_status(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);

/* server_admin.c: experiments at run time */
void do_experiment_command(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                           const ldpb_seal_key *key, const Ldpb__V1__Envelope *req);
/* Under exp_mu: starts experiment ec (or resumes it, stopped with equal settings); refuses a
 * change of a known one's settings (LDPB_ESTATE) and experiments_max (LDPB_ERANGE). Durable
 * (committed) before it returns. */
ldpb_err exp_start(agg_server *s, const agg_exp_config *ec, int from_config, agg_experiment **out,
                   char *errmsg);
/* Under exp_mu: stops `e` (durable before it returns); its state stays. */
ldpb_err exp_stop(agg_server *s, agg_experiment *e, char *errmsg);

/* server_restore.c: agg_exp_config_change_refused, with the parameters the policy does not read
 * free to differ (they cannot change what its state means). */
int exp_change_refused(const agg_exp_config *running, const agg_exp_config *want, char *why);
/* server_restore.c: every stored experiment restored (or refused: a configured one whose
 * settings changed), every configured one not yet stored added; one transaction for the rows. */
ldpb_err restore_experiments(agg_server *s, const agg_config *cfg, char *errmsg);
/* The committer, holding store_mu, when agg_store_needs_reload: every experiment's state and
 * counters again from the database (a COMMIT in doubt went through), then agg_store_reloaded. */
ldpb_err reload_states(agg_server *s);

/* server_recv.c: a worker thread's loop */
void *worker_main(void *arg);

/* server_commit.c: the committer's queue and thread */
/* Saves policy p into *buf, grown as needed (the committer's and the sequencer's buffers). */
ldpb_err save_policy(const agg_policy *p, uint8_t **buf, size_t *cap, size_t *len);
int enqueue(agg_server *s, const item *it, size_t limit);
/* Around the inner frames of one relay batch: what they enqueue is committed together once the
 * release comes (or HOLD_MAX_US after the queue became non-empty, whichever is first). */
void enqueue_hold(agg_server *s);
void enqueue_release(agg_server *s);
/* Counts an assignment that goes out and queues its decision row (best effort). */
void count_decision(agg_server *s, const item *it);
/* A ReportAndAssign's next assignment goes out only with the Ack of its report (docs/protocol.md
 * section 6): while do_assign runs for one, its decision waits in the collector, and
 * release_decision counts and logs it when the reply that carries it is built. An assignment that
 * is never delivered (the report refused at commit: expired, refused by the policy, the queue
 * full) is neither counted nor logged. hold_decision returns 1 if held (c not NULL). */
int hold_decision(struct collector *c, const item *it);
void release_decision(agg_server *s, struct collector *c);
void check_space(agg_server *s);
/* check_space while space is low, else unless the last reading is younger than SPACE_CHECK_US. */
void check_space_due(agg_server *s);
void *committer_main(void *arg);

#endif
