/* ldpb experiment: the operator's commands to an ldpb-aggregator serving many experiments
 * (create, list, show, stop), sent through the client library (ldpb_client_experiment) under the
 * operator's secret key, which must be on the aggregator's admin list. Prints a table, or JSON
 * with --json. The aggregator validates the settings; a refusal prints its reason and exits 1. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "commands.h"
#include "ldpb/client.h"
#include "ldpb/wire.h"

#define PROG "ldpb experiment"

#define EXIT_RUNTIME 1 /* unreachable, refused by the aggregator, unreadable file or key */
#define EXIT_USAGE   2

#define TIMEOUT_DEFAULT_MS 5000u
#define TIMEOUT_MAX_MS     3600000u
/* The settings text of a CREATE: at most LDPB_CLIENT_CONFIG_MAX (4096) bytes. */
#define SETTINGS_MAX LDPB_CLIENT_CONFIG_MAX
#define SETS_MAX     64

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: ldpb experiment create NAME [--set KEY=VALUE ...] [--file FILE] OPTIONS\n"
        "       ldpb experiment list OPTIONS\n"
        "       ldpb experiment show NAME OPTIONS\n"
        "       ldpb experiment stop NAME OPTIONS\n"
        "OPTIONS: --connect URL --server-key FILE --key FILE [--json] [--timeout-ms MS]\n"
        "\n"
        "The operator's commands to an ldpb-aggregator that serves many experiments. Each is one\n"
        "sealed request signed with the operator's secret key (--key), whose public key must be\n"
        "on the aggregator's admin list (its `admin_list` option); any other key is refused.\n"
        "\n"
        "  create NAME   start experiment NAME (1 to 64 bytes of a-z, 0-9, '.', '_', '-') with\n"
        "                the settings of --file and --set: the per-experiment keys of an\n"
        "                `[experiment NAME]` section of the aggregator's configuration (policy,\n"
        "                mode, arms, mechanism, epsilon, ...; missing keys take the built-in\n"
        "                defaults). Durable before the reply. Creating a stopped experiment\n"
        "                again with the same settings resumes it; other settings are refused.\n"
        "  list          every experiment, running or stopped, one row each\n"
        "  show NAME     one experiment\n"
        "  stop NAME     stop serving NAME: its devices get LDPB_ENOEXPERIMENT; its state is\n"
        "                kept (exportable with ldpb-aggregator --export-csv --experiment NAME)\n"
        "\n"
        "options:\n"
        "  --connect URL      the aggregator's endpoint, tcp://HOST:PORT or ipc://PATH (required)\n"
        "  --server-key FILE  the aggregator's public key file, aggregator.pub (required)\n"
        "  --key FILE         the operator's secret key file (a client.key from `ldpb keygen`,\n"
        "                     mode 0600) whose public key is on the admin list (required)\n"
        "  --set KEY=VALUE    create: one setting; repeat for more (at most %d)\n"
        "  --file FILE        create: settings as `key = value` lines ('#' and ';' comments)\n"
        "  --json             print JSON instead of the table (docs/cli.md)\n"
        "  --timeout-ms MS    give up after MS milliseconds, in [1, %u] (default %u)\n"
        "  -h, --help         print this help and exit\n"
        "\n"
        "Exit status: 0 success; 1 refused by the aggregator (its reason is printed), no reply\n"
        "in time, an unreadable key or settings file, or output not writable; 2 bad arguments.\n",
        SETS_MAX, TIMEOUT_MAX_MS, TIMEOUT_DEFAULT_MS);
}

struct args {
    const char *connect, *server_key, *key, *file, *timeout;
    int json;
};

static const tool_option options[] = {
    {"connect", TOOL_OPT_VALUE, offsetof(struct args, connect)},
    {"server-key", TOOL_OPT_VALUE, offsetof(struct args, server_key)},
    {"key", TOOL_OPT_VALUE, offsetof(struct args, key)},
    {"file", TOOL_OPT_VALUE, offsetof(struct args, file)},
    {"timeout-ms", TOOL_OPT_VALUE, offsetof(struct args, timeout)},
    {"json", TOOL_OPT_FLAG, offsetof(struct args, json)},
};

static const struct {
    const char *word;
    ldpb_experiment_op op;
    int takes_name;
} ops[] = {
    {"create", LDPB_EXPERIMENT_CREATE, 1},
    {"list", LDPB_EXPERIMENT_LIST, 0},
    {"show", LDPB_EXPERIMENT_SHOW, 1},
    {"stop", LDPB_EXPERIMENT_STOP, 1},
};

