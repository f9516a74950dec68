#!/bin/sh
# Where the daemon's CPU per relayed report goes (docs/aggregator.md, "Where the CPU goes",
# "Through a relay"): a fresh ldpb-aggregator (ldp-ts-b, 5 arms, durable acks) with /metrics on,
# two `ldpb relay`s in front of it and a `ldpb loadgen` of 128 clients behind each, for SECONDS.
# Prints, over the reports the daemon counted: the daemon's and the relays' CPU per report
# (utime + stime, /proc/PID/stat), each daemon thread's CPU (/proc/PID/task/TID/stat: the
# workers are "ldpb-aggregator", the committer "ldpb-commit"), frames per relay batch, reports and
# items per commit (ldpb_requests_total, ldpb_relay_batches_total, ldpb_commits_total,
# ldpb_commit_items_total), and with PERF=1 the system calls and context switches per report
# (perf stat for 2 s in the middle of the run, over the reports counted meanwhile).
#
# Usage: BUILD_DIR=build/rel bench/run_relay_profile.sh [SECONDS]      (default 5)
#   RELAY_FLAGS  the relays' flags (default "--batch 256 --threads 2", as run_service_bench.sh)
#   LOADGEN_FLAGS more loadgen flags (e.g. "--mode report-and-assign"; default: two round trips)
#   AGGREGATOR_FLAGS more daemon flags;  PERF=1: perf stat as above (needs perf)
set -eu
b=${BUILD_DIR:-build/rel}
sec=${1:-5}
relay_flags=${RELAY_FLAGS:-"--batch 256 --threads 2"}
w=$(mktemp -d)
dp=
rps=
cleanup() {
    for p in $rps $dp; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$w"
}
trap cleanup EXIT
"$b/tools/ldpb" keygen --out "$w/keys" >/dev/null
port=$((20000 + $$ % 10000)) # below the source ports Linux gives clients (32768..); mport=$((port + 1))
url=tcp://127.0.0.1:$port
# shellcheck disable=SC2086 # flags are several words on purpose
"$b/aggregator/daemon/ldpb-aggregator" --listen "$url" --state-dir "$w/state" \
    --key "$w/keys/aggregator.key" --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 \
    --log-level warn --metrics "127.0.0.1:$mport" ${AGGREGATOR_FLAGS:-} 2>"$w/agg.log" &
dp=$!
i=0
until "$b/tools/ldpb" status --connect "$url" --server-key "$w/keys/aggregator.pub" \
    --timeout-ms 200 >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && { cat "$w/agg.log" >&2; exit 1; }
    sleep 0.1
done
for i in 0 1; do
    # shellcheck disable=SC2086
    "$b/tools/ldpb" relay --listen "ipc://$w/r$i.sock" --upstream "$url" \
        $relay_flags 2>"$w/relay$i.log" &
    rps="$rps $!"
done
sleep 0.5
for p in $rps; do kill -0 "$p" 2>/dev/null || { cat "$w"/relay*.log >&2; exit 1; }; done
tck=$(getconf CLK_TCK)
met() {
    curl -s "http://127.0.0.1:$mport/metrics" | awk '/^ldpb_(requests_total|reports_total|commits_total|commit_items_total|relay_batches_total) / { printf "%s=%s ", $1, $2 } END { print "" }'
}
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$1"; }
threads() { for t in /proc/"$dp"/task/*; do printf '%s:%s ' "$(cat "$t/comm")" "$(ticks "$t/stat")"; done; echo; }
relays() { s=0; for p in $rps; do s=$((s + $(ticks "/proc/$p/stat"))); done; echo $s; }
m0=$(met); t0=$(threads); c0=$(ticks "/proc/$dp/stat"); q0=$(relays)
lps=
for i in 0 1; do
    # shellcheck disable=SC2086
    "$b/tools/ldpb" loadgen --connect "ipc://$w/r$i.sock" --server-key "$w/keys/aggregator.pub" \
        --clients 128 --duration "$sec" ${LOADGEN_FLAGS:-} >"$w/lg$i.txt" 2>&1 &
    lps="$lps $!"
done
pm0=''
pm1=''
if [ "${PERF:-0}" = 1 ]; then
    sleep 1
    pm0=$(met)
    perf stat -e raw_syscalls:sys_enter,context-switches -p "$dp" -- sleep 2 2>"$w/perf.txt" || true
    pm1=$(met)
fi
for p in $lps; do wait "$p" || true; done
m1=$(met); t1=$(threads); c1=$(ticks "/proc/$dp/stat"); q1=$(relays)
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg); $sec s"
echo "# threads (CPU ticks of $tck/s) before: $t0"
echo "# threads after:  $t1"
python3 - "$m0" "$m1" "$((c1 - c0))" "$((q1 - q0))" "$tck" "$t0" "$t1" "$pm0" "$pm1" "$w/perf.txt" <<'PY'
import os, sys
def kv(s): return {k: float(v) for k, v in (x.split('=') for x in s.split())}
m0, m1 = kv(sys.argv[1]), kv(sys.argv[2])
d = {k: m1[k] - m0[k] for k in m0}
us = 1e6 / float(sys.argv[5])
r = d['ldpb_reports_total'] or 1
print("reports %d, daemon %.1f us/report, relays %.1f us/report" % (r, int(sys.argv[3]) * us / r, int(sys.argv[4]) * us / r))
def th(s): return [(x.rsplit(':', 1)[0], int(x.rsplit(':', 1)[1])) for x in s.split()]
for (n0, a), (n1, b) in zip(th(sys.argv[6]), th(sys.argv[7])):
    if b - a: print("  thread %-16s %.1f us/report" % (n1, (b - a) * us / r))
print("frames per relay batch %.1f, reports per commit %.1f, items per commit %.1f" % (
    d['ldpb_requests_total'] / max(1, d['ldpb_relay_batches_total']),
    r / max(1, d['ldpb_commits_total']), d['ldpb_commit_items_total'] / max(1, d['ldpb_commits_total'])))
if sys.argv[8] and os.path.exists(sys.argv[10]):
    pr = kv(sys.argv[9])['ldpb_reports_total'] - kv(sys.argv[8])['ldpb_reports_total']
    for line in open(sys.argv[10]):
        f = line.split()
        if len(f) >= 2 and f[1] in ('raw_syscalls:sys_enter', 'context-switches'):
            print("%s per report %.2f (%s over %d reports)" % (f[1], float(f[0].replace(',', '')) / max(1, pr), f[0], pr))
PY
grep -h "^throughput\|^errors" "$w"/lg*.txt
