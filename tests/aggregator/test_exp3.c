/* The EXP3 family (aggregator/policies/exp3_family.c) and the adversarial games of the simulator
 * (aggregator/sim/src/adversary.c and sim.c's adversarial loop): numerical stability of EXP3's
 * distribution over 10^7 rounds of extreme gains, DP-EXP3-Lap without noise reducing to EXP3
 * draw for draw, EXP3-tau's switch bound and block feedback, save/restore identity mid-run,
 * parameter refusals, the propensity op, the adversaries' gain tables (fixed before the game,
 * independent of the learner, the same for every algorithm and thread count), and the scaled
 * claim A7 of Tossou & Dimitrakakis 2017 Sec. 4.
 *
 * Run without arguments for the quick group; with "--stats" for the statistical group (CTest
 * runs both; the second is labelled `stats`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adversary.h"
#include "env.h"
#include "exp3_family.h"
#include "policy.h"
#include "sim.h"

static const char *const exp3_names[] = {"exp3", "dp-exp3-lap", "ldp-exp3-lap", "exp3-tau"};
#define N_EXP3 4

static agg_policy *make(const char *name, uint32_t k, uint64_t T, double gamma, uint64_t tau,
                        double threshold)
{
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = k;
    c.horizon = T;
    c.gamma = gamma;
    c.tau = tau;
    c.threshold = threshold;
    if (strcmp(name, "ldp-exp3-lap") == 0)
        c.mechanism = LDPB_MECH_LAPLACE;
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_policy_new(&p, name, &c, msg);
    if (err) {
        print_error("%s: %s\n", name, msg);
        fail();
    }
    return p;
}

static void check_probs(const agg_policy *p, uint32_t k, double gamma)
{
    double probs[32], sum = 0.0;
    assert_true(k <= 32);
    assert_int_equal(agg_exp3_probs(p, probs, k), LDPB_OK);
    for (uint32_t i = 0; i < k; i++) {
        assert_true(isfinite(probs[i]));
        assert_true(probs[i] >= gamma / k * (1 - 1e-12));
        assert_true(probs[i] <= 1.0);
        sum += probs[i];
    }
    assert_true(fabs(sum - 1.0) < 1e-12);
}

/* 10^7 rounds with every gain 0, every gain 1, and one arm 1 the others 0: the distribution stays
 * finite and sums to 1 throughout (the log-weights of the played arms grow by up to 1 a round,
 * far past exp's range), and with one paying arm it concentrates on it. */
static void probs_stable_extreme_gains(void **state)
{
    (void)state;
    const uint64_t T = 10000000;
    const uint32_t k = 4;
    for (int mode = 0; mode < 3; mode++) {
        agg_policy *p = make("exp3", k, T, 0, 0, 0);
        double gamma;
        agg_exp3_params(p, &gamma, NULL, NULL, NULL, NULL);
        agg_rand r;
        agg_rand_seed_u64(&r, 11 + (uint64_t)mode);
        agg_policy_env env = {&r, NULL};
        for (uint64_t t = 0; t < T; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
            double g = mode == 0 ? 0.0 : mode == 1 ? 1.0 : a == 2 ? 1.0 : 0.0;
            assert_int_equal(agg_policy_observe(p, &env, a, g), LDPB_OK);
            if (t % 1000003 == 0)
                check_probs(p, k, gamma);
        }
        check_probs(p, k, gamma);
        double probs[4];
        agg_exp3_probs(p, probs, k);
        if (mode == 2)
            assert_true(fabs(probs[2] - (1 - gamma + gamma / k)) < 1e-9);
        else
            assert_true(probs[0] > 0.0 && probs[3] > 0.0);
        agg_policy_free(p);
    }
}

/* ldp-exp3-lap observes reports without adding noise; fed the exact gains with a threshold so
 * small that the rescaling (g + b)/(1 + 2b) returns g (or 2^-60 for g = 0), it makes EXP3's
 * choices draw for draw from the same decision stream: DP-EXP3-Lap is EXP3 plus the noise. */
static void dp_without_noise_is_exp3(void **state)
{
    (void)state;
    const uint64_t T = 200000;
    const uint32_t k = 5;
    agg_policy *e = make("exp3", k, T, 0, 0, 0);
    agg_policy *d = make("ldp-exp3-lap", k, T, 0, 0, 0x1p-60);
    agg_rand r1, r2;
    agg_rand_seed_u64(&r1, 5);
    r2 = r1;
    agg_policy_env env1 = {&r1, NULL}, env2 = {&r2, NULL};
    for (uint64_t t = 1; t <= T; t++) {
        uint32_t a1, a2;
        assert_int_equal(agg_policy_choose(e, &env1, &a1), LDPB_OK);
        assert_int_equal(agg_policy_choose(d, &env2, &a2), LDPB_OK);
        assert_int_equal(a1, a2);
        /* an oblivious sequence: arm t mod k pays more in alternating phases */
        double g = ((t / 1000) % k == a1) ? 1.0 : (a1 == 1 ? 0.38 : 0.0);
        assert_int_equal(agg_policy_observe(e, &env1, a1, g), LDPB_OK);
        assert_int_equal(agg_policy_observe(d, &env2, a2, g), LDPB_OK);
    }
    double p1[5], p2[5];
    agg_exp3_probs(e, p1, k);
    agg_exp3_probs(d, p2, k);
    for (uint32_t i = 0; i < k; i++)
        assert_true(fabs(p1[i] - p2[i]) < 1e-12);
    agg_policy_free(e);
    agg_policy_free(d);
}

