/* Fuzz target for the frame parser and the server's receive path, with the fixed test keys of
 * docs/protocol.md (aggregator secret a0..bf, client secret c0..df). Each input is parsed as a
 * frame; a PLAIN_ERROR must rebuild to the same bytes; a SEALED frame goes through
 * ldpb_seal_open_request (fresh key and replay caches per input, clock at the corpus time T0)
 * and, if it opens, through the Envelope decoder. So that mutations reach the decoder through the
 * whole path, the ciphertext bytes are then also sealed as a plaintext under the test client's
 * key with the input's nonce and opened again, as the ledger fuzzer recomputes its checksum. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"

#define T0 1700000000000ULL /* the time the corpus frames were sealed at */

static void test_keypair(ldpb_keypair *kp, uint8_t first)
{
    uint8_t sk[LDPB_KEY_BYTES];
    for (unsigned i = 0; i < LDPB_KEY_BYTES; i++)
        sk[i] = (uint8_t)(first + i);
    if (ldpb_keypair_from_secret(kp, sk) != LDPB_OK)
        abort();
}

static void decode_and_check(const uint8_t *pt, size_t n)
{
    Ldpb__V1__Envelope *env = NULL;
    ldpb_err err = ldpb_envelope_decode(pt, n, &env, NULL);
    if (err != LDPB_OK) {
        if (env || (err != LDPB_EPROTO && err != LDPB_EVERSION && err != LDPB_ENOMEM &&
                    err != LDPB_ENOTSUP))
            abort();
        return;
    }
    if (ldpb_envelope_check(env, NULL) != LDPB_OK)
        abort();
    ldpb_envelope_free(env);
}

/* The server receive path on one frame; returns its result. */
static ldpb_err receive(const ldpb_keypair *server, const ldpb_frame *f, uint8_t *pt)
{
    ldpb_keycache_opts ko;
    ldpb_keycache_opts_init(&ko);
    ko.max_entries = 4;
    ldpb_replay_opts ro;
    ldpb_replay_opts_init(&ro);
    ro.max_entries = 4;
    ldpb_keycache *kc = NULL;
    ldpb_replay *rp = NULL;
    if (ldpb_keycache_new(&kc, server, &ko) != LDPB_OK || ldpb_replay_new(&rp, &ro) != LDPB_OK)
        abort();
    size_t n = 0;
    ldpb_seal_key key;
    ldpb_err err = ldpb_seal_open_request(kc, rp, f, T0, pt, LDPB_PLAINTEXT_MAX, &n, &key, NULL);
    if (err == LDPB_OK) {
        if (n != f->ciphertext_len - LDPB_FRAME_MAC_BYTES || ldpb_replay_count(rp) != 1)
            abort();
        /* a second delivery of the same frame is a replay */
        size_t n2;
        if (ldpb_seal_open_request(kc, rp, f, T0, pt + n, LDPB_PLAINTEXT_MAX, &n2, NULL, NULL) !=
            LDPB_EREPLAY)
            abort();
        decode_and_check(pt, n);
        ldpb_seal_key_wipe(&key);
    } else if (err != LDPB_ECRYPTO && err != LDPB_EREPLAY && err != LDPB_EPROTO) {
        abort();
    } else if (n != 0) {
        abort();
    }
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
    return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ldpb_frame f;
    ldpb_err err = ldpb_frame_parse(data, size, &f, NULL);
    if (err != LDPB_OK) {
        if (err != LDPB_EPROTO && err != LDPB_EVERSION)
            abort();
        return 0;
    }
    if (f.kind == LDPB_FRAME_PLAIN_ERROR) {
        char reason[LDPB_WIRE_STRING_MAX + 1];
        memcpy(reason, f.reason, f.reason_len);
        reason[f.reason_len] = '\0';
        uint8_t again[LDPB_FRAME_ERROR_MIN + LDPB_WIRE_STRING_MAX];
        size_t len;
        if (ldpb_frame_build_plain_error(again, sizeof again, &len, f.error_code, reason) !=
                LDPB_OK ||
            len != size || memcmp(again, data, size) != 0)
            abort();
        return 0;
    }
    ldpb_keypair server, client;
    test_keypair(&server, 0xa0);
    test_keypair(&client, 0xc0);
    /* two pages for the plaintexts: receive() also opens a second copy behind the first */
    uint8_t *pt = malloc(2 * LDPB_PLAINTEXT_MAX);
    uint8_t *frame = malloc(LDPB_FRAME_MAX);
    if (!pt || !frame)
        abort();
    receive(&server, &f, pt);

    /* the same nonce and bytes, sealed properly by the test client: always authentic */
    size_t n = f.ciphertext_len;
    if (n <= LDPB_PLAINTEXT_MAX) {
        ldpb_seal_key k;
        uint8_t nonce[LDPB_NONCE_BYTES];
        memcpy(nonce, f.nonce, sizeof nonce);
        nonce[8] = LDPB_DIR_TO_SERVER;
        size_t len;
        if (ldpb_seal_key_derive(&k, server.pk, client.sk) != LDPB_OK ||
            ldpb_seal_frame(frame, LDPB_FRAME_MAX, &len, client.pk, &k, nonce, f.ciphertext, n) !=
                LDPB_OK)
            abort();
        ldpb_frame g;
        if (ldpb_frame_parse(frame, len, &g, NULL) != LDPB_OK)
            abort();
        err = receive(&server, &g, pt);
        uint64_t t = ldpb_nonce_time_ms(nonce);
        int in_window =
            t >= T0 - LDPB_REPLAY_WINDOW_DEFAULT_MS && t <= T0 + LDPB_REPLAY_WINDOW_DEFAULT_MS;
        if ((err == LDPB_OK) != in_window)
            abort();
        ldpb_seal_key_wipe(&k);
    }
    free(frame);
    free(pt);
    ldpb_keypair_wipe(&server);
    ldpb_keypair_wipe(&client);
    return 0;
}
