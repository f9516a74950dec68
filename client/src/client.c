/* The client networking API (client.h): option checks, the sealed request/reply exchange over one
 * dialer of the transport seam, ldpb/transport.h (per-attempt timeout, resend with a fresh nonce,
 * strict reply matching), the checks that make the client the privacy authority (its epsilon cap,
 * the RAW opt-in, the ledger, expiry), and a small cache of mechanisms so that a report in steady
 * state builds none. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "ldpb/client.h"
#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "ldpb/keyfile.h"
#include "ldpb/mech_table.h"
#include "ldpb/seal.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "report_queue.h"

_Static_assert(LDPB_CLIENT_KEY_BYTES == LDPB_KEY_BYTES, "key size");
_Static_assert(LDPB_ASSIGNMENT_ID_MAX == LDPB_WIRE_ID_MAX, "assignment id size");
_Static_assert(LDPB_CLIENT_CONTEXT_MAX == LDPB_WIRE_CONTEXT_MAX, "context limit");
_Static_assert(LDPB_CLIENT_URL_MAX <= LDPB_TP_URL_MAX, "URL limit");
_Static_assert(LDPB_EXPERIMENT_NAME_MAX == LDPB_WIRE_EXPERIMENT_MAX, "experiment names");
_Static_assert(LDPB_CLIENT_CONFIG_MAX == LDPB_WIRE_CONFIG_MAX, "experiment settings");
_Static_assert((int)LDPB_EXPERIMENT_CREATE == (int)LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE &&
                   (int)LDPB_EXPERIMENT_LIST == (int)LDPB__V1__EXPERIMENT_COMMAND__OP__LIST &&
                   (int)LDPB_EXPERIMENT_SHOW == (int)LDPB__V1__EXPERIMENT_COMMAND__OP__SHOW &&
                   (int)LDPB_EXPERIMENT_STOP == (int)LDPB__V1__EXPERIMENT_COMMAND__OP__STOP,
               "operator commands match the wire");
_Static_assert((int)LDPB_CLIENT_MECH_LINEAR == (int)LDPB_MECH_LINEAR &&
                   (int)LDPB_CLIENT_MECH_QUADRATIC == (int)LDPB_MECH_QUADRATIC &&
                   (int)LDPB_CLIENT_MECH_EXPONENTIAL == (int)LDPB_MECH_EXPONENTIAL &&
                   (int)LDPB_CLIENT_MECH_LAPLACE == (int)LDPB_MECH_LAPLACE,
               "mechanism values match ldpb_mech_kind");
_Static_assert((int)LDPB_CLIENT_MECH_RAW == LDPB_MECH_ID_RAW, "raw is the table's raw row");
_Static_assert((int)LDPB_CLIENT_MECH_GAUSSIAN_STATS == LDPB_MECH_ID_GAUSSIAN_STATS &&
                   (int)LDPB_CLIENT_MECH_GAUSSIAN_STATS == (int)LDPB__V1__MECHANISM__GAUSSIAN_STATS,
               "the statistics row");
_Static_assert((int)LDPB_CLIENT_MECH_LINEAR == (int)LDPB__V1__MECHANISM__LINEAR &&
                   (int)LDPB_CLIENT_MECH_QUADRATIC == (int)LDPB__V1__MECHANISM__QUADRATIC &&
                   (int)LDPB_CLIENT_MECH_EXPONENTIAL == (int)LDPB__V1__MECHANISM__EXPONENTIAL &&
                   (int)LDPB_CLIENT_MECH_LAPLACE == (int)LDPB__V1__MECHANISM__LAPLACE &&
                   (int)LDPB_CLIENT_MECH_RAW == (int)LDPB__V1__MECHANISM__RAW,
               "mechanism values match the wire");

/* Mechanisms kept built, per (kind, epsilon, kappa); an aggregator uses a handful at a time. */
#define MECH_CACHE 8

/* The largest request: an AssignRequest with LDPB_WIRE_CONTEXT_MAX doubles encodes to about
 * 2.1 KB (a Report to about 100 bytes). */
#define REQ_PT_CAP LDPB_PLAINTEXT_MAX /* a report batch takes up to a whole frame */
#define SEND_CAP   (REQ_PT_CAP + LDPB_FRAME_SEALED_OVERHEAD)
/* The largest reply a client can expect is an Error with a reason of LDPB_WIRE_STRING_MAX bytes,
 * about 1.2 KB sealed; a longer frame is refused without being opened. The receive buffer has one
 * spare byte so that an oversized frame is recognised whatever the transport reports for it. */
/* An Assignment of the local contextual mode carries its model, up to LDPB_WIRE_STATS_MAX doubles
 * (4.5 KB at d = 32). */
#define REPLY_CAP 8192u
_Static_assert(REPLY_CAP > LDPB_FRAME_SEALED_OVERHEAD + LDPB_WIRE_STRING_MAX + 64,
               "an Error with the longest reason fits");

#define ERRMSG_BYTES (LDPB_WIRE_STRING_MAX + 256u)

typedef struct mech_slot {
    ldpb_mech *mech; /* NULL: empty */
    ldpb_client_mech kind;
    double epsilon, kappa;
} mech_slot;

struct ldpb_client {
    ldpb_tp *tp;               /* the transport's dialer, NULL if not open */
    const ldpb_tp_ops *tp_ops; /* opts.transport's, or NULL: the URL scheme's dialer */
    char *url;
    ldpb_keypair kp;     /* secret */
    ldpb_seal_key key;   /* secret: crypto_box_beforenm(server pk, kp.sk) */
    ldpb_ledger *ledger; /* owned */
    ldpb_rng *sys_rng;   /* owned: nonces, the first request id, and noise unless injected */
    ldpb_rng *noise_rng; /* sys_rng or the caller's (borrowed) */
    double epsilon_cap;
    int allow_raw;
    double reward_lo, reward_hi;
    uint32_t timeout_ms, max_attempts;
    uint64_t next_request_id;
    mech_slot mechs[MECH_CACHE];
    unsigned mech_next;   /* the slot replaced on the next miss (round robin) */
    rq *queue;            /* NULL without opts.queue_path */
    int no_raa;           /* the aggregator answered report_and_assign with LDPB_ENOTSUP */
    int no_batch;         /* ... and report_batch: ldpb_client_flush sends Reports one by one */
    int server_refused;   /* the last exchange ended with the server's own sealed Error */
    ldpb_ctxmodel *model; /* the local contextual mode's model, for dimension model_d */
    uint32_t model_d;
    ldpb_ctxstat *stat; /* the last local mechanism built (its parameters in stat_opts) */
    char errmsg[ERRMSG_BYTES];
    char tp_detail[LDPB_DETAIL_BYTES]; /* the transport's last detail */
    uint8_t req_pt[REQ_PT_CAP];
    uint8_t send_buf[SEND_CAP];
    uint8_t recv_buf[REPLY_CAP + 1];
    uint8_t reply_pt[REPLY_CAP];
};

/* Where a reply lands: the handle's own buffers for assign and report, larger ones for a status
 * (up to a whole frame). `frame` has cap + 1 bytes, so an oversized frame is recognised whatever
 * the transport reports for it. */
typedef struct reply_buf {
    uint8_t *frame;
    size_t cap;
    uint8_t *pt;
    size_t pt_cap;
} reply_buf;

static reply_buf own_buf(ldpb_client *c)
{
    reply_buf rb = {c->recv_buf, REPLY_CAP, c->reply_pt, sizeof c->reply_pt};
    return rb;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static ldpb_err
setf(ldpb_client *c, ldpb_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    return err;
}

/* Text from the network, made safe to put in a log line: control bytes become '?'. */
static void sanitize(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    dst[n] = '\0';
}

/* sanitize() into a buffer of `cap` bytes, cut at a character boundary when it does not fit. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n > cap - 1) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--; /* never half a character */
    }
    sanitize(dst, cap, src ? src : "", n);
}

/* An experiment argument as the handle keeps it: "" for the experiment "default" (NULL, "" or
 * "default"), else the name, which must be one (1..64 bytes of [a-z0-9._-]). */
static ldpb_err experiment_arg(ldpb_client *c, const char *name,
                               char out[LDPB_EXPERIMENT_NAME_MAX + 1])
{
    memset(out, 0, LDPB_EXPERIMENT_NAME_MAX + 1);
    if (!name || !*name || strcmp(name, "default") == 0)
        return LDPB_OK;
    size_t n = strnlen(name, LDPB_EXPERIMENT_NAME_MAX + 1);
    if (!ldpb_wire_experiment_valid(name, n)) {
        char shown[LDPB_EXPERIMENT_NAME_MAX + 1];
        copy_text(shown, sizeof shown, name);
        return setf(c, LDPB_EINVAL,
                    "\"%s%s\" is not an experiment name (1 to %u bytes of a-z, 0-9, '.', '_', "
                    "'-')",
                    shown, n > LDPB_EXPERIMENT_NAME_MAX ? "..." : "", LDPB_EXPERIMENT_NAME_MAX);
    }
    memcpy(out, name, n);
    return LDPB_OK;
}

/* The wire's value for an experiment kept as experiment_arg leaves it: none for "default". */
static char *wire_experiment(const char *exp)
{
    return exp[0] ? (char *)exp : NULL;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *ldpb_client_mech_name(ldpb_client_mech mech)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)mech);
    return d ? d->name : "unknown";
}

static const char *body_name(int body)
{
    switch (body) {
    case LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST:
        return "an assign_request";
    case LDPB__V1__ENVELOPE__BODY_ASSIGNMENT:
        return "an assignment";
    case LDPB__V1__ENVELOPE__BODY_REPORT:
        return "a report";
    case LDPB__V1__ENVELOPE__BODY_ACK:
        return "an ack";
    case LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST:
        return "a status_request";
    case LDPB__V1__ENVELOPE__BODY_STATUS:
        return "a status";
    case LDPB__V1__ENVELOPE__BODY_ERROR:
        return "an error";
    case LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT:
        return "an ack_and_assignment";
    case LDPB__V1__ENVELOPE__BODY_BATCH_ACK:
        return "a batch_ack";
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY:
        return "an experiment_reply";
    default:
        return "no body";
    }
}

/* ---- options and lifecycle ---------------------------------------------------------------- */

void ldpb_client_opts_init(ldpb_client_opts *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    ldpb_ledger_opts lo;
    ldpb_ledger_opts_init(&lo);
    opts->lifetime_budget = lo.lifetime_budget;
    opts->per_report_cap = lo.per_report_cap;
    opts->epsilon_cap = LDPB_CLIENT_EPSILON_CAP_DEFAULT;
    opts->reward_lo = 0.0;
    opts->reward_hi = 1.0;
    opts->timeout_ms = LDPB_CLIENT_TIMEOUT_DEFAULT_MS;
    opts->max_attempts = LDPB_CLIENT_ATTEMPTS_DEFAULT;
}

