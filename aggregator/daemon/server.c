/* The aggregator service (server.h): request handling, the group-commit pipeline and the nanomsg
 * transport.
 *
 * Locks, always taken in this order and never held across I/O:
 *   seal_mu    the key cache and the replay cache (neither is thread-safe)
 *   policy_mu  the served policy, its decision generator, and the policy version
 *   queue_mu   the committer's queue
 * The served policy only ever holds committed states: the committer observes a batch into its
 * own copy ("next", with its own noise source), writes that state in the batch's transaction, and
 * publishes it to the served policy only after the COMMIT succeeds, so no assignment, status or
 * metric is computed from central-DP noise that a failed commit or a crash could discard and a
 * retry draw again (docs/aggregator.md, "Central noise is released once it is durable"). The
 * committer holds policy_mu only to copy the served state out and to publish (a pointer swap);
 * the observes and the SQL run outside it, so assignments keep flowing during an fsync. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <sodium.h>

#include "assign_token.h"
#include "ctx_policy.h"
#include "ldpb/detail.h"
#include "ldpb/keyfile.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/relay.h"
#include "ldpb/seal.h"
#include "ldpb/secmem.h"
#include "ldpb/wire.h"
#include "metrics.h"
#include "nonce_log.h"
#include "policy.h"
#include "rand.h"
#include "server.h"
#include "store.h"

/* A worker polls its socket this often, so a stop is noticed within it. */
#define RECV_TIMEOUT_MS 100
/* After a stop, workers keep answering what arrives until a receive times out, at most this
 * long, so requests already on the wire are answered rather than dropped. */
#define DRAIN_MAX_MS 2000
/* nanomsg drops messages still queued when a socket closes: give the last replies this long. */
#define LINGER_MS 200
/* Frames a little above LDPB_FRAME_MAX are received so they can be answered with an error;
 * anything larger is cut off by nanomsg (the connection is dropped). */
#define RECV_MAX_BYTES    (4 * LDPB_FRAME_MAX)
#define SEND_BUFFER_BYTES (4 << 20)
/* A decision alone does not wake the committer (that cost an fsync per assignment under light
 * load): decisions wait for the next report's transaction, for this long at most, or until this
 * many of them are queued. */
#define DECISION_DELAY_MS 50
#define DECISION_BATCH    256
/* A privatized Laplace value further than this many noise scales from [0,1] has probability
 * below e^-100 for an honest client: refuse it before it can swamp a sum. */
#define LAPLACE_MAX_SCALES 100.0
/* The committer checks the state directory's free space, and retries a failing commit with an
 * empty transaction, this often even without traffic, so assignments resume by themselves. */
#define HEALTH_CHECK_MS 1000
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
    int expired; /* report received after the assignment's expiry */
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
    agg_policy *policy; /* served: always a committed state (choose() may move its cursor) */
    int mc_propensity;  /* ops->choose_is_draw: estimate the propensity by repeated draws */
    int contextual;     /* ctx_policy.h: assignments need the request's K x d features */
    int local_ctx; /* ... or, for the local contextual mode, hand out the model (devices choose) */
    ldpb_rng *policy_rng, *noise_rng;
    agg_rand rand;
    agg_noise *noise; /* the served policy's: choose() requires one but never draws from it */
    uint64_t policy_version; /* under policy_mu: reports the served (committed) state counts */
    pthread_mutex_t policy_mu;
    int wire_mechanism; /* what every assignment asks for */
    double wire_epsilon;
    const char *mech_name;
    /* The mechanism table's row of wire_mechanism. */
    const ldpb_mech_desc *wire_desc;

    /* the committer's queue: a ring of items */
    item *q;
    size_t q_cap, q_head, q_count;
    size_t q_reports;            /* reports among the queued items */
    uint64_t q_waiting_since_us; /* mono_us() when the queue became non-empty or was last drained */
    pthread_mutex_t queue_mu;
    pthread_cond_t queue_cv;
    int committer_stop;

    /* committer-only state */
    item *batch;
    int *batch_status; /* per item: 0 new, 1 duplicate, else an ldpb_err to answer */
    uint8_t *save_buf, *snap_buf;
    size_t save_cap, snap_cap;
    agg_worker *cw;
    agg_store_counters committed;
    log_limit commit_log;
    log_limit refusal_log; /* committer only: reports the policy refused */
    /* Why assignments are refused (docs/aggregator.md, "Retention and a full disk"): the last
     * transaction failed, or state_dir has less than min_free_mb free. Set and cleared by the
     * committer, read by the workers. */
    atomic_int commits_failing, space_low;
    agg_policy *next; /* the served state plus the batch, until its COMMIT publishes it (then
                         the two instances swap) */
    ldpb_rng *next_rng, *next_noise_rng;
    agg_rand next_rand;
    agg_noise *next_noise; /* the only source of central noise in the service */

    /* transport */
    int sock;
    int started;
    atomic_int stopping;
    pthread_t *workers;
    struct worker_arg *worker_args;
    size_t n_workers;
    pthread_t committer;
    int committer_running;
    agg_metrics *metrics;

    /* counters */
    atomic_uint_fast64_t n_requests, n_status, n_plain_errors, n_errors[32];
    atomic_uint_fast64_t n_assignments, n_reports, n_duplicates;
    atomic_uint_fast64_t n_batches, n_batch_items, n_commit_failures, commit_us;
    atomic_uint_fast64_t commit_hist[AGG_COMMIT_BUCKETS + 1]; /* per bucket, +Inf last */
    atomic_uint_fast64_t n_decisions_dropped, n_send_failures;
    atomic_uint_fast64_t n_relay_batches;
    atomic_uint_fast64_t n_decisions_deleted, n_decision_rows, free_bytes;
};

/* ---- small helpers ----------------------------------------------------------------------- */

const double agg_commit_bucket_us[AGG_COMMIT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
logf_(agg_server *s, int level, const char *fmt, ...)
{
    if (!s->log || level > s->cfg->log_level)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->log(s->log_ctx, level, buf);
}

#define say(out, ...) ldpb_detailf((out), AGG_SERVER_ERRMAX, __VA_ARGS__)

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* 1 if a line may be logged now; *suppressed gets the occurrences swallowed since the last. */
static int log_limit_pass(log_limit *l, uint64_t interval_s, uint64_t *suppressed)
{
    uint64_t now = mono_us();
    if (l->last_us && now - l->last_us < interval_s * 1000000u) {
        l->suppressed++;
        return 0;
    }
    *suppressed = l->suppressed;
    l->suppressed = 0;
    l->last_us = now;
    return 1;
}

static void count_error(agg_server *s, ldpb_err code)
{
    unsigned c = (unsigned)code;
    atomic_fetch_add(&s->n_errors[c < 32 ? c : 31], 1);
}

/* ---- replies ----------------------------------------------------------------------------- */

struct collector;
static void capture_reply(struct collector *c, const Ldpb__V1__Envelope *env);
static void relay_collect(agg_server *s, agg_reply_to to, const uint8_t *frame, size_t len);

/* Every reply leaves through here: an inner frame of a relay batch is answered into its batch's
 * collector, anything else through the transport. */
static void deliver(agg_server *s, agg_reply_to to, const uint8_t *frame, size_t len)
{
    if (to.tag & AGG_REPLY_RELAY)
        relay_collect(s, to, frame, len);
    else
        s->send(s->send_ctx, to, frame, len);
}

static void send_plain_error(agg_server *s, agg_worker *w, agg_reply_to to, ldpb_err code,
                             const char *reason)
{
    size_t len = 0;
    atomic_fetch_add(&s->n_plain_errors, 1);
    if (ldpb_frame_build_plain_error(w->frame, sizeof w->frame, &len, (uint32_t)code, reason) !=
        LDPB_OK)
        (void)ldpb_frame_build_plain_error(w->frame, sizeof w->frame, &len, (uint32_t)code,
                                           ldpb_strerror(code));
    deliver(s, to, w->frame, len);
}

/* Encodes `env` and seals it for the client; on an encoding failure answers with a sealed
 * Error instead (that one always encodes). */
static void send_sealed(agg_server *s, agg_worker *w, agg_reply_to to,
                        const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                        Ldpb__V1__Envelope *env)
{
    if (w->capture) {
        capture_reply(w->capture, env);
        return;
    }
    size_t enc_len = 0, len = 0;
    char detail[LDPB_DETAIL_BYTES];
    ldpb_err err = ldpb_envelope_encode(env, w->enc, sizeof w->enc, &enc_len, detail);
    if (err) {
        logf_(s, AGG_LOG_WARN, "cannot encode a reply: %s", detail);
        Ldpb__V1__Error e = LDPB__V1__ERROR__INIT;
        e.code = (uint32_t)err;
        e.reason = err == LDPB_ERANGE ? "the reply does not fit a frame" : "cannot encode reply";
        env->body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
        env->error = &e;
        count_error(s, err);
        err = ldpb_envelope_encode(env, w->enc, sizeof w->enc, &enc_len, NULL);
        env->error = NULL;
        if (err) {
            send_plain_error(s, w, to, err, "cannot encode the reply");
            return;
        }
    }
    uint8_t nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_CLIENT, w->rng);
    err = ldpb_seal_frame(w->frame, sizeof w->frame, &len, client_pk, key, nonce, w->enc, enc_len);
    sodium_memzero(w->enc, enc_len);
    if (err) {
        send_plain_error(s, w, to, err, "cannot seal the reply");
        return;
    }
    deliver(s, to, w->frame, len);
}

static void send_sealed_error(agg_server *s, agg_worker *w, agg_reply_to to,
                              const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                              uint64_t request_id, int has_request_id, ldpb_err code,
                              const char *reason)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Error e = LDPB__V1__ERROR__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = has_request_id;
    env.request_id = request_id;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
    env.error = &e;
    e.code = (uint32_t)code;
    e.reason =
        (char *)(reason && ldpb_wire_utf8_valid(reason, strlen(reason)) ? reason
                                                                        : ldpb_strerror(code));
    count_error(s, code);
    send_sealed(s, w, to, client_pk, key, &env);
}

/* ---- workers' buffers -------------------------------------------------------------------- */

ldpb_err agg_worker_new(agg_worker **out)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    agg_worker *w = calloc(1, sizeof *w);
    if (!w)
        return LDPB_ENOMEM;
    ldpb_err err = ldpb_rng_new_system(&w->rng);
    if (err) {
        free(w);
        return err;
    }
    *out = w;
    return LDPB_OK;
}

void agg_worker_free(agg_worker *w)
{
    if (!w)
        return;
    ldpb_rng_free(w->rng);
    free(w->arms);
    free(w->arm_msgs);
    free(w->arm_ptrs);
    sodium_memzero(w->pt, sizeof w->pt);
    free(w);
}

/* ---- the committer's queue --------------------------------------------------------------- */

/* Appends `it` if fewer than `limit` items wait; 0 otherwise. Decisions are queued only while
 * the queue is less than half full, so logging can never crowd out reports. */
