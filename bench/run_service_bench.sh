#!/bin/sh
# The service under load: ldpb-aggregator (durable acks: SQLite WAL, synchronous = FULL, state on
# the machine's disk) and `ldpb loadgen` (the real client library over real nanomsg sockets) on
# this machine together, sharing its cores. For each client count, a fresh aggregator and state
# directory, then loadgen as fast as the clients go for SECONDS; then, at a fixed offered load
# (--rate, open loop), the latency at that load. Prints one table of figures; never a verdict.
#
# Usage: bench/run_service_bench.sh [SECONDS]      (default 10)
# Environment:
#   BUILD_DIR   Release build to use (default /tmp/build-bench; configured with Ninja if missing)
#   CLIENTS     client counts of the closed-loop runs (default "1 16 256")
#   RATES       offered loads of the open-loop runs, rounds/s (default "1000 10000")
#   RATE_CLIENTS clients of the open-loop runs (default 256)
#   TRANSPORT   tcp or ipc (default tcp: tcp://127.0.0.1)
#   STATE_ROOT  where the state directories go (default: mktemp -d under TMPDIR or /tmp)
#   CTX_CLIENTS clients of the daemon-CPU rows (contextual jdp-linucb-gaussian, d 10, K 20, and
#               dp-ucb K 20 beside it) (default 16)
#   KEEP        1: keep the logs and state directories and print where they are
#   DOS         0: skip the last part, bench_dos_flood (an honest client under a garbage flood and
#               under an equal-rate flood of frames under fresh random client keys, in one run)
# Simulated devices keep their privacy ledgers in memory (loadgen's, and said in its output).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-/tmp/build-bench}
seconds=${1:-10}
clients_list=${CLIENTS:-"1 16 256"}
rates=${RATES:-"1000 10000"}
rate_clients=${RATE_CLIENTS:-256}
transport=${TRANSPORT:-tcp}

if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build" ldpb ldpb-aggregator bench_dos_flood >"$build/run_service_bench.log" 2>&1 ||
    { cat "$build/run_service_bench.log" >&2; exit 1; }
ldpb=$build/tools/ldpb
aggregator=$build/aggregator/daemon/ldpb-aggregator

