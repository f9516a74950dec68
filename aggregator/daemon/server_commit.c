/* The committer (server_internal.h): its queue, the group commit of reports and decisions, and
 * the publishing of the committed policy state (docs/aggregator.md, "Durability"). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <time.h>

#include <sodium.h>

#include "server_internal.h"
#include "server_seq.h"

/* The commit duration histogram's bounds (server.h). */
const char *const agg_commit_phase_names[AGG_COMMIT_PHASES] = {"rows", "observe", "commit"};

const double agg_commit_bucket_us[AGG_COMMIT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000,
};

/* ---- the committer's queue --------------------------------------------------------------- */

/* Whether a held queue is as full as one transaction takes, or as full as decisions may make it:
 * then the committer starts, hold or not, so a hold never turns into refusals. */
static int hold_full(const agg_server *s)
{
    return s->q_count >= s->cfg->batch_max || s->q_count >= s->q_cap / 2;
}

/* Appends `it` if fewer than `limit` items wait; 0 otherwise. Decisions are queued only while
 * the queue is less than half full, so logging can never crowd out reports. */
int enqueue(agg_server *s, const item *it, size_t limit)
{
    pthread_mutex_lock(&s->queue_mu);
    int ok = s->q_count < limit;
    if (ok) {
        if (s->q_count == 0)
            s->q_waiting_since_us = mono_us();
        s->q[(s->q_head + s->q_count) % s->q_cap] = *it;
        s->q_count++;
        if (it->kind == ITEM_REPORT)
            s->q_reports++;
        /* a held batch wakes the committer once, at its release */
        if (s->q_holds ? hold_full(s)
                       : it->kind == ITEM_REPORT || s->q_count == 1 || s->q_count >= DECISION_BATCH)
            pthread_cond_signal(&s->queue_cv);
    }
    pthread_mutex_unlock(&s->queue_mu);
    return ok;
}

void enqueue_hold(agg_server *s)
{
    pthread_mutex_lock(&s->queue_mu);
    s->q_holds++;
    pthread_mutex_unlock(&s->queue_mu);
}

void enqueue_release(agg_server *s)
{
    pthread_mutex_lock(&s->queue_mu);
    s->q_holds--;
    if (!s->q_holds && s->q_count)
        pthread_cond_signal(&s->queue_cv);
    pthread_mutex_unlock(&s->queue_mu);
}

/* ---- the committer ----------------------------------------------------------------------- */

/* Saves policy p into *buf (grown as needed). */
ldpb_err save_policy(const agg_policy *p, uint8_t **buf, size_t *cap, size_t *len)
{
    ldpb_err err = agg_policy_save(p, *buf, *cap, len);
    if (err == LDPB_ERANGE) {
        size_t want = *len + *len / 2 + 64;
        uint8_t *nb = realloc(*buf, want);
        if (!nb)
            return LDPB_ENOMEM;
        *buf = nb;
        *cap = want;
        err = agg_policy_save(p, *buf, *cap, len);
    }
    return err;
}

static agg_store_row row_of(const item *it)
{
    agg_store_row r = {0};
    r.id = it->id;
    r.id_len = AGG_TOKEN_BYTES;
    r.arm = it->tok.arm;
    r.mechanism = it->exp->wire_desc->name;
    r.epsilon = it->tok.epsilon;
    r.propensity = it->tok.propensity;
    r.policy_version = it->tok.policy_version;
    r.expires_at_ms = it->tok.expires_at_ms;
    r.at_ms = it->at_ms;
    r.value = it->value;
    r.experiment = it->exp->store_id;
    /* each experiment's retention, fixed at insert: pruning stays one ordered delete */
    r.retain_until_ms = it->tok.expires_at_ms + atomic_load(&it->exp->retention_s) * 1000u;
    return r;
}

