/* Writes the seed corpora of fuzz_frame and fuzz_envelope: every message encoded through the
 * public API (and, for frames, sealed with the test keys of docs/protocol.md at the time T0 with
 * a seeded nonce), plus broken variants: truncated, another version, duplicate fields, unknown
 * fields, a stale or reflected or foreign frame, a flipped MAC byte. The output is deterministic;
 * the wire_corpus_golden_* tests check it against tests/fuzz/corpus/{frame,envelope}/, so the
 * committed files are also known-answer vectors of the byte format.
 * Usage: gen_wire_corpus OUTDIR, where OUTDIR's last component, "frame" or "envelope", names the
 * corpus (as in tests/fuzz/corpus/frame). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/seal.h"
#include "ldpb/wire.h"

#define T0 1700000000000ULL

static const char *outdir;

static void die(const char *what)
{
    fprintf(stderr, "gen_wire_corpus: %s\n", what);
    exit(1);
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", outdir, name) >= (int)sizeof path)
        die("path too long");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die("cannot write a corpus file");
}

/* ---- the messages -------------------------------------------------------------------------- */

/* Messages 0 to 10 are protocol 1's first kinds; 11 to 15 (report_and_assign, report batches),
 * 16 to 17 (the local contextual mode's report and assignment) and 18 to 24 (experiments: the
 * requests naming one, the status of one, the operator's command and the reply) are sealed after
 * every other frame seed, so the seeded nonces of the older seeds stay as they were. */
enum { N_MSGS = 25, N_MSGS_FIRST = 11 };

