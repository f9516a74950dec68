/* The nanomsg transport (ldpb/transport.h): a listener is one AF_SP_RAW NN_REP socket bound to
 * every URL, whose receives carry the REQ/REP backtrace header as the route; a dialer is one NN_REQ
 * socket. The only file of the build that includes a nanomsg header. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#include "ldpb/detail.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

_Static_assert(LDPB_TP_URL_MAX < NN_SOCKADDR_MAX, "URL limit");

typedef struct nn_tp {
    ldpb_tp base;
    int sock;
    /* The receive timeout set on the socket now: set again only when a call asks for another
     * (every receiving thread of a listener normally asks for the same). */
    atomic_int rcvtimeo;
} nn_tp;

extern const ldpb_tp_ops ldpb_tp_nn_ops;

/* nanomsg's errors for a URL: a refused address is the caller's, anything else the transport's. */
static ldpb_err url_error(int e)
{
    if (e == EADDRINUSE)
        return LDPB_ETRANSPORT;
    return e == EINVAL || e == EPROTONOSUPPORT || e == ENAMETOOLONG || e == ENODEV || e == EACCES
               ? LDPB_EINVAL
               : LDPB_ETRANSPORT;
}

static ldpb_err io_error(int e, const char *what, char *detail)
{
    if (e == ETIMEDOUT || e == EAGAIN)
        return LDPB_ETIMEDOUT;
    say(detail, "%s: %s", what, nn_strerror(e));
    return e == ENOMEM ? LDPB_ENOMEM : LDPB_ETRANSPORT;
}

static ldpb_err open_socket(nn_tp **out, int domain, int protocol, const ldpb_tp_opts *o,
                            char *detail)
{
    *out = NULL;
    nn_tp *t = calloc(1, sizeof *t);
    if (!t)
        return LDPB_ENOMEM;
    t->base.ops = &ldpb_tp_nn_ops;
    atomic_init(&t->rcvtimeo, -1);
    t->sock = nn_socket(domain, protocol);
    if (t->sock < 0) {
        say(detail, "nn_socket: %s", nn_strerror(nn_errno()));
        free(t);
        return LDPB_ETRANSPORT;
    }
    int maxsz = o->recv_max == 0 || o->recv_max > INT_MAX ? -1 : (int)o->recv_max;
    int sndtimeo = o->send_timeout_ms;
    int ok = nn_setsockopt(t->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsz, sizeof maxsz) == 0 &&
             nn_setsockopt(t->sock, NN_SOL_SOCKET, NN_SNDTIMEO, &sndtimeo, sizeof sndtimeo) == 0;
    if (ok && o->send_buffer) {
        int sndbuf = o->send_buffer > INT_MAX ? INT_MAX : (int)o->send_buffer;
        ok = nn_setsockopt(t->sock, NN_SOL_SOCKET, NN_SNDBUF, &sndbuf, sizeof sndbuf) == 0;
    }
    if (ok && protocol == NN_REQ) {
        /* nanomsg would resend an unanswered request on its own (the same bytes, which the
         * aggregator's replay cache refuses); resends are the caller's, so its timer never
         * fires. */
        int resend = INT_MAX;
        ok = nn_setsockopt(t->sock, NN_REQ, NN_REQ_RESEND_IVL, &resend, sizeof resend) == 0;
    }
    if (!ok) {
        say(detail, "nn_setsockopt: %s", nn_strerror(nn_errno()));
        nn_close(t->sock);
        free(t);
        return LDPB_ETRANSPORT;
    }
    *out = t;
    return LDPB_OK;
}

static ldpb_err nn_listen_(ldpb_tp **out, const ldpb_tp_opts *o, char *detail)
{
    nn_tp *t = NULL;
    ldpb_err err = open_socket(&t, AF_SP_RAW, NN_REP, o, detail);
    *out = t ? &t->base : NULL;
    return err;
}

static ldpb_err nn_bind_(ldpb_tp *tp, const char *url, char *detail)
{
    nn_tp *t = (nn_tp *)tp;
    if (nn_bind(t->sock, url) >= 0)
        return LDPB_OK;
    int e = nn_errno();
    say(detail, "cannot bind %.200s: %s", url, nn_strerror(e));
    return url_error(e);
}

static ldpb_err nn_dial_(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail)
{
    nn_tp *t = NULL;
    ldpb_err err = open_socket(&t, AF_SP, NN_REQ, o, detail);
    if (err)
        return err;
    if (nn_connect(t->sock, url) < 0) {
        int e = nn_errno();
        say(detail, "cannot connect to %.200s: %s", url, nn_strerror(e));
        nn_close(t->sock);
        free(t);
        return url_error(e);
    }
    *out = &t->base;
    return LDPB_OK;
}

/* Sets the receive timeout for a blocking call (0: the call does not block, NN_DONTWAIT). */
static int set_timeout(nn_tp *t, int timeout_ms, char *detail)
{
    if (timeout_ms == 0)
        return NN_DONTWAIT;
    if (atomic_load(&t->rcvtimeo) != timeout_ms) {
        if (nn_setsockopt(t->sock, NN_SOL_SOCKET, NN_RCVTIMEO, &timeout_ms, sizeof timeout_ms) <
            0) {
            say(detail, "nn_setsockopt: %s", nn_strerror(nn_errno()));
            return -1;
        }
        atomic_store(&t->rcvtimeo, timeout_ms);
    }
    return 0;
}

