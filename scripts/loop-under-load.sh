#!/usr/bin/env bash
# Runs one test command again and again while every core is kept busy, and counts how often it
# fails: a test that fails 1 run in 50 under load fails the suite (scripts/test.sh) now and then,
# so a test is not done until it passes such a loop.
#
#   scripts/loop-under-load.sh [-n RUNS] [-b BUSY] [-o DIR] -- COMMAND [ARG...]
#
#   -n RUNS  how many runs (default 20)
#   -b BUSY  busy loops beside the test (default: the number of cores; 0 for none)
#   -o DIR   where the output of each failed run is kept (default: a new /tmp/ldpb-loop.XXXXXX)
#   -s NAME  starve the processes named NAME (pkill -x) that the run starts (its own session, so
#            nobody else's): stopped 200 ms of every 250 (SIGSTOP, SIGCONT), they run about 5 times
#            slower than the rest, as on a machine far busier than busy loops make it; e.g.
#            -s ldpb-aggregator for the daemons a test starts
#
# COMMAND runs in the current directory; e.g. from a build directory:
#   scripts/loop-under-load.sh -n 50 -- ctest --test-dir build/test -R '^test_transport$'
# or one test binary with its environment (LDPB_TEST_FILTER selects cases where a test reads it).
# The last line is "PASSED p of n runs"; the exit status is 0 only when every run passed.
set -euo pipefail

runs=20
busy=$(nproc)
out=""
starve=""
while [ $# -gt 0 ]; do
  case "$1" in
  -n) runs=$2; shift 2 ;;
  -b) busy=$2; shift 2 ;;
  -o) out=$2; shift 2 ;;
  -s) starve=$2; shift 2 ;;
  --) shift; break ;;
  *) echo "loop-under-load.sh: unknown option '$1' (see the header)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "loop-under-load.sh: no COMMAND after --" >&2; exit 2; }
[[ "$runs" =~ ^[0-9]+$ && "$busy" =~ ^[0-9]+$ ]] || { echo "loop-under-load.sh: -n and -b take counts" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/ldpb-loop.XXXXXX)
mkdir -p "$out"

pids=()
stop_busy() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_busy EXIT
for ((i = 0; i < busy; i++)); do
  (while :; do :; done) &
  pids+=("$!")
done

# starver SID: stops and continues the processes named $starve in session SID, until killed.
starver() {
  trap 'pkill -CONT -s "$1" -x "$starve" 2>/dev/null; exit 0' TERM
  while :; do
    pkill -STOP -s "$1" -x "$starve" 2>/dev/null || true
    sleep 0.2
    pkill -CONT -s "$1" -x "$starve" 2>/dev/null || true
    sleep 0.05
  done
}

passed=0
for ((i = 1; i <= runs; i++)); do
  start=$(date +%s%N)
  # a session of its own (setsid: this background child is no group leader, so it runs in place
  # and the session's id is its pid) for -s to find the processes the run starts
  setsid "$@" >"$out/run-$i.log" 2>&1 &
  cmd=$!
  spid=""
  if [ -n "$starve" ]; then
    starver "$cmd" &
    spid=$!
  fi
  set +e
  wait "$cmd"
  rc=$?
  set -e
  if [ -n "$spid" ]; then
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
  fi
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    rm -f "$out/run-$i.log"
    st=pass
  else
    st="FAIL (exit $rc, output kept in $out/run-$i.log)"
  fi
  printf 'run %d/%d: %s, %d ms\n' "$i" "$runs" "$st" $((($(date +%s%N) - start) / 1000000))
done
echo "PASSED $passed of $runs runs (busy loops: $busy${starve:+, $starve starved})"
[ "$passed" -eq "$runs" ]
