/* Tests of the `ldpb sim` library (aggregator/sim/src): Student-t statistics, the lower-bound
 * shapes of derivations.md 13, number parsing and formatting, the presets and the option rules of
 * the plan, the CSV writers and the gnuplot script. The command itself is tested end to end by
 * tests/cli/test_sim.sh. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan.h"
#include "plot.h"
#include "report.h"

static void assert_near(double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol)) {
        print_error("got %.10g, want %.10g (tolerance %g)\n", got, want, tol);
        fail();
    }
}

static void test_t_quantile(void **state)
{
    (void)state;
    assert_true(simstat_t975(0) == 0.0);
    assert_true(simstat_t975(1) == 0.0);
    assert_near(simstat_t975(2), 12.7062047362, 1e-8);
    assert_near(simstat_t975(5), 2.7764451052, 1e-8);
    assert_near(simstat_t975(30), 2.0452296421, 1e-8);
    assert_near(simstat_t975(50), 2.0095752372, 1e-8);
}

static void test_stats(void **state)
{
    (void)state;
    double x[] = {4, 1, 3, 2}, scratch[6];
    simstat s;
    simstat_compute(x, 4, 1, scratch, &s);
    assert_near(s.mean, 2.5, 1e-15);
    assert_near(s.sd, sqrt(5.0 / 3.0), 1e-12);
    double half = 3.1824463053 * sqrt(5.0 / 3.0) / 2.0;
    assert_near(s.lo, 2.5 - half, 1e-8);
    assert_near(s.hi, 2.5 + half, 1e-8);
    assert_near(s.median, 2.5, 0);
    assert_near(s.min, 1, 0);
    assert_near(s.max, 4, 0);
    assert_near(x[0], 4, 0); /* the input is not sorted in place */

    /* strided: every second value of {1, 9, 2, 9, 6, 9} is {1, 2, 6} */
    double y[] = {1, 9, 2, 9, 6, 9};
    simstat_compute(y, 3, 2, scratch, &s);
    assert_near(s.mean, 3, 1e-15);
    assert_near(s.median, 2, 0);
    assert_near(s.max, 6, 0);

    /* one trial: no spread, the interval is the mean */
    simstat_compute(y, 1, 1, NULL, &s);
    assert_true(s.lo == 1 && s.hi == 1 && s.sd == 0 && s.mean == 1);
    assert_true(isnan(s.median));

    /* equal values whose mean rounds: sd exactly 0, interval collapses */
    double z[] = {1558.1, 1558.1, 1558.1, 1558.1, 1558.1, 1558.1};
    simstat_compute(z, 6, 1, scratch, &s);
    assert_true(s.sd == 0.0 && s.lo == s.mean && s.hi == s.mean);
}

static agg_env *env_of(const char *spec)
{
    agg_env *env = NULL;
    char msg[AGG_ERRMSG_MAX];
    assert_int_equal(agg_env_parse(&env, spec, msg), LDPB_OK);
    return env;
}

static void test_reference_shapes(void **state)
{
    (void)state;
    /* docs/derivations.md 13 numbers */
    assert_near(simref_zeta(0.1), 0.01351, 5e-6);
    assert_near(simref_zeta(0.5), 1.1440, 5e-5);
    assert_near(simref_zeta(1.0), 11.81, 5e-3);
    assert_near(simref_zeta(2.0), 163.28, 5e-3);

    agg_env *b = env_of("bernoulli:0.9,bernoulli:0.8,bernoulli:0.9");
    double kl = 0.8 * log(0.8 / 0.9) + 0.2 * log(0.2 / 0.1);
    assert_near(simref_lai_robbins(b, 1), 0.1 / kl, 1e-12); /* the tied best arm counts 0 */
    assert_near(simref_lai_robbins(b, 0), 10.0, 1e-12);
    assert_near(simref_inv_gaps(b), 10.0, 1e-12);
    assert_near(simref_ldp(b, 1.0), 10.0 / simref_zeta(1.0), 1e-12);
    assert_near(simref_max_gap(b), 0.1, 1e-15);
    agg_env_free(b);

    /* mu* = 1: KL(mu_a, 1) is infinite, the arm adds nothing to the KL shape */
    agg_env *one = env_of("bernoulli:1,bernoulli:0.5");
    assert_near(simref_lai_robbins(one, 1), 0.0, 0);
    assert_near(simref_lai_robbins(one, 0), 2.0, 1e-15);
    agg_env_free(one);

    assert_near(simref_central(5, 0.25), 4.0 / 50.0, 1e-15);
    assert_near(simref_central(20, 1.0), 19.0 / 200.0, 1e-15);
}

