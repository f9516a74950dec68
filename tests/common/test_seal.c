/* Sealed frames and the server's tables: keys agree on both sides; seal/open round trips; every
 * flipped or truncated byte, a wrong key and a reflected frame are refused; the time window and
 * the replay cache (repeat, stale, future, expiry, a clock stepped back, full: the window
 * narrows); the key cache
 * (hits, LRU eviction, allow-list, forged keys never cached); the server receive path (keys
 * derived outside the caller's lock, forged keys remembered apart, the derivation budget); the
 * worked example of docs/protocol.md byte for byte; and out-of-memory in the constructors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "ldpb/seal.h"
#include "ldpb/wire.h"

/* Allocation counting and failure injection: linked with -Wl,--wrap=malloc,...
 * (tests/support/alloc_fail.h). */
#include "alloc_fail.h"

/* ---- fixtures ------------------------------------------------------------------------------ */

#define T0     1700000000000ULL /* 2023-11-14T22:13:20Z, in ms */
#define WINDOW 300000ULL

/* The test keys of docs/protocol.md: secret bytes a0..bf (aggregator) and c0..df (client). */
static ldpb_keypair server, client;
static ldpb_seal_key k_client; /* derived by the client: beforenm(server.pk, client.sk) */
static ldpb_rng *rng;

static int setup(void **state)
{
    (void)state;
    uint8_t s[LDPB_KEY_BYTES], c[LDPB_KEY_BYTES];
    for (int i = 0; i < 32; i++) {
        s[i] = (uint8_t)(0xa0 + i);
        c[i] = (uint8_t)(0xc0 + i);
    }
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "test_seal");
    if (ldpb_keypair_from_secret(&server, s) || ldpb_keypair_from_secret(&client, c) ||
        ldpb_seal_key_derive(&k_client, server.pk, client.sk) || ldpb_rng_new_seeded(&rng, seed))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ldpb_rng_free(rng);
    ldpb_keypair_wipe(&server);
    ldpb_keypair_wipe(&client);
    ldpb_seal_key_wipe(&k_client);
    return 0;
}

static ldpb_keycache *new_keycache(size_t max, size_t allow)
{
    ldpb_keycache_opts o;
    ldpb_keycache_opts_init(&o);
    o.max_entries = max;
    o.allowlist_max = allow;
    ldpb_keycache *kc = NULL;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_OK);
    return kc;
}

static ldpb_replay *new_replay(size_t max)
{
    ldpb_replay_opts o;
    ldpb_replay_opts_init(&o);
    o.max_entries = max;
    ldpb_replay *rp = NULL;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_OK);
    return rp;
}

/* Seals `pt` from `from` (a client keypair) to the test server at time `t`, direction `dir`. */
static size_t seal(uint8_t *frame, const ldpb_keypair *from, uint64_t t, ldpb_direction dir,
                   const uint8_t *pt, size_t n)
{
    ldpb_seal_key k;
    uint8_t nonce[LDPB_NONCE_BYTES];
    size_t len = 0;
    assert_int_equal(ldpb_seal_key_derive(&k, server.pk, from->sk), LDPB_OK);
    ldpb_nonce_make(nonce, t, dir, rng);
    assert_int_equal(ldpb_seal_frame(frame, LDPB_FRAME_MAX, &len, from->pk, &k, nonce, pt, n),
                     LDPB_OK);
    ldpb_seal_key_wipe(&k);
    return len;
}

static void parse(const uint8_t *frame, size_t len, ldpb_frame *f)
{
    assert_int_equal(ldpb_frame_parse(frame, len, f, NULL), LDPB_OK);
}

static uint8_t frame[LDPB_FRAME_MAX], pt[LDPB_FRAME_MAX];
static const uint8_t msg[] = "\x08\x01\x72\x00 status request";

/* ---- keys, sealing ------------------------------------------------------------------------- */

static void keys_agree(void **state)
{
    (void)state;
    ldpb_seal_key k_server;
    assert_int_equal(ldpb_seal_key_derive(&k_server, client.pk, server.sk), LDPB_OK);
    assert_memory_equal(k_server.k, k_client.k, LDPB_KEY_BYTES);
    ldpb_keypair a, b;
    assert_int_equal(ldpb_keypair_generate(&a), LDPB_OK);
    assert_int_equal(ldpb_keypair_from_secret(&b, a.sk), LDPB_OK);
    assert_memory_equal(a.pk, b.pk, LDPB_KEY_BYTES);
    assert_memory_not_equal(a.pk, client.pk, LDPB_KEY_BYTES);
    ldpb_keypair_wipe(&a);
    uint8_t zero[LDPB_KEY_BYTES] = {0};
    assert_memory_equal(a.sk, zero, LDPB_KEY_BYTES);
    /* a low-order public key gives an all-zero shared secret: refused */
    assert_int_equal(ldpb_seal_key_derive(&k_server, zero, server.sk), LDPB_ECRYPTO);
    assert_int_equal(ldpb_seal_key_derive(NULL, zero, server.sk), LDPB_EINVAL);
    assert_int_equal(ldpb_keypair_generate(NULL), LDPB_EINVAL);
    ldpb_seal_key_wipe(&k_server);
    ldpb_keypair_wipe(&b);
}

static void seal_open_round_trip(void **state)
{
    (void)state;
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    assert_int_equal(len, LDPB_FRAME_SEALED_OVERHEAD + sizeof msg);
    ldpb_frame f;
    parse(frame, len, &f);
    assert_memory_equal(f.client_pk, client.pk, LDPB_KEY_BYTES);
    assert_true(ldpb_nonce_time_ms(f.nonce) == T0);
    assert_int_equal(f.nonce[8], LDPB_DIR_TO_SERVER);
    size_t n = 0;
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_SERVER, NULL, pt, sizeof pt, &n, NULL), LDPB_OK);
    assert_int_equal(n, sizeof msg);
    assert_memory_equal(pt, msg, sizeof msg);
    /* the plaintext buffer must hold ciphertext_len - 16 bytes */
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_SERVER, NULL, pt, sizeof msg - 1, &n, detail),
        LDPB_ERANGE);

    /* two seals of one message differ (fresh nonce) */
    uint8_t other[256];
    size_t len2 = seal(other, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    assert_int_equal(len2, len);
    assert_memory_not_equal(other + 38, frame + 38, len - 38);

    /* the largest plaintext fits a frame of exactly LDPB_FRAME_MAX; one byte more does not */
    static uint8_t big[LDPB_PLAINTEXT_MAX + 1];
    uint8_t nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_seal_frame(frame, sizeof frame, &len, client.pk, &k_client, nonce, big,
                                     LDPB_PLAINTEXT_MAX),
                     LDPB_OK);
    assert_int_equal(len, LDPB_FRAME_MAX);
    assert_int_equal(ldpb_seal_frame(frame, sizeof frame, &len, client.pk, &k_client, nonce, big,
                                     LDPB_PLAINTEXT_MAX + 1),
                     LDPB_ERANGE);
    assert_int_equal(ldpb_seal_frame(frame, 90, &len, client.pk, &k_client, nonce, msg, sizeof msg),
                     LDPB_ERANGE);
    assert_int_equal(len, LDPB_FRAME_SEALED_OVERHEAD + sizeof msg);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &len, NULL, &k_client, nonce, msg, sizeof msg),
        LDPB_EINVAL);
}

