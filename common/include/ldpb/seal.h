/* Sealed frames (docs/protocol.md sections 2-3): X25519 keypairs, the precomputed shared key
 * k = crypto_box_beforenm(peer_pk, own_sk), the nonce (sender time, direction, 15 random bytes),
 * sealing and opening with crypto_box_easy_afternm / crypto_box_open_easy_afternm, and the two
 * server-side tables: a bounded LRU cache of precomputed keys per client (with an optional
 * allow-list of client keys) and the replay cache that accepts each (client key, nonce) once
 * within a time window.
 *
 * Derivation costs about 60 us; sealing or opening with a precomputed key well under 1 us for a
 * report. A client derives its key once; the server keeps one per recent client in the cache.
 *
 * Thread safety: the functions without a handle are reentrant. A keycache or replay handle is not
 * thread-safe: serialize calls on one handle (a server with several workers shares one replay
 * cache behind a mutex, or a replay could slip through another worker). The exception is
 * ldpb_seal_open_request_locked, which takes that mutex itself through callbacks, and only around
 * the table work: the derivation and the MAC check run outside it, so one worker's derivation for
 * a new (or forged) key never stalls the others. */
#ifndef LDPB_SEAL_H
#define LDPB_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/rng.h"
#include "ldpb/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LDPB_KEY_BYTES   32u /* public, secret and precomputed shared keys */
#define LDPB_NONCE_BYTES 24u
/* Nonce layout: sender time (ms since the Unix epoch, u64 LE) | direction u8 | 15 random bytes. */
#define LDPB_NONCE_RANDOM_BYTES 15u

typedef enum ldpb_direction {
    LDPB_DIR_TO_SERVER = 0, /* client -> server: requests */
    LDPB_DIR_TO_CLIENT = 1, /* server -> client: replies */
} ldpb_direction;

/* An X25519 (crypto_box) keypair. Wipe with ldpb_keypair_wipe when done. */
typedef struct ldpb_keypair {
    uint8_t pk[LDPB_KEY_BYTES];
    uint8_t sk[LDPB_KEY_BYTES];
} ldpb_keypair;

/* The precomputed shared key of a client and the server; the same on both sides. Secret: wipe
 * with ldpb_seal_key_wipe when done. */
typedef struct ldpb_seal_key {
    uint8_t k[LDPB_KEY_BYTES];
} ldpb_seal_key;

/* Generates a fresh keypair from the OS CSPRNG. LDPB_EINVAL (NULL), LDPB_ECRYPTO (libsodium
 * could not initialise). */
LDPB_API ldpb_err ldpb_keypair_generate(ldpb_keypair *kp);

/* Fills kp->sk with `sk` and computes kp->pk from it. LDPB_EINVAL, LDPB_ECRYPTO. */
LDPB_API ldpb_err ldpb_keypair_from_secret(ldpb_keypair *kp, const uint8_t sk[LDPB_KEY_BYTES]);

/* Zeroes the keypair (sodium_memzero). Accepts NULL. */
LDPB_API void ldpb_keypair_wipe(ldpb_keypair *kp);

/* k = crypto_box_beforenm(peer_pk, own_sk): X25519, then HSalsa20 with a zero nonce. Errors:
 * LDPB_EINVAL (NULL), LDPB_ECRYPTO (libsodium failed to initialise, or peer_pk is a low-order
 * point so the shared secret would be all zeros). */
LDPB_API ldpb_err ldpb_seal_key_derive(ldpb_seal_key *out, const uint8_t peer_pk[LDPB_KEY_BYTES],
                                       const uint8_t own_sk[LDPB_KEY_BYTES]);

/* Zeroes the key. Accepts NULL. */
LDPB_API void ldpb_seal_key_wipe(ldpb_seal_key *key);

/* The wall clock in ms since the Unix epoch (CLOCK_REALTIME), the time nonces carry. */
LDPB_API uint64_t ldpb_seal_now_ms(void);

/* Builds a nonce: `now_ms` as u64 LE, the direction byte, then 15 bytes drawn from `rng` (which
 * must be ldpb_rng_new_system() outside tests). */
LDPB_API void ldpb_nonce_make(uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms, ldpb_direction dir,
                              ldpb_rng *rng);

/* The sender time a nonce carries. */
LDPB_API uint64_t ldpb_nonce_time_ms(const uint8_t nonce[LDPB_NONCE_BYTES]);

