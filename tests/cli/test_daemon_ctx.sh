#!/usr/bin/env bash
# The contextual policies in the real ldpb-aggregator (docs/aggregator.md, "Contextual
# policies"): a jdp-linucb-gaussian daemon (d 10, 20 arms, the sizes of the service bench) serves
# `ldpb loadgen --contextual 10`, whose clients send a feature set per round and the assigned
# arm's features with each report, and answers `ldpb status`; loadgen refuses --contextual with
# --means and a d whose feature set does not fit a request; the daemon's --help lists the options.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

"$AGG" --help >help.txt
for opt in --d --delta --alpha --feature-norm --theta-norm --noise-sigma --rho; do
    check "--help lists $opt" grep -q -- "$opt " help.txt
done

"$AGG" --listen "$IPC" --state-dir "$TMP/state" --key keys/aggregator.key --arms 20 \
    --mode central --policy jdp-linucb-gaussian --d 10 --epsilon 1 --horizon 100000 \
    --log-level warn 2>daemon.log &
PID=$!
for _ in $(seq 1 100); do
    "$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 200 >/dev/null 2>&1 && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
run --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 --reports 200 --clients 2 \
    --contextual 10 --seed c
check "loadgen --contextual 10: exit 0 (rc $rc: $(cat err))" test "$rc" = 0
check "loadgen prints the contextual regret ($(cat out))" \
    grep -Eq "^regret +[0-9.]+ against each round's best arm over 200 acked" out
check "loadgen names the environment" grep -q "environment     contextual: d 10" out
run --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 --reports 5 --contextual 13
check "--contextual 13 x 20 arms: exit 2 (rc $rc)" test "$rc" = 2
check "--contextual 13 x 20 arms: says why ($(cat err))" grep -q "more than the 256" err
set +e
"$LDPB" status --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 >status.txt 2>&1
src=$?
set -e
check "status answers (rc $src: $(cat status.txt))" test "$src" = 0
check "status names the policy" grep -q "jdp-linucb-gaussian" status.txt
check "status counts the 200 reports ($(cat status.txt))" grep -Eq "reports[^0-9]*200\b" status.txt
stop_daemon

usage_case "no --means or --laws" --connect "$IPC" --server-key "$PUB" --contextual 3 \
    --means 0.5,0.4
finish
