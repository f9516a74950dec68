/* The on-disk replay log (nonce_log.h has the format and the reasons). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/detail.h"
#include "ldpb/durable.h"
#include "ldpb/wire.h"
#include "le_bytes.h"
#include "nonce_log.h"
#include "nonce_log_parse.h"
#include "state_id.h"

#define DIGEST_BYTES  AGG_NL_DIGEST_BYTES
#define SYNC_PERIOD_S 1

static const char magic[8] = {'L', 'D', 'P', 'B', 'N', 'L', 'G', '1'};
static const char key_context[] = "ldpb nonce log key v1";

struct agg_nonce_log {
    uint8_t key[32];
    uint64_t window_ms;
    char cur[4096], old[4096];
    agg_nl_set ld; /* what earlier runs accepted */

    pthread_mutex_t mu; /* the file, its size and start, the clock */
    int fd;
    uint64_t size, start_ms, clock_ms;
    int dirty;

    pthread_mutex_t sync_mu;
    pthread_cond_t sync_cv;
    int stop, sync_running;
    pthread_t syncer;
};

static void digest_of(const agg_nonce_log *l, const uint8_t *pk, const uint8_t *nonce,
                      uint8_t out[DIGEST_BYTES])
{
    uint8_t msg[LDPB_KEY_BYTES + LDPB_NONCE_BYTES];
    memcpy(msg, pk, LDPB_KEY_BYTES);
    memcpy(msg + LDPB_KEY_BYTES, nonce, LDPB_NONCE_BYTES);
    crypto_generichash(out, DIGEST_BYTES, msg, sizeof msg, l->key, sizeof l->key);
}

static int by_digest(const void *a, const void *b)
{
    return memcmp(((const agg_nl_rec *)a)->digest, ((const agg_nl_rec *)b)->digest, DIGEST_BYTES);
}

static int by_time_desc(const void *a, const void *b)
{
    uint64_t x = ((const agg_nl_rec *)a)->t_ms, y = ((const agg_nl_rec *)b)->t_ms;
    return x < y ? 1 : x > y ? -1 : 0;
}

int agg_nl_header(const uint8_t *p, size_t len, uint64_t *start_ms)
{
    if (len < AGG_NONCE_LOG_HEADER || memcmp(p, magic, sizeof magic))
        return 0;
    *start_ms = agg_get_le(p + 8, 8);
    return 1;
}

ldpb_err agg_nl_take(agg_nl_set *s, const uint8_t *p, size_t len, uint64_t window_ms,
                     uint64_t now_ms, size_t *used)
{
    size_t whole = len - len % AGG_NONCE_LOG_RECORD;
    *used = whole;
    for (size_t off = 0; off < whole; off += AGG_NONCE_LOG_RECORD) {
        uint64_t t = agg_get_le(p + off + DIGEST_BYTES, 8);
        /* Only a nonce whose time can still pass the window check needs refusing. */
        if (t + window_ms < now_ms || t > now_ms + window_ms)
            continue;
        if (s->n == s->cap) {
            size_t nc = s->cap ? 2 * s->cap : 4096;
            agg_nl_rec *ns = realloc(s->rec, nc * sizeof *ns);
            if (!ns)
                return LDPB_ENOMEM;
            s->rec = ns;
            s->cap = nc;
        }
        memcpy(s->rec[s->n].digest, p + off, DIGEST_BYTES);
        s->rec[s->n++].t_ms = t;
    }
    return LDPB_OK;
}

/* Appends the live records of one segment to l->ld (growing it); a missing file is empty, a
 * file without a valid header is ignored (it was never a complete segment), and a trailing
 * partial record (a machine crash in a write) is skipped. *start gets the segment's start. */
