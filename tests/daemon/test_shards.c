/* Row shards of the SQLite store (store_shard.h, row_shards = 4) through the store seam: exact
 * statuses (new, duplicate, expired) of batches written by the shards' writers; a crash after the
 * shards' COMMITs and before aggregator.db's (the batch's shard rows gone at the next open, its
 * resends counted once); such a COMMIT failing in process (the rows deleted before the next
 * batch); the export equal to the applied batches, also while a batch sits committed in the
 * shards only; the number of shards fixed by the state; --backup's copy, also taken while a batch
 * sits committed in the shards only, one database of the applied batches; a state without shards
 * byte for byte the layout of before (no shard files, no row_shards table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store.h"
#include "store_shard.h"

#define K      3
#define SHARDS 4

static char dir[64], state[96];

static void new_state(void)
{
    snprintf(dir, sizeof dir, "/tmp/ldpb-test-shards-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(state, sizeof state, "%s/state", dir);
}

static void remove_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static ldpb_err open_n(unsigned shards, agg_store **s, char *msg)
{
    agg_store_meta m = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = K, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
        .row_shards = shards,
    };
    return agg_store_open(s, state, &m, msg);
}

static agg_store *open_ok(unsigned shards)
{
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    ldpb_err e = open_n(shards, &s, msg);
    if (e)
        print_error("open: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    assert_int_equal(agg_store_row_shards(s), shards > 1 ? shards : 1);
    return s;
}

/* Ids: 16 bytes, `tag` in the first two. */
static uint8_t ids[1024][16];

static agg_store_row row(unsigned tag, uint64_t at)
{
    memset(ids[tag], 0x5a, sizeof ids[tag]);
    ids[tag][0] = (uint8_t)(tag >> 8);
    ids[tag][1] = (uint8_t)tag;
    agg_store_row r = {ids[tag], sizeof ids[tag], tag % K, "linear",        1.0, 1.0 / 3,
                       7,        at + 60000,      at,      (double)tag / 8, 0,   0};
    return r;
}

/* One transaction: the decisions and reports of tags [lo, hi), then the reports `extra` (kind,
 * tag), the state with `counted` reports; the statuses into st[]. Returns agg_store_commit's. */
/* The rows' kinds, and agg_store_write_batch's answers as the committer reads them: a report 0
 * new or 1 counted before, an expired report 1 counted before or LDPB_EEXPIRED. */
enum { ROW_DECISION, ROW_REPORT, ROW_EXPIRED };

static ldpb_err write_with_status(agg_store *s, const agg_store_row *rows, const uint8_t *kind,
                                  size_t n, int *st)
{
    static agg_store_batch_row b[2048];
    assert_true(n <= 2048);
    for (size_t i = 0; i < n; i++) {
        b[i].row = rows[i];
        b[i].kind = kind[i] == ROW_DECISION  ? AGG_BATCH_DECISION
                    : kind[i] == ROW_EXPIRED ? AGG_BATCH_LOOKUP
                                             : AGG_BATCH_REPORT;
    }
    ldpb_err e = agg_store_write_batch(s, b, n);
    for (size_t i = 0; i < n && !e; i++)
        if (b[i].kind == AGG_BATCH_REPORT)
            st[i] = b[i].found ? 0 : 1;
        else if (b[i].kind == AGG_BATCH_LOOKUP)
            st[i] = b[i].found ? 1 : LDPB_EEXPIRED;
    return e;
}

typedef struct extra {
    uint8_t kind;
    unsigned tag;
} extra;

