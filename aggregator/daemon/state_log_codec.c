/* The state log row's encoding: state_log_codec.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "le_bytes.h"
#include "state_log_codec.h"

void agg_slog_put_header(uint8_t p[AGG_SLOG_HEADER], uint32_t count)
{
    p[0] = (uint8_t)AGG_SLOG_VERSION;
    agg_put_le(p + 1, count, 4);
}

void agg_slog_put_fixed(uint8_t p[AGG_SLOG_FIXED], int64_t exp, const agg_store_counters *c,
                        uint32_t len)
{
    agg_put_le(p, (uint64_t)exp, 8);
    agg_put_le(p + 8, c->policy_version, 8);
    agg_put_le(p + 16, c->reports, 8);
    agg_put_le(p + 24, c->duplicates, 8);
    agg_put_le(p + 32, c->assignments, 8);
    agg_put_le(p + 40, len, 4);
}

__attribute__((format(printf, 3, 4))) static ldpb_err refuse(char *why, size_t cap, const char *fmt,
                                                             ...)
{
    if (cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return LDPB_ECORRUPT;
}

ldpb_err agg_slog_decode(const uint8_t *p, size_t n, agg_slog_entry **out, size_t *count, char *why,
                         size_t why_cap)
{
    *out = NULL;
    *count = 0;
    if (n < AGG_SLOG_HEADER)
        return refuse(why, why_cap, "%zu bytes, shorter than the %u-byte header", n,
                      AGG_SLOG_HEADER);
    if (p[0] != AGG_SLOG_VERSION)
        return refuse(why, why_cap, "unknown encoding version %u (this build reads %u)", p[0],
                      AGG_SLOG_VERSION);
    uint64_t want = agg_get_le(p + 1, 4);
    /* Each entry takes at least AGG_SLOG_FIXED + 1 bytes, so a count the bytes cannot hold is
     * refused before anything is allocated for it. */
    if (want == 0 || want > (n - AGG_SLOG_HEADER) / (AGG_SLOG_FIXED + 1))
        return refuse(why, why_cap, "%llu entries cannot fit in %zu bytes",
                      (unsigned long long)want, n);
    agg_slog_entry *e = malloc((size_t)want * sizeof *e);
    if (!e) {
        (void)refuse(why, why_cap, "out of memory");
        return LDPB_ENOMEM;
    }
    size_t off = AGG_SLOG_HEADER;
    for (size_t i = 0; i < want; i++) {
        if (n - off < AGG_SLOG_FIXED) {
            free(e);
            return refuse(why, why_cap, "entry %zu of %llu is cut short", i + 1,
                          (unsigned long long)want);
        }
        const uint8_t *q = p + off;
        uint64_t v[5];
        for (int k = 0; k < 5; k++)
            v[k] = agg_get_le(q + 8 * k, 8);
        uint64_t len = agg_get_le(q + 40, 4);
        off += AGG_SLOG_FIXED;
        const char *bad = v[0] == 0 || v[0] > INT64_MAX ? "an experiment id outside 1..2^63-1"
                          : (v[1] | v[2] | v[3] | v[4]) > INT64_MAX ? "a counter above 2^63-1"
                          : len == 0                                ? "an empty state"
                          : len > n - off ? "a state longer than the bytes left"
                                          : NULL;
        if (bad) {
            free(e);
            return refuse(why, why_cap, "entry %zu of %llu has %s", i + 1, (unsigned long long)want,
                          bad);
        }
        e[i] = (agg_slog_entry){(int64_t)v[0], {v[1], v[2], v[3], v[4]}, p + off, (size_t)len};
        off += (size_t)len;
    }
    if (off != n) {
        free(e);
        return refuse(why, why_cap, "%zu bytes after the last of %llu entries", n - off,
                      (unsigned long long)want);
    }
    *out = e;
    *count = (size_t)want;
    return LDPB_OK;
}
