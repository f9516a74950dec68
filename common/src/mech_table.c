/* The mechanism table (mech_table.h): one row per mechanism, and the checks every module shares.
 * Adding a mechanism is one row here plus its implementation (docs/privacy.md). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mech_internal.h"

/* Each family file defines its rows next to their implementation; they are declared here, not in
 * a header, so that a new mechanism is one new row here plus its own file. */
extern const ldpb_mech_desc mech_row_linear, mech_row_quadratic, mech_row_exponential,
    mech_row_laplace;

/* No local mechanism: the central and non-private modes send the reward itself. */
static const ldpb_mech_desc row_raw = {
    .id = LDPB_MECH_ID_RAW,
    .name = "raw",
    .local = 0,
    .output = LDPB_MECH_OUTPUT_REAL,
    .params = 0,
    .exact_debias = 1,
};

/* The local contextual mode's statistics (ldpb/ctxstat.h): an (epsilon, delta) mechanism over a
 * vector, whose implementation and checks live in ctxstat.c; nothing here samples or de-biases. */
static const ldpb_mech_desc row_gaussian_stats = {
    .id = LDPB_MECH_ID_GAUSSIAN_STATS,
    .name = "gaussian-stats",
    .local = 1,
    .output = LDPB_MECH_OUTPUT_VECTOR,
    .params = LDPB_MECH_PARAM_STATS,
    .exact_debias = 1,
};

static const ldpb_mech_desc *const rows[] = {
    &mech_row_linear, &mech_row_quadratic, &mech_row_exponential, &mech_row_laplace,
    &row_raw,         &row_gaussian_stats,
};

#define N_ROWS (sizeof rows / sizeof rows[0])

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void
say(char *detail, const char *fmt, ...)
{
    if (!detail)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, LDPB_MECH_DETAIL_BYTES, fmt, ap);
    va_end(ap);
}

int ldpb_mech_desc_scalar(const ldpb_mech_desc *d)
{
    return d && d->local && d->output != LDPB_MECH_OUTPUT_VECTOR;
}

const ldpb_mech_desc *const *ldpb_mech_table(size_t *count)
{
    if (count)
        *count = N_ROWS;
    return rows;
}

const ldpb_mech_desc *ldpb_mech_desc_of(int id)
{
    for (size_t i = 0; i < N_ROWS; i++)
        if (rows[i]->id == id)
            return rows[i];
    return NULL;
}

const ldpb_mech_desc *ldpb_mech_desc_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_ROWS; i++)
        if (strcmp(rows[i]->name, name) == 0)
            return rows[i];
    return NULL;
}

ldpb_err ldpb_mech_check_epsilon(int id, double epsilon, const char *what, char *detail)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    if (!d) {
        say(detail, "%s.mechanism %d is not a known mechanism", what, id);
        return LDPB_EINVAL;
    }
    if (!isfinite(epsilon)) {
        say(detail, "%s.epsilon is not a finite number", what);
        return LDPB_EINVAL;
    }
    if (!d->local) {
        if (epsilon != 0.0) {
            say(detail, "%s.epsilon %g must be 0 with mechanism %s", what, epsilon, d->name);
            return LDPB_ERANGE;
        }
    } else if (!(epsilon > 0.0 && epsilon <= LDPB_EPSILON_MAX)) {
        say(detail, "%s.epsilon %g outside (0, %g]", what, epsilon, LDPB_EPSILON_MAX);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}

ldpb_err ldpb_mech_check_kappa(int id, int has_kappa, double kappa, const char *what, char *detail)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    if (!d) {
        say(detail, "%s.mechanism %d is not a known mechanism", what, id);
        return LDPB_EINVAL;
    }
    if (!has_kappa)
        return LDPB_OK;
    if (!(d->params & LDPB_MECH_PARAM_KAPPA)) {
        say(detail, "%s.kappa is set but mechanism %s reads no kappa", what, d->name);
        return LDPB_EINVAL;
    }
    if (!isfinite(kappa)) {
        say(detail, "%s.kappa is not a finite number", what);
        return LDPB_EINVAL;
    }
    if (!(kappa >= -1.0 && kappa <= 1.0)) {
        say(detail, "%s.kappa %g outside [-1, 1]", what, kappa);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}