ldpb_err ldpb_client_opts_load_server_key(ldpb_client_opts *opts, const char *path)
{
    if (!opts || !path)
        return LDPB_EINVAL;
    uint8_t pk[LDPB_KEY_BYTES];
    ldpb_err err = ldpb_keyfile_load_public(path, pk, NULL);
    if (err == LDPB_OK)
        memcpy(opts->server_public_key, pk, sizeof pk);
    return err;
}

ldpb_err ldpb_client_load_secret_key(const char *path, uint8_t sk[32])
{
    if (!path || !sk)
        return LDPB_EINVAL;
    ldpb_keypair kp;
    ldpb_err err = ldpb_keyfile_load_secret(path, &kp, NULL);
    if (err == LDPB_OK)
        memcpy(sk, kp.sk, sizeof kp.sk);
    ldpb_keypair_wipe(&kp);
    return err;
}

static ldpb_err check_opts(const ldpb_client_opts *o)
{
    if (!o->server_url || o->server_url[0] == '\0')
        return LDPB_EINVAL;
    if (strlen(o->server_url) > LDPB_CLIENT_URL_MAX)
        return LDPB_ERANGE;
    static const uint8_t zero[LDPB_KEY_BYTES];
    if (sodium_memcmp(o->server_public_key, zero, sizeof zero) == 0)
        return LDPB_EINVAL;
    if (o->ledger_path && o->ledger_path[0] == '\0')
        return LDPB_EINVAL;
    if (!isfinite(o->epsilon_cap) || !isfinite(o->reward_lo) || !isfinite(o->reward_hi) ||
        !isfinite(o->lifetime_budget) || !isfinite(o->per_report_cap))
        return LDPB_EINVAL;
    if (!(o->epsilon_cap > 0.0 && o->epsilon_cap <= LDPB_EPSILON_MAX))
        return LDPB_ERANGE;
    if (!(o->reward_lo < o->reward_hi) || !isfinite(o->reward_hi - o->reward_lo))
        return LDPB_ERANGE;
    if (o->timeout_ms < 1 || o->timeout_ms > LDPB_CLIENT_TIMEOUT_MAX_MS)
        return LDPB_ERANGE;
    if (o->max_attempts < 1 || o->max_attempts > LDPB_CLIENT_ATTEMPTS_MAX)
        return LDPB_ERANGE;
    return LDPB_OK; /* the ledger checks its budget and cap itself */
}

static ldpb_err open_socket(ldpb_client *c, uint32_t timeout_ms)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.recv_max = LDPB_FRAME_MAX;
    o.send_timeout_ms = (int)timeout_ms;
    return ldpb_tp_dial_with(&c->tp, c->tp_ops, c->url, &o, c->tp_detail);
}

ldpb_err ldpb_client_new(ldpb_client **out, const ldpb_client_opts *opts)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (!opts)
        return LDPB_EINVAL;
    ldpb_err err = check_opts(opts);
    if (err)
        return err;
    const ldpb_tp_ops *tp_ops = NULL;
    if (opts->transport && !(tp_ops = ldpb_tp_named(opts->transport)))
        return LDPB_EINVAL; /* no handle yet to hold a message: client.h names the cause */
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;

    ldpb_client *c = calloc(1, sizeof *c);
    if (!c)
        return LDPB_ENOMEM;
    c->epsilon_cap = opts->epsilon_cap;
    c->allow_raw = opts->allow_raw != 0;
    c->reward_lo = opts->reward_lo;
    c->reward_hi = opts->reward_hi;
    c->timeout_ms = opts->timeout_ms;
    c->max_attempts = opts->max_attempts;
    c->tp_ops = tp_ops;

    err = LDPB_ENOMEM;
    size_t ulen = strlen(opts->server_url);
    c->url = malloc(ulen + 1);
    if (!c->url)
        goto fail;
    memcpy(c->url, opts->server_url, ulen + 1);

    if ((err = ldpb_rng_new_system(&c->sys_rng)) != LDPB_OK)
        goto fail;
    c->noise_rng = opts->rng ? opts->rng : c->sys_rng;
    err = opts->client_secret_key ? ldpb_keypair_from_secret(&c->kp, opts->client_secret_key)
                                  : ldpb_keypair_generate(&c->kp);
    if (err)
        goto fail;
    if ((err = ldpb_seal_key_derive(&c->key, opts->server_public_key, c->kp.sk)) != LDPB_OK)
        goto fail;

    ldpb_ledger_opts lo;
    lo.lifetime_budget = opts->lifetime_budget;
    lo.per_report_cap = opts->per_report_cap;
    lo.lifetime_delta = opts->lifetime_delta;
    lo.per_report_delta_cap = opts->per_report_delta_cap;
    if ((err = ldpb_ledger_open(&c->ledger, opts->ledger_path, &lo)) != LDPB_OK)
        goto fail;

    if ((opts->queue_path || opts->queue_in_memory) &&
        (err = rq_open(&c->queue, opts->queue_path, LDPB_CLIENT_QUEUE_MAX)) != LDPB_OK)
        goto fail;
    if ((err = open_socket(c, opts->timeout_ms)) != LDPB_OK)
        goto fail;
    /* A random start, so that a reply recorded from an earlier handle (same persistent key, ids
     * counted from the same start) can never match a request of this one. */
    c->next_request_id = ldpb_rng_u64(c->sys_rng) >> 1;
    *out = c;
    return LDPB_OK;

fail:
    ldpb_client_free(c);
    return err;
}

void ldpb_client_free(ldpb_client *c)
{
    if (!c)
        return;
    ldpb_tp_close(c->tp, 0);
    ldpb_ledger_close(c->ledger);
    rq_close(c->queue);
    for (size_t i = 0; i < MECH_CACHE; i++)
        ldpb_mech_free(c->mechs[i].mech);
    ldpb_ctxmodel_free(c->model);
    ldpb_ctxstat_free(c->stat);
    ldpb_rng_free(c->sys_rng);
    free(c->url);
    /* Keys, the last request (in RAW mode, a reward) and the last reply. */
    sodium_memzero(c, sizeof *c);
    free(c);
}

const char *ldpb_client_errmsg(const ldpb_client *c)
{
    return c ? c->errmsg : "no client handle";
}

void ldpb_client_public_key(const ldpb_client *c, uint8_t pk[LDPB_CLIENT_KEY_BYTES])
{
    if (!pk)
        return;
    if (c)
        memcpy(pk, c->kp.pk, LDPB_KEY_BYTES);
    else
        memset(pk, 0, LDPB_KEY_BYTES);
}

const ldpb_ledger *ldpb_client_ledger(const ldpb_client *c)
{
    return c ? c->ledger : NULL;
}

/* ---- mechanisms, assignments and the privacy rules ---------------------------------------- */

static ldpb_err get_mech(ldpb_client *c, ldpb_client_mech kind, double epsilon, double kappa,
                         const ldpb_mech **out)
{
    for (size_t i = 0; i < MECH_CACHE; i++) {
        const mech_slot *s = &c->mechs[i];
        if (s->mech && s->kind == kind && s->epsilon == epsilon && s->kappa == kappa) {
            *out = s->mech;
            return LDPB_OK;
        }
    }
    ldpb_mech_opts mo;
    ldpb_err err = ldpb_mech_desc_opts((int)kind, epsilon, kappa, &mo);
    if (err)
        return err;
    mo.range_lo = c->reward_lo;
    mo.range_hi = c->reward_hi;
    ldpb_mech *m = NULL;
    err = ldpb_mech_new(&m, &mo);
    if (err)
        return err;
    mech_slot *s = &c->mechs[c->mech_next];
    c->mech_next = (c->mech_next + 1) % MECH_CACHE;
    ldpb_mech_free(s->mech);
    s->mech = m;
    s->kind = kind;
    s->epsilon = epsilon;
    s->kappa = kappa;
    *out = m;
    return LDPB_OK;
}

/* The shape of an assignment, whoever made it: `bad` is LDPB_EPROTO for one from the network and
 * LDPB_EINVAL for one the app passes in. */
static ldpb_err check_assignment(ldpb_client *c, const ldpb_assignment *a, ldpb_err bad)
{
    if (a->id_len < 1 || a->id_len > LDPB_ASSIGNMENT_ID_MAX)
        return setf(c, bad, "assignment id of %zu bytes; 1 to %d expected", a->id_len,
                    LDPB_ASSIGNMENT_ID_MAX);
    /* The mechanism table's checks, as the wire decoder runs them; kappa 0 means none for a
     * mechanism that reads no kappa. */
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)a->mechanism);
    char detail[LDPB_MECH_DETAIL_BYTES];
    ldpb_err err = ldpb_mech_check_epsilon((int)a->mechanism, a->epsilon, "assignment", detail);
    if (!err)
        err = ldpb_mech_check_kappa((int)a->mechanism,
                                    (d->params & LDPB_MECH_PARAM_KAPPA) || a->kappa != 0.0,
                                    a->kappa, "assignment", detail);
    if (err)
        return setf(c, bad, "%s", detail);
    if (!(a->propensity > 0.0 && a->propensity <= 1.0))
        return setf(c, bad, "assignment propensity %g outside (0, 1]", a->propensity);
    size_t n = strnlen(a->experiment, sizeof a->experiment);
    if (n == sizeof a->experiment || (n && strcmp(a->experiment, "default") != 0 &&
                                      !ldpb_wire_experiment_valid(a->experiment, n)))
        return setf(c, bad, "the assignment's experiment is not an experiment name");
    return LDPB_OK;
}

/* The client's privacy rules for an assignment about to draw a new value: RAW only if the app
 * opted in, epsilon within the client's cap, and within what the ledger still allows. */
static ldpb_err admit(ldpb_client *c, const ldpb_assignment *a)
{
    if (!ldpb_mech_desc_of((int)a->mechanism)->local) {
        if (!c->allow_raw)
            return setf(c, LDPB_EBUDGET,
                        "the assignment asks for mechanism raw (the reward itself, no local "
                        "privacy) and this client was not created with allow_raw");
        return LDPB_OK;
    }
    if (a->epsilon > c->epsilon_cap)
        return setf(c, LDPB_EBUDGET, "epsilon %g above the client's cap %g", a->epsilon,
                    c->epsilon_cap);
    if (ldpb_ledger_check(c->ledger, a->epsilon) != LDPB_OK) {
        ldpb_ledger_opts lo = ldpb_ledger_get_opts(c->ledger);
        return setf(c, LDPB_EBUDGET,
                    "epsilon %g is more than the ledger allows: per-report cap %g, %g left of "
                    "the lifetime budget %g, %zu reports stored",
                    a->epsilon, lo.per_report_cap, ldpb_ledger_remaining(c->ledger),
                    lo.lifetime_budget, ldpb_ledger_count(c->ledger));
    }
    return LDPB_OK;
}

