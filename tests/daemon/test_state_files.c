/* The real ldpb-aggregator's files and side doors: --export-csv writes its file whole (mode
 * 0600) or not at all and never writes the state; --backup copies a live daemon's state into a
 * database a new daemon starts from with the same counts; /metrics answers beside idle and
 * half-sent connections; the assignments count after kill -9 is a lower bound. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <sqlite3.h>

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
/* Opens *cb on daemon d and returns the reports it serves, which its arms' pulls must add up to. */
static uint64_t served_reports(dt_daemon *d, dt_client *cb)
{
    assert_int_equal(dt_client_open(cb, d->ipc_url, d->server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0, sum = 0;
    assert_int_equal(dt_status(cb, pulls, K, &reports), K);
    for (int a = 0; a < K; a++)
        sum += pulls[a];
    assert_int_equal(sum, reports);
    return reports;
}

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
    uint64_t pulls[K], reports = served_reports(&b, &cb);
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

/* ---- --backup of a state with row shards (docs/aggregator.md, "Backup") ---------------------- */

static const char sharded[] = "arms = 3\nassignment_ttl_s = 600\nlog_level = warn\n"
                              "min_free_mb = 0\nrow_shards = 4\n";

/* A report as sent, to send again after a restore. */
typedef struct sent {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    int mech;
    double eps;
} sent;

#define SENT_MAX 20000

typedef struct rec_load {
    dt_daemon *d;
    atomic_int stop;
    atomic_int acked;
    sent *recs; /* the acked reports, [0, acked) */
} rec_load;

/* Assign + report once; the report into *out when acked. 1 if acked. */
static int report_rec(dt_client *c, sent *out)
{
    sent r;
    if (dt_assign(c, &r.arm, &r.mech, &r.eps, r.id, &r.id_len) != 0)
        return 0;
    dt_reply rep;
    int ok = dt_report(c, r.id, r.id_len, r.mech, r.eps, 1, r.arm & 1, 0, &rep) == 0 &&
             dt_is_ack(&rep, NULL);
    dt_reply_clear(&rep);
    if (ok)
        *out = r;
    return ok;
}

static void *rec_load_main(void *p)
{
    rec_load *a = p;
    dt_client c;
    if (dt_client_open(&c, a->d->ipc_url, a->d->server.pk, 5000) != 0)
        return NULL;
    while (!atomic_load(&a->stop) && atomic_load(&a->acked) < SENT_MAX) {
        int n = atomic_load(&a->acked);
        if (report_rec(&c, &a->recs[n]))
            atomic_store(&a->acked, n + 1);
    }
    dt_client_close(&c);
    return NULL;
}

/* A second daemon for the restore, with the first one's key (its assignment ids then verify) and
 * `conf`; its state_dir created, empty. */
static void restore_target(dt_daemon *b, const dt_daemon *d, const char *conf)
{
    assert_int_equal(dt_daemon_init(b), 0);
    snprintf(b->key, sizeof b->key, "%s", d->key);
    b->server = d->server;
    assert_int_equal(mkdir(b->state_dir, 0700), 0);
    assert_int_equal(dt_daemon_write_config(b, conf), 0);
}

static int export_to(const dt_daemon *d, const char *target)
{
    const char *args[] = {"--export-csv", target, "--state-dir", d->state_dir, NULL};
    char err[2048];
    int rc = dt_daemon_run(d, args, err, sizeof err);
    if (rc)
        print_message("export: %s\n", err);
    return rc;
}

static int backup_to(const dt_daemon *d, const char *dest, char *err, size_t cap)
{
    const char *args[] = {"--backup", dest, "--state-dir", d->state_dir, NULL};
    return dt_daemon_run(d, args, err, cap);
}

/* A sharded state (row_shards = 4) backed up at rest: one file of the unsharded layout (0600,
 * nothing left beside it) that restores as aggregator.db with exactly the live daemon's counts
 * per arm and an export byte for byte the live one's. The restored state has one database: a
 * start with row_shards = 4 is refused (exit 2), one without starts. Before this, --backup
 * refused every sharded state (exit 1). */
static void test_backup_shards_at_rest(void **state)
{
    (void)state;
    dt_daemon d, b;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, sharded), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    char path[300];
    snprintf(path, sizeof path, "%s/aggregator-rows-3.db", d.state_dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(report_n(&c, 60), 60);
    /* assignments never reported: decision rows without a report, exported too */
    for (int i = 0; i < 5; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        assert_int_equal(dt_assign(&c, &arm, &mech, &eps, id, &id_len), 0);
    }
    usleep(500000); /* a lone decision is committed 50 ms after it was queued */
    uint64_t live[K], live_reports = 0;
    assert_int_equal(dt_status(&c, live, K, &live_reports), K);
    assert_int_equal(live_reports, 60);
    char live_csv[256], back_csv[256];
    snprintf(live_csv, sizeof live_csv, "%s/live.csv", d.dir);
    assert_int_equal(export_to(&d, live_csv), 0);

    restore_target(&b, &d, sharded);
    char dest[256], err[2048];
    snprintf(dest, sizeof dest, "%s/aggregator.db", b.state_dir);
    int rc = backup_to(&d, dest, err, sizeof err);
    if (rc)
        print_message("backup: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(stat(dest, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_entries(b.state_dir), 1);

    /* the restored state keeps its rows in one database: row_shards = 4 is refused */
    int status = 0;
    assert_int_equal(dt_daemon_start(&b, NULL, &status), -1);
    assert_int_equal(status, 2);
    size_t len = 0;
    char *log = slurp(b.log, &len);
    assert_non_null(log);
    assert_non_null(strstr(log, "the number is fixed when a state is created"));
    free(log);
    snprintf(path, sizeof path, "%s/aggregator-rows-0.db", b.state_dir);
    assert_int_not_equal(stat(path, &st), 0);

    assert_int_equal(dt_daemon_write_config(&b, extra), 0);
    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    dt_client cb;
    assert_int_equal(dt_client_open(&cb, b.ipc_url, b.server.pk, 5000), 0);
    uint64_t pulls[K], reports = 0;
    assert_int_equal(dt_status(&cb, pulls, K, &reports), K);
    assert_int_equal(reports, live_reports);
    for (int a = 0; a < K; a++)
        assert_int_equal(pulls[a], live[a]);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    snprintf(back_csv, sizeof back_csv, "%s/restored.csv", b.dir);
    assert_int_equal(export_to(&b, back_csv), 0);
    size_t l0 = 0, l1 = 0;
    char *a0 = slurp(live_csv, &l0), *a1 = slurp(back_csv, &l1);
    int lines = 0;
    for (size_t i = 0; i < l0; i++)
        lines += a0[i] == '\n';
    assert_int_equal(lines, 1 + 60 + 5);
    assert_int_equal(l0, l1);
    assert_memory_equal(a0, a1, l0);
    free(a0);
    free(a1);

    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&d);
}

/* A sharded state backed up while a client keeps reporting restores to a consistent state (the
 * start checks every experiment's count against its rows) with the counts of some moment: at
 * least the reports acked before the backup began, at most the live count. Then every acked
 * report sent again to the restored daemon: each is acked, those the backup counted as
 * duplicates (exactly as many as it counted: none counted that was not acked), and afterwards
 * the counts per arm are the live daemon's: nothing lost, nothing counted twice. */
static void test_backup_shards_live(void **state)
{
    (void)state;
    dt_daemon d, b;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, sharded), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    sent *recs = calloc(SENT_MAX, sizeof *recs);
    assert_non_null(recs);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    int before = 0;
    for (int i = 0; i < 30; i++)
        before += report_rec(&c, &recs[before]);
    assert_int_equal(before, 30);

    rec_load la = {&d, 0, 0, recs + before};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, rec_load_main, &la), 0);
    for (int i = 0; i < 3000 && atomic_load(&la.acked) < 20; i++)
        usleep(10000);
    int acked_at_start = atomic_load(&la.acked);
    restore_target(&b, &d, extra);
    char dest[256], err[2048];
    snprintf(dest, sizeof dest, "%s/aggregator.db", b.state_dir);
    int rc = backup_to(&d, dest, err, sizeof err);
    int acked_at_end = atomic_load(&la.acked);
    if (rc)
        print_message("backup: %s\n", err);
    assert_int_equal(rc, 0);
    /* more load after the backup: reports the backup cannot hold */
    for (int i = 0; i < 3000 && atomic_load(&la.acked) < acked_at_end + 20; i++)
        usleep(10000);
    atomic_store(&la.stop, 1);
    pthread_join(th, NULL);
    int total = before + atomic_load(&la.acked);
    print_message("sharded backup under load: acked %d before it, %d while it ran, %d in all\n",
                  before + acked_at_start, acked_at_end - acked_at_start, total);
    uint64_t live[K], live_reports = 0;
    assert_int_equal(dt_status(&c, live, K, &live_reports), K);
    assert_int_equal(live_reports, (uint64_t)total);
    assert_int_equal(count_entries(b.state_dir), 1);

    assert_int_equal(dt_daemon_start(&b, NULL, NULL), 0);
    dt_client cb;
    uint64_t pulls[K], reports = served_reports(&b, &cb);
    assert_true(reports >= (uint64_t)(before + acked_at_start));
    assert_true(reports <= (uint64_t)(before + acked_at_end));
    print_message("restored: %" PRIu64 " reports\n", reports);

    int dups = 0;
    for (int i = 0; i < total; i++) {
        dt_reply r;
        int dup = 0;
        assert_int_equal(dt_report(&cb, recs[i].id, recs[i].id_len, recs[i].mech, recs[i].eps, 1,
                                   recs[i].arm & 1, 0, &r),
                         0);
        assert_true(dt_is_ack(&r, &dup));
        dups += dup;
        dt_reply_clear(&r);
    }
    assert_int_equal((uint64_t)dups, reports);
    assert_int_equal(dt_status(&cb, pulls, K, &reports), K);
    assert_int_equal(reports, live_reports);
    for (int a = 0; a < K; a++)
        assert_int_equal(pulls[a], live[a]);
    dt_client_close(&cb);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    free(recs);
    dt_daemon_cleanup(&b);
    dt_daemon_cleanup(&d);
}

