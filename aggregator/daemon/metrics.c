/* The /metrics endpoint (metrics.h). Counters are read from atomics (agg_server_stats_get), so a
 * scrape never waits for a commit. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "metrics.h"
#include "policy.h"
#include "server.h"

struct agg_metrics {
    struct MHD_Daemon *d;
    agg_server *s;
};

/* Connections at once, from one address, and seconds an idle one is kept (docs/aggregator.md,
 * "Metrics"). */
#define METRICS_CONNECTIONS        256
#define METRICS_CONNECTIONS_PER_IP 8
#define METRICS_IDLE_TIMEOUT_S     5

/* The fixed series, and each arm's lines at most. */
#define BODY_FIXED   8192
#define BODY_PER_ARM 160

static size_t render(agg_server *s, char *buf, size_t cap, agg_arm_status *arms)
{
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
    COUNTER("ldpb_commit_microseconds_total", "Microseconds spent committing.", st.commit_us);
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
        size_t k = agg_server_arms(m->s), cap = BODY_FIXED + k * BODY_PER_ARM;
        char *body = malloc(cap);
        agg_arm_status *arms = calloc(k ? k : 1, sizeof *arms);
        if (!body || !arms) {
            free(body);
            free(arms);
            return MHD_NO;
        }
        size_t n = render(m->s, body, cap, arms);
        free(arms);
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
