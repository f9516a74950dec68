#!/usr/bin/env bash
# Contract tests for `ldpb sim` (docs/sim.md), run against the built binary:
# help, usage errors (exit 2, one line, nothing written), the exact CSV headers, row counts and
# order, monotone means inside their intervals, byte-identical CSV whatever --threads, a preset
# with overrides, plots (when gnuplot is installed) and the warning when it is not. Every run is
# tiny: the whole script takes a few seconds.
set -euo pipefail

LDPB=${1:?usage: test_sim.sh PATH/TO/ldpb}
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

check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        fail "$what"
    fi
}

# run ARGS...: runs ldpb sim; sets rc, stdout in $TMP/out, stderr in $TMP/err.
run() {
    set +e
    "$LDPB" sim "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

REGRET_HEADER='preset,algorithm,mechanism,epsilon,k,t,mean_regret,ci95_low,ci95_high,trials'
SUMMARY_HEADER='preset,algorithm,mechanism,epsilon,k,horizon,trials,mean_regret,ci95_low,ci95_high,sd,median,min,max'

# --- help -----------------------------------------------------------------------------------
run --help
check "--help exits 0 (got $rc)" test "$rc" = 0
check "--help writes nothing on stderr" test ! -s "$TMP/err"
for opt in preset means laws algorithms mechanisms epsilons k horizon trials seed threads out \
    kappa tau threshold poison-fraction poison-strategy no-plots quiet help; do
    check "--help documents --$opt" grep -q -- "--$opt\\b" "$TMP/out"
done
for preset in jiang2023 ren2020 sajed2019-c1 sajed2019-c2 sajed2019-c3 sajed2019-c4; do
    check "--help documents preset $preset" grep -q "^  $preset\$" "$TMP/out"
done
for alg in ucb1 ts se ldp-ts-b ldp-ucb-b ldp-ucb-l ldp-se dp-ucb dp-ucb-bound dp-se; do
    check "--help lists algorithm $alg" grep -qw -- "$alg" "$TMP/out"
done
run --preset nope --help
check "--help wins over a bad preset" test "$rc" = 0
check "ldpb --help lists sim" sh -c "'$LDPB' --help | grep -q '^  sim '"

# --- usage errors: exit 2, one line on stderr naming the problem, nothing on stdout or disk ---
expect_usage() { # expect_usage REGEX ARGS...
    local regex=$1
    shift
    run "$@" --out "$TMP/never"
    checks=$((checks + 1))
    if [[ $rc != 2 ]]; then
        fail "ldpb sim $* exited $rc, expected 2 (stderr: $(cat "$TMP/err"))"
    elif [[ -s $TMP/out ]]; then
        fail "ldpb sim $* wrote to stdout: $(head -c 200 "$TMP/out")"
    elif [[ $(wc -l <"$TMP/err") != 1 ]]; then
        fail "ldpb sim $* should print one line on stderr, got: $(cat "$TMP/err")"
    elif ! grep -Eq -- "^ldpb sim: .*$regex" "$TMP/err"; then
        fail "ldpb sim $*: stderr '$(cat "$TMP/err")' does not match /$regex/"
    elif [[ -e $TMP/never ]]; then
        fail "ldpb sim $* created the output directory"
    fi
}
M=(--means 0.9,0.5)
expect_usage "unknown preset 'nope'" --preset nope
expect_usage "unknown algorithm 'foo'" "${M[@]}" --algorithms ucb1,foo
expect_usage "unknown algorithm 'foo'" --preset jiang2023 --algorithms foo
expect_usage "unknown mechanism 'gauss'" "${M[@]}" --algorithms ldp-ucb-b --mechanisms gauss
expect_usage "ldp-ucb-l accepts none .* it accepts laplace" "${M[@]}" --algorithms ldp-ucb-l \
    --mechanisms linear,quadratic
expect_usage "--horizon '1e5.5' is not a whole number" "${M[@]}" --algorithms ucb1 --horizon 1e5.5
expect_usage "--horizon 0 outside \\[1, 1e12\\]" "${M[@]}" --algorithms ucb1 --horizon 0
expect_usage "--horizon 'abc' is not a whole number" "${M[@]}" --algorithms ucb1 --horizon abc
expect_usage "--horizon 1 is below K = 2" "${M[@]}" --algorithms ucb1 --horizon 1
expect_usage "is below K = 20" --preset jiang2023 --horizon 19
expect_usage "--trials 0 outside \\[1, 1e6\\]" "${M[@]}" --algorithms ucb1 --trials 0
expect_usage "epsilon 0 outside \\(0, 10\\]" "${M[@]}" --algorithms dp-se --epsilons 0.5,0
expect_usage "epsilon -1 outside \\(0, 10\\]" "${M[@]}" --algorithms ldp-ts-b --epsilons -1
expect_usage "mean 1.5 \\(arm 2\\) outside \\[0, 1\\]" --means 0.9,1.5 --algorithms ucb1
expect_usage "mean -0.1 \\(arm 1\\) outside \\[0, 1\\]" --means -0.1,0.5 --algorithms ucb1
expect_usage "unknown option '--frobnicate'" "${M[@]}" --algorithms ucb1 --frobnicate
expect_usage "missing value for option '--horizon'" "${M[@]}" --algorithms ucb1 --horizon
expect_usage "unexpected argument 'extra'" "${M[@]}" --algorithms ucb1 extra
expect_usage "option --trials given twice" "${M[@]}" --algorithms ucb1 --trials 2 --trials 3
# Arm means may repeat (C1 is 0.75 then K-1 arms of 0.7); algorithms may not.
run --means 0.75,0.7,0.7 --algorithms ucb1 --horizon 100 --trials 1 --no-plots --quiet --out "$TMP/rep"
check "--means accepts repeated means (rc $rc: $(head -c 200 "$TMP/err"))" test "$rc" = 0
check "--means with repeats gives 3 arms" grep -q ',ucb1,none,inf,3,100,' "$TMP/rep/regret.csv"
expect_usage "--threads 0 outside \\[1, 1024\\]" "${M[@]}" --algorithms ucb1 --threads 0
expect_usage "give --preset NAME" --algorithms ucb1
expect_usage "needs --algorithms" "${M[@]}"
expect_usage "--k applies only" --preset jiang2023 --k 5
expect_usage "cannot be combined with --preset" --preset ren2020 --means 0.5,0.4
expect_usage "--laws: item 2" --laws bernoulli:0.9,beta:0:1 --algorithms ucb1

# --- a small custom run ------------------------------------------------------------------------
run --means 0.9,0.8,0.5 --algorithms ucb1,ldp-ts-b,dp-se --mechanisms linear --epsilons 0.5,1 \
    --horizon 3000 --trials 4 --threads 1 --seed t1 --no-plots --quiet --out c1
check "custom run exits 0 (got $rc: $(cat "$TMP/err"))" test "$rc" = 0
check "--quiet: nothing on stderr" test ! -s "$TMP/err"
check "custom run: summary table on stdout" grep -q '^custom  *ldp-ts-b  *linear  *0.5 ' "$TMP/out"
check "regret.csv header" test "$(head -n 1 c1/regret.csv)" = "$REGRET_HEADER"
check "summary.csv header" test "$(head -n 1 c1/summary.csv)" = "$SUMMARY_HEADER"
check "summary.csv: one row per configuration" test "$(wc -l <c1/summary.csv)" = 6
check "meta.txt names the seed and the noise" \
    sh -c "grep -q '^seed: t1 ' c1/meta.txt && grep -q 'AGG_NOISE_FAST' c1/meta.txt"
check "run.txt has the wall time" grep -q '^wall_seconds: ' c1/run.txt
check "--no-plots: no plots directory" test ! -e c1/plots
# Row structure: 5 configurations in order, the same checkpoints for each (1 ... T, strictly
# increasing, 20 per decade give 60-71 points up to 3000), trials 4, mean monotone in t and
# inside its interval.
check "regret.csv rows" awk -F, -v want=4 '
    NR == 1 { next }
    { key = $1 "," $2 "," $3 "," $4 "," $5 }
    key != prev {
        if (prev != "" && (last != 3000 || n < 60 || n > 71)) { print "config " prev ": " n " rows, last t " last; bad = 1 }
        if (prev != "" && n != first_n && first_n) { print "row counts differ"; bad = 1 }
        if (prev != "" && !first_n) first_n = n
        order = order key ";"; prev = key; n = 0; lastt = 0; lastm = -1
        if ($6 != 1) { print "first t is " $6; bad = 1 }
    }
    {
        n++; last = $6
        if ($6 + 0 <= lastt) { print "t not increasing: " $0; bad = 1 }
        if ($7 + 0 < lastm) { print "mean decreases: " $0; bad = 1 }
        if (!($8 + 0 <= $7 + 0 && $7 + 0 <= $9 + 0)) { print "mean outside interval: " $0; bad = 1 }
        if ($10 != want) { print "trials column: " $0; bad = 1 }
        lastt = $6 + 0; lastm = $7 + 0
    }
    END {
        if (last != 3000) bad = 1
        if (order != "custom,ucb1,none,inf,3;custom,ldp-ts-b,linear,0.5,3;custom,ldp-ts-b,linear,1,3;custom,dp-se,none,0.5,3;custom,dp-se,none,1,3;") { print "order: " order; bad = 1 }
        exit bad
    }' c1/regret.csv

# Byte-identical CSV whatever the thread count; another seed gives other numbers.
run --means 0.9,0.8,0.5 --algorithms ucb1,ldp-ts-b,dp-se --mechanisms linear --epsilons 0.5,1 \
    --horizon 3000 --trials 4 --threads 3 --seed t1 --no-plots --quiet --out c2
check "threads 3 run exits 0" test "$rc" = 0
check "regret.csv identical for --threads 1 and 3" cmp -s c1/regret.csv c2/regret.csv
check "summary.csv identical for --threads 1 and 3" cmp -s c1/summary.csv c2/summary.csv
run --means 0.9,0.8,0.5 --algorithms ucb1,ldp-ts-b,dp-se --mechanisms linear --epsilons 0.5,1 \
    --horizon 3000 --trials 4 --threads 2 --seed t2 --no-plots --quiet --out c3
check "seed t2 run exits 0" test "$rc" = 0
check "another seed changes regret.csv" sh -c '! cmp -s c1/regret.csv c3/regret.csv'

# One trial: the interval collapses to the mean, sd is 0.
run --means 0.7,0.6 --algorithms ts,ldp-ucb-l --epsilons 2 --horizon 500 --trials 1 \
    --no-plots --quiet --out c4
check "one-trial run exits 0" test "$rc" = 0
check "one trial: ci95_low = mean = ci95_high" \
    awk -F, 'NR > 1 && !($7 == $8 && $8 == $9) { bad = 1 } END { exit bad }' c4/regret.csv
check "one trial: sd 0" awk -F, 'NR > 1 && $11 != 0 { bad = 1 } END { exit bad }' c4/summary.csv
check "ldp-ucb-l runs with laplace only" \
    test "$(cut -d, -f2,3 c4/summary.csv | tail -n +2 | tr '\n' ' ')" = "ts,none ldp-ucb-l,laplace "

# --- a preset with overrides ------------------------------------------------------------------
run --preset sajed2019-c1 --horizon 20000 --trials 2 --no-plots --quiet --out p1
check "sajed2019-c1 with overrides exits 0 ($(cat "$TMP/err"))" test "$rc" = 0
check "sajed2019-c1: 4 K x 4 eps x 2 algorithms" test "$(wc -l <p1/summary.csv)" = 33
check "sajed2019-c1: preset column and K sweep" \
    test "$(cut -d, -f1,5 p1/summary.csv | tail -n +2 | sort -u | tr '\n' ' ')" \
    = "sajed2019-c1,10 sajed2019-c1,20 sajed2019-c1,3 sajed2019-c1,5 "
check "sajed2019-c1: the DP-UCB / DP-SE ratio (claim A5) is printed" \
    grep -q '^claim A5' "$TMP/out"
check "sajed2019-c1: one claim A6 line per DP-SE configuration, each flat or still rising" \
    awk '/^claim A6/ { on = 1; next } on && /^$/ { on = 0 }
         on { n++; if (!/ flat from t = [0-9.e+]+ \(regret [0-9.e+]+\): holds$/ &&
                       !/ still rising at T = 2e4 \(regret [0-9.e+]+\): /) bad = 1 }
         END { exit !(n == 16 && !bad) }' "$TMP/out"
check "sajed2019-c1: 16 ratio rows" \
    test "$(sed -n '/^claim A5/,/^$/p' "$TMP/out" | grep -c '^  sajed2019-c1  *[0-9]')" = 16
# An easy instance: every trial is down to the best arm long before T, so the curve is flat.
run --means 0.9,0.1 --algorithms dp-se --epsilons 1 --horizon 1e5 --trials 2 --no-plots --quiet \
    --out p3
check "easy dp-se: claim A6 holds with a flat curve" \
    grep -qE '^  custom +2  1 +flat from t = [0-9]+ \(regret [0-9.e+]+\): holds$' "$TMP/out"
run --preset ren2020 --horizon 1000 --trials 2 --epsilons 1 --no-plots --quiet --out p2
check "ren2020 with overrides exits 0" test "$rc" = 0
check "ren2020: both instances in the preset column" \
    test "$(cut -d, -f1 p2/summary.csv | tail -n +2 | sort -u | tr '\n' ' ')" \
    = "ren2020-bern ren2020-mixed "

# --- plots ----------------------------------------------------------------------------------
if command -v gnuplot >/dev/null 2>&1; then
    run --means 0.9,0.6 --algorithms ucb1,ldp-ucb-b --mechanisms linear --epsilons 0.5,1 \
        --horizon 1000 --trials 2 --quiet --out g1
    check "plot run exits 0 ($(cat "$TMP/err"))" test "$rc" = 0
    for stem in custom-eps0.5 custom-eps1 custom-ldp-ucb-b-linear; do
        check "$stem.png is a PNG" sh -c "head -c 8 g1/plots/$stem.png | od -An -c | grep -q 'P   N   G'"
        check "$stem.svg is an SVG" grep -q '<svg' "g1/plots/$stem.svg"
    done
    check "the plot count is reported" grep -q '3 figures in g1/plots' "$TMP/out"
    check "gnuplot printed no warning" test ! -s g1/plots/gnuplot.log
else
    echo "note: gnuplot not installed; plot files not checked" >&2
fi
# Without gnuplot: a warning, the CSV files, exit 0.
set +e
PATH=/nonexistent "$LDPB" sim --means 0.9,0.6 --algorithms ucb1 --horizon 100 --trials 2 --quiet \
    --out g2 >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
check "no gnuplot: exit 0" test "$rc" = 0
check "no gnuplot: a warning" grep -q 'warning: gnuplot not found on PATH; plots skipped' "$TMP/err"
check "no gnuplot: CSV written" test -s g2/regret.csv
check "no gnuplot: the script is left to run later" test -s g2/plots/plots.gp

# --- the policy parameters --gamma and --eps-arm ----------------------------------------------
run --help
for opt in gamma eps-arm; do
    check "--help documents --$opt and who reads it" \
        sh -c "grep -A1 -- '--$opt ' '$TMP/out' | grep -q 'dp-ucb'"
done
D=(--means 0.7,0.5,0.4 --algorithms dp-ucb --epsilons 0.5 --horizon 2000 --trials 2 --quiet \
    --no-plots)
expect_usage "--gamma 1 outside \\(0, 1\\)" "${D[@]}" --gamma 1
expect_usage "--eps-arm 0 outside \\(0, 10\\]" "${D[@]}" --eps-arm 0
expect_usage "dp-ucb: eps_arm 1 is above epsilon 0.5" "${D[@]}" --eps-arm 1
expect_usage "--gamma given, but no chosen algorithm reads it \\(read by: dp-ucb," \
    "${M[@]}" --algorithms ucb1,dp-se --gamma 0.1
run "${D[@]}" --out p0
check "dp-ucb with default parameters: exit 0 ($(cat "$TMP/err"))" test "$rc" = 0
check "meta.txt: the defaults" grep -q '^dp-ucb: gamma = 1/T, eps_arm = epsilon (policy defaults)$' \
    p0/meta.txt
run "${D[@]}" --gamma 0.01 --eps-arm 0.05 --out p1
check "dp-ucb with --gamma and --eps-arm: exit 0 ($(cat "$TMP/err"))" test "$rc" = 0
check "meta.txt: the values given" grep -q '^dp-ucb: gamma = 0.01, eps_arm = 0.05$' p1/meta.txt
check "--eps-arm changes dp-ucb's regret" sh -c "! cmp -s p0/summary.csv p1/summary.csv"
# --- tossou2017 presets (adversaries) --------------------------------------------------------
ROBUST_HEADER="$REGRET_HEADER,mom_regret,gmd_below,gmd_above,mom_groups"
for adv in deterministic stochastic fully-oblivious oblivious switching; do
    check "--help documents preset tossou2017-$adv" grep -q "^  tossou2017-$adv\$" <("$LDPB" sim --help)
done
run --preset tossou2017-switching --horizon 4096 --trials 48 --threads 1 --quiet --no-plots --out a1
check "tossou2017-switching small run exits 0 (got $rc: $(head -c 300 "$TMP/err"))" test "$rc" = 0
run --preset tossou2017-switching --horizon 4096 --trials 48 --threads 2 --quiet --no-plots --out a2
check "tossou2017 run on 2 threads exits 0" test "$rc" = 0
check "robust.csv header" test "$(head -n 1 a1/robust.csv)" = "$ROBUST_HEADER"
check "regret.csv keeps its header" test "$(head -n 1 a1/regret.csv)" = "$REGRET_HEADER"
check "robust.csv repeats regret.csv's columns" \
    cmp -s <(cut -d, -f1-10 a1/robust.csv) a1/regret.csv
check "robust.csv: 24 groups of 2" awk -F, 'NR > 1 && $14 != 24 { bad = 1 } END { exit bad }' \
    a1/robust.csv
for f in regret.csv summary.csv robust.csv; do
    check "$f identical for --threads 1 and 2 (adversary)" cmp -s "a1/$f" "a2/$f"
done
check "the three algorithms of TD17" test "$(cut -d, -f2,4 a1/summary.csv | tail -n +2 | tr '\n' ' ')" \
    = "exp3,inf dp-exp3-lap,5.11 exp3-tau,inf "
check "meta.txt describes the adversary" grep -q '^instance: tossou2017-switching k=4 adversary=switching ' \
    a1/meta.txt
check "claim A7 printed" grep -q 'exp3-tau below both under switching costs' <(
    "$LDPB" sim --preset tossou2017-switching --horizon 4096 --trials 24 --no-plots --out a3)
run --preset tossou2017-switching --horizon 4096 --trials 48 --tau 8 --threshold 1.5 --quiet \
    --no-plots --out a4
check "--tau and --threshold accepted (rc $rc: $(head -c 200 "$TMP/err"))" test "$rc" = 0
check "meta.txt records --tau" grep -q '^tau (exp3-tau): 8 (--tau)$' a4/meta.txt
check "meta.txt records --threshold" grep -q '^threshold (dp-exp3-lap, ldp-exp3-lap): 1.5 ' a4/meta.txt
grep exp3-tau a4/regret.csv | cut -d, -f6,7 >"$TMP/tau8"
grep exp3-tau a1/regret.csv | cut -d, -f6,7 >"$TMP/tau16"
check "--tau changes exp3-tau's regret" sh -c "! cmp -s '$TMP/tau8' '$TMP/tau16'"
run --preset tossou2017-switching --horizon 4096 --tau 5000
check "--tau above T refused (rc $rc)" test "$rc" = 2
check "--tau above T: the policy's message" grep -q 'exp3-tau: tau 5000 outside \[1, T = 4096\]' "$TMP/err"
run --preset tossou2017-switching --horizon 4096 --trials 48 --threshold bound-min --quiet \
    --no-plots --out a5
check "--threshold bound-min accepted (rc $rc: $(head -c 200 "$TMP/err"))" test "$rc" = 0
check "meta.txt records bound-min" grep -q '^threshold (dp-exp3-lap, ldp-exp3-lap): bound-min ' \
    a5/meta.txt
grep dp-exp3-lap a5/regret.csv | cut -d, -f6,7 >"$TMP/bmin"
grep dp-exp3-lap a1/regret.csv | cut -d, -f6,7 >"$TMP/bdef"
check "bound-min changes dp-exp3-lap's regret" sh -c "! cmp -s '$TMP/bmin' '$TMP/bdef'"
run --preset tossou2017-switching --threshold bound-max
check "--threshold bound-max refused (rc $rc)" test "$rc" = 2
check "--threshold bound-max: says what is accepted" grep -q 'neither a finite number nor bound-min' \
    "$TMP/err"
run --preset tossou2017-switching --threshold 0
check "--threshold 0 refused (rc $rc)" test "$rc" = 2
check "--threshold 0: the bound" grep -q -- '--threshold 0 outside (0, inf)' "$TMP/err"
run --preset sajed2019-c1 --tau 5
check "--tau without exp3-tau refused (rc $rc)" test "$rc" = 2
check "--tau without exp3-tau: says why" grep -q -- '--tau applies to exp3-tau' "$TMP/err"
run --preset tossou2017-oblivious --k 5
check "--k refused for a tossou2017 preset (rc $rc)" test "$rc" = 2

# --- poisoning devices (docs/sim.md, "Poisoning") ---------------------------------------------
expect_usage "--poison-fraction '0.7' is not a number in \\[0, 0.5\\]" "${M[@]}" --algorithms ucb1 \
    --poison-fraction 0.7
expect_usage "--poison-fraction 'x' is not a number" "${M[@]}" --algorithms ucb1 --poison-fraction x
expect_usage "--poison-strategy needs --poison-fraction" "${M[@]}" --algorithms ucb1 \
    --poison-strategy promote-worst
expect_usage "--poison-strategy 'best' is neither demote-best nor promote-worst" "${M[@]}" \
    --algorithms ucb1 --poison-fraction 0.1 --poison-strategy best
expect_usage "--poison-fraction does not apply to --preset shariff2018" --preset shariff2018 \
    --poison-fraction 0.1
expect_usage "--poison-fraction needs a stochastic instance" --preset tossou2017-switching \
    --poison-fraction 0.1
P=(--means 0.6,0.5 --algorithms ucb1,ldp-ucb-l --horizon 2000 --trials 4 --no-plots --quiet)
run "${P[@]}" --out p0
check "unpoisoned run (rc $rc)" test "$rc" = 0
run "${P[@]}" --poison-fraction 0 --out pz
check "--poison-fraction 0 accepted (rc $rc)" test "$rc" = 0
check "--poison-fraction 0 changes nothing" cmp -s p0/regret.csv pz/regret.csv
run "${P[@]}" --poison-fraction 0.2 --poison-strategy promote-worst --out p1
check "poisoned run (rc $rc: $(head -c 200 "$TMP/err"))" test "$rc" = 0
check "meta.txt records the poisoning" grep -q \
    '^poisoning: each round with probability 0.2[0-9]* (stream: trial i, purpose client, id 1), strategy promote-worst' \
    p1/meta.txt
check "poisoning changes the regret" sh -c "! cmp -s p0/regret.csv p1/regret.csv"
# about 1,600 honest rounds at gap 0.1: 160 if every one plays the worst arm
check "poisoned ldp-ucb-l settles on the worst arm (final regret above 120)" awk -F, \
    '$2 == "ldp-ucb-l" && $6 == 2000 { found = 1; ok = $7 > 120 } END { exit !(found && ok) }' \
    p1/regret.csv

# --- runtime errors -------------------------------------------------------------------------
run --means 0.9,0.6 --algorithms ucb1 --horizon 100 --trials 2 --quiet --out /dev/null/x
check "unwritable --out: exit 1" test "$rc" = 1
check "unwritable --out: a message" grep -q '^ldpb sim: cannot create the output directory' "$TMP/err"

echo "$checks checks, $failures failures"
test "$failures" = 0
