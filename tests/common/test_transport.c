/* The transport seam (ldpb/transport.h): the native SP listener against nanomsg's REQ dialer, over
 * ipc:// and tcp://, and nanomsg's own listener through the same calls. Replies in any order from
 * any thread, a route freed without a reply, an oversized message dropping only its connection, a
 * peer that is not a REQ socket, a client that never reads its replies, requests pipelined in one
 * write, and the scheme table. */
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../support/test_port.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "../support/test_listen.h"

#define RECV_MAX 1024

static ldpb_tp *listen_fresh(char *url, size_t cap, int ipc, int n, const char *with)
{
    return ldpb_test_listen_fresh(url, cap, ipc, n, with, RECV_MAX, "transport");
}

static ldpb_tp *dial(const char *url)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.send_timeout_ms = 1000;
    ldpb_tp *d = NULL;
    assert_int_equal(ldpb_tp_dial(&d, url, &o, NULL), LDPB_OK);
    return d;
}

/* Receives one request on `l` within a second. */
static void recv_one(ldpb_tp *l, ldpb_tp_msg *m, ldpb_tp_route *r)
{
    assert_int_equal(ldpb_tp_recv(l, m, r, 1000, NULL), LDPB_OK);
}

/* Two clients' requests answered in the opposite order, the second answer from another thread;
 * then a route freed without an answer: that client times out and the listener goes on. */
static void round_trips(const char *listener, int ipc)
{
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, ipc, 1, listener);
    ldpb_tp *a = dial(url), *b = dial(url);
    assert_int_equal(ldpb_tp_send(a, (const uint8_t *)"from a", 6, NULL), LDPB_OK);
    ldpb_tp_msg ma, mb;
    ldpb_tp_route ra, rb;
    recv_one(l, &ma, &ra);
    assert_int_equal(ldpb_tp_send(b, (const uint8_t *)"from b!", 7, NULL), LDPB_OK);
    recv_one(l, &mb, &rb);
    assert_int_equal(ma.len, 6);
    assert_memory_equal(ma.data, "from a", 6);
    assert_int_equal(mb.len, 7);
    assert_int_equal(ldpb_tp_reply(l, rb, (const uint8_t *)"to b", 4), LDPB_OK);
    assert_int_equal(ldpb_tp_reply(l, ra, (const uint8_t *)"to a", 4), LDPB_OK);
    ldpb_tp_msg_free(l, &ma);
    ldpb_tp_msg_free(l, &mb);
    uint8_t buf[64];
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(a, buf, sizeof buf, &n, 1000, NULL), LDPB_OK);
    assert_int_equal(n, 4);
    assert_memory_equal(buf, "to a", 4);
    ldpb_tp_msg rep;
    assert_int_equal(ldpb_tp_recv(b, &rep, NULL, 1000, NULL), LDPB_OK);
    assert_int_equal(rep.len, 4);
    assert_memory_equal(rep.data, "to b", 4);
    ldpb_tp_msg_free(b, &rep);

    /* a route freed unanswered: no reply comes, the next request is served */
    assert_int_equal(ldpb_tp_send(a, (const uint8_t *)"drop me", 7, NULL), LDPB_OK);
    recv_one(l, &ma, &ra);
    ldpb_tp_route_free(l, ra);
    ldpb_tp_msg_free(l, &ma);
    assert_int_equal(ldpb_tp_recv_into(a, buf, sizeof buf, &n, 200, NULL), LDPB_ETIMEDOUT);
    assert_int_equal(ldpb_tp_send(b, (const uint8_t *)"again", 5, NULL), LDPB_OK);
    recv_one(l, &mb, &rb);
    assert_int_equal(ldpb_tp_reply(l, rb, (const uint8_t *)"ok", 2), LDPB_OK);
    ldpb_tp_msg_free(l, &mb);
    assert_int_equal(ldpb_tp_recv_into(b, buf, sizeof buf, &n, 1000, NULL), LDPB_OK);
    assert_int_equal(n, 2);
    ldpb_tp_close(a, 0);
    ldpb_tp_close(b, 0);
    ldpb_tp_close(l, 0);
}

static void test_native_round_trips(void **state)
{
    (void)state;
    round_trips("sp", 1);
    round_trips("sp", 0);
}

static void test_nanomsg_round_trips(void **state)
{
    (void)state;
    round_trips("nanomsg", 1);
    round_trips("nanomsg", 0);
}

/* A message above recv_max drops its connection only: its client gets nothing, another client
 * is served. */
