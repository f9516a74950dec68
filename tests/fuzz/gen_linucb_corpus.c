/* Writes fuzz_linucb_state's seed corpus: for each configuration of linucb_state_cfg.h, the state
 * of a fresh policy and after 5 and 40 (the horizon) observations, each prefixed with the
 * configuration's byte. Usage: gen_linucb_corpus DIR. */
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "linucb_state_cfg.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    gsl_set_error_handler_off();
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {0x6e};
    for (unsigned w = 0; w < FUZZ_LINUCB_CONFIGS; w++) {
        agg_linucb_config c;
        fuzz_linucb_config(w, &c);
        agg_linucb *p = NULL;
        ldpb_rng *rng = NULL;
        agg_noise *noise = NULL;
        if (agg_linucb_new(&p, &c, NULL) != LDPB_OK || ldpb_rng_new_seeded(&rng, seed) != LDPB_OK ||
            agg_noise_new(&noise, AGG_NOISE_SECURE, rng, NULL) != LDPB_OK)
            return 1;
        agg_rand r;
        agg_rand_seed_u64(&r, 2);
        agg_policy_env env = {&r, noise};
        const double x[FUZZ_LINUCB_D] = {0.6, -0.8};
        for (uint64_t t = 0; t <= c.horizon; t++) {
            if (t == 0 || t == 5 || t == c.horizon) {
                size_t len = 0;
                agg_linucb_save(p, NULL, 0, &len);
                uint8_t *buf = malloc(len + 1);
                if (!buf || agg_linucb_save(p, buf + 1, len, &len) != LDPB_OK)
                    return 1;
                buf[0] = (uint8_t)w;
                char path[512];
                snprintf(path, sizeof path, "%s/config%u_t%llu", argv[1], w, (unsigned long long)t);
                FILE *f = fopen(path, "wb");
                if (!f || fwrite(buf, 1, len + 1, f) != len + 1 || fclose(f) != 0)
                    return 1;
                free(buf);
            }
            if (t < c.horizon && agg_linucb_observe(p, &env, x, 0.3 * (double)(t % 3)) != LDPB_OK)
                return 1;
        }
        agg_noise_free(noise);
        ldpb_rng_free(rng);
        agg_linucb_free(p);
    }
    return 0;
}
