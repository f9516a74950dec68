/* The store's part of sequenced experiments (store_seq.h) on the fixture's throwaway PostgreSQL,
 * in process (label postgres): the fence and the lock it takes, a takeover that waits for the
 * sequencer's open transaction and continues from what it committed, the rows left to the
 * sequencer and the counters that count observed rows only; and SQLite as a sole node. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "harness.h"
#include "store.h"
#include "store_seq.h"

typedef struct fixture {
    char dir[64];
    char state[96];
    char url[512];
} fixture;

static void sleep_ms(int ms)
{
    nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL);
}

static agg_store *open_store(fixture *f, const char *db)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/ldpb-test-seq-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    f->url[0] = '\0';
    if (db)
        assert_int_equal(dt_pg_database(db, f->url, sizeof f->url), 0);
    agg_store_meta m = {
        .policy = "dp-ucb",
        .mode = "central",
        .params = {.k = 3, .epsilon = 1.0, .horizon = 1000},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_HORIZON,
        .store_url = db ? f->url : NULL,
    };
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    ldpb_err e = agg_store_open(&s, f->state, &m, msg);
    if (e)
        print_error("open: %s\n", msg);
    assert_int_equal(e, LDPB_OK);
    return s;
}

static void close_store(agg_store *s, fixture *f)
{
    agg_store_close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
}

static void put_state(agg_store *s, const char *blob, uint64_t reports)
{
    agg_store_counters c = {reports, reports, 0, 0};
    assert_int_equal(agg_store_put_state(s, (const uint8_t *)blob, strlen(blob), &c), LDPB_OK);
}

static agg_store_row report_row(uint8_t tag, uint32_t arm, double value)
{
    static uint8_t ids[256][16];
    memset(ids[tag], tag, sizeof ids[tag]);
    agg_store_row r = {ids[tag], sizeof ids[tag], arm,  "raw", 0, 0.5,
                       1,        999999999999,    1000, value, 0, 0};
    return r;
}

/* ---- a takeover waits for the sequencer's open transaction ---------------------------------- */

typedef struct taker {
    const char *url;
    atomic_int done;
    char state[64];
    long long epoch;
} taker;

/* Another node: takes the (free) lock and bumps the epoch, as agg_store_seq_acquire does. */
static void *taker_main(void *arg)
{
    taker *t = arg;
    PGconn *c = PQconnectdb(t->url);
    PGresult *r = PQexec(c, "SELECT pg_try_advisory_lock("
                            "1818522481"
                            ", 1)");
    int got = PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (got) {
        r = PQexec(c, "UPDATE experiments SET seq_epoch = seq_epoch + 1 WHERE id = 1"
                      " RETURNING seq_epoch, convert_from(state, 'UTF8')");
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
            t->epoch = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
            snprintf(t->state, sizeof t->state, "%s", PQgetvalue(r, 0, 1));
        }
        PQclear(r);
    }
    PQfinish(c);
    atomic_store(&t->done, 1);
    return NULL;
}

static void test_fence_and_takeover(void **state)
{
    (void)state;
    fixture f;
    agg_store *s = open_store(&f, "seq_store_fence");
    assert_true(agg_store_seq_shared(s));
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    put_state(s, "v1", 0);
    assert_int_equal(agg_store_commit(s), LDPB_OK);

    agg_store_seq_state st;
    int got = 0;
    assert_int_equal(agg_store_seq_acquire(s, 1, &got, &st), LDPB_OK);
    assert_int_equal(got, 1);
    assert_int_equal(st.epoch, 1);
    assert_int_equal(st.len, 2);
    assert_memory_equal(st.blob, "v1", 2);
    free(st.blob);

    /* The lock lost with a session (given back here), the epoch kept: the fence still holds
     * while nobody bumped it, and its row lock makes a taker's bump wait for the COMMIT. */
    agg_store_seq_release(s, 1);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    int held = 0;
    assert_int_equal(agg_store_seq_fence(s, 1, 1, &held), LDPB_OK);
    assert_int_equal(held, 1);
    put_state(s, "v2", 0);
    taker t = {.url = f.url};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, taker_main, &t), 0);
    sleep_ms(300);
    assert_int_equal(atomic_load(&t.done), 0); /* waiting on the row */
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    pthread_join(th, NULL);
    /* the taker continues from what the deposed sequencer committed */
    assert_int_equal(t.epoch, 2);
    assert_string_equal(t.state, "v2");

    /* the deposed sequencer's next transaction is fenced out; nothing it writes is kept */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_seq_fence(s, 1, 1, &held), LDPB_OK);
    assert_int_equal(held, 0);
    agg_store_rollback(s);
    assert_int_equal(agg_store_seq_read(s, 1, 99, &st), LDPB_OK);
    assert_int_equal(st.epoch, 2);
    assert_int_equal(st.len, 2);
    assert_memory_equal(st.blob, "v2", 2);
    free(st.blob);
    /* the lock is free again once the server has ended the taker's session (a moment after
     * its socket closed): taken, epoch 3, from "v2" */
    got = 0;
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         !got && ldpb_test_now_ms() < end;) {
        assert_int_equal(agg_store_seq_acquire(s, 1, &got, &st), LDPB_OK);
        if (!got)
            sleep_ms(10);
    }
    assert_int_equal(got, 1);
    assert_int_equal(st.epoch, 3);
    assert_memory_equal(st.blob, "v2", 2);
    free(st.blob);
    close_store(s, &f);
}

