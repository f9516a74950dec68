/* Benchmark of the client's per-report cost: nanoseconds per privatized report for every
 * mechanism, with the system and the seeded RNG; resident memory; and heap calls per report.
 * Prints figures only, never a verdict. Heap calls are counted by linking with
 * -Wl,--wrap=malloc,... (bench/CMakeLists.txt), which sees the statically linked ldpb code but not
 * libsodium or libc, which are shared libraries. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#define REPORTS_PER_REP 1000000
#define REPS            7
#define N_INPUTS        1024 /* distinct rewards cycled through, so no threshold is cached */

/* --- heap call counting through the linker's --wrap -------------------------------------------*/

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);

static uint64_t heap_calls; /* malloc + calloc + realloc; free is counted apart */
static uint64_t heap_frees;

void *__wrap_malloc(size_t size)
{
    heap_calls++;
    return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    heap_calls++;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    heap_calls++;
    return __real_realloc(p, size);
}

void __wrap_free(void *p)
{
    if (p)
        heap_frees++;
    __real_free(p);
}

/* --- helpers -----------------------------------------------------------------------------------*/

/* VmRSS and VmHWM of this process in KiB, from /proc/self/status; -1 where unavailable. */
static void read_memory(long *rss_kib, long *hwm_kib)
{
    char line[256];
    *rss_kib = *hwm_kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            *rss_kib = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "VmHWM:", 6) == 0)
            *hwm_kib = strtol(line + 6, NULL, 10);
    }
    fclose(f);
}

static void die(const char *what, ldpb_err err)
{
    fprintf(stderr, "bench_privatize: %s: %s\n", what, ldpb_strerror(err));
    exit(1);
}

struct config {
    ldpb_mech_kind kind;
    double epsilon;
    ldpb_mech *mech;
};

static const struct {
    ldpb_mech_kind kind;
    double epsilon;
} config_list[] = {
    {LDPB_MECH_LINEAR, 1.0},  {LDPB_MECH_QUADRATIC, 1.0}, {LDPB_MECH_EXPONENTIAL, 1.0},
    {LDPB_MECH_LAPLACE, 1.0}, {LDPB_MECH_LAPLACE, 0.1},   {LDPB_MECH_LAPLACE, 0.5},
    {LDPB_MECH_LAPLACE, 2.0}, {LDPB_MECH_LAPLACE, 4.0},   {LDPB_MECH_LAPLACE, 10.0},
};
#define N_CONFIGS (sizeof config_list / sizeof config_list[0])

static volatile double sink; /* keeps the outputs alive */

/* One repetition: REPORTS_PER_REP reports; returns ns per report. */
static double run_rep(const ldpb_mech *mech, ldpb_rng *rng, const double *inputs)
{
    double acc = 0.0;
    double t0 = bench_now_ns();
    for (uint32_t i = 0; i < REPORTS_PER_REP; i++) {
        double y;
        ldpb_err err = ldpb_mech_privatize(mech, rng, inputs[i % N_INPUTS], &y);
        if (err)
            die("ldpb_mech_privatize", err);
        acc += y;
    }
    double t1 = bench_now_ns();
    sink += acc;
    return (t1 - t0) / REPORTS_PER_REP;
}

/* Median, min and max of REPS repetitions after one warm-up. */
static void measure(const ldpb_mech *mech, ldpb_rng *rng, const double *inputs, double out[3])
{
    double t[REPS];
    (void)run_rep(mech, rng, inputs);
    for (int r = 0; r < REPS; r++)
        t[r] = run_rep(mech, rng, inputs);
    qsort(t, REPS, sizeof t[0], bench_cmp_double);
    out[0] = t[REPS / 2];
    out[1] = t[0];
    out[2] = t[REPS - 1];
}

/* ns per 64-bit draw of the raw keystream, for context: the floor under every mechanism. */
static double keystream_ns(ldpb_rng *rng)
{
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t acc = 0;
        double t0 = bench_now_ns();
        for (uint32_t i = 0; i < REPORTS_PER_REP; i++)
            acc ^= ldpb_rng_u64(rng);
        t[r] = (bench_now_ns() - t0) / REPORTS_PER_REP;
        sink += (double)(acc & 1);
    }
    qsort(t, REPS, sizeof t[0], bench_cmp_double);
    return t[REPS / 2];
}

