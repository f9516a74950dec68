/* Experiments at run time (server_internal.h): the operator commands (ExperimentCommand: create,
 * list, show, stop), starting and stopping experiments, restoring them from the store, and the
 * reload of the configuration's experiments (SIGHUP). docs/aggregator.md, "Experiments".
 *
 * Everything that changes the set of experiments runs under exp_mu, and its store writes under
 * store_mu in a transaction of their own (the committer's transactions take store_mu too), so a
 * create or a stop is durable before it is answered or takes effect. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "server_internal.h"

/* ---- starting, stopping, restoring ------------------------------------------------------- */

/* A reason for `e`'s settings against `want` that may not replace them; 0 if they may (equal, or
 * only the decision retention differs, which is then taken). */
static int settings_refused(agg_experiment *e, const agg_exp_config *want, char *why)
{
    if (exp_change_refused(&e->ec, want, why))
        return 1;
    if (e->ec.decision_retention_s != want->decision_retention_s) {
        /* the rows of its next decisions get it; the running settings keep the rest */
        atomic_store(&e->retention_s, want->decision_retention_s);
        e->ec.decision_retention_s = want->decision_retention_s;
    }
    return 0;
}

/* One store transaction (under store_mu) that writes the running flag of `e`, or adds its row. */
static ldpb_err store_write(agg_server *s, agg_experiment *e, int add, int running, char *errmsg)
{
    char settings[AGG_EXP_SETTINGS_MAX];
    if (add && agg_exp_config_format(&e->ec, settings, sizeof settings) == 0) {
        say(errmsg, "experiment %s: settings too long to store", e->ec.name);
        return LDPB_ERANGE;
    }
    pthread_mutex_lock(&s->store_mu);
    ldpb_err err = agg_store_begin(s->store);
    if (!err && add)
        err =
            agg_store_add_experiment(s->store, e->ec.name, settings, e->from_config, &e->store_id);
    if (!err && !add)
        err = agg_store_set_running(s->store, e->store_id, running);
    if (!err)
        err = agg_store_commit(s->store);
    if (err) {
        say(errmsg, "experiment %s: the store refused the change: %s", e->ec.name,
            agg_store_errmsg(s->store));
        agg_store_rollback(s->store);
    }
    pthread_mutex_unlock(&s->store_mu);
    return err;
}

ldpb_err exp_start(agg_server *s, const agg_exp_config *ec, int from_config, agg_experiment **out,
                   char *errmsg)
{
    agg_experiment *e = agg_registry_find(&s->exps, ec->name);
    ldpb_err err;
    if (e) {
        char why[AGG_CONFIG_ERRMAX] = "";
        if (settings_refused(e, ec, why)) {
            say(errmsg, "experiment %s: %s", ec->name, why);
            return LDPB_ESTATE;
        }
        if (!atomic_load(&e->running)) { /* declared again: resumes with its state */
            err = store_write(s, e, 0, 1, errmsg);
            if (err)
                return err;
            atomic_store(&e->running, 1);
            logf_(s, AGG_LOG_INFO, "experiment %s resumed", e->ec.name);
        }
        *out = e;
        return LDPB_OK;
    }
    if (agg_registry_count(&s->exps) >= s->cfg->experiments_max) {
        say(errmsg,
            "experiment %s: the aggregator holds experiments_max = %" PRIu64 " experiments already",
            ec->name, s->cfg->experiments_max);
        return LDPB_ERANGE;
    }
    err = agg_experiment_new(&e, ec, s->seed_rng, errmsg); /* seed_rng: under exp_mu */
    if (err)
        return err;
    e->from_config = from_config;
    err = store_write(s, e, 1, 1, errmsg);
    if (!err)
        err = agg_registry_add(&s->exps, e);
    if (err) {
        if (!errmsg[0])
            say(errmsg, "experiment %s: cannot register it", ec->name);
        agg_experiment_free(e);
        return err;
    }
    logf_(s, AGG_LOG_INFO, "experiment %s started: policy %s (%s mode), %u arms", e->ec.name,
          e->ec.policy, agg_mode_name(e->ec.mode), (unsigned)e->ec.params.k);
    *out = e;
    return LDPB_OK;
}

