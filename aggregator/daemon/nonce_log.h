/* The replay window across restarts. The replay cache (ldpb/seal.h) lives in memory: after a
 * crash or kill -9 a restarted daemon would accept again, within the window, a frame captured
 * before; an AssignRequest would be served twice and a ReportAndAssign answered with a duplicate
 * ack and a fresh assignment. This log keeps, for every request the replay cache accepted, a
 * record on disk before the request is acted on, and a new run refuses (LDPB_EREPLAY) a frame a
 * previous run accepted while its nonce time is within the window.
 *
 * Files in the state directory, mode 0600: `nonces.log` (the current segment) and `nonces.old`
 * (the previous one). A segment is a 16-byte header, "LDPBNLG1" and the time it was started (u64
 * LE, ms since the epoch), then 24-byte records: BLAKE2b-128 of (client_pk || nonce) keyed with
 * BLAKE2b-256 keyed by the server's secret key over "ldpb nonce log key v1" || the state
 * identity, then the nonce time (u64 LE). The keyed hash keeps client keys out of the file. A
 * record is needed until its nonce time plus the window; a nonce time is at most the window
 * ahead of the clock that accepted it, so a record is needed at most 2 x window after it was
 * written: the current segment becomes the previous one once it is 2 x window old, and the
 * previous one is then deleted.
 *
 * Records are written with write(2), without fsync: they survive the death of the process
 * (kill -9, a crash, the OOM killer), since the kernel holds them, but not necessarily a crash
 * of the machine; a background sync once a second bounds that loss to about the last second.
 * A record that cannot be written refuses the request (LDPB_EBUSY): the daemon never serves a
 * request it could not remember.
 *
 * At open, the records of both segments whose time is within the window are loaded into a
 * read-only set (at most max_entries, the newest; the time of the newest left out becomes a
 * floor at or below which every nonce is refused, as the replay cache's floor); the set is
 * dropped once all of it has expired. Thread safety: agg_nonce_log_accept may be called from
 * several threads at once. */
#ifndef LDPB_AGG_NONCE_LOG_H
#define LDPB_AGG_NONCE_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/seal.h"

#define AGG_NONCE_LOG_FILE     "nonces.log"
#define AGG_NONCE_LOG_OLD_FILE "nonces.old"
#define AGG_NONCE_LOG_RECORD   24u
#define AGG_NONCE_LOG_HEADER   16u

typedef struct agg_nonce_log agg_nonce_log;

/* Opens (creating if needed) the log in `dir` and loads what earlier runs accepted within
 * `window_ms` of `now_ms`. `state_id` is AGG_STATE_ID_BYTES bytes. Errors: LDPB_EIO (with
 * `errmsg`, `errcap` bytes), LDPB_ENOMEM, LDPB_ECRYPTO, LDPB_EINVAL. */
ldpb_err agg_nonce_log_open(agg_nonce_log **out, const char *dir,
                            const uint8_t server_sk[LDPB_KEY_BYTES], const uint8_t *state_id,
                            uint64_t window_ms, size_t max_entries, uint64_t now_ms, char *errmsg,
                            size_t errcap);

/* Call for every request the replay cache has just accepted, before acting on it: LDPB_OK once
 * the pair is recorded; LDPB_EREPLAY if an earlier run accepted it (or its time is at or below
 * the loaded floor); LDPB_EBUSY if the record cannot be written. `detail` (LDPB_DETAIL_BYTES)
 * says why. */
ldpb_err agg_nonce_log_accept(agg_nonce_log *l, const uint8_t client_pk[LDPB_KEY_BYTES],
                              const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms, char *detail);

/* agg_nonce_log_accept in two steps, for a caller that records several requests with one
 * write (a relay batch's inner frames): the check (LDPB_OK with the record in `rec`, or
 * LDPB_EREPLAY), then agg_nonce_log_write of the n records the caller gathered, before it acts
 * on any of them (LDPB_OK, or LDPB_EBUSY: none is recorded, refuse them all). `detail`
 * (LDPB_DETAIL_BYTES) says why. */
ldpb_err agg_nonce_log_check(const agg_nonce_log *l, const uint8_t client_pk[LDPB_KEY_BYTES],
                             const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms,
                             uint8_t rec[AGG_NONCE_LOG_RECORD], char *detail);
ldpb_err agg_nonce_log_write(agg_nonce_log *l, const uint8_t *recs, size_t n, uint64_t now_ms,
                             char *detail);

/* Records loaded from earlier runs at open (for the log line and the tests). */
size_t agg_nonce_log_loaded(const agg_nonce_log *l);

/* Stops the sync thread, syncs and closes the files. Accepts NULL. */
void agg_nonce_log_close(agg_nonce_log *l);

#endif
