/* One device in two experiments of the same aggregator: one privacy ledger, one lifetime budget
 * for both. The device takes turns between the experiments, reporting a reward in each, until
 * the next assignment, in whichever experiment asks, is refused with LDPB_EBUDGET.
 *
 *   two_experiments URL SERVER_PUBLIC_KEY_FILE LEDGER_FILE BUDGET EXPERIMENT_A EXPERIMENT_B
 *
 * BUDGET is the ledger's lifetime epsilon when the file is created (an existing ledger keeps
 * its own). Exits 0 once the budget has run out, as it must; 1 on any other failure. */
#include <stdio.h>
#include <stdlib.h>

#include "ldpb/ldpb.h"

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: two_experiments URL SERVER_PUBLIC_KEY_FILE LEDGER_FILE BUDGET "
                        "EXPERIMENT_A EXPERIMENT_B\n");
        return 2;
    }
    const char *exps[2] = {argv[5], argv[6]};
    ldpb_client_opts opts;
    ldpb_client_opts_init(&opts);
    opts.server_url = argv[1];
    ldpb_err err = ldpb_client_opts_load_server_key(&opts, argv[2]);
    if (err) {
        fprintf(stderr, "two_experiments: %s: %s\n", argv[2], ldpb_strerror(err));
        return 1;
    }
    opts.ledger_path = argv[3];
    opts.lifetime_budget = strtod(argv[4], NULL);
    opts.per_report_cap = 1.0;
    opts.epsilon_cap = 1.0;
    opts.timeout_ms = 2000;

    ldpb_client *client = NULL;
    if ((err = ldpb_client_new(&client, &opts)) != LDPB_OK) {
        fprintf(stderr, "two_experiments: cannot create the client: %s\n", ldpb_strerror(err));
        return 1;
    }
    const ldpb_ledger *ledger = ldpb_client_ledger(client);
    printf("device ledger %s: lifetime budget epsilon %g, one budget for every experiment\n",
           argv[3], ldpb_ledger_get_opts(ledger).lifetime_budget);
    unsigned reports[2] = {0, 0};
    for (unsigned turn = 0;; turn++) {
        const char *exp = exps[turn % 2];
        ldpb_assignment a;
        err = ldpb_client_assign_in(client, exp, NULL, 0, &a);
        if (err == LDPB_EBUDGET) {
            printf("  %-12s assignment refused: %s (%s)\n", exp, ldpb_errname(err),
                   ldpb_client_errmsg(client));
            printf("budget spent: epsilon %g of %g, by %u reports in %s and %u in %s\n",
                   ldpb_ledger_spent(ledger), ldpb_ledger_get_opts(ledger).lifetime_budget,
                   reports[0], exps[0], reports[1], exps[1]);
            ldpb_client_free(client);
            return 0;
        }
        if (err == LDPB_OK)
            err = ldpb_client_report(client, &a, a.arm == 0 ? 1.0 : 0.0);
        if (err) {
            fprintf(stderr, "two_experiments: %s: %s: %s\n", exp, ldpb_strerror(err),
                    ldpb_client_errmsg(client));
            ldpb_client_free(client);
            return 1;
        }
        reports[turn % 2]++;
        printf("  %-12s arm %u reported at epsilon %g: spent %g, %g left\n", exp, (unsigned)a.arm,
               a.epsilon, ldpb_ledger_spent(ledger), ldpb_ledger_remaining(ledger));
    }
}
