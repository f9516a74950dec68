/* Benchmark of the aggregator's decision loop: rounds per second on one core for the real policies
 * (through the ops table, with the generic wrappers' checks) on the real environments. A round is
 * choose, one reward from the environment, the client's privatization for LDP policies
 * (ldpb_mech_privatize with a seeded ldpb_rng), and observe. Prints figures only, never a verdict.
 *
 * Each figure is T rounds over the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: rounds per second
 * of one core even when the machine is shared; the wall-clock rate is printed beside it), the
 * median of three runs of T rounds on a fresh policy, with T chosen so that every run takes at
 * least --seconds (default 1) CPU seconds. The machine (processors, model) and the load average
 * before and after are printed so the figures can be read. --tsv prints one tab-separated line
 * per case (for bench/run_sim_bench.sh); --only LABEL runs one case. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "bench_util.h"
#include "env.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"
#include "policy.h"
#include "rand.h"

#define REPS 3

typedef struct bench_case {
    const char *label;  /* what the table shows (unique; the numpy script uses the same) */
    const char *policy; /* registry name */
    const char *env;    /* agg_env_preset name */
    uint32_t k;
    int ldp;              /* 1: the client privatizes with the linear mechanism at epsilon 1 */
    agg_noise_kind noise; /* central noise; 0 for policies that add none */
} bench_case;

static const bench_case cases[] = {
    {"ts", "ts", "mixed-bernoulli", 20, 0, 0},
    {"ucb1", "ucb1", "mixed-bernoulli", 20, 0, 0},
    {"ldp-ts-b", "ldp-ts-b", "mixed-bernoulli", 20, 1, 0},
    {"ldp-ucb-b", "ldp-ucb-b", "mixed-bernoulli", 20, 1, 0},
    {"dp-ucb", "dp-ucb", "c1", 5, 0, AGG_NOISE_FAST},
    {"dp-se", "dp-se", "c1", 5, 0, AGG_NOISE_FAST},
    {"dp-ucb-secure", "dp-ucb", "c1", 5, 0, AGG_NOISE_SECURE},
    {"exp3", "exp3", "mixed-bernoulli", 20, 0, 0},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, ldpb_err err, const char *detail)
{
    fprintf(stderr, "bench_sim: %s: %s%s%s\n", what, ldpb_strerror(err),
            detail && detail[0] ? ": " : "", detail ? detail : "");
    exit(1);
}

/* One run of `horizon` rounds on a fresh policy: the thread CPU seconds and the wall seconds the
 * loop took (setup and teardown excluded), and the share of pulls that went to a best arm (a
 * sanity figure). */
typedef struct run_time {
    double cpu, wall;
} run_time;

static run_time run_case(const bench_case *c, const agg_env *env, uint64_t horizon, double *best)
{
    char msg[AGG_ERRMSG_MAX] = "";
    agg_policy_config cfg;
    agg_policy_config_init(&cfg);
    cfg.k = c->k;
    cfg.horizon = horizon;
    cfg.epsilon = 1.0;
    cfg.mechanism = LDPB_MECH_LINEAR;
    agg_policy *p = NULL;
    ldpb_err err = agg_policy_new(&p, c->policy, &cfg, msg);
    if (err)
        die(c->policy, err, msg);

    /* Separate streams for the decisions, the rewards, the central noise and the client. */
    agg_rand decide, reward, fast;
    agg_rand_seed_u64(&decide, 1);
    agg_rand_seed_u64(&reward, 2);
    agg_rand_seed_u64(&fast, 3);
    ldpb_rng *secure = NULL, *client = NULL;
    agg_noise *noise = NULL;
    ldpb_mech *mech = NULL;
    if (c->noise == AGG_NOISE_SECURE && (err = ldpb_rng_new_system(&secure)) != LDPB_OK)
        die("ldpb_rng_new_system", err, NULL);
    if (c->noise && (err = agg_noise_new(&noise, c->noise, secure, &fast)) != LDPB_OK)
        die("agg_noise_new", err, NULL);
    if (c->ldp) {
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        ldpb_rng_seed_from_text(seed, "bench_sim client");
        if ((err = ldpb_rng_new_seeded(&client, seed)) != LDPB_OK)
            die("ldpb_rng_new_seeded", err, NULL);
        ldpb_mech_opts o;
        ldpb_mech_opts_init(&o, LDPB_MECH_LINEAR, cfg.epsilon);
        if ((err = ldpb_mech_new(&mech, &o)) != LDPB_OK)
            die("ldpb_mech_new", err, NULL);
    }
    agg_policy_env penv = {&decide, noise};
    double best_mean = agg_env_best_mean(env);
    uint64_t best_pulls = 0;

    double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t t = 0; t < horizon; t++) {
        uint32_t arm;
        if ((err = agg_policy_choose(p, &penv, &arm)) != LDPB_OK)
            die("choose", err, c->label);
        best_pulls += agg_env_mean(env, arm) == best_mean;
        double x = agg_env_sample(env, arm, &reward);
        if (mech && (err = ldpb_mech_privatize(mech, client, x, &x)) != LDPB_OK)
            die("ldpb_mech_privatize", err, c->label);
        if ((err = agg_policy_observe(p, &penv, arm, x)) != LDPB_OK)
            die("observe", err, c->label);
    }
    run_time took = {clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, clock_s(CLOCK_MONOTONIC) - w0};

    *best = (double)best_pulls / (double)horizon;
    agg_policy_free(p);
    agg_noise_free(noise);
    ldpb_mech_free(mech);
    ldpb_rng_free(client);
    ldpb_rng_free(secure);
    return took;
}

