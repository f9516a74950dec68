/* Experiments at run time on several nodes of one PostgreSQL (docs/aggregator.md, "Several nodes
 * on one PostgreSQL"), with real daemons on the suite's throwaway PostgreSQL: an experiment
 * created, stopped or resumed by an operator on one node is served (or refused) by the other
 * node without a restart, within a bounded time (printed); two nodes creating experiments at the
 * same moment both succeed, with distinct ids; one name created on both at once has exactly one
 * winner, the other answered LDPB_ESTATE "exists"; the counts of an additive experiment that
 * ldpb status and the operator's SHOW answer are every node's, each report counted once. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/err.h"
#include "ldpb/keyfile.h"

#define OP_CREATE LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE
#define OP_SHOW   LDPB__V1__EXPERIMENT_COMMAND__OP__SHOW
#define OP_STOP   LDPB__V1__EXPERIMENT_COMMAND__OP__STOP

static const char rt_settings[] =
    "policy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 0.5\n";

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Two nodes of one database, one key, one admin list holding `admin`'s key. */
typedef struct pair {
    dt_daemon a, b;
    dt_client op_a, op_b; /* the operator's clients */
    dt_client ca, cb;     /* plain clients */
} pair;

static void write_conf(dt_daemon *d, const char *node, const char *admins, const char *extra)
{
    char conf[1024];
    snprintf(conf, sizeof conf,
             "policy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n"
             "assignment_ttl_s = 600\nlog_level = info\nnode_name = %s\n"
             "merge_interval_ms = 100\nadmin_list = %s\n%s",
             node, admins, extra ? extra : "");
    assert_int_equal(dt_daemon_write_config(d, conf), 0);
}

/* `extra`: more lines of both nodes' configuration (sections), or NULL. */
static void pair_start(pair *p, const char *extra)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(dt_daemon_init(&p->a), 0);
    assert_int_equal(dt_daemon_init(&p->b), 0);
    snprintf(p->b.store, sizeof p->b.store, "%s", p->a.store);
    snprintf(p->b.key, sizeof p->b.key, "%s", p->a.key);
    p->b.server = p->a.server;
    /* the operator's key: one keypair on both nodes (a client of b with a's keypair) */
    assert_int_equal(dt_client_open(&p->op_a, p->a.ipc_url, p->a.server.pk, 10000), 0);
    char admins[256];
    snprintf(admins, sizeof admins, "%s/admins", p->a.dir);
    assert_int_equal(ldpb_keyfile_write(admins, LDPB_KEYFILE_PUBLIC, p->op_a.kp.pk, 0, NULL),
                     LDPB_OK);
    write_conf(&p->a, "node-a", admins, extra);
    write_conf(&p->b, "node-b", admins, extra);
    assert_int_equal(dt_daemon_start(&p->a, NULL, NULL), 0);
    assert_int_equal(dt_daemon_start(&p->b, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&p->op_b, p->b.ipc_url, p->b.server.pk, 10000), 0);
    p->op_b.kp = p->op_a.kp; /* one server key: the same sealing key */
    p->op_b.key = p->op_a.key;
    assert_int_equal(dt_client_open(&p->ca, p->a.ipc_url, p->a.server.pk, 10000), 0);
    assert_int_equal(dt_client_open(&p->cb, p->b.ipc_url, p->b.server.pk, 10000), 0);
}

static void pair_stop(pair *p)
{
    dt_client_close(&p->op_a);
    dt_client_close(&p->op_b);
    dt_client_close(&p->ca);
    dt_client_close(&p->cb);
    assert_int_equal(dt_daemon_signal_wait(&p->a, SIGTERM), 0);
    assert_int_equal(dt_daemon_signal_wait(&p->b, SIGTERM), 0);
    dt_daemon_cleanup(&p->b);
    dt_daemon_cleanup(&p->a);
}

/* An operator command: 0 (an ExperimentReply; *running its first experiment's flag), or the
 * Error's code with its reason. */
