/* Central-DP noise is released only once it is durable (docs/aggregator.md): the server library
 * runs in-process on a temporary state, a fault hook in the store runs between a batch's observes
 * and its COMMIT, and from there the test takes what any client could get (describe, a sealed
 * status, an assignment). None of it may depend on the batch: it must equal the state published
 * before the batch. A failed COMMIT must leave the served state untouched, and the resubmitted
 * batch then makes a new committed state; every value ever seen must be a committed state's.
 * A crash (a forked child _exit()s from the hook) must likewise release nothing, and after the
 * restart the state served is the one committed before the crash, so nothing released is ever
 * noised again. */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "ldpb/keyfile.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"
#include "server.h"

#define K 3
#define MAX_IDS                                                                                    \
    48 /* below batch_max, so a batch and the views' decisions commit in one transaction */

/* What a client can see of the served state. Compared bytewise (NaN-safe). */
typedef struct view {
    agg_arm_status arms[K]; /* agg_server_describe (the /metrics source) */
    uint64_t st_pulls[K];   /* the sealed status reply */
    double st_est[K], st_lo[K], st_hi[K];
    uint64_t st_reports;
    uint64_t assign_version; /* policy_version of a fresh assignment */
} view;

typedef struct fx {
    char dir[64], state[96], keypath[96];
    const char *policy;
    agg_config cfg;
    agg_server *srv;
    agg_worker *w;
    ldpb_keypair client;
    ldpb_seal_key key;
    ldpb_rng *rng;
    Ldpb__V1__Envelope *reply; /* the last sealed reply */
    /* the hook's inputs and findings */
    int armed;          /* the hook acts on the next commit only (its own assignment queues a
                           decision, whose commit must not trigger it again) */
    const view *expect; /* what every view inside the hook must equal */
    int fail;           /* make the armed COMMIT fail */
    int crash_fd;       /* >= 0: write the view to this fd and _exit() */
    int hook_runs, hook_mismatches;
    view seen[8];
    int n_seen;
} fx;

static void on_reply(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    fx *f = ctx;
    (void)to;
    ldpb_frame fr;
    uint8_t pt[LDPB_PLAINTEXT_MAX];
    size_t pt_len = 0;
    ldpb_envelope_free(f->reply);
    f->reply = NULL;
    if (ldpb_frame_parse(frame, len, &fr, NULL) != LDPB_OK || fr.kind != LDPB_FRAME_SEALED ||
        ldpb_seal_open(&fr, &f->key, LDPB_DIR_TO_CLIENT, f->client.pk, pt, sizeof pt, &pt_len,
                       NULL) != LDPB_OK ||
        ldpb_envelope_decode(pt, pt_len, &f->reply, NULL) != LDPB_OK)
        f->reply = NULL;
}

static void send_env(fx *f, Ldpb__V1__Envelope *env)
{
    uint8_t pt[512], frame[1024], nonce[LDPB_NONCE_BYTES];
    size_t len = 0, flen = 0;
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    assert_int_equal(ldpb_envelope_encode(env, pt, sizeof pt, &len, NULL), LDPB_OK);
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, f->rng);
    assert_int_equal(
        ldpb_seal_frame(frame, sizeof frame, &flen, f->client.pk, &f->key, nonce, pt, len),
        LDPB_OK);
    agg_reply_to to = {NULL, 1};
    agg_server_handle(f->srv, f->w, frame, flen, to);
}

/* Asks for an assignment; returns 0 and fills arm, id and version, or -1. No cmocka asserts:
 * this also runs in the hook of a forked child. */
static int get_assignment(fx *f, uint32_t *arm, uint8_t *id, size_t *id_len, uint64_t *version)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    send_env(f, &env);
    if (!f->reply || f->reply->body_case != LDPB__V1__ENVELOPE__BODY_ASSIGNMENT)
        return -1;
    const Ldpb__V1__Assignment *a = f->reply->assignment;
    if (arm)
        *arm = a->arm;
    if (id) {
        memcpy(id, a->assignment_id.data, a->assignment_id.len);
        *id_len = a->assignment_id.len;
    }
    if (version)
        *version = a->has_policy_version ? a->policy_version : UINT64_MAX;
    return 0;
}

