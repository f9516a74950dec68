/* The store seam (store.h) on both backends: the same tests run on SQLite and on a throwaway
 * PostgreSQL (tests/support/pg_throwaway.sh, the CTest fixture of the label postgres), and the
 * propensity logs the two export for the same transactions are compared byte for byte. Then what
 * only PostgreSQL has: an unreachable database, a database of another schema version or with
 * foreign tables (refused, nothing written), a second node on the same database (refused), a
 * connection killed by the server (taken up again by the next transaction), backups (pg_dump's
 * job). The binary is run twice by CTest: without arguments, SQLite only; with "postgres", both
 * backends, failing (not skipping) when PostgreSQL is missing. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "harness.h"
#include "state_id.h"
#include "store.h"

#define K 3

typedef struct fixture {
    const char *backend; /* "sqlite" or "postgresql" */
    char dir[64];        /* the state directory's parent */
    char state[96];
    char url[512]; /* empty for SQLite */
} fixture;

static int db_seq;

static void new_state(fixture *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-test-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    f->url[0] = '\0';
    if (strcmp(f->backend, "postgresql") == 0) {
        char name[64];
        snprintf(name, sizeof name, "store_%d_%d", (int)getpid(), ++db_seq);
        assert_int_equal(dt_pg_database(name, f->url, sizeof f->url), 0);
    }
}

static void remove_tree(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int setup_sqlite(void **state)
{
    static fixture f = {.backend = "sqlite"};
    *state = &f;
    return 0;
}

static int setup_pg(void **state)
{
    static fixture f = {.backend = "postgresql"};
    *state = &f;
    return 0;
}

static agg_store_meta meta_of(const fixture *f, uint32_t k)
{
    agg_store_meta m = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = k, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
        .store_url = f->url[0] ? f->url : NULL,
    };
    return m;
}

static agg_store *open_ok(const fixture *f)
{
    agg_store_meta m = meta_of(f, K);
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    ldpb_err e = agg_store_open(&s, f->state, &m, msg);
    if (e)
        print_error("open: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    assert_string_equal(agg_store_backend(s), f->backend);
    return s;
}

static agg_store_row row(uint8_t tag, uint32_t arm, uint64_t at, double value)
{
    static uint8_t ids[256][16];
    memset(ids[tag], tag, sizeof ids[tag]);
    agg_store_row r = {ids[tag], sizeof ids[tag], arm, "linear", 1.0, 1.0 / 3,
                       7,        at + 60000,      at,  value,    0,   0};
    return r;
}

/* One batch: decisions 1..6 (expiring 1060..6060 s), reports of 1..4 (arms 0, 1, 1, 2), the
 * report of 2 twice, the state blob "abc". */
static void write_batch(agg_store *s)
{
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    for (uint8_t t = 1; t <= 6; t++) {
        agg_store_row d = row(t, t % K, 1000000u * t, 0);
        assert_int_equal(agg_store_add_decision(s, &d), LDPB_OK);
    }
    static const uint32_t arms[] = {0, 1, 1, 2};
    static const double values[] = {0.1, -1.25, 3e-300, 0.30000000000000004};
    for (uint8_t t = 1; t <= 4; t++) {
        agg_store_row r = row(t, arms[t - 1], 1000000u * t + 5, values[t - 1]);
        int is_new = -1;
        assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
        assert_int_equal(is_new, 1);
    }
    agg_store_row again = row(2, 1, 2000009, -1.25);
    int is_new = -1;
    assert_int_equal(agg_store_add_report(s, &again, &is_new), LDPB_OK);
    assert_int_equal(is_new, 0);
    agg_store_counters c = {4, 4, 1, 6};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 6);
}

static void test_roundtrip(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    uint8_t id[AGG_STATE_ID_BYTES];
    memcpy(id, agg_store_state_id(s), sizeof id);
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters c;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_null(blob);
    write_batch(s);
    agg_store_close(s);

    s = open_ok(f);
    assert_memory_equal(agg_store_state_id(s), id, sizeof id);
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(blob, "abc", 3);
    free(blob);
    assert_int_equal(c.policy_version, 4);
    assert_int_equal(c.reports, 4);
    assert_int_equal(c.duplicates, 1);
    assert_int_equal(c.assignments, 6);
    assert_int_equal(agg_store_decision_rows(s), 6);
    uint64_t counts[K];
    assert_int_equal(agg_store_arm_counts(s, counts, K), LDPB_OK);
    assert_int_equal(counts[0], 1);
    assert_int_equal(counts[1], 2);
    assert_int_equal(counts[2], 1);
    /* A resent report, in a later transaction: a duplicate. */
    agg_store_row r = row(3, 1, 9, 0);
    int exists = 0, is_new = -1;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_has_report(s, r.id, r.id_len, &exists), LDPB_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
    assert_int_equal(is_new, 0);
    /* A report taken back inside its transaction. */
    agg_store_row gone = row(9, 0, 9, 0);
    assert_int_equal(agg_store_add_report(s, &gone, &is_new), LDPB_OK);
    assert_int_equal(is_new, 1);
    assert_int_equal(agg_store_remove_report(s, gone.id, gone.id_len), LDPB_OK);
    assert_int_equal(agg_store_has_report(s, gone.id, gone.id_len, &exists), LDPB_OK);
    assert_int_equal(exists, 0);
    agg_store_counters c2 = {4, 4, 2, 6};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abcd", 4, &c2), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);

    /* Another configuration of the same state: refused. */
    agg_store_meta m = meta_of(f, K + 1);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "arms is '3' there but '4' now"));
    s = open_ok(f);
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_int_equal(len, 4);
    free(blob);
    assert_int_equal(c.duplicates, 2);
    agg_store_close(s);
    remove_tree(f->dir);
}

