/* The transport's own ceiling, for reading bench/run_service_bench.sh: nanomsg REQ/REP round
 * trips per second between C client threads (one REQ socket each, one request in flight, as a
 * device running ldpb_client does) and one raw REP socket served by W threads that echo a
 * message of the size of a sealed ldpb request. By default both sides run in this process;
 * --role server and --role client run them as two processes, as ldpb-aggregator and ldpb loadgen
 * do (nanomsg moves every socket's bytes on one I/O thread per process, so one process for both
 * sides is a lower figure). Nothing is sealed, decoded or stored: whatever the service does
 * beyond this costs on top of it. An ldpb report takes two round trips (assign, then report).
 *
 * Usage: bench_nn_echo [--role both|server|client] [--url URL] [--clients N] [--workers W]
 *                      [--seconds S] [--bytes B]
 * A server (--role server) serves for S seconds plus one. Prints figures only. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>

#define CLIENTS_MAX 500

static atomic_int stop_flag;
static atomic_uint_fast64_t round_trips;

struct config {
    const char *url;
    int clients, workers, bytes;
    double seconds;
    const char *role; /* both, server, client */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *echo_worker(void *arg)
{
    int sock = *(int *)arg;
    while (!atomic_load(&stop_flag)) {
        void *body = NULL, *control = NULL;
        struct nn_iovec iov = {&body, NN_MSG};
        struct nn_msghdr hdr;
        memset(&hdr, 0, sizeof hdr);
        hdr.msg_iov = &iov;
        hdr.msg_iovlen = 1;
        hdr.msg_control = &control;
        hdr.msg_controllen = NN_MSG;
        int n = nn_recvmsg(sock, &hdr, 0);
        if (n < 0)
            continue; /* receive timeout: look at the stop flag */
        struct nn_iovec out = {&body, NN_MSG};
        hdr.msg_iov = &out;
        if (nn_sendmsg(sock, &hdr, NN_DONTWAIT) < 0) {
            nn_freemsg(body);
            if (control)
                nn_freemsg(control);
        }
    }
    return NULL;
}

struct client_arg {
    const struct config *cfg;
    int failed;
};

static void *client(void *arg)
{
    struct client_arg *ca = arg;
    const struct config *cfg = ca->cfg;
    int s = nn_socket(AF_SP, NN_REQ);
    int tmo = 2000;
    char *msg = calloc(1, (size_t)cfg->bytes);
    if (s < 0 || !msg || nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo) < 0 ||
        nn_connect(s, cfg->url) < 0) {
        ca->failed = 1;
        free(msg);
        return NULL;
    }
    while (!atomic_load(&stop_flag)) {
        if (nn_send(s, msg, (size_t)cfg->bytes, 0) < 0)
            break;
        void *reply = NULL;
        if (nn_recv(s, &reply, NN_MSG, 0) < 0)
            continue;
        nn_freemsg(reply);
        atomic_fetch_add(&round_trips, 1);
    }
    nn_close(s);
    free(msg);
    return NULL;
}

int main(int argc, char **argv)
{
    struct config cfg = {"tcp://127.0.0.1:7461", 256, 2, 200, 5.0, "both"};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            cfg.url = argv[i + 1];
        else if (strcmp(argv[i], "--clients") == 0)
            cfg.clients = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--workers") == 0)
            cfg.workers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            cfg.seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--bytes") == 0)
            cfg.bytes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--role") == 0)
            cfg.role = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_nn_echo [--role both|server|client] [--url URL] "
                            "[--clients N] [--workers W] [--seconds S] [--bytes B]\n");
            return 2;
        }
    }
    int serve = strcmp(cfg.role, "client") != 0, drive = strcmp(cfg.role, "server") != 0;
    if (strcmp(cfg.role, "both") != 0 && strcmp(cfg.role, "server") != 0 &&
        strcmp(cfg.role, "client") != 0) {
        fprintf(stderr, "bench_nn_echo: --role is both, server or client\n");
        return 2;
    }
    if (cfg.clients < 1 || cfg.clients > CLIENTS_MAX || cfg.workers < 1 || cfg.workers > 64 ||
        cfg.bytes < 1 || cfg.bytes > 65536 || !(cfg.seconds > 0)) {
        fprintf(stderr,
                "bench_nn_echo: clients in [1, %d], workers in [1, 64], bytes in "
                "[1, 65536], seconds > 0\n",
                CLIENTS_MAX);
        return 2;
    }
    int srv = -1;
    pthread_t workers[64], clients[CLIENTS_MAX];
    static struct client_arg cargs[CLIENTS_MAX];
    if (serve) {
        srv = nn_socket(AF_SP_RAW, NN_REP);
        int tmo = 100;
        if (srv < 0 || nn_setsockopt(srv, NN_SOL_SOCKET, NN_RCVTIMEO, &tmo, sizeof tmo) < 0 ||
            nn_bind(srv, cfg.url) < 0) {
            fprintf(stderr, "bench_nn_echo: cannot serve %s: %s\n", cfg.url,
                    nn_strerror(nn_errno()));
            return 1;
        }
        for (int i = 0; i < cfg.workers; i++)
            pthread_create(&workers[i], NULL, echo_worker, &srv);
    }
    if (!drive) {
        double end = now_s() + cfg.seconds + 1.0;
        struct timespec tick = {0, 100000000L};
        while (now_s() < end)
            nanosleep(&tick, NULL);
        atomic_store(&stop_flag, 1);
        for (int i = 0; i < cfg.workers; i++)
            pthread_join(workers[i], NULL);
        nn_close(srv);
        return 0;
    }
    for (int i = 0; i < cfg.clients; i++) {
        cargs[i] = (struct client_arg){&cfg, 0};
        pthread_create(&clients[i], NULL, client, &cargs[i]);
    }
    struct timespec warm = {0, 500000000L};
    nanosleep(&warm, NULL);
    uint64_t r0 = atomic_load(&round_trips);
    double t0 = now_s();
    struct timespec run = {(time_t)cfg.seconds,
                           (long)((cfg.seconds - (double)(time_t)cfg.seconds) * 1e9)};
    nanosleep(&run, NULL);
    uint64_t r1 = atomic_load(&round_trips);
    double t1 = now_s();
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < cfg.clients; i++)
        pthread_join(clients[i], NULL);
    if (serve) {
        for (int i = 0; i < cfg.workers; i++)
            pthread_join(workers[i], NULL);
        nn_close(srv);
    }
    int failed = 0;
    for (int i = 0; i < cfg.clients; i++)
        failed += cargs[i].failed;
    printf("nanomsg REQ/REP echo over %s: %d client threads, %s, %d-byte messages\n", cfg.url,
           cfg.clients,
           serve ? "echo threads in the same process" : "echo server in another process",
           cfg.bytes);
    printf("round trips/s  %.0f  (%.2f s measured%s)\n", (double)(r1 - r0) / (t1 - t0), t1 - t0,
           failed ? ", some clients failed to start" : "");
    return failed ? 1 : 0;
}
