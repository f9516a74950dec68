/* Fuzz target for the native SP dialer (common/src/transport_sp_dial.c): the bytes a peer sends
 * back to a device before any of it is authenticated. The first input byte picks the mapping
 * (odd: IPC, whose messages carry a type byte; even: TCP, over loopback); the rest is what the
 * peer writes on the connection, after the dialer's first request (whose id is 0x80000001), before
 * it closes its side. Whatever the bytes, the dialer must neither crash, nor leak, nor hang, nor
 * deliver a reply longer than its limit; a reply it delivers is one it could read whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../support/test_port.h"
#include "fuzz_target.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define RECV_MAX 4096

typedef struct peer {
    int fd; /* listening */
    char url[160];
} peer;

static char ipc_path[108];

static void remove_ipc_path(void)
{
    unlink(ipc_path);
}

/* One listening socket per mapping and process; the dialer connects into its backlog, so the
 * peer's side is accepted only after the request is written (one thread is enough). */
static peer *listening(int ipc)
{
    static peer peers[2] = {{-1, ""}, {-1, ""}};
    peer *p = &peers[ipc];
    if (p->fd >= 0)
        return p;
    if (ipc) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        snprintf(un.sun_path, sizeof un.sun_path, "/tmp/ldpb-fuzz-spdial-%ld.sock", (long)getpid());
        unlink(un.sun_path);
        p->fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (p->fd < 0 || bind(p->fd, (struct sockaddr *)&un, sizeof un) != 0 ||
            listen(p->fd, 8) != 0)
            abort();
        snprintf(ipc_path, sizeof ipc_path, "%s", un.sun_path);
        atexit(remove_ipc_path);
        snprintf(p->url, sizeof p->url, "ipc://%s", un.sun_path);
    } else {
        unsigned port = 0;
        p->fd = ldpb_test_loopback_listener(8, &port);
        if (p->fd < 0)
            abort();
        snprintf(p->url, sizeof p->url, "tcp://127.0.0.1:%u", port);
    }
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    peer *p = listening(data[0] & 1);
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.recv_max = RECV_MAX;
    o.send_timeout_ms = 1000;
    ldpb_tp *d = NULL;
    const ldpb_tp_ops *sp = ldpb_tp_named("sp");
    if (!sp || sp->dial(&d, p->url, &o, NULL) != LDPB_OK)
        abort();
    static const uint8_t request[] = "LDPB-request";
    if (ldpb_tp_send(d, request, sizeof request, NULL) != LDPB_OK)
        abort();
    int fd = accept(p->fd, NULL, NULL);
    if (fd < 0)
        abort();
    /* the input fits the socket's buffer (libFuzzer's -max_len stays far below it) */
    const uint8_t *q = data + 1;
    size_t left = size - 1;
    while (left) {
        ssize_t w = write(fd, q, left);
        if (w <= 0)
            break;
        q += w;
        left -= (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    /* one spare byte, as the client passes, to see a reply longer than the buffer */
    uint8_t reply[RECV_MAX + 1];
    size_t n = 0;
    ldpb_err err = ldpb_tp_recv_into(d, reply, sizeof reply, &n, 2000, NULL);
    if (err == LDPB_OK && n > RECV_MAX)
        abort();
    if (err != LDPB_OK && n != 0)
        abort();
    ldpb_tp_close(d, 0);
    close(fd);
    return 0;
}
