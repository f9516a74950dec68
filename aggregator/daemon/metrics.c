/* The /metrics endpoint (metrics.h). Counters are read from atomics (agg_server_stats_get), so a
 * scrape never waits for a commit. */
#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <sodium.h>
#include <sqlite3.h>

#include "metrics.h"
#include "policy.h"
#include "server.h"
#include "server_seq.h"

#ifndef LDPB_VERSION_STRING
#define LDPB_VERSION_STRING "unknown"
#endif

struct agg_metrics {
    struct MHD_Daemon *d;
    agg_server *s;
    double start_time; /* process_start_time_seconds, found once at start */
};

/* Connections at once, from one address, and seconds an idle one is kept (docs/aggregator.md,
 * "Metrics"). */
#define METRICS_CONNECTIONS        256
#define METRICS_CONNECTIONS_PER_IP 8
#define METRICS_IDLE_TIMEOUT_S     5

/* The fixed series, and each arm's lines at most. */
#define BODY_FIXED   16384
#define BODY_PER_ARM 160
/* four series of one experiment: each name (< 45 bytes), the label (< 80) and a count */
#define BODY_PER_EXPERIMENT 4 * 160

/* The process series are the ones Prometheus' own client libraries export (client_golang's
 * process collector), so an operator's existing dashboards read them unchanged. Each is read from
 * procfs at scrape time; one that cannot be read is left out rather than reported as 0. */
typedef struct { /* each < 0 when it could not be read */
    double cpu_seconds, resident_bytes, virtual_bytes, open_fds, max_fds;
} proc_sample;

/* Field `field` (1-based, as proc(5) numbers them) of /proc/self/stat, or -1. Fields are counted
 * from the last ')': the command name may hold spaces and parentheses. */
static int stat_field(int field, unsigned long long *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    int ok = -1;
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        for (int i = 2; p && i < field; i++)
            p = strchr(p + 1, ' ');
        char *end;
        if (p && (*out = strtoull(p + 1, &end, 10), end != p + 1))
            ok = 0;
        fclose(f);
    }
    return ok;
}

/* Wall-clock seconds at which this process started: the boot time (/proc/stat btime) plus the
 * process' start in clock ticks since boot (/proc/self/stat field 22); the current time when
 * either cannot be read (the endpoint starts with the daemon, so that is close). */
