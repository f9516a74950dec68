/* Fuzz target for the SQLite store's state log row (aggregator/daemon/state_log_codec.h): the
 * store's open decodes every state_log row it reads from the database file with
 * agg_slog_decode, so the whole input is one row's bytes.
 *
 * Checked against a reference written here from the format in state_log_codec.h:
 *   - the row is accepted exactly when the reference accepts it, with as many entries;
 *   - a refusal is LDPB_ECORRUPT with a reason, and hands back nothing;
 *   - an accepted row's entries lie inside the input, and encoding them again with
 *     agg_slog_put_header / agg_slog_put_fixed gives the input back byte for byte (the encoding
 *     has one spelling per row, so nothing is lost or invented). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "state_log_codec.h"

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The entries of a valid row, or -1: the format read one field at a time. */
static long long reference(const uint8_t *p, size_t n)
{
    if (n < 5 || p[0] != 1)
        return -1;
    uint64_t count = le(p + 1, 4);
    if (count == 0)
        return -1;
    size_t at = 5;
    for (uint64_t i = 0; i < count; i++) {
        if (n - at < 44)
            return -1;
        uint64_t id = le(p + at, 8);
        if (id == 0 || id >> 63)
            return -1;
        for (int k = 1; k <= 4; k++)
            if (le(p + at + 8 * k, 8) >> 63)
                return -1;
        uint64_t len = le(p + at + 40, 4);
        at += 44;
        if (len == 0 || len > n - at)
            return -1;
        at += (size_t)len;
    }
    return at == n ? (long long)count : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    agg_slog_entry *e = NULL;
    size_t count = 0;
    char why[160] = "";
    ldpb_err err = agg_slog_decode(data, size, &e, &count, why, sizeof why);
    long long want = reference(data, size);
    if (err != LDPB_OK) {
        if (err != LDPB_ECORRUPT || want >= 0 || e || count || !why[0])
            abort();
        return 0;
    }
    if (want < 0 || count != (size_t)want || !e)
        abort();
    uint8_t *again = malloc(size);
    if (!again)
        abort();
    agg_slog_put_header(again, (uint32_t)count);
    size_t at = AGG_SLOG_HEADER;
    for (size_t i = 0; i < count; i++) {
        if (e[i].state < data + at + AGG_SLOG_FIXED || e[i].len > size ||
            e[i].state + e[i].len > data + size || at + AGG_SLOG_FIXED + e[i].len > size)
            abort();
        agg_slog_put_fixed(again + at, e[i].exp, &e[i].c, (uint32_t)e[i].len);
        at += AGG_SLOG_FIXED;
        memcpy(again + at, e[i].state, e[i].len);
        at += e[i].len;
    }
    if (at != size || memcmp(again, data, size) != 0)
        abort();
    free(again);
    free(e);
    return 0;
}
