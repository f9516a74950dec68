/* Assignments are stateless tokens: the assignment id the client receives carries everything the
 * aggregator needs to accept the report later (arm, mechanism, epsilon, expiry, propensity, policy
 * version) under a MAC keyed by a key derived from the aggregator's secret key and the identity of
 * its state (state_id.h). Issuing an assignment therefore writes nothing to disk, and a report for
 * an id the aggregator never issued (forged, corrupted, issued under another key, or issued by
 * another state under the same key: one whose database was lost and started anew) fails the MAC:
 * "unknown assignment".
 *
 * Layout (AGG_TOKEN_BYTES = 62), version 3:
 *   version u8 (3) | expires_at_ms u64 BIG-endian | arm u32 | mechanism u8 (wire enum) |
 *   epsilon f64 | propensity f64 | policy_version u64 | random[8] | MAC[16]
 * (little-endian but for the expiry). MAC = BLAKE2b-128 keyed (crypto_generichash) over the
 * first 46 bytes, with the state key K3 = BLAKE2b-256 keyed by the server's secret key over the
 * ASCII string "ldpb assignment token key v3" followed by the 16 bytes of the state identity.
 * The big-endian expiry first makes ids sort by issue time, so the state's tables, keyed by
 * assignment id, grow at their right edge: a commit dirties a few B-tree pages instead of one
 * random page per row, and an old, large state does not turn every insert into a disk read.
 * Versions 2 (the same bytes, version 2) and 1 (version u8 (1) | arm u32 | mechanism u8 |
 * epsilon f64 | expires_at_ms u64 | propensity f64 | policy_version u64 | random[8] | MAC[16])
 * were issued before states had identities, under K = BLAKE2b-256 keyed by the secret key over
 * "ldpb assignment token key v1": they are accepted only by a state migrated from that time
 * (agg_store_legacy_tokens), never by a state created with its identity.
 *
 * Version 4 (experiments other than "default", docs/protocol.md): the version 3 layout with
 * version u8 (4), and the MAC (K3) over the 46 bytes of the body, then -- a contextual
 * assignment's -- the ASCII string "ldpb contextual features v1" and the features as in version 3,
 * then u8 name_len || name, the experiment's name. A report naming another experiment than the
 * one its assignment was issued in fails the MAC. The default experiment keeps version 3 byte for
 * byte, so outstanding ids and old clients keep working.
 *
 * Thread safety: reentrant; a key is read-only after derivation. */
#ifndef LDPB_AGG_ASSIGN_TOKEN_H
#define LDPB_AGG_ASSIGN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/seal.h"

#define AGG_TOKEN_VERSION      3u
#define AGG_TOKEN_VERSION_EXP  4u
#define AGG_TOKEN_STATE_BYTES  16u /* AGG_STATE_ID_BYTES */
#define AGG_TOKEN_RANDOM_BYTES 8u
#define AGG_TOKEN_MAC_BYTES    16u
#define AGG_TOKEN_BODY_BYTES   46u
#define AGG_TOKEN_BYTES        (AGG_TOKEN_BODY_BYTES + AGG_TOKEN_MAC_BYTES)

typedef struct agg_token {
    uint32_t arm;
    uint8_t mechanism; /* Ldpb__V1__Mechanism value */
    double epsilon;
    uint64_t expires_at_ms;
    double propensity;
    uint64_t policy_version;
    uint8_t random[AGG_TOKEN_RANDOM_BYTES];
} agg_token;

/* The MAC keys: BLAKE2b-256 keyed by the aggregator's secret key, so tokens survive a restart of
 * the same state and die with a key rotation or a new state. Secret. */
typedef struct agg_token_key {
    uint8_t k[32];  /* versions 1 and 2: the secret key alone */
    uint8_t k3[32]; /* version 3: the secret key and the state identity */
    int bound;      /* k3 is set: seal writes version 3 */
    int legacy;     /* open accepts versions 1 and 2 (with k) */
} agg_token_key;

/* Derives the legacy key k from the server's X25519 secret key: such a key alone seals and opens
 * version 2 (tests, and what the previous format was). LDPB_EINVAL (NULL), LDPB_ECRYPTO. */
ldpb_err agg_token_key_derive(agg_token_key *out, const uint8_t server_sk[LDPB_KEY_BYTES]);

/* Binds a derived key to a state: from then on seal writes version 3 under k3 and open accepts
 * version 3 under k3, and versions 1 and 2 only if `legacy` (a migrated state). LDPB_EINVAL
 * (NULL), LDPB_ECRYPTO. */
ldpb_err agg_token_key_bind_state(agg_token_key *key, const uint8_t server_sk[LDPB_KEY_BYTES],
                                  const uint8_t state_id[AGG_TOKEN_STATE_BYTES], int legacy);

/* Zeroes the key. Accepts NULL. */
void agg_token_key_wipe(agg_token_key *key);

/* Writes the token `t` with its MAC into `id`. LDPB_EINVAL (NULL), LDPB_ECRYPTO. */
ldpb_err agg_token_seal(const agg_token_key *key, const agg_token *t, uint8_t id[AGG_TOKEN_BYTES]);

/* Verifies and decodes an assignment id received from a client. LDPB_ENOTFOUND for anything that
 * is not a token this key issued (wrong length, unknown version, MAC mismatch, compared in
 * constant time); LDPB_EINVAL for NULL. *out is written only on success. */
ldpb_err agg_token_open(const agg_token_key *key, const uint8_t *id, size_t len, agg_token *out);

/* A contextual policy's assignment (docs/protocol.md, "Contexts"): the MAC also covers the n
 * features x of the assigned arm, so the report that resends them is accepted only with exactly
 * the vector the policy chose, and the aggregator keeps no per-assignment state. Same errors as
 * seal/open; a token opened with other features (or sealed unbound) is LDPB_ENOTFOUND. */
ldpb_err agg_token_seal_bound(const agg_token_key *key, const agg_token *t, const double *x,
                              size_t n, uint8_t id[AGG_TOKEN_BYTES]);
ldpb_err agg_token_open_bound(const agg_token_key *key, const uint8_t *id, size_t len,
                              const double *x, size_t n, agg_token *out);

/* The token of an assignment in `experiment` (NULL, "" or "default": the default experiment, whose
 * tokens are version 3 as agg_token_seal / agg_token_seal_bound write them; any other name:
 * version 4, which needs a bound key). Bound to the features x[0..n) when x is not NULL. Errors as
 * agg_token_seal; LDPB_ECRYPTO for a version 4 token under an unbound key. */
ldpb_err agg_token_seal_in(const agg_token_key *key, const char *experiment, const agg_token *t,
                           const double *x, size_t n, uint8_t id[AGG_TOKEN_BYTES]);
/* Opens a token as issued in `experiment` (as agg_token_seal_in): LDPB_ENOTFOUND for a token of
 * another experiment too. */
ldpb_err agg_token_open_in(const agg_token_key *key, const char *experiment, const uint8_t *id,
                           size_t len, const double *x, size_t n, agg_token *out);

#endif
