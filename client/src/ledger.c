/* The device privacy ledger: the public API, the advisory lock and the durable write
 * (whole file to a fresh path.tmp.RANDOM, fsync, rename over path, fsync the directory) that must
 * finish before a freshly drawn value is handed back. The state and the byte format are in
 * ledger_format.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ldpb/ctxstat.h"
#include "ldpb/durable.h"
#include "ldpb/mech_table.h"
#include "ldpb/wire.h"
#include "ledger_internal.h"

struct ldpb_ledger {
    ledger_state st;
    char *path; /* NULL for an in-memory ledger */
    char *lock_path;
    int lock_fd;
    /* Set when a write failed after the rename: the file may hold a spend the in-memory state
     * lacks, so no further state may be written from memory. */
    int broken;
    ledger_step_hook hook;
    void *hook_ctx;
};

void ldpb_ledger_opts_init(ldpb_ledger_opts *opts)
{
    if (!opts)
        return;
    opts->lifetime_budget = 100.0;
    opts->per_report_cap = LDPB_EPSILON_MAX;
    /* No delta until the app grants one: a mechanism with a delta (a small chance of an
     * unbounded privacy loss) is never used on a device that did not ask for it. */
    opts->lifetime_delta = 0.0;
    opts->per_report_delta_cap = 0.0;
}

void ledger_set_step_hook(ldpb_ledger *ledger, ledger_step_hook hook, void *ctx)
{
    ledger->hook = hook;
    ledger->hook_ctx = ctx;
}

static int step(ldpb_ledger *l, ledger_step s)
{
    return l->hook ? l->hook(l->hook_ctx, s) : 0;
}

static char *concat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (!s)
        return NULL;
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    return s;
}

typedef struct emit_ctx {
    const ledger_state *st;
    const ledger_record *extra;
    uint64_t spent_units, delta_spent_units;
} emit_ctx;

static int fd_sink(void *ctx, const uint8_t *p, size_t n)
{
    return ldpb_durable_write_all(*(const int *)ctx, p, n);
}

static ldpb_err emit_fill(void *ctx, int fd, const char *tmp_path)
{
    (void)tmp_path;
    const emit_ctx *e = ctx;
    return ledger_emit(e->st, e->extra, e->spent_units, e->delta_spent_units, fd_sink, &fd) == 0
               ? LDPB_OK
               : LDPB_EIO;
}

/* The ledger's steps are the durable write's, in the same order and numbering. */
_Static_assert((int)LEDGER_STEP_TMP_WRITTEN == (int)LDPB_DURABLE_TMP_WRITTEN &&
                   (int)LEDGER_STEP_TMP_SYNCED == (int)LDPB_DURABLE_TMP_SYNCED &&
                   (int)LEDGER_STEP_RENAMED == (int)LDPB_DURABLE_PLACED &&
                   (int)LEDGER_STEP_DIR_SYNCED == (int)LDPB_DURABLE_DIR_SYNCED,
               "ledger_step follows ldpb_durable_step");
static int durable_step(void *ctx, ldpb_durable_step s)
{
    return step(ctx, (ledger_step)s);
}

/* Writes the state plus `extra` with `spent_units` durably (durable.h: a fresh
 * path.tmp.RANDOM, fsync, rename, fsync of the directory). Before the rename a failure leaves the
 * old file in place; after it, the handle is marked broken (see struct ldpb_ledger). */
static ldpb_err persist(ldpb_ledger *l, const ledger_record *extra, uint64_t spent_units,
                        uint64_t delta_spent_units)
{
    emit_ctx e = {&l->st, extra, spent_units, delta_spent_units};
    ldpb_durable_opts o = {0600, 0, durable_step, l};
    int placed = 0;
    ldpb_err err = ldpb_durable_write(l->path, &o, emit_fill, &e, &placed, NULL, 0);
    if (err && placed)
        l->broken = 1;
    return err ? LDPB_EIO : LDPB_OK;
}

static ldpb_err take_lock(ldpb_ledger *l)
{
    return ldpb_durable_lock(l->lock_path, &l->lock_fd);
}

/* Reads and validates an existing ledger file; `fd` is open on it (a regular file) and is closed
 * here. */
