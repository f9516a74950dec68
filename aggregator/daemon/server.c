/* The aggregator service (server.h), setup: building a server from its configuration, starting
 * and stopping its threads, the counters, and the small helpers every part uses. The parts are
 * listed in server_internal.h. */
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
#include <unistd.h>

#include <sodium.h>

#include "server_internal.h"
#include "server_seq.h"

/* ---- small helpers ----------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void
logf_(agg_server *s, int level, const char *fmt, ...)
{
    if (!s->log || level > s->cfg->log_level)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->log(s->log_ctx, level, buf);
}

uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* 1 if a line may be logged now; *suppressed gets the occurrences swallowed since the last. */
int log_limit_pass(log_limit *l, uint64_t interval_s, uint64_t *suppressed)
{
    uint64_t now = mono_us();
    if (l->last_us && now - l->last_us < interval_s * 1000000u) {
        l->suppressed++;
        return 0;
    }
    *suppressed = l->suppressed;
    l->suppressed = 0;
    l->last_us = now;
    return 1;
}

void count_error(agg_server *s, ldpb_err code)
{
    unsigned c = (unsigned)code;
    atomic_fetch_add(&s->n_errors[c < 32 ? c : 31], 1);
}

/* ---- construction ------------------------------------------------------------------------ */

typedef ldpb_err (*key_add_fn)(agg_server *s, const uint8_t pk[LDPB_KEY_BYTES]);

static ldpb_err allow_key(agg_server *s, const uint8_t pk[LDPB_KEY_BYTES])
{
    return ldpb_keycache_allow(s->kc, pk);
}

/* An operator's key: may send experiment commands, and (with auth = allowlist) frames at all. */
static ldpb_err admin_key(agg_server *s, const uint8_t pk[LDPB_KEY_BYTES])
{
    uint8_t *a = realloc(s->admins, (s->n_admins + 1) * LDPB_KEY_BYTES);
    if (!a)
        return LDPB_ENOMEM;
    s->admins = a;
    memcpy(a + s->n_admins++ * LDPB_KEY_BYTES, pk, LDPB_KEY_BYTES);
    return s->cfg->auth == AGG_AUTH_ALLOWLIST ? ldpb_keycache_allow(s->kc, pk) : LDPB_OK;
}

/* Reads a file of public keys (one per line, '#' comments): the allow-list or the admin list. */
static ldpb_err load_keylist(agg_server *s, const char *what, const char *path, key_add_fn add,
                             char *errmsg)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        say(errmsg, "%s %s: cannot open: %s", what, path, strerror(errno));
        return LDPB_EIO;
    }
    char line[256];
    unsigned lineno = 0, keys = 0;
    ldpb_err err = LDPB_OK;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            say(errmsg, "%s:%u: line too long for a key", path, lineno);
            err = LDPB_ECORRUPT;
            break;
        }
        if (n && line[n - 1] == '\n')
            line[--n] = '\0';
        if (n && line[n - 1] == '\r')
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        uint8_t pk[LDPB_KEY_BYTES];
        char detail[LDPB_DETAIL_BYTES] = "";
        err = ldpb_keyfile_parse(line, n, LDPB_KEYFILE_PUBLIC, pk, detail);
        if (!err)
            err = add(s, pk);
        if (err) {
            say(errmsg, "%s:%u: %s", path, lineno,
                err == LDPB_ERANGE ? "more keys than the allow-list holds" : detail);
            break;
        }
        keys++;
    }
    if (!err && ferror(f)) {
        say(errmsg, "%s %s: read error", what, path);
        err = LDPB_EIO;
    }
    fclose(f);
    if (!err && keys == 0) {
        say(errmsg, "%s %s has no keys%s", what, path,
            add == allow_key ? ": no client could connect" : "");
        err = LDPB_EINVAL;
    }
    return err;
}

/* Lines of `path` (an upper bound on its keys), for sizing the allow-list. */
static size_t count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = 1;
    int c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* The sender until a transport or an embedder's sender is set: a route only comes from a
 * started transport, whose own sender then answers it. */