static void move(const char *dir, const char *from, const char *to)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/%s", dir, from);
    snprintf(b, sizeof b, "%s/%s", dir, to);
    assert_int_equal(rename(a, b), 0);
}

/* A failed backup of a sharded state leaves nothing where the target would be: two shard files
 * swapped (each names its place) and a shard file missing, both exit 1. With the files back in
 * place the same backup succeeds; a row of a shard planted in aggregator.db too fails it while
 * the copy is being written, exit 1, and nothing is left either. */
static void test_backup_shards_failed(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, sharded), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(report_n(&c, 20), 20);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);

    char out_dir[256], dest[300], err[2048];
    snprintf(out_dir, sizeof out_dir, "%s/out", d.dir);
    assert_int_equal(mkdir(out_dir, 0700), 0);
    snprintf(dest, sizeof dest, "%s/backup.db", out_dir);

    move(d.state_dir, "aggregator-rows-1.db", "swap.db");
    move(d.state_dir, "aggregator-rows-2.db", "aggregator-rows-1.db");
    move(d.state_dir, "swap.db", "aggregator-rows-2.db");
    assert_int_equal(backup_to(&d, dest, err, sizeof err), 1);
    print_message("swapped: %s", err);
    assert_non_null(strstr(err, "holds rows database 2 of 4, expected 1 of 4"));
    assert_int_equal(count_entries(out_dir), 0);
    move(d.state_dir, "aggregator-rows-1.db", "swap.db");
    move(d.state_dir, "aggregator-rows-2.db", "aggregator-rows-1.db");
    move(d.state_dir, "swap.db", "aggregator-rows-2.db");

    move(d.state_dir, "aggregator-rows-3.db", "away.db");
    assert_int_equal(backup_to(&d, dest, err, sizeof err), 1);
    print_message("missing: %s", err);
    assert_non_null(strstr(err, "aggregator-rows-3.db: missing"));
    assert_int_equal(count_entries(out_dir), 0);
    move(d.state_dir, "away.db", "aggregator-rows-3.db");

    assert_int_equal(backup_to(&d, dest, err, sizeof err), 0);
    assert_int_equal(count_entries(out_dir), 1);
    assert_int_equal(unlink(dest), 0);

    /* a failure while the shards' rows go into the copy (one of them planted in aggregator.db
     * too): the temporary file and its journal go with it */
    char db_path[300], shard0[300];
    snprintf(db_path, sizeof db_path, "%s/aggregator.db", d.state_dir);
    snprintf(shard0, sizeof shard0, "%s/aggregator-rows-0.db", d.state_dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS r0", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, shard0, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO main.reports SELECT assignment_id, experiment, arm,"
                                  " mechanism, epsilon, propensity, policy_version, value,"
                                  " expires_at_ms, reported_at_ms FROM r0.reports LIMIT 1",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_close(db);
    assert_int_equal(backup_to(&d, dest, err, sizeof err), 1);
    print_message("planted: %s", err);
    assert_non_null(strstr(err, "copying the reports"));
    assert_int_equal(count_entries(out_dir), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_failure_leaves_nothing),
        cmocka_unit_test(test_export_reads_only),
        cmocka_unit_test(test_backup_live),
        cmocka_unit_test(test_backup_shards_at_rest),
        cmocka_unit_test(test_backup_shards_live),
        cmocka_unit_test(test_backup_shards_failed),
        cmocka_unit_test(test_metrics_not_starved),
        cmocka_unit_test(test_assignments_count_after_kill),
        cmocka_unit_test(test_failed_start_leaves_no_state),
        cmocka_unit_test(test_start_below_min_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