work=${STATE_ROOT:-$(mktemp -d)}
mkdir -p "$work"
daemon_pid=
stop_daemon() {
    if [ -n "$daemon_pid" ]; then
        kill -TERM "$daemon_pid" 2>/dev/null || true
        wait "$daemon_pid" 2>/dev/null || true
        daemon_pid=
    fi
}
cleanup() {
    stop_daemon
    if [ "${KEEP:-0}" = 1 ]; then echo "# kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$ldpb" keygen --out "$work/keys" >/dev/null
port=$((20000 + $$ % 20000))
run=0

# start_daemon NAME: a fresh aggregator (ldp-ts-b, linear, epsilon 1, 5 arms) on a new state dir.
start_daemon() {
    run=$((run + 1))
    if [ "$transport" = ipc ]; then
        url="ipc://$work/agg$run.sock"
    else
        url="tcp://127.0.0.1:$((port + run))"
    fi
    "$aggregator" --listen "$url" --state-dir "$work/state$run" --key "$work/keys/aggregator.key" \
        --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
        ${AGGREGATOR_FLAGS:-} 2>"$work/aggregator$run.log" &
    daemon_pid=$!
    i=0
    until "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --timeout-ms 200 >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
            echo "run_service_bench: the aggregator did not come up:" >&2
            cat "$work/aggregator$run.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}

# field FILE LABEL N: the N-th whitespace-separated field of the line starting with LABEL.
field() { awk -v l="$2" -v n="$3" 'index($0, l) == 1 { print $n; exit }' "$1"; }

row() { # row KIND CLIENTS OFFERED FILE
    f=$4
    tput=$(field "$f" "throughput" 2)
    errs=$(awk '/^errors/ { $1 = ""; sub(/^ /, ""); print; exit }' "$f")
    printf '%-6s %7s %9s %11s  %7s %7s %7s  %7s %7s %7s  %s\n' "$1" "$2" "$3" "$tput" \
        "$(field "$f" "latency assign" 4)" "$(field "$f" "latency assign" 7)" \
        "$(field "$f" "latency assign" 10)" "$(field "$f" "latency report" 4)" \
        "$(field "$f" "latency report" 7)" "$(field "$f" "latency report" 10)" "${errs:-?}"
}

echo "# ldpb-aggregator + ldpb loadgen on one machine; durable acks (SQLite WAL, synchronous=FULL)"
echo "# aggregator: ldp-ts-b, linear mechanism, epsilon 1, 5 arms, defaults otherwise ${AGGREGATOR_FLAGS:-}"
echo "# transport: $transport; loadgen: a thread and an ldpb_client per device, ledgers in memory"
echo "# machine: $(nproc) online processors, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# state on: $(df -P "$work" | awk 'NR == 2 { print $1 }') ($work)"
echo "# load average before: $(cat /proc/loadavg)"
echo "# $seconds s per run; latency in ms (assign: one round trip; report: round trip incl. commit)"
echo
printf '%-6s %7s %9s %11s  %7s %7s %7s  %7s %7s %7s  %s\n' run clients offered "reports/s" \
    "a.p50" "a.p99" "a.p99.9" "r.p50" "r.p99" "r.p99.9" errors
for n in $clients_list; do
    start_daemon
    out="$work/loadgen-closed-$n.txt"
    "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" --clients "$n" \
        --duration "$seconds" --means 0.9,0.8,0.7,0.6,0.5 >"$out" 2>&1 || true
    row closed "$n" - "$out"
    stop_daemon
done
for rate in $rates; do
    start_daemon
    out="$work/loadgen-rate-$rate.txt"
    "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --clients "$rate_clients" --rate "$rate" --duration "$seconds" \
        --means 0.9,0.8,0.7,0.6,0.5 >"$out" 2>&1 || true
    row open "$rate_clients" "$rate" "$out"
    stop_daemon
done

# The daemon's CPU per contextual assignment: jdp-linucb-gaussian (central, epsilon 1), d = 10,
# K = 20, served to `loadgen --contextual 10` with CTX_CLIENTS clients for SECONDS; utime + stime
# of the daemon from /proc/PID/stat over the run, divided by the assignments loadgen counted. The
# daemon's CPU also covers the reports (decoding, the commit's observe: one rank-one update of
# the tree and one save of the (d+1)^2 statistics per report), so this is per round; the same
# measure of a K-armed central policy (dp-ucb, 20 arms, no context) beside it isolates the cost of
# the contexts.
# cpu_row LABEL AGGREGATOR-FLAGS LOADGEN-FLAGS
cpu_row() {
    run=$((run + 1))
    if [ "$transport" = ipc ]; then url="ipc://$work/agg$run.sock"; else url="tcp://127.0.0.1:$((port + run))"; fi
    # shellcheck disable=SC2086
    "$aggregator" --listen "$url" --state-dir "$work/state$run" --key "$work/keys/aggregator.key" \
        $2 --log-level warn ${AGGREGATOR_FLAGS:-} 2>"$work/aggregator$run.log" &
    daemon_pid=$!
    i=0
    until "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --timeout-ms 200 >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
            echo "run_service_bench: the aggregator ($1) did not come up:" >&2
            cat "$work/aggregator$run.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    c0=$(awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat")
    out="$work/loadgen-cpu-$run.txt"
    # shellcheck disable=SC2086
    "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --clients "${CTX_CLIENTS:-16}" --duration "$seconds" $3 >"$out" 2>&1 || true
    c1=$(awk '{ print $14 + $15 }' "/proc/$daemon_pid/stat")
    awk -v l="$1" -v t0="$c0" -v t1="$c1" -v hz="$(getconf CLK_TCK)" \
        -v n="$(field "$out" "assignments" 2)" -v r="$(field "$out" "throughput" 2)" 'BEGIN {
        printf "%-34s %10s %9s %8.2f %9.1f\n", l, n, r, (t1 - t0) / hz,
            (n > 0 ? 1e6 * (t1 - t0) / hz / n : 0) }'
    stop_daemon
}
echo
echo "# daemon CPU (utime+stime, /proc/PID/stat) per assignment with its report; ${CTX_CLIENTS:-16} clients, $seconds s"
printf '%-34s %10s %9s %8s %9s\n' policy assigned reports/s "cpu s" "us/assign"
cpu_row "jdp-linucb-gaussian d=10 K=20" \
    "--arms 20 --mode central --policy jdp-linucb-gaussian --d 10 --epsilon 1 --horizon 100000000" \
    "--contextual 10"
cpu_row "dp-ucb K=20 (no context)" \
    "--arms 20 --mode central --policy dp-ucb --epsilon 1 --horizon 100000000" ""

echo
echo "# closed: every client starts its next round when the last one is acked; open: rounds start"
echo "# at the offered rate in all (--rate); reports/s below the offered rate means it was not reached."
echo "# load average after: $(cat /proc/loadavg)"
if [ "${DOS:-1}" != 0 ]; then
    echo
    "$build/bench/bench_dos_flood" --seconds "$seconds"
fi
