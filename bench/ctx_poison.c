/* Poisoning of the local contextual mode (ldp-linucb-gaussian), before and after the admission
 * bound of ldpb_ctxstat_check was tightened (docs/privacy.md, "Poisoning"; docs/derivations.md
 * sec. 16). Honest devices and evenly spread crafted reports run in process through the policy,
 * the device's model and its (fast) mechanism in the contextual environment (ctxpoison.h).
 * Prints, for 0%, 1% and 10% crafted reports and each attack, the honest devices' mean
 * pseudo-regret per report under
 *   old   the former bound L^2 + B^2 + 40 sigma, the attacker at it;
 *   new   the present bound, the attacker aiming at the old one (every crafted report refused);
 *   new*  the present bound, the attacker adapted to it;
 * with uniform play's regret in the same rounds. Mean over --trials trials (trials 0..N-1 of a
 * fixed seed) with its standard error. Figures only, never a verdict. Defaults: 200 trials of
 * 3,030 reports, d = 2, k = 4, gap 0.1, epsilon 1, delta 1e-6.
 *
 *   bench_ctx_poison [--trials N] [--horizon T] [--d D] [--k K] [--gap G] [--epsilon E]
 *                    [--delta D] [--clip C]
 *
 * --clip C: every value (honest or crafted) clipped to +-C sigma before the sum, in all three
 * columns: the robust aggregate that was tried (ctxpoison.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxpoison.h"
#include "ldpb/ctxstat.h"

typedef struct opts {
    uint64_t trials, horizon;
    uint32_t d, k;
    double gap, epsilon, delta, clip;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return -1;
        const char *f = argv[i], *v = argv[++i];
        if (!strcmp(f, "--trials"))
            o->trials = strtoull(v, NULL, 10);
        else if (!strcmp(f, "--horizon"))
            o->horizon = strtoull(v, NULL, 10);
        else if (!strcmp(f, "--d"))
            o->d = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(f, "--k"))
            o->k = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(f, "--gap"))
            o->gap = strtod(v, NULL);
        else if (!strcmp(f, "--epsilon"))
            o->epsilon = strtod(v, NULL);
        else if (!strcmp(f, "--delta"))
            o->delta = strtod(v, NULL);
        else if (!strcmp(f, "--clip"))
            o->clip = strtod(v, NULL);
        else
            return -1;
    }
    return o->trials >= 1 && o->horizon >= 1 ? 0 : -1;
}

typedef struct cell {
    double sum, sum2, uniform, refused, crafted;
} cell;

static int measure(const agg_ctx_poison_config *c, uint64_t trials, cell *out)
{
    static const uint8_t seed[LDPB_RNG_SEED_BYTES] = {'p', 'o', 'i', 's', 'o', 'n'};
    memset(out, 0, sizeof *out);
    for (uint64_t t = 0; t < trials; t++) {
        agg_ctx_poison_result r;
        char errmsg[AGG_ERRMSG_MAX];
        ldpb_err err = agg_ctx_poison_run(c, seed, t, &r, errmsg);
        if (err) {
            fprintf(stderr, "bench_ctx_poison: %s (%s)\n", errmsg, ldpb_strerror(err));
            return -1;
        }
        double per = r.regret / (double)r.honest;
        out->sum += per;
        out->sum2 += per * per;
        out->uniform += r.uniform / (double)r.honest;
        out->refused += (double)r.refused;
        out->crafted += (double)r.crafted;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* d = 2 and 4 actions: small enough that 3,000 honest reports at sigma 15 (epsilon 1,
     * delta 1e-6) learn something (regret well below uniform), so there is something to lose;
     * at d = 5 with 25 actions they barely beat uniform play in 3,000 reports. */
    opts o = {
        .trials = 200, .horizon = 3030, .d = 2, .k = 4, .gap = 0.1, .epsilon = 1.0, .delta = 1e-6};
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_ctx_poison [--trials N] [--horizon T] [--d D] [--k K] "
                        "[--gap G] [--epsilon E] [--delta D] [--clip C]\n");
        return 2;
    }
    agg_ctx_poison_config c;
    memset(&c, 0, sizeof c);
    agg_ldp_linucb_config_init(&c.policy);
    c.policy.d = o.d;
    c.policy.horizon = o.horizon;
    c.policy.epsilon = o.epsilon;
    c.policy.delta = o.delta;
    c.clip = o.clip;
    c.env = (agg_ctx_env_config){
        .d = o.d, .k = o.k, .best = 0.75, .gap = o.gap, .reward = AGG_CTX_REWARD_BOUNDED};
    ldpb_ctxstat_opts mo;
    ldpb_ctxstat_opts_init(&mo, o.d, o.epsilon, o.delta);
    ldpb_ctxstat *m = NULL;
    if (ldpb_ctxstat_new(&m, &mo) != LDPB_OK) {
        fprintf(stderr, "bench_ctx_poison: the mechanism refuses d, epsilon, delta\n");
        return 2;
    }
    const double sigma = ldpb_ctxstat_sigma(m), now = ldpb_ctxstat_limit(m);
    const double old = 2.0 + 40.0 * sigma; /* L = B = 1 */
    ldpb_ctxstat_free(m);
    printf("# local contextual mode under poisoning: d = %u, k = %u, best 0.75, gap %g, "
           "rewards +-1; epsilon %g, delta %g per report (sigma %.4g); %llu reports per trial, "
           "%llu trials\n",
           o.d, o.k, o.gap, o.epsilon, o.delta, sigma, (unsigned long long)o.horizon,
           (unsigned long long)o.trials);
    printf("# admission bound: old %.1f (L^2 + B^2 + 40 sigma), new %.1f (refuses an honest "
           "report with probability <= %g)\n",
           old, now, LDPB_CTXSTAT_FALSE_REFUSAL);
    if (o.clip > 0.0)
        printf("# robust aggregate: every value clipped to +-%g sigma before the sum\n", o.clip);
    printf("# honest regret per report, mean +- standard error over trials; refused: crafted "
           "reports the aggregator refused\n");
    printf("%-12s %8s %8s %18s %18s %18s %9s %9s\n", "attack", "crafted", "uniform", "old",
           "new (old aim)", "new*", "refused", "refused*");
    const double fractions[] = {0.0, 0.01, 0.1};
    for (unsigned a = 0; a < AGG_CTX_POISON_ATTACKS; a++) {
        for (size_t f = 0; f < sizeof fractions / sizeof fractions[0]; f++) {
            c.attack = (agg_ctx_poison_attack)a;
            c.fraction = fractions[f];
            cell cold, cnew, cadapt;
            c.admit = old, c.aim = 0.0;
            if (measure(&c, o.trials, &cold))
                return 1;
            c.admit = 0.0, c.aim = old;
            if (measure(&c, o.trials, &cnew))
                return 1;
            c.admit = 0.0, c.aim = 0.0;
            if (measure(&c, o.trials, &cadapt))
                return 1;
            const cell *cs[] = {&cold, &cnew, &cadapt};
            char txt[3][40];
            for (int i = 0; i < 3; i++) {
                double n = (double)o.trials, mu = cs[i]->sum / n;
                double var = n > 1 ? (cs[i]->sum2 - n * mu * mu) / (n - 1) : 0.0;
                snprintf(txt[i], sizeof txt[i], "%.4f +- %.4f", mu, sqrt(fmax(var, 0.0) / n));
            }
            printf("%-12s %7.0f%% %8.4f %18s %18s %18s %9.0f %9.0f\n",
                   agg_ctx_poison_attack_name(c.attack), 100.0 * fractions[f],
                   cold.uniform / (double)o.trials, txt[0], txt[1], txt[2], cnew.refused,
                   cadapt.refused);
        }
    }
    return 0;
}
