/* The relay tier (docs/protocol.md section 11) against the real binaries: the client library
 * through `ldpb relay` to ldpb-aggregator; the relay killed with SIGKILL and restarted under load;
 * a malicious relay, played here by a REQ socket that speaks RELAY_BATCH directly to the
 * daemon, which drops, duplicates, reorders and alters inner frames; and a relay with two
 * upstreams failing over when the first is killed, and going back to it once it is restarted. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/relay.h"

#ifndef LDPB_TOOL_BIN
#error "LDPB_TOOL_BIN must name the ldpb binary"
#endif

#define K 3

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct relay_proc {
    pid_t pid;
    char url[256];
    char log[256];
} relay_proc;

/* Starts `ldpb relay` from `url` to the daemon's ipc URL and waits until a status request through
 * it is answered. */
static int relay_start(relay_proc *r, const dt_daemon *d, const char *batch)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
        int fd = open(r->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        execl(LDPB_TOOL_BIN, "ldpb", "relay", "--listen", r->url, "--upstream", d->ipc_url,
              "--batch", batch, "--wait-us", "2000", "--threads", "2", "--timeout-ms", "2000",
              (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
    /* a deadline, not a count of probes: each probe may wait its 200 ms out on a busy machine */
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN; ldpb_test_now_ms() < end;) {
        dt_client c;
        uint64_t pulls[K], reports = 0;
        int ok = dt_client_open(&c, r->url, d->server.pk, 200) == 0 &&
                 dt_status(&c, pulls, K, &reports) == K;
        dt_client_close(&c);
        if (ok)
            return 0;
        sleep_ms(50);
    }
    return -1;
}

static int relay_stop(relay_proc *r, int sig)
{
    kill(r->pid, sig);
    int st = dt_wait_status(r->pid);
    r->pid = 0;
    return st;
}

static uint64_t daemon_reports(const dt_daemon *d)
{
    dt_client c;
    uint64_t pulls[K], reports = 0;
    assert_int_equal(dt_client_open(&c, d->ipc_url, d->server.pk, 5000), 0);
    assert_int_equal(dt_status(&c, pulls, K, &reports), K);
    dt_client_close(&c);
    return reports;
}

static void setup_with(dt_daemon *d, relay_proc *r, const char *more)
{
    char conf[512];
    snprintf(conf, sizeof conf, "arms = 3\nassignment_ttl_s = 600\nlog_level = warn\n%s",
             more ? more : "");
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, conf), 0);
    assert_int_equal(dt_daemon_start(d, NULL, NULL), 0);
    memset(r, 0, sizeof *r);
    snprintf(r->url, sizeof r->url, "ipc://%s/relay.sock", d->dir);
    snprintf(r->log, sizeof r->log, "%s/relay.log", d->dir);
}

static void setup(dt_daemon *d, relay_proc *r)
{
    setup_with(d, r, NULL);
}

/* GET /metrics from 127.0.0.1:port into buf (NUL-terminated); returns the bytes read. */
static size_t get_metrics(int port, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {5, 0};
    size_t len = 0;
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
        connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1))
        for (ssize_t n; len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0;)
            len += (size_t)n;
    buf[len] = '\0';
    if (fd >= 0)
        close(fd);
    return len;
}

/* ---- the client library through a relay ---------------------------------------------------- */

#define DEV_THREADS 8
#define DEV_ROUNDS  60

typedef struct dev_arg {
    const char *url;
    const uint8_t *pk;
    int rounds;
    uint32_t timeout_ms, attempts;
    int persist;      /* retry a failed call until it succeeds (the relay may be down) */
    const int *stop;  /* persist: run rounds until *stop is set */
    int done, failed; /* done: read by the main thread while the device runs */
} dev_arg;

static void *dev_main(void *p)
{
    dev_arg *a = p;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = a->url;
    memcpy(o.server_public_key, a->pk, LDPB_KEY_BYTES);
    o.timeout_ms = a->timeout_ms;
    o.max_attempts = a->attempts;
    o.lifetime_budget = 1e6; /* a simulated device runs thousands of rounds */
    ldpb_client *c = NULL;
    if (ldpb_client_new(&c, &o) != LDPB_OK) {
        a->failed = 1;
        return NULL;
    }
    for (int i = 0; !a->failed; i++) {
        if (a->persist ? __atomic_load_n(a->stop, __ATOMIC_RELAXED) != 0 : i >= a->rounds)
            break;
        ldpb_assignment as;
        ldpb_err e;
        int tries = 0;
        while ((e = ldpb_client_assign(c, NULL, 0, &as)) != LDPB_OK && a->persist && ++tries < 50)
            ;
        if (e) {
            print_message("assign: %s\n", ldpb_client_errmsg(c));
            a->failed = 1;
            break;
        }
        /* the ledger keeps the value: every retry resends the same report */
        tries = 0;
        while ((e = ldpb_client_report(c, &as, (i % 4) / 3.0)) != LDPB_OK && a->persist &&
               ++tries < 50)
            ;
        if (e) {
            print_message("report: %s\n", ldpb_client_errmsg(c));
            a->failed = 1;
            break;
        }
        __atomic_add_fetch(&a->done, 1, __ATOMIC_RELAXED);
    }
    ldpb_client_free(c);
    return NULL;
}

static void run_devices(dev_arg *args, const char *url, const uint8_t *pk, const int *stop,
                        pthread_t *th)
{
    for (int i = 0; i < DEV_THREADS; i++) {
        int persist = stop != NULL;
        args[i] = (dev_arg){url,  pk, DEV_ROUNDS, persist ? 300 : 3000, persist ? 5 : 2, persist,
                            stop, 0,  0};
        assert_int_equal(pthread_create(&th[i], NULL, dev_main, &args[i]), 0);
    }
}