static ldpb_err load(ldpb_ledger *l, int fd)
{
    ldpb_err err = LDPB_EIO;
    uint8_t *buf = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        goto done;
    if (sb.st_size < 0 || (uint64_t)sb.st_size > LEDGER_FILE_MAX) {
        err = LDPB_ECORRUPT;
        goto done;
    }
    /* A well-formed size, but more than this process can hold (only on a 32-bit target): the
     * file is not corrupt, and is never compared or allocated through a wrapped size_t. */
    if ((uint64_t)sb.st_size > LEDGER_LOAD_MAX) {
        err = LDPB_ENOMEM;
        goto done;
    }
    size_t size = (size_t)sb.st_size;
    buf = malloc(size ? size : 1);
    if (!buf) {
        err = LDPB_ENOMEM;
        goto done;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            goto done; /* error, or the file shrank under the lock */
        got += (size_t)r;
    }
    err = ledger_parse(buf, size, &l->st);

done:
    free(buf);
    close(fd);
    return err;
}

static void set_delta(ledger_state *st, const ldpb_ledger_opts *opts)
{
    st->delta_budget = opts->lifetime_delta;
    st->delta_cap = opts->per_report_delta_cap;
    st->delta_budget_units = ledger_delta_budget_units(st->delta_budget);
}

ldpb_err ldpb_ledger_open(ldpb_ledger **out, const char *path, const ldpb_ledger_opts *opts)
{
    if (!out)
        return LDPB_EINVAL;
    *out = NULL;
    if (path && path[0] == '\0')
        return LDPB_EINVAL;
    ldpb_err err;
    if (opts && (err = ledger_check_limits(opts->lifetime_budget, opts->per_report_cap)) != 0)
        return err;
    if (opts &&
        (err = ledger_check_delta_limits(opts->lifetime_delta, opts->per_report_delta_cap)) != 0)
        return err;
    if (!path && !opts)
        return LDPB_EINVAL;
    if (sodium_init() < 0)
        return LDPB_ECRYPTO;

    ldpb_ledger *l = calloc(1, sizeof *l);
    if (!l)
        return LDPB_ENOMEM;
    l->lock_fd = -1;
    ledger_state_init(&l->st);
    if (!path) {
        l->st.budget = opts->lifetime_budget;
        l->st.cap = opts->per_report_cap;
        l->st.budget_units = ledger_budget_units(l->st.budget);
        set_delta(&l->st, opts);
        *out = l;
        return LDPB_OK;
    }

    err = LDPB_ENOMEM;
    l->path = concat(path, "");
    l->lock_path = concat(path, ".lock");
    if (!l->path || !l->lock_path)
        goto fail;
    err = take_lock(l);
    if (err)
        goto fail;

    /* Under the lock, so none of them belongs to a live writer. A path.tmp of earlier versions
     * is left alone: it could be another ledger's name. */
    ldpb_durable_clean_stale(l->path);

    int fd;
    err = ldpb_durable_open_regular(l->path, O_RDONLY, &fd);
    if (!err) {
        err = load(l, fd);
        if (err)
            goto fail;
        /* A ledger without a delta budget takes the first one offered, durably (ledger.h). */
        if (opts && !(l->st.delta_budget > 0.0) && opts->lifetime_delta > 0.0) {
            set_delta(&l->st, opts);
            err = persist(l, NULL, l->st.spent_units, l->st.delta_spent_units);
            if (err)
                goto fail;
        }
    } else if (err == LDPB_ENOTFOUND) {
        err = LDPB_EINVAL;
        if (!opts)
            goto fail;
        l->st.budget = opts->lifetime_budget;
        l->st.cap = opts->per_report_cap;
        l->st.budget_units = ledger_budget_units(l->st.budget);
        set_delta(&l->st, opts);
        /* Written at once, so the budget and cap are fixed from the first open. */
        err = persist(l, NULL, 0, 0);
        if (err)
            goto fail;
    } else {
        goto fail;
    }
    *out = l;
    return LDPB_OK;

fail:
    ldpb_ledger_close(l);
    return err;
}

void ldpb_ledger_close(ldpb_ledger *ledger)
{
    if (!ledger)
        return;
    if (ledger->lock_fd >= 0)
        close(ledger->lock_fd);
    ledger_state_fini(&ledger->st);
    free(ledger->path);
    free(ledger->lock_path);
    free(ledger);
}

static void fill_entry(ldpb_ledger_entry *out, const ledger_state *st, const ledger_record *r)
{
    memset(out, 0, sizeof *out);
    const char *exp = ledger_state_exp_name(st, r->exp);
    memcpy(out->experiment, exp, strlen(exp));
    memcpy(out->assignment_id, r->id, r->id_len);
    out->assignment_id_len = r->id_len;
    out->kind = (ldpb_mech_kind)r->kind;
    out->epsilon = r->epsilon;
    out->value = r->value;
    out->delta = r->delta;
    out->n_stats = r->vec ? r->n : 0;
}

