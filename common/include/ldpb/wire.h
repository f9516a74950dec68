/* The wire format (docs/protocol.md): frames (one nanomsg message each) and the protobuf Envelope
 * carried as the plaintext of a sealed frame. Everything received is bounded before it is
 * decoded: the frame size, then a scan of the protobuf bytes that checks every length, count and
 * nesting limit, then protobuf-c's unpack through an allocator with a byte budget, then the
 * semantic checks (finite numbers, known enum values, id lengths, UTF-8). Sealing and opening
 * frames is in seal.h.
 *
 * The Envelope types are protobuf-c's, generated from proto/ldpb.proto at build time.
 *
 * Thread safety: every function here is reentrant; they share no state. */
#ifndef LDPB_WIRE_H
#define LDPB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb.pb-c.h"

#include "ldpb/detail_bytes.h" /* the size of the `detail` buffers below */
#include "ldpb/err.h"
#include "ldpb/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Versions: the frame layout (byte 4 of every frame) and the Envelope schema (its field 1). */
#define LDPB_FRAME_VERSION    1u
#define LDPB_PROTOCOL_VERSION 1u

/* Frame layout, little-endian (docs/protocol.md section 2):
 *   "LDPB" | frame_version u8 | kind u8 | body
 *   SEALED:      client_pk[32] | nonce[24] | crypto_box_easy_afternm ciphertext (16-byte MAC first)
 *   PLAIN_ERROR: code u32 | reason_len u16 | reason (UTF-8, exactly reason_len bytes) */
#define LDPB_FRAME_MAX          65536u /* whole frame, in bytes */
#define LDPB_FRAME_HEADER_BYTES 6u
#define LDPB_FRAME_PK_BYTES     32u
#define LDPB_FRAME_NONCE_BYTES  24u
#define LDPB_FRAME_MAC_BYTES    16u
#define LDPB_FRAME_SEALED_OVERHEAD                                                                 \
    (LDPB_FRAME_HEADER_BYTES + LDPB_FRAME_PK_BYTES + LDPB_FRAME_NONCE_BYTES + LDPB_FRAME_MAC_BYTES)
#define LDPB_FRAME_ERROR_MIN (LDPB_FRAME_HEADER_BYTES + 6u)
/* The largest Envelope encoding that fits a sealed frame: 65458 bytes. */
#define LDPB_PLAINTEXT_MAX (LDPB_FRAME_MAX - LDPB_FRAME_SEALED_OVERHEAD)

/* Limits on a decoded Envelope. Receivers refuse more; encoders refuse to produce more. */
#define LDPB_WIRE_CONTEXT_MAX    256u /* AssignRequest.context values */
#define LDPB_WIRE_REPORT_CTX_MAX 64u  /* Report.context values (one arm's features) */
/* Report.stats and LocalModel.stats values: the packed (d+1) x (d+1) triangle at the largest d
 * of the local contextual mode (LDPB_CTXSTAT_VALUES_MAX of ldpb/ctxstat.h, d = 32). */
#define LDPB_WIRE_STATS_MAX      561u
#define LDPB_WIRE_ARMS_MAX       65536u     /* Status.arms (the frame size binds first: ~10^4) */
#define LDPB_WIRE_STRING_MAX     1024u      /* bytes of any string (Status, Error, PLAIN_ERROR) */
#define LDPB_WIRE_ID_MAX         64u        /* bytes of an assignment id (at least 1) */
#define LDPB_WIRE_UNKNOWN_MAX    64u        /* fields of unknown number, in the whole Envelope */
#define LDPB_WIRE_DEPTH_MAX      8u         /* message nesting (the schema needs 3) */
#define LDPB_WIRE_DECODE_MEM_MAX (2u << 20) /* bytes one decode may allocate */
/* Reports in one ReportBatch (and results in one BatchAck). A report without an experiment takes
 * at most 88 bytes on the wire (a 64-byte id and a double value), a result at most 73, so 512 of
 * either fit LDPB_PLAINTEXT_MAX with room to spare (45056 bytes). A report naming an experiment
 * takes up to 66 bytes more (154 in all): a batch of such reports may not fit 512 to a frame, and
 * the sender makes its batches smaller (the encoder refuses an oversized one with LDPB_ERANGE). */
