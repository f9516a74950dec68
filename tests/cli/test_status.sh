#!/usr/bin/env bash
# Contract tests for `ldpb status` (docs/cli.md) against the real
# ldpb-aggregator binary: a daemon on a temporary state directory with keys from `ldpb keygen`,
# served on ipc:// and tcp://127.0.0.1:<free port>. Checks help, usage errors (exit 2, one line
# on stderr, nothing on stdout), the table and the JSON object on both transports before and after
# a few reports, a wrong server key and an unreachable daemon (exit 1 within the timeout), key
# file errors and an unwritable stdout; then a daemon with an allow-list, which answers only
# --client-key with a key on the list. Whatever happens, the daemon is killed on exit.
set -euo pipefail

CMD=status
# shellcheck source=daemon_fixture.sh
source "$(dirname "$0")/daemon_fixture.sh"


# --- help and usage errors (no daemon needed) ----------------------------------------------
run --help
check "--help exits 0 (got $rc)" test "$rc" = 0
check "--help writes nothing on stderr" test ! -s err
for opt in connect server-key client-key json timeout-ms help; do
    check "--help documents --$opt" grep -q -- "--$opt\\b" out
done
check "ldpb --help lists status" sh -c "'$LDPB' --help | grep -q '^  status '"

usage_case 'missing --connect' --server-key "$PUB"
usage_case 'missing --server-key' --connect "$IPC"
usage_case "unknown option '--frob'" --connect "$IPC" --server-key "$PUB" --frob
usage_case "unexpected argument 'extra'" --connect "$IPC" --server-key "$PUB" extra
usage_case '--timeout-ms 0 outside \[1, 3600000\]' --connect "$IPC" --server-key "$PUB" --timeout-ms 0
usage_case "--timeout-ms 'soon' is not a whole number" --connect "$IPC" --server-key "$PUB" --timeout-ms soon
usage_case 'option takes no value' --connect "$IPC" --server-key "$PUB" --json=1
usage_case 'option --connect given twice' --connect "$IPC" --connect "$IPC" --server-key "$PUB"
usage_case 'missing value for option' --connect "$IPC" --server-key
usage_case 'expected tcp://HOST:PORT or ipc://PATH' --connect "http://x" --server-key "$PUB"

# --- no daemon yet: unreachable, exit 1 within the timeout ---------------------------------
for url in "$IPC" "$TCP"; do
    t0=$(now_ms)
    run --connect "$url" --server-key "$PUB" --timeout-ms 300
    dt=$(($(now_ms) - t0))
    check "unreachable $url: exit 1 (got $rc)" test "$rc" = 1
    check "unreachable $url: says so (got: $(cat err))" grep -q "^ldpb status: no reply from $url within 300 ms" err
    check "unreachable $url: gave up in time (${dt} ms)" test "$dt" -lt 3000
    check "unreachable $url: nothing on stdout" test ! -s out
done

# --- a real daemon ---------------------------------------------------------------------------
start_daemon

# The table on a fresh state, over both transports.
for url in "$IPC" "$TCP"; do
    run --connect "$url" --server-key "$PUB"
    check "table $url: exit 0 (got $rc: $(cat err))" test "$rc" = 0
    check "table $url: nothing on stderr" test ! -s err
    check "table $url: the endpoint" grep -qx "aggregator   $url" out
    check "table $url: the policy and model" grep -qx 'policy       ldp-ts-b (model local)' out
    check "table $url: no reports yet" grep -qx 'reports      0 counted' out
    check "table $url: the header" grep -qE '^ +arm +pulls +estimate +interval +active$' out
    check "table $url: three arm rows with 0 pulls and no estimate" \
        test "$(grep -cE '^ +[0-2] +0 +- +- +yes$' out)" = 3
done

