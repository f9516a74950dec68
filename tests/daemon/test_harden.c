/* Hardening of the aggregator's process and files: the state's files are private whatever the
 * umask and the directory's mode; the secret keys (the server's, the token key, the key cache's)
 * sit in locked memory; the process cannot dump core. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "harden.h"
#include "ldpb/keyfile.h"
#include "ldpb/seal.h"
#include "server.h"
#include "store.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ldpb-test-harden-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0777), 0);
}

static void remove_dir(void)
{
    static const char *const names[] = {"lock", AGG_STORE_DB_NAME, AGG_STORE_DB_NAME "-wal",
                                        AGG_STORE_DB_NAME "-shm", "link"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static unsigned mode_of(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    if (lstat(p, &st) != 0)
        return 01000; /* missing: never equal to a mode */
    return (unsigned)(st.st_mode & 07777);
}

static const agg_store_meta meta = {
    .policy = "ldp-ts-b",
    .mode = "local",
    .params = {.k = 3, .mechanism = LDPB_MECH_LINEAR, .epsilon = 1.0, .kappa = 0.5},
    .reads = AGG_PARAM_EPSILON | AGG_PARAM_MECHANISM,
};

/* With umask 0 in a 0777 directory, SQLite alone would create all three files 0666. */
static void test_state_files_private(void **state)
{
    (void)state;
    make_dir();
    mode_t old = umask(0);
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    /* the -wal and -shm exist while the database is open (the last close removes them) */
    assert_int_equal(mode_of(AGG_STORE_DB_NAME), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-wal"), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-shm"), 0600);
    assert_int_equal(mode_of("lock"), 0600);
    agg_store_close(s);
    umask(old);
    remove_dir();
}

/* A state left readable by others (an older version, a careless copy) is made private again. */
static void test_existing_state_tightened(void **state)
{
    (void)state;
    make_dir();
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    agg_store_close(s);
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, AGG_STORE_DB_NAME);
    assert_int_equal(chmod(p, 0644), 0);
    snprintf(p, sizeof p, "%s/%s-wal", dir, AGG_STORE_DB_NAME);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fchmod(fd, 0644), 0);
    close(fd);
    assert_int_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME), 0600);
    assert_int_equal(mode_of(AGG_STORE_DB_NAME "-wal"), 0600);
    agg_store_close(s);
    remove_dir();
}

/* A database path that is a symbolic link is refused, and its target is left alone. */
static void test_db_symlink_refused(void **state)
{
    (void)state;
    make_dir();
    char target[128], p[128];
    snprintf(target, sizeof target, "%s/link", dir);
    int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof p, "%s/%s", dir, AGG_STORE_DB_NAME);
    assert_int_equal(symlink(target, p), 0);
    agg_store *s = NULL;
    char err[AGG_STORE_ERRMAX];
    assert_int_not_equal(agg_store_open(&s, dir, &meta, err), LDPB_OK);
    assert_null(s);
    assert_non_null(strstr(err, "symbolic link"));
    assert_int_equal(mode_of("link"), 0644);
    struct stat st;
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 0);
    remove_dir();
}

/* Locked memory of this process in kB (/proc/self/status VmLck). */
static long vm_locked_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb >= 0);
    return kb;
}

static long page_kb(void)
{
    return sysconf(_SC_PAGESIZE) / 1024;
}

/* Memory of this process excluded from core dumps (MADV_DONTDUMP: "dd" in a mapping's VmFlags
 * in /proc/self/smaps), in kB. */
static long no_dump_kb(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    long size = 0, total = 0;
    while (fgets(line, sizeof line, f)) {
        long kb;
        if (sscanf(line, "Size: %ld kB", &kb) == 1)
            size = kb;
        else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " dd"))
            total += size;
    }
    fclose(f);
    return total;
}

/* AddressSanitizer turns mlock into a no-op, so under it nothing is ever locked; the exclusion
 * from core dumps (done by the same libsodium call) is checked in every build. */
#if defined(__SANITIZE_ADDRESS__)
#define MLOCK_WORKS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MLOCK_WORKS 0
#endif
#endif
#ifndef MLOCK_WORKS
#define MLOCK_WORKS 1
#endif

/* Asserts that at least `nodump_kb` more are excluded from dumps and, where mlock works,
 * `locked_kb` more are locked than in `nodump0`/`locked0`. */
static void assert_more_protected(long nodump0, long nodump_kb, long locked0, long locked_kb)
{
    assert_true(no_dump_kb() - nodump0 >= nodump_kb);
    if (MLOCK_WORKS)
        assert_true(vm_locked_kb() - locked0 >= locked_kb);
}

