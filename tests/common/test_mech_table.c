/* The mechanism table (common/include/ldpb/mech_table.h): every row round-trips between its name,
 * its id, the wire enum and ldpb_mech_kind; the admissibility rule of a report's value, per kind;
 * the wire decoder's check agrees with the table's on every combination, because it is the
 * table's; and the serviceability check the daemon runs on its configuration. */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/wire.h"

static void every_row_round_trips(void **state)
{
    (void)state;
    size_t n = 0;
    const ldpb_mech_desc *const *t = ldpb_mech_table(&n);
    assert_true(n >= 5);
    size_t local = 0;
    for (size_t i = 0; i < n; i++) {
        const ldpb_mech_desc *d = t[i];
        assert_ptr_equal(ldpb_mech_desc_of(d->id), d);
        assert_ptr_equal(ldpb_mech_desc_by_name(d->name), d);
        assert_true(d->output == LDPB_MECH_OUTPUT_BIT || d->output == LDPB_MECH_OUTPUT_REAL ||
                    d->output == LDPB_MECH_OUTPUT_VECTOR);

        /* The wire enum holds the same value under the same name (upper case). */
        const ProtobufCEnumValue *w =
            protobuf_c_enum_descriptor_get_value(&ldpb__v1__mechanism__descriptor, d->id);
        assert_non_null(w);
        char lower[32];
        size_t k = 0;
        for (; w->name[k] && k + 1 < sizeof lower; k++)
            lower[k] = w->name[k] == '_' ? '-' : (char)tolower((unsigned char)w->name[k]);
        lower[k] = '\0';
        assert_string_equal(lower, d->name);

        if (d->output == LDPB_MECH_OUTPUT_VECTOR) {
            /* Built by ldpb_ctxstat_new from the local model's parameters, never by
             * ldpb_mech_new: the scalar entry points refuse it. */
            assert_true(d->local);
            assert_false(ldpb_mech_desc_scalar(d));
            ldpb_mech_opts o;
            assert_int_equal(ldpb_mech_desc_opts(d->id, 1.0, 0.0, &o), LDPB_EINVAL);
            ldpb_mech_kind kind;
            assert_int_equal(ldpb_mech_kind_from_name(d->name, &kind), LDPB_EINVAL);
            assert_int_equal(ldpb_mech_check_serviceable(d->id, 1.0, 0.0, NULL), LDPB_EINVAL);
            assert_int_equal(ldpb_mech_check_field(d->id, 1.0, 0, 0.5, "r", NULL), LDPB_EINVAL);
            assert_int_equal(ldpb_mech_check_field(d->id, 1.0, 1, 1.0, "r", NULL), LDPB_EINVAL);
            continue;
        }
        if (d->local) {
            local++;
            /* ldpb_mech_kind is the id; the mechanism builds with it and reports what it is. */
            assert_string_equal(ldpb_mech_kind_name((ldpb_mech_kind)d->id), d->name);
            ldpb_mech_kind kind = (ldpb_mech_kind)0;
            assert_int_equal(ldpb_mech_kind_from_name(d->name, &kind), LDPB_OK);
            assert_int_equal(kind, d->id);
            assert_non_null(d->init);
            assert_non_null(d->sample);
            assert_non_null(d->debias);
            assert_non_null(d->radius);
            assert_true((d->shape != NULL) == (d->output == LDPB_MECH_OUTPUT_BIT));
            ldpb_mech_opts o;
            assert_int_equal(ldpb_mech_desc_opts(d->id, 1.0, -0.25, &o), LDPB_OK);
            assert_int_equal(o.kind, d->id);
            assert_true(o.kappa == ((d->params & LDPB_MECH_PARAM_KAPPA) ? -0.25 : 0.5));
            ldpb_mech *m = NULL;
            assert_int_equal(ldpb_mech_new(&m, &o), LDPB_OK);
            assert_int_equal(ldpb_mech_get_kind(m), d->id);
            assert_int_equal(ldpb_mech_is_bernoulli(m), d->output == LDPB_MECH_OUTPUT_BIT);
            ldpb_mech_free(m);
        } else {
            /* raw: no mechanism to build, and not an ldpb_mech_kind. */
            assert_int_equal(d->id, LDPB_MECH_ID_RAW);
            assert_int_equal(d->output, LDPB_MECH_OUTPUT_REAL);
            assert_null(d->init);
            ldpb_mech_kind kind;
            assert_int_equal(ldpb_mech_kind_from_name(d->name, &kind), LDPB_EINVAL);
            assert_string_equal(ldpb_mech_kind_name((ldpb_mech_kind)d->id), "unknown");
            ldpb_mech_opts o;
            assert_int_equal(ldpb_mech_desc_opts(d->id, 1.0, 0.5, &o), LDPB_EINVAL);
        }
    }
    assert_int_equal(local, n - 2); /* all but raw and the vector row */
    /* Every wire value but MECHANISM_UNSPECIFIED is a row. */
    for (unsigned i = 0; i < ldpb__v1__mechanism__descriptor.n_values; i++) {
        int v = ldpb__v1__mechanism__descriptor.values[i].value;
        assert_true((v == 0) == (ldpb_mech_desc_of(v) == NULL));
    }
    assert_null(ldpb_mech_desc_of(0));
    assert_null(ldpb_mech_desc_of(99));
    assert_null(ldpb_mech_desc_by_name("Linear"));
    assert_null(ldpb_mech_desc_by_name(NULL));
    /* The names the tools and config files know. */
    assert_int_equal(ldpb_mech_desc_by_name("quadratic")->params,
                     LDPB_MECH_PARAM_KAPPA | LDPB_MECH_PARAM_ENDPOINTS);
    assert_int_equal(ldpb_mech_desc_by_name("laplace")->output, LDPB_MECH_OUTPUT_REAL);
    assert_int_equal(ldpb_mech_desc_by_name("linear")->output, LDPB_MECH_OUTPUT_BIT);
    assert_int_equal(ldpb_mech_desc_by_name("raw")->local, 0);
}