/* LDPB_OK if the nonce time is within `window_ms` of `now_ms` (inclusive, either side), else
 * LDPB_EREPLAY with `detail` (NULL or LDPB_DETAIL_BYTES) giving both times. */
LDPB_API ldpb_err ldpb_nonce_check_time(const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms,
                                        uint64_t window_ms, char *detail);

/* Writes a SEALED frame: header, `client_pk` (the client's public key, in both directions),
 * `nonce`, and crypto_box_easy_afternm(pt, nonce, key). The frame takes
 * LDPB_FRAME_SEALED_OVERHEAD + pt_len bytes. Errors: LDPB_EINVAL (NULL), LDPB_ERANGE (pt_len
 * above LDPB_PLAINTEXT_MAX, or `cap` too small: *len is set to the size needed), LDPB_ECRYPTO. */
LDPB_API ldpb_err ldpb_seal_frame(uint8_t *frame, size_t cap, size_t *len,
                                  const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                                  const uint8_t nonce[LDPB_NONCE_BYTES], const uint8_t *pt,
                                  size_t pt_len);

/* Opens a parsed SEALED frame with `key` into `pt` (ciphertext_len - 16 bytes; a buffer of
 * LDPB_PLAINTEXT_MAX always suffices). Checks, in order: the frame's client key equals
 * `expect_client_pk` unless that is NULL (a client passes its own key), the MAC, and the nonce's
 * direction byte. Errors: LDPB_EINVAL (NULL, not a SEALED frame), LDPB_ERANGE (`cap` too small),
 * LDPB_ECRYPTO (another client key, or forged / corrupted / sealed under another key),
 * LDPB_EPROTO (direction byte neither 0 nor 1), LDPB_EREPLAY (the other direction: a reflected
 * frame). Nothing is written to `pt` unless the MAC verifies; `pt` must not overlap the frame. */
LDPB_API ldpb_err ldpb_seal_open(const ldpb_frame *frame, const ldpb_seal_key *key,
                                 ldpb_direction expect, const uint8_t *expect_client_pk,
                                 uint8_t *pt, size_t cap, size_t *pt_len, char *detail);

/* ---- server: precomputed-key cache with an optional allow-list ---------------------------- */

#define LDPB_KEYCACHE_DEFAULT 65536u /* cached client keys, about 100 bytes each */
#define LDPB_KEYCACHE_MAX     (1u << 24)
#define LDPB_ALLOWLIST_MAX    (1u << 24)

#define LDPB_KEYCACHE_PENDING_DEFAULT     4096u /* unauthenticated derived keys, 64 bytes each */
#define LDPB_KEYCACHE_DERIVE_RATE_DEFAULT 1000u /* derivations per second: ~6% of one core */
#define LDPB_KEYCACHE_DERIVE_RATE_MAX     1000000u

typedef struct ldpb_keycache_opts {
    size_t max_entries;   /* cached keys, [1, LDPB_KEYCACHE_MAX]; the least recently used is
                             evicted (and wiped) when full */
    size_t allowlist_max; /* 0 (default): any client key is accepted. Otherwise only keys added
                             with ldpb_keycache_allow, at most this many (LDPB_ALLOWLIST_MAX). */

    /* Keys derived for frames that failed authentication, remembered in a table apart ([0,
     * LDPB_KEYCACHE_MAX], 0 = none) so that more frames under the same key cost a MAC check, not
     * another derivation; they never displace an authenticated key. Default
     * LDPB_KEYCACHE_PENDING_DEFAULT. */
    size_t pending_max;
    /* Derivations per second the receive path may spend on keys found in neither table (a token
     * bucket); beyond it such a frame is refused with LDPB_EBUSY before any derivation. Keys
     * already cached are never limited. 0 = unlimited; at most LDPB_KEYCACHE_DERIVE_RATE_MAX.
     * Default LDPB_KEYCACHE_DERIVE_RATE_DEFAULT. */
    uint32_t derive_rate;
    /* Derivations allowed at once after a quiet spell (the bucket's size), at most
     * LDPB_KEYCACHE_DERIVE_RATE_MAX; 0 (default) = derive_rate. */
    uint32_t derive_burst;
} ldpb_keycache_opts;

