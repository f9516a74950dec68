/* Sealed frames and the server's two tables. Both tables sit on one small fixed-capacity hash
 * index (chained, slot indices stored plus one so calloc'd memory is an empty table, SipHash with a
 * per-table random key so clients cannot aim for one bucket). The key cache adds an LRU list; the
 * replay cache adds a min-heap on expiry time. Capacities are fixed at creation: memory is
 * bounded and known. A full replay cache forgets its oldest nonce and from then on refuses every
 * nonce not newer than it, so nothing forgotten can be replayed: under a load beyond its size the
 * accepted window narrows instead of the service stopping. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <sodium.h>

#include "ldpb/detail.h"
#include "ldpb/seal.h"
#include "ldpb/secmem.h"

_Static_assert(LDPB_KEY_BYTES == crypto_box_PUBLICKEYBYTES, "key size");
_Static_assert(LDPB_KEY_BYTES == crypto_box_SECRETKEYBYTES, "key size");
_Static_assert(LDPB_KEY_BYTES == crypto_box_BEFORENMBYTES, "key size");
_Static_assert(LDPB_NONCE_BYTES == crypto_box_NONCEBYTES, "nonce size");
_Static_assert(LDPB_FRAME_MAC_BYTES == crypto_box_MACBYTES, "MAC size");
_Static_assert(LDPB_FRAME_PK_BYTES == LDPB_KEY_BYTES, "frame layout");
_Static_assert(LDPB_FRAME_NONCE_BYTES == LDPB_NONCE_BYTES, "frame layout");
_Static_assert(8 + 1 + LDPB_NONCE_RANDOM_BYTES == LDPB_NONCE_BYTES, "nonce layout");

#define DIR_OFFSET 8 /* the direction byte within the nonce */

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ---- keys, nonces, frames ----------------------------------------------------------------- */

ldpb_err ldpb_keypair_generate(ldpb_keypair *kp)
{
    if (!kp)
        return LDPB_EINVAL;
    if (sodium_init() < 0 || crypto_box_keypair(kp->pk, kp->sk) != 0) {
        sodium_memzero(kp, sizeof *kp);
        return LDPB_ECRYPTO;
    }
    return LDPB_OK;
}

ldpb_err ldpb_keypair_from_secret(ldpb_keypair *kp, const uint8_t sk[LDPB_KEY_BYTES])
{
    if (!kp || !sk)
        return LDPB_EINVAL;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    memmove(kp->sk, sk, LDPB_KEY_BYTES);
    if (crypto_scalarmult_base(kp->pk, kp->sk) != 0) {
        sodium_memzero(kp, sizeof *kp);
        return LDPB_ECRYPTO;
    }
    return LDPB_OK;
}

void ldpb_keypair_wipe(ldpb_keypair *kp)
{
    if (kp)
        sodium_memzero(kp, sizeof *kp);
}

ldpb_err ldpb_seal_key_derive(ldpb_seal_key *out, const uint8_t peer_pk[LDPB_KEY_BYTES],
                              const uint8_t own_sk[LDPB_KEY_BYTES])
{
    if (!out || !peer_pk || !own_sk)
        return LDPB_EINVAL;
    if (sodium_init() < 0 || crypto_box_beforenm(out->k, peer_pk, own_sk) != 0) {
        sodium_memzero(out, sizeof *out);
        return LDPB_ECRYPTO;
    }
    return LDPB_OK;
}

void ldpb_seal_key_wipe(ldpb_seal_key *key)
{
    if (key)
        sodium_memzero(key, sizeof *key);
}

uint64_t ldpb_seal_now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ldpb_nonce_make(uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms, ldpb_direction dir,
                     ldpb_rng *rng)
{
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(now_ms >> (8 * i));
    nonce[DIR_OFFSET] = (uint8_t)dir;
    ldpb_rng_bytes(rng, nonce + DIR_OFFSET + 1, LDPB_NONCE_RANDOM_BYTES);
}

uint64_t ldpb_nonce_time_ms(const uint8_t nonce[LDPB_NONCE_BYTES])
{
    return get_le64(nonce);
}

/* The window check on a given clock; shared with the replay cache. */
static ldpb_err check_time(uint64_t ts, uint64_t now_ms, uint64_t window_ms, char *detail)
{
    if (ts < now_ms && now_ms - ts > window_ms) {
        say(detail,
            "message time %" PRIu64 " ms is %" PRIu64 " ms behind this clock (%" PRIu64
            "); the window is %" PRIu64 " ms",
            ts, now_ms - ts, now_ms, window_ms);
        return LDPB_EREPLAY;
    }
    if (ts > now_ms && ts - now_ms > window_ms) {
        say(detail,
            "message time %" PRIu64 " ms is %" PRIu64 " ms ahead of this clock (%" PRIu64
            "); the window is %" PRIu64 " ms",
            ts, ts - now_ms, now_ms, window_ms);
        return LDPB_EREPLAY;
    }
    return LDPB_OK;
}

