#!/usr/bin/env bash
# Several ldpb-aggregator nodes on one PostgreSQL database, and optionally an `ldpb relay` in
# front of them, for tests, scripts/cluster-demo.sh and bench/run_cluster_bench.sh. Every node
# has its own node_name, listen URL (tcp://127.0.0.1, a free port), state directory and log; all
# share one key pair (`ldpb keygen`) and one database of the throwaway PostgreSQL of
# tests/support/pg_throwaway.sh (docs/aggregator.md, "Several nodes on one PostgreSQL").
#
#   cluster.sh start DIR N       a database (and, without $LDPB_PG_STATE, a throwaway PostgreSQL
#                                of its own), keys, N nodes started one after the other, each
#                                waited for until it answers a status request
#   cluster.sh relay DIR [ARGS]  an `ldpb relay` listening on one more port, with an --upstream per
#                                node in node order; ARGS go to the relay (e.g. --batch 64)
#   cluster.sh node-start DIR I  (re)start node I (1-based) on its URL, state and name
#   cluster.sh node-kill DIR I [SIG]  send SIG (default KILL) to node I and wait until it is gone
#   cluster.sh pids DIR          the running nodes' pids, one a line
#   cluster.sh stop DIR          SIGTERM to the relay and every node (exit 1 if one of them does
#                                not exit 0 within 20 s), then stop the own PostgreSQL; DIR stays
#
# DIR (created if missing) receives cluster.env, sourceable by a shell: STORE (the database's
# URL), PUB (the public key file), KEY, NODES (N), NODE_URL_1..NODE_URL_N, NODE_URLS (all, space
# separated), RELAY_URL (once `relay` ran), PG_STATE (the throwaway's state file). Node I lives in
# DIR/nodeI: aggregator.conf, state/, aggregator.log, pid.
#
# Environment:
#   LDPB, LDPB_AGGREGATOR   the binaries (default: ldpb and ldpb-aggregator on PATH)
#   LDPB_PG_STATE           the state file of a throwaway PostgreSQL already running (its caller
#                           stops it); without it `start` starts one and `stop` stops it
#   CLUSTER_DB              the database's name (default ldpb_cluster)
#   CLUSTER_CONF            a file whose lines are appended to every node's configuration (the
#                           experiments; service options before any [experiment] section);
#                           default: 3 arms, ldp-ts-b, linear mechanism, epsilon 1
#   CLUSTER_NODE_FLAGS      more command-line flags for every node (words)
#   CLUSTER_PROBE           the experiment whose status tells that a node (or the relay) serves
#                           (default: none named, i.e. `default`; set it when CLUSTER_CONF
#                           declares no `default`)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pg_script=$here/pg_throwaway.sh
die() { echo "cluster.sh: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: cluster.sh start|relay|node-start|node-kill|pids|stop DIR [ARG]"
ldpb=${LDPB:-ldpb}
agg=${LDPB_AGGREGATOR:-ldpb-aggregator}

# outside the ephemeral range: free_port.py says why
free_port() {
    python3 "$here/free_port.py"
}

# wait_ready URL PID LOG: until URL answers a status request (30 s), or the process exits.
wait_ready() {
    local i=0
    local probe=()
    if [ -n "${CLUSTER_PROBE:-}" ]; then probe=(--experiment "$CLUSTER_PROBE"); fi
    until "$ldpb" status --connect "$1" --server-key "$PUB" --timeout-ms 300 "${probe[@]}" \
        >/dev/null 2>&1; do
        i=$((i + 1))
        if ! kill -0 "$2" 2>/dev/null || [ $i -gt 100 ]; then
            echo "cluster.sh: $1 did not come up:" >&2
            cat "$3" >&2 || true
            return 1
        fi
        sleep 0.3
    done
}

load_env() {
    [ -f "$dir/cluster.env" ] || die "$dir/cluster.env is missing (cluster.sh start first)"
    # shellcheck disable=SC1091
    source "$dir/cluster.env"
}

node_start() {
    local i=$1 url pid
    url=$(eval echo "\$NODE_URL_$i")
    [ -n "$url" ] || die "no node $i"
    local nd=$dir/node$i
    if [ -f "$nd/pid" ] && kill -0 "$(cat "$nd/pid")" 2>/dev/null; then
        die "node $i is running (pid $(cat "$nd/pid"))"
    fi
    # shellcheck disable=SC2086 # CLUSTER_NODE_FLAGS is several words on purpose
    setsid "$agg" --config "$nd/aggregator.conf" ${CLUSTER_NODE_FLAGS:-} \
        </dev/null >/dev/null 2>>"$nd/aggregator.log" &
    pid=$!
    echo "$pid" >"$nd/pid"
    wait_ready "$url" "$pid" "$nd/aggregator.log"
}

case "$cmd" in
start)
    n=${3:-}
    [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "start: a node count 1..99 expected"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    pg_state=${LDPB_PG_STATE:-}
    own=0
    if [ -z "$pg_state" ]; then
        pg_state=$dir/pg.state
        bash "$pg_script" start "$pg_state"
        own=1
    fi
    store=$(bash "$pg_script" url "$pg_state" "${CLUSTER_DB:-ldpb_cluster}")
    rm -rf "$dir/keys"
    "$ldpb" keygen --out "$dir/keys" >/dev/null
    PUB=$dir/keys/aggregator.pub
    {
        echo "STORE='$store'"
        echo "PUB='$PUB'"
        echo "KEY='$dir/keys/aggregator.key'"
        echo "NODES=$n"
        echo "PG_STATE='$pg_state'"
        echo "PG_OWN=$own"
    } >"$dir/cluster.env"
    urls=
    for i in $(seq 1 "$n"); do
        url=tcp://127.0.0.1:$(free_port)
        urls="$urls${urls:+ }$url"
        echo "NODE_URL_$i='$url'" >>"$dir/cluster.env"
        nd=$dir/node$i
        rm -rf "$nd"
        mkdir -p "$nd"
        {
            echo "# written by tests/support/cluster.sh: node $i of $n"
            echo "node_name = node$i"
            echo "listen = $url"
            echo "state_dir = $nd/state"
            echo "key = $dir/keys/aggregator.key"
            echo "store = $store"
            echo "log_level = warn"
            if [ -n "${CLUSTER_CONF:-}" ]; then
                cat "$CLUSTER_CONF"
            else
                printf 'arms = 3\npolicy = ldp-ts-b\nmechanism = linear\nepsilon = 1\n'
            fi
        } >"$nd/aggregator.conf"
    done
    echo "NODE_URLS='$urls'" >>"$dir/cluster.env"
    load_env
    # One after the other: the first creates the schema, the others find it.
    for i in $(seq 1 "$n"); do node_start "$i"; done
    ;;
relay)
    load_env
    shift 2
    [ -z "${RELAY_URL:-}" ] || die "relay: one is running already ($RELAY_URL)"
    url=tcp://127.0.0.1:$(free_port)
    ups=()
    for u in $NODE_URLS; do ups+=(--upstream "$u"); done
    setsid "$ldpb" relay --listen "$url" "${ups[@]}" "$@" </dev/null >/dev/null \
        2>>"$dir/relay.log" &
    echo "$!" >"$dir/relay.pid"
    echo "RELAY_URL='$url'" >>"$dir/cluster.env"
    wait_ready "$url" "$(cat "$dir/relay.pid")" "$dir/relay.log"
    ;;
