/* Fuzz target for the native SP listener (common/src/transport_sp.c): the first input byte picks
 * the mapping (odd: IPC, whose messages carry a type byte; even: the TCP framing, spoken here over
 * a local socket too), the rest is what one client sends on a connection before it closes its
 * side. Every message the listener delivers must lie within the limit and be answerable; whatever
 * the bytes, the listener must neither crash, nor leak, nor hang: after the client's end of stream
 * the connection is dropped and nothing more arrives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define RECV_MAX 4096

typedef struct endpoint {
    ldpb_tp *l;
    struct sockaddr_storage addr;
    socklen_t addr_len;
} endpoint;

/* One listener per mapping and process: IPC on a socket file of this process, TCP on a loopback
 * port picked from the process id (the next free one). */
static endpoint *listener(int ipc)
{
    static endpoint eps[2];
    endpoint *e = &eps[ipc];
    if (e->l)
        return e;
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.recv_max = RECV_MAX;
    memset(&e->addr, 0, sizeof e->addr);
    for (int attempt = 0; attempt < 64 && !e->l; attempt++) {
        char url[160];
        if (ipc) {
            struct sockaddr_un *un = (struct sockaddr_un *)&e->addr;
            un->sun_family = AF_UNIX;
            snprintf(un->sun_path, sizeof un->sun_path, "/tmp/ldpb-fuzz-sp-%ld.sock",
                     (long)getpid());
            e->addr_len = sizeof *un;
            snprintf(url, sizeof url, "ipc://%s", un->sun_path);
        } else {
            struct sockaddr_in *in = (struct sockaddr_in *)&e->addr;
            int port = 20000 + (int)((getpid() * 7 + attempt) % 40000);
            in->sin_family = AF_INET;
            in->sin_port = htons((uint16_t)port);
            in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            e->addr_len = sizeof *in;
            snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
        }
        const char *u = url;
        if (ldpb_tp_listen_with(&e->l, ldpb_tp_named("sp"), &u, 1, &o, NULL) != LDPB_OK)
            e->l = NULL;
    }
    if (!e->l)
        abort();
    return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    endpoint *e = listener(data[0] & 1);
    int fd = socket(e->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&e->addr, e->addr_len) != 0)
        abort();
    ldpb_tp *l = e->l;
    /* the input fits the socket's buffer (libFuzzer's -max_len stays far below it) */
    const uint8_t *p = data + 1;
    size_t left = size - 1;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    for (int quiet = 0; quiet < 3;) {
        ldpb_tp_msg m;
        ldpb_tp_route r;
        ldpb_err err = ldpb_tp_recv(l, &m, &r, 1, NULL);
        if (err == LDPB_ETIMEDOUT) {
            quiet++;
            continue;
        }
        if (err != LDPB_OK || m.len > RECV_MAX)
            abort();
        quiet = 0;
        static const uint8_t answer[] = "LDPB-answer";
        (void)ldpb_tp_reply(l, r, answer, sizeof answer);
        ldpb_tp_msg_free(l, &m);
    }
    close(fd);
    return 0;
}
