/* The committer's durable write alone, without the network: the SQLite store (store.h) in a fresh
 * state directory takes transactions as the committer writes them (server_commit.c): a batch's
 * decision rows (assignments issued since the last commit) and report rows (for assignments
 * issued a few milliseconds earlier, as devices report them), sorted as write_rows sorts them,
 * the policy state, retention's prune, and the COMMIT with its fdatasync. Ids are laid out as
 * assignment tokens are (assign_token.h: version, big-endian expiry, then bytes that differ), so
 * rows land where the daemon's do. Prints the thread's CPU per commit and per report (utime +
 * stime of this thread, CLOCK_THREAD_CPUTIME_ID) and the wall time per commit, for the median of
 * ROUNDS rounds; the machine's other load moves them, so compare builds alternated.
 *
 * Usage: bench_store_commit [--reports R] [--commits N] [--rounds K] [--dir PARENT]
 *                           [--row-shards S] [--sqlite-memstatus M]
 * R reports (and R decisions) per commit (default 20), N commits per round (default 2000), S row
 * shards (default 1): with S > 1 the rows go to S writer threads (store_shard.h), whose CPU this
 * thread's figure leaves out, so compare the wall time per commit. M 1 keeps SQLite's memory
 * statistics, which the daemon turns off (agg_store_process_init). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "store.h"

#define ID_BYTES 62
#define RING     4096

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t next_rand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* This process's CPU (every thread's: the row shards' writers too), user + system. */
static double process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int row_cmp(const void *pa, const void *pb)
{
    const agg_store_batch_row *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind == AGG_BATCH_DECISION ? -1 : 1;
    return memcmp(a->row.id, b->row.id, ID_BYTES);
}

typedef struct sim {
    uint8_t ids[RING][ID_BYTES]; /* the decisions issued so far, a ring */
    uint64_t issued;             /* decisions issued */
    uint64_t now_ms;             /* the simulated clock: 5000 assignments/s */
} sim;

static void issue(sim *m, agg_store_batch_row *b)
{
    uint8_t *id = m->ids[m->issued % RING];
    uint64_t expires = m->now_ms + 600000u;
    id[0] = 3;
    for (int i = 0; i < 8; i++)
        id[1 + i] = (uint8_t)(expires >> (56 - 8 * i));
    for (int i = 9; i < ID_BYTES; i += 8) {
        uint64_t r = next_rand();
        memcpy(id + i, &r, (size_t)(ID_BYTES - i < 8 ? ID_BYTES - i : 8));
    }
    b->kind = AGG_BATCH_DECISION;
    b->row = (agg_store_row){id,        ID_BYTES, (uint32_t)(next_rand() % 5),
                             "linear",  1.0,      0.2,
                             m->issued, expires,  m->now_ms,
                             0,         0,        expires + 604800000u};
    m->issued++;
}

/* A report for a decision issued 25 to 150 assignments ago (5 to 30 ms at 5000/s). */
static void report(sim *m, agg_store_batch_row *b)
{
    uint64_t back = 25 + next_rand() % 126;
    uint64_t k = m->issued > back ? m->issued - back : 0;
    const uint8_t *id = m->ids[k % RING];
    uint64_t expires = 0;
    for (int i = 0; i < 8; i++)
        expires = expires << 8 | id[1 + i];
    b->kind = AGG_BATCH_REPORT;
    b->row = (agg_store_row){id, ID_BYTES, 1, "linear", 1.0, 0.2, k, expires, m->now_ms, 0.5, 0, 0};
}

