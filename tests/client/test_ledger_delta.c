/* The ledger's (epsilon, delta) accounting for the local contextual mode: the delta budget that is
 * off until the app sets one, basic composition of both spends, the statistics vector stored so a
 * resend sends the same bytes, format 2 on disk, and format-1 files (written by the library before
 * delta existed, tests/data/ledger_v1.bin) still opening and taking a delta budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ldpb/ctxstat.h"
#include "ldpb/ledger.h"
#include "ldpb/mech_table.h"
#include "ledger_internal.h"

typedef struct fx {
    char dir[64];
    char path[128];
    ldpb_rng *rng;
    ldpb_ctxstat *m;  /* d 3, epsilon 1, delta 1e-6 */
    ldpb_ctxstat *m2; /* d 3, epsilon 1, delta 2e-6 */
} fx;

static ldpb_ctxstat *make_stat(double eps, double delta)
{
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, 3, eps, delta);
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ldpb_ctxstat_new(&m, &o), LDPB_OK);
    return m;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    strcpy(f->dir, "/tmp/ldpb-ledger-delta-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/ledger", f->dir);
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "test_ledger_delta");
    assert_int_equal(ldpb_rng_new_seeded(&f->rng, seed), LDPB_OK);
    f->m = make_stat(1.0, 1e-6);
    f->m2 = make_stat(1.0, 2e-6);
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
    ldpb_ctxstat_free(f->m);
    ldpb_ctxstat_free(f->m2);
    free(f);
    return 0;
}

static ldpb_ledger_opts delta_opts(double eps_budget, double delta_budget, double delta_cap)
{
    ldpb_ledger_opts o;
    ldpb_ledger_opts_init(&o);
    o.lifetime_budget = eps_budget;
    o.per_report_cap = 2.0 < eps_budget ? 2.0 : eps_budget;
    o.lifetime_delta = delta_budget;
    o.per_report_delta_cap = delta_cap;
    return o;
}

static const double X[3] = {0.6, 0.0, -0.8};
#define N_STATS 10 /* LDPB_CTXSTAT_VALUES(3) */

static ldpb_err stats_of(ldpb_ledger *l, fx *f, const ldpb_ctxstat *m, const char *id, double *out,
                         ldpb_ledger_entry *e)
{
    return ldpb_ledger_privatize_stats(l, (const uint8_t *)id, strlen(id), m, f->rng, X, 0.5, e,
                                       out, N_STATS);
}

/* The default ledger grants no delta: every (epsilon, delta) report is refused and nothing is
 * spent, until the app sets a delta budget. Fails on the old code: no delta fields at all. */
static void default_refuses_delta(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o;
    ldpb_ledger_opts_init(&o);
    assert_true(o.lifetime_delta == 0.0 && o.per_report_delta_cap == 0.0);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_int_equal(ldpb_ledger_check_delta(l, 1.0, 0.0), LDPB_OK);
    assert_int_equal(ldpb_ledger_check_delta(l, 1.0, 1e-9), LDPB_EBUDGET);
    double z[N_STATS];
    ldpb_ledger_entry e;
    assert_int_equal(stats_of(l, f, f->m, "a", z, &e), LDPB_EBUDGET);
    assert_true(ldpb_ledger_spent(l) == 0.0 && ldpb_ledger_delta_spent(l) == 0.0);
    assert_int_equal(ldpb_ledger_count(l), 0);
    ldpb_ledger_close(l);

    /* the limits: a budget above LDPB_LEDGER_DELTA_MAX, a cap above the budget, NaN */
    o = delta_opts(10.0, 0.6, 1e-6);
    assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_ERANGE);
    o = delta_opts(10.0, 1e-6, 1e-5);
    assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_ERANGE);
    o = delta_opts(10.0, NAN, 0.0);
    assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_EINVAL);
}

/* Basic composition: each report adds its epsilon and its delta (rounded up to the unit, never
 * under-charged); the per-report delta cap and the remaining delta budget refuse before any
 * draw. */
