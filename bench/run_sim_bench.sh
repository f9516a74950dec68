#!/bin/sh
# Rounds per second per core of the aggregator's policies (bench_sim, C) against the same loops in
# numpy (bench/sim_numpy.py), as one table: policy, K, C rounds/s, numpy rounds/s, ratio. Both
# sides divide T rounds by the thread's CPU time (median of three runs, each >= SECONDS CPU
# seconds), so a busy machine stretches the wall clock more than the figures; the machine and
# the load average are printed with them. Prints figures only, never a verdict.
#
# Usage: bench/run_sim_bench.sh [SECONDS]        (default 1)
# Environment: BUILD_DIR (default /tmp/build-bench; configured as a Release build with Ninja if
# it does not exist), PYTHON (default /usr/bin/python3: Debian's interpreter with python3-numpy).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-/tmp/build-bench}
python=${PYTHON:-/usr/bin/python3}
seconds=${1:-1}

if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
if ! ninja -C "$build" bench_sim bench_linucb >"$build/run_sim_bench.log" 2>&1; then
    # A tree others are editing may not configure; an existing binary still gives figures.
    [ -x "$build/bench/bench_sim" ] || { cat "$build/run_sim_bench.log" >&2; exit 1; }
    echo "run_sim_bench: build failed (see $build/run_sim_bench.log); using the existing" \
        "$build/bench/bench_sim" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

"$build/bench/bench_sim" --tsv --seconds "$seconds" >"$tmp/c.tsv"
"$python" "$here/sim_numpy.py" --tsv --seconds "$seconds" >"$tmp/numpy.tsv"

grep '^#' "$tmp/c.tsv" | grep -v 'load average after'
grep '^#' "$tmp/numpy.tsv"
grep 'load average after' "$tmp/c.tsv" | sed 's/after/after the C runs/'
printf '# load average after the numpy runs: %s\n' "$(cat /proc/loadavg 2>/dev/null || echo unavailable)"
echo

# Join on the case label; cases without a numpy twin (dp-ucb-secure) show "-".
awk -F '\t' '
    FILENAME != prev { file++; prev = FILENAME }
    /^#/ || $1 == "label" { next }
    file == 1 { order[++n] = $1; k[$1] = $4; noise[$1] = $5; c[$1] = $6; next }
    file == 2 { np[$1] = $3 }
    END {
        printf "%-14s %3s %-6s %14s %16s %8s\n", "policy", "K", "noise", "C rounds/s",
               "numpy rounds/s", "ratio"
        for (i = 1; i <= n; i++) {
            l = order[i]
            if (l in np)
                printf "%-14s %3d %-6s %14.0f %16.0f %7.1fx\n", l, k[l], noise[l], c[l], np[l],
                       c[l] / np[l]
            else
                printf "%-14s %3d %-6s %14.0f %16s %8s\n", l, k[l], noise[l], c[l], "-", "-"
        }
    }' "$tmp/c.tsv" "$tmp/numpy.tsv"
echo
echo "# rounds/s: T rounds over the thread's CPU time, median of 3 runs; one core, one thread."
echo "# ldp-*: client privatization (linear mechanism, epsilon 1) inside the round on both sides."
echo "# dp-ucb-secure: dp-ucb with AGG_NOISE_SECURE (ChaCha20 ldpb_rng, grid Laplace); no numpy twin."

# Contextual policies (bench_linucb against bench/linucb_numpy.py): one round at d = 10, K = 20.
if [ -x "$build/bench/bench_linucb" ]; then
    "$build/bench/bench_linucb" --tsv --seconds "$seconds" >"$tmp/lc.tsv"
    "$python" "$here/linucb_numpy.py" --tsv --seconds "$seconds" >"$tmp/lnumpy.tsv"
    echo
    awk -F '\t' '
        FILENAME != prev { file++; prev = FILENAME }
        /^#/ || $1 == "label" { next }
        file == 1 { order[++n] = $1; d[$1] = $2; k[$1] = $3; c[$1] = $4; next }
        file == 2 { np[$1] = $4 }
        END {
            printf "%-20s %3s %3s %14s %16s %8s\n", "policy", "d", "K", "C rounds/s",
                   "numpy rounds/s", "ratio"
            for (i = 1; i <= n; i++) {
                l = order[i]
                if (l in np)
                    printf "%-20s %3d %3d %14.0f %16.0f %7.1fx\n", l, d[l], k[l], c[l], np[l],
                           c[l] / np[l]
                else
                    printf "%-20s %3d %3d %14.0f %16s %8s\n", l, d[l], k[l], c[l], "-", "-"
            }
        }' "$tmp/lc.tsv" "$tmp/lnumpy.tsv"
    echo
    echo "# linucb / jdp-*: choose among K = 20 unit actions (Cholesky of the released d x d matrix"
    echo "# from scratch, beta_t, K quadratic forms) and observe (tree update, node noise redrawn"
    echo "# for every level that changes); -secure: noise from the ChaCha20 ldpb_rng; no numpy twin."
fi
