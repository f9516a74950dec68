#!/bin/sh
# The daemon's ceiling with one round trip per report, driven by several load processes: one
# `ldpb loadgen` (a thread and a nanomsg socket per client) is itself a ceiling on a large
# machine, so this runs N of them at once. For each configuration: the daemon pinned to cores
# 0..C-1 with W workers, R repliers and S row shards, N loadgen processes of 300 clients each on
# the other cores, `--mode report-and-assign` for SECONDS, straight to the daemon or through K
# `ldpb relay`s (also on the load cores); prints reports/s (the daemon's count over the run), the
# daemon's CPU per report (/proc/PID/stat), how busy the load's cores were (/proc/stat) and each
# daemon thread's share of one core with its name, busiest first (ldpb-commit is the committer,
# ldpb-rowsI the row shards' writers).
#
# Usage: BUILD_DIR=DIR bench/run_direct_scale.sh [SECONDS]        (default 5)
# Environment:
#   BUILD_DIR  a Release build holding tools/ldpb and aggregator/daemon/ldpb-aggregator (carried
#              to another machine: set LD_LIBRARY_PATH to the libraries `ldd` lists)
#   CFGS       configurations C_W:R_N[_S[_LOAD]], blank-separated (default "2_1:0_3 4_2:1_3
#              8_4:2_3 8_4:2_4"); S the daemon's --row-shards (default 1); LOAD `direct` (the
#              default) or `relayK`: K relays (--batch 256 --threads RELAY_THREADS), the N loadgens
#              spread over them, each device still one round trip per report to its relay
#   RELAY_THREADS  batches in flight per relay (default 4)
#   LOADGEN_FLAGS  more loadgen flags (e.g. "--transport sp")
#   METRICS    1: also serve /metrics and print, over the run, the commits per second, items
#              (reports and decisions) per commit and the mean commit time, split by phase (the
#              rows; observe and the states' write; COMMIT with its fdatasyncs), with the share
#              of the run's wall time spent inside commits (needs python3 or curl)
#   AGGREGATOR_FLAGS  more daemon flags (e.g. "--key-derivations-per-s 0": thousands of fresh
#              devices at once exceed the default 1000 derivations/s, and their first frames
#              are refused with LDPB_EBUSY until it refills; the errors line says so)
# Needs taskset and at least C + 1 cores for every C. Prints figures, never a verdict.
set -u
build=${BUILD_DIR:?set BUILD_DIR to a Release build}
seconds=${1:-5}
ldpb=$build/tools/ldpb
aggregator=$build/aggregator/daemon/ldpb-aggregator
ncpu=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$ldpb" keygen --out "$work/keys" >/dev/null
tck=$(getconf CLK_TCK)
pcpu() { awk -v t="$tck" '{ sub(/^.*\) /, ""); printf "%.0f\n", ($12 + $13) * 1e6 / t }' "/proc/$1/stat"; }
busy() { # busy and total jiffies of the cores from $1 on
    awk -v lo="$1" '/^cpu[0-9]+ / && substr($1, 4) + 0 >= lo {
        b += $2 + $3 + $4 + $7 + $8; t += $2 + $3 + $4 + $5 + $6 + $7 + $8 } END { print b, t }' /proc/stat
}
# threads PID: "tid name jiffies" of every thread
threads() {
    for t in /proc/"$1"/task/*; do
        awk -v id="${t##*/}" -v n="$(cat "$t/comm" 2>/dev/null)" '{ sub(/^.*\) /, ""); print id, n, $12 + $13 }' "$t/stat"
    done | sort
}
# commits: "commits items seconds" from /metrics (empty without METRICS=1)
commits() {
    [ "${METRICS:-0}" = 1 ] || return 0
    { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
        "http://$maddr/metrics" 2>/dev/null || curl -s "http://$maddr/metrics"; } |
        awk '$1 == "ldpb_commits_total" { c = $2 } $1 == "ldpb_commit_items_total" { i = $2 }
            $1 == "ldpb_commit_seconds_sum" { s = $2 }
            $1 ~ /^ldpb_commit_phase_seconds_total/ { split($1, q, "\""); ph[q[2]] = $2 }
            END { if (c != "") print c, i, s, ph["rows"] + 0, ph["observe"] + 0, ph["commit"] + 0 }'
}
echo "# $ncpu cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $seconds s per run; load average $(cut -d' ' -f1-3 /proc/loadavg)"
n=0
for cfg in ${CFGS:-2_1:0_3 4_2:1_3 8_4:2_3 8_4:2_4}; do
    set -- $(echo "$cfg" | tr _ ' ')
    dc=$1; wr=$2; np=$3; shards=${4:-1}; load=${5:-direct}; w=${wr%%:*}; r=${wr##*:}; n=$((n + 1))
    if [ "$dc" -ge "$ncpu" ]; then echo "$cfg: needs more than $dc cores, skipped"; continue; fi
    # below 32768: Linux hands out 32768..60999 as the source ports of the clients' connections,
    # and a listener's port taken by one of them fails its bind
    url=tcp://127.0.0.1:$((20000 + $$ % 10000 + n))
    mflag=""; maddr=127.0.0.1:$((30000 + $$ % 2000 + n))
    [ "${METRICS:-0}" = 1 ] && mflag="--metrics $maddr"
    taskset -c 0-$((dc - 1)) "$aggregator" --listen "$url" --state-dir "$work/s$n" \
        --key "$work/keys/aggregator.key" --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 \
        --log-level warn --workers "$w" --repliers "$r" --row-shards "$shards" $mflag ${AGGREGATOR_FLAGS:-} 2>"$work/a$n.log" &
    dp=$!
    sleep 1
    if ! kill -0 $dp 2>/dev/null; then
        echo "$cfg: the daemon did not start:"; tail -5 "$work/a$n.log"; continue
    fi
    targets=$url; rpids=""
    case $load in
    relay*)
        k=${load#relay}; targets=""; j=0
        while [ $j -lt "$k" ]; do
            taskset -c "$dc-$((ncpu - 1))" "$ldpb" relay --listen "ipc://$work/r$n.$j.sock" \
                --upstream "$url" --batch 256 --threads "${RELAY_THREADS:-4}" 2>"$work/r$n.$j.log" &
            rpids="$rpids $!"; targets="$targets ipc://$work/r$n.$j.sock"; j=$((j + 1))
        done
        sleep 0.5 ;;
    esac
    count() {
        "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 5000 |
            awk '/^reports / { print $2; exit }'
    }
    m0=$(commits); r0=$(count); c0=$(pcpu $dp); b0=$(busy "$dc"); threads $dp >"$work/t0"; t0=$(date +%s%3N)
    i=0; pids=""
    set -- $targets
    while [ $i -lt "$np" ]; do
        # the i-th loadgen goes to target i mod (number of targets)
        j=$((i % $# + 1)); eval "to=\${$j}"
        # shellcheck disable=SC2086
        taskset -c "$dc-$((ncpu - 1))" "$ldpb" loadgen --connect "$to" \
            --server-key "$work/keys/aggregator.pub" --clients 300 --duration "$seconds" \
            --mode report-and-assign ${LOADGEN_FLAGS:-} >"$work/l$n.$i.txt" 2>&1 &
        pids="$pids $!"; i=$((i + 1))
    done
    for p in $pids; do wait "$p"; done
    t1=$(date +%s%3N); r1=$(count); c1=$(pcpu $dp); b1=$(busy "$dc"); threads $dp >"$work/t1"; m1=$(commits)
    for p in $rpids; do kill -TERM "$p" 2>/dev/null; wait "$p"; done
    kill -TERM $dp; wait $dp
    echo "cores=$dc W:R=$wr S=$shards load=$load loadgens=$np clients=$((np * 300))" | awk -v r=$((r1 - r0)) \
        -v ms=$((t1 - t0)) -v c=$((c1 - c0)) -v b0="$b0" -v b1="$b1" '{ split(b0, x, " ");
        split(b1, y, " "); printf "%s  reports/s %.0f  daemon us/report %.1f  load cores busy %.0f%%\n",
        $0, (r > 0 ? r * 1000 / ms : 0), (r > 0 ? c / r : 0), 100 * (y[1] - x[1]) / (y[2] - x[2]) }'
    printf '  threads, %% of one core:'
    join "$work/t0" "$work/t1" | awk -v ms=$((t1 - t0)) -v hz="$tck" \
        '{ printf " %.1f %s\n", 100 * ($5 - $3) / hz * 1000 / ms, $2 }' | sort -rn | head -12 |
        awk '{ printf " %s %s", $2, $1 }'
    echo
    if [ -n "$m0" ] && [ -n "$m1" ]; then
        echo "$m0 $m1" | awk -v ms=$((t1 - t0)) '{ c = $7 - $1; k = (c > 0 ? 1000 / c : 0)
            printf "  commits/s %.0f  items/commit %.1f  mean commit ms %.2f (rows %.2f, observe %.2f, COMMIT %.2f)  wall time in commits %.0f%%\n",
            c * 1000 / ms, (c > 0 ? ($8 - $2) / c : 0), ($9 - $3) * k, ($10 - $4) * k, ($11 - $5) * k,
            ($12 - $6) * k, 100 * ($9 - $3) * 1000 / ms }'
    fi
    # loadgen's errors, summed by code over the processes
    cat "$work"/l$n.*.txt | awk '/^errors/ { on = 1; next } on && /^  [A-Z]/ && !/first:/ { s[$1] += $2 }
        on && /^$/ { on = 0 } END { for (k in s) printf "%s %d; ", k, s[k] }' >"$work/e$n"
    [ -s "$work/e$n" ] && echo "  loadgen errors: $(cat "$work/e$n")"
done