static ldpb_err check_expiry(ldpb_client *c, const ldpb_assignment *a)
{
    uint64_t now = ldpb_seal_now_ms();
    if (now < a->expires_at_ms)
        return LDPB_OK;
    return setf(c, LDPB_EEXPIRED,
                "the assignment expired at %" PRIu64 " ms, %" PRIu64
                " ms before this device's clock (%" PRIu64 "); check the clocks if this is new",
                a->expires_at_ms, now - a->expires_at_ms, now);
}

/* ---- the exchange ------------------------------------------------------------------------- */

static ldpb_err reopen_socket(ldpb_client *c)
{
    ldpb_tp_close(c->tp, 0);
    c->tp = NULL;
    return open_socket(c, c->timeout_ms);
}

typedef enum verdict {
    REPLY_OK,    /* an authenticated reply to this request that is not an Error */
    REPLY_FAIL,  /* the call fails with this error */
    REPLY_RETRY, /* the attempt is over without an answer: resend */
} verdict;

static ldpb_err send_frame(ldpb_client *c, size_t len)
{
    c->tp_detail[0] = '\0';
    ldpb_err err = ldpb_tp_send(c->tp, c->send_buf, len, c->tp_detail);
    if (err == LDPB_ETIMEDOUT) /* the native dialer says why (a refused connect) */
        return setf(c, LDPB_ETIMEDOUT, "sending to %s timed out%s%s", c->url,
                    c->tp_detail[0] ? ": " : "", c->tp_detail);
    if (err)
        return setf(c, err, "sending to %s: %s", c->url, c->tp_detail);
    return LDPB_OK;
}

/* Waits until `deadline` (monotonic ms) for the reply; LDPB_ETIMEDOUT when it passes. */
static ldpb_err recv_frame(ldpb_client *c, uint64_t deadline, const reply_buf *rb, size_t *n)
{
    uint64_t now = mono_ms();
    if (now >= deadline)
        return LDPB_ETIMEDOUT;
    int ms = deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
    ldpb_err err = ldpb_tp_recv_into(c->tp, rb->frame, rb->cap + 1, n, ms, c->tp_detail);
    if (err && err != LDPB_ETIMEDOUT)
        return setf(c, err, "receiving from %s: %s", c->url, c->tp_detail);
    return err;
}

/* Judges one reply frame (`n` bytes in rb->frame) to request `request_id` (docs/protocol.md
 * sections 4, 6, 7). Whatever is not authenticated (an unparseable frame, a PLAIN_ERROR, a frame
 * that fails to open or is reflected) only ends the attempt, since anyone on the path could have
 * sent it; so does a reply naming another request id, and the server's LDPB_EREPLAY (nanomsg
 * resends the same bytes itself when a connection breaks, which the server refuses as a replay).
 * Everything else the server says, authenticated, is final. A sealed reply without a request id
 * is the server refusing a nonce before it could read the request: only an Error may lack it. */
static verdict judge_reply(ldpb_client *c, const reply_buf *rb, size_t n, uint64_t request_id,
                           Ldpb__V1__Envelope **out, ldpb_err *err)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    char text[LDPB_WIRE_STRING_MAX + 1];
    if (n > rb->cap) {
        *err = setf(c, LDPB_EPROTO, "a reply of %zu bytes, more than any reply to it (%zu)", n,
                    rb->cap);
        return REPLY_RETRY;
    }
    ldpb_frame f;
    ldpb_err e = ldpb_frame_parse(rb->frame, n, &f, detail);
    if (e) {
        *err = setf(c, e, "a malformed reply frame: %s", detail);
        return REPLY_RETRY;
    }
    if (f.kind == LDPB_FRAME_PLAIN_ERROR) {
        e = ldpb_wire_err_from_code(f.error_code);
        sanitize(text, sizeof text, f.reason, f.reason_len);
        *err = setf(c, e, "the server refused the request (%s, unauthenticated): %s",
                    ldpb_errname(e), text);
        return REPLY_RETRY;
    }

    size_t pt_len = 0;
    e = ldpb_seal_open(&f, &c->key, LDPB_DIR_TO_CLIENT, c->kp.pk, rb->pt, rb->pt_cap, &pt_len,
                       detail);
    if (e) {
        *err =
            setf(c, e, "a reply that failed authentication (is the pinned key the server's?): %s",
                 detail);
        return REPLY_RETRY;
    }
    Ldpb__V1__Envelope *env = NULL;
    e = ldpb_envelope_decode(rb->pt, pt_len, &env, detail);
    sodium_memzero(rb->pt, pt_len);
    if (e) {
        *err = setf(c, e, "the server's reply is malformed: %s", detail);
        return REPLY_FAIL;
    }
    if (env->has_request_id && env->request_id != request_id) {
        *err = setf(c, LDPB_EPROTO,
                    "a reply to request %" PRIu64 " while waiting for request %" PRIu64,
                    env->request_id, request_id);
        ldpb_envelope_free(env);
        return REPLY_RETRY;
    }
    if (env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        e = ldpb_wire_err_from_code(env->error->code);
        sanitize(text, sizeof text, env->error->reason, strlen(env->error->reason));
        if (e == LDPB_ENOEXPERIMENT)
            *err = setf(c, e,
                        "the aggregator runs no such experiment (unknown or stopped; not "
                        "retried): %s",
                        text);
        else
            *err = setf(c, e, "the server refused the request (%s): %s", ldpb_errname(e), text);
        ldpb_envelope_free(env);
        c->server_refused = e != LDPB_EREPLAY;
        return e == LDPB_EREPLAY ? REPLY_RETRY : REPLY_FAIL;
    }
    if (!env->has_request_id) {
        *err = setf(c, LDPB_EPROTO, "the server sent %s without a request id",
                    body_name((int)env->body_case));
        ldpb_envelope_free(env);
        return REPLY_FAIL;
    }
    *out = env;
    return REPLY_OK;
}

/* Sends the request in req_pt (`pt_len` bytes) until an attempt gets an answer: each attempt
 * seals the same bytes under a fresh nonce and waits timeout_ms. A REQ socket delivers one reply
 * per request, so a reply that is ignored ends its attempt early. */
static ldpb_err exchange(ldpb_client *c, size_t pt_len, uint64_t request_id, const reply_buf *rb,
                         Ldpb__V1__Envelope **reply)
{
    *reply = NULL;
    c->server_refused = 0;
    ldpb_err last = LDPB_ETIMEDOUT;
    for (uint32_t attempt = 0; attempt < c->max_attempts; attempt++) {
        uint8_t nonce[LDPB_NONCE_BYTES];
        ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, c->sys_rng);
        size_t len = 0;
        ldpb_err err = ldpb_seal_frame(c->send_buf, sizeof c->send_buf, &len, c->kp.pk, &c->key,
                                       nonce, c->req_pt, pt_len);
        if (err)
            return setf(c, err, "sealing the request failed (%s)", ldpb_errname(err));
        uint64_t deadline = mono_ms() + c->timeout_ms;
        size_t n = 0;
        err = send_frame(c, len);
        int sent = err == LDPB_OK;
        if (sent) {
            c->tp_detail[0] = '\0';
            err = recv_frame(c, deadline, rb, &n);
        }
        if (err == LDPB_OK) {
            verdict v = judge_reply(c, rb, n, request_id, reply, &err);
            if (v == REPLY_OK) {
                c->errmsg[0] = '\0'; /* what ended earlier attempts is not this call's failure */
                return LDPB_OK;
            }
            if (v == REPLY_FAIL)
                return err;
        } else if (err == LDPB_ETIMEDOUT && sent && c->tp_detail[0]) {
            /* the native dialer knows more: the connection ended before the reply */
            setf(c, err, "no reply from %s: %s", c->url, c->tp_detail);
        } else if (err == LDPB_ETIMEDOUT && sent) {
            setf(c, err, "no reply from %s within %" PRIu32 " ms", c->url, c->timeout_ms);
        } else if (err != LDPB_ETIMEDOUT) { /* a send's timeout keeps send_frame's message */
            return err;                     /* the transport failed */
        }
        last = err;
        /* A fresh socket for the next attempt: a late reply to this one then has nowhere to land.
         * nanomsg 1.1's REQ socket can abort the process in nn_recv (a chunk-tag assertion) when
         * replies arrive after receive timeouts on the same socket; seen with a stalled server. */
        ldpb_err reopen = reopen_socket(c);
        if (reopen)
            return setf(c, reopen, "cannot reopen the socket to %s: %s", c->url, c->tp_detail);
    }
    char prev[ERRMSG_BYTES];
    memcpy(prev, c->errmsg, sizeof prev);
    return setf(c, last, "no answer after %" PRIu32 " attempts of %" PRIu32 " ms; the last: %s",
                c->max_attempts, c->timeout_ms, prev);
}

/* ---- assign and report -------------------------------------------------------------------- */

static ldpb_err take_assignment(ldpb_client *c, const Ldpb__V1__Envelope *env, const char *exp,
                                ldpb_assignment *out)
{
    if (env->body_case != LDPB__V1__ENVELOPE__BODY_ASSIGNMENT)
        return setf(c, LDPB_EPROTO, "the server answered an assign request with %s",
                    body_name((int)env->body_case));
    const Ldpb__V1__Assignment *m = env->assignment;
    ldpb_assignment a;
    memset(&a, 0, sizeof a);
    if (!m->assignment_id.data || m->assignment_id.len < 1 ||
        m->assignment_id.len > LDPB_ASSIGNMENT_ID_MAX)
        return setf(c, LDPB_EPROTO, "assignment id of %zu bytes; 1 to %d expected",
                    m->assignment_id.len, LDPB_ASSIGNMENT_ID_MAX);
    memcpy(a.id, m->assignment_id.data, m->assignment_id.len);
    a.id_len = m->assignment_id.len;
    a.arm = m->arm;
    a.mechanism = (ldpb_client_mech)m->mechanism;
    a.epsilon = m->epsilon;
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)m->mechanism);
    if (!d)
        return setf(c, LDPB_EPROTO, "assignment mechanism %d is not a known mechanism",
                    (int)m->mechanism);
    if (m->has_kappa && !(d->params & LDPB_MECH_PARAM_KAPPA))
        return setf(c, LDPB_EPROTO, "assignment kappa with mechanism %s", d->name);
    if (d->output == LDPB_MECH_OUTPUT_VECTOR)
        return setf(c, LDPB_EPROTO,
                    "the aggregator serves the local contextual mode (mechanism %s): ask with "
                    "ldpb_client_assign_local",
                    d->name);
    if (d->params & LDPB_MECH_PARAM_KAPPA)
        a.kappa = m->has_kappa ? m->kappa : LDPB_KAPPA_DEFAULT;
    a.expires_at_ms = m->expires_at_ms;
    a.propensity = m->propensity;
    a.policy_version = m->has_policy_version ? m->policy_version : 0;
    memcpy(a.experiment, exp, strlen(exp));

    ldpb_err err = check_assignment(c, &a, LDPB_EPROTO);
    if (!err)
        err = check_expiry(c, &a);
    if (!err)
        err = admit(c, &a);
    if (err)
        return err;
    if (ldpb_mech_desc_scalar(d)) {
        /* Built now: an assignment whose mechanism cannot be built is refused before the app
         * acts on it, and the report finds the mechanism in the cache. */
        const ldpb_mech *mech = NULL;
        err = get_mech(c, a.mechanism, a.epsilon, a.kappa, &mech);
        if (err == LDPB_ENOMEM)
            return setf(c, err, "out of memory building the mechanism");
        if (err)
            return setf(c, LDPB_EPROTO,
                        "the assignment's mechanism %s at epsilon %g cannot be "
                        "built (%s)",
                        ldpb_client_mech_name(a.mechanism), a.epsilon, ldpb_errname(err));
    }
    *out = a;
    return LDPB_OK;
}

