#!/usr/bin/env bash
# The local contextual mode in the real ldpb-aggregator (docs/aggregator.md, "Contextual
# policies"): an ldp-linucb-gaussian daemon (d 10, 20 arms, epsilon 1 and delta 1e-6 per report)
# serves `ldpb loadgen --contextual 10`, whose simulated devices fetch the model, choose among their
# 20 rows and report privatized statistics; `ldpb status` shows the local model and the count; the
# daemon's --help lists reward_bound and the policy.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

"$AGG" --help >help.txt
check "--help lists --reward-bound" grep -q -- "--reward-bound " help.txt
check "--help names ldp-linucb-gaussian" grep -q "ldp-linucb-gaussian" help.txt

"$AGG" --listen "$IPC" --state-dir "$TMP/state" --key keys/aggregator.key --arms 20 \
    --mode local --policy ldp-linucb-gaussian --d 10 --epsilon 1 --delta 1e-6 --horizon 100000 \
    --log-level warn 2>daemon.log &
PID=$!
for _ in $(seq 1 100); do
    "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
run --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 --reports 200 --clients 2 \
    --contextual 10 --seed c
check "loadgen --contextual 10 (local): exit 0 (rc $rc: $(cat err))" test "$rc" = 0
check "loadgen prints the contextual regret ($(cat out))" \
    grep -Eq "^regret +[0-9.]+ against each round's best arm over 200 acked" out
check "loadgen: no errors" grep -Eq "^errors +0" out
set +e
"$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 >status.txt 2>&1
src=$?
set -e
check "status answers (rc $src: $(cat status.txt))" test "$src" = 0
check "status names the policy" grep -q "ldp-linucb-gaussian" status.txt
check "status says local ($(cat status.txt))" grep -q "local" status.txt
check "status counts the 200 reports ($(cat status.txt))" grep -Eq "reports[^0-9]*200\b" status.txt
stop_daemon
finish
