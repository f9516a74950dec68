/* Sequenced experiments on the PostgreSQL store (issue 19; docs/aggregator.md,
 * "Sequenced experiments"), end to end with the real ldpb-aggregator on the
 * fixture's throwaway PostgreSQL (label postgres). A central-DP experiment
 * (dp-ucb) is sequenced: the test itself plays the other node where one is
 * needed, through its own libpq sessions, holding or taking the experiment's
 * sequencer lock (AGG_SEQ_LOCK_NS, id) as a node would.
 *
 *   follower, takeover  the lock is held by another process: the daemon commits
 * its acked reports as unobserved rows; that process is killed with -9 under
 * load, the daemon takes the lock over (the time from the kill to the new
 * epoch's COMMIT is printed), observes every waiting row once, and every acked
 * report is counted exactly once. fenced out          the daemon is the
 * sequencer; its session is ended and another session takes the lock and bumps
 * the epoch under it (the test hook): the daemon's next transaction is refused
 * by the fence, the committed state is the one before (nothing it computed is
 * published), and it goes on as a follower.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "harness.h"
#include "ldpb/err.h"

#define LOCK_NS "1818522481" /* store_seq.h: AGG_SEQ_LOCK_NS */
#define CONF                                                                                       \
    "arms = 4\nmode = central\npolicy = dp-ucb\nhorizon = 1000000\nepsilon = "                     \
    "1\n"                                                                                          \
    "log_level = info\nmetrics = 127.0.0.1:%d\n"

/* The value of the metric line that starts with `name ` in GET /metrics; -1 if
 * absent. */
static double metric(int port, const char *name)
{
    static char buf[65536];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    assert_int_equal(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof buf && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fd);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(buf, key);
    return at ? strtod(at + strlen(key), NULL) : -1;
}

static int write_conf(dt_daemon *d)
{
    char conf[512];
    int port = dt_free_port();
    snprintf(conf, sizeof conf, CONF, port);
    assert_int_equal(dt_daemon_write_config(d, conf), 0);
    return port;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

static PGconn *db_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

/* One integer from `sql` (formatted); -1 for NULL or no row. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int64_t
db_int(PGconn *c, const char *fmt, ...)
{
    char sql[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
        PQclear(r);
        fail();
    }
    int64_t v =
        PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

/* The experiment's stored state as hex text (malloc'd). */
static char *db_state(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT encode(state, 'hex') || ':' || policy_version FROM experiments"
                            " WHERE name = 'default'");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), 1);
    char *s = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

/* A process of its own holding the sequencer lock of experiment 1 (as a
 * sequencer node's session does) until it is killed; returns its pid once the
 * lock is held. */
