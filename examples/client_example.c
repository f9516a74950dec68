/* An app taking part in an experiment: ask the aggregator which arm (variant) to use, act on it,
 * observe the reward, and report it. The reward is privatized on this device; only the privatized
 * value is sent.
 *
 *   client_example URL SERVER_PUBLIC_KEY_FILE [LEDGER_FILE]
 *
 * URL is the aggregator's endpoint (tcp://host:port or ipc://path) and SERVER_PUBLIC_KEY_FILE the
 * aggregator.pub that `ldpb keygen` wrote. LEDGER_FILE is the device's privacy ledger; a real app
 * must always give one (here it is optional so the example can run anywhere, and without it the
 * ledger lives in memory and forgets every spend at exit).
 *
 * Build it against the client library as the CMake target `example_client` does. */
#include <stdio.h>
#include <string.h>

#include "ldpb/ldpb.h"

/* Stands in for the app's real work: show variant `arm`, then measure how it went (here: a rating
 * on a 1..5 scale that favours arm 1). */
static double show_variant_and_observe_reward(uint32_t arm)
{
    return arm == 1 ? 4.5 : 3.0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: client_example URL SERVER_PUBLIC_KEY_FILE [LEDGER_FILE]\n");
        return 2;
    }

    ldpb_client_opts opts;
    ldpb_client_opts_init(&opts);
    opts.server_url = argv[1];
    ldpb_err err = ldpb_client_opts_load_server_key(&opts, argv[2]);
    if (err) {
        fprintf(stderr, "client_example: %s: %s\n", argv[2], ldpb_strerror(err));
        return 1;
    }
    opts.ledger_path = argc == 4 ? argv[3] : NULL;
    opts.lifetime_budget = 50.0; /* used when the ledger is created */
    opts.per_report_cap = 2.0;
    opts.epsilon_cap = 2.0; /* refuse any assignment asking for more */
    opts.reward_lo = 1.0;   /* ratings are 1..5: rescaled to [0,1] on the device */
    opts.reward_hi = 5.0;
    opts.timeout_ms = 2000; /* per attempt */
    opts.max_attempts = 3;

    ldpb_client *client = NULL;
    if ((err = ldpb_client_new(&client, &opts)) != LDPB_OK) {
        fprintf(stderr, "client_example: cannot create the client: %s\n", ldpb_strerror(err));
        return 1;
    }

    /* Which variant? The context vector is optional (contextual policies use it). */
    const double context[2] = {1.0, 0.25};
    ldpb_assignment a;
    err = ldpb_client_assign(client, context, 2, &a);
    if (err) {
        /* LDPB_EBUDGET: this device will not take part (cap or budget); use the default variant. */
        fprintf(stderr, "client_example: assign: %s: %s\n", ldpb_strerror(err),
                ldpb_client_errmsg(client));
        ldpb_client_free(client);
        return 1;
    }
    printf("assigned arm %u (mechanism %s, epsilon %g, propensity %g)\n", (unsigned)a.arm,
           ldpb_client_mech_name(a.mechanism), a.epsilon, a.propensity);

    double reward = show_variant_and_observe_reward(a.arm);

    /* Privatized, charged to the ledger and sent. On LDPB_ETIMEDOUT the app may simply call
     * ldpb_client_report again later with the same assignment: the same value is resent. */
    err = ldpb_client_report(client, &a, reward);
    if (err) {
        fprintf(stderr, "client_example: report: %s: %s\n", ldpb_strerror(err),
                ldpb_client_errmsg(client));
        ldpb_client_free(client);
        return 1;
    }
    const ldpb_ledger *ledger = ldpb_client_ledger(client);
    printf("reported; privacy spent %.6f, %.6f left\n", ldpb_ledger_spent(ledger),
           ldpb_ledger_remaining(ledger));

    ldpb_client_free(client);
    return 0;
}
