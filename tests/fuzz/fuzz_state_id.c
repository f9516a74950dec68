/* Fuzz target for the state_id marker file's parser (aggregator/daemon/state_id.c, through
 * agg_state_id_parse_marker, which agg_state_id_settle runs on the bytes it reads). The input is
 * the file's contents. Checked against a reference written here from state_id.h: a marker is
 * accepted exactly when it is 32 hex digits (either case) and a newline, nothing before or after;
 * an accepted marker names the identity its digits spell, so agg_state_id_hex of it and a newline
 * give the input back, lower-cased, byte for byte. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "state_id.h"
#include "state_id_parse.h"

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t id[AGG_STATE_ID_BYTES], want[AGG_STATE_ID_BYTES];
    int ok = size == AGG_STATE_ID_MARKER_BYTES && data[size - 1] == '\n';
    for (size_t i = 0; ok && i < 2 * AGG_STATE_ID_BYTES; i += 2) {
        int hi = hex_value(data[i]), lo = hex_value(data[i + 1]);
        ok = hi >= 0 && lo >= 0;
        if (ok)
            want[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    int rc = agg_state_id_parse_marker(data, size, id);
    if (rc != (ok ? 0 : -1))
        abort();
    if (!ok)
        return 0;
    if (memcmp(id, want, sizeof id) != 0)
        abort();
    char hex[2 * AGG_STATE_ID_BYTES + 1];
    agg_state_id_hex(id, hex);
    for (size_t i = 0; i < 2 * AGG_STATE_ID_BYTES; i++) {
        uint8_t c = data[i];
        if (c >= 'A' && c <= 'F')
            c = (uint8_t)(c - 'A' + 'a');
        if ((uint8_t)hex[i] != c)
            abort();
    }
    return 0;
}
