/* The real ldpb-aggregator and the identity of its state (aggregator/daemon/state_id.h) and its
 * replay window across restarts (nonce_log.h):
 * - a state directory whose database was deleted, or truncated to nothing after kill -9, while
 *   its state_id file remains is refused (exit 2) unless --new-state says so; the new state
 *   refuses the old state's assignments (LDPB_ENOTFOUND), so no report is counted again (before,
 *   the start succeeded with one info line and the old assignments were acked dup=false);
 * - a state written before identities existed gets one at its first start (logged), keeps its
 *   counts and goes on accepting the assignments it issued in the old format (version 2); one
 *   whose identity row is gone while its state_id file remains lost commits: refused;
 * - after kill -9, frames captured before (an AssignRequest, a ReportAndAssign, a Report) are
 *   refused as replays (code 12) instead of being served again, while honest retries (fresh
 *   frames) get their duplicate acks and a frame sealed before the kill but never delivered is
 *   still served once. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>
#include <sqlite3.h>

#include "assign_token.h"
#include "harness.h"
#include "ldpb/err.h"

#define N_REPORTS 5

static const char extra[] = "arms = 3\nassignment_ttl_s = 600\nlog_level = info\nmin_free_mb = 0\n";

typedef struct assigned {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    int mech;
    double eps;
} assigned;

static void assign_one(dt_client *c, assigned *a)
{
    assert_int_equal(dt_assign(c, &a->arm, &a->mech, &a->eps, a->id, &a->id_len), 0);
}

/* Reports `a` with a fresh frame: 1 Ack (dup in *dup), 0 otherwise; *code the sealed Error's. */
static int report_one(dt_client *c, const assigned *a, int *dup, uint32_t *code)
{
    dt_reply r;
    assert_int_equal(dt_report(c, a->id, a->id_len, a->mech, a->eps, 1, a->arm & 1, 0, &r), 0);
    int ack = dt_is_ack(&r, dup);
    *code =
        r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR ? r.env->error->code : 0;
    dt_reply_clear(&r);
    return ack;
}

static uint64_t reports_counted(dt_client *c)
{
    uint64_t pulls[3], reports = 0;
    assert_int_equal(dt_status(c, pulls, 3, &reports), 3);
    return reports;
}

static void path_of(const dt_daemon *d, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", d->state_dir, name);
}

static void remove_db(const dt_daemon *d)
{
    static const char *const names[] = {"aggregator.db", "aggregator.db-wal", "aggregator.db-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[300];
        path_of(d, names[i], p, sizeof p);
        unlink(p);
    }
}

static int log_contains(const dt_daemon *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* An assignment id of the format before identities (version 2, keyed by the secret key alone),
 * for arm 0 of the configuration `like` came from. */
static void legacy_token(const dt_daemon *d, const assigned *like, assigned *out)
{
    agg_token_key key;
    assert_int_equal(agg_token_key_derive(&key, d->server.sk), LDPB_OK);
    agg_token t;
    memset(&t, 0, sizeof t);
    t.arm = 0;
    t.mechanism = (uint8_t)like->mech;
    t.epsilon = like->eps;
    t.expires_at_ms = ldpb_seal_now_ms() + 600000u;
    t.propensity = 1.0 / 3;
    randombytes_buf(t.random, sizeof t.random);
    *out = *like;
    out->arm = 0;
    assert_int_equal(agg_token_seal(&key, &t, out->id), LDPB_OK);
    assert_int_equal(out->id[0], 2);
    out->id_len = AGG_TOKEN_BYTES;
    agg_token_key_wipe(&key);
}

/* Deleted, then empty: refused with exit 2 and a message naming --new-state; --new-state
 * starts a state that refuses every assignment of the old one; a second --new-state is refused. */
static void test_lost_database_refused(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assigned a[N_REPORTS];
    int dup;
    uint32_t code;
    for (int i = 0; i < N_REPORTS; i++) {
        assign_one(&c, &a[i]);
        assert_int_equal(report_one(&c, &a[i], &dup, &code), 1);
        assert_false(dup);
    }
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);

    remove_db(&d);
    int status = 0;
    assert_int_equal(dt_daemon_start(&d, NULL, &status), -1);
    assert_int_equal(status, 2);
    assert_true(log_contains(&d, "aggregator.db is missing or empty"));
    assert_true(log_contains(&d, "--new-state"));
    /* an empty file where the database was: the same */
    char db[300];
    path_of(&d, "aggregator.db", db, sizeof db);
    FILE *f = fopen(db, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(dt_daemon_start(&d, NULL, &status), -1);
    assert_int_equal(status, 2);
    char err[2048];
    const char *check[] = {"--config", d.conf, "--check-config", NULL};
    assert_int_equal(dt_daemon_run(&d, check, err, sizeof err), 2);
    assert_non_null(strstr(err, "--new-state"));

    const char *fresh[] = {"--new-state", NULL};
    assert_int_equal(dt_daemon_start(&d, fresh, NULL), 0);
    assert_true(log_contains(&d, "a new state (--new-state), replacing state"));
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    for (int i = 0; i < N_REPORTS; i++) {
        assert_int_equal(report_one(&c, &a[i], &dup, &code), 0);
        assert_int_equal(code, LDPB_ENOTFOUND);
    }
    /* nor is a token of the format before identities accepted by a state created with one */
    assigned old;
    legacy_token(&d, &a[0], &old);
    assert_int_equal(report_one(&c, &old, &dup, &code), 0);
    assert_int_equal(code, LDPB_ENOTFOUND);
    assert_int_equal(reports_counted(&c), 0);
    assigned b;
    assign_one(&c, &b);
    assert_int_equal(b.id[0], AGG_TOKEN_VERSION);
    assert_int_equal(report_one(&c, &b, &dup, &code), 1);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);

    /* --new-state where a state exists is refused; without it the state goes on */
    assert_int_equal(dt_daemon_start(&d, fresh, &status), -1);
    assert_int_equal(status, 2);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    assert_int_equal(reports_counted(&c), 1);
    assert_int_equal(report_one(&c, &b, &dup, &code), 1);
    assert_true(dup);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_client_close(&c);
    dt_daemon_cleanup(&d);
}

