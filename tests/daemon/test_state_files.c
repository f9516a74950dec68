/* The real ldpb-aggregator's files and side doors: --export-csv writes its file whole (mode
 * 0600) or not at all and never writes the state; --backup copies a live daemon's state into a
 * database a new daemon starts from with the same counts; /metrics answers beside idle and
 * half-sent connections; the assignments count after kill -9 is a lower bound. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "ldpb/err.h"

#define K 3

static const char extra[] = "arms = 3\nassignment_ttl_s = 600\nlog_level = warn\nmin_free_mb = 0\n";

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Assign + report `n` times; returns how many were acknowledged. */
static int report_n(dt_client *c, int n)
{
    int acked = 0;
    for (int i = 0; i < n; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        if (dt_assign(c, &arm, &mech, &eps, id, &id_len) != 0)
            continue;
        dt_reply r;
        if (dt_report(c, id, id_len, mech, eps, 1, arm & 1, 0, &r) == 0 && dt_is_ack(&r, NULL))
            acked++;
        dt_reply_clear(&r);
    }
    return acked;
}

/* The whole content of a file (malloc'd, NUL-terminated), *len its size; NULL if missing. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* A failed export leaves the target as it was and nothing beside it (the old code truncated
 * the target before it knew the state could be read). */
static void test_export_failure_leaves_nothing(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    char out_dir[256], target[300], db[256];
    snprintf(out_dir, sizeof out_dir, "%s/out", d.dir);
    assert_int_equal(mkdir(out_dir, 0700), 0);
    snprintf(target, sizeof target, "%s/log.csv", out_dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("previous export\n", f);
    fclose(f);
    /* a state_dir whose database is not one */
    assert_int_equal(mkdir(d.state_dir, 0700), 0);
    snprintf(db, sizeof db, "%s/aggregator.db", d.state_dir);
    f = fopen(db, "w");
    assert_non_null(f);
    fputs("this is not an SQLite database, it is text long enough to fill a header page......\n",
          f);
    fclose(f);
    const char *args[] = {"--export-csv", target, "--state-dir", d.state_dir, NULL};
    char err[2048];
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 1);
    print_message("export refused: %s", err);
    size_t len = 0;
    char *kept = slurp(target, &len);
    assert_non_null(kept);
    assert_string_equal(kept, "previous export\n");
    free(kept);
    assert_int_equal(count_entries(out_dir), 1);
    /* no state at all: the same */
    const char *args2[] = {"--export-csv", target, "--state-dir", out_dir, NULL};
    assert_int_equal(dt_daemon_run(&d, args2, err, sizeof err), 1);
    assert_int_equal(count_entries(out_dir), 1);
    dt_daemon_cleanup(&d);
}

/* Exporting a killed daemon's state (its last commits still in the -wal file) changes neither
 * the database nor the -wal (the old read-write connection checkpointed the WAL into the
 * database and deleted it on close), and the CSV is created 0600 under umask 022. */
static void test_export_reads_only(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(report_n(&c, 20), 20);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);

    char db[256], wal[260], target[256];
    snprintf(db, sizeof db, "%s/aggregator.db", d.state_dir);
    snprintf(wal, sizeof wal, "%s-wal", db);
    snprintf(target, sizeof target, "%s/log.csv", d.dir);
    struct stat db0, wal0, st;
    assert_int_equal(stat(db, &db0), 0);
    assert_int_equal(stat(wal, &wal0), 0);
    assert_true(wal0.st_size > 0);
    size_t db_len = 0, wal_len = 0, len = 0;
    char *db_bytes = slurp(db, &db_len), *wal_bytes = slurp(wal, &wal_len);

    mode_t old_mask = umask(022);
    const char *args[] = {"--export-csv", target, "--state-dir", d.state_dir, NULL};
    char err[2048];
    int rc = dt_daemon_run(&d, args, err, sizeof err);
    umask(old_mask);
    assert_int_equal(rc, 0);

    struct stat db1, wal1;
    assert_int_equal(stat(db, &db1), 0);
    assert_int_equal(stat(wal, &wal1), 0); /* the -wal is still there */
    assert_int_equal(db1.st_size, db0.st_size);
    assert_true(db1.st_mtim.tv_sec == db0.st_mtim.tv_sec &&
                db1.st_mtim.tv_nsec == db0.st_mtim.tv_nsec);
    char *db_after = slurp(db, &len);
    assert_int_equal(len, db_len);
    assert_memory_equal(db_after, db_bytes, len);
    free(db_after);
    char *wal_after = slurp(wal, &len);
    assert_int_equal(len, wal_len);
    assert_memory_equal(wal_after, wal_bytes, len);
    free(wal_after);
    free(db_bytes);
    free(wal_bytes);

    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *csv = slurp(target, &len);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += csv[i] == '\n';
    assert_int_equal(lines, 21); /* header + 20 reported decisions */
    free(csv);
    dt_daemon_cleanup(&d);
}

typedef struct load_arg {
    dt_daemon *d;
    atomic_int stop; /* set by the main thread while the load runs (a volatile int was a race) */
    int acked;       /* read after the join */
} load_arg;

