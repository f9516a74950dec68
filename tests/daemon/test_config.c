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
#include "ctx_policy.h"
#include "policy.h"
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
    /* row_shards: 1..8, SQLite only */
    assert_int_equal(c.row_shards, 1);
    assert_int_equal(agg_config_set(&c, "row_shards", "9", 1, r), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "row_shards", "4", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "row_shards = 4 needs the SQLite store"));
    assert_int_equal(agg_config_set(&c, "store", "sqlite:", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "row_shards", "1", 1, r), LDPB_OK);
    /* node_name: 1..64 of [A-Za-z0-9._-]; merge_interval_ms: 90 by default, 1..60000 */
    assert_null(c.node_name);
    assert_int_equal(c.merge_interval_ms, 90);
    assert_int_equal(agg_config_set(&c, "node_name", "db 1", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_EINVAL);
    assert_non_null(strstr(r, "node_name 'db 1': 1..64 characters of [A-Za-z0-9._-] expected"));
    assert_int_equal(agg_config_set(&c, "node_name", "Node-1.a_b", 1, r), LDPB_OK);
    assert_int_equal(agg_config_check(&c, r), LDPB_OK);
    assert_int_equal(agg_config_set(&c, "merge_interval_ms", "0", 1, r), LDPB_ERANGE);
    assert_int_equal(agg_config_set(&c, "merge_interval_ms", "250", 1, r), LDPB_OK);
    assert_int_equal(c.merge_interval_ms, 250);
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

static ldpb_err load_text(agg_config *c, const char *text, char *err);

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
    assert_int_equal(c.n_exps, 1);
    assert_string_equal(c.exps[0].name, "default");
    agg_config_fini(&c);

    /* Its commented two-experiment example, with the "# " taken off, adds two experiments. */
    FILE *f = fopen(LDPB_EXAMPLE_CONF, "r");
    assert_non_null(f);
    char *text = NULL, line[512];
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    int in_example = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "# [experiment ", 14) == 0)
            in_example = 1;
        if (in_example && strncmp(line, "# ", 2) == 0)
            fputs(line + 2, out);
        else if (!(in_example && strcmp(line, "#\n") == 0))
            fputs(line, out);
    }
    fclose(f);
    fclose(out);
    assert_true(in_example);
    assert_int_equal(load_text(&c, text, err), LDPB_OK);
    free(text);
    e = agg_config_check(&c, err);
    if (e)
        print_message("%s\n", err);
    assert_int_equal(e, LDPB_OK);
    assert_int_equal(c.n_exps, 3);
    const agg_exp_config *b = agg_config_experiment(&c, "checkout-button");
    const agg_exp_config *r = agg_config_experiment(&c, "ranking.v2");
    assert_non_null(b);
    assert_non_null(r);
    assert_string_equal(b->policy, "ldp-ucb-b");
    assert_int_equal(b->params.mechanism, LDPB_MECH_EXPONENTIAL);
    assert_int_equal(r->mode, AGG_MODE_CENTRAL);
    assert_int_equal(r->params.k, 5);
    assert_int_equal(r->decision_retention_s, 86400);
    assert_int_equal(b->decision_retention_s, 604800);
    agg_config_fini(&c);
}

/* ---- experiments ------------------------------------------------------------------------- */

/* The service keys every test file below starts with (4 lines). */
#define SERVICE_KEYS "listen = ipc:///tmp/x\nstate_dir = /tmp/s\nkey = /tmp/k\nworkers = 2\n"

/* Loads `text` as a config file into c (initialized here); the file is removed. */
static ldpb_err load_text(agg_config *c, const char *text, char *err)
{
    agg_config_init(c);
    const char *p = write_tmp(text);
    ldpb_err e = agg_config_load_file(c, p, err);
    unlink(p);
    return e;
}

/* A file error must name this file and line: "PATH:LINE: " then `what`. */
static void assert_file_error(const char *text, int line, ldpb_err want, const char *what)
{
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "", prefix[128];
    ldpb_err e = load_text(&c, text, err);
    if (e == LDPB_OK)
        e = agg_config_check(&c, err);
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    if (e != want || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what)) {
        print_error("want %s '%s...%s', got %s '%s'\n", ldpb_errname(want), prefix, what,
                    ldpb_errname(e), err);
        fail();
    }
    agg_config_fini(&c);
}

/* 100 experiments from a generated file: every one declared, in order, with its own values and
 * the built-in defaults (not another section's) for the keys it leaves out; no `default`. */
