/* What `ldpb sim`'s front ends share to write a run's output directory: mkdir -p, a monotonic
 * clock, and drawing the figures with gnuplot in a child process (tools/cmd_sim.c for the engine's
 * presets, tools/cmd_sim_ctx.c for the contextual one). */
#ifndef LDPB_SIM_OUTDIR_H
#define LDPB_SIM_OUTDIR_H

/* mkdir -p: creates every missing component of path (mode 0777 before the umask). 0, or -1 with
 * errno set (ENAMETOOLONG, ENOTDIR when path exists and is no directory, or mkdir's). */
int simout_make_dirs(const char *path);

/* Seconds on the monotonic clock. */
double simout_now_seconds(void);

/* 1 if an executable `name` is on PATH, else 0. */
int simout_have_program(const char *name);

/* Runs `gnuplot SCRIPT` in dir with its output in dir/gnuplot.log and no standard input.
 * Returns gnuplot's exit status (128 + the signal if it was killed), or -1 if it could not be
 * started. */
int simout_run_gnuplot(const char *dir, const char *script);

#endif