static uint32_t command(dt_client *c, int op, const char *name, const char *config, int *running,
                        char *reason, size_t cap)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
    env.experiment_command = &cmd;
    cmd.op = (Ldpb__V1__ExperimentCommand__Op)op;
    cmd.name = (char *)name;
    cmd.config = (char *)config;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    assert_int_equal(r.kind, 1);
    uint32_t code = 0;
    if (reason && cap)
        reason[0] = '\0';
    if (r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        code = r.env->error->code;
        if (reason)
            snprintf(reason, cap, "%s", r.reason);
    } else {
        assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY);
        if (running && r.env->experiment_reply->n_experiments)
            *running = r.env->experiment_reply->experiments[0]->running;
    }
    dt_reply_clear(&r);
    return code;
}

/* An assignment in `exp`: 0, or the Error's code (-1 for anything else). */
static int assign_in(dt_client *c, const char *exp)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    ar.experiment = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    int rc = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT)
        rc = 0;
    else if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR)
        rc = (int)r.env->error->code;
    dt_reply_clear(&r);
    return rc;
}

/* Polls `c`'s assignments in `exp` every 5 ms until they answer `want` (0 or an error code), up
 * to `limit_ms`: the ms it took, or UINT64_MAX. */
static uint64_t until_assign(dt_client *c, const char *exp, int want, uint64_t limit_ms)
{
    uint64_t t0 = now_ms();
    while (now_ms() - t0 < limit_ms) {
        if (assign_in(c, exp) == want)
            return now_ms() - t0;
        sleep_ms(5);
    }
    return UINT64_MAX;
}

/* Another node follows a create, a stop and a resume within a bounded time: two merge intervals
 * (100 ms) plus a loaded machine's scheduling, asserted under 2 s; the figures are printed. */
static void test_follow_create_stop(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL);
    char why[1100];
    int running = 0;
    assert_int_equal(assign_in(&p.cb, "rt"), LDPB_ENOEXPERIMENT);
    assert_int_equal(command(&p.op_a, OP_CREATE, "rt", rt_settings, &running, why, sizeof why), 0);
    assert_true(running);
    uint64_t t_create = until_assign(&p.cb, "rt", 0, 5000);
    assert_int_equal(assign_in(&p.ca, "rt"), 0);
    /* node-b's operator sees it too, and a create of the same settings there is idempotent */
    assert_int_equal(command(&p.op_b, OP_SHOW, "rt", NULL, &running, why, sizeof why), 0);
    assert_true(running);
    assert_int_equal(command(&p.op_b, OP_CREATE, "rt", rt_settings, &running, why, sizeof why), 0);
    /* other settings on node-b: refused there as on node-a, nothing changed */
    assert_int_equal(command(&p.op_b, OP_CREATE, "rt",
                             "policy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 2\n", NULL,
                             why, sizeof why),
                     LDPB_ESTATE);
    assert_non_null(strstr(why, "stop it and start one under a new name"));

    assert_int_equal(command(&p.op_a, OP_STOP, "rt", NULL, &running, why, sizeof why), 0);
    assert_false(running);
    uint64_t t_stop = until_assign(&p.cb, "rt", LDPB_ENOEXPERIMENT, 5000);
    /* resumed from node-b this time: node-a follows */
    assert_int_equal(command(&p.op_b, OP_CREATE, "rt", rt_settings, &running, why, sizeof why), 0);
    assert_true(running);
    uint64_t t_resume = until_assign(&p.ca, "rt", 0, 5000);
    print_message("another node followed: a create in %" PRIu64 " ms, a stop in %" PRIu64
                  " ms, a resume in %" PRIu64 " ms (merge_interval_ms = 100)\n",
                  t_create, t_stop, t_resume);
    assert_true(t_create < 2000 && t_stop < 2000 && t_resume < 2000);
    pair_stop(&p);
}

/* One number from the database of `d` (psql, the store URL). */
static uint64_t db_number(const dt_daemon *d, const char *sql)
{
    char line[64] = "";
    assert_int_equal(dt_pg_query(d, sql, line, sizeof line), 0);
    return strtoull(line, NULL, 10);
}