static void test_exp_hundred(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fputs(SERVICE_KEYS "allow_nonprivate = true\n", f);
    int header_line[100];
    for (int i = 0; i < 100; i++) {
        fflush(f);
        header_line[i] = 2; /* after a blank line */
        for (size_t k = 0; k < len; k++)
            header_line[i] += text[k] == '\n';
        fprintf(f, "\n[experiment exp-%03d.v1]\narms = %d\n", i, 2 + i % 7);
        if (i % 4 == 1)
            fprintf(f, "mode = central\npolicy = dp-se\nepsilon = %g\nhorizon = 1000\n",
                    0.5 + i / 100.0);
        else if (i % 4 == 2)
            fputs("mode = nonprivate\npolicy = ucb1\n", f);
        else if (i % 4 == 3)
            fprintf(f, "decision_retention_s = %d\n", 60 * i);
    }
    fclose(f);
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "";
    agg_config_init(&c);
    const char *p = write_tmp(text);
    char *argv[] = {"ldpb-aggregator", "--config", (char *)p, NULL};
    ldpb_err e = agg_config_parse_args(&c, 3, argv, err);
    if (e)
        print_error("%s\n", err);
    assert_int_equal(e, LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    assert_int_equal(c.n_exps, 100);
    assert_null(agg_config_experiment(&c, "default"));
    assert_null(agg_config_experiment(&c, NULL));
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "exp-%03d.v1", i);
        const agg_exp_config *x = agg_config_experiment(&c, name);
        assert_ptr_equal(x, &c.exps[i]);
        assert_int_equal(x->params.k, 2 + i % 7);
        assert_int_equal(x->config_line, header_line[i]);
        if (i % 4 == 1) {
            assert_string_equal(x->policy, "dp-se");
            assert_int_equal(x->mode, AGG_MODE_CENTRAL);
            char eps[32];
            snprintf(eps, sizeof eps, "%g", 0.5 + i / 100.0);
            assert_true(x->params.epsilon == strtod(eps, NULL));
            assert_int_equal(x->params.horizon, 1000);
        } else if (i % 4 == 2) {
            assert_string_equal(x->policy, "ucb1");
            assert_int_equal(x->mode, AGG_MODE_NONPRIVATE);
        } else {
            assert_string_equal(x->policy, "ldp-ts-b");
            assert_int_equal(x->mode, AGG_MODE_LOCAL);
            assert_true(x->params.epsilon == 1.0);
            assert_int_equal(x->params.horizon, 0);
        }
        assert_int_equal(x->decision_retention_s, i % 4 == 3 ? (uint64_t)(60 * i) : 604800);
    }
    /* the service keys stay the service's */
    assert_int_equal(c.workers, 2);
    assert_int_equal(c.experiments_max, 10000);
    assert_int_equal(c.metrics_experiments_max, 100);
    assert_null(c.admin_list);
    /* argv is kept: parsing it again gives the same experiments (a SIGHUP re-read) */
    agg_config again;
    agg_config_init(&again);
    assert_int_equal(c.argc, 3);
    assert_null(c.argv[3]);
    assert_int_equal(agg_config_parse_args(&again, c.argc, c.argv, err), LDPB_OK);
    assert_int_equal(again.n_exps, 100);
    for (size_t i = 0; i < 100; i++) {
        assert_string_equal(again.exps[i].name, c.exps[i].name);
        assert_int_equal(agg_exp_config_change_refused(&c.exps[i], &again.exps[i], err), 0);
    }
    agg_config_fini(&again);
    agg_config_fini(&c);
    /* experiments_max: the 101st is refused at its header, a flag may raise the file's limit */
    agg_config_init(&c);
    char *lim[] = {"ldpb-aggregator", "--config", (char *)p, "--experiments-max", "99", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, lim, err), LDPB_ERANGE);
    char want[256];
    snprintf(want, sizeof want,
             "ldpb-aggregator: %s:%d: experiment 'exp-099.v1': more than "
             "experiments_max = 99 experiments (100 declared)",
             p, header_line[99]);
    assert_int_equal(strncmp(err, want, strlen(want)), 0);
    agg_config_fini(&c);
    agg_config_init(&c);
    lim[4] = "100";
    assert_int_equal(agg_config_parse_args(&c, 5, lim, err), LDPB_OK);
    agg_config_fini(&c);
    unlink(p);
    free(text);
}

/* Each refusal of a file names the line: the section's header for what concerns the whole
 * section, the key's line otherwise. */
