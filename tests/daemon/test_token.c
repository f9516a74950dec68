/* Assignment tokens: exact round trip, and every corruption or foreign key is "unknown". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assign_token.h"
#include "ldpb/wire.h"

static void make(agg_token_key *key, agg_token *t, uint8_t sk_byte)
{
    uint8_t sk[LDPB_KEY_BYTES];
    memset(sk, sk_byte, sizeof sk);
    assert_int_equal(agg_token_key_derive(key, sk), LDPB_OK);
    memset(t, 0, sizeof *t);
    t->arm = 0x01020304u;
    t->mechanism = 4;
    t->epsilon = 0.7;
    t->expires_at_ms = 1700000000123ull;
    t->propensity = 0.3125;
    t->policy_version = 0xfedcba9876543210ull;
    memcpy(t->random, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
}

static void test_roundtrip(void **state)
{
    (void)state;
    agg_token_key key;
    agg_token t, u;
    make(&key, &t, 7);
    uint8_t id[AGG_TOKEN_BYTES];
    assert_true(AGG_TOKEN_BYTES <= LDPB_WIRE_ID_MAX);
    assert_int_equal(agg_token_seal(&key, &t, id), LDPB_OK);
    assert_int_equal(id[0], AGG_TOKEN_VERSION);
    assert_int_equal(agg_token_open(&key, id, sizeof id, &u), LDPB_OK);
    assert_int_equal(u.arm, t.arm);
    assert_int_equal(u.mechanism, t.mechanism);
    assert_true(u.epsilon == t.epsilon);
    assert_int_equal(u.expires_at_ms, t.expires_at_ms);
    assert_true(u.propensity == t.propensity);
    assert_int_equal(u.policy_version, t.policy_version);
    assert_memory_equal(u.random, t.random, 8);
    /* the same key derives again from the same secret key */
    agg_token_key again;
    make(&again, &u, 7);
    assert_memory_equal(again.k, key.k, sizeof key.k);
    agg_token_key_wipe(&key);
    agg_token_key zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(key.k, zero.k, sizeof zero.k);
}

static void test_forgeries(void **state)
{
    (void)state;
    agg_token_key key, other;
    agg_token t, u;
    make(&key, &t, 7);
    make(&other, &u, 8);
    uint8_t id[AGG_TOKEN_BYTES], bad[AGG_TOKEN_BYTES + 1];
    assert_int_equal(agg_token_seal(&key, &t, id), LDPB_OK);
    for (size_t i = 0; i < sizeof id; i++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(bad, id, sizeof id);
            bad[i] ^= (uint8_t)(1u << bit);
            assert_int_equal(agg_token_open(&key, bad, sizeof id, &u), LDPB_ENOTFOUND);
        }
    assert_int_equal(agg_token_open(&other, id, sizeof id, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&key, id, sizeof id - 1, &u), LDPB_ENOTFOUND);
    memcpy(bad, id, sizeof id);
    bad[sizeof id] = 0;
    assert_int_equal(agg_token_open(&key, bad, sizeof bad, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&key, id, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(NULL, id, sizeof id, &u), LDPB_EINVAL);
    assert_int_equal(agg_token_seal(&key, NULL, id), LDPB_EINVAL);
    assert_int_equal(agg_token_key_derive(NULL, id), LDPB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_forgeries),
    };
    return cmocka_run_group_tests_name("assign_token", tests, NULL, NULL);
}
