/* Key files: format and parse round trip; every malformation is LDPB_ECORRUPT and a key file of
 * the other kind LDPB_EINVAL; write/load round trip with the modes; secret files readable or
 * writable by group or others are refused (LDPB_ECRYPTO); nothing is overwritten without the
 * flag. Given the path of the ldpb binary as its argument, it instead tests `ldpb keygen`:
 * files, modes, output, --force semantics and usage errors. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ldpb/keyfile.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ldpb-keyfile-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A path in the test directory; the result stays valid for the next 63 calls. */
static const char *path_in(const char *name)
{
    static char p[64][256];
    static int next;
    char *s = p[next++ % 64];
    snprintf(s, sizeof p[0], "%s/%s", dir, name);
    return s;
}

static void write_text(const char *path, const char *text, size_t n, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static uint8_t key_a[LDPB_KEY_BYTES], key_b[LDPB_KEY_BYTES];

static void fill_keys(void)
{
    for (unsigned i = 0; i < LDPB_KEY_BYTES; i++) {
        key_a[i] = (uint8_t)(0xa0 + i);
        key_b[i] = (uint8_t)(0x0f * i);
    }
}

/* ---- the text format ---------------------------------------------------------------------- */

static void format_and_parse(void **state)
{
    (void)state;
    fill_keys();
    char text[LDPB_KEYFILE_BYTES + 1];
    uint8_t out[LDPB_KEY_BYTES];
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_SECRET, key_a), LDPB_OK);
    assert_string_equal(text, "ldpb-secret-key-v1 "
                              "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf\n");
    assert_int_equal(ldpb_keyfile_parse(text, strlen(text), LDPB_KEYFILE_SECRET, out, NULL),
                     LDPB_OK);
    assert_memory_equal(out, key_a, LDPB_KEY_BYTES);
    /* the final newline is optional and hex may be uppercase */
    assert_int_equal(ldpb_keyfile_parse(text, strlen(text) - 1, LDPB_KEYFILE_SECRET, out, NULL),
                     LDPB_OK);
    for (char *c = text + 19; *c != '\n'; c++)
        if (*c >= 'a' && *c <= 'f')
            *c = (char)(*c - 'a' + 'A');
    assert_int_equal(ldpb_keyfile_parse(text, strlen(text), LDPB_KEYFILE_SECRET, out, NULL),
                     LDPB_OK);
    assert_memory_equal(out, key_a, LDPB_KEY_BYTES);

    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_PUBLIC, key_b), LDPB_OK);
    assert_int_equal(strlen(text), LDPB_KEYFILE_BYTES);
    assert_true(strncmp(text, "ldpb-public-key-v1 000f1e2d", 27) == 0);
    assert_int_equal(ldpb_keyfile_parse(text, strlen(text), LDPB_KEYFILE_PUBLIC, out, NULL),
                     LDPB_OK);
    assert_memory_equal(out, key_b, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_keyfile_format(text, LDPB_KEYFILE_BYTES, LDPB_KEYFILE_PUBLIC, key_b),
                     LDPB_ERANGE);
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, (ldpb_keyfile_kind)3, key_b),
                     LDPB_EINVAL);
}

