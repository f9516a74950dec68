/* ldpb_strerror and ldpb_errname are total: every code has its own text, and unknown values
 * still get a string. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/err.h"

#define LAST_CODE LDPB_ENOEXPERIMENT

static void every_code_has_distinct_text(void **state)
{
    (void)state;
    for (int i = LDPB_OK; i <= (int)LAST_CODE; i++) {
        const char *text = ldpb_strerror((ldpb_err)i);
        const char *name = ldpb_errname((ldpb_err)i);
        assert_non_null(text);
        assert_string_not_equal(text, "unknown error");
        assert_true(strncmp(name, "LDPB_", 5) == 0);
        assert_string_not_equal(name, "LDPB_EUNKNOWN");
        for (int j = LDPB_OK; j < i; j++) {
            assert_string_not_equal(text, ldpb_strerror((ldpb_err)j));
            assert_string_not_equal(name, ldpb_errname((ldpb_err)j));
        }
    }
}

static void unknown_codes_get_a_string(void **state)
{
    (void)state;
    assert_string_equal(ldpb_strerror((ldpb_err)(LAST_CODE + 1)), "unknown error");
    assert_string_equal(ldpb_strerror((ldpb_err)-1), "unknown error");
    assert_string_equal(ldpb_errname((ldpb_err)9999), "LDPB_EUNKNOWN");
}

static void values_are_pinned(void **state)
{
    (void)state;
    /* These numbers travel on the wire; changing one breaks deployed clients. */
    assert_int_equal(LDPB_OK, 0);
    assert_int_equal(LDPB_EINVAL, 1);
    assert_int_equal(LDPB_ENOMEM, 2);
    assert_int_equal(LDPB_ERANGE, 3);
    assert_int_equal(LDPB_ESTATE, 4);
    assert_int_equal(LDPB_EPROTO, 5);
    assert_int_equal(LDPB_ECRYPTO, 6);
    assert_int_equal(LDPB_ETRANSPORT, 7);
    assert_int_equal(LDPB_ETIMEDOUT, 8);
    assert_int_equal(LDPB_EBUDGET, 9);
    assert_int_equal(LDPB_EIO, 10);
    assert_int_equal(LDPB_ECORRUPT, 11);
    assert_int_equal(LDPB_EREPLAY, 12);
    assert_int_equal(LDPB_EVERSION, 13);
    assert_int_equal(LDPB_EAUTH, 14);
    assert_int_equal(LDPB_ENOTFOUND, 15);
    assert_int_equal(LDPB_EEXPIRED, 16);
    assert_int_equal(LDPB_EBUSY, 17);
    assert_int_equal(LDPB_ENOTSUP, 18);
    assert_int_equal(LDPB_ENOEXPERIMENT, 19);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_distinct_text),
        cmocka_unit_test(unknown_codes_get_a_string),
        cmocka_unit_test(values_are_pinned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
