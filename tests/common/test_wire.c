/* The wire codec: every message round-trips; every limit is refused before protobuf-c allocates
 * anything (the allocator is wrapped and counted); every semantic rule is enforced on both sides
 * (LDPB_EINVAL/LDPB_ERANGE when encoding, LDPB_EPROTO when decoding the same bytes packed
 * without the checks); truncations at every length fail cleanly; frames, versions, error codes,
 * UTF-8; and out-of-memory during a decode leaks nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/mech.h"
#include "ldpb/wire.h"

/* Allocation counting and failure injection: linked with -Wl,--wrap=malloc,...
 * (tests/support/alloc_fail.h). */
#include "alloc_fail.h"

/* ---- helpers ------------------------------------------------------------------------------- */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint8_t buf[LDPB_FRAME_MAX + 64];

static uint8_t id16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void env_init(Ldpb__V1__Envelope *e)
{
    ldpb__v1__envelope__init(e);
    e->protocol_version = LDPB_PROTOCOL_VERSION;
    e->has_request_id = 1;
    e->request_id = 0x0123456789abcdefULL;
}

/* Packs `e` with protobuf-c alone, skipping ldpb's checks, as a hostile or buggy peer might. */
static size_t raw_pack(const Ldpb__V1__Envelope *e, uint8_t *out)
{
    size_t n = ldpb__v1__envelope__get_packed_size(e);
    assert_true(n <= LDPB_FRAME_MAX);
    return ldpb__v1__envelope__pack(e, out);
}

/* Decodes `n` bytes and requires LDPB_EPROTO without a single allocation: refused by the scan. */
static void refused_before_decoding(const uint8_t *p, size_t n)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    Ldpb__V1__Envelope *out = (Ldpb__V1__Envelope *)&out;
    alloc_fail_arm(-1);
    ldpb_err err = ldpb_envelope_decode(p, n, &out, detail);
    long calls = alloc_fail_calls();
    assert_int_equal(err, LDPB_EPROTO);
    assert_null(out);
    assert_int_equal(calls, 0);
    assert_true(detail[0] != '\0');
}

/* Encoding refuses with `want`; the same message packed without checks is refused by decode. */
static void refused_both_ways(const Ldpb__V1__Envelope *e, ldpb_err want)
{
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t len = 1;
    assert_int_equal(ldpb_envelope_check(e, detail), want);
    assert_true(detail[0] != '\0');
    assert_int_equal(ldpb_envelope_encode(e, buf, sizeof buf, &len, NULL), want);
    assert_int_equal(len, 0);
    uint8_t raw[4096];
    size_t n = raw_pack(e, raw);
    Ldpb__V1__Envelope *out = NULL;
    detail[0] = '\0';
    assert_int_equal(ldpb_envelope_decode(raw, n, &out, detail), LDPB_EPROTO);
    assert_null(out);
    assert_true(detail[0] != '\0');
}

/* Encodes, decodes, re-encodes: the decoded message must encode to the same bytes. */
static Ldpb__V1__Envelope *round_trip(const Ldpb__V1__Envelope *e)
{
    static uint8_t again[LDPB_PLAINTEXT_MAX];
    size_t len = 0, len2 = 0;
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = ldpb_envelope_encode(e, buf, sizeof buf, &len, detail);
    if (err)
        fail_msg("encode: %s (%s)", ldpb_errname(err), detail);
    assert_int_equal(len, ldpb__v1__envelope__get_packed_size(e));
    Ldpb__V1__Envelope *d = NULL;
    err = ldpb_envelope_decode(buf, len, &d, detail);
    if (err)
        fail_msg("decode: %s (%s)", ldpb_errname(err), detail);
    assert_non_null(d);
    assert_int_equal(d->protocol_version, LDPB_PROTOCOL_VERSION);
    assert_int_equal(d->has_request_id, e->has_request_id);
    assert_true(d->request_id == e->request_id);
    assert_int_equal(d->body_case, e->body_case);
    assert_int_equal(ldpb_envelope_encode(d, again, sizeof again, &len2, NULL), LDPB_OK);
    assert_int_equal(len2, len);
    assert_memory_equal(again, buf, len);
    return d;
}

/* ---- round trips ----------------------------------------------------------------------------- */

static void round_trip_assign_request(void **state)
{
    (void)state;
    double ctx[LDPB_WIRE_CONTEXT_MAX];
    for (size_t i = 0; i < COUNT(ctx); i++)
        ctx[i] = (double)i * -0.25 + 1e-300;
    Ldpb__V1__AssignRequest m = LDPB__V1__ASSIGN_REQUEST__INIT;
    m.n_context = COUNT(ctx);
    m.context = ctx;
    m.has_max_epsilon = 1;
    m.max_epsilon = 2.5;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    e.assign_request = &m;
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_int_equal(d->assign_request->n_context, COUNT(ctx));
    assert_memory_equal(d->assign_request->context, ctx, sizeof ctx);
    assert_true(d->assign_request->has_max_epsilon && d->assign_request->max_epsilon == 2.5);
    ldpb_envelope_free(d);

    /* an empty request: no context, no cap, no request id */
    Ldpb__V1__AssignRequest empty = LDPB__V1__ASSIGN_REQUEST__INIT;
    e.assign_request = &empty;
    e.has_request_id = 0;
    e.request_id = 0;
    d = round_trip(&e);
    assert_int_equal(d->assign_request->n_context, 0);
    assert_false(d->assign_request->has_max_epsilon);
    ldpb_envelope_free(d);
}

static void round_trip_assignment(void **state)
{
    (void)state;
    uint8_t id[LDPB_WIRE_ID_MAX];
    memset(id, 0xab, sizeof id);
    Ldpb__V1__Assignment m = LDPB__V1__ASSIGNMENT__INIT;
    m.assignment_id.data = id;
    m.assignment_id.len = sizeof id;
    m.arm = 4000000000u;
    m.mechanism = LDPB__V1__MECHANISM__QUADRATIC;
    m.epsilon = LDPB_EPSILON_MAX;
    m.expires_at_ms = UINT64_MAX;
    m.propensity = 1.0;
    m.has_kappa = 1;
    m.kappa = -1.0;
    m.has_policy_version = 1;
    m.policy_version = 7;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    e.assignment = &m;
    Ldpb__V1__Envelope *d = round_trip(&e);
    const Ldpb__V1__Assignment *a = d->assignment;
    assert_int_equal(a->assignment_id.len, sizeof id);
    assert_memory_equal(a->assignment_id.data, id, sizeof id);
    assert_int_equal(a->arm, 4000000000u);
    assert_int_equal(a->mechanism, LDPB__V1__MECHANISM__QUADRATIC);
    assert_true(a->epsilon == LDPB_EPSILON_MAX && a->propensity == 1.0);
    assert_true(a->expires_at_ms == UINT64_MAX);
    assert_true(a->has_kappa && a->kappa == -1.0);
    assert_true(a->has_policy_version && a->policy_version == 7);
    ldpb_envelope_free(d);

    /* RAW (central) assignments carry epsilon 0 and no kappa */
    m.mechanism = LDPB__V1__MECHANISM__RAW;
    m.epsilon = 0.0;
    m.has_kappa = 0;
    m.has_policy_version = 0;
    m.propensity = 1e-9;
    m.assignment_id.len = 1;
    d = round_trip(&e);
    assert_int_equal(d->assignment->mechanism, LDPB__V1__MECHANISM__RAW);
    assert_false(d->assignment->has_kappa);
    assert_false(d->assignment->has_policy_version);
    ldpb_envelope_free(d);
}

static void round_trip_report(void **state)
{
    (void)state;
    Ldpb__V1__Report m = LDPB__V1__REPORT__INIT;
    m.assignment_id.data = id16;
    m.assignment_id.len = sizeof id16;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    e.report = &m;
    static const Ldpb__V1__Mechanism bern[] = {LDPB__V1__MECHANISM__LINEAR,
                                               LDPB__V1__MECHANISM__QUADRATIC,
                                               LDPB__V1__MECHANISM__EXPONENTIAL};
    for (size_t k = 0; k < COUNT(bern); k++) {
        for (uint32_t bit = 0; bit <= 1; bit++) {
            m.mechanism = bern[k];
            m.epsilon = 0.5;
            m.value_case = LDPB__V1__REPORT__VALUE_BIT;
            m.bit = bit;
            Ldpb__V1__Envelope *d = round_trip(&e);
            /* proto2 oneof: a bit 0 is present, not missing */
            assert_int_equal(d->report->value_case, LDPB__V1__REPORT__VALUE_BIT);
            assert_int_equal(d->report->bit, bit);
            assert_int_equal(d->report->mechanism, bern[k]);
            assert_memory_equal(d->report->assignment_id.data, id16, sizeof id16);
            ldpb_envelope_free(d);
        }
    }
    m.mechanism = LDPB__V1__MECHANISM__LAPLACE;
    m.epsilon = 1.0;
    m.value_case = LDPB__V1__REPORT__VALUE_REAL;
    m.real = -0.22342681884765625;
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_int_equal(d->report->value_case, LDPB__V1__REPORT__VALUE_REAL);
    assert_true(d->report->real == -0.22342681884765625);
    ldpb_envelope_free(d);

    m.mechanism = LDPB__V1__MECHANISM__RAW;
    m.epsilon = 0.0;
    m.real = 0.0;
    d = round_trip(&e);
    assert_int_equal(d->report->value_case, LDPB__V1__REPORT__VALUE_REAL);
    assert_true(d->report->real == 0.0);
    ldpb_envelope_free(d);
}

static void round_trip_ack_and_status_request(void **state)
{
    (void)state;
    Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
    ack.assignment_id.data = id16;
    ack.assignment_id.len = 3;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
    e.ack = &ack;
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_false(d->ack->has_duplicate);
    assert_int_equal(d->ack->assignment_id.len, 3);
    ldpb_envelope_free(d);
    ack.has_duplicate = 1;
    ack.duplicate = 1;
    d = round_trip(&e);
    assert_true(d->ack->has_duplicate && d->ack->duplicate);
    ldpb_envelope_free(d);

    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    e.status_request = &sr;
    d = round_trip(&e);
    assert_non_null(d->status_request);
    ldpb_envelope_free(d);
}