/* A rolled-back transaction leaves nothing, a fresh state's meta included. */
static void test_rollback(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_row r = row(1, 0, 5, 0.5);
    int is_new = 0;
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
    assert_int_equal(agg_store_add_decision(s, &r), LDPB_OK);
    agg_store_counters c = {1, 1, 0, 1};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"x", 1, &c), LDPB_OK);
    agg_store_rollback(s);
    assert_int_equal(agg_store_decision_rows(s), 0);
    agg_store_close(s);
    /* No meta was written: another configuration is a fresh state. */
    agg_store_meta m = meta_of(f, K + 1);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    uint8_t *blob = NULL;
    size_t len = 0;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_null(blob);
    int exists = 1;
    assert_int_equal(agg_store_has_report(s, r.id, r.id_len, &exists), LDPB_OK);
    assert_int_equal(exists, 0);
    agg_store_close(s);
    remove_tree(f->dir);
}

static void test_prune(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    /* Expired before 3060 s: decisions 1 and 2 (expiring 1060 and 2060 s), limit 5; then at
     * most 3 rows: decision 3 goes too. */
    uint64_t deleted = 0;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 3000000u + 60000, 3, 5, &deleted), LDPB_OK);
    assert_int_equal(deleted, 3);
    assert_int_equal(agg_store_decision_rows(s), 3);
    agg_store_counters c = {4, 4, 1, 6};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);
    s = open_ok(f);
    assert_int_equal(agg_store_decision_rows(s), 3);
    /* The limit bounds one transaction's deletions. */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, UINT64_MAX, 0, 2, &deleted), LDPB_OK);
    assert_int_equal(deleted, 2);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 1);
    agg_store_close(s);
    remove_tree(f->dir);
}

/* The CSV of the batch above: the same text from either backend (checked against SQLite's). */
static void export_of(const fixture *f, char *out, size_t cap)
{
    char path[128], msg[AGG_STORE_ERRMAX];
    snprintf(path, sizeof path, "%s/log.csv", f->dir);
    FILE *fp = fopen(path, "w+");
    assert_non_null(fp);
    ldpb_err e = agg_store_export_csv_url(f->url[0] ? f->url : NULL, f->state, fp, msg);
    if (e)
        print_error("export: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    rewind(fp);
    size_t n = fread(out, 1, cap - 1, fp);
    out[n] = '\0';
    fclose(fp);
}

static char sqlite_csv[4096];

static void test_export(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    agg_store_close(s);
    char csv[4096];
    export_of(f, csv, sizeof csv);
    assert_non_null(strstr(csv, "assignment_id,arm,propensity,policy_version,mechanism,epsilon,"
                                "value,issued_at_ms,expires_at_ms,reported_at_ms\n"));
    assert_non_null(strstr(csv, "02020202020202020202020202020202,2,0.33333333333333331,7,"
                                "linear,1,-1.25,2000000,2060000,2000005\n"));
    if (strcmp(f->backend, "sqlite") == 0)
        memcpy(sqlite_csv, csv, sizeof csv);
    else
        assert_string_equal(csv, sqlite_csv); /* test_export ran on SQLite first */
    remove_tree(f->dir);
}

/* A database emptied under a state_dir whose state_id marker remains: refused (a new state
 * would count again every report acked before) unless new_state (--new-state). */
static void test_lost_database(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    agg_store_close(s);
    if (f->url[0]) {
        PGconn *c = PQconnectdb(f->url);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *r = PQexec(
            c, "DROP TABLE meta, experiments, commit_generation, reports, decisions, identity");
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        PQfinish(c);
    } else {
        static const char *const names[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < 3; i++) {
            char p[160];
            snprintf(p, sizeof p, "%s/%s%s", f->state, AGG_STORE_DB_NAME, names[i]);
            unlink(p);
        }
    }
    agg_store_meta m = meta_of(f, K);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, f->url[0] ? "the PostgreSQL database is missing or empty"
                                          : "aggregator.db is missing or empty"));
    m.new_state = 1;
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_non_null(strstr(agg_store_state_note(s), "a new state (--new-state)"));
    agg_store_close(s);
    remove_tree(f->dir);
}

