/* Little-endian, versioned encoding of policy state for save/restore (policy.h).
 *
 * A writer counts every byte it is asked to put, and stores bytes only while they fit, so one
 * encoding pass both answers the size query and fills the caller's buffer. A reader never reads
 * past its input: an overrun sets a sticky "bad" flag and yields zeros, so a decoder can read a
 * whole record and check once at the end (restored state is untrusted input).
 *
 * Every saved state starts with the same header: magic "LPST", the policy's format version, its
 * name, k and the whole agg_policy_config, so bytes of another policy, another format version or
 * another configuration (in k or a parameter the policy reads, agg_policy_reads) are refused as
 * LDPB_ECORRUPT before any field is interpreted. */
#ifndef LDPB_AGG_STATEFMT_H
#define LDPB_AGG_STATEFMT_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "policy.h"

typedef struct agg_wbuf {
    uint8_t *buf; /* may be NULL: size query */
    size_t cap;
    size_t len; /* bytes put so far, stored or not */
} agg_wbuf;

void agg_wbuf_init(agg_wbuf *w, uint8_t *buf, size_t cap);
void agg_put_u8(agg_wbuf *w, uint8_t v);
void agg_put_u32(agg_wbuf *w, uint32_t v);
void agg_put_u64(agg_wbuf *w, uint64_t v);
/* The IEEE-754 bit pattern, so a restored double is bit-identical (NaN payloads included). */
void agg_put_f64(agg_wbuf *w, double v);
/* Sets *len to the encoded size; LDPB_ERANGE if there was no buffer or it was too small. */
ldpb_err agg_wbuf_finish(const agg_wbuf *w, size_t *len);

typedef struct agg_rbuf {
    const uint8_t *p;
    size_t len;
    size_t pos;
    int bad; /* set by any read past the end; sticky */
} agg_rbuf;

void agg_rbuf_init(agg_rbuf *r, const uint8_t *buf, size_t len);
uint8_t agg_get_u8(agg_rbuf *r);
uint32_t agg_get_u32(agg_rbuf *r);
uint64_t agg_get_u64(agg_rbuf *r);
double agg_get_f64(agg_rbuf *r);
/* 1 when every read was in bounds and the input is consumed exactly. */
int agg_rbuf_done(const agg_rbuf *r);

/* The common header: magic, `version`, p->ops->name, p->cfg.k and every field of p->cfg. */
void agg_state_put_header(agg_wbuf *w, const agg_policy *p, uint8_t version);
/* Reads and checks the header against `p`: same name, version and k, and bit for bit the same
 * value of every parameter p reads (agg_policy_reads); parameters it ignores may differ.
 * LDPB_ECORRUPT on any such difference or truncation. */
ldpb_err agg_state_get_header(agg_rbuf *r, const agg_policy *p, uint8_t version);

#endif