struct cmdline {
    struct args a;
    size_t op;        /* index into ops */
    const char *name; /* NULL for list */
    const char *sets[SETS_MAX];
    size_t n_sets;
};

/* KEY=VALUE: a key of [a-z0-9_] and a value of printable bytes, neither empty. */
static int set_valid(const char *s)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || eq[1] == '\0')
        return 0;
    for (const char *p = s; p < eq; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    for (const char *p = eq + 1; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int is_help(const char *s)
{
    return strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0;
}

/* The operation word, NAME, and the repeated --set are taken out here; the rest goes through
 * the shared option parser. Returns -1 to go on, else an exit status. */
static int parse_cmdline(int argc, char **argv, struct cmdline *cl, char **rest)
{
    static const tool_parse_spec spec = {PROG, options, sizeof options / sizeof options[0], usage,
                                         0};
    memset(cl, 0, sizeof *cl);
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i])) {
            usage(stdout);
            return fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_RUNTIME;
        }
    if (argc < 2)
        return tool_usage_error(PROG, "missing the operation: create, list, show or stop", NULL);
    size_t op = sizeof ops / sizeof ops[0];
    for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++)
        if (strcmp(argv[1], ops[j].word) == 0)
            op = j;
    if (op == sizeof ops / sizeof ops[0])
        return tool_usage_error(PROG, "unknown operation (create, list, show or stop):", argv[1]);
    cl->op = op;
    int i = 2;
    if (ops[op].takes_name) {
        if (i >= argc || strncmp(argv[i], "--", 2) == 0) {
            fprintf(stderr, "%s: %s needs the experiment's NAME\n", PROG, ops[op].word);
            return EXIT_USAGE;
        }
        if (!tool_experiment_name_valid(argv[i]))
            return tool_usage_error(
                PROG, "an experiment name is 1 to 64 bytes of a-z, 0-9, '.', '_' and '-', not",
                argv[i]);
        cl->name = argv[i++];
    }
    int n_rest = 0;
    rest[n_rest++] = argv[0];
    for (; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--set") == 0) {
            if (i + 1 >= argc)
                return tool_usage_error(PROG, "missing value for option", argv[i]);
            v = argv[++i];
        } else if (strncmp(argv[i], "--set=", 6) == 0) {
            v = argv[i] + 6;
        } else {
            rest[n_rest++] = argv[i];
            continue;
        }
        if (ops[op].op != LDPB_EXPERIMENT_CREATE)
            return tool_usage_error(PROG, "--set is for create only, not", ops[op].word);
        if (!set_valid(v))
            return tool_usage_error(PROG, "--set takes KEY=VALUE (a key of a-z, 0-9, '_'), not", v);
        if (cl->n_sets == SETS_MAX) {
            fprintf(stderr, "%s: more than %d --set options\n", PROG, SETS_MAX);
            return EXIT_USAGE;
        }
        cl->sets[cl->n_sets++] = v;
    }
    return tool_parse_options(&spec, n_rest, rest, &cl->a);
}

/* The settings text of a create: the file's lines, then one "KEY = VALUE" line per --set.
 * Returns a malloc'd text, or NULL after printing the problem (*rc set). */
static char *settings_text(const struct cmdline *cl, int *rc)
{
    char e[TOOL_ECHO_MAX + 4];
    char *buf = calloc(1, SETTINGS_MAX + 2);
    size_t len = 0;
    *rc = EXIT_RUNTIME;
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return NULL;
    }
    if (cl->a.file) {
        FILE *f = fopen(cl->a.file, "rb");
        if (!f) {
            fprintf(stderr, "%s: --file %s cannot be read: %s\n", PROG,
                    tool_echo(e, sizeof e, cl->a.file), strerror(errno));
            free(buf);
            return NULL;
        }
        len = fread(buf, 1, SETTINGS_MAX + 1, f);
        int bad = ferror(f);
        fclose(f);
        if (bad || len > SETTINGS_MAX || memchr(buf, '\0', len)) {
            fprintf(stderr, "%s: --file %s %s\n", PROG, tool_echo(e, sizeof e, cl->a.file),
                    bad ? "cannot be read" : "is not a settings text of at most 4096 bytes");
            *rc = bad ? EXIT_RUNTIME : EXIT_USAGE;
            free(buf);
            return NULL;
        }
        if (len > 0 && buf[len - 1] != '\n')
            buf[len++] = '\n';
    }
    for (size_t i = 0; i < cl->n_sets; i++) {
        const char *eq = strchr(cl->sets[i], '=');
        int n = snprintf(buf + len, SETTINGS_MAX + 1 - len, "%.*s = %s\n", (int)(eq - cl->sets[i]),
                         cl->sets[i], eq + 1);
        if (n < 0 || (size_t)n >= SETTINGS_MAX + 1 - len) {
            fprintf(stderr, "%s: the settings are longer than %u bytes\n", PROG, SETTINGS_MAX);
            *rc = EXIT_USAGE;
            free(buf);
            return NULL;
        }
        len += (size_t)n;
    }
    return buf;
}

