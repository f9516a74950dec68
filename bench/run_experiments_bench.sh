#!/usr/bin/env bash
# Many experiments in one ldpb-aggregator: what an experiment costs. Prints figures, never a
# verdict:
#   1. memory: the daemon's RSS (VmRSS of /proc/PID/status, idle, after it serves) with 1 and with
#      EXPERIMENTS (default 10000) experiments from a generated configuration, each on a fresh
#      state; the RSS per idle experiment is the difference over EXPERIMENTS - 1;
#   2. restart: the EXPERIMENTS daemon stopped (SIGTERM) and started again on its state, RESTARTS
#      (default 3) times: the time from the start until the last-declared experiment answers a
#      status request (polled every 10 ms);
#   3. CPU per report: one daemon declaring SPREAD (default 1000) experiments; `ldpb loadgen`
#      spread over all SPREAD (uniformly) and on one of them, alternated ROUNDS (default 3) times
#      in one run, each REPORTS (default 10000) rounds with CLIENTS (default 16) clients; the
#      daemon's utime + stime (/proc/PID/stat) over the reports loadgen saw acked, and the bytes
#      it wrote (wchar of /proc/PID/io: mostly the WAL's pages, plus the replies) per report.
# Every experiment: ldp-ts-b, local, 5 arms, linear mechanism, epsilon 1. The machine may be
# shared: CPU time per report and ratios within one run are the figures to compare.
#
# Usage: bench/run_experiments_bench.sh
# Environment: BUILD_DIR (a Release build; default build/release under the repository, configured
# and built with Ninja if the binaries are missing), EXPERIMENTS, RESTARTS, SPREAD, ROUNDS,
# REPORTS, CLIENTS (above), KEEP=1 keeps the work directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build/release}
n_many=${EXPERIMENTS:-10000}
restarts=${RESTARTS:-3}
spread=${SPREAD:-1000}
rounds=${ROUNDS:-3}
reports=${REPORTS:-10000}
clients=${CLIENTS:-16}

if [ ! -x "$build/tools/ldpb" ] || [ ! -x "$build/aggregator/daemon/ldpb-aggregator" ]; then
    if [ ! -f "$build/build.ninja" ]; then
        cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLDPB_BUILD_TESTS=OFF \
            >/dev/null
    fi
    ninja -C "$build" ldpb ldpb-aggregator >"$build/run_experiments_bench.log" 2>&1 ||
        { cat "$build/run_experiments_bench.log" >&2; exit 1; }
fi
ldpb=$build/tools/ldpb
aggregator=$build/aggregator/daemon/ldpb-aggregator

work=$(mktemp -d)
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
pub=$work/keys/aggregator.pub
tck=$(getconf CLK_TCK)

# gen_config N NAME: a configuration declaring experiments e0 .. e{N-1} (no `default`), served
# on ipc://$work/NAME.sock with its state in $work/NAME.state; prints the file's path.
gen_config() {
    local n=$1 name=$2 conf=$work/$2.conf
    {
        echo "listen = ipc://$work/$name.sock"
        echo "state_dir = $work/$name.state"
        echo "key = $work/keys/aggregator.key"
        echo "log_level = warn"
        echo "experiments_max = $((n > 10000 ? n : 10000))"
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
            printf "\n[experiment e%d]\npolicy = ldp-ts-b\nmode = local\narms = 5\nmechanism = linear\nepsilon = 1\n", i }'
    } >"$conf"
    echo "$conf"
}

now_ns() { date +%s%N; }