static int enqueue(agg_server *s, const item *it, size_t limit)
{
    pthread_mutex_lock(&s->queue_mu);
    int ok = s->q_count < limit;
    if (ok) {
        if (s->q_count == 0)
            s->q_waiting_since_us = mono_us();
        s->q[(s->q_head + s->q_count) % s->q_cap] = *it;
        s->q_count++;
        if (it->kind == ITEM_REPORT)
            s->q_reports++;
        if (it->kind == ITEM_REPORT || s->q_count == 1 || s->q_count >= DECISION_BATCH)
            pthread_cond_signal(&s->queue_cv);
    }
    pthread_mutex_unlock(&s->queue_mu);
    return ok;
}

/* ---- assign ------------------------------------------------------------------------------ */

/* Counts an assignment that goes out and queues its decision row (best effort). */
static void count_decision(agg_server *s, const item *it)
{
    atomic_fetch_add(&s->n_assignments, 1);
    if (!enqueue(s, it, s->q_cap / 2))
        atomic_fetch_add(&s->n_decisions_dropped, 1);
}

static int hold_decision(struct collector *c, const item *it);

static agg_policy_env policy_env(agg_server *s)
{
    agg_policy_env env = {&s->rand, s->cfg->mode == AGG_MODE_CENTRAL ? s->noise : NULL};
    return env;
}

/* Counts an assignment whose id is sealed in it->id, queues its decision row (best effort) and
 * answers with the Assignment: the one reply of do_assign and do_assign_contextual. `lm` is the
 * local contextual mode's model (NULL otherwise). Inside a ReportAndAssign the counting and the
 * row wait for the reply that delivers the assignment (hold_decision). */
static void send_assignment(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                            const ldpb_seal_key *key, const Ldpb__V1__Envelope *req, const item *it,
                            Ldpb__V1__LocalModel *lm)
{
    if (!hold_decision(w->capture, it))
        count_decision(s, it);

    Ldpb__V1__Envelope env_out = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    env_out.protocol_version = LDPB_PROTOCOL_VERSION;
    env_out.has_request_id = req->has_request_id;
    env_out.request_id = req->request_id;
    env_out.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    env_out.assignment = &a;
    a.assignment_id.data = (uint8_t *)it->id;
    a.assignment_id.len = AGG_TOKEN_BYTES;
    a.arm = it->tok.arm;
    a.mechanism = (Ldpb__V1__Mechanism)s->wire_mechanism;
    a.epsilon = s->wire_epsilon;
    a.expires_at_ms = it->tok.expires_at_ms;
    a.propensity = it->tok.propensity;
    a.has_policy_version = 1;
    a.policy_version = it->tok.policy_version;
    if (s->wire_desc->params & LDPB_MECH_PARAM_KAPPA) {
        a.has_kappa = 1;
        a.kappa = s->cfg->params.kappa;
    }
    a.local_model = lm;
    send_sealed(s, w, to, client_pk, key, &env_out);
}

/* Completes t (its arm, propensity and policy version already set) into a sealed assignment id
 * -- bound to the assigned features when `bound` is not NULL -- and sends the assignment. */
static void issue_assignment(agg_server *s, agg_worker *w, agg_reply_to to,
                             const uint8_t *client_pk, const ldpb_seal_key *key,
                             const Ldpb__V1__Envelope *req, agg_token *t, const double *bound,
                             uint32_t n_bound, Ldpb__V1__LocalModel *lm)
{
    uint64_t now = ldpb_seal_now_ms();
    t->mechanism = (uint8_t)s->wire_mechanism;
    t->epsilon = s->wire_epsilon;
    t->expires_at_ms = now + s->cfg->assignment_ttl_s * 1000u;
    ldpb_rng_bytes(w->rng, t->random, sizeof t->random);
    item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_DECISION;
    it.tok = *t;
    it.at_ms = now;
    ldpb_err err = bound ? agg_token_seal_bound(&s->token_key, t, bound, n_bound, it.id)
                         : agg_token_seal(&s->token_key, t, it.id);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "cannot issue an assignment id");
        return;
    }
    send_assignment(s, w, to, client_pk, key, req, &it, lm);
}

/* The local contextual mode's assignment (docs/protocol.md, "Local model"): no context comes in;
 * the committed model and the mechanism's parameters go out, and the device chooses. The id binds
 * nothing but itself: arm 0, propensity 1 (the device's choice and its probability stay there). */
static void do_assign_local(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                            const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    if (!ar->local_model || ar->n_context) {
        send_sealed_error(
            s, w, to, client_pk, key, req->request_id, req->has_request_id,
            ar->local_model ? LDPB_EINVAL : LDPB_ENOTSUP,
            ar->local_model
                ? "a local-model request carries no context: the features stay on the device"
                : "this aggregator serves the local contextual mode (ldp-linucb-gaussian): the "
                  "device must ask for the model (AssignRequest.local_model, "
                  "ldpb_client_assign_local) and choose its arm itself");
        return;
    }
    double stats[LDPB_CTXSTAT_VALUES_MAX];
    size_t n = 0;
    double shift = 0.0, beta = 0.0;
    agg_token t;
    memset(&t, 0, sizeof t);
    char reason[256] = "";
    pthread_mutex_lock(&s->policy_mu);
    uint64_t rounds = agg_ctx_policy_rounds(s->policy), horizon = agg_ctx_policy_horizon(s->policy);
    ldpb_err err = LDPB_OK;
    if (rounds >= horizon) {
        snprintf(reason, sizeof reason,
                 "no assignments: the local contextual policy has summed its horizon of %" PRIu64
                 " reports (configure a larger horizon)",
                 horizon);
        err = LDPB_ESTATE;
    } else {
        /* The served policy is the committed state: the model is released only once durable. */
        err = agg_ctx_policy_model(s->policy, stats, &n, &shift, &beta);
        if (err)
            snprintf(reason, sizeof reason, "the model cannot be computed (%s)",
                     ldpb_strerror(err));
    }
    t.policy_version = s->policy_version;
    pthread_mutex_unlock(&s->policy_mu);
    if (err) {
        if (err != LDPB_ESTATE)
            logf_(s, AGG_LOG_ERROR, "%s", reason);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    const ldpb_ctxstat_opts *mo = ldpb_ctxstat_get_opts(agg_ctx_policy_mech(s->policy));
    Ldpb__V1__LocalModel lm = LDPB__V1__LOCAL_MODEL__INIT;
    lm.d = mo->d;
    lm.n_stats = n;
    lm.stats = stats;
    lm.shift = shift;
    lm.beta = beta;
    lm.delta = mo->delta;
    lm.feature_norm = mo->feature_norm;
    lm.reward_bound = mo->reward_bound;
    /* the device chooses: the assignment names no arm of the aggregator's */
    t.arm = 0;
    t.propensity = 1.0;
    issue_assignment(s, w, to, client_pk, key, req, &t, NULL, 0, &lm);
}

/* A contextual policy's assignment (docs/protocol.md, "Contexts"): the request's K x d feature
 * set is checked and chosen from; the id's MAC binds the chosen row, which the report resends. */
static void do_assign_contextual(agg_server *s, agg_worker *w, agg_reply_to to,
                                 const uint8_t *client_pk, const ldpb_seal_key *key,
                                 const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    char reason[256] = "";
    uint32_t arm = 0, ties = 1;
    agg_token t;
    memset(&t, 0, sizeof t);
    pthread_mutex_lock(&s->policy_mu);
    agg_policy_env env = policy_env(s);
    ldpb_err err = LDPB_OK;
    /* The tree has room for `horizon` observations: past it no report could be learned from. */
    uint64_t rounds = agg_ctx_policy_rounds(s->policy), n = agg_ctx_policy_horizon(s->policy);
    if (rounds >= n) {
        snprintf(reason, sizeof reason,
                 "no assignments: the contextual policy has learned from its horizon of %" PRIu64
                 " reports (configure a larger horizon)",
                 n);
        err = LDPB_ESTATE;
    } else {
        err =
            agg_ctx_policy_choose(s->policy, &env, ar->context, ar->n_context, &arm, &ties, reason);
    }
    t.policy_version = s->policy_version;
    pthread_mutex_unlock(&s->policy_mu);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    /* The argmax is deterministic; exact ties are broken uniformly (linucb.h), so the chosen
     * arm had probability exactly 1/ties. */
    t.propensity = 1.0 / (double)ties;
    t.arm = arm;
    uint32_t d = agg_ctx_policy_d(s->policy);
    issue_assignment(s, w, to, client_pk, key, req, &t, ar->context + (size_t)arm * d, d, NULL);
}

static void do_assign(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                      const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    char reason[256];
    /* A client spends budget on the report of every assignment: while reports cannot be made
     * durable, issue none rather than let devices spend on reports that will be refused. */
    int failing = atomic_load(&s->commits_failing), low = atomic_load(&s->space_low);
    if (failing || low) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUSY,
                          low ? "no assignments: the aggregator is low on disk space (a "
                                "report might not be stored); retry later"
                              : "no assignments: the aggregator cannot commit reports right "
                                "now; retry later");
        return;
    }
    if (ar->has_max_epsilon && s->wire_desc->local && s->wire_epsilon > ar->max_epsilon) {
        snprintf(reason, sizeof reason,
                 "this aggregator asks for epsilon %g per report, above the client's cap %g",
                 s->wire_epsilon, ar->max_epsilon);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUDGET, reason);
        return;
    }
    uint32_t arm = 0;
    agg_token t;
    memset(&t, 0, sizeof t);
    if (s->local_ctx) {
        do_assign_local(s, w, to, client_pk, key, req);
        return;
    }
    if (ar->local_model) {
        /* A device that would choose for itself must not silently get an arm it did not. */
        snprintf(reason, sizeof reason,
                 "this aggregator serves policy %s, not the local contextual mode: it hands out "
                 "no model",
                 s->cfg->policy);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOTSUP, reason);
        return;
    }
    if (s->contextual) {
        do_assign_contextual(s, w, to, client_pk, key, req);
        return;
    }
    pthread_mutex_lock(&s->policy_mu);
    agg_policy_env env = policy_env(s);
    ldpb_err err = agg_policy_choose(s->policy, &env, &arm);
    if (!err) {
        t.policy_version = s->policy_version;
        if (s->policy->ops->propensity) {
            /* read under the same hold as the choice: another worker's choice would replace it */
            err = agg_policy_propensity(s->policy, &t.propensity);
        } else {
            uint64_t m = s->mc_propensity ? s->cfg->propensity_samples : 0, hits = 0;
            for (uint64_t i = 0; i < m && !err; i++) {
                uint32_t again;
                err = agg_policy_choose(s->policy, &env, &again);
                hits += again == arm;
            }
            t.propensity = (double)(1 + hits) / (double)(1 + m);
        }
    }
    pthread_mutex_unlock(&s->policy_mu);
    if (err) {
        logf_(s, AGG_LOG_ERROR, "the policy failed to choose an arm: %s", ldpb_strerror(err));
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "the policy failed to choose an arm");
        return;
    }
    t.arm = arm;
    issue_assignment(s, w, to, client_pk, key, req, &t, NULL, 0, NULL);
}

/* ---- report ------------------------------------------------------------------------------ */

