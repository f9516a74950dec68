/* Encoding and MAC of assignment tokens (assign_token.h has the layout and the reasons). */
#include <string.h>

#include <sodium.h>

#include "assign_token.h"
#include "le_bytes.h"

static const char token_context[] = "ldpb assignment token key v1";
static const char state_context[] = "ldpb assignment token key v3";

static uint64_t dbl_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bits_dbl(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

ldpb_err agg_token_key_derive(agg_token_key *out, const uint8_t server_sk[LDPB_KEY_BYTES])
{
    if (!out || !server_sk)
        return LDPB_EINVAL;
    memset(out, 0, sizeof *out); /* unbound until agg_token_key_bind_state */
    if (sodium_init() < 0 ||
        crypto_generichash(out->k, sizeof out->k, (const uint8_t *)token_context,
                           sizeof token_context - 1, server_sk, LDPB_KEY_BYTES) != 0) {
        sodium_memzero(out, sizeof *out);
        return LDPB_ECRYPTO;
    }
    return LDPB_OK;
}

ldpb_err agg_token_key_bind_state(agg_token_key *key, const uint8_t server_sk[LDPB_KEY_BYTES],
                                  const uint8_t state_id[AGG_TOKEN_STATE_BYTES], int legacy)
{
    if (!key || !server_sk || !state_id)
        return LDPB_EINVAL;
    uint8_t msg[sizeof state_context - 1 + AGG_TOKEN_STATE_BYTES];
    memcpy(msg, state_context, sizeof state_context - 1);
    memcpy(msg + sizeof state_context - 1, state_id, AGG_TOKEN_STATE_BYTES);
    if (sodium_init() < 0 || crypto_generichash(key->k3, sizeof key->k3, msg, sizeof msg, server_sk,
                                                LDPB_KEY_BYTES) != 0) {
        sodium_memzero(key, sizeof *key);
        return LDPB_ECRYPTO;
    }
    key->bound = 1;
    key->legacy = legacy != 0;
    return LDPB_OK;
}

void agg_token_key_wipe(agg_token_key *key)
{
    if (key)
        sodium_memzero(key, sizeof *key);
}

/* The key of a token's version (its first byte): NULL where this key does not accept it. */
static const uint8_t *key_of(const agg_token_key *key, uint8_t version)
{
    if (version == AGG_TOKEN_VERSION)
        return key->bound ? key->k3 : NULL;
    if (version == 2 || version == 1)
        return !key->bound || key->legacy ? key->k : NULL;
    return NULL;
}

static int mac(const agg_token_key *key, const uint8_t *body, uint8_t out[AGG_TOKEN_MAC_BYTES])
{
    const uint8_t *k = key_of(key, body[0]);
    if (!k)
        return -1;
    return crypto_generichash(out, AGG_TOKEN_MAC_BYTES, body, AGG_TOKEN_BODY_BYTES, k, 32);
}

static void decode(const uint8_t *id, agg_token *out);

/* The body (AGG_TOKEN_BODY_BYTES) of `t` with version byte `version` into id. */
static void encode(uint8_t version, const agg_token *t, uint8_t *id)
{
    uint8_t *p = id;
    *p++ = version;
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)(t->expires_at_ms >> (8 * i));
    agg_put_le(p, t->arm, 4);
    p += 4;
    *p++ = t->mechanism;
    agg_put_le(p, dbl_bits(t->epsilon), 8);
    p += 8;
    agg_put_le(p, dbl_bits(t->propensity), 8);
    p += 8;
    agg_put_le(p, t->policy_version, 8);
    p += 8;
    memcpy(p, t->random, AGG_TOKEN_RANDOM_BYTES);
}

ldpb_err agg_token_seal(const agg_token_key *key, const agg_token *t, uint8_t id[AGG_TOKEN_BYTES])
{
    if (!key || !t || !id)
        return LDPB_EINVAL;
    encode(key->bound ? AGG_TOKEN_VERSION : 2u, t, id); /* unbound: the previous format */
    if (mac(key, id, id + AGG_TOKEN_BODY_BYTES) != 0)
        return LDPB_ECRYPTO;
    return LDPB_OK;
}

