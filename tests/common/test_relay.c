/* The relay frames (ldpb/relay.h): the worked example of docs/protocol.md section 11 byte for
 * byte, round trips, and every refusal of the parser and the builder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/relay.h"

/* The request frame of docs/protocol.md section 9 (115 bytes). */
static const char example_hex[] = "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
                                  "ae4a30c35d440068e5cf8b010000000102030405060708090a0b0c0d0e0fb53f"
                                  "f57814719528d0b72ff8b966511f801ab26cff820b6e00505df131f589c8c517"
                                  "f4c28c7ac4dc71b1ff6cf03139abb242807426";

/* docs/protocol.md section 11: that frame as id 7 and the 6 bytes "LDPB" 01 07 as id 3. */
static const char batch_hex[] = "4c44504201030200"
                                "0700000073000000"
                                "4c4450420101dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4"
                                "ae4a30c35d440068e5cf8b010000000102030405060708090a0b0c0d0e0fb53f"
                                "f57814719528d0b72ff8b966511f801ab26cff820b6e00505df131f589c8c517"
                                "f4c28c7ac4dc71b1ff6cf03139abb242807426"
                                "0300000006000000"
                                "4c4450420107";

static size_t unhex(const char *h, uint8_t *out)
{
    size_t n = strlen(h) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

static void test_worked_example(void **state)
{
    (void)state;
    uint8_t ex[115], want[256], got[256];
    assert_int_equal(unhex(example_hex, ex), sizeof ex);
    size_t want_len = unhex(batch_hex, want);
    assert_int_equal(want_len, 145);
    static const uint8_t junk[6] = {'L', 'D', 'P', 'B', 1, 7};
    ldpb_relay_entry e[2] = {{7, ex, sizeof ex}, {3, junk, sizeof junk}};
    size_t len = 0;
    assert_int_equal(ldpb_relay_size(e, 2), 145);
    assert_int_equal(ldpb_relay_build(got, sizeof got, &len, LDPB_FRAME_RELAY_BATCH, e, 2),
                     LDPB_OK);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    ldpb_relay_entry p[4];
    size_t n = 0;
    assert_true(ldpb_relay_is_kind(got, len, LDPB_FRAME_RELAY_BATCH));
    assert_false(ldpb_relay_is_kind(got, len, LDPB_FRAME_RELAY_REPLY));
    assert_int_equal(ldpb_relay_parse(got, len, LDPB_FRAME_RELAY_BATCH, p, 4, &n, NULL), LDPB_OK);
    assert_int_equal(n, 2);
    assert_int_equal(p[0].id, 7);
    assert_int_equal(p[0].len, 115);
    assert_ptr_equal(p[0].frame, got + 16);
    assert_int_equal(p[1].id, 3);
    assert_memory_equal(p[1].frame, junk, 6);
    /* a batch is not a reply, and the cap binds */
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_relay_parse(got, len, LDPB_FRAME_RELAY_REPLY, p, 4, &n, detail),
                     LDPB_EPROTO);
    assert_string_equal(detail, "frame kind 3 is not a relay reply (4)");
    assert_int_equal(ldpb_relay_parse(got, len, LDPB_FRAME_RELAY_BATCH, p, 1, &n, NULL),
                     LDPB_EPROTO);
    assert_int_equal(n, 0);
    /* the aggregator's answer to the second entry: "LDPB" 01 07 is no frame it knows */
    ldpb_frame fr;
    assert_int_equal(ldpb_frame_parse(junk, sizeof junk, &fr, detail), LDPB_EPROTO);
    assert_string_equal(detail, "unknown frame kind 7");
}

static ldpb_err parse_hex(const char *hex, unsigned kind, char *detail)
{
    uint8_t buf[256];
    size_t n = unhex(hex, buf), count = 7;
    ldpb_relay_entry e[LDPB_RELAY_ENTRIES_MAX];
    ldpb_err err = ldpb_relay_parse(buf, n, kind, e, LDPB_RELAY_ENTRIES_MAX, &count, detail);
    if (err)
        assert_int_equal(count, 0);
    return err;
}

