/* The native SP dialer (common/src/transport_sp_dial.c) through the transport seam: round trips
 * against the native listener and nanomsg's REP listener over ipc:// and tcp://; a reply to an
 * abandoned request dropped by its id (from the real listener and from a fake peer that answers a
 * stale id first); an announced length above recv_max refused, and one far beyond memory not
 * allocated; a peer that is not a REP socket refused; a daemon that is down at dial time (dial
 * succeeds, the send times out as nanomsg's receive does, the next request after the listener
 * starts succeeds, also while a send is still trying); a timeout, a closed connection and a
 * restarted listener each leave the dialer usable; URLs, and a host name resolved. With the old
 * ldpb_tp_sp_ops (no dialer: its dial refused every URL with LDPB_EINVAL) every test here fails at
 * its first dial. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../support/test_port.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "../support/test_listen.h"

#define RECV_MAX 65536

static ldpb_tp *listen_fresh(char *url, size_t cap, int ipc, int n, const char *with)
{
    return ldpb_test_listen_fresh(url, cap, ipc, n, with, RECV_MAX, "dial");
}

static ldpb_tp *listen_at(const char *url, const char *with)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.recv_max = RECV_MAX;
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_tp *l = NULL;
    ldpb_err err = ldpb_tp_listen_with(&l, ldpb_tp_named(with), &url, 1, &o, detail);
    if (err)
        print_message("listen %s: %s\n", url, detail);
    assert_int_equal(err, LDPB_OK);
    return l;
}

static ldpb_tp *dial_sp(const char *url, int send_timeout_ms, size_t recv_max)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.send_timeout_ms = send_timeout_ms;
    o.recv_max = recv_max;
    ldpb_tp *d = NULL;
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = ldpb_tp_dial_with(&d, ldpb_tp_named("sp"), url, &o, detail);
    if (err)
        print_message("dial %s: %s\n", url, detail);
    assert_int_equal(err, LDPB_OK);
    return d;
}

/* The listener takes one request, checks it holds `len` bytes of `fill`, and answers `rlen`
 * bytes of `fill` + 1. */
static void serve_one(ldpb_tp *l, size_t len, uint8_t fill, size_t rlen)
{
    ldpb_tp_msg m;
    ldpb_tp_route r;
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 2000 * LDPB_TEST_SLOWDOWN, NULL), LDPB_OK);
    assert_int_equal(m.len, len);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(m.data[i], fill);
    static uint8_t reply[RECV_MAX];
    memset(reply, fill + 1, rlen);
    assert_int_equal(ldpb_tp_reply(l, r, reply, rlen), LDPB_OK);
    ldpb_tp_msg_free(l, &m);
}

static void expect_reply_into(ldpb_tp *d, size_t rlen, uint8_t fill)
{
    static uint8_t buf[RECV_MAX + 1];
    size_t n = 0;
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = ldpb_tp_recv_into(d, buf, sizeof buf, &n, 2000 * LDPB_TEST_SLOWDOWN, detail);
    if (err)
        print_message("recv_into: %s\n", detail);
    assert_int_equal(err, LDPB_OK);
    assert_int_equal(n, rlen);
    for (size_t i = 0; i < rlen; i++)
        assert_int_equal(buf[i], fill);
}

static void expect_reply_msg(ldpb_tp *d, size_t rlen, uint8_t fill)
{
    ldpb_tp_msg m;
    assert_int_equal(ldpb_tp_recv(d, &m, NULL, 2000 * LDPB_TEST_SLOWDOWN, NULL), LDPB_OK);
    assert_int_equal(m.len, rlen);
    for (size_t i = 0; i < rlen; i++)
        assert_int_equal(m.data[i], fill);
    ldpb_tp_msg_free(d, &m);
}

/* Requests and replies of several sizes on one connection (small, empty, larger than one read
 * takes, larger than the first allocation of recv), through recv_into and recv; then a request
 * abandoned for the next one: the listener answers both, the dialer takes only the second. */
