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
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND:
        do_experiment_command(s, w, to, pk, &key, env);
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
        send_sealed_error(s, w, to, pk, &key, request_id, has_request_id, LDPB_EPROTO,
                          "not a request: the server accepts assign_request, report, "
                          "status_request, report_and_assign, report_batch and "
                          "experiment_command");
        break;
    }
done:
    ldpb_envelope_free(env);
    sodium_memzero(w->pt, pt_len);
    sodium_memzero(&key, sizeof key);
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
