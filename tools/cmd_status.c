/* ldpb status: asks an ldpb-aggregator for its Status (docs/protocol.md section 6) and prints the
 * policy, the privacy model, the totals and a per-arm table, or one JSON object with --json.
 * The client library has no status call, so the one sealed StatusRequest is built here from
 * wire.h and seal.h under a fresh ephemeral key; tool_status_fetch is shared with `ldpb loadgen`,
 * which checks the aggregator's arm count and its report total with it. */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <sodium.h>

#include "commands.h"
#include "ldpb/keyfile.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"

#define PROG "ldpb status"

#define EXIT_RUNTIME 1 /* unreachable, refused, key file unreadable, output not writable */
#define EXIT_USAGE   2 /* bad arguments */

#define ECHO_MAX 60

#define TIMEOUT_DEFAULT_MS 2000u
#define TIMEOUT_MAX_MS     3600000u

_Static_assert(TOOL_STATUS_STRING_MAX == LDPB_WIRE_STRING_MAX, "string limit");
_Static_assert(TOOL_KEY_BYTES == LDPB_KEY_BYTES, "key size");

/* ---- fetching a Status ---------------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static ldpb_err
fail(char *msg, size_t cap, ldpb_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (msg && cap)
        vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return err;
}

/* Text from the network made safe to print: control bytes become '?'. UTF-8 stays (the decoder
 * has checked it). */
static void copy_clean(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n > cap - 1)
        n = cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[n] = '\0';
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Sets a nanomsg timeout option to what is left until `deadline`; 0 if nothing is left. */
static int set_remaining(int sock, int opt, uint64_t deadline)
{
    uint64_t now = mono_ms();
    if (now >= deadline)
        return 0;
    int ms = deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
    return nn_setsockopt(sock, NN_SOL_SOCKET, opt, &ms, sizeof ms) == 0;
}

static ldpb_err take_status(const Ldpb__V1__Status *st, tool_status *out, char *msg, size_t cap)
{
    memset(out, 0, sizeof *out);
    copy_clean(out->policy, sizeof out->policy, st->policy);
    copy_clean(out->model, sizeof out->model, st->model);
    out->reports = st->reports;
    out->assignments = st->assignments;
    if (st->n_arms > 0) {
        out->arms = calloc(st->n_arms, sizeof *out->arms);
        if (!out->arms)
            return fail(msg, cap, LDPB_ENOMEM, "out of memory for %zu arms", st->n_arms);
    }
    out->n_arms = (uint32_t)st->n_arms;
    for (size_t i = 0; i < st->n_arms; i++) {
        const Ldpb__V1__ArmStatus *m = st->arms[i];
        tool_arm_status *a = &out->arms[i];
        a->arm = m->arm;
        a->pulls = m->pulls;
        a->has_estimate = m->has_estimate;
        a->estimate = m->estimate;
        a->has_ci = m->has_ci_low && m->has_ci_high;
        a->ci_low = m->ci_low;
        a->ci_high = m->ci_high;
        a->has_active = m->has_active;
        a->active = m->active != 0;
    }
    return LDPB_OK;
}

/* Opens and judges the reply frame `buf` (`n` bytes) to request `request_id`. */
static ldpb_err judge(const uint8_t *buf, size_t n, const ldpb_seal_key *key,
                      const uint8_t client_pk[LDPB_KEY_BYTES], uint64_t request_id, const char *url,
                      tool_status *out, char *msg, size_t cap)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    char text[LDPB_WIRE_STRING_MAX + 1];
    ldpb_frame f;
    ldpb_err err = ldpb_frame_parse(buf, n, &f, detail);
    if (err)
        return fail(msg, cap, err, "%s answered with a malformed frame: %s", url, detail);
    if (f.kind == LDPB_FRAME_PLAIN_ERROR) {
        err = ldpb_wire_err_from_code(f.error_code);
        size_t len = f.reason_len < sizeof text - 1 ? f.reason_len : sizeof text - 1;
        memcpy(text, f.reason, len);
        text[len] = '\0';
        copy_clean(text, sizeof text, text);
        if (err == LDPB_ECRYPTO)
            return fail(msg, cap, err,
                        "%s could not authenticate the request (%s: %s): is the server key the "
                        "public key of this aggregator (its aggregator.pub)?",
                        url, ldpb_errname(err), text);
        return fail(msg, cap, err, "%s refused the request (%s, unauthenticated): %s", url,
                    ldpb_errname(err), text);
    }
    uint8_t *pt = malloc(LDPB_PLAINTEXT_MAX);
    if (!pt)
        return fail(msg, cap, LDPB_ENOMEM, "out of memory");
    size_t pt_len = 0;
    err = ldpb_seal_open(&f, key, LDPB_DIR_TO_CLIENT, client_pk, pt, LDPB_PLAINTEXT_MAX, &pt_len,
                         detail);
    if (err) {
        free(pt);
        return fail(msg, cap, err,
                    "the reply from %s failed authentication (is the server key this "
                    "aggregator's?): %s",
                    url, detail);
    }
    Ldpb__V1__Envelope *env = NULL;
    err = ldpb_envelope_decode(pt, pt_len, &env, detail);
    free(pt);
    if (err)
        return fail(msg, cap, err, "%s sent a malformed reply: %s", url, detail);
    if (env->has_request_id && env->request_id != request_id) {
        err = fail(msg, cap, LDPB_EPROTO, "%s answered another request (id %" PRIu64 ")", url,
                   env->request_id);
    } else if (env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        err = ldpb_wire_err_from_code(env->error->code);
        copy_clean(text, sizeof text, env->error->reason);
        err = fail(msg, cap, err, "%s refused the status request (%s): %s", url, ldpb_errname(err),
                   text);
    } else if (env->body_case != LDPB__V1__ENVELOPE__BODY_STATUS) {
        err = fail(msg, cap, LDPB_EPROTO, "%s answered a status request with another message", url);
    } else {
        err = take_status(env->status, out, msg, cap);
    }
    ldpb_envelope_free(env);
    return err;
}