static void null_send(void *ctx, agg_reply_to to, const uint8_t *frame, size_t len)
{
    agg_server *s = ctx;
    (void)frame;
    (void)len;
    if (to.route && s && to.tag < s->n_tps)
        ldpb_tp_route_free(s->tps[to.tag], (ldpb_tp_route){to.route});
}

/* The replay window, in memory (ldpb/seal.h), on disk (nonce_log.h) and on /metrics
 * (replay_window_s is at least 1 by the config's bounds). */
static uint64_t replay_window_ms(const agg_config *cfg)
{
    return (uint64_t)cfg->replay_window_s * 1000u;
}

/* The secret key, the assignment token key, the key cache (with the allow-list) and the replay
 * cache. */
static ldpb_err load_keys(agg_server *s, const agg_config *cfg, char *errmsg)
{
    char kd[LDPB_DETAIL_BYTES] = "";
    ldpb_err err = ldpb_keyfile_load_secret(cfg->key, &s->kp, kd);
    if (err) {
        say(errmsg, "key %s: %s", cfg->key, kd[0] ? kd : ldpb_strerror(err));
        err = err == LDPB_ENOMEM ? err : LDPB_EINVAL; /* the configured file is unusable */
        return err;
    }
    err = agg_token_key_derive(&s->token_key, s->kp.sk);
    if (err) {
        say(errmsg, "cannot derive the assignment key");
        return err;
    }
    ldpb_keycache_opts ko;
    ldpb_keycache_opts_init(&ko);
    ko.max_entries = cfg->keycache_entries;
    ko.derive_rate = (uint32_t)cfg->key_derivations_per_s;
    if (cfg->auth == AGG_AUTH_ALLOWLIST) {
        size_t lines = count_lines(cfg->allowlist);
        if (cfg->admin_list)
            lines += count_lines(cfg->admin_list);
        ko.allowlist_max = lines < LDPB_ALLOWLIST_MAX ? lines : LDPB_ALLOWLIST_MAX;
    }
    err = ldpb_keycache_new(&s->kc, &s->kp, &ko);
    if (!err && cfg->auth == AGG_AUTH_ALLOWLIST) {
        err = load_keylist(s, "allowlist", cfg->allowlist, allow_key, errmsg);
        err = err == LDPB_OK || err == LDPB_ENOMEM ? err : LDPB_EINVAL;
    }
    if (!err && cfg->admin_list) {
        err = load_keylist(s, "admin_list", cfg->admin_list, admin_key, errmsg);
        err = err == LDPB_OK || err == LDPB_ENOMEM ? err : LDPB_EINVAL;
    }
    if (err) {
        if (!errmsg[0])
            say(errmsg, "cannot create the key cache: %s", ldpb_strerror(err));
        return err;
    }
    ldpb_replay_opts ro;
    ldpb_replay_opts_init(&ro);
    ro.window_ms = replay_window_ms(cfg);
    ro.max_entries = cfg->replay_entries;
    err = ldpb_replay_new(&s->rp, &ro);
    if (err) {
        say(errmsg, "cannot create the replay cache: %s", ldpb_strerror(err));
        return err;
    }

    return LDPB_OK;
}

/* The committer's generators (shared by every experiment) and the generator that seeds each
 * experiment's decisions. */
static ldpb_err make_generators(agg_server *s, char *errmsg)
{
    ldpb_err err = ldpb_rng_new_system(&s->seed_rng);
    if (!err)
        err = ldpb_rng_new_system(&s->next_rng);
    if (!err)
        err = ldpb_rng_new_system(&s->next_noise_rng);
    if (!err)
        err = agg_noise_new(&s->next_noise, AGG_NOISE_SECURE, s->next_noise_rng, NULL);
    if (err) {
        say(errmsg, "cannot create the generators: %s", ldpb_strerror(err));
        return err;
    }
    agg_rand_seed(&s->next_rand, s->next_rng);
    return LDPB_OK;
}

