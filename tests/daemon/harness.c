/* The daemon test harness (harness.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <sodium.h>

#include "harness.h"
#include "ldpb/keyfile.h"

#ifndef LDPB_AGGREGATOR_BIN
#error "LDPB_AGGREGATOR_BIN must name the daemon binary"
#endif

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int dt_free_port(void)
{
    return ldpb_test_free_port();
}

int dt_pg_database(const char *name, char *url, size_t cap)
{
    const char *state = getenv("LDPB_TEST_PG_STATE"), *script = getenv("LDPB_TEST_PG_SCRIPT");
    if (!state || !script)
        return -1;
    char cmd[1024];
    if ((size_t)snprintf(cmd, sizeof cmd, "bash '%s' url '%s' '%s'", script, state, name) >=
        sizeof cmd)
        return -1;
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = fgets(url, (int)cap, p) != NULL;
    int st = pclose(p);
    if (!got || st != 0)
        return -1;
    url[strcspn(url, "\n")] = '\0';
    return 0;
}

int dt_pg_query(const dt_daemon *d, const char *sql, char *out, size_t cap)
{
    char cmd[4096];
    if ((size_t)snprintf(cmd, sizeof cmd, "psql -Atq -v ON_ERROR_STOP=1 '%s' -c \"%s\"", d->store,
                         sql) >= sizeof cmd)
        return -1;
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = fgets(out, (int)cap, p) != NULL;
    if (!got)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    char sink[256];
    while (fgets(sink, sizeof sink, p)) /* the rest, so psql does not die on a closed pipe */
        ;
    return pclose(p) != 0 ? -1 : got ? 0 : 1;
}

int dt_daemon_init(dt_daemon *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "/tmp/ldpb-dtest-XXXXXX");
    if (!mkdtemp(d->dir))
        return -1;
    snprintf(d->state_dir, sizeof d->state_dir, "%s/state", d->dir);
    snprintf(d->conf, sizeof d->conf, "%s/aggregator.conf", d->dir);
    snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
    snprintf(d->key, sizeof d->key, "%s/server.key", d->dir);
    snprintf(d->ipc_url, sizeof d->ipc_url, "ipc://%s/agg.sock", d->dir);
    int port = dt_free_port();
    if (port < 0)
        return -1;
    snprintf(d->tcp_url, sizeof d->tcp_url, "tcp://127.0.0.1:%d", port);
    if (getenv("LDPB_TEST_PG_STATE")) {
        /* A database per daemon, named after its directory (mkdtemp's letters; PostgreSQL folds
         * unquoted names to lower case). */
        char name[64] = "dt_";
        size_t n = strlen(name);
        for (const char *c = strrchr(d->dir, '-') + 1; *c && n < sizeof name - 2; c++) {
            if (*c >= 'A' && *c <= 'Z') {
                name[n++] = '_'; /* "_a" for 'A': no two directories share a name */
                name[n++] = (char)(*c - 'A' + 'a');
            } else {
                name[n++] = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ? *c : 'x';
            }
        }
        name[n] = '\0';
        if (dt_pg_database(name, d->store, sizeof d->store) != 0)
            return -1;
    }
    if (ldpb_keypair_generate(&d->server) != LDPB_OK)
        return -1;
    char detail[LDPB_DETAIL_BYTES];
    if (ldpb_keyfile_write(d->key, LDPB_KEYFILE_SECRET, d->server.sk, 0, detail) != LDPB_OK)
        return -1;
    return 0;
}

int dt_daemon_write_config(dt_daemon *d, const char *extra)
{
    FILE *f = fopen(d->conf, "w");
    if (!f)
        return -1;
    fprintf(f,
            "# written by the daemon test harness\n"
            "listen = %s\n"
            "listen = %s\n"
            "state_dir = %s\n"
            "key = %s\n"
            "%s%s%s"
            "%s\n",
            d->ipc_url, d->tcp_url, d->state_dir, d->key, d->store[0] ? "store = " : "", d->store,
            d->store[0] ? "\n" : "", extra ? extra : "");
    return fclose(f) == 0 ? 0 : -1;
}

