/* The option table and the things generated from it: the ini handler (with its `[experiment
 * NAME]` sections), the flag parser, the --help text and an experiment's canonical settings text.
 * Adding an option is one table row plus one struct field (two for an experiment option: the same
 * field path in agg_config and in agg_exp_config). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "ldpb/detail.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/seal.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"
#include "metrics.h"
#include "policy.h"
#include "store.h"
#include "ctx_policy.h"
#include "ldpb/wire.h"

typedef enum opt_type {
    OPT_STR = 1,
    OPT_LIST, /* repeatable string (listen) */
    OPT_U64,
    OPT_U32,
    OPT_DBL,
    OPT_BOOL,
    OPT_ENUM,
    OPT_MECH, /* a local mechanism of the mechanism table, by name */
} opt_type;

typedef struct choice {
    const char *name;
    int value;
} choice;

/* Where an option belongs. */
typedef enum opt_scope {
    SCOPE_SERVICE = 0, /* the service's: top level or [aggregator] only */
    SCOPE_EXP,         /* an experiment's learning problem: fixed while it runs */
    SCOPE_EXP_MUTABLE, /* an experiment's, and a running experiment may change it */
} opt_scope;

/* Whether changing an experiment option would break what devices were promised. */
typedef enum opt_privacy {
    PRIV_NONE = 0,
    PRIV_ALWAYS,   /* mode, mechanism, epsilon, eps_arm */
    PRIV_DP_READS, /* privacy where the policy is a DP one that reads it (horizon, delta) */
} opt_privacy;

typedef struct option {
    const char *name; /* file key; the flag is "--" + name with '_' -> '-' */
    opt_type type;
    size_t offset;
    const char *def; /* default as text, NULL: unset */
    double min, max; /* numbers: inclusive bounds */
    int open_ends;   /* OPEN_MIN, OPEN_MAX: which bounds are exclusive */
    const choice *choices;
    const char *arg; /* metavariable in --help */
    const char *help;
    /* Filled by the SVC and EXP* macros below. */
    opt_scope scope;
    size_t exp_offset; /* the field in agg_exp_config (the same path as `offset`'s) */
    opt_privacy privacy;
} option;

static const choice mode_choices[] = {{"local", AGG_MODE_LOCAL},
                                      {"central", AGG_MODE_CENTRAL},
                                      {"nonprivate", AGG_MODE_NONPRIVATE},
                                      {NULL, 0}};
/* Named values an OPT_DBL also accepts (besides numbers in its range). */
static const choice threshold_names[] = {{"bound-min", (int)AGG_EXP3_THRESHOLD_BOUND_MIN},
                                         {NULL, 0}};
static const choice auth_choices[] = {
    {"open", AGG_AUTH_OPEN}, {"allowlist", AGG_AUTH_ALLOWLIST}, {NULL, 0}};
static const choice level_choices[] = {{"error", AGG_LOG_ERROR},
                                       {"warn", AGG_LOG_WARN},
                                       {"info", AGG_LOG_INFO},
                                       {"debug", AGG_LOG_DEBUG},
                                       {NULL, 0}};

#define OFF(f)         offsetof(agg_config, f)
#define OPEN_MIN       1
#define OPEN_MAX       2
#define SVC            SCOPE_SERVICE, 0, PRIV_NONE
#define EXP(f)         SCOPE_EXP, offsetof(agg_exp_config, f), PRIV_NONE
#define EXP_PRIV(f)    SCOPE_EXP, offsetof(agg_exp_config, f), PRIV_ALWAYS
#define EXP_PRIV_DP(f) SCOPE_EXP, offsetof(agg_exp_config, f), PRIV_DP_READS
#define EXP_MUTABLE(f) SCOPE_EXP_MUTABLE, offsetof(agg_exp_config, f), PRIV_NONE