static void round_trip_status_and_error(void **state)
{
    (void)state;
    enum { K = 200 };
    Ldpb__V1__ArmStatus arms[K], *parms[K];
    for (int i = 0; i < K; i++) {
        ldpb__v1__arm_status__init(&arms[i]);
        arms[i].arm = (uint32_t)i;
        arms[i].pulls = (uint64_t)i * 1000003u;
        if (i % 2) {
            arms[i].has_estimate = arms[i].has_ci_low = arms[i].has_ci_high = 1;
            arms[i].estimate = i / 1000.0;
            arms[i].ci_low = -1.5;
            arms[i].ci_high = 2.5;
            arms[i].has_active = 1;
            arms[i].active = i % 3 == 0;
        }
        parms[i] = &arms[i];
    }
    char policy[LDPB_WIRE_STRING_MAX + 1];
    memset(policy, 'p', LDPB_WIRE_STRING_MAX);
    policy[LDPB_WIRE_STRING_MAX] = '\0';
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    st.policy = policy;
    st.model = "local, linear, \xce\xb5=1"; /* UTF-8 epsilon */
    st.reports = 123456789012ULL;
    st.assignments = 5;
    st.n_arms = K;
    st.arms = parms;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_string_equal(d->status->policy, policy);
    assert_string_equal(d->status->model, st.model);
    assert_true(d->status->reports == st.reports);
    assert_int_equal(d->status->n_arms, K);
    for (int i = 0; i < K; i++) {
        const Ldpb__V1__ArmStatus *a = d->status->arms[i];
        assert_int_equal(a->arm, (uint32_t)i);
        assert_true(a->pulls == arms[i].pulls);
        assert_int_equal(a->has_estimate, i % 2);
        if (i % 2)
            assert_true(a->estimate == arms[i].estimate && a->active == arms[i].active);
    }
    ldpb_envelope_free(d);

    Ldpb__V1__Error er = LDPB__V1__ERROR__INIT;
    er.code = LDPB_ENOTFOUND;
    er.reason = "unknown assignment id";
    e.body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
    e.error = &er;
    d = round_trip(&e);
    assert_int_equal(d->error->code, LDPB_ENOTFOUND);
    assert_string_equal(d->error->reason, er.reason);
    assert_int_equal(ldpb_wire_err_from_code(d->error->code), LDPB_ENOTFOUND);
    ldpb_envelope_free(d);
}

/* ---- limits, refused before decoding -------------------------------------------------------- */

static void limit_context_values(void **state)
{
    (void)state;
    double ctx[LDPB_WIRE_CONTEXT_MAX + 1] = {0};
    Ldpb__V1__AssignRequest m = LDPB__V1__ASSIGN_REQUEST__INIT;
    m.n_context = COUNT(ctx);
    m.context = ctx;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    e.assign_request = &m;
    size_t len;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_ERANGE);
    refused_before_decoding(buf, raw_pack(&e, buf));

    /* the same count split over an unpacked and a packed run is counted as one field */
    static const uint8_t unpacked_one[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0};
    uint8_t inner[16 + 9 + 8 * LDPB_WIRE_CONTEXT_MAX];
    size_t n = 0;
    memcpy(inner, unpacked_one, sizeof unpacked_one);
    n += sizeof unpacked_one;
    inner[n++] = 0x0a; /* field 1, packed */
    size_t plen = 8 * LDPB_WIRE_CONTEXT_MAX;
    inner[n++] = (uint8_t)(0x80 | (plen & 0x7f));
    inner[n++] = (uint8_t)(plen >> 7);
    memset(inner + n, 0, plen);
    n += plen;
    uint8_t msg[sizeof inner + 16];
    size_t k = 0;
    msg[k++] = 0x08; /* protocol_version 1 */
    msg[k++] = 0x01;
    msg[k++] = 0x52; /* field 10, assign_request */
    msg[k++] = (uint8_t)(0x80 | (n & 0x7f));
    msg[k++] = (uint8_t)(n >> 7);
    memcpy(msg + k, inner, n);
    k += n;
    refused_before_decoding(msg, k);
    /* one value fewer is accepted, unpacked and packed mixed */
    m.n_context = LDPB_WIRE_CONTEXT_MAX;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);
    msg[k - n - 2] = (uint8_t)(0x80 | ((n - 8) & 0x7f));
    msg[k - n - 1] = (uint8_t)((n - 8) >> 7);
    inner[sizeof unpacked_one + 1] = (uint8_t)(0x80 | ((plen - 8) & 0x7f));
    inner[sizeof unpacked_one + 2] = (uint8_t)((plen - 8) >> 7);
    memcpy(msg + k - n, inner, n - 8);
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(msg, k - 8, &d, NULL), LDPB_OK);
    assert_int_equal(d->assign_request->n_context, LDPB_WIRE_CONTEXT_MAX);
    ldpb_envelope_free(d);
}

static void limit_strings_and_ids(void **state)
{
    (void)state;
    char long_str[LDPB_WIRE_STRING_MAX + 2];
    memset(long_str, 'x', sizeof long_str - 1);
    long_str[sizeof long_str - 1] = '\0';
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    st.policy = long_str;
    st.model = "m";
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    size_t len;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_ERANGE);
    refused_before_decoding(buf, raw_pack(&e, buf));

    Ldpb__V1__Error er = LDPB__V1__ERROR__INIT;
    er.code = LDPB_EINVAL;
    er.reason = long_str;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
    e.error = &er;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_ERANGE);
    refused_before_decoding(buf, raw_pack(&e, buf));

    uint8_t id[LDPB_WIRE_ID_MAX + 1] = {0};
    Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
    ack.assignment_id.data = id;
    ack.assignment_id.len = sizeof id;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
    e.ack = &ack;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_ERANGE);
    refused_before_decoding(buf, raw_pack(&e, buf));
}

static void limit_plaintext_size(void **state)
{
    (void)state;
    /* the largest Status that fits, of minimal arms (six bytes each): the most memory per byte
     * a decode can be made to allocate */
    size_t k = (LDPB_PLAINTEXT_MAX - 64) / 6;
    Ldpb__V1__ArmStatus *arms = malloc(k * sizeof *arms);
    Ldpb__V1__ArmStatus **parms = malloc((k + 10) * sizeof *parms);
    assert_non_null(arms);
    assert_non_null(parms);
    for (size_t i = 0; i < k; i++) {
        ldpb__v1__arm_status__init(&arms[i]);
        parms[i] = &arms[i];
    }
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    st.policy = "";
    st.model = "";
    st.n_arms = k;
    st.arms = parms;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    size_t len;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_OK);
    assert_true(len <= LDPB_PLAINTEXT_MAX && len > LDPB_PLAINTEXT_MAX - 100);
    /* decodes within the memory budget: the budget is not the binding limit */
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(buf, len, &d, NULL), LDPB_OK);
    assert_int_equal(d->status->n_arms, k);
    ldpb_envelope_free(d);

    /* a few arms more: too large to encode, and refused by size alone */
    for (size_t i = k; i < k + 10; i++)
        parms[i] = &arms[0];
    st.n_arms = k + 10;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_ERANGE);
    size_t big = raw_pack(&e, buf);
    assert_true(big > LDPB_PLAINTEXT_MAX);
    refused_before_decoding(buf, big);

    /* more arms than LDPB_WIRE_ARMS_MAX cannot fit a frame; the sender's check names the bound */
    Ldpb__V1__ArmStatus **many = malloc((LDPB_WIRE_ARMS_MAX + 1) * sizeof *many);
    assert_non_null(many);
    for (size_t i = 0; i <= LDPB_WIRE_ARMS_MAX; i++)
        many[i] = &arms[0];
    st.n_arms = LDPB_WIRE_ARMS_MAX + 1;
    st.arms = many;
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_envelope_check(&e, detail), LDPB_ERANGE);
    assert_non_null(strstr(detail, "65536"));
    free(many);
    free(parms);
    free(arms);

    /* a buffer too small reports the size needed */
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    e.status_request = &sr;
    assert_int_equal(ldpb_envelope_encode(&e, buf, 3, &len, NULL), LDPB_ERANGE);
    assert_int_equal(len, ldpb__v1__envelope__get_packed_size(&e));
    assert_int_equal(ldpb_envelope_encode(&e, buf, len, &len, NULL), LDPB_OK);
}

