/* A native listener of the SP wire protocol (ldpb/transport.h), the REP side of what nanomsg's
 * REQ sockets speak over tcp:// and ipc://, served straight from the receiving threads: no I/O
 * thread between the socket and the worker, no lock shared by receiving and replying.
 *
 * The wire (nanomsg 1.x, the scalability protocols' TCP and IPC mappings): each side first sends an
 * 8-byte header "\0SP\0", its protocol (u16 big-endian; REQ 48, REP 49) and two zero bytes; then
 * every message is a u64 big-endian size (IPC: after a type byte 1) and that many bytes. A REQ
 * request's bytes start with its backtrace: 32-bit big-endian words up to the first one with the
 * top bit set (the request id); the reply carries the same words before its body.
 *
 * Threads: any number may call recv at once. The listening sockets are level-triggered in one
 * epoll set; each connection is armed one-shot, so exactly one thread reads it at a time, and a
 * connection is re-armed after every message (a client that pipelines requests is read again at
 * once). A read takes up to READ_AHEAD bytes, so a small request's size and body come in one
 * system call; bytes read beyond a message (a pipelining client's next one) are not signalled by
 * the kernel again, so such a connection is queued to be served instead of re-armed. A reply is
 * written by the thread that answers, under the connection's own write lock, without waiting: a
 * connection whose socket buffer stays full for REPLY_WAIT_MS is shut down (its client resends). A
 * connection lives until it has been shut down and every route to it is answered or freed (a
 * reference count), so a descriptor is never closed while a reply may still use it. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/detail.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "transport_sp_internal.h"

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

/* A backtrace longer than this many words is refused (the connection is dropped). */
#define BACKTRACE_WORDS_MAX 8
/* How long a reply may wait for room in its connection's socket buffer. */
#define REPLY_WAIT_MS     100
#define LISTENERS_MAX     16
#define ACCEPTS_PER_EVENT 16
/* Events one epoll_wait takes, and the most that wait to be served (beyond it a connection is
 * re-armed instead: its event comes again). */
#define EVENTS_PER_WAIT 16
#define READY_MAX       1024
/* Bytes one read asks for while no larger part of a body is wanted: a sealed device request with
 * its SP header fits. */
#define READ_AHEAD 512
/* The first allocation for a message's body; larger ones grow as their bytes arrive. */
#define BODY_FIRST 16384
/* How long accepting pauses when the process is out of descriptors or memory. */
#define ACCEPT_PAUSE_MS 100

enum { TAG_LISTEN = 1, TAG_CONN = 2 };

typedef struct sp_conn {
    int tag; /* TAG_CONN */
    int fd;
    int ipc;
    atomic_int refs; /* the listener's list while open, plus one per route */
    atomic_int dead; /* shut down: replies are dropped */
    pthread_mutex_t wmu;
    struct sp_conn *prev, *next; /* the listener's list, under its mu */
    /* read state: only the thread that took the connection's one-shot event touches it */
    int stage; /* 0 handshake, 1 size, 2 body */
    uint8_t hdr[9];
    size_t got;
    uint8_t *body;
    size_t size, cap;          /* the message's size; what body holds (grown as bytes arrive) */
    uint8_t ahead[READ_AHEAD]; /* read from the socket, not yet taken: [ahead_pos, ahead_len) */
    size_t ahead_pos, ahead_len;
    struct sp_conn *next_queued; /* sp_tp's queue of connections with bytes read ahead */
} sp_conn;

typedef struct sp_listen {
    int tag; /* TAG_LISTEN */
    int fd;
    int ipc;
    /* nonzero: accepting is paused until this ldpb_sp_mono_ms() (out of descriptors or memory; a
     * level-triggered listening socket would otherwise wake every receiver at once, forever) */
    atomic_uint_fast64_t paused_until;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* ipc: unlinked at close */
} sp_listen;