/* clang-format off */
static const option options[] = {
    {"listen", OPT_LIST, OFF(listen), NULL, 0, 0, 0, NULL, "URL",
     "URL to serve on, nanomsg's REQ/REP wire (ipc://PATH, tcp://HOST:PORT); repeat for several, "
     "each with its own listener (required)", SVC},
    {"state_dir", OPT_STR, OFF(state_dir), NULL, 0, 0, 0, NULL, "DIR",
     "directory of the SQLite state (created if missing) (required)", SVC},
    {"store", OPT_STR, OFF(store), "sqlite:", 0, 0, 0, NULL, "URL",
     "where the state is kept: sqlite: (state_dir/aggregator.db) or postgresql://... (a "
     "PostgreSQL database, libpq's URI; state_dir still holds the lock, the state_id marker and "
     "the replay log)", SVC},
    {"node_name", OPT_STR, OFF(node_name), NULL, 0, 0, 0, NULL, "NAME",
     "this node's name in a PostgreSQL store shared by several nodes: 1..64 of [A-Za-z0-9._-], "
     "unique among them (default: the host name, '-', and a hash of the first listen URL); "
     "ignored by SQLite", SVC},
    {"merge_interval_ms", OPT_U64, OFF(merge_interval_ms), "90", 1, 60000, 0, NULL, "MS",
     "several nodes on one PostgreSQL: how often a node reads the other nodes' committed "
     "partial states of additive experiments and serves their merge (bounds its staleness)",
     SVC},
    {"key", OPT_STR, OFF(key), NULL, 0, 0, 0, NULL, "FILE",
     "the aggregator's secret key file, from `ldpb keygen` (mode 0600) (required)", SVC},
    {"arms", OPT_U32, OFF(params.k), NULL, 2, AGG_POLICY_K_MAX, 0, NULL, "K",
     "number of arms (required)", EXP(params.k)},
    {"policy", OPT_STR, OFF(policy), "ldp-ts-b", 0, 0, 0, NULL, "NAME",
     "bandit policy, a name of `ldpb sim` (local: ldp-ts-b, ldp-ucb-b, ldp-ucb-l, ldp-se, "
     "ldp-exp3-lap; central: dp-ucb, dp-ucb-bound, dp-se, dp-exp3-lap; nonprivate: ucb1, ts, se, "
     "exp3, exp3-tau, linucb; contextual central: jdp-linucb-wishart, jdp-linucb-gaussian; "
     "contextual local: ldp-linucb-gaussian); it must belong to the mode", EXP(policy)},
    {"mechanism", OPT_MECH, OFF(params.mechanism), "linear", 0, 0, 0, NULL, "M",
     "local mode: the clients' mechanism", EXP_PRIV(params.mechanism)},
    {"epsilon", OPT_DBL, OFF(params.epsilon), "1", 0, LDPB_EPSILON_MAX, OPEN_MIN, NULL, "E",
     "local mode: per-report epsilon put in every assignment; central mode: the policy's "
     "epsilon; (0, 10]", EXP_PRIV(params.epsilon)},
    {"kappa", OPT_DBL, OFF(params.kappa), "0.5", -1, 1, 0, NULL, "X",
     "quadratic mechanism curvature, [-1, 1]", EXP(params.kappa)},
    {"mode", OPT_ENUM, OFF(mode), "local", 0, 0, 0, mode_choices, "MODE",
     "privacy model: local, central or nonprivate", EXP_PRIV(mode)},
    {"allow_nonprivate", OPT_BOOL, OFF(allow_nonprivate), "false", 0, 0, 0, NULL, NULL,
     "allow mode = nonprivate (clients then send raw rewards to a non-private policy)", SVC},
    {"horizon", OPT_U64, OFF(params.horizon), "0", 0, 4611686018427387904.0, 0, NULL, "T",
     "the horizon T; 0 = unknown (dp-ucb refuses it, se and ldp-se need it for beta = 0, dp-se "
     "then runs the doubling schedule)", EXP_PRIV_DP(params.horizon)},
    {"beta", OPT_DBL, OFF(params.beta), "0", 0, 1, OPEN_MAX, NULL, "B",
     "confidence parameter beta in (0, 1); 0 = 1/horizon (2^-j in phase j of dp-se's doubling)",
     EXP(params.beta)},
    {"gamma", OPT_DBL, OFF(params.gamma), "0", 0, 1, OPEN_MAX, NULL, "G",
     "dp-ucb failure probability, EXP3 exploration rate; in (0, 1), 0 = from the horizon",
     EXP(params.gamma)},
    {"eps_arm", OPT_DBL, OFF(params.eps_arm), "0", 0, 1e6, 0, NULL, "E",
     "per-arm tree budget, at most epsilon (a larger one is refused); 0 = epsilon",
     EXP_PRIV(params.eps_arm)},
    {"tau", OPT_U64, OFF(params.tau), "0", 0, 4611686018427387904.0, 0, NULL, "N",
     "block length in rounds, in [1, horizon]; 0 = ceil(horizon^(1/3))", EXP(params.tau)},
    {"threshold", OPT_DBL, OFF(params.threshold), "0", 0, 1e300, 0, threshold_names, "B",
     "half-width b of the accepted noisy gains [-b, 1 + b], > 0; 0 = ln(horizon)/epsilon; "
     "bound-min = the b that minimises the regret bound (docs/derivations.md)",
     EXP(params.threshold)},
    {"d", OPT_U32, OFF(ctx.d), "0", 0, AGG_LINUCB_D_MAX, 0, NULL, "D",
     "contextual policies (linucb, jdp-linucb-*): the feature dimension, arms x d <= 256 "
     "(required by them)", EXP(ctx.d)},
    {"delta", OPT_DBL, OFF(ctx.delta), "0.1", 0, 1, OPEN_MIN | OPEN_MAX, NULL, "D",
     "jdp-linucb-*: the joint-DP delta, in (0, 1); ldp-linucb-gaussian: each report's delta, (0, 0.1]",
     EXP_PRIV_DP(ctx.delta)},
    {"alpha", OPT_DBL, OFF(ctx.alpha), "0", 0, 1, OPEN_MAX, NULL, "A",
     "contextual policies: failure probability of the confidence sets, (0, 1); 0 = 1/horizon",
     EXP(ctx.alpha)},
    {"feature_norm", OPT_DBL, OFF(ctx.L), "1", 0, 1e6, OPEN_MIN, NULL, "L",
     "contextual policies: bound L on every arm's feature norm; longer rows are refused",
     EXP(ctx.L)},
    {"theta_norm", OPT_DBL, OFF(ctx.S), "1", 0, 1e6, OPEN_MIN, NULL, "S",
     "contextual policies: bound S on the norm of the unknown parameter theta", EXP(ctx.S)},
    {"noise_sigma", OPT_DBL, OFF(ctx.sigma), "1", 0, 1e6, OPEN_MIN, NULL, "S",
     "contextual policies: sub-Gaussian parameter of the reward noise", EXP(ctx.sigma)},
    {"reward_bound", OPT_DBL, OFF(ctx.B), "1", 0, 1e6, OPEN_MIN, NULL, "B",
     "ldp-linucb-gaussian: devices clip rewards to [-B, B] before privatizing their statistics",
     EXP(ctx.B)},
    {"rho", OPT_DBL, OFF(ctx.rho), "1", 0, 1e6, OPEN_MIN, NULL, "R",
     "linucb: the ridge regulariser (the JDP variants derive theirs from the noise)", EXP(ctx.rho)},
    {"workers", OPT_U64, OFF(workers), "1", 1, 64, 0, NULL, "N",
     "worker threads receiving and answering requests", SVC},
    {"repliers", OPT_U64, OFF(repliers), "0", 0, 64, 0, NULL, "N",
     "threads sealing and sending the answers of committed reports (0: the committer does)", SVC},
    {"row_shards", OPT_U64, OFF(row_shards), "1", 1, 8, 0, NULL, "S",
     "SQLite: report and decision rows split by assignment id over S databases beside "
     "aggregator.db, each written and synced by its own thread (1: every row in aggregator.db); "
     "fixed when the state is created", SVC},
    {"batch_max", OPT_U64, OFF(batch_max), "4096", 1, 1000000, 0, NULL, "N",
     "most queued reports and decisions committed in one transaction", SVC},
    {"queue_max", OPT_U64, OFF(queue_max), "65536", 16, 4194304, 0, NULL, "N",
     "reports waiting for their commit; beyond it reports are refused with LDPB_EBUSY", SVC},
    {"assignment_ttl_s", OPT_U64, OFF(assignment_ttl_s), "600", 1, 2592000, 0, NULL, "S",
     "seconds an assignment accepts its report", SVC},
    {"propensity_samples", OPT_U64, OFF(propensity_samples), "16", 0, 4096, 0, NULL, "N",
     "ts / ldp-ts-b: extra posterior draws to estimate an assignment's propensity (0: log 1)", SVC},
    {"auth", OPT_ENUM, OFF(auth), "open", 0, 0, 0, auth_choices, "open|allowlist",
     "which client keys are served", SVC},
    {"allowlist", OPT_STR, OFF(allowlist), NULL, 0, 0, 0, NULL, "FILE",
     "auth = allowlist: file of client public keys, one key-file line each ('#' comments)", SVC},
    {"replay_window_s", OPT_U64, OFF(replay_window_s), "300", 1, 86400, 0, NULL, "S",
     "accepted clock difference of a request; its nonce is remembered this long", SVC},
    {"replay_entries", OPT_U64, OFF(replay_entries), "1048576", 1, 67108864, 0, NULL, "N",
     "nonces remembered at once (40 bytes each); when full, the oldest are forgotten and "
     "the accepted clock difference narrows", SVC},
    {"keycache_entries", OPT_U64, OFF(keycache_entries), "65536", 1, 16777216, 0, NULL, "N",
     "clients whose precomputed key is cached", SVC},
    {"key_derivations_per_s", OPT_U64, OFF(key_derivations_per_s), "1000", 0, 1000000, 0, NULL,
     "N", "key derivations (X25519, ~60 us each) per second for client keys not cached; frames "
     "beyond it are refused with LDPB_EBUSY; cached keys are never limited; 0 = unlimited", SVC},
    {"metrics", OPT_STR, OFF(metrics), NULL, 0, 0, 0, NULL, "HOST:PORT",
     "serve Prometheus text metrics over HTTP at http://HOST:PORT/metrics (off if unset)", SVC},
    {"log_level", OPT_ENUM, OFF(log_level), "info", 0, 0, 0, level_choices, "LEVEL",
     "error, warn, info or debug; logs go to stderr", SVC},
    {"decision_retention_s", OPT_U64, OFF(decision_retention_s), "604800", 0, 3153600000.0, 0,
     NULL, "S",
     "the propensity log keeps a decision this many seconds past its assignment's expiry",
     EXP_MUTABLE(decision_retention_s)},
    {"decision_rows_max", OPT_U64, OFF(decision_rows_max), "1000000", 1, 1e15, 0, NULL, "N",
     "most decisions the propensity log keeps (about 190 bytes each on disk); the oldest go "
     "first", SVC},
    {"min_free_mb", OPT_U64, OFF(min_free_mb), "32", 0, 1e12, 0, NULL, "MB",
     "below this much free space in state_dir (MiB) no assignment is issued (clients get "
     "LDPB_EBUSY) until it returns; 0: no check", SVC},
    {"error_log_interval_s", OPT_U64, OFF(error_log_interval_s), "10", 0, 86400, 0, NULL, "S",
     "a repeating error (a failing commit) is logged once per this many seconds, with the "
     "count of the ones not logged; 0: log each", SVC},
    {"experiments_max", OPT_U64, OFF(experiments_max), "10000", 1, AGG_EXPERIMENTS_LIMIT, 0,
     NULL, "N",
     "most experiments the service runs: the file's and those created at run time together", SVC},
    {"admin_list", OPT_STR, OFF(admin_list), NULL, 0, 0, 0, NULL, "FILE",
     "file of operator public keys, one key-file line each ('#' comments), as allowlist: only "
     "their experiment commands (`ldpb experiment create|list|show|stop`) are obeyed; unset: "
     "every operator command is refused", SVC},
    {"metrics_experiments_max", OPT_U64, OFF(metrics_experiments_max), "100", 0,
     AGG_EXPERIMENTS_LIMIT, 0, NULL, "N",
     "/metrics: experiments with series of their own (label experiment=\"NAME\"); the others "
     "are summed under experiment=\"_other\" (0: all of them)", SVC},
};
/* clang-format on */

#define N_OPTIONS (sizeof options / sizeof options[0])
/* OPT_ENUM stores an int; the mechanism's enum lives in agg_policy_config. */
_Static_assert(sizeof(ldpb_mech_kind) == sizeof(int), "OPT_ENUM writes an int");
_Static_assert(N_OPTIONS <= sizeof((agg_config *)0)->set_by_file, "set_by_file too small");

#define say(out, ...) ldpb_detailf((out), AGG_CONFIG_ERRMAX, __VA_ARGS__)

static const option *find_option(const char *name, size_t *index)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0) {
            *index = i;
            return &options[i];
        }
    return NULL;
}

static const char *choice_name(const choice *c, int value)
{
    for (; c && c->name; c++)
        if (c->value == value)
            return c->name;
    return "unknown";
}

const char *agg_mode_name(int mode)
{
    return choice_name(mode_choices, mode);
}

const char *agg_log_level_name(int level)
{
    return choice_name(level_choices, level);
}