static ldpb_err batch(agg_store *s, unsigned lo, unsigned hi, const extra *x, size_t nx,
                      uint64_t counted, int *st)
{
    static agg_store_row rows[2048];
    static uint8_t kind[2048];
    size_t n = 0;
    for (unsigned t = lo; t < hi; t++) {
        rows[n] = row(t, 1000u * t);
        kind[n++] = ROW_DECISION;
        rows[n] = row(t, 1000u * t + 5);
        kind[n++] = ROW_REPORT;
    }
    for (size_t i = 0; i < nx; i++) {
        rows[n] = row(x[i].tag, 1000u * x[i].tag + 9);
        kind[n++] = x[i].kind;
    }
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    ldpb_err e = write_with_status(s, rows, kind, n, st);
    assert_int_equal(e, LDPB_OK);
    agg_store_counters c = {counted, counted, 0, counted};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    e = agg_store_commit(s);
    if (e)
        agg_store_rollback(s);
    return e;
}

/* Reports counted per the store: the experiments' check passes and the arm counts' sum. */
static uint64_t counted(agg_store *s)
{
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters c;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK); /* checks rows = counter */
    free(blob);
    uint64_t arms[K], sum = 0;
    assert_int_equal(agg_store_arm_counts(s, arms, K), LDPB_OK);
    for (int a = 0; a < K; a++)
        sum += arms[a];
    assert_int_equal(sum, c.reports);
    return sum;
}