ldpb_err exp_stop(agg_server *s, agg_experiment *e, char *errmsg)
{
    if (!atomic_load(&e->running))
        return LDPB_OK;
    ldpb_err err = store_write(s, e, 0, 0, errmsg);
    if (err)
        return err;
    /* From now on its requests are refused; what was queued before is still committed. */
    atomic_store(&e->running, 0);
    logf_(s, AGG_LOG_INFO, "experiment %s stopped (its state is kept)", e->ec.name);
    return LDPB_OK;
}

/* ---- the operator commands --------------------------------------------------------------- */

static int is_admin(agg_server *s, const uint8_t *pk)
{
    for (size_t i = 0; i < s->n_admins; i++)
        if (sodium_memcmp(s->admins + i * LDPB_KEY_BYTES, pk, LDPB_KEY_BYTES) == 0)
            return 1;
    return 0;
}

/* The ExperimentInfo of `e` (strings borrowed from it). */
static void info_of(agg_experiment *e, Ldpb__V1__ExperimentInfo *m)
{
    ldpb__v1__experiment_info__init(m);
    const agg_exp_config *ec = &e->ec;
    m->name = (char *)ec->name;
    m->policy = ec->policy;
    m->mode = (char *)agg_mode_name(ec->mode);
    m->arms = ec->params.k;
    if (ec->mode == AGG_MODE_LOCAL) {
        m->mechanism = (char *)e->wire_desc->name;
    }
    if (ec->mode != AGG_MODE_NONPRIVATE) {
        m->has_epsilon = 1;
        m->epsilon = ec->params.epsilon;
    }
    if (e->contextual) {
        m->has_delta = 1;
        m->delta = ec->ctx.delta;
    }
    if (ec->params.horizon) {
        m->has_horizon = 1;
        m->horizon = ec->params.horizon;
    }
    uint64_t dups = 0;
    agg_experiment_counts(e, &m->reports, &dups, &m->assignments); /* every node's */
    m->running = atomic_load(&e->running) != 0;
}

/* Sends the infos of v[0..n) as the ExperimentReply. */
static void send_infos(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                       const ldpb_seal_key *key, const Ldpb__V1__Envelope *req, agg_experiment **v,
                       size_t n, int more)
{
    Ldpb__V1__ExperimentInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Ldpb__V1__ExperimentInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        info_of(v[i], &infos[i]);
        ptrs[i] = &infos[i];
    }
    Ldpb__V1__Envelope env = reply_envelope(req->has_request_id, req->request_id);
    Ldpb__V1__ExperimentReply rep = LDPB__V1__EXPERIMENT_REPLY__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY;
    env.experiment_reply = &rep;
    rep.n_experiments = n;
    rep.experiments = ptrs;
    rep.has_more = more;
    rep.more = more != 0;
    send_sealed(s, w, to, client_pk, key, &env);
    free(infos);
    free(ptrs);
}

/* A LIST reply holds as many experiments as surely fit a frame (docs/protocol.md: at most 1024):
 * an ExperimentInfo is at most 66 + 66 + 12 + 6 + 34 + 3 * 9 + 3 * 11 + 2 + 3 bytes on the wire
 * (the policy and mechanism names are short table names), under 256. */
static size_t list_max(void)
{
    size_t n = (LDPB_PLAINTEXT_MAX - 64) / 256;
    return n < 1024 ? n : 1024;
}

