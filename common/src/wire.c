/* The wire codec: frame layout, Envelope encode and decode. A received Envelope passes four gates
 * in order, each cheap enough to run on every message: the size, a scan of the raw protobuf
 * bytes (every length, count, nesting depth, integer width and duplicate checked before protobuf-c
 * allocates anything), protobuf-c's unpack through a byte-budgeted allocator, and the semantic
 * checks that senders run too (ldpb_envelope_check), so what one side encodes the other accepts. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxstat.h"
#include "ldpb/detail.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/wire.h"

/* The wire enum is the id of the mechanism table (mech_table.h), which is ldpb_mech_kind for the
 * local mechanisms. Every check of a mechanism, its epsilon, its kappa and a report's value is the
 * table's, so a sender and a receiver cannot disagree on them. */
_Static_assert((int)LDPB__V1__MECHANISM__RAW == LDPB_MECH_ID_RAW, "mechanism values");
_Static_assert(LDPB_DETAIL_BYTES == LDPB_MECH_DETAIL_BYTES, "detail buffers");
_Static_assert((int)LDPB__V1__MECHANISM__LINEAR == (int)LDPB_MECH_LINEAR, "mechanism values");
_Static_assert((int)LDPB__V1__MECHANISM__QUADRATIC == (int)LDPB_MECH_QUADRATIC, "mechanism values");
_Static_assert((int)LDPB__V1__MECHANISM__EXPONENTIAL == (int)LDPB_MECH_EXPONENTIAL,
               "mechanism values");
_Static_assert((int)LDPB__V1__MECHANISM__LAPLACE == (int)LDPB_MECH_LAPLACE, "mechanism values");
_Static_assert(LDPB_PLAINTEXT_MAX == 65458u, "documented in docs/protocol.md");
_Static_assert((int)LDPB__V1__MECHANISM__GAUSSIAN_STATS == LDPB_MECH_ID_GAUSSIAN_STATS,
               "mechanism values");
_Static_assert(LDPB_WIRE_STATS_MAX == LDPB_CTXSTAT_VALUES_MAX, "stats limit");

static const uint8_t frame_magic[4] = {'L', 'D', 'P', 'B'};

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

static void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ldpb_wire_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!s)
        return len == 0;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            else if (c == 0xed)
                hi = 0x9f; /* UTF-16 surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            else if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            return 0;
        }
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t k = 2; k < n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return 0;
        i += n;
    }
    return 1;
}

int ldpb_wire_experiment_valid(const char *s, size_t len)
{
    if (!s || len < 1 || len > LDPB_WIRE_EXPERIMENT_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
              ch == '-'))
            return 0;
    }
    return 1;
}

/* ---- frames ------------------------------------------------------------------------------ */

ldpb_err ldpb_frame_parse(const uint8_t *buf, size_t len, ldpb_frame *out, char *detail)
{
    if (!out || (!buf && len))
        return LDPB_EINVAL;
    memset(out, 0, sizeof *out);
    if (len > LDPB_FRAME_MAX) {
        say(detail, "frame of %zu bytes exceeds the limit of %u", len, LDPB_FRAME_MAX);
        return LDPB_EPROTO;
    }
    if (len < LDPB_FRAME_HEADER_BYTES) {
        say(detail, "truncated frame: %zu bytes, the header alone is %u", len,
            LDPB_FRAME_HEADER_BYTES);
        return LDPB_EPROTO;
    }
    if (memcmp(buf, frame_magic, sizeof frame_magic) != 0) {
        say(detail, "bad frame magic (expected \"LDPB\")");
        return LDPB_EPROTO;
    }
    if (buf[4] != LDPB_FRAME_VERSION) {
        say(detail, "frame version %u is not supported; this peer speaks frame version %u",
            (unsigned)buf[4], LDPB_FRAME_VERSION);
        return LDPB_EVERSION;
    }
    const uint8_t *p = buf + LDPB_FRAME_HEADER_BYTES;
    switch (buf[5]) {
    case LDPB_FRAME_SEALED:
        if (len < LDPB_FRAME_SEALED_OVERHEAD) {
            say(detail, "truncated sealed frame: %zu bytes, at least %u needed", len,
                LDPB_FRAME_SEALED_OVERHEAD);
            return LDPB_EPROTO;
        }
        out->kind = LDPB_FRAME_SEALED;
        out->client_pk = p;
        out->nonce = p + LDPB_FRAME_PK_BYTES;
        out->ciphertext = p + LDPB_FRAME_PK_BYTES + LDPB_FRAME_NONCE_BYTES;
        out->ciphertext_len =
            len - (LDPB_FRAME_HEADER_BYTES + LDPB_FRAME_PK_BYTES + LDPB_FRAME_NONCE_BYTES);
        return LDPB_OK;
    case LDPB_FRAME_PLAIN_ERROR: {
        if (len < LDPB_FRAME_ERROR_MIN) {
            say(detail, "truncated error frame: %zu bytes, at least %u needed", len,
                LDPB_FRAME_ERROR_MIN);
            return LDPB_EPROTO;
        }
        uint32_t code = get_le32(p);
        size_t rlen = get_le16(p + 4);
        if (code == 0) {
            say(detail, "error frame with code 0");
            return LDPB_EPROTO;
        }
        if (rlen > LDPB_WIRE_STRING_MAX) {
            say(detail, "error reason of %zu bytes exceeds the limit of %u", rlen,
                LDPB_WIRE_STRING_MAX);
            return LDPB_EPROTO;
        }
        if (len != LDPB_FRAME_ERROR_MIN + rlen) {
            say(detail, "error frame of %zu bytes does not match its reason length %zu", len, rlen);
            return LDPB_EPROTO;
        }
        const char *reason = (const char *)(p + 6);
        if (!ldpb_wire_utf8_valid(reason, rlen)) {
            say(detail, "error reason is not UTF-8 text");
            return LDPB_EPROTO;
        }
        out->kind = LDPB_FRAME_PLAIN_ERROR;
        out->error_code = code;
        out->reason = reason;
        out->reason_len = rlen;
        return LDPB_OK;
    }
    default:
        say(detail, "unknown frame kind %u", (unsigned)buf[5]);
        return LDPB_EPROTO;
    }
}