static void every_flipped_byte_is_refused(void **state)
{
    (void)state;
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    /* nonce, MAC and ciphertext: the MAC fails */
    for (size_t i = 38; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit += 7) {
            frame[i] ^= (uint8_t)(1u << bit);
            ldpb_frame f;
            parse(frame, len, &f);
            size_t n = 1;
            memset(pt, 0x5a, sizeof msg);
            ldpb_err err =
                ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_SERVER, NULL, pt, sizeof pt, &n, NULL);
            if (err != LDPB_ECRYPTO)
                fail_msg("byte %zu bit %u: %s", i, bit, ldpb_errname(err));
            assert_int_equal(n, 0);
            assert_int_equal(pt[0], 0x5a); /* nothing written */
            frame[i] ^= (uint8_t)(1u << bit);
        }
    }
    /* the client key field: the server derives another key and the MAC fails */
    ldpb_keycache *kc = new_keycache(16, 0);
    ldpb_replay *rp = new_replay(16);
    for (size_t i = 6; i < 38; i++) {
        frame[i] ^= 0x40;
        ldpb_frame f;
        parse(frame, len, &f);
        size_t n;
        ldpb_err err = ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL);
        if (err != LDPB_ECRYPTO)
            fail_msg("key byte %zu: %s", i, ldpb_errname(err));
        frame[i] ^= 0x40;
    }
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.entries, 0); /* keys that never authenticated are not cached */
    ldpb_frame f;
    parse(frame, len, &f);
    size_t n;
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_OK);
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.entries, 1);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

static void truncated_frames_fail_cleanly(void **state)
{
    (void)state;
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, frame, n);
        ldpb_frame f;
        ldpb_err err = ldpb_frame_parse(copy, n, &f, NULL);
        if (err == LDPB_OK) {
            size_t m;
            err = ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_SERVER, NULL, pt, sizeof pt, &m, NULL);
            assert_int_equal(err, LDPB_ECRYPTO);
        } else {
            assert_int_equal(err, LDPB_EPROTO);
            assert_true(n < LDPB_FRAME_SEALED_OVERHEAD);
        }
        free(copy);
    }
}

static void wrong_server_key(void **state)
{
    (void)state;
    /* the client pinned another aggregator key: the real aggregator cannot open its frames */
    ldpb_keypair other;
    ldpb_seal_key k;
    uint8_t nonce[LDPB_NONCE_BYTES];
    size_t len, n;
    assert_int_equal(ldpb_keypair_generate(&other), LDPB_OK);
    assert_int_equal(ldpb_seal_key_derive(&k, other.pk, client.sk), LDPB_OK);
    ldpb_nonce_make(nonce, T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &len, client.pk, &k, nonce, msg, sizeof msg), LDPB_OK);
    ldpb_keycache *kc = new_keycache(4, 0);
    ldpb_replay *rp = new_replay(4);
    ldpb_frame f;
    parse(frame, len, &f);
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail),
                     LDPB_ECRYPTO);
    assert_non_null(strstr(detail, "authentication"));
    assert_int_equal(ldpb_replay_count(rp), 0);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
    ldpb_seal_key_wipe(&k);
    ldpb_keypair_wipe(&other);
}

static void direction_is_checked(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(4, 0);
    ldpb_replay *rp = new_replay(4);
    ldpb_frame f;
    size_t n;
    char detail[LDPB_DETAIL_BYTES];
    /* a server-to-client frame sent back to the server (reflection) */
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_CLIENT, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail),
                     LDPB_EREPLAY);
    assert_non_null(strstr(detail, "reflected"));
    assert_int_equal(n, 0);
    /* the client refuses a client-to-server frame as a reply */
    len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_CLIENT, client.pk, pt, sizeof pt, &n, NULL),
        LDPB_EREPLAY);
    /* a direction byte that is neither */
    uint8_t nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, T0, LDPB_DIR_TO_SERVER, rng);
    nonce[8] = 2;
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &len, client.pk, &k_client, nonce, msg, sizeof msg),
        LDPB_OK);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_EPROTO);
    /* a reply that carries another client's key is refused by the client */
    len = seal(frame, &client, T0, LDPB_DIR_TO_CLIENT, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_CLIENT, client.pk, pt, sizeof pt, &n, NULL),
        LDPB_OK);
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_CLIENT, server.pk, pt, sizeof pt, &n, detail),
        LDPB_ECRYPTO);
    assert_int_equal(ldpb_replay_count(rp), 0);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

/* ---- time window and replay cache ----------------------------------------------------------- */

static void nonce_time_window(void **state)
{
    (void)state;
    uint8_t nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, T0, LDPB_DIR_TO_CLIENT, rng);
    assert_true(ldpb_nonce_time_ms(nonce) == T0);
    assert_int_equal(nonce[8], 1);
    assert_memory_equal(nonce, "\x00\x68\xe5\xcf\x8b\x01\x00\x00", 8); /* LE 1700000000000 */
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_nonce_check_time(nonce, T0 + WINDOW, WINDOW, NULL), LDPB_OK);
    assert_int_equal(ldpb_nonce_check_time(nonce, T0 - WINDOW, WINDOW, NULL), LDPB_OK);
    assert_int_equal(ldpb_nonce_check_time(nonce, T0 + WINDOW + 1, WINDOW, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "behind"));
    assert_int_equal(ldpb_nonce_check_time(nonce, T0 - WINDOW - 1, WINDOW, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "ahead"));
    uint64_t now = ldpb_seal_now_ms();
    assert_true(now > T0 && now < T0 + 100ULL * 365 * 86400000);
}

