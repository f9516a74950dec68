/* The SQLite store's state log row (store_sqlite.c; docs/aggregator.md, "The state log"): one row
 * per commit holds every state the commit wrote, in this encoding (little-endian):
 *   u8  version (AGG_SLOG_VERSION)
 *   u32 count of entries (at least 1)
 *   count times:
 *     u64 experiment id (1 .. INT64_MAX)
 *     u64 policy_version, u64 reports, u64 duplicates, u64 assignments (each at most INT64_MAX)
 *     u32 state length (at least 1), then that many bytes of the policy's state
 * and nothing after the last entry. Entries are in the order the commit wrote them; a later entry
 * of an experiment (in the row or in a later row) replaces an earlier one.
 *
 * The decoder reads bytes from the database file, so it treats them as untrusted: every length,
 * count and value is checked before it is used, and whatever it refuses is LDPB_ECORRUPT with
 * the reason in `why`. */
#ifndef AGG_STATE_LOG_CODEC_H
#define AGG_STATE_LOG_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "store.h"

#define AGG_SLOG_VERSION 1u
#define AGG_SLOG_HEADER  5u  /* version, count */
#define AGG_SLOG_FIXED   44u /* an entry before its state: id, 4 counters, length */

typedef struct agg_slog_entry {
    int64_t exp;
    agg_store_counters c;
    const uint8_t *state; /* inside the decoded bytes */
    size_t len;
} agg_slog_entry;

/* Writes the header: `count` entries follow. */
void agg_slog_put_header(uint8_t p[AGG_SLOG_HEADER], uint32_t count);

/* Writes an entry's fixed part; its `len` bytes of state follow it. The caller keeps exp >= 1,
 * the counters <= INT64_MAX and 1 <= len <= UINT32_MAX, as the decoder requires. */
void agg_slog_put_fixed(uint8_t p[AGG_SLOG_FIXED], int64_t exp, const agg_store_counters *c,
                        uint32_t len);

/* Checks and splits `n` bytes into *count entries, *out (malloc'd, the caller frees; pointing
 * into `p`). LDPB_ECORRUPT with `why` set for bytes it refuses, LDPB_ENOMEM. */
ldpb_err agg_slog_decode(const uint8_t *p, size_t n, agg_slog_entry **out, size_t *count, char *why,
                         size_t why_cap);

#endif