ldpb_err agg_token_open(const agg_token_key *key, const uint8_t *id, size_t len, agg_token *out)
{
    if (!key || !out || (!id && len))
        return LDPB_EINVAL;
    if (len != AGG_TOKEN_BYTES || !key_of(key, id[0]))
        return LDPB_ENOTFOUND;
    uint8_t want[AGG_TOKEN_MAC_BYTES];
    if (mac(key, id, want) != 0)
        return LDPB_ECRYPTO;
    if (sodium_memcmp(want, id + AGG_TOKEN_BODY_BYTES, AGG_TOKEN_MAC_BYTES) != 0)
        return LDPB_ENOTFOUND;
    decode(id, out);
    return LDPB_OK;
}

/* The body of an authentic token of any version into `out`. */
static void decode(const uint8_t *id, agg_token *out)
{
    const uint8_t *p = id + 1;
    if (id[0] != 1) { /* versions 2 and 3 */
        out->expires_at_ms = 0;
        for (int i = 0; i < 8; i++)
            out->expires_at_ms = out->expires_at_ms << 8 | *p++;
    }
    out->arm = (uint32_t)agg_get_le(p, 4);
    p += 4;
    out->mechanism = *p++;
    out->epsilon = bits_dbl(agg_get_le(p, 8));
    p += 8;
    if (id[0] == 1) {
        out->expires_at_ms = agg_get_le(p, 8);
        p += 8;
    }
    out->propensity = bits_dbl(agg_get_le(p, 8));
    p += 8;
    out->policy_version = agg_get_le(p, 8);
    p += 8;
    memcpy(out->random, p, AGG_TOKEN_RANDOM_BYTES);
}

/* The MAC of a contextual assignment covers the body, a domain string and the chosen arm's
 * features as little-endian IEEE doubles: the body has a fixed length, so the input is
 * unambiguous, and a token of one kind never verifies as the other. */
static const char bound_context[] = "ldpb contextual features v1";

static int mac_bound(const agg_token_key *key, const uint8_t *body, const double *x, size_t n,
                     uint8_t out[AGG_TOKEN_MAC_BYTES])
{
    crypto_generichash_state st;
    const uint8_t *k = key_of(key, body[0]);
    if (!k || crypto_generichash_init(&st, k, 32, AGG_TOKEN_MAC_BYTES) != 0)
        return -1;
    crypto_generichash_update(&st, body, AGG_TOKEN_BODY_BYTES);
    crypto_generichash_update(&st, (const uint8_t *)bound_context, sizeof bound_context - 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t b[8];
        agg_put_le(b, dbl_bits(x[i]), 8);
        crypto_generichash_update(&st, b, sizeof b);
    }
    return crypto_generichash_final(&st, out, AGG_TOKEN_MAC_BYTES);
}

ldpb_err agg_token_seal_bound(const agg_token_key *key, const agg_token *t, const double *x,
                              size_t n, uint8_t id[AGG_TOKEN_BYTES])
{
    if (!x && n)
        return LDPB_EINVAL;
    ldpb_err err = agg_token_seal(key, t, id);
    if (!err && mac_bound(key, id, x, n, id + AGG_TOKEN_BODY_BYTES) != 0)
        err = LDPB_ECRYPTO;
    return err;
}

