/* The store seam (store.h): the backend is chosen by the scheme of the store URL, and every call
 * goes through its table of operations (store_be.h); what all backends do alike is here. A lock
 * file (flock) in the state directory keeps a second daemon off the same state, whatever the
 * backend: the directory also holds the identity marker and the replay log of the state. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/wire.h"
#include "store_be.h"

#define say agg_store_say

static const agg_store_ops *const backends[] = {&agg_store_sqlite_ops, &agg_store_pg_ops};

static int scheme_is(const char *name, const char *url, size_t n)
{
    return name && strlen(name) == n && strncmp(url, name, n) == 0;
}

/* The backend of `url` (NULL or "" is SQLite); NULL with `errmsg` for another scheme. The scheme
 * ends at the first ':'. */
static const agg_store_ops *backend_of(const char *url, char *errmsg)
{
    if (!url || !url[0])
        return &agg_store_sqlite_ops;
    const char *colon = strchr(url, ':');
    size_t n = colon ? (size_t)(colon - url) : 0;
    for (size_t i = 0; colon && i < sizeof backends / sizeof backends[0]; i++)
        if (scheme_is(backends[i]->scheme, url, n) || scheme_is(backends[i]->alias, url, n))
            return backends[i];
    say(errmsg,
        "store URL '%.64s': unknown scheme (sqlite: for state_dir/%s, or "
        "postgresql://... for a PostgreSQL database)",
        url, AGG_STORE_DB_NAME);
    return NULL;
}

ldpb_err agg_store_check_url(const char *url, char *errmsg)
{
    errmsg[0] = '\0';
    const agg_store_ops *ops = backend_of(url, errmsg);
    if (!ops)
        return LDPB_EINVAL;
    if (ops == &agg_store_sqlite_ops && url && url[0] && strcmp(url, "sqlite:") != 0) {
        say(errmsg,
            "store URL '%.64s': the SQLite store is always state_dir/%s; write just 'sqlite:'", url,
            AGG_STORE_DB_NAME);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

const char *agg_store_scheme_of(const char *url)
{
    char errmsg[AGG_STORE_ERRMAX];
    const agg_store_ops *ops = backend_of(url, errmsg);
    return ops ? ops->scheme : "";
}

unsigned agg_store_row_shards(const agg_store *s)
{
    return s->row_shards > 1 ? s->row_shards : 1;
}

void agg_store_set_shard_hook(agg_store *s, agg_store_commit_hook fn, void *ctx)
{
    s->shard_hook = fn;
    s->shard_hook_ctx = ctx;
}

const char *agg_store_backend(const agg_store *s)
{
    return s->ops->scheme;
}

void agg_store_close(agg_store *s)
{
    if (!s)
        return;
    s->ops->close(s);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    free(s->pending_meta);
    free(s->pending_default);
    free(s->pending_settings);
    free(s);
}

#define META_ROWS_MAX 16

int64_t agg_store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int agg_store_exp_name_valid(const char *name)
{
    return name && ldpb_wire_experiment_valid(name, strlen(name)); /* the wire's rule */
}

int agg_store_node_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > AGG_STORE_NODE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

const char *agg_store_node_name(const agg_store *s)
{
    return s->node;
}

int agg_store_unavailable(const agg_store *s)
{
    return s->ops->unavailable && s->ops->unavailable(s);
}

int agg_store_conflict(const agg_store *s)
{
    return s->ops->conflict && s->ops->conflict(s);
}

int agg_store_needs_reload(const agg_store *s)
{
    return s->ops->needs_reload && s->ops->needs_reload(s);
}

void agg_store_reloaded(agg_store *s)
{
    if (s->ops->reloaded)
        s->ops->reloaded(s);
}

/* The rows of `m`: schema_version, then, when the configuration has a `default`, policy, mode,
 * arms and every parameter of agg_policy_params() by its name, with 0 ("raw" for the mechanism)
 * for those the policy does not read (the text earlier states hold for an unused kappa, epsilon
 * or mechanism). */
static size_t meta_rows(const agg_store_meta *m, agg_meta_row *rows)
{
    size_t n = 0;
    rows[n].key = "schema_version";
    snprintf(rows[n].value, sizeof rows[n].value, "%d", AGG_STORE_SCHEMA_VERSION);
    rows[n++].compared = 1;
    if (!m->policy)
        return n;
    rows[n].key = "policy";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->policy);
    rows[n++].compared = 1;
    rows[n].key = "mode";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->mode ? m->mode : "");
    rows[n++].compared = 1;
    rows[n].key = "arms";
    snprintf(rows[n].value, sizeof rows[n].value, "%" PRIu32, m->params.k);
    rows[n++].compared = 1;
    size_t np;
    const agg_param_info *pi = agg_policy_params(&np);
    for (size_t i = 0; i < np && n < META_ROWS_MAX; i++, n++) {
        rows[n].key = pi[i].name;
        rows[n].compared = (m->reads & pi[i].bit) != 0;
        if (rows[n].compared)
            agg_policy_param_text(&pi[i], &m->params, rows[n].value, sizeof rows[n].value);
        else
            snprintf(rows[n].value, sizeof rows[n].value, "%s",
                     pi[i].type == AGG_PARAM_TYPE_MECH ? "raw" : "0");
    }
    return n;
}