typedef struct sp_tp {
    ldpb_tp base;
    int epfd;
    size_t recv_max;
    pthread_mutex_t mu; /* the connection list */
    sp_conn *conns;
    /* Events taken from epoll but not yet served (one epoll_wait takes up to EVENTS_PER_WAIT):
     * their connections are disarmed, so whoever pops one owns it. Under rmu. */
    pthread_mutex_t rmu;
    void *ready[READY_MAX];
    size_t ready_head, ready_n;
    /* Connections holding a whole or partial request read ahead (no event will come for it):
     * disarmed like the ready ones, a FIFO through next_queued. Under rmu. */
    sp_conn *queued_head, *queued_tail;
    sp_listen ls[LISTENERS_MAX];
    size_t n_ls;
} sp_tp;

typedef struct sp_route {
    sp_conn *c;
    size_t bt_len;
    uint8_t bt[4 * BACKTRACE_WORDS_MAX];
} sp_route;

extern const ldpb_tp_ops ldpb_tp_sp_ops;

static void conn_unref(sp_conn *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    close(c->fd);
    pthread_mutex_destroy(&c->wmu);
    free(c->body);
    free(c);
}

/* Shuts a connection down and drops the listener's reference; by the thread holding its event
 * (or at close). */
static void conn_kill(sp_tp *t, sp_conn *c)
{
    atomic_store(&c->dead, 1);
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_lock(&t->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&t->mu);
    conn_unref(c);
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

uint64_t ldpb_sp_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Resumes accepting on listeners whose pause is over. */
static void resume_accepting(sp_tp *t)
{
    uint64_t now = 0;
    for (size_t i = 0; i < t->n_ls; i++) {
        sp_listen *l = &t->ls[i];
        uint_fast64_t until = atomic_load(&l->paused_until);
        if (!until)
            continue;
        if (!now)
            now = ldpb_sp_mono_ms();
        if (now >= until && atomic_compare_exchange_strong(&l->paused_until, &until, 0)) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
            epoll_ctl(t->epfd, EPOLL_CTL_MOD, l->fd, &ev);
        }
    }
}

static void accept_some(sp_tp *t, sp_listen *l)
{
    static const uint8_t hs[8] = {0, 'S', 'P', 0, 0, SP_PROTO_REP, 0, 0};
    for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
            struct epoll_event ev = {.events = 0, .data.ptr = l};
            atomic_store(&l->paused_until, ldpb_sp_mono_ms() + ACCEPT_PAUSE_MS);
            epoll_ctl(t->epfd, EPOLL_CTL_MOD, l->fd, &ev);
            return;
        }
        if (fd < 0)
            return; /* EAGAIN: another thread took it; anything else: try at the next event */
        if (!l->ipc) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        sp_conn *c = calloc(1, sizeof *c);
        /* a fresh socket's buffer takes the 8 bytes at once */
        if (!c || write_all(fd, hs, sizeof hs) != 0 || pthread_mutex_init(&c->wmu, NULL) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->tag = TAG_CONN;
        c->fd = fd;
        c->ipc = l->ipc;
        atomic_init(&c->refs, 1);
        atomic_init(&c->dead, 0);
        pthread_mutex_lock(&t->mu);
        c->next = t->conns;
        if (t->conns)
            t->conns->prev = c;
        t->conns = c;
        pthread_mutex_unlock(&t->mu);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
            conn_kill(t, c);
    }
}