static void replay_repeat_stale_future(void **state)
{
    (void)state;
    ldpb_replay *rp = new_replay(1024);
    uint8_t nonce[LDPB_NONCE_BYTES];
    char detail[LDPB_DETAIL_BYTES];
    ldpb_nonce_make(nonce, T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0 + 1000, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "already used"));
    /* the same nonce from another client is another message */
    assert_int_equal(ldpb_replay_check(rp, server.pk, nonce, T0, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_count(rp), 2);

    ldpb_nonce_make(nonce, T0 - WINDOW - 1, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "behind"));
    ldpb_nonce_make(nonce, T0 + 1000 + WINDOW + 1, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0 + 1000, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "ahead"));
    assert_int_equal(ldpb_replay_count(rp), 2);
    /* edges of the window are inside */
    ldpb_nonce_make(nonce, T0 + 1000 - WINDOW, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0 + 1000, NULL), LDPB_OK);
    ldpb_nonce_make(nonce, T0 + 1000 + WINDOW, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0 + 1000, NULL), LDPB_OK);
    ldpb_replay_free(rp);
}

static void replay_expiry_and_clock(void **state)
{
    (void)state;
    ldpb_replay *rp = new_replay(4096);
    enum { N = 2000 };
    static uint64_t ts[N];
    uint8_t nonce[LDPB_NONCE_BYTES], first[LDPB_NONCE_BYTES];
    for (int i = 0; i < N; i++) {
        ts[i] = T0 - WINDOW + ldpb_rng_uniform(rng, 2 * WINDOW + 1);
        ldpb_nonce_make(nonce, ts[i], LDPB_DIR_TO_SERVER, rng);
        assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0, NULL), LDPB_OK);
    }
    assert_int_equal(ldpb_replay_count(rp), N);
    /* as the clock advances, exactly the entries whose time + window has passed go */
    for (uint64_t now = T0; now <= T0 + 2 * WINDOW + 2; now += 7919) {
        ldpb_nonce_make(nonce, now, LDPB_DIR_TO_SERVER, rng);
        assert_int_equal(ldpb_replay_check(rp, server.pk, nonce, now, NULL), LDPB_OK);
        size_t live = 0;
        for (int i = 0; i < N; i++)
            live += ts[i] + WINDOW >= now;
        size_t probes = 0; /* the server-key nonces inserted so far that are still live */
        for (uint64_t t = T0; t <= now; t += 7919)
            probes += t + WINDOW >= now;
        assert_int_equal(ldpb_replay_count(rp), live + probes);
    }
    ldpb_replay_free(rp);

    /* an expired nonce is not accepted again: it is outside the window by then; and a clock
     * stepped back does not reopen the window, because the cache keeps the latest time */
    rp = new_replay(16);
    ldpb_nonce_make(first, T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, first, T0, NULL), LDPB_OK);
    ldpb_nonce_make(nonce, T0 + WINDOW + 1, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonce, T0 + WINDOW + 1, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_count(rp), 1); /* `first` expired */
    assert_int_equal(ldpb_replay_check(rp, client.pk, first, T0 + WINDOW + 1, NULL), LDPB_EREPLAY);
    assert_int_equal(ldpb_replay_check(rp, client.pk, first, T0, NULL), LDPB_EREPLAY);
    assert_int_equal(ldpb_replay_count(rp), 1);
    ldpb_replay_free(rp);
}

/* A full cache forgets its oldest nonce and refuses every nonce not newer than it: nothing
 * forgotten can come back, and fresh requests are still served. */
static void replay_full_cache_narrows_the_window(void **state)
{
    (void)state;
    ldpb_replay *rp = new_replay(8);
    uint8_t nonces[9][LDPB_NONCE_BYTES];
    char detail[LDPB_DETAIL_BYTES];
    for (int i = 0; i < 8; i++) {
        ldpb_nonce_make(nonces[i], T0 + (uint64_t)i, LDPB_DIR_TO_SERVER, rng);
        assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[i], T0, NULL), LDPB_OK);
    }
    assert_int_equal(ldpb_replay_floor_ms(rp), 0);
    /* a ninth, newer nonce: the oldest (time T0) is forgotten, the floor rises to T0 */
    ldpb_nonce_make(nonces[8], T0 + 8, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[8], T0 + 8, detail), LDPB_OK);
    assert_int_equal(ldpb_replay_count(rp), 8);
    assert_int_equal(ldpb_replay_evicted(rp), 1);
    assert_true(ldpb_replay_floor_ms(rp) == T0);
    /* the forgotten nonce cannot be replayed, nor can any remembered one */
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[0], T0 + 8, detail), LDPB_EREPLAY);
    assert_non_null(strstr(detail, "full replay cache"));
    for (int i = 1; i < 9; i++)
        assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[i], T0 + 8, NULL), LDPB_EREPLAY);
    /* a fresh nonce at the floor's time is refused (it may collide with a forgotten one) ... */
    uint8_t fresh[LDPB_NONCE_BYTES];
    ldpb_nonce_make(fresh, T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, fresh, T0 + 8, NULL), LDPB_EREPLAY);
    /* ... one after it is accepted, forgetting the next oldest */
    ldpb_nonce_make(fresh, T0 + 9, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, fresh, T0 + 9, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_evicted(rp), 2);
    assert_true(ldpb_replay_floor_ms(rp) == T0 + 1);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[1], T0 + 9, NULL), LDPB_EREPLAY);
    /* a nonce older than the oldest live one, arriving at a full cache, is refused */
    ldpb_nonce_make(fresh, T0 + 1, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, fresh, T0 + 9, NULL), LDPB_EREPLAY);
    assert_int_equal(ldpb_replay_count(rp), 8);
    ldpb_replay_free(rp);

    /* one entry: every new request displaces the last one, and only newer times pass */
    rp = new_replay(1);
    ldpb_nonce_make(nonces[0], T0, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[0], T0, NULL), LDPB_OK);
    ldpb_nonce_make(fresh, T0 + 1, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, client.pk, fresh, T0 + 1, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_check(rp, client.pk, nonces[0], T0 + 1, NULL), LDPB_EREPLAY);
    assert_int_equal(ldpb_replay_check(rp, client.pk, fresh, T0 + 1, NULL), LDPB_EREPLAY);
    ldpb_replay_free(rp);
}

static void replay_options(void **state)
{
    (void)state;
    ldpb_replay_opts o;
    ldpb_replay_opts_init(&o);
    assert_true(o.window_ms == LDPB_REPLAY_WINDOW_DEFAULT_MS);
    assert_int_equal(o.max_entries, LDPB_REPLAY_ENTRIES_DEFAULT);
    ldpb_replay *rp = (ldpb_replay *)&rp;
    o.window_ms = 999;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_ERANGE);
    assert_null(rp);
    o.window_ms = LDPB_REPLAY_WINDOW_MAX_MS + 1;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_ERANGE);
    o.window_ms = 1000;
    o.max_entries = 0;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_ERANGE);
    o.max_entries = LDPB_REPLAY_ENTRIES_MAX + 1;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_ERANGE);
    assert_int_equal(ldpb_replay_new(&rp, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_replay_new(NULL, &o), LDPB_EINVAL);
    /* the default size allocates lazily-committed tables: creating one is cheap */
    ldpb_replay_opts_init(&o);
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_OK);
    ldpb_replay_free(rp);
    ldpb_replay_free(NULL);
    assert_int_equal(ldpb_replay_count(NULL), 0);
}