int dt_wait_status(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

static pid_t spawn(const dt_daemon *d, const char *const *args, int use_config, int err_fd)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = LDPB_AGGREGATOR_BIN;
    if (use_config) {
        argv[n++] = "--config";
        argv[n++] = d->conf;
    }
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* A daemon left behind by a failed assertion dies with the test process. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (err_fd >= 0)
        dup2(err_fd, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

/* A start that fails says why on the test's stderr: the daemon's own last words, which the
 * temporary directory would otherwise take away with it. A start a test expects to be refused
 * prints them too (its refusal message). */
static void print_log_tail(const dt_daemon *d, const char *what)
{
    enum { TAIL = 2048 };
    FILE *f = fopen(d->log, "r");
    fprintf(stderr, "dt_daemon_start: %s; the end of its log (%s):\n", what, d->log);
    if (!f)
        return;
    char buf[TAIL + 1];
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > TAIL)
            fseek(f, size - TAIL, SEEK_SET);
        else
            rewind(f);
    }
    size_t n = fread(buf, 1, TAIL, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "%s%s", buf, n && buf[n - 1] != '\n' ? "\n" : "");
}

int dt_daemon_start(dt_daemon *d, const char *const *args, int *status)
{
    if (status)
        *status = -1;
    int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    d->pid = spawn(d, args, 1, fd);
    if (fd >= 0)
        close(fd);
    if (d->pid < 0) {
        d->pid = 0;
        return -1;
    }
    dt_client c;
    if (dt_client_open(&c, d->ipc_url, d->server.pk, 200) != 0)
        return -1;
    /* A deadline on the clock, not a count of probes: a probe lasts up to its 200 ms timeout
     * and a loaded machine (restoring a large state, a sanitizer build) may need far longer than
     * usual; an exit is seen at once all the same. */
    for (long end = ldpb_test_now_ms() + DT_START_MS;;) {
        int st;
        pid_t done = waitpid(d->pid, &st, WNOHANG);
        if (done == d->pid) {
            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            if (status)
                *status = code;
            d->pid = 0;
            dt_client_close(&c);
            char what[64];
            snprintf(what, sizeof what, "the daemon exited with status %d", code);
            print_log_tail(d, what);
            return -1;
        }
        /* Any reply means it serves (a PLAIN_ERROR too: an allow-list refuses the probe). */
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
        env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
        env.status_request = &sr;
        dt_reply r;
        if (dt_client_call(&c, &env, &r) == 0 && r.kind != 0) {
            dt_reply_clear(&r);
            dt_client_close(&c);
            return 0;
        }
        dt_reply_clear(&r);
        if (ldpb_test_now_ms() >= end)
            break;
        sleep_ms(100);
    }
    dt_client_close(&c);
    kill(d->pid, SIGKILL);
    dt_wait_status(d->pid);
    d->pid = 0;
    print_log_tail(d, "the daemon did not answer in time and was killed");
    return -1;
}

int dt_daemon_run(const dt_daemon *d, const char *const *args, char *err, size_t cap)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = spawn(d, args, 0, p[1]);
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    char sink[256];
    while ((r = read(p[0], n + 1 < cap ? err + n : sink, n + 1 < cap ? cap - 1 - n : sizeof sink)) >
           0)
        if (n + 1 < cap)
            n += (size_t)r;
    if (cap)
        err[n] = '\0';
    close(p[0]);
    return pid < 0 ? -1 : dt_wait_status(pid);
}

