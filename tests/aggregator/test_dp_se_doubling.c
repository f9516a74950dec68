/* DP-SE without a horizon (aggregator/policies/dp_se.c): the doubling schedule restarts
 * Algorithm 3 of Sajed & Sheffet 2019 on phases of 2^j observations, its regret stays within a
 * small factor of DP-SE told the horizon, save/restore is the identity mid-run and across a
 * restart, and its parameters are checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_se.h"
#include "env.h"
#include "policy.h"
#include "rand.h"
#include "sim.h"

/* Decisions, privacy noise (FAST) and the world, each on its own stream. */
typedef struct world {
    agg_rand rand, noise_rand, draws;
    agg_noise *noise;
    agg_policy_env env;
} world;

static world *world_new(uint64_t seed)
{
    world *w = calloc(1, sizeof *w);
    assert_non_null(w);
    agg_rand_seed_u64(&w->rand, seed);
    agg_rand_seed_u64(&w->noise_rand, seed ^ 0x6e6f697365ULL);
    agg_rand_seed_u64(&w->draws, seed ^ 0x776f726c64ULL);
    assert_int_equal(agg_noise_new(&w->noise, AGG_NOISE_FAST, NULL, &w->noise_rand), LDPB_OK);
    w->env.rand = &w->rand;
    w->env.noise = w->noise;
    return w;
}

static world *world_copy(const world *src)
{
    world *w = malloc(sizeof *w);
    assert_non_null(w);
    *w = *src;
    /* The copy's noise must read its own generator, in the same state as the source's. */
    assert_int_equal(agg_noise_new(&w->noise, AGG_NOISE_FAST, NULL, &w->noise_rand), LDPB_OK);
    w->env.rand = &w->rand;
    w->env.noise = w->noise;
    return w;
}

static void world_free(world *w)
{
    agg_noise_free(w->noise);
    free(w);
}

static agg_policy *make(const char *name, uint32_t k, uint64_t horizon, double eps, double beta)
{
    agg_policy_config c;
    agg_policy_config_init(&c);
    c.k = k;
    c.horizon = horizon;
    c.epsilon = eps;
    c.beta = beta;
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err = agg_policy_new(&p, name, &c, msg);
    if (err != LDPB_OK)
        print_error("%s: %s\n", name, msg);
    assert_int_equal(err, LDPB_OK);
    return p;
}

static void step(agg_policy *p, world *w, const double *mu, uint32_t *arm_out)
{
    uint32_t a;
    assert_int_equal(agg_policy_choose(p, &w->env, &a), LDPB_OK);
    double x = agg_rand_uniform(&w->draws) < mu[a] ? 1.0 : 0.0;
    assert_int_equal(agg_policy_observe(p, &w->env, a, x), LDPB_OK);
    if (arm_out)
        *arm_out = a;
}

static size_t save(const agg_policy *p, uint8_t **out)
{
    size_t len = 0;
    assert_int_equal(agg_policy_save(p, NULL, 0, &len), LDPB_ERANGE);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(agg_policy_save(p, buf, len, &len), LDPB_OK);
    *out = buf;
    return len;
}

/* Phase j starts after 2^j - 2 observations, with every arm back in S and epoch 1. On two arms
 * 0.95 / 0.05 with eps = 1 the worse arm is eliminated inside the long phases, so the restart is
 * visible as an arm coming back. */
