/* The transport's own ceiling, for reading bench/run_service_bench.sh: round trips per second
 * through the transport seam (ldpb/transport.h, the same calls the aggregator and the client
 * library make) between C client threads (one dialer each, one request in flight, as a device
 * running ldpb_client does) and S listeners served by W threads that echo a message of the size
 * of a sealed ldpb request. By default both sides run in this process; --role server and --role
 * client run them as two processes, as ldpb-aggregator and ldpb loadgen do (nanomsg moves every
 * socket's bytes on one I/O thread per process, so one process for both sides is a lower figure).
 * Nothing is sealed, decoded or stored: whatever the service does beyond this costs on top of it.
 *
 * --sockets S: S listeners, on the URL and the S - 1 next ones (tcp: the next ports; ipc: the path
 * with ".1", ".2", ... appended); worker i serves listener i mod S, client j dials listener j mod
 * S. With S = 1 every worker shares one socket (and its lock), as the aggregator's workers do.
 *
 * --listener nanomsg|sp: the listening transport (default: the one transport.c's table names for
 * the scheme); the clients always dial with the table's dialer.
 *
 * Usage: bench_nn_echo [--role both|server|client] [--url URL] [--clients N] [--workers W]
 *                      [--sockets S] [--seconds S] [--bytes B] [--listener nanomsg|sp]
 * A server (--role server) serves for S seconds plus one. Prints figures only. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define CLIENTS_MAX 500
#define SOCKETS_MAX 16

static atomic_int stop_flag;
static atomic_uint_fast64_t round_trips;

struct config {
    const char *url;
    int clients, workers, sockets, bytes;
    double seconds;
    const char *role;     /* both, server, client */
    const char *listener; /* the listening transport's name; NULL: the table's */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The URL of listener i (see --sockets) into out; 0 if it does not fit or has no port. */
static int url_nth(const char *url, int i, char out[LDPB_TP_URL_MAX + 1])
{
    if (i == 0)
        return snprintf(out, LDPB_TP_URL_MAX + 1, "%s", url) <= LDPB_TP_URL_MAX;
    if (strncmp(url, "tcp://", 6) == 0) {
        const char *colon = strrchr(url, ':');
        if (!colon || colon < url + 6)
            return 0;
        int port = atoi(colon + 1);
        return snprintf(out, LDPB_TP_URL_MAX + 1, "%.*s:%d", (int)(colon - url), url, port + i) <=
               LDPB_TP_URL_MAX;
    }
    return snprintf(out, LDPB_TP_URL_MAX + 1, "%s.%d", url, i) <= LDPB_TP_URL_MAX;
}

static void *echo_worker(void *arg)
{
    ldpb_tp *l = arg;
    while (!atomic_load(&stop_flag)) {
        ldpb_tp_msg m;
        ldpb_tp_route r;
        if (ldpb_tp_recv(l, &m, &r, 100, NULL) != LDPB_OK)
            continue; /* receive timeout: look at the stop flag */
        (void)ldpb_tp_reply(l, r, m.data, m.len);
        ldpb_tp_msg_free(l, &m);
    }
    return NULL;
}

struct client_arg {
    const struct config *cfg;
    int index;
    int failed;
};

static void *client(void *arg)
{
    struct client_arg *ca = arg;
    const struct config *cfg = ca->cfg;
    char url[LDPB_TP_URL_MAX + 1];
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.send_timeout_ms = 2000;
    ldpb_tp *d = NULL;
    uint8_t *msg = calloc(1, (size_t)cfg->bytes);
    if (!msg || !url_nth(cfg->url, ca->index % cfg->sockets, url) ||
        ldpb_tp_dial(&d, url, &o, NULL) != LDPB_OK) {
        ca->failed = 1;
        free(msg);
        return NULL;
    }
    while (!atomic_load(&stop_flag)) {
        if (ldpb_tp_send(d, msg, (size_t)cfg->bytes, NULL) != LDPB_OK)
            break;
        ldpb_tp_msg reply;
        if (ldpb_tp_recv(d, &reply, NULL, 2000, NULL) != LDPB_OK)
            continue;
        ldpb_tp_msg_free(d, &reply);
        atomic_fetch_add(&round_trips, 1);
    }
    ldpb_tp_close(d, 0);
    free(msg);
    return NULL;
}

