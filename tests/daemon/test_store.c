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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

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
    /* No meta was written: another configuration is a fresh state. PostgreSQL writes the meta
     * of a fresh state with the open (the next node to open finds it), not with the first
     * transaction: there, the state is the first configuration's. */
    agg_store_meta m = meta_of(f, K + 1);
    char msg[AGG_STORE_ERRMAX];
    if (f->url[0]) {
        assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
        remove_tree(f->dir);
        return;
    }
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

/* Retention skips its query while no decision can be due (the store's retention floor), but never
 * a decision that is: one inserted below the floor, or one whose deletion a rollback took back.
 * `shards`: the SQLite store with that many row shards (0: none). */
static void prune_floor(fixture *f, unsigned shards)
{
    new_state(f);
    agg_store_meta m = meta_of(f, K);
    m.row_shards = shards;
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    write_batch(s); /* decisions 1..6, retained until 1060 .. 6060 s */
    uint64_t deleted = 0;
    agg_store_counters c = {4, 4, 1, 6};
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 2060000u + 1, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 2);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    /* Nothing more is due before 3060 s; then a decision retained until 0.5 s comes in. */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 3000000u, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 0);
    agg_store_row d = row(7, 0, 1000, 0);
    d.retain_until_ms = 500;
    assert_int_equal(agg_store_add_decision(s, &d), LDPB_OK);
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc", 3, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 1000, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 4);
    /* A prune that a rollback takes back: its decisions are due again. */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 5060000u + 1, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 3);
    agg_store_rollback(s);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 5060000u + 1, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 3);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    /* Decisions of a batch, as the committer writes them, lower the floor too; a prune stopped
     * by its limit leaves the rest due. */
    agg_store_batch_row b[2] = {{AGG_BATCH_DECISION, row(8, 0, 1000, 0), -1},
                                {AGG_BATCH_DECISION, row(9, 0, 1000, 0), -1}};
    b[0].row.retain_until_ms = 600;
    b[1].row.retain_until_ms = 700;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_write_batch(s, b, 2), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 1000, 100, 1, &deleted), LDPB_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(agg_store_prune_decisions(s, 1000, 100, 1, &deleted), LDPB_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(agg_store_prune_decisions(s, 1000, 100, 1, &deleted), LDPB_OK);
    assert_int_equal(deleted, 0);
    assert_int_equal(agg_store_prune_decisions(s, UINT64_MAX, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 1); /* decision 6 */
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 0);
    agg_store_close(s);
    remove_tree(f->dir);
}

static void test_prune_floor(void **state)
{
    prune_floor(*state, 0);
}

static void test_prune_floor_shards(void **state)
{
    prune_floor(*state, 4);
}

static agg_store_batch_row batch_row(agg_batch_kind kind, uint8_t tag, uint32_t arm)
{
    agg_store_batch_row b = {kind, row(tag, arm, 7000000u + tag, 0.5), -1};
    return b;
}

static int stored(agg_store *s, uint8_t tag)
{
    agg_store_row r = row(tag, 0, 0, 0);
    int exists = -1;
    assert_int_equal(agg_store_has_report(s, r.id, r.id_len, &exists), LDPB_OK);
    return exists;
}

/* agg_store_write_batch: each row's answer is the one its own call gives, a row seeing the rows
 * before it (PostgreSQL: one pipeline; SQLite: row by row). */
static void test_batch(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s); /* decisions 1..6, reports 1..4 */
    agg_store_batch_row rows[] = {
        batch_row(AGG_BATCH_DECISION, 7, 0),  /* 1: new */
        batch_row(AGG_BATCH_DECISION, 1, 1),  /* 0: logged before */
        batch_row(AGG_BATCH_REPORT, 10, 2),   /* 1: new */
        batch_row(AGG_BATCH_REPORT, 10, 2),   /* 0: its copy in this batch came first */
        batch_row(AGG_BATCH_REPORT, 3, 1),    /* 0: in the database */
        batch_row(AGG_BATCH_LOOKUP, 4, 2),    /* 1: an expired report counted before */
        batch_row(AGG_BATCH_LOOKUP, 11, 0),   /* 0: an expired report never counted */
        batch_row(AGG_BATCH_LOOKUP, 10, 2),   /* 1: counted earlier in this batch */
        batch_row(AGG_BATCH_LOOKUP, 13, 0),   /* 0: its report comes after it */
        batch_row(AGG_BATCH_REPORT, 13, 0),   /* 1 */
        batch_row(AGG_BATCH_DECISION, 10, 2), /* 1: the decisions are another table */
    };
    static const int want[] = {1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1};
    size_t n = sizeof rows / sizeof rows[0];
    rows[3].row.value = -7; /* the duplicate's value is not the one stored */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_write_batch(s, rows, n), LDPB_OK);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].found != want[i])
            print_error("row %zu: found %d, want %d\n", i, rows[i].found, want[i]);
        assert_int_equal(rows[i].found, want[i]);
    }
    assert_int_equal(agg_store_decision_rows(s), 8);
    assert_int_equal(agg_store_write_batch(s, rows, 0), LDPB_OK); /* nothing: no round trip */
    agg_store_counters c = {6, 6, 2, 8};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abcd", 4, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);

    s = open_ok(f);
    assert_int_equal(agg_store_decision_rows(s), 8);
    assert_int_equal(stored(s, 10), 1);
    assert_int_equal(stored(s, 13), 1);
    assert_int_equal(stored(s, 11), 0);
    uint64_t counts[K];
    assert_int_equal(agg_store_arm_counts(s, counts, K), LDPB_OK);
    assert_int_equal(counts[0], 2); /* 1, 13 */
    assert_int_equal(counts[1], 2); /* 2, 3 */
    assert_int_equal(counts[2], 2); /* 4, 10 */
    /* A batch rolled back leaves nothing. */
    agg_store_batch_row more[] = {
        batch_row(AGG_BATCH_DECISION, 20, 0),
        batch_row(AGG_BATCH_REPORT, 20, 0),
    };
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_write_batch(s, more, 2), LDPB_OK);
    assert_int_equal(more[0].found + more[1].found, 2);
    assert_int_equal(agg_store_decision_rows(s), 9);
    agg_store_rollback(s);
    assert_int_equal(agg_store_decision_rows(s), 8);
    assert_int_equal(stored(s, 20), 0);
    /* A state or partial of no experiment: none written (PostgreSQL: one pipeline each) */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    for (int exclusive = 0; exclusive <= 2; exclusive++)
        assert_int_equal(agg_store_put_exp_partial(s, 999, (const uint8_t *)"z", 1, &c, exclusive),
                         LDPB_ENOEXPERIMENT);
    agg_store_rollback(s);
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
            c, "DROP TABLE meta, experiments, commit_generation, reports, decisions, identity,"
               " nodes, exp_node_state, node_key");
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
    /* the open (writing `default`) and the batch */
    assert_int_equal(count(c, "SELECT generation FROM nodes"), 2);
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

