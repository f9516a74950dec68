/* The secure and the seeded generator. Both are a buffered ChaCha20 keystream; they differ in
 * where the key comes from and what happens when the buffer runs dry. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sodium.h>

#include "rng_internal.h"

/* Fresh OS entropy after this much output bounds what a leaked key could reveal. */
#define RNG_OS_REKEY_BYTES (1u << 20)

static const uint8_t zero_nonce[crypto_stream_chacha20_NONCEBYTES];

int rng_pid_changed(const ldpb_rng *rng)
{
    return (long)getpid() != rng->owner_pid;
}

static void nonce_le(uint8_t out[crypto_stream_chacha20_NONCEBYTES], uint64_t v)
{
    for (size_t i = 0; i < crypto_stream_chacha20_NONCEBYTES; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

static void system_rekey_from_os(ldpb_rng *rng)
{
    randombytes_buf(rng->key, sizeof rng->key);
    rng->bytes_since_os = 0;
    rng->owner_pid = (long)getpid();
    rng->keyed = 1;
}

/* Fast key erasure: one keystream call yields the next key and a buffer of output, and the old
 * key is gone, so a later compromise of the state reveals nothing already drawn. */
static void system_refill(ldpb_rng *rng)
{
    if (!rng->keyed || rng->bytes_since_os >= RNG_OS_REKEY_BYTES ||
        (!rng->wipe_on_fork && rng_pid_changed(rng)))
        system_rekey_from_os(rng);
    uint8_t block[sizeof rng->key + RNG_BUF_BYTES];
    crypto_stream_chacha20(block, sizeof block, zero_nonce, rng->key);
    memcpy(rng->key, block, sizeof rng->key);
    memcpy(rng->buf, block + sizeof rng->key, RNG_BUF_BYTES);
    sodium_memzero(block, sizeof block);
    rng->bytes_since_os += RNG_BUF_BYTES;
    rng->pos = 0;
}

static void seeded_refill(ldpb_rng *rng)
{
    uint8_t nonce[crypto_stream_chacha20_NONCEBYTES];
    nonce_le(nonce, rng->nonce);
    memset(rng->buf, 0, RNG_BUF_BYTES);
    crypto_stream_chacha20_xor_ic(rng->buf, rng->buf, RNG_BUF_BYTES, nonce, rng->block_counter,
                                  rng->key);
    rng->block_counter += RNG_BUF_BYTES / 64;
    rng->pos = 0;
}

void rng_refill(ldpb_rng *rng)
{
    /* A seeded handle is keyed from birth, so an unkeyed one can only be a system page the
     * kernel zeroed in a forked child: restore what the wipe erased before drawing anything. */
    if (!rng->keyed) {
        rng->is_system = 1;
        rng->wipe_on_fork = 1;
    }
    if (rng->is_system)
        system_refill(rng);
    else
        seeded_refill(rng);
}

static size_t system_alloc_bytes(void)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t pagesz = page > 0 ? (size_t)page : 4096;
    return (sizeof(ldpb_rng) + pagesz - 1) / pagesz * pagesz;
}

ldpb_err ldpb_rng_new_system(ldpb_rng **out)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    size_t size = system_alloc_bytes();
    /* A private mapping of its own so the kernel can wipe it in a forked child and keep it out
     * of core dumps; malloc'd memory could share pages with unrelated data. */
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return LDPB_ENOMEM;
    ldpb_rng *rng = mem;
    memset(rng, 0, sizeof *rng);
    rng->is_system = 1;
#ifdef MADV_WIPEONFORK
    /* The wipe is trusted only where madvise is honest: qemu-user ignores every advice and
     * reports success, which would leave the parent's key and buffer in a forked child (the
     * aarch64 and armhf test runs under qemu showed it). An advice no kernel knows (negative)
     * must then fail; if it "succeeds", the pid is compared on every draw instead. */
    rng->wipe_on_fork = madvise(mem, size, MADV_WIPEONFORK) == 0 && madvise(mem, size, -1) != 0;
#endif
#ifdef MADV_DONTDUMP
    (void)madvise(mem, size, MADV_DONTDUMP);
#endif
    system_rekey_from_os(rng);
    system_refill(rng);
    *out = rng;
    return LDPB_OK;
}

ldpb_err ldpb_rng_new_seeded_stream(ldpb_rng **out, const uint8_t seed[LDPB_RNG_SEED_BYTES],
                                    uint64_t stream)
{
    if (!out || !seed)
        return LDPB_EINVAL;
    *out = NULL;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    ldpb_rng *rng = calloc(1, sizeof *rng);
    if (!rng)
        return LDPB_ENOMEM;
    memcpy(rng->key, seed, sizeof rng->key);
    rng->nonce = stream;
    rng->keyed = 1;
    seeded_refill(rng);
    *out = rng;
    return LDPB_OK;
}

ldpb_err ldpb_rng_new_seeded(ldpb_rng **out, const uint8_t seed[LDPB_RNG_SEED_BYTES])
{
    return ldpb_rng_new_seeded_stream(out, seed, 0);
}

void ldpb_rng_seed_from_text(uint8_t seed[LDPB_RNG_SEED_BYTES], const char *text)
{
    static const char tag[] = "ldpb seed v1:";
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, LDPB_RNG_SEED_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)tag, sizeof tag - 1);
    if (text)
        crypto_generichash_update(&st, (const unsigned char *)text, strlen(text));
    crypto_generichash_final(&st, seed, LDPB_RNG_SEED_BYTES);
}

void ldpb_rng_free(ldpb_rng *rng)
{
    if (!rng)
        return;
    int mapped = rng->is_system || !rng->keyed;
    sodium_memzero(rng, sizeof *rng);
    if (mapped)
        munmap(rng, system_alloc_bytes());
    else
        free(rng);
}

void ldpb_rng_bytes(ldpb_rng *rng, void *buf, size_t len)
{
    uint8_t *dst = buf;
    while (len > 0) {
        if (rng->pos >= RNG_BUF_BYTES || rng_fork_check_needed(rng))
            rng_refill(rng);
        size_t take = RNG_BUF_BYTES - rng->pos;
        if (take > len)
            take = len;
        memcpy(dst, rng->buf + rng->pos, take);
        memset(rng->buf + rng->pos, 0, take);
        rng->pos += take;
        dst += take;
        len -= take;
    }
}

uint64_t ldpb_rng_u64(ldpb_rng *rng)
{
    return rng_next_u64(rng);
}

uint64_t ldpb_rng_uniform(ldpb_rng *rng, uint64_t bound)
{
    if (bound == 0)
        return rng_next_u64(rng);
    /* Reject the lowest 2^64 mod bound values so every residue is equally likely. */
    uint64_t reject_below = (0 - bound) % bound;
    for (;;) {
        uint64_t x = rng_next_u64(rng);
        if (x >= reject_below)
            return x % bound;
    }
}

double ldpb_rng_double(ldpb_rng *rng)
{
    return (double)(rng_next_u64(rng) >> 11) * 0x1.0p-53;
}

int ldpb_rng_bernoulli(ldpb_rng *rng, uint64_t threshold)
{
    return (int)ct_lt_u64(rng_next_u64(rng), threshold);
}
