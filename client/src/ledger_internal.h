/* Private to the ledger: the in-memory state (records plus an id hash table), the file codec
 * (ledger_format.c) and the test-only durability hook. Nothing here is part of the public API;
 * tests and the fuzz target include it directly. */
#ifndef LDPB_LEDGER_INTERNAL_H
#define LDPB_LEDGER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "ldpb/ledger.h"

/* File layout (docs/ledger.md): a header, the entries, a 32-byte BLAKE2b. Format 1 (44-byte
 * header, epsilon only) is written while the ledger has no delta budget and every entry is of the
 * experiment "default", so a ledger that never used more stays readable by older libraries;
 * format 2 (68-byte header: the delta budget, cap and spend; entries with a delta and a vector of
 * values) once it has a delta budget; format 3 (format 2's header, then the table of experiment
 * names, and entries that name their experiment by its index in it) once an entry is of another
 * experiment than "default". */
#define LEDGER_MAGIC          "LDPBLEDG"
#define LEDGER_VERSION        1u
#define LEDGER_VERSION_DELTA  2u
#define LEDGER_VERSION_EXP    3u
#define LEDGER_HEADER_BYTES   44u
#define LEDGER_HEADER2_BYTES  68u
#define LEDGER_CHECKSUM_BYTES 32u
#define LEDGER_ENTRY_MIN      19u /* id_len 1 */
#define LEDGER_ENTRY_MAX      (18u + LDPB_ASSIGNMENT_ID_MAX)
/* Format 2: id_len | id | kind | epsilon | delta | n u16 | n values. */
#define LEDGER_ENTRY2_FIXED 20u /* all but the id and the values */
#define LEDGER_ENTRY2_MIN   (LEDGER_ENTRY2_FIXED + 1u + 8u)
#define LEDGER_ENTRY2_MAX   (LEDGER_ENTRY2_FIXED + LDPB_ASSIGNMENT_ID_MAX + 8u * LEDGER_VALUES_MAX)
/* Format 3: id_len | id | kind | experiment u32 | epsilon | delta | n u16 | n values; the
 * experiment is 0 for "default", else 1 + its index in the name table (names in strictly
 * increasing byte order, each 1..64 bytes of [a-z0-9._-], never "default"), which follows the
 * header as count u32 | count times (len u8 | name). */
#define LEDGER_ENTRY3_FIXED 24u
#define LEDGER_ENTRY3_MIN   (LEDGER_ENTRY3_FIXED + 1u + 8u)
#define LEDGER_ENTRY3_MAX   (LEDGER_ENTRY3_FIXED + LDPB_ASSIGNMENT_ID_MAX + 8u * LEDGER_VALUES_MAX)
#define LEDGER_EXP_NAME_MAX LDPB_EXPERIMENT_NAME_MAX
/* Values of one entry: 1 for a scalar mechanism, a packed statistics triangle (ldpb/ctxstat.h)
 * for the local contextual mode. */
#define LEDGER_VALUES_MAX 561u

/* Spent epsilon is counted in units of 2^-32, spent delta in units of 2^-63 (the delta budget is
 * at most 1/2, so every count and every sum of two fits 64 bits). */
#define LEDGER_UNIT_BITS       32
#define LEDGER_DELTA_UNIT_BITS 63

/* The largest well-formed file: anything bigger is refused before it is read. About 4.9 GB, so
 * it is computed in uint64_t: in size_t it would wrap on a 32-bit target (armhf) to about 0.9 GB
 * and call a good ledger corrupt. A file within it that this process cannot address is refused by
 * LEDGER_LOAD_MAX instead. */
#define LEDGER_FILE_MAX                                                                            \
    ((uint64_t)LEDGER_HEADER2_BYTES + 4u +                                                         \
     (uint64_t)LDPB_LEDGER_ENTRIES_MAX * (1u + LEDGER_EXP_NAME_MAX + LEDGER_ENTRY3_MAX) +          \
     LEDGER_CHECKSUM_BYTES)
