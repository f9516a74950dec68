/* The committer's one transaction for a batch across experiments (docs/aggregator.md, "The
 * pipeline"): reports of three experiments queued, one agg_server_commit_batch commits all of
 * them (one transaction, counted as a multi-experiment commit), each experiment's policy learns
 * only its own reports and its counters are its own; a failed commit counts nothing anywhere.
 * The server library runs in-process, not started, so the test decides when the batch commits. */
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

typedef struct fx {
    char dir[64], state[96], keypath[96], conf[96];
    agg_config cfg;
    agg_server *srv;
    agg_worker *w;
    ldpb_keypair client;
    ldpb_seal_key key;
    ldpb_rng *rng;
    Ldpb__V1__Envelope *reply;
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
    uint8_t pt[1024], frame[2048], nonce[LDPB_NONCE_BYTES];
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

typedef struct asg {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
} asg;

static void assign_in(fx *f, const char *exp, asg *a)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    ar.experiment = (char *)exp;
    send_env(f, &env);
    assert_non_null(f->reply);
    assert_int_equal(f->reply->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    a->id_len = f->reply->assignment->assignment_id.len;
    memcpy(a->id, f->reply->assignment->assignment_id.data, a->id_len);
    a->arm = f->reply->assignment->arm;
}

static void report_in(fx *f, const char *exp, const asg *a)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)a->id;
    rep.assignment_id.len = a->id_len;
    rep.mechanism = LDPB__V1__MECHANISM__LINEAR;
    rep.epsilon = 1.0;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    rep.experiment = (char *)exp;
    ldpb_envelope_free(f->reply);
    f->reply = NULL;
    send_env(f, &env);
    assert_null(f->reply); /* queued: answered by the commit */
}

/* Reports counted by `exp` and its pulls per arm (status). */
static uint64_t status_in(fx *f, const char *exp, uint64_t pulls[3])
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    sr.experiment = (char *)exp;
    send_env(f, &env);
    assert_non_null(f->reply);
    assert_int_equal(f->reply->body_case, LDPB__V1__ENVELOPE__BODY_STATUS);
    assert_int_equal(f->reply->status->n_arms, 3);
    for (size_t i = 0; i < 3; i++)
        pulls[i] = f->reply->status->arms[i]->pulls;
    return f->reply->status->reports;
}

static const char *const names[3] = {"default", "red", "blue"};

