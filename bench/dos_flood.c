/* An honest client's sealed round trips under an unauthenticated flood, in one run against the
 * real aggregator (ldpb_server, the library ldpb-aggregator is a shell over, in this process,
 * listening on a loopback TCP port with its state in a temporary directory). Three conditions:
 *   none     the honest client alone;
 *   garbage  plus a flood of random bytes (refused at the frame parser);
 *   randkey  plus a flood of SEALED frames of the same size and rate, each under a fresh random
 *            client key with random ciphertext: the server must derive a key (X25519) before
 *            the MAC check can refuse it, unless the derivation budget refuses it first.
 * The conditions take turns in short slices (none, garbage, randkey, none, ...) for --rounds
 * rounds, so a machine whose load drifts affects the three alike; the figures are totals over
 * each condition's slices, and the ratio is also given as the median over rounds of the ratio
 * within a round. The honest client is one dialer of the transport seam with a key the server has
 * cached, sending sealed status requests one at a time. The flood is one TCP connection speaking
 * the SP wire protocol by hand (so frames are paced exactly, open loop, at --flood-rate frames/s
 * whatever the server answers) and draining the replies. CPU times come from getrusage: the
 * honest client's thread, the flooder's thread, and the rest of the process (the server's
 * workers and committer); a slice ends by waiting until the server has
 * answered what its flood queued (at most 1 s), which is charged to that slice. Prints figures
 * only; stops by itself after about 3 x S seconds plus those waits.
 *
 * Usage: bench_dos_flood [--seconds S] [--rounds N] [--flood-rate R] [--frame-bytes B]
 *                        [--workers W] [--derive-rate D]
 * Defaults: S 6 (per condition), N 12, R 18000, B 120, W 2, D the daemon's default
 * (key_derivations_per_s; 0 = unlimited). */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "bench_util.h"
#include "config.h"
#include "ldpb/keyfile.h"
#include "ldpb/seal.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "server.h"

enum flood_kind { FLOOD_NONE, FLOOD_GARBAGE, FLOOD_RANDKEY };
/* The SP protocol number of a REQ socket (the scalability protocols' reqrep, 3 * 16 + 0). */
#define SP_PROTO_REQ 48

static const char *const flood_names[] = {"none", "garbage", "randkey"};

struct flood {
    _Atomic int kind; /* enum flood_kind, switched by the main thread */
    atomic_int stop;
    int port;
    double rate;
    size_t frame_bytes;
    /* per condition, written by the flooder and read once it has been joined */
    uint64_t backlog_ms[3]; /* ms spent unable to write (the socket full) */
    double cpu_s[3];        /* the flooder thread's CPU */
};

static double thread_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One flood frame, SP-framed for a REQ peer: u64 BE length, u32 BE request id (top bit set),
 * then the frame. */
static size_t flood_frame(int kind, size_t n, uint8_t *out, uint32_t id)
{
    size_t body = 4 + n;
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((uint64_t)body >> (56 - 8 * i));
    uint32_t rid = id | 0x80000000u;
    for (int i = 0; i < 4; i++)
        out[8 + i] = (uint8_t)(rid >> (24 - 8 * i));
    uint8_t *fr = out + 12;
    randombytes_buf(fr, n);
    if (kind == FLOOD_GARBAGE) {
        fr[0] = 'X'; /* not the magic: refused by the frame parser */
    } else {
        memcpy(fr, "LDPB", 4);
        fr[4] = LDPB_FRAME_VERSION;
        fr[5] = LDPB_FRAME_SEALED;
        /* bytes 6..37 are the random client key; the nonce carries the current time */
        uint64_t now = ldpb_seal_now_ms();
        for (int i = 0; i < 8; i++)
            fr[LDPB_FRAME_HEADER_BYTES + LDPB_KEY_BYTES + i] = (uint8_t)(now >> (8 * i));
        fr[LDPB_FRAME_HEADER_BYTES + LDPB_KEY_BYTES + 8] = LDPB_DIR_TO_SERVER;
    }
    return 12 + n;
}

