/* The relay hop (docs/protocol.md section 11): a relay forwards many devices' sealed frames to the
 * aggregator in one RELAY_BATCH frame and gets their sealed replies back in one RELAY_REPLY. Both
 * carry the same body: a count, then per entry a relay-local id and one length-prefixed inner
 * frame, copied byte for byte. Nothing here is sealed: the inner frames are, each under its own
 * device's key, so a relay can only drop, delay, reorder or duplicate them.
 *
 * Layout, little-endian, after the 6-byte frame header ("LDPB", frame_version 1, kind 3 or 4):
 *   count u16 (1..LDPB_RELAY_ENTRIES_MAX)
 *   count times: id u32 | len u32 (1..LDPB_FRAME_MAX) | len bytes
 * and nothing after the last entry. A whole relay frame is at most LDPB_RELAY_BATCH_MAX bytes
 * (RELAY_BATCH) or LDPB_RELAY_REPLY_MAX bytes (RELAY_REPLY).
 *
 * Thread safety: reentrant; no shared state. */
#ifndef LDPB_RELAY_H
#define LDPB_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frame kinds (byte 5), next to LDPB_FRAME_SEALED (1) and LDPB_FRAME_PLAIN_ERROR (2). */
#define LDPB_FRAME_RELAY_BATCH 3u /* relay -> aggregator */
#define LDPB_FRAME_RELAY_REPLY 4u /* aggregator -> relay */

#define LDPB_RELAY_ENTRIES_MAX    256u /* inner frames per relay frame */
#define LDPB_RELAY_COUNT_BYTES    2u
#define LDPB_RELAY_ENTRY_OVERHEAD 8u /* id u32 + len u32 */
/* A batch fits the aggregator's receive limit (4 x LDPB_FRAME_MAX, less nanomsg's 4-byte REQ
 * header), so accepting relays changes nothing about what a direct client can make it receive. */
#define LDPB_RELAY_BATCH_MAX (4u * LDPB_FRAME_MAX - 4u)
/* A reply holds one reply frame (at most LDPB_FRAME_MAX) per entry. */
#define LDPB_RELAY_REPLY_MAX                                                                       \
    (LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES +                                            \
     LDPB_RELAY_ENTRIES_MAX * (LDPB_RELAY_ENTRY_OVERHEAD + LDPB_FRAME_MAX))

/* One entry: a view into the relay frame's buffer (parse) or the caller's (build). */
typedef struct ldpb_relay_entry {
    uint32_t id;          /* relay-local: the aggregator copies it, never interprets it */
    const uint8_t *frame; /* the inner frame, unparsed */
    size_t len;           /* 1..LDPB_FRAME_MAX */
} ldpb_relay_entry;

/* 1 if `buf` starts like a relay frame of `kind` (magic, frame_version 1, kind byte), so a
 * receiver can route it before any other parsing; 0 otherwise. */
int ldpb_relay_is_kind(const uint8_t *buf, size_t len, unsigned kind);

/* Parses a relay frame of `kind` (LDPB_FRAME_RELAY_BATCH or LDPB_FRAME_RELAY_REPLY) into at most
 * `cap` entries (views into `buf`), *count of them. Every bound is checked on the raw bytes before
 * an entry is returned: the size limit of the kind, the header, a count of 1 to
 * LDPB_RELAY_ENTRIES_MAX (and at most `cap`), each length 1 to LDPB_FRAME_MAX and inside the
 * buffer, no bytes after the last entry. The inner frames are not parsed. Errors: LDPB_EINVAL
 * (NULL, another kind asked for), LDPB_EVERSION (another frame_version), LDPB_EPROTO (anything
 * else, `detail` saying what). */
ldpb_err ldpb_relay_parse(const uint8_t *buf, size_t len, unsigned kind, ldpb_relay_entry *entries,
                          size_t cap, size_t *count, char *detail);

/* Bytes a relay frame with these entries takes (no checks). */
size_t ldpb_relay_size(const ldpb_relay_entry *entries, size_t n);

/* Writes a relay frame of `kind` with `n` entries into `buf`. Errors: LDPB_EINVAL (NULL, another
 * kind, n of 0 or above LDPB_RELAY_ENTRIES_MAX, an entry of length 0 or above LDPB_FRAME_MAX),
 * LDPB_ERANGE (the frame exceeds the kind's limit, or `cap`: *len gets the size needed). */
ldpb_err ldpb_relay_build(uint8_t *buf, size_t cap, size_t *len, unsigned kind,
                          const ldpb_relay_entry *entries, size_t n);

#ifdef __cplusplus
}
#endif

#endif
