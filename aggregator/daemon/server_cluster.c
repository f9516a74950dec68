/* Several nodes on one PostgreSQL store: the partial states of additive experiments and their
 * merge (server_cluster.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_policy.h"
#include "server_cluster.h"
#include "server_internal.h"
#include "server_seq.h"

/* Staleness samples kept for the p99: the last this many. */
#define STALE_RING 4096

/* Another node's partial of one experiment, as last read. */
typedef struct peer {
    char node[AGG_STORE_NODE_NAME_MAX + 1];
    agg_policy *p;
    uint64_t version;                          /* its policy_version: a new one is a new COMMIT */
    int have;                                  /* restored at least once */
    uint64_t reports, duplicates, assignments; /* its counts, as last read */
} peer;

struct agg_cluster_exp {
    agg_policy *own;   /* this node's partial: what the committer observes into and commits */
    agg_policy *spare; /* scratch for the next merged served state (the old served one) */
    peer *peers;
    size_t n_peers, cap_peers;
    uint64_t peers_version; /* the sum of the peers' versions merged into the served state */
};

struct agg_cluster {
    uint64_t next_us;      /* the next refresh (mono) */
    uint64_t last_read_us; /* when the last read's query began (mono); 0 before the first */
    uint8_t *buf;          /* a saved partial */
    size_t cap;
    pthread_mutex_t mu; /* the samples below: the committer writes, stats read */
    uint32_t ring[STALE_RING];
    size_t n_samples; /* all time; the ring holds the last min(n, STALE_RING) */
    uint64_t refreshes;
    int warned;     /* a failing read logged once until one works */
    int follow_due; /* the experiments changed and are still to be read (a read failed) */
};

int agg_cluster_additive(const agg_experiment *e)
{
    /* the contextual policies too where their statistics add (linucb, ldp-linucb-gaussian) */
    return e->ops->merge != NULL;
}

static int shared_store(const agg_server *s)
{
    return strcmp(agg_store_backend(s->store), "postgresql") == 0;
}

ldpb_err agg_cluster_may_serve(agg_server *s, const agg_experiment *e, const agg_store_exp *st,
                               char *errmsg)
{
    if (!shared_store(s) || agg_cluster_additive(e))
        return LDPB_OK;
    if (agg_seq_sequenced(s, e)) /* issue 19: its sequencer observes it, any node serves it */
        return LDPB_OK;
    const char *me = agg_store_node_name(s->store);
    if ((!st->owner[0] || strcmp(st->owner, me) == 0) && !st->others)
        return LDPB_OK;
    say(errmsg,
        "experiment %s: its policy %s keeps statistics that do not add across nodes, and its "
        "state is node '%s''s: only that node serves it (this node is '%s'; several nodes serve "
        "only the additive policies, docs/aggregator.md \"Several nodes on one PostgreSQL\")",
        e->ec.name, e->ec.policy, st->owner[0] ? st->owner : "another", me);
    return LDPB_ESTATE;
}

void agg_cluster_exp_free(agg_cluster_exp *c)
{
    if (!c)
        return;
    agg_policy_free(c->own);
    agg_policy_free(c->spare);
    for (size_t i = 0; i < c->n_peers; i++)
        agg_policy_free(c->peers[i].p);
    free(c->peers);
    free(c);
}

/* Saves `p` into the cluster's buffer. */
static ldpb_err save(agg_cluster *c, const agg_policy *p, size_t *len)
{
    ldpb_err err = agg_policy_save(p, c->buf, c->cap, len);
    if (err != LDPB_ERANGE)
        return err;
    uint8_t *nb = realloc(c->buf, *len);
    if (!nb)
        return LDPB_ENOMEM;
    c->buf = nb;
    c->cap = *len;
    return agg_policy_save(p, c->buf, c->cap, len);
}

static ldpb_err new_instance(const agg_experiment *e, agg_policy **out)
{
    char pmsg[AGG_ERRMSG_MAX] = "";
    if (e->contextual)
        return agg_ctx_policy_new(out, e->ec.policy, &e->ec.params, &e->ec.ctx, pmsg);
    return agg_policy_new(out, e->ec.policy, &e->ec.params, pmsg);
}