/* Central DP-EXP3-Lap: a rejected observation (outside [-b, 1 + b]) leaves the state alone and
 * does not count as an EXP3 update; accepted ones do. */
static void dp_rejections_do_not_advance(void **state)
{
    (void)state;
    agg_policy *p = make("dp-exp3-lap", 3, 1000, 0, 0, 0.05);
    agg_rand r, nr;
    agg_rand_seed_u64(&r, 1);
    agg_rand_seed_u64(&nr, 2);
    agg_noise *noise = NULL;
    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nr), LDPB_OK);
    agg_policy_env env = {&r, noise};
    uint64_t n = 0, updates = 0, rejected = 0, prev_updates = 0;
    uint8_t before[512], after[512];
    size_t lb, la;
    int saw_reject = 0;
    for (; n < 1000; n++) {
        uint32_t a;
        assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
        assert_int_equal(agg_policy_save(p, before, sizeof before, &lb), LDPB_OK);
        uint64_t prev_rej = rejected;
        assert_int_equal(agg_policy_observe(p, &env, a, 0.5), LDPB_OK);
        agg_exp3_params(p, NULL, NULL, NULL, &updates, &rejected);
        if (rejected > prev_rej) {
            saw_reject = 1;
            assert_int_equal(updates, prev_updates);
            /* only the arm's observation count and the rejection counter moved */
            double pb[3], pa[3];
            agg_policy *q = make("dp-exp3-lap", 3, 1000, 0, 0, 0.05);
            assert_int_equal(agg_policy_restore(q, before, lb), LDPB_OK);
            agg_exp3_probs(q, pb, 3);
            agg_exp3_probs(p, pa, 3);
            assert_memory_equal(pb, pa, sizeof pa);
            agg_policy_free(q);
        } else {
            assert_int_equal(updates, prev_updates + 1);
        }
        prev_updates = updates;
    }
    assert_int_equal(agg_policy_save(p, after, sizeof after, &la), LDPB_OK);
    assert_true(saw_reject);
    assert_int_equal(updates + rejected, n);
    /* Laplace(1/eps = 1) beyond +-0.55 around 0.5: rejected with probability e^-0.55 = 0.58 */
    assert_true(rejected > 450 && rejected < 700);
    /* and with no noise source the central policy refuses rather than observe unnoised */
    agg_policy_env bare = {&r, NULL};
    uint32_t a;
    assert_int_equal(agg_policy_choose(p, &bare, &a), LDPB_OK);
    assert_int_equal(agg_policy_observe(p, &bare, a, 0.5), LDPB_EINVAL);
    agg_noise_free(noise);
    agg_policy_free(p);
}

/* EXP3-tau plays blocks: at most ceil(T/tau) - 1 switches, for the default tau = ceil(T^(1/3))
 * and for given ones, and EXP3 inside sees one update per block, with the block's average. */
static void exp3_tau_blocks(void **state)
{
    (void)state;
    assert_int_equal(agg_exp3_icbrt_ceil(262144), 64);
    assert_int_equal(agg_exp3_icbrt_ceil(262145), 65);
    assert_int_equal(agg_exp3_icbrt_ceil(100000), 47);
    assert_int_equal(agg_exp3_icbrt_ceil(1), 1);
    const uint64_t taus[] = {0, 1, 7, 1000};
    for (size_t x = 0; x < 4; x++) {
        const uint64_t T = 100003;
        agg_policy *p = make("exp3-tau", 4, T, 0, taus[x], 0);
        uint64_t tau;
        agg_exp3_params(p, NULL, NULL, &tau, NULL, NULL);
        assert_int_equal(tau, taus[x] ? taus[x] : 47);
        agg_rand r;
        agg_rand_seed_u64(&r, 3 + x);
        agg_policy_env env = {&r, NULL};
        uint32_t prev = UINT32_MAX;
        uint64_t switches = 0;
        for (uint64_t t = 0; t < T; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
            if (prev != UINT32_MAX && a != prev) {
                switches++;
                assert_int_equal(t % tau, 0); /* only at a block start */
            }
            prev = a;
            assert_int_equal(agg_policy_observe(p, &env, a, a == 1 ? 0.9 : 0.1), LDPB_OK);
        }
        uint64_t blocks = (T + tau - 1) / tau, updates;
        agg_exp3_params(p, NULL, NULL, NULL, &updates, NULL);
        assert_true(switches <= blocks - 1);
        assert_int_equal(updates, blocks); /* the short last block is fed too */
        agg_policy_free(p);
    }
    /* One block of 5 with gains 0.2, 0.4, 0.6, 0.8, 1.0 moves EXP3 as one update with 0.6. */
    agg_policy *p = make("exp3-tau", 3, 50, 0.3, 5, 0);
    agg_policy *q = make("exp3", 3, 50, 0.3, 0, 0);
    agg_rand r1, r2;
    agg_rand_seed_u64(&r1, 9);
    r2 = r1;
    agg_policy_env e1 = {&r1, NULL}, e2 = {&r2, NULL};
    uint32_t a, b;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(agg_policy_choose(p, &e1, &a), LDPB_OK);
        assert_int_equal(agg_policy_observe(p, &e1, a, 0.2 * (i + 1)), LDPB_OK);
    }
    assert_int_equal(agg_policy_choose(q, &e2, &b), LDPB_OK);
    assert_int_equal(a, b);
    assert_int_equal(agg_policy_observe(q, &e2, b, (0.2 + 0.4 + 0.6 + 0.8 + 1.0) / 5), LDPB_OK);
    double pp[3], pq[3];
    agg_exp3_probs(p, pp, 3);
    agg_exp3_probs(q, pq, 3);
    for (int i = 0; i < 3; i++)
        assert_true(fabs(pp[i] - pq[i]) < 1e-15);
    agg_policy_free(p);
    agg_policy_free(q);
}