/* CREATE: parsed, checked, written (origin runtime) and committed before the reply. */
static ldpb_err cmd_create(agg_server *s, const Ldpb__V1__ExperimentCommand *c,
                           agg_experiment **out, char *reason)
{
    agg_exp_config ec;
    memset(&ec, 0, sizeof ec);
    char err_text[AGG_CONFIG_ERRMAX] = "";
    ldpb_err err = agg_exp_config_parse(&ec, c->name, c->config ? c->config : "", err_text);
    if (!err)
        err = agg_exp_config_check(&ec, s->cfg->allow_nonprivate, err_text);
    if (err) {
        say(reason, "experiment %s: %s", c->name, err_text);
        agg_exp_config_fini(&ec);
        return err == LDPB_ENOMEM ? err : LDPB_EINVAL;
    }
    agg_experiment *e = agg_registry_find(&s->exps, c->name);
    if (e && e->from_config) {
        say(reason, "experiment %s is declared by the configuration file: change it there",
            c->name);
        err = LDPB_ESTATE;
    } else {
        err = exp_start(s, &ec, 0, out, reason);
    }
    agg_exp_config_fini(&ec);
    return err;
}

void do_experiment_command(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                           const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__ExperimentCommand *c = req->experiment_command;
    char reason[AGG_SERVER_ERRMAX] = "";
    ldpb_err err = LDPB_OK;
    if (!is_admin(s, client_pk)) {
        logf_(s, AGG_LOG_WARN, "an experiment command from a key not on the admin list refused");
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EAUTH,
                          s->n_admins ? "this key is not on the aggregator's admin list"
                                      : "this aggregator has no admin list: no operator commands");
        return;
    }
    int named = c->op != LDPB__V1__EXPERIMENT_COMMAND__OP__LIST;
    if (named && (!c->name || !agg_exp_name_valid(c->name))) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EINVAL, "an experiment name is 1..64 bytes of [a-z0-9._-]");
        return;
    }
    agg_experiment *e = NULL;
    pthread_mutex_lock(&s->exp_mu);
    switch (c->op) {
    case LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE:
        err = cmd_create(s, c, &e, reason);
        break;
    case LDPB__V1__EXPERIMENT_COMMAND__OP__SHOW:
    case LDPB__V1__EXPERIMENT_COMMAND__OP__STOP:
        e = agg_registry_find(&s->exps, c->name);
        if (!e) {
            say(reason, "experiment '%s' does not exist on this aggregator", c->name);
            err = LDPB_ENOEXPERIMENT;
        } else if (c->op == LDPB__V1__EXPERIMENT_COMMAND__OP__STOP) {
            err = exp_stop(s, e, reason);
        }
        break;
    case LDPB__V1__EXPERIMENT_COMMAND__OP__LIST:
        break;
    case LDPB__V1__EXPERIMENT_COMMAND__OP__OP_UNSPECIFIED:
    case _LDPB__V1__EXPERIMENT_COMMAND__OP_IS_INT_SIZE:
    default:
        say(reason, "unknown experiment command %d", (int)c->op);
        err = LDPB_EINVAL;
        break;
    }
    pthread_mutex_unlock(&s->exp_mu);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    if (named) {
        send_infos(s, w, to, client_pk, key, req, &e, 1, 0);
        return;
    }
    size_t max = list_max();
    agg_experiment **v = calloc(max, sizeof *v);
    int more = 0;
    size_t k = v ? agg_registry_page(&s->exps, c->after, v, max, &more) : 0;
    if (!v)
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory");
    else
        send_infos(s, w, to, client_pk, key, req, v, k, more);
    free(v);
}

/* ---- reload (SIGHUP) --------------------------------------------------------------------- */

