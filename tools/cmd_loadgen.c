/* ldpb loadgen: drives a running ldpb-aggregator with N concurrent simulated devices, each a
 * thread with its own ldpb_client handle (the real client library over the real transport),
 * with rewards drawn from a simulated environment as in `ldpb sim`. Every round is assign, a
 * reward for the assigned arm from the environment, report (privatized by the client, acked by
 * the aggregator once durable). Prints throughput, latency percentiles of assign and report,
 * errors by code, pulls per arm and the pseudo-regret against the true means.
 *
 * Simulated devices keep their privacy ledgers in memory: they are load, not real devices. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "env.h"
#include "exp_spread.h"
#include "ldpb/client.h"
#include "ldpb/rng.h"
#include "ldpb/transport.h"
#include "plan.h"
#include "rand.h"

#define PROG "ldpb loadgen"

#define EXIT_RUNTIME 1 /* unreachable aggregator, failed rounds, output not writable */
#define EXIT_USAGE   2 /* bad arguments, or arguments that do not fit the aggregator */

#define ECHO_MAX 60

/* nanomsg allows 512 sockets per process; one per client, and a few to spare. */
#define CLIENTS_MAX        500u
#define CLIENTS_DEFAULT    16u
#define REPORTS_DEFAULT    10000u
#define REPORTS_MAX        1000000000000ULL
#define DURATION_MAX_S     604800.0 /* a week */
#define DEVICE_REPORTS_DEF 1000u
/* A device's ledger budget is device_reports x LDPB_EPSILON_MAX, at most the ledger's maximum. */
#define DEVICE_REPORTS_MAX 100000u
#define TIMEOUT_DEFAULT_MS 2000u
#define TIMEOUT_MAX_MS     3600000u
#define RATE_MAX           1e9

/* Error counts are kept per ldpb_err value below this; anything else in the last slot. */
#define ERR_SLOTS 32
#define ERR_MSG   400

/* ---- latency histogram ---------------------------------------------------------------------- */

/* Log-linear buckets of nanoseconds: exact below 128 ns, then 64 buckets per power of two, so a
 * bucket's width is at most 1/64 of its lower bound and a percentile read at the bucket's middle
 * is within 0.8% of the true value. Values are clamped at 2^40 ns (18 minutes). */
#define HIST_EXACT   128u
#define HIST_SUB     64u
#define HIST_MAX_LOG 40u
#define HIST_BUCKETS (HIST_EXACT + (HIST_MAX_LOG - 6u) * HIST_SUB)

typedef struct hist {
    uint64_t n, sum_ns, max_ns;
    uint64_t b[HIST_BUCKETS];
} hist;

static unsigned msb64(uint64_t v)
{
    unsigned m = 0;
    while (v >>= 1)
        m++;
    return m;
}

static size_t hist_index(uint64_t v)
{
    if (v < HIST_EXACT)
        return (size_t)v;
    if (v >= (uint64_t)1 << HIST_MAX_LOG)
        v = ((uint64_t)1 << HIST_MAX_LOG) - 1;
    unsigned shift = msb64(v) - 6u; /* v >> shift is in [64, 128) */
    return HIST_EXACT + (size_t)(shift - 1u) * HIST_SUB + (size_t)((v >> shift) - HIST_SUB);
}

/* The middle of bucket `i`, in ns. */
static double hist_value(size_t i)
{
    if (i < HIST_EXACT)
        return (double)i;
    size_t j = i - HIST_EXACT;
    unsigned shift = (unsigned)(j / HIST_SUB) + 1u;
    uint64_t lo = (uint64_t)(j % HIST_SUB + HIST_SUB) << shift;
    return (double)lo + (double)((uint64_t)1 << shift) / 2.0;
}

static void hist_add(hist *h, uint64_t ns)
{
    h->b[hist_index(ns)]++;
    h->n++;
    h->sum_ns += ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

static void hist_merge(hist *into, const hist *h)
{
    for (size_t i = 0; i < HIST_BUCKETS; i++)
        into->b[i] += h->b[i];
    into->n += h->n;
    into->sum_ns += h->sum_ns;
    if (h->max_ns > into->max_ns)
        into->max_ns = h->max_ns;
}

/* The nearest-rank percentile p (in (0, 1]) in ns; 0 for an empty histogram. */
static double hist_percentile(const hist *h, double p)
{
    if (h->n == 0)
        return 0.0;
    uint64_t rank = (uint64_t)ceil(p * (double)h->n);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            double v = hist_value(i); /* the bucket's middle, never above the largest value */
            return v < (double)h->max_ns ? v : (double)h->max_ns;
        }
    }
    return (double)h->max_ns;
}

/* ---- the run -------------------------------------------------------------------------------- */

enum { OP_ASSIGN, OP_REPORT, OP_DEVICE, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"assign", "report", "new client"};

/* Set by SIGINT / SIGTERM (a lock-free atomic, so the handler may store to it). */
static atomic_int stop_signal;

static void on_signal(int sig)
{
    atomic_store(&stop_signal, sig);
}

struct run {
    const char *url;
    uint8_t server_pk[TOOL_KEY_BYTES];
    const agg_env *env;
    uint32_t k;
    uint64_t reports; /* rounds to play in all; 0 with --duration alone: until the deadline */
    uint32_t timeout_ms;
    uint32_t device_reports;
    int raa;        /* --mode report-and-assign: one round trip per report */
    uint32_t batch; /* --batch N: reports queued, then sent N to a frame; 0 off */
    /* --prefill: every client first queues `prefill` reports (an assignment each), then, once
     * all have, they all send theirs in batches; the batch phase is timed apart */
    uint64_t prefill;
    uint32_t filled;
    uint64_t phase2_start_ns;
    atomic_uint_fast64_t phase2_end_ns;
    int allow_raw;
    const char *transport; /* --transport: the clients' dialer by name; NULL: the URL's */
    /* --experiments N: each device's experiment, drawn once as it is created */
    tool_exp_spread spread;
    char (*exp_names)[TOOL_EXP_NAME_MAX + 1];
    atomic_uint_fast64_t *exp_devices, *exp_assigned, *exp_acked;
    int seeded;
    uint32_t ctx_d; /* --contextual D: 0 for the K-armed environment */
    int ctx_local;  /* ... served by ldp-linucb-gaussian: devices choose and privatize */
    uint8_t seed[LDPB_RNG_SEED_BYTES];

    atomic_uint_fast64_t claimed; /* rounds handed out */
    atomic_int fatal;             /* a client could not be created: everyone stops */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t ready;
    int go;
    uint64_t deadline_ns; /* written before `go` */
    /* --rate: round i starts no earlier than start_ns + i * interval_ns (open loop) */
    double interval_ns;
    uint64_t start_ns;
    atomic_uint_fast64_t slot;
};

typedef struct worker {
    struct run *run;
    pthread_t thread;
    agg_rand env_rand;
    ldpb_rng *noise; /* seeded privacy noise with --seed, else NULL (the client's system RNG) */
    hist assign_h, report_h;
    /* --rate: a round's first request's delay past its scheduled start (lag_h), and the round
     * from that scheduled start to its last answer (round_h) */
    hist lag_h, round_h;
    uint64_t rounds, assigned, acked, devices;
    uint64_t frames;                /* report frames sent with --batch */
    uint64_t *pulls;                /* acked reports per arm */
    uint32_t exp;                   /* the current device's experiment (index) */
    const char *exp_name;           /* ... its name; NULL for `default` (no field on the wire) */
    double *ctx_x;                  /* --contextual: the round's K x d features */
    double ctx_regret, ctx_uniform; /* --contextual: over the acked reports */
    uint64_t errors[OP_COUNT][ERR_SLOTS];
    char first_msg[ERR_SLOTS][ERR_MSG];
} worker;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note_error(worker *w, int op, ldpb_err err, const char *msg)
{
    size_t slot = (unsigned)err < ERR_SLOTS ? (size_t)err : ERR_SLOTS - 1;
    if (w->errors[OP_ASSIGN][slot] + w->errors[OP_REPORT][slot] + w->errors[OP_DEVICE][slot] == 0)
        snprintf(w->first_msg[slot], ERR_MSG, "%s: %.*s", op_names[op], (int)ERR_MSG - 16,
                 msg && *msg ? msg : "-");
    w->errors[op][slot]++;
}

