/* The C side of python/tests/test_contextual.py: drives one contextual policy of libldpb-sim's
 * public API (ldpb_ctxpolicy_*) through the rounds read from stdin and prints its decisions and
 * final state, for the test to compare with ldpb.ContextualPolicy on the same input.
 *
 * Input (whitespace-separated text): NAME D K T SEED, then T rounds of K*D features (row-major)
 * followed by K rewards (the reward of each action; the chosen one's is observed).
 * Output: one line "ARM TIES" per round, then "state HEX" of ldpb_ctxpolicy_save. */
#include <stdio.h>
#include <stdlib.h>

#include "ldpb/sim.h"

#define MAX_VALUES 4096

int main(void)
{
    char name[64], seed[64];
    unsigned d, k;
    unsigned long long T;
    if (scanf("%63s %u %u %llu %63s", name, &d, &k, &T, seed) != 5 || d == 0 || k == 0 ||
        (size_t)k * d + k > MAX_VALUES) {
        fprintf(stderr, "ctxpolicy_trace: bad header\n");
        return 2;
    }
    ldpb_ctxpolicy_params pp;
    ldpb_ctxpolicy_params_init(&pp);
    pp.d = d;
    pp.horizon = T;
    char msg[256];
    ldpb_ctxpolicy *p = NULL;
    ldpb_err err = ldpb_ctxpolicy_new(&p, name, &pp, seed, msg, sizeof msg);
    if (err) {
        fprintf(stderr, "ctxpolicy_trace: %s\n", msg);
        return 1;
    }
    static double v[MAX_VALUES];
    for (unsigned long long t = 0; t < T && !err; t++) {
        for (size_t i = 0; i < (size_t)k * d + k; i++)
            if (scanf("%lf", &v[i]) != 1) {
                fprintf(stderr, "ctxpolicy_trace: short input in round %llu\n", t);
                ldpb_ctxpolicy_free(p);
                return 2;
            }
        uint32_t arm = 0, ties = 0;
        err = ldpb_ctxpolicy_choose(p, v, k, &arm, &ties);
        if (!err)
            err = ldpb_ctxpolicy_observe(p, v + (size_t)arm * d, v[(size_t)k * d + arm]);
        printf("%u %u\n", (unsigned)arm, (unsigned)ties);
    }
    size_t len = 0;
    if (!err && ldpb_ctxpolicy_save(p, NULL, 0, &len) == LDPB_ERANGE) {
        unsigned char *buf = malloc(len);
        err = buf ? ldpb_ctxpolicy_save(p, buf, len, &len) : LDPB_ENOMEM;
        printf("state ");
        for (size_t i = 0; !err && i < len; i++)
            printf("%02x", buf[i]);
        printf("\n");
        free(buf);
    }
    ldpb_ctxpolicy_free(p);
    if (err) {
        fprintf(stderr, "ctxpolicy_trace: error %d\n", (int)err);
        return 1;
    }
    return 0;
}