ldpb_err ldpb_nonce_check_time(const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms,
                               uint64_t window_ms, char *detail)
{
    if (!nonce)
        return LDPB_EINVAL;
    return check_time(get_le64(nonce), now_ms, window_ms, detail);
}

ldpb_err ldpb_seal_frame(uint8_t *frame, size_t cap, size_t *len,
                         const uint8_t client_pk[LDPB_KEY_BYTES], const ldpb_seal_key *key,
                         const uint8_t nonce[LDPB_NONCE_BYTES], const uint8_t *pt, size_t pt_len)
{
    if (!len || !client_pk || !key || !nonce || (!frame && cap) || (!pt && pt_len))
        return LDPB_EINVAL;
    *len = 0;
    if (pt_len > LDPB_PLAINTEXT_MAX)
        return LDPB_ERANGE;
    *len = LDPB_FRAME_SEALED_OVERHEAD + pt_len;
    if (cap < *len)
        return LDPB_ERANGE;
    memcpy(frame, "LDPB", 4);
    frame[4] = LDPB_FRAME_VERSION;
    frame[5] = LDPB_FRAME_SEALED;
    uint8_t *p = frame + LDPB_FRAME_HEADER_BYTES;
    memcpy(p, client_pk, LDPB_KEY_BYTES);
    memcpy(p + LDPB_KEY_BYTES, nonce, LDPB_NONCE_BYTES);
    static const uint8_t empty[1] = {0};
    if (crypto_box_easy_afternm(p + LDPB_KEY_BYTES + LDPB_NONCE_BYTES, pt ? pt : empty, pt_len,
                                nonce, key->k) != 0) {
        *len = 0;
        return LDPB_ECRYPTO;
    }
    return LDPB_OK;
}

ldpb_err ldpb_seal_open(const ldpb_frame *frame, const ldpb_seal_key *key, ldpb_direction expect,
                        const uint8_t *expect_client_pk, uint8_t *pt, size_t cap, size_t *pt_len,
                        char *detail)
{
    if (!frame || !key || !pt_len || (!pt && cap))
        return LDPB_EINVAL;
    *pt_len = 0;
    if (frame->kind != LDPB_FRAME_SEALED || !frame->client_pk || !frame->nonce ||
        !frame->ciphertext || frame->ciphertext_len < LDPB_FRAME_MAC_BYTES)
        return LDPB_EINVAL;
    if (expect_client_pk && memcmp(expect_client_pk, frame->client_pk, LDPB_KEY_BYTES) != 0) {
        say(detail, "the frame carries another client's key");
        return LDPB_ECRYPTO;
    }
    size_t n = frame->ciphertext_len - LDPB_FRAME_MAC_BYTES;
    if (cap < n) {
        say(detail, "plaintext buffer of %zu bytes, %zu needed", cap, n);
        return LDPB_ERANGE;
    }
    uint8_t dummy[1];
    if (crypto_box_open_easy_afternm(n ? pt : dummy, frame->ciphertext, frame->ciphertext_len,
                                     frame->nonce, key->k) != 0) {
        say(detail, "the frame failed authentication (forged, corrupted, or another key)");
        return LDPB_ECRYPTO;
    }
    uint8_t dir = frame->nonce[DIR_OFFSET];
    if (dir != LDPB_DIR_TO_SERVER && dir != LDPB_DIR_TO_CLIENT) {
        say(detail, "nonce direction byte %u is neither 0 nor 1", (unsigned)dir);
        return LDPB_EPROTO;
    }
    if (dir != (uint8_t)expect) {
        say(detail, "a %s frame was presented to the %s (reflected)",
            dir == LDPB_DIR_TO_CLIENT ? "server-to-client" : "client-to-server",
            expect == LDPB_DIR_TO_SERVER ? "server" : "client");
        return LDPB_EREPLAY;
    }
    *pt_len = n;
    return LDPB_OK;
}

/* ---- table memory -------------------------------------------------------------------------- */

/* Arrays of 2 MiB and more (the replay cache's at its default size: heads 4 MiB, digests 16 MiB)
 * are mapped with MADV_HUGEPAGE where the kernel offers it: every lookup lands at a random place
 * in them, and with 4 KiB pages nearly each one also missed the TLB, which under a hypervisor's
 * nested page tables is a long walk (docs/aggregator.md, "The worker's share"). Zero-filled like
 * calloc; the kernel falls back to small pages by itself. */
#define TABLE_HUGE_BYTES ((size_t)2 << 20)