/* ---- key cache ------------------------------------------------------------------------------- */

/* ldpb_keycache_prefetch is a hint only: it counts no hit or miss and leaves the LRU order as it
 * was (were it a lookup, the prefetched key would become the most recent and survive). */
static void keycache_prefetch_is_a_hint(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(2, 0);
    ldpb_keypair a, b, c;
    assert_int_equal(ldpb_keypair_generate(&a), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&b), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&c), LDPB_OK);
    ldpb_seal_key k, want;
    ldpb_keycache_stats st;
    ldpb_keycache_prefetch(NULL, a.pk);
    ldpb_keycache_prefetch(kc, NULL);
    ldpb_keycache_prefetch(kc, a.pk); /* absent: nothing happens */
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 0 && st.misses == 0 && st.entries == 0 && st.derived == 0);
    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK);
    assert_int_equal(ldpb_keycache_get(kc, b.pk, &k), LDPB_OK); /* [b, a] */
    ldpb_keycache_prefetch(kc, a.pk);                           /* still [b, a] */
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 0 && st.misses == 2);
    assert_int_equal(ldpb_keycache_get(kc, c.pk, &k), LDPB_OK); /* evicts a: [c, b] */
    assert_int_equal(ldpb_keycache_get(kc, b.pk, &k), LDPB_OK); /* hit */
    assert_int_equal(ldpb_seal_key_derive(&want, server.pk, b.sk), LDPB_OK);
    assert_memory_equal(k.k, want.k, LDPB_KEY_BYTES);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 1 && st.misses == 3 && st.evictions == 1);
    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK); /* was evicted: a miss */
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 1 && st.misses == 4 && st.evictions == 2);
    ldpb_keycache_free(kc);
}

static void keycache_hits_and_lru(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(2, 0);
    ldpb_keypair a, b, c;
    assert_int_equal(ldpb_keypair_generate(&a), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&b), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&c), LDPB_OK);
    ldpb_seal_key k, want;
    ldpb_keycache_stats st;

    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK);
    assert_int_equal(ldpb_seal_key_derive(&want, server.pk, a.sk), LDPB_OK);
    assert_memory_equal(k.k, want.k, LDPB_KEY_BYTES); /* the client's own derivation */
    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK);
    assert_memory_equal(k.k, want.k, LDPB_KEY_BYTES);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 1 && st.misses == 1 && st.evictions == 0 && st.entries == 1);

    assert_int_equal(ldpb_keycache_get(kc, b.pk, &k), LDPB_OK); /* miss: [b, a] */
    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK); /* hit: [a, b] */
    assert_int_equal(ldpb_keycache_get(kc, c.pk, &k), LDPB_OK); /* miss, evicts b: [c, a] */
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 2 && st.misses == 3 && st.evictions == 1 && st.entries == 2);
    assert_int_equal(ldpb_keycache_get(kc, a.pk, &k), LDPB_OK); /* still cached */
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 3 && st.misses == 3);
    assert_int_equal(ldpb_keycache_get(kc, b.pk, &k), LDPB_OK); /* was evicted; evicts c */
    assert_int_equal(ldpb_seal_key_derive(&want, server.pk, b.sk), LDPB_OK);
    assert_memory_equal(k.k, want.k, LDPB_KEY_BYTES);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.hits == 3 && st.misses == 4 && st.evictions == 2 && st.entries == 2);
    assert_int_equal(ldpb_keycache_get(kc, c.pk, &k), LDPB_OK);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.misses == 5 && st.evictions == 3);

    uint8_t zero[LDPB_KEY_BYTES] = {0};
    assert_int_equal(ldpb_keycache_get(kc, zero, &k), LDPB_ECRYPTO);
    assert_int_equal(ldpb_keycache_allow(kc, a.pk), LDPB_ESTATE); /* no allow-list */
    ldpb_keycache_free(kc);

    /* a larger cache under churn: every key stays correct */
    kc = new_keycache(64, 0);
    ldpb_keypair many[100];
    for (int i = 0; i < 100; i++)
        assert_int_equal(ldpb_keypair_generate(&many[i]), LDPB_OK);
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < 100; i++) {
            int j = (i * 37 + round * 11) % 100;
            assert_int_equal(ldpb_keycache_get(kc, many[j].pk, &k), LDPB_OK);
            assert_int_equal(ldpb_seal_key_derive(&want, server.pk, many[j].sk), LDPB_OK);
            assert_memory_equal(k.k, want.k, LDPB_KEY_BYTES);
        }
    }
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.entries, 64);
    assert_true(st.hits + st.misses == 500 && st.evictions == st.misses - 64);
    ldpb_keycache_free(kc);
    ldpb_keypair_wipe(&a);
    ldpb_keypair_wipe(&b);
    ldpb_keypair_wipe(&c);
}

static void keycache_allow_list(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(8, 2);
    ldpb_keypair a, b;
    assert_int_equal(ldpb_keypair_generate(&a), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&b), LDPB_OK);
    ldpb_seal_key k;
    assert_int_equal(ldpb_keycache_get(kc, client.pk, &k), LDPB_EAUTH);
    assert_int_equal(ldpb_keycache_allow(kc, client.pk), LDPB_OK);
    assert_int_equal(ldpb_keycache_allow(kc, client.pk), LDPB_OK); /* idempotent */
    assert_int_equal(ldpb_keycache_get(kc, client.pk, &k), LDPB_OK);
    assert_memory_equal(k.k, k_client.k, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_keycache_allow(kc, a.pk), LDPB_OK);
    assert_int_equal(ldpb_keycache_allow(kc, b.pk), LDPB_ERANGE); /* full */
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.allowed, 2);

    /* the receive path refuses a key not on the list before any cryptography */
    ldpb_replay *rp = new_replay(8);
    size_t len = seal(frame, &b, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg), n;
    ldpb_frame f;
    parse(frame, len, &f);
    char detail[LDPB_DETAIL_BYTES];
    ldpb_keycache_stats_get(kc, &st);
    uint64_t misses = st.misses;
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail),
                     LDPB_EAUTH);
    assert_non_null(strstr(detail, "allow-list"));
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.misses == misses);
    len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_OK);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
    ldpb_keypair_wipe(&a);
    ldpb_keypair_wipe(&b);
}