static void test_exp_file_errors(void **state)
{
    (void)state;
    /* invalid names */
    assert_file_error(SERVICE_KEYS "[experiment Upper]\narms = 2\n", 5, LDPB_EINVAL,
                      "invalid experiment name 'Upper'");
    assert_file_error(SERVICE_KEYS "[experiment]\narms = 2\n", 5, LDPB_EINVAL,
                      "invalid experiment name ''");
    assert_file_error(SERVICE_KEYS "[experiment a b]\n", 5, LDPB_EINVAL,
                      "invalid experiment name 'a b'");
    assert_file_error(SERVICE_KEYS
                      "[experiment "
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
                      5, LDPB_EINVAL, "invalid experiment name");
    assert_file_error(SERVICE_KEYS "[experimental x]\n", 5, LDPB_EINVAL,
                      "unknown section [experimental x]");
    /* with keys, at its first key, as before experiments */
    assert_file_error(SERVICE_KEYS "[server]\n\nworkers = 2\n", 7, LDPB_EINVAL,
                      "unknown section [server]");
    /* a duplicate, at the second header */
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\n[experiment b]\narms = 2\n"
                                   "[experiment a]\narms = 3\n",
                      9, LDPB_EINVAL, "duplicate experiment 'a' (declared at line 5 already)");
    assert_file_error(SERVICE_KEYS "arms = 2\n[experiment default]\narms = 2\n", 6, LDPB_EINVAL,
                      "duplicate experiment 'default'");
    assert_file_error(SERVICE_KEYS "[experiment default]\narms = 2\n[aggregator]\narms = 2\n", 8,
                      LDPB_EINVAL, "declared by [experiment default] (line 5)");
    /* a service key in a section; an unknown key; a key twice */
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\n\nworkers = 4\n", 8, LDPB_EINVAL,
                      "`workers` is a service setting, not an experiment's");
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\nfrobnicate = 1\n", 7, LDPB_EINVAL,
                      "unknown option 'frobnicate'");
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\narms = 3\n", 7, LDPB_EINVAL,
                      "arms is set twice");
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 1\n", 6, LDPB_ERANGE,
                      "arms: 1 outside [2, 16777216]");
    /* an unknown policy, at its line */
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\npolicy = nope\n", 7, LDPB_EINVAL,
                      "policy: unknown policy 'nope' (known: ");
    /* bad combinations, at the header: today's rules, per experiment */
    assert_file_error(SERVICE_KEYS "[experiment ok]\narms = 2\n[experiment x]\nmode = central\n"
                                   "arms = 3\n[experiment y]\narms = 2\n",
                      7, LDPB_EINVAL,
                      "experiment 'x': policy 'ldp-ts-b' is a local-model policy but mode is "
                      "central");
    assert_file_error(SERVICE_KEYS "[experiment x]\nepsilon = 2\n", 5, LDPB_EINVAL,
                      "experiment 'x': arms is required");
    assert_file_error(SERVICE_KEYS "[experiment x]\narms = 8\npolicy = linucb\nmode = nonprivate\n"
                                   "d = 64\n",
                      5, LDPB_EINVAL, "experiment 'x': policy 'linucb' needs d");
    assert_file_error(SERVICE_KEYS "[experiment x]\narms = 2\nepsilon = 1e-320\n", 5, LDPB_ERANGE,
                      "reports nothing about the reward");
    /* allow_nonprivate is the service's: a flag may still give it, so agg_config_check refuses */
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\n[experiment np]\nmode = nonprivate\n"
                                   "policy = ucb1\narms = 2\n",
                      7, LDPB_EINVAL, "experiment 'np': mode nonprivate sends raw rewards");
    /* more than experiments_max: named at the first one too many */
    assert_file_error("experiments_max = 2\n" SERVICE_KEYS "[experiment a]\narms = 2\n"
                      "[experiment b]\narms = 2\n[experiment c]\narms = 2\n",
                      10, LDPB_ERANGE, "experiment 'c': more than experiments_max = 2");
    assert_file_error(SERVICE_KEYS "experiments_max = 0\n", 5, LDPB_ERANGE,
                      "experiments_max: 0 outside [1, 100000]");
    /* a syntax error before our own error is the one reported */
    assert_file_error(SERVICE_KEYS "[experiment a]\nnot ini\nworkers = 1\n", 6, LDPB_EINVAL,
                      "syntax error");
}

/* inih cuts a section name at 50 bytes: a 64-byte name is still read whole, and a section
 * without keys is still seen (and refused: it has no arms). */
static void test_exp_long_and_empty_sections(void **state)
{
    (void)state;
    char name[AGG_EXPERIMENT_NAME_MAX + 1];
    memset(name, 'n', AGG_EXPERIMENT_NAME_MAX);
    name[AGG_EXPERIMENT_NAME_MAX] = '\0';
    char text[512];
    snprintf(text, sizeof text,
             SERVICE_KEYS "[experiment %s]\narms = 3\n[experiment %.50s]\n"
                          "arms = 2\n",
             name, name);
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "";
    assert_int_equal(load_text(&c, text, err), LDPB_OK);
    assert_int_equal(c.n_exps, 2);
    assert_string_equal(c.exps[0].name, name);
    assert_int_equal(c.exps[0].params.k, 3);
    assert_int_equal(strlen(c.exps[1].name), 50);
    assert_int_equal(c.exps[1].params.k, 2);
    agg_config_fini(&c);
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\n[experiment empty]\n"
                                   "[experiment b]\narms = 2\n",
                      7, LDPB_EINVAL, "experiment 'empty': arms is required");
    /* an indented "[...]" after a key continues the key's value, as inih reads it */
    assert_file_error(SERVICE_KEYS "[experiment a]\narms = 2\n  [experiment b]\n", 7, LDPB_EINVAL,
                      "arms is set twice");
}

