/* The transport seam: every byte between a device, a relay and the aggregator moves through the
 * operations of this header, and each transport is one table of them (ldpb_tp_ops), in the style
 * of nng's transport ops. A URL's scheme picks the table (transport.c, the one list of schemes);
 * nanomsg lives in transport_nn.c and nowhere else. Internal to the build: not installed, and not
 * part of the client library's API.
 *
 * Two kinds of endpoint:
 *   a listener (ldpb_tp_listen): bound to one or more URLs, receives requests, each with an
 *     opaque route, and answers each route at most once (ldpb_tp_reply), from any thread and in
 *     any order; several threads may receive on one listener at once.
 *   a dialer (ldpb_tp_dial): connected to one URL, sends a request and receives its reply, one
 *     request in flight; one thread at a time.
 * A transport never resends a request on its own: resends are the caller's, with a fresh nonce
 * (a resent copy of the same bytes is a replay to the aggregator).
 *
 * Adding a transport: a transport_X.c defining its ldpb_tp_ops, its schemes in transport.c's
 * table (with the extern declaration of its ops there), its file in common/CMakeLists.txt, and its
 * package in scripts/deps.sh: four files (docs/aggregator.md, "Module map").
 *
 * The transports: "nanomsg" (transport_nn.c, both sides; the default dialer) and "sp", the native
 * SP listener (transport_sp.c, the default listener) and dialer (transport_sp_dial.c, picked by
 * name through ldpb_tp_dial_with). Dialers differ in cost, not in what a caller sees: neither fails
 * at dial when the peer is not up yet, and a peer that is unreachable, or a connection that ends
 * before the reply, reads as LDPB_ETIMEDOUT (nanomsg: the receive times out; the native dialer: a
 * send that cannot connect within send_timeout_ms, or the receive at once), so a caller's resend
 * logic is the same over both. */
#ifndef LDPB_TRANSPORT_H
#define LDPB_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"

/* Longest URL any transport accepts. */
#define LDPB_TP_URL_MAX 127

typedef struct ldpb_tp ldpb_tp;

/* Where a received request's reply goes. Owned by whoever received the request until
 * ldpb_tp_reply or ldpb_tp_route_free consumes it (exactly one of them, once). */
typedef struct ldpb_tp_route {
    void *h;
} ldpb_tp_route;

/* A received message. The bytes belong to the transport until ldpb_tp_msg_free. */
typedef struct ldpb_tp_msg {
    uint8_t *data;
    size_t len;
    void *h;
} ldpb_tp_msg;

typedef struct ldpb_tp_opts {
    size_t recv_max;     /* longest message received; longer ones are dropped (0: no limit) */
    int send_timeout_ms; /* how long a send may wait for room (-1: forever) */
    size_t send_buffer;  /* bytes of replies a listener may queue (0: the transport's default) */
} ldpb_tp_opts;

/* recv_max 0, send_timeout_ms -1, send_buffer 0. */
void ldpb_tp_opts_init(ldpb_tp_opts *o);

/* The operations of one transport. `detail` buffers are LDPB_DETAIL_BYTES (ldpb/wire.h) and may be
 * NULL. Errors: LDPB_EINVAL (a URL the transport refuses: syntax, unknown interface, permission),
 * LDPB_ETRANSPORT (anything else: an address in use, a broken connection), LDPB_ETIMEDOUT (nothing
 * within the timeout; also a signal), LDPB_ENOMEM. */