static void keycache_options(void **state)
{
    (void)state;
    ldpb_keycache_opts o;
    ldpb_keycache_opts_init(&o);
    assert_int_equal(o.max_entries, LDPB_KEYCACHE_DEFAULT);
    assert_int_equal(o.allowlist_max, 0);
    ldpb_keycache *kc = (ldpb_keycache *)&kc;
    o.max_entries = 0;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
    assert_null(kc);
    o.max_entries = LDPB_KEYCACHE_MAX + 1;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
    o.max_entries = 1;
    o.allowlist_max = LDPB_ALLOWLIST_MAX + 1;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
    assert_int_equal(ldpb_keycache_new(&kc, NULL, &o), LDPB_EINVAL);
    ldpb_keycache_opts_init(&o);
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_OK);
    ldpb_keycache_free(kc);
    ldpb_keycache_free(NULL);
}

/* ---- the server receive path ---------------------------------------------------------------- */

static void open_request_path(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(8, 0);
    ldpb_replay *rp = new_replay(2);
    ldpb_frame f;
    ldpb_seal_key key;
    size_t n;
    char detail[LDPB_DETAIL_BYTES];
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0 + 5, pt, sizeof pt, &n, &key, NULL),
                     LDPB_OK);
    assert_int_equal(n, sizeof msg);
    assert_memory_equal(pt, msg, sizeof msg);
    assert_memory_equal(key.k, k_client.k, LDPB_KEY_BYTES);

    /* the same frame again: authentic but replayed; the reply key is given, the plaintext not */
    memset(&key, 0, sizeof key);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0 + 6, pt, sizeof pt, &n, &key, detail),
                     LDPB_EREPLAY);
    assert_int_equal(n, 0);
    assert_memory_equal(key.k, k_client.k, LDPB_KEY_BYTES);
    assert_int_equal(pt[0], 0);

    /* a stale frame */
    len = seal(frame, &client, T0 - WINDOW - 10, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail),
                     LDPB_EREPLAY);
    /* the replay cache (two entries) fills up: the oldest is forgotten, the new one served */
    len = seal(frame, &client, T0 + 1, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_OK);
    len = seal(frame, &client, T0 + 2, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail),
                     LDPB_OK);
    assert_true(ldpb_replay_evicted(rp) >= 1);

    /* a PLAIN_ERROR frame is not something to open */
    assert_int_equal(ldpb_frame_build_plain_error(frame, sizeof frame, &len, 5, "x"), LDPB_OK);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_EINVAL);
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_CLIENT, NULL, pt, sizeof pt, &n, NULL),
        LDPB_EINVAL);
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.misses, 1);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

/* ---- unauthenticated keys: derivation outside the lock, the pending table, the budget ------ */

/* A lock whose callbacks record, per section, how many derivations the cache had performed when
 * it was taken and when it was released. */
typedef struct rec_lock {
    ldpb_keycache *kc;
    int held, sections;
    uint64_t at_lock[8], at_unlock[8];
} rec_lock;

static uint64_t derived_now(ldpb_keycache *kc)
{
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    return st.derived;
}

static void rec_lock_take(void *ctx)
{
    rec_lock *r = ctx;
    assert_false(r->held); /* never taken twice */
    assert_true(r->sections < 8);
    r->held = 1;
    r->at_lock[r->sections] = derived_now(r->kc);
}

static void rec_lock_give(void *ctx)
{
    rec_lock *r = ctx;
    assert_true(r->held);
    r->held = 0;
    r->at_unlock[r->sections++] = derived_now(r->kc);
}

/* A frame from `from` at T0 with its last ciphertext byte flipped when `forge`. */
static size_t seal_from(const ldpb_keypair *from, int forge, ldpb_frame *f)
{
    size_t len = seal(frame, from, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    if (forge)
        frame[len - 1] ^= 1;
    parse(frame, len, f);
    return len;
}

static void unknown_key_is_derived_outside_the_lock(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(8, 0);
    ldpb_replay *rp = new_replay(8);
    rec_lock r = {.kc = kc};
    const ldpb_seal_lock lk = {rec_lock_take, rec_lock_give, &r};
    ldpb_keypair stranger;
    assert_int_equal(ldpb_keypair_generate(&stranger), LDPB_OK);
    ldpb_frame f;
    size_t n;
    char detail[LDPB_DETAIL_BYTES];

    /* a forged frame under a key the server has never seen: one derivation, and it happens
     * between the two sections, never inside one */
    seal_from(&stranger, 1, &f);
    assert_int_equal(
        ldpb_seal_open_request_locked(kc, rp, &lk, &f, T0, pt, sizeof pt, &n, NULL, detail),
        LDPB_ECRYPTO);
    assert_int_equal(r.sections, 2);
    assert_false(r.held);
    for (int i = 0; i < r.sections; i++)
        assert_true(r.at_lock[i] == r.at_unlock[i]);
    assert_true(r.at_unlock[0] == 0 && r.at_lock[1] == 1);
    assert_int_equal(ldpb_replay_count(rp), 0); /* unauthenticated: not in the replay cache */

    /* more forged frames under the same key: no derivation, one section (the MAC fails before
     * anything would need remembering) */
    for (int i = 0; i < 3; i++) {
        r.sections = 0;
        seal_from(&stranger, 1, &f);
        assert_int_equal(
            ldpb_seal_open_request_locked(kc, rp, &lk, &f, T0, pt, sizeof pt, &n, NULL, NULL),
            LDPB_ECRYPTO);
        assert_int_equal(r.sections, 1);
    }
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 1 && st.pending_hits == 3 && st.pending == 1);
    assert_int_equal(st.entries, 0); /* forged frames never reach the authenticated cache */
    assert_int_equal(ldpb_replay_count(rp), 0);

    /* the key's owner (an attacker may have used an honest client's public key) still gets in,
     * with the key already derived; its key moves to the cache */
    r.sections = 0;
    seal_from(&stranger, 0, &f);
    assert_int_equal(
        ldpb_seal_open_request_locked(kc, rp, &lk, &f, T0, pt, sizeof pt, &n, NULL, NULL), LDPB_OK);
    assert_int_equal(r.sections, 2);
    assert_memory_equal(pt, msg, sizeof msg);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 1 && st.entries == 1 && st.pending == 0);
    assert_int_equal(ldpb_replay_count(rp), 1);
    /* and from now on it is a cache hit: the MAC check runs unlocked too */
    r.sections = 0;
    seal_from(&stranger, 0, &f);
    assert_int_equal(
        ldpb_seal_open_request_locked(kc, rp, &lk, &f, T0, pt, sizeof pt, &n, NULL, NULL), LDPB_OK);
    assert_int_equal(r.sections, 2);
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 1 && st.hits >= 1);
    ldpb_keypair_wipe(&stranger);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

