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

/* A key as a migrated state has it: bound to a state (version 3) and accepting versions 1 and 2. */
static void make(agg_token_key *key, agg_token *t, uint8_t sk_byte)
{
    uint8_t sk[LDPB_KEY_BYTES], state_id[AGG_TOKEN_STATE_BYTES];
    memset(sk, sk_byte, sizeof sk);
    memset(state_id, 0x5a, sizeof state_id);
    assert_int_equal(agg_token_key_derive(key, sk), LDPB_OK);
    assert_int_equal(agg_token_key_bind_state(key, sk, state_id, 1), LDPB_OK);
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
    id[0] = 4; /* an unknown version */
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

/* A key bound to a state issues version 3, which only a key bound to the same state opens (the
 * same secret key bound to another state refuses it: a state started anew after its database was
 * lost never counts the old state's reports again). Versions 1 and 2 open only where `legacy`
 * (a migrated state). Contextual tokens follow the same rules. The MAC is BLAKE2b-128 over the 46
 * body bytes under K3 = BLAKE2b-256(key = sk, "ldpb assignment token key v3" || state id), as
 * docs/aggregator.md writes it. */
static void test_state_binding(void **state)
{
    (void)state;
    uint8_t sk[LDPB_KEY_BYTES], s1[AGG_TOKEN_STATE_BYTES], s2[AGG_TOKEN_STATE_BYTES];
    memset(sk, 9, sizeof sk);
    memset(s1, 0xa1, sizeof s1);
    memcpy(s2, s1, sizeof s2);
    s2[15] ^= 1;
    agg_token_key unbound, a, a_legacy, b;
    agg_token t, u;
    make(&unbound, &t, 9);
    assert_int_equal(agg_token_key_derive(&unbound, sk), LDPB_OK);
    make(&a, &t, 9);
    make(&a_legacy, &t, 9);
    make(&b, &t, 9);
    assert_int_equal(agg_token_key_bind_state(&a, sk, s1, 0), LDPB_OK);
    assert_int_equal(agg_token_key_bind_state(&a_legacy, sk, s1, 1), LDPB_OK);
    assert_int_equal(agg_token_key_bind_state(&b, sk, s2, 0), LDPB_OK);
    assert_int_equal(agg_token_key_bind_state(NULL, sk, s1, 0), LDPB_EINVAL);

    uint8_t id[AGG_TOKEN_BYTES], v2[AGG_TOKEN_BYTES];
    assert_int_equal(agg_token_seal(&a, &t, id), LDPB_OK);
    assert_int_equal(id[0], 3);
    assert_int_equal(agg_token_open(&a, id, sizeof id, &u), LDPB_OK);
    assert_same_token(&u, &t);
    assert_int_equal(agg_token_open(&a_legacy, id, sizeof id, &u), LDPB_OK);
    assert_int_equal(agg_token_open(&b, id, sizeof id, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&unbound, id, sizeof id, &u), LDPB_ENOTFOUND);

    /* the MAC, recomputed from the documented derivation */
    static const char ctx[] = "ldpb assignment token key v3";
    uint8_t msg[sizeof ctx - 1 + AGG_TOKEN_STATE_BYTES], k3[32], mac[AGG_TOKEN_MAC_BYTES];
    memcpy(msg, ctx, sizeof ctx - 1);
    memcpy(msg + sizeof ctx - 1, s1, sizeof s1);
    assert_int_equal(crypto_generichash(k3, sizeof k3, msg, sizeof msg, sk, sizeof sk), 0);
    assert_int_equal(crypto_generichash(mac, sizeof mac, id, AGG_TOKEN_BODY_BYTES, k3, sizeof k3),
                     0);
    assert_memory_equal(mac, id + AGG_TOKEN_BODY_BYTES, sizeof mac);

    /* the format before identities */
    assert_int_equal(agg_token_seal(&unbound, &t, v2), LDPB_OK);
    assert_int_equal(v2[0], 2);
    assert_int_equal(agg_token_open(&unbound, v2, sizeof v2, &u), LDPB_OK);
    assert_int_equal(agg_token_open(&a, v2, sizeof v2, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&b, v2, sizeof v2, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&a_legacy, v2, sizeof v2, &u), LDPB_OK);
    assert_same_token(&u, &t);
    /* a version-2 body relabelled 3 (or the reverse) fails the MAC */
    uint8_t x[AGG_TOKEN_BYTES];
    memcpy(x, v2, sizeof x);
    x[0] = 3;
    assert_int_equal(agg_token_open(&a_legacy, x, sizeof x, &u), LDPB_ENOTFOUND);
    memcpy(x, id, sizeof x);
    x[0] = 2;
    assert_int_equal(agg_token_open(&a_legacy, x, sizeof x, &u), LDPB_ENOTFOUND);

    const double f[2] = {0.5, 0.25};
    assert_int_equal(agg_token_seal_bound(&a, &t, f, 2, id), LDPB_OK);
    assert_int_equal(id[0], 3);
    assert_int_equal(agg_token_open_bound(&a, id, sizeof id, f, 2, &u), LDPB_OK);
    assert_int_equal(agg_token_open_bound(&b, id, sizeof id, f, 2, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_seal_bound(&unbound, &t, f, 2, v2), LDPB_OK);
    assert_int_equal(agg_token_open_bound(&a, v2, sizeof v2, f, 2, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_bound(&a_legacy, v2, sizeof v2, f, 2, &u), LDPB_OK);
}

/* Experiments (issue 18): "default" keeps version 3 byte for byte; another experiment's id is
 * version 4 and opens only in that experiment, with exactly its MAC input (body || u8 len || name,
 * features between for a contextual one). */
static void test_experiment_binding(void **state)
{
    (void)state;
    agg_token_key key;
    agg_token t, u;
    make(&key, &t, 7);
    uint8_t v3[AGG_TOKEN_BYTES], d[AGG_TOKEN_BYTES], x[AGG_TOKEN_BYTES], y[AGG_TOKEN_BYTES];
    assert_int_equal(agg_token_seal(&key, &t, v3), LDPB_OK);
    /* default, by each spelling: the very bytes of version 3 */
    assert_int_equal(agg_token_seal_in(&key, NULL, &t, NULL, 0, d), LDPB_OK);
    assert_memory_equal(d, v3, sizeof d);
    assert_int_equal(agg_token_seal_in(&key, "default", &t, NULL, 0, d), LDPB_OK);
    assert_memory_equal(d, v3, sizeof d);
    assert_int_equal(agg_token_seal_in(&key, "exp-a", &t, NULL, 0, x), LDPB_OK);
    assert_int_equal(x[0], AGG_TOKEN_VERSION_EXP);
    assert_memory_equal(x + 1, v3 + 1, AGG_TOKEN_BODY_BYTES - 1); /* same body but the version */
    assert_int_equal(agg_token_open_in(&key, "exp-a", x, sizeof x, NULL, 0, &u), LDPB_OK);
    assert_same_token(&u, &t);
    /* the MAC is BLAKE2b-128 keyed by k3 over body || u8 len || name */
    uint8_t msg[AGG_TOKEN_BODY_BYTES + 1 + 5], mac[AGG_TOKEN_MAC_BYTES];
    memcpy(msg, x, AGG_TOKEN_BODY_BYTES);
    msg[AGG_TOKEN_BODY_BYTES] = 5;
    memcpy(msg + AGG_TOKEN_BODY_BYTES + 1, "exp-a", 5);
    assert_int_equal(crypto_generichash(mac, sizeof mac, msg, sizeof msg, key.k3, 32), 0);
    assert_memory_equal(mac, x + AGG_TOKEN_BODY_BYTES, sizeof mac);
    /* in any other experiment, default included, it is unknown; and the other way round */
    assert_int_equal(agg_token_open_in(&key, "exp-b", x, sizeof x, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, "exp-", x, sizeof x, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, NULL, x, sizeof x, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open(&key, x, sizeof x, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, "exp-a", v3, sizeof v3, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, "default", v3, sizeof v3, NULL, 0, &u), LDPB_OK);
    /* a version 3 id relabelled 4 does not open in any experiment */
    memcpy(y, v3, sizeof y);
    y[0] = AGG_TOKEN_VERSION_EXP;
    assert_int_equal(agg_token_open_in(&key, "exp-a", y, sizeof y, NULL, 0, &u), LDPB_ENOTFOUND);
    /* bound to features: those features in that experiment only */
    const double f[3] = {0.25, -1.0, 3.5}, g[3] = {0.25, -1.0, 3.25};
    assert_int_equal(agg_token_seal_in(&key, "exp-a", &t, f, 3, y), LDPB_OK);
    assert_int_equal(agg_token_open_in(&key, "exp-a", y, sizeof y, f, 3, &u), LDPB_OK);
    assert_same_token(&u, &t);
    assert_int_equal(agg_token_open_in(&key, "exp-a", y, sizeof y, g, 3, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, "exp-b", y, sizeof y, f, 3, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_open_in(&key, "exp-a", y, sizeof y, NULL, 0, &u), LDPB_ENOTFOUND);
    assert_int_equal(agg_token_seal_in(&key, "default", &t, f, 3, d), LDPB_OK);
    assert_int_equal(agg_token_seal_bound(&key, &t, f, 3, v3), LDPB_OK);
    assert_memory_equal(d, v3, sizeof d);
    /* an unbound key never issues version 4 */
    agg_token_key unbound;
    uint8_t sk[LDPB_KEY_BYTES];
    memset(sk, 7, sizeof sk);
    assert_int_equal(agg_token_key_derive(&unbound, sk), LDPB_OK);
    assert_int_equal(agg_token_seal_in(&unbound, "exp-a", &t, NULL, 0, y), LDPB_ECRYPTO);
    assert_int_equal(agg_token_open_in(&unbound, "exp-a", x, sizeof x, NULL, 0, &u),
                     LDPB_ENOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),          cmocka_unit_test(test_forgeries),
        cmocka_unit_test(test_ids_sort_by_expiry), cmocka_unit_test(test_version1_still_opens),
        cmocka_unit_test(test_bound_features),     cmocka_unit_test(test_state_binding),
        cmocka_unit_test(test_experiment_binding),
    };
    return cmocka_run_group_tests_name("assign_token", tests, NULL, NULL);
}
