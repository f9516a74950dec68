/* ldpb relay: a stateless forwarder between devices and the aggregator (docs/protocol.md section
 * 11, docs/aggregator.md "Relays"). It receives device frames on a raw REP socket, exactly as the
 * aggregator does, gathers up to --batch of them for at most --wait-us, sends them upstream as one
 * RELAY_BATCH and routes each reply of the RELAY_REPLY back to its device by the relay-local id
 * (the slot in the batch). It never opens a frame: it holds no key, and keeps nothing between
 * batches, so any number of relays can run anywhere and a killed one loses only the frames in
 * flight, which their devices resend.
 *
 * Several --upstream URLs make it fail over (docs/aggregator.md, "Relays"): a batch goes to the
 * first upstream, in the order given, that is not marked down; one that fails it (no valid
 * RELAY_REPLY within --timeout-ms) is marked down for a back-off and the same batch, byte for
 * byte, goes to the next. That resend is safe only where the nodes share one store, whose
 * duplicate check then sees the copy: the relay cannot open a frame to tell a report from an
 * assignment, so the operator chooses (one upstream for nodes with stores of their own). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include "commands.h"
#include "ldpb/relay.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define PROG "ldpb relay"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2

#define LISTEN_MAX         16
#define UPSTREAM_MAX       16
#define BATCH_DEFAULT      64u
#define WAIT_DEFAULT_US    1000u
#define WAIT_MAX_US        1000000u
#define THREADS_DEFAULT    2u
#define THREADS_MAX        64u
#define TIMEOUT_DEFAULT_MS 5000u
#define TIMEOUT_MAX_MS     600000u
#define BACKOFF_DEFAULT_MS 1000u
#define BACKOFF_MAX_MS     600000u
/* A node that stays down is retried after 1, 2, 4, ... 32 back-offs: each retry of a dead node
 * costs one batch a --timeout-ms, so a long outage costs one batch per 32 back-offs, while a node
 * restarted at once is back in use after the first. */
#define BACKOFF_DOUBLINGS 5u
/* How often an idle thread looks at the stop flag. */
#define IDLE_POLL_MS 100
/* Frames a little above LDPB_FRAME_MAX are received so they can be refused with a reason, as the
 * aggregator does (docs/protocol.md section 1). */
#define DEVICE_RECV_MAX (4 * LDPB_FRAME_MAX)

typedef struct relay_opts {
    const char *listen[LISTEN_MAX];
    size_t n_listen;
    const char *upstream[UPSTREAM_MAX];
    size_t n_upstream;
    unsigned batch, threads;
    uint32_t wait_us, timeout_ms, backoff_ms;
    int verbose;
    const ldpb_tp_ops *upstream_ops; /* --upstream-transport; NULL: the URL scheme's dialer */
} relay_opts;

/* What the threads know of one upstream, shared so that a failure one thread saw spares the others
 * its timeout. */
typedef struct upstream {
    const char *url;
    _Atomic uint64_t down_until_us; /* 0: up; else marked down until then (mono_us) */
    _Atomic uint64_t marked_us;     /* when it was last marked down */
    _Atomic unsigned fails;         /* failures since it last answered */
    _Atomic int retrying;           /* a thread is trying it again after its back-off */
} upstream;

/* One device request waiting in a batch: the frame and the route to answer it. */
typedef struct pending {
    ldpb_tp_msg msg; /* msg.data NULL: the slot is empty */
    ldpb_tp_route route;
} pending;

typedef struct relay_thread {
    const relay_opts *o;
    ldpb_tp *dev;              /* the shared device listener */
    upstream *ups;             /* o->n_upstream of them, shared */
    ldpb_tp *up[UPSTREAM_MAX]; /* this thread's dialers, opened when first used */
    pending *slots;
    ldpb_relay_entry *entries;
    uint8_t *out;  /* the RELAY_BATCH being sent */
    pending carry; /* a frame that did not fit the last batch */
    uint64_t batches, frames, failed, resent;
    pthread_t th;
} relay_thread;

