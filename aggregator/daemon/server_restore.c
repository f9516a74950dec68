/* Opening the state with its experiments (server_internal.h): the configuration's experiments
 * against the stored ones, each restored with its state and counters, in one pass over one query
 * (agg_store_experiments), and every change the start makes to the experiments' rows (new rows,
 * resumed or stopped ones, a changed retention) in one transaction. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_policy.h"
#include "server_internal.h"
#include "server_seq.h"

/* What a start changes in the experiments' rows. */
typedef enum exp_change { CH_NONE, CH_ADD, CH_RUN, CH_STOP, CH_SETTINGS } exp_change;

typedef struct restore_ctx {
    agg_server *s;
    const agg_config *cfg;
    uint8_t *seen;  /* per cfg->exps: stored */
    char *settings; /* a scratch buffer for agg_exp_config_format */
} restore_ctx;

int exp_change_refused(const agg_exp_config *running, const agg_exp_config *want, char *why)
{
    agg_exp_config w = *want; /* shallow: only numbers change below */
    const agg_policy_ops *ops = agg_ctx_policy_find(want->policy);
    if (!ops)
        ops = agg_policy_find(want->policy);
    if (ops && running->policy && strcmp(running->policy, want->policy) == 0) {
        /* A parameter the policy does not read cannot change what the state means (as the
         * meta of a version 1 state always compared): take the running value. */
        unsigned reads = agg_policy_reads(ops, &want->params);
        const agg_policy_config *rp = &running->params;
        if (!(reads & AGG_PARAM_HORIZON))
            w.params.horizon = rp->horizon;
        if (!(reads & AGG_PARAM_EPSILON))
            w.params.epsilon = rp->epsilon;
        if (!(reads & AGG_PARAM_MECHANISM))
            w.params.mechanism = rp->mechanism;
        if (!(reads & AGG_PARAM_KAPPA))
            w.params.kappa = rp->kappa;
        if (!(reads & AGG_PARAM_BETA))
            w.params.beta = rp->beta;
        if (!(reads & AGG_PARAM_GAMMA))
            w.params.gamma = rp->gamma;
        if (!(reads & AGG_PARAM_EPS_ARM))
            w.params.eps_arm = rp->eps_arm;
        if (!(reads & AGG_PARAM_TAU))
            w.params.tau = rp->tau;
        if (!(reads & AGG_PARAM_THRESHOLD))
            w.params.threshold = rp->threshold;
    }
    return agg_exp_config_change_refused(running, &w, why);
}

/* Builds experiment `ec` (from_config as given), registers it and returns it; `errmsg` says why
 * not. */
static ldpb_err build(agg_server *s, const agg_exp_config *ec, int from_config,
                      agg_experiment **out, char *errmsg)
{
    agg_experiment *e = NULL;
    ldpb_err err = agg_experiment_new(&e, ec, s->seed_rng, errmsg);
    if (err)
        return err;
    e->from_config = from_config;
    err = agg_registry_add(&s->exps, e);
    if (err) {
        say(errmsg, "experiment %s: cannot register it (%s)", ec->name, ldpb_strerror(err));
        agg_experiment_free(e);
        return err;
    }
    if (strcmp(ec->name, AGG_EXPERIMENT_DEFAULT) == 0)
        s->def = e;
    *out = e;
    return LDPB_OK;
}

/* Whether the settings texts of a and b are equal. */
static int same_text(restore_ctx *x, const agg_exp_config *a, const agg_exp_config *b)
{
    char *tb = x->settings + AGG_EXP_SETTINGS_MAX;
    size_t la = agg_exp_config_format(a, x->settings, AGG_EXP_SETTINGS_MAX);
    size_t lb = agg_exp_config_format(b, tb, AGG_EXP_SETTINGS_MAX);
    return la && la == lb && memcmp(x->settings, tb, la) == 0;
}

/* One stored experiment: compared with its declaration if the configuration has one (another
 * learning problem or privacy setting is refused: LDPB_ESTATE), else built from its stored
 * settings; then restored. *change says what its row needs. */
static ldpb_err restore_one(restore_ctx *x, const agg_store_exp *st, exp_change *change,
                            char *errmsg)
{
    agg_server *s = x->s;
    const agg_exp_config *want = NULL;
    for (size_t i = 0; i < x->cfg->n_exps && !want; i++)
        if (strcmp(x->cfg->exps[i].name, st->name) == 0) {
            want = &x->cfg->exps[i];
            x->seen[i] = 1;
        }
    agg_exp_config stored;
    char why[AGG_CONFIG_ERRMAX] = "";
    ldpb_err err = agg_exp_config_parse(&stored, st->name, st->settings, why);
    if (err) {
        say(errmsg, "experiment %s: the stored settings do not parse (%s)", st->name, why);
        return LDPB_ECORRUPT;
    }
    *change = CH_NONE;
    if (want && exp_change_refused(&stored, want, why)) {
        say(errmsg,
            "experiment %s: the configuration changes a running experiment's settings, which "
            "is refused: %s",
            st->name, why);
        agg_exp_config_fini(&stored);
        return LDPB_ESTATE;
    }
    if (want && !same_text(x, &stored, want))
        *change = CH_SETTINGS; /* the retention, or a parameter the policy does not read */
    agg_experiment *e = NULL;
    err = build(s, want ? want : &stored, want ? 1 : st->from_config, &e, errmsg);
    agg_exp_config_fini(&stored);
    if (err)
        return err;
    e->store_id = st->id;
    err = agg_cluster_may_serve(s, e, st, errmsg);
    if (err)
        return err;
    err = agg_experiment_restore(e, st->state, st->state_len, &st->counters);
    if (err) {
        say(errmsg, "experiment %s: the stored policy state does not restore (%s)", st->name,
            ldpb_strerror(err));
        return err;
    }
    atomic_store(&e->running, st->running);
    if (want && !st->running) {
        *change = CH_RUN; /* declared again, with equal settings: it resumes */
        atomic_store(&e->running, 1);
    } else if (!want && st->from_config && st->running) {
        *change = CH_STOP; /* no longer declared: stopped, its state kept */
        atomic_store(&e->running, 0);
    }
    return LDPB_OK;
}

