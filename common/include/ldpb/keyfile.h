/* Key files (docs/protocol.md section 3.3): one line of text,
 *   "ldpb-secret-key-v1 " or "ldpb-public-key-v1 ", 64 hex digits (the 32-byte X25519 key), "\n".
 * Writers emit lowercase hex and the newline; the loader accepts either case of hex and a missing
 * final newline, and nothing else: no other whitespace, no comments, no trailing bytes.
 * Secret key files are written with mode 0600 and refused when group or others have any access.
 * Files are replaced atomically (temporary file, fsync, link or rename, fsync of the directory).
 *
 * Thread safety: reentrant. */
#ifndef LDPB_KEYFILE_H
#define LDPB_KEYFILE_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/seal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LDPB_KEYFILE_SECRET_TAG "ldpb-secret-key-v1"
#define LDPB_KEYFILE_PUBLIC_TAG "ldpb-public-key-v1"
/* Bytes of a key file as written: tag, space, 64 hex digits, newline. */
#define LDPB_KEYFILE_BYTES 84u

typedef enum ldpb_keyfile_kind {
    LDPB_KEYFILE_SECRET = 1,
    LDPB_KEYFILE_PUBLIC = 2,
} ldpb_keyfile_kind;

/* Writes the text of a key file (LDPB_KEYFILE_BYTES plus a NUL) into `buf`. Errors: LDPB_EINVAL
 * (NULL, unknown kind), LDPB_ERANGE (cap < LDPB_KEYFILE_BYTES + 1). The caller wipes the text of
 * a secret key. */
LDPB_API ldpb_err ldpb_keyfile_format(char *buf, size_t cap, ldpb_keyfile_kind kind,
                                      const uint8_t key[LDPB_KEY_BYTES]);

/* Parses the text of a key file of `kind` into `key`. Errors: LDPB_EINVAL (NULL, unknown kind, or
 * a well-formed key file of the other kind: a public key where a secret one is expected, or the
 * reverse); LDPB_ECORRUPT (anything else malformed: the tag line, the length, a non-hex digit,
 * trailing bytes). `detail` (NULL or LDPB_DETAIL_BYTES) says what was wrong. */
LDPB_API ldpb_err ldpb_keyfile_parse(const char *text, size_t len, ldpb_keyfile_kind kind,
                                     uint8_t key[LDPB_KEY_BYTES], char *detail);

/* Loads a secret key file into `out` (the public half is computed from it). Errors: LDPB_EIO
 * (cannot open or read, or not a regular file), LDPB_ECRYPTO (the file's mode gives group or
 * others any access: the key may be exposed; chmod 600 it; or the key is all zeros), and those
 * of ldpb_keyfile_parse.
 * Every copy of the secret but `out` is wiped; wipe `out` with ldpb_keypair_wipe. */
LDPB_API ldpb_err ldpb_keyfile_load_secret(const char *path, ldpb_keypair *out, char *detail);

/* Loads a public key file. Errors: LDPB_EIO and those of ldpb_keyfile_parse. */
LDPB_API ldpb_err ldpb_keyfile_load_public(const char *path, uint8_t pk[LDPB_KEY_BYTES],
                                           char *detail);

/* Writes a key file of `kind` at `path`, mode 0600 for a secret key and 0644 for a public one.
 * Without `overwrite` an existing file is never touched (LDPB_ESTATE); with it, it is replaced
 * atomically. Errors: LDPB_EINVAL, LDPB_ESTATE, LDPB_EIO (with the system's reason in `detail`),
 * LDPB_ENOMEM. */
LDPB_API ldpb_err ldpb_keyfile_write(const char *path, ldpb_keyfile_kind kind,
                                     const uint8_t key[LDPB_KEY_BYTES], int overwrite,
                                     char *detail);

#ifdef __cplusplus
}
#endif

#endif