/* Set by the signal handler on the main thread, read by every relay thread: a volatile
 * sig_atomic_t is safe only within one thread (a data race across threads, which
 * ThreadSanitizer reports), a lock-free atomic is safe both in a handler and across threads. */
static atomic_int stop_flag;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "stop_flag is set in a signal handler");

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_flag, 1);
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: ldpb relay --listen URL [--listen URL ...]\n"
        "                  --upstream URL [--upstream URL ...] [options]\n"
        "\n"
        "Forwards device frames to an ldpb-aggregator in batches (docs/protocol.md section 11).\n"
        "Devices connect to a relay exactly as to the aggregator (same URL scheme, same\n"
        "pinned aggregator key); the frames stay sealed under each device's key, so the\n"
        "relay holds no key and can neither read, forge nor replay them. It keeps no state:\n"
        "run as many as you like; a device whose relay dies resends to another or to it\n"
        "once restarted.\n"
        "\n"
        "options:\n"
        "  --listen URL          URL to accept devices on (tcp:// or ipc://);\n"
        "                        repeatable, up to %d\n"
        "  --upstream URL        an aggregator's URL (required); repeatable, up to %d,\n"
        "                        in order of preference: a batch the one in use does\n"
        "                        not answer in time goes to the next, and the failed\n"
        "                        one is passed over for --backoff-ms. Name several only\n"
        "                        for nodes that share one store: a report resent to a\n"
        "                        node with a store of its own can be counted twice or\n"
        "                        lost\n"
        "  --batch M             at most M frames per batch, 1..%u (default %u)\n"
        "  --wait-us T           send a batch at most T microseconds after its first frame\n"
        "                        arrived, 0..%u (default %u); 0 sends what is waiting\n"
        "  --threads N           batches in flight at once, 1..%u (default %u)\n"
        "  --timeout-ms MS       how long to wait for an aggregator's reply, 1..%u\n"
        "                        (default %u); then the batch goes to the next\n"
        "                        upstream, and when none is left its devices get a\n"
        "                        PLAIN_ERROR code 17 (LDPB_EBUSY) and resend\n"
        "  --backoff-ms MS       how long an upstream that failed a batch is passed\n"
        "                        over, 1..%u (default %u); doubled at each failed\n"
        "                        retry, up to %u times MS; reset once it answers\n"
        "  --upstream-transport T\n"
        "                        dial the upstreams with nanomsg (default) or sp (the\n"
        "                        native dialer: the same wire, no I/O threads)\n"
        "  -v, --verbose         print a line per thread when stopping\n"
        "  -h, --help            print this help and exit\n"
        "\n"
        "Runs until SIGINT or SIGTERM. Exit status: 0 stopped by a signal, 1 a socket\n"
        "could not be set up, 2 bad arguments.\n",
        LISTEN_MAX, UPSTREAM_MAX, LDPB_RELAY_ENTRIES_MAX, BATCH_DEFAULT, WAIT_MAX_US,
        WAIT_DEFAULT_US, THREADS_MAX, THREADS_DEFAULT, TIMEOUT_MAX_MS, TIMEOUT_DEFAULT_MS,
        BACKOFF_MAX_MS, BACKOFF_DEFAULT_MS, 1u << BACKOFF_DOUBLINGS);
}