static void malformed_texts(void **state)
{
    (void)state;
    static const char hex64[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    char good[LDPB_KEYFILE_BYTES + 1];
    snprintf(good, sizeof good, "ldpb-secret-key-v1 %s\n", hex64);
    static const struct {
        const char *what, *text;
    } corrupt[] = {
        {"empty", ""},
        {"tag only", "ldpb-secret-key-v1"},
        {"other version", "ldpb-secret-key-v2 000102030405060708090a0b0c0d0e0f101112131415161718"
                          "191a1b1c1d1e1f\n"},
        {"no space", "ldpb-secret-key-v1\t000102030405060708090a0b0c0d0e0f10111213141516171819"
                     "1a1b1c1d1e1f\n"},
        {"leading blank", " ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f1011121314151617"
                          "18191a1b1c1d1e1f\n"},
        {"short", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c"
                  "1d1e\n"},
        {"odd length", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f10111213141516171819"
                       "1a1b1c1d1e1\n"},
        {"long", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
                 "1e1f20\n"},
        {"not hex", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b"
                    "1c1d1e1g\n"},
        {"CRLF", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d"
                 "1e1f\r\n"},
        {"two newlines", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f10111213141516171819"
                         "1a1b1c1d1e1f\n\n"},
        {"trailing space", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f1011121314151617"
                           "18191a1b1c1d1e1f \n"},
        {"second line", "ldpb-secret-key-v1 000102030405060708090a0b0c0d0e0f10111213141516171819"
                        "1a1b1c1d1e1f\nx"},
        {"garbage", "-----BEGIN PRIVATE KEY-----\n"},
    };
    uint8_t out[LDPB_KEY_BYTES];
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_keyfile_parse(good, strlen(good), LDPB_KEYFILE_SECRET, out, NULL),
                     LDPB_OK);
    for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) {
        detail[0] = '\0';
        ldpb_err err = ldpb_keyfile_parse(corrupt[i].text, strlen(corrupt[i].text),
                                          LDPB_KEYFILE_SECRET, out, detail);
        if (err != LDPB_ECORRUPT)
            fail_msg("%s: %s, expected LDPB_ECORRUPT", corrupt[i].what, ldpb_errname(err));
        assert_true(detail[0] != '\0');
    }
    /* an embedded NUL is not hex either */
    char nul[LDPB_KEYFILE_BYTES + 1];
    memcpy(nul, good, sizeof nul);
    nul[40] = '\0';
    assert_int_equal(ldpb_keyfile_parse(nul, LDPB_KEYFILE_BYTES, LDPB_KEYFILE_SECRET, out, NULL),
                     LDPB_ECORRUPT);
    /* a well-formed file of the other kind is a caller mistake, not corruption */
    assert_int_equal(ldpb_keyfile_parse(good, strlen(good), LDPB_KEYFILE_PUBLIC, out, detail),
                     LDPB_EINVAL);
    assert_non_null(strstr(detail, "secret key file"));
    memcpy(good, "ldpb-public", 11);
    assert_int_equal(ldpb_keyfile_parse(good, strlen(good), LDPB_KEYFILE_SECRET, out, detail),
                     LDPB_EINVAL);
    assert_non_null(strstr(detail, "public key file"));
    assert_int_equal(ldpb_keyfile_parse(NULL, 0, LDPB_KEYFILE_SECRET, out, NULL), LDPB_EINVAL);
}

/* ---- files --------------------------------------------------------------------------------- */

