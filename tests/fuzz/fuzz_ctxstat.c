/* Fuzz target for what the local contextual mode takes from the other side: a device's report
 * (ldpb_ctxstat_check, run by the aggregator on untrusted values) and the model statistics a
 * device is handed (ldpb_ctxmodel_load and choose, run by the client on values from the network).
 *
 * Input: byte 0 picks d = 1 + b % LDPB_CTXSTAT_D_MAX, byte 1 one of four configurations, the
 * rest is read as little-endian doubles (a trailing partial double is ignored). check must refuse
 * with LDPB_EPROTO and a reason, or accept only the right count of finite values on the grid
 * within the bound; the model must load or refuse with a documented code, and once loaded choose
 * an action in range. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"

static const double configs[4][4] = {
    /* epsilon, delta, L, B */
    {1.0, 0.1, 1.0, 1.0},
    {0.5, 1e-6, 2.0, 0.25},
    {10.0, 1e-9, 1e-6, 1e6},
    {1e-4, 1e-12, 1e6, 1e-6},
};

static void check_report(const ldpb_ctxstat *m, const double *z, size_t n)
{
    char detail[160];
    ldpb_err err = ldpb_ctxstat_check(m, z, n, detail);
    if (ldpb_ctxstat_check(m, z, n, NULL) != err)
        abort();
    if (err != LDPB_OK) {
        if (err != LDPB_EPROTO || !detail[0] || !memchr(detail, 0, sizeof detail))
            abort();
        return;
    }
    if (n != ldpb_ctxstat_values(m) || detail[0])
        abort();
    const ldpb_ctxstat_opts *o = ldpb_ctxstat_get_opts(m);
    const double g = ldpb_ctxstat_grid(m);
    /* derivations.md sec. 16, recomputed with a little room for its rounding allowances */
    const double r = o->feature_norm > o->reward_bound ? o->feature_norm : o->reward_bound;
    const double c = sqrt(2.0 * log(2.0 * (double)n / LDPB_CTXSTAT_FALSE_REFUSAL));
    const double lim = (r * r + g + c * ldpb_ctxstat_sigma(m)) * (1.0 + 1e-8);
    for (size_t i = 0; i < n; i++) {
        double q = z[i] / g; /* exact: g is a power of two and q stays far from overflow */
        if (!isfinite(z[i]) || fabs(z[i]) > lim || q != floor(q))
            abort();
    }
}

static void load_model(uint32_t d, const double *z, size_t n, double shift, double beta)
{
    ldpb_ctxmodel *model = NULL;
    if (ldpb_ctxmodel_new(&model, d) != LDPB_OK)
        abort();
    int repaired = -1;
    ldpb_err err = ldpb_ctxmodel_load(model, z, n, shift, beta, &repaired);
    if (err != LDPB_OK && err != LDPB_EINVAL && err != LDPB_ESTATE)
        abort();
    if (repaired != 0 && repaired != 1)
        abort();
    if (err == LDPB_OK) {
        static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {7};
        ldpb_rng *rng = NULL;
        if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK)
            abort();
        double x[3 * LDPB_CTXSTAT_D_MAX];
        for (size_t i = 0; i < 3 * (size_t)d; i++)
            x[i] = (double)((int)(i % 5) - 2) / (double)d;
        uint32_t arm = 99, ties = 0;
        err = ldpb_ctxmodel_choose(model, rng, x, 3, &arm, &ties);
        if (err == LDPB_OK ? (arm >= 3 || ties < 1 || ties > 3) : err != LDPB_EINVAL)
            abort();
        double theta[LDPB_CTXSTAT_D_MAX];
        if (ldpb_ctxmodel_theta(model, theta) != LDPB_OK)
            abort();
        ldpb_rng_free(rng);
    } else if (!isnan(ldpb_ctxmodel_logdet(model))) {
        abort();
    }
    ldpb_ctxmodel_free(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const uint32_t d = 1u + data[0] % LDPB_CTXSTAT_D_MAX;
    const double *c = configs[data[1] % 4];
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, d, c[0], c[1]);
    o.feature_norm = c[2];
    o.reward_bound = c[3];
    ldpb_ctxstat *m = NULL;
    if (ldpb_ctxstat_new(&m, &o) != LDPB_OK)
        abort();
    size_t n = (size - 2) / 8;
    double *z = malloc((n ? n : 1) * sizeof *z);
    if (!z)
        abort();
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = 0;
        for (int b = 0; b < 8; b++)
            bits |= (uint64_t)data[2 + 8 * i + (size_t)b] << (8 * b);
        memcpy(&z[i], &bits, sizeof bits);
    }
    check_report(m, z, n);
    load_model(d, z, n, (double)(data[1] >> 2), (double)(data[0] >> 5));
    free(z);
    ldpb_ctxstat_free(m);
    return 0;
}