static void round_trips(const char *listener, int ipc, int n)
{
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, ipc, n, listener);
    ldpb_tp *d = dial_sp(url, 2000, RECV_MAX);
    static uint8_t req[40000];
    const size_t sizes[][2] = {{5, 7}, {0, 0}, {300, 9000}, {40000, 40000}, {1, 20000}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t fill = (uint8_t)('a' + i);
        memset(req, fill, sizes[i][0]);
        assert_int_equal(ldpb_tp_send(d, req, sizes[i][0], NULL), LDPB_OK);
        serve_one(l, sizes[i][0], fill, sizes[i][1]);
        if (i % 2)
            expect_reply_msg(d, sizes[i][1], fill + 1);
        else
            expect_reply_into(d, sizes[i][1], fill + 1);
    }
    /* a reply longer than the caller's buffer: its head, and its whole length */
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"x", 1, NULL), LDPB_OK);
    serve_one(l, 1, 'x', 100);
    uint8_t small[10];
    size_t got = 0;
    assert_int_equal(ldpb_tp_recv_into(d, small, sizeof small, &got, 2000, NULL), LDPB_OK);
    assert_int_equal(got, 100);
    assert_int_equal(small[9], 'y');

    /* abandoned: the first request's reply, sent first, carries the old id */
    memset(req, 'p', 3);
    assert_int_equal(ldpb_tp_send(d, req, 3, NULL), LDPB_OK);
    memset(req, 'q', 4);
    assert_int_equal(ldpb_tp_send(d, req, 4, NULL), LDPB_OK);
    serve_one(l, 3, 'p', 30);
    serve_one(l, 4, 'q', 40);
    expect_reply_into(d, 40, 'r');
    ldpb_tp_close(d, 0);
    ldpb_tp_close(l, 0);
}

static void test_native_listener(void **state)
{
    (void)state;
    round_trips("sp", 1, 1);
    round_trips("sp", 0, 2);
}

static void test_nanomsg_listener(void **state)
{
    (void)state;
    round_trips("nanomsg", 1, 3);
    round_trips("nanomsg", 0, 4);
}

/* ---- a fake peer on a loopback port: whatever bytes a test wants it to answer ------------- */

static int fake_listen(char *url, size_t cap)
{
    unsigned port = 0;
    int fd = ldpb_test_loopback_listener(8, &port);
    assert_true(fd >= 0);
    snprintf(url, cap, "tcp://127.0.0.1:%u", port);
    return fd;
}

static void read_n(int fd, uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = read(fd, p, n);
        assert_true(k > 0);
        p += k;
        n -= (size_t)k;
    }
}

/* Accepts the dialer's connection (made by its send: the kernel completes it from the backlog),
 * checks its REQ header, and reads one request with `body` bytes: its id word into id[4]. */
static int fake_accept(int lfd, uint8_t id[4], size_t body)
{
    int fd = accept(lfd, NULL, NULL);
    assert_true(fd >= 0);
    uint8_t hs[8], size[8];
    read_n(fd, hs, 8);
    const uint8_t req_hs[8] = {0, 'S', 'P', 0, 0, 48, 0, 0};
    assert_memory_equal(hs, req_hs, 8);
    read_n(fd, size, 8);
    assert_int_equal(size[7], 4 + body);
    read_n(fd, id, 4);
    assert_true(id[0] & 0x80);
    uint8_t sink[64];
    assert_true(body <= sizeof sink);
    read_n(fd, sink, body);
    return fd;
}

static void put_reply(int fd, uint64_t size, const uint8_t id[4], const char *body)
{
    uint8_t out[64];
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(size >> (56 - 8 * i));
    memcpy(out + 8, id, 4);
    size_t bl = strlen(body);
    memcpy(out + 12, body, bl);
    assert_int_equal(write(fd, out, 12 + bl), (ssize_t)(12 + bl));
}

static const uint8_t rep_hs[8] = {0, 'S', 'P', 0, 0, 49, 0, 0};

/* A stale reply (another id) first, then the one to this request: only the second is taken. */
static void test_stale_reply_dropped(void **state)
{
    (void)state;
    char url[64];
    int lfd = fake_listen(url, sizeof url);
    ldpb_tp *d = dial_sp(url, 2000, 1024);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"req", 3, NULL), LDPB_OK);
    uint8_t id[4], old[4];
    int fd = fake_accept(lfd, id, 3);
    memcpy(old, id, 4);
    old[3] ^= 1;
    assert_int_equal(write(fd, rep_hs, 8), 8);
    put_reply(fd, 4 + 5, old, "stale");
    put_reply(fd, 4 + 5, id, "fresh");
    uint8_t buf[16];
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 2000, NULL), LDPB_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(buf, "fresh", 5);
    close(fd);
    ldpb_tp_close(d, 0);
    close(lfd);
}

