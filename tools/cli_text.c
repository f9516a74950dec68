/* Echoing user input back in error messages (cli_text.h). */
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
