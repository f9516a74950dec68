/* Memory for secrets (keys, and the structs that hold them): libsodium's guarded allocation,
 * locked and kept out of core dumps, wiped on free. Internal to the build, like detail.h.
 *
 * Under AddressSanitizer the leak checker does not scan memory it did not allocate, so a heap
 * pointer kept only inside such a block would look leaked (libFuzzer's per-input leak check
 * reports it). These wrappers register the block as a root region with LeakSanitizer in
 * sanitized builds, so it is scanned like any heap block; elsewhere they are sodium_malloc and
 * sodium_free. */
#ifndef LDPB_SECMEM_H
#define LDPB_SECMEM_H

#include <stddef.h>

/* sodium_malloc(size) (NULL when out of memory), scanned by the leak checker when sanitized. */
void *ldpb_secmem_alloc(size_t size);

/* sodium_free(p) for a block of `size` bytes from ldpb_secmem_alloc. Accepts NULL. */
void ldpb_secmem_free(void *p, size_t size);

#endif