/* Hand-made encodings that protobuf-c would accept (or silently reinterpret) and ldpb refuses. */
static void malformed_encodings_refused(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        uint8_t bytes[40];
        size_t len;
    } cases[] = {
        {"empty", {0}, 0},
        {"no version", {0x10, 0x01, 0x72, 0x00}, 4},
        {"version twice", {0x08, 0x01, 0x08, 0x01, 0x72, 0x00}, 6},
        {"request id twice", {0x08, 0x01, 0x10, 0x01, 0x10, 0x02, 0x72, 0x00}, 8},
        {"version as fixed64", {0x09, 1, 0, 0, 0, 0, 0, 0, 0, 0x72, 0x00}, 11},
        {"version wider than 32 bits", {0x08, 0x80, 0x80, 0x80, 0x80, 0x10, 0x72, 0x00}, 8},
        {"no body", {0x08, 0x01}, 2},
        {"two bodies", {0x08, 0x01, 0x72, 0x00, 0x72, 0x00}, 6},
        {"two oneof members", {0x08, 0x01, 0x72, 0x00, 0x52, 0x00}, 6},
        {"group wire type", {0x08, 0x01, 0x72, 0x00, 0x1b, 0x1c}, 6},
        {"wire type 7", {0x08, 0x01, 0x72, 0x00, 0x1f}, 5},
        {"field number 0", {0x08, 0x01, 0x72, 0x00, 0x02, 0x00}, 6},
        {"overlong varint",
         {0x08, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x72, 0x00},
         14},
        {"length past the end", {0x08, 0x01, 0x72, 0x05, 0x00}, 5},
        {"ack without id", {0x08, 0x01, 0x6a, 0x00}, 4},
        {"ack with empty id", {0x08, 0x01, 0x6a, 0x02, 0x0a, 0x00}, 6},
        {"ack bool 2", {0x08, 0x01, 0x6a, 0x05, 0x0a, 0x01, 0x41, 0x10, 0x02}, 9},
        {"report bit 2^32+1",
         {0x08, 0x01, 0x62, 0x14, 0x0a, 0x01, 0x41, 0x10, 0x01, 0x19, 0,    0,
          0,    0,    0,    0,    0xf0, 0x3f, 0x20, 0x81, 0x80, 0x80, 0x80, 0x10},
         24},
        {"mechanism 2^31",
         {0x08, 0x01, 0x62, 0x14, 0x0a, 0x01, 0x41, 0x10, 0x80, 0x80, 0x80, 0x80,
          0x08, 0x19, 0,    0,    0,    0,    0,    0,    0xf0, 0x3f, 0x20, 0x00},
         24},
        {"report two values",
         {0x08, 0x01, 0x62, 0x19, 0x0a, 0x01, 0x41, 0x10, 0x01, 0x19, 0, 0, 0, 0, 0,
          0,    0xf0, 0x3f, 0x20, 0x00, 0x29, 0,    0,    0,    0,    0, 0, 0, 0},
         29},
        {"packed doubles of 7 bytes",
         {0x08, 0x01, 0x52, 0x09, 0x0a, 0x07, 0, 0, 0, 0, 0, 0, 0},
         13},
        {"string field as varint", {0x08, 0x01, 0x82, 0x01, 0x04, 0x08, 0x05, 0x10, 0x00}, 9},
        {"error reason not UTF-8",
         {0x08, 0x01, 0x82, 0x01, 0x06, 0x08, 0x05, 0x12, 0x02, 0xc3, 0x28},
         11},
        {"error reason with NUL",
         {0x08, 0x01, 0x82, 0x01, 0x06, 0x08, 0x05, 0x12, 0x02, 'a', 0},
         11},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        Ldpb__V1__Envelope *d = (Ldpb__V1__Envelope *)&d;
        char detail[LDPB_DETAIL_BYTES] = "";
        ldpb_err err = ldpb_envelope_decode(cases[i].bytes, cases[i].len, &d, detail);
        if (err != LDPB_EPROTO || d != NULL)
            fail_msg("%s: %s, expected LDPB_EPROTO", cases[i].what, ldpb_errname(err));
        assert_true(detail[0] != '\0');
    }
    /* the well-formed twins of some of the cases above are accepted */
    static const uint8_t ack_ok[] = {0x08, 0x01, 0x6a, 0x05, 0x0a, 0x01, 0x41, 0x10, 0x01};
    static const uint8_t report_ok[] = {0x08, 0x01, 0x62, 0x10, 0x0a, 0x01, 0x41, 0x10, 0x01, 0x19,
                                        0,    0,    0,    0,    0,    0,    0xf0, 0x3f, 0x20, 0x01};
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(ack_ok, sizeof ack_ok, &d, NULL), LDPB_OK);
    assert_true(d->ack->duplicate);
    ldpb_envelope_free(d);
    assert_int_equal(ldpb_envelope_decode(report_ok, sizeof report_ok, &d, NULL), LDPB_OK);
    assert_int_equal(d->report->bit, 1);
    ldpb_envelope_free(d);
}

static void unknown_fields_bounded(void **state)
{
    (void)state;
    /* a newer peer's optional fields are skipped, up to LDPB_WIRE_UNKNOWN_MAX of them */
    uint8_t msg[8 + 2 * (LDPB_WIRE_UNKNOWN_MAX + 1)];
    size_t n = 0;
    msg[n++] = 0x08;
    msg[n++] = 0x01;
    msg[n++] = 0x72;
    msg[n++] = 0x00;
    for (unsigned i = 0; i < LDPB_WIRE_UNKNOWN_MAX; i++) {
        msg[n++] = 0x18; /* field 3, varint */
        msg[n++] = (uint8_t)i;
    }
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(msg, n, &d, NULL), LDPB_OK);
    assert_int_equal(d->body_case, LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST);
    ldpb_envelope_free(d);
    msg[n++] = 0x18;
    msg[n++] = 0x00;
    refused_before_decoding(msg, n);
}

/* Every repeated field of the schema must have a limit in the scanner's table (context and
 * arms today), and no message may have more fields than the scanner tracks. */
static void schema_is_covered_by_the_limits(void **state)
{
    (void)state;
    const ProtobufCMessageDescriptor *all[] = {
        &ldpb__v1__envelope__descriptor,
        &ldpb__v1__assign_request__descriptor,
        &ldpb__v1__assignment__descriptor,
        &ldpb__v1__report__descriptor,
        &ldpb__v1__ack__descriptor,
        &ldpb__v1__status_request__descriptor,
        &ldpb__v1__arm_status__descriptor,
        &ldpb__v1__status__descriptor,
        &ldpb__v1__error__descriptor,
        &ldpb__v1__local_model__descriptor,
        &ldpb__v1__report_and_assign__descriptor,
        &ldpb__v1__ack_and_assignment__descriptor,
        &ldpb__v1__report_batch__descriptor,
        &ldpb__v1__report_result__descriptor,
        &ldpb__v1__batch_ack__descriptor,
        &ldpb__v1__experiment_command__descriptor,
        &ldpb__v1__experiment_info__descriptor,
        &ldpb__v1__experiment_reply__descriptor,
    };
    size_t repeated = 0;
    for (size_t i = 0; i < COUNT(all); i++) {
        assert_true(all[i]->n_fields <= 16);
        for (unsigned f = 0; f < all[i]->n_fields; f++) {
            const ProtobufCFieldDescriptor *fd = &all[i]->fields[f];
            if (fd->label != PROTOBUF_C_LABEL_REPEATED)
                continue;
            repeated++;
            int known = (all[i] == &ldpb__v1__assign_request__descriptor && fd->id == 1) ||
                        (all[i] == &ldpb__v1__status__descriptor && fd->id == 5) ||
                        (all[i] == &ldpb__v1__report__descriptor && fd->id == 6) ||
                        (all[i] == &ldpb__v1__report__descriptor && fd->id == 7) ||
                        (all[i] == &ldpb__v1__local_model__descriptor && fd->id == 2) ||
                        (all[i] == &ldpb__v1__report_batch__descriptor && fd->id == 1) ||
                        (all[i] == &ldpb__v1__batch_ack__descriptor && fd->id == 1) ||
                        (all[i] == &ldpb__v1__experiment_reply__descriptor && fd->id == 1);
            if (!known)
                fail_msg("%s.%s is repeated but has no limit in wire.c", all[i]->name, fd->name);
        }
    }
    assert_int_equal(repeated, 8);
}

/* docs/protocol.md, "Contexts": the worked bytes of a K = 2, d = 2 feature set decode to it, and a
 * Report's context (field 6) of more than 64 values or a non-finite one is refused. */
static void context_worked_example(void **state)
{
    (void)state;
    static const uint8_t b[] = {
        0x08, 0x01, 0x10, 0x07, 0x52, 0x22, 0x0a, 0x20, 0x33, 0x33, 0x33, 0x33, 0x33, 0x33,
        0xe3, 0x3f, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xe9, 0x3f, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0xf0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    Ldpb__V1__Envelope *env = NULL;
    assert_int_equal(ldpb_envelope_decode(b, sizeof b, &env, NULL), LDPB_OK);
    assert_int_equal(env->request_id, 7);
    assert_int_equal(env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST);
    assert_int_equal(env->assign_request->n_context, 4);
    const double want[] = {0.6, 0.8, 1.0, 0.0};
    for (int i = 0; i < 4; i++)
        assert_true(env->assign_request->context[i] == want[i]);
    ldpb_envelope_free(env);

    uint8_t id[62] = {1};
    double x[65] = {0};
    Ldpb__V1__Envelope e = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    e.protocol_version = 1;
    e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    e.report = &r;
    r.assignment_id.data = id;
    r.assignment_id.len = sizeof id;
    r.mechanism = LDPB__V1__MECHANISM__RAW;
    r.value_case = LDPB__V1__REPORT__VALUE_REAL;
    r.real = 0.5;
    r.context = x;
    uint8_t out[2048];
    size_t len = 0;
    char detail[LDPB_DETAIL_BYTES];
    r.n_context = 64;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_int_equal(ldpb_envelope_decode(out, len, &env, NULL), LDPB_OK);
    assert_int_equal(env->report->n_context, 64);
    ldpb_envelope_free(env);
    r.n_context = 65;
    assert_int_not_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_non_null(strstr(detail, "report.context has 65 values, more than 64"));
    r.n_context = 3;
    x[1] = NAN;
    assert_int_not_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_non_null(strstr(detail, "report.context[1] is not a finite number"));
}

/* The local contextual mode's messages (docs/protocol.md, "Local model"): the worked example of a
 * d = 1 report byte for byte, and the shape rules of Report.stats and Assignment.local_model. */
static void local_model_worked_example(void **state)
{
    (void)state;
    static const uint8_t b[] = {
        0x08, 0x01, 0x10, 0x07, 0x62, 0x31, 0x0a, 0x01, 0xaa, 0x10, 0x06, 0x19, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, 0x3a, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0xd0, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe0, 0xbf, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0xf0, 0x3f, 0x41, 0x8d, 0xed, 0xb5, 0xa0, 0xf7, 0xc6, 0xb0, 0x3e,
    };
    uint8_t id[1] = {0xaa};
    double st[LDPB_WIRE_STATS_MAX + 1] = {0.25, -0.5, 1.0};
    Ldpb__V1__Envelope e = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    e.protocol_version = 1;
    e.has_request_id = 1;
    e.request_id = 7;
    e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    e.report = &r;
    r.assignment_id.data = id;
    r.assignment_id.len = sizeof id;
    r.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
    r.epsilon = 1.0;
    r.stats = st;
    r.n_stats = 3;
    r.has_delta = 1;
    r.delta = 1e-6;
    uint8_t out[8192];
    size_t len = 0;
    char detail[LDPB_DETAIL_BYTES] = "";
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_int_equal(len, sizeof b);
    assert_memory_equal(out, b, sizeof b);
    Ldpb__V1__Envelope *env = NULL;
    assert_int_equal(ldpb_envelope_decode(b, sizeof b, &env, NULL), LDPB_OK);
    assert_int_equal(env->report->n_stats, 3);
    assert_true(env->report->stats[1] == -0.5 && env->report->delta == 1e-6);
    ldpb_envelope_free(env);

    /* The largest report (d = 32, 561 values) fits; 562 values, or a count that is no d's, or a
     * non-finite value, or a missing delta, or a value beside the stats, are refused both ways. */
    r.n_stats = LDPB_WIRE_STATS_MAX;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_int_equal(ldpb_envelope_decode(out, len, &env, NULL), LDPB_OK);
    ldpb_envelope_free(env);
    r.n_stats = LDPB_WIRE_STATS_MAX + 1;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_ERANGE);
    r.n_stats = 4;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "report.stats has 4 values, not (d+1)(d+2)/2"));
    r.n_stats = 6;
    st[5] = INFINITY;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "report.stats[5] is not a finite number"));
    st[5] = 0.0;
    r.has_delta = 0;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    r.has_delta = 1;
    r.delta = 0.2;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_ERANGE);
    r.delta = 1e-6;
    r.value_case = LDPB__V1__REPORT__VALUE_REAL;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    r.value_case = LDPB__V1__REPORT__VALUE__NOT_SET;
    /* stats on a scalar mechanism's report */
    r.mechanism = LDPB__V1__MECHANISM__LAPLACE;
    r.value_case = LDPB__V1__REPORT__VALUE_REAL;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "report.stats is set but mechanism 4"));
    /* a decoder refuses the stats of a malformed report as a malformed message */
    for (size_t i = 0; i < sizeof b; i++)
        out[i] = b[i];
    out[sizeof b - 9 - 24 + 7] = 0x7f; /* stats[0] = a NaN */
    out[sizeof b - 9 - 24 + 6] = 0xf8;
    assert_int_equal(ldpb_envelope_decode(out, sizeof b, &env, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "report.stats[0] is not a finite number"));

    /* An Assignment: GAUSSIAN_STATS exactly when local_model is set, and a model of d's size. */
    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    Ldpb__V1__LocalModel lm = LDPB__V1__LOCAL_MODEL__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    e.assignment = &a;
    a.assignment_id.data = id;
    a.assignment_id.len = sizeof id;
    a.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
    a.epsilon = 1.0;
    a.propensity = 1.0;
    lm.d = 1;
    lm.stats = st;
    lm.n_stats = 3;
    lm.shift = 2.0;
    lm.beta = 1.5;
    lm.delta = 1e-6;
    lm.feature_norm = 1.0;
    lm.reward_bound = 1.0;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "has no local_model"));
    a.local_model = &lm;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_OK);
    assert_int_equal(ldpb_envelope_decode(out, len, &env, NULL), LDPB_OK);
    assert_int_equal(env->assignment->local_model->d, 1);
    assert_true(env->assignment->local_model->beta == 1.5);
    ldpb_envelope_free(env);
    lm.d = 2;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "d = 2 needs 6"));
    lm.d = 33;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_ERANGE);
    lm.d = 1;
    lm.feature_norm = 0.0;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_ERANGE);
    lm.feature_norm = 1.0;
    lm.shift = NAN;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    lm.shift = 2.0;
    a.mechanism = LDPB__V1__MECHANISM__LAPLACE;
    assert_int_equal(ldpb_envelope_encode(&e, out, sizeof out, &len, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "local_model is set"));

    /* The request: `18 01` is local_model = true. */
    static const uint8_t req[] = {0x08, 0x01, 0x10, 0x07, 0x52, 0x02, 0x18, 0x01};
    assert_int_equal(ldpb_envelope_decode(req, sizeof req, &env, NULL), LDPB_OK);
    assert_true(env->assign_request->has_local_model && env->assign_request->local_model);
    ldpb_envelope_free(env);
}