/* Rows of `table` in shard file i whose batch is `batch` (0: every batch). */
static int64_t shard_rows(unsigned i, const char *table, int64_t batch)
{
    char path[256], sql[128];
    assert_true(agg_shard_path(path, sizeof path, state, i));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE %lld IN (0, batch)", table,
             (long long)batch);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static size_t export_csv(char *buf, size_t cap)
{
    FILE *f = fmemopen(buf, cap, "w");
    assert_non_null(f);
    char msg[AGG_STORE_ERRMAX];
    ldpb_err e = agg_store_export_csv_url(NULL, state, f, msg);
    if (e)
        print_error("export: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    long n = ftell(f);
    fclose(f);
    assert_true(n > 0 && (size_t)n < cap);
    buf[n] = '\0';
    return (size_t)n;
}

static size_t lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Statuses: new reports 0, one sent twice in a batch 0 then 1, resent 1, an expired report
 * counted before 1, one never counted LDPB_EEXPIRED; every shard holds rows; restart. */
static void test_exact_statuses(void **state_)
{
    (void)state_;
    new_state();
    agg_store *s = open_ok(SHARDS);
    static int st[2048];
    extra x1[] = {{ROW_REPORT, 7}, {ROW_EXPIRED, 900}, {ROW_EXPIRED, 8}};
    assert_int_equal(batch(s, 0, 100, x1, 3, 100, st), LDPB_OK);
    for (unsigned i = 0; i < 100; i++)
        assert_int_equal(st[2 * i + 1], 0);
    assert_int_equal(st[200], 1);             /* 7 again in its batch */
    assert_int_equal(st[201], LDPB_EEXPIRED); /* never counted */
    assert_int_equal(st[202], 1);             /* counted earlier in the batch */
    assert_int_equal(agg_store_decision_rows(s), 100);
    for (unsigned i = 0; i < SHARDS; i++) {
        assert_true(shard_rows(i, "reports", 1) > 0);
        char path[256], wal[300];
        struct stat sb;
        assert_true(agg_shard_path(path, sizeof path, state, i));
        snprintf(wal, sizeof wal, "%s-wal", path);
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal(sb.st_mode & 0777, 0600);
        assert_int_equal(stat(wal, &sb), 0);
        assert_int_equal(sb.st_mode & 0777, 0600);
    }
    extra x2[] = {{ROW_EXPIRED, 3}, {ROW_REPORT, 150}};
    assert_int_equal(batch(s, 100, 120, x2, 2, 121, st), LDPB_OK);
    assert_int_equal(st[40], 1);
    assert_int_equal(st[41], 0);
    /* all of batch 1 resent: duplicates */
    static agg_store_row rows[100];
    static uint8_t kind[100];
    for (unsigned t = 0; t < 100; t++) {
        rows[t] = row(t, 5);
        kind[t] = ROW_REPORT;
    }
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(write_with_status(s, rows, kind, 100, st), LDPB_OK);
    for (unsigned t = 0; t < 100; t++)
        assert_int_equal(st[t], 1);
    agg_store_counters c = {121, 121, 100, 121};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(counted(s), 121);
    agg_store_close(s);
    s = open_ok(SHARDS);
    assert_int_equal(counted(s), 121);
    assert_int_equal(agg_store_decision_rows(s), 120);
    int exists = 0;
    assert_int_equal(agg_store_has_report(s, ids[150], 16, &exists), LDPB_OK);
    assert_int_equal(exists, 1);
    agg_store_close(s);
    remove_tree();
}

static int exit_now(void *ctx)
{
    (void)ctx;
    _exit(0); /* the process dies between the shards' COMMITs and aggregator.db's */
}

/* kill -9 between the shards' COMMITs and aggregator.db's, in a child process: the batch's rows
 * are in the shards (checked) but no state counts them; the next open deletes them, and their
 * resends are new, counted once. */
static void test_crash_between_commits(void **state_)
{
    (void)state_;
    new_state();
    static int st[2048];
    agg_store *s = open_ok(SHARDS);
    assert_int_equal(batch(s, 0, 50, NULL, 0, 50, st), LDPB_OK);
    agg_store_close(s);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        agg_store *c = open_ok(SHARDS);
        agg_store_set_shard_hook(c, exit_now, NULL);
        (void)batch(c, 50, 100, NULL, 0, 100, st);
        _exit(3); /* not reached */
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    int64_t left = 0;
    for (unsigned i = 0; i < SHARDS; i++)
        left += shard_rows(i, "reports", 2);
    assert_int_equal(left, 50); /* the crash left the second batch in the shards */

    s = open_ok(SHARDS);
    for (unsigned i = 0; i < SHARDS; i++)
        assert_int_equal(shard_rows(i, "reports", 2) + shard_rows(i, "decisions", 2), 0);
    assert_int_equal(counted(s), 50);
    assert_int_equal(agg_store_decision_rows(s), 50);
    /* the resends: the first batch's duplicates, the second's new */
    assert_int_equal(batch(s, 0, 100, NULL, 0, 100, st), LDPB_OK);
    for (unsigned t = 0; t < 100; t++)
        assert_int_equal(st[2 * t + 1], t < 50 ? 1 : 0);
    assert_int_equal(counted(s), 100);
    agg_store_close(s);
    s = open_ok(SHARDS);
    assert_int_equal(counted(s), 100);
    agg_store_close(s);
    remove_tree();
}

/* The export run while a batch is committed in the shards and not in aggregator.db: the
 * applied batches only. */
static int export_now(void *ctx)
{
    char *buf = ctx;
    export_csv(buf, 1 << 16);
    return 1; /* and aggregator.db's COMMIT fails */
}

/* aggregator.db's COMMIT failing after the shards': the rows of that batch are deleted before
 * the next, its resends counted once; the export never shows them. The export of the same
 * batches equals that of a state without shards, byte for byte. */
static void test_failed_commit_and_export(void **state_)
{
    (void)state_;
    new_state();
    static int st[2048];
    static char during[1 << 16], after[1 << 16], plain[1 << 16];
    agg_store *s = open_ok(SHARDS);
    assert_int_equal(batch(s, 0, 40, NULL, 0, 40, st), LDPB_OK);
    char before[1 << 16];
    export_csv(before, sizeof before);
    assert_int_equal(lines(before), 41);
    agg_store_set_shard_hook(s, export_now, during);
    assert_int_equal(batch(s, 40, 80, NULL, 0, 80, st), LDPB_EIO);
    agg_store_set_shard_hook(s, NULL, NULL);
    assert_string_equal(during, before);
    for (unsigned i = 0; i < SHARDS; i++)
        assert_int_equal(shard_rows(i, "reports", 2), 0);
    assert_int_equal(counted(s), 40);
    assert_int_equal(batch(s, 30, 80, NULL, 0, 80, st), LDPB_OK);
    for (unsigned t = 30; t < 80; t++)
        assert_int_equal(st[2 * (t - 30) + 1], t < 40 ? 1 : 0);
    assert_int_equal(counted(s), 80);
    agg_store_close(s);
    export_csv(after, sizeof after);
    assert_int_equal(lines(after), 81);
    remove_tree();

    /* the same transactions without shards */
    new_state();
    s = open_ok(1);
    for (int pass = 0; pass < 2; pass++) {
        unsigned lo = pass ? 30 : 0, hi = pass ? 80 : 40;
        assert_int_equal(agg_store_begin(s), LDPB_OK);
        for (unsigned t = lo; t < hi; t++) {
            agg_store_row d = row(t, 1000u * t), r = row(t, 1000u * t + 5);
            int is_new = 0;
            assert_int_equal(agg_store_add_decision(s, &d), LDPB_OK);
            assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
        }
        agg_store_counters c = {hi, hi, 0, hi};
        assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
        assert_int_equal(agg_store_commit(s), LDPB_OK);
    }
    agg_store_close(s);
    export_csv(plain, sizeof plain);
    assert_string_equal(after, plain);
    /* the layout of a state without shards */
    char path[256];
    struct stat sb;
    assert_true(agg_shard_path(path, sizeof path, state, 0));
    assert_int_equal(stat(path, &sb), -1);
    remove_tree();
}

/* Retention across the shards: the expired decisions of every shard, then decision_rows_max
 * spread evenly (the earliest of each shard). */
static void test_retention(void **state_)
{
    (void)state_;
    new_state();
    static int st[2048];
    agg_store *s = open_ok(SHARDS);
    assert_int_equal(batch(s, 0, 100, NULL, 0, 100, st), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 100);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    uint64_t deleted = 0;
    /* retained until 60000 + 1000 t: those of t < 20 */
    assert_int_equal(agg_store_prune_decisions(s, 60000 + 1000 * 20, 1000, 1000, &deleted),
                     LDPB_OK);
    assert_int_equal(deleted, 20);
    assert_int_equal(agg_store_prune_decisions(s, 0, 40, 1000, &deleted), LDPB_OK);
    assert_int_equal(deleted, 40);
    agg_store_counters c = {100, 100, 0, 100};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 40);
    agg_store_close(s);
    s = open_ok(SHARDS);
    assert_int_equal(agg_store_decision_rows(s), 40);
    assert_int_equal(counted(s), 100);
    int64_t left = 0;
    for (unsigned i = 0; i < SHARDS; i++) {
        assert_true(shard_rows(i, "decisions", 0) >= 5); /* 10 went from each */
        left += shard_rows(i, "decisions", 0);
    }
    assert_int_equal(left, 40);
    agg_store_close(s);
    remove_tree();
}

