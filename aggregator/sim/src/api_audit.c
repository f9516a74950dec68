/* The audit in libldpb-sim's public API (ldpb/sim.h): `ldpb audit` without the printing. The
 * arguments go through the command's own parser (as the argv it would see), so a call refuses
 * what the command refuses, with its message, and runs what it runs: the same mechanism, the
 * same generator for a seed, the same verdict line. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "audit.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"
#include "ldpb/sim.h"

#define ARGV_MAX 16

static void put_msg(char *errmsg, size_t errlen, const char *msg)
{
    if (errmsg && errlen)
        snprintf(errmsg, errlen, "%s", msg);
}

static ldpb_err run(const audit_cli *cli, ldpb_audit_result *out, char *errmsg, size_t errlen)
{
    ldpb_mech *mech = NULL;
    ldpb_rng *rng = NULL;
    audit_report *report = NULL;
    ldpb_mech_opts mo;
    ldpb_mech_opts_init(&mo, cli->opts.kind, cli->opts.epsilon);
    mo.kappa = cli->opts.kappa;
    ldpb_err err = ldpb_mech_new(&mech, &mo);
    if (err) {
        char m[160];
        snprintf(m, sizeof m, "cannot build the %s mechanism at epsilon %g: %s",
                 ldpb_mech_kind_name(cli->opts.kind), cli->opts.epsilon, ldpb_strerror(err));
        put_msg(errmsg, errlen, m);
        goto done;
    }
    if (cli->seed) {
        uint8_t seed[LDPB_RNG_SEED_BYTES];
        ldpb_rng_seed_from_text(seed, cli->seed);
        err = ldpb_rng_new_seeded(&rng, seed);
    } else {
        err = ldpb_rng_new_system(&rng);
    }
    if (err) {
        put_msg(errmsg, errlen, "cannot create the random generator");
        goto done;
    }
    err = audit_run(&cli->opts, audit_sample_mech, mech, rng, &report);
    if (err) {
        put_msg(errmsg, errlen, ldpb_strerror(err));
        goto done;
    }
    out->pass = report->pass;
    out->privacy_ok = report->privacy_ok;
    out->fidelity_ok = report->fidelity_ok;
    out->support_ok = report->support_ok;
    out->eps_lower = report->eps_lower;
    out->samples = report->opts.samples;
    out->alpha = report->opts.alpha;
    out->n_inputs = report->n_inputs;
    out->fidelity_failures = report->fidelity_failures;
    out->off_support = report->off_support;
    out->miss = report->miss;
    audit_verdict(report, out->verdict, sizeof out->verdict);
done:
    audit_report_free(report);
    ldpb_rng_free(rng);
    ldpb_mech_free(mech);
    return err;
}

ldpb_err ldpb_audit_mech(const char *mechanism, double epsilon, double kappa, uint64_t samples,
                         double alpha, const char *seed, ldpb_audit_result *out, char *errmsg,
                         size_t errlen)
{
    put_msg(errmsg, errlen, "");
    if (!mechanism || !out) {
        put_msg(errmsg, errlen, "NULL argument");
        return LDPB_EINVAL;
    }
    memset(out, 0, sizeof *out);
    out->miss = NAN;
    /* %.17g reads back as the same double, so the parser sees the caller's exact values. */
    char eps[32], kap[32], n[32], al[32];
    char *argv[ARGV_MAX] = {"audit", "-m", (char *)mechanism, "-e", eps};
    int argc = 5;
    snprintf(eps, sizeof eps, "%.17g", epsilon);
    if (!isnan(kappa)) {
        snprintf(kap, sizeof kap, "%.17g", kappa);
        argv[argc++] = "--kappa";
        argv[argc++] = kap;
    }
    if (samples) {
        snprintf(n, sizeof n, "%llu", (unsigned long long)samples);
        argv[argc++] = "--samples";
        argv[argc++] = n;
    }
    if (alpha != 0.0) {
        snprintf(al, sizeof al, "%.17g", alpha);
        argv[argc++] = "--alpha";
        argv[argc++] = al;
    }
    if (seed) {
        argv[argc++] = "--seed";
        argv[argc++] = (char *)seed;
    }
    argv[argc] = NULL;
    audit_cli cli;
    char msg[256];
    if (audit_cli_parse(argc, argv, &cli, msg, sizeof msg) != 0) {
        put_msg(errmsg, errlen, msg);
        /* The parser reports usage errors only; its messages say "outside" for a range. */
        return strstr(msg, "outside") ? LDPB_ERANGE : LDPB_EINVAL;
    }
    gsl_set_error_handler_off();
    return run(&cli, out, errmsg, errlen);
}
