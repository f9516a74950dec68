/* ldpb audit: an empirical privacy and fidelity audit of the production mechanism code. Parses
 * the command line (through the audit library, so the tests exercise the same parser), runs
 * the audit engine on ldpb_mech_privatize_unit, and prints the table, the privacy bound and the
 * one-line verdict, which is always the last line. docs/audit.md explains how to read it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "audit.h"
#include "commands.h"
#include "ldpb/mech.h"
#include "ldpb/mech_table.h"
#include "ldpb/rng.h"

#define PROG "ldpb audit"

#define EXIT_PASS  0
#define EXIT_FAIL  1 /* the audit failed, or it could not run (RNG, memory) */
#define EXIT_USAGE 2

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ldpb audit -m MECH -e EPS [-n N] [--alpha A] [--kappa K] [--seed S]\n"
            "\n"
            "Draws N outputs of the production mechanism MECH at epsilon EPS for each of a grid\n"
            "of inputs in [0, 1] and checks them with Clopper-Pearson intervals that all hold\n"
            "together with probability 1 - A:\n"
            "  privacy   no lower confidence bound on ln(P(S|x) / P(S|x')) exceeds EPS\n"
            "  fidelity  every interval contains the nominal mechanism's probability\n"
            "  support   every output is one the mechanism can produce\n"
            "The last line is 'PASS: MECH eps=EPS ...' or 'FAIL: MECH eps=EPS REASON'.\n"
            "A PASS is evidence, not proof: the privacy proof is in docs/privacy.md.\n"
            "\n"
            "options:\n"
            "  -m, --mechanism MECH  linear, quadratic, exponential or laplace\n"
            "  -e, --epsilon EPS     claimed per-report epsilon, in [%g, %g]\n"
            "  -n, --samples N       draws per input, in [%d, %llu]; default: enough to FAIL a\n"
            "                        mechanism whose epsilon is %.1fx EPS with probability\n"
            "                        >= 1 - %g (docs/audit.md), capped at a few seconds\n"
            "      --alpha A         probability that a correct mechanism FAILs, in [%g, %g]\n"
            "                        (default %g)\n"
            "      --kappa K         quadratic curvature, in [-1, 1] (default %g); quadratic only\n"
            "      --seed S          reproducible draws derived from the text S (default: the\n"
            "                        system's secure generator)\n"
            "  -h, --help            print this help and exit\n"
            "\n"
            "Exit status: 0 PASS, 1 FAIL (or the audit could not run), 2 bad arguments.\n",
            AUDIT_EPSILON_MIN, LDPB_EPSILON_MAX, AUDIT_SAMPLES_MIN,
            (unsigned long long)AUDIT_SAMPLES_MAX, AUDIT_INFLATION, AUDIT_BETA, AUDIT_ALPHA_MIN,
            AUDIT_ALPHA_MAX, AUDIT_ALPHA_DEFAULT, LDPB_KAPPA_DEFAULT);
}