/* Sends one AssignRequest (the K-armed and central contextual request, or the local model's)
 * and returns the server's answer, unjudged. */
static ldpb_err exchange_assign_request(ldpb_client *c, Ldpb__V1__AssignRequest *req,
                                        Ldpb__V1__Envelope **reply)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_request_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = req;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(&env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    if (err)
        return setf(c, err, "encoding the assign request: %s", detail);
    reply_buf rb = own_buf(c);
    err = exchange(c, pt_len, env.request_id, &rb, reply);
    sodium_memzero(c->req_pt, pt_len);
    return err;
}

ldpb_err ldpb_client_assign(ldpb_client *c, const double *context, size_t n_context,
                            ldpb_assignment *out)
{
    return ldpb_client_assign_in(c, NULL, context, n_context, out);
}

ldpb_err ldpb_client_assign_in(ldpb_client *c, const char *experiment, const double *context,
                               size_t n_context, ldpb_assignment *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!out)
        return setf(c, LDPB_EINVAL, "no assignment to fill (out is NULL)");
    char exp[LDPB_EXPERIMENT_NAME_MAX + 1];
    ldpb_err err = experiment_arg(c, experiment, exp);
    if (err)
        return err;
    if (n_context && !context)
        return setf(c, LDPB_EINVAL, "context is NULL with n_context %zu", n_context);
    if (n_context > LDPB_CLIENT_CONTEXT_MAX)
        return setf(c, LDPB_ERANGE, "context has %zu values, more than %u", n_context,
                    LDPB_CLIENT_CONTEXT_MAX);
    for (size_t i = 0; i < n_context; i++)
        if (!isfinite(context[i]))
            return setf(c, LDPB_EINVAL, "context[%zu] is not a finite number", i);

    /* Tell the aggregator the most this client will take: its cap, the ledger's per-report cap
     * and what is left of the lifetime budget. */
    ldpb_ledger_opts lo = ldpb_ledger_get_opts(c->ledger);
    double offer = c->epsilon_cap;
    if (lo.per_report_cap < offer)
        offer = lo.per_report_cap;
    double left = ldpb_ledger_remaining(c->ledger);
    if (left < offer)
        offer = left;
    if (!(offer > 0.0) && !c->allow_raw)
        return setf(c, LDPB_EBUDGET, "the ledger's lifetime budget %g is spent",
                    lo.lifetime_budget);

    Ldpb__V1__AssignRequest req = LDPB__V1__ASSIGN_REQUEST__INIT;
    req.n_context = n_context;
    req.context = (double *)context;
    if (offer > 0.0) {
        req.has_max_epsilon = 1;
        req.max_epsilon = offer;
    }
    req.experiment = wire_experiment(exp);
    Ldpb__V1__Envelope *reply = NULL;
    err = exchange_assign_request(c, &req, &reply);
    if (err)
        return err;
    err = take_assignment(c, reply, exp, out);
    ldpb_envelope_free(reply);
    return err;
}

/* The experiment of an assignment the app passes in (check_assignment has checked it), as the
 * handle keeps it: "" for "default". */
static const char *experiment_of(const ldpb_assignment *a)
{
    return strcmp(a->experiment, "default") == 0 ? "" : a->experiment;
}

/* The reward on the unit scale, as the mechanisms compute it (division, so hi maps to 1). */
static double unit_reward(const ldpb_client *c, double reward)
{
    double x = (reward - c->reward_lo) / (c->reward_hi - c->reward_lo);
    return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

/* The value to send for `a`: drawn through the ledger (or the stored one), or the unit reward
 * for RAW. *is_bit says which field of the Report carries it. */
static ldpb_err report_value(ldpb_client *c, const ldpb_assignment *a, double reward, double *value,
                             int *is_bit)
{
    if (a->mechanism == LDPB_CLIENT_MECH_GAUSSIAN_STATS)
        return setf(c, LDPB_EINVAL,
                    "a local contextual assignment is reported with ldpb_client_report_local, "
                    "alone (not in a batch, a queue or a report_and_assign)");
    if (!ldpb_mech_desc_of((int)a->mechanism)->local) {
        ldpb_err err = admit(c, a);
        if (!err)
            err = check_expiry(c, a);
        if (err)
            return err;
        *value = unit_reward(c, reward);
        *is_bit = 0;
        return LDPB_OK;
    }
    ldpb_ledger_entry e;
    int stored = ldpb_ledger_lookup(c->ledger, a->id, a->id_len, &e) == LDPB_OK;
    if (!stored) {
        /* A new draw: every rule applies. A stored value was paid for already; sending it again
         * reveals nothing new, whatever the clock or the cap says now. */
        ldpb_err err = check_expiry(c, a);
        if (!err)
            err = admit(c, a);
        if (err)
            return err;
    }
    const ldpb_mech *mech = NULL;
    ldpb_err err = get_mech(c, a->mechanism, a->epsilon, a->kappa, &mech);
    if (err)
        return setf(c, err, "the mechanism %s at epsilon %g cannot be built (%s)",
                    ldpb_client_mech_name(a->mechanism), a->epsilon, ldpb_errname(err));
    err = ldpb_ledger_privatize_in(c->ledger, experiment_of(a), a->id, a->id_len, mech,
                                   c->noise_rng, reward, &e);
    switch (err) {
    case LDPB_OK:
        break;
    case LDPB_ESTATE:
        return setf(c, err,
                    "the ledger already holds a report for this assignment with another "
                    "mechanism or epsilon, or in another experiment");
    case LDPB_EBUDGET:
        return setf(c, err, "the ledger refused the charge of epsilon %g (%g left)",
                    ldpb_mech_epsilon_effective(mech), ldpb_ledger_remaining(c->ledger));
    case LDPB_EIO:
        return setf(c, err, "the ledger could not make the spend durable; nothing was sent");
    case LDPB_EINVAL:
    case LDPB_ENOMEM:
    case LDPB_ERANGE:
    case LDPB_EPROTO:
    case LDPB_ECRYPTO:
    case LDPB_ETRANSPORT:
    case LDPB_ETIMEDOUT:
    case LDPB_ECORRUPT:
    case LDPB_EREPLAY:
    case LDPB_EVERSION:
    case LDPB_EAUTH:
    case LDPB_ENOTFOUND:
    case LDPB_EEXPIRED:
    case LDPB_EBUSY:
    case LDPB_ENOTSUP:
    case LDPB_ENOEXPERIMENT:
        return setf(c, err, "privatizing through the ledger failed (%s)", ldpb_errname(err));
    }
    *value = e.value;
    *is_bit = ldpb_mech_desc_of((int)a->mechanism)->output == LDPB_MECH_OUTPUT_BIT;
    sodium_memzero(&e, sizeof e);
    return LDPB_OK;
}

static void entry_of(rq_entry *e, const ldpb_assignment *a, double value, int is_bit)
{
    memset(e, 0, sizeof *e);
    memcpy(e->id, a->id, a->id_len);
    e->id_len = (uint8_t)a->id_len;
    e->mechanism = (uint8_t)a->mechanism;
    e->is_bit = is_bit != 0;
    e->epsilon = a->epsilon;
    e->value = value;
    const char *exp = experiment_of(a);
    memcpy(e->experiment, exp, strlen(exp));
}

/* A report that got no answer waits in the queue, if there is one and it has room; otherwise
 * (as without a queue) the ledger keeps the value for the app's own retry. The call's error
 * stands either way: the report is not acknowledged. */
static void queue_unanswered(ldpb_client *c, const rq_entry *e)
{
    if (!c->queue || rq_has(c->queue, e->id, e->id_len) || c->queue->n >= LDPB_CLIENT_QUEUE_MAX)
        return;
    if (rq_push(c->queue, e) != LDPB_OK)
        return;
    if (rq_save(c->queue) != LDPB_OK)
        sodium_memzero(&c->queue->e[--c->queue->n], sizeof(rq_entry));
}

/* Sends a request that carries a report: encodes env (body set by the caller) under the next
 * request id, exchanges it, and when no answer came (timeout, transport) puts the report `qe` in
 * the queue if may_queue. qe is wiped either way; *reply is set on LDPB_OK. */
static ldpb_err send_report_request(ldpb_client *c, Ldpb__V1__Envelope *env, rq_entry *qe,
                                    int may_queue, Ldpb__V1__Envelope **reply)
{
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    env->has_request_id = 1;
    env->request_id = c->next_request_id++;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    if (err) {
        sodium_memzero(qe, sizeof *qe);
        return setf(c, err, "encoding the report: %s", detail);
    }
    reply_buf rb = own_buf(c);
    err = exchange(c, pt_len, env->request_id, &rb, reply);
    sodium_memzero(c->req_pt, pt_len);
    if (may_queue && (err == LDPB_ETIMEDOUT || err == LDPB_ETRANSPORT))
        queue_unanswered(c, qe);
    sodium_memzero(qe, sizeof *qe);
    return err;
}

/* The end of a single report's exchange (scalar or local statistics): a timeout says that a
 * spent report is resent unchanged; an answer must be the Ack of this very assignment. */
static ldpb_err finish_report(ldpb_client *c, ldpb_err err, Ldpb__V1__Envelope *reply,
                              const ldpb_assignment *a, int spent, const char *what)
{
    if (err) {
        if (err == LDPB_ETIMEDOUT && spent) {
            char prev[ERRMSG_BYTES];
            memcpy(prev, c->errmsg, sizeof prev);
            setf(c, err,
                 "%s; the spend stays in the ledger and reporting this assignment again resends "
                 "the same %s",
                 prev, what);
        }
        return err;
    }
    if (reply->body_case != LDPB__V1__ENVELOPE__BODY_ACK)
        err = setf(c, LDPB_EPROTO, "the server answered a report with %s",
                   body_name((int)reply->body_case));
    else if (reply->ack->assignment_id.len != a->id_len ||
             memcmp(reply->ack->assignment_id.data, a->id, a->id_len) != 0)
        err = setf(c, LDPB_EPROTO, "the server acknowledged another assignment");
    ldpb_envelope_free(reply);
    return err;
}

static ldpb_err report_impl(ldpb_client *c, const ldpb_assignment *a, const double *x, size_t n_x,
                            double reward)
{
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!a)
        return setf(c, LDPB_EINVAL, "no assignment (a is NULL)");
    if (n_x && !x)
        return setf(c, LDPB_EINVAL, "features are NULL with n_features %zu", n_x);
    if (n_x > LDPB_WIRE_REPORT_CTX_MAX)
        return setf(c, LDPB_ERANGE, "%zu features, more than %u", n_x, LDPB_WIRE_REPORT_CTX_MAX);
    for (size_t i = 0; i < n_x; i++)
        if (!isfinite(x[i]))
            return setf(c, LDPB_EINVAL, "features[%zu] is not a finite number", i);
    if (!isfinite(reward))
        return setf(c, LDPB_EINVAL, "the reward is not a finite number");
    ldpb_err err = check_assignment(c, a, LDPB_EINVAL);
    if (err)
        return err;
    double value = 0.0;
    int is_bit = 0;
    if ((err = report_value(c, a, reward, &value, &is_bit)) != LDPB_OK)
        return err;

    /* Encoded once: every attempt, and every later call for this assignment, carries the same
     * value (only the nonce, hence the ciphertext, differs). */
    rq_entry qe;
    entry_of(&qe, a, value, is_bit);
    Ldpb__V1__Report rep;
    rq_report_of(&rep, &qe);
    rep.n_context = n_x;
    rep.context = (double *)x;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    Ldpb__V1__Envelope *reply = NULL;
    /* The queue holds no features, so a contextual report is left to the app's own retry. */
    err = send_report_request(c, &env, &qe, n_x == 0, &reply);
    sodium_memzero(&rep, sizeof rep);
    sodium_memzero(&value, sizeof value);
    return finish_report(c, err, reply, a, ldpb_mech_desc_of((int)a->mechanism)->local, "value");
}

