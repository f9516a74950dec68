/* Simulated environments: reward laws, their means, the list parser and the presets of
 * the papers' experiments (see env.h). */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

/* How an arm is sampled; Beta(a, 1) and Beta(1, b) by inversion (U^(1/a) and 1 - U^(1/b), as
 * RZLS20 samples Beta(4,1)), other Beta laws from two Gamma variates. */
typedef enum method {
    M_BERNOULLI,
    M_BETA_A1,
    M_BETA_1B,
    M_BETA,
    M_TWOPOINT,
    M_UNIFORM,
} method;

typedef struct env_arm {
    agg_law law;
    double mean;
    method how;
    double inv; /* 1/a for M_BETA_A1, 1/b for M_BETA_1B */
} env_arm;

struct agg_env {
    uint32_t k;
    double best;
    env_arm arms[];
};

static const struct {
    const char *name;
    agg_law_kind kind;
    int params;
    const char *usage;
} law_names[] = {
    {"bernoulli", AGG_LAW_BERNOULLI, 1, "bernoulli:P"},
    {"beta", AGG_LAW_BETA, 2, "beta:A:B"},
    {"twopoint", AGG_LAW_TWOPOINT, 2, "twopoint:LO:HI"},
    {"uniform", AGG_LAW_UNIFORM, 2, "uniform:LO:HI"},
};

static const char *law_name(agg_law_kind kind)
{
    for (size_t i = 0; i < sizeof law_names / sizeof law_names[0]; i++)
        if (law_names[i].kind == kind)
            return law_names[i].name;
    return "unknown";
}

/* Validates one law; `what` names it in the message ("arm 3", "item 2 ('beta:0:1')"). */
static ldpb_err law_check(const agg_law *l, const char *what, char errmsg[AGG_ERRMSG_MAX])
{
    const char *name = law_name(l->kind);
    switch (l->kind) {
    case AGG_LAW_BERNOULLI:
        if (isnan(l->a))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: bernoulli p is NaN", what);
        if (!(l->a >= 0.0 && l->a <= 1.0))
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: bernoulli p %g outside [0, 1]", what,
                                     l->a);
        return LDPB_OK;
    case AGG_LAW_BETA:
        if (isnan(l->a) || isnan(l->b))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: beta parameter is NaN", what);
        if (!(l->a > 0.0 && isfinite(l->a) && l->b > 0.0 && isfinite(l->b)))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: beta parameters %g, %g must both be finite and > 0", what,
                                     l->a, l->b);
        return LDPB_OK;
    case AGG_LAW_TWOPOINT:
    case AGG_LAW_UNIFORM:
        if (isnan(l->a) || isnan(l->b))
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: %s bound is NaN", what, name);
        if (!(l->a >= 0.0 && l->a <= l->b && l->b <= 1.0))
            return agg_policy_refuse(errmsg, LDPB_ERANGE,
                                     "%s: %s needs 0 <= lo <= hi <= 1, got %g, %g", what, name,
                                     l->a, l->b);
        return LDPB_OK;
    }
    return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: unknown law kind %d", what, (int)l->kind);
}

static void arm_setup(env_arm *e, const agg_law *l)
{
    e->law = *l;
    e->inv = 0.0;
    switch (l->kind) {
    case AGG_LAW_BERNOULLI:
        e->how = M_BERNOULLI;
        e->mean = l->a;
        break;
    case AGG_LAW_BETA:
        e->mean = l->a / (l->a + l->b);
        if (l->b == 1.0) {
            e->how = M_BETA_A1;
            e->inv = 1.0 / l->a;
        } else if (l->a == 1.0) {
            e->how = M_BETA_1B;
            e->inv = 1.0 / l->b;
        } else {
            e->how = M_BETA;
        }
        break;
    case AGG_LAW_TWOPOINT:
        e->how = M_TWOPOINT;
        e->mean = 0.5 * (l->a + l->b);
        break;
    case AGG_LAW_UNIFORM:
        e->how = M_UNIFORM;
        e->mean = 0.5 * (l->a + l->b);
        break;
    }
}

ldpb_err agg_env_new(agg_env **out, const agg_law *laws, uint32_t k, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no output pointer");
    *out = NULL;
    if (!laws)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no laws");
    if (k < 1 || k > AGG_ENV_K_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "env: k %u outside [1, %u]", k,
                                 AGG_ENV_K_MAX);
    for (uint32_t i = 0; i < k; i++) {
        char what[32];
        snprintf(what, sizeof what, "arm %u", i + 1);
        ldpb_err err = law_check(&laws[i], what, errmsg);
        if (err)
            return err;
    }
    agg_env *env = malloc(sizeof *env + (size_t)k * sizeof env->arms[0]);
    if (!env)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "env: out of memory for %u arms", k);
    env->k = k;
    env->best = -HUGE_VAL;
    for (uint32_t i = 0; i < k; i++) {
        arm_setup(&env->arms[i], &laws[i]);
        if (env->arms[i].mean > env->best)
            env->best = env->arms[i].mean;
    }
    *out = env;
    return LDPB_OK;
}

