/* Privacy audit of the local contextual mode's on-device mechanism (ldpb_ctxstat_privatize), in
 * the manner of `ldpb audit` (docs/audit.md): the production code drawn many times at a pair of
 * worst-case neighbouring inputs, Clopper-Pearson intervals (audit_cp_interval) that hold
 * simultaneously by Bonferroni, and a deliberately broken mechanism that the same audit must
 * catch. `ldpb audit` itself is built around the scalar mechanisms (inputs in [0, 1], bins of one
 * output); a report here is a vector, so the audit lives in this test.
 *
 * Inputs. With L = 1 and B = 2^-6, v = (x, y) = (1, 0, B) and v' = (0, 1, -B): ||v||^2 =
 * ||v'||^2 = L^2 + B^2 and v . v' = -B^2, so the packed statistics differ by
 * sqrt(2 + 2 B^2) = 0.99988 sqrt(2) (L^2 + B^2), all but the whole sensitivity the calibration
 * assumes; every entry is on the grid, so the rounding is the identity and the means m, m' are
 * the packed v v^T, v' v'^T exactly.
 *
 * Statistic. The likelihood ratio of two Gaussians with the same covariance depends on the output
 * z only through its projection on m - m', so T = <z - m', m - m'> / ||m - m'|| is the optimal
 * one-dimensional statistic: under v it is (nearly) N(||m - m'||, sigma^2), under v' N(0,
 * sigma^2). Every set S = {T > c} and {T <= c} at thresholds c fixed in advance (multiples of
 * ||m - m'||, where a shift of a few claimed sigma is most visible, and ||m - m'|| / 2 +- 1.5, 2,
 * 2.5 and 3 claimed sigma, the tails where the production mechanism's ratio is largest) must
 * satisfy P(S | v) <= e^eps P(S | v') + delta, in both directions.
 *
 * Checks, over N reports from each input:
 *   privacy  - the lower confidence bound of P(S|a) - e^eps * (upper bound of P(S|b)) - delta is
 *              <= 0 for every set and ordered pair (a, b);
 *   fidelity - every interval contains the probability the claimed sigma gives the set (the
 *              normal tail: at sigma / g >= 2^20 the discrete law's cell probabilities equal the
 *              continuous ones to far below 1e-12).
 * All 4 * C intervals hold at once with probability >= 1 - 1e-9 (Bonferroni), and on that event
 * a correct mechanism passes both checks: the false-failure probability of the test is 1e-9.
 *
 * Power. The (eps, delta) calibration is conservative (zCDP conversion, and the sensitivity
 * bound): at eps = 1, delta = 0.1 the production mechanism's exact delta at eps = 1 for this
 * pair is about 0.002. A mechanism with sigma / 3 has mean shift 1.27 sigma' and delta(1) = 0.23,
 * which the privacy check sees with a margin of 0.12 against interval half-widths near 0.02; the
 * fidelity check sees far smaller errors of scale (sigma / 1.5 fails it, though that mechanism is
 * still (1, 0.1)-DP for this pair and the privacy check rightly passes it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "audit.h"
#include "ctxstat_internal.h"
#include "ldpb/ctxstat.h"
#include "ldpb/rng.h"

#define ALPHA 1e-9
#define N     60000

/* thresholds in units of ||m - m'||, then offsets from ||m - m'|| / 2 in claimed sigmas */
static const double in_shift[] = {-1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0};
static const double in_sigma[] = {-3.0, -2.5, -2.0, -1.5, 1.5, 2.0, 2.5, 3.0};
#define C_SHIFT (sizeof in_shift / sizeof in_shift[0])
#define C       (C_SHIFT + sizeof in_sigma / sizeof in_sigma[0])

typedef struct verdict {
    int privacy_ok, fidelity_ok;
    double worst_excess; /* largest lower bound of P(S|a) - e^eps P(S|b) - delta */
} verdict;

static double normal_upper(double z)
{
    return 0.5 * erfc(z / sqrt(2.0));
}

