/* The ledger across experiments (docs/ledger.md, "Experiments"): one budget for every experiment
 * a device takes part in, each entry recording its experiment; format 3 on disk once an entry is
 * of another experiment than "default" (its name table byte for byte, and every defect of it
 * behind a valid checksum refused); files of the formats before it (tests/data/ledger_v1.bin, and
 * the format-2 seed of the fuzz corpus, both written by earlier libraries) read as "default" and
 * carried over; the retry rule (the same bytes for the same id) unchanged, and an id never
 * privatized again under another experiment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldpb/ctxstat.h"
#include "ldpb/ledger.h"
#include "ledger_internal.h"

typedef struct fx {
    char dir[64];
    char path[128];
    ldpb_rng *rng;
    ldpb_mech *lin; /* linear, epsilon 1 */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    strcpy(f->dir, "/tmp/ldpb-ledger-exp-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/ledger", f->dir);
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "test_ledger_experiments");
    assert_int_equal(ldpb_rng_new_seeded(&f->rng, seed), LDPB_OK);
    ldpb_mech_opts mo;
    ldpb_mech_opts_init(&mo, LDPB_MECH_LINEAR, 1.0);
    assert_int_equal(ldpb_mech_new(&f->lin, &mo), LDPB_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (system(cmd) != 0)
        return -1;
    ldpb_rng_free(f->rng);
    ldpb_mech_free(f->lin);
    free(f);
    return 0;
}

static ldpb_err priv(fx *f, ldpb_ledger *l, const char *exp, const char *id, ldpb_ledger_entry *e)
{
    return ldpb_ledger_privatize_in(l, exp, (const uint8_t *)id, strlen(id), f->lin, f->rng, 1.0,
                                    e);
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    static uint8_t buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, in);
    fclose(in);
    uint8_t *p = malloc(*len);
    assert_non_null(p);
    memcpy(p, buf, *len);
    return p;
}

static void spill(const char *path, const uint8_t *p, size_t len)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(p, 1, len, out), len);
    fclose(out);
}

static unsigned version_on_disk(const char *path)
{
    size_t len;
    uint8_t *p = slurp(path, &len);
    assert_true(len > 12);
    unsigned v = p[8];
    free(p);
    return v;
}

/* A device in three experiments with a budget of 3 and reports of epsilon 1: the fourth report is
 * refused whichever experiment asks, "default" included, and nothing is spent by the refusals.
 * Each entry names its experiment, the per-experiment spends add up to the whole, and all of it
 * survives a reopen. An id is privatized once: asked again in its experiment it returns the same
 * bytes, asked in another (or as "default") it is LDPB_ESTATE and nothing is drawn. */
static void budget_runs_out_across_experiments(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = {3.0, 1.0, 0.0, 0.0};
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    static const char *names[3] = {"exp-a", "exp-b", "exp-c"};
    static const char *ids[3] = {"id-a", "id-b", "id-c"};
    ldpb_ledger_entry e[3], again;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(priv(f, l, names[i], ids[i], &e[i]), LDPB_OK);
        assert_string_equal(e[i].experiment, names[i]);
    }
    assert_true(ldpb_ledger_spent(l) == 3.0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(priv(f, l, names[i], "id-more", &again), LDPB_EBUDGET);
    assert_int_equal(priv(f, l, NULL, "id-more", &again), LDPB_EBUDGET);
    assert_int_equal(priv(f, l, "exp-new", "id-more", &again), LDPB_EBUDGET);
    assert_int_equal(ldpb_ledger_check(l, 1.0), LDPB_EBUDGET);
    assert_int_equal(ldpb_ledger_count(l), 3);

    assert_int_equal(priv(f, l, "exp-b", "id-b", &again), LDPB_OK);
    assert_true(again.value == e[1].value);
    assert_int_equal(priv(f, l, "exp-a", "id-b", &again), LDPB_ESTATE);
    assert_int_equal(priv(f, l, "default", "id-b", &again), LDPB_ESTATE);
    assert_int_equal(
        ldpb_ledger_privatize(l, (const uint8_t *)"id-b", 4, f->lin, f->rng, 1.0, &again),
        LDPB_ESTATE);
    assert_int_equal(priv(f, l, "Not-A-Name", "id-b", &again), LDPB_EINVAL);
    assert_true(ldpb_ledger_spent(l) == 3.0);
    ldpb_ledger_close(l);
    assert_int_equal(version_on_disk(f->path), LEDGER_VERSION_EXP);

    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    double sum = 0.0;
    for (int i = 0; i < 3; i++) {
        size_t n = 0;
        double part = ldpb_ledger_spent_in(l, names[i], NULL, &n);
        assert_true(part == 1.0);
        assert_int_equal(n, 1);
        sum += part;
        ldpb_ledger_entry got;
        assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)ids[i], 4, &got), LDPB_OK);
        assert_string_equal(got.experiment, names[i]);
        assert_true(got.value == e[i].value);
    }
    assert_true(sum == ldpb_ledger_spent(l));
    assert_true(ldpb_ledger_spent_in(l, NULL, NULL, NULL) == 0.0);
    assert_true(ldpb_ledger_spent_in(l, "exp-none", NULL, NULL) == 0.0);
    assert_true(ldpb_ledger_spent_in(NULL, NULL, NULL, NULL) == -1.0);
    assert_int_equal(priv(f, l, "exp-c", "id-more", &again), LDPB_EBUDGET);
    ldpb_ledger_close(l);
}