/* The node name where the configuration gives none: the host name (its characters outside
 * [A-Za-z0-9._-] as '-'), '-', and a hash of the first listen URL, so two daemons on one host
 * differ by where they listen and a restart keeps its name. */
static void default_node_name(const agg_config *cfg, char *out, size_t cap)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "node");
    host[40] = '\0';
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            *p = '-';
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = cfg->n_listen ? cfg->listen[0] : ""; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    snprintf(out, cap, "%s-%08x", host, (unsigned)h);
}

/* The state's meta: the learning problem of `default` where the configuration declares it (a
 * version 1 state migrates into it only if it is the same problem), else none. */
static ldpb_err open_store(agg_server *s, const agg_config *cfg, char *errmsg)
{
    const agg_exp_config *dc = agg_config_experiment(cfg, AGG_EXPERIMENT_DEFAULT);
    agg_store_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.new_state = cfg->new_state;
    meta.store_url = cfg->store;
    meta.row_shards = (unsigned)cfg->row_shards;
    char node[AGG_STORE_NODE_NAME_MAX + 1];
    if (cfg->node_name)
        snprintf(node, sizeof node, "%s", cfg->node_name);
    else
        default_node_name(cfg, node, sizeof node);
    meta.node_name = node;
    meta.public_key = s->kp.pk;
    meta.public_key_len = sizeof s->kp.pk;
    meta.check_only = cfg->check;
    char *settings = NULL;
    if (dc) {
        /* The policy refuses its parameters (eps_arm above epsilon, ...) before the state is
         * opened, let alone compared. */
        agg_experiment *trial = NULL;
        ldpb_err terr = agg_experiment_new(&trial, dc, s->seed_rng, errmsg);
        agg_experiment_free(trial);
        if (terr)
            return terr;
        const agg_policy_ops *ops = agg_ctx_policy_find(dc->policy);
        if (!ops)
            ops = agg_policy_find(dc->policy);
        settings = malloc(AGG_EXP_SETTINGS_MAX);
        if (!settings || !agg_exp_config_format(dc, settings, AGG_EXP_SETTINGS_MAX)) {
            free(settings);
            say(errmsg, "cannot format the settings of experiment default");
            return LDPB_ENOMEM;
        }
        /* The meta compares only what the policy reads: a state saved under another value of an
         * ignored parameter (kappa with a linear mechanism, epsilon without privacy) is the same
         * state. */
        meta.policy = dc->policy;
        meta.mode = agg_mode_name(dc->mode);
        meta.params = dc->params;
        meta.reads = ops ? agg_policy_reads(ops, &dc->params) : 0;
        meta.default_settings = settings;
        meta.default_retention_ms = dc->decision_retention_s * 1000u;
    }
    char smsg[AGG_STORE_ERRMAX] = "";
    ldpb_err err = agg_store_open(&s->store, cfg->state_dir, &meta, smsg);
    free(settings);
    if (err)
        say(errmsg, "%s", smsg);
    return err;
}

/* Opens the state in state_dir (refusing another configuration's), restores every experiment and
 * the counters from it, and binds assignments and the replay log to the state's identity
 * (state_id.h). */
static ldpb_err open_state(agg_server *s, const agg_config *cfg, char *errmsg)
{
    ldpb_err err = open_store(s, cfg, errmsg);
    if (!err)
        err = restore_experiments(s, cfg, errmsg);
    if (!err)
        err = agg_cluster_init(s, errmsg);
    if (!err)
        err = agg_token_key_bind_state(&s->token_key, s->kp.sk, agg_store_state_id(s->store),
                                       agg_store_legacy_tokens(s->store));
    if (!err)
        err = agg_nonce_log_open(&s->nlog, cfg->state_dir, s->kp.sk, agg_store_state_id(s->store),
                                 replay_window_ms(cfg), cfg->replay_entries, ldpb_seal_now_ms(),
                                 errmsg, AGG_SERVER_ERRMAX);
    if (err)
        return err;
    uint64_t reports = 0, dups = 0, assignments = 0;
    size_t n = agg_registry_count(&s->exps);
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        reports += e->committed.reports;
        dups += e->committed.duplicates;
        assignments += e->committed.assignments;
    }
    atomic_store(&s->n_reports, reports);
    atomic_store(&s->n_duplicates, dups);
    atomic_store(&s->n_assignments, assignments);
    atomic_store(&s->n_decision_rows, agg_store_decision_rows(s->store));
    check_space(s);

    return LDPB_OK;
}