/* One process per node name and database: a second daemon of the same name with another
 * state_dir is refused while the first runs. */
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

/* A node of the database `f` with another state directory, name and key. */
static ldpb_err open_node(const fixture *f, const char *sub, const char *name, uint8_t key_byte,
                          agg_store **out, char *msg)
{
    static uint8_t keys[256][32];
    memset(keys[key_byte], key_byte, sizeof keys[key_byte]);
    fixture g = *f;
    snprintf(g.state, sizeof g.state, "%s/%s", f->dir, sub);
    agg_store_meta m = meta_of(&g, K);
    m.node_name = name;
    m.public_key = keys[key_byte];
    m.public_key_len = sizeof keys[key_byte];
    return agg_store_open(out, g.state, &m, msg);
}

/* One report `tag` and this node's partial of `default` (`n` reports) in one transaction: the
 * report's is_new, or -1 if the transaction failed. */
static int node_report(agg_store *s, uint8_t tag, uint64_t n)
{
    agg_store_row r = row(tag, 1, 5, 1);
    int is_new = -1;
    agg_store_counters c = {n, n, 0, 0};
    if (agg_store_begin(s) || agg_store_add_report(s, &r, &is_new) ||
        agg_store_put_exp_partial(s, 0, (const uint8_t *)"p", 1, &c, 0) || agg_store_commit(s)) {
        agg_store_rollback(s);
        return -1;
    }
    return is_new;
}

typedef struct racer {
    agg_store *s;
    uint8_t tag;
    uint64_t n;
    atomic_int done;
    int is_new;
} racer;

static void *race_main(void *arg)
{
    racer *r = arg;
    r->is_new = node_report(r->s, r->tag, r->n);
    atomic_store(&r->done, 1);
    return NULL;
}

/* Several nodes on one database: distinct names open together and share the identity; a report
 * counted by one is a duplicate on another, also when both insert it at once (the second waits
 * for the first's COMMIT); the experiments row is the first writer's and the other's partial is
 * its own row; each reads the other's partial; a statistic that does not add is refused to the
 * second node; another key is refused. */
static void test_pg_nodes(void **state)
{
    fixture *f = *state;
    new_state(f);
    char msg[AGG_STORE_ERRMAX];
    agg_store *a = NULL, *b = NULL, *x = NULL;
    assert_int_equal(open_node(f, "a", "node-a", 1, &a, msg), LDPB_OK);
    write_batch(a); /* reports 1..4, the state "abc", 4 reports: node-a's */
    assert_int_equal(open_node(f, "x", "node-a", 1, &x, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "node name 'node-a' is in use by another ldpb-aggregator"));
    assert_int_equal(open_node(f, "x", "node-x", 2, &x, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "uses the same key file"));
    assert_int_equal(open_node(f, "b", "node-b", 1, &b, msg), LDPB_OK);
    assert_memory_equal(agg_store_state_id(a), agg_store_state_id(b), AGG_STATE_ID_BYTES);
    assert_string_equal(agg_store_node_name(b), "node-b");

    assert_int_equal(node_report(b, 2, 0), 0); /* acked by node-a: a duplicate here */
    assert_int_equal(node_report(b, 7, 1), 1);
    PGconn *c = admin(f);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 5);
    assert_int_equal(count(c, "SELECT count(*) FROM experiments WHERE node = 'node-a'"), 1);
    assert_int_equal(count(c, "SELECT reports FROM exp_node_state WHERE node = 'node-b'"), 1);
    assert_int_equal(count(c, "SELECT count(*) FROM nodes"), 2);

    /* Both insert report 9 at once: node-b's transaction is open with it when node-a's insert
     * comes; node-a's waits, and finds it counted once node-b commits. */
    agg_store_row r9 = row(9, 1, 5, 1);
    int is_new = -1;
    agg_store_counters c2 = {2, 2, 0, 0};
    assert_int_equal(agg_store_begin(b), LDPB_OK);
    assert_int_equal(agg_store_add_report(b, &r9, &is_new), LDPB_OK);
    assert_int_equal(is_new, 1);
    racer ra = {.s = a, .tag = 9, .n = 4};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, race_main, &ra), 0);
    usleep(300 * 1000);
    assert_int_equal(atomic_load(&ra.done), 0); /* waiting on node-b's row */
    assert_int_equal(agg_store_put_exp_partial(b, 0, (const uint8_t *)"q", 1, &c2, 0), LDPB_OK);
    assert_int_equal(agg_store_commit(b), LDPB_OK);
    pthread_join(th, NULL);
    assert_int_equal(ra.is_new, 0);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 6);

    /* Each node reads the other's partial. */
    agg_store_partial *pv = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_partials(a, &pv, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_string_equal(pv[0].node, "node-b");
    assert_int_equal(pv[0].reports, 2);
    assert_memory_equal(pv[0].state, "q", 1);
    assert_true(pv[0].age_ms < 60000);
    agg_store_partials_free(pv, n);
    assert_int_equal(agg_store_partials(b, &pv, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_string_equal(pv[0].node, "node-a");
    assert_int_equal(pv[0].reports, 4);
    agg_store_partials_free(pv, n);

    /* What node-b restores: its own partial; the sums over nodes match the reports. */
    agg_store_exp *ev = NULL;
    assert_int_equal(agg_store_experiments(b, &ev, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ev[0].counters.reports, 2);
    assert_memory_equal(ev[0].state, "q", 1);
    assert_string_equal(ev[0].owner, "node-a");
    assert_int_equal(ev[0].others, 1);
    agg_store_experiments_free(ev, n);
    assert_int_equal(agg_store_experiments(a, &ev, &n), LDPB_OK);
    assert_int_equal(ev[0].counters.reports, 4);
    assert_memory_equal(ev[0].state, "p", 1); /* node-a's, last written by the race */
    assert_string_equal(ev[0].owner, "node-a");
    agg_store_experiments_free(ev, n);

    /* A state that does not add: node-b may not write node-a's row. */
    agg_store_counters c3 = {3, 3, 0, 0};
    assert_int_equal(agg_store_begin(b), LDPB_OK);
    assert_int_equal(agg_store_put_exp_state(b, 0, (const uint8_t *)"z", 1, &c3), LDPB_ESTATE);
    assert_non_null(strstr(agg_store_errmsg(b), "node 'node-a''s"));
    agg_store_rollback(b);

    /* A node that takes the experiment over (a sequencer's takeover) writes the row anyway. */
    agg_store_counters c4 = {4, 4, 0, 0};
    assert_int_equal(agg_store_begin(b), LDPB_OK);
    assert_int_equal(agg_store_take_exp_state(b, 0, (const uint8_t *)"t", 1, &c4), LDPB_OK);
    assert_int_equal(agg_store_commit(b), LDPB_OK);
    assert_int_equal(count(c, "SELECT count(*) FROM experiments WHERE node = 'node-b'"), 1);
    assert_int_equal(agg_store_experiments(b, &ev, &n), LDPB_OK);
    assert_memory_equal(ev[0].state, "t", 1);
    assert_string_equal(ev[0].owner, "node-b");
    agg_store_experiments_free(ev, n);

    /* A count that does not match the reports is still found, across the nodes. */
    sql(c, "UPDATE exp_node_state SET reports = 3, policy_version = 3");
    assert_int_equal(agg_store_experiments(a, &ev, &n), LDPB_ECORRUPT);
    PQfinish(c);
    agg_store_close(a);
    agg_store_close(b);
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

/* The batch of test_pg_batch_fails: a decision and three reports, the second of arm 2. */
static ldpb_err fail_batch(agg_store *s, agg_store_batch_row *rows)
{
    rows[0] = batch_row(AGG_BATCH_DECISION, 40, 0);
    rows[1] = batch_row(AGG_BATCH_REPORT, 41, 0);
    rows[2] = batch_row(AGG_BATCH_REPORT, 42, 2);
    rows[3] = batch_row(AGG_BATCH_REPORT, 43, 1);
    return agg_store_write_batch(s, rows, 4);
}

/* A batch that fails mid-way (one statement refused, or the server ending the session) writes
 * nothing; a refused statement is an I/O error on a connection that serves on (out of pipeline
 * mode), a session ended is the database out of reach (the daemon answers "busy, resend"), and
 * the next transaction takes a new connection. */
static void test_pg_batch_fails(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    PGconn *c = admin(f);
    /* NOT VALID: the rows there (one of arm 2) are not checked, new ones are */
    sql(c, "ALTER TABLE reports ADD CONSTRAINT test_no_arm_2 CHECK (arm <> 2) NOT VALID");
    agg_store_batch_row rows[4];
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(fail_batch(s, rows), LDPB_EIO);
    assert_non_null(strstr(agg_store_errmsg(s), "inserting a report"));
    assert_non_null(strstr(agg_store_errmsg(s), "test_no_arm_2"));
    assert_int_equal(agg_store_unavailable(s), 0);
    agg_store_rollback(s);
    assert_int_equal(agg_store_decision_rows(s), 6);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 4);
    assert_int_equal(count(c, "SELECT count(*) FROM decisions"), 6);
    /* The same connection serves statements outside a pipeline */
    agg_store_partial *pv = NULL;
    size_t np = 0;
    assert_int_equal(agg_store_partials(s, &pv, &np), LDPB_OK);
    agg_store_partials_free(pv, np);
    assert_int_equal(stored(s, 41), 0);
    sql(c, "ALTER TABLE reports DROP CONSTRAINT test_no_arm_2");

    /* The session ended by the server inside the transaction */
    static const char kill_others[] =
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()";
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(count(c, kill_others), 1);
    assert_int_equal(fail_batch(s, rows), LDPB_EIO);
    assert_int_equal(agg_store_unavailable(s), 1);
    agg_store_rollback(s);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 4);

    /* The next transaction: a new connection, the whole batch */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_unavailable(s), 0);
    assert_int_equal(fail_batch(s, rows), LDPB_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(rows[i].found, 1);
    agg_store_counters ct = {7, 7, 1, 7};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"abc7", 4, &ct), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 7);
    assert_int_equal(count(c, "SELECT count(*) FROM decisions"), 7);
    agg_store_close(s);
    PQfinish(c);
    remove_tree(f->dir);
}

