/* ldpb status: asks an ldpb-aggregator for its Status (docs/protocol.md section 6) through the
 * client library (ldpb_client_status) and prints the policy, the privacy model, the totals and a
 * per-arm table, or one JSON object with --json. tool_status_fetch is shared with `ldpb loadgen`,
 * which checks the aggregator's arm count and its report total with it. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "commands.h"
#include "ldpb/client.h"
#include "ldpb/keyfile.h"
#include "ldpb/wire.h"

#define PROG "ldpb status"

#define EXIT_RUNTIME 1 /* unreachable, refused, key file unreadable, output not writable */
#define EXIT_USAGE   2 /* bad arguments */

#define ECHO_MAX 60

#define TIMEOUT_DEFAULT_MS 2000u
#define TIMEOUT_MAX_MS     3600000u

_Static_assert(TOOL_STATUS_STRING_MAX == LDPB_WIRE_STRING_MAX &&
                   TOOL_STATUS_STRING_MAX == LDPB_CLIENT_STATUS_STRING_MAX,
               "string limit");
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

/* The handle's one-line message turned into advice for the user of the command. */
static ldpb_err explain(ldpb_err err, const char *url, uint32_t timeout_ms, const char *why,
                        char *msg, size_t cap)
{
    if (err == LDPB_ETIMEDOUT)
        return fail(msg, cap, err,
                    "no reply from %s within %" PRIu32
                    " ms (is ldpb-aggregator running and listening there?)",
                    url, timeout_ms);
    if (err == LDPB_ECRYPTO)
        return fail(msg, cap, err,
                    "%s could not authenticate the request (%s: %s): is the server key the "
                    "public key of this aggregator (its aggregator.pub)?",
                    url, ldpb_errname(err), why);
    if (err == LDPB_EAUTH)
        return fail(msg, cap, err,
                    "%s refused this client key (%s: %s): the aggregator keeps an allow-list; "
                    "give --client-key with a client.key whose public key is on it",
                    url, ldpb_errname(err), why);
    return fail(msg, cap, err, "%s: %s (%s)", url, why, ldpb_errname(err));
}

ldpb_err tool_status_fetch(const char *url, const uint8_t server_pk[TOOL_KEY_BYTES],
                           const uint8_t *client_sk, const char *experiment, uint32_t timeout_ms,
                           ldpb_status *out, char *msg, size_t cap)
{
    if (msg && cap)
        msg[0] = '\0';
    if (!url || !server_pk || !out)
        return fail(msg, cap, LDPB_EINVAL, "no URL, key or output");
    memset(out, 0, sizeof *out);
    /* One attempt: the timeout is the whole wait, connecting included. The in-memory ledger is
     * never charged: a status spends nothing. */
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = url;
    memcpy(o.server_public_key, server_pk, TOOL_KEY_BYTES);
    o.client_secret_key = client_sk;
    o.timeout_ms = timeout_ms;
    o.max_attempts = 1;
    ldpb_client *c = NULL;
    ldpb_err err = ldpb_client_new(&c, &o);
    if (err == LDPB_EINVAL || err == LDPB_ERANGE)
        return fail(msg, cap, LDPB_EINVAL, "cannot connect to '%s'", url);
    if (err == LDPB_ECRYPTO)
        return fail(msg, cap, err, "the server key is not a usable X25519 public key");
    if (err)
        return fail(msg, cap, err, "cannot create a client for %s (%s)", url, ldpb_errname(err));
    err = ldpb_client_status_in(c, experiment, out);
    if (err)
        err = explain(err, url, timeout_ms, ldpb_client_errmsg(c), msg, cap);
    ldpb_client_free(c);
    return err;
}

/* ---- the command ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb status --connect URL --server-key FILE [--client-key FILE] [--json]\n"
            "                   [--experiment NAME | --list] [--timeout-ms MS]\n"
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
            "  --client-key FILE  a client secret key file (client.key from `ldpb keygen`,\n"
            "                     mode 0600) to sign in with, for an aggregator that keeps an\n"
            "                     allow-list of client keys (default: a fresh ephemeral key)\n"
            "  --json             print one JSON object instead of the table (docs/cli.md)\n"
            "  --experiment NAME  the status of experiment NAME of an aggregator serving many\n"
            "                     (default: the experiment `default`, as before)\n"
            "  --list             list every experiment (running or stopped) with its policy,\n"
            "                     privacy settings and counts instead: an operator command, so\n"
            "                     --client-key must be a key on the aggregator's admin_list\n"
            "                     (the same as `ldpb experiment list --key FILE`)\n"
            "  --timeout-ms MS    give up after MS milliseconds, in [1, %u] (default %u)\n"
            "  -h, --help         print this help and exit\n"
            "\n"
            "Exit status: 0 success; 1 no reply in time, a refused request (a wrong server key,\n"
            "or a client key not on the allow-list), an unreadable key file, or output not\n"
            "writable; 2 bad arguments.\n",
            TIMEOUT_MAX_MS, TIMEOUT_DEFAULT_MS);
}

struct args {
    const char *connect;
    const char *server_key;
    const char *client_key;
    const char *timeout;
    const char *experiment;
    int json;
    int list;
};

static const tool_option options[] = {
    {"connect", TOOL_OPT_VALUE, offsetof(struct args, connect)},
    {"server-key", TOOL_OPT_VALUE, offsetof(struct args, server_key)},
    {"client-key", TOOL_OPT_VALUE, offsetof(struct args, client_key)},
    {"timeout-ms", TOOL_OPT_VALUE, offsetof(struct args, timeout)},
    {"json", TOOL_OPT_FLAG, offsetof(struct args, json)},
    {"experiment", TOOL_OPT_VALUE, offsetof(struct args, experiment)},
    {"list", TOOL_OPT_FLAG, offsetof(struct args, list)},
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
void tool_json_string(FILE *f, const char *s)
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

static void print_json(FILE *f, const char *url, const char *experiment, const ldpb_status *st)
{
    fputs("{\"url\":", f);
    tool_json_string(f, url);
    if (experiment) {
        fputs(",\"experiment\":", f);
        tool_json_string(f, experiment);
    }
    fputs(",\"policy\":", f);
    tool_json_string(f, st->policy);
    fputs(",\"model\":", f);
    tool_json_string(f, st->model);
    fprintf(f, ",\"reports\":%" PRIu64 ",\"assignments\":%" PRIu64 ",\"arms\":[", st->reports,
            st->assignments);
    for (uint32_t i = 0; i < st->n_arms; i++) {
        const ldpb_arm_status *a = &st->arms[i];
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

static void print_table(FILE *f, const char *url, const char *experiment, const ldpb_status *st)
{
    fprintf(f, "aggregator   %s\n", url);
    if (experiment)
        fprintf(f, "experiment   %s\n", experiment);
    fprintf(f, "policy       %s (model %s)\n", st->policy, st->model);
    fprintf(f, "reports      %" PRIu64 " counted\n", st->reports);
    fprintf(f, "assignments  %" PRIu64 " issued\n", st->assignments);
    fprintf(f, "\n%5s %12s %9s  %-21s %s\n", "arm", "pulls", "estimate", "interval", "active");
    for (uint32_t i = 0; i < st->n_arms; i++) {
        const ldpb_arm_status *a = &st->arms[i];
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

int tool_experiment_name_valid(const char *s)
{
    return ldpb_wire_experiment_valid(s, strlen(s)); /* the rule the aggregator applies */
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

