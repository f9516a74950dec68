/* ldpb privatize: privatize rewards from the command line or stdin with one mechanism and print
 * one output per line (docs/cli.md; the interface is a contract). Arguments are parsed and checked
 * here; the mechanism and the RNG are the common library's. Output goes through a 64 KiB buffer
 * written with write(2), flushed whenever the command is about to wait for input, so it both
 * streams fast and answers a co-process line by line. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/rng.h"

#define PROG "ldpb privatize"

#define EXIT_RUNTIME 1 /* I/O error, RNG or memory failure */
#define EXIT_USAGE   2 /* bad arguments or bad input data */

/* 10^12 outputs is hours of output; anything larger is a typo. */
#define COUNT_MAX 1000000000000ULL

#define OUT_BUF_BYTES (64 * 1024)
/* Longest output line: '-', 16 integer digits (< 2^53), '.', 58 fraction digits, '\n'. */
#define OUT_ITEM_MAX 80
#define IN_BUF_BYTES (64 * 1024)
/* Longest accepted input line; a number needs far fewer bytes. */
#define LINE_BYTES_MAX 1024
/* How much of a bad argument or line is echoed in a message. */
#define ECHO_MAX 40

struct args {
    const char *mech;
    const char *epsilon;
    const char *count;
    const char *seed;
    const char *range;
    const char *kappa;
    const char *value;
};

struct output {
    char buf[OUT_BUF_BYTES];
    size_t len;
    int bernoulli;
    int grid_k;        /* Laplace outputs are multiples of 2^-grid_k; -1 if that is unknown */
    double grid_scale; /* 2^grid_k */
};

struct input {
    char buf[IN_BUF_BYTES];
    size_t start, end; /* unread bytes are buf[start, end) */
    int eof;
    uint64_t lineno;
};

struct context {
    struct output out;
    struct input in;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb privatize -m MECH -e EPS [-n COUNT] [--seed S] [--range LO,HI]\n"
            "                      [--kappa K] [VALUE]\n"
            "\n"
            "Privatizes the reward VALUE COUNT times or, without VALUE, every reward read from\n"
            "standard input (one per line, COUNT outputs per line). Prints one output per line:\n"
            "0 or 1 for the Bernoulli mechanisms, an exact decimal for laplace (on the [0, 1]\n"
            "scale, plus noise).\n"
            "\n"
            "options:\n"
            "  -m, --mechanism MECH  linear, quadratic, exponential or laplace\n"
            "  -e, --epsilon EPS     per-report epsilon, in (0, %g]\n"
            "  -n, --count COUNT     outputs per reward, in [1, 10^12] (default 1)\n"
            "      --seed S          reproducible noise derived from the text S, for tests and\n"
            "                        simulations only: anyone who knows S knows the noise\n"
            "                        (default: the system's secure generator)\n"
            "      --range LO,HI     rescale rewards from [LO, HI] to [0, 1] (default 0,1);\n"
            "                        rewards outside the range are clipped to it\n"
            "      --kappa K         quadratic curvature, in [-1, 1] (default %g); quadratic only\n"
            "  -h, --help            print this help and exit\n"
            "\n"
            "Input lines may carry surrounding blanks; an empty line is an error.\n"
            "Exit status: 0 success, 1 runtime error (I/O, RNG), 2 bad arguments or input.\n",
            LDPB_EPSILON_MAX, LDPB_KAPPA_DEFAULT);
}

/* Parses all of `text` (`n` bytes) as a finite double. NULL on success, else the problem in
 * words. */
static const char *parse_double(const char *text, size_t n, double *out)
{
    char tmp[LINE_BYTES_MAX + 1];
    if (n == 0)
        return "is empty";
    if (n > LINE_BYTES_MAX)
        return "is too long";
    if (memchr(text, '\0', n))
        return "contains a NUL byte";
    memcpy(tmp, text, n);
    tmp[n] = '\0';
    /* strtod skips leading blanks; a number here must start right away. */
    if (tmp[0] == ' ' || tmp[0] == '\t' || tmp[0] == '\n' || tmp[0] == '\r' || tmp[0] == '\f' ||
        tmp[0] == '\v')
        return "is not a number";
    char *end;
    double v = strtod(tmp, &end);
    if (end == tmp || *end != '\0')
        return "is not a number";
    if (!isfinite(v))
        return "is not a finite number";
    *out = v;
    return NULL;
}