/* The checks of a report against its (authentic) assignment. LDPB_OK or an error with `reason`. */
static ldpb_err check_report(agg_server *s, const agg_token *t, const Ldpb__V1__Report *r,
                             double *value, char reason[256])
{
    if (t->arm >= s->cfg->params.k) {
        snprintf(reason, 256, "unknown assignment (arm %" PRIu32 " outside this aggregator's %u)",
                 t->arm, (unsigned)s->cfg->params.k);
        return LDPB_ENOTFOUND;
    }
    if ((int)r->mechanism != (int)t->mechanism || (int)t->mechanism != s->wire_mechanism) {
        snprintf(reason, 256, "report mechanism %d, but the assignment asks for mechanism %d",
                 (int)r->mechanism, (int)t->mechanism);
        return LDPB_EINVAL;
    }
    if (r->epsilon > t->epsilon) {
        snprintf(reason, 256, "report epsilon %.17g is above the assignment's %.17g", r->epsilon,
                 t->epsilon);
        return LDPB_ERANGE;
    }
    if (r->epsilon != t->epsilon) {
        snprintf(reason, 256, "report epsilon %.17g differs from the assignment's %.17g",
                 r->epsilon, t->epsilon);
        return LDPB_EINVAL;
    }
    if (s->local_ctx) {
        /* The statistics of the local contextual mode: the mechanism devices were told to use
         * must be the one the report claims, and its values ones it can produce. */
        const ldpb_ctxstat *m = agg_ctx_policy_mech(s->policy);
        const ldpb_ctxstat_opts *mo = ldpb_ctxstat_get_opts(m);
        if (!r->has_delta || r->delta != mo->delta) {
            snprintf(reason, 256, "report delta %.17g differs from the assignment's %.17g",
                     r->has_delta ? r->delta : 0.0, mo->delta);
            return LDPB_EINVAL;
        }
        char detail[LDPB_DETAIL_BYTES] = "";
        ldpb_err err = ldpb_ctxstat_check(m, r->stats, r->n_stats, detail);
        if (err) {
            snprintf(reason, 256, "report.stats: %s", detail);
            return err;
        }
        *value = 0.0;
        return LDPB_OK;
    }
    /* The mechanism table's admissibility rule, on the authentic assignment's mechanism and
     * epsilon (the wire decoder checked the format, the rule's first half, on the report's own
     * claim). */
    int is_bit = r->value_case == LDPB__V1__REPORT__VALUE_BIT;
    if (!is_bit && r->value_case != LDPB__V1__REPORT__VALUE_REAL) {
        snprintf(reason, 256, "report has no value");
        return LDPB_EINVAL;
    }
    double v = is_bit ? (double)r->bit : r->real;
    char detail[LDPB_MECH_DETAIL_BYTES];
    ldpb_err err =
        ldpb_mech_check_value((int)t->mechanism, t->epsilon, is_bit, v, "report", detail);
    if (err) {
        snprintf(reason, 256, "%s", detail);
        return err;
    }
    *value = v;
    return LDPB_OK;
}

static void do_report(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                      const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__Report *r = req->report;
    char reason[256] = "";
    item it;
    memset(&it, 0, sizeof it);
    ldpb_err err = LDPB_OK;
    uint32_t d = s->contextual ? agg_ctx_policy_d(s->policy) : 0;
    if (s->local_ctx) {
        /* Nothing is bound but the id; the stats are checked against the mechanism next. */
        err = agg_token_open(&s->token_key, r->assignment_id.data, r->assignment_id.len, &it.tok);
    } else if (s->contextual && r->n_context != d) {
        snprintf(reason, sizeof reason,
                 "report context has %zu values; this aggregator's contextual policy needs the "
                 "assigned arm's %u features, as sent in the assign request",
                 r->n_context, (unsigned)d);
        err = LDPB_EINVAL;
    } else if (s->contextual) {
        err = agg_token_open_bound(&s->token_key, r->assignment_id.data, r->assignment_id.len,
                                   r->context, d, &it.tok);
        if (err == LDPB_ENOTFOUND) {
            snprintf(reason, sizeof reason,
                     "unknown assignment, or the report's context is not the assigned arm's "
                     "features");
        }
    } else {
        err = agg_token_open(&s->token_key, r->assignment_id.data, r->assignment_id.len, &it.tok);
    }
    if (err == LDPB_ENOTFOUND && !reason[0])
        snprintf(reason, sizeof reason,
                 "unknown assignment (not issued by this aggregator, or corrupted)");
    else if (err && !reason[0])
        snprintf(reason, sizeof reason, "cannot verify the assignment id");
    if (!err)
        err = check_report(s, &it.tok, r, &it.value, reason);
    if (!err && s->contextual) {
        /* the local mode's report carries its statistics where the others carry features */
        size_t nx = s->local_ctx ? r->n_stats : d;
        it.x = malloc(nx * sizeof *it.x);
        if (!it.x) {
            err = LDPB_ENOMEM;
            snprintf(reason, sizeof reason, "out of memory");
        } else {
            memcpy(it.x, s->local_ctx ? r->stats : r->context, nx * sizeof *it.x);
        }
    }
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    it.kind = ITEM_REPORT;
    it.at_ms = ldpb_seal_now_ms();
    it.expired = it.at_ms > it.tok.expires_at_ms;
    memcpy(it.id, r->assignment_id.data, AGG_TOKEN_BYTES);
    memcpy(it.client_pk, client_pk, LDPB_KEY_BYTES);
    it.key = *key;
    it.request_id = req->request_id;
    it.has_request_id = req->has_request_id;
    it.to = to;
    if (!enqueue(s, &it, s->q_cap)) {
        free(it.x);
        sodium_memzero(&it.key, sizeof it.key);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUSY, "the aggregator's commit queue is full; retry later");
    }
}

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

/* A ReportAndAssign's next assignment goes out only with the Ack of its report (docs/protocol.md
 * section 6): while do_assign runs for one, its decision waits in the collector, and
 * release_decision counts and logs it when the reply that carries it is built. An assignment that
 * is never delivered (the report refused at commit: expired, refused by the policy, the queue
 * full) is neither counted nor logged. Returns 1 if held (c not NULL). */
static int hold_decision(struct collector *c, const item *it)
{
    if (!c)
        return 0;
    c->decision = *it;
    c->decision_held = 1;
    return 1;
}

static void release_decision(agg_server *s, collector *c)
{
    if (c->decision_held)
        count_decision(s, &c->decision);
    c->decision_held = 0;
}

static void capture_reply(struct collector *c, const Ldpb__V1__Envelope *env)
{
    c->captured = 1;
    if (env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT && env->assignment &&
        env->assignment->assignment_id.len == AGG_TOKEN_BYTES) {
        c->a = *env->assignment;
        memcpy(c->a_id, env->assignment->assignment_id.data, AGG_TOKEN_BYTES);
        c->a.assignment_id.data = c->a_id;
        c->a.base.n_unknown_fields = 0;
        c->a.base.unknown_fields = NULL;
        return;
    }
    c->err_code = LDPB_EPROTO;
    snprintf(c->err_reason, sizeof c->err_reason, "no assignment");
    if (env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR && env->error) {
        c->err_code = env->error->code;
        snprintf(c->err_reason, sizeof c->err_reason, "%s", env->error->reason);
    }
}

static collector *collector_new(uint32_t n, const uint8_t *client_pk, const ldpb_seal_key *key,
                                const Ldpb__V1__Envelope *req, agg_reply_to to)
{
    collector *c = calloc(1, sizeof *c + (size_t)n * sizeof(slot_result));
    if (!c)
        return NULL;
    atomic_init(&c->left, 1);
    c->n = n;
    memcpy(c->client_pk, client_pk, LDPB_KEY_BYTES);
    c->key = *key;
    c->request_id = req->request_id;
    c->has_request_id = req->has_request_id;
    c->to = to;
    return c;
}

static void collector_free(collector *c)
{
    sodium_memzero(&c->key, sizeof c->key);
    free(c);
}

/* The reason sent with a report's error from the committer (or a full queue). Codes other than
 * these come from a policy that refused the report (agg_server_commit_batch): final, since the
 * same report would be refused again. */
static const char *report_error_reason(int st)
{
    switch (st) {
    case LDPB_EEXPIRED:
        return "the assignment has expired; ask for a new one";
    case LDPB_EBUSY:
        return "the aggregator's commit queue is full; retry later";
    case LDPB_EIO:
    case LDPB_ENOMEM:
        return "the report could not be stored; retry";
    case LDPB_ESTATE:
        return "the policy refused the report: it has reached its horizon and learns from no "
               "more reports; not counted, do not resend";
    default:
        return "the policy refused the report's value: not counted, do not resend";
    }
}

static void collector_send(agg_server *s, agg_worker *w, collector *c)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = c->has_request_id;
    env.request_id = c->request_id;
    if (!c->is_batch) {
        int st = c->slots[0].code ? (int)c->slots[0].code : c->slots[0].status;
        if (c->slots[0].code || (st != 0 && st != 1)) {
            const char *reason = report_error_reason(st);
            send_sealed_error(s, w, c->to, c->client_pk, &c->key, c->request_id, c->has_request_id,
                              (ldpb_err)st, reason);
            return;
        }
        Ldpb__V1__AckAndAssignment aa = LDPB__V1__ACK_AND_ASSIGNMENT__INIT;
        Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
        Ldpb__V1__Error e = LDPB__V1__ERROR__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT;
        env.ack_and_assignment = &aa;
        aa.ack = &ack;
        ack.assignment_id.data = c->slots[0].id;
        ack.assignment_id.len = c->slots[0].id_len;
        ack.has_duplicate = 1;
        ack.duplicate = st == 1;
        if (!c->err_code) {
            aa.next_case = LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT;
            aa.assignment = &c->a;
            release_decision(s, c);
        } else {
            aa.next_case = LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ERROR;
            aa.error = &e;
            e.code = c->err_code;
            e.reason = c->err_reason;
        }
        send_sealed(s, w, c->to, c->client_pk, &c->key, &env);
        return;
    }
    Ldpb__V1__BatchAck ba = LDPB__V1__BATCH_ACK__INIT;
    Ldpb__V1__ReportResult *res = calloc(c->n, sizeof *res);
    Ldpb__V1__ReportResult **ptrs = calloc(c->n, sizeof *ptrs);
    if (!res || !ptrs) {
        send_sealed_error(s, w, c->to, c->client_pk, &c->key, c->request_id, c->has_request_id,
                          LDPB_ENOMEM, "out of memory for the batch's reply; retry");
    } else {
        for (uint32_t i = 0; i < c->n; i++) {
            const slot_result *r = &c->slots[i];
            Ldpb__V1__ReportResult init = LDPB__V1__REPORT_RESULT__INIT;
            res[i] = init;
            res[i].assignment_id.data = (uint8_t *)r->id;
            res[i].assignment_id.len = r->id_len;
            uint32_t code = r->code ? r->code : r->status > 1 ? (uint32_t)r->status : 0;
            if (code) {
                res[i].has_code = 1;
                res[i].code = code;
                count_error(s, (ldpb_err)code);
            } else if (r->status == 1) {
                res[i].has_duplicate = 1;
                res[i].duplicate = 1;
            }
            ptrs[i] = &res[i];
        }
        env.body_case = LDPB__V1__ENVELOPE__BODY_BATCH_ACK;
        env.batch_ack = &ba;
        ba.n_results = c->n;
        ba.results = ptrs;
        send_sealed(s, w, c->to, c->client_pk, &c->key, &env);
    }
    free(res);
    free(ptrs);
}

