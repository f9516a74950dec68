/* The client's CPU per report, without the network: the steps ldpb_client_report takes before
 * the bytes leave (client/src/client.c): look the assignment up in the ledger, privatize through
 * it (charging the budget), encode the Report envelope, make a nonce and seal it with the
 * precomputed shared key. Nanoseconds per report, cumulative by step, for the linear and the
 * Laplace mechanism at epsilon 1, with the system (secure) RNG. The ledger is in memory, as in
 * `ldpb loadgen`'s simulated devices: a device's durable ledger adds a file write and fsync per
 * report (docs/ledger.md), which this does not measure. Prints figures only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ldpb/ledger.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"

#define PER_LEDGER 100000 /* reports per in-memory ledger (its entry limit is 2^20) */
#define ROUNDS     5      /* ledgers per measurement; the median round is printed */
#define ID_BYTES   62     /* an aggregator's assignment id */

typedef enum stage { PRIVATIZE = 1, ENCODE = 2, SEAL = 3 } stage;

static void die(const char *what, ldpb_err err)
{
    fprintf(stderr, "bench_client_report: %s: %s\n", what, ldpb_strerror(err));
    exit(1);
}

/* One ledger's worth of reports up to `upto`; returns ns per report. */
static double run(const ldpb_mech *mech, ldpb_rng *rng, const ldpb_seal_key *key,
                  const ldpb_keypair *kp, stage upto, uint64_t *sink)
{
    ldpb_ledger_opts lo;
    ldpb_ledger_opts_init(&lo);
    lo.lifetime_budget = LDPB_LEDGER_BUDGET_MAX;
    lo.per_report_cap = LDPB_EPSILON_MAX;
    ldpb_ledger *ledger = NULL;
    ldpb_err err = ldpb_ledger_open(&ledger, NULL, &lo);
    if (err)
        die("ldpb_ledger_open", err);
    static uint8_t pt[LDPB_PLAINTEXT_MAX], frame[LDPB_FRAME_MAX];
    uint8_t id[ID_BYTES];
    ldpb_rng_bytes(rng, id, sizeof id);
    int is_bit = ldpb_mech_is_bernoulli(mech);
    double t0 = bench_now_ns();
    for (uint64_t i = 0; i < PER_LEDGER; i++) {
        memcpy(id, &i, sizeof i); /* a new assignment id per report */
        ldpb_ledger_entry e;
        if (ldpb_ledger_lookup(ledger, id, sizeof id, &e) == LDPB_OK)
            die("a fresh id was found in the ledger", LDPB_ESTATE);
        double reward = (double)(i & 1023) / 1023.0;
        err = ldpb_ledger_privatize(ledger, id, sizeof id, mech, rng, reward, &e);
        if (err)
            die("ldpb_ledger_privatize", err);
        if (upto < ENCODE) {
            *sink += (uint64_t)e.value;
            continue;
        }
        Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
        rep.assignment_id.data = id;
        rep.assignment_id.len = sizeof id;
        rep.mechanism = (Ldpb__V1__Mechanism)ldpb_mech_get_kind(mech);
        rep.epsilon = 1.0;
        if (is_bit) {
            rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
            rep.bit = e.value != 0.0;
        } else {
            rep.value_case = LDPB__V1__REPORT__VALUE_REAL;
            rep.real = e.value;
        }
        Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
        env.protocol_version = LDPB_PROTOCOL_VERSION;
        env.has_request_id = 1;
        env.request_id = i;
        env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
        env.report = &rep;
        size_t pt_len = 0;
        char detail[LDPB_DETAIL_BYTES];
        err = ldpb_envelope_encode(&env, pt, sizeof pt, &pt_len, detail);
        if (err)
            die("ldpb_envelope_encode", err);
        if (upto < SEAL) {
            *sink += pt[pt_len - 1];
            continue;
        }
        uint8_t nonce[LDPB_NONCE_BYTES];
        ldpb_nonce_make(nonce, ldpb_seal_now_ms(), LDPB_DIR_TO_SERVER, rng);
        size_t len = 0;
        err = ldpb_seal_frame(frame, sizeof frame, &len, kp->pk, key, nonce, pt, pt_len);
        if (err)
            die("ldpb_seal_frame", err);
        *sink += frame[len - 1];
    }
    double ns = (bench_now_ns() - t0) / PER_LEDGER;
    ldpb_ledger_close(ledger);
    return ns;
}

int main(void)
{
    ldpb_rng *rng = NULL;
    ldpb_err err = ldpb_rng_new_system(&rng);
    if (err)
        die("ldpb_rng_new_system", err);
    ldpb_keypair client, server;
    ldpb_seal_key key;
    if ((err = ldpb_keypair_generate(&client)) || (err = ldpb_keypair_generate(&server)) ||
        (err = ldpb_seal_key_derive(&key, server.pk, client.sk)))
        die("keys", err);
    printf("# ldpb client CPU per report (ns), without the network; system RNG, epsilon 1,\n"
           "# in-memory ledger (a durable one adds a file write + fsync per report),\n"
           "# precomputed shared key (crypto_box_easy_afternm); median of %d x %d reports\n\n",
           ROUNDS, PER_LEDGER);
    printf("%-10s %12s %12s %12s\n", "mechanism", "privatize", "+ encode", "+ seal");
    static const struct {
        const char *name;
        ldpb_mech_kind kind;
    } mechs[] = {{"linear", LDPB_MECH_LINEAR}, {"laplace", LDPB_MECH_LAPLACE}};
    uint64_t sink = 0;
    for (size_t m = 0; m < sizeof mechs / sizeof mechs[0]; m++) {
        ldpb_mech_opts o;
        ldpb_mech_opts_init(&o, mechs[m].kind, 1.0);
        ldpb_mech *mech = NULL;
        if ((err = ldpb_mech_new(&mech, &o)))
            die("ldpb_mech_new", err);
        double med[3];
        for (stage s = PRIVATIZE; s <= SEAL; s++) {
            double t[ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                t[r] = run(mech, rng, &key, &client, s, &sink);
            qsort(t, ROUNDS, sizeof t[0], bench_cmp_double);
            med[s - 1] = t[ROUNDS / 2];
        }
        printf("%-10s %12.0f %12.0f %12.0f\n", mechs[m].name, med[0], med[1], med[2]);
        ldpb_mech_free(mech);
    }
    printf("\n# (checksum %llu)\n", (unsigned long long)(sink & 0xff));
    ldpb_seal_key_wipe(&key);
    ldpb_keypair_wipe(&client);
    ldpb_keypair_wipe(&server);
    ldpb_rng_free(rng);
    return 0;
}