typedef struct value_case {
    int id;
    double eps;
    int is_bit;
    double value;
    ldpb_err field, value_err; /* ldpb_mech_check_field, ldpb_mech_check_value */
} value_case;

static void admissibility_per_kind(void **state)
{
    (void)state;
    const int L = LDPB_MECH_LINEAR, Q = LDPB_MECH_QUADRATIC, E = LDPB_MECH_EXPONENTIAL,
              P = LDPB_MECH_LAPLACE, R = LDPB_MECH_ID_RAW;
    const ldpb_err OK = LDPB_OK, INV = LDPB_EINVAL, RNG = LDPB_ERANGE;
    const value_case cases[] = {
        /* Bernoulli kinds: a bit, 0 or 1, never a real. */
        {L, 1, 1, 0, OK, OK},
        {Q, 1, 1, 1, OK, OK},
        {E, 0.5, 1, 1, OK, OK},
        {L, 1, 1, 2, RNG, RNG},
        {E, 1, 1, 4294967295.0, RNG, RNG},
        {L, 1, 0, 1, INV, INV},
        {Q, 1, 0, 0, INV, INV},
        {E, 1, 0, NAN, INV, INV},
        /* Laplace: a finite real within 100 noise scales of [0, 1], never a bit. */
        {P, 1, 0, 0.5, OK, OK},
        {P, 1, 0, -7.25, OK, OK},
        {P, 1, 0, 100.5, OK, OK},
        {P, 1, 0, -100.0, OK, OK},
        {P, 1, 0, 101.0, OK, OK},     /* exactly 0.5 + 0.5 + 100/eps */
        {P, 1, 0, 101.0625, OK, RNG}, /* just beyond */
        {P, 1, 0, -100.0625, OK, RNG},
        {P, 0.01, 0, 10000.5, OK, OK},
        {P, 0.01, 0, 10002.0, OK, RNG},
        {P, 1, 0, 1e300, OK, RNG},
        {P, 1, 0, -1e300, OK, RNG},
        {P, 1, 0, NAN, INV, INV},
        {P, 1, 0, INFINITY, INV, INV},
        {P, 1, 1, 1, INV, INV},
        {P, 1, 1, 0, INV, INV},
        /* raw: a real reward in [0, 1] at epsilon exactly 0. */
        {R, 0, 0, 0.25, OK, OK},
        {R, 0, 0, 0.0, OK, OK},
        {R, 0, 0, -0.0, OK, OK},
        {R, 0, 0, 1.0, OK, OK},
        {R, 0, 0, 1.5, OK, RNG},
        {R, 0, 0, -0.25, OK, RNG},
        {R, 0, 0, NAN, INV, INV},
        {R, 0, 0, -INFINITY, INV, INV},
        {R, 0, 1, 1, INV, INV},
        /* The epsilon must suit the kind. */
        {R, 0.5, 0, 0.25, RNG, RNG},
        {L, 0, 1, 1, RNG, RNG},
        {P, 0, 0, 0.5, RNG, RNG},
        {P, 11, 0, 0.5, RNG, RNG},
        {L, -1, 1, 1, RNG, RNG},
        {L, NAN, 1, 1, INV, INV},
        {R, NAN, 0, 0.5, INV, INV},
        {L, INFINITY, 1, 1, INV, INV},
        /* Unknown mechanisms. */
        {0, 1, 1, 1, INV, INV},
        {6, 1, 0, 0.5, INV, INV},
        {-1, 1, 1, 0, INV, INV},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const value_case *c = &cases[i];
        char detail[LDPB_MECH_DETAIL_BYTES] = "";
        ldpb_err f = ldpb_mech_check_field(c->id, c->eps, c->is_bit, c->value, "report", detail);
        ldpb_err v = ldpb_mech_check_value(c->id, c->eps, c->is_bit, c->value, "report", detail);
        if (f != c->field || v != c->value_err) {
            print_error("case %zu (mechanism %d, eps %g, %s %g): field %s value %s, want %s %s\n",
                        i, c->id, c->eps, c->is_bit ? "bit" : "real", c->value, ldpb_errname(f),
                        ldpb_errname(v), ldpb_errname(c->field), ldpb_errname(c->value_err));
            fail();
        }
        if (v != LDPB_OK)
            assert_true(detail[0] != '\0' && strlen(detail) < LDPB_MECH_DETAIL_BYTES);
        /* NULL detail is allowed everywhere. */
        assert_int_equal(ldpb_mech_check_value(c->id, c->eps, c->is_bit, c->value, "r", NULL), v);
    }
}

