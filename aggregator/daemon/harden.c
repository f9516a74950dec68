/* Process hardening (harden.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "harden.h"

ldpb_err agg_process_harden(char *errmsg)
{
    const struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) {
        snprintf(errmsg, AGG_HARDEN_ERRMAX, "cannot disable core dumps: setrlimit: %s",
                 strerror(errno));
        return LDPB_EIO;
    }
    /* Not dumpable also covers what RLIMIT_CORE does not: the kernel hands a dump to a piped
     * core_pattern helper whatever the limit says, and another process of the same uid could
     * ptrace the daemon or read /proc/PID/mem to take the keys out of a running daemon. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        snprintf(errmsg, AGG_HARDEN_ERRMAX, "cannot disable core dumps: prctl: %s",
                 strerror(errno));
        return LDPB_EIO;
    }
    return LDPB_OK;
}