typedef struct ldpb_keycache_stats {
    uint64_t hits, misses, evictions;
    size_t entries, allowed;
    uint64_t derived;      /* X25519 derivations performed (each about 60 us) */
    uint64_t refused;      /* frames refused by the derivation budget, nothing derived */
    uint64_t pending_hits; /* frames whose key came from the unauthenticated table */
    size_t pending;        /* keys in the unauthenticated table now */
} ldpb_keycache_stats;

typedef struct ldpb_keycache ldpb_keycache;

/* Defaults: LDPB_KEYCACHE_DEFAULT entries, no allow-list, LDPB_KEYCACHE_PENDING_DEFAULT
 * pending keys, LDPB_KEYCACHE_DERIVE_RATE_DEFAULT derivations per second (burst the same). */
LDPB_API void ldpb_keycache_opts_init(ldpb_keycache_opts *opts);

/* Creates the server's key cache. The server's secret key is copied (and wiped on free); the
 * tables are allocated at their full size up front (the OS commits pages as they fill). Errors:
 * LDPB_EINVAL (NULL), LDPB_ERANGE (opts out of range), LDPB_ENOMEM, LDPB_ECRYPTO. */
LDPB_API ldpb_err ldpb_keycache_new(ldpb_keycache **out, const ldpb_keypair *server,
                                    const ldpb_keycache_opts *opts);

/* Wipes every key and frees the cache. Accepts NULL. */
LDPB_API void ldpb_keycache_free(ldpb_keycache *kc);

/* Adds `client_pk` to the allow-list (a key already there is LDPB_OK). Errors: LDPB_EINVAL (NULL),
 * LDPB_ESTATE (the cache was created without an allow-list), LDPB_ERANGE (the list is full). */
LDPB_API ldpb_err ldpb_keycache_allow(ldpb_keycache *kc, const uint8_t client_pk[LDPB_KEY_BYTES]);

/* A hint, with no effect on any result: starts loading the part of the cache that looking up
 * `client_pk` will read first, so a caller holding several frames (a relay batch) can overlap
 * those memory loads instead of waiting for each in turn. Reads only what is fixed when the cache
 * is created, so it needs no lock and may run beside any other call. Accepts NULL. */
LDPB_API void ldpb_keycache_prefetch(const ldpb_keycache *kc,
                                     const uint8_t client_pk[LDPB_KEY_BYTES]);

/* Copies the shared key for `client_pk` into *out, deriving and caching it on a miss (outside
 * the derivation budget: this is for keys the caller trusts). Errors: LDPB_EINVAL, LDPB_EAUTH (an
 * allow-list is in force and the key is not on it), LDPB_ECRYPTO (a low-order key). */
LDPB_API ldpb_err ldpb_keycache_get(ldpb_keycache *kc, const uint8_t client_pk[LDPB_KEY_BYTES],
                                    ldpb_seal_key *out);

/* Counters for metrics: lookups that found a cached key (hits) or did not (misses), keys evicted
 * to make room, keys cached now, keys on the allow-list, and the derivation counters above. */
LDPB_API void ldpb_keycache_stats_get(const ldpb_keycache *kc, ldpb_keycache_stats *out);

/* ---- server: replay cache ------------------------------------------------------------------ */

#define LDPB_REPLAY_WINDOW_DEFAULT_MS 300000u    /* +-5 minutes */
#define LDPB_REPLAY_WINDOW_MAX_MS     86400000u  /* one day */
#define LDPB_REPLAY_ENTRIES_DEFAULT   (1u << 20) /* 40 bytes each at most: 40 MiB */
#define LDPB_REPLAY_ENTRIES_MAX       (1u << 26)

typedef struct ldpb_replay_opts {
    uint64_t window_ms; /* accepted clock difference, [1000, LDPB_REPLAY_WINDOW_MAX_MS] */
    size_t max_entries; /* nonces remembered at once, [1, LDPB_REPLAY_ENTRIES_MAX] */
} ldpb_replay_opts;

typedef struct ldpb_replay ldpb_replay;

/* Defaults: LDPB_REPLAY_WINDOW_DEFAULT_MS, LDPB_REPLAY_ENTRIES_DEFAULT. */
LDPB_API void ldpb_replay_opts_init(ldpb_replay_opts *opts);