/* The wire decoder's check of a Report (which both the client's encoder and the daemon's decoder
 * run) gives exactly the table's answer on every combination of mechanism, epsilon, field and
 * value, including the ones no honest sender produces. */
static void wire_report_check_is_the_tables(void **state)
{
    (void)state;
    const double eps[] = {0.0, 0.01, 1.0, 10.0, 11.0, -1.0, NAN, INFINITY};
    const double reals[] = {0.0,   -0.0,     0.25,  1.0, 1.5,      -0.25,
                            101.0, 101.0625, 1e300, NAN, INFINITY, -INFINITY};
    const uint32_t bits[] = {0, 1, 2, UINT32_MAX};
    const uint8_t id[4] = {1, 2, 3, 4};
    size_t checked = 0;
    for (int mech = 0; mech <= 7; mech++) {
        for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++) {
            for (int is_bit = 0; is_bit <= 1; is_bit++) {
                size_t nv = is_bit ? sizeof bits / sizeof bits[0] : sizeof reals / sizeof reals[0];
                for (size_t j = 0; j < nv; j++) {
                    Ldpb__V1__Report r = LDPB__V1__REPORT__INIT;
                    r.assignment_id.data = (uint8_t *)id;
                    r.assignment_id.len = sizeof id;
                    r.mechanism = (Ldpb__V1__Mechanism)mech;
                    r.epsilon = eps[e];
                    double v;
                    if (is_bit) {
                        r.value_case = LDPB__V1__REPORT__VALUE_BIT;
                        r.bit = bits[j];
                        v = (double)bits[j];
                    } else {
                        r.value_case = LDPB__V1__REPORT__VALUE_REAL;
                        r.real = reals[j];
                        v = reals[j];
                    }
                    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
                    env.protocol_version = LDPB_PROTOCOL_VERSION;
                    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
                    env.report = &r;
                    char d1[LDPB_DETAIL_BYTES] = "", d2[LDPB_MECH_DETAIL_BYTES] = "";
                    ldpb_err w = ldpb_envelope_check(&env, d1);
                    ldpb_err t = ldpb_mech_check_field(mech, eps[e], is_bit, v, "report", d2);
                    if (w != t || strcmp(d1, d2) != 0) {
                        print_error("mechanism %d eps %g %s %g: wire %s '%s', table %s '%s'\n",
                                    mech, eps[e], is_bit ? "bit" : "real", v, ldpb_errname(w), d1,
                                    ldpb_errname(t), d2);
                        fail();
                    }
                    /* What the table admits is well-formed on the wire. */
                    if (ldpb_mech_check_value(mech, eps[e], is_bit, v, "report", NULL) == LDPB_OK)
                        assert_int_equal(w, LDPB_OK);
                    checked++;
                }
            }
        }
    }
    assert_int_equal(checked, 8 * 8 * (4 + 12));
}

