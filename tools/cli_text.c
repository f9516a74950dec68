/* Echoing user input back in error messages, and --long options (cli_text.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_text.h"

const char *tool_echo_n(char *dst, size_t cap, const char *s, size_t n)
{
    if (cap < 4) {
        if (cap)
            dst[0] = '\0';
        return dst;
    }
    size_t max = cap - 4, i = 0;
    for (; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > max) {
        memcpy(dst + i, "...", 3);
        i += 3;
    }
    dst[i] = '\0';
    return dst;
}

const char *tool_echo(char *dst, size_t cap, const char *s)
{
    return tool_echo_n(dst, cap, s, strlen(s));
}

int tool_usage_error(const char *prog, const char *what, const char *arg)
{
    char e[TOOL_ECHO_MAX + 4];
    if (arg)
        fprintf(stderr, "%s: %s '%s'\n", prog, what, tool_echo(e, sizeof e, arg));
    else
        fprintf(stderr, "%s: %s\n", prog, what);
    return TOOL_EXIT_USAGE;
}

static int print_help(const tool_parse_spec *spec)
{
    spec->usage(stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", spec->prog, strerror(errno));
        return 1;
    }
    return 0;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int tool_parse_options(const tool_parse_spec *spec, int argc, char **argv, void *dst)
{
    if (spec->sim_rules)
        for (int i = 1; i < argc; i++)
            if (is_help(argv[i]))
                return print_help(spec);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (is_help(arg))
            return print_help(spec);
        if (strncmp(arg, "--", 2) != 0 || (spec->sim_rules && arg[2] == '\0'))
            return tool_usage_error(spec->prog, "unexpected argument", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const tool_option *opt = NULL;
        for (size_t j = 0; j < spec->n_opts; j++)
            if (strlen(spec->opts[j].name) == len && strncmp(spec->opts[j].name, name, len) == 0)
                opt = &spec->opts[j];
        if (!opt)
            return tool_usage_error(spec->prog, "unknown option", arg);
        char *field = (char *)dst + opt->offset;
        if (opt->kind == TOOL_OPT_FLAG) {
            if (eq)
                return tool_usage_error(spec->prog, "option takes no value:", arg);
            int *flag = (int *)(void *)field;
            if (*flag) {
                fprintf(stderr, "%s: option --%s given twice\n", spec->prog, opt->name);
                return TOOL_EXIT_USAGE;
            }
            *flag = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc || (spec->sim_rules && strncmp(argv[i + 1], "--", 2) == 0))
                return tool_usage_error(spec->prog, "missing value for option", arg);
            value = argv[++i];
        }
        const char **slot = (const char **)(void *)field;
        if (*slot) {
            fprintf(stderr, "%s: option --%s given twice\n", spec->prog, opt->name);
            return TOOL_EXIT_USAGE;
        }
        *slot = value;
    }
    return -1;
}