/* ---- output ---------------------------------------------------------------------------------- */

static void json_info(FILE *f, const ldpb_experiment_info *x)
{
    fputs("{\"name\":", f);
    tool_json_string(f, x->name);
    fputs(",\"policy\":", f);
    tool_json_string(f, x->policy);
    fputs(",\"mode\":", f);
    tool_json_string(f, x->mode);
    fprintf(f, ",\"arms\":%" PRIu32 ",\"mechanism\":", x->arms);
    tool_json_string(f, x->mechanism);
    fputs(",\"epsilon\":", f);
    if (isfinite(x->epsilon))
        fprintf(f, "%.17g", x->epsilon);
    else
        fputs("null", f);
    fputs(",\"delta\":", f);
    if (isfinite(x->delta))
        fprintf(f, "%.17g", x->delta);
    else
        fputs("null", f);
    fprintf(f,
            ",\"horizon\":%" PRIu64 ",\"reports\":%" PRIu64 ",\"assignments\":%" PRIu64
            ",\"running\":%s}",
            x->horizon, x->reports, x->assignments, x->running ? "true" : "false");
}

/* A number for the table: "-" where the experiment has none (a non-private mode's epsilon). */
static const char *num_text(char *buf, size_t cap, double v)
{
    if (isfinite(v) && v > 0.0)
        snprintf(buf, cap, "%g", v);
    else
        snprintf(buf, cap, "-");
    return buf;
}

static void table_header(FILE *f)
{
    fprintf(f, "%-24s %-8s %-20s %-10s %4s %-12s %8s %8s %10s %12s %12s\n", "experiment", "state",
            "policy", "mode", "arms", "mechanism", "epsilon", "delta", "horizon", "reports",
            "assignments");
}

static void table_row(FILE *f, const ldpb_experiment_info *x)
{
    char eps[32], delta[32], hz[32];
    if (x->horizon)
        snprintf(hz, sizeof hz, "%" PRIu64, x->horizon);
    else
        snprintf(hz, sizeof hz, "-");
    fprintf(f,
            "%-24s %-8s %-20s %-10s %4" PRIu32 " %-12s %8s %8s %10s %12" PRIu64 " %12" PRIu64 "\n",
            x->name, x->running ? "running" : "stopped", x->policy, x->mode, x->arms,
            x->mechanism[0] ? x->mechanism : "-", num_text(eps, sizeof eps, x->epsilon),
            num_text(delta, sizeof delta, x->delta), hz, x->reports, x->assignments);
}

static void print_result(FILE *f, const struct cmdline *cl, const ldpb_experiment_info *v, size_t n)
{
    ldpb_experiment_op op = ops[cl->op].op;
    if (cl->a.json) {
        if (op == LDPB_EXPERIMENT_LIST) {
            fputc('[', f);
            for (size_t i = 0; i < n; i++) {
                if (i)
                    fputc(',', f);
                json_info(f, &v[i]);
            }
            fputs("]\n", f);
        } else if (n > 0) {
            json_info(f, &v[0]);
            fputc('\n', f);
        }
        return;
    }
    if (op == LDPB_EXPERIMENT_CREATE)
        fprintf(f, "created experiment %s\n\n", cl->name);
    else if (op == LDPB_EXPERIMENT_STOP)
        fprintf(f, "stopped experiment %s (its state is kept)\n\n", cl->name);
    table_header(f);
    for (size_t i = 0; i < n; i++)
        table_row(f, &v[i]);
}

/* ---- the command ----------------------------------------------------------------------------- */

/* Sends the command; prints the problem and returns an exit status, or 0 with the reply's
 * experiments in out[0 .. n). */
