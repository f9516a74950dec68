/* libldpb-sim: the research side of ldpb as a library of its own, for `ldpb sim`, the Python
 * package (python/, docs/python.md) and any other program that drives experiments:
 *   - ldpb_sim_*     run a preset or a custom instance of `ldpb sim` and read the regret curves
 *                    (the same numbers as the command for the same seed: it calls this API);
 *   - ldpb_policy_*  every K-armed policy of the engine step by step (choose, observe, save,
 *                    restore), for researchers who bring their own environment;
 *   - ldpb_ctxpolicy_* the contextual ones (linucb, jdp-linucb-*, ldp-linucb-gaussian), likewise;
 *   - ldpb_audit_*   the empirical privacy audit of `ldpb audit` on a production mechanism.
 * The mechanisms, generators and the client are in libldpb-client (ldpb/ldpb.h). Handles are
 * opaque and not thread-safe; distinct handles may be used from distinct threads. Nothing here
 * prints or exits. The library turns GSL's abort-on-error handler off (gsl_set_error_handler_off)
 * in ldpb_sim_run and ldpb_audit_mech, as `ldpb sim` and `ldpb audit` do: every GSL status is
 * checked instead. */
#ifndef LDPB_SIM_H
#define LDPB_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI of this header, for a loader to check (1 for this version). */
#define LDPB_SIM_ABI_VERSION 1
LDPB_API unsigned ldpb_sim_abi_version(void);

/* ------------------------------------------------------------------------------ simulation */

typedef struct ldpb_sim ldpb_sim;

/* A batch with no option set: ldpb_sim_set the preset (or means/laws and algorithms) first. */
LDPB_API ldpb_err ldpb_sim_new(ldpb_sim **out);

/* Accepts NULL. */
LDPB_API void ldpb_sim_free(ldpb_sim *sim);

/* Sets option `name` to the text `value` (copied; NULL unsets it), exactly as `ldpb sim --NAME
 * VALUE` would (docs/sim.md): preset, means, laws, algorithms, mechanisms, epsilons, k, horizon,
 * trials, kappa, gamma, eps-arm, tau, threshold, poison-fraction, poison-strategy, gaps
 * (sajed2019-nas only), seed
 * (default "1": every simulation is seeded, the noise is simulated, never a secret) and threads
 * (default: the online CPUs; the results do not depend on it). The values are checked by
 * ldpb_sim_run. LDPB_EINVAL for NULL or an unknown name, LDPB_ESTATE after ldpb_sim_run,
 * LDPB_ENOMEM. */
LDPB_API ldpb_err ldpb_sim_set(ldpb_sim *sim, const char *name, const char *value);

/* Progress during ldpb_sim_run, from the thread that called it: rounds and runs (configuration
 * x trial) done, and the estimated share of the batch's cost done, in [0, 1]. */
typedef struct ldpb_sim_progress {
    uint64_t rounds_done, rounds_total, runs_done, runs_total;
    double work_done;
} ldpb_sim_progress;
typedef void (*ldpb_sim_progress_fn)(void *ctx, const ldpb_sim_progress *p);
LDPB_API void ldpb_sim_set_progress(ldpb_sim *sim, ldpb_sim_progress_fn fn, void *ctx);

/* Builds the plan from the options (cheap: nothing runs). Errors: LDPB_EINVAL or LDPB_ERANGE for
 * options `ldpb sim` refuses (the message says which), LDPB_ENOTSUP for the smith2013-* presets
 * (`ldpb sim` only), LDPB_ESTATE when called twice, LDPB_ENOMEM. The message of any error is
 * ldpb_sim_errmsg. shariff2018 takes horizon, trials, algorithms and epsilons and gives regret
 * curves like the others; sajed2019-nas takes trials, algorithms, epsilons and gaps and gives a
 * table (ldpb_sim_table) instead of curves. */
LDPB_API ldpb_err ldpb_sim_prepare(ldpb_sim *sim);

/* Runs every configuration x trial of the plan (preparing it first if needed, with the errors
 * above). Errors besides those: LDPB_ESTATE when called twice or after a failed
 * ldpb_sim_prepare, LDPB_ENOMEM, or the engine's error ("simulation failed: ..."). */
