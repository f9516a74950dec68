/* Adversaries for the simulator (Tossou & Dimitrakakis 2017, Sec. 4): every gain g_{i,t} in [0,1]
 * is a function of the trial's adversary stream, the round and the arm only, never of what the
 * learner does, so every algorithm of a trial plays the same game. A game is generated round by
 * round from its own agg_rand, drawing the same numbers in the same order whatever is played.
 *
 * Kinds, arms numbered from 1 as in the paper (index 0 is arm 1); every constant is a parameter:
 *   deterministic    arm 1 gains det_const every round, arm 2 gains 1 on even rounds, arm 3
 *                    gains 1 on rounds that are multiples of det_period, the others det_rest
 *   stochastic       arm 1 i.i.d. Bernoulli(stoch_first), the others Bernoulli(stoch_rest)
 *   fully-oblivious  each round, arm 1 draws q ~ U[1/2, 1/2 + 2 eps'] and the others
 *                    q ~ U[1/2 - eps', 1/2 + eps'], then the gain ~ Bernoulli(q) (eps' = obl_eps)
 *   oblivious        the fully oblivious gains on rounds that are multiples of obl_period (and
 *                    at the start); every other round repeats each arm's last gain
 *   switching        Dekel, Ding, Koren and Peres 2014, Fig. 1: a uniformly drawn best arm chi,
 *                    W_0 = 0, W_t = W_{rho(t)} + N(0, sigma^2) with rho(t) = t - 2^delta(t)
 *                    (delta(t): the exponent of the largest power of 2 dividing t), loss
 *                    clip(W_t + 1/2 - eps_g [i = chi], 0, 1) and gain 1 - loss. A learner that
 *                    switches arms gains 0 that round (the simulator applies it: policy regret).
 * The switching defaults are sigma = 1/(9 log2 T) and eps_g = K^(1/3) T^(-1/3) / (9 log2 T). */
#ifndef LDPB_AGG_ADVERSARY_H
#define LDPB_AGG_ADVERSARY_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "policy.h"
#include "rand.h"

typedef enum agg_adv_kind {
    AGG_ADV_DETERMINISTIC = 1,
    AGG_ADV_STOCHASTIC = 2,
    AGG_ADV_FULLY_OBLIVIOUS = 3,
    AGG_ADV_OBLIVIOUS = 4,
    AGG_ADV_SWITCHING = 5,
} agg_adv_kind;

typedef struct agg_adv_params {
    agg_adv_kind kind;
    uint32_t k;          /* >= 2 */
    uint64_t horizon;    /* T >= 2; the switching defaults depend on it */
    double det_const;    /* 0.38 */
    uint64_t det_period; /* 3 */
    double det_rest;     /* 0 */
    double stoch_first;  /* 0.55 */
    double stoch_rest;   /* 0.5 */
    double obl_eps;      /* 0.05, in (0, 1/4] so every q stays in [0, 1] */
    uint64_t obl_period; /* 200 */
    double sw_sigma;     /* 0: 1/(9 log2 T) */
    double sw_eps;       /* 0: K^(1/3) T^(-1/3) / (9 log2 T) */
} agg_adv_params;

/* The defaults above for kind, k and horizon. */
void agg_adv_params_init(agg_adv_params *p, agg_adv_kind kind, uint32_t k, uint64_t horizon);

/* Parses "deterministic", "stochastic", "fully-oblivious", "oblivious", "switching"; 0 if none. */
agg_adv_kind agg_adv_kind_parse(const char *name);
const char *agg_adv_kind_name(agg_adv_kind kind);

typedef struct agg_adv agg_adv;

/* Checks and copies the parameters (defaults resolved). LDPB_EINVAL / LDPB_ERANGE with a message
 * naming the field and its bound ("adversary stochastic: stoch_first 1.5 outside [0, 1]"). */
ldpb_err agg_adv_new(agg_adv **out, const agg_adv_params *p, char errmsg[AGG_ERRMSG_MAX]);
void agg_adv_free(agg_adv *a);
uint32_t agg_adv_arms(const agg_adv *a);
/* The resolved parameters. */
const agg_adv_params *agg_adv_get_params(const agg_adv *a);
/* 1 when a switch of arm costs the learner its gain that round. */
int agg_adv_switch_costs(const agg_adv *a);

/* One game (one trial): draws from `r` (copied; seed it from the trial's adversary stream). */
typedef struct agg_adv_game agg_adv_game;
ldpb_err agg_adv_game_new(agg_adv_game **out, const agg_adv *a, const agg_rand *r);
void agg_adv_game_free(agg_adv_game *g);
/* Writes the gains of the next round (1, 2, ...) into gains[0..k-1]. */
void agg_adv_game_next(agg_adv_game *g, double *gains);

#endif