int tool_load_client_key(const char *prog, const char *opt, const char *path,
                         uint8_t sk[TOOL_KEY_BYTES])
{
    char detail[LDPB_DETAIL_BYTES] = "";
    char e[ECHO_MAX + 4];
    ldpb_keypair kp;
    ldpb_err err = ldpb_keyfile_load_secret(path, &kp, detail);
    if (err == LDPB_OK)
        memcpy(sk, kp.sk, TOOL_KEY_BYTES);
    ldpb_keypair_wipe(&kp);
    if (err == LDPB_OK)
        return 0;
    if (err == LDPB_EINVAL)
        fprintf(stderr,
                "%s: %s %s is not a secret key file; give a client's secret key "
                "(client.key), not a public key\n",
                prog, opt, tool_echo(e, sizeof e, path));
    else if (err == LDPB_EIO)
        fprintf(stderr, "%s: %s %s cannot be read: %s\n", prog, opt, tool_echo(e, sizeof e, path),
                detail[0] ? detail : ldpb_strerror(err));
    else
        fprintf(stderr, "%s: %s %s is not usable (%s)%s%s\n", prog, opt,
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

    if (a.list) {
        if (a.experiment)
            return tool_usage_error(PROG, "--list and --experiment exclude each other", NULL);
        if (!a.client_key)
            return tool_usage_error(
                PROG,
                "--list needs --client-key FILE, an operator key on the aggregator's admin_list",
                NULL);
        /* The listing is an operator command: the same request, checks and output as
         * `ldpb experiment list`. */
        char *argv2[12];
        int argc2 = 0;
        argv2[argc2++] = (char *)"experiment";
        argv2[argc2++] = (char *)"list";
        argv2[argc2++] = (char *)"--connect";
        argv2[argc2++] = (char *)a.connect;
        argv2[argc2++] = (char *)"--server-key";
        argv2[argc2++] = (char *)a.server_key;
        argv2[argc2++] = (char *)"--key";
        argv2[argc2++] = (char *)a.client_key;
        if (a.json)
            argv2[argc2++] = (char *)"--json";
        if (a.timeout) {
            argv2[argc2++] = (char *)"--timeout-ms";
            argv2[argc2++] = (char *)a.timeout;
        }
        argv2[argc2] = NULL;
        return cmd_experiment(argc2, argv2);
    }
    uint8_t pk[TOOL_KEY_BYTES], sk[TOOL_KEY_BYTES];
    if (tool_load_server_key(PROG, a.server_key, pk))
        return EXIT_RUNTIME;
    if (a.experiment && !tool_experiment_name_valid(a.experiment))
        return tool_usage_error(
            PROG, "--experiment: a name is 1 to 64 bytes of a-z, 0-9, '.', '_' and '-', not",
            a.experiment);
    if (a.client_key && tool_load_client_key(PROG, "--client-key", a.client_key, sk))
        return EXIT_RUNTIME;
    ldpb_status st;
    char msg[2 * LDPB_WIRE_STRING_MAX];
    ldpb_err err = tool_status_fetch(a.connect, pk, a.client_key ? sk : NULL, a.experiment,
                                     (uint32_t)timeout, &st, msg, sizeof msg);
    sodium_memzero(sk, sizeof sk);
    if (err == LDPB_EINVAL) {
        fprintf(stderr, "%s: --connect: %s (expected tcp://HOST:PORT or ipc://PATH)\n", PROG, msg);
        return EXIT_USAGE;
    }
    if (err) {
        fprintf(stderr, "%s: %s\n", PROG, msg);
        return EXIT_RUNTIME;
    }
    if (a.json)
        print_json(stdout, a.connect, a.experiment, &st);
    else
        print_table(stdout, a.connect, a.experiment, &st);
    ldpb_status_clear(&st);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}