static uint8_t id16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* Encodes message `i` into `out`; returns its name. */
static const char *encode_message(int i, uint8_t *out, size_t *len)
{
    static double ctx[8] = {0.5, -1.0, 3.25, 0.0, 1e-3, 2.0, -0.125, 7.0};
    static double stats[6] = {0.25, -0.5, 1.0, 0.125, 2.0, -3.0}; /* d = 2 */
    Ldpb__V1__LocalModel lm = LDPB__V1__LOCAL_MODEL__INIT;
    Ldpb__V1__Envelope e = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest q = LDPB__V1__ASSIGN_REQUEST__INIT;
    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
    Ldpb__V1__Ack ack = LDPB__V1__ACK__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    Ldpb__V1__ArmStatus arms[3], *parms[3];
    Ldpb__V1__Error er = LDPB__V1__ERROR__INIT;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    Ldpb__V1__AckAndAssignment aa = LDPB__V1__ACK_AND_ASSIGNMENT__INIT;
    Ldpb__V1__ReportBatch rb = LDPB__V1__REPORT_BATCH__INIT;
    Ldpb__V1__BatchAck ba = LDPB__V1__BATCH_ACK__INIT;
    static uint8_t ids[3][16];
    Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
    Ldpb__V1__ExperimentReply xr = LDPB__V1__EXPERIMENT_REPLY__INIT;
    Ldpb__V1__ExperimentInfo xi[2] = {LDPB__V1__EXPERIMENT_INFO__INIT,
                                      LDPB__V1__EXPERIMENT_INFO__INIT};
    Ldpb__V1__ExperimentInfo *pxi[2] = {&xi[0], &xi[1]};
    Ldpb__V1__Report reps[3], *preps[3];
    Ldpb__V1__ReportResult res[3], *pres[3];
    const char *name = NULL;
    e.protocol_version = LDPB_PROTOCOL_VERSION;
    e.has_request_id = 1;
    e.request_id = 1000u + (uint64_t)i;
    r.assignment_id.data = a.assignment_id.data = ack.assignment_id.data = id16;
    r.assignment_id.len = a.assignment_id.len = ack.assignment_id.len = sizeof id16;
    switch (i) {
    case 0:
        name = "assign-request";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        e.assign_request = &q;
        q.n_context = 8;
        q.context = ctx;
        q.has_max_epsilon = 1;
        q.max_epsilon = 1.0;
        break;
    case 1:
        name = "assignment";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
        e.assignment = &a;
        a.arm = 3;
        a.mechanism = LDPB__V1__MECHANISM__QUADRATIC;
        a.epsilon = 0.5;
        a.expires_at_ms = T0 + 3600000;
        a.propensity = 0.25;
        a.has_kappa = 1;
        a.kappa = 0.5;
        a.has_policy_version = 1;
        a.policy_version = 9;
        break;
    case 2:
    case 3:
        name = i == 2 ? "report-bit0" : "report-bit1";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e.report = &r;
        r.mechanism = LDPB__V1__MECHANISM__LINEAR;
        r.epsilon = 1.0;
        r.value_case = LDPB__V1__REPORT__VALUE_BIT;
        r.bit = (uint32_t)(i - 2);
        break;
    case 4:
        name = "report-laplace";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e.report = &r;
        r.mechanism = LDPB__V1__MECHANISM__LAPLACE;
        r.epsilon = 2.0;
        r.value_case = LDPB__V1__REPORT__VALUE_REAL;
        r.real = 0.76619720458984375;
        break;
    case 5:
        name = "report-raw";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e.report = &r;
        r.mechanism = LDPB__V1__MECHANISM__RAW;
        r.epsilon = 0.0;
        r.value_case = LDPB__V1__REPORT__VALUE_REAL;
        r.real = 17.5;
        break;
    case 6:
        name = "ack-duplicate";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ACK;
        e.ack = &ack;
        ack.has_duplicate = 1;
        ack.duplicate = 1;
        break;
    case 7:
        name = "status-request";
        e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
        e.status_request = &sr;
        e.has_request_id = 0;
        break;
    case 8:
        name = "status";
        e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
        e.status = &st;
        st.policy = "ldp-ucb-b";
        st.model = "local";
        st.reports = 12345;
        st.assignments = 12400;
        for (int k = 0; k < 3; k++) {
            ldpb__v1__arm_status__init(&arms[k]);
            arms[k].arm = (uint32_t)k;
            arms[k].pulls = 4000u + (uint64_t)k;
            arms[k].has_estimate = arms[k].has_ci_low = arms[k].has_ci_high = 1;
            arms[k].estimate = 0.25 * k;
            arms[k].ci_low = 0.25 * k - 0.1;
            arms[k].ci_high = 0.25 * k + 0.1;
            arms[k].has_active = 1;
            arms[k].active = k != 0;
            parms[k] = &arms[k];
        }
        st.n_arms = 3;
        st.arms = parms;
        break;
    case 9:
        name = "error";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ERROR;
        e.error = &er;
        er.code = LDPB_EEXPIRED;
        er.reason = "assignment expired";
        break;
    case 11:
        name = "report-and-assign";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
        e.report_and_assign = &ra;
        ra.report = &r;
        ra.next = &q;
        r.mechanism = LDPB__V1__MECHANISM__LINEAR;
        r.epsilon = 1.0;
        r.value_case = LDPB__V1__REPORT__VALUE_BIT;
        r.bit = 1;
        q.has_max_epsilon = 1;
        q.max_epsilon = 1.0;
        break;
    case 12:
    case 13:
        name = i == 12 ? "ack-and-assignment" : "ack-and-assignment-error";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT;
        e.ack_and_assignment = &aa;
        aa.ack = &ack;
        if (i == 12) {
            aa.next_case = LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT;
            aa.assignment = &a;
            a.arm = 1;
            a.mechanism = LDPB__V1__MECHANISM__LINEAR;
            a.epsilon = 1.0;
            a.expires_at_ms = T0 + 3600000;
            a.propensity = 0.5;
        } else {
            aa.next_case = LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ERROR;
            aa.error = &er;
            er.code = LDPB_EBUSY;
            er.reason = "no assignments: the aggregator is low on disk space";
        }
        break;
    case 14:
    case 15:
        for (int k = 0; k < 3; k++) {
            memcpy(ids[k], id16, sizeof id16);
            ids[k][15] = (uint8_t)(0x40 + k);
            ldpb__v1__report__init(&reps[k]);
            reps[k].assignment_id.data = ids[k];
            reps[k].assignment_id.len = sizeof ids[k];
            reps[k].mechanism = LDPB__V1__MECHANISM__LINEAR;
            reps[k].epsilon = 1.0;
            reps[k].value_case = LDPB__V1__REPORT__VALUE_BIT;
            reps[k].bit = (uint32_t)(k & 1);
            preps[k] = &reps[k];
            ldpb__v1__report_result__init(&res[k]);
            res[k].assignment_id = reps[k].assignment_id;
            pres[k] = &res[k];
        }
        res[1].has_duplicate = 1;
        res[1].duplicate = 1;
        res[2].has_code = 1;
        res[2].code = LDPB_ENOTFOUND;
        if (i == 14) {
            name = "report-batch";
            e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
            e.report_batch = &rb;
            rb.n_reports = 3;
            rb.reports = preps;
        } else {
            name = "batch-ack";
            e.body_case = LDPB__V1__ENVELOPE__BODY_BATCH_ACK;
            e.batch_ack = &ba;
            ba.n_results = 3;
            ba.results = pres;
        }
        break;
    case 16:
        name = "report-stats";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e.report = &r;
        r.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
        r.epsilon = 1.0;
        r.n_stats = 6;
        r.stats = stats;
        r.has_delta = 1;
        r.delta = 1e-6;
        break;
    case 17:
        name = "assignment-local-model";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
        e.assignment = &a;
        a.mechanism = LDPB__V1__MECHANISM__GAUSSIAN_STATS;
        a.epsilon = 1.0;
        a.expires_at_ms = T0 + 3600000;
        a.propensity = 1.0;
        a.local_model = &lm;
        lm.d = 2;
        lm.n_stats = 6;
        lm.stats = stats;
        lm.shift = 4.5;
        lm.beta = 1.25;
        lm.delta = 1e-6;
        lm.feature_norm = 1.0;
        lm.reward_bound = 1.0;
        break;
    case 18:
        name = "assign-request-experiment";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        e.assign_request = &q;
        q.has_max_epsilon = 1;
        q.max_epsilon = 1.0;
        q.experiment = "checkout-2";
        break;
    case 19:
        name = "report-experiment";
        e.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        e.report = &r;
        r.mechanism = LDPB__V1__MECHANISM__LINEAR;
        r.epsilon = 1.0;
        r.value_case = LDPB__V1__REPORT__VALUE_BIT;
        r.bit = 1;
        r.experiment = "checkout-2";
        break;
    case 20:
        name = "status-request-experiment";
        e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
        e.status_request = &sr;
        sr.experiment = "checkout-2";
        break;
    case 21:
        name = "status-experiment";
        e.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
        e.status = &st;
        st.policy = "ldp-ucb-b";
        st.model = "local";
        st.reports = 3;
        st.assignments = 4;
        st.experiment = "checkout-2";
        break;
    case 22:
        name = "experiment-create";
        e.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
        e.experiment_command = &cmd;
        cmd.op = LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE;
        cmd.name = "checkout-2";
        cmd.config = "policy = ldp-ucb-b\narms = 3\nepsilon = 1\n";
        break;
    case 23:
        name = "experiment-list-after";
        e.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
        e.experiment_command = &cmd;
        cmd.op = LDPB__V1__EXPERIMENT_COMMAND__OP__LIST;
        cmd.after = "checkout-1";
        break;
    case 24:
        name = "experiment-reply";
        e.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY;
        e.experiment_reply = &xr;
        for (int k = 0; k < 2; k++) {
            xi[k].name = k ? "checkout-2" : "default";
            xi[k].policy = "ldp-ucb-b";
            xi[k].mode = "local";
            xi[k].arms = 3;
            xi[k].mechanism = "linear";
            xi[k].has_epsilon = 1;
            xi[k].epsilon = 1.0;
            xi[k].reports = 10u * (unsigned)k;
            xi[k].assignments = 12u * (unsigned)k;
            xi[k].running = k;
        }
        xr.n_experiments = 2;
        xr.experiments = pxi;
        xr.has_more = 1;
        xr.more = 1;
        break;
    default:
        name = "assign-request-empty";
        e.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        e.assign_request = &q;
        break;
    }
    if (ldpb_envelope_encode(&e, out, LDPB_PLAINTEXT_MAX, len, NULL) != LDPB_OK)
        die("encode");
    return name;
}

