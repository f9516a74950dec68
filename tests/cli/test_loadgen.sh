#!/usr/bin/env bash
# Contract tests for `ldpb loadgen` (docs/cli.md) against the real
# ldpb-aggregator binary: a daemon on a temporary state directory with keys from `ldpb keygen`,
# served on ipc:// and tcp://127.0.0.1:<free port>. Checks help and usage errors (exit 2, one
# line, nothing on stdout), an arm count that does not match the daemon's (exit 2), real runs on
# both transports (exit 0, every round acked, numbers that parse and agree with each other, the
# pseudo-regret recomputed from the pulls, the daemon's own count of reports afterwards), --laws,
# the default environment, --duration, device rotation, failures counted by code while the
# daemon is stopped (exit 1), a wrong key and an unreachable daemon (exit 1 within the timeout).
# Whatever happens, the daemon is killed on exit.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

# field NAME: the value after a label of the output ("reports acked   200" -> 200).
field() { sed -n "s/^$1 \\+//p" out | head -1; }

# daemon_reports URL: the daemon's count of reports, from `ldpb status --json`.
daemon_reports() {
    "$LDPB" status --connect "$1" --server-key "$PUB" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["reports"])'
}

# --- help and usage errors -------------------------------------------------------------------
run --help
check "--help exits 0 (got $rc)" test "$rc" = 0
check "--help writes nothing on stderr" test ! -s err
for opt in connect server-key clients reports duration means laws seed timeout-ms \
    device-reports help; do
    check "--help documents --$opt" grep -q -- "--$opt\\b" out
done
check "--help says the ledgers are in memory" grep -q 'ledgers in memory' out
check "ldpb --help lists loadgen" sh -c "'$LDPB' --help | grep -q '^  loadgen '"

C=(--connect "$IPC" --server-key "$PUB")
usage_case 'missing --connect' --server-key "$PUB"
usage_case 'missing --server-key' --connect "$IPC"
usage_case "unknown option '--frob'" "${C[@]}" --frob 1
usage_case "unexpected argument 'extra'" "${C[@]}" extra
usage_case '--clients 0 outside \[1, 500\]' "${C[@]}" --clients 0
usage_case '--clients 501 outside \[1, 500\]' "${C[@]}" --clients 501
usage_case "--clients 'many' is not a whole number" "${C[@]}" --clients many
usage_case '--reports 0 outside' "${C[@]}" --reports 0
usage_case "--duration '0' is not a number of seconds" "${C[@]}" --duration 0
usage_case "--duration 'x' is not a number of seconds" "${C[@]}" --duration x
usage_case '--timeout-ms 0 outside' "${C[@]}" --timeout-ms 0
usage_case "--rate '0' is not a number of rounds per second" "${C[@]}" --rate 0
usage_case "--rate 'fast' is not a number of rounds per second" "${C[@]}" --rate fast
usage_case '--device-reports 100001 outside' "${C[@]}" --device-reports 100001
usage_case 'give --means or --laws, not both' "${C[@]}" --means 0.5,0.4 --laws bernoulli:0.5*2
usage_case "--means: item 2 '1.5' is not a mean in \[0, 1\]" "${C[@]}" --means 0.5,1.5
usage_case "--means: item 2 '' is not a mean" "${C[@]}" --means 0.5,,0.2
usage_case '--laws: item 1' "${C[@]}" --laws beta:1
usage_case '--seed needs a non-empty text' "${C[@]}" --seed ''
usage_case 'option --clients given twice' "${C[@]}" --clients 1 --clients 2
usage_case 'expected tcp://HOST:PORT or ipc://PATH' --connect http://x --server-key "$PUB"

# --- unreachable: exit 1 within the timeout --------------------------------------------------
t0=$(now_ms)
run --connect "$TCP" --server-key "$PUB" --timeout-ms 300 --reports 10
dt=$(($(now_ms) - t0))
check "unreachable: exit 1 (got $rc)" test "$rc" = 1
check "unreachable: says so (got: $(cat err))" grep -q "^ldpb loadgen: no reply from $TCP within 300 ms" err
check "unreachable: gave up in time (${dt} ms)" test "$dt" -lt 3000
check "unreachable: nothing on stdout" test ! -s out

# --- a real daemon ---------------------------------------------------------------------------
start_daemon

usage_case '--means has 2 arms but the aggregator at .* serves 3 (policy ldp-ts-b)' \
    "${C[@]}" --means 0.9,0.1