/* What the start found: the experiments, the counts, how propensities are logged. */
static void log_start(agg_server *s, const agg_config *cfg)
{
    size_t n = agg_registry_count(&s->exps), running = 0;
    for (size_t i = 0; i < n; i++)
        running += atomic_load(&agg_registry_at(&s->exps, i)->running) != 0;
    if (s->def)
        logf_(s, AGG_LOG_INFO,
              "state %s: policy %s (%s mode), %u arms, %" PRIu64 " reports, %" PRIu64
              " assignments so far",
              cfg->state_dir, s->def->ec.policy, agg_mode_name(s->def->ec.mode),
              (unsigned)s->def->ec.params.k, s->def->committed.reports,
              s->def->committed.assignments);
    logf_(s, AGG_LOG_INFO,
          "state %s: %zu experiments (%zu running), %" PRIu64 " reports, %" PRIu64
          " assignments so far in all",
          cfg->state_dir, n, running, (uint64_t)atomic_load(&s->n_reports),
          (uint64_t)atomic_load(&s->n_assignments));
    logf_(s, AGG_LOG_INFO, "%s; %zu nonces of earlier runs still within the replay window",
          agg_store_state_note(s->store), agg_nonce_log_loaded(s->nlog));
    if (!s->def)
        return;
    if (s->def->policy->ops->propensity)
        logf_(s, AGG_LOG_INFO, "propensity: the policy's exact probability of each choice");
    else if (s->def->mc_propensity)
        logf_(s, AGG_LOG_INFO, "propensity: estimated from %" PRIu64 " extra draws per choice",
              cfg->propensity_samples);
    else
        logf_(s, AGG_LOG_INFO, "propensity: 1 (the policy chooses deterministically)");
}

ldpb_err agg_server_new(agg_server **out, const agg_config *cfg, agg_log_fn log, void *log_ctx,
                        char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !cfg || !errmsg)
        return LDPB_EINVAL;
    *out = NULL;
    char detail[AGG_SERVER_ERRMAX];
    if (agg_config_check(cfg, detail) != LDPB_OK) {
        say(errmsg, "%s", detail);
        return LDPB_EINVAL;
    }
    if (sodium_init() < 0) {
        say(errmsg, "libsodium cannot initialise");
        return LDPB_ECRYPTO;
    }
    /* sodium_malloc: the struct holds the secret key and the token key, so its pages are locked
     * (never swapped), excluded from core dumps and wiped by sodium_free. */
    agg_server *s = ldpb_secmem_alloc(sizeof *s);
    if (!s)
        return LDPB_ENOMEM;
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->log = log;
    s->log_ctx = log_ctx;
    s->send = null_send;
    s->send_ctx = s;
    pthread_mutex_init(&s->seal_mu, NULL);
    pthread_mutex_init(&s->exp_mu, NULL);
    pthread_mutex_init(&s->store_mu, NULL);
    agg_registry_init(&s->exps);
    pthread_mutex_init(&s->queue_mu, NULL);
    pthread_mutex_init(&s->reply_mu, NULL);
    pthread_cond_init(&s->reply_cv, NULL);
    pthread_cond_init(&s->reply_room_cv, NULL);
    /* The committer's timed waits are on mono_us()'s clock. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->queue_cv, &ca);
    pthread_condattr_destroy(&ca);

    ldpb_err err = load_keys(s, cfg, errmsg);
    if (!err)
        err = make_generators(s, errmsg);
    if (!err)
        err = open_state(s, cfg, errmsg);
    if (err)
        goto fail;

    /* The committer's queue and buffers. */
    s->q_cap = cfg->queue_max;
    s->q = calloc(s->q_cap, sizeof *s->q);
    s->batch = calloc(cfg->batch_max, sizeof *s->batch);
    s->batch_status = calloc(cfg->batch_max, sizeof *s->batch_status);
    s->batch_order = calloc(cfg->batch_max, sizeof *s->batch_order);
    s->batch_rows = calloc(cfg->batch_max, sizeof *s->batch_rows);
    s->touched = calloc(cfg->batch_max + 1, sizeof *s->touched);
    if (!s->q || !s->batch || !s->batch_status || !s->batch_order || !s->batch_rows ||
        !s->touched) {
        err = LDPB_ENOMEM;
        say(errmsg, "out of memory for a queue of %zu", s->q_cap);
        goto fail;
    }
    err = agg_worker_new(&s->cw);
    if (err) {
        say(errmsg, "cannot create the committer's generator");
        goto fail;
    }
    log_start(s, cfg);
    *out = s;
    return LDPB_OK;
