/* Byte-level writer and reader behind every policy's save/restore (see statefmt.h). */
#include <assert.h>
#include <string.h>

#include "statefmt.h"

static const uint8_t state_magic[4] = {'L', 'P', 'S', 'T'};

void agg_wbuf_init(agg_wbuf *w, uint8_t *buf, size_t cap)
{
    w->buf = buf;
    w->cap = buf ? cap : 0;
    w->len = 0;
}

static void put_bytes(agg_wbuf *w, const uint8_t *src, size_t n)
{
    if (w->buf && w->len <= w->cap && n <= w->cap - w->len)
        memcpy(w->buf + w->len, src, n);
    w->len += n;
}

void agg_put_u8(agg_wbuf *w, uint8_t v)
{
    put_bytes(w, &v, 1);
}

void agg_put_u32(agg_wbuf *w, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, sizeof b);
}

void agg_put_u64(agg_wbuf *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, sizeof b);
}

void agg_put_f64(agg_wbuf *w, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    agg_put_u64(w, bits);
}

ldpb_err agg_wbuf_finish(const agg_wbuf *w, size_t *len)
{
    *len = w->len;
    if (!w->buf || w->len > w->cap)
        return LDPB_ERANGE;
    return LDPB_OK;
}

void agg_rbuf_init(agg_rbuf *r, const uint8_t *buf, size_t len)
{
    r->p = buf;
    r->len = buf ? len : 0;
    r->pos = 0;
    r->bad = 0;
}

/* Returns a pointer to the next n bytes, or NULL (and marks the reader bad) if they are not all
 * there. */
static const uint8_t *take(agg_rbuf *r, size_t n)
{
    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

uint8_t agg_get_u8(agg_rbuf *r)
{
    const uint8_t *q = take(r, 1);
    return q ? q[0] : 0;
}

uint32_t agg_get_u32(agg_rbuf *r)
{
    const uint8_t *q = take(r, 4);
    if (!q)
        return 0;
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | q[i];
    return v;
}

uint64_t agg_get_u64(agg_rbuf *r)
{
    const uint8_t *q = take(r, 8);
    if (!q)
        return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | q[i];
    return v;
}

double agg_get_f64(agg_rbuf *r)
{
    uint64_t bits = agg_get_u64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

int agg_rbuf_done(const agg_rbuf *r)
{
    return !r->bad && r->pos == r->len;
}

/* k, then every header parameter of agg_policy_params() in its order: the fields are named and
 * typed once, in policy.c, and this byte layout is what earlier states hold. */
static void put_cfg(agg_wbuf *w, const agg_policy_config *c)
{
    agg_put_u32(w, c->k);
    size_t n;
    const agg_param_info *pi = agg_policy_params(&n);
    for (size_t i = 0; i < n; i++) {
        if (!pi[i].in_header)
            continue;
        const char *f = (const char *)c + pi[i].offset;
        switch (pi[i].type) {
        case AGG_PARAM_TYPE_U64: {
            uint64_t v;
            memcpy(&v, f, sizeof v);
            agg_put_u64(w, v);
            break;
        }
        case AGG_PARAM_TYPE_F64: {
            double v;
            memcpy(&v, f, sizeof v);
            agg_put_f64(w, v);
            break;
        }
        case AGG_PARAM_TYPE_MECH: {
            ldpb_mech_kind v;
            memcpy(&v, f, sizeof v);
            agg_put_u32(w, (uint32_t)v);
            break;
        }
        }
    }
}

/* The inverse of put_cfg. */
static void get_cfg(agg_rbuf *r, agg_policy_config *c)
{
    memset(c, 0, sizeof *c);
    c->k = agg_get_u32(r);
    size_t n;
    const agg_param_info *pi = agg_policy_params(&n);
    for (size_t i = 0; i < n; i++) {
        if (!pi[i].in_header)
            continue;
        char *f = (char *)c + pi[i].offset;
        switch (pi[i].type) {
        case AGG_PARAM_TYPE_U64: {
            uint64_t v = agg_get_u64(r);
            memcpy(f, &v, sizeof v);
            break;
        }
        case AGG_PARAM_TYPE_F64: {
            double v = agg_get_f64(r);
            memcpy(f, &v, sizeof v);
            break;
        }
        case AGG_PARAM_TYPE_MECH: {
            ldpb_mech_kind v = (ldpb_mech_kind)agg_get_u32(r);
            memcpy(f, &v, sizeof v);
            break;
        }
        }
    }
}

void agg_state_put_header(agg_wbuf *w, const agg_policy *p, uint8_t version)
{
    put_bytes(w, state_magic, sizeof state_magic);
    agg_put_u8(w, version);
    size_t n = strlen(p->ops->name);
    assert(n <= UINT8_MAX);
    agg_put_u8(w, (uint8_t)n);
    put_bytes(w, (const uint8_t *)p->ops->name, n);
    put_cfg(w, &p->cfg);
}

ldpb_err agg_state_get_header(agg_rbuf *r, const agg_policy *p, uint8_t version)
{
    const uint8_t *magic = take(r, sizeof state_magic);
    if (!magic || memcmp(magic, state_magic, sizeof state_magic) != 0)
        return LDPB_ECORRUPT;
    if (agg_get_u8(r) != version)
        return LDPB_ECORRUPT;
    size_t n = strlen(p->ops->name);
    if (agg_get_u8(r) != n)
        return LDPB_ECORRUPT;
    const uint8_t *name = take(r, n);
    if (!name || memcmp(name, p->ops->name, n) != 0)
        return LDPB_ECORRUPT;
    /* k and the parameters the policy reads must be bit-identical (no float tolerance); the
     * others cannot change what the state means, so a state saved under another value of them
     * restores (a quadratic kappa kept with a linear mechanism, an epsilon without privacy). */
    agg_policy_config theirs;
    get_cfg(r, &theirs);
    if (r->bad || theirs.k != p->cfg.k)
        return LDPB_ECORRUPT;
    unsigned reads = agg_policy_reads(p->ops, &p->cfg);
    size_t np;
    const agg_param_info *pi = agg_policy_params(&np);
    for (size_t i = 0; i < np; i++)
        if (pi[i].in_header && (reads & pi[i].bit) &&
            !agg_policy_param_same(&pi[i], &theirs, &p->cfg))
            return LDPB_ECORRUPT;
    return LDPB_OK;
}
