/* The on-disk replay log (aggregator/daemon/nonce_log.h): what one run accepted is refused by
 * the next while its time is within the window, and only then; records of another state or
 * secret key never match; a torn last record is cut off and later records stay aligned; the
 * loaded set is bounded with a floor; segments rotate at 2 x window and the previous one is kept
 * for as long as its records are needed. Also prints the CPU time per accepted request. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "ldpb/wire.h"
#include "nonce_log.h"
#include "state_id.h"

#define W  10000u /* window, ms */
#define T0 1800000000000ull

typedef struct fx {
    char dir[64];
    uint8_t sk[LDPB_KEY_BYTES], sid[AGG_STATE_ID_BYTES];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-test-nlog-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    memset(f->sk, 7, sizeof f->sk);
    memset(f->sid, 3, sizeof f->sid);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static agg_nonce_log *open_at(const fx *f, const uint8_t *sid, size_t max, uint64_t now)
{
    agg_nonce_log *l = NULL;
    char msg[256] = "";
    ldpb_err e = agg_nonce_log_open(&l, f->dir, f->sk, sid, W, max, now, msg, sizeof msg);
    if (e)
        fail_msg("open: %s (%s)", ldpb_strerror(e), msg);
    return l;
}

static void nonce_at(uint8_t n[LDPB_NONCE_BYTES], uint64_t t, uint8_t tag)
{
    memset(n, tag, LDPB_NONCE_BYTES);
    for (int i = 0; i < 8; i++)
        n[i] = (uint8_t)(t >> (8 * i));
    n[8] = 0;
}

static ldpb_err accept_(agg_nonce_log *l, uint8_t pk_byte, uint64_t t, uint8_t tag, uint64_t now)
{
    uint8_t pk[LDPB_KEY_BYTES], n[LDPB_NONCE_BYTES];
    char detail[LDPB_DETAIL_BYTES];
    memset(pk, pk_byte, sizeof pk);
    nonce_at(n, t, tag);
    return agg_nonce_log_accept(l, pk, n, now, detail);
}

static void test_survives_restart(void **state)
{
    fx *f = *state;
    agg_nonce_log *l = open_at(f, f->sid, 1000, T0);
    assert_int_equal(agg_nonce_log_loaded(l), 0);
    assert_int_equal(accept_(l, 1, T0, 0xa, T0), LDPB_OK);
    assert_int_equal(accept_(l, 2, T0 + W, 0xb, T0 + 1), LDPB_OK); /* a client ahead by W */
    agg_nonce_log_close(l); /* as after kill -9: the records were written, not synced by us */

    l = open_at(f, f->sid, 1000, T0 + 5);
    assert_int_equal(agg_nonce_log_loaded(l), 2);
    assert_int_equal(accept_(l, 1, T0, 0xa, T0 + 5), LDPB_EREPLAY);
    assert_int_equal(accept_(l, 2, T0 + W, 0xb, T0 + 5), LDPB_EREPLAY);
    assert_int_equal(accept_(l, 1, T0, 0xc, T0 + 5), LDPB_OK); /* another nonce */
    assert_int_equal(accept_(l, 3, T0, 0xa, T0 + 5), LDPB_OK); /* another client */
    agg_nonce_log_close(l);

    /* the second restart still holds the first run's records and the second's */
    l = open_at(f, f->sid, 1000, T0 + W);
    assert_int_equal(agg_nonce_log_loaded(l), 4);
    assert_int_equal(accept_(l, 1, T0, 0xc, T0 + W), LDPB_EREPLAY);
    agg_nonce_log_close(l);

    /* past its time a record is not loaded (the window check refuses such a frame anyway) */
    l = open_at(f, f->sid, 1000, T0 + W + 1);
    assert_int_equal(agg_nonce_log_loaded(l), 1); /* only the one ahead by W */
    assert_int_equal(accept_(l, 2, T0 + W, 0xb, T0 + W + 1), LDPB_EREPLAY);
    agg_nonce_log_close(l);

    /* another state (or another secret key) never matches */
    uint8_t other[AGG_STATE_ID_BYTES];
    memset(other, 4, sizeof other);
    l = open_at(f, other, 1000, T0 + 5);
    assert_int_equal(accept_(l, 2, T0 + W, 0xb, T0 + 5), LDPB_OK);
    agg_nonce_log_close(l);
}

static void test_torn_record_and_modes(void **state)
{
    fx *f = *state;
    agg_nonce_log *l = open_at(f, f->sid, 1000, T0);
    assert_int_equal(accept_(l, 1, T0, 1, T0), LDPB_OK);
    agg_nonce_log_close(l);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", f->dir, AGG_NONCE_LOG_FILE);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, AGG_NONCE_LOG_HEADER + AGG_NONCE_LOG_RECORD);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "garbage", 7), 7); /* a machine crash in the middle of a write */
    close(fd);
    l = open_at(f, f->sid, 1000, T0 + 1);
    assert_int_equal(agg_nonce_log_loaded(l), 1);
    assert_int_equal(accept_(l, 2, T0, 2, T0 + 1), LDPB_OK);
    agg_nonce_log_close(l);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, AGG_NONCE_LOG_HEADER + 2 * AGG_NONCE_LOG_RECORD);
    l = open_at(f, f->sid, 1000, T0 + 2);
    assert_int_equal(agg_nonce_log_loaded(l), 2);
    assert_int_equal(accept_(l, 1, T0, 1, T0 + 2), LDPB_EREPLAY);
    assert_int_equal(accept_(l, 2, T0, 2, T0 + 2), LDPB_EREPLAY);
    agg_nonce_log_close(l);
}