static void *flood_main(void *arg)
{
    struct flood *f = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)f->port);
    /* The SP handshake of nanomsg's TCP transport: "\0SP\0", the protocol (REQ, 48, big-endian)
     * and two reserved bytes, both ways. The flooder speaks the wire itself, without a socket
     * library, as an attacker would. */
    uint8_t hs[8] = {0, 'S', 'P', 0, 0, SP_PROTO_REQ, 0, 0}, peer[8];
    size_t got = 0;
    uint8_t *buf = malloc(12 + f->frame_bytes), sink[65536];
    if (!buf || fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write_all(fd, hs, sizeof hs) != 0) {
        fprintf(stderr, "bench_dos_flood: cannot connect the flooder: %s\n", strerror(errno));
        goto out;
    }
    while (got < sizeof peer) {
        ssize_t r = read(fd, peer + got, sizeof peer - got);
        if (r <= 0) {
            fprintf(stderr, "bench_dos_flood: no SP handshake from the server\n");
            goto out;
        }
        got += (size_t)r;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t pending = 0, off = 0; /* a partly written frame */
    int mode = -1;
    double t0 = 0, cpu0 = 0, blocked_since = 0;
    uint64_t sent = 0;
    uint32_t id = 0;
    while (!atomic_load(&f->stop)) {
        int k = atomic_load(&f->kind);
        double now = bench_now_ns() * 1e-9;
        if (k != mode) { /* a new slice: charge the CPU so far to the one that ended */
            double c = thread_cpu_s();
            if (mode >= 0)
                f->cpu_s[mode] += c - cpu0;
            cpu0 = c;
            mode = k;
            t0 = now;
            sent = 0;
            blocked_since = 0;
        }
        while (read(fd, sink, sizeof sink) > 0) {
        }
        uint64_t due = mode == FLOOD_NONE ? 0 : (uint64_t)((now - t0) * f->rate);
        int blocked = 0;
        while (sent < due || pending) {
            if (!pending) {
                pending = flood_frame(mode, f->frame_bytes, buf, id++);
                off = 0;
            }
            ssize_t w = write(fd, buf + off, pending - off);
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                blocked = 1;
                break;
            }
            if (w <= 0)
                goto out;
            off += (size_t)w;
            if (off == pending) {
                pending = 0;
                sent++;
            }
        }
        if (blocked && blocked_since == 0) {
            blocked_since = now;
        } else if (!blocked && blocked_since != 0) {
            f->backlog_ms[mode] += (uint64_t)((now - blocked_since) * 1e3);
            blocked_since = 0;
        }
        struct timespec ts = {0, 200000}; /* 0.2 ms ticks */
        nanosleep(&ts, NULL);
    }
    if (mode >= 0)
        f->cpu_s[mode] += thread_cpu_s() - cpu0;
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return NULL;
}

struct honest {
    ldpb_tp *tp;
    ldpb_keypair kp;
    ldpb_seal_key key;
    ldpb_rng *rng;
    uint64_t next_id;
};

/* One sealed status round trip; 0 if a Status came back. */
static int honest_round_trip(struct honest *h)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.protocol_version = LDPB_PROTOCOL_VERSION;
    env.has_request_id = 1;
    env.request_id = ++h->next_id;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    uint8_t pt[256], frame[LDPB_FRAME_MAX], nonce[LDPB_NONCE_BYTES];
    size_t pt_len = 0, len = 0;
    if (ldpb_envelope_encode(&env, pt, sizeof pt, &pt_len, NULL) != LDPB_OK)
        return -1;
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, h->rng);
    if (ldpb_seal_frame(frame, sizeof frame, &len, h->kp.pk, &h->key, nonce, pt, pt_len))
        return -1;
    if (ldpb_tp_send(h->tp, frame, len, NULL) != LDPB_OK)
        return -1;
    ldpb_tp_msg reply;
    if (ldpb_tp_recv(h->tp, &reply, NULL, 2000, NULL) != LDPB_OK)
        return -1;
    ldpb_frame f;
    uint8_t out[LDPB_PLAINTEXT_MAX];
    size_t out_len = 0;
    Ldpb__V1__Envelope *r = NULL;
    int ok = ldpb_frame_parse(reply.data, reply.len, &f, NULL) == LDPB_OK &&
             f.kind == LDPB_FRAME_SEALED &&
             ldpb_seal_open(&f, &h->key, LDPB_DIR_TO_CLIENT, h->kp.pk, out, sizeof out, &out_len,
                            NULL) == LDPB_OK &&
             ldpb_envelope_decode(out, out_len, &r, NULL) == LDPB_OK &&
             r->body_case == LDPB__V1__ENVELOPE__BODY_STATUS && r->request_id == env.request_id;
    ldpb_envelope_free(r);
    ldpb_tp_msg_free(h->tp, &reply);
    return ok ? 0 : -1;
}

static int set(agg_config *cfg, const char *name, const char *value)
{
    char reason[AGG_CONFIG_ERRMAX];
    if (agg_config_set(cfg, name, value, 1, reason) != LDPB_OK) {
        fprintf(stderr, "bench_dos_flood: %s = %s: %s\n", name, value, reason);
        return -1;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_dos_flood [--seconds S] [--rounds N] [--flood-rate R] "
                    "[--frame-bytes B] [--workers W] [--derive-rate D]\n");
}

