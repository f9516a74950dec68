/* The ldpb-aggregator binary, hardened: a running daemon cannot dump core and holds its keys in
 * locked memory; every configuration error exits 2, at once (a --config FIFO is not waited on),
 * with a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "ldpb/keyfile.h"

/* AddressSanitizer turns mlock into a no-op: a sanitized daemon locks nothing (test_harden.c
 * checks the same memory is kept out of dumps in every build). */
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

/* A field of /proc/PID/FILE: the rest of the first line starting with `prefix`. */
static int proc_field(pid_t pid, const char *file, const char *prefix, char *out, size_t cap)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/%s", (int)pid, file);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            snprintf(out, cap, "%s", line + strlen(prefix));
            found = 0;
            break;
        }
    fclose(f);
    return found;
}

/* Core dumps on in the parent (soft limit up to the hard one), so a daemon that did nothing about
 * them would show a nonzero limit. */
static void test_running_daemon_cannot_dump_and_locks_keys(void **state)
{
    (void)state;
    struct rlimit core;
    assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
    core.rlim_cur = core.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_CORE, &core), 0);
    assert_true(core.rlim_cur > 0);

    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, "arms = 3\nkeycache_entries = 16\n"), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    char v[256];
    assert_int_equal(proc_field(d.pid, "limits", "Max core file size", v, sizeof v), 0);
    unsigned long long soft = 1, hard = 1;
    assert_int_equal(sscanf(v, "%llu %llu", &soft, &hard), 2);
    assert_int_equal(soft, 0);
    assert_int_equal(hard, 0);
    /* the server struct, the key cache and its keys: a page each at least */
    assert_int_equal(proc_field(d.pid, "status", "VmLck:", v, sizeof v), 0);
    long kb = atol(v);
    print_message("daemon VmLck: %ld kB\n", kb);
    if (MLOCK_WORKS)
        assert_true(kb >= 3 * sysconf(_SC_PAGESIZE) / 1024);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_daemon_hardening: the daemon blocked (waited on a FIFO?)\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(2);
}

/* Runs the daemon with `args` and expects exit 2 and `want` in its stderr, within 10 s. */
static void expect_config_error(const dt_daemon *d, const char *const *args, const char *want)
{
    char err[4096];
    alarm(10);
    int rc = dt_daemon_run(d, args, err, sizeof err);
    alarm(0);
    if (rc != 2 || !strstr(err, want)) {
        print_error("args:");
        for (int i = 0; args[i]; i++)
            print_error(" %s", args[i]);
        print_error("\nexit %d, stderr: %s(wanted exit 2 and '%s')\n", rc, err, want);
    }
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, want));
}

