/* The state's meta against the configuration at start (agg_server_new): a state whose stored
 * parameters differ only in fields the policy does not read starts normally and restores; a real
 * difference is LDPB_ESTATE (exit 2) with a message that does not call the database corrupt; a
 * refused start leaves the meta rows as they were and never writes meta to data without any. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "config.h"
#include "ldpb/keyfile.h"
#include "ldpb/seal.h"
#include "policy.h"
#include "server.h"
#include "store.h"

typedef struct fixture {
    char dir[64];
    char key[96];
    char state[96];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-test-meta-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->key, sizeof f->key, "%s/agg.key", f->dir);
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    ldpb_keypair kp;
    assert_int_equal(ldpb_keypair_generate(&kp), LDPB_OK);
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_keyfile_write(f->key, LDPB_KEYFILE_SECRET, kp.sk, 0, detail), LDPB_OK);
    ldpb_keypair_wipe(&kp);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* A configuration from "name=value" pairs over the fixture's required options. */
static void config(agg_config *c, const fixture *f, const char *const *kv)
{
    agg_config_init(c);
    char reason[AGG_CONFIG_ERRMAX];
    char listen[128];
    snprintf(listen, sizeof listen, "ipc://%s/agg.sock", f->dir);
    assert_int_equal(agg_config_set(c, "listen", listen, 0, reason), LDPB_OK);
    assert_int_equal(agg_config_set(c, "state_dir", f->state, 0, reason), LDPB_OK);
    assert_int_equal(agg_config_set(c, "key", f->key, 0, reason), LDPB_OK);
    assert_int_equal(agg_config_set(c, "arms", "3", 0, reason), LDPB_OK);
    for (; *kv; kv += 2)
        if (agg_config_set(c, kv[0], kv[1], 0, reason) != LDPB_OK)
            fail_msg("%s = %s: %s", kv[0], kv[1], reason);
}

static ldpb_err start(const fixture *f, const char *const *kv, char *msg)
{
    agg_config c;
    config(&c, f, kv);
    agg_server *s = NULL;
    msg[0] = '\0';
    ldpb_err err = agg_server_new(&s, &c, NULL, NULL, msg);
    agg_server_free(s);
    agg_config_fini(&c);
    return err;
}

/* Creates the state of configuration kv with a saved policy state that has seen some rewards, as
 * a daemon leaves it after its first commits. */
static void make_state(const fixture *f, const char *const *kv)
{
    char msg[AGG_SERVER_ERRMAX];
    assert_int_equal(start(f, kv, msg), LDPB_OK);
    agg_config c;
    config(&c, f, kv);
    const agg_policy_ops *ops = agg_policy_find(c.policy);
    assert_non_null(ops);
    agg_store_meta meta = {c.policy, agg_mode_name(c.mode),
                           c.params, agg_policy_reads(ops, &c.params),
                           0,        NULL,
                           NULL,     0,
                           NULL,     NULL,
                           NULL,     NULL,
                           0,        0,
                           0};
    agg_store *st = NULL;
    char smsg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&st, f->state, &meta, smsg), LDPB_OK);
    char pmsg[AGG_ERRMSG_MAX];
    agg_policy *p = NULL;
    assert_int_equal(agg_policy_new(&p, c.policy, &c.params, pmsg), LDPB_OK);
    agg_rand r;
    agg_rand_seed_u64(&r, 7);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &r), LDPB_OK);
    agg_policy_env env = {&r, noise};
    for (int t = 0; t < 40; t++) {
        uint32_t arm;
        assert_int_equal(agg_policy_choose(p, &env, &arm), LDPB_OK);
        assert_int_equal(agg_policy_observe(p, &env, arm, t % 3 == 0 ? 1.0 : 0.0), LDPB_OK);
    }
    size_t len = 0;
    assert_int_equal(agg_policy_save(p, NULL, 0, &len), LDPB_ERANGE);
    uint8_t *blob = malloc(len);
    assert_non_null(blob);
    assert_int_equal(agg_policy_save(p, blob, len, &len), LDPB_OK);
    agg_store_counters cnt = {0, 0, 0, 40};
    assert_int_equal(agg_store_begin(st), LDPB_OK);
    assert_int_equal(agg_store_put_state(st, blob, len, &cnt), LDPB_OK);
    assert_int_equal(agg_store_commit(st), LDPB_OK);
    free(blob);
    agg_noise_free(noise);
    agg_policy_free(p);
    agg_store_close(st);
    agg_config_fini(&c);
}

