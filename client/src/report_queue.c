/* File layout (little-endian): "ldpb-queue-v1\n" (14 bytes), count u32, count records of 83
 * bytes (id_len u8, id[64] zero-padded, mechanism u8, is_bit u8, epsilon f64, value f64), then
 * a 32-byte BLAKE2b (crypto_generichash) of everything before it. */
#include "report_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#define RQ_MAGIC      "ldpb-queue-v1\n"
#define RQ_MAGIC_LEN  14u
#define RQ_RECORD     83u
#define RQ_HASH_BYTES 32u

static void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

static double get_f64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)p[i] << (8 * i);
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static size_t file_size(size_t n)
{
    return RQ_MAGIC_LEN + 4 + n * RQ_RECORD + RQ_HASH_BYTES;
}

static ldpb_err parse(rq *q, const uint8_t *b, size_t len, size_t max)
{
    if (len < file_size(0) || memcmp(b, RQ_MAGIC, RQ_MAGIC_LEN) != 0)
        return LDPB_ECORRUPT;
    const uint8_t *p = b + RQ_MAGIC_LEN;
    size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (n > max || len != file_size(n))
        return LDPB_ECORRUPT;
    uint8_t h[RQ_HASH_BYTES];
    crypto_generichash(h, sizeof h, b, len - RQ_HASH_BYTES, NULL, 0);
    if (sodium_memcmp(h, b + len - RQ_HASH_BYTES, RQ_HASH_BYTES) != 0)
        return LDPB_ECORRUPT;
    p += 4;
    for (size_t i = 0; i < n; i++, p += RQ_RECORD) {
        rq_entry e;
        memset(&e, 0, sizeof e);
        e.id_len = p[0];
        if (e.id_len < 1 || e.id_len > LDPB_ASSIGNMENT_ID_MAX || p[66] > 1)
            return LDPB_ECORRUPT;
        memcpy(e.id, p + 1, e.id_len);
        e.mechanism = p[65];
        e.is_bit = p[66];
        e.epsilon = get_f64(p + 67);
        e.value = get_f64(p + 75);
        ldpb_err err = rq_push(q, &e);
        sodium_memzero(&e, sizeof e);
        if (err)
            return err;
    }
    return LDPB_OK;
}

ldpb_err rq_open(rq **out, const char *path, size_t max)
{
    *out = NULL;
    rq *q = calloc(1, sizeof *q);
    if (!q)
        return LDPB_ENOMEM;
    if (!path) {
        *out = q;
        return LDPB_OK;
    }
    size_t plen = strlen(path);
    q->path = malloc(plen + 1);
    q->tmp = malloc(plen + 5);
    ldpb_err err = LDPB_ENOMEM;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (!q->path || !q->tmp)
        goto fail;
    memcpy(q->path, path, plen + 1);
    snprintf(q->tmp, plen + 5, "%s.tmp", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            *out = q;
            return LDPB_OK;
        }
        err = LDPB_EIO;
        goto fail;
    }
    size_t cap = file_size(max) + 1;
    buf = malloc(cap);
    if (buf)
        len = fread(buf, 1, cap, f);
    int bad = ferror(f);
    fclose(f);
    if (!buf)
        goto fail;
    err = bad ? LDPB_EIO : parse(q, buf, len, max);
    if (err)
        goto fail;
    sodium_memzero(buf, len);
    free(buf);
    *out = q;
    return LDPB_OK;
fail:
    if (buf)
        sodium_memzero(buf, len);
    free(buf);
    rq_close(q);
    return err;
}

static int fsync_dir(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

ldpb_err rq_save(rq *q)
{
    if (!q->path)
        return LDPB_OK;
    size_t len = file_size(q->n);
    uint8_t *b = calloc(1, len);
    if (!b)
        return LDPB_ENOMEM;
    memcpy(b, RQ_MAGIC, RQ_MAGIC_LEN);
    uint8_t *p = b + RQ_MAGIC_LEN;
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(q->n >> (8 * i));
    p += 4;
    for (size_t i = 0; i < q->n; i++, p += RQ_RECORD) {
        const rq_entry *e = &q->e[i];
        p[0] = e->id_len;
        memcpy(p + 1, e->id, e->id_len);
        p[65] = e->mechanism;
        p[66] = e->is_bit;
        put_f64(p + 67, e->epsilon);
        put_f64(p + 75, e->value);
    }
    crypto_generichash(b + len - RQ_HASH_BYTES, RQ_HASH_BYTES, b, len - RQ_HASH_BYTES, NULL, 0);
    ldpb_err err = LDPB_EIO;
    int fd = open(q->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fd, b + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        int ok = off == len && fsync(fd) == 0;
        ok = close(fd) == 0 && ok;
        if (ok && rename(q->tmp, q->path) == 0 && fsync_dir(q->path) == 0)
            err = LDPB_OK;
        else if (!ok)
            unlink(q->tmp);
    }
    sodium_memzero(b, len);
    free(b);
    return err;
}

int rq_has(const rq *q, const uint8_t *id, size_t id_len)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->e[i].id_len == id_len && memcmp(q->e[i].id, id, id_len) == 0)
            return 1;
    return 0;
}

ldpb_err rq_push(rq *q, const rq_entry *e)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 16;
        rq_entry *ne = calloc(cap, sizeof *ne);
        if (!ne)
            return LDPB_ENOMEM;
        if (q->n)
            memcpy(ne, q->e, q->n * sizeof *ne);
        if (q->e)
            sodium_memzero(q->e, q->cap * sizeof *q->e);
        free(q->e);
        q->e = ne;
        q->cap = cap;
    }
    q->e[q->n++] = *e;
    return LDPB_OK;
}

void rq_close(rq *q)
{
    if (!q)
        return;
    if (q->e)
        sodium_memzero(q->e, q->cap * sizeof *q->e);
    free(q->e);
    free(q->path);
    free(q->tmp);
    free(q);
}