/* Reads "N batches, M frames forwarded" from the relay's last stop line. */
static void relay_counts(const relay_proc *r, unsigned long long *batches,
                         unsigned long long *frames)
{
    FILE *f = fopen(r->log, "r");
    assert_non_null(f);
    char line[512];
    *batches = *frames = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "stopped: ");
        if (p)
            assert_int_equal(sscanf(p, "stopped: %llu batches, %llu frames", batches, frames), 2);
    }
    fclose(f);
}

static void test_clients_through_relay(void **state)
{
    (void)state;
    dt_daemon d;
    relay_proc r;
    setup(&d, &r);
    assert_int_equal(relay_start(&r, &d, "64"), 0);
    uint64_t before = daemon_reports(&d);
    dev_arg args[DEV_THREADS];
    pthread_t th[DEV_THREADS];
    run_devices(args, r.url, d.server.pk, NULL, th);
    int done = 0;
    for (int i = 0; i < DEV_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_false(args[i].failed);
        done += args[i].done;
    }
    assert_int_equal(done, DEV_THREADS * DEV_ROUNDS);
    assert_int_equal(daemon_reports(&d) - before, (uint64_t)done);
    /* The frame limits behind a relay are those of a direct connection (docs/protocol.md
     * sections 1 and 11.1): the relay itself refuses a frame of 65537 to 262140 bytes, as the
     * aggregator would, and a longer one makes nanomsg drop the connection (no reply); a frame
     * too short to be one reaches the aggregator, which refuses it as it would directly. */
    const size_t sizes[] = {LDPB_FRAME_MAX + 100, LDPB_FRAME_MAX + 1,
                            4 * (size_t)LDPB_FRAME_MAX - 4, 4 * (size_t)LDPB_FRAME_MAX - 3, 5};
    uint8_t *junk = calloc(1, 4 * (size_t)LDPB_FRAME_MAX);
    assert_non_null(junk);
    memcpy(junk, "LDPB\x01\x01", 6);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        dt_client big;
        assert_int_equal(dt_client_open(&big, r.url, d.server.pk, i == 3 ? 1000 : 5000), 0);
        dt_reply rep;
        assert_int_equal(dt_client_raw(&big, junk, sizes[i], &rep), 0);
        if (i == 3) {
            assert_int_equal(rep.kind, 0);
        } else {
            if (!dt_is_error(&rep, 0, LDPB_EPROTO))
                fail_msg("%zu bytes through the relay: reply kind %d code %u", sizes[i], rep.kind,
                         rep.plain_code);
            char want[80];
            snprintf(want, sizeof want, "frame of %zu bytes exceeds the limit of 65536", sizes[i]);
            if (i < 3)
                assert_string_equal(rep.reason, want);
        }
        dt_reply_clear(&rep);
        dt_client_close(&big);
    }
    free(junk);
    assert_int_equal(relay_stop(&r, SIGTERM), 0);
    unsigned long long batches = 0, frames = 0;
    relay_counts(&r, &batches, &frames);
    print_message("%llu frames in %llu batches\n", frames, batches);
    /* every assign and report went through the relay, plus the readiness probe */
    assert_true(frames >= 2ull * (unsigned long long)done);
    /* eight devices at once: batches carry several frames */
    assert_true(batches < frames);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* The relay dies with SIGKILL twice under load and comes back on the same URL; the devices
 * retry (fresh nonces; a report resends its ledger value), and every round is counted once. */
