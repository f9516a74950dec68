/* The native SP dialer (ldpb/transport.h): the REQ side of the wire that transport_sp.c's listener
 * serves and nanomsg's REQ socket speaks, over one socket driven by the calling thread alone. A
 * request is one write, its reply a poll and a read: no I/O thread and no hand-off between the
 * caller and the socket, which is what a nanomsg REQ socket costs on every round trip.
 *
 * The wire (transport_sp.c's comment): both ends first send "\0SP\0", their protocol (REQ 48, REP
 * 49) and two zero bytes; a message is a u64 big-endian size (IPC: after a type byte 1) and that
 * many bytes. A request's bytes are a 32-bit request id with the top bit set, then the payload; the
 * reply starts with the same id. A reply with another id answers an earlier request this dialer
 * gave up on: it is read and dropped.
 *
 * Connections, made to behave as nanomsg's dialer does for its callers: the dial itself only
 * checks the URL (a daemon that is not up yet is no error); a send without a connection connects,
 * and while connecting fails it tries again every RECONNECT_MS until the send timeout, then
 * LDPB_ETIMEDOUT (nanomsg keeps the request until a peer appears, and its caller then sees the
 * receive time out). A connection whose peer has closed it since the last request (a restarted
 * daemon) is replaced before the request is written, and a write that fails is repeated whole on a
 * fresh connection: a partly written request can never be served, so neither is a resend. Once a
 * request is on the wire nothing is ever resent: a connection that ends before the reply is
 * LDPB_ETIMEDOUT at once (no reply can come; the caller's resend with a fresh nonce is what
 * nanomsg would have done with the same bytes), and after any error or timeout the connection is
 * dropped, so the next request starts on a fresh one. */
#define _GNU_SOURCE /* POLLRDHUP */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/detail.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "transport_sp_internal.h"

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

/* How long a failed connect waits before the next try (nanomsg's default reconnect interval). */
#define RECONNECT_MS 100
/* Bytes one read asks for while no larger part of a reply is wanted: a reply's size, id and a
 * small body come in one call. */
#define READ_AHEAD 4096
/* The first allocation for a reply that recv returns; larger ones grow as their bytes arrive, so
 * an announced size costs nothing until its bytes are there. */
#define BODY_FIRST 16384

typedef struct sp_dialer {
    ldpb_tp base;
    int fd; /* -1: no connection */
    int ipc;
    int hs_sent;   /* our protocol header is on this connection */
    int peer_ok;   /* the peer's header was read: a REP socket */
    int in_flight; /* a request is on the wire and its reply not taken */
    uint32_t id;   /* that request's id, top bit set */
    uint32_t next_id;
    size_t recv_max;
    int send_timeout_ms;
    char url[LDPB_TP_URL_MAX + 1];
    char host[SP_HOST_MAX]; /* tcp:// with a host name: resolved at every connect */
    uint16_t port;
    struct sockaddr_storage addr; /* ipc://, or tcp:// with an address: addr_len nonzero */
    socklen_t addr_len;
    uint8_t ahead[READ_AHEAD]; /* read from the socket, not yet taken: [ahead_pos, ahead_len) */
    size_t ahead_pos, ahead_len;
} sp_dialer;

extern const ldpb_tp_ops ldpb_tp_sp_dialer_ops;

static uint64_t deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? UINT64_MAX : ldpb_sp_mono_ms() + (uint64_t)timeout_ms;
}