static size_t table_bytes(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return 0;
    size_t len = n * size;
    if (len < TABLE_HUGE_BYTES)
        return len;
    if (len > SIZE_MAX - (TABLE_HUGE_BYTES - 1))
        return 0;
    return (len + TABLE_HUGE_BYTES - 1) & ~(TABLE_HUGE_BYTES - 1);
}

static void *table_alloc(size_t n, size_t size)
{
    size_t len = table_bytes(n, size);
    if (len == 0)
        return NULL;
    if (len < TABLE_HUGE_BYTES)
        return calloc(n, size);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

static void table_free(void *p, size_t n, size_t size)
{
    if (!p)
        return;
    size_t len = table_bytes(n, size);
    if (len < TABLE_HUGE_BYTES)
        free(p);
    else
        (void)munmap(p, len);
}

/* ---- fixed-capacity hash index ------------------------------------------------------------ */

struct index {
    uint8_t *keys;   /* cap * key_len */
    uint32_t *heads; /* nbuckets: slot + 1, 0 = empty */
    uint32_t *next;  /* cap: next slot + 1 in the chain or the free list */
    size_t cap, key_len, mask, count;
    uint32_t hwm;       /* slots [0, hwm) have been handed out at least once */
    uint32_t free_head; /* slot + 1 of a freed slot, 0 if none */
    int prehashed;      /* keys are keyed digests already: bucket from their first 8 bytes */
    uint8_t hkey[crypto_shorthash_KEYBYTES];
};

static ldpb_err index_init(struct index *ix, size_t cap, size_t key_len, int prehashed)
{
    memset(ix, 0, sizeof *ix);
    size_t nb = 16;
    while (nb < cap)
        nb <<= 1;
    ix->cap = cap;
    ix->key_len = key_len;
    ix->mask = nb - 1;
    ix->prehashed = prehashed;
    if (cap == 0)
        return LDPB_OK;
    ix->keys = table_alloc(cap, key_len);
    ix->heads = table_alloc(nb, sizeof *ix->heads);
    ix->next = table_alloc(cap, sizeof *ix->next);
    if (!ix->keys || !ix->heads || !ix->next)
        return LDPB_ENOMEM;
    randombytes_buf(ix->hkey, sizeof ix->hkey);
    return LDPB_OK;
}

static void index_fini(struct index *ix)
{
    table_free(ix->keys, ix->cap, ix->key_len);
    table_free(ix->heads, ix->mask + 1, sizeof *ix->heads);
    table_free(ix->next, ix->cap, sizeof *ix->next);
    memset(ix, 0, sizeof *ix);
}

static size_t index_bucket(const struct index *ix, const uint8_t *key)
{
    uint8_t h[crypto_shorthash_BYTES];
    if (ix->prehashed)
        memcpy(h, key, sizeof h);
    else
        crypto_shorthash(h, key, ix->key_len, ix->hkey);
    return (size_t)(get_le64(h) & ix->mask);
}

static const uint8_t *index_key(const struct index *ix, uint32_t slot)
{
    return ix->keys + (size_t)slot * ix->key_len;
}

/* Returns slot + 1, or 0 if absent. */
static uint32_t index_find(const struct index *ix, const uint8_t *key)
{
    if (ix->cap == 0)
        return 0;
    for (uint32_t s = ix->heads[index_bucket(ix, key)]; s; s = ix->next[s - 1])
        if (memcmp(index_key(ix, s - 1), key, ix->key_len) == 0)
            return s;
    return 0;
}

/* Starts loading key's bucket head: the load index_find would otherwise wait for, a cache (and
 * often TLB) miss, since buckets are spread at random. Reads only what is fixed at creation. */
static void index_prefetch(const struct index *ix, const uint8_t *key)
{
    if (ix->cap)
        __builtin_prefetch(&ix->heads[index_bucket(ix, key)]);
}

/* Adds a key known to be absent. Returns slot + 1, or 0 if the index is full. */
static uint32_t index_insert(struct index *ix, const uint8_t *key)
{
    if (ix->count == ix->cap)
        return 0;
    uint32_t s;
    if (ix->free_head) {
        s = ix->free_head;
        ix->free_head = ix->next[s - 1];
    } else {
        s = ++ix->hwm;
    }
    memcpy(ix->keys + (size_t)(s - 1) * ix->key_len, key, ix->key_len);
    size_t b = index_bucket(ix, key);
    ix->next[s - 1] = ix->heads[b];
    ix->heads[b] = s;
    ix->count++;
    return s;
}

static void index_remove(struct index *ix, uint32_t s)
{
    uint32_t *link = &ix->heads[index_bucket(ix, index_key(ix, s - 1))];
    while (*link != s)
        link = &ix->next[*link - 1];
    *link = ix->next[s - 1];
    ix->next[s - 1] = ix->free_head;
    ix->free_head = s;
    ix->count--;
}

/* ---- key cache ----------------------------------------------------------------------------- */

/* The unauthenticated table is direct-mapped (a new key overwrites whatever shares its slot):
 * O(1) without bookkeeping, and an attacker who floods it only evicts other unauthenticated
 * keys, which then cost one more derivation from the budget. */
struct pending_entry {
    uint8_t pk[LDPB_KEY_BYTES];
    ldpb_seal_key key;
    uint8_t used;
};

struct ldpb_keycache {
    struct index cache; /* client public key -> slot */
    ldpb_seal_key *keys;
    uint32_t *lru_prev, *lru_next; /* slot + 1, 0 = none */
    uint32_t lru_head, lru_tail;   /* most and least recently used, slot + 1 */
    struct index allow;            /* capacity 0: no allow-list */
    struct pending_entry *pend;    /* pend_mask + 1 entries, NULL if none */
    size_t pend_mask, pend_count;
    uint8_t pend_hkey[crypto_shorthash_KEYBYTES];
    /* the derivation budget, in thousandths of a derivation */
    uint64_t rate, bucket_cap, tokens, bucket_ms;
    uint8_t sk[LDPB_KEY_BYTES];
    uint64_t hits, misses, evictions, refused, pending_hits;
    _Atomic uint64_t derived; /* counted outside the caller's lock */
};

void ldpb_keycache_opts_init(ldpb_keycache_opts *opts)
{
    if (!opts)
        return;
    opts->max_entries = LDPB_KEYCACHE_DEFAULT;
    opts->allowlist_max = 0;
    opts->pending_max = LDPB_KEYCACHE_PENDING_DEFAULT;
    opts->derive_rate = LDPB_KEYCACHE_DERIVE_RATE_DEFAULT;
    opts->derive_burst = 0;
}

void ldpb_keycache_free(ldpb_keycache *kc)
{
    if (!kc)
        return;
    sodium_free(kc->keys); /* wipes it */
    if (kc->pend)
        sodium_memzero(kc->pend, (kc->pend_mask + 1) * sizeof *kc->pend);
    free(kc->pend);
    free(kc->lru_prev);
    free(kc->lru_next);
    index_fini(&kc->cache);
    index_fini(&kc->allow);
    ldpb_secmem_free(kc, sizeof *kc);
}

ldpb_err ldpb_keycache_new(ldpb_keycache **out, const ldpb_keypair *server,
                           const ldpb_keycache_opts *opts)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!server || !opts)
        return LDPB_EINVAL;
    if (opts->max_entries < 1 || opts->max_entries > LDPB_KEYCACHE_MAX ||
        opts->allowlist_max > LDPB_ALLOWLIST_MAX || opts->pending_max > LDPB_KEYCACHE_MAX ||
        opts->derive_rate > LDPB_KEYCACHE_DERIVE_RATE_MAX ||
        opts->derive_burst > LDPB_KEYCACHE_DERIVE_RATE_MAX)
        return LDPB_ERANGE;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    /* The handle (a copy of the server's secret key) and the derived keys are in sodium_malloc'd
     * memory: locked when RLIMIT_MEMLOCK allows, never in a core dump, wiped by sodium_free. */
    ldpb_keycache *kc = ldpb_secmem_alloc(sizeof *kc);
    if (!kc)
        return LDPB_ENOMEM;
    memset(kc, 0, sizeof *kc);
    ldpb_err err = index_init(&kc->cache, opts->max_entries, LDPB_KEY_BYTES, 0);
    if (!err)
        err = index_init(&kc->allow, opts->allowlist_max, LDPB_KEY_BYTES, 0);
    if (err)
        goto fail;
    kc->keys = sodium_allocarray(opts->max_entries, sizeof *kc->keys);
    if (kc->keys)
        memset(kc->keys, 0, opts->max_entries * sizeof *kc->keys);
    kc->lru_prev = calloc(opts->max_entries, sizeof *kc->lru_prev);
    kc->lru_next = calloc(opts->max_entries, sizeof *kc->lru_next);
    if (!kc->keys || !kc->lru_prev || !kc->lru_next) {
        err = LDPB_ENOMEM;
        goto fail;
    }
    if (opts->pending_max) {
        size_t n = 16;
        while (n < opts->pending_max)
            n <<= 1;
        kc->pend = calloc(n, sizeof *kc->pend);
        if (!kc->pend) {
            err = LDPB_ENOMEM;
            goto fail;
        }
        kc->pend_mask = n - 1;
        randombytes_buf(kc->pend_hkey, sizeof kc->pend_hkey);
    }
    kc->rate = opts->derive_rate;
    kc->bucket_cap = 1000u * (opts->derive_burst ? opts->derive_burst : opts->derive_rate);
    kc->tokens = kc->bucket_cap;
    memcpy(kc->sk, server->sk, LDPB_KEY_BYTES);
    *out = kc;
    return LDPB_OK;