/* Format 3 byte for byte (docs/ledger.md): the name table follows the 68-byte header, sorted,
 * and each entry carries 0 for "default" or 1 + the index of its name, right after its kind. A
 * ledger of "default" only keeps writing format 1, as the library before experiments did. */
static void format3_layout(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = {100.0, 2.0, 0.0, 0.0};
    ldpb_ledger *l = NULL;
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_int_equal(priv(f, l, NULL, "d1", &e), LDPB_OK);
    assert_int_equal(version_on_disk(f->path), LEDGER_VERSION);
    assert_int_equal(priv(f, l, "zeta", "z1", &e), LDPB_OK);
    assert_int_equal(priv(f, l, "alpha", "a1", &e), LDPB_OK);
    assert_int_equal(priv(f, l, "zeta", "z2", &e), LDPB_OK);
    ldpb_ledger_close(l);

    size_t len;
    uint8_t *p = slurp(f->path, &len);
    assert_memory_equal(p, LEDGER_MAGIC, 8);
    assert_int_equal(p[8], 3);
    assert_int_equal(p[LEDGER_HEADER2_BYTES - 4], 4); /* entries */
    const uint8_t table[] = {2, 0, 0, 0, 5, 'a', 'l', 'p', 'h', 'a', 4, 'z', 'e', 't', 'a'};
    assert_memory_equal(p + LEDGER_HEADER2_BYTES, table, sizeof table);
    /* the entries: id_len, id, kind, experiment u32, ... in the order they were made */
    const size_t entry = LEDGER_ENTRY3_FIXED + 2 + 8; /* a 2-byte id, one value */
    const uint8_t want_exp[4] = {0, 2, 1, 2};
    size_t at = LEDGER_HEADER2_BYTES + sizeof table;
    for (int i = 0; i < 4; i++, at += entry) {
        assert_int_equal(p[at], 2);
        assert_int_equal(p[at + 3], LDPB_MECH_LINEAR);
        assert_int_equal(p[at + 4], want_exp[i]);
        assert_int_equal(p[at + 5] | p[at + 6] | p[at + 7], 0);
    }
    assert_int_equal(at + LEDGER_CHECKSUM_BYTES, len);
    free(p);
}

static void reseal(uint8_t *p, size_t n)
{
    crypto_generichash(p + n - LEDGER_CHECKSUM_BYTES, LEDGER_CHECKSUM_BYTES, p,
                       n - LEDGER_CHECKSUM_BYTES, NULL, 0);
}

static void assert_parse(const uint8_t *img, size_t len, ldpb_err want)
{
    ledger_state st;
    ledger_state_init(&st);
    assert_int_equal(ledger_parse(img, len, &st), want);
    ledger_state_fini(&st);
}

/* Every defect of format 3's experiments behind a valid checksum is LDPB_ECORRUPT: names out of
 * order or twice, "default" or a non-name in the table, an empty table, an index past it, a
 * name no entry uses, a table longer than the file. */
