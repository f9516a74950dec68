#!/usr/bin/env bash
# /metrics of the real ldpb-aggregator binary (docs/aggregator.md, "Metrics"), scraped over HTTP
# after `ldpb loadgen` has made it work: the standard process_* series, checked against what
# procfs says of the daemon from outside (CPU time between two readings, memory, descriptors, the
# descriptor limit, the start time against the moment the test started it); ldpb_build_info with
# the project's version; a HELP and a TYPE line for every series; and `promtool check metrics`
# (scripts/deps.sh installs it: the test fails without it) passing on the whole scrape.
# Usage: test_metrics.sh PATH/TO/ldpb PATH/TO/ldpb-aggregator PROJECT_VERSION
set -euo pipefail

CMD=loadgen
VERSION=${3:?usage: $(basename "$0") PATH/TO/ldpb PATH/TO/ldpb-aggregator PROJECT_VERSION}
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMTOOL" ]; then
    echo "FAIL: promtool is not installed (Debian package prometheus; scripts/deps.sh installs it)" >&2
    exit 1
fi

MPORT=$(python3 "$SUPPORT/free_port.py")

# scrape FILE: GET /metrics into FILE; prints the Content-Type.
scrape() {
    python3 - "$MPORT" "$1" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10) as r:
    open(sys.argv[2], "wb").write(r.read())
    print(r.headers["Content-Type"])
EOF
}

# val NAME [FILE]: the value of the one sample named NAME (labels included in NAME when any).
val() { awk -v n="$1" '$1 == n { print $2; found++ } END { exit found != 1 }' "${2:-metrics.txt}"; }

# holds EXPR A B C: awk's arithmetic on a, b, c (and hz, the clock ticks per second).
holds() { awk -v a="$2" -v b="${3:-0}" -v c="${4:-0}" -v hz="$hz" "BEGIN { exit !($1) }"; }

# The daemon's utime+stime in seconds, as procfs counts it (fields 14 and 15 of proc(5)'s stat,
# counted after the command name, which may hold spaces).
hz=$(getconf CLK_TCK)
proc_cpu() { sed 's/.*) //' "/proc/$PID/stat" | awk -v hz="$hz" '{ printf "%.6f\n", ($12 + $13) / hz }'; }

# promtool itself must catch a lint problem, or its passing below says nothing: the unit of the
# counter this endpoint had before (microseconds) is one it flags.
printf '# HELP x_microseconds_total t\n# TYPE x_microseconds_total counter\nx_microseconds_total 1\n' >bad.txt
set +e
"$PROMTOOL" check metrics <bad.txt >promtool_bad.out 2>&1
bad_rc=$?
set -e
check "promtool flags a microseconds counter (exit $bad_rc)" test "$bad_rc" != 0
check "promtool names the base unit ($(cat promtool_bad.out))" grep -q 'base unit "seconds"' promtool_bad.out

launch=$(date +%s.%N)
"$AGG" --listen "$IPC" --state-dir "$TMP/state" --key keys/aggregator.key --arms 3 \
    --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
    --metrics "127.0.0.1:$MPORT" 2>daemon.log &
PID=$!
ready=0
for _ in $(seq 1 100); do
    if "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 &&
        scrape metrics.txt >/dev/null 2>&1; then
        ready=1
        break
    fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "FAIL: the daemon did not come up with /metrics on 127.0.0.1:$MPORT; its log:" >&2
    cat daemon.log >&2
    exit 1
fi

run --connect "$IPC" --server-key "$PUB" --clients 4 --reports 300 --means 0.9,0.5,0.2 --seed metrics
check "loadgen: exit 0 (got $rc: $(cat err))" test "$rc" = 0

