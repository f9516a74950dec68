/* The one durable whole-file write the build uses (the client's ledger and report queue, key
 * files, the daemon's export and backup): the content goes to a fresh temporary file beside the
 * target, created O_EXCL | O_NOFOLLOW under an unguessable name (PATH.tmp.<16 hex digits>), is
 * fsynced, then renamed over the target (or linked to it, never replacing a file), and the
 * directory is fsynced. A crash leaves the old file or the new one, never a mix; a planted file or
 * symbolic link at a temporary name is never written through. Also the checks around such a file:
 * opening only a regular file without following a link or blocking, an exclusive advisory lock,
 * and the removal of temporary files a crash left behind. Internal to the build: not installed,
 * and not part of the client library's API. */
#ifndef LDPB_DURABLE_H
#define LDPB_DURABLE_H

#include <stddef.h>

#include "ldpb/err.h"

/* The temporary file's name: the target's path, this suffix, then LDPB_DURABLE_TMP_RANDOM
 * lower-case hex digits drawn afresh for each write. */
#define LDPB_DURABLE_TMP_SUFFIX ".tmp."
#define LDPB_DURABLE_TMP_RANDOM 16u

/* The steps of one write, in order, for a test hook that makes one of them fail. */
typedef enum ldpb_durable_step {
    LDPB_DURABLE_TMP_WRITTEN = 1, /* the content is in the temporary file, not yet synced */
    LDPB_DURABLE_TMP_SYNCED,      /* the temporary file fsynced and closed */
    LDPB_DURABLE_PLACED,          /* renamed over (or linked to) the target */
    LDPB_DURABLE_DIR_SYNCED,      /* the directory fsynced: the new file is durable */
} ldpb_durable_step;

/* Writes the content into `fd`, the temporary file opened for writing (positioned at 0), whose
 * name is `tmp_path` (for a writer that needs a name, such as SQLite's backup; it must not replace
 * or remove that file). LDPB_OK, or an error that the write returns as is (errno set for
 * LDPB_EIO). The helper fsyncs and closes `fd` itself. */
typedef ldpb_err (*ldpb_durable_fill)(void *ctx, int fd, const char *tmp_path);

typedef struct ldpb_durable_opts {
    unsigned mode;  /* the new file's permission bits, set whatever the umask; 0 means 0600 */
    int no_replace; /* link instead of rename: LDPB_ESTATE if the target exists */
    /* Test hook, NULL normally: a nonzero return at a step makes it fail as an I/O error would. */
    int (*step)(void *ctx, ldpb_durable_step step);
    void *step_ctx;
} ldpb_durable_opts;

/* Writes `path` durably with the content `fill` produces (opts NULL: mode 0600, replacing).
 * *placed (optional) is set to 1 once the new file is at `path`, even if the directory's fsync
 * then fails: a caller whose state must match the file needs to know. The temporary file is
 * removed on every failure. `detail` (optional, `detail_size` bytes) says what failed, without
 * the path (the caller prefixes it: "PATH: cannot replace it: No space left on device"). It
 * allocates nothing. Errors: LDPB_EINVAL (an empty path), LDPB_ESTATE (no_replace and the target
 * exists), LDPB_EIO, or the fill's own error. */
ldpb_err ldpb_durable_write(const char *path, const ldpb_durable_opts *opts, ldpb_durable_fill fill,
                            void *ctx, int *placed, char *detail, size_t detail_size);

/* A fill for a buffer: `ctx` points to a ldpb_durable_buf. */
typedef struct ldpb_durable_buf {
    const void *data;
    size_t len;
} ldpb_durable_buf;
ldpb_err ldpb_durable_fill_buf(void *ctx, int fd, const char *tmp_path);

/* Writes all `n` bytes to `fd`, retrying on EINTR and short writes. 0, or -1 with errno. */
int ldpb_durable_write_all(int fd, const void *p, size_t n);

/* Removes the temporary files of earlier writes to `path` (PATH.tmp.<16 hex digits>) that a crash
 * left behind. Only under a lock that keeps every other writer of `path` out, so that none of them
 * is live. unlink removes a planted link itself, never its target. Best effort. */
void ldpb_durable_clean_stale(const char *path);

/* Opens `path` with `flags` (O_RDONLY, or O_RDWR | O_CREAT creating it mode 0600) without
 * following a symbolic link and without blocking on a FIFO or a device, and accepts only a regular
 * file; *fd is then blocking and close-on-exec. Errors, *fd -1: LDPB_ENOTFOUND (missing, without
 * O_CREAT), LDPB_EINVAL (a link, a FIFO, a device, a directory: anything but a regular file),
 * LDPB_EIO. */
ldpb_err ldpb_durable_open_regular(const char *path, int flags, int *fd);

/* Takes an exclusive advisory lock (flock) on `lock_path`, created if missing (a regular file,
 * opened as ldpb_durable_open_regular does), without waiting; *fd holds it until closed.
 * LDPB_ESTATE if another open file description holds it, or an error of
 * ldpb_durable_open_regular. */
ldpb_err ldpb_durable_lock(const char *lock_path, int *fd);

#endif