/* The names of the local mechanisms, "a, b, c", from the mechanism table. */
static void local_mech_names(char *out, size_t cap)
{
    size_t n;
    const ldpb_mech_desc *const *t = ldpb_mech_table(&n);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!ldpb_mech_desc_scalar(t[i]))
            continue;
        if (out[0])
            strncat(out, ", ", cap - strlen(out) - 1);
        strncat(out, t[i]->name, cap - strlen(out) - 1);
    }
}

static ldpb_err set_string(char **slot, const char *value, char *reason)
{
    char *copy = strdup(value);
    if (!copy) {
        say(reason, "out of memory");
        return LDPB_ENOMEM;
    }
    free(*slot);
    *slot = copy;
    return LDPB_OK;
}

/* Parses `value` into `field`, the option's slot in an agg_config or an agg_exp_config (every
 * type but OPT_LIST, which is agg_config's alone). */
static ldpb_err parse_into(void *field, const option *o, const char *value, char *reason)
{
    switch (o->type) {
    case OPT_STR:
        if (value[0] == '\0') {
            say(reason, "%s: empty value", o->name);
            return LDPB_EINVAL;
        }
        return set_string((char **)field, value, reason);
    case OPT_LIST:
        break;
    case OPT_U64:
    case OPT_U32: {
        char *end;
        errno = 0;
        if (value[0] == '-' || value[0] == '+' || value[0] == '\0') {
            say(reason, "%s: '%s' is not a non-negative integer", o->name, value);
            return LDPB_EINVAL;
        }
        unsigned long long v = strtoull(value, &end, 10);
        if (*end != '\0') {
            say(reason, "%s: '%s' is not a non-negative integer", o->name, value);
            return LDPB_EINVAL;
        }
        if (errno == ERANGE || (double)v < o->min || (double)v > o->max) {
            say(reason, "%s: %s outside [%.0f, %.0f]", o->name, value, o->min, o->max);
            return LDPB_ERANGE;
        }
        if (o->type == OPT_U32)
            *(uint32_t *)field = (uint32_t)v; /* max <= UINT32_MAX (table) */
        else
            *(uint64_t *)field = v;
        return LDPB_OK;
    }
    case OPT_DBL: {
        for (const choice *c = o->choices; c && c->name; c++)
            if (strcmp(value, c->name) == 0) {
                *(double *)field = (double)c->value;
                return LDPB_OK;
            }
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (value[0] == '\0' || *end != '\0' || !isfinite(v)) {
            say(reason, "%s: '%s' is not a finite number", o->name, value);
            return LDPB_EINVAL;
        }
        int lo_ok = o->open_ends & OPEN_MIN ? v > o->min : v >= o->min;
        int hi_ok = o->open_ends & OPEN_MAX ? v < o->max : v <= o->max;
        if (!lo_ok || !hi_ok) {
            say(reason, "%s: %s outside %c%g, %g%c", o->name, value,
                o->open_ends & OPEN_MIN ? '(' : '[', o->min, o->max,
                o->open_ends & OPEN_MAX ? ')' : ']');
            return LDPB_ERANGE;
        }
        *(double *)field = v;
        return LDPB_OK;
    }
    case OPT_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "1") == 0) {
            *(int *)field = 1;
        } else if (strcmp(value, "false") == 0 || strcmp(value, "no") == 0 ||
                   strcmp(value, "0") == 0) {
            *(int *)field = 0;
        } else {
            say(reason, "%s: '%s' is not a boolean (true, false, yes, no, 1, 0)", o->name, value);
            return LDPB_EINVAL;
        }
        return LDPB_OK;
    case OPT_ENUM:
        for (const choice *c = o->choices; c->name; c++)
            if (strcmp(c->name, value) == 0) {
                *(int *)field = c->value;
                return LDPB_OK;
            }
        {
            char list[256] = "";
            for (const choice *c = o->choices; c->name; c++) {
                if (list[0])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
                strncat(list, c->name, sizeof list - strlen(list) - 1);
            }
            say(reason, "%s: '%s' is not one of %s", o->name, value, list);
        }
        return LDPB_EINVAL;
    case OPT_MECH: {
        const ldpb_mech_desc *d = ldpb_mech_desc_by_name(value);
        if (ldpb_mech_desc_scalar(d)) {
            *(int *)field = d->id;
            return LDPB_OK;
        }
        char list[256];
        local_mech_names(list, sizeof list);
        say(reason, "%s: '%s' is not one of %s", o->name, value, list);
        return LDPB_EINVAL;
    }
    }
    say(reason, "%s: bad option type", o->name);
    return LDPB_EINVAL;
}

static ldpb_err parse_value(agg_config *cfg, const option *o, const char *value, int replace_list,
                            char *reason)
{
    if (o->type != OPT_LIST)
        return parse_into((char *)cfg + o->offset, o, value, reason);
    if (value[0] == '\0') {
        say(reason, "%s: empty value", o->name);
        return LDPB_EINVAL;
    }
    if (replace_list) {
        for (size_t i = 0; i < cfg->n_listen; i++) {
            free(cfg->listen[i]);
            cfg->listen[i] = NULL;
        }
        cfg->n_listen = 0;
    }
    if (cfg->n_listen == AGG_LISTEN_MAX) {
        say(reason, "%s: more than %d URLs", o->name, AGG_LISTEN_MAX);
        return LDPB_ERANGE;
    }
    ldpb_err err = set_string(&cfg->listen[cfg->n_listen], value, reason);
    if (!err)
        cfg->n_listen++;
    return err;
}

void agg_config_init(agg_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (!options[i].def)
            continue;
        ldpb_err err = parse_value(cfg, &options[i], options[i].def, 0, NULL);
        (void)err; /* the defaults parse: test_config checks every default */
    }
}

void agg_config_fini(agg_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_listen; i++)
        free(cfg->listen[i]);
    free(cfg->state_dir);
    free(cfg->store);
    free(cfg->node_name);
    free(cfg->key);
    free(cfg->policy);
    free(cfg->allowlist);
    free(cfg->admin_list);
    free(cfg->metrics);
    free(cfg->config_path);
    free(cfg->export_csv);
    free(cfg->export_experiment);
    free(cfg->backup);
    for (size_t i = 0; i < cfg->n_exps; i++)
        agg_exp_config_fini(&cfg->exps[i]);
    free(cfg->exps);
    for (int i = 0; i < cfg->argc; i++)
        free(cfg->argv[i]);
    free(cfg->argv);
    free(cfg->config_file);
    memset(cfg, 0, sizeof *cfg);
}

/* ---- experiments ------------------------------------------------------------------------- */

_Static_assert(AGG_EXPERIMENT_NAME_MAX == LDPB_WIRE_EXPERIMENT_MAX, "one experiment name rule");

int agg_exp_name_valid(const char *name)
{
    return name && ldpb_wire_experiment_valid(name, strlen(name)); /* the wire's rule */
}

void agg_exp_config_fini(agg_exp_config *e)
{
    if (!e)
        return;
    free(e->policy);
    memset(e, 0, sizeof *e);
}

ldpb_err agg_exp_config_init(agg_exp_config *e)
{
    memset(e, 0, sizeof *e);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &options[i];
        if (o->scope == SCOPE_SERVICE || !o->def)
            continue;
        ldpb_err err = parse_into((char *)e + o->exp_offset, o, o->def, NULL);
        if (err) {
            agg_exp_config_fini(e);
            return err;
        }
    }
    return LDPB_OK;
}

ldpb_err agg_exp_config_copy(agg_exp_config *dst, const agg_exp_config *src)
{
    *dst = *src;
    dst->policy = NULL;
    if (src->policy && !(dst->policy = strdup(src->policy))) {
        memset(dst, 0, sizeof *dst);
        return LDPB_ENOMEM;
    }
    return LDPB_OK;
}

const agg_exp_config *agg_config_experiment(const agg_config *cfg, const char *name)
{
    if (!name || !name[0])
        name = AGG_DEFAULT_EXPERIMENT;
    for (size_t i = 0; i < cfg->n_exps; i++)
        if (strcmp(cfg->exps[i].name, name) == 0)
            return &cfg->exps[i];
    return NULL;
}

/* The experiment of the top-level fields, as a view: e->policy is cfg's, not a copy. */
static void default_view(const agg_config *cfg, agg_exp_config *e)
{
    memset(e, 0, sizeof *e);
    strcpy(e->name, AGG_DEFAULT_EXPERIMENT);
    e->policy = cfg->policy;
    e->mode = cfg->mode;
    e->params = cfg->params;
    e->ctx = cfg->ctx;
    e->decision_retention_s = cfg->decision_retention_s;
}

