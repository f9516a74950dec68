#!/bin/sh
# The service under load: ldpb-aggregator (durable acks: SQLite WAL, synchronous = FULL, state on
# the machine's disk) and `ldpb loadgen` (the real client library over real nanomsg sockets) on
# this machine together, sharing its cores. For each client count, a fresh aggregator and state
# directory, then loadgen as fast as the clients go for SECONDS; then, at a fixed offered load
# (--rate, open loop), the latency at that load. Prints one table of figures; never a verdict.
#
# Usage: bench/run_service_bench.sh [SECONDS]      (default 10)
#        SCALE=1 bench/run_service_bench.sh [SECONDS]   only the table by cores (below; or CORES set)
#        e.g. BUILD_DIR=/path/to/release LD_LIBRARY_PATH=/path/to/libs CORES="2 4 8" \
#             bench/run_service_bench.sh 5     (6 configurations x 5 rows; about 35 s each)
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
#   CPU_CLIENTS clients of the CPU-per-report runs (default 256)
#   CPU_MODES   which of them (default "two-trips report-and-assign batch16 batch256
#               prefill16 prefill256"; prefillN: every client first queues max(2N, 256)
#               reports, then all send them in batches of N, and only that phase is measured)
#   RAA_RATES   offered loads of the open-loop runs with one round trip per report (default 10000)
#   RELAY_CLIENTS clients of the relayed runs (default 256; "" skips them): loadgen through
#               `ldpb relay` (batches of up to 256 frames) against loadgen direct, with the daemon's
#               CPU per report (utime+stime from /proc/PID/stat over the reports it counted)
#   SCALE, CORES, CONFIGS, SCALE_CLIENTS, RELAYS: the table by cores (see scale_table below)
#   LOADGEN_FLAGS  more flags for the table by cores' loadgens (e.g. "--transport sp": the
#               native dialer, which leaves the shared cores more room for the daemon)
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

# A build directory that already holds the binaries (carried to another machine, with
# LD_LIBRARY_PATH naming their libraries) is used as it is: nothing is configured or built.
if [ ! -x "$build/tools/ldpb" ] || [ ! -x "$build/aggregator/daemon/ldpb-aggregator" ] ||
    [ ! -x "$build/bench/bench_nn_echo" ] || [ ! -x "$build/bench/bench_dos_flood" ]; then
    if [ ! -f "$build/build.ninja" ]; then
        cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    fi
    ninja -C "$build" ldpb ldpb-aggregator bench_dos_flood bench_nn_echo \
        >"$build/run_service_bench.log" 2>&1 || { cat "$build/run_service_bench.log" >&2; exit 1; }
fi
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
port=$((20000 + $$ % 10000)) # below the source ports Linux gives clients (32768..)
run=0

# start_daemon NAME: a fresh aggregator (ldp-ts-b, linear, epsilon 1, 5 arms) on a new state dir.
start_daemon() {
    run=$((run + 1))
    if [ "$transport" = ipc ]; then
        url="ipc://$work/agg$run.sock"
    else
        url="tcp://127.0.0.1:$((port + run))"
    fi
    # shellcheck disable=SC2086 # DAEMON_PIN and AGGREGATOR_FLAGS are several words on purpose
    ${DAEMON_PIN:-} "$aggregator" --listen "$url" --state-dir "$work/state$run" \
        --key "$work/keys/aggregator.key" --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 \
        --log-level warn ${AGGREGATOR_FLAGS:-} 2>"$work/aggregator$run.log" &
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
    printf '%-6s %7s %9s %11s  %7s %7s %7s  %7s %7s %7s  %7s %7s %7s  %s\n' "$1" "$2" "$3" \
        "$tput" "$(field "$f" "latency assign" 4)" "$(field "$f" "latency assign" 7)" \
        "$(field "$f" "latency assign" 10)" "$(field "$f" "latency report" 4)" \
        "$(field "$f" "latency report" 7)" "$(field "$f" "latency report" 10)" \
        "$(field "$f" "latency round" 4)" "$(field "$f" "latency round" 7)" \
        "$(field "$f" "latency round" 10)" "${errs:-?}"
}

