/* ldpb keygen: writes the aggregator's keypair and a client identity keypair as key files
 * (docs/protocol.md section 3.3, docs/cli.md). Existing key files are never overwritten without
 * --force; the key files themselves are written by the common library (atomically, secret files
 * with mode 0600), and the secret keys are wiped from memory as soon as they are on disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "commands.h"
#include "ldpb/keyfile.h"
#include "ldpb/seal.h"

#define PROG "ldpb keygen"

#define EXIT_RUNTIME 1 /* a key file exists, I/O error, no randomness */
#define EXIT_USAGE   2 /* bad arguments */

#define ECHO_MAX 60

static const char *const names[4] = {"aggregator.key", "aggregator.pub", "client.key",
                                     "client.pub"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb keygen --out DIR [--force]\n"
            "\n"
            "Generates two X25519 keypairs and writes them as key files in DIR (created with\n"
            "mode 0700 if it does not exist):\n"
            "  DIR/aggregator.key  the aggregator's secret key (mode 0600): keep it on the server\n"
            "  DIR/aggregator.pub  its public key: every client pins it\n"
            "  DIR/client.key      a client identity's secret key (mode 0600)\n"
            "  DIR/client.pub      its public key, for the aggregator's allow-list\n"
            "and prints each file with its public key. A file holds one line,\n"
            "'ldpb-secret-key-v1 HEX' or 'ldpb-public-key-v1 HEX' (64 hex digits).\n"
            "\n"
            "options:\n"
            "  -o, --out DIR  the directory for the four key files (required)\n"
            "  -f, --force    replace existing key files; clients that pinned the old\n"
            "                 aggregator key stop working\n"
            "  -h, --help     print this help and exit\n"
            "\n"
            "Without --force nothing is written if any of the four files exists.\n"
            "Exit status: 0 success, 1 runtime error (a key file exists, I/O), 2 bad arguments.\n");
}

struct args {
    const char *out;
    int force;
};

/* Returns -1 to go on, else an exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "%s: cannot write to standard output\n", PROG);
                return EXIT_RUNTIME;
            }
            return 0;
        }
        if (strcmp(arg, "-f") == 0 || strcmp(arg, "--force") == 0) {
            if (a->force)
                return tool_usage_error(PROG, "option --force given twice", NULL);
            a->force = 1;
            continue;
        }
        if (strcmp(arg, "-o") == 0 || strcmp(arg, "--out") == 0) {
            if (i + 1 >= argc)
                return tool_usage_error(PROG, "missing value for option", arg);
            value = argv[++i];
        } else if (strncmp(arg, "--out=", 6) == 0) {
            value = arg + 6;
        } else if (strncmp(arg, "-o", 2) == 0 && arg[2]) {
            value = arg + 2;
        } else if (arg[0] == '-') {
            return tool_usage_error(PROG, "unknown option", arg);
        } else {
            return tool_usage_error(PROG, "unexpected argument", arg);
        }
        if (a->out)
            return tool_usage_error(PROG, "option --out given twice", NULL);
        if (!*value)
            return tool_usage_error(PROG, "--out needs a directory", NULL);
        a->out = value;
    }
    if (!a->out)
        return tool_usage_error(PROG, "missing --out DIR", NULL);
    return -1;
}

/* Makes `dir` if it does not exist (not its parents). 0 or an exit status. */
static int ensure_dir(const char *dir)
{
    struct stat st;
    char e[ECHO_MAX + 4];
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        fprintf(stderr, "%s: %s exists and is not a directory\n", PROG,
                tool_echo(e, sizeof e, dir));
        return EXIT_RUNTIME;
    }
    if (errno != ENOENT || mkdir(dir, 0700) != 0) {
        fprintf(stderr, "%s: cannot create directory %s: %s\n", PROG, tool_echo(e, sizeof e, dir),
                strerror(errno));
        return EXIT_RUNTIME;
    }
    return 0;
}

int cmd_keygen(int argc, char **argv)
{
    struct args a;
    char *paths[4] = {NULL, NULL, NULL, NULL};
    ldpb_keypair kp[2];
    char detail[LDPB_DETAIL_BYTES];
    char e[ECHO_MAX + 4];
    memset(kp, 0, sizeof kp);

    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = ensure_dir(a.out);
    if (rc)
        return rc;
    size_t dlen = strlen(a.out);
    int slash = dlen > 0 && a.out[dlen - 1] == '/';
    for (int i = 0; i < 4; i++) {
        size_t n = dlen + 1 + strlen(names[i]) + 1;
        paths[i] = malloc(n);
        if (!paths[i]) {
            fprintf(stderr, "%s: out of memory\n", PROG);
            rc = EXIT_RUNTIME;
            goto done;
        }
        snprintf(paths[i], n, "%s%s%s", a.out, slash ? "" : "/", names[i]);
    }
    if (!a.force) {
        for (int i = 0; i < 4; i++) {
            struct stat st;
            if (lstat(paths[i], &st) == 0) {
                fprintf(stderr, "%s: %s already exists; nothing written (--force replaces it)\n",
                        PROG, tool_echo(e, sizeof e, paths[i]));
                rc = EXIT_RUNTIME;
                goto done;
            }
        }
    }
    if (ldpb_keypair_generate(&kp[0]) != LDPB_OK || ldpb_keypair_generate(&kp[1]) != LDPB_OK) {
        fprintf(stderr, "%s: cannot generate keys: %s\n", PROG, ldpb_strerror(LDPB_ECRYPTO));
        rc = EXIT_RUNTIME;
        goto done;
    }
    for (int i = 0; i < 4; i++) {
        const ldpb_keypair *k = &kp[i / 2];
        int secret = i % 2 == 0;
        ldpb_err err =
            ldpb_keyfile_write(paths[i], secret ? LDPB_KEYFILE_SECRET : LDPB_KEYFILE_PUBLIC,
                               secret ? k->sk : k->pk, a.force, detail);
        if (err) {
            fprintf(stderr, "%s: %s: %s\n", PROG, tool_echo(e, sizeof e, paths[i]),
                    err == LDPB_ESTATE || err == LDPB_EIO ? detail : ldpb_strerror(err));
            rc = EXIT_RUNTIME;
            goto done;
        }
    }
    for (int i = 0; i < 4; i++) {
        if (i % 2 == 0) {
            printf("%s  secret key, mode 0600\n", paths[i]);
        } else {
            char hex[2 * LDPB_KEY_BYTES + 1];
            sodium_bin2hex(hex, sizeof hex, kp[i / 2].pk, LDPB_KEY_BYTES);
            printf("%s  %s %s\n", paths[i], LDPB_KEYFILE_PUBLIC_TAG, hex);
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output\n", PROG);
        rc = EXIT_RUNTIME;
    }
done:
    ldpb_keypair_wipe(&kp[0]);
    ldpb_keypair_wipe(&kp[1]);
    for (int i = 0; i < 4; i++)
        free(paths[i]);
    return rc;
}