/* A new simulated device: a client with a fresh key and an in-memory ledger whose budget covers
 * device_reports reports at any epsilon the aggregator may ask for. */
static int device_new(worker *w, ldpb_client **out)
{
    const struct run *r = w->run;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = r->url;
    memcpy(o.server_public_key, r->server_pk, sizeof o.server_public_key);
    o.ledger_path = NULL; /* in memory: a simulated device */
    o.lifetime_budget = (double)r->device_reports * LDPB_EPSILON_MAX;
    o.per_report_cap = LDPB_EPSILON_MAX;
    o.epsilon_cap = LDPB_EPSILON_MAX;
    o.allow_raw = r->allow_raw;
    o.transport = r->transport;
    o.timeout_ms = r->timeout_ms;
    o.rng = w->noise;
    o.queue_in_memory = r->batch > 0; /* simulated devices, as their ledgers */
    if (r->ctx_local) {
        /* (epsilon, delta) reports: the largest delta budget a ledger takes */
        o.lifetime_delta = LDPB_LEDGER_DELTA_MAX;
        o.per_report_delta_cap = 0.1;
    }
    ldpb_err err = ldpb_client_new(out, &o);
    if (err) {
        char msg[ERR_MSG];
        snprintf(msg, sizeof msg, "ldpb_client_new: %s", ldpb_strerror(err));
        note_error(w, OP_DEVICE, err, msg);
        return -1;
    }
    w->devices++;
    /* A device's experiment is drawn once, from the worker's environment stream (seeded with
     * --seed); one experiment draws nothing, so such runs keep today's streams. */
    w->exp = tool_exp_spread_draw(&r->spread, &w->env_rand);
    w->exp_name = r->spread.is_default ? NULL : r->exp_names[w->exp];
    atomic_fetch_add(&r->exp_devices[w->exp], 1);
    return 0;
}

static void count_assigned(worker *w)
{
    w->assigned++;
    atomic_fetch_add(&w->run->exp_assigned[w->exp], 1);
}

static void count_acked(worker *w, uint64_t n)
{
    w->acked += n;
    atomic_fetch_add(&w->run->exp_acked[w->exp], n);
}

static int should_stop(worker *w)
{
    struct run *r = w->run;
    if (atomic_load(&stop_signal) || atomic_load(&r->fatal))
        return 1;
    if (r->deadline_ns && now_ns() >= r->deadline_ns)
        return 1;
    return r->reports && atomic_fetch_add(&r->claimed, 1) >= r->reports;
}

/* Paces the rounds of all clients together to --rate per second. A schedule that has fallen
 * behind is not caught up in a burst: the printed throughput then shows the rate was not
 * reached. Returns the round's scheduled start: latencies measured from the moment a request
 * was finally sent would leave out the time it waited for a free client or for this thread to
 * be scheduled (coordinated omission), so the round's latency is also taken from here. */
static uint64_t wait_for_slot(struct run *r)
{
    uint64_t i = atomic_fetch_add(&r->slot, 1);
    uint64_t due = r->start_ns + (uint64_t)((double)i * r->interval_ns);
    struct timespec ts = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (atomic_load(&stop_signal))
            break;
    return due;
}

/* Records how late the round's first request leaves against its schedule (due 0: not paced). */
static void note_start(worker *w, uint64_t due)
{
    if (due) {
        uint64_t t = now_ns();
        hist_add(&w->lag_h, t > due ? t - due : 0);
    }
}

/* Records a completed round from its scheduled start (due 0: not paced). */
static void note_round(worker *w, uint64_t due, uint64_t end)
{
    if (due)
        hist_add(&w->round_h, end > due ? end - due : 0);
}

/* Replaces the device when it has played its reports; 0 on success. */
static int next_device(worker *w, ldpb_client **c, uint64_t *on_device)
{
    if (*on_device < w->run->device_reports)
        return 0;
    ldpb_client_free(*c);
    *c = NULL;
    *on_device = 0;
    if (device_new(w, c) != 0) {
        atomic_store(&w->run->fatal, 1);
        return -1;
    }
    return 0;
}

/* Asks for an assignment, timed and checked; 0 on success. */
static int take_assignment(worker *w, ldpb_client *c, ldpb_assignment *a)
{
    uint64_t t0 = now_ns();
    ldpb_err err = ldpb_client_assign_in(c, w->exp_name, NULL, 0, a);
    uint64_t t1 = now_ns();
    if (err) {
        note_error(w, OP_ASSIGN, err, ldpb_client_errmsg(c));
        return -1;
    }
    hist_add(&w->assign_h, t1 - t0);
    count_assigned(w);
    if (a->arm >= w->run->k) {
        char msg[ERR_MSG];
        snprintf(msg, sizeof msg, "the aggregator assigned arm %" PRIu32 " of %" PRIu32, a->arm,
                 w->run->k);
        note_error(w, OP_ASSIGN, LDPB_EPROTO, msg);
        return -1;
    }
    return 0;
}

/* --mode report-and-assign: each round reports the current assignment and receives the next
 * in one request; a device's last report (or one after a failure) goes alone, and the next
 * round starts with an assignment of its own. The report latency is the whole round trip. */
static void raa_loop(worker *w, ldpb_client *c)
{
    struct run *r = w->run;
    uint64_t on_device = 0;
    int have = 0;
    ldpb_assignment a, next;
    while (!should_stop(w)) {
        if (!have && next_device(w, &c, &on_device) != 0)
            break;
        uint64_t due = r->interval_ns > 0.0 ? wait_for_slot(r) : 0;
        note_start(w, due);
        w->rounds++;
        if (!have && take_assignment(w, c, &a) != 0)
            continue;
        double reward = agg_env_sample(r->env, a.arm, &w->env_rand);
        on_device++;
        int last = on_device >= r->device_reports;
        int acked = 0;
        uint64_t t0 = now_ns();
        ldpb_err err = last ? ldpb_client_report(c, &a, reward)
                            : ldpb_client_report_and_assign(c, &a, reward, NULL, 0, &next, &acked);
        uint64_t t1 = now_ns();
        acked = last ? err == LDPB_OK : acked;
        have = 0;
        if (acked) {
            hist_add(&w->report_h, t1 - t0);
            note_round(w, due, t1);
            count_acked(w, 1);
            w->pulls[a.arm]++;
        }
        if (err) {
            note_error(w, acked ? OP_ASSIGN : OP_REPORT, err, ldpb_client_errmsg(c));
            continue;
        }
        if (!last) {
            count_assigned(w);
            if (next.arm >= r->k) {
                note_error(w, OP_ASSIGN, LDPB_EPROTO, "the aggregator assigned an unknown arm");
                continue;
            }
            a = next;
            have = 1;
        }
    }
    /* The worker frees the device it was given; this loop may have replaced it. */
    ldpb_client_free(c);
}

/* --batch N: each round takes N assignments (one request each), queues their reports (the
 * values privatized through the ledger) and sends them in one frame; the report latency is that
 * frame's round trip. A round stops early at the end of the run or of the device. */