/* Reads the free space of state_dir and pauses or resumes assignments by it. */
void check_space(agg_server *s)
{
    struct statvfs vs;
    if (statvfs(s->cfg->state_dir, &vs) != 0)
        return; /* keep the last verdict: a failed statvfs says nothing about the space */
    uint64_t free_b = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
    atomic_store(&s->free_bytes, free_b);
    int low = s->cfg->min_free_mb && free_b < s->cfg->min_free_mb * 1048576u;
    s->space_checked_us = mono_us();
    int was = atomic_exchange(&s->space_low, low);
    if (low && !was)
        logf_(s, AGG_LOG_WARN,
              "state_dir %s has %.1f MiB free, below min_free_mb = %" PRIu64
              ": no assignments (clients get LDPB_EBUSY) until space returns",
              s->cfg->state_dir, (double)free_b / 1048576.0, s->cfg->min_free_mb);
    else if (!low && was)
        logf_(s, AGG_LOG_WARN, "state_dir %s has %.1f MiB free again: assignments resumed",
              s->cfg->state_dir, (double)free_b / 1048576.0);
}

void check_space_due(agg_server *s)
{
    /* while paused for space, every transaction looks again: assignments resume at once */
    if (atomic_load(&s->space_low) || !s->space_checked_us ||
        mono_us() - s->space_checked_us >= SPACE_CHECK_US)
        check_space(s);
}

/* A rolled-back transaction: pauses assignments (the next successful commit resumes them) and
 * logs, at most once per error_log_interval_s (a full disk fails every commit). */
static void note_commit_failure(agg_server *s, size_t n, ldpb_err answer)
{
    if (!atomic_exchange(&s->commits_failing, 1))
        logf_(s, AGG_LOG_WARN,
              "commits fail: no assignments (clients get LDPB_EBUSY) until one succeeds; "
              "retrying every %d ms",
              HEALTH_CHECK_MS);
    uint64_t suppressed = 0;
    if (!log_limit_pass(&s->commit_log, s->cfg->error_log_interval_s, &suppressed))
        return;
    char more[96] = "";
    if (suppressed)
        snprintf(more, sizeof more, " (%" PRIu64 " more failures not logged since the last line)",
                 suppressed);
    logf_(s, AGG_LOG_ERROR, "commit of %zu items failed, rolled back, reports answered %s: %s%s", n,
          answer == LDPB_EBUSY ? "'busy, resend' (the store is out of reach)" : "'I/O error'",
          agg_store_errmsg(s->store), more);
}

/* Retention of the propensity log (decision_retention_s, decision_rows_max), in the batch's
 * transaction and bounded by the batch's size. */
static ldpb_err prune_decisions(agg_server *s, size_t n, uint64_t *deleted)
{
    return agg_store_prune_decisions(s->store, ldpb_seal_now_ms(), s->cfg->decision_rows_max,
                                     PRUNE_CHUNK + n, deleted);
}

/* Moves up to batch_max queued items into s->batch; their number. */
static size_t take_batch(agg_server *s)
{
    pthread_mutex_lock(&s->queue_mu);
    size_t n = s->q_count < s->cfg->batch_max ? s->q_count : (size_t)s->cfg->batch_max;
    for (size_t i = 0; i < n; i++) {
        s->batch[i] = s->q[(s->q_head + i) % s->q_cap];
        s->q_reports -= s->batch[i].kind == ITEM_REPORT;
    }
    s->q_head = (s->q_head + n) % s->q_cap;
    s->q_count -= n;
    if (s->q_count)
        s->q_waiting_since_us = mono_us();
    pthread_mutex_unlock(&s->queue_mu);
    return n;
}

/* Decisions before reports, each by assignment id, and in batch order for equal ids (so the first
 * of a report sent twice in one batch is the one counted). */
static int row_order(const void *pa, const void *pb)
{
    const item *a = *(const item *const *)pa, *b = *(const item *const *)pb;
    if (a->kind != b->kind)
        return a->kind == ITEM_DECISION ? -1 : 1;
    int c = memcmp(a->id, b->id, AGG_TOKEN_BYTES);
    if (c)
        return c;
    return a < b ? -1 : a > b;
}

/* Inside the open transaction: each item's row, and each report's status in batch_status (0 new,
 * 1 duplicate, LDPB_EEXPIRED), counted into its experiment's b_new and b_dup. The rows go in one
 * order on every node (row_order): nodes sharing a PostgreSQL database whose batches hold the same
 * reports (a relay's failover resends a batch) then wait on each other's row locks in that order
 * and cannot deadlock, where arrival order let two transactions each hold the row the other
 * needed (PostgreSQL refused one: "deadlock detected", its batch answered "resend"). */