LDPB_API ldpb_err ldpb_sim_run(ldpb_sim *sim);

/* One line on the last error, or "". Owned by the handle. */
LDPB_API const char *ldpb_sim_errmsg(const ldpb_sim *sim);

/* The results after a successful ldpb_sim_run (0 / NULL before): the configurations (one row
 * group of regret.csv each), trials, the checkpoints t (the `t` column), and the wall time. */
LDPB_API size_t ldpb_sim_n_configs(const ldpb_sim *sim);
LDPB_API uint64_t ldpb_sim_trials(const ldpb_sim *sim);
LDPB_API uint64_t ldpb_sim_horizon(const ldpb_sim *sim);
LDPB_API size_t ldpb_sim_checkpoints(const ldpb_sim *sim, const uint64_t **t);
LDPB_API double ldpb_sim_seconds(const ldpb_sim *sim);

/* A configuration as regret.csv names it. Strings are owned by the handle. */
typedef struct ldpb_sim_config_info {
    const char *preset;    /* the instance: "jiang2023", "ren2020-bern", "custom", ... */
    const char *algorithm; /* "ucb1", "ldp-ts-b", "dp-se", ... */
    const char *mechanism; /* "linear", ..., or "none" */
    const char *epsilon;   /* "1", "0.5", or "inf" for a non-private policy */
    double epsilon_value;  /* INFINITY for "inf" */
    uint32_t k;
    const char *model; /* "local", "central" or "nonprivate" */
    const char *title; /* the instance in words, for plots */
} ldpb_sim_config_info;
LDPB_API ldpb_err ldpb_sim_config(const ldpb_sim *sim, size_t c, ldpb_sim_config_info *out);

/* Configuration c's cumulative pseudo-regret of every trial at every checkpoint, trial-major:
 * [trial * n_checkpoints + j]. NULL before the run or for c out of range. */
LDPB_API const double *ldpb_sim_regret(const ldpb_sim *sim, size_t c);

/* Configuration c's curve as regret.csv has it: the mean across trials and its Student-t 95%
 * interval at each checkpoint (n_checkpoints values each). LDPB_ERANGE for c out of range,
 * LDPB_ESTATE before the run. */
LDPB_API ldpb_err ldpb_sim_curve(const ldpb_sim *sim, size_t c, const double **mean,
                                 const double **ci_low, const double **ci_high);

/* sajed2019-nas, after a successful ldpb_sim_run: the text of the CSV file `ldpb sim` writes for
 * the same options and seed (byte for byte), and its name ("stopping.csv") in *file_name (may be
 * NULL). NULL for the presets with regret curves (their accessors above are 0 / NULL for it).
 * Owned by the handle. */
LDPB_API const char *ldpb_sim_table(const ldpb_sim *sim, const char **file_name);

/* The preset names `ldpb sim --preset` accepts, in its --help order (NULL past the end), and
 * whether ldpb_sim_run runs the preset (1) or only `ldpb sim` does (0). */
LDPB_API const char *ldpb_sim_preset_name(size_t i);
LDPB_API int ldpb_sim_preset_runnable(const char *name);

/* ------------------------------------------------------------------------ policies, by step */

typedef struct ldpb_policy ldpb_policy;

/* A policy's parameters; ldpb_policy_params_init fills the defaults of the daemon's config and
 * `ldpb sim` (docs/aggregator.md lists which policy reads which). */
typedef struct ldpb_policy_params {
    uint32_t k;       /* arms, >= 2 */
    uint64_t horizon; /* T; 0 if unknown (the policies that need it refuse) */
    double epsilon;   /* LDP per-report epsilon or central epsilon (default 1) */
    int mechanism;    /* local policies: the clients' ldpb_mech_kind (default linear) */
    double kappa;     /* quadratic curvature (default 0.5) */
    double beta;      /* SE family confidence; 0 means 1/T */
    double gamma;     /* dp-ucb failure probability / EXP3 exploration rate; 0: default */
    double eps_arm;   /* dp-ucb per-arm budget; 0 means epsilon */
    uint64_t tau;     /* exp3-tau block length; 0 means ceil(T^(1/3)) */
    double threshold; /* (l)dp-exp3-lap acceptance half-width; 0 means ln(T)/epsilon */
} ldpb_policy_params;

