/* The durable whole-file write (ldpb/durable.h) that the ledger, the report queue, key files and
 * the daemon's export and backup share: replacing and non-replacing writes, the file mode whatever
 * the umask, a failure at every step (the target then holds the old content or the new one, and
 * no temporary file is left), stale temporary files, regular-file-only opens and the lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ldpb/durable.h"

typedef struct fx {
    char dir[64];
    char path[128];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/ldpb-durable-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/file", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                (void)unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Entries in the directory other than "file". */
static int others(const fx *f)
{
    int n = 0;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
             strcmp(e->d_name, "file") != 0;
    closedir(d);
    return n;
}

static void assert_content(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static ldpb_err write_text(const char *path, const ldpb_durable_opts *o, const char *text,
                           int *placed, char *detail)
{
    ldpb_durable_buf b = {text, strlen(text)};
    return ldpb_durable_write(path, o, ldpb_durable_fill_buf, &b, placed, detail, 256);
}

static void test_replace_and_mode(void **state)
{
    fx *f = *state;
    mode_t old = umask(077);
    int placed = 0;
    assert_int_equal(write_text(f->path, NULL, "one", &placed, NULL), LDPB_OK);
    assert_int_equal(placed, 1);
    assert_content(f->path, "one");
    struct stat sb;
    assert_int_equal(stat(f->path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    ldpb_durable_opts o = {0644, 0, NULL, NULL};
    assert_int_equal(write_text(f->path, &o, "two", NULL, NULL), LDPB_OK);
    assert_content(f->path, "two");
    assert_int_equal(stat(f->path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0644); /* whatever the umask */
    assert_int_equal(others(f), 0);
    umask(old);
}

static void test_no_replace(void **state)
{
    fx *f = *state;
    ldpb_durable_opts o = {0, 1, NULL, NULL};
    char detail[256] = "";
    assert_int_equal(write_text(f->path, &o, "first", NULL, detail), LDPB_OK);
    int placed = 1;
    assert_int_equal(write_text(f->path, &o, "second", &placed, detail), LDPB_ESTATE);
    assert_int_equal(placed, 0);
    assert_non_null(strstr(detail, "already exists"));
    assert_content(f->path, "first");
    assert_int_equal(others(f), 0);
}

static ldpb_err failing_fill(void *ctx, int fd, const char *tmp_path)
{
    (void)ctx;
    assert_int_equal(access(tmp_path, F_OK), 0);
    assert_int_equal(ldpb_durable_write_all(fd, "partial", 7), 0);
    return LDPB_ECORRUPT;
}

static void test_fill_failure(void **state)
{
    fx *f = *state;
    assert_int_equal(write_text(f->path, NULL, "old", NULL, NULL), LDPB_OK);
    assert_int_equal(ldpb_durable_write(f->path, NULL, failing_fill, NULL, NULL, NULL, 0),
                     LDPB_ECORRUPT);
    assert_content(f->path, "old");
    assert_int_equal(others(f), 0);
}

static int fail_at(void *ctx, ldpb_durable_step s)
{
    return (int)s == *(const int *)ctx;
}

/* A failure at each step: before the rename the old content stays and placed is 0; at or after
 * it the new content is there and placed is 1. No temporary file is left either way. */
static void test_each_step_fails(void **state)
{
    fx *f = *state;
    for (int s = LDPB_DURABLE_TMP_WRITTEN; s <= LDPB_DURABLE_DIR_SYNCED; s++) {
        assert_int_equal(write_text(f->path, NULL, "old", NULL, NULL), LDPB_OK);
        ldpb_durable_opts o = {0, 0, fail_at, &s};
        int placed = -1;
        char detail[256] = "";
        assert_int_equal(write_text(f->path, &o, "new", &placed, detail), LDPB_EIO);
        assert_true(detail[0] != '\0');
        assert_int_equal(placed, s >= LDPB_DURABLE_PLACED);
        assert_content(f->path, s >= LDPB_DURABLE_PLACED ? "new" : "old");
        assert_int_equal(others(f), 0);
    }
}

static void test_missing_dir(void **state)
{
    fx *f = *state;
    char path[160], detail[256] = "";
    snprintf(path, sizeof path, "%s/no/such", f->dir);
    assert_int_equal(write_text(path, NULL, "x", NULL, detail), LDPB_EIO);
    assert_non_null(strstr(detail, "cannot create a file beside it"));
    assert_int_equal(write_text("", NULL, "x", NULL, NULL), LDPB_EINVAL);
}

/* Stale temporary files of this path are removed (a link itself, never its target); other names
 * are left. */
static void test_clean_stale(void **state)
{
    fx *f = *state;
    char target[160], stale_link[160], stale_file[160], other[160], short_hex[160];
    snprintf(target, sizeof target, "%s/target", f->dir);
    snprintf(stale_link, sizeof stale_link, "%s.tmp.0123456789abcdef", f->path);
    snprintf(stale_file, sizeof stale_file, "%s.tmp.fedcba9876543210", f->path);
    snprintf(other, sizeof other, "%s.tmp.0123456789ABCDEF", f->path);
    snprintf(short_hex, sizeof short_hex, "%s.tmp.0123", f->path);
    assert_int_equal(write_text(target, NULL, "precious", NULL, NULL), LDPB_OK);
    assert_int_equal(symlink(target, stale_link), 0);
    assert_int_equal(write_text(stale_file, NULL, "stale", NULL, NULL), LDPB_OK);
    assert_int_equal(write_text(other, NULL, "other", NULL, NULL), LDPB_OK);
    assert_int_equal(write_text(short_hex, NULL, "other", NULL, NULL), LDPB_OK);
    ldpb_durable_clean_stale(f->path);
    struct stat sb;
    assert_int_equal(lstat(stale_link, &sb), -1);
    assert_int_equal(lstat(stale_file, &sb), -1);
    assert_int_equal(lstat(other, &sb), 0);
    assert_int_equal(lstat(short_hex, &sb), 0);
    assert_content(target, "precious");
}

static void test_open_regular(void **state)
{
    fx *f = *state;
    int fd = 99;
    assert_int_equal(ldpb_durable_open_regular(f->path, O_RDONLY, &fd), LDPB_ENOTFOUND);
    assert_int_equal(fd, -1);
    assert_int_equal(write_text(f->path, NULL, "x", NULL, NULL), LDPB_OK);
    assert_int_equal(ldpb_durable_open_regular(f->path, O_RDONLY, &fd), LDPB_OK);
    assert_true((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
    close(fd);

    char p[160];
    snprintf(p, sizeof p, "%s/fifo", f->dir);
    assert_int_equal(mkfifo(p, 0600), 0); /* would block in open without O_NONBLOCK */
    assert_int_equal(ldpb_durable_open_regular(p, O_RDONLY, &fd), LDPB_EINVAL);
    assert_int_equal(ldpb_durable_open_regular(p, O_RDWR | O_CREAT, &fd), LDPB_EINVAL);
    snprintf(p, sizeof p, "%s/dir", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(ldpb_durable_open_regular(p, O_RDONLY, &fd), LDPB_EINVAL);
    assert_int_equal(ldpb_durable_open_regular(p, O_RDWR | O_CREAT, &fd), LDPB_EINVAL);
    rmdir(p);
    snprintf(p, sizeof p, "%s/link", f->dir);
    assert_int_equal(symlink(f->path, p), 0); /* to a regular file, still refused */
    assert_int_equal(ldpb_durable_open_regular(p, O_RDONLY, &fd), LDPB_EINVAL);
    assert_int_equal(ldpb_durable_open_regular("/dev/null", O_RDONLY, &fd), LDPB_EINVAL);
    assert_int_equal(fd, -1);
}

static void test_lock(void **state)
{
    fx *f = *state;
    int a = -1, b = -1;
    assert_int_equal(ldpb_durable_lock(f->path, &a), LDPB_OK);
    assert_int_equal(ldpb_durable_lock(f->path, &b), LDPB_ESTATE);
    assert_int_equal(b, -1);
    close(a);
    assert_int_equal(ldpb_durable_lock(f->path, &b), LDPB_OK);
    close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_and_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fill_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_step_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clean_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