fail:
    agg_server_free(s);
    return err;
}

void agg_server_set_sender(agg_server *s, agg_send_fn send, void *ctx)
{
    if (!s || s->started)
        return;
    s->send = send ? send : null_send;
    s->send_ctx = send ? ctx : s;
}

void agg_server_inject_disk_full(agg_server *s, int on)
{
    agg_store_inject_disk_full(s->store, on);
}

void agg_server_stats_get(agg_server *s, agg_server_stats *o)
{
    memset(o, 0, sizeof *o);
    o->requests = atomic_load(&s->n_requests);
    o->assignments = atomic_load(&s->n_assignments);
    o->reports = atomic_load(&s->n_reports);
    o->duplicates = atomic_load(&s->n_duplicates);
    o->status = atomic_load(&s->n_status);
    o->plain_errors = atomic_load(&s->n_plain_errors);
    for (int i = 0; i < 32; i++)
        o->errors[i] = atomic_load(&s->n_errors[i]);
    o->batches = atomic_load(&s->n_batches);
    o->batch_items = atomic_load(&s->n_batch_items);
    o->commit_failures = atomic_load(&s->n_commit_failures);
    o->commit_retries = atomic_load(&s->n_commit_retries);
    o->commit_us = atomic_load(&s->commit_us);
    for (size_t b = 0; b <= AGG_COMMIT_BUCKETS; b++)
        o->commit_hist[b] = atomic_load(&s->commit_hist[b]);
    for (size_t p = 0; p < AGG_COMMIT_PHASES; p++)
        o->commit_phase_us[p] = atomic_load(&s->commit_phase_us[p]);
    pthread_mutex_lock(&s->seal_mu);
    o->replay_entries = ldpb_replay_count(s->rp);
    o->replay_evicted = ldpb_replay_evicted(s->rp);
    ldpb_keycache_stats ks;
    ldpb_keycache_stats_get(s->kc, &ks);
    o->key_derivations = ks.derived;
    o->key_derivations_refused = ks.refused;
    uint64_t floor_ms = ldpb_replay_floor_ms(s->rp), now_ms = ldpb_seal_now_ms();
    pthread_mutex_unlock(&s->seal_mu);
    o->replay_window_ms = replay_window_ms(s->cfg);
    if (floor_ms && now_ms > floor_ms && now_ms - floor_ms < o->replay_window_ms)
        o->replay_window_ms = now_ms - floor_ms;
    o->decisions_dropped = atomic_load(&s->n_decisions_dropped);
    o->send_failures = atomic_load(&s->n_send_failures);
    o->relay_batches = atomic_load(&s->n_relay_batches);
    o->multi_experiment_batches = atomic_load(&s->n_multi_exp_batches);
    agg_cluster_stats(s, &o->merge_staleness_p99_ms, &o->merge_staleness_samples,
                      &o->merge_refreshes);
    size_t n_exp = agg_registry_count(&s->exps);
    o->experiments = n_exp;
    for (size_t i = 0; i < n_exp; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        o->experiments_running += e && atomic_load(&e->running);
    }
    o->assignments_paused = atomic_load(&s->commits_failing) || atomic_load(&s->space_low);
    o->decisions_deleted = atomic_load(&s->n_decisions_deleted);
    o->decision_rows = atomic_load(&s->n_decision_rows);
    o->free_bytes = atomic_load(&s->free_bytes);
    pthread_mutex_lock(&s->queue_mu);
    o->queue_depth = s->q_count;
    pthread_mutex_unlock(&s->queue_mu);
}

