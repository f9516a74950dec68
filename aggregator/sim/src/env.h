/* Simulated bandit environments (docs/sim.md): K arms, each with a reward law on [0,1], its
 * true mean (the simulator computes pseudo-regret from these, never from privatized values), and
 * a sampler drawing from an agg_rand the caller owns (give the environment its own stream so
 * every algorithm faces the same rewards).
 *
 * Laws: Bernoulli(p); Beta(a, b); two-point (lo or hi, each with probability 1/2); uniform on
 * [lo, hi]; all supported inside [0,1] (the reward domain of every policy and mechanism).
 *
 * List syntax, for command lines and config files: comma-separated arms, each a law name and its
 * parameters separated by ':', optionally followed by '*N' to repeat the arm N times:
 *     bernoulli:P   beta:A:B   twopoint:LO:HI   uniform:LO:HI
 *     "bernoulli:0.9,beta:4:1*5,twopoint:0.4:1*5,bernoulli:0.6*5,uniform:0:1*4"
 * Whitespace around items and numbers is allowed. Presets (agg_env_preset): "mixed" (the 20-arm
 * JZL23/RZLS20 instance), "mixed-bernoulli" (its means, every arm Bernoulli: RZLS20's
 * "Bern" type), and "c1".."c4" (the Bernoulli instances of Sajed-Sheffet 2019, any K >= 2).
 *
 * An environment is immutable after creation and may be shared by threads, each sampling with
 * its own agg_rand. */
#ifndef LDPB_AGG_ENV_H
#define LDPB_AGG_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "policy.h"
#include "rand.h"

typedef enum agg_law_kind {
    AGG_LAW_BERNOULLI = 1, /* a = p in [0,1] */
    AGG_LAW_BETA = 2,      /* a, b > 0 (finite) */
    AGG_LAW_TWOPOINT = 3,  /* a = lo, b = hi, 0 <= lo <= hi <= 1, each with probability 1/2 */
    AGG_LAW_UNIFORM = 4,   /* a = lo, b = hi, 0 <= lo <= hi <= 1 */
} agg_law_kind;

typedef struct agg_law {
    agg_law_kind kind;
    double a, b;
} agg_law;

/* The Sajed-Sheffet instances (Sajed & Sheffet 2019, sec. 5); every arm is Bernoulli. */
typedef enum agg_ss19_setting {
    AGG_SS19_C1 = 1, /* 0.75 then K-1 arms of 0.7 */
    AGG_SS19_C2 = 2, /* 0.75 - 0.5 (i-1)/(K-1) */
    AGG_SS19_C3 = 3, /* 0.25 + 0.5 (i-K)^2/(K-1)^2 */
    AGG_SS19_C4 = 4, /* 0.75 - 0.5 (i-1)^2/(K-1)^2 */
} agg_ss19_setting;

/* Largest K an environment accepts (as policies, AGG_POLICY_K_MAX). */
#define AGG_ENV_K_MAX AGG_POLICY_K_MAX

typedef struct agg_env agg_env;

/* Builds an environment from k laws (copied). Refuses with a message naming the arm and the
 * bound: LDPB_EINVAL for a NULL argument, an unknown kind or a NaN parameter; LDPB_ERANGE for k
 * outside [1, AGG_ENV_K_MAX] or a parameter out of range; LDPB_ENOMEM. errmsg may be NULL. Free
 * with agg_env_free(). */
ldpb_err agg_env_new(agg_env **out, const agg_law *laws, uint32_t k, char errmsg[AGG_ERRMSG_MAX]);

/* Parses the list syntax above. LDPB_EINVAL with the 1-based item number and the offending text
 * for a syntax error (unknown law, missing or extra parameter, bad number, bad repeat count);
 * range errors as agg_env_new. */
ldpb_err agg_env_parse(agg_env **out, const char *spec, char errmsg[AGG_ERRMSG_MAX]);

/* A named preset: "mixed" and "mixed-bernoulli" have 20 arms (k must be 0 or 20); "c1".."c4"
 * take k >= 2 (0 means the paper's default K = 5). LDPB_EINVAL for an unknown name, LDPB_ERANGE
 * for an unsupported k. */
ldpb_err agg_env_preset(agg_env **out, const char *name, uint32_t k, char errmsg[AGG_ERRMSG_MAX]);

/* The means of setting s at K = k (>= 2) into means[0..k-1], arm 1 first (the best). LDPB_EINVAL
 * for an unknown setting or NULL, LDPB_ERANGE for k < 2. */
ldpb_err agg_env_ss19_means(agg_ss19_setting s, uint32_t k, double *means);

/* Accepts NULL. */
void agg_env_free(agg_env *env);

uint32_t agg_env_arms(const agg_env *env);
/* The true mean of arm `arm` (< k), and the largest mean. */
double agg_env_mean(const agg_env *env, uint32_t arm);
double agg_env_best_mean(const agg_env *env);
const agg_law *agg_env_law(const agg_env *env, uint32_t arm);

/* One reward of arm `arm` (< k) in [0,1], drawn from `r`. */
double agg_env_sample(const agg_env *env, uint32_t arm, agg_rand *r);

#endif
