/* The server library against a failing or filling disk, in process (agg_server_handle and
 * agg_server_commit_batch without threads): assignments stop while commits fail or state_dir is
 * below min_free_mb and resume by themselves; retention bounds the propensity log in chunks; a
 * failing commit is logged once per error_log_interval_s. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "config.h"
#include "ldpb/keyfile.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"
#include "server.h"

#define LOG_LINES 64

typedef struct fixture {
    char dir[64];
    char state[96];
    agg_config cfg;
    agg_server *srv;
    agg_worker *w;
    ldpb_keypair client;
    ldpb_seal_key key;
    ldpb_rng *rng;
    /* the last reply */
    int replies;
    Ldpb__V1__Envelope__BodyCase body;
    uint32_t error_code;
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    int mechanism;
    double epsilon;
    /* log lines */
    char log[LOG_LINES][1024];
    int n_log;
} fixture;

static void on_log(void *ctx, int level, const char *msg)
{
    fixture *f = ctx;
    (void)level;
    if (f->n_log < LOG_LINES)
        snprintf(f->log[f->n_log++], sizeof f->log[0], "%s", msg);
}

static void on_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    fixture *f = ctx;
    (void)to;
    f->replies++;
    f->body = LDPB__V1__ENVELOPE__BODY__NOT_SET;
    ldpb_frame fr;
    assert_int_equal(ldpb_frame_parse(frame, len, &fr, NULL), LDPB_OK);
    assert_int_equal(fr.kind, LDPB_FRAME_SEALED);
    uint8_t pt[LDPB_PLAINTEXT_MAX];
    size_t pt_len = 0;
    Ldpb__V1__Envelope *env = NULL;
    assert_int_equal(ldpb_seal_open(&fr, &f->key, LDPB_DIR_TO_CLIENT, f->client.pk, pt, sizeof pt,
                                    &pt_len, NULL),
                     LDPB_OK);
    assert_int_equal(ldpb_envelope_decode(pt, pt_len, &env, NULL), LDPB_OK);
    f->body = env->body_case;
    if (env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR)
        f->error_code = env->error->code;
    if (env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
        const Ldpb__V1__Assignment *a = env->assignment;
        memcpy(f->id, a->assignment_id.data, a->assignment_id.len);
        f->id_len = a->assignment_id.len;
        f->mechanism = a->mechanism;
        f->epsilon = a->epsilon;
    }
    ldpb_envelope_free(env);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A server over a fresh state with the options `kv` (NULL-terminated name, value pairs) on top
 * of a fixed base. */
static fixture *fixture_new(const char *const *kv)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-test-storage-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    ldpb_keypair server;
    char path[128], detail[LDPB_DETAIL_BYTES], err[AGG_SERVER_ERRMAX];
    snprintf(path, sizeof path, "%s/server.key", f->dir);
    assert_int_equal(ldpb_keypair_generate(&server), LDPB_OK);
    assert_int_equal(ldpb_keypair_generate(&f->client), LDPB_OK);
    assert_int_equal(ldpb_seal_key_derive(&f->key, server.pk, f->client.sk), LDPB_OK);
    assert_int_equal(ldpb_keyfile_write(path, LDPB_KEYFILE_SECRET, server.sk, 0, detail), LDPB_OK);
    ldpb_keypair_wipe(&server);
    agg_config_init(&f->cfg);
    const char *base[][2] = {{"listen", "ipc:///nonexistent/unused"},
                             {"state_dir", f->state},
                             {"key", path},
                             {"arms", "3"},
                             {"log_level", "info"}};
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        assert_int_equal(agg_config_set(&f->cfg, base[i][0], base[i][1], 1, err), LDPB_OK);
    for (size_t i = 0; kv && kv[i]; i += 2)
        assert_int_equal(agg_config_set(&f->cfg, kv[i], kv[i + 1], 1, err), LDPB_OK);
    assert_int_equal(agg_server_new(&f->srv, &f->cfg, on_log, f, err), LDPB_OK);
    assert_int_equal(agg_worker_new(&f->w), LDPB_OK);
    assert_int_equal(ldpb_rng_new_system(&f->rng), LDPB_OK);
    agg_server_set_sender(f->srv, on_reply, f);
    return f;
}

