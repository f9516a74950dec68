/* Poisoning devices in the scalar simulation: see poison.h. */
#include "poison.h"

#include <math.h>
#include <string.h>

#include "ldpb/mech_table.h"

static const struct {
    agg_poison_strategy s;
    const char *name;
} STRATEGIES[] = {
    {AGG_POISON_DEMOTE_BEST, "demote-best"},
    {AGG_POISON_PROMOTE_WORST, "promote-worst"},
};
#define N_STRATEGIES (sizeof STRATEGIES / sizeof STRATEGIES[0])

const char *agg_poison_strategy_name(agg_poison_strategy s)
{
    for (size_t i = 0; i < N_STRATEGIES; i++)
        if (STRATEGIES[i].s == s)
            return STRATEGIES[i].name;
    return NULL;
}

ldpb_err agg_poison_strategy_parse(const char *name, agg_poison_strategy *out)
{
    for (size_t i = 0; name && i < N_STRATEGIES; i++)
        if (strcmp(STRATEGIES[i].name, name) == 0) {
            *out = STRATEGIES[i].s;
            return LDPB_OK;
        }
    return LDPB_EINVAL;
}

ldpb_err agg_poison_check(const agg_poison *p)
{
    if (!p)
        return LDPB_EINVAL;
    if (!(p->fraction >= 0.0 && p->fraction <= 0.5))
        return LDPB_ERANGE;
    return agg_poison_strategy_name(p->strategy) ? LDPB_OK : LDPB_EINVAL;
}

/* The admissible value farthest from 0.5 on the side of `v`: v itself if the table admits it,
 * else moved inwards an ulp at a time (the rule's own rounding decides, not a copy of it). */
static double admissible_edge(int id, double epsilon, int is_bit, double v)
{
    for (int i = 0; i < 64 && ldpb_mech_check_value(id, epsilon, is_bit, v, "", NULL) != LDPB_OK;
         i++)
        v = nextafter(v, 0.5);
    return v;
}

ldpb_err agg_poison_extremes(ldpb_mech_kind mechanism, double epsilon, double *lo, double *hi)
{
    if (!lo || !hi)
        return LDPB_EINVAL;
    if (mechanism == 0) {
        *lo = 0.0;
        *hi = 1.0;
        return LDPB_OK;
    }
    const ldpb_mech_desc *d = ldpb_mech_desc_of((int)mechanism);
    if (!ldpb_mech_desc_scalar(d) || !(epsilon > 0.0 && epsilon <= LDPB_EPSILON_MAX))
        return LDPB_EINVAL;
    if (d->output == LDPB_MECH_OUTPUT_BIT) {
        *lo = 0.0;
        *hi = 1.0;
        return LDPB_OK;
    }
    const double reach = 0.5 + LDPB_MECH_REAL_SCALES_MAX / epsilon;
    *lo = admissible_edge(d->id, epsilon, 0, 0.5 - reach);
    *hi = admissible_edge(d->id, epsilon, 0, 0.5 + reach);
    if (ldpb_mech_check_value(d->id, epsilon, 0, *lo, "", NULL) != LDPB_OK ||
        ldpb_mech_check_value(d->id, epsilon, 0, *hi, "", NULL) != LDPB_OK)
        return LDPB_ERANGE;
    return LDPB_OK;
}

double agg_poison_value(const agg_poison *p, uint32_t arm, uint32_t best, uint32_t worst, double lo,
                        double hi)
{
    if (p->strategy == AGG_POISON_PROMOTE_WORST)
        return arm == worst ? hi : lo;
    return arm == best ? lo : hi;
}