static ldpb_err write_rows(agg_server *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        s->batch_order[i] = &s->batch[i];
    qsort(s->batch_order, n, sizeof *s->batch_order, row_order);
    /* One call for the batch's rows: a database server gets them in one round trip */
    for (size_t k = 0; k < n; k++) {
        const item *it = s->batch_order[k];
        agg_store_batch_row *b = &s->batch_rows[k];
        b->row = row_of(it);
        b->kind = it->kind == ITEM_DECISION ? AGG_BATCH_DECISION
                  : it->expired             ? AGG_BATCH_LOOKUP
                                            : AGG_BATCH_REPORT;
    }
    ldpb_err err = agg_store_write_batch(s->store, s->batch_rows, n);
    for (size_t k = 0; k < n && !err; k++) {
        size_t i = (size_t)(s->batch_order[k] - s->batch);
        item *it = &s->batch[i];
        const agg_store_batch_row *b = &s->batch_rows[k];
        uint64_t *n_new = &it->exp->b_new, *n_dup = &it->exp->b_dup;
        s->batch_status[i] = 0;
        if (b->kind == AGG_BATCH_LOOKUP) {
            s->batch_status[i] = b->found ? 1 : LDPB_EEXPIRED;
            *n_dup += b->found != 0;
        } else if (b->kind == AGG_BATCH_REPORT) {
            s->batch_status[i] = b->found ? 0 : 1;
            *n_new += b->found != 0;
            *n_dup += !b->found;
        }
    }
    return err;
}

/* One pass of the batch's new reports into `next`. A report the policy refuses gets its code in
 * batch_status, its row is taken back and *again is set (the pass stops there). */
static ldpb_err observe_pass(agg_server *s, agg_experiment *e, size_t n, agg_policy_env *env,
                             int *again)
{
    ldpb_err err = LDPB_OK;
    for (size_t i = 0; i < n && !err && !*again; i++) {
        item *it = &s->batch[i];
        if (it->exp != e || it->kind != ITEM_REPORT || s->batch_status[i] != 0)
            continue;
        ldpb_err oe = e->contextual
                          ? agg_ctx_policy_observe(e->next, env, it->tok.arm, it->x, it->value)
                          : agg_policy_observe_with_propensity(e->next, env, it->tok.arm, it->value,
                                                               it->tok.propensity);
        if (oe == LDPB_ESTATE && e->contextual) {
            /* Assigned before the horizon was reached, reported after: counted, not
             * learned from (docs/aggregator.md, "Contextual policies"). */
            logf_(s, AGG_LOG_WARN,
                  "a report past the contextual policy's horizon is counted but not "
                  "learned from");
            oe = LDPB_OK;
        }
        if (!oe) {
            e->observed = 1;
        } else if (oe == LDPB_ENOMEM) {
            logf_(s, AGG_LOG_ERROR, "observing a report (arm %u): %s", (unsigned)it->tok.arm,
                  ldpb_strerror(oe));
            err = oe;
        } else {
            /* at most one line per error_log_interval_s: a client may resend it */
            uint64_t more = 0;
            if (log_limit_pass(&s->refusal_log, s->cfg->error_log_interval_s, &more))
                logf_(s, AGG_LOG_WARN,
                      "experiment %s: the policy refused a validated report (arm %u): %s; "
                      "answered alone, not counted (%" PRIu64 " more since the last line)",
                      e->ec.name, (unsigned)it->tok.arm, ldpb_strerror(oe), more);
            s->batch_status[i] = (int)oe;
            e->b_new--;
            err = agg_store_remove_report(s->store, it->id, AGG_TOKEN_BYTES);
            *again = 1;
        }
    }
    return err;
}

/* The batch's new reports observed into `next`, a copy of the served state, with the committer's
 * own generators (nothing a worker can read depends on its noise until the COMMIT), and `next`
 * saved into save_buf. */