/* One operator command in a thread, started with the other at a barrier. */
typedef struct racer {
    dt_client *c;
    pthread_barrier_t *go;
    char name[32];
    uint32_t code;
    char why[1100];
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->code = command(r->c, OP_CREATE, r->name, rt_settings, NULL, r->why, sizeof r->why);
    return NULL;
}

static void race(pair *p, const char *name_a, const char *name_b, racer out[2])
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    memset(out, 0, 2 * sizeof *out);
    out[0].c = &p->op_a;
    out[1].c = &p->op_b;
    snprintf(out[0].name, sizeof out[0].name, "%s", name_a);
    snprintf(out[1].name, sizeof out[1].name, "%s", name_b);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        out[i].go = &go;
        assert_int_equal(pthread_create(&t[i], NULL, race_main, &out[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
}

/* Creates at the same moment on both nodes: distinct names both succeed (each then served by
 * both nodes); one name on both: exactly one wins, the other is told it exists. */
static void test_concurrent_creates(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL);
    enum { ROUNDS = 20 };
    racer r[2];
    size_t failed = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char na[16], nb[16];
        snprintf(na, sizeof na, "a%02d", i);
        snprintf(nb, sizeof nb, "b%02d", i);
        race(&p, na, nb, r);
        for (int j = 0; j < 2; j++)
            if (r[j].code) {
                print_message("create %s: code %u: %s\n", r[j].name, r[j].code, r[j].why);
                failed++;
            }
    }
    assert_int_equal(failed, 0);
    /* each served by the other node too, once it followed */
    assert_true(until_assign(&p.ca, "b19", 0, 5000) != UINT64_MAX);
    assert_true(until_assign(&p.cb, "a19", 0, 5000) != UINT64_MAX);

    size_t wins = 0, exists = 0;
    for (int i = 0; i < ROUNDS; i++) {
        char n[16];
        snprintf(n, sizeof n, "s%02d", i);
        race(&p, n, n, r);
        for (int j = 0; j < 2; j++) {
            if (r[j].code == 0)
                wins++;
            else if (r[j].code == LDPB_ESTATE && strstr(r[j].why, "exists"))
                exists++;
            else
                print_message("create %s on node %c: code %u: %s\n", n, "ab"[j], r[j].code,
                              r[j].why);
        }
    }
    print_message("%d rounds of one name created on both nodes at once: %zu won, %zu told it "
                  "exists\n",
                  ROUNDS, wins, exists);
    /* Each round one create wins in the database; the other is told the name exists, or, where
     * its node had already followed the winner's create (a slow run), succeeds as a create with
     * equal settings does (idempotent). Never two experiments of one name. */
    assert_true(wins >= ROUNDS);
    assert_int_equal(wins + exists, 2 * ROUNDS);
    assert_int_equal(db_number(&p.a, "SELECT count(*) FROM experiments WHERE name LIKE 's__'"),
                     ROUNDS);
    pair_stop(&p);
}

/* Assignments and reports of `default` through `c`: `n` of them, each acked new; their ids kept
 * in ids[] (room for n). */
typedef struct kept {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t len;
    int mech;
    double eps;
} kept;

static void report_n(dt_client *c, int n, kept *ids)
{
    for (int i = 0; i < n; i++) {
        uint32_t arm;
        kept *k = &ids[i];
        assert_int_equal(dt_assign(c, &arm, &k->mech, &k->eps, k->id, &k->len), 0);
        dt_reply r;
        assert_int_equal(dt_report(c, k->id, k->len, k->mech, k->eps, 1, (uint32_t)(i & 1), 0, &r),
                         0);
        int dup = -1;
        assert_true(dt_is_ack(&r, &dup));
        assert_int_equal(dup, 0);
        dt_reply_clear(&r);
    }
}

/* Status's reports of experiment `exp` through `c`. */
static uint64_t status_reports_in(dt_client *c, const char *exp)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    sr.experiment = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_STATUS);
    uint64_t n = r.env->status->reports;
    dt_reply_clear(&r);
    return n;
}

/* Status's reports and SHOW's reports and assignments of `exp` through the node of `c` and
 * `op`. */
