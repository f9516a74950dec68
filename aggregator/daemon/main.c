/* ldpb-aggregator: parses the command line and the config file, installs the signal handlers,
 * and runs the server library until SIGTERM or SIGINT; or exports the propensity log, or backs the
 * state up. Exit codes:
 * 0 success (including a drained shutdown), 1 runtime failure, 2 usage or configuration error. */
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/durable.h"

#include "config.h"
#include "harden.h"
#include "nonce_log.h"
#include "server.h"
#include "state_id.h"
#include "store.h"

#ifndef LDPB_VERSION_STRING
#define LDPB_VERSION_STRING "unknown"
#endif

static volatile sig_atomic_t stop_requested, reload_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void on_hup(int sig)
{
    (void)sig;
    reload_requested = 1;
}

/* Logs by level to stderr, one line each. stderr is unbuffered; a single fprintf per line keeps
 * lines from different threads whole. */
static void log_stderr(void *ctx, int level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "[%s] %s\n", agg_log_level_name(level), msg);
}

/* SIGHUP: the configuration file is read again with the original flags (which still override
 * it) and its experiments applied (agg_server_reload); a file that no longer parses or checks
 * changes nothing. */
static void reload(agg_server *srv, const agg_config *cfg)
{
    char err[AGG_CONFIG_ERRMAX] = "";
    agg_config next;
    agg_config_init(&next);
    if (agg_config_parse_args(&next, cfg->argc, cfg->argv, err) != LDPB_OK ||
        agg_config_check(&next, err) != LDPB_OK) {
        char line[AGG_CONFIG_ERRMAX + 96];
        snprintf(line, sizeof line, "reload: the configuration is not valid, nothing changed: %s",
                 err);
        log_stderr(NULL, AGG_LOG_ERROR, line);
        agg_config_fini(&next);
        return;
    }
    size_t refused = 0;
    agg_server_reload(srv, &next, &refused);
    agg_config_fini(&next);
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
    ldpb_err e = agg_store_export_csv_exp(x->cfg->store, x->cfg->state_dir,
                                          x->cfg->export_experiment, out, x->err);
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
    return agg_store_backup_url(x->cfg->store, x->cfg->state_dir, tmp_path, x->err);
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

/* Every experiment's decisions, or --experiment NAME's, with the column `experiment` last. The
 * CSV goes to a temporary file beside the target, renamed over it only once complete and
 * synced: a failed export leaves the target as it was and no partial file. */
static int export_csv(const agg_config *cfg)
{
    store_fill x = {cfg, ""};
    if (strcmp(cfg->export_csv, "-") == 0) {
        ldpb_err e = agg_store_export_csv_exp(cfg->store, cfg->state_dir, cfg->export_experiment,
                                              stdout, x.err);
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
    if (agg_store_backup_check(cfg->store, x.err) != LDPB_OK) {
        fprintf(stderr, "ldpb-aggregator: %s\n", x.err);
        return 2; /* a usage error: nothing was written */
    }
    ldpb_durable_opts o = {0600, 1, NULL, NULL};
    return write_whole(cfg->backup, &o, backup_fill, &x, "exists (a backup never replaces a file)");
}

/* What a start creates in state_dir (store.c, state_id.c, nonce_log.c): the directory itself, its
 * lock, the database files, the identity marker and the replay log. Noted before the start, so that
 * a start that fails (a listen address in use, ...) removes what it created and nothing else: an
 * operator who fixes the address then starts from the state directory as it was, not from one tied
 * to this attempt's configuration. */
static const char *const state_names[] = {"lock",
                                          AGG_STORE_DB_NAME,
                                          AGG_STORE_DB_NAME "-wal",
                                          AGG_STORE_DB_NAME "-shm",
                                          AGG_STORE_DB_NAME "-journal",
                                          AGG_STATE_ID_FILE,
                                          AGG_NONCE_LOG_FILE,
                                          AGG_NONCE_LOG_OLD_FILE};
#define N_STATE_NAMES (sizeof state_names / sizeof state_names[0])

typedef struct state_before {
    int dir;                  /* state_dir existed */
    int names[N_STATE_NAMES]; /* each of state_names existed in it */
} state_before;

static int exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat sb;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return 1; /* unknown: treat as not ours */
    return lstat(path, &sb) == 0 || errno != ENOENT;
}

static void note_state(const char *dir, state_before *b)
{
    struct stat sb;
    b->dir = lstat(dir, &sb) == 0 || errno != ENOENT;
    for (size_t i = 0; i < N_STATE_NAMES; i++)
        b->names[i] = b->dir && exists(dir, state_names[i]);
}

/* Removes what the failed start created, under the store's lock (taken again here: another
 * daemon that holds it by now owns the files, and they are left alone). The lock file goes last,
 * while held; store.c refuses a lock on a file no longer named. A directory that holds anything
 * else is left. */
static void remove_created(const char *dir, const state_before *b)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/lock", dir) >= sizeof path)
        return;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return;
    }
    if (fd >= 0) {
        for (size_t i = N_STATE_NAMES; i-- > 0;)
            if (!b->names[i] &&
                (size_t)snprintf(path, sizeof path, "%s/%s", dir, state_names[i]) < sizeof path)
                (void)unlink(path);
        close(fd);
    }
    if (!b->dir)
        (void)rmdir(dir);
}

int main(int argc, char **argv)
{
    agg_config cfg;
    agg_config_init(&cfg);
    char err[AGG_CONFIG_ERRMAX > AGG_SERVER_ERRMAX ? AGG_CONFIG_ERRMAX : AGG_SERVER_ERRMAX] = "";
    int rc = 2;
    agg_server *srv = NULL;
    agg_store_process_init(0);
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
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);

    state_before before;
    note_state(cfg.state_dir, &before);
    ldpb_err e = agg_server_new(&srv, &cfg, log_stderr, NULL, err);
    if (e) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        rc = e == LDPB_EINVAL || e == LDPB_ERANGE || e == LDPB_ESTATE ? 2 : 1;
        remove_created(cfg.state_dir, &before);
        goto done;
    }
    if (cfg.check) {
        /* The store's open left its transaction uncommitted (rolled back by the close); what the
         * open created in state_dir goes too, as after a refused start. */
        agg_server_free(srv);
        srv = NULL;
        remove_created(cfg.state_dir, &before);
        printf("ldpb-aggregator: configuration OK\n");
        rc = 0;
        goto done;
    }
    e = agg_server_start(srv, err);
    if (e) {
        fprintf(stderr, "ldpb-aggregator: %s\n", err);
        rc = e == LDPB_EINVAL ? 2 : 1;
        agg_server_free(srv); /* closes the database and releases the lock */
        srv = NULL;
        remove_created(cfg.state_dir, &before);
        goto done;
    }
    log_stderr(NULL, AGG_LOG_INFO, "ready");
    while (!stop_requested) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        if (reload_requested) {
            reload_requested = 0;
            log_stderr(NULL, AGG_LOG_INFO, "SIGHUP: reloading the experiments");
            reload(srv, &cfg);
        }
    }
    log_stderr(NULL, AGG_LOG_INFO, "stopping: draining in-flight requests");
    agg_server_stop(srv);
    rc = 0;
done:
    agg_server_free(srv);
    agg_config_fini(&cfg);
    return rc;
}
