/* Helpers shared by the ldpb subcommands and the simulation planner (cli_text.c): quoting user
 * input in messages, and parsing --long options. */
#ifndef LDPB_TOOLS_CLI_TEXT_H
#define LDPB_TOOLS_CLI_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* User input quoted back in an error message: at most cap - 4 bytes of it, control and non-ASCII
 * bytes shown as '?', "..." when cut (cli_text.c). Returns dst. */
const char *tool_echo_n(char *dst, size_t cap, const char *s, size_t n);
const char *tool_echo(char *dst, size_t cap, const char *s);

/* Every subcommand exits 2 for bad arguments. */
#define TOOL_EXIT_USAGE 2
#define TOOL_ECHO_MAX   60
/* Prints "PROG: WHAT 'ARG'" (or "PROG: WHAT" for a NULL arg) to stderr; returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *prog, const char *what, const char *arg);

/* A --name option: VALUE stores its text (`--name V` or `--name=V`) in the const char * at
 * `offset` of the caller's struct; FLAG sets the int at `offset` to 1 and takes no value. */
typedef enum tool_opt_kind { TOOL_OPT_VALUE, TOOL_OPT_FLAG } tool_opt_kind;
typedef struct tool_option {
    const char *name;
    tool_opt_kind kind;
    size_t offset;
} tool_option;

typedef struct tool_parse_spec {
    const char *prog;
    const tool_option *opts;
    size_t n_opts;
    void (*usage)(FILE *f); /* printed to stdout for -h / --help */
    /* ldpb sim: --help anywhere wins over errors elsewhere on the line; a bare "--" is an
     * unexpected argument; and no value starts with "--" (that is the next option) */
    int sim_rules;
} tool_parse_spec;

/* Parses argv[1..] into `dst` (zeroed by the caller): only --long options, each at most once.
 * Returns -1 to go on, 0 after printing the help, TOOL_EXIT_USAGE after printing the problem,
 * or 1 if the help could not be written. */
int tool_parse_options(const tool_parse_spec *spec, int argc, char **argv, void *dst);

#endif