static int parse_number_arg(const char *name, const char *text, double *out)
{
    const char *why = parse_double(text, strlen(text), out);
    if (why) {
        char e[ECHO_MAX + 4];
        fprintf(stderr, "%s: %s '%s' %s\n", PROG, name, tool_echo(e, sizeof e, text), why);
        return EXIT_USAGE;
    }
    return 0;
}

static int parse_count(const char *text, uint64_t *out)
{
    char e[ECHO_MAX + 4];
    size_t n = strlen(text);
    if (n == 0 || strspn(text, "0123456789") != n) {
        fprintf(stderr, "%s: count '%s' is not a whole number\n", PROG,
                tool_echo_n(e, sizeof e, text, n));
        return EXIT_USAGE;
    }
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE || v < 1 || v > COUNT_MAX) {
        fprintf(stderr, "%s: count %s outside [1, 10^12]\n", PROG,
                tool_echo_n(e, sizeof e, text, n));
        return EXIT_USAGE;
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_range(const char *text, double *lo, double *hi)
{
    char e[ECHO_MAX + 4];
    size_t n = strlen(text);
    const char *comma = strchr(text, ',');
    if (!comma || strchr(comma + 1, ',') ||
        parse_double(text, (size_t)(comma - text), lo) != NULL ||
        parse_double(comma + 1, strlen(comma + 1), hi) != NULL) {
        fprintf(stderr, "%s: range '%s' is not LO,HI with two finite numbers\n", PROG,
                tool_echo_n(e, sizeof e, text, n));
        return EXIT_USAGE;
    }
    if (!(*lo < *hi)) {
        fprintf(stderr, "%s: range %s is empty: LO must be below HI\n", PROG,
                tool_echo_n(e, sizeof e, text, n));
        return EXIT_USAGE;
    }
    if (!isfinite(*hi - *lo)) {
        fprintf(stderr, "%s: range %s is too wide: HI - LO overflows\n", PROG,
                tool_echo_n(e, sizeof e, text, n));
        return EXIT_USAGE;
    }
    return 0;
}

/* A leading '-' starts an option unless the whole argument is a number ("-0.5", "-inf"). */
static int looks_like_number(const char *s)
{
    char *end;
    if (s[0] != '-' || s[1] == '\0')
        return 0;
    (void)strtod(s, &end);
    return end != s && *end == '\0';
}

static const struct option_spec {
    char short_name; /* 0: long only */
    const char *long_name;
    size_t offset; /* of the const char * in struct args; SIZE_MAX for --help */
} options[] = {
    {'m', "mechanism", offsetof(struct args, mech)},
    {'e', "epsilon", offsetof(struct args, epsilon)},
    {'n', "count", offsetof(struct args, count)},
    {0, "seed", offsetof(struct args, seed)},
    {0, "range", offsetof(struct args, range)},
    {0, "kappa", offsetof(struct args, kappa)},
    {'h', "help", SIZE_MAX},
};

static const struct option_spec *find_option(const char *arg, const char **inline_value)
{
    *inline_value = NULL;
    size_t n_opts = sizeof options / sizeof options[0];
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; i < n_opts; i++) {
            if (strlen(options[i].long_name) == len &&
                strncmp(options[i].long_name, name, len) == 0) {
                *inline_value = eq ? eq + 1 : NULL;
                return &options[i];
            }
        }
        return NULL;
    }
    for (size_t i = 0; i < n_opts; i++) {
        if (options[i].short_name && options[i].short_name == arg[1]) {
            *inline_value = arg[2] ? arg + 2 : NULL;
            return &options[i];
        }
    }
    return NULL;
}

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
    int only_values = 0;
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_values && strcmp(arg, "--") == 0) {
            only_values = 1;
            continue;
        }
        if (only_values || arg[0] != '-' || looks_like_number(arg)) {
            if (a->value)
                return tool_usage_error(PROG, "unexpected extra argument", arg);
            a->value = arg;
            continue;
        }
        const char *value;
        const struct option_spec *opt = find_option(arg, &value);
        if (!opt)
            return tool_usage_error(PROG, "unknown option", arg);
        if (opt->offset == SIZE_MAX) {
            if (value)
                return tool_usage_error(PROG, "option takes no value:", arg);
            usage(stdout);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
                return EXIT_RUNTIME;
            }
            return 0;
        }
        if (!value) {
            if (i + 1 >= argc)
                return tool_usage_error(PROG, "missing value for option", arg);
            value = argv[++i];
        }
        const char **slot = (const char **)((char *)a + opt->offset);
        if (*slot) {
            fprintf(stderr, "%s: option --%s given twice\n", PROG, opt->long_name);
            return EXIT_USAGE;
        }
        *slot = value;
    }
    return -1;
}