/* Old single-experiment configurations and flags: exactly one experiment, `default`, with the
 * values the top-level fields have (which older code still reads). */
static void test_exp_single_default(void **state)
{
    (void)state;
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "";
    agg_config_init(&c);
    const char *p = write_tmp(SERVICE_KEYS "arms = 4\npolicy = dp-ucb\nmode = central\n"
                                           "horizon = 5000\nepsilon = 0.75\n");
    char *argv[] = {"ldpb-aggregator",        "--config", (char *)p, "--arms", "6", "--rho", "2.5",
                    "--decision-retention-s", "99",       NULL};
    assert_int_equal(agg_config_parse_args(&c, 9, argv, err), LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    assert_int_equal(c.n_exps, 1);
    const agg_exp_config *d = agg_config_experiment(&c, NULL);
    assert_ptr_equal(d, &c.exps[0]);
    assert_ptr_equal(agg_config_experiment(&c, "default"), d);
    assert_string_equal(d->name, "default");
    assert_int_equal(d->config_line, 0);
    assert_string_equal(d->policy, c.policy);
    assert_string_equal(d->policy, "dp-ucb");
    assert_ptr_not_equal(d->policy, c.policy); /* a copy: each frees its own */
    assert_int_equal(d->mode, AGG_MODE_CENTRAL);
    assert_int_equal(d->params.k, 6);
    assert_int_equal(d->params.horizon, 5000);
    assert_true(d->params.epsilon == 0.75);
    assert_true(d->ctx.rho == 2.5);
    assert_int_equal(d->decision_retention_s, 99);
    assert_int_equal(c.params.k, 6);
    assert_int_equal(c.decision_retention_s, 99);
    assert_int_equal(memcmp(&d->params, &c.params, sizeof c.params), 0);
    assert_int_equal(memcmp(&d->ctx, &c.ctx, sizeof c.ctx), 0);
    agg_config_fini(&c);
    unlink(p);

    /* set option by option, as the daemon tests do: the default follows every set */
    agg_config_init(&c);
    assert_int_equal(c.n_exps, 0);
    assert_int_equal(agg_config_set(&c, "workers", "3", 1, err), LDPB_OK);
    assert_int_equal(c.n_exps, 0); /* a service option declares nothing */
    assert_int_equal(agg_config_set(&c, "arms", "3", 1, err), LDPB_OK);
    assert_int_equal(c.n_exps, 1);
    assert_int_equal(agg_config_set(&c, "policy", "ldp-ucb-b", 1, err), LDPB_OK);
    assert_int_equal(c.n_exps, 1);
    assert_string_equal(c.exps[0].policy, "ldp-ucb-b");
    assert_int_equal(c.exps[0].params.k, 3);
    agg_config_fini(&c);

    /* neither top-level experiment options nor sections: refused as today */
    assert_int_equal(load_text(&c, SERVICE_KEYS, err), LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "arms is required"));
    agg_config_fini(&c);

    /* top-level keys and sections: `default` first, then the sections */
    assert_int_equal(
        load_text(&c, SERVICE_KEYS "arms = 2\nepsilon = 3\n[experiment b]\narms = 5\n", err),
        LDPB_OK);
    assert_int_equal(c.n_exps, 2);
    assert_string_equal(c.exps[0].name, "default");
    assert_string_equal(c.exps[1].name, "b");
    assert_true(c.exps[0].params.epsilon == 3.0);
    assert_true(c.exps[1].params.epsilon == 1.0); /* the built-in default, not the top level's */
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    agg_config_fini(&c);
    /* ... also when [aggregator] after the sections declares it, and with a flag */
    assert_int_equal(load_text(&c,
                               SERVICE_KEYS "[experiment b]\narms = 5\n[aggregator]\n"
                                            "arms = 2\n",
                               err),
                     LDPB_OK);
    assert_int_equal(c.n_exps, 2);
    assert_string_equal(c.exps[0].name, "default");
    assert_string_equal(c.exps[1].name, "b");
    agg_config_fini(&c);
    /* a section may declare `default` itself when the top level does not */
    assert_int_equal(load_text(&c, SERVICE_KEYS "[experiment default]\narms = 5\n", err), LDPB_OK);
    assert_int_equal(c.n_exps, 1);
    assert_int_equal(agg_config_experiment(&c, NULL)->params.k, 5);
    assert_int_equal(agg_config_set(&c, "arms", "2", 1, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "arms: the experiment 'default' is declared by [experiment "
                                "default] (line 5)"));
    agg_config_fini(&c);
    /* ... and so is its flag, named */
    agg_config_init(&c);
    const char *p2 = write_tmp(SERVICE_KEYS "[experiment default]\narms = 5\n");
    char *flags[] = {"ldpb-aggregator", "--config", (char *)p2, "--eps-arm", "0.5", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, flags, err), LDPB_EINVAL);
    assert_string_equal(err, "ldpb-aggregator: --eps-arm: the experiment 'default' is declared "
                             "by [experiment default] (line 5): experiment keys at the top level "
                             "would declare it a second time");
    unlink(p2);
    agg_config_fini(&c);
}