static ldpb_err exps_reserve(agg_config *cfg, char *reason)
{
    if (cfg->n_exps < cfg->exps_cap)
        return LDPB_OK;
    size_t cap = cfg->exps_cap ? cfg->exps_cap * 2 : 8;
    agg_exp_config *v = realloc(cfg->exps, cap * sizeof *v);
    if (!v) {
        say(reason, "out of memory");
        return LDPB_ENOMEM;
    }
    cfg->exps = v;
    cfg->exps_cap = cap;
    return LDPB_OK;
}

/* An experiment key at the top level (file or flag) declares "default", first in cfg->exps, or
 * updates it: its entry is kept a copy of the top-level fields, which older code reads. */
static ldpb_err sync_default(agg_config *cfg, const char *key, char *reason)
{
    if (!cfg->default_top) {
        const agg_exp_config *d = agg_config_experiment(cfg, AGG_DEFAULT_EXPERIMENT);
        if (d) {
            say(reason,
                "%s: the experiment 'default' is declared by [experiment default] (line %d): "
                "experiment keys at the top level would declare it a second time",
                key, d->config_line);
            return LDPB_EINVAL;
        }
        ldpb_err err = exps_reserve(cfg, reason);
        if (err)
            return err;
        memmove(cfg->exps + 1, cfg->exps, cfg->n_exps * sizeof *cfg->exps);
        memset(&cfg->exps[0], 0, sizeof cfg->exps[0]);
        cfg->n_exps++;
        cfg->default_top = 1;
    }
    agg_exp_config view, copy;
    default_view(cfg, &view);
    if (agg_exp_config_copy(&copy, &view) != LDPB_OK) {
        say(reason, "out of memory");
        return LDPB_ENOMEM;
    }
    agg_exp_config_fini(&cfg->exps[0]);
    cfg->exps[0] = copy;
    return LDPB_OK;
}

static const agg_policy_ops *policy_ops(const char *name)
{
    if (!name)
        return NULL;
    const agg_policy_ops *ops = agg_policy_find(name);
    return ops ? ops : agg_ctx_policy_find(name);
}

static void say_unknown_policy(char *err, const char *name)
{
    size_t n;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    char list[512] = "";
    for (size_t i = 0; i < n; i++) {
        if (list[0])
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, all[i]->name, sizeof list - strlen(list) - 1);
    }
    say(err, "policy: unknown policy '%s' (known: %s)", name ? name : "", list);
}

ldpb_err agg_exp_config_check(const agg_exp_config *e, int allow_nonprivate, char *err)
{
    if (!agg_exp_name_valid(e->name)) {
        say(err, "invalid experiment name '%.80s' (1 to %d of a-z, 0-9, '.', '_', '-')", e->name,
            AGG_EXPERIMENT_NAME_MAX);
        return LDPB_EINVAL;
    }
    if (e->params.k == 0) {
        say(err, "arms is required (--arms K, or arms = K in a section; K >= 2)");
        return LDPB_EINVAL;
    }
    const agg_policy_ops *ops = policy_ops(e->policy);
    if (!ops) {
        say_unknown_policy(err, e->policy);
        return LDPB_EINVAL;
    }
    static const int model_of_mode[] = {0, AGG_MODEL_LOCAL, AGG_MODEL_CENTRAL,
                                        AGG_MODEL_NONPRIVATE};
    if (e->mode < AGG_MODE_LOCAL || e->mode > AGG_MODE_NONPRIVATE) {
        say(err, "mode: %d is not a mode", e->mode);
        return LDPB_EINVAL;
    }
    if ((int)ops->model != model_of_mode[e->mode]) {
        const char *m = ops->model == AGG_MODEL_LOCAL     ? "local"
                        : ops->model == AGG_MODEL_CENTRAL ? "central"
                                                          : "nonprivate";
        say(err,
            "policy '%s' is a %s-model policy but mode is %s (set mode = %s or pick a %s "
            "policy)",
            e->policy, m, agg_mode_name(e->mode), m, agg_mode_name(e->mode));
        return LDPB_EINVAL;
    }
    if (e->mode == AGG_MODE_NONPRIVATE && !allow_nonprivate) {
        say(err, "mode nonprivate sends raw rewards to a non-private policy: it needs "
                 "allow_nonprivate = true (--allow-nonprivate)");
        return LDPB_EINVAL;
    }
    if (agg_ctx_policy_find(e->policy) &&
        (e->ctx.d == 0 || (uint64_t)e->ctx.d * e->params.k > LDPB_WIRE_CONTEXT_MAX)) {
        say(err,
            "policy '%s' needs d (--d D, the feature dimension) with arms x d <= %u (the "
            "features of every arm travel in one AssignRequest); arms %u, d %u",
            e->policy, LDPB_WIRE_CONTEXT_MAX, (unsigned)e->params.k, (unsigned)e->ctx.d);
        return LDPB_EINVAL;
    }
    if (e->mode == AGG_MODE_LOCAL) {
        /* Built here as every client will build it for an assignment: a mechanism no client can
         * build, or whose reports say nothing about the reward, is a configuration error and not
         * a daemon whose every assignment is refused or useless. */
        char detail[LDPB_MECH_DETAIL_BYTES];
        ldpb_err x = ldpb_mech_check_serviceable(e->params.mechanism, e->params.epsilon,
                                                 e->params.kappa, detail);
        if (x) {
            say(err, "%s; choose another epsilon or mechanism", detail);
            return x == LDPB_ENOMEM ? x : LDPB_ERANGE;
        }
    }
    return LDPB_OK;
}

/* Sets an experiment option of `e` from a section or a settings text; `seen` says which were
 * set already (each once). */
static ldpb_err exp_set(agg_exp_config *e, uint8_t *seen, const char *name, const char *value,
                        char *reason)
{
    size_t idx;
    const option *o = find_option(name, &idx);
    if (!o) {
        say(reason, "unknown option '%s'", name);
        return LDPB_EINVAL;
    }
    if (o->scope == SCOPE_SERVICE) {
        say(reason, "`%s` is a service setting, not an experiment's", name);
        return LDPB_EINVAL;
    }
    if (seen[idx]) {
        say(reason, "%s is set twice", name);
        return LDPB_EINVAL;
    }
    seen[idx] = 1;
    ldpb_err err = parse_into((char *)e + o->exp_offset, o, value, reason);
    /* A section is complete where it stands (no flag adds to it): its policy is known now. */
    if (!err && o->exp_offset == offsetof(agg_exp_config, policy) && !policy_ops(e->policy)) {
        say_unknown_policy(reason, e->policy);
        err = LDPB_EINVAL;
    }
    return err;
}

/* The shortest of %.15g, %.16g and %.17g that reads back to v, bit for bit (%.17g always does):
 * "0.1", not "0.10000000000000001", for whoever reads the settings. */
static int format_double(double v, char *buf, size_t cap)
{
    int n = -1;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, cap, "%.*g", prec, v);
        if (n < 0 || (size_t)n >= cap)
            return n;
        double back = strtod(buf, NULL);
        if (back == v && signbit(back) == signbit(v))
            return n;
    }
    return n;
}

/* The value of an experiment option as text that parse_into reads back to the same value; -1 if
 * there is none (a policy name that is not one word). */
static int format_value(const option *o, const void *field, char *buf, size_t cap)
{
    switch (o->type) {
    case OPT_STR: {
        const char *v = *(char *const *)field;
        if (!v || !v[0])
            return -1;
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == ';' || *p == '#')
                return -1;
        return snprintf(buf, cap, "%s", v);
    }
    case OPT_U32:
        return snprintf(buf, cap, "%" PRIu32, *(const uint32_t *)field);
    case OPT_U64:
        return snprintf(buf, cap, "%" PRIu64, *(const uint64_t *)field);
    case OPT_DBL: {
        double v = *(const double *)field;
        for (const choice *c = o->choices; c && c->name; c++)
            if (v == (double)c->value)
                return snprintf(buf, cap, "%s", c->name);
        return format_double(v, buf, cap);
    }
    case OPT_ENUM:
        for (const choice *c = o->choices; c && c->name; c++)
            if (c->value == *(const int *)field)
                return snprintf(buf, cap, "%s", c->name);
        return -1;
    case OPT_MECH: {
        const ldpb_mech_desc *d = ldpb_mech_desc_of(*(const int *)field);
        return d ? snprintf(buf, cap, "%s", d->name) : -1;
    }
    case OPT_BOOL:
    case OPT_LIST:
        break;
    }
    return -1;
}

static int same_value(const option *o, const void *a, const void *b)
{
    switch (o->type) {
    case OPT_STR: {
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        return x && y ? strcmp(x, y) == 0 : x == y;
    }
    case OPT_U32:
        return *(const uint32_t *)a == *(const uint32_t *)b;
    case OPT_U64:
        return *(const uint64_t *)a == *(const uint64_t *)b;
    case OPT_DBL:
        return *(const double *)a == *(const double *)b;
    case OPT_ENUM:
    case OPT_MECH:
    case OPT_BOOL:
        return *(const int *)a == *(const int *)b;
    case OPT_LIST:
        break;
    }
    return 0;
}