uint32_t agg_server_arms(const agg_server *s)
{
    return s->def ? (uint32_t)s->def->ec.params.k : 0;
}

size_t agg_server_metrics_experiments_max(const agg_server *s)
{
    return (size_t)s->cfg->metrics_experiments_max;
}

static void exp_stats_of(agg_experiment *e, agg_exp_stats *o)
{
    o->reports = atomic_load(&e->n_reports);
    o->duplicates = atomic_load(&e->n_duplicates);
    o->assignments = atomic_load(&e->n_assignments);
    o->running = atomic_load(&e->running);
}

size_t agg_server_experiment_stats(agg_server *s, agg_exp_stats *out, size_t max,
                                   agg_exp_stats *rest, size_t *n_rest)
{
    memset(rest, 0, sizeof *rest);
    snprintf(rest->name, sizeof rest->name, "_other");
    *n_rest = 0;
    size_t n = agg_registry_count(&s->exps), k = 0;
    for (size_t i = 0; i < n; i++) {
        agg_experiment *e = agg_registry_at(&s->exps, i);
        if (!e)
            break;
        if (k < max) {
            memset(&out[k], 0, sizeof out[k]);
            snprintf(out[k].name, sizeof out[k].name, "%s", e->ec.name);
            exp_stats_of(e, &out[k++]);
            continue;
        }
        agg_exp_stats x;
        exp_stats_of(e, &x);
        rest->reports += x.reports;
        rest->duplicates += x.duplicates;
        rest->assignments += x.assignments;
        rest->running += x.running;
        (*n_rest)++;
    }
    return k;
}

void agg_server_set_commit_hook(agg_server *s, agg_store_commit_hook fn, void *ctx)
{
    agg_store_set_commit_hook(s->store, fn, ctx);
}

ldpb_err agg_server_describe(agg_server *s, agg_arm_status *arms, uint32_t k)
{
    agg_experiment *e = s->def;
    if (!e)
        return LDPB_ENOEXPERIMENT;
    if (k < (uint32_t)e->ec.params.k)
        return LDPB_ERANGE;
    pthread_mutex_lock(&e->policy_mu);
    ldpb_err err = agg_policy_describe(e->policy, arms, (uint32_t)e->ec.params.k);
    pthread_mutex_unlock(&e->policy_mu);
    return err;
}

/* The reply stage's ring and threads (cfg->repliers of them; none: the committer answers). The
 * ring holds two batches, so the committer waits only while the repliers are a batch behind. */
static void close_listeners(agg_server *s, int linger_ms)
{
    /* the linger once: every listener's last replies leave meanwhile */
    for (size_t i = 0; i < s->n_tps; i++) {
        ldpb_tp_close(s->tps[i], i == 0 ? linger_ms : 0);
        s->tps[i] = NULL;
    }
    s->n_tps = 0;
}

static ldpb_err start_repliers(agg_server *s, char *errmsg)
{
    size_t want = s->cfg->repliers;
    if (want == 0)
        return LDPB_OK;
    size_t batch = s->cfg->batch_max < s->q_cap ? (size_t)s->cfg->batch_max : s->q_cap;
    s->rj_cap = 2 * batch;
    s->rj_head = s->rj_count = 0;
    s->reply_stop = 0;
    s->rj = calloc(s->rj_cap, sizeof *s->rj);
    s->repliers = calloc(want, sizeof *s->repliers);
    worker_arg *args = calloc(want, sizeof *args);
    if (!s->rj || !s->repliers || !args) {
        free(args);
        say(errmsg, "out of memory for the reply stage");
        return LDPB_ENOMEM;
    }
    s->replier_args = args;
    for (size_t i = 0; i < want; i++) {
        args[i].s = s;
        if (agg_worker_new(&args[i].w) != LDPB_OK ||
            pthread_create(&s->repliers[i], NULL, replier_main, &args[i]) != 0) {
            agg_worker_free(args[i].w);
            args[i].w = NULL;
            say(errmsg, "cannot start replier %zu", i);
            return LDPB_ENOMEM;
        }
        s->n_repliers++;
    }
    return LDPB_OK;
}

