/* File layout (little-endian): "ldpb-queue-v1\n" (14 bytes), count u32, count records of 83
 * bytes (id_len u8, id[64] zero-padded, mechanism u8, is_bit u8, epsilon f64, value f64), then
 * a 32-byte BLAKE2b (crypto_generichash) of everything before it. Format 2 ("ldpb-queue-v2\n")
 * is the same with records of 148 bytes: the 83 of format 1, then exp_len u8 and exp[64]
 * zero-padded, the experiment name (exp_len 0: "default"). Format 1 is written while every entry
 * is of "default", so such a queue stays readable by older libraries. The checksum only catches
 * damage; the loader also checks every entry as the wire checks a report (rq_parse). */
#include "report_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/durable.h"
#include "ldpb/mech_table.h"

#define RQ_MAGIC      "ldpb-queue-v1\n"
#define RQ_MAGIC2     "ldpb-queue-v2\n"
#define RQ_MAGIC_LEN  14u
#define RQ_RECORD     83u
#define RQ_RECORD2    (RQ_RECORD + 1u + LDPB_EXPERIMENT_NAME_MAX)
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

static size_t file_size(size_t n, size_t record)
{
    return RQ_MAGIC_LEN + 4 + n * record + RQ_HASH_BYTES;
}

/* Format 2 only when an entry names an experiment. */
static int needs_v2(const rq *q)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->e[i].experiment[0])
            return 1;
    return 0;
}

/* Every entry is checked as the wire checks a Report before it is sent (the mechanism known,
 * epsilon suited to it, a bit that is 0 or 1 from a bit mechanism, a finite real from a real one)
 * and as the daemon admits its value: an entry that passes the checksum but not these (a file
 * written by hand, or by a broken writer) would otherwise block every later flush or be sent as
 * another value. */
static ldpb_err check_entry(const rq_entry *e)
{
    if (e->id_len < 1 || e->id_len > LDPB_ASSIGNMENT_ID_MAX || e->is_bit > 1)
        return LDPB_ECORRUPT;
    size_t n = strlen(e->experiment);
    if (n &&
        (!ldpb_wire_experiment_valid(e->experiment, n) || strcmp(e->experiment, "default") == 0))
        return LDPB_ECORRUPT;
    /* One table's rule, the same one the ledger applies to its records. */
    if (ldpb_mech_check_value((int)e->mechanism, e->epsilon, e->is_bit, e->value, "queue", NULL) !=
        LDPB_OK)
        return LDPB_ECORRUPT;
    return LDPB_OK;
}

ldpb_err rq_parse(rq *q, const uint8_t *b, size_t len, size_t max)
{
    if (len < file_size(0, RQ_RECORD))
        return LDPB_ECORRUPT;
    int v2 = memcmp(b, RQ_MAGIC2, RQ_MAGIC_LEN) == 0;
    if (!v2 && memcmp(b, RQ_MAGIC, RQ_MAGIC_LEN) != 0)
        return LDPB_ECORRUPT;
    size_t record = v2 ? RQ_RECORD2 : RQ_RECORD;
    const uint8_t *p = b + RQ_MAGIC_LEN;
    size_t n = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    if (n > max || len != file_size(n, record))
        return LDPB_ECORRUPT;
    uint8_t h[RQ_HASH_BYTES];
    crypto_generichash(h, sizeof h, b, len - RQ_HASH_BYTES, NULL, 0);
    if (sodium_memcmp(h, b + len - RQ_HASH_BYTES, RQ_HASH_BYTES) != 0)
        return LDPB_ECORRUPT;
    p += 4;
    int named = 0; /* format 2 is written only with an experiment other than "default" */
    for (size_t i = 0; i < n; i++, p += record) {
        rq_entry e;
        memset(&e, 0, sizeof e);
        e.id_len = p[0];
        e.mechanism = p[65];
        e.is_bit = p[66];
        e.epsilon = get_f64(p + 67);
        e.value = get_f64(p + 75);
        size_t exp_len = v2 ? p[RQ_RECORD] : 0;
        if (exp_len > LDPB_EXPERIMENT_NAME_MAX)
            exp_len = LDPB_EXPERIMENT_NAME_MAX + 1; /* refused below */
        else
            memcpy(e.experiment, p + RQ_RECORD + 1, exp_len);
        named |= exp_len > 0;
        ldpb_err err = exp_len > LDPB_EXPERIMENT_NAME_MAX || memchr(e.experiment, 0, exp_len)
                           ? LDPB_ECORRUPT
                           : check_entry(&e);
        /* The paddings are zeros, as written: one queue, one file image. */
        for (size_t k = 1u + e.id_len; !err && k < 65u; k++)
            if (p[k] != 0)
                err = LDPB_ECORRUPT;
        for (size_t k = RQ_RECORD + 1u + exp_len; !err && v2 && k < RQ_RECORD2; k++)
            if (p[k] != 0)
                err = LDPB_ECORRUPT;
        if (!err && rq_has(q, p + 1, e.id_len))
            err = LDPB_ECORRUPT; /* the writer never queues an id twice */
        if (!err) {
            memcpy(e.id, p + 1, e.id_len);
            err = rq_push(q, &e);
        }
        sodium_memzero(&e, sizeof e);
        if (err)
            return err;
    }
    return v2 && !named ? LDPB_ECORRUPT : LDPB_OK;
}