typedef struct state_writer {
    agg_store *s;
    ldpb_err err;
} state_writer;

static void *write_state_main(void *arg)
{
    state_writer *w = arg;
    agg_store_counters ct = {7, 7, 1, 7};
    w->err = agg_store_put_state(w->s, (const uint8_t *)"abc7", 4, &ct);
    return NULL;
}

/* Two transactions waiting on each other (as two nodes' batches can): PostgreSQL ends one with
 * SQLSTATE 40P01. The store's, waiting first, is the one its deadlock check ends (the check runs
 * deadlock_timeout after a wait begins): agg_store_conflict says so and the database is not
 * called out of reach, so the committer runs the batch again, which then succeeds. */
static void test_pg_deadlock(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    PGconn *c = admin(f);
    agg_store_batch_row rows[4];
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(fail_batch(s, rows), LDPB_OK); /* holds the new rows 41..43 */
    sql(c, "BEGIN");
    sql(c, "UPDATE experiments SET updated_at_ms = updated_at_ms"); /* holds the state's row */
    state_writer w = {s, LDPB_OK};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, write_state_main, &w), 0);
    static const char waiting[] = "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                                  " current_database() AND wait_event_type = 'Lock'";
    long n = 0;
    for (int i = 0; i < 2000 && (n = count(c, waiting)) == 0; i++)
        usleep(10000);
    assert_int_equal(n, 1); /* the store's state write waits on this transaction */
    /* ... and this one now on the store's report 41 (0x29): a cycle */
    assert_int_equal(
        PQsendQuery(c, "INSERT INTO reports(assignment_id, experiment, arm, mechanism, epsilon,"
                       " propensity, policy_version, value, expires_at_ms, reported_at_ms)"
                       " SELECT '\\x29292929292929292929292929292929'::bytea, id, 0, 'linear',"
                       " 1, 0.5, 1, 0, 0, 0 FROM experiments LIMIT 1"),
        1);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(w.err, LDPB_EIO);
    assert_non_null(strstr(agg_store_errmsg(s), "deadlock"));
    assert_int_equal(agg_store_conflict(s), 1);
    assert_int_equal(agg_store_unavailable(s), 0);
    agg_store_rollback(s);
    PGresult *r;
    while ((r = PQgetResult(c)) != NULL) { /* its INSERT, once the store's rows are gone */
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
    }
    sql(c, "ROLLBACK");

    /* Run again, the batch goes through */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_conflict(s), 0);
    assert_int_equal(fail_batch(s, rows), LDPB_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(rows[i].found, 1);
    write_state_main(&w);
    assert_int_equal(w.err, LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(count(c, "SELECT count(*) FROM reports"), 7);
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
    sql(killer, "UPDATE nodes SET generation = generation + 1");
    assert_int_equal(agg_store_begin(s), LDPB_EIO);
    assert_non_null(strstr(agg_store_errmsg(s), "went through: the states must be reloaded"));
    assert_int_equal(agg_store_needs_reload(s), 1);
    assert_int_equal(agg_store_begin(s), LDPB_EIO); /* and stays so */
    /* until the caller has reloaded its states (as a restart does) */
    agg_store_exp *ev = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_experiments(s, &ev, &n), LDPB_OK);
    agg_store_experiments_free(ev, n);
    agg_store_reloaded(s);
    assert_int_equal(agg_store_needs_reload(s), 0);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_rollback(s);
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

/* ---- schema version 2: experiments, and the migration from version 1 ------------------------ */

/* A query's first column of its first row as an integer, on the fixture's database. */
static long db_long(const fixture *f, const char *q)
{
    long n = -1;
    if (f->url[0]) {
        PGconn *c = PQconnectdb(f->url);
        assert_int_equal(PQstatus(c), CONNECTION_OK);
        PGresult *r = PQexec(c, q);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            print_error("%s: %s", q, PQerrorMessage(c));
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        n = PQntuples(r) ? atol(PQgetvalue(r, 0, 0)) : -1;
        PQclear(r);
        PQfinish(c);
        return n;
    }
    char path[160];
    snprintf(path, sizeof path, "%s/%s", f->state, AGG_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        print_error("%s: %s", q, sqlite3_errmsg(db));
    assert_non_null(st);
    int rc = sqlite3_step(st);
    assert_true(rc == SQLITE_ROW || rc == SQLITE_DONE);
    if (rc == SQLITE_ROW)
        n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Runs a statement without rows on the fixture's database. */
static void db_exec(const fixture *f, const char *q)
{
    if (f->url[0]) {
        PGconn *c = admin(f);
        sql(c, q);
        PQfinish(c);
        return;
    }
    char path[160];
    snprintf(path, sizeof path, "%s/%s", f->state, AGG_STORE_DB_NAME);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* Whether the fixture's database has table `name`. */
static int has_table(const fixture *f, const char *name)
{
    char q[160];
    if (f->url[0])
        snprintf(q, sizeof q, "SELECT (to_regclass('%s') IS NOT NULL)::int", name);
    else
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'", name);
    return db_long(f, q) == 1;
}

/* The tables of version 1 exactly as the code of version 1 created them (store_sqlite.c and
 * store_pg.c before schema version 2), for a state that code wrote. */
static const char v1_sqlite_ddl[] =
    "CREATE TABLE IF NOT EXISTS meta("
    " key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS state("
    " id INTEGER PRIMARY KEY CHECK (id = 1), policy_state BLOB NOT NULL,"
    " policy_version INTEGER NOT NULL, reports INTEGER NOT NULL, duplicates INTEGER NOT NULL,"
    " assignments INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BLOB PRIMARY KEY, arm INTEGER NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon REAL NOT NULL, propensity REAL NOT NULL, policy_version INTEGER NOT NULL,"
    " value REAL NOT NULL, expires_at_ms INTEGER NOT NULL, reported_at_ms INTEGER NOT NULL)"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BLOB PRIMARY KEY, arm INTEGER NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon REAL NOT NULL, propensity REAL NOT NULL, policy_version INTEGER NOT NULL,"
    " issued_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS decisions_by_expiry ON decisions(expires_at_ms);"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BLOB NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms INTEGER NOT NULL);";
static const char v1_pg_ddl[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS state("
    " id INTEGER PRIMARY KEY CHECK (id = 1), policy_state BYTEA NOT NULL,"
    " policy_version BIGINT NOT NULL, reports BIGINT NOT NULL, duplicates BIGINT NOT NULL,"
    " assignments BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL,"
    " generation BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BYTEA PRIMARY KEY, arm BIGINT NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon DOUBLE PRECISION NOT NULL, propensity DOUBLE PRECISION NOT NULL,"
    " policy_version BIGINT NOT NULL, value DOUBLE PRECISION NOT NULL,"
    " expires_at_ms BIGINT NOT NULL, reported_at_ms BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BYTEA PRIMARY KEY, arm BIGINT NOT NULL, mechanism TEXT NOT NULL,"
    " epsilon DOUBLE PRECISION NOT NULL, propensity DOUBLE PRECISION NOT NULL,"
    " policy_version BIGINT NOT NULL, issued_at_ms BIGINT NOT NULL,"
    " expires_at_ms BIGINT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS decisions_by_expiry ON decisions(expires_at_ms);"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BYTEA NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms BIGINT NOT NULL);";

/* The 16-byte id of `tag` as a literal of the backend. */
static void id_lit(const fixture *f, uint8_t tag, char *out, size_t cap)
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", tag);
    snprintf(out, cap, f->url[0] ? "'\\x%s'::bytea" : "X'%s'", hex);
}

/* The rows write_batch commits, as version 1 held them: meta of meta_of(f, K) as the code of
 * version 1 wrote it (every parameter row, 0 for those ldp-ts-b does not read), the state row,
 * decisions 1..6 and reports 1..4, and the identity 0x5a... */
static void v1_rows(const fixture *f, char *sql, size_t cap)
{
    size_t n = (size_t)snprintf(
        sql, cap,
        "INSERT INTO meta(key, value) VALUES ('schema_version', '1'), ('policy', 'ldp-ts-b'),"
        " ('mode', 'local'), ('arms', '3'), ('horizon', '0'), ('epsilon', '1'),"
        " ('mechanism', 'linear'), ('kappa', '0'), ('beta', '0'), ('gamma', '0'),"
        " ('eps_arm', '0'), ('tau', '0'), ('threshold', '0');"
        "INSERT INTO state VALUES (1, %s, 4, 4, 1, 6, 123%s);",
        f->url[0] ? "'\\x616263'::bytea" : "X'616263'", f->url[0] ? ", 1" : "");
    char id[64];
    for (uint8_t t = 1; t <= 6; t++) {
        id_lit(f, t, id, sizeof id);
        n += (size_t)snprintf(sql + n, cap - n,
                              "INSERT INTO decisions VALUES (%s, %u, 'linear', 1, "
                              "0.33333333333333331, 7, %u, %u);",
                              id, t % K, 1000000u * t, 1000000u * t + 60000);
    }
    static const unsigned arms[] = {0, 1, 1, 2};
    static const char *const values[] = {"0.1", "-1.25", "3e-300", "0.30000000000000004"};
    for (uint8_t t = 1; t <= 4; t++) {
        id_lit(f, t, id, sizeof id);
        n += (size_t)snprintf(sql + n, cap - n,
                              "INSERT INTO reports VALUES (%s, %u, 'linear', 1, "
                              "0.33333333333333331, 7, %s, %u, %u);",
                              id, arms[t - 1], values[t - 1], 1000000u * t + 60005,
                              1000000u * t + 5);
    }
    id_lit(f, 0x5a, id, sizeof id);
    snprintf(sql + n, cap - n, "INSERT INTO identity VALUES (1, %s, 0, 456);", id);
}

/* A state of version 1 in f->state, with its identity marker, as a daemon of version 1 left it
 * (WAL mode on SQLite, as that code set). */
static void make_v1(fixture *f, int with_rows)
{
    new_state(f);
    assert_int_equal(mkdir(f->state, 0700), 0);
    char rows[8192] = "";
    if (with_rows)
        v1_rows(f, rows, sizeof rows);
    if (f->url[0]) {
        PGconn *c = admin(f);
        sql(c, v1_pg_ddl);
        if (rows[0])
            sql(c, rows);
        PQfinish(c);
    } else {
        char path[160];
        snprintf(path, sizeof path, "%s/%s", f->state, AGG_STORE_DB_NAME);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, v1_sqlite_ddl, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, rows, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_close(db), SQLITE_OK);
    }
    if (!with_rows)
        return; /* a first start of version 1 that committed nothing: no identity either */
    agg_state_ident ident = {.write_marker = 1};
    memset(ident.id, 0x5a, sizeof ident.id);
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_state_id_record(f->state, &ident, msg, sizeof msg), LDPB_OK);
}

/* Still version 1, untouched by a refused or failed migration. */
static void assert_v1(const fixture *f)
{
    assert_true(has_table(f, "state"));
    assert_false(has_table(f, "experiments"));
    assert_int_equal(db_long(f, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
    assert_int_equal(db_long(f, "SELECT reports FROM state"), 4);
    assert_int_equal(db_long(f, "SELECT count(*) FROM reports"), 4);
    assert_int_equal(db_long(f, "SELECT count(*) FROM decisions"), 6);
}

static int fail_hook(void *ctx)
{
    (void)ctx;
    return 1;
}

/* A crash in the middle of the migration: every write of it done, the COMMIT not. */
static int crash_hook(void *ctx)
{
    (void)ctx;
    _exit(0);
}

static void crash_in_migration(const fixture *f)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        agg_store_meta m = meta_of(f, K);
        m.open_hook = crash_hook;
        agg_store *s = NULL;
        char msg[AGG_STORE_ERRMAX];
        ldpb_err e = agg_store_open(&s, f->state, &m, msg);
        fprintf(stderr, "crash_in_migration: the open returned %s: %s\n", ldpb_errname(e), msg);
        _exit(1); /* the hook did not run */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void check_migrated(const fixture *f, agg_store *s, const char *settings)
{
    uint8_t id[AGG_STATE_ID_BYTES];
    memset(id, 0x5a, sizeof id);
    assert_memory_equal(agg_store_state_id(s), id, sizeof id);
    assert_int_equal(agg_store_legacy_tokens(s), 0);
    assert_int_equal(agg_store_default_experiment(s), 1);
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters c;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(blob, "abc", 3);
    free(blob);
    assert_int_equal(c.policy_version, 4);
    assert_int_equal(c.reports, 4);
    assert_int_equal(c.duplicates, 1);
    assert_int_equal(c.assignments, 6);
    uint64_t counts[K];
    assert_int_equal(agg_store_arm_counts(s, counts, K), LDPB_OK);
    assert_int_equal(counts[0], 1);
    assert_int_equal(counts[1], 2);
    assert_int_equal(counts[2], 1);
    assert_int_equal(agg_store_decision_rows(s), 6);
    agg_store_exp *v = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].id, 1);
    assert_string_equal(v[0].name, "default");
    assert_string_equal(v[0].settings, settings);
    assert_int_equal(v[0].from_config, 1);
    assert_int_equal(v[0].running, 1);
    assert_int_equal(v[0].state_len, 3);
    assert_int_equal(v[0].counters.duplicates, 1);
    agg_store_experiments_free(v, n);
    assert_false(has_table(f, "state"));
    assert_int_equal(db_long(f, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     AGG_STORE_SCHEMA_VERSION);
    assert_int_equal(db_long(f, "SELECT count(*) FROM decisions WHERE experiment = 1"), 6);
    assert_int_equal(db_long(f, "SELECT count(*) FROM reports WHERE experiment = 1"), 4);
    /* default_retention_ms (1000) after each expiry */
    assert_int_equal(db_long(f, "SELECT min(retain_until_ms - expires_at_ms) FROM decisions"),
                     1000);
    assert_int_equal(db_long(f, "SELECT max(retain_until_ms - expires_at_ms) FROM decisions"),
                     1000);
}

/* A state of version 1 migrates at open into the experiment `default`, in one transaction: a
 * refused start (another default, or none), a failed open and a crash before the COMMIT leave
 * version 1 as it was; the migrated state exports the same propensity log. */
static void test_migrate_v1(void **state)
{
    fixture *f = *state;
    make_v1(f, 1);
    char before[4096], msg[AGG_STORE_ERRMAX];
    export_of(f, before, sizeof before); /* version 1's tables read as `default` */
    if (sqlite_csv[0])
        assert_string_equal(before, sqlite_csv); /* what write_batch exports on version 2 */
    /* the export with the experiment column reads version 1 as `default` too */
    char path[128];
    snprintf(path, sizeof path, "%s/v1.csv", f->dir);
    FILE *fp = fopen(path, "w+");
    assert_non_null(fp);
    assert_int_equal(
        agg_store_export_csv_exp(f->url[0] ? f->url : NULL, f->state, "default", fp, msg), LDPB_OK);
    assert_int_equal(agg_store_export_csv_exp(f->url[0] ? f->url : NULL, f->state, "a", fp, msg),
                     LDPB_ENOEXPERIMENT);
    rewind(fp);
    char line[512];
    int rows = 0;
    assert_non_null(fgets(line, sizeof line, fp));
    assert_non_null(strstr(line, ",reported_at_ms,experiment\n"));
    while (fgets(line, sizeof line, fp)) {
        rows++;
        assert_non_null(strstr(line, ",default\n"));
    }
    assert_int_equal(rows, 6);
    fclose(fp);
    agg_store *s = NULL;
    agg_store_meta m = meta_of(f, K + 1);
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "arms is '3' there but '4' now"));
    assert_v1(f);
    m = meta_of(f, K);
    m.policy = NULL;
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "declares no 'default'"));
    assert_v1(f);
    m = meta_of(f, K);
    m.open_hook = fail_hook;
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_EIO);
    assert_non_null(strstr(msg, "failed by the test hook"));
    assert_null(s);
    assert_v1(f);
    crash_in_migration(f);
    assert_v1(f);

    m = meta_of(f, K);
    m.default_settings = "policy = ldp-ts-b\n";
    m.default_retention_ms = 1000;
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    check_migrated(f, s, "policy = ldp-ts-b\n");
    agg_store_close(s);
    char after[4096];
    export_of(f, after, sizeof after);
    assert_string_equal(after, before);
    s = open_ok(f); /* version 2 now: opens as it is, the settings kept */
    check_migrated(f, s, "policy = ldp-ts-b\n");
    agg_store_close(s);
    remove_tree(f->dir);
}