static void test_parse_count(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t want;
    } ok[] = {{"100", 100},         {"1e5", 100000},
              {"5e7", 50000000},    {"2.5e6", 2500000},
              {"1E3", 1000},        {"1e+3", 1000},
              {"10e-1", 1},         {"0", 0},
              {"1e20", UINT64_MAX}, {"99999999999999999999999", UINT64_MAX}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 7;
        const char *why = simplan_parse_count(ok[i].text, &v);
        if (why || v != ok[i].want) {
            print_error("'%s': %s, %llu\n", ok[i].text, why ? why : "ok", (unsigned long long)v);
            fail();
        }
    }
    static const char *const bad[] = {"",    "1e5.5", "1.5",   "-1",   "+5",    "0x10",
                                      " 5",  "5 ",    "2.5e0", "e5",   "1e",    ".e3",
                                      "inf", "nan",   "1,5",   "1e5x", "1.2.3", "1e-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 7;
        if (simplan_parse_count(bad[i], &v) == NULL) {
            print_error("'%s' accepted as %llu\n", bad[i], (unsigned long long)v);
            fail();
        }
    }
}

static void test_format(void **state)
{
    (void)state;
    char b[32];
    simplan_format_double(b, sizeof b, 0.1);
    assert_string_equal(b, "0.1");
    simplan_format_double(b, sizeof b, 0.25);
    assert_string_equal(b, "0.25");
    simplan_format_double(b, sizeof b, 2.0);
    assert_string_equal(b, "2");
    simplan_format_double(b, sizeof b, INFINITY);
    assert_string_equal(b, "inf");
    simplan_format_double(b, sizeof b, 1.0 / 3.0);
    assert_true(strtod(b, NULL) == 1.0 / 3.0);
    simplan_format_double(b, sizeof b, 2e-8);
    assert_string_equal(b, "2e-08");

    simplan_format_count(b, sizeof b, 100000);
    assert_string_equal(b, "1e5");
    simplan_format_count(b, sizeof b, 50000000);
    assert_string_equal(b, "5e7");
    simplan_format_count(b, sizeof b, 2500000);
    assert_string_equal(b, "2.5e6");
    simplan_format_count(b, sizeof b, 20000);
    assert_string_equal(b, "2e4");
    simplan_format_count(b, sizeof b, 12345);
    assert_string_equal(b, "12345");
    simplan_format_count(b, sizeof b, 500);
    assert_string_equal(b, "500");
}

static void build_ok(simplan *p, const simplan_opts *o)
{
    char msg[SIMPLAN_ERRMSG_MAX];
    ldpb_err err = simplan_build(p, o, msg);
    if (err) {
        print_error("simplan_build: %s\n", msg);
        fail();
    }
}