/* Validates the arguments and builds the mechanism's options. */
static int make_opts(const struct args *a, ldpb_mech_opts *o, uint64_t *count)
{
    ldpb_mech_kind kind;
    if (!a->mech)
        return tool_usage_error(PROG, "missing -m MECH (linear, quadratic, exponential or laplace)",
                                NULL);
    if (!a->epsilon)
        return tool_usage_error(PROG, "missing -e EPS", NULL);
    if (ldpb_mech_kind_from_name(a->mech, &kind) != LDPB_OK) {
        char e[ECHO_MAX + 4];
        fprintf(stderr,
                "%s: unknown mechanism '%s' (expected linear, quadratic, exponential or "
                "laplace)\n",
                PROG, tool_echo(e, sizeof e, a->mech));
        return EXIT_USAGE;
    }
    double eps;
    if (parse_number_arg("epsilon", a->epsilon, &eps))
        return EXIT_USAGE;
    if (!(eps > 0.0 && eps <= LDPB_EPSILON_MAX)) {
        char e[ECHO_MAX + 4];
        fprintf(stderr, "%s: epsilon %s outside (0, %g]\n", PROG,
                tool_echo(e, sizeof e, a->epsilon), LDPB_EPSILON_MAX);
        return EXIT_USAGE;
    }
    ldpb_mech_opts_init(o, kind, eps);
    *count = 1;
    if (a->count && parse_count(a->count, count))
        return EXIT_USAGE;
    if (a->kappa) {
        if (!(ldpb_mech_desc_of((int)kind)->params & LDPB_MECH_PARAM_KAPPA))
            return tool_usage_error(PROG, "--kappa applies only to the quadratic mechanism, not",
                                    a->mech);
        if (parse_number_arg("kappa", a->kappa, &o->kappa))
            return EXIT_USAGE;
        if (!(o->kappa >= -1.0 && o->kappa <= 1.0)) {
            char e[ECHO_MAX + 4];
            fprintf(stderr, "%s: kappa %s outside [-1, 1]\n", PROG,
                    tool_echo(e, sizeof e, a->kappa));
            return EXIT_USAGE;
        }
    }
    if (a->range && parse_range(a->range, &o->range_lo, &o->range_hi))
        return EXIT_USAGE;
    if (a->seed && a->seed[0] == '\0')
        return tool_usage_error(PROG, "--seed needs a non-empty text (omit it for secure noise)",
                                NULL);
    return 0;
}