/* ---- semantic rules, both directions ------------------------------------------------------- */

static void semantic_rules(void **state)
{
    (void)state;
    Ldpb__V1__Envelope e;
    env_init(&e);
    /* no body */
    refused_both_ways(&e, LDPB_EINVAL);

    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    e.report = &r;
    r.assignment_id.data = id16;
    r.assignment_id.len = 4;
    r.mechanism = LDPB__V1__MECHANISM__LINEAR;
    r.epsilon = 1.0;
    r.value_case = LDPB__V1__REPORT__VALUE_BIT;
    r.bit = 1;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);

    r.value_case = LDPB__V1__REPORT__VALUE__NOT_SET; /* a missing value is not a bit 0 */
    refused_both_ways(&e, LDPB_EINVAL);
    r.value_case = LDPB__V1__REPORT__VALUE_BIT;
    r.bit = 2;
    refused_both_ways(&e, LDPB_ERANGE);
    r.bit = 0;
    r.value_case = LDPB__V1__REPORT__VALUE_REAL; /* a real with a Bernoulli mechanism */
    r.real = 0.0;
    refused_both_ways(&e, LDPB_EINVAL);
    r.mechanism = LDPB__V1__MECHANISM__LAPLACE;
    r.real = NAN;
    refused_both_ways(&e, LDPB_EINVAL);
    r.real = INFINITY;
    refused_both_ways(&e, LDPB_EINVAL);
    r.real = 0.5;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);
    r.value_case = LDPB__V1__REPORT__VALUE_BIT; /* a bit with Laplace */
    refused_both_ways(&e, LDPB_EINVAL);
    r.value_case = LDPB__V1__REPORT__VALUE_REAL;
    r.mechanism = LDPB__V1__MECHANISM__MECHANISM_UNSPECIFIED;
    refused_both_ways(&e, LDPB_EINVAL);
    r.mechanism = (Ldpb__V1__Mechanism)6;
    refused_both_ways(&e, LDPB_EINVAL);
    r.mechanism = LDPB__V1__MECHANISM__LAPLACE;
    r.epsilon = 0.0;
    refused_both_ways(&e, LDPB_ERANGE);
    r.epsilon = 10.5;
    refused_both_ways(&e, LDPB_ERANGE);
    r.epsilon = NAN;
    refused_both_ways(&e, LDPB_EINVAL);
    r.mechanism = LDPB__V1__MECHANISM__RAW;
    r.epsilon = 1.0; /* RAW carries epsilon 0 */
    refused_both_ways(&e, LDPB_ERANGE);
    r.epsilon = 0.0;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);
    r.assignment_id.len = 0;
    refused_both_ways(&e, LDPB_EINVAL);

    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    e.assignment = &a;
    a.assignment_id.data = id16;
    a.assignment_id.len = 16;
    a.mechanism = LDPB__V1__MECHANISM__LINEAR;
    a.epsilon = 1.0;
    a.propensity = 0.5;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);
    a.propensity = 0.0;
    refused_both_ways(&e, LDPB_ERANGE);
    a.propensity = 1.5;
    refused_both_ways(&e, LDPB_ERANGE);
    a.propensity = NAN;
    refused_both_ways(&e, LDPB_EINVAL);
    a.propensity = 0.5;
    a.has_kappa = 1;
    a.kappa = 0.5; /* kappa with LINEAR */
    refused_both_ways(&e, LDPB_EINVAL);
    a.mechanism = LDPB__V1__MECHANISM__QUADRATIC;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);
    a.kappa = -1.5;
    refused_both_ways(&e, LDPB_ERANGE);
    a.kappa = NAN;
    refused_both_ways(&e, LDPB_EINVAL);

    double ctx[2] = {1.0, NAN};
    Ldpb__V1__AssignRequest q = LDPB__V1__ASSIGN_REQUEST__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    e.assign_request = &q;
    q.n_context = 2;
    q.context = ctx;
    refused_both_ways(&e, LDPB_EINVAL);
    ctx[1] = 2.0;
    q.has_max_epsilon = 1;
    q.max_epsilon = 0.0;
    refused_both_ways(&e, LDPB_ERANGE);
    q.max_epsilon = INFINITY;
    refused_both_ways(&e, LDPB_EINVAL);
    q.max_epsilon = LDPB_EPSILON_MAX;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);

    Ldpb__V1__ArmStatus arm = LDPB__V1__ARM_STATUS__INIT, *parm = &arm;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    st.policy = "ldp-ucb";
    st.model = "local";
    st.n_arms = 1;
    st.arms = &parm;
    arm.has_ci_high = 1;
    arm.ci_high = -INFINITY;
    refused_both_ways(&e, LDPB_EINVAL);
    arm.ci_high = 1.0;
    st.model = "bad \xff utf-8";
    refused_both_ways(&e, LDPB_EINVAL);
    st.model = NULL;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_EINVAL);
    st.model = "local";
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);

    Ldpb__V1__Error er = LDPB__V1__ERROR__INIT;
    e.body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
    e.error = &er;
    er.code = 0;
    er.reason = "zero";
    refused_both_ways(&e, LDPB_EINVAL);

    /* NULL pointers and another protocol version are refused when encoding */
    e.error = NULL;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_EINVAL);
    e.error = &er;
    er.code = 1;
    e.protocol_version = 2;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_envelope_check(NULL, NULL), LDPB_EINVAL);
}

/* ---- truncation, versions, frames ----------------------------------------------------------- */

static void truncated_envelopes_fail_cleanly(void **state)
{
    (void)state;
    Ldpb__V1__ArmStatus arm = LDPB__V1__ARM_STATUS__INIT, *parm = &arm;
    arm.has_estimate = 1;
    arm.estimate = 0.25;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    st.policy = "ts";
    st.model = "local";
    st.n_arms = 1;
    st.arms = &parm;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    size_t len;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_OK);
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size, so ASan sees any overread */
        assert_non_null(copy);
        memcpy(copy, buf, n);
        Ldpb__V1__Envelope *d = (Ldpb__V1__Envelope *)&d;
        long live = alloc_fail_live();
        assert_int_equal(ldpb_envelope_decode(copy, n, &d, NULL), LDPB_EPROTO);
        assert_null(d);
        assert_int_equal(alloc_fail_live(), live);
        free(copy);
    }
}

static void version_rules(void **state)
{
    (void)state;
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_wire_check_version(LDPB_PROTOCOL_VERSION, detail), LDPB_OK);
    assert_int_equal(ldpb_wire_check_version(2, detail), LDPB_EVERSION);
    assert_non_null(strstr(detail, "version 2"));
    assert_non_null(strstr(detail, "version 1"));

    /* a version-2 message whose body this schema cannot even parse: the version and the request
     * id are still read, and decode answers LDPB_EVERSION naming both versions */
    static const uint8_t v2[] = {0x08, 0x02, 0x10, 0x2a, 0xfa, 0x01, 0x03, 'n', 'e', 'w'};
    uint32_t version = 0;
    uint64_t rid = 0;
    int has_rid = 0;
    assert_int_equal(ldpb_envelope_peek(v2, sizeof v2, &version, &rid, &has_rid, NULL), LDPB_OK);
    assert_int_equal(version, 2);
    assert_int_equal(has_rid, 1);
    assert_true(rid == 42);
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(v2, sizeof v2, &d, detail), LDPB_EVERSION);
    assert_null(d);
    assert_non_null(strstr(detail, "version 2"));

    static const uint8_t no_rid[] = {0x08, 0x01, 0x72, 0x00};
    assert_int_equal(ldpb_envelope_peek(no_rid, sizeof no_rid, &version, &rid, &has_rid, NULL),
                     LDPB_OK);
    assert_int_equal(version, 1);
    assert_int_equal(has_rid, 0);
    assert_true(rid == 0);
    static const uint8_t none[] = {0x10, 0x01};
    assert_int_equal(ldpb_envelope_peek(none, sizeof none, &version, NULL, NULL, NULL),
                     LDPB_EPROTO);
    assert_int_equal(ldpb_envelope_peek(none, sizeof none, NULL, NULL, NULL, NULL), LDPB_EINVAL);
}