fail:
    ldpb_keycache_free(kc);
    return err;
}

ldpb_err ldpb_keycache_allow(ldpb_keycache *kc, const uint8_t client_pk[LDPB_KEY_BYTES])
{
    if (!kc || !client_pk)
        return LDPB_EINVAL;
    if (kc->allow.cap == 0)
        return LDPB_ESTATE;
    if (index_find(&kc->allow, client_pk))
        return LDPB_OK;
    return index_insert(&kc->allow, client_pk) ? LDPB_OK : LDPB_ERANGE;
}

static void lru_unlink(ldpb_keycache *kc, uint32_t s)
{
    uint32_t p = kc->lru_prev[s - 1], n = kc->lru_next[s - 1];
    if (p)
        kc->lru_next[p - 1] = n;
    else
        kc->lru_head = n;
    if (n)
        kc->lru_prev[n - 1] = p;
    else
        kc->lru_tail = p;
    kc->lru_prev[s - 1] = kc->lru_next[s - 1] = 0;
}

static void lru_push_front(ldpb_keycache *kc, uint32_t s)
{
    kc->lru_prev[s - 1] = 0;
    kc->lru_next[s - 1] = kc->lru_head;
    if (kc->lru_head)
        kc->lru_prev[kc->lru_head - 1] = s;
    kc->lru_head = s;
    if (!kc->lru_tail)
        kc->lru_tail = s;
}

