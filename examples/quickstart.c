/* Quick start for an app embedding ldpb: privatize one observed reward for one assignment,
 * charging the device's privacy ledger, and see that a retry returns the very same report.
 *
 *   quickstart LEDGER_FILE [REWARD]
 *
 * Build it against the client library as the CMake target `example_quickstart` does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ldpb/ldpb.h"

static int fail(const char *what, ldpb_err err)
{
    fprintf(stderr, "quickstart: %s: %s\n", what, ldpb_strerror(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: quickstart LEDGER_FILE [REWARD]\n");
        return 2;
    }
    double reward = argc == 3 ? strtod(argv[2], NULL) : 4.0; /* e.g. a rating on a 1..5 scale */

    /* The device's secure generator: privacy noise must never come from a seeded PRNG. */
    ldpb_rng *rng = NULL;
    ldpb_err err = ldpb_rng_new_system(&rng);
    if (err)
        return fail("rng", err);

    /* The mechanism the aggregator asked for: linear Bernoulli (CTB) at epsilon 1, with rewards
     * on a 1..5 scale rescaled to [0,1] on the device. */
    ldpb_mech_opts mo;
    ldpb_mech_opts_init(&mo, LDPB_MECH_LINEAR, 1.0);
    mo.range_lo = 1.0;
    mo.range_hi = 5.0;
    ldpb_mech *mech = NULL;
    if ((err = ldpb_mech_new(&mech, &mo)))
        return fail("mechanism", err);

    /* The ledger: at most epsilon 10 over the device's lifetime, 1 per report. */
    ldpb_ledger_opts lo;
    ldpb_ledger_opts_init(&lo);
    lo.lifetime_budget = 10.0;
    lo.per_report_cap = 1.0;
    ldpb_ledger *ledger = NULL;
    if ((err = ldpb_ledger_open(&ledger, argv[1], &lo)))
        return fail("ledger", err);

    const char *assignment = "assignment-0001"; /* chosen by the aggregator */
    ldpb_ledger_entry first, retry;
    err = ldpb_ledger_privatize(ledger, (const uint8_t *)assignment, strlen(assignment), mech, rng,
                                reward, &first);
    if (err == LDPB_OK) /* a retry of the same assignment must not draw fresh noise */
        err = ldpb_ledger_privatize(ledger, (const uint8_t *)assignment, strlen(assignment), mech,
                                    rng, reward, &retry);
    if (err) {
        ldpb_ledger_close(ledger);
        return fail("privatize", err);
    }
    printf("report for %s: %g (epsilon charged %.6f)\n", assignment, first.value, first.epsilon);
    printf("retry returns the same report: %s\n", first.value == retry.value ? "yes" : "NO");
    printf("ledger: spent %.6f of %.6f\n", ldpb_ledger_spent(ledger),
           ldpb_ledger_get_opts(ledger).lifetime_budget);

    ldpb_ledger_close(ledger);
    ldpb_mech_free(mech);
    ldpb_rng_free(rng);
    return first.value == retry.value ? 0 : 1;
}
