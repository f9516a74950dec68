/* Writes a seed corpus for the daemon's state files into a directory; the directory's name picks
 * which (the last path component):
 *   nonce_log  fuzz_nonce_log: segments written by agg_nonce_log_open / agg_nonce_log_accept in a
 *              temporary state directory (fixed key, identity and clock, so the same bytes on
 *              every run), behind the target's parameter block; and broken or edge variants: a
 *              torn tail, a wrong magic, a short header, records outside the window, more records
 *              than max_entries, one-byte reads, no segment at all, a current segment due for
 *              rotation or from the future. Most also ask the target to go through the files.
 *   state_id   fuzz_state_id: markers written by agg_state_id_record, variants the parser
 *              refuses (or, upper case, accepts), and one seed per line of the identity rules
 *              of state_id.h (marker and identity row).
 * The output is deterministic; the state_corpus_golden_* tests check it against
 * tests/fuzz/corpus/, which pins both file formats.
 * Usage: gen_statefiles_corpus OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldpb/detail.h"
#include "ldpb/seal.h"
#include "nonce_log.h"
#include "state_id.h"

#define W  10000u /* window, ms */
#define T0 1800000000000ull

static const char *outdir;
static char tmpdir[] = "/tmp/ldpb-gen-state-XXXXXX";

static void die(const char *what)
{
    fprintf(stderr, "gen_statefiles_corpus: %s\n", what);
    exit(1);
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", outdir, name) >= (int)sizeof path)
        die("path too long");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die("cannot write a corpus file");
}

/* Reads a file of the temporary state directory into p (cap bytes); a missing one is empty. */
static size_t read_tmp(const char *name, uint8_t *p, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(p, 1, cap, f);
    fclose(f);
    return n;
}

