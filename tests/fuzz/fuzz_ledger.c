/* Fuzz target for the ledger file parser (formats 1 to 3). Each input is parsed twice: as given
 * (the checksum almost always fails, which tests the outer checks) and with its last 32 bytes
 * replaced by the correct BLAKE2b of the rest, so the structural checks behind the checksum are
 * reached too. An accepted image must satisfy the ledger's invariants and re-encode to exactly the
 * same bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ldpb/wire.h"
#include "ledger_internal.h"

static void parse_and_check(const uint8_t *buf, size_t len)
{
    ledger_state st;
    ledger_state_init(&st);
    ldpb_err err = ledger_parse(buf, len, &st);
    if (err != LDPB_OK) {
        if ((err != LDPB_ECORRUPT && err != LDPB_ENOMEM) || st.count != 0 || st.recs || st.slots)
            abort();
        return;
    }
    if (ledger_check_limits(st.budget, st.cap) != LDPB_OK || st.spent_units > st.budget_units ||
        st.count > LDPB_LEDGER_ENTRIES_MAX)
        abort();
    if (ledger_check_delta_limits(st.delta_budget, st.delta_cap) != LDPB_OK ||
        st.delta_spent_units > st.delta_budget_units)
        abort();
    uint64_t charged = 0, delta_charged = 0;
    for (size_t i = 0; i < st.count; i++) {
        const ledger_record *r = &st.recs[i];
        if (ledger_state_find(&st, r->id, r->id_len) != r)
            abort();
        charged += ledger_charge_units(r->epsilon);
        if (r->delta > 0.0)
            delta_charged += ledger_delta_units(r->delta);
        if ((r->vec != NULL) != (r->delta > 0.0))
            abort();
        if (r->exp > st.n_exps) /* format 3: 0 "default", else 1 + an index of the table */
            abort();
    }
    for (size_t i = 0; i < st.n_exps; i++) {
        size_t n = strlen(st.exps[i]);
        if (!ldpb_wire_experiment_valid(st.exps[i], n) || strcmp(st.exps[i], "default") == 0 ||
            (i > 0 && strcmp(st.exps[i - 1], st.exps[i]) >= 0))
            abort();
    }
    if (charged > st.spent_units || delta_charged > st.delta_spent_units)
        abort();
    uint8_t *enc = NULL;
    size_t enc_len = 0;
    if (ledger_encode(&st, &enc, &enc_len) == LDPB_OK &&
        (enc_len != len || memcmp(enc, buf, len) != 0))
        abort();
    free(enc);
    ledger_state_fini(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sodium_init() < 0)
        abort();
    parse_and_check(data, size);
    if (size >= LEDGER_CHECKSUM_BYTES) {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        size_t body = size - LEDGER_CHECKSUM_BYTES;
        crypto_generichash(copy + body, LEDGER_CHECKSUM_BYTES, copy, body, NULL, 0);
        parse_and_check(copy, size);
        free(copy);
    }
    return 0;
}