/* Writes all of buf to stdout, waiting out EINTR and a non-blocking descriptor. */
static int write_all(const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
                (void)poll(&p, 1, -1);
                continue;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int out_flush(struct output *o)
{
    int rc = write_all(o->buf, o->len);
    o->len = 0;
    if (rc) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}

static const char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Formats v = m * 2^-k exactly: the integer part, then the fraction two digits at a time (each
 * step multiplies the k-bit remainder by 100), which ends after at most k digits. The result is
 * the shortest decimal equal to v, so it also reads back as exactly v. */
static size_t format_grid(char *dst, double v, const struct output *o)
{
    int k = o->grid_k;
    double scaled = v * o->grid_scale; /* exact: a power of two */
    if (k < 0 || !(fabs(scaled) < 0x1p53) || scaled != floor(scaled))
        return (size_t)snprintf(dst, OUT_ITEM_MAX, "%.17g\n", v); /* not on the grid */
    int64_t m = (int64_t)scaled;
    uint64_t u = m < 0 ? 0 - (uint64_t)m : (uint64_t)m;
    uint64_t mask = ((uint64_t)1 << k) - 1;
    uint64_t ip = u >> k, frac = u & mask;
    char digits[20];
    size_t nd = 0, len = 0;
    if (m < 0)
        dst[len++] = '-';
    do {
        digits[nd++] = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    while (nd)
        dst[len++] = digits[--nd];
    if (frac) {
        dst[len++] = '.';
        while (frac) {
            frac *= 100;
            memcpy(dst + len, digit_pairs + 2 * (frac >> k), 2);
            len += 2;
            frac &= mask;
        }
        len -= dst[len - 1] == '0'; /* the last pair may end in a zero */
    }
    dst[len++] = '\n';
    return len;
}

/* The exponent k of a power-of-two grid 2^-k that format_grid can handle (the remainder times
 * 100 must fit in 64 bits), else -1. */
static int grid_exponent(double grid)
{
    int e;
    if (!(grid > 0.0) || frexp(grid, &e) != 0.5)
        return -1;
    int k = 1 - e;
    return k >= 0 && k <= 57 ? k : -1;
}

/* Privatizes `reward` `count` times into the output buffer. */
static int emit(struct output *o, const ldpb_mech *mech, ldpb_rng *rng, double reward,
                uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        double y;
        ldpb_err err = ldpb_mech_privatize(mech, rng, reward, &y);
        if (err) {
            fprintf(stderr, "%s: cannot privatize: %s\n", PROG, ldpb_strerror(err));
            return EXIT_RUNTIME;
        }
        if (o->len > OUT_BUF_BYTES - OUT_ITEM_MAX) {
            int rc = out_flush(o);
            if (rc)
                return rc;
        }
        if (o->bernoulli) {
            o->buf[o->len] = y != 0.0 ? '1' : '0';
            o->buf[o->len + 1] = '\n';
            o->len += 2;
        } else {
            o->len += format_grid(o->buf + o->len, y, o);
        }
    }
    return 0;
}

enum { LINE_OK, LINE_EOF, LINE_TOO_LONG, LINE_READ_ERROR, LINE_WRITE_ERROR };

static int input_ready(void)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

/* Reads the next line (without its '\n') from stdin. Pending output is flushed first whenever
 * the read would block, so a program feeding one line at a time gets its answer. */
static int next_line(struct input *in, struct output *out, const char **line, size_t *len)
{
    for (;;) {
        char *start = in->buf + in->start;
        size_t avail = in->end - in->start;
        char *nl = memchr(start, '\n', avail);
        if (nl || (in->eof && avail > 0)) {
            *line = start;
            *len = nl ? (size_t)(nl - start) : avail;
            in->start += *len + (nl ? 1 : 0);
            in->lineno++;
            return *len > LINE_BYTES_MAX ? LINE_TOO_LONG : LINE_OK;
        }
        if (in->eof)
            return LINE_EOF;
        if (avail > LINE_BYTES_MAX) {
            in->lineno++;
            return LINE_TOO_LONG;
        }
        memmove(in->buf, start, avail);
        in->start = 0;
        in->end = avail;
        if (out->len > 0 && !input_ready() && out_flush(out))
            return LINE_WRITE_ERROR;
        ssize_t n = read(STDIN_FILENO, in->buf + in->end, sizeof in->buf - in->end);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
                (void)poll(&p, 1, -1);
                continue;
            }
            return LINE_READ_ERROR;
        }
        if (n == 0)
            in->eof = 1;
        in->end += (size_t)n;
    }
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Reports a bad input line after writing the outputs of the lines before it. */
static int line_error(struct output *out, uint64_t lineno, const char *what, const char *text,
                      size_t n)
{
    int rc = out_flush(out);
    if (rc)
        return rc;
    char e[ECHO_MAX + 4];
    if (text)
        fprintf(stderr, "%s: stdin line %llu: '%s' %s\n", PROG, (unsigned long long)lineno,
                tool_echo_n(e, sizeof e, text, n), what);
    else
        fprintf(stderr, "%s: stdin line %llu %s\n", PROG, (unsigned long long)lineno, what);
    return EXIT_USAGE;
}

