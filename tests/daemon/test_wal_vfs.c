/* The WAL-gathering VFS (wal_vfs.h): what a writer through it commits is what a reader through the
 * default VFS reads, at every commit, with the COMMIT's fsync (synchronous = FULL, the store's) and
 * without it (synchronous = OFF, where only the wal-index's publication sends the frames out);
 * a transaction larger than what the VFS holds back (and than the unix VFS writes at once); and a
 * writer killed with SIGKILL between commits leaves a database whose rows are exactly the commits
 * it finished, or one more. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "wal_vfs.h"

static void tmp_db(char *dir, size_t cap, char *path, size_t pcap)
{
    snprintf(dir, cap, "/tmp/ldpb-test-walvfs-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, pcap, "%s/t.db", dir);
}

static void remove_tree(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        print_error("%s: %s\n", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    assert_int_equal(rc, SQLITE_OK);
}

static sqlite3_int64 one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW)
        print_error("%s: %s\n", sql, sqlite3_errmsg(db));
    assert_int_equal(rc, SQLITE_ROW);
    sqlite3_int64 v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void assert_intact(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
}

static sqlite3 *open_writer(const char *path, const char *sync)
{
    const char *vfs = agg_wal_vfs_name();
    assert_non_null(vfs);
    assert_non_null(sqlite3_vfs_find(vfs));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs),
                     SQLITE_OK);
    exec_ok(db, "PRAGMA journal_mode=WAL");
    exec_ok(db, sync);
    exec_ok(db, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, k BLOB UNIQUE, v BLOB)");
    return db;
}

/* One transaction of `rows` rows with ids from `first`, each with a 16-byte key spread over the
 * index (so a commit dirties many pages) and a value of `len` bytes. */
static void insert_rows(sqlite3 *db, int first, int rows, int len)
{
    exec_ok(db, "BEGIN");
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(db, "INSERT INTO t(id, k, v) VALUES (?1, ?2, ?3)", -1, &st, NULL),
        SQLITE_OK);
    unsigned char *v = malloc((size_t)len);
    assert_non_null(v);
    for (int i = first; i < first + rows; i++) {
        unsigned char k[16];
        uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15u;
        memcpy(k, &h, 8);
        memcpy(k + 8, &i, sizeof i);
        memset(k + 8 + sizeof i, 0, sizeof k - 8 - sizeof i);
        memset(v, i & 0xff, (size_t)len);
        sqlite3_bind_int64(st, 1, i);
        sqlite3_bind_blob(st, 2, k, sizeof k, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, v, len, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    free(v);
    sqlite3_finalize(st);
    exec_ok(db, "COMMIT");
}

/* A reader beside the writer sees every commit whole, and nothing of one not yet committed. */
static void reader_follows(const char *sync)
{
    char dir[64], path[96];
    tmp_db(dir, sizeof dir, path, sizeof path);
    sqlite3 *w = open_writer(path, sync), *r = NULL;
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    int total = 0;
    for (int c = 0; c < 60; c++) {
        int rows = 1 + c % 7 * 9;
        insert_rows(w, total + 1, rows, 200 + c * 13);
        total += rows;
        assert_int_equal(one_int(r, "SELECT count(*) FROM t"), total);
        assert_int_equal(one_int(r, "SELECT count(*) FROM t WHERE length(v) > 0 AND"
                                    " substr(v, 1, 1) = substr(v, -1, 1)"),
                         total);
        if (c % 20 == 19)
            assert_intact(r);
    }
    /* one more, left open: the reader sees none of it */
    exec_ok(w, "BEGIN");
    exec_ok(w, "INSERT INTO t(id, k, v) VALUES (100000, x'01', x'02')");
    assert_int_equal(one_int(r, "SELECT count(*) FROM t"), total);
    exec_ok(w, "ROLLBACK");
    sqlite3_close(r);
    assert_int_equal(sqlite3_close(w), SQLITE_OK);
    remove_tree(dir);
}

static void test_reader_full(void **state)
{
    (void)state;
    reader_follows("PRAGMA synchronous=FULL");
}

static void test_reader_no_sync(void **state)
{
    (void)state;
    reader_follows("PRAGMA synchronous=OFF");
}

/* More than the VFS holds back (128 KiB): written in pieces, in order. */
static void test_large_transaction(void **state)
{
    (void)state;
    char dir[64], path[96];
    tmp_db(dir, sizeof dir, path, sizeof path);
    sqlite3 *w = open_writer(path, "PRAGMA synchronous=FULL");
    exec_ok(w, "PRAGMA cache_size=-65536"); /* the whole transaction reaches the WAL at COMMIT */
    insert_rows(w, 1, 3000, 1500);          /* about 4.5 MiB */
    insert_rows(w, 3001, 10, 100);
    assert_int_equal(sqlite3_close(w), SQLITE_OK);
    sqlite3 *r = NULL;
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_intact(r);
    assert_int_equal(one_int(r, "SELECT count(*) FROM t"), 3010);
    assert_int_equal(one_int(r, "SELECT sum(length(v)) FROM t"), 3000 * 1500 + 10 * 100);
    sqlite3_close(r);
    remove_tree(dir);
}

/* SIGKILL between commits: every commit the writer reported is there, at most one more. */
static void test_killed_writer(void **state)
{
    (void)state;
    char dir[64], path[96];
    tmp_db(dir, sizeof dir, path, sizeof path);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        sqlite3 *w = open_writer(path, "PRAGMA synchronous=FULL");
        for (int i = 1;; i++) {
            insert_rows(w, i * 8, 8, 300);
            if (write(fds[1], &i, sizeof i) != (ssize_t)sizeof i)
                _exit(3);
        }
    }
    close(fds[1]);
    int last = 0, got;
    while (last < 300 && read(fds[0], &got, sizeof got) == (ssize_t)sizeof got)
        last = got;
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    while (read(fds[0], &got, sizeof got) == (ssize_t)sizeof got)
        last = got;
    close(fds[0]);
    sqlite3 *r = NULL;
    assert_int_equal(sqlite3_open_v2(path, &r, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_intact(r);
    sqlite3_int64 rows = one_int(r, "SELECT count(*) FROM t");
    assert_true(rows == (sqlite3_int64)last * 8 || rows == (sqlite3_int64)(last + 1) * 8);
    assert_int_equal(one_int(r, "SELECT max(id) FROM t"), rows + 7);
    sqlite3_close(r);
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_full),
        cmocka_unit_test(test_reader_no_sync),
        cmocka_unit_test(test_large_transaction),
        cmocka_unit_test(test_killed_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