static void test_oversized_drops_connection(void **state)
{
    (void)state;
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 2, "sp");
    ldpb_tp *big = dial(url), *small = dial(url);
    static uint8_t huge[RECV_MAX + 100];
    assert_int_equal(ldpb_tp_send(big, huge, sizeof huge, NULL), LDPB_OK);
    assert_int_equal(ldpb_tp_send(small, (const uint8_t *)"hi", 2, NULL), LDPB_OK);
    ldpb_tp_msg m;
    ldpb_tp_route r;
    recv_one(l, &m, &r);
    assert_int_equal(m.len, 2);
    assert_int_equal(ldpb_tp_reply(l, r, (const uint8_t *)"yo", 2), LDPB_OK);
    ldpb_tp_msg_free(l, &m);
    uint8_t buf[16];
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(small, buf, sizeof buf, &n, 1000, NULL), LDPB_OK);
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 200, NULL), LDPB_ETIMEDOUT);
    ldpb_tp_close(big, 0);
    ldpb_tp_close(small, 0);
    ldpb_tp_close(l, 0);
}

static int raw_connect(const char *url)
{
    int port = 0;
    assert_int_equal(sscanf(url, "tcp://127.0.0.1:%d", &port), 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* A peer announcing another protocol (REP, 49) is closed without a message; a REQ peer that sends
 * requests and never reads its replies is shut down once a reply has waited for room, and the
 * listener serves others meanwhile. */
static void test_hostile_peers(void **state)
{
    (void)state;
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 3, "sp");
    int fd = raw_connect(url);
    const uint8_t rep_hs[8] = {0, 'S', 'P', 0, 0, 49, 0, 0};
    const uint8_t msg[16] = {0, 0, 0, 0, 0, 0, 0, 8, 0x80, 0, 0, 1, 'a', 'b', 'c', 'd'};
    assert_int_equal(write(fd, rep_hs, 8), 8);
    assert_int_equal(write(fd, msg, sizeof msg), (ssize_t)sizeof msg);
    ldpb_tp_msg m;
    ldpb_tp_route r;
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 200, NULL), LDPB_ETIMEDOUT);
    uint8_t sink[64];
    ssize_t got = 0, k;
    while ((k = read(fd, sink, sizeof sink)) > 0)
        got += k;
    assert_int_equal(got, 8); /* the listener's handshake, then the end of the stream */
    close(fd);

    /* a REQ peer that never reads: replies of 256 KiB each until the socket buffer is full */
    fd = raw_connect(url);
    const uint8_t req_hs[8] = {0, 'S', 'P', 0, 0, 48, 0, 0};
    assert_int_equal(write(fd, req_hs, 8), 8);
    static uint8_t big[256 * 1024];
    int refused = 0;
    for (int i = 0; i < 200 && !refused; i++) {
        if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg)
            break;
        if (ldpb_tp_recv(l, &m, &r, 1000, NULL) != LDPB_OK)
            break;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        refused = ldpb_tp_reply(l, r, big, sizeof big) != LDPB_OK;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        assert_true(ms < 1000); /* the wait for room is bounded (100 ms) */
        ldpb_tp_msg_free(l, &m);
    }
    assert_true(refused);
    ldpb_tp *ok = dial(url);
    assert_int_equal(ldpb_tp_send(ok, (const uint8_t *)"still here", 10, NULL), LDPB_OK);
    for (;;) { /* the dead connection's end may come first */
        assert_int_equal(ldpb_tp_recv(l, &m, &r, 1000, NULL), LDPB_OK);
        if (m.len == 10)
            break;
        ldpb_tp_route_free(l, r);
        ldpb_tp_msg_free(l, &m);
    }
    assert_int_equal(ldpb_tp_reply(l, r, (const uint8_t *)"yes", 3), LDPB_OK);
    ldpb_tp_msg_free(l, &m);
    size_t n = 0;
    assert_int_equal(ldpb_tp_recv_into(ok, sink, sizeof sink, &n, 1000, NULL), LDPB_OK);
    assert_int_equal(n, 3);
    close(fd);
    ldpb_tp_close(ok, 0);
    ldpb_tp_close(l, 0);
}

/* One SP message (size, backtrace word `id`, then body bytes of `fill`) at p; its length. */
static size_t sp_request(uint8_t *p, uint32_t id, size_t body, uint8_t fill)
{
    uint64_t size = 4 + body;
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(size >> (56 - 8 * i));
    p[8] = (uint8_t)(0x80 | id >> 24);
    p[9] = (uint8_t)(id >> 16);
    p[10] = (uint8_t)(id >> 8);
    p[11] = (uint8_t)id;
    memset(p + 12, fill, body);
    return 12 + body;
}