/* Announced lengths: above recv_max is refused (LDPB_ETRANSPORT) with its connection; with no
 * limit, 2^40 bytes announced and 3 sent is a connection that ended, not an allocation of a
 * terabyte (an AddressSanitizer build aborts on such a request); then the dialer goes on. */
static void test_oversized_reply(void **state)
{
    (void)state;
    char url[64];
    int lfd = fake_listen(url, sizeof url);
    ldpb_tp *d = dial_sp(url, 2000, 1024);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"a", 1, NULL), LDPB_OK);
    uint8_t id[4];
    int fd = fake_accept(lfd, id, 1);
    assert_int_equal(write(fd, rep_hs, 8), 8);
    put_reply(fd, 4 + 1025, id, "abc");
    ldpb_tp_msg m;
    char detail[LDPB_DETAIL_BYTES] = "";
    assert_int_equal(ldpb_tp_recv(d, &m, NULL, 2000, detail), LDPB_ETRANSPORT);
    assert_non_null(strstr(detail, "more than the limit"));
    assert_null(m.data);
    close(fd);

    /* the next request on a fresh connection */
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"b", 1, NULL), LDPB_OK);
    fd = fake_accept(lfd, id, 1);
    assert_int_equal(write(fd, rep_hs, 8), 8);
    put_reply(fd, 4 + 2, id, "ok");
    uint8_t buf[8];
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 2000, NULL), LDPB_OK);
    assert_int_equal(n, 2);
    assert_memory_equal(buf, "ok", 2);
    close(fd);
    ldpb_tp_close(d, 0);

    d = dial_sp(url, 2000, 0);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"c", 1, NULL), LDPB_OK);
    fd = fake_accept(lfd, id, 1);
    assert_int_equal(write(fd, rep_hs, 8), 8);
    put_reply(fd, 4 + ((uint64_t)1 << 40), id, "abc");
    close(fd);
    assert_int_equal(ldpb_tp_recv(d, &m, NULL, 2000, detail), LDPB_ETIMEDOUT);
    assert_non_null(strstr(detail, "before the reply"));
    ldpb_tp_close(d, 0);
    close(lfd);
}

/* Peers that are not REP sockets: a REQ socket's header, and bytes that are no SP header at all.
 * Each is LDPB_ETRANSPORT with a detail that says so. */
static void test_not_rep_refused(void **state)
{
    (void)state;
    char url[64];
    int lfd = fake_listen(url, sizeof url);
    ldpb_tp *d = dial_sp(url, 2000, 1024);
    const uint8_t req_hs[8] = {0, 'S', 'P', 0, 0, 48, 0, 0};
    const char *http = "HTTP/1.1 400 Bad Request\r\n\r\n";
    const void *greet[2] = {req_hs, http};
    const char *want[2] = {"not a REP socket", "no SP header"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"hi", 2, NULL), LDPB_OK);
        uint8_t id[4];
        int fd = fake_accept(lfd, id, 2);
        assert_int_equal(write(fd, greet[i], 8), 8);
        put_reply(fd, 4 + 2, id, "no");
        uint8_t buf[8];
        size_t n = 0;
        char detail[LDPB_DETAIL_BYTES] = "";
        assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 2000, detail), LDPB_ETRANSPORT);
        assert_non_null(strstr(detail, want[i]));
        close(fd);
    }
    ldpb_tp_close(d, 0);
    close(lfd);
}

/* A peer that takes the request and closes: LDPB_ETIMEDOUT at once (no reply can come), not
 * after the whole timeout; a receive with nothing in flight is refused. */
