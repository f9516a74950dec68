/* The durable whole-file write and the checks around it (durable.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/detail.h"
#include "ldpb/durable.h"

#define TMP_ATTEMPTS 8

int ldpb_durable_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

ldpb_err ldpb_durable_fill_buf(void *ctx, int fd, const char *tmp_path)
{
    (void)tmp_path;
    const ldpb_durable_buf *b = ctx;
    return ldpb_durable_write_all(fd, b->data, b->len) == 0 ? LDPB_OK : LDPB_EIO;
}

/* The directory holding `path` into `dir` (PATH_MAX bytes; path is shorter). */
static void dir_of(const char *path, char *dir)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    errno = e;
    return rc;
}

/* Creates `tmp` (path + suffix + random digits, the digits redrawn here) for writing. O_EXCL
 * never follows a symbolic link, even a dangling one, and never opens an existing file: a planted
 * name only costs another draw. */
static int create_tmp(char *tmp, unsigned mode)
{
    char *x = tmp + strlen(tmp) - LDPB_DURABLE_TMP_RANDOM;
    for (int attempt = 0; attempt < TMP_ATTEMPTS; attempt++) {
        uint8_t r[LDPB_DURABLE_TMP_RANDOM / 2];
        randombytes_buf(r, sizeof r);
        sodium_bin2hex(x, LDPB_DURABLE_TMP_RANDOM + 1, r, sizeof r);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd >= 0 && fchmod(fd, mode) != 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
            return -1;
        }
        return fd;
    }
    errno = EEXIST;
    return -1;
}

static int step(const ldpb_durable_opts *o, ldpb_durable_step s)
{
    if (o && o->step && o->step(o->step_ctx, s) != 0) {
        errno = EIO;
        return -1;
    }
    return 0;
}

#define say(...) ldpb_detailf(detail, detail_size, __VA_ARGS__)

/* Puts the synced temporary file at `path`: rename, or link (which fails if the name exists, so
 * no other writer's file is ever replaced) then unlink. */
static ldpb_err place(const char *tmp, const char *path, int no_replace, char *detail,
                      size_t detail_size)
{
    if (!no_replace) {
        if (rename(tmp, path) == 0)
            return LDPB_OK;
        say("cannot replace it: %s", strerror(errno));
        return LDPB_EIO;
    }
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return LDPB_OK;
    }
    if (errno == EEXIST) {
        say("already exists (not replaced)");
        return LDPB_ESTATE;
    }
    say("cannot create it: %s", strerror(errno));
    return LDPB_EIO;
}

ldpb_err ldpb_durable_write(const char *path, const ldpb_durable_opts *opts, ldpb_durable_fill fill,
                            void *ctx, int *placed, char *detail, size_t detail_size)
{
    if (placed)
        *placed = 0;
    if (!path || !*path || !fill)
        return LDPB_EINVAL;
    /* No allocation: the ledger's write must not gain a failure mode of its own. */
    char tmp[PATH_MAX + sizeof LDPB_DURABLE_TMP_SUFFIX + LDPB_DURABLE_TMP_RANDOM];
    char dir[PATH_MAX];
    size_t n = strlen(path), sfx = strlen(LDPB_DURABLE_TMP_SUFFIX);
    if (n >= PATH_MAX) {
        say("path too long");
        return LDPB_EIO;
    }
    dir_of(path, dir);
    ldpb_err err;
    int fd = -1;
    memcpy(tmp, path, n);
    memcpy(tmp + n, LDPB_DURABLE_TMP_SUFFIX, sfx);
    memset(tmp + n + sfx, 'x', LDPB_DURABLE_TMP_RANDOM);
    tmp[n + sfx + LDPB_DURABLE_TMP_RANDOM] = '\0';

    fd = create_tmp(tmp, opts && opts->mode ? opts->mode : 0600);
    if (fd < 0) {
        say("cannot create a file beside it: %s", strerror(errno));
        err = LDPB_EIO;
        goto done;
    }
    errno = 0;
    err = fill(ctx, fd, tmp);
    if (err) {
        if (err == LDPB_EIO)
            say("write failed: %s", errno ? strerror(errno) : "I/O error");
        goto fail_tmp;
    }
    err = LDPB_EIO;
    if (step(opts, LDPB_DURABLE_TMP_WRITTEN) != 0 || fsync(fd) != 0) {
        say("cannot sync: %s", strerror(errno));
        goto fail_tmp;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0 || step(opts, LDPB_DURABLE_TMP_SYNCED) != 0) {
        say("write failed: %s", strerror(errno));
        goto fail_tmp;
    }
    err = place(tmp, path, opts && opts->no_replace, detail, detail_size);
    if (err)
        goto fail_tmp;
    if (placed)
        *placed = 1;
    if (step(opts, LDPB_DURABLE_PLACED) != 0 || sync_dir(dir) != 0 ||
        step(opts, LDPB_DURABLE_DIR_SYNCED) != 0) {
        say("cannot sync its directory: %s", strerror(errno));
        err = LDPB_EIO;
        goto done;
    }
    err = LDPB_OK;
    goto done;

fail_tmp:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
done:
    return err;
}

void ldpb_durable_clean_stale(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return;
    char dir[PATH_MAX];
    dir_of(path, dir);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base), sfx = strlen(LDPB_DURABLE_TMP_SUFFIX);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strncmp(name, base, n) != 0 || strncmp(name + n, LDPB_DURABLE_TMP_SUFFIX, sfx) != 0)
            continue;
        const char *rest = name + n + sfx;
        if (strlen(rest) == LDPB_DURABLE_TMP_RANDOM &&
            strspn(rest, "0123456789abcdef") == LDPB_DURABLE_TMP_RANDOM)
            (void)unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

ldpb_err ldpb_durable_open_regular(const char *path, int flags, int *fd)
{
    *fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
    if (*fd < 0)
        return errno == ENOENT && !(flags & O_CREAT) ? LDPB_ENOTFOUND
               : errno == ELOOP || errno == EISDIR   ? LDPB_EINVAL
                                                     : LDPB_EIO;
    struct stat sb;
    ldpb_err err = LDPB_OK;
    int fl;
    if (fstat(*fd, &sb) != 0)
        err = LDPB_EIO;
    else if (!S_ISREG(sb.st_mode))
        err = LDPB_EINVAL;
    else if ((fl = fcntl(*fd, F_GETFL)) < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        err = LDPB_EIO;
    if (err) {
        close(*fd);
        *fd = -1;
    }
    return err;
}

ldpb_err ldpb_durable_lock(const char *lock_path, int *fd)
{
    ldpb_err err = ldpb_durable_open_regular(lock_path, O_RDWR | O_CREAT, fd);
    if (err)
        return err;
    for (;;) {
        if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
            return LDPB_OK;
        if (errno == EINTR)
            continue;
        err = errno == EWOULDBLOCK ? LDPB_ESTATE : LDPB_EIO;
        close(*fd);
        *fd = -1;
        return err;
    }
}