static ldpb_err check_allowed(const ldpb_keycache *kc, const uint8_t *pk, char *detail)
{
    if (kc->allow.cap == 0 || index_find(&kc->allow, pk))
        return LDPB_OK;
    say(detail, "client key is not on the allow-list");
    return LDPB_EAUTH;
}

/* The cached key for `pk` (slot + 1, marked most recently used), or 0. */
static uint32_t cache_lookup(ldpb_keycache *kc, const uint8_t *pk)
{
    uint32_t s = index_find(&kc->cache, pk);
    if (s) {
        kc->hits++;
        lru_unlink(kc, s);
        lru_push_front(kc, s);
    } else {
        kc->misses++;
    }
    return s;
}

/* Caches `key` for `pk` (absent), evicting and wiping the least recently used when full. */
static void cache_insert(ldpb_keycache *kc, const uint8_t *pk, const ldpb_seal_key *key)
{
    if (kc->cache.count == kc->cache.cap) {
        uint32_t victim = kc->lru_tail;
        lru_unlink(kc, victim);
        sodium_memzero(&kc->keys[victim - 1], sizeof kc->keys[victim - 1]);
        index_remove(&kc->cache, victim);
        kc->evictions++;
    }
    uint32_t s = index_insert(&kc->cache, pk);
    kc->keys[s - 1] = *key;
    lru_push_front(kc, s);
}

void ldpb_keycache_prefetch(const ldpb_keycache *kc, const uint8_t client_pk[LDPB_KEY_BYTES])
{
    if (kc && client_pk)
        index_prefetch(&kc->cache, client_pk);
}

ldpb_err ldpb_keycache_get(ldpb_keycache *kc, const uint8_t client_pk[LDPB_KEY_BYTES],
                           ldpb_seal_key *out)
{
    if (!kc || !client_pk || !out)
        return LDPB_EINVAL;
    ldpb_err err = check_allowed(kc, client_pk, NULL);
    if (err)
        return err;
    uint32_t s = cache_lookup(kc, client_pk);
    if (s) {
        *out = kc->keys[s - 1];
        return LDPB_OK;
    }
    err = ldpb_seal_key_derive(out, client_pk, kc->sk);
    atomic_fetch_add_explicit(&kc->derived, 1, memory_order_relaxed);
    if (err)
        return err;
    cache_insert(kc, client_pk, out);
    return LDPB_OK;
}

static struct pending_entry *pending_slot(const ldpb_keycache *kc, const uint8_t *pk)
{
    if (!kc->pend)
        return NULL;
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, pk, LDPB_KEY_BYTES, kc->pend_hkey);
    return &kc->pend[get_le64(h) & kc->pend_mask];
}

static struct pending_entry *pending_find(const ldpb_keycache *kc, const uint8_t *pk)
{
    struct pending_entry *e = pending_slot(kc, pk);
    return e && e->used && memcmp(e->pk, pk, LDPB_KEY_BYTES) == 0 ? e : NULL;
}

static void pending_put(ldpb_keycache *kc, const uint8_t *pk, const ldpb_seal_key *key)
{
    struct pending_entry *e = pending_slot(kc, pk);
    if (!e)
        return;
    if (!e->used)
        kc->pend_count++;
    memcpy(e->pk, pk, LDPB_KEY_BYTES);
    e->key = *key;
    e->used = 1;
}