static int parse_uint(const char *opt, const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *s == '-' || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "%s: %s needs an integer in %" PRIu32 "..%" PRIu32 "\n", PROG, opt, lo, hi);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, relay_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = BATCH_DEFAULT;
    o->threads = THREADS_DEFAULT;
    o->wait_us = WAIT_DEFAULT_US;
    o->timeout_ms = TIMEOUT_DEFAULT_MS;
    o->backoff_ms = BACKOFF_DEFAULT_MS;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint32_t n = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_RUNTIME;
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            o->verbose = 1;
            continue;
        } else if (!strcmp(a, "--listen")) {
            if (!v || o->n_listen == LISTEN_MAX) {
                fprintf(stderr, "%s: --listen needs a URL (at most %d)\n", PROG, LISTEN_MAX);
                return EXIT_USAGE;
            }
            o->listen[o->n_listen++] = v;
        } else if (!strcmp(a, "--upstream")) {
            if (!v || !*v) {
                fprintf(stderr, "%s: --upstream needs a URL\n", PROG);
                return EXIT_USAGE;
            }
            if (o->n_upstream == UPSTREAM_MAX) {
                fprintf(stderr, "%s: at most %d --upstream URLs\n", PROG, UPSTREAM_MAX);
                return EXIT_USAGE;
            }
            for (size_t k = 0; k < o->n_upstream; k++)
                if (!strcmp(o->upstream[k], v)) {
                    fprintf(stderr, "%s: --upstream %.200s is named twice\n", PROG, v);
                    return EXIT_USAGE;
                }
            o->upstream[o->n_upstream++] = v;
        } else if (!strcmp(a, "--batch")) {
            if (parse_uint(a, v, 1, LDPB_RELAY_ENTRIES_MAX, &n))
                return EXIT_USAGE;
            o->batch = n;
        } else if (!strcmp(a, "--wait-us")) {
            if (parse_uint(a, v, 0, WAIT_MAX_US, &n))
                return EXIT_USAGE;
            o->wait_us = n;
        } else if (!strcmp(a, "--threads")) {
            if (parse_uint(a, v, 1, THREADS_MAX, &n))
                return EXIT_USAGE;
            o->threads = n;
        } else if (!strcmp(a, "--timeout-ms")) {
            if (parse_uint(a, v, 1, TIMEOUT_MAX_MS, &n))
                return EXIT_USAGE;
            o->timeout_ms = n;
        } else if (!strcmp(a, "--upstream-transport")) {
            if (!(o->upstream_ops = ldpb_tp_named(v))) {
                fprintf(stderr, "%s: --upstream-transport needs nanomsg or sp\n", PROG);
                return EXIT_USAGE;
            }
        } else if (!strcmp(a, "--backoff-ms")) {
            if (parse_uint(a, v, 1, BACKOFF_MAX_MS, &n))
                return EXIT_USAGE;
            o->backoff_ms = n;
        } else {
            fprintf(stderr, "%s: unknown option '%.60s' (see --help)\n", PROG, a);
            return EXIT_USAGE;
        }
        i++;
    }
    if (!o->n_listen || !o->n_upstream) {
        fprintf(stderr, "%s: --listen and --upstream are required (see --help)\n", PROG);
        return EXIT_USAGE;
    }
    return -1;
}

/* Answers one device; a device that is gone resends elsewhere. Consumes the route. */
static void send_to_device(ldpb_tp *dev, ldpb_tp_route route, const void *frame, size_t len)
{
    (void)ldpb_tp_reply(dev, route, frame, len);
}

static void plain_error(ldpb_tp *dev, ldpb_tp_route route, ldpb_err code, const char *reason)
{
    uint8_t buf[LDPB_FRAME_ERROR_MIN + LDPB_WIRE_STRING_MAX];
    size_t len = 0;
    if (ldpb_frame_build_plain_error(buf, sizeof buf, &len, (uint32_t)code, reason) == LDPB_OK)
        send_to_device(dev, route, buf, len);
    else
        ldpb_tp_route_free(dev, route);
}

/* Receives one device frame without waiting: 1 got one, 0 none waiting, -1 the socket failed. */
static int recv_device(ldpb_tp *dev, pending *p)
{
    ldpb_err err = ldpb_tp_recv(dev, &p->msg, &p->route, 0, NULL);
    if (err == LDPB_ETIMEDOUT)
        return 0;
    return err ? -1 : 1;
}

