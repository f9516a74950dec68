/* Writes the seed corpus for fuzz_ledger into a directory: valid ledgers made through the
 * public API with a seeded generator, and broken variants of them (truncated, bit-flipped,
 * trailing bytes, garbage, and structural defects behind a recomputed checksum). The output is
 * deterministic; the ledger_corpus_golden test checks it against tests/fuzz/corpus/ledger/, so the
 * committed files double as known-answer vectors for the byte format.
 * Usage: gen_ledger_corpus OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldpb/ctxstat.h"
#include "ledger_internal.h"

static const char *outdir;
static ldpb_rng *rng;

static void die(const char *what)
{
    fprintf(stderr, "gen_ledger_corpus: %s\n", what);
    exit(1);
}

static char *path_of(const char *name, const char *suffix)
{
    static char buf[4096];
    if (snprintf(buf, sizeof buf, "%s/%s%s", outdir, name, suffix) >= (int)sizeof buf)
        die("path too long");
    return buf;
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path_of(name, ""), "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die("cannot write a corpus file");
}

static uint8_t *read_file(const char *name, size_t *n)
{
    FILE *f = fopen(path_of(name, ""), "rb");
    if (!f)
        die("cannot read back a ledger");
    static uint8_t buf[1 << 16];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint8_t *p = malloc(*n + 1);
    if (!p)
        die("out of memory");
    memcpy(p, buf, *n);
    return p;
}

static ldpb_mech *mech(ldpb_mech_kind kind, double eps)
{
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, kind, eps);
    ldpb_mech *m;
    if (ldpb_mech_new(&m, &o) != LDPB_OK)
        die("mechanism");
    return m;
}

/* A real ledger file, made the way a device makes it. */
static void make_ledger(const char *name, double budget, double cap, size_t n,
                        const ldpb_mech *const *mechs, size_t nmechs)
{
    ldpb_ledger_opts o = {budget, cap, 0.0, 0.0};
    ldpb_ledger *l;
    unlink(path_of(name, ""));
    if (ldpb_ledger_open(&l, path_of(name, ""), &o) != LDPB_OK)
        die("ledger open");
    for (size_t i = 0; i < n; i++) {
        uint8_t id[LDPB_ASSIGNMENT_ID_MAX];
        size_t len = 1 + (i * 7) % LDPB_ASSIGNMENT_ID_MAX;
        for (size_t k = 0; k < len; k++)
            id[k] = (uint8_t)(i * 31 + k);
        ldpb_ledger_entry e;
        double reward = (double)(i % 5) / 4.0;
        if (ldpb_ledger_privatize(l, id, len, mechs[i % nmechs], rng, reward, &e) != LDPB_OK)
            die("privatize");
    }
    ldpb_ledger_close(l);
    unlink(path_of(name, ".lock"));
}