static void test_preset_jiang(void **state)
{
    (void)state;
    simplan p;
    simplan_opts o = {.preset = "jiang2023"};
    build_ok(&p, &o);
    assert_int_equal(p.n_inst, 1);
    assert_int_equal(p.inst[0].k, 20);
    assert_false(p.inst[0].bernoulli);
    assert_string_equal(p.inst[0].label, "jiang2023");
    assert_int_equal(p.horizon, 100000);
    assert_int_equal(p.trials, 50);
    assert_int_equal(p.n_cfg, 2 * 3 * 5 + 2);
    assert_true(p.beta == 1e-5);
    /* order: algorithm, then mechanism, then epsilon as listed; baselines last */
    assert_string_equal(p.cfg[0].ops->name, "ldp-ts-b");
    assert_string_equal(simplan_mech_name(&p.cfg[0]), "linear");
    assert_string_equal(p.cfg[0].eps_text, "0.1");
    assert_string_equal(p.cfg[4].eps_text, "2");
    assert_string_equal(simplan_mech_name(&p.cfg[5]), "quadratic");
    assert_string_equal(p.cfg[15].ops->name, "ldp-ucb-b");
    assert_string_equal(p.cfg[30].ops->name, "ts");
    assert_string_equal(p.cfg[31].ops->name, "ucb1");
    assert_string_equal(p.cfg[31].eps_text, "inf");
    assert_string_equal(simplan_mech_name(&p.cfg[31]), "none");
    /* checkpoints: strictly increasing from 1 to T, about 20 per decade */
    assert_int_equal(p.checkpoints[0], 1);
    assert_int_equal(p.checkpoints[p.n_checkpoints - 1], 100000);
    for (size_t j = 1; j < p.n_checkpoints; j++)
        assert_true(p.checkpoints[j] > p.checkpoints[j - 1]);
    assert_in_range(p.n_checkpoints, 60, 101);
    assert_int_equal(p.rounds_total, 32ULL * 50 * 100000);

    agg_sim_config sc[32];
    simplan_sim_configs(&p, sc);
    assert_int_equal(sc[0].noise_kind, AGG_NOISE_FAST);
    assert_int_equal(sc[0].params.mechanism, LDPB_MECH_LINEAR);
    assert_int_equal(sc[31].params.mechanism, 0);
    assert_true(sc[0].params.kappa == 0.5);
    simplan_fini(&p);

    /* filters and overrides */
    simplan_opts f = {.preset = "jiang2023",
                      .algorithms = "ts,ldp-ucb-b",
                      .mechanisms = "exponential",
                      .epsilons = "0.5,1",
                      .horizon = "2e4",
                      .trials = "3"};
    build_ok(&p, &f);
    assert_int_equal(p.n_cfg, 3);
    assert_string_equal(p.cfg[0].ops->name, "ldp-ucb-b"); /* the preset's order, not the list's */
    assert_string_equal(simplan_mech_name(&p.cfg[0]), "exponential");
    assert_string_equal(p.cfg[1].eps_text, "1");
    assert_string_equal(p.cfg[2].ops->name, "ts");
    assert_int_equal(p.horizon, 20000);
    assert_int_equal(p.trials, 3);
    simplan_fini(&p);
}

static void test_preset_ren_sajed(void **state)
{
    (void)state;
    simplan p;
    simplan_opts o = {.preset = "ren2020"};
    build_ok(&p, &o);
    assert_int_equal(p.n_inst, 2);
    assert_string_equal(p.inst[0].label, "ren2020-mixed");
    assert_string_equal(p.inst[1].label, "ren2020-bern");
    assert_false(p.inst[0].bernoulli);
    assert_true(p.inst[1].bernoulli);
    assert_int_equal(p.n_cfg, 2 * (1 + 3 + 3));
    assert_int_equal(p.trials, 100);
    assert_string_equal(simplan_mech_name(&p.cfg[1]), "linear");
    assert_string_equal(simplan_mech_name(&p.cfg[4]), "laplace");
    assert_int_equal(p.cfg[7].instance, 1);
    simplan_fini(&p);

    const char *names[] = {"sajed2019-c1", "sajed2019-c2", "sajed2019-c3", "sajed2019-c4"};
    for (int s = 0; s < 4; s++) {
        simplan_opts q = {.preset = names[s]};
        build_ok(&p, &q);
        assert_int_equal(p.n_inst, 4);
        assert_int_equal(p.inst[0].k, 3);
        assert_int_equal(p.inst[3].k, 20);
        assert_true(p.inst[2].bernoulli);
        assert_int_equal(p.n_cfg, 4 * 2 * 4);
        assert_int_equal(p.horizon, 50000000);
        assert_int_equal(p.trials, 30);
        assert_true(p.beta == 1.0 / 5e7);
        assert_string_equal(p.cfg[0].ops->name, "dp-se");
        assert_string_equal(p.cfg[4].ops->name, "dp-ucb");
        assert_string_equal(simplan_mech_name(&p.cfg[4]), "none");
        /* the means are agg_env_ss19_means' */
        double means[5];
        assert_int_equal(agg_env_ss19_means((agg_ss19_setting)(s + 1), 5, means), LDPB_OK);
        for (uint32_t a = 0; a < 5; a++)
            assert_true(agg_env_mean(p.inst[1].env, a) == means[a]);
        simplan_fini(&p);
    }
    simplan_opts k = {.preset = "sajed2019-c3", .ks = "5", .epsilons = "0.25"};
    build_ok(&p, &k);
    assert_int_equal(p.n_inst, 1);
    assert_int_equal(p.n_cfg, 2);
    assert_int_equal(p.inst[0].k, 5);
    simplan_fini(&p);
}