static ldpb_err observe_batch(agg_server *s, agg_experiment *e, size_t n, size_t *save_len)
{
    size_t snap_len = 0;
    ldpb_err err;
    agg_policy *own = agg_cluster_own(s, e); /* several nodes: this node's partial */
    if (own) {
        err = save_policy(own, &s->snap_buf, &s->snap_cap, &snap_len);
    } else {
        pthread_mutex_lock(&e->policy_mu);
        err = save_policy(e->policy, &s->snap_buf, &s->snap_cap, &snap_len);
        pthread_mutex_unlock(&e->policy_mu);
    }
    agg_policy_env env = {&s->next_rand, e->ec.mode == AGG_MODE_CENTRAL ? s->next_noise : NULL};
    /* A report the policy refuses (docs/aggregator.md, "A report the policy refuses") is
     * answered alone and its row taken back; the copy restarts from the served state and the
     * batch is observed again without it, so the copy is as if it had never been seen,
     * whatever a refusing observe left behind (a noise draw, a counter), and the draws of
     * the dropped pass are never released. Each pass drops one report: at most
     * (refusals + 1) passes. Only running out of memory fails the batch (every report gets
     * LDPB_EIO and is resent): it says nothing about the report. */
    int again = 1;
    while (!err && again) {
        again = 0;
        e->observed = 0;
        err = agg_policy_restore(e->next, s->snap_buf, snap_len);
        if (!err)
            err = observe_pass(s, e, n, &env, &again);
    }
    /* A copy of a refused report later in the same batch was taken for a duplicate of it:
     * it gets the same refusal, since nothing was counted. */
    for (size_t i = 0; i < n && !err; i++) {
        if (s->batch[i].exp != e || s->batch[i].kind != ITEM_REPORT || s->batch_status[i] != 1)
            continue;
        for (size_t j = 0; j < i; j++) {
            int sj = s->batch_status[j];
            if (s->batch[j].exp == e && s->batch[j].kind == ITEM_REPORT && sj > 1 &&
                sj != LDPB_EEXPIRED &&
                memcmp(s->batch[j].id, s->batch[i].id, AGG_TOKEN_BYTES) == 0) {
                s->batch_status[i] = sj;
                e->b_dup--;
                break;
            }
        }
    }
    if (!err)
        err = save_policy(e->next, &s->save_buf, &s->save_cap, save_len);
    return err;
}

/* After a successful COMMIT: publishes each touched experiment's `next` if the batch changed it,
 * and updates the counters. */
static void publish(agg_server *s, uint64_t n_deleted, size_t n, uint64_t t0)
{
    uint64_t n_new = 0, n_dup = 0;
    for (size_t i = 0; i < s->n_touched; i++) {
        agg_experiment *e = s->touched[i];
        e->committed = e->pending;
        if (e->observed && e->cl) {
            agg_cluster_published(s, e); /* several nodes: the partial, then the merge */
        } else if (e->observed) {
            /* Durable now: publish by swapping the instances, O(1) under the lock. The old
             * served instance becomes `next`, overwritten by the next batch's copy. The served
             * cursor restarts where the copy had it (as after a restart, to the saved one), so
             * choices made during the commit may repeat once. */
            pthread_mutex_lock(&e->policy_mu);
            agg_policy *p = e->policy;
            e->policy = e->next;
            e->next = p;
            e->policy_version = e->pending.policy_version;
            pthread_mutex_unlock(&e->policy_mu);
        }
        atomic_store(&e->n_reports, e->pending.reports);
        atomic_store(&e->n_duplicates, e->pending.duplicates);
        n_new += e->b_new;
        n_dup += e->b_dup;
        e->touched = 0;
    }
    s->n_touched = 0;
    if (atomic_exchange(&s->commits_failing, 0)) {
        logf_(s, AGG_LOG_WARN,
              "commits succeed again: assignments resumed (%" PRIu64
              " failures since the last logged one)",
              s->commit_log.suppressed);
        s->commit_log.suppressed = 0;
    }
    atomic_fetch_add(&s->n_decisions_deleted, n_deleted);
    atomic_store(&s->n_decision_rows, agg_store_decision_rows(s->store));
    atomic_fetch_add(&s->n_reports, n_new);
    atomic_fetch_add(&s->n_duplicates, n_dup);
    atomic_fetch_add(&s->n_batches, 1);
    atomic_fetch_add(&s->n_batch_items, n);
    uint64_t took = mono_us() - t0;
    atomic_fetch_add(&s->commit_us, took);
    size_t bucket = 0;
    while (bucket < AGG_COMMIT_BUCKETS && (double)took > agg_commit_bucket_us[bucket])
        bucket++;
    atomic_fetch_add(&s->commit_hist[bucket], 1);
    for (size_t p = 0; p < AGG_COMMIT_PHASES; p++)
        atomic_fetch_add(&s->commit_phase_us[p], s->txn_phase_us[p]);
}