static double process_start_time(void)
{
    unsigned long long ticks, btime = 0;
    long hz = sysconf(_SC_CLK_TCK);
    int have_btime = 0;
    FILE *f = fopen("/proc/stat", "re");
    if (f) {
        char line[256];
        while (!have_btime && fgets(line, sizeof line, f))
            have_btime = sscanf(line, "btime %llu", &btime) == 1;
        fclose(f);
    }
    if (have_btime && hz > 0 && stat_field(22, &ticks) == 0)
        return (double)btime + (double)ticks / (double)hz;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void proc_read(proc_sample *p)
{
    p->cpu_seconds = p->resident_bytes = p->virtual_bytes = p->open_fds = p->max_fds = -1;
    /* getrusage counts every thread, as /proc/self/stat's utime+stime do, in microseconds
     * rather than clock ticks. */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        p->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        unsigned long long size, resident;
        if (page > 0 && fscanf(f, "%llu %llu", &size, &resident) == 2) {
            p->virtual_bytes = (double)size * (double)page;
            p->resident_bytes = (double)resident * (double)page;
        }
        fclose(f);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        /* Not counted: the entries "." and "..", and the descriptor this listing holds. */
        char self[32];
        snprintf(self, sizeof self, "%d", dirfd(d));
        double n = 0;
        for (struct dirent *e; (e = readdir(d));)
            if (e->d_name[0] != '.' && strcmp(e->d_name, self) != 0)
                n++;
        closedir(d);
        p->open_fds = n;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        p->max_fds = (double)rl.rlim_cur;
}

/* Per-experiment series: the first metrics_experiments_max experiments by declaration (the
 * configuration's order, then the runtime-created ones by creation) get a label each, so the set of
 * series stays stable and bounded; the rest are summed under experiment="_other". */
static size_t render_experiments(agg_server *s, char *buf, size_t cap, agg_exp_stats *ex,
                                 size_t max)
{
    agg_exp_stats rest;
    size_t n_rest = 0, n = 0;
    size_t k = agg_server_experiment_stats(s, ex, max, &rest, &n_rest);
    if (n_rest)
        ex[k++] = rest;
    static const struct {
        const char *name, *type, *help;
        int which;
    } series[] = {
        {"ldpb_experiment_reports_total", "counter", "Reports counted, by experiment.", 0},
        {"ldpb_experiment_duplicate_reports_total", "counter",
         "Resent reports acknowledged as duplicates, by experiment.", 1},
        {"ldpb_experiment_assignments_total", "counter", "Assignments issued, by experiment.", 2},
        {"ldpb_experiment_running", "gauge",
         "1 while the experiment runs (under _other: how many of them run).", 3},
    };
    for (size_t j = 0; j < sizeof series / sizeof series[0]; j++) {
        int r = snprintf(buf + n, cap - n, "# HELP %s %s\n# TYPE %s %s\n", series[j].name,
                         series[j].help, series[j].name, series[j].type);
        n = r > 0 && n + (size_t)r < cap ? n + (size_t)r : cap - 1;
        for (size_t i = 0; i < k; i++) {
            uint64_t v = series[j].which == 0   ? ex[i].reports
                         : series[j].which == 1 ? ex[i].duplicates
                         : series[j].which == 2 ? ex[i].assignments
                                                : (uint64_t)ex[i].running;
            /* names are [a-z0-9._-]: nothing to escape */
            r = snprintf(buf + n, cap - n, "%s{experiment=\"%s\"} %" PRIu64 "\n", series[j].name,
                         ex[i].name, v);
            n = r > 0 && n + (size_t)r < cap ? n + (size_t)r : cap - 1;
        }
    }
    return n;
}

static size_t render(agg_metrics *m, char *buf, size_t cap, agg_arm_status *arms, agg_exp_stats *ex,
                     size_t ex_max)
{
    agg_server *s = m->s;
    proc_sample ps;
    proc_read(&ps);
    agg_server_stats st;
    agg_server_stats_get(s, &st);
    uint32_t k = agg_server_arms(s);
    ldpb_err arms_err = agg_server_describe(s, arms, k);
    size_t n = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int r_ = snprintf(buf + n, cap - n, __VA_ARGS__);                                          \
        if (r_ > 0)                                                                                \
            n = n + (size_t)r_ < cap ? n + (size_t)r_ : cap - 1;                                   \
    } while (0)
#define COUNTER(name, help, v)                                                                     \
    EMIT("# HELP " name " " help "\n# TYPE " name " counter\n" name " %" PRIu64 "\n", (v))
    COUNTER("ldpb_requests_total", "Frames received and answered.", st.requests);
    COUNTER("ldpb_assignments_total", "Assignments issued.", st.assignments);
    COUNTER("ldpb_reports_total", "Reports counted (durable, acknowledged).", st.reports);
    COUNTER("ldpb_duplicate_reports_total", "Resent reports acknowledged as duplicates.",
            st.duplicates);
    COUNTER("ldpb_status_total", "Status replies.", st.status);
    COUNTER("ldpb_plain_errors_total", "Frames refused before authentication.", st.plain_errors);
    COUNTER("ldpb_commits_total", "Committed transactions.", st.batches);
    COUNTER("ldpb_commit_items_total", "Reports and decisions in committed transactions.",
            st.batch_items);
    COUNTER("ldpb_commit_failures_total", "Transactions rolled back.", st.commit_failures);
    COUNTER("ldpb_commit_retries_total",
            "Transactions the database ended to break a deadlock between nodes, run again.",
            st.commit_retries);
    EMIT("# HELP ldpb_commit_seconds Duration of committed transactions (fsync included).\n"
         "# TYPE ldpb_commit_seconds histogram\n");
    uint64_t cumulative = 0;
    for (size_t b = 0; b < AGG_COMMIT_BUCKETS; b++) {
        cumulative += st.commit_hist[b];
        EMIT("ldpb_commit_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", agg_commit_bucket_us[b] / 1e6,
             cumulative);
    }
    cumulative += st.commit_hist[AGG_COMMIT_BUCKETS];
    EMIT("ldpb_commit_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cumulative);
    EMIT("ldpb_commit_seconds_sum %.6f\nldpb_commit_seconds_count %" PRIu64 "\n",
         (double)st.commit_us / 1e6, cumulative);
    EMIT("# HELP ldpb_commit_phase_seconds_total Time of committed transactions by phase: rows "
         "(the report and decision rows), observe (the policies' observe, the states' write, "
         "retention), commit (COMMIT with its fdatasyncs).\n"
         "# TYPE ldpb_commit_phase_seconds_total counter\n");
    for (size_t p = 0; p < AGG_COMMIT_PHASES; p++)
        EMIT("ldpb_commit_phase_seconds_total{phase=\"%s\"} %.6f\n", agg_commit_phase_names[p],
             (double)st.commit_phase_us[p] / 1e6);
    COUNTER("ldpb_key_derivations_total",
            "X25519 key derivations for sender keys not in the key cache.", st.key_derivations);
    COUNTER("ldpb_key_derivations_refused_total",
            "Frames refused unopened because the key derivation budget was spent.",
            st.key_derivations_refused);
    COUNTER("ldpb_replay_evicted_total",
            "Nonces the full replay cache forgot early (the accepted window narrowed).",
            st.replay_evicted);
    EMIT("# HELP ldpb_replay_entries Nonces the replay cache remembers now.\n"
         "# TYPE ldpb_replay_entries gauge\nldpb_replay_entries %" PRIu64 "\n",
         st.replay_entries);
    EMIT("# HELP ldpb_replay_window_seconds How far behind the aggregator's clock a request may "
         "be now.\n# TYPE ldpb_replay_window_seconds gauge\nldpb_replay_window_seconds %.3f\n",
         (double)st.replay_window_ms / 1e3);
    COUNTER("ldpb_decisions_dropped_total", "Decisions not logged (queue full).",
            st.decisions_dropped);
    COUNTER("ldpb_send_failures_total", "Replies the transport could not send.", st.send_failures);
    COUNTER("ldpb_relay_batches_total",
            "Relay batches accepted (their inner frames count in ldpb_requests_total).",
            st.relay_batches);
    EMIT("# HELP ldpb_assignments_paused 1 while no assignment is issued (commits fail, or "
         "state_dir is below min_free_mb).\n# TYPE ldpb_assignments_paused gauge\n"
         "ldpb_assignments_paused %" PRIu64 "\n",
         st.assignments_paused);
    EMIT("# HELP ldpb_state_free_bytes Free space in state_dir at the last check.\n"
         "# TYPE ldpb_state_free_bytes gauge\nldpb_state_free_bytes %" PRIu64 "\n",
         st.free_bytes);
    COUNTER("ldpb_decisions_deleted_total",
            "Decisions removed from the propensity log by retention.", st.decisions_deleted);
    EMIT("# HELP ldpb_decision_rows Decisions the propensity log holds.\n"
         "# TYPE ldpb_decision_rows gauge\nldpb_decision_rows %" PRIu64 "\n",
         st.decision_rows);
    EMIT("# HELP ldpb_errors_total Sealed Error replies by code.\n"
         "# TYPE ldpb_errors_total counter\n");
    for (int c = 1; c < 32; c++)
        if (st.errors[c])
            EMIT("ldpb_errors_total{code=\"%s\"} %" PRIu64 "\n", ldpb_errname((ldpb_err)c),
                 st.errors[c]);
    COUNTER("ldpb_multi_experiment_commits_total",
            "Committed transactions holding items of more than one experiment.",
            st.multi_experiment_batches);
    EMIT("# HELP ldpb_merge_staleness_p99_seconds Several nodes on one PostgreSQL: p99 of the "
         "time from another node's commit of a partial state until this node serves its merge "
         "(last 4096 samples).\n"
         "# TYPE ldpb_merge_staleness_p99_seconds gauge\nldpb_merge_staleness_p99_seconds "
         "%.3f\n",
         (double)st.merge_staleness_p99_ms / 1000.0);
    COUNTER("ldpb_merge_staleness_samples_total",
            "Partial states of other nodes merged, each a staleness sample.",
            st.merge_staleness_samples);
    COUNTER("ldpb_merge_refreshes_total", "Reads of the other nodes' partial states.",
            st.merge_refreshes);
    EMIT("# HELP ldpb_experiments Experiments known (running or stopped).\n"
         "# TYPE ldpb_experiments gauge\nldpb_experiments %" PRIu64 "\n",
         st.experiments);
    n += render_experiments(s, buf + n, cap - n, ex, ex_max);
    /* issue 19: sequenced experiments (server_seq.h) */
    agg_seq_stats sq;
    agg_seq_stats_get(s, &sq);
    EMIT("# HELP ldpb_seq_experiments Sequenced experiments by this node's role.\n"
         "# TYPE ldpb_seq_experiments gauge\nldpb_seq_experiments{role=\"sequencer\"} %" PRIu64
         "\nldpb_seq_experiments{role=\"follower\"} %" PRIu64 "\n",
         sq.leader_of, sq.follower_of);
    COUNTER("ldpb_seq_takeovers_total", "Sequencer locks this node took over from another node.",
            sq.takeovers);
    EMIT("# HELP ldpb_seq_last_takeover_gap_seconds At the last takeover, the time since the "
         "previous sequencer's last committed state.\n"
         "# TYPE ldpb_seq_last_takeover_gap_seconds gauge\n"
         "ldpb_seq_last_takeover_gap_seconds %.3f\n",
         (double)sq.last_takeover_ms / 1000.0);
    COUNTER("ldpb_seq_fenced_total",
            "Transactions of this node refused by a sequencer fence (rolled back, unpublished).",
            sq.fenced);
    COUNTER("ldpb_seq_observed_deferred_total",
            "Reports other nodes committed that this node observed as their sequencer.",
            sq.observed_deferred);
    EMIT("# HELP ldpb_queue_depth Items waiting for the committer.\n"
         "# TYPE ldpb_queue_depth gauge\nldpb_queue_depth %" PRIu64 "\n",
         st.queue_depth);
    /* Per-arm aggregates only: the policy's state, never anything per client. */
    EMIT("# HELP ldpb_arm_pulls Observations the policy has counted for the arm.\n"
         "# TYPE ldpb_arm_pulls gauge\n");
    for (uint32_t a = 0; !arms_err && a < k; a++)
        EMIT("ldpb_arm_pulls{arm=\"%" PRIu32 "\"} %" PRIu64 "\n", a, arms[a].pulls);
    EMIT("# HELP ldpb_arm_estimate The policy's estimate of the arm's mean reward (de-biased).\n"
         "# TYPE ldpb_arm_estimate gauge\n");
    for (uint32_t a = 0; !arms_err && a < k; a++)
        if (isfinite(arms[a].estimate))
            EMIT("ldpb_arm_estimate{arm=\"%" PRIu32 "\"} %.17g\n", a, arms[a].estimate);
/* Each printed to the resolution it is read at: CPU time in microseconds (getrusage), the start
 * time in clock ticks, the rest whole counts. */
#define PROCESS(name, type, help, fmt, v)                                                          \
    do {                                                                                           \
        if ((v) >= 0)                                                                              \
            EMIT("# HELP " name " " help "\n# TYPE " name " " type "\n" name " " fmt "\n", (v));   \
    } while (0)
    PROCESS("process_cpu_seconds_total", "counter",
            "Total user and system CPU time spent in seconds.", "%.6f", ps.cpu_seconds);
    PROCESS("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", "%.0f",
            ps.resident_bytes);
    PROCESS("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", "%.0f",
            ps.virtual_bytes);
    PROCESS("process_open_fds", "gauge", "Number of open file descriptors.", "%.0f", ps.open_fds);
    PROCESS("process_max_fds", "gauge", "Maximum number of open file descriptors.", "%.0f",
            ps.max_fds);
    PROCESS("process_start_time_seconds", "gauge",
            "Start time of the process since unix epoch in seconds.", "%.2f", m->start_time);
    /* The labels are version strings (digits and dots), so none needs escaping. */
    EMIT("# HELP ldpb_build_info The aggregator's version and the library versions it runs on.\n"
         "# TYPE ldpb_build_info gauge\n"
         "ldpb_build_info{version=\"%s\",sqlite=\"%s\",sodium=\"%s\"} 1\n",
         LDPB_VERSION_STRING, sqlite3_libversion(), sodium_version_string());
#undef PROCESS
#undef COUNTER
#undef EMIT
    return n;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    agg_metrics *m = cls;
    struct MHD_Response *resp;
    unsigned status;
    if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0) {
        size_t k = agg_server_arms(m->s), ex_max = agg_server_metrics_experiments_max(m->s);
        size_t cap = BODY_FIXED + k * BODY_PER_ARM + (ex_max + 1) * BODY_PER_EXPERIMENT;
        char *body = malloc(cap);
        agg_arm_status *arms = calloc(k ? k : 1, sizeof *arms);
        agg_exp_stats *ex = calloc(ex_max + 1, sizeof *ex);
        if (!body || !arms || !ex) {
            free(body);
            free(arms);
            free(ex);
            return MHD_NO;
        }
        size_t n = render(m, body, cap, arms, ex, ex_max);
        free(arms);
        free(ex);
        resp = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(body);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
        status = MHD_HTTP_OK;
    } else {
        static const char nf[] = "not found: try /metrics\n";
        resp = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
        if (!resp)
            return MHD_NO;
        status = MHD_HTTP_NOT_FOUND;
    }
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Parses HOST:PORT (IPv4, [IPv6] or empty host for every address). */
static int parse_addr(const char *hp, struct sockaddr_storage *ss, int *v6)
{
    const char *colon = strrchr(hp, ':');
    if (!colon || colon[1] == '\0')
        return 0;
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535)
        return 0;
    char host[128];
    size_t hl = (size_t)(colon - hp);
    if (hl >= sizeof host)
        return 0;
    memcpy(host, hp, hl);
    host[hl] = '\0';
    memset(ss, 0, sizeof *ss);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        host[hl - 1] = '\0';
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        *v6 = 1;
        return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    *v6 = 0;
    if (hl == 0) {
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        return 1;
    }
    return inet_pton(AF_INET, host, &a->sin_addr) == 1;
}

