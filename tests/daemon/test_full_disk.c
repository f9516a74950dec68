/* A real full disk: the daemon's state_dir is a 2 MiB tmpfs, filled by a file beside the
 * database. While commits fail (ENOSPC), and while the free space is below min_free_mb, the
 * daemon issues no assignment (LDPB_EBUSY); once the filler is deleted it serves again by itself.
 * Needs the right to mount (CMake registers this test only where a probe mount succeeds); the
 * mount lives in a private mount namespace, so it vanishes with the test. */
#define _GNU_SOURCE /* unshare */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "ldpb/err.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* 0 if an assignment came back, else the sealed Error's code (-1 for anything else). */
static int try_assign(dt_client *c, uint8_t *id, size_t *id_len, int *mech, double *eps)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    int out = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
        const Ldpb__V1__Assignment *a = r.env->assignment;
        memcpy(id, a->assignment_id.data, a->assignment_id.len);
        *id_len = a->assignment_id.len;
        *mech = a->mechanism;
        *eps = a->epsilon;
        out = 0;
    } else if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        out = (int)r.env->error->code;
    }
    dt_reply_clear(&r);
    return out;
}

/* Assign + report: 0 when acknowledged, the assignment's error code, or 1000 + the report's. */
static int round_trip(dt_client *c)
{
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len = 0;
    int mech = 0;
    double eps = 0;
    int rc = try_assign(c, id, &id_len, &mech, &eps);
    if (rc)
        return rc;
    dt_reply r;
    assert_int_equal(dt_report(c, id, id_len, mech, eps, 1, 1, 0, &r), 0);
    rc = dt_is_ack(&r, NULL)                           ? 0
         : r.kind == 1 && dt_is_error(&r, 1, LDPB_EIO) ? 1000 + LDPB_EIO
                                                       : -1;
    dt_reply_clear(&r);
    return rc;
}

/* Writes `bytes` of filler (or until the disk is full when bytes is 0). */
static void fill(const char *path, size_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    static char block[4096];
    memset(block, 0xab, sizeof block);
    size_t done = 0;
    while (bytes == 0 || done < bytes) {
        size_t want = bytes && bytes - done < sizeof block ? bytes - done : sizeof block;
        ssize_t w = write(fd, block, want);
        if (w <= 0) {
            assert_true(bytes == 0 && errno == ENOSPC);
            break;
        }
        done += (size_t)w;
    }
    close(fd);
}

static uint64_t free_bytes(const char *dir)
{
    struct statvfs vs;
    assert_int_equal(statvfs(dir, &vs), 0);
    return (uint64_t)vs.f_bavail * vs.f_frsize;
}

/* Polls round trips (every 100 ms, up to 30 s, more in a sanitizer build: a fixed count of polls
 * lasted 5 s, which a loaded machine can spend before the daemon's next look at the disk) until
 * one returns `want`. */
static int wait_for(dt_client *c, int want)
{
    int rc = -2;
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         rc != want && ldpb_test_now_ms() < end;) {
        rc = round_trip(c);
        if (rc != want)
            sleep_ms(100);
    }
    return rc;
}

static void start(dt_daemon *d, const char *min_free)
{
    char extra[256];
    snprintf(extra, sizeof extra,
             "arms = 3\nassignment_ttl_s = 600\nlog_level = warn\nmin_free_mb = %s\n"
             "error_log_interval_s = 3600\n",
             min_free);
    assert_int_equal(dt_daemon_write_config(d, extra), 0);
    assert_int_equal(dt_daemon_start(d, NULL, NULL), 0);
}

static void test_full_tmpfs(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(mkdir(d.state_dir, 0700), 0);
    assert_int_equal(mount("tmpfs", d.state_dir, "tmpfs", 0, "size=2m,mode=0700"), 0);
    char filler[256];
    snprintf(filler, sizeof filler, "%s/filler", d.state_dir);

    /* 1. ENOSPC: commits fail, assignments stop, and resume once space is back. */
    start(&d, "0");
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(round_trip(&c), 0);
    fill(filler, 0);
    print_message("tmpfs full: %llu bytes free\n", (unsigned long long)free_bytes(d.state_dir));
    /* the first reports fail to commit; from then on no assignment is issued */
    assert_int_equal(wait_for(&c, LDPB_EBUSY), LDPB_EBUSY);
    for (int i = 0; i < 5; i++)
        assert_int_equal(round_trip(&c), LDPB_EBUSY);
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(wait_for(&c, 0), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(round_trip(&c), 0);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);

    /* 2. min_free_mb: below 1 MiB free no assignment is issued (commits still work). */
    start(&d, "1");
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(round_trip(&c), 0);
    uint64_t avail = free_bytes(d.state_dir);
    assert_true(avail > (1u << 20));
    fill(filler, (size_t)(avail - (1u << 20) + (256u << 10))); /* leaves 768 KiB */
    assert_int_equal(wait_for(&c, LDPB_EBUSY), LDPB_EBUSY);
    assert_int_equal(unlink(filler), 0);
    assert_int_equal(wait_for(&c, 0), 0);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    assert_int_equal(umount(d.state_dir), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    /* A private mount namespace: the tmpfs is gone when this process and its daemons are. */
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        fprintf(stderr, "test_daemon_full_disk: cannot make a private mount namespace: %s\n",
                strerror(errno));
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_tmpfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