/* The request id is read on its own: a receiver echoes it even when the version is missing or
 * the bytes after it are damaged, and the detail says which of those it was. */
static void peek_reads_request_id_independently(void **state)
{
    (void)state;
    char detail[LDPB_DETAIL_BYTES];
    uint32_t version = 99;
    uint64_t rid = 0;
    int has_rid = 0;

    static const uint8_t no_version[] = {0x10, 0x2a, 0x72, 0x00};
    assert_int_equal(
        ldpb_envelope_peek(no_version, sizeof no_version, &version, &rid, &has_rid, detail),
        LDPB_EPROTO);
    assert_int_equal(has_rid, 1);
    assert_true(rid == 42);
    assert_non_null(strstr(detail, "no protocol_version"));

    /* version and id, then a report whose length runs past the end */
    static const uint8_t truncated[] = {0x08, 0x01, 0x10, 0x2b, 0x62, 0x05, 0x0a};
    rid = 0;
    has_rid = 0;
    assert_int_equal(
        ldpb_envelope_peek(truncated, sizeof truncated, &version, &rid, &has_rid, detail),
        LDPB_EPROTO);
    assert_int_equal(has_rid, 1);
    assert_true(rid == 43);
    assert_null(strstr(detail, "no protocol_version"));
    assert_non_null(strstr(detail, "field 12"));
    assert_non_null(strstr(detail, "truncated"));
    Ldpb__V1__Envelope *d = NULL;
    assert_int_equal(ldpb_envelope_decode(truncated, sizeof truncated, &d, detail), LDPB_EPROTO);
    assert_null(d);
    assert_non_null(strstr(detail, "truncated"));

    /* damage before field 2: the id is not readable */
    static const uint8_t early[] = {0x08, 0x01, 0x62, 0x05, 0x10, 0x2a};
    assert_int_equal(ldpb_envelope_peek(early, sizeof early, &version, &rid, &has_rid, detail),
                     LDPB_EPROTO);
    assert_int_equal(has_rid, 0);
    assert_true(rid == 0);

    /* a repeated or mistyped request id is no request id */
    static const uint8_t twice[] = {0x08, 0x01, 0x10, 0x01, 0x10, 0x02};
    assert_int_equal(ldpb_envelope_peek(twice, sizeof twice, &version, &rid, &has_rid, detail),
                     LDPB_EPROTO);
    assert_int_equal(has_rid, 0);
    assert_non_null(strstr(detail, "request_id"));
    static const uint8_t fixed_id[] = {0x08, 0x01, 0x11, 1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(
        ldpb_envelope_peek(fixed_id, sizeof fixed_id, &version, &rid, &has_rid, detail),
        LDPB_EPROTO);
    assert_int_equal(has_rid, 0);

    /* a repeated or mistyped version, with a readable id */
    static const uint8_t two_versions[] = {0x10, 0x05, 0x08, 0x01, 0x08, 0x01};
    assert_int_equal(
        ldpb_envelope_peek(two_versions, sizeof two_versions, &version, &rid, &has_rid, detail),
        LDPB_EPROTO);
    assert_int_equal(has_rid, 1);
    assert_true(rid == 5);
    assert_non_null(strstr(detail, "protocol_version"));
    static const uint8_t wide_version[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x10, 0x10, 0x06};
    assert_int_equal(
        ldpb_envelope_peek(wide_version, sizeof wide_version, &version, &rid, &has_rid, detail),
        LDPB_EPROTO);
    assert_int_equal(has_rid, 1);
    assert_true(rid == 6);

    /* an unsupported version is the caller's verdict (ldpb_wire_check_version), not peek's */
    static const uint8_t v7[] = {0x08, 0x07, 0x10, 0x09};
    assert_int_equal(ldpb_envelope_peek(v7, sizeof v7, &version, &rid, &has_rid, detail), LDPB_OK);
    assert_int_equal(version, 7);
    assert_true(rid == 9);
}

/* protobuf-c files a oneof member it does not know among the unknown fields, leaving no body: a
 * length-delimited field in the body range is a message kind of a newer revision
 * (LDPB_ENOTSUP), anything else leaves the Envelope without a body (LDPB_EPROTO). */
static void unknown_body_kind_is_unsupported(void **state)
{
    (void)state;
    char detail[LDPB_DETAIL_BYTES];
    Ldpb__V1__Envelope *d = NULL;

    static const uint8_t kind17[] = {0x08, 0x01, 0x10, 0x2c, 0x8a, 0x01, 0x00};
    assert_int_equal(ldpb_envelope_decode(kind17, sizeof kind17, &d, detail), LDPB_ENOTSUP);
    assert_null(d);
    assert_non_null(strstr(detail, "body field 17"));
    /* with content, and far up the number range */
    static const uint8_t kind1000[] = {0x08, 0x01, 0xc2, 0x3e, 0x02, 0x08, 0x01};
    assert_int_equal(ldpb_envelope_decode(kind1000, sizeof kind1000, &d, detail), LDPB_ENOTSUP);
    assert_non_null(strstr(detail, "body field 1000"));

    static const uint8_t no_body[] = {0x08, 0x01, 0x10, 0x2d};
    assert_int_equal(ldpb_envelope_decode(no_body, sizeof no_body, &d, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "no body"));
    /* an unknown varint up there, or an unknown message below the body range, is not a body */
    static const uint8_t varint17[] = {0x08, 0x01, 0x88, 0x01, 0x05};
    assert_int_equal(ldpb_envelope_decode(varint17, sizeof varint17, &d, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "no body"));
    static const uint8_t msg9[] = {0x08, 0x01, 0x4a, 0x00};
    assert_int_equal(ldpb_envelope_decode(msg9, sizeof msg9, &d, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "no body"));

    /* a known body next to an unknown one is a newer peer's extra field: skipped */
    static const uint8_t extra[] = {0x08, 0x01, 0x72, 0x00, 0x8a, 0x01, 0x00};
    assert_int_equal(ldpb_envelope_decode(extra, sizeof extra, &d, detail), LDPB_OK);
    assert_int_equal(d->body_case, LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST);
    ldpb_envelope_free(d);
}

/* The body range the decoder relies on is the schema's: every member of the oneof, and nothing
 * else, lies in [LDPB_WIRE_BODY_FIRST, LDPB_WIRE_BODY_LAST]. */
static void body_range_matches_the_schema(void **state)
{
    (void)state;
    const ProtobufCMessageDescriptor *desc = &ldpb__v1__envelope__descriptor;
    unsigned members = 0;
    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        int in_range = f->id >= LDPB_WIRE_BODY_FIRST && f->id <= LDPB_WIRE_BODY_LAST;
        assert_int_equal(in_range, (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) != 0);
        members += in_range;
    }
    assert_int_equal(members,
                     LDPB_WIRE_BODY_LAST - LDPB_WIRE_BODY_FIRST + 1 - 4); /* 17-20 unused */
}

static void error_codes_map(void **state)
{
    (void)state;
    for (uint32_t c = 1; c <= (uint32_t)LDPB_ENOEXPERIMENT; c++)
        assert_int_equal(ldpb_wire_err_from_code(c), (ldpb_err)c);
    assert_int_equal(ldpb_wire_err_from_code(LDPB_ENOTFOUND), LDPB_ENOTFOUND);
    assert_int_equal(ldpb_wire_err_from_code(LDPB_EEXPIRED), LDPB_EEXPIRED);
    assert_int_equal(ldpb_wire_err_from_code(0), LDPB_EPROTO);
    assert_int_equal(ldpb_wire_err_from_code((uint32_t)LDPB_ENOEXPERIMENT + 1), LDPB_EPROTO);
    assert_int_equal(ldpb_wire_err_from_code(UINT32_MAX), LDPB_EPROTO);
}