static void test_relay_kill9_restart(void **state)
{
    (void)state;
    dt_daemon d;
    relay_proc r;
    setup(&d, &r);
    assert_int_equal(relay_start(&r, &d, "32"), 0);
    uint64_t before = daemon_reports(&d);
    dev_arg args[DEV_THREADS];
    pthread_t th[DEV_THREADS];
    int stop = 0;
    run_devices(args, r.url, d.server.pk, &stop, th);
    int last = 0;
    for (int k = 0; k < 2; k++) {
        /* 250 ms of load, and longer until a round went through this relay: on a slow machine
         * 250 ms may see none, and the kill would not be under load */
        sleep_ms(250);
        int so_far = 0;
        for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;; sleep_ms(10)) {
            so_far = 0;
            for (int i = 0; i < DEV_THREADS; i++)
                so_far += __atomic_load_n(&args[i].done, __ATOMIC_RELAXED);
            if (so_far > last || ldpb_test_now_ms() >= end)
                break;
        }
        print_message("kill -9 of the relay after %d rounds\n", so_far);
        assert_true(so_far > last); /* under load */
        last = so_far;
        assert_int_equal(relay_stop(&r, SIGKILL), 128 + SIGKILL);
        sleep_ms(200);
        assert_int_equal(relay_start(&r, &d, "32"), 0);
    }
    sleep_ms(250); /* load through the last relay too */
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    int done = 0;
    for (int i = 0; i < DEV_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_false(args[i].failed);
        done += args[i].done;
    }
    print_message("%d rounds in all\n", done);
    /* nothing lost, nothing counted twice */
    assert_int_equal(daemon_reports(&d) - before, (uint64_t)done);
    assert_int_equal(relay_stop(&r, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- a malicious relay ------------------------------------------------------------------------
 */

typedef struct mal {
    int sock; /* REQ to the daemon, as a relay's upstream */
    void *reply;
    ldpb_relay_entry got[LDPB_RELAY_ENTRIES_MAX];
    size_t n;
} mal;

/* Sends a batch and parses the RELAY_REPLY; returns 0 if one came back. */
static int mal_send(mal *m, const ldpb_relay_entry *e, size_t n)
{
    uint8_t *buf = malloc(LDPB_RELAY_BATCH_MAX);
    size_t len = 0;
    assert_non_null(buf);
    assert_int_equal(
        ldpb_relay_build(buf, LDPB_RELAY_BATCH_MAX, &len, LDPB_FRAME_RELAY_BATCH, e, n), LDPB_OK);
    if (m->reply)
        nn_freemsg(m->reply);
    m->reply = NULL;
    int rc = -1;
    if (nn_send(m->sock, buf, len, 0) == (int)len) {
        int rn = nn_recv(m->sock, &m->reply, NN_MSG, 0);
        if (rn > 0 && ldpb_relay_parse(m->reply, (size_t)rn, LDPB_FRAME_RELAY_REPLY, m->got,
                                       LDPB_RELAY_ENTRIES_MAX, &m->n, NULL) == LDPB_OK)
            rc = 0;
    }
    free(buf);
    return rc;
}

/* Opens inner reply `i` as client `c` would (dt_client_raw's rules). */
static void open_reply(dt_client *c, const ldpb_relay_entry *e, dt_reply *r)
{
    memset(r, 0, sizeof *r);
    ldpb_frame fr;
    r->kind = 3;
    if (ldpb_frame_parse(e->frame, e->len, &fr, NULL) != LDPB_OK)
        return;
    if (fr.kind == LDPB_FRAME_PLAIN_ERROR) {
        r->kind = 2;
        r->plain_code = fr.error_code;
        return;
    }
    uint8_t *pt = malloc(LDPB_PLAINTEXT_MAX);
    size_t n = 0;
    if (pt &&
        ldpb_seal_open(&fr, &c->key, LDPB_DIR_TO_CLIENT, c->kp.pk, pt, LDPB_PLAINTEXT_MAX, &n,
                       NULL) == LDPB_OK &&
        ldpb_envelope_decode(pt, n, &r->env, NULL) == LDPB_OK)
        r->kind = 1;
    free(pt);
}

/* A sealed report frame of client `c` for assignment `id` (bit 1). */
static size_t report_frame(dt_client *c, const uint8_t *id, size_t id_len, int mech, double eps,
                           uint8_t *frame)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = (Ldpb__V1__Mechanism)mech;
    rep.epsilon = eps;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    uint8_t pt[256];
    size_t len = 0;
    assert_int_equal(ldpb_envelope_encode(&env, pt, sizeof pt, &len, NULL), LDPB_OK);
    size_t flen = dt_client_seal(c, pt, len, frame, LDPB_FRAME_MAX);
    assert_true(flen > 0);
    return flen;
}

#define DEVS 4

static void test_malicious_relay(void **state)
{
    (void)state;
    dt_daemon d;
    relay_proc unused;
    setup(&d, &unused);
    uint64_t before = daemon_reports(&d);
    /* four devices with an assignment each, fetched directly */
    dt_client dev[DEVS];
    uint8_t ids[DEVS][LDPB_WIRE_ID_MAX];
    size_t id_len[DEVS];
    int mech[DEVS];
    double eps[DEVS];
    static uint8_t frames[8][LDPB_FRAME_MAX];
    size_t flen[8];
    for (int i = 0; i < DEVS; i++) {
        uint32_t arm;
        assert_int_equal(dt_client_open(&dev[i], d.ipc_url, d.server.pk, 5000), 0);
        assert_int_equal(dt_assign(&dev[i], &arm, &mech[i], &eps[i], ids[i], &id_len[i]), 0);
        flen[i] = report_frame(&dev[i], ids[i], id_len[i], mech[i], eps[i], frames[i]);
    }
    mal m = {.sock = nn_socket(AF_SP, NN_REQ)};
    int tmo = 5000, big = -1;
    assert_true(m.sock >= 0);
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo);
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &big, sizeof big);
    assert_true(nn_connect(m.sock, d.ipc_url) >= 0);

    /* Batch 1, reordered ids (the daemon copies them, never interprets them): device 0's report,
     * the same bytes again, device 1's report with one ciphertext byte flipped, device 1's
     * report claimed by device 2's key, and device 3's report dropped (never sent). */
    memcpy(frames[4], frames[1], flen[1]);
    frames[4][flen[1] - 1] ^= 0x01;
    memcpy(frames[5], frames[1], flen[1]);
    memcpy(frames[5] + LDPB_FRAME_HEADER_BYTES, dev[2].kp.pk, LDPB_KEY_BYTES);
    ldpb_relay_entry b1[4] = {
        {907, frames[0], flen[0]},
        {3, frames[0], flen[0]},
        {0xffffffffu, frames[4], flen[1]},
        {11, frames[5], flen[1]},
    };
    assert_int_equal(mal_send(&m, b1, 4), 0);
    assert_int_equal(m.n, 4);
    dt_reply r;
    int dup = -1;
    assert_int_equal(m.got[0].id, 907);
    open_reply(&dev[0], &m.got[0], &r);
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
    /* the copy in the same batch: a replay, answered sealed (the daemon authenticated it) */
    assert_int_equal(m.got[1].id, 3);
    open_reply(&dev[0], &m.got[1], &r);
    assert_true(dt_is_error(&r, 1, LDPB_EREPLAY));
    dt_reply_clear(&r);
    /* altered: the tag fails, nothing is opened */
    assert_int_equal(m.got[2].id, 0xffffffffu);
    open_reply(&dev[1], &m.got[2], &r);
    assert_true(dt_is_error(&r, 0, LDPB_ECRYPTO));
    dt_reply_clear(&r);
    /* re-attributed to another device: also unauthentic */
    assert_int_equal(m.got[3].id, 11);
    open_reply(&dev[2], &m.got[3], &r);
    assert_true(dt_is_error(&r, 0, LDPB_ECRYPTO));
    dt_reply_clear(&r);
    assert_int_equal(daemon_reports(&d) - before, 1);

    /* Batch 2: device 0's frame replayed in a later batch; device 1's untouched frame (delayed
     * past its altered copy); device 0 resealing the same report, as its library does on a
     * retry; device 2 and 3 in reverse order of sealing. */
    flen[6] = report_frame(&dev[0], ids[0], id_len[0], mech[0], eps[0], frames[6]);
    ldpb_relay_entry b2[5] = {
        {1, frames[3], flen[3]}, {2, frames[0], flen[0]}, {3, frames[1], flen[1]},
        {4, frames[6], flen[6]}, {5, frames[2], flen[2]},
    };
    assert_int_equal(mal_send(&m, b2, 5), 0);
    assert_int_equal(m.n, 5);
    open_reply(&dev[3], &m.got[0], &r);
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
    open_reply(&dev[0], &m.got[1], &r);
    assert_true(dt_is_error(&r, 1, LDPB_EREPLAY));
    dt_reply_clear(&r);
    open_reply(&dev[1], &m.got[2], &r);
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
    open_reply(&dev[0], &m.got[3], &r);
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 1); /* the same assignment: acked, not counted again */
    dt_reply_clear(&r);
    open_reply(&dev[2], &m.got[4], &r);
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
    /* each device's report counted exactly once */
    assert_int_equal(daemon_reports(&d) - before, DEVS);

    /* A whole batch replayed (a relay resending what it saw): nothing new is counted. */
    assert_int_equal(mal_send(&m, b2, 5), 0);
    for (size_t i = 0; i < m.n; i++) {
        open_reply(&dev[i == 0 ? 3 : i == 1 || i == 3 ? 0 : i == 2 ? 1 : 2], &m.got[i], &r);
        assert_true(dt_is_error(&r, 1, LDPB_EREPLAY));
        dt_reply_clear(&r);
    }
    assert_int_equal(daemon_reports(&d) - before, DEVS);

    /* A relay batch nested in a batch is no device frame: refused inside, the rest served. */
    uint8_t nested[512];
    size_t nlen = 0;
    ldpb_relay_entry in1 = {1, frames[0], flen[0]};
    assert_int_equal(
        ldpb_relay_build(nested, sizeof nested, &nlen, LDPB_FRAME_RELAY_BATCH, &in1, 1), LDPB_OK);
    ldpb_relay_entry b3[1] = {{5, nested, nlen}};
    assert_int_equal(mal_send(&m, b3, 1), 0);
    open_reply(&dev[0], &m.got[0], &r);
    assert_true(dt_is_error(&r, 0, LDPB_EPROTO));
    dt_reply_clear(&r);

    /* Malformed batches are refused whole with a PLAIN_ERROR, and the daemon keeps serving. */
    uint8_t bad[64];
    size_t blen = 0;
    ldpb_relay_entry one = {1, frames[0], 8};
    assert_int_equal(ldpb_relay_build(bad, sizeof bad, &blen, LDPB_FRAME_RELAY_BATCH, &one, 1),
                     LDPB_OK);
    bad[LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES + 4] = 9; /* says 9 bytes, 8 follow */
    assert_true(nn_send(m.sock, bad, blen, 0) == (int)blen);
    void *rep = NULL;
    int rn = nn_recv(m.sock, &rep, NN_MSG, 0);
    assert_true(rn > 0);
    ldpb_frame fr;
    assert_int_equal(ldpb_frame_parse(rep, (size_t)rn, &fr, NULL), LDPB_OK);
    assert_int_equal(fr.kind, LDPB_FRAME_PLAIN_ERROR);
    assert_int_equal(fr.error_code, LDPB_EPROTO);
    nn_freemsg(rep);
    assert_int_equal(daemon_reports(&d) - before, DEVS);

    if (m.reply)
        nn_freemsg(m.reply);
    nn_close(m.sock);
    for (int i = 0; i < DEVS; i++)
        dt_client_close(&dev[i]);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- a batch whose reports wait for their COMMIT ----------------------------------------------
 */