ldpb_err agg_metrics_start(agg_metrics **out, const char *host_port, struct agg_server *s,
                           char *errmsg)
{
    *out = NULL;
    struct sockaddr_storage ss;
    int v6 = 0;
    if (!parse_addr(host_port, &ss, &v6)) {
        snprintf(errmsg, AGG_SERVER_ERRMAX, "'%s' is not HOST:PORT (e.g. 127.0.0.1:9464)",
                 host_port);
        return LDPB_EINVAL;
    }
    agg_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return LDPB_ENOMEM;
    m->s = s;
    m->start_time = process_start_time();
    /* One polling thread (epoll where there is one) serves every connection without blocking on
     * any, so an idle or half-sent connection costs a slot, not the thread. The slots are
     * many, one address may hold only a few, and an idle one is closed after a few seconds:
     * a few stalled connections cannot lock a scraper out. */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (v6 ? MHD_USE_IPv6 : 0);
    m->d = MHD_start_daemon(flags, 0, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)METRICS_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            (unsigned)METRICS_CONNECTIONS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)METRICS_IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (!m->d) {
        snprintf(errmsg, AGG_SERVER_ERRMAX, "cannot serve HTTP on %s (address in use?)", host_port);
        free(m);
        return LDPB_EIO;
    }
    *out = m;
    return LDPB_OK;
}

void agg_metrics_stop(agg_metrics *m)
{
    if (!m)
        return;
    MHD_stop_daemon(m->d);
    free(m);
}

ldpb_err agg_metrics_check_addr(const char *host_port, char *errmsg)
{
    struct sockaddr_storage ss;
    int v6 = 0;
    if (!parse_addr(host_port, &ss, &v6)) {
        snprintf(errmsg, AGG_SERVER_ERRMAX, "'%s' is not HOST:PORT (e.g. 127.0.0.1:9464)",
                 host_port);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}