static void prefill_loop(worker *w, ldpb_client *c)
{
    struct run *r = w->run;
    uint64_t queued = 0;
    while (queued < r->prefill && !atomic_load(&stop_signal) && !atomic_load(&r->fatal)) {
        w->rounds++;
        ldpb_assignment a;
        if (take_assignment(w, c, &a) != 0)
            continue;
        double reward = agg_env_sample(r->env, a.arm, &w->env_rand);
        ldpb_err err = ldpb_client_queue_report(c, &a, reward);
        if (err) {
            note_error(w, OP_REPORT, err, ldpb_client_errmsg(c));
            continue;
        }
        w->pulls[a.arm]++;
        queued++;
    }
    /* The last client to arrive announces the batch phase and leaves a second of quiet, so
     * that an observer (bench/run_service_bench.sh) can read the aggregator's CPU in between. */
    pthread_mutex_lock(&r->mu);
    if (++r->filled == r->ready) {
        fprintf(stderr, "%s: prefill done: %" PRIu64 " reports queued per client; batches in 1 s\n",
                PROG, r->prefill);
        fflush(stderr);
        struct timespec quiet = {1, 0};
        nanosleep(&quiet, NULL);
        r->phase2_start_ns = now_ns();
        pthread_cond_broadcast(&r->cv);
    }
    while (r->filled < r->ready)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    while (ldpb_client_queued(c) > 0) {
        ldpb_flush_stats st;
        uint64_t t0 = now_ns();
        ldpb_err err = ldpb_client_flush(c, r->batch, &st);
        uint64_t t1 = now_ns();
        w->frames += (st.acked + st.duplicates + st.refused + r->batch - 1) / r->batch;
        count_acked(w, st.acked);
        if (err) {
            note_error(w, OP_REPORT, err, ldpb_client_errmsg(c));
            break;
        }
        hist_add(&w->report_h, t1 - t0);
    }
    uint64_t end = now_ns(), prev = atomic_load(&r->phase2_end_ns);
    while (end > prev && !atomic_compare_exchange_weak(&r->phase2_end_ns, &prev, end))
        ;
    ldpb_client_free(c);
}

static void batch_loop(worker *w, ldpb_client *c)
{
    struct run *r = w->run;
    if (r->prefill) {
        prefill_loop(w, c);
        return;
    }
    uint64_t on_device = 0;
    int stop = 0;
    while (!stop) {
        if (next_device(w, &c, &on_device) != 0)
            break;
        uint32_t queued = 0;
        while (queued < r->batch && on_device < r->device_reports) {
            if (should_stop(w)) {
                stop = 1;
                break;
            }
            if (r->interval_ns > 0.0)
                note_start(w, wait_for_slot(r));
            w->rounds++;
            ldpb_assignment a;
            if (take_assignment(w, c, &a) != 0)
                continue;
            double reward = agg_env_sample(r->env, a.arm, &w->env_rand);
            on_device++;
            ldpb_err err = ldpb_client_queue_report(c, &a, reward);
            if (err) {
                note_error(w, OP_REPORT, err, ldpb_client_errmsg(c));
                continue;
            }
            w->pulls[a.arm]++; /* taken back below for the reports not acked */
            queued++;
        }
        if (!queued)
            continue;
        ldpb_flush_stats st;
        uint64_t t0 = now_ns();
        ldpb_err err = ldpb_client_flush(c, r->batch, &st);
        uint64_t t1 = now_ns();
        w->frames++;
        if (err)
            note_error(w, OP_REPORT, err, ldpb_client_errmsg(c));
        else
            hist_add(&w->report_h, t1 - t0);
        count_acked(w, st.acked);
        if (st.acked < queued) {
            /* Which arms went unacked is not known per report here: the pulls then count the
             * reports queued, and the errors say how many failed. */
            char msg[ERR_MSG];
            snprintf(msg, sizeof msg,
                     "%zu of a batch of %" PRIu32 " not acknowledged (%zu duplicates, %zu "
                     "refused, %zu left queued)",
                     (size_t)(queued - st.acked), queued, st.duplicates, st.refused, st.left);
            if (!err)
                note_error(w, OP_REPORT, LDPB_EBUSY, msg);
        }
    }
    ldpb_client_free(c);
}

/* --contextual D: each round, every arm's features are an independent uniform direction of
 * the positive orthant of R^d (unit norm, as in Shariff & Sheffet 2018's experiments, sec. 5,
 * restricted to the orthant so the mean reward lies in [0, 1]); the reward is <theta, x> +
 * 0.1 N(0, 1) clipped to [0, 1], theta = (1, ..., 1)/sqrt(d). */
static void ctx_features(worker *w)
{
    uint32_t d = w->run->ctx_d;
    for (uint32_t a = 0; a < w->run->k; a++) {
        double *x = w->ctx_x + (size_t)a * d, s = 0.0;
        for (uint32_t j = 0; j < d; j++) {
            x[j] = fabs(agg_rand_normal(&w->env_rand));
            s += x[j] * x[j];
        }
        s = sqrt(s);
        for (uint32_t j = 0; j < d; j++)
            x[j] = s > 0.0 ? x[j] / s : (j == 0);
    }
}

static double ctx_mean(const worker *w, uint32_t arm)
{
    uint32_t d = w->run->ctx_d;
    double m = 0.0;
    for (uint32_t j = 0; j < d; j++)
        m += w->ctx_x[(size_t)arm * d + j];
    return m / sqrt((double)d);
}

static double ctx_reward(worker *w, uint32_t arm)
{
    double y = ctx_mean(w, arm) + 0.1 * agg_rand_normal(&w->env_rand);
    return y < 0.0 ? 0.0 : y > 1.0 ? 1.0 : y;
}

/* The round's regret against its best arm, and uniform play's expected regret. */
static void ctx_account(worker *w, uint32_t arm)
{
    double best = 0.0, sum = 0.0;
    for (uint32_t a = 0; a < w->run->k; a++) {
        double m = ctx_mean(w, a);
        best = m > best ? m : best;
        sum += m;
    }
    w->ctx_regret += best - ctx_mean(w, arm);
    w->ctx_uniform += best - sum / (double)w->run->k;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct run *r = w->run;
    ldpb_client *c = NULL;
    int ok = device_new(w, &c) == 0;
    if (!ok)
        atomic_store(&r->fatal, 1);

    pthread_mutex_lock(&r->mu);
    r->ready++;
    pthread_cond_broadcast(&r->cv);
    while (!r->go)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);

    uint64_t on_device = 0;
    if (!ok && r->prefill) { /* the prefill barrier counts this client as arrived */
        pthread_mutex_lock(&r->mu);
        if (++r->filled == r->ready)
            pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    if (ok && (r->batch || r->raa)) {
        if (r->batch)
            batch_loop(w, c);
        else
            raa_loop(w, c);
        c = NULL; /* freed there (it may have been replaced) */
    }
    while (ok && !r->batch && !r->raa && !should_stop(w)) {
        if (on_device >= r->device_reports) {
            ldpb_client_free(c);
            c = NULL;
            on_device = 0;
            if (device_new(w, &c) != 0) {
                atomic_store(&r->fatal, 1);
                break;
            }
        }
        uint64_t due = r->interval_ns > 0.0 ? wait_for_slot(r) : 0;
        note_start(w, due);
        w->rounds++;
        ldpb_assignment a;
        uint64_t t0 = now_ns();
        if (r->ctx_d)
            ctx_features(w);
        ldpb_err err =
            r->ctx_local ? ldpb_client_assign_local_in(c, w->exp_name, w->ctx_x, r->k, r->ctx_d, &a)
            : r->ctx_d
                ? ldpb_client_assign_in(c, w->exp_name, w->ctx_x, (size_t)r->k * r->ctx_d, &a)
                : ldpb_client_assign_in(c, w->exp_name, NULL, 0, &a);
        uint64_t t1 = now_ns();
        if (err) {
            note_error(w, OP_ASSIGN, err, ldpb_client_errmsg(c));
            continue;
        }
        hist_add(&w->assign_h, t1 - t0);
        count_assigned(w);
        if (a.arm >= r->k) {
            char msg[ERR_MSG];
            snprintf(msg, sizeof msg, "the aggregator assigned arm %" PRIu32 " of %" PRIu32, a.arm,
                     r->k);
            note_error(w, OP_ASSIGN, LDPB_EPROTO, msg);
            continue;
        }
        double reward =
            r->ctx_d ? ctx_reward(w, a.arm) : agg_env_sample(r->env, a.arm, &w->env_rand);
        on_device++; /* the report may spend from the ledger even if it fails */
        t0 = now_ns();
        if (r->ctx_local)
            err = ldpb_client_report_local(c, &a, w->ctx_x + (size_t)a.arm * r->ctx_d, r->ctx_d,
                                           reward);
        else
            err = r->ctx_d ? ldpb_client_report_context(c, &a, w->ctx_x + (size_t)a.arm * r->ctx_d,
                                                        r->ctx_d, reward)
                           : ldpb_client_report(c, &a, reward);
        t1 = now_ns();
        if (err) {
            note_error(w, OP_REPORT, err, ldpb_client_errmsg(c));
            continue;
        }
        hist_add(&w->report_h, t1 - t0);
        note_round(w, due, t1);
        count_acked(w, 1);
        w->pulls[a.arm]++;
        if (r->ctx_d)
            ctx_account(w, a.arm);
    }
    ldpb_client_free(c);
    return NULL;
}