static void test_bad_url(void **state)
{
    fixture *f = *state;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_check_url("sqlite:", msg), LDPB_OK);
    assert_int_equal(agg_store_check_url("postgresql://db.example/ldpb", msg), LDPB_OK);
    assert_int_equal(agg_store_check_url("postgres:///ldpb", msg), LDPB_OK);
    assert_int_equal(agg_store_check_url("mysql://x/y", msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "unknown scheme"));
    assert_int_equal(agg_store_check_url("sqlite:/elsewhere.db", msg), LDPB_EINVAL);
    assert_int_equal(agg_store_check_url("aggregator.db", msg), LDPB_EINVAL);
    new_state(f);
    agg_store_meta m = meta_of(f, K);
    m.store_url = "oracle://x";
    agg_store *s = NULL;
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_EINVAL);
    assert_null(s);
    remove_tree(f->dir);
}

/* ---- PostgreSQL only ------------------------------------------------------------------------ */

static PGconn *admin(const fixture *f)
{
    PGconn *c = PQconnectdb(f->url);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    return c;
}

static void sql(PGconn *c, const char *q)
{
    PGresult *r = PQexec(c, q);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        print_error("%s: %s", q, PQerrorMessage(c));
    assert_true(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
    PQclear(r);
}

static long count(PGconn *c, const char *q)
{
    PGresult *r = PQexec(c, q);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static void test_pg_unreachable(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store_meta m = meta_of(f, K);
    m.store_url = "postgresql:///nosuchdb?host=/nonexistent&connect_timeout=2";
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "the PostgreSQL store cannot be reached"));
    /* Nothing of a state was written in state_dir (main.c removes the lock file). */
    char p[160];
    snprintf(p, sizeof p, "%s/state_id", f->state);
    assert_int_not_equal(access(p, F_OK), 0);
    remove_tree(f->dir);
}

static void test_pg_wrong_schema(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    agg_store_close(s);
    PGconn *c = admin(f);
    sql(c, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
    char msg[AGG_STORE_ERRMAX];
    agg_store_meta m = meta_of(f, K);
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "schema version 99"));
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 4);
    assert_int_equal(count(c, "SELECT generation FROM commit_generation"), 1);
    PQfinish(c);
    remove_tree(f->dir);

    /* Tables of the same names but of another program: refused, nothing created. */
    new_state(f);
    c = admin(f);
    sql(c, "CREATE TABLE reports(x INTEGER)");
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "not those of an ldpb-aggregator store"));
    assert_int_equal(count(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), 1);
    PQfinish(c);
    remove_tree(f->dir);
}

/* One node per database: a second daemon with another state_dir is refused while the first
 * runs, and starts once it is gone. */
static void test_pg_one_node(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    fixture g = *f;
    snprintf(g.state, sizeof g.state, "%s/other", f->dir);
    agg_store_meta m = meta_of(&g, K);
    agg_store *t = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&t, g.state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "in use by another ldpb-aggregator"));
    agg_store_close(s);
    remove_tree(f->dir);
}

/* The server ends the daemon's connection: the transaction in flight fails (the daemon answers
 * "resend"), the next one reconnects, and nothing committed is lost. */
static void test_pg_reconnect(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    PGconn *c = admin(f);
    static const char kill_others[] =
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()";
    /* Killed between transactions: the next one goes through on a new connection. */
    assert_int_equal(count(c, kill_others), 1);
    agg_store_row r = row(20, 0, 5, 1);
    int is_new = 0;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
    assert_int_equal(is_new, 1);
    agg_store_counters ct = {5, 5, 1, 6};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc5", 4, &ct), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    /* Killed inside a transaction: it fails and is rolled back, the next one succeeds. */
    agg_store_row r2 = row(21, 1, 6, 1);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(count(c, kill_others), 1);
    ldpb_err e = agg_store_add_report(s, &r2, &is_new);
    if (!e)
        e = agg_store_commit(s);
    assert_int_equal(e, LDPB_EIO);
    agg_store_rollback(s);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_add_report(s, &r2, &is_new), LDPB_OK);
    assert_int_equal(is_new, 1);
    agg_store_counters c6 = {6, 6, 1, 6};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc6", 4, &c6), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);
    s = open_ok(f);
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters got;
    assert_int_equal(agg_store_load(s, &blob, &len, &got), LDPB_OK);
    free(blob);
    assert_int_equal(got.reports, 6);
    agg_store_close(s);
    PQfinish(c);
    remove_tree(f->dir);
}