/* A batch mixing reports, assignments and a status: the reply comes only once the reports are
 * durable (the collector waits for the committer), and answers every slot in order. */
static void test_batch_waits_for_commit(void **state)
{
    (void)state;
    dt_daemon d;
    relay_proc unused;
    int mport = dt_free_port();
    char more[64];
    snprintf(more, sizeof more, "metrics = 127.0.0.1:%d\n", mport);
    setup_with(&d, &unused, more);
    enum { N = 40 };
    static dt_client dev[N];
    static uint8_t frames[2 * N][LDPB_FRAME_MAX];
    ldpb_relay_entry e[2 * N];
    for (int i = 0; i < N; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t idl;
        assert_int_equal(dt_client_open(&dev[i], d.ipc_url, d.server.pk, 5000), 0);
        assert_int_equal(dt_assign(&dev[i], &arm, &mech, &eps, id, &idl), 0);
        e[2 * i] = (ldpb_relay_entry){(uint32_t)(2 * i), frames[2 * i],
                                      report_frame(&dev[i], id, idl, mech, eps, frames[2 * i])};
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
        env.protocol_version = LDPB_PROTOCOL_VERSION;
        env.has_request_id = 1;
        env.request_id = 77;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        env.assign_request = &ar;
        uint8_t pt[64];
        size_t len = 0;
        assert_int_equal(ldpb_envelope_encode(&env, pt, sizeof pt, &len, NULL), LDPB_OK);
        e[2 * i + 1] =
            (ldpb_relay_entry){(uint32_t)(2 * i + 1), frames[2 * i + 1],
                               dt_client_seal(&dev[i], pt, len, frames[2 * i + 1], LDPB_FRAME_MAX)};
    }
    uint64_t before = daemon_reports(&d);
    mal m = {.sock = nn_socket(AF_SP, NN_REQ)};
    int tmo = 5000, big = -1;
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo);
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &big, sizeof big);
    assert_true(nn_connect(m.sock, d.ipc_url) >= 0);
    assert_int_equal(mal_send(&m, e, 2 * N), 0);
    assert_int_equal(m.n, 2 * N);
    for (int i = 0; i < 2 * N; i++) {
        dt_reply r;
        assert_int_equal(m.got[i].id, (uint32_t)i);
        open_reply(&dev[i / 2], &m.got[i], &r);
        if (i % 2 == 0) {
            int dup = 1;
            assert_true(dt_is_ack(&r, &dup));
            assert_int_equal(dup, 0);
        } else {
            assert_int_equal(r.kind, 1);
            assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
            assert_int_equal(r.env->request_id, 77);
        }
        dt_reply_clear(&r);
    }
    /* acked means durable: the count is there the moment the reply is */
    assert_int_equal(daemon_reports(&d) - before, N);
    /* one batch; its inner frames count as requests like direct ones */
    static char metrics[1 << 16];
    assert_true(get_metrics(mport, metrics, sizeof metrics) > 0);
    assert_non_null(strstr(metrics, "\nldpb_relay_batches_total 1\n"));
    /* and it survives a kill -9 */
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(daemon_reports(&d) - before, N);
    if (m.reply)
        nn_freemsg(m.reply);
    nn_close(m.sock);
    for (int i = 0; i < N; i++)
        dt_client_close(&dev[i]);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- a reply that misses, reorders or repeats ids -------------------------------------------- */