# ---- the table by cores (SCALE=1, or CORES set) ---------------------------------------------------
# For each C of CORES the daemon runs pinned (taskset) to cores 0..C-1 and everything else (loadgen,
# relays, the echo client) to cores C..N-1; on a machine with fewer than 6 cores nothing is pinned
# and the table is by daemon configuration instead (CORES="all"). Each configuration W:R (workers,
# repliers; CONFIGS, default per C: "1:0 C/2:C/4" or, unpinned, "1:0 1:1 2:0 2:1") serves, on a fresh
# state each:
#   direct   loadgen, SCALE_CLIENTS clients, one round trip per report (--mode report-and-assign)
#   relayN   RELAYS `ldpb relay`s (--batch 256 --threads 2), a loadgen behind each with
#            SCALE_CLIENTS / RELAYS clients, two round trips per report (the default mode)
#   batch16  loadgen --batch 16 --prefill 256: the batch phase only
# and, in the same run, bench_nn_echo's server with W workers on the daemon's cores against its
# client on the load cores, once with nanomsg's listener (echo-nanomsg) and once with the native
# one the daemon uses (echo-sp): round trips/s and the server's CPU per round trip.
# reports/s: the daemon's counted reports (status before and after) over the wall time of the load;
# us/rep: the daemon's utime + stime (/proc/PID/stat) over those reports; x echo: that over the
# nanomsg echo server's CPU per round trip with the same W.
scale_table() {
    ncpu=$(nproc)
    if [ -z "${CORES:-}" ]; then
        if [ "$ncpu" -ge 6 ]; then CORES=""; for c in 2 4 8; do [ $c -le $((ncpu - 2)) ] && CORES="$CORES $c"; done; else CORES=all; fi
    fi
    sclients=${SCALE_CLIENTS:-256}
    user_flags=${AGGREGATOR_FLAGS:-}
    relays=${RELAYS:-2}
    tck=$(getconf CLK_TCK)
    pcpu() { awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e6 / t }' "/proc/$1/stat"; }
    counted() {
        "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 5000 |
            awk '/^reports / { print $2; exit }'
    }
    now_ms() { date +%s%3N; }
    echo "# by cores: ldpb-aggregator pinned to cores 0..C-1, load on the others; $(nproc) cores,"
    echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $seconds s per run;"
    echo "# load average before: $(cat /proc/loadavg)"
    printf '%-5s %-4s %-12s %11s %10s %9s   %s\n' cores W:R load "reports/s" "us/rep" "x echo" "errors"
    for c in $CORES; do
        if [ "$c" = all ]; then
            dpin=""; lpin=""
            configs=${CONFIGS:-"1:0 1:1 2:0 2:1"}
        else
            dpin="taskset -c 0-$((c - 1))"; lpin="taskset -c $c-$((ncpu - 1))"
            h=$((c / 2)); q=$((c / 4)); [ $q -lt 1 ] && q=1
            configs=${CONFIGS:-"1:0 $h:$q"}
        fi
        for cfg in $configs; do
            w=${cfg%%:*}; r=${cfg##*:}
            # the echo server with the same workers, on the daemon's cores: nanomsg's listener
            # (the baseline of the x echo column) and the native one the daemon uses
            for lst in nanomsg sp; do
                run=$((run + 1))
                eurl="tcp://127.0.0.1:$((port + run))"
                # shellcheck disable=SC2086
                $dpin "$build/bench/bench_nn_echo" --role server --url "$eurl" --workers "$w" \
                    --listener "$lst" --seconds "$((seconds + 2))" >/dev/null 2>&1 &
                epid=$!
                sleep 0.5
                e0=$(pcpu "$epid")
                # shellcheck disable=SC2086
                $lpin "$build/bench/bench_nn_echo" --role client --url "$eurl" --clients "$sclients" \
                    --seconds "$seconds" >"$work/echo-$run.txt" 2>&1 || true
                e1=$(pcpu "$epid")
                wait "$epid" 2>/dev/null || true
                us=$(awk -v c=$((e1 - e0)) '/^round trips\/s/ { n = $3 * substr($4, 2); printf "%.1f", (n > 0 ? c / n : 0) }' "$work/echo-$run.txt")
                [ "$lst" = nanomsg ] && echo_us=$us
                printf '%-5s %-4s %-12s %11s %10s %9s   %s\n' "$c" "$cfg" "echo-$lst" \
                    "$(awk '/^round trips\/s/ { print $3 }' "$work/echo-$run.txt")" "$us" \
                    "$(awk -v u="$us" -v e="$echo_us" 'BEGIN { printf (e > 0 ? "%.2f" : "-"), u / e }')" -
            done
            for load in direct relay$relays batch16; do
                AGGREGATOR_FLAGS="$user_flags --workers $w --repliers $r"
                DAEMON_PIN=$dpin
                start_daemon
                rpids=""
                if [ "$load" = "relay$relays" ]; then
                    i=0
                    while [ $i -lt "$relays" ]; do
                        # shellcheck disable=SC2086
                        $lpin "$ldpb" relay --listen "ipc://$work/relay$run.$i.sock" --upstream "$url" \
                            --batch 256 --threads 2 2>"$work/relay$run.$i.log" &
                        rpids="$rpids $!"
                        i=$((i + 1))
                    done
                    sleep 0.5
                fi
                r0=$(counted); c0=$(pcpu "$daemon_pid"); t0=$(now_ms)
                lpids=""
                case $load in
                direct)
                    # shellcheck disable=SC2086
                    $lpin "$ldpb" loadgen ${LOADGEN_FLAGS:-} --connect "$url" --server-key "$work/keys/aggregator.pub" \
                        --clients "$sclients" --duration "$seconds" --mode report-and-assign \
                        >"$work/scale-$run.txt" 2>&1 || true
                    ;;
                relay*)
                    i=0
                    while [ $i -lt "$relays" ]; do
                        # shellcheck disable=SC2086
                        $lpin "$ldpb" loadgen ${LOADGEN_FLAGS:-} --connect "ipc://$work/relay$run.$i.sock" \
                            --server-key "$work/keys/aggregator.pub" \
                            --clients "$((sclients / relays))" --duration "$seconds" \
                            >"$work/scale-$run.$i.txt" 2>&1 &
                        lpids="$lpids $!"
                        i=$((i + 1))
                    done
                    for p in $lpids; do wait "$p" || true; done
                    cat "$work"/scale-$run.*.txt >"$work/scale-$run.txt"
                    ;;
                batch16)
                    # shellcheck disable=SC2086
                    $lpin "$ldpb" loadgen ${LOADGEN_FLAGS:-} --connect "$url" --server-key "$work/keys/aggregator.pub" \
                        --clients "$sclients" --batch 16 --prefill 256 >"$work/scale-$run.txt" \
                        2>"$work/scale-$run.err" &
                    lg=$!
                    until grep -q 'prefill done' "$work/scale-$run.err" 2>/dev/null || ! kill -0 "$lg" 2>/dev/null; do
                        sleep 0.05
                    done
                    sleep 0.3
                    r0=$(counted); c0=$(pcpu "$daemon_pid"); t0=$(now_ms)
                    wait "$lg" || true
                    ;;
                esac
                t1=$(now_ms); c1=$(pcpu "$daemon_pid"); r1=$(counted)
                for p in $rpids; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
                errs=$(awk '/^errors/ { $1 = ""; sub(/^ /, ""); printf "%s ", $0 }' "$work/scale-$run.txt")
                awk -v n=$((r1 - r0)) -v c=$((c1 - c0)) -v ms=$((t1 - t0)) -v e="$echo_us" \
                    -v cores="$c" -v cfg="$cfg" -v l="$load" -v errs="${errs:-?}" 'BEGIN {
                    us = n > 0 ? c / n : 0
                    printf "%-5s %-4s %-12s %11.0f %10.1f %9s   %s\n", cores, cfg, l,
                        (ms > 0 ? n * 1000 / ms : 0), us, (e > 0 ? sprintf("%.2f", us / e) : "-"), errs }'
                stop_daemon
            done
        done
    done
    echo "# load average after: $(cat /proc/loadavg)"
}
if [ "${SCALE:-0}" = 1 ] || [ -n "${CORES:-}" ]; then
    scale_table
    exit 0