int main(int argc, char **argv)
{
    double seconds = 6, rate = 18000;
    int rounds = 12;
    size_t frame_bytes = 120;
    const char *workers = "2", *derive_rate = NULL;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(v);
        else if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(v);
        else if (strcmp(argv[i], "--flood-rate") == 0)
            rate = atof(v);
        else if (strcmp(argv[i], "--frame-bytes") == 0)
            frame_bytes = (size_t)atol(v);
        else if (strcmp(argv[i], "--workers") == 0)
            workers = v;
        else if (strcmp(argv[i], "--derive-rate") == 0)
            derive_rate = v;
        else {
            usage();
            return 2;
        }
    }
    if (!(seconds > 0 && seconds <= 600) || rounds < 1 || rounds > 1000 ||
        !(rate > 0 && rate <= 1e6) || frame_bytes < LDPB_FRAME_SEALED_OVERHEAD ||
        frame_bytes > LDPB_FRAME_MAX) {
        usage();
        return 2;
    }
    if (sodium_init() < 0)
        return 1;

    char dir[] = "/tmp/ldpb-dos-XXXXXX", keypath[64], statedir[64], url[64], port_s[16];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(keypath, sizeof keypath, "%s/agg.key", dir);
    snprintf(statedir, sizeof statedir, "%s/state", dir);
    int port = free_port();
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    snprintf(port_s, sizeof port_s, "%d", port);
    int rc = 1;
    ldpb_keypair server_kp;
    agg_config cfg;
    agg_config_init(&cfg);
    agg_server *s = NULL;
    struct honest h;
    memset(&h, 0, sizeof h);
    char errmsg[AGG_SERVER_ERRMAX], detail[LDPB_DETAIL_BYTES] = "";
    if (ldpb_keypair_generate(&server_kp) ||
        ldpb_keyfile_write(keypath, LDPB_KEYFILE_SECRET, server_kp.sk, 0, detail)) {
        fprintf(stderr, "bench_dos_flood: server key: %s\n", detail);
        goto out;
    }
    if (set(&cfg, "listen", url) || set(&cfg, "state_dir", statedir) || set(&cfg, "key", keypath) ||
        set(&cfg, "arms", "3") || set(&cfg, "workers", workers) ||
        set(&cfg, "log_level", "error") ||
        (derive_rate && set(&cfg, "key_derivations_per_s", derive_rate)))
        goto out;
    if (agg_config_check(&cfg, errmsg) || agg_server_new(&s, &cfg, NULL, NULL, errmsg) ||
        agg_server_start(s, errmsg)) {
        fprintf(stderr, "bench_dos_flood: %s\n", errmsg);
        goto out;
    }

    ldpb_tp_opts to;
    ldpb_tp_opts_init(&to);
    to.send_timeout_ms = 2000;
    if (ldpb_keypair_generate(&h.kp) || ldpb_seal_key_derive(&h.key, server_kp.pk, h.kp.sk) ||
        ldpb_rng_new_system(&h.rng) || ldpb_tp_dial(&h.tp, url, &to, NULL) != LDPB_OK) {
        fprintf(stderr, "bench_dos_flood: cannot set up the honest client\n");
        goto out;
    }
    for (int i = 0; i < 50; i++) /* warm up: the server derives and caches this client's key */
        if (honest_round_trip(&h) != 0) {
            fprintf(stderr, "bench_dos_flood: the server does not answer the honest client\n");
            goto out;
        }

    printf("# bench_dos_flood: aggregator on %s, %s workers, key_derivations_per_s %s; "
           "flood %.0f frames/s of %zu bytes; %.1f s per condition in %d rounds\n",
           url, workers, derive_rate ? derive_rate : "default", rate, frame_bytes, seconds, rounds);
    struct flood fl;
    memset(&fl, 0, sizeof fl);
    fl.port = port;
    fl.rate = rate;
    fl.frame_bytes = frame_bytes;
    atomic_store(&fl.kind, FLOOD_NONE);
    pthread_t th;
    if (pthread_create(&th, NULL, flood_main, &fl) != 0)
        goto out;
    double slice = seconds / rounds, wall[3] = {0}, span[3] = {0}, me[3] = {0}, proc[3] = {0};
    uint64_t ok[3] = {0}, failed[3] = {0}, flood_frames[3] = {0}, derived[3] = {0},
             refused[3] = {0};
    double *pair = calloc((size_t)rounds, sizeof *pair);
    int pairs = 0;
    for (int r = 0; r < rounds && pair; r++) {
        double round_rate[3];
        for (int k = FLOOD_NONE; k <= FLOOD_RANDKEY; k++) {
            atomic_store(&fl.kind, k);
            agg_server_stats st0, st1;
            agg_server_stats_get(s, &st0);
            double proc0 = process_cpu_s(), me0 = thread_cpu_s(), t0 = bench_now_ns();
            uint64_t n_ok = 0, n_failed = 0;
            while ((bench_now_ns() - t0) * 1e-9 < slice) {
                if (honest_round_trip(&h) == 0)
                    n_ok++;
                else
                    n_failed++;
            }
            double w = (bench_now_ns() - t0) * 1e-9;
            me[k] += thread_cpu_s() - me0;
            /* Let the server work off what the flood queued before the next slice starts, and
             * charge that work to this one. */
            atomic_store(&fl.kind, FLOOD_NONE);
            uint64_t seen = 0;
            for (int quiet = 0, i = 0; quiet < 4 && i < 100; i++) {
                struct timespec ts = {0, 10000000};
                nanosleep(&ts, NULL);
                agg_server_stats_get(s, &st1);
                quiet = st1.requests == seen ? quiet + 1 : 0;
                seen = st1.requests;
            }
            proc[k] += process_cpu_s() - proc0;
            span[k] += (bench_now_ns() - t0) * 1e-9;
            wall[k] += w;
            ok[k] += n_ok;
            failed[k] += n_failed;
            flood_frames[k] += st1.requests - st0.requests - n_ok - n_failed;
            derived[k] += st1.key_derivations - st0.key_derivations;
            refused[k] += st1.key_derivations_refused - st0.key_derivations_refused;
            round_rate[k] = (double)n_ok / w;
        }
        if (round_rate[FLOOD_GARBAGE] > 0)
            pair[pairs++] = round_rate[FLOOD_RANDKEY] / round_rate[FLOOD_GARBAGE];
    }
    atomic_store(&fl.stop, 1);
    pthread_join(th, NULL);
    if (!pair)
        goto out;
    printf("%-8s %11s %7s %13s %13s %12s %12s %13s %9s %9s\n", "flood", "honest_rt/s", "failed",
           "client_us/rt", "server_us/rt", "server_cores", "flood_recv/s", "flooder_cores",
           "derived", "refused");
    double rate_k[3];
    for (int k = FLOOD_NONE; k <= FLOOD_RANDKEY; k++) {
        double server_cpu = proc[k] - me[k] - fl.cpu_s[k];
        rate_k[k] = (double)ok[k] / wall[k];
        printf("%-8s %11.0f %7llu %13.1f %13.1f %12.2f %12.0f %13.2f %9llu %9llu\n", flood_names[k],
               rate_k[k], (unsigned long long)failed[k], ok[k] ? me[k] / (double)ok[k] * 1e6 : 0,
               ok[k] ? server_cpu / (double)ok[k] * 1e6 : 0, server_cpu / span[k],
               (double)flood_frames[k] / wall[k], fl.cpu_s[k] / span[k],
               (unsigned long long)derived[k], (unsigned long long)refused[k]);
        if (fl.backlog_ms[k])
            printf("#   %s: the flooder could not write for %llu ms (the server fell behind)\n",
                   flood_names[k], (unsigned long long)fl.backlog_ms[k]);
    }
    qsort(pair, (size_t)pairs, sizeof *pair, bench_cmp_double);
    printf("# honest rate, random-key flood / garbage flood: %.2f (totals), %.2f (median of %d "
           "rounds); random-key flood / no flood: %.2f\n",
           rate_k[FLOOD_GARBAGE] > 0 ? rate_k[FLOOD_RANDKEY] / rate_k[FLOOD_GARBAGE] : 0,
           pairs ? (pairs % 2 ? pair[pairs / 2] : (pair[pairs / 2 - 1] + pair[pairs / 2]) / 2) : 0,
           pairs, rate_k[FLOOD_NONE] > 0 ? rate_k[FLOOD_RANDKEY] / rate_k[FLOOD_NONE] : 0);
    free(pair);
    rc = 0;
out:
    ldpb_tp_close(h.tp, 0);
    ldpb_rng_free(h.rng);
    ldpb_keypair_wipe(&h.kp);
    ldpb_seal_key_wipe(&h.key);
    agg_server_free(s);
    agg_config_fini(&cfg);
    ldpb_keypair_wipe(&server_kp);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_dos_flood: could not remove %s\n", dir);
    return rc;
}