/* kill -9, then the database truncated to nothing and its -wal deleted: refused too. */
static void test_truncated_after_kill_refused(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assigned a;
    int dup;
    uint32_t code;
    assign_one(&c, &a);
    assert_int_equal(report_one(&c, &a, &dup, &code), 1);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    char db[300], wal[300];
    path_of(&d, "aggregator.db", db, sizeof db);
    path_of(&d, "aggregator.db-wal", wal, sizeof wal);
    assert_int_equal(truncate(db, 0), 0);
    unlink(wal);
    int status = 0;
    assert_int_equal(dt_daemon_start(&d, NULL, &status), -1);
    assert_int_equal(status, 2);
    dt_client_close(&c);
    dt_daemon_cleanup(&d);
}

static void exec_sql(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : "?");
    sqlite3_close(h);
}

/* A state of the format before identities (made here from a current one by deleting its
 * identity row and marker) gets an identity at its first start, logged; its counts stay; the
 * version-2 assignments it issued are accepted until they expire, also after a later restart;
 * its identity stays the same across restarts. */
static void test_migration_of_old_state(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    assigned a[3];
    int dup;
    uint32_t code;
    for (int i = 0; i < 3; i++) {
        assign_one(&c, &a[i]);
        assert_int_equal(report_one(&c, &a[i], &dup, &code), 1);
    }
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    char db[300], marker[300];
    path_of(&d, "aggregator.db", db, sizeof db);
    path_of(&d, "state_id", marker, sizeof marker);
    exec_sql(db, "DROP TABLE identity");
    /* with the marker still there this is no old state but one that lost commits: refused */
    int status = 0;
    assert_int_equal(dt_daemon_start(&d, NULL, &status), -1);
    assert_int_equal(status, 2);
    assert_true(log_contains(&d, "lost its latest commits"));
    assert_int_equal(unlink(marker), 0);

    assigned old1, old2;
    legacy_token(&d, &a[0], &old1);
    legacy_token(&d, &a[0], &old2);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_true(log_contains(&d, "identity created for a state written by an older version"));
    struct stat st;
    assert_int_equal(stat(marker, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    assert_int_equal(reports_counted(&c), 3);
    assert_int_equal(report_one(&c, &old1, &dup, &code), 1);
    assert_false(dup);
    assert_int_equal(report_one(&c, &old1, &dup, &code), 1);
    assert_true(dup);
    assigned b;
    assign_one(&c, &b);
    assert_int_equal(b.id[0], AGG_TOKEN_VERSION);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);

    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    assert_int_equal(report_one(&c, &b, &dup, &code), 1); /* same identity after the restart */
    assert_false(dup);
    assert_int_equal(report_one(&c, &old2, &dup, &code), 1); /* still a migrated state */
    assert_false(dup);
    assert_int_equal(report_one(&c, &old1, &dup, &code), 1);
    assert_true(dup);
    assert_int_equal(reports_counted(&c), 6);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_client_close(&c);
    dt_daemon_cleanup(&d);
}

static void envelope_report(Ldpb__V1__Envelope *env, Ldpb__V1__Report *rep, const assigned *a)
{
    ldpb__v1__report__init(rep);
    rep->assignment_id.data = (uint8_t *)a->id;
    rep->assignment_id.len = a->id_len;
    rep->mechanism = (Ldpb__V1__Mechanism)a->mech;
    rep->epsilon = a->eps;
    rep->value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep->bit = a->arm & 1;
    env->body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env->report = rep;
}

static void expect_replay(dt_client *c, const uint8_t *frame, size_t len)
{
    dt_reply r;
    assert_int_equal(dt_client_raw(c, frame, len, &r), 0);
    if (!dt_is_error(&r, 1, LDPB_EREPLAY))
        fail_msg("a replayed frame was served: reply kind %d, body %d", r.kind,
                 r.kind == 1 ? (int)r.env->body_case : -1);
    dt_reply_clear(&r);
}

/* Frames captured before a kill -9 and replayed after the restart: refused with code 12 (before,
 * the AssignRequest got a new assignment, the ReportAndAssign a duplicate ack plus one, the
 * Report a duplicate ack). Honest retries with fresh frames get the duplicate acks; a frame
 * sealed before the kill but delivered only after it is served once; the refusal holds across
 * a second restart. */
static void test_replay_after_kill(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, extra), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    static uint8_t f_assign[LDPB_FRAME_MAX], f_ra[LDPB_FRAME_MAX], f_rep[LDPB_FRAME_MAX],
        f_late[LDPB_FRAME_MAX];
    dt_reply r;

    /* F: an AssignRequest */
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    size_t n_assign = dt_client_frame(&c, &env, f_assign, sizeof f_assign);
    assert_true(n_assign > 0);
    assert_int_equal(dt_client_raw(&c, f_assign, n_assign, &r), 0);
    assert_true(r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT);
    assigned a1;
    a1.arm = r.env->assignment->arm;
    a1.mech = (int)r.env->assignment->mechanism;
    a1.eps = r.env->assignment->epsilon;
    a1.id_len = r.env->assignment->assignment_id.len;
    memcpy(a1.id, r.env->assignment->assignment_id.data, a1.id_len);
    dt_reply_clear(&r);

    /* G: a ReportAndAssign for it */
    Ldpb__V1__Envelope env2 = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep;
    Ldpb__V1__Envelope inner = LDPB__V1__ENVELOPE__INIT;
    envelope_report(&inner, &rep, &a1);
    Ldpb__V1__ReportAndAssign ra = LDPB__V1__REPORT_AND_ASSIGN__INIT;
    Ldpb__V1__AssignRequest next = LDPB__V1__ASSIGN_REQUEST__INIT;
    ra.report = &rep;
    ra.next = &next;
    env2.body_case = LDPB__V1__ENVELOPE__BODY_REPORT_AND_ASSIGN;
    env2.report_and_assign = &ra;
    size_t n_ra = dt_client_frame(&c, &env2, f_ra, sizeof f_ra);
    assert_true(n_ra > 0);
    assert_int_equal(dt_client_raw(&c, f_ra, n_ra, &r), 0);
    assert_true(r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ACK_AND_ASSIGNMENT);
    assert_false(r.env->ack_and_assignment->ack->has_duplicate &&
                 r.env->ack_and_assignment->ack->duplicate);
    dt_reply_clear(&r);

    /* H: a Report; and P: a Report sealed now, delivered only after the restart */
    assigned a2, a3;
    assign_one(&c, &a2);
    assign_one(&c, &a3);
    Ldpb__V1__Envelope env3 = LDPB__V1__ENVELOPE__INIT, env4 = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep3, rep4;
    envelope_report(&env3, &rep3, &a2);
    envelope_report(&env4, &rep4, &a3);
    size_t n_rep = dt_client_frame(&c, &env3, f_rep, sizeof f_rep);
    size_t n_late = dt_client_frame(&c, &env4, f_late, sizeof f_late);
    assert_true(n_rep > 0 && n_late > 0);
    assert_int_equal(dt_client_raw(&c, f_rep, n_rep, &r), 0);
    assert_true(dt_is_ack(&r, NULL));
    dt_reply_clear(&r);

    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    expect_replay(&c, f_assign, n_assign);
    expect_replay(&c, f_ra, n_ra);
    expect_replay(&c, f_rep, n_rep);
    /* P was never delivered: served, once */
    assert_int_equal(dt_client_raw(&c, f_late, n_late, &r), 0);
    int dup = 1;
    assert_true(dt_is_ack(&r, &dup));
    assert_false(dup);
    dt_reply_clear(&r);
    expect_replay(&c, f_late, n_late);
    /* honest retries: fresh frames for reports already counted get duplicate acks */
    uint32_t code;
    assert_int_equal(report_one(&c, &a1, &dup, &code), 1);
    assert_true(dup);
    assert_int_equal(report_one(&c, &a2, &dup, &code), 1);
    assert_true(dup);
    assert_int_equal(reports_counted(&c), 3);

    /* a second restart (clean this time) keeps the earlier run's nonces */
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    expect_replay(&c, f_assign, n_assign);
    expect_replay(&c, f_late, n_late);
    assert_int_equal(reports_counted(&c), 3);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_client_close(&c);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lost_database_refused),
        cmocka_unit_test(test_truncated_after_kill_refused),
        cmocka_unit_test(test_migration_of_old_state),
        cmocka_unit_test(test_replay_after_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