static void frames(void **state)
{
    (void)state;
    ldpb_frame f;
    char detail[LDPB_DETAIL_BYTES];
    size_t len;

    /* PLAIN_ERROR round trip */
    assert_int_equal(
        ldpb_frame_build_plain_error(buf, sizeof buf, &len, LDPB_EAUTH, "client key not allowed"),
        LDPB_OK);
    assert_int_equal(len, LDPB_FRAME_ERROR_MIN + 22);
    assert_memory_equal(buf, "LDPB\x01\x02\x0e\x00\x00\x00\x16\x00", 12);
    assert_int_equal(ldpb_frame_parse(buf, len, &f, NULL), LDPB_OK);
    assert_int_equal(f.kind, LDPB_FRAME_PLAIN_ERROR);
    assert_int_equal(f.error_code, LDPB_EAUTH);
    assert_int_equal(f.reason_len, 22);
    assert_memory_equal(f.reason, "client key not allowed", 22);
    assert_int_equal(ldpb_wire_err_from_code(f.error_code), LDPB_EAUTH);
    /* every truncation and one trailing byte are refused */
    for (size_t n = 0; n < len; n++)
        assert_int_equal(ldpb_frame_parse(buf, n, &f, NULL), LDPB_EPROTO);
    buf[len] = 'x';
    assert_int_equal(ldpb_frame_parse(buf, len + 1, &f, detail), LDPB_EPROTO);

    /* a long reason is cut at a character boundary; a bad one is refused */
    char reason[LDPB_WIRE_STRING_MAX + 8];
    memset(reason, 'a', LDPB_WIRE_STRING_MAX - 1);
    memcpy(reason + LDPB_WIRE_STRING_MAX - 1, "\xe2\x82\xac tail", 9); /* the euro sign */
    assert_int_equal(ldpb_frame_build_plain_error(buf, sizeof buf, &len, 1, reason), LDPB_OK);
    assert_int_equal(len, LDPB_FRAME_ERROR_MIN + LDPB_WIRE_STRING_MAX - 1);
    assert_int_equal(ldpb_frame_parse(buf, len, &f, NULL), LDPB_OK);
    assert_int_equal(ldpb_frame_build_plain_error(buf, sizeof buf, &len, 1, "\xc0\xaf"),
                     LDPB_EINVAL);
    assert_int_equal(ldpb_frame_build_plain_error(buf, sizeof buf, &len, 0, "x"), LDPB_EINVAL);
    assert_int_equal(ldpb_frame_build_plain_error(buf, 5, &len, 1, "abc"), LDPB_ERANGE);
    assert_int_equal(len, LDPB_FRAME_ERROR_MIN + 3);

    /* hand-made PLAIN_ERROR frames: code 0, a reason too long, not UTF-8 */
    uint8_t pe[LDPB_FRAME_ERROR_MIN + LDPB_WIRE_STRING_MAX + 1];
    memcpy(pe, "LDPB\x01\x02\x00\x00\x00\x00\x01\x00z", 13);
    assert_int_equal(ldpb_frame_parse(pe, 13, &f, detail), LDPB_EPROTO);
    pe[6] = 5;
    assert_int_equal(ldpb_frame_parse(pe, 13, &f, detail), LDPB_OK);
    pe[12] = 0xff;
    assert_int_equal(ldpb_frame_parse(pe, 13, &f, detail), LDPB_EPROTO);
    memset(pe + 12, 'r', LDPB_WIRE_STRING_MAX + 1);
    pe[10] = (uint8_t)((LDPB_WIRE_STRING_MAX + 1) & 0xff);
    pe[11] = (uint8_t)((LDPB_WIRE_STRING_MAX + 1) >> 8);
    assert_int_equal(ldpb_frame_parse(pe, sizeof pe, &f, detail), LDPB_EPROTO);

    /* header checks */
    memcpy(buf, "LDPB\x01\x01", 6);
    memset(buf + 6, 0, LDPB_FRAME_SEALED_OVERHEAD);
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_SEALED_OVERHEAD, &f, NULL), LDPB_OK);
    assert_int_equal(f.kind, LDPB_FRAME_SEALED);
    assert_int_equal(f.ciphertext_len, LDPB_FRAME_MAC_BYTES);
    assert_ptr_equal(f.client_pk, buf + 6);
    assert_ptr_equal(f.nonce, buf + 38);
    assert_ptr_equal(f.ciphertext, buf + 62);
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_SEALED_OVERHEAD - 1, &f, NULL), LDPB_EPROTO);
    buf[5] = 3;
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_SEALED_OVERHEAD, &f, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "kind 3"));
    buf[5] = 1;
    buf[4] = 2;
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_SEALED_OVERHEAD, &f, detail), LDPB_EVERSION);
    assert_non_null(strstr(detail, "frame version 2"));
    buf[4] = 1;
    buf[0] = 'X';
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_SEALED_OVERHEAD, &f, NULL), LDPB_EPROTO);
    buf[0] = 'L';
    /* size: the limit is inclusive; one byte more is refused whatever the bytes are */
    memset(buf + 6, 0, LDPB_FRAME_MAX - 6 + 1);
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_MAX, &f, NULL), LDPB_OK);
    assert_int_equal(f.ciphertext_len, LDPB_PLAINTEXT_MAX + LDPB_FRAME_MAC_BYTES);
    assert_int_equal(ldpb_frame_parse(buf, LDPB_FRAME_MAX + 1, &f, detail), LDPB_EPROTO);
    assert_non_null(strstr(detail, "exceeds"));
    assert_int_equal(ldpb_frame_parse(NULL, 1, &f, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_frame_parse(buf, 1, NULL, NULL), LDPB_EINVAL);
}

static void utf8_validation(void **state)
{
    (void)state;
    static const char *good[] = {"",
                                 "plain",
                                 "\xc2\xa2",
                                 "\xe2\x82\xac",
                                 "\xf0\x9f\x98\x80",
                                 "\xf4\x8f\xbf\xbf",
                                 "\xed\x9f\xbf"};
    static const char *bad[] = {"\x80",
                                "\xc0\xaf",
                                "\xc1\xbf",
                                "\xe0\x80\xaf",
                                "\xed\xa0\x80",
                                "\xf0\x80\x80\xaf",
                                "\xf4\x90\x80\x80",
                                "\xf5\x80\x80\x80",
                                "\xe2\x82",
                                "\xff"};
    for (size_t i = 0; i < COUNT(good); i++)
        assert_true(ldpb_wire_utf8_valid(good[i], strlen(good[i])));
    for (size_t i = 0; i < COUNT(bad); i++)
        assert_false(ldpb_wire_utf8_valid(bad[i], strlen(bad[i])));
    assert_false(ldpb_wire_utf8_valid("a\0b", 3));
}

/* ---- out of memory -----------------------------------------------------------------------------
 */

static void decode_out_of_memory(void **state)
{
    (void)state;
    Ldpb__V1__ArmStatus arms[3], *parms[3];
    for (int i = 0; i < 3; i++) {
        ldpb__v1__arm_status__init(&arms[i]);
        arms[i].arm = (uint32_t)i;
        parms[i] = &arms[i];
    }
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    st.policy = "p";
    st.model = "m";
    st.n_arms = 3;
    st.arms = parms;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    e.status = &st;
    size_t len;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_OK);
    long failures = 0;
    for (long n = 0;; n++) {
        assert_true(n < 100);
        long live = alloc_fail_live();
        alloc_fail_arm(n);
        Ldpb__V1__Envelope *d = (Ldpb__V1__Envelope *)&d;
        ldpb_err err = ldpb_envelope_decode(buf, len, &d, NULL);
        alloc_fail_disarm();
        if (err == LDPB_OK) {
            assert_int_equal(d->status->n_arms, 3);
            ldpb_envelope_free(d);
            assert_int_equal(alloc_fail_live(), live);
            break;
        }
        assert_int_equal(err, LDPB_ENOMEM);
        assert_null(d);
        assert_int_equal(alloc_fail_live(), live);
        failures++;
    }
    assert_true(failures >= 5); /* envelope, status, two strings, arms array, each arm */
}