/* The experiment's partial, made on first use from the served state, which is then still this
 * node's alone (restored from its partial, or fresh): merges come only after. */
static agg_cluster_exp *exp_of(agg_server *s, agg_experiment *e)
{
    if (e->cl || !s->cluster || !agg_cluster_additive(e))
        return e->cl;
    agg_cluster_exp *c = calloc(1, sizeof *c);
    size_t len = 0;
    ldpb_err err = c ? new_instance(e, &c->own) : LDPB_ENOMEM;
    if (!err)
        err = new_instance(e, &c->spare);
    if (!err) {
        pthread_mutex_lock(&e->policy_mu);
        err = save(s->cluster, e->policy, &len);
        pthread_mutex_unlock(&e->policy_mu);
    }
    if (!err)
        err = agg_policy_restore(c->own, s->cluster->buf, len);
    if (err) {
        logf_(s, AGG_LOG_ERROR, "experiment %s: cannot keep its partial state (%s)", e->ec.name,
              ldpb_strerror(err));
        agg_cluster_exp_free(c);
        return NULL;
    }
    e->cl = c;
    return c;
}

agg_policy *agg_cluster_own(agg_server *s, agg_experiment *e)
{
    agg_cluster_exp *c = exp_of(s, e);
    return c ? c->own : NULL;
}

/* Serves own + every peer: built in the spare instance, swapped in under the lock. */
static void serve_merge(agg_server *s, agg_experiment *e)
{
    agg_cluster_exp *c = e->cl;
    size_t len = 0;
    ldpb_err err = save(s->cluster, c->own, &len);
    if (!err)
        err = agg_policy_restore(c->spare, s->cluster->buf, len);
    uint64_t version = e->committed.policy_version;
    for (size_t i = 0; !err && i < c->n_peers; i++) {
        ldpb_err me = agg_policy_merge(c->spare, c->peers[i].p);
        if (me)
            logf_(s, AGG_LOG_WARN, "experiment %s: node %s's partial state does not merge (%s)",
                  e->ec.name, c->peers[i].node, ldpb_strerror(me));
        else
            version += c->peers[i].version;
    }
    if (err) {
        logf_(s, AGG_LOG_ERROR, "experiment %s: cannot build the merged state (%s)", e->ec.name,
              ldpb_strerror(err));
        return;
    }
    pthread_mutex_lock(&e->policy_mu);
    agg_policy *old = e->policy;
    e->policy = c->spare;
    c->spare = old;
    e->policy_version = version;
    pthread_mutex_unlock(&e->policy_mu);
}

void agg_cluster_published(agg_server *s, agg_experiment *e)
{
    agg_cluster_exp *c = e->cl;
    agg_policy *p = c->own;
    c->own = e->next;
    e->next = p;
    serve_merge(s, e);
}

ldpb_err agg_cluster_reload(agg_server *s, agg_experiment *e, const uint8_t *blob, size_t len)
{
    ldpb_err err = agg_policy_restore(e->cl->own, blob, len);
    if (!err)
        serve_merge(s, e);
    return err;
}

void agg_cluster_refused(agg_server *s, agg_experiment *e)
{
    if (atomic_exchange(&e->running, 0))
        logf_(s, AGG_LOG_ERROR,
              "experiment %s: its state was taken by another node meanwhile, and its policy's "
              "statistics do not add: this node no longer serves it (%s)",
              e->ec.name, agg_store_errmsg(s->store));
}

/* The experiment whose row id is `id`, or NULL. */
static agg_experiment *find_by_id(agg_server *s, int64_t id)
{
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (e->store_id == id || (id == agg_store_default_experiment(s->store) && e == s->def))
            return e;
    }
    return NULL;
}

static void sample(agg_cluster *c, uint64_t ms)
{
    pthread_mutex_lock(&c->mu);
    c->ring[c->n_samples % STALE_RING] = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
    c->n_samples++;
    pthread_mutex_unlock(&c->mu);
}

