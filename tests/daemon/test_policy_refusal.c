/* A validated report that the policy refuses (docs/aggregator.md, "A report the policy refuses")
 * is answered alone and the rest of its batch commits. The trigger is a real one: dp-ucb keeps one
 * tree mechanism per arm with `horizon` leaves, and once an arm's tree is full its observe returns
 * LDPB_ESTATE, while the worker admits any authentic RAW reward in [0, 1] (dp-ucb keeps choosing
 * that arm). The server library runs in-process on a temporary state, as in
 * test_central_durable.c; every reply is kept by its request's tag. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ldpb/keyfile.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"
#include "server.h"

#define K        3
#define HORIZON  3
#define N_ASSIGN 12
#define N_TAGS   64

typedef struct fx {
    char dir[64], state[96], keypath[96];
    agg_config cfg;
    agg_server *srv;
    agg_worker *w;
    ldpb_keypair client;
    ldpb_seal_key key;
    ldpb_rng *rng;
    Ldpb__V1__Envelope *reply[N_TAGS]; /* by the request's tag */
    /* the assignments, taken before any report */
    uint8_t id[N_ASSIGN][LDPB_WIRE_ID_MAX];
    size_t id_len[N_ASSIGN];
    uint32_t arm[N_ASSIGN];
} fx;

static void on_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    fx *f = ctx;
    ldpb_frame fr;
    uint8_t pt[LDPB_PLAINTEXT_MAX];
    size_t pt_len = 0;
    Ldpb__V1__Envelope *env = NULL;
    if (to.tag >= N_TAGS)
        return;
    if (ldpb_frame_parse(frame, len, &fr, NULL) != LDPB_OK || fr.kind != LDPB_FRAME_SEALED ||
        ldpb_seal_open(&fr, &f->key, LDPB_DIR_TO_CLIENT, f->client.pk, pt, sizeof pt, &pt_len,
                       NULL) != LDPB_OK ||
        ldpb_envelope_decode(pt, pt_len, &env, NULL) != LDPB_OK)
        env = NULL;
    ldpb_envelope_free(f->reply[to.tag]);
    f->reply[to.tag] = env;
}

static void send_env(fx *f, Ldpb__V1__Envelope *env, uint64_t tag)
{
    uint8_t pt[1024], frame[2048], nonce[LDPB_NONCE_BYTES];
    size_t len = 0, flen = 0;
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    assert_int_equal(ldpb_envelope_encode(env, pt, sizeof pt, &len, NULL), LDPB_OK);
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, f->rng);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &flen, f->client.pk, &f->key, nonce, pt, len),
        LDPB_OK);
    ldpb_envelope_free(f->reply[tag]);
    f->reply[tag] = NULL;
    agg_reply_to to = {NULL, tag};
    agg_server_handle(f->srv, f->w, frame, flen, to);
}

static void commit_all(fx *f)
{
    while (agg_server_commit_batch(f->srv) > 0)
        ;
}

