/* The request handlers (server_internal.h): assign (K-armed, contextual, local model), report,
 * report_and_assign, report_batch and status. Each answers its request exactly once: at once, or
 * (a valid report) through the committer once it is durable. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include <sodium.h>

#include "server_internal.h"

/* ---- assign ------------------------------------------------------------------------------ */

static agg_policy_env policy_env(agg_experiment *e)
{
    agg_policy_env env = {&e->rand, e->ec.mode == AGG_MODE_CENTRAL ? e->noise : NULL};
    return env;
}

/* The experiment a request names (absent: "default"), if it runs; NULL with `reason` else. */
static agg_experiment *find_running(agg_server *s, const char *name, char reason[256])
{
    agg_experiment *e = agg_registry_find(&s->exps, name);
    if (e && atomic_load(&e->running))
        return e;
    const char *n = agg_experiment_is_default_name(name) ? AGG_EXPERIMENT_DEFAULT : name;
    snprintf(reason, 256, "experiment '%s' %s on this aggregator", n,
             e ? "is stopped" : "does not exist");
    return NULL;
}

void count_decision(agg_server *s, const item *it)
{
    atomic_fetch_add(&s->n_assignments, 1);
    atomic_fetch_add(&it->exp->n_assignments, 1);
    if (!enqueue(s, it, s->q_cap / 2))
        atomic_fetch_add(&s->n_decisions_dropped, 1);
}

int hold_decision(struct collector *c, const item *it)
{
    if (!c)
        return 0;
    c->decision = *it;
    c->decision_held = 1;
    return 1;
}

void release_decision(agg_server *s, struct collector *c)
{
    if (c->decision_held)
        count_decision(s, &c->decision);
    c->decision_held = 0;
}

/* Counts an assignment whose id is sealed in it->id, queues its decision row (best effort) and
 * answers with the Assignment: the one reply of do_assign and do_assign_contextual. `lm` is the
 * local contextual mode's model (NULL otherwise). Inside a ReportAndAssign the counting and the
 * row wait for the reply that delivers the assignment (hold_decision). */
static void send_assignment(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                            const ldpb_seal_key *key, const Ldpb__V1__Envelope *req, const item *it,
                            Ldpb__V1__LocalModel *lm)
{
    if (!hold_decision(w->capture, it))
        count_decision(s, it);

    Ldpb__V1__Envelope env_out = reply_envelope(req->has_request_id, req->request_id);
    Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
    env_out.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
    env_out.assignment = &a;
    a.assignment_id.data = (uint8_t *)it->id;
    a.assignment_id.len = AGG_TOKEN_BYTES;
    a.arm = it->tok.arm;
    agg_experiment *e = it->exp;
    a.mechanism = (Ldpb__V1__Mechanism)e->wire_mechanism;
    a.epsilon = e->wire_epsilon;
    a.expires_at_ms = it->tok.expires_at_ms;
    a.propensity = it->tok.propensity;
    a.has_policy_version = 1;
    a.policy_version = it->tok.policy_version;
    if (e->wire_desc->params & LDPB_MECH_PARAM_KAPPA) {
        a.has_kappa = 1;
        a.kappa = e->ec.params.kappa;
    }
    a.local_model = lm;
    send_sealed(s, w, to, client_pk, key, &env_out);
}

/* Completes t (its arm, propensity and policy version already set) into a sealed assignment id
 * -- bound to the assigned features when `bound` is not NULL -- and sends the assignment. */
static void issue_assignment(agg_server *s, agg_experiment *e, agg_worker *w, agg_reply_to to,
                             const uint8_t *client_pk, const ldpb_seal_key *key,
                             const Ldpb__V1__Envelope *req, agg_token *t, const double *bound,
                             uint32_t n_bound, Ldpb__V1__LocalModel *lm)
{
    uint64_t now = ldpb_seal_now_ms();
    t->mechanism = (uint8_t)e->wire_mechanism;
    t->epsilon = e->wire_epsilon;
    t->expires_at_ms = now + s->cfg->assignment_ttl_s * 1000u;
    ldpb_rng_bytes(w->rng, t->random, sizeof t->random);
    item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_DECISION;
    it.exp = e;
    it.tok = *t;
    it.at_ms = now;
    ldpb_err err = agg_token_seal_in(&s->token_key, e->ec.name, t, bound, n_bound, it.id);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "cannot issue an assignment id");
        return;
    }
    send_assignment(s, w, to, client_pk, key, req, &it, lm);
}