/* Lets the repliers answer everything handed to them, then joins them. */
static void stop_repliers(agg_server *s)
{
    pthread_mutex_lock(&s->reply_mu);
    s->reply_stop = 1;
    pthread_cond_broadcast(&s->reply_cv);
    pthread_mutex_unlock(&s->reply_mu);
    for (size_t i = 0; i < s->n_repliers; i++)
        pthread_join(s->repliers[i], NULL);
    for (size_t i = 0; s->replier_args && i < s->cfg->repliers; i++)
        agg_worker_free(s->replier_args[i].w);
    free(s->replier_args);
    free(s->repliers);
    if (s->rj)
        sodium_memzero(s->rj, s->rj_cap * sizeof *s->rj);
    free(s->rj);
    s->replier_args = NULL;
    s->repliers = NULL;
    s->rj = NULL;
    s->n_repliers = 0;
}

ldpb_err agg_server_start(agg_server *s, char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!s)
        return LDPB_EINVAL;
    if (s->started) {
        say(errmsg, "already started");
        return LDPB_ESTATE;
    }
    ldpb_tp_opts to;
    ldpb_tp_opts_init(&to);
    to.recv_max = RECV_MAX_BYTES;
    to.send_buffer = SEND_BUFFER_BYTES;
    ldpb_err err = LDPB_OK;
    for (size_t i = 0; i < s->cfg->n_listen && !err; i++) {
        char detail[LDPB_DETAIL_BYTES] = "";
        const char *url = s->cfg->listen[i];
        err = ldpb_tp_listen(&s->tps[i], &url, 1, &to, detail);
        if (err)
            say(errmsg, "listen: %s", detail);
        else
            s->n_tps++;
    }
    if (err)
        goto fail;
    if (s->send == null_send) {
        s->send = tp_send_reply;
        s->send_ctx = s;
    }
    if (s->cfg->metrics) {
        char mmsg[AGG_SERVER_ERRMAX] = "";
        err = agg_metrics_start(&s->metrics, s->cfg->metrics, s, mmsg);
        if (err) {
            say(errmsg, "metrics %s: %s", s->cfg->metrics, mmsg);
            goto fail;
        }
    }
    s->started = 1;
    err = start_repliers(s, errmsg);
    if (err)
        goto fail_started;
    if (pthread_create(&s->committer, NULL, committer_main, s) != 0) {
        err = LDPB_ENOMEM;
        say(errmsg, "cannot start the committer thread");
        goto fail_started;
    }
    s->committer_running = 1;
    /* Every listener needs a worker of its own: at least one per listen URL. */
    s->want_workers = s->cfg->workers > s->n_tps ? (size_t)s->cfg->workers : s->n_tps;
    s->workers = calloc(s->want_workers, sizeof *s->workers);
    worker_arg *args = calloc(s->want_workers, sizeof *args);
    if (!s->workers || !args) {
        free(args);
        err = LDPB_ENOMEM;
        say(errmsg, "out of memory");
        goto fail_started;
    }
    for (size_t i = 0; i < s->want_workers; i++) {
        args[i].s = s;
        args[i].listener = i % s->n_tps;
        if (agg_worker_new(&args[i].w) != LDPB_OK ||
            pthread_create(&s->workers[i], NULL, worker_main, &args[i]) != 0) {
            agg_worker_free(args[i].w);
            args[i].w = NULL;
            err = LDPB_ENOMEM;
            say(errmsg, "cannot start worker %zu", i);
            break;
        }
        s->n_workers++;
    }
    /* The worker args live until the workers are joined: park them in the server. */
    s->worker_args = args;
    if (s->n_workers < s->want_workers)
        goto fail_started;
    for (size_t i = 0; i < s->cfg->n_listen; i++)
        logf_(s, AGG_LOG_INFO, "listening on %s", s->cfg->listen[i]);
    logf_(s, AGG_LOG_INFO, "%zu workers, %zu repliers, batches of up to %" PRIu64 " items",
          s->n_workers, s->n_repliers, s->cfg->batch_max);
    return LDPB_OK;
