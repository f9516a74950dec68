/* The aggregator side of the local contextual mode (aggregator/src/ldp_linucb.c) and its
 * simulation (ctxsim.c): configuration refusals with precise messages; reports checked before
 * they are summed and the sum exact in grid units; the shift and beta_t of the model against
 * hand computation (SS18 Prop. 4 and 11 with the noise of n reports); save/restore identity
 * mid-run and refusal of corrupted bytes; with the privacy taken out (test constructor) the
 * on-device choice equals LinUCB's decision for decision; the simulator's fast device noise has
 * the law of the devices' exact mechanism. Statistical checks use fixed seeds and state their
 * false-failure probability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctxsim.h"
#include "ldp_linucb.h"
#include "ldpb/ctxmodel.h"
#include "ldpb/ctxstat.h"
#include "linucb.h"
#include "rand.h"

static const uint8_t SEED[LDPB_RNG_SEED_BYTES] = {9, 4, 2, 7};

static agg_ldp_linucb_config cfg_of(uint32_t d, uint64_t horizon)
{
    agg_ldp_linucb_config c;
    agg_ldp_linucb_config_init(&c);
    c.d = d;
    c.horizon = horizon;
    c.epsilon = 1.0;
    c.delta = 0.1;
    c.alpha = 0.01;
    return c;
}

static void near(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        print_error("got %.17g, want %.17g (relative tolerance %g)\n", got, want, rel);
        fail();
    }
}

/* Each field out of its range is refused with the code and a message naming it. */
static void config_refusals(void **state)
{
    (void)state;
    struct {
        const char *field;
        double value;
        ldpb_err want;
        const char *msg;
    } cases[] = {
        {"epsilon", 0.0, LDPB_ERANGE, "epsilon 0 outside [0.0001, 10]"},
        {"epsilon", 5e-5, LDPB_ERANGE, "epsilon 5e-05 outside [0.0001, 10]"},
        {"epsilon", 10.5, LDPB_ERANGE, "epsilon 10.5 outside [0.0001, 10]"},
        {"epsilon", NAN, LDPB_EINVAL, "epsilon is NaN"},
        {"delta", 0.0, LDPB_ERANGE, "delta 0 outside (0, 0.1]"},
        {"delta", 0.2, LDPB_ERANGE, "delta 0.2 outside (0, 0.1]"},
        {"L", 0.0, LDPB_ERANGE, "L (feature_norm) 0 outside [1e-06, 1e+06]"},
        {"L", INFINITY, LDPB_ERANGE, "L (feature_norm) inf outside [1e-06, 1e+06]"},
        {"L", 2e6, LDPB_ERANGE, "L (feature_norm) 2e+06 outside [1e-06, 1e+06]"},
        {"B", -1.0, LDPB_ERANGE, "B (reward_bound) -1 outside [1e-06, 1e+06]"},
        {"B", 1e-7, LDPB_ERANGE, "B (reward_bound) 1e-07 outside [1e-06, 1e+06]"},
        {"S", 0.0, LDPB_ERANGE, "S (theta_norm) 0 outside (0, inf)"},
        {"sigma", NAN, LDPB_EINVAL, "sigma (noise_sigma) is NaN"},
        {"alpha", 0.0, LDPB_ERANGE, "alpha 0 outside (0, 1)"},
        {"alpha", 1.0, LDPB_ERANGE, "alpha 1 outside (0, 1)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agg_ldp_linucb_config c = cfg_of(3, 100);
        double *f = strcmp(cases[i].field, "epsilon") == 0 ? &c.epsilon
                    : strcmp(cases[i].field, "delta") == 0 ? &c.delta
                    : strcmp(cases[i].field, "L") == 0     ? &c.feature_norm
                    : strcmp(cases[i].field, "B") == 0     ? &c.reward_bound
                    : strcmp(cases[i].field, "S") == 0     ? &c.theta_norm
                    : strcmp(cases[i].field, "sigma") == 0 ? &c.noise_sigma
                                                           : &c.alpha;
        *f = cases[i].value;
        char msg[AGG_ERRMSG_MAX] = "";
        agg_ldp_linucb *p = (agg_ldp_linucb *)&msg; /* must be reset to NULL */
        assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), cases[i].want);
        assert_null(p);
        if (!strstr(msg, cases[i].msg)) {
            print_error("message '%s' lacks '%s'\n", msg, cases[i].msg);
            fail();
        }
        assert_non_null(strstr(msg, "ldp-linucb-gaussian: "));
    }
    char msg[AGG_ERRMSG_MAX] = "";
    agg_ldp_linucb *p = NULL;
    agg_ldp_linucb_config c = cfg_of(0, 100);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "d 0 outside [1, 32]"));
    c = cfg_of(LDPB_CTXSTAT_D_MAX + 1, 100);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "d 33 outside [1, 32]"));
    c = cfg_of(3, 0);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "horizon 0"));
    /* a horizon whose exact sum could overflow 63 bits of grid steps */
    c = cfg_of(3, UINT64_MAX);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "must fit 63 bits"));
    assert_int_equal(agg_ldp_linucb_new(&p, NULL, msg), LDPB_EINVAL);
    assert_int_equal(agg_ldp_linucb_new(NULL, &c, msg), LDPB_EINVAL);
    /* the boundary values are accepted */
    c = cfg_of(LDPB_CTXSTAT_D_MAX, 1);
    c.epsilon = LDPB_EPSILON_MAX;
    c.delta = LDPB_CTXSTAT_DELTA_MAX;
    c.feature_norm = LDPB_CTXSTAT_BOUND_MAX;
    c.reward_bound = LDPB_CTXSTAT_BOUND_MIN;
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_OK);
    agg_ldp_linucb_free(p);
    c.epsilon = LDPB_CTXSTAT_EPSILON_MIN;
    assert_int_equal(agg_ldp_linucb_new(&p, &c, msg), LDPB_OK);
    assert_int_equal(ldpb_ctxstat_values(agg_ldp_linucb_mech(p)), LDPB_CTXSTAT_VALUES(32));
    agg_ldp_linucb_free(p);
    assert_int_equal(agg_ldp_linucb_new_noiseless(&p, &c, 0.0, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "rho 0"));
}

