/* The smallest app that takes part in an experiment: one assignment, one report. Linked
 * statically against libldpb-client.a by scripts/footprint.sh, which compares its stripped size
 * with baseline.c's (the same program without the library) to get what the client adds. It is
 * built and sized, not run. */
#include <stdio.h>

#include "ldpb/ldpb.h"

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    ldpb_client_opts opts;
    ldpb_client_opts_init(&opts);
    opts.server_url = argv[1];
    if (ldpb_client_opts_load_server_key(&opts, argv[2]) != LDPB_OK)
        return 1;
    opts.ledger_path = argv[3];
    ldpb_client *c = NULL;
    if (ldpb_client_new(&c, &opts) != LDPB_OK)
        return 1;
    ldpb_assignment a;
    ldpb_err err = ldpb_client_assign(c, NULL, 0, &a);
    if (!err)
        err = ldpb_client_report(c, &a, 1.0);
    if (err)
        fprintf(stderr, "%s\n", ldpb_strerror(err));
    ldpb_client_free(c);
    return err ? 1 : 0;
}