void agg_env_free(agg_env *env)
{
    free(env);
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

/* Parses a finite number at *s (after optional whitespace); advances *s past it. */
static int parse_number(const char **s, double *v)
{
    const char *p = skip_ws(*s);
    if (!(isdigit((unsigned char)*p) || *p == '-' || *p == '+' || *p == '.'))
        return 0; /* also keeps strtod from accepting "nan" or "inf" */
    char *end;
    errno = 0;
    double x = strtod(p, &end);
    if (end == p || errno == ERANGE || !isfinite(x))
        return 0;
    *v = x;
    *s = end;
    return 1;
}

/* One pass over the list: validates it and counts the arms; fills laws[] when it is not NULL
 * (the second pass, with room for the count of the first). */
static ldpb_err parse_list(const char *spec, agg_law *laws, uint32_t *count,
                           char errmsg[AGG_ERRMSG_MAX])
{
    uint64_t total = 0;
    unsigned item = 0;
    const char *s = spec;
    for (;;) {
        item++;
        const char *start = skip_ws(s);
        size_t item_len = strcspn(start, ",");
        char what[96];
        snprintf(what, sizeof what, "item %u ('%.*s')", item, (int)(item_len > 40 ? 40 : item_len),
                 start);
        const char *p = start;
        size_t name_len = 0;
        while (isalpha((unsigned char)p[name_len]) || p[name_len] == '-')
            name_len++;
        if (name_len == 0)
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "%s: expected a law (bernoulli, beta, twopoint, uniform)",
                                     what);
        int law = -1;
        for (size_t i = 0; i < sizeof law_names / sizeof law_names[0]; i++)
            if (strlen(law_names[i].name) == name_len &&
                strncmp(law_names[i].name, p, name_len) == 0)
                law = (int)i;
        if (law < 0)
            return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                     "%s: unknown law '%.*s' (bernoulli, beta, twopoint, uniform)",
                                     what, (int)name_len, p);
        p += name_len;
        double v[2] = {0.0, 0.0};
        int got = 0;
        for (;;) {
            p = skip_ws(p);
            if (*p != ':')
                break;
            p++;
            double x;
            if (got == 2 || !parse_number(&p, &x))
                return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                         got == 2 ? "%s: too many parameters, expected %s"
                                                  : "%s: bad number, expected %s",
                                         what, law_names[law].usage);
            v[got++] = x;
        }
        if (got != law_names[law].params)
            return agg_policy_refuse(
                errmsg, LDPB_EINVAL, "%s: %s needs %d parameter%s (%s), got %d", what,
                law_names[law].name, law_names[law].params, law_names[law].params == 1 ? "" : "s",
                law_names[law].usage, got);
        uint64_t repeat = 1;
        if (*p == '*') {
            p = skip_ws(p + 1);
            if (!isdigit((unsigned char)*p))
                return agg_policy_refuse(errmsg, LDPB_EINVAL,
                                         "%s: expected a repeat count after '*'", what);
            char *end;
            errno = 0;
            unsigned long long n = strtoull(p, &end, 10);
            if (errno == ERANGE || n < 1 || n > AGG_ENV_K_MAX)
                return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: repeat count outside [1, %u]",
                                         what, AGG_ENV_K_MAX);
            repeat = n;
            p = skip_ws(end);
        }
        if (*p != ',' && *p != '\0')
            return agg_policy_refuse(errmsg, LDPB_EINVAL, "%s: unexpected '%c'", what, *p);
        agg_law l = {law_names[law].kind, v[0], v[1]};
        if (law_names[law].params == 1)
            l.b = 0.0;
        ldpb_err err = law_check(&l, what, errmsg);
        if (err)
            return err;
        if (repeat > AGG_ENV_K_MAX - total)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "%s: more than %u arms in total", what,
                                     AGG_ENV_K_MAX);
        for (uint64_t j = 0; laws && j < repeat; j++)
            laws[total + j] = l;
        total += repeat;
        if (*p == '\0')
            break;
        s = p + 1;
    }
    *count = (uint32_t)total;
    return LDPB_OK;
}

ldpb_err agg_env_parse(agg_env **out, const char *spec, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no output pointer");
    *out = NULL;
    if (!spec)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no arm list");
    if (*skip_ws(spec) == '\0')
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: empty arm list");
    uint32_t k = 0;
    ldpb_err err = parse_list(spec, NULL, &k, errmsg);
    if (err)
        return err;
    agg_law *laws = malloc((size_t)k * sizeof *laws);
    if (!laws)
        return agg_policy_refuse(errmsg, LDPB_ENOMEM, "env: out of memory for %u arms", k);
    err = parse_list(spec, laws, &k, errmsg);
    if (!err)
        err = agg_env_new(out, laws, k, errmsg);
    free(laws);
    return err;
}

