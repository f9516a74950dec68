/* Receiving and dispatch (server_internal.h): a worker's receive loop, opening a frame and
 * handing it to its request's handler, and relay batches' inner frames. */
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

#include <sodium.h>

#include "server_internal.h"

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

/* Opens one device frame, received directly or inside a relay batch, into pt (cap bytes): 0 with
 * *pt_len, *key and *pk (a view into msg) set for dispatch_frame; else `to` has had its one reply
 * (a refusal) already. With rec NULL the nonce is recorded in the nonce log here; otherwise its
 * record is left in rec and the caller writes it before the frame is acted on. */
static int open_frame(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len, agg_reply_to to,
                      uint8_t *pt, size_t cap, size_t *pt_len, ldpb_seal_key *key,
                      const uint8_t **pk, uint8_t *rec)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_frame fr;
    atomic_fetch_add(&s->n_requests, 1);
    ldpb_err err = ldpb_frame_parse(msg, len, &fr, detail);
    if (err) {
        logf_(s, AGG_LOG_DEBUG, "refused a frame: %s", detail);
        send_plain_error(s, w, to, err, detail);
        return -1;
    }
    if (fr.kind != LDPB_FRAME_SEALED) {
        send_plain_error(s, w, to, LDPB_EPROTO, "the server accepts only sealed frames");
        return -1;
    }
    memset(key, 0, sizeof *key);
    *pt_len = 0;
    /* seal_mu is held only around the table work: a derivation for a key the cache lacks (maybe
     * an attacker's fresh one) runs unlocked, so it never stalls the workers serving known keys. */
    seal_guard guard = {s, 0};
    const ldpb_seal_lock lk = {seal_lock, seal_unlock, &guard};
    err = ldpb_seal_open_request_locked(s->kc, s->rp, &lk, &fr, ldpb_seal_now_ms(), pt, cap, pt_len,
                                        key, detail);
    if (!err && s->nlog)
        err =
            rec ? agg_nonce_log_check(s->nlog, fr.client_pk, fr.nonce, ldpb_seal_now_ms(), rec,
                                      detail)
                : agg_nonce_log_accept(s->nlog, fr.client_pk, fr.nonce, ldpb_seal_now_ms(), detail);
    const int first_eviction = guard.first_eviction;
    /* An unauthenticated refusal for the budget: a flood sends thousands a second, so warn at
     * most once a minute. Only that refusal takes seal_mu here again. */
    int budget_warn = 0;
    if (err == LDPB_EBUSY && sodium_is_zero(key->k, sizeof key->k)) {
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
    *pk = fr.client_pk;
    if (err) {
        logf_(s, AGG_LOG_DEBUG, "refused a frame: %s", detail);
        if (!sodium_is_zero(key->k, sizeof key->k)) /* authentic: answer sealed */
            send_sealed_error(s, w, to, *pk, key, 0, 0, err, detail);
        else
            send_plain_error(s, w, to, err, detail);
        sodium_memzero(pt, *pt_len);
        sodium_memzero(key, sizeof *key);
        return -1;
    }
    return 0;
}

