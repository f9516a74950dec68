#!/usr/bin/env bash
# Contract tests for `ldpb experiment`, `ldpb status --experiment` and `ldpb loadgen
# --experiments` (docs/cli.md) against the real ldpb-aggregator binary serving several
# experiments: help and usage errors (exit 2, one line on stderr, nothing on stdout); a daemon with
# an admin list, experiment `default` (top-level keys) and x0 (a section): list, show, create x1
# at run time, a non-admin key refused (LDPB_EAUTH, nothing changed), bad settings refused with
# the aggregator's reason, loadgen spread over x0 and x1 with per-experiment counts that match
# each experiment's status, stop (LDPB_ENOEXPERIMENT after), resume with the same settings,
# other settings refused, JSON, and the runtime experiment kept across a restart.
set -euo pipefail

CMD=experiment
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"

ADMIN=keys/client.key
OPTS=(--connect "$IPC" --server-key "$PUB" --key "$ADMIN")
SETTINGS=(--set policy=ldp-ts-b --set mode=local --set arms=3 --set mechanism=linear --set epsilon=1)

# --- help and usage errors (no daemon needed) ----------------------------------------------
run --help
check "--help exits 0 (got $rc)" test "$rc" = 0
check "--help writes nothing on stderr" test ! -s err
for word in create list show stop --connect --server-key --key --set --file --json --timeout-ms; do
    check "--help documents $word" grep -q -- "$word\\b" out
done
run list --help
check "list --help exits 0" test "$rc" = 0
check "ldpb --help lists experiment" sh -c "'$LDPB' --help | grep -q '^  experiment '"

usage_case 'missing the operation'
usage_case "unknown operation (create, list, show or stop): 'drop'" drop x "${OPTS[@]}"
usage_case 'show needs the experiment' show "${OPTS[@]}"
usage_case 'stop needs the experiment' stop
usage_case "an experiment name is 1 to 64 bytes of a-z, 0-9, '.', '_' and '-', not 'Bad'" show Bad "${OPTS[@]}"
usage_case "not '$(printf 'a%.0s' $(seq 1 57))..." show "$(printf 'a%.0s' $(seq 1 65))" "${OPTS[@]}"
usage_case 'missing --connect' list --server-key "$PUB" --key "$ADMIN"
usage_case 'missing --server-key' list --connect "$IPC" --key "$ADMIN"
usage_case 'missing --key' list --connect "$IPC" --server-key "$PUB"
usage_case "--set takes KEY=VALUE (a key of a-z, 0-9, '_'), not 'arms'" create x "${OPTS[@]}" --set arms
usage_case "--set takes KEY=VALUE" create x "${OPTS[@]}" --set =3
usage_case "--set takes KEY=VALUE" create x "${OPTS[@]}" --set arms=
usage_case "--set is for create only, not 'show'" show x "${OPTS[@]}" --set arms=3
usage_case "--file is for create only, not 'list'" list "${OPTS[@]}" --file /dev/null
usage_case "missing value for option '--set'" create x "${OPTS[@]}" --set
usage_case "unexpected argument 'extra'" list "${OPTS[@]}" extra
usage_case "unknown option '--frob'" list "${OPTS[@]}" --frob
usage_case "--timeout-ms '0' is not a whole number" list "${OPTS[@]}" --timeout-ms 0
usage_case 'expected tcp://HOST:PORT or ipc://PATH' list --connect http://x --server-key "$PUB" --key "$ADMIN"
head -c 5000 /dev/zero | tr '\0' '#' >big.conf
usage_case 'is not a settings text of at most 4096 bytes' create x "${OPTS[@]}" --file big.conf

# loadgen's and status's new options, refused before any request
CMD=loadgen usage_case "--experiments 0 outside \\[1, 100000\\]" --connect "$IPC" --server-key "$PUB" --experiments 0
CMD=loadgen usage_case "--zipf '-1' is not an exponent in \\[0, 100\\]" --connect "$IPC" --server-key "$PUB" --zipf -1
CMD=loadgen usage_case "a-z, 0-9" --connect "$IPC" --server-key "$PUB" --experiments 2 --experiment-prefix E
CMD=status usage_case "--experiment: a name is 1 to 64 bytes" --connect "$IPC" --server-key "$PUB" --experiment 'a b'
CMD=status usage_case "--list needs --client-key FILE" --connect "$IPC" --server-key "$PUB" --list
CMD=status usage_case "--list and --experiment exclude each other" --connect "$IPC" --server-key "$PUB" --list --experiment x