/* The local contextual mode's assignment (docs/protocol.md, "Local model"): no context comes in;
 * the committed model and the mechanism's parameters go out, and the device chooses. The id binds
 * nothing but itself: arm 0, propensity 1 (the device's choice and its probability stay there). */
static void do_assign_local(agg_server *s, agg_experiment *e, agg_worker *w, agg_reply_to to,
                            const uint8_t *client_pk, const ldpb_seal_key *key,
                            const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    if (!ar->local_model || ar->n_context) {
        send_sealed_error(
            s, w, to, client_pk, key, req->request_id, req->has_request_id,
            ar->local_model ? LDPB_EINVAL : LDPB_ENOTSUP,
            ar->local_model
                ? "a local-model request carries no context: the features stay on the device"
                : "this aggregator serves the local contextual mode (ldp-linucb-gaussian): the "
                  "device must ask for the model (AssignRequest.local_model, "
                  "ldpb_client_assign_local) and choose its arm itself");
        return;
    }
    double stats[LDPB_CTXSTAT_VALUES_MAX];
    size_t n = 0;
    double shift = 0.0, beta = 0.0;
    agg_token t;
    memset(&t, 0, sizeof t);
    char reason[256] = "";
    pthread_mutex_lock(&e->policy_mu);
    uint64_t rounds = agg_ctx_policy_rounds(e->policy), horizon = agg_ctx_policy_horizon(e->policy);
    ldpb_err err = LDPB_OK;
    if (rounds >= horizon) {
        snprintf(reason, sizeof reason,
                 "no assignments: the local contextual policy has summed its horizon of %" PRIu64
                 " reports (configure a larger horizon)",
                 horizon);
        err = LDPB_ESTATE;
    } else {
        /* The served policy is the committed state: the model is released only once durable. */
        err = agg_ctx_policy_model(e->policy, stats, &n, &shift, &beta);
        if (err)
            snprintf(reason, sizeof reason, "the model cannot be computed (%s)",
                     ldpb_strerror(err));
    }
    t.policy_version = e->policy_version;
    pthread_mutex_unlock(&e->policy_mu);
    if (err) {
        if (err != LDPB_ESTATE)
            logf_(s, AGG_LOG_ERROR, "%s", reason);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    const ldpb_ctxstat_opts *mo = ldpb_ctxstat_get_opts(e->ctx_mech);
    Ldpb__V1__LocalModel lm = LDPB__V1__LOCAL_MODEL__INIT;
    lm.d = mo->d;
    lm.n_stats = n;
    lm.stats = stats;
    lm.shift = shift;
    lm.beta = beta;
    lm.delta = mo->delta;
    lm.feature_norm = mo->feature_norm;
    lm.reward_bound = mo->reward_bound;
    /* the device chooses: the assignment names no arm of the aggregator's */
    t.arm = 0;
    t.propensity = 1.0;
    issue_assignment(s, e, w, to, client_pk, key, req, &t, NULL, 0, &lm);
}

/* A contextual policy's assignment (docs/protocol.md, "Contexts"): the request's K x d feature
 * set is checked and chosen from; the id's MAC binds the chosen row, which the report resends. */
static void do_assign_contextual(agg_server *s, agg_experiment *e, agg_worker *w, agg_reply_to to,
                                 const uint8_t *client_pk, const ldpb_seal_key *key,
                                 const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    char reason[256] = "";
    uint32_t arm = 0, ties = 1;
    agg_token t;
    memset(&t, 0, sizeof t);
    pthread_mutex_lock(&e->policy_mu);
    agg_policy_env env = policy_env(e);
    ldpb_err err = LDPB_OK;
    /* The tree has room for `horizon` observations: past it no report could be learned from. */
    uint64_t rounds = agg_ctx_policy_rounds(e->policy), n = agg_ctx_policy_horizon(e->policy);
    if (rounds >= n) {
        snprintf(reason, sizeof reason,
                 "no assignments: the contextual policy has learned from its horizon of %" PRIu64
                 " reports (configure a larger horizon)",
                 n);
        err = LDPB_ESTATE;
    } else {
        err =
            agg_ctx_policy_choose(e->policy, &env, ar->context, ar->n_context, &arm, &ties, reason);
    }
    t.policy_version = e->policy_version;
    pthread_mutex_unlock(&e->policy_mu);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    /* The argmax is deterministic; exact ties are broken uniformly (linucb.h), so the chosen
     * arm had probability exactly 1/ties. */
    t.propensity = 1.0 / (double)ties;
    t.arm = arm;
    uint32_t d = e->ctx_d;
    issue_assignment(s, e, w, to, client_pk, key, req, &t, ar->context + (size_t)arm * d, d, NULL);
}

void do_assign(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__AssignRequest *ar = req->assign_request;
    char reason[256];
    agg_experiment *e = find_running(s, ar->experiment, reason);
    if (!e) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOEXPERIMENT, reason);
        return;
    }
    /* A client spends budget on the report of every assignment: while reports cannot be made
     * durable, issue none rather than let devices spend on reports that will be refused. */
    int failing = atomic_load(&s->commits_failing), low = atomic_load(&s->space_low);
    if (failing || low) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUSY,
                          low ? "no assignments: the aggregator is low on disk space (a "
                                "report might not be stored); retry later"
                              : "no assignments: the aggregator cannot commit reports right "
                                "now; retry later");
        return;
    }
    if (ar->has_max_epsilon && e->wire_desc->local && e->wire_epsilon > ar->max_epsilon) {
        snprintf(reason, sizeof reason,
                 "this aggregator asks for epsilon %g per report, above the client's cap %g",
                 e->wire_epsilon, ar->max_epsilon);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUDGET, reason);
        return;
    }
    uint32_t arm = 0;
    agg_token t;
    memset(&t, 0, sizeof t);
    if (e->local_ctx) {
        do_assign_local(s, e, w, to, client_pk, key, req);
        return;
    }
    if (ar->local_model) {
        /* A device that would choose for itself must not silently get an arm it did not. */
        snprintf(reason, sizeof reason,
                 "this aggregator serves policy %s, not the local contextual mode: it hands out "
                 "no model",
                 e->ec.policy);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOTSUP, reason);
        return;
    }
    if (e->contextual) {
        do_assign_contextual(s, e, w, to, client_pk, key, req);
        return;
    }
    pthread_mutex_lock(&e->policy_mu);
    agg_policy_env env = policy_env(e);
    ldpb_err err = agg_policy_choose(e->policy, &env, &arm);
    if (!err) {
        t.policy_version = e->policy_version;
        if (e->policy->ops->propensity) {
            /* read under the same hold as the choice: another worker's choice would replace it */
            err = agg_policy_propensity(e->policy, &t.propensity);
        } else {
            uint64_t m = e->mc_propensity ? s->cfg->propensity_samples : 0, hits = 0;
            for (uint64_t i = 0; i < m && !err; i++) {
                uint32_t again;
                err = agg_policy_choose(e->policy, &env, &again);
                hits += again == arm;
            }
            t.propensity = (double)(1 + hits) / (double)(1 + m);
        }
    }
    pthread_mutex_unlock(&e->policy_mu);
    if (err) {
        logf_(s, AGG_LOG_ERROR, "experiment %s: the policy failed to choose an arm: %s", e->ec.name,
              ldpb_strerror(err));
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "the policy failed to choose an arm");
        return;
    }
    t.arm = arm;
    issue_assignment(s, e, w, to, client_pk, key, req, &t, NULL, 0, NULL);
}

