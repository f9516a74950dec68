/* Writes the seed corpus for fuzz_report_queue into a directory: valid queue files made through
 * the public API (ldpb_client_queue_report with a seeded generator, so the privatized values are
 * the same on every run) and broken variants of them: truncated, a bad checksum, a trailing byte,
 * and, behind a recomputed checksum, each entry defect the loader refuses (an unknown mechanism, a
 * NaN epsilon, a bit of 0.5, a bit flag of 2, an empty id, non-zero id padding, an id twice, a
 * count above the limit). The output is deterministic; the report_queue_corpus_golden test
 * checks it against tests/fuzz/corpus/report_queue/, which pins the file format.
 * Usage: gen_report_queue_corpus OUTDIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/client.h"

#define MAGIC_LEN  14u
#define RECORD     83u
#define RECORD2    (RECORD + 1u + 64u)
#define HASH_BYTES 32u

static const char *outdir;

static void die(const char *what)
{
    fprintf(stderr, "gen_report_queue_corpus: %s\n", what);
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
        die("cannot read back a queue");
    static uint8_t buf[1 << 16];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint8_t *p = malloc(*n + 1);
    if (!p)
        die("out of memory");
    memcpy(p, buf, *n);
    return p;
}

/* A real queue file, made the way a device makes it: `n` assignments cycling through the
 * mechanisms (and through the experiments `exps`, if not NULL), queued with rewards in [0, 1]. */
static void make_queue(const char *name, size_t n, const ldpb_client_mech *mechs, size_t nmechs,
                       const char *const *exps, size_t nexps)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, name);
    ldpb_rng *rng = NULL;
    if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK)
        die("rng");
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url =
        "ipc:///nonexistent/ldpb-report-queue-corpus"; /* never dialed: reports are only queued */
    memset(o.server_public_key, 9, sizeof o.server_public_key);
    o.queue_path = path_of(name, "");
    o.rng = rng;
    o.lifetime_budget = 1000.0;
    o.allow_raw = 1;
    o.epsilon_cap = 2.0;
    o.per_report_cap = 2.0;
    unlink(o.queue_path);
    ldpb_client *c = NULL;
    if (ldpb_client_new(&c, &o) != LDPB_OK)
        die("client");
    for (size_t i = 0; i < n; i++) {
        ldpb_assignment a;
        memset(&a, 0, sizeof a);
        a.id_len = 1 + (i * 7) % LDPB_ASSIGNMENT_ID_MAX;
        for (size_t k = 0; k < a.id_len; k++)
            a.id[k] = (uint8_t)(i * 31 + k + 1);
        a.mechanism = mechs[i % nmechs];
        a.epsilon = a.mechanism == LDPB_CLIENT_MECH_RAW ? 0.0 : 0.5 + 0.25 * (double)(i % 4);
        a.kappa = a.mechanism == LDPB_CLIENT_MECH_QUADRATIC ? LDPB_KAPPA_DEFAULT : 0.0;
        a.propensity = 1.0;
        a.expires_at_ms = UINT64_MAX / 2;
        if (exps)
            snprintf(a.experiment, sizeof a.experiment, "%s", exps[i % nexps]);
        if (ldpb_client_queue_report(c, &a, (double)(i % 5) / 4.0) != LDPB_OK)
            die(ldpb_client_errmsg(c));
    }
    ldpb_client_free(c);
    ldpb_rng_free(rng);
    unlink(path_of(name, ".lock"));
}

static void reseal(uint8_t *p, size_t n)
{
    crypto_generichash(p + n - HASH_BYTES, HASH_BYTES, p, n - HASH_BYTES, NULL, 0);
}

