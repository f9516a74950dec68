/* Text helpers shared by the ldpb subcommands and the simulation planner (cli_text.c). */
#ifndef LDPB_TOOLS_CLI_TEXT_H
#define LDPB_TOOLS_CLI_TEXT_H

#include <stddef.h>

/* User input quoted back in an error message: at most cap - 4 bytes of it, control and non-ASCII
 * bytes shown as '?', "..." when cut (cli_text.c). Returns dst. */
const char *tool_echo_n(char *dst, size_t cap, const char *s, size_t n);
const char *tool_echo(char *dst, size_t cap, const char *s);

/* Every subcommand exits 2 for bad arguments. */
#define TOOL_EXIT_USAGE 2
#define TOOL_ECHO_MAX   60
/* Prints "PROG: WHAT 'ARG'" (or "PROG: WHAT" for a NULL arg) to stderr; returns TOOL_EXIT_USAGE. */
int tool_usage_error(const char *prog, const char *what, const char *arg);

#endif
