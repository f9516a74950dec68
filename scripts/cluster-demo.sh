#!/usr/bin/env bash
# Several aggregator nodes on one PostgreSQL, end to end on one fresh Debian machine: installs what
# it needs (scripts/deps.sh), builds ldpb (Release), then brings up
#   - one throwaway PostgreSQL (initdb in a temporary directory, unix socket only, no system
#     service: tests/support/pg_throwaway.sh),
#   - three ldpb-aggregator nodes (node1..node3) on one database of it, one key pair, serving two
#     experiments: additive0 (ldp-ts-b, local model: statistics that add, each node commits its
#     own partial sums) and sequenced0 (dp-ucb, central model: one sequencer node per experiment),
#   - one `ldpb relay` with an --upstream per node,
#   - two `ldpb loadgen`s through the relay at once, one per experiment (a loadgen plays one model),
#     CLIENTS simulated devices and REPORTS rounds each, and in the middle of them node2 killed
#     with SIGKILL and started again;
# then prints the exact counts per experiment: the reports loadgen had acked, the rows the
# database holds, and what each node serves (`ldpb status --experiment`: the pulls of the policy
# state it serves). It fails (exit 1) when an acked report is missing from the database, more
# rows are there than acked reports and failed rounds, a node serves other counts than the
# database's rows (a report counted twice or left out), or a node does not stop within 20 s of
# SIGTERM. Whatever happens, the processes it started are stopped and the temporary directory
# removed.
#
# Environment: CLIENTS (default 32), REPORTS (default 20000), KILL (default 1; 0: no node killed),
# BUILD_DIR (default build/release).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bash scripts/deps.sh

build=${BUILD_DIR:-$root/build/release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLDPB_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target ldpb ldpb-aggregator >/dev/null
export LDPB=$build/tools/ldpb LDPB_AGGREGATOR=$build/aggregator/daemon/ldpb-aggregator
cluster=$root/tests/support/cluster.sh
clients=${CLIENTS:-32}
reports=${REPORTS:-20000}

work=$(mktemp -d)
cleanup() {
    local rc=$?
    if ! bash "$cluster" stop "$work" && [ "$rc" = 0 ]; then rc=1; fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$work/experiments.conf" <<'EOF'
assignment_ttl_s = 300

[experiment additive0]
policy = ldp-ts-b
mode = local
arms = 3
mechanism = linear
epsilon = 1

[experiment sequenced0]
policy = dp-ucb
mode = central
arms = 3
epsilon = 1
horizon = 1000000
EOF

printf '== one throwaway PostgreSQL, three ldpb-aggregator nodes on one database, one relay ==\n'
export CLUSTER_PROBE=additive0 # the configuration has no experiment `default`
CLUSTER_CONF=$work/experiments.conf bash "$cluster" start "$work" 3
bash "$cluster" relay "$work" --batch 64 --timeout-ms 1000
# shellcheck disable=SC1091
source "$work/cluster.env"
for i in 1 2 3; do
    echo "node$i  $(eval echo "\$NODE_URL_$i")  pid $(cat "$work/node$i/pid")"
done
echo "relay  $RELAY_URL  --upstream $NODE_URLS"
echo "store  $STORE"

printf '\n== two ldpb loadgens through the relay, %d devices and %d rounds each ==\n' \
    "$clients" "$reports"
pids=()
for e in additive sequenced; do
    "$LDPB" loadgen --connect "$RELAY_URL" --server-key "$PUB" --clients "$clients" \
        --reports "$reports" --experiments 1 --experiment-prefix "$e" --timeout-ms 3000 \
        >"$work/loadgen.$e.out" 2>"$work/loadgen.$e.err" &
    pids+=($!)
done
if [ "${KILL:-1}" = 1 ]; then
    sleep 3
    bash "$cluster" node-kill "$work" 2 KILL
    echo "node2 killed with SIGKILL under load"
    sleep 2
    bash "$cluster" node-start "$work" 2
    echo "node2 started again (pid $(cat "$work/node2/pid"))"
fi
lrc=0
for p in "${pids[@]}"; do wait "$p" || lrc=$?; done
for e in additive sequenced; do
    printf '\n-- loadgen of %s0 --\n' "$e"
    cat "$work/loadgen.$e.out"
done
if [ "$lrc" != 0 ]; then
    echo "cluster-demo: ldpb loadgen exited $lrc:" >&2
    cat "$work"/loadgen.*.err >&2
    exit 1
fi

# loadgen's acked reports (its line `reports acked N`) and its failed rounds (`errors N ...`).
acked_of() { awk '/^reports acked/ { print $3; exit }' "$work/loadgen.$1.out"; }
errors_of() { awk '/^errors/ { print $2; exit }' "$work/loadgen.$1.out"; }
rows_of() {
    psql -Atq "$STORE" -c "SELECT count(*) FROM reports r JOIN experiments x ON x.id = r.experiment WHERE x.name = '$1'"
}
served_of() { # served_of NODE_URL EXPERIMENT WANT: the reports in the policy state that node
    # serves (the sum of its arms' pulls: for an additive experiment the merge of every node's
    # partial, for a sequenced one the sequencer's state), once it is WANT or 5 s have passed (a
    # node refreshes what it serves of the others' commits every merge_interval_ms, 100 ms by
    # default; a sequencer observes the waiting rows every 20 ms)
    local got
    for _ in $(seq 1 50); do
        got=$("$LDPB" status --connect "$1" --server-key "$PUB" --experiment "$2" --json |
            python3 -c 'import json, sys; print(sum(a["pulls"] for a in json.load(sys.stdin)["arms"]))')
        [ "$got" = "$3" ] && break
        sleep 0.1
    done
    echo "$got"
}

printf '\n== the exact counts ==\n'
printf 'acked: by the loadgen; database: rows of `reports`; nodeN: the reports in the policy state\n'
printf 'that node serves (the sum of its arms'"'"' pulls)\n'
printf '%-11s %8s %7s %10s %8s %8s %8s\n' experiment acked errors database node1 node2 node3
bad=0
for x in additive sequenced; do
    e=${x}0
    a=$(acked_of "$x")
    errors=$(errors_of "$x")
    r=$(rows_of "$e")
    s1=$(served_of "$NODE_URL_1" "$e" "$r")
    s2=$(served_of "$NODE_URL_2" "$e" "$r")
    s3=$(served_of "$NODE_URL_3" "$e" "$r")
    printf '%-11s %8s %7s %10s %8s %8s %8s\n' "$e" "$a" "${errors:-?}" "$r" "$s1" "$s2" "$s3"
    # Every acked report is in the database; a report is never counted twice (each node serves
    # exactly the database's rows); more than acked only by rounds loadgen gave up on.
    if [ -z "$a" ] || [ "$r" -lt "$a" ] || [ "$r" -gt "$((a + ${errors:-0}))" ]; then
        echo "cluster-demo: $e: $r rows in the database for $a acked reports" >&2
        bad=1
    fi
    for s in "$s1" "$s2" "$s3"; do
        if [ "$s" != "$r" ]; then
            echo "cluster-demo: $e: a node serves $s reports, the database holds $r" >&2
            bad=1
        fi
    done
done

printf '\n== stopping: the relay and the nodes (SIGTERM), then PostgreSQL ==\n'
bash "$cluster" stop "$work"
echo "stopped: the relay and every node exited on SIGTERM, the throwaway PostgreSQL is deleted"
rm -f "$work/cluster.env"
exit "$bad"
