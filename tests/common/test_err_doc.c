/* docs/protocol.md against the code: its section 7 table lists every ldpb_err code, each once and
 * under its ldpb_errname; every "code N (`LDPB_X`)" or "`Error` N `LDPB_X`" in the page names the
 * constant whose value is N; and section 1 gives the exact frame sizes at which the aggregator's
 * answer to an oversized frame changes. A third party writes a client from this page alone, so a
 * code added to err.h without a row here fails the build's tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/err.h"
#include "ldpb/wire.h"

#define CODES_MAX 256

static char *doc;

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

/* The value of the constant called `name` (`len` bytes), or -1. */
static int code_of(const char *name, size_t len)
{
    for (int c = 0; c < CODES_MAX; c++) {
        const char *e = ldpb_errname((ldpb_err)c);
        if (strlen(e) == len && strncmp(e, name, len) == 0)
            return c;
    }
    return -1;
}

static int n_codes(void)
{
    int n = 1;
    while (strcmp(ldpb_errname((ldpb_err)n), "LDPB_EUNKNOWN") != 0)
        n++;
    return n; /* codes 1 .. n-1 exist */
}

/* The body of section 7, up to the next "## ". */
static void section7(const char **begin, const char **end)
{
    const char *s = strstr(doc, "\n## 7. Errors");
    assert_non_null(s);
    const char *e = strstr(s + 1, "\n## ");
    *begin = s;
    *end = e ? e : s + strlen(s);
}

static void table_lists_every_code_once(void **state)
{
    (void)state;
    const char *s, *end;
    section7(&s, &end);
    int rows[CODES_MAX] = {0};
    /* rows look like: | 3 | `LDPB_ERANGE` | ... */
    for (const char *p = s; p < end; p++) {
        if (p[0] != '\n' || p[1] != '|')
            continue;
        int code = 0, used = 0;
        char name[64];
        if (sscanf(p + 1, "| %d | `%63[A-Z_]` |%n", &code, name, &used) != 2 || used == 0)
            continue;
        if (code < 1 || code >= CODES_MAX)
            fail_msg("section 7 has a row for code %d", code);
        if (strcmp(name, ldpb_errname((ldpb_err)code)) != 0)
            fail_msg("section 7 names code %d %s; err.h calls it %s", code, name,
                     ldpb_errname((ldpb_err)code));
        rows[code]++;
    }
    int n = n_codes();
    for (int c = 1; c < n; c++)
        if (rows[c] != 1)
            fail_msg("section 7 has %d rows for code %d (%s); one expected", rows[c], c,
                     ldpb_errname((ldpb_err)c));
    for (int c = n; c < CODES_MAX; c++)
        if (rows[c])
            fail_msg("section 7 lists code %d, which err.h does not define", c);
}

/* Every `LDPB_X` preceded closely by a number ("code 13, `LDPB_EVERSION`", "`Error` 16
 * `LDPB_EEXPIRED`", "| 3 | `LDPB_ERANGE`") pairs that number with X's value. */
static void every_number_matches_its_name(void **state)
{
    (void)state;
    int checked = 0;
    for (const char *p = strstr(doc, "`LDPB_E"); p; p = strstr(p + 1, "`LDPB_E")) {
        size_t len = strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        if (p[1 + len] != '`')
            continue;
        int code = code_of(p + 1, len);
        if (code < 0)
            continue; /* a constant of another header (LDPB_FRAME_MAX ...) has no E prefix */
        /* the nearest number within the 12 bytes before, on the same line */
        const char *q = p;
        const char *stop = p - 12 > doc ? p - 12 : doc;
        while (q > stop && q[-1] != '\n' && !(q[-1] >= '0' && q[-1] <= '9'))
            q--;
        if (q == stop || q[-1] == '\n')
            continue;
        while (q > doc && q[-1] >= '0' && q[-1] <= '9')
            q--;
        if (q > doc && (q[-1] == '.' || q[-1] == 'x'))
            continue; /* 1.1, 0x.. */
        int n = atoi(q);
        if (n != code) {
            char ctx[80];
            snprintf(ctx, sizeof ctx, "%.*s", (int)(p + 1 + len + 1 - q), q);
            fail_msg("protocol.md pairs %d with %.*s (value %d): '%s'", n, (int)len, p + 1, code,
                     ctx);
        }
        checked++;
    }
    assert_true(checked >= n_codes() - 1);
}

/* The aggregator receives up to 4 x LDPB_FRAME_MAX bytes, of which a REQ client's request id
 * takes 4 (tests/daemon/test_e2e.c, test_oversized_frames, checks the behaviour itself). */
static void oversized_frame_sizes_are_stated(void **state)
{
    (void)state;
    char row[128];
    snprintf(row, sizeof row, "| %u to %u | refused with a PLAIN_ERROR, code 5 (`LDPB_EPROTO`)",
             LDPB_FRAME_MAX + 1, 4 * LDPB_FRAME_MAX - 4);
    if (!strstr(doc, row))
        fail_msg("section 1 does not say: %s", row);
    snprintf(row, sizeof row, "| %u and more | the aggregator closes the connection",
             4 * LDPB_FRAME_MAX - 3);
    if (!strstr(doc, row))
        fail_msg("section 1 does not say: %s", row);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : LDPB_PROTOCOL_MD;
    doc = read_all(path);
    if (!doc) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_lists_every_code_once),
        cmocka_unit_test(every_number_matches_its_name),
        cmocka_unit_test(oversized_frame_sizes_are_stated),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(doc);
    return rc;
}