static void counts_in(dt_client *c, dt_client *op, const char *exp, uint64_t *status_reports,
                      uint64_t *reports, uint64_t *assignments)
{
    *status_reports = status_reports_in(c, exp);
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
    env.experiment_command = &cmd;
    cmd.op = OP_SHOW;
    cmd.name = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(op, &env, &r), 0);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY);
    assert_int_equal(r.env->experiment_reply->n_experiments, 1);
    *reports = r.env->experiment_reply->experiments[0]->reports;
    *assignments = r.env->experiment_reply->experiments[0]->assignments;
    dt_reply_clear(&r);
}

/* Each node takes its own reports (and one node the other's resent, duplicates): within a merge
 * interval or so every node's status answers the sum, never more, each report counted once. */
static void test_counts_summed(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, NULL);
    enum { ON_A = 20, ON_B = 12 };
    kept ka[ON_A], kb[ON_B];
    report_n(&p.ca, ON_A, ka);
    report_n(&p.cb, ON_B, kb);
    for (int i = 0; i < 5; i++) { /* resent to the other node: duplicates, not counted */
        dt_reply r;
        assert_int_equal(dt_report(&p.cb, ka[i].id, ka[i].len, ka[i].mech, ka[i].eps, 1,
                                   (uint32_t)(i & 1), 0, &r),
                         0);
        int dup = -1;
        assert_true(dt_is_ack(&r, &dup));
        assert_int_equal(dup, 1);
        dt_reply_clear(&r);
    }
    const uint64_t want = ON_A + ON_B;
    uint64_t t0 = now_ms(), took = UINT64_MAX;
    uint64_t sa = 0, ra = 0, aa = 0, sb = 0, rb = 0, ab = 0;
    while (now_ms() - t0 < 5000) {
        counts_in(&p.ca, &p.op_a, "default", &sa, &ra, &aa);
        counts_in(&p.cb, &p.op_b, "default", &sb, &rb, &ab);
        if (sa == want && ra == want && aa == want && sb == want && rb == want && ab == want) {
            took = now_ms() - t0;
            break;
        }
        sleep_ms(10);
    }
    print_message("status on node-a: %" PRIu64 " reports, %" PRIu64 " assignments; node-b: %" PRIu64
                  " and %" PRIu64 " (of %" PRIu64 "), the sums %" PRIu64 " ms after the last ack\n",
                  sa, aa, sb, ab, want, took);
    assert_true(took != UINT64_MAX);
    sleep_ms(300); /* never more than the sum */
    counts_in(&p.ca, &p.op_a, "default", &sa, &ra, &aa);
    counts_in(&p.cb, &p.op_b, "default", &sb, &rb, &ab);
    assert_true(sa == want && ra == want && aa == want && sb == want && rb == want && ab == want);
    pair_stop(&p);
}

/* One assignment of `exp` through `c` and its report (bit 1), kept in *k: 1 acked new, 2 acked
 * as a duplicate. */
static int round_in(dt_client *c, const char *exp, kept *k)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    ar.experiment = (char *)exp;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    const Ldpb__V1__Assignment *as = r.env->assignment;
    memcpy(k->id, as->assignment_id.data, as->assignment_id.len);
    k->len = as->assignment_id.len;
    k->mech = (int)as->mechanism;
    k->eps = as->epsilon;
    dt_reply_clear(&r);
    return 0;
}

static int report_in(dt_client *c, const char *exp, const kept *k)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)k->id;
    rep.assignment_id.len = k->len;
    rep.mechanism = (Ldpb__V1__Mechanism)k->mech;
    rep.epsilon = k->eps;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    rep.experiment = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    int dup = -1, out = 0;
    if (dt_is_ack(&r, &dup))
        out = dup ? 2 : 1;
    dt_reply_clear(&r);
    return out;
}

/* A sequenced experiment (ldp-se: its statistics do not add): node-a its sequencer, node-b a
 * follower. The follower's duplicates and assignments reach the database in its batches'
 * transactions, and the status of either node answers every node's counts, each report counted
 * once (by the sequencer). */
