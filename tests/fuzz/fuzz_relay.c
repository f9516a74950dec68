/* Fuzz target for the relay frames (ldpb/relay.h, docs/protocol.md section 11): each input is
 * parsed as a RELAY_BATCH and as a RELAY_REPLY. Whatever parses must lie inside the input, be
 * within the limits, and rebuild to the same bytes; whatever does not must be refused with
 * LDPB_EPROTO or LDPB_EVERSION and no entries. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ldpb/relay.h"

static void check(const uint8_t *data, size_t size, unsigned kind)
{
    static ldpb_relay_entry e[LDPB_RELAY_ENTRIES_MAX];
    size_t n = 99;
    char detail[LDPB_DETAIL_BYTES];
    ldpb_err err = ldpb_relay_parse(data, size, kind, e, LDPB_RELAY_ENTRIES_MAX, &n, detail);
    if (err != LDPB_OK) {
        if ((err != LDPB_EPROTO && err != LDPB_EVERSION) || n != 0 || !detail[0])
            abort();
        return;
    }
    if (!ldpb_relay_is_kind(data, size, kind) || n == 0 || n > LDPB_RELAY_ENTRIES_MAX)
        abort();
    for (size_t i = 0; i < n; i++)
        if (e[i].len == 0 || e[i].len > LDPB_FRAME_MAX || e[i].frame < data ||
            e[i].frame + e[i].len > data + size)
            abort();
    if (ldpb_relay_size(e, n) != size)
        abort();
    uint8_t *again = malloc(size);
    size_t len = 0;
    if (!again || ldpb_relay_build(again, size, &len, kind, e, n) != LDPB_OK || len != size ||
        memcmp(again, data, size) != 0)
        abort();
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, LDPB_FRAME_RELAY_BATCH);
    check(data, size, LDPB_FRAME_RELAY_REPLY);
    return 0;
}