/* The meta rows as one "key=value;" text. */
static char *meta_text(const fixture *f)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", f->state, AGG_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT key, value FROM meta ORDER BY key", -1, &st, NULL),
        SQLITE_OK);
    char *out = calloc(1, 4096);
    assert_non_null(out);
    while (sqlite3_step(st) == SQLITE_ROW) {
        size_t n = strlen(out);
        snprintf(out + n, 4096 - n, "%s=%s;", (const char *)sqlite3_column_text(st, 0),
                 (const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

static void sql(const fixture *f, const char *statement)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", f->state, AGG_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, statement, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Starts with `kv` expecting LDPB_ESTATE naming `field`, without "corrupt" in the message, and
 * with the meta rows unchanged. */
static void expect_mismatch(const fixture *f, const char *const *kv, const char *field)
{
    char *before = meta_text(f);
    char msg[AGG_SERVER_ERRMAX];
    assert_int_equal(start(f, kv, msg), LDPB_ESTATE);
    if (!strstr(msg, field) || strstr(msg, "corrupt"))
        fail_msg("want a message naming %s, not calling the state corrupt: %s", field, msg);
    char *after = meta_text(f);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void ignored_local_parameters_start(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "ldp-ts-b", "mechanism", "linear", "epsilon",
                                    "1",      "kappa",    "0.5",       NULL};
    make_state(f, a);
    char *before = meta_text(f);
    /* kappa with a linear mechanism, beta, gamma, eps_arm and horizon: ldp-ts-b reads none. */
    static const char *const b[] = {"policy",  "ldp-ts-b", "mechanism", "linear", "epsilon", "1",
                                    "kappa",   "-0.25",    "beta",      "0.01",   "gamma",   "0.02",
                                    "eps_arm", "0.5",      "horizon",   "100000", NULL};
    char msg[AGG_SERVER_ERRMAX];
    ldpb_err err = start(f, b, msg);
    if (err)
        fail_msg("%s: %s", ldpb_errname(err), msg);
    char *after = meta_text(f);
    assert_string_equal(before, after); /* a start under ignored values does not rewrite meta */
    free(before);
    free(after);
    static const char *const eps[] = {"policy",  "ldp-ts-b", "mechanism", "linear",
                                      "epsilon", "0.5",      NULL};
    expect_mismatch(f, eps, "epsilon");
    static const char *const mech[] = {"policy", "ldp-ts-b", "mechanism", "quadratic", NULL};
    expect_mismatch(f, mech, "mechanism");
    static const char *const pol[] = {"policy", "ldp-ucb-b", "mechanism", "linear", NULL};
    expect_mismatch(f, pol, "policy");
}

static void quadratic_kappa_is_compared(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "ldp-ucb-b", "mechanism", "quadratic",
                                    "kappa",  "0.5",       NULL};
    make_state(f, a);
    static const char *const b[] = {"policy", "ldp-ucb-b", "mechanism", "quadratic",
                                    "kappa",  "0.25",      NULL};
    expect_mismatch(f, b, "kappa");
}

static void nonprivate_ignores_epsilon_and_mechanism(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy",           "ucb1",   "mode",    "nonprivate",
                                    "allow_nonprivate", "true",   "epsilon", "1",
                                    "mechanism",        "linear", NULL};
    make_state(f, a);
    static const char *const b[] = {"policy", "ucb1",    "mode", "nonprivate", "allow_nonprivate",
                                    "true",   "epsilon", "0.25", "mechanism",  "laplace",
                                    "kappa",  "0.1",     NULL};
    char msg[AGG_SERVER_ERRMAX];
    ldpb_err err = start(f, b, msg);
    if (err)
        fail_msg("%s: %s", ldpb_errname(err), msg);
    static const char *const c[] = {"policy",           "ts",   "mode", "nonprivate",
                                    "allow_nonprivate", "true", NULL};
    expect_mismatch(f, c, "policy");
}

/* dp-ucb-bound reads neither gamma nor eps_arm; dp-ucb reads both. */
static void central_gamma_and_eps_arm(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "dp-ucb-bound", "mode", "central", "epsilon", "1",
                                    NULL};
    make_state(f, a);
    static const char *const b[] = {"policy",  "dp-ucb-bound", "mode",  "central", "epsilon",
                                    "1",       "gamma",        "0.001", "eps_arm", "0.5",
                                    "horizon", "5000",         NULL};
    char msg[AGG_SERVER_ERRMAX];
    ldpb_err err = start(f, b, msg);
    if (err)
        fail_msg("%s: %s", ldpb_errname(err), msg);

    teardown(state);
    setup(state);
    f = *state;
    static const char *const u[] = {"policy", "dp-ucb",  "mode", "central", "epsilon",
                                    "1",      "horizon", "5000", NULL};
    make_state(f, u);
    static const char *const g[] = {"policy",  "dp-ucb", "mode",  "central", "epsilon", "1",
                                    "horizon", "5000",   "gamma", "0.001",   NULL};
    expect_mismatch(f, g, "gamma");
    static const char *const e[] = {"policy",  "dp-ucb", "mode",    "central", "epsilon", "1",
                                    "horizon", "5000",   "eps_arm", "0.5",     NULL};
    expect_mismatch(f, e, "eps_arm");
    /* eps_arm above epsilon is refused by the policy itself, before the state is touched. */
    static const char *const big[] = {"policy",  "dp-ucb", "mode",    "central", "epsilon", "1",
                                      "horizon", "5000",   "eps_arm", "2",       NULL};
    assert_int_equal(start(f, big, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "eps_arm 2 is above epsilon 1"));
}