ldpb_err ldpb_client_report(ldpb_client *c, const ldpb_assignment *a, double reward)
{
    return report_impl(c, a, NULL, 0, reward);
}

ldpb_err ldpb_client_report_context(ldpb_client *c, const ldpb_assignment *a,
                                    const double *features, size_t n_features, double reward)
{
    return report_impl(c, a, features, n_features, reward);
}

/* ---- the local contextual mode ------------------------------------------------------------ */

static double offer_of(ldpb_client *c);

/* The mechanism of a local assignment, built from the parameters the aggregator sent (kept while
 * they stay the same): its constructor is the check that they are admissible. */
static ldpb_err get_stat(ldpb_client *c, const ldpb_assignment *a, const ldpb_ctxstat **out)
{
    if (c->stat) {
        const ldpb_ctxstat_opts *o = ldpb_ctxstat_get_opts(c->stat);
        if (o->d == a->local_d && o->epsilon == a->epsilon && o->delta == a->local_delta &&
            o->feature_norm == a->local_feature_norm && o->reward_bound == a->local_reward_bound) {
            *out = c->stat;
            return LDPB_OK;
        }
    }
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, a->local_d, a->epsilon, a->local_delta);
    o.kind = LDPB_CTXSTAT_GAUSSIAN;
    o.feature_norm = a->local_feature_norm;
    o.reward_bound = a->local_reward_bound;
    ldpb_ctxstat *m = NULL;
    ldpb_err err = ldpb_ctxstat_new(&m, &o);
    if (err)
        return err;
    ldpb_ctxstat_free(c->stat);
    c->stat = m;
    *out = m;
    return LDPB_OK;
}

/* The client's privacy rules for a local assignment about to draw: epsilon within the client's
 * cap, (epsilon, delta) within what the ledger allows. */
static ldpb_err admit_local(ldpb_client *c, const ldpb_assignment *a)
{
    if (a->epsilon > c->epsilon_cap)
        return setf(c, LDPB_EBUDGET, "epsilon %g above the client's cap %g", a->epsilon,
                    c->epsilon_cap);
    if (ldpb_ledger_check_delta(c->ledger, a->epsilon, a->local_delta) != LDPB_OK) {
        ldpb_ledger_opts lo = ldpb_ledger_get_opts(c->ledger);
        return setf(c, LDPB_EBUDGET,
                    "(epsilon %g, delta %g) is more than the ledger allows: per-report caps (%g, "
                    "%g), (%g, %g) left of the lifetime budgets (%g, %g)",
                    a->epsilon, a->local_delta, lo.per_report_cap, lo.per_report_delta_cap,
                    ldpb_ledger_remaining(c->ledger), ldpb_ledger_delta_remaining(c->ledger),
                    lo.lifetime_budget, lo.lifetime_delta);
    }
    return LDPB_OK;
}

static ldpb_err check_rows(ldpb_client *c, const double *x, uint32_t n, uint32_t d, double bound)
{
    for (uint32_t i = 0; i < n; i++) {
        double s = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            double v = x[(size_t)i * d + j];
            if (!isfinite(v))
                return setf(c, LDPB_EINVAL, "features[%u][%u] is not a finite number", i, j);
            s += v * v;
        }
        /* the mechanism's own tolerance (ldpb/ctxstat.h): a normalisation may round up */
        if (bound > 0.0 && sqrt(s) > bound * (1.0 + 1e-9))
            return setf(c, LDPB_ERANGE,
                        "feature row %u has norm %.17g, above the aggregator's bound L = %g", i,
                        sqrt(s), bound);
    }
    return LDPB_OK;
}

static ldpb_err take_local(ldpb_client *c, const Ldpb__V1__Envelope *env, const char *exp,
                           const double *features, uint32_t n_actions, uint32_t d,
                           ldpb_assignment *out)
{
    if (env->body_case != LDPB__V1__ENVELOPE__BODY_ASSIGNMENT)
        return setf(c, LDPB_EPROTO, "the server answered an assign request with %s",
                    body_name((int)env->body_case));
    const Ldpb__V1__Assignment *m = env->assignment;
    const Ldpb__V1__LocalModel *lm = m->local_model;
    if ((int)m->mechanism != LDPB_MECH_ID_GAUSSIAN_STATS || !lm)
        return setf(c, LDPB_EPROTO,
                    "the aggregator answered a local-model request with mechanism %s: it does not "
                    "serve the local contextual mode",
                    ldpb_client_mech_name((ldpb_client_mech)m->mechanism));
    if (lm->d != d)
        return setf(c, LDPB_EINVAL, "the aggregator's model has dimension %u, the app's rows %u",
                    (unsigned)lm->d, (unsigned)d);
    ldpb_assignment a;
    memset(&a, 0, sizeof a);
    memcpy(a.id, m->assignment_id.data, m->assignment_id.len);
    a.id_len = m->assignment_id.len;
    a.mechanism = LDPB_CLIENT_MECH_GAUSSIAN_STATS;
    a.epsilon = m->epsilon;
    a.expires_at_ms = m->expires_at_ms;
    a.propensity = 1.0;
    a.policy_version = m->has_policy_version ? m->policy_version : 0;
    a.local_d = lm->d;
    a.local_delta = lm->delta;
    a.local_feature_norm = lm->feature_norm;
    a.local_reward_bound = lm->reward_bound;
    memcpy(a.experiment, exp, strlen(exp));
    ldpb_err err = check_assignment(c, &a, LDPB_EPROTO);
    if (!err)
        err = check_expiry(c, &a);
    if (!err)
        err = admit_local(c, &a);
    if (!err)
        err = check_rows(c, features, n_actions, d, a.local_feature_norm);
    if (err)
        return err;
    const ldpb_ctxstat *stat = NULL;
    err = get_stat(c, &a, &stat);
    if (err)
        return setf(c, err == LDPB_ENOMEM ? err : LDPB_EPROTO,
                    "the assignment's mechanism (d %u, epsilon %g, delta %g, L %g, B %g) cannot "
                    "be built (%s)",
                    (unsigned)a.local_d, a.epsilon, a.local_delta, a.local_feature_norm,
                    a.local_reward_bound, ldpb_errname(err));
    if (c->model && c->model_d != d) {
        ldpb_ctxmodel_free(c->model);
        c->model = NULL;
    }
    if (!c->model) {
        if ((err = ldpb_ctxmodel_new(&c->model, d)) != LDPB_OK)
            return setf(c, err, "building the model (%s)", ldpb_errname(err));
        c->model_d = d;
    }
    err = ldpb_ctxmodel_load(c->model, lm->stats, lm->n_stats, lm->shift, lm->beta, NULL);
    if (err)
        return setf(c, LDPB_EPROTO, "the aggregator's model cannot be used (%s)",
                    ldpb_errname(err));
    uint32_t arm = 0, ties = 1;
    /* Ties are broken with the handle's own generator: not privacy noise, nothing to audit. */
    err = ldpb_ctxmodel_choose(c->model, c->sys_rng, features, n_actions, &arm, &ties);
    if (err)
        return setf(c, err, "choosing among the rows failed (%s)", ldpb_errname(err));
    a.arm = arm;
    a.propensity = 1.0 / (double)(ties ? ties : 1);
    *out = a;
    return LDPB_OK;
}

ldpb_err ldpb_client_assign_local(ldpb_client *c, const double *features, uint32_t n_actions,
                                  uint32_t d, ldpb_assignment *out)
{
    return ldpb_client_assign_local_in(c, NULL, features, n_actions, d, out);
}

