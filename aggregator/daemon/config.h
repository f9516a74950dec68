/* The ldpb-aggregator configuration: one table of options (name, type, default, bounds, scope,
 * help) drives the ini-file parser (inih), the command-line parser, --help and an experiment's
 * settings text, so they can never disagree (a table-driven config). Flags override the file;
 * unknown keys, values out of range and keys set twice are errors reported as "FILE:LINE: reason".
 *
 * One service runs many experiments. An option is either the service's (listen, workers, ...) or
 * an experiment's (policy, mode, arms, epsilon, ..., decision_retention_s): the table says which.
 * Experiment options at the top of the file (or under [aggregator]) and their flags declare the
 * experiment "default" exactly as a single-experiment configuration always did, and keep filling
 * cfg->policy, params, ctx, mode and decision_retention_s; each `[experiment NAME]` section
 * declares one more, from the built-in defaults, with experiment options only.
 *
 * Not thread-safe: a config is filled once by main and then only read. */
#ifndef LDPB_AGG_CONFIG_H
#define LDPB_AGG_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ldpb/err.h"
#include "ctx_policy.h"
#include "policy.h"

#define AGG_LISTEN_MAX    16  /* --listen URLs */
#define AGG_CONFIG_ERRMAX 512 /* room for "FILE:LINE: reason" */

#define AGG_EXPERIMENT_NAME_MAX 64        /* bytes of an experiment name, [a-z0-9._-] */
#define AGG_DEFAULT_EXPERIMENT  "default" /* top-level keys' experiment; absent on the wire */
#define AGG_EXPERIMENTS_LIMIT   100000    /* the largest experiments_max */

typedef enum agg_mode {
    AGG_MODE_LOCAL = 1,      /* LDP policies; clients privatize with the configured mechanism */
    AGG_MODE_CENTRAL = 2,    /* central-DP policies; clients send raw rewards */
    AGG_MODE_NONPRIVATE = 3, /* non-private baselines; needs allow_nonprivate */
} agg_mode;

typedef enum agg_auth {
    AGG_AUTH_OPEN = 1,      /* any client key */
    AGG_AUTH_ALLOWLIST = 2, /* only the keys listed in `allowlist` */
} agg_auth;

/* Syslog-like levels, smaller is more severe. */
typedef enum agg_log_level {
    AGG_LOG_ERROR = 3,
    AGG_LOG_WARN = 4,
    AGG_LOG_INFO = 6,
    AGG_LOG_DEBUG = 7,
} agg_log_level;

/* One experiment's settings: the learning problem (policy, mode, parameters) and how long its
 * decisions are kept. */
typedef struct agg_exp_config {
    char name[AGG_EXPERIMENT_NAME_MAX + 1];
    char *policy;             /* malloc'd */
    int mode;                 /* agg_mode */
    agg_policy_config params; /* arms, mechanism, epsilon, kappa, horizon, beta, gamma, eps_arm,
                                 tau, threshold */
    agg_ctx_params ctx;       /* d, delta, alpha, feature_norm, theta_norm, noise_sigma, rho,
                                 reward_bound */
    uint64_t decision_retention_s;
    /* Added to the design: the line of its `[experiment NAME]` header in the file it was read
     * from (agg_config's config_file), for "FILE:LINE" messages; 0 when not from a section. Not
     * part of the settings (format, change_refused and copy's equality ignore it). */
    int config_line;
} agg_exp_config;

