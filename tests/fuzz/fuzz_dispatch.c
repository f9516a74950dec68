/* Fuzz target for the aggregator's request dispatch (aggregator/daemon/server.c): bytes go
 * through agg_server_handle and the committer (agg_server_commit_batch) of a server with a
 * temporary SQLite state and fixed keys, and every request must get exactly one reply that is a
 * well-formed frame. The first input byte picks how the rest is used:
 *   0  the rest is a frame, as received from the network
 *   1  the rest is an Envelope's bytes, sealed by a fixed client (reaches the decoder)
 *   2  the rest describes a Report for an assignment the server issued (reaches the report
 *      checks and the committer): [flip u8][mechanism u8][value kind u8][epsilon f64][value f64]
 *      where a nonzero `flip` corrupts that byte of the assignment id
 *   3  a relay batch (docs/protocol.md section 11): [k u8] then Envelope bytes, sealed k % 8 + 1
 *      times by the fixed client (fresh nonces), plus the first sealed frame again (a replay);
 *      the one RELAY_REPLY must answer every entry with a well-formed frame
 * A RELAY_REPLY may answer only a well-formed relay batch, with one entry per batch entry. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_target.h"
#include "ldpb/keyfile.h"
#include "ldpb/relay.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"
#include "server.h"

typedef struct fuzz_state {
    char dir[64];
    agg_config cfg;
    agg_server *srv;
    agg_worker *w;
    ldpb_keypair client;
    ldpb_seal_key key;
    ldpb_rng *rng;
    unsigned replies;     /* replies delivered since the last reset */
    size_t relay_entries; /* the message handled is a relay batch of this many entries; 0: not */
    ldpb_relay_entry batch[LDPB_RELAY_ENTRIES_MAX]; /* its entries (the ids to answer) */
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
} fuzz_state;

static fuzz_state *st;

static void on_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    fuzz_state *f = ctx;
    (void)to;
    ldpb_frame fr;
    if (ldpb_relay_is_kind(frame, len, LDPB_FRAME_RELAY_REPLY)) {
        static ldpb_relay_entry e[LDPB_RELAY_ENTRIES_MAX];
        size_t n = 0;
        if (!f->relay_entries ||
            ldpb_relay_parse(frame, len, LDPB_FRAME_RELAY_REPLY, e, LDPB_RELAY_ENTRIES_MAX, &n,
                             NULL) != LDPB_OK ||
            n != f->relay_entries)
            abort();
        for (size_t i = 0; i < n; i++)
            if (e[i].id != f->batch[i].id ||
                ldpb_frame_parse(e[i].frame, e[i].len, &fr, NULL) != LDPB_OK)
                abort();
        f->replies++;
        return;
    }
    if (ldpb_frame_parse(frame, len, &fr, NULL) != LDPB_OK)
        abort(); /* the server must only ever send well-formed frames */
    if (fr.kind == LDPB_FRAME_SEALED && f->id_len == 0) {
        /* Keep the first assignment issued to the fixed client for mode 2. */
        uint8_t pt[1024];
        size_t pt_len;
        Ldpb__V1__Envelope *env = NULL;
        if (ldpb_seal_open(&fr, &f->key, LDPB_DIR_TO_CLIENT, f->client.pk, pt, sizeof pt, &pt_len,
                           NULL) == LDPB_OK &&
            ldpb_envelope_decode(pt, pt_len, &env, NULL) == LDPB_OK &&
            env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
            memcpy(f->id, env->assignment->assignment_id.data, env->assignment->assignment_id.len);
            f->id_len = env->assignment->assignment_id.len;
        }
        ldpb_envelope_free(env);
    }
    f->replies++;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    if (!st)
        return;
    agg_worker_free(st->w);
    agg_server_free(st->srv);
    agg_config_fini(&st->cfg);
    ldpb_rng_free(st->rng);
    nftw(st->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(st);
    st = NULL;
}

/* Handles one message and commits: exactly one reply must come back. */
static void roundtrip(const uint8_t *msg, size_t len)
{
    st->replies = 0;
    st->relay_entries = 0;
    (void)ldpb_relay_parse(msg, len, LDPB_FRAME_RELAY_BATCH, st->batch, LDPB_RELAY_ENTRIES_MAX,
                           &st->relay_entries, NULL);
    agg_reply_to to = {NULL, 1};
    agg_server_handle(st->srv, st->w, msg, len, to);
    while (agg_server_commit_batch(st->srv) > 0)
        ;
    if (st->replies != 1)
        abort();
}

static void send_sealed_pt(const uint8_t *pt, size_t pt_len)
{
    static uint8_t frame[LDPB_FRAME_MAX];
    uint8_t nonce[LDPB_NONCE_BYTES];
    size_t len = 0;
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, st->rng);
    if (ldpb_seal_frame(frame, sizeof frame, &len, st->client.pk, &st->key, nonce, pt, pt_len) !=
        LDPB_OK)
        return; /* too long to seal: nothing to send */
    roundtrip(frame, len);
}