/* The settings text of `default` for a caller of version 1 (no default_settings): the compared
 * meta rows, in their order, as "key = value" lines (their keys are the daemon's option names). */
static char *legacy_settings(const agg_meta_row *rows, size_t n)
{
    size_t cap = 1, used = 0;
    for (size_t i = 1; i < n; i++)
        cap += strlen(rows[i].key) + strlen(rows[i].value) + 4;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    t[0] = '\0';
    for (size_t i = 1; i < n; i++)
        if (rows[i].compared)
            used += (size_t)snprintf(t + used, cap - used, "%s = %s\n", rows[i].key, rows[i].value);
    return t;
}

/* Keeps rows[from..n) for the first transaction, and the row `default` (id `id`) with them. */
static ldpb_err keep_pending(agg_store *s, const agg_store_meta *m, const agg_meta_row *rows,
                             size_t from, size_t n, int64_t id, char *errmsg)
{
    if (n > from) {
        s->pending_meta = malloc((n - from) * sizeof *s->pending_meta);
        if (!s->pending_meta)
            goto nomem;
        memcpy(s->pending_meta, rows + from, (n - from) * sizeof *rows);
        s->n_pending_meta = n - from;
    }
    if (m->policy) {
        s->pending_default =
            m->default_settings ? strdup(m->default_settings) : legacy_settings(rows, n);
        if (!s->pending_default)
            goto nomem;
        s->default_id = id;
    }
    return LDPB_OK;
nomem:
    say(errmsg, "out of memory");
    return LDPB_ENOMEM;
}

/* Compares the rows [from..n) that the open compares with the stored ones. */
static ldpb_err compare_rows(agg_store *s, const agg_meta_reader *rd, const agg_meta_row *rows,
                             size_t from, size_t n, char *errmsg)
{
    for (size_t i = from; i < n; i++) {
        if (!rows[i].compared)
            continue;
        char have[128];
        int got = rd->get(s, rows[i].key, have, sizeof have);
        if (got < 0) {
            say(errmsg, "%s", s->errmsg);
            return LDPB_EIO;
        }
        if (got == 0) {
            say(errmsg, "state: meta has no '%s' row", rows[i].key);
            return LDPB_ECORRUPT;
        }
        if (strcmp(have, rows[i].value) != 0) {
            say(errmsg,
                "the state in this directory belongs to another configuration: %s is '%s' "
                "there but '%s' now (use another state_dir, or the old configuration)",
                rows[i].key, have, rows[i].value);
            return LDPB_ESTATE;
        }
    }
    return LDPB_OK;
}

/* The stored schema_version: 1, 2 or 3 (the ones this program reads), or LDPB_ESTATE with today's
 * message for another; 0 when the row is missing (ECORRUPT set). */