/* The one receive loop of the build: a listener's request with its backtrace header, or a
 * dialer's reply (no header). */
static ldpb_err nn_recv_(ldpb_tp *tp, ldpb_tp_msg *m, ldpb_tp_route *r, int timeout_ms,
                         char *detail)
{
    nn_tp *t = (nn_tp *)tp;
    memset(m, 0, sizeof *m);
    if (r)
        r->h = NULL;
    int flags = set_timeout(t, timeout_ms, detail);
    if (flags < 0)
        return LDPB_ETRANSPORT;
    void *body = NULL, *control = NULL;
    struct nn_iovec iov = {&body, NN_MSG};
    struct nn_msghdr hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.msg_iov = &iov;
    hdr.msg_iovlen = 1;
    if (r) {
        hdr.msg_control = &control;
        hdr.msg_controllen = NN_MSG;
    }
    int n;
    while ((n = nn_recvmsg(t->sock, &hdr, flags)) < 0 && nn_errno() == EINTR)
        ;
    if (n < 0)
        return io_error(nn_errno(), "nn_recvmsg", detail);
    m->data = body;
    m->len = (size_t)n;
    m->h = body;
    if (r)
        r->h = control;
    return LDPB_OK;
}

static ldpb_err nn_recv_into_(ldpb_tp *tp, uint8_t *buf, size_t cap, size_t *n, int timeout_ms,
                              char *detail)
{
    nn_tp *t = (nn_tp *)tp;
    *n = 0;
    int flags = set_timeout(t, timeout_ms, detail);
    if (flags < 0)
        return LDPB_ETRANSPORT;
    int rc;
    while ((rc = nn_recv(t->sock, buf, cap, flags)) < 0 && nn_errno() == EINTR)
        ;
    if (rc < 0)
        return io_error(nn_errno(), "nn_recv", detail);
    *n = (size_t)rc;
    return LDPB_OK;
}

static ldpb_err nn_send_(ldpb_tp *tp, const uint8_t *buf, size_t len, char *detail)
{
    nn_tp *t = (nn_tp *)tp;
    for (;;) {
        if (nn_send(t->sock, buf, len, 0) >= 0)
            return LDPB_OK;
        int e = nn_errno();
        if (e == EINTR)
            continue;
        return io_error(e, "nn_send", detail);
    }
}

static ldpb_err nn_reply_(ldpb_tp *tp, ldpb_tp_route r, const uint8_t *buf, size_t len)
{
    nn_tp *t = (nn_tp *)tp;
    void *control = r.h;
    struct nn_iovec iov = {(void *)buf, len};
    struct nn_msghdr hdr;
    memset(&hdr, 0, sizeof hdr);
    hdr.msg_iov = &iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = &control;
    hdr.msg_controllen = NN_MSG;
    if (nn_sendmsg(t->sock, &hdr, NN_DONTWAIT) >= 0)
        return LDPB_OK; /* nanomsg took the header */
    if (control)
        nn_freemsg(control);
    return LDPB_ETRANSPORT;
}

static void nn_route_free_(ldpb_tp_route r)
{
    if (r.h)
        nn_freemsg(r.h);
}

static void nn_msg_free_(ldpb_tp_msg *m)
{
    if (m->h)
        nn_freemsg(m->h);
    memset(m, 0, sizeof *m);
}

static ldpb_err nn_wait_(ldpb_tp *tp, int timeout_ms, int *ready)
{
    nn_tp *t = (nn_tp *)tp;
    struct nn_pollfd pfd = {t->sock, NN_POLLIN, 0};
    *ready = 0;
    int rc = nn_poll(&pfd, 1, timeout_ms);
    if (rc < 0)
        return nn_errno() == EINTR ? LDPB_OK : LDPB_ETRANSPORT;
    *ready = rc > 0 && (pfd.revents & NN_POLLIN);
    return LDPB_OK;
}

static void nn_close_(ldpb_tp *tp, int linger_ms)
{
    nn_tp *t = (nn_tp *)tp;
    if (linger_ms > 0) {
        /* nanomsg drops what is still queued when a socket closes */
        struct timespec ts = {linger_ms / 1000, (long)(linger_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    while (nn_close(t->sock) != 0 && nn_errno() == EINTR)
        ;
    free(t);
}

const ldpb_tp_ops ldpb_tp_nn_ops = {
    .name = "nanomsg",
    .listen = nn_listen_,
    .bind = nn_bind_,
    .dial = nn_dial_,
    .recv = nn_recv_,
    .recv_into = nn_recv_into_,
    .send = nn_send_,
    .reply = nn_reply_,
    .route_free = nn_route_free_,
    .msg_free = nn_msg_free_,
    .wait = nn_wait_,
    .close = nn_close_,
};