static void test_config_errors_exit_2(void **state)
{
    (void)state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);

    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    assert_int_equal(dt_daemon_write_config(&d, "arms = 3\n"), 0);
    char err[4096];
    const char *ok[] = {"--config", d.conf, "--check-config", NULL};
    assert_int_equal(dt_daemon_run(&d, ok, err, sizeof err), 0);

    /* a flag given twice, as a key twice in the file (--listen alone repeats) */
    const char *twice[] = {"--config", d.conf, "--check-config", "--arms", "3", "--arms=4", NULL};
    expect_config_error(&d, twice, "--arms given twice");
    char s2[256];
    snprintf(s2, sizeof s2, "%s/state2", d.dir);
    const char *twice_dir[] = {
        "--config", d.conf, "--check-config", "--state-dir", s2, "--state-dir", s2, NULL};
    expect_config_error(&d, twice_dir, "--state-dir given twice");
    const char *listen_twice[] = {"--config", d.conf,     "--check-config", "--listen",
                                  d.ipc_url,  "--listen", d.tcp_url,        NULL};
    assert_int_equal(dt_daemon_run(&d, listen_twice, err, sizeof err), 0);

    /* --config on a FIFO (no writer: a blocking open would wait for ever), a directory, a
     * device */
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/conf.fifo", d.dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *on_fifo[] = {"--config", fifo, "--check-config", NULL};
    expect_config_error(&d, on_fifo, "not a regular file");
    const char *on_dir[] = {"--config", d.dir, "--check-config", NULL};
    expect_config_error(&d, on_dir, "not a regular file");
    const char *on_dev[] = {"--config", "/dev/zero", "--check-config", NULL};
    expect_config_error(&d, on_dev, "not a regular file");
    const char *missing[] = {"--config", "/nonexistent/ldpb.conf", "--check-config", NULL};
    expect_config_error(&d, missing, "cannot open");

    /* --check-config parses the metrics address, but does not bind it: a port in use passes */
    const char *bad_metrics[] = {"--config",  d.conf,     "--check-config",
                                 "--metrics", "nonsense", NULL};
    expect_config_error(&d, bad_metrics, "metrics: 'nonsense' is not HOST:PORT");
    const char *bad_port[] = {"--config",        d.conf, "--check-config", "--metrics",
                              "127.0.0.1:99999", NULL};
    expect_config_error(&d, bad_port, "is not HOST:PORT");
    unsigned busy_port = 0;
    int busy = ldpb_test_loopback_listener(1, &busy_port);
    assert_true(busy >= 0);
    char in_use[64];
    snprintf(in_use, sizeof in_use, "127.0.0.1:%u", busy_port);
    const char *busy_metrics[] = {"--config", d.conf, "--check-config", "--metrics", in_use, NULL};
    assert_int_equal(dt_daemon_run(&d, busy_metrics, err, sizeof err), 0);
    close(busy);

    /* the key: all zeros, missing, readable by others */
    char key[256], detail[LDPB_DETAIL_BYTES];
    snprintf(key, sizeof key, "%s/zero.key", d.dir);
    uint8_t zero[LDPB_KEY_BYTES] = {0};
    assert_int_equal(ldpb_keyfile_write(key, LDPB_KEYFILE_SECRET, zero, 0, detail), LDPB_OK);
    const char *zero_key[] = {"--config", d.conf, "--check-config", "--key", key, NULL};
    expect_config_error(&d, zero_key, "all zeros");
    const char *zero_key_start[] = {"--config", d.conf, "--key", key, NULL};
    expect_config_error(&d, zero_key_start, "all zeros");
    const char *no_key[] = {"--config", d.conf, "--check-config", "--key", "/nonexistent/k", NULL};
    expect_config_error(&d, no_key, "cannot open");
    assert_int_equal(chmod(d.key, 0644), 0);
    expect_config_error(&d, ok, "chmod 600");
    assert_int_equal(chmod(d.key, 0600), 0);

    /* the allow-list file */
    const char *no_list[] = {"--config",  d.conf,        "--check-config",       "--auth",
                             "allowlist", "--allowlist", "/nonexistent/allowed", NULL};
    expect_config_error(&d, no_list, "cannot open");

    /* state_dir: a file, or under one */
    char file[256], under[300];
    snprintf(file, sizeof file, "%s/plain", d.dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    snprintf(under, sizeof under, "%s/sub", file);
    const char *dir_is_file[] = {"--config", d.conf, "--check-config", "--state-dir", file, NULL};
    expect_config_error(&d, dir_is_file, "plain");
    const char *dir_under_file[] = {"--config",    d.conf, "--check-config",
                                    "--state-dir", under,  NULL};
    expect_config_error(&d, dir_under_file, "cannot create");

    /* a listen URL nanomsg refuses (no such interface) is the configuration's fault */
    const char *bad_listen[] = {"--config", d.conf, "--listen", "tcp://no-such-interface:5555",
                                NULL};
    expect_config_error(&d, bad_listen, "cannot bind");

    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_running_daemon_cannot_dump_and_locks_keys),
        cmocka_unit_test(test_config_errors_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