/* The experiments of s->batch[0..n) into s->touched, their batch counters reset. A probe (an
 * empty batch while commits fail) writes the default experiment's state, so it is a real write. */
static void collect_touched(agg_server *s, size_t n)
{
    s->n_touched = 0;
    for (size_t i = 0; i <= n; i++) {
        agg_experiment *e = i < n ? s->batch[i].exp : (s->n_touched ? NULL : s->def);
        if (!e || e->touched)
            continue;
        e->touched = 1;
        e->observed = 0;
        e->b_new = e->b_dup = 0;
        s->touched[s->n_touched++] = e;
    }
}

/* Inside the transaction: one touched experiment's batch observed into its `next` (or, with no
 * new report, its served state as it is, the round-robin cursor included, and nothing to
 * publish), and its state and counters written. */
static ldpb_err commit_experiment(agg_server *s, agg_experiment *e, size_t n)
{
    size_t save_len = 0;
    ldpb_err err;
    /* issue 19 hook (server_seq.h): a sequenced experiment on a shared store is observed by its
     * sequencer only; a follower leaves its rows to it, a sequencer checks its fence first. */
    if (agg_seq_sequenced(s, e)) {
        int done = 0;
        err = agg_seq_commit_hook(s, e, n, &done);
        if (err || done)
            return err;
    }
    agg_policy *own = agg_cluster_own(s, e); /* several nodes: this node's partial */
    if (e->b_new == 0 && own) {
        err = save_policy(own, &s->save_buf, &s->save_cap, &save_len);
    } else if (e->b_new == 0) {
        pthread_mutex_lock(&e->policy_mu);
        err = save_policy(e->policy, &s->save_buf, &s->save_cap, &save_len);
        pthread_mutex_unlock(&e->policy_mu);
    } else {
        err = observe_batch(s, e, n, &save_len);
    }
    agg_store_counters c = e->committed;
    c.policy_version += e->b_new;
    c.reports += e->b_new;
    c.duplicates += e->b_dup;
    c.assignments = atomic_load(&e->n_assignments);
    e->pending = c;
    if (!err)
        err = agg_store_put_exp_partial(s->store, e->store_id, s->save_buf, save_len, &c, !own);
    if (err == LDPB_ESTATE)
        agg_cluster_refused(s, e);
    return err;
}

/* Times a batch's transaction is run again after the database ended it to break a deadlock. */
#define COMMIT_RETRIES 3

/* One transaction for the batch, whichever experiments it holds: each observes into its own
 * `next` and writes its own state; the COMMIT makes all of them durable at once. */
static ldpb_err write_batch_txn(agg_server *s, size_t n, uint64_t *n_deleted)
{
    uint64_t t[AGG_COMMIT_PHASES + 1];
    t[0] = mono_us();
    ldpb_err err = agg_store_begin(s->store);
    if (!err)
        err = write_rows(s, n);
    t[1] = mono_us();
    for (size_t i = 0; i < s->n_touched && !err; i++)
        err = commit_experiment(s, s->touched[i], n);
    if (!err)
        err = prune_decisions(s, n, n_deleted);
    t[2] = mono_us();
    if (!err)
        err = agg_store_commit(s->store);
    t[3] = mono_us();
    for (size_t p = 0; p < AGG_COMMIT_PHASES; p++)
        s->txn_phase_us[p] = t[p + 1] - t[p];
    return err;
}

