#!/usr/bin/env bash
# Contract tests for the smith2013 presets of `ldpb sim` (docs/sim.md): the regret.csv and
# summary.csv headers of every preset, one summary row per configuration and horizon of the
# sweep, byte-identical CSV whatever --threads, and the engine's options refused with exit 2
# and nothing written. Tiny runs: a second or two.
set -euo pipefail

LDPB=${1:?usage: test_sim_ftal.sh PATH/TO/ldpb}
LDPB=$(cd "$(dirname "$LDPB")" && pwd)/$(basename "$LDPB")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
run() {
    set +e
    "$LDPB" sim "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

REGRET_HEADER='preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,trials'
SUMMARY_HEADER='preset,algorithm,mechanism,epsilon,k,horizon,trials,mean_regret,ci95_low,ci95_high,sd,median,min,max'

for preset in smith2013-experts smith2013-bandit; do
    run --preset "$preset" --horizon 2e4 --trials 3 --epsilons 1,inf --k 3 --threads 1 --quiet \
        --no-plots --out "$TMP/$preset-1"
    [ "$rc" = 0 ] || fail "$preset: exit $rc: $(cat "$TMP/err")"
    [ "$(head -1 "$TMP/$preset-1/regret.csv")" = "$REGRET_HEADER" ] || fail "$preset: regret header"
    [ "$(head -1 "$TMP/$preset-1/summary.csv")" = "$SUMMARY_HEADER" ] || fail "$preset: summary header"
    # 2 configurations x horizons 1e3, 1e4, 2e4.
    rows=$(($(wc -l <"$TMP/$preset-1/summary.csv") - 1))
    [ "$rows" = 6 ] || fail "$preset: $rows summary rows, want 6"
    grep -q "^$preset,.*,none,inf,3,20000,3," "$TMP/$preset-1/summary.csv" ||
        fail "$preset: no nonprivate row at T = 2e4"
    grep -q "^$preset,pftal.*,tree-l2,1,3,20000,3," "$TMP/$preset-1/summary.csv" ||
        fail "$preset: no private row at T = 2e4"
    grep -q 'slope' "$TMP/out" || fail "$preset: no slope on stdout"
    run --preset "$preset" --horizon 2e4 --trials 3 --epsilons 1,inf --k 3 --threads 2 --quiet \
        --no-plots --out "$TMP/$preset-2"
    cmp -s "$TMP/$preset-1/regret.csv" "$TMP/$preset-2/regret.csv" &&
        cmp -s "$TMP/$preset-1/summary.csv" "$TMP/$preset-2/summary.csv" ||
        fail "$preset: CSV differ between 1 and 2 threads"
done

run --preset smith2013-experts --means 0.5,0.4 --out "$TMP/bad"
[ "$rc" = 2 ] && grep -q -- '--means does not apply to the smith2013 presets' "$TMP/err" ||
    fail "--means not refused: rc $rc, $(cat "$TMP/err")"
[ ! -e "$TMP/bad" ] || fail "a refused run wrote $TMP/bad"
run --preset smith2013-bandit --k 40 --out "$TMP/bad"
[ "$rc" = 2 ] && grep -q -- '--k' "$TMP/err" || fail "--k 40 not refused for the bandit"
run --preset smith2013-experts --epsilons 0 --out "$TMP/bad"
[ "$rc" = 2 ] || fail "--epsilons 0 not refused"
[ ! -e "$TMP/bad" ] || fail "a refused run wrote $TMP/bad"

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
fi
echo "ok"