static ldpb_err check_version(agg_store *s, const agg_meta_reader *rd, char *errmsg, int *version)
{
    char have[128];
    int got = rd->get(s, "schema_version", have, sizeof have);
    if (got < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    if (got == 0) {
        say(errmsg, "state: meta has no 'schema_version' row");
        return LDPB_ECORRUPT;
    }
    if (strcmp(have, "1") == 0 || strcmp(have, "2") == 0 || strcmp(have, "3") == 0) {
        *version = have[0] - '0';
        return LDPB_OK;
    }
    say(errmsg,
        "the state in this directory has schema version %s; this ldpb-aggregator reads version "
        "%d (use the matching version, or another state_dir)",
        have, AGG_STORE_SCHEMA_VERSION);
    return LDPB_ESTATE;
}

/* A state of version 1 holds the experiment `default` only: it migrates when the configuration's
 * `default` has its meta (today's comparison and messages), in the open transaction. */
static ldpb_err migrate_v1(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                           const agg_meta_row *rows, size_t n_rows, char *errmsg)
{
    if (!m->policy) {
        say(errmsg,
            "the state in this directory is of schema version 1, whose reports and policy state "
            "are those of the experiment 'default', but the configuration declares no 'default' "
            "(declare it with the top-level keys, as before, to migrate the state to version %d, "
            "or use another state_dir)",
            AGG_STORE_SCHEMA_VERSION);
        return LDPB_ESTATE;
    }
    ldpb_err err = compare_rows(s, rd, rows, 1, n_rows, errmsg);
    if (err)
        return err;
    char *settings =
        m->default_settings ? strdup(m->default_settings) : legacy_settings(rows, n_rows);
    if (!settings) {
        say(errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    err = rd->migrate(s, settings, m->default_retention_ms);
    free(settings);
    if (!err)
        err = rd->migrate_v2(s, s->node);
    if (!err) {
        agg_meta_row v = {"schema_version", "", 1};
        snprintf(v.value, sizeof v.value, "%d", AGG_STORE_SCHEMA_VERSION);
        err = s->ops->write_meta(s, &v, 1);
    }
    if (err) {
        say(errmsg, "migrating the state from schema version 1: %s", s->errmsg);
        return err;
    }
    s->default_id = 1;
    return LDPB_OK;
}

/* Data without meta is no state this program wrote: adopting it would attach the configuration
 * of today to reports and a policy state of unknown origin. */
static ldpb_err refuse_data_without_meta(agg_store *s, const agg_meta_reader *rd, int shape,
                                         char *errmsg)
{
    int64_t data = rd->count_data(s, shape);
    if (data < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    if (data > 0) {
        say(errmsg,
            "state: the database holds %lld rows of reports, decisions or policy state "
            "but no meta rows saying which configuration they belong to",
            (long long)data);
        return LDPB_ECORRUPT;
    }
    return LDPB_OK;
}

/* Version 2 to 3 in the open transaction: the node tables, and the stored states become this
 * node's (the one that wrote them until now). */
static ldpb_err migrate_v2(agg_store *s, const agg_meta_reader *rd, char *errmsg)
{
    ldpb_err err = rd->migrate_v2(s, s->node);
    if (!err) {
        agg_meta_row v = {"schema_version", "", 1};
        snprintf(v.value, sizeof v.value, "%d", AGG_STORE_SCHEMA_VERSION);
        err = s->ops->write_meta(s, &v, 1);
    }
    if (err)
        say(errmsg, "migrating the state from schema version 2: %s", s->errmsg);
    return err;
}

/* A state of version 3: the `default` of the configuration is compared with the stored one, or,
 * new to the state, written with the first transaction. */
static ldpb_err settle_default(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                               const agg_meta_row *rows, size_t n_rows, char *errmsg)
{
    int64_t id = 0;
    int found = rd->find(s, AGG_STORE_DEFAULT_EXP, &id);
    char have[128];
    int has_meta = found < 0 ? -1 : rd->get(s, "policy", have, sizeof have);
    if (found < 0 || has_meta < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    if (found != has_meta) {
        say(errmsg, "state: the experiment 'default' %s but meta %s its configuration",
            found ? "is stored" : "is missing", found ? "lacks" : "has");
        return LDPB_ECORRUPT;
    }
    s->default_id = found ? id : 0;
    if (!m->policy)
        return LDPB_OK;
    if (found) {
        ldpb_err err = compare_rows(s, rd, rows, 1, n_rows, errmsg);
        if (!err && m->default_settings) {
            /* The meta decides whether `default` is the same (as in version 1); its settings
             * text follows the configuration, so a caller comparing settings texts finds its
             * own (a migrated state's is the meta rows' text until then). */
            s->pending_settings = strdup(m->default_settings);
            if (!s->pending_settings) {
                say(errmsg, "out of memory");
                err = LDPB_ENOMEM;
            }
        }
        return err;
    }
    int64_t next = rd->next_id(s);
    if (next < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    return keep_pending(s, m, rows, 1, n_rows, next, errmsg);
}

ldpb_err agg_store_settle_meta(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                               char *errmsg)
{
    if (!m->policy && m->default_settings) {
        say(errmsg, "store: default_settings without the policy of 'default'");
        return LDPB_EINVAL;
    }
    agg_meta_row rows[META_ROWS_MAX];
    size_t n_rows = meta_rows(m, rows);
    int shape = rd->shape(s);
    if (shape < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    if (shape == 0 || shape == 3) {
        ldpb_err e = rd->create(s);
        if (e) {
            say(errmsg, "%s", s->errmsg);
            return e;
        }
        shape = 3;
    }
    int64_t n = rd->count_meta(s);
    if (n < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    ldpb_err err;
    if (n == 0) {
        err = refuse_data_without_meta(s, rd, shape, errmsg);
        /* Empty tables of version 1 or 2 (a first start that committed nothing) are rebuilt. */
        if (!err && shape == 1 && (rd->migrate(s, NULL, 0) || rd->migrate_v2(s, s->node))) {
            say(errmsg, "migrating the empty state from schema version 1: %s", s->errmsg);
            err = LDPB_EIO;
        }
        if (!err && shape == 2 && rd->migrate_v2(s, s->node)) {
            say(errmsg, "migrating the empty state from schema version 2: %s", s->errmsg);
            err = LDPB_EIO;
        }
        if (err)
            return err;
        /* Fresh: the rows (and `default`, id 1) wait for the first transaction. */
        s->fresh = 1;
        return keep_pending(s, m, rows, 0, n_rows, 1, errmsg);
    }
    int version = 0;
    err = check_version(s, rd, errmsg, &version);
    if (err)
        return err;
    if (version != shape) {
        say(errmsg, "state: meta says schema version %d but the tables are of version %d", version,
            shape);
        return LDPB_ECORRUPT;
    }
    if (m->check_only && version != AGG_STORE_SCHEMA_VERSION) {
        say(errmsg,
            "the state has schema version %d, which ldpb-aggregator migrates to version %d when "
            "it starts; --check-config writes nothing, so it stops here (take a backup, then "
            "start ldpb-aggregator to migrate: docs/aggregator.md)",
            version, AGG_STORE_SCHEMA_VERSION);
        return LDPB_ESTATE;
    }
    if (version == 1)
        return migrate_v1(s, rd, m, rows, n_rows, errmsg);
    if (version == 2) {
        err = migrate_v2(s, rd, errmsg);
        if (err)
            return err;
    }
    return settle_default(s, rd, m, rows, n_rows, errmsg);
}

ldpb_err agg_store_check_counts(agg_store *s, const char *name, int has_state, const int64_t v[5])
{
    for (int i = 0; i < 5; i++) {
        if (v[i] < 0) {
            say(s->errmsg, "experiment '%s': negative counter in its row", name);
            return LDPB_ECORRUPT;
        }
    }
    if (!has_state && v[4] != 0) {
        say(s->errmsg, "experiment '%s': reports are stored but the policy state is missing", name);
        return LDPB_ECORRUPT;
    }
    if (has_state && (v[0] != v[1] || v[1] != v[4])) {
        say(s->errmsg,
            "experiment '%s': the state counts %lld reports (policy version %lld) but the "
            "reports table has %lld",
            name, (long long)v[1], (long long)v[0], (long long)v[4]);
        return LDPB_ECORRUPT;
    }
    return LDPB_OK;
}

/* Creates the directory (mode 0700) and takes its lock: one daemon per state directory. */
static ldpb_err lock_dir(agg_store *s, const char *dir, char *errmsg)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        say(errmsg, "state_dir %s: cannot create: %s", dir, strerror(errno));
        return LDPB_EINVAL; /* the configured path is unusable */
    }
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/lock", dir) >= sizeof path) {
        say(errmsg, "state_dir %s: path too long", dir);
        return LDPB_EINVAL;
    }
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        int e = errno;
        say(errmsg, "%s: cannot open: %s", path, strerror(e));
        /* state_dir is not a directory we may write */
        return e == ENOTDIR || e == EACCES || e == EROFS ? LDPB_EINVAL : LDPB_EIO;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        say(errmsg, "state_dir %s is in use by another ldpb-aggregator (%s is locked)", dir, path);
        return LDPB_ESTATE;
    }
    /* The lock held must be the file at the path: a start that fails removes the lock file it
     * created while holding it (main.c), and a lock on a file no longer named excludes nobody. */
    struct stat held, named;
    if (fstat(s->lock_fd, &held) != 0 || stat(path, &named) != 0 || held.st_ino != named.st_ino ||
        held.st_dev != named.st_dev) {
        say(errmsg,
            "state_dir %s is in use by another ldpb-aggregator (%s was removed while locking)", dir,
            path);
        return LDPB_ESTATE;
    }
    return LDPB_OK;
}

ldpb_err agg_store_open(agg_store **out, const char *dir, const agg_store_meta *meta, char *errmsg)
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out || !dir || !meta || !errmsg)
        return LDPB_EINVAL;
    *out = NULL;
    const agg_store_ops *ops = backend_of(meta->store_url, errmsg);
    if (!ops)
        return LDPB_EINVAL;
    agg_store *s = calloc(1, sizeof *s);
    if (!s)
        return LDPB_ENOMEM;
    s->ops = ops;
    s->lock_fd = -1;
    if (meta->node_name && !agg_store_node_name_valid(meta->node_name)) {
        say(errmsg, "node name '%.80s': 1..%d characters of [A-Za-z0-9._-] expected",
            meta->node_name, AGG_STORE_NODE_NAME_MAX);
        free(s);
        return LDPB_EINVAL;
    }
    snprintf(s->node, sizeof s->node, "%s", meta->node_name ? meta->node_name : "default");
    ldpb_err err = lock_dir(s, dir, errmsg);
    if (!err)
        err = ops->open(s, meta->store_url, dir, meta, errmsg);
    if (err) {
        if (!errmsg[0])
            say(errmsg, "%s", s->errmsg);
        agg_store_close(s);
        return err;
    }
    *out = s;
    return LDPB_OK;
}

ldpb_err agg_store_load(agg_store *s, uint8_t **blob, size_t *len, agg_store_counters *c)
{
    if (!s->default_id || s->pending_default) {
        *blob = NULL;
        *len = 0;
        memset(c, 0, sizeof *c);
        return LDPB_OK;
    }
    return s->ops->load(s, s->default_id, blob, len, c);
}

ldpb_err agg_store_begin(agg_store *s)
{
    s->decision_delta = 0;
    ldpb_err err = s->ops->begin(s);
    return err ? err : agg_store_write_pending(s);
}

ldpb_err agg_store_write_pending(agg_store *s)
{
    ldpb_err err = LDPB_OK;
    if (s->pending_meta)
        err = s->ops->write_meta(s, s->pending_meta, s->n_pending_meta);
    if (!err && s->pending_default) {
        int64_t id = 0;
        err = s->ops->add_experiment(s, s->default_id, AGG_STORE_DEFAULT_EXP, s->pending_default, 1,
                                     &id);
    }
    if (!err && s->pending_settings) {
        int found = 0;
        err = s->ops->set_settings(s, s->default_id, s->pending_settings, &found);
    }
    return err;
}

ldpb_err agg_store_commit(agg_store *s)
{
    if (s->inject_disk_full) {
        say(s->errmsg, "COMMIT: database or disk is full (injected by agg_store_inject_disk_full)");
        return LDPB_EIO;
    }
    if (s->commit_hook && s->commit_hook(s->commit_hook_ctx)) {
        say(s->errmsg, "COMMIT: failed by the test hook");
        return LDPB_EIO;
    }
    ldpb_err err = s->ops->commit(s);
    if (!err) {
        s->decision_rows = (uint64_t)((int64_t)s->decision_rows + s->decision_delta);
        s->decision_delta = 0;
        agg_store_pending_done(s);
    }
    return err;
}

void agg_store_pending_done(agg_store *s)
{
    free(s->pending_meta); /* durable now */
    s->pending_meta = NULL;
    s->n_pending_meta = 0;
    free(s->pending_default);
    s->pending_default = NULL;
    free(s->pending_settings);
    s->pending_settings = NULL;
}

const uint8_t *agg_store_state_id(const agg_store *s)
{
    return s->ident.id;
}

int agg_store_legacy_tokens(const agg_store *s)
{
    return s->ident.legacy_tokens;
}

const char *agg_store_state_note(const agg_store *s)
{
    return s->ident.note;
}

void agg_store_set_commit_hook(agg_store *s, agg_store_commit_hook fn, void *ctx)
{
    s->commit_hook = fn;
    s->commit_hook_ctx = ctx;
}

void agg_store_rollback(agg_store *s)
{
    s->decision_delta = 0;
    s->ops->rollback(s);
}

/* The experiment id a call names: 0 is `default`. LDPB_ENOEXPERIMENT where there is none. */
static ldpb_err resolve(agg_store *s, int64_t exp, int64_t *id)
{
    *id = exp ? exp : s->default_id;
    if (*id > 0)
        return LDPB_OK;
    say(s->errmsg, exp ? "no experiment with id %lld" : "the state has no experiment 'default'",
        (long long)exp);
    return LDPB_ENOEXPERIMENT;
}

ldpb_err agg_store_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    agg_store_row row = *r;
    ldpb_err err = resolve(s, r->experiment, &row.experiment);
    return err ? err : s->ops->add_report(s, &row, is_new);
}

ldpb_err agg_store_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists)
{
    return s->ops->has_report(s, id, id_len, exists);
}

