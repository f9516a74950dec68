#!/bin/sh
# The committer's serial CPU per report against row_shards (docs/aggregator.md, "Row shards"):
# for each S of SHARDS and each load of MODES, a fresh ldpb-aggregator (durable acks: SQLite WAL,
# synchronous = FULL) with --row-shards S and `ldpb loadgen` on this machine together for SECONDS;
# prints durable reports/s (the daemon's count over the run's wall time), the daemon's CPU per
# report (utime + stime of /proc/PID/stat over the reports counted), the committer thread's
# (ldpb-commit, /proc/PID/task/TID/stat) and each row writer's (ldpb-rowsI), and the ceiling the
# committer alone puts on a node of any number of cores, 1e6 / (its us per report) reports/s.
# Prints figures, never a verdict.
#
# Usage: BUILD_DIR=DIR bench/run_shard_bench.sh [SECONDS]      (default 8)
# Environment:
#   BUILD_DIR  a Release build holding tools/ldpb and aggregator/daemon/ldpb-aggregator
#   SHARDS     row_shards values (default "1 2 4")
#   MODES      direct (one round trip per report: --mode report-and-assign) and/or batch16
#              (--batch 16: 16 assignments, then their reports in one frame) (default both)
#   CLIENTS    loadgen clients (default 256)
#   ROUNDS     how many times the whole table is run, interleaved (default 1)
#   AGGREGATOR_FLAGS  more daemon flags (e.g. "--workers 2 --repliers 1")
set -u
build=${BUILD_DIR:?set BUILD_DIR to a Release build}
seconds=${1:-8}
ldpb=$build/tools/ldpb
aggregator=$build/aggregator/daemon/ldpb-aggregator
clients=${CLIENTS:-256}
work=$(mktemp -d)
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$ldpb" keygen --out "$work/keys" >/dev/null
tck=$(getconf CLK_TCK)
pcpu() { awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e6 / t }' "/proc/$1/stat"; }
# threads PID: "name us" of every thread, summed by name
threads() {
    for t in /proc/"$1"/task/*; do
        n=$(cat "$t/comm" 2>/dev/null) || continue
        awk -v n="$n" -v t="$tck" '{ sub(/^.*\) /, ""); printf "%s %.0f\n", n, ($12 + $13) * 1e6 / t }' "$t/stat"
    done | awk '{ s[$1] += $2 } END { for (k in s) print k, s[k] }' | sort
}
count() {
    "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 5000 |
        awk '/^reports / { print $2; exit }'
}
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //');" \
    "$seconds s per run, $clients clients; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-3s %-8s %10s %12s %13s %12s  %s\n' S load reports/s daemon_us/rep commit_us/rep ceiling \
    "writers us/rep"
n=0
round=0
while [ $round -lt "${ROUNDS:-1}" ]; do
    round=$((round + 1))
    for s in ${SHARDS:-1 2 4}; do
        for mode in ${MODES:-direct batch16}; do
            n=$((n + 1))
            url=tcp://127.0.0.1:$((32000 + $$ % 20000 + n))
            # shellcheck disable=SC2086 # AGGREGATOR_FLAGS is several words on purpose
            "$aggregator" --listen "$url" --state-dir "$work/s$n" --key "$work/keys/aggregator.key" \
                --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
                --row-shards "$s" ${AGGREGATOR_FLAGS:-} 2>"$work/a$n.log" &
            daemon_pid=$!
            i=0
            until count >/dev/null 2>&1; do
                i=$((i + 1))
                if [ $i -gt 100 ] || ! kill -0 "$daemon_pid" 2>/dev/null; then
                    echo "run_shard_bench: the aggregator did not come up:" >&2
                    cat "$work/a$n.log" >&2
                    exit 1
                fi
                sleep 0.1
            done
            case $mode in
            direct) load="--mode report-and-assign" ;;
            batch16) load="--batch 16" ;;
            *) echo "run_shard_bench: unknown load $mode" >&2; exit 2 ;;
            esac
            r0=$(count); c0=$(pcpu $daemon_pid); threads $daemon_pid >"$work/t0"; t0=$(date +%s%3N)
            # shellcheck disable=SC2086
            "$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
                --clients "$clients" --duration "$seconds" $load >"$work/l$n.txt" 2>&1
            t1=$(date +%s%3N); r1=$(count); c1=$(pcpu $daemon_pid); threads $daemon_pid >"$work/t1"
            kill -TERM $daemon_pid; wait $daemon_pid; daemon_pid=
            r=$((r1 - r0))
            join "$work/t0" "$work/t1" | awk -v s="$s" -v m="$mode" -v r="$r" -v ms=$((t1 - t0)) \
                -v c=$((c1 - c0)) '
                { d[$1] = $3 - $2 }
                END {
                    if (r <= 0) { printf "%-3s %-8s no reports counted\n", s, m; exit }
                    cu = d["ldpb-commit"] / r
                    w = ""
                    for (k in d) if (k ~ /^ldpb-rows/) w = w sprintf(" %s %.2f", substr(k, 10), d[k] / r)
                    printf "%-3s %-8s %10.0f %12.2f %13.2f %12.0f %s\n", s, m, r * 1000 / ms, c / r,
                        cu, (cu > 0 ? 1e6 / cu : 0), w
                }'
        done
    done
done