/* Runs the audit of mechanism `m` (which claims `claim_sigma`, eps and delta) at the pair above. */
static verdict audit_pair(const ldpb_ctxstat *m, double claim_sigma, const char *seed_text)
{
    const uint32_t d = 2;
    const double B = 0x1p-6;
    const double x[2][2] = {{1.0, 0.0}, {0.0, 1.0}};
    const double y[2] = {B, -B};
    double mean[2][6], dir[6], norm = 0.0;
    for (int s = 0; s < 2; s++) {
        const double v[3] = {x[s][0], x[s][1], y[s]};
        for (uint32_t i = 0; i <= d; i++)
            for (uint32_t j = i; j <= d; j++)
                mean[s][ldpb_ctxstat_index(d, i, j)] = v[i] * v[j];
    }
    for (int i = 0; i < 6; i++) {
        dir[i] = mean[0][i] - mean[1][i];
        norm += dir[i] * dir[i];
    }
    norm = sqrt(norm);
    assert_true(fabs(norm - sqrt(2.0 + 2.0 * B * B)) < 1e-15);

    double cut[C];
    for (size_t c = 0; c < C; c++)
        cut[c] =
            c < C_SHIFT ? in_shift[c] * norm : 0.5 * norm + in_sigma[c - C_SHIFT] * claim_sigma;

    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, seed), LDPB_OK);
    /* above[s][c]: reports from input s with T > cut[c] */
    uint64_t above[2][C] = {{0}};
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < N; r++) {
            double z[6], t = 0.0;
            assert_int_equal(ldpb_ctxstat_privatize(m, rng, x[s], y[s], z), LDPB_OK);
            for (int i = 0; i < 6; i++)
                t += (z[i] - mean[1][i]) * dir[i];
            t /= norm;
            for (size_t c = 0; c < C; c++)
                above[s][c] += t > cut[c];
        }
    ldpb_rng_free(rng);

    const ldpb_ctxstat_opts *o = ldpb_ctxstat_get_opts(m);
    const double e_eps = exp(o->epsilon), delta = o->delta;
    const double level = ALPHA / (2.0 * 2.0 * C); /* 2 inputs x C sets, each interval two-sided,
                                                     and the same for the complements */
    verdict out = {1, 1, -HUGE_VAL};
    for (size_t c = 0; c < C; c++) {
        double lo[2], hi[2], qlo[2], qhi[2], nominal[2];
        for (int s = 0; s < 2; s++) {
            assert_int_equal(audit_cp_interval(N, above[s][c], level, &lo[s], &hi[s]), LDPB_OK);
            assert_int_equal(audit_cp_interval(N, N - above[s][c], level, &qlo[s], &qhi[s]),
                             LDPB_OK);
            double shift = s == 0 ? norm : 0.0;
            nominal[s] = normal_upper((cut[c] - shift) / claim_sigma);
            if (!(lo[s] <= nominal[s] && nominal[s] <= hi[s]))
                out.fidelity_ok = 0;
        }
        /* {T > c}: v against v', and v' against v; {T <= c} likewise */
        double ex[4] = {
            lo[0] - e_eps * hi[1] - delta,
            lo[1] - e_eps * hi[0] - delta,
            qlo[0] - e_eps * qhi[1] - delta,
            qlo[1] - e_eps * qhi[0] - delta,
        };
        for (int i = 0; i < 4; i++) {
            out.worst_excess = fmax(out.worst_excess, ex[i]);
            if (ex[i] > 0.0)
                out.privacy_ok = 0;
        }
    }
    print_message("%s: worst privacy excess %.4f (> 0 fails), fidelity %s\n", seed_text,
                  out.worst_excess, out.fidelity_ok ? "ok" : "FAIL");
    return out;
}

static ldpb_ctxstat *mechanism(uint32_t divisor)
{
    ldpb_ctxstat_opts o;
    ldpb_ctxstat_opts_init(&o, 2, 1.0, 0.1);
    o.feature_norm = 1.0;
    o.reward_bound = 0x1p-6;
    ldpb_ctxstat *m = NULL;
    assert_int_equal(ctxstat_new_underscaled(&m, &o, divisor), LDPB_OK);
    return m;
}

/* T is a fixed function of the report, so each {T > c} is a fixed set of outputs whatever T's
 * lattice (steps of g B / ||m - m'||) makes of ties: the privacy check needs nothing more. The
 * fidelity check compares with normal tails; the lattice moves a tail probability by about one
 * atom, below 1e-7, against interval half-widths near 1e-2. */
static void production_passes(void **state)
{
    (void)state;
    ldpb_ctxstat *m = mechanism(1);
    verdict v = audit_pair(m, ldpb_ctxstat_sigma(m), "ctxstat-audit");
    if (!v.privacy_ok || !v.fidelity_ok)
        fail_msg("production: privacy %d fidelity %d worst excess %g", v.privacy_ok, v.fidelity_ok,
                 v.worst_excess);
    ldpb_ctxstat_free(m);
}

/* The negative controls claim the production sigma and epsilon but draw less noise. */
static void under_noised_fails(void **state)
{
    (void)state;
    ldpb_ctxstat *good = mechanism(1);
    const double claim = ldpb_ctxstat_sigma(good);
    ldpb_ctxstat *third = mechanism(3);
    assert_true(fabs(ldpb_ctxstat_sigma(third) * 3.0 / claim - 1.0) < 1e-6);
    verdict v = audit_pair(third, claim, "ctxstat-audit-third");
    if (v.privacy_ok)
        fail_msg("sigma / 3 passed the privacy check (worst excess %g)", v.worst_excess);
    assert_false(v.fidelity_ok);

    ldpb_ctxstat *half = mechanism(2);
    /* sigma / 2 is still (1, 0.1)-DP for this pair (exact delta(1) = 0.08), so only the
     * fidelity check may object, and it must */
    v = audit_pair(half, claim, "ctxstat-audit-half");
    assert_true(v.privacy_ok);
    assert_false(v.fidelity_ok);
    ldpb_ctxstat_free(half);
    ldpb_ctxstat_free(third);
    ldpb_ctxstat_free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(production_passes),
        cmocka_unit_test(under_noised_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
