/* The run plan of `ldpb sim` (plan.h): the preset table (docs/sim.md), the parsing of
 * every list option, and the expansion into configurations in their fixed order (instance, then
 * algorithm, then mechanism, then epsilon, each in the order given). Every configuration is
 * checked with the engine's agg_sim_check before anything runs. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_text.h"
#include "ldpb/mech_table.h"
#include "exp3_family.h"
#include "nas.h"
#include "plan.h"

#define LIST_MAX  4096 /* items in one comma-separated option */
#define ECHO_MAX  40
#define NAME_MAX_ 32

struct preset_alg {
    const char *name;
    const char *mechs; /* LOCAL: the mechanisms, comma-separated; NULL otherwise */
};

struct preset_env {
    const char *env; /* agg_env_preset name */
    const char *label;
    const char *title;
    const char *source;
};

struct preset {
    const char *name;
    const char *summary;
    struct preset_env envs[2];
    size_t n_envs;
    const char *ks; /* the K sweep (SS19 instances), NULL when K is fixed */
    struct preset_alg algs[4];
    size_t n_algs;
    const char *eps;
    uint64_t horizon;
    uint64_t trials;
};

#define SS19_SOURCE "Sajed & Sheffet 2019, sec. 5"
#define SS19_SUMMARY                                                                               \
    "K in {3, 5, 10, 20} x eps in {0.1, 0.25, 0.5, 1}; dp-se and dp-ucb (central,\n"               \
    "Laplace noise AGG_NOISE_FAST); beta = 1/T; T = 5e7; 30 trials (SS19 5)"

#define TD17_SOURCE "Tossou & Dimitrakakis 2017, Sec. 4 (constants: docs/sim.md)"
#define TD17_SUMMARY                                                                               \
    "exp3, dp-exp3-lap (central, at the epsilon exp3-tau attains with delta' = 1/T)\n"             \
    "and exp3-tau (tau = ceil(T^(1/3))); K = 4; T = 2^18; 720 trials (TD17 4);\n"                  \
    "regret against the best fixed arm; robust.csv adds the median of 24 means and GMD"
#define TD17_PRESET(adv, what)                                                                     \
    {                                                                                              \
        "tossou2017-" adv, what "\n" TD17_SUMMARY,                                                 \
            {{"adv:" adv, "tossou2017-" adv, what, TD17_SOURCE}}, 1, NULL,                         \
            {{"exp3", NULL}, {"dp-exp3-lap", NULL}, {"exp3-tau", NULL}}, 3, "td17", 262144, 720    \
    }

static const struct preset presets[] = {
    {"jiang2023",
     "20 arms, mixed laws (JZL23 5); ldp-ts-b and ldp-ucb-b x {linear,\n"
     "quadratic, exponential} x eps in {0.1, 0.25, 0.5, 1, 2}, ts and ucb1 baselines;\n"
     "T = 1e5; 50 trials (JZL23 5)",
     {{"mixed", "jiang2023", "20 arms, mixed laws (JZL23 / RZLS20 instance)",
       "Jiang, Zhao & Li 2023, sec. 5; laws from RZLS20 code"}},
     1,
     NULL,
     {{"ldp-ts-b", "linear,quadratic,exponential"},
      {"ldp-ucb-b", "linear,quadratic,exponential"},
      {"ts", NULL},
      {"ucb1", NULL}},
     4,
     "0.1,0.25,0.5,1,2",
     100000,
     50},
    {"ren2020",
     "the 20 means of jiang2023 as two instances, preset column ren2020-mixed (mixed laws)\n"
     "and ren2020-bern (all Bernoulli); ucb1, ldp-ucb-b (linear), ldp-ucb-l (laplace)\n"
     "x eps in {0.5, 1, 2}; T = 1e5; 100 trials (RZLS20 library default; main.py used 5)",
     {{"mixed", "ren2020-mixed", "20 arms, mixed laws (RZLS20 'Mixed')",
       "Ren, Zhou, Liu & Shroff 2020, authors' main.py"},
      {"mixed-bernoulli", "ren2020-bern", "20 Bernoulli arms (RZLS20 'Bern')",
       "Ren, Zhou, Liu & Shroff 2020, authors' main.py"}},
     2,
     NULL,
     {{"ucb1", NULL}, {"ldp-ucb-b", "linear"}, {"ldp-ucb-l", "laplace"}},
     3,
     "0.5,1,2",
     100000,
     100},
    {"sajed2019-c1",
     "C1: 0.75, then K-1 arms at 0.7 (equal gaps)\n" SS19_SUMMARY,
     {{"c1", "sajed2019-c1", "Bernoulli arms, C1: 0.75 and 0.7 (equal gaps)", SS19_SOURCE}},
     1,
     "3,5,10,20",
     {{"dp-se", NULL}, {"dp-ucb", NULL}},
     2,
     "0.1,0.25,0.5,1",
     50000000,
     30},
    {"sajed2019-c2",
     "C2: 0.75 down to 0.25 linearly\n" SS19_SUMMARY,
     {{"c2", "sajed2019-c2", "Bernoulli arms, C2: 0.75 to 0.25 linearly", SS19_SOURCE}},
     1,
     "3,5,10,20",
     {{"dp-se", NULL}, {"dp-ucb", NULL}},
     2,
     "0.1,0.25,0.5,1",
     50000000,
     30},
    {"sajed2019-c3",
     "C3: convex quadratic from 0.75 to 0.25 (many large gaps)\n" SS19_SUMMARY,
     {{"c3", "sajed2019-c3", "Bernoulli arms, C3: convex quadratic (large gaps)", SS19_SOURCE}},
     1,
     "3,5,10,20",
     {{"dp-se", NULL}, {"dp-ucb", NULL}},
     2,
     "0.1,0.25,0.5,1",
     50000000,
     30},
    {"sajed2019-c4",
     "C4: concave quadratic from 0.75 to 0.25 (many small gaps)\n" SS19_SUMMARY,
     {{"c4", "sajed2019-c4", "Bernoulli arms, C4: concave quadratic (small gaps)", SS19_SOURCE}},
     1,
     "3,5,10,20",
     {{"dp-se", NULL}, {"dp-ucb", NULL}},
     2,
     "0.1,0.25,0.5,1",
     50000000,
     30},
    TD17_PRESET("deterministic",
                "deterministic adversary: arm 2 pays 1 on even rounds, arm 1 0.38, "
                "arm 3 1 on multiples of 3"),
    TD17_PRESET("stochastic", "stochastic adversary: arm 1 Bernoulli(0.55), the others "
                              "Bernoulli(0.5)"),
    TD17_PRESET("fully-oblivious", "fully oblivious adversary: Bernoulli(q), q ~ U[0.5, 0.6] for "
                                   "arm 1, U[0.45, 0.55] for the others"),
    TD17_PRESET("oblivious", "oblivious adversary: the fully oblivious gains redrawn every 200 "
                             "rounds"),
    TD17_PRESET("switching", "switching-cost adversary (Dekel et al. 2014 Fig. 1): a switch "
                             "gains 0"),
};