fi

echo "# ldpb-aggregator + ldpb loadgen on one machine; durable acks (SQLite WAL, synchronous=FULL)"
echo "# aggregator: ldp-ts-b, linear mechanism, epsilon 1, 5 arms, defaults otherwise ${AGGREGATOR_FLAGS:-}"
echo "# transport: $transport; loadgen: a thread and an ldpb_client per device, ledgers in memory"
echo "# machine: $(nproc) online processors, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# state on: $(df -P "$work" | awk 'NR == 2 { print $1 }') ($work)"
echo "# load average before: $(cat /proc/loadavg)"
echo "# $seconds s per run; latency in ms (assign: one round trip; report: round trip incl. commit)"
echo
printf '%-6s %7s %9s %11s  %7s %7s %7s  %7s %7s %7s  %7s %7s %7s  %s\n' run clients offered \
    "reports/s" "a.p50" "a.p99" "a.p99.9" "r.p50" "r.p99" "r.p99.9" "o.p50" "o.p99" "o.p99.9" errors
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
for rate in ${RAA_RATES:-10000}; do
    start_daemon
    out="$work/loadgen-raa-rate-$rate.txt"
    "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --clients "$rate_clients" --rate "$rate" --duration "$seconds" --mode report-and-assign \
        --means 0.9,0.8,0.7,0.6,0.5 >"$out" 2>&1 || true
    row open1 "$rate_clients" "$rate" "$out"
    stop_daemon