# --- no daemon: unreachable, exit 1 ----------------------------------------------------------
run list "${OPTS[@]}" --timeout-ms 300
check "unreachable: exit 1 (got $rc)" test "$rc" = 1
check "unreachable: says so (got: $(cat err))" grep -q "^ldpb experiment: no reply from $IPC within 300 ms" err

# --- a daemon with an admin list, `default` and x0 --------------------------------------------
cp keys/client.pub admins.keys
cat >exp.conf <<EOF
listen = $IPC
listen = $TCP
state_dir = $TMP/state
key = keys/aggregator.key
admin_list = admins.keys
log_level = warn
arms = 3
policy = ldp-ts-b
mechanism = linear
epsilon = 1

[experiment x0]
policy = ldp-ts-b
mode = local
arms = 3
mechanism = linear
epsilon = 1
EOF
start_exp_daemon() {
    "$AGG" --config exp.conf 2>>daemon.log &
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
        echo "FAIL: the daemon did not come up; its log:" >&2
        cat daemon.log >&2
        exit 1
    fi
}
start_exp_daemon

row_re() { # row_re NAME STATE REPORTS: a table row of experiment NAME
    printf '^%s +%s +ldp-ts-b +local +3 +linear +1 +- +- +%s +[0-9]+$' "$1" "$2" "$3"
}

run list "${OPTS[@]}"
check "list: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "list: the header" grep -qE '^experiment +state +policy +mode +arms +mechanism +epsilon +delta +horizon +reports +assignments$' out
check "list: default running" grep -qE "$(row_re default running 0)" out
check "list: x0 running" grep -qE "$(row_re x0 running 0)" out
check "list: two rows" test "$(wc -l <out)" = 3

# `ldpb status --list`: the same listing, an operator command under --client-key.
CMD=status run --connect "$IPC" --server-key "$PUB" --client-key "$ADMIN" --list
check "status --list: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "status --list: default running" grep -qE "$(row_re default running 0)" out
check "status --list: x0 running" grep -qE "$(row_re x0 running 0)" out
check "status --list: two rows" test "$(wc -l <out)" = 3
CMD=status run --connect "$IPC" --server-key "$PUB" --client-key other/client.key --list
check "status --list by a non-admin: exit 1 (got $rc)" test "$rc" = 1
check "status --list by a non-admin: LDPB_EAUTH (got: $(cat err))" grep -q 'LDPB_EAUTH' err

run create x1 "${OPTS[@]}" "${SETTINGS[@]}"
check "create x1: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "create x1: says so" grep -qx 'created experiment x1' out
check "create x1: its row" grep -qE "$(row_re x1 running 0)" out

# Another key: refused, nothing created.
run create x2 --connect "$IPC" --server-key "$PUB" --key other/client.key "${SETTINGS[@]}"
check "create by a non-admin: exit 1 (got $rc)" test "$rc" = 1
check "create by a non-admin: LDPB_EAUTH (got: $(cat err))" grep -q '^ldpb experiment: .*(LDPB_EAUTH).*admin list' err
check "create by a non-admin: nothing on stdout" test ! -s out
run show x2 "${OPTS[@]}"
check "x2 was not created: exit 1" test "$rc" = 1
check "x2 was not created: LDPB_ENOEXPERIMENT (got: $(cat err))" grep -q 'LDPB_ENOEXPERIMENT' err

# Bad settings: the aggregator's reason.
run create x3 "${OPTS[@]}" --set policy=ldp-ts-b --set arms=1
check "bad settings: exit 1 (got $rc)" test "$rc" = 1
check "bad settings: the aggregator's reason (got: $(cat err))" grep -q '^ldpb experiment: .*(LDPB_EINVAL).*arms' err

# Settings from a file, with --set after it.
printf 'policy = ldp-ts-b\nmode = local ; the privacy model\n# a comment\narms = 3\nmechanism = linear\n' >x4.conf
run create x4 "${OPTS[@]}" --file x4.conf --set epsilon=1
check "create from a file: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "create from a file: its row" grep -qE "$(row_re x4 running 0)" out