static void pending_drop(ldpb_keycache *kc, const uint8_t *pk)
{
    struct pending_entry *e = pending_find(kc, pk);
    if (!e)
        return;
    sodium_memzero(e, sizeof *e);
    kc->pend_count--;
}

/* Takes one derivation from the budget: refilled at `rate` per second of `now_ms`, up to the
 * bucket's size. A clock that steps back refills nothing until it has caught up. */
static int budget_take(ldpb_keycache *kc, uint64_t now_ms)
{
    if (kc->rate == 0)
        return 1;
    if (now_ms > kc->bucket_ms) {
        uint64_t dt = now_ms - kc->bucket_ms, room = kc->bucket_cap - kc->tokens;
        kc->tokens = dt >= room / kc->rate + 1 ? kc->bucket_cap : kc->tokens + dt * kc->rate;
        if (kc->tokens > kc->bucket_cap)
            kc->tokens = kc->bucket_cap;
        kc->bucket_ms = now_ms;
    }
    if (kc->tokens < 1000)
        return 0;
    kc->tokens -= 1000;
    return 1;
}

void ldpb_keycache_stats_get(const ldpb_keycache *kc, ldpb_keycache_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!kc)
        return;
    out->hits = kc->hits;
    out->misses = kc->misses;
    out->evictions = kc->evictions;
    out->entries = kc->cache.count;
    out->allowed = kc->allow.count;
    out->derived = atomic_load_explicit(&kc->derived, memory_order_relaxed);
    out->refused = kc->refused;
    out->pending_hits = kc->pending_hits;
    out->pending = kc->pend_count;
}

/* ---- replay cache -------------------------------------------------------------------------- */

/* Entries are keyed by a 16-byte SipHash-2-4 (128-bit output) digest of client_pk || nonce under
 * a random per-cache key: 40 bytes per entry instead of 56 + overhead, and a false "seen" needs a
 * 128-bit collision under a key the clients never learn. */
#define REPLAY_DIGEST_BYTES crypto_shorthash_siphashx24_BYTES

struct ldpb_replay {
    struct index ix;
    uint64_t *expires; /* per slot: nonce time + window */
    uint32_t *heap;    /* slots, a min-heap on expires */
    size_t heap_n;
    uint64_t window_ms;
    uint64_t clock_ms; /* the latest now_ms seen */
    uint64_t floor_ms; /* nonce times at or below this may have been forgotten: refused */
    uint64_t evicted;  /* nonces forgotten early because the cache was full */
    uint8_t dkey[crypto_shorthash_siphashx24_KEYBYTES];
};

void ldpb_replay_opts_init(ldpb_replay_opts *opts)
{
    if (!opts)
        return;
    opts->window_ms = LDPB_REPLAY_WINDOW_DEFAULT_MS;
    opts->max_entries = LDPB_REPLAY_ENTRIES_DEFAULT;
}

void ldpb_replay_free(ldpb_replay *rp)
{
    if (!rp)
        return;
    table_free(rp->expires, rp->ix.cap, sizeof *rp->expires); /* before index_fini clears cap */
    table_free(rp->heap, rp->ix.cap, sizeof *rp->heap);
    index_fini(&rp->ix);
    sodium_memzero(rp, sizeof *rp);
    free(rp);
}

ldpb_err ldpb_replay_new(ldpb_replay **out, const ldpb_replay_opts *opts)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!opts)
        return LDPB_EINVAL;
    if (opts->window_ms < 1000 || opts->window_ms > LDPB_REPLAY_WINDOW_MAX_MS ||
        opts->max_entries < 1 || opts->max_entries > LDPB_REPLAY_ENTRIES_MAX)
        return LDPB_ERANGE;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    ldpb_replay *rp = calloc(1, sizeof *rp);
    if (!rp)
        return LDPB_ENOMEM;
    ldpb_err err = index_init(&rp->ix, opts->max_entries, REPLAY_DIGEST_BYTES, 1);
    if (err)
        goto fail;
    rp->expires = table_alloc(opts->max_entries, sizeof *rp->expires);
    rp->heap = table_alloc(opts->max_entries, sizeof *rp->heap);
    if (!rp->expires || !rp->heap) {
        err = LDPB_ENOMEM;
        goto fail;
    }
    rp->window_ms = opts->window_ms;
    randombytes_buf(rp->dkey, sizeof rp->dkey);
    *out = rp;
    return LDPB_OK;
fail:
    ldpb_replay_free(rp);
    return err;
}

static void heap_push(ldpb_replay *rp, uint32_t slot)
{
    size_t i = rp->heap_n++;
    uint64_t e = rp->expires[slot];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (rp->expires[rp->heap[parent]] <= e)
            break;
        rp->heap[i] = rp->heap[parent];
        i = parent;
    }
    rp->heap[i] = slot;
}

