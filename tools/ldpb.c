/* The ldpb command: a thin dispatcher to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef LDPB_VERSION_STRING
#define LDPB_VERSION_STRING "unknown"
#endif

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"privatize", cmd_privatize, "privatize rewards with an LDP mechanism"},
    {"audit", cmd_audit, "empirically audit a mechanism's privacy and fidelity"},
    {"keygen", cmd_keygen, "generate aggregator and client key files"},
    {"sim", cmd_sim, "simulate bandit algorithms: regret curves, summary, plots"},
    {"status", cmd_status, "print an aggregator's policy, totals and per-arm table"},
    {"loadgen", cmd_loadgen, "drive an aggregator with simulated devices; measure and learn"},
    {"relay", cmd_relay, "forward device frames to an aggregator in batches"},
    {"experiment", cmd_experiment, "create, list, show or stop an aggregator's experiments"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ldpb <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'ldpb <command> --help' for a command's options.\n"
                 "'ldpb --version' prints the version.\n");
}

/* A help text that never reached its reader is a failure, e.g. `ldpb --help > /dev/full`. */
static int finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ldpb: cannot write to standard output\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return finish_stdout();
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ldpb %s\n", LDPB_VERSION_STRING);
        return finish_stdout();
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ldpb: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