done

# cpu_us PID: the process's utime + stime so far, in microseconds.
cpu_us() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e6 / t }' "/proc/$1/stat"; }
reports_of() {
    "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["reports"])'
}
relay_clients=${RELAY_CLIENTS-256}
if [ -n "$relay_clients" ]; then
    echo
    echo "# relayed: loadgen -> ldpb relay (--batch 256 --threads 2) -> aggregator, all on this machine;"
    echo "# cpu/report: the process's utime+stime over the reports the daemon counted in the run"
    printf '%-8s %7s %11s %13s %13s\n' run clients "reports/s" "daemon.us/rep" "relay.us/rep"
    for via in direct relay; do
        start_daemon
        target=$url
        relay_pid=
        if [ "$via" = relay ]; then
            target="ipc://$work/relay$run.sock"
            "$ldpb" relay --listen "$target" --upstream "$url" --batch 256 --threads 2 \
                2>"$work/relay$run.log" &
            relay_pid=$!
            sleep 0.5
        fi
        out="$work/loadgen-$via.txt"
        r0=$(reports_of)
        c0=$(cpu_us "$daemon_pid")
        q0=0
        if [ -n "$relay_pid" ]; then q0=$(cpu_us "$relay_pid"); fi
        "$ldpb" loadgen --connect "$target" --server-key "$work/keys/aggregator.pub" \
            --clients "$relay_clients" --duration "$seconds" --means 0.9,0.8,0.7,0.6,0.5 \
            >"$out" 2>&1 || true
        c1=$(cpu_us "$daemon_pid")
        q1=0
        if [ -n "$relay_pid" ]; then
            q1=$(cpu_us "$relay_pid")
            kill -TERM "$relay_pid" 2>/dev/null || true
            wait "$relay_pid" 2>/dev/null || true
        fi
        r1=$(reports_of)
        printf '%-8s %7s %11s %13s %13s\n' "$via" "$relay_clients" "$(field "$out" "throughput" 2)" \
            "$(awk -v c=$((c1 - c0)) -v r=$((r1 - r0)) 'BEGIN { printf r ? "%.1f" : "-", c / r }')" \
            "$(awk -v c=$((q1 - q0)) -v r=$((r1 - r0)) -v v="$via" 'BEGIN { printf (r && v == "relay") ? "%.1f" : "-", c / r }')"
        stop_daemon
    done
fi

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
cpu_row "ldp-linucb-gaussian d=10 K=20" \
    "--arms 20 --mode local --policy ldp-linucb-gaussian --d 10 --epsilon 1 --delta 1e-6 --horizon 100000000" \
    "--contextual 10"
cpu_row "dp-ucb K=20 (no context)" \
    "--arms 20 --mode central --policy dp-ucb --epsilon 1 --horizon 100000000" ""

echo
echo "# closed: every client starts its next round when the last one is acked; open: rounds start"
echo "# at the offered rate in all (--rate); reports/s below the offered rate means it was not reached."
echo "# open1: open loop with one round trip per report (--mode report-and-assign): the report"
echo "# latency is that round trip (the ack and the next assignment)."
echo "# a. and r.: from the moment the request was sent; o. (open loop only): the round from its"
echo "# scheduled start to the report's ack, so a round loadgen could not send on time (no free"
echo "# client, no CPU) counts its wait too (no coordinated omission)."

# cpu_us PID: the process's user + system CPU so far, in microseconds (/proc/PID/stat fields 14
# and 15, in clock ticks).
tck=$(getconf CLK_TCK)
cpu_us() { awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e6 / t }' "/proc/$1/stat"; }

