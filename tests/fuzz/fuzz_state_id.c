/* Fuzz target for the state identity's decoding (aggregator/daemon/state_id.c): the state_id
 * marker file's parser, and the rules of agg_state_id_settle over a marker file and an identity
 * row, both taken from the input.
 *
 * Input: flags u8, the identity row's length u8, its legacy_tokens u8, the row's bytes, then the
 * marker file's bytes (all the rest). Flags: bit 0, run the rules (below); bit 1, the database
 * holds a state; bit 2, --new-state; bit 3, the marker file exists; bit 4, the identity row
 * exists; bit 5, the row's value is TEXT rather than a BLOB.
 *
 * The marker bytes always go through agg_state_id_parse_marker, checked against a reference
 * written here from state_id.h: a marker is accepted exactly when it is 32 hex digits (either
 * case) and a newline, nothing before or after; an accepted marker names the identity its digits
 * spell, so agg_state_id_hex of it and a newline give the input back, lower-cased.
 *
 * With bit 0, agg_state_id_settle runs in a scratch directory on an in-memory database with the
 * identity table, and its outcome must be the one the table in state_id.h gives (an unreadable
 * marker or row is LDPB_ECORRUPT); an identity it settles on is written with
 * agg_state_id_record, read back through the parser, and a second settle (the next start) must
 * find the same identity with nothing left to write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "fuzz_target.h"
#include "state_id.h"
#include "state_id_parse.h"

#define HEAD 3u

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The parser against the reference: 1 and `id` if the bytes are a marker, else 0. */
static int check_marker(const uint8_t *data, size_t size, uint8_t id[AGG_STATE_ID_BYTES])
{
    uint8_t want[AGG_STATE_ID_BYTES];
    int ok = size == AGG_STATE_ID_MARKER_BYTES && data[size - 1] == '\n';
    for (size_t i = 0; ok && i < 2 * AGG_STATE_ID_BYTES; i += 2) {
        int hi = hex_value(data[i]), lo = hex_value(data[i + 1]);
        ok = hi >= 0 && lo >= 0;
        if (ok)
            want[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    int rc = agg_state_id_parse_marker(data, size, id);
    if (rc != (ok ? 0 : -1))
        abort();
    if (!ok)
        return 0;
    if (memcmp(id, want, sizeof want) != 0)
        abort();
    char hex[2 * AGG_STATE_ID_BYTES + 1];
    agg_state_id_hex(id, hex);
    for (size_t i = 0; i < 2 * AGG_STATE_ID_BYTES; i++) {
        uint8_t c = data[i];
        if (c >= 'A' && c <= 'F')
            c = (uint8_t)(c - 'A' + 'a');
        if ((uint8_t)hex[i] != c)
            abort();
    }
    return 1;
}

/* ---- the rules ------------------------------------------------------------------------- */

static char dir[64], marker_path[128];

static void cleanup(void)
{
    unlink(marker_path);
    rmdir(dir);
}

static void make_dir(void)
{
    if (dir[0])
        return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/ldpb-fuzz-sid-XXXXXX", base);
    if (!mkdtemp(dir))
        abort();
    snprintf(marker_path, sizeof marker_path, "%s/%s", dir, AGG_STATE_ID_FILE);
    atexit(cleanup);
}

static void put_marker(const uint8_t *p, size_t n, int exists)
{
    if (unlink(marker_path) != 0 && errno != ENOENT)
        abort();
    if (!exists)
        return;
    FILE *f = fopen(marker_path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        abort();
}

/* The table as aggregator/daemon/store.c creates it. */
static sqlite3 *make_db(int has_row, int text, const uint8_t *row, size_t row_len, int legacy)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "CREATE TABLE identity(id INTEGER PRIMARY KEY CHECK (id = 1),"
                     " state_id BLOB NOT NULL, legacy_tokens INTEGER NOT NULL,"
                     " created_at_ms INTEGER NOT NULL); BEGIN IMMEDIATE",
                     NULL, NULL, NULL) != SQLITE_OK)
        abort();
    if (has_row) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "INSERT INTO identity VALUES (1, ?1, ?2, 0)", -1, &st, NULL))
            abort();
        if (text)
            sqlite3_bind_text(st, 1, (const char *)row, (int)row_len, SQLITE_TRANSIENT);
        else
            sqlite3_bind_blob(st, 1, row, (int)row_len, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 2, legacy);
        if (sqlite3_step(st) != SQLITE_DONE)
            abort();
        sqlite3_finalize(st);
    }
    return db;
}