static void write_and_load(void **state)
{
    (void)state;
    fill_keys();
    ldpb_keypair kp, want;
    uint8_t pk[LDPB_KEY_BYTES];
    const char *sec = path_in("server.key"), *pub = path_in("server.pub");
    assert_int_equal(ldpb_keypair_from_secret(&want, key_a), LDPB_OK);
    assert_int_equal(ldpb_keyfile_write(sec, LDPB_KEYFILE_SECRET, key_a, 0, NULL), LDPB_OK);
    assert_int_equal(ldpb_keyfile_write(pub, LDPB_KEYFILE_PUBLIC, want.pk, 0, NULL), LDPB_OK);
    assert_int_equal(mode_of(sec), 0600);
    assert_int_equal(mode_of(pub), 0644);
    assert_int_equal(ldpb_keyfile_load_secret(sec, &kp, NULL), LDPB_OK);
    assert_memory_equal(kp.sk, key_a, LDPB_KEY_BYTES);
    assert_memory_equal(kp.pk, want.pk, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_keyfile_load_public(pub, pk, NULL), LDPB_OK);
    assert_memory_equal(pk, want.pk, LDPB_KEY_BYTES);
    /* no temporary file is left behind */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 2", dir);
    assert_int_equal(system(cmd), 0);

    /* the wrong kind of file */
    char detail[LDPB_DETAIL_BYTES];
    assert_int_equal(ldpb_keyfile_load_secret(pub, &kp, detail), LDPB_ECRYPTO); /* 0644 first */
    assert_int_equal(chmod(pub, 0600), 0);
    assert_int_equal(ldpb_keyfile_load_secret(pub, &kp, detail), LDPB_EINVAL);
    assert_int_equal(ldpb_keyfile_load_public(sec, pk, detail), LDPB_EINVAL);

    /* existing files are not overwritten without the flag, and are replaced with it */
    assert_int_equal(ldpb_keyfile_write(sec, LDPB_KEYFILE_SECRET, key_b, 0, detail), LDPB_ESTATE);
    assert_non_null(strstr(detail, "exists"));
    assert_int_equal(ldpb_keyfile_load_secret(sec, &kp, NULL), LDPB_OK);
    assert_memory_equal(kp.sk, key_a, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_keyfile_write(sec, LDPB_KEYFILE_SECRET, key_b, 1, NULL), LDPB_OK);
    assert_int_equal(ldpb_keyfile_load_secret(sec, &kp, NULL), LDPB_OK);
    assert_memory_equal(kp.sk, key_b, LDPB_KEY_BYTES);
    assert_int_equal(mode_of(sec), 0600);
    assert_int_equal(system(cmd), 0);

    /* I/O errors */
    assert_int_equal(ldpb_keyfile_load_public(path_in("missing.pub"), pk, detail), LDPB_EIO);
    assert_non_null(strstr(detail, "No such file"));
    assert_int_equal(ldpb_keyfile_load_public(dir, pk, detail), LDPB_EIO);
    assert_non_null(strstr(detail, "not a regular file"));
    assert_int_equal(
        ldpb_keyfile_write(path_in("no/such/dir.key"), LDPB_KEYFILE_SECRET, key_a, 0, detail),
        LDPB_EIO);
    assert_int_equal(ldpb_keyfile_write("", LDPB_KEYFILE_SECRET, key_a, 0, NULL), LDPB_EINVAL);
    ldpb_keypair_wipe(&kp);
    ldpb_keypair_wipe(&want);
    unlink(sec);
    unlink(pub);
}

static void exposed_secret_refused(void **state)
{
    (void)state;
    fill_keys();
    char text[LDPB_KEYFILE_BYTES + 1];
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_SECRET, key_a), LDPB_OK);
    const char *p = path_in("exposed.key");
    static const mode_t bad[] = {0640, 0604, 0644, 0620, 0602, 0660, 0666, 0610, 0601};
    ldpb_keypair kp;
    char detail[LDPB_DETAIL_BYTES];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(p, text, LDPB_KEYFILE_BYTES, bad[i]);
        assert_int_equal(ldpb_keyfile_load_secret(p, &kp, detail), LDPB_ECRYPTO);
        assert_non_null(strstr(detail, "chmod 600"));
    }
    static const mode_t fine[] = {0600, 0400};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        write_text(p, text, LDPB_KEYFILE_BYTES, fine[i]);
        assert_int_equal(ldpb_keyfile_load_secret(p, &kp, NULL), LDPB_OK);
        assert_memory_equal(kp.sk, key_a, LDPB_KEY_BYTES);
    }
    /* corrupt content behind good permissions; a huge file is corrupt, not read whole */
    write_text(p, text, LDPB_KEYFILE_BYTES - 10, 0600);
    assert_int_equal(ldpb_keyfile_load_secret(p, &kp, NULL), LDPB_ECORRUPT);
    char big[4096];
    memset(big, 'a', sizeof big);
    memcpy(big, text, LDPB_KEYFILE_BYTES);
    write_text(p, big, sizeof big, 0600);
    assert_int_equal(ldpb_keyfile_load_secret(p, &kp, detail), LDPB_ECORRUPT);
    /* a public key file may be world-readable */
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_PUBLIC, key_b), LDPB_OK);
    write_text(p, text, LDPB_KEYFILE_BYTES, 0644);
    uint8_t pk[LDPB_KEY_BYTES];
    assert_int_equal(ldpb_keyfile_load_public(p, pk, NULL), LDPB_OK);
    ldpb_keypair_wipe(&kp);
    unlink(p);
}