static uint32_t heap_pop(ldpb_replay *rp)
{
    uint32_t top = rp->heap[0];
    uint32_t last = rp->heap[--rp->heap_n];
    uint64_t e = rp->expires[last];
    size_t i = 0, n = rp->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rp->expires[rp->heap[c + 1]] < rp->expires[rp->heap[c]])
            c++;
        if (e <= rp->expires[rp->heap[c]])
            break;
        rp->heap[i] = rp->heap[c];
        i = c;
    }
    if (n > 0)
        rp->heap[i] = last;
    return top;
}

static void replay_digest(const ldpb_replay *rp, const uint8_t *client_pk, const uint8_t *nonce,
                          uint8_t digest[REPLAY_DIGEST_BYTES])
{
    uint8_t msg[LDPB_KEY_BYTES + LDPB_NONCE_BYTES];
    memcpy(msg, client_pk, LDPB_KEY_BYTES);
    memcpy(msg + LDPB_KEY_BYTES, nonce, LDPB_NONCE_BYTES);
    crypto_shorthash_siphashx24(digest, msg, sizeof msg, rp->dkey);
}

/* ldpb_replay_check with the nonce's digest (replay_digest) already computed. */
static ldpb_err replay_check_digest(ldpb_replay *rp, const uint8_t nonce[LDPB_NONCE_BYTES],
                                    const uint8_t digest[REPLAY_DIGEST_BYTES], uint64_t now_ms,
                                    char *detail)
{
    if (now_ms > rp->clock_ms)
        rp->clock_ms = now_ms;
    uint64_t now = rp->clock_ms, ts = get_le64(nonce);
    ldpb_err err = check_time(ts, now, rp->window_ms, detail);
    if (err)
        return err;
    if (ts <= rp->floor_ms) {
        say(detail,
            "message time %" PRIu64 " ms is not after %" PRIu64
            " ms, the oldest time the full replay cache still covers (%" PRIu64
            " ms behind this clock); send a fresh request",
            ts, rp->floor_ms, now > rp->floor_ms ? now - rp->floor_ms : 0);
        return LDPB_EREPLAY;
    }
    /* An entry is needed while its nonce time could still pass the window check. */
    while (rp->heap_n && rp->expires[rp->heap[0]] < now)
        index_remove(&rp->ix, heap_pop(rp) + 1);

    if (index_find(&rp->ix, digest)) {
        say(detail, "this nonce was already used by this client (a replayed message)");
        return LDPB_EREPLAY;
    }
    if (rp->ix.count == rp->ix.cap && rp->heap_n) {
        /* Forget the nonce that expires first (the oldest time) and refuse its time and older
         * from now on: a replay of it, or of anything forgotten before, fails the floor check. */
        uint32_t oldest = heap_pop(rp);
        uint64_t t_old = rp->expires[oldest] - rp->window_ms;
        if (t_old > rp->floor_ms)
            rp->floor_ms = t_old;
        index_remove(&rp->ix, oldest + 1);
        rp->evicted++;
        if (ts <= rp->floor_ms) {
            say(detail,
                "message time %" PRIu64 " ms is not after the oldest time the full "
                "replay cache still covers; send a fresh request",
                ts);
            return LDPB_EREPLAY;
        }
    }
    uint32_t s = index_insert(&rp->ix, digest);
    if (!s) {
        say(detail, "replay cache full (%zu live nonces within the window); retry later",
            rp->ix.cap);
        return LDPB_EBUSY;
    }
    rp->expires[s - 1] = sat_add(ts, rp->window_ms);
    heap_push(rp, s - 1);
    return LDPB_OK;
}

ldpb_err ldpb_replay_check(ldpb_replay *rp, const uint8_t client_pk[LDPB_KEY_BYTES],
                           const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms, char *detail)
{
    if (!rp || !client_pk || !nonce)
        return LDPB_EINVAL;
    uint8_t digest[REPLAY_DIGEST_BYTES];
    replay_digest(rp, client_pk, nonce, digest);
    return replay_check_digest(rp, nonce, digest, now_ms, detail);
}

size_t ldpb_replay_count(const ldpb_replay *rp)
{
    return rp ? rp->ix.count : 0;
}

uint64_t ldpb_replay_evicted(const ldpb_replay *rp)
{
    return rp ? rp->evicted : 0;
}

uint64_t ldpb_replay_floor_ms(const ldpb_replay *rp)
{
    return rp ? rp->floor_ms : 0;
}

/* ---- server receive path ------------------------------------------------------------------- */

typedef enum key_source { KEY_CACHED, KEY_PENDING, KEY_DERIVE } key_source;

