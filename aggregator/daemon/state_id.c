/* The state's identity and its marker file (state_id.h has the rules and the reasons). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/detail.h"
#include "ldpb/durable.h"
#include "state_id.h"
#include "state_id_parse.h"

#define MARKER_BYTES AGG_STATE_ID_MARKER_BYTES

void agg_state_id_hex(const uint8_t id[AGG_STATE_ID_BYTES], char *hex)
{
    sodium_bin2hex(hex, 2 * AGG_STATE_ID_BYTES + 1, id, AGG_STATE_ID_BYTES);
}

int agg_state_id_parse_marker(const uint8_t *buf, size_t len, uint8_t id[AGG_STATE_ID_BYTES])
{
    size_t bin_len = 0;
    if (len != MARKER_BYTES || buf[MARKER_BYTES - 1] != '\n' ||
        sodium_hex2bin(id, AGG_STATE_ID_BYTES, (const char *)buf, MARKER_BYTES - 1, NULL, &bin_len,
                       NULL) != 0 ||
        bin_len != AGG_STATE_ID_BYTES)
        return -1;
    return 0;
}

static int marker_path(const char *dir, char *path, size_t cap)
{
    return (size_t)snprintf(path, cap, "%s/%s", dir, AGG_STATE_ID_FILE) < cap ? 0 : -1;
}

/* The marker's identity: 1 read, 0 no file, -1 unreadable or malformed (errmsg says which). */
static int read_marker(const char *dir, uint8_t id[AGG_STATE_ID_BYTES], char *errmsg, size_t errcap)
{
    char path[4096];
    uint8_t buf[MARKER_BYTES + 8];
    if (marker_path(dir, path, sizeof path)) {
        ldpb_detailf(errmsg, errcap, "state_dir %s: path too long", dir);
        return -1;
    }
    int fd = -1;
    ldpb_err oe = ldpb_durable_open_regular(path, O_RDONLY, &fd);
    if (oe == LDPB_ENOTFOUND)
        return 0;
    if (oe && oe != LDPB_EINVAL) {
        ldpb_detailf(errmsg, errcap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    ssize_t n = -1; /* not a regular file: malformed, below */
    if (!oe) {
        n = read(fd, buf, sizeof buf);
        close(fd);
    }
    if (n < 0 || agg_state_id_parse_marker(buf, (size_t)n, id) != 0) {
        ldpb_detailf(errmsg, errcap,
                     "%s: not a state identity (%d hex digits and a newline expected); it is "
                     "written by ldpb-aggregator, do not edit it",
                     path, 2 * AGG_STATE_ID_BYTES);
        return -1;
    }
    return 1;
}

ldpb_err agg_state_id_settle_rows(const agg_state_id_rows *rows, void *ctx, const char *dir,
                                  int holds_state, int new_state, agg_state_ident *out,
                                  char *errmsg, size_t errcap)
{
    memset(out, 0, sizeof *out);
    uint8_t marker[AGG_STATE_ID_BYTES];
    char hd[2 * AGG_STATE_ID_BYTES + 1], hm[2 * AGG_STATE_ID_BYTES + 1];
    int have_m = read_marker(dir, marker, errmsg, errcap);
    if (have_m < 0)
        return LDPB_ECORRUPT;
    int have_d = rows->read(ctx, out->id, &out->legacy_tokens, errmsg, errcap);
    if (have_d < 0)
        return LDPB_ECORRUPT;
    if (have_m)
        agg_state_id_hex(marker, hm);
    if (new_state && (have_d || holds_state)) {
        ldpb_detailf(errmsg, errcap,
                     "--new-state: state_dir %s holds a state already; --new-state only starts "
                     "a state where the database is missing or empty (drop the flag)",
                     dir);
        return LDPB_ESTATE;
    }
    if (have_d) {
        agg_state_id_hex(out->id, hd);
        if (have_m && sodium_memcmp(marker, out->id, AGG_STATE_ID_BYTES) != 0) {
            ldpb_detailf(errmsg, errcap,
                         "state_dir %s: %s holds state %s but the file %s names "
                         "state %s: the database was replaced by another state's. If this "
                         "database is meant to be here, delete %s/%s and start again",
                         dir, rows->db_name, hd, AGG_STATE_ID_FILE, hm, dir, AGG_STATE_ID_FILE);
            return LDPB_ESTATE;
        }
        out->write_marker = !have_m;
        ldpb_detailf(out->note, sizeof out->note, "state %s%s", hd,
                     have_m ? "" : " (its state_id file was missing: written again)");
        return LDPB_OK;
    }
    if (!holds_state && have_m && !new_state) {
        ldpb_detailf(errmsg, errcap,
                     "state_dir %s: %s is missing or empty, but the directory held "
                     "state %s (its %s file remains): starting afresh would count again every "
                     "report acked before. Restore the database from a backup, or start once "
                     "with --new-state to begin a new state (the old state's assignments are "
                     "then refused)",
                     dir, rows->db_name, hm, AGG_STATE_ID_FILE);
        return LDPB_ESTATE;
    }
    if (holds_state && have_m) {
        /* No version before identities wrote the marker: this database lost the commit that
         * held its identity, so it may have lost later ones too. */
        ldpb_detailf(errmsg, errcap,
                     "state_dir %s: %s holds reports but not the identity of state %s "
                     "named by its %s file: it lost its latest commits (%s), and acked reports "
                     "with them. Restore the database from a backup; or, to go on with what it "
                     "holds as a new state, delete %s/%s (the old state's assignments are then "
                     "refused)",
                     dir, rows->db_name, hm, AGG_STATE_ID_FILE, rows->loss_hint, dir,
                     AGG_STATE_ID_FILE);
        return LDPB_ESTATE;
    }
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;
    randombytes_buf(out->id, AGG_STATE_ID_BYTES);
    out->legacy_tokens = holds_state; /* only a state of an older version issued v1/v2 tokens */
    out->write_marker = 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ldpb_err err =
        rows->insert(ctx, out, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, errmsg, errcap);
    if (err)
        return err;
    agg_state_id_hex(out->id, hd);
    if (holds_state)
        ldpb_detailf(out->note, sizeof out->note,
                     "state %s: identity created for a state written by an older version "
                     "(its assignments stay valid until they expire)",
                     hd);
    else if (have_m)
        ldpb_detailf(out->note, sizeof out->note,
                     "state %s: a new state (--new-state), replacing state %s, whose "
                     "assignments are refused from now on",
                     hd, hm);
    else
        ldpb_detailf(out->note, sizeof out->note, "state %s: a new state", hd);
    return LDPB_OK;
}

/* The database's identity: 1 read (and *legacy), 0 none, -1 on failure. */
static int sqlite_read_row(void *ctx, uint8_t id[AGG_STATE_ID_BYTES], int *legacy, char *errmsg,
                           size_t errcap)
{
    sqlite3 *db = ctx;
    sqlite3_stmt *st = NULL;
    int got = -1;
    if (sqlite3_prepare_v2(db, "SELECT state_id, legacy_tokens FROM identity WHERE id = 1", -1, &st,
                           NULL) != SQLITE_OK) {
        ldpb_detailf(errmsg, errcap, "reading the identity: %s", sqlite3_errmsg(db));
        return -1;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        got = 0;
    } else if (rc != SQLITE_ROW) {
        ldpb_detailf(errmsg, errcap, "reading the identity: %s", sqlite3_errmsg(db));
    } else if (sqlite3_column_bytes(st, 0) != AGG_STATE_ID_BYTES) {
        ldpb_detailf(errmsg, errcap, "the identity row holds %d bytes, not %u",
                     sqlite3_column_bytes(st, 0), AGG_STATE_ID_BYTES);
    } else {
        memcpy(id, sqlite3_column_blob(st, 0), AGG_STATE_ID_BYTES);
        *legacy = sqlite3_column_int(st, 1) != 0;
        got = 1;
    }
    sqlite3_finalize(st);
    return got;
}

static ldpb_err sqlite_insert_row(void *ctx, const agg_state_ident *ident, int64_t created_ms,
                                  char *errmsg, size_t errcap)
{
    sqlite3 *db = ctx;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "INSERT INTO identity(id, state_id, legacy_tokens, created_at_ms)"
                                " VALUES (1, ?1, ?2, ?3)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_blob(st, 1, ident->id, AGG_STATE_ID_BYTES, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, ident->legacy_tokens);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)created_ms);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc != SQLITE_OK)
        ldpb_detailf(errmsg, errcap, "writing the identity: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? LDPB_OK : LDPB_EIO;
}

static const agg_state_id_rows sqlite_rows = {sqlite_read_row, sqlite_insert_row, "aggregator.db",
                                              "was aggregator.db-wal deleted?"};

ldpb_err agg_state_id_settle(sqlite3 *db, const char *dir, int holds_state, int new_state,
                             agg_state_ident *out, char *errmsg, size_t errcap)
{
    return agg_state_id_settle_rows(&sqlite_rows, db, dir, holds_state, new_state, out, errmsg,
                                    errcap);
}

ldpb_err agg_state_id_record(const char *dir, agg_state_ident *ident, char *errmsg, size_t errcap)
{
    if (!ident->write_marker)
        return LDPB_OK;
    char path[4096], text[MARKER_BYTES + 1], why[256] = "";
    if (marker_path(dir, path, sizeof path)) {
        ldpb_detailf(errmsg, errcap, "state_dir %s: path too long", dir);
        return LDPB_EIO;
    }
    agg_state_id_hex(ident->id, text);
    text[MARKER_BYTES - 1] = '\n';
    ldpb_durable_buf buf = {text, MARKER_BYTES};
    ldpb_err err =
        ldpb_durable_write(path, NULL, ldpb_durable_fill_buf, &buf, NULL, why, sizeof why);
    if (err) {
        ldpb_detailf(errmsg, errcap, "%s: %s", path, why[0] ? why : ldpb_strerror(err));
        return LDPB_EIO;
    }
    ident->write_marker = 0;
    return LDPB_OK;
}