ldpb_err agg_store_remove_report(agg_store *s, const uint8_t *id, size_t id_len)
{
    return s->ops->remove_report(s, id, id_len);
}

ldpb_err agg_store_add_decision(agg_store *s, const agg_store_row *d)
{
    agg_store_row row = *d;
    ldpb_err err = resolve(s, d->experiment, &row.experiment);
    if (err)
        return err;
    if (!row.retain_until_ms)
        row.retain_until_ms = row.expires_at_ms;
    uint64_t added = 0;
    err = s->ops->add_decision(s, &row, &added);
    s->decision_delta += (int64_t)added;
    return err;
}

/* The per-row path of agg_store_write_batch (store_be.h): a backend without write_batch, or
 * SQLite without row shards, where a row costs no round trip. */
ldpb_err agg_store_batch_one_by_one(agg_store *s, agg_store_batch_row *rows, size_t n)
{
    ldpb_err err = LDPB_OK;
    for (size_t i = 0; i < n && !err; i++) {
        agg_store_batch_row *b = &rows[i];
        uint64_t added = 0;
        switch (b->kind) {
        case AGG_BATCH_DECISION:
            err = s->ops->add_decision(s, &b->row, &added);
            b->found = added != 0;
            break;
        case AGG_BATCH_REPORT:
            err = s->ops->add_report(s, &b->row, &b->found);
            break;
        case AGG_BATCH_LOOKUP:
            err = s->ops->has_report(s, b->row.id, b->row.id_len, &b->found);
            break;
        }
    }
    return err;
}