/* ---- report ------------------------------------------------------------------------------ */

/* The checks of a report against its (authentic) assignment. LDPB_OK or an error with `reason`. */
static ldpb_err check_report(agg_experiment *e, const agg_token *t, const Ldpb__V1__Report *r,
                             double *value, char reason[256])
{
    if (t->arm >= e->ec.params.k) {
        snprintf(reason, 256, "unknown assignment (arm %" PRIu32 " outside this aggregator's %u)",
                 t->arm, (unsigned)e->ec.params.k);
        return LDPB_ENOTFOUND;
    }
    if ((int)r->mechanism != (int)t->mechanism || (int)t->mechanism != e->wire_mechanism) {
        snprintf(reason, 256, "report mechanism %d, but the assignment asks for mechanism %d",
                 (int)r->mechanism, (int)t->mechanism);
        return LDPB_EINVAL;
    }
    if (r->epsilon > t->epsilon) {
        snprintf(reason, 256, "report epsilon %.17g is above the assignment's %.17g", r->epsilon,
                 t->epsilon);
        return LDPB_ERANGE;
    }
    if (r->epsilon != t->epsilon) {
        snprintf(reason, 256, "report epsilon %.17g differs from the assignment's %.17g",
                 r->epsilon, t->epsilon);
        return LDPB_EINVAL;
    }
    if (e->local_ctx) {
        /* The statistics of the local contextual mode: the mechanism devices were told to use
         * must be the one the report claims, and its values ones it can produce. */
        const ldpb_ctxstat *m = e->ctx_mech;
        const ldpb_ctxstat_opts *mo = ldpb_ctxstat_get_opts(m);
        if (!r->has_delta || r->delta != mo->delta) {
            snprintf(reason, 256, "report delta %.17g differs from the assignment's %.17g",
                     r->has_delta ? r->delta : 0.0, mo->delta);
            return LDPB_EINVAL;
        }
        char detail[LDPB_DETAIL_BYTES] = "";
        ldpb_err err = ldpb_ctxstat_check(m, r->stats, r->n_stats, detail);
        if (err) {
            snprintf(reason, 256, "report.stats: %s", detail);
            return err;
        }
        *value = 0.0;
        return LDPB_OK;
    }
    /* The mechanism table's admissibility rule, on the authentic assignment's mechanism and
     * epsilon (the wire decoder checked the format, the rule's first half, on the report's own
     * claim). */
    int is_bit = r->value_case == LDPB__V1__REPORT__VALUE_BIT;
    if (!is_bit && r->value_case != LDPB__V1__REPORT__VALUE_REAL) {
        snprintf(reason, 256, "report has no value");
        return LDPB_EINVAL;
    }
    double v = is_bit ? (double)r->bit : r->real;
    char detail[LDPB_MECH_DETAIL_BYTES];
    ldpb_err err =
        ldpb_mech_check_value((int)t->mechanism, t->epsilon, is_bit, v, "report", detail);
    if (err) {
        snprintf(reason, 256, "%s", detail);
        return err;
    }
    *value = v;
    return LDPB_OK;
}