/* Save mid-run (mid-block for exp3-tau, past several reference shifts), restore into a fresh
 * policy: the bytes re-save identically and both continue identically. Corrupt or foreign bytes
 * are refused and change nothing. */
static void save_restore_identity(void **state)
{
    (void)state;
    for (int x = 0; x < N_EXP3; x++) {
        const char *name = exp3_names[x];
        const uint32_t k = 6;
        const uint64_t T = 100000;
        agg_policy *p = make(name, k, T, 0, 7, 0);
        {
            /* a fresh state (no choice yet) round-trips too */
            uint8_t fresh[512], again[512];
            size_t n1, n2;
            agg_policy *f = make(name, k, T, 0, 7, 0);
            assert_int_equal(agg_policy_save(p, fresh, sizeof fresh, &n1), LDPB_OK);
            assert_int_equal(agg_policy_restore(f, fresh, n1), LDPB_OK);
            assert_int_equal(agg_policy_save(f, again, sizeof again, &n2), LDPB_OK);
            assert_int_equal(n1, n2);
            assert_memory_equal(fresh, again, n1);
            agg_policy_free(f);
        }
        agg_rand r, nr;
        agg_rand_seed_u64(&r, 21);
        agg_rand_seed_u64(&nr, 22);
        agg_noise *noise = NULL;
        assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nr), LDPB_OK);
        agg_policy_env env = {&r, noise};
        agg_rand g;
        agg_rand_seed_u64(&g, 23);
        for (int t = 0; t < 20003; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
            double y = a == 0 ? 1.0 : agg_rand_uniform(&g) < 0.3;
            if (x == 2)
                y += agg_rand_laplace(&g, 0.5);
            assert_int_equal(agg_policy_observe(p, &env, a, y), LDPB_OK);
        }
        size_t len = 0;
        assert_int_equal(agg_policy_save(p, NULL, 0, &len), LDPB_ERANGE);
        uint8_t *buf = malloc(len), *buf2 = malloc(len);
        assert_non_null(buf);
        assert_non_null(buf2);
        assert_int_equal(agg_policy_save(p, buf, len, &len), LDPB_OK);
        agg_policy *q = make(name, k, T, 0, 7, 0);
        /* refusals first: truncated, a flipped log-weight sign, another threshold/tau */
        assert_int_equal(agg_policy_restore(q, buf, len - 1), LDPB_ECORRUPT);
        memcpy(buf2, buf, len);
        buf2[len - 9] ^= 0x80; /* the last arm's s: sign bit */
        assert_int_equal(agg_policy_restore(q, buf2, len), LDPB_ECORRUPT);
        agg_policy *other = make(name, k, T, 0, 8, 0.5);
        /* tau and the threshold tie the state only to a policy that reads them */
        unsigned ties =
            agg_policy_reads(other->ops, &other->cfg) & (AGG_PARAM_TAU | AGG_PARAM_THRESHOLD);
        assert_int_equal(agg_policy_restore(other, buf, len), ties ? LDPB_ECORRUPT : LDPB_OK);
        agg_policy_free(other);
        assert_int_equal(agg_policy_restore(q, buf, len), LDPB_OK);
        size_t len2 = 0;
        assert_int_equal(agg_policy_save(q, buf2, len, &len2), LDPB_OK);
        assert_int_equal(len2, len);
        assert_memory_equal(buf, buf2, len);
        double pp, pq;
        assert_int_equal(agg_policy_propensity(p, &pp), LDPB_OK);
        assert_int_equal(agg_policy_propensity(q, &pq), LDPB_OK);
        assert_true(pp == pq);
        agg_rand r2 = r, nr2 = nr;
        agg_noise *noise2 = NULL;
        assert_int_equal(agg_noise_new(&noise2, AGG_NOISE_FAST, NULL, &nr2), LDPB_OK);
        agg_policy_env env2 = {&r2, noise2};
        for (int t = 0; t < 5000; t++) {
            uint32_t a, b;
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
            assert_int_equal(agg_policy_choose(q, &env2, &b), LDPB_OK);
            assert_int_equal(a, b);
            double y = (t % 3 == 0) ? 1.0 : 0.25;
            assert_int_equal(agg_policy_observe(p, &env, a, y), LDPB_OK);
            assert_int_equal(agg_policy_observe(q, &env2, b, y), LDPB_OK);
        }
        assert_int_equal(agg_policy_save(p, buf, len, &len), LDPB_OK);
        assert_int_equal(agg_policy_save(q, buf2, len, &len2), LDPB_OK);
        assert_memory_equal(buf, buf2, len);
        free(buf);
        free(buf2);
        agg_noise_free(noise);
        agg_noise_free(noise2);
        agg_policy_free(p);
        agg_policy_free(q);
    }
}