/* Creates a replay cache. Errors: LDPB_EINVAL, LDPB_ERANGE, LDPB_ENOMEM, LDPB_ECRYPTO. */
LDPB_API ldpb_err ldpb_replay_new(ldpb_replay **out, const ldpb_replay_opts *opts);

/* Accepts NULL. */
LDPB_API void ldpb_replay_free(ldpb_replay *rp);

/* Accepts the (client_pk, nonce) pair once: LDPB_OK and remembered until the nonce time plus the
 * window has passed; LDPB_EREPLAY if the nonce time is more than the window away from the cache's
 * clock, or the pair was seen, or the nonce time is not after the floor (below). When the cache
 * is full of live entries it forgets the entry with the oldest nonce time and raises the floor to
 * that time: every nonce at or before the floor is refused from then on, so nothing forgotten can
 * be replayed, and under a load beyond max_entries the accepted window narrows (to about
 * max_entries / request rate) rather than the service refusing everyone. The cache's clock is
 * max(now_ms, latest now_ms seen), so a clock stepped backwards cannot resurrect an expired nonce.
 * LDPB_EBUSY is no longer returned in practice (only if an entry cannot be stored at all). Call
 * it only for authenticated frames (after ldpb_seal_open). */
LDPB_API ldpb_err ldpb_replay_check(ldpb_replay *rp, const uint8_t client_pk[LDPB_KEY_BYTES],
                                    const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms,
                                    char *detail);

/* Live entries, after expiring those past their time at the last check. */
LDPB_API size_t ldpb_replay_count(const ldpb_replay *rp);
/* Entries forgotten early because the cache was full, and the floor they raised (0 if none). */
LDPB_API uint64_t ldpb_replay_evicted(const ldpb_replay *rp);
LDPB_API uint64_t ldpb_replay_floor_ms(const ldpb_replay *rp);

/* ---- server: the whole receive path -------------------------------------------------------- */

/* Opens a request frame: the allow-list (LDPB_EAUTH), the key from the cache (on a miss, from
 * the table of unauthenticated keys, else derived if the derivation budget allows, else
 * LDPB_EBUSY; a derived key is cached only once the frame authenticates, so forged keys cannot
 * flush the cache, and otherwise goes to the unauthenticated table), the MAC
 * (LDPB_ECRYPTO), the direction (LDPB_EREPLAY / LDPB_EPROTO), then ldpb_replay_check
 * (LDPB_EREPLAY, LDPB_EBUSY). On success `pt` holds the Envelope bytes (*pt_len of them). Once
 * the frame has authenticated (MAC and direction), *key_out (if not NULL) holds the key to seal
 * the reply with, even when the replay check refuses it; the plaintext of a refused frame is
 * wiped (*pt_len 0). The caller
 * wipes *key_out. docs/protocol.md says which failures get a sealed Error and which a PLAIN_ERROR
 * frame. Errors also: LDPB_EINVAL (NULL, not a SEALED frame), LDPB_ERANGE (`cap` too small). */
LDPB_API ldpb_err ldpb_seal_open_request(ldpb_keycache *kc, ldpb_replay *rp,
                                         const ldpb_frame *frame, uint64_t now_ms, uint8_t *pt,
                                         size_t cap, size_t *pt_len, ldpb_seal_key *key_out,
                                         char *detail);

/* The mutex a server puts around its key and replay caches, as callbacks. */
typedef struct ldpb_seal_lock {
    void (*lock)(void *ctx);
    void (*unlock)(void *ctx);
    void *ctx;
} ldpb_seal_lock;

/* ldpb_seal_open_request for a server with several threads: `kc` and `rp` are only touched
 * between lk->lock and lk->unlock, in two short sections (the lookup and the budget; then the
 * caching of an authenticated or derived key and the replay check), while the derivation and
 * the MAC check run with the lock released. The replay check still comes only after the MAC
 * has verified, so unauthenticated frames cannot fill the replay cache. `lk` NULL: no locking
 * (the same as ldpb_seal_open_request). Same results and errors. */
LDPB_API ldpb_err ldpb_seal_open_request_locked(ldpb_keycache *kc, ldpb_replay *rp,
                                                const ldpb_seal_lock *lk, const ldpb_frame *frame,
                                                uint64_t now_ms, uint8_t *pt, size_t cap,
                                                size_t *pt_len, ldpb_seal_key *key_out,
                                                char *detail);

#ifdef __cplusplus
}
#endif

#endif