static void collector_settle(agg_server *s, agg_worker *w, struct collector *c, uint32_t slot,
                             int status)
{
    if (slot < c->n)
        c->slots[slot].status = status;
    if (atomic_fetch_sub(&c->left, 1) != 1)
        return;
    collector_send(s, w, c);
    collector_free(c);
}

/* Checks one report of a request and fills `it` for the committer; an error with `reason`. */
static ldpb_err prepare_report(agg_server *s, const Ldpb__V1__Report *r, item *it, char reason[256])
{
    memset(it, 0, sizeof *it);
    if (s->contextual) {
        /* A contextual report needs the assigned arm's features, bound to its id: do_report's
         * path; batches and report_and_assign do not carry them. */
        /* The local mode's device must never be told to send its features. */
        snprintf(reason, 256, "%s",
                 s->local_ctx ? "this aggregator serves the local contextual mode: send each "
                                "report alone, with its privatized statistics (Report.stats); the "
                                "features stay on the device"
                              : "this aggregator serves a contextual policy: send each report "
                                "alone, with the assigned arm's features (Report.context)");
        return LDPB_EINVAL;
    }
    ldpb_err err =
        agg_token_open(&s->token_key, r->assignment_id.data, r->assignment_id.len, &it->tok);
    if (err == LDPB_ENOTFOUND)
        snprintf(reason, 256, "unknown assignment (not issued by this aggregator, or corrupted)");
    else if (err)
        snprintf(reason, 256, "cannot verify the assignment id");
    if (!err)
        err = check_report(s, &it->tok, r, &it->value, reason);
    if (err)
        return err;
    it->kind = ITEM_REPORT;
    it->at_ms = ldpb_seal_now_ms();
    it->expired = it->at_ms > it->tok.expires_at_ms;
    memcpy(it->id, r->assignment_id.data, AGG_TOKEN_BYTES);
    return LDPB_OK;
}

static void set_slot_id(collector *c, uint32_t i, const Ldpb__V1__Report *r)
{
    size_t n = r->assignment_id.len < LDPB_WIRE_ID_MAX ? r->assignment_id.len : LDPB_WIRE_ID_MAX;
    memcpy(c->slots[i].id, r->assignment_id.data, n);
    c->slots[i].id_len = (uint8_t)n;
}

/* The report is checked first and the assignment chosen before the report is queued, so a
 * refused report costs no assignment; the reply waits for the commit as a Report's does. */
static void do_report_and_assign(agg_server *s, agg_worker *w, agg_reply_to to,
                                 const uint8_t *client_pk, const ldpb_seal_key *key,
                                 const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__ReportAndAssign *ra = req->report_and_assign;
    char reason[256];
    item it;
    ldpb_err err = prepare_report(s, ra->report, &it, reason);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    collector *c = collector_new(1, client_pk, key, req, to);
    if (!c) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory; retry");
        return;
    }
    set_slot_id(c, 0, ra->report);
    Ldpb__V1__Envelope areq = LDPB__V1__ENVELOPE__INIT;
    areq.protocol_version = LDPB_PROTOCOL_VERSION;
    areq.has_request_id = req->has_request_id;
    areq.request_id = req->request_id;
    areq.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    areq.assign_request = ra->next;
    w->capture = c;
    do_assign(s, w, to, client_pk, key, &areq);
    w->capture = NULL;
    it.coll = c;
    it.slot = 0;
    atomic_fetch_add(&c->left, 1);
    if (!enqueue(s, &it, s->q_cap)) {
        atomic_fetch_sub(&c->left, 1);
        c->slots[0].code = LDPB_EBUSY;
    }
    collector_settle(s, w, c, UINT32_MAX, 0);
}

/* Each report of the batch is checked, queued and answered on its own; the one reply lists
 * every result in the batch's order. */
static void do_report_batch(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                            const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__ReportBatch *b = req->report_batch;
    collector *c = collector_new((uint32_t)b->n_reports, client_pk, key, req, to);
    if (!c) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory; retry");
        return;
    }
    c->is_batch = 1;
    for (uint32_t i = 0; i < c->n; i++) {
        char reason[256];
        item it;
        set_slot_id(c, i, b->reports[i]);
        ldpb_err err = prepare_report(s, b->reports[i], &it, reason);
        if (err) {
            c->slots[i].code = (uint32_t)err;
            continue;
        }
        it.coll = c;
        it.slot = i;
        atomic_fetch_add(&c->left, 1);
        if (!enqueue(s, &it, s->q_cap)) {
            atomic_fetch_sub(&c->left, 1);
            c->slots[i].code = LDPB_EBUSY;
        }
    }
    collector_settle(s, w, c, UINT32_MAX, 0);
}

/* ---- status ------------------------------------------------------------------------------ */

static const char *model_name(agg_model m)
{
    switch (m) {
    case AGG_MODEL_NONPRIVATE:
        return "nonprivate";
    case AGG_MODEL_LOCAL:
        return "local";
    case AGG_MODEL_CENTRAL:
        return "central";
    }
    return "unknown";
}

static void do_status(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                      const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    uint32_t k = (uint32_t)s->cfg->params.k;
    if (k > LDPB_WIRE_ARMS_MAX) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ERANGE, "too many arms for a status reply");
        return;
    }
    if (w->arms_cap < k) {
        agg_arm_status *a = realloc(w->arms, k * sizeof *a);
        if (a)
            w->arms = a;
        Ldpb__V1__ArmStatus *m = realloc(w->arm_msgs, k * sizeof *m);
        if (m)
            w->arm_msgs = m;
        Ldpb__V1__ArmStatus **p = realloc(w->arm_ptrs, k * sizeof *p);
        if (p)
            w->arm_ptrs = p;
        if (!a || !m || !p) {
            send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                              LDPB_ENOMEM, "out of memory");
            return;
        }
        w->arms_cap = k;
    }
    pthread_mutex_lock(&s->policy_mu);
    ldpb_err err = agg_policy_describe(s->policy, w->arms, k);
    pthread_mutex_unlock(&s->policy_mu);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "the policy cannot describe its state");
        return;
    }
    for (uint32_t a = 0; a < k; a++) {
        Ldpb__V1__ArmStatus *m = &w->arm_msgs[a];
        ldpb__v1__arm_status__init(m);
        m->arm = a;
        m->pulls = w->arms[a].pulls;
        m->has_estimate = isfinite(w->arms[a].estimate);
        m->estimate = m->has_estimate ? w->arms[a].estimate : 0;
        m->has_ci_low = isfinite(w->arms[a].ci_low);
        m->ci_low = m->has_ci_low ? w->arms[a].ci_low : 0;
        m->has_ci_high = isfinite(w->arms[a].ci_high);
        m->ci_high = m->has_ci_high ? w->arms[a].ci_high : 0;
        m->has_active = 1;
        m->active = w->arms[a].active != 0;
        w->arm_ptrs[a] = m;
    }
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = req->has_request_id;
    env.request_id = req->request_id;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    env.status = &st;
    st.policy = (char *)s->cfg->policy;
    st.model = (char *)model_name(s->policy->ops->model);
    st.reports = atomic_load(&s->n_reports);
    st.assignments = atomic_load(&s->n_assignments);
    st.n_arms = k;
    st.arms = w->arm_ptrs;
    atomic_fetch_add(&s->n_status, 1);
    send_sealed(s, w, to, client_pk, key, &env);
}

/* ---- the request handler ----------------------------------------------------------------- */

/* The lock the seal layer takes around the key cache and the replay cache. The replay
 * cache's eviction count is read on the way out of each section, so noticing the first eviction
 * costs no acquisition of seal_mu of its own on every request. */
typedef struct seal_guard {
    agg_server *s;
    int first_eviction; /* set under seal_mu by the section that first saw an eviction */
} seal_guard;

static void seal_lock(void *ctx)
{
    seal_guard *g = ctx;
    pthread_mutex_lock(&g->s->seal_mu);
}

static void seal_unlock(void *ctx)
{
    seal_guard *g = ctx;
    if (!g->s->replay_full_logged && ldpb_replay_evicted(g->s->rp) > 0) {
        g->s->replay_full_logged = 1;
        g->first_eviction = 1;
    }
    pthread_mutex_unlock(&g->s->seal_mu);
}