static void test_closed_before_reply(void **state)
{
    (void)state;
    char url[64];
    int lfd = fake_listen(url, sizeof url);
    ldpb_tp *d = dial_sp(url, 2000, 1024);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"hi", 2, NULL), LDPB_OK);
    uint8_t id[4];
    int fd = fake_accept(lfd, id, 2);
    assert_int_equal(write(fd, rep_hs, 8), 8);
    close(fd);
    uint8_t buf[8];
    size_t n = 0;
    long t0 = ldpb_test_now_ms();
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 30000, NULL), LDPB_ETIMEDOUT);
    assert_true(ldpb_test_now_ms() - t0 < 10000);
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 100, NULL), LDPB_ETRANSPORT);
    ldpb_tp_close(d, 0);
    close(lfd);
}

/* The listener stops (and a new one starts on the same address) between two requests: the dialer
 * sees that its kept connection was closed and makes a new one, so the request is served (its
 * bytes never went to the dead connection). */
static void test_listener_restarted(void **state)
{
    (void)state;
    for (int ipc = 0; ipc < 2; ipc++) {
        char url[128];
        ldpb_tp *l = listen_fresh(url, sizeof url, ipc, 5, "sp");
        ldpb_tp *d = dial_sp(url, 2000, RECV_MAX);
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"a", 1, NULL), LDPB_OK);
        serve_one(l, 1, 'a', 2);
        expect_reply_into(d, 2, 'b');
        ldpb_tp_close(l, 0);
        ldpb_test_sleep_ms(50); /* the end of the stream reaches the dialer's socket */
        l = listen_at(url, "sp");
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"c", 1, NULL), LDPB_OK);
        serve_one(l, 1, 'c', 3);
        expect_reply_into(d, 3, 'd');
        ldpb_tp_close(d, 0);
        ldpb_tp_close(l, 0);
    }
}

/* A request unanswered within the timeout: LDPB_ETIMEDOUT, and the dialer goes on with the next
 * request on a fresh connection; the late reply to the first never reaches it. */
static void test_timeout_leaves_usable(void **state)
{
    (void)state;
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 6, "sp");
    ldpb_tp *d = dial_sp(url, 2000, RECV_MAX);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"slow", 4, NULL), LDPB_OK);
    ldpb_tp_msg m;
    ldpb_tp_route r;
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 2000 * LDPB_TEST_SLOWDOWN, NULL), LDPB_OK);
    uint8_t buf[16];
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 100, NULL), LDPB_ETIMEDOUT);
    (void)ldpb_tp_reply(l, r, (const uint8_t *)"late", 4); /* to a connection now closed */
    ldpb_tp_msg_free(l, &m);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"next", 4, NULL), LDPB_OK);
    for (;;) { /* the closed connection's end may come to the listener first */
        assert_int_equal(ldpb_tp_recv(l, &m, &r, 2000 * LDPB_TEST_SLOWDOWN, NULL), LDPB_OK);
        if (m.len == 4 && memcmp(m.data, "next", 4) == 0)
            break;
        ldpb_tp_route_free(l, r);
        ldpb_tp_msg_free(l, &m);
    }
    assert_int_equal(ldpb_tp_reply(l, r, (const uint8_t *)"yes", 3), LDPB_OK);
    ldpb_tp_msg_free(l, &m);
    assert_int_equal(ldpb_tp_recv_into(d, buf, sizeof buf, &n, 2000, NULL), LDPB_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(buf, "yes", 3);
    ldpb_tp_close(d, 0);
    ldpb_tp_close(l, 0);
}

typedef struct late_listener {
    const char *url;
    ldpb_tp *l;
} late_listener;

static void *start_late(void *arg)
{
    late_listener *ll = arg;
    ldpb_test_sleep_ms(300);
    ll->l = listen_at(ll->url, "sp");
    return NULL;
}

/* Nothing listens when the dialer is made: the dial succeeds (as nanomsg's, which connects in the
 * background); a send then times out with LDPB_ETIMEDOUT (nanomsg's send succeeds and its receive
 * times out: the same code for the caller's retry); once a listener is up the next request is
 * served, also when it comes up while a send is still trying to connect. Over tcp:// and ipc://. */