/* Gathers a batch into t->slots: returns how many frames, 0 when stopping, -1 on failure. */
static int gather(relay_thread *t)
{
    const relay_opts *o = t->o;
    size_t n = 0, bytes = LDPB_FRAME_HEADER_BYTES + LDPB_RELAY_COUNT_BYTES;
    uint64_t first_us = 0;
    for (;;) {
        pending p;
        int got;
        if (t->carry.msg.data) {
            p = t->carry;
            memset(&t->carry, 0, sizeof t->carry);
            got = 1;
        } else {
            got = recv_device(t->dev, &p);
        }
        if (got < 0)
            return -1;
        if (got) {
            if (p.msg.len > LDPB_FRAME_MAX) { /* refused here, as the aggregator would */
                char why[96];
                snprintf(why, sizeof why, "frame of %zu bytes exceeds the limit of %u", p.msg.len,
                         LDPB_FRAME_MAX);
                plain_error(t->dev, p.route, LDPB_EPROTO, why);
                ldpb_tp_msg_free(t->dev, &p.msg);
                continue;
            }
            if (bytes + LDPB_RELAY_ENTRY_OVERHEAD + p.msg.len > LDPB_RELAY_BATCH_MAX) {
                t->carry = p; /* the next batch starts with it */
                return (int)n;
            }
            if (!n)
                first_us = mono_us();
            t->slots[n++] = p;
            bytes += LDPB_RELAY_ENTRY_OVERHEAD + p.msg.len;
            if (n == o->batch)
                return (int)n;
            continue;
        }
        int wait_ms = IDLE_POLL_MS;
        if (n) {
            uint64_t el = mono_us() - first_us;
            if (el >= o->wait_us)
                return (int)n;
            wait_ms = (int)((o->wait_us - el + 999) / 1000);
        } else if (atomic_load(&stop_flag)) {
            return 0;
        }
        int ready = 0;
        if (ldpb_tp_wait(t->dev, wait_ms, &ready) != LDPB_OK)
            return -1;
    }
}

static ldpb_tp *open_upstream(const relay_opts *o, const char *url, char *detail)
{
    ldpb_tp_opts to;
    ldpb_tp_opts_init(&to);
    to.send_timeout_ms = (int)o->timeout_ms;
    /* An upstream's reply is bytes from the network like any other: without a limit, nanomsg
     * allocated whatever size a reply announced and aborted the relay when it could not */
    to.recv_max = LDPB_RELAY_REPLY_MAX;
    ldpb_tp *up = NULL;
    return ldpb_tp_dial_with(&up, o->upstream_ops, url, &to, detail) == LDPB_OK ? up : NULL;
}

/* The upstreams a batch tries, in order, into order[]: every one that is up, and one whose
 * back-off is over if no other thread is retrying it already (claimed[] set: the caller releases
 * it). When none is left the batch still goes to the one whose back-off ends first: a relay never
 * refuses a batch without trying, and one with a single upstream behaves as before there were
 * several. Returns how many. */
static size_t plan(relay_thread *t, size_t *order, int *claimed)
{
    size_t k = 0, n = t->o->n_upstream, soonest = 0;
    uint64_t now = mono_us(), soonest_until = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        upstream *u = &t->ups[i];
        uint64_t until = atomic_load(&u->down_until_us);
        int idle = 0;
        claimed[i] = 0;
        if (until && now >= until && atomic_compare_exchange_strong(&u->retrying, &idle, 1))
            claimed[i] = 1;
        if (!until || claimed[i])
            order[k++] = i;
        else if (until < soonest_until) {
            soonest = i;
            soonest_until = until;
        }
    }
    if (!k)
        order[k++] = soonest;
    return k;
}

/* Marks upstream i down for its back-off, after an attempt that began at started_us failed. An
 * attempt that began before the last mark tells nothing new, nor does one while the back-off
 * runs: the batches that were in flight when a node died extend its back-off once, not each. */