/* ---- arguments ------------------------------------------------------------------------------ */

struct args {
    const char *connect, *server_key, *clients, *reports, *duration, *means, *laws, *seed, *timeout,
        *device_reports, *rate, *mode, *batch, *prefill, *contextual, *experiments, *zipf,
        *experiment_prefix, *transport;
    int per_experiment;
};

static const tool_option options[] = {
    {"connect", TOOL_OPT_VALUE, offsetof(struct args, connect)},
    {"server-key", TOOL_OPT_VALUE, offsetof(struct args, server_key)},
    {"clients", TOOL_OPT_VALUE, offsetof(struct args, clients)},
    {"reports", TOOL_OPT_VALUE, offsetof(struct args, reports)},
    {"duration", TOOL_OPT_VALUE, offsetof(struct args, duration)},
    {"means", TOOL_OPT_VALUE, offsetof(struct args, means)},
    {"laws", TOOL_OPT_VALUE, offsetof(struct args, laws)},
    {"seed", TOOL_OPT_VALUE, offsetof(struct args, seed)},
    {"timeout-ms", TOOL_OPT_VALUE, offsetof(struct args, timeout)},
    {"device-reports", TOOL_OPT_VALUE, offsetof(struct args, device_reports)},
    {"rate", TOOL_OPT_VALUE, offsetof(struct args, rate)},
    {"mode", TOOL_OPT_VALUE, offsetof(struct args, mode)},
    {"batch", TOOL_OPT_VALUE, offsetof(struct args, batch)},
    {"prefill", TOOL_OPT_VALUE, offsetof(struct args, prefill)},
    {"contextual", TOOL_OPT_VALUE, offsetof(struct args, contextual)},
    {"experiments", TOOL_OPT_VALUE, offsetof(struct args, experiments)},
    {"zipf", TOOL_OPT_VALUE, offsetof(struct args, zipf)},
    {"experiment-prefix", TOOL_OPT_VALUE, offsetof(struct args, experiment_prefix)},
    {"per-experiment", TOOL_OPT_FLAG, offsetof(struct args, per_experiment)},
    {"transport", TOOL_OPT_VALUE, offsetof(struct args, transport)},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb loadgen --connect URL --server-key FILE [--clients N] [--reports M]\n"
            "                    [--duration S] [--means LIST | --laws LIST] [--seed S]\n"
            "                    [--timeout-ms MS] [--device-reports R] [--rate R]\n"
            "                    [--mode two-trips|report-and-assign] [--batch N [--prefill P]]\n"
            "                    [--contextual D] [--experiments N [--zipf S]]\n"
            "                    [--experiment-prefix P] [--per-experiment]\n"
            "                    [--transport nanomsg|sp]\n"
            "\n"
            "Drives a running ldpb-aggregator with N simulated devices at once, each a thread\n"
            "with its own ldpb_client (the real client library over the real transport). A\n"
            "round is: assign, draw the assigned arm's reward from the environment, report it\n"
            "(privatized by the client; the aggregator acks once the report is durable).\n"
            "Simulated devices keep their privacy ledgers in memory, not on disk.\n"
            "Prints throughput, latency percentiles of assign and report, errors by code,\n"
            "pulls per arm and the pseudo-regret sum(best mean - mean of the assigned arm)\n"
            "over the acked reports.\n"
            "\n"
            "options:\n"
            "  --connect URL         the aggregator, tcp://HOST:PORT or ipc://PATH (required)\n"
            "  --server-key FILE     its public key file, aggregator.pub (required)\n"
            "  --clients N           concurrent devices (threads), [1, %u] (default %u)\n"
            "  --reports M           rounds in all, shared by the clients, [1, 1e12]\n"
            "                        (default %u, or no limit with --duration)\n"
            "  --duration S          stop after S seconds, (0, %g]; with --reports, whichever\n"
            "                        comes first\n"
            "  --means LIST          Bernoulli arms, one mean in [0, 1] per aggregator arm\n"
            "  --laws LIST           any reward laws, as in `ldpb sim`: bernoulli:P, beta:A:B,\n"
            "                        twopoint:LO:HI, uniform:LO:HI, each optionally *N\n"
            "                        (default: Bernoulli means evenly spaced from 0.75 down to\n"
            "                        0.25, as many as the aggregator has arms)\n"
            "  --seed S              seed the environment and the devices' privacy noise from\n"
            "                        the text S (simulation only: the noise is then public);\n"
            "                        default: the system's secure generator\n"
            "  --timeout-ms MS       a client's wait for one reply, [1, %u] (default %u);\n"
            "                        a call makes up to 3 attempts\n"
            "  --device-reports R    reports per simulated device before it is replaced by a\n"
            "                        fresh one (new key, new ledger), [1, %u] (default %u)\n"
            "  --rate R              start at most R rounds per second in all, (0, %g]\n"
            "                        (open loop: latency at a given load); default: as fast\n"
            "                        as the clients go\n"
            "  --mode M              two-trips (default): an assign request, then a report\n"
            "                        request; report-and-assign: each report carries the request\n"
            "                        for the next assignment, one round trip per report\n"
            "  --batch N             take N assignments, queue their reports, send them in one\n"
            "                        frame (report_batch), [1, %u]; not with --mode\n"
            "  --prefill P           with --batch: every client first queues P reports, then all\n"
            "                        send theirs in batches at once; that phase is timed on its\n"
            "                        own (its throughput and the report latency of a flush)\n"
            "  --contextual D        a contextual aggregator (linucb, jdp-linucb-*, configured\n"
            "                        with d = D): each round sends a feature set, one unit\n"
            "                        vector of the positive orthant of R^D per arm, and\n"
            "                        reports the reward <theta, x> + 0.1 N(0, 1) clipped to\n"
            "                        [0, 1], theta = (1, ..., 1)/sqrt(D); arms x D <= 256;\n"
            "                        prints the regret against each round's best arm\n"
            "                        (ldp-linucb-gaussian: devices choose, privatize)\n",
            CLIENTS_MAX, CLIENTS_DEFAULT, REPORTS_DEFAULT, DURATION_MAX_S, TIMEOUT_MAX_MS,
            TIMEOUT_DEFAULT_MS, DEVICE_REPORTS_MAX, DEVICE_REPORTS_DEF, RATE_MAX,
            LDPB_CLIENT_BATCH_MAX);
    fprintf(f,
            "  --experiments N       spread the devices over N experiments of one aggregator,\n"
            "                        [1, %u], named P0 .. P{N-1} (--experiment-prefix P,\n"
            "                        default e); each device's experiment is drawn once, when\n"
            "                        it is created (seeded by --seed). Default 1: the\n"
            "                        experiment `default` (or P0 with a prefix). Every\n"
            "                        experiment must serve the first one's arm count and model\n"
            "  --zipf S              experiment i is drawn with probability proportional to\n"
            "                        1/(i+1)^S, S in [0, %g] (default 0: uniform)\n"
            "  --experiment-prefix P the experiments' names without their index\n"
            "  --per-experiment      print devices, assignments and acked reports per\n"
            "                        experiment, with each one's report count at the aggregator\n"
            "                        before and after the run (one status request each)\n"
            "  --transport T         the clients' dialer: nanomsg (default: nanomsg's REQ\n"
            "                        socket and its threads) or sp (the native dialer: the\n"
            "                        same wire, each request a write and a read on the\n"
            "                        client's own thread, less CPU per round trip)\n"
            "  -h, --help            print this help and exit\n"
            "\n"
            "Exit status: 0 every round acked; 1 a round failed (the results are printed\n"
            "anyway), the run was interrupted, or the aggregator cannot be reached; 2 bad\n"
            "arguments, or --means/--laws with another arm count than the aggregator's.\n",
            TOOL_EXP_MAX, TOOL_ZIPF_MAX);
}

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const tool_parse_spec spec = {PROG, options, sizeof options / sizeof options[0], usage,
                                         0};
    memset(a, 0, sizeof *a);
    return tool_parse_options(&spec, argc, argv, a);
}