/* What poll(2) waits until the deadline: -1 for none. */
static int ms_left(uint64_t deadline)
{
    if (deadline == UINT64_MAX)
        return -1;
    uint64_t now = ldpb_sp_mono_ms();
    return now >= deadline ? 0 : deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

static void drop(sp_dialer *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
    d->hs_sent = d->peer_ok = d->in_flight = 0;
    d->ahead_pos = d->ahead_len = 0;
}

/* The address to connect to, `why` filled when there is none now. */
static int target(const sp_dialer *d, struct sockaddr_storage *ss, socklen_t *len, char *why)
{
    if (d->addr_len) {
        *ss = d->addr;
        *len = d->addr_len;
        return 0;
    }
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)d->port);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(d->host, port, &hints, &ai);
    /* an IPv4 address first, as nanomsg (NN_IPV4ONLY by default) connects: "localhost" may
     * resolve to ::1 first while the aggregator listens on 127.0.0.1 */
    const struct addrinfo *pick = ai;
    for (const struct addrinfo *i = ai; i; i = i->ai_next)
        if (i->ai_family == AF_INET) {
            pick = i;
            break;
        }
    if (rc != 0 || !pick || pick->ai_addrlen > sizeof *ss) {
        say(why, "cannot resolve %.128s: %s", d->host, rc ? gai_strerror(rc) : "no address");
        if (ai)
            freeaddrinfo(ai);
        return -1;
    }
    memcpy(ss, pick->ai_addr, pick->ai_addrlen);
    *len = pick->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/* One connect, waiting for it until the deadline: 0, or -1 with `why` filled. */
static int connect_once(sp_dialer *d, uint64_t deadline, char *why)
{
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    if (target(d, &ss, &sl, why) != 0)
        return -1;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        say(why, "socket: %s", strerror(errno));
        return -1;
    }
    int e = 0;
    if (connect(fd, (struct sockaddr *)&ss, sl) != 0) {
        e = errno;
        if (e == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int rc;
            while ((rc = poll(&p, 1, ms_left(deadline))) < 0 && errno == EINTR)
                ;
            socklen_t el = sizeof e;
            if (rc == 0)
                e = ETIMEDOUT;
            else if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
                e = errno;
        }
    }
    if (e) {
        say(why, "%s", strerror(e));
        close(fd);
        return -1;
    }
    if (!d->ipc) {
        /* a request is one write that waits for its reply: nothing to coalesce */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    d->fd = fd;
    return 0;
}