static void *load_main(void *p)
{
    load_arg *a = p;
    dt_client c;
    if (dt_client_open(&c, a->d->ipc_url, a->d->server.pk, 5000) != 0)
        return NULL;
    while (!atomic_load(&a->stop))
        a->acked += report_n(&c, 1);
    dt_client_close(&c);
    return NULL;
}

/* --backup copies a running daemon's state, under load, into a database that a new daemon (same
 * configuration, another state_dir) starts from: consistent (the start checks the reports
 * against the policy state) and with the counts of some moment of the load. A second backup,
 * after the load, has exactly the live daemon's counts; an existing target is never replaced. */
static void test_backup_live(void **state)
{
    (void)state;
    dt_daemon d, b;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(report_n(&c, 30), 30);

    load_arg la = {&d, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, load_main, &la), 0);
    assert_int_equal(dt_daemon_init(&b), 0);
    assert_int_equal(mkdir(b.state_dir, 0700), 0);
    char dest[256];
    snprintf(dest, sizeof dest, "%s/aggregator.db", b.state_dir);
    mode_t old_mask = umask(022);
    const char *args[] = {"--backup", dest, "--state-dir", d.state_dir, NULL};
    char err[2048];
    int rc = dt_daemon_run(&d, args, err, sizeof err);
    umask(old_mask);
    if (rc)
        print_message("backup: %s\n", err);
    assert_int_equal(rc, 0);
    atomic_store(&la.stop, 1);
    pthread_join(th, NULL);
    uint64_t live[K], live_reports = 0;
    assert_int_equal(dt_status(&c, live, K, &live_reports), K);
    assert_int_equal(live_reports, 30 + (uint64_t)la.acked);
    print_message("backup under load: %d reports acked during the run\n", la.acked);
    struct stat st;
    assert_int_equal(stat(dest, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_entries(b.state_dir), 1); /* no temporary left */

    /* an existing target is refused and kept */
    size_t len0 = 0, len1 = 0;
    char *before = slurp(dest, &len0);
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 1);
    assert_non_null(strstr(err, "exists"));
    char *after = slurp(dest, &len1);
    assert_int_equal(len0, len1);
    assert_memory_equal(before, after, len0);
    free(before);
    free(after);
    assert_int_equal(count_entries(b.state_dir), 1);

    assert_int_equal(dt_daemon_write_config(&b, extra), 0);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    dt_client cb;
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0, sum = 0;
    assert_int_equal(dt_status(&cb, pulls, K, &reports), K);
    for (int a = 0; a < K; a++)
        sum += pulls[a];
    assert_int_equal(sum, reports);
    assert_true(reports >= 30 && reports <= live_reports);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);

    /* quiet: the same counts exactly */
    assert_int_equal(unlink(dest), 0);
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 0);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);
    assert_int_equal(dt_status(&cb, pulls, K, &reports), K);
    assert_int_equal(reports, live_reports);
    for (int a = 0; a < K; a++)
        assert_int_equal(pulls[a], live[a]);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&d);
}

static int connect_from(const char *src, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    if (src) {
        assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    }
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* GET /metrics with a deadline; returns the bytes read (0 when refused or nothing came). */
static size_t get_metrics(int port, char *buf, size_t cap, int timeout_ms)
{
    int fd = connect_from(NULL, port);
    if (fd < 0)
        return 0;
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    size_t len = 0;
    if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
        while (len + 1 < cap) {
            uint64_t now = now_ms();
            struct pollfd p = {fd, POLLIN, 0};
            if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
                break;
            ssize_t r = read(fd, buf + len, cap - 1 - len);
            if (r <= 0)
                break;
            len += (size_t)r;
        }
    }
    buf[len] = '\0';
    close(fd);
    return len;
}

/* Idle and half-sent connections (from another address, as an attacker's would be) do not keep
 * /metrics from answering: with the old fixed limit of 16 connections and a 10 s timeout, 40 of
 * them starved every scrape for 10 s. */
/* A scrape's bound: 2 s, 8 s in a sanitizer build; either is well short of the 10 s the idle
 * connections starved a scrape for, so the test still tells the fix from the bug. */
#define SCRAPE_MS (2000L * LDPB_TEST_SLOWDOWN)

static void test_metrics_not_starved(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    int mport = dt_free_port();
    char conf[512];
    snprintf(conf, sizeof conf, "%smetrics = 127.0.0.1:%d\n", extra, mport);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    char buf[16384];
    assert_true(get_metrics(mport, buf, sizeof buf, SCRAPE_MS) > 0);
    assert_non_null(strstr(buf, "200 OK"));

    enum { IDLE = 40 };
    int fds[IDLE];
    for (int i = 0; i < IDLE; i++) {
        fds[i] = connect_from("127.0.0.2", mport);
        if (fds[i] >= 0 && i % 2)
            assert_int_equal(write(fds[i], "GET /metr", 9), 9); /* half a request */
    }
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = now_ms();
        size_t n = get_metrics(mport, buf, sizeof buf, SCRAPE_MS);
        uint64_t took = now_ms() - t0;
        print_message("scrape beside %d idle connections: %zu bytes in %llu ms\n", IDLE, n,
                      (unsigned long long)took);
        assert_true(n > 0);
        assert_non_null(strstr(buf, "200 OK"));
        assert_non_null(strstr(buf, "\nldpb_assignments_paused 0\n"));
        assert_true(took < SCRAPE_MS);
    }
    for (int i = 0; i < IDLE; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The counters of a Status reply. */
static void status_counts(dt_client *c, uint64_t *reports, uint64_t *assignments)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_STATUS);
    *reports = r.env->status->reports;
    *assignments = r.env->status->assignments;
    dt_reply_clear(&r);
}