/* A configuration of sections only has no `default`. */
static void test_exp_sections_only(void **state)
{
    (void)state;
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "";
    assert_int_equal(load_text(&c,
                               SERVICE_KEYS "[experiment a]\narms = 2\n[experiment b]\n"
                                            "arms = 3\npolicy = ldp-ucb-b\n",
                               err),
                     LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    assert_int_equal(c.n_exps, 2);
    assert_null(agg_config_experiment(&c, "default"));
    assert_null(agg_config_experiment(&c, ""));
    assert_non_null(agg_config_experiment(&c, "b"));
    assert_null(agg_config_experiment(&c, "c"));
    agg_config_fini(&c);
}

static void assert_same_exp(const agg_exp_config *a, const agg_exp_config *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->policy, b->policy);
    assert_int_equal(a->mode, b->mode);
    assert_int_equal(a->decision_retention_s, b->decision_retention_s);
    const agg_policy_config *p = &a->params, *q = &b->params;
    assert_int_equal(p->k, q->k);
    assert_int_equal(p->horizon, q->horizon);
    assert_int_equal(p->mechanism, q->mechanism);
    assert_int_equal(p->tau, q->tau);
    /* bit for bit: -0 and 0 differ here */
    const double da[] = {p->epsilon,   p->kappa,     p->beta,      p->gamma, p->eps_arm,
                         p->threshold, a->ctx.delta, a->ctx.alpha, a->ctx.L, a->ctx.S,
                         a->ctx.sigma, a->ctx.rho,   a->ctx.B};
    const double db[] = {q->epsilon,   q->kappa,     q->beta,      q->gamma, q->eps_arm,
                         q->threshold, b->ctx.delta, b->ctx.alpha, b->ctx.L, b->ctx.S,
                         b->ctx.sigma, b->ctx.rho,   b->ctx.B};
    assert_int_equal(memcmp(da, db, sizeof da), 0);
    assert_int_equal(a->ctx.d, b->ctx.d);
}

/* format -> parse gives back the same settings, bit for bit, for every policy (each with the mode
 * of its model), with doubles that print long (0.1 + 0.2, 1/3, subnormals, 1 - 2^-53, -0). */
