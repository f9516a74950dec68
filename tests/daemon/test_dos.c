/* ldpb-aggregator under an unauthenticated flood (the real binary over tcp://127.0.0.1): frames
 * under fresh random client keys cost at most key_derivations_per_s derivations and the rest
 * are refused unopened with a PLAIN_ERROR LDPB_EBUSY, while a known client keeps being served;
 * forged frames repeating one key cost one derivation in all; /metrics counts both; with an
 * allow-list, keys off the list cost no derivation at all; a spent budget is logged once a
 * minute, not per frame. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <sodium.h>

#include "harness.h"
#include "ldpb/err.h"
#include "ldpb/keyfile.h"

static const char base_extra[] = "arms = 3\n"
                                 "policy = ldp-ts-b\n"
                                 "mechanism = linear\n"
                                 "epsilon = 1\n"
                                 "log_level = warn\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An assign + report round trip; 0 if both were answered as they should be. */
static int serve_once(dt_client *c)
{
    uint32_t arm;
    int mech;
    double eps;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    if (dt_assign(c, &arm, &mech, &eps, id, &id_len) != 0)
        return -1;
    dt_reply r;
    if (dt_report(c, id, id_len, mech, eps, 1, 1, 0, &r) != 0)
        return -1;
    int dup = -1, ok = dt_is_ack(&r, &dup) && dup == 0;
    dt_reply_clear(&r);
    return ok ? 0 : -1;
}

