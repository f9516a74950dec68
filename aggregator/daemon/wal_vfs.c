/* wal_vfs.h: the default VFS with a WAL file's adjacent writes gathered into one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "wal_vfs.h"

#define WV_NAME "ldpb-walbuf"
/* The most a WAL file holds back; a larger transaction goes out in writes of at most this size,
 * which is also the most the unix VFS writes in one call (its seekAndWrite masks a size to 17
 * bits: a larger one would come back short, as a full disk). */
#define WV_BUF_MAX 0x1ffffu

typedef struct wv_file {
    sqlite3_file base;
    sqlite3_file *real;  /* the default VFS's file, right after this struct */
    struct wv_file *wal; /* a database file: its WAL while both are open */
    struct wv_file *db;  /* a WAL file: its database while both are open */
    int is_wal;
    unsigned char *buf; /* bytes for the file at [off, off + len) */
    size_t len, cap;
    sqlite3_int64 off;
} wv_file;

#define REAL(f) (((wv_file *)(f))->real)
#define RM(f)   (REAL(f)->pMethods)

/* What is held back goes out, in one write. A failed write drops it, as a torn write would: the
 * caller's error ends the transaction, whose frames SQLite writes again. */
static int wv_flush(wv_file *p)
{
    if (!p || !p->len)
        return SQLITE_OK;
    int rc = p->real->pMethods->xWrite(p->real, p->buf, (int)p->len, p->off);
    p->len = 0;
    return rc;
}

static int wv_close(sqlite3_file *f)
{
    wv_file *p = (wv_file *)f;
    int rc = wv_flush(p);
    if (p->db)
        p->db->wal = NULL;
    if (p->wal)
        p->wal->db = NULL;
    int rc2 = RM(f)->xClose(REAL(f));
    sqlite3_free(p->buf);
    p->buf = NULL;
    return rc ? rc : rc2;
}

static int wv_read(sqlite3_file *f, void *out, int amt, sqlite3_int64 ofs)
{
    int rc = wv_flush((wv_file *)f);
    return rc ? rc : RM(f)->xRead(REAL(f), out, amt, ofs);
}

static int wv_write(sqlite3_file *f, const void *data, int amt, sqlite3_int64 ofs)
{
    wv_file *p = (wv_file *)f;
    if (!p->is_wal)
        return RM(f)->xWrite(REAL(f), data, amt, ofs);
    /* held writes stay in file order: one elsewhere sends them first */
    int rc = p->len && p->off + (sqlite3_int64)p->len != ofs ? wv_flush(p) : SQLITE_OK;
    if (!rc && p->len + (size_t)amt > WV_BUF_MAX)
        rc = wv_flush(p);
    if (rc)
        return rc;
    if ((size_t)amt > WV_BUF_MAX)
        return RM(f)->xWrite(REAL(f), data, amt, ofs);
    if (p->len + (size_t)amt > p->cap) {
        size_t cap = p->cap ? p->cap : 64u << 10;
        while (cap < p->len + (size_t)amt)
            cap *= 2;
        unsigned char *b = sqlite3_realloc64(p->buf, cap);
        if (!b) { /* no room to hold it: written now, after what was held */
            rc = wv_flush(p);
            return rc ? rc : RM(f)->xWrite(REAL(f), data, amt, ofs);
        }
        p->buf = b;
        p->cap = cap;
    }
    if (!p->len)
        p->off = ofs;
    memcpy(p->buf + p->len, data, (size_t)amt);
    p->len += (size_t)amt;
    return SQLITE_OK;
}

static int wv_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = wv_flush((wv_file *)f);
    return rc ? rc : RM(f)->xTruncate(REAL(f), size);
}

static int wv_sync(sqlite3_file *f, int flags)
{
    int rc = wv_flush((wv_file *)f);
    return rc ? rc : RM(f)->xSync(REAL(f), flags);
}

static int wv_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    int rc = wv_flush((wv_file *)f);
    return rc ? rc : RM(f)->xFileSize(REAL(f), size);
}

static int wv_lock(sqlite3_file *f, int lock)
{
    return RM(f)->xLock(REAL(f), lock);
}

static int wv_unlock(sqlite3_file *f, int lock)
{
    return RM(f)->xUnlock(REAL(f), lock);
}

static int wv_check_reserved(sqlite3_file *f, int *out)
{
    return RM(f)->xCheckReservedLock(REAL(f), out);
}

static int wv_file_control(sqlite3_file *f, int op, void *arg)
{
    wv_file *p = (wv_file *)f;
    int rc = p->is_wal ? wv_flush(p) : SQLITE_OK;
    return rc ? rc : RM(f)->xFileControl(REAL(f), op, arg);
}

static int wv_sector_size(sqlite3_file *f)
{
    return RM(f)->xSectorSize(REAL(f));
}

static int wv_device_characteristics(sqlite3_file *f)
{
    return RM(f)->xDeviceCharacteristics(REAL(f));
}

/* The wal-index lives in the database file's shared memory: its header is published between a
 * barrier and a lock's release, so the WAL's held frames go out before either. */
static int wv_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
    return RM(f)->xShmMap(REAL(f), region, size, extend, pp);
}

static int wv_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    int rc = wv_flush(((wv_file *)f)->wal);
    return rc ? rc : RM(f)->xShmLock(REAL(f), offset, n, flags);
}