ldpb_err ldpb_client_assign_local_in(ldpb_client *c, const char *experiment, const double *features,
                                     uint32_t n_actions, uint32_t d, ldpb_assignment *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!out || !features)
        return setf(c, LDPB_EINVAL, "no assignment to fill or no features (NULL)");
    char exp[LDPB_EXPERIMENT_NAME_MAX + 1];
    if (experiment_arg(c, experiment, exp) != LDPB_OK)
        return LDPB_EINVAL;
    if (d < 1 || d > LDPB_CTXSTAT_D_MAX)
        return setf(c, LDPB_ERANGE, "d %u outside [1, %u]", (unsigned)d, LDPB_CTXSTAT_D_MAX);
    if (n_actions < 1 || n_actions > LDPB_CLIENT_LOCAL_ACTIONS_MAX)
        return setf(c, LDPB_ERANGE, "n_actions %u outside [1, %u]", (unsigned)n_actions,
                    LDPB_CLIENT_LOCAL_ACTIONS_MAX);
    ldpb_err err = check_rows(c, features, n_actions, d, 0.0);
    if (err)
        return err;
    double offer = offer_of(c);
    if (!(offer > 0.0))
        return setf(c, LDPB_EBUDGET, "the ledger's lifetime budget is spent");

    /* The features stay on the device: the request says only that it wants the model. */
    Ldpb__V1__AssignRequest req = LDPB__V1__ASSIGN_REQUEST__INIT;
    req.has_max_epsilon = 1;
    req.max_epsilon = offer;
    req.has_local_model = 1;
    req.local_model = 1;
    req.experiment = wire_experiment(exp);
    Ldpb__V1__Envelope *reply = NULL;
    err = exchange_assign_request(c, &req, &reply);
    if (err)
        return err;
    err = take_local(c, reply, exp, features, n_actions, d, out);
    ldpb_envelope_free(reply);
    return err;
}

ldpb_err ldpb_client_report_local(ldpb_client *c, const ldpb_assignment *a, const double *x_chosen,
                                  uint32_t d, double reward)
{
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!a || !x_chosen)
        return setf(c, LDPB_EINVAL, "no assignment or no features (NULL)");
    if (a->mechanism != LDPB_CLIENT_MECH_GAUSSIAN_STATS)
        return setf(c, LDPB_EINVAL,
                    "the assignment has mechanism %s, not the local contextual mode's",
                    ldpb_client_mech_name(a->mechanism));
    if (d != a->local_d)
        return setf(c, LDPB_EINVAL, "%u features for an assignment of dimension %u", (unsigned)d,
                    (unsigned)a->local_d);
    if (!isfinite(reward))
        return setf(c, LDPB_EINVAL, "the reward is not a finite number");
    ldpb_err err = check_assignment(c, a, LDPB_EINVAL);
    if (!err)
        err = check_rows(c, x_chosen, 1, d, 0.0);
    if (err)
        return err;

    double stats[LDPB_CTXSTAT_VALUES_MAX];
    ldpb_ledger_entry e;
    int stored = ldpb_ledger_lookup(c->ledger, a->id, a->id_len, &e) == LDPB_OK;
    if (!stored) {
        /* A new draw: every rule applies (a stored one was paid for; resending it reveals
         * nothing new). */
        err = check_expiry(c, a);
        if (!err)
            err = admit_local(c, a);
        if (err)
            return err;
    }
    const ldpb_ctxstat *stat = NULL;
    err = get_stat(c, a, &stat);
    if (err)
        return setf(c, err, "the assignment's mechanism cannot be built (%s)", ldpb_errname(err));
    err = ldpb_ledger_privatize_stats_in(c->ledger, experiment_of(a), a->id, a->id_len, stat,
                                         c->noise_rng, x_chosen, unit_reward(c, reward), &e, stats,
                                         LDPB_CTXSTAT_VALUES_MAX);
    if (err) {
        sodium_memzero(stats, sizeof stats);
        if (err == LDPB_ESTATE)
            return setf(c, err,
                        "the ledger already holds a report for this assignment with another "
                        "mechanism, epsilon or delta, or in another experiment");
        if (err == LDPB_EBUDGET)
            return setf(c, err, "the ledger refused the charge of (epsilon %g, delta %g)",
                        a->epsilon, a->local_delta);
        if (err == LDPB_ERANGE)
            return setf(c, err, "the chosen row is longer than the assignment's bound L = %g",
                        a->local_feature_norm);
        if (err == LDPB_EIO)
            return setf(c, err, "the ledger could not make the spend durable; nothing was sent");
        return setf(c, err, "privatizing through the ledger failed (%s)", ldpb_errname(err));
    }

    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    rep.assignment_id.data = (uint8_t *)a->id;
    rep.assignment_id.len = a->id_len;
    rep.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
    rep.epsilon = e.epsilon;
    rep.has_delta = 1;
    rep.delta = e.delta;
    rep.n_stats = e.n_stats;
    rep.stats = stats;
    rep.experiment = wire_experiment(experiment_of(a));
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rq_entry none;
    memset(&none, 0, sizeof none);
    Ldpb__V1__Envelope *reply = NULL;
    /* Not queued: the queue's entries hold one value (docs/client.md). */
    err = send_report_request(c, &env, &none, 0, &reply);
    sodium_memzero(stats, sizeof stats);
    sodium_memzero(&e, sizeof e);
    return finish_report(c, err, reply, a, 1, "values");
}

/* ---- status ------------------------------------------------------------------------------- */

static ldpb_err take_status(ldpb_client *c, const Ldpb__V1__Envelope *env, ldpb_status *out)
{
    if (env->body_case != LDPB__V1__ENVELOPE__BODY_STATUS)
        return setf(c, LDPB_EPROTO, "the server answered a status request with %s",
                    body_name((int)env->body_case));
    const Ldpb__V1__Status *st = env->status;
    sanitize(out->policy, sizeof out->policy, st->policy, strlen(st->policy));
    sanitize(out->model, sizeof out->model, st->model, strlen(st->model));
    if (st->experiment) /* a name: the decoder checked it */
        memcpy(out->experiment, st->experiment, strlen(st->experiment));
    out->reports = st->reports;
    out->assignments = st->assignments;
    if (st->n_arms > 0) {
        out->arms = calloc(st->n_arms, sizeof *out->arms);
        if (!out->arms)
            return setf(c, LDPB_ENOMEM, "out of memory for %zu arms", st->n_arms);
    }
    out->n_arms = (uint32_t)st->n_arms; /* at most LDPB_WIRE_ARMS_MAX: the decoder checks it */
    for (size_t i = 0; i < st->n_arms; i++) {
        const Ldpb__V1__ArmStatus *m = st->arms[i];
        ldpb_arm_status *a = &out->arms[i];
        a->arm = m->arm;
        a->pulls = m->pulls;
        a->has_estimate = m->has_estimate != 0;
        a->estimate = a->has_estimate ? m->estimate : 0.0;
        a->has_ci = m->has_ci_low && m->has_ci_high;
        a->ci_low = a->has_ci ? m->ci_low : 0.0;
        a->ci_high = a->has_ci ? m->ci_high : 0.0;
        a->has_active = m->has_active != 0;
        a->active = a->has_active && m->active;
    }
    return LDPB_OK;
}

ldpb_err ldpb_client_status(ldpb_client *c, ldpb_status *out)
{
    return ldpb_client_status_in(c, NULL, out);
}

ldpb_err ldpb_client_status_in(ldpb_client *c, const char *experiment, ldpb_status *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!out)
        return setf(c, LDPB_EINVAL, "no status to fill (out is NULL)");
    char exp[LDPB_EXPERIMENT_NAME_MAX + 1];
    if (experiment_arg(c, experiment, exp) != LDPB_OK)
        return LDPB_EINVAL;

    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    sr.experiment = wire_experiment(exp);
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_request_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(&env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    if (err)
        return setf(c, err, "encoding the status request: %s", detail);

    /* A status grows with the arms, up to a whole frame: larger buffers than the handle keeps
     * for assignments and acks, only for this call. */
    reply_buf rb = {malloc(LDPB_FRAME_MAX + 1), LDPB_FRAME_MAX, malloc(LDPB_PLAINTEXT_MAX),
                    LDPB_PLAINTEXT_MAX};
    Ldpb__V1__Envelope *reply = NULL;
    if (!rb.frame || !rb.pt)
        err = setf(c, LDPB_ENOMEM, "out of memory for the status reply");
    else
        err = exchange(c, pt_len, env.request_id, &rb, &reply);
    if (!err)
        err = take_status(c, reply, out);
    /* A status that names an experiment must be of the one asked for ("default" for none). */
    if (!err && out->experiment[0] && strcmp(out->experiment, exp[0] ? exp : "default") != 0)
        err = setf(c, LDPB_EPROTO, "asked for the status of experiment '%s', got experiment '%s'",
                   exp[0] ? exp : "default", out->experiment);
    ldpb_envelope_free(reply);
    free(rb.frame);
    free(rb.pt);
    if (err)
        ldpb_status_clear(out);
    return err;
}

void ldpb_status_clear(ldpb_status *st)
{
    if (!st)
        return;
    free(st->arms);
    memset(st, 0, sizeof *st);
}

/* ---- one round trip per report ------------------------------------------------------------ */

/* The largest epsilon this client will take next, as ldpb_client_assign offers it; 0 if none. */
static double offer_of(ldpb_client *c)
{
    ldpb_ledger_opts lo = ldpb_ledger_get_opts(c->ledger);
    double offer = c->epsilon_cap;
    if (lo.per_report_cap < offer)
        offer = lo.per_report_cap;
    double left = ldpb_ledger_remaining(c->ledger);
    return left < offer ? left : offer;
}

/* An older aggregator: the same report, then an assignment, in two round trips. */
static ldpb_err report_then_assign(ldpb_client *c, const ldpb_assignment *a, double reward,
                                   const double *context, size_t n_context, ldpb_assignment *next,
                                   int *acked)
{
    ldpb_err err = ldpb_client_report(c, a, reward);
    if (err)
        return err;
    if (acked)
        *acked = 1;
    return ldpb_client_assign_in(c, experiment_of(a), context, n_context, next);
}