static void mark_down(relay_thread *t, size_t i, uint64_t started_us, const char *why)
{
    upstream *u = &t->ups[i];
    uint64_t now = mono_us(), until = atomic_load(&u->down_until_us);
    if (until > now || started_us < atomic_load(&u->marked_us))
        return;
    unsigned fails = atomic_load(&u->fails);
    uint64_t ms = (uint64_t)t->o->backoff_ms
                  << (fails < BACKOFF_DOUBLINGS ? fails : BACKOFF_DOUBLINGS);
    if (!atomic_compare_exchange_strong(&u->down_until_us, &until, now + ms * 1000u))
        return;
    atomic_store(&u->marked_us, now);
    atomic_fetch_add(&u->fails, 1);
    /* at most one line per back-off */
    fprintf(stderr, "%s: upstream %.200s: %s; marked down for %" PRIu64 " ms\n", PROG, u->url, why,
            ms);
}

/* An answer to an attempt that began before the node was last marked down is no sign that it
 * is back. */
static void mark_up(relay_thread *t, size_t i, uint64_t started_us)
{
    upstream *u = &t->ups[i];
    if (started_us < atomic_load(&u->marked_us))
        return;
    if (atomic_exchange(&u->down_until_us, 0) != 0) {
        atomic_store(&u->fails, 0);
        fprintf(stderr, "%s: upstream %.200s answers again\n", PROG, u->url);
    }
}

/* How one attempt on one upstream ended. */
typedef enum attempt_end {
    ANSWERED,  /* a valid RELAY_REPLY */
    NO_REPLY,  /* nothing within --timeout-ms, or the send failed */
    BAD_REPLY, /* an answer that is no RELAY_REPLY: the batch was refused whole, none served */
    NO_SOCKET, /* this relay could not open a socket: says nothing of the upstream */
} attempt_end;

/* Sends the batch t->out[0..len) to upstream i and parses its RELAY_REPLY into t->entries (*m of
 * them; views into *reply, which the caller frees after ANSWERED). A failed attempt closes the
 * dialer: nanomsg would otherwise deliver the request it holds once the node is back, after the
 * batch has gone elsewhere. */
static attempt_end attempt(relay_thread *t, size_t i, size_t len, ldpb_tp_msg *reply, size_t *m)
{
    if (!t->up[i] && !(t->up[i] = open_upstream(t->o, t->ups[i].url, NULL)))
        return NO_SOCKET;
    attempt_end end = NO_REPLY;
    if (ldpb_tp_send(t->up[i], t->out, len, NULL) == LDPB_OK &&
        ldpb_tp_recv(t->up[i], reply, NULL, (int)t->o->timeout_ms, NULL) == LDPB_OK) {
        end = ldpb_relay_parse(reply->data, reply->len, LDPB_FRAME_RELAY_REPLY, t->entries,
                               LDPB_RELAY_ENTRIES_MAX, m, NULL) == LDPB_OK
                  ? ANSWERED
                  : BAD_REPLY;
        if (end != ANSWERED)
            ldpb_tp_msg_free(t->up[i], reply);
    }
    if (end != ANSWERED) {
        ldpb_tp_close(t->up[i], 0);
        t->up[i] = NULL;
    }
    return end;
}

/* Sends the batch to the upstreams of plan() in turn until one answers with a RELAY_REPLY: the
 * same bytes each time, so the inner frames keep their nonces and a node that shares the store of
 * one that served them already answers them as duplicates. Returns the index that answered, or
 * -1 with `why` set to what the devices are told. */
static int send_batch(relay_thread *t, size_t len, ldpb_tp_msg *reply, size_t *m, char *why)
{
    size_t order[UPSTREAM_MAX];
    int claimed[UPSTREAM_MAX];
    size_t k = plan(t, order, claimed);
    int answered = -1;
    for (size_t j = 0; j < k && answered < 0; j++) {
        size_t i = order[j];
        if (j)
            t->resent++;
        uint64_t started_us = mono_us();
        switch (attempt(t, i, len, reply, m)) {
        case ANSWERED:
            mark_up(t, i, started_us);
            answered = (int)i;
            break;
        case NO_REPLY:
            snprintf(why, LDPB_DETAIL_BYTES, "the relay got no reply from the aggregator; resend");
            mark_down(t, i, started_us, "no reply in time");
            break;
        case BAD_REPLY:
            snprintf(why, LDPB_DETAIL_BYTES,
                     "the relay could not read the aggregator's reply; resend");
            mark_down(t, i, started_us, "an answer that is no relay reply");
            break;
        case NO_SOCKET:
            snprintf(why, LDPB_DETAIL_BYTES, "the relay could not open a socket; resend");
            break;
        }
    }
    for (size_t i = 0; i < t->o->n_upstream; i++)
        if (claimed[i])
            atomic_store(&t->ups[i].retrying, 0);
    return answered;
}