static void restarts_at_powers_of_two(void **state)
{
    (void)state;
    static const char *const names[] = {"dp-se", "dp-se-doubling"};
    const double mu[3] = {0.95, 0.05, 0.05};
    for (size_t n = 0; n < 2; n++) {
        /* dp-se reads horizon 0 as unknown; dp-se-doubling ignores a horizon it is given. */
        agg_policy *p = make(names[n], 3, n == 0 ? 0 : 1000, 1.0, 0);
        world *w = world_new(7);
        uint32_t phase, epoch;
        uint64_t pt, t = 0;
        int saw_elimination = 0;
        for (uint32_t j = 1; j <= 20; j++) {
            assert_int_equal(agg_dp_se_schedule(p, &phase, &pt, &epoch), LDPB_OK);
            assert_int_equal(phase, j);
            assert_int_equal(pt, 0);
            assert_int_equal(epoch, 1);
            assert_int_equal(t, ((uint64_t)1 << j) - 2);
            agg_arm_status st[3];
            assert_int_equal(agg_policy_describe(p, st, 3), LDPB_OK);
            for (uint32_t a = 0; a < 3; a++)
                assert_int_equal(st[a].active, 1);
            uint64_t len = (uint64_t)1 << j;
            for (uint64_t i = 0; i < len; i++, t++) {
                if (i > 0) {
                    assert_int_equal(agg_dp_se_schedule(p, &phase, &pt, &epoch), LDPB_OK);
                    assert_int_equal(phase, j);
                    assert_int_equal(pt, i);
                }
                step(p, w, mu, NULL);
                if (i + 1 < len) {
                    assert_int_equal(agg_policy_describe(p, st, 3), LDPB_OK);
                    saw_elimination |= !st[1].active || !st[2].active;
                }
            }
        }
        assert_true(saw_elimination);
        /* The fast-forward is refused: phase ends cut epochs. */
        uint32_t arms[3];
        uint64_t rem[3];
        uint32_t e, na;
        assert_int_equal(agg_dp_se_plan(p, &e, arms, rem, 3, &na), LDPB_ESTATE);
        assert_int_equal(agg_dp_se_observe_block(p, &w->env, 0, 1, 1), LDPB_ESTATE);
        world_free(w);
        agg_policy_free(p);
    }
    /* A known horizon, or a given beta without one, has no schedule (states saved by earlier
     * versions under either keep restoring). */
    static const struct {
        uint64_t horizon;
        double beta;
    } plain[] = {{1000, 0}, {0, 0.01}};
    for (size_t i = 0; i < 2; i++) {
        agg_policy *p = make("dp-se", 3, plain[i].horizon, 1.0, plain[i].beta);
        uint32_t phase, epoch;
        uint64_t pt;
        assert_int_equal(agg_dp_se_schedule(p, &phase, &pt, &epoch), LDPB_OK);
        assert_int_equal(phase, 0);
        assert_int_equal(pt, 0);
        agg_policy_free(p);
    }
}

/* Save at many points (including the last observation of a phase and the first of the next),
 * restore into a fresh policy, and continue both on copies of the same streams: every choice
 * and the final state must be identical. */
static void save_restore_identity_across_restarts(void **state)
{
    (void)state;
    const double mu[4] = {0.9, 0.6, 0.5, 0.1};
    static const uint64_t cuts[] = {0, 1, 2, 5, 6, 7, 29, 30, 31, 200, 1021, 1022, 1023, 5000};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        agg_policy *p = make("dp-se", 4, 0, 0.5, 0);
        world *w = world_new(11 + c);
        for (uint64_t t = 0; t < cuts[c]; t++)
            step(p, w, mu, NULL);
        uint8_t *buf;
        size_t len = save(p, &buf);
        agg_policy *q = make("dp-se", 4, 0, 0.5, 0);
        assert_int_equal(agg_policy_restore(q, buf, len), LDPB_OK);
        world *w2 = world_copy(w);
        /* Long enough to cross at least two phase ends after every cut. */
        for (uint64_t t = 0; t < 3 * cuts[c] + 64; t++) {
            uint32_t a, b;
            step(p, w, mu, &a);
            step(q, w2, mu, &b);
            assert_int_equal(a, b);
        }
        uint8_t *b1, *b2;
        size_t l1 = save(p, &b1), l2 = save(q, &b2);
        assert_int_equal(l1, l2);
        assert_memory_equal(b1, b2, l1);
        /* The state does not restore into a known-horizon dp-se nor into dp-se-doubling. */
        agg_policy *known = make("dp-se", 4, 1000, 0.5, 0);
        assert_int_equal(agg_policy_restore(known, buf, len), LDPB_ECORRUPT);
        agg_policy *other = make("dp-se-doubling", 4, 0, 0.5, 0);
        assert_int_equal(agg_policy_restore(other, buf, len), LDPB_ECORRUPT);
        agg_policy_free(known);
        agg_policy_free(other);
        free(buf);
        free(b1);
        free(b2);
        world_free(w);
        world_free(w2);
        agg_policy_free(p);
        agg_policy_free(q);
    }
}