ldpb_err agg_env_ss19_means(agg_ss19_setting s, uint32_t k, double *means)
{
    if (!means)
        return LDPB_EINVAL;
    if (s != AGG_SS19_C1 && s != AGG_SS19_C2 && s != AGG_SS19_C3 && s != AGG_SS19_C4)
        return LDPB_EINVAL;
    if (k < 2)
        return LDPB_ERANGE;
    double km1 = (double)(k - 1);
    for (uint32_t j = 0; j < k; j++) {
        double i = (double)j + 1.0; /* the paper's 1-based arm index */
        switch (s) {
        case AGG_SS19_C1:
            means[j] = j == 0 ? 0.75 : 0.7;
            break;
        case AGG_SS19_C2:
            means[j] = 0.75 - 0.5 * (i - 1.0) / km1;
            break;
        case AGG_SS19_C3:
            means[j] = 0.25 + 0.5 * (i - (double)k) * (i - (double)k) / (km1 * km1);
            break;
        case AGG_SS19_C4:
            means[j] = 0.75 - 0.5 * (i - 1.0) * (i - 1.0) / (km1 * km1);
            break;
        }
    }
    return LDPB_OK;
}

/* JZL23's mixed instance (values from RZLS20's code) and RZLS20's all-Bernoulli twin. */
static const char preset_mixed[] =
    "bernoulli:0.9,beta:4:1*5,twopoint:0.4:1*5,bernoulli:0.6*5,uniform:0:1*4";
static const char preset_mixed_bernoulli[] =
    "bernoulli:0.9,bernoulli:0.8*5,bernoulli:0.7*5,bernoulli:0.6*5,bernoulli:0.5*4";

ldpb_err agg_env_preset(agg_env **out, const char *name, uint32_t k, char errmsg[AGG_ERRMSG_MAX])
{
    if (errmsg)
        errmsg[0] = '\0';
    if (!out)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no output pointer");
    *out = NULL;
    if (!name)
        return agg_policy_refuse(errmsg, LDPB_EINVAL, "env: no preset name");
    const char *list = NULL;
    if (strcmp(name, "mixed") == 0)
        list = preset_mixed;
    else if (strcmp(name, "mixed-bernoulli") == 0)
        list = preset_mixed_bernoulli;
    if (list) {
        if (k != 0 && k != 20)
            return agg_policy_refuse(errmsg, LDPB_ERANGE, "env: preset %s has 20 arms, not %u",
                                     name, k);
        return agg_env_parse(out, list, errmsg);
    }
    agg_ss19_setting s;
    if (strcmp(name, "c1") == 0)
        s = AGG_SS19_C1;
    else if (strcmp(name, "c2") == 0)
        s = AGG_SS19_C2;
    else if (strcmp(name, "c3") == 0)
        s = AGG_SS19_C3;
    else if (strcmp(name, "c4") == 0)
        s = AGG_SS19_C4;
    else
        return agg_policy_refuse(
            errmsg, LDPB_EINVAL,
            "env: unknown preset '%s' (mixed, mixed-bernoulli, c1, c2, c3, c4)", name);
    if (k == 0)
        k = 5;
    if (k < 2 || k > AGG_ENV_K_MAX)
        return agg_policy_refuse(errmsg, LDPB_ERANGE, "env: preset %s needs k in [2, %u], got %u",
                                 name, AGG_ENV_K_MAX, k);
    agg_law *laws = malloc((size_t)k * sizeof *laws);
    double *means = malloc((size_t)k * sizeof *means);
    ldpb_err err = LDPB_ENOMEM;
    if (!laws || !means) {
        agg_policy_refuse(errmsg, err, "env: out of memory for %u arms", k);
        goto done;
    }
    err = agg_env_ss19_means(s, k, means);
    if (err)
        goto done;
    for (uint32_t i = 0; i < k; i++)
        laws[i] = (agg_law){AGG_LAW_BERNOULLI, means[i], 0.0};
    err = agg_env_new(out, laws, k, errmsg);
done:
    free(laws);
    free(means);
    return err;
}

uint32_t agg_env_arms(const agg_env *env)
{
    return env->k;
}

double agg_env_mean(const agg_env *env, uint32_t arm)
{
    return arm < env->k ? env->arms[arm].mean : NAN;
}

double agg_env_best_mean(const agg_env *env)
{
    return env->best;
}

const agg_law *agg_env_law(const agg_env *env, uint32_t arm)
{
    return arm < env->k ? &env->arms[arm].law : NULL;
}

double agg_env_sample(const agg_env *env, uint32_t arm, agg_rand *r)
{
    assert(arm < env->k);
    const env_arm *e = &env->arms[arm];
    switch (e->how) {
    case M_BERNOULLI:
        return agg_rand_uniform(r) < e->law.a ? 1.0 : 0.0;
    case M_BETA_A1:
        return pow(agg_rand_uniform(r), e->inv);
    case M_BETA_1B:
        return 1.0 - pow(agg_rand_uniform(r), e->inv);
    case M_BETA:
        return agg_rand_beta(r, e->law.a, e->law.b);
    case M_TWOPOINT:
        return agg_rand_u64(r) >> 63 ? e->law.b : e->law.a;
    case M_UNIFORM: {
        double x = e->law.a + (e->law.b - e->law.a) * agg_rand_uniform(r);
        return x > e->law.b ? e->law.b : x;
    }
    }
    return NAN;
}
