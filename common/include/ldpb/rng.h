/* Random number handles. Privacy noise must come from ldpb_rng_new_system(), a ChaCha20
 * keystream keyed from the operating system's CSPRNG (libsodium) and re-keyed as it goes;
 * tests and simulations may inject ldpb_rng_new_seeded() to make every draw reproducible.
 *
 * Thread safety: a handle is not thread-safe; give each thread its own. A system handle detects
 * fork() and re-keys in the child, so parent and child never share noise. */
#ifndef LDPB_RNG_H
#define LDPB_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LDPB_RNG_SEED_BYTES 32

typedef struct ldpb_rng ldpb_rng;

/* Creates a cryptographically secure generator keyed from libsodium's randombytes. Output is a
 * buffered ChaCha20 keystream with fast key erasure (each refill replaces the key), fresh OS
 * entropy every 1 MiB, and a re-key after fork. Returns LDPB_ENOMEM if the state cannot be
 * allocated, LDPB_ECRYPTO if libsodium cannot initialise. Free with ldpb_rng_free(). */
LDPB_API ldpb_err ldpb_rng_new_system(ldpb_rng **out);

/* Creates a deterministic generator: the ChaCha20 keystream (original 64-bit nonce variant)
 * under key `seed`, nonce 0, block counter from 0. The bytes are the same on every platform.
 * For tests and simulations only: anyone who knows the seed knows the noise. */
LDPB_API ldpb_err ldpb_rng_new_seeded(ldpb_rng **out, const uint8_t seed[LDPB_RNG_SEED_BYTES]);

/* As ldpb_rng_new_seeded(), on an independent stream: the nonce is `stream` (little-endian).
 * Distinct streams of one seed never overlap; simulations give environment, client noise and
 * policy their own stream. Stream 0 is the same as ldpb_rng_new_seeded(). */
LDPB_API ldpb_err ldpb_rng_new_seeded_stream(ldpb_rng **out,
                                             const uint8_t seed[LDPB_RNG_SEED_BYTES],
                                             uint64_t stream);

/* Derives a 32-byte seed from any text (BLAKE2b-256 of a domain tag and the text), so a
 * command-line "--seed 42" names the same stream everywhere. */
LDPB_API void ldpb_rng_seed_from_text(uint8_t seed[LDPB_RNG_SEED_BYTES], const char *text);

/* Wipes the key and buffered keystream and frees the handle. Accepts NULL. */
LDPB_API void ldpb_rng_free(ldpb_rng *rng);

/* Fills `buf` with the next `len` bytes of the stream. */
LDPB_API void ldpb_rng_bytes(ldpb_rng *rng, void *buf, size_t len);

/* The next 8 bytes of the stream as a little-endian integer. */
LDPB_API uint64_t ldpb_rng_u64(ldpb_rng *rng);

/* A uniform integer in [0, bound), exactly unbiased (rejection). bound 0 means the full 2^64. */
LDPB_API uint64_t ldpb_rng_uniform(ldpb_rng *rng, uint64_t bound);

/* A uniform double in [0, 1): the top 53 bits of one draw times 2^-53. */
LDPB_API double ldpb_rng_double(ldpb_rng *rng);

/* Returns 1 with probability exactly threshold / 2^64, else 0. Draws one 64-bit word and
 * compares it with the threshold in constant time (no branch on either value). */
LDPB_API int ldpb_rng_bernoulli(ldpb_rng *rng, uint64_t threshold);

#ifdef __cplusplus
}
#endif

#endif