ldpb_err ldpb_frame_build_plain_error(uint8_t *buf, size_t cap, size_t *len, uint32_t code,
                                      const char *reason)
{
    if (!len || !reason || code == 0 || (!buf && cap))
        return LDPB_EINVAL;
    size_t rlen = strlen(reason);
    if (!ldpb_wire_utf8_valid(reason, rlen))
        return LDPB_EINVAL;
    if (rlen > LDPB_WIRE_STRING_MAX) {
        rlen = LDPB_WIRE_STRING_MAX;
        while (rlen > 0 && ((unsigned char)reason[rlen] & 0xc0) == 0x80)
            rlen--; /* never cut a character in half */
    }
    *len = LDPB_FRAME_ERROR_MIN + rlen;
    if (cap < *len)
        return LDPB_ERANGE;
    memcpy(buf, frame_magic, sizeof frame_magic);
    buf[4] = LDPB_FRAME_VERSION;
    buf[5] = LDPB_FRAME_PLAIN_ERROR;
    put_le32(buf + 6, code);
    put_le16(buf + 10, (uint16_t)rlen);
    memcpy(buf + LDPB_FRAME_ERROR_MIN, reason, rlen);
    return LDPB_OK;
}

/* ---- semantic checks (both directions) ---------------------------------------------------- */

static ldpb_err check_finite(double v, const char *what, char *detail)
{
    if (isfinite(v))
        return LDPB_OK;
    say(detail, "%s is not a finite number", what);
    return LDPB_EINVAL;
}

