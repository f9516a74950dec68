/* The EXP3 family served by the real ldpb-aggregator to real clients (the client library over
 * ipc:// and tcp://): ldp-exp3-lap in local mode, where every client privatizes its reward with
 * its own Laplace mechanism and the policy uses the reports as they arrive; dp-exp3-lap in central
 * mode; exp3 and exp3-tau behind allow_nonprivate. Checks that the daemon learns, that the
 * propensity of every assignment is the policy's exact probability of its arm (replayed here with
 * the policy library on the logged reports), that status answers, and that a kill -9 and restart
 * keep every counted report. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "exp3_family.h"
#include "harness.h"
#include "ldpb/client.h"
#include "ldpb/err.h"
#include "policy.h"

#define K       3
#define BEST    2 /* the arm whose reward is 1; the others' is 0 */
#define HORIZON 4000
#define EPS     4.0
/* Phase 1: one client, one report at a time, so the policy observes the reports in the order of
 * the assignments and the test can replay it. Phase 2: THREADS clients at once (delayed,
 * interleaved feedback). */
#define N_SEQ        300
#define THREADS      4
#define N_PER_THREAD 675
#define N_TOTAL      (N_SEQ + THREADS * N_PER_THREAD)

static double reward_of(uint32_t arm)
{
    return arm == BEST ? 1.0 : 0.0;
}

/* A client of the real library with a seeded privacy generator (stream `seed`). */
static ldpb_client *client_new(const dt_daemon *d, const char *url, uint8_t seed, ldpb_rng **rng,
                               int allow_raw)
{
    uint8_t key[LDPB_RNG_SEED_BYTES] = {0};
    key[0] = seed;
    assert_int_equal(ldpb_rng_new_seeded(rng, key), LDPB_OK);
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = url;
    memcpy(o.server_public_key, d->server.pk, LDPB_KEY_BYTES);
    o.epsilon_cap = EPS;
    o.per_report_cap = EPS;
    o.lifetime_budget = 1e6;
    o.timeout_ms = 5000;
    o.allow_raw = allow_raw;
    o.rng = *rng;
    ldpb_client *c = NULL;
    assert_int_equal(ldpb_client_new(&c, &o), LDPB_OK);
    return c;
}

/* One assignment and its report through the library; returns the assignment. */
static ldpb_assignment play(ldpb_client *c)
{
    ldpb_assignment a;
    ldpb_err e = ldpb_client_assign(c, NULL, 0, &a);
    if (e)
        print_message("assign: %s\n", ldpb_client_errmsg(c));
    assert_int_equal(e, LDPB_OK);
    assert_true(a.arm < K);
    e = ldpb_client_report(c, &a, reward_of(a.arm));
    if (e)
        print_message("report: %s\n", ldpb_client_errmsg(c));
    assert_int_equal(e, LDPB_OK);
    return a;
}

typedef struct worker_arg {
    const dt_daemon *d;
    const char *url;
    uint8_t seed;
    uint32_t arms[N_PER_THREAD];
    int failed;
} worker_arg;

/* cmocka's asserts are not for other threads: a worker only records and flags. */
static void *worker_main(void *p)
{
    worker_arg *w = p;
    uint8_t key[LDPB_RNG_SEED_BYTES] = {0};
    key[0] = w->seed;
    ldpb_rng *rng = NULL;
    ldpb_client *c = NULL;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = w->url;
    memcpy(o.server_public_key, w->d->server.pk, LDPB_KEY_BYTES);
    o.epsilon_cap = EPS;
    o.per_report_cap = EPS;
    o.lifetime_budget = 1e6;
    o.timeout_ms = 5000;
    if (ldpb_rng_new_seeded(&rng, key) != LDPB_OK)
        goto fail;
    o.rng = rng;
    if (ldpb_client_new(&c, &o) != LDPB_OK)
        goto fail;
    for (int i = 0; i < N_PER_THREAD; i++) {
        ldpb_assignment a;
        if (ldpb_client_assign(c, NULL, 0, &a) != LDPB_OK || a.arm >= K ||
            !(a.propensity > 0.0 && a.propensity < 1.0) ||
            ldpb_client_report(c, &a, reward_of(a.arm)) != LDPB_OK)
            goto fail;
        w->arms[i] = a.arm;
    }
    ldpb_client_free(c);
    ldpb_rng_free(rng);
    return NULL;
fail:
    w->failed = 1;
    ldpb_client_free(c);
    ldpb_rng_free(rng);
    return NULL;
}