/* One device frame, received directly or inside a relay batch: exactly one reply to `to`. */
static void handle_frame(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len,
                         agg_reply_to to)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_frame fr;
    atomic_fetch_add(&s->n_requests, 1);
    ldpb_err err = ldpb_frame_parse(msg, len, &fr, detail);
    if (err) {
        logf_(s, AGG_LOG_DEBUG, "refused a frame: %s", detail);
        send_plain_error(s, w, to, err, detail);
        return;
    }
    if (fr.kind != LDPB_FRAME_SEALED) {
        send_plain_error(s, w, to, LDPB_EPROTO, "the server accepts only sealed frames");
        return;
    }
    ldpb_seal_key key;
    memset(&key, 0, sizeof key);
    size_t pt_len = 0;
    /* seal_mu is held only around the table work: a derivation for a key the cache lacks (maybe
     * an attacker's fresh one) runs unlocked, so it never stalls the workers serving known keys. */
    seal_guard guard = {s, 0};
    const ldpb_seal_lock lk = {seal_lock, seal_unlock, &guard};
    err = ldpb_seal_open_request_locked(s->kc, s->rp, &lk, &fr, ldpb_seal_now_ms(), w->pt,
                                        sizeof w->pt, &pt_len, &key, detail);
    if (!err && s->nlog)
        err = agg_nonce_log_accept(s->nlog, fr.client_pk, fr.nonce, ldpb_seal_now_ms(), detail);
    const int first_eviction = guard.first_eviction;
    /* An unauthenticated refusal for the budget: a flood sends thousands a second, so warn at
     * most once a minute. Only that refusal takes seal_mu here again. */
    int budget_warn = 0;
    if (err == LDPB_EBUSY && sodium_is_zero(key.k, sizeof key.k)) {
        pthread_mutex_lock(&s->seal_mu);
        uint64_t now_us = mono_us();
        budget_warn = !s->budget_warned_us || now_us - s->budget_warned_us >= 60000000u;
        if (budget_warn)
            s->budget_warned_us = now_us;
        pthread_mutex_unlock(&s->seal_mu);
    }
    if (budget_warn)
        logf_(s, AGG_LOG_WARN,
              "key_derivations_per_s (%" PRIu64 ") is spent: frames under client keys not in the "
              "key cache are refused with LDPB_EBUSY until it refills (a flood of new keys?); "
              "ldpb_key_derivations_refused_total counts them, this warning repeats at most "
              "once a minute",
              s->cfg->key_derivations_per_s);
    if (first_eviction)
        logf_(s, AGG_LOG_WARN,
              "the replay cache is full (%" PRIu64 " entries): from now on it forgets its oldest "
              "nonces and refuses requests whose time is not after them, so clients need "
              "closer clocks than replay_window_s; raise replay_entries "
              "(ldpb_replay_evicted_total counts them)",
              (uint64_t)s->cfg->replay_entries);
    const uint8_t *pk = fr.client_pk;
    if (err) {
        logf_(s, AGG_LOG_DEBUG, "refused a frame: %s", detail);
        if (!sodium_is_zero(key.k, sizeof key.k)) /* authentic: answer sealed */
            send_sealed_error(s, w, to, pk, &key, 0, 0, err, detail);
        else
            send_plain_error(s, w, to, err, detail);
        sodium_memzero(&key, sizeof key);
        return;
    }
    uint32_t version = 0;
    uint64_t request_id = 0;
    int has_request_id = 0;
    Ldpb__V1__Envelope *env = NULL;
    /* The request id is echoed whenever it is readable, even when nothing else is, so a client
     * can match the refusal to its request; the detail says what is wrong. */
    err = ldpb_envelope_peek(w->pt, pt_len, &version, &request_id, &has_request_id, detail);
    if (err) {
        send_sealed_error(s, w, to, pk, &key, request_id, has_request_id, err, detail);
        goto done;
    }
    err = ldpb_envelope_decode(w->pt, pt_len, &env, detail);
    if (err) {
        send_sealed_error(s, w, to, pk, &key, request_id, has_request_id, err, detail);
        goto done;
    }
    switch (env->body_case) {
    case LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST:
        do_assign(s, w, to, pk, &key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT:
        do_report(s, w, to, pk, &key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST:
        do_status(s, w, to, pk, &key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN:
        do_report_and_assign(s, w, to, pk, &key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT_BATCH:
        do_report_batch(s, w, to, pk, &key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_ASSIGNMENT:
    case LDPB__V1__ENVELOPE__BODY_ACK:
    case LDPB__V1__ENVELOPE__BODY_STATUS:
    case LDPB__V1__ENVELOPE__BODY_ERROR:
    case LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT:
    case LDPB__V1__ENVELOPE__BODY_BATCH_ACK:
    case LDPB__V1__ENVELOPE__BODY__NOT_SET:
    case _LDPB__V1__ENVELOPE__BODY__CASE_IS_INT_SIZE:
        send_sealed_error(s, w, to, pk, &key, request_id, has_request_id, LDPB_EPROTO,
                          "not a request: the server accepts assign_request, report, "
                          "status_request, report_and_assign and report_batch");
        break;
    }
done:
    ldpb_envelope_free(env);
    sodium_memzero(w->pt, pt_len);
    sodium_memzero(&key, sizeof key);
}

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

static void relay_batch_free(relay_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->copies[i]);
    pthread_mutex_destroy(&b->mu);
    free(b->copies);
    free(b->slots);
    free(b);
}

/* Sends the collected replies to the relay as one RELAY_REPLY and frees the batch. */
static void relay_finish(agg_server *s, relay_batch *b)
{
    /* a slot whose copy failed answers like a direct request the server had no memory for */
    uint8_t nomem[LDPB_FRAME_ERROR_MIN + 64];
    size_t nomem_len = 0;
    (void)ldpb_frame_build_plain_error(nomem, sizeof nomem, &nomem_len, LDPB_ENOMEM,
                                       "out of memory");
    for (size_t i = 0; i < b->n; i++)
        if (!b->copies[i]) {
            b->slots[i].frame = nomem;
            b->slots[i].len = nomem_len;
        }
    size_t need = ldpb_relay_size(b->slots, b->n), len = 0;
    uint8_t *buf = malloc(need);
    if (buf &&
        ldpb_relay_build(buf, need, &len, LDPB_FRAME_RELAY_REPLY, b->slots, b->n) == LDPB_OK) {
        s->send(s->send_ctx, b->to, buf, len);
    } else {
        atomic_fetch_add(&s->n_plain_errors, 1);
        s->send(s->send_ctx, b->to, nomem, nomem_len);
    }
    free(buf);
    relay_batch_free(b);
}

static void relay_collect(agg_server *s, agg_reply_to to, const uint8_t *frame, size_t len)
{
    relay_batch *b = to.control;
    size_t slot = (size_t)(to.tag & ~AGG_REPLY_RELAY);
    uint8_t *copy = malloc(len);
    if (copy)
        memcpy(copy, frame, len);
    pthread_mutex_lock(&b->mu);
    b->copies[slot] = copy;
    b->slots[slot].frame = copy;
    b->slots[slot].len = len;
    int last = --b->outstanding == 0;
    pthread_mutex_unlock(&b->mu);
    if (last)
        relay_finish(s, b);
}

static void handle_relay_batch(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len,
                               agg_reply_to to)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t n = 0;
    /* every bound is checked on the raw bytes before anything is allocated or opened */
    ldpb_err err = ldpb_relay_parse(msg, len, LDPB_FRAME_RELAY_BATCH, w->relay_in,
                                    LDPB_RELAY_ENTRIES_MAX, &n, detail);
    if (err) {
        atomic_fetch_add(&s->n_requests, 1);
        logf_(s, AGG_LOG_DEBUG, "refused a relay batch: %s", detail);
        send_plain_error(s, w, to, err, detail);
        return;
    }
    relay_batch *b = calloc(1, sizeof *b);
    if (b) {
        b->slots = calloc(n, sizeof *b->slots);
        b->copies = calloc(n, sizeof *b->copies);
    }
    if (!b || !b->slots || !b->copies || pthread_mutex_init(&b->mu, NULL) != 0) {
        if (b) {
            free(b->slots);
            free(b->copies);
        }
        free(b);
        send_plain_error(s, w, to, LDPB_ENOMEM, "out of memory for a relay batch");
        return;
    }
    atomic_fetch_add(&s->n_relay_batches, 1);
    b->n = n;
    b->to = to;
    b->outstanding = n + 1;
    for (size_t i = 0; i < n; i++)
        b->slots[i].id = w->relay_in[i].id;
    for (size_t i = 0; i < n; i++) {
        agg_reply_to inner = {b, AGG_REPLY_RELAY | (uint64_t)i};
        handle_frame(s, w, w->relay_in[i].frame, w->relay_in[i].len, inner);
    }
    pthread_mutex_lock(&b->mu);
    int last = --b->outstanding == 0;
    pthread_mutex_unlock(&b->mu);
    if (last)
        relay_finish(s, b);
}

void agg_server_handle(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len,
                       agg_reply_to to)
{
    if (ldpb_relay_is_kind(msg, len, LDPB_FRAME_RELAY_BATCH))
        handle_relay_batch(s, w, msg, len, to);
    else
        handle_frame(s, w, msg, len, to);
}

/* ---- the committer ----------------------------------------------------------------------- */

/* Saves policy p into *buf (grown as needed). */
static ldpb_err save_policy(const agg_policy *p, uint8_t **buf, size_t *cap, size_t *len)
{
    ldpb_err err = agg_policy_save(p, *buf, *cap, len);
    if (err == LDPB_ERANGE) {
        size_t want = *len + *len / 2 + 64;
        uint8_t *nb = realloc(*buf, want);
        if (!nb)
            return LDPB_ENOMEM;
        *buf = nb;
        *cap = want;
        err = agg_policy_save(p, *buf, *cap, len);
    }
    return err;
}

static void collector_settle(agg_server *s, agg_worker *w, struct collector *c, uint32_t slot,
                             int status);

static void answer_report(agg_server *s, item *it, int status)
{
    free(it->x);
    it->x = NULL;
    if (it->coll) {
        collector_settle(s, s->cw, it->coll, it->slot, status);
        return;
    }
    if (status == 0 || status == 1) {
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
        env.protocol_version = LDPB_PROTOCOL_VERSION;
        env.has_request_id = it->has_request_id;
        env.request_id = it->request_id;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
        env.ack = &ack;
        ack.assignment_id.data = it->id;
        ack.assignment_id.len = AGG_TOKEN_BYTES;
        ack.has_duplicate = 1;
        ack.duplicate = status == 1;
        send_sealed(s, s->cw, it->to, it->client_pk, &it->key, &env);
    } else {
        const char *reason = report_error_reason(status);
        send_sealed_error(s, s->cw, it->to, it->client_pk, &it->key, it->request_id,
                          it->has_request_id, (ldpb_err)status, reason);
    }
    sodium_memzero(&it->key, sizeof it->key);
}

static agg_store_row row_of(const agg_server *s, const item *it)
{
    agg_store_row r;
    r.id = it->id;
    r.id_len = AGG_TOKEN_BYTES;
    r.arm = it->tok.arm;
    r.mechanism = s->mech_name;
    r.epsilon = it->tok.epsilon;
    r.propensity = it->tok.propensity;
    r.policy_version = it->tok.policy_version;
    r.expires_at_ms = it->tok.expires_at_ms;
    r.at_ms = it->at_ms;
    r.value = it->value;
    return r;
}

/* Reads the free space of state_dir and pauses or resumes assignments by it. */
static void check_space(agg_server *s)
{
    struct statvfs vs;
    if (statvfs(s->cfg->state_dir, &vs) != 0)
        return; /* keep the last verdict: a failed statvfs says nothing about the space */
    uint64_t free_b = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
    atomic_store(&s->free_bytes, free_b);
    int low = s->cfg->min_free_mb && free_b < s->cfg->min_free_mb * 1048576u;
    int was = atomic_exchange(&s->space_low, low);
    if (low && !was)
        logf_(s, AGG_LOG_WARN,
              "state_dir %s has %.1f MiB free, below min_free_mb = %" PRIu64
              ": no assignments (clients get LDPB_EBUSY) until space returns",
              s->cfg->state_dir, (double)free_b / 1048576.0, s->cfg->min_free_mb);
    else if (!low && was)
        logf_(s, AGG_LOG_WARN, "state_dir %s has %.1f MiB free again: assignments resumed",
              s->cfg->state_dir, (double)free_b / 1048576.0);
}

/* A rolled-back transaction: pauses assignments (the next successful commit resumes them) and
 * logs, at most once per error_log_interval_s (a full disk fails every commit). */
static void note_commit_failure(agg_server *s, size_t n)
{
    if (!atomic_exchange(&s->commits_failing, 1))
        logf_(s, AGG_LOG_WARN,
              "commits fail: no assignments (clients get LDPB_EBUSY) until one succeeds; "
              "retrying every %d ms",
              HEALTH_CHECK_MS);
    uint64_t suppressed = 0;
    if (!log_limit_pass(&s->commit_log, s->cfg->error_log_interval_s, &suppressed))
        return;
    char more[96] = "";
    if (suppressed)
        snprintf(more, sizeof more, " (%" PRIu64 " more failures not logged since the last line)",
                 suppressed);
    logf_(s, AGG_LOG_ERROR, "commit of %zu items failed, rolled back: %s%s", n,
          agg_store_errmsg(s->store), more);
}

/* Retention of the propensity log (decision_retention_s, decision_rows_max), in the batch's
 * transaction and bounded by the batch's size. */
static ldpb_err prune_decisions(agg_server *s, size_t n, uint64_t *deleted)
{
    uint64_t now = ldpb_seal_now_ms(), keep_ms = s->cfg->decision_retention_s * 1000u;
    return agg_store_prune_decisions(s->store, now > keep_ms ? now - keep_ms : 0,
                                     s->cfg->decision_rows_max, PRUNE_CHUNK + n, deleted);
}

size_t agg_server_commit_batch(agg_server *s)
{
    check_space(s);
    /* While commits fail, an empty transaction probes whether they work again. */
    int probe = atomic_load(&s->commits_failing);
    pthread_mutex_lock(&s->queue_mu);
    size_t n = s->q_count < s->cfg->batch_max ? s->q_count : (size_t)s->cfg->batch_max;
    for (size_t i = 0; i < n; i++) {
        s->batch[i] = s->q[(s->q_head + i) % s->q_cap];
        s->q_reports -= s->batch[i].kind == ITEM_REPORT;
    }
    s->q_head = (s->q_head + n) % s->q_cap;
    s->q_count -= n;
    if (s->q_count)
        s->q_waiting_since_us = mono_us();
    pthread_mutex_unlock(&s->queue_mu);
    if (n == 0 && !probe)
        return 0;

    uint64_t t0 = mono_us();
    uint64_t n_new = 0, n_dup = 0;
    int observed = 0;
    size_t save_len = 0;
    ldpb_err err = agg_store_begin(s->store);
    for (size_t i = 0; i < n && !err; i++) {
        item *it = &s->batch[i];
        agg_store_row row = row_of(s, it);
        s->batch_status[i] = 0;
        if (it->kind == ITEM_DECISION) {
            err = agg_store_add_decision(s->store, &row);
        } else if (it->expired) {
            int exists = 0;
            err = agg_store_has_report(s->store, it->id, AGG_TOKEN_BYTES, &exists);
            s->batch_status[i] = exists ? 1 : LDPB_EEXPIRED;
            n_dup += exists;
        } else {
            int is_new = 0;
            err = agg_store_add_report(s->store, &row, &is_new);
            s->batch_status[i] = is_new ? 0 : 1;
            n_new += is_new;
            n_dup += !is_new;
        }
    }
    if (!err && n_new == 0) {
        /* Nothing to observe: the served state (its round-robin cursor included) is saved as it
         * is, and nothing is published. */
        pthread_mutex_lock(&s->policy_mu);
        err = save_policy(s->policy, &s->save_buf, &s->save_cap, &save_len);
        pthread_mutex_unlock(&s->policy_mu);
    } else if (!err) {
        /* The batch goes into `next`, a copy of the served state, with the committer's own
         * generators: nothing a worker can read depends on its noise until the COMMIT. */
        size_t snap_len = 0;
        pthread_mutex_lock(&s->policy_mu);
        err = save_policy(s->policy, &s->snap_buf, &s->snap_cap, &snap_len);
        pthread_mutex_unlock(&s->policy_mu);
        agg_policy_env env = {&s->next_rand,
                              s->cfg->mode == AGG_MODE_CENTRAL ? s->next_noise : NULL};
        /* A report the policy refuses (docs/aggregator.md, "A report the policy refuses") is
         * answered alone and its row taken back; the copy restarts from the served state and the
         * batch is observed again without it, so the copy is as if it had never been seen,
         * whatever a refusing observe left behind (a noise draw, a counter), and the draws of
         * the dropped pass are never released. Each pass drops one report: at most
         * (refusals + 1) passes. Only running out of memory fails the batch (every report gets
         * LDPB_EIO and is resent): it says nothing about the report. */
        int again = 1;
        while (!err && again) {
            again = 0;
            observed = 0;
            err = agg_policy_restore(s->next, s->snap_buf, snap_len);
            for (size_t i = 0; i < n && !err && !again; i++) {
                item *it = &s->batch[i];
                if (it->kind != ITEM_REPORT || s->batch_status[i] != 0)
                    continue;
                ldpb_err oe =
                    s->contextual
                        ? agg_ctx_policy_observe(s->next, &env, it->tok.arm, it->x, it->value)
                        : agg_policy_observe_with_propensity(s->next, &env, it->tok.arm, it->value,
                                                             it->tok.propensity);
                if (oe == LDPB_ESTATE && s->contextual) {
                    /* Assigned before the horizon was reached, reported after: counted, not
                     * learned from (docs/aggregator.md, "Contextual policies"). */
                    logf_(s, AGG_LOG_WARN,
                          "a report past the contextual policy's horizon is counted but not "
                          "learned from");
                    oe = LDPB_OK;
                }
                if (!oe) {
                    observed = 1;
                } else if (oe == LDPB_ENOMEM) {
                    logf_(s, AGG_LOG_ERROR, "observing a report (arm %u): %s",
                          (unsigned)it->tok.arm, ldpb_strerror(oe));
                    err = oe;
                } else {
                    /* at most one line per error_log_interval_s: a client may resend it */
                    uint64_t more = 0;
                    if (log_limit_pass(&s->refusal_log, s->cfg->error_log_interval_s, &more))
                        logf_(s, AGG_LOG_WARN,
                              "the policy refused a validated report (arm %u): %s; answered "
                              "alone, not counted (%" PRIu64 " more since the last line)",
                              (unsigned)it->tok.arm, ldpb_strerror(oe), more);
                    s->batch_status[i] = (int)oe;
                    n_new--;
                    err = agg_store_remove_report(s->store, it->id, AGG_TOKEN_BYTES);
                    again = 1;
                }
            }
        }
        /* A copy of a refused report later in the same batch was taken for a duplicate of it:
         * it gets the same refusal, since nothing was counted. */
        for (size_t i = 0; i < n && !err; i++) {
            if (s->batch[i].kind != ITEM_REPORT || s->batch_status[i] != 1)
                continue;
            for (size_t j = 0; j < i; j++) {
                int sj = s->batch_status[j];
                if (s->batch[j].kind == ITEM_REPORT && sj > 1 && sj != LDPB_EEXPIRED &&
                    memcmp(s->batch[j].id, s->batch[i].id, AGG_TOKEN_BYTES) == 0) {
                    s->batch_status[i] = sj;
                    n_dup--;
                    break;
                }
            }
        }
        if (!err)
            err = save_policy(s->next, &s->save_buf, &s->save_cap, &save_len);
    }
    agg_store_counters c = s->committed;
    c.policy_version += n_new;
    c.reports += n_new;
    c.duplicates += n_dup;
    c.assignments = atomic_load(&s->n_assignments);
    uint64_t n_deleted = 0;
    if (!err)
        err = prune_decisions(s, n, &n_deleted);
    if (!err)
        err = agg_store_put_state(s->store, s->save_buf, save_len, &c);
    if (!err)
        err = agg_store_commit(s->store);
    if (err) {
        /* `next` and its noise are dropped unreleased; the served state was never touched. */
        note_commit_failure(s, n);
        agg_store_rollback(s->store);
        atomic_fetch_add(&s->n_commit_failures, 1);
        for (size_t i = 0; i < n; i++)
            if (s->batch[i].kind == ITEM_REPORT)
                answer_report(s, &s->batch[i], LDPB_EIO);
        return n;
    }
    s->committed = c;
    if (observed) {
        /* Durable now: publish by swapping the instances, O(1) under the lock. The old served
         * instance becomes `next`, overwritten by the next batch's copy. The served cursor
         * restarts where the copy had it (as after a restart, to the saved one), so choices
         * made during the commit may repeat once. */
        pthread_mutex_lock(&s->policy_mu);
        agg_policy *p = s->policy;
        s->policy = s->next;
        s->next = p;
        s->policy_version = c.policy_version;
        pthread_mutex_unlock(&s->policy_mu);
    }
    if (atomic_exchange(&s->commits_failing, 0)) {
        logf_(s, AGG_LOG_WARN,
              "commits succeed again: assignments resumed (%" PRIu64
              " failures since the last logged one)",
              s->commit_log.suppressed);
        s->commit_log.suppressed = 0;
    }
    atomic_fetch_add(&s->n_decisions_deleted, n_deleted);
    atomic_store(&s->n_decision_rows, agg_store_decision_rows(s->store));
    atomic_store(&s->n_reports, c.reports);
    atomic_store(&s->n_duplicates, c.duplicates);
    atomic_fetch_add(&s->n_batches, 1);
    atomic_fetch_add(&s->n_batch_items, n);
    uint64_t took = mono_us() - t0;
    atomic_fetch_add(&s->commit_us, took);
    size_t bucket = 0;
    while (bucket < AGG_COMMIT_BUCKETS && (double)took > agg_commit_bucket_us[bucket])
        bucket++;
    atomic_fetch_add(&s->commit_hist[bucket], 1);
    for (size_t i = 0; i < n; i++)
        if (s->batch[i].kind == ITEM_REPORT)
            answer_report(s, &s->batch[i], s->batch_status[i]);
    return n;
}

/* Under queue_mu: whether the committer should commit now (see DECISION_DELAY_MS). */
static int commit_due(const agg_server *s)
{
    if (s->q_reports > 0 || s->q_count >= DECISION_BATCH || (s->committer_stop && s->q_count))
        return 1;
    return s->q_count > 0 && mono_us() >= s->q_waiting_since_us + DECISION_DELAY_MS * 1000u;
}

static void *committer_main(void *arg)
{
    agg_server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->queue_mu);
        /* Wakes at HEALTH_CHECK_MS at the latest, so the free-space check and the probe of a
         * failing commit run without traffic too (agg_server_commit_batch does both). */
        uint64_t check_at = mono_us() + HEALTH_CHECK_MS * 1000u;
        while (!commit_due(s) && !(s->committer_stop && s->q_count == 0) && mono_us() < check_at) {
            uint64_t due = check_at;
            if (s->q_count && s->q_waiting_since_us + DECISION_DELAY_MS * 1000u < due)
                due = s->q_waiting_since_us + DECISION_DELAY_MS * 1000u;
            struct timespec ts = {(time_t)(due / 1000000u), (long)(due % 1000000u) * 1000L};
            pthread_cond_timedwait(&s->queue_cv, &s->queue_mu, &ts);
        }
        int done = s->q_count == 0 && s->committer_stop;
        pthread_mutex_unlock(&s->queue_mu);
        if (done)
            break;
        agg_server_commit_batch(s);
    }
    return NULL;
}

