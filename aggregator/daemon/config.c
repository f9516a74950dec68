/* The option table and the three things generated from it: the ini handler, the flag parser and
 * the --help text. Adding an option is one table row plus one struct field. */
#include <errno.h>
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

#define OFF(f)   offsetof(agg_config, f)
#define OPEN_MIN 1
#define OPEN_MAX 2

/* clang-format off */
static const option options[] = {
    {"listen", OPT_LIST, OFF(listen), NULL, 0, 0, 0, NULL, "URL",
     "URL to serve on, nanomsg's REQ/REP wire (ipc://PATH, tcp://HOST:PORT); repeat for several, "
     "each with its own listener (required)"},
    {"state_dir", OPT_STR, OFF(state_dir), NULL, 0, 0, 0, NULL, "DIR",
     "directory of the SQLite state (created if missing) (required)"},
    {"store", OPT_STR, OFF(store), "sqlite:", 0, 0, 0, NULL, "URL",
     "where the state is kept: sqlite: (state_dir/aggregator.db) or postgresql://... (a "
     "PostgreSQL database, libpq's URI; state_dir still holds the lock, the state_id marker and "
     "the replay log)"},
    {"key", OPT_STR, OFF(key), NULL, 0, 0, 0, NULL, "FILE",
     "the aggregator's secret key file, from `ldpb keygen` (mode 0600) (required)"},
    {"arms", OPT_U32, OFF(params.k), NULL, 2, AGG_POLICY_K_MAX, 0, NULL, "K",
     "number of arms (required)"},
    {"policy", OPT_STR, OFF(policy), "ldp-ts-b", 0, 0, 0, NULL, "NAME",
     "bandit policy, a name of `ldpb sim` (local: ldp-ts-b, ldp-ucb-b, ldp-ucb-l, ldp-se, "
     "ldp-exp3-lap; central: dp-ucb, dp-ucb-bound, dp-se, dp-exp3-lap; nonprivate: ucb1, ts, se, "
     "exp3, exp3-tau, linucb; contextual central: jdp-linucb-wishart, jdp-linucb-gaussian; "
     "contextual local: ldp-linucb-gaussian); it must belong to the mode"},
    {"mechanism", OPT_MECH, OFF(params.mechanism), "linear", 0, 0, 0, NULL, "M",
     "local mode: the clients' mechanism"},
    {"epsilon", OPT_DBL, OFF(params.epsilon), "1", 0, LDPB_EPSILON_MAX, OPEN_MIN, NULL, "E",
     "local mode: per-report epsilon put in every assignment; central mode: the policy's "
     "epsilon; (0, 10]"},
    {"kappa", OPT_DBL, OFF(params.kappa), "0.5", -1, 1, 0, NULL, "X",
     "quadratic mechanism curvature, [-1, 1]"},
    {"mode", OPT_ENUM, OFF(mode), "local", 0, 0, 0, mode_choices, "MODE",
     "privacy model: local, central or nonprivate"},
    {"allow_nonprivate", OPT_BOOL, OFF(allow_nonprivate), "false", 0, 0, 0, NULL, NULL,
     "allow mode = nonprivate (clients then send raw rewards to a non-private policy)"},
    {"horizon", OPT_U64, OFF(params.horizon), "0", 0, 4611686018427387904.0, 0, NULL, "T",
     "the horizon T; 0 = unknown (dp-ucb refuses it, se and ldp-se need it for beta = 0, dp-se "
     "then runs the doubling schedule)"},
    {"beta", OPT_DBL, OFF(params.beta), "0", 0, 1, OPEN_MAX, NULL, "B",
     "confidence parameter beta in (0, 1); 0 = 1/horizon (2^-j in phase j of dp-se's doubling)"},
    {"gamma", OPT_DBL, OFF(params.gamma), "0", 0, 1, OPEN_MAX, NULL, "G",
     "dp-ucb failure probability, EXP3 exploration rate; in (0, 1), 0 = from the horizon"},
    {"eps_arm", OPT_DBL, OFF(params.eps_arm), "0", 0, 1e6, 0, NULL, "E",
     "per-arm tree budget, at most epsilon (a larger one is refused); 0 = epsilon"},
    {"tau", OPT_U64, OFF(params.tau), "0", 0, 4611686018427387904.0, 0, NULL, "N",
     "block length in rounds, in [1, horizon]; 0 = ceil(horizon^(1/3))"},
    {"threshold", OPT_DBL, OFF(params.threshold), "0", 0, 1e300, 0, threshold_names, "B",
     "half-width b of the accepted noisy gains [-b, 1 + b], > 0; 0 = ln(horizon)/epsilon; "
     "bound-min = the b that minimises the regret bound (docs/derivations.md)"},
    {"d", OPT_U32, OFF(ctx.d), "0", 0, AGG_LINUCB_D_MAX, 0, NULL, "D",
     "contextual policies (linucb, jdp-linucb-*): the feature dimension, arms x d <= 256 "
     "(required by them)"},
    {"delta", OPT_DBL, OFF(ctx.delta), "0.1", 0, 1, OPEN_MIN | OPEN_MAX, NULL, "D",
     "jdp-linucb-*: the joint-DP delta, in (0, 1); ldp-linucb-gaussian: each report's delta, (0, 0.1]"},
    {"alpha", OPT_DBL, OFF(ctx.alpha), "0", 0, 1, OPEN_MAX, NULL, "A",
     "contextual policies: failure probability of the confidence sets, (0, 1); 0 = 1/horizon"},
    {"feature_norm", OPT_DBL, OFF(ctx.L), "1", 0, 1e6, OPEN_MIN, NULL, "L",
     "contextual policies: bound L on every arm's feature norm; longer rows are refused"},
    {"theta_norm", OPT_DBL, OFF(ctx.S), "1", 0, 1e6, OPEN_MIN, NULL, "S",
     "contextual policies: bound S on the norm of the unknown parameter theta"},
    {"noise_sigma", OPT_DBL, OFF(ctx.sigma), "1", 0, 1e6, OPEN_MIN, NULL, "S",
     "contextual policies: sub-Gaussian parameter of the reward noise"},
    {"reward_bound", OPT_DBL, OFF(ctx.B), "1", 0, 1e6, OPEN_MIN, NULL, "B",
     "ldp-linucb-gaussian: devices clip rewards to [-B, B] before privatizing their statistics"},
    {"rho", OPT_DBL, OFF(ctx.rho), "1", 0, 1e6, OPEN_MIN, NULL, "R",
     "linucb: the ridge regulariser (the JDP variants derive theirs from the noise)"},
    {"workers", OPT_U64, OFF(workers), "1", 1, 64, 0, NULL, "N",
     "worker threads receiving and answering requests"},
    {"repliers", OPT_U64, OFF(repliers), "0", 0, 64, 0, NULL, "N",
     "threads sealing and sending the answers of committed reports (0: the committer does)"},
    {"batch_max", OPT_U64, OFF(batch_max), "4096", 1, 1000000, 0, NULL, "N",
     "most queued reports and decisions committed in one transaction"},
    {"queue_max", OPT_U64, OFF(queue_max), "65536", 16, 4194304, 0, NULL, "N",
     "reports waiting for their commit; beyond it reports are refused with LDPB_EBUSY"},
    {"assignment_ttl_s", OPT_U64, OFF(assignment_ttl_s), "600", 1, 2592000, 0, NULL, "S",
     "seconds an assignment accepts its report"},
    {"propensity_samples", OPT_U64, OFF(propensity_samples), "16", 0, 4096, 0, NULL, "N",
     "ts / ldp-ts-b: extra posterior draws to estimate an assignment's propensity (0: log 1)"},
    {"auth", OPT_ENUM, OFF(auth), "open", 0, 0, 0, auth_choices, "open|allowlist",
     "which client keys are served"},
    {"allowlist", OPT_STR, OFF(allowlist), NULL, 0, 0, 0, NULL, "FILE",
     "auth = allowlist: file of client public keys, one key-file line each ('#' comments)"},
    {"replay_window_s", OPT_U64, OFF(replay_window_s), "300", 1, 86400, 0, NULL, "S",
     "accepted clock difference of a request; its nonce is remembered this long"},
    {"replay_entries", OPT_U64, OFF(replay_entries), "1048576", 1, 67108864, 0, NULL, "N",
     "nonces remembered at once (40 bytes each); when full, the oldest are forgotten and "
     "the accepted clock difference narrows"},
    {"keycache_entries", OPT_U64, OFF(keycache_entries), "65536", 1, 16777216, 0, NULL, "N",
     "clients whose precomputed key is cached"},
    {"key_derivations_per_s", OPT_U64, OFF(key_derivations_per_s), "1000", 0, 1000000, 0, NULL,
     "N", "key derivations (X25519, ~60 us each) per second for client keys not cached; frames "
     "beyond it are refused with LDPB_EBUSY; cached keys are never limited; 0 = unlimited"},
    {"metrics", OPT_STR, OFF(metrics), NULL, 0, 0, 0, NULL, "HOST:PORT",
     "serve Prometheus text metrics over HTTP at http://HOST:PORT/metrics (off if unset)"},
    {"log_level", OPT_ENUM, OFF(log_level), "info", 0, 0, 0, level_choices, "LEVEL",
     "error, warn, info or debug; logs go to stderr"},
    {"decision_retention_s", OPT_U64, OFF(decision_retention_s), "604800", 0, 3153600000.0, 0,
     NULL, "S",
     "the propensity log keeps a decision this many seconds past its assignment's expiry"},
    {"decision_rows_max", OPT_U64, OFF(decision_rows_max), "1000000", 1, 1e15, 0, NULL, "N",
     "most decisions the propensity log keeps (about 190 bytes each on disk); the oldest go "
     "first"},
    {"min_free_mb", OPT_U64, OFF(min_free_mb), "32", 0, 1e12, 0, NULL, "MB",
     "below this much free space in state_dir (MiB) no assignment is issued (clients get "
     "LDPB_EBUSY) until it returns; 0: no check"},
    {"error_log_interval_s", OPT_U64, OFF(error_log_interval_s), "10", 0, 86400, 0, NULL, "S",
     "a repeating error (a failing commit) is logged once per this many seconds, with the "
     "count of the ones not logged; 0: log each"},
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

static ldpb_err parse_value(agg_config *cfg, const option *o, const char *value, int replace_list,
                            char *reason)
{
    void *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STR:
        if (value[0] == '\0') {
            say(reason, "%s: empty value", o->name);
            return LDPB_EINVAL;
        }
        return set_string((char **)field, value, reason);
    case OPT_LIST: {
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
    free(cfg->key);
    free(cfg->policy);
    free(cfg->allowlist);
    free(cfg->metrics);
    free(cfg->config_path);
    free(cfg->export_csv);
    free(cfg->backup);
    memset(cfg, 0, sizeof *cfg);
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
    if (!from_flag) {
        if (cfg->set_by_file[idx] && o->type != OPT_LIST) {
            say(reason, "%s is set twice", name);
            return LDPB_EINVAL;
        }
        cfg->set_by_file[idx] = 1;
        return parse_value(cfg, o, value, 0, reason);
    }
    /* The first --listen flag replaces the file's list; later ones extend it. */
    int replace = !cfg->set_by_flag[idx];
    cfg->set_by_flag[idx] = 1;
    return parse_value(cfg, o, value, replace, reason);
}

/* ---- ini file ---------------------------------------------------------------------------- */

typedef struct ini_ctx {
    agg_config *cfg;
    int failed;
    ldpb_err err;
    char reason[AGG_CONFIG_ERRMAX];
} ini_ctx;

static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
    ini_ctx *c = user;
    if (c->failed)
        return 0; /* only the first error is reported; inih reports its line */
    ldpb_err err;
    if (section[0] != '\0' && strcmp(section, "aggregator") != 0) {
        say(c->reason, "unknown section [%s] (keys go at the top or under [aggregator])", section);
        err = LDPB_EINVAL;
    } else {
        err = agg_config_set(c->cfg, name, value, 0, c->reason);
    }
    if (err) {
        c->failed = 1;
        c->err = err;
        return 0;
    }
    return 1;
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
    ini_ctx c = {cfg, 0, LDPB_OK, ""};
    int line = ini_parse_file(f, ini_handler_fn, &c);
    fclose(f);
    if (line == 0)
        return LDPB_OK;
    if (line < 0) {
        say(err, "%s: cannot read (%s)", path, line == -2 ? "out of memory" : "I/O error");
        return line == -2 ? LDPB_ENOMEM : LDPB_EIO;
    }
    if (c.failed) {
        say(err, "%s:%d: %s", path, line, c.reason);
        return c.err;
    }
    say(err, "%s:%d: syntax error (expected 'name = value', '[section]' or a comment)", path, line);
    return LDPB_EINVAL;
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

ldpb_err agg_config_parse_args(agg_config *cfg, int argc, char **argv, char *err)
{
    char name[64], reason[AGG_CONFIG_ERRMAX];
    const char *inl;
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
        if ((o && o->type != OPT_LIST && given[idx]++) || (c == CLI_EXPORT && cfg->export_csv)) {
            say(err, "ldpb-aggregator: --%s given twice", name);
            for (char *p = err + strlen("ldpb-aggregator: --"); *p && *p != ' '; p++)
                if (*p == '_')
                    *p = '-';
            return LDPB_EINVAL;
        }
        ldpb_err e;
        if (c == CLI_EXPORT)
            e = set_string(&cfg->export_csv, v, reason);
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
    return LDPB_OK;
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
    if (cfg->export_csv && cfg->backup) {
        say(err, "--export-csv and --backup are separate runs: give one of them");
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
    if (cfg->params.k == 0) {
        say(err, "arms is required (--arms K, K >= 2)");
        return LDPB_EINVAL;
    }
    const agg_policy_ops *ops = agg_policy_find(cfg->policy);
    if (!ops)
        ops = agg_ctx_policy_find(cfg->policy);
    if (!ops) {
        size_t n;
        const agg_policy_ops *const *all = agg_policy_all(&n);
        char list[512] = "";
        for (size_t i = 0; i < n; i++) {
            if (list[0])
                strncat(list, ", ", sizeof list - strlen(list) - 1);
            strncat(list, all[i]->name, sizeof list - strlen(list) - 1);
        }
        say(err, "policy: unknown policy '%s' (known: %s)", cfg->policy, list);
        return LDPB_EINVAL;
    }
    static const int model_of_mode[] = {0, AGG_MODEL_LOCAL, AGG_MODEL_CENTRAL,
                                        AGG_MODEL_NONPRIVATE};
    if ((int)ops->model != model_of_mode[cfg->mode]) {
        const char *m = ops->model == AGG_MODEL_LOCAL     ? "local"
                        : ops->model == AGG_MODEL_CENTRAL ? "central"
                                                          : "nonprivate";
        say(err,
            "policy '%s' is a %s-model policy but mode is %s (set mode = %s or pick a %s "
            "policy)",
            cfg->policy, m, agg_mode_name(cfg->mode), m, agg_mode_name(cfg->mode));
        return LDPB_EINVAL;
    }
    if (cfg->mode == AGG_MODE_NONPRIVATE && !cfg->allow_nonprivate) {
        say(err, "mode nonprivate sends raw rewards to a non-private policy: it needs "
                 "allow_nonprivate = true (--allow-nonprivate)");
        return LDPB_EINVAL;
    }
    if (agg_ctx_policy_find(cfg->policy) &&
        (cfg->ctx.d == 0 || (uint64_t)cfg->ctx.d * cfg->params.k > LDPB_WIRE_CONTEXT_MAX)) {
        say(err,
            "policy '%s' needs d (--d D, the feature dimension) with arms x d <= %u (the "
            "features of every arm travel in one AssignRequest); arms %u, d %u",
            cfg->policy, LDPB_WIRE_CONTEXT_MAX, (unsigned)cfg->params.k, (unsigned)cfg->ctx.d);
        return LDPB_EINVAL;
    }
    if (cfg->mode == AGG_MODE_LOCAL) {
        /* Built here as every client will build it for an assignment: a mechanism no client can
         * build, or whose reports say nothing about the reward, is a configuration error and not
         * a daemon whose every assignment is refused or useless. */
        char detail[LDPB_MECH_DETAIL_BYTES];
        ldpb_err e = ldpb_mech_check_serviceable(cfg->params.mechanism, cfg->params.epsilon,
                                                 cfg->params.kappa, detail);
        if (e) {
            say(err, "%s; choose another epsilon or mechanism", detail);
            return e == LDPB_ENOMEM ? e : LDPB_ERANGE;
        }
    }
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

void agg_config_help(FILE *out)
{
    fputs("usage: ldpb-aggregator [--config FILE] [OPTIONS]\n"
          "       ldpb-aggregator --export-csv FILE --state-dir DIR\n"
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
          "  --backup FILE            copy the state of --state-dir, consistent even while the\n"
          "                           daemon runs, to the new database FILE (mode 0600; it must\n"
          "                           not exist) and exit; to restore, make it aggregator.db of\n"
          "                           an empty state directory\n"
          "  --check-config           validate the options, the key, the allow-list and the\n"
          "                           state (created if missing), then exit\n"
          "  --new-state              begin a new state where state_dir's aggregator.db is\n"
          "                           missing or empty but its state_id file remains (a lost\n"
          "                           database); without it such a start is refused (exit 2),\n"
          "                           since a new state would count again every report acked\n"
          "                           before; refused where a state exists. Assignments of the\n"
          "                           old state are refused (unknown assignment)\n"
          "  --help, -h               this text\n"
          "  --version                the version\n"
          "\n"
          "Options (file key / flag, default):\n",
          out);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option *o = &options[i];
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
}