static void test_custom(void **state)
{
    (void)state;
    simplan p;
    /* every LOCAL algorithm runs with each mechanism it accepts (default: all four) */
    simplan_opts o = {.means = "0.9, 0.8,0.5",
                      .algorithms = "ucb1,ldp-ucb-b,ldp-ucb-l,dp-se",
                      .epsilons = "0.5,1"};
    build_ok(&p, &o);
    assert_int_equal(p.n_inst, 1);
    assert_string_equal(p.inst[0].label, "custom");
    assert_int_equal(p.inst[0].k, 3);
    assert_true(p.inst[0].bernoulli);
    assert_int_equal(p.n_cfg, 1 + 3 * 2 + 1 * 2 + 2);
    assert_int_equal(p.horizon, SIMPLAN_CUSTOM_HORIZON);
    assert_int_equal(p.trials, SIMPLAN_CUSTOM_TRIALS);
    assert_string_equal(simplan_mech_name(&p.cfg[7]), "laplace");
    char text[128];
    simplan_env_text(p.inst[0].env, text, sizeof text);
    assert_string_equal(text, "bernoulli:0.9,bernoulli:0.8,bernoulli:0.5");
    simplan_fini(&p);

    simplan_opts l = {.laws = "bernoulli:0.9,beta:4:1*5,uniform:0:1*2", .algorithms = "ts"};
    build_ok(&p, &l);
    assert_int_equal(p.inst[0].k, 8);
    assert_false(p.inst[0].bernoulli);
    assert_int_equal(p.n_cfg, 1);
    assert_true(isinf(p.cfg[0].epsilon));
    size_t need = simplan_env_text(p.inst[0].env, text, 8);
    assert_int_equal(need, strlen("bernoulli:0.9,beta:4:1*5,uniform:0:1*2"));
    assert_int_equal(strlen(text), 7); /* truncated, terminated */
    simplan_env_text(p.inst[0].env, text, sizeof text);
    assert_string_equal(text, "bernoulli:0.9,beta:4:1*5,uniform:0:1*2");
    simplan_fini(&p);
}

static void expect_error(const simplan_opts *o, ldpb_err want, const char *needle)
{
    simplan p;
    char msg[SIMPLAN_ERRMSG_MAX];
    ldpb_err err = simplan_build(&p, o, msg);
    if (err != want || !strstr(msg, needle)) {
        print_error("got %d '%s', want %d containing '%s'\n", (int)err, msg, (int)want, needle);
        fail();
    }
    assert_int_equal(p.n_cfg, 0);
    assert_null(p.inst);
    simplan_fini(&p);
}