/* ---- rows left to the sequencer ------------------------------------------------------------- */

static void test_deferred_rows(void **state)
{
    (void)state;
    fixture f;
    agg_store *s = open_store(&f, "seq_store_rows");
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    put_state(s, "v1", 0);
    assert_int_equal(agg_store_commit(s), LDPB_OK);

    /* a follower's batch: three reports left to the sequencer, one with features */
    const double x[2] = {0.25, -1.5};
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    for (uint8_t t = 1; t <= 3; t++) {
        agg_store_row r = report_row(t, t - 1, 0.125 * t);
        int is_new = 0;
        assert_int_equal(agg_store_add_report(s, &r, &is_new), LDPB_OK);
        assert_int_equal(is_new, 1);
        assert_int_equal(agg_store_seq_defer(s, r.id, r.id_len, t == 2 ? x : NULL, t == 2 ? 2 : 0),
                         LDPB_OK);
    }
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    /* resent to any node: a duplicate */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_row again = report_row(2, 1, 0.25);
    int is_new = 1;
    assert_int_equal(agg_store_add_report(s, &again, &is_new), LDPB_OK);
    assert_int_equal(is_new, 0);
    agg_store_rollback(s);

    /* the counters count observed rows: 0 so far, and the state is consistent */
    agg_store_exp *v = NULL;
    size_t n = 0;
    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].counters.reports, 0);
    agg_store_experiments_free(v, n);

    /* the sequencer: the rows in insertion order, with their fields */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    agg_store_pending *p = NULL;
    size_t np = 0;
    assert_int_equal(agg_store_seq_pending(s, 1, 2, &p, &np), LDPB_OK);
    assert_int_equal(np, 2); /* at most `max` */
    assert_int_equal(p[0].arm, 0);
    assert_true(p[0].value == 0.125 && p[0].propensity == 0.5 && p[0].x == NULL);
    assert_int_equal(p[1].arm, 1);
    assert_int_equal(p[1].nx, 2);
    assert_memory_equal(p[1].x, x, sizeof x);
    assert_true(p[0].seq < p[1].seq);
    assert_int_equal(agg_store_seq_mark(s, 1, p, np), LDPB_OK);
    put_state(s, "v2", 2);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    /* marking them again finds them observed: refused, nothing changed */
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_seq_mark(s, 1, p, np), LDPB_ECORRUPT);
    agg_store_rollback(s);
    agg_store_seq_pending_free(p, np);

    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_seq_pending(s, 1, 100, &p, &np), LDPB_OK);
    assert_int_equal(np, 1);
    assert_int_equal(p[0].arm, 2);
    assert_int_equal(agg_store_seq_mark(s, 1, p, np), LDPB_OK);
    put_state(s, "v3", 3);
    assert_int_equal(agg_store_commit(s), LDPB_OK);
    agg_store_seq_pending_free(p, np);

    assert_int_equal(agg_store_experiments(s, &v, &n), LDPB_OK);
    assert_int_equal(v[0].counters.reports, 3);
    agg_store_experiments_free(v, n);
    close_store(s, &f);
}

/* ---- SQLite: one node, the sequencer of everything ---------------------------------------- */

static void test_sqlite_sole_node(void **state)
{
    (void)state;
    fixture f;
    agg_store *s = open_store(&f, NULL);
    assert_false(agg_store_seq_shared(s));
    agg_store_seq_state st;
    int got = 0, held = 0;
    assert_int_equal(agg_store_seq_acquire(s, 1, &got, &st), LDPB_OK);
    assert_int_equal(got, 1);
    assert_null(st.blob);
    assert_int_equal(agg_store_begin(s), LDPB_OK);
    assert_int_equal(agg_store_seq_fence(s, 1, 0, &held), LDPB_OK);
    assert_int_equal(held, 1);
    agg_store_pending *p = NULL;
    size_t np = 7;
    assert_int_equal(agg_store_seq_pending(s, 1, 10, &p, &np), LDPB_OK);
    assert_int_equal(np, 0);
    agg_store_rollback(s);
    close_store(s, &f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fence_and_takeover),
        cmocka_unit_test(test_deferred_rows),
        cmocka_unit_test(test_sqlite_sole_node),
    };
    return cmocka_run_group_tests_name("store: sequenced experiments", tests, NULL, NULL);
}