/* Restore takes untrusted bytes: random byte changes of a saved state are either refused with
 * LDPB_ECORRUPT (leaving the policy as it was) or give a state whose distribution is finite and
 * sums to 1 and which keeps playing. */
static void restore_rejects_garbage(void **state)
{
    (void)state;
    for (int x = 0; x < N_EXP3; x++) {
        const char *name = exp3_names[x];
        agg_policy *p = make(name, 3, 5000, 0, 4, 0);
        agg_rand r, nr, m;
        agg_rand_seed_u64(&r, 31);
        agg_rand_seed_u64(&nr, 32);
        agg_rand_seed_u64(&m, 33);
        agg_noise *noise = NULL;
        assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nr), LDPB_OK);
        agg_policy_env env = {&r, noise};
        for (int t = 0; t < 1001; t++) {
            uint32_t a;
            assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
            assert_int_equal(agg_policy_observe(p, &env, a, a == 2 ? 1.0 : 0.0), LDPB_OK);
        }
        uint8_t good[512], bad[512], now[512];
        size_t len, nlen;
        assert_int_equal(agg_policy_save(p, good, sizeof good, &len), LDPB_OK);
        agg_policy *q = make(name, 3, 5000, 0, 4, 0);
        int accepted = 0;
        for (int i = 0; i < 20000; i++) {
            memcpy(bad, good, len);
            int flips = 1 + (int)agg_rand_below(&m, 3);
            for (int f = 0; f < flips; f++)
                bad[agg_rand_below(&m, len)] ^= (uint8_t)(1u << agg_rand_below(&m, 8));
            assert_int_equal(agg_policy_restore(q, good, len), LDPB_OK);
            ldpb_err err = agg_policy_restore(q, bad, len);
            if (err != LDPB_OK) {
                assert_int_equal(err, LDPB_ECORRUPT);
                assert_int_equal(agg_policy_save(q, now, sizeof now, &nlen), LDPB_OK);
                assert_memory_equal(now, good, len); /* unchanged */
                continue;
            }
            accepted++;
            check_probs(q, 3, 0.0);
            uint32_t a;
            assert_int_equal(agg_policy_choose(q, &env, &a), LDPB_OK);
            assert_int_equal(agg_policy_observe(q, &env, a, 1.0), LDPB_OK);
            check_probs(q, 3, 0.0);
        }
        assert_true(accepted > 0); /* counters and low mantissa bits are free to change */
        agg_noise_free(noise);
        agg_policy_free(p);
        agg_policy_free(q);
    }
}

static void refused(const char *name, const agg_policy_config *c, ldpb_err want, const char *needle)
{
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_policy_new(&p, name, c, msg);
    if (err != want || !strstr(msg, name) || !strstr(msg, needle)) {
        print_error("%s: got %s '%s', want %s with '%s'\n", name, ldpb_errname(err), msg,
                    ldpb_errname(want), needle);
        fail();
    }
    assert_null(p);
}

static void invalid_parameters(void **state)
{
    (void)state;
    for (int x = 0; x < N_EXP3; x++) {
        const char *name = exp3_names[x];
        agg_policy_config c;
        agg_policy_config_init(&c);
        c.k = 4;
        c.horizon = 1000;
        if (x == 2)
            c.mechanism = LDPB_MECH_LAPLACE;
        agg_policy_config b = c;
        b.k = 1;
        refused(name, &b, LDPB_ERANGE, "k 1 outside [2,");
        b = c;
        b.gamma = 1.5;
        refused(name, &b, LDPB_ERANGE, "gamma 1.5 outside (0, 1]");
        b.gamma = -0.1;
        refused(name, &b, LDPB_ERANGE, "gamma -0.1");
        b.gamma = NAN;
        refused(name, &b, LDPB_EINVAL, "gamma is NaN");
        b = c;
        b.horizon = 0;
        refused(name, &b, LDPB_EINVAL, "needs the horizon T");
        if (x == 1 || x == 2) {
            b = c;
            b.epsilon = 0.0;
            refused(name, &b, LDPB_ERANGE, "epsilon 0 outside");
            b = c;
            b.threshold = -2.0;
            refused(name, &b, LDPB_ERANGE, "threshold -2 outside (0, inf)");
            b = c;
            b.horizon = 0;
            b.gamma = 0.1;
            b.threshold = AGG_EXP3_THRESHOLD_BOUND_MIN;
            refused(name, &b, LDPB_EINVAL, "needs the horizon T for its default threshold");
            b = c;
            b.threshold = NAN;
            refused(name, &b, LDPB_EINVAL, "threshold is NaN");
            b.threshold = INFINITY;
            refused(name, &b, LDPB_ERANGE, "threshold inf");
            b = c;
            b.horizon = 0;
            b.gamma = 0.1;
            refused(name, &b, LDPB_EINVAL, "default threshold");
        }
        if (x == 2) {
            b = c;
            b.mechanism = LDPB_MECH_LINEAR;
            refused(name, &b, LDPB_EINVAL, "mechanism linear is not laplace");
        }
        if (x == 3) {
            b = c;
            b.tau = 1001;
            refused(name, &b, LDPB_ERANGE, "tau 1001 outside [1, T = 1000]");
            b = c;
            b.horizon = 0;
            b.gamma = 0.1;
            refused(name, &b, LDPB_EINVAL, "default tau");
        }
        /* with every default given explicitly, no horizon is needed */
        b = c;
        b.horizon = 0;
        b.gamma = 0.1;
        b.tau = 10;
        b.threshold = 3.0;
        agg_policy *p = NULL;
        assert_int_equal(agg_policy_new(&p, name, &b, NULL), LDPB_OK);
        agg_policy_free(p);
    }
}