# A few reports through the client library (ldpb loadgen), then the table and the JSON.
set +e
"$LDPB" loadgen --connect "$IPC" --server-key "$PUB" --clients 2 --reports 60 \
    --means 0.9,0.5,0.1 --seed status-test >loadgen.out 2>loadgen.err
lrc=$?
set -e
check "loadgen for the status test: exit 0 (got $lrc: $(cat loadgen.err))" test "$lrc" = 0

run --connect "$TCP" --server-key "$PUB"
check "table after reports: exit 0" test "$rc" = 0
check "table after reports: 60 counted" grep -qx 'reports      60 counted' out
check "table after reports: 60 assignments" grep -qx 'assignments  60 issued' out
check "table after reports: pulls add up to 60" \
    test "$(awk '/^ +[0-9]+ +[0-9]+ /{ s += $2 } END { print s }' out)" = 60
check "table after reports: an arm with pulls has an estimate and an interval" \
    grep -qE '^ +[0-2] +[1-9][0-9]* +-?[0-9]+\.[0-9]{4}  \[-?[0-9.]+, -?[0-9.]+\] +yes$' out

for url in "$IPC" "$TCP"; do
    run --connect "$url" --server-key "$PUB" --json
    check "json $url: exit 0" test "$rc" = 0
    check "json $url: one line" test "$(wc -l <out)" = 1
    check "json $url: parses" sh -c "python3 -c 'import json,sys; json.load(sys.stdin)' <out"
    check "json $url: keys, types and values" python3 - "$url" <<'EOF'
import json, math, sys
url = sys.argv[1]
d = json.load(open("out"))
assert list(d) == ["url", "policy", "model", "reports", "assignments", "arms"], list(d)
assert d["url"] == url and d["policy"] == "ldp-ts-b" and d["model"] == "local", d
assert d["reports"] == 60 and d["assignments"] == 60, d
assert [a["arm"] for a in d["arms"]] == [0, 1, 2], d["arms"]
assert sum(a["pulls"] for a in d["arms"]) == 60, d["arms"]
for a in d["arms"]:
    assert list(a) == ["arm", "pulls", "estimate", "ci_low", "ci_high", "active"], list(a)
    assert a["active"] is True
    if a["pulls"] == 0:
        assert a["estimate"] is None and a["ci_low"] is None and a["ci_high"] is None, a
    else:
        assert isinstance(a["estimate"], float) and math.isfinite(a["estimate"]), a
        assert a["ci_low"] <= a["estimate"] <= a["ci_high"], a
EOF
done

# --- refusals --------------------------------------------------------------------------------
t0=$(now_ms)
run --connect "$IPC" --server-key other/aggregator.pub --timeout-ms 10000
dt=$(($(now_ms) - t0))
check "wrong server key: exit 1 (got $rc)" test "$rc" = 1
check "wrong server key: names the key file to check (got: $(cat err))" \
    grep -q '^ldpb status: .*could not authenticate the request (LDPB_ECRYPTO.*aggregator.pub' err
check "wrong server key: refused at once, not timed out (${dt} ms)" test "$dt" -lt 5000
check "wrong server key: one line" test "$(wc -l <err)" = 1

run --connect "$IPC" --server-key keys/aggregator.key
check "a secret key file: exit 1" test "$rc" = 1
check "a secret key file: says so" grep -q 'is not a public key file' err
run --connect "$IPC" --server-key nonexistent.pub
check "a missing key file: exit 1" test "$rc" = 1
check "a missing key file: says so" grep -q '^ldpb status: --server-key nonexistent.pub cannot be read' err
echo 'not a key' >garbage.pub
run --connect "$IPC" --server-key garbage.pub
check "a malformed key file: exit 1" test "$rc" = 1
check "a malformed key file: says so" grep -q 'is not a key file (LDPB_ECORRUPT)' err