static void derivation_budget_refuses_fresh_keys(void **state)
{
    (void)state;
    ldpb_keycache_opts o;
    ldpb_keycache_opts_init(&o);
    assert_int_equal(o.pending_max, LDPB_KEYCACHE_PENDING_DEFAULT);
    assert_int_equal(o.derive_rate, LDPB_KEYCACHE_DERIVE_RATE_DEFAULT);
    o.max_entries = 64;
    o.derive_rate = 10;
    o.derive_burst = 4;
    ldpb_keycache *kc = NULL;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_OK);
    ldpb_replay *rp = new_replay(64);
    ldpb_frame f;
    size_t n;
    char detail[LDPB_DETAIL_BYTES];
    /* the honest client is known (it authenticated once) */
    size_t len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
    parse(frame, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_OK);
    /* a flood of fresh keys at one instant: the 3 tokens left are spent, the rest refused
     * unopened, and the known client is served throughout */
    int busy = 0, crypto = 0;
    for (int i = 0; i < 20; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, 1, &f);
        ldpb_err err = ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, detail);
        busy += err == LDPB_EBUSY;
        crypto += err == LDPB_ECRYPTO;
        if (err == LDPB_EBUSY)
            assert_non_null(strstr(detail, "new client keys"));
        ldpb_keypair_wipe(&k);
        len = seal(frame, &client, T0, LDPB_DIR_TO_SERVER, msg, sizeof msg);
        parse(frame, len, &f);
        assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                         LDPB_OK);
    }
    assert_int_equal(crypto, 3);
    assert_int_equal(busy, 17);
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 4 && st.refused == 17);
    /* 250 ms later: 10/s refills 2.5 derivations, so 2 more; a clock stepped back refills none;
     * a long pause refills only up to the burst (4) */
    int ok = 0;
    for (int i = 0; i < 5; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, 1, &f);
        ok += ldpb_seal_open_request(kc, rp, &f, T0 + 250, pt, sizeof pt, &n, NULL, NULL) ==
              LDPB_ECRYPTO;
        ldpb_keypair_wipe(&k);
    }
    assert_int_equal(ok, 2);
    ok = 0;
    for (int i = 0; i < 3; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, 1, &f);
        ok += ldpb_seal_open_request(kc, rp, &f, T0 - 60000, pt, sizeof pt, &n, NULL, NULL) ==
              LDPB_ECRYPTO;
        ldpb_keypair_wipe(&k);
    }
    assert_int_equal(ok, 0);
    ok = 0;
    for (int i = 0; i < 8; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, 1, &f);
        ok += ldpb_seal_open_request(kc, rp, &f, T0 + 3600000, pt, sizeof pt, &n, NULL, NULL) ==
              LDPB_ECRYPTO;
        ldpb_keypair_wipe(&k);
    }
    assert_int_equal(ok, 4);
    /* none of it reached the replay cache: only the honest client's 21 nonces */
    assert_int_equal(ldpb_replay_count(rp), 21);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);

    /* derive_rate 0: unlimited; out-of-range options refused */
    ldpb_keycache_opts_init(&o);
    o.derive_rate = 0;
    o.pending_max = 0;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_OK);
    rp = new_replay(64);
    for (int i = 0; i < 30; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, 1, &f);
        assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                         LDPB_ECRYPTO);
        ldpb_keypair_wipe(&k);
    }
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 30 && st.refused == 0 && st.pending == 0);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
    ldpb_keycache_opts_init(&o);
    o.pending_max = LDPB_KEYCACHE_MAX + 1;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
    ldpb_keycache_opts_init(&o);
    o.derive_rate = LDPB_KEYCACHE_DERIVE_RATE_MAX + 1;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
    ldpb_keycache_opts_init(&o);
    o.derive_burst = LDPB_KEYCACHE_DERIVE_RATE_MAX + 1;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_ERANGE);
}

static void allow_list_refuses_without_deriving(void **state)
{
    (void)state;
    ldpb_keycache *kc = new_keycache(8, 4);
    assert_int_equal(ldpb_keycache_allow(kc, client.pk), LDPB_OK);
    ldpb_replay *rp = new_replay(8);
    ldpb_frame f;
    size_t n;
    for (int i = 0; i < 50; i++) {
        ldpb_keypair k;
        assert_int_equal(ldpb_keypair_generate(&k), LDPB_OK);
        seal_from(&k, i % 2, &f); /* forged or not, a key off the list is never derived */
        assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                         LDPB_EAUTH);
        ldpb_keypair_wipe(&k);
    }
    ldpb_keycache_stats st;
    ldpb_keycache_stats_get(kc, &st);
    assert_true(st.derived == 0 && st.refused == 0 && st.pending == 0);
    seal_from(&client, 0, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0, pt, sizeof pt, &n, NULL, NULL),
                     LDPB_OK);
    ldpb_keycache_stats_get(kc, &st);
    assert_int_equal(st.derived, 1);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

/* ---- the worked example of docs/protocol.md section 6 -----------------------------------------
 */

static const char example_request_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d440068e5cf8b010000000102030405060708090a0b0c0d0e0fb53f"
    "f57814719528d0b72ff8b966511f801ab26cff820b6e00505df131f589c8c517"
    "f4c28c7ac4dc71b1ff6cf03139abb242807426";
static const char example_request_pt_hex[] =
    "0801102a621f0a10000102030405060708090a0b0c0d0e0f100119000000000000f03f2000";
static const char example_reply_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d44fa68e5cf8b010000011112131415161718191a1b1c1d1e1fb108"
    "53cd22a113e18918b6b96529e610775d16341a28ef5c84bb0eb3191e02420b60"
    "7af6a8b81b16";
static const char example_server_pk_hex[] =
    "605a725d2a4adfeeb1a29e17edd621c1b7593ee8cdbc44ac6c4ab6e2f805d23c";
static const char example_client_pk_hex[] =
    "dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4ae4a30c35d44";
static const char example_k_hex[] =
    "3008217445536735d8ea67fd336a3d8baa9e6c039dd99fb8e9922a8017f3ca69";

static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = 0;
    assert_int_equal(sodium_hex2bin(out, cap, hex, strlen(hex), NULL, &n, NULL), 0);
    return n;
}

/* Seals the example with a fixed nonce; checks the bytes against the document. */
static void check_example_frame(const char *want_hex, uint64_t t, ldpb_direction dir,
                                uint8_t first_random, const Ldpb__V1__Envelope *env)
{
    uint8_t body[256], nonce[LDPB_NONCE_BYTES], want[512];
    size_t blen, len;
    assert_int_equal(ldpb_envelope_encode(env, body, sizeof body, &blen, NULL), LDPB_OK);
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(t >> (8 * i));
    nonce[8] = (uint8_t)dir;
    for (int i = 0; i < 15; i++)
        nonce[9 + i] = (uint8_t)(first_random + i);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &len, client.pk, &k_client, nonce, body, blen),
        LDPB_OK);
    size_t wlen = unhex(want, sizeof want, want_hex);
    assert_int_equal(len, wlen);
    assert_memory_equal(frame, want, len);
}