/* Serves an opened frame (open_frame): exactly one reply to `to`; wipes pt and key. */
static void dispatch_frame(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *pk,
                           ldpb_seal_key *key, uint8_t *pt, size_t pt_len)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    uint32_t version = 0;
    uint64_t request_id = 0;
    int has_request_id = 0;
    Ldpb__V1__Envelope *env = NULL;
    /* The request id is echoed whenever it is readable, even when nothing else is, so a client
     * can match the refusal to its request; the detail says what is wrong. */
    ldpb_err err = ldpb_envelope_peek(pt, pt_len, &version, &request_id, &has_request_id, detail);
    if (err) {
        send_sealed_error(s, w, to, pk, key, request_id, has_request_id, err, detail);
        goto done;
    }
    err = ldpb_envelope_decode(pt, pt_len, &env, detail);
    if (err) {
        send_sealed_error(s, w, to, pk, key, request_id, has_request_id, err, detail);
        goto done;
    }
    switch (env->body_case) {
    case LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST:
        do_assign(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT:
        do_report(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST:
        do_status(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN:
        do_report_and_assign(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_REPORT_BATCH:
        do_report_batch(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND:
        do_experiment_command(s, w, to, pk, key, env);
        break;
    case LDPB__V1__ENVELOPE__BODY_ASSIGNMENT:
    case LDPB__V1__ENVELOPE__BODY_ACK:
    case LDPB__V1__ENVELOPE__BODY_STATUS:
    case LDPB__V1__ENVELOPE__BODY_ERROR:
    case LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT:
    case LDPB__V1__ENVELOPE__BODY_BATCH_ACK:
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY:
    case LDPB__V1__ENVELOPE__BODY__NOT_SET:
    case _LDPB__V1__ENVELOPE__BODY__CASE_IS_INT_SIZE:
        send_sealed_error(s, w, to, pk, key, request_id, has_request_id, LDPB_EPROTO,
                          "not a request: the server accepts assign_request, report, "
                          "status_request, report_and_assign, report_batch and "
                          "experiment_command");
        break;
    }
done:
    ldpb_envelope_free(env);
    sodium_memzero(pt, pt_len);
    sodium_memzero(key, sizeof *key);
}

/* One device frame received directly: exactly one reply to `to`. */
static void handle_frame(agg_server *s, agg_worker *w, const uint8_t *msg, size_t len,
                         agg_reply_to to)
{
    ldpb_seal_key key;
    size_t pt_len = 0;
    const uint8_t *pk = NULL;
    if (open_frame(s, w, msg, len, to, w->pt, sizeof w->pt, &pt_len, &key, &pk, NULL) == 0)
        dispatch_frame(s, w, to, pk, &key, w->pt, pt_len);
}

/* A relay batch's inner frames w->relay_in[0..n) when the nonce log is on: every frame is opened
 * first, their nonce records go to the log in one write, and only then is any of them served,
 * so each is still recorded before it is acted on (nonce_log.h) at one system call per batch
 * instead of one per frame. A frame whose record could not be written is refused as a direct
 * one would be (LDPB_EBUSY). LDPB_ENOMEM, with nothing opened, when the working memory cannot
 * be had: the caller then serves them one by one. batch_len bounds the plaintexts (each is
 * shorter than its sealed frame, so a frame's own length is room enough for it). */
static ldpb_err serve_inner_logged(agg_server *s, agg_worker *w, relay_batch *b, size_t batch_len,
                                   size_t n)
{
    typedef struct opened {
        ldpb_seal_key key;
        const uint8_t *pk;
        uint8_t *pt; /* NULL: refused at opening, answered already */
        size_t pt_len;
    } opened;
    opened *o = calloc(n, sizeof *o);
    uint8_t *pt = malloc(batch_len);
    uint8_t *recs = malloc(n * AGG_NONCE_LOG_RECORD);
    if (!o || !pt || !recs) {
        free(o);
        free(pt);
        free(recs);
        return LDPB_ENOMEM;
    }
    /* Every frame's key-cache bucket is requested up front: the lookups then find it loaded
     * instead of each waiting for its own miss (docs/aggregator.md, "The worker's share"). A
     * frame that does not parse is left to open_frame, which refuses it. */
    for (size_t i = 0; i < n; i++) {
        ldpb_frame fr;
        if (ldpb_frame_parse(w->relay_in[i].frame, w->relay_in[i].len, &fr, NULL) == LDPB_OK &&
            fr.kind == LDPB_FRAME_SEALED)
            ldpb_keycache_prefetch(s->kc, fr.client_pk);
    }
    size_t at = 0, n_recs = 0;
    for (size_t i = 0; i < n; i++) {
        agg_reply_to inner = {b, AGG_REPLY_RELAY | (uint64_t)i};
        const ldpb_relay_entry *e = &w->relay_in[i];
        /* the same bound as a direct frame's (w->pt) */
        size_t cap = e->len < LDPB_PLAINTEXT_MAX ? e->len : LDPB_PLAINTEXT_MAX;
        if (open_frame(s, w, e->frame, e->len, inner, pt + at, cap, &o[i].pt_len, &o[i].key,
                       &o[i].pk, recs + n_recs * AGG_NONCE_LOG_RECORD) == 0) {
            o[i].pt = pt + at;
            at += e->len;
            n_recs++;
        }
    }
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = agg_nonce_log_write(s->nlog, recs, n_recs, ldpb_seal_now_ms(), detail);
    for (size_t i = 0; i < n; i++) {
        if (!o[i].pt)
            continue;
        agg_reply_to inner = {b, AGG_REPLY_RELAY | (uint64_t)i};
        if (err) {
            logf_(s, AGG_LOG_DEBUG, "refused a frame: %s", detail);
            send_sealed_error(s, w, inner, o[i].pk, &o[i].key, 0, 0, err, detail);
            sodium_memzero(o[i].pt, o[i].pt_len);
            sodium_memzero(&o[i].key, sizeof o[i].key);
        } else {
            dispatch_frame(s, w, inner, o[i].pk, &o[i].key, o[i].pt, o[i].pt_len);
        }
    }
    free(o);
    free(pt);
    free(recs);
    return LDPB_OK;
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
    /* The relay waits for the whole batch's reply anyway: one COMMIT for all its reports */
    enqueue_hold(s);
    if (!s->nlog || serve_inner_logged(s, w, b, len, n) != LDPB_OK)
        for (size_t i = 0; i < n; i++) {
            agg_reply_to inner = {b, AGG_REPLY_RELAY | (uint64_t)i};
            handle_frame(s, w, w->relay_in[i].frame, w->relay_in[i].len, inner);
        }
    enqueue_release(s);
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

void *worker_main(void *arg)
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
        ldpb_tp_msg m;
        ldpb_tp_route r;
        char detail[LDPB_DETAIL_BYTES] = "";
        ldpb_tp *tp = s->tps[wa->listener];
        ldpb_err err = ldpb_tp_recv(tp, &m, &r, RECV_TIMEOUT_MS, detail);
        if (err == LDPB_ETIMEDOUT) {
            if (atomic_load(&s->stopping))
                break; /* drained: nothing arrived within a receive timeout */
            continue;
        }
        if (err) {
            logf_(s, AGG_LOG_ERROR, "receive failed: %s", detail);
            break;
        }
        agg_reply_to to = {r.h, wa->listener};
        agg_server_handle(s, w, m.data, m.len, to);
        ldpb_tp_msg_free(tp, &m);
    }
    return NULL;
}