static void print_report(const audit_report *r, const char *seed)
{
    int bernoulli = isnan(r->grid);
    printf("%s: %s mechanism, claimed epsilon %g", PROG, ldpb_mech_kind_name(r->opts.kind),
           r->opts.epsilon);
    if (ldpb_mech_desc_of((int)r->opts.kind)->params & LDPB_MECH_PARAM_KAPPA)
        printf(", kappa %g", r->opts.kappa);
    printf("\n%llu draws at each of %zu inputs (%s); alpha %g, so each of the %zu intervals "
           "below misses with probability <= %.3g\n",
           (unsigned long long)r->opts.samples, r->n_inputs,
           seed ? "seeded: reproducible, not secret" : "system secure generator", r->opts.alpha,
           r->n_inputs * r->n_regions, r->level);
    if (!bernoulli)
        printf("output regions have edges at half-grid offsets of the grid %.6g (noise scale "
               "b = %.6g)\n",
               r->grid, 1.0 / r->opts.epsilon);
    printf("\n%-7s %-24s %12s %10s %-25s %10s  %s\n", "input", bernoulli ? "output" : "region",
           "count", "estimate", "Clopper-Pearson interval", "nominal", "fidelity");
    for (size_t i = 0; i < r->n_inputs; i++) {
        for (size_t g = 0; g < r->n_regions; g++) {
            const audit_cell *c = &r->cells[i * r->n_regions + g];
            char region[64], interval[64];
            audit_region_text(r, g, 0, region, sizeof region);
            snprintf(interval, sizeof interval, "[%.6f, %.6f]", c->lo, c->hi);
            printf("%-7.4g %-24s %12llu %10.6f %-25s %10.6f  %s\n", r->inputs[i], region,
                   (unsigned long long)c->count, c->estimate, interval, c->nominal,
                   c->ok ? "ok" : "FAIL");
        }
    }
    char where[80];
    audit_region_text(r, r->priv_region, r->priv_complement, where, sizeof where);
    printf("\nprivacy: epsilon lower bound %.4f, the largest lower confidence bound on\n"
           "  ln(P(S|x) / P(S|x')) over ordered input pairs and every region S above and its\n"
           "  complement; attained at x=%g vs x=%g for S: %s; claimed %g: %s\n",
           r->eps_lower, r->inputs[r->priv_num], r->inputs[r->priv_den], where, r->opts.epsilon,
           r->privacy_ok ? "ok" : "FAIL");
    printf("fidelity: %zu of %zu intervals exclude the nominal probability: %s\n",
           r->fidelity_failures, r->n_inputs * r->n_regions, r->fidelity_ok ? "ok" : "FAIL");
    printf("support: %llu outputs the claimed mechanism cannot produce: %s\n",
           (unsigned long long)r->off_support, r->support_ok ? "ok" : "FAIL");
    if (!isnan(r->miss))
        printf("power: a %s mechanism at epsilon %g would PASS with probability <= %.2g\n",
               ldpb_mech_kind_name(r->opts.kind), AUDIT_INFLATION * r->opts.epsilon, r->miss);
    if (!(r->miss <= AUDIT_BETA) && !isnan(r->miss))
        printf("note: fewer draws than the power rule asks for; raise --samples for a "
               "stronger audit\n");
}

int cmd_audit(int argc, char **argv)
{
    audit_cli cli;
    char err[256];
    ldpb_mech *mech = NULL;
    ldpb_rng *rng = NULL;
    audit_report *report = NULL;
    int rc = EXIT_FAIL;

    gsl_set_error_handler_off();
    if (audit_cli_parse(argc, argv, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", PROG, err);
        fprintf(stderr, "Run 'ldpb audit --help' for usage.\n");
        return EXIT_USAGE;
    }
    if (cli.help) {
        usage(stdout);
        return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_PASS : EXIT_FAIL;
    }

    ldpb_mech_opts mo;
    ldpb_mech_opts_init(&mo, cli.opts.kind, cli.opts.epsilon);
    mo.kappa = cli.opts.kappa;
    ldpb_err e = ldpb_mech_new(&mech, &mo);
    if (e) {
        fprintf(stderr, "%s: cannot build the %s mechanism at epsilon %g: %s\n", PROG,
                ldpb_mech_kind_name(cli.opts.kind), cli.opts.epsilon, ldpb_strerror(e));
        rc = e == LDPB_ENOMEM ? EXIT_FAIL : EXIT_USAGE;
        goto done;
    }
    if (cli.seed) {
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        ldpb_rng_seed_from_text(seed, cli.seed);
        e = ldpb_rng_new_seeded(&rng, seed);
    } else {
        e = ldpb_rng_new_system(&rng);
    }
    if (e) {
        fprintf(stderr, "%s: cannot create the random generator: %s\n", PROG, ldpb_strerror(e));
        goto done;
    }
    e = audit_run(&cli.opts, audit_sample_mech, mech, rng, &report);
    if (e) {
        fprintf(stderr, "%s: the audit could not run: %s\n", PROG, ldpb_strerror(e));
        goto done;
    }
    print_report(report, cli.seed);
    char verdict[1024];
    audit_verdict(report, verdict, sizeof verdict);
    printf("\n%s\n", verdict);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "%s: cannot write to standard output\n", PROG);
        goto done;
    }
    rc = report->pass ? EXIT_PASS : EXIT_FAIL;

done:
    audit_report_free(report);
    ldpb_rng_free(rng);
    ldpb_mech_free(mech);
    return rc;
}