#define LDPB_WIRE_BATCH_MAX 512u
/* Experiment names (AssignRequest, Report, StatusRequest, Status, ExperimentCommand,
 * ExperimentInfo): 1 to LDPB_WIRE_EXPERIMENT_MAX bytes of [a-z0-9._-]. An absent field means the
 * experiment "default". */
#define LDPB_WIRE_EXPERIMENT_MAX 64u
/* Bytes of ExperimentCommand.config, the settings of a CREATE (UTF-8, "key = value" lines). */
#define LDPB_WIRE_CONFIG_MAX (LDPB_WIRE_STRING_MAX * 4u)
/* Experiments in one ExperimentReply: a LIST longer than this (or than fits a frame) comes in
 * pages (ExperimentCommand.after, ExperimentReply.more). */
#define LDPB_WIRE_EXPERIMENTS_MAX 1024u
/* Envelope fields numbered LDPB_WIRE_BODY_FIRST and above are message kinds (the body oneof);
 * this revision knows 10 to 16 and 21 to 26 (LDPB_WIRE_BODY_LAST). Fields 3 to 9 are for
 * optional Envelope fields. */
#define LDPB_WIRE_BODY_FIRST 10u
#define LDPB_WIRE_BODY_LAST  26u

typedef enum ldpb_frame_kind {
    LDPB_FRAME_SEALED = 1,      /* an encrypted, authenticated Envelope */
    LDPB_FRAME_PLAIN_ERROR = 2, /* server -> client only, when the server cannot seal */
} ldpb_frame_kind;

/* A parsed frame: views into the caller's buffer, valid while it is. */
typedef struct ldpb_frame {
    ldpb_frame_kind kind;
    /* LDPB_FRAME_SEALED */
    const uint8_t *client_pk;  /* LDPB_FRAME_PK_BYTES: the client's key, in both directions */
    const uint8_t *nonce;      /* LDPB_FRAME_NONCE_BYTES */
    const uint8_t *ciphertext; /* MAC then encrypted Envelope */
    size_t ciphertext_len;     /* >= LDPB_FRAME_MAC_BYTES */
    /* LDPB_FRAME_PLAIN_ERROR */
    uint32_t error_code; /* as sent: map with ldpb_wire_err_from_code */
    const char *reason;  /* valid UTF-8 without NUL, not NUL-terminated */
    size_t reason_len;   /* <= LDPB_WIRE_STRING_MAX */
} ldpb_frame;

/* Parses the frame layout of `buf` (`len` bytes) without decrypting anything. Errors:
 * LDPB_EINVAL for NULL arguments; LDPB_EPROTO for a frame longer than LDPB_FRAME_MAX, a bad
 * magic, an unknown kind, a truncated frame, trailing bytes after a PLAIN_ERROR reason, or a
 * reason that is too long, has a NUL or is not UTF-8; LDPB_EVERSION for another frame version.
 * `detail` (NULL or LDPB_DETAIL_BYTES) receives one line saying what was wrong. */
LDPB_API ldpb_err ldpb_frame_parse(const uint8_t *buf, size_t len, ldpb_frame *out, char *detail);

/* Writes a PLAIN_ERROR frame with `code` and `reason` (NUL-terminated UTF-8; cut at a character
 * boundary to LDPB_WIRE_STRING_MAX bytes) into `buf`. The frame takes
 * LDPB_FRAME_ERROR_MIN + min(strlen(reason), LDPB_WIRE_STRING_MAX) bytes. Errors: LDPB_EINVAL
 * (NULL, code 0, reason not UTF-8 or with control characters other than tab), LDPB_ERANGE (`cap`
 * too small; *len is set to the size needed). */
LDPB_API ldpb_err ldpb_frame_build_plain_error(uint8_t *buf, size_t cap, size_t *len, uint32_t code,
                                               const char *reason);

