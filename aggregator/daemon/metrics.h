/* A minimal Prometheus endpoint: GET /metrics on HOST:PORT answers the server's counters, the
 * standard process_* series and ldpb_build_info in the text exposition format (libmicrohttpd, one
 * internal polling thread; at most 8 connections per client address, idle ones closed after 5 s).
 * Anything else is a 404. */
#ifndef LDPB_AGG_METRICS_H
#define LDPB_AGG_METRICS_H

#include "ldpb/err.h"

typedef struct agg_metrics agg_metrics;
struct agg_server;

/* Starts serving `host_port` ("127.0.0.1:9464", "[::1]:9464" or ":9464" for every address).
 * Errors: LDPB_EINVAL (unparsable address), LDPB_EIO (cannot bind), LDPB_ENOMEM; `errmsg`
 * (AGG_SERVER_ERRMAX bytes) says why. The server must outlive the endpoint. */
ldpb_err agg_metrics_start(agg_metrics **out, const char *host_port, struct agg_server *s,
                           char *errmsg);

/* Stops the endpoint and frees it. Accepts NULL. */
void agg_metrics_stop(agg_metrics *m);

/* Checks that `host_port` parses as agg_metrics_start parses it; binds nothing. LDPB_EINVAL with
 * the reason in `errmsg` (AGG_SERVER_ERRMAX bytes) otherwise. */
ldpb_err agg_metrics_check_addr(const char *host_port, char *errmsg);

#endif