/* The propensity is the probability the distribution gave the chosen arm just before the draw;
 * unknown before any choice and for policies without the op. */
static void propensity_is_exact(void **state)
{
    (void)state;
    agg_policy *p = make("exp3", 4, 10000, 0, 0, 0);
    agg_rand r;
    agg_rand_seed_u64(&r, 4);
    agg_policy_env env = {&r, NULL};
    double pr;
    assert_int_equal(agg_policy_propensity(p, &pr), LDPB_ESTATE);
    for (int t = 0; t < 3000; t++) {
        double probs[4];
        agg_exp3_probs(p, probs, 4);
        uint32_t a;
        assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
        assert_int_equal(agg_policy_propensity(p, &pr), LDPB_OK);
        assert_true(pr == probs[a]);
        assert_int_equal(agg_policy_observe(p, &env, a, a == 3 ? 1.0 : 0.0), LDPB_OK);
    }
    agg_policy_free(p);
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = 3;
    assert_int_equal(agg_policy_new(&p, "ucb1", &c, NULL), LDPB_OK);
    assert_int_equal(agg_policy_propensity(p, &pr), LDPB_ESTATE);
    agg_policy_free(p);
}

/* ---- adversaries ------------------------------------------------------------------------ */

static agg_adv *adv_new(agg_adv_kind kind, uint32_t k, uint64_t T)
{
    agg_adv_params ap;
    agg_adv_params_init(&ap, kind, k, T);
    agg_adv *a = NULL;
    assert_int_equal(agg_adv_new(&a, &ap, NULL), LDPB_OK);
    return a;
}

/* Each adversary's gains as documented (adversary.h), with the paper's recalled constants. */
static void adversary_gains(void **state)
{
    (void)state;
    agg_rand r;
    agg_rand_seed_u64(&r, 77);
    double g[5];
    agg_adv_game *game = NULL;
    /* deterministic */
    agg_adv *a = adv_new(AGG_ADV_DETERMINISTIC, 5, 1000);
    assert_int_equal(agg_adv_game_new(&game, a, &r), LDPB_OK);
    for (uint64_t t = 1; t <= 12; t++) {
        agg_adv_game_next(game, g);
        assert_true(g[0] == 0.38);
        assert_true(g[1] == (t % 2 == 0 ? 1.0 : 0.0));
        assert_true(g[2] == (t % 3 == 0 ? 1.0 : 0.0));
        assert_true(g[3] == 0.0 && g[4] == 0.0);
    }
    agg_adv_game_free(game);
    agg_adv_free(a);
    /* oblivious: constant between multiples of 200; its fresh draws have the fully oblivious
     * means 0.55 (arm 1) and 0.5 */
    a = adv_new(AGG_ADV_OBLIVIOUS, 2, 1000000);
    assert_int_equal(agg_adv_game_new(&game, a, &r), LDPB_OK);
    double prev[2] = {0, 0}, s0 = 0, s1 = 0;
    for (uint64_t t = 1; t <= 1000000; t++) {
        agg_adv_game_next(game, g);
        if (t % 200 != 0 && t > 1)
            assert_true(g[0] == prev[0] && g[1] == prev[1]);
        if (t % 200 == 0) {
            s0 += g[0];
            s1 += g[1];
        }
        prev[0] = g[0];
        prev[1] = g[1];
    }
    /* 5000 fresh draws each: sd 0.0071; 5 sd bounds, false failure < 1e-6 */
    assert_true(fabs(s0 / 5000 - 0.55) < 0.036 && fabs(s1 / 5000 - 0.5) < 0.036);
    agg_adv_game_free(game);
    agg_adv_free(a);
    /* switching: W follows W_t = W_rho(t) + xi_t, recomputed here from the same draws */
    const uint64_t T = 4096;
    a = adv_new(AGG_ADV_SWITCHING, 3, T);
    const agg_adv_params *ap = agg_adv_get_params(a);
    assert_true(fabs(ap->sw_sigma - 1.0 / (9 * 12)) < 1e-15);
    assert_true(fabs(ap->sw_eps - cbrt(3.0 / 4096) / (9 * 12)) < 1e-15);
    assert_int_equal(agg_adv_game_new(&game, a, &r), LDPB_OK);
    agg_rand mirror = r;
    uint32_t chi = (uint32_t)agg_rand_below(&mirror, 3);
    double *W = calloc(T + 1, sizeof *W);
    assert_non_null(W);
    for (uint64_t t = 1; t <= T; t++) {
        uint64_t rho = t - (t & (~t + 1));
        W[t] = W[rho] + ap->sw_sigma * agg_rand_normal(&mirror);
        agg_adv_game_next(game, g);
        for (uint32_t i = 0; i < 3; i++) {
            double loss = W[t] + 0.5 - (i == chi ? ap->sw_eps : 0.0);
            loss = loss < 0 ? 0 : loss > 1 ? 1 : loss;
            assert_true(g[i] == 1.0 - loss);
        }
    }
    free(W);
    agg_adv_game_free(game);
    agg_adv_free(a);
    /* refusals name the field and its bound */
    agg_adv_params bad;
    char msg[AGG_ERRMSG_MAX];
    agg_adv_params_init(&bad, AGG_ADV_STOCHASTIC, 4, 100);
    bad.stoch_first = 1.5;
    assert_int_equal(agg_adv_new(&a, &bad, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "adversary stochastic: stoch_first 1.5 outside [0, 1]"));
    agg_adv_params_init(&bad, AGG_ADV_OBLIVIOUS, 4, 100);
    bad.obl_period = 0;
    assert_int_equal(agg_adv_new(&a, &bad, msg), LDPB_ERANGE);
    assert_non_null(strstr(msg, "obl_period"));
    agg_adv_params_init(&bad, AGG_ADV_FULLY_OBLIVIOUS, 1, 100);
    assert_int_equal(agg_adv_new(&a, &bad, msg), LDPB_ERANGE);
}