/* The reason for an id that does not open in experiment e: a token of the other format (version 3
 * is the default experiment's, 4 any other's) was certainly issued in another experiment. */
static void unknown_reason(const agg_experiment *e, const uint8_t *id, size_t len, int contextual,
                           char reason[256])
{
    int is_def = strcmp(e->ec.name, AGG_EXPERIMENT_DEFAULT) == 0;
    uint8_t other = is_def ? AGG_TOKEN_VERSION_EXP : AGG_TOKEN_VERSION;
    if (len == AGG_TOKEN_BYTES && id[0] == other)
        snprintf(reason, 256, "assignment %s was not issued in experiment '%s'",
                 is_def ? "of another experiment" : "of the default experiment", e->ec.name);
    else if (is_def)
        snprintf(reason, 256, "%s",
                 contextual ? "unknown assignment, or the report's context is not the assigned "
                              "arm's features"
                            : "unknown assignment (not issued by this aggregator, or corrupted)");
    else
        snprintf(reason, 256,
                 "unknown assignment%s: not issued in experiment '%s' by this aggregator, or "
                 "corrupted",
                 contextual ? " or not the assigned arm's features" : "", e->ec.name);
}

/* Opens and checks a Report's assignment id in its experiment, filling it->exp, it->tok and
 * it->value; `features` says whether the report may carry a contextual one's data (do_report) or
 * not (the reports of a batch or a report_and_assign). An error with `reason` otherwise. */
static ldpb_err open_report(agg_server *s, const Ldpb__V1__Report *r, int features, item *it,
                            char reason[256])
{
    agg_experiment *e = find_running(s, r->experiment, reason);
    if (!e)
        return LDPB_ENOEXPERIMENT;
    it->exp = e;
    ldpb_err err = LDPB_OK;
    uint32_t d = e->ctx_d;
    const uint8_t *id = r->assignment_id.data;
    size_t id_len = r->assignment_id.len;
    if (e->contextual && !features) {
        /* A contextual report needs the assigned arm's features, bound to its id: do_report's
         * path; batches and report_and_assign do not carry them. The local mode's device must
         * never be told to send its features. */
        snprintf(reason, 256, "%s",
                 e->local_ctx ? "this aggregator serves the local contextual mode: send each "
                                "report alone, with its privatized statistics (Report.stats); the "
                                "features stay on the device"
                              : "this aggregator serves a contextual policy: send each report "
                                "alone, with the assigned arm's features (Report.context)");
        return LDPB_EINVAL;
    }
    if (e->contextual && !e->local_ctx && r->n_context != d) {
        snprintf(reason, 256,
                 "report context has %zu values; this aggregator's contextual policy needs the "
                 "assigned arm's %u features, as sent in the assign request",
                 r->n_context, (unsigned)d);
        return LDPB_EINVAL;
    }
    /* The local mode binds nothing but the id; its stats are checked against the mechanism. */
    int bound = e->contextual && !e->local_ctx;
    err = agg_token_open_in(&s->token_key, e->ec.name, id, id_len, bound ? r->context : NULL, d,
                            &it->tok);
    if (err == LDPB_ENOTFOUND)
        unknown_reason(e, id, id_len, bound, reason);
    else if (err)
        snprintf(reason, 256, "cannot verify the assignment id");
    if (!err)
        err = check_report(e, &it->tok, r, &it->value, reason);
    return err;
}

