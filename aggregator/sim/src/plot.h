/* The figures of `ldpb sim`: a gnuplot script and one data file per configuration, written under
 * DIR/plots, drawing regret against t on log-log axes with shaded 95% bands and the lower-bound
 * shapes of docs/derivations.md 13 as dashed reference curves. Running gnuplot is the caller's job
 * (the script is self-contained: `cd DIR/plots && gnuplot plots.gp`). docs/sim.md lists the
 * figures. */
#ifndef LDPB_TOOLS_SIM_PLOT_H
#define LDPB_TOOLS_SIM_PLOT_H

#include <stddef.h>

#include "report.h"

#define SIMPLOT_SCRIPT "plots.gp"

/* Writes plots_dir/data/c<N>.dat for every configuration and plots_dir/plots.gp, which renders
 * each figure as <stem>.png (pngcairo) and <stem>.svg. plots_dir and plots_dir/data must exist.
 * Returns the number of figures (>= 1), or -1 with a message in errmsg (cap bytes) on an I/O or
 * memory error. */
long simplot_write(const simreport *r, const char *plots_dir, char *errmsg, size_t cap);

#endif
