#!/usr/bin/env bash
# The EXP3 family in the real ldpb-aggregator (docs/aggregator.md, "Policies served"): an
# ldp-exp3-lap daemon serves `ldpb loadgen`'s clients with their Laplace mechanism and answers
# `ldpb status`; configuration errors exit 2 with a message that names the problem and create no
# state (ldp-exp3-lap with a non-Laplace mechanism, tau above the horizon, a negative threshold);
# a state belongs to the tau of exp3-tau and the threshold of ldp-exp3-lap (another value is exit
# 2) but not to a tau that exp3 does not read; --help says who reads tau and threshold.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

# agg ARGS...: ldpb-aggregator --check-config; sets rc, out, err.
agg() {
    set +e
    "$AGG" --check-config --listen "$IPC" --key keys/aggregator.key --arms 3 "$@" \
        </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

# refused DESCRIPTION PATTERN STATE ARGS...: exit 2, the message, no state directory created.
refused() {
    local what=$1 pattern=$2 state=$3
    shift 3
    agg --state-dir "$TMP/$state" "$@"
    check "$what: exit 2 (got $rc: $(cat err))" test "$rc" = 2
    check "$what: says '$pattern' (got: $(cat err))" grep -q -- "$pattern" err
    check "$what: no state created" test ! -e "$TMP/$state"
}

NP=(--mode nonprivate --allow-nonprivate)

# --- --help -----------------------------------------------------------------------------------
"$AGG" --help >help.txt
line=$(grep -A1 -- "--tau " help.txt | tr "\n" " " || true)
check "--help: --tau is read by exp3-tau (got: $line)" \
    sh -c "echo '$line' | grep -q 'read by: exp3-tau)'"
line=$(grep -A2 -- "--threshold " help.txt | tr "\n" " " || true)
check "--help: --threshold is read by the DP-EXP3-Lap pair (got: $line)" \
    sh -c "echo '$line' | grep -q 'read by: dp-exp3-lap, ldp-exp3-lap)'"
check "--help: --threshold names bound-min (got: $line)" \
    sh -c "echo '$line' | grep -q 'bound-min'"

# --- configuration errors ---------------------------------------------------------------------
refused "ldp-exp3-lap with linear" "mechanism linear is not laplace" s1 \
    --policy ldp-exp3-lap --mechanism linear --horizon 1000
refused "exp3-tau with tau above the horizon" "tau 5000 outside \[1, T = 1000\]" s2 \
    "${NP[@]}" --policy exp3-tau --horizon 1000 --tau 5000
refused "a negative threshold" "threshold: -1 outside \[0," s3 \
    --policy ldp-exp3-lap --mechanism laplace --horizon 1000 --threshold -1
refused "ldp-exp3-lap without a horizon" "needs the horizon T" s4 \
    --policy ldp-exp3-lap --mechanism laplace
refused "exp3-tau: tau not a number" "tau: 'x' is not a non-negative integer" s5 \
    "${NP[@]}" --policy exp3-tau --horizon 1000 --tau x

# serve_reports STATE ARGS...: a daemon on STATE with ARGS commits a few reports and stops (a
# state's meta rows are written with its first commit).
serve_reports() {
    local state=$1
    shift
    "$AGG" --listen "$IPC" --state-dir "$state" --key keys/aggregator.key --arms 3 \
        --log-level warn "$@" 2>>daemon.log &
    PID=$!
    for _ in $(seq 1 100); do
        "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    run --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 --reports 6 --clients 1 --seed y
    check "loadgen against $* : exit 0 (rc $rc: $(cat err))" test "$rc" = 0
    stop_daemon
}

# --- tau and threshold belong to the state of the policies that read them ---------------------
agg --state-dir "$TMP/tau" "${NP[@]}" --policy exp3-tau --horizon 1000 --tau 5
check "exp3-tau, tau 5: --check-config passes (rc $rc: $(cat err))" test "$rc" = 0
agg --state-dir "$TMP/tau" "${NP[@]}" --policy exp3-tau --horizon 1000 --tau 6
check "nothing committed yet: another tau passes too (rc $rc: $(cat err))" test "$rc" = 0
serve_reports "$TMP/tau" "${NP[@]}" --policy exp3-tau --horizon 1000 --tau 5
agg --state-dir "$TMP/tau" "${NP[@]}" --policy exp3-tau --horizon 1000 --tau 6
check "exp3-tau, another tau: exit 2 (got $rc)" test "$rc" = 2
check "exp3-tau, another tau: names it (got: $(cat err))" grep -q "tau is '5' there but '6' now" err
serve_reports "$TMP/exp3" "${NP[@]}" --policy exp3 --horizon 1000 --tau 5
agg --state-dir "$TMP/exp3" "${NP[@]}" --policy exp3 --horizon 1000 --tau 6
check "exp3 does not read tau: another tau starts (rc $rc: $(cat err))" test "$rc" = 0

# --- a served ldp-exp3-lap state, then another threshold ---------------------------------------
"$AGG" --listen "$IPC" --listen "$TCP" --state-dir "$TMP/state" --key keys/aggregator.key \
    --arms 3 --policy ldp-exp3-lap --mechanism laplace --epsilon 1 --horizon 1000 \
    --threshold 3 --log-level warn 2>daemon.log &
PID=$!
for _ in $(seq 1 100); do
    "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
run --connect "$TCP" --server-key "$PUB" --timeout-ms 2000 --reports 60 --clients 3 --seed x
check "loadgen against ldp-exp3-lap: exit 0 (rc $rc: $(cat err))" test "$rc" = 0
set +e
"$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 >status.txt 2>&1
src=$?
set -e
check "status answers (rc $src: $(cat status.txt))" test "$src" = 0
check "status names the policy" grep -q "ldp-exp3-lap" status.txt
check "status counts the 60 reports ($(cat status.txt))" grep -Eq "reports[^0-9]*60\b" status.txt
stop_daemon
agg --state-dir "$TMP/state" --policy ldp-exp3-lap --mechanism laplace --epsilon 1 \
    --horizon 1000 --threshold 4
check "ldp-exp3-lap, another threshold: exit 2 (got $rc)" test "$rc" = 2
check "ldp-exp3-lap, another threshold: names it (got: $(cat err))" \
    grep -q "threshold is '3' there but '4' now" err
agg --state-dir "$TMP/state" --policy ldp-exp3-lap --mechanism laplace --epsilon 1 \
    --horizon 1000 --threshold 3
check "ldp-exp3-lap, the same threshold: starts (rc $rc: $(cat err))" test "$rc" = 0

finish