/* One partial read: its peer slot updated; 1 if it is new. */
static int take_partial(agg_server *s, agg_experiment *e, const agg_store_partial *pt)
{
    agg_cluster_exp *c = e->cl;
    peer *pr = NULL;
    for (size_t i = 0; i < c->n_peers && !pr; i++)
        if (strcmp(c->peers[i].node, pt->node) == 0)
            pr = &c->peers[i];
    if (!pr) {
        if (c->n_peers == c->cap_peers) {
            size_t cap = c->cap_peers ? 2 * c->cap_peers : 4;
            peer *np = realloc(c->peers, cap * sizeof *np);
            if (!np)
                return 0;
            c->peers = np;
            c->cap_peers = cap;
        }
        pr = &c->peers[c->n_peers];
        memset(pr, 0, sizeof *pr);
        if (new_instance(e, &pr->p))
            return 0;
        snprintf(pr->node, sizeof pr->node, "%s", pt->node);
        c->n_peers++;
    }
    /* the counts move without the state (a batch of assignments only) */
    pr->reports = pt->reports;
    pr->duplicates = pt->duplicates;
    pr->assignments = pt->assignments;
    if (pr->have && pr->version == pt->policy_version)
        return 0;
    if (agg_policy_restore(pr->p, pt->state, pt->state_len)) {
        logf_(s, AGG_LOG_WARN, "experiment %s: node %s's partial state does not restore",
              e->ec.name, pt->node);
        return 0;
    }
    pr->version = pt->policy_version;
    pr->have = 1;
    return 1;
}

/* Every additive experiment's other nodes' counts (agg_experiment_counts), from what the
 * refresh read. */
static void sum_peer_counts(agg_server *s)
{
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!e->cl)
            continue;
        uint64_t r = 0, d = 0, a = 0;
        for (size_t j = 0; j < e->cl->n_peers; j++) {
            r += e->cl->peers[j].reports;
            d += e->cl->peers[j].duplicates;
            a += e->cl->peers[j].assignments;
        }
        atomic_store(&e->peer_reports, r);
        atomic_store(&e->peer_duplicates, d);
        atomic_store(&e->peer_assignments, a);
    }
}

/* The sequenced experiments' counts, summed over the nodes by the database (one query for all
 * of them; none without such experiments). */
static void read_shared_counts(agg_server *s)
{
    size_t n = agg_registry_count(&s->exps), k = 0;
    agg_store_counts *v = n ? calloc(n, sizeof *v) : NULL;
    for (size_t i = 0; v && i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (agg_seq_sequenced(s, e))
            v[k++].experiment = e->store_id;
    }
    if (!k) {
        free(v);
        return;
    }
    pthread_mutex_lock(&s->store_mu);
    ldpb_err err = agg_store_shared_counts(s->store, v, k);
    pthread_mutex_unlock(&s->store_mu);
    for (size_t i = 0, j = 0; !err && i < n && j < k; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!agg_seq_sequenced(s, e))
            continue;
        agg_store_counts *c = &v[j++];
        if (!c->found)
            continue;
        atomic_store(&e->peer_duplicates, c->lead_duplicates);
        atomic_store(&e->peer_assignments, c->lead_assignments);
        atomic_store(&e->follow_duplicates, c->follow_duplicates);
        atomic_store(&e->follow_assignments, c->follow_assignments);
        atomic_store(&e->counts_db, 1);
    }
    free(v);
}

/* The staleness of what a refresh brings: every commit of another node that it serves for the
 * first time came after the last read began (else that read would have had it) or is the one
 * read now, so its lag from COMMIT to served is at most the time since the last read began, or
 * (the first read) the partial's age plus this read's time. */