static pid_t hold_lock(const char *url)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(p[0]);
        PGconn *c = PQconnectdb(url);
        PGresult *r = PQexec(c, "SELECT pg_advisory_lock(" LOCK_NS ", 1)");
        char ok = PQresultStatus(r) == PGRES_TUPLES_OK ? 'y' : 'n';
        if (write(p[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    char ok = 0;
    assert_int_equal(read(p[0], &ok, 1), 1);
    close(p[0]);
    assert_int_equal(ok, 'y');
    return pid;
}

static int log_has(const dt_daemon *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* ---- a sender: assign + report in a loop, counting what was acked and what
 * failed ---------- */

typedef struct sender {
    const dt_daemon *d;
    atomic_int stop;
    uint64_t acked, failed, duplicates;
    pthread_t th;
} sender;

/* One report until it is acked (resent on a refusal, as a client does), or
 * `tries` failures. */
static int send_one(dt_client *c, uint64_t *failed, uint64_t *dups, int tries, atomic_int *stop)
{
    uint32_t arm;
    int mech;
    double eps;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    for (int t = 0; t < tries; t++) {
        if (dt_assign(c, &arm, &mech, &eps, id, &id_len) == 0)
            break;
        if (t + 1 == tries || (stop && atomic_load(stop)))
            return -1;
        sleep_ms(20);
    }
    for (int t = 0; t < tries; t++) {
        dt_reply r;
        int got = dt_report(c, id, id_len, mech, 0.0, 0, 0, (double)(arm + 1) / 5.0, &r);
        int dup = 0;
        int ok = got == 0 && dt_is_ack(&r, &dup);
        dt_reply_clear(&r);
        if (ok) {
            *dups += (uint64_t)dup;
            return 0;
        }
        (*failed)++;
        if (stop && atomic_load(stop))
            return -1;
        sleep_ms(20);
    }
    return -1;
}

static void *sender_main(void *arg)
{
    sender *sd = arg;
    dt_client c;
    if (dt_client_open(&c, sd->d->ipc_url, sd->d->server.pk, 2000) != 0)
        return NULL;
    while (!atomic_load(&sd->stop))
        if (send_one(&c, &sd->failed, &sd->duplicates, 100, &sd->stop) == 0)
            sd->acked++;
    dt_client_close(&c);
    return NULL;
}

static int start_daemon(dt_daemon *d)
{
    assert_int_equal(dt_daemon_init(d), 0);
    assert_true(d->store[0] != '\0'); /* a PostgreSQL test: the fixture's environment is set */
    int port = write_conf(d);
    assert_int_equal(dt_daemon_start(d, NULL, NULL), 0);
    return port;
}

/* The takeover's goal, 2 s; scaled in a sanitizer build, whose nodes run several times slower. */
#define TAKEOVER_US (2000000u * LDPB_TEST_SLOWDOWN)

/* Waits (up to 30 s, more in a sanitizer build) until no row of the experiment waits for its
 * sequencer. */
static void wait_observed(PGconn *db)
{
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         ldpb_test_now_ms() < end && db_int(db, "SELECT count(*) FROM reports WHERE NOT observed");)
        sleep_ms(10);
    assert_int_equal(db_int(db, "SELECT count(*) FROM reports WHERE NOT observed"), 0);
}

static void test_follower_takeover(void **state)
{
    (void)state;
    char url[512];
    assert_int_equal(dt_pg_database("seq_takeover", url, sizeof url), 0);
    /* the "other node" holds the lock before the daemon starts: the daemon is a
     * follower */
    pid_t holder = hold_lock(url);
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    snprintf(d.store, sizeof d.store, "%s", url);
    int mport = write_conf(&d);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    PGconn *db = db_connect(url);
    int64_t epoch0 = db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'");

    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t failed = 0, dups = 0;
    for (int i = 0; i < 50; i++)
        assert_int_equal(send_one(&c, &failed, &dups, 50, NULL), 0);
    dt_client_close(&c);
    /* acked after their COMMIT, left to the sequencer: durable, not yet counted
     * by its state */
    assert_int_equal(db_int(db, "SELECT count(*) FROM reports WHERE NOT observed"), 50);
    assert_int_equal(db_int(db, "SELECT reports FROM experiments WHERE name = 'default'"), 0);
    assert_true(log_has(&d, "another node is its sequencer"));

    /* under load, the sequencer's session dies with its process */
    sender sd = {.d = &d};
    assert_int_equal(pthread_create(&sd.th, NULL, sender_main, &sd), 0);
    sleep_ms(500);
    uint64_t t0 = now_us();
    kill(holder, SIGKILL);
    assert_int_equal(dt_wait_status(holder), 128 + SIGKILL);
    uint64_t t1 = 0;
    while (now_us() - t0 < 10000000u) {
        if (db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'") > epoch0) {
            t1 = now_us();
            break;
        }
        sleep_ms(2);
    }
    assert_true(t1 > 0);
    printf("takeover: the standby's new epoch committed %.1f ms after the "
           "sequencer's kill -9\n",
           (double)(t1 - t0) / 1000.0);
    assert_true(t1 - t0 <= TAKEOVER_US); /* the goal: <= 2 s */
    sleep_ms(700);
    atomic_store(&sd.stop, 1);
    pthread_join(sd.th, NULL);
    wait_observed(db);

    /* every acked report counted exactly once: rows, the state's counter, the
     * daemon's status */
    uint64_t acked = 50 + sd.acked;
    int64_t rows = db_int(db, "SELECT count(*) FROM reports");
    int64_t counted = db_int(db, "SELECT reports FROM experiments WHERE name = 'default'");
    printf("acked %" PRIu64 ", rows %" PRId64 ", counted by the state %" PRId64
           ", failed tries %" PRIu64 "\n",
           acked, rows, counted, sd.failed);
    assert_int_equal(rows, (int64_t)acked);
    assert_int_equal(counted, (int64_t)acked);
    assert_int_equal(db_int(db, "SELECT policy_version FROM experiments WHERE name = 'default'"),
                     (int64_t)acked);
    assert_true(log_has(&d, "took over as its sequencer"));
    assert_true(metric(mport, "ldpb_seq_takeovers_total") == 1.0);
    assert_true(metric(mport, "ldpb_seq_experiments{role=\"sequencer\"}") == 1.0);
    assert_true(metric(mport, "ldpb_seq_observed_deferred_total") >= 50.0);
    uint64_t reports = 0;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assert_true(dt_status(&c, NULL, 0, &reports) >= 0);
    dt_client_close(&c);
    assert_int_equal(reports, acked);
    PQfinish(db);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The daemon's backend pid that holds experiment 1's sequencer lock; -1 if
 * none. */
static int64_t sequencer_backend(PGconn *db)
{
    return db_int(db, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND "
                      "classid = " LOCK_NS " AND objid = 1 AND objsubid = 2 AND granted");
}

static void test_fenced_out(void **state)
{
    (void)state;
    dt_daemon d;
    int mport = start_daemon(&d);
    PGconn *db = db_connect(d.store);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    uint64_t failed = 0, dups = 0;
    for (int i = 0; i < 30; i++)
        assert_int_equal(send_one(&c, &failed, &dups, 50, NULL), 0);
    assert_int_equal(failed, 0);
    assert_int_equal(db_int(db, "SELECT reports FROM experiments WHERE name = 'default'"), 30);
    int64_t epoch = db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'");
    assert_true(epoch >= 1);
    char *before = db_state(db);

    /* The test hook: the daemon's session is ended and another session takes the
     * lock and bumps the epoch under it, as a standby does when it believes the
     * sequencer gone. */
    int64_t pid = sequencer_backend(db);
    assert_true(pid > 0);
    assert_int_equal(db_int(db, "SELECT pg_terminate_backend(%" PRId64 ")::int", pid), 1);
    PGconn *other = db_connect(d.store);
    int64_t got = 0;
    for (int i = 0; i < 500 && !got; i++) {
        got = db_int(other, "SELECT pg_try_advisory_lock(" LOCK_NS ", 1)::int");
        if (!got)
            sleep_ms(5);
    }
    assert_int_equal(got, 1);
    assert_int_equal(db_int(other, "UPDATE experiments SET seq_epoch = seq_epoch + 1 WHERE name ="
                                   " 'default' RETURNING seq_epoch"),
                     epoch + 1);

    /* the deposed sequencer's next transactions are refused; reports resent until
     * acked */
    for (int i = 0; i < 20; i++)
        assert_int_equal(send_one(&c, &failed, &dups, 100, NULL), 0);
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         ldpb_test_now_ms() < end && !log_has(&d, "fenced out as its sequencer");)
        sleep_ms(10);
    assert_true(log_has(&d, "fenced out as its sequencer"));
    assert_true(metric(mport, "ldpb_seq_fenced_total") >= 1.0);
    /* nothing it computed was published: the committed state is the one before
     * the bump, and the 20 reports wait, durable, for the sequencer */
    char *after = db_state(db);
    assert_string_equal(before, after);
    free(after);
    assert_int_equal(db_int(db, "SELECT count(*) FROM reports WHERE NOT observed"), 20);
    assert_int_equal(db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'"),
                     epoch + 1);

    /* the other session goes away: the daemon takes over again and counts the 20
     * once */
    PQfinish(other);
    wait_observed(db);
    assert_true(db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'") >=
                epoch + 2);
    assert_int_equal(db_int(db, "SELECT reports FROM experiments WHERE name = 'default'"), 50);
    assert_int_equal(db_int(db, "SELECT count(*) FROM reports"), 50);
    char *last = db_state(db);
    assert_string_not_equal(before, last);
    free(last);
    free(before);
    dt_client_close(&c);
    PQfinish(db);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* A second node on the same database: the same key (operator's job), its own
 * state_dir. */
static int start_second(dt_daemon *b, const dt_daemon *a)
{
    assert_int_equal(dt_daemon_init(b), 0);
    snprintf(b->store, sizeof b->store, "%s", a->store);
    b->server = a->server;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a->key, b->key);
    assert_int_equal(system(cmd), 0);
    int port = write_conf(b);
    assert_int_equal(dt_daemon_start(b, NULL, NULL), 0);
    return port;
}

/* Two real daemons on one database, one central experiment: reports through
 * both are counted once; the sequencer is killed with -9 under load and the
 * other takes over from the last committed state: acked <= counted <= acked +
 * failed, every row counted by the state once. */
static void test_two_nodes_kill9(void **state)
{
    (void)state;
    dt_daemon a, b;
    start_daemon(&a);
    PGconn *db = db_connect(a.store);
    int64_t epoch0 = db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'");
    int bport = start_second(&b, &a);
    assert_true(log_has(&a, "this node is its sequencer"));
    assert_true(log_has(&b, "another node is its sequencer"));
    sender sa = {.d = &a}, sb = {.d = &b};
    assert_int_equal(pthread_create(&sa.th, NULL, sender_main, &sa), 0);
    assert_int_equal(pthread_create(&sb.th, NULL, sender_main, &sb), 0);
    /* reports through both nodes, the follower's observed by the sequencer: 1.5 s of load, and
     * longer while none is observed yet (a slow machine) */
    sleep_ms(1500);
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         ldpb_test_now_ms() < end &&
         db_int(db, "SELECT reports FROM experiments WHERE name = 'default'") == 0;)
        sleep_ms(20);
    assert_true(db_int(db, "SELECT reports FROM experiments WHERE name = 'default'") > 0);
    uint64_t t0 = now_us();
    assert_int_equal(dt_daemon_signal_wait(&a, SIGKILL), 128 + SIGKILL);
    atomic_store(&sa.stop, 1);
    uint64_t t1 = 0;
    while (now_us() - t0 < 10000000u) {
        if (db_int(db, "SELECT seq_epoch FROM experiments WHERE name = 'default'") > epoch0) {
            t1 = now_us();
            break;
        }
        sleep_ms(2);
    }
    assert_true(t1 > 0);
    printf("takeover (two daemons): the standby's new epoch committed %.1f ms "
           "after the "
           "sequencer's kill -9\n",
           (double)(t1 - t0) / 1000.0);
    assert_true(t1 - t0 <= TAKEOVER_US);
    sleep_ms(700);
    atomic_store(&sb.stop, 1);
    pthread_join(sa.th, NULL);
    pthread_join(sb.th, NULL);
    wait_observed(db);
    uint64_t acked = sa.acked + sb.acked, failed = sa.failed + sb.failed;
    int64_t rows = db_int(db, "SELECT count(*) FROM reports");
    int64_t counted = db_int(db, "SELECT reports FROM experiments WHERE name = 'default'");
    printf("acked %" PRIu64 " (%" PRIu64 " through the sequencer), rows %" PRId64
           ", counted by the state %" PRId64 ", failed tries %" PRIu64 "\n",
           acked, sa.acked, rows, counted, failed);
    assert_true(rows >= (int64_t)acked);
    assert_true(rows <= (int64_t)(acked + failed));
    assert_int_equal(counted, rows);
    assert_true(log_has(&b, "took over as its sequencer"));
    assert_true(metric(bport, "ldpb_seq_takeovers_total") == 1.0);
    PQfinish(db);
    assert_int_equal(dt_daemon_signal_wait(&b, SIGTERM), 0);
    dt_daemon_cleanup(&a);
    dt_daemon_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follower_takeover),
        cmocka_unit_test(test_fenced_out),
        cmocka_unit_test(test_two_nodes_kill9),
    };
    return cmocka_run_group_tests_name("sequenced experiments", tests, NULL, NULL);
}