ldpb_err tool_status_fetch(const char *url, const uint8_t server_pk[TOOL_KEY_BYTES],
                           uint32_t timeout_ms, tool_status *out, char *msg, size_t cap)
{
    if (msg && cap)
        msg[0] = '\0';
    if (!url || !server_pk || !out)
        return fail(msg, cap, LDPB_EINVAL, "no URL, key or output");
    memset(out, 0, sizeof *out);
    uint64_t deadline = mono_ms() + timeout_ms;
    ldpb_keypair kp;
    ldpb_seal_key key;
    ldpb_rng *rng = NULL;
    void *reply = NULL;
    int sock = -1;
    ldpb_err err = ldpb_keypair_generate(&kp);
    if (err) {
        err = fail(msg, cap, err, "cannot generate a client key (%s)", ldpb_errname(err));
        goto done;
    }
    err = ldpb_seal_key_derive(&key, server_pk, kp.sk);
    if (err) {
        err = fail(msg, cap, err, "the server key is not a usable X25519 public key");
        goto done;
    }
    if ((err = ldpb_rng_new_system(&rng)) != LDPB_OK) {
        err = fail(msg, cap, err, "cannot create the random generator (%s)", ldpb_errname(err));
        goto done;
    }

    /* One request, never resent by nanomsg (the aggregator would refuse the same bytes as a
     * replay); it waits for a connection until the deadline. */
    int resend = INT_MAX, maxsize = (int)LDPB_FRAME_MAX;
    sock = nn_socket(AF_SP, NN_REQ);
    if (sock < 0 || nn_setsockopt(sock, NN_REQ, NN_REQ_RESEND_IVL, &resend, sizeof resend) < 0 ||
        nn_setsockopt(sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &maxsize, sizeof maxsize) < 0) {
        err = fail(msg, cap, LDPB_ETRANSPORT, "nanomsg socket: %s", nn_strerror(nn_errno()));
        goto done;
    }
    if (nn_connect(sock, url) < 0) {
        int e = nn_errno();
        err = e == EINVAL || e == EPROTONOSUPPORT || e == ENAMETOOLONG || e == ENODEV
                  ? LDPB_EINVAL
                  : LDPB_ETRANSPORT;
        err = fail(msg, cap, err, "cannot connect to '%s': %s", url, nn_strerror(e));
        goto done;
    }

    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = ldpb_rng_u64(rng) >> 1;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    uint8_t pt[64], frame[64 + LDPB_FRAME_SEALED_OVERHEAD], nonce[LDPB_NONCE_BYTES];
    size_t pt_len = 0, len = 0;
    char detail[LDPB_DETAIL_BYTES] = "";
    if ((err = ldpb_envelope_encode(&env, pt, sizeof pt, &pt_len, detail)) != LDPB_OK) {
        err = fail(msg, cap, err, "encoding the status request: %s", detail);
        goto done;
    }
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, rng);
    err = ldpb_seal_frame(frame, sizeof frame, &len, kp.pk, &key, nonce, pt, pt_len);
    if (err) {
        err = fail(msg, cap, err, "sealing the status request failed (%s)", ldpb_errname(err));
        goto done;
    }

    int n = -1;
    for (;;) {
        if (!set_remaining(sock, NN_SNDTIMEO, deadline))
            break;
        if (nn_send(sock, frame, len, 0) >= 0) {
            n = 0;
            break;
        }
        if (nn_errno() != EINTR && nn_errno() != ETIMEDOUT && nn_errno() != EAGAIN) {
            err =
                fail(msg, cap, LDPB_ETRANSPORT, "sending to %s: %s", url, nn_strerror(nn_errno()));
            goto done;
        }
    }
    while (n == 0) {
        if (!set_remaining(sock, NN_RCVTIMEO, deadline)) {
            n = -1;
            break;
        }
        int rc = nn_recv(sock, &reply, NN_MSG, 0);
        if (rc >= 0) {
            n = rc;
            break;
        }
        if (nn_errno() != EINTR && nn_errno() != ETIMEDOUT && nn_errno() != EAGAIN) {
            err = fail(msg, cap, LDPB_ETRANSPORT, "receiving from %s: %s", url,
                       nn_strerror(nn_errno()));
            goto done;
        }
    }
    if (n <= 0) {
        err = fail(msg, cap, LDPB_ETIMEDOUT,
                   "no reply from %s within %" PRIu32
                   " ms (is ldpb-aggregator running and listening there?)",
                   url, timeout_ms);
        goto done;
    }
    err = judge(reply, (size_t)n, &key, kp.pk, env.request_id, url, out, msg, cap);

