/* The relay frames (ldpb/relay.h, docs/protocol.md section 11). */
#include <string.h>

#include "ldpb/detail.h"
#include "ldpb/relay.h"

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

static const uint8_t magic[4] = {'L', 'D', 'P', 'B'};

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static size_t limit_of(unsigned kind)
{
    return kind == LDPB_FRAME_RELAY_BATCH ? LDPB_RELAY_BATCH_MAX : LDPB_RELAY_REPLY_MAX;
}

int ldpb_relay_is_kind(const uint8_t *buf, size_t len, unsigned kind)
{
    return buf && len >= LDPB_FRAME_HEADER_BYTES && memcmp(buf, magic, 4) == 0 &&
           buf[4] == LDPB_FRAME_VERSION && buf[5] == kind;
}

ldpb_err ldpb_relay_parse(const uint8_t *buf, size_t len, unsigned kind, ldpb_relay_entry *entries,
                          size_t cap, size_t *count, char *detail)
{
    if (detail)
        detail[0] = '\0';
    if (!buf || !entries || !count ||
        (kind != LDPB_FRAME_RELAY_BATCH && kind != LDPB_FRAME_RELAY_REPLY))
        return LDPB_EINVAL;
    *count = 0;
    const char *what = kind == LDPB_FRAME_RELAY_BATCH ? "relay batch" : "relay reply";
    if (len > limit_of(kind)) {
        say(detail, "%s of %zu bytes exceeds the limit of %zu", what, len, limit_of(kind));
        return LDPB_EPROTO;
    }
    if (len < LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES || memcmp(buf, magic, 4) != 0) {
        say(detail, "not a %s: too short or a wrong magic", what);
        return LDPB_EPROTO;
    }
    if (buf[4] != LDPB_FRAME_VERSION) {
        say(detail, "frame version %u is not supported; this peer speaks version %u", buf[4],
            LDPB_FRAME_VERSION);
        return LDPB_EVERSION;
    }
    if (buf[5] != kind) {
        say(detail, "frame kind %u is not a %s (%u)", buf[5], what, kind);
        return LDPB_EPROTO;
    }
    size_t n = (size_t)buf[6] | (size_t)buf[7] << 8;
    if (n == 0 || n > LDPB_RELAY_ENTRIES_MAX || n > cap) {
        say(detail, "%s count %zu is outside 1..%zu", what, n,
            cap < LDPB_RELAY_ENTRIES_MAX ? cap : (size_t)LDPB_RELAY_ENTRIES_MAX);
        return LDPB_EPROTO;
    }
    size_t pos = LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES;
    for (size_t i = 0; i < n; i++) {
        if (len - pos < LDPB_RELAY_ENTRY_OVERHEAD) {
            say(detail, "%s entry %zu at byte %zu is truncated", what, i, pos);
            return LDPB_EPROTO;
        }
        uint32_t id = get_le32(buf + pos);
        uint32_t flen = get_le32(buf + pos + 4);
        pos += LDPB_RELAY_ENTRY_OVERHEAD;
        if (flen == 0 || flen > LDPB_FRAME_MAX) {
            say(detail, "%s entry %zu has length %u, outside 1..%u", what, i, flen, LDPB_FRAME_MAX);
            return LDPB_EPROTO;
        }
        if (len - pos < flen) {
            say(detail, "%s entry %zu says %u bytes, %zu follow", what, i, flen, len - pos);
            return LDPB_EPROTO;
        }
        entries[i].id = id;
        entries[i].frame = buf + pos;
        entries[i].len = flen;
        pos += flen;
    }
    if (pos != len) {
        say(detail, "%zu bytes follow the last %s entry", len - pos, what);
        return LDPB_EPROTO;
    }
    *count = n;
    return LDPB_OK;
}

size_t ldpb_relay_size(const ldpb_relay_entry *entries, size_t n)
{
    size_t total = LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES;
    for (size_t i = 0; entries && i < n; i++)
        total += LDPB_RELAY_ENTRY_OVERHEAD + entries[i].len;
    return total;
}

ldpb_err ldpb_relay_build(uint8_t *buf, size_t cap, size_t *len, unsigned kind,
                          const ldpb_relay_entry *entries, size_t n)
{
    if (!len)
        return LDPB_EINVAL;
    *len = 0;
    if (!buf || !entries || (kind != LDPB_FRAME_RELAY_BATCH && kind != LDPB_FRAME_RELAY_REPLY) ||
        n == 0 || n > LDPB_RELAY_ENTRIES_MAX)
        return LDPB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!entries[i].frame || entries[i].len == 0 || entries[i].len > LDPB_FRAME_MAX)
            return LDPB_EINVAL;
    size_t need = ldpb_relay_size(entries, n);
    if (need > limit_of(kind) || need > cap) {
        *len = need;
        return LDPB_ERANGE;
    }
    memcpy(buf, magic, 4);
    buf[4] = LDPB_FRAME_VERSION;
    buf[5] = (uint8_t)kind;
    buf[6] = (uint8_t)n;
    buf[7] = (uint8_t)(n >> 8);
    size_t pos = LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES;
    for (size_t i = 0; i < n; i++) {
        put_le32(buf + pos, entries[i].id);
        put_le32(buf + pos + 4, (uint32_t)entries[i].len);
        pos += LDPB_RELAY_ENTRY_OVERHEAD;
        memcpy(buf + pos, entries[i].frame, entries[i].len);
        pos += entries[i].len;
    }
    *len = pos;
    return LDPB_OK;
}