static void test_errors(void **state)
{
    (void)state;
    simplan_opts o;
#define E(want, needle, ...)                                                                       \
    do {                                                                                           \
        o = (simplan_opts){__VA_ARGS__};                                                           \
        expect_error(&o, want, needle);                                                            \
    } while (0)
    E(LDPB_EINVAL, "give --preset NAME", .algorithms = "ucb1");
    E(LDPB_EINVAL, "unknown preset 'x'", .preset = "x");
    E(LDPB_EINVAL, "cannot be combined", .preset = "ren2020", .means = "0.5,0.4");
    E(LDPB_EINVAL, "not both", .means = "0.5,0.4", .laws = "bernoulli:0.5*2", .algorithms = "ts");
    E(LDPB_EINVAL, "needs --algorithms", .means = "0.5,0.4");
    E(LDPB_EINVAL, "unknown algorithm 'zz'", .means = "0.5,0.4", .algorithms = "ts,zz");
    E(LDPB_EINVAL, "not in preset jiang2023", .preset = "jiang2023", .algorithms = "dp-se");
    E(LDPB_EINVAL, "unknown mechanism 'none'", .means = "0.5,0.4", .algorithms = "ldp-ts-b",
      .mechanisms = "none");
    E(LDPB_EINVAL, "ldp-ts-b accepts none", .means = "0.5,0.4", .algorithms = "ldp-ts-b",
      .mechanisms = "laplace");
    E(LDPB_EINVAL, "leave it out with --algorithms", .preset = "ren2020", .mechanisms = "linear");
    E(LDPB_EINVAL, "applies to LOCAL", .means = "0.5,0.4", .algorithms = "dp-ucb",
      .mechanisms = "linear");
    E(LDPB_EINVAL, "every chosen algorithm is non-private", .means = "0.5,0.4",
      .algorithms = "ucb1", .epsilons = "1");
    E(LDPB_ERANGE, "epsilon 0 outside (0, 10]", .means = "0.5,0.4", .algorithms = "dp-se",
      .epsilons = "0");
    E(LDPB_ERANGE, "epsilon 10.5 outside", .means = "0.5,0.4", .algorithms = "dp-se",
      .epsilons = "1,10.5");
    E(LDPB_EINVAL, "'x' is not a finite number", .means = "0.5,0.4", .algorithms = "dp-se",
      .epsilons = "x");
    E(LDPB_EINVAL, "are the same epsilon", .means = "0.5,0.4", .algorithms = "dp-se",
      .epsilons = "0.5,5e-1");
    E(LDPB_EINVAL, "listed twice", .means = "0.5,0.4", .algorithms = "ts,ts");
    E(LDPB_EINVAL, "item 2 is empty", .means = "0.5, ,0.4", .algorithms = "ts");
    E(LDPB_ERANGE, "mean 1.5 (arm 2) outside [0, 1]", .means = "0.5,1.5", .algorithms = "ts");
    E(LDPB_EINVAL, "'nan' (arm 1) is not a number", .means = "nan,0.5", .algorithms = "ts");
    E(LDPB_ERANGE, "at least 2 arms", .means = "0.5", .algorithms = "ts");
    E(LDPB_ERANGE, "at least 2 arms", .laws = "bernoulli:0.5", .algorithms = "ts");
    E(LDPB_EINVAL, "--laws: ", .laws = "gauss:0.5", .algorithms = "ts");
    E(LDPB_EINVAL, "--horizon '1e5.5' is not a whole number", .preset = "jiang2023",
      .horizon = "1e5.5");
    E(LDPB_ERANGE, "--horizon 0 outside [1, 1e12]", .preset = "jiang2023", .horizon = "0");
    E(LDPB_ERANGE, "--horizon 2e12 outside", .preset = "jiang2023", .horizon = "2e12");
    E(LDPB_ERANGE, "is below K = 20", .preset = "jiang2023", .horizon = "19");
    E(LDPB_ERANGE, "--trials 0 outside [1, 1e6]", .preset = "jiang2023", .trials = "0");
    E(LDPB_ERANGE, "--kappa 1.5 outside [-1, 1]", .preset = "jiang2023", .kappa = "1.5");
    E(LDPB_EINVAL, "--k applies only", .preset = "ren2020", .ks = "5");
    E(LDPB_EINVAL, "--k applies only", .means = "0.5,0.4", .algorithms = "ts", .ks = "5");
    E(LDPB_ERANGE, "--k: 1 outside", .preset = "sajed2019-c2", .ks = "3,1");
    E(LDPB_EINVAL, "--k: 'x' is not a whole number", .preset = "sajed2019-c2", .ks = "x");
    E(LDPB_ERANGE, "beyond 2^63 rounds", .preset = "sajed2019-c1", .horizon = "1e12",
      .trials = "1e6");
#undef E
}

/* A plan with fabricated results: trial i of configuration c has regret (c + 1) (i + 1) sqrt(t). */
static void fabricate(simplan *p, double ***regret)
{
    simplan_opts o = {.means = "0.9,0.6",
                      .algorithms = "ucb1,ldp-ucb-b,dp-se",
                      .mechanisms = "linear",
                      .epsilons = "0.5,1",
                      .horizon = "1000",
                      .trials = "3"};
    build_ok(p, &o);
    *regret = calloc(p->n_cfg, sizeof **regret);
    assert_non_null(*regret);
    for (size_t c = 0; c < p->n_cfg; c++) {
        (*regret)[c] = calloc(p->trials * p->n_checkpoints, sizeof ***regret);
        assert_non_null((*regret)[c]);
        for (size_t i = 0; i < p->trials; i++)
            for (size_t j = 0; j < p->n_checkpoints; j++)
                (*regret)[c][i * p->n_checkpoints + j] =
                    (double)((c + 1) * (i + 1)) * sqrt((double)p->checkpoints[j]);
    }
}