static void test_sequenced_counts(void **state)
{
    (void)state;
    pair p;
    pair_start(&p, "[experiment elim]\narms = 3\npolicy = ldp-se\nhorizon = 100000\n");
    enum { ON_A = 6, ON_B = 9, RESENT = 4 };
    kept ka[ON_A], kb[ON_B];
    for (int i = 0; i < ON_A; i++) {
        round_in(&p.ca, "elim", &ka[i]);
        assert_int_equal(report_in(&p.ca, "elim", &ka[i]), 1);
    }
    for (int i = 0; i < ON_B; i++) {
        round_in(&p.cb, "elim", &kb[i]);
        assert_int_equal(report_in(&p.cb, "elim", &kb[i]), 1);
    }
    for (int i = 0; i < RESENT; i++) /* node-a's reports resent to node-b: its duplicates */
        assert_int_equal(report_in(&p.cb, "elim", &ka[i]), 2);
    const uint64_t want = ON_A + ON_B;
    uint64_t t0 = now_ms(), took = UINT64_MAX;
    uint64_t sa = 0, ra = 0, aa = 0, sb = 0, rb = 0, ab = 0;
    while (now_ms() - t0 < 5000) {
        counts_in(&p.ca, &p.op_a, "elim", &sa, &ra, &aa);
        counts_in(&p.cb, &p.op_b, "elim", &sb, &rb, &ab);
        if (sa == want && ra == want && aa == want && sb == want && rb == want && ab == want) {
            took = now_ms() - t0;
            break;
        }
        sleep_ms(10);
    }
    print_message("sequenced: status on node-a %" PRIu64 " reports, %" PRIu64
                  " assignments; node-b %" PRIu64 " and %" PRIu64 " (of %" PRIu64 "), %" PRIu64
                  " ms after the last ack\n",
                  sa, aa, sb, ab, want, took);
    assert_true(took != UINT64_MAX);
    /* in the database: node-b's counts in its row, node-a's in the experiment's */
    assert_int_equal(db_number(&p.b, "SELECT duplicates FROM exp_node_state WHERE node = 'node-b'"
                                     " AND experiment = (SELECT id FROM experiments WHERE name ="
                                     " 'elim')"),
                     RESENT);
    assert_int_equal(db_number(&p.b, "SELECT assignments FROM exp_node_state WHERE node ="
                                     " 'node-b' AND experiment = (SELECT id FROM experiments"
                                     " WHERE name = 'elim')"),
                     ON_B);
    assert_int_equal(db_number(&p.b, "SELECT reports FROM experiments WHERE name = 'elim'"), want);
    /* restarted, the follower goes on from its own counts */
    dt_client_close(&p.cb);
    assert_int_equal(dt_daemon_signal_wait(&p.b, SIGTERM), 0);
    assert_int_equal(dt_daemon_start(&p.b, NULL, NULL), 0);
    assert_int_equal(dt_client_open(&p.cb, p.b.ipc_url, p.b.server.pk, 10000), 0);
    assert_int_equal(dt_client_reconnect(&p.op_b, p.b.ipc_url, 10000), 0);
    kept one;
    round_in(&p.cb, "elim", &one);
    assert_int_equal(report_in(&p.cb, "elim", &one), 1);
    t0 = now_ms();
    took = UINT64_MAX;
    while (now_ms() - t0 < 5000 && took == UINT64_MAX) {
        counts_in(&p.ca, &p.op_a, "elim", &sa, &ra, &aa);
        if (sa == want + 1 && aa == want + 1)
            took = now_ms() - t0;
        sleep_ms(10);
    }
    assert_true(took != UINT64_MAX);
    pair_stop(&p);
}

int main(void)
{
    if (!getenv("LDPB_TEST_PG_STATE")) {
        fprintf(stderr, "test_nodes_exps: no throwaway PostgreSQL (LDPB_TEST_PG_STATE); run "
                        "through ctest, whose fixture starts one\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_follow_create_stop),
        cmocka_unit_test(test_concurrent_creates),
        cmocka_unit_test(test_counts_summed),
        cmocka_unit_test(test_sequenced_counts),
    };
    return cmocka_run_group_tests_name("experiments on several nodes", tests, NULL, NULL);
}
