/* Key files: the one-line text format, a strict parser, a loader that refuses exposed secret keys,
 * and an atomic writer (ldpb/durable.h: a fresh file beside the target, fsync, link or rename,
 * fsync of the directory) so a crash never leaves a half-written key behind. Every buffer that held
 * a secret key's text or bytes is wiped before it goes out of scope. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/detail.h"
#include "ldpb/durable.h"
#include "ldpb/keyfile.h"

#define TAG_BYTES (sizeof LDPB_KEYFILE_SECRET_TAG - 1)
#define HEX_BYTES (2 * LDPB_KEY_BYTES)

_Static_assert(sizeof LDPB_KEYFILE_SECRET_TAG == sizeof LDPB_KEYFILE_PUBLIC_TAG, "tag lengths");
_Static_assert(TAG_BYTES + 1 + HEX_BYTES + 1 == LDPB_KEYFILE_BYTES, "key file length");

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

static const char *tag_of(ldpb_keyfile_kind kind)
{
    return kind == LDPB_KEYFILE_SECRET ? LDPB_KEYFILE_SECRET_TAG : LDPB_KEYFILE_PUBLIC_TAG;
}

static int kind_valid(ldpb_keyfile_kind kind)
{
    return kind == LDPB_KEYFILE_SECRET || kind == LDPB_KEYFILE_PUBLIC;
}

ldpb_err ldpb_keyfile_format(char *buf, size_t cap, ldpb_keyfile_kind kind,
                             const uint8_t key[LDPB_KEY_BYTES])
{
    if (!buf || !key || !kind_valid(kind))
        return LDPB_EINVAL;
    if (cap < LDPB_KEYFILE_BYTES + 1)
        return LDPB_ERANGE;
    memcpy(buf, tag_of(kind), TAG_BYTES);
    buf[TAG_BYTES] = ' ';
    sodium_bin2hex(buf + TAG_BYTES + 1, HEX_BYTES + 1, key, LDPB_KEY_BYTES);
    buf[LDPB_KEYFILE_BYTES - 1] = '\n';
    buf[LDPB_KEYFILE_BYTES] = '\0';
    return LDPB_OK;
}

ldpb_err ldpb_keyfile_parse(const char *text, size_t len, ldpb_keyfile_kind kind,
                            uint8_t key[LDPB_KEY_BYTES], char *detail)
{
    if (!text || !key || !kind_valid(kind))
        return LDPB_EINVAL;
    ldpb_keyfile_kind other =
        kind == LDPB_KEYFILE_SECRET ? LDPB_KEYFILE_PUBLIC : LDPB_KEYFILE_SECRET;
    if (len > TAG_BYTES && memcmp(text, tag_of(other), TAG_BYTES) == 0 && text[TAG_BYTES] == ' ') {
        say(detail, "this is a %s key file; a %s key file (%s) is expected",
            other == LDPB_KEYFILE_SECRET ? "secret" : "public",
            kind == LDPB_KEYFILE_SECRET ? "secret" : "public", tag_of(kind));
        return LDPB_EINVAL;
    }
    if (len <= TAG_BYTES || memcmp(text, tag_of(kind), TAG_BYTES) != 0 || text[TAG_BYTES] != ' ') {
        say(detail, "does not start with \"%s \"", tag_of(kind));
        return LDPB_ECORRUPT;
    }
    const char *hex = text + TAG_BYTES + 1;
    size_t rest = len - TAG_BYTES - 1;
    if (rest > 0 && hex[rest - 1] == '\n')
        rest--; /* the one optional final newline */
    size_t digits = 0;
    while (digits < rest && ((hex[digits] >= '0' && hex[digits] <= '9') ||
                             (hex[digits] >= 'a' && hex[digits] <= 'f') ||
                             (hex[digits] >= 'A' && hex[digits] <= 'F')))
        digits++;
    if (digits < rest && digits < HEX_BYTES) {
        say(detail, "character %zu of the key is not a hex digit", digits + 1);
        return LDPB_ECORRUPT;
    }
    if (digits != HEX_BYTES) {
        say(detail, "the key has %zu hex digits, expected %u", digits, (unsigned)HEX_BYTES);
        return LDPB_ECORRUPT;
    }
    if (rest != HEX_BYTES) {
        say(detail, "unexpected bytes after the key (only one final newline is allowed)");
        return LDPB_ECORRUPT;
    }
    size_t bin_len = 0;
    if (sodium_hex2bin(key, LDPB_KEY_BYTES, hex, HEX_BYTES, NULL, &bin_len, NULL) != 0 ||
        bin_len != LDPB_KEY_BYTES) {
        sodium_memzero(key, LDPB_KEY_BYTES);
        say(detail, "the key is not valid hex");
        return LDPB_ECORRUPT;
    }
    return LDPB_OK;
}