static void seed_rand(agg_rand *r, const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t id)
{
    ldpb_rng *src = NULL;
    assert_int_equal(ldpb_rng_new_seeded_stream(&src, seed, id), LDPB_OK);
    agg_rand_seed(r, src);
    ldpb_rng_free(src);
}

/* A hand-written game loop from sim.h's contract: the gains come from the adversary stream and
 * nothing else, so every algorithm of a trial faces one gain table. The engine must agree bit for
 * bit, for each algorithm, and a batch must give the same bytes on 1 and 3 threads. */
static void adversarial_games_as_documented(void **state)
{
    (void)state;
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, "exp3 games");
    const uint64_t T = 3000, cp[] = {1, 10, 999, 3000};
    const uint32_t k = 4;
    for (int kind = AGG_ADV_DETERMINISTIC; kind <= AGG_ADV_SWITCHING; kind++) {
        agg_adv *adv = adv_new((agg_adv_kind)kind, k, T);
        for (int x = 0; x < N_EXP3; x++) {
            const char *name = exp3_names[x];
            agg_sim_config c;
            agg_sim_config_init(&c);
            c.algorithm = name;
            c.adv = adv;
            c.params.horizon = T;
            c.checkpoints = cp;
            c.n_checkpoints = 4;
            c.params.epsilon = 2.0;
            if (x == 2)
                c.params.mechanism = LDPB_MECH_LAPLACE;
            for (uint64_t i = 0; i < 2; i++) {
                double got[4];
                char msg[AGG_ERRMSG_MAX];
                if (agg_sim_run_trial(&c, seed, i, got, NULL, msg) != LDPB_OK) {
                    print_error("%s: %s\n", name, msg);
                    fail();
                }
                /* reproduction */
                agg_policy_config pc;
                agg_policy_config_init(&pc);
                pc.k = k;
                pc.horizon = T;
                if (x == 1 || x == 2)
                    pc.epsilon = 2.0;
                if (x == 2)
                    pc.mechanism = LDPB_MECH_LAPLACE;
                agg_policy *p = NULL;
                assert_int_equal(agg_policy_new(&p, name, &pc, NULL), LDPB_OK);
                agg_rand ar, pr, nr;
                seed_rand(&ar, seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_ENV, 0));
                seed_rand(&pr, seed, AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_POLICY, 0));
                ldpb_rng *client = NULL, *noise_rng = NULL;
                ldpb_mech *mech = NULL;
                agg_noise *noise = NULL;
                if (x == 1) {
                    assert_int_equal(
                        ldpb_rng_new_seeded_stream(&noise_rng, seed,
                                                   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_NOISE, 0)),
                        LDPB_OK);
                    agg_rand_seed(&nr, noise_rng);
                    assert_int_equal(agg_noise_new(&noise, AGG_NOISE_FAST, NULL, &nr), LDPB_OK);
                }
                if (x == 2) {
                    assert_int_equal(
                        ldpb_rng_new_seeded_stream(&client, seed,
                                                   AGG_SIM_STREAM(i, AGG_SIM_PURPOSE_CLIENT, 0)),
                        LDPB_OK);
                    assert_int_equal(agg_policy_mech_new(&pc, name, &mech, NULL), LDPB_OK);
                }
                agg_adv_game *game = NULL;
                assert_int_equal(agg_adv_game_new(&game, adv, &ar), LDPB_OK);
                agg_policy_env env = {&pr, noise};
                double cum[4] = {0}, gains[4], mine = 0.0, want[4];
                uint32_t prev = UINT32_MAX;
                size_t j = 0;
                for (uint64_t t = 1; t <= T; t++) {
                    agg_adv_game_next(game, gains);
                    for (uint32_t a = 0; a < k; a++)
                        cum[a] += gains[a];
                    uint32_t a;
                    assert_int_equal(agg_policy_choose(p, &env, &a), LDPB_OK);
                    double y = kind == AGG_ADV_SWITCHING && prev != UINT32_MAX && a != prev
                                   ? 0.0
                                   : gains[a];
                    prev = a;
                    mine += y;
                    if (mech)
                        assert_int_equal(ldpb_mech_privatize(mech, client, y, &y), LDPB_OK);
                    assert_int_equal(agg_policy_observe(p, &env, a, y), LDPB_OK);
                    if (t == cp[j]) {
                        double best = cum[0];
                        for (uint32_t b = 1; b < k; b++)
                            best = cum[b] > best ? cum[b] : best;
                        want[j++] = best - mine;
                    }
                }
                assert_memory_equal(got, want, sizeof want);
                agg_adv_game_free(game);
                agg_policy_free(p);
                agg_noise_free(noise);
                ldpb_rng_free(noise_rng);
                ldpb_rng_free(client);
                ldpb_mech_free(mech);
            }
        }
        /* exactly one of environment and adversary */
        agg_env *env = NULL;
        assert_int_equal(agg_env_parse(&env, "bernoulli:0.5*4", NULL), LDPB_OK);
        agg_sim_config both;
        agg_sim_config_init(&both);
        both.algorithm = "exp3";
        both.adv = adv;
        both.env = env;
        both.params.horizon = T;
        both.checkpoints = cp;
        both.n_checkpoints = 4;
        char bmsg[AGG_ERRMSG_MAX];
        assert_int_equal(agg_sim_check(&both, bmsg), LDPB_EINVAL);
        assert_non_null(strstr(bmsg, "both an environment and an adversary"));
        agg_env_free(env);
        /* thread invariance of a batch over all four */
        agg_sim_config cs[N_EXP3];
        double *out1[N_EXP3], *out3[N_EXP3];
        for (int x = 0; x < N_EXP3; x++) {
            agg_sim_config_init(&cs[x]);
            cs[x].algorithm = exp3_names[x];
            cs[x].adv = adv;
            cs[x].params.horizon = T;
            cs[x].checkpoints = cp;
            cs[x].n_checkpoints = 4;
            cs[x].params.epsilon = 2.0;
            cs[x].params.mechanism = x == 2 ? LDPB_MECH_LAPLACE : (ldpb_mech_kind)0;
            out1[x] = calloc(5 * 4, sizeof(double));
            out3[x] = calloc(5 * 4, sizeof(double));
        }
        assert_int_equal(agg_sim_run_batch(cs, N_EXP3, 5, seed, 1, out1, NULL, NULL, NULL),
                         LDPB_OK);
        assert_int_equal(agg_sim_run_batch(cs, N_EXP3, 5, seed, 3, out3, NULL, NULL, NULL),
                         LDPB_OK);
        for (int x = 0; x < N_EXP3; x++) {
            assert_memory_equal(out1[x], out3[x], 5 * 4 * sizeof(double));
            free(out1[x]);
            free(out3[x]);
        }
        agg_adv_free(adv);
    }
}