/* The refusal rules shared by privatize and check; `charge` is finite and > 0, `delta` finite
 * and >= 0. */
static ldpb_err admit(const ldpb_ledger *l, double charge, double delta)
{
    if (!(charge <= l->st.cap))
        return LDPB_EBUDGET;
    if (ledger_charge_units(charge) > l->st.budget_units - l->st.spent_units)
        return LDPB_EBUDGET;
    if (delta > 0.0 &&
        (!(delta <= l->st.delta_cap) ||
         ledger_delta_units(delta) > l->st.delta_budget_units - l->st.delta_spent_units))
        return LDPB_EBUDGET;
    if (l->st.count >= LDPB_LEDGER_ENTRIES_MAX)
        return LDPB_EBUDGET;
    return LDPB_OK;
}

/* Whether a stored record is of experiment `name` (valid: the caller checked). */
static int same_experiment(const ledger_state *st, const ledger_record *r, const char *name)
{
    uint32_t exp = 0;
    return ledger_state_exp_find(st, name, &exp) == LDPB_OK && exp == r->exp;
}

/* The experiment index of a record about to be written, adding the name to the table when it is
 * new (*added: undo with ledger_state_exp_remove if the record is not appended after all). */
static ldpb_err exp_for_new(ldpb_ledger *l, const char *name, uint32_t *exp, int *added)
{
    *added = 0;
    ldpb_err err = ledger_state_exp_find(&l->st, name, exp);
    if (err != LDPB_ESTATE)
        return err;
    err = ledger_state_exp_add(&l->st, name, exp);
    *added = err == LDPB_OK;
    return err;
}

/* An experiment argument: NULL, "" and "default" are "default"; anything else must be a name. */
static int experiment_ok(const char *name)
{
    return !name || !*name || strcmp(name, "default") == 0 ||
           ldpb_wire_experiment_valid(name, strnlen(name, LDPB_EXPERIMENT_NAME_MAX + 1));
}

ldpb_err ldpb_ledger_privatize(ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                               const ldpb_mech *mech, ldpb_rng *rng, double reward,
                               ldpb_ledger_entry *out)
{
    return ldpb_ledger_privatize_in(ledger, NULL, id, id_len, mech, rng, reward, out);
}

ldpb_err ldpb_ledger_privatize_in(ldpb_ledger *ledger, const char *experiment, const uint8_t *id,
                                  size_t id_len, const ldpb_mech *mech, ldpb_rng *rng,
                                  double reward, ldpb_ledger_entry *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!ledger || !id || !mech || !rng || !out || !experiment_ok(experiment))
        return LDPB_EINVAL;
    if (id_len == 0 || id_len > LDPB_ASSIGNMENT_ID_MAX || !isfinite(reward))
        return LDPB_EINVAL;

    ldpb_mech_kind kind = ldpb_mech_get_kind(mech);
    double charge = ldpb_mech_epsilon_effective(mech);
    const ledger_record *known = ledger_state_find(&ledger->st, id, id_len);
    if (known) {
        if (known->kind != (uint8_t)kind || known->epsilon != charge ||
            !same_experiment(&ledger->st, known, experiment))
            return LDPB_ESTATE;
        fill_entry(out, &ledger->st, known);
        return LDPB_OK;
    }
    if (ledger->broken)
        return LDPB_EIO;
    ldpb_err err = admit(ledger, charge, 0.0);
    if (err)
        return err;
    err = ledger_state_reserve(&ledger->st, ledger->st.count + 1);
    if (err)
        return err;

    ledger_record rec;
    memset(&rec, 0, sizeof rec);
    memcpy(rec.id, id, id_len);
    rec.id_len = (uint8_t)id_len;
    rec.kind = (uint8_t)kind;
    rec.epsilon = charge;
    rec.n = 1;
    int added = 0;
    err = exp_for_new(ledger, experiment, &rec.exp, &added);
    if (err)
        goto done;
    err = ldpb_mech_privatize(mech, rng, reward, &rec.value);
    if (err)
        goto done;
    uint64_t spent = ledger->st.spent_units + ledger_charge_units(charge);
    if (ledger->path) {
        err = persist(ledger, &rec, spent, ledger->st.delta_spent_units);
        if (err)
            goto done;
    }
    ledger_state_append(&ledger->st, &rec);
    ledger->st.spent_units = spent;
    added = 0;
    step(ledger, LEDGER_STEP_COMMITTED);
    fill_entry(out, &ledger->st, &rec);