static void same_model(agg_ldp_linucb *a, agg_ldp_linucb *b, size_t nv)
{
    double sa[LDPB_CTXSTAT_VALUES_MAX], sb[LDPB_CTXSTAT_VALUES_MAX], ha, hb, ba, bb;
    assert_int_equal(agg_ldp_linucb_model(a, sa, &ha, &ba), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_model(b, sb, &hb, &bb), LDPB_OK);
    assert_memory_equal(sa, sb, nv * sizeof *sa);
    assert_true(ha == hb && ba == bb);
}

/* Reports the mechanism would not produce are refused and change nothing; the horizon stops
 * adds; the sum is the exact sum of the reports in grid units, independent of their order. */
static void add_checks_and_sums_exactly(void **state)
{
    (void)state;
    const uint32_t d = 3;
    const uint64_t n = 40;
    agg_ldp_linucb_config c = cfg_of(d, n);
    agg_ldp_linucb *p, *q;
    assert_int_equal(agg_ldp_linucb_new(&p, &c, NULL), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_new(&q, &c, NULL), LDPB_OK);
    const ldpb_ctxstat *m = agg_ldp_linucb_mech(p);
    const size_t nv = ldpb_ctxstat_values(m);
    const double g = ldpb_ctxstat_grid(m);
    ldpb_rng *rng;
    assert_int_equal(ldpb_rng_new_seeded(&rng, SEED), LDPB_OK);
    double rep[40][LDPB_CTXSTAT_VALUES_MAX];
    int64_t want[LDPB_CTXSTAT_VALUES_MAX] = {0};
    for (uint64_t t = 0; t < n; t++) {
        double x[3] = {0.6, -0.3 + 0.01 * (double)t, 0.2}, y = t % 2 ? 1.0 : -0.5;
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, y, rep[t]), LDPB_OK);
        for (size_t i = 0; i < nv; i++)
            want[i] += (int64_t)(rep[t][i] / g);
    }
    /* refusals: wrong length, off the grid, non-finite, far beyond the admissible range */
    double bad[LDPB_CTXSTAT_VALUES_MAX];
    memcpy(bad, rep[0], sizeof bad);
    assert_int_equal(agg_ldp_linucb_add(p, bad, nv - 1), LDPB_EPROTO);
    bad[2] += 0.5 * g;
    assert_int_equal(agg_ldp_linucb_add(p, bad, nv), LDPB_EPROTO);
    bad[2] = NAN;
    assert_int_equal(agg_ldp_linucb_add(p, bad, nv), LDPB_EPROTO);
    bad[2] = 1e6;
    assert_int_equal(agg_ldp_linucb_add(p, bad, nv), LDPB_EPROTO);
    assert_int_equal(agg_ldp_linucb_add(p, NULL, nv), LDPB_EINVAL);
    assert_int_equal(agg_ldp_linucb_reports(p), 0);
    same_model(p, q, nv); /* nothing was summed */
    for (uint64_t t = 0; t < n; t++) {
        assert_int_equal(agg_ldp_linucb_add(p, rep[t], nv), LDPB_OK);
        assert_int_equal(agg_ldp_linucb_add(q, rep[n - 1 - t], nv), LDPB_OK);
    }
    assert_int_equal(agg_ldp_linucb_reports(p), n);
    assert_int_equal(agg_ldp_linucb_add(p, rep[0], nv), LDPB_ESTATE);
    assert_int_equal(agg_ldp_linucb_reports(p), n);
    double s[LDPB_CTXSTAT_VALUES_MAX], shift, beta;
    assert_int_equal(agg_ldp_linucb_model(p, s, &shift, &beta), LDPB_OK);
    for (size_t i = 0; i < nv; i++)
        assert_true(s[i] == (double)want[i] * g);
    same_model(p, q, nv); /* order does not matter, bit for bit */
    agg_ldp_linucb_free(p);
    agg_ldp_linucb_free(q);

    /* Beyond 2^53 grid steps a double accumulator would lose the last step; the integer sum
     * keeps it. Restore a state whose entry 0 is 2^60 steps (horizon - 2 reports can reach that),
     * add a report with one step in entry 0 and read the exact total back from the state. */
    c = cfg_of(d, 1);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, NULL), LDPB_OK);
    m = agg_ldp_linucb_mech(p);
    /* the largest horizon: INT64_MAX over the admissible grid steps of one entry */
    double um = floor(ldpb_ctxstat_limit(m) / g) + 1.0;
    agg_ldp_linucb_free(p);
    c.horizon = (uint64_t)(INT64_MAX / (int64_t)um);
    assert_int_equal(agg_ldp_linucb_new(&p, &c, NULL), LDPB_OK);
    c.horizon++;
    assert_int_equal(agg_ldp_linucb_new(&q, &c, NULL), LDPB_ERANGE);
    m = agg_ldp_linucb_mech(p);
    uint8_t buf[1024];
    size_t len;
    assert_int_equal(agg_ldp_linucb_save(p, buf, sizeof buf, &len), LDPB_OK);
    size_t body = len - 16 - 8 * nv; /* n, repairs, then the entries */
    uint64_t nn = c.horizon - 2, big = 1ULL << 60;
    memcpy(buf + body, &nn, 8); /* the state format is little-endian; so is this machine */
    memcpy(buf + body + 16, &big, 8);
    assert_int_equal(agg_ldp_linucb_restore(p, buf, len), LDPB_OK);
    double one[LDPB_CTXSTAT_VALUES_MAX] = {0};
    one[0] = g;
    assert_int_equal(agg_ldp_linucb_add(p, one, nv), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_save(p, buf, sizeof buf, &len), LDPB_OK);
    uint64_t got;
    memcpy(&got, buf + body + 16, 8);
    assert_true(got == big + 1);
    agg_ldp_linucb_free(p);
    ldpb_rng_free(rng);
}