static void recv_expect(ldpb_tp *l, size_t len, uint8_t fill)
{
    ldpb_tp_msg m;
    ldpb_tp_route r;
    recv_one(l, &m, &r);
    assert_int_equal(m.len, len);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(m.data[i], fill);
    assert_int_equal(ldpb_tp_reply(l, r, &fill, 1), LDPB_OK);
    ldpb_tp_msg_free(l, &m);
}

/* Requests a peer pipelines arrive together, and the listener reads ahead of the one it serves
 * (one read takes a small request's size and body): each must still be delivered, in order,
 * without the peer sending anything more -- the kernel signals no bytes already read -- and one
 * cut in two by a pause must wait for its second half. Their replies come back in order. */
static void test_pipelined_requests(void **state)
{
    (void)state;
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 4, "sp");
    int fd = raw_connect(url);
    static uint8_t out[4096];
    const uint8_t req_hs[8] = {0, 'S', 'P', 0, 0, 48, 0, 0};
    memcpy(out, req_hs, 8);
    size_t n = 8;
    const size_t bodies[4] = {3, 700, 1, 40}; /* 700: more than one read ahead takes */
    for (int i = 0; i < 4; i++)
        n += sp_request(out + n, (uint32_t)i + 1, bodies[i], (uint8_t)('a' + i));
    assert_int_equal(write(fd, out, n), (ssize_t)n); /* the handshake and four requests at once */
    for (int i = 0; i < 4; i++)
        recv_expect(l, bodies[i], (uint8_t)('a' + i));
    ldpb_tp_msg m;
    ldpb_tp_route r;
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 100, NULL), LDPB_ETIMEDOUT);
    /* a request cut inside its size, then the rest after a pause */
    n = sp_request(out, 9, 5, 'z');
    assert_int_equal(write(fd, out, 5), 5);
    assert_int_equal(ldpb_tp_recv(l, &m, &r, 100, NULL), LDPB_ETIMEDOUT);
    assert_int_equal(write(fd, out + 5, n - 5), (ssize_t)(n - 5));
    recv_expect(l, 5, 'z');
    /* the listener's handshake, then the replies: size 5 (the backtrace word and one byte) each,
     * in the requests' order */
    const uint8_t want[5] = {'a', 'b', 'c', 'd', 'z'};
    uint8_t in[8 + 5 * 13];
    size_t got = 0;
    while (got < sizeof in) {
        ssize_t k = read(fd, in + got, sizeof in - got);
        assert_true(k > 0);
        got += (size_t)k;
    }
    for (int i = 0; i < 5; i++) {
        assert_int_equal(in[8 + 13 * i + 7], 5);
        assert_int_equal(in[8 + 13 * i + 12], want[i]);
    }
    close(fd);
    ldpb_tp_close(l, 0);
}

/* The scheme table: tcp and ipc listen natively and dial with nanomsg; anything else is refused
 * with the list of schemes; an address in use is the transport's error, not the URL's. */
static void test_table(void **state)
{
    (void)state;
    char detail[LDPB_DETAIL_BYTES] = "";
    assert_ptr_equal(ldpb_tp_find("tcp://127.0.0.1:1", NULL), ldpb_tp_named("sp"));
    assert_ptr_equal(ldpb_tp_find("ipc:///x", NULL), ldpb_tp_named("sp"));
    assert_null(ldpb_tp_find("http://x", detail));
    assert_non_null(strstr(detail, "tcp://, ipc://"));
    assert_null(ldpb_tp_named("carrier-pigeon"));
    char url[128];
    ldpb_tp *l = listen_fresh(url, sizeof url, 0, 4, NULL);
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    ldpb_tp *again = NULL;
    const char *u = url;
    assert_int_equal(ldpb_tp_listen(&again, &u, 1, &o, detail), LDPB_ETRANSPORT);
    assert_non_null(strstr(detail, "cannot bind"));
    const char *bad = "tcp://no-such-interface:5555";
    assert_int_equal(ldpb_tp_listen(&again, &bad, 1, &o, detail), LDPB_EINVAL);
    ldpb_tp_close(l, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_round_trips),
        cmocka_unit_test(test_nanomsg_round_trips),
        cmocka_unit_test(test_oversized_drops_connection),
        cmocka_unit_test(test_hostile_peers),
        cmocka_unit_test(test_pipelined_requests),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