/* The number of shards belongs to the state; --backup copies a sharded state (refused before). */
static void test_fixed_and_backup(void **state_)
{
    (void)state_;
    new_state();
    static int st[2048];
    agg_store *s = open_ok(SHARDS);
    assert_int_equal(batch(s, 0, 10, NULL, 0, 10, st), LDPB_OK);
    agg_store_close(s);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(open_n(1, &s, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "row_shards = 4"));
    assert_int_equal(open_n(2, &s, msg), LDPB_ESTATE);
    char dest[160];
    snprintf(dest, sizeof dest, "%s/copy.db", dir);
    ldpb_err be = agg_store_backup(state, dest, msg);
    if (be)
        print_error("backup: %s\n", msg);
    assert_int_equal(be, LDPB_OK);
    s = open_ok(SHARDS);
    assert_int_equal(counted(s), 10);
    agg_store_close(s);
    /* --check-config reads the shards' rows too, and writes nothing */
    agg_store_meta m = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = K, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
        .row_shards = SHARDS,
        .check_only = 1,
    };
    ldpb_err e = agg_store_open(&s, state, &m, msg);
    if (e)
        print_error("check: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    agg_store_exp *v = NULL;
    size_t nv = 0;
    assert_int_equal(agg_store_experiments(s, &v, &nv), LDPB_OK);
    assert_int_equal(nv, 1);
    assert_int_equal(v[0].counters.reports, 10);
    agg_store_experiments_free(v, nv);
    agg_store_close(s);
    remove_tree();

    /* a state without shards that holds rows keeps them in aggregator.db */
    new_state();
    s = open_ok(1);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_row r = row(1, 5);
    int is_new = 0;
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
    agg_store_counters c = {1, 1, 0, 1};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);
    assert_int_equal(open_n(SHARDS, &s, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "row_shards = 1"));
    remove_tree();
}