static ldpb_err load_segment(agg_nonce_log *l, const char *path, uint64_t now_ms, uint64_t *start,
                             char *errmsg, size_t errcap)
{
    *start = 0;
    /* A regular file only: a FIFO planted at the name would otherwise hang the start. */
    int fd = -1;
    ldpb_err oe = ldpb_durable_open_regular(path, O_RDONLY, &fd);
    if (oe == LDPB_ENOTFOUND)
        return LDPB_OK;
    if (oe == LDPB_EINVAL) {
        ldpb_detailf(errmsg, errcap, "%s: not a regular file", path);
        return LDPB_EIO;
    }
    if (oe) {
        ldpb_detailf(errmsg, errcap, "%s: cannot open: %s", path, strerror(errno));
        return LDPB_EIO;
    }
    uint8_t hdr[AGG_NONCE_LOG_HEADER], buf[AGG_NONCE_LOG_RECORD * 4096];
    ldpb_err err = LDPB_OK;
    ssize_t hn = read(fd, hdr, sizeof hdr);
    if (hn < 0 || !agg_nl_header(hdr, (size_t)hn, start))
        goto done;
    size_t carry = 0;
    for (;;) {
        ssize_t n = read(fd, buf + carry, sizeof buf - carry);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ldpb_detailf(errmsg, errcap, "%s: cannot read: %s", path, strerror(errno));
            err = LDPB_EIO;
            break;
        }
        if (n == 0)
            break;
        size_t have = carry + (size_t)n, whole;
        err = agg_nl_take(&l->ld, buf, have, l->window_ms, now_ms, &whole);
        if (err)
            break;
        carry = have - whole;
        memmove(buf, buf + whole, carry);
    }
done:
    close(fd);
    return err;
}

void agg_nl_settle(agg_nl_set *s, size_t max_entries, uint64_t window_ms)
{
    if (s->n > max_entries) {
        qsort(s->rec, s->n, sizeof *s->rec, by_time_desc);
        s->floor_ms = s->rec[max_entries].t_ms;
        s->n = max_entries;
    }
    s->end_ms = s->floor_ms ? s->floor_ms + window_ms : 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->rec[i].t_ms + window_ms > s->end_ms)
            s->end_ms = s->rec[i].t_ms + window_ms;
    if (s->n)
        qsort(s->rec, s->n, sizeof *s->rec, by_digest);
}

int agg_nl_refused(const agg_nl_set *s, const uint8_t digest[AGG_NL_DIGEST_BYTES], uint64_t t_ms,
                   uint64_t now_ms)
{
    if (now_ms > s->end_ms)
        return 0;
    if (t_ms <= s->floor_ms)
        return 1;
    agg_nl_rec key;
    memcpy(key.digest, digest, DIGEST_BYTES);
    return s->n && bsearch(&key, s->rec, s->n, sizeof *s->rec, by_digest) ? 2 : 0;
}

uint64_t agg_nl_cut(uint64_t size)
{
    return size - (size - AGG_NONCE_LOG_HEADER) % AGG_NONCE_LOG_RECORD;
}