uint64_t ldpb_sp_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Up to n bytes for the read state: first what was read ahead; else one read, through `ahead` when
 * n is small (so a request's size and body come in one call) or straight into dst when not. As
 * read(2): bytes, 0 at end of stream, -1 with errno. */
static ssize_t conn_take(sp_conn *c, uint8_t *dst, size_t n)
{
    if (c->ahead_pos == c->ahead_len) {
        if (n >= sizeof c->ahead)
            return read(c->fd, dst, n);
        ssize_t r = read(c->fd, c->ahead, sizeof c->ahead);
        if (r <= 0)
            return r;
        c->ahead_pos = 0;
        c->ahead_len = (size_t)r;
    }
    size_t k = c->ahead_len - c->ahead_pos < n ? c->ahead_len - c->ahead_pos : n;
    memcpy(dst, c->ahead + c->ahead_pos, k);
    c->ahead_pos += k;
    return (ssize_t)k;
}

/* Reads what the connection has: 1 with a whole message in c->body (c->size bytes), 0 when the
 * socket has nothing more now, -1 when the connection must go (closed, broken, malformed). */
static int conn_read(sp_tp *t, sp_conn *c)
{
    for (;;) {
        uint8_t *dst;
        size_t want;
        if (c->stage == 0) {
            dst = c->hdr;
            want = 8;
        } else if (c->stage == 1) {
            dst = c->hdr;
            want = c->ipc ? 9 : 8;
        } else {
            if (c->got == c->cap) {
                /* grown as the bytes come: a size announced but not sent costs little */
                size_t cap = c->cap * 2 < c->size ? c->cap * 2 : c->size;
                uint8_t *nb = realloc(c->body, cap);
                if (!nb)
                    return -1;
                c->body = nb;
                c->cap = cap;
            }
            dst = c->body;
            want = c->cap;
        }
        if (c->got < want) {
            ssize_t r = conn_take(c, dst + c->got, want - c->got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return 0;
            if (r <= 0)
                return -1;
            c->got += (size_t)r;
            if (c->got < want)
                continue;
        }
        c->got = 0;
        if (c->stage == 0) {
            /* the peer must be a REQ socket */
            if (memcmp(c->hdr, "\0SP\0", 4) != 0 || c->hdr[4] != 0 || c->hdr[5] != SP_PROTO_REQ ||
                c->hdr[6] != 0 || c->hdr[7] != 0)
                return -1;
            c->stage = 1;
        } else if (c->stage == 1) {
            if (c->ipc && c->hdr[0] != IPC_MSG_NORMAL)
                return -1;
            uint64_t size = ldpb_sp_be64(c->hdr + (c->ipc ? 1 : 0));
            /* too large: dropped with its connection, as nanomsg does */
            if (size < 4 || (t->recv_max && size > t->recv_max) || size > SIZE_MAX / 2)
                return -1;
            c->cap = size < BODY_FIRST ? (size_t)size : BODY_FIRST;
            c->body = malloc(c->cap);
            if (!c->body)
                return -1;
            c->size = (size_t)size;
            c->stage = 2;
        } else if (c->cap == c->size) {
            c->stage = 1;
            return 1;
        } else {
            c->got = c->cap; /* more of the body to come: keep reading after what is there */
        }
    }
}

/* Splits a request into its route (the backtrace) and its payload; -1 for a malformed one. */
static int take_message(sp_conn *c, ldpb_tp_msg *m, ldpb_tp_route *r)
{
    size_t i = 0;
    int done = 0;
    while (!done && i + 4 <= c->size && i < 4 * BACKTRACE_WORDS_MAX) {
        done = (c->body[i] & 0x80) != 0;
        i += 4;
    }
    if (!done)
        return -1;
    sp_route *rt = NULL;
    if (r) {
        rt = malloc(sizeof *rt);
        if (!rt)
            return -1;
        rt->c = c;
        rt->bt_len = i;
        memcpy(rt->bt, c->body, i);
        atomic_fetch_add(&c->refs, 1);
        r->h = rt;
    }
    m->data = c->body + i;
    m->len = c->size - i;
    m->h = c->body;
    c->body = NULL;
    c->size = 0;
    return 0;
}

static void *pop_ready(sp_tp *t)
{
    void *p = NULL;
    pthread_mutex_lock(&t->rmu);
    if (t->ready_n) {
        p = t->ready[t->ready_head];
        t->ready_head = (t->ready_head + 1) % READY_MAX;
        t->ready_n--;
    } else if (t->queued_head) {
        sp_conn *c = t->queued_head;
        t->queued_head = c->next_queued;
        if (!t->queued_head)
            t->queued_tail = NULL;
        c->next_queued = NULL;
        p = c;
    }
    pthread_mutex_unlock(&t->rmu);
    return p;
}

/* Hands a connection with bytes read ahead to the next receiver (an intrusive list: no bound,
 * no allocation, so it cannot fail and the bytes cannot be stranded). */
static void queue_conn(sp_tp *t, sp_conn *c)
{
    pthread_mutex_lock(&t->rmu);
    c->next_queued = NULL;
    if (t->queued_tail)
        t->queued_tail->next_queued = c;
    else
        t->queued_head = c;
    t->queued_tail = c;
    pthread_mutex_unlock(&t->rmu);
}

static void push_ready(sp_tp *t, const struct epoll_event *ev, size_t n)
{
    size_t i = 0;
    pthread_mutex_lock(&t->rmu);
    for (; i < n && t->ready_n < READY_MAX; i++) {
        t->ready[(t->ready_head + t->ready_n) % READY_MAX] = ev[i].data.ptr;
        t->ready_n++;
    }
    pthread_mutex_unlock(&t->rmu);
    for (; i < n; i++) {
        /* no room: a listening socket reports again by itself (level-triggered), a connection
         * once re-armed */
        sp_conn *c = ev[i].data.ptr;
        if (c->tag != TAG_CONN)
            continue;
        struct epoll_event re = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
        if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &re) != 0)
            conn_kill(t, c);
    }
}