LDPB_API void ldpb_policy_params_init(ldpb_policy_params *p);

/* The policy called `name` ("ucb1", "ts", "ldp-ts-b", "dp-se", "exp3", ...). Its tie breaks and
 * its central-DP noise come from the system's secure generator, or, when `seed` is not NULL,
 * from a generator seeded with that text: for simulations only (reproducible, not secret). On
 * an error *out is NULL and errmsg (when not NULL, errlen bytes) says why: LDPB_EINVAL for an
 * unknown name, LDPB_ERANGE for a parameter the policy refuses, LDPB_ENOMEM. */
LDPB_API ldpb_err ldpb_policy_new(ldpb_policy **out, const char *name,
                                  const ldpb_policy_params *params, const char *seed, char *errmsg,
                                  size_t errlen);

/* Accepts NULL. */
LDPB_API void ldpb_policy_free(ldpb_policy *p);

/* The arm to play next. LDPB_ESTATE where the policy cannot choose (e.g. past its horizon). */
LDPB_API ldpb_err ldpb_policy_choose(ldpb_policy *p, uint32_t *arm);

/* Observes `obs` for `arm`: the raw reward in [0, 1] for non-private and central policies, the
 * privatized report (the mechanism's output) for local ones. LDPB_EINVAL for an arm >= k, a
 * non-finite value or one the policy's model cannot produce (the daemon's admissibility rule:
 * a bit for the Bernoulli mechanisms); a policy may refuse with its own code (LDPB_ESTATE past
 * its horizon). */
LDPB_API ldpb_err ldpb_policy_observe(ldpb_policy *p, uint32_t arm, double obs);

/* As ldpb_policy_observe, for an observation whose choice had probability `prob` in (0, 1]
 * (a delayed report of an importance-weighted policy); the others ignore prob. */
LDPB_API ldpb_err ldpb_policy_observe_with_propensity(ldpb_policy *p, uint32_t arm, double obs,
                                                      double prob);

/* The exact probability of the last choice. LDPB_ENOTSUP for a policy that cannot say,
 * LDPB_ESTATE before any choice. */
LDPB_API ldpb_err ldpb_policy_propensity(const ldpb_policy *p, double *prob);

/* The state as bytes (the daemon's format): with buf NULL or cap too small, LDPB_ERANGE and *len
 * the size needed. ldpb_policy_restore replaces the state of a policy created with the same
 * name and parameters; LDPB_ECORRUPT for bytes that are not such a state. The generator is not
 * part of the state. */
LDPB_API ldpb_err ldpb_policy_save(const ldpb_policy *p, uint8_t *buf, size_t cap, size_t *len);
LDPB_API ldpb_err ldpb_policy_restore(ldpb_policy *p, const uint8_t *buf, size_t len);

/* Per-arm state: pulls counted, the estimate of the mean on [0, 1] and an interval where the
 * policy has them (NaN otherwise), and 0 once eliminated. */
typedef struct ldpb_policy_arm {
    uint64_t pulls;
    double estimate, ci_low, ci_high;
    int active;
} ldpb_policy_arm;
LDPB_API ldpb_err ldpb_policy_describe(const ldpb_policy *p, ldpb_policy_arm *arms, uint32_t k);

LDPB_API uint32_t ldpb_policy_k(const ldpb_policy *p);
LDPB_API const char *ldpb_policy_name(const ldpb_policy *p);
/* "local", "central" or "nonprivate". */
LDPB_API const char *ldpb_policy_model(const ldpb_policy *p);

/* The policy names, in the registry's order (NULL past the end), and the model of one
 * (NULL for an unknown name). */
LDPB_API const char *ldpb_policy_name_at(size_t i);
LDPB_API const char *ldpb_policy_model_of(const char *name);