usage_case '--laws has 4 arms but the aggregator at .* serves 3' "${C[@]}" --laws uniform:0:1*4
check "refused runs sent no report" test "$(daemon_reports "$IPC")" = 0

# check_run N: the output of a run with N rounds, every one acked, on a 3-arm daemon.
check_run() {
    local n=$1 what=$2
    check "$what: exit 0 (got $rc: $(cat err))" test "$rc" = 0
    check "$what: nothing on stderr" test ! -s err
    check "$what: $n rounds" test "$(field rounds)" = "$n played"
    check "$what: $n acked" test "$(field 'reports acked')" = "$n"
    check "$what: $n assignments" test "$(field assignments)" = "$n"
    check "$what: no errors" test "$(field errors)" = 0
    check "$what: the ledgers are said to be in memory" grep -q '^ledgers  *in memory' out
    check "$what: wall time parses" grep -qE '^wall time +[0-9]+\.[0-9]{3} s$' out
    check "$what: throughput parses" \
        grep -qE '^throughput +[0-9]+ reports/s acked \(durable\), [0-9]+ assignments/s$' out
    local op
    for op in assign report; do
        check "$what: $op latency percentiles parse and are ordered" awk -v op="$op" -v n="$n" '
            $1 == "latency" && $2 == op {
                found = 1
                if ($3 != "p50" || $6 != "p99" || $9 != "p99.9" || $12 != "max") exit 1
                if (!($4 > 0 && $4 <= $7 && $7 <= $10 && $10 <= $13)) exit 1
                if ($18 != "(" n) exit 1
            }
            END { exit !found }' out
    done
    check "$what: three arm rows whose pulls add up to $n" awk -v n="$n" '
        /^ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+%$/ { rows++; s += $3 }
        END { exit !(rows == 3 && s == n) }' out
    check "$what: the pseudo-regret is sum(pulls x (best - mean))" awk -v n="$n" '
        /^ +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+%$/ { mean[$1] = $2; pulls[$1] = $3; if ($2 > best) best = $2 }
        /^pseudo-regret/ { got = $2; over = $4 }
        END {
            for (a in mean) want += pulls[a] * (best - mean[a])
            d = got - want; if (d < 0) d = -d
            exit !(over == n && d <= 0.05 + 1e-9)
        }' out
}

# ipc, Bernoulli means, seeded.
before=$(daemon_reports "$IPC")
run "${C[@]}" --clients 4 --reports 300 --means 0.9,0.5,0.2 --seed loadgen-test
check_run 300 "ipc run"
check "ipc run: the daemon counted the 300 reports" test "$(daemon_reports "$IPC")" = $((before + 300))
check "ipc run: loadgen saw the same count" grep -qx "daemon reports  $before -> $((before + 300)) (+300, counting every client)" out
check "ipc run: the environment is shown" grep -qx 'environment     bernoulli:0.9,bernoulli:0.5,bernoulli:0.2' out
check "ipc run: seeded noise is said so" grep -q '^noise  *seeded from --seed' out
check "ipc run: 4 clients" grep -qx 'clients         4 at a time, a thread and an ldpb_client each' out
check "ipc run: 4 devices" grep -qx 'devices         4 simulated devices in all, up to 1000 reports each' out

# --rate paces the rounds: 60 rounds at 100/s take at least 0.59 s whatever the clients could do.
run "${C[@]}" --clients 4 --reports 60 --rate 100 --means 0.9,0.5,0.2
check_run 60 "paced run"
check "paced run: the pacing is shown" grep -qx 'pacing          100 rounds/s requested (--rate, open loop)' out
check "paced run: took at least 0.59 s ($(field 'wall time'))" \
    awk '$1 == "wall" && $2 == "time" { exit !($3 >= 0.59) }' out
check "paced run: the rounds are timed from their schedule" \
    grep -q '^latency round   p50 .* (60 calls)$' out
check "paced run: and their lag" grep -q '^latency lag     p50 .* (60 calls)$' out

# Coordinated omission: one client cannot keep a schedule of a round every 10 us, so the late
# rounds leave long after their scheduled start. Timed from the moment it was sent, each report
# looks as fast as the others; timed from its schedule, a late round counts its wait. The last
# round ends after all 50 rounds, at least 25 of which took the median report time r or more,
# and was due 0.49 ms after the start: it took at least 25 r - 0.49 ms, more than 10 r whenever
# r > 33 us (a report's round trip includes a commit's fsync).
run "${C[@]}" --clients 1 --reports 50 --rate 100000 --means 0.9,0.5,0.2
check_run 50 "overloaded schedule"
check "overloaded schedule: the late rounds count their wait" awk '
    $1 == "latency" && $2 == "report" { r50 = $4 }
    $1 == "latency" && $2 == "round" { omax = $13 }
    END { exit !(r50 > 0 && omax >= 10 * r50) }' out