/* The indexes of the experiment options, sorted by name: the canonical text's order. */
static size_t sorted_exp_options(size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (options[i].scope == SCOPE_SERVICE)
            continue;
        size_t j = n++;
        for (; j > 0 && strcmp(options[idx[j - 1]].name, options[i].name) > 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
    return n;
}

size_t agg_exp_config_format(const agg_exp_config *e, char *buf, size_t cap)
{
    size_t idx[N_OPTIONS], n = sorted_exp_options(idx), len = 0;
    for (size_t i = 0; i < n; i++) {
        const option *o = &options[idx[i]];
        char v[96];
        int k = format_value(o, (const char *)e + o->exp_offset, v, sizeof v);
        if (k < 0 || (size_t)k >= sizeof v)
            return 0;
        int w = snprintf(buf + len, cap - len, "%s = %s\n", o->name, v);
        if (w < 0 || (size_t)w >= cap - len)
            return 0;
        len += (size_t)w;
    }
    return len;
}

/* Whether a change of option `o` touches what the running experiment promised its devices. */
static int is_privacy_key(const option *o, const agg_exp_config *running)
{
    if (o->privacy == PRIV_ALWAYS)
        return 1;
    if (o->privacy != PRIV_DP_READS || running->mode == AGG_MODE_NONPRIVATE)
        return 0;
    const agg_param_info *pi = agg_policy_param_find(o->name);
    if (pi) {
        const agg_policy_ops *ops = policy_ops(running->policy);
        return ops && (ops->params & pi->bit);
    }
    /* not a bandit parameter (delta): the contextual policies' */
    return agg_ctx_policy_find(running->policy) != NULL;
}

int agg_exp_config_change_refused(const agg_exp_config *running, const agg_exp_config *want,
                                  char *why)
{
    const option *priv = NULL, *other = NULL;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &options[i];
        if (o->scope != SCOPE_EXP || same_value(o, (const char *)running + o->exp_offset,
                                                (const char *)want + o->exp_offset))
            continue;
        if (!priv && is_privacy_key(o, running))
            priv = o;
        else if (!other)
            other = o;
    }
    const option *o = priv ? priv : other;
    if (!o)
        return 0;
    char from[96], to[96];
    if (format_value(o, (const char *)running + o->exp_offset, from, sizeof from) < 0)
        strcpy(from, "(unset)");
    if (format_value(o, (const char *)want + o->exp_offset, to, sizeof to) < 0)
        strcpy(to, "(unset)");
    if (priv)
        say(why,
            "experiment '%s': %s would change from %s to %s, a privacy setting its devices were "
            "promised; a running experiment's privacy settings cannot change: stop it and start "
            "one under a new name",
            running->name, o->name, from, to);
    else
        say(why,
            "experiment '%s': %s would change from %s to %s, but its stored state belongs to the "
            "learning problem it was started with (only decision_retention_s may change): stop it "
            "and start one under a new name",
            running->name, o->name, from, to);
    return 1;
}

ldpb_err agg_config_set(agg_config *cfg, const char *name, const char *value, int from_flag,
                        char *reason)
{
    size_t idx;
    const option *o = find_option(name, &idx);
    if (!o) {
        say(reason, "unknown option '%s'", name);
        return LDPB_EINVAL;
    }
    ldpb_err err;
    if (!from_flag) {
        if (cfg->set_by_file[idx] && o->type != OPT_LIST) {
            say(reason, "%s is set twice", name);
            return LDPB_EINVAL;
        }
        cfg->set_by_file[idx] = 1;
        err = parse_value(cfg, o, value, 0, reason);
    } else {
        /* The first --listen flag replaces the file's list; later ones extend it. */
        int replace = !cfg->set_by_flag[idx];
        cfg->set_by_flag[idx] = 1;
        err = parse_value(cfg, o, value, replace, reason);
    }
    if (!err && o->scope != SCOPE_SERVICE)
        err = sync_default(cfg, name, reason);
    return err;
}

/* "FILE:LINE: " of a section's experiment for messages ("" when not from a file). */
static void where_of(const agg_config *cfg, const agg_exp_config *e, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (e->config_line > 0)
        snprintf(buf, cap, "%s:%d: ", cfg->config_file ? cfg->config_file : "config",
                 e->config_line);
}

/* More experiments than experiments_max: named at the first one too many. */
static ldpb_err check_experiments_max(const agg_config *cfg, char *err)
{
    if (cfg->n_exps <= cfg->experiments_max)
        return LDPB_OK;
    const agg_exp_config *e = &cfg->exps[cfg->experiments_max];
    char where[AGG_CONFIG_ERRMAX / 2];
    where_of(cfg, e, where, sizeof where);
    say(err,
        "%sexperiment '%s': more than experiments_max = %" PRIu64 " experiments (%zu declared); "
        "raise experiments_max or remove some",
        where, e->name, cfg->experiments_max, cfg->n_exps);
    return LDPB_ERANGE;
}

/* Every experiment as agg_exp_config_check, the default one from the top-level fields (which
 * older code reads, whatever set them) with today's messages. */
static ldpb_err check_experiments(const agg_config *cfg, char *err)
{
    agg_exp_config view;
    if (cfg->n_exps == 0) {
        default_view(cfg, &view);
        ldpb_err e = agg_exp_config_check(&view, cfg->allow_nonprivate, err);
        if (e)
            return e;
        say(err, "no experiment: set the experiment options at the top level (arms, policy, ...) "
                 "or declare [experiment NAME] sections");
        return LDPB_EINVAL;
    }
    ldpb_err e = check_experiments_max(cfg, err);
    if (e)
        return e;
    for (size_t i = 0; i < cfg->n_exps; i++) {
        char why[AGG_CONFIG_ERRMAX], where[AGG_CONFIG_ERRMAX / 2];
        if (i == 0 && cfg->default_top) {
            default_view(cfg, &view);
            e = agg_exp_config_check(&view, cfg->allow_nonprivate, err);
            if (e)
                return e;
            continue;
        }
        e = agg_exp_config_check(&cfg->exps[i], cfg->allow_nonprivate, why);
        if (e) {
            where_of(cfg, &cfg->exps[i], where, sizeof where);
            say(err, "%sexperiment '%s': %s", where, cfg->exps[i].name, why);
            return e;
        }
    }
    return LDPB_OK;
}

/* ---- ini file ---------------------------------------------------------------------------- */

/* The parse of a configuration file (cfg) or of one experiment's settings text (one). inih is
 * read through ini_read_line, which follows the sections itself: inih cuts a section name at 50
 * bytes, tells the handler nothing of a section without keys, and gives it no line number. */
typedef struct ini_ctx {
    agg_config *cfg;     /* a file's, or */
    agg_exp_config *one; /* a settings text's */
    FILE *f;
    const char *text;
    int line;     /* lines handed to inih so far: the one it parses */
    int prev_key; /* the last line that was neither blank nor a comment held a key */
    long cur;     /* cfg->exps index of the open [experiment NAME], -1: top level */
    /* An unknown section is reported at its first key, as before experiments (or at its header
     * when it has none). */
    char bad_section[160];
    int bad_line;
    uint8_t seen[N_OPTIONS]; /* options set in the open section */
    uint32_t *names;         /* open addressing: cfg->exps index + 1, 0 = empty */
    size_t names_cap;        /* a power of two, at least twice cfg->n_exps */
    int failed, fail_line;
    ldpb_err err;
    char reason[AGG_CONFIG_ERRMAX];
} ini_ctx;

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (size_t)h;
}

static long names_find(const ini_ctx *c, const char *name)
{
    size_t m = c->names_cap - 1;
    for (size_t i = name_hash(name) & m;; i = (i + 1) & m) {
        uint32_t v = c->names[i];
        if (!v)
            return -1;
        if (strcmp(c->cfg->exps[v - 1].name, name) == 0)
            return (long)v - 1;
    }
}

static void names_insert(ini_ctx *c, size_t idx)
{
    size_t m = c->names_cap - 1, i = name_hash(c->cfg->exps[idx].name) & m;
    while (c->names[i])
        i = (i + 1) & m;
    c->names[i] = (uint32_t)idx + 1;
}

/* Rebuilds the table from cfg->exps, large enough for one more name. */
static ldpb_err names_rebuild(ini_ctx *c)
{
    size_t cap = 64;
    while (cap < 2 * (c->cfg->n_exps + 1))
        cap *= 2;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return LDPB_ENOMEM;
    free(c->names);
    c->names = t;
    c->names_cap = cap;
    for (size_t i = 0; i < c->cfg->n_exps; i++)
        names_insert(c, i);
    return LDPB_OK;
}