static void refresh(agg_server *s)
{
    agg_cluster *c = s->cluster;
    uint64_t t0 = mono_us(), prev = c->last_read_us;
    agg_store_partial *v = NULL;
    size_t n = 0;
    pthread_mutex_lock(&s->store_mu);
    ldpb_err err = agg_store_partials(s->store, &v, &n);
    pthread_mutex_unlock(&s->store_mu);
    if (err) {
        if (!c->warned)
            logf_(s, AGG_LOG_WARN, "cannot read the other nodes' partial states: %s",
                  agg_store_errmsg(s->store));
        c->warned = 1;
        return;
    }
    c->warned = 0;
    c->last_read_us = t0;
    /* Experiments whose peers changed are served anew, each once. */
    agg_experiment **changed = n ? calloc(n, sizeof *changed) : NULL;
    uint64_t *ages = n ? calloc(n, sizeof *ages) : NULL;
    size_t n_changed = 0, n_ages = 0;
    for (size_t i = 0; i < n && changed && ages; i++) {
        agg_experiment *e = find_by_id(s, v[i].experiment);
        if (!e || !exp_of(s, e) || !take_partial(s, e, &v[i]))
            continue;
        ages[n_ages++] = v[i].age_ms;
        size_t j = 0;
        while (j < n_changed && changed[j] != e)
            j++;
        if (j == n_changed)
            changed[n_changed++] = e;
    }
    for (size_t j = 0; j < n_changed; j++)
        serve_merge(s, changed[j]);
    sum_peer_counts(s);
    uint64_t now = mono_us(), took_ms = (now - t0) / 1000u;
    for (size_t i = 0; i < n_ages; i++) {
        uint64_t bound = prev ? (now - prev) / 1000u : ages[i] + took_ms;
        sample(c, bound < ages[i] + took_ms ? ages[i] + took_ms : bound);
    }
    free(changed);
    free(ages);
    agg_store_partials_free(v, n);
    pthread_mutex_lock(&c->mu);
    c->refreshes++;
    pthread_mutex_unlock(&c->mu);
}

/* ---- experiments created, stopped or resumed by other nodes ------------------------------ */

/* Whether `e`'s settings are the stored `text`: equal, or differing only where the running
 * experiment may take the stored value (the decision retention, taken here). 0, or 1 with the
 * reason in `why`. */
static int settings_follow(agg_experiment *e, const agg_exp_config *stored, const char *text,
                           char *why)
{
    char mine[AGG_EXP_SETTINGS_MAX];
    size_t n = agg_exp_config_format(&e->ec, mine, sizeof mine);
    if (n && strlen(text) == n && memcmp(mine, text, n) == 0)
        return 0;
    if (exp_change_refused(&e->ec, stored, why))
        return 1;
    if (e->ec.decision_retention_s != stored->decision_retention_s) {
        atomic_store(&e->retention_s, stored->decision_retention_s);
        e->ec.decision_retention_s = stored->decision_retention_s;
    }
    return 0;
}

/* A stored experiment this node does not know: built from its stored settings, registered with
 * the stored running flag and a fresh state (an additive one merges the others' partials at the
 * refresh that follows; a sequenced one serves its sequencer's state once the sequencer thread
 * has seen it). */
static void follow_new(agg_server *s, const agg_store_exp *st, const agg_exp_config *ec)
{
    char why[AGG_SERVER_ERRMAX] = "";
    if (agg_registry_count(&s->exps) >= s->cfg->experiments_max) {
        logf_(s, AGG_LOG_ERROR,
              "experiment %s, created by another node, is not served here: this node holds "
              "experiments_max = %" PRIu64 " experiments already",
              st->name, s->cfg->experiments_max);
        return;
    }
    agg_experiment *e = NULL;
    ldpb_err err = agg_experiment_new(&e, ec, s->seed_rng, why); /* seed_rng: under exp_mu */
    if (!err) {
        e->from_config = st->from_config;
        e->store_id = st->id;
        atomic_store(&e->running, st->running);
        err = agg_registry_add(&s->exps, e);
        if (err)
            agg_experiment_free(e);
    }
    if (err) {
        logf_(s, AGG_LOG_ERROR, "experiment %s, created by another node, cannot be served: %s",
              st->name, why[0] ? why : ldpb_strerror(err));
        return;
    }
    logf_(s, AGG_LOG_INFO,
          "experiment %s, created by another node, is served here too (%s): policy %s (%s "
          "mode), %u arms",
          e->ec.name, st->running ? "running" : "stopped", e->ec.policy, agg_mode_name(e->ec.mode),
          (unsigned)e->ec.params.k);
}