static void delta_composes(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = delta_opts(100.0, 3.5e-6, 1.5e-6);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    double z[N_STATS];
    ldpb_ledger_entry e;
    char id[16];
    for (int i = 0; i < 3; i++) {
        snprintf(id, sizeof id, "r%d", i);
        assert_int_equal(stats_of(l, f, f->m, id, z, &e), LDPB_OK);
        assert_true(e.delta == 1e-6 && e.epsilon == 1.0);
        assert_int_equal(e.n_stats, N_STATS);
        assert_int_equal(e.kind, LDPB_MECH_ID_GAUSSIAN_STATS);
    }
    assert_true(ldpb_ledger_spent(l) == 3.0);
    double spent = ldpb_ledger_delta_spent(l);
    assert_true(spent >= 3e-6 && spent <= 3e-6 + 3 * ldexp(1.0, -63));
    /* a report above the per-report delta cap, and one the budget can no longer afford */
    assert_int_equal(stats_of(l, f, f->m2, "too-much", z, &e), LDPB_EBUDGET);
    assert_int_equal(stats_of(l, f, f->m, "r3", z, &e), LDPB_EBUDGET);
    assert_int_equal(ldpb_ledger_check_delta(l, 1.0, 1e-6), LDPB_EBUDGET);
    assert_int_equal(ldpb_ledger_count(l), 3);
    ldpb_ledger_close(l);

    /* durable: the spends survive a reopen, whose opts cannot raise the delta budget */
    o = delta_opts(100.0, 0.5, 0.1);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_true(ldpb_ledger_delta_spent(l) == spent);
    assert_true(ldpb_ledger_get_opts(l).lifetime_delta == 3.5e-6);
    assert_int_equal(stats_of(l, f, f->m, "r3", z, &e), LDPB_EBUDGET);
    ldpb_ledger_close(l);
}

/* One privatization per id: a repeat, in the same handle or after a reopen, returns the stored
 * values bit for bit and draws and charges nothing; the same id with another delta is refused. */
static void resend_is_identical(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = delta_opts(100.0, 1e-3, 1e-5);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    double z1[N_STATS], z2[N_STATS], z3[N_STATS];
    ldpb_ledger_entry e;
    assert_int_equal(stats_of(l, f, f->m, "same", z1, &e), LDPB_OK);
    double eps = ldpb_ledger_spent(l), delta = ldpb_ledger_delta_spent(l);
    assert_int_equal(stats_of(l, f, f->m, "same", z2, &e), LDPB_OK);
    assert_memory_equal(z1, z2, sizeof z1);
    assert_true(ldpb_ledger_spent(l) == eps && ldpb_ledger_delta_spent(l) == delta);
    assert_int_equal(stats_of(l, f, f->m2, "same", z3, &e), LDPB_ESTATE);
    /* too small a buffer for the stored values */
    assert_int_equal(ldpb_ledger_lookup_stats(l, (const uint8_t *)"same", 4, &e, z3, 3),
                     LDPB_ERANGE);
    ldpb_ledger_close(l);

    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    memset(z3, 0, sizeof z3);
    assert_int_equal(ldpb_ledger_lookup_stats(l, (const uint8_t *)"same", 4, &e, z3, N_STATS),
                     LDPB_OK);
    assert_memory_equal(z1, z3, sizeof z1);
    assert_int_equal(stats_of(l, f, f->m, "same", z2, &e), LDPB_OK);
    assert_memory_equal(z1, z2, sizeof z1);
    assert_true(ldpb_ledger_spent(l) == eps && ldpb_ledger_delta_spent(l) == delta);
    ldpb_ledger_close(l);
}

/* A format-2 file round-trips through the parser exactly, and damage to a statistics entry is
 * refused (with the checksum fixed up, so the entry rules themselves are what refuses). */