#define ROUTE_DEVS 4

typedef struct fake_upstream {
    char url[256];
    int sock;
    size_t entries; /* in the batch it received */
} fake_upstream;

/* An aggregator that breaks the RELAY_REPLY rules (docs/protocol.md section 11.1): it answers
 * "re:" + each frame, in reverse order, leaves out the entry of "dev-0", answers "dev-1" twice
 * (the second copy "re:again") and adds an id the batch never used. */
static void *fake_upstream_main(void *p)
{
    fake_upstream *u = p;
    void *msg = NULL;
    int n = nn_recv(u->sock, &msg, NN_MSG, 0);
    if (n <= 0)
        return NULL;
    ldpb_relay_entry in[LDPB_RELAY_ENTRIES_MAX], out[LDPB_RELAY_ENTRIES_MAX];
    static uint8_t bodies[LDPB_RELAY_ENTRIES_MAX][32];
    static uint8_t reply[4096];
    size_t count = 0, m = 0, len = 0;
    if (ldpb_relay_parse(msg, (size_t)n, LDPB_FRAME_RELAY_BATCH, in, LDPB_RELAY_ENTRIES_MAX, &count,
                         NULL) == LDPB_OK) {
        u->entries = count;
        for (size_t i = count; i-- > 0;) {
            if (in[i].len == 5 && memcmp(in[i].frame, "dev-0", 5) == 0)
                continue;
            int blen = snprintf((char *)bodies[i], sizeof bodies[i], "re:%.*s", (int)in[i].len,
                                (const char *)in[i].frame);
            out[m++] = (ldpb_relay_entry){in[i].id, bodies[i], (size_t)blen};
            if (in[i].len == 5 && memcmp(in[i].frame, "dev-1", 5) == 0)
                out[m++] = (ldpb_relay_entry){in[i].id, (const uint8_t *)"re:again", 8};
        }
        out[m++] = (ldpb_relay_entry){99, (const uint8_t *)"re:stray", 8};
        if (ldpb_relay_build(reply, sizeof reply, &len, LDPB_FRAME_RELAY_REPLY, out, m) == LDPB_OK)
            nn_send(u->sock, reply, len, 0);
    }
    nn_freemsg(msg);
    return NULL;
}

/* The relay routes each reply by its id, not by its position: every device gets its own reply
 * although the aggregator's RELAY_REPLY is reversed; a repeated id is answered once (the first
 * copy) and an unknown one dropped; the device whose id is missing gets a PLAIN_ERROR code 17
 * (LDPB_EBUSY) telling it to resend, at once rather than after a timeout. */
