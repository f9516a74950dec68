/* The client's run-time footprint against a real aggregator (scripts/footprint.sh starts one):
 * heap allocations and bytes to create a client, per assign and per report once set up, and to
 * free it; resident memory; CPU per report. Prints "key value" lines only.
 *
 *   footprint_measure URL SERVER_PUBLIC_KEY_FILE DIR [CYCLES]
 *
 * The heap is counted by defining malloc, calloc, realloc, free, posix_memalign, aligned_alloc
 * and memalign in this executable: they interpose for every library of the process (libldpb's
 * code, nanomsg with its worker thread, libsodium, libc's own callers) and forward to glibc's
 * __libc_* functions. "all" counts every thread, "caller" only the thread that calls the API. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ldpb/ldpb.h"

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);
void *memalign(size_t align, size_t n);

static atomic_ullong all_allocs, all_frees, all_bytes;
static _Thread_local unsigned long long caller_allocs;

static void counted(size_t n)
{
    atomic_fetch_add_explicit(&all_allocs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&all_bytes, n, memory_order_relaxed);
    caller_allocs++;
}

void *malloc(size_t n)
{
    counted(n);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    counted(n * size);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    counted(n);
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    counted(n);
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void free(void *p)
{
    if (p)
        atomic_fetch_add_explicit(&all_frees, 1, memory_order_relaxed);
    __libc_free(p);
}

typedef struct counts {
    unsigned long long allocs, frees, bytes, caller;
} counts;

static counts now(void)
{
    counts c = {atomic_load(&all_allocs), atomic_load(&all_frees), atomic_load(&all_bytes),
                caller_allocs};
    return c;
}

/* A /proc/self/status field in kB (VmRSS, VmHWM), -1 if absent. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return kb;
}

static double cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what, ldpb_err err, const ldpb_client *c)
{
    fprintf(stderr, "footprint_measure: %s: %s: %s\n", what, ldpb_strerror(err),
            c ? ldpb_client_errmsg(c) : "");
    exit(1);
}

static ldpb_client *new_client(const char *url, const char *key, const char *ledger)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = url;
    ldpb_err err = ldpb_client_opts_load_server_key(&o, key);
    if (err)
        die("the server key", err, NULL);
    o.ledger_path = ledger;
    o.lifetime_budget = 1e6;
    o.per_report_cap = 2.0;
    o.epsilon_cap = 2.0;
    ldpb_client *c = NULL;
    if ((err = ldpb_client_new(&c, &o)) != LDPB_OK)
        die("ldpb_client_new", err, NULL);
    return c;
}

static void cycle(ldpb_client *c, counts *in_report, double *report_cpu)
{
    ldpb_assignment a;
    ldpb_err err = ldpb_client_assign(c, NULL, 0, &a);
    if (err)
        die("assign", err, c);
    counts before = now();
    double t0 = cpu_s(RUSAGE_THREAD);
    if ((err = ldpb_client_report(c, &a, 0.75)) != LDPB_OK)
        die("report", err, c);
    *report_cpu += cpu_s(RUSAGE_THREAD) - t0;
    counts after = now();
    in_report->allocs += after.allocs - before.allocs;
    in_report->bytes += after.bytes - before.bytes;
    in_report->caller += after.caller - before.caller;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: footprint_measure URL SERVER_PUBLIC_KEY_FILE DIR [CYCLES]\n");
        return 2;
    }
    const char *url = argv[1], *key = argv[2], *dir = argv[3];
    long cycles = argc == 5 ? strtol(argv[4], NULL, 10) : 2000;
    char path[512];
    snprintf(path, sizeof path, "%s/measure.ledger", dir);

    long rss0 = status_kb("VmRSS");
    counts c0 = now();
    ldpb_client *c = new_client(url, key, path);
    counts c1 = now();
    printf("client_new_allocs %llu\nclient_new_bytes %llu\n", c1.allocs - c0.allocs,
           c1.bytes - c0.bytes);

    counts warm = {0, 0, 0, 0};
    double ignored = 0;
    for (int i = 0; i < 50; i++) /* connections, first-use buffers */
        cycle(c, &warm, &ignored);

    counts in_report = {0, 0, 0, 0};
    double report_cpu = 0;
    counts l0 = now();
    double p0 = cpu_s(RUSAGE_SELF);
    for (long i = 0; i < cycles; i++)
        cycle(c, &in_report, &report_cpu);
    double p1 = cpu_s(RUSAGE_SELF);
    counts l1 = now();
    long rss1 = status_kb("VmRSS");
    printf("cycles %ld\n", cycles);
    printf("report_allocs_per_report_caller %.3f\n", (double)in_report.caller / (double)cycles);
    printf("report_allocs_per_report_all_threads %.3f\n",
           (double)in_report.allocs / (double)cycles);
    printf("report_bytes_per_report_all_threads %.1f\n", (double)in_report.bytes / (double)cycles);
    printf("cycle_allocs_per_cycle_all_threads %.3f\n",
           (double)(l1.allocs - l0.allocs) / (double)cycles);
    printf("cpu_us_per_cycle_process %.1f\n", (p1 - p0) * 1e6 / (double)cycles);
    printf("cpu_us_per_report_caller_thread %.1f\n", report_cpu * 1e6 / (double)cycles);
    printf("ledger_entries_at_end %zu\n", ldpb_ledger_count(ldpb_client_ledger(c)));
    printf("rss_kb_before_client %ld\nrss_kb_with_client %ld\n", rss0, rss1);

    /* More clients, each with its own ledger file and socket: resident memory per client. */
    enum { EXTRA = 16 };
    ldpb_client *more[EXTRA];
    long r0 = status_kb("VmRSS");
    for (int i = 0; i < EXTRA; i++) {
        snprintf(path, sizeof path, "%s/extra%d.ledger", dir, i);
        more[i] = new_client(url, key, path);
        ldpb_assignment a;
        ldpb_err err = ldpb_client_assign(more[i], NULL, 0, &a);
        if (err || (err = ldpb_client_report(more[i], &a, 0.5)) != LDPB_OK)
            die("extra client", err, more[i]);
    }
    long r1 = status_kb("VmRSS");
    printf("rss_kb_per_extra_client %.1f\n", (double)(r1 - r0) / EXTRA);
    for (int i = 0; i < EXTRA; i++)
        ldpb_client_free(more[i]);

    counts f0 = now();
    ldpb_client_free(c);
    counts f1 = now();
    printf("client_free_frees %llu\n", f1.frees - f0.frees);
    printf("rss_kb_peak %ld\n", status_kb("VmHWM"));

    /* The same cycles with an in-memory ledger: the network, encoding and sealing without the
     * durable write (whose cost grows with the ledger's entries, docs/ledger.md). */
    ldpb_client *mem = new_client(url, key, NULL);
    counts ignored_counts = {0, 0, 0, 0};
    double mem_report_cpu = 0;
    double m0 = cpu_s(RUSAGE_SELF);
    for (long i = 0; i < cycles; i++)
        cycle(mem, &ignored_counts, &mem_report_cpu);
    double m1 = cpu_s(RUSAGE_SELF);
    printf("memory_ledger_cpu_us_per_cycle_process %.1f\n", (m1 - m0) * 1e6 / (double)cycles);
    printf("memory_ledger_cpu_us_per_report_caller_thread %.1f\n",
           mem_report_cpu * 1e6 / (double)cycles);
    ldpb_client_free(mem);
    return 0;
}