check "overloaded schedule: the rounds left late" awk '
    $1 == "latency" && $2 == "lag" { m = $13 }
    END { exit !(m > 0) }' out

# tcp, --laws.
before=$(daemon_reports "$TCP")
run --connect "$TCP" --server-key "$PUB" --clients 3 --reports 90 --laws 'beta:4:1,uniform:0:1*2'
check_run 90 "tcp run"
check "tcp run: the daemon counted the 90 reports" test "$(daemon_reports "$TCP")" = $((before + 90))
check "tcp run: the laws are shown" grep -qx 'environment     beta:4:1,uniform:0:1\*2' out
check "tcp run: system noise is said so" grep -q "^noise  *the system's secure generator" out

# The default environment: as many evenly spaced means as the daemon has arms.
run "${C[@]}" --clients 1 --reports 20
check_run 20 "default environment"
check "default environment: 0.75 .. 0.25" grep -qx \
    'environment     bernoulli:0.75,bernoulli:0.5,bernoulli:0.25 (default: evenly spaced means)' out

# Device rotation: 100 rounds on 2 threads, 10 reports per device: at least 10 devices.
run "${C[@]}" --clients 2 --reports 100 --device-reports 10 --means 0.6,0.5,0.4
check_run 100 "device rotation"
check "device rotation: 10 or 11 devices" awk '/^devices/ { d = $2 } END { exit !(d >= 10 && d <= 11) }' out

# --duration alone: runs about that long, every round acked.
t0=$(now_ms)
run "${C[@]}" --clients 2 --duration 1
dt=$(($(now_ms) - t0))
check "duration: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "duration: ran about 1 s (${dt} ms)" test "$dt" -ge 1000 -a "$dt" -lt 6000
check "duration: wall time about 1 s" awk '/^wall time/ { w = $3 } END { exit !(w >= 1.0 && w < 5) }' out
rounds=$(field rounds | cut -d' ' -f1)
check "duration: some rounds ($rounds), all acked" test "$rounds" -gt 0 -a "$(field 'reports acked')" = "$rounds"

# Failures are counted by code and make the exit status 1: the daemon is stopped for a while.
# Each step waits for what it needs, not a fixed time, as a loaded machine or a sanitizer build
# may take seconds to start the run or serve again: reports acked before the stop, the stop held
# twice an operation's 3 attempts of 500 ms (an attempt of 100 ms may see no ack at all while a
# busy disk makes each commit's fsync slower than that), reports acked again after it; then the
# run is ended by SIGINT (its results printed as at its deadline).
# wait_reports_above URL N: until the daemon has counted more than N reports (40 s at most).
wait_reports_above() {
    local end=$(($(now_ms) + 40000))
    while [ "$(daemon_reports "$1")" -le "$2" ]; do
        [ "$(now_ms)" -lt "$end" ] || return 1
        sleep 0.05
    done
}
run_bg_out=bg.out
base=$(daemon_reports "$IPC")
set +e
"$LDPB" loadgen "${C[@]}" --clients 2 --duration 300 --timeout-ms 500 >"$run_bg_out" 2>bg.err &
LG=$!
wait_reports_above "$IPC" "$base"
up_before=$?
kill -STOP "$PID"
sleep 3
kill -CONT "$PID"
paused=$(daemon_reports "$IPC")
wait_reports_above "$IPC" "$paused"
up_after=$?
kill -INT "$LG"
wait "$LG"
rc=$?
set -e
check "daemon stopped meanwhile: reports acked before the stop" test "$up_before" = 0
check "daemon stopped meanwhile: reports acked again after it" test "$up_after" = 0
check "daemon stopped meanwhile: exit 1 (got $rc)" test "$rc" = 1
check "daemon stopped meanwhile: errors counted" awk '/^errors/ { exit !($2 > 0) }' "$run_bg_out"
check "daemon stopped meanwhile: LDPB_ETIMEDOUT by operation, with a message" \
    grep -qE '^  LDPB_ETIMEDOUT +[0-9]+ \(assign [0-9]+, report [0-9]+, new client 0\)$' "$run_bg_out"
check "daemon stopped meanwhile: the first message" grep -qE '^ +first: (assign|report): no answer after 3 attempts of 500 ms' "$run_bg_out"
check "daemon stopped meanwhile: still some reports acked" awk '/^reports acked/ { exit !($3 > 0) }' "$run_bg_out"