fail_started:
    agg_server_stop(s);
    return err;
fail:
    close_listeners(s, 0);
    return err;
}

void agg_server_stop(agg_server *s)
{
    if (!s || !s->started)
        return;
    atomic_store(&s->stopping, 1);
    for (size_t i = 0; i < s->n_workers; i++)
        pthread_join(s->workers[i], NULL);
    for (size_t i = 0; s->worker_args && i < s->want_workers; i++)
        agg_worker_free(s->worker_args[i].w);
    free(s->worker_args);
    free(s->workers);
    s->worker_args = NULL;
    s->workers = NULL;
    s->n_workers = 0;
    if (s->committer_running) {
        pthread_mutex_lock(&s->queue_mu);
        s->committer_stop = 1;
        pthread_cond_signal(&s->queue_cv);
        pthread_mutex_unlock(&s->queue_mu);
        pthread_join(s->committer, NULL);
        s->committer_running = 0;
    }
    stop_repliers(s); /* after the committer: they answer its last batches */
    agg_metrics_stop(s->metrics);
    s->metrics = NULL;
    close_listeners(s, LINGER_MS); /* lets the transport flush the last replies */
    s->started = 0;
    logf_(s, AGG_LOG_INFO, "stopped: %" PRIu64 " reports counted, %" PRIu64 " assignments",
          (uint64_t)atomic_load(&s->n_reports), (uint64_t)atomic_load(&s->n_assignments));
}

void agg_server_free(agg_server *s)
{
    if (!s)
        return;
    agg_server_stop(s);
    /* Anything still queued (a server never started) is answered with an error. */
    while (s->q && s->q_count) {
        item *it = &s->q[s->q_head];
        if (it->kind == ITEM_REPORT)
            answer_report(s, s->cw, it, LDPB_EIO);
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_count--;
    }
    agg_seq_free(s); /* issue 19 (server_seq.h) */
    agg_store_close(s->store);
    agg_cluster_fini(s);
    agg_registry_fini(&s->exps);
    ldpb_rng_free(s->seed_rng);
    agg_noise_free(s->next_noise);
    ldpb_rng_free(s->next_rng);
    ldpb_rng_free(s->next_noise_rng);
    ldpb_keycache_free(s->kc);
    ldpb_replay_free(s->rp);
    agg_nonce_log_close(s->nlog);
    ldpb_keypair_wipe(&s->kp);
    agg_token_key_wipe(&s->token_key);
    agg_worker_free(s->cw);
    if (s->q)
        sodium_memzero(s->q, s->q_cap * sizeof *s->q);
    free(s->q);
    if (s->batch)
        sodium_memzero(s->batch, s->cfg->batch_max * sizeof *s->batch);
    free(s->batch);
    free(s->batch_status);
    free(s->batch_order);
    free(s->batch_rows);
    free(s->touched);
    free(s->save_buf);
    free(s->snap_buf);
    pthread_mutex_destroy(&s->seal_mu);
    pthread_mutex_destroy(&s->exp_mu);
    pthread_mutex_destroy(&s->store_mu);
    free(s->admins);
    pthread_mutex_destroy(&s->queue_mu);
    pthread_mutex_destroy(&s->reply_mu);
    pthread_cond_destroy(&s->reply_cv);
    pthread_cond_destroy(&s->reply_room_cv);
    pthread_cond_destroy(&s->queue_cv);
    ldpb_secmem_free(s, sizeof *s);
}