static void wv_shm_barrier(sqlite3_file *f)
{
    (void)wv_flush(((wv_file *)f)->wal); /* a failure here is the next sync's or read's */
    RM(f)->xShmBarrier(REAL(f));
}

static int wv_shm_unmap(sqlite3_file *f, int del)
{
    return RM(f)->xShmUnmap(REAL(f), del);
}

static int wv_fetch(sqlite3_file *f, sqlite3_int64 ofs, int amt, void **pp)
{
    *pp = NULL;
    int rc = wv_flush((wv_file *)f);
    if (rc || RM(f)->iVersion < 3)
        return rc;
    return RM(f)->xFetch(REAL(f), ofs, amt, pp);
}

static int wv_unfetch(sqlite3_file *f, sqlite3_int64 ofs, void *p)
{
    return RM(f)->iVersion < 3 ? SQLITE_OK : RM(f)->xUnfetch(REAL(f), ofs, p);
}

static const sqlite3_io_methods wv_io = {
    3,
    wv_close,
    wv_read,
    wv_write,
    wv_truncate,
    wv_sync,
    wv_file_size,
    wv_lock,
    wv_unlock,
    wv_check_reserved,
    wv_file_control,
    wv_sector_size,
    wv_device_characteristics,
    wv_shm_map,
    wv_shm_lock,
    wv_shm_barrier,
    wv_shm_unmap,
    wv_fetch,
    wv_unfetch,
};

static sqlite3_vfs wv_vfs;

#define ROOT ((sqlite3_vfs *)wv_vfs.pAppData)

static int wv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
    (void)vfs;
    wv_file *p = (wv_file *)f;
    memset(p, 0, sizeof *p);
    p->real = (sqlite3_file *)&p[1];
    int rc = ROOT->xOpen(ROOT, name, p->real, flags, out_flags);
    if (rc != SQLITE_OK || !p->real->pMethods) {
        /* SQLite calls xClose on a file whose pMethods is set: the real one's, if any */
        if (p->real->pMethods)
            p->real->pMethods->xClose(p->real);
        return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
    }
    /* shared memory, and with it the wal-index, needs a default VFS of version 2 or later */
    if (p->real->pMethods->iVersion < 2) {
        p->real->pMethods->xClose(p->real);
        return SQLITE_CANTOPEN;
    }
    if ((flags & SQLITE_OPEN_WAL) && name) {
        p->is_wal = 1;
        p->db = (wv_file *)sqlite3_database_file_object(name); /* opened here too */
        if (p->db)
            p->db->wal = p;
    }
    p->base.pMethods = &wv_io;
    return SQLITE_OK;
}

static int wv_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return ROOT->xDelete(ROOT, name, sync_dir);
}

static int wv_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return ROOT->xAccess(ROOT, name, flags, out);
}

static int wv_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return ROOT->xFullPathname(ROOT, name, n, out);
}

static void *wv_dl_open(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return ROOT->xDlOpen(ROOT, name);
}

static void wv_dl_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    ROOT->xDlError(ROOT, n, out);
}

static void (*wv_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return ROOT->xDlSym(ROOT, h, sym);
}

static void wv_dl_close(sqlite3_vfs *v, void *h)
{
    (void)v;
    ROOT->xDlClose(ROOT, h);
}

static int wv_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return ROOT->xRandomness(ROOT, n, out);
}

static int wv_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return ROOT->xSleep(ROOT, us);
}

static int wv_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return ROOT->xCurrentTime(ROOT, out);
}

static int wv_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return ROOT->xGetLastError ? ROOT->xGetLastError(ROOT, n, out) : 0;
}

static int wv_current_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return ROOT->xCurrentTimeInt64(ROOT, out);
}

static int registered;

/* Once, before any use: the VFS mirrors the default one but for xOpen (files of our own size) and
 * stays version 2 (no system-call overrides, which are the default VFS's own). */
static void wv_register(void)
{
    sqlite3_vfs *root = sqlite3_vfs_find(NULL);
    if (!root || root->iVersion < 2 || !root->xCurrentTimeInt64)
        return;
    wv_vfs.iVersion = 2;
    wv_vfs.szOsFile = (int)sizeof(wv_file) + root->szOsFile;
    wv_vfs.mxPathname = root->mxPathname;
    wv_vfs.zName = WV_NAME;
    wv_vfs.pAppData = root;
    wv_vfs.xOpen = wv_open;
    wv_vfs.xDelete = wv_delete;
    wv_vfs.xAccess = wv_access;
    wv_vfs.xFullPathname = wv_full_pathname;
    wv_vfs.xDlOpen = wv_dl_open;
    wv_vfs.xDlError = wv_dl_error;
    wv_vfs.xDlSym = wv_dl_sym;
    wv_vfs.xDlClose = wv_dl_close;
    wv_vfs.xRandomness = wv_randomness;
    wv_vfs.xSleep = wv_sleep;
    wv_vfs.xCurrentTime = wv_current_time;
    wv_vfs.xGetLastError = wv_last_error;
    wv_vfs.xCurrentTimeInt64 = wv_current_time64;
    registered = sqlite3_vfs_register(&wv_vfs, 0) == SQLITE_OK;
}

const char *agg_wal_vfs_name(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, wv_register);
    return registered ? WV_NAME : NULL;
}