void do_report(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__Report *r = req->report;
    char reason[256] = "";
    item it;
    memset(&it, 0, sizeof it);
    ldpb_err err = open_report(s, r, 1, &it, reason);
    agg_experiment *e = it.exp;
    if (!err && e->contextual) {
        /* the local mode's report carries its statistics where the others carry features */
        size_t nx = e->local_ctx ? r->n_stats : e->ctx_d;
        it.x = malloc(nx * sizeof *it.x);
        if (!it.x) {
            err = LDPB_ENOMEM;
            snprintf(reason, sizeof reason, "out of memory");
        } else {
            memcpy(it.x, e->local_ctx ? r->stats : r->context, nx * sizeof *it.x);
        }
    }
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    it.kind = ITEM_REPORT;
    it.at_ms = ldpb_seal_now_ms();
    it.expired = it.at_ms > it.tok.expires_at_ms;
    memcpy(it.id, r->assignment_id.data, AGG_TOKEN_BYTES);
    memcpy(it.client_pk, client_pk, LDPB_KEY_BYTES);
    it.key = *key;
    it.request_id = req->request_id;
    it.has_request_id = req->has_request_id;
    it.to = to;
    if (!enqueue(s, &it, s->q_cap)) {
        free(it.x);
        sodium_memzero(&it.key, sizeof it.key);
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_EBUSY, "the aggregator's commit queue is full; retry later");
    }
}

/* Checks one report of a request and fills `it` for the committer; an error with `reason`. */
static ldpb_err prepare_report(agg_server *s, const Ldpb__V1__Report *r, item *it, char reason[256])
{
    memset(it, 0, sizeof *it);
    ldpb_err err = open_report(s, r, 0, it, reason);
    if (err)
        return err;
    it->kind = ITEM_REPORT;
    it->at_ms = ldpb_seal_now_ms();
    it->expired = it->at_ms > it->tok.expires_at_ms;
    memcpy(it->id, r->assignment_id.data, AGG_TOKEN_BYTES);
    return LDPB_OK;
}

static void set_slot_id(collector *c, uint32_t i, const Ldpb__V1__Report *r)
{
    size_t n = r->assignment_id.len < LDPB_WIRE_ID_MAX ? r->assignment_id.len : LDPB_WIRE_ID_MAX;
    memcpy(c->slots[i].id, r->assignment_id.data, n);
    c->slots[i].id_len = (uint8_t)n;
}

/* The report is checked first and the assignment chosen before the report is queued, so a
 * refused report costs no assignment; the reply waits for the commit as a Report's does. */
void do_report_and_assign(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                          const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__ReportAndAssign *ra = req->report_and_assign;
    char reason[256];
    item it;
    ldpb_err err = prepare_report(s, ra->report, &it, reason);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          reason);
        return;
    }
    collector *c = collector_new(1, client_pk, key, req, to);
    if (!c) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory; retry");
        return;
    }
    set_slot_id(c, 0, ra->report);
    Ldpb__V1__Envelope areq = LDPB__V1__ENVELOPE__INIT;
    areq.protocol_version = LDPB_PROTOCOL_VERSION;
    areq.has_request_id = req->has_request_id;
    areq.request_id = req->request_id;
    areq.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    areq.assign_request = ra->next;
    w->capture = c;
    do_assign(s, w, to, client_pk, key, &areq);
    w->capture = NULL;
    it.coll = c;
    it.slot = 0;
    atomic_fetch_add(&c->left, 1);
    if (!enqueue(s, &it, s->q_cap)) {
        atomic_fetch_sub(&c->left, 1);
        c->slots[0].code = LDPB_EBUSY;
    }
    collector_settle(s, w, c, UINT32_MAX, 0);
}

/* Each report of the batch is checked, queued and answered on its own; the one reply lists
 * every result in the batch's order. */
