/* What the native SP listener (transport_sp.c) and dialer (transport_sp_dial.c) share: the wire's
 * constants, the URL forms they take, and the one loop that writes a message. Internal. */
#ifndef LDPB_TRANSPORT_SP_INTERNAL_H
#define LDPB_TRANSPORT_SP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include "ldpb/transport.h"

#define SP_PROTO_REQ   48
#define SP_PROTO_REP   49
#define IPC_MSG_NORMAL 1
/* Longest host part of a tcp:// URL, with its terminating zero. */
#define SP_HOST_MAX 128

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t ldpb_sp_mono_ms(void);
uint64_t ldpb_sp_be64(const uint8_t *p);

/* tcp://HOST:PORT into HOST (brackets of an IPv6 address kept) and PORT; LDPB_EINVAL with a
 * detail that starts "cannot `verb` URL" for a URL without a port or with too long a host. */
ldpb_err ldpb_sp_tcp_split(const char *url, const char *verb, char host[SP_HOST_MAX],
                           uint16_t *port, char *detail);
/* HOST as an IPv4 address or a bracketed IPv6 one into *ss: 1, or 0 when HOST is neither (a name,
 * "*", an interface). */
int ldpb_sp_ip_literal(const char *host, uint16_t port, struct sockaddr_storage *ss,
                       socklen_t *len);
/* ipc://PATH into a Unix socket address; LDPB_EINVAL when PATH is empty or too long. */
ldpb_err ldpb_sp_ipc_addr(const char *url, const char *verb, struct sockaddr_un *un, socklen_t *len,
                          char *detail);

/* Writes iov[0..n) whole to a non-blocking socket (iov is consumed), waiting for room until the
 * monotonic give_up_ms (UINT64_MAX: forever): 0, or -1 with errno (ETIMEDOUT when give_up_ms
 * passed). Never raises SIGPIPE. */
int ldpb_sp_write_iov(int fd, struct iovec *iov, int n, uint64_t give_up_ms);

/* transport_sp_dial.c: the dialer of ldpb_tp_sp_ops. */
ldpb_err ldpb_sp_dial(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail);

#endif