static void fixture_free(fixture *f)
{
    agg_worker_free(f->w);
    agg_server_free(f->srv);
    agg_config_fini(&f->cfg);
    ldpb_rng_free(f->rng);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
}

static void send_env(fixture *f, Ldpb__V1__Envelope *env)
{
    uint8_t pt[1024], frame[LDPB_FRAME_MAX], nonce[LDPB_NONCE_BYTES];
    size_t pt_len = ldpb__v1__envelope__get_packed_size(env), len = 0;
    assert_true(pt_len <= sizeof pt);
    ldpb__v1__envelope__pack(env, pt);
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, f->rng);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &len, f->client.pk, &f->key, nonce, pt, pt_len),
        LDPB_OK);
    agg_reply_to to = {NULL, 0};
    f->replies = 0;
    agg_server_handle(f->srv, f->w, frame, len, to);
}

/* Asks for an assignment; returns the reply's body (an Assignment or an Error). */
static Ldpb__V1__Envelope__BodyCase assign(fixture *f)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    send_env(f, &env);
    assert_int_equal(f->replies, 1);
    return f->body;
}

/* Reports a bit for the last assignment; the reply comes from the committer. */
static void report_last(fixture *f)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = f->id;
    rep.assignment_id.len = f->id_len;
    rep.mechanism = (Ldpb__V1__Mechanism)f->mechanism;
    rep.epsilon = f->epsilon;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    send_env(f, &env);
    assert_int_equal(f->replies, 0); /* queued for the committer */
}

static void commit_all(fixture *f)
{
    while (agg_server_commit_batch(f->srv) > 0)
        ;
}

static uint64_t decision_rows_in_db(const fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/aggregator.db", f->state);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM decisions", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    uint64_t n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static int count_log(const fixture *f, const char *needle)
{
    int n = 0;
    for (int i = 0; i < f->n_log; i++)
        n += strstr(f->log[i], needle) != NULL;
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t paused(fixture *f)
{
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    return st.assignments_paused;
}

/* A commit that fails (as on a full disk) stops assignments: the next client gets LDPB_EBUSY,
 * not an assignment whose report could not be stored. Once commits work again, an empty probe
 * transaction resumes them without any traffic. */
static void test_failing_commits_pause_assignments(void **state)
{
    (void)state;
    const char *kv[] = {"min_free_mb", "0", NULL};
    fixture *f = fixture_new(kv);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    commit_all(f);
    assert_int_equal(paused(f), 0);

    agg_server_inject_disk_full(f->srv, 1);
    report_last(f);
    assert_int_equal(agg_server_commit_batch(f->srv), 1);
    assert_int_equal(f->replies, 1); /* the report's answer: not stored */
    assert_int_equal(f->body, LDPB__V1__ENVELOPE__BODY_ERROR);
    assert_int_equal(f->error_code, LDPB_EIO);
    assert_int_equal(paused(f), 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ERROR);
        assert_int_equal(f->error_code, LDPB_EBUSY);
    }
    /* still failing: the probe fails too and nothing resumes */
    assert_int_equal(agg_server_commit_batch(f->srv), 0);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ERROR);
    assert_int_equal(paused(f), 1);

    agg_server_inject_disk_full(f->srv, 0);
    assert_int_equal(agg_server_commit_batch(f->srv), 0); /* the probe commits */
    assert_int_equal(paused(f), 0);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    report_last(f);
    commit_all(f);
    assert_int_equal(f->body, LDPB__V1__ENVELOPE__BODY_ACK);
    assert_int_equal(count_log(f, "assignments resumed"), 1);
    fixture_free(f);
}

/* Below min_free_mb of free space in state_dir, no assignment is issued; the committer's next
 * check resumes them once the space is there (here: the threshold drops below it). */