/* Reads the whole queue file from `fd` (a regular file, at most `cap` bytes) into *buf. */
static ldpb_err read_whole(int fd, size_t cap, uint8_t **buf, size_t *len)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return LDPB_EIO;
    if (sb.st_size < 0 || (uint64_t)sb.st_size > cap)
        return LDPB_ECORRUPT;
    size_t size = (size_t)sb.st_size;
    *buf = malloc(size ? size : 1);
    if (!*buf)
        return LDPB_ENOMEM;
    while (*len < size) {
        ssize_t r = read(fd, *buf + *len, size - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return LDPB_EIO; /* an error, or the file shrank under the lock */
        *len += (size_t)r;
    }
    return LDPB_OK;
}

static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

ldpb_err rq_open(rq **out, const char *path, size_t max)
{
    *out = NULL;
    if (path && !*path)
        return LDPB_EINVAL; /* its lock would be ".lock" in the working directory */
    rq *q = calloc(1, sizeof *q);
    if (!q)
        return LDPB_ENOMEM;
    q->lock_fd = -1;
    if (!path) {
        *out = q;
        return LDPB_OK;
    }
    ldpb_err err = LDPB_ENOMEM;
    uint8_t *buf = NULL;
    size_t len = 0;
    int fd = -1;
    q->path = concat(path, "");
    char *lock_path = concat(path, ".lock");
    if (!q->path || !lock_path) {
        free(lock_path);
        goto fail;
    }
    /* One writer per file: a second handle would rewrite the file from its own memory and drop
     * the first one's reports (the ledger has charged them by then). */
    err = ldpb_durable_lock(lock_path, &q->lock_fd);
    free(lock_path);
    if (err)
        goto fail;
    ldpb_durable_clean_stale(q->path);
    err = ldpb_durable_open_regular(q->path, O_RDONLY, &fd);
    if (err == LDPB_ENOTFOUND) {
        *out = q;
        return LDPB_OK;
    }
    if (err)
        goto fail;
    err = read_whole(fd, file_size(max, RQ_RECORD2), &buf, &len);
    close(fd);
    if (!err)
        err = rq_parse(q, buf, len, max);
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

ldpb_err rq_encode(const rq *q, uint8_t **out, size_t *out_len)
{
    int v2 = needs_v2(q);
    size_t record = v2 ? RQ_RECORD2 : RQ_RECORD;
    size_t len = file_size(q->n, record);
    uint8_t *b = calloc(1, len);
    if (!b)
        return LDPB_ENOMEM;
    memcpy(b, v2 ? RQ_MAGIC2 : RQ_MAGIC, RQ_MAGIC_LEN);
    uint8_t *p = b + RQ_MAGIC_LEN;
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(q->n >> (8 * i));
    p += 4;
    for (size_t i = 0; i < q->n; i++, p += record) {
        const rq_entry *e = &q->e[i];
        p[0] = e->id_len;
        memcpy(p + 1, e->id, e->id_len);
        p[65] = e->mechanism;
        p[66] = e->is_bit;
        put_f64(p + 67, e->epsilon);
        put_f64(p + 75, e->value);
        if (v2) {
            size_t n = strlen(e->experiment);
            p[RQ_RECORD] = (uint8_t)n;
            memcpy(p + RQ_RECORD + 1, e->experiment, n);
        }
    }
    crypto_generichash(b + len - RQ_HASH_BYTES, RQ_HASH_BYTES, b, len - RQ_HASH_BYTES, NULL, 0);
    *out = b;
    *out_len = len;
    return LDPB_OK;
}

ldpb_err rq_save(rq *q)
{
    if (!q->path)
        return LDPB_OK;
    uint8_t *b;
    size_t len;
    ldpb_err err = rq_encode(q, &b, &len);
    if (err)
        return err;
    ldpb_durable_buf content = {b, len};
    err = ldpb_durable_write(q->path, NULL, ldpb_durable_fill_buf, &content, NULL, NULL, 0);
    sodium_memzero(b, len);
    free(b);
    return err ? LDPB_EIO : LDPB_OK;
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

void rq_report_of(Ldpb__V1__Report *rep, const rq_entry *e)
{
    Ldpb__V1__Report init = LDPB__V1__REPORT__INIT;
    *rep = init;
    rep->assignment_id.data = (uint8_t *)e->id;
    rep->assignment_id.len = e->id_len;
    rep->mechanism = (Ldpb__V1__Mechanism)e->mechanism;
    rep->epsilon = e->epsilon;
    if (e->is_bit) {
        rep->value_case = LDPB__V1__REPORT__VALUE_BIT;
        rep->bit = e->value != 0.0;
    } else {
        rep->value_case = LDPB__V1__REPORT__VALUE_REAL;
        rep->real = e->value;
    }
    if (e->experiment[0])
        rep->experiment = (char *)e->experiment;
}

void rq_close(rq *q)
{
    if (!q)
        return;
    if (q->e)
        sodium_memzero(q->e, q->cap * sizeof *q->e);
    free(q->e);
    if (q->lock_fd >= 0)
        close(q->lock_fd);
    free(q->path);
    free(q);
}