/* SS18 Prop. 11's Upsilon, used with the sub-Gaussian parameter of the summed reports, is at
 * least the epsilon-net bound 4 s sqrt(d ln 9 + ln(4n/alpha)) derived in docs/derivations.md
 * sec. 15 for every d the mechanism allows and every ln(2n/alpha) > ln 2: the shift is a valid
 * bound for the discrete (non-Gaussian) noise. */
static void upsilon_dominates_net_bound(void **state)
{
    (void)state;
    for (uint32_t d = 1; d <= LDPB_CTXSTAT_D_MAX; d++)
        for (double l2n = log(2.0); l2n < 60.0; l2n += 0.25) {
            double u, rmin, rmax, gm;
            agg_linucb_gaussian_bounds(1.0, 1.0, d, l2n, &u, &rmin, &rmax, &gm);
            double net = 4.0 * sqrt((double)d * log(9.0) + log(2.0) + l2n);
            if (!(u >= net)) {
                print_error("d %u l2n %g: Upsilon %g < net bound %g\n", d, l2n, u, net);
                fail();
            }
        }
}

/* The model's shift and beta_t by hand: V = shift I when every report is zero, so
 * ln det V = d ln(shift), and beta = sigma sqrt(2 ln(2/alpha) + ln det V - d ln rho_min(1)) +
 * S sqrt(rho_max(n)) + gamma(n) with Upsilon(n) = s sqrt(2n) (4 sqrt d + 2 ln(2T/alpha)), s^2 =
 * sigma_dg^2 + g^2/4, gamma(n) = sqrt(n / Upsilon(n)) s (sqrt d + sqrt(2 ln(2T/alpha))). */