/* The empty tables of version 1 that a first start of version 1 left when it committed nothing:
 * rebuilt as version 2's, a fresh state. */
/* A state of version 2 (the node tables and column dropped again, its schema_version 2) gets them
 * at the next open; its stored states become the opening node's; nothing else changes. */
static void test_migrate_v2(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store *s = open_ok(f);
    write_batch(s);
    agg_store_close(s);
    db_exec(f, "DROP TABLE nodes; DROP TABLE exp_node_state; DROP TABLE node_key;"
               " ALTER TABLE experiments DROP COLUMN node;"
               " UPDATE meta SET value = '2' WHERE key = 'schema_version'");
    assert_false(has_table(f, "nodes"));
    agg_store_meta m = meta_of(f, K);
    m.node_name = "node-m";
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(db_long(f, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     AGG_STORE_SCHEMA_VERSION);
    assert_true(has_table(f, "nodes"));
    assert_true(has_table(f, "exp_node_state"));
    assert_true(has_table(f, "node_key"));
    if (f->url[0])
        assert_int_equal(db_long(f, "SELECT count(*) FROM experiments WHERE node = 'node-m'"), 1);
    else /* SQLite is one node: no name recorded */
        assert_int_equal(db_long(f, "SELECT count(*) FROM experiments WHERE node IS NULL"), 1);
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters c;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(blob, "abc", 3);
    free(blob);
    assert_int_equal(c.reports, 4);
    assert_int_equal(one_report(s, 40, &(agg_store_counters){5, 5, 1, 6}), LDPB_OK);
    agg_store_close(s);
    remove_tree(f->dir);
}

static void test_migrate_v1_empty(void **state)
{
    fixture *f = *state;
    make_v1(f, 0);
    assert_true(has_table(f, "state"));
    agg_store *s = open_ok(f);
    assert_int_equal(agg_store_default_experiment(s), 1);
    write_batch(s);
    agg_store_close(s);
    assert_false(has_table(f, "state"));
    assert_int_equal(db_long(f, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     AGG_STORE_SCHEMA_VERSION);
    char csv[4096];
    export_of(f, csv, sizeof csv);
    if (sqlite_csv[0])
        assert_string_equal(csv, sqlite_csv);
    remove_tree(f->dir);
}

/* The real thing: a state directory written by ldpb-aggregator of schema version 1 (policy
 * ldp-ts-b, 3 arms, epsilon 1, linear; 20 reports from `ldpb loadgen`), migrated by a caller of
 * version 1 (no default_settings). */
static void test_migrate_v1_file(void **state)
{
    fixture *f = *state;
    new_state(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "mkdir -m 0700 '%s' && cp '%s/store_v1/aggregator.db' '%s/store_v1/state_id' '%s' "
             "&& chmod 0600 '%s'/*",
             f->state, LDPB_TEST_DATA_DIR, LDPB_TEST_DATA_DIR, f->state, f->state);
    assert_int_equal(system(cmd), 0);
    assert_true(has_table(f, "state"));
    agg_store *s = open_ok(f);
    char hex[2 * AGG_STATE_ID_BYTES + 1];
    agg_state_id_hex(agg_store_state_id(s), hex);
    assert_string_equal(hex, "140c24ac5d4a751c8af9abc2b5d4f57c");
    uint8_t *blob = NULL;
    size_t len = 0;
    agg_store_counters c;
    assert_int_equal(agg_store_load(s, &blob, &len, &c), LDPB_OK);
    assert_non_null(blob);
    free(blob);
    assert_int_equal(c.reports, 20);
    assert_int_equal(c.assignments, 20);
    uint64_t counts[K];
    assert_int_equal(agg_store_arm_counts(s, counts, K), LDPB_OK);
    assert_int_equal(counts[0], 8);
    assert_int_equal(counts[1], 10);
    assert_int_equal(counts[2], 2);
    agg_store_exp *v = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].settings,
                        "policy = ldp-ts-b\nmode = local\narms = 3\nepsilon = 1\nmechanism = "
                        "linear\n");
    agg_store_experiments_free(v, n);
    agg_store_close(s);
    assert_false(has_table(f, "state"));
    remove_tree(f->dir);
}

