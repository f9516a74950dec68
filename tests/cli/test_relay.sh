#!/usr/bin/env bash
# Contract tests for `ldpb relay` (docs/cli.md) against the real ldpb-aggregator binary: help and
# usage errors (exit 2, one line, nothing on stdout), a URL that cannot be bound (exit 1), and
# `ldpb loadgen` through a relay on ipc:// and tcp:// (the relay dialing upstream with the native
# dialer, loadgen with nanomsg on ipc:// and the native dialer on tcp://; every round acked, the daemon's count
# equal to the acked reports, the relay's own count of batches below its frames), then SIGTERM
# (exit 0). Whatever happens, the daemon and the relay are killed on exit.
set -euo pipefail

CMD=relay
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

RPID=
FPID=
trap 'for p in $RPID $FPID; do kill -KILL "$p" 2>/dev/null || true; done; cleanup' EXIT
# SIGTERM to the relay in RPID; its exit status in rrc
stop_relay() {
    kill -TERM "$RPID"
    set +e
    wait "$RPID"
    rrc=$?
    set -e
    RPID=
}

run --help
check "--help exits 0 (got $rc)" test "$rc" = 0
check "--help writes nothing on stderr" test ! -s err
for opt in listen upstream batch wait-us threads timeout-ms upstream-transport verbose help; do
    check "--help documents --$opt" grep -q -- "--$opt\\b" out
done
check "ldpb --help lists relay" sh -c "'$LDPB' --help | grep -q '^  relay '"

usage_case '--listen and --upstream are required' --listen "$IPC"
usage_case '--listen and --upstream are required' --upstream "$IPC"
usage_case "unknown option '--frob'" --listen "$IPC" --upstream "$IPC" --frob 1
usage_case '--batch needs an integer in 1..256' --listen "$IPC" --upstream "$IPC" --batch 0
usage_case '--batch needs an integer in 1..256' --listen "$IPC" --upstream "$IPC" --batch 257
usage_case '--threads needs an integer in 1..64' --listen "$IPC" --upstream "$IPC" --threads x
usage_case '--wait-us needs an integer in 0..1000000' --listen "$IPC" --upstream "$IPC" \
    --wait-us -1
usage_case '--timeout-ms needs an integer in 1..600000' --listen "$IPC" --upstream "$IPC" \
    --timeout-ms 0
usage_case '--upstream-transport needs nanomsg or sp' --listen "$IPC" --upstream "$IPC" \
    --upstream-transport pigeon

run --listen "tcp://256.0.0.1:1" --upstream "$IPC"
check "an unbindable --listen exits 1 (got $rc)" test "$rc" = 1
check "... and says so" grep -q 'cannot bind' err

start_daemon
RPORT=$(python3 "$SUPPORT/free_port.py")
RIPC="ipc://$TMP/relay.sock"
RTCP="tcp://127.0.0.1:$RPORT"
# the relay dials the daemon with the native dialer; its devices (loadgen) with nanomsg's on ipc://
# and the native one on tcp://
"$LDPB" relay --listen "$RIPC" --listen "$RTCP" --upstream "$IPC" --batch 32 \
    --upstream-transport sp 2>relay.log &
RPID=$!
for url in "$RIPC" "$RTCP"; do
    before=$("$LDPB" status --connect "$IPC" --server-key "$PUB" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["reports"])')
    run_loadgen() {
        set +e
        local tp=nanomsg
        [ "$url" = "$RIPC" ] || tp=sp
        "$LDPB" loadgen --connect "$url" --server-key "$PUB" --clients 8 --reports 400 \
            --timeout-ms 5000 --transport "$tp" >out 2>err
        rc=$?
        set -e
    }
    for _ in $(seq 1 50); do # the relay binds in the background
        "$LDPB" status --connect "$url" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 &&
            break
        sleep 0.1
    done
    run_loadgen
    check "loadgen through $url exits 0 (got $rc: $(cat err))" test "$rc" = 0
    check "loadgen through $url: 400 acked" grep -q '^reports acked \+400$' out
    after=$("$LDPB" status --connect "$IPC" --server-key "$PUB" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["reports"])')
    check "the daemon counted 400 more through $url (got $((after - before)))" \
        test "$((after - before))" = 400
done
stop_relay
check "relay exit status after SIGTERM is 0 (got $rrc)" test "$rrc" = 0
line=$(grep 'stopped:' relay.log || true)
batches=$(echo "$line" | sed -n 's/.*stopped: \([0-9]*\) batches, \([0-9]*\) frames.*/\1/p')
frames=$(echo "$line" | sed -n 's/.*stopped: \([0-9]*\) batches, \([0-9]*\) frames.*/\2/p')
check "the relay forwarded every assign and report ($frames frames)" test "${frames:-0}" -ge 1600
check "in fewer batches than frames ($batches)" test "${batches:-0}" -lt "${frames:-0}"
stop_daemon

# An upstream whose reply announces 2^40 bytes (tests/support/fake_upstream.py): the relay refuses
# the reply, answers its device "busy, resend" and keeps running, with either dialer. Before the
# relay set a limit on its upstream dialers, nanomsg tried to allocate that much and aborted.
python3 "$SUPPORT/fake_upstream.py" 1099511627776 >fake.port &
FPID=$!
for _ in $(seq 1 50); do
    [ -s fake.port ] && break
    sleep 0.1
done
FURL="tcp://127.0.0.1:$(cat fake.port)"
for tp in nanomsg sp; do
    EURL="ipc://$TMP/evil-$tp.sock"
    "$LDPB" relay --listen "$EURL" --upstream "$FURL" --timeout-ms 1000 --upstream-transport "$tp" \
        2>"evil-$tp.log" &
    RPID=$!
    set +e
    for _ in $(seq 1 50); do # the relay binds in the background
        [ -S "${EURL#ipc://}" ] && break
        sleep 0.1
    done
    "$LDPB" status --connect "$EURL" --server-key "$PUB" --timeout-ms 3000 >out 2>err
    rc=$?
    set -e
    check "a device behind a relay whose upstream announces 2^40 bytes gets an error ($tp, got $rc)" \
        test "$rc" != 0
    check "the relay is still running after that reply ($tp: $(tail -2 "evil-$tp.log"))" \
        kill -0 "$RPID"
    stop_relay
    check "and stops on SIGTERM with exit 0 ($tp, got $rrc)" test "$rrc" = 0
done
kill -TERM "$FPID"
wait "$FPID" 2>/dev/null || true
FPID=
finish