/* The product did not wrap (nor would on any word size: the operands are uint64_t). */
_Static_assert(LEDGER_FILE_MAX / LDPB_LEDGER_ENTRIES_MAX >=
                   1u + LEDGER_EXP_NAME_MAX + (uint64_t)LEDGER_ENTRY3_MAX,
               "LEDGER_FILE_MAX wrapped");
_Static_assert(LEDGER_FILE_MAX > UINT32_MAX, "a full ledger is larger than 4 GiB");

/* A length within LEDGER_FILE_MAX, compared in uint64_t: where size_t is 32 bits every length
 * is, and a comparison written on the size_t would be one the compiler calls always false. */
static inline int ledger_len_within_max(uint64_t len)
{
    return len <= LEDGER_FILE_MAX;
}

/* The largest file the loader reads into one buffer: PTRDIFF_MAX on a 32-bit target (2 GiB;
 * malloc gives no more), LEDGER_FILE_MAX where that is smaller (64-bit). */
#define LEDGER_LOAD_MAX                                                                            \
    ((uint64_t)PTRDIFF_MAX < LEDGER_FILE_MAX ? (uint64_t)PTRDIFF_MAX : LEDGER_FILE_MAX)

typedef struct ledger_record {
    uint8_t id[LDPB_ASSIGNMENT_ID_MAX];
    uint8_t id_len;
    uint8_t kind; /* an ldpb_mech_kind value, or LDPB_MECH_ID_GAUSSIAN_STATS */
    double epsilon;
    double value; /* the scalar mechanisms' output (n == 1, vec NULL) */
    double delta; /* 0 for the scalar mechanisms */
    uint16_t n;   /* values: 1, or the statistics in vec */
    double *vec;  /* owned by the state once appended; NULL for a scalar entry */
    uint32_t exp; /* the experiment: 0 "default", else 1 + its index in ledger_state.exps */
} ledger_record;

typedef char ledger_exp_name[LEDGER_EXP_NAME_MAX + 1];

typedef struct ledger_state {
    double budget, cap;
    uint64_t budget_units; /* floor(budget * 2^32) */
    uint64_t spent_units;
    double delta_budget, delta_cap; /* 0, 0: no report with a delta is admitted */
    uint64_t delta_budget_units;    /* floor(delta_budget * 2^63) */
    uint64_t delta_spent_units;
    ledger_record *recs; /* in file order */
    size_t count, alloc;
    uint32_t *slots; /* open addressing, linear probing; record index + 1, 0 = empty */
    size_t nslots;   /* 0 or a power of two, at least twice the capacity */
    uint8_t hash_key[crypto_shorthash_KEYBYTES];
    /* The experiments of the records other than "default", in increasing byte order, each used
     * by a record (NUL-terminated). */
    ledger_exp_name *exps;
    size_t n_exps, exps_alloc;
} ledger_state;

/* Empties `st` and draws a fresh hash key (the aggregator picks the ids, so the table is keyed
 * to keep a hostile id set from degrading lookups). Call sodium_init() first. */
void ledger_state_init(ledger_state *st);

/* Wipes and frees the records and the table; `st` is empty (same key) afterwards. */
void ledger_state_fini(ledger_state *st);

/* Makes room for `n` records in total, growing the array and the table. LDPB_ENOMEM leaves the
 * state as it was. */
ldpb_err ledger_state_reserve(ledger_state *st, size_t n);

/* The record with this id, or NULL. */
const ledger_record *ledger_state_find(const ledger_state *st, const uint8_t *id, size_t id_len);

/* Appends a record whose id is not present; room must have been reserved. The state takes
 * rec->vec. */
void ledger_state_append(ledger_state *st, const ledger_record *rec);

/* The experiment index of `name` (NULL, "" or "default": 0). LDPB_OK with *exp set; LDPB_ESTATE
 * if the state holds no such experiment (*exp is then where ledger_state_exp_add would put it);
 * LDPB_EINVAL for a name that is not an experiment name. */
