#ifndef LDPB_AGG_LE_BYTES_H
#define LDPB_AGG_LE_BYTES_H
/* Unsigned integers of n <= 8 bytes, little-endian: the byte order of the daemon's own file and
 * token formats (the nonce log, the state log, assignment tokens), whatever the host's. */

#include <stdint.h>

static inline void agg_put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t agg_get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#endif