#undef TD17_PRESET
#define N_PRESETS (sizeof presets / sizeof presets[0])

/* Room for the local mechanisms of the mechanism table (mech_table.h), which are all run. */
#define N_MECHS 16

/* The local mechanisms, in table order; returns their number. */
static size_t all_mechs(ldpb_mech_kind out[N_MECHS])
{
    size_t n, m = 0;
    const ldpb_mech_desc *const *t = ldpb_mech_table(&n);
    for (size_t i = 0; i < n && m < N_MECHS; i++)
        if (ldpb_mech_desc_scalar(t[i]))
            out[m++] = (ldpb_mech_kind)t[i]->id;
    return m;
}

const simplan_preset_info *simplan_presets(size_t *count)
{
    static simplan_preset_info info[N_PRESETS];
    for (size_t i = 0; i < N_PRESETS; i++) {
        info[i].name = presets[i].name;
        info[i].summary = presets[i].summary;
    }
    *count = N_PRESETS;
    return info;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ldpb_err
fail(char errmsg[SIMPLAN_ERRMSG_MAX], ldpb_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, SIMPLAN_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    return err;
}

void simplan_format_double(char *dst, size_t cap, double v)
{
    if (isinf(v) && v > 0) {
        snprintf(dst, cap, "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(dst, cap, "%.*g", p, v);
        if (strtod(dst, NULL) == v)
            return;
    }
}

void simplan_format_count(char *dst, size_t cap, uint64_t v)
{
    if (v >= 1000) {
        int e = 0;
        uint64_t m = v;
        while (m % 10 == 0) {
            m /= 10;
            e++;
        }
        if (m < 10 && e >= 3) {
            snprintf(dst, cap, "%llue%d", (unsigned long long)m, e);
            return;
        }
        if (m < 100 && e >= 3) {
            snprintf(dst, cap, "%llu.%llue%d", (unsigned long long)(m / 10),
                     (unsigned long long)(m % 10), e + 1);
            return;
        }
    }
    snprintf(dst, cap, "%llu", (unsigned long long)v);
}

const char *simplan_parse_count(const char *text, uint64_t *out)
{
    size_t n = strlen(text);
    if (n == 0)
        return "is empty";
    if (n > 64)
        return "is too long";
    if (strspn(text, "0123456789") == n) {
        errno = 0;
        unsigned long long v = strtoull(text, NULL, 10);
        *out = errno == ERANGE ? UINT64_MAX : (uint64_t)v;
        return NULL;
    }
    /* Scientific notation: digits, an optional fraction, 'e', an optional sign, digits. */
    size_t i = strspn(text, "0123456789");
    size_t int_digits = i, frac_digits = 0;
    if (text[i] == '.') {
        i++;
        frac_digits = strspn(text + i, "0123456789");
        i += frac_digits;
    }
    if (int_digits + frac_digits == 0 || (text[i] != 'e' && text[i] != 'E'))
        return "is not a whole number";
    i++;
    if (text[i] == '+' || text[i] == '-')
        i++;
    size_t exp_digits = strspn(text + i, "0123456789");
    if (exp_digits == 0 || i + exp_digits != n)
        return "is not a whole number";
    char *end;
    double v = strtod(text, &end);
    if (*end != '\0')
        return "is not a whole number";
    if (v != floor(v))
        return "is not a whole number";
    *out = v < 0x1p63 ? (uint64_t)v : UINT64_MAX;
    return NULL;
}

/* A comma-separated list split into trimmed items, all pointing into one copy of the text. */
struct list {
    char *buf;
    char **item;
    size_t n;
};

static void list_free(struct list *l)
{
    free(l->buf);
    free(l->item);
    l->buf = NULL;
    l->item = NULL;
    l->n = 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits a comma-separated option. Repeats are refused (a repeated algorithm or epsilon is a
 * typo that would double a configuration) unless `repeats_ok`: arm means may repeat. */
static ldpb_err list_split(struct list *l, const char *opt, const char *text, int repeats_ok,
                           char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    memset(l, 0, sizeof *l);
    size_t n = 1;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    if (n > LIST_MAX)
        return fail(errmsg, LDPB_ERANGE, "--%s has %zu items, more than %d", opt, n, LIST_MAX);
    l->buf = strdup(text);
    l->item = calloc(n, sizeof *l->item);
    if (!l->buf || !l->item) {
        list_free(l);
        return fail(errmsg, LDPB_ENOMEM, "out of memory parsing --%s", opt);
    }
    char *p = l->buf;
    for (size_t i = 0; i < n; i++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        while (is_blank(*p))
            p++;
        size_t len = strlen(p);
        while (len > 0 && is_blank(p[len - 1]))
            p[--len] = '\0';
        if (len == 0) {
            list_free(l);
            return fail(errmsg, LDPB_EINVAL, "--%s '%s': item %zu is empty", opt,
                        tool_echo(e, sizeof e, text), i + 1);
        }
        l->item[i] = p;
        p = comma ? comma + 1 : p + len;
    }
    l->n = n;
    for (size_t i = 0; i < n && !repeats_ok; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(l->item[i], l->item[j]) == 0) {
                ldpb_err err = fail(errmsg, LDPB_EINVAL, "--%s: '%s' is listed twice", opt,
                                    tool_echo(e, sizeof e, l->item[i]));
                list_free(l);
                return err;
            }
    return LDPB_OK;
}

/* A finite number filling all of `text`, with no leading blank. */
static int parse_double(const char *text, double *out)
{
    char *end;
    if (text[0] == '\0' || is_blank(text[0]))
        return -1;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static void name_list(char *dst, size_t cap, const char *const *names, size_t n)
{
    size_t len = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < n && len + 1 < cap; i++) {
        int w = snprintf(dst + len, cap - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* Every registered policy name, for messages. */
static void registry_names(char *dst, size_t cap)
{
    size_t n;
    const agg_policy_ops *const *all = agg_policy_all(&n);
    const char *names[64];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 64; i++)
        names[m++] = all[i]->name;
    name_list(dst, cap, names, m);
}

/* Whether a LOCAL policy accepts mechanism m: a canonical configuration (two arms, a known
 * horizon, epsilon 1) is created and freed, so the policy itself decides. */
static int accepts(const agg_policy_ops *ops, ldpb_mech_kind m, double kappa)
{
    agg_policy_config pc;
    agg_policy_config_init(&pc);
    pc.k = 2;
    pc.horizon = 1000;
    pc.epsilon = 1.0;
    pc.mechanism = m;
    pc.kappa = kappa;
    agg_policy *p = NULL;
    char msg[AGG_ERRMSG_MAX];
    if (agg_policy_new(&p, ops->name, &pc, msg) != LDPB_OK)
        return 0;
    agg_policy_free(p);
    return 1;
}

static void accepted_names(char *dst, size_t cap, const agg_policy_ops *ops, double kappa)
{
    const char *names[N_MECHS];
    ldpb_mech_kind all[N_MECHS];
    size_t n_all = all_mechs(all), m = 0;
    for (size_t i = 0; i < n_all; i++)
        if (accepts(ops, all[i], kappa))
            names[m++] = ldpb_mech_kind_name(all[i]);
    if (m == 0)
        snprintf(dst, cap, "none");
    else
        name_list(dst, cap, names, m);
}

static const char *law_text(const agg_law *l, char *dst, size_t cap)
{
    char a[32], b[32];
    simplan_format_double(a, sizeof a, l->a);
    simplan_format_double(b, sizeof b, l->b);
    switch (l->kind) {
    case AGG_LAW_BERNOULLI:
        snprintf(dst, cap, "bernoulli:%s", a);
        break;
    case AGG_LAW_BETA:
        snprintf(dst, cap, "beta:%s:%s", a, b);
        break;
    case AGG_LAW_TWOPOINT:
        snprintf(dst, cap, "twopoint:%s:%s", a, b);
        break;
    case AGG_LAW_UNIFORM:
        snprintf(dst, cap, "uniform:%s:%s", a, b);
        break;
    }
    return dst;
}

size_t simplan_env_text(const agg_env *env, char *dst, size_t cap)
{
    uint32_t k = agg_env_arms(env);
    size_t len = 0;
    if (cap)
        dst[0] = '\0';
    for (uint32_t i = 0; i < k;) {
        const agg_law *l = agg_env_law(env, i);
        uint32_t run = 1;
        while (i + run < k) {
            const agg_law *m = agg_env_law(env, i + run);
            if (m->kind != l->kind || m->a != l->a || m->b != l->b)
                break;
            run++;
        }
        char item[96], rep[16] = "";
        law_text(l, item, sizeof item);
        if (run > 1)
            snprintf(rep, sizeof rep, "*%u", run);
        int w = snprintf(len < cap ? dst + len : NULL, len < cap ? cap - len : 0, "%s%s%s",
                         i ? "," : "", item, rep);
        len += (size_t)(w > 0 ? w : 0);
        i += run;
    }
    return len;
}

static int env_all_bernoulli(const agg_env *env)
{
    for (uint32_t i = 0; i < agg_env_arms(env); i++)
        if (agg_env_law(env, i)->kind != AGG_LAW_BERNOULLI)
            return 0;
    return 1;
}

static ldpb_err add_instance(simplan *plan, size_t cap, agg_env *env, const char *label,
                             const char *title, const char *source, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    if (plan->n_inst >= cap) {
        agg_env_free(env);
        return fail(errmsg, LDPB_ERANGE, "too many instances");
    }
    simplan_instance *in = &plan->inst[plan->n_inst++];
    memset(in, 0, sizeof *in);
    in->env = env;
    in->k = agg_env_arms(env);
    in->bernoulli = env_all_bernoulli(env);
    snprintf(in->label, sizeof in->label, "%s", label);
    snprintf(in->title, sizeof in->title, "%s", title);
    snprintf(in->source, sizeof in->source, "%s", source);
    return LDPB_OK;
}

/* A tossou2017 instance: the adversary named after "adv:" with K = 4 and the plan's horizon. */
static ldpb_err add_adversary(simplan *plan, const struct preset *p, const struct preset_env *pe,
                              char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char msg[AGG_ERRMSG_MAX];
    agg_adv_params ap;
    agg_adv_params_init(&ap, agg_adv_kind_parse(pe->env + 4), 4, plan->horizon);
    agg_adv *adv = NULL;
    ldpb_err err = agg_adv_new(&adv, &ap, msg);
    if (err)
        return fail(errmsg, err, "preset %s: %s", p->name, msg);
    simplan_instance *in = &plan->inst[plan->n_inst++];
    memset(in, 0, sizeof *in);
    in->adv = adv;
    in->k = agg_adv_arms(adv);
    snprintf(in->label, sizeof in->label, "%s", pe->label);
    snprintf(in->title, sizeof in->title, "%s", pe->title);
    snprintf(in->source, sizeof in->source, "%s", pe->source);
    return LDPB_OK;
}

double simplan_td17_epsilon(uint64_t horizon)
{
    double T = (double)horizon;
    double tau = (double)agg_exp3_icbrt_ceil(horizon);
    double n = T / tau;
    return sqrt(2.0 * n * log(T)) / tau + n / tau * expm1(1.0 / tau);
}

/* The custom instance from --means (Bernoulli arms) or --laws (env.h list syntax). */
static ldpb_err custom_instance(simplan *plan, const simplan_opts *o,
                                char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    char msg[AGG_ERRMSG_MAX];
    agg_env *env = NULL;
    ldpb_err err;
    if (o->means) {
        struct list l;
        err = list_split(&l, "means", o->means, 1, errmsg);
        if (err)
            return err;
        agg_law *laws = calloc(l.n, sizeof *laws);
        if (!laws) {
            list_free(&l);
            return fail(errmsg, LDPB_ENOMEM, "out of memory for %zu arms", l.n);
        }
        err = LDPB_OK;
        for (size_t i = 0; i < l.n && !err; i++) {
            double v = 0.0;
            if (parse_double(l.item[i], &v))
                err = fail(errmsg, LDPB_EINVAL, "--means: '%s' (arm %zu) is not a number",
                           tool_echo(e, sizeof e, l.item[i]), i + 1);
            else if (!(v >= 0.0 && v <= 1.0))
                err = fail(errmsg, LDPB_ERANGE, "--means: mean %s (arm %zu) outside [0, 1]",
                           tool_echo(e, sizeof e, l.item[i]), i + 1);
            laws[i] = (agg_law){AGG_LAW_BERNOULLI, v, 0.0};
        }
        if (!err && l.n < 2)
            err =
                fail(errmsg, LDPB_ERANGE, "--means: a bandit needs at least 2 arms, got %zu", l.n);
        if (!err) {
            err = agg_env_new(&env, laws, (uint32_t)l.n, msg);
            if (err)
                fail(errmsg, err, "--means: %s", msg);
        }
        free(laws);
        list_free(&l);
        if (err)
            return err;
    } else {
        err = agg_env_parse(&env, o->laws, msg);
        if (err)
            return fail(errmsg, err, "--laws: %s", msg);
        if (agg_env_arms(env) < 2) {
            agg_env_free(env);
            return fail(errmsg, LDPB_ERANGE, "--laws: a bandit needs at least 2 arms, got 1");
        }
    }
    char title[200], text[160];
    size_t need;
    if (o->means) {
        /* "0.9, 0.8, 0.5": the means as given, without the law names */
        need = 0;
        text[0] = '\0';
        for (uint32_t a = 0; a < agg_env_arms(env); a++) {
            char v[32];
            simplan_format_double(v, sizeof v, agg_env_mean(env, a));
            int w = snprintf(need < sizeof text ? text + need : NULL,
                             need < sizeof text ? sizeof text - need : 0, "%s%s", a ? ", " : "", v);
            need += (size_t)(w > 0 ? w : 0);
        }
    } else {
        need = simplan_env_text(env, text, sizeof text);
    }
    if (need >= sizeof text)
        memcpy(text + sizeof text - 4, "...", 4);
    snprintf(title, sizeof title, o->means ? "K = %u Bernoulli arms, means %s" : "K = %u arms: %s",
             agg_env_arms(env), text);
    plan->inst = calloc(1, sizeof *plan->inst);
    if (!plan->inst) {
        agg_env_free(env);
        return fail(errmsg, LDPB_ENOMEM, "out of memory");
    }
    return add_instance(plan, 1, env, "custom", title, o->means ? "--means" : "--laws", errmsg);
}

static const struct preset *find_preset(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

/* The K list of an SS19 preset (its own or --k). */
static ldpb_err parse_ks(struct list *l, uint32_t *ks, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    for (size_t i = 0; i < l->n; i++) {
        uint64_t v;
        const char *why = simplan_parse_count(l->item[i], &v);
        if (why)
            return fail(errmsg, LDPB_EINVAL, "--k: '%s' %s", tool_echo(e, sizeof e, l->item[i]),
                        why);
        if (v < 2 || v > AGG_ENV_K_MAX)
            return fail(errmsg, LDPB_ERANGE, "--k: %s outside [2, %u]",
                        tool_echo(e, sizeof e, l->item[i]), AGG_ENV_K_MAX);
        ks[i] = (uint32_t)v;
    }
    return LDPB_OK;
}

static ldpb_err preset_instances(simplan *plan, const struct preset *p, const simplan_opts *o,
                                 char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char msg[AGG_ERRMSG_MAX];
    ldpb_err err;
    if (!p->ks) {
        plan->inst = calloc(p->n_envs, sizeof *plan->inst);
        if (!plan->inst)
            return fail(errmsg, LDPB_ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_envs; i++) {
            agg_env *env;
            if (strncmp(p->envs[i].env, "adv:", 4) == 0) {
                err = add_adversary(plan, p, &p->envs[i], errmsg);
                if (err)
                    return err;
                continue;
            }
            err = agg_env_preset(&env, p->envs[i].env, 0, msg);
            if (err)
                return fail(errmsg, err, "preset %s: %s", p->name, msg);
            err = add_instance(plan, p->n_envs, env, p->envs[i].label, p->envs[i].title,
                               p->envs[i].source, errmsg);
            if (err)
                return err;
        }
        return LDPB_OK;
    }
    struct list l;
    err = list_split(&l, "k", o->ks ? o->ks : p->ks, 0, errmsg);
    if (err)
        return err;
    uint32_t *ks = calloc(l.n, sizeof *ks);
    plan->inst = calloc(l.n, sizeof *plan->inst);
    if (!ks || !plan->inst) {
        err = fail(errmsg, LDPB_ENOMEM, "out of memory");
        goto done;
    }
    err = parse_ks(&l, ks, errmsg);
    for (size_t i = 0; i < l.n && !err; i++) {
        agg_env *env;
        err = agg_env_preset(&env, p->envs[0].env, ks[i], msg);
        if (err) {
            fail(errmsg, err, "preset %s: %s", p->name, msg);
            break;
        }
        char title[200];
        snprintf(title, sizeof title, "K = %u %s", ks[i], p->envs[0].title);
        err = add_instance(plan, l.n, env, p->envs[0].label, title, p->envs[0].source, errmsg);
    }
done:
    free(ks);
    list_free(&l);
    return err;
}

/* The algorithms to run, each with the mechanisms it runs with (LOCAL only). */
struct alg_choice {
    const agg_policy_ops *ops;
    ldpb_mech_kind mechs[N_MECHS];
    size_t n_mechs;
};

static ldpb_err find_algorithm(const char *name, const agg_policy_ops **ops,
                               char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4], names[512];
    *ops = agg_policy_find(name);
    if (*ops)
        return LDPB_OK;
    registry_names(names, sizeof names);
    return fail(errmsg, LDPB_EINVAL, "unknown algorithm '%s' (expected one of %s)",
                tool_echo(e, sizeof e, name), names);
}

static ldpb_err parse_mechs(const char *text, ldpb_mech_kind *mechs, size_t *n,
                            char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    struct list l;
    ldpb_err err = list_split(&l, "mechanisms", text, 0, errmsg);
    if (err)
        return err;
    ldpb_mech_kind all[N_MECHS];
    size_t n_all = all_mechs(all);
    if (l.n > n_all) {
        list_free(&l);
        return fail(errmsg, LDPB_EINVAL, "--mechanisms lists %zu, there are only %zu", l.n, n_all);
    }
    for (size_t i = 0; i < l.n; i++) {
        if (ldpb_mech_kind_from_name(l.item[i], &mechs[i]) != LDPB_OK) {
            const char *names[N_MECHS];
            char known[160];
            for (size_t j = 0; j < n_all; j++)
                names[j] = ldpb_mech_kind_name(all[j]);
            name_list(known, sizeof known, names, n_all);
            err = fail(errmsg, LDPB_EINVAL,
                       "unknown mechanism '%s' (expected %s; non-private and central algorithms "
                       "need none)",
                       tool_echo(e, sizeof e, l.item[i]), known);
            break;
        }
    }
    *n = l.n;
    list_free(&l);
    return err;
}

static int mech_in(ldpb_mech_kind m, const ldpb_mech_kind *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == m)
            return 1;
    return 0;
}

/* Chooses the algorithms and mechanisms: a preset's list filtered by --algorithms and
 * --mechanisms, or the custom lists. */
static ldpb_err choose_algorithms(const struct preset *p, const simplan_opts *o, double kappa,
                                  struct alg_choice **out, size_t *n_out,
                                  char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    ldpb_mech_kind filter[N_MECHS];
    size_t n_filter = 0;
    struct list l = {0};
    struct alg_choice *ch = NULL;
    size_t n = 0;
    ldpb_err err = LDPB_OK;

    if (o->mechanisms) {
        err = parse_mechs(o->mechanisms, filter, &n_filter, errmsg);
        if (err)
            return err;
    }
    if (o->algorithms) {
        err = list_split(&l, "algorithms", o->algorithms, 0, errmsg);
        if (err)
            return err;
    } else if (!p) {
        return fail(errmsg, LDPB_EINVAL,
                    "a custom instance needs --algorithms (e.g. ucb1,ldp-ucb-b,dp-se)");
    }
    size_t cap = p ? p->n_algs : l.n;
    ch = calloc(cap, sizeof *ch);
    if (!ch) {
        list_free(&l);
        return fail(errmsg, LDPB_ENOMEM, "out of memory");
    }
    /* Validate every name first, so an unknown name wins over "not in the preset". */
    for (size_t i = 0; i < l.n && !err; i++) {
        const agg_policy_ops *ops;
        err = find_algorithm(l.item[i], &ops, errmsg);
        if (err)
            break;
        if (p) {
            int found = 0;
            const char *names[4];
            for (size_t j = 0; j < p->n_algs; j++) {
                names[j] = p->algs[j].name;
                found |= strcmp(p->algs[j].name, ops->name) == 0;
            }
            if (!found) {
                char list[128];
                name_list(list, sizeof list, names, p->n_algs);
                err = fail(errmsg, LDPB_EINVAL,
                           "--algorithms: %s is not in preset %s (%s); a custom instance runs any",
                           ops->name, p->name, list);
            }
        }
    }
    if (err)
        goto fail;

    size_t n_src = p ? p->n_algs : l.n;
    for (size_t i = 0; i < n_src; i++) {
        const char *name = p ? p->algs[i].name : l.item[i];
        if (p && o->algorithms) {
            int listed = 0;
            for (size_t j = 0; j < l.n; j++)
                listed |= strcmp(l.item[j], name) == 0;
            if (!listed)
                continue;
        }
        struct alg_choice *c = &ch[n];
        err = find_algorithm(name, &c->ops, errmsg);
        if (err)
            goto fail;
        if (c->ops->model == AGG_MODEL_LOCAL) {
            ldpb_mech_kind cand[N_MECHS];
            size_t n_cand = 0;
            if (p) {
                err = parse_mechs(p->algs[i].mechs, cand, &n_cand, errmsg);
                if (err)
                    goto fail;
            } else if (n_filter) {
                memcpy(cand, filter, sizeof filter);
                n_cand = n_filter;
            } else {
                n_cand = all_mechs(cand);
            }
            for (size_t j = 0; j < n_cand; j++) {
                if (p && n_filter && !mech_in(cand[j], filter, n_filter))
                    continue;
                if (accepts(c->ops, cand[j], kappa))
                    c->mechs[c->n_mechs++] = cand[j];
            }
            if (c->n_mechs == 0) {
                char acc[96];
                accepted_names(acc, sizeof acc, c->ops, kappa);
                err = fail(errmsg, LDPB_EINVAL,
                           "%s accepts none of the mechanisms given (--mechanisms %s); it "
                           "accepts %s%s",
                           c->ops->name,
                           o->mechanisms ? tool_echo(e, sizeof e, o->mechanisms) : "all", acc,
                           p ? "; leave it out with --algorithms" : "");
                goto fail;
            }
        }
        n++;
    }
    if (o->mechanisms) {
        int any_local = 0;
        for (size_t i = 0; i < n; i++)
            any_local |= ch[i].ops->model == AGG_MODEL_LOCAL;
        if (!any_local) {
            err = fail(errmsg, LDPB_EINVAL,
                       "--mechanisms applies to LOCAL algorithms (ldp-*), and none is chosen");
            goto fail;
        }
    }
    list_free(&l);
    *out = ch;
    *n_out = n;
    return LDPB_OK;
fail:
    list_free(&l);
    free(ch);
    return err;
}

static ldpb_err parse_epsilons(const char *text, double **eps, char (**texts)[32], size_t *n,
                               char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    struct list l;
    ldpb_err err = list_split(&l, "epsilons", text, 0, errmsg);
    if (err)
        return err;
    *eps = calloc(l.n, sizeof **eps);
    *texts = calloc(l.n, sizeof **texts);
    if (!*eps || !*texts) {
        list_free(&l);
        return fail(errmsg, LDPB_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < l.n; i++) {
        double v;
        if (parse_double(l.item[i], &v)) {
            err = fail(errmsg, LDPB_EINVAL, "--epsilons: '%s' is not a finite number",
                       tool_echo(e, sizeof e, l.item[i]));
            break;
        }
        if (!(v > 0.0 && v <= LDPB_EPSILON_MAX)) {
            err = fail(errmsg, LDPB_ERANGE, "--epsilons: epsilon %s outside (0, %g]",
                       tool_echo(e, sizeof e, l.item[i]), LDPB_EPSILON_MAX);
            break;
        }
        for (size_t j = 0; j < i; j++)
            if ((*eps)[j] == v) {
                err = fail(errmsg, LDPB_EINVAL, "--epsilons: %s and %s are the same epsilon",
                           l.item[j], tool_echo(e, sizeof e, l.item[i]));
                break;
            }
        if (err)
            break;
        (*eps)[i] = v;
        simplan_format_double((*texts)[i], sizeof(*texts)[i], v);
    }
    *n = l.n;
    list_free(&l);
    return err;
}

static ldpb_err parse_count_opt(const char *opt, const char *text, uint64_t min, uint64_t max,
                                const char *max_text, uint64_t *out,
                                char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    const char *why = simplan_parse_count(text, out);
    if (why)
        return fail(errmsg, LDPB_EINVAL, "--%s '%s' %s", opt, tool_echo(e, sizeof e, text), why);
    if (*out < min || *out > max)
        return fail(errmsg, LDPB_ERANGE, "--%s %s outside [%llu, %s]", opt,
                    tool_echo(e, sizeof e, text), (unsigned long long)min, max_text);
    return LDPB_OK;
}

void simplan_fini(simplan *plan)
{
    if (!plan)
        return;
    for (size_t i = 0; i < plan->n_inst; i++) {
        agg_env_free(plan->inst[i].env);
        agg_adv_free(plan->inst[i].adv);
    }
    free(plan->inst);
    free(plan->cfg);
    free(plan->checkpoints);
    memset(plan, 0, sizeof *plan);
}

const char *simplan_mech_name(const simplan_config *c)
{
    return c->ops->model == AGG_MODEL_LOCAL ? ldpb_mech_kind_name(c->mechanism) : "none";
}

/* --gamma (in (0, 1)) or --eps-arm (> 0, at most LDPB_EPSILON_MAX; the policy refuses it above
 * a configuration's epsilon): `name` is the parameter, `text` the option's value or NULL (then
 * *out is 0, the policy's default). */
static ldpb_err parse_param_opt(const char *name, const char *text, int is_budget, double *out,
                                char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char flag[32], e[64];
    snprintf(flag, sizeof flag, "--%s", name);
    for (char *q = flag; *q; q++)
        if (*q == '_')
            *q = '-';
    *out = 0.0;
    if (!text)
        return LDPB_OK;
    if (parse_double(text, out))
        return fail(errmsg, LDPB_EINVAL, "%s '%s' is not a finite number", flag,
                    tool_echo(e, sizeof e, text));
    if (is_budget ? !(*out > 0.0 && *out <= LDPB_EPSILON_MAX) : !(*out > 0.0 && *out < 1.0))
        return fail(errmsg, LDPB_ERANGE,
                    is_budget ? "%s %s outside (0, %g]" : "%s %s outside (0, 1)", flag,
                    tool_echo(e, sizeof e, text), LDPB_EPSILON_MAX);
    return LDPB_OK;
}

/* A parameter option that no chosen algorithm reads would change nothing: refuse it, naming the
 * policies that read it (from their ops tables). */
static ldpb_err check_param_read(const char *name, const char *text, agg_param bit,
                                 const struct alg_choice *ch, size_t n_ch,
                                 char errmsg[SIMPLAN_ERRMSG_MAX])
{
    if (!text)
        return LDPB_OK;
    for (size_t a = 0; a < n_ch; a++)
        if (ch[a].ops->params & bit)
            return LDPB_OK;
    char flag[32], who[128];
    snprintf(flag, sizeof flag, "--%s", name);
    for (char *q = flag; *q; q++)
        if (*q == '_')
            *q = '-';
    agg_policy_readers(bit, who, sizeof who);
    return fail(errmsg, LDPB_EINVAL, "%s given, but no chosen algorithm reads it (read by: %s)",
                flag, who);
}

void simplan_sim_configs(const simplan *plan, agg_sim_config *out)
{
    for (size_t i = 0; i < plan->n_cfg; i++) {
        const simplan_config *c = &plan->cfg[i];
        agg_sim_config_init(&out[i]);
        out[i].algorithm = c->ops->name;
        agg_policy_config *pc = &out[i].params;
        pc->mechanism = c->ops->model == AGG_MODEL_LOCAL ? c->mechanism : (ldpb_mech_kind)0;
        pc->epsilon = c->ops->model == AGG_MODEL_NONPRIVATE ? 1.0 : c->epsilon;
        pc->kappa = plan->kappa;
        /* beta = 1/T would tell a policy that runs without a horizon what T is. */
        pc->beta = c->ops->params & AGG_PARAM_HORIZON ? plan->beta : 0;
        pc->gamma = plan->gamma;
        pc->eps_arm = plan->eps_arm;
        pc->horizon = plan->horizon;
        out[i].env = plan->inst[c->instance].env;
        out[i].adv = plan->inst[c->instance].adv;
        out[i].checkpoints = plan->checkpoints;
        out[i].n_checkpoints = plan->n_checkpoints;
        out[i].noise_kind = AGG_NOISE_FAST;
        pc->tau = plan->tau;
        pc->threshold = plan->threshold;
    }
}

static ldpb_err expand(simplan *plan, const struct alg_choice *ch, size_t n_ch, const double *eps,
                       char (*eps_text)[32], size_t n_eps, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    size_t per_inst = 0;
    for (size_t a = 0; a < n_ch; a++)
        switch (ch[a].ops->model) {
        case AGG_MODEL_NONPRIVATE:
            per_inst += 1;
            break;
        case AGG_MODEL_LOCAL:
            per_inst += ch[a].n_mechs * n_eps;
            break;
        case AGG_MODEL_CENTRAL:
            per_inst += n_eps;
            break;
        }
    if (per_inst * plan->n_inst > SIMPLAN_CONFIGS_MAX)
        return fail(errmsg, LDPB_ERANGE, "%zu configurations, more than %u in one run",
                    per_inst * plan->n_inst, SIMPLAN_CONFIGS_MAX);
    plan->cfg = calloc(per_inst * plan->n_inst, sizeof *plan->cfg);
    if (!plan->cfg)
        return fail(errmsg, LDPB_ENOMEM, "out of memory");
    for (size_t i = 0; i < plan->n_inst; i++)
        for (size_t a = 0; a < n_ch; a++) {
            const agg_policy_ops *ops = ch[a].ops;
            size_t n_m = ops->model == AGG_MODEL_LOCAL ? ch[a].n_mechs : 1;
            size_t n_e = ops->model == AGG_MODEL_NONPRIVATE ? 1 : n_eps;
            for (size_t m = 0; m < n_m; m++)
                for (size_t e = 0; e < n_e; e++) {
                    simplan_config *c = &plan->cfg[plan->n_cfg++];
                    c->instance = i;
                    c->ops = ops;
                    c->mechanism = ops->model == AGG_MODEL_LOCAL ? ch[a].mechs[m] : 0;
                    if (ops->model == AGG_MODEL_NONPRIVATE) {
                        c->epsilon = INFINITY;
                        snprintf(c->eps_text, sizeof c->eps_text, "inf");
                    } else {
                        c->epsilon = eps[e];
                        memcpy(c->eps_text, eps_text[e], sizeof c->eps_text);
                    }
                }
        }
    return LDPB_OK;
}

ldpb_err simplan_build(simplan *plan, const simplan_opts *o, char errmsg[SIMPLAN_ERRMSG_MAX])
{
    char e[ECHO_MAX + 4];
    const struct preset *p = NULL;
    struct alg_choice *ch = NULL;
    size_t n_ch = 0;
    double *eps = NULL;
    char(*eps_text)[32] = NULL;
    size_t n_eps = 0;
    agg_sim_config *sc = NULL;
    ldpb_err err = LDPB_OK;

    memset(plan, 0, sizeof *plan);
    errmsg[0] = '\0';
    if (o->preset) {
        p = find_preset(o->preset);
        if (!p) {
            /* The stopping experiment is a preset of `ldpb sim` too, run outside this plan. */
            const char *names[N_PRESETS + 1];
            char list[320];
            for (size_t i = 0; i < N_PRESETS; i++)
                names[i] = presets[i].name;
            names[N_PRESETS] = SIMNAS_PRESET;
            name_list(list, sizeof list, names, N_PRESETS + 1);
            return fail(errmsg, LDPB_EINVAL, "unknown preset '%s' (expected one of %s)",
                        tool_echo(e, sizeof e, o->preset), list);
        }
        if (o->means || o->laws)
            return fail(errmsg, LDPB_EINVAL,
                        "--%s cannot be combined with --preset: a preset fixes its instance",
                        o->means ? "means" : "laws");
        if (o->ks && !p->ks)
            return fail(errmsg, LDPB_EINVAL,
                        "--k applies only to the sajed2019 presets; %s has a fixed instance",
                        p->name);
    } else {
        if (!o->means && !o->laws)
            return fail(errmsg, LDPB_EINVAL,
                        "give --preset NAME, or a custom instance with --means or --laws "
                        "(see --help)");
        if (o->means && o->laws)
            return fail(errmsg, LDPB_EINVAL, "give --means or --laws, not both");
        if (o->ks)
            return fail(errmsg, LDPB_EINVAL,
                        "--k applies only to the sajed2019 presets; a custom instance has as "
                        "many arms as --means or --laws lists");
    }
    snprintf(plan->preset, sizeof plan->preset, "%s", p ? p->name : "custom");
    plan->is_custom = p == NULL;

    plan->kappa = LDPB_KAPPA_DEFAULT;
    if (o->kappa) {
        if (parse_double(o->kappa, &plan->kappa)) {
            err = fail(errmsg, LDPB_EINVAL, "--kappa '%s' is not a finite number",
                       tool_echo(e, sizeof e, o->kappa));
            goto fail;
        }
        if (!(plan->kappa >= -1.0 && plan->kappa <= 1.0)) {
            err = fail(errmsg, LDPB_ERANGE, "--kappa %s outside [-1, 1]",
                       tool_echo(e, sizeof e, o->kappa));
            goto fail;
        }
    }
    plan->horizon = p ? p->horizon : SIMPLAN_CUSTOM_HORIZON;
    if (o->horizon) {
        err = parse_count_opt("horizon", o->horizon, 1, SIMPLAN_HORIZON_MAX, "1e12", &plan->horizon,
                              errmsg);
        if (err)
            goto fail;
    }
    plan->trials = p ? p->trials : SIMPLAN_CUSTOM_TRIALS;
    if (o->trials) {
        err = parse_count_opt("trials", o->trials, 1, SIMPLAN_TRIALS_MAX, "1e6", &plan->trials,
                              errmsg);
        if (err)
            goto fail;
    }
    plan->beta = 1.0 / (double)plan->horizon;
    err = parse_param_opt("gamma", o->gamma, 0, &plan->gamma, errmsg);
    if (!err)
        err = parse_param_opt("eps_arm", o->eps_arm, 1, &plan->eps_arm, errmsg);
    if (err)
        goto fail;

    err = choose_algorithms(p, o, plan->kappa, &ch, &n_ch, errmsg);
    if (err)
        goto fail;
    err = check_param_read("gamma", o->gamma, AGG_PARAM_GAMMA, ch, n_ch, errmsg);
    if (!err)
        err = check_param_read("eps_arm", o->eps_arm, AGG_PARAM_EPS_ARM, ch, n_ch, errmsg);
    if (err)
        goto fail;
    int any_private = 0;
    for (size_t a = 0; a < n_ch; a++)
        any_private |= ch[a].ops->model != AGG_MODEL_NONPRIVATE;
    if (o->epsilons && !any_private) {
        err = fail(errmsg, LDPB_EINVAL,
                   "--epsilons given, but every chosen algorithm is non-private");
        goto fail;
    }
    char td17_eps[32];
    const char *preset_eps = p ? p->eps : SIMPLAN_CUSTOM_EPS;
    if (p && strcmp(p->eps, "td17") == 0) {
        /* Rounded down to 0.01: dp-exp3-lap is then at least as private as exp3-tau. */
        simplan_format_double(td17_eps, sizeof td17_eps,
                              floor(100.0 * simplan_td17_epsilon(plan->horizon)) / 100.0);
        preset_eps = td17_eps;
    }
    err = parse_epsilons(o->epsilons ? o->epsilons : preset_eps, &eps, &eps_text, &n_eps, errmsg);
    if (err)
        goto fail;

    int any_tau = 0, any_lap = 0;
    for (size_t a = 0; a < n_ch; a++) {
        any_tau |= strcmp(ch[a].ops->name, "exp3-tau") == 0;
        any_lap |= strstr(ch[a].ops->name, "exp3-lap") != NULL;
    }
    if (o->tau) {
        if (!any_tau) {
            err = fail(errmsg, LDPB_EINVAL, "--tau applies to exp3-tau, and it is not chosen");
            goto fail;
        }
        /* The upper bound T is the policy's own check (its message names tau and T). */
        err = parse_count_opt("tau", o->tau, 1, SIMPLAN_HORIZON_MAX, "1e12", &plan->tau, errmsg);
        if (err)
            goto fail;
    }
    if (o->threshold) {
        if (!any_lap) {
            err = fail(errmsg, LDPB_EINVAL,
                       "--threshold applies to dp-exp3-lap and ldp-exp3-lap, and neither is "
                       "chosen");
            goto fail;
        }
        if (strcmp(o->threshold, "bound-min") == 0) {
            plan->threshold = AGG_EXP3_THRESHOLD_BOUND_MIN;
        } else if (parse_double(o->threshold, &plan->threshold)) {
            err = fail(errmsg, LDPB_EINVAL,
                       "--threshold '%s' is neither a finite number nor bound-min",
                       tool_echo(e, sizeof e, o->threshold));
            goto fail;
        } else if (!(plan->threshold > 0.0)) {
            err = fail(errmsg, LDPB_ERANGE, "--threshold %s outside (0, inf)",
                       tool_echo(e, sizeof e, o->threshold));
            goto fail;
        }
    }

    err = p ? preset_instances(plan, p, o, errmsg) : custom_instance(plan, o, errmsg);
    if (err)
        goto fail;
    for (size_t i = 0; i < plan->n_inst; i++)
        if (plan->horizon < plan->inst[i].k) {
            err = fail(errmsg, LDPB_ERANGE,
                       "--horizon %llu is below K = %u (%s): every arm needs one pull",
                       (unsigned long long)plan->horizon, plan->inst[i].k, plan->inst[i].label);
            goto fail;
        }

    err = expand(plan, ch, n_ch, eps, eps_text, n_eps, errmsg);
    if (err)
        goto fail;
    uint64_t per_cfg = plan->trials * plan->horizon; /* both bounded: no overflow */
    if (per_cfg > UINT64_MAX / 2 / plan->n_cfg) {
        err =
            fail(errmsg, LDPB_ERANGE,
                 "%zu configurations x %llu trials x %llu rounds is beyond 2^63 rounds",
                 plan->n_cfg, (unsigned long long)plan->trials, (unsigned long long)plan->horizon);
        goto fail;
    }
    plan->rounds_total = per_cfg * plan->n_cfg;

    plan->n_checkpoints = agg_sim_checkpoints(plan->horizon, SIMPLAN_PER_DECADE, NULL, 0);
    plan->checkpoints = calloc(plan->n_checkpoints, sizeof *plan->checkpoints);
    if (!plan->checkpoints) {
        err = fail(errmsg, LDPB_ENOMEM, "out of memory");
        goto fail;
    }
    plan->n_checkpoints = agg_sim_checkpoints(plan->horizon, SIMPLAN_PER_DECADE, plan->checkpoints,
                                              plan->n_checkpoints);

    /* The engine validates what the policies would accept, before anything runs. */
    sc = calloc(plan->n_cfg, sizeof *sc);
    if (!sc) {
        err = fail(errmsg, LDPB_ENOMEM, "out of memory");
        goto fail;
    }
    simplan_sim_configs(plan, sc);
    for (size_t i = 0; i < plan->n_cfg; i++) {
        char msg[AGG_ERRMSG_MAX];
        err = agg_sim_check(&sc[i], msg);
        if (err) {
            const simplan_config *c = &plan->cfg[i];
            fail(errmsg, err, "%s %s epsilon %s on %s (K = %u): %s", c->ops->name,
                 simplan_mech_name(c), c->eps_text, plan->inst[c->instance].label,
                 plan->inst[c->instance].k, msg);
            goto fail;
        }
    }
    free(sc);
    free(ch);
    free(eps);
    free(eps_text);
    return LDPB_OK;
fail:
    free(sc);
    free(ch);
    free(eps);
    free(eps_text);
    simplan_fini(plan);
    return err;
}