static int parse_uint(const char *opt, const char *text, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char e[ECHO_MAX + 4];
    const char *why = simplan_parse_count(text, out);
    if (why) {
        fprintf(stderr, "%s: %s '%s' %s\n", PROG, opt, tool_echo(e, sizeof e, text), why);
        return EXIT_USAGE;
    }
    if (*out < lo || *out > hi) {
        fprintf(stderr, "%s: %s %s outside [%" PRIu64 ", %" PRIu64 "]\n", PROG, opt,
                tool_echo(e, sizeof e, text), lo, hi);
        return EXIT_USAGE;
    }
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* A finite number filling all of text[0, n) but for blanks around it. */
static int parse_number(const char *text, size_t n, double *out)
{
    char tmp[64];
    while (n > 0 && is_blank(*text)) {
        text++;
        n--;
    }
    while (n > 0 && is_blank(text[n - 1]))
        n--;
    if (n == 0 || n >= sizeof tmp)
        return -1;
    memcpy(tmp, text, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + n || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* --means "0.9,0.8,0.5" into an environment of Bernoulli arms. */
static int parse_means(const char *text, agg_env **out)
{
    char e[ECHO_MAX + 4];
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    if (n > AGG_ENV_K_MAX) {
        fprintf(stderr, "%s: --means has %zu items, more than %u\n", PROG, n,
                (unsigned)AGG_ENV_K_MAX);
        return EXIT_USAGE;
    }
    agg_law *laws = calloc(n, sizeof *laws);
    if (!laws) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return EXIT_RUNTIME;
    }
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        double v;
        if (parse_number(p, len, &v) != 0 || !(v >= 0.0 && v <= 1.0)) {
            char item[ECHO_MAX + 4];
            snprintf(item, sizeof item, "%.*s", (int)(len < ECHO_MAX ? len : ECHO_MAX), p);
            fprintf(stderr, "%s: --means: item %zu '%s' is not a mean in [0, 1]\n", PROG, i + 1,
                    tool_echo(e, sizeof e, item));
            free(laws);
            return EXIT_USAGE;
        }
        laws[i] = (agg_law){AGG_LAW_BERNOULLI, v, 0.0};
        p = comma ? comma + 1 : p + len;
    }
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_env_new(out, laws, (uint32_t)n, msg);
    free(laws);
    if (err) {
        fprintf(stderr, "%s: --means: %s\n", PROG, msg);
        return err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    return 0;
}

/* ---- the report ----------------------------------------------------------------------------- */

static void print_latency(FILE *f, const char *name, const hist *h)
{
    if (h->n == 0) {
        fprintf(f, "latency %-7s no successful call\n", name);
        return;
    }
    fprintf(f,
            "latency %-7s p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms  mean %.3f ms  "
            "(%" PRIu64 " calls)\n",
            name, hist_percentile(h, 0.50) / 1e6, hist_percentile(h, 0.99) / 1e6,
            hist_percentile(h, 0.999) / 1e6, (double)h->max_ns / 1e6,
            (double)h->sum_ns / (double)h->n / 1e6, h->n);
}

struct totals {
    hist assign_h, report_h, lag_h, round_h;
    uint64_t rounds, assigned, acked, devices, failed, frames;
    uint64_t *pulls;
    double ctx_regret, ctx_uniform;
    uint64_t errors[OP_COUNT][ERR_SLOTS];
    const char *first_msg[ERR_SLOTS];
};

static void print_errors(FILE *f, const struct totals *t)
{
    if (t->failed == 0) {
        fprintf(f, "errors          0\n");
        return;
    }
    fprintf(f, "errors          %" PRIu64 "\n", t->failed);
    for (size_t s = 0; s < ERR_SLOTS; s++) {
        uint64_t sum = t->errors[OP_ASSIGN][s] + t->errors[OP_REPORT][s] + t->errors[OP_DEVICE][s];
        if (sum == 0)
            continue;
        const char *name = s == ERR_SLOTS - 1 ? "other" : ldpb_errname((ldpb_err)s);
        fprintf(f,
                "  %-13s %" PRIu64 " (assign %" PRIu64 ", report %" PRIu64 ", new client %" PRIu64
                ")\n",
                name, sum, t->errors[OP_ASSIGN][s], t->errors[OP_REPORT][s],
                t->errors[OP_DEVICE][s]);
        fprintf(f, "  %-13s first: %s\n", "", t->first_msg[s] ? t->first_msg[s] : "-");
    }
}

/* The environment in env.h's list syntax, cut with "..." if it is long. */
static void env_text(const agg_env *env, char *dst, size_t cap)
{
    size_t need = simplan_env_text(env, dst, cap);
    if (need >= cap && cap > 4)
        memcpy(dst + cap - 4, "...", 4);
}

/* ---- experiments ---------------------------------------------------------------------------- */

/* --experiments, --zipf and --experiment-prefix into r->spread, the names and the counters.
 * Returns 0, or an exit status after printing the problem. */
static int setup_experiments(struct run *r, const struct args *a)
{
    uint64_t n = 1;
    double zipf = 0.0;
    char e[ECHO_MAX + 4];
    if (a->experiments && parse_uint("--experiments", a->experiments, 1, TOOL_EXP_MAX, &n))
        return EXIT_USAGE;
    if (a->zipf && (parse_number(a->zipf, strlen(a->zipf), &zipf) != 0 ||
                    !(zipf >= 0.0 && zipf <= TOOL_ZIPF_MAX))) {
        fprintf(stderr, "%s: --zipf '%s' is not an exponent in [0, %g]\n", PROG,
                tool_echo(e, sizeof e, a->zipf), TOOL_ZIPF_MAX);
        return EXIT_USAGE;
    }
    char why[160];
    ldpb_err err =
        tool_exp_spread_init(&r->spread, (uint32_t)n, zipf, a->experiment_prefix, why, sizeof why);
    if (err) {
        fprintf(stderr, "%s: --experiment-prefix '%s': %s\n", PROG,
                tool_echo(e, sizeof e, a->experiment_prefix ? a->experiment_prefix : ""), why);
        return err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    r->exp_names = calloc(n, sizeof *r->exp_names);
    r->exp_devices = calloc(n, sizeof *r->exp_devices);
    r->exp_assigned = calloc(n, sizeof *r->exp_assigned);
    r->exp_acked = calloc(n, sizeof *r->exp_acked);
    if (!r->exp_names || !r->exp_devices || !r->exp_assigned || !r->exp_acked) {
        fprintf(stderr, "%s: out of memory for %" PRIu64 " experiments\n", PROG, n);
        return EXIT_RUNTIME;
    }
    for (uint32_t i = 0; i < n; i++) {
        tool_exp_spread_name(&r->spread, i, r->exp_names[i]);
        atomic_init(&r->exp_devices[i], 0);
        atomic_init(&r->exp_assigned[i], 0);
        atomic_init(&r->exp_acked[i], 0);
    }
    return 0;
}

static void free_experiments(struct run *r)
{
    tool_exp_spread_free(&r->spread);
    free(r->exp_names);
    free(r->exp_devices);
    free(r->exp_assigned);
    free(r->exp_acked);
}

/* The name to send for experiment i: NULL for `default` (no field on the wire). */
static const char *exp_wire_name(const struct run *r, uint32_t i)
{
    return r->spread.is_default ? NULL : r->exp_names[i];
}

/* --per-experiment: every experiment's report count at the aggregator into out[]; before the
 * run (`first` non-NULL) each must serve first's arm count and model. 0, or an exit status. */
static int fetch_exp_reports(const struct run *r, const char *url, uint32_t timeout_ms,
                             const ldpb_status *first, uint64_t *out)
{
    char msg[2 * TOOL_STATUS_STRING_MAX];
    for (uint32_t i = 0; i < r->spread.n; i++) {
        ldpb_status st;
        ldpb_err err = tool_status_fetch(url, r->server_pk, NULL, exp_wire_name(r, i), timeout_ms,
                                         &st, msg, sizeof msg);
        if (err) {
            fprintf(stderr, "%s: experiment %s: %s\n", PROG, r->exp_names[i], msg);
            return EXIT_RUNTIME;
        }
        out[i] = st.reports;
        int same = !first || (st.n_arms == first->n_arms && strcmp(st.model, first->model) == 0);
        if (!same)
            fprintf(stderr,
                    "%s: experiment %s serves %" PRIu32 " arms (model %s), not the %" PRIu32
                    " arms (model %s) of %s: loadgen plays one environment\n",
                    PROG, r->exp_names[i], st.n_arms, st.model, first->n_arms, first->model,
                    r->exp_names[0]);
        ldpb_status_clear(&st);
        if (!same)
            return EXIT_USAGE;
    }
    return 0;
}

static void print_per_experiment(FILE *f, const struct run *r, const uint64_t *before,
                                 const uint64_t *after)
{
    fprintf(f, "\n%-24s %9s %12s %12s %24s\n", "experiment", "devices", "assignments", "acked",
            "daemon reports");
    for (uint32_t i = 0; i < r->spread.n; i++) {
        char daemon[64] = "unknown";
        if (after)
            snprintf(daemon, sizeof daemon, "%" PRIu64 " -> %" PRIu64, before[i], after[i]);
        fprintf(f, "%-24s %9" PRIu64 " %12" PRIu64 " %12" PRIu64 " %24s\n", r->exp_names[i],
                (uint64_t)atomic_load(&r->exp_devices[i]),
                (uint64_t)atomic_load(&r->exp_assigned[i]), (uint64_t)atomic_load(&r->exp_acked[i]),
                daemon);
    }
}

/* ---- the command ---------------------------------------------------------------------------- */

int cmd_loadgen(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.connect)
        return tool_usage_error(PROG, "missing --connect URL (the aggregator's endpoint)", NULL);
    if (!a.server_key)
        return tool_usage_error(PROG, "missing --server-key FILE (the aggregator's aggregator.pub)",
                                NULL);
    if (a.connect[0] == '\0' || strlen(a.connect) > TOOL_URL_MAX)
        return tool_usage_error(PROG, "--connect must be a nanomsg URL of 1 to 127 bytes, not",
                                a.connect);
    if (a.means && a.laws)
        return tool_usage_error(PROG, "give --means or --laws, not both", NULL);
    if (a.transport && !ldpb_tp_named(a.transport))
        return tool_usage_error(PROG, "--transport must be nanomsg or sp, not", a.transport);
    if (a.contextual && (a.means || a.laws))
        return tool_usage_error(PROG, "--contextual draws its own rewards: no --means or --laws",
                                NULL);
    uint64_t ctx_d = 0;
    if (a.contextual && parse_uint("--contextual", a.contextual, 1, 64, &ctx_d))
        return EXIT_USAGE;

    uint64_t clients = CLIENTS_DEFAULT, reports = 0, timeout = TIMEOUT_DEFAULT_MS;
    uint64_t device_reports = DEVICE_REPORTS_DEF;
    double duration = 0.0;
    if (a.clients && parse_uint("--clients", a.clients, 1, CLIENTS_MAX, &clients))
        return EXIT_USAGE;
    if (a.reports && parse_uint("--reports", a.reports, 1, REPORTS_MAX, &reports))
        return EXIT_USAGE;
    if (a.timeout && parse_uint("--timeout-ms", a.timeout, 1, TIMEOUT_MAX_MS, &timeout))
        return EXIT_USAGE;
    if (a.device_reports &&
        parse_uint("--device-reports", a.device_reports, 1, DEVICE_REPORTS_MAX, &device_reports))
        return EXIT_USAGE;
    if (a.duration) {
        char e[ECHO_MAX + 4];
        if (parse_number(a.duration, strlen(a.duration), &duration) != 0 ||
            !(duration > 0.0 && duration <= DURATION_MAX_S)) {
            fprintf(stderr, "%s: --duration '%s' is not a number of seconds in (0, %g]\n", PROG,
                    tool_echo(e, sizeof e, a.duration), DURATION_MAX_S);
            return EXIT_USAGE;
        }
    }
    double rate = 0.0;
    int raa = 0;
    uint64_t batch = 0;
    if (a.mode && strcmp(a.mode, "report-and-assign") == 0)
        raa = 1;
    else if (a.mode && strcmp(a.mode, "two-trips") != 0)
        return tool_usage_error(PROG, "--mode must be two-trips or report-and-assign, not", a.mode);
    if (a.batch && parse_uint("--batch", a.batch, 1, LDPB_CLIENT_BATCH_MAX, &batch))
        return EXIT_USAGE;
    uint64_t prefill = 0;
    if (a.prefill &&
        (!a.batch || parse_uint("--prefill", a.prefill, 1, LDPB_CLIENT_QUEUE_MAX, &prefill)))
        return a.batch ? EXIT_USAGE : tool_usage_error(PROG, "--prefill needs --batch", NULL);
    if (a.batch && a.mode)
        return tool_usage_error(PROG, "--batch sends its own frames: give it without --mode", NULL);
    /* A contextual report carries its arm's features, which batches and report_and_assign do
     * not (docs/protocol.md, "Contexts"). */
    if (a.contextual && (a.batch || (a.mode && strcmp(a.mode, "two-trips") != 0)))
        return tool_usage_error(
            PROG,
            "--contextual sends each report alone: not with --batch or --mode report-and-assign",
            NULL);
    if (a.rate) {
        char e[ECHO_MAX + 4];
        if (parse_number(a.rate, strlen(a.rate), &rate) != 0 || !(rate > 0.0 && rate <= RATE_MAX)) {
            fprintf(stderr, "%s: --rate '%s' is not a number of rounds per second in (0, %g]\n",
                    PROG, tool_echo(e, sizeof e, a.rate), RATE_MAX);
            return EXIT_USAGE;
        }
    }
    if (!a.reports && !a.duration)
        reports = REPORTS_DEFAULT;
    if (a.seed && a.seed[0] == '\0')
        return tool_usage_error(
            PROG, "--seed needs a non-empty text (omit it for secure randomness)", NULL);

    agg_env *env = NULL;
    if (a.means && (rc = parse_means(a.means, &env)) != 0)
        return rc;
    if (a.laws) {
        char msg[AGG_ERRMSG_MAX];
        ldpb_err err = agg_env_parse(&env, a.laws, msg);
        if (err) {
            fprintf(stderr, "%s: --laws: %s\n", PROG, msg);
            return err == LDPB_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
        }
    }

    struct run *run = NULL;
    worker *workers = NULL;
    uint64_t *exp_before = NULL, *exp_after = NULL; /* --per-experiment */
    ldpb_status before, after;
    memset(&before, 0, sizeof before);
    memset(&after, 0, sizeof after);
    struct totals t;
    memset(&t, 0, sizeof t);
    uint32_t started = 0;
    int sync_ok = 0;
    struct sigaction old_int, old_term, old_pipe;
    int handlers = 0;
    char msg[2 * TOOL_STATUS_STRING_MAX];

    run = calloc(1, sizeof *run);
    if (!run) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = EXIT_RUNTIME;
        goto done;
    }
    if ((rc = setup_experiments(run, &a)) != 0)
        goto done;
    if (tool_load_server_key(PROG, a.server_key, run->server_pk)) {
        rc = EXIT_RUNTIME;
        goto done;
    }

    /* The aggregator first: its arm count, model and report total (of the first experiment). */
    uint32_t status_timeout = (uint32_t)timeout;
    ldpb_err err = tool_status_fetch(a.connect, run->server_pk, NULL, exp_wire_name(run, 0),
                                     status_timeout, &before, msg, sizeof msg);
    if (err) {
        if (err == LDPB_EINVAL)
            fprintf(stderr, "%s: --connect: %s (expected tcp://HOST:PORT or ipc://PATH)\n", PROG,
                    msg);
        else
            fprintf(stderr, "%s: %s\n", PROG, msg);
        rc = err == LDPB_EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        goto done;
    }
    if (a.per_experiment) {
        exp_before = calloc(run->spread.n, sizeof *exp_before);
        exp_after = calloc(run->spread.n, sizeof *exp_after);
        if (!exp_before || !exp_after) {
            fprintf(stderr, "%s: out of memory\n", PROG);
            rc = EXIT_RUNTIME;
            goto done;
        }
        if ((rc = fetch_exp_reports(run, a.connect, status_timeout, &before, exp_before)) != 0)
            goto done;
    }
    uint32_t k = before.n_arms;
    if (k < 2) {
        fprintf(stderr,
                "%s: the aggregator at %s reports %" PRIu32 " arms; a bandit has 2 or more\n", PROG,
                a.connect, k);
        rc = EXIT_RUNTIME;
        goto done;
    }
    int ctx_local = ctx_d && strcmp(before.policy, "ldp-linucb-gaussian") == 0;
    if (ctx_d && !ctx_local && ctx_d * k > 256) {
        fprintf(stderr,
                "%s: --contextual %" PRIu64 " with the %" PRIu32
                " arms of the aggregator at %s is more than the 256 context values a request "
                "carries\n",
                PROG, ctx_d, k, a.connect);
        rc = EXIT_USAGE;
        goto done;
    }
    if (env && agg_env_arms(env) != k) {
        fprintf(stderr,
                "%s: --%s has %" PRIu32 " arms but the aggregator at %s serves %" PRIu32
                " (policy %s): give one per arm\n",
                PROG, a.means ? "means" : "laws", agg_env_arms(env), a.connect, k, before.policy);
        rc = EXIT_USAGE;
        goto done;
    }
    if (!env) {
        double *means = calloc(k, sizeof *means);
        agg_law *laws = calloc(k, sizeof *laws);
        char emsg[AGG_ERRMSG_MAX];
        err = means && laws ? agg_env_ss19_means(AGG_SS19_C2, k, means) : LDPB_ENOMEM;
        for (uint32_t i = 0; !err && i < k; i++)
            laws[i] = (agg_law){AGG_LAW_BERNOULLI, means[i], 0.0};
        if (!err)
            err = agg_env_new(&env, laws, k, emsg);
        free(means);
        free(laws);
        if (err) {
            fprintf(stderr, "%s: cannot build the default environment: %s\n", PROG,
                    ldpb_strerror(err));
            rc = EXIT_RUNTIME;
            goto done;
        }
    }

    run->url = a.connect;
    run->transport = a.transport;
    run->env = env;
    run->k = k;
    run->reports = reports;
    run->timeout_ms = (uint32_t)timeout;
    run->device_reports = (uint32_t)device_reports;
    run->raa = raa;
    run->batch = (uint32_t)batch;
    run->prefill = prefill;
    atomic_init(&run->phase2_end_ns, 0);
    run->ctx_d = (uint32_t)ctx_d;
    run->ctx_local = ctx_local;
    /* Central and non-private aggregators assign RAW: the devices opt in to sending rewards. */
    run->allow_raw = strcmp(before.model, "local") != 0;
    run->seeded = a.seed != NULL;
    if (a.seed)
        ldpb_rng_seed_from_text(run->seed, a.seed);
    atomic_init(&run->claimed, 0);
    atomic_init(&run->fatal, 0);
    atomic_init(&run->slot, 0);
    run->interval_ns = rate > 0.0 ? 1e9 / rate : 0.0;
    if (pthread_mutex_init(&run->mu, NULL) != 0 || pthread_cond_init(&run->cv, NULL) != 0) {
        fprintf(stderr, "%s: cannot create a mutex\n", PROG);
        rc = EXIT_RUNTIME;
        goto done;
    }
    sync_ok = 1;

    workers = calloc(clients, sizeof *workers);
    t.pulls = calloc(k, sizeof *t.pulls);
    if (!workers || !t.pulls) {
        fprintf(stderr, "%s: out of memory for %" PRIu64 " clients\n", PROG, clients);
        rc = EXIT_RUNTIME;
        goto done;
    }
    ldpb_rng *sys = NULL;
    if (!run->seeded && ldpb_rng_new_system(&sys) != LDPB_OK) {
        fprintf(stderr, "%s: cannot create the random generator\n", PROG);
        rc = EXIT_RUNTIME;
        goto done;
    }
    for (uint32_t i = 0; i < clients; i++) {
        worker *w = &workers[i];
        w->run = run;
        w->pulls = calloc(k, sizeof *w->pulls);
        if (ctx_d)
            w->ctx_x = calloc((size_t)k * ctx_d, sizeof *w->ctx_x);
        if (!w->pulls || (ctx_d && !w->ctx_x)) {
            err = LDPB_ENOMEM;
            break;
        }
        if (run->seeded) {
            /* Stream 2i seeds the environment, stream 2i+1 is the device's privacy noise. */
            ldpb_rng *s = NULL;
            err = ldpb_rng_new_seeded_stream(&s, run->seed, 2u * (uint64_t)i);
            if (!err) {
                agg_rand_seed(&w->env_rand, s);
                err = ldpb_rng_new_seeded_stream(&w->noise, run->seed, 2u * (uint64_t)i + 1u);
            }
            ldpb_rng_free(s);
            if (err)
                break;
        } else {
            agg_rand_seed(&w->env_rand, sys);
        }
    }
    ldpb_rng_free(sys);
    if (err) {
        fprintf(stderr, "%s: cannot set up the clients: %s\n", PROG, ldpb_strerror(err));
        rc = EXIT_RUNTIME;
        goto done;
    }

    /* Ctrl-C ends the run early, with results; an aggregator going away must not kill us. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    atomic_store(&stop_signal, 0);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    handlers = 1;

    for (; started < clients; started++)
        if (pthread_create(&workers[started].thread, NULL, worker_main, &workers[started]) != 0)
            break;
    if (started < clients)
        atomic_store(&run->fatal, 1);
    pthread_mutex_lock(&run->mu);
    while (run->ready < started)
        pthread_cond_wait(&run->cv, &run->mu);
    uint64_t t0 = now_ns();
    run->deadline_ns = duration > 0.0 ? t0 + (uint64_t)(duration * 1e9) : 0;
    run->start_ns = t0;
    run->go = 1;
    pthread_cond_broadcast(&run->cv);
    pthread_mutex_unlock(&run->mu);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(workers[i].thread, NULL);
    double wall = (double)(now_ns() - t0) / 1e9;
    if (started < clients) {
        fprintf(stderr, "%s: cannot start thread %" PRIu32 " of %" PRIu64 "\n", PROG, started,
                clients);
        rc = EXIT_RUNTIME;
        goto done;
    }

    /* Merge. */
    for (uint32_t i = 0; i < started; i++) {
        const worker *w = &workers[i];
        hist_merge(&t.assign_h, &w->assign_h);
        hist_merge(&t.report_h, &w->report_h);
        hist_merge(&t.lag_h, &w->lag_h);
        hist_merge(&t.round_h, &w->round_h);
        t.rounds += w->rounds;
        t.assigned += w->assigned;
        t.acked += w->acked;
        t.devices += w->devices;
        t.frames += w->frames;
        for (uint32_t arm = 0; arm < k; arm++)
            t.pulls[arm] += w->pulls[arm];
        t.ctx_regret += w->ctx_regret;
        t.ctx_uniform += w->ctx_uniform;
        for (int op = 0; op < OP_COUNT; op++)
            for (size_t s = 0; s < ERR_SLOTS; s++) {
                if (w->errors[op][s] && !t.first_msg[s])
                    t.first_msg[s] = w->first_msg[s];
                t.errors[op][s] += w->errors[op][s];
                t.failed += w->errors[op][s];
            }
    }
    int interrupted = atomic_load(&stop_signal) != 0;
    err = tool_status_fetch(a.connect, run->server_pk, NULL, exp_wire_name(run, 0), status_timeout,
                            &after, msg, sizeof msg);
    int exp_after_ok =
        a.per_experiment && fetch_exp_reports(run, a.connect, status_timeout, NULL, exp_after) == 0;

    /* Print. */
    FILE *f = stdout;
    char zipf_text[64];
    if (run->spread.zipf > 0.0)
        snprintf(zipf_text, sizeof zipf_text, "Zipf, exponent %g", run->spread.zipf);
    else
        snprintf(zipf_text, sizeof zipf_text, "uniform");
    char text[256];
    env_text(env, text, sizeof text);
    double best = agg_env_best_mean(env);
    double regret = 0.0;
    for (uint32_t arm = 0; arm < k; arm++)
        regret += (double)t.pulls[arm] * (best - agg_env_mean(env, arm));
    fprintf(f, "aggregator      %s: policy %s, model %s, %" PRIu32 " arms\n", a.connect,
            before.policy, before.model, k);
    if (ctx_d)
        fprintf(f,
                "environment     contextual: d %" PRIu64 ", unit features in the positive "
                "orthant per arm and round, reward <theta, x> + 0.1 N(0, 1) in [0, 1]\n",
                ctx_d);
    else
        fprintf(f, "environment     %s%s\n", text,
                a.means || a.laws ? "" : " (default: evenly spaced means)");
    if (!run->spread.is_default)
        fprintf(f, "experiments     %" PRIu32 ", %s .. %s, each device's drawn once (%s)\n",
                run->spread.n, run->exp_names[0], run->exp_names[run->spread.n - 1], zipf_text);
    fprintf(f, "clients         %" PRIu64 " at a time, a thread and an ldpb_client each\n",
            clients);
    fprintf(
        f, "devices         %" PRIu64 " simulated devices in all, up to %" PRIu64 " reports each\n",
        t.devices, device_reports);
    fprintf(f, "ledgers         in memory (simulated devices: their spends are not durable)\n");
    fprintf(f, "noise           %s\n",
            run->seeded ? "seeded from --seed (simulation only)" : "the system's secure generator");
    fprintf(f, "rounds          %" PRIu64 " played%s\n", t.rounds,
            interrupted ? " (interrupted)" : "");
    if (run->batch)
        fprintf(f,
                "mode            batches of up to %" PRIu32 " reports a frame (%" PRIu64
                " frames)\n",
                run->batch, t.frames);
    else
        fprintf(f, "mode            %s\n",
                run->raa ? "report-and-assign (one round trip per report)"
                         : "two-trips (assign, then report)");
    fprintf(f, "reports acked   %" PRIu64 "\n", t.acked);
    if (run->prefill && run->phase2_start_ns) {
        double p2 = (double)(atomic_load(&run->phase2_end_ns) - run->phase2_start_ns) / 1e9;
        fprintf(f, "batch phase     %.0f reports/s acked over %.3f s (after the prefill)\n",
                p2 > 0 ? (double)t.acked / p2 : 0.0, p2);
    }
    fprintf(f, "assignments     %" PRIu64 "\n", t.assigned);
    fprintf(f, "wall time       %.3f s\n", wall);
    if (run->interval_ns > 0.0)
        fprintf(f, "pacing          %.0f rounds/s requested (--rate, open loop)\n",
                1e9 / run->interval_ns);
    fprintf(f, "throughput      %.0f reports/s acked (durable), %.0f assignments/s\n",
            wall > 0 ? (double)t.acked / wall : 0.0, wall > 0 ? (double)t.assigned / wall : 0.0);
    print_latency(f, "assign", &t.assign_h);
    print_latency(f, "report", &t.report_h);
    if (run->interval_ns > 0.0) {
        if (!run->batch)
            print_latency(f, "round", &t.round_h);
        print_latency(f, "lag", &t.lag_h);
        fprintf(f, "                (open loop: assign and report from the moment each request was "
                   "sent;\n"
                   "                round from the round's scheduled start to its report's ack; "
                   "lag: how late\n"
                   "                the round's first request left, for want of a free client or "
                   "of CPU)\n");
    }
    print_errors(f, &t);
    fprintf(f, "\n%5s %9s %12s %7s\n", "arm", "mean", "pulls", "share");
    for (uint32_t arm = 0; arm < k; arm++)
        if (ctx_d) /* an arm's mean depends on the round's features */
            fprintf(f, "%5" PRIu32 " %9s %12" PRIu64 " %6.1f%%\n", arm, "-", t.pulls[arm],
                    t.acked ? 100.0 * (double)t.pulls[arm] / (double)t.acked : 0.0);
        else
            fprintf(f, "%5" PRIu32 " %9.4f %12" PRIu64 " %6.1f%%\n", arm, agg_env_mean(env, arm),
                    t.pulls[arm], t.acked ? 100.0 * (double)t.pulls[arm] / (double)t.acked : 0.0);
    double uniform = 0.0;
    for (uint32_t arm = 0; arm < k; arm++)
        uniform += (best - agg_env_mean(env, arm)) / (double)k;
    if (ctx_d)
        fprintf(f,
                "\nregret          %.1f against each round's best arm over %" PRIu64
                " acked reports (%.4f per report; uniform play: %.4f)\n",
                t.ctx_regret, t.acked, t.acked ? t.ctx_regret / (double)t.acked : 0.0,
                t.acked ? t.ctx_uniform / (double)t.acked : 0.0);
    else
        fprintf(f,
                "\npseudo-regret   %.1f over %" PRIu64 " acked reports (%.4f per report; uniform "
                "play: %.4f)\n",
                regret, t.acked, t.acked ? regret / (double)t.acked : 0.0, uniform);
    if (a.per_experiment && exp_after_ok) {
        uint64_t b = 0, e = 0;
        for (uint32_t i = 0; i < run->spread.n; i++) {
            b += exp_before[i];
            e += exp_after[i];
        }
        fprintf(f,
                "daemon reports  %" PRIu64 " -> %" PRIu64 " (+%" PRIu64
                ", counting every client, summed over the %" PRIu32 " experiments)\n",
                b, e, e - b, run->spread.n);
    } else if (err) {
        fprintf(f, "daemon reports  unknown after the run: %s\n", msg);
    } else if (run->spread.n > 1) {
        fprintf(f,
                "daemon reports  %" PRIu64 " -> %" PRIu64 " (+%" PRIu64
                ") in experiment %s (--per-experiment: every experiment)\n",
                before.reports, after.reports, after.reports - before.reports, run->exp_names[0]);
    } else {
        fprintf(
            f, "daemon reports  %" PRIu64 " -> %" PRIu64 " (+%" PRIu64 ", counting every client)\n",
            before.reports, after.reports, after.reports - before.reports);
    }
    if (a.per_experiment)
        print_per_experiment(f, run, exp_before, exp_after_ok ? exp_after : NULL);
    rc = t.failed || interrupted || t.acked == 0 ? EXIT_RUNTIME : 0;
    if (fflush(f) != 0 || ferror(f)) {
        fprintf(stderr, "%s: cannot write to standard output: %s\n", PROG, strerror(errno));
        rc = EXIT_RUNTIME;
    }

done:
    if (handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
    }
    if (workers)
        for (uint64_t i = 0; i < clients; i++) {
            free(workers[i].pulls);
            free(workers[i].ctx_x);
            ldpb_rng_free(workers[i].noise);
        }
    free(workers);
    free(t.pulls);
    if (sync_ok) {
        pthread_mutex_destroy(&run->mu);
        pthread_cond_destroy(&run->cv);
    }
    if (run)
        free_experiments(run);
    free(run);
    free(exp_before);
    free(exp_after);
    ldpb_status_clear(&before);
    ldpb_status_clear(&after);
    agg_env_free(env);
    return rc;
}