/* Forwards slots[0..n) and answers every one of them: with its reply, or with a PLAIN_ERROR
 * LDPB_EBUSY when no aggregator gave one (its device resends with a fresh nonce). */
static void forward(relay_thread *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        t->entries[i].id = (uint32_t)i;
        t->entries[i].frame = t->slots[i].msg.data;
        t->entries[i].len = t->slots[i].msg.len;
    }
    size_t len = 0, m = 0;
    ldpb_tp_msg reply = {0};
    int from = -1;
    char why[LDPB_DETAIL_BYTES] = "the relay could not build the batch";
    if (ldpb_relay_build(t->out, LDPB_RELAY_BATCH_MAX, &len, LDPB_FRAME_RELAY_BATCH, t->entries,
                         n) == LDPB_OK)
        from = send_batch(t, len, &reply, &m, why);
    t->batches++;
    t->frames += n;
    if (from >= 0) {
        /* what a frame the reply left out is told */
        snprintf(why, sizeof why, "the aggregator's reply held no answer for this frame; resend");
        for (size_t i = 0; i < m; i++) {
            uint32_t id = t->entries[i].id;
            /* an id this batch never used, or one answered already, is not routable */
            if (id >= n || !t->slots[id].msg.data)
                continue;
            send_to_device(t->dev, t->slots[id].route, t->entries[i].frame, t->entries[i].len);
            ldpb_tp_msg_free(t->dev, &t->slots[id].msg);
        }
        ldpb_tp_msg_free(t->up[from], &reply);
    }
    for (size_t i = 0; i < n; i++)
        if (t->slots[i].msg.data) {
            t->failed++;
            plain_error(t->dev, t->slots[i].route, LDPB_EBUSY, why);
            ldpb_tp_msg_free(t->dev, &t->slots[i].msg);
        }
}

static void *relay_main(void *arg)
{
    relay_thread *t = arg;
    for (;;) {
        int n = gather(t);
        if (n <= 0)
            break;
        forward(t, (size_t)n);
    }
    if (t->carry.msg.data) {
        plain_error(t->dev, t->carry.route, LDPB_EBUSY, "the relay is stopping; resend");
        ldpb_tp_msg_free(t->dev, &t->carry.msg);
    }
    return NULL;
}

/* Dials each upstream once, so that a URL no transport accepts is a usage error (exit 2) before
 * anything is bound; nanomsg connects in the background, so a node that is down is no error. */
static int check_upstreams(const relay_opts *o)
{
    for (size_t i = 0; i < o->n_upstream; i++) {
        char detail[LDPB_DETAIL_BYTES] = "";
        ldpb_tp_opts to;
        ldpb_tp_opts_init(&to);
        ldpb_tp *up = NULL;
        ldpb_err err = ldpb_tp_dial(&up, o->upstream[i], &to, detail);
        ldpb_tp_close(up, 0);
        if (err) {
            fprintf(stderr, "%s: --upstream %.200s: %s\n", PROG, o->upstream[i],
                    detail[0] ? detail : ldpb_strerror(err));
            return err == LDPB_EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        }
    }
    return -1;
}

