#!/usr/bin/env bash
# Several aggregator nodes on one PostgreSQL against one node on SQLite, in one run on this
# machine (loadgen, relays, nodes and the PostgreSQL server share its cores). Rows:
#   sqlite        one node, the embedded SQLite store (state on this machine's disk)
#   pg1           one node on a database of a throwaway PostgreSQL (tests/support/pg_throwaway.sh:
#                 fsync on, synchronous_commit on)
#   pg3           three nodes on one database of it, a loadgen per node (CLIENTS/3 clients each)
#   pg1-relay     pg1 behind one `ldpb relay`
#   pg3-relay     pg3 behind three relays (one per node, each with the three nodes as --upstream,
#                 its own node first: a relay sends to its first live upstream), a loadgen per
#                 relay
# Each row is a fresh state; loadgen (two round trips per report, durable acks) runs for SECONDS.
# Columns: durable reports/s (the reports acked by the loadgens over the wall time of the load);
# the nodes' CPU per report (utime + stime of every node from /proc/PID/stat over the run, summed,
# over the reports); the relays' CPU per report; the PostgreSQL server's CPU per report (its
# postmaster's utime + stime + cutime + cstime, which holds the exited backends, plus every live
# child's utime + stime); reports counted (the database's rows, or the SQLite node's status);
# reports per PostgreSQL transaction (the acked reports over the database's xact_commit during the
# load: the batches' transactions, and every statement a node runs outside one, such as the
# refresh of the other nodes' partials; a measure of the batch size).
# Prints a table and the machine's load average before and after; never a verdict.
#
# Usage: bench/run_cluster_bench.sh [SECONDS]     (default 10)
# Environment: BUILD_DIR (a Release build; default build/release, configured and built if the
# binaries are missing), CLIENTS (loadgen clients in all per row, default 48), ROWS (default
# "sqlite pg1 pg3 pg1-relay pg3-relay"), KEEP=1 (keep the working directory).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seconds=${1:-10}
clients=${CLIENTS:-48}
rows=${ROWS:-"sqlite pg1 pg3 pg1-relay pg3-relay"}
build=${BUILD_DIR:-$root/build/release}
if [ ! -x "$build/tools/ldpb" ] || [ ! -x "$build/aggregator/daemon/ldpb-aggregator" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLDPB_BUILD_TESTS=OFF \
        >/dev/null
    cmake --build "$build" --target ldpb ldpb-aggregator >/dev/null
fi
export LDPB=$build/tools/ldpb LDPB_AGGREGATOR=$build/aggregator/daemon/ldpb-aggregator
cluster=$root/tests/support/cluster.sh
pg_script=$root/tests/support/pg_throwaway.sh

work=$(mktemp -d)
pg_state=$work/pg.state
sqlite_pid=
cleanup() {
    for d in "$work"/row-*; do [ -d "$d" ] && bash "$cluster" stop "$d" >/dev/null 2>&1 || true; done
    if [ -n "$sqlite_pid" ]; then kill -TERM "$sqlite_pid" 2>/dev/null || true; fi
    bash "$pg_script" stop "$pg_state" || true
    if [ "${KEEP:-0}" = 1 ]; then echo "# kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bash "$pg_script" start "$pg_state"
export LDPB_PG_STATE=$pg_state

tck=$(getconf CLK_TCK)
# cpu_us PID...: utime + stime of the processes, in microseconds.
cpu_us() {
    local t=0 p
    for p in "$@"; do
        t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat")))
    done
    echo $((t * 1000000 / tck))
}
# pg_cpu_us: the PostgreSQL server's CPU so far (postmaster with its reaped children, and the live
# children).
pg_cpu_us() {
    local pm t
    pm=$(head -n 1 "$(cat "$pg_state")/data/postmaster.pid")
    t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pm/stat")
    for s in /proc/[0-9]*/stat; do
        awk -v pm="$pm" '{ sub(/^.*\) /, ""); if ($2 == pm) print $12 + $13 }' "$s" 2>/dev/null
    done >"$work/pgchildren"
    t=$((t + $(awk '{ s += $1 } END { print s + 0 }' "$work/pgchildren")))
    echo $((t * 1000000 / tck))
}
now_ms() { date +%s%3N; }
# xacts: the row's database's committed transactions so far (its sessions report them to the
# statistics at least once a second: read after a second's pause).
xacts() {
    sleep 1
    psql -Atq "$STORE" -c 'SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()'
}

printf '# bench/run_cluster_bench.sh %s, CLIENTS=%s, %s, %s cores, load average before: %s\n' \
    "$seconds" "$clients" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %6s %12s %14s %14s %14s %10s %9s\n' row nodes "reports/s" "nodes us/rep" \
    "relays us/rep" "postgres us/rep" counted "rep/xact"

# run_row NAME NODES RELAYS: a fresh cluster of NODES on a new database (NODES 0: the SQLite
# node), RELAYS 0 or 1 per node, then the loads and the table's row.
run_row() {
    local name=$1 n=$2 relays=$3 d=$work/row-$1 targets=() node_pids=() relay_pids=() counted
    mkdir -p "$d"
    if [ "$n" = 0 ]; then
        "$LDPB" keygen --out "$d/keys" >/dev/null
        local url=tcp://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$LDPB_AGGREGATOR" --listen "$url" --state-dir "$d/state" --key "$d/keys/aggregator.key" \
            --arms 3 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
            2>"$d/aggregator.log" &
        sqlite_pid=$!
        PUB=$d/keys/aggregator.pub
        for _ in $(seq 1 100); do
            "$LDPB" status --connect "$url" --server-key "$PUB" --timeout-ms 300 >/dev/null 2>&1 &&
                break
            sleep 0.2
        done
        targets=("$url")
        node_pids=("$sqlite_pid")
    else
        CLUSTER_DB=bench_$(echo "$name" | tr -c 'a-z0-9\n' _) bash "$cluster" start "$d" "$n"
        # shellcheck disable=SC1090
        source "$d/cluster.env"
        mapfile -t node_pids < <(bash "$cluster" pids "$d")
        if [ "$relays" = 0 ]; then
            read -r -a targets <<<"$NODE_URLS"
        else
            local i j ups
            read -r -a urls <<<"$NODE_URLS"
            for i in $(seq 0 $((n - 1))); do
                ups=()
                for j in $(seq 0 $((n - 1))); do ups+=(--upstream "${urls[$(((i + j) % n))]}"); done
                local rurl=tcp://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
                "$LDPB" relay --listen "$rurl" "${ups[@]}" --batch 256 --threads 2 \
                    2>"$d/relay$i.log" &
                relay_pids+=($!)
                targets+=("$rurl")
                for _ in $(seq 1 100); do
                    "$LDPB" status --connect "$rurl" --server-key "$PUB" --timeout-ms 300 \
                        >/dev/null 2>&1 && break
                    sleep 0.2
                done
            done
        fi
    fi
    local per=$((clients / ${#targets[@]})) c0 r0 p0 t0 t1 c1 r1 p1 lpids=() k acked=0 x0=0 x1=0
    [ "$n" = 0 ] || x0=$(xacts)
    c0=$(cpu_us "${node_pids[@]}")
    r0=0
    [ ${#relay_pids[@]} = 0 ] || r0=$(cpu_us "${relay_pids[@]}")
    p0=$(pg_cpu_us)
    t0=$(now_ms)
    for k in "${!targets[@]}"; do
        "$LDPB" loadgen --connect "${targets[$k]}" --server-key "$PUB" --clients "$per" \
            --duration "$seconds" --timeout-ms 5000 >"$d/loadgen$k.out" 2>"$d/loadgen$k.err" &
        lpids+=($!)
    done
    for p in "${lpids[@]}"; do wait "$p" || { cat "$d"/loadgen*.err >&2; exit 1; }; done
    t1=$(now_ms)
    c1=$(cpu_us "${node_pids[@]}")
    r1=0
    [ ${#relay_pids[@]} = 0 ] || r1=$(cpu_us "${relay_pids[@]}")
    p1=$(pg_cpu_us)
    [ "$n" = 0 ] || x1=$(xacts)
    for k in "${!targets[@]}"; do
        acked=$((acked + $(awk '/^reports acked/ { print $3; exit }' "$d/loadgen$k.out")))
    done
    if [ "$n" = 0 ]; then
        counted=$("$LDPB" status --connect "${targets[0]}" --server-key "$PUB" --json |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["reports"])')
        kill -TERM "$sqlite_pid"
        wait "$sqlite_pid" || true
        sqlite_pid=
    else
        counted=$(psql -Atq "$STORE" -c 'SELECT count(*) FROM reports')
        for p in "${relay_pids[@]}"; do kill -TERM "$p"; wait "$p" || true; done
        bash "$cluster" stop "$d"
    fi
    awk -v name="$name" -v n="${n/#0/1}" -v a="$acked" -v ms="$((t1 - t0))" -v c="$((c1 - c0))" \
        -v r="$((r1 - r0))" -v p="$((p1 - p0))" -v rl="${#relay_pids[@]}" -v cnt="$counted" \
        -v sq="$([ "$n" = 0 ] && echo 1 || echo 0)" -v x="$((x1 - x0))" 'BEGIN {
        rel = rl > 0 ? sprintf("%.1f", r / a) : "-"
        pg = sq ? sprintf("(%.1f)", p / a) : sprintf("%.1f", p / a)
        xa = x > 0 ? sprintf("%.1f", a / x) : "-"
        printf "%-10s %6s %12.0f %14.1f %14s %14s %10s %9s\n", name, n, a * 1000 / ms, c / a, rel, pg, cnt, xa
    }'
    if [ "$counted" -lt "$acked" ]; then
        echo "run_cluster_bench: $name counted $counted of $acked acked reports" >&2
        exit 1
    fi
}

for r in $rows; do
    case "$r" in
    sqlite) run_row sqlite 0 0 ;;
    pg1) run_row pg1 1 0 ;;
    pg3) run_row pg3 3 0 ;;
    pg1-relay) run_row pg1-relay 1 1 ;;
    pg3-relay) run_row pg3-relay 3 1 ;;
    *) echo "run_cluster_bench: unknown row '$r'" >&2; exit 2 ;;
    esac
done
printf '# load average after: %s. postgres us/rep of the sqlite row (in parentheses): the idle\n' \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '# throwaway server beside it, not a cost of that row.\n'
