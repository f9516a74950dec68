/* The reply path (server_internal.h): every reply is sealed and leaves through deliver(); the
 * collectors that gather one reply for several reports; relay batches' replies; the transport's
 * send. */
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

/* ---- replies ----------------------------------------------------------------------------- */

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

void send_plain_error(agg_server *s, agg_worker *w, agg_reply_to to, ldpb_err code,
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
void send_sealed(agg_server *s, agg_worker *w, agg_reply_to to,
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

Ldpb__V1__Envelope reply_envelope(int has_request_id, uint64_t request_id)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = has_request_id;
    env.request_id = request_id;
    return env;
}

void send_sealed_error(agg_server *s, agg_worker *w, agg_reply_to to,
                       const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                       uint64_t request_id, int has_request_id, ldpb_err code, const char *reason)
{
    Ldpb__V1__Envelope env = reply_envelope(has_request_id, request_id);
    Ldpb__V1__Error e = LDPB__V1__ERROR__INIT;
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

collector *collector_new(uint32_t n, const uint8_t *client_pk, const ldpb_seal_key *key,
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
    Ldpb__V1__Envelope env = reply_envelope(c->has_request_id, c->request_id);
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

void collector_settle(agg_server *s, agg_worker *w, struct collector *c, uint32_t slot, int status)
{
    if (slot < c->n)
        c->slots[slot].status = status;
    if (atomic_fetch_sub(&c->left, 1) != 1)
        return;
    collector_send(s, w, c);
    collector_free(c);
}

void answer_report(agg_server *s, agg_worker *w, item *it, int status)
{
    free(it->x);
    it->x = NULL;
    if (it->coll) {
        collector_settle(s, w, it->coll, it->slot, status);
        return;
    }
    if (status == 0 || status == 1) {
        Ldpb__V1__Envelope env = reply_envelope(it->has_request_id, it->request_id);
        Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
        env.ack = &ack;
        ack.assignment_id.data = it->id;
        ack.assignment_id.len = AGG_TOKEN_BYTES;
        ack.has_duplicate = 1;
        ack.duplicate = status == 1;
        send_sealed(s, w, it->to, it->client_pk, &it->key, &env);
    } else {
        const char *reason = report_error_reason(status);
        send_sealed_error(s, w, it->to, it->client_pk, &it->key, it->request_id, it->has_request_id,
                          (ldpb_err)status, reason);
    }
    sodium_memzero(&it->key, sizeof it->key);
}

void answer_batch(agg_server *s, size_t n, ldpb_err failed)
{
    size_t reports = 0;
    for (size_t i = 0; i < n; i++)
        reports += s->batch[i].kind == ITEM_REPORT;
    if (s->n_repliers == 0) {
        for (size_t i = 0; i < n; i++)
            if (s->batch[i].kind == ITEM_REPORT)
                answer_report(s, s->cw, &s->batch[i], failed ? (int)failed : s->batch_status[i]);
        return;
    }
    if (reports == 0)
        return;
    /* One hand-off per batch: the ring holds at least two batches, so the committer waits only
     * while the repliers are a whole batch behind. */
    pthread_mutex_lock(&s->reply_mu);
    while (s->rj_cap - s->rj_count < reports)
        pthread_cond_wait(&s->reply_room_cv, &s->reply_mu);
    for (size_t i = 0; i < n; i++) {
        if (s->batch[i].kind != ITEM_REPORT)
            continue;
        reply_job *j = &s->rj[(s->rj_head + s->rj_count) % s->rj_cap];
        j->it = s->batch[i];
        j->status = failed ? (int)failed : s->batch_status[i];
        s->rj_count++;
        sodium_memzero(&s->batch[i].key, sizeof s->batch[i].key);
    }
    if (s->n_repliers > 1 && reports > 1)
        pthread_cond_broadcast(&s->reply_cv);
    else
        pthread_cond_signal(&s->reply_cv);
    pthread_mutex_unlock(&s->reply_mu);
}

/* Jobs a replier takes at once: few enough that several repliers share a large batch. */
#define REPLY_TAKE 16

void *replier_main(void *arg)
{
    agg_server *s = ((worker_arg *)arg)->s;
    agg_worker *w = ((worker_arg *)arg)->w;
    reply_job *jobs = malloc(REPLY_TAKE * sizeof *jobs);
    for (;;) {
        pthread_mutex_lock(&s->reply_mu);
        while (s->rj_count == 0 && !s->reply_stop)
            pthread_cond_wait(&s->reply_cv, &s->reply_mu);
        if (s->rj_count == 0) {
            pthread_mutex_unlock(&s->reply_mu);
            break;
        }
        size_t share = (s->rj_count + s->n_repliers - 1) / s->n_repliers;
        size_t take = share < REPLY_TAKE ? share : REPLY_TAKE;
        if (!jobs)
            take = 1;
        reply_job one;
        reply_job *got = jobs ? jobs : &one;
        for (size_t i = 0; i < take; i++) {
            got[i] = s->rj[s->rj_head];
            sodium_memzero(&s->rj[s->rj_head].it.key, sizeof s->rj[s->rj_head].it.key);
            s->rj_head = (s->rj_head + 1) % s->rj_cap;
            s->rj_count--;
        }
        pthread_cond_signal(&s->reply_room_cv);
        pthread_mutex_unlock(&s->reply_mu);
        for (size_t i = 0; i < take; i++)
            answer_report(s, w, &got[i].it, got[i].status);
    }
    if (jobs)
        sodium_memzero(jobs, REPLY_TAKE * sizeof *jobs);
    free(jobs);
    return NULL;
}

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
void relay_finish(agg_server *s, relay_batch *b)
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
    relay_batch *b = to.route;
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

/* ---- transport --------------------------------------------------------------------------- */

void tp_send_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    agg_server *s = ctx;
    ldpb_tp_route r = {to.route};
    if (to.tag >= s->n_tps || ldpb_tp_reply(s->tps[to.tag], r, frame, len) != LDPB_OK) {
        /* the client is gone or its connection's queue is full: it resends */
        atomic_fetch_add(&s->n_send_failures, 1);
        logf_(s, AGG_LOG_DEBUG, "a reply could not be sent");
    }
}