/* The status through the client library: per-arm pulls and the counted reports. */
static void status_of(ldpb_client *c, const char *policy, uint64_t pulls[K], uint64_t *reports)
{
    ldpb_status st;
    ldpb_err e = ldpb_client_status(c, &st);
    if (e)
        print_message("status: %s\n", ldpb_client_errmsg(c));
    assert_int_equal(e, LDPB_OK);
    assert_string_equal(st.policy, policy);
    assert_int_equal(st.n_arms, K);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < K; i++) {
        assert_int_equal(st.arms[i].arm, i);
        pulls[i] = st.arms[i].pulls;
        sum += pulls[i];
    }
    assert_int_equal(sum, st.reports);
    *reports = st.reports;
    ldpb_status_clear(&st);
}

static sqlite3 *db_open(const dt_daemon *d)
{
    char path[256];
    snprintf(path, sizeof path, "%s/aggregator.db", d->state_dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return db;
}

static void start(dt_daemon *d, const char *extra)
{
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, extra), 0);
    int st = 0;
    assert_int_equal(dt_daemon_start(d, NULL, &st), 0);
}

static void test_ldp_exp3_lap_local(void **state)
{
    (void)state;
    dt_daemon d;
    char extra[512];
    snprintf(extra, sizeof extra,
             "arms = %d\nmode = local\npolicy = ldp-exp3-lap\nmechanism = laplace\n"
             "epsilon = %g\nhorizon = %d\nassignment_ttl_s = 600\nlog_level = warn\n",
             K, EPS, HORIZON);
    start(&d, extra);

    /* Phase 1: sequential, over ipc://. */
    static ldpb_assignment seq[N_SEQ];
    ldpb_rng *rng = NULL;
    ldpb_client *c = client_new(&d, d.ipc_url, 1, &rng, 0);
    for (int i = 0; i < N_SEQ; i++) {
        seq[i] = play(c);
        assert_int_equal(seq[i].mechanism, LDPB_CLIENT_MECH_LAPLACE);
        assert_true(seq[i].epsilon == EPS);
        /* the policy's probability: never 1 (gamma > 0 spreads it over the arms) */
        assert_true(seq[i].propensity > 0.0 && seq[i].propensity < 1.0);
    }

    /* Phase 2: THREADS clients at once, half over tcp://. */
    static worker_arg args[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] =
            (worker_arg){.d = &d, .url = i % 2 ? d.tcp_url : d.ipc_url, .seed = (uint8_t)(10 + i)};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failed, 0);
    }

    /* Learning: the best arm's share of the assignments grows from about 1/K. The same game
     * without the daemon (exp3_e2e_calibrate, built beside this test: the library's policy on the
     * clients' Laplace mechanism, reports in groups of THREADS), 100000 seeded runs: the share in
     * the first N_SEQ rounds had mean 0.382 and range [0.203, 0.573], in the last 1350 (here the
     * last half of each client's) mean 0.902 and range [0.723, 0.981], the gain at least 0.319;
     * none failed the bounds below, so they fail with probability below 3e-5 (the 95% upper
     * bound for 0 of 100000). */
    int early = 0, late = 0, late_n = 0;
    for (int i = 0; i < N_SEQ; i++)
        early += seq[i].arm == BEST;
    for (int t = 0; t < THREADS; t++)
        for (int i = N_PER_THREAD / 2; i < N_PER_THREAD; i++) {
            late += args[t].arms[i] == BEST;
            late_n++;
        }
    double early_share = (double)early / N_SEQ, late_share = (double)late / late_n;
    print_message("best arm share: %.3f in the first %d rounds, %.3f in the last %d\n", early_share,
                  N_SEQ, late_share, late_n);
    assert_true(early_share <= 0.65);
    assert_true(late_share >= 0.6);
    assert_true(late_share - early_share >= 0.2);

    /* Status: every report counted, most of them on the best arm. */
    uint64_t pulls[K], reports = 0;
    status_of(c, "ldp-exp3-lap", pulls, &reports);
    assert_int_equal(reports, N_TOTAL);
    assert_true(pulls[BEST] > pulls[0] && pulls[BEST] > pulls[1]);

    /* Propensities: replay phase 1 with the policy library on the logged reports. Each
     * assignment's logged propensity is the exact probability (==, not within a tolerance) the
     * replayed policy gives its arm after the reports before it: not a Monte Carlo estimate,
     * not 1. */
    sqlite3 *db = db_open(&d);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT d.arm, d.propensity, d.policy_version, r.value,"
                                        " r.propensity FROM decisions d JOIN reports r"
                                        " USING(assignment_id) WHERE assignment_id = ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = K;
    cfg.horizon = HORIZON;
    cfg.epsilon = EPS;
    cfg.mechanism = LDPB_MECH_LAPLACE;
    agg_policy *replay = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_policy_new(&replay, "ldp-exp3-lap", &cfg, msg), LDPB_OK);
    agg_rand rand;
    agg_rand_seed_u64(&rand, 1);
    agg_policy_env env = {&rand, NULL};
    int not_uniform = 0;
    for (int i = 0; i < N_SEQ; i++) {
        sqlite3_reset(st);
        sqlite3_bind_blob(st, 1, seq[i].id, (int)seq[i].id_len, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        uint32_t arm = (uint32_t)sqlite3_column_int64(st, 0);
        double logged = sqlite3_column_double(st, 1);
        assert_int_equal(arm, seq[i].arm);
        assert_int_equal(sqlite3_column_int64(st, 2), i);
        assert_true(sqlite3_column_double(st, 4) == logged);
        assert_true(logged == seq[i].propensity);
        double probs[K];
        assert_int_equal(agg_exp3_probs(replay, probs, K), LDPB_OK);
        if (logged != probs[arm])
            print_message("assignment %d: logged %.17g, policy %.17g\n", i, logged, probs[arm]);
        assert_true(logged == probs[arm]);
        not_uniform += logged != probs[(arm + 1) % K];
        assert_int_equal(agg_policy_observe_with_propensity(replay, &env, arm,
                                                            sqlite3_column_double(st, 3), logged),
                         LDPB_OK);
    }
    assert_true(not_uniform > N_SEQ / 2);
    double gamma = 0.0;
    agg_exp3_params(replay, &gamma, NULL, NULL, NULL, NULL);
    agg_policy_free(replay);
    sqlite3_finalize(st);
    /* and in phase 2, the logged propensities are probabilities of the policy too (in (0, 1),
     * at least gamma / K), never a draw count over 1 + propensity_samples */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*), min(propensity), max(propensity)"
                                        " FROM decisions",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(st, 0), N_TOTAL);
    assert_true(sqlite3_column_double(st, 1) >= gamma / K);
    assert_true(sqlite3_column_double(st, 2) < 1.0);
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* kill -9 and restart: the counts come back as they were (every report was acked, so
     * committed), and the restored policy serves on. */
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    uint64_t pulls2[K], reports2 = 0;
    status_of(c, "ldp-exp3-lap", pulls2, &reports2);
    assert_int_equal(reports2, reports);
    for (int a = 0; a < K; a++)
        assert_int_equal(pulls2[a], pulls[a]);
    ldpb_assignment a = play(c);
    assert_true(a.propensity > 0.0 && a.propensity < 1.0);
    status_of(c, "ldp-exp3-lap", pulls2, &reports2);
    assert_int_equal(reports2, reports + 1);
    ldpb_client_free(c);
    ldpb_rng_free(rng);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* dp-exp3-lap (central), exp3 and exp3-tau (nonprivate) start, assign with a propensity in
 * (0, 1) (the exact probability, gamma > 0), count reports and answer status; restarted after a
 * kill -9 they keep their counts. */