static void format3_defects_are_corrupt(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = {100.0, 2.0, 0.0, 0.0};
    ldpb_ledger *l = NULL;
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_int_equal(priv(f, l, "bbbbb", "b1", &e), LDPB_OK);
    assert_int_equal(priv(f, l, "aaaaa", "a1", &e), LDPB_OK);
    ldpb_ledger_close(l);
    size_t len;
    uint8_t *good = slurp(f->path, &len);
    assert_parse(good, len, LDPB_OK);
    uint8_t *img = malloc(len);
    assert_non_null(img);
    const size_t t = LEDGER_HEADER2_BYTES; /* the table: n u32, then (len, name) twice */
    const size_t name0 = t + 5;
    const size_t exp0 = t + 16 + 1 + 2 + 1; /* the first entry's experiment */

#define DEFECT(stmt)                                                                               \
    do {                                                                                           \
        memcpy(img, good, len);                                                                    \
        stmt;                                                                                      \
        reseal(img, len);                                                                          \
        assert_parse(img, len, LDPB_ECORRUPT);                                                     \
    } while (0)
    DEFECT(memcpy(img + name0, "ccccc", 5)); /* out of order */
    DEFECT(memcpy(img + name0, "bbbbb", 5)); /* twice */
    DEFECT(img[name0] = 'A');                /* not a name */
    DEFECT(img[name0 - 1] = 0);              /* an empty name */
    DEFECT(img[name0 - 1] = 65);             /* longer than a name */
    DEFECT(img[t] = 0);                      /* no names in format 3 */
    DEFECT(img[t] = 3);                      /* more names than the table */
    DEFECT(img[exp0] = 3);                   /* past the table */
    DEFECT(img[exp0] = 1);                   /* "bbbbb" unused */
    DEFECT(img[exp0] = 0);                   /* "bbbbb" unused, b1 default */
    DEFECT(img[exp0 + 3] = 1);               /* a huge index */
    free(img);
    free(good);

    /* "default" is never in the table (an entry of "default" spelled out is 0): a table that
     * names it, in order otherwise, is refused */
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(priv(f, l, "default", "d1", &e), LDPB_OK);
    assert_string_equal(e.experiment, "");
    ldpb_ledger_close(l);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_true(ldpb_ledger_spent_in(l, "default", NULL, NULL) == 1.0);
    ldpb_ledger_close(l);
    good = slurp(f->path, &len);
    ledger_state st;
    ledger_state_init(&st);
    assert_int_equal(ledger_parse(good, len, &st), LDPB_OK);
    assert_int_equal(st.n_exps, 2);
    memcpy(st.exps[1], "default", 8); /* "aaaaa" < "default": in order */
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    assert_int_equal(ledger_encode(&st, &enc, &enc_len), LDPB_OK);
    assert_parse(enc, enc_len, LDPB_ECORRUPT);
    free(enc);
    ledger_state_fini(&st);
    free(good);
#undef DEFECT
}

/* Files of the formats before experiments read as "default": ledger_v1.bin (format 1, library of
 * commit ba6b7e1) and the fuzz corpus' valid-delta (format 2, statistics entries). The first
 * entry of another experiment makes the file format 3 with every old entry kept, bit for bit. */
static void old_files_read_as_default(void **state)
{
    fx *f = *state;
    static const char *const files[2] = {LDPB_TEST_DATA_DIR "/ledger_v1.bin",
                                         LDPB_TEST_DATA_DIR "/../fuzz/corpus/ledger/valid-delta"};
    for (int k = 0; k < 2; k++) {
        size_t len;
        uint8_t *old = slurp(files[k], &len);
        unsigned version = old[8];
        assert_int_equal(version, k == 0 ? LEDGER_VERSION : LEDGER_VERSION_DELTA);
        unlink(f->path);
        spill(f->path, old, len);
        free(old);

        ldpb_ledger *l = NULL;
        assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
        size_t n = ldpb_ledger_count(l);
        assert_int_equal(n, 3);
        double spent = ldpb_ledger_spent(l);
        size_t n_default = 0;
        assert_true(ldpb_ledger_spent_in(l, NULL, NULL, &n_default) <= spent);
        assert_int_equal(n_default, n);
        /* every old entry, as it was */
        const char *id = k == 0 ? "assignment-b" : "s1";
        ldpb_ledger_entry before, after;
        double stats_before[6] = {0}, stats_after[6] = {0};
        assert_int_equal(
            ldpb_ledger_lookup_stats(l, (const uint8_t *)id, strlen(id), &before, stats_before, 6),
            LDPB_OK);
        assert_string_equal(before.experiment, "");
        ldpb_ledger_entry e;
        assert_int_equal(priv(f, l, "exp-new", "fresh", &e), LDPB_OK);
        ldpb_ledger_close(l);
        assert_int_equal(version_on_disk(f->path), LEDGER_VERSION_EXP);

        assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
        assert_int_equal(ldpb_ledger_count(l), n + 1);
        assert_true(ldpb_ledger_spent(l) == spent + 1.0);
        assert_int_equal(
            ldpb_ledger_lookup_stats(l, (const uint8_t *)id, strlen(id), &after, stats_after, 6),
            LDPB_OK);
        assert_string_equal(after.experiment, "");
        assert_true(after.value == before.value && after.epsilon == before.epsilon &&
                    after.delta == before.delta && after.n_stats == before.n_stats);
        assert_memory_equal(stats_after, stats_before, sizeof stats_before);
        assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"fresh", 5, &after), LDPB_OK);
        assert_string_equal(after.experiment, "exp-new");
        if (k == 1) /* format 2's delta budget carried into format 3 */
            assert_true(ldpb_ledger_get_opts(l).lifetime_delta > 0.0);
        ldpb_ledger_close(l);
    }
}