/* A row of experiment `exp` (0: default). */
static agg_store_row exp_row(uint8_t tag, int64_t exp, uint32_t arm, uint64_t at, uint64_t keep)
{
    agg_store_row r = row(tag, arm, at, 0.5);
    r.experiment = exp;
    r.retain_until_ms = keep;
    return r;
}

static void add_report_ok(agg_store *s, agg_store_row r, int want_new)
{
    int is_new = -1;
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
    assert_int_equal(is_new, want_new);
}

/* Experiments a (id 2) and b (id 3) beside `default` (id 1), with their rows, in the first
 * transaction of a fresh state. */
static void write_two(agg_store *s)
{
    int64_t a = 0, b = 0, x = 0;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_add_experiment(s, "a", "Sa", 1, &a), LDPB_OK);
    assert_int_equal(agg_store_add_experiment(s, "b", "Sb", 0, &b), LDPB_OK);
    assert_int_equal(a, 2);
    assert_int_equal(b, 3);
    assert_int_equal(agg_store_add_experiment(s, "a", "again", 1, &x), LDPB_ESTATE);
    assert_non_null(strstr(agg_store_errmsg(s), "'a' exists"));
    assert_int_equal(agg_store_add_experiment(s, "Bad!", "x", 1, &x), LDPB_EINVAL);
    assert_int_equal(agg_store_add_experiment(s, "default", "x", 1, &x), LDPB_EINVAL);
    /* decisions: a's expire first but are retained 10 s longer than default's */
    for (uint8_t t = 40; t < 44; t++) {
        agg_store_row d =
            exp_row(t, t < 42 ? a : 0, t % K, 1000u * t, t < 42 ? 1000u * t + 70000 : 0);
        assert_int_equal(agg_store_add_decision(s, &d), LDPB_OK);
    }
    agg_store_row db = exp_row(44, b, 2, 50000, 120000);
    assert_int_equal(agg_store_add_decision(s, &db), LDPB_OK);
    add_report_ok(s, exp_row(40, a, 40 % K, 40005, 0), 1);
    add_report_ok(s, exp_row(41, a, 41 % K, 41005, 0), 1);
    add_report_ok(s, exp_row(44, b, 2, 50005, 0), 1);
    add_report_ok(s, exp_row(42, 0, 42 % K, 42005, 0), 1);
    /* an assignment id is one report whichever experiment it names */
    add_report_ok(s, exp_row(40, b, 1, 40009, 0), 0);
    agg_store_counters ca = {2, 2, 0, 2}, cb = {1, 1, 1, 1}, cd = {1, 1, 0, 2};
    assert_int_equal(agg_store_put_exp_state(s, a, (const uint8_t *)"AA", 2, &ca), LDPB_OK);
    assert_int_equal(agg_store_put_exp_state(s, b, (const uint8_t *)"B", 1, &cb), LDPB_OK);
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"D", 1, &cd), LDPB_OK);
    assert_int_equal(agg_store_put_exp_state(s, 99, (const uint8_t *)"Z", 1, &cb),
                     LDPB_ENOEXPERIMENT);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
}

