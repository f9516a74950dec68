/* Fuzz target for the client's report queue file decoder (client/src/report_queue.c). Each input
 * is parsed twice: as given (the checksum almost always fails, which tests the outer checks) and
 * with its last 32 bytes replaced by the correct BLAKE2b of the rest, so the checks of each entry
 * behind the checksum are reached too. An accepted file must hold at most LDPB_CLIENT_QUEUE_MAX
 * distinct ids, every entry must make a Report that the wire's own sender check accepts and that
 * carries the stored value unchanged, and the queue must re-encode to exactly the same bytes. A
 * refused one is LDPB_ECORRUPT (or LDPB_ENOMEM), never anything else. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz_target.h"
#include "ldpb/client.h"
#include "ldpb/wire.h"
#include "report_queue.h"

#define HASH_BYTES 32u

static void check_entry(const rq_entry *e)
{
    Ldpb__V1__Report rep;
    rq_report_of(&rep, e);
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = 1;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    if (ldpb_envelope_check(&env, NULL) != LDPB_OK)
        abort();
    /* What is sent is what was stored: a bit entry holds exactly 0 or 1. */
    if (e->is_bit ? (double)rep.bit != e->value : rep.real != e->value)
        abort();
}

static void parse_and_check(const uint8_t *buf, size_t len)
{
    rq *q = NULL;
    if (rq_open(&q, NULL, LDPB_CLIENT_QUEUE_MAX) != LDPB_OK)
        abort();
    ldpb_err err = rq_parse(q, buf, len, LDPB_CLIENT_QUEUE_MAX);
    if (err != LDPB_OK) {
        if (err != LDPB_ECORRUPT && err != LDPB_ENOMEM)
            abort();
        rq_close(q);
        return;
    }
    if (q->n > LDPB_CLIENT_QUEUE_MAX)
        abort();
    for (size_t i = 0; i < q->n; i++) {
        check_entry(&q->e[i]);
        for (size_t j = 0; j < i; j++)
            if (q->e[j].id_len == q->e[i].id_len &&
                memcmp(q->e[j].id, q->e[i].id, q->e[i].id_len) == 0)
                abort();
    }
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    if (rq_encode(q, &enc, &enc_len) == LDPB_OK && (enc_len != len || memcmp(enc, buf, len) != 0))
        abort();
    free(enc);
    rq_close(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sodium_init() < 0)
        abort();
    parse_and_check(data, size);
    if (size >= HASH_BYTES) {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        size_t body = size - HASH_BYTES;
        crypto_generichash(copy + body, HASH_BYTES, copy, body, NULL, 0);
        parse_and_check(copy, size);
        free(copy);
    }
    return 0;
}