/* A small cache (a page of keys) stays within the smallest RLIMIT_MEMLOCK Linux gives an
 * unprivileged process (64 kB), so the locking is visible wherever the test runs. */
static void test_keycache_keys_locked(void **state)
{
    (void)state;
    uint8_t sk[LDPB_KEY_BYTES];
    memset(sk, 0x42, sizeof sk);
    ldpb_keypair server;
    assert_int_equal(ldpb_keypair_from_secret(&server, sk), LDPB_OK);
    ldpb_keycache_opts o;
    ldpb_keycache_opts_init(&o);
    o.max_entries = 4;
    long before = vm_locked_kb(), nodump = no_dump_kb();
    ldpb_keycache *kc = NULL;
    assert_int_equal(ldpb_keycache_new(&kc, &server, &o), LDPB_OK);
    /* the handle (with its copy of the secret key) and the keys: a page each at least */
    assert_more_protected(nodump, 2 * page_kb(), before, 2 * page_kb());
    ldpb_keycache_free(kc);
    assert_int_equal(vm_locked_kb(), before);
    assert_int_equal(no_dump_kb(), nodump);
    ldpb_keypair_wipe(&server);
}

/* The server's own struct (the secret key pair and the token key) is locked too, and the key
 * cache it makes. Its generators keep their state out of dumps as well (a page each), so the
 * key cache is made large enough to tell: 4096 keys of 32 bytes. Locked: at least the server
 * struct and the cache's handle (the keys may exceed a 64 kB RLIMIT_MEMLOCK). */
static void test_server_keys_locked(void **state)
{
    (void)state;
    make_dir();
    char key[128], sdir[128], detail[LDPB_DETAIL_BYTES], err[AGG_SERVER_ERRMAX];
    snprintf(key, sizeof key, "%s/link", dir); /* a name remove_dir knows */
    snprintf(sdir, sizeof sdir, "%s/state", dir);
    uint8_t sk[LDPB_KEY_BYTES];
    memset(sk, 0x51, sizeof sk);
    assert_int_equal(ldpb_keyfile_write(key, LDPB_KEYFILE_SECRET, sk, 0, detail), LDPB_OK);
    agg_config cfg;
    agg_config_init(&cfg);
    const char *kv[][2] = {{"listen", "ipc:///nonexistent/unused"},
                           {"state_dir", sdir},
                           {"key", key},
                           {"arms", "3"},
                           {"keycache_entries", "4096"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        assert_int_equal(agg_config_set(&cfg, kv[i][0], kv[i][1], 1, err), LDPB_OK);
    long before = vm_locked_kb(), nodump = no_dump_kb();
    agg_server *srv = NULL;
    assert_int_equal(agg_server_new(&srv, &cfg, NULL, NULL, err), LDPB_OK);
    assert_more_protected(nodump, 4096 * 32 / 1024 + 2 * page_kb(), before, 2 * page_kb());
    agg_server_free(srv);
    assert_int_equal(vm_locked_kb(), before);
    agg_config_fini(&cfg);
    static const char *const names[] = {"lock", AGG_STORE_DB_NAME, AGG_STORE_DB_NAME "-wal",
                                        AGG_STORE_DB_NAME "-shm"};
    char p[160];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", sdir, names[i]);
        unlink(p);
    }
    rmdir(sdir);
    remove_dir();
}

/* Last: it changes this process for good. */
static void test_process_cannot_dump(void **state)
{
    (void)state;
    struct rlimit big = {RLIM_INFINITY, RLIM_INFINITY}, now;
    if (setrlimit(RLIMIT_CORE, &big) != 0) { /* without CAP_SYS_RESOURCE: the soft limit only */
        assert_int_equal(getrlimit(RLIMIT_CORE, &big), 0);
        big.rlim_cur = big.rlim_max;
        assert_int_equal(setrlimit(RLIMIT_CORE, &big), 0);
    }
    char err[AGG_HARDEN_ERRMAX];
    assert_int_equal(agg_process_harden(err), LDPB_OK);
    assert_int_equal(getrlimit(RLIMIT_CORE, &now), 0);
    assert_int_equal(now.rlim_cur, 0);
    assert_int_equal(now.rlim_max, 0);
    assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_files_private), cmocka_unit_test(test_existing_state_tightened),
        cmocka_unit_test(test_db_symlink_refused),  cmocka_unit_test(test_keycache_keys_locked),
        cmocka_unit_test(test_server_keys_locked),  cmocka_unit_test(test_process_cannot_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
