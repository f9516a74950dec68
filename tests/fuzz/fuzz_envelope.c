/* Fuzz target for the Envelope decoder (the plaintext of a sealed frame). A refused input must
 * fail with a protocol error and allocate nothing it keeps; an accepted one must pass the
 * sender's checks, re-encode (unless canonical re-encoding outgrows the limit), decode again,
 * and re-encode to the same bytes; ldpb_envelope_peek must agree with the decoder. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ldpb/wire.h"

static void check_accepted(const Ldpb__V1__Envelope *env, const uint8_t *data, size_t size)
{
    if (ldpb_envelope_check(env, NULL) != LDPB_OK)
        abort();
    uint32_t version;
    uint64_t rid;
    int has_rid;
    if (ldpb_envelope_peek(data, size, &version, &rid, &has_rid, NULL) != LDPB_OK ||
        version != LDPB_PROTOCOL_VERSION || has_rid != (int)env->has_request_id ||
        rid != env->request_id)
        abort();
    uint8_t *a = malloc(LDPB_PLAINTEXT_MAX), *b = malloc(LDPB_PLAINTEXT_MAX);
    if (!a || !b)
        abort();
    size_t la, lb;
    ldpb_err err = ldpb_envelope_encode(env, a, LDPB_PLAINTEXT_MAX, &la, NULL);
    if (err == LDPB_ERANGE && ldpb__v1__envelope__get_packed_size(env) > LDPB_PLAINTEXT_MAX)
        goto done; /* e.g. a lone unpacked double re-encodes one byte longer, packed */
    if (err != LDPB_OK)
        abort();
    Ldpb__V1__Envelope *again = NULL;
    if (ldpb_envelope_decode(a, la, &again, NULL) != LDPB_OK)
        abort();
    if (ldpb_envelope_encode(again, b, LDPB_PLAINTEXT_MAX, &lb, NULL) != LDPB_OK || la != lb ||
        memcmp(a, b, la) != 0)
        abort();
    ldpb_envelope_free(again);
done:
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Ldpb__V1__Envelope *env = (Ldpb__V1__Envelope *)&env;
    char detail[LDPB_DETAIL_BYTES];
    ldpb_err err = ldpb_envelope_decode(data, size, &env, detail);
    if (err != LDPB_OK) {
        if (env != NULL || (err != LDPB_EPROTO && err != LDPB_EVERSION && err != LDPB_ENOMEM &&
                            err != LDPB_ENOTSUP))
            abort();
        if (memchr(detail, '\0', sizeof detail) == NULL)
            abort();
        return 0;
    }
    check_accepted(env, data, size);
    ldpb_envelope_free(env);
    return 0;
}
