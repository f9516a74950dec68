/* The ldpb-aggregator configuration: one table of options (name, type, default, bounds, help)
 * drives the ini-file parser (inih), the command-line parser and --help, so the three can never
 * disagree (a table-driven config). Flags override the file; unknown keys,
 * values out of range and keys set twice are errors reported as "FILE:LINE: reason".
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

typedef struct agg_config {
    char *listen[AGG_LISTEN_MAX];
    size_t n_listen;
    char *state_dir;
    char *store; /* --store URL: "sqlite:" (the default) or "postgresql://..." (store.h) */
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
    /* Set by the command line only. */
    char *config_path;
    char *export_csv;
    char *backup;
    int help, version, check;
    int new_state; /* --new-state: store.h, agg_store_meta */
    /* Internal: which options were set by the file (so a key set twice is an error) and by a
     * flag (so repeated --listen flags replace the file's list rather than extend it). */
    uint8_t set_by_file[64];
    uint8_t set_by_flag[64];
} agg_config;

/* Fills every option with its default. Owns nothing yet; call agg_config_fini when done. */
void agg_config_init(agg_config *cfg);

/* Frees the strings of `cfg` and zeroes it (agg_config_init makes it usable again). Accepts
 * NULL. */
void agg_config_fini(agg_config *cfg);

/* Sets option `name` (the file's spelling, with '_') from the text `value`. `from_flag` says
 * whether the value comes from the command line (which overrides the file). Errors: LDPB_EINVAL
 * (unknown option, unparsable value, option set twice in the file), LDPB_ERANGE (outside the
 * bounds), LDPB_ENOMEM; `reason` (AGG_CONFIG_ERRMAX bytes) says what was wrong. */
ldpb_err agg_config_set(agg_config *cfg, const char *name, const char *value, int from_flag,
                        char *reason);

/* Parses an ini file (top-level keys, or keys under an [aggregator] section). Errors: LDPB_EIO
 * (cannot open), LDPB_EINVAL / LDPB_ERANGE with `err` = "FILE:LINE: reason". */
ldpb_err agg_config_load_file(agg_config *cfg, const char *path, char *err);

/* Parses the command line: first finds --config and loads that file, then applies every flag
 * over it. `err` gets "ldpb-aggregator: reason" on failure (LDPB_EINVAL, LDPB_ERANGE, LDPB_EIO).
 * Does not validate the combination: call agg_config_check. */
ldpb_err agg_config_parse_args(agg_config *cfg, int argc, char **argv, char *err);

/* Checks what no single option can: required options set, a policy that exists and belongs to
 * the mode, nonprivate only with allow_nonprivate, an allow-list file with auth = allowlist.
 * LDPB_EINVAL with a precise `err` otherwise. */
ldpb_err agg_config_check(const agg_config *cfg, char *err);

/* Writes the --help text, generated from the option table, to `out`. */
void agg_config_help(FILE *out);

/* Names of enum values, for logs and the state's metadata. */
const char *agg_mode_name(int mode);
const char *agg_log_level_name(int level);

#endif