static void test_relay_routes_by_id(void **state)
{
    (void)state;
    char dir[] = "/tmp/ldpb-relay-route-XXXXXX";
    assert_non_null(mkdtemp(dir));
    fake_upstream u;
    memset(&u, 0, sizeof u);
    snprintf(u.url, sizeof u.url, "ipc://%s/up.sock", dir);
    u.sock = nn_socket(AF_SP, NN_REP);
    assert_true(u.sock >= 0);
    assert_true(nn_bind(u.sock, u.url) >= 0);
    int tmo = 15000;
    assert_int_equal(nn_setsockopt(u.sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_upstream_main, &u), 0);

    relay_proc r;
    memset(&r, 0, sizeof r);
    snprintf(r.url, sizeof r.url, "ipc://%s/relay.sock", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl(LDPB_TOOL_BIN, "ldpb", "relay", "--listen", r.url, "--upstream", u.url, "--batch",
              "4", "--wait-us", "1000000", "--threads", "1", "--timeout-ms", "10000", (char *)NULL);
        _exit(127);
    }
    r.pid = pid;

    int dev[ROUTE_DEVS];
    for (int i = 0; i < ROUTE_DEVS; i++) {
        dev[i] = nn_socket(AF_SP, NN_REQ);
        assert_true(dev[i] >= 0);
        assert_int_equal(nn_setsockopt(dev[i], NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo), 0);
        assert_true(nn_connect(dev[i], r.url) >= 0);
    }
    for (int i = 0; i < ROUTE_DEVS; i++) {
        char body[8];
        snprintf(body, sizeof body, "dev-%d", i);
        assert_int_equal(nn_send(dev[i], body, 5, 0), 5);
    }
    for (int i = 0; i < ROUTE_DEVS; i++) {
        char *got = NULL;
        int n = nn_recv(dev[i], &got, NN_MSG, 0);
        assert_true(n > 0);
        if (i == 0) {
            ldpb_frame fr;
            assert_int_equal(ldpb_frame_parse((const uint8_t *)got, (size_t)n, &fr, NULL), LDPB_OK);
            assert_int_equal(fr.kind, LDPB_FRAME_PLAIN_ERROR);
            assert_int_equal(ldpb_wire_err_from_code(fr.error_code), LDPB_EBUSY);
            char reason[LDPB_WIRE_STRING_MAX + 1];
            snprintf(reason, sizeof reason, "%.*s", (int)fr.reason_len, fr.reason);
            /* the old relay sent an empty reason here */
            assert_non_null(strstr(reason, "no answer for this frame; resend"));
        } else {
            char want[16];
            snprintf(want, sizeof want, "re:dev-%d", i);
            if ((size_t)n != strlen(want) || memcmp(got, want, (size_t)n) != 0)
                fail_msg("device %d got %.*s, expected %s", i, n, got, want);
        }
        nn_freemsg(got);
    }
    pthread_join(th, NULL);
    assert_int_equal(u.entries, ROUTE_DEVS); /* one batch held all four */
    for (int i = 0; i < ROUTE_DEVS; i++)
        nn_close(dev[i]);
    nn_close(u.sock);
    relay_stop(&r, SIGTERM);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- several upstreams: failover and back ------------------------------------------------- */

/* Reads `name`'s value from the daemon's /metrics (-1 when it cannot be read). */
static long long metric(int port, const char *name)
{
    static char buf[1 << 16];
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    if (!get_metrics(port, buf, sizeof buf))
        return -1;
    const char *p = strstr(buf, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

typedef struct assigner {
    const char *url;
    const uint8_t *pk;
    const int *stop;
    int done, failed; /* done: read by the main thread while it runs */
    char why[256];
} assigner;

/* Assignments only, one attempt each with a timeout far above the relay's: every request has to
 * be answered through the relay itself, by whichever node is up. */
static void *assigner_main(void *p)
{
    assigner *a = p;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = a->url;
    memcpy(o.server_public_key, a->pk, LDPB_KEY_BYTES);
    o.timeout_ms = 30000;
    o.max_attempts = 1;
    o.lifetime_budget = 1e6;
    ldpb_client *c = NULL;
    if (ldpb_client_new(&c, &o) != LDPB_OK) {
        a->failed = 1;
        return NULL;
    }
    while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
        ldpb_assignment as;
        if (ldpb_client_assign(c, NULL, 0, &as) != LDPB_OK) {
            snprintf(a->why, sizeof a->why, "%s", ldpb_client_errmsg(c));
            a->failed = 1;
            break;
        }
        __atomic_add_fetch(&a->done, 1, __ATOMIC_RELAXED);
    }
    ldpb_client_free(c);
    return NULL;
}

#define ASSIGNERS 4

static int assigned(const assigner *a)
{
    int n = 0;
    for (int i = 0; i < ASSIGNERS; i++)
        n += __atomic_load_n(&a[i].done, __ATOMIC_RELAXED);
    return n;
}

/* Polls `cond` every 50 ms until it holds or 60 s have passed (a bound against hanging, not a
 * timing check). */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        for (int w_ = 0; w_ < 1200 && !(cond); w_++)                                               \
            sleep_ms(50);                                                                          \
    } while (0)

/* The number after `what` in the relay's stop line ("..., R resent to another upstream"). */
static long long relay_stat(const relay_proc *r, const char *what)
{
    FILE *f = fopen(r->log, "r");
    assert_non_null(f);
    char line[512];
    long long v = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, what);
        if (!strstr(line, "stopped: ") || !p)
            continue;
        while (p > line && p[-1] == ' ')
            p--;
        while (p > line && p[-1] >= '0' && p[-1] <= '9')
            p--;
        v = strtoll(p, NULL, 10);
    }
    fclose(f);
    return v;
}

/* Two aggregators with state directories of their own (so only assignments and status go
 * through: nothing that a resend could count twice) and the same key, behind one relay that
 * names both. Under a stream of assign requests the first is killed with SIGKILL: every request
 * is still answered, by the second, at the first attempt; once the first is restarted, the
 * relay sends to it again after its back-off. */