static void shift_and_beta_by_hand(void **state)
{
    (void)state;
    const uint32_t d = 2;
    agg_ldp_linucb_config c = cfg_of(d, 100);
    c.theta_norm = 2.0;
    c.noise_sigma = 0.5;
    agg_ldp_linucb *p;
    assert_int_equal(agg_ldp_linucb_new(&p, &c, NULL), LDPB_OK);
    const ldpb_ctxstat *m = agg_ldp_linucb_mech(p);
    const size_t nv = ldpb_ctxstat_values(m);
    const double sg = ldpb_ctxstat_sigma(m), g = ldpb_ctxstat_grid(m);
    const double s = sqrt(sg * sg + g * g / 4.0), l2n = log(2.0 * 100.0 / 0.01);
    const double u1 = s * sqrt(2.0) * (4.0 * sqrt(2.0) + 2.0 * l2n);
    double zero[LDPB_CTXSTAT_VALUES_MAX] = {0}, st[LDPB_CTXSTAT_VALUES_MAX], shift, beta;
    for (int reps = 0; reps <= 9; reps++) {
        /* before any report the bounds of one report apply */
        const double n = reps == 0 ? 1.0 : (double)reps;
        const double un = u1 * sqrt(n);
        const double gam = sqrt(1.0 / un) * sqrt(n) * s * (sqrt(2.0) + sqrt(2.0 * l2n));
        const double want_beta =
            0.5 * sqrt(2.0 * log(2.0 / 0.01) + 2.0 * log(2.0 * un) - 2.0 * log(u1)) +
            2.0 * sqrt(3.0 * un) + gam;
        assert_int_equal(agg_ldp_linucb_model(p, st, &shift, &beta), LDPB_OK);
        for (size_t i = 0; i < nv; i++)
            assert_true(st[i] == 0.0);
        near(shift, 2.0 * un, 1e-12);
        near(beta, want_beta, 1e-12);
        agg_ldp_linucb_bounds b;
        assert_int_equal(agg_ldp_linucb_bounds_at(p, (uint64_t)reps, &b), LDPB_OK);
        near(b.rho_min, un, 1e-12);
        near(b.rho_max, 3.0 * un, 1e-12);
        near(b.rho_min_beta, u1, 1e-12);
        near(b.gamma, gam, 1e-12);
        assert_int_equal(agg_ldp_linucb_add(p, zero, nv), LDPB_OK);
    }
    /* Fixed numbers for n = 4, so a change of calibration is seen: with sigma_dg the
     * mechanism's, Upsilon(4) = 2 Upsilon(1). */
    agg_ldp_linucb_bounds b1, b4;
    assert_int_equal(agg_ldp_linucb_bounds_at(p, 1, &b1), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_bounds_at(p, 4, &b4), LDPB_OK);
    near(b4.upsilon, 2.0 * b1.upsilon, 1e-15);
    near(b4.gamma, sqrt(2.0) * b1.gamma, 1e-15);
    agg_ldp_linucb_free(p);
}