int dt_daemon_signal_wait(dt_daemon *d, int sig)
{
    if (d->pid <= 0)
        return -1;
    kill(d->pid, sig);
    int st = dt_wait_status(d->pid);
    d->pid = 0;
    return st;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void dt_daemon_cleanup(dt_daemon *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        dt_wait_status(d->pid);
        d->pid = 0;
    }
    if (getenv("LDPB_KEEP_TEST_DIRS"))
        fprintf(stderr, "kept %s\n", d->dir);
    else if (d->dir[0])
        nftw(d->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    ldpb_keypair_wipe(&d->server);
}

/* ---- client ------------------------------------------------------------------------------ */

int dt_client_open(dt_client *c, const char *url, const uint8_t server_pk[LDPB_KEY_BYTES],
                   int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->sock = -1;
    if (ldpb_keypair_generate(&c->kp) != LDPB_OK ||
        ldpb_seal_key_derive(&c->key, server_pk, c->kp.sk) != LDPB_OK ||
        ldpb_rng_new_system(&c->rng) != LDPB_OK)
        return -1;
    memcpy(c->server_pk, server_pk, LDPB_KEY_BYTES);
    c->sock = nn_socket(AF_SP, NN_REQ);
    if (c->sock < 0)
        return -1;
    int big = 1 << 20;
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &big, sizeof big);
    if (nn_connect(c->sock, url) < 0)
        return -1;
    c->next_id = 1;
    return 0;
}

int dt_client_reconnect(dt_client *c, const char *url, int timeout_ms)
{
    if (c->sock >= 0)
        nn_close(c->sock);
    c->sock = nn_socket(AF_SP, NN_REQ);
    if (c->sock < 0)
        return -1;
    int big = 1 << 20;
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    nn_setsockopt(c->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &big, sizeof big);
    return nn_connect(c->sock, url) < 0 ? -1 : 0;
}

void dt_client_close(dt_client *c)
{
    if (c->sock >= 0)
        nn_close(c->sock);
    c->sock = -1;
    ldpb_rng_free(c->rng);
    c->rng = NULL;
    ldpb_keypair_wipe(&c->kp);
    ldpb_seal_key_wipe(&c->key);
}

void dt_reply_clear(dt_reply *r)
{
    ldpb_envelope_free(r->env);
    memset(r, 0, sizeof *r);
}

size_t dt_client_seal(dt_client *c, const uint8_t *pt, size_t pt_len, uint8_t *frame, size_t cap)
{
    uint8_t nonce[LDPB_NONCE_BYTES];
    ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, c->rng);
    size_t len = 0;
    if (ldpb_seal_frame(frame, cap, &len, c->kp.pk, &c->key, nonce, pt, pt_len) != LDPB_OK)
        return 0;
    return len;
}

int dt_client_raw(dt_client *c, const uint8_t *msg, size_t len, dt_reply *r)
{
    memset(r, 0, sizeof *r);
    if (nn_send(c->sock, msg, len, 0) < 0)
        return -1;
    void *buf = NULL;
    int n = nn_recv(c->sock, &buf, NN_MSG, 0);
    if (n < 0)
        return 0; /* kind 0: no reply */
    ldpb_frame fr;
    r->kind = 3;
    if (ldpb_frame_parse(buf, (size_t)n, &fr, NULL) == LDPB_OK) {
        if (fr.kind == LDPB_FRAME_PLAIN_ERROR) {
            r->kind = 2;
            r->plain_code = fr.error_code;
            memcpy(r->reason, fr.reason, fr.reason_len);
            r->reason[fr.reason_len] = '\0';
        } else {
            uint8_t *pt = malloc(LDPB_PLAINTEXT_MAX); /* threads share nothing */
            size_t pt_len = 0;
            if (pt &&
                ldpb_seal_open(&fr, &c->key, LDPB_DIR_TO_CLIENT, c->kp.pk, pt, LDPB_PLAINTEXT_MAX,
                               &pt_len, NULL) == LDPB_OK &&
                ldpb_envelope_decode(pt, pt_len, &r->env, NULL) == LDPB_OK) {
                r->kind = 1;
                if (r->env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR)
                    snprintf(r->reason, sizeof r->reason, "%s", r->env->error->reason);
            }
            free(pt);
        }
    }
    nn_freemsg(buf);
    return 0;
}

