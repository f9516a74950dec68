/* The option table: defaults, every kind of value error, the ini file's FILE:LINE reports, flags
 * over the file, the cross-option checks and the generated --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "ldpb/mech.h"

static char path[64];

static void reset(agg_config *c)
{
    agg_config_fini(c);
    agg_config_init(c);
}

static const char *write_tmp(const char *text)
{
    snprintf(path, sizeof path, "/tmp/ldpb-test-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_defaults(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    assert_string_equal(c.policy, "ldp-ts-b");
    assert_int_equal(c.params.mechanism, LDPB_MECH_LINEAR);
    assert_true(c.params.epsilon == 1.0);
    assert_true(c.params.kappa == 0.5);
    assert_int_equal(c.mode, AGG_MODE_LOCAL);
    assert_int_equal(c.allow_nonprivate, 0);
    assert_int_equal(c.workers, 1);
    assert_int_equal(c.batch_max, 4096);
    assert_int_equal(c.assignment_ttl_s, 600);
    assert_int_equal(c.auth, AGG_AUTH_OPEN);
    assert_int_equal(c.replay_window_s, 300);
    assert_int_equal(c.log_level, AGG_LOG_INFO);
    assert_int_equal(c.params.k, 0);
    assert_null(c.state_dir);
    assert_int_equal(c.n_listen, 0);
    char err[AGG_CONFIG_ERRMAX];
    assert_int_equal(agg_config_check(&c, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "state_dir is required"));
    agg_config_fini(&c);
}

static void test_set(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    char r[AGG_CONFIG_ERRMAX];
    assert_int_equal(agg_config_set(&c, "nope", "1", 0, r), LDPB_EINVAL);
    assert_string_equal(r, "unknown option 'nope'");
    assert_int_equal(agg_config_set(&c, "arms", "1", 0, r), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "arms", "-3", 1, r), LDPB_EINVAL);
    assert_int_equal(agg_config_set(&c, "arms", "3x", 1, r), LDPB_EINVAL);
    assert_int_equal(agg_config_set(&c, "arms", "99999999999999999999999", 1, r), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "arms", "3", 1, r), LDPB_OK);
    assert_int_equal(c.params.k, 3);
    assert_int_equal(agg_config_set(&c, "epsilon", "0", 1, r), LDPB_ERANGE);
    assert_string_equal(r, "epsilon: 0 outside (0, 10]");
    assert_int_equal(agg_config_set(&c, "epsilon", "nan", 1, r), LDPB_EINVAL);
    assert_int_equal(agg_config_set(&c, "epsilon", "10", 1, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "beta", "1", 1, r), LDPB_ERANGE);
    assert_string_equal(r, "beta: 1 outside [0, 1)");
    assert_int_equal(agg_config_set(&c, "kappa", "-1", 1, r), LDPB_OK);
    /* threshold: a number >= 0, or the name bound-min (DP-EXP3-Lap's bound-minimising b) */
    assert_int_equal(agg_config_set(&c, "threshold", "-1", 1, r), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "threshold", "bound-max", 1, r), LDPB_EINVAL);
    assert_int_equal(agg_config_set(&c, "threshold", "bound-min", 1, r), LDPB_OK);
    assert_true(c.params.threshold == AGG_EXP3_THRESHOLD_BOUND_MIN);
    assert_int_equal(agg_config_set(&c, "threshold", "0.5", 1, r), LDPB_OK);
    assert_true(c.params.threshold == 0.5);
    assert_int_equal(agg_config_set(&c, "mechanism", "gauss", 1, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "linear, quadratic, exponential, laplace"));
    assert_int_equal(agg_config_set(&c, "mechanism", "laplace", 1, r), LDPB_OK);
    assert_int_equal(c.params.mechanism, LDPB_MECH_LAPLACE);
    assert_int_equal(agg_config_set(&c, "allow_nonprivate", "maybe", 1, r), LDPB_EINVAL);
    assert_int_equal(agg_config_set(&c, "allow_nonprivate", "yes", 1, r), LDPB_OK);
    assert_int_equal(c.allow_nonprivate, 1);
    assert_int_equal(agg_config_set(&c, "key", "", 1, r), LDPB_EINVAL);
    for (int i = 0; i < AGG_LISTEN_MAX; i++)
        assert_int_equal(agg_config_set(&c, "listen", "ipc:///x", 0, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "listen", "ipc:///x", 0, r), LDPB_ERANGE);
    agg_config_fini(&c);
}