static int parse(int argc, char **argv, struct config *cfg)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            cfg->url = argv[i + 1];
        else if (strcmp(argv[i], "--clients") == 0)
            cfg->clients = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--workers") == 0)
            cfg->workers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--sockets") == 0)
            cfg->sockets = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            cfg->seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--bytes") == 0)
            cfg->bytes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--role") == 0)
            cfg->role = argv[i + 1];
        else if (strcmp(argv[i], "--listener") == 0)
            cfg->listener = argv[i + 1];
        else {
            fprintf(stderr, "usage: bench_nn_echo [--role both|server|client] [--url URL] "
                            "[--clients N] [--workers W] [--sockets S] [--seconds S] "
                            "[--bytes B] [--listener nanomsg|sp]\n");
            return 0;
        }
    }
    if (cfg->listener && !ldpb_tp_named(cfg->listener)) {
        fprintf(stderr, "bench_nn_echo: --listener is nanomsg or sp\n");
        return 0;
    }
    if (strcmp(cfg->role, "both") != 0 && strcmp(cfg->role, "server") != 0 &&
        strcmp(cfg->role, "client") != 0) {
        fprintf(stderr, "bench_nn_echo: --role is both, server or client\n");
        return 0;
    }
    if (cfg->clients < 1 || cfg->clients > CLIENTS_MAX || cfg->workers < 1 || cfg->workers > 64 ||
        cfg->sockets < 1 || cfg->sockets > SOCKETS_MAX || cfg->bytes < 1 || cfg->bytes > 65536 ||
        !(cfg->seconds > 0)) {
        fprintf(stderr,
                "bench_nn_echo: clients in [1, %d], workers in [1, 64], sockets in [1, %d], "
                "bytes in [1, 65536], seconds > 0\n",
                CLIENTS_MAX, SOCKETS_MAX);
        return 0;
    }
    return 1;
}

/* Binds the listeners and starts the workers; 0 on failure (said on stderr). */
static int serve_start(const struct config *cfg, ldpb_tp **ls, pthread_t *workers)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    for (int i = 0; i < cfg->sockets; i++) {
        char url[LDPB_TP_URL_MAX + 1], detail[LDPB_DETAIL_BYTES] = "";
        const char *u = url;
        if (!url_nth(cfg->url, i, url) || ldpb_tp_listen_with(&ls[i], ldpb_tp_named(cfg->listener),
                                                              &u, 1, &o, detail) != LDPB_OK) {
            fprintf(stderr, "bench_nn_echo: cannot serve %s: %s\n", url, detail);
            return 0;
        }
    }
    for (int i = 0; i < cfg->workers; i++)
        pthread_create(&workers[i], NULL, echo_worker, ls[i % cfg->sockets]);
    return 1;
}

static void serve_stop(const struct config *cfg, ldpb_tp **ls, pthread_t *workers)
{
    for (int i = 0; i < cfg->workers; i++)
        pthread_join(workers[i], NULL);
    for (int i = 0; i < cfg->sockets; i++)
        ldpb_tp_close(ls[i], 0);
}

int main(int argc, char **argv)
{
    struct config cfg = {"tcp://127.0.0.1:7461", 256, 2, 1, 200, 5.0, "both", NULL};
    if (!parse(argc, argv, &cfg))
        return 2;
    int serve = strcmp(cfg.role, "client") != 0, drive = strcmp(cfg.role, "server") != 0;
    ldpb_tp *ls[SOCKETS_MAX] = {0};
    pthread_t workers[64], clients[CLIENTS_MAX];
    static struct client_arg cargs[CLIENTS_MAX];
    if (serve && !serve_start(&cfg, ls, workers))
        return 1;
    if (!drive) {
        double end = now_s() + cfg.seconds + 1.0;
        struct timespec tick = {0, 100000000L};
        while (now_s() < end)
            nanosleep(&tick, NULL);
        atomic_store(&stop_flag, 1);
        serve_stop(&cfg, ls, workers);
        return 0;
    }
    for (int i = 0; i < cfg.clients; i++) {
        cargs[i] = (struct client_arg){&cfg, i, 0};
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
    if (serve)
        serve_stop(&cfg, ls, workers);
    int failed = 0;
    for (int i = 0; i < cfg.clients; i++)
        failed += cargs[i].failed;
    printf("transport echo over %s: %d client threads, %d socket(s), %s, %d-byte messages\n",
           cfg.url, cfg.clients, cfg.sockets,
           serve ? "echo threads in the same process" : "echo server in another process",
           cfg.bytes);
    printf("round trips/s  %.0f  (%.2f s measured%s)\n", (double)(r1 - r0) / (t1 - t0), t1 - t0,
           failed ? ", some clients failed to start" : "");
    return failed ? 1 : 0;
}