done:
    if (reply)
        nn_freemsg(reply);
    if (sock >= 0)
        nn_close(sock);
    ldpb_rng_free(rng);
    ldpb_keypair_wipe(&kp);
    ldpb_seal_key_wipe(&key);
    if (err)
        tool_status_fini(out);
    return err;
}

void tool_status_fini(tool_status *st)
{
    if (!st)
        return;
    free(st->arms);
    memset(st, 0, sizeof *st);
}

/* ---- the command ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb status --connect URL --server-key FILE [--json] [--timeout-ms MS]\n"
            "\n"
            "Asks an ldpb-aggregator for its status with one sealed request and prints the\n"
            "policy, the privacy model, the counted reports and issued assignments, and per arm:\n"
            "the pulls (counted reports), the policy's estimate of the mean reward (de-biased,\n"
            "on the [0, 1] scale), its confidence interval and whether the arm is still active.\n"
            "\n"
            "options:\n"
            "  --connect URL      the aggregator's endpoint, tcp://HOST:PORT or ipc://PATH\n"
            "                     (required)\n"
            "  --server-key FILE  the aggregator's public key file, aggregator.pub from\n"
            "                     `ldpb keygen` (required)\n"
            "  --json             print one JSON object instead of the table (docs/cli.md)\n"
            "  --timeout-ms MS    give up after MS milliseconds, in [1, %u] (default %u)\n"
            "  -h, --help         print this help and exit\n"
            "\n"
            "Exit status: 0 success; 1 no reply in time, a refused request (a wrong server key\n"
            "is refused), an unreadable key file, or output not writable; 2 bad arguments.\n",
            TIMEOUT_MAX_MS, TIMEOUT_DEFAULT_MS);
}

struct args {
    const char *connect;
    const char *server_key;
    const char *timeout;
    int json;
};

static const tool_option options[] = {
    {"connect", TOOL_OPT_VALUE, offsetof(struct args, connect)},
    {"server-key", TOOL_OPT_VALUE, offsetof(struct args, server_key)},
    {"timeout-ms", TOOL_OPT_VALUE, offsetof(struct args, timeout)},
    {"json", TOOL_OPT_FLAG, offsetof(struct args, json)},
};

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const tool_parse_spec spec = {PROG, options, sizeof options / sizeof options[0], usage,
                                         0};
    memset(a, 0, sizeof *a);
    return tool_parse_options(&spec, argc, argv, a);
}

/* A whole number in [lo, hi]; 0 on success, else prints the problem and returns EXIT_USAGE. */
static int parse_uint(const char *prog, const char *opt, const char *text, uint64_t lo, uint64_t hi,
                      uint64_t *out)
{
    char e[ECHO_MAX + 4];
    size_t n = strlen(text);
    if (n == 0 || strspn(text, "0123456789") != n) {
        fprintf(stderr, "%s: %s '%s' is not a whole number\n", prog, opt,
                tool_echo(e, sizeof e, text));
        return EXIT_USAGE;
    }
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "%s: %s %s outside [%" PRIu64 ", %" PRIu64 "]\n", prog, opt,
                tool_echo(e, sizeof e, text), lo, hi);
        return EXIT_USAGE;
    }
    *out = (uint64_t)v;
    return 0;
}

