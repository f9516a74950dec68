#!/usr/bin/env bash
# Contract tests for `ldpb privatize` (docs/cli.md) and the ldpb dispatcher,
# run against the built binary: usage errors, determinism, output format and counts, --range,
# stdin mode, and write errors. Statistical checks use fixed seeds (so they are deterministic);
# each states the false-failure probability it would have for a fresh seed.
set -euo pipefail

LDPB=${1:?usage: test_privatize.sh PATH/TO/ldpb}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

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

# run [--stdin FILE] ARGS...: runs ldpb with stdin from FILE (default /dev/null); sets rc and
# leaves stdout in $TMP/out, stderr in $TMP/err.
run() {
    local in=/dev/null
    if [[ ${1-} == --stdin ]]; then
        in=$2
        shift 2
    fi
    set +e
    "$LDPB" "$@" <"$in" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

lines() { wc -l <"$1" | tr -d ' '; }

# expect_error STATUS REGEX ARGS...: exit STATUS, nothing on stdout, one line on stderr that
# matches REGEX (extended, case-sensitive).
expect_error() {
    local status=$1 regex=$2
    shift 2
    run "$@"
    checks=$((checks + 1))
    if [[ $rc != "$status" ]]; then
        fail "ldpb $* exited $rc, expected $status (stderr: $(cat "$TMP/err"))"
    elif [[ -s $TMP/out ]]; then
        fail "ldpb $* wrote to stdout on error: $(head -c 200 "$TMP/out")"
    elif [[ $(lines "$TMP/err") != 1 ]]; then
        fail "ldpb $* should print exactly one line on stderr, got: $(cat "$TMP/err")"
    elif ! grep -Eq -- "$regex" "$TMP/err"; then
        fail "ldpb $*: stderr '$(cat "$TMP/err")' does not match /$regex/"
    fi
}

# expect_stdin_error REGEX INPUT ARGS...: as expect_error (status 2) with INPUT on stdin.
expect_stdin_error() {
    local regex=$1 input=$2
    shift 2
    printf '%b' "$input" >"$TMP/in"
    run --stdin "$TMP/in" "$@"
    checks=$((checks + 1))
    if [[ $rc != 2 || -s $TMP/out ]] || ! grep -Eq -- "$regex" "$TMP/err"; then
        fail "stdin $(printf '%q' "$input") to ldpb $*: rc $rc, stdout $(lines "$TMP/out") lines," \
            "stderr '$(cat "$TMP/err")', expected 2, nothing, /$regex/"
    fi
}

only_bits() { ! grep -qvx '[01]' "$1"; }
only_decimals() { ! grep -qvxE -- '-?[0-9]+(\.[0-9]+)?' "$1"; }

# mean_near FILE EXPECTED TOL: the mean of the numbers in FILE is within TOL of EXPECTED.
mean_near() {
    awk -v want="$2" -v tol="$3" -v f="$1" '
        { s += $1; n++ }
        END {
            m = n > 0 ? s / n : 0
            if (n == 0 || m < want - tol || m > want + tol) {
                printf "  %s: mean %.6f of %d outputs, expected %.6f +- %.6f\n", f, m, n, want, tol \
                    > "/dev/stderr"
                exit 1
            }
        }' "$1"
}

P='privatize'

# --- help and the dispatcher -------------------------------------------------------------------
for h in --help -h; do
    run $P $h
    check "privatize $h exits 0" test "$rc" = 0
    for word in -m --mechanism -e --epsilon -n --count --seed --range --kappa -h --help \
        linear quadratic exponential laplace VALUE; do
        check "privatize $h mentions $word" grep -q -- "$word" "$TMP/out"
    done
done
run $P -m linear -e 1 --help # --help wins over the rest
check "privatize ... --help exits 0" test "$rc" = 0

run --help
check "ldpb --help exits 0" test "$rc" = 0
check "ldpb --help lists privatize" grep -q privatize "$TMP/out"
run --version
check "ldpb --version exits 0" test "$rc" = 0
check "ldpb --version prints a version" grep -Eqx 'ldpb [0-9]+\.[0-9]+\.[0-9]+' "$TMP/out"
run frobnicate
check "unknown command exits 2" test "$rc" = 2
check "unknown command is named" grep -q "unknown command 'frobnicate'" "$TMP/err"
check "unknown command: nothing on stdout" test ! -s "$TMP/out"
run
check "no command exits 2" test "$rc" = 2

# --- usage errors: exit 2, one line on stderr, nothing on stdout -------------------------------
expect_error 2 "unknown mechanism 'foo'.*linear" $P -m foo -e 1 0.5
expect_error 2 "unknown mechanism 'Linear'" $P -m Linear -e 1 0.5
expect_error 2 'missing -m' $P -e 1 0.5
expect_error 2 'missing -e' $P -m linear 0.5
expect_error 2 'epsilon 0 outside \(0, 10\]' $P -m linear -e 0 0.5
expect_error 2 'epsilon -1 outside \(0, 10\]' $P -m laplace -e -1 0.5
expect_error 2 'epsilon 10.5 outside \(0, 10\]' $P -m linear -e 10.5 0.5
expect_error 2 "epsilon 'abc' is not a number" $P -m linear -e abc 0.5
expect_error 2 "epsilon '1x' is not a number" $P -m linear -e 1x 0.5
expect_error 2 "epsilon '' is empty" $P -m linear -e '' 0.5
expect_error 2 "epsilon 'nan' is not a finite number" $P -m linear -e nan 0.5
expect_error 2 "epsilon 'inf' is not a finite number" $P -m linear -e inf 0.5
expect_error 2 'count 0 outside \[1, 10\^12\]' $P -m linear -e 1 -n 0 0.5
expect_error 2 'count 1000000000001 outside' $P -m linear -e 1 -n 1000000000001 0.5
expect_error 2 'count 99999999999999999999999 outside' $P -m linear -e 1 -n 99999999999999999999999 0.5
expect_error 2 "count '-1' is not a whole number" $P -m linear -e 1 -n -1 0.5
expect_error 2 "count '1.5' is not a whole number" $P -m linear -e 1 -n 1.5 0.5
expect_error 2 "count 'ten' is not a whole number" $P -m linear -e 1 --count ten 0.5
expect_error 2 'kappa 2 outside \[-1, 1\]' $P -m quadratic -e 1 --kappa 2 0.5
expect_error 2 'kappa -1.5 outside \[-1, 1\]' $P -m quadratic -e 1 --kappa -1.5 0.5
expect_error 2 "kappa 'k' is not a number" $P -m quadratic -e 1 --kappa k 0.5
expect_error 2 'kappa applies only to the quadratic' $P -m linear -e 1 --kappa 0.3 0.5
expect_error 2 'range 5,5 is empty' $P -m linear -e 1 --range 5,5 0.5
expect_error 2 'range 20,10 is empty' $P -m linear -e 1 --range 20,10 0.5
expect_error 2 'range -1e308,1e308 is too wide' $P -m linear -e 1 --range -1e308,1e308 0.5
for r in a,b 1 1,2,3 ',' nan,1 0,inf ' 0,1' 0,1x; do
    expect_error 2 "range '.*' is not LO,HI" $P -m linear -e 1 --range "$r" 0.5
done
expect_error 2 "value 'nan' is not a finite number" $P -m linear -e 1 nan
expect_error 2 "value 'inf' is not a finite number" $P -m linear -e 1 inf
expect_error 2 "value '-inf' is not a finite number" $P -m linear -e 1 -inf
expect_error 2 "value '1e999' is not a finite number" $P -m laplace -e 1 1e999
expect_error 2 "value 'abc' is not a number" $P -m linear -e 1 abc
expect_error 2 "value '0.5x' is not a number" $P -m linear -e 1 0.5x
expect_error 2 "value ' 0.5' is not a number" $P -m linear -e 1 ' 0.5'
expect_error 2 "value '' is empty" $P -m linear -e 1 ''
expect_error 2 "unexpected extra argument '0.6'" $P -m linear -e 1 0.5 0.6
expect_error 2 "unknown option '--bogus'" $P -m linear -e 1 --bogus 0.5
expect_error 2 "unknown option '-x'" $P -m linear -e 1 -x 0.5
expect_error 2 "unknown option '--mech'" $P --mech linear -e 1 0.5
expect_error 2 "missing value for option '-e'" $P -m linear -e
expect_error 2 "missing value for option '--seed'" $P -m linear -e 1 --seed
expect_error 2 'option --epsilon given twice' $P -m linear -e 1 --epsilon 2 0.5
expect_error 2 'seed needs a non-empty text' $P -m linear -e 1 --seed '' 0.5
expect_error 2 "option takes no value: '--help=1'" $P --help=1

# Bad stdin lines: nothing before them, so nothing on stdout; the line number is named.
expect_stdin_error "stdin line 1: 'abc' is not a number" 'abc\n' $P -m linear -e 1
expect_stdin_error "stdin line 1: 'nan' is not a finite number" 'nan\n' $P -m linear -e 1
expect_stdin_error "stdin line 1: '-inf' is not a finite number" '-inf\n' $P -m laplace -e 1
expect_stdin_error "stdin line 1: '0.5 0.6' is not a number" '0.5 0.6\n' $P -m linear -e 1
expect_stdin_error 'stdin line 1 is empty' '\n0.5\n' $P -m linear -e 1
expect_stdin_error 'stdin line 1 is empty' '  \t\r\n' $P -m linear -e 1
expect_stdin_error 'stdin line 1: .* contains a NUL byte' '0.5\0000x\n' $P -m linear -e 1
expect_stdin_error 'stdin line 1 is longer than 1024 bytes' "$(printf '%02000d' 1)\n" \
    $P -m linear -e 1

# A bad line after good ones: the outputs of the good lines are written, then the error.
printf '0.1\n0.9\nzz\n0.5\n' >"$TMP/in"
run --stdin "$TMP/in" $P -m exponential -e 1 -n 3 --seed t
check "bad line 3 exits 2" test "$rc" = 2
check "bad line 3 is named" grep -q "stdin line 3: 'zz' is not a number" "$TMP/err"
check "lines 1-2 were privatized before the error" test "$(lines "$TMP/out")" = 6

# --- runtime errors: exit 1 -------------------------------------------------------------------
set +e
"$LDPB" $P -m linear -e 1 -n 10 0.5 >&- 2>"$TMP/err"
rc=$?
set -e
check "closed stdout exits 1" test "$rc" = 1
check "closed stdout is reported" grep -q 'standard output is closed' "$TMP/err"

if [[ -w /dev/full ]]; then
    for args in "-m linear -e 1 -n 10 0.5" "-m laplace -e 1 -n 100000 0.5" "--help"; do
        set +e
        # shellcheck disable=SC2086
        "$LDPB" $P $args >/dev/full 2>"$TMP/err"
        rc=$?
        set -e
        check "write error on /dev/full ($args) exits 1" test "$rc" = 1
        check "write error on /dev/full ($args) is reported" \
            grep -q 'cannot write to standard output' "$TMP/err"
    done
    printf '0.5\n0.25\n' >"$TMP/in"
    set +e
    "$LDPB" $P -m linear -e 1 <"$TMP/in" >/dev/full 2>"$TMP/err"
    rc=$?
    set -e
    check "stdin mode to /dev/full exits 1" test "$rc" = 1
fi

set +e
"$LDPB" $P -m linear -e 1 <&- >"$TMP/out" 2>"$TMP/err"
rc=$?
set -e
check "closed stdin exits 1" test "$rc" = 1
check "closed stdin is reported" grep -q 'cannot read standard input' "$TMP/err"

# The reader goes away: killed by SIGPIPE (status 141) or, with SIGPIPE ignored, exit 1 on EPIPE.
# Either way it stops at once instead of writing 10^9 lines; the timeout would catch that.
set +e +o pipefail
timeout 60 "$LDPB" $P -m linear -e 1 -n 1000000000 0.5 2>"$TMP/err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
set -e -o pipefail
checks=$((checks + 1))
[[ $rc == 141 || $rc == 1 ]] || fail "closed pipe: ldpb exited $rc, expected 141 (SIGPIPE) or 1"
(
    trap '' PIPE
    set +e +o pipefail
    timeout 60 "$LDPB" $P -m laplace -e 1 -n 1000000000 0.5 2>"$TMP/err" | head -1 >/dev/null
    echo "${PIPESTATUS[0]}" >"$TMP/rc"
)
check "closed pipe with SIGPIPE ignored exits 1" test "$(cat "$TMP/rc")" = 1
check "EPIPE is reported" grep -q 'cannot write to standard output: Broken pipe' "$TMP/err"

# --- output format and counts -----------------------------------------------------------------
for m in linear quadratic exponential; do
    run $P -m $m -e 1 -n 1000 0.3
    check "$m exits 0" test "$rc" = 0
    check "$m prints 1000 lines" test "$(lines "$TMP/out")" = 1000
    check "$m prints only 0/1" only_bits "$TMP/out"
    check "$m prints both 0 and 1" grep -qx 0 "$TMP/out"
    check "$m prints both 0 and 1" grep -qx 1 "$TMP/out"
    check "$m: nothing on stderr" test ! -s "$TMP/err"
done
run $P -m laplace -e 1 -n 1000 0.3
check "laplace prints 1000 lines" test "$(lines "$TMP/out")" = 1000
check "laplace prints plain decimals" only_decimals "$TMP/out"
# shellcheck disable=SC2016 # an awk program, not shell
check "laplace outputs are finite numbers" \
    awk '{ v = $1 + 0; if (v != v || v > 1e300 || v < -1e300) exit 1 }' "$TMP/out"
run $P -m linear -e 1 0.3
check "default count is 1" test "$(lines "$TMP/out")" = 1

# Long and short spellings agree; a negative VALUE is a value, not an option, and is clipped.
run $P -m quadratic -e 2 -n 50 --kappa -0.5 --seed same 0.7
cp "$TMP/out" "$TMP/a"
run $P --mechanism=quadratic --epsilon=2 --count=50 --kappa=-0.5 --seed=same 0.7
check "long options with = match short ones" cmp -s "$TMP/a" "$TMP/out"
run $P -mquadratic -e2 -n50 --kappa -0.5 --seed same -- 0.7
check "attached short values and -- match" cmp -s "$TMP/a" "$TMP/out"
run $P -m laplace -e 1 -n 20 --seed neg -0.5
cp "$TMP/out" "$TMP/a"
run $P -m laplace -e 1 -n 20 --seed neg -- -7
check "negative values are accepted and clipped to 0" cmp -s "$TMP/a" "$TMP/out"
run $P -m laplace -e 1 -n 20 --seed neg 0
check "clipped -0.5 behaves like 0" cmp -s "$TMP/a" "$TMP/out"

# --- determinism ------------------------------------------------------------------------------
for m in linear quadratic exponential laplace; do
    run $P -m $m -e 1 -n 500 --seed 42 0.6
    cp "$TMP/out" "$TMP/a"
    run $P -m $m -e 1 -n 500 --seed 42 0.6
    check "$m: same seed, same output" cmp -s "$TMP/a" "$TMP/out"
    run $P -m $m -e 1 -n 500 --seed 43 0.6
    check "$m: different seeds differ" bash -c "! cmp -s '$TMP/a' '$TMP/out'"
    run $P -m $m -e 1 -n 500 0.6
    cp "$TMP/out" "$TMP/b"
    run $P -m $m -e 1 -n 500 0.6
    # System RNG: two runs agree with probability below 0.9^500 (Bernoulli) or less.
    check "$m: system RNG runs differ" bash -c "! cmp -s '$TMP/b' '$TMP/out'"
done

# --- stdin mode -------------------------------------------------------------------------------
printf '0.1\n  0.9\t\n-3\r\n1e-1\n0.5' >"$TMP/in" # blanks, CRLF, exponent, no final newline
run --stdin "$TMP/in" $P -m laplace -e 4 -n 3 --seed in
check "stdin mode exits 0" test "$rc" = 0
check "stdin mode: 5 lines x 3 outputs" test "$(lines "$TMP/out")" = 15
check "stdin mode prints decimals" only_decimals "$TMP/out"
cp "$TMP/out" "$TMP/a"
run --stdin "$TMP/in" $P -m laplace -e 4 -n 3 --seed in
check "stdin mode is deterministic with a seed" cmp -s "$TMP/a" "$TMP/out"
# COUNT outputs per line draw the same stream as one line per output.
run $P -m linear -e 1 -n 4 --seed s 0.25
cp "$TMP/out" "$TMP/a"
printf '0.25\n0.25\n0.25\n0.25\n' >"$TMP/in"
run --stdin "$TMP/in" $P -m linear -e 1 --seed s
check "VALUE x4 equals four stdin lines" cmp -s "$TMP/a" "$TMP/out"
seq 1 1000 | awk '{ print ($1 % 7) / 6 }' >"$TMP/in"
run --stdin "$TMP/in" $P -m exponential -e 3 -n 2
check "stdin mode: 1000 lines x 2" test "$(lines "$TMP/out")" = 2000
check "stdin mode Bernoulli prints 0/1" only_bits "$TMP/out"
run --stdin /dev/null $P -m linear -e 1
check "empty stdin: exit 0" test "$rc" = 0
check "empty stdin: no output" test ! -s "$TMP/out"

# A co-process gets each answer before it sends the next line (output is flushed whenever ldpb
# would wait for input).
answers=$(
    trap '' PIPE # a co-process that died must not take this shell with it
    coproc PRIV { exec "$LDPB" $P -m laplace -e 1 --seed co 2>/dev/null; }
    to=${PRIV[1]-} from=${PRIV[0]-} pid=${PRIV_PID-}
    n=0
    for v in 0.5 0.25; do
        if [[ -z $to ]] || ! { echo "$v" 1>&"$to"; } 2>/dev/null; then
            break
        fi
        if read -r -t 10 -u "$from" line && [[ $line =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then
            n=$((n + 1))
        fi
    done
    [[ -z $to ]] || exec {to}>&-
    [[ -z $pid ]] || wait "$pid" || true
    echo "$n"
)
check "co-process gets an answer per line" test "$answers" = 2

# --- --range ----------------------------------------------------------------------------------
# The rescale is exact at the ends, so with one seed these are the same draws as 1 and 0.
for m in linear laplace; do
    run $P -m $m -e 2 -n 200 --seed r 1
    cp "$TMP/out" "$TMP/one"
    run $P -m $m -e 2 -n 200 --seed r 0
    cp "$TMP/out" "$TMP/zero"
    for v in 20 25 1e9; do
        run $P -m $m -e 2 -n 200 --seed r --range 10,20 $v
        check "$m: --range 10,20 value $v behaves like 1" cmp -s "$TMP/one" "$TMP/out"
    done
    for v in 10 5 -1e9; do
        run $P -m $m -e 2 -n 200 --seed r --range 10,20 -- $v
        check "$m: --range 10,20 value $v behaves like 0" cmp -s "$TMP/zero" "$TMP/out"
    done
    run $P -m $m -e 2 -n 200 --seed r 7
    check "$m: default range clips 7 to 1" cmp -s "$TMP/one" "$TMP/out"
    run $P -m $m -e 2 -n 200 --seed r --range=-1,1 1
    check "$m: --range=-1,1 value 1 behaves like 1" cmp -s "$TMP/one" "$TMP/out"
done

# Means: linear at eps = 2 has p(1) = e^2/(1+e^2) = 0.880797, p(0) = 0.119203, p(1/2) = 0.5.
# 40000 reports: sd of the mean <= 0.0025; tolerance 0.015 is 6 sd, so a fresh seed fails each
# check with probability < 2e-9. Laplace at eps = 10: sd sqrt(2)/10, 40000 reports, sd of the mean
# 0.0007; tolerance 0.005 is > 7 sd (< 1e-11).
N=40000
run $P -m linear -e 2 -n $N --seed mean1 --range 10,20 20
check "linear --range 10,20 value 20: mean near p(1), seed mean1" mean_near "$TMP/out" 0.880797 0.015
run $P -m linear -e 2 -n $N --seed mean0 --range 10,20 10
check "linear --range 10,20 value 10: mean near p(0), seed mean0" mean_near "$TMP/out" 0.119203 0.015
run $P -m linear -e 2 -n $N --seed meanh --range 10,20 15
check "linear --range 10,20 value 15: mean near 1/2, seed meanh" mean_near "$TMP/out" 0.5 0.015
run $P -m laplace -e 10 -n $N --seed meanl --range 10,20 17.5
check "laplace --range 10,20 value 17.5: mean near 0.75, seed meanl" \
    mean_near "$TMP/out" 0.75 0.005
run $P -m linear -e 2 -n $N 20 --range 10,20
check "linear --range 10,20 value 20, system RNG: mean near p(1)" \
    mean_near "$TMP/out" 0.880797 0.015

echo "test_privatize.sh: $checks checks, $failures failed"
[[ $failures == 0 ]]
