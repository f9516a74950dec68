#!/usr/bin/env bash
# dp-se without a horizon in the real ldpb-aggregator (docs/derivations.md 10.1):
# --policy dp-se with --horizon 0 (the default) starts in central mode, serves reports from real
# clients (ldpb loadgen) end to end, restores its doubling schedule after a restart, and keeps
# counting; a beta outside (0, 1) is still refused with exit 2.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

start_dpse() {
    "$AGG" --listen "$IPC" --state-dir "$TMP/state" --key keys/aggregator.key --arms 3 \
        --mode central --policy dp-se --epsilon 1 --horizon 0 --log-level warn 2>>daemon.log &
    PID=$!
    local ready=0
    for _ in $(seq 1 100); do
        if "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1; then
            ready=1
            break
        fi
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ "$ready" != 1 ]; then
        echo "FAIL: the dp-se daemon with horizon 0 did not come up; its log:" >&2
        cat daemon.log >&2
        exit 1
    fi
}

pulls() { # the sum of the arms' pulls in `ldpb status --json`
    "$LDPB" status --connect "$IPC" --server-key "$PUB" --json |
        python3 -c 'import json, sys; print(sum(a["pulls"] for a in json.load(sys.stdin)["arms"]))'
}

set +e
"$AGG" --check-config --listen "$IPC" --key keys/aggregator.key --arms 3 --state-dir "$TMP/x" \
    --mode central --policy dp-se --epsilon 1 --horizon 0 --beta 1.5 </dev/null >out 2>err
rc=$?
set -e
check "dp-se horizon 0 beta 1.5: exit 2 (got $rc)" test "$rc" = 2
check "dp-se horizon 0 beta 1.5: says why (got: $(cat err))" grep -q "beta" err

start_dpse
"$LDPB" status --connect "$IPC" --server-key "$PUB" >status.txt
check "status names dp-se (got: $(head -3 status.txt))" grep -q 'policy  *dp-se (model central)' status.txt
run --connect "$IPC" --server-key "$PUB" --clients 4 --reports 300 --means 0.9,0.5,0.1 \
    --timeout-ms 5000
check "loadgen: 300 reports acked (rc $rc: $(cat err))" test "$rc" = 0
check "300 pulls counted (got $(pulls))" test "$(pulls)" = 300
stop_daemon

# After a restart the saved phase continues: 300 + 200 observations cross the phase end at 510.
start_dpse
check "pulls kept across the restart (got $(pulls))" test "$(pulls)" = 300
run --connect "$IPC" --server-key "$PUB" --clients 4 --reports 300 --means 0.9,0.5,0.1 \
    --timeout-ms 5000
check "loadgen after restart: acked (rc $rc: $(cat err))" test "$rc" = 0
check "600 pulls counted (got $(pulls))" test "$(pulls)" = 600
stop_daemon

finish