/* A well-formed key of 32 zero bytes is everybody's key: refused, and nothing is loaded. */
static void all_zero_secret_refused(void **state)
{
    (void)state;
    uint8_t zero[LDPB_KEY_BYTES] = {0};
    char text[LDPB_KEYFILE_BYTES + 1];
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_SECRET, zero), LDPB_OK);
    const char *p = path_in("zero.key");
    write_text(p, text, LDPB_KEYFILE_BYTES, 0600);
    ldpb_keypair kp;
    memset(&kp, 0x5a, sizeof kp);
    char detail[LDPB_DETAIL_BYTES] = "";
    assert_int_equal(ldpb_keyfile_load_secret(p, &kp, detail), LDPB_ECRYPTO);
    assert_non_null(strstr(detail, "all zeros"));
    uint8_t untouched[sizeof kp];
    memset(untouched, 0x5a, sizeof untouched);
    assert_memory_equal(&kp, untouched, sizeof kp);
    /* one nonzero byte is a key like any other */
    zero[31] = 1;
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_SECRET, zero), LDPB_OK);
    write_text(p, text, LDPB_KEYFILE_BYTES, 0600);
    assert_int_equal(ldpb_keyfile_load_secret(p, &kp, NULL), LDPB_OK);
    ldpb_keypair_wipe(&kp);
    unlink(p);
}

/* ---- ldpb keygen through the binary ------------------------------------------------------- */

static const char *ldpb_path;