/* Save mid-run, restore into a fresh object: the same model, and the same after both go on
 * with the same reports. Truncated, altered or foreign bytes are refused and change nothing. */
static void save_restore(void **state)
{
    (void)state;
    const uint32_t d = 4;
    agg_ldp_linucb_config c = cfg_of(d, 200);
    agg_ldp_linucb *a, *b, *other;
    assert_int_equal(agg_ldp_linucb_new(&a, &c, NULL), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_new(&b, &c, NULL), LDPB_OK);
    agg_ldp_linucb_config oc = c;
    oc.epsilon = 2.0;
    assert_int_equal(agg_ldp_linucb_new(&other, &oc, NULL), LDPB_OK);
    const ldpb_ctxstat *m = agg_ldp_linucb_mech(a);
    const size_t nv = ldpb_ctxstat_values(m);
    ldpb_rng *rng;
    assert_int_equal(ldpb_rng_new_seeded(&rng, SEED), LDPB_OK);
    double rep[LDPB_CTXSTAT_VALUES_MAX];
    const double x[4] = {0.5, 0.5, -0.5, 0.1};
    for (int t = 0; t < 60; t++) {
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, 0.3, rep), LDPB_OK);
        assert_int_equal(agg_ldp_linucb_add(a, rep, nv), LDPB_OK);
    }
    size_t len;
    assert_int_equal(agg_ldp_linucb_save(a, NULL, 0, &len), LDPB_ERANGE);
    uint8_t *buf = malloc(len), *cut = malloc(len);
    assert_non_null(buf);
    assert_non_null(cut);
    assert_int_equal(agg_ldp_linucb_save(a, buf, len, &len), LDPB_OK);
    /* refusals first, into b (still empty) */
    for (size_t l = 0; l < len; l++)
        assert_int_equal(agg_ldp_linucb_restore(b, buf, l), LDPB_ECORRUPT);
    for (size_t i = 0; i < len - 16 - 8 * nv; i++) { /* any header byte */
        memcpy(cut, buf, len);
        cut[i] ^= 0x01;
        assert_int_equal(agg_ldp_linucb_restore(b, cut, len), LDPB_ECORRUPT);
    }
    size_t body = len - 16 - 8 * nv;
    memcpy(cut, buf, len);
    uint64_t v = 201; /* more reports than the horizon */
    memcpy(cut + body, &v, 8);
    assert_int_equal(agg_ldp_linucb_restore(b, cut, len), LDPB_ECORRUPT);
    memcpy(cut, buf, len);
    v = 1ULL << 62; /* an entry 60 reports cannot reach */
    memcpy(cut + body + 16 + 8, &v, 8);
    assert_int_equal(agg_ldp_linucb_restore(b, cut, len), LDPB_ECORRUPT);
    v = 0 - (1ULL << 62); /* -2^62 in two's complement */
    memcpy(cut + body + 16 + 8, &v, 8);
    assert_int_equal(agg_ldp_linucb_restore(b, cut, len), LDPB_ECORRUPT);
    assert_int_equal(agg_ldp_linucb_restore(other, buf, len), LDPB_ECORRUPT);
    uint8_t *longer = calloc(len + 1, 1);
    assert_non_null(longer);
    memcpy(longer, buf, len);
    assert_int_equal(agg_ldp_linucb_restore(b, longer, len + 1), LDPB_ECORRUPT);
    assert_int_equal(agg_ldp_linucb_reports(b), 0);
    assert_int_equal(agg_ldp_linucb_restore(b, buf, len), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_reports(b), 60);
    same_model(a, b, nv);
    for (int t = 0; t < 30; t++) {
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, -1.0, rep), LDPB_OK);
        assert_int_equal(agg_ldp_linucb_add(a, rep, nv), LDPB_OK);
        assert_int_equal(agg_ldp_linucb_add(b, rep, nv), LDPB_OK);
    }
    same_model(a, b, nv);
    /* a noiseless state is another configuration */
    agg_ldp_linucb *z;
    assert_int_equal(agg_ldp_linucb_new_noiseless(&z, &c, 1.0, NULL), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_restore(z, buf, len), LDPB_ECORRUPT);
    agg_ldp_linucb_free(z);
    free(longer);
    free(buf);
    free(cut);
    agg_ldp_linucb_free(a);
    agg_ldp_linucb_free(b);
    agg_ldp_linucb_free(other);
    ldpb_rng_free(rng);
}