/* The Assignment's mechanism, epsilon and kappa are the table's checks too. */
static void wire_assignment_check_is_the_tables(void **state)
{
    (void)state;
    const uint8_t id[4] = {1, 2, 3, 4};
    const double kappas[] = {0.5, -1.0, 1.0, 1.5, NAN};
    for (int mech = 0; mech <= 6; mech++) {
        for (int has_kappa = 0; has_kappa <= 1; has_kappa++) {
            for (size_t k = 0; k < sizeof kappas / sizeof kappas[0]; k++) {
                const ldpb_mech_desc *d = ldpb_mech_desc_of(mech);
                double eps = d && !d->local ? 0.0 : 1.0;
                Ldpb__V1__Assignment a = LDPB__V1__ASSIGNMENT__INIT;
                a.assignment_id.data = (uint8_t *)id;
                a.assignment_id.len = sizeof id;
                a.mechanism = (Ldpb__V1__Mechanism)mech;
                a.epsilon = eps;
                a.propensity = 0.5;
                a.has_kappa = has_kappa;
                a.kappa = kappas[k];
                Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
                env.protocol_version = LDPB_PROTOCOL_VERSION;
                env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGNMENT;
                env.assignment = &a;
                ldpb_err w = ldpb_envelope_check(&env, NULL);
                ldpb_err t = ldpb_mech_check_epsilon(mech, eps, "assignment", NULL);
                if (!t)
                    t = ldpb_mech_check_kappa(mech, has_kappa, kappas[k], "assignment", NULL);
                /* the vector row's assignment needs its local_model besides (test_wire) */
                if (!t && d && d->output == LDPB_MECH_OUTPUT_VECTOR)
                    t = LDPB_EINVAL;
                assert_int_equal(w, t);
            }
        }
    }
    /* Only the quadratic row reads kappa. */
    assert_int_equal(ldpb_mech_check_kappa(LDPB_MECH_QUADRATIC, 1, -1.0, "a", NULL), LDPB_OK);
    assert_int_equal(ldpb_mech_check_kappa(LDPB_MECH_QUADRATIC, 1, 1.5, "a", NULL), LDPB_ERANGE);
    assert_int_equal(ldpb_mech_check_kappa(LDPB_MECH_LINEAR, 1, 0.5, "a", NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_mech_check_kappa(LDPB_MECH_ID_RAW, 1, 0.5, "a", NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_mech_check_kappa(LDPB_MECH_LAPLACE, 0, NAN, "a", NULL), LDPB_OK);
}

/* What the daemon checks at start: the clients can build the mechanism, and its reports can be
 * de-biased. */
static void serviceable(void **state)
{
    (void)state;
    char detail[LDPB_MECH_DETAIL_BYTES];
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LINEAR, 1.0, 0.5, detail), LDPB_OK);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LAPLACE, 1e-6, 0.5, detail), LDPB_OK);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LINEAR, 1e-15, 0.5, detail), LDPB_OK);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_QUADRATIC, 10.0, -1.0, detail), LDPB_OK);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_ID_RAW, 0.0, 0.5, NULL), LDPB_OK);

    /* A Bernoulli mechanism this close to 0 is a fair coin whatever the reward: it builds (its
     * effective epsilon is a denormal), but nothing can be estimated from it. */
    const int bern[] = {LDPB_MECH_LINEAR, LDPB_MECH_QUADRATIC, LDPB_MECH_EXPONENTIAL};
    for (size_t i = 0; i < 3; i++) {
        detail[0] = '\0';
        assert_int_equal(ldpb_mech_check_serviceable(bern[i], 1e-320, 0.5, detail), LDPB_ERANGE);
        assert_non_null(strstr(detail, "reports nothing about the reward"));
    }
    /* Laplace refuses to build below its resolution: no client can serve it. */
    detail[0] = '\0';
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LAPLACE, 1e-12, 0.5, detail),
                     LDPB_ERANGE);
    assert_non_null(strstr(detail, "no client can build the laplace mechanism"));
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LAPLACE, 1e-320, 0.5, NULL),
                     LDPB_ERANGE);
    /* A kappa the quadratic mechanism refuses; one the linear mechanism ignores. */
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_QUADRATIC, 1.0, 2.0, detail),
                     LDPB_ERANGE);
    assert_non_null(strstr(detail, "kappa 2"));
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_QUADRATIC, 1.0, NAN, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LINEAR, 1.0, 2.0, NULL), LDPB_OK);
    /* Epsilons that suit no kind, and unknown kinds. */
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LINEAR, 0.0, 0.5, NULL), LDPB_ERANGE);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_LINEAR, 11.0, 0.5, NULL), LDPB_ERANGE);
    assert_int_equal(ldpb_mech_check_serviceable(LDPB_MECH_ID_RAW, 1.0, 0.5, NULL), LDPB_ERANGE);
    assert_int_equal(ldpb_mech_check_serviceable(99, 1.0, 0.5, NULL), LDPB_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_round_trips),
        cmocka_unit_test(admissibility_per_kind),
        cmocka_unit_test(wire_report_check_is_the_tables),
        cmocka_unit_test(wire_assignment_check_is_the_tables),
        cmocka_unit_test(serviceable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