/* Hand-made envelopes the decoder must refuse (or, for the last two, accept). */
static const struct {
    const char *name;
    uint8_t bytes[24];
    size_t len;
} raw_envelopes[] = {
    {"bad-version-2", {0x08, 0x02, 0x10, 0x2a, 0xfa, 0x01, 0x03, 'n', 'e', 'w'}, 10},
    {"bad-no-version", {0x10, 0x01, 0x72, 0x00}, 4},
    {"bad-two-bodies", {0x08, 0x01, 0x72, 0x00, 0x52, 0x00}, 6},
    {"bad-group", {0x08, 0x01, 0x72, 0x00, 0x1b, 0x1c}, 6},
    {"bad-bool-2", {0x08, 0x01, 0x6a, 0x05, 0x0a, 0x01, 0x41, 0x10, 0x02}, 9},
    {"bad-packed-7", {0x08, 0x01, 0x52, 0x09, 0x0a, 0x07, 0, 0, 0, 0, 0, 0, 0}, 13},
    {"bad-no-body", {0x08, 0x01, 0x10, 0x2e}, 4},
    {"bad-unknown-body-17", {0x08, 0x01, 0x10, 0x2d, 0x8a, 0x01, 0x00}, 7},
    {"bad-id-then-truncated", {0x08, 0x01, 0x10, 0x2b, 0x62, 0x05, 0x0a}, 7},
    {"ok-unknown-field", {0x08, 0x01, 0x72, 0x00, 0x18, 0x07, 0xa2, 0x06, 0x01, 'x'}, 10},
    {"ok-unpacked-context", {0x08, 0x01, 0x52, 0x09, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 13},
    /* experiments: a name with an upper-case letter, an empty one, a list with a name, an op
     * of 0, a create without settings */
    {"bad-experiment-upper", {0x08, 0x01, 0x52, 0x04, 0x22, 0x02, 'E', '1'}, 8},
    {"bad-experiment-empty", {0x08, 0x01, 0x72, 0x02, 0x0a, 0x00}, 6},
    {"bad-experiment-list-name",
     {0x08, 0x01, 0xca, 0x01, 0x06, 0x08, 0x02, 0x12, 0x02, 'e', '1'},
     11},
    {"bad-experiment-op-0", {0x08, 0x01, 0xca, 0x01, 0x06, 0x08, 0x00, 0x12, 0x02, 'e', '1'}, 11},
    {"bad-experiment-create-no-config",
     {0x08, 0x01, 0xca, 0x01, 0x06, 0x08, 0x01, 0x12, 0x02, 'e', '1'},
     11},
};

/* ---- the corpora --------------------------------------------------------------------------- */

static void envelope_corpus(void)
{
    static uint8_t buf[LDPB_PLAINTEXT_MAX];
    char name[128];
    for (int i = 0; i < N_MSGS; i++) {
        size_t len;
        const char *base = encode_message(i, buf, &len);
        snprintf(name, sizeof name, "ok-%s", base);
        write_file(name, buf, len);
        if (i == 8) {
            snprintf(name, sizeof name, "bad-%s-truncated", base);
            write_file(name, buf, len - 3);
        }
    }
    for (size_t i = 0; i < sizeof raw_envelopes / sizeof raw_envelopes[0]; i++)
        write_file(raw_envelopes[i].name, raw_envelopes[i].bytes, raw_envelopes[i].len);
}

static void test_keypair(ldpb_keypair *kp, uint8_t first)
{
    uint8_t sk[LDPB_KEY_BYTES];
    for (unsigned i = 0; i < LDPB_KEY_BYTES; i++)
        sk[i] = (uint8_t)(first + i);
    if (ldpb_keypair_from_secret(kp, sk) != LDPB_OK)
        die("keypair");
}

static size_t seal(uint8_t *frame, const ldpb_keypair *server, const ldpb_keypair *from, uint64_t t,
                   ldpb_direction dir, ldpb_rng *rng, const uint8_t *pt, size_t n)
{
    ldpb_seal_key k;
    uint8_t nonce[LDPB_NONCE_BYTES];
    size_t len = 0;
    ldpb_nonce_make(nonce, t, dir, rng);
    if (ldpb_seal_key_derive(&k, server->pk, from->sk) != LDPB_OK ||
        ldpb_seal_frame(frame, LDPB_FRAME_MAX, &len, from->pk, &k, nonce, pt, n) != LDPB_OK)
        die("seal");
    ldpb_seal_key_wipe(&k);
    return len;
}

static void frame_corpus(void)
{
    static uint8_t pt[LDPB_PLAINTEXT_MAX], frame[LDPB_FRAME_MAX];
    ldpb_keypair server, client, stranger;
    test_keypair(&server, 0xa0);
    test_keypair(&client, 0xc0);
    test_keypair(&stranger, 0x01);
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "gen_wire_corpus");
    ldpb_rng *rng;
    if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK)
        die("rng");
    char name[128];
    size_t n, len;
    /* requests as the test client sends them, and the replies it receives */
    for (int i = 0; i < N_MSGS_FIRST; i++) {
        const char *base = encode_message(i, pt, &n);
        int reply = i == 1 || i == 6 || i == 8 || i == 9;
        len = seal(frame, &server, &client, T0 + (uint64_t)i, reply, rng, pt, n);
        snprintf(name, sizeof name, "%s-%s", reply ? "reply" : "request", base);
        write_file(name, frame, len);
    }
    encode_message(2, pt, &n); /* report-bit0 */
    len = seal(frame, &server, &client, T0 - LDPB_REPLAY_WINDOW_DEFAULT_MS - 1, LDPB_DIR_TO_SERVER,
               rng, pt, n);
    write_file("bad-stale", frame, len);
    len = seal(frame, &server, &client, T0 + LDPB_REPLAY_WINDOW_DEFAULT_MS + 1, LDPB_DIR_TO_SERVER,
               rng, pt, n);
    write_file("bad-future", frame, len);
    len = seal(frame, &server, &stranger, T0, LDPB_DIR_TO_SERVER, rng, pt, n);
    write_file("ok-request-other-client", frame, len);
    len = seal(frame, &stranger, &client, T0, LDPB_DIR_TO_SERVER, rng, pt, n);
    write_file("bad-other-server", frame, len);
    len = seal(frame, &server, &client, T0, LDPB_DIR_TO_SERVER, rng, pt, n);
    frame[len - 1] ^= 1;
    write_file("bad-flipped", frame, len);
    frame[len - 1] ^= 1;
    write_file("bad-truncated", frame, len - 1);
    frame[4] = 2;
    write_file("bad-frame-version", frame, len);
    frame[4] = 1;
    frame[5] = 9;
    write_file("bad-kind", frame, len);
    uint8_t raw[8] = {'L', 'D', 'P', 'B', 1, 2, 1, 0};
    write_file("bad-short-error", raw, sizeof raw);
    if (ldpb_frame_build_plain_error(frame, LDPB_FRAME_MAX, &len, LDPB_EAUTH,
                                     "client key not allowed") != LDPB_OK)
        die("plain error");
    write_file("plain-error", frame, len);
    for (int i = N_MSGS_FIRST; i < N_MSGS; i++) {
        const char *base = encode_message(i, pt, &n);
        int reply = i == 12 || i == 13 || i == 15 || i == 21 || i == 24;
        len = seal(frame, &server, &client, T0 + (uint64_t)i, reply, rng, pt, n);
        snprintf(name, sizeof name, "%s-%s", reply ? "reply" : "request", base);
        write_file(name, frame, len);
    }
    ldpb_rng_free(rng);
    ldpb_keypair_wipe(&server);
    ldpb_keypair_wipe(&client);
    ldpb_keypair_wipe(&stranger);
}

int main(int argc, char **argv)
{
    const char *kind = argc == 2 ? strrchr(argv[1], '/') : NULL;
    kind = kind ? kind + 1 : argc == 2 ? argv[1] : "";
    if (strcmp(kind, "frame") != 0 && strcmp(kind, "envelope") != 0) {
        fprintf(stderr, "usage: gen_wire_corpus DIR/frame | DIR/envelope\n");
        return 2;
    }
    outdir = argv[1];
    if (strcmp(kind, "frame") == 0)
        frame_corpus();
    else
        envelope_corpus();
    return 0;
}