/* Starts a new current segment (the caller holds mu or is alone). */
static ldpb_err new_segment(agg_nonce_log *l, uint64_t now_ms, char *errmsg, size_t errcap)
{
    int fd = open(l->cur, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        ldpb_detailf(errmsg, errcap, "%s: cannot create: %s", l->cur, strerror(errno));
        return LDPB_EIO;
    }
    uint8_t hdr[AGG_NONCE_LOG_HEADER];
    memcpy(hdr, magic, sizeof magic);
    agg_put_le(hdr + 8, now_ms, 8);
    if (write(fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr) {
        ldpb_detailf(errmsg, errcap, "%s: cannot write: %s", l->cur, strerror(errno));
        close(fd);
        return LDPB_EIO;
    }
    if (l->fd >= 0)
        close(l->fd);
    l->fd = fd;
    l->size = sizeof hdr;
    l->start_ms = now_ms;
    return LDPB_OK;
}

/* The current segment is 2 x window old: it becomes the previous one (whose records are all
 * past their time), and a new one starts. Under mu. */
static ldpb_err rotate(agg_nonce_log *l, uint64_t now_ms, char *errmsg, size_t errcap)
{
    if (l->fd >= 0)
        fdatasync(l->fd); /* the previous segment is still needed after a machine crash */
    if (rename(l->cur, l->old) != 0) {
        ldpb_detailf(errmsg, errcap, "%s: cannot rename: %s", l->cur, strerror(errno));
        return LDPB_EIO;
    }
    return new_segment(l, now_ms, errmsg, errcap);
}

static void *sync_main(void *arg)
{
    agg_nonce_log *l = arg;
    pthread_mutex_lock(&l->sync_mu);
    while (!l->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += SYNC_PERIOD_S;
        pthread_cond_timedwait(&l->sync_cv, &l->sync_mu, &ts);
        pthread_mutex_unlock(&l->sync_mu);
        /* A duplicate descriptor: the fsync runs without mu, so writers never wait for it. */
        pthread_mutex_lock(&l->mu);
        int fd = l->dirty && l->fd >= 0 ? dup(l->fd) : -1;
        l->dirty = 0;
        pthread_mutex_unlock(&l->mu);
        if (fd >= 0) {
            fdatasync(fd);
            close(fd);
        }
        pthread_mutex_lock(&l->sync_mu);
    }
    pthread_mutex_unlock(&l->sync_mu);
    return NULL;
}

ldpb_err agg_nonce_log_open(agg_nonce_log **out, const char *dir,
                            const uint8_t server_sk[LDPB_KEY_BYTES], const uint8_t *state_id,
                            uint64_t window_ms, size_t max_entries, uint64_t now_ms, char *errmsg,
                            size_t errcap)
{
    if (!out || !dir || !server_sk || !state_id || !window_ms || !max_entries)
        return LDPB_EINVAL;
    *out = NULL;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    agg_nonce_log *l = calloc(1, sizeof *l);
    if (!l)
        return LDPB_ENOMEM;
    l->fd = -1;
    l->window_ms = window_ms;
    l->clock_ms = now_ms;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->sync_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->sync_cv, &ca);
    pthread_condattr_destroy(&ca);
    ldpb_err err = LDPB_EIO;
    if ((size_t)snprintf(l->cur, sizeof l->cur, "%s/%s", dir, AGG_NONCE_LOG_FILE) >=
            sizeof l->cur ||
        (size_t)snprintf(l->old, sizeof l->old, "%s/%s", dir, AGG_NONCE_LOG_OLD_FILE) >=
            sizeof l->old) {
        ldpb_detailf(errmsg, errcap, "state_dir %s: path too long", dir);
        goto fail;
    }
    uint8_t msg[sizeof key_context - 1 + AGG_STATE_ID_BYTES];
    memcpy(msg, key_context, sizeof key_context - 1);
    memcpy(msg + sizeof key_context - 1, state_id, AGG_STATE_ID_BYTES);
    if (crypto_generichash(l->key, sizeof l->key, msg, sizeof msg, server_sk, LDPB_KEY_BYTES)) {
        err = LDPB_ECRYPTO;
        goto fail;
    }
    uint64_t start_old, start_cur;
    err = load_segment(l, l->old, now_ms, &start_old, errmsg, errcap);
    if (!err)
        err = load_segment(l, l->cur, now_ms, &start_cur, errmsg, errcap);
    if (err)
        goto fail;
    agg_nl_settle(&l->ld, max_entries, window_ms);
    if (start_cur && start_cur <= now_ms && now_ms - start_cur < 2 * window_ms) {
        /* Go on appending to the current segment of the previous run. */
        l->fd = open(l->cur, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (l->fd < 0 || fstat(l->fd, &st) != 0) {
            ldpb_detailf(errmsg, errcap, "%s: cannot open: %s", l->cur, strerror(errno));
            err = LDPB_EIO;
            goto fail;
        }
        /* A torn last record (a machine crash) is cut off, so records stay aligned. */
        l->size = agg_nl_cut((uint64_t)st.st_size);
        if (l->size != (uint64_t)st.st_size && ftruncate(l->fd, (off_t)l->size) != 0) {
            ldpb_detailf(errmsg, errcap, "%s: cannot truncate: %s", l->cur, strerror(errno));
            err = LDPB_EIO;
            goto fail;
        }
        l->start_ms = start_cur;
    } else if (start_cur) {
        err = rotate(l, now_ms, errmsg, errcap);
    } else {
        err = new_segment(l, now_ms, errmsg, errcap);
    }
    if (err)
        goto fail;
    if (pthread_create(&l->syncer, NULL, sync_main, l) != 0) {
        ldpb_detailf(errmsg, errcap, "cannot start the nonce log's sync thread");
        err = LDPB_ENOMEM;
        goto fail;
    }
    l->sync_running = 1;
    *out = l;
    return LDPB_OK;
fail:
    agg_nonce_log_close(l);
    return err;
}

ldpb_err agg_nonce_log_check(const agg_nonce_log *l, const uint8_t client_pk[LDPB_KEY_BYTES],
                             const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms,
                             uint8_t rec[AGG_NONCE_LOG_RECORD], char *detail)
{
    digest_of(l, client_pk, nonce, rec);
    uint64_t t = agg_get_le(nonce, 8);
    int refused = agg_nl_refused(&l->ld, rec, t, now_ms);
    if (refused == 1) {
        ldpb_detailf(detail, LDPB_DETAIL_BYTES,
                     "message time %" PRIu64 " ms is not after %" PRIu64
                     " ms, the oldest time the replay log of the previous run still "
                     "covers; send a fresh request",
                     t, l->ld.floor_ms);
        return LDPB_EREPLAY;
    }
    if (refused == 2) {
        ldpb_detailf(detail, LDPB_DETAIL_BYTES,
                     "this nonce was already used by this client before the aggregator "
                     "restarted (a replayed message)");
        return LDPB_EREPLAY;
    }
    agg_put_le(rec + DIGEST_BYTES, t, 8);
    return LDPB_OK;
}

ldpb_err agg_nonce_log_write(agg_nonce_log *l, const uint8_t *recs, size_t n, uint64_t now_ms,
                             char *detail)
{
    ldpb_err err = LDPB_OK;
    char why[LDPB_DETAIL_BYTES] = "";
    size_t bytes = n * AGG_NONCE_LOG_RECORD;
    if (!n)
        return LDPB_OK;
    pthread_mutex_lock(&l->mu);
    if (now_ms > l->clock_ms)
        l->clock_ms = now_ms;
    if (l->fd < 0 || l->clock_ms - l->start_ms >= 2 * l->window_ms)
        err = rotate(l, l->clock_ms, why, sizeof why);
    if (!err) {
        /* one write(2) for them all: a relay batch's records cost one system call */
        ssize_t w = write(l->fd, recs, bytes);
        if (w != (ssize_t)bytes) {
            snprintf(why, sizeof why, "%s", w < 0 ? strerror(errno) : "short write");
            if (w > 0 && ftruncate(l->fd, (off_t)l->size) != 0) {
                /* A misaligned segment would garble every later record: start a new one. */
                close(l->fd);
                l->fd = -1;
            }
            err = LDPB_EBUSY;
        } else {
            l->size += bytes;
            l->dirty = 1;
        }
    }
    pthread_mutex_unlock(&l->mu);
    if (err)
        ldpb_detailf(detail, LDPB_DETAIL_BYTES,
                     "the aggregator cannot record the nonce in %s (%s); retry later", l->cur, why);
    return err ? LDPB_EBUSY : LDPB_OK;
}

ldpb_err agg_nonce_log_accept(agg_nonce_log *l, const uint8_t client_pk[LDPB_KEY_BYTES],
                              const uint8_t nonce[LDPB_NONCE_BYTES], uint64_t now_ms, char *detail)
{
    uint8_t rec[AGG_NONCE_LOG_RECORD];
    ldpb_err err = agg_nonce_log_check(l, client_pk, nonce, now_ms, rec, detail);
    return err ? err : agg_nonce_log_write(l, rec, 1, now_ms, detail);
}

size_t agg_nonce_log_loaded(const agg_nonce_log *l)
{
    return l ? l->ld.n : 0;
}

void agg_nonce_log_close(agg_nonce_log *l)
{
    if (!l)
        return;
    if (l->sync_running) {
        pthread_mutex_lock(&l->sync_mu);
        l->stop = 1;
        pthread_cond_signal(&l->sync_cv);
        pthread_mutex_unlock(&l->sync_mu);
        pthread_join(l->syncer, NULL);
    }
    if (l->fd >= 0) {
        fdatasync(l->fd);
        close(l->fd);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->sync_mu);
    pthread_cond_destroy(&l->sync_cv);
    free(l->ld.rec);
    sodium_memzero(l->key, sizeof l->key);
    free(l);
}
