/* The state log row's decoder (aggregator/daemon/state_log_codec.h): it reads bytes from the
 * database file, so every refusal below must be LDPB_ECORRUPT with a reason, and a valid row must
 * come back entry for entry. Then the store: a state_log row it refuses fails the open with
 * LDPB_ECORRUPT and names the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "state_log_codec.h"
#include "store.h"

/* A valid row of two entries: experiment 3 (state "abc"), experiment 7 (state "x"). */
static size_t valid_row(uint8_t *p)
{
    agg_store_counters c1 = {5, 5, 1, 9}, c2 = {0, 0, 0, 2};
    size_t at = 0;
    agg_slog_put_header(p, 2);
    at += AGG_SLOG_HEADER;
    agg_slog_put_fixed(p + at, 3, &c1, 3);
    at += AGG_SLOG_FIXED;
    memcpy(p + at, "abc", 3);
    at += 3;
    agg_slog_put_fixed(p + at, 7, &c2, 1);
    at += AGG_SLOG_FIXED;
    p[at++] = 'x';
    return at;
}

static void refused(const uint8_t *p, size_t n, const char *reason)
{
    agg_slog_entry *e = (agg_slog_entry *)1;
    size_t count = 99;
    char why[160] = "";
    assert_int_equal(agg_slog_decode(p, n, &e, &count, why, sizeof why), LDPB_ECORRUPT);
    assert_null(e);
    assert_int_equal(count, 0);
    if (!strstr(why, reason))
        fail_msg("refusal '%s' does not say '%s'", why, reason);
}

static void test_round_trip(void **state)
{
    (void)state;
    uint8_t p[256];
    size_t n = valid_row(p);
    assert_int_equal(n, AGG_SLOG_HEADER + 2 * AGG_SLOG_FIXED + 4);
    agg_slog_entry *e = NULL;
    size_t count = 0;
    char why[160];
    assert_int_equal(agg_slog_decode(p, n, &e, &count, why, sizeof why), LDPB_OK);
    assert_int_equal(count, 2);
    assert_int_equal(e[0].exp, 3);
    assert_int_equal(e[0].c.policy_version, 5);
    assert_int_equal(e[0].c.reports, 5);
    assert_int_equal(e[0].c.duplicates, 1);
    assert_int_equal(e[0].c.assignments, 9);
    assert_int_equal(e[0].len, 3);
    assert_memory_equal(e[0].state, "abc", 3);
    assert_int_equal(e[1].exp, 7);
    assert_int_equal(e[1].c.assignments, 2);
    assert_int_equal(e[1].len, 1);
    assert_int_equal(e[1].state[0], 'x');
    free(e);
}