static void pack(uint32_t d, const double *x, double y, double *out)
{
    double v[LDPB_CTXSTAT_D_MAX + 1];
    memcpy(v, x, d * sizeof *x);
    v[d] = y;
    size_t k = 0;
    for (uint32_t i = 0; i <= d; i++)
        for (uint32_t j = i; j <= d; j++)
            out[k++] = v[i] * v[j];
}

/* With the privacy taken out, the device's choice from the handed-out model is LinUCB's, round
 * for round, on the same contexts and rewards (the same set of maximisers when they tie); with
 * it (control) the choices differ often. */
static void noiseless_equals_linucb(void **state)
{
    (void)state;
    const uint32_t d = 5, k = 25;
    const uint64_t n = 2000;
    agg_ctx_env env;
    agg_ctx_env_config ec = {
        .d = d, .k = k, .best = 0.75, .gap = 0.1, .reward = AGG_CTX_REWARD_BOUNDED};
    assert_int_equal(agg_ctx_env_start(&env, &ec, SEED, 5), LDPB_OK);
    agg_linucb_config lc;
    agg_linucb_config_init(&lc);
    lc.d = d;
    lc.horizon = n;
    lc.alpha = 0.01;
    lc.rho = 1.0;
    agg_linucb *lin;
    assert_int_equal(agg_linucb_new(&lin, &lc, NULL), LDPB_OK);
    agg_ldp_linucb_config c = cfg_of(d, n);
    agg_ldp_linucb *loc, *noisy;
    assert_int_equal(agg_ldp_linucb_new_noiseless(&loc, &c, 1.0, NULL), LDPB_OK);
    assert_int_equal(agg_ldp_linucb_new(&noisy, &c, NULL), LDPB_OK);
    ldpb_ctxmodel *dev, *dev2;
    assert_int_equal(ldpb_ctxmodel_new(&dev, d), LDPB_OK);
    assert_int_equal(ldpb_ctxmodel_new(&dev2, d), LDPB_OK);
    ldpb_rng *ties, *noise;
    assert_int_equal(ldpb_rng_new_seeded_stream(&ties, SEED, 1), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded_stream(&noise, SEED, 2), LDPB_OK);
    agg_rand r;
    agg_rand_seed_u64(&r, 3);
    agg_policy_env pe = {&r, NULL};
    const ldpb_ctxstat *m = agg_ldp_linucb_mech(noisy);
    const size_t nv = ldpb_ctxstat_values(m);
    double x[25 * 5], mean[25], st[LDPB_CTXSTAT_VALUES_MAX], rep[LDPB_CTXSTAT_VALUES_MAX];
    uint64_t differ = 0, tied = 0;
    for (uint64_t t = 0; t < n; t++) {
        agg_ctx_env_round(&env, x, mean);
        uint32_t a1, a2, a3, t1, t2;
        assert_int_equal(agg_linucb_choose(lin, &pe, x, k, &a1, &t1), LDPB_OK);
        double shift, beta;
        assert_int_equal(agg_ldp_linucb_model(loc, st, &shift, &beta), LDPB_OK);
        assert_true(shift == 1.0);
        assert_int_equal(ldpb_ctxmodel_load(dev, st, nv, shift, beta, NULL), LDPB_OK);
        assert_int_equal(ldpb_ctxmodel_choose(dev, ties, x, k, &a2, &t2), LDPB_OK);
        /* Exact ties (round 0: theta = 0 and unit actions) are broken by each side's own
         * generator; then the same number of maximisers must tie, and both go on with LinUCB's
         * choice. */
        assert_int_equal(t1, t2);
        if (t1 == 1)
            assert_int_equal(a1, a2);
        tied += t1 > 1;
        assert_int_equal(agg_ldp_linucb_model(noisy, st, &shift, &beta), LDPB_OK);
        assert_int_equal(ldpb_ctxmodel_load(dev2, st, nv, shift, beta, NULL), LDPB_OK);
        assert_int_equal(ldpb_ctxmodel_choose(dev2, ties, x, k, &a3, NULL), LDPB_OK);
        differ += a3 != a1;
        double y = agg_ctx_env_reward(&env, mean[a1]);
        assert_int_equal(agg_linucb_observe(lin, &pe, x + a1 * d, y), LDPB_OK);
        pack(d, x + a1 * d, y, rep);
        assert_int_equal(agg_ldp_linucb_add(loc, rep, nv), LDPB_OK);
        /* the control's own report is of its own choice */
        assert_int_equal(ldpb_ctxstat_privatize(m, noise, x + a3 * d, y, rep), LDPB_OK);
        assert_int_equal(agg_ldp_linucb_add(noisy, rep, nv), LDPB_OK);
    }
    assert_true(differ > n / 10);
    assert_true(tied < 10); /* the comparison is decision for decision in all other rounds */
    agg_linucb_free(lin);
    agg_ldp_linucb_free(loc);
    agg_ldp_linucb_free(noisy);
    ldpb_ctxmodel_free(dev);
    ldpb_ctxmodel_free(dev2);
    ldpb_rng_free(ties);
    ldpb_rng_free(noise);
}

