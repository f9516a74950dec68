/* Fuzz target for the daemon's configuration (aggregator/daemon/config.c): the ini file through
 * agg_config_load_file and the command line through agg_config_parse_args, each followed by
 * agg_config_check, the checks ldpb-aggregator runs before it touches any state. The file's text
 * also goes through agg_exp_config_parse as one experiment's settings, the body of an operator's
 * `create` (network bytes). Every experiment that parses and passes the checks must survive
 * agg_exp_config_format -> agg_exp_config_parse unchanged: the same settings
 * (agg_exp_config_change_refused says none changed) and the same text.
 *
 * Input: the file's text, then optionally a NUL and command-line arguments separated by NULs. An
 * argument "@" (and, so that no other file is ever read, any argument with a '/') stands for the
 * file's path, and "--config=..." for "--config=PATH": "--config\0@" loads it through the command
 * line.
 * Every call must succeed or refuse with a documented code and a one-line reason, and the config
 * must free cleanly either way (the leak checker sees what agg_config_fini misses). */
#define _XOPEN_SOURCE 700 /* mkstemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_target.h"

enum { ARGS_MAX = 24 };

static char path[64];

static void reason_ok(ldpb_err err, const char *reason)
{
    if (err != LDPB_EINVAL && err != LDPB_ERANGE && err != LDPB_ENOMEM && err != LDPB_EIO)
        abort();
    if (!memchr(reason, 0, AGG_CONFIG_ERRMAX) || !reason[0])
        abort();
}

static void check(const agg_config *cfg)
{
    char err[AGG_CONFIG_ERRMAX];
    err[0] = '\0';
    ldpb_err e = agg_config_check(cfg, err);
    if (e != LDPB_OK)
        reason_ok(e, err);
    if (cfg->n_listen > AGG_LISTEN_MAX)
        abort();
}

static void roundtrip(const agg_exp_config *e)
{
    char a[4096], b[4096], err[AGG_CONFIG_ERRMAX];
    size_t n = agg_exp_config_format(e, a, sizeof a);
    agg_exp_config back;
    if (n == 0 || agg_exp_config_parse(&back, e->name, a, err) != LDPB_OK)
        abort();
    if (agg_exp_config_change_refused(e, &back, err) ||
        back.decision_retention_s != e->decision_retention_s)
        abort();
    if (agg_exp_config_format(&back, b, sizeof b) != n || memcmp(a, b, n) != 0)
        abort();
    agg_exp_config_fini(&back);
}

static void settings(const uint8_t *data, size_t len)
{
    char *text = malloc(len + 1);
    if (!text)
        abort();
    memcpy(text, data, len);
    text[len] = '\0';
    agg_exp_config e;
    char err[AGG_CONFIG_ERRMAX];
    err[0] = '\0';
    ldpb_err x = agg_exp_config_parse(&e, "fuzz", text, err);
    if (x != LDPB_OK) {
        reason_ok(x, err);
        if (e.policy)
            abort(); /* a refusal leaves nothing to free */
    } else {
        roundtrip(&e);
    }
    agg_exp_config_fini(&e);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/ldpb-fuzz-config-%ld-XXXXXX", (long)getpid());
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
    }
    const uint8_t *nul = memchr(data, 0, size);
    size_t file_len = nul ? (size_t)(nul - data) : size;
    FILE *f = fopen(path, "wb");
    if (!f || (file_len && fwrite(data, 1, file_len, f) != file_len) || fclose(f) != 0)
        abort();

    agg_config cfg;
    char err[AGG_CONFIG_ERRMAX];
    agg_config_init(&cfg);
    err[0] = '\0';
    ldpb_err e = agg_config_load_file(&cfg, path, err);
    if (e != LDPB_OK)
        reason_ok(e, err);
    else
        check(&cfg);
    if (e == LDPB_OK && agg_config_check(&cfg, err) == LDPB_OK)
        for (size_t i = 0; i < cfg.n_exps; i++)
            roundtrip(&cfg.exps[i]);
    agg_config_fini(&cfg);
    settings(data, file_len);
    if (!nul)
        return 0;

    /* the arguments: NUL-terminated copies of the pieces after the first NUL */
    size_t rest = size - file_len - 1;
    char *args = malloc(rest + 1);
    if (!args)
        abort();
    memcpy(args, nul + 1, rest);
    args[rest] = '\0';
    char *argv[ARGS_MAX + 2];
    int argc = 0;
    argv[argc++] = "ldpb-aggregator";
    char config_arg[sizeof path + 16];
    snprintf(config_arg, sizeof config_arg, "--config=%s", path);
    for (char *p = args; p <= args + rest && argc <= ARGS_MAX; p += strlen(p) + 1)
        argv[argc++] = strcmp(p, "@") == 0 || strchr(p, '/') ? path
                       : strncmp(p, "--config=", 9) == 0     ? config_arg
                                                             : p;
    argv[argc] = NULL;
    agg_config_init(&cfg);
    err[0] = '\0';
    e = agg_config_parse_args(&cfg, argc, argv, err);
    if (e != LDPB_OK)
        reason_ok(e, err);
    else if (!cfg.help && !cfg.version)
        check(&cfg);
    agg_config_fini(&cfg);
    free(args);
    return 0;
}