static char backup_dest[160];

/* --backup run while a batch is committed in the shards and not in aggregator.db; the COMMIT
 * then goes on. */
static int backup_now(void *ctx)
{
    char msg[AGG_STORE_ERRMAX];
    ldpb_err *e = ctx;
    *e = agg_store_backup(state, backup_dest, msg);
    if (*e)
        print_error("backup: %s\n", msg);
    return 0;
}

static int64_t count_in(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* A backup taken between the shards' COMMITs of a batch and aggregator.db's holds the applied
 * batches only (the batch's rows were in the shards, committed), in one database of the layout
 * without shards: no row_shards table, every row in its own tables. Restored, it is refused with
 * row_shards = 4, and with row_shards = 1 it counts the applied reports and exports them byte for
 * byte as the sharded state did before that batch. */
static void test_backup_between_commits(void **state_)
{
    (void)state_;
    new_state();
    static int st[2048];
    static char before[1 << 16], restored[1 << 16];
    agg_store *s = open_ok(SHARDS);
    assert_int_equal(batch(s, 0, 40, NULL, 0, 40, st), LDPB_OK);
    assert_int_equal(batch(s, 40, 60, NULL, 0, 60, st), LDPB_OK);
    export_csv(before, sizeof before);
    assert_int_equal(lines(before), 61);
    snprintf(backup_dest, sizeof backup_dest, "%s/copy.db", dir);
    ldpb_err be = LDPB_EIO;
    agg_store_set_shard_hook(s, backup_now, &be);
    assert_int_equal(batch(s, 60, 80, NULL, 0, 80, st), LDPB_OK);
    agg_store_set_shard_hook(s, NULL, NULL);
    assert_int_equal(be, LDPB_OK);
    int64_t third = 0;
    for (unsigned i = 0; i < SHARDS; i++)
        third += shard_rows(i, "reports", 3);
    assert_int_equal(third, 20);
    assert_int_equal(counted(s), 80);
    agg_store_close(s);

    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(backup_dest, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(count_in(db, "SELECT count(*) FROM sqlite_master WHERE name = 'row_shards'"),
                     0);
    assert_int_equal(count_in(db, "SELECT count(*) FROM reports"), 60);
    assert_int_equal(count_in(db, "SELECT count(*) FROM decisions"), 60);
    sqlite3_close(db);

    snprintf(state, sizeof state, "%s/restored", dir);
    assert_int_equal(mkdir(state, 0700), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/aggregator.db", state);
    assert_int_equal(rename(backup_dest, path), 0);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(open_n(SHARDS, &s, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "row_shards = 1"));
    s = open_ok(1);
    assert_int_equal(counted(s), 60);
    agg_store_close(s);
    export_csv(restored, sizeof restored);
    assert_string_equal(restored, before);
    remove_tree();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_statuses),
        cmocka_unit_test(test_crash_between_commits),
        cmocka_unit_test(test_failed_commit_and_export),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_fixed_and_backup),
        cmocka_unit_test(test_backup_between_commits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