/* The schedule fields of a saved doubling state, located from the end: phase (u32) and phase_t
 * (u64) come right before the k arm records of 41 bytes (u8 + five 8-byte fields). */
static void corrupt_schedule_refused(void **state)
{
    (void)state;
    const double mu[2] = {0.7, 0.3};
    agg_policy *p = make("dp-se", 2, 0, 1.0, 0);
    world *w = world_new(3);
    for (int t = 0; t < 9; t++) /* phase 3, 3 observations in */
        step(p, w, mu, NULL);
    uint8_t *buf;
    size_t len = save(p, &buf);
    size_t arms_bytes = 2 * (1 + 5 * 8);
    size_t off_phase = len - arms_bytes - 12, off_pt = len - arms_bytes - 8;
    uint32_t phase;
    uint64_t pt;
    memcpy(&phase, buf + off_phase, 4); /* little-endian host: the tests run on x86/arm64 */
    memcpy(&pt, buf + off_pt, 8);
    assert_int_equal(phase, 3);
    assert_int_equal(pt, 3);
    agg_policy *q = make("dp-se", 2, 0, 1.0, 0);
    static const struct {
        uint32_t phase;
        uint64_t pt;
    } bad[] = {{0, 0}, {63, 0}, {3, 8}, {1, 2}, {3, UINT64_MAX}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *b = malloc(len);
        assert_non_null(b);
        memcpy(b, buf, len);
        memcpy(b + off_phase, &bad[i].phase, 4);
        memcpy(b + off_pt, &bad[i].pt, 8);
        assert_int_equal(agg_policy_restore(q, b, len), LDPB_ECORRUPT);
        free(b);
    }
    assert_int_equal(agg_policy_restore(q, buf, len), LDPB_OK);
    assert_int_equal(agg_policy_restore(q, buf, len - 1), LDPB_ECORRUPT);
    free(buf);
    world_free(w);
    agg_policy_free(p);
    agg_policy_free(q);
}

static void parameters_checked(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        uint32_t k;
        uint64_t horizon;
        double eps, beta;
        ldpb_err want;
        const char *msg;
    } cases[] = {
        {"dp-se", 3, 0, 1, 1.5, LDPB_ERANGE, "dp-se: beta 1.5 outside (0, 1)"},
        {"dp-se", 3, 0, 1, NAN, LDPB_EINVAL, "dp-se: beta nan outside (0, 1)"},
        {"dp-se", 3, 0, 0, 0, LDPB_ERANGE, "dp-se: epsilon 0 outside"},
        {"dp-se", 1, 0, 1, 0, LDPB_ERANGE, "dp-se: k 1 outside [2,"},
        {"dp-se-doubling", 1, 0, 1, 0, LDPB_ERANGE, "dp-se-doubling: k 1 outside [2,"},
        {"dp-se-doubling", 3, 0, INFINITY, 0, LDPB_ERANGE, "dp-se-doubling: epsilon inf outside"},
        {"dp-se-doubling", 3, 0, 1, 1, LDPB_ERANGE, "dp-se-doubling: beta 1 outside (0, 1)"},
        {"dp-se-doubling", 3, 2, 1, 0, LDPB_ERANGE, "dp-se-doubling: horizon 2 < k 3"},
        {"dp-se", 3, 0, 1, 0, LDPB_OK, ""},
        {"dp-se", 3, 0, 1, 0.01, LDPB_OK, ""}, /* a fixed beta needs no horizon: no schedule */
        {"dp-se-doubling", 3, 0, 1, 0, LDPB_OK, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        agg_policy_config c;
        agg_policy_config_init(&c);
        c.k = cases[i].k;
        c.horizon = cases[i].horizon;
        c.epsilon = cases[i].eps;
        c.beta = cases[i].beta;
        agg_policy *p = NULL;
        char msg[AGG_ERRMSG_MAX];
        ldpb_err err = agg_policy_new(&p, cases[i].name, &c, msg);
        if (err != cases[i].want || strncmp(msg, cases[i].msg, strlen(cases[i].msg)) != 0)
            print_error("case %zu: got %d '%s'\n", i, (int)err, msg);
        assert_int_equal(err, cases[i].want);
        assert_true(strncmp(msg, cases[i].msg, strlen(cases[i].msg)) == 0);
        agg_policy_free(p);
    }
    /* The ops table says what each entry reads: dp-se-doubling never reads the horizon. */
    const agg_policy_ops *ops = agg_policy_find("dp-se-doubling");
    assert_non_null(ops);
    assert_int_equal(ops->params, AGG_PARAM_EPSILON | AGG_PARAM_BETA);
    assert_null(ops->plan);
}