static void format2_round_trip_and_damage(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = delta_opts(100.0, 1e-3, 1e-5);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    double z[N_STATS];
    ldpb_ledger_entry e;
    assert_int_equal(stats_of(l, f, f->m, "s1", z, &e), LDPB_OK);
    ldpb_ledger_close(l);

    FILE *fp = fopen(f->path, "rb");
    assert_non_null(fp);
    uint8_t buf[4096];
    size_t len = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    /* header 68, entry 20 + 2 + 8 x 10, checksum */
    assert_int_equal(len, LEDGER_HEADER2_BYTES + LEDGER_ENTRY2_FIXED + 2 + 8 * N_STATS +
                              LEDGER_CHECKSUM_BYTES);
    assert_int_equal(buf[8], LEDGER_VERSION_DELTA);
    ledger_state st;
    ledger_state_init(&st);
    assert_int_equal(ledger_parse(buf, len, &st), LDPB_OK);
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    assert_int_equal(ledger_encode(&st, &enc, &enc_len), LDPB_OK);
    assert_int_equal(enc_len, len);
    assert_memory_equal(enc, buf, len);
    free(enc);
    ledger_state_fini(&st);

    const size_t entry = LEDGER_HEADER2_BYTES, n_at = entry + 1 + 2 + 1 + 16;
    const size_t body = len - LEDGER_CHECKSUM_BYTES;
    struct {
        size_t at;
        uint8_t v;
    } damage[] = {
        {n_at, 9},                      /* 9 values: no d has 9 */
        {n_at + 2 + 7, 0x7f},           /* value 0 becomes a NaN (exponent all ones) */
        {entry + 1 + 2 + 1 + 15, 0x3f}, /* delta 1e-6 becomes 0.066, above the cap */
        {entry + 1 + 2 + 1 + 15, 0xbf}, /* delta negative */
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        uint8_t img[4096];
        memcpy(img, buf, len);
        if (i == 1)
            img[n_at + 2 + 6] = 0xf8;
        img[damage[i].at] = damage[i].v;
        crypto_generichash(img + body, LEDGER_CHECKSUM_BYTES, img, body, NULL, 0);
        ledger_state_init(&st);
        assert_int_equal(ledger_parse(img, len, &st), LDPB_ECORRUPT);
        ledger_state_fini(&st);
    }
}

/* tests/data/ledger_v1.bin was written by the library of commit ba6b7e1, before delta: format
 * 1, budget 10, cap 2, three reports (linear 1, laplace 0.5 effective 0.49999995271829512, linear
 * 1). It opens as it was; the first open that offers a delta budget gives it one, durably
 * (format 2 from then on), keeping every old entry. */
static void old_format_opens(void **state)
{
    fx *f = *state;
    FILE *in = fopen(LDPB_TEST_DATA_DIR "/ledger_v1.bin", "rb");
    assert_non_null(in);
    uint8_t buf[1024];
    size_t len = fread(buf, 1, sizeof buf, in);
    fclose(in);
    assert_int_equal(buf[8], LEDGER_VERSION);
    FILE *out = fopen(f->path, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(buf, 1, len, out), len);
    fclose(out);

    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_count(l), 3);
    assert_true(ldpb_ledger_spent(l) == 2.4999999527353793);
    assert_true(ldpb_ledger_get_opts(l).lifetime_budget == 10.0);
    assert_true(ldpb_ledger_get_opts(l).lifetime_delta == 0.0);
    ldpb_ledger_entry e;
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"assignment-b", 12, &e), LDPB_OK);
    assert_int_equal(e.kind, LDPB_MECH_LAPLACE);
    assert_true(e.value == 4.48822021484375 && e.delta == 0.0 && e.n_stats == 0);
    double z[N_STATS];
    assert_int_equal(stats_of(l, f, f->m, "new", z, &e), LDPB_EBUDGET);
    ldpb_ledger_close(l);

    ldpb_ledger_opts o = delta_opts(100.0, 1e-4, 1e-5);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_OK);
    assert_true(ldpb_ledger_get_opts(l).lifetime_budget == 10.0); /* epsilon: kept */
    assert_true(ldpb_ledger_get_opts(l).lifetime_delta == 1e-4);  /* delta: taken once */
    assert_int_equal(stats_of(l, f, f->m, "new", z, &e), LDPB_OK);
    ldpb_ledger_close(l);

    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_count(l), 4);
    assert_true(ldpb_ledger_spent(l) == 3.4999999527353793);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"assignment-a", 12, &e), LDPB_OK);
    assert_true(e.value == 1.0 && e.epsilon == 1.0);
    ldpb_ledger_close(l);
    in = fopen(f->path, "rb");
    assert_non_null(in);
    assert_true(fread(buf, 1, 16, in) == 16);
    fclose(in);
    assert_int_equal(buf[8], LEDGER_VERSION_DELTA);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(default_refuses_delta),         T(delta_composes),   T(resend_is_identical),
        T(format2_round_trip_and_damage), T(old_format_opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