static int send_command(const struct cmdline *cl, const uint8_t pk[TOOL_KEY_BYTES],
                        const uint8_t sk[TOOL_KEY_BYTES], uint32_t timeout_ms, const char *settings,
                        ldpb_experiment_info **out, size_t *n)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = cl->a.connect;
    memcpy(o.server_public_key, pk, TOOL_KEY_BYTES);
    o.client_secret_key = sk;
    o.timeout_ms = timeout_ms;
    o.max_attempts = 1; /* the timeout is the whole wait */
    ldpb_client *c = NULL;
    ldpb_err err = ldpb_client_new(&c, &o);
    if (err == LDPB_EINVAL || err == LDPB_ERANGE) {
        fprintf(stderr,
                "%s: --connect: cannot connect to '%s' (expected tcp://HOST:PORT or "
                "ipc://PATH)\n",
                PROG, cl->a.connect);
        return EXIT_USAGE;
    }
    if (err) {
        fprintf(stderr, "%s: cannot create a client for %s (%s)\n", PROG, cl->a.connect,
                ldpb_errname(err));
        return EXIT_RUNTIME;
    }
    err = ldpb_client_experiment(c, ops[cl->op].op, cl->name, settings, out, n);
    if (err == LDPB_ETIMEDOUT)
        fprintf(stderr,
                "%s: no reply from %s within %" PRIu32
                " ms (is ldpb-aggregator running and listening there?)\n",
                PROG, cl->a.connect, timeout_ms);
    else if (err == LDPB_ECRYPTO)
        fprintf(stderr,
                "%s: %s could not authenticate the request (%s: %s): is the server key the "
                "public key of this aggregator (its aggregator.pub)?\n",
                PROG, cl->a.connect, ldpb_errname(err), ldpb_client_errmsg(c));
    else if (err) {
        /* The handle's message holds the aggregator's reason, usually with the code's name. */
        const char *why = ldpb_client_errmsg(c), *name = ldpb_errname(err);
        fprintf(stderr, "%s: %s", PROG, why);
        if (!strstr(why, name))
            fprintf(stderr, " (%s)", name);
        fprintf(stderr, "%s\n",
                err == LDPB_EAUTH ? ": is the public key of --key on its admin list?" : "");
    }
    ldpb_client_free(c);
    return err ? EXIT_RUNTIME : 0;
}

static int parse_timeout(const char *text, uint32_t *out)
{
    char e[TOOL_ECHO_MAX + 4];
    size_t n = strlen(text);
    errno = 0;
    unsigned long long v = n && strspn(text, "0123456789") == n ? strtoull(text, NULL, 10) : 0;
    if (errno == ERANGE || v < 1 || v > TIMEOUT_MAX_MS) {
        fprintf(stderr, "%s: --timeout-ms '%s' is not a whole number in [1, %u]\n", PROG,
                tool_echo(e, sizeof e, text), TIMEOUT_MAX_MS);
        return EXIT_USAGE;
    }
    *out = (uint32_t)v;
    return 0;
}

int cmd_experiment(int argc, char **argv)
{
    struct cmdline cl;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return EXIT_RUNTIME;
    }
    int rc = parse_cmdline(argc, argv, &cl, rest);
    free(rest); /* the parsed options point into argv, not into rest */
    if (rc >= 0)
        return rc;
    if (!cl.a.connect)
        return tool_usage_error(PROG, "missing --connect URL (the aggregator's endpoint)", NULL);
    if (!cl.a.server_key)
        return tool_usage_error(PROG, "missing --server-key FILE (the aggregator's aggregator.pub)",
                                NULL);
    if (!cl.a.key)
        return tool_usage_error(PROG, "missing --key FILE (the operator's secret key)", NULL);
    if (cl.a.connect[0] == '\0' || strlen(cl.a.connect) > TOOL_URL_MAX)
        return tool_usage_error(PROG, "--connect must be a nanomsg URL of 1 to 127 bytes, not",
                                cl.a.connect);
    if (cl.a.file && ops[cl.op].op != LDPB_EXPERIMENT_CREATE)
        return tool_usage_error(PROG, "--file is for create only, not", ops[cl.op].word);
    uint32_t timeout = TIMEOUT_DEFAULT_MS;
    if (cl.a.timeout && parse_timeout(cl.a.timeout, &timeout))
        return EXIT_USAGE;

    char *settings = NULL;
    if (ops[cl.op].op == LDPB_EXPERIMENT_CREATE && !(settings = settings_text(&cl, &rc)))
        return rc;
    uint8_t pk[TOOL_KEY_BYTES], sk[TOOL_KEY_BYTES];
    if (tool_load_server_key(PROG, cl.a.server_key, pk) ||
        tool_load_client_key(PROG, "--key", cl.a.key, sk)) {
        free(settings);
        return EXIT_RUNTIME;
    }
    ldpb_experiment_info *v = NULL;
    size_t n = 0;
    rc = send_command(&cl, pk, sk, timeout, settings, &v, &n);
    sodium_memzero(sk, sizeof sk);
    free(settings);
    if (rc)
        return rc;
    print_result(stdout, &cl, v, n);
    ldpb_experiment_info_free(v);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}
