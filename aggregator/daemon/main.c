/* ldpb-aggregator: parses the command line and the config file, installs the signal handlers,
 * and runs the server library until SIGTERM or SIGINT; or exports the propensity log, or backs the
 * state up. Exit codes:
 * 0 success (including a drained shutdown), 1 runtime failure, 2 usage or configuration error. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "harden.h"
#include "server.h"
#include "store.h"

#ifndef LDPB_VERSION_STRING
#define LDPB_VERSION_STRING "unknown"
#endif

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Logs by level to stderr, one line each. stderr is unbuffered; a single fprintf per line keeps
 * lines from different threads whole. */
static void log_stderr(void *ctx, int level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "[%s] %s\n", agg_log_level_name(level), msg);
}

/* Prints a failure at once (paths can be longer than `err`) and clears `err`, which then holds
 * nothing more to print. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
report_fail(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ldpb-aggregator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    err[0] = '\0';
}

/* Creates an empty file beside `target` for writing it whole (mkstemp: O_EXCL, mode 0600 whatever
 * the umask). Returns its descriptor, or -1 with errno; the name goes into `tmp`. */
static int temp_beside(const char *target, char *tmp, size_t cap)
{
    const char *slash = strrchr(target, '/');
    int dir_len = slash ? (int)(slash - target + 1) : 0;
    if ((size_t)snprintf(tmp, cap, "%.*s.%s.XXXXXX", dir_len, target, slash ? slash + 1 : target) >=
        cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkstemp(tmp);
}

/* fsyncs the directory holding `path`, so a rename or link in it survives a crash. */
static int sync_parent(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Writes the CSV to a temporary file beside the target and renames it over the target only once
 * it is complete and synced: a failed export leaves the target as it was and no partial file. */
static int export_csv(const agg_config *cfg)
{
    char err[AGG_STORE_ERRMAX] = "";
    if (strcmp(cfg->export_csv, "-") == 0) {
        ldpb_err e = agg_store_export_csv(cfg->state_dir, stdout, err);
        if (e)
            fprintf(stderr, "ldpb-aggregator: %s\n", err);
        return e ? 1 : 0;
    }
    char tmp[4096];
    int fd = temp_beside(cfg->export_csv, tmp, sizeof tmp);
    if (fd < 0) {
        fprintf(stderr, "ldpb-aggregator: %s: cannot create a file beside it: %s\n",
                cfg->export_csv, strerror(errno));
        return 1;
    }
    FILE *out = fdopen(fd, "w");
    ldpb_err e = LDPB_EIO;
    if (!out) {
        report_fail(err, "%s: %s", tmp, strerror(errno));
        close(fd);
    } else {
        e = agg_store_export_csv(cfg->state_dir, out, err);
        if (!e && (fflush(out) != 0 || fsync(fileno(out)) != 0)) {
            report_fail(err, "%s: write failed: %s", tmp, strerror(errno));
            e = LDPB_EIO;
        }
        if (fclose(out) != 0 && !e) {
            report_fail(err, "%s: write failed: %s", tmp, strerror(errno));
            e = LDPB_EIO;
        }
    }
    if (!e && rename(tmp, cfg->export_csv) != 0) {
        report_fail(err, "%s: cannot rename %s to it: %s", cfg->export_csv, tmp, strerror(errno));
        e = LDPB_EIO;
    }
    if (e) {
        unlink(tmp);
        if (err[0])
            fprintf(stderr, "ldpb-aggregator: %s\n", err);
        return 1;
    }
    sync_parent(cfg->export_csv);
    return 0;
}

/* Backs the state up into a temporary file beside the target, then links it to the target
 * name, which fails if the target exists: a backup never replaces a file, least of all a live
 * database. */
static int backup(const agg_config *cfg)
{
    char err[AGG_STORE_ERRMAX] = "", tmp[4096];
    int fd = temp_beside(cfg->backup, tmp, sizeof tmp);
    if (fd < 0) {
        fprintf(stderr, "ldpb-aggregator: %s: cannot create a file beside it: %s\n", cfg->backup,
                strerror(errno));
        return 1;
    }
    close(fd);
    ldpb_err e = agg_store_backup(cfg->state_dir, tmp, err);
    if (!e) {
        fd = open(tmp, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            report_fail(err, "%s: cannot sync: %s", tmp, strerror(errno));
            e = LDPB_EIO;
        }
        if (fd >= 0)
            close(fd);
    }
    if (!e && link(tmp, cfg->backup) != 0) {
        report_fail(err, "%s: %s", cfg->backup,
                    errno == EEXIST ? "exists (a backup never replaces a file)" : strerror(errno));
        e = LDPB_EIO;
    }
    unlink(tmp);
    if (e) {
        if (err[0])
            fprintf(stderr, "ldpb-aggregator: %s\n", err);
        return 1;
    }
    sync_parent(cfg->backup);
    return 0;
}

int main(int argc, char **argv)
{
    agg_config cfg;
    agg_config_init(&cfg);
    char err[AGG_CONFIG_ERRMAX > AGG_SERVER_ERRMAX ? AGG_CONFIG_ERRMAX : AGG_SERVER_ERRMAX] = "";
    int rc = 2;
    agg_server *srv = NULL;
    /* Before anything secret is read. */
    if (agg_process_harden(err) != LDPB_OK) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        rc = 1;
        goto done;
    }
    if (agg_config_parse_args(&cfg, argc, argv, err) != LDPB_OK) {
        fprintf(stderr, "%s\n", err);
        goto done;
    }
    if (cfg.help) {
        agg_config_help(stdout);
        rc = 0;
        goto done;
    }
    if (cfg.version) {
        printf("ldpb-aggregator %s\n", LDPB_VERSION_STRING);
        rc = 0;
        goto done;
    }
    if (agg_config_check(&cfg, err) != LDPB_OK) {
        fprintf(stderr, "ldpb-aggregator: %s%s%s\n", cfg.config_path ? cfg.config_path : "",
                cfg.config_path ? ": " : "", err);
        goto done;
    }
    if (cfg.export_csv) {
        rc = export_csv(&cfg);
        goto done;
    }
    if (cfg.backup) {
        rc = backup(&cfg);
        goto done;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    ldpb_err e = agg_server_new(&srv, &cfg, log_stderr, NULL, err);
    if (e) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        rc = e == LDPB_EINVAL || e == LDPB_ERANGE || e == LDPB_ESTATE ? 2 : 1;
        goto done;
    }
    if (cfg.check) {
        printf("ldpb-aggregator: configuration OK\n");
        rc = 0;
        goto done;
    }
    e = agg_server_start(srv, err);
    if (e) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        rc = e == LDPB_EINVAL ? 2 : 1;
        goto done;
    }
    log_stderr(NULL, AGG_LOG_INFO, "ready");
    while (!stop_requested) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    log_stderr(NULL, AGG_LOG_INFO, "stopping: draining in-flight requests");
    agg_server_stop(srv);
    rc = 0;
done:
    agg_server_free(srv);
    agg_config_fini(&cfg);
    return rc;
}