static void fx_init(fx *f)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-expcommit-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    snprintf(f->keypath, sizeof f->keypath, "%s/server.key", f->dir);
    snprintf(f->conf, sizeof f->conf, "%s/agg.conf", f->dir);
    uint8_t server_sk[LDPB_KEY_BYTES], client_sk[LDPB_KEY_BYTES];
    memset(server_sk, 0x5e, sizeof server_sk);
    memset(client_sk, 0xc3, sizeof client_sk);
    ldpb_keypair server;
    assert_int_equal(ldpb_keypair_from_secret(&server, server_sk), LDPB_OK);
    assert_int_equal(ldpb_keypair_from_secret(&f->client, client_sk), LDPB_OK);
    assert_int_equal(ldpb_seal_key_derive(&f->key, server.pk, f->client.sk), LDPB_OK);
    assert_int_equal(ldpb_keyfile_write(f->keypath, LDPB_KEYFILE_SECRET, server.sk, 0, NULL),
                     LDPB_OK);
    ldpb_keypair_wipe(&server);
    FILE *c = fopen(f->conf, "w");
    assert_non_null(c);
    fprintf(c,
            "listen = ipc:///nonexistent/unused\nstate_dir = %s\nkey = %s\nlog_level = error\n"
            "batch_max = 256\nassignment_ttl_s = 600\n"
            "policy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n"
            "[experiment red]\npolicy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n"
            "[experiment blue]\npolicy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n",
            f->state, f->keypath);
    assert_int_equal(fclose(c), 0);
    char err[AGG_SERVER_ERRMAX];
    char *argv[] = {"ldpb-aggregator", "--config", f->conf, NULL};
    agg_config_init(&f->cfg);
    assert_int_equal(agg_config_parse_args(&f->cfg, 3, argv, err), LDPB_OK);
    assert_int_equal(agg_config_check(&f->cfg, err), LDPB_OK);
    assert_int_equal(agg_worker_new(&f->w), LDPB_OK);
    assert_int_equal(ldpb_rng_new_system(&f->rng), LDPB_OK);
    assert_int_equal(agg_server_new(&f->srv, &f->cfg, NULL, NULL, err), LDPB_OK);
    agg_server_set_sender(f->srv, on_reply, f);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void fx_fini(fx *f)
{
    agg_server_free(f->srv);
    agg_config_fini(&f->cfg);
    agg_worker_free(f->w);
    ldpb_rng_free(f->rng);
    ldpb_envelope_free(f->reply);
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_one_commit_many_experiments(void **state)
{
    (void)state;
    fx f;
    fx_init(&f);
    /* the assignments' decisions: one transaction across the three experiments */
    asg a[3][4];
    for (size_t e = 0; e < 3; e++)
        for (size_t j = 0; j <= e + 1; j++)
            assign_in(&f, e == 0 ? NULL : names[e], &a[e][j]);
    agg_server_stats st0, st1;
    agg_server_stats_get(f.srv, &st0);
    assert_true(agg_server_commit_batch(f.srv) > 0);
    agg_server_stats_get(f.srv, &st1);
    assert_int_equal(st1.batches, st0.batches + 1);
    assert_int_equal(st1.multi_experiment_batches, st0.multi_experiment_batches + 1);
    assert_int_equal(agg_server_commit_batch(f.srv), 0);
    /* experiment e gets e + 2 reports, all in one batch */
    for (size_t e = 0; e < 3; e++)
        for (size_t j = 0; j <= e + 1; j++)
            report_in(&f, names[e], &a[e][j]);
    agg_server_stats_get(f.srv, &st0);
    assert_int_equal(agg_server_commit_batch(f.srv), 2 + 3 + 4);
    agg_server_stats_get(f.srv, &st1);
    assert_int_equal(st1.batches, st0.batches + 1);
    assert_int_equal(st1.multi_experiment_batches, st0.multi_experiment_batches + 1);
    assert_int_equal(st1.reports, 9);
    for (size_t e = 0; e < 3; e++) {
        uint64_t pulls[3], want[3] = {0, 0, 0};
        for (size_t j = 0; j <= e + 1; j++)
            want[a[e][j].arm]++;
        assert_int_equal(status_in(&f, names[e], pulls), e + 2);
        for (size_t k = 0; k < 3; k++)
            assert_int_equal(pulls[k], want[k]); /* its own reports only */
    }
    /* a failed commit counts nothing in any experiment */
    asg b[3];
    for (size_t e = 0; e < 3; e++)
        assign_in(&f, names[e], &b[e]);
    assert_true(agg_server_commit_batch(f.srv) > 0);
    for (size_t e = 0; e < 3; e++)
        report_in(&f, names[e], &b[e]);
    agg_server_inject_disk_full(f.srv, 1);
    assert_int_equal(agg_server_commit_batch(f.srv), 3);
    agg_server_inject_disk_full(f.srv, 0);
    for (size_t e = 0; e < 3; e++) {
        uint64_t pulls[3];
        assert_int_equal(status_in(&f, names[e], pulls), e + 2);
    }
    /* the state restores each experiment's count */
    agg_server_free(f.srv);
    char err[AGG_SERVER_ERRMAX];
    assert_int_equal(agg_server_new(&f.srv, &f.cfg, NULL, NULL, err), LDPB_OK);
    agg_server_set_sender(f.srv, on_reply, &f);
    for (size_t e = 0; e < 3; e++) {
        uint64_t pulls[3];
        assert_int_equal(status_in(&f, names[e], pulls), e + 2);
    }
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_commit_many_experiments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
