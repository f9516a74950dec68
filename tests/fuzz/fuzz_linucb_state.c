/* Fuzz target for joint-DP LinUCB's saved state (agg_linucb_restore), which the daemon reads back
 * from its store: untrusted bytes, since a damaged or forged file must be refused, never crash
 * the policy or leave it in a state whose later use overflows or goes non-finite.
 *
 * Input: byte 0 picks one of linucb_state_cfg.h's configurations, the rest is the state. A refused
 * state must leave the policy as it was (its save is unchanged). An accepted one must save back to
 * the same bytes, then release statistics (finite for the grid release), choose an action in
 * range or refuse with LDPB_ESTATE and, if the horizon allows, observe a round; the state after
 * that must again restore into a fresh policy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "fuzz_target.h"
#include "linucb_state_cfg.h"

static uint8_t *save(const agg_linucb *p, size_t *len)
{
    *len = 0;
    if (agg_linucb_save(p, NULL, 0, len) != LDPB_ERANGE)
        abort();
    uint8_t *buf = malloc(*len);
    if (!buf || agg_linucb_save(p, buf, *len, len) != LDPB_OK)
        abort();
    return buf;
}

static void use(agg_linucb *p, const agg_linucb_config *c, const uint8_t *in, size_t n)
{
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {0x5e};
    ldpb_rng *rng = NULL;
    agg_noise *noise = NULL;
    if (ldpb_rng_new_seeded(&rng, seed) != LDPB_OK ||
        agg_noise_new(&noise, AGG_NOISE_SECURE, rng, NULL) != LDPB_OK)
        abort();
    agg_rand r;
    agg_rand_seed_u64(&r, 1);
    agg_policy_env env = {&r, noise};
    size_t len;
    uint8_t *again = save(p, &len);
    if (len != n || memcmp(again, in, n) != 0)
        abort();
    free(again);
    /* the grid release's integers are bounded on restore, so its release is finite; the float
     * slots of a forged state may be huge, and then choose refuses (LDPB_ESTATE) */
    double v[FUZZ_LINUCB_D * FUZZ_LINUCB_D], u[FUZZ_LINUCB_D];
    if (agg_linucb_release(p, &env, v, u) != LDPB_OK)
        abort();
    for (size_t i = 0; c->exact && i < FUZZ_LINUCB_D * FUZZ_LINUCB_D; i++)
        if (!isfinite(v[i]) || (i < FUZZ_LINUCB_D && !isfinite(u[i])))
            abort();
    const double x[2 * FUZZ_LINUCB_D] = {1.0, 0.0, 0.6, -0.8};
    uint32_t arm = 99, ties = 0;
    ldpb_err err = agg_linucb_choose(p, &env, x, 2, &arm, &ties);
    if (err == LDPB_OK && (arm >= 2 || ties < 1 || ties > 2))
        abort();
    if (err != LDPB_OK && err != LDPB_ESTATE)
        abort();
    err = agg_linucb_observe(p, &env, x, 0.5);
    if (err != LDPB_OK && !(err == LDPB_ESTATE && agg_linucb_rounds(p) >= c->horizon))
        abort();
    uint8_t *after = save(p, &len);
    agg_linucb *q = NULL;
    if (agg_linucb_new(&q, c, NULL) != LDPB_OK || agg_linucb_restore(q, after, len) != LDPB_OK)
        abort();
    agg_linucb_free(q);
    free(after);
    agg_noise_free(noise);
    ldpb_rng_free(rng);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gsl_set_error_handler_off(); /* linucb.h: every GSL status is checked instead */
    if (size < 1)
        return 0;
    agg_linucb_config c;
    fuzz_linucb_config(data[0], &c);
    agg_linucb *p = NULL;
    if (agg_linucb_new(&p, &c, NULL) != LDPB_OK)
        abort();
    size_t len0;
    uint8_t *fresh = save(p, &len0);
    ldpb_err err = agg_linucb_restore(p, data + 1, size - 1);
    if (err == LDPB_OK) {
        use(p, &c, data + 1, size - 1);
    } else {
        size_t len1;
        uint8_t *kept = save(p, &len1);
        if (err != LDPB_ECORRUPT || len1 != len0 || memcmp(kept, fresh, len0) != 0)
            abort();
        free(kept);
    }
    free(fresh);
    agg_linucb_free(p);
    return 0;
}