/* Sleeps RECONNECT_MS, or the `left` ms to the deadline if fewer (-1: no deadline). */
static void pause_before_retry(int left)
{
    int ms = left < 0 || left > RECONNECT_MS ? RECONNECT_MS : left;
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Connects, trying again every RECONNECT_MS until the deadline (nanomsg's dialer reconnects in
 * the background the same way); LDPB_ETIMEDOUT when it passes without a connection. */
static ldpb_err connect_until(sp_dialer *d, uint64_t deadline, char *detail)
{
    for (;;) {
        char why[LDPB_DETAIL_BYTES] = "";
        if (connect_once(d, deadline, why) == 0)
            return LDPB_OK;
        int left = ms_left(deadline);
        if (left == 0) {
            say(detail, "cannot connect to %.200s: %s", d->url, why);
            return LDPB_ETIMEDOUT;
        }
        pause_before_retry(left);
    }
}

/* Whether the connection kept since the last request is still open: a peer that closed it (a
 * daemon restarted meanwhile) would take the next request's bytes and never answer. */
static int still_open(const sp_dialer *d)
{
    struct pollfd p = {d->fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) == 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static ldpb_err spd_send(ldpb_tp *tp, const uint8_t *buf, size_t len, char *detail)
{
    sp_dialer *d = (sp_dialer *)tp;
    /* a new request abandons the one in flight, as a REQ socket's does: its reply, should it
     * come, carries the old id and is dropped */
    d->in_flight = 0;
    if (len > SIZE_MAX / 2) {
        say(detail, "a request of %zu bytes", len);
        return LDPB_EINVAL;
    }
    uint64_t deadline = deadline_of(d->send_timeout_ms);
    d->next_id = (d->next_id + 1) & 0x7fffffffu;
    uint32_t id = d->next_id | 0x80000000u;
    static const uint8_t hs[8] = {0, 'S', 'P', 0, 0, SP_PROTO_REQ, 0, 0};
    uint8_t head[13];
    size_t hl = 0;
    if (d->ipc)
        head[hl++] = IPC_MSG_NORMAL;
    uint64_t size = (uint64_t)len + 4;
    for (int i = 0; i < 8; i++)
        head[hl++] = (uint8_t)(size >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        head[hl++] = (uint8_t)(id >> (24 - 8 * i));
    if (d->fd >= 0 && !still_open(d))
        drop(d);
    for (;;) {
        int fresh = d->fd < 0;
        if (fresh) {
            ldpb_err err = connect_until(d, deadline, detail);
            if (err)
                return err;
        }
        struct iovec iov[3] = {
            {(void *)hs, d->hs_sent ? 0 : sizeof hs}, {head, hl}, {(void *)buf, len}};
        if (ldpb_sp_write_iov(d->fd, iov, 3, deadline) == 0) {
            d->hs_sent = 1;
            d->in_flight = 1;
            d->id = id;
            return LDPB_OK;
        }
        int e = errno;
        drop(d); /* half a request on the wire is never served: it may go whole on a new one */
        int left = ms_left(deadline);
        if (e == ETIMEDOUT || left == 0) {
            say(detail, "sending to %.200s: %s", d->url, strerror(e));
            return LDPB_ETIMEDOUT;
        }
        if (fresh) { /* a peer that takes connections and drops them: not at full speed */
            pause_before_retry(left);
        }
    }
}

/* The connection ended (or broke) while a reply was awaited: no reply can come now. */
static ldpb_err lost(sp_dialer *d, const char *why, char *detail)
{
    say(detail, "the connection to %.200s %s before the reply", d->url, why);
    return LDPB_ETIMEDOUT;
}

/* Fills dst[0..n) from what was read ahead and the socket, waiting until the deadline. */
static ldpb_err take(sp_dialer *d, uint8_t *dst, size_t n, uint64_t deadline, char *detail)
{
    while (n) {
        if (d->ahead_pos < d->ahead_len) {
            size_t k = d->ahead_len - d->ahead_pos < n ? d->ahead_len - d->ahead_pos : n;
            memcpy(dst, d->ahead + d->ahead_pos, k);
            d->ahead_pos += k;
            dst += k;
            n -= k;
            continue;
        }
        /* a reply is rarely there the moment it is wanted: wait first, then one read */
        struct pollfd p = {d->fd, POLLIN, 0};
        int rc = poll(&p, 1, ms_left(deadline));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0)
            return LDPB_ETIMEDOUT; /* as nanomsg's: no detail, the caller knows its timeout */
        if (rc < 0) {
            say(detail, "poll: %s", strerror(errno));
            return LDPB_ETRANSPORT;
        }
        ssize_t r;
        if (n >= sizeof d->ahead) {
            r = read(d->fd, dst, n);
        } else {
            r = read(d->fd, d->ahead, sizeof d->ahead);
            if (r > 0) {
                d->ahead_pos = 0;
                d->ahead_len = (size_t)r;
                continue;
            }
        }
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r == 0)
            return lost(d, "was closed", detail);
        if (r < 0) {
            if (errno == ECONNRESET || errno == EPIPE)
                return lost(d, "was reset", detail);
            say(detail, "reading from %.200s: %s", d->url, strerror(errno));
            return LDPB_ETRANSPORT;
        }
        dst += r;
        n -= (size_t)r;
    }
    return LDPB_OK;
}

static ldpb_err skip(sp_dialer *d, uint64_t n, uint64_t deadline, char *detail)
{
    uint8_t sink[512];
    while (n) {
        size_t k = n < sizeof sink ? (size_t)n : sizeof sink;
        ldpb_err err = take(d, sink, k, deadline, detail);
        if (err)
            return err;
        n -= k;
    }
    return LDPB_OK;
}

/* The peer's protocol header: a REP socket's, or the peer is no aggregator nor relay. */
static ldpb_err check_peer(sp_dialer *d, uint64_t deadline, char *detail)
{
    uint8_t h[8];
    ldpb_err err = take(d, h, sizeof h, deadline, detail);
    if (err)
        return err;
    if (memcmp(h, "\0SP\0", 4) != 0 || h[6] != 0 || h[7] != 0) {
        say(detail, "%.200s does not speak the SP protocol (its first bytes are no SP header)",
            d->url);
        return LDPB_ETRANSPORT;
    }
    unsigned proto = (unsigned)h[4] << 8 | h[5];
    if (proto != SP_PROTO_REP) {
        say(detail,
            "%.200s is an SP socket of protocol %u, not a REP socket (%d): not an aggregator or "
            "a relay",
            d->url, proto, SP_PROTO_REP);
        return LDPB_ETRANSPORT;
    }
    d->peer_ok = 1;
    return LDPB_OK;
}

/* Reads up to the body of the reply to the request in flight: its length in *len. Replies to
 * earlier requests are dropped on the way; a reply longer than recv_max is refused before any of
 * its body is read or allocated. */
static ldpb_err reply_head(sp_dialer *d, uint64_t deadline, uint64_t *len, char *detail)
{
    if (!d->in_flight || d->fd < 0) {
        say(detail, "no request in flight (none sent, or it failed or timed out)");
        return LDPB_ETRANSPORT;
    }
    ldpb_err err = d->peer_ok ? LDPB_OK : check_peer(d, deadline, detail);
    while (!err) {
        uint8_t h[13];
        size_t hl = d->ipc ? 9 : 8;
        if ((err = take(d, h, hl + 4, deadline, detail)) != LDPB_OK)
            break;
        uint64_t size = ldpb_sp_be64(h + hl - 8);
        uint32_t id = (uint32_t)h[hl] << 24 | (uint32_t)h[hl + 1] << 16 | (uint32_t)h[hl + 2] << 8 |
                      h[hl + 3];
        /* a size under 4 has its id's bytes already taken above: the stream is lost either way */
        if ((d->ipc && h[0] != IPC_MSG_NORMAL) || size < 4 || !(id & 0x80000000u)) {
            say(detail, "a malformed reply from %.200s (not one request id, then the body)",
                d->url);
            return LDPB_ETRANSPORT;
        }
        size -= 4;
        if ((d->recv_max && size > d->recv_max) || size > SIZE_MAX / 2) {
            say(detail, "a reply of %llu bytes from %.200s, more than the limit of %zu",
                (unsigned long long)size, d->url, d->recv_max);
            return LDPB_ETRANSPORT;
        }
        if (id == d->id) {
            *len = size;
            return LDPB_OK;
        }
        err = skip(d, size, deadline, detail); /* a stale reply: of a request given up on */
    }
    return err;
}

static ldpb_err spd_recv_into(ldpb_tp *tp, uint8_t *buf, size_t cap, size_t *n, int timeout_ms,
                              char *detail)
{
    sp_dialer *d = (sp_dialer *)tp;
    *n = 0;
    uint64_t deadline = deadline_of(timeout_ms);
    uint64_t len = 0;
    ldpb_err err = reply_head(d, deadline, &len, detail);
    if (!err) {
        /* a reply longer than buf: its first cap bytes, and its length tells the caller */
        size_t k = len < cap ? (size_t)len : cap;
        err = take(d, buf, k, deadline, detail);
        if (!err)
            err = skip(d, len - k, deadline, detail);
    }
    if (err) {
        drop(d);
        return err;
    }
    d->in_flight = 0;
    *n = (size_t)len;
    return LDPB_OK;
}

static ldpb_err spd_recv(ldpb_tp *tp, ldpb_tp_msg *m, ldpb_tp_route *r, int timeout_ms,
                         char *detail)
{
    sp_dialer *d = (sp_dialer *)tp;
    memset(m, 0, sizeof *m);
    if (r)
        r->h = NULL;
    uint64_t deadline = deadline_of(timeout_ms);
    uint64_t len = 0;
    uint8_t *body = NULL;
    ldpb_err err = reply_head(d, deadline, &len, detail);
    size_t got = 0, cap = 0;
    while (!err && (got < len || !body)) {
        if (got == cap) {
            size_t want = cap ? (cap * 2 < len ? cap * 2 : (size_t)len)
                              : (len < BODY_FIRST ? (len ? (size_t)len : 1) : BODY_FIRST);
            uint8_t *nb = realloc(body, want);
            if (!nb) {
                err = LDPB_ENOMEM;
                break;
            }
            body = nb;
            cap = want;
        }
        size_t k = (len < cap ? (size_t)len : cap) - got;
        err = take(d, body + got, k, deadline, detail);
        got += k;
    }
    if (err) {
        free(body);
        drop(d);
        return err;
    }
    d->in_flight = 0;
    m->data = body;
    m->len = (size_t)len;
    m->h = body;
    return LDPB_OK;
}

static void spd_msg_free(ldpb_tp_msg *m)
{
    free(m->h);
    memset(m, 0, sizeof *m);
}

static void spd_close(ldpb_tp *tp, int linger_ms)
{
    (void)linger_ms; /* a request is written before its send returns: nothing waits to leave */
    sp_dialer *d = (sp_dialer *)tp;
    drop(d);
    free(d);
}

ldpb_err ldpb_sp_dial(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail)
{
    *out = NULL;
    if (!url || strlen(url) > LDPB_TP_URL_MAX) {
        say(detail, "no URL, or one longer than %d bytes", LDPB_TP_URL_MAX);
        return LDPB_EINVAL;
    }
    sp_dialer *d = calloc(1, sizeof *d);
    if (!d)
        return LDPB_ENOMEM;
    d->base.ops = &ldpb_tp_sp_dialer_ops;
    d->fd = -1;
    d->recv_max = o->recv_max;
    d->send_timeout_ms = o->send_timeout_ms;
    strcpy(d->url, url);
    ldpb_err err = LDPB_OK;
    if (strncmp(url, "ipc://", 6) == 0) {
        d->ipc = 1;
        err = ldpb_sp_ipc_addr(url, "dial", (struct sockaddr_un *)&d->addr, &d->addr_len, detail);
    } else if (strncmp(url, "tcp://", 6) == 0) {
        err = ldpb_sp_tcp_split(url, "dial", d->host, &d->port, detail);
        if (!err && (d->host[0] == '\0' || strcmp(d->host, "*") == 0)) {
            say(detail, "cannot dial %.200s: no host", url);
            err = LDPB_EINVAL;
        }
        if (!err && !ldpb_sp_ip_literal(d->host, d->port, &d->addr, &d->addr_len))
            d->addr_len = 0; /* a host name: resolved when connecting, as nanomsg does */
    } else {
        say(detail, "cannot dial %.200s: not a tcp:// or ipc:// URL", url);
        err = LDPB_EINVAL;
    }
    if (err) {
        free(d);
        return err;
    }
    *out = &d->base;
    return LDPB_OK;
}

/* ---- what a dialer is not asked ----------------------------------------------------------- */

static ldpb_err spd_no_listen(ldpb_tp **out, const ldpb_tp_opts *o, char *detail)
{
    (void)o;
    *out = NULL;
    say(detail, "a dialer does not listen");
    return LDPB_EINVAL;
}

static ldpb_err spd_no_bind(ldpb_tp *t, const char *url, char *detail)
{
    (void)t;
    say(detail, "a dialer does not bind %.200s", url);
    return LDPB_EINVAL;
}

static ldpb_err spd_no_reply(ldpb_tp *t, ldpb_tp_route r, const uint8_t *buf, size_t len)
{
    (void)t;
    (void)r;
    (void)buf;
    (void)len;
    return LDPB_EINVAL;
}

static void spd_no_route_free(ldpb_tp_route r)
{
    (void)r; /* a dialer hands out no routes */
}

static ldpb_err spd_no_wait(ldpb_tp *t, int timeout_ms, int *ready)
{
    (void)t;
    (void)timeout_ms;
    *ready = 0;
    return LDPB_EINVAL;
}

/* The table of a dialer's endpoint; ldpb_tp_sp_ops (transport_sp.c) dials through ldpb_sp_dial,
 * and the listener's endpoints keep its own table. */
const ldpb_tp_ops ldpb_tp_sp_dialer_ops = {
    .name = "sp",
    .listen = spd_no_listen,
    .bind = spd_no_bind,
    .dial = ldpb_sp_dial,
    .recv = spd_recv,
    .recv_into = spd_recv_into,
    .send = spd_send,
    .reply = spd_no_reply,
    .route_free = spd_no_route_free,
    .msg_free = spd_msg_free,
    .wait = spd_no_wait,
    .close = spd_close,
};