typedef struct ldpb_tp_ops {
    const char *name;
    ldpb_err (*listen)(ldpb_tp **out, const ldpb_tp_opts *o, char *detail);
    ldpb_err (*bind)(ldpb_tp *t, const char *url, char *detail);
    ldpb_err (*dial)(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail);
    /* A listener's next request and its route, or a dialer's reply. timeout_ms 0: do not wait,
     * -1: forever. */
    ldpb_err (*recv)(ldpb_tp *t, ldpb_tp_msg *m, ldpb_tp_route *r, int timeout_ms, char *detail);
    /* A dialer's reply into buf[0..cap); *n is the message's length as the transport reports it,
     * so a caller that passes one spare byte recognises an oversized reply. */
    ldpb_err (*recv_into)(ldpb_tp *t, uint8_t *buf, size_t cap, size_t *n, int timeout_ms,
                          char *detail);
    ldpb_err (*send)(ldpb_tp *t, const uint8_t *buf, size_t len, char *detail);
    /* Answers a route without waiting; consumes it whether or not it could send. */
    ldpb_err (*reply)(ldpb_tp *t, ldpb_tp_route r, const uint8_t *buf, size_t len);
    void (*route_free)(ldpb_tp_route r);
    void (*msg_free)(ldpb_tp_msg *m);
    /* 1 once a listener has a request waiting, 0 after timeout_ms without one. */
    ldpb_err (*wait)(ldpb_tp *t, int timeout_ms, int *ready);
    /* Closes after giving queued replies linger_ms to leave. */
    void (*close)(ldpb_tp *t, int linger_ms);
} ldpb_tp_ops;

/* Every endpoint starts with its table. */
struct ldpb_tp {
    const ldpb_tp_ops *ops;
};

/* The transport that listens on a URL's scheme ("tcp://..."), or NULL with a detail. */
const ldpb_tp_ops *ldpb_tp_find(const char *url, char *detail);
/* A transport by its ops' name ("nanomsg", "sp"), or NULL: for benches that compare them. */
const ldpb_tp_ops *ldpb_tp_named(const char *name);
/* The schemes this build serves, for messages: "tcp://, ipc://". */
const char *ldpb_tp_schemes(void);

/* A listener bound to every url[0..n) (all of one transport: LDPB_EINVAL otherwise). */
ldpb_err ldpb_tp_listen(ldpb_tp **out, const char *const *urls, size_t n, const ldpb_tp_opts *o,
                        char *detail);
/* The same with the given transport (NULL: the table's) instead of the table's listener. */
ldpb_err ldpb_tp_listen_with(ldpb_tp **out, const ldpb_tp_ops *with, const char *const *urls,
                             size_t n, const ldpb_tp_opts *o, char *detail);
/* A dialer connected to `url` by its scheme's dialer. */
ldpb_err ldpb_tp_dial(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail);
/* The same with the given transport (NULL: the table's) instead of the table's dialer; the scheme
 * must still be one the build serves. */
ldpb_err ldpb_tp_dial_with(ldpb_tp **out, const ldpb_tp_ops *with, const char *url,
                           const ldpb_tp_opts *o, char *detail);

static inline ldpb_err ldpb_tp_recv(ldpb_tp *t, ldpb_tp_msg *m, ldpb_tp_route *r, int timeout_ms,
                                    char *detail)
{
    return t->ops->recv(t, m, r, timeout_ms, detail);
}
static inline ldpb_err ldpb_tp_recv_into(ldpb_tp *t, uint8_t *buf, size_t cap, size_t *n,
                                         int timeout_ms, char *detail)
{
    return t->ops->recv_into(t, buf, cap, n, timeout_ms, detail);
}
static inline ldpb_err ldpb_tp_send(ldpb_tp *t, const uint8_t *buf, size_t len, char *detail)
{
    return t->ops->send(t, buf, len, detail);
}
static inline ldpb_err ldpb_tp_reply(ldpb_tp *t, ldpb_tp_route r, const uint8_t *buf, size_t len)
{
    return t->ops->reply(t, r, buf, len);
}
static inline void ldpb_tp_route_free(ldpb_tp *t, ldpb_tp_route r)
{
    t->ops->route_free(r);
}
static inline void ldpb_tp_msg_free(ldpb_tp *t, ldpb_tp_msg *m)
{
    t->ops->msg_free(m);
}
static inline ldpb_err ldpb_tp_wait(ldpb_tp *t, int timeout_ms, int *ready)
{
    return t->ops->wait(t, timeout_ms, ready);
}
/* Accepts NULL. */
void ldpb_tp_close(ldpb_tp *t, int linger_ms);

#endif
