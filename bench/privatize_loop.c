/* The C side of bench/python_bench.py's privatize figure: CPU ns per value (process CPU clock,
 * so a shared machine does not inflate it) of privatizing N uniform rewards with the secure
 * generator, as a loop of ldpb_mech_privatize calls and as one ldpb_mech_privatize_batch call.
 * Median of 5 runs each, alternated. Prints figures only.
 *
 *   bench_privatize_loop MECH N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#define REPS 5

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    ldpb_mech_kind kind;
    long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0;
    if (argc != 3 || ldpb_mech_kind_from_name(argv[1], &kind) != LDPB_OK || n < 1 ||
        n > 100000000) {
        fprintf(stderr, "usage: %s linear|quadratic|exponential|laplace N (N <= 1e8)\n", argv[0]);
        return 2;
    }
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, kind, 1.0);
    ldpb_mech *m = NULL;
    ldpb_rng *rng = NULL;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    if (!x || !y || ldpb_mech_new(&m, &o) != LDPB_OK || ldpb_rng_new_system(&rng) != LDPB_OK) {
        fprintf(stderr, "bench_privatize_loop: setup failed\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        x[i] = ldpb_rng_double(rng);
    double loop[REPS], batch[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = cpu_ns();
        for (long i = 0; i < n; i++)
            if (ldpb_mech_privatize(m, rng, x[i], &y[i]) != LDPB_OK)
                return 1;
        loop[r] = (cpu_ns() - t0) / (double)n;
        t0 = cpu_ns();
        if (ldpb_mech_privatize_batch(m, rng, x, (size_t)n, y) != LDPB_OK)
            return 1;
        batch[r] = (cpu_ns() - t0) / (double)n;
    }
    qsort(loop, REPS, sizeof loop[0], bench_cmp_double);
    qsort(batch, REPS, sizeof batch[0], bench_cmp_double);
    printf("%s\tloop_ns\t%.2f\tbatch_ns\t%.2f\n", argv[1], loop[REPS / 2], batch[REPS / 2]);
    ldpb_rng_free(rng);
    ldpb_mech_free(m);
    free(x);
    free(y);
    return 0;
}