static char *read_all(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = calloc((size_t)n + 1, 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    return s;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_csv(void **state)
{
    (void)state;
    simplan p;
    double **regret;
    fabricate(&p, &regret);
    assert_int_equal(p.n_cfg, 5);
    simreport r;
    assert_int_equal(simreport_compute(&r, &p, (double *const *)regret), LDPB_OK);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(simreport_write_regret(&r, f), 0);
    char *s = read_all(f);
    fclose(f);
    const char *header = "preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,"
                         "trials\n";
    assert_memory_equal(s, header, strlen(header));
    assert_int_equal(count_lines(s), 1 + p.n_cfg * p.n_checkpoints);
    /* ucb1 at t = 1: trials 1, 2, 3 -> mean 2, sd 1, half-width t(2) / sqrt(3) */
    char want[160];
    double half = simstat_t975(3) / sqrt(3.0);
    snprintf(want, sizeof want, "\ncustom,ucb1,none,inf,2,1,2,%.6g,%.6g,3\n", 2 - half, 2 + half);
    assert_non_null(strstr(s, want));
    assert_non_null(strstr(s, "\ncustom,ldp-ucb-b,linear,0.5,2,1000,"));
    assert_non_null(strstr(s, "\ncustom,dp-se,none,1,2,1000,"));
    free(s);

    f = tmpfile();
    assert_non_null(f);
    assert_int_equal(simreport_write_summary(&r, f), 0);
    s = read_all(f);
    fclose(f);
    const char *sh = "preset,algorithm,mechanism,epsilon,k,horizon,trials,mean_regret,ci95_low,"
                     "ci95_high,sd,median,min,max\n";
    assert_memory_equal(s, sh, strlen(sh));
    assert_int_equal(count_lines(s), 1 + p.n_cfg);
    /* dp-se eps 1 is configuration 4: values 5, 10, 15 times sqrt(1000) */
    double q = sqrt(1000.0);
    half = simstat_t975(3) * 5 * q / sqrt(3.0);
    snprintf(want, sizeof want,
             "\ncustom,dp-se,none,1,2,1000,3,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", 10 * q,
             10 * q - half, 10 * q + half, 5 * q, 10 * q, 5 * q, 15 * q);
    assert_non_null(strstr(s, want));
    free(s);

    /* a write error is reported */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        assert_int_equal(simreport_write_regret(&r, full), -1);
        fclose(full);
    }

    simreport_fini(&r);
    for (size_t c = 0; c < p.n_cfg; c++)
        free(regret[c]);
    free(regret);
    simplan_fini(&p);
}

static size_t count_substr(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *q = s; (q = strstr(q, needle)) != NULL; q += strlen(needle))
        n++;
    return n;
}