static int run_stdin(struct context *c, const ldpb_mech *mech, ldpb_rng *rng, uint64_t count)
{
    for (;;) {
        const char *line;
        size_t len;
        switch (next_line(&c->in, &c->out, &line, &len)) {
        case LINE_OK:
            break;
        case LINE_EOF:
            return out_flush(&c->out);
        case LINE_TOO_LONG:
            return line_error(&c->out, c->in.lineno, "is longer than 1024 bytes", NULL, 0);
        case LINE_READ_ERROR:
            fprintf(stderr, "%s: cannot read standard input: %s\n", PROG, strerror(errno));
            return EXIT_RUNTIME;
        default:
            return EXIT_RUNTIME;
        }
        while (len > 0 && is_blank(line[0])) {
            line++;
            len--;
        }
        while (len > 0 && is_blank(line[len - 1]))
            len--;
        if (len == 0)
            return line_error(&c->out, c->in.lineno, "is empty (expected a number)", NULL, 0);
        double reward;
        const char *why = parse_double(line, len, &reward);
        if (why)
            return line_error(&c->out, c->in.lineno, why, line, len);
        int rc = emit(&c->out, mech, rng, reward, count);
        if (rc)
            return rc;
    }
}

int cmd_privatize(int argc, char **argv)
{
    struct args a;
    ldpb_mech_opts opts;
    uint64_t count = 1;
    double reward = 0.0;
    ldpb_mech *mech = NULL;
    ldpb_rng *rng = NULL;
    struct context *c = NULL;
    ldpb_err err;

    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = make_opts(&a, &opts, &count);
    if (rc)
        return rc;
    if (a.value && parse_number_arg("value", a.value, &reward))
        return EXIT_USAGE;

    /* A closed descriptor 1 could be reused by a file opened below; refuse before that. */
    if (fcntl(STDOUT_FILENO, F_GETFD) < 0) {
        fprintf(stderr, "%s: standard output is closed\n", PROG);
        return EXIT_RUNTIME;
    }
    err = ldpb_mech_new(&mech, &opts);
    if (err) {
        fprintf(stderr, "%s: cannot build the %s mechanism at epsilon %s: %s\n", PROG, a.mech,
                a.epsilon, ldpb_strerror(err));
        rc = err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
        goto done;
    }
    if (a.seed) {
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        ldpb_rng_seed_from_text(seed, a.seed);
        err = ldpb_rng_new_seeded(&rng, seed);
    } else {
        err = ldpb_rng_new_system(&rng);
    }
    if (err) {
        fprintf(stderr, "%s: cannot create the random generator: %s\n", PROG, ldpb_strerror(err));
        rc = EXIT_RUNTIME;
        goto done;
    }
    c = malloc(sizeof *c);
    if (!c) {
        fprintf(stderr, "%s: %s\n", PROG, ldpb_strerror(LDPB_ENOMEM));
        rc = EXIT_RUNTIME;
        goto done;
    }
    c->out.len = 0;
    c->out.bernoulli = ldpb_mech_is_bernoulli(mech);
    c->out.grid_k = c->out.bernoulli ? -1 : grid_exponent(ldpb_mech_laplace_grid(mech));
    c->out.grid_scale = c->out.grid_k >= 0 ? ldexp(1.0, c->out.grid_k) : 0.0;
    c->in.start = c->in.end = 0;
    c->in.eof = 0;
    c->in.lineno = 0;

    if (a.value) {
        rc = emit(&c->out, mech, rng, reward, count);
        if (!rc)
            rc = out_flush(&c->out);
    } else {
        rc = run_stdin(c, mech, rng, count);
    }

done:
    free(c);
    ldpb_rng_free(rng);
    ldpb_mech_free(mech);
    return rc;
}