# A wrong server key: refused before any round.
run --connect "$IPC" --server-key other/aggregator.pub --reports 10
check "wrong key: exit 1 (got $rc)" test "$rc" = 1
check "wrong key: names the key (got: $(cat err))" grep -q 'LDPB_ECRYPTO.*aggregator.pub' err
check "wrong key: nothing on stdout" test ! -s out

# --- one round trip per report (--mode report-and-assign), and batches (--batch, --prefill) ---
for opt in mode batch prefill; do
    check "--help documents --$opt" sh -c "'$LDPB' loadgen --help | grep -q -- '--$opt\\b'"
done
usage_case "--mode must be two-trips or report-and-assign, not" "${C[@]}" --mode fast
usage_case '--batch 513 outside' "${C[@]}" --batch 513
usage_case '--prefill needs --batch' "${C[@]}" --prefill 8
usage_case '--batch sends its own frames' "${C[@]}" --batch 4 --mode two-trips
usage_case '--contextual sends each report alone' "${C[@]}" --contextual 4 --batch 4
usage_case '--contextual sends each report alone' "${C[@]}" --contextual 4 --mode report-and-assign

before=$(daemon_reports "$IPC")
run "${C[@]}" --clients 4 --reports 200 --mode report-and-assign --means 0.9,0.5,0.2
check "report-and-assign: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "report-and-assign: 200 acked" test "$(field 'reports acked')" = 200
check "report-and-assign: no errors" test "$(field errors)" = 0
check "report-and-assign: the mode is shown" \
    grep -qx 'mode            report-and-assign (one round trip per report)' out
# each client's last report also brings an assignment the run ends without using
check "report-and-assign: 200 to 204 assignments" \
    awk '/^assignments/ { exit !($2 >= 200 && $2 <= 204) }' out
check "report-and-assign: the daemon counted 200" \
    test "$(daemon_reports "$IPC")" = $((before + 200))

before=$(daemon_reports "$TCP")
run --connect "$TCP" --server-key "$PUB" --clients 2 --reports 160 --batch 16 --means 0.9,0.5,0.2
check "batch: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "batch: 160 acked" test "$(field 'reports acked')" = 160
check "batch: no errors" test "$(field errors)" = 0
check "batch: frames of up to 16" grep -qE '^mode +batches of up to 16 reports a frame \(1[0-9] frames\)$' out
check "batch: the daemon counted 160" test "$(daemon_reports "$TCP")" = $((before + 160))

before=$(daemon_reports "$IPC")
run "${C[@]}" --clients 2 --batch 8 --prefill 24 --means 0.9,0.5,0.2
check "prefill: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "prefill: 48 acked" test "$(field 'reports acked')" = 48
check "prefill: announced on stderr" grep -q 'prefill done: 24 reports queued per client' err
check "prefill: the batch phase is timed" grep -qE '^batch phase +[0-9]+ reports/s acked over [0-9.]+ s' out
check "prefill: the daemon counted 48" test "$(daemon_reports "$IPC")" = $((before + 48))

# --- the native dialer (--transport sp): the same runs, the same counts ----------------------
check "--help documents --transport" sh -c "'$LDPB' loadgen --help | grep -q -- '--transport\\b'"
usage_case "--transport must be nanomsg or sp, not 'pigeon'" "${C[@]}" --transport pigeon
for url in "$IPC" "$TCP"; do
    before=$(daemon_reports "$url")
    run --connect "$url" --server-key "$PUB" --transport sp --clients 3 --reports 90 \
        --means 0.9,0.5,0.2
    check_run 90 "sp run on $url"
    check "sp run on $url: the daemon counted the 90 reports" \
        test "$(daemon_reports "$url")" = $((before + 90))
    before=$(daemon_reports "$url")
    run --connect "$url" --server-key "$PUB" --transport sp --clients 4 --reports 200 \
        --mode report-and-assign --means 0.9,0.5,0.2
    check "sp report-and-assign on $url: exit 0 (got $rc: $(cat err))" test "$rc" = 0
    check "sp report-and-assign on $url: 200 acked" test "$(field 'reports acked')" = 200
    check "sp report-and-assign on $url: no errors" test "$(field errors)" = 0
    check "sp report-and-assign on $url: the daemon counted 200" \
        test "$(daemon_reports "$url")" = $((before + 200))
done

# --- the daemon drains and exits 0 on SIGTERM ------------------------------------------------
stop_daemon

finish