/* One stored experiment: this node's copy follows its row. */
static void follow_one(agg_server *s, const agg_store_exp *st)
{
    agg_exp_config ec;
    char why[AGG_SERVER_ERRMAX] = "";
    if (agg_exp_config_parse(&ec, st->name, st->settings, why)) {
        logf_(s, AGG_LOG_ERROR, "experiment %s: the stored settings do not parse (%s)", st->name,
              why);
        return;
    }
    agg_experiment *e = agg_registry_find(&s->exps, st->name);
    if (!e) {
        follow_new(s, st, &ec);
    } else if (e->diverged) {
        /* refused once, logged once: it stays off here until a restart settles it */
    } else if (settings_follow(e, &ec, st->settings, why)) {
        e->diverged = 1;
        atomic_store(&e->running, 0);
        logf_(s, AGG_LOG_ERROR,
              "experiment %s: its settings in the database are not this node's (%s): this node "
              "no longer serves it",
              st->name, why);
    } else if ((atomic_load(&e->running) != 0) != (st->running != 0)) {
        atomic_store(&e->running, st->running);
        logf_(s, AGG_LOG_INFO, "experiment %s %s by another node", st->name,
              st->running ? "resumed" : "stopped (its state is kept)");
    }
    agg_exp_config_fini(&ec);
}

/* When the database said the experiments changed: every row read (one query of names, settings
 * and flags) and followed, under exp_mu as the operator's commands are, so a local create or stop
 * and this read are one after the other. */
static void follow_experiments(agg_server *s)
{
    agg_cluster *c = s->cluster;
    agg_store_exp *v = NULL;
    size_t n = 0;
    pthread_mutex_lock(&s->exp_mu);
    pthread_mutex_lock(&s->store_mu);
    c->follow_due |= agg_store_experiments_changed(s->store);
    ldpb_err err = c->follow_due ? agg_store_catalog(s->store, &v, &n) : LDPB_OK;
    pthread_mutex_unlock(&s->store_mu);
    if (c->follow_due && !err) {
        c->follow_due = 0;
        for (size_t i = 0; i < n; i++)
            follow_one(s, &v[i]);
    }
    pthread_mutex_unlock(&s->exp_mu);
    agg_store_experiments_free(v, n);
}

ldpb_err agg_cluster_init(agg_server *s, char *errmsg)
{
    if (!shared_store(s))
        return LDPB_OK;
    agg_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        say(errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    s->cluster = c;
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++)
        exp_of(s, agg_registry_at(&s->exps, i));
    refresh(s);
    c->next_us = mono_us() + s->cfg->merge_interval_ms * 1000u;
    return LDPB_OK;
}

void agg_cluster_fini(agg_server *s)
{
    if (!s->cluster)
        return;
    pthread_mutex_destroy(&s->cluster->mu);
    free(s->cluster->buf);
    free(s->cluster);
    s->cluster = NULL;
}

uint64_t agg_cluster_due_us(agg_server *s)
{
    return s->cluster ? s->cluster->next_us : UINT64_MAX;
}

void agg_cluster_tick(agg_server *s)
{
    agg_cluster *c = s->cluster;
    if (!c || mono_us() < c->next_us)
        return;
    follow_experiments(s);
    refresh(s);
    read_shared_counts(s);
    c->next_us = mono_us() + s->cfg->merge_interval_ms * 1000u;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

void agg_cluster_stats(agg_server *s, uint64_t *p99_ms, uint64_t *samples, uint64_t *refreshes)
{
    *p99_ms = *samples = *refreshes = 0;
    agg_cluster *c = s->cluster;
    if (!c)
        return;
    uint32_t *v = malloc(sizeof c->ring);
    pthread_mutex_lock(&c->mu);
    size_t n = c->n_samples < STALE_RING ? c->n_samples : STALE_RING;
    *samples = c->n_samples;
    *refreshes = c->refreshes;
    if (v)
        memcpy(v, c->ring, n * sizeof *v);
    pthread_mutex_unlock(&c->mu);
    if (v && n) {
        qsort(v, n, sizeof *v, cmp_u32);
        size_t k = (99 * n + 99) / 100; /* ceil(0.99 n): the nearest-rank p99 */
        *p99_ms = v[k - 1];
    }
    free(v);
}