/* The simulator's fast device noise against the devices' exact mechanism on the same input:
 * every fast report is admissible, and per packed entry the two samples' means and variances
 * agree. N = 20000 reports each; the mean of an entry has sd sigma/sqrt(N), so a 5 sd window on
 * the difference of the two means (sd sqrt(2) sigma/sqrt(N)) fails with probability < 1e-6 per
 * entry; the variance ratio's sd is about sqrt(4/N) = 0.014, so a window of 0.1 is over 7 sd
 * (< 1e-11). With the 15 entries of d = 4 the test fails by chance with probability < 2e-5
 * (fixed seeds: it either always passes or always fails). */
static void fast_device_noise_has_the_mechanism_law(void **state)
{
    (void)state;
    const uint32_t d = 4;
    agg_ldp_linucb_config c = cfg_of(d, 10);
    agg_ldp_linucb *p;
    assert_int_equal(agg_ldp_linucb_new(&p, &c, NULL), LDPB_OK);
    const ldpb_ctxstat *m = agg_ldp_linucb_mech(p);
    const size_t nv = ldpb_ctxstat_values(m);
    const double sg = ldpb_ctxstat_sigma(m);
    ldpb_rng *rng;
    assert_int_equal(ldpb_rng_new_seeded(&rng, SEED), LDPB_OK);
    agg_rand fr;
    agg_rand_seed_u64(&fr, 77);
    const double x[4] = {0.3, -0.7, 0.1, 0.5}, y = 2.5; /* y is clipped to B = 1 */
    double want[LDPB_CTXSTAT_VALUES_MAX];
    pack(d, x, 1.0, want);
    enum { N = 20000 };
    double s1[2][LDPB_CTXSTAT_VALUES_MAX] = {{0}}, s2[2][LDPB_CTXSTAT_VALUES_MAX] = {{0}};
    double rep[LDPB_CTXSTAT_VALUES_MAX];
    for (int t = 0; t < N; t++) {
        assert_int_equal(ldpb_ctxstat_privatize(m, rng, x, y, rep), LDPB_OK);
        for (size_t i = 0; i < nv; i++) {
            s1[0][i] += rep[i] - want[i];
            s2[0][i] += (rep[i] - want[i]) * (rep[i] - want[i]);
        }
        assert_int_equal(agg_ctx_ldp_privatize_fast(m, &fr, x, y, rep), LDPB_OK);
        assert_int_equal(ldpb_ctxstat_check(m, rep, nv, NULL), LDPB_OK);
        for (size_t i = 0; i < nv; i++) {
            s1[1][i] += rep[i] - want[i];
            s2[1][i] += (rep[i] - want[i]) * (rep[i] - want[i]);
        }
    }
    for (size_t i = 0; i < nv; i++) {
        double m0 = s1[0][i] / N, m1 = s1[1][i] / N;
        double v0 = s2[0][i] / N - m0 * m0, v1 = s2[1][i] / N - m1 * m1;
        assert_true(fabs(m0 - m1) < 5.0 * sqrt(2.0) * sg / sqrt((double)N));
        assert_true(fabs(v1 / v0 - 1.0) < 0.1);
        assert_true(fabs(v1 / (sg * sg) - 1.0) < 0.1);
    }
    /* the same clipping rule as the device: an action longer than L is refused */
    const double lng[4] = {1.0, 0.5, 0.0, 0.0};
    assert_int_equal(agg_ctx_ldp_privatize_fast(m, &fr, lng, 0.0, rep), LDPB_ERANGE);
    assert_int_equal(ldpb_ctxstat_privatize(m, rng, lng, 0.0, rep), LDPB_ERANGE);
    agg_ldp_linucb_free(p);
    ldpb_rng_free(rng);
}

