/* The replay log's decoding, apart from its files (nonce_log.h has the format): pure functions
 * over bytes, so the fuzz target (tests/fuzz/fuzz_nonce_log.c) reaches exactly the code that
 * agg_nonce_log_open runs on what it reads. Internal to the daemon. */
#ifndef LDPB_AGG_NONCE_LOG_PARSE_H
#define LDPB_AGG_NONCE_LOG_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"

#define AGG_NL_DIGEST_BYTES 16u

typedef struct agg_nl_rec {
    uint8_t digest[AGG_NL_DIGEST_BYTES];
    uint64_t t_ms;
} agg_nl_rec;

/* What earlier runs accepted: sorted by digest once settled; read-only after that. */
typedef struct agg_nl_set {
    agg_nl_rec *rec;
    size_t n, cap;
    uint64_t floor_ms; /* refuse nonce times at or below, while floor + window is ahead */
    uint64_t end_ms;   /* the whole set has expired after this time */
} agg_nl_set;

/* A segment's header (its first AGG_NONCE_LOG_HEADER bytes of `len`): 1 and *start_ms if it is
 * one, 0 if not (the file was never a complete segment and is ignored). */
int agg_nl_header(const uint8_t *p, size_t len, uint64_t *start_ms);

/* Appends to `s` the records among the whole AGG_NONCE_LOG_RECORD-byte records at the start of
 * p[0, len) whose time is within `window_ms` of `now_ms` (only those can still pass the window
 * check). *used gets the bytes of the whole records; the rest (less than one record) is a torn
 * record or the start of the next read. LDPB_ENOMEM leaves `s` as it was before the record that
 * did not fit. */
ldpb_err agg_nl_take(agg_nl_set *s, const uint8_t *p, size_t len, uint64_t window_ms,
                     uint64_t now_ms, size_t *used);

/* Keeps the newest `max_entries` records (the newest left out sets the floor), sets end_ms, and
 * sorts by digest. */
void agg_nl_settle(agg_nl_set *s, size_t max_entries, uint64_t window_ms);

/* Whether a nonce with `digest` and time `t_ms`, seen at `now_ms`, was accepted by an earlier
 * run: 0 no, 1 its time is at or below the floor, 2 its digest is in the set. */
int agg_nl_refused(const agg_nl_set *s, const uint8_t digest[AGG_NL_DIGEST_BYTES], uint64_t t_ms,
                   uint64_t now_ms);

/* The size a current segment of `size` bytes (a valid header) is cut to when a run goes on
 * appending to it: a torn last record goes, so later records stay aligned. */
uint64_t agg_nl_cut(uint64_t size);

#endif