/* The valid file with one byte of the first record changed, behind a valid checksum. */
static void resealed(const char *name, const uint8_t *valid, size_t n, size_t at,
                     const uint8_t *bytes, size_t len)
{
    uint8_t *p = malloc(n);
    if (!p)
        die("out of memory");
    memcpy(p, valid, n);
    memcpy(p + at, bytes, len);
    reseal(p, n);
    write_file(name, p, n);
    free(p);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: gen_report_queue_corpus OUTDIR");
    outdir = argv[1];
    if (sodium_init() < 0)
        die("setup");
    const ldpb_client_mech all[] = {LDPB_CLIENT_MECH_LINEAR, LDPB_CLIENT_MECH_QUADRATIC,
                                    LDPB_CLIENT_MECH_EXPONENTIAL, LDPB_CLIENT_MECH_LAPLACE,
                                    LDPB_CLIENT_MECH_RAW};
    /* A queue file exists once something was queued: "valid-empty" is one emptied by hand. */
    make_queue("valid-one-linear", 1, all, 1, NULL, 0);
    make_queue("valid-mixed", 10, all, 5, NULL, 0);
    make_queue("valid-laplace", 6, all + 3, 1, NULL, 0);

    size_t n;
    uint8_t *one = read_file("valid-one-linear", &n);
    uint8_t empty[MAGIC_LEN + 4 + HASH_BYTES] = {0};
    memcpy(empty, one, MAGIC_LEN);
    reseal(empty, sizeof empty);
    write_file("valid-empty", empty, sizeof empty);

    const size_t rec = MAGIC_LEN + 4; /* the first record */
    const uint8_t m99 = 99, bit2 = 2, zero = 0, pad = 0x5a, big[4] = {0x01, 0x10, 0, 0};
    uint8_t nan[8], half[8];
    double v = NAN;
    memcpy(nan, &v, 8);
    v = 0.5;
    memcpy(half, &v, 8);
    resealed("bad-resealed-mechanism", one, n, rec + 65, &m99, 1);
    resealed("bad-resealed-epsilon-nan", one, n, rec + 67, nan, 8);
    resealed("bad-resealed-bit-half", one, n, rec + 75, half, 8);
    resealed("bad-resealed-bit-flag", one, n, rec + 66, &bit2, 1);
    resealed("bad-resealed-empty-id", one, n, rec, &zero, 1);
    resealed("bad-resealed-padding", one, n, rec + 64, &pad, 1);
    resealed("bad-resealed-count", one, n, MAGIC_LEN, big, 4);
    free(one);

    uint8_t *mixed = read_file("valid-mixed", &n);
    write_file("bad-truncated-header", mixed, 10);
    write_file("bad-truncated-record", mixed, n - HASH_BYTES - 9);
    write_file("bad-no-checksum", mixed, n - HASH_BYTES);
    mixed[n] = 0;
    write_file("bad-trailing-byte", mixed, n + 1);
    /* The second record's id made the first's (same length and bytes). */
    uint8_t *dup = malloc(n);
    if (!dup)
        die("out of memory");
    memcpy(dup, mixed, n);
    memcpy(dup + rec + RECORD, dup + rec, 65);
    reseal(dup, n);
    write_file("bad-resealed-duplicate-id", dup, n);
    free(dup);
    mixed[rec + 3] ^= 0x10;
    write_file("bad-checksum", mixed, n);
    free(mixed);

    /* Format 2: reports of "default" and two experiments; then, behind a valid checksum, an
     * upper-case name, "default" spelled out, non-zero padding after a name. */
    static const char *const exps[] = {"", "exp-a", "b.2"};
    make_queue("valid-experiments", 6, all, 5, exps, 3);
    uint8_t *v2 = read_file("valid-experiments", &n);
    const size_t exp1 = rec + RECORD2 + RECORD; /* the second record's exp_len: "exp-a" */
    resealed("bad-resealed-exp-upper", v2, n, exp1 + 1, (const uint8_t *)"E", 1);
    resealed("bad-resealed-exp-default", v2, n, exp1,
             (const uint8_t *)"\x07"
                              "default",
             8);
    resealed("bad-resealed-exp-padding", v2, n, exp1 + 1 + 5, &pad, 1);
    free(v2);
    return 0;
}