static void check_exp(const agg_store_exp *e, int64_t id, const char *name, const char *settings,
                      int from_config, int running, const char *state, uint64_t reports)
{
    assert_int_equal(e->id, id);
    assert_string_equal(e->name, name);
    assert_string_equal(e->settings, settings);
    assert_int_equal(e->from_config, from_config);
    assert_int_equal(e->running, running);
    assert_int_equal(e->state_len, strlen(state));
    assert_memory_equal(e->state, state, strlen(state));
    assert_int_equal(e->counters.reports, reports);
    assert_int_equal(e->counters.policy_version, reports);
}

static char sqlite_two_csv[3][2048];

/* The CSV of every experiment, of one, and version 1's of `default`: the same on both backends. */
static void check_two_csv(const fixture *f)
{
    char all[2048], one[2048], def[2048], path[128], msg[AGG_STORE_ERRMAX];
    const char *url = f->url[0] ? f->url : NULL;
    char *const bufs[3] = {all, one, def};
    const char *const names[3] = {NULL, "a", "default"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/two.csv", f->dir);
        FILE *fp = fopen(path, "w+");
        assert_non_null(fp);
        ldpb_err e = i < 2 ? agg_store_export_csv_exp(url, f->state, names[i], fp, msg)
                           : agg_store_export_csv_url(url, f->state, fp, msg);
        if (e)
            print_error("export: %s\n", msg);
        assert_int_equal(e, LDPB_OK);
        rewind(fp);
        size_t n = fread(bufs[i], 1, sizeof all - 1, fp);
        bufs[i][n] = '\0';
        fclose(fp);
    }
    static const char head[] = "assignment_id,arm,propensity,policy_version,mechanism,epsilon,"
                               "value,issued_at_ms,expires_at_ms,reported_at_ms";
    assert_int_equal(strncmp(all, head, strlen(head)), 0);
    assert_int_equal(strncmp(all + strlen(head), ",experiment\n", 12), 0);
    assert_int_equal(strncmp(def + strlen(head), "\n", 1), 0);
    /* every row of `all` ends with its experiment; `one` is a's rows of `all`, in order */
    char want[2048];
    size_t wn = (size_t)snprintf(want, sizeof want, "%s,experiment\n", head);
    int rows = 0;
    for (const char *p = strchr(all, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        const char *end = strchr(p, '\n');
        rows++;
        if (end - p > 2 && strncmp(end - 2, ",a", 2) == 0)
            wn += (size_t)snprintf(want + wn, sizeof want - wn, "%.*s\n", (int)(end - p), p);
    }
    assert_int_equal(rows, 5); /* decisions 40..44 (every report had its decision) */
    assert_string_equal(one, want);
    assert_non_null(strstr(all, "28282828282828282828282828282828,1,"));
    assert_non_null(strstr(def, "2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a,0,"));
    assert_null(strstr(def, "28282828"));
    assert_int_equal(agg_store_export_csv_exp(url, f->state, "nosuch", stdout, msg),
                     LDPB_ENOEXPERIMENT);
    assert_non_null(strstr(msg, "no experiment 'nosuch'"));
    assert_int_equal(agg_store_export_csv_exp(url, f->state, "No!", stdout, msg), LDPB_EINVAL);
    for (int i = 0; i < 3; i++) {
        if (!f->url[0])
            snprintf(sqlite_two_csv[i], sizeof sqlite_two_csv[i], "%s", bufs[i]);
        else
            assert_string_equal(bufs[i], sqlite_two_csv[i]);
    }
}

/* Two experiments beside `default`: rows, states, counters and arm counts apart; stopped and
 * renamed settings kept; retention by retain_until_ms across experiments. */
static void test_two_experiments(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store_meta m = meta_of(f, K);
    m.default_settings = "S0";
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    agg_store_exp *v = NULL;
    size_t n = 0;
    /* before the first transaction: `default`, to be written with it */
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].id, 1);
    assert_string_equal(v[0].settings, "S0");
    assert_null(v[0].state);
    agg_store_experiments_free(v, n);
    write_two(s);
    uint64_t counts[K];
    static const uint64_t want[3][K] = {{1, 0, 0}, {0, 1, 1}, {0, 0, 1}}; /* default, a, b */
    for (int64_t e = 1; e <= 3; e++) {
        assert_int_equal(agg_store_arm_counts_exp(s, e, counts, K), LDPB_OK);
        assert_memory_equal(counts, want[e - 1], sizeof counts);
    }
    assert_int_equal(agg_store_arm_counts_exp(s, 0, counts, K), LDPB_OK);
    assert_memory_equal(counts, want[0], sizeof counts);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_set_running(s, 3, 0), LDPB_OK);
    assert_int_equal(agg_store_set_settings(s, 2, "Sa2"), LDPB_OK);
    assert_int_equal(agg_store_set_running(s, 99, 0), LDPB_ENOEXPERIMENT);
    assert_int_equal(agg_store_set_settings(s, 99, "x"), LDPB_ENOEXPERIMENT);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);

    /* The meta rows decide whether `default` is the same; its settings text then follows the
     * configuration's, written with the next transaction (and listed as such before it). */
    m.default_settings = "S0 retention changed";
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_default_experiment(s), 1);
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 3);
    check_exp(&v[0], 1, "default", "S0 retention changed", 1, 1, "D", 1);
    agg_store_experiments_free(v, n);
    /* (PostgreSQL: written by the open already) */
    assert_int_equal(db_long(f, "SELECT count(*) FROM experiments WHERE settings = 'S0'"),
                     f->url[0] ? 0 : 1);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);
    assert_int_equal(db_long(f, "SELECT count(*) FROM experiments WHERE settings = 'S0'"), 0);
    m.default_settings = NULL; /* a caller of version 1 leaves the text as it is */
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 3);
    check_exp(&v[0], 1, "default", "S0 retention changed", 1, 1, "D", 1);
    check_exp(&v[1], 2, "a", "Sa2", 1, 1, "AA", 2);
    check_exp(&v[2], 3, "b", "Sb", 0, 0, "B", 1);
    assert_int_equal(v[2].counters.duplicates, 1);
    assert_int_equal(v[0].counters.assignments, 2);
    agg_store_experiments_free(v, n);
    agg_store_close(s);
    check_two_csv(f);

    /* Retention by retain_until_ms across experiments, not by expiry: default's two decisions
     * (retained to their expiry, 102000 and 103000) go, a's (expiring at 100000 and 101000,
     * retained 10 s more) stay; then, over 2 rows, the one retained least (a's first). */
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    uint64_t deleted = 0;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_prune_decisions(s, 105000, 100, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 2);
    assert_int_equal(agg_store_prune_decisions(s, 0, 2, 100, &deleted), LDPB_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    assert_int_equal(agg_store_decision_rows(s), 2);
    agg_store_close(s);
    assert_int_equal(db_long(f, "SELECT count(*) FROM decisions WHERE experiment = 1"), 0);
    assert_int_equal(db_long(f, "SELECT count(*) FROM decisions WHERE experiment = 2 AND"
                                " retain_until_ms = 111000"),
                     1);
    assert_int_equal(db_long(f, "SELECT count(*) FROM decisions WHERE experiment = 3"), 1);

    /* An experiment whose counters disagree with its reports: the list refuses, naming it. */
    db_exec(f, "UPDATE experiments SET reports = 9, policy_version = 9 WHERE name = 'b'");
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_ECORRUPT);
    assert_non_null(strstr(agg_store_errmsg(s), "experiment 'b': the state counts 9 reports"));
    agg_store_close(s);
    db_exec(f, "UPDATE experiments SET reports = 1, policy_version = 1, state = NULL"
               " WHERE name = 'b'");
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_ECORRUPT);
    assert_non_null(strstr(agg_store_errmsg(s), "experiment 'b': reports are stored but the "
                                                "policy state is missing"));
    agg_store_close(s);
    remove_tree(f->dir);
}

