/* loadgen's spread of devices over experiments (exp_spread.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_spread.h"

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static unsigned digits(uint32_t v)
{
    unsigned d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

static ldpb_err refuse(char *why, size_t cap, ldpb_err err, const char *text)
{
    if (why && cap)
        snprintf(why, cap, "%s", text);
    return err;
}

ldpb_err tool_exp_spread_init(tool_exp_spread *s, uint32_t n, double zipf, const char *prefix,
                              char *why, size_t cap)
{
    memset(s, 0, sizeof *s);
    if (n < 1 || n > TOOL_EXP_MAX)
        return refuse(why, cap, LDPB_ERANGE, "the experiment count must be in [1, 100000]");
    if (!(zipf >= 0.0 && zipf <= TOOL_ZIPF_MAX))
        return refuse(why, cap, LDPB_ERANGE, "the Zipf exponent must be in [0, 100]");
    if (prefix) {
        size_t len = strlen(prefix);
        if (len + digits(n - 1) > TOOL_EXP_NAME_MAX)
            return refuse(why, cap, LDPB_EINVAL,
                          "the prefix with the largest index is longer than the 64 bytes of an "
                          "experiment name");
        for (size_t i = 0; i < len; i++)
            if (!name_char(prefix[i]))
                return refuse(why, cap, LDPB_EINVAL,
                              "an experiment name is made of a-z, 0-9, '.', '_' and '-' only");
        memcpy(s->prefix, prefix, len + 1);
    } else if (n == 1) {
        s->is_default = 1;
    } else {
        memcpy(s->prefix, "e", 2);
    }
    s->n = n;
    s->zipf = zipf;
    if (n == 1 || zipf == 0.0)
        return LDPB_OK;
    s->cdf = malloc((size_t)n * sizeof *s->cdf);
    if (!s->cdf)
        return refuse(why, cap, LDPB_ENOMEM, "out of memory");
    /* Summed from the smallest weight up, so the total carries the least rounding. */
    double total = 0.0;
    for (uint32_t i = n; i-- > 0;)
        total += pow((double)i + 1.0, -zipf);
    double acc = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        acc += pow((double)i + 1.0, -zipf) / total;
        s->cdf[i] = acc;
    }
    s->cdf[n - 1] = 1.0; /* a uniform draw below 1 always lands */
    return LDPB_OK;
}

void tool_exp_spread_free(tool_exp_spread *s)
{
    free(s->cdf);
    s->cdf = NULL;
}

uint32_t tool_exp_spread_draw(const tool_exp_spread *s, agg_rand *r)
{
    if (s->n == 1)
        return 0;
    if (!s->cdf)
        return (uint32_t)agg_rand_below(r, s->n);
    double u = agg_rand_uniform(r);
    uint32_t lo = 0, hi = s->n - 1; /* the first i with u < cdf[i] */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (u < s->cdf[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

double tool_exp_spread_prob(const tool_exp_spread *s, uint32_t i)
{
    if (i >= s->n)
        return 0.0;
    if (!s->cdf)
        return 1.0 / (double)s->n;
    return i == 0 ? s->cdf[0] : s->cdf[i] - s->cdf[i - 1];
}

void tool_exp_spread_name(const tool_exp_spread *s, uint32_t i, char out[TOOL_EXP_NAME_MAX + 1])
{
    /* init checked that prefix + the largest index fits */
    char tmp[TOOL_EXP_NAME_MAX + 16];
    if (s->is_default)
        snprintf(tmp, sizeof tmp, "default");
    else
        snprintf(tmp, sizeof tmp, "%s%u", s->prefix, (unsigned)i);
    tmp[TOOL_EXP_NAME_MAX] = '\0';
    memcpy(out, tmp, TOOL_EXP_NAME_MAX + 1);
}
