/* Process-wide hardening of the aggregator, done once at the top of main before any secret is
 * loaded: no core file, and a process others of the same uid cannot ptrace or read through
 * /proc/PID/mem. The secret keys themselves live in sodium_malloc'd memory (locked, excluded
 * from core dumps, wiped on free): see agg_server_new and ldpb_keycache_new. */
#ifndef LDPB_AGG_HARDEN_H
#define LDPB_AGG_HARDEN_H

#include "ldpb/err.h"

#define AGG_HARDEN_ERRMAX 256

/* Sets RLIMIT_CORE to 0 (soft and hard, so it cannot be raised again) and PR_SET_DUMPABLE to 0.
 * LDPB_EIO if either fails; `errmsg` (AGG_HARDEN_ERRMAX bytes) says which and why. */
ldpb_err agg_process_harden(char *errmsg);

#endif