# loadgen spread over x0 and x1, with per-experiment counts.
set +e
"$LDPB" loadgen --connect "$IPC" --server-key "$PUB" --clients 4 --reports 200 --seed exp-test \
    --experiments 2 --experiment-prefix x --per-experiment --device-reports 10 >lg.out 2>lg.err
lrc=$?
set -e
check "loadgen over x0, x1: exit 0 (got $lrc: $(cat lg.err))" test "$lrc" = 0
check "loadgen: the experiments line" grep -qx 'experiments     2, x0 .. x1, each device'"'"'s drawn once (uniform)' lg.out
check "loadgen: 200 acked" grep -qx 'reports acked   200' lg.out
check "loadgen: the daemon counted 200 over both" grep -q '^daemon reports  0 -> 200 (+200, counting every client, summed over the 2 experiments)$' lg.out
for x in x0 x1; do
    acked=$(awk -v x="$x" '$1 == x { print $4 }' lg.out)
    after=$(awk -v x="$x" '$1 == x { print $7 }' lg.out)
    check "loadgen: $x has acked reports ($acked)" test "${acked:-0}" -gt 0
    check "loadgen: $x's acked equal the daemon's count ($acked vs $after)" test "$acked" = "$after"
    CMD=status run --connect "$IPC" --server-key "$PUB" --experiment "$x"
    check "status --experiment $x: exit 0" test "$rc" = 0
    check "status --experiment $x: the line" grep -qx "experiment   $x" out
    check "status --experiment $x: $acked counted" grep -qx "reports      $acked counted" out
done
CMD=status run --connect "$IPC" --server-key "$PUB"
check "status of default: untouched by loadgen" grep -qx 'reports      0 counted' out
check "status of default: no experiment line" sh -c "! grep -q '^experiment' out"
CMD=status run --connect "$IPC" --server-key "$PUB" --experiment x1 --json
check "status --json: the experiment key" grep -q '^{"url":"[^"]*","experiment":"x1","policy":"ldp-ts-b"' out

# Stop x1: refused to devices, kept, resumed with the same settings.
run stop x1 "${OPTS[@]}"
check "stop x1: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "stop x1: says so" grep -qx 'stopped experiment x1 (its state is kept)' out
check "stop x1: its row, stopped" grep -qE "$(row_re x1 stopped '[1-9][0-9]*')" out
CMD=status run --connect "$IPC" --server-key "$PUB" --experiment x1
check "status of a stopped experiment: exit 1" test "$rc" = 1
check "status of a stopped experiment: LDPB_ENOEXPERIMENT (got: $(cat err))" grep -q 'LDPB_ENOEXPERIMENT' err
run create x1 "${OPTS[@]}" --set policy=ldp-ts-b --set mode=local --set arms=3 --set mechanism=linear --set epsilon=2
check "x1 again with another epsilon: exit 1 (got $rc)" test "$rc" = 1
check "x1 again with another epsilon: the reason names it (got: $(cat err))" grep -q 'epsilon' err
run create x1 "${OPTS[@]}" "${SETTINGS[@]}"
check "x1 again with the same settings: exit 0 (got $rc: $(cat err))" test "$rc" = 0
check "x1 resumed with its reports" grep -qE "$(row_re x1 running '[1-9][0-9]*')" out

# JSON.
run list "${OPTS[@]}" --json
check "list --json: exit 0" test "$rc" = 0
check "list --json: an array of 4 with x1 running" python3 -c '
import json, sys
v = json.load(open("out"))
names = sorted(x["name"] for x in v)
assert names == ["default", "x0", "x1", "x4"], names
x1 = [x for x in v if x["name"] == "x1"][0]
assert x1["running"] is True and x1["arms"] == 3 and x1["epsilon"] == 1 and x1["reports"] > 0
assert list(x1) == ["name", "policy", "mode", "arms", "mechanism", "epsilon", "delta", "horizon",
                    "reports", "assignments", "running"], list(x1)
'
run stop x4 "${OPTS[@]}" --json
check "stop --json: one object" python3 -c '
import json
x = json.load(open("out"))
assert x["name"] == "x4" and x["running"] is False
'

# The runtime experiments survive a restart (x4 stopped, x1 running).
stop_daemon
start_exp_daemon
run list "${OPTS[@]}"
check "after a restart: x1 running" grep -qE "$(row_re x1 running '[1-9][0-9]*')" out
check "after a restart: x4 stopped" grep -qE "$(row_re x4 stopped 0)" out
stop_daemon

finish