static ldpb_err sp_recv(ldpb_tp *tp, ldpb_tp_msg *m, ldpb_tp_route *r, int timeout_ms, char *detail)
{
    sp_tp *t = (sp_tp *)tp;
    memset(m, 0, sizeof *m);
    if (r)
        r->h = NULL;
    uint64_t deadline = timeout_ms > 0 ? ldpb_sp_mono_ms() + (uint64_t)timeout_ms : 0;
    for (;;) {
        resume_accepting(t);
        int wait = timeout_ms;
        if (timeout_ms > 0) {
            uint64_t now = ldpb_sp_mono_ms();
            wait = now >= deadline ? 0 : (int)(deadline - now);
        }
        if (wait < 0 || wait > ACCEPT_PAUSE_MS)
            wait = ACCEPT_PAUSE_MS; /* a paused listener resumes within this */
        void *ptr = pop_ready(t);
        if (!ptr) {
            struct epoll_event ev[EVENTS_PER_WAIT];
            int n = epoll_wait(t->epfd, ev, EVENTS_PER_WAIT, wait);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                say(detail, "epoll_wait: %s", strerror(errno));
                return LDPB_ETRANSPORT;
            }
            if (n == 0) {
                if (timeout_ms < 0 || (timeout_ms > 0 && ldpb_sp_mono_ms() < deadline))
                    continue; /* only the pause's cap ran out */
                return LDPB_ETIMEDOUT;
            }
            ptr = ev[0].data.ptr;
            push_ready(t, ev + 1, (size_t)n - 1);
        }
        if (*(int *)ptr == TAG_LISTEN) {
            accept_some(t, ptr);
            continue;
        }
        sp_conn *c = ptr;
        int got = conn_read(t, c);
        if (got > 0 && take_message(c, m, r) != 0) {
            free(c->body);
            c->body = NULL;
            got = -1;
        }
        if (got < 0 || atomic_load(&c->dead)) {
            if (got > 0)
                got = 1; /* the message is served; the connection goes */
            conn_kill(t, c);
        } else if (c->ahead_pos < c->ahead_len) {
            queue_conn(t, c); /* conn_read returns 0 only with nothing read ahead */
        } else {
            struct epoll_event re = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
            if (epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &re) != 0)
                conn_kill(t, c);
        }
        if (got > 0)
            return LDPB_OK;
    }
}