typedef struct agg_config {
    char *listen[AGG_LISTEN_MAX];
    size_t n_listen;
    char *state_dir;
    char *store;     /* --store URL: "sqlite:" (the default) or "postgresql://..." (store.h) */
    char *node_name; /* NULL: agg_server picks the default (store.h, nodes) */
    uint64_t merge_interval_ms; /* server_cluster.c */
    char *key;
    char *policy;
    /* The policy's parameters: options arms (params.k), mechanism, epsilon, kappa, horizon,
     * beta, gamma and eps_arm. */
    agg_policy_config params;
    /* The contextual policies' options: d, delta, alpha, feature_norm, theta_norm, noise_sigma,
     * rho (ctx_policy.h). */
    agg_ctx_params ctx;
    int mode; /* agg_mode */
    int allow_nonprivate;
    uint64_t workers;
    uint64_t repliers;
    uint64_t row_shards; /* SQLite: databases the rows are split over (store.h) */
    uint64_t batch_max;
    uint64_t queue_max;
    uint64_t assignment_ttl_s;
    uint64_t propensity_samples;
    int auth; /* agg_auth */
    char *allowlist;
    uint64_t replay_window_s;
    uint64_t replay_entries;
    uint64_t keycache_entries;
    uint64_t key_derivations_per_s;
    char *metrics;
    int log_level; /* agg_log_level */
    uint64_t decision_retention_s;
    uint64_t decision_rows_max;
    uint64_t min_free_mb;
    uint64_t error_log_interval_s;
    /* The experiments: "default" first when the top-level keys (or flags) declare it, then the
     * `[experiment NAME]` sections in file order. Kept in step by agg_config_set and the file
     * parser; at most experiments_max of them (agg_config_check). */
    agg_exp_config *exps;
    size_t n_exps;
    uint64_t experiments_max;         /* option, default 10000, 1..AGG_EXPERIMENTS_LIMIT */
    char *admin_list;                 /* option: file of operator public keys (the allowlist's
                                         format); unset: every operator command is refused */
    uint64_t metrics_experiments_max; /* option, default 100: experiments with series of their
                                         own in /metrics (the rest summed) */
    /* Kept by agg_config_parse_args (copies) for a SIGHUP re-read with the same flags. */
    int argc;
    char **argv;
    /* Set by the command line only. */
    char *config_path;
    char *export_csv;
    char *export_experiment; /* --experiment NAME (validated) with --export-csv; NULL: all */
    char *backup;
    int help, version, check;
    int new_state; /* --new-state: store.h, agg_store_meta */
    /* Internal: which options were set by the file (so a key set twice is an error) and by a
     * flag (so repeated --listen flags replace the file's list rather than extend it). */
    uint8_t set_by_file[64];
    uint8_t set_by_flag[64];
    size_t exps_cap;   /* allocated entries of exps */
    int default_top;   /* exps[0] is the "default" declared by top-level keys or flags */
    char *config_file; /* the file last loaded, for the "FILE:LINE" of its experiments */
} agg_config;

/* Fills every option with its default. Owns nothing yet; call agg_config_fini when done. */
void agg_config_init(agg_config *cfg);

/* Frees the strings of `cfg` and zeroes it (agg_config_init makes it usable again). Accepts
 * NULL. */
void agg_config_fini(agg_config *cfg);

/* Sets option `name` (the file's spelling, with '_') from the text `value`. `from_flag` says
 * whether the value comes from the command line (which overrides the file). An experiment option
 * set here declares (or updates) the experiment "default" in cfg->exps. Errors: LDPB_EINVAL
 * (unknown option, unparsable value, option set twice in the file, "default" already declared by
 * an [experiment default] section), LDPB_ERANGE (outside the bounds), LDPB_ENOMEM; `reason`
 * (AGG_CONFIG_ERRMAX bytes) says what was wrong. */
ldpb_err agg_config_set(agg_config *cfg, const char *name, const char *value, int from_flag,
                        char *reason);

/* Parses an ini file: top-level keys, or keys under an [aggregator] section, and `[experiment
 * NAME]` sections (experiment keys only; each checked as agg_exp_config_check, except for
 * allow_nonprivate, which a flag may still set). Errors: LDPB_EIO (cannot open), LDPB_EINVAL /
 * LDPB_ERANGE with `err` = "FILE:LINE: reason": unknown section or key, a service key in a
 * section, an invalid or duplicate experiment name, an unknown policy, a bad combination (at the
 * section's header line), more than AGG_EXPERIMENTS_LIMIT sections. experiments_max is
 * agg_config_check's (and agg_config_parse_args'), since a flag may still raise it. */
ldpb_err agg_config_load_file(agg_config *cfg, const char *path, char *err);

/* Parses the command line: first finds --config and loads that file, then applies every flag
 * over it, then checks experiments_max. Keeps a copy of argc/argv in cfg (for a re-read: parse
 * them again into a fresh config). `err` gets "ldpb-aggregator: reason" on failure (LDPB_EINVAL,
 * LDPB_ERANGE, LDPB_EIO). Does not validate the combination: call agg_config_check. */