static void test_low_space_pauses_assignments(void **state)
{
    (void)state;
    const char *kv[] = {"min_free_mb", "1000000000000", NULL}; /* 1 EiB: above any disk */
    fixture *f = fixture_new(kv);
    assert_int_equal(paused(f), 1); /* checked at start */
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ERROR);
    assert_int_equal(f->error_code, LDPB_EBUSY);
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    assert_true(st.free_bytes > 0);
    assert_int_equal(count_log(f, "below min_free_mb"), 1);

    f->cfg.min_free_mb = 1; /* the space "returns" */
    assert_int_equal(agg_server_commit_batch(f->srv), 0);
    assert_int_equal(paused(f), 0);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    fixture_free(f);
}

/* Decisions past expiry + decision_retention_s are deleted in the committer's transactions,
 * at most PRUNE_CHUNK (1024) plus the batch's size per transaction. */
static void test_retention_by_age(void **state)
{
    (void)state;
    /* clang-format off */
    const char *kv[] = {"min_free_mb", "0", "assignment_ttl_s", "1",
                        "decision_retention_s", "0", "propensity_samples", "0", NULL};
    /* clang-format on */
    fixture *f = fixture_new(kv);
    for (int i = 0; i < 2500; i++)
        assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    commit_all(f);
    assert_int_equal(decision_rows_in_db(f), 2500);
    sleep_ms(1100); /* every one of them expires */
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    commit_all(f);
    assert_int_equal(decision_rows_in_db(f), 2501 - 1025); /* one bounded chunk */
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    assert_int_equal(st.decisions_deleted, 1025);
    assert_int_equal(st.decision_rows, 2501 - 1025);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    commit_all(f);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    commit_all(f);
    assert_int_equal(decision_rows_in_db(f), 3); /* only the three unexpired ones */
    agg_server_stats_get(f->srv, &st);
    assert_int_equal(st.decisions_deleted, 2500);
    assert_int_equal(st.decision_rows, 3);
    fixture_free(f);
}

/* decision_rows_max keeps the log at that size: the ones expiring first go. */
static void test_retention_by_rows(void **state)
{
    (void)state;
    const char *kv[] = {"min_free_mb", "0", "decision_rows_max", "100", NULL};
    fixture *f = fixture_new(kv);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 150; i++)
            assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
        commit_all(f);
        assert_int_equal(decision_rows_in_db(f), 100);
    }
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    assert_int_equal(st.decisions_deleted, 350);
    assert_int_equal(st.assignments, 450);
    fixture_free(f);
}

/* A commit that keeps failing is logged once per error_log_interval_s, then with the count of
 * the failures not logged. */
static void test_commit_failure_log_is_rate_limited(void **state)
{
    (void)state;
    const char *kv[] = {"min_free_mb", "0", "error_log_interval_s", "1", NULL};
    fixture *f = fixture_new(kv);
    agg_server_inject_disk_full(f->srv, 1);
    assert_int_equal(assign(f), LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    assert_int_equal(agg_server_commit_batch(f->srv), 1); /* fails */
    for (int i = 0; i < 9; i++)
        assert_int_equal(agg_server_commit_batch(f->srv), 0); /* failing probes */
    agg_server_stats st;
    agg_server_stats_get(f->srv, &st);
    assert_int_equal(st.commit_failures, 10);
    assert_int_equal(count_log(f, "failed, rolled back"), 1);
    assert_int_equal(count_log(f, "commits fail: no assignments"), 1);
    sleep_ms(1100);
    assert_int_equal(agg_server_commit_batch(f->srv), 0);
    assert_int_equal(count_log(f, "failed, rolled back"), 2);
    assert_int_equal(count_log(f, "(9 more failures not logged"), 1);
    agg_server_inject_disk_full(f->srv, 0);
    assert_int_equal(agg_server_commit_batch(f->srv), 0);
    assert_int_equal(count_log(f, "commits succeed again"), 1);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failing_commits_pause_assignments),
        cmocka_unit_test(test_low_space_pauses_assignments),
        cmocka_unit_test(test_retention_by_age),
        cmocka_unit_test(test_retention_by_rows),
        cmocka_unit_test(test_commit_failure_log_is_rate_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