ldpb_err agg_token_open_bound(const agg_token_key *key, const uint8_t *id, size_t len,
                              const double *x, size_t n, agg_token *out)
{
    if (!key || !out || (!id && len) || (!x && n))
        return LDPB_EINVAL;
    if (len != AGG_TOKEN_BYTES || id[0] == 1 || !key_of(key, id[0]))
        return LDPB_ENOTFOUND;
    uint8_t want[AGG_TOKEN_MAC_BYTES], plain[AGG_TOKEN_BYTES];
    if (mac_bound(key, id, x, n, want) != 0)
        return LDPB_ECRYPTO;
    if (sodium_memcmp(want, id + AGG_TOKEN_BODY_BYTES, AGG_TOKEN_MAC_BYTES) != 0)
        return LDPB_ENOTFOUND;
    /* Authentic: decode the body through the unbound path. */
    memcpy(plain, id, AGG_TOKEN_BODY_BYTES);
    if (mac(key, plain, plain + AGG_TOKEN_BODY_BYTES) != 0)
        return LDPB_ECRYPTO;
    return agg_token_open(key, plain, sizeof plain, out);
}

/* ---- version 4: an experiment other than "default" ---------------------------------------- */

static int is_default(const char *experiment)
{
    return !experiment || !experiment[0] || strcmp(experiment, "default") == 0;
}

/* Version 4's MAC (k3): the body, then -- for a contextual assignment -- the domain string and
 * the features as in version 3, then the experiment's name prefixed by its length (at most 255
 * bytes, so the input stays unambiguous). */
static int mac_exp(const agg_token_key *key, const uint8_t *body, const double *x, size_t n,
                   const char *experiment, uint8_t out[AGG_TOKEN_MAC_BYTES])
{
    size_t len = strlen(experiment);
    crypto_generichash_state st;
    if (!key->bound || len > 255 || crypto_generichash_init(&st, key->k3, 32, AGG_TOKEN_MAC_BYTES))
        return -1;
    crypto_generichash_update(&st, body, AGG_TOKEN_BODY_BYTES);
    if (x) {
        crypto_generichash_update(&st, (const uint8_t *)bound_context, sizeof bound_context - 1);
        for (size_t i = 0; i < n; i++) {
            uint8_t b[8];
            agg_put_le(b, dbl_bits(x[i]), 8);
            crypto_generichash_update(&st, b, sizeof b);
        }
    }
    uint8_t l = (uint8_t)len;
    crypto_generichash_update(&st, &l, 1);
    crypto_generichash_update(&st, (const uint8_t *)experiment, len);
    return crypto_generichash_final(&st, out, AGG_TOKEN_MAC_BYTES);
}

ldpb_err agg_token_seal_in(const agg_token_key *key, const char *experiment, const agg_token *t,
                           const double *x, size_t n, uint8_t id[AGG_TOKEN_BYTES])
{
    if (is_default(experiment))
        return x ? agg_token_seal_bound(key, t, x, n, id) : agg_token_seal(key, t, id);
    if (!key || !t || !id)
        return LDPB_EINVAL;
    if (!key->bound)
        return LDPB_ECRYPTO; /* experiments came with state identities: never unbound */
    encode(AGG_TOKEN_VERSION_EXP, t, id);
    if (mac_exp(key, id, x, n, experiment, id + AGG_TOKEN_BODY_BYTES) != 0)
        return LDPB_ECRYPTO;
    return LDPB_OK;
}

ldpb_err agg_token_open_in(const agg_token_key *key, const char *experiment, const uint8_t *id,
                           size_t len, const double *x, size_t n, agg_token *out)
{
    if (is_default(experiment))
        return x ? agg_token_open_bound(key, id, len, x, n, out)
                 : agg_token_open(key, id, len, out);
    if (!key || !out || (!id && len))
        return LDPB_EINVAL;
    if (len != AGG_TOKEN_BYTES || id[0] != AGG_TOKEN_VERSION_EXP || !key->bound ||
        strlen(experiment) > 255)
        return LDPB_ENOTFOUND;
    uint8_t want[AGG_TOKEN_MAC_BYTES];
    if (mac_exp(key, id, x, n, experiment, want) != 0)
        return LDPB_ECRYPTO;
    if (sodium_memcmp(want, id + AGG_TOKEN_BODY_BYTES, AGG_TOKEN_MAC_BYTES) != 0)
        return LDPB_ENOTFOUND;
    decode(id, out);
    return LDPB_OK;
}