static void test_file(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    char err[AGG_CONFIG_ERRMAX], want[256];
    const char *p = write_tmp("; comment\n[aggregator]\narms = 4 ; inline comment\n"
                              "listen = ipc:///a\nlisten = tcp://127.0.0.1:1\n");
    assert_int_equal(agg_config_load_file(&c, p, err), LDPB_OK);
    assert_int_equal(c.params.k, 4);
    assert_int_equal(c.n_listen, 2);
    assert_string_equal(c.listen[1], "tcp://127.0.0.1:1");
    unlink(p);
    reset(&c);

    p = write_tmp("arms = 4\n\n\nepsilon = 20\nworkers = 0\n");
    assert_int_equal(agg_config_load_file(&c, p, err), LDPB_ERANGE);
    snprintf(want, sizeof want, "%s:4: epsilon: 20 outside (0, 10]", p);
    assert_string_equal(err, want); /* the first error only */
    unlink(p);
    reset(&c);

    assert_int_equal(agg_config_load_file(&c, "/nonexistent/ldpb.conf", err), LDPB_EIO);
    assert_non_null(strstr(err, "/nonexistent/ldpb.conf: cannot open"));
    agg_config_fini(&c);
}

static void test_args(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    char err[AGG_CONFIG_ERRMAX];
    const char *p = write_tmp("arms = 4\nlisten = ipc:///a\nstate_dir = /tmp/s\nkey = /tmp/k\n"
                              "policy = ldp-ucb-b\n");
    char *argv[] = {"ldpb-aggregator",    "--listen", "tcp://127.0.0.1:5", "--arms=6",
                    "--config",           (char *)p,  "--listen",          "ipc:///b",
                    "--allow-nonprivate", NULL};
    assert_int_equal(agg_config_parse_args(&c, 9, argv, err), LDPB_OK);
    assert_int_equal(c.params.k, 6); /* the flag wins over the file, wherever --config stands */
    assert_int_equal(c.n_listen, 2);
    assert_string_equal(c.listen[0], "tcp://127.0.0.1:5");
    assert_string_equal(c.listen[1], "ipc:///b");
    assert_string_equal(c.policy, "ldp-ucb-b");
    assert_int_equal(c.allow_nonprivate, 1);
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    reset(&c);

    char *bad[] = {"ldpb-aggregator", "--config", (char *)p, "--workers", "0", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, bad, err), LDPB_ERANGE);
    assert_string_equal(err, "ldpb-aggregator: --workers: 0 outside [1, 64]");
    reset(&c);
    char *stray[] = {"ldpb-aggregator", "stray", NULL};
    assert_int_equal(agg_config_parse_args(&c, 2, stray, err), LDPB_EINVAL);
    reset(&c);
    char *missing[] = {"ldpb-aggregator", "--arms", NULL};
    assert_int_equal(agg_config_parse_args(&c, 2, missing, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "--arms needs a value"));
    agg_config_fini(&c);
    unlink(p);
}