static void null_arguments(void **state)
{
    (void)state;
    Ldpb__V1__Envelope *d = NULL;
    size_t len;
    assert_int_equal(ldpb_envelope_decode(NULL, 3, &d, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_envelope_decode(buf, 3, NULL, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_envelope_encode(NULL, buf, sizeof buf, &len, NULL), LDPB_EINVAL);
    ldpb_envelope_free(NULL);
}

/* How many arms a Status reply holds (docs/protocol.md section 5.1): the frame binds long
 * before Status.arms' limit of 65536. Each arm with an estimate and an interval takes about 38
 * bytes, one with pulls and `active` only about 10; the counts below are the largest that
 * ldpb_envelope_encode fits into a sealed frame's plaintext, one more arm being LDPB_ERANGE
 * (request id a 9-byte varint, policy "ldp-ts-b", model "local"). */
static size_t status_arms_fit(int with_estimates, uint64_t pulls)
{
    enum { MAX_TRY = 8000 };
    static Ldpb__V1__ArmStatus arms[MAX_TRY];
    static Ldpb__V1__ArmStatus *ptrs[MAX_TRY];
    static uint8_t out[LDPB_PLAINTEXT_MAX];
    for (uint32_t a = 0; a < MAX_TRY; a++) {
        ldpb__v1__arm_status__init(&arms[a]);
        arms[a].arm = a;
        arms[a].pulls = pulls;
        arms[a].has_estimate = arms[a].has_ci_low = arms[a].has_ci_high = with_estimates;
        arms[a].estimate = 0.5;
        arms[a].ci_low = 0.4;
        arms[a].ci_high = 0.6;
        arms[a].has_active = 1;
        arms[a].active = 1;
        ptrs[a] = &arms[a];
    }
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = UINT64_C(1) << 62;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    env.status = &st;
    st.policy = "ldp-ts-b";
    st.model = "local";
    st.arms = ptrs;
    size_t lo = 1, hi = MAX_TRY; /* fits lo, not hi */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2, len = 0;
        st.n_arms = mid;
        st.reports = st.assignments = pulls * mid;
        ldpb_err e = ldpb_envelope_encode(&env, out, sizeof out, &len, NULL);
        assert_true(e == LDPB_OK || e == LDPB_ERANGE);
        if (e == LDPB_OK)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void status_capacity(void **state)
{
    (void)state;
    assert_int_equal(status_arms_fit(1, 0), 1820);
    assert_int_equal(status_arms_fit(1, 1000000), 1724);
    assert_int_equal(status_arms_fit(0, 0), 7283);
    assert_int_equal(status_arms_fit(0, 1000000), 5958);
}

/* ---- experiments --------------------------------------------------------------------------- */

/* Names that are not experiment names, with the error the sender's check gives. */
static const struct {
    const char *name;
    ldpb_err err;
} bad_names[] = {
    {"", LDPB_EINVAL},
    {"Upper", LDPB_EINVAL},
    {"a b", LDPB_EINVAL},
    {"a/b", LDPB_EINVAL},
    {"caf\xc3\xa9", LDPB_EINVAL}, /* UTF-8, but not [a-z0-9._-] */
    {"tab\t", LDPB_EINVAL},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", LDPB_ERANGE}, /* 65 */
};

/* Sets the experiment field of every message that has one to `name`; NULL clears them. */
typedef struct exp_msgs {
    Ldpb__V1__AssignRequest ar;
    Ldpb__V1__Report rep;
    Ldpb__V1__StatusRequest sr;
    Ldpb__V1__Status st;
    Ldpb__V1__ReportAndAssign ra;
    Ldpb__V1__Report *batch[2];
    Ldpb__V1__Report rep2;
    Ldpb__V1__ReportBatch rb;
} exp_msgs;

static void exp_msgs_init(exp_msgs *m)
{
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    Ldpb__V1__ReportBatch rb = LDPB__V1__REPORT_BATCH__INIT;
    m->ar = ar;
    m->ar.has_max_epsilon = 1;
    m->ar.max_epsilon = 1.0;
    m->rep = rep;
    m->rep.assignment_id.data = id16;
    m->rep.assignment_id.len = sizeof id16;
    m->rep.mechanism = LDPB__V1__MECHANISM__LINEAR;
    m->rep.epsilon = 1.0;
    m->rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    m->rep.bit = 1;
    m->rep2 = m->rep;
    m->sr = sr;
    m->st = st;
    m->st.policy = "ldp-ucb-b";
    m->st.model = "local";
    m->ra = ra;
    m->ra.report = &m->rep;
    m->ra.next = &m->ar;
    m->rb = rb;
    m->batch[0] = &m->rep2;
    m->batch[1] = &m->rep;
    m->rb.n_reports = 2;
    m->rb.reports = m->batch;
}

/* Each body with an experiment field, in turn; `which` selects the field set to `name` in it. */
static void body_at(exp_msgs *m, int k, const char *name, Ldpb__V1__Envelope *e)
{
    env_init(e);
    m->ar.experiment = m->rep.experiment = m->rep2.experiment = NULL;
    m->sr.experiment = m->st.experiment = NULL;
    switch (k) {
    case 0:
        m->ar.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        e->assign_request = &m->ar;
        break;
    case 1:
        m->rep.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e->report = &m->rep;
        break;
    case 2:
        m->sr.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
        e->status_request = &m->sr;
        break;
    case 3:
        m->st.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
        e->status = &m->st;
        break;
    case 4: /* the report inside a report_and_assign */
        m->rep.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
        e->report_and_assign = &m->ra;
        break;
    case 5: /* the next request inside a report_and_assign */
        m->ar.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
        e->report_and_assign = &m->ra;
        break;
    default: /* the second report of a batch */
        m->rep.experiment = (char *)name;
        e->body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
        e->report_batch = &m->rb;
        break;
    }
}

/* Every experiment field: a name round-trips (so does the longest, 64 bytes, and "default"),
 * and every malformed one is refused by the sender's check and by the decoder. */
static void experiment_fields(void **state)
{
    (void)state;
    static const char *good[] = {
        "default", "e0", "a.b_c-9",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    exp_msgs m;
    exp_msgs_init(&m);
    for (int k = 0; k < 7; k++) {
        for (size_t i = 0; i < COUNT(good); i++) {
            Ldpb__V1__Envelope e;
            body_at(&m, k, good[i], &e);
            Ldpb__V1__Envelope *d = round_trip(&e);
            const char *got = k == 0   ? d->assign_request->experiment
                              : k == 1 ? d->report->experiment
                              : k == 2 ? d->status_request->experiment
                              : k == 3 ? d->status->experiment
                              : k == 4 ? d->report_and_assign->report->experiment
                              : k == 5 ? d->report_and_assign->next->experiment
                                       : d->report_batch->reports[1]->experiment;
            assert_non_null(got);
            assert_string_equal(got, good[i]);
            ldpb_envelope_free(d);
        }
        for (size_t i = 0; i < COUNT(bad_names); i++) {
            Ldpb__V1__Envelope e;
            body_at(&m, k, bad_names[i].name, &e);
            char detail[LDPB_DETAIL_BYTES] = "";
            assert_int_equal(ldpb_envelope_check(&e, detail), bad_names[i].err);
            assert_non_null(strstr(detail, "experiment"));
            refused_both_ways(&e, bad_names[i].err);
        }
    }
    assert_true(ldpb_wire_experiment_valid("a", 1));
    assert_false(ldpb_wire_experiment_valid("a", 0));
    assert_false(ldpb_wire_experiment_valid(NULL, 1));
    assert_false(ldpb_wire_experiment_valid("ab\0", 3));
}

/* Without an experiment, every body encodes to exactly the bytes it did before experiments (the
 * known answers below were worked out by hand from the protobuf encoding, docs/protocol.md): an
 * older aggregator reads what a client sends for "default", byte for byte. With one, the field is
 * appended inside its message and nothing else changes. */
static void no_experiment_encodes_as_before(void **state)
{
    (void)state;
    static const uint8_t assign_kat[] = {
        0x08, 0x01,                                                       /* protocol_version 1 */
        0x10, 0xef, 0x9b, 0xaf, 0xcd, 0xf8, 0xac, 0xd1, 0x91, 0x01,       /* request_id */
        0x52, 0x09, 0x11, 0,    0,    0,    0,    0,    0,    0xf0, 0x3f, /* 10: max_epsilon 1.0 */
    };
    static const uint8_t status_kat[] = {
        0x08, 0x01, 0x10, 0xef, 0x9b, 0xaf, 0xcd,
        0xf8, 0xac, 0xd1, 0x91, 0x01, 0x72, 0x00, /* 14: status_request {} */
    };
    exp_msgs m;
    exp_msgs_init(&m);
    Ldpb__V1__Envelope e;
    size_t len = 0;
    body_at(&m, 0, NULL, &e);
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_OK);
    assert_int_equal(len, sizeof assign_kat);
    assert_memory_equal(buf, assign_kat, len);
    body_at(&m, 2, NULL, &e);
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, NULL), LDPB_OK);
    assert_int_equal(len, sizeof status_kat);
    assert_memory_equal(buf, status_kat, len);

    /* With "e1": 0x22 0x02 'e' '1' (field 4) at the end of the assign request, whose length
     * grows by 4; the status request's field 1 the same way. */
    uint8_t with[64];
    body_at(&m, 0, "e1", &e);
    assert_int_equal(ldpb_envelope_encode(&e, with, sizeof with, &len, NULL), LDPB_OK);
    assert_int_equal(len, sizeof assign_kat + 4);
    assert_memory_equal(with, assign_kat, 12);
    assert_int_equal(with[12], 0x52);
    assert_int_equal(with[13], 0x0d);
    assert_memory_equal(with + 14, assign_kat + 14, 9);
    assert_memory_equal(with + 23,
                        "\x22\x02"
                        "e1",
                        4);
    body_at(&m, 2, "e1", &e);
    assert_int_equal(ldpb_envelope_encode(&e, with, sizeof with, &len, NULL), LDPB_OK);
    assert_int_equal(len, sizeof status_kat + 4);
    assert_memory_equal(with + 12,
                        "\x72\x04\x0a\x02"
                        "e1",
                        6);

    /* A report: field 9 (0x4a) appended, nothing else changed. */
    uint8_t before[128];
    size_t before_len = 0;
    body_at(&m, 1, NULL, &e);
    assert_int_equal(ldpb_envelope_encode(&e, before, sizeof before, &before_len, NULL), LDPB_OK);
    body_at(&m, 1, "e1", &e);
    assert_int_equal(ldpb_envelope_encode(&e, with, sizeof with, &len, NULL), LDPB_OK);
    assert_int_equal(len, before_len + 4);
    assert_memory_equal(with + len - 4,
                        "\x4a\x02"
                        "e1",
                        4);
}

static Ldpb__V1__Envelope command_env(Ldpb__V1__ExperimentCommand *c, int op, const char *name,
                                      const char *config, const char *after)
{
    Ldpb__V1__ExperimentCommand init = LDPB__V1__EXPERIMENT_COMMAND__INIT;
    *c = init;
    c->op = (Ldpb__V1__ExperimentCommand__Op)op;
    c->name = (char *)name;
    c->config = (char *)config;
    c->after = (char *)after;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
    e.experiment_command = c;
    return e;
}

/* ExperimentCommand: a known op; a valid name for create, show and stop and none for list;
 * settings for create only, UTF-8, at most LDPB_WIRE_CONFIG_MAX bytes (the decoder's scan allows
 * that much in this one field, LDPB_WIRE_STRING_MAX in every other); `after` for list only. */
static void experiment_command_rules(void **state)
{
    (void)state;
    Ldpb__V1__ExperimentCommand c;
    Ldpb__V1__Envelope e = command_env(&c, 1, "exp-1", "policy = ldp-ucb-b\narms = 3\n", NULL);
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_string_equal(d->experiment_command->config, "policy = ldp-ucb-b\narms = 3\n");
    ldpb_envelope_free(d);
    e = command_env(&c, 1, "exp-1", "", NULL); /* every setting at its default */
    ldpb_envelope_free(round_trip(&e));
    e = command_env(&c, 2, NULL, NULL, NULL);
    ldpb_envelope_free(round_trip(&e));
    e = command_env(&c, 2, NULL, NULL, "exp-1");
    ldpb_envelope_free(round_trip(&e));
    e = command_env(&c, 3, "default", NULL, NULL);
    ldpb_envelope_free(round_trip(&e));
    e = command_env(&c, 4, "exp-1", NULL, NULL);
    ldpb_envelope_free(round_trip(&e));

    const struct {
        int op;
        const char *name, *config, *after;
        ldpb_err err;
        const char *says;
    } bad[] = {
        {0, "exp-1", NULL, NULL, LDPB_EINVAL, "op 0"},
        {5, "exp-1", NULL, NULL, LDPB_EINVAL, "op 5"},
        {1, NULL, "arms = 2", NULL, LDPB_EINVAL, "name is missing"},
        {1, "exp-1", NULL, NULL, LDPB_EINVAL, "config is missing"},
        {1, "Exp", "arms = 2", NULL, LDPB_EINVAL, "experiment_command.name"},
        {3, NULL, NULL, NULL, LDPB_EINVAL, "name is missing"},
        {4, "", NULL, NULL, LDPB_EINVAL, "empty"},
        {3, "exp-1", "arms = 2", NULL, LDPB_EINVAL, "create only"},
        {2, "exp-1", NULL, NULL, LDPB_EINVAL, "takes none"},
        {2, NULL, "arms = 2", NULL, LDPB_EINVAL, "create only"},
        {2, NULL, NULL, "A", LDPB_EINVAL, "experiment_command.after"},
        {4, "exp-1", NULL, "exp-0", LDPB_EINVAL, "list only"},
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        e = command_env(&c, bad[i].op, bad[i].name, bad[i].config, bad[i].after);
        char detail[LDPB_DETAIL_BYTES] = "";
        assert_int_equal(ldpb_envelope_check(&e, detail), bad[i].err);
        if (!strstr(detail, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, detail, bad[i].says);
        refused_both_ways(&e, bad[i].err);
    }

    /* The settings' size: LDPB_WIRE_CONFIG_MAX bytes pass both ways, one more is refused, by the
     * decoder before it allocates anything. */
    static char big[LDPB_WIRE_CONFIG_MAX + 2];
    memset(big, '#', LDPB_WIRE_CONFIG_MAX);
    big[LDPB_WIRE_CONFIG_MAX] = '\0';
    e = command_env(&c, 1, "exp-1", big, NULL);
    ldpb_envelope_free(round_trip(&e));
    big[LDPB_WIRE_CONFIG_MAX] = '#';
    big[LDPB_WIRE_CONFIG_MAX + 1] = '\0';
    char detail[LDPB_DETAIL_BYTES] = "";
    size_t len = 0;
    assert_int_equal(ldpb_envelope_encode(&e, buf, sizeof buf, &len, detail), LDPB_ERANGE);
    assert_non_null(strstr(detail, "config"));
    len = raw_pack(&e, buf);
    refused_before_decoding(buf, len);
    /* Not UTF-8 */
    e = command_env(&c, 1, "exp-1", "arms = \xff", NULL);
    refused_both_ways(&e, LDPB_EINVAL);
    /* another string field still has LDPB_WIRE_STRING_MAX */
    static char long_name[LDPB_WIRE_STRING_MAX + 2];
    memset(long_name, 'a', LDPB_WIRE_STRING_MAX + 1);
    e = command_env(&c, 3, long_name, NULL, NULL);
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_ERANGE);
    len = raw_pack(&e, buf);
    refused_before_decoding(buf, len);
}

static void info_init(Ldpb__V1__ExperimentInfo *i, const char *name)
{
    Ldpb__V1__ExperimentInfo init = LDPB__V1__EXPERIMENT_INFO__INIT;
    *i = init;
    i->name = (char *)name;
    i->policy = "ldp-ucb-b";
    i->mode = "local";
    i->arms = 3;
    i->mechanism = "linear";
    i->has_epsilon = 1;
    i->epsilon = 1.0;
    i->has_horizon = 1;
    i->horizon = 1000;
    i->reports = 5;
    i->assignments = 7;
    i->running = 1;
}

/* ExperimentReply: names, strings and numbers checked; at most LDPB_WIRE_EXPERIMENTS_MAX
 * experiments, refused by the scan beyond. */
static void experiment_reply_rules(void **state)
{
    (void)state;
    Ldpb__V1__ExperimentInfo a, b;
    info_init(&a, "default");
    info_init(&b, "e1");
    b.running = 0;
    b.has_delta = 1;
    b.delta = 1e-6;
    Ldpb__V1__ExperimentInfo *v[2] = {&a, &b};
    Ldpb__V1__ExperimentReply r = LDPB__V1__EXPERIMENT_REPLY__INIT;
    r.n_experiments = 2;
    r.experiments = v;
    r.has_more = 1;
    r.more = 1;
    Ldpb__V1__Envelope e;
    env_init(&e);
    e.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY;
    e.experiment_reply = &r;
    Ldpb__V1__Envelope *d = round_trip(&e);
    assert_int_equal(d->experiment_reply->n_experiments, 2);
    assert_string_equal(d->experiment_reply->experiments[1]->name, "e1");
    assert_false(d->experiment_reply->experiments[1]->running);
    assert_true(d->experiment_reply->has_more && d->experiment_reply->more);
    ldpb_envelope_free(d);
    r.n_experiments = 0; /* an empty list */
    ldpb_envelope_free(round_trip(&e));
    r.n_experiments = 2;

    b.name = "E1";
    refused_both_ways(&e, LDPB_EINVAL);
    b.name = "e1";
    b.epsilon = NAN;
    refused_both_ways(&e, LDPB_EINVAL);
    b.epsilon = 1.0;
    b.delta = -1.0;
    refused_both_ways(&e, LDPB_EINVAL);
    b.delta = 1e-6;
    b.mode = "bad\xc0";
    char detail[LDPB_DETAIL_BYTES] = "";
    assert_int_equal(ldpb_envelope_check(&e, detail), LDPB_EINVAL);
    assert_non_null(strstr(detail, "mode"));
    b.mode = "local";
    b.arms = LDPB_WIRE_ARMS_MAX + 1;
    refused_both_ways(&e, LDPB_ERANGE);
    b.arms = 3;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_OK);

    /* One more experiment than the limit: refused before decoding. */
    size_t n = LDPB_WIRE_EXPERIMENTS_MAX + 1;
    Ldpb__V1__ExperimentInfo **many = calloc(n, sizeof *many);
    Ldpb__V1__ExperimentInfo one;
    info_init(&one, "x");
    assert_non_null(many);
    for (size_t i = 0; i < n; i++)
        many[i] = &one;
    r.experiments = many;
    r.n_experiments = n;
    assert_int_equal(ldpb_envelope_check(&e, NULL), LDPB_ERANGE);
    size_t len = raw_pack(&e, buf);
    refused_before_decoding(buf, len);
    r.n_experiments = n - 1;
    ldpb_envelope_free(round_trip(&e));
    free(many);
}

