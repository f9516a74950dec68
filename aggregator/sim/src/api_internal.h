/* What `ldpb sim` reads of a finished ldpb_sim besides the public API (ldpb/sim.h): the plan and
 * the reduced statistics, for its CSV files, plots, meta.txt and console claims. Internal to
 * the ldpb tool; the shared library does not export these. */
#ifndef LDPB_SIM_API_INTERNAL_H
#define LDPB_SIM_API_INTERNAL_H

#include "cli_text.h"
#include "ldpb/sim.h"
#include "plan.h"
#include "poison.h"
#include "report.h"

/* NULL before a successful ldpb_sim_run. */
const simplan *simapi_plan(const ldpb_sim *s);
const simreport *simapi_report(const ldpb_sim *s);
unsigned simapi_threads(const ldpb_sim *s);
/* The poisoning devices of the batch (fraction 0: none), once prepared. */
const agg_poison *simapi_poison(const ldpb_sim *s);
/* "local", "central" or "nonprivate" for an agg_model. */
const char *simapi_model_name(int model);
/* The i-th option of `ldpb sim` that shapes the plan: its command-line name (NULL past the last)
 * and, in *offset, where its text sits in a simplan_opts. One table for ldpb_sim_set's names and
 * the command's arguments. */
const char *simapi_plan_opt(size_t i, size_t *offset);

#endif
