/* The client's on-disk queue of reports waiting for the aggregator (docs/client.md, "The report
 * queue"): privatized values only, written whole and atomically by the ledger's durable write
 * (ldpb/durable.h: a fresh path.tmp.RANDOM, fsync, rename over path, fsync the directory), so a
 * crash leaves either the old queue or the new one, never a mix; one handle at a time, under an
 * flock on path.lock. Internal to libldpb-client. */
#ifndef LDPB_REPORT_QUEUE_H
#define LDPB_REPORT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/ledger.h"
#include "ldpb/wire.h"

typedef struct rq_entry {
    uint8_t id[LDPB_ASSIGNMENT_ID_MAX];
    uint8_t id_len;
    uint8_t mechanism; /* ldpb_client_mech */
    uint8_t is_bit;    /* the value travels as Report.bit, else as Report.real */
    double epsilon;
    double value; /* as sent: privatized (or the unit-scale reward in RAW mode) */
    /* The experiment of the assignment; "" for "default" (sent as no experiment at all). */
    char experiment[LDPB_EXPERIMENT_NAME_MAX + 1];
} rq_entry;

typedef struct rq {
    char *path;  /* NULL: in memory only */
    int lock_fd; /* holds the flock on path.lock; -1 in memory */
    rq_entry *e;
    size_t n, cap;
} rq;

/* Opens the queue at `path`, loading it if the file exists; NULL: in memory only (rq_save does
 * nothing). Takes an exclusive lock on path.lock for the handle's life and removes the temporary
 * files a crash left. Errors: LDPB_ENOMEM, LDPB_ESTATE (another handle holds the queue),
 * LDPB_EINVAL (an empty path; path, or path.lock, is not a regular file: a link, a FIFO, a
 * device, a directory),
 * LDPB_EIO (cannot read), LDPB_ECORRUPT (as rq_parse). */
ldpb_err rq_open(rq **out, const char *path, size_t max);
/* Appends the entries of a queue file's bytes to `q` (for rq_open and the fuzzer). LDPB_ECORRUPT:
 * not a queue file, a bad checksum, more than `max` entries, or an entry the wire would refuse
 * (unknown mechanism, epsilon unsuited to it, a bit not 0 or 1, a non-finite or out-of-range
 * value, a bad id length or padding, an id twice, an experiment name that is not one or is
 * "default" spelled out); LDPB_ENOMEM. Reads both formats (report_queue.c). On an error `q` may
 * hold some of the entries: the caller discards it. */
ldpb_err rq_parse(rq *q, const uint8_t *b, size_t len, size_t max);
/* The file's bytes for `q`, malloc'd into *out (the caller wipes and frees). LDPB_ENOMEM. */
ldpb_err rq_encode(const rq *q, uint8_t **out, size_t *out_len);
/* Writes the queue durably. LDPB_EIO on failure (the file then holds the previous queue). */
ldpb_err rq_save(rq *q);
/* 1 if the queue holds an entry for this id. */
int rq_has(const rq *q, const uint8_t *id, size_t id_len);
/* Appends `e` in memory (rq_save makes it durable). LDPB_ENOMEM. */
ldpb_err rq_push(rq *q, const rq_entry *e);
/* The Report that carries `e` (views into `e`, valid while it is): the value as a bit or a
 * real as the entry says, and the experiment unless it is "default". */
void rq_report_of(Ldpb__V1__Report *rep, const rq_entry *e);
/* Wipes and frees. Accepts NULL. */
void rq_close(rq *q);

#endif