static void send_report(fx *f, const uint8_t *id, size_t id_len, double value)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = LDPB__V1__MECHANISM__RAW;
    rep.epsilon = 0;
    rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
    rep.real = value;
    send_env(f, &env);
}

/* Everything a client can read now; -1 if a request failed. */
static int take_view(fx *f, view *v)
{
    memset(v, 0, sizeof *v);
    if (agg_server_describe(f->srv, v->arms, K) != LDPB_OK)
        return -1;
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    send_env(f, &env);
    if (!f->reply || f->reply->body_case != LDPB__V1__ENVELOPE__BODY_STATUS ||
        f->reply->status->n_arms != K)
        return -1;
    v->st_reports = f->reply->status->reports;
    for (size_t a = 0; a < K; a++) {
        const Ldpb__V1__ArmStatus *m = f->reply->status->arms[a];
        v->st_pulls[a] = m->pulls;
        v->st_est[a] = m->has_estimate ? m->estimate : NAN;
        v->st_lo[a] = m->has_ci_low ? m->ci_low : NAN;
        v->st_hi[a] = m->has_ci_high ? m->ci_high : NAN;
    }
    return get_assignment(f, NULL, NULL, NULL, &v->assign_version);
}

static int same_view(const view *a, const view *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* Whether some arm's released estimate changed (pulls change with every report). */
static int estimates_differ(const view *a, const view *b)
{
    for (size_t i = 0; i < K; i++)
        if (memcmp(&a->arms[i].estimate, &b->arms[i].estimate, sizeof(double)) != 0)
            return 1;
    return 0;
}

/* Between the observes and the COMMIT. */
static int commit_hook(void *ctx)
{
    fx *f = ctx;
    if (!f->armed)
        return 0;
    f->armed = 0;
    view v;
    int ok = take_view(f, &v) == 0;
    if (f->crash_fd >= 0) {
        ssize_t w = ok ? write(f->crash_fd, &v, sizeof v) : 0;
        _exit(w == (ssize_t)sizeof v ? 0 : 4);
    }
    f->hook_runs++;
    if (!ok || !f->expect || !same_view(&v, f->expect))
        f->hook_mismatches++;
    if (f->n_seen < (int)(sizeof f->seen / sizeof f->seen[0]))
        f->seen[f->n_seen++] = v;
    return f->fail;
}

static void commit_all(fx *f)
{
    while (agg_server_commit_batch(f->srv) > 0)
        ;
}

static void fx_write_key(fx *f)
{
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
}

/* Opens the server on f->state (created on first use). No cmocka asserts (used in a child). */
static int fx_open(fx *f)
{
    char err[AGG_SERVER_ERRMAX];
    agg_config_init(&f->cfg);
    const char *kv[][2] = {{"listen", "ipc:///nonexistent/unused"},
                           {"state_dir", f->state},
                           {"key", f->keypath},
                           {"arms", "3"},
                           {"mode", "central"},
                           {"policy", f->policy},
                           {"epsilon", "1"},
                           {"horizon", "100000"},
                           {"batch_max", "64"},
                           {"queue_max", "256"},
                           {"replay_entries", "1000000"},
                           {"log_level", "error"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (agg_config_set(&f->cfg, kv[i][0], kv[i][1], 1, err) != LDPB_OK)
            return -1;
    if (agg_server_new(&f->srv, &f->cfg, NULL, NULL, err) != LDPB_OK)
        return -1;
    agg_server_set_sender(f->srv, on_reply, f);
    agg_server_set_commit_hook(f->srv, commit_hook, f);
    return 0;
}

static void fx_close(fx *f)
{
    agg_server_free(f->srv);
    f->srv = NULL;
    agg_config_fini(&f->cfg);
}

static void fx_init(fx *f, const char *policy)
{
    memset(f, 0, sizeof *f);
    f->policy = policy;
    f->crash_fd = -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-durable-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    snprintf(f->keypath, sizeof f->keypath, "%s/server.key", f->dir);
    fx_write_key(f);
    assert_int_equal(agg_worker_new(&f->w), LDPB_OK);
    assert_int_equal(ldpb_rng_new_system(&f->rng), LDPB_OK);
    assert_int_equal(fx_open(f), 0);
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
    ldpb_envelope_free(f->reply);
    agg_worker_free(f->w);
    ldpb_rng_free(f->rng);
    nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Rewards are a fixed function of the round, so a resubmission sends the same values. */
static double reward(uint32_t arm, unsigned round)
{
    return fmod(0.3 + 0.2 * arm + 0.618034 * round, 1.0);
}

typedef struct batch {
    uint8_t id[MAX_IDS][LDPB_WIRE_ID_MAX];
    size_t id_len[MAX_IDS];
    double value[MAX_IDS];
    unsigned n;
} batch;

/* Takes n assignments (committing their decision rows, which observes nothing). */
static void make_batch(fx *f, batch *b, unsigned n, unsigned *round)
{
    b->n = n;
    for (unsigned i = 0; i < n; i++) {
        uint32_t arm = 0;
        assert_int_equal(get_assignment(f, &arm, b->id[i], &b->id_len[i], NULL), 0);
        b->value[i] = reward(arm, (*round)++);
    }
    f->expect = NULL;
    f->fail = 0;
    commit_all(f);
}

static void send_batch(fx *f, const batch *b)
{
    for (unsigned i = 0; i < b->n; i++)
        send_report(f, b->id[i], b->id_len[i], b->value[i]);
}

/* One batch whose first COMMIT fails and whose resubmission commits. Returns whether the new
 * committed state differs from the previous one (the batch released noise). */
static int failed_then_committed(fx *f, const batch *b)
{
    view pre, after_fail, post;
    assert_int_equal(take_view(f, &pre), 0);
    f->expect = &pre;
    f->n_seen = 0;
    f->hook_runs = f->hook_mismatches = 0;

    f->fail = 1;
    f->armed = 1;
    send_batch(f, b);
    commit_all(f);
    assert_true(f->hook_runs > 0);
    /* Inside the failed commit and after it, clients see the pre-batch state only. */
    assert_int_equal(f->hook_mismatches, 0);
    assert_int_equal(take_view(f, &after_fail), 0);
    assert_true(same_view(&after_fail, &pre));

    /* The client resends; the same rewards commit now. Inside that commit: still pre. */
    f->fail = 0;
    f->hook_runs = 0;
    f->armed = 1;
    send_batch(f, b);
    commit_all(f);
    assert_true(f->hook_runs > 0);
    assert_int_equal(f->hook_mismatches, 0);
    assert_int_equal(take_view(f, &post), 0);
    assert_int_equal(post.st_reports, pre.st_reports + b->n);
    assert_int_equal(post.assign_version, pre.assign_version + b->n);
    f->expect = NULL;
    /* Every view ever taken is one of the two committed states. */
    for (int i = 0; i < f->n_seen; i++)
        assert_true(same_view(&f->seen[i], &pre) || same_view(&f->seen[i], &post));
    return estimates_differ(&pre, &post);
}

/* Batches of 1 + i % max_n reports, each failed once and resubmitted, until `need_release`
 * of them released new noise (at most `batches`). */
static void commit_failure_case(const char *policy, unsigned batches, unsigned max_n,
                                unsigned need_release)
{
    fx f;
    fx_init(&f, policy);
    unsigned round = 0, released = 0;
    static batch b;
    for (unsigned i = 0; i < batches && released < need_release; i++) {
        make_batch(&f, &b, 1 + i % max_n, &round);
        released += (unsigned)failed_then_committed(&f, &b);
    }
    /* The runs above did release noise (otherwise they prove nothing). */
    assert_true(released >= need_release);

    /* What is served is what a restart restores. */
    view before, after;
    assert_int_equal(take_view(&f, &before), 0);
    fx_close(&f);
    assert_int_equal(fx_open(&f), 0);
    assert_int_equal(take_view(&f, &after), 0);
    assert_memory_equal(before.arms, after.arms, sizeof before.arms);
    assert_int_equal(before.st_reports, after.st_reports);
    fx_fini(&f);
}

/* dp-ucb's tree draws noise on every observe. */
static void test_commit_failure_dp_ucb(void **state)
{
    (void)state;
    commit_failure_case("dp-ucb", 12, 5, 12);
}

static void test_commit_failure_dp_ucb_bound(void **state)
{
    (void)state;
    commit_failure_case("dp-ucb-bound", 12, 5, 12);
}

/* dp-se draws only when an epoch ends (the first after some 5600 reports with this config):
 * run until one was released. */
static void test_commit_failure_dp_se(void **state)
{
    (void)state;
    commit_failure_case("dp-se", 400, MAX_IDS, 1);
}

/* The child reopens the state, reports the batch and dies between its observes and its COMMIT,
 * after sending what it served at that moment. Returns whether the batch, resubmitted after the
 * restart, released new noise. */
static int crash_cycle(fx *f, const batch *b)
{
    view committed;
    assert_int_equal(take_view(f, &committed), 0);
    commit_all(f); /* the view's own decision row */
    fx_close(f);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        if (fx_open(f) != 0)
            _exit(2);
        f->crash_fd = fds[1];
        f->armed = 1;
        send_batch(f, b);
        commit_all(f);
        _exit(3); /* the hook never ran */
    }
    close(fds[1]);
    view in_crash;
    ssize_t got = read(fds[0], &in_crash, sizeof in_crash);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(got, (ssize_t)sizeof in_crash);
    /* What the dying process served did not depend on the lost batch or its noise... */
    assert_true(same_view(&in_crash, &committed));

    /* ...and after the restart the same committed state is served, not a redraw of it. */
    assert_int_equal(fx_open(f), 0);
    view restarted, post;
    assert_int_equal(take_view(f, &restarted), 0);
    assert_memory_equal(restarted.arms, committed.arms, sizeof committed.arms);
    assert_int_equal(restarted.st_reports, committed.st_reports);

    /* The unacknowledged reports are resent and commit with fresh (never released) noise. */
    f->expect = &restarted;
    f->hook_runs = f->hook_mismatches = 0;
    f->armed = 1;
    send_batch(f, b);
    commit_all(f);
    f->expect = NULL;
    assert_true(f->hook_runs > 0);
    assert_int_equal(f->hook_mismatches, 0);
    assert_int_equal(take_view(f, &post), 0);
    assert_int_equal(post.st_reports, committed.st_reports + b->n);
    return estimates_differ(&committed, &post);
}

/* Warm up with `warm` committed reports, then crash cycles with batches of n reports until one
 * whose batch would have released noise (at most `cycles`). */
static void crash_case(const char *policy, unsigned warm, unsigned n, unsigned cycles)
{
    fx f;
    fx_init(&f, policy);
    unsigned round = 0;
    static batch b;
    while (round < warm) {
        make_batch(&f, &b, MAX_IDS, &round);
        send_batch(&f, &b);
        commit_all(&f);
    }
    int released = 0;
    for (unsigned i = 0; i < cycles && !released; i++) {
        make_batch(&f, &b, n, &round);
        released = crash_cycle(&f, &b);
    }
    assert_true(released);
    fx_fini(&f);
}

static void test_crash_dp_ucb(void **state)
{
    (void)state;
    crash_case("dp-ucb", 12, 6, 1);
}

static void test_crash_dp_se(void **state)
{
    (void)state;
    /* just before the first epoch ends (some 5600 reports with this config) */
    crash_case("dp-se", 5400, MAX_IDS, 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_failure_dp_ucb),
        cmocka_unit_test(test_commit_failure_dp_ucb_bound),
        cmocka_unit_test(test_commit_failure_dp_se),
        cmocka_unit_test(test_crash_dp_ucb),
        cmocka_unit_test(test_crash_dp_se),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