/* ---- construction ------------------------------------------------------------------------ */

static ldpb_err load_allowlist(agg_server *s, const char *path, char *errmsg)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        say(errmsg, "allowlist %s: cannot open: %s", path, strerror(errno));
        return LDPB_EIO;
    }
    char line[256];
    unsigned lineno = 0, keys = 0;
    ldpb_err err = LDPB_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            say(errmsg, "%s:%u: line too long for a key", path, lineno);
            err = LDPB_ECORRUPT;
            break;
        }
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (n && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        uint8_t pk[LDPB_KEY_BYTES];
        char detail[LDPB_DETAIL_BYTES] = "";
        err = ldpb_keyfile_parse(line, n, LDPB_KEYFILE_PUBLIC, pk, detail);
        if (!err)
            err = ldpb_keycache_allow(s->kc, pk);
        if (err) {
            say(errmsg, "%s:%u: %s", path, lineno,
                err == LDPB_ERANGE ? "more keys than the allow-list holds" : detail);
            break;
        }
        keys++;
    }
    if (!err && ferror(f)) {
        say(errmsg, "allowlist %s: read error", path);
        err = LDPB_EIO;
    }
    fclose(f);
    if (!err && keys == 0) {
        say(errmsg, "allowlist %s has no keys: no client could connect", path);
        err = LDPB_EINVAL;
    }
    return err;
}