cpu_before=$(proc_cpu)
ctype=$(scrape metrics.txt)
cpu_after=$(proc_cpu)
statm_resident=$(awk '{ print $2 }' "/proc/$PID/statm")
fds_now=$(find "/proc/$PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
limit=$(awk '/^Max open files/ { print $4 }' "/proc/$PID/limits")
now=$(date +%s.%N)

check "Content-Type is the text format 0.0.4 (got $ctype)" test "$ctype" = 'text/plain; version=0.0.4'

# --- the whole scrape passes promtool, and every series has HELP and TYPE ---------------------
set +e
"$PROMTOOL" check metrics <metrics.txt >promtool.out 2>&1
prc=$?
set -e
check "promtool check metrics: exit 0 (got $prc: $(cat promtool.out))" test "$prc" = 0
check "promtool check metrics: no complaint" test ! -s promtool.out
check "every sample's family has a HELP and a TYPE line" awk '
    /^# HELP / { help[$3] = 1; next }
    /^# TYPE / { type[$3] = $4; next }
    /^#/ { next }
    {
        name = $1; sub(/\{.*/, "", name); fam = name
        if (!(fam in type)) sub(/_(bucket|sum|count)$/, "", fam)
        if (!(fam in help) || !(fam in type)) { print "no HELP/TYPE for " name; bad = 1 }
    }
    END { exit bad }' metrics.txt
check "the microseconds counter is gone" sh -c '! grep -q ldpb_commit_microseconds metrics.txt'
for s in process_cpu_seconds_total:counter process_resident_memory_bytes:gauge \
    process_virtual_memory_bytes:gauge process_open_fds:gauge process_max_fds:gauge \
    process_start_time_seconds:gauge ldpb_build_info:gauge; do
    check "TYPE ${s%%:*} ${s##*:}" grep -qx "# TYPE ${s%%:*} ${s##*:}" metrics.txt
done

# --- the process series say what procfs says of the daemon ------------------------------------
cpu=$(val process_cpu_seconds_total) || cpu=-1
check "cpu seconds > 0 after the load (got $cpu)" holds 'a > 0' "$cpu"
# procfs rounds each of utime and stime down to a clock tick; getrusage to a microsecond.
check "cpu seconds $cpu within procfs' $cpu_before .. $cpu_after" \
    holds 'b - 0.000001 <= a && a <= c + 2 / hz' "$cpu" "$cpu_before" "$cpu_after"

rss=$(val process_resident_memory_bytes) || rss=-1
vsz=$(val process_virtual_memory_bytes) || vsz=-1
page=$(getconf PAGESIZE)
check "resident bytes > 1 MiB (got $rss)" holds 'a > 1048576' "$rss"
check "resident bytes $rss within 2x of statm's $statm_resident pages" \
    holds 'a >= b * c / 2 && a <= b * c * 2' "$rss" "$statm_resident" "$page"
check "virtual bytes $vsz >= resident bytes $rss" holds 'a >= b' "$vsz" "$rss"

fds=$(val process_open_fds) || fds=-1
check "open fds > 3 (got $fds)" holds 'a > 3' "$fds"
# The scrape's own connection is open while it is counted, and closed when procfs is read.
check "open fds $fds within 3 of the $fds_now in /proc/PID/fd" holds 'a - b <= 3 && b - a <= 3' "$fds" "$fds_now"
maxfds=$(val process_max_fds) || maxfds=-1
check "max fds is the soft RLIMIT_NOFILE $limit (got $maxfds)" test "$maxfds" = "$limit"

start=$(val process_start_time_seconds) || start=-1
# btime is whole seconds, so the start may read up to a second early; 30 s of slack more for the
# boot time drifting against the wall clock.
check "start time $start between the launch $launch (less 30 s) and now $now" \
    holds 'a >= b - 30 && a <= c' "$start" "$launch" "$now"
check "start time within the last hour" holds 'a > c - 3600' "$start" 0 "$now"

# --- ldpb_build_info --------------------------------------------------------------------------
check "one ldpb_build_info sample" test "$(grep -c '^ldpb_build_info{' metrics.txt)" = 1
check "ldpb_build_info is 1" grep -qE '^ldpb_build_info\{.*\} 1$' metrics.txt
check "ldpb_build_info version is $VERSION ($(grep '^ldpb_build_info' metrics.txt))" \
    grep -qE "^ldpb_build_info\\{version=\"${VERSION//./\\.}\"[,}]" metrics.txt
check "the daemon's --version says $VERSION too" test "$("$AGG" --version)" = "ldpb-aggregator $VERSION"

# --- CPU time grows with work -----------------------------------------------------------------
run --connect "$IPC" --server-key "$PUB" --clients 4 --reports 300 --means 0.9,0.5,0.2 --seed metrics2
check "second loadgen: exit 0 (got $rc: $(cat err))" test "$rc" = 0
scrape metrics2.txt >/dev/null
cpu2=$(val process_cpu_seconds_total metrics2.txt) || cpu2=-1
check "cpu seconds grew with 300 more reports ($cpu -> $cpu2)" holds 'b > a' "$cpu" "$cpu2"
check "the second scrape passes promtool too" "$PROMTOOL" check metrics <metrics2.txt

stop_daemon
finish