static void remove_tmp(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    unlink(path);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- nonce_log ------------------------------------------------------------------------- */

typedef struct segs {
    uint8_t old[4096], cur[4096];
    size_t n_old, n_cur;
} segs;

static agg_nonce_log *open_log(uint64_t now)
{
    uint8_t sk[LDPB_KEY_BYTES], sid[AGG_STATE_ID_BYTES];
    memset(sk, 7, sizeof sk);
    memset(sid, 3, sizeof sid);
    agg_nonce_log *l = NULL;
    char msg[256] = "";
    if (agg_nonce_log_open(&l, tmpdir, sk, sid, W, 1u << 20, now, msg, sizeof msg) != LDPB_OK)
        die(msg);
    return l;
}

static void accept_at(agg_nonce_log *l, uint8_t client, uint64_t t, uint64_t now)
{
    uint8_t pk[LDPB_KEY_BYTES], nonce[LDPB_NONCE_BYTES];
    char detail[LDPB_DETAIL_BYTES];
    memset(pk, client, sizeof pk);
    memset(nonce, client ^ 0x5a, sizeof nonce);
    put_le(nonce, t, 8);
    nonce[8] = 0;
    if (agg_nonce_log_accept(l, pk, nonce, now, detail) != LDPB_OK)
        die(detail);
}

/* A fresh state directory's log: `n` records at T0 + i ms, each nonce time offset by `skew` ms
 * from the clock; with `rotate`, a second segment begins 2 x window later with `n` more. */
static void make_log(segs *s, int n, int64_t skew, int rotate)
{
    remove_tmp(AGG_NONCE_LOG_FILE);
    remove_tmp(AGG_NONCE_LOG_OLD_FILE);
    agg_nonce_log *l = open_log(T0);
    for (int i = 0; i < n; i++)
        accept_at(l, (uint8_t)(i + 1), (uint64_t)((int64_t)(T0 + (uint64_t)i) + skew),
                  T0 + (uint64_t)i);
    if (rotate) {
        uint64_t t1 = T0 + 2 * W + 5;
        for (int i = 0; i < n; i++)
            accept_at(l, (uint8_t)(100 + i), t1 + (uint64_t)i, t1 + (uint64_t)i);
    }
    agg_nonce_log_close(l);
    s->n_old = read_tmp(AGG_NONCE_LOG_OLD_FILE, s->old, sizeof s->old);
    s->n_cur = read_tmp(AGG_NONCE_LOG_FILE, s->cur, sizeof s->cur);
}

/* The target's input: its parameter block, then the previous and the current segment. */
static void emit(const char *name, const segs *s, uint64_t now, size_t max, size_t chunk,
                 uint8_t files, const uint8_t *tail, size_t n_tail)
{
    static uint8_t buf[21 + 2 * 4096 + 64];
    put_le(buf, now, 8);
    put_le(buf + 8, W - 1, 4); /* the target takes 1 + value */
    put_le(buf + 12, max - 1, 2);
    put_le(buf + 14, chunk - 1, 2);
    put_le(buf + 16, s->n_old, 4);
    buf[20] = files;
    size_t n = 21;
    memcpy(buf + n, s->old, s->n_old);
    n += s->n_old;
    memcpy(buf + n, s->cur, s->n_cur);
    n += s->n_cur;
    if (n_tail)
        memcpy(buf + n, tail, n_tail);
    write_file(name, buf, n + n_tail);
}

static void nonce_log_corpus(void)
{
    segs s;
    static const uint8_t torn[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    uint64_t now = T0 + 100;

    make_log(&s, 0, 0, 0);
    emit("empty-segment", &s, now, 512, 65536, 1, NULL, 0);
    make_log(&s, 8, 0, 0);
    emit("one-segment", &s, now, 512, 65536, 1, NULL, 0);
    emit("one-segment-1-byte-reads", &s, now, 512, 1, 0, NULL, 0);
    emit("one-segment-25-byte-reads", &s, now, 512, 25, 0, NULL, 0);
    emit("torn-tail", &s, now, 512, 65536, 1, torn, sizeof torn);
    emit("rotated-at-open", &s, T0 + 2 * W, 512, 65536, 1, torn, sizeof torn);
    emit("from-the-future", &s, T0 - 1, 512, 65536, 1, NULL, 0);
    emit("over-limit-3", &s, now, 3, 65536, 1, NULL, 0);
    emit("expired-all-but-one", &s, T0 + 7 + W, 512, 65536, 1, NULL, 0);
    s.cur[0] = 'X';
    emit("bad-magic", &s, now, 512, 65536, 1, NULL, 0);
    s.n_cur = 10;
    emit("short-header", &s, now, 512, 65536, 0, NULL, 0);
    make_log(&s, 6, (int64_t)W + 1, 0);
    emit("ahead-of-window", &s, T0, 512, 65536, 0, NULL, 0);
    make_log(&s, 6, (int64_t)W, 0);
    emit("window-edge-ahead", &s, T0, 512, 65536, 0, NULL, 0);
    make_log(&s, 6, -(int64_t)W, 0);
    emit("window-edge-behind", &s, T0 + 5, 512, 65536, 0, NULL, 0);
    make_log(&s, 5, 0, 1);
    emit("two-segments", &s, T0 + 2 * W + 10, 512, 65536, 1, NULL, 0);
    emit("two-segments-over-limit", &s, T0 + W, 4, 7, 1, torn, 3);
    memset(&s, 0, sizeof s);
    emit("no-segments", &s, now, 512, 65536, 1, NULL, 0);
}

/* ---- state_id -------------------------------------------------------------------------- */

/* fuzz_state_id's flags (its header comment has the layout). */
enum { RULES = 1, HOLDS = 2, NEW_STATE = 4, HAS_M = 8, HAS_D = 16, TEXT = 32 };

static void emit_sid(const char *name, uint8_t flags, const uint8_t *row, size_t n_row,
                     uint8_t legacy, const uint8_t *marker, size_t n_marker)
{
    uint8_t buf[3 + 255 + 64];
    if (n_row > 255 || n_marker > 64)
        die("state_id seed too long");
    buf[0] = flags;
    buf[1] = (uint8_t)n_row;
    buf[2] = legacy;
    if (n_row)
        memcpy(buf + 3, row, n_row);
    if (n_marker)
        memcpy(buf + 3 + n_row, marker, n_marker);
    write_file(name, buf, 3 + n_row + n_marker);
}

/* The marker agg_state_id_record writes for `id` (33 bytes into m). */
static void marker_of(const uint8_t id[AGG_STATE_ID_BYTES], uint8_t *m)
{
    agg_state_ident ident;
    memset(&ident, 0, sizeof ident);
    memcpy(ident.id, id, AGG_STATE_ID_BYTES);
    ident.write_marker = 1;
    char msg[256] = "";
    remove_tmp(AGG_STATE_ID_FILE);
    if (agg_state_id_record(tmpdir, &ident, msg, sizeof msg) != LDPB_OK)
        die(msg);
    size_t n = read_tmp(AGG_STATE_ID_FILE, m, 64);
    remove_tmp(AGG_STATE_ID_FILE);
    if (n != 2 * AGG_STATE_ID_BYTES + 1)
        die("unexpected marker size");
}

static void state_id_corpus(void)
{
    uint8_t x[AGG_STATE_ID_BYTES], y[AGG_STATE_ID_BYTES], m[64], v[64];
    for (size_t i = 0; i < AGG_STATE_ID_BYTES; i++) {
        x[i] = (uint8_t)(0x1f * i + 0x0b);
        y[i] = (uint8_t)(0x3d * i + 0x02);
    }
    marker_of(x, m);
    size_t n = 2 * AGG_STATE_ID_BYTES + 1;

    /* The marker parser alone. */
    emit_sid("marker-valid", 0, NULL, 0, 0, m, n);
    memcpy(v, m, n);
    for (size_t i = 0; i < n; i++)
        if (v[i] >= 'a' && v[i] <= 'f')
            v[i] = (uint8_t)(v[i] - 'a' + 'A');
    emit_sid("marker-upper-case", 0, NULL, 0, 0, v, n);
    emit_sid("marker-no-newline", 0, NULL, 0, 0, m, n - 1);
    emit_sid("marker-short-digit", 0, NULL, 0, 0, m + 1, n - 1);
    memcpy(v, m, n - 1);
    v[n - 1] = '\r';
    v[n] = '\n';
    emit_sid("marker-crlf", 0, NULL, 0, 0, v, n + 1);
    memcpy(v, m, n);
    v[n] = '\n';
    emit_sid("marker-two-newlines", 0, NULL, 0, 0, v, n + 1);
    memcpy(v, m, n);
    v[5] = 'g';
    emit_sid("marker-not-hex", 0, NULL, 0, 0, v, n);
    v[5] = ' ';
    emit_sid("marker-space", 0, NULL, 0, 0, v, n);
    v[0] = '0';
    v[1] = 'x';
    memcpy(v + 2, m, n);
    emit_sid("marker-0x-prefix", 0, NULL, 0, 0, v, n + 2);
    memcpy(v, m, n);
    v[n - 1] = 0;
    emit_sid("marker-nul-end", 0, NULL, 0, 0, v, n);
    emit_sid("marker-empty", 0, NULL, 0, 0, m, 0);

    /* One seed per line of the table in state_id.h, and the unreadable cases. */
    emit_sid("rules-same", RULES | HOLDS | HAS_D | HAS_M, x, sizeof x, 0, m, n);
    emit_sid("rules-marker-missing", RULES | HOLDS | HAS_D, x, sizeof x, 1, NULL, 0);
    emit_sid("rules-other-database", RULES | HOLDS | HAS_D | HAS_M, y, sizeof y, 0, m, n);
    emit_sid("rules-lost-commit", RULES | HOLDS | HAS_M, NULL, 0, 0, m, n);
    emit_sid("rules-migration", RULES | HOLDS, NULL, 0, 0, NULL, 0);
    emit_sid("rules-database-gone", RULES | HAS_M, NULL, 0, 0, m, n);
    emit_sid("rules-new-state-replaces", RULES | NEW_STATE | HAS_M, NULL, 0, 0, m, n);
    emit_sid("rules-new", RULES, NULL, 0, 0, NULL, 0);
    emit_sid("rules-new-state-on-a-state", RULES | NEW_STATE | HOLDS, NULL, 0, 0, NULL, 0);
    emit_sid("rules-new-state-on-identity", RULES | NEW_STATE | HAS_D, x, sizeof x, 0, NULL, 0);
    emit_sid("rules-row-15-bytes", RULES | HOLDS | HAS_D | HAS_M, x, sizeof x - 1, 0, m, n);
    emit_sid("rules-row-text", RULES | HOLDS | HAS_D | TEXT, (const uint8_t *)"0123456789abcdef",
             16, 0, NULL, 0);
    memcpy(v, m, n);
    v[3] = 'z';
    emit_sid("rules-bad-marker", RULES | HOLDS | HAS_D | HAS_M, x, sizeof x, 0, v, n);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: gen_statefiles_corpus OUTDIR (named nonce_log or state_id)");
    outdir = argv[1];
    const char *base = strrchr(outdir, '/');
    base = base ? base + 1 : outdir;
    if (!mkdtemp(tmpdir))
        die("cannot make a temporary directory");
    int rc = 0;
    if (strcmp(base, "nonce_log") == 0)
        nonce_log_corpus();
    else if (strcmp(base, "state_id") == 0)
        state_id_corpus();
    else
        rc = 1;
    remove_tmp(AGG_NONCE_LOG_FILE);
    remove_tmp(AGG_NONCE_LOG_OLD_FILE);
    rmdir(tmpdir);
    if (rc)
        die("the output directory must be named nonce_log or state_id");
    return 0;
}