static void test_exp_format_roundtrip(void **state)
{
    (void)state;
    size_t n;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    const char *names[64];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 60; i++)
        names[m++] = all[i]->name;
    names[m++] = "linucb";
    names[m++] = "jdp-linucb-wishart";
    names[m++] = "jdp-linucb-gaussian";
    names[m++] = "ldp-linucb-gaussian";
    for (size_t i = 0; i < m; i++) {
        const agg_policy_ops *ops = agg_policy_find(names[i]);
        if (!ops)
            ops = agg_ctx_policy_find(names[i]);
        assert_non_null(ops);
        agg_exp_config e;
        assert_int_equal(agg_exp_config_init(&e), LDPB_OK);
        snprintf(e.name, sizeof e.name, "rt-%zu", i);
        free(e.policy);
        e.policy = strdup(names[i]);
        e.mode = ops->model == AGG_MODEL_LOCAL     ? AGG_MODE_LOCAL
                 : ops->model == AGG_MODEL_CENTRAL ? AGG_MODE_CENTRAL
                                                   : AGG_MODE_NONPRIVATE;
        e.params.k = 3 + (uint32_t)i % 5;
        e.params.horizon = 1000003 + i;
        e.params.epsilon = 0.1 + 0.2;
        e.params.kappa = i % 2 ? -0.0 : -1.0 / 3.0;
        e.params.beta = i % 3 ? 4.9406564584124654e-324 : 1.0 / 7.0;
        e.params.gamma = 1.0 - 0x1p-53;
        e.params.eps_arm = 0.1 + 0.2 - 1e-17;
        e.params.tau = i * 17;
        e.params.threshold = i % 2 ? AGG_EXP3_THRESHOLD_BOUND_MIN : 1e300;
        e.ctx.d = 5;
        e.ctx.delta = 2.2250738585072014e-308;
        e.ctx.alpha = 0.3333333333333333;
        e.ctx.L = 123456.78901234567;
        e.ctx.S = 1e-300;
        e.ctx.sigma = 0x1.fffffffffffffp-1;
        e.ctx.rho = 2.5;
        e.ctx.B = 999999.99999999988;
        e.decision_retention_s = UINT64_C(3153600000);
        /* a local policy gets a mechanism its clients can build */
        e.params.mechanism = LDPB_MECH_LINEAR;
        char err[AGG_CONFIG_ERRMAX] = "";
        if (e.mode == AGG_MODE_LOCAL && agg_exp_config_check(&e, 0, err) != LDPB_OK)
            e.params.mechanism = LDPB_MECH_LAPLACE;
        ldpb_err ce = agg_exp_config_check(&e, 1, err);
        if (ce)
            print_error("%s: %s\n", names[i], err);
        assert_int_equal(ce, LDPB_OK);
        char text[2048], again[2048];
        size_t len = agg_exp_config_format(&e, text, sizeof text);
        assert_true(len > 0 && len == strlen(text));
        agg_exp_config back;
        ldpb_err pe = agg_exp_config_parse(&back, e.name, text, err);
        if (pe)
            print_error("%s: %s\n---\n%s", names[i], err, text);
        assert_int_equal(pe, LDPB_OK);
        assert_same_exp(&e, &back);
        assert_int_equal(agg_exp_config_change_refused(&e, &back, err), 0);
        assert_int_equal(agg_exp_config_format(&back, again, sizeof again), len);
        assert_string_equal(again, text);
        /* sorted, one line per experiment option, none of the service's */
        assert_int_equal(strncmp(text, "alpha = ", 8), 0);
        assert_non_null(strstr(text, "\ndecision_retention_s = 3153600000\n"));
        assert_non_null(strstr(text, "\nepsilon = 0.30000000000000004\n"));
        assert_non_null(strstr(text, i % 2 ? "\nkappa = -0\n" : "\nkappa = -0.3333333333333333\n"));
        assert_non_null(strstr(text, "\nrho = 2.5\n")); /* shortest: not 2.5000000000000000 */
        assert_non_null(strstr(text, "\ngamma = 0.9999999999999999\n"));
        assert_null(strstr(text, "workers"));
        assert_null(strstr(text, "allow_nonprivate"));
        /* too small a buffer: 0, at every size below the length + NUL */
        assert_int_equal(agg_exp_config_format(&e, again, len), 0);
        assert_int_equal(agg_exp_config_format(&e, again, len / 2), 0);
        /* a copy is deep and equal */
        agg_exp_config cp;
        assert_int_equal(agg_exp_config_copy(&cp, &back), LDPB_OK);
        assert_ptr_not_equal(cp.policy, back.policy);
        assert_same_exp(&cp, &back);
        agg_exp_config_fini(&cp);
        agg_exp_config_fini(&back);
        agg_exp_config_fini(&e);
    }
}