if [ -w /dev/full ]; then
    set +e
    "$LDPB" status --connect "$IPC" --server-key "$PUB" >/dev/full 2>err
    rc=$?
    set -e
    check "stdout /dev/full: exit 1 (got $rc)" test "$rc" = 1
    check "stdout /dev/full: says so" grep -q 'cannot write to standard output' err
fi

# --- the daemon drains and exits 0 on SIGTERM ------------------------------------------------
stop_daemon

# --- an allow-list daemon: only a client key on the list gets the status ---------------------
cp keys/client.pub allowed.keys
"$AGG" --listen "$IPC" --listen "$TCP" --state-dir "$TMP/state-allow" --key keys/aggregator.key \
    --arms 3 --policy ldp-ts-b --mechanism linear --epsilon 1 --auth allowlist \
    --allowlist allowed.keys --log-level warn 2>daemon-allow.log &
PID=$!
ready=0
for _ in $(seq 1 100); do
    run --connect "$IPC" --server-key "$PUB" --timeout-ms 200
    if grep -q 'LDPB_EAUTH' err; then
        ready=1
        break
    fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
done
check "allow-list daemon came up (its log: $(cat daemon-allow.log))" test "$ready" = 1

for url in "$IPC" "$TCP"; do
    run --connect "$url" --server-key "$PUB" --client-key keys/client.key
    check "allow-list $url, allowed --client-key: exit 0 (got $rc: $(cat err))" test "$rc" = 0
    check "allow-list $url, allowed --client-key: the table" \
        grep -qx 'policy       ldp-ts-b (model local)' out
    check "allow-list $url, allowed --client-key: three arms" \
        test "$(grep -cE '^ +[0-2] +0 +- +- +yes$' out)" = 3
done
run --connect "$IPC" --server-key "$PUB" --client-key keys/client.key --json
check "allow-list --json: exit 0" test "$rc" = 0
check "allow-list --json: parses" sh -c "python3 -c 'import json,sys; json.load(sys.stdin)' <out"

t0=$(now_ms)
run --connect "$IPC" --server-key "$PUB" --timeout-ms 10000
dt=$(($(now_ms) - t0))
check "allow-list, no --client-key: exit 1 (got $rc)" test "$rc" = 1
check "allow-list, no --client-key: names the allow-list and --client-key (got: $(cat err))" \
    grep -q "^ldpb status: $IPC refused this client key (LDPB_EAUTH.*--client-key" err
check "allow-list, no --client-key: refused at once (${dt} ms)" test "$dt" -lt 5000
check "allow-list, no --client-key: one line, nothing on stdout" \
    sh -c "test \"\$(wc -l <err)\" = 1 && test ! -s out"
run --connect "$IPC" --server-key "$PUB" --client-key other/client.key
check "allow-list, a key not on the list: exit 1 (got $rc)" test "$rc" = 1
check "allow-list, a key not on the list: LDPB_EAUTH" grep -q 'LDPB_EAUTH' err

cp keys/client.pub owner-only.pub
chmod 600 owner-only.pub
run --connect "$IPC" --server-key "$PUB" --client-key owner-only.pub
check "--client-key a public key file: exit 1" test "$rc" = 1
check "--client-key a public key file: says so (got: $(cat err))" \
    grep -q '^ldpb status: --client-key owner-only.pub is not a secret key file' err
run --connect "$IPC" --server-key "$PUB" --client-key nonexistent.key
check "--client-key missing: exit 1" test "$rc" = 1
check "--client-key missing: says so" \
    grep -q '^ldpb status: --client-key nonexistent.key cannot be read' err
cp keys/client.key loose.key
chmod 644 loose.key
run --connect "$IPC" --server-key "$PUB" --client-key loose.key
check "--client-key readable by others: exit 1 (got $rc)" test "$rc" = 1
check "--client-key readable by others: refused (got: $(cat err))" grep -q 'LDPB_ECRYPTO' err
usage_case 'missing value for option' --connect "$IPC" --server-key "$PUB" --client-key

stop_daemon

finish