/* Reads a key file's bytes (a little more than a key file holds, to notice trailing data). */
static ldpb_err read_text(const char *path, int secret, char *buf, size_t cap, size_t *len,
                          char *detail)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        say(detail, "cannot open: %s", strerror(errno));
        return LDPB_EIO;
    }
    ldpb_err err = LDPB_OK;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        say(detail, "cannot stat: %s", strerror(errno));
        err = LDPB_EIO;
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        say(detail, "not a regular file");
        err = LDPB_EIO;
        goto done;
    }
    if (secret && (st.st_mode & 077)) {
        say(detail,
            "mode %04o gives group or others access to this secret key; chmod 600 it (and "
            "consider it exposed)",
            (unsigned)(st.st_mode & 07777));
        err = LDPB_ECRYPTO;
        goto done;
    }
    while (*len < cap) {
        ssize_t r = read(fd, buf + *len, cap - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            say(detail, "cannot read: %s", strerror(errno));
            err = LDPB_EIO;
            goto done;
        }
        if (r == 0)
            break;
        *len += (size_t)r;
    }
done:
    close(fd);
    return err;
}

ldpb_err ldpb_keyfile_load_secret(const char *path, ldpb_keypair *out, char *detail)
{
    if (!path || !out)
        return LDPB_EINVAL;
    char text[LDPB_KEYFILE_BYTES + 8];
    uint8_t sk[LDPB_KEY_BYTES];
    size_t len;
    ldpb_err err = read_text(path, 1, text, sizeof text, &len, detail);
    if (!err)
        err = ldpb_keyfile_parse(text, len, LDPB_KEYFILE_SECRET, sk, detail);
    /* Parses fine but is everybody's key (an empty or placeholder file filled with zeros). */
    if (!err && sodium_is_zero(sk, sizeof sk)) {
        say(detail, "the key is all zeros, which anyone can guess; make one with `ldpb keygen`");
        err = LDPB_ECRYPTO;
    }
    if (!err)
        err = ldpb_keypair_from_secret(out, sk);
    sodium_memzero(text, sizeof text);
    sodium_memzero(sk, sizeof sk);
    return err;
}

ldpb_err ldpb_keyfile_load_public(const char *path, uint8_t pk[LDPB_KEY_BYTES], char *detail)
{
    if (!path || !pk)
        return LDPB_EINVAL;
    char text[LDPB_KEYFILE_BYTES + 8];
    size_t len;
    ldpb_err err = read_text(path, 0, text, sizeof text, &len, detail);
    if (!err)
        err = ldpb_keyfile_parse(text, len, LDPB_KEYFILE_PUBLIC, pk, detail);
    return err;
}

ldpb_err ldpb_keyfile_write(const char *path, ldpb_keyfile_kind kind,
                            const uint8_t key[LDPB_KEY_BYTES], int overwrite, char *detail)
{
    if (!path || !*path || !key || !kind_valid(kind))
        return LDPB_EINVAL;
    char text[LDPB_KEYFILE_BYTES + 1];
    ldpb_err err = ldpb_keyfile_format(text, sizeof text, kind, key);
    if (err)
        return err;
    /* The key file mode is set on the new file whatever the umask; without overwrite it is
     * linked to the name, which fails if the name exists: no window in which another writer's
     * file is lost. */
    ldpb_durable_opts o = {kind == LDPB_KEYFILE_SECRET ? 0600u : 0644u, !overwrite, NULL, NULL};
    ldpb_durable_buf content = {text, LDPB_KEYFILE_BYTES};
    err = ldpb_durable_write(path, &o, ldpb_durable_fill_buf, &content, NULL, detail,
                             LDPB_DETAIL_BYTES);
    sodium_memzero(text, sizeof text);
    return err;
}
