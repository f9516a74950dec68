/* Generator of the known-answer files tests/data/kat_<kind>.txt and tests/data/kat_seed.txt that
 * test_mech compares byte for byte. Built with the tests, never run by CTest: regenerate only
 * when a change of the mechanisms' output is intended, and say so in the commit.
 *
 *   cmake --build BUILD --target gen_kat && BUILD/tests/common/gen_kat tests/data
 *
 * The same rendering code (kat_render) is linked into test_mech (compiled with KAT_NO_MAIN), so
 * the test and the files can only disagree when the mechanisms' output changed. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ldpb/mech.h"
#include "ldpb/rng.h"

/* Shared with test_mech.c, which declares the same prototypes. */
int kat_render(const char *file, char *buf, size_t cap);
extern const char *const kat_files[];
extern const size_t kat_file_count;

const char *const kat_files[] = {"kat_linear.txt", "kat_quadratic.txt", "kat_exponential.txt",
                                 "kat_laplace.txt", "kat_seed.txt"};
const size_t kat_file_count = sizeof kat_files / sizeof kat_files[0];

enum { KAT_DRAWS = 64 };
static const double kat_eps[] = {0.5, 1.0, 2.0};
static const double kat_x[] = {0.0, 0.3, 0.7, 1.0};

struct sink {
    char *buf;
    size_t cap, len;
    int overflow;
};

#if defined(__GNUC__)
#define KAT_PRINTF(fmt_arg, first_arg) __attribute__((format(printf, fmt_arg, first_arg)))
#else
#define KAT_PRINTF(fmt_arg, first_arg)
#endif

static void put(struct sink *s, const char *fmt, ...) KAT_PRINTF(2, 3);

static void put(struct sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = s->cap - s->len;
    int n = vsnprintf(s->buf + s->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) {
        s->overflow = 1;
        return;
    }
    s->len += (size_t)n;
}

static void seed_bytes(uint8_t seed[LDPB_RNG_SEED_BYTES])
{
    for (int i = 0; i < LDPB_RNG_SEED_BYTES; i++)
        seed[i] = (uint8_t)i;
}

/* One line per (epsilon, x): a fresh seeded generator, 64 reports of ldpb_mech_privatize_unit.
 * Bernoulli reports are a string of 0/1; Laplace reports are "%a" hex floats, which are exact. */
static int render_mech(struct sink *s, ldpb_mech_kind kind)
{
    const char *name = ldpb_mech_kind_name(kind);
    put(s, "# Known answers for the %s mechanism (default options), checked byte for byte by\n",
        name);
    put(s,
        "# tests/common/test_mech.c. Regenerate, only for an intended change of the output, with\n"
        "#   cmake --build BUILD --target gen_kat && BUILD/tests/common/gen_kat tests/data\n");
    put(s,
        "# Each line: epsilon, unit input x, then the first %d outputs of\n"
        "# ldpb_mech_privatize_unit from a fresh ldpb_rng_new_seeded() on seed bytes 00 01 .. "
        "1f.\n",
        KAT_DRAWS);
    put(s, "# %s\n",
        kind == LDPB_MECH_LAPLACE ? "Outputs are C99 hex floats (printf %a)."
                                  : "Outputs are the reports, 0 or 1.");
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    seed_bytes(seed);
    for (size_t e = 0; e < sizeof kat_eps / sizeof kat_eps[0]; e++) {
        ldpb_mech_opts o;
        ldpb_mech_opts_init(&o, kind, kat_eps[e]);
        ldpb_mech *m = NULL;
        if (ldpb_mech_new(&m, &o) != LDPB_OK)
            return -1;
        for (size_t i = 0; i < sizeof kat_x / sizeof kat_x[0]; i++) {
            ldpb_rng *rng = NULL;
            if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK) {
                ldpb_mech_free(m);
                return -1;
            }
            put(s, "eps=%g x=%g ", kat_eps[e], kat_x[i]);
            for (int d = 0; d < KAT_DRAWS; d++) {
                double y = 0.0;
                if (ldpb_mech_privatize_unit(m, rng, kat_x[i], &y) != LDPB_OK) {
                    ldpb_rng_free(rng);
                    ldpb_mech_free(m);
                    return -1;
                }
                if (kind == LDPB_MECH_LAPLACE)
                    put(s, d ? " %a" : "%a", y);
                else
                    put(s, "%c", y == 1.0 ? '1' : (y == 0.0 ? '0' : '?'));
            }
            put(s, "\n");
            ldpb_rng_free(rng);
        }
        ldpb_mech_free(m);
    }
    return 0;
}

/* The text seed "42" (BLAKE2b-256 of "ldpb seed v1:42") and the first words of its stream. */
static int render_seed(struct sink *s)
{
    put(s,
        "# Known answer for ldpb_rng_seed_from_text(\"42\"), checked by tests/common/test_mech.c.\n"
        "# Regenerate with gen_kat (see kat_linear.txt). The seed is BLAKE2b-256 of the bytes\n"
        "# \"ldpb seed v1:42\" (python3: hashlib.blake2b(b'ldpb seed v1:42', digest_size=32)).\n"
        "# Then the first 4 ldpb_rng_u64 of ldpb_rng_new_seeded(seed), in hex.\n");
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "42");
    put(s, "seed=");
    for (int i = 0; i < LDPB_RNG_SEED_BYTES; i++)
        put(s, "%02x", seed[i]);
    put(s, "\n");
    ldpb_rng *rng = NULL;
    if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK)
        return -1;
    for (int i = 0; i < 4; i++)
        put(s, "u64[%d]=%016llx\n", i, (unsigned long long)ldpb_rng_u64(rng));
    ldpb_rng_free(rng);
    return 0;
}

/* Renders the expected content of `file` (one of kat_files) into buf; returns its length, or -1
 * for an unknown name, a failure of the library, or a buffer too small. */
int kat_render(const char *file, char *buf, size_t cap)
{
    struct sink s = {buf, cap, 0, 0};
    int rc;
    if (cap == 0)
        return -1;
    buf[0] = '\0';
    if (strcmp(file, "kat_seed.txt") == 0) {
        rc = render_seed(&s);
    } else {
        rc = -1;
        for (int k = LDPB_MECH_LINEAR; k <= LDPB_MECH_LAPLACE; k++) {
            char want[64];
            snprintf(want, sizeof want, "kat_%s.txt", ldpb_mech_kind_name((ldpb_mech_kind)k));
            if (strcmp(file, want) == 0)
                rc = render_mech(&s, (ldpb_mech_kind)k);
        }
    }
    if (rc != 0 || s.overflow)
        return -1;
    return (int)s.len;
}

#ifndef KAT_NO_MAIN
int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR   (writes DIR/kat_*.txt)\n", argv[0]);
        return 2;
    }
    static char buf[1 << 16];
    for (size_t i = 0; i < kat_file_count; i++) {
        int n = kat_render(kat_files[i], buf, sizeof buf);
        if (n < 0) {
            fprintf(stderr, "gen_kat: cannot render %s\n", kat_files[i]);
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], kat_files[i]);
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            return 1;
        }
        size_t written = fwrite(buf, 1, (size_t)n, f);
        if (fclose(f) != 0 || written != (size_t)n) {
            perror(path);
            return 1;
        }
        printf("wrote %s (%d bytes)\n", path, n);
    }
    return 0;
}
#endif