int ldpb_sp_write_iov(int fd, struct iovec *iov, int n, uint64_t give_up_ms)
{
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = iov;
    mh.msg_iovlen = (size_t)n;
    while (mh.msg_iovlen && mh.msg_iov[0].iov_len == 0) {
        mh.msg_iov++;
        mh.msg_iovlen--;
    }
    while (mh.msg_iovlen) {
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            uint64_t now = ldpb_sp_mono_ms();
            if (now >= give_up_ms) {
                errno = ETIMEDOUT;
                return -1;
            }
            uint64_t left = give_up_ms - now;
            struct pollfd p = {fd, POLLOUT, 0};
            int rc = poll(&p, 1, left > INT32_MAX ? -1 : (int)left);
            if (rc < 0 && errno != EINTR)
                return -1;
            continue;
        }
        if (w <= 0) {
            if (w == 0)
                errno = EPIPE;
            return -1;
        }
        /* step over what was written */
        size_t adv = (size_t)w;
        while (mh.msg_iovlen && adv >= mh.msg_iov[0].iov_len) {
            adv -= mh.msg_iov[0].iov_len;
            mh.msg_iov++;
            mh.msg_iovlen--;
        }
        if (mh.msg_iovlen) {
            mh.msg_iov[0].iov_base = (uint8_t *)mh.msg_iov[0].iov_base + adv;
            mh.msg_iov[0].iov_len -= adv;
        }
    }
    return 0;
}

static ldpb_err sp_reply(ldpb_tp *tp, ldpb_tp_route r, const uint8_t *buf, size_t len)
{
    (void)tp;
    sp_route *rt = r.h;
    if (!rt)
        return LDPB_EINVAL;
    sp_conn *c = rt->c;
    uint8_t hdr[9];
    size_t hl = 0;
    if (c->ipc)
        hdr[hl++] = IPC_MSG_NORMAL;
    uint64_t size = (uint64_t)(rt->bt_len + len);
    for (int i = 0; i < 8; i++)
        hdr[hl++] = (uint8_t)(size >> (56 - 8 * i));
    struct iovec iov[3] = {{hdr, hl}, {rt->bt, rt->bt_len}, {(void *)buf, len}};
    int ok = 0;
    pthread_mutex_lock(&c->wmu);
    if (!atomic_load(&c->dead)) {
        ok = ldpb_sp_write_iov(c->fd, iov, 3, ldpb_sp_mono_ms() + REPLY_WAIT_MS) == 0;
        if (!ok) {
            /* half a message on the wire, or a client that does not read: it goes */
            atomic_store(&c->dead, 1);
            shutdown(c->fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&c->wmu);
    conn_unref(c);
    free(rt);
    return ok ? LDPB_OK : LDPB_ETRANSPORT;
}

static void sp_route_free(ldpb_tp_route r)
{
    sp_route *rt = r.h;
    if (!rt)
        return;
    conn_unref(rt->c);
    free(rt);
}

static void sp_msg_free(ldpb_tp_msg *m)
{
    free(m->h);
    memset(m, 0, sizeof *m);
}

static ldpb_err sp_wait(ldpb_tp *tp, int timeout_ms, int *ready)
{
    sp_tp *t = (sp_tp *)tp;
    pthread_mutex_lock(&t->rmu);
    size_t queued = t->ready_n + (t->queued_head != NULL);
    pthread_mutex_unlock(&t->rmu);
    if (queued) { /* events another thread took from epoll, waiting to be served */
        *ready = 1;
        return LDPB_OK;
    }
    struct pollfd p = {t->epfd, POLLIN, 0};
    int rc = poll(&p, 1, timeout_ms);
    *ready = rc > 0;
    return rc < 0 && errno != EINTR ? LDPB_ETRANSPORT : LDPB_OK;
}

static ldpb_err sp_listen_(ldpb_tp **out, const ldpb_tp_opts *o, char *detail)
{
    *out = NULL;
    sp_tp *t = calloc(1, sizeof *t);
    if (!t)
        return LDPB_ENOMEM;
    t->base.ops = &ldpb_tp_sp_ops;
    t->recv_max = o->recv_max;
    t->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (t->epfd < 0 || pthread_mutex_init(&t->mu, NULL) != 0 ||
        pthread_mutex_init(&t->rmu, NULL) != 0) {
        say(detail, "epoll_create1: %s", strerror(errno));
        if (t->epfd >= 0)
            close(t->epfd);
        free(t);
        return LDPB_ETRANSPORT;
    }
    *out = &t->base;
    return LDPB_OK;
}

ldpb_err ldpb_sp_tcp_split(const char *url, const char *verb, char host[SP_HOST_MAX],
                           uint16_t *port, char *detail)
{
    const char *hp = url + 6, *colon = strrchr(hp, ':');
    char *end = NULL;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || !end || *end || end == colon + 1 || p < 0 || p > 65535) {
        say(detail, "cannot %s %.200s: no port", verb, url);
        return LDPB_EINVAL;
    }
    size_t hl = (size_t)(colon - hp);
    if (hl >= SP_HOST_MAX) {
        say(detail, "cannot %s %.200s: host too long", verb, url);
        return LDPB_EINVAL;
    }
    memcpy(host, hp, hl);
    host[hl] = '\0';
    *port = (uint16_t)p;
    return LDPB_OK;
}

int ldpb_sp_ip_literal(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    size_t hl = strlen(host);
    char inner[SP_HOST_MAX];
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        *len = sizeof *a4;
        return 1;
    }
    if (hl > 2 && hl < sizeof inner && host[0] == '[' && host[hl - 1] == ']') {
        memcpy(inner, host + 1, hl - 2);
        inner[hl - 2] = '\0';
        if (inet_pton(AF_INET6, inner, &a6->sin6_addr) == 1) {
            a6->sin6_family = AF_INET6;
            a6->sin6_port = htons(port);
            *len = sizeof *a6;
            return 1;
        }
    }
    return 0;
}

