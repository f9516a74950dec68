/* Fuzz target for the replay log's segment loader (aggregator/daemon/nonce_log.c, through the
 * pure functions of nonce_log_parse.h that agg_nonce_log_open runs on what it reads).
 *
 * Input: a 21-byte parameter block, then the previous segment (`nonces.old`) and the current one
 * (`nonces.log`) back to back:
 *   now_ms u64 LE (the top two bits cleared, so now + window cannot wrap),
 *   window_ms u32 LE (taken modulo the configurable range, 1 ms .. 86400 s),
 *   max_entries u16 LE (1 + value modulo 512, so the bound is reached by small inputs),
 *   read size u16 LE (1 + value: the most bytes one read returns while loading),
 *   length of the previous segment u32 LE (clamped to what follows),
 *   flags u8: bit 0, also through the files (below).
 * Checked against a reference written here from the format in nonce_log.h:
 *   - a header is recognised exactly when the magic is there, and gives its start time;
 *   - the records taken are exactly the whole records within the window, in file order, with
 *     their digest and time unchanged (round trip), whatever the read boundaries; a torn tail
 *     (fewer than 24 bytes) is never taken and is what agg_nl_cut cuts off;
 *   - the settled set holds at most max_entries records, the newest ones; the floor is the time
 *     of the newest left out; the set is sorted by digest;
 *   - every record within the window is refused until its time plus the window (nothing an
 *     earlier run accepted is forgotten early), and a digest not in the log with a time above the
 *     floor is not refused.
 * With flag bit 0, the two segments are also written as files (an empty one is no file) and
 * opened with agg_nonce_log_open, after the first whole record of the current segment is made a
 * real one (its digest computed from a client key and nonce under the key nonce_log.h describes):
 *   - the open succeeds and loads as many records as the pure loader settled;
 *   - a current segment that is carried on keeps its bytes with its torn tail cut; one that is
 *     too old, or from the future, becomes nonces.old unchanged and a fresh segment begins;
 *   - the real record's nonce is refused if its time is within the window;
 *   - a fresh nonce is recorded (or refused, exactly when below the floor), and the file stays
 *     header plus whole records. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz_target.h"
#include "ldpb/detail.h"
#include "nonce_log.h"
#include "nonce_log_parse.h"
#include "state_id.h"

#define PARAMS     21u
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

/* ---- through the files ------------------------------------------------------------------ */

static char dir[64];
static uint8_t sk[LDPB_KEY_BYTES], sid[AGG_STATE_ID_BYTES];

static void path_of(char *out, const char *name)
{
    snprintf(out, 128, "%s/%s", dir, name);
}

static void cleanup(void)
{
    char p[128];
    path_of(p, AGG_NONCE_LOG_FILE);
    unlink(p);
    path_of(p, AGG_NONCE_LOG_OLD_FILE);
    unlink(p);
    rmdir(dir);
}

/* A scratch state directory for the process, in memory where there is /dev/shm: the log's
 * fdatasync calls would otherwise make each run a disk write. */
static void make_dir(void)
{
    if (dir[0])
        return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/ldpb-fuzz-nlog-XXXXXX", base);
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
}

static void put_file(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    path_of(path, name);
    if (unlink(path) != 0 && errno != ENOENT)
        abort();
    if (!n)
        return;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        abort();
}