static void fx_open(fx *f)
{
    char err[AGG_SERVER_ERRMAX];
    char horizon[16];
    snprintf(horizon, sizeof horizon, "%d", HORIZON);
    agg_config_init(&f->cfg);
    const char *kv[][2] = {{"listen", "ipc:///nonexistent/unused"},
                           {"state_dir", f->state},
                           {"key", f->keypath},
                           {"arms", "3"},
                           {"mode", "central"},
                           {"policy", "dp-ucb"},
                           {"epsilon", "1"},
                           {"horizon", horizon},
                           {"batch_max", "64"},
                           {"queue_max", "256"},
                           {"replay_entries", "100000"},
                           {"log_level", "error"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        assert_int_equal(agg_config_set(&f->cfg, kv[i][0], kv[i][1], 1, err), LDPB_OK);
    assert_int_equal(agg_server_new(&f->srv, &f->cfg, NULL, NULL, err), LDPB_OK);
    agg_server_set_sender(f->srv, on_reply, f);
}

static void fx_close(fx *f)
{
    agg_server_free(f->srv);
    f->srv = NULL;
    agg_config_fini(&f->cfg);
}

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-refusal-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    snprintf(f->keypath, sizeof f->keypath, "%s/server.key", f->dir);
    uint8_t server_sk[LDPB_KEY_BYTES], client_sk[LDPB_KEY_BYTES];
    memset(server_sk, 0x5e, sizeof server_sk);
    memset(client_sk, 0xc3, sizeof client_sk);
    ldpb_keypair server;
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_keypair_from_secret(&server, server_sk), LDPB_OK);
    assert_int_equal(ldpb_keypair_from_secret(&f->client, client_sk), LDPB_OK);
    assert_int_equal(ldpb_seal_key_derive(&f->key, server.pk, f->client.sk), LDPB_OK);
    assert_int_equal(ldpb_keyfile_write(f->keypath, LDPB_KEYFILE_SECRET, server.sk, 0, detail),
                     LDPB_OK);
    ldpb_keypair_wipe(&server);
    assert_int_equal(agg_worker_new(&f->w), LDPB_OK);
    assert_int_equal(ldpb_rng_new_system(&f->rng), LDPB_OK);
    fx_open(f);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fx_fini(fx *f)
{
    if (f->srv)
        fx_close(f);
    for (size_t i = 0; i < N_TAGS; i++)
        ldpb_envelope_free(f->reply[i]);
    agg_worker_free(f->w);
    ldpb_rng_free(f->rng);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Takes N_ASSIGN assignments from the fresh state (their decisions commit, observing nothing). */
static void take_assignments(fx *f)
{
    for (unsigned i = 0; i < N_ASSIGN; i++) {
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
        env.assign_request = &ar;
        send_env(f, &env, 0);
        const Ldpb__V1__Envelope *r = f->reply[0];
        assert_non_null(r);
        assert_int_equal(r->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
        f->arm[i] = r->assignment->arm;
        f->id_len[i] = r->assignment->assignment_id.len;
        memcpy(f->id[i], r->assignment->assignment_id.data, f->id_len[i]);
    }
    commit_all(f);
}

static void send_report(fx *f, unsigned a, uint64_t tag)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = f->id[a];
    rep.assignment_id.len = f->id_len[a];
    rep.mechanism = LDPB__V1__MECHANISM__RAW;
    rep.epsilon = 0;
    rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
    rep.real = 0.25 + 0.05 * a;
    send_env(f, &env, tag);
}

static void assert_ack(const fx *f, uint64_t tag, int duplicate)
{
    const Ldpb__V1__Envelope *r = f->reply[tag];
    assert_non_null(r);
    if (r->body_case != LDPB__V1__ENVELOPE__BODY_ACK)
        fail_msg("tag %u: expected an Ack, got body %d (error %u: %s)", (unsigned)tag,
                 (int)r->body_case,
                 r->body_case == LDPB__V1__ENVELOPE__BODY_ERROR ? r->error->code : 0,
                 r->body_case == LDPB__V1__ENVELOPE__BODY_ERROR ? r->error->reason : "");
    assert_int_equal(r->ack->duplicate, duplicate);
}

static void assert_refused(const fx *f, uint64_t tag)
{
    const Ldpb__V1__Envelope *r = f->reply[tag];
    assert_non_null(r);
    if (r->body_case != LDPB__V1__ENVELOPE__BODY_ERROR)
        fail_msg("tag %u: expected an Error, got body %d", (unsigned)tag, (int)r->body_case);
    assert_int_equal(ldpb_wire_err_from_code(r->error->code), LDPB_ESTATE);
    assert_non_null(strstr(r->error->reason, "policy refused"));
    assert_non_null(strstr(r->error->reason, "do not resend"));
}

static void assert_counts(fx *f, uint64_t reports, uint32_t full_arm, uint64_t full_pulls,
                          uint32_t other_arm, uint64_t other_pulls)
{
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    assert_int_equal(st.reports, reports);
    agg_arm_status arms[K];
    assert_int_equal(agg_server_describe(f->srv, arms, K), LDPB_OK);
    assert_int_equal(arms[full_arm].pulls, full_pulls);
    assert_int_equal(arms[other_arm].pulls, other_pulls);
}

/* One group commit holding HORIZON + 1 reports of one arm, a report of another arm and a second
 * copy of the refused report: the one past the arm's horizon and its copy get LDPB_ESTATE, the
 * others are acknowledged and counted. A resend of the refused one in a later batch gets the same
 * error while a new report beside it is counted; after a restart nothing refused was counted and
 * the resend is refused again. The old committer answered every report of both batches LDPB_EIO
 * and counted none. */
static void refused_report_alone(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    take_assignments(&f);
    /* dp-ucb hands out the arms it has not observed in turn, so each arm gets N_ASSIGN / K. */
    unsigned by_arm[K][N_ASSIGN], n_by_arm[K] = {0};
    for (unsigned i = 0; i < N_ASSIGN; i++)
        by_arm[f.arm[i]][n_by_arm[f.arm[i]]++] = i;
    uint32_t full = 0, other = 1;
    assert_true(n_by_arm[full] >= HORIZON + 1);
    assert_true(n_by_arm[other] >= 3);
    const unsigned *fa = by_arm[full], *oa = by_arm[other];

    /* batch 1: tags 1..HORIZON+1 the full arm, then the other arm, then the refused one again */
    for (unsigned j = 0; j <= HORIZON; j++)
        send_report(&f, fa[j], 1 + j);
    send_report(&f, oa[0], 10);
    send_report(&f, fa[HORIZON], 11);
    assert_int_equal(agg_server_commit_batch(f.srv), HORIZON + 3);
    for (unsigned j = 0; j < HORIZON; j++)
        assert_ack(&f, 1 + j, 0);
    assert_refused(&f, 1 + HORIZON);
    assert_ack(&f, 10, 0);
    assert_refused(&f, 11);
    assert_counts(&f, HORIZON + 1, full, HORIZON, other, 1);
    agg_server_stats st;
    agg_server_stats_get(f.srv, &st);
    assert_int_equal(st.commit_failures, 0);
    assert_int_equal(st.duplicates, 0);

    /* batch 2: the client resends the refused report beside a new one and a counted one */
    send_report(&f, fa[HORIZON], 20);
    send_report(&f, oa[1], 21);
    send_report(&f, fa[0], 22);
    assert_int_equal(agg_server_commit_batch(f.srv), 3);
    assert_refused(&f, 20);
    assert_ack(&f, 21, 0);
    assert_ack(&f, 22, 1);
    assert_counts(&f, HORIZON + 2, full, HORIZON, other, 2);

    /* durable: a restart serves the same counts, and the refused id was never recorded as
     * counted (a resend would otherwise be acknowledged as a duplicate) */
    fx_close(&f);
    fx_open(&f);
    assert_counts(&f, HORIZON + 2, full, HORIZON, other, 2);
    send_report(&f, fa[HORIZON], 30);
    send_report(&f, oa[2], 31);
    send_report(&f, oa[0], 32);
    commit_all(&f);
    assert_refused(&f, 30);
    assert_ack(&f, 31, 0);
    assert_ack(&f, 32, 1);
    assert_counts(&f, HORIZON + 3, full, HORIZON, other, 3);
    agg_server_stats_get(f.srv, &st);
    assert_int_equal(st.commit_failures, 0);
    fx_fini(&f);
}

/* Every report of a batch refused: nothing is counted, nothing fails, and the next batch's report
 * is counted from the state before (the copy observed nothing of the refused ones). */
static void all_refused(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    take_assignments(&f);
    unsigned by_arm[K][N_ASSIGN], n_by_arm[K] = {0};
    for (unsigned i = 0; i < N_ASSIGN; i++)
        by_arm[f.arm[i]][n_by_arm[f.arm[i]]++] = i;
    assert_true(n_by_arm[0] >= HORIZON + 1 && n_by_arm[1] >= 1);
    for (unsigned j = 0; j < HORIZON; j++)
        send_report(&f, by_arm[0][j], 1 + j);
    commit_all(&f);
    for (unsigned j = 0; j < HORIZON; j++)
        assert_ack(&f, 1 + j, 0);
    send_report(&f, by_arm[0][HORIZON], 10);
    assert_int_equal(agg_server_commit_batch(f.srv), 1);
    assert_refused(&f, 10);
    assert_counts(&f, HORIZON, 0, HORIZON, 1, 0);
    send_report(&f, by_arm[1][0], 11);
    commit_all(&f);
    assert_ack(&f, 11, 0);
    assert_counts(&f, HORIZON + 1, 0, HORIZON, 1, 1);
    fx_fini(&f);
}

/* The same in one ReportBatch: the refused report gets its code in its own result, the others
 * are acknowledged (the old committer gave every result LDPB_EIO). */
static void refused_in_report_batch(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    take_assignments(&f);
    unsigned by_arm[K][N_ASSIGN], n_by_arm[K] = {0};
    for (unsigned i = 0; i < N_ASSIGN; i++)
        by_arm[f.arm[i]][n_by_arm[f.arm[i]]++] = i;
    assert_true(n_by_arm[0] >= HORIZON + 1 && n_by_arm[1] >= 1);
    unsigned order[HORIZON + 2];
    for (unsigned j = 0; j <= HORIZON; j++)
        order[j] = by_arm[0][j];
    order[HORIZON + 1] = by_arm[1][0];
    Ldpb__V1__Report reps[HORIZON + 2];
    Ldpb__V1__Report *ptrs[HORIZON + 2];
    for (unsigned j = 0; j < HORIZON + 2; j++) {
        Ldpb__V1__Report init = LDPB__V1__REPORT__INIT;
        reps[j] = init;
        reps[j].assignment_id.data = f.id[order[j]];
        reps[j].assignment_id.len = f.id_len[order[j]];
        reps[j].mechanism = LDPB__V1__MECHANISM__RAW;
        reps[j].value_case = LDPB__V1__REPORT__VALUE_REAL;
        reps[j].real = 0.5;
        ptrs[j] = &reps[j];
    }
    Ldpb__V1__ReportBatch b = LDPB__V1__REPORT_BATCH__INIT;
    b.n_reports = HORIZON + 2;
    b.reports = ptrs;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_BATCH;
    env.report_batch = &b;
    send_env(&f, &env, 5);
    commit_all(&f);
    const Ldpb__V1__Envelope *r = f.reply[5];
    assert_non_null(r);
    assert_int_equal(r->body_case, LDPB__V1__ENVELOPE__BODY_BATCH_ACK);
    assert_int_equal(r->batch_ack->n_results, HORIZON + 2);
    for (unsigned j = 0; j < HORIZON + 2; j++) {
        const Ldpb__V1__ReportResult *res = r->batch_ack->results[j];
        if (j == HORIZON) {
            assert_true(res->has_code);
            assert_int_equal(ldpb_wire_err_from_code(res->code), LDPB_ESTATE);
        } else {
            assert_false(res->has_code && res->code != 0);
            assert_false(res->duplicate);
        }
    }
    assert_counts(&f, HORIZON + 1, 0, HORIZON, 1, 1);
    fx_fini(&f);
}

static void send_report_and_assign(fx *f, unsigned a, uint64_t tag)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    Ldpb__V1__AssignRequest next = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    env.report_and_assign = &ra;
    ra.report = &rep;
    ra.next = &next;
    rep.assignment_id.data = f->id[a];
    rep.assignment_id.len = f->id_len[a];
    rep.mechanism = LDPB__V1__MECHANISM__RAW;
    rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
    rep.real = 0.5;
    send_env(f, &env, tag);
}

/* A ReportAndAssign whose report the policy refuses at commit is answered with the report's
 * Error alone (docs/protocol.md section 6): the next assignment it chose is never delivered, so
 * it is neither counted nor logged as a decision. One whose report is acknowledged counts and
 * logs exactly the assignment it delivers. The old code counted and logged both. */
static void refused_report_and_assign_issues_nothing(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    take_assignments(&f);
    unsigned by_arm[K][N_ASSIGN], n_by_arm[K] = {0};
    for (unsigned i = 0; i < N_ASSIGN; i++)
        by_arm[f.arm[i]][n_by_arm[f.arm[i]]++] = i;
    assert_true(n_by_arm[0] >= HORIZON + 1 && n_by_arm[1] >= 1);
    for (unsigned j = 0; j < HORIZON; j++)
        send_report(&f, by_arm[0][j], 1 + j);
    commit_all(&f);
    agg_server_stats before, after;
    agg_server_stats_get(f.srv, &before);
    assert_int_equal(before.assignments, N_ASSIGN);
    assert_int_equal(before.decision_rows, N_ASSIGN);

    send_report_and_assign(&f, by_arm[0][HORIZON], 10);
    commit_all(&f);
    assert_refused(&f, 10);
    agg_server_stats_get(f.srv, &after);
    assert_int_equal(after.assignments, before.assignments);
    assert_int_equal(after.decision_rows, before.decision_rows);
    assert_int_equal(after.reports, HORIZON);

    send_report_and_assign(&f, by_arm[1][0], 11);
    commit_all(&f);
    const Ldpb__V1__Envelope *r = f.reply[11];
    assert_non_null(r);
    assert_int_equal(r->body_case, LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT);
    assert_int_equal(r->ack_and_assignment->next_case,
                     LDPB__V1__ACK_AND_ASSIGNMENT__NEXT_ASSIGNMENT);
    commit_all(&f); /* the delivered assignment's decision row */
    agg_server_stats_get(f.srv, &after);
    assert_int_equal(after.assignments, before.assignments + 1);
    assert_int_equal(after.decision_rows, before.decision_rows + 1);
    assert_int_equal(after.reports, HORIZON + 1);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused_report_alone),
        cmocka_unit_test(all_refused),
        cmocka_unit_test(refused_in_report_batch),
        cmocka_unit_test(refused_report_and_assign_issues_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