/* Mode 3: k sealings of `pt`, then the first one again, as one relay batch. */
static void send_relay_batch(size_t k, const uint8_t *pt, size_t pt_len)
{
    static uint8_t frames[9][LDPB_FRAME_MAX];
    static uint8_t batch[LDPB_RELAY_BATCH_MAX];
    ldpb_relay_entry e[9];
    for (size_t i = 0; i < k; i++) {
        uint8_t nonce[LDPB_NONCE_BYTES];
        size_t len = 0;
        ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, st->rng);
        if (ldpb_seal_frame(frames[i], LDPB_FRAME_MAX, &len, st->client.pk, &st->key, nonce, pt,
                            pt_len) != LDPB_OK)
            return;
        e[i] = (ldpb_relay_entry){(uint32_t)(i * 3 + 1), frames[i], len};
    }
    e[k] = (ldpb_relay_entry){(uint32_t)(k * 3 + 1), frames[0], e[0].len};
    size_t len = 0;
    if (ldpb_relay_build(batch, sizeof batch, &len, LDPB_FRAME_RELAY_BATCH, e, k + 1) != LDPB_OK)
        return; /* too large for one batch */
    roundtrip(batch, len);
}

static int setup(void)
{
    st = calloc(1, sizeof *st);
    if (!st)
        return -1;
    snprintf(st->dir, sizeof st->dir, "/tmp/ldpb-fuzz-dispatch-XXXXXX");
    if (!mkdtemp(st->dir))
        return -1;
    atexit(cleanup);
    uint8_t server_sk[LDPB_KEY_BYTES], client_sk[LDPB_KEY_BYTES];
    memset(server_sk, 0x51, sizeof server_sk);
    memset(client_sk, 0xc1, sizeof client_sk);
    ldpb_keypair server;
    char path[128], detail[LDPB_DETAIL_BYTES], err[AGG_SERVER_ERRMAX];
    snprintf(path, sizeof path, "%s/server.key", st->dir);
    if (ldpb_keypair_from_secret(&server, server_sk) != LDPB_OK ||
        ldpb_keypair_from_secret(&st->client, client_sk) != LDPB_OK ||
        ldpb_seal_key_derive(&st->key, server.pk, st->client.sk) != LDPB_OK ||
        ldpb_keyfile_write(path, LDPB_KEYFILE_SECRET, server.sk, 0, detail) != LDPB_OK)
        return -1;
    ldpb_keypair_wipe(&server);
    agg_config_init(&st->cfg);
    char state[128];
    snprintf(state, sizeof state, "%s/state", st->dir);
    const char *kv[][2] = {{"listen", "ipc:///nonexistent/unused"},
                           {"state_dir", state},
                           {"key", path},
                           {"arms", "3"},
                           {"batch_max", "8"},
                           {"queue_max", "16"},
                           {"replay_entries", "1000000"},
                           {"log_level", "error"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (agg_config_set(&st->cfg, kv[i][0], kv[i][1], 1, err) != LDPB_OK)
            return -1;
    if (agg_server_new(&st->srv, &st->cfg, NULL, NULL, err) != LDPB_OK ||
        agg_worker_new(&st->w) != LDPB_OK || ldpb_rng_new_system(&st->rng) != LDPB_OK)
        return -1;
    agg_server_set_sender(st->srv, on_reply, st);
    /* One assignment for mode 2. */
    static const uint8_t assign[] = {0x08, 0x01, 0x52, 0x00};
    send_sealed_pt(assign, sizeof assign);
    return st->id_len ? 0 : -1;
}

static double get_f64(const uint8_t *p)
{
    double d;
    memcpy(&d, p, sizeof d);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!st && setup() != 0)
        abort();
    if (size == 0)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0:
        roundtrip(p, n);
        break;
    case 1:
        send_sealed_pt(p, n);
        break;
    case 3:
        if (n >= 1)
            send_relay_batch((size_t)(p[0] % 8) + 1, p + 1, n - 1);
        break;
    default: {
        if (n < 19)
            return 0;
        uint8_t id[LDPB_WIRE_ID_MAX];
        memcpy(id, st->id, st->id_len);
        if (p[0])
            id[p[0] % st->id_len] ^= p[0];
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        env.protocol_version = LDPB_PROTOCOL_VERSION;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        env.report = &rep;
        rep.assignment_id.data = id;
        rep.assignment_id.len = st->id_len;
        rep.mechanism = (Ldpb__V1__Mechanism)(p[1] % 7);
        rep.epsilon = get_f64(p + 3);
        if (p[2] & 1) {
            rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
            rep.bit = p[11] % 3;
        } else {
            rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
            rep.real = get_f64(p + 11);
        }
        /* Packed without the sender's checks: the server must refuse what they would. */
        uint8_t pt[256];
        size_t len = ldpb__v1__envelope__get_packed_size(&env);
        if (len <= sizeof pt) {
            ldpb__v1__envelope__pack(&env, pt);
            send_sealed_pt(pt, len);
        }
        break;
    }
    }
    return 0;
}