static uint8_t *get_file(const char *name, size_t *n)
{
    char path[128];
    path_of(path, name);
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    if (!p || fread(p, 1, (size_t)len, f) != (size_t)len)
        abort();
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* The record digest as nonce_log.h specifies it, computed here independently. */
static void digest_of(const uint8_t *pk, const uint8_t *nonce, uint8_t out[AGG_NL_DIGEST_BYTES])
{
    static const char ctx[] = "ldpb nonce log key v1";
    uint8_t msg[sizeof ctx - 1 + AGG_STATE_ID_BYTES], key[32];
    memcpy(msg, ctx, sizeof ctx - 1);
    memcpy(msg + sizeof ctx - 1, sid, AGG_STATE_ID_BYTES);
    crypto_generichash(key, sizeof key, msg, sizeof msg, sk, sizeof sk);
    uint8_t m[LDPB_KEY_BYTES + LDPB_NONCE_BYTES];
    memcpy(m, pk, LDPB_KEY_BYTES);
    memcpy(m + LDPB_KEY_BYTES, nonce, LDPB_NONCE_BYTES);
    crypto_generichash(out, AGG_NL_DIGEST_BYTES, m, sizeof m, key, sizeof key);
}

static void nonce_at(uint8_t nonce[LDPB_NONCE_BYTES], uint64_t t, uint8_t tag)
{
    memset(nonce, tag, LDPB_NONCE_BYTES);
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(t >> (8 * i));
}

/* Makes the first whole record of the current segment (if any) the record of a real nonce. */
static int make_real(uint8_t *cur, size_t len, uint8_t pk[LDPB_KEY_BYTES],
                     uint8_t nonce[LDPB_NONCE_BYTES])
{
    if (len < HDR + REC || memcmp(cur, "LDPBNLG1", 8) != 0)
        return 0;
    memset(pk, 0x11, LDPB_KEY_BYTES);
    nonce_at(nonce, le(cur + HDR + AGG_NL_DIGEST_BYTES, 8), 0x22);
    digest_of(pk, nonce, cur + HDR);
    return 1;
}

static void through_files(const uint8_t *old, size_t n_old, const uint8_t *cur, size_t n_cur,
                          const agg_nl_set *pure, uint64_t now, uint64_t w, size_t max, int real,
                          const uint8_t *pk, const uint8_t *nonce)
{
    make_dir();
    put_file(AGG_NONCE_LOG_OLD_FILE, old, n_old);
    put_file(AGG_NONCE_LOG_FILE, cur, n_cur);
    agg_nonce_log *l = NULL;
    char msg[256] = "", detail[LDPB_DETAIL_BYTES];
    if (agg_nonce_log_open(&l, dir, sk, sid, w, max, now, msg, sizeof msg) != LDPB_OK)
        abort();
    if (agg_nonce_log_loaded(l) != pure->n)
        abort();

    uint64_t start = 0;
    int hdr = agg_nl_header(cur, n_cur, &start);
    size_t n_log = 0, n_now_old = 0;
    uint8_t *log = get_file(AGG_NONCE_LOG_FILE, &n_log);
    uint8_t *now_old = get_file(AGG_NONCE_LOG_OLD_FILE, &n_now_old);
    if (hdr && start && start <= now && now - start < 2 * w) {
        if (n_log != agg_nl_cut(n_cur) || memcmp(log, cur, n_log) != 0)
            abort();
    } else {
        uint64_t fresh_start = 0;
        if (n_log != HDR || !agg_nl_header(log, n_log, &fresh_start) || fresh_start != now)
            abort();
        const uint8_t *want = hdr && start ? cur : old;
        size_t n_want = hdr && start ? n_cur : n_old;
        if (n_now_old != n_want || (n_want && memcmp(now_old, want, n_want) != 0))
            abort();
    }
    free(log);
    free(now_old);

    if (real) {
        uint64_t t = le(nonce, 8);
        if (live(t, now, w) && agg_nonce_log_accept(l, pk, nonce, now, detail) != LDPB_EREPLAY)
            abort();
    }
    uint8_t pk2[LDPB_KEY_BYTES], nonce2[LDPB_NONCE_BYTES], d2[AGG_NL_DIGEST_BYTES];
    memset(pk2, 0x33, sizeof pk2);
    nonce_at(nonce2, now, 0x44);
    digest_of(pk2, nonce2, d2);
    ldpb_err want = agg_nl_refused(pure, d2, now, now) ? LDPB_EREPLAY : LDPB_OK;
    if (agg_nonce_log_accept(l, pk2, nonce2, now, detail) != want)
        abort();
    size_t n_after = 0;
    uint8_t *after = get_file(AGG_NONCE_LOG_FILE, &n_after);
    if (n_after < HDR || (n_after - HDR) % REC != 0 ||
        (want == LDPB_OK &&
         (memcmp(after + n_after - REC, d2, sizeof d2) != 0 || le(after + n_after - 8, 8) != now)))
        abort();
    free(after);
    agg_nonce_log_close(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PARAMS)
        return 0;
    if (sodium_init() < 0)
        abort();
    memset(sk, 7, sizeof sk); /* those of gen_statefiles_corpus, so its records are real ones */
    memset(sid, 3, sizeof sid);
    uint64_t now = le(data, 8) & (UINT64_MAX >> 2);
    uint64_t w = 1 + le(data + 8, 4) % MAX_WINDOW;
    size_t max = 1 + (size_t)(le(data + 12, 2) % 512);
    size_t chunk = 1 + (size_t)le(data + 14, 2);
    size_t rest = size - PARAMS, old_len = (size_t)le(data + 16, 4);
    int files = data[20] & 1;
    if (old_len > rest)
        old_len = rest;
    uint8_t *seg = malloc(rest + 1);
    if (!seg)
        abort();
    memcpy(seg, data + PARAMS, rest);
    uint8_t pk[LDPB_KEY_BYTES], nonce[LDPB_NONCE_BYTES];
    int real = files && make_real(seg + old_len, rest - old_len, pk, nonce);

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
    if (files)
        through_files(seg, old_len, seg + old_len, rest - old_len, &s, now, w, max, real, pk,
                      nonce);
    free(before);
    free(s.rec);
    free(seg);
    return 0;
}