ldpb_err agg_store_write_batch(agg_store *s, agg_store_batch_row *rows, size_t n)
{
    /* Resolved as the row-by-row calls resolve them (experiment 0 is `default`; a decision's
     * retain_until_ms 0 is its expiry), before any row goes out. */
    for (size_t i = 0; i < n; i++) {
        agg_store_batch_row *b = &rows[i];
        b->found = 0;
        if (b->kind == AGG_BATCH_LOOKUP)
            continue;
        ldpb_err err = resolve(s, b->row.experiment, &b->row.experiment);
        if (err)
            return err;
        if (b->kind == AGG_BATCH_DECISION && !b->row.retain_until_ms)
            b->row.retain_until_ms = b->row.expires_at_ms;
    }
    ldpb_err err = s->ops->write_batch ? s->ops->write_batch(s, rows, n)
                                       : agg_store_batch_one_by_one(s, rows, n);
    for (size_t i = 0; !err && i < n; i++)
        if (rows[i].kind == AGG_BATCH_DECISION)
            s->decision_delta += rows[i].found;
    return err;
}

ldpb_err agg_store_prune_decisions(agg_store *s, uint64_t expired_before_ms, uint64_t max_rows,
                                   uint64_t limit, uint64_t *deleted)
{
    *deleted = 0;
    uint64_t n = 0;
    ldpb_err err = s->ops->prune_expired(s, expired_before_ms, limit, &n);
    s->decision_delta -= (int64_t)n;
    *deleted += n;
    uint64_t rows = agg_store_decision_rows(s);
    if (!err && rows > max_rows && *deleted < limit) {
        uint64_t excess = rows - max_rows, room = limit - *deleted;
        n = 0;
        err = s->ops->prune_oldest(s, excess < room ? excess : room, &n);
        s->decision_delta -= (int64_t)n;
        *deleted += n;
    }
    return err;
}

