/* The run plan of `ldpb sim`: turns the command line's texts (a preset and its overrides, or a
 * custom instance) into environments, configurations in their fixed CSV order, and the
 * checkpoints; the paper presets (docs/sim.md) live here. Everything is validated before
 * anything runs, with one precise message (docs/sim.md lists the rules). */
#ifndef LDPB_TOOLS_SIM_PLAN_H
#define LDPB_TOOLS_SIM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "ldpb/err.h"
#include "ldpb/mech.h"
#include "policy.h"
#include "sim.h"

/* Bounds on the numeric options: anything beyond them is a typo, not an experiment. */
#define SIMPLAN_HORIZON_MAX    1000000000000ULL /* 10^12 rounds */
#define SIMPLAN_TRIALS_MAX     1000000ULL
#define SIMPLAN_CONFIGS_MAX    4096u
#define SIMPLAN_PER_DECADE     20u /* checkpoints per factor of 10 */
#define SIMPLAN_DEFAULT_SEED   "1"
#define SIMPLAN_DEFAULT_OUT    "sim-out"
#define SIMPLAN_CUSTOM_HORIZON 100000ULL
#define SIMPLAN_CUSTOM_TRIALS  50ULL
#define SIMPLAN_CUSTOM_EPS     "1"
#define SIMPLAN_ERRMSG_MAX     320

/* The texts of the options that shape the plan; NULL when not given. */
typedef struct simplan_opts {
    const char *preset;
    const char *means;
    const char *laws;
    const char *algorithms;
    const char *mechanisms;
    const char *epsilons;
    const char *ks;
    const char *horizon;
    const char *trials;
    const char *kappa;
    const char *gamma;
    const char *eps_arm;
    const char *tau;       /* exp3-tau's block length */
    const char *threshold; /* (l)dp-exp3-lap's acceptance half-width b */
} simplan_opts;

/* One environment: the `preset` column value, K, and a title for plots and reports. */
typedef struct simplan_instance {
    char label[48];  /* "jiang2023", "ren2020-bern", "sajed2019-c3", "custom" */
    char title[200]; /* "20 arms, mixed laws (JZL23 / RZLS20 instance)" */
    char source[64]; /* provenance: "Sajed & Sheffet 2019, sec. 5" */
    agg_env *env;    /* owned; NULL for an adversarial game */
    agg_adv *adv;    /* owned; NULL for a stochastic environment */
    uint32_t k;
    int bernoulli; /* every arm Bernoulli: the Lai-Robbins shape uses the Bernoulli KL */
} simplan_instance;

/* One configuration, one row group of regret.csv and one row of summary.csv. */
typedef struct simplan_config {
    size_t instance;
    const agg_policy_ops *ops; /* ops->name is the CSV algorithm, ops->model its privacy model */
    ldpb_mech_kind mechanism;  /* 0 ("none") unless LOCAL */
    double epsilon;            /* INFINITY when NONPRIVATE */
    char eps_text[32];         /* the CSV epsilon: shortest round-trip decimal, or "inf" */
} simplan_config;

typedef struct simplan {
    char preset[32]; /* the preset name, or "custom" */
    int is_custom;
    simplan_instance *inst;
    size_t n_inst;
    simplan_config *cfg;
    size_t n_cfg;
    uint64_t horizon;
    uint64_t trials;
    /* Plan-wide values of the agg_policy_config fields (policy.h) of every configuration. */
    double kappa;
    double beta;      /* the SE family's confidence: 1/T (as SS19 sec. 5) */
    double gamma;     /* dp-ucb's failure probability; 0: the policy's default 1/T */
    double eps_arm;   /* dp-ucb's per-arm budget; 0: the policy's default, epsilon */
    uint64_t tau;     /* --tau; 0: exp3-tau's default ceil(T^(1/3)) */
    double threshold; /* --threshold; 0: (l)dp-exp3-lap's default ln(T)/epsilon */
    uint64_t *checkpoints;
    size_t n_checkpoints;
    uint64_t rounds_total; /* configurations x trials x horizon */
} simplan;

/* One entry of the preset table, for --help and the docs. */
typedef struct simplan_preset_info {
    const char *name;
    const char *summary; /* several lines, each indented by the caller */
} simplan_preset_info;

const simplan_preset_info *simplan_presets(size_t *count);

/* Builds the plan from the option texts. Usage errors (unknown names, values out of range,
 * conflicting options, a configuration the policy refuses) return LDPB_EINVAL or LDPB_ERANGE with
 * one line in errmsg naming the option, the value and the allowed range; LDPB_ENOMEM. On error
 * the plan is left empty (simplan_fini is still safe). */
ldpb_err simplan_build(simplan *plan, const simplan_opts *opts, char errmsg[SIMPLAN_ERRMSG_MAX]);

void simplan_fini(simplan *plan);

/* Fills out[0..n_cfg-1] (caller-allocated) with the engine configurations, borrowing the plan's
 * environments and checkpoints: central noise is AGG_NOISE_FAST (simulation only). */
void simplan_sim_configs(const simplan *plan, agg_sim_config *out);

/* The CSV mechanism name of a configuration: "linear", ..., or "none". */
const char *simplan_mech_name(const simplan_config *c);

/* The privacy level EXP3-tau attains with tau = ceil(T^(1/3)) and delta' = 1/T, by advanced
 * composition of its per-block loss 1/tau over T/tau blocks (Tossou & Dimitrakakis 2017, Thm 3.5
 * as instantiated in docs/sim.md): (1/tau) sqrt(2 (T/tau) ln T) + (T/tau)(1/tau)(e^(1/tau) - 1).
 * The tossou2017 presets run dp-exp3-lap at this epsilon (TD17 Sec. 4). */
double simplan_td17_epsilon(uint64_t horizon);

/* Parses a count the way --horizon and --trials accept it: decimal digits, or a decimal in
 * scientific notation that is a whole number ("1e5", "5e7", "2.5e6"); no sign, no hex, no
 * blanks. Values beyond 2^63 come back as UINT64_MAX, for the caller's range check. Returns NULL
 * and sets *out on success, else the problem in words. */
const char *simplan_parse_count(const char *text, uint64_t *out);

/* Formats a finite double as the shortest "%.*g" text that reads back as the same value
 * ("0.1", "0.25", "2"); "inf" for +infinity. */
void simplan_format_double(char *dst, size_t cap, double v);

/* The environment in env.h's list syntax (runs of equal laws as '*N'), snprintf-style: writes at
 * most cap bytes (cap may be 0) and returns the length the whole text needs. */
size_t simplan_env_text(const agg_env *env, char *dst, size_t cap);

/* Formats a count compactly for titles and reports: "1e5", "5e7", "2.5e6" when that is exact
 * and at least 1000, else the digits. */
void simplan_format_count(char *dst, size_t cap, uint64_t v);

#endif