/* docs/protocol.md section 9.1: one round trip per report and a report batch, byte for byte. */
static const char example_raa_request_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d44e86be5cf8b010000000102030405060708090a0b0c0d0e0f6bef"
    "2747189cfaf1eb7985c2261e677213321da0aa5135283b63779142852c7d2e2c"
    "affa4d853f59e4ae52fba29e73cf2669888abf26a1ef67ac1c61226d0b28dcbb"
    "1c";
static const char example_raa_reply_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d44e26ce5cf8b010000011112131415161718191a1b1c1d1e1fb6d4"
    "aa14cc5ba2cd709f05c6fc300399d42e8d2de566739d65e8ca4f82d78ec348b4"
    "3b94e46e22d95f92813f0d0dd614dfc386741601ba5a7a471a2745ecb5802993"
    "ef147de90754a3b4357443a089f1f066893ba7b0054d16400d55daad7f10";
static const char example_batch_request_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d44d06fe5cf8b010000000102030405060708090a0b0c0d0e0f3e60"
    "630d387906914920bb2f9a42178fa3b02612491e7de56cd46e33cf7e93c6ada4"
    "70a9c75934147e5f1c4f744d5a12f627bcc6d3de4a60e5e28ab6e8f06081ec45"
    "7e12d9482abc2046c0c3843db0d9efc8de1aa59f96d7a7c00dfebdf46efde2c3"
    "f3f1f7ea70e3c546e40a8461cf2afd0360c938ae12325eee";
static const char example_batch_reply_hex[] =
    "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
    "ae4a30c35d44ca70e5cf8b010000011112131415161718191a1b1c1d1e1f444d"
    "95e4f8aa80ef8808ec7a28bdaa708af69f2fe1f90176878a0c2668adc404557e"
    "b7a6ef66219bd0d481fe1dfe48912617c537b768824e236f734c4713b3d049be"
    "9f6ca8101ab3dc63bddeb3d785adc9eebcf32abe4d";

static void worked_example_round_trip_and_batch(void **state)
{
    (void)state;
    uint8_t id0[16], id1[16], id2[16];
    for (int i = 0; i < 16; i++) {
        id0[i] = (uint8_t)i;
        id1[i] = (uint8_t)(0x10 + i);
        id2[i] = (uint8_t)(0x20 + i);
    }
    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    r.assignment_id.data = id0;
    r.assignment_id.len = 16;
    r.mechanism = LDPB__V1__MECHANISM__LINEAR;
    r.epsilon = 1.0;
    r.value_case = LDPB__V1__REPORT__VALUE_BIT;
    r.bit = 0;
    Ldpb__V1__AssignRequest q = LDPB__V1__ASSIGN_REQUEST__INIT;
    q.has_max_epsilon = 1;
    q.max_epsilon = 1.0;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    ra.report = &r;
    ra.next = &q;
    Ldpb__V1__Envelope e = LDPB__V1__ENVELOPE__INIT;
    e.protocol_version = 1;
    e.has_request_id = 1;
    e.request_id = 43;
    e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    e.report_and_assign = &ra;
    check_example_frame(example_raa_request_hex, T0 + 1000, LDPB_DIR_TO_SERVER, 0x01, &e);

    Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
    ack.assignment_id = r.assignment_id;
    ack.has_duplicate = 1;
    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    a.assignment_id.data = id1;
    a.assignment_id.len = 16;
    a.arm = 2;
    a.mechanism = LDPB__V1__MECHANISM__LINEAR;
    a.epsilon = 1.0;
    a.expires_at_ms = T0 + 1250 + 3600000;
    a.propensity = 0.5;
    a.has_policy_version = 1;
    a.policy_version = 7;
    Ldpb__V1__AckAndAssignment aa = LDPB__V1__ACK_AND_ASSIGNMENT__INIT;
    aa.ack = &ack;
    aa.next_case = LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT;
    aa.assignment = &a;
    Ldpb__V1__Envelope e2 = LDPB__V1__ENVELOPE__INIT;
    e2.protocol_version = 1;
    e2.has_request_id = 1;
    e2.request_id = 43;
    e2.body_case = LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT;
    e2.ack_and_assignment = &aa;
    check_example_frame(example_raa_reply_hex, T0 + 1250, LDPB_DIR_TO_CLIENT, 0x11, &e2);

    Ldpb__V1__Report r1 = r, r2 = r;
    r1.assignment_id.data = id1;
    r1.bit = 1;
    r2.assignment_id.data = id2;
    Ldpb__V1__Report *rp[3] = {&r, &r1, &r2};
    Ldpb__V1__ReportBatch b = LDPB__V1__REPORT_BATCH__INIT;
    b.n_reports = 3;
    b.reports = rp;
    Ldpb__V1__Envelope e3 = LDPB__V1__ENVELOPE__INIT;
    e3.protocol_version = 1;
    e3.has_request_id = 1;
    e3.request_id = 44;
    e3.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    e3.report_batch = &b;
    check_example_frame(example_batch_request_hex, T0 + 2000, LDPB_DIR_TO_SERVER, 0x01, &e3);

    Ldpb__V1__ReportResult s0 = LDPB__V1__REPORT_RESULT__INIT, s1 = s0, s2 = s0;
    s0.assignment_id = r.assignment_id;
    s0.has_duplicate = 1;
    s0.duplicate = 1;
    s1.assignment_id = r1.assignment_id;
    s2.assignment_id = r2.assignment_id;
    s2.has_code = 1;
    s2.code = LDPB_ENOTFOUND;
    Ldpb__V1__ReportResult *sp[3] = {&s0, &s1, &s2};
    Ldpb__V1__BatchAck ba = LDPB__V1__BATCH_ACK__INIT;
    ba.n_results = 3;
    ba.results = sp;
    Ldpb__V1__Envelope e4 = LDPB__V1__ENVELOPE__INIT;
    e4.protocol_version = 1;
    e4.has_request_id = 1;
    e4.request_id = 44;
    e4.body_case = LDPB__V1__ENVELOPE__BODY_BATCH_ACK;
    e4.batch_ack = &ba;
    check_example_frame(example_batch_reply_hex, T0 + 2250, LDPB_DIR_TO_CLIENT, 0x11, &e4);
}

