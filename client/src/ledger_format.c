/* The ledger's in-memory state and its file codec. The parser is fed untrusted bytes (a file
 * that may be truncated, bit-rotted or hand-edited, and the fuzzer), so it checks every length
 * before it reads and rejects anything that is not exactly what ledger_emit writes. The byte
 * format is specified in docs/ledger.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ctxstat.h"
#include "ldpb/mech_table.h"
#include "ldpb/wire.h"
#include "ledger_internal.h"

/* ---- state ---------------------------------------------------------------------------- */

void ledger_state_init(ledger_state *st)
{
    memset(st, 0, sizeof *st);
    randombytes_buf(st->hash_key, sizeof st->hash_key);
}

static void record_wipe(ledger_record *r)
{
    if (r->vec) {
        sodium_memzero(r->vec, (size_t)r->n * sizeof *r->vec);
        free(r->vec);
        r->vec = NULL;
    }
}

void ledger_state_fini(ledger_state *st)
{
    for (size_t i = 0; i < st->count; i++)
        record_wipe(&st->recs[i]);
    if (st->recs) {
        sodium_memzero(st->recs, st->alloc * sizeof *st->recs);
        free(st->recs);
    }
    free(st->slots);
    free(st->exps);
    st->recs = NULL;
    st->slots = NULL;
    st->exps = NULL;
    st->n_exps = st->exps_alloc = 0;
    st->count = st->alloc = st->nslots = 0;
    st->spent_units = 0;
    st->delta_spent_units = 0;
}

static size_t slot_of(const ledger_state *st, const uint8_t *id, size_t id_len)
{
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, id, id_len, st->hash_key);
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof h; i++)
        v |= (uint64_t)h[i] << (8 * i);
    return (size_t)(v & (st->nslots - 1));
}

static void table_put(const ledger_state *st, size_t index)
{
    const ledger_record *r = &st->recs[index];
    size_t i = slot_of(st, r->id, r->id_len);
    while (st->slots[i] != 0)
        i = (i + 1) & (st->nslots - 1);
    st->slots[i] = (uint32_t)(index + 1);
}

ldpb_err ledger_state_reserve(ledger_state *st, size_t n)
{
    if (n > LDPB_LEDGER_ENTRIES_MAX)
        return LDPB_ERANGE;
    if (n > st->alloc) {
        size_t want = st->alloc ? st->alloc * 2 : 16;
        if (want < n)
            want = n;
        if (want > LDPB_LEDGER_ENTRIES_MAX)
            want = LDPB_LEDGER_ENTRIES_MAX;
        ledger_record *recs = realloc(st->recs, want * sizeof *recs);
        if (!recs)
            return LDPB_ENOMEM;
        st->recs = recs;
        st->alloc = want;
    }
    /* Keep the load factor at or below 1/2 so probe sequences stay short. */
    if (st->nslots < 2 * st->alloc) {
        size_t ns = 32;
        while (ns < 2 * st->alloc)
            ns *= 2;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots)
            return LDPB_ENOMEM;
        free(st->slots);
        st->slots = slots;
        st->nslots = ns;
        for (size_t k = 0; k < st->count; k++)
            table_put(st, k);
    }
    return LDPB_OK;
}

const ledger_record *ledger_state_find(const ledger_state *st, const uint8_t *id, size_t id_len)
{
    if (st->nslots == 0 || id_len == 0 || id_len > LDPB_ASSIGNMENT_ID_MAX)
        return NULL;
    for (size_t i = slot_of(st, id, id_len);; i = (i + 1) & (st->nslots - 1)) {
        uint32_t s = st->slots[i];
        if (s == 0)
            return NULL;
        const ledger_record *r = &st->recs[s - 1];
        if (r->id_len == id_len && memcmp(r->id, id, id_len) == 0)
            return r;
    }
}

void ledger_state_append(ledger_state *st, const ledger_record *rec)
{
    st->recs[st->count] = *rec;
    table_put(st, st->count);
    st->count++;
}

/* ---- experiments ------------------------------------------------------------------------ */

static int is_default(const char *name)
{
    return !name || !*name || strcmp(name, "default") == 0;
}