/* The rows the start changes, in one transaction. */
static ldpb_err write_changes(restore_ctx *x, const exp_change *changes, agg_experiment **which,
                              size_t n, char *errmsg)
{
    agg_server *s = x->s;
    if (x->cfg->check)
        return LDPB_OK; /* --check-config writes nothing: a start records these */
    ldpb_err err = agg_store_begin(s->store);
    for (size_t i = 0; i < n && !err; i++) {
        agg_experiment *e = which[i];
        if (changes[i] == CH_RUN || changes[i] == CH_STOP)
            err = agg_store_set_running(s->store, e->store_id, changes[i] == CH_RUN);
        if (changes[i] == CH_SETTINGS || changes[i] == CH_ADD) {
            if (!agg_exp_config_format(&e->ec, x->settings, AGG_EXP_SETTINGS_MAX)) {
                say(errmsg, "experiment %s: settings too long to store", e->ec.name);
                err = LDPB_ERANGE;
                break;
            }
        }
        if (!err && changes[i] == CH_SETTINGS)
            err = agg_store_set_settings(s->store, e->store_id, x->settings);
        if (!err && changes[i] == CH_ADD)
            err = agg_store_add_experiment(s->store, e->ec.name, x->settings, 1, &e->store_id);
    }
    if (!err)
        err = agg_store_commit(s->store);
    if (err) {
        if (!errmsg[0])
            say(errmsg, "state_dir %s: cannot record the experiments: %s", x->cfg->state_dir,
                agg_store_errmsg(s->store));
        agg_store_rollback(s->store);
    }
    return err;
}

ldpb_err reload_states(agg_server *s)
{
    agg_store_exp *v = NULL;
    size_t n = 0;
    ldpb_err err = agg_store_experiments(s->store, &v, &n);
    for (size_t i = 0; i < n && !err; i++) {
        agg_experiment *e = agg_registry_find(&s->exps, v[i].name);
        if (!e || !v[i].state)
            continue;                 /* another node's new experiment; or none of it committed */
        e->committed = v[i].counters; /* before the merge, which adds the others' versions */
        if (e->cl) {
            err = agg_cluster_reload(s, e, v[i].state, v[i].state_len);
        } else {
            pthread_mutex_lock(&e->policy_mu);
            err = agg_policy_restore(e->policy, v[i].state, v[i].state_len);
            if (!err)
                e->policy_version = v[i].counters.policy_version;
            pthread_mutex_unlock(&e->policy_mu);
        }
        if (!err) {
            atomic_store(&e->n_reports, v[i].counters.reports);
            atomic_store(&e->n_duplicates, v[i].counters.duplicates);
        }
    }
    agg_store_experiments_free(v, n);
    if (err) {
        logf_(s, AGG_LOG_ERROR, "reloading the states from the database: %s (%s)",
              ldpb_strerror(err), agg_store_errmsg(s->store));
        return err;
    }
    agg_store_reloaded(s->store);
    logf_(s, AGG_LOG_WARN,
          "a COMMIT whose answer was lost with the database connection went through: the states "
          "were reloaded from the database, and the reports of that batch (answered 'resend') "
          "are acked as duplicates");
    return LDPB_OK;
}

/* Every stored experiment restored, every declared one not stored yet added. */
ldpb_err restore_experiments(agg_server *s, const agg_config *cfg, char *errmsg)
{
    agg_store_exp *v = NULL;
    size_t n = 0;
    ldpb_err err = agg_store_experiments(s->store, &v, &n);
    if (err) {
        say(errmsg, "state_dir %s: %s", cfg->state_dir, agg_store_errmsg(s->store));
        return err;
    }
    restore_ctx x = {s, cfg, calloc(cfg->n_exps + 1, 1), malloc(2 * AGG_EXP_SETTINGS_MAX)};
    exp_change *changes = calloc(n + cfg->n_exps + 1, sizeof *changes);
    agg_experiment **which = calloc(n + cfg->n_exps + 1, sizeof *which);
    size_t m = 0;
    if (!x.seen || !x.settings || !changes || !which) {
        err = LDPB_ENOMEM;
        say(errmsg, "out of memory for %zu experiments", n + cfg->n_exps);
    }
    for (size_t i = 0; i < n && !err; i++) {
        err = restore_one(&x, &v[i], &changes[m], errmsg);
        if (!err && changes[m] != CH_NONE)
            which[m++] = agg_registry_find(&s->exps, v[i].name);
    }
    /* Declared but not stored yet: the store made `default`'s row itself (listed above). */
    for (size_t i = 0; i < cfg->n_exps && !err; i++) {
        if (x.seen[i])
            continue;
        agg_experiment *e = NULL;
        err = build(s, &cfg->exps[i], 1, &e, errmsg);
        if (!err) {
            changes[m] = CH_ADD;
            which[m++] = e;
        }
    }
    if (!err && m)
        err = write_changes(&x, changes, which, m, errmsg);
    /* issue 19 hook: who sequences each sequenced experiment (server_seq.h) */
    if (!err)
        err = agg_seq_attach(s, errmsg);
    agg_store_experiments_free(v, n);
    free(x.seen);
    free(x.settings);
    free(changes);
    free(which);
    return err;
}