ldpb_err ldpb_client_report_and_assign(ldpb_client *c, const ldpb_assignment *a, double reward,
                                       const double *context, size_t n_context,
                                       ldpb_assignment *next, int *acked)
{
    if (next)
        memset(next, 0, sizeof *next);
    if (acked)
        *acked = 0;
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!a || !next)
        return setf(c, LDPB_EINVAL, "no assignment (a or next is NULL)");
    if (!isfinite(reward))
        return setf(c, LDPB_EINVAL, "the reward is not a finite number");
    if (n_context && !context)
        return setf(c, LDPB_EINVAL, "context is NULL with n_context %zu", n_context);
    if (n_context > LDPB_CLIENT_CONTEXT_MAX)
        return setf(c, LDPB_ERANGE, "context has %zu values, more than %u", n_context,
                    LDPB_CLIENT_CONTEXT_MAX);
    for (size_t i = 0; i < n_context; i++)
        if (!isfinite(context[i]))
            return setf(c, LDPB_EINVAL, "context[%zu] is not a finite number", i);
    if (c->no_raa)
        return report_then_assign(c, a, reward, context, n_context, next, acked);
    ldpb_err err = check_assignment(c, a, LDPB_EINVAL);
    if (err)
        return err;
    double value = 0.0;
    int is_bit = 0;
    if ((err = report_value(c, a, reward, &value, &is_bit)) != LDPB_OK)
        return err;
    rq_entry qe;
    entry_of(&qe, a, value, is_bit);
    sodium_memzero(&value, sizeof value);

    Ldpb__V1__Report rep;
    rq_report_of(&rep, &qe);
    Ldpb__V1__AssignRequest req = LDPB__V1__ASSIGN_REQUEST__INIT;
    req.n_context = n_context;
    req.context = (double *)context;
    /* Offered after the charge above, so the cap already counts this report. */
    double offer = offer_of(c);
    if (offer > 0.0) {
        req.has_max_epsilon = 1;
        req.max_epsilon = offer;
    }
    /* The next assignment in the same experiment. */
    req.experiment = wire_experiment(qe.experiment);
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    ra.report = &rep;
    ra.next = &req;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    env.report_and_assign = &ra;
    Ldpb__V1__Envelope *reply = NULL;
    char exp[LDPB_EXPERIMENT_NAME_MAX + 1];
    memcpy(exp, qe.experiment, sizeof exp); /* send_report_request wipes qe */
    err = send_report_request(c, &env, &qe, 1, &reply);
    sodium_memzero(&rep, sizeof rep);
    if (err == LDPB_ENOTSUP) {
        /* The value is in the ledger now: the fallback's report resends it, never a new draw. */
        c->no_raa = 1;
        return report_then_assign(c, a, reward, context, n_context, next, acked);
    }
    if (err)
        return err;
    const Ldpb__V1__AckAndAssignment *aa = reply->ack_and_assignment;
    if (reply->body_case != LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT)
        err = setf(c, LDPB_EPROTO, "the server answered a report_and_assign with %s",
                   body_name((int)reply->body_case));
    else if (aa->ack->assignment_id.len != a->id_len ||
             memcmp(aa->ack->assignment_id.data, a->id, a->id_len) != 0)
        err = setf(c, LDPB_EPROTO, "the server acknowledged another assignment");
    if (err) {
        ldpb_envelope_free(reply);
        return err;
    }
    if (acked)
        *acked = 1;
    if (aa->next_case == LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ERROR) {
        char text[LDPB_WIRE_STRING_MAX + 1];
        ldpb_err e = ldpb_wire_err_from_code(aa->error->code);
        sanitize(text, sizeof text, aa->error->reason, strlen(aa->error->reason));
        err = setf(c, e, "the report was acknowledged; no next assignment (%s): %s",
                   ldpb_errname(e), text);
    } else {
        Ldpb__V1__Envelope one = LDPB__V1__ENVELOPE__INIT;
        one.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
        one.assignment = aa->assignment;
        err = take_assignment(c, &one, exp, next);
    }
    ldpb_envelope_free(reply);
    return err;
}

/* ---- the report queue and batches ---------------------------------------------------------- */

size_t ldpb_client_queued(const ldpb_client *c)
{
    return c && c->queue ? c->queue->n : 0;
}

ldpb_err ldpb_client_queue_report(ldpb_client *c, const ldpb_assignment *a, double reward)
{
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!c->queue)
        return setf(c, LDPB_EINVAL,
                    "this handle has no report queue (opts.queue_path or queue_in_memory)");
    if (!a)
        return setf(c, LDPB_EINVAL, "no assignment (a is NULL)");
    if (!isfinite(reward))
        return setf(c, LDPB_EINVAL, "the reward is not a finite number");
    ldpb_err err = check_assignment(c, a, LDPB_EINVAL);
    if (err)
        return err;
    if (rq_has(c->queue, a->id, a->id_len))
        return LDPB_OK;
    if (c->queue->n >= LDPB_CLIENT_QUEUE_MAX)
        return setf(c, LDPB_EBUSY, "the report queue holds %u reports, its limit: flush first",
                    LDPB_CLIENT_QUEUE_MAX);
    double value = 0.0;
    int is_bit = 0;
    if ((err = report_value(c, a, reward, &value, &is_bit)) != LDPB_OK)
        return err;
    rq_entry qe;
    entry_of(&qe, a, value, is_bit);
    sodium_memzero(&value, sizeof value);
    err = rq_push(c->queue, &qe);
    sodium_memzero(&qe, sizeof qe);
    if (err)
        return setf(c, err, "out of memory for the report queue");
    if (rq_save(c->queue) != LDPB_OK) {
        sodium_memzero(&c->queue->e[--c->queue->n], sizeof(rq_entry));
        return setf(c, LDPB_EIO,
                    "cannot write the report queue %s; the spend stays in the ledger and "
                    "queueing this assignment again queues the same value",
                    c->queue->path);
    }
    return LDPB_OK;
}

/* A per-report code after which resending cannot succeed: the report leaves the queue. */
static int final_code(uint32_t code)
{
    ldpb_err e = ldpb_wire_err_from_code(code);
    return e != LDPB_EBUSY && e != LDPB_EIO && e != LDPB_ENOMEM;
}

/* Sends the first *kp queued reports as one batch, or as many of them as fit one frame (reports
 * naming long experiments are larger: wire.h), setting *kp to the number sent, and applies the
 * per-report results. */
static ldpb_err flush_one(ldpb_client *c, size_t *kp, const reply_buf *rb, ldpb_flush_stats *st,
                          size_t *removed)
{
    size_t k = *kp;
    *removed = 0;
    Ldpb__V1__Report *reps = calloc(k, sizeof *reps);
    Ldpb__V1__Report **ptrs = calloc(k, sizeof *ptrs);
    if (!reps || !ptrs) {
        free(reps);
        free(ptrs);
        return setf(c, LDPB_ENOMEM, "out of memory for a batch");
    }
    for (size_t i = 0; i < k; i++) {
        rq_report_of(&reps[i], &c->queue->e[i]);
        ptrs[i] = &reps[i];
    }
    Ldpb__V1__ReportBatch b = LDPB__V1__REPORT_BATCH__INIT;
    b.n_reports = k;
    b.reports = ptrs;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_request_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    env.report_batch = &b;
    while (k > 1 && ldpb__v1__envelope__get_packed_size(&env) > LDPB_PLAINTEXT_MAX)
        b.n_reports = --k; /* at most ~150 bytes a report: a few hundred always fit */
    *kp = k;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(&env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    sodium_memzero(reps, k * sizeof *reps);
    free(reps);
    free(ptrs);
    if (err)
        return setf(c, err, "encoding the batch: %s", detail);
    Ldpb__V1__Envelope *reply = NULL;
    err = exchange(c, pt_len, env.request_id, rb, &reply);
    sodium_memzero(c->req_pt, pt_len);
    if (err)
        return err;
    const Ldpb__V1__BatchAck *ba = reply->batch_ack;
    if (reply->body_case != LDPB__V1__ENVELOPE__BODY_BATCH_ACK)
        err = setf(c, LDPB_EPROTO, "the server answered a report_batch with %s",
                   body_name((int)reply->body_case));
    else if (ba->n_results != k)
        err = setf(c, LDPB_EPROTO, "%zu results for a batch of %zu reports", ba->n_results, k);
    for (size_t i = 0; !err && i < k; i++) {
        const rq_entry *e = &c->queue->e[i];
        if (ba->results[i]->assignment_id.len != e->id_len ||
            memcmp(ba->results[i]->assignment_id.data, e->id, e->id_len) != 0)
            err = setf(c, LDPB_EPROTO, "result %zu of the batch names another assignment", i);
    }
    if (err) {
        ldpb_envelope_free(reply);
        return err;
    }
    /* Keep what must be resent, in order; drop the rest. */
    size_t kept = 0;
    for (size_t i = 0; i < k; i++) {
        const Ldpb__V1__ReportResult *r = ba->results[i];
        uint32_t code = r->has_code ? r->code : 0;
        if (code == 0) {
            if (r->has_duplicate && r->duplicate)
                st->duplicates++;
            else
                st->acked++;
        } else if (final_code(code)) {
            st->refused++;
        } else {
            c->queue->e[kept++] = c->queue->e[i];
        }
    }
    ldpb_envelope_free(reply);
    rq *q = c->queue;
    memmove(q->e + kept, q->e + k, (q->n - k) * sizeof *q->e);
    *removed = k - kept;
    q->n -= *removed;
    sodium_memzero(q->e + q->n, *removed * sizeof *q->e);
    if (rq_save(q) != LDPB_OK)
        return setf(c, LDPB_EIO,
                    "cannot rewrite the report queue %s; delivered reports may be sent again "
                    "(they are then acknowledged as duplicates)",
                    q->path);
    return LDPB_OK;
}

/* flush_one for an aggregator that does not know report_batch: the first queued report alone, as
 * a Report carrying the queue's bytes (nothing is privatized again), with the same rules for its
 * answer. */
static ldpb_err flush_single(ldpb_client *c, const reply_buf *rb, ldpb_flush_stats *st,
                             size_t *removed)
{
    *removed = 0;
    rq *q = c->queue;
    const rq_entry *e = &q->e[0];
    Ldpb__V1__Report rep;
    rq_report_of(&rep, e);
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_request_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(&env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    sodium_memzero(&rep, sizeof rep);
    if (err)
        return setf(c, err, "encoding the report: %s", detail);
    Ldpb__V1__Envelope *reply = NULL;
    err = exchange(c, pt_len, env.request_id, rb, &reply);
    sodium_memzero(c->req_pt, pt_len);
    if (err) {
        /* The server's verdict on the report: final ones take it out of the queue; a request to
         * resend (busy, not stored) leaves it at the front. Anything else ends the call. */
        if (!c->server_refused)
            return err;
        if (err == LDPB_EBUSY || err == LDPB_EIO || err == LDPB_ENOMEM) /* as final_code */
            return LDPB_OK;
        st->refused++;
    } else if (reply->body_case != LDPB__V1__ENVELOPE__BODY_ACK) {
        err = setf(c, LDPB_EPROTO, "the server answered a report with %s",
                   body_name((int)reply->body_case));
    } else if (reply->ack->assignment_id.len != e->id_len ||
               memcmp(reply->ack->assignment_id.data, e->id, e->id_len) != 0) {
        err = setf(c, LDPB_EPROTO, "the server acknowledged another assignment");
    } else if (reply->ack->duplicate) {
        st->duplicates++;
    } else {
        st->acked++;
    }
    ldpb_envelope_free(reply);
    if (err && !c->server_refused)
        return err;
    memmove(q->e, q->e + 1, (q->n - 1) * sizeof *q->e);
    q->n--;
    sodium_memzero(q->e + q->n, sizeof *q->e);
    *removed = 1;
    if (rq_save(q) != LDPB_OK)
        return setf(c, LDPB_EIO,
                    "cannot rewrite the report queue %s; delivered reports may be sent again "
                    "(they are then acknowledged as duplicates)",
                    q->path);
    c->errmsg[0] = '\0';
    return LDPB_OK;
}

ldpb_err ldpb_client_flush(ldpb_client *c, size_t max_batch, ldpb_flush_stats *stats)
{
    ldpb_flush_stats st = {0, 0, 0, 0};
    if (stats)
        *stats = st;
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!c->queue)
        return setf(c, LDPB_EINVAL,
                    "this handle has no report queue (opts.queue_path or queue_in_memory)");
    if (max_batch == 0)
        max_batch = LDPB_CLIENT_BATCH_MAX;
    if (max_batch > LDPB_CLIENT_BATCH_MAX)
        return setf(c, LDPB_ERANGE, "batches of %zu reports, more than %u", max_batch,
                    LDPB_CLIENT_BATCH_MAX);
    reply_buf rb = {malloc(LDPB_FRAME_MAX + 1), LDPB_FRAME_MAX, malloc(LDPB_PLAINTEXT_MAX),
                    LDPB_PLAINTEXT_MAX};
    ldpb_err err = LDPB_OK;
    if (!rb.frame || !rb.pt)
        err = setf(c, LDPB_ENOMEM, "out of memory for the batch reply");
    /* A frame that leaves some reports queued (busy, or not stored) ends the call: they stay at
     * the front, for the next flush. */
    while (!err && c->queue->n > 0) {
        size_t k = c->queue->n < max_batch ? c->queue->n : max_batch;
        size_t removed = 0;
        if (c->no_batch) {
            k = 1;
            err = flush_single(c, &rb, &st, &removed);
        } else {
            err = flush_one(c, &k, &rb, &st, &removed);
            if (err == LDPB_ENOTSUP && c->server_refused) {
                /* An aggregator older than report batches (it answered before looking at the
                 * reports, so none was counted): the same reports go one by one, from now on. */
                c->no_batch = 1;
                c->errmsg[0] = '\0';
                err = LDPB_OK;
                continue;
            }
        }
        if (!err && removed < k)
            err = setf(c, LDPB_EBUSY,
                       "the aggregator asked to retry %zu reports later (busy, or it could not "
                       "store them)",
                       k - removed);
    }
    free(rb.frame);
    free(rb.pt);
    st.left = c->queue->n;
    if (stats)
        *stats = st;
    return err;
}

/* ---- operator commands --------------------------------------------------------------------- */

/* Experiments a LIST gathers over its pages at most: the aggregator's own limit
 * (experiments_max) is at most 100,000. */
#define EXPERIMENTS_LIST_MAX 100000u

typedef struct info_list {
    ldpb_experiment_info *v;
    size_t n, cap;
} info_list;

static ldpb_err info_push(ldpb_client *c, info_list *l, const Ldpb__V1__ExperimentInfo *m)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        ldpb_experiment_info *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return setf(c, LDPB_ENOMEM, "out of memory for %zu experiments", cap);
        l->v = v;
        l->cap = cap;
    }
    ldpb_experiment_info *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    memcpy(e->name, m->name, strlen(m->name)); /* a name: the decoder checked it */
    copy_text(e->policy, sizeof e->policy, m->policy);
    copy_text(e->mode, sizeof e->mode, m->mode);
    copy_text(e->mechanism, sizeof e->mechanism, m->mechanism);
    e->arms = m->arms;
    e->epsilon = m->has_epsilon ? m->epsilon : 0.0;
    e->delta = m->has_delta ? m->delta : 0.0;
    e->horizon = m->has_horizon ? m->horizon : 0;
    e->reports = m->reports;
    e->assignments = m->assignments;
    e->running = m->running != 0;
    return LDPB_OK;
}