ldpb_err ldpb_mech_check_field(int id, double epsilon, int is_bit, double value, const char *what,
                               char *detail)
{
    ldpb_err err = ldpb_mech_check_epsilon(id, epsilon, what, detail);
    if (err)
        return err;
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    if (d->output == LDPB_MECH_OUTPUT_VECTOR) {
        say(detail, "%s.%s is set but mechanism %s reports a vector (stats)", what,
            is_bit ? "bit" : "real", d->name);
        return LDPB_EINVAL;
    }
    if (d->output == LDPB_MECH_OUTPUT_BIT) {
        if (!is_bit) {
            say(detail, "%s.real is set but mechanism %s reports a bit", what, d->name);
            return LDPB_EINVAL;
        }
        if (!(value == 0.0 || value == 1.0)) {
            say(detail, "%s.bit %g is not 0 or 1", what, value);
            return LDPB_ERANGE;
        }
        return LDPB_OK;
    }
    if (is_bit) {
        say(detail, "%s.bit is set but mechanism %s reports a real", what, d->name);
        return LDPB_EINVAL;
    }
    if (!isfinite(value)) {
        say(detail, "%s.real is not a finite number", what);
        return LDPB_EINVAL;
    }
    return LDPB_OK;
}

ldpb_err ldpb_mech_check_value(int id, double epsilon, int is_bit, double value, const char *what,
                               char *detail)
{
    ldpb_err err = ldpb_mech_check_field(id, epsilon, is_bit, value, what, detail);
    if (err)
        return err;
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    if (d->output == LDPB_MECH_OUTPUT_BIT)
        return LDPB_OK;
    if (!d->local) {
        if (!(value >= 0.0 && value <= 1.0)) {
            say(detail, "%s.real: %s reward %g outside [0, 1]", what, d->name, value);
            return LDPB_ERANGE;
        }
        return LDPB_OK;
    }
    /* Written so that a huge value or a tiny epsilon cannot overflow into a false accept. */
    if (!(fabs(value - 0.5) <= 0.5 + LDPB_MECH_REAL_SCALES_MAX / epsilon)) {
        say(detail, "%s.real: %s value %g is implausibly far from [0, 1] at epsilon %g", what,
            d->name, value, epsilon);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}

ldpb_err ldpb_mech_desc_opts(int id, double epsilon, double kappa, ldpb_mech_opts *opts)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    if (!opts || !ldpb_mech_desc_scalar(d))
        return LDPB_EINVAL;
    ldpb_mech_opts_init(opts, (ldpb_mech_kind)id, epsilon);
    if (d->params & LDPB_MECH_PARAM_KAPPA)
        opts->kappa = kappa;
    return LDPB_OK;
}

ldpb_err ldpb_mech_check_serviceable(int id, double epsilon, double kappa, char *detail)
{
    const ldpb_mech_desc *d = ldpb_mech_desc_of(id);
    ldpb_err err = ldpb_mech_check_epsilon(id, epsilon, "mechanism", detail);
    if (err || !d->local)
        return err;
    if (d->output == LDPB_MECH_OUTPUT_VECTOR) {
        say(detail, "the %s mechanism is built by its contextual policy, not from epsilon alone",
            d->name);
        return LDPB_EINVAL;
    }
    ldpb_mech_opts o;
    ldpb_mech_desc_opts(id, epsilon, kappa, &o);
    ldpb_mech *m = NULL;
    err = ldpb_mech_new(&m, &o);
    if (err) {
        if (d->params & LDPB_MECH_PARAM_KAPPA)
            say(detail, "no client can build the %s mechanism at epsilon %g with kappa %g (%s)",
                d->name, epsilon, kappa, ldpb_errname(err));
        else
            say(detail, "no client can build the %s mechanism at epsilon %g (%s)", d->name, epsilon,
                ldpb_errname(err));
        return err;
    }
    double r = d->radius(m, 1.0, 0.5);
    ldpb_mech_free(m);
    if (!isfinite(r)) {
        say(detail,
            "the %s mechanism at epsilon %g reports nothing about the reward: its reports "
            "cannot be de-biased",
            d->name, epsilon);
        return LDPB_ERANGE;
    }
    return LDPB_OK;
}
