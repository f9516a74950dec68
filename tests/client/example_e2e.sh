#!/usr/bin/env bash
# examples/client_example.c against the real ldpb-aggregator over tcp://127.0.0.1: three runs on
# one ledger file (one assignment and one report each, the spend growing by 1 per run), the
# aggregator's status counting the three reports, and a SIGTERM stop with exit 0. In a cross
# build the example runs under qemu-user while the daemon and ldpb are the host's (x86-64)
# programs: the ARM client library against the x86-64 aggregator (scripts/test-arm.sh).
#
#   example_e2e.sh AGGREGATOR LDPB WORK EXAMPLE_COMMAND...
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 AGGREGATOR LDPB WORK EXAMPLE_COMMAND..." >&2; exit 2; }
aggregator=$1 ldpb=$2 work=$3
shift 3

fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/aggregator.log" ] && { echo "-- aggregator log:" >&2; tail -20 "$work/aggregator.log" >&2; }
  exit 1
}
daemon_pid=""
cleanup() { [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null || true; }
trap cleanup EXIT

rm -rf "$work"
mkdir -p "$work"
# outside the ephemeral range (tests/support/free_port.py says why)
port=$(python3 "$(cd "$(dirname "$0")/../support" && pwd)/free_port.py")
url="tcp://127.0.0.1:$port"
"$ldpb" keygen --out "$work/keys" >/dev/null
"$aggregator" --listen "$url" --state-dir "$work/state" --key "$work/keys/aggregator.key" \
  --arms 3 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
  2>"$work/aggregator.log" &
daemon_pid=$!
status() {
  "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 500
}
for _ in $(seq 1 100); do
  status >/dev/null 2>&1 && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "ldpb-aggregator exited at start"
  sleep 0.1
done
status >/dev/null 2>&1 || fail "ldpb-aggregator did not answer"

for run in 1 2 3; do
  out=$("$@" "$url" "$work/keys/aggregator.pub" "$work/device.ledger") \
    || fail "run $run of the example exited $?: $out"
  echo "$out" | grep -Eq '^assigned arm [0-2] \(mechanism linear, epsilon 1, propensity [0-9.e-]+\)$' \
    || fail "run $run: no assignment line in: $out"
  spent=$(printf 'reported; privacy spent %.6f' "$run")
  echo "$out" | grep -q "^$spent" || fail "run $run: no '$spent' in: $out"
done

st=$(status) || fail "ldpb status after the runs"
echo "$st" | grep -Eq '^reports +3 counted$' || fail "the aggregator does not count 3 reports: $st"

kill -TERM "$daemon_pid"
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=""
[ "$rc" -eq 0 ] || fail "ldpb-aggregator exited $rc after SIGTERM"
rm -rf "$work"
echo "example_e2e: 3 reports through the real aggregator, spend 3.000000 on the device"