ldpb_err agg_config_parse_args(agg_config *cfg, int argc, char **argv, char *err);

/* Checks what no single option can: required options set, at least one experiment and at most
 * experiments_max, each experiment as agg_exp_config_check (the default one from the top-level
 * fields, with today's messages; a section's with "FILE:LINE: experiment 'NAME': "), an
 * allow-list file with auth = allowlist. LDPB_EINVAL with a precise `err` otherwise. */
ldpb_err agg_config_check(const agg_config *cfg, char *err);

/* ---- experiments ------------------------------------------------------------------------ */

/* 1 if `name` is 1..AGG_EXPERIMENT_NAME_MAX bytes of [a-z0-9._-]. */
int agg_exp_name_valid(const char *name);

/* Fills `e` with the built-in defaults (policy ldp-ts-b, mode local, arms 0 = unset, ...) and an
 * empty name. LDPB_ENOMEM (e then needs no fini). */
ldpb_err agg_exp_config_init(agg_exp_config *e);

/* Parses "key = value" lines (the body of a section; '#'/';' comments; no sections) into `out`
 * for experiment `name` (validated), starting from the built-in defaults, then checks it as
 * agg_exp_config_check does, except for allow_nonprivate, which is the service's: the caller
 * applies it with agg_exp_config_check(out, cfg->allow_nonprivate, err). For runtime `create` and
 * for the store's settings text. `out` needs no init and on failure holds nothing to free.
 * LDPB_EINVAL/LDPB_ERANGE with a reason ("line N: ..." for a line's error), LDPB_ENOMEM. */
ldpb_err agg_exp_config_parse(agg_exp_config *out, const char *name, const char *text, char *err);

/* What agg_config_check checks per experiment: the name, arms set, a policy that exists and
 * belongs to the mode, nonprivate only with `allow_nonprivate`, d for contextual policies, a
 * local mechanism the clients can build. LDPB_EINVAL/LDPB_ERANGE with `err`. */
ldpb_err agg_exp_config_check(const agg_exp_config *e, int allow_nonprivate, char *err);

/* Canonical text of the settings: "key = value\n" lines sorted by key, every experiment option,
 * doubles printed as the shortest of %.15g/%.16g/%.17g that reads back to the same bits (so
 * "0.1", and round-trip exact), enums by name; the name is not in it. What the
 * store keeps; agg_exp_config_parse reads it back to an equal config. Compare settings with
 * agg_exp_config_change_refused, not by text: a later version may add an option, which a stored
 * text then lacks (parse gives it its default). Returns the length without the NUL, or 0 if cap
 * is too small (or the policy name is not printable as a value). */
size_t agg_exp_config_format(const agg_exp_config *e, char *buf, size_t cap);

/* 0 if `want` may replace `running` (equal, or only decision_retention_s differs); else 1 with a
 * one-line reason in `why` (AGG_CONFIG_ERRMAX): which key changed from what to what; for a
 * privacy key (mode, mechanism, epsilon, eps_arm; horizon and delta where a DP policy reads them)
 * with the words "stop it and start one under a new name". Names are not compared. */
int agg_exp_config_change_refused(const agg_exp_config *running, const agg_exp_config *want,
                                  char *why);

/* Frees e->policy and zeroes `e`. Accepts NULL. */
void agg_exp_config_fini(agg_exp_config *e);

/* A deep copy: `dst` is overwritten as if uninitialized (fini it first if it held a copy).
 * LDPB_ENOMEM (dst then zeroed). */
ldpb_err agg_exp_config_copy(agg_exp_config *dst, const agg_exp_config *src);

/* The experiment `name` of cfg->exps (NULL or "" = "default"), or NULL. */
const agg_exp_config *agg_config_experiment(const agg_config *cfg, const char *name);

/* Writes the --help text, generated from the option table, to `out`. */
void agg_config_help(FILE *out);

/* Names of enum values, for logs and the state's metadata. */
const char *agg_mode_name(int mode);
const char *agg_log_level_name(int level);

#endif
