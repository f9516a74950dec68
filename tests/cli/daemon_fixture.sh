# shellcheck shell=bash
# Shared fixture of the CLI tests that run `ldpb CMD` against the real ldpb-aggregator binary
# (test_status.sh, test_loadgen.sh). Sourced after `set -euo pipefail` with CMD set to the
# subcommand under test and the script's own arguments (PATH/TO/ldpb PATH/TO/ldpb-aggregator).
# Provides: LDPB, AGG, TMP (the working directory), keys/ and other/ from `ldpb keygen`, PUB,
# IPC, TCP (a free port); fail, check, run, usage_case, now_ms; start_daemon, which starts a
# 3-arm daemon as $PID and waits until it answers; stop_daemon, which checks it drains and exits 0
# on SIGTERM; finish, the summary and exit status. Whatever happens, the daemon is killed on exit.

LDPB=${1:?usage: $(basename "$0") PATH/TO/ldpb PATH/TO/ldpb-aggregator}
AGG=${2:?usage: $(basename "$0") PATH/TO/ldpb PATH/TO/ldpb-aggregator}
LDPB=$(cd "$(dirname "$LDPB")" && pwd)/$(basename "$LDPB")
AGG=$(cd "$(dirname "$AGG")" && pwd)/$(basename "$AGG")
# tests/support: free_port.py, a port outside the ephemeral range (a bind to port 0 hands out one
# that another process's connection may take while the daemon starts or restarts)
SUPPORT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../support" && pwd)
TMP=$(mktemp -d)
PID=
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill -CONT "$PID" 2>/dev/null || true # it may have been stopped with SIGSTOP
        kill -KILL "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$TMP"

failures=0
checks=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

check() { # check DESCRIPTION COMMAND...: the command must succeed
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        fail "$what"
    fi
}

# run ARGS...: runs ldpb $CMD; sets rc, stdout in $TMP/out, stderr in $TMP/err.
run() {
    set +e
    "$LDPB" "$CMD" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    rc=$?
    set -e
}

usage_case() { # usage_case PATTERN ARGS...: exit 2, nothing on stdout, one line matching PATTERN
    local pattern=$1
    shift
    run "$@"
    check "$CMD $*: exit 2 (got $rc)" test "$rc" = 2
    check "$CMD $*: nothing on stdout" test ! -s out
    check "$CMD $*: one line on stderr" test "$(wc -l <err)" = 1
    check "$CMD $*: message '$pattern' (got: $(cat err))" grep -q -- "$pattern" err
}

now_ms() { date +%s%3N; }

"$LDPB" keygen --out keys >/dev/null
"$LDPB" keygen --out other >/dev/null
PUB=keys/aggregator.pub
PORT=$(python3 "$SUPPORT/free_port.py")
IPC="ipc://$TMP/agg.sock"
TCP="tcp://127.0.0.1:$PORT"

# start_daemon: a 3-arm ldp-ts-b daemon on $IPC and $TCP as $PID, up once `ldpb status` answers.
start_daemon() {
    "$AGG" --listen "$IPC" --listen "$TCP" --state-dir "$TMP/state" --key keys/aggregator.key \
        --arms 3 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn 2>daemon.log &
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

# stop_daemon: the daemon drains and exits 0 on SIGTERM.
stop_daemon() {
    kill -TERM "$PID"
    set +e
    wait "$PID"
    local drc=$?
    set -e
    PID=
    check "daemon exit status after SIGTERM is 0 (got $drc)" test "$drc" = 0
}

finish() {
    echo "$checks checks, $failures failures"
    test "$failures" = 0
}