size_t dt_client_frame(dt_client *c, Ldpb__V1__Envelope *env, uint8_t *frame, size_t cap)
{
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    env->has_request_id = 1;
    env->request_id = c->next_id++;
    size_t len = ldpb__v1__envelope__get_packed_size(env), flen = 0;
    uint8_t *pt = malloc(len + 1);
    if (pt && len <= LDPB_PLAINTEXT_MAX) {
        ldpb__v1__envelope__pack(env, pt);
        flen = dt_client_seal(c, pt, len, frame, cap);
    }
    free(pt);
    return flen;
}

int dt_client_call(dt_client *c, Ldpb__V1__Envelope *env, dt_reply *r)
{
    env->protocol_version = LDPB_PROTOCOL_VERSION;
    env->has_request_id = 1;
    env->request_id = c->next_id++;
    /* Packed without ldpb_envelope_check, so tests can send what a checked sender refuses. */
    size_t len = ldpb__v1__envelope__get_packed_size(env);
    uint8_t *pt = malloc(len + 1), *frame = malloc(LDPB_FRAME_SEALED_OVERHEAD + len);
    int rc = -1;
    if (pt && frame && len <= LDPB_PLAINTEXT_MAX) {
        ldpb__v1__envelope__pack(env, pt);
        size_t flen = dt_client_seal(c, pt, len, frame, LDPB_FRAME_SEALED_OVERHEAD + len);
        if (flen)
            rc = dt_client_raw(c, frame, flen, r);
    }
    free(pt);
    free(frame);
    return rc;
}

int dt_assign(dt_client *c, uint32_t *arm, int *mechanism, double *epsilon, uint8_t *id,
              size_t *id_len)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    dt_reply r;
    if (dt_client_call(c, &env, &r) != 0)
        return -1;
    int ok = r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    if (ok) {
        const Ldpb__V1__Assignment *a = r.env->assignment;
        *arm = a->arm;
        *mechanism = (int)a->mechanism;
        *epsilon = a->epsilon;
        memcpy(id, a->assignment_id.data, a->assignment_id.len);
        *id_len = a->assignment_id.len;
    }
    dt_reply_clear(&r);
    return ok ? 0 : -1;
}

int dt_report(dt_client *c, const uint8_t *id, size_t id_len, int mechanism, double epsilon,
              int use_bit, uint32_t bit, double real, dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)id;
    rep.assignment_id.len = id_len;
    rep.mechanism = (Ldpb__V1__Mechanism)mechanism;
    rep.epsilon = epsilon;
    if (use_bit) {
        rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
        rep.bit = bit;
    } else {
        rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
        rep.real = real;
    }
    return dt_client_call(c, &env, r);
}

int dt_status(dt_client *c, uint64_t *pulls, uint32_t k, uint64_t *reports)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    dt_reply r;
    if (dt_client_call(c, &env, &r) != 0)
        return -1;
    int n = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_STATUS) {
        const Ldpb__V1__Status *st = r.env->status;
        n = (int)st->n_arms;
        for (size_t i = 0; i < st->n_arms && i < k; i++)
            pulls[i] = st->arms[i]->pulls;
        *reports = st->reports;
    }
    dt_reply_clear(&r);
    return n;
}

int dt_is_error(const dt_reply *r, int sealed, uint32_t code)
{
    if (sealed)
        return r->kind == 1 && r->env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR &&
               r->env->error->code == code;
    return r->kind == 2 && r->plain_code == code;
}

int dt_is_ack(const dt_reply *r, int *duplicate)
{
    if (r->kind != 1 || r->env->body_case != LDPB__V1__ENVELOPE__BODY_ACK)
        return 0;
    if (duplicate)
        *duplicate = r->env->ack->has_duplicate && r->env->ack->duplicate;
    return 1;
}
