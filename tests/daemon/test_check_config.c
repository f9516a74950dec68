/* `ldpb-aggregator --check-config` validates the configuration, the store URL and the state's
 * schema version and meta without writing anything (docs/aggregator.md, "The store"), against
 * the real binary: on SQLite (test_daemon_check_config) and on a database of the throwaway
 * PostgreSQL (test_daemon_check_config_pg, where the harness gives each daemon its own):
 * - a fresh state: exit 0, and afterwards no state directory, no tables in the database;
 * - a state of this version with reports, under a configuration that declares one more
 *   experiment: exit 0, and the state's files (SQLite: byte for byte) or rows (PostgreSQL) are as
 *   before; the experiment is recorded by the next start, not by the check;
 * - a state of schema version 1 or 2 (tests/data/store_v1, store_v2, SQLite): refused, exit 2,
 *   saying a start would migrate it, and the database file is unchanged; a start migrates it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char conf[] = "arms = 3\npolicy = ldp-ts-b\nmechanism = linear\nepsilon = 1\n"
                           "log_level = warn\n";
static const char conf_more[] = "arms = 3\npolicy = ldp-ts-b\nmechanism = linear\nepsilon = 1\n"
                                "log_level = warn\n[experiment extra]\narms = 2\n"
                                "policy = ldp-ts-b\nmechanism = linear\nepsilon = 1\n";

static int check(const dt_daemon *d, char *err, size_t cap)
{
    const char *args[] = {"--config", d->conf, "--check-config", NULL};
    return dt_daemon_run(d, args, err, cap);
}

/* One line of `psql -Atq` output for `sql` on the daemon's database. */
static void psql_line(const dt_daemon *d, const char *sql, char *out, size_t cap)
{
    assert_true(dt_pg_query(d, sql, out, cap) >= 0);
}

/* What the state is: SQLite, the state directory's listing and the database's bytes' checksum;
 * PostgreSQL, its tables and the rows that a start or a migration writes. */
static void snapshot(const dt_daemon *d, char *out, size_t cap)
{
    if (d->store[0]) {
        psql_line(d,
                  "SELECT (SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables"
                  " WHERE schemaname = current_schema()) || ' ' || (SELECT count(*) FROM reports)"
                  " || ' ' || (SELECT string_agg(name, ',' ORDER BY id) FROM experiments) || ' ' ||"
                  " (SELECT string_agg(key || '=' || value, ';' ORDER BY key) FROM meta)",
                  out, cap);
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && ls -a && sha256sum aggregator.db", d->state_dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
}

static void test_fresh_state_untouched(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    char err[4096];
    assert_int_equal(check(&d, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(d.state_dir, &st), -1); /* not even the directory */
    if (d.store[0]) {
        char tables[256];
        psql_line(&d, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", tables,
                  sizeof tables);
        assert_string_equal(tables, "0");
    }
    /* A start after the check is a first start. */
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

static void test_state_untouched(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    for (int i = 0; i < 5; i++) {
        uint32_t arm;
        int mech;
        double eps;
        uint8_t id[LDPB_WIRE_ID_MAX];
        size_t id_len;
        assert_int_equal(dt_assign(&c, &arm, &mech, &eps, id, &id_len), 0);
        dt_reply r;
        assert_int_equal(dt_report(&c, id, id_len, mech, eps, 1, 1, 0, &r), 0);
        assert_true(dt_is_ack(&r, NULL));
        dt_reply_clear(&r);
    }
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    static char before[4096], after[4096];
    snapshot(&d, before, sizeof before);
    /* One more experiment declared: the check accepts it and records nothing. */
    assert_int_equal(dt_daemon_write_config(&d, conf_more), 0);
    char err[4096];
    if (check(&d, err, sizeof err) != 0)
        fail_msg("--check-config refused: %s", err);
    snapshot(&d, after, sizeof after);
    assert_string_equal(after, before);
    /* The start records it. */
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    snapshot(&d, after, sizeof after);
    assert_string_not_equal(after, before);
    dt_daemon_cleanup(&d);
}

/* A SQLite state directory of an older version (tests/data/store_vN: ldp-ts-b, 3 arms, linear,
 * epsilon 1, 20 reports from `ldpb loadgen`, written by the ldpb-aggregator of that schema
 * version) is refused by --check-config, unchanged, and migrated by a start. */
static void older_version_refused_unmigrated(int version)
{
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    d.store[0] = '\0'; /* SQLite, whatever the registration */
    char cmd[1024], want[128];
    snprintf(cmd, sizeof cmd,
             "mkdir -m 0700 '%s' && cp '%s/store_v%d/aggregator.db' '%s/store_v%d/state_id' '%s' "
             "&& chmod 0600 '%s'/*",
             d.state_dir, LDPB_TEST_DATA_DIR, version, LDPB_TEST_DATA_DIR, version, d.state_dir,
             d.state_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    static char before[4096], after[4096];
    snapshot(&d, before, sizeof before);
    char err[4096];
    assert_int_equal(check(&d, err, sizeof err), 2);
    snprintf(want, sizeof want,
             "the state has schema version %d, which ldpb-aggregator migrates to version", version);
    if (!strstr(err, want))
        fail_msg("--check-config said: %s", err);
    assert_non_null(strstr(err, "--check-config writes nothing"));
    snapshot(&d, after, sizeof after);
    assert_string_equal(after, before);
    /* A start migrates it (test_daemon_meta and test_daemon_store check how). */
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    assert_int_equal(check(&d, err, sizeof err), 0);
    dt_daemon_cleanup(&d);
}

static void test_version_1_refused_unmigrated(void **state)
{
    (void)state;
    older_version_refused_unmigrated(1);
}

static void test_version_2_refused_unmigrated(void **state)
{
    (void)state;
    older_version_refused_unmigrated(2);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_state_untouched),
        cmocka_unit_test(test_state_untouched),
        cmocka_unit_test(test_version_1_refused_unmigrated),
        cmocka_unit_test(test_version_2_refused_unmigrated),
    };
    return cmocka_run_group_tests_name("check-config", tests, NULL, NULL);
}