ldpb_err ldpb_sp_ipc_addr(const char *url, const char *verb, struct sockaddr_un *un, socklen_t *len,
                          char *detail)
{
    const char *path = url + 6;
    if (!*path || strlen(path) >= sizeof un->sun_path) {
        say(detail, "cannot %s %.200s: the path is empty or too long", verb, url);
        return LDPB_EINVAL;
    }
    memset(un, 0, sizeof *un);
    un->sun_family = AF_UNIX;
    strcpy(un->sun_path, path);
    *len = sizeof *un;
    return LDPB_OK;
}

/* tcp://HOST:PORT with HOST an IPv4 address, [IPv6], * (every address) or an interface name. */
static ldpb_err tcp_addr(const char *url, struct sockaddr_storage *ss, socklen_t *len, char *detail)
{
    char host[SP_HOST_MAX];
    uint16_t port = 0;
    ldpb_err err = ldpb_sp_tcp_split(url, "bind", host, &port, detail);
    if (err)
        return err;
    if (ldpb_sp_ip_literal(host, port, ss, len))
        return LDPB_OK;
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    memset(ss, 0, sizeof *ss);
    if (strcmp(host, "*") == 0) {
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (host[0] == '[') {
        say(detail, "cannot bind %.200s: not an IPv6 address", url);
        return LDPB_EINVAL;
    } else {
        struct ifaddrs *ifs = NULL, *i;
        int found = 0;
        if (getifaddrs(&ifs) == 0) {
            for (i = ifs; i && !found; i = i->ifa_next)
                if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                    strcmp(i->ifa_name, host) == 0) {
                    *a4 = *(struct sockaddr_in *)i->ifa_addr;
                    found = 1;
                }
            freeifaddrs(ifs);
        }
        if (!found) {
            say(detail, "cannot bind %.200s: no such interface", url);
            return LDPB_EINVAL;
        }
    }
    a4->sin_port = htons(port);
    *len = sizeof *a4;
    return LDPB_OK;
}