/* The settings text of a runtime `create`: "line N: reason" for each refusal. */
static void test_exp_parse(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        ldpb_err want;
        const char *msg;
    } cases[] = {
        {"ok", "arms = 3\n# comment\n; comment\n\npolicy = ldp-ucb-b ; inline\n", LDPB_OK, NULL},
        {"ok", "arms = 3", LDPB_OK, NULL},
        {"Bad", "arms = 3\n", LDPB_EINVAL, "invalid experiment name 'Bad'"},
        {"", "arms = 3\n", LDPB_EINVAL, "invalid experiment name ''"},
        {"a/b", "arms = 3\n", LDPB_EINVAL, "invalid experiment name"},
        {"ok", "arms = 3\nworkers = 2\n", LDPB_EINVAL,
         "line 2: `workers` is a service setting, not an experiment's"},
        {"ok", "arms = 3\nallow_nonprivate = true\n", LDPB_EINVAL,
         "line 2: `allow_nonprivate` is a service setting"},
        {"ok", "\n\narms = 3\n[experiment x]\n", LDPB_EINVAL, "line 4: [experiment x]: an "},
        {"ok", "arms = 3\nfoo\n", LDPB_EINVAL, "line 2: syntax error"},
        {"ok", "arms = 3\narms = 3\n", LDPB_EINVAL, "line 2: arms is set twice"},
        {"ok", "arms = 3\nepsilon = 11\n", LDPB_ERANGE, "line 2: epsilon: 11 outside (0, 10]"},
        {"ok", "policy = nope\narms = 3\n", LDPB_EINVAL, "line 1: policy: unknown policy 'nope'"},
        {"ok", "", LDPB_EINVAL, "arms is required"},
        {"ok", "arms = 3\nmode = central\n", LDPB_EINVAL, "local-model policy but mode is central"},
        /* allow_nonprivate is the service's: the caller applies it (agg_exp_config_check) */
        {"ok", "arms = 3\nmode = nonprivate\npolicy = ucb1\n", LDPB_OK, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agg_exp_config e;
        char err[AGG_CONFIG_ERRMAX] = "";
        ldpb_err got = agg_exp_config_parse(&e, cases[i].name, cases[i].text, err);
        if (got != cases[i].want || (cases[i].msg && !strstr(err, cases[i].msg))) {
            print_error("case %zu: got %s '%s'\n", i, ldpb_errname(got), err);
            fail();
        }
        if (got == LDPB_OK) {
            assert_string_equal(e.name, cases[i].name);
            assert_int_equal(e.params.k, 3);
        } else {
            assert_null(e.policy); /* nothing to free */
        }
        agg_exp_config_fini(&e);
    }
    agg_exp_config e;
    char err[AGG_CONFIG_ERRMAX] = "";
    assert_int_equal(
        agg_exp_config_parse(&e, "np", "arms = 3\nmode = nonprivate\npolicy = ucb1\n", err),
        LDPB_OK);
    assert_int_equal(agg_exp_config_check(&e, 0, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "allow_nonprivate"));
    agg_exp_config_fini(&e);
    /* names: 1 to 64 of [a-z0-9._-] */
    assert_true(agg_exp_name_valid("a"));
    assert_true(agg_exp_name_valid("exp-1.v2_b"));
    assert_false(agg_exp_name_valid(NULL));
    assert_false(agg_exp_name_valid(""));
    assert_false(agg_exp_name_valid("A"));
    assert_false(agg_exp_name_valid("a b"));
    assert_false(agg_exp_name_valid("\xc3\xa9"));
    char n64[66];
    memset(n64, 'x', 65);
    n64[64] = '\0';
    assert_true(agg_exp_name_valid(n64));
    n64[64] = 'x';
    n64[65] = '\0';
    assert_false(agg_exp_name_valid(n64));
}

/* Changing a running experiment: privacy settings refused with "stop it and start one under a
 * new name", other learning settings refused with the key named, the retention alone allowed. */