void do_report_batch(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
                     const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    const Ldpb__V1__ReportBatch *b = req->report_batch;
    collector *c = collector_new((uint32_t)b->n_reports, client_pk, key, req, to);
    if (!c) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOMEM, "out of memory; retry");
        return;
    }
    c->is_batch = 1;
    for (uint32_t i = 0; i < c->n; i++) {
        char reason[256];
        item it;
        set_slot_id(c, i, b->reports[i]);
        ldpb_err err = prepare_report(s, b->reports[i], &it, reason);
        if (err) {
            c->slots[i].code = (uint32_t)err;
            continue;
        }
        it.coll = c;
        it.slot = i;
        atomic_fetch_add(&c->left, 1);
        if (!enqueue(s, &it, s->q_cap)) {
            atomic_fetch_sub(&c->left, 1);
            c->slots[i].code = LDPB_EBUSY;
        }
    }
    collector_settle(s, w, c, UINT32_MAX, 0);
}

/* ---- status ------------------------------------------------------------------------------ */

static const char *model_name(agg_model m)
{
    switch (m) {
    case AGG_MODEL_NONPRIVATE:
        return "nonprivate";
    case AGG_MODEL_LOCAL:
        return "local";
    case AGG_MODEL_CENTRAL:
        return "central";
    }
    return "unknown";
}

void do_status(agg_server *s, agg_worker *w, agg_reply_to to, const uint8_t *client_pk,
               const ldpb_seal_key *key, const Ldpb__V1__Envelope *req)
{
    char reason[256];
    const char *name = req->status_request ? req->status_request->experiment : NULL;
    agg_experiment *e = find_running(s, name, reason);
    if (!e) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ENOEXPERIMENT, reason);
        return;
    }
    uint32_t k = (uint32_t)e->ec.params.k;
    if (k > LDPB_WIRE_ARMS_MAX) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                          LDPB_ERANGE, "too many arms for a status reply");
        return;
    }
    if (w->arms_cap < k) {
        agg_arm_status *a = realloc(w->arms, k * sizeof *a);
        if (a)
            w->arms = a;
        Ldpb__V1__ArmStatus *m = realloc(w->arm_msgs, k * sizeof *m);
        if (m)
            w->arm_msgs = m;
        Ldpb__V1__ArmStatus **p = realloc(w->arm_ptrs, k * sizeof *p);
        if (p)
            w->arm_ptrs = p;
        if (!a || !m || !p) {
            send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id,
                              LDPB_ENOMEM, "out of memory");
            return;
        }
        w->arms_cap = k;
    }
    pthread_mutex_lock(&e->policy_mu);
    ldpb_err err = agg_policy_describe(e->policy, w->arms, k);
    pthread_mutex_unlock(&e->policy_mu);
    if (err) {
        send_sealed_error(s, w, to, client_pk, key, req->request_id, req->has_request_id, err,
                          "the policy cannot describe its state");
        return;
    }
    for (uint32_t a = 0; a < k; a++) {
        Ldpb__V1__ArmStatus *m = &w->arm_msgs[a];
        ldpb__v1__arm_status__init(m);
        m->arm = a;
        m->pulls = w->arms[a].pulls;
        m->has_estimate = isfinite(w->arms[a].estimate);
        m->estimate = m->has_estimate ? w->arms[a].estimate : 0;
        m->has_ci_low = isfinite(w->arms[a].ci_low);
        m->ci_low = m->has_ci_low ? w->arms[a].ci_low : 0;
        m->has_ci_high = isfinite(w->arms[a].ci_high);
        m->ci_high = m->has_ci_high ? w->arms[a].ci_high : 0;
        m->has_active = 1;
        m->active = w->arms[a].active != 0;
        w->arm_ptrs[a] = m;
    }
    Ldpb__V1__Envelope env = reply_envelope(req->has_request_id, req->request_id);
    Ldpb__V1__Status st = LDPB__V1__STATUS__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS;
    env.status = &st;
    st.policy = e->ec.policy;
    st.model = (char *)model_name(e->ops->model);
    uint64_t dups = 0;
    agg_experiment_counts(e, &st.reports, &dups, &st.assignments); /* every node's */
    /* Named only when asked for by name: an old client's status stays as it was. */
    if (name)
        st.experiment = e->ec.name;
    st.n_arms = k;
    st.arms = w->arm_ptrs;
    atomic_fetch_add(&s->n_status, 1);
    send_sealed(s, w, to, client_pk, key, &env);
}
