#!/usr/bin/env bash
# Contract tests for `ldpb sim --preset sajed2019-nas` (docs/sim.md, "sajed2019-nas"): --help
# lists it, options that do not apply are refused (exit 2, one line), the run writes stopping.csv
# with its documented header and one row per cell, meta.txt and run.txt but no regret.csv or
# summary.csv, the CSV is byte-identical whatever --threads, the console prints the fitted slopes
# and the beta claim, and the figures are drawn when gnuplot is installed. A few seconds.
set -euo pipefail

LDPB=${1:?usage: test_sim_nas.sh PATH/TO/ldpb}
LDPB=$(cd "$(dirname "$LDPB")" && pwd)/$(basename "$LDPB")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

failures=0
checks=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
check() {
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        fail "$what"
    fi
}
run() {
    set +e
    "$LDPB" sim "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}
usage_case() { # usage_case PATTERN ARGS...
    local pattern=$1
    shift
    run "$@"
    check "sim $*: exit 2 (got $rc)" test "$rc" = 2
    check "sim $*: one line on stderr" test "$(wc -l <err)" = 1
    check "sim $*: message '$pattern' (got: $(cat err))" grep -q -- "$pattern" err
    check "sim $*: nothing written" test ! -e nothing
}

HEADER='preset,algorithm,epsilon,gap,alpha,beta,trials,mean_samples,ci95_low,ci95_high,sd,median,min,max,rate,ratio,t_upper,halted,wrong_sign,inaccurate,failure_rate,failure_ci95_high'

run --help
check "--help lists sajed2019-nas" grep -q '^  sajed2019-nas$' out
check "--help documents --gaps" grep -q -- '--gaps LIST' out
check "--help says there is no regret.csv for it" grep -q 'no regret.csv' out

usage_case "--k does not apply to --preset sajed2019-nas" --preset sajed2019-nas --k 3 --out nothing
usage_case "--horizon does not apply" --preset sajed2019-nas --horizon 100 --out nothing
usage_case "--means does not apply" --preset sajed2019-nas --means 0.1,0.2 --out nothing
usage_case "--gaps applies to --preset sajed2019-nas only" --preset jiang2023 --gaps 0.1 --out nothing
usage_case "--gaps: 1.5 outside" --preset sajed2019-nas --gaps 1.5 --out nothing
usage_case "is not a stopping rule" --preset sajed2019-nas --algorithms ucb1 --out nothing

A=(--preset sajed2019-nas --gaps 0.4,0.8 --epsilons 0.5,1 --trials 8 --seed cli --quiet)
run "${A[@]}" --threads 1 --out one --no-plots
check "run: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "run: stopping.csv header" test "$(head -1 one/stopping.csv)" = "$HEADER"
check "run: 2 x 2 x 2 rows" test "$(tail -n +2 one/stopping.csv | wc -l)" = 8
check "run: no regret.csv" test ! -e one/regret.csv
check "run: no summary.csv" test ! -e one/summary.csv
check "run: meta.txt and run.txt" test -s one/meta.txt -a -s one/run.txt
check "run: rows in order" test "$(cut -d, -f2-4 one/stopping.csv | tail -n +2 | tr '\n' ' ')" = \
    "dp-nas,0.5,0.4 dp-nas,1,0.4 dp-nas,0.5,0.8 dp-nas,1,0.8 dp-exp-nas,0.5,0.4 dp-exp-nas,1,0.4 dp-exp-nas,0.5,0.8 dp-exp-nas,1,0.8 "
check "console: slopes in 1/gap" grep -q 'log-log slope in 1/gap' out
check "console: slopes in 1/eps" grep -q 'log-log slope in 1/eps' out
check "console: the beta claim" grep -q 'claim (SS19 Thm 3.1, Cor. 3.2)' out
run "${A[@]}" --threads 2 --out two --no-plots
check "threads 2: exit 0" test "$rc" = 0
check "threads 1 and 2: identical stopping.csv" cmp -s one/stopping.csv two/stopping.csv

if command -v gnuplot >/dev/null; then
    run "${A[@]}" --out plotted
    check "plots: exit 0 (got $rc: $(cat err))" test "$rc" = 0
    for f in dp-nas-by-gap dp-nas-by-eps dp-exp-nas-by-gap dp-exp-nas-by-eps; do
        check "plots: $f.png and .svg" test -s "plotted/plots/$f.png" -a -s "plotted/plots/$f.svg"
    done
fi

echo "$checks checks, $failures failures"
test "$failures" = 0