static void test_check(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    char r[AGG_CONFIG_ERRMAX];
    assert_int_equal(agg_config_set(&c, "state_dir", "/tmp/s", 0, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "listen", "http://x", 0, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "key", "/tmp/k", 0, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "arms", "2", 0, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "not a URL of a transport this build has (tcp://, ipc://)"));
    assert_int_equal(agg_config_set(&c, "listen", "ipc:///x", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_OK);
    /* The store URL: sqlite: by default; another scheme is refused before anything starts. */
    assert_string_equal(c.store, "sqlite:");
    assert_int_equal(agg_config_set(&c, "store", "mysql://db/x", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "store: store URL 'mysql://db/x': unknown scheme"));
    assert_int_equal(agg_config_set(&c, "store", "postgresql://db.internal/ldpb", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "store", "sqlite:", 1, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "policy", "nope", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "unknown policy 'nope' (known: "));
    assert_int_equal(agg_config_set(&c, "policy", "ucb1", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "nonprivate-model policy but mode is local"));
    assert_int_equal(agg_config_set(&c, "mode", "nonprivate", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "allow_nonprivate"));
    assert_int_equal(agg_config_set(&c, "allow_nonprivate", "true", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "auth", "allowlist", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "needs allowlist = FILE"));
    agg_config_fini(&c);
}

/* The daemon builds its clients' mechanism before it serves: one no client can build, or whose
 * reports say nothing about the reward, is a configuration error (LDPB_ERANGE, exit 2). */
static void test_check_mechanism_serviceable(void **state)
{
    (void)state;
    static const struct {
        const char *mech, *eps, *kappa, *mode, *policy;
        ldpb_err want;
        const char *msg;
    } cases[] = {
        {"linear", "1", NULL, NULL, NULL, LDPB_OK, NULL},
        {"linear", "1e-320", NULL, NULL, NULL, LDPB_ERANGE,
         "the linear mechanism at epsilon 9.99989e-321 reports nothing about the reward"},
        {"exponential", "1e-300", NULL, NULL, "ldp-ucb-b", LDPB_ERANGE, "reports nothing"},
        {"quadratic", "1e-320", "-1", NULL, NULL, LDPB_ERANGE, "reports nothing"},
        {"laplace", "1e-12", NULL, NULL, "ldp-ucb-l", LDPB_ERANGE,
         "no client can build the laplace mechanism at epsilon 1e-12"},
        {"laplace", "1e-6", NULL, NULL, "ldp-ucb-l", LDPB_OK, NULL},
        {"linear", "1e-15", NULL, NULL, NULL, LDPB_OK, NULL},
        /* central mode sends raw rewards: the local mechanism options are not the clients' */
        {"laplace", "1e-12", NULL, "central", "dp-ucb", LDPB_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agg_config c;
        agg_config_init(&c);
        char r[AGG_CONFIG_ERRMAX] = "";
        assert_int_equal(agg_config_set(&c, "state_dir", "/tmp/s", 0, r), LDPB_OK);
        assert_int_equal(agg_config_set(&c, "listen", "ipc:///x", 0, r), LDPB_OK);
        assert_int_equal(agg_config_set(&c, "key", "/tmp/k", 0, r), LDPB_OK);
        assert_int_equal(agg_config_set(&c, "arms", "2", 0, r), LDPB_OK);
        assert_int_equal(agg_config_set(&c, "mechanism", cases[i].mech, 0, r), LDPB_OK);
        assert_int_equal(agg_config_set(&c, "epsilon", cases[i].eps, 0, r), LDPB_OK);
        if (cases[i].kappa)
            assert_int_equal(agg_config_set(&c, "kappa", cases[i].kappa, 0, r), LDPB_OK);
        if (cases[i].mode)
            assert_int_equal(agg_config_set(&c, "mode", cases[i].mode, 0, r), LDPB_OK);
        if (cases[i].policy)
            assert_int_equal(agg_config_set(&c, "policy", cases[i].policy, 0, r), LDPB_OK);
        ldpb_err e = agg_config_check(&c, r);
        if (e != cases[i].want || (cases[i].msg && !strstr(r, cases[i].msg))) {
            print_error("case %zu (%s at %s): got %s '%s'\n", i, cases[i].mech, cases[i].eps,
                        ldpb_errname(e), r);
            fail();
        }
        agg_config_fini(&c);
    }
    /* The mechanism names are the mechanism table's local rows: raw is chosen by the mode. */
    agg_config c;
    agg_config_init(&c);
    char r[AGG_CONFIG_ERRMAX] = "";
    assert_int_equal(agg_config_set(&c, "mechanism", "raw", 0, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "'raw' is not one of linear, quadratic, exponential, laplace"));
    agg_config_fini(&c);
}

static void test_help(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    agg_config_help(f);
    fclose(f);
    static const char *const flags[] = {
        "--listen URL",      "--state-dir DIR",    "--key FILE",          "--arms K",
        "--policy NAME",     "--mechanism M",      "--epsilon E",         "--kappa X",
        "--mode MODE",       "--allow-nonprivate", "--horizon T",         "--workers N",
        "--batch-max N",     "--queue-max N",      "--assignment-ttl-s",  "--auth",
        "--allowlist FILE",  "--replay-window-s",  "--metrics HOST:PORT", "--log-level",
        "--export-csv FILE", "--config FILE",      "--check-config",      "--help"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        assert_non_null(strstr(buf, flags[i]));
    /* an integer option's bounds, as the parser enforces them (queue_max's minimum of 16 was
     * not said anywhere) */
    assert_non_null(strstr(buf, "[default: 65536; 16 to 4194304]"));
    assert_non_null(strstr(buf, "[2 to 16777216]"));
    free(buf);
    agg_config c;
    agg_config_init(&c);
    char err[AGG_CONFIG_ERRMAX] = "";
    assert_int_equal(agg_config_set(&c, "queue_max", "15", 1, err), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "queue_max", "16", 1, err), LDPB_OK);
    agg_config_fini(&c);
}

/* The storage options are in --help; --backup, like --export-csv, needs only the state
 * directory, and the two together are refused. */
static void test_storage_options(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    agg_config_help(f);
    fclose(f);
    static const char *const flags[] = {"--backup FILE", "--decision-retention-s S",
                                        "--decision-rows-max N", "--min-free-mb MB",
                                        "--error-log-interval-s S"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        assert_non_null(strstr(buf, flags[i]));
    free(buf);

    agg_config c;
    agg_config_init(&c);
    assert_int_equal(c.decision_retention_s, 604800);
    assert_int_equal(c.decision_rows_max, 1000000);
    assert_int_equal(c.min_free_mb, 32);
    assert_int_equal(c.error_log_interval_s, 10);
    char err[AGG_CONFIG_ERRMAX] = "";
    char *argv[] = {"ldpb-aggregator", "--backup", "/tmp/x.db", "--state-dir", "/tmp/s", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, argv, err), LDPB_OK);
    assert_string_equal(c.backup, "/tmp/x.db");
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    agg_config_fini(&c);
    agg_config_init(&c);
    char *argv2[] = {"ldpb-aggregator", "--backup", "/tmp/x.db", "--export-csv", "-",
                     "--state-dir",     "/tmp/s",   NULL};
    assert_int_equal(agg_config_parse_args(&c, 7, argv2, err), LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "--export-csv and --backup"));
    agg_config_fini(&c);
    agg_config_init(&c);
    assert_int_equal(agg_config_set(&c, "decision_rows_max", "0", 1, err), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "min_free_mb", "0", 1, err), LDPB_OK);
    agg_config_fini(&c);
}

/* The shipped example config parses and passes the checks. */
static void test_example_conf(void **state)
{
    (void)state;
    agg_config c;
    agg_config_init(&c);
    char err[AGG_CONFIG_ERRMAX] = "";
    ldpb_err e = agg_config_load_file(&c, LDPB_EXAMPLE_CONF, err);
    if (e)
        print_message("%s\n", err);
    assert_int_equal(e, LDPB_OK);
    assert_int_equal(c.n_listen, 2);
    assert_int_equal(c.params.k, 4);
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    agg_config_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_example_conf),
        cmocka_unit_test(test_storage_options),
        cmocka_unit_test(test_check_mechanism_serviceable),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