/* Loading at most 2 records keeps the newest two; the older time becomes a floor. */
static void test_bounded_with_floor(void **state)
{
    fx *f = *state;
    agg_nonce_log *l = open_at(f, f->sid, 2, T0);
    assert_int_equal(accept_(l, 1, T0 + 1, 1, T0), LDPB_OK);
    assert_int_equal(accept_(l, 1, T0 + 2, 2, T0), LDPB_OK);
    assert_int_equal(accept_(l, 1, T0 + 3, 3, T0), LDPB_OK);
    agg_nonce_log_close(l);
    l = open_at(f, f->sid, 2, T0 + 10);
    assert_int_equal(agg_nonce_log_loaded(l), 2);
    assert_int_equal(accept_(l, 1, T0 + 1, 1, T0 + 10), LDPB_EREPLAY); /* the floor */
    assert_int_equal(accept_(l, 9, T0 + 1, 9, T0 + 10), LDPB_EREPLAY); /* at the floor: refused */
    assert_int_equal(accept_(l, 1, T0 + 3, 3, T0 + 10), LDPB_EREPLAY);
    assert_int_equal(accept_(l, 9, T0 + 2, 9, T0 + 10), LDPB_OK);
    agg_nonce_log_close(l);
}

/* The segment rotates once it is 2 x W old; the previous segment's records are still loaded. */
static void test_rotation(void **state)
{
    fx *f = *state;
    char cur[128], old[128];
    snprintf(cur, sizeof cur, "%s/%s", f->dir, AGG_NONCE_LOG_FILE);
    snprintf(old, sizeof old, "%s/%s", f->dir, AGG_NONCE_LOG_OLD_FILE);
    agg_nonce_log *l = open_at(f, f->sid, 1000, T0);
    assert_int_equal(accept_(l, 1, T0 + 2 * W - 1 + W, 1, T0 + 2 * W - 1), LDPB_OK);
    assert_int_equal(access(old, F_OK), -1);
    assert_int_equal(accept_(l, 2, T0 + 2 * W, 2, T0 + 2 * W), LDPB_OK); /* rotates first */
    assert_int_equal(access(old, F_OK), 0);
    agg_nonce_log_close(l);
    struct stat st;
    assert_int_equal(stat(cur, &st), 0);
    assert_int_equal(st.st_size, AGG_NONCE_LOG_HEADER + AGG_NONCE_LOG_RECORD);
    /* the old segment's record (time T0 + 3W - 1) is needed until T0 + 4W - 1, the current
     * one's (T0 + 2W) only until T0 + 3W */
    l = open_at(f, f->sid, 1000, T0 + 4 * W - 1);
    assert_int_equal(agg_nonce_log_loaded(l), 1);
    assert_int_equal(accept_(l, 1, T0 + 3 * W - 1, 1, T0 + 4 * W - 1), LDPB_EREPLAY);
    /* at T0 + 4W the current segment is 2W old: it rotates, and the old one, no longer needed,
     * goes */
    assert_int_equal(accept_(l, 3, T0 + 4 * W, 3, T0 + 4 * W), LDPB_OK);
    agg_nonce_log_close(l);
    l = open_at(f, f->sid, 1000, T0 + 4 * W);
    assert_int_equal(agg_nonce_log_loaded(l), 1);
    assert_int_equal(accept_(l, 3, T0 + 4 * W, 3, T0 + 4 * W), LDPB_EREPLAY);
    agg_nonce_log_close(l);
}

/* A FIFO (or anything but a regular file) at the log's name is refused at once: opening it for
 * reading would otherwise block the daemon's start forever. */
static void test_fifo_refused(void **state)
{
    fx *f = *state;
    char path[128], msg[256] = "";
    snprintf(path, sizeof path, "%s/" AGG_NONCE_LOG_FILE, f->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(20); /* the old code blocks in open(2): fail by the alarm rather than hang the suite */
    agg_nonce_log *l = NULL;
    ldpb_err e = agg_nonce_log_open(&l, f->dir, f->sk, f->sid, W, 100, T0, msg, sizeof msg);
    alarm(0);
    assert_int_equal(e, LDPB_EIO);
    assert_null(l);
    assert_non_null(strstr(msg, "not a regular file"));
}

static void test_cpu_per_accept(void **state)
{
    fx *f = *state;
    agg_nonce_log *l = open_at(f, f->sid, 1000, T0);
    enum { N = 200000 };
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (uint32_t i = 0; i < N; i++) {
        uint8_t pk[LDPB_KEY_BYTES], n[LDPB_NONCE_BYTES];
        char detail[LDPB_DETAIL_BYTES];
        memset(pk, 1, sizeof pk);
        nonce_at(n, T0, 0);
        memcpy(n + 9, &i, sizeof i);
        assert_int_equal(agg_nonce_log_accept(l, pk, n, T0, detail), LDPB_OK);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / N;
    print_message("agg_nonce_log_accept: %.2f us of CPU per accepted request (%d requests, this "
                  "process; the machine is shared)\n",
                  us, N);
    agg_nonce_log_close(l);
    l = open_at(f, f->sid, 1u << 20, T0 + 1);
    assert_int_equal(agg_nonce_log_loaded(l), N);
    agg_nonce_log_close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_survives_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_record_and_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded_with_floor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_per_accept, setup, teardown),
    };
    return cmocka_run_group_tests_name("nonce_log", tests, NULL, NULL);
}