/* Names the service settings of `next` that differ from the running ones: those need a restart. */
static void log_not_reloaded(agg_server *s, const agg_config *next)
{
    const agg_config *c = s->cfg;
    char list[512] = "";
    size_t n = 0;
#define DIFF(cond, name)                                                                           \
    do {                                                                                           \
        if ((cond) && n < sizeof list) {                                                           \
            int r_ = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", name);             \
            n += r_ > 0 ? (size_t)r_ : 0;                                                          \
        }                                                                                          \
    } while (0)
#define STRDIFF(a, b) (((a) == NULL) != ((b) == NULL) || ((a) && strcmp((a), (b)) != 0))
    DIFF(c->n_listen != next->n_listen || (c->n_listen && STRDIFF(c->listen[0], next->listen[0])),
         "listen");
    DIFF(STRDIFF(c->state_dir, next->state_dir), "state_dir");
    DIFF(STRDIFF(c->store, next->store), "store");
    DIFF(STRDIFF(c->key, next->key), "key");
    DIFF(STRDIFF(c->allowlist, next->allowlist) || c->auth != next->auth, "auth/allowlist");
    DIFF(STRDIFF(c->admin_list, next->admin_list), "admin_list");
    DIFF(STRDIFF(c->metrics, next->metrics), "metrics");
    DIFF(c->workers != next->workers || c->repliers != next->repliers, "workers/repliers");
    DIFF(c->batch_max != next->batch_max || c->queue_max != next->queue_max, "batch_max/queue_max");
    DIFF(c->assignment_ttl_s != next->assignment_ttl_s, "assignment_ttl_s");
    DIFF(c->replay_window_s != next->replay_window_s || c->replay_entries != next->replay_entries,
         "replay_window_s/replay_entries");
    DIFF(c->log_level != next->log_level, "log_level");
    DIFF(c->decision_rows_max != next->decision_rows_max, "decision_rows_max");
    DIFF(c->min_free_mb != next->min_free_mb, "min_free_mb");
    DIFF(c->experiments_max != next->experiments_max ||
             c->metrics_experiments_max != next->metrics_experiments_max,
         "experiments_max/metrics_experiments_max");
#undef STRDIFF
#undef DIFF
    if (n)
        logf_(s, AGG_LOG_WARN,
              "reload: only experiments are reloaded; these service settings changed and take "
              "effect at the next restart: %s",
              list);
}

ldpb_err agg_server_reload(agg_server *s, const agg_config *next, size_t *refused)
{
    *refused = 0;
    size_t started = 0, stopped = 0;
    pthread_mutex_lock(&s->exp_mu);
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++)
        agg_registry_at(&s->exps, i)->declared = 0;
    for (size_t i = 0; i < next->n_exps; i++) {
        const agg_exp_config *ec = &next->exps[i];
        char why[AGG_SERVER_ERRMAX] = "";
        agg_experiment *e = agg_registry_find(&s->exps, ec->name);
        int was_running = e && atomic_load(&e->running);
        if (e && !e->from_config) {
            logf_(s, AGG_LOG_WARN,
                  "reload: experiment %s was created at run time; the configuration's "
                  "declaration of it is ignored (stop it first to hand it to the file)",
                  ec->name);
            e->declared = 1;
            continue;
        }
        ldpb_err err = exp_start(s, ec, 1, &e, why);
        if (err) {
            /* the running experiment, if any, stays exactly as it was */
            logf_(s, AGG_LOG_ERROR, "reload: refused: %s", why);
            (*refused)++;
            if ((e = agg_registry_find(&s->exps, ec->name)) != NULL)
                e->declared = 1;
            continue;
        }
        e->declared = 1;
        started += !was_running;
    }
    n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!e->from_config || e->declared || !atomic_load(&e->running))
            continue;
        char why[AGG_SERVER_ERRMAX] = "";
        if (exp_stop(s, e, why) == LDPB_OK)
            stopped++;
        else
            logf_(s, AGG_LOG_ERROR, "reload: %s", why);
    }
    pthread_mutex_unlock(&s->exp_mu);
    log_not_reloaded(s, next);
    logf_(s, AGG_LOG_INFO,
          "reload: %zu experiments started or resumed, %zu stopped, %zu changes refused", started,
          stopped, *refused);
    return *refused ? LDPB_ESTATE : LDPB_OK;
}
