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
#include <unistd.h>

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
    free(s);
}

#define META_ROWS_MAX 16

/* The rows of `m`: schema_version, policy, mode, arms, then every parameter of
 * agg_policy_params() by its name, with 0 ("raw" for the mechanism) for those the policy does
 * not read (the text earlier states hold for an unused kappa, epsilon or mechanism). */
static size_t meta_rows(const agg_store_meta *m, agg_meta_row *rows)
{
    size_t n = 0;
    rows[n].key = "schema_version";
    snprintf(rows[n].value, sizeof rows[n].value, "%d", AGG_STORE_SCHEMA_VERSION);
    rows[n++].compared = 1;
    rows[n].key = "policy";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->policy);
    rows[n++].compared = 1;
    rows[n].key = "mode";
    snprintf(rows[n].value, sizeof rows[n].value, "%s", m->mode);
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

ldpb_err agg_store_settle_meta(agg_store *s, const agg_meta_reader *rd, const agg_store_meta *m,
                               char *errmsg)
{
    agg_meta_row rows[META_ROWS_MAX];
    size_t n_rows = meta_rows(m, rows);
    int64_t n = rd->count_meta(s);
    if (n < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    if (n == 0) {
        /* Data without meta is no state this program wrote: adopting it would attach the
         * configuration of today to reports and a policy state of unknown origin. */
        int64_t data = rd->count_data(s);
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
        /* Fresh: the rows wait for the first transaction (agg_store_begin). */
        s->pending_meta = malloc(n_rows * sizeof *s->pending_meta);
        if (!s->pending_meta) {
            say(errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        memcpy(s->pending_meta, rows, n_rows * sizeof *rows);
        s->n_pending_meta = n_rows;
        return LDPB_OK;
    }
    for (size_t i = 0; i < n_rows; i++) {
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
            if (i == 0)
                say(errmsg,
                    "the state in this directory has schema version %s; this ldpb-aggregator "
                    "reads version %s (use the matching version, or another state_dir)",
                    have, rows[i].value);
            else
                say(errmsg,
                    "the state in this directory belongs to another configuration: %s is '%s' "
                    "there but '%s' now (use another state_dir, or the old configuration)",
                    rows[i].key, have, rows[i].value);
            return LDPB_ESTATE;
        }
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
    return s->ops->load(s, blob, len, c);
}

ldpb_err agg_store_begin(agg_store *s)
{
    s->decision_delta = 0;
    ldpb_err err = s->ops->begin(s);
    if (!err && s->pending_meta)
        err = s->ops->write_meta(s, s->pending_meta, s->n_pending_meta);
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
        free(s->pending_meta); /* durable now */
        s->pending_meta = NULL;
        s->n_pending_meta = 0;
    }
    return err;
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

ldpb_err agg_store_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    return s->ops->add_report(s, r, is_new);
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
    uint64_t added = 0;
    ldpb_err err = s->ops->add_decision(s, d, &added);
    s->decision_delta += (int64_t)added;
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
    return s->ops->put_state(s, blob, len, c);
}

ldpb_err agg_store_arm_counts(agg_store *s, uint64_t *counts, uint32_t k)
{
    memset(counts, 0, (size_t)k * sizeof *counts);
    return s->ops->arm_counts(s, counts, k);
}

const char *agg_store_errmsg(const agg_store *s)
{
    return s ? s->errmsg : "no store";
}

ldpb_err agg_store_export_csv_url(const char *url, const char *dir, FILE *out, char *errmsg)
{
    errmsg[0] = '\0';
    const agg_store_ops *ops = backend_of(url, errmsg);
    return ops ? ops->export_csv(url, dir, out, errmsg) : LDPB_EINVAL;
}

ldpb_err agg_store_export_csv(const char *dir, FILE *out, char *errmsg)
{
    return agg_store_export_csv_url(NULL, dir, out, errmsg);
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