/* ------------------------------------------------------------- contextual policies, by step */

/* The contextual policies of the engine (docs/aggregator.md, "Contextual policies"), driven by a
 * caller that owns the environment: every round brings n actions' feature vectors (n x d,
 * row-major) and the policy learns from the chosen one's vector and reward.
 *   linucb               non-private LinUCB (ridge rho)
 *   jdp-linucb-wishart   joint-DP LinUCB, Wishart tree noise (Shariff & Sheffet 2018, sec. 4.1)
 *   jdp-linucb-gaussian  joint-DP LinUCB, Gaussian tree noise (SS18 sec. 4.2), the served grid
 *                        release with exact discrete Gaussian nodes, as the daemon runs it
 *   ldp-linucb-gaussian  the local contextual mode: choose() is the device's step (the model the
 *                        aggregator hands out, loaded into ldpb_ctxmodel), observe() privatizes
 *                        (x, y) as a device does (ldpb_ctxstat) and adds the report, and
 *                        ldpb_ctxpolicy_privatize / ldpb_ctxpolicy_add_report split those two
 *                        steps for a caller that brings its own devices' reports. */
typedef struct ldpb_ctxpolicy ldpb_ctxpolicy;

/* The parameters, with the daemon's names and defaults (docs/aggregator.md). */
typedef struct ldpb_ctxpolicy_params {
    uint32_t d;       /* feature dimension, >= 1 (required; at most 64, 32 for ldp-*) */
    uint64_t horizon; /* rounds (reports for ldp-*), >= 1 (required) */
    double epsilon;   /* JDP epsilon (jdp-*), each report's epsilon (ldp-*); default 1 */
    double delta;     /* JDP delta in (0, 1) (jdp-*), each report's delta (ldp-*, (0, 0.1]);
                         default 0.1 */
    double alpha;     /* failure probability of the confidence sets; 0 (default) means 1/horizon */
    double L;         /* bound on every action's norm (longer rows are refused); default 1 */
    double B;         /* ldp-*: devices clip rewards to [-B, B]; default 1 */
    double S;         /* bound on ||theta*||; default 1 */
    double sigma;     /* sub-Gaussian parameter of the reward noise; default 1 */
    double rho;       /* linucb's ridge regulariser; default 1 */
} ldpb_ctxpolicy_params;

LDPB_API void ldpb_ctxpolicy_params_init(ldpb_ctxpolicy_params *p);

/* The contextual policy called `name` (above). Tie breaks, tree noise and the device noise of
 * ldp-* come from the system's secure generator, or, when `seed` is not NULL, from one generator
 * seeded with that text (simulations only). Errors as ldpb_policy_new: LDPB_EINVAL for an unknown
 * name, LDPB_ERANGE (or LDPB_EINVAL) for a parameter the policy refuses, with its message. */
LDPB_API ldpb_err ldpb_ctxpolicy_new(ldpb_ctxpolicy **out, const char *name,
                                     const ldpb_ctxpolicy_params *params, const char *seed,
                                     char *errmsg, size_t errlen);
/* Accepts NULL. */
LDPB_API void ldpb_ctxpolicy_free(ldpb_ctxpolicy *p);

/* Chooses among n_actions rows of x (n_actions x d, row-major, finite, each of norm <= L): the
 * largest optimistic index, exact ties broken at random; *ties (may be NULL) gets the number of
 * rows that attained it (the choice's propensity is 1/ties). LDPB_EINVAL for NULL or non-finite
 * values, LDPB_ERANGE for n_actions out of range (0, or above 65536) or a row
 * longer than L. */
LDPB_API ldpb_err ldpb_ctxpolicy_choose(ldpb_ctxpolicy *p, const double *x, uint32_t n_actions,
                                        uint32_t *arm, uint32_t *ties);

/* Observes the chosen row x_arm (d values) and its reward y (finite). ldp-*: the statistics of
 * (x_arm, y) are privatized with the policy's generator, as a device would, and added. LDPB_ESTATE
 * after `horizon` observations, LDPB_EINVAL / LDPB_ERANGE as choose. */
