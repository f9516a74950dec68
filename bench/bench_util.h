/* Helpers shared by the bench programs: a monotonic clock and a comparator for medians. */
#ifndef LDPB_BENCH_UTIL_H
#define LDPB_BENCH_UTIL_H

#include <time.h>

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