/* One ExperimentCommand exchange; *reply is the ExperimentReply envelope on LDPB_OK. */
static ldpb_err exchange_command(ldpb_client *c, Ldpb__V1__ExperimentCommand *cmd,
                                 const reply_buf *rb, Ldpb__V1__Envelope **reply)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = c->next_request_id++;
    env.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
    env.experiment_command = cmd;
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t pt_len = 0;
    ldpb_err err = ldpb_envelope_encode(&env, c->req_pt, sizeof c->req_pt, &pt_len, detail);
    if (err)
        return setf(c, err, "encoding the experiment command: %s", detail);
    err = exchange(c, pt_len, env.request_id, rb, reply);
    if (err)
        return err;
    if ((*reply)->body_case != LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY) {
        err = setf(c, LDPB_EPROTO, "the server answered an experiment command with %s",
                   body_name((int)(*reply)->body_case));
        ldpb_envelope_free(*reply);
        *reply = NULL;
    }
    return err;
}

/* LIST, page by page: each page must continue after the last name of the one before, so a
 * server that repeats itself cannot keep the client asking. */
static ldpb_err list_experiments(ldpb_client *c, const reply_buf *rb, info_list *l)
{
    char after[LDPB_EXPERIMENT_NAME_MAX + 1] = "";
    for (;;) {
        Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
        cmd.op = LDPB__V1__EXPERIMENT_COMMAND__OP__LIST;
        cmd.after = after[0] ? after : NULL;
        Ldpb__V1__Envelope *reply = NULL;
        ldpb_err err = exchange_command(c, &cmd, rb, &reply);
        if (err)
            return err;
        const Ldpb__V1__ExperimentReply *r = reply->experiment_reply;
        for (size_t i = 0; !err && i < r->n_experiments; i++) {
            const char *name = r->experiments[i]->name;
            const char *prev = i ? r->experiments[i - 1]->name : after;
            if ((i || after[0]) && strcmp(prev, name) >= 0)
                err = setf(c, LDPB_EPROTO, "the experiment list is not in name order");
            else if (l->n >= EXPERIMENTS_LIST_MAX)
                err = setf(c, LDPB_EPROTO, "the experiment list goes past %u experiments",
                           EXPERIMENTS_LIST_MAX);
            else
                err = info_push(c, l, r->experiments[i]);
        }
        int more = !err && r->has_more && r->more;
        if (more && r->n_experiments == 0)
            err = setf(c, LDPB_EPROTO, "an empty page of the experiment list says more follow");
        if (more && !err) {
            const char *last = r->experiments[r->n_experiments - 1]->name;
            memset(after, 0, sizeof after);
            memcpy(after, last, strlen(last));
        }
        ldpb_envelope_free(reply);
        if (err || !more)
            return err;
    }
}

static ldpb_err check_command_args(ldpb_client *c, ldpb_experiment_op op, const char *name,
                                   const char *config)
{
    if (op != LDPB_EXPERIMENT_CREATE && op != LDPB_EXPERIMENT_LIST && op != LDPB_EXPERIMENT_SHOW &&
        op != LDPB_EXPERIMENT_STOP)
        return setf(c, LDPB_EINVAL, "unknown experiment operation %d", (int)op);
    if (op == LDPB_EXPERIMENT_LIST && name)
        return setf(c, LDPB_EINVAL, "list takes no experiment name");
    if (op != LDPB_EXPERIMENT_LIST) {
        if (!name)
            return setf(c, LDPB_EINVAL, "create, show and stop need an experiment name");
        size_t n = strnlen(name, LDPB_EXPERIMENT_NAME_MAX + 1);
        char exp[LDPB_EXPERIMENT_NAME_MAX + 1];
        ldpb_err err = experiment_arg(c, name, exp);
        if (err)
            return err;
        if (n == 0)
            return setf(c, LDPB_EINVAL, "the experiment name is empty");
    }
    if (op != LDPB_EXPERIMENT_CREATE && config)
        return setf(c, LDPB_EINVAL, "only create takes settings");
    if (op == LDPB_EXPERIMENT_CREATE) {
        if (!config)
            return setf(c, LDPB_EINVAL, "create needs the experiment's settings");
        size_t n = strnlen(config, LDPB_CLIENT_CONFIG_MAX + 1);
        if (n > LDPB_CLIENT_CONFIG_MAX)
            return setf(c, LDPB_ERANGE, "settings of more than %u bytes", LDPB_CLIENT_CONFIG_MAX);
        if (!ldpb_wire_utf8_valid(config, n))
            return setf(c, LDPB_EINVAL, "the settings are not UTF-8 text");
    }
    return LDPB_OK;
}

ldpb_err ldpb_client_experiment(ldpb_client *c, ldpb_experiment_op op, const char *name,
                                const char *config, ldpb_experiment_info **out, size_t *n)
{
    if (out)
        *out = NULL;
    if (n)
        *n = 0;
    if (!c)
        return LDPB_EINVAL;
    c->errmsg[0] = '\0';
    if (!out || !n)
        return setf(c, LDPB_EINVAL, "nowhere to put the experiments (out or n is NULL)");
    ldpb_err err = check_command_args(c, op, name, config);
    if (err)
        return err;
    /* A page of the list fills up to a whole frame. */
    reply_buf rb = {malloc(LDPB_FRAME_MAX + 1), LDPB_FRAME_MAX, malloc(LDPB_PLAINTEXT_MAX),
                    LDPB_PLAINTEXT_MAX};
    info_list l = {NULL, 0, 0};
    if (!rb.frame || !rb.pt) {
        err = setf(c, LDPB_ENOMEM, "out of memory for the reply");
    } else if (op == LDPB_EXPERIMENT_LIST) {
        err = list_experiments(c, &rb, &l);
    } else {
        Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
        cmd.op = (Ldpb__V1__ExperimentCommand__Op)op;
        cmd.name = (char *)name;
        cmd.config = (char *)config;
        Ldpb__V1__Envelope *reply = NULL;
        err = exchange_command(c, &cmd, &rb, &reply);
        if (!err) {
            const Ldpb__V1__ExperimentReply *r = reply->experiment_reply;
            if (r->n_experiments != 1 || strcmp(r->experiments[0]->name, name) != 0)
                err = setf(c, LDPB_EPROTO,
                           "the server answered with %zu experiments, not the one named",
                           r->n_experiments);
            else
                err = info_push(c, &l, r->experiments[0]);
        }
        ldpb_envelope_free(reply);
    }
    free(rb.frame);
    free(rb.pt);
    if (err) {
        free(l.v);
        return err;
    }
    *out = l.v;
    *n = l.n;
    return LDPB_OK;
}

void ldpb_experiment_info_free(ldpb_experiment_info *v)
{
    free(v);
}
