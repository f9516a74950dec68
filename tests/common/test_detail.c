/* ldpb_detailf, the one detail-message formatter of common and the daemon: it formats like
 * snprintf into the caller's size, truncates without overrunning, and ignores a NULL buffer (the
 * detail argument of the codec and the daemon's modules is optional). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/detail.h"
#include "ldpb/wire.h"

static void formats_like_snprintf(void **state)
{
    (void)state;
    char buf[LDPB_DETAIL_BYTES];
    ldpb_detailf(buf, sizeof buf, "frame of %zu bytes exceeds the limit of %u", (size_t)70000,
                 65536u);
    assert_string_equal(buf, "frame of 70000 bytes exceeds the limit of 65536");
}

/* Each module passes its own buffer size: the text is cut at size - 1 and terminated, and the
 * bytes past size are never written. */
static void truncates_at_the_given_size(void **state)
{
    (void)state;
    char buf[16];
    memset(buf, 'x', sizeof buf);
    ldpb_detailf(buf, 6, "%s", "abcdefghij");
    assert_string_equal(buf, "abcde");
    for (size_t i = 6; i < sizeof buf; i++)
        assert_int_equal(buf[i], 'x');
    memset(buf, 'x', sizeof buf);
    ldpb_detailf(buf, 1, "%d", 42);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'x');
}

static void null_or_empty_buffer_is_ignored(void **state)
{
    (void)state;
    ldpb_detailf(NULL, LDPB_DETAIL_BYTES, "%s", "nowhere to go");
    char buf[4] = {'x', 'x', 'x', 'x'};
    ldpb_detailf(buf, 0, "%s", "abc");
    assert_memory_equal(buf, "xxxx", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formats_like_snprintf),
        cmocka_unit_test(truncates_at_the_given_size),
        cmocka_unit_test(null_or_empty_buffer_is_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