/* A simulated trial of the local mode is reproducible, and FAST and SECURE device noise give
 * regrets of the same size (not equal: different draws). */
static void local_trial_runs(void **state)
{
    (void)state;
    const uint64_t cps[] = {100, 400};
    agg_ctx_ldp_sim_config sc;
    memset(&sc, 0, sizeof sc);
    sc.policy = cfg_of(5, 400);
    sc.env = (agg_ctx_env_config){
        .d = 5, .k = 25, .best = 0.75, .gap = 0.1, .reward = AGG_CTX_REWARD_BOUNDED};
    sc.checkpoints = cps;
    sc.n_checkpoints = 2;
    sc.noise_kind = AGG_NOISE_FAST;
    double r1[2], r2[2], r3[2];
    uint64_t rep;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_ctx_ldp_sim_run_trial(&sc, SEED, 1, r1, &rep, msg), LDPB_OK);
    assert_int_equal(agg_ctx_ldp_sim_run_trial(&sc, SEED, 1, r2, NULL, msg), LDPB_OK);
    assert_memory_equal(r1, r2, sizeof r1);
    assert_true(r1[0] > 0.0 && r1[1] >= r1[0] && r1[1] <= 400.0 * 1.5);
    sc.noise_kind = AGG_NOISE_SECURE;
    assert_int_equal(agg_ctx_ldp_sim_run_trial(&sc, SEED, 1, r3, NULL, msg), LDPB_OK);
    assert_true(r3[1] > 0.0 && r3[1] <= 400.0 * 1.5);
    sc.policy.d = 4;
    assert_int_equal(agg_ctx_ldp_sim_run_trial(&sc, SEED, 1, r3, NULL, msg), LDPB_EINVAL);
    assert_non_null(strstr(msg, "policy d 4 != env d 5"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_refusals),
        cmocka_unit_test(add_checks_and_sums_exactly),
        cmocka_unit_test(upsilon_dominates_net_bound),
        cmocka_unit_test(shift_and_beta_by_hand),
        cmocka_unit_test(save_restore),
        cmocka_unit_test(noiseless_equals_linucb),
        cmocka_unit_test(fast_device_noise_has_the_mechanism_law),
        cmocka_unit_test(local_trial_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