/* Lines of `path` (an upper bound on its keys), for sizing the allow-list. */
static size_t count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = 1;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void null_send(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    (void)ctx;
    (void)frame;
    (void)len;
    if (to.control)
        nn_freemsg(to.control);
}

ldpb_err agg_server_new(agg_server **out, const agg_config *cfg, agg_log_fn log, void *log_ctx,
                        char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg || !errmsg)
        return LDPB_EINVAL;
    *out = NULL;
    char detail[AGG_SERVER_ERRMAX];
    if (agg_config_check(cfg, detail) != LDPB_OK) {
        say(errmsg, "%s", detail);
        return LDPB_EINVAL;
    }
    if (sodium_init() < 0) {
        say(errmsg, "libsodium cannot initialise");
        return LDPB_ECRYPTO;
    }
    /* sodium_malloc: the struct holds the secret key and the token key, so its pages are locked
     * (never swapped), excluded from core dumps and wiped by sodium_free. */
    agg_server *s = ldpb_secmem_alloc(sizeof *s);
    if (!s)
        return LDPB_ENOMEM;
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->log = log;
    s->log_ctx = log_ctx;
    s->send = null_send;
    s->sock = -1;
    pthread_mutex_init(&s->seal_mu, NULL);
    pthread_mutex_init(&s->policy_mu, NULL);
    pthread_mutex_init(&s->queue_mu, NULL);
    /* The committer's timed waits are on mono_us()'s clock. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->queue_cv, &ca);
    pthread_condattr_destroy(&ca);

    char kd[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = ldpb_keyfile_load_secret(cfg->key, &s->kp, kd);
    if (err) {
        say(errmsg, "key %s: %s", cfg->key, kd[0] ? kd : ldpb_strerror(err));
        err = err == LDPB_ENOMEM ? err : LDPB_EINVAL; /* the configured file is unusable */
        goto fail;
    }
    err = agg_token_key_derive(&s->token_key, s->kp.sk);
    if (err) {
        say(errmsg, "cannot derive the assignment key");
        goto fail;
    }
    ldpb_keycache_opts ko;
    ldpb_keycache_opts_init(&ko);
    ko.max_entries = cfg->keycache_entries;
    ko.derive_rate = (uint32_t)cfg->key_derivations_per_s;
    if (cfg->auth == AGG_AUTH_ALLOWLIST) {
        size_t lines = count_lines(cfg->allowlist);
        ko.allowlist_max = lines < LDPB_ALLOWLIST_MAX ? lines : LDPB_ALLOWLIST_MAX;
    }
    err = ldpb_keycache_new(&s->kc, &s->kp, &ko);
    if (!err && cfg->auth == AGG_AUTH_ALLOWLIST) {
        err = load_allowlist(s, cfg->allowlist, errmsg);
        err = err == LDPB_OK || err == LDPB_ENOMEM ? err : LDPB_EINVAL;
    }
    if (err) {
        if (!errmsg[0])
            say(errmsg, "cannot create the key cache: %s", ldpb_strerror(err));
        goto fail;
    }
    ldpb_replay_opts ro;
    ldpb_replay_opts_init(&ro);
    ro.window_ms = cfg->replay_window_s * 1000u;
    if (ro.window_ms < 1000)
        ro.window_ms = 1000;
    ro.max_entries = cfg->replay_entries;
    err = ldpb_replay_new(&s->rp, &ro);
    if (err) {
        say(errmsg, "cannot create the replay cache: %s", ldpb_strerror(err));
        goto fail;
    }

    /* The policy, its generators and the noise source. */
    char pmsg[AGG_ERRMSG_MAX] = "";
    s->contextual = agg_ctx_policy_find(cfg->policy) != NULL;
    if (s->contextual) {
        err = agg_ctx_policy_new(&s->policy, cfg->policy, &cfg->params, &cfg->ctx, pmsg);
        if (!err)
            err = agg_ctx_policy_new(&s->next, cfg->policy, &cfg->params, &cfg->ctx, pmsg);
    } else {
        err = agg_policy_new(&s->policy, cfg->policy, &cfg->params, pmsg);
        if (!err)
            err = agg_policy_new(&s->next, cfg->policy, &cfg->params, pmsg);
    }
    if (err) {
        say(errmsg, "policy %s: %s", cfg->policy, pmsg[0] ? pmsg : ldpb_strerror(err));
        goto fail;
    }
    /* A policy that knows the probability of its choice (the EXP3 family) logs it exactly.
     * Otherwise only a choice that is a pure draw can be repeated to estimate its probability;
     * the others choose deterministically from their state (ties aside: propensity 1) or advance
     * a round-robin pointer, which extra calls would disturb. */
    s->mc_propensity = s->policy->ops->choose_is_draw && !s->policy->ops->propensity;
    err = ldpb_rng_new_system(&s->policy_rng);
    if (!err)
        err = ldpb_rng_new_system(&s->noise_rng);
    if (!err)
        err = agg_noise_new(&s->noise, AGG_NOISE_SECURE, s->noise_rng, NULL);
    if (!err)
        err = ldpb_rng_new_system(&s->next_rng);
    if (!err)
        err = ldpb_rng_new_system(&s->next_noise_rng);
    if (!err)
        err = agg_noise_new(&s->next_noise, AGG_NOISE_SECURE, s->next_noise_rng, NULL);
    if (err) {
        say(errmsg, "cannot create the generators: %s", ldpb_strerror(err));
        goto fail;
    }
    agg_rand_seed(&s->rand, s->policy_rng);
    agg_rand_seed(&s->next_rand, s->next_rng);
    /* What every assignment asks for: the configured mechanism in local mode, the table's raw
     * row otherwise (agg_config_check has built the mechanism as the clients will). */
    s->wire_desc =
        ldpb_mech_desc_of(cfg->mode == AGG_MODE_LOCAL ? cfg->params.mechanism : LDPB_MECH_ID_RAW);
    if (!s->wire_desc) {
        err = LDPB_EINVAL;
        say(errmsg, "mechanism %d is not a known mechanism", cfg->params.mechanism);
        goto fail;
    }
    s->local_ctx = s->contextual && agg_ctx_policy_is_local(s->policy);
    if (s->local_ctx) /* devices report statistics, whatever `mechanism` says */
        s->wire_desc = ldpb_mech_desc_of(LDPB_MECH_ID_GAUSSIAN_STATS);
    s->wire_mechanism = s->wire_desc->id;
    s->wire_epsilon = s->wire_desc->local ? cfg->params.epsilon : 0.0;
    s->mech_name = s->wire_desc->name;

    /* The durable state. */
    /* The meta compares only what the policy reads: a state saved under another value of an
     * ignored parameter (kappa with a linear mechanism, epsilon without privacy) is the same
     * state. */
    agg_store_meta meta = {cfg->policy,    agg_mode_name(cfg->mode),
                           cfg->params,    agg_policy_reads(s->policy->ops, &cfg->params),
                           cfg->new_state, cfg->store};
    char smsg[AGG_STORE_ERRMAX] = "";
    err = agg_store_open(&s->store, cfg->state_dir, &meta, smsg);
    if (err) {
        say(errmsg, "%s", smsg);
        goto fail;
    }
    uint8_t *blob = NULL;
    size_t blob_len = 0;
    err = agg_store_load(s->store, &blob, &blob_len, &s->committed);
    if (!err && blob) {
        err = agg_policy_restore(s->policy, blob, blob_len);
        if (err)
            say(errmsg, "state_dir %s: the stored policy state does not restore (%s)",
                cfg->state_dir, ldpb_strerror(err));
    } else if (err) {
        say(errmsg, "state_dir %s: %s", cfg->state_dir, agg_store_errmsg(s->store));
    }
    free(blob);
    /* Assignments and the replay log belong to this state's identity (state_id.h). */
    if (!err)
        err = agg_token_key_bind_state(&s->token_key, s->kp.sk, agg_store_state_id(s->store),
                                       agg_store_legacy_tokens(s->store));
    if (!err)
        err = agg_nonce_log_open(&s->nlog, cfg->state_dir, s->kp.sk, agg_store_state_id(s->store),
                                 ro.window_ms, cfg->replay_entries, ldpb_seal_now_ms(), errmsg,
                                 AGG_SERVER_ERRMAX);
    if (err)
        goto fail;
    s->policy_version = s->committed.policy_version;
    atomic_store(&s->n_reports, s->committed.reports);
    atomic_store(&s->n_duplicates, s->committed.duplicates);
    atomic_store(&s->n_assignments, s->committed.assignments);
    atomic_store(&s->n_decision_rows, agg_store_decision_rows(s->store));
    check_space(s);

    /* The committer's queue and buffers. */
    s->q_cap = cfg->queue_max;
    s->q = calloc(s->q_cap, sizeof *s->q);
    s->batch = calloc(cfg->batch_max, sizeof *s->batch);
    s->batch_status = calloc(cfg->batch_max, sizeof *s->batch_status);
    if (!s->q || !s->batch || !s->batch_status) {
        err = LDPB_ENOMEM;
        say(errmsg, "out of memory for a queue of %zu", s->q_cap);
        goto fail;
    }
    err = agg_worker_new(&s->cw);
    if (err) {
        say(errmsg, "cannot create the committer's generator");
        goto fail;
    }
    logf_(s, AGG_LOG_INFO,
          "state %s: policy %s (%s mode), %u arms, %" PRIu64 " reports, %" PRIu64
          " assignments so far",
          cfg->state_dir, cfg->policy, agg_mode_name(cfg->mode), (unsigned)cfg->params.k,
          s->committed.reports, s->committed.assignments);
    logf_(s, AGG_LOG_INFO, "%s; %zu nonces of earlier runs still within the replay window",
          agg_store_state_note(s->store), agg_nonce_log_loaded(s->nlog));
    if (s->policy->ops->propensity)
        logf_(s, AGG_LOG_INFO, "propensity: the policy's exact probability of each choice");
    else if (s->mc_propensity)
        logf_(s, AGG_LOG_INFO, "propensity: estimated from %" PRIu64 " extra draws per choice",
              cfg->propensity_samples);
    else
        logf_(s, AGG_LOG_INFO, "propensity: 1 (the policy chooses deterministically)");
    *out = s;
    return LDPB_OK;
fail:
    agg_server_free(s);
    return err;
}

void agg_server_set_sender(agg_server *s, agg_send_fn send, void *ctx)
{
    if (!s || s->started)
        return;
    s->send = send ? send : null_send;
    s->send_ctx = send ? ctx : NULL;
}

void agg_server_inject_disk_full(agg_server *s, int on)
{
    agg_store_inject_disk_full(s->store, on);
}