static void lock_take(const ldpb_seal_lock *lk)
{
    if (lk && lk->lock)
        lk->lock(lk->ctx);
}

static void lock_give(const ldpb_seal_lock *lk)
{
    if (lk && lk->unlock)
        lk->unlock(lk->ctx);
}

/* The first section under the lock: where the key for `pk` will come from. */
static ldpb_err key_begin(ldpb_keycache *kc, const uint8_t *pk, uint64_t now_ms, ldpb_seal_key *key,
                          key_source *src, char *detail)
{
    ldpb_err err = check_allowed(kc, pk, detail);
    if (err)
        return err;
    uint32_t s = cache_lookup(kc, pk);
    if (s) {
        *key = kc->keys[s - 1];
        *src = KEY_CACHED;
        return LDPB_OK;
    }
    const struct pending_entry *e = pending_find(kc, pk);
    if (e) {
        *key = e->key;
        *src = KEY_PENDING;
        kc->pending_hits++;
        return LDPB_OK;
    }
    if (!budget_take(kc, now_ms)) {
        kc->refused++;
        say(detail, "too many new client keys at once; retry later");
        return LDPB_EBUSY;
    }
    *src = KEY_DERIVE;
    return LDPB_OK;
}

/* The second section: an authenticated key joins the cache (another thread may have put it
 * there meanwhile); a derived one that did not authenticate is remembered apart. */
static void key_end(ldpb_keycache *kc, const uint8_t *pk, const ldpb_seal_key *key, key_source src,
                    int authentic)
{
    if (authentic && src != KEY_CACHED) {
        pending_drop(kc, pk);
        if (!index_find(&kc->cache, pk))
            cache_insert(kc, pk, key); /* only keys that authenticated a frame are cached */
    } else if (!authentic && src == KEY_DERIVE && !pending_find(kc, pk)) {
        pending_put(kc, pk, key);
    }
}

ldpb_err ldpb_seal_open_request_locked(ldpb_keycache *kc, ldpb_replay *rp, const ldpb_seal_lock *lk,
                                       const ldpb_frame *frame, uint64_t now_ms, uint8_t *pt,
                                       size_t cap, size_t *pt_len, ldpb_seal_key *key_out,
                                       char *detail)
{
    if (!kc || !rp || !frame || !pt_len || (!pt && cap))
        return LDPB_EINVAL;
    *pt_len = 0;
    if (frame->kind != LDPB_FRAME_SEALED || !frame->client_pk || !frame->nonce ||
        !frame->ciphertext || frame->ciphertext_len < LDPB_FRAME_MAC_BYTES)
        return LDPB_EINVAL;
    const uint8_t *pk = frame->client_pk;
    /* The replay cache's bucket is loaded while the MAC is checked: the digest and the bucket's
     * place depend only on the table's creation-time key, so this needs no lock. */
    uint8_t digest[REPLAY_DIGEST_BYTES];
    replay_digest(rp, pk, frame->nonce, digest);
    index_prefetch(&rp->ix, digest);
    ldpb_seal_key key;
    key_source src = KEY_CACHED;
    lock_take(lk);
    ldpb_err err = key_begin(kc, pk, now_ms, &key, &src, detail);
    lock_give(lk);
    if (err)
        return err;
    if (src == KEY_DERIVE) {
        err = ldpb_seal_key_derive(&key, pk, kc->sk); /* kc->sk never changes: no lock needed */
        atomic_fetch_add_explicit(&kc->derived, 1, memory_order_relaxed);
        if (err) {
            say(detail, "client key is not a usable X25519 public key");
            return err;
        }
    }
    err = ldpb_seal_open(frame, &key, LDPB_DIR_TO_SERVER, NULL, pt, cap, pt_len, detail);
    if (err && src != KEY_DERIVE)
        goto done; /* nothing to remember: no second section */
    lock_take(lk);
    key_end(kc, pk, &key, src, err == LDPB_OK);
    if (!err) {
        if (key_out)
            *key_out = key; /* the frame is authentic: even a refusal below is answered sealed */
        err = replay_check_digest(rp, frame->nonce, digest, now_ms, detail);
    }
    lock_give(lk);
    if (err) {
        sodium_memzero(pt, *pt_len); /* never acted on */
        *pt_len = 0;
    }
done:
    sodium_memzero(&key, sizeof key);
    return err;
}

ldpb_err ldpb_seal_open_request(ldpb_keycache *kc, ldpb_replay *rp, const ldpb_frame *frame,
                                uint64_t now_ms, uint8_t *pt, size_t cap, size_t *pt_len,
                                ldpb_seal_key *key_out, char *detail)
{
    return ldpb_seal_open_request_locked(kc, rp, NULL, frame, now_ms, pt, cap, pt_len, key_out,
                                         detail);
}
