/* Fuzz target for policy state restore: the bytes the daemon reads back from its state store at
 * start (and the statefmt.c header every K-armed policy's state opens with), through the policy
 * table's restore op of every policy the daemon can run, the contextual ones included.
 *
 * Input (state_policy.h): a policy name, NUL, a variant byte, then the state's bytes.
 * A restore must either refuse with LDPB_ECORRUPT (or LDPB_ENOMEM) and leave the state as it was
 * (its save bytes unchanged), or accept; an accepted state must save, restore into a fresh policy
 * of the same configuration and save to the same bytes again, describe itself, and go on
 * choosing and observing without a crash. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "state_policy.h"

static void exercise(agg_policy *p)
{
    agg_arm_status arms[STATE_K];
    if (agg_policy_describe(p, arms, STATE_K) != LDPB_OK)
        abort();
    for (size_t a = 0; a < STATE_K; a++)
        if (arms[a].active != 0 && arms[a].active != 1)
            abort();
    if (agg_ctx_policy_is_local(p)) {
        double stats[LDPB_CTXSTAT_VALUES_MAX], shift = 0.0, beta = 0.0;
        size_t n = 0;
        ldpb_err err = agg_ctx_policy_model(p, stats, &n, &shift, &beta);
        if (err == LDPB_OK && n != LDPB_CTXSTAT_VALUES(STATE_D))
            abort();
    }
    state_run r;
    if (state_run_open(&r, 11) != 0)
        abort();
    for (int t = 0; t < 4; t++)
        (void)state_policy_round(p, &r);
    state_run_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size < STATE_NAME_MAX ? size : STATE_NAME_MAX);
    if (!nul || (size_t)(nul - data) + 2 > size)
        return 0;
    const char *name = (const char *)data;
    const uint8_t variant = nul[1];
    const uint8_t *state = nul + 2;
    const size_t len = size - (size_t)(state - data);

    agg_policy *p = state_policy_make(name, variant);
    if (!p)
        return 0;
    size_t before_len = 0, after_len = 0;
    uint8_t *before = state_policy_save(p, &before_len);
    if (!before)
        abort();
    ldpb_err err = agg_policy_restore(p, state, len);
    if (err != LDPB_OK) {
        if (err != LDPB_ECORRUPT && err != LDPB_ENOMEM)
            abort();
        /* a refused state leaves the policy as it was */
        uint8_t *after = state_policy_save(p, &after_len);
        if (!after || after_len != before_len || memcmp(before, after, before_len) != 0)
            abort();
        free(after);
        free(before);
        agg_policy_free(p);
        return 0;
    }
    free(before);

    size_t s1_len = 0, s2_len = 0;
    uint8_t *s1 = state_policy_save(p, &s1_len);
    agg_policy *q = state_policy_make(name, variant);
    if (!s1 || !q || agg_policy_restore(q, s1, s1_len) != LDPB_OK)
        abort();
    uint8_t *s2 = state_policy_save(q, &s2_len);
    if (!s2 || s2_len != s1_len || memcmp(s1, s2, s1_len) != 0)
        abort();
    free(s1);
    free(s2);
    agg_policy_free(q);
    exercise(p);
    agg_policy_free(p);
    return 0;
}