uint64_t agg_store_decision_rows(const agg_store *s)
{
    int64_t rows = (int64_t)s->decision_rows + s->decision_delta;
    return rows > 0 ? (uint64_t)rows : 0;
}

void agg_store_inject_disk_full(agg_store *s, int on)
{
    s->inject_disk_full = on;
}

ldpb_err agg_store_put_state(agg_store *s, const uint8_t *blob, size_t len,
                             const agg_store_counters *c)
{
    return agg_store_put_exp_state(s, 0, blob, len, c);
}

ldpb_err agg_store_put_exp_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                 const agg_store_counters *c)
{
    return agg_store_put_exp_partial(s, exp, blob, len, c, 1);
}

ldpb_err agg_store_take_exp_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                  const agg_store_counters *c)
{
    return agg_store_put_exp_partial(s, exp, blob, len, c, 2);
}

ldpb_err agg_store_partials(agg_store *s, agg_store_partial **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    return s->ops->partials ? s->ops->partials(s, out, n) : LDPB_OK;
}

int agg_store_experiments_changed(agg_store *s)
{
    return s->ops->experiments_changed ? s->ops->experiments_changed(s) : 0;
}

ldpb_err agg_store_put_node_counts(agg_store *s, int64_t exp, uint64_t duplicates,
                                   uint64_t assignments)
{
    return s->ops->put_counts ? s->ops->put_counts(s, exp, duplicates, assignments) : LDPB_OK;
}