/* GET /metrics from 127.0.0.1:port and return the value of counter `name` (-1 if absent). */
static long long metric(int port, const char *name)
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
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    assert_int_equal(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof buf && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fd);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(buf, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* Occurrences of `needle` in the file at `path`. */
static int count_in_file(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    int count = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        count++;
    return count;
}

/* A frame under `pk` (random if NULL) with random ciphertext: nobody can open it, and the
 * server cannot know that before it has the key. */
static size_t forged_frame(uint8_t *frame, const uint8_t *pk)
{
    size_t n = LDPB_FRAME_SEALED_OVERHEAD + 16;
    randombytes_buf(frame, n);
    memcpy(frame, "LDPB", 4);
    frame[4] = LDPB_FRAME_VERSION;
    frame[5] = LDPB_FRAME_SEALED;
    if (pk)
        memcpy(frame + LDPB_FRAME_HEADER_BYTES, pk, LDPB_KEY_BYTES);
    uint64_t now = ldpb_seal_now_ms();
    uint8_t *nonce = frame + LDPB_FRAME_HEADER_BYTES + LDPB_KEY_BYTES;
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(now >> (8 * i));
    nonce[8] = LDPB_DIR_TO_SERVER;
    return n;
}

typedef struct flood_arg {
    const char *url;
    const uint8_t *server_pk;
    const uint8_t *fixed_pk; /* NULL: a fresh random key per frame */
    int frames;
    int sockets;            /* REQ sockets, one frame in flight on each */
    int busy, crypto, auth; /* PLAIN_ERROR codes seen */
    int other;              /* anything else (a timeout, a sealed reply) */
} flood_arg;

static void *flood_main(void *p)
{
    flood_arg *a = p;
    dt_client c[8];
    for (int i = 0; i < a->sockets; i++)
        if (dt_client_open(&c[i], a->url, a->server_pk, 5000) != 0)
            return NULL;
    uint8_t frame[256];
    for (int sent = 0; sent < a->frames;) {
        for (int i = 0; i < a->sockets && sent < a->frames; i++, sent++) {
            size_t n = forged_frame(frame, a->fixed_pk);
            if (nn_send(c[i].sock, frame, n, 0) < 0)
                a->other++;
        }
        for (int i = 0; i < a->sockets; i++) {
            void *buf = NULL;
            int n = nn_recv(c[i].sock, &buf, NN_MSG, 0);
            ldpb_frame f;
            if (n < 0 || ldpb_frame_parse(buf, (size_t)n, &f, NULL) != LDPB_OK ||
                f.kind != LDPB_FRAME_PLAIN_ERROR)
                a->other++;
            else if (f.error_code == LDPB_EBUSY)
                a->busy++;
            else if (f.error_code == LDPB_ECRYPTO)
                a->crypto++;
            else if (f.error_code == LDPB_EAUTH)
                a->auth++;
            else
                a->other++;
            if (n >= 0)
                nn_freemsg(buf);
        }
    }
    for (int i = 0; i < a->sockets; i++)
        dt_client_close(&c[i]);
    return NULL;
}

#define RATE 20 /* key_derivations_per_s of the flooded daemon (the bucket holds as many) */

static void test_random_key_flood(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    int mport = dt_free_port();
    char extra[512];
    snprintf(extra, sizeof extra, "%skey_derivations_per_s = %d\nmetrics = 127.0.0.1:%d\n",
             base_extra, RATE, mport);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client honest;
    assert_int_equal(dt_client_open(&honest, d.tcp_url, d.server.pk, 5000), 0);
    assert_int_equal(serve_once(&honest), 0); /* its key is now cached */
    long long derived0 = metric(mport, "ldpb_key_derivations_total");
    assert_true(derived0 >= 1); /* the honest client's, and the harness's readiness probe */
    assert_int_equal(metric(mport, "ldpb_key_derivations_refused_total"), 0);

    /* 4000 frames under fresh keys while the known client keeps working */
    flood_arg fa = {d.tcp_url, d.server.pk, NULL, 4000, 4, 0, 0, 0, 0};
    pthread_t th;
    double t0 = now_s();
    assert_int_equal(pthread_create(&th, NULL, flood_main, &fa), 0);
    int served = 0, failed = 0;
    for (int i = 0; i < 20; i++) {
        if (serve_once(&honest) == 0)
            served++;
        else
            failed++;
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    double elapsed = now_s() - t0;
    assert_int_equal(failed, 0);
    assert_int_equal(served, 20);
    assert_int_equal(fa.other + fa.auth, 0);
    assert_int_equal(fa.busy + fa.crypto, 4000);
    /* derivations: the bucket (RATE) plus RATE per second, rounded up; the rest refused */
    long long budget = RATE + (long long)(RATE * elapsed) + 1;
    if (fa.crypto > budget)
        fail_msg("%d frames derived in %.2f s, budget %lld", fa.crypto, elapsed, budget);
    long long derived = metric(mport, "ldpb_key_derivations_total") - derived0;
    assert_int_equal(derived, fa.crypto);
    assert_int_equal(metric(mport, "ldpb_key_derivations_refused_total"), fa.busy);

    /* 500 forged frames repeating one key: a handful of derivations in all (the key is remembered
     * apart from the authenticated cache), whatever the budget */
    struct timespec pause = {1, 100000000}; /* the bucket refills */
    nanosleep(&pause, NULL);
    uint8_t one_pk[LDPB_KEY_BYTES];
    randombytes_buf(one_pk, sizeof one_pk);
    long long before = metric(mport, "ldpb_key_derivations_total");
    flood_arg fb = {d.tcp_url, d.server.pk, one_pk, 500, 4, 0, 0, 0, 0};
    flood_main(&fb);
    assert_int_equal(fb.crypto, 500);
    /* The derivation runs outside the lock, so the first frames of the 4 senders can race to
     * derive the same key before one of them records it: at most one derivation per sender. */
    long long repeated = metric(mport, "ldpb_key_derivations_total") - before;
    assert_true(repeated >= 1 && repeated <= 4);

    /* a client the daemon has never seen gets in once the budget has refilled */
    nanosleep(&pause, NULL);
    dt_client newcomer;
    assert_int_equal(dt_client_open(&newcomer, d.tcp_url, d.server.pk, 5000), 0);
    assert_int_equal(serve_once(&newcomer), 0);
    dt_client_close(&newcomer);
    assert_int_equal(serve_once(&honest), 0);
    dt_client_close(&honest);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    /* thousands of refusals, one warning (they repeat at most once a minute) */
    assert_int_equal(count_in_file(d.log, "key_derivations_per_s (20) is spent"), 1);
    dt_daemon_cleanup(&d);
}

/* With an allow-list, a key off the list is refused before anything is derived. */
static void test_allowlist_flood_costs_no_derivation(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    dt_client ok;
    assert_int_equal(dt_client_open(&ok, d.ipc_url, d.server.pk, 5000), 0);
    char path[256], line[LDPB_KEYFILE_BYTES + 1], extra[1024];
    snprintf(path, sizeof path, "%s/clients.txt", d.dir);
    assert_int_equal(ldpb_keyfile_format(line, sizeof line, LDPB_KEYFILE_PUBLIC, ok.kp.pk),
                     LDPB_OK);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s", line);
    fclose(f);
    int mport = dt_free_port();
    snprintf(extra, sizeof extra, "%sauth = allowlist\nallowlist = %s\nmetrics = 127.0.0.1:%d\n",
             base_extra, path, mport);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    long long derived0 = metric(mport, "ldpb_key_derivations_total");
    flood_arg fa = {d.tcp_url, d.server.pk, NULL, 1000, 4, 0, 0, 0, 0};
    flood_main(&fa);
    assert_int_equal(fa.auth, 1000);
    assert_int_equal(metric(mport, "ldpb_key_derivations_total"), derived0);
    assert_int_equal(metric(mport, "ldpb_key_derivations_refused_total"), 0);
    assert_int_equal(serve_once(&ok), 0);
    assert_int_equal(metric(mport, "ldpb_key_derivations_total"), derived0 + 1);
    dt_client_close(&ok);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_key_flood),
        cmocka_unit_test(test_allowlist_flood_costs_no_derivation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