void agg_server_stats_get(agg_server *s, agg_server_stats *o)
{
    memset(o, 0, sizeof *o);
    o->requests = atomic_load(&s->n_requests);
    o->assignments = atomic_load(&s->n_assignments);
    o->reports = atomic_load(&s->n_reports);
    o->duplicates = atomic_load(&s->n_duplicates);
    o->status = atomic_load(&s->n_status);
    o->plain_errors = atomic_load(&s->n_plain_errors);
    for (int i = 0; i < 32; i++)
        o->errors[i] = atomic_load(&s->n_errors[i]);
    o->batches = atomic_load(&s->n_batches);
    o->batch_items = atomic_load(&s->n_batch_items);
    o->commit_failures = atomic_load(&s->n_commit_failures);
    o->commit_us = atomic_load(&s->commit_us);
    for (size_t b = 0; b <= AGG_COMMIT_BUCKETS; b++)
        o->commit_hist[b] = atomic_load(&s->commit_hist[b]);
    pthread_mutex_lock(&s->seal_mu);
    o->replay_entries = ldpb_replay_count(s->rp);
    o->replay_evicted = ldpb_replay_evicted(s->rp);
    ldpb_keycache_stats ks;
    ldpb_keycache_stats_get(s->kc, &ks);
    o->key_derivations = ks.derived;
    o->key_derivations_refused = ks.refused;
    uint64_t floor_ms = ldpb_replay_floor_ms(s->rp), now_ms = ldpb_seal_now_ms();
    pthread_mutex_unlock(&s->seal_mu);
    o->replay_window_ms = s->cfg->replay_window_s * 1000u;
    if (floor_ms && now_ms > floor_ms && now_ms - floor_ms < o->replay_window_ms)
        o->replay_window_ms = now_ms - floor_ms;
    o->decisions_dropped = atomic_load(&s->n_decisions_dropped);
    o->send_failures = atomic_load(&s->n_send_failures);
    o->relay_batches = atomic_load(&s->n_relay_batches);
    o->assignments_paused = atomic_load(&s->commits_failing) || atomic_load(&s->space_low);
    o->decisions_deleted = atomic_load(&s->n_decisions_deleted);
    o->decision_rows = atomic_load(&s->n_decision_rows);
    o->free_bytes = atomic_load(&s->free_bytes);
    pthread_mutex_lock(&s->queue_mu);
    o->queue_depth = s->q_count;
    pthread_mutex_unlock(&s->queue_mu);
}

uint32_t agg_server_arms(const agg_server *s)
{
    return (uint32_t)s->cfg->params.k;
}

void agg_server_set_commit_hook(agg_server *s, agg_store_commit_hook fn, void *ctx)
{
    agg_store_set_commit_hook(s->store, fn, ctx);
}

ldpb_err agg_server_describe(agg_server *s, agg_arm_status *arms, uint32_t k)
{
    if (k < (uint32_t)s->cfg->params.k)
        return LDPB_ERANGE;
    pthread_mutex_lock(&s->policy_mu);
    ldpb_err err = agg_policy_describe(s->policy, arms, (uint32_t)s->cfg->params.k);
    pthread_mutex_unlock(&s->policy_mu);
    return err;
}

/* ---- transport --------------------------------------------------------------------------- */

static void nn_send_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    agg_server *s = ctx;
    void *control = to.control;
    struct nn_iovec iov = {(void *)frame, len};
    struct nn_msghdr hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.msg_iov = &iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = &control;
    hdr.msg_controllen = NN_MSG;
    if (nn_sendmsg(s->sock, &hdr, NN_DONTWAIT) < 0) {
        atomic_fetch_add(&s->n_send_failures, 1);
        logf_(s, AGG_LOG_DEBUG, "a reply could not be sent: %s", nn_strerror(nn_errno()));
        if (control)
            nn_freemsg(control);
    }
}

typedef struct worker_arg {
    agg_server *s;
    agg_worker *w;
} worker_arg;

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    agg_server *s = wa->s;
    agg_worker *w = wa->w;
    uint64_t drain_deadline = 0;
    for (;;) {
        if (atomic_load(&s->stopping)) {
            uint64_t now = mono_us();
            if (!drain_deadline)
                drain_deadline = now + DRAIN_MAX_MS * 1000u;
            else if (now > drain_deadline)
                break;
        }
        void *body = NULL, *control = NULL;
        struct nn_iovec iov = {&body, NN_MSG};
        struct nn_msghdr hdr;
        memset(&hdr, 0, sizeof hdr);
        hdr.msg_iov = &iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = &control;
        hdr.msg_controllen = NN_MSG;
        int n = nn_recvmsg(s->sock, &hdr, 0);
        if (n < 0) {
            int e = nn_errno();
            if (e == EAGAIN || e == ETIMEDOUT || e == EINTR) {
                if (atomic_load(&s->stopping) && e != EINTR)
                    break; /* drained: nothing arrived within a receive timeout */
                continue;
            }
            logf_(s, AGG_LOG_ERROR, "receive failed: %s", nn_strerror(e));
            break;
        }
        agg_reply_to to = {control, 0};
        agg_server_handle(s, w, body, (size_t)n, to);
        nn_freemsg(body);
    }
    return NULL;
}

ldpb_err agg_server_start(agg_server *s, char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!s)
        return LDPB_EINVAL;
    if (s->started) {
        say(errmsg, "already started");
        return LDPB_ESTATE;
    }
    ldpb_err err = LDPB_ETRANSPORT;
    s->sock = nn_socket(AF_SP_RAW, NN_REP);
    if (s->sock < 0) {
        say(errmsg, "nn_socket: %s", nn_strerror(nn_errno()));
        return LDPB_ETRANSPORT;
    }
    int maxsz = RECV_MAX_BYTES, tmo = RECV_TIMEOUT_MS, sndbuf = SEND_BUFFER_BYTES;
    if (nn_setsockopt(s->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsz, sizeof maxsz) < 0 ||
        nn_setsockopt(s->sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo) < 0 ||
        nn_setsockopt(s->sock, NN_SOL_SOCKET, NN_SNDBUF, &sndbuf, sizeof sndbuf) < 0) {
        say(errmsg, "nn_setsockopt: %s", nn_strerror(nn_errno()));
        goto fail;
    }
    for (size_t i = 0; i < s->cfg->n_listen; i++)
        if (nn_bind(s->sock, s->cfg->listen[i]) < 0) {
            int e = nn_errno();
            say(errmsg, "listen %s: cannot bind: %s", s->cfg->listen[i], nn_strerror(e));
            /* An address in use may come free; any other refusal is the URL's fault. */
            err = e == EADDRINUSE ? LDPB_ETRANSPORT : LDPB_EINVAL;
            goto fail;
        }
    if (s->send == null_send) {
        s->send = nn_send_reply;
        s->send_ctx = s;
    }
    if (s->cfg->metrics) {
        char mmsg[AGG_SERVER_ERRMAX] = "";
        err = agg_metrics_start(&s->metrics, s->cfg->metrics, s, mmsg);
        if (err) {
            say(errmsg, "metrics %s: %s", s->cfg->metrics, mmsg);
            goto fail;
        }
    }
    s->started = 1;
    if (pthread_create(&s->committer, NULL, committer_main, s) != 0) {
        err = LDPB_ENOMEM;
        say(errmsg, "cannot start the committer thread");
        goto fail_started;
    }
    s->committer_running = 1;
    s->workers = calloc(s->cfg->workers, sizeof *s->workers);
    worker_arg *args = calloc(s->cfg->workers, sizeof *args);
    if (!s->workers || !args) {
        free(args);
        err = LDPB_ENOMEM;
        say(errmsg, "out of memory");
        goto fail_started;
    }
    for (size_t i = 0; i < s->cfg->workers; i++) {
        args[i].s = s;
        if (agg_worker_new(&args[i].w) != LDPB_OK ||
            pthread_create(&s->workers[i], NULL, worker_main, &args[i]) != 0) {
            agg_worker_free(args[i].w);
            args[i].w = NULL;
            err = LDPB_ENOMEM;
            say(errmsg, "cannot start worker %zu", i);
            break;
        }
        s->n_workers++;
    }
    /* The worker args live until the workers are joined: park them in the server. */
    s->worker_args = args;
    if (s->n_workers < s->cfg->workers)
        goto fail_started;
    for (size_t i = 0; i < s->cfg->n_listen; i++)
        logf_(s, AGG_LOG_INFO, "listening on %s", s->cfg->listen[i]);
    logf_(s, AGG_LOG_INFO, "%zu workers, batches of up to %" PRIu64 " items", s->n_workers,
          s->cfg->batch_max);
    return LDPB_OK;
fail_started:
    agg_server_stop(s);
    return err;
fail:
    nn_close(s->sock);
    s->sock = -1;
    return err;
}

void agg_server_stop(agg_server *s)
{
    if (!s || !s->started)
        return;
    atomic_store(&s->stopping, 1);
    for (size_t i = 0; i < s->n_workers; i++)
        pthread_join(s->workers[i], NULL);
    for (size_t i = 0; s->worker_args && i < s->cfg->workers; i++)
        agg_worker_free(s->worker_args[i].w);
    free(s->worker_args);
    free(s->workers);
    s->worker_args = NULL;
    s->workers = NULL;
    s->n_workers = 0;
    if (s->committer_running) {
        pthread_mutex_lock(&s->queue_mu);
        s->committer_stop = 1;
        pthread_cond_signal(&s->queue_cv);
        pthread_mutex_unlock(&s->queue_mu);
        pthread_join(s->committer, NULL);
        s->committer_running = 0;
    }
    agg_metrics_stop(s->metrics);
    s->metrics = NULL;
    if (s->sock >= 0) {
        struct timespec ts = {0, LINGER_MS * 1000000L};
        nanosleep(&ts, NULL); /* let nanomsg flush the last replies */
        nn_close(s->sock);
        s->sock = -1;
    }
    s->started = 0;
    logf_(s, AGG_LOG_INFO, "stopped: %" PRIu64 " reports counted, %" PRIu64 " assignments",
          s->committed.reports, (uint64_t)atomic_load(&s->n_assignments));
}

void agg_server_free(agg_server *s)
{
    if (!s)
        return;
    agg_server_stop(s);
    /* Anything still queued (a server never started) is answered with an error. */
    while (s->q && s->q_count) {
        item *it = &s->q[s->q_head];
        if (it->kind == ITEM_REPORT)
            answer_report(s, it, LDPB_EIO);
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_count--;
    }
    agg_store_close(s->store);
    agg_policy_free(s->policy);
    agg_noise_free(s->noise);
    ldpb_rng_free(s->policy_rng);
    ldpb_rng_free(s->noise_rng);
    agg_policy_free(s->next);
    agg_noise_free(s->next_noise);
    ldpb_rng_free(s->next_rng);
    ldpb_rng_free(s->next_noise_rng);
    ldpb_keycache_free(s->kc);
    ldpb_replay_free(s->rp);
    agg_nonce_log_close(s->nlog);
    ldpb_keypair_wipe(&s->kp);
    agg_token_key_wipe(&s->token_key);
    agg_worker_free(s->cw);
    if (s->q)
        sodium_memzero(s->q, s->q_cap * sizeof *s->q);
    free(s->q);
    if (s->batch)
        sodium_memzero(s->batch, s->cfg->batch_max * sizeof *s->batch);
    free(s->batch);
    free(s->batch_status);
    free(s->save_buf);
    free(s->snap_buf);
    pthread_mutex_destroy(&s->seal_mu);
    pthread_mutex_destroy(&s->policy_mu);
    pthread_mutex_destroy(&s->queue_mu);
    pthread_cond_destroy(&s->queue_cv);
    ldpb_secmem_free(s, sizeof *s);
}
