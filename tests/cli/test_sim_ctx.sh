#!/usr/bin/env bash
# Contract tests of `ldpb sim --preset shariff2018` (docs/sim.md): the regret.csv and summary.csv
# headers of every `ldpb sim` run, one row group per configuration in the documented order,
# byte-identical CSV whatever --threads, and usage errors (exit 2, nothing written). Tiny runs.
set -euo pipefail

LDPB=${1:?usage: test_sim_ctx.sh PATH/TO/ldpb}
LDPB=$(cd "$(dirname "$LDPB")" && pwd)/$(basename "$LDPB")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

"$LDPB" sim --preset shariff2018 --horizon 300 --trials 3 --threads 1 --no-plots --quiet \
    --out one >one.stdout || fail "small run failed"
"$LDPB" sim --preset shariff2018 --horizon 300 --trials 3 --threads 2 --no-plots --quiet \
    --out two >/dev/null || fail "two-thread run failed"
[ "$(head -1 one/regret.csv)" = \
    "preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,trials" ] ||
    fail "regret.csv header"
[ "$(head -1 one/summary.csv)" = \
    "preset,algorithm,mechanism,epsilon,k,horizon,trials,mean_regret,ci95_low,ci95_high,sd,median,min,max" ] ||
    fail "summary.csv header"
got=$(tail -n +2 one/summary.csv | cut -d, -f1-5 | tr '\n' ' ')
want="shariff2018-gap0.1,linucb,none,inf,25 shariff2018-gap0.1,jdp-linucb-wishart,none,1,25 shariff2018-gap0.1,jdp-linucb-gaussian,none,1,25 shariff2018-gap0.1,ldp-linucb-gaussian,none,1,25 shariff2018-gap0,linucb,none,inf,25 shariff2018-gap0,jdp-linucb-wishart,none,1,25 shariff2018-gap0,jdp-linucb-gaussian,none,1,25 shariff2018-gap0,ldp-linucb-gaussian,none,1,25 "
[ "$got" = "$want" ] || fail "summary rows: $got"
cmp -s one/regret.csv two/regret.csv || fail "regret.csv differs between 1 and 2 threads"
cmp -s one/summary.csv two/summary.csv || fail "summary.csv differs between 1 and 2 threads"
grep -q 'claim (Shariff & Sheffet 2018' one.stdout || fail "no claim lines"
# the local mode is compared with jdp-linucb-gaussian by a ratio, never by a "holds" claim
[ "$(grep -c 'ldp-linucb-gaussian .* vs jdp-linucb-gaussian .* ratio' one.stdout)" = 2 ] ||
    fail "no local-vs-JDP ratio lines"
if grep 'ldp-linucb-gaussian' one.stdout | grep -q 'holds'; then fail "a claim on the local mode"; fi
[ "$(grep -c '^config [0-9]*: shariff2018-gap[0-9.]* ldp-linucb-gaussian eps 1 delta_per_report 0.1 ' one/meta.txt)" = 2 ] ||
    fail "meta.txt lacks the local configurations"

# --algorithms and --epsilons select configurations
"$LDPB" sim --preset shariff2018 --horizon 100 --trials 2 --algorithms jdp-linucb-gaussian \
    --epsilons 0.5,2 --no-plots --quiet --out sel >/dev/null || fail "selection run"
[ "$(tail -n +2 sel/summary.csv | cut -d, -f2,4 | tr '\n' ' ')" = \
    "jdp-linucb-gaussian,0.5 jdp-linucb-gaussian,2 jdp-linucb-gaussian,0.5 jdp-linucb-gaussian,2 " ] ||
    fail "selection rows"

"$LDPB" sim --preset shariff2018 --horizon 100 --trials 2 --algorithms ldp-linucb-gaussian \
    --epsilons 2 --no-plots --quiet --out loc >/dev/null || fail "local selection run"
[ "$(tail -n +2 loc/summary.csv | cut -d, -f1,2,4 | tr '\n' ' ')" = \
    "shariff2018-gap0.1,ldp-linucb-gaussian,2 shariff2018-gap0,ldp-linucb-gaussian,2 " ] ||
    fail "local selection rows"

usage() { # usage DESCRIPTION ARGS...: exit 2, one line on stderr, no output directory
    local what=$1
    shift
    local st=0
    "$LDPB" sim --preset shariff2018 --out bad "$@" >/dev/null 2>err.txt || st=$?
    [ "$st" = 2 ] || fail "$what: exit $st"
    [ "$(wc -l <err.txt)" = 1 ] || fail "$what: stderr not one line: $(cat err.txt)"
    [ ! -e bad ] || fail "$what: wrote output"
}
usage "--means" --means 0.5,0.4
usage "unknown algorithm" --algorithms ucb1
usage "epsilon 0" --epsilons 0
usage "horizon 0" --horizon 0
usage "trials text" --trials many

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "test_sim_ctx: all checks passed"