ldpb_err ledger_state_exp_find(const ledger_state *st, const char *name, uint32_t *exp)
{
    *exp = 0;
    if (is_default(name))
        return LDPB_OK;
    size_t len = strnlen(name, LEDGER_EXP_NAME_MAX + 1);
    if (!ldpb_wire_experiment_valid(name, len))
        return LDPB_EINVAL;
    size_t lo = 0, hi = st->n_exps; /* binary search in the sorted table */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->exps[mid], name);
        if (c == 0) {
            *exp = (uint32_t)mid + 1;
            return LDPB_OK;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *exp = (uint32_t)lo + 1;
    return LDPB_ESTATE;
}

ldpb_err ledger_state_exp_add(ledger_state *st, const char *name, uint32_t *exp)
{
    uint32_t at = 0;
    if (ledger_state_exp_find(st, name, &at) != LDPB_ESTATE)
        return LDPB_EINVAL; /* default, invalid or present: the caller checked */
    if (st->n_exps == st->exps_alloc) {
        size_t want = st->exps_alloc ? 2 * st->exps_alloc : 4;
        ledger_exp_name *v = realloc(st->exps, want * sizeof *v);
        if (!v)
            return LDPB_ENOMEM;
        st->exps = v;
        st->exps_alloc = want;
    }
    size_t pos = at - 1;
    memmove(st->exps + pos + 1, st->exps + pos, (st->n_exps - pos) * sizeof *st->exps);
    memset(st->exps[pos], 0, sizeof st->exps[pos]);
    memcpy(st->exps[pos], name, strlen(name));
    st->n_exps++;
    for (size_t i = 0; i < st->count; i++)
        if (st->recs[i].exp >= at)
            st->recs[i].exp++;
    *exp = at;
    return LDPB_OK;
}

void ledger_state_exp_remove(ledger_state *st, uint32_t exp)
{
    if (exp == 0 || exp > st->n_exps)
        return;
    size_t pos = exp - 1;
    memmove(st->exps + pos, st->exps + pos + 1, (st->n_exps - pos - 1) * sizeof *st->exps);
    st->n_exps--;
    for (size_t i = 0; i < st->count; i++)
        if (st->recs[i].exp > exp)
            st->recs[i].exp--;
}

const char *ledger_state_exp_name(const ledger_state *st, uint32_t exp)
{
    return exp == 0 || exp > st->n_exps ? "" : st->exps[exp - 1];
}

/* ---- limits and fixed point ------------------------------------------------------------ */

ldpb_err ledger_check_limits(double budget, double cap)
{
    if (!isfinite(budget) || !isfinite(cap))
        return LDPB_EINVAL;
    if (!(budget >= ldexp(1.0, -LEDGER_UNIT_BITS) && budget <= LDPB_LEDGER_BUDGET_MAX))
        return LDPB_ERANGE;
    if (!(cap > 0.0 && cap <= budget))
        return LDPB_ERANGE;
    return LDPB_OK;
}

ldpb_err ledger_check_delta_limits(double budget, double cap)
{
    if (!isfinite(budget) || !isfinite(cap))
        return LDPB_EINVAL;
    if (!(budget >= 0.0 && budget <= LDPB_LEDGER_DELTA_MAX && cap >= 0.0 && cap <= budget))
        return LDPB_ERANGE;
    return LDPB_OK;
}

uint64_t ledger_delta_units(double delta)
{
    return (uint64_t)ceil(ldexp(delta, LEDGER_DELTA_UNIT_BITS));
}

uint64_t ledger_delta_budget_units(double budget)
{
    return (uint64_t)floor(ldexp(budget, LEDGER_DELTA_UNIT_BITS));
}

uint64_t ledger_charge_units(double epsilon)
{
    return (uint64_t)ceil(ldexp(epsilon, LEDGER_UNIT_BITS));
}

uint64_t ledger_budget_units(double budget)
{
    return (uint64_t)floor(ldexp(budget, LEDGER_UNIT_BITS));
}

/* A kind the ledger can hold: a local mechanism of the table (raw reports are never charged),
 * scalar or the statistics vector. */
static const ldpb_mech_desc *kind_desc(uint8_t kind)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(kind);
    return d && d->local ? d : NULL;
}

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* An entry as the encoder would have written it: the id length in range, a known kind, an
 * epsilon in (0, min(cap, LDPB_EPSILON_MAX)], and a value the mechanism table admits for that
 * kind and epsilon (the rule the aggregator applies to the report that resends it), which for a
 * bit is exactly +0.0 or 1.0. */