# The daemon's CPU per durable report, per protocol shape: the CPU the aggregator process spent
# during the run (utime + stime delta) over the reports it counted (its status before and
# after) and over the assignments loadgen received. Every report needs an assignment, so the
# per-report figure includes the assignments' share; the batched runs still take their
# assignments one request each.
cpu_clients=${CPU_CLIENTS:-256}
echo
echo "# daemon CPU per durable report, $cpu_clients clients, $seconds s each (CPU of the aggregator"
echo "# process only; loadgen runs beside it on the same cores)"
printf '%-18s %11s %12s %10s %13s %13s\n' mode "reports/s" "reports" "cpu s" "us/report" \
    "us/assignment"
for mode in ${CPU_MODES:-two-trips report-and-assign batch16 batch256 prefill16 prefill256}; do
    case $mode in
    batch*) margs="--batch ${mode#batch} --duration $seconds" ;;
    prefill*)
        b=${mode#prefill}
        p=$((2 * b > 256 ? 2 * b : 256))
        margs="--batch $b --prefill $p"
        ;;
    *) margs="--mode $mode --duration $seconds" ;;
    esac
    start_daemon
    out="$work/loadgen-cpu-$mode.txt"
    c0=$(cpu_us "$daemon_pid")
    # shellcheck disable=SC2086 # margs is several words on purpose
    "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
        --clients "$cpu_clients" $margs --means 0.9,0.8,0.7,0.6,0.5 >"$out" 2>"$out.err" &
    lg_pid=$!
    case $mode in
    prefill*)
        # The batch phase alone: from the announced second of quiet to the end.
        until grep -q 'prefill done' "$out.err" 2>/dev/null || ! kill -0 "$lg_pid" 2>/dev/null; do
            sleep 0.05
        done
        sleep 0.3
        c0=$(cpu_us "$daemon_pid")
        ;;
    esac
    wait "$lg_pid" || true
    c1=$(cpu_us "$daemon_pid")
    reports=$(awk '/^daemon reports/ { gsub(/[(+,]/, "", $6); print $6; exit }' "$out")
    assigned=$(field "$out" "assignments" 2)
    tput=$(field "$out" "throughput" 2)
    case $mode in
    prefill*)
        assigned=0 # none in the measured phase
        tput=$(field "$out" "batch phase" 3)
        ;;
    esac
    awk -v m="$mode" -v t="$tput" -v r="${reports:-0}" \
        -v a="${assigned:-0}" -v c="$((c1 - c0))" 'BEGIN {
        printf "%-18s %11s %12d %10.2f %13.1f %13s\n", m, t, r, c / 1e6,
            (r > 0 ? c / r : 0), (a > 0 ? sprintf("%.1f", c / a) : "-") }'
    stop_daemon
done

# The bare transport in the same script run: bench_nn_echo's server process (a REP socket
# echoing request-sized messages) and its client process, the server's CPU per round trip.
echo_url="tcp://127.0.0.1:$((port + run + 1))"
[ "$transport" = ipc ] && echo_url="ipc://$work/echo.sock"
"$build/bench/bench_nn_echo" --role server --url "$echo_url" --seconds "$((seconds + 2))" \
    --listener nanomsg \
    >"$work/echo-server.txt" 2>&1 &
echo_pid=$!
sleep 0.5
e0=$(cpu_us "$echo_pid")
"$build/bench/bench_nn_echo" --role client --url "$echo_url" --clients "$cpu_clients" \
    --seconds "$seconds" >"$work/echo-client.txt" 2>&1 || true
e1=$(cpu_us "$echo_pid")
wait "$echo_pid" 2>/dev/null || true
awk -v c="$((e1 - e0))" '/^round trips\/s/ { r = $3; rt = $3 * substr($4, 2) }
    END { printf "%-18s %11s %12.0f %10.2f %13.1f %13s\n", "echo (round trip)", r, rt, c / 1e6,
        (rt > 0 ? c / rt : 0), "-" }' "$work/echo-client.txt"
echo "# echo: the bare nanomsg REP server's CPU per round trip (reports column: round trips;"
echo "# reports/s column: round trips/s over the measured seconds)."
echo "# load average after: $(cat /proc/loadavg)"
if [ "${DOS:-1}" != 0 ]; then
    echo
    "$build/bench/bench_dos_flood" --seconds "$seconds"
fi