ldpb_err agg_store_shared_counts(agg_store *s, agg_store_counts *v, size_t n)
{
    return s->ops->shared_counts && n ? s->ops->shared_counts(s, v, n) : LDPB_OK;
}

static ldpb_err pending_settings_over(agg_store *s, agg_store_exp *v, size_t nv);

ldpb_err agg_store_catalog(agg_store *s, agg_store_exp **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    agg_store_exp *v = NULL;
    size_t nv = 0;
    ldpb_err err = s->ops->catalog ? s->ops->catalog(s, &v, &nv) : LDPB_OK;
    if (!err)
        err = pending_settings_over(s, v, nv);
    if (!err) {
        *out = v;
        *n = nv;
    }
    return err;
}

void agg_store_partials_free(agg_store_partial *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].state);
    free(v);
}

ldpb_err agg_store_put_exp_partial(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                                   const agg_store_counters *c, int exclusive)
{
    int64_t id;
    ldpb_err err = resolve(s, exp, &id);
    if (err)
        return err;
    if (!blob || len == 0) {
        say(s->errmsg, "experiment %lld: an empty policy state", (long long)id);
        return LDPB_EINVAL;
    }
    int found = 0;
    err = s->ops->put_state(s, id, blob, len, c, exclusive, &found);
    if (!err && !found) {
        say(s->errmsg, "no experiment with id %lld", (long long)id);
        err = LDPB_ENOEXPERIMENT;
    }
    return err;
}

ldpb_err agg_store_arm_counts(agg_store *s, uint64_t *counts, uint32_t k)
{
    memset(counts, 0, (size_t)k * sizeof *counts);
    if (!s->default_id || s->pending_default)
        return LDPB_OK;
    return s->ops->arm_counts(s, s->default_id, counts, k);
}

ldpb_err agg_store_arm_counts_exp(agg_store *s, int64_t exp, uint64_t *counts, uint32_t k)
{
    memset(counts, 0, (size_t)k * sizeof *counts);
    int64_t id;
    ldpb_err err = resolve(s, exp, &id);
    if (err)
        return err;
    return id == s->default_id && s->pending_default ? LDPB_OK
                                                     : s->ops->arm_counts(s, id, counts, k);
}

int64_t agg_store_default_experiment(const agg_store *s)
{
    return s->default_id;
}

/* The settings of `default` as the first transaction will write them (pending_settings); on
 * failure v is freed. */