static void test_exp_change_refused(void **state)
{
    (void)state;
    static const struct {
        const char *base, *change;
        int privacy; /* -1: allowed */
        const char *key;
    } cases[] = {
        {"arms = 4\n", "", -1, NULL},
        {"arms = 4\n", "decision_retention_s = 60\n", -1, NULL},
        {"arms = 4\n", "epsilon = 2\n", 1, "epsilon would change from 1 to 2"},
        {"arms = 4\n", "mechanism = exponential\n", 1,
         "mechanism would change from linear to "
         "exponential"},
        {"arms = 4\npolicy = ucb1\nmode = nonprivate\n", "policy = dp-se\nmode = central\n", 1,
         "mode would change from nonprivate to central"},
        {"arms = 4\npolicy = dp-ucb\nmode = central\nhorizon = 1000\n",
         "policy = dp-ucb\nmode = central\nhorizon = 2000\n", 1, "horizon would change"},
        {"arms = 4\npolicy = dp-ucb\nmode = central\nhorizon = 1000\n",
         "policy = dp-ucb\nmode = central\nhorizon = 1000\neps_arm = 0.5\n", 1, "eps_arm"},
        {"arms = 4\npolicy = jdp-linucb-wishart\nmode = central\nd = 4\n",
         "policy = jdp-linucb-wishart\nmode = central\nd = 4\ndelta = 0.01\n", 1,
         "delta would change from 0.1 to 0.01"},
        /* not a DP policy, or one that does not read it: a learning setting */
        {"arms = 4\npolicy = ucb1\nmode = nonprivate\n",
         "policy = ucb1\nmode = nonprivate\nhorizon = 10\n", 0, "horizon would change"},
        {"arms = 4\n", "horizon = 10\n", 0, "horizon would change from 0 to 10"},
        {"arms = 4\n", "arms = 5\n", 0, "arms would change from 4 to 5"},
        {"arms = 4\n", "policy = ldp-ucb-b\n", 0, "policy would change from ldp-ts-b to ldp-ucb-b"},
        {"arms = 4\n", "kappa = 0.25\n", 0, "kappa would change"},
        {"arms = 4\npolicy = linucb\nmode = nonprivate\nd = 4\n",
         "policy = linucb\nmode = nonprivate\nd = 5\n", 0, "d would change from 4 to 5"},
        /* a privacy change is named first, whatever else changes */
        {"arms = 4\n", "arms = 5\nepsilon = 0.5\ndecision_retention_s = 1\n", 1, "epsilon"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agg_exp_config a, b;
        char err[AGG_CONFIG_ERRMAX] = "", text[512];
        assert_int_equal(agg_exp_config_parse(&a, "run", cases[i].base, err), LDPB_OK);
        /* the changed settings: the base's keys, then the changes replacing them */
        snprintf(text, sizeof text, "%s", cases[i].change);
        if (!strstr(cases[i].change, "arms"))
            snprintf(text + strlen(text), sizeof text - strlen(text), "arms = 4\n");
        ldpb_err pe = agg_exp_config_parse(&b, "run", text, err);
        if (pe)
            print_error("case %zu: %s\n", i, err);
        assert_int_equal(pe, LDPB_OK);
        char why[AGG_CONFIG_ERRMAX] = "";
        int refused = agg_exp_config_change_refused(&a, &b, why);
        int ok = cases[i].privacy < 0 ? refused == 0 && why[0] == '\0'
                                      : refused == 1 && strstr(why, cases[i].key) &&
                                            strstr(why, "stop it and start one under a new name") &&
                                            !strstr(why, "privacy") == !cases[i].privacy &&
                                            strncmp(why, "experiment 'run': ", 18) == 0;
        if (!ok) {
            print_error("case %zu: refused %d '%s'\n", i, refused, why);
            fail();
        }
        agg_exp_config_fini(&a);
        agg_exp_config_fini(&b);
    }
}

static void test_exp_help(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    agg_config_help(f);
    fclose(f);
    assert_non_null(strstr(buf, "[experiment NAME]"));
    assert_non_null(strstr(buf, "--experiments-max N"));
    assert_non_null(strstr(buf, "--admin-list FILE"));
    assert_non_null(strstr(buf, "--metrics-experiments-max N"));
    /* two lists from the one table: the service's, then the experiments' */
    const char *svc = strstr(buf, "Service options");
    const char *exp = strstr(buf, "Experiment options");
    assert_non_null(svc);
    assert_non_null(exp);
    assert_true(svc < exp);
    assert_true(strstr(buf, "--workers N") < exp);
    assert_true(strstr(buf, "--admin-list FILE") < exp);
    assert_true(strstr(buf, "--epsilon E") > exp);
    assert_true(strstr(buf, "--decision-retention-s S") > exp);
    assert_true(strstr(buf, "--arms K") > exp);
    assert_non_null(strstr(buf, "--experiment NAME"));
    free(buf);
}

/* --export-csv FILE --experiment NAME: a valid name, only with --export-csv, once. */
static void test_export_experiment_flag(void **state)
{
    (void)state;
    agg_config c;
    char err[AGG_CONFIG_ERRMAX] = "";
    agg_config_init(&c);
    char *ok[] = {"ldpb-aggregator", "--export-csv", "-",      "--experiment",
                  "exp-1",           "--state-dir",  "/tmp/s", NULL};
    assert_int_equal(agg_config_parse_args(&c, 7, ok, err), LDPB_OK);
    assert_string_equal(c.export_experiment, "exp-1");
    assert_int_equal(agg_config_check(&c, err), LDPB_OK);
    agg_config_fini(&c);
    agg_config_init(&c);
    char *bad[] = {"ldpb-aggregator", "--export-csv", "-", "--experiment=Exp", NULL};
    assert_int_equal(agg_config_parse_args(&c, 4, bad, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "--experiment: invalid experiment name 'Exp'"));
    agg_config_fini(&c);
    agg_config_init(&c);
    char *twice[] = {"ldpb-aggregator", "--experiment", "a", "--experiment", "b", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, twice, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "--experiment given twice"));
    agg_config_fini(&c);
    agg_config_init(&c);
    char *alone[] = {"ldpb-aggregator", "--experiment", "a", "--state-dir", "/tmp/s", NULL};
    assert_int_equal(agg_config_parse_args(&c, 5, alone, err), LDPB_OK);
    assert_int_equal(agg_config_check(&c, err), LDPB_EINVAL);
    assert_non_null(strstr(err, "give --export-csv FILE"));
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
        cmocka_unit_test(test_exp_hundred),
        cmocka_unit_test(test_exp_file_errors),
        cmocka_unit_test(test_exp_long_and_empty_sections),
        cmocka_unit_test(test_exp_single_default),
        cmocka_unit_test(test_exp_sections_only),
        cmocka_unit_test(test_exp_format_roundtrip),
        cmocka_unit_test(test_exp_parse),
        cmocka_unit_test(test_exp_change_refused),
        cmocka_unit_test(test_exp_help),
        cmocka_unit_test(test_export_experiment_flag),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