static void test_down_at_dial(void **state)
{
    (void)state;
    for (int ipc = 0; ipc < 2; ipc++) {
        char url[128];
        if (ipc)
            snprintf(url, sizeof url, "ipc:///tmp/ldpb-test-dial-%ld-7.sock", (long)getpid());
        else
            snprintf(url, sizeof url, "tcp://127.0.0.1:%d", ldpb_test_free_port());
        unlink(url + 6);
        ldpb_tp *d = dial_sp(url, 200, RECV_MAX);
        char detail[LDPB_DETAIL_BYTES] = "";
        long t0 = ldpb_test_now_ms();
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"a", 1, detail), LDPB_ETIMEDOUT);
        assert_true(ldpb_test_now_ms() - t0 >= 190);
        assert_non_null(strstr(detail, "cannot connect"));
        /* nanomsg's dialer, for comparison: the same code, from its receive */
        ldpb_tp_opts o;
        ldpb_tp_opts_init(&o);
        o.send_timeout_ms = 200;
        ldpb_tp *nn = NULL;
        assert_int_equal(ldpb_tp_dial_with(&nn, ldpb_tp_named("nanomsg"), url, &o, NULL), LDPB_OK);
        assert_int_equal(ldpb_tp_send(nn, (const uint8_t *)"a", 1, NULL), LDPB_OK);
        uint8_t buf[8];
        size_t n = 0;
        assert_int_equal(ldpb_tp_recv_into(nn, buf, sizeof buf, &n, 200, NULL), LDPB_ETIMEDOUT);
        ldpb_tp_close(nn, 0);

        ldpb_tp *l = listen_at(url, "sp");
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"b", 1, NULL), LDPB_OK);
        serve_one(l, 1, 'b', 1);
        expect_reply_into(d, 1, 'c');
        ldpb_tp_close(l, 0);
        ldpb_tp_close(d, 0);

        /* the listener starts while the send is trying */
        unlink(url + 6);
        d = dial_sp(url, 5000 * LDPB_TEST_SLOWDOWN, RECV_MAX);
        late_listener ll = {url, NULL};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, start_late, &ll), 0);
        assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"e", 1, NULL), LDPB_OK);
        pthread_join(th, NULL);
        serve_one(ll.l, 1, 'e', 1);
        expect_reply_into(d, 1, 'f');
        ldpb_tp_close(ll.l, 0);
        ldpb_tp_close(d, 0);
    }
}

/* URLs: a scheme the build does not serve and a tcp:// URL without a host are refused at dial. */
static void test_dial_urls(void **state)
{
    (void)state;
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    ldpb_tp *d = NULL;
    char detail[LDPB_DETAIL_BYTES] = "";
    const ldpb_tp_ops *sp = ldpb_tp_named("sp");
    assert_int_equal(ldpb_tp_dial_with(&d, sp, "http://x:1", &o, detail), LDPB_EINVAL);
    assert_int_equal(ldpb_tp_dial_with(&d, sp, "tcp://:5", &o, detail), LDPB_EINVAL);
    assert_int_equal(ldpb_tp_dial_with(&d, sp, "tcp://127.0.0.1", &o, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "no port"));
    assert_int_equal(ldpb_tp_dial_with(&d, sp, "ipc://", &o, detail), LDPB_EINVAL);
    assert_null(d);
    /* a host name is resolved when connecting, as nanomsg does: its IPv4 address first */
    char url[128], named[160];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 8, "sp");
    snprintf(named, sizeof named, "tcp://localhost:%s", strrchr(url, ':') + 1);
    d = dial_sp(named, 2000, RECV_MAX);
    assert_int_equal(ldpb_tp_send(d, (const uint8_t *)"n", 1, NULL), LDPB_OK);
    serve_one(l, 1, 'n', 1);
    expect_reply_into(d, 1, 'o');
    ldpb_tp_close(d, 0);
    ldpb_tp_close(l, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_listener),     cmocka_unit_test(test_nanomsg_listener),
        cmocka_unit_test(test_stale_reply_dropped), cmocka_unit_test(test_oversized_reply),
        cmocka_unit_test(test_not_rep_refused),     cmocka_unit_test(test_closed_before_reply),
        cmocka_unit_test(test_listener_restarted),  cmocka_unit_test(test_timeout_leaves_usable),
        cmocka_unit_test(test_down_at_dial),        cmocka_unit_test(test_dial_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