LDPB_API ldpb_err ldpb_ctxpolicy_observe(ldpb_ctxpolicy *p, const double *x_arm, double y);

/* ldp-* only (LDPB_ENOTSUP otherwise): the values one report carries
 * ((d + 1)(d + 2)/2, ldpb/ctxstat.h's packing), the device step (privatize (x, y) into
 * out[ldpb_ctxpolicy_report_len]) and the aggregator step (add a report z of n values:
 * LDPB_EPROTO for one ldpb_ctxstat_check refuses, LDPB_ESTATE after `horizon` reports). observe()
 * is privatize then add_report. */
LDPB_API size_t ldpb_ctxpolicy_report_len(const ldpb_ctxpolicy *p);
LDPB_API ldpb_err ldpb_ctxpolicy_privatize(ldpb_ctxpolicy *p, const double *x, double y,
                                           double *out);
LDPB_API ldpb_err ldpb_ctxpolicy_add_report(ldpb_ctxpolicy *p, const double *z, size_t n);

/* The state as bytes (the formats of linucb.h and ldp_linucb.h, as the daemon keeps them inside
 * its own): LDPB_ERANGE with *len the size needed when buf is NULL or cap too small. restore
 * replaces the state of a policy created with the same name and parameters; LDPB_ECORRUPT for
 * bytes that are not one. The generator is not part of the state. */
LDPB_API ldpb_err ldpb_ctxpolicy_save(const ldpb_ctxpolicy *p, uint8_t *buf, size_t cap,
                                      size_t *len);
LDPB_API ldpb_err ldpb_ctxpolicy_restore(ldpb_ctxpolicy *p, const uint8_t *buf, size_t len);

/* Observations (reports for ldp-*) counted so far. */
LDPB_API uint64_t ldpb_ctxpolicy_rounds(const ldpb_ctxpolicy *p);
LDPB_API uint32_t ldpb_ctxpolicy_d(const ldpb_ctxpolicy *p);
LDPB_API const char *ldpb_ctxpolicy_name(const ldpb_ctxpolicy *p);
/* "local", "central" or "nonprivate". */
LDPB_API const char *ldpb_ctxpolicy_model(const ldpb_ctxpolicy *p);
/* The names, in the order above (NULL past the end), and the model of one (NULL if unknown). */
LDPB_API const char *ldpb_ctxpolicy_name_at(size_t i);
LDPB_API const char *ldpb_ctxpolicy_model_of(const char *name);

/* ---------------------------------------------------------------------------------- audit */

/* The verdict of `ldpb audit` (docs/audit.md) on a production mechanism. */
typedef struct ldpb_audit_result {
    int pass; /* privacy_ok && fidelity_ok && support_ok */
    int privacy_ok, fidelity_ok, support_ok;
    double eps_lower; /* the largest lower confidence bound on the privacy loss */
    uint64_t samples; /* draws per input, as run */
    double alpha;     /* family-wise false-FAIL probability, as run */
    size_t n_inputs;
    size_t fidelity_failures;
    uint64_t off_support;
    double miss;       /* bound on PASSing a mechanism at 1.1 x epsilon; NaN if none */
    char verdict[512]; /* the command's last line: "PASS: linear eps=1 ..." */
} ldpb_audit_result;

/* Audits the production `mechanism` ("linear", "quadratic", "exponential", "laplace") at
 * `epsilon` (quadratic: curvature `kappa`, NaN for the default) with `samples` draws per input
 * (0: the command's default) at family-wise level `alpha` (0: the default 1e-9). Noise from the
 * system's secure generator, or, when `seed` is not NULL, from the generator `ldpb audit
 * --seed SEED` uses: the same verdict line for the same arguments. A FAIL is not an error: it is
 * in out->pass. Errors: LDPB_EINVAL / LDPB_ERANGE for arguments the command refuses (errmsg
 * says which), LDPB_ENOMEM. */
LDPB_API ldpb_err ldpb_audit_mech(const char *mechanism, double epsilon, double kappa,
                                  uint64_t samples, double alpha, const char *seed,
                                  ldpb_audit_result *out, char *errmsg, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
