/* The C client's CPU per report against a running aggregator, the baseline of
 * bench/python_bench.py's client figure: one ldpb_client (in-memory ledger) reports N rewards,
 * either as assign + report (two round trips) or report_and_assign (one), and prints the process
 * CPU time (user + system, getrusage) and wall time per report. Prints figures only.
 *
 *   bench_client_loop URL SERVER_KEY_FILE N two-trips|report-and-assign */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "ldpb/client.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static void die(const char *what, ldpb_err err, const ldpb_client *c)
{
    fprintf(stderr, "bench_client_loop: %s: %s%s%s\n", what, ldpb_strerror(err), c ? ": " : "",
            c ? ldpb_client_errmsg(c) : "");
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[4], "two-trips") && strcmp(argv[4], "report-and-assign"))) {
        fprintf(stderr, "usage: %s URL SERVER_KEY_FILE N two-trips|report-and-assign\n", argv[0]);
        return 2;
    }
    long n = strtol(argv[3], NULL, 10);
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "bench_client_loop: N in [1, 1e6]\n");
        return 2;
    }
    int one_trip = strcmp(argv[4], "report-and-assign") == 0;
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    o.server_url = argv[1];
    ldpb_err err = ldpb_client_opts_load_server_key(&o, argv[2]);
    if (err)
        die("server key", err, NULL);
    o.lifetime_budget = LDPB_LEDGER_BUDGET_MAX;
    ldpb_client *c = NULL;
    if ((err = ldpb_client_new(&c, &o)) != LDPB_OK)
        die("ldpb_client_new", err, NULL);
    ldpb_assignment a, next;
    if ((err = ldpb_client_assign(c, NULL, 0, &a)) != LDPB_OK)
        die("assign", err, c);
    double cpu0 = cpu_s(), t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        double reward = (double)(i & 1);
        if (one_trip) {
            int acked = 0;
            if ((err = ldpb_client_report_and_assign(c, &a, reward, NULL, 0, &next, &acked)))
                die("report_and_assign", err, c);
            a = next;
        } else {
            if ((err = ldpb_client_report(c, &a, reward)) != LDPB_OK)
                die("report", err, c);
            if ((err = ldpb_client_assign(c, NULL, 0, &a)) != LDPB_OK)
                die("assign", err, c);
        }
    }
    double cpu = cpu_s() - cpu0, wall = (bench_now_ns() - t0) * 1e-9;
    printf("%s\t%ld\tcpu_us_per_report\t%.2f\twall_us_per_report\t%.2f\n", argv[4], n,
           1e6 * cpu / (double)n, 1e6 * wall / (double)n);
    ldpb_client_free(c);
    return 0;
}