static void reseal(uint8_t *p, size_t n)
{
    crypto_generichash(p + n - LEDGER_CHECKSUM_BYTES, LEDGER_CHECKSUM_BYTES, p,
                       n - LEDGER_CHECKSUM_BYTES, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: gen_ledger_corpus OUTDIR");
    outdir = argv[1];
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "ldpb ledger corpus");
    if (sodium_init() < 0 || ldpb_rng_new_seeded(&rng, seed) != LDPB_OK)
        die("setup");

    ldpb_mech *lin = mech(LDPB_MECH_LINEAR, 1.0);
    ldpb_mech *quad = mech(LDPB_MECH_QUADRATIC, 0.5);
    ldpb_mech *expo = mech(LDPB_MECH_EXPONENTIAL, 2.0);
    ldpb_mech *lap = mech(LDPB_MECH_LAPLACE, 0.25);
    const ldpb_mech *all[] = {lin, quad, expo, lap};

    make_ledger("valid-empty", 100.0, 10.0, 0, all, 4);
    make_ledger("valid-one-linear", 5.0, 2.0, 1, all, 1);
    make_ledger("valid-mixed", 50.0, 10.0, 10, all, 4);
    make_ledger("valid-laplace", 20.0, 1.0, 6, all + 3, 1);

    size_t n;
    uint8_t *mixed = read_file("valid-mixed", &n);
    write_file("bad-truncated-header", mixed, 30);
    write_file("bad-truncated-entry", mixed, n - LEDGER_CHECKSUM_BYTES - 9);
    write_file("bad-no-checksum", mixed, n - LEDGER_CHECKSUM_BYTES);
    mixed[LEDGER_HEADER_BYTES + 3] ^= 0x10;
    write_file("bad-checksum", mixed, n);
    free(mixed);

    uint8_t *one = read_file("valid-one-linear", &n);
    one[n] = 0;
    write_file("bad-trailing-byte", one, n + 1);
    /* Behind a valid checksum: an unknown kind, then a spend below the entry's charge. */
    size_t kind_at = LEDGER_HEADER_BYTES + 1 + one[LEDGER_HEADER_BYTES];
    uint8_t kind = one[kind_at];
    one[kind_at] = 9;
    reseal(one, n);
    write_file("bad-resealed-kind", one, n);
    one[kind_at] = kind;
    memset(one + 32, 0, 8);
    reseal(one, n);
    write_file("bad-resealed-spent", one, n);
    free(one);

    uint8_t garbage[160];
    ldpb_rng_bytes(rng, garbage, sizeof garbage);
    memcpy(garbage, LEDGER_MAGIC, 8);
    write_file("bad-garbage", garbage, sizeof garbage);

    /* Format 2 (made last, so the files above keep their draws): a delta budget, two
     * statistics entries of the local contextual mode (d = 2) and a linear one. */
    ldpb_ctxstat_opts so;
    ldpb_ctxstat_opts_init(&so, 2, 1.0, 1e-6);
    ldpb_ctxstat *stat = NULL;
    if (ldpb_ctxstat_new(&stat, &so) != LDPB_OK)
        die("ctxstat");
    ldpb_ledger_opts o2 = {50.0, 10.0, 1e-3, 1e-5};
    ldpb_ledger *l;
    unlink(path_of("valid-delta", ""));
    if (ldpb_ledger_open(&l, path_of("valid-delta", ""), &o2) != LDPB_OK)
        die("ledger open");
    const double x[2] = {0.6, 0.8};
    double z[6];
    ldpb_ledger_entry e;
    if (ldpb_ledger_privatize_stats(l, (const uint8_t *)"s1", 2, stat, rng, x, 0.5, &e, z, 6) ||
        ldpb_ledger_privatize(l, (const uint8_t *)"b1", 2, lin, rng, 1.0, &e) ||
        ldpb_ledger_privatize_stats(l, (const uint8_t *)"s2", 2, stat, rng, x, 0.25, &e, z, 6))
        die("privatize");
    ldpb_ledger_close(l);
    unlink(path_of("valid-delta", ".lock"));
    ldpb_ctxstat_free(stat);
    uint8_t *v2 = read_file("valid-delta", &n);
    /* behind a valid checksum: the first statistic a NaN */
    size_t value_at = LEDGER_HEADER2_BYTES + LEDGER_ENTRY2_FIXED + 2;
    v2[value_at + 6] = 0xf8;
    v2[value_at + 7] = 0x7f;
    reseal(v2, n);
    write_file("bad-resealed-stats-nan", v2, n);
    free(v2);

    /* Format 3 (made last, as format 2 was): entries of "default", "zeta" and "alpha"; then,
     * behind a valid checksum, names out of order and an index past the table. */
    ldpb_ledger_opts o3 = {50.0, 10.0, 0.0, 0.0};
    unlink(path_of("valid-experiments", ""));
    if (ldpb_ledger_open(&l, path_of("valid-experiments", ""), &o3) != LDPB_OK)
        die("ledger open");
    if (ldpb_ledger_privatize_in(l, NULL, (const uint8_t *)"d1", 2, lin, rng, 1.0, &e) ||
        ldpb_ledger_privatize_in(l, "zeta", (const uint8_t *)"z1", 2, lin, rng, 0.0, &e) ||
        ldpb_ledger_privatize_in(l, "alpha", (const uint8_t *)"a1", 2, quad, rng, 0.5, &e) ||
        ldpb_ledger_privatize_in(l, "zeta", (const uint8_t *)"z2", 2, lap, rng, 0.25, &e))
        die("privatize");
    ldpb_ledger_close(l);
    unlink(path_of("valid-experiments", ".lock"));
    uint8_t *v3 = read_file("valid-experiments", &n);
    const size_t table = LEDGER_HEADER2_BYTES; /* n u32 | 5 "alpha" | 4 "zeta" */
    memcpy(v3 + table + 5, "zzzzz", 5);
    reseal(v3, n);
    write_file("bad-resealed-exp-order", v3, n);
    memcpy(v3 + table + 5, "alpha", 5);
    v3[table + 15 + 1 + 2 + 1] = 9; /* the first entry's experiment */
    reseal(v3, n);
    write_file("bad-resealed-exp-index", v3, n);
    free(v3);

    ldpb_mech_free(lin);
    ldpb_mech_free(quad);
    ldpb_mech_free(expo);
    ldpb_mech_free(lap);
    ldpb_rng_free(rng);
    return 0;
}