static void test_relay_failover(void **state)
{
    (void)state;
    dt_daemon d[2];
    int mport[2];
    for (int i = 0; i < 2; i++) {
        char conf[256];
        mport[i] = dt_free_port();
        snprintf(conf, sizeof conf,
                 "arms = 3\nassignment_ttl_s = 600\nlog_level = warn\nmetrics = 127.0.0.1:%d\n",
                 mport[i]);
        assert_int_equal(dt_daemon_init(&d[i]), 0);
        if (i) { /* devices pin one key: the nodes share it */
            snprintf(d[1].key, sizeof d[1].key, "%s", d[0].key);
            d[1].server = d[0].server;
        }
        assert_int_equal(dt_daemon_write_config(&d[i], conf), 0);
        assert_int_equal(dt_daemon_start(&d[i], NULL, NULL), 0);
    }
    relay_proc r;
    memset(&r, 0, sizeof r);
    snprintf(r.url, sizeof r.url, "ipc://%s/relay.sock", d[0].dir);
    snprintf(r.log, sizeof r.log, "%s/relay.log", d[0].dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(r.log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        execl(LDPB_TOOL_BIN, "ldpb", "relay", "--listen", r.url, "--upstream", d[0].ipc_url,
              "--upstream", d[1].ipc_url, "--batch", "16", "--wait-us", "2000", "--threads", "2",
              "--timeout-ms", "3000", "--backoff-ms", "200", (char *)NULL);
        _exit(127);
    }
    r.pid = pid;
    int ready = 0;
    for (int i = 0; i < 200 && !ready; i++) {
        dt_client c;
        uint64_t pulls[K], reports = 0;
        ready = dt_client_open(&c, r.url, d[0].server.pk, 200) == 0 &&
                dt_status(&c, pulls, K, &reports) == K;
        dt_client_close(&c);
        if (!ready)
            sleep_ms(50);
    }
    assert_true(ready);

    assigner a[ASSIGNERS];
    pthread_t th[ASSIGNERS];
    int stop = 0;
    for (int i = 0; i < ASSIGNERS; i++) {
        a[i] = (assigner){.url = r.url, .pk = d[0].server.pk, .stop = &stop};
        assert_int_equal(pthread_create(&th[i], NULL, assigner_main, &a[i]), 0);
    }
    /* the first upstream serves while it is up */
    WAIT_FOR(assigned(a) >= 100);
    long long first = metric(mport[0], "ldpb_relay_batches_total");
    print_message("before the kill: %d assignments, %lld batches on the first node\n", assigned(a),
                  first);
    assert_true(first > 0);

    assert_int_equal(dt_daemon_signal_wait(&d[0], SIGKILL), 128 + SIGKILL);
    int at_kill = assigned(a);
    long long second = metric(mport[1], "ldpb_relay_batches_total");
    WAIT_FOR(assigned(a) >= at_kill + 200);
    long long second_after = metric(mport[1], "ldpb_relay_batches_total");
    print_message("first node down: %d more assignments, batches on the second %lld -> %lld\n",
                  assigned(a) - at_kill, second, second_after);
    assert_true(assigned(a) >= at_kill + 200);
    assert_true(second_after > second);

    /* restarted (a fresh process: its counters start at 0), it gets batches again */
    assert_int_equal(dt_daemon_start(&d[0], NULL, NULL), 0);
    WAIT_FOR(metric(mport[0], "ldpb_relay_batches_total") > 0);
    long long back = metric(mport[0], "ldpb_relay_batches_total");
    print_message("first node restarted: %lld batches on it\n", back);
    assert_true(back > 0);

    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < ASSIGNERS; i++) {
        pthread_join(th[i], NULL);
        if (a[i].failed)
            fail_msg("assigner %d failed after %d assignments: %s", i, a[i].done, a[i].why);
    }
    assert_int_equal(relay_stop(&r, SIGTERM), 0);
    /* the batches in flight at the kill, and the retries of the dead node, went to the other */
    long long resent = relay_stat(&r, "resent to another upstream");
    long long busy = relay_stat(&r, "answered with LDPB_EBUSY");
    print_message("relay: %lld batches resent, %lld frames answered with LDPB_EBUSY\n", resent,
                  busy);
    assert_true(resent > 0);
    assert_int_equal(busy, 0);
    assert_int_equal(dt_daemon_signal_wait(&d[1], SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&d[0], SIGTERM), 0);
    dt_daemon_cleanup(&d[1]);
    dt_daemon_cleanup(&d[0]);
}

/* Runs `ldpb relay` with args[] (NULL-terminated) and returns its exit status, its standard error
 * in err[] and whether it wrote anything on standard output. */
static int relay_run(const char *const *args, char *err, size_t cap, int *wrote_out)
{
    char dir[] = "/tmp/ldpb-relay-args-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out_path[64], err_path[64];
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        const char *argv[64] = {"ldpb", "relay"};
        for (size_t i = 0; args[i] && i < 61; i++)
            argv[i + 2] = args[i];
        execv(LDPB_TOOL_BIN, (char *const *)argv);
        _exit(127);
    }
    /* a relay that started (it should not) is stopped after a while rather than hanging */
    int st = -1;
    for (int i = 0; i < 200; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            break;
        sleep_ms(50);
        if (i == 199) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
        }
    }
    FILE *f = fopen(err_path, "r");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    struct stat sb;
    *wrote_out = stat(out_path, &sb) == 0 && sb.st_size > 0;
    unlink(out_path);
    unlink(err_path);
    rmdir(dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Bad --upstream arguments: a clear line on standard error, nothing on standard output, exit 2,
 * and nothing bound. */
static void test_relay_bad_upstreams(void **state)
{
    (void)state;
    const char *L = "ipc:///tmp/ldpb-relay-bad-args.sock";
    const char *seventeen[2 + 2 * 17 + 1] = {"--listen", L};
    static char urls[17][64];
    for (int i = 0; i < 17; i++) {
        snprintf(urls[i], sizeof urls[i], "ipc:///tmp/ldpb-relay-up-%d.sock", i);
        seventeen[2 + 2 * i] = "--upstream";
        seventeen[3 + 2 * i] = urls[i];
    }
    struct {
        const char *args[8];
        const char *says;
    } cases[] = {
        {{"--listen", L, "--upstream", NULL}, "ldpb relay: --upstream needs a URL\n"},
        {{"--listen", L, "--upstream", "", NULL}, "ldpb relay: --upstream needs a URL\n"},
        {{"--listen", L, "--upstream", "http://127.0.0.1:1", NULL},
         "ldpb relay: --upstream http://127.0.0.1:1: 'http://127.0.0.1:1' is not a URL of a "
         "transport this build has (tcp://, ipc://)\n"},
        {{"--listen", L, "--upstream", "ipc:///tmp/a", "--upstream", "tcp://127.0.0.1", NULL},
         "ldpb relay: --upstream tcp://127.0.0.1: cannot connect to tcp://127.0.0.1: Invalid "
         "argument\n"},
        {{"--listen", L, "--upstream", "ipc:///tmp/a", "--upstream", "ipc:///tmp/a", NULL},
         "ldpb relay: --upstream ipc:///tmp/a is named twice\n"},
        {{"--listen", L, "--upstream", "ipc:///tmp/a", "--backoff-ms", "0", NULL},
         "ldpb relay: --backoff-ms needs an integer in 1..600000\n"},
    };
    char err[2048];
    int wrote = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = relay_run(cases[i].args, err, sizeof err, &wrote);
        if (st != 2 || strcmp(err, cases[i].says) != 0 || wrote)
            fail_msg("case %zu: exit %d, stderr '%s' (expected 2, '%s')", i, st, err,
                     cases[i].says);
    }
    /* sixteen are accepted (exit 1 here only because the listen URL is made unbindable)... */
    const char *sixteen_bad[2 + 2 * 16 + 1];
    memcpy(sixteen_bad, seventeen, sizeof sixteen_bad - sizeof sixteen_bad[0]);
    sixteen_bad[1] = "tcp://256.0.0.1:1";
    sixteen_bad[2 + 2 * 16] = NULL;
    assert_int_equal(relay_run(sixteen_bad, err, sizeof err, &wrote), 1);
    assert_non_null(strstr(err, "cannot bind"));
    /* ... the seventeenth is refused */
    assert_int_equal(relay_run(seventeen, err, sizeof err, &wrote), 2);
    assert_string_equal(err, "ldpb relay: at most 16 --upstream URLs\n");
    assert_false(wrote);
}