/* The outcome the table of state_id.h gives. */
static ldpb_err expected(int holds, int new_state, int has_m, int m_ok, int has_d, size_t d_len,
                         const uint8_t *m, const uint8_t *d)
{
    if (has_m && !m_ok)
        return LDPB_ECORRUPT;
    if (has_d && d_len != AGG_STATE_ID_BYTES)
        return LDPB_ECORRUPT;
    if (new_state && (has_d || holds))
        return LDPB_ESTATE;
    if (has_d)
        return has_m && memcmp(m, d, AGG_STATE_ID_BYTES) != 0 ? LDPB_ESTATE : LDPB_OK;
    if (has_m && (holds || !new_state))
        return LDPB_ESTATE;
    return LDPB_OK;
}

static void check_rules(uint8_t flags, const uint8_t *row, size_t row_len, int legacy,
                        const uint8_t *marker, size_t m_len, int m_ok, const uint8_t *m_id)
{
    int holds = flags >> 1 & 1, new_state = flags >> 2 & 1, has_m = flags >> 3 & 1;
    int has_d = flags >> 4 & 1, text = flags >> 5 & 1;
    make_dir();
    put_marker(marker, m_len, has_m);
    sqlite3 *db = make_db(has_d, text, row, row_len, legacy);
    agg_state_ident id;
    char msg[1024] = "";
    ldpb_err got = agg_state_id_settle(db, dir, holds, new_state, &id, msg, sizeof msg);
    ldpb_err want = expected(holds, new_state, has_m, m_ok, has_d, row_len, m_id, row);
    if (got != want || (got != LDPB_OK && msg[0] == '\0'))
        abort();
    if (got != LDPB_OK) {
        sqlite3_close(db);
        return;
    }
    if (has_d) {
        if (memcmp(id.id, row, AGG_STATE_ID_BYTES) != 0 || id.legacy_tokens != (legacy != 0) ||
            id.write_marker != !has_m)
            abort();
    } else if (id.legacy_tokens != holds || !id.write_marker) {
        abort();
    }
    if (agg_state_id_record(dir, &id, msg, sizeof msg) != LDPB_OK || id.write_marker)
        abort();
    /* What is on disk now names the identity, and the next start settles on it again. */
    FILE *f = fopen(marker_path, "rb");
    uint8_t back[64], back_id[AGG_STATE_ID_BYTES];
    size_t n = f ? fread(back, 1, sizeof back, f) : 0;
    if (f)
        fclose(f);
    if (!check_marker(back, n, back_id) || memcmp(back_id, id.id, sizeof back_id) != 0)
        abort();
    agg_state_ident again;
    if (agg_state_id_settle(db, dir, 1, 0, &again, msg, sizeof msg) != LDPB_OK ||
        memcmp(again.id, id.id, sizeof id.id) != 0 || again.write_marker ||
        again.legacy_tokens != id.legacy_tokens)
        abort();
    sqlite3_close(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HEAD)
        return 0;
    if (sodium_init() < 0)
        abort();
    uint8_t flags = data[0];
    size_t row_len = data[1];
    int legacy = data[2];
    if (row_len > size - HEAD)
        row_len = size - HEAD;
    const uint8_t *row = data + HEAD, *marker = row + row_len;
    size_t m_len = size - HEAD - row_len;
    uint8_t m_id[AGG_STATE_ID_BYTES];
    int m_ok = check_marker(marker, m_len, m_id);
    if (flags & 1)
        check_rules(flags, row, row_len, legacy, marker, m_len, m_ok, m_id);
    return 0;
}