static ldpb_err pending_settings_over(agg_store *s, agg_store_exp *v, size_t nv)
{
    for (size_t i = 0; s->pending_settings && i < nv; i++) {
        if (v[i].id != s->default_id)
            continue;
        char *t = strdup(s->pending_settings);
        if (!t) {
            agg_store_experiments_free(v, nv);
            say(s->errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        free(v[i].settings);
        v[i].settings = t;
    }
    return LDPB_OK;
}

ldpb_err agg_store_experiments(agg_store *s, agg_store_exp **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    agg_store_exp *v = NULL;
    size_t nv = 0;
    ldpb_err err = s->ops->experiments(s, &v, &nv);
    if (!err)
        err = pending_settings_over(s, v, nv);
    if (err)
        return err;
    if (s->pending_default) {
        /* Not written yet: listed as the first transaction will write it. */
        agg_store_exp *w = realloc(v, (nv + 1) * sizeof *w);
        char *settings = w ? strdup(s->pending_default) : NULL;
        if (!settings) {
            agg_store_experiments_free(w ? w : v, nv);
            say(s->errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        v = w;
        memset(&v[nv], 0, sizeof v[nv]);
        v[nv].id = s->default_id;
        snprintf(v[nv].name, sizeof v[nv].name, "%s", AGG_STORE_DEFAULT_EXP);
        v[nv].settings = settings;
        v[nv].from_config = 1;
        v[nv].running = 1;
        nv++;
    }
    *out = v;
    *n = nv;
    return LDPB_OK;
}

void agg_store_experiments_free(agg_store_exp *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].settings);
        free(v[i].state);
    }
    free(v);
}

ldpb_err agg_store_add_experiment(agg_store *s, const char *name, const char *settings,
                                  int from_config, int64_t *id)
{
    if (!agg_store_exp_name_valid(name) || !settings) {
        say(s->errmsg, "experiment name '%.80s': want 1..%d bytes of [a-z0-9._-], and settings",
            name ? name : "(null)", AGG_STORE_EXP_NAME_MAX);
        return LDPB_EINVAL;
    }
    if (strcmp(name, AGG_STORE_DEFAULT_EXP) == 0) {
        say(s->errmsg,
            "the experiment 'default' is the one of the configuration's top-level keys; the "
            "store creates it from them");
        return LDPB_EINVAL;
    }
    return s->ops->add_experiment(s, 0, name, settings, from_config ? 1 : 0, id);
}

/* set_running and set_settings: the experiment must exist. */
static ldpb_err found_or_not(agg_store *s, ldpb_err err, int found, int64_t id)
{
    if (!err && !found) {
        say(s->errmsg, "no experiment with id %lld", (long long)id);
        err = LDPB_ENOEXPERIMENT;
    }
    return err;
}

ldpb_err agg_store_set_running(agg_store *s, int64_t id, int running)
{
    int64_t eid;
    ldpb_err err = resolve(s, id, &eid);
    int found = 0;
    if (!err)
        err = s->ops->set_running(s, eid, running ? 1 : 0, &found);
    return err ? err : found_or_not(s, err, found, eid);
}

ldpb_err agg_store_set_settings(agg_store *s, int64_t id, const char *settings)
{
    if (!settings) {
        say(s->errmsg, "settings: NULL");
        return LDPB_EINVAL;
    }
    int64_t eid;
    ldpb_err err = resolve(s, id, &eid);
    int found = 0;
    if (!err)
        err = s->ops->set_settings(s, eid, settings, &found);
    return err ? err : found_or_not(s, err, found, eid);
}

const char *agg_store_errmsg(const agg_store *s)
{
    return s ? s->errmsg : "no store";
}

ldpb_err agg_store_export_csv_url(const char *url, const char *dir, FILE *out, char *errmsg)
{
    errmsg[0] = '\0';
    const agg_store_ops *ops = backend_of(url, errmsg);
    return ops ? ops->export_csv(url, dir, AGG_STORE_DEFAULT_EXP, 0, out, errmsg) : LDPB_EINVAL;
}

ldpb_err agg_store_export_csv(const char *dir, FILE *out, char *errmsg)
{
    return agg_store_export_csv_url(NULL, dir, out, errmsg);
}

ldpb_err agg_store_export_csv_exp(const char *url, const char *dir, const char *experiment,
                                  FILE *out, char *errmsg)
{
    errmsg[0] = '\0';
    if (experiment && !agg_store_exp_name_valid(experiment)) {
        say(errmsg, "experiment name '%.80s': want 1..%d bytes of [a-z0-9._-]", experiment,
            AGG_STORE_EXP_NAME_MAX);
        return LDPB_EINVAL;
    }
    const agg_store_ops *ops = backend_of(url, errmsg);
    return ops ? ops->export_csv(url, dir, experiment, 1, out, errmsg) : LDPB_EINVAL;
}

ldpb_err agg_store_backup_check(const char *url, char *errmsg)
{
    errmsg[0] = '\0';
    const agg_store_ops *ops = backend_of(url, errmsg);
    if (!ops)
        return LDPB_EINVAL;
    if (!ops->backup) {
        say(errmsg, "%s", ops->no_backup);
        return LDPB_ENOTSUP;
    }
    return LDPB_OK;
}

ldpb_err agg_store_backup_url(const char *url, const char *dir, const char *dest, char *errmsg)
{
    ldpb_err err = agg_store_backup_check(url, errmsg);
    return err ? err : backend_of(url, errmsg)->backup(url, dir, dest, errmsg);
}

ldpb_err agg_store_backup(const char *dir, const char *dest, char *errmsg)
{
    return agg_store_backup_url(NULL, dir, dest, errmsg);
}