/* ---- a batch with failing frames: one commit, each slot answered, recorded before served ---- */

/* A relay batch of MIX_N devices' reports with refusals mixed in (a frame that is no frame, a
 * second copy of a report in the same batch, a report for an assignment the daemon never issued):
 * every slot gets its own answer, the good reports are committed in one transaction (the
 * committer waits for the batch's last inner frame, docs/aggregator.md "Where the CPU goes"),
 * and the batch's nonce records (written to the nonce log in one write) survive a kill -9: the
 * same batch resent to the restarted daemon is refused slot by slot, nothing counted twice. */
#define MIX_N 24
static void test_batch_mixed_one_commit(void **state)
{
    (void)state;
    dt_daemon d;
    relay_proc unused;
    int mport = dt_free_port();
    char more[64];
    snprintf(more, sizeof more, "metrics = 127.0.0.1:%d\n", mport);
    setup_with(&d, &unused, more);
    static dt_client dev[MIX_N];
    static uint8_t frames[MIX_N + 3][LDPB_FRAME_MAX];
    ldpb_relay_entry e[MIX_N + 3];
    for (int i = 0; i < MIX_N; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t idl;
        assert_int_equal(dt_client_open(&dev[i], d.ipc_url, d.server.pk, 5000), 0);
        assert_int_equal(dt_assign(&dev[i], &arm, &mech, &eps, id, &idl), 0);
        e[i] = (ldpb_relay_entry){(uint32_t)i, frames[i],
                                  report_frame(&dev[i], id, idl, mech, eps, frames[i])};
        if (i == 1) { /* an id the daemon never issued, sealed by device 1 */
            uint8_t bogus[16];
            memset(bogus, 0x5a, sizeof bogus);
            e[MIX_N] = (ldpb_relay_entry){
                (uint32_t)MIX_N, frames[MIX_N],
                report_frame(&dev[1], bogus, sizeof bogus, mech, eps, frames[MIX_N])};
        }
    }
    /* a second copy of device 0's report, and eight bytes that are no frame */
    e[MIX_N + 1] = (ldpb_relay_entry){(uint32_t)MIX_N + 1, frames[0], e[0].len};
    memcpy(frames[MIX_N + 2], "notframe", 8);
    e[MIX_N + 2] = (ldpb_relay_entry){(uint32_t)MIX_N + 2, frames[MIX_N + 2], 8};
    /* the direct assignments' decisions are committed by now (DECISION_DELAY_MS is 50 ms) */
    sleep_ms(300);
    uint64_t before = daemon_reports(&d);
    long long commits = metric(mport, "ldpb_commits_total");
    assert_true(commits >= 0);
    mal m = {.sock = nn_socket(AF_SP, NN_REQ)};
    int tmo = 5000, big = -1;
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo);
    nn_setsockopt(m.sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &big, sizeof big);
    assert_true(nn_connect(m.sock, d.ipc_url) >= 0);
    assert_int_equal(mal_send(&m, e, MIX_N + 3), 0);
    assert_int_equal(m.n, MIX_N + 3);
    dt_reply r;
    for (int i = 0; i < MIX_N; i++) {
        int dup = -1;
        assert_int_equal(m.got[i].id, (uint32_t)i);
        open_reply(&dev[i], &m.got[i], &r);
        assert_true(dt_is_ack(&r, &dup));
        assert_int_equal(dup, 0);
        dt_reply_clear(&r);
    }
    open_reply(&dev[1], &m.got[MIX_N], &r);
    assert_int_equal(r.kind, 1);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ERROR);
    dt_reply_clear(&r);
    open_reply(&dev[0], &m.got[MIX_N + 1], &r);
    assert_true(dt_is_error(&r, 1, LDPB_EREPLAY));
    dt_reply_clear(&r);
    open_reply(&dev[0], &m.got[MIX_N + 2], &r);
    assert_true(dt_is_error(&r, 0, LDPB_EPROTO));
    dt_reply_clear(&r);
    assert_int_equal(daemon_reports(&d) - before, MIX_N);
    /* all of the batch's reports in one transaction (daemon_reports asked nothing durable) */
    assert_int_equal(metric(mport, "ldpb_commits_total") - commits, 1);

    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(daemon_reports(&d) - before, MIX_N);
    assert_int_equal(mal_send(&m, e, MIX_N + 2), 0);
    assert_int_equal(m.n, MIX_N + 2);
    for (int i = 0; i < MIX_N + 2; i++) {
        open_reply(&dev[i < MIX_N ? i : i == MIX_N ? 1 : 0], &m.got[i], &r);
        assert_true(dt_is_error(&r, 1, LDPB_EREPLAY));
        dt_reply_clear(&r);
    }
    assert_int_equal(daemon_reports(&d) - before, MIX_N);
    if (m.reply)
        nn_freemsg(m.reply);
    nn_close(m.sock);
    for (int i = 0; i < MIX_N; i++)
        dt_client_close(&dev[i]);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malicious_relay),
        cmocka_unit_test(test_relay_routes_by_id),
        cmocka_unit_test(test_batch_waits_for_commit),
        cmocka_unit_test(test_clients_through_relay),
        cmocka_unit_test(test_relay_kill9_restart),
        cmocka_unit_test(test_relay_failover),
        cmocka_unit_test(test_relay_bad_upstreams),
        cmocka_unit_test(test_batch_mixed_one_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