/* A configuration without `default`: none is created, the calls of version 1 have nothing to
 * act on; a `default` declared later gets the next id with the next transaction and is then
 * compared as in version 1. */
static void test_no_default(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store_meta none = meta_of(f, K);
    none.policy = NULL;
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &none, msg), LDPB_OK);
    assert_int_equal(agg_store_default_experiment(s), 0);
    agg_store_exp *v = NULL;
    size_t n = 9;
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 0);
    int64_t x = 0;
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_counters c = {1, 1, 0, 1};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)"D", 1, &c), LDPB_ENOEXPERIMENT);
    assert_int_equal(agg_store_add_experiment(s, "x", "Sx", 1, &x), LDPB_OK);
    assert_int_equal(x, 1);
    agg_store_row r = exp_row(7, 0, 0, 5, 0);
    int is_new = -1;
    assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_ENOEXPERIMENT);
    add_report_ok(s, exp_row(7, x, 0, 5, 0), 1);
    assert_int_equal(agg_store_put_exp_state(s, x, (const uint8_t *)"X", 1, &c), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);

    agg_store_meta m = meta_of(f, K);
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    assert_int_equal(agg_store_default_experiment(s), 2);
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[1].name, "default");
    agg_store_experiments_free(v, n);
    agg_store_close(s); /* nothing committed: `default` not written (PostgreSQL: by the open) */
    assert_int_equal(db_long(f, "SELECT count(*) FROM experiments"), f->url[0] ? 2 : 1);
    assert_int_equal(agg_store_open(&s, f->state, &none, msg), LDPB_OK);
    agg_store_close(s);
    s = open_ok(f);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_close(s);
    assert_int_equal(db_long(f, "SELECT count(*) FROM experiments"), 2);
    m = meta_of(f, K + 1);
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_ESTATE);
    assert_non_null(strstr(msg, "arms is '3' there but '4' now"));
    assert_int_equal(agg_store_open(&s, f->state, &none, msg), LDPB_OK);
    assert_int_equal(agg_store_default_experiment(s), 2);
    agg_store_close(s);
    /* version 1's export: `default`'s rows, none */
    char csv[1024];
    export_of(f, csv, sizeof csv);
    assert_string_equal(csv, "assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,"
                             "issued_at_ms,expires_at_ms,reported_at_ms\n");
    remove_tree(f->dir);
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define MANY 10000