/* Checks `env` as a sender must before encoding: version LDPB_PROTOCOL_VERSION, a body, every
 * required pointer set, finite doubles, known mechanisms, the mechanism/value pairing of a
 * Report, ids of 1..LDPB_WIRE_ID_MAX bytes, strings of valid UTF-8 within LDPB_WIRE_STRING_MAX,
 * and the count limits (docs/protocol.md section 4 lists every rule). Errors: LDPB_EINVAL for a
 * malformed message, LDPB_ERANGE for a well-formed value outside its bounds. */
LDPB_API ldpb_err ldpb_envelope_check(const Ldpb__V1__Envelope *env, char *detail);

/* Checks `env` (as ldpb_envelope_check) and encodes it into `buf`. Errors: those of
 * ldpb_envelope_check; LDPB_ERANGE if the encoding exceeds LDPB_PLAINTEXT_MAX or `cap` (then
 * *len is set to the size needed). A buffer of LDPB_PLAINTEXT_MAX bytes always suffices. */
LDPB_API ldpb_err ldpb_envelope_encode(const Ldpb__V1__Envelope *env, uint8_t *buf, size_t cap,
                                       size_t *len, char *detail);

/* Decodes an Envelope from `buf` (`len` bytes, the plaintext of a sealed frame). First reads the
 * version (ldpb_envelope_peek): another version is LDPB_EVERSION with both versions in `detail`.
 * Then scans the bytes against the limits, unpacks with a budget of LDPB_WIRE_DECODE_MEM_MAX
 * bytes and checks the result as ldpb_envelope_check does. A body this revision does not know (a
 * length-delimited field numbered LDPB_WIRE_BODY_FIRST or above, and no known body) is
 * LDPB_ENOTSUP. Any other violation, including protobuf-c's unpack failure and a missing
 * body, is LDPB_EPROTO; LDPB_ENOMEM if the allocator failed; LDPB_EINVAL for NULL.
 * On success *out is owned by the caller: free it with ldpb_envelope_free(). */
LDPB_API ldpb_err ldpb_envelope_decode(const uint8_t *buf, size_t len, Ldpb__V1__Envelope **out,
                                       char *detail);

/* Frees an Envelope returned by ldpb_envelope_decode. Accepts NULL. */
LDPB_API void ldpb_envelope_free(Ldpb__V1__Envelope *env);

/* Reads only fields 1 (protocol_version) and 2 (request_id) of an encoded Envelope, skipping
 * everything else, so a receiver can answer a message it cannot decode (another version, a
 * missing version, damaged bytes) with an Error that echoes its request id. The request id is
 * read independently of the version: whatever the result, *has_request_id is 1 and *request_id
 * set when field 2 occurred exactly once, as a varint, and nothing before it was malformed
 * (request_id and has_request_id may be NULL). Errors, with `detail` saying which: LDPB_EINVAL
 * (NULL version), LDPB_EPROTO (bytes that are not protobuf, field 1 or 2 repeated or of the wrong
 * type, no field 1). An unsupported version is not an error here: ldpb_wire_check_version. */
LDPB_API ldpb_err ldpb_envelope_peek(const uint8_t *buf, size_t len, uint32_t *version,
                                     uint64_t *request_id, int *has_request_id, char *detail);

/* LDPB_OK if `version` is LDPB_PROTOCOL_VERSION, else LDPB_EVERSION with a `detail` naming both
 * versions ("protocol version 2 is not supported; this peer speaks version 1"). */
LDPB_API ldpb_err ldpb_wire_check_version(uint32_t version, char *detail);

/* Maps the code of an Error or PLAIN_ERROR to an ldpb_err: a known nonzero code is itself; 0,
 * and codes this build does not know (a newer peer's), are LDPB_EPROTO. */
LDPB_API ldpb_err ldpb_wire_err_from_code(uint32_t code);

/* 1 if `s` (`len` bytes) is an experiment name: 1 to LDPB_WIRE_EXPERIMENT_MAX bytes, each one of
 * a-z, 0-9, '.', '_', '-'; else 0. */
LDPB_API int ldpb_wire_experiment_valid(const char *s, size_t len);

/* 1 if `s` (`len` bytes) is valid UTF-8 (no overlong forms, surrogates or code points above
 * U+10FFFF) without NUL bytes, else 0. */
LDPB_API int ldpb_wire_utf8_valid(const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