/* ---- scaled claim A7 -------------------------------------------------------------------- */

static double mean_final(const char *alg, const agg_adv *adv, uint64_t T, double eps,
                         uint64_t trials, const char *seed_text)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, seed_text);
    uint64_t cp[1] = {T};
    agg_sim_config c;
    agg_sim_config_init(&c);
    c.algorithm = alg;
    c.adv = adv;
    c.params.horizon = T;
    c.checkpoints = cp;
    c.n_checkpoints = 1;
    c.params.epsilon = eps;
    double *out = calloc(trials, sizeof *out);
    assert_non_null(out);
    char msg[AGG_ERRMSG_MAX];
    if (agg_sim_run_batch(&c, 1, trials, seed, 2, &out, NULL, NULL, msg) != LDPB_OK) {
        print_error("%s: %s\n", alg, msg);
        fail();
    }
    double s = 0;
    for (uint64_t i = 0; i < trials; i++)
        s += out[i];
    free(out);
    return s / (double)trials;
}

/* DP-EXP3-Lap's bound-min threshold (docs/derivations.md): the closed form at T = 2^18, K = 4,
 * eps = 6 (0.91944383 by hand), a minimum of (1 + 2b) C sqrt(T K ln K) + T e^(-eps b) against
 * its neighbours, 0 where the logarithm is negative, and what the policy resolves the
 * "bound-min" value to (the old code refused the value). */
