/* An experiment's policy state and the registry of experiments (experiment.h). */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "ctx_policy.h"
#include "experiment.h"
#include "ldpb/detail.h"
#include "server.h"
#include "server_cluster.h"
#include "server_seq.h"

#define say(out, ...) ldpb_detailf((out), AGG_SERVER_ERRMAX, __VA_ARGS__)

int agg_experiment_is_default_name(const char *name)
{
    return !name || !name[0] || strcmp(name, AGG_EXPERIMENT_DEFAULT) == 0;
}

/* The policy's two instances (served and `next`). */
static ldpb_err make_instances(agg_experiment *e, char *errmsg)
{
    const agg_exp_config *ec = &e->ec;
    char pmsg[AGG_ERRMSG_MAX] = "";
    ldpb_err err;
    e->contextual = agg_ctx_policy_find(ec->policy) != NULL;
    if (e->contextual) {
        err = agg_ctx_policy_new(&e->policy, ec->policy, &ec->params, &ec->ctx, pmsg);
        if (!err)
            err = agg_ctx_policy_new(&e->next, ec->policy, &ec->params, &ec->ctx, pmsg);
    } else {
        err = agg_policy_new(&e->policy, ec->policy, &ec->params, pmsg);
        if (!err)
            err = agg_policy_new(&e->next, ec->policy, &ec->params, pmsg);
    }
    if (err)
        say(errmsg, "experiment %s: policy %s: %s", ec->name, ec->policy,
            pmsg[0] ? pmsg : ldpb_strerror(err));
    return err;
}

/* What every assignment of the experiment asks for: the configured mechanism in local mode, the
 * table's raw row otherwise (the configuration check has built the mechanism as the clients
 * will), the statistics mechanism for the local contextual mode. */
static ldpb_err set_wire(agg_experiment *e, char *errmsg)
{
    const agg_exp_config *ec = &e->ec;
    e->wire_desc =
        ldpb_mech_desc_of(ec->mode == AGG_MODE_LOCAL ? ec->params.mechanism : LDPB_MECH_ID_RAW);
    if (!e->wire_desc) {
        say(errmsg, "experiment %s: mechanism %d is not a known mechanism", ec->name,
            ec->params.mechanism);
        return LDPB_EINVAL;
    }
    e->local_ctx = e->contextual && agg_ctx_policy_is_local(e->policy);
    e->ctx_d = e->contextual ? agg_ctx_policy_d(e->policy) : 0;
    e->ctx_mech = e->local_ctx ? agg_ctx_policy_mech(e->policy) : NULL;
    e->ops = e->policy->ops;
    if (e->local_ctx) /* devices report statistics, whatever `mechanism` says */
        e->wire_desc = ldpb_mech_desc_of(LDPB_MECH_ID_GAUSSIAN_STATS);
    e->wire_mechanism = e->wire_desc->id;
    e->wire_epsilon = e->wire_desc->local ? ec->params.epsilon : 0.0;
    return LDPB_OK;
}

ldpb_err agg_experiment_new(agg_experiment **out, const agg_exp_config *ec, ldpb_rng *seed,
                            char *errmsg)
{
    *out = NULL;
    agg_experiment *e = calloc(1, sizeof *e);
    if (!e)
        return LDPB_ENOMEM;
    pthread_mutex_init(&e->policy_mu, NULL);
    ldpb_err err = agg_exp_config_copy(&e->ec, ec);
    if (!err)
        err = make_instances(e, errmsg);
    if (err)
        goto fail;
    /* A policy that knows the probability of its choice (the EXP3 family) logs it exactly.
     * Otherwise only a choice that is a pure draw can be repeated to estimate its probability;
     * the others choose deterministically from their state (ties aside: propensity 1) or advance
     * a round-robin pointer, which extra calls would disturb. */
    e->mc_propensity = e->policy->ops->choose_is_draw && !e->policy->ops->propensity;
    agg_rand_seed(&e->rand, seed);
    if (ec->mode == AGG_MODE_CENTRAL) {
        err = ldpb_rng_new_system(&e->noise_rng);
        if (!err)
            err = agg_noise_new(&e->noise, AGG_NOISE_SECURE, e->noise_rng, NULL);
        if (err) {
            say(errmsg, "cannot create the generators: %s", ldpb_strerror(err));
            goto fail;
        }
    }
    err = set_wire(e, errmsg);
    if (err)
        goto fail;
    atomic_store(&e->running, 1);
    atomic_store(&e->retention_s, e->ec.decision_retention_s);
    *out = e;
    return LDPB_OK;
fail:
    agg_experiment_free(e);
    return err;
}

void agg_experiment_free(agg_experiment *e)
{
    if (!e)
        return;
    agg_policy_free(e->policy);
    agg_policy_free(e->next);
    agg_cluster_exp_free(e->cl);
    agg_noise_free(e->noise);
    ldpb_rng_free(e->noise_rng);
    agg_exp_config_fini(&e->ec);
    pthread_mutex_destroy(&e->policy_mu);
    free(e);
}