static ldpb_err check_id(const ProtobufCBinaryData *id, const char *what, char *detail)
{
    if (id->len == 0 || !id->data) {
        say(detail, "%s.assignment_id is empty", what);
        return LDPB_EINVAL;
    }
    if (id->len > LDPB_WIRE_ID_MAX) {
        say(detail, "%s.assignment_id has %zu bytes, more than %u", what, id->len,
            LDPB_WIRE_ID_MAX);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}

static ldpb_err check_string_max(const char *s, size_t max, const char *what, char *detail)
{
    if (!s) {
        say(detail, "%s is missing", what);
        return LDPB_EINVAL;
    }
    size_t n = strnlen(s, max + 1);
    if (n > max) {
        say(detail, "%s is longer than %zu bytes", what, max);
        return LDPB_ERANGE;
    }
    if (!ldpb_wire_utf8_valid(s, n)) {
        say(detail, "%s is not UTF-8 text", what);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

static ldpb_err check_string(const char *s, const char *what, char *detail)
{
    return check_string_max(s, LDPB_WIRE_STRING_MAX, what, detail);
}

/* An experiment name where one is optional (NULL: absent, which means "default"). The detail
 * names the first offending byte rather than echoing the bytes, which may be anything. */
static ldpb_err check_experiment(const char *s, const char *what, char *detail)
{
    if (!s)
        return LDPB_OK;
    size_t n = strnlen(s, LDPB_WIRE_EXPERIMENT_MAX + 1);
    if (n == 0) {
        say(detail, "%s is empty (leave it out for the experiment \"default\")", what);
        return LDPB_EINVAL;
    }
    if (n > LDPB_WIRE_EXPERIMENT_MAX) {
        say(detail, "%s is longer than %u bytes", what, LDPB_WIRE_EXPERIMENT_MAX);
        return LDPB_ERANGE;
    }
    for (size_t i = 0; i < n; i++)
        if (!ldpb_wire_experiment_valid(s + i, 1)) {
            say(detail,
                "%s: byte %zu (0x%02x) is not allowed in an experiment name (a-z, 0-9, '.', "
                "'_', '-')",
                what, i, (unsigned)(unsigned char)s[i]);
            return LDPB_EINVAL;
        }
    return LDPB_OK;
}

/* An experiment name where one is required. */
static ldpb_err check_experiment_required(const char *s, const char *what, char *detail)
{
    if (!s) {
        say(detail, "%s is missing", what);
        return LDPB_EINVAL;
    }
    return check_experiment(s, what, detail);
}

static ldpb_err check_assign_request(const Ldpb__V1__AssignRequest *m, char *detail)
{
    if (m->n_context > LDPB_WIRE_CONTEXT_MAX) {
        say(detail, "assign_request.context has %zu values, more than %u", m->n_context,
            LDPB_WIRE_CONTEXT_MAX);
        return LDPB_ERANGE;
    }
    if (m->n_context && !m->context) {
        say(detail, "assign_request.context is missing");
        return LDPB_EINVAL;
    }
    for (size_t i = 0; i < m->n_context; i++)
        if (!isfinite(m->context[i])) {
            say(detail, "assign_request.context[%zu] is not a finite number", i);
            return LDPB_EINVAL;
        }
    if (m->has_max_epsilon) {
        ldpb_err err = check_finite(m->max_epsilon, "assign_request.max_epsilon", detail);
        if (err)
            return err;
        if (!(m->max_epsilon > 0.0 && m->max_epsilon <= LDPB_EPSILON_MAX)) {
            say(detail, "assign_request.max_epsilon %g outside (0, %g]", m->max_epsilon,
                LDPB_EPSILON_MAX);
            return LDPB_ERANGE;
        }
    }
    return check_experiment(m->experiment, "assign_request.experiment", detail);
}

/* A packed statistics vector: n finite values, n = (d+1)(d+2)/2 for a d in [1, D_MAX] (d_of:
 * that d, when wanted). */
static ldpb_err check_stats(const double *v, size_t n, const char *what, uint32_t *d_of,
                            char *detail)
{
    if (n && !v) {
        say(detail, "%s is missing", what);
        return LDPB_EINVAL;
    }
    uint32_t d = 1;
    while (d < LDPB_CTXSTAT_D_MAX && LDPB_CTXSTAT_VALUES(d) < n)
        d++;
    if (n > LDPB_WIRE_STATS_MAX || LDPB_CTXSTAT_VALUES(d) != n) {
        say(detail, "%s has %zu values, not (d+1)(d+2)/2 for a d in [1, %u]", what, n,
            LDPB_CTXSTAT_D_MAX);
        return n > LDPB_WIRE_STATS_MAX ? LDPB_ERANGE : LDPB_EINVAL;
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            say(detail, "%s[%zu] is not a finite number", what, i);
            return LDPB_EINVAL;
        }
    if (d_of)
        *d_of = d;
    return LDPB_OK;
}

static ldpb_err check_stats_delta(double delta, const char *what, char *detail)
{
    ldpb_err err = check_finite(delta, what, detail);
    if (err)
        return err;
    if (!(delta > 0.0 && delta <= LDPB_CTXSTAT_DELTA_MAX)) {
        say(detail, "%s %g outside (0, %g]", what, delta, LDPB_CTXSTAT_DELTA_MAX);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}

/* The model and mechanism of a local-mode assignment (ldpb/ctxmodel.h, ldpb/ctxstat.h). */
static ldpb_err check_local_model(const Ldpb__V1__LocalModel *m, char *detail)
{
    if (m->d < 1 || m->d > LDPB_CTXSTAT_D_MAX) {
        say(detail, "assignment.local_model.d %u outside [1, %u]", (unsigned)m->d,
            LDPB_CTXSTAT_D_MAX);
        return LDPB_ERANGE;
    }
    uint32_t d = 0;
    ldpb_err err = check_stats(m->stats, m->n_stats, "assignment.local_model.stats", &d, detail);
    if (err)
        return err;
    if (d != m->d) {
        say(detail, "assignment.local_model.stats has %zu values, d = %u needs %zu", m->n_stats,
            (unsigned)m->d, LDPB_CTXSTAT_VALUES(m->d));
        return LDPB_EINVAL;
    }
    err = check_stats_delta(m->delta, "assignment.local_model.delta", detail);
    const struct {
        double v;
        const char *name;
        int positive; /* > 0 rather than >= 0 */
    } nums[] = {
        {m->shift, "assignment.local_model.shift", 0},
        {m->beta, "assignment.local_model.beta", 0},
        {m->feature_norm, "assignment.local_model.feature_norm", 1},
        {m->reward_bound, "assignment.local_model.reward_bound", 1},
    };
    for (size_t i = 0; !err && i < sizeof nums / sizeof nums[0]; i++) {
        err = check_finite(nums[i].v, nums[i].name, detail);
        if (!err && !(nums[i].positive ? nums[i].v > 0.0 : nums[i].v >= 0.0)) {
            say(detail, "%s %g must be %s", nums[i].name, nums[i].v,
                nums[i].positive ? "> 0" : ">= 0");
            err = LDPB_ERANGE;
        }
    }
    return err;
}

static int is_vector_mech(int id)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    return d && d->output == LDPB_MECH_OUTPUT_VECTOR;
}

static ldpb_err check_assignment(const Ldpb__V1__Assignment *m, char *detail)
{
    ldpb_err err = check_id(&m->assignment_id, "assignment", detail);
    if (!err)
        err = ldpb_mech_check_epsilon((int)m->mechanism, m->epsilon, "assignment", detail);
    if (!err)
        err = check_finite(m->propensity, "assignment.propensity", detail);
    if (err)
        return err;
    if (!(m->propensity > 0.0 && m->propensity <= 1.0)) {
        say(detail, "assignment.propensity %g outside (0, 1]", m->propensity);
        return LDPB_ERANGE;
    }
    if (is_vector_mech((int)m->mechanism) != (m->local_model != NULL)) {
        say(detail,
            m->local_model ? "assignment.local_model is set but mechanism %d reports no "
                             "statistics"
                           : "assignment with mechanism %d has no local_model",
            (int)m->mechanism);
        return LDPB_EINVAL;
    }
    if (m->local_model && (err = check_local_model(m->local_model, detail)) != LDPB_OK)
        return err;
    return ldpb_mech_check_kappa((int)m->mechanism, m->has_kappa, m->kappa, "assignment", detail);
}

static ldpb_err check_report_value(const Ldpb__V1__Report *m, char *detail);

static ldpb_err check_report(const Ldpb__V1__Report *m, char *detail)
{
    ldpb_err err = check_report_value(m, detail);
    return err ? err : check_experiment(m->experiment, "report.experiment", detail);
}

/* Everything of a report but its experiment. */
static ldpb_err check_report_value(const Ldpb__V1__Report *m, char *detail)
{
    ldpb_err err = check_id(&m->assignment_id, "report", detail);
    if (err)
        return err;
    if (m->n_context > LDPB_WIRE_REPORT_CTX_MAX) {
        say(detail, "report.context has %zu values, more than %u", m->n_context,
            LDPB_WIRE_REPORT_CTX_MAX);
        return LDPB_ERANGE;
    }
    if (m->n_context && !m->context) {
        say(detail, "report.context is missing");
        return LDPB_EINVAL;
    }
    for (size_t i = 0; i < m->n_context; i++)
        if (!isfinite(m->context[i])) {
            say(detail, "report.context[%zu] is not a finite number", i);
            return LDPB_EINVAL;
        }
    if (is_vector_mech((int)m->mechanism)) {
        /* The local contextual mode: the privatized statistics and nothing in the clear. */
        err = ldpb_mech_check_epsilon((int)m->mechanism, m->epsilon, "report", detail);
        if (err)
            return err;
        if (m->value_case == LDPB__V1__REPORT__VALUE_BIT)
            return ldpb_mech_check_field((int)m->mechanism, m->epsilon, 1, (double)m->bit, "report",
                                         detail);
        if (m->value_case == LDPB__V1__REPORT__VALUE_REAL)
            return ldpb_mech_check_field((int)m->mechanism, m->epsilon, 0, m->real, "report",
                                         detail);
        if (m->n_context) {
            say(detail, "report with mechanism gaussian-stats carries a context");
            return LDPB_EINVAL;
        }
        if (m->n_stats == 0) {
            say(detail, "report with mechanism gaussian-stats has no stats");
            return LDPB_EINVAL;
        }
        if (!m->has_delta) {
            say(detail, "report with mechanism gaussian-stats has no delta");
            return LDPB_EINVAL;
        }
        err = check_stats_delta(m->delta, "report.delta", detail);
        return err ? err : check_stats(m->stats, m->n_stats, "report.stats", NULL, detail);
    }
    if (m->n_stats || m->has_delta) {
        say(detail, "report.%s is set but mechanism %d reports no statistics",
            m->n_stats ? "stats" : "delta", (int)m->mechanism);
        return LDPB_EINVAL;
    }
    switch ((int)m->value_case) {
    case LDPB__V1__REPORT__VALUE_BIT:
        return ldpb_mech_check_field((int)m->mechanism, m->epsilon, 1, (double)m->bit, "report",
                                     detail);
    case LDPB__V1__REPORT__VALUE_REAL:
        return ldpb_mech_check_field((int)m->mechanism, m->epsilon, 0, m->real, "report", detail);
    default:
        /* The mechanism and epsilon first, as for a report with a value. */
        err = ldpb_mech_check_epsilon((int)m->mechanism, m->epsilon, "report", detail);
        if (err)
            return err;
        say(detail, "report has no value");
        return LDPB_EINVAL;
    }
}

static ldpb_err check_status(const Ldpb__V1__Status *m, char *detail)
{
    ldpb_err err = check_string(m->policy, "status.policy", detail);
    if (!err)
        err = check_string(m->model, "status.model", detail);
    if (err)
        return err;
    if (m->n_arms > LDPB_WIRE_ARMS_MAX) {
        say(detail, "status.arms has %zu entries, more than %u", m->n_arms, LDPB_WIRE_ARMS_MAX);
        return LDPB_ERANGE;
    }
    if (m->n_arms && !m->arms) {
        say(detail, "status.arms is missing");
        return LDPB_EINVAL;
    }
    for (size_t i = 0; i < m->n_arms; i++) {
        const Ldpb__V1__ArmStatus *a = m->arms[i];
        if (!a) {
            say(detail, "status.arms[%zu] is missing", i);
            return LDPB_EINVAL;
        }
        if ((a->has_estimate && !isfinite(a->estimate)) ||
            (a->has_ci_low && !isfinite(a->ci_low)) || (a->has_ci_high && !isfinite(a->ci_high))) {
            say(detail, "status.arms[%zu] has a number that is not finite", i);
            return LDPB_EINVAL;
        }
    }
    return check_experiment(m->experiment, "status.experiment", detail);
}

static ldpb_err missing_body(char *detail)
{
    say(detail, "envelope body pointer is NULL");
    return LDPB_EINVAL;
}

static ldpb_err check_error(const Ldpb__V1__Error *e, char *detail)
{
    if (e->code == 0) {
        say(detail, "error.code is 0");
        return LDPB_EINVAL;
    }
    return check_string(e->reason, "error.reason", detail);
}

static ldpb_err check_report_and_assign(const Ldpb__V1__ReportAndAssign *m, char *detail)
{
    if (!m->report || !m->next)
        return missing_body(detail);
    ldpb_err err = check_report(m->report, detail);
    return err ? err : check_assign_request(m->next, detail);
}

static ldpb_err check_ack_and_assignment(const Ldpb__V1__AckAndAssignment *m, char *detail)
{
    if (!m->ack)
        return missing_body(detail);
    ldpb_err err = check_id(&m->ack->assignment_id, "ack", detail);
    if (err)
        return err;
    switch ((int)m->next_case) {
    case LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT:
        return m->assignment ? check_assignment(m->assignment, detail) : missing_body(detail);
    case LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ERROR:
        return m->error ? check_error(m->error, detail) : missing_body(detail);
    default:
        say(detail, "ack_and_assignment has neither an assignment nor an error");
        return LDPB_EINVAL;
    }
}

static ldpb_err check_report_batch(const Ldpb__V1__ReportBatch *m, char *detail)
{
    if (m->n_reports == 0 || m->n_reports > LDPB_WIRE_BATCH_MAX) {
        say(detail, "report_batch has %zu reports, not 1 to %u", m->n_reports, LDPB_WIRE_BATCH_MAX);
        return m->n_reports ? LDPB_ERANGE : LDPB_EINVAL;
    }
    if (!m->reports)
        return missing_body(detail);
    for (size_t i = 0; i < m->n_reports; i++) {
        if (!m->reports[i])
            return missing_body(detail);
        ldpb_err err = check_report(m->reports[i], detail);
        if (err)
            return err;
    }
    return LDPB_OK;
}

static ldpb_err check_batch_ack(const Ldpb__V1__BatchAck *m, char *detail)
{
    if (m->n_results == 0 || m->n_results > LDPB_WIRE_BATCH_MAX) {
        say(detail, "batch_ack has %zu results, not 1 to %u", m->n_results, LDPB_WIRE_BATCH_MAX);
        return m->n_results ? LDPB_ERANGE : LDPB_EINVAL;
    }
    if (!m->results)
        return missing_body(detail);
    for (size_t i = 0; i < m->n_results; i++) {
        if (!m->results[i])
            return missing_body(detail);
        ldpb_err err = check_id(&m->results[i]->assignment_id, "batch_ack.results", detail);
        if (err)
            return err;
    }
    return LDPB_OK;
}

static const char *experiment_op_name(int op)
{
    switch (op) {
    case LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE:
        return "create";
    case LDPB__V1__EXPERIMENT_COMMAND__OP__LIST:
        return "list";
    case LDPB__V1__EXPERIMENT_COMMAND__OP__SHOW:
        return "show";
    case LDPB__V1__EXPERIMENT_COMMAND__OP__STOP:
        return "stop";
    default:
        return NULL;
    }
}

/* An operator command: a known op; a name for create, show and stop (and none for list); the
 * settings text for create only; `after` for list only. */
static ldpb_err check_experiment_command(const Ldpb__V1__ExperimentCommand *m, char *detail)
{
    const char *op = experiment_op_name((int)m->op);
    if (!op) {
        say(detail,
            "experiment_command.op %d is not a known operation (1 create, 2 list, 3 show, "
            "4 stop)",
            (int)m->op);
        return LDPB_EINVAL;
    }
    int is_list = m->op == LDPB__V1__EXPERIMENT_COMMAND__OP__LIST;
    int is_create = m->op == LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE;
    ldpb_err err;
    if (is_list) {
        if (m->name) {
            say(detail, "experiment_command.name is set for list, which takes none");
            return LDPB_EINVAL;
        }
        err = check_experiment(m->after, "experiment_command.after", detail);
    } else {
        if (m->after) {
            say(detail, "experiment_command.after is set for %s (list only)", op);
            return LDPB_EINVAL;
        }
        err = check_experiment_required(m->name, "experiment_command.name", detail);
    }
    if (err)
        return err;
    if (is_create)
        return check_string_max(m->config, LDPB_WIRE_CONFIG_MAX, "experiment_command.config",
                                detail);
    if (m->config) {
        say(detail, "experiment_command.config is set for %s (create only)", op);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

static ldpb_err check_experiment_info(const Ldpb__V1__ExperimentInfo *m, size_t i, char *detail)
{
    char what[64];
    snprintf(what, sizeof what, "experiment_reply.experiments[%zu].name", i);
    ldpb_err err = check_experiment_required(m->name, what, detail);
    if (!err)
        err = check_string(m->policy, "experiment_reply.experiments[].policy", detail);
    if (!err)
        err = check_string(m->mode, "experiment_reply.experiments[].mode", detail);
    if (!err && m->mechanism)
        err = check_string(m->mechanism, "experiment_reply.experiments[].mechanism", detail);
    if (err)
        return err;
    if (m->arms > LDPB_WIRE_ARMS_MAX) {
        say(detail, "experiment_reply.experiments[%zu].arms %u, more than %u", i, (unsigned)m->arms,
            LDPB_WIRE_ARMS_MAX);
        return LDPB_ERANGE;
    }
    if ((m->has_epsilon && !(isfinite(m->epsilon) && m->epsilon >= 0.0)) ||
        (m->has_delta && !(isfinite(m->delta) && m->delta >= 0.0))) {
        say(detail,
            "experiment_reply.experiments[%zu] has an epsilon or delta that is not a finite "
            "number >= 0",
            i);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

static ldpb_err check_experiment_reply(const Ldpb__V1__ExperimentReply *m, char *detail)
{
    if (m->n_experiments > LDPB_WIRE_EXPERIMENTS_MAX) {
        say(detail, "experiment_reply has %zu experiments, more than %u", m->n_experiments,
            LDPB_WIRE_EXPERIMENTS_MAX);
        return LDPB_ERANGE;
    }
    if (m->n_experiments && !m->experiments)
        return missing_body(detail);
    for (size_t i = 0; i < m->n_experiments; i++) {
        if (!m->experiments[i])
            return missing_body(detail);
        ldpb_err err = check_experiment_info(m->experiments[i], i, detail);
        if (err)
            return err;
    }
    return LDPB_OK;
}

ldpb_err ldpb_envelope_check(const Ldpb__V1__Envelope *env, char *detail)
{
    if (!env)
        return LDPB_EINVAL;
    if (env->protocol_version != LDPB_PROTOCOL_VERSION) {
        say(detail, "protocol_version %u, expected %u", (unsigned)env->protocol_version,
            LDPB_PROTOCOL_VERSION);
        return LDPB_EINVAL;
    }
    switch ((int)env->body_case) {
    case LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST:
        return env->assign_request ? check_assign_request(env->assign_request, detail)
                                   : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_ASSIGNMENT:
        return env->assignment ? check_assignment(env->assignment, detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_REPORT:
        return env->report ? check_report(env->report, detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_ACK:
        return env->ack ? check_id(&env->ack->assignment_id, "ack", detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST:
        return env->status_request ? check_experiment(env->status_request->experiment,
                                                      "status_request.experiment", detail)
                                   : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_STATUS:
        return env->status ? check_status(env->status, detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_ERROR:
        return env->error ? check_error(env->error, detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN:
        return env->report_and_assign ? check_report_and_assign(env->report_and_assign, detail)
                                      : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT:
        return env->ack_and_assignment ? check_ack_and_assignment(env->ack_and_assignment, detail)
                                       : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_REPORT_BATCH:
        return env->report_batch ? check_report_batch(env->report_batch, detail)
                                 : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_BATCH_ACK:
        return env->batch_ack ? check_batch_ack(env->batch_ack, detail) : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND:
        return env->experiment_command ? check_experiment_command(env->experiment_command, detail)
                                       : missing_body(detail);
    case LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY:
        return env->experiment_reply ? check_experiment_reply(env->experiment_reply, detail)
                                     : missing_body(detail);
    default:
        say(detail, "envelope has no body");
        return LDPB_EINVAL;
    }
}

ldpb_err ldpb_envelope_encode(const Ldpb__V1__Envelope *env, uint8_t *buf, size_t cap, size_t *len,
                              char *detail)
{
    if (!env || !len || (!buf && cap))
        return LDPB_EINVAL;
    *len = 0;
    ldpb_err err = ldpb_envelope_check(env, detail);
    if (err)
        return err;
    size_t size = ldpb__v1__envelope__get_packed_size(env);
    if (size > LDPB_PLAINTEXT_MAX) {
        say(detail, "envelope encodes to %zu bytes, more than %u", size, LDPB_PLAINTEXT_MAX);
        return LDPB_ERANGE;
    }
    *len = size;
    if (cap < size) {
        say(detail, "output buffer of %zu bytes, %zu needed", cap, size);
        return LDPB_ERANGE;
    }
    ldpb__v1__envelope__pack(env, buf);
    return LDPB_OK;
}

/* ---- raw protobuf scanning ---------------------------------------------------------------- */

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };

/* Reads a varint of at most 10 bytes whose value fits 64 bits. 0 on malformed input. */
static int read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos >= len)
            return 0;
        uint8_t b = p[(*pos)++];
        if (i == 9 && b > 1)
            return 0;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Skips the value of a field of wire type `wt` at *pos; sets *vlen and *vstart for WT_LEN. */
static int skip_value(const uint8_t *p, size_t len, size_t *pos, unsigned wt, uint64_t *varint,
                      size_t *vstart, size_t *vlen)
{
    uint64_t v;
    switch (wt) {
    case WT_VARINT:
        return read_varint(p, len, pos, varint);
    case WT_FIXED64:
        if (len - *pos < 8)
            return 0;
        *pos += 8;
        return 1;
    case WT_FIXED32:
        if (len - *pos < 4)
            return 0;
        *pos += 4;
        return 1;
    case WT_LEN:
        if (!read_varint(p, len, pos, &v) || v > len - *pos)
            return 0;
        *vstart = *pos;
        *vlen = (size_t)v;
        *pos += (size_t)v;
        return 1;
    default:
        return 0; /* groups (3, 4) and the undefined wire types 6, 7 */
    }
}

/* The wire type a field's scalar encoding uses (packed repeated fields use WT_LEN). */
static unsigned wire_type_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return WT_FIXED32;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return WT_FIXED64;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return WT_LEN;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_BOOL:
    case PROTOBUF_C_TYPE_ENUM:
        return WT_VARINT;
    }
    return 7; /* matches no wire type */
}

/* protobuf-c silently truncates a varint wider than its field; refuse instead, so what the
 * checks see is what was sent. */
static int varint_fits(ProtobufCType t, uint64_t v)
{
    switch (t) {
    case PROTOBUF_C_TYPE_UINT32:
        return v <= UINT32_MAX;
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_INT32:
        /* non-negative, or a negative int32 sign-extended to 64 bits */
        return v <= INT32_MAX || v >= UINT64_C(0xffffffff80000000);
    case PROTOBUF_C_TYPE_SINT32:
        return v <= UINT32_MAX;
    case PROTOBUF_C_TYPE_BOOL:
        return v <= 1;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return 1;
    }
    return 0;
}

/* The limit on every repeated field of the schema; a test checks the table is complete. */
static const struct {
    const ProtobufCMessageDescriptor *msg;
    uint32_t id;
    size_t max;
} repeated_limits[] = {
    {&ldpb__v1__assign_request__descriptor, 1, LDPB_WIRE_CONTEXT_MAX},
    {&ldpb__v1__report__descriptor, 6, LDPB_WIRE_REPORT_CTX_MAX},
    {&ldpb__v1__report__descriptor, 7, LDPB_WIRE_STATS_MAX},
    {&ldpb__v1__local_model__descriptor, 2, LDPB_WIRE_STATS_MAX},
    {&ldpb__v1__status__descriptor, 5, LDPB_WIRE_ARMS_MAX},
    {&ldpb__v1__report_batch__descriptor, 1, LDPB_WIRE_BATCH_MAX},
    {&ldpb__v1__batch_ack__descriptor, 1, LDPB_WIRE_BATCH_MAX},
    {&ldpb__v1__experiment_reply__descriptor, 1, LDPB_WIRE_EXPERIMENTS_MAX},
};

/* Strings are at most LDPB_WIRE_STRING_MAX bytes but for a CREATE's settings text. */
static size_t string_limit(const ProtobufCMessageDescriptor *msg, uint32_t id)
{
    if (msg == &ldpb__v1__experiment_command__descriptor && id == 3)
        return LDPB_WIRE_CONFIG_MAX;
    return LDPB_WIRE_STRING_MAX;
}

static size_t repeated_limit(const ProtobufCMessageDescriptor *msg, uint32_t id)
{
    for (size_t i = 0; i < sizeof repeated_limits / sizeof repeated_limits[0]; i++)
        if (repeated_limits[i].msg == msg && repeated_limits[i].id == id)
            return repeated_limits[i].max;
    return 0; /* a repeated field without a limit admits nothing */
}

#define SCAN_FIELDS_MAX 16u /* fields per message in the schema; a test checks it */
#define SCAN_ONEOFS_MAX 4u

struct scan {
    unsigned unknown;
    char *detail;
};

static ldpb_err scan_message(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
                             unsigned depth, struct scan *sc);

/* Counts the elements of a packed run of `len` bytes and checks each varint's width. */
static int packed_count(const ProtobufCFieldDescriptor *f, const uint8_t *p, size_t len,
                        size_t *count)
{
    switch (wire_type_of(f->type)) {
    case WT_FIXED64:
        *count = len / 8;
        return len % 8 == 0;
    case WT_FIXED32:
        *count = len / 4;
        return len % 4 == 0;
    case WT_VARINT: {
        size_t pos = 0, n = 0;
        while (pos < len) {
            uint64_t v;
            if (!read_varint(p, len, &pos, &v) || !varint_fits(f->type, v))
                return 0;
            n++;
        }
        *count = n;
        return 1;
    }
    default:
        return 0;
    }
}

static ldpb_err scan_field(const ProtobufCMessageDescriptor *desc,
                           const ProtobufCFieldDescriptor *f, unsigned wt, uint64_t varint,
                           const uint8_t *v, size_t vlen, size_t *count, unsigned depth,
                           struct scan *sc)
{
    unsigned want = wire_type_of(f->type);
    int packed = f->label == PROTOBUF_C_LABEL_REPEATED && wt == WT_LEN && want != WT_LEN;
    if (wt != want && !packed) {
        say(sc->detail, "%s.%s has wire type %u, expected %u", desc->short_name, f->name, wt, want);
        return LDPB_EPROTO;
    }
    if (wt == WT_VARINT && !varint_fits(f->type, varint)) {
        say(sc->detail, "%s.%s: value out of range for its type", desc->short_name, f->name);
        return LDPB_EPROTO;
    }
    size_t n = 1;
    if (packed && !packed_count(f, v, vlen, &n)) {
        say(sc->detail, "%s.%s: malformed packed values", desc->short_name, f->name);
        return LDPB_EPROTO;
    }
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        size_t max = repeated_limit(desc, f->id);
        if (n > max - *count) {
            say(sc->detail, "%s.%s has more than %zu values", desc->short_name, f->name, max);
            return LDPB_EPROTO;
        }
        *count += n;
    } else if ((*count)++ > 0) {
        say(sc->detail, "%s.%s appears more than once", desc->short_name, f->name);
        return LDPB_EPROTO;
    }
    if (wt != WT_LEN || packed)
        return LDPB_OK;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
        if (vlen > string_limit(desc, f->id)) {
            say(sc->detail, "%s.%s has %zu bytes, more than %zu", desc->short_name, f->name, vlen,
                string_limit(desc, f->id));
            return LDPB_EPROTO;
        }
        if (!ldpb_wire_utf8_valid((const char *)v, vlen)) {
            say(sc->detail, "%s.%s is not UTF-8 text", desc->short_name, f->name);
            return LDPB_EPROTO;
        }
        return LDPB_OK;
    case PROTOBUF_C_TYPE_BYTES: /* the schema's only bytes fields are assignment ids */
        if (vlen > LDPB_WIRE_ID_MAX) {
            say(sc->detail, "%s.%s has %zu bytes, more than %u", desc->short_name, f->name, vlen,
                LDPB_WIRE_ID_MAX);
            return LDPB_EPROTO;
        }
        return LDPB_OK;
    case PROTOBUF_C_TYPE_MESSAGE:
        return scan_message(f->descriptor, v, vlen, depth + 1, sc);
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_BOOL:
    case PROTOBUF_C_TYPE_ENUM:
        break;
    }
    return LDPB_OK;
}

/* Walks one message's fields. Beyond protobuf's own rules it refuses a singular field or a oneof
 * that occurs twice (protobuf would merge or overwrite; a conforming encoder never emits it), so
 * the counts checked here are exactly what protobuf-c will allocate. */
static ldpb_err scan_message(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
                             unsigned depth, struct scan *sc)
{
    if (depth > LDPB_WIRE_DEPTH_MAX) {
        say(sc->detail, "messages nested deeper than %u", LDPB_WIRE_DEPTH_MAX);
        return LDPB_EPROTO;
    }
    if (desc->n_fields > SCAN_FIELDS_MAX) {
        say(sc->detail, "%s has too many fields for the scanner", desc->short_name);
        return LDPB_EPROTO;
    }
    size_t counts[SCAN_FIELDS_MAX] = {0};
    unsigned oneof_at[SCAN_ONEOFS_MAX];
    uint32_t oneof_id[SCAN_ONEOFS_MAX];
    unsigned n_oneof = 0;
    size_t pos = 0;
    while (pos < len) {
        uint64_t tag, varint = 0;
        size_t vstart = 0, vlen = 0;
        if (!read_varint(p, len, &pos, &tag)) {
            say(sc->detail, "%s: malformed field tag", desc->short_name);
            return LDPB_EPROTO;
        }
        uint64_t id = tag >> 3;
        unsigned wt = (unsigned)(tag & 7);
        if (id == 0 || id > 536870911u) {
            say(sc->detail, "%s: invalid field number", desc->short_name);
            return LDPB_EPROTO;
        }
        if (!skip_value(p, len, &pos, wt, &varint, &vstart, &vlen)) {
            say(sc->detail, "%s: field %u truncated or of an unsupported wire type %u",
                desc->short_name, (unsigned)id, wt);
            return LDPB_EPROTO;
        }
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)id);
        if (!f) {
            if (++sc->unknown > LDPB_WIRE_UNKNOWN_MAX) {
                say(sc->detail, "more than %u fields of unknown number", LDPB_WIRE_UNKNOWN_MAX);
                return LDPB_EPROTO;
            }
            continue;
        }
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            unsigned k = 0;
            while (k < n_oneof && oneof_at[k] != f->quantifier_offset)
                k++;
            if (k < n_oneof && oneof_id[k] != f->id) {
                say(sc->detail, "%s: %s and another member of its oneof are both set",
                    desc->short_name, f->name);
                return LDPB_EPROTO;
            }
            if (k == n_oneof) {
                if (n_oneof == SCAN_ONEOFS_MAX) {
                    say(sc->detail, "%s has too many oneofs for the scanner", desc->short_name);
                    return LDPB_EPROTO;
                }
                oneof_at[n_oneof] = f->quantifier_offset;
                oneof_id[n_oneof++] = f->id;
            }
        }
        ldpb_err err =
            scan_field(desc, f, wt, varint, p + vstart, vlen, &counts[f - desc->fields], depth, sc);
        if (err)
            return err;
    }
    return LDPB_OK;
}

ldpb_err ldpb_envelope_peek(const uint8_t *buf, size_t len, uint32_t *version, uint64_t *request_id,
                            int *has_request_id, char *detail)
{
    if (request_id)
        *request_id = 0;
    if (has_request_id)
        *has_request_id = 0;
    if (!version || (!buf && len))
        return LDPB_EINVAL;
    /* Field 2 is read on its own, in one pass and before any verdict, so a reply can echo the
     * request id even of an Envelope whose version is missing or whose later bytes do not
     * parse: what was read before the damage stands. */
    int n_version = 0, n_id = 0, bad_version = 0, bad_id = 0;
    uint64_t ver = 0, rid = 0;
    size_t pos = 0;
    ldpb_err err = LDPB_OK;
    while (pos < len) {
        uint64_t tag, v = 0;
        size_t at = pos, vstart, vlen;
        if (!read_varint(buf, len, &pos, &tag) || tag >> 3 == 0) {
            say(detail, "malformed envelope: no valid field tag at byte %zu", at);
            err = LDPB_EPROTO;
            break;
        }
        unsigned wt = (unsigned)(tag & 7);
        if (!skip_value(buf, len, &pos, wt, &v, &vstart, &vlen)) {
            say(detail,
                "malformed envelope: field %" PRIu64 " at byte %zu is truncated or of an "
                "unsupported wire type %u",
                tag >> 3, at, wt);
            err = LDPB_EPROTO;
            break;
        }
        if (tag >> 3 == 1) {
            n_version++;
            bad_version |= wt != WT_VARINT || v > UINT32_MAX;
            ver = v;
        } else if (tag >> 3 == 2) {
            n_id++;
            bad_id |= wt != WT_VARINT;
            rid = v;
        }
    }
    if (n_id == 1 && !bad_id) {
        if (request_id)
            *request_id = rid;
        if (has_request_id)
            *has_request_id = 1;
    }
    if (err)
        return err;
    if (n_id > 1 || bad_id) {
        say(detail, n_id > 1 ? "request_id (field 2) appears more than once"
                             : "request_id (field 2) is not a varint");
        return LDPB_EPROTO;
    }
    if (n_version == 0) {
        say(detail, "the envelope has no protocol_version (field 1)");
        return LDPB_EPROTO;
    }
    if (n_version > 1 || bad_version) {
        say(detail, n_version > 1 ? "protocol_version (field 1) appears more than once"
                                  : "protocol_version (field 1) is not a uint32 varint");
        return LDPB_EPROTO;
    }
    *version = (uint32_t)ver;
    return LDPB_OK;
}

ldpb_err ldpb_wire_check_version(uint32_t version, char *detail)
{
    if (version == LDPB_PROTOCOL_VERSION)
        return LDPB_OK;
    say(detail, "protocol version %u is not supported; this peer speaks version %u",
        (unsigned)version, LDPB_PROTOCOL_VERSION);
    return LDPB_EVERSION;
}

ldpb_err ldpb_wire_err_from_code(uint32_t code)
{
    if (code > INT_MAX)
        return LDPB_EPROTO;
    switch ((ldpb_err)code) {
    case LDPB_OK:
        return LDPB_EPROTO;
    case LDPB_EINVAL:
    case LDPB_ENOMEM:
    case LDPB_ERANGE:
    case LDPB_ESTATE:
    case LDPB_EPROTO:
    case LDPB_ECRYPTO:
    case LDPB_ETRANSPORT:
    case LDPB_ETIMEDOUT:
    case LDPB_EBUDGET:
    case LDPB_EIO:
    case LDPB_ECORRUPT:
    case LDPB_EREPLAY:
    case LDPB_EVERSION:
    case LDPB_EAUTH:
    case LDPB_ENOTFOUND:
    case LDPB_EEXPIRED:
    case LDPB_EBUSY:
    case LDPB_ENOTSUP:
    case LDPB_ENOEXPERIMENT:
        return (ldpb_err)code;
    }
    return LDPB_EPROTO;
}

/* ---- decoding ----------------------------------------------------------------------------- */

/* protobuf-c's allocator: the project's malloc/free with a byte budget per decode. Frees do not
 * return budget: the budget bounds the total work of one unpack. */
struct budget {
    size_t used;
    int refused; /* the budget ran out: the message is too complex (LDPB_EPROTO) */
    int failed;  /* malloc failed (LDPB_ENOMEM) */
};

static void *budget_alloc(void *data, size_t size)
{
    struct budget *b = data;
    if (size == 0)
        size = 1;
    if (size > LDPB_WIRE_DECODE_MEM_MAX - b->used) {
        b->refused = 1;
        return NULL;
    }
    void *p = malloc(size);
    if (!p) {
        b->failed = 1;
        return NULL;
    }
    b->used += size;
    return p;
}

static void *no_alloc(void *data, size_t size)
{
    (void)data;
    (void)size;
    return NULL;
}

static void plain_free(void *data, void *p)
{
    (void)data;
    free(p);
}

/* An Envelope without a known body: protobuf-c keeps a oneof member of a newer revision among
 * the unknown fields. A length-delimited field numbered LDPB_WIRE_BODY_FIRST or above is such a
 * member (a message kind this peer does not know: LDPB_ENOTSUP); with none, the body is
 * simply missing (LDPB_EPROTO). Field numbers below it are reserved for optional Envelope fields,
 * which a receiver skips (proto/ldpb.proto). */
static ldpb_err unknown_body(const Ldpb__V1__Envelope *env, char *detail)
{
    for (unsigned i = 0; i < env->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &env->base.unknown_fields[i];
        if (u->tag >= LDPB_WIRE_BODY_FIRST &&
            u->wire_type == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) {
            say(detail,
                "body field %" PRIu32 " is a message kind this peer does not support (it knows "
                "fields %u to %u)",
                u->tag, LDPB_WIRE_BODY_FIRST, LDPB_WIRE_BODY_LAST);
            return LDPB_ENOTSUP;
        }
    }
    say(detail, "the envelope has no body (fields %u to %u)", LDPB_WIRE_BODY_FIRST,
        LDPB_WIRE_BODY_LAST);
    return LDPB_EPROTO;
}

ldpb_err ldpb_envelope_decode(const uint8_t *buf, size_t len, Ldpb__V1__Envelope **out,
                              char *detail)
{
    if (!out || (!buf && len))
        return LDPB_EINVAL;
    *out = NULL;
    if (len > LDPB_PLAINTEXT_MAX) {
        say(detail, "envelope of %zu bytes exceeds the limit of %u", len, LDPB_PLAINTEXT_MAX);
        return LDPB_EPROTO;
    }
    uint32_t version;
    ldpb_err err = ldpb_envelope_peek(buf, len, &version, NULL, NULL, detail);
    if (err)
        return err;
    err = ldpb_wire_check_version(version, detail);
    if (err)
        return err;
    struct scan sc = {0, detail};
    err = scan_message(&ldpb__v1__envelope__descriptor, buf, len, 0, &sc);
    if (err)
        return err;
    struct budget b = {0, 0, 0};
    ProtobufCAllocator alloc = {budget_alloc, plain_free, &b};
    Ldpb__V1__Envelope *env = ldpb__v1__envelope__unpack(&alloc, len, buf);
    if (!env) {
        if (b.failed)
            return LDPB_ENOMEM;
        if (b.refused)
            say(detail, "envelope needs more than %u bytes of memory to decode",
                LDPB_WIRE_DECODE_MEM_MAX);
        else
            say(detail, "protobuf-c could not unpack the envelope (a required field missing?)");
        return LDPB_EPROTO;
    }
    err = env->body_case == LDPB__V1__ENVELOPE__BODY__NOT_SET ? unknown_body(env, detail) : LDPB_OK;
    if (!err)
        err = ldpb_envelope_check(env, detail) ? LDPB_EPROTO : LDPB_OK;
    if (err) {
        ldpb_envelope_free(env);
        return err;
    }
    *out = env;
    return LDPB_OK;
}

void ldpb_envelope_free(Ldpb__V1__Envelope *env)
{
    if (!env)
        return;
    ProtobufCAllocator alloc = {no_alloc, plain_free, NULL};
    ldpb__v1__envelope__free_unpacked(env, &alloc);
}
