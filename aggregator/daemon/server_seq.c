/* Sequenced experiments (server_seq.h): the roles, the committer's hook, the sequencer thread. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctx_policy.h"
#include "server_cluster.h"
#include "server_internal.h"
#include "server_seq.h"
#include "store_seq.h"

struct agg_seq {
    pthread_t thread;
    int running;
    atomic_int stop;
    /* the thread's own buffers (the committer's are its own) */
    uint8_t *snap, *save;
    size_t snap_cap, save_cap;
    atomic_uint_fast64_t takeovers, last_takeover_ms, fenced, observed_deferred;
    log_limit log; /* the thread's failures, at most one line per error_log_interval_s */
    /* the experiments with unobserved reports, read once per round (agg_store_seq_waiting) */
    int64_t waiting[AGG_SEQ_WAITING_MAX];
    size_t n_waiting;
    int waiting_more; /* the list was full: drain every experiment this node sequences */
};

/* Made by agg_seq_attach, before any thread: a server that never shares its store has none. */
static struct agg_seq *seq_of(agg_server *s)
{
    return s->seq;
}

int agg_seq_sequenced(agg_server *s, const agg_experiment *e)
{
    /* Whatever does not add (server_cluster.h). The local contextual mode adds (its merge sums
     * the reports' statistics); the test of local_ctx stays because its reports' statistics have
     * no fixed length to wait in `reports.context`, should it ever stop adding. */
    return s->store && agg_store_seq_shared(s->store) && !agg_cluster_additive(e) && !e->local_ctx;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Under store_mu: the committed row `st` becomes what `e` serves (its blob restored into `next`,
 * then swapped in as the committer publishes), with its counters. */
static ldpb_err serve_row(agg_experiment *e, const agg_store_seq_state *st)
{
    if (st->blob) {
        ldpb_err err = agg_policy_restore(e->next, st->blob, st->len);
        if (err)
            return err;
    }
    pthread_mutex_lock(&e->policy_mu);
    if (st->blob) {
        agg_policy *p = e->policy;
        e->policy = e->next;
        e->next = p;
    }
    e->policy_version = st->c.policy_version;
    pthread_mutex_unlock(&e->policy_mu);
    e->committed = st->c;
    atomic_store(&e->n_reports, st->c.reports);
    atomic_store(&e->n_duplicates, st->c.duplicates);
    return LDPB_OK;
}

/* Under store_mu: tries `e`'s lock; taken, `e` continues from the state committed last. */
static ldpb_err try_lead(agg_server *s, agg_experiment *e, int attaching)
{
    agg_store_seq_state st;
    int got = 0;
    ldpb_err err = agg_store_seq_acquire(s->store, e->store_id, &got, &st);
    if (err || !got) {
        if (!err && atomic_load(&e->seq_role) != AGG_SEQ_FOLLOWER) {
            atomic_store(&e->seq_role, AGG_SEQ_FOLLOWER);
            logf_(s, AGG_LOG_INFO,
                  "experiment %s: another node is its sequencer; this node commits its reports "
                  "for it and serves its state",
                  e->ec.name);
        }
        return err;
    }
    err = serve_row(e, &st);
    free(st.blob);
    if (err) {
        agg_store_seq_release(s->store, e->store_id);
        return err;
    }
    e->seq_epoch = st.epoch;
    int was = atomic_exchange(&e->seq_role, AGG_SEQ_LEADER);
    if (attaching || was == AGG_SEQ_UNATTACHED) {
        logf_(s, AGG_LOG_INFO, "experiment %s: this node is its sequencer (epoch %" PRId64 ")",
              e->ec.name, st.epoch);
        return LDPB_OK;
    }
    uint64_t now = wall_ms();
    uint64_t gap = st.updated_at_ms > 0 && now > (uint64_t)st.updated_at_ms
                       ? now - (uint64_t)st.updated_at_ms
                       : 0;
    struct agg_seq *q = seq_of(s);
    if (q) {
        atomic_fetch_add(&q->takeovers, 1);
        atomic_store(&q->last_takeover_ms, gap);
    }
    logf_(s, AGG_LOG_WARN,
          "experiment %s: took over as its sequencer (epoch %" PRId64
          ") from the last committed state (policy_version %" PRIu64 ", %" PRIu64
          " reports), %" PRIu64 " ms after that state was committed",
          e->ec.name, st.epoch, st.c.policy_version, st.c.reports, gap);
    return LDPB_OK;
}

ldpb_err agg_seq_attach(agg_server *s, char *errmsg)
{
    if (!s->store || !agg_store_seq_shared(s->store))
        return LDPB_OK;
    if (!s->seq && !(s->seq = calloc(1, sizeof *s->seq))) {
        say(errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!agg_seq_sequenced(s, e))
            continue;
        pthread_mutex_lock(&s->store_mu);
        ldpb_err err = try_lead(s, e, 1);
        pthread_mutex_unlock(&s->store_mu);
        if (err) {
            say(errmsg, "experiment %s: cannot settle its sequencer: %s", e->ec.name,
                agg_store_errmsg(s->store));
            return err;
        }
    }
    return LDPB_OK;
}

ldpb_err agg_seq_commit_hook(agg_server *s, agg_experiment *e, size_t n, int *done)
{
    *done = 0;
    if (atomic_load(&e->seq_role) == AGG_SEQ_LEADER && !atomic_load(&e->seq_deposed)) {
        int held = 0;
        ldpb_err err = agg_store_seq_fence(s->store, e->store_id, e->seq_epoch, &held);
        if (!err && !held) {
            atomic_store(&e->seq_deposed, 1);
            struct agg_seq *q = seq_of(s);
            if (q)
                atomic_fetch_add(&q->fenced, 1);
            err = LDPB_ESTATE;
        }
        return err;
    }
    /* A follower (or a sequencer just deposed): the rows wait for the sequencer. */
    *done = 1;
    ldpb_err err = LDPB_OK;
    for (size_t i = 0; i < n && !err; i++) {
        item *it = &s->batch[i];
        if (it->exp != e || it->kind != ITEM_REPORT || it->expired || s->batch_status[i] != 0)
            continue;
        size_t nx = e->contextual && it->x ? agg_ctx_policy_d(e->next) : 0;
        err = agg_store_seq_defer(s->store, it->id, AGG_TOKEN_BYTES, nx ? it->x : NULL, nx);
    }
    /* this node's duplicates and assignments, which the sequencer's row does not count */
    if (!err)
        err = agg_store_put_node_counts(s->store, e->store_id, e->b_dup,
                                        atomic_load(&e->n_assignments));
    e->observed = 0;
    e->pending = e->committed;
    return err;
}

/* ---- the sequencer thread ---------------------------------------------------------------- */

/* Observes v[0..n) into e->next (a copy of the served state), with the committer's generators.
 * A report the policy refuses was acked by the node that took it: it stays counted, not learned
 * from, and the copy restarts without it (as the committer's observe_batch does). */
static ldpb_err observe_rows(agg_server *s, struct agg_seq *q, agg_experiment *e,
                             const agg_store_pending *v, size_t n)
{
    size_t snap_len = 0;
    pthread_mutex_lock(&e->policy_mu);
    ldpb_err err = save_policy(e->policy, &q->snap, &q->snap_cap, &snap_len);
    pthread_mutex_unlock(&e->policy_mu);
    uint8_t *skip = calloc(n ? n : 1, 1);
    if (!skip)
        return LDPB_ENOMEM;
    agg_policy_env env = {&s->next_rand, e->ec.mode == AGG_MODE_CENTRAL ? s->next_noise : NULL};
    int again = 1;
    while (!err && again) {
        again = 0;
        err = agg_policy_restore(e->next, q->snap, snap_len);
        for (size_t i = 0; i < n && !err && !again; i++) {
            if (skip[i])
                continue;
            ldpb_err oe;
            if (e->contextual)
                oe = v[i].x && v[i].nx == agg_ctx_policy_d(e->next)
                         ? agg_ctx_policy_observe(e->next, &env, v[i].arm, v[i].x, v[i].value)
                         : LDPB_EINVAL;
            else
                oe = agg_policy_observe_with_propensity(e->next, &env, v[i].arm, v[i].value,
                                                        v[i].propensity);
            if (oe == LDPB_ENOMEM) {
                err = oe;
            } else if (oe) {
                logf_(s, AGG_LOG_WARN,
                      "experiment %s: the policy refused a report another node took (arm %u): "
                      "%s; counted, not learned from",
                      e->ec.name, (unsigned)v[i].arm, ldpb_strerror(oe));
                skip[i] = 1;
                again = 1;
            }
        }
    }
    free(skip);
    return err;
}

/* Under store_mu: a fence that failed. The lock is given back so that whoever holds the epoch
 * now, or this node again through the lock, continues from the committed state. */
static void step_down(agg_server *s, agg_experiment *e)
{
    agg_store_seq_release(s->store, e->store_id);
    atomic_store(&e->seq_role, AGG_SEQ_FOLLOWER);
    atomic_store(&e->seq_deposed, 0);
    logf_(s, AGG_LOG_WARN,
          "experiment %s: fenced out as its sequencer (epoch %" PRId64
          " is no longer the database's): the transaction was rolled back and nothing it "
          "computed was published; now a follower",
          e->ec.name, e->seq_epoch);
}

/* Under store_mu, as the sequencer: one fenced transaction observing up to batch_max rows other
 * nodes left. */
static void drain(agg_server *s, struct agg_seq *q, agg_experiment *e)
{
    agg_store *st = s->store;
    agg_store_pending *v = NULL;
    size_t n = 0;
    int held = 0;
    /* The rows first: an idle sequencer's poll is one read (the fence would lock the row). */
    ldpb_err err = agg_store_begin(st);
    if (!err)
        err = agg_store_seq_pending(st, e->store_id, s->cfg->batch_max, &v, &n);
    if (!err && n == 0) {
        agg_store_rollback(st);
        return;
    }
    if (!err)
        err = agg_store_seq_fence(st, e->store_id, e->seq_epoch, &held);
    if (!err && !held) {
        agg_store_rollback(st);
        agg_store_seq_pending_free(v, n);
        atomic_fetch_add(&q->fenced, 1);
        step_down(s, e);
        return;
    }
    agg_store_counters c = e->committed;
    c.policy_version += n;
    c.reports += n;
    size_t len = 0;
    if (!err)
        err = observe_rows(s, q, e, v, n);
    if (!err)
        err = agg_store_seq_mark(st, e->store_id, v, n);
    if (!err)
        err = save_policy(e->next, &q->save, &q->save_cap, &len);
    if (!err)
        err = agg_store_put_exp_state(st, e->store_id, q->save, len, &c);
    if (!err)
        err = agg_store_commit(st);
    agg_store_seq_pending_free(v, n);
    if (err) {
        /* `next` and its noise are dropped unreleased, as the committer's are */
        uint64_t more = 0;
        if (log_limit_pass(&q->log, s->cfg->error_log_interval_s, &more))
            logf_(s, AGG_LOG_ERROR,
                  "experiment %s: observing other nodes' reports failed, rolled back: %s",
                  e->ec.name, agg_store_errmsg(st));
        agg_store_rollback(st);
        return;
    }
    pthread_mutex_lock(&e->policy_mu);
    agg_policy *p = e->policy;
    e->policy = e->next;
    e->next = p;
    e->policy_version = c.policy_version;
    pthread_mutex_unlock(&e->policy_mu);
    e->committed = c;
    atomic_store(&e->n_reports, c.reports);
    atomic_fetch_add(&q->observed_deferred, n);
}

/* Under store_mu, as a follower: the sequencer's last committed state, if it moved. */
static void refresh(agg_server *s, struct agg_seq *q, agg_experiment *e)
{
    agg_store_seq_state st;
    ldpb_err err = agg_store_seq_read(s->store, e->store_id, e->committed.policy_version, &st);
    if (!err)
        err = serve_row(e, &st);
    free(st.blob);
    uint64_t more = 0;
    if (err && log_limit_pass(&q->log, s->cfg->error_log_interval_s, &more))
        logf_(s, AGG_LOG_ERROR, "experiment %s: reading the sequencer's state failed: %s",
              e->ec.name, agg_store_errmsg(s->store));
}

static int is_waiting(const struct agg_seq *q, int64_t id)
{
    if (q->waiting_more)
        return 1;
    for (size_t i = 0; i < q->n_waiting; i++)
        if (q->waiting[i] == id)
            return 1;
    return 0;
}

/* Once per round, if this node sequences anything: which experiments have rows waiting. */
static void read_waiting(agg_server *s, struct agg_seq *q)
{
    q->n_waiting = 0;
    q->waiting_more = 0;
    size_t n = agg_registry_count(&s->exps), leads = 0;
    for (size_t i = 0; i < n && !leads; i++)
        leads = atomic_load(&agg_registry_at(&s->exps, i)->seq_role) == AGG_SEQ_LEADER;
    if (!leads)
        return;
    pthread_mutex_lock(&s->store_mu);
    ldpb_err err = agg_store_seq_waiting(s->store, q->waiting, AGG_SEQ_WAITING_MAX, &q->n_waiting);
    pthread_mutex_unlock(&s->store_mu);
    uint64_t more = 0;
    if (err && log_limit_pass(&q->log, s->cfg->error_log_interval_s, &more))
        logf_(s, AGG_LOG_ERROR, "looking for other nodes' reports failed: %s",
              agg_store_errmsg(s->store));
    q->waiting_more = !err && q->n_waiting == AGG_SEQ_WAITING_MAX;
}

static void tick(agg_server *s, struct agg_seq *q, agg_experiment *e)
{
    if (!agg_seq_sequenced(s, e))
        return;
    uint64_t now = mono_us();
    pthread_mutex_lock(&s->store_mu);
    if (atomic_load(&e->seq_deposed))
        step_down(s, e);
    if (atomic_load(&e->seq_role) != AGG_SEQ_LEADER && now >= e->seq_next_try_us) {
        e->seq_next_try_us = now + AGG_SEQ_POLL_MS * 1000u;
        ldpb_err err = try_lead(s, e, 0);
        uint64_t more = 0;
        if (err && log_limit_pass(&q->log, s->cfg->error_log_interval_s, &more))
            logf_(s, AGG_LOG_ERROR, "experiment %s: trying its sequencer lock failed: %s",
                  e->ec.name, agg_store_errmsg(s->store));
    }
    if (atomic_load(&e->seq_role) == AGG_SEQ_LEADER) {
        if (is_waiting(q, e->store_id))
            drain(s, q, e);
    } else if (now >= e->seq_next_refresh_us) {
        e->seq_next_refresh_us = now + AGG_SEQ_REFRESH_MS * 1000u;
        refresh(s, q, e);
    }
    pthread_mutex_unlock(&s->store_mu);
}

static void *seq_main(void *arg)
{
    agg_server *s = arg;
    struct agg_seq *q = s->seq;
    while (!atomic_load(&q->stop)) {
        read_waiting(s, q);
        size_t n = agg_registry_count(&s->exps);
        for (size_t i = 0; i < n && !atomic_load(&q->stop); i++)
            tick(s, q, agg_registry_at(&s->exps, i));
        nanosleep(&(struct timespec){0, AGG_SEQ_DRAIN_MS * 1000000L}, NULL);
    }
    return NULL;
}

ldpb_err agg_seq_start(agg_server *s)
{
    if (!s->store || !agg_store_seq_shared(s->store))
        return LDPB_OK; /* a sole node: nothing to sequence */
    struct agg_seq *q = seq_of(s);
    if (!q)
        return LDPB_OK; /* never attached: no experiment to sequence */
    atomic_store(&q->stop, 0);
    if (pthread_create(&q->thread, NULL, seq_main, s) != 0)
        return LDPB_ENOMEM;
    q->running = 1;
    return LDPB_OK;
}

void agg_seq_stop(agg_server *s)
{
    if (!s->seq || !s->seq->running)
        return;
    atomic_store(&s->seq->stop, 1);
    pthread_join(s->seq->thread, NULL);
    s->seq->running = 0;
}

void agg_seq_stats_get(agg_server *s, agg_seq_stats *o)
{
    memset(o, 0, sizeof *o);
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!agg_seq_sequenced(s, e))
            continue;
        int r = atomic_load(&e->seq_role);
        o->leader_of += r == AGG_SEQ_LEADER;
        o->follower_of += r != AGG_SEQ_LEADER;
    }
    if (!s->seq)
        return;
    o->takeovers = atomic_load(&s->seq->takeovers);
    o->last_takeover_ms = atomic_load(&s->seq->last_takeover_ms);
    o->fenced = atomic_load(&s->seq->fenced);
    o->observed_deferred = atomic_load(&s->seq->observed_deferred);
}

void agg_seq_free(agg_server *s)
{
    if (!s->seq)
        return;
    agg_seq_stop(s);
    free(s->seq->snap);
    free(s->seq->save);
    free(s->seq);
    s->seq = NULL;
}