static void test_refusals(void **state)
{
    (void)state;
    uint8_t p[256], q[256];
    size_t n = valid_row(p);
    size_t e2 = AGG_SLOG_HEADER + AGG_SLOG_FIXED + 3; /* the second entry's offset */

    refused(p, 0, "shorter than the 5-byte header");
    refused(p, 4, "shorter than the 5-byte header");
    memcpy(q, p, n);
    q[0] = 2;
    refused(q, n, "unknown encoding version 2");
    memcpy(q, p, n);
    q[0] = 0;
    refused(q, n, "unknown encoding version 0");
    memcpy(q, p, n);
    agg_slog_put_header(q, 0);
    refused(q, n, "0 entries cannot fit");
    agg_slog_put_header(q, UINT32_MAX); /* would be a 180 GB allocation if trusted */
    refused(q, n, "4294967295 entries cannot fit");
    agg_slog_put_header(q, 3);
    refused(q, n, "3 entries cannot fit in 97 bytes");
    agg_slog_put_header(q, 1);
    refused(q, n, "bytes after the last of 1 entries");
    refused(p, n - 1, "entry 2 of 2 has a state longer than the bytes left");
    refused(p, e2 + AGG_SLOG_FIXED - 1, "entry 2 of 2 is cut short");
    memcpy(q, p, n);
    q[n] = 0;
    refused(q, n + 1, "1 bytes after the last of 2 entries");

    agg_store_counters c = {0, 0, 0, 0}, big = {(uint64_t)INT64_MAX + 1, 0, 0, 0};
    memcpy(q, p, n);
    agg_slog_put_fixed(q + e2, 0, &c, 1);
    refused(q, n, "entry 2 of 2 has an experiment id outside");
    agg_slog_put_fixed(q + e2, -1, &c, 1); /* 2^64 - 1 on disk */
    refused(q, n, "entry 2 of 2 has an experiment id outside");
    agg_slog_put_fixed(q + e2, 7, &big, 1);
    refused(q, n, "entry 2 of 2 has a counter above 2^63-1");
    big = (agg_store_counters){0, 0, 0, UINT64_MAX};
    agg_slog_put_fixed(q + e2, 7, &big, 1);
    refused(q, n, "a counter above 2^63-1");
    agg_slog_put_fixed(q + e2, 7, &c, 0);
    refused(q, n, "entry 2 of 2 has an empty state");
    agg_slog_put_fixed(q + e2, 7, &c, UINT32_MAX); /* lengths past the end never wrap */
    refused(q, n, "a state longer than the bytes left");
}

/* ---- through the store -------------------------------------------------------------------- */

static agg_store_meta meta(void)
{
    agg_store_meta m = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = 3, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
    };
    return m;
}

static void db_exec(const char *dir, const char *sql, const uint8_t *blob, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/aggregator.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (blob)
        sqlite3_bind_blob(st, 1, blob, (int)n, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_store_refuses_bad_row(void **state)
{
    (void)state;
    char dir[64] = "/tmp/ldpb-test-slog-codec-XXXXXX";
    assert_non_null(mkdtemp(dir));
    agg_store_meta m = meta();
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, dir, &m, msg), LDPB_OK);
    agg_store_close(s);

    uint8_t p[256];
    size_t n = valid_row(p);
    p[0] = 9; /* a version this build does not know */
    db_exec(dir, "INSERT INTO state_log(seq, states) VALUES (41, ?1)", p, n);
    s = NULL;
    assert_int_equal(agg_store_open(&s, dir, &m, msg), LDPB_ECORRUPT);
    agg_store_close(s);
    if (!strstr(msg, "state log row 41: unknown encoding version 9"))
        fail_msg("open said: %s", msg);

    /* The per-experiment layout of unreleased development builds: refused with rows in it,
     * replaced when empty (as such a build's clean stop leaves it). */
    db_exec(dir, "DROP TABLE state_log", NULL, 0);
    db_exec(dir,
            "CREATE TABLE state_log(seq INTEGER PRIMARY KEY, experiment INTEGER NOT NULL,"
            " state BLOB NOT NULL, policy_version INTEGER NOT NULL, reports INTEGER NOT NULL,"
            " duplicates INTEGER NOT NULL, assignments INTEGER NOT NULL)",
            NULL, 0);
    db_exec(dir, "INSERT INTO state_log VALUES (1, 1, x'01', 0, 0, 0, 0)", NULL, 0);
    s = NULL;
    assert_int_equal(agg_store_open(&s, dir, &m, msg), LDPB_ECORRUPT);
    agg_store_close(s);
    if (!strstr(msg, "the state log is not of this version's layout"))
        fail_msg("open said: %s", msg);
    db_exec(dir, "DELETE FROM state_log", NULL, 0);
    s = NULL;
    assert_int_equal(agg_store_open(&s, dir, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_begin(s), LDPB_OK); /* and the new layout takes a commit */
    agg_store_counters c = {0, 0, 0, 1};
    assert_int_equal(agg_store_put_exp_state(s, 1, (const uint8_t *)"s", 1, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_store_refuses_bad_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
