/* The state_id marker file's decoding, apart from the file (state_id.h has the rules): a pure
 * function over bytes, so the fuzz target (tests/fuzz/fuzz_state_id.c) reaches exactly the code
 * that agg_state_id_settle runs on what it reads. Internal to the daemon. */
#ifndef LDPB_AGG_STATE_ID_PARSE_H
#define LDPB_AGG_STATE_ID_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "state_id.h"

/* The marker's contents: 2 * AGG_STATE_ID_BYTES hex digits and a newline. */
#define AGG_STATE_ID_MARKER_BYTES (2 * AGG_STATE_ID_BYTES + 1)

/* The identity in the first `len` bytes of a marker file: 0 and `id` if they are exactly a
 * marker, -1 if not (`id` is then unspecified). */
int agg_state_id_parse_marker(const uint8_t *buf, size_t len, uint8_t id[AGG_STATE_ID_BYTES]);

#endif