ldpb_err ledger_state_exp_find(const ledger_state *st, const char *name, uint32_t *exp);

/* Adds experiment `name` (valid, not held yet) at its place in the order, renumbering the records
 * after it, and sets *exp. LDPB_ENOMEM leaves the state as it was. */
ldpb_err ledger_state_exp_add(ledger_state *st, const char *name, uint32_t *exp);

/* Undoes ledger_state_exp_add of index `exp`, which no record uses. */
void ledger_state_exp_remove(ledger_state *st, uint32_t exp);

/* The name of experiment index `exp`: "" for 0 ("default"). */
const char *ledger_state_exp_name(const ledger_state *st, uint32_t exp);

/* Budget and cap rules shared by open and the parser: LDPB_EINVAL if either is not finite,
 * LDPB_ERANGE unless 2^-32 <= budget <= LDPB_LEDGER_BUDGET_MAX and 0 < cap <= budget. */
ldpb_err ledger_check_limits(double budget, double cap);

/* The same for delta: LDPB_EINVAL if not finite, LDPB_ERANGE unless 0 <= cap <= budget <=
 * LDPB_LEDGER_DELTA_MAX (both 0: no delta budget). */
ldpb_err ledger_check_delta_limits(double budget, double cap);

/* ceil(delta * 2^63) and floor(budget * 2^63), for 0 <= x <= LDPB_LEDGER_DELTA_MAX. */
uint64_t ledger_delta_units(double delta);
uint64_t ledger_delta_budget_units(double budget);

/* ceil(epsilon * 2^32) and floor(budget * 2^32), for 0 < x <= LDPB_LEDGER_BUDGET_MAX (exact:
 * scaling by a power of two loses nothing and the result is below 2^53). */
uint64_t ledger_charge_units(double epsilon);
uint64_t ledger_budget_units(double budget);

/* Validates a whole file image and fills `st` (which must be freshly initialised and empty).
 * LDPB_ECORRUPT for any defect, LDPB_ENOMEM; on error `st` is left empty. Never reads outside
 * buf[0, len). */
ldpb_err ledger_parse(const uint8_t *buf, size_t len, ledger_state *st);

/* The encoder streams the file to a sink, which returns 0 or -1 (to stop). `extra` (may be
 * NULL) is appended after the stored records and `spent_units` (`delta_spent_units`) replaces
 * the stored spend, so the
 * next state can be written before the in-memory one changes. Returns 0 or the sink's -1. */
typedef int (*ledger_sink)(void *ctx, const uint8_t *p, size_t n);
int ledger_emit(const ledger_state *st, const ledger_record *extra, uint64_t spent_units,
                uint64_t delta_spent_units, ledger_sink sink, void *ctx);

/* The size ledger_emit produces. */
size_t ledger_encoded_size(const ledger_state *st, const ledger_record *extra);

/* ledger_emit into a malloc'd buffer (for tests and the corpus generator). LDPB_ENOMEM. */
ldpb_err ledger_encode(const ledger_state *st, uint8_t **out, size_t *len);

/* Test hook: called at each durability step of a privatization that draws a new value. A
 * nonzero return from any step before LEDGER_STEP_COMMITTED makes that step fail as an I/O error
 * would; the return at LEDGER_STEP_COMMITTED is ignored. Not exported from the shared library. */
typedef enum ledger_step {
    LEDGER_STEP_TMP_WRITTEN = 1, /* the whole file is in path.tmp, not yet synced */
    LEDGER_STEP_TMP_SYNCED,      /* path.tmp fsynced and closed */
    LEDGER_STEP_RENAMED,         /* path.tmp renamed over path */
    LEDGER_STEP_DIR_SYNCED,      /* the directory fsynced: the spend is durable */
    LEDGER_STEP_COMMITTED,       /* in-memory state updated; the value is returned next */
} ledger_step;

typedef int (*ledger_step_hook)(void *ctx, ledger_step step);
void ledger_set_step_hook(ldpb_ledger *ledger, ledger_step_hook hook, void *ctx);

#endif