static int fail_first_step(void *ctx, ledger_step s)
{
    (void)ctx;
    return s == LEDGER_STEP_TMP_WRITTEN;
}

/* A new experiment whose first entry cannot be made durable leaves nothing behind: not the entry,
 * not its name (a name no entry uses would make the next file corrupt), not the format. */
static void failed_write_leaves_no_name(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = {100.0, 2.0, 0.0, 0.0};
    ldpb_ledger *l = NULL;
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_int_equal(priv(f, l, "mmm", "m1", &e), LDPB_OK);
    ledger_set_step_hook(l, fail_first_step, NULL);
    assert_int_equal(priv(f, l, "aaa", "a1", &e), LDPB_EIO); /* renumbers "mmm", then undoes */
    assert_int_equal(priv(f, l, "zzz", "z1", &e), LDPB_EIO);
    ledger_set_step_hook(l, NULL, NULL);
    assert_true(ldpb_ledger_spent_in(l, "aaa", NULL, NULL) == 0.0);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"m1", 2, &e), LDPB_OK);
    assert_string_equal(e.experiment, "mmm");
    assert_int_equal(priv(f, l, NULL, "d1", &e), LDPB_OK);
    ldpb_ledger_close(l);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_count(l), 2);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"m1", 2, &e), LDPB_OK);
    assert_string_equal(e.experiment, "mmm");
    assert_int_equal(priv(f, l, "aaa", "a1", &e), LDPB_OK);
    ldpb_ledger_close(l);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"m1", 2, &e), LDPB_OK);
    assert_string_equal(e.experiment, "mmm");
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"a1", 2, &e), LDPB_OK);
    assert_string_equal(e.experiment, "aaa");
    ldpb_ledger_close(l);
}

/* The statistics of the local contextual mode take their experiment the same way. */
static void stats_entries_record_their_experiment(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = {100.0, 2.0, 1e-3, 1e-5};
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    ldpb_ctxstat_opts so;
    ldpb_ctxstat_opts_init(&so, 2, 1.0, 1e-6);
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &so), LDPB_OK);
    const double x[2] = {0.6, 0.8};
    double z[6], z2[6];
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_privatize_stats_in(l, "ctx-1", (const uint8_t *)"s1", 2, m, f->rng,
                                                    x, 0.5, &e, z, 6),
                     LDPB_OK);
    assert_string_equal(e.experiment, "ctx-1");
    assert_int_equal(ldpb_ledger_privatize_stats_in(l, "ctx-2", (const uint8_t *)"s1", 2, m, f->rng,
                                                    x, 0.5, &e, z2, 6),
                     LDPB_ESTATE);
    assert_int_equal(ldpb_ledger_privatize_stats_in(l, "ctx-1", (const uint8_t *)"s1", 2, m, f->rng,
                                                    x, 0.25, &e, z2, 6),
                     LDPB_OK);
    assert_memory_equal(z, z2, sizeof z);
    double delta = 0.0;
    assert_true(ldpb_ledger_spent_in(l, "ctx-1", &delta, NULL) == 1.0);
    assert_true(delta > 0.0 && delta == ldpb_ledger_delta_spent(l));
    ldpb_ledger_close(l);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_lookup_stats(l, (const uint8_t *)"s1", 2, &e, z2, 6), LDPB_OK);
    assert_string_equal(e.experiment, "ctx-1");
    assert_memory_equal(z, z2, sizeof z);
    ldpb_ledger_close(l);
    ldpb_ctxstat_free(m);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(budget_runs_out_across_experiments), T(format3_layout),
        T(format3_defects_are_corrupt),        T(old_files_read_as_default),
        T(failed_write_leaves_no_name),        T(stats_entries_record_their_experiment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
