/* Poisoning of the local contextual mode, measured in process (docs/privacy.md, "Poisoning"):
 * honest devices of the contextual environment (ctxsim.h) run the local mode exactly as
 * agg_ctx_ldp_sim_run_trial does, and a fraction of the reports the aggregator receives are
 * crafted instead: values at the admission bound, chosen with knowledge of theta* to turn the
 * model's estimate away from it (the strongest report-level attack a device can make; Cao, Jia &
 * Gong, USENIX Security 2021, study such attacks on LDP protocols). The figure of merit is the
 * honest devices' mean pseudo-regret per report, beside that of uniform play in the same rounds.
 *
 * Streams of trial i: the environment's as ctxsim.h, the devices' tie breaks
 * AGG_SIM_STREAM(i, POLICY, 0), the fast device noise AGG_SIM_STREAM(i, CLIENT, 0). A crafted
 * report takes no draw of any stream, so the honest rounds of two runs that differ only in the
 * attack see the same theta*, decision sets and reward draws. */
#ifndef LDPB_AGG_CTXPOISON_H
#define LDPB_AGG_CTXPOISON_H

#include <stddef.h>
#include <stdint.h>

#include "ctxsim.h"
#include "ldp_linucb.h"

/* What a crafted report holds (A the largest grid value within the admission bound; entries not
 * named are 0):
 *   FLIP         S_xy entry i = -A sign(theta*_i): the estimate theta = V^-1 S_xy turns away
 *                from theta*;
 *   FLIP_SHRINK  FLIP and every S_xx diagonal entry -A: V shrinks (the device's ridge repairs
 *                what goes indefinite), so the turned S_xy weighs more;
 *   FLIP_GROW    FLIP and every S_xx diagonal entry +A: V grows, the width beta ||x||_V^-1 and
 *                the honest part of theta shrink. */
typedef enum agg_ctx_poison_attack {
    AGG_CTX_POISON_FLIP = 0,
    AGG_CTX_POISON_FLIP_SHRINK = 1,
    AGG_CTX_POISON_FLIP_GROW = 2,
} agg_ctx_poison_attack;
#define AGG_CTX_POISON_ATTACKS 3u

/* "flip", "flip-shrink", "flip-grow"; NULL for another value. */
const char *agg_ctx_poison_attack_name(agg_ctx_poison_attack a);

typedef struct agg_ctx_poison_config {
    agg_ldp_linucb_config policy; /* policy.d == env.d; policy.horizon: all reports, crafted too */
    agg_ctx_env_config env;
    double fraction; /* of the reports, crafted: [0, 0.5] */
    agg_ctx_poison_attack attack;
    /* 0: the aggregator admits what ldpb_ctxstat_check admits, and the attacker aims at that
     * bound. > 0: the aggregator admits values up to `admit` (agg_ldp_linucb_new_admitting). */
    double admit;
    /* > 0: the attacker's values are at most this (aimed at another bound, e.g. the former
     * one, to see the present check refuse them); 0: at the bound admitted. */
    double aim;
    /* > 0: a robust aggregate tried and not adopted (docs/privacy.md, "Poisoning"): every value
     * is clipped to +-clip sigma before the sum (the attacker then aims at that). 0: none. */
    double clip;
} agg_ctx_poison_config;

typedef struct agg_ctx_poison_result {
    uint64_t honest, crafted, refused; /* reports: honest, crafted sent, crafted refused */
    double regret;                     /* the honest devices' summed pseudo-regret */
    double uniform;                    /* uniform play's expected regret in the same rounds */
    uint64_t repairs;                  /* models handed out whose V needed the device's ridge */
} agg_ctx_poison_result;

/* One trial. Report t (1-based) is crafted when floor(t f) > floor((t - 1) f), spreading them
 * evenly. An honest device's report refused (impossible but for probability
 * LDPB_CTXSTAT_FALSE_REFUSAL) is an error. */
ldpb_err agg_ctx_poison_run(const agg_ctx_poison_config *cfg,
                            const uint8_t seed[LDPB_RNG_SEED_BYTES], uint64_t trial,
                            agg_ctx_poison_result *res, char errmsg[AGG_ERRMSG_MAX]);

#endif