/* A JSON string: quotes, backslashes and control bytes escaped (the text is valid UTF-8). */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, int has, double v)
{
    if (has && isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void print_json(FILE *f, const char *url, const tool_status *st)
{
    fputs("{\"url\":", f);
    json_string(f, url);
    fputs(",\"policy\":", f);
    json_string(f, st->policy);
    fputs(",\"model\":", f);
    json_string(f, st->model);
    fprintf(f, ",\"reports\":%" PRIu64 ",\"assignments\":%" PRIu64 ",\"arms\":[", st->reports,
            st->assignments);
    for (uint32_t i = 0; i < st->n_arms; i++) {
        const tool_arm_status *a = &st->arms[i];
        fprintf(f, "%s{\"arm\":%" PRIu32 ",\"pulls\":%" PRIu64 ",\"estimate\":", i ? "," : "",
                a->arm, a->pulls);
        json_number(f, a->has_estimate, a->estimate);
        fputs(",\"ci_low\":", f);
        json_number(f, a->has_ci, a->ci_low);
        fputs(",\"ci_high\":", f);
        json_number(f, a->has_ci, a->ci_high);
        fputs(",\"active\":", f);
        fputs(!a->has_active ? "null" : a->active ? "true" : "false", f);
        fputc('}', f);
    }
    fputs("]}\n", f);
}

static void print_table(FILE *f, const char *url, const tool_status *st)
{
    fprintf(f, "aggregator   %s\n", url);
    fprintf(f, "policy       %s (model %s)\n", st->policy, st->model);
    fprintf(f, "reports      %" PRIu64 " counted\n", st->reports);
    fprintf(f, "assignments  %" PRIu64 " issued\n", st->assignments);
    fprintf(f, "\n%5s %12s %9s  %-21s %s\n", "arm", "pulls", "estimate", "interval", "active");
    for (uint32_t i = 0; i < st->n_arms; i++) {
        const tool_arm_status *a = &st->arms[i];
        char est[32] = "-", ci[48] = "-";
        if (a->has_estimate && isfinite(a->estimate))
            snprintf(est, sizeof est, "%.4f", a->estimate);
        if (a->has_ci && isfinite(a->ci_low) && isfinite(a->ci_high))
            snprintf(ci, sizeof ci, "[%.4f, %.4f]", a->ci_low, a->ci_high);
        fprintf(f, "%5" PRIu32 " %12" PRIu64 " %9s  %-21s %s\n", a->arm, a->pulls, est, ci,
                !a->has_active ? "-"
                : a->active    ? "yes"
                               : "no");
    }
}

int tool_load_server_key(const char *prog, const char *path, uint8_t pk[TOOL_KEY_BYTES])
{
    char detail[LDPB_DETAIL_BYTES] = "";
    char e[ECHO_MAX + 4];
    ldpb_err err = ldpb_keyfile_load_public(path, pk, detail);
    if (err == LDPB_OK)
        return 0;
    if (err == LDPB_EINVAL)
        fprintf(stderr,
                "%s: --server-key %s is not a public key file; give the aggregator's public key "
                "(aggregator.pub), never its secret key\n",
                prog, tool_echo(e, sizeof e, path));
    else if (err == LDPB_EIO)
        fprintf(stderr, "%s: --server-key %s cannot be read: %s\n", prog,
                tool_echo(e, sizeof e, path), detail[0] ? detail : ldpb_strerror(err));
    else
        fprintf(stderr, "%s: --server-key %s is not a key file (%s)%s%s\n", prog,
                tool_echo(e, sizeof e, path), ldpb_errname(err), detail[0] ? ": " : "", detail);
    return EXIT_RUNTIME;
}

int cmd_status(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.connect)
        return tool_usage_error(PROG, "missing --connect URL (the aggregator's endpoint)", NULL);
    if (!a.server_key)
        return tool_usage_error(PROG, "missing --server-key FILE (the aggregator's aggregator.pub)",
                                NULL);
    if (a.connect[0] == '\0' || strlen(a.connect) > TOOL_URL_MAX)
        return tool_usage_error(PROG, "--connect must be a nanomsg URL of 1 to 127 bytes, not",
                                a.connect);
    uint64_t timeout = TIMEOUT_DEFAULT_MS;
    if (a.timeout && parse_uint(PROG, "--timeout-ms", a.timeout, 1, TIMEOUT_MAX_MS, &timeout))
        return EXIT_USAGE;

    uint8_t pk[TOOL_KEY_BYTES];
    if (tool_load_server_key(PROG, a.server_key, pk))
        return EXIT_RUNTIME;
    tool_status st;
    char msg[2 * LDPB_WIRE_STRING_MAX];
    ldpb_err err = tool_status_fetch(a.connect, pk, (uint32_t)timeout, &st, msg, sizeof msg);
    if (err == LDPB_EINVAL) {
        fprintf(stderr, "%s: --connect: %s (expected tcp://HOST:PORT or ipc://PATH)\n", PROG, msg);
        return EXIT_USAGE;
    }
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, msg);
        return EXIT_RUNTIME;
    }
    if (a.json)
        print_json(stdout, a.connect, &st);
    else
        print_table(stdout, a.connect, &st);
    tool_status_fini(&st);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}
