/* Hardening of the aggregator's process and files: the state's files are private whatever the
 * umask and the directory's mode. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ldpb-test-harden-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0777), 0);
}

static void remove_dir(void)
{
    static const char *const names[] = {"lock", AGG_STORE_DB_NAME, AGG_STORE_DB_NAME "-wal",
                                        AGG_STORE_DB_NAME "-shm", "link"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static unsigned mode_of(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    if (lstat(p, &st) != 0)
        return 01000; /* missing: never equal to a mode */
    return (unsigned)(st.st_mode & 07777);
}

static const agg_store_meta meta = {"ldp-ts-b", 3, "linear", 1.0, 0.5, "local", 0, 0, 0, 0};

/* With umask 0 in a 0777 directory, SQLite alone would create all three files 0666. */
static void test_state_files_private(void **state)
{
    (void)state;
    make_dir();
    mode_t old = umask(0);
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    /* the -wal and -shm exist while the database is open (the last close removes them) */
    assert_int_equal(mode_of(AGG_STORE_DB_NAME), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-wal"), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-shm"), 0600);
    assert_int_equal(mode_of("lock"), 0600);
    agg_store_close(s);
    umask(old);
    remove_dir();
}

/* A state left readable by others (an older version, a careless copy) is made private again. */
static void test_existing_state_tightened(void **state)
{
    (void)state;
    make_dir();
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    agg_store_close(s);
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, AGG_STORE_DB_NAME);
    assert_int_equal(chmod(p, 0644), 0);
    snprintf(p, sizeof p, "%s/%s-wal", dir, AGG_STORE_DB_NAME);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fchmod(fd, 0644), 0);
    close(fd);
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-wal"), 0600);
    agg_store_close(s);
    remove_dir();
}

/* A database path that is a symbolic link is refused, and its target is left alone. */
static void test_db_symlink_refused(void **state)
{
    (void)state;
    make_dir();
    char target[128], p[128];
    snprintf(target, sizeof target, "%s/link", dir);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof p, "%s/%s", dir, AGG_STORE_DB_NAME);
    assert_int_equal(symlink(target, p), 0);
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_not_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    assert_null(s);
    assert_non_null(strstr(err, "symbolic link"));
    assert_int_equal(mode_of("link"), 0644);
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 0);
    remove_dir();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_files_private),
        cmocka_unit_test(test_existing_state_tightened),
        cmocka_unit_test(test_db_symlink_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