/* 10,000 experiments, each with a state of 64 bytes, listed with their states by one query; the
 * time is printed (CPU time of this process, and wall time, which for PostgreSQL includes the
 * server's work). */
static void test_many_experiments(void **state)
{
    fixture *f = *state;
    new_state(f);
    agg_store_meta m = meta_of(f, K);
    m.policy = NULL;
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    uint8_t blob[64];
    double w0 = wall_ms();
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    for (int i = 0; i < MANY; i++) {
        char name[16];
        snprintf(name, sizeof name, "e%05d", i);
        int64_t id = 0;
        assert_int_equal(agg_store_add_experiment(s, name, "policy = ldp-ts-b\narms = 3\n", 1, &id),
                         LDPB_OK);
        memset(blob, i & 0xff, sizeof blob);
        agg_store_counters c = {0, 0, 0, (uint64_t)i};
        assert_int_equal(agg_store_put_exp_state(s, id, blob, sizeof blob, &c), LDPB_OK);
    }
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    double w_add = wall_ms() - w0;
    agg_store_close(s);
    assert_int_equal(agg_store_open(&s, f->state, &m, msg), LDPB_OK);
    agg_store_exp *v = NULL;
    size_t n = 0;
    double c0 = cpu_ms();
    w0 = wall_ms();
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    double cpu = cpu_ms() - c0, wall = wall_ms() - w0;
    print_message("%s: %d experiments listed with their states in %.1f ms CPU, %.1f ms wall "
                  "(added in one transaction in %.0f ms wall)\n",
                  f->backend, MANY, cpu, wall, w_add);
    assert_int_equal(n, MANY);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "e%05zu", i);
        assert_string_equal(v[i].name, name);
        assert_int_equal(v[i].state_len, sizeof blob);
        assert_int_equal(v[i].state[63], i & 0xff);
        assert_int_equal(v[i].counters.assignments, i);
    }
    agg_store_experiments_free(v, n);
    agg_store_close(s);
    /* "well under 1 s" (design); CPU time, so a loaded machine does not fail it */
    assert_true(cpu < 1000.0);
    remove_tree(f->dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_roundtrip),  cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_prune),      cmocka_unit_test(test_export),
        cmocka_unit_test(test_bad_url),    cmocka_unit_test(test_lost_database),
        cmocka_unit_test(test_migrate_v1), cmocka_unit_test(test_migrate_v1_empty),
        cmocka_unit_test(test_migrate_v2), cmocka_unit_test(test_two_experiments),
        cmocka_unit_test(test_no_default), cmocka_unit_test(test_many_experiments),
        cmocka_unit_test(test_batch),      cmocka_unit_test(test_prune_floor),
    };
    const struct CMUnitTest sqlite_only[] = {
        cmocka_unit_test(test_migrate_v1_file),
        cmocka_unit_test(test_prune_floor_shards),
    };
    const struct CMUnitTest pg_only[] = {
        cmocka_unit_test(test_pg_unreachable), cmocka_unit_test(test_pg_wrong_schema),
        cmocka_unit_test(test_pg_one_node),    cmocka_unit_test(test_pg_reconnect),
        cmocka_unit_test(test_pg_backup),      cmocka_unit_test(test_pg_commit_in_doubt),
        cmocka_unit_test(test_pg_nodes),       cmocka_unit_test(test_pg_batch_fails),
        cmocka_unit_test(test_pg_deadlock),
    };
    int failed = cmocka_run_group_tests_name("store: sqlite", common, setup_sqlite, NULL);
    failed += cmocka_run_group_tests_name("store: sqlite only", sqlite_only, setup_sqlite, NULL);
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
