/* Fuzz target for the replay log's segment loader (aggregator/daemon/nonce_log.c, through the
 * pure functions of nonce_log_parse.h that agg_nonce_log_open runs on what it reads).
 *
 * Input: a 20-byte parameter block, then the previous segment (`nonces.old`) and the current one
 * (`nonces.log`) back to back:
 *   now_ms u64 LE (the top two bits cleared, so now + window cannot wrap),
 *   window_ms u32 LE (taken modulo the configurable range, 1 ms .. 86400 s),
 *   max_entries u16 LE (1 + value modulo 512, so the bound is reached by small inputs),
 *   read size u16 LE (1 + value: the most bytes one read returns while loading),
 *   length of the previous segment u32 LE (clamped to what follows).
 * Checked against a reference written here from the format in nonce_log.h:
 *   - a header is recognised exactly when the magic is there, and gives its start time;
 *   - the records taken are exactly the whole records within the window, in file order, with
 *     their digest and time unchanged (round trip), whatever the read boundaries; a torn tail
 *     (fewer than 24 bytes) is never taken and is what agg_nl_cut cuts off;
 *   - the settled set holds at most max_entries records, the newest ones; the floor is the time
 *     of the newest left out; the set is sorted by digest;
 *   - every record within the window is refused until its time plus the window (nothing an
 *     earlier run accepted is forgotten early), and a digest not in the log with a time above the
 *     floor is not refused. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "nonce_log.h"
#include "nonce_log_parse.h"

#define PARAMS     20u
#define MAX_WINDOW 86400000u
#define REC        AGG_NONCE_LOG_RECORD
#define HDR        AGG_NONCE_LOG_HEADER

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int live(uint64_t t, uint64_t now, uint64_t w)
{
    return (now <= w || t >= now - w) && t <= now + w;
}

static int same_rec(const agg_nl_rec *a, const uint8_t *raw)
{
    return memcmp(a->digest, raw, AGG_NL_DIGEST_BYTES) == 0 &&
           a->t_ms == le(raw + AGG_NL_DIGEST_BYTES, 8);
}

/* Loads one segment the way load_segment does, with reads of at most `chunk` bytes into a
 * buffer of the loader's size, and checks it against a single pass and the reference. */
static void load(agg_nl_set *all, const uint8_t *seg, size_t len, uint64_t now, uint64_t w,
                 size_t chunk)
{
    uint64_t start = 0;
    int hdr = agg_nl_header(seg, len, &start);
    if (hdr != (len >= HDR && memcmp(seg, "LDPBNLG1", 8) == 0))
        abort();
    if (!hdr)
        return;
    if (start != le(seg + 8, 8))
        abort();
    const uint8_t *body = seg + HDR;
    size_t blen = len - HDR, whole = blen - blen % REC;
    if (agg_nl_cut(len) != HDR + whole)
        abort();

    agg_nl_set one = {0};
    size_t used = 0;
    if (agg_nl_take(&one, body, blen, w, now, &used) != LDPB_OK)
        abort();
    if (used != whole)
        abort();
    size_t k = 0;
    for (size_t off = 0; off < whole; off += REC) {
        if (!live(le(body + off + AGG_NL_DIGEST_BYTES, 8), now, w))
            continue;
        if (k >= one.n || !same_rec(&one.rec[k], body + off))
            abort();
        k++;
    }
    if (k != one.n)
        abort();

    /* The loader's way: reads into a fixed buffer, a partial record carried to the next. */
    static uint8_t buf[REC * 4096];
    size_t first = all->n, carry = 0, pos = 0;
    while (pos < blen) {
        size_t n = blen - pos;
        if (n > chunk)
            n = chunk;
        if (n > sizeof buf - carry)
            n = sizeof buf - carry;
        memcpy(buf + carry, body + pos, n);
        pos += n;
        size_t have = carry + n, w_used = 0;
        if (agg_nl_take(all, buf, have, w, now, &w_used) != LDPB_OK)
            abort();
        if (w_used % REC || have - w_used >= REC)
            abort();
        carry = have - w_used;
        memmove(buf, buf + w_used, carry);
    }
    if (carry != blen % REC || all->n - first != one.n)
        abort();
    for (size_t i = 0; i < one.n; i++)
        if (memcmp(&all->rec[first + i].digest, one.rec[i].digest, AGG_NL_DIGEST_BYTES) ||
            all->rec[first + i].t_ms != one.rec[i].t_ms)
            abort();
    free(one.rec);
}

static int by_time_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void check_settled(const agg_nl_set *s, const agg_nl_rec *before, size_t n_before,
                          size_t max, uint64_t now, uint64_t w)
{
    uint64_t *t = malloc((n_before + 1) * sizeof *t), *kept = malloc((s->n + 1) * sizeof *kept);
    if (!t || !kept)
        abort();
    for (size_t i = 0; i < n_before; i++)
        t[i] = before[i].t_ms;
    qsort(t, n_before, sizeof *t, by_time_desc);
    size_t want = n_before < max ? n_before : max;
    if (s->n != want || s->floor_ms != (n_before > max ? t[max] : 0))
        abort();
    uint64_t end = s->floor_ms ? s->floor_ms + w : 0;
    for (size_t i = 0; i < s->n; i++) {
        kept[i] = s->rec[i].t_ms;
        if (kept[i] + w > end)
            end = kept[i] + w;
        if (i && memcmp(s->rec[i - 1].digest, s->rec[i].digest, AGG_NL_DIGEST_BYTES) > 0)
            abort();
    }
    if (s->end_ms != end)
        abort();
    qsort(kept, s->n, sizeof *kept, by_time_desc);
    if (s->n && memcmp(kept, t, s->n * sizeof *t) != 0)
        abort();

    /* Nothing accepted within the window is forgotten before its time plus the window. */
    for (size_t i = 0; i < n_before; i++) {
        const agg_nl_rec *r = &before[i];
        if (!agg_nl_refused(s, r->digest, r->t_ms, now) ||
            !agg_nl_refused(s, r->digest, r->t_ms, r->t_ms + w))
            abort();
    }
    /* A digest that is in neither segment, above the floor, is let through. */
    uint8_t fresh[AGG_NL_DIGEST_BYTES];
    memset(fresh, 0xa5, sizeof fresh);
    int absent = 1;
    for (size_t i = 0; i < n_before; i++)
        absent &= memcmp(before[i].digest, fresh, sizeof fresh) != 0;
    if (absent && now > s->floor_ms && agg_nl_refused(s, fresh, now, now) != 0)
        abort();
    free(t);
    free(kept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PARAMS)
        return 0;
    uint64_t now = le(data, 8) & (UINT64_MAX >> 2);
    uint64_t w = 1 + le(data + 8, 4) % MAX_WINDOW;
    size_t max = 1 + (size_t)(le(data + 12, 2) % 512);
    size_t chunk = 1 + (size_t)le(data + 14, 2);
    size_t rest = size - PARAMS, old_len = (size_t)le(data + 16, 4);
    if (old_len > rest)
        old_len = rest;
    const uint8_t *seg = data + PARAMS;

    agg_nl_set s = {0};
    load(&s, seg, old_len, now, w, chunk);
    load(&s, seg + old_len, rest - old_len, now, w, chunk);
    agg_nl_rec *before = malloc((s.n + 1) * sizeof *before);
    if (!before)
        abort();
    if (s.n)
        memcpy(before, s.rec, s.n * sizeof *before);
    size_t n_before = s.n;
    agg_nl_settle(&s, max, w);
    check_settled(&s, before, n_before, max, now, w);
    free(before);
    free(s.rec);
    return 0;
}