static void test_plot_script(void **state)
{
    (void)state;
    simplan p;
    double **regret;
    fabricate(&p, &regret);
    simreport r;
    assert_int_equal(simreport_compute(&r, &p, (double *const *)regret), LDPB_OK);

    char dir[] = "/tmp/test_simtool.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char data[64], path[128];
    snprintf(data, sizeof data, "%s/data", dir);
    assert_int_equal(mkdir(data, 0700), 0);
    char msg[256];
    /* by epsilon: 0.5 and 1; by algorithm: ldp-ucb-b linear and dp-se (two epsilons each) */
    assert_int_equal(simplot_write(&r, dir, msg, sizeof msg), 4);
    snprintf(path, sizeof path, "%s/%s", dir, SIMPLOT_SCRIPT);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    char *s = read_all(f);
    fclose(f);
    assert_int_equal(count_substr(s, "set output 'custom-eps0.5.png'"), 1);
    assert_int_equal(count_substr(s, "set output 'custom-eps1.svg'"), 1);
    assert_int_equal(count_substr(s, "set output 'custom-ldp-ucb-b-linear.png'"), 1);
    assert_int_equal(count_substr(s, "set output 'custom-dp-se.svg'"), 1);
    assert_int_equal(count_substr(s, "set logscale xy"), 4);
    assert_int_equal(count_substr(s, "with filledcurves"), 3 + 3 + 3 + 3);
    /* reference shapes: the Bernoulli-KL Lai-Robbins coefficient is in the script */
    char coef[64];
    snprintf(coef, sizeof coef, "%.10g * log(x)", simref_lai_robbins(p.inst[0].env, 1));
    assert_true(count_substr(s, coef) >= 4);
    snprintf(coef, sizeof coef, "%.10g * log(x)", simref_ldp(p.inst[0].env, 0.5));
    assert_true(count_substr(s, coef) >= 1);
    free(s);
    for (size_t c = 0; c < p.n_cfg; c++) {
        snprintf(path, sizeof path, "%s/data/c%zu.dat", dir, c);
        f = fopen(path, "r");
        assert_non_null(f);
        char line[256];
        size_t rows = 0;
        while (fgets(line, sizeof line, f))
            rows += line[0] != '#';
        fclose(f);
        assert_int_equal(rows, p.n_checkpoints);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/%s", dir, SIMPLOT_SCRIPT);
    unlink(path);
    rmdir(data);

    /* a missing data directory is an error with a message */
    assert_int_equal(simplot_write(&r, dir, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "cannot write"));
    rmdir(dir);

    simreport_fini(&r);
    for (size_t c = 0; c < p.n_cfg; c++)
        free(regret[c]);
    free(regret);
    simplan_fini(&p);
}

/* --gamma and --eps-arm reach every configuration's policy parameters (0, the policies' defaults,
 * when not given); out-of-range values, an option no chosen algorithm reads, and an eps_arm above
 * an epsilon of the run (which dp-ucb refuses) are usage errors. */
static void test_policy_parameters(void **state)
{
    (void)state;
    simplan p;
    simplan_opts o = {.preset = "sajed2019-c1",
                      .ks = "3",
                      .horizon = "1e4",
                      .epsilons = "0.5,1",
                      .gamma = "0.01",
                      .eps_arm = "0.5"};
    build_ok(&p, &o);
    assert_true(p.gamma == 0.01 && p.eps_arm == 0.5);
    agg_sim_config sc[8];
    assert_true(p.n_cfg <= 8);
    simplan_sim_configs(&p, sc);
    for (size_t i = 0; i < p.n_cfg; i++) {
        assert_true(sc[i].params.gamma == 0.01);
        assert_true(sc[i].params.eps_arm == 0.5);
        assert_int_equal(sc[i].params.horizon, 10000);
    }
    simplan_fini(&p);
    simplan_opts d = {.preset = "sajed2019-c1", .ks = "3", .horizon = "1e4"};
    build_ok(&p, &d);
    simplan_sim_configs(&p, sc);
    assert_true(sc[0].params.gamma == 0 && sc[0].params.eps_arm == 0);
    simplan_fini(&p);

    simplan_opts e;
#define E(want, needle, ...)                                                                       \
    do {                                                                                           \
        e = (simplan_opts){__VA_ARGS__};                                                           \
        expect_error(&e, want, needle);                                                            \
    } while (0)
    E(LDPB_ERANGE, "--gamma 1 outside (0, 1)", .preset = "sajed2019-c1", .gamma = "1");
    E(LDPB_EINVAL, "--gamma 'x' is not a finite number", .preset = "sajed2019-c1", .gamma = "x");
    E(LDPB_ERANGE, "--eps-arm 0 outside (0, 10]", .preset = "sajed2019-c1", .eps_arm = "0");
    E(LDPB_EINVAL, "--gamma given, but no chosen algorithm reads it (read by: dp-ucb, exp3,",
      .preset = "jiang2023", .gamma = "0.01");
    E(LDPB_EINVAL, "--eps-arm given, but no chosen algorithm reads it (read by: dp-ucb)",
      .preset = "sajed2019-c1", .algorithms = "dp-se", .eps_arm = "0.1");
    E(LDPB_ERANGE, "dp-ucb: eps_arm 0.5 is above epsilon 0.25", .preset = "sajed2019-c1", .ks = "3",
      .epsilons = "0.25,1", .eps_arm = "0.5");
#undef E
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_t_quantile),       cmocka_unit_test(test_stats),
        cmocka_unit_test(test_reference_shapes), cmocka_unit_test(test_parse_count),
        cmocka_unit_test(test_format),           cmocka_unit_test(test_preset_jiang),
        cmocka_unit_test(test_preset_ren_sajed), cmocka_unit_test(test_custom),
        cmocka_unit_test(test_errors),           cmocka_unit_test(test_csv),
        cmocka_unit_test(test_plot_script),      cmocka_unit_test(test_policy_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