done:
    if (added)
        ledger_state_exp_remove(&ledger->st, rec.exp);
    sodium_memzero(&rec, sizeof rec);
    return err;
}

ldpb_err ldpb_ledger_lookup(const ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                            ldpb_ledger_entry *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!ledger || !id || !out || id_len == 0 || id_len > LDPB_ASSIGNMENT_ID_MAX)
        return LDPB_EINVAL;
    const ledger_record *r = ledger_state_find(&ledger->st, id, id_len);
    if (!r)
        return LDPB_ESTATE;
    fill_entry(out, &ledger->st, r);
    return LDPB_OK;
}

double ldpb_ledger_spent(const ldpb_ledger *ledger)
{
    if (!ledger)
        return NAN;
    /* Exact: spent_units <= budget_units < 2^53. */
    return ldexp((double)ledger->st.spent_units, -LEDGER_UNIT_BITS);
}

double ldpb_ledger_remaining(const ldpb_ledger *ledger)
{
    if (!ledger)
        return 0.0;
    return ldexp((double)(ledger->st.budget_units - ledger->st.spent_units), -LEDGER_UNIT_BITS);
}

ldpb_ledger_opts ldpb_ledger_get_opts(const ldpb_ledger *ledger)
{
    ldpb_ledger_opts o = {0.0, 0.0, 0.0, 0.0};
    if (ledger) {
        o.lifetime_budget = ledger->st.budget;
        o.per_report_cap = ledger->st.cap;
        o.lifetime_delta = ledger->st.delta_budget;
        o.per_report_delta_cap = ledger->st.delta_cap;
    }
    return o;
}

size_t ldpb_ledger_count(const ldpb_ledger *ledger)
{
    return ledger ? ledger->st.count : 0;
}

double ldpb_ledger_spent_in(const ldpb_ledger *ledger, const char *experiment, double *delta,
                            size_t *count)
{
    if (delta)
        *delta = 0.0;
    if (count)
        *count = 0;
    if (!ledger)
        return -1.0;
    uint32_t exp = 0;
    if (ledger_state_exp_find(&ledger->st, experiment, &exp) != LDPB_OK)
        return 0.0; /* no entry of it (or no such name) */
    /* Summed in the ledger's units, as the budget is, so the parts add up to the whole exactly. */
    uint64_t units = 0, dunits = 0;
    size_t n = 0;
    for (size_t i = 0; i < ledger->st.count; i++) {
        const ledger_record *r = &ledger->st.recs[i];
        if (r->exp != exp)
            continue;
        units += ledger_charge_units(r->epsilon);
        if (r->delta > 0.0)
            dunits += ledger_delta_units(r->delta);
        n++;
    }
    if (delta)
        *delta = ldexp((double)dunits, -LEDGER_DELTA_UNIT_BITS);
    if (count)
        *count = n;
    return ldexp((double)units, -LEDGER_UNIT_BITS);
}

ldpb_err ldpb_ledger_check(const ldpb_ledger *ledger, double epsilon)
{
    if (!ledger || !isfinite(epsilon) || !(epsilon > 0.0))
        return LDPB_EINVAL;
    return admit(ledger, epsilon, 0.0);
}

ldpb_err ldpb_ledger_check_delta(const ldpb_ledger *ledger, double epsilon, double delta)
{
    if (!ledger || !isfinite(epsilon) || !(epsilon > 0.0) || !isfinite(delta) || !(delta >= 0.0))
        return LDPB_EINVAL;
    return admit(ledger, epsilon, delta);
}

double ldpb_ledger_delta_spent(const ldpb_ledger *ledger)
{
    if (!ledger)
        return NAN;
    return ldexp((double)ledger->st.delta_spent_units, -LEDGER_DELTA_UNIT_BITS);
}

double ldpb_ledger_delta_remaining(const ldpb_ledger *ledger)
{
    if (!ledger)
        return 0.0;
    return ldexp((double)(ledger->st.delta_budget_units - ledger->st.delta_spent_units),
                 -LEDGER_DELTA_UNIT_BITS);
}

static ldpb_err copy_stats(const ledger_record *r, ldpb_ledger_entry *out, double *stats,
                           size_t cap)
{
    if (!r->vec)
        return LDPB_OK;
    if (!stats || cap < r->n) {
        memset(out, 0, sizeof *out);
        return LDPB_ERANGE;
    }
    memcpy(stats, r->vec, (size_t)r->n * sizeof *stats);
    return LDPB_OK;
}

