/* The SQLite store's state log (store_sqlite.c; docs/aggregator.md, "The state log"): a process
 * that writes experiments' states through agg_store_put_exp_state, across a compaction of the
 * log, is killed with SIGKILL in the middle of a transaction; the next open restores each
 * experiment's last committed state and counters, from the log and from the rows, and nothing of
 * the transaction it was killed in. A clean close empties the log into the rows, and the states
 * stay the same. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store.h"

#define N_EXP   50
#define N_TXN   80  /* committed transactions */
#define PER_TXN 256 /* states per transaction: 80 * 256 = 20480 states, past one compaction */
#define LOG_MAX 16384

typedef struct last {
    uint32_t txn, slot; /* the last committed write, txn 0: none */
} last;

static agg_store_meta meta_no_default(void)
{
    agg_store_meta m = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = 3, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
    };
    return m;
}

/* The experiment (its index: named e<index>) written by slot `slot` of transaction `txn`. */
static uint32_t exp_of(uint32_t txn, uint32_t slot)
{
    return (txn * 2654435761u + slot * 40503u) % N_EXP;
}

static void blob_of(uint32_t txn, uint32_t slot, uint32_t exp, uint8_t out[12])
{
    memcpy(out, &txn, 4);
    memcpy(out + 4, &slot, 4);
    memcpy(out + 8, &exp, 4);
}

static int must(ldpb_err e, agg_store *s, const char *what)
{
    if (e) {
        fprintf(stderr, "child: %s: %s: %s\n", what, ldpb_errname(e), agg_store_errmsg(s));
        _exit(2);
    }
    return 0;
}

/* The child: creates the experiments, commits N_TXN transactions of PER_TXN states, then opens
 * one more, writes a state of every experiment in it and kills itself before its COMMIT. */
static void child(const char *dir)
{
    agg_store_meta m = meta_no_default();
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    if (agg_store_open(&s, dir, &m, msg)) {
        fprintf(stderr, "child: open: %s\n", msg);
        _exit(2);
    }
    int64_t ids[N_EXP];
    must(agg_store_begin(s), s, "begin");
    for (int i = 0; i < N_EXP; i++) {
        char name[16];
        snprintf(name, sizeof name, "e%d", i);
        must(agg_store_add_experiment(s, name, "policy = ldp-ts-b\n", 1, &ids[i]), s, "add");
    }
    must(agg_store_commit(s), s, "commit");
    for (uint32_t t = 1; t <= N_TXN + 1; t++) {
        must(agg_store_begin(s), s, "begin");
        for (uint32_t k = 0; k < PER_TXN; k++) {
            uint32_t e = exp_of(t, k);
            uint8_t b[12];
            blob_of(t, k, e, b);
            agg_store_counters c = {0, 0, t, (uint64_t)t * 1000u + k};
            must(agg_store_put_exp_state(s, ids[e], b, sizeof b, &c), s, "put");
        }
        if (t <= N_TXN)
            must(agg_store_commit(s), s, "commit");
    }
    raise(SIGKILL); /* in the open transaction of N_TXN + 1 */
    _exit(4);
}

static long db_long(const char *dir, const char *sql)
{
    char path[256];
    snprintf(path, sizeof path, "%s/aggregator.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long v = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* Every experiment's state and counters are those of its last committed write. */
static void check_states(agg_store *s, const last *want)
{
    agg_store_exp *v = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].name[0] != 'e')
            continue; /* `default`, never written here */
        seen++;
        uint32_t idx = (uint32_t)atoi(v[i].name + 1);
        assert_true(idx < N_EXP);
        const last *w = &want[idx];
        if (w->txn == 0) {
            assert_null(v[i].state);
            continue;
        }
        uint8_t b[12];
        blob_of(w->txn, w->slot, idx, b);
        assert_int_equal(v[i].state_len, sizeof b);
        assert_memory_equal(v[i].state, b, sizeof b);
        assert_int_equal(v[i].counters.duplicates, w->txn);
        assert_int_equal(v[i].counters.assignments, (uint64_t)w->txn * 1000u + w->slot);
    }
    agg_store_experiments_free(v, n);
    assert_int_equal(seen, N_EXP);
}

static void test_kill9_across_compaction(void **state)
{
    (void)state;
    char dir[64] = "/tmp/ldpb-test-state-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sdir[96];
    snprintf(sdir, sizeof sdir, "%s/state", dir);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child(sdir);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
        print_error("the child exited with %d\n", WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    static last want[N_EXP];
    memset(want, 0, sizeof want);
    for (uint32_t t = 1; t <= N_TXN; t++)
        for (uint32_t k = 0; k < PER_TXN; k++)
            want[exp_of(t, k)] = (last){t, k};

    /* One compaction ran (at the commit that reached LOG_MAX states logged); the rest is in the
     * log, one row per commit holding its PER_TXN states. */
    assert_int_equal(db_long(sdir, "SELECT count(*) FROM state_log"),
                     (N_TXN * PER_TXN - LOG_MAX) / PER_TXN);
    assert_int_equal(db_long(sdir, "SELECT sum((length(states) - 5) / (44 + 12)) FROM state_log"),
                     N_TXN * PER_TXN - LOG_MAX);
    assert_true(db_long(sdir, "SELECT count(*) FROM experiments WHERE state IS NOT NULL") > 0);

    agg_store_meta m = meta_no_default();
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(agg_store_open(&s, sdir, &m, msg), LDPB_OK);
    check_states(s, want);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    print_message("open + list with %d states in the state log: %.1f ms\n",
                  N_TXN * PER_TXN - LOG_MAX,
                  (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    agg_store_close(s);

    /* The clean close emptied the log into the rows. */
    assert_int_equal(db_long(sdir, "SELECT count(*) FROM state_log"), 0);
    s = NULL;
    assert_int_equal(agg_store_open(&s, sdir, &m, msg), LDPB_OK);
    check_states(s, want);
    agg_store_close(s);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_across_compaction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