/* Mean regret over 40 trials of dp-se-doubling vs dp-se told T, on two Bernoulli arms 0.9 / 0.6
 * at eps = 1 and T = 2^17 (same seed, so the same reward streams). Known T eliminates the worse
 * arm after about T_e = 2^12 rounds; the doubling pays about T_e Delta again in the phases too
 * short to finish and one elimination per phase longer than T_e, each with a log(2^j / beta)
 * no smaller than known T's, so the ratio is about log2(T / T_e) + 2 = 7 at most
 * (docs/derivations.md 10.1); measured 5.4. On two arms the round robin is deterministic and the
 * elimination epoch is fixed but for noise far in the tails (ldpb sim, 400 trials: sd 0 for both),
 * so [1, 8] fails only if the code changes. */
static void regret_close_to_known_horizon(void **state)
{
    (void)state;
    agg_env *env = NULL;
    assert_int_equal(agg_env_parse(&env, "bernoulli:0.9,bernoulli:0.6", NULL), LDPB_OK);
    const uint64_t T = (uint64_t)1 << 17;
    uint64_t cp[1] = {T};
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {42};
    double mean[2] = {0, 0};
    static const char *const names[] = {"dp-se", "dp-se-doubling"};
    const unsigned trials = 40;
    for (int n = 0; n < 2; n++) {
        agg_sim_config cfg;
        agg_sim_config_init(&cfg);
        cfg.algorithm = names[n];
        cfg.params.horizon = T;
        cfg.params.epsilon = 1.0;
        cfg.params.beta = n == 0 ? 1.0 / (double)T : 0;
        cfg.env = env;
        cfg.checkpoints = cp;
        cfg.n_checkpoints = 1;
        char msg[AGG_ERRMSG_MAX];
        for (unsigned i = 0; i < trials; i++) {
            double r;
            ldpb_err err = agg_sim_run_trial(&cfg, seed, i, &r, NULL, msg);
            if (err)
                print_error("%s\n", msg);
            assert_int_equal(err, LDPB_OK);
            mean[n] += r / trials;
        }
    }
    double ratio = mean[1] / mean[0];
    print_message("dp-se %.1f, dp-se-doubling %.1f, ratio %.2f\n", mean[0], mean[1], ratio);
    assert_true(ratio >= 1.0 && ratio <= 8.0);
    agg_env_free(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(restarts_at_powers_of_two),
        cmocka_unit_test(save_restore_identity_across_restarts),
        cmocka_unit_test(corrupt_schedule_refused),
        cmocka_unit_test(parameters_checked),
        cmocka_unit_test(regret_close_to_known_horizon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