node-start)
    load_env
    node_start "${3:?node-start: a node number}"
    ;;
node-kill)
    load_env
    i=${3:?node-kill: a node number}
    pf=$dir/node$i/pid
    [ -f "$pf" ] || die "node $i has no pid file"
    pid=$(cat "$pf")
    kill -"${4:-KILL}" "$pid"
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pid" 2>/dev/null || die "node $i (pid $pid) did not exit"
    rm -f "$pf"
    ;;
pids)
    load_env
    for i in $(seq 1 "$NODES"); do
        pf=$dir/node$i/pid
        if [ -f "$pf" ] && kill -0 "$(cat "$pf")" 2>/dev/null; then cat "$pf"; fi
    done
    ;;
stop)
    [ -f "$dir/cluster.env" ] || exit 0
    load_env
    bad=0
    # stop_pid PIDFILE WHAT: SIGTERM, then up to 20 s for it to go; SIGKILL and a failure after.
    stop_pid() {
        [ -f "$1" ] || return 0
        local pid
        pid=$(cat "$1")
        rm -f "$1"
        kill -0 "$pid" 2>/dev/null || return 0
        kill -TERM "$pid"
        for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
        echo "cluster.sh: $2 (pid $pid) did not stop within 20 s of SIGTERM: killed" >&2
        kill -KILL "$pid" 2>/dev/null || true
        bad=1
    }
    stop_pid "$dir/relay.pid" relay
    for i in $(seq 1 "$NODES"); do stop_pid "$dir/node$i/pid" "node $i"; done
    # A node that failed logs an error line (log_level = warn); report them.
    for i in $(seq 1 "$NODES"); do
        if grep -q 'error' "$dir/node$i/aggregator.log" 2>/dev/null; then
            echo "cluster.sh: node $i logged errors:" >&2
            grep 'error' "$dir/node$i/aggregator.log" | tail -n 5 >&2
        fi
    done
    if [ "${PG_OWN:-0}" = 1 ]; then bash "$pg_script" stop "$PG_STATE"; fi
    exit "$bad"
    ;;
*)
    die "unknown command '$cmd'"
    ;;
esac