static void serve_raw(const char *extra, const char *policy)
{
    dt_daemon d;
    start(&d, extra);
    ldpb_rng *rng = NULL;
    ldpb_client *c = client_new(&d, d.tcp_url, 7, &rng, 1);
    for (int i = 0; i < 40; i++) {
        ldpb_assignment a = play(c);
        assert_int_equal(a.mechanism, LDPB_CLIENT_MECH_RAW);
        assert_true(a.propensity > 0.0 && a.propensity < 1.0);
    }
    uint64_t pulls[K], reports = 0, pulls2[K], reports2 = 0;
    status_of(c, policy, pulls, &reports);
    assert_int_equal(reports, 40);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    status_of(c, policy, pulls2, &reports2);
    assert_int_equal(reports2, reports);
    for (int a = 0; a < K; a++)
        assert_int_equal(pulls2[a], pulls[a]);
    play(c);
    ldpb_client_free(c);
    ldpb_rng_free(rng);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

static void test_dp_exp3_lap_central(void **state)
{
    (void)state;
    serve_raw("arms = 3\nmode = central\npolicy = dp-exp3-lap\nepsilon = 1\nhorizon = 1000\n"
              "log_level = warn\n",
              "dp-exp3-lap");
}

static void test_exp3_nonprivate(void **state)
{
    (void)state;
    serve_raw("arms = 3\nmode = nonprivate\nallow_nonprivate = true\npolicy = exp3\n"
              "horizon = 1000\nlog_level = warn\n",
              "exp3");
}

/* exp3-tau plays one arm for a block of tau assignments; its propensity is the probability of the
 * block's draw (below 1 as well). */
static void test_exp3_tau_nonprivate(void **state)
{
    (void)state;
    serve_raw("arms = 3\nmode = nonprivate\nallow_nonprivate = true\npolicy = exp3-tau\n"
              "horizon = 1000\ntau = 5\nlog_level = warn\n",
              "exp3-tau");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ldp_exp3_lap_local),
        cmocka_unit_test(test_dp_exp3_lap_central),
        cmocka_unit_test(test_exp3_nonprivate),
        cmocka_unit_test(test_exp3_tau_nonprivate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