static void test_parse_refusals(void **state)
{
    (void)state;
    char d[LDPB_DETAIL_BYTES];
    const unsigned B = LDPB_FRAME_RELAY_BATCH;
    assert_int_equal(parse_hex("4c445042010301000000000001000000aa", B, d), LDPB_OK);
    assert_int_equal(parse_hex("4c44504201030000", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch count 0 is outside 1..256");
    assert_int_equal(parse_hex("4c44504201030101", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch count 257 is outside 1..256");
    assert_int_equal(parse_hex("4c4450420103010000000000000000", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch entry 0 at byte 8 is truncated");
    assert_int_equal(parse_hex("4c445042010301000000000000000000", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch entry 0 has length 0, outside 1..65536");
    assert_int_equal(parse_hex("4c445042010301000000000001000100aa", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch entry 0 has length 65537, outside 1..65536");
    assert_int_equal(parse_hex("4c445042010301000000000002000000aa", B, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch entry 0 says 2 bytes, 1 follow");
    assert_int_equal(parse_hex("4c445042010301000000000001000000aabb", B, d), LDPB_EPROTO);
    assert_string_equal(d, "1 bytes follow the last relay batch entry");
    assert_int_equal(parse_hex("4c445042020301000000000001000000aa", B, d), LDPB_EVERSION);
    assert_int_equal(parse_hex("4c445043010301000000000001000000aa", B, d), LDPB_EPROTO);
    assert_int_equal(parse_hex("4c4450420103", B, d), LDPB_EPROTO);
    /* the size limit is checked first, on the length alone */
    uint8_t *big = calloc(1, LDPB_RELAY_BATCH_MAX + 1);
    assert_non_null(big);
    memcpy(big, "LDPB\x01\x03", 6);
    ldpb_relay_entry e[1];
    size_t n = 0;
    assert_int_equal(ldpb_relay_parse(big, LDPB_RELAY_BATCH_MAX + 1, B, e, 1, &n, d), LDPB_EPROTO);
    assert_string_equal(d, "relay batch of 262141 bytes exceeds the limit of 262140");
    free(big);
    assert_int_equal(ldpb_relay_parse(NULL, 0, B, e, 1, &n, d), LDPB_EINVAL);
    assert_int_equal(ldpb_relay_parse((const uint8_t *)"x", 1, 1, e, 1, &n, d), LDPB_EINVAL);
}

static void test_build_limits(void **state)
{
    (void)state;
    static uint8_t frame[LDPB_FRAME_MAX + 1];
    static uint8_t out[LDPB_RELAY_BATCH_MAX + 64];
    static ldpb_relay_entry e[LDPB_RELAY_ENTRIES_MAX + 1];
    size_t len = 0;
    for (size_t i = 0; i <= LDPB_RELAY_ENTRIES_MAX; i++)
        e[i] = (ldpb_relay_entry){(uint32_t)i, frame, 100};
    const unsigned B = LDPB_FRAME_RELAY_BATCH;
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, LDPB_RELAY_ENTRIES_MAX),
                     LDPB_OK);
    assert_int_equal(len, 8 + LDPB_RELAY_ENTRIES_MAX * 108);
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, LDPB_RELAY_ENTRIES_MAX + 1),
                     LDPB_EINVAL);
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, 0), LDPB_EINVAL);
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, 1, e, 1), LDPB_EINVAL);
    e[0].len = 0;
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, 1), LDPB_EINVAL);
    e[0].len = LDPB_FRAME_MAX + 1;
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, 1), LDPB_EINVAL);
    /* four whole frames exceed a batch, not a reply */
    for (int i = 0; i < 4; i++)
        e[i].len = LDPB_FRAME_MAX;
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, 4), LDPB_ERANGE);
    assert_int_equal(len, 8 + 4 * (8 + LDPB_FRAME_MAX));
    uint8_t *reply = malloc(len);
    assert_non_null(reply);
    size_t rlen = 0;
    assert_int_equal(ldpb_relay_build(reply, len, &rlen, LDPB_FRAME_RELAY_REPLY, e, 4), LDPB_OK);
    assert_int_equal(rlen, len);
    ldpb_relay_entry p[4];
    size_t n = 0;
    assert_int_equal(ldpb_relay_parse(reply, rlen, LDPB_FRAME_RELAY_REPLY, p, 4, &n, NULL),
                     LDPB_OK);
    assert_int_equal(n, 4);
    free(reply);
    /* three fit a batch; a small buffer says what it needs */
    assert_int_equal(ldpb_relay_build(out, sizeof out, &len, B, e, 3), LDPB_OK);
    assert_int_equal(ldpb_relay_build(out, 10, &len, B, e, 3), LDPB_ERANGE);
    assert_int_equal(len, 8 + 3 * (8 + LDPB_FRAME_MAX));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_build_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