static void print_start(const relay_opts *o)
{
    char to[UPSTREAM_MAX * (LDPB_TP_URL_MAX + 8)];
    size_t at = 0;
    for (size_t i = 0; i < o->n_upstream && at < sizeof to; i++) {
        int w = snprintf(to + at, sizeof to - at, "%s%s", i ? ", then " : "", o->upstream[i]);
        at += w > 0 ? (size_t)w : 0;
    }
    fprintf(stderr, "%s: forwarding to %s from %zu listen URL(s), batches of up to %u frames\n",
            PROG, to, o->n_listen, o->batch);
}

int cmd_relay(int argc, char **argv)
{
    relay_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0 || (rc = check_upstreams(&o)) >= 0)
        return rc;
    int status = EXIT_RUNTIME;
    relay_thread *ts = calloc(o.threads, sizeof *ts);
    upstream ups[UPSTREAM_MAX];
    for (size_t i = 0; i < o.n_upstream; i++) {
        ups[i].url = o.upstream[i];
        atomic_init(&ups[i].down_until_us, 0);
        atomic_init(&ups[i].marked_us, 0);
        atomic_init(&ups[i].fails, 0);
        atomic_init(&ups[i].retrying, 0);
    }
    ldpb_tp *dev = NULL;
    size_t started = 0;
    char detail[LDPB_DETAIL_BYTES] = "";
    if (!ts) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        goto done;
    }
    ldpb_tp_opts dopts;
    ldpb_tp_opts_init(&dopts);
    dopts.recv_max = DEVICE_RECV_MAX;
    if (ldpb_tp_listen(&dev, o.listen, o.n_listen, &dopts, detail) != LDPB_OK) {
        fprintf(stderr, "%s: listen: %s\n", PROG, detail);
        goto done;
    }
    for (unsigned i = 0; i < o.threads; i++) {
        relay_thread *t = &ts[i];
        t->o = &o;
        t->dev = dev;
        t->ups = ups;
        /* the first choice is connected now, the others when a batch first goes there */
        t->up[0] = open_upstream(&o, o.upstream[0], detail);
        t->slots = calloc(LDPB_RELAY_ENTRIES_MAX, sizeof *t->slots);
        t->entries = calloc(LDPB_RELAY_ENTRIES_MAX, sizeof *t->entries);
        t->out = malloc(LDPB_RELAY_BATCH_MAX);
        if (!t->up[0] || !t->slots || !t->entries || !t->out) {
            fprintf(stderr, "%s: upstream %.200s: %s\n", PROG, o.upstream[0],
                    !t->up[0] ? detail : "out of memory");
            goto done;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (; started < o.threads; started++)
        if (pthread_create(&ts[started].th, NULL, relay_main, &ts[started]) != 0) {
            fprintf(stderr, "%s: cannot start thread %zu\n", PROG, started);
            atomic_store(&stop_flag, 1);
            break;
        }
    print_start(&o);
    uint64_t batches = 0, frames = 0, failed = 0, resent = 0;
    for (size_t i = 0; i < started; i++) {
        pthread_join(ts[i].th, NULL);
        batches += ts[i].batches;
        frames += ts[i].frames;
        failed += ts[i].failed;
        resent += ts[i].resent;
        if (o.verbose)
            fprintf(stderr, "%s: thread %zu: %" PRIu64 " batches, %" PRIu64 " frames\n", PROG, i,
                    ts[i].batches, ts[i].frames);
    }
    fprintf(stderr,
            "%s: stopped: %" PRIu64 " batches, %" PRIu64 " frames forwarded, %" PRIu64
            " answered with LDPB_EBUSY, %" PRIu64 " resent to another upstream\n",
            PROG, batches, frames, failed, resent);
    status = started == o.threads ? 0 : EXIT_RUNTIME;
done:
    for (unsigned i = 0; ts && i < o.threads; i++) {
        for (size_t j = 0; j < o.n_upstream; j++)
            ldpb_tp_close(ts[i].up[j], 0);
        free(ts[i].slots);
        free(ts[i].entries);
        free(ts[i].out);
    }
    /* the transport may drop what is still queued on close: give the last replies a moment */
    ldpb_tp_close(dev, 200);
    free(ts);
    return status;
}
