/* ldpb-aggregator: parses the command line and the config file, installs the signal handlers,
 * and runs the server library until SIGTERM or SIGINT; or exports the propensity log. Exit codes:
 * 0 success (including a drained shutdown), 1 runtime failure, 2 usage or configuration error. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

static int export_csv(const agg_config *cfg)
{
    FILE *out = strcmp(cfg->export_csv, "-") == 0 ? stdout : fopen(cfg->export_csv, "w");
    if (!out) {
        fprintf(stderr, "ldpb-aggregator: %s: cannot open for writing\n", cfg->export_csv);
        return 1;
    }
    char err[AGG_STORE_ERRMAX] = "";
    ldpb_err e = agg_store_export_csv(cfg->state_dir, out, err);
    if (out != stdout && fclose(out) != 0 && !e) {
        snprintf(err, sizeof err, "%s: write failed", cfg->export_csv);
        e = LDPB_EIO;
    }
    if (e) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        return 1;
    }
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