# start_daemon NAME LAST: starts the daemon of $work/NAME.conf; returns once experiment LAST
# answers a status request; sets daemon_pid, url and ready_ms (start to serving).
start_daemon() {
    local name=$1 last=$2 t0 i=0
    url="ipc://$work/$name.sock"
    t0=$(now_ns)
    "$aggregator" --config "$work/$name.conf" 2>>"$work/$name.log" &
    daemon_pid=$!
    until "$ldpb" status --connect "$url" --server-key "$pub" --experiment "$last" \
        --timeout-ms 200 >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 6000 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
            echo "run_experiments_bench: the aggregator ($name) did not come up:" >&2
            cat "$work/$name.log" >&2
            exit 1
        fi
        sleep 0.01
    done
    ready_ms=$((($(now_ns) - t0) / 1000000))
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
wchar() { awk '/^wchar:/ { print $2 }' "/proc/$1/io"; }
cpu_us() { awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e6 / t }' "/proc/$1/stat"; }

echo "# run_experiments_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores,"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //');"
echo "# load average before: $(cat /proc/loadavg)"

# ---- 1. memory -------------------------------------------------------------------------------
gen_config 1 one >/dev/null
gen_config "$n_many" many >/dev/null
start_daemon one e0
sleep 1
rss_one=$(rss_kib "$daemon_pid")
stop_daemon
start_daemon many "e$((n_many - 1))"
first_ms=$ready_ms
sleep 1
rss_many=$(rss_kib "$daemon_pid")
echo
echo "== 1. memory (VmRSS, idle, serving) =="
printf 'RSS with 1 experiment          %8d KiB\n' "$rss_one"
printf 'RSS with %-6d experiments    %8d KiB   (first start on a fresh state: %d ms)\n' \
    "$n_many" "$rss_many" "$first_ms"
awk -v a="$rss_one" -v b="$rss_many" -v n="$n_many" \
    'BEGIN { printf "RSS per idle experiment        %8.2f KiB   ((%d - %d) / %d)\n", (b - a) / (n - 1), b, a, n - 1 }'

# ---- 2. restart ------------------------------------------------------------------------------
echo
echo "== 2. restart to serving with $n_many experiments (SIGTERM, start on the same state) =="
for r in $(seq 1 "$restarts"); do
    stop_daemon
    start_daemon many "e$((n_many - 1))"
    printf 'restart %d: serving e%d after %d ms\n' "$r" "$((n_many - 1))" "$ready_ms"
done
stop_daemon

# ---- 3. CPU per report -----------------------------------------------------------------------
gen_config "$spread" spread >/dev/null
start_daemon spread "e$((spread - 1))"
echo
echo "== 3. daemon CPU per report: one daemon with $spread experiments; loadgen ($clients clients,"
echo "==    $reports rounds each run) on all $spread (uniform) or on e0 alone, alternated =="
printf '%-6s %-12s %10s %12s %12s %14s\n' round load acked "cpu ms" "us/report" "bytes/report"
declare -A sum_us sum_n
for r in $(seq 1 "$rounds"); do
    for load in "spread$spread" one; do
        if [ "$load" = one ]; then
            flags=(--experiments 1 --experiment-prefix e)
        else
            flags=(--experiments "$spread")
        fi
        c0=$(cpu_us "$daemon_pid")
        w0=$(wchar "$daemon_pid")
        "$ldpb" loadgen --connect "$url" --server-key "$pub" --clients "$clients" \
            --reports "$reports" "${flags[@]}" >"$work/loadgen.$r.$load" 2>&1 || true
        c1=$(cpu_us "$daemon_pid")
        w1=$(wchar "$daemon_pid")
        acked=$(awk '/^reports acked/ { print $3; exit }' "$work/loadgen.$r.$load")
        acked=${acked:-0}
        us=$(awk -v c=$((c1 - c0)) -v n="$acked" 'BEGIN { printf "%.1f", (n > 0 ? c / n : 0) }')
        wb=$(awk -v w=$((w1 - w0)) -v n="$acked" 'BEGIN { printf "%.0f", (n > 0 ? w / n : 0) }')
        printf '%-6s %-12s %10s %12.1f %12s %14s\n' "$r" "$load" "$acked" "$(awk -v c=$((c1 - c0)) 'BEGIN { print c / 1000 }')" "$us" "$wb"
        sum_us[$load]=$((${sum_us[$load]:-0} + c1 - c0))
        sum_n[$load]=$((${sum_n[$load]:-0} + acked))
        if [ "$acked" = 0 ]; then
            echo "run_experiments_bench: loadgen acked nothing; its output:" >&2
            cat "$work/loadgen.$r.$load" >&2
            exit 1
        fi
    done
done
stop_daemon
awk -v a="${sum_us[spread$spread]}" -v na="${sum_n[spread$spread]}" -v b="${sum_us[one]}" \
    -v nb="${sum_n[one]}" -v s="$spread" 'BEGIN {
    x = a / na; y = b / nb
    printf "all rounds: %.1f us/report over %d experiments, %.1f us/report on one: ratio %.3f\n", x, s, y, x / y }'