static int run_round(const char *parent, int reports, int commits, unsigned shards, double out[6])
{
    char dir[256], state[300];
    snprintf(dir, sizeof dir, "%s/ldpb-bench-store-XXXXXX", parent);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(state, sizeof state, "%s/state", dir);
    agg_store_meta meta = {
        .policy = "ldp-ts-b",
        .mode = "local",
        .params = {.k = 5, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
        .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
        .row_shards = shards,
    };
    agg_store *s = NULL;
    char msg[AGG_STORE_ERRMAX];
    if (agg_store_open(&s, state, &meta, msg)) {
        fprintf(stderr, "open: %s\n", msg);
        return 1;
    }
    static sim m;
    memset(&m, 0, sizeof m);
    m.now_ms = 1800000000000u;
    agg_store_batch_row *rows = calloc((size_t)reports * 2, sizeof *rows);
    uint8_t blob[160];
    memset(blob, 7, sizeof blob);
    agg_store_counters c = {0};
    int warm = commits / 10, rc = 0;
    double cpu0 = 0, wall0 = 0, proc0 = 0, rows_ns = 0, commit_ns = 0;
    for (int i = 0; i < warm + commits && !rc; i++) {
        if (i == warm) {
            cpu0 = thread_cpu_ns();
            proc0 = process_cpu_ns();
            wall0 = bench_now_ns();
        }
        size_t n = 0;
        for (int j = 0; j < reports; j++) {
            issue(&m, &rows[n++]);
            report(&m, &rows[n++]);
        }
        m.now_ms += (uint64_t)reports / 5; /* 5000 assignments/s */
        qsort(rows, n, sizeof *rows, row_cmp);
        uint64_t deleted = 0;
        c.reports += (uint64_t)reports;
        c.policy_version = c.reports;
        double t0 = bench_now_ns();
        rc = agg_store_begin(s) || agg_store_write_batch(s, rows, n);
        double t1 = bench_now_ns();
        rc = rc || agg_store_put_state(s, blob, sizeof blob, &c) ||
             agg_store_prune_decisions(s, m.now_ms, UINT64_MAX, 1024u + n, &deleted);
        double t2 = bench_now_ns();
        rc = rc || agg_store_commit(s);
        if (i >= warm) {
            rows_ns += t1 - t0;
            commit_ns += bench_now_ns() - t2;
        }
        if (rc)
            fprintf(stderr, "commit: %s\n", agg_store_errmsg(s));
    }
    double cpu = thread_cpu_ns() - cpu0, wall = bench_now_ns() - wall0;
    out[3] = (process_cpu_ns() - proc0) / commits / 1e3;
    out[4] = rows_ns / commits / 1e3;
    out[5] = commit_ns / commits / 1e3;
    out[0] = cpu / commits / 1e3;
    out[1] = cpu / commits / reports / 1e3;
    out[2] = wall / commits / 1e3;
    agg_store_close(s);
    free(rows);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

int main(int argc, char **argv)
{
    int reports = 20, commits = 2000, rounds = 3, shards = 1, memstatus = 0;
    const char *parent = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--reports") == 0)
            reports = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--commits") == 0)
            commits = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--sqlite-memstatus") == 0)
            memstatus = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--row-shards") == 0)
            shards = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dir") == 0)
            parent = argv[i + 1];
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (reports < 1 || reports > 4096 || commits < 10 || rounds < 1 || rounds > 99 || shards < 1 ||
        shards > 8) {
        fprintf(stderr, "--reports 1..4096, --commits >= 10, --rounds 1..99, --row-shards 1..8\n");
        return 2;
    }
    agg_store_process_init(memstatus);
    double r[99][6], med[6];
    for (int k = 0; k < rounds; k++)
        if (run_round(parent, reports, commits, (unsigned)shards, r[k]))
            return 1;
    for (int j = 0; j < 6; j++) {
        double v[99];
        for (int k = 0; k < rounds; k++)
            v[k] = r[k][j];
        qsort(v, (size_t)rounds, sizeof v[0], bench_cmp_double);
        med[j] = v[rounds / 2];
    }
    printf("store commit: %d reports + %d decisions per commit, %d row shard(s), %d commits x %d "
           "rounds (median): %.1f us CPU per commit, %.2f us CPU per report (this thread), %.1f us "
           "CPU per commit (all threads), %.1f us wall per commit (the rows %.1f, COMMIT %.1f)\n",
           reports, reports, shards, commits, rounds, med[0], med[1], med[3], med[2], med[4],
           med[5]);
    return 0;
}