/* A commit hook that ends the store's session from the server just before its COMMIT: the
 * COMMIT's answer is lost with the connection. */
static PGconn *killer;

static int kill_before_commit(void *ctx)
{
    (void)ctx;
    PGresult *r = PQexec(killer, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                                 " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    PQclear(r);
    return ok ? 0 : 1;
}

static ldpb_err one_report(agg_store *s, uint8_t tag, const agg_store_counters *c)
{
    agg_store_row r = row(tag, 0, 5, 1);
    int is_new = 0;
    ldpb_err e = agg_store_begin(s);
    if (!e)
        e = agg_store_add_report(s, &r, &is_new);
    if (!e)
        e = agg_store_put_state(s, (const uint8_t *)"abcd", 4, c);
    if (!e)
        e = agg_store_commit(s);
    if (e)
        agg_store_rollback(s);
    return e;
}

/* A COMMIT in doubt: the connection is lost during it. Where it did not happen (the state's
 * generation is the old one) the next transaction goes on; where it did (simulated by raising
 * the generation as that COMMIT would have), every transaction fails until a restart, which
 * loads the state as the database has it. */
static void test_pg_commit_in_doubt(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    killer = admin(f);
    agg_store_set_commit_hook(s, kill_before_commit, NULL);
    agg_store_counters c5 = {5, 5, 1, 6};
    assert_int_equal(one_report(s, 30, &c5), LDPB_EIO);
    agg_store_set_commit_hook(s, NULL, NULL);
    /* The server had not received the COMMIT: not committed, and the store goes on. */
    assert_int_equal(one_report(s, 30, &c5), LDPB_OK);
    assert_int_equal(count(killer, "SELECT count(*) FROM reports"), 5);

    agg_store_set_commit_hook(s, kill_before_commit, NULL);
    agg_store_counters c6 = {6, 6, 1, 6};
    assert_int_equal(one_report(s, 31, &c6), LDPB_EIO);
    agg_store_set_commit_hook(s, NULL, NULL);
    sql(killer, "UPDATE commit_generation SET generation = generation + 1");
    assert_int_equal(agg_store_begin(s), LDPB_EIO);
    assert_non_null(strstr(agg_store_errmsg(s), "went through: restart ldpb-aggregator"));
    assert_int_equal(agg_store_begin(s), LDPB_EIO); /* and stays so */
    agg_store_close(s);
    s = open_ok(f);
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters got;
    assert_int_equal(agg_store_load(s, &blob, &len, &got), LDPB_OK);
    free(blob);
    assert_int_equal(got.reports, 5);
    assert_int_equal(one_report(s, 31, &c6), LDPB_OK);
    agg_store_close(s);
    PQfinish(killer);
    remove_tree(f->dir);
}

static void test_pg_backup(void **state)
{
    fixture *f = *state;
    char msg[AGG_STORE_ERRMAX], dest[128];
    snprintf(dest, sizeof dest, "/tmp/ldpb-test-store-backup-%d", (int)getpid());
    assert_int_equal(agg_store_backup_check(f->url, msg), LDPB_ENOTSUP);
    assert_non_null(strstr(msg, "pg_dump"));
    assert_int_equal(agg_store_backup_url(f->url, "/nonexistent", dest, msg), LDPB_ENOTSUP);
    assert_non_null(strstr(msg, "pg_dump"));
    assert_int_equal(agg_store_backup_check(NULL, msg), LDPB_OK);
    assert_int_not_equal(access(dest, F_OK), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_prune),     cmocka_unit_test(test_export),
        cmocka_unit_test(test_bad_url),   cmocka_unit_test(test_lost_database),
    };
    const struct CMUnitTest pg_only[] = {
        cmocka_unit_test(test_pg_unreachable), cmocka_unit_test(test_pg_wrong_schema),
        cmocka_unit_test(test_pg_one_node),    cmocka_unit_test(test_pg_reconnect),
        cmocka_unit_test(test_pg_backup),      cmocka_unit_test(test_pg_commit_in_doubt),
    };
    int failed = cmocka_run_group_tests_name("store: sqlite", common, setup_sqlite, NULL);
    if (argc > 1 && strcmp(argv[1], "postgres") == 0) {
        if (!getenv("LDPB_TEST_PG_STATE")) {
            fprintf(stderr, "test_store postgres: no throwaway PostgreSQL (LDPB_TEST_PG_STATE); "
                            "run through ctest, whose fixture starts one\n");
            return 1;
        }
        failed += cmocka_run_group_tests_name("store: postgresql", common, setup_pg, NULL);
        failed += cmocka_run_group_tests_name("store: postgresql only", pg_only, setup_pg, NULL);
    }
    return failed;
}