static int record_valid(const ledger_record *r, double cap, double delta_cap)
{
    const ldpb_mech_desc *d =
        r->id_len == 0 || r->id_len > LDPB_ASSIGNMENT_ID_MAX ? NULL : kind_desc(r->kind);
    if (!d)
        return 0;
    if (!(r->epsilon > 0.0 && r->epsilon <= cap && r->epsilon <= LDPB_EPSILON_MAX))
        return 0;
    if (d->output == LDPB_MECH_OUTPUT_VECTOR) {
        /* a packed triangle of some d (ldpb/ctxstat.h), finite, charged a delta in range */
        uint32_t k = 1;
        while (k < LDPB_CTXSTAT_D_MAX && LDPB_CTXSTAT_VALUES(k) < r->n)
            k++;
        if (!r->vec || r->n != LDPB_CTXSTAT_VALUES(k))
            return 0;
        if (!(r->delta > 0.0 && r->delta <= delta_cap && r->delta <= LDPB_CTXSTAT_DELTA_MAX))
            return 0;
        for (size_t i = 0; i < r->n; i++)
            if (!isfinite(r->vec[i]))
                return 0;
        return bits_of(r->value) == bits_of(0.0);
    }
    if (r->n != 1 || r->vec || bits_of(r->delta) != bits_of(0.0))
        return 0;
    int is_bit = d->output == LDPB_MECH_OUTPUT_BIT;
    if (ldpb_mech_check_value(d->id, r->epsilon, is_bit, r->value, "ledger", NULL) != LDPB_OK)
        return 0;
    if (is_bit && bits_of(r->value) != bits_of(0.0) && bits_of(r->value) != bits_of(1.0))
        return 0;
    return 1;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Hashes what passes through and hands it to the sink in chunks. */
typedef struct emitter {
    crypto_generichash_state h;
    ledger_sink sink;
    void *ctx;
    uint8_t buf[8192];
    size_t n;
    int failed;
} emitter;

static void em_flush(emitter *em)
{
    if (!em->failed && em->n && em->sink(em->ctx, em->buf, em->n) != 0)
        em->failed = 1;
    em->n = 0;
}

static void em_put(emitter *em, const uint8_t *p, size_t n, int hashed)
{
    if (hashed)
        crypto_generichash_update(&em->h, p, n);
    while (n) {
        size_t k = sizeof em->buf - em->n;
        if (k > n)
            k = n;
        memcpy(em->buf + em->n, p, k);
        em->n += k;
        p += k;
        n -= k;
        if (em->n == sizeof em->buf)
            em_flush(em);
    }
}

/* The oldest format that holds the state (ledger_internal.h): 3 with an experiment other than
 * "default", else 2 with a delta budget (a vector entry needs one), else 1. `extra` is a record
 * about to be added (its experiment is in the table already). */
static unsigned format_of(const ledger_state *st)
{
    if (st->n_exps > 0)
        return LEDGER_VERSION_EXP;
    return st->delta_budget > 0.0 ? LEDGER_VERSION_DELTA : LEDGER_VERSION;
}

static void em_record(emitter *em, const ledger_record *r, unsigned version)
{
    uint8_t b[LEDGER_ENTRY3_FIXED + LDPB_ASSIGNMENT_ID_MAX + 8];
    int v2 = version >= LEDGER_VERSION_DELTA;
    size_t o = 0;
    b[o++] = r->id_len;
    memcpy(b + o, r->id, r->id_len);
    o += r->id_len;
    b[o++] = r->kind;
    if (version >= LEDGER_VERSION_EXP) {
        put_le(b + o, r->exp, 4);
        o += 4;
    }
    put_le(b + o, bits_of(r->epsilon), 8);
    o += 8;
    if (!v2) {
        put_le(b + o, bits_of(r->value), 8);
        em_put(em, b, o + 8, 1);
        return;
    }
    put_le(b + o, bits_of(r->delta), 8);
    o += 8;
    put_le(b + o, r->n, 2);
    o += 2;
    em_put(em, b, o, 1);
    for (size_t i = 0; i < r->n; i++) {
        put_le(b, bits_of(r->vec ? r->vec[i] : r->value), 8);
        em_put(em, b, 8, 1);
    }
}

static size_t record_size(const ledger_record *r, unsigned version)
{
    if (version >= LEDGER_VERSION_EXP)
        return LEDGER_ENTRY3_FIXED + r->id_len + 8u * r->n;
    if (version == LEDGER_VERSION_DELTA)
        return LEDGER_ENTRY2_FIXED + r->id_len + 8u * r->n;
    return 18u + r->id_len;
}

size_t ledger_encoded_size(const ledger_state *st, const ledger_record *extra)
{
    unsigned version = format_of(st);
    size_t n = (version >= LEDGER_VERSION_DELTA ? LEDGER_HEADER2_BYTES : LEDGER_HEADER_BYTES) +
               LEDGER_CHECKSUM_BYTES;
    if (version >= LEDGER_VERSION_EXP) {
        n += 4;
        for (size_t i = 0; i < st->n_exps; i++)
            n += 1u + strlen(st->exps[i]);
    }
    for (size_t i = 0; i < st->count; i++)
        n += record_size(&st->recs[i], version);
    if (extra)
        n += record_size(extra, version);
    return n;
}

int ledger_emit(const ledger_state *st, const ledger_record *extra, uint64_t spent_units,
                uint64_t delta_spent_units, ledger_sink sink, void *ctx)
{
    emitter e, *em = &e;
    em->sink = sink;
    em->ctx = ctx;
    em->n = 0;
    em->failed = 0;
    crypto_generichash_init(&em->h, NULL, 0, LEDGER_CHECKSUM_BYTES);

    unsigned version = format_of(st);
    int v2 = version >= LEDGER_VERSION_DELTA;
    uint8_t hdr[LEDGER_HEADER2_BYTES];
    memcpy(hdr, LEDGER_MAGIC, 8);
    put_le(hdr + 8, version, 4);
    put_le(hdr + 12, 0, 4); /* flags */
    put_le(hdr + 16, bits_of(st->budget), 8);
    put_le(hdr + 24, bits_of(st->cap), 8);
    put_le(hdr + 32, spent_units, 8);
    size_t at = 40;
    if (v2) {
        put_le(hdr + 40, bits_of(st->delta_budget), 8);
        put_le(hdr + 48, bits_of(st->delta_cap), 8);
        put_le(hdr + 56, delta_spent_units, 8);
        at = 64;
    }
    put_le(hdr + at, (uint64_t)(st->count + (extra ? 1 : 0)), 4);
    em_put(em, hdr, at + 4, 1);
    if (version >= LEDGER_VERSION_EXP) {
        put_le(hdr, st->n_exps, 4);
        em_put(em, hdr, 4, 1);
        for (size_t i = 0; i < st->n_exps; i++) {
            uint8_t len = (uint8_t)strlen(st->exps[i]);
            em_put(em, &len, 1, 1);
            em_put(em, (const uint8_t *)st->exps[i], len, 1);
        }
    }
    for (size_t i = 0; i < st->count && !em->failed; i++)
        em_record(em, &st->recs[i], version);
    if (extra)
        em_record(em, extra, version);

    uint8_t sum[LEDGER_CHECKSUM_BYTES];
    crypto_generichash_final(&em->h, sum, sizeof sum);
    em_put(em, sum, sizeof sum, 0);
    em_flush(em);
    int failed = em->failed;
    sodium_memzero(em, sizeof *em);
    return failed ? -1 : 0;
}

typedef struct membuf {
    uint8_t *p;
    size_t n, cap;
} membuf;

static int mem_sink(void *ctx, const uint8_t *p, size_t n)
{
    membuf *m = ctx;
    if (n > m->cap - m->n)
        return -1;
    memcpy(m->p + m->n, p, n);
    m->n += n;
    return 0;
}

ldpb_err ledger_encode(const ledger_state *st, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    membuf m = {NULL, 0, ledger_encoded_size(st, NULL)};
    m.p = malloc(m.cap);
    if (!m.p)
        return LDPB_ENOMEM;
    if (ledger_emit(st, NULL, st->spent_units, st->delta_spent_units, mem_sink, &m) != 0 ||
        m.n != m.cap) {
        free(m.p); /* unreachable: the buffer is sized exactly */
        return LDPB_ESTATE;
    }
    *out = m.p;
    *len = m.n;
    return LDPB_OK;
}

/* ---- parsing ----------------------------------------------------------------------------- */

/* One entry at buf[*off, body): format 1 (id_len | id | kind | epsilon | value) or format 2
 * (id_len | id | kind | epsilon | delta | n | n values). 0 if it does not fit or is malformed;
 * r->vec is then NULL. */
static size_t entry_min(unsigned version)
{
    return version >= LEDGER_VERSION_EXP     ? LEDGER_ENTRY3_MIN
           : version == LEDGER_VERSION_DELTA ? LEDGER_ENTRY2_MIN
                                             : LEDGER_ENTRY_MIN;
}

static int parse_record(const uint8_t *buf, size_t body, size_t *off, unsigned version,
                        ledger_record *r)
{
    size_t o = *off;
    int v2 = version >= LEDGER_VERSION_DELTA;
    memset(r, 0, sizeof *r);
    if (body - o < entry_min(version))
        return 0;
    r->id_len = buf[o];
    size_t fixed = version >= LEDGER_VERSION_EXP ? LEDGER_ENTRY3_FIXED
                   : v2                          ? LEDGER_ENTRY2_FIXED
                                                 : 18u;
    if (r->id_len == 0 || r->id_len > LDPB_ASSIGNMENT_ID_MAX || body - o < fixed + r->id_len)
        return 0;
    memcpy(r->id, buf + o + 1, r->id_len);
    o += 1u + r->id_len;
    r->kind = buf[o++];
    if (version >= LEDGER_VERSION_EXP) {
        r->exp = (uint32_t)get_le(buf + o, 4);
        o += 4;
    }
    r->epsilon = double_of(get_le(buf + o, 8));
    o += 8;
    if (!v2) {
        r->value = double_of(get_le(buf + o, 8));
        r->n = 1;
        *off = o + 8;
        return 1;
    }
    r->delta = double_of(get_le(buf + o, 8));
    r->n = (uint16_t)get_le(buf + o + 8, 2);
    o += 10;
    if (r->n == 0 || r->n > LEDGER_VALUES_MAX || (body - o) / 8 < r->n)
        return 0;
    const ldpb_mech_desc *d = kind_desc(r->kind);
    if (d && d->output == LDPB_MECH_OUTPUT_VECTOR) {
        r->vec = malloc((size_t)r->n * sizeof *r->vec);
        if (!r->vec)
            return 0;
        for (size_t i = 0; i < r->n; i++)
            r->vec[i] = double_of(get_le(buf + o + 8 * i, 8));
    } else {
        r->value = double_of(get_le(buf + o, 8));
    }
    *off = o + 8u * r->n;
    return 1;
}

/* Format 3's table of experiment names at buf[*off, body): at least one (a state without any is
 * written in an older format), at most one per entry, each valid and not "default", in strictly
 * increasing byte order (so none twice). 0 if malformed. */
static ldpb_err parse_exps(const uint8_t *buf, size_t body, size_t *off, uint64_t count,
                           ledger_state *st)
{
    size_t o = *off;
    if (body - o < 4)
        return LDPB_ECORRUPT;
    uint64_t n = get_le(buf + o, 4);
    o += 4;
    if (n == 0 || n > count || n > (body - o) / 2)
        return LDPB_ECORRUPT;
    st->exps = calloc((size_t)n, sizeof *st->exps);
    if (!st->exps)
        return LDPB_ENOMEM;
    st->exps_alloc = (size_t)n;
    for (size_t i = 0; i < n; i++) {
        size_t len = o < body ? buf[o] : 0;
        if (o >= body || len > body - o - 1 ||
            !ldpb_wire_experiment_valid((const char *)buf + o + 1, len))
            return LDPB_ECORRUPT;
        memcpy(st->exps[i], buf + o + 1, len);
        o += 1 + len;
        if (strcmp(st->exps[i], "default") == 0 ||
            (i > 0 && strcmp(st->exps[i - 1], st->exps[i]) >= 0))
            return LDPB_ECORRUPT;
        st->n_exps = i + 1;
    }
    *off = o;
    return LDPB_OK;
}

ldpb_err ledger_parse(const uint8_t *buf, size_t len, ledger_state *st)
{
    ldpb_err err = LDPB_ECORRUPT;
    ledger_record r;
    memset(&r, 0, sizeof r);
    uint8_t *used = NULL; /* format 3: which names of the table the entries use */
    if (!buf || len < LEDGER_HEADER_BYTES + LEDGER_CHECKSUM_BYTES || !ledger_len_within_max(len))
        goto fail;

    /* The checksum first: a file that fails it is not looked at further. */
    size_t body = len - LEDGER_CHECKSUM_BYTES;
    uint8_t sum[LEDGER_CHECKSUM_BYTES];
    crypto_generichash(sum, sizeof sum, buf, body, NULL, 0);
    if (sodium_memcmp(sum, buf + body, sizeof sum) != 0)
        goto fail;

    uint64_t version = get_le(buf + 8, 4);
    if (memcmp(buf, LEDGER_MAGIC, 8) != 0 || version < LEDGER_VERSION ||
        version > LEDGER_VERSION_EXP || get_le(buf + 12, 4) != 0)
        goto fail;
    int v2 = version >= LEDGER_VERSION_DELTA;
    size_t header = v2 ? LEDGER_HEADER2_BYTES : LEDGER_HEADER_BYTES;
    if (body < header)
        goto fail;
    double budget = double_of(get_le(buf + 16, 8));
    double cap = double_of(get_le(buf + 24, 8));
    if (ledger_check_limits(budget, cap) != LDPB_OK)
        goto fail;
    uint64_t budget_units = ledger_budget_units(budget);
    uint64_t spent = get_le(buf + 32, 8);
    double delta_budget = 0.0, delta_cap = 0.0;
    uint64_t delta_spent = 0;
    if (v2) {
        delta_budget = double_of(get_le(buf + 40, 8));
        delta_cap = double_of(get_le(buf + 48, 8));
        delta_spent = get_le(buf + 56, 8);
        /* format 2 is written only with a delta budget: one without is not what emit writes */
        if (ledger_check_delta_limits(delta_budget, delta_cap) != LDPB_OK ||
            (version == LEDGER_VERSION_DELTA && !(delta_budget > 0.0)))
            goto fail;
    }
    uint64_t delta_budget_units = ledger_delta_budget_units(delta_budget);
    uint64_t count = get_le(buf + header - 4, 4);
    if (spent > budget_units || delta_spent > delta_budget_units || count > LDPB_LEDGER_ENTRIES_MAX)
        goto fail;
    size_t off = header;
    if (version >= LEDGER_VERSION_EXP && (err = parse_exps(buf, body, &off, count, st)) != 0)
        goto fail;
    err = LDPB_ECORRUPT;
    /* Each entry takes at least entry_min bytes: a count the body cannot hold is refused before
     * anything is allocated for it. */
    size_t avail = body - off;
    if (count > avail / entry_min((unsigned)version))
        goto fail;

    st->budget = budget;
    st->cap = cap;
    st->budget_units = budget_units;
    st->delta_budget = delta_budget;
    st->delta_cap = delta_cap;
    st->delta_budget_units = delta_budget_units;
    if (count > 0) {
        err = ledger_state_reserve(st, (size_t)count);
        if (err)
            goto fail;
        err = LDPB_ECORRUPT;
    }

    uint64_t charged = 0, delta_charged = 0;
    size_t exps_used = 0;
    used = st->n_exps ? calloc(st->n_exps, 1) : NULL;
    if (st->n_exps && !used) {
        err = LDPB_ENOMEM;
        goto fail;
    }
    for (uint64_t i = 0; i < count; i++) {
        if (!parse_record(buf, body, &off, (unsigned)version, &r))
            goto fail;
        if (!record_valid(&r, cap, delta_cap) || ledger_state_find(st, r.id, r.id_len) ||
            r.exp > st->n_exps)
            goto fail;
        /* Every name of the table is used: emit writes no other. */
        if (r.exp > 0 && !used[r.exp - 1]) {
            used[r.exp - 1] = 1;
            exps_used++;
        }
        /* charged <= spent <= budget_units < 2^53 holds after each step, so no overflow; the
         * delta sums stay below 2^63 the same way. */
        charged += ledger_charge_units(r.epsilon);
        if (r.delta > 0.0)
            delta_charged += ledger_delta_units(r.delta);
        if (charged > spent || delta_charged > delta_spent)
            goto fail;
        ledger_state_append(st, &r);
        r.vec = NULL; /* the state owns it */
    }
    if (off != body || exps_used != st->n_exps)
        goto fail; /* bytes between the last entry and the checksum, or an unused name */
    free(used);
    st->spent_units = spent;
    st->delta_spent_units = delta_spent;
    return LDPB_OK;

fail:
    free(used);
    record_wipe(&r);
    ledger_state_fini(st);
    st->budget = st->cap = 0.0;
    st->budget_units = 0;
    st->delta_budget = st->delta_cap = 0.0;
    st->delta_budget_units = 0;
    return err;
}