static void threshold_bound_min(void **state)
{
    (void)state;
    const uint64_t T = (uint64_t)1 << 18;
    double b = agg_exp3_threshold_bound_min(4, T, 6.0);
    assert_true(fabs(b - 0.9194438325486879) < 1e-12);
    const double c = 2.0 * sqrt(M_E - 1.0), root = sqrt((double)T * 4.0 * log(4.0));
    double at = (1 + 2 * b) * c * root + (double)T * exp(-6.0 * b);
    for (double h = 1e-3; h < 1.0; h *= 3) {
        assert_true(at < (1 + 2 * (b + h)) * c * root + (double)T * exp(-6.0 * (b + h)));
        assert_true(at < (1 + 2 * (b - h)) * c * root + (double)T * exp(-6.0 * (b - h)));
    }
    assert_true(agg_exp3_threshold_bound_min(4, 1000, 0.1) == 0.0);
    assert_true(agg_exp3_threshold_bound_min(1, 1000, 2.0) == log(1000.0) / 2.0);
    for (int x = 1; x <= 2; x++) {
        agg_policy_config cfg;
        agg_policy_config_init(&cfg);
        cfg.k = 4;
        cfg.horizon = T;
        cfg.epsilon = 6.0;
        cfg.threshold = AGG_EXP3_THRESHOLD_BOUND_MIN;
        if (x == 2)
            cfg.mechanism = LDPB_MECH_LAPLACE;
        agg_policy *p = NULL;
        char msg[AGG_ERRMSG_MAX];
        assert_int_equal(agg_policy_new(&p, exp3_names[x], &cfg, msg), LDPB_OK);
        double got;
        agg_exp3_params(p, NULL, &got, NULL, NULL, NULL);
        assert_true(got == b);
        agg_policy_free(p);
    }
}

/* TD17 Sec. 4 at T = 2^14, K = 4, 64 trials, dp-exp3-lap at exp3-tau's epsilon (5.20 at this
 * T, rounded down as the presets do: docs/sim.md): against the stochastic and oblivious
 * adversaries DP-EXP3-Lap stays within a factor 4 of EXP3 (pilot ratios over 8 other seeds at
 * epsilon 4.06, a little noisier than here:
 * stochastic 1.48-1.57, sd 0.03; oblivious 2.29-2.88, sd 0.19, so 4 is over 7 sd away: false
 * failure < 1e-11 per check, normal approximation), and against the switching-cost adversary
 * EXP3-tau's regret is below half of both others' (pilot: 234-238 against 2737-5865, a margin
 * of hundreds of sd; false failure far below 1e-12). */
static void claim_a7(void **state)
{
    (void)state;
    const uint64_t T = 16384, n = 64;
    const double eps = 5.20;
    agg_adv *st = adv_new(AGG_ADV_STOCHASTIC, 4, T), *ob = adv_new(AGG_ADV_OBLIVIOUS, 4, T),
            *sw = adv_new(AGG_ADV_SWITCHING, 4, T);
    const agg_adv *easy[2] = {st, ob};
    for (int i = 0; i < 2; i++) {
        double e = mean_final("exp3", easy[i], T, eps, n, "a7");
        double d = mean_final("dp-exp3-lap", easy[i], T, eps, n, "a7");
        print_message("A7 %s: exp3 %.1f dp-exp3-lap %.1f ratio %.2f\n",
                      i ? "oblivious" : "stochastic", e, d, d / e);
        assert_true(e > 0 && d < 4.0 * e);
    }
    double e = mean_final("exp3", sw, T, eps, n, "a7");
    double d = mean_final("dp-exp3-lap", sw, T, eps, n, "a7");
    double tau = mean_final("exp3-tau", sw, T, eps, n, "a7");
    print_message("A7 switching: exp3 %.1f dp-exp3-lap %.1f exp3-tau %.1f\n", e, d, tau);
    assert_true(tau < 0.5 * e && tau < 0.5 * d);
    agg_adv_free(st);
    agg_adv_free(ob);
    agg_adv_free(sw);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest quick[] = {
        cmocka_unit_test(probs_stable_extreme_gains),
        cmocka_unit_test(dp_without_noise_is_exp3),
        cmocka_unit_test(dp_rejections_do_not_advance),
        cmocka_unit_test(exp3_tau_blocks),
        cmocka_unit_test(save_restore_identity),
        cmocka_unit_test(restore_rejects_garbage),
        cmocka_unit_test(invalid_parameters),
        cmocka_unit_test(threshold_bound_min),
        cmocka_unit_test(propensity_is_exact),
        cmocka_unit_test(adversary_gains),
        cmocka_unit_test(adversarial_games_as_documented),
    };
    const struct CMUnitTest stats[] = {
        cmocka_unit_test(claim_a7),
    };
    if (argc > 1 && strcmp(argv[1], "--stats") == 0)
        return cmocka_run_group_tests_name("exp3_stats", stats, NULL, NULL);
    return cmocka_run_group_tests_name("exp3", quick, NULL, NULL);
}