/* docs/aggregator.md: after kill -9 the assignments count is a lower bound: it keeps every
 * assignment committed with a transaction (and a decision rides in one within 50 ms), it never
 * counts more than were issued, and a SIGTERM keeps it exact. */
static void test_assignments_count_after_kill(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t reports = 0, a0 = 0, a1 = 0;
    status_counts(&c, &reports, &a0);
    assert_int_equal(report_n(&c, 10), 10); /* the reports commit the assignments with them */
    for (int i = 0; i < 25; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        assert_int_equal(dt_assign(&c, &arm, &mech, &eps, id, &id_len), 0);
    }
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    status_counts(&c, &reports, &a1);
    print_message("after kill -9: %llu of %llu assignments counted\n",
                  (unsigned long long)(a1 - a0), 35ULL);
    assert_int_equal(reports, 10);
    assert_true(a1 - a0 >= 10 && a1 - a0 <= 35);
    /* a drained stop keeps the count exact */
    assert_int_equal(report_n(&c, 5), 5);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t a2 = 0;
    status_counts(&c, &reports, &a2);
    assert_int_equal(a2, a1 + 5);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A listening TCP socket on the daemon's tcp:// port, so that its listen fails (address in use). */
static int occupy_port(const dt_daemon *d)
{
    int port = atoi(strrchr(d->tcp_url, ':') + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 1), 0);
    return fd;
}

static int path_exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return lstat(p, &sb) == 0;
}

/* A start whose listen fails removes what it created and only that: the state directory when it
 * made it, the database and lock files it made in an existing one, nothing of a state that was
 * there before. (The old daemon left the directory with a fresh database, tied to this
 * attempt's configuration.) */
static void test_failed_start_leaves_no_state(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    const char *args[] = {"--config", d.conf, NULL};
    char err[1024];
    int busy = occupy_port(&d);

    /* 1. No state_dir before: none after. */
    struct stat sb;
    assert_int_equal(lstat(d.state_dir, &sb), -1);
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 1);
    print_message("listen in use: %s", err);
    assert_non_null(strstr(err, "cannot bind"));
    assert_int_equal(lstat(d.state_dir, &sb), -1);

    /* 2. An existing state_dir with a file of the operator's: both stay, nothing is added. */
    assert_int_equal(mkdir(d.state_dir, 0700), 0);
    char keep[300];
    snprintf(keep, sizeof keep, "%s/README", d.state_dir);
    FILE *f = fopen(keep, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 1);
    assert_int_equal(count_entries(d.state_dir), 1);
    assert_true(path_exists(d.state_dir, "README"));

    /* 3. A state from an earlier run: kept as it was. */
    close(busy);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(report_n(&c, 3), 3);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    int n = count_entries(d.state_dir);
    busy = occupy_port(&d);
    assert_int_equal(dt_daemon_run(&d, args, err, sizeof err), 1);
    assert_int_equal(count_entries(d.state_dir), n);
    assert_true(path_exists(d.state_dir, "aggregator.db"));
    assert_true(path_exists(d.state_dir, "lock"));
    close(busy);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0;
    assert_int_equal(dt_status(&c, pulls, K, &reports), K);
    assert_int_equal(reports, 3);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A daemon (re)started with less than min_free_mb free issues no assignment from its first
 * request on (it starts paused and says why), rather than until its first commit fails. */
static void test_start_below_min_free(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    /* 1e9 MiB (about a pebibyte): more than any disk this runs on has free. */
    assert_int_equal(dt_daemon_write_config(&d, "arms = 3\nassignment_ttl_s = 600\n"
                                                "log_level = warn\nmin_free_mb = 1000000000\n"),
                     0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    for (int i = 0; i < 3; i++) {
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        env.assign_request = &ar;
        dt_reply r;
        assert_int_equal(dt_client_call(&c, &env, &r), 0);
        assert_true(dt_is_error(&r, 1, LDPB_EBUSY));
        dt_reply_clear(&r);
    }
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    size_t len = 0;
    char *log = slurp(d.log, &len);
    assert_non_null(log);
    assert_non_null(strstr(log, "below min_free_mb"));
    free(log);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_failure_leaves_nothing),
        cmocka_unit_test(test_export_reads_only),
        cmocka_unit_test(test_backup_live),
        cmocka_unit_test(test_metrics_not_starved),
        cmocka_unit_test(test_assignments_count_after_kill),
        cmocka_unit_test(test_failed_start_leaves_no_state),
        cmocka_unit_test(test_start_below_min_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
