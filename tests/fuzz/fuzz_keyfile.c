/* Fuzz target for key files (common/src/keyfile.c, docs/protocol.md section 3.3): the text
 * through ldpb_keyfile_parse as a secret and as a public key, and the same bytes as a file (mode
 * 0600) through ldpb_keyfile_load_secret and ldpb_keyfile_load_public, which read them from disk.
 *
 * A parse either refuses (LDPB_EINVAL for the other kind's key file, LDPB_ECORRUPT otherwise,
 * with a one-line reason) or accepts exactly the format: the tag, a space, 64 hex digits and at
 * most one final newline, so the key formats back to the input up to the case of the hex and
 * that newline. Loading a file answers as parsing its bytes does (a secret key of zeros aside,
 * which the loader refuses as LDPB_ECRYPTO). */
#define _XOPEN_SOURCE 700 /* mkstemp */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz_target.h"
#include "ldpb/keyfile.h"
#include "ldpb/wire.h"

static char path[64];

static void reason_ok(const char *detail)
{
    if (!memchr(detail, 0, LDPB_DETAIL_BYTES) || !detail[0] || strchr(detail, '\n'))
        abort();
}

static ldpb_err parse_and_check(const uint8_t *data, size_t size, ldpb_keyfile_kind kind,
                                uint8_t key[LDPB_KEY_BYTES])
{
    char detail[LDPB_DETAIL_BYTES];
    detail[0] = '\0';
    ldpb_err err = ldpb_keyfile_parse((const char *)data, size, kind, key, detail);
    if (err != LDPB_OK) {
        if (err != LDPB_EINVAL && err != LDPB_ECORRUPT)
            abort();
        reason_ok(detail);
        return err;
    }
    char text[LDPB_KEYFILE_BYTES + 1];
    if (ldpb_keyfile_format(text, sizeof text, kind, key) != LDPB_OK)
        abort();
    if (size != LDPB_KEYFILE_BYTES && size != LDPB_KEYFILE_BYTES - 1)
        abort();
    for (size_t i = 0; i < size; i++)
        if (tolower(data[i]) != (unsigned char)text[i])
            abort();
    return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (sodium_init() < 0)
        abort();
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/ldpb-fuzz-keyfile-%ld-XXXXXX", (long)getpid());
        int fd = mkstemp(path); /* mode 0600, as a secret key file must be */
        if (fd < 0)
            abort();
        close(fd);
    }
    uint8_t sk[LDPB_KEY_BYTES], pk[LDPB_KEY_BYTES], lpk[LDPB_KEY_BYTES];
    ldpb_err es = parse_and_check(data, size, LDPB_KEYFILE_SECRET, sk);
    ldpb_err ep = parse_and_check(data, size, LDPB_KEYFILE_PUBLIC, pk);
    if (es == LDPB_OK && ep == LDPB_OK)
        abort(); /* one text cannot be both kinds */

    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    char detail[LDPB_DETAIL_BYTES];
    ldpb_keypair kp;
    ldpb_err ls = ldpb_keyfile_load_secret(path, &kp, detail);
    if (ls == LDPB_OK) {
        if (es != LDPB_OK || memcmp(kp.sk, sk, LDPB_KEY_BYTES) != 0)
            abort();
        ldpb_keypair_wipe(&kp);
    } else {
        /* the file is read up to a few bytes past a key file's length, so a long input may be
         * refused for its length where the whole text was refused for something earlier */
        int zero = es == LDPB_OK && sodium_is_zero(sk, sizeof sk);
        if (es == LDPB_OK ? !(zero && ls == LDPB_ECRYPTO)
                          : (ls != LDPB_EINVAL && ls != LDPB_ECORRUPT))
            abort();
        reason_ok(detail);
    }
    ldpb_err lp = ldpb_keyfile_load_public(path, lpk, detail);
    if ((lp == LDPB_OK) != (ep == LDPB_OK) ||
        (lp == LDPB_OK && memcmp(lpk, pk, LDPB_KEY_BYTES) != 0))
        abort();
    if (lp != LDPB_OK)
        reason_ok(detail);
    sodium_memzero(sk, sizeof sk);
    return 0;
}