/* docs/protocol.md, "Experiments": the worked bytes of an AssignRequest and a Report naming
 * experiment "checkout-2", a CREATE, its reply and a LIST page decode to what the page says, and
 * encode back to the same bytes. */
static void experiment_worked_example(void **state)
{
    (void)state;
    static const uint8_t assign[] = {0x08, 0x01, 0x10, 0x07, 0x52, 0x15, 0x11, 0,    0,
                                     0,    0,    0,    0,    0xf0, 0x3f, 0x22, 0x0a, 'c',
                                     'h',  'e',  'c',  'k',  'o',  'u',  't',  '-',  '2'};
    static const uint8_t report[] = {0x08, 0x01, 0x10, 0x08, 0x62, 0x1d, 0x0a, 0x02, 0xaa,
                                     0xbb, 0x10, 0x01, 0x19, 0,    0,    0,    0,    0,
                                     0,    0xf0, 0x3f, 0x20, 0x01, 0x4a, 0x0a, 'c',  'h',
                                     'e',  'c',  'k',  'o',  'u',  't',  '-',  '2'};
    static const uint8_t create[] = {
        0x08, 0x01, 0x10, 0x09, 0xca, 0x01, 0x2c, 0x08, 0x01, 0x12, 0x0a, 'c', 'h',
        'e',  'c',  'k',  'o',  'u',  't',  '-',  '2',  0x1a, 0x1c, 'p',  'o', 'l',
        'i',  'c',  'y',  ' ',  '=',  ' ',  'l',  'd',  'p',  '-',  'u',  'c', 'b',
        '-',  'b',  '\n', 'a',  'r',  'm',  's',  ' ',  '=',  ' ',  '3',  '\n'};
    static const uint8_t reply[] = {
        0x08, 0x01, 0x10, 0x09, 0xd2, 0x01, 0x39, 0x0a, 0x37, 0x0a, 0x0a, 'c', 'h',
        'e',  'c',  'k',  'o',  'u',  't',  '-',  '2',  0x12, 0x09, 'l',  'd', 'p',
        '-',  'u',  'c',  'b',  '-',  'b',  0x1a, 0x05, 'l',  'o',  'c',  'a', 'l',
        0x20, 0x03, 0x2a, 0x06, 'l',  'i',  'n',  'e',  'a',  'r',  0x31, 0,   0,
        0,    0,    0,    0,    0xf0, 0x3f, 0x48, 0x00, 0x50, 0x00, 0x58, 0x01};
    static const uint8_t list[] = {0x08, 0x01, 0x10, 0x0a, 0xca, 0x01, 0x0e, 0x08, 0x02, 0x22, 0x0a,
                                   'c',  'h',  'e',  'c',  'k',  'o',  'u',  't',  '-',  '1'};
    const struct {
        const uint8_t *p;
        size_t n;
    } all[] = {{assign, sizeof assign},
               {report, sizeof report},
               {create, sizeof create},
               {reply, sizeof reply},
               {list, sizeof list}};
    Ldpb__V1__Envelope *d[5];
    for (size_t i = 0; i < 5; i++) {
        char detail[LDPB_DETAIL_BYTES] = "";
        if (ldpb_envelope_decode(all[i].p, all[i].n, &d[i], detail) != LDPB_OK)
            fail_msg("example %zu: %s", i, detail);
        size_t len = 0;
        assert_int_equal(ldpb_envelope_encode(d[i], buf, sizeof buf, &len, NULL), LDPB_OK);
        assert_int_equal(len, all[i].n);
        assert_memory_equal(buf, all[i].p, len);
    }
    assert_string_equal(d[0]->assign_request->experiment, "checkout-2");
    assert_true(d[0]->assign_request->max_epsilon == 1.0);
    assert_string_equal(d[1]->report->experiment, "checkout-2");
    assert_int_equal(d[1]->report->bit, 1);
    assert_int_equal(d[2]->experiment_command->op, LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE);
    assert_string_equal(d[2]->experiment_command->config, "policy = ldp-ucb-b\narms = 3\n");
    const Ldpb__V1__ExperimentInfo *x = d[3]->experiment_reply->experiments[0];
    assert_string_equal(x->name, "checkout-2");
    assert_string_equal(x->mechanism, "linear");
    assert_true(x->epsilon == 1.0 && x->running && x->arms == 3);
    assert_false(d[3]->experiment_reply->has_more);
    assert_int_equal(d[4]->experiment_command->op, LDPB__V1__EXPERIMENT_COMMAND__OP__LIST);
    assert_string_equal(d[4]->experiment_command->after, "checkout-1");
    for (size_t i = 0; i < 5; i++)
        ldpb_envelope_free(d[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_capacity),
        cmocka_unit_test(round_trip_assign_request),
        cmocka_unit_test(round_trip_assignment),
        cmocka_unit_test(round_trip_report),
        cmocka_unit_test(round_trip_ack_and_status_request),
        cmocka_unit_test(round_trip_status_and_error),
        cmocka_unit_test(limit_context_values),
        cmocka_unit_test(limit_strings_and_ids),
        cmocka_unit_test(limit_plaintext_size),
        cmocka_unit_test(malformed_encodings_refused),
        cmocka_unit_test(unknown_fields_bounded),
        cmocka_unit_test(schema_is_covered_by_the_limits),
        cmocka_unit_test(context_worked_example),
        cmocka_unit_test(local_model_worked_example),
        cmocka_unit_test(semantic_rules),
        cmocka_unit_test(truncated_envelopes_fail_cleanly),
        cmocka_unit_test(version_rules),
        cmocka_unit_test(peek_reads_request_id_independently),
        cmocka_unit_test(unknown_body_kind_is_unsupported),
        cmocka_unit_test(body_range_matches_the_schema),
        cmocka_unit_test(error_codes_map),
        cmocka_unit_test(frames),
        cmocka_unit_test(utf8_validation),
        cmocka_unit_test(decode_out_of_memory),
        cmocka_unit_test(null_arguments),
        cmocka_unit_test(experiment_fields),
        cmocka_unit_test(no_experiment_encodes_as_before),
        cmocka_unit_test(experiment_command_rules),
        cmocka_unit_test(experiment_reply_rules),
        cmocka_unit_test(experiment_worked_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