int main(void)
{
    static struct config configs[N_CONFIGS];
    double inputs[N_INPUTS];
    ldpb_rng *rngs[2] = {NULL, NULL};
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_err err;
    long rss0, hwm0, rss1, hwm1;

    /* Setup: every mechanism and both generators are built before anything is measured. */
    for (int i = 0; i < N_INPUTS; i++)
        inputs[i] = (double)i / (N_INPUTS - 1);
    for (size_t c = 0; c < N_CONFIGS; c++) {
        ldpb_mech_opts o;
        configs[c].kind = config_list[c].kind;
        configs[c].epsilon = config_list[c].epsilon;
        ldpb_mech_opts_init(&o, configs[c].kind, configs[c].epsilon);
        err = ldpb_mech_new(&configs[c].mech, &o);
        if (err)
            die("ldpb_mech_new", err);
    }
    if ((err = ldpb_rng_new_system(&rngs[0])) != LDPB_OK)
        die("ldpb_rng_new_system", err);
    ldpb_rng_seed_from_text(seed, "bench");
    if ((err = ldpb_rng_new_seeded(&rngs[1], seed)) != LDPB_OK)
        die("ldpb_rng_new_seeded", err);
    read_memory(&rss0, &hwm0);
    uint64_t calls0 = heap_calls, frees0 = heap_frees;
    /* Proves the counters are wired: setup allocates each mechanism and the seeded RNG. */
    uint64_t setup_calls = calls0;

    printf("ldpb privatize benchmark: ns per ldpb_mech_privatize() call, median (min-max) of %d\n"
           "repetitions of %d reports each after one warm-up; inputs cycle through %d rewards\n"
           "in [0, 1]. Issue targets with the system RNG: <= 60 ns Bernoulli, <= 150 ns Laplace,\n"
           "0 heap calls per report.\n\n",
           REPS, REPORTS_PER_REP, N_INPUTS);
    printf("%-12s %7s | %-25s | %-25s | %s\n", "mechanism", "epsilon", "system RNG ns/report",
           "seeded RNG ns/report", "heap calls/report");
    printf("%.*s\n", 100,
           "-----------------------------------------------------------------------------------"
           "-----------------------------------------------------------------------------------");
    uint64_t total_reports = 0;
    for (size_t c = 0; c < N_CONFIGS; c++) {
        double res[2][3];
        uint64_t before = heap_calls;
        for (int r = 0; r < 2; r++)
            measure(configs[c].mech, rngs[r], inputs, res[r]);
        uint64_t reports = 2ull * (REPS + 1) * REPORTS_PER_REP;
        total_reports += reports;
        char cell[2][32];
        for (int r = 0; r < 2; r++)
            snprintf(cell[r], sizeof cell[r], "%7.1f (%5.1f-%5.1f)", res[r][0], res[r][1],
                     res[r][2]);
        printf("%-12s %7g | %-25s | %-25s | %g\n", ldpb_mech_kind_name(configs[c].kind),
               configs[c].epsilon, cell[0], cell[1],
               (double)(heap_calls - before) / (double)reports);
    }
    printf("\nraw keystream, ns per 64-bit draw: system %.2f, seeded %.2f\n", keystream_ns(rngs[0]),
           keystream_ns(rngs[1]));
    uint64_t calls = heap_calls - calls0, frees = heap_frees - frees0;
    read_memory(&rss1, &hwm1);

    printf(
        "\nheap during setup: %llu malloc/calloc/realloc calls (%zu mechanisms, the seeded RNG)\n",
        (unsigned long long)setup_calls, (size_t)N_CONFIGS);
    printf("heap after setup: %llu malloc/calloc/realloc and %llu free calls in %llu reports "
           "(%.3g per report)\n",
           (unsigned long long)calls, (unsigned long long)frees, (unsigned long long)total_reports,
           (double)(calls + frees) / (double)total_reports);
    printf("  counted: calls from the statically linked ldpb code (via -Wl,--wrap); calls inside\n"
           "  the shared libsodium and libc are not seen.\n");
    printf("resident memory: after setup VmRSS %ld KiB, VmHWM %ld KiB; after the loops VmRSS %ld "
           "KiB, VmHWM %ld KiB\n",
           rss0, hwm0, rss1, hwm1);

    for (size_t c = 0; c < N_CONFIGS; c++)
        ldpb_mech_free(configs[c].mech);
    ldpb_rng_free(rngs[0]);
    ldpb_rng_free(rngs[1]);
    return 0;
}