/* Runs ldpb with `args` (NULL-terminated); stdout and stderr go to files in `dir`. */
static int run_ldpb(const char *const *args)
{
    const char *argv[16];
    int n = 0;
    argv[n++] = ldpb_path;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int out = open(path_in("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(path_in("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        execv(ldpb_path, (char *const *)argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void keygen_writes_four_files(void **state)
{
    (void)state;
    char keys[256];
    snprintf(keys, sizeof keys, "%s", path_in("keys"));
    const char *args[] = {"keygen", "--out", keys, NULL};
    assert_int_equal(run_ldpb(args), 0);
    assert_int_equal(mode_of(keys), 0700);
    char p[4][300];
    static const char *names[] = {"aggregator.key", "aggregator.pub", "client.key", "client.pub"};
    for (int i = 0; i < 4; i++)
        snprintf(p[i], sizeof p[i], "%s/%s", keys, names[i]);
    assert_int_equal(mode_of(p[0]), 0600);
    assert_int_equal(mode_of(p[2]), 0600);
    assert_int_equal(mode_of(p[1]), 0644);
    assert_int_equal(mode_of(p[3]), 0644);
    ldpb_keypair agg, cli;
    uint8_t agg_pub[LDPB_KEY_BYTES], cli_pub[LDPB_KEY_BYTES];
    assert_int_equal(ldpb_keyfile_load_secret(p[0], &agg, NULL), LDPB_OK);
    assert_int_equal(ldpb_keyfile_load_public(p[1], agg_pub, NULL), LDPB_OK);
    assert_int_equal(ldpb_keyfile_load_secret(p[2], &cli, NULL), LDPB_OK);
    assert_int_equal(ldpb_keyfile_load_public(p[3], cli_pub, NULL), LDPB_OK);
    assert_memory_equal(agg.pk, agg_pub, LDPB_KEY_BYTES); /* each .pub matches its .key */
    assert_memory_equal(cli.pk, cli_pub, LDPB_KEY_BYTES);
    assert_memory_not_equal(agg.sk, cli.sk, LDPB_KEY_BYTES);
    /* the output names the four files and prints the public keys */
    char *out = slurp(path_in("stdout"));
    assert_int_equal(count_lines(out), 4);
    char text[LDPB_KEYFILE_BYTES + 1];
    assert_int_equal(ldpb_keyfile_format(text, sizeof text, LDPB_KEYFILE_PUBLIC, agg_pub), LDPB_OK);
    text[LDPB_KEYFILE_BYTES - 1] = '\0';
    assert_non_null(strstr(out, text));
    assert_null(strstr(out, "ldpb-secret-key")); /* never a secret on stdout */
    assert_string_equal(slurp(path_in("stderr")), "");

    /* again without --force: refused, one line, nothing changed */
    assert_int_equal(run_ldpb(args), 1);
    char *err = slurp(path_in("stderr"));
    assert_int_equal(count_lines(err), 1);
    assert_true(strncmp(err, "ldpb keygen: ", 13) == 0);
    assert_non_null(strstr(err, "already exists"));
    assert_non_null(strstr(err, "--force"));
    ldpb_keypair again;
    assert_int_equal(ldpb_keyfile_load_secret(p[0], &again, NULL), LDPB_OK);
    assert_memory_equal(again.sk, agg.sk, LDPB_KEY_BYTES);
    /* a single existing file is enough to refuse: nothing is written */
    assert_int_equal(unlink(p[0]), 0);
    assert_int_equal(unlink(p[1]), 0);
    assert_int_equal(unlink(p[2]), 0);
    assert_int_equal(run_ldpb(args), 1);
    struct stat st;
    assert_int_equal(stat(p[0], &st), -1);

    /* with --force: new keys everywhere, same modes */
    const char *force[] = {"keygen", "-f", "-o", keys, NULL};
    assert_int_equal(run_ldpb(force), 0);
    assert_int_equal(ldpb_keyfile_load_secret(p[0], &again, NULL), LDPB_OK);
    assert_memory_not_equal(again.sk, agg.sk, LDPB_KEY_BYTES);
    assert_int_equal(ldpb_keyfile_load_public(p[3], cli_pub, NULL), LDPB_OK);
    assert_memory_not_equal(cli_pub, cli.pk, LDPB_KEY_BYTES);
    assert_int_equal(mode_of(p[0]), 0600);
    assert_int_equal(mode_of(p[3]), 0644);
    const char *force_eq[] = {"keygen", "--force", "--out=", NULL};
    assert_int_equal(run_ldpb(force_eq), 2);
    ldpb_keypair_wipe(&agg);
    ldpb_keypair_wipe(&cli);
    ldpb_keypair_wipe(&again);
}

static void keygen_usage(void **state)
{
    (void)state;
    const char *help[] = {"keygen", "--help", NULL};
    assert_int_equal(run_ldpb(help), 0);
    assert_true(strncmp(slurp(path_in("stdout")), "usage: ldpb keygen --out DIR", 28) == 0);

    static const char *const bad[][5] = {
        {"keygen", NULL},
        {"keygen", "--out", NULL},
        {"keygen", "--frobnicate", NULL},
        {"keygen", "--out", "a", "extra", NULL},
        {"keygen", "-o", "a", "-o", NULL},
        {"keygen", "--force", "--force", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_ldpb((const char *const *)bad[i]);
        char *err = slurp(path_in("stderr"));
        if (rc != 2 || count_lines(err) != 1 || strncmp(err, "ldpb keygen: ", 13) != 0)
            fail_msg("case %zu: exit %d, stderr '%s'", i, rc, err);
        assert_string_equal(slurp(path_in("stdout")), "");
    }
    /* --out naming a file, or a directory whose parent is missing: runtime errors */
    const char *file = path_in("plain-file");
    write_text(file, "x", 1, 0600);
    const char *on_file[] = {"keygen", "--out", file, NULL};
    assert_int_equal(run_ldpb(on_file), 1);
    assert_non_null(strstr(slurp(path_in("stderr")), "not a directory"));
    const char *deep[] = {"keygen", "--out", path_in("no/such/dir"), NULL};
    assert_int_equal(run_ldpb(deep), 1);
    assert_non_null(strstr(slurp(path_in("stderr")), "cannot create directory"));
    unlink(file);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        ldpb_path = argv[1];
        const struct CMUnitTest cli[] = {
            cmocka_unit_test(keygen_writes_four_files),
            cmocka_unit_test(keygen_usage),
        };
        return cmocka_run_group_tests(cli, make_dir, remove_dir);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_and_parse),        cmocka_unit_test(malformed_texts),
        cmocka_unit_test(write_and_load),          cmocka_unit_test(exposed_secret_refused),
        cmocka_unit_test(all_zero_secret_refused),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