size_t agg_server_commit_batch(agg_server *s)
{
    check_space_due(s);
    /* While commits fail, an empty transaction probes whether they work again. */
    int probe = atomic_load(&s->commits_failing);
    size_t n = take_batch(s);
    if (n == 0 && !probe)
        return 0;

    uint64_t t0 = mono_us();
    collect_touched(s, n);
    pthread_mutex_lock(&s->store_mu);
    uint64_t n_deleted = 0;
    ldpb_err err = write_batch_txn(s, n, &n_deleted);
    /* Nodes sharing a PostgreSQL database: the database may end a transaction to break a
     * deadlock (or a serialization conflict) between nodes' batches. As PostgreSQL advises, the
     * transaction is run again from the start: each `next` is restored from its served state
     * and observed again, the noise drawn by the ended attempt never released. */
    for (int retry = 0; err && retry < COMMIT_RETRIES && agg_store_conflict(s->store); retry++) {
        agg_store_rollback(s->store);
        for (size_t i = 0; i < s->n_touched; i++)
            s->touched[i]->b_new = s->touched[i]->b_dup = 0;
        n_deleted = 0;
        atomic_fetch_add(&s->n_commit_retries, 1);
        err = write_batch_txn(s, n, &n_deleted);
    }
    if (err) {
        /* Each `next` and its noise are dropped unreleased; the served states were never
         * touched. */
        agg_store_rollback(s->store);
        /* Asked before a reload, whose own reads clear what the store knows of the outage */
        int busy = agg_store_unavailable(s->store);
        note_commit_failure(s, n, busy ? LDPB_EBUSY : LDPB_EIO);
        if (agg_store_needs_reload(s->store))
            reload_states(s); /* a COMMIT in doubt went through: memory from the database */
        pthread_mutex_unlock(&s->store_mu);
        for (size_t i = 0; i < s->n_touched; i++)
            s->touched[i]->touched = 0;
        s->n_touched = 0;
        atomic_fetch_add(&s->n_commit_failures, 1);
        /* The database out of reach (a restart, a failover): "busy, resend" */
        answer_batch(s, n, busy ? LDPB_EBUSY : LDPB_EIO);
        return n;
    }
    if (s->n_touched > 1)
        atomic_fetch_add(&s->n_multi_exp_batches, 1);
    publish(s, n_deleted, n, t0);
    pthread_mutex_unlock(&s->store_mu);
    answer_batch(s, n, 0);
    return n;
}

/* Under queue_mu: whether the committer should commit now (see DECISION_DELAY_MS). */
static int commit_due(const agg_server *s)
{
    if (s->committer_stop && s->q_count)
        return 1;
    if (s->q_holds && !hold_full(s) && mono_us() < s->q_waiting_since_us + HOLD_MAX_US)
        return 0;
    if (s->q_reports > 0 || s->q_count >= DECISION_BATCH)
        return 1;
    return s->q_count > 0 && mono_us() >= s->q_waiting_since_us + DECISION_DELAY_MS * 1000u;
}

void *committer_main(void *arg)
{
    agg_server *s = arg;
    /* named, for its CPU time per thread (bench/run_shard_bench.sh) */
    prctl(PR_SET_NAME, "ldpb-commit", 0, 0, 0);
    /* issue 19 hook: the sequencer thread lives as long as the committer (server_seq.h) */
    if (agg_seq_start(s))
        logf_(s, AGG_LOG_ERROR, "cannot start the sequencer thread: sequenced experiments wait");
    for (;;) {
        pthread_mutex_lock(&s->queue_mu);
        /* Wakes at HEALTH_CHECK_MS at the latest, so the free-space check and the probe of a
         * failing commit run without traffic too (agg_server_commit_batch does both). */
        uint64_t check_at = mono_us() + HEALTH_CHECK_MS * 1000u;
        if (agg_cluster_due_us(s) < check_at) /* the merge's refresh, when due sooner */
            check_at = agg_cluster_due_us(s);
        while (!commit_due(s) && !(s->committer_stop && s->q_count == 0) && mono_us() < check_at) {
            uint64_t due = check_at;
            if (s->q_count && s->q_waiting_since_us + DECISION_DELAY_MS * 1000u < due)
                due = s->q_waiting_since_us + DECISION_DELAY_MS * 1000u;
            if (s->q_count && s->q_holds && s->q_waiting_since_us + HOLD_MAX_US < due)
                due = s->q_waiting_since_us + HOLD_MAX_US;
            struct timespec ts = {(time_t)(due / 1000000u), (long)(due % 1000000u) * 1000L};
            pthread_cond_timedwait(&s->queue_cv, &s->queue_mu, &ts);
        }
        int done = s->q_count == 0 && s->committer_stop;
        pthread_mutex_unlock(&s->queue_mu);
        if (done)
            break;
        agg_server_commit_batch(s);
        agg_cluster_tick(s);
    }
    agg_seq_stop(s); /* issue 19 hook */
    return NULL;
}