typedef struct result {
    uint64_t horizon;
    double rate[REPS]; /* rounds per CPU second, sorted */
    double wall;       /* rounds per wall-clock second, median */
    double best;       /* share of pulls on a best arm, last run */
} result;

/* Finds a horizon whose runs take at least min_s CPU seconds, then measures REPS runs at it.
 * Rates can grow with T (posteriors concentrate, DP-SE eliminates), so if a measured run came out
 * shorter than min_s the horizon grows and the measurement is repeated. */
static void measure(const bench_case *c, const agg_env *env, double min_s, result *out)
{
    uint64_t horizon = 1u << 14;
    double s;
    for (;;) {
        s = run_case(c, env, horizon, &out->best).cpu;
        if (s >= 0.2 * min_s || horizon >= (UINT64_C(1) << 40))
            break;
        horizon *= 2;
    }
    horizon = (uint64_t)ceil((double)horizon * 1.2 * min_s / s);
    double wall[REPS];
    for (int attempt = 0;; attempt++) {
        double shortest = HUGE_VAL;
        for (int r = 0; r < REPS; r++) {
            run_time took = run_case(c, env, horizon, &out->best);
            out->rate[r] = (double)horizon / took.cpu;
            wall[r] = (double)horizon / took.wall;
            shortest = took.cpu < shortest ? took.cpu : shortest;
        }
        if (shortest >= min_s || attempt == 3)
            break;
        horizon = (uint64_t)ceil((double)horizon * 1.2 * min_s / shortest);
    }
    out->horizon = horizon;
    qsort(out->rate, REPS, sizeof out->rate[0], bench_cmp_double);
    qsort(wall, REPS, sizeof wall[0], bench_cmp_double);
    out->wall = wall[REPS / 2];
}

static void print_loadavg(const char *when)
{
    char buf[128] = "unavailable";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            strcpy(buf, "unavailable");
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
    printf("# load average %s: %s\n", when, buf);
}

static void print_machine(void)
{
    char line[256], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) == 0) {
                const char *v = strchr(line, ':');
                if (v) {
                    v += 1 + (v[1] == ' ');
                    snprintf(model, sizeof model, "%s", v);
                    model[strcspn(model, "\n")] = '\0';
                }
                break;
            }
        }
        fclose(f);
    }
    printf("# machine: %ld online processors (nproc), model name: %s\n",
           sysconf(_SC_NPROCESSORS_ONLN), model);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_sim [--tsv] [--seconds S] [--only LABEL]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int tsv = 0;
    double min_s = 1.0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tsv") == 0) {
            tsv = 1;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end;
            min_s = strtod(argv[++i], &end);
            if (*end || !(min_s > 0.0 && min_s <= 3600.0))
                usage();
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            usage();
        }
    }
    gsl_set_error_handler_off();

    printf(
        "# ldpb bench_sim: rounds per second on one core (one thread): T rounds divided by the\n"
        "# thread's CPU time, median of %d runs each >= %g CPU s (wall-clock rounds/s beside it:\n"
        "# lower when the machine is shared). A round = choose + environment reward (+ client\n"
        "# privatization, linear mechanism, epsilon 1) + observe, through the ops table.\n",
        REPS, min_s);
    print_machine();
    print_loadavg("before");
    if (tsv)
        printf("label\tpolicy\tenv\tk\tnoise\trounds_per_cpu_s\tmin\tmax\twall_rounds_per_s\tT\t"
               "best_share\n");
    else
        printf("%-14s %-16s %3s %-6s %12s %23s %12s %12s %6s\n", "case", "env", "K", "noise",
               "rounds/s", "(min - max)", "wall r/s", "T", "best");
    fflush(stdout);

    for (size_t i = 0; i < N_CASES; i++) {
        const bench_case *c = &cases[i];
        if (only && strcmp(only, c->label) != 0)
            continue;
        char msg[AGG_ERRMSG_MAX] = "";
        agg_env *env = NULL;
        ldpb_err err = agg_env_preset(&env, c->env, c->k, msg);
        if (err)
            die(c->env, err, msg);
        result res;
        measure(c, env, min_s, &res);
        const char *noise = c->noise == AGG_NOISE_FAST     ? "fast"
                            : c->noise == AGG_NOISE_SECURE ? "secure"
                                                           : "-";
        if (tsv)
            printf("%s\t%s\t%s\t%u\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%llu\t%.4f\n", c->label, c->policy,
                   c->env, c->k, noise, res.rate[REPS / 2], res.rate[0], res.rate[REPS - 1],
                   res.wall, (unsigned long long)res.horizon, res.best);
        else
            printf("%-14s %-16s %3u %-6s %12.0f (%9.0f - %9.0f) %12.0f %12llu %6.3f\n", c->label,
                   c->env, c->k, noise, res.rate[REPS / 2], res.rate[0], res.rate[REPS - 1],
                   res.wall, (unsigned long long)res.horizon, res.best);
        fflush(stdout);
        agg_env_free(env);
    }
    print_loadavg("after");
    if (!tsv)
        printf("# best: share of pulls on a best arm in the last run (a sanity figure)\n"
               "# dp-ucb-secure: dp-ucb with AGG_NOISE_SECURE (ChaCha20 system ldpb_rng, grid "
               "Laplace) as in the service\n");
    return 0;
}
