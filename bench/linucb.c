/* Benchmark of the contextual policies' round: choose among K actions of dimension d (Cholesky of
 * the released d x d matrix refactorised from scratch, beta_t, K quadratic forms), then observe
 * the chosen action's (x, y) (the (d+1)x(d+1) outer product into the tree, node noise redrawn for
 * every level that changes). The decision sets come from a pool of 256 pre-drawn rounds of
 * uniform unit vectors, cycled, so the figure is the policy's cost, not the environment's. Same
 * conventions as bench_sim: T rounds over the thread's CPU time, median of three runs, each at
 * least --seconds CPU seconds; --tsv for bench/run_sim_bench.sh. The numpy twin is
 * bench/linucb_numpy.py (same labels). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>

#include "linucb.h"
#include "rand.h"

#define REPS    3
#define POOL    256u
#define D       10u
#define K       20u
#define HORIZON 1000000ULL /* the tree's depth (m = 21); runs stop well before it */

typedef struct bench_case {
    const char *label;
    agg_linucb_variant variant;
    agg_noise_kind noise;
} bench_case;

static const bench_case cases[] = {
    {"linucb", AGG_LINUCB_PLAIN, 0},
    {"jdp-wishart", AGG_LINUCB_WISHART, AGG_NOISE_FAST},
    {"jdp-gaussian", AGG_LINUCB_GAUSSIAN, AGG_NOISE_FAST},
    {"jdp-wishart-secure", AGG_LINUCB_WISHART, AGG_NOISE_SECURE},
    {"jdp-gaussian-secure", AGG_LINUCB_GAUSSIAN, AGG_NOISE_SECURE},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double *pool_x, *pool_y;

static void make_pool(void)
{
    agg_rand r;
    agg_rand_seed_u64(&r, 42);
    pool_x = malloc((size_t)POOL * K * D * sizeof *pool_x);
    pool_y = malloc((size_t)POOL * K * sizeof *pool_y);
    if (!pool_x || !pool_y)
        exit(1);
    double theta[D], n2 = 0.0;
    for (uint32_t j = 0; j < D; j++) {
        theta[j] = agg_rand_normal(&r);
        n2 += theta[j] * theta[j];
    }
    for (uint32_t j = 0; j < D; j++)
        theta[j] /= sqrt(n2);
    for (size_t i = 0; i < (size_t)POOL * K; i++) {
        double *x = pool_x + i * D, s = 0.0, m = 0.0;
        for (uint32_t j = 0; j < D; j++) {
            x[j] = agg_rand_normal(&r);
            s += x[j] * x[j];
        }
        for (uint32_t j = 0; j < D; j++) {
            x[j] /= sqrt(s);
            m += theta[j] * x[j];
        }
        pool_y[i] = agg_rand_uniform(&r) < 0.5 * (1.0 + m) ? 1.0 : -1.0;
    }
}

static double run_case(const bench_case *c, uint64_t T, double *wall)
{
    agg_linucb_config cfg;
    agg_linucb_config_init(&cfg);
    cfg.variant = c->variant;
    cfg.d = D;
    cfg.horizon = HORIZON;
    agg_linucb *p;
    char msg[AGG_ERRMSG_MAX];
    if (agg_linucb_new(&p, &cfg, msg) != LDPB_OK) {
        fprintf(stderr, "bench_linucb: %s\n", msg);
        exit(1);
    }
    agg_rand r, nr;
    agg_rand_seed_u64(&r, 1);
    agg_rand_seed_u64(&nr, 2);
    ldpb_rng *rng = NULL;
    agg_noise *noise = NULL;
    uint8_t seed[LDPB_RNG_SEED_BYTES] = {3};
    if (c->noise && (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK ||
                     agg_noise_new(&noise, c->noise, rng, &nr) != LDPB_OK))
        exit(1);
    agg_policy_env env = {&r, noise};
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (uint64_t t = 0; t < T; t++) {
        size_t round = (size_t)(t % POOL);
        const double *x = pool_x + round * K * D;
        uint32_t a;
        if (agg_linucb_choose(p, &env, x, K, &a, NULL) != LDPB_OK ||
            agg_linucb_observe(p, &env, x + (size_t)a * D, pool_y[round * K + a]) != LDPB_OK) {
            fprintf(stderr, "bench_linucb: %s failed at round %llu\n", c->label,
                    (unsigned long long)t);
            exit(1);
        }
    }
    double cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    *wall = clock_s(CLOCK_MONOTONIC) - w0;
    agg_linucb_free(p);
    agg_noise_free(noise);
    ldpb_rng_free(rng);
    return cpu;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int tsv = 0;
    double min_s = 1.0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tsv") == 0)
            tsv = 1;
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            min_s = strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: bench_linucb [--tsv] [--seconds S]\n");
            return 2;
        }
    }
    if (!(min_s > 0.0) || min_s > 600.0)
        min_s = 1.0;
    gsl_set_error_handler_off();
    make_pool();
    if (tsv)
        printf("label\td\tk\trounds_per_cpu_s\tmin\tmax\twall_rounds_per_s\tT\n");
    else
        printf("%-20s %3s %3s %14s %12s\n", "case", "d", "K", "rounds/cpu-s", "T");
    for (size_t i = 0; i < N_CASES; i++) {
        const bench_case *c = &cases[i];
        uint64_t T = 256;
        double wall, s;
        while ((s = run_case(c, T, &wall)) < 0.2 * min_s)
            T *= 2;
        T = (uint64_t)ceil((double)T * 1.2 * min_s / s);
        if (T > HORIZON)
            T = HORIZON;
        double rate[REPS], wrate[REPS];
        for (int k = 0; k < REPS; k++) {
            double cpu = run_case(c, T, &wall);
            rate[k] = (double)T / cpu;
            wrate[k] = (double)T / wall;
        }
        qsort(rate, REPS, sizeof rate[0], cmp);
        qsort(wrate, REPS, sizeof wrate[0], cmp);
        if (tsv)
            printf("%s\t%u\t%u\t%.0f\t%.0f\t%.0f\t%.0f\t%llu\n", c->label, D, K, rate[1], rate[0],
                   rate[REPS - 1], wrate[1], (unsigned long long)T);
        else
            printf("%-20s %3u %3u %14.0f %12llu\n", c->label, D, K, rate[1], (unsigned long long)T);
        fflush(stdout);
    }
    free(pool_x);
    free(pool_y);
    return 0;
}