static void other_schema_version_is_not_corrupt(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "ldp-ts-b", NULL};
    make_state(f, a);
    sql(f, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    expect_mismatch(f, a, "schema version 99");
}

/* Reports or a policy state without meta rows: refused, and no meta is written to them. */
static void data_without_meta_is_refused_unwritten(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "ldp-ts-b", NULL};
    make_state(f, a);
    sql(f, "DELETE FROM meta");
    char msg[AGG_SERVER_ERRMAX];
    assert_int_equal(start(f, a, msg), LDPB_ECORRUPT);
    assert_non_null(strstr(msg, "no meta rows"));
    char *after = meta_text(f);
    assert_string_equal(after, "");
    free(after);
}

/* A fresh state gets its meta rows with its first transaction, not at open: a start that stops
 * before any commit (refused later on, a port in use, --check-config) leaves no meta, so the
 * next start may use another configuration; the first commit writes them. */
static void fresh_state_meta_waits_for_the_first_commit(void **state)
{
    fixture *f = *state;
    static const char *const a[] = {"policy", "ldp-ts-b", NULL};
    char msg[AGG_SERVER_ERRMAX];
    assert_int_equal(start(f, a, msg), LDPB_OK); /* opened and closed, nothing committed */
    char *none = meta_text(f);
    assert_string_equal(none, "");
    free(none);
    static const char *const b[] = {"policy", "ldp-ts-b", "epsilon", "0.5", NULL};
    make_state(f, b); /* another configuration is still free to take the directory */
    char *meta = meta_text(f);
    assert_non_null(strstr(meta, "epsilon=0.5;"));
    assert_non_null(strstr(meta, "policy=ldp-ts-b;"));
    free(meta);
    expect_mismatch(f, a, "epsilon");
}

/* A state directory written by ldpb-aggregator of schema version 1 (tests/data/store_v1: ldp-ts-b,
 * 3 arms, epsilon 1, 20 reports) starts under its configuration, migrated to version 2 with its
 * meta rows kept; under another configuration the start is refused with the message of version 1
 * and the state stays at version 1. */
static void version_1_state_migrates_at_start(void **state)
{
    fixture *f = *state;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "mkdir -m 0700 '%s' && cp '%s/store_v1/aggregator.db' '%s/store_v1/state_id' '%s' "
             "&& chmod 0600 '%s'/*",
             f->state, LDPB_TEST_DATA_DIR, LDPB_TEST_DATA_DIR, f->state, f->state);
    assert_int_equal(system(cmd), 0);
    char *v1 = meta_text(f);
    assert_non_null(strstr(v1, "schema_version=1;"));
    static const char *const other[] = {"policy", "ldp-ts-b", "epsilon", "0.5", NULL};
    expect_mismatch(f, other, "epsilon is '1' there but '0.5' now");
    static const char *const same[] = {"policy", "ldp-ts-b", "epsilon", "1", NULL};
    char msg[AGG_SERVER_ERRMAX];
    ldpb_err err = start(f, same, msg);
    if (err)
        fail_msg("%s: %s", ldpb_errname(err), msg);
    char *v2 = meta_text(f);
    /* the same rows but the version */
    char *at = strstr(v1, "schema_version=1;");
    at[strlen("schema_version=")] = (char)('0' + AGG_STORE_SCHEMA_VERSION);
    assert_string_equal(v2, v1);
    free(v1);
    free(v2);
    expect_mismatch(f, other, "epsilon is '1' there but '0.5' now");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fresh_state_meta_waits_for_the_first_commit, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ignored_local_parameters_start, setup, teardown),
        cmocka_unit_test_setup_teardown(quadratic_kappa_is_compared, setup, teardown),
        cmocka_unit_test_setup_teardown(nonprivate_ignores_epsilon_and_mechanism, setup, teardown),
        cmocka_unit_test_setup_teardown(central_gamma_and_eps_arm, setup, teardown),
        cmocka_unit_test_setup_teardown(other_schema_version_is_not_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(data_without_meta_is_refused_unwritten, setup, teardown),
        cmocka_unit_test_setup_teardown(version_1_state_migrates_at_start, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