static void worked_example(void **state)
{
    (void)state;
    uint8_t b[64];
    assert_int_equal(unhex(b, sizeof b, example_server_pk_hex), 32);
    assert_memory_equal(b, server.pk, 32);
    assert_int_equal(unhex(b, sizeof b, example_client_pk_hex), 32);
    assert_memory_equal(b, client.pk, 32);
    assert_int_equal(unhex(b, sizeof b, example_k_hex), 32);
    assert_memory_equal(b, k_client.k, 32);

    uint8_t id[16];
    for (int i = 0; i < 16; i++)
        id[i] = (uint8_t)i;
    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    r.assignment_id.data = id;
    r.assignment_id.len = sizeof id;
    r.mechanism = LDPB__V1__MECHANISM__LINEAR;
    r.epsilon = 1.0;
    r.value_case = LDPB__V1__REPORT__VALUE_BIT;
    r.bit = 0;
    Ldpb__V1__Envelope req = LDPB__V1__ENVELOPE__INIT;
    req.protocol_version = 1;
    req.has_request_id = 1;
    req.request_id = 42;
    req.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    req.report = &r;
    check_example_frame(example_request_hex, T0, LDPB_DIR_TO_SERVER, 0x01, &req);

    Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
    ack.assignment_id = r.assignment_id;
    Ldpb__V1__Envelope rep = LDPB__V1__ENVELOPE__INIT;
    rep.protocol_version = 1;
    rep.has_request_id = 1;
    rep.request_id = 42;
    rep.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
    rep.ack = &ack;
    check_example_frame(example_reply_hex, T0 + 250, LDPB_DIR_TO_CLIENT, 0x11, &rep);

    /* the server side opens the documented request bytes and decodes the report */
    uint8_t req_bytes[256], want_pt[64];
    size_t len = unhex(req_bytes, sizeof req_bytes, example_request_hex), n;
    ldpb_keycache *kc = new_keycache(4, 0);
    ldpb_replay *rp = new_replay(4);
    ldpb_frame f;
    ldpb_seal_key key;
    parse(req_bytes, len, &f);
    assert_int_equal(ldpb_seal_open_request(kc, rp, &f, T0 + 100, pt, sizeof pt, &n, &key, NULL),
                     LDPB_OK);
    assert_int_equal(n, unhex(want_pt, sizeof want_pt, example_request_pt_hex));
    assert_memory_equal(pt, want_pt, n);
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(pt, n, &d, NULL), LDPB_OK);
    assert_int_equal(d->body_case, LDPB__V1__ENVELOPE__BODY_REPORT);
    assert_int_equal(d->report->value_case, LDPB__V1__REPORT__VALUE_BIT);
    assert_int_equal(d->report->bit, 0);
    assert_true(d->request_id == 42);
    ldpb_envelope_free(d);
    /* and the client opens the documented reply */
    len = unhex(req_bytes, sizeof req_bytes, example_reply_hex);
    parse(req_bytes, len, &f);
    assert_int_equal(
        ldpb_seal_open(&f, &k_client, LDPB_DIR_TO_CLIENT, client.pk, pt, sizeof pt, &n, NULL),
        LDPB_OK);
    assert_int_equal(ldpb_envelope_decode(pt, n, &d, NULL), LDPB_OK);
    assert_int_equal(d->body_case, LDPB__V1__ENVELOPE__BODY_ACK);
    assert_memory_equal(d->ack->assignment_id.data, id, sizeof id);
    ldpb_envelope_free(d);
    ldpb_replay_free(rp);
    ldpb_keycache_free(kc);
}

/* ---- out of memory -----------------------------------------------------------------------------
 */

static void constructors_out_of_memory(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        long failures = 0;
        for (long n = 0;; n++) {
            assert_true(n < 100);
            long live = alloc_fail_live();
            alloc_fail_arm(n);
            ldpb_err err;
            if (which == 0) {
                ldpb_keycache_opts o;
                ldpb_keycache_opts_init(&o);
                o.allowlist_max = 10;
                ldpb_keycache *kc = (ldpb_keycache *)&kc;
                err = ldpb_keycache_new(&kc, &server, &o);
                alloc_fail_disarm();
                if (err == LDPB_OK) {
                    ldpb_keycache_free(kc);
                } else {
                    assert_null(kc);
                }
            } else {
                ldpb_replay_opts o;
                ldpb_replay_opts_init(&o);
                /* tables under 2 MiB come from calloc, which alloc_fail can refuse; the default
                 * size's are mapped (below) */
                o.max_entries = 1000;
                ldpb_replay *rp = (ldpb_replay *)&rp;
                err = ldpb_replay_new(&rp, &o);
                alloc_fail_disarm();
                if (err == LDPB_OK) {
                    ldpb_replay_free(rp);
                } else {
                    assert_null(rp);
                }
            }
            assert_int_equal(alloc_fail_live(), live);
            if (err == LDPB_OK)
                break;
            assert_int_equal(err, LDPB_ENOMEM);
            failures++;
        }
        assert_true(failures >= 4);
    }
    /* At the default size the replay cache's tables are mapped in huge pages, not malloc'd:
     * they work and are all given back. */
    long live = alloc_fail_live();
    ldpb_replay_opts o;
    ldpb_replay_opts_init(&o);
    ldpb_replay *rp = NULL;
    assert_int_equal(ldpb_replay_new(&rp, &o), LDPB_OK);
    uint8_t pk[LDPB_KEY_BYTES] = {1}, nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, 1000000, LDPB_DIR_TO_SERVER, rng);
    assert_int_equal(ldpb_replay_check(rp, pk, nonce, 1000000, NULL), LDPB_OK);
    assert_int_equal(ldpb_replay_check(rp, pk, nonce, 1000000, NULL), LDPB_EREPLAY);
    ldpb_replay_free(rp);
    assert_int_equal(alloc_fail_live(), live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_agree),
        cmocka_unit_test(seal_open_round_trip),
        cmocka_unit_test(every_flipped_byte_is_refused),
        cmocka_unit_test(truncated_frames_fail_cleanly),
        cmocka_unit_test(wrong_server_key),
        cmocka_unit_test(direction_is_checked),
        cmocka_unit_test(nonce_time_window),
        cmocka_unit_test(replay_repeat_stale_future),
        cmocka_unit_test(replay_expiry_and_clock),
        cmocka_unit_test(replay_full_cache_narrows_the_window),
        cmocka_unit_test(replay_options),
        cmocka_unit_test(keycache_hits_and_lru),
        cmocka_unit_test(keycache_prefetch_is_a_hint),
        cmocka_unit_test(keycache_allow_list),
        cmocka_unit_test(keycache_options),
        cmocka_unit_test(open_request_path),
        cmocka_unit_test(unknown_key_is_derived_outside_the_lock),
        cmocka_unit_test(derivation_budget_refuses_fresh_keys),
        cmocka_unit_test(allow_list_refuses_without_deriving),
        cmocka_unit_test(worked_example),
        cmocka_unit_test(worked_example_round_trip_and_batch),
        cmocka_unit_test(constructors_out_of_memory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