static void ini_fail(ini_ctx *c, int line, ldpb_err err)
{
    c->failed = 1;
    c->fail_line = line;
    c->err = err;
}

/* The open section ends: its combination is checked as agg_config_check will (except
 * allow_nonprivate, which a flag may still set) and reported at its header. */
static void say_bad_section(ini_ctx *c, int line)
{
    say(c->reason,
        "unknown section [%s] (keys go at the top, under [aggregator] or under "
        "[experiment NAME])",
        c->bad_section);
    ini_fail(c, line, LDPB_EINVAL);
}

static void section_end(ini_ctx *c)
{
    if (c->bad_line > 0) {
        say_bad_section(c, c->bad_line);
        return;
    }
    if (c->cur < 0)
        return;
    agg_exp_config *e = &c->cfg->exps[c->cur];
    char why[AGG_CONFIG_ERRMAX];
    ldpb_err err = agg_exp_config_check(e, 1, why);
    if (err) {
        say(c->reason, "experiment '%s': %s", e->name, why);
        ini_fail(c, e->config_line, err);
    }
    c->cur = -1;
}

/* A "[text]" line at c->line. */
static void section_begin(ini_ctx *c, const char *text)
{
    section_end(c);
    if (c->failed)
        return;
    memset(c->seen, 0, sizeof c->seen);
    if (!c->cfg) {
        say(c->reason, "[%s]: an experiment's settings are 'key = value' lines, without sections",
            text);
        ini_fail(c, c->line, LDPB_EINVAL);
        return;
    }
    if (strcmp(text, "aggregator") == 0)
        return;
    const char *p = text + strlen("experiment");
    if (strncmp(text, "experiment", strlen("experiment")) != 0 ||
        (*p && !isspace((unsigned char)*p))) {
        snprintf(c->bad_section, sizeof c->bad_section, "%s", text);
        c->bad_line = c->line;
        return;
    }
    while (isspace((unsigned char)*p))
        p++;
    char name[AGG_EXPERIMENT_NAME_MAX + 2];
    size_t n = strlen(p);
    while (n > 0 && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= sizeof name)
        n = sizeof name - 1; /* too long: refused below */
    memcpy(name, p, n);
    name[n] = '\0';
    if (!agg_exp_name_valid(name)) {
        say(c->reason, "invalid experiment name '%.*s' (1 to %d of a-z, 0-9, '.', '_', '-')",
            (int)strlen(p), p, AGG_EXPERIMENT_NAME_MAX);
        ini_fail(c, c->line, LDPB_EINVAL);
        return;
    }
    long dup = names_find(c, name);
    if (dup >= 0) {
        if (dup == 0 && c->cfg->default_top)
            say(c->reason, "duplicate experiment 'default': the top-level experiment keys "
                           "declare it already");
        else
            say(c->reason, "duplicate experiment '%s' (declared at line %d already)", name,
                c->cfg->exps[dup].config_line);
        ini_fail(c, c->line, LDPB_EINVAL);
        return;
    }
    if (c->cfg->n_exps >= AGG_EXPERIMENTS_LIMIT) {
        say(c->reason, "more than %d experiments", AGG_EXPERIMENTS_LIMIT);
        ini_fail(c, c->line, LDPB_ERANGE);
        return;
    }
    ldpb_err err = exps_reserve(c->cfg, c->reason);
    if (!err && 2 * (c->cfg->n_exps + 1) > c->names_cap)
        err = names_rebuild(c);
    agg_exp_config *e = &c->cfg->exps[c->cfg->n_exps];
    if (!err)
        err = agg_exp_config_init(e);
    if (err) {
        say(c->reason, "out of memory");
        ini_fail(c, c->line, err);
        return;
    }
    strcpy(e->name, name);
    e->config_line = c->line;
    c->cur = (long)c->cfg->n_exps++;
    names_insert(c, (size_t)c->cur);
}

/* Follows inih's reading of the line it is about to parse (ini.c of inih r55): blank lines and
 * comments change nothing, an indented line after a key continues its value, "[...]" opens a
 * section. */
