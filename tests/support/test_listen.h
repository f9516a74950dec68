/* A transport listener on a fresh address, for the transport tests (test_transport.c,
 * test_transport_dial.c). Needs cmocka.h and ldpb/transport.h included before it. */
#ifndef LDPB_TEST_SUPPORT_TEST_LISTEN_H
#define LDPB_TEST_SUPPORT_TEST_LISTEN_H

#include <stdio.h>
#include <unistd.h>

#include "ldpb/wire.h"
#include "test_port.h"

/* Listens with the transport named `with` (NULL: the URL scheme's) on ipc:// (a path of this
 * process: `tag` and `n` tell the tests' sockets apart) or tcp:// on a port outside the ephemeral
 * range (test_port.h), drawn again while the draw turns out taken by the time of the bind
 * (EADDRINUSE, LDPB_ETRANSPORT): never a port another process may be using. The URL goes into
 * `url`. */
static inline ldpb_tp *ldpb_test_listen_fresh(char *url, size_t cap, int ipc, int n,
                                              const char *with, size_t recv_max, const char *tag)
{
    ldpb_tp_opts o;
    ldpb_tp_opts_init(&o);
    o.recv_max = recv_max;
    char detail[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = LDPB_ETRANSPORT;
    ldpb_tp *l = NULL;
    for (int tries = 0; tries < 20 && err == LDPB_ETRANSPORT; tries++) {
        if (ipc) {
            snprintf(url, cap, "ipc:///tmp/ldpb-test-%s-%ld-%d.sock", tag, (long)getpid(), n);
        } else {
            int port = ldpb_test_free_port();
            assert_true(port > 0);
            snprintf(url, cap, "tcp://127.0.0.1:%d", port);
        }
        const char *u = url;
        err = ldpb_tp_listen_with(&l, with ? ldpb_tp_named(with) : NULL, &u, 1, &o, detail);
        if (err)
            print_message("listen %s: %s\n", url, detail);
    }
    assert_int_equal(err, LDPB_OK);
    return l;
}

#endif