ldpb_err ldpb_ledger_privatize_stats(ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                                     const ldpb_ctxstat *mech, ldpb_rng *rng, const double *x,
                                     double y, ldpb_ledger_entry *out, double *stats, size_t cap)
{
    return ldpb_ledger_privatize_stats_in(ledger, NULL, id, id_len, mech, rng, x, y, out, stats,
                                          cap);
}

ldpb_err ldpb_ledger_privatize_stats_in(ldpb_ledger *ledger, const char *experiment,
                                        const uint8_t *id, size_t id_len, const ldpb_ctxstat *mech,
                                        ldpb_rng *rng, const double *x, double y,
                                        ldpb_ledger_entry *out, double *stats, size_t cap)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!ledger || !id || !mech || !rng || !out || !x || !stats || !experiment_ok(experiment))
        return LDPB_EINVAL;
    if (id_len == 0 || id_len > LDPB_ASSIGNMENT_ID_MAX || !isfinite(y))
        return LDPB_EINVAL;
    size_t n = ldpb_ctxstat_values(mech);
    if (cap < n)
        return LDPB_ERANGE;
    /* Charged at the configured (epsilon, delta), which the implemented noise meets or beats
     * (ldpb_ctxstat_epsilon_effective is at most epsilon): never less than is spent, and the
     * epsilon the report carries and the aggregator checks. */
    double charge = ldpb_ctxstat_get_opts(mech)->epsilon;
    double delta = ldpb_ctxstat_get_opts(mech)->delta;
    const ledger_record *known = ledger_state_find(&ledger->st, id, id_len);
    if (known) {
        if (known->kind != LDPB_MECH_ID_GAUSSIAN_STATS || known->epsilon != charge ||
            known->delta != delta || known->n != n ||
            !same_experiment(&ledger->st, known, experiment))
            return LDPB_ESTATE;
        fill_entry(out, &ledger->st, known);
        return copy_stats(known, out, stats, cap);
    }
    if (ledger->broken)
        return LDPB_EIO;
    if (!(charge > 0.0) || !(delta > 0.0))
        return LDPB_EINVAL;
    ldpb_err err = admit(ledger, charge, delta);
    if (err)
        return err;
    err = ledger_state_reserve(&ledger->st, ledger->st.count + 1);
    if (err)
        return err;

    ledger_record rec;
    memset(&rec, 0, sizeof rec);
    memcpy(rec.id, id, id_len);
    rec.id_len = (uint8_t)id_len;
    rec.kind = LDPB_MECH_ID_GAUSSIAN_STATS;
    rec.epsilon = charge;
    rec.delta = delta;
    rec.n = (uint16_t)n;
    rec.vec = malloc(n * sizeof *rec.vec);
    if (!rec.vec)
        return LDPB_ENOMEM;
    int added = 0;
    err = exp_for_new(ledger, experiment, &rec.exp, &added);
    if (!err)
        err = ldpb_ctxstat_privatize(mech, rng, x, y, rec.vec);
    if (err)
        goto done;
    uint64_t spent = ledger->st.spent_units + ledger_charge_units(charge);
    uint64_t dspent = ledger->st.delta_spent_units + ledger_delta_units(delta);
    if (ledger->path) {
        err = persist(ledger, &rec, spent, dspent);
        if (err)
            goto done;
    }
    memcpy(stats, rec.vec, n * sizeof *stats);
    ledger_state_append(&ledger->st, &rec);
    rec.vec = NULL; /* the state owns it */
    ledger->st.spent_units = spent;
    ledger->st.delta_spent_units = dspent;
    added = 0;
    step(ledger, LEDGER_STEP_COMMITTED);
    fill_entry(out, &ledger->st, &ledger->st.recs[ledger->st.count - 1]);

done:
    if (added)
        ledger_state_exp_remove(&ledger->st, rec.exp);
    if (rec.vec) {
        sodium_memzero(rec.vec, n * sizeof *rec.vec);
        free(rec.vec);
    }
    sodium_memzero(&rec, sizeof rec);
    return err;
}

ldpb_err ldpb_ledger_lookup_stats(const ldpb_ledger *ledger, const uint8_t *id, size_t id_len,
                                  ldpb_ledger_entry *out, double *stats, size_t cap)
{
    ldpb_err err = ldpb_ledger_lookup(ledger, id, id_len, out);
    if (err)
        return err;
    return copy_stats(ledger_state_find(&ledger->st, id, id_len), out, stats, cap);
}
