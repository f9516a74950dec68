/* Scratch load generator (not a test): starts ldpb-aggregator in a temporary directory and
 * drives it with T threads of S pipelined REQ sockets each (assign, then report, repeat), sealed
 * frames built with the harness. Prints assignments/s and durable acked reports/s.
 *   daemon_load [threads] [sockets per thread] [seconds] [tcp|ipc] [workers] [extra config] */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanomsg/nn.h>

#include "harness.h"

static dt_daemon d;
static const char *url;
static int n_sockets, seconds;
static atomic_ulong acks, assigns, errors;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void send_env(dt_client *c, Ldpb__V1__Envelope *env)
{
    uint8_t pt[512], frame[1024];
    size_t len = 0;
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    if (ldpb_envelope_encode(env, pt, sizeof pt, &len, NULL) != LDPB_OK)
        abort();
    size_t flen = dt_client_seal(c, pt, len, frame, sizeof frame);
    nn_send(c->sock, frame, flen, 0);
}

static void send_assign(dt_client *c)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    send_env(c, &env);
}

static void *thread_main(void *arg)
{
    (void)arg;
    dt_client *cs = calloc((size_t)n_sockets, sizeof *cs);
    struct nn_pollfd *pfd = calloc((size_t)n_sockets, sizeof *pfd);
    for (int i = 0; i < n_sockets; i++) {
        if (dt_client_open(&cs[i], url, d.server.pk, 5000) != 0) {
            fprintf(stderr,
                    "cannot open client socket %d (nanomsg allows 512 sockets per "
                    "process)\n",
                    i);
            exit(1);
        }
        pfd[i].fd = cs[i].sock;
        pfd[i].events = NN_POLLIN;
        send_assign(&cs[i]);
    }
    double end = now_s() + seconds;
    while (now_s() < end) {
        if (nn_poll(pfd, n_sockets, 100) <= 0)
            continue;
        for (int i = 0; i < n_sockets; i++) {
            if (!(pfd[i].revents & NN_POLLIN))
                continue;
            void *buf = NULL;
            int n = nn_recv(cs[i].sock, &buf, NN_MSG, NN_DONTWAIT);
            if (n < 0)
                continue;
            ldpb_frame fr;
            uint8_t pt[1024];
            size_t pt_len = 0;
            Ldpb__V1__Envelope *env = NULL;
            int ok = ldpb_frame_parse(buf, (size_t)n, &fr, NULL) == LDPB_OK &&
                     fr.kind == LDPB_FRAME_SEALED &&
                     ldpb_seal_open(&fr, &cs[i].key, LDPB_DIR_TO_CLIENT, cs[i].kp.pk, pt, sizeof pt,
                                    &pt_len, NULL) == LDPB_OK &&
                     ldpb_envelope_decode(pt, pt_len, &env, NULL) == LDPB_OK;
            nn_freemsg(buf);
            if (ok && env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
                atomic_fetch_add(&assigns, 1);
                Ldpb__V1__Envelope rep_env = LDPB__V1__ENVELOPE__INIT;
                Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
                rep_env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
                rep_env.report = &rep;
                rep.assignment_id = env->assignment->assignment_id;
                rep.mechanism = env->assignment->mechanism;
                rep.epsilon = env->assignment->epsilon;
                rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
                rep.bit = env->assignment->arm == 0;
                send_env(&cs[i], &rep_env);
            } else {
                if (ok && env->body_case == LDPB__V1__ENVELOPE__BODY_ACK)
                    atomic_fetch_add(&acks, 1);
                else
                    atomic_fetch_add(&errors, 1);
                send_assign(&cs[i]);
            }
            ldpb_envelope_free(env);
        }
    }
    for (int i = 0; i < n_sockets; i++)
        dt_client_close(&cs[i]);
    free(cs);
    free(pfd);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    n_sockets = argc > 2 ? atoi(argv[2]) : 16;
    seconds = argc > 3 ? atoi(argv[3]) : 5;
    int tcp = argc > 4 && strcmp(argv[4], "tcp") == 0;
    const char *workers = argc > 5 ? argv[5] : "2";
    signal(SIGPIPE, SIG_IGN);
    char extra[512];
    snprintf(extra, sizeof extra,
             "arms = 10\npolicy = ldp-ucb-b\nworkers = %s\nlog_level = warn\n%s\n", workers,
             argc > 6 ? argv[6] : "");
    if (dt_daemon_init(&d) || dt_daemon_write_config(&d, extra) ||
        dt_daemon_start(&d, NULL, NULL)) {
        fprintf(stderr, "cannot start the daemon (log: %s)\n", d.log);
        return 1;
    }
    url = tcp ? d.tcp_url : d.ipc_url;
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, thread_main, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0;
    printf("%s, %d threads x %d sockets, %s workers, %.1f s: %.0f assignments/s, %.0f acked "
           "reports/s, %lu errors\n",
           tcp ? "tcp" : "ipc", threads, n_sockets, workers, dt, (double)assigns / dt,
           (double)acks / dt, (unsigned long)errors);
    int st = dt_daemon_signal_wait(&d, SIGTERM);
    dt_daemon_cleanup(&d);
    return st;
}
