/* ldpb-aggregator: parses the command line and the config file, installs the signal handlers,
 * and runs the server library until SIGTERM or SIGINT; or exports the propensity log, or backs the
 * state up. Exit codes:
 * 0 success (including a drained shutdown), 1 runtime failure, 2 usage or configuration error. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/durable.h"

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

/* What a fill of the durable write (ldpb/durable.h) reports back: the store's own message. */
typedef struct store_fill {
    const agg_config *cfg;
    char err[AGG_STORE_ERRMAX];
} store_fill;

static ldpb_err export_fill(void *ctx, int fd, const char *tmp_path)
{
    (void)tmp_path;
    store_fill *x = ctx;
    /* A stream of its own: the durable write syncs and closes `fd` itself. */
    int own = dup(fd);
    FILE *out = own >= 0 ? fdopen(own, "w") : NULL;
    if (!out) {
        if (own >= 0)
            close(own);
        return LDPB_EIO;
    }
    ldpb_err e = agg_store_export_csv(x->cfg->state_dir, out, x->err);
    if (fflush(out) != 0 && !e)
        e = LDPB_EIO;
    if (fclose(out) != 0 && !e)
        e = LDPB_EIO;
    return e;
}

/* SQLite's backup writes the temporary file by name; the durable write then syncs it. */
static ldpb_err backup_fill(void *ctx, int fd, const char *tmp_path)
{
    (void)fd;
    store_fill *x = ctx;
    return agg_store_backup(x->cfg->state_dir, tmp_path, x->err);
}

/* Writes `target` through the durable write and prints a failure: the store's message if it gave
 * one, else the write's. */
static int write_whole(const char *target, const ldpb_durable_opts *o, ldpb_durable_fill fill,
                       store_fill *x, const char *exists)
{
    char detail[256] = "";
    ldpb_err e = ldpb_durable_write(target, o, fill, x, NULL, detail, sizeof detail);
    if (!e)
        return 0;
    if (x->err[0])
        fprintf(stderr, "ldpb-aggregator: %s\n", x->err);
    else
        fprintf(stderr, "ldpb-aggregator: %s: %s\n", target,
                e == LDPB_ESTATE && exists ? exists : detail);
    return 1;
}

/* The CSV goes to a temporary file beside the target, renamed over it only once complete and
 * synced: a failed export leaves the target as it was and no partial file. */
static int export_csv(const agg_config *cfg)
{
    store_fill x = {cfg, ""};
    if (strcmp(cfg->export_csv, "-") == 0) {
        ldpb_err e = agg_store_export_csv(cfg->state_dir, stdout, x.err);
        if (e)
            fprintf(stderr, "ldpb-aggregator: %s\n", x.err);
        return e ? 1 : 0;
    }
    return write_whole(cfg->export_csv, NULL, export_fill, &x, NULL);
}

/* The backup goes to a temporary file beside the target, then is linked to the target name,
 * which fails if the target exists: a backup never replaces a file, least of all a live
 * database. */
static int backup(const agg_config *cfg)
{
    store_fill x = {cfg, ""};
    ldpb_durable_opts o = {0600, 1, NULL, NULL};
    return write_whole(cfg->backup, &o, backup_fill, &x, "exists (a backup never replaces a file)");
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
