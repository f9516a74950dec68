/* Assignment tokens: exact round trip, and every corruption or foreign key is "unknown". */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sodium.h>

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

static void assert_same_token(const agg_token *u, const agg_token *t)
{
    assert_int_equal(u->arm, t->arm);
    assert_int_equal(u->mechanism, t->mechanism);
    assert_true(u->epsilon == t->epsilon);
    assert_int_equal(u->expires_at_ms, t->expires_at_ms);
    assert_true(u->propensity == t->propensity);
    assert_int_equal(u->policy_version, t->policy_version);
    assert_memory_equal(u->random, t->random, AGG_TOKEN_RANDOM_BYTES);
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
    assert_same_token(&u, &t);
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

/* Ids compare (memcmp, as SQLite orders BLOB keys) in the order of their expiry, whatever the
 * other fields: the state's tables then grow at one end. */
static void test_ids_sort_by_expiry(void **state)
{
    (void)state;
    agg_token_key key;
    agg_token t;
    make(&key, &t, 9);
    uint8_t prev[AGG_TOKEN_BYTES], id[AGG_TOKEN_BYTES];
    for (int i = 0; i < 2000; i++) {
        t.expires_at_ms = 1700000000000ull + (uint64_t)i * 257u; /* crosses byte boundaries */
        t.arm = (uint32_t)(1999 - i) % 7u;
        t.propensity = 1.0 / (double)(i + 1);
        memcpy(t.random, &i, sizeof i);
        assert_int_equal(agg_token_seal(&key, &t, id), LDPB_OK);
        if (i > 0)
            assert_true(memcmp(prev, id, sizeof id) < 0);
        memcpy(prev, id, sizeof id);
    }
}

/* A version 1 id (the layout issued before version 2), built by hand with a valid MAC, still
 * opens to the same fields: assignments outstanding across an upgrade keep their reports. */
static void test_version1_still_opens(void **state)
{
    (void)state;
    agg_token_key key;
    agg_token t, u;
    make(&key, &t, 11);
    uint8_t id[AGG_TOKEN_BYTES];
    uint8_t *p = id;
    *p++ = 1;
    uint64_t fields[] = {t.arm, 0, 0, t.expires_at_ms, 0, t.policy_version};
    uint64_t eps_bits, prop_bits;
    memcpy(&eps_bits, &t.epsilon, 8);
    memcpy(&prop_bits, &t.propensity, 8);
    fields[2] = eps_bits;
    fields[4] = prop_bits;
    for (int b = 0; b < 4; b++)
        *p++ = (uint8_t)(fields[0] >> (8 * b));
    *p++ = t.mechanism;
    for (int f = 2; f < 6; f++)
        for (int b = 0; b < 8; b++)
            *p++ = (uint8_t)(fields[f] >> (8 * b));
    memcpy(p, t.random, AGG_TOKEN_RANDOM_BYTES);
    p += AGG_TOKEN_RANDOM_BYTES;
    assert_int_equal((int)(p - id), AGG_TOKEN_BODY_BYTES);
    assert_int_equal(
        crypto_generichash(p, AGG_TOKEN_MAC_BYTES, id, AGG_TOKEN_BODY_BYTES, key.k, sizeof key.k),
        0);
    assert_int_equal(agg_token_open(&key, id, sizeof id, &u), LDPB_OK);
    assert_same_token(&u, &t);
    id[0] = 3; /* an unknown version */
    assert_int_equal(agg_token_open(&key, id, sizeof id, &u), LDPB_ENOTFOUND);
}

/* A contextual token opens only with the exact features it was sealed with: another value (even
 * one bit, or -0.0 for 0.0), a shorter vector, an unbound open, and a bound open of an unbound
 * token are all "unknown". */
static void test_bound_features(void **state)
{
    (void)state;
    agg_token_key key;
    agg_token t, u;
    make(&key, &t, 9);
    const double x[3] = {0.6, 0.0, 0.8};
    uint8_t id[AGG_TOKEN_BYTES], plain[AGG_TOKEN_BYTES];
    assert_int_equal(agg_token_seal_bound(&key, &t, x, 3, id), LDPB_OK);
    assert_int_equal(agg_token_open_bound(&key, id, sizeof id, x, 3, &u), LDPB_OK);
    assert_same_token(&u, &t);
    double y[3] = {0.6, -0.0, 0.8};
    assert_int_equal(agg_token_open_bound(&key, id, sizeof id, y, 3, &u), LDPB_ENOTFOUND);
    y[1] = 0.0;
    y[2] = nextafter(0.8, 1.0);
    assert_int_equal(agg_token_open_bound(&key, id, sizeof id, y, 3, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_bound(&key, id, sizeof id, x, 2, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&key, id, sizeof id, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_seal(&key, &t, plain), LDPB_OK);
    assert_int_equal(agg_token_open_bound(&key, plain, sizeof plain, x, 3, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_bound(&key, plain, sizeof plain, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_bound(&key, id, sizeof id, NULL, 3, &u), LDPB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),          cmocka_unit_test(test_forgeries),
        cmocka_unit_test(test_ids_sort_by_expiry), cmocka_unit_test(test_version1_still_opens),
        cmocka_unit_test(test_bound_features),
    };
    return cmocka_run_group_tests_name("assign_token", tests, NULL, NULL);
}