static ldpb_err bind_error(const char *url, int e, char *detail)
{
    say(detail, "cannot bind %.200s: %s", url, strerror(e));
    return e == EADDRINUSE ? LDPB_ETRANSPORT : LDPB_EINVAL;
}

static ldpb_err sp_bind(ldpb_tp *tp, const char *url, char *detail)
{
    sp_tp *t = (sp_tp *)tp;
    if (t->n_ls == LISTENERS_MAX) {
        say(detail, "more than %d URLs on one listener", LISTENERS_MAX);
        return LDPB_EINVAL;
    }
    sp_listen *l = &t->ls[t->n_ls];
    memset(l, 0, sizeof *l);
    l->tag = TAG_LISTEN;
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int ipc = strncmp(url, "ipc://", 6) == 0;
    if (ipc) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        const char *path = url + 6;
        ldpb_err err = ldpb_sp_ipc_addr(url, "bind", un, &sl, detail);
        if (err)
            return err;
        /* a socket file nobody listens on is stale (a process that died): replace it */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            int live = connect(probe, (struct sockaddr *)un, sl) == 0;
            close(probe);
            if (live)
                return bind_error(url, EADDRINUSE, detail);
            unlink(path);
        }
    } else if (strncmp(url, "tcp://", 6) == 0) {
        ldpb_err err = tcp_addr(url, &ss, &sl, detail);
        if (err)
            return err;
    } else {
        say(detail, "cannot bind %.200s: not a tcp:// or ipc:// URL", url);
        return LDPB_EINVAL;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return bind_error(url, errno, detail);
    int one = 1;
    if (!ipc)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 1024) != 0) {
        int e = errno;
        close(fd);
        return bind_error(url, e, detail);
    }
    l->fd = fd;
    l->ipc = ipc;
    if (ipc)
        strcpy(l->path, url + 6);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
    if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int e = errno;
        close(fd);
        if (ipc)
            unlink(l->path);
        return bind_error(url, e, detail);
    }
    t->n_ls++;
    return LDPB_OK;
}

static void sp_close(ldpb_tp *tp, int linger_ms)
{
    sp_tp *t = (sp_tp *)tp;
    for (size_t i = 0; i < t->n_ls; i++) {
        close(t->ls[i].fd);
        if (t->ls[i].ipc)
            unlink(t->ls[i].path);
    }
    if (linger_ms > 0) {
        /* replies are written before their call returns: nothing is queued here, but a client
         * may still be reading the last ones */
        struct timespec ts = {linger_ms / 1000, (long)(linger_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    while (t->conns)
        conn_kill(t, t->conns);
    close(t->epfd);
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_destroy(&t->rmu);
    free(t);
}

static ldpb_err sp_no_recv_into(ldpb_tp *t, uint8_t *buf, size_t cap, size_t *n, int timeout_ms,
                                char *detail)
{
    (void)t;
    (void)buf;
    (void)cap;
    (void)timeout_ms;
    *n = 0;
    say(detail, "a listener has no reply to receive");
    return LDPB_EINVAL;
}

static ldpb_err sp_no_send(ldpb_tp *t, const uint8_t *buf, size_t len, char *detail)
{
    (void)t;
    (void)buf;
    (void)len;
    say(detail, "a listener sends only replies");
    return LDPB_EINVAL;
}

const ldpb_tp_ops ldpb_tp_sp_ops = {
    .name = "sp",
    .listen = sp_listen_,
    .bind = sp_bind,
    .dial = ldpb_sp_dial,
    .recv = sp_recv,
    .recv_into = sp_no_recv_into,
    .send = sp_no_send,
    .reply = sp_reply,
    .route_free = sp_route_free,
    .msg_free = sp_msg_free,
    .wait = sp_wait,
    .close = sp_close,
};