ldpb_err agg_experiment_restore(agg_experiment *e, const uint8_t *blob, size_t len,
                                const agg_store_counters *c)
{
    if (blob) {
        ldpb_err err = agg_policy_restore(e->policy, blob, len);
        if (err)
            return err;
    }
    e->committed = *c;
    e->policy_version = c->policy_version;
    atomic_store(&e->n_reports, c->reports);
    atomic_store(&e->n_duplicates, c->duplicates);
    atomic_store(&e->n_assignments, c->assignments);
    return LDPB_OK;
}

void agg_experiment_counts(const agg_experiment *e, uint64_t *reports, uint64_t *duplicates,
                           uint64_t *assignments)
{
    agg_experiment *m = (agg_experiment *)e; /* atomic_load of a const atomic is not C11 */
    if (atomic_load(&m->counts_db) && atomic_load(&m->seq_role) != AGG_SEQ_LEADER) {
        /* a follower: the sequencer's reports as served, the duplicates as committed */
        *reports = atomic_load(&m->n_reports);
        *duplicates = atomic_load(&m->follow_duplicates);
        *assignments = atomic_load(&m->n_assignments) + atomic_load(&m->follow_assignments);
        return;
    }
    *reports = atomic_load(&m->n_reports) + atomic_load(&m->peer_reports);
    *duplicates = atomic_load(&m->n_duplicates) + atomic_load(&m->peer_duplicates);
    *assignments = atomic_load(&m->n_assignments) + atomic_load(&m->peer_assignments);
}

/* ---- the registry ------------------------------------------------------------------------- */

void agg_registry_init(agg_exp_registry *r)
{
    memset(r, 0, sizeof *r);
    pthread_rwlock_init(&r->mu, NULL);
}

void agg_registry_fini(agg_exp_registry *r)
{
    for (size_t i = 0; i < r->n; i++)
        agg_experiment_free(r->by_order[i]);
    free(r->by_name);
    free(r->by_order);
    pthread_rwlock_destroy(&r->mu);
    memset(r, 0, sizeof *r);
}

/* Under the lock: the position of `name` in by_name, or where it would go (*found = 0). */
static size_t locate(const agg_exp_registry *r, const char *name, int *found)
{
    size_t lo = 0, hi = r->n;
    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->by_name[mid]->ec.name, name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

agg_experiment *agg_registry_find(agg_exp_registry *r, const char *name)
{
    if (agg_experiment_is_default_name(name))
        name = AGG_EXPERIMENT_DEFAULT;
    pthread_rwlock_rdlock(&r->mu);
    int found = 0;
    size_t at = locate(r, name, &found);
    agg_experiment *e = found ? r->by_name[at] : NULL;
    pthread_rwlock_unlock(&r->mu);
    return e;
}

ldpb_err agg_registry_add(agg_exp_registry *r, agg_experiment *e)
{
    pthread_rwlock_wrlock(&r->mu);
    int found = 0;
    size_t at = locate(r, e->ec.name, &found);
    ldpb_err err = LDPB_OK;
    if (found) {
        err = LDPB_ESTATE;
        goto done;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        agg_experiment **a = realloc(r->by_name, cap * sizeof *a);
        if (a)
            r->by_name = a;
        agg_experiment **b = realloc(r->by_order, cap * sizeof *b);
        if (b)
            r->by_order = b;
        if (!a || !b) {
            err = LDPB_ENOMEM;
            goto done;
        }
        r->cap = cap;
    }
    memmove(&r->by_name[at + 1], &r->by_name[at], (r->n - at) * sizeof *r->by_name);
    r->by_name[at] = e;
    e->index = r->n;
    r->by_order[r->n++] = e;
done:
    pthread_rwlock_unlock(&r->mu);
    return err;
}

size_t agg_registry_count(agg_exp_registry *r)
{
    pthread_rwlock_rdlock(&r->mu);
    size_t n = r->n;
    pthread_rwlock_unlock(&r->mu);
    return n;
}

agg_experiment *agg_registry_at(agg_exp_registry *r, size_t i)
{
    pthread_rwlock_rdlock(&r->mu);
    agg_experiment *e = i < r->n ? r->by_order[i] : NULL;
    pthread_rwlock_unlock(&r->mu);
    return e;
}

size_t agg_registry_page(agg_exp_registry *r, const char *after, agg_experiment **out, size_t max,
                         int *more)
{
    pthread_rwlock_rdlock(&r->mu);
    int found = 0;
    size_t at = after && after[0] ? locate(r, after, &found) : 0;
    at += found; /* strictly after */
    size_t n = 0;
    while (at + n < r->n && n < max) {
        out[n] = r->by_name[at + n];
        n++;
    }
    *more = at + n < r->n;
    pthread_rwlock_unlock(&r->mu);
    return n;
}
