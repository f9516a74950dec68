#!/usr/bin/env bash
# The policy parameters at the real ldpb-aggregator's start (docs/aggregator.md, "Policy
# parameters" and "State"): a state saved by a 3-arm ldp-ts-b daemon after a few reports starts
# again under values of parameters ldp-ts-b does not read (kappa with a linear mechanism, beta,
# gamma, eps_arm, horizon); another epsilon or mechanism is a configuration error, exit 2, whose
# message does not call the state corrupt and which leaves the meta rows as they were; dp-ucb
# with eps_arm above epsilon is refused with exit 2 before any state is created; --help says
# which policies read gamma and eps_arm.
set -euo pipefail

CMD=loadgen
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

# agg ARGS...: ldpb-aggregator --check-config on the fixture's state; sets rc, out, err.
agg() {
    set +e
    "$AGG" --check-config --listen "$IPC" --key keys/aggregator.key --arms 3 "$@" \
        </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

meta() {
    python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(sorted(db.execute("SELECT key, value FROM meta")))' "$TMP/state/aggregator.db"
}

# --- --help -----------------------------------------------------------------------------------
"$AGG" --help >help.txt
line=$(grep -A2 -- "--eps-arm " help.txt | tr '\n' ' ')
check "--help: --eps-arm is read by dp-ucb alone (got: $line)" \
    sh -c "echo '$line' | grep -q 'read by: dp-ucb)'"
line=$(grep -A2 -- "--gamma " help.txt | tr '\n' ' ')
check "--help: --gamma is read by dp-ucb and the EXP3 family (got: $line)" \
    sh -c "echo '$line' | grep -q 'read by: dp-ucb, exp3,'"


# --- a state with reports -------------------------------------------------------------------
start_daemon
run --connect "$IPC" --server-key "$PUB" --timeout-ms 2000 --reports 5
check "loadgen sent its reports (rc $rc: $(cat err))" test "$rc" = 0
stop_daemon
before=$(meta)

L=(--state-dir "$TMP/state" --policy ldp-ts-b --mechanism linear)
agg "${L[@]}" --epsilon 1 --kappa 0.2
check "kappa with a linear mechanism: starts (rc $rc: $(cat err))" test "$rc" = 0
agg "${L[@]}" --epsilon 1 --kappa 0.2 --beta 0.01 --gamma 0.5 --eps-arm 0.25 --horizon 1000
check "ignored parameters: starts (rc $rc: $(cat err))" test "$rc" = 0
check "ignored parameters: meta unchanged" test "$(meta)" = "$before"

agg "${L[@]}" --epsilon 0.5
check "another epsilon: exit 2 (got $rc)" test "$rc" = 2
check "another epsilon: names it (got: $(cat err))" grep -q "epsilon is '1' there but '0.5' now" err
check "another epsilon: not called corrupt" sh -c "! grep -qi corrupt '$TMP/err'"
check "another epsilon: meta unchanged" test "$(meta)" = "$before"

agg --state-dir "$TMP/state" --policy ldp-ts-b --mechanism exponential
check "another mechanism: exit 2 (got $rc)" test "$rc" = 2
check "another mechanism: not called corrupt" sh -c "! grep -qi corrupt '$TMP/err'"
check "another mechanism: meta unchanged" test "$(meta)" = "$before"

# --- eps_arm above epsilon ------------------------------------------------------------------
agg --state-dir "$TMP/central" --mode central --policy dp-ucb --horizon 1000 --epsilon 0.5 \
    --eps-arm 1
check "dp-ucb eps_arm > epsilon: exit 2 (got $rc)" test "$rc" = 2
check "dp-ucb eps_arm > epsilon: says so (got: $(cat err))" \
    grep -q "eps_arm 1 is above epsilon 0.5" err
check "dp-ucb eps_arm > epsilon: no state created" test ! -e "$TMP/central"
agg --state-dir "$TMP/central" --mode central --policy dp-ucb --horizon 1000 --epsilon 0.5 \
    --eps-arm 0.5
check "dp-ucb eps_arm = epsilon: accepted (rc $rc: $(cat err))" test "$rc" = 0

finish