static void ini_classify(ini_ctx *c, const char *line)
{
    const char *s = line;
    if (c->line == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3;
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0' || *p == '#' || *p == ';')
        return;
    if (c->prev_key && p > s)
        return;
    if (*p != '[') {
        c->prev_key = 1;
        return;
    }
    c->prev_key = 0;
    const char *q = p + 1;
    while (*q && *q != ']' && !(*q == ';' && isspace((unsigned char)q[-1])))
        q++;
    if (*q != ']')
        return; /* inih reports the line */
    char text[160];
    size_t n = (size_t)(q - p - 1);
    if (n >= sizeof text)
        n = sizeof text - 1;
    memcpy(text, p + 1, n);
    text[n] = '\0';
    section_begin(c, text);
}

/* inih's reader: fgets on the file, or the same on the text. */
static char *ini_read_line(char *str, int num, void *stream)
{
    ini_ctx *c = stream;
    if (c->failed || num < 2)
        return NULL; /* the first error ends the parse */
    if (c->f) {
        if (!fgets(str, num, c->f))
            return NULL;
    } else {
        if (!*c->text)
            return NULL;
        size_t n = 0;
        while (n < (size_t)num - 1 && c->text[n] && (n == 0 || c->text[n - 1] != '\n'))
            n++;
        memcpy(str, c->text, n);
        str[n] = '\0';
        c->text += n;
    }
    c->line++;
    ini_classify(c, str);
    return c->failed ? NULL : str;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
    ini_ctx *c = user;
    (void)section; /* ini_read_line follows the sections */
    if (c->failed)
        return 0;
    if (c->bad_line > 0) {
        say_bad_section(c, c->line);
        return 0;
    }
    ldpb_err err;
    if (c->one) {
        err = exp_set(c->one, c->seen, name, value, c->reason);
    } else if (c->cur >= 0) {
        err = exp_set(&c->cfg->exps[c->cur], c->seen, name, value, c->reason);
    } else {
        size_t before = c->cfg->n_exps;
        err = agg_config_set(c->cfg, name, value, 0, c->reason);
        if (!err && c->cfg->n_exps != before && names_rebuild(c) != LDPB_OK) {
            say(c->reason, "out of memory"); /* "default" went first: every index moved */
            err = LDPB_ENOMEM;
        }
    }
    if (err) {
        ini_fail(c, c->line, err);
        return 0;
    }
    return 1;
}

/* Runs inih over c's file or text. Returns 0, or the line of a syntax error that came before any
 * error of ours (c->failed, c->fail_line). */
static int ini_run(ini_ctx *c)
{
    c->cur = -1;
    int line = ini_parse_stream(ini_read_line, c, ini_handler_fn, c);
    if (line == 0 && !c->failed)
        section_end(c);
    if (line > 0 && c->failed && line >= c->fail_line)
        line = 0; /* ours: inih stopped at the handler's refusal */
    return line;
}

ldpb_err agg_exp_config_parse(agg_exp_config *out, const char *name, const char *text, char *err)
{
    memset(out, 0, sizeof *out);
    if (!agg_exp_name_valid(name)) {
        say(err, "invalid experiment name '%.80s' (1 to %d of a-z, 0-9, '.', '_', '-')",
            name ? name : "", AGG_EXPERIMENT_NAME_MAX);
        return LDPB_EINVAL;
    }
    ldpb_err e = agg_exp_config_init(out);
    if (e) {
        say(err, "out of memory");
        return e;
    }
    strcpy(out->name, name);
    ini_ctx c;
    memset(&c, 0, sizeof c);
    c.one = out;
    c.text = text ? text : "";
    int line = ini_run(&c);
    if (line > 0) {
        say(err, "line %d: syntax error (expected 'name = value' or a comment)", line);
        e = LDPB_EINVAL;
    } else if (line < 0) {
        say(err, "out of memory");
        e = LDPB_ENOMEM;
    } else if (c.failed) {
        say(err, "line %d: %s", c.fail_line, c.reason);
        e = c.err;
    } else {
        e = agg_exp_config_check(out, 1, err);
    }
    if (e)
        agg_exp_config_fini(out);
    return e;
}

/* Opens a configuration file for reading. O_NONBLOCK: a FIFO (or a device) is refused at once
 * instead of waiting for a writer; only a regular file is read. */
static FILE *open_regular(const char *path, char *err, ldpb_err *e)
{
    *e = LDPB_EIO;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        say(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    FILE *f = NULL;
    if (fstat(fd, &st) != 0) {
        say(err, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        say(err, "%s: not a regular file", path);
        *e = LDPB_EINVAL;
    } else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
               !(f = fdopen(fd, "r"))) {
        say(err, "%s: cannot open: %s", path, strerror(errno));
    }
    if (!f)
        close(fd);
    return f;
}

ldpb_err agg_config_load_file(agg_config *cfg, const char *path, char *err)
{
    ldpb_err open_err;
    FILE *f = open_regular(path, err, &open_err);
    if (!f)
        return open_err;
    ini_ctx c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg;
    c.f = f;
    ldpb_err e = set_string(&cfg->config_file, path, c.reason);
    if (!e)
        e = names_rebuild(&c);
    if (e) {
        fclose(f);
        free(c.names);
        say(err, "%s: cannot read (out of memory)", path);
        return LDPB_ENOMEM;
    }
    int line = ini_run(&c);
    int io_error = ferror(f);
    fclose(f);
    free(c.names);
    if (line > 0) {
        say(err, "%s:%d: syntax error (expected 'name = value', '[section]' or a comment)", path,
            line);
        return LDPB_EINVAL;
    }
    if (line < 0 || io_error) {
        say(err, "%s: cannot read (%s)", path, line == -2 ? "out of memory" : "I/O error");
        return line == -2 ? LDPB_ENOMEM : LDPB_EIO;
    }
    if (c.failed) {
        say(err, "%s:%d: %s", path, c.fail_line, c.reason);
        return c.err;
    }
    return LDPB_OK;
}

/* ---- command line ------------------------------------------------------------------------ */

/* "--state-dir" -> "state_dir" into buf; 0 if `arg` is not a long option that fits. */
static int flag_to_name(const char *arg, char *buf, size_t cap, const char **inline_value)
{
    *inline_value = NULL;
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
        return 0;
    const char *s = arg + 2;
    size_t n = 0;
    for (; *s && *s != '='; s++) {
        if (n + 1 >= cap)
            return 0;
        buf[n++] = *s == '-' ? '_' : *s;
    }
    buf[n] = '\0';
    if (*s == '=')
        *inline_value = s + 1;
    return 1;
}

/* Options handled by the command line alone (not in the file). */
typedef enum cli_only {
    CLI_NONE = 0,
    CLI_CONFIG,
    CLI_EXPORT,
    CLI_EXPORT_EXPERIMENT,
    CLI_BACKUP,
    CLI_HELP,
    CLI_VERSION,
    CLI_CHECK,
    CLI_NEW_STATE
} cli_only;

static cli_only cli_only_of(const char *name)
{
    if (strcmp(name, "config") == 0)
        return CLI_CONFIG;
    if (strcmp(name, "export_csv") == 0)
        return CLI_EXPORT;
    if (strcmp(name, "experiment") == 0)
        return CLI_EXPORT_EXPERIMENT;
    if (strcmp(name, "backup") == 0)
        return CLI_BACKUP;
    if (strcmp(name, "help") == 0)
        return CLI_HELP;
    if (strcmp(name, "version") == 0)
        return CLI_VERSION;
    if (strcmp(name, "check_config") == 0)
        return CLI_CHECK;
    /* Command line only, on purpose: a key in the config file would stay there and let every
     * later start replace a lost database without a word. */
    if (strcmp(name, "new_state") == 0)
        return CLI_NEW_STATE;
    return CLI_NONE;
}

static ldpb_err set_export_experiment(agg_config *cfg, const char *v, char *reason)
{
    if (!agg_exp_name_valid(v)) {
        say(reason,
            "experiment: invalid experiment name '%.80s' (1 to %d of a-z, 0-9, '.', '_', "
            "'-')",
            v, AGG_EXPERIMENT_NAME_MAX);
        return LDPB_EINVAL;
    }
    return set_string(&cfg->export_experiment, v, reason);
}

/* A copy of the command line in cfg, for a re-read (SIGHUP) with the same flags. */
static ldpb_err keep_args(agg_config *cfg, int argc, char **argv)
{
    for (int i = 0; i < cfg->argc; i++)
        free(cfg->argv[i]);
    free(cfg->argv);
    cfg->argc = 0;
    cfg->argv = calloc((size_t)(argc > 0 ? argc : 0) + 1, sizeof *cfg->argv);
    if (!cfg->argv)
        return LDPB_ENOMEM;
    for (; cfg->argc < argc; cfg->argc++)
        if (!(cfg->argv[cfg->argc] = strdup(argv[cfg->argc])))
            return LDPB_ENOMEM; /* agg_config_fini frees the copies made */
    return LDPB_OK;
}

ldpb_err agg_config_parse_args(agg_config *cfg, int argc, char **argv, char *err)
{
    char name[64], reason[AGG_CONFIG_ERRMAX];
    const char *inl;
    if (keep_args(cfg, argc, argv) != LDPB_OK) {
        say(err, "ldpb-aggregator: out of memory");
        return LDPB_ENOMEM;
    }
    /* Pass 1: --config, --help, --version (the file is loaded before any flag applies). */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0) {
            cfg->help = 1;
            continue;
        }
        if (!flag_to_name(argv[i], name, sizeof name, &inl))
            continue;
        cli_only c = cli_only_of(name);
        if (c == CLI_HELP)
            cfg->help = 1;
        else if (c == CLI_VERSION)
            cfg->version = 1;
        if (c != CLI_CONFIG)
            continue;
        const char *v = inl;
        if (!v) {
            if (i + 1 >= argc) {
                say(err, "ldpb-aggregator: --config needs a FILE");
                return LDPB_EINVAL;
            }
            v = argv[++i];
        }
        if (cfg->config_path) {
            say(err, "ldpb-aggregator: --config given twice");
            return LDPB_EINVAL;
        }
        ldpb_err e = set_string(&cfg->config_path, v, reason);
        if (e) {
            say(err, "ldpb-aggregator: %s", reason);
            return e;
        }
    }
    if (cfg->help || cfg->version)
        return LDPB_OK;
    if (cfg->config_path) {
        ldpb_err e = agg_config_load_file(cfg, cfg->config_path, reason);
        if (e) {
            say(err, "ldpb-aggregator: %s", reason);
            return e;
        }
    }
    /* Pass 2: every other flag, in order, over the file. A flag given twice is an error, as a
     * key twice in the file is: which one was meant is a guess (but --listen repeats). */
    unsigned char given[N_OPTIONS] = {0};
    for (int i = 1; i < argc; i++) {
        if (!flag_to_name(argv[i], name, sizeof name, &inl)) {
            say(err, "ldpb-aggregator: unexpected argument '%s' (see --help)", argv[i]);
            return LDPB_EINVAL;
        }
        cli_only c = cli_only_of(name);
        if (c == CLI_HELP || c == CLI_VERSION)
            continue;
        if (c == CLI_CHECK) {
            cfg->check = 1;
            continue;
        }
        if (c == CLI_NEW_STATE) {
            cfg->new_state = 1;
            continue;
        }
        size_t idx;
        const option *o = c == CLI_NONE ? find_option(name, &idx) : NULL;
        if (c == CLI_NONE && !o) {
            say(err, "ldpb-aggregator: unknown option '%s' (see --help)", argv[i]);
            return LDPB_EINVAL;
        }
        const char *v = inl;
        if (!v && o && o->type == OPT_BOOL)
            v = "true"; /* a bare boolean flag turns it on */
        if (!v) {
            if (i + 1 >= argc) {
                say(err, "ldpb-aggregator: %s needs a value", argv[i]);
                return LDPB_EINVAL;
            }
            v = argv[++i];
        }
        if (c == CLI_CONFIG)
            continue;
        if ((o && o->type != OPT_LIST && given[idx]++) || (c == CLI_EXPORT && cfg->export_csv) ||
            (c == CLI_EXPORT_EXPERIMENT && cfg->export_experiment)) {
            say(err, "ldpb-aggregator: --%s given twice", name);
            for (char *p = err + strlen("ldpb-aggregator: --"); *p && *p != ' '; p++)
                if (*p == '_')
                    *p = '-';
            return LDPB_EINVAL;
        }
        ldpb_err e;
        if (c == CLI_EXPORT)
            e = set_string(&cfg->export_csv, v, reason);
        else if (c == CLI_EXPORT_EXPERIMENT)
            e = set_export_experiment(cfg, v, reason);
        else if (c == CLI_BACKUP)
            e = set_string(&cfg->backup, v, reason);
        else
            e = agg_config_set(cfg, name, v, 1, reason);
        if (e) {
            say(err, "ldpb-aggregator: --%s", reason);
            for (char *p = err + strlen("ldpb-aggregator: --"); *p && *p != ':'; p++)
                if (*p == '_')
                    *p = '-';
            return e;
        }
    }
    /* Here, once the flags are in: --experiments-max may raise the file's limit. */
    ldpb_err e = check_experiments_max(cfg, reason);
    if (e)
        say(err, "ldpb-aggregator: %s", reason);
    return e;
}

ldpb_err agg_config_check(const agg_config *cfg, char *err)
{
    if (!cfg->state_dir) {
        say(err, "state_dir is required (--state-dir DIR)");
        return LDPB_EINVAL;
    }
    char store_err[AGG_STORE_ERRMAX];
    if (agg_store_check_url(cfg->store, store_err) != LDPB_OK) {
        say(err, "store: %s", store_err);
        return LDPB_EINVAL;
    }
    if (cfg->row_shards > 1 && strcmp(agg_store_scheme_of(cfg->store), "sqlite") != 0) {
        say(err,
            "row_shards = %" PRIu64 " needs the SQLite store: PostgreSQL keeps every row in "
            "its own database (give row_shards = 1, or leave it out)",
            cfg->row_shards);
        return LDPB_EINVAL;
    }
    if (cfg->node_name && !agg_store_node_name_valid(cfg->node_name)) {
        say(err, "node_name '%.80s': 1..%d characters of [A-Za-z0-9._-] expected", cfg->node_name,
            AGG_STORE_NODE_NAME_MAX);
        return LDPB_EINVAL;
    }
    if (cfg->export_csv && cfg->backup) {
        say(err, "--export-csv and --backup are separate runs: give one of them");
        return LDPB_EINVAL;
    }
    if (cfg->export_experiment && !cfg->export_csv) {
        say(err, "--experiment NAME selects what --export-csv writes: give --export-csv FILE");
        return LDPB_EINVAL;
    }
    if (cfg->export_csv || cfg->backup)
        return LDPB_OK; /* exporting and backing up need only the state */
    if (cfg->n_listen == 0) {
        say(err, "listen is required (--listen URL, repeatable)");
        return LDPB_EINVAL;
    }
    for (size_t i = 0; i < cfg->n_listen; i++) {
        char why[LDPB_DETAIL_BYTES] = "";
        if (!ldpb_tp_find(cfg->listen[i], why)) {
            say(err, "listen: %s", why);
            return LDPB_EINVAL;
        }
    }
    /* Parsed as the endpoint will parse it, so --check-config catches a typo; whether the
     * address can be bound is known only at start (exit 1 then). */
    if (cfg->metrics) {
        char why[AGG_CONFIG_ERRMAX];
        if (agg_metrics_check_addr(cfg->metrics, why) != LDPB_OK) {
            say(err, "metrics: %s", why);
            return LDPB_EINVAL;
        }
    }
    if (!cfg->key) {
        say(err, "key is required (--key FILE, a secret key from `ldpb keygen`)");
        return LDPB_EINVAL;
    }
    ldpb_err e = check_experiments(cfg, err);
    if (e)
        return e;
    if (cfg->auth == AGG_AUTH_ALLOWLIST && !cfg->allowlist) {
        say(err, "auth = allowlist needs allowlist = FILE");
        return LDPB_EINVAL;
    }
    if (cfg->auth == AGG_AUTH_OPEN && cfg->allowlist) {
        say(err, "allowlist is set but auth = open (set auth = allowlist to enforce it)");
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

#define HELP_WIDTH 96

/* Prints `text` from column `indent` (the cursor is there), wrapped at `width`. */
static void wrap(FILE *out, const char *text, int indent, int width)
{
    int col = indent;
    const char *p = text;
    while (*p) {
        const char *w = p;
        while (*p && *p != ' ')
            p++;
        int len = (int)(p - w);
        if (col > indent && col + 1 + len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(w, 1, (size_t)len, out);
        col += len;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

/* One option's lines of --help. */
static void help_option(FILE *out, const option *o)
{
    char flag[96], text[512];
    snprintf(flag, sizeof flag, "--%s", o->name);
    for (char *p = flag; *p; p++)
        if (*p == '_')
            *p = '-';
    if (o->arg)
        snprintf(flag + strlen(flag), sizeof flag - strlen(flag), " %s", o->arg);
    /* Which policies read a policy parameter comes from their ops tables, and which
     * mechanisms exist from the mechanism table, so the text cannot drift from the code. */
    const agg_param_info *pi = agg_policy_param_find(o->name);
    char extra[256] = "";
    if (o->type == OPT_MECH) {
        char list[200];
        local_mech_names(list, sizeof list);
        snprintf(extra, sizeof extra, " (%s)", list);
    } else if (pi) {
        char who[128];
        agg_policy_readers(pi->bit, who, sizeof who);
        snprintf(extra, sizeof extra, " (read by: %s)", who);
    }
    /* An integer's bounds are the parser's, so a value --help suggests is never refused
     * (queue_max below 16 was, unannounced); real options state theirs in their text. */
    char range[64] = "";
    if (o->type == OPT_U32 || o->type == OPT_U64)
        snprintf(range, sizeof range, "%s%.0f to %.0f", o->def ? "; " : "", o->min, o->max);
    snprintf(text, sizeof text, "%s%s%s%s%s%s", o->help, extra, o->def || range[0] ? " [" : "",
             o->def ? "default: " : "", o->def ? o->def : "", range);
    if (o->def || range[0])
        strncat(text, "]", sizeof text - strlen(text) - 1);
    fprintf(out, "  %-24s ", flag);
    if (strlen(flag) > 24)
        fprintf(out, "\n%27s", "");
    wrap(out, text, 27, HELP_WIDTH);
}

void agg_config_help(FILE *out)
{
    fputs("usage: ldpb-aggregator [--config FILE] [OPTIONS]\n"
          "       ldpb-aggregator --export-csv FILE [--experiment NAME] --state-dir DIR\n"
          "       ldpb-aggregator --backup FILE --state-dir DIR\n"
          "\n"
          "The ldpb aggregator service: answers assignment and report requests on nanomsg\n"
          "URLs, keeps its state durable in SQLite (WAL) under the state directory, or in\n"
          "PostgreSQL (--store postgresql://...), and acks a\n"
          "report only once it is committed. SIGTERM or SIGINT drain and exit 0.\n"
          "\n"
          "Every option can be set in the config file as `name = value` and overridden on the\n"
          "command line as `--name VALUE` (with '-' for '_'). docs/aggregator.example.conf is a\n"
          "commented example; docs/aggregator.md the manual.\n"
          "\n"
          "Command line only:\n"
          "  --config FILE            read options from FILE (ini: name = value, '#' or ';'\n"
          "                           comments)\n"
          "  --export-csv FILE        write the propensity log of --state-dir to FILE ('-' for\n"
          "                           stdout; a file is written whole, mode 0600, or not at all)\n"
          "                           and exit; reads the state only, beside a running daemon too\n"
          "  --experiment NAME        with --export-csv: only that experiment's decisions (all of\n"
          "                           them without it)\n"
          "  --backup FILE            copy the state of --state-dir, consistent even while the\n"
          "                           daemon runs, to the new database FILE (mode 0600; it must\n"
          "                           not exist) and exit; to restore, make it aggregator.db of\n"
          "                           an empty state directory (a state with row_shards > 1 is\n"
          "                           copied into this one database: restore it with\n"
          "                           row_shards = 1)\n"
          "  --check-config           validate the options, the key, the allow-list, the store\n"
          "                           and the state's version and meta, writing nothing, then\n"
          "                           exit\n"
          "  --new-state              begin a new state where state_dir's aggregator.db is\n"
          "                           missing or empty but its state_id file remains (a lost\n"
          "                           database); without it such a start is refused (exit 2),\n"
          "                           since a new state would count again every report acked\n"
          "                           before; refused where a state exists. Assignments of the\n"
          "                           old state are refused (unknown assignment)\n"
          "  --help, -h               this text\n"
          "  --version                the version\n"
          "\n"
          "Experiments: one service runs many. The experiment options below, at the top of the\n"
          "file (or under [aggregator]) or as flags, declare the experiment `default`, the one\n"
          "of every request that names none (a single-experiment configuration). Each section\n"
          "  [experiment NAME]\n"
          "declares one more (NAME: 1 to 64 of a-z 0-9 . _ -), with experiment options only; an\n"
          "option it does not set takes its built-in default, not the top-level value. A file\n"
          "with sections and no top-level experiment option has no `default`. At most\n"
          "experiments_max experiments. A running experiment's options never change except\n"
          "decision_retention_s: stop it and start one under a new name.\n"
          "\n"
          "Service options (file key / flag, default; top level or [aggregator] only):\n",
          out);
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (options[i].scope == SCOPE_SERVICE)
            help_option(out, &options[i]);
    fputs("\nExperiment options (file key / flag, default; also the keys of [experiment NAME]):\n",
          out);
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (options[i].scope != SCOPE_SERVICE)
            help_option(out, &options[i]);
}
