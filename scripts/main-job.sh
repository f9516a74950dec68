#!/usr/bin/env bash
# The main job, end to end on a fresh Debian machine: installs what it needs, builds ldpb
# (Release), then
#   1. the service: generates keys, starts ldpb-aggregator (ldp-ts-b, linear mechanism,
#      epsilon 1, 5 arms) on the embedded SQLite store in a temporary state directory, runs
#      `ldpb loadgen` with 64 concurrent simulated devices (the real client library over
#      nanomsg, rewards from Bernoulli arms 0.9 .. 0.5) for 20000 durable reports, prints the
#      throughput, latency, errors and the learning result (pulls per arm, pseudo-regret), then
#      the aggregator's own `ldpb status` table, and stops the daemon with SIGTERM (it must exit
#      0);
#   2. two experiments on one aggregator: a configuration declaring layout-0 and layout-1
#      (ldp-ts-b, linear, epsilon 1, 5 arms each), `ldpb loadgen` with simulated devices spread
#      over both (each device in one, drawn at random) and the counts per experiment, each
#      experiment's own `ldpb status`, then one real device (a ledger file, budget epsilon 5)
#      taking turns between the two experiments until its one budget runs out across both
#      (examples/two_experiments.c): the refusal, LDPB_EBUDGET, comes in whichever experiment
#      asks next;
#   3. the privacy core: privatizes 200000 device rewards with each LDP mechanism at epsilon 1
#      and shows the de-biased mean the aggregator recovers next to the true mean it never sees;
#      then audits every mechanism empirically (ldpb audit).
# Exits non-zero if any step fails. Whatever happens, the daemon it started is stopped and the
# temporary directory removed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DLDPB_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$jobs" >/dev/null
ldpb=build/release/tools/ldpb
aggregator=build/release/aggregator/daemon/ldpb-aggregator
two_experiments=build/release/examples/two_experiments

work=$(mktemp -d)
daemon_pid=
cleanup() {
    if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -TERM "$daemon_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$daemon_pid" 2>/dev/null || true
        wait "$daemon_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the service ---------------------------------------------------------------------------
clients=64
reports=20000
means=0.9,0.8,0.7,0.6,0.5
url="ipc://$work/aggregator.sock"

"$ldpb" keygen --out "$work/keys" >/dev/null
"$aggregator" --listen "$url" --state-dir "$work/state" --key "$work/keys/aggregator.key" \
    --arms 5 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
    2>"$work/aggregator.log" &
daemon_pid=$!
ready=0
for _ in $(seq 1 100); do
    if "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 200 \
        >/dev/null 2>&1; then
        ready=1
        break
    fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "main-job: ldpb-aggregator did not come up; its log:" >&2
    cat "$work/aggregator.log" >&2
    exit 1
fi

printf '== 1. ldpb-aggregator (ldp-ts-b, linear, epsilon 1, 5 arms, SQLite state) under ldpb loadgen ==\n'
printf '%d concurrent simulated devices, %d reports, Bernoulli arms %s\n\n' "$clients" "$reports" "$means"
"$ldpb" loadgen --connect "$url" --server-key "$work/keys/aggregator.pub" \
    --clients "$clients" --reports "$reports" --means "$means"

printf '\n== the aggregator after the run (ldpb status) ==\n'
"$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub"

kill -TERM "$daemon_pid"
set +e
wait "$daemon_pid"
daemon_status=$?
set -e
daemon_pid=
if [ "$daemon_status" != 0 ]; then
    echo "main-job: ldpb-aggregator exited with status $daemon_status after SIGTERM; its log:" >&2
    cat "$work/aggregator.log" >&2
    exit 1
fi
printf '\nldpb-aggregator stopped with SIGTERM and exited 0.\n'

# ---- 2. two experiments on one aggregator -----------------------------------------------------
url2="ipc://$work/experiments.sock"
cat >"$work/experiments.conf" <<EOF
listen = $url2
state_dir = $work/state2
key = $work/keys/aggregator.key
log_level = warn

[experiment layout-0]
policy = ldp-ts-b
mode = local
arms = 5
mechanism = linear
epsilon = 1

[experiment layout-1]
policy = ldp-ts-b
mode = local
arms = 5
mechanism = linear
epsilon = 1
EOF
"$aggregator" --config "$work/experiments.conf" 2>"$work/aggregator2.log" &
daemon_pid=$!
ready=0
for _ in $(seq 1 100); do
    if "$ldpb" status --connect "$url2" --server-key "$work/keys/aggregator.pub" \
        --experiment layout-1 --timeout-ms 200 >/dev/null 2>&1; then
        ready=1
        break
    fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "main-job: ldpb-aggregator with two experiments did not come up; its log:" >&2
    cat "$work/aggregator2.log" >&2
    exit 1
fi

printf '\n== 2. two experiments, layout-0 and layout-1, on one ldpb-aggregator ==\n'
printf '%d concurrent simulated devices spread over both, %d reports, Bernoulli arms %s\n\n' \
    "$clients" "$reports" "$means"
"$ldpb" loadgen --connect "$url2" --server-key "$work/keys/aggregator.pub" \
    --clients "$clients" --reports "$reports" --means "$means" \
    --experiments 2 --experiment-prefix layout- --per-experiment
for e in layout-0 layout-1; do
    printf '\n== experiment %s after the run (ldpb status --experiment %s) ==\n' "$e" "$e"
    "$ldpb" status --connect "$url2" --server-key "$work/keys/aggregator.pub" --experiment "$e"
done

printf '\n== one device in both experiments: one ledger, one budget (epsilon 5) ==\n'
"$two_experiments" "$url2" "$work/keys/aggregator.pub" "$work/device.ledger" 5 layout-0 layout-1

kill -TERM "$daemon_pid"
set +e
wait "$daemon_pid"
daemon_status=$?
set -e
daemon_pid=
if [ "$daemon_status" != 0 ]; then
    echo "main-job: ldpb-aggregator (two experiments) exited with status $daemon_status after SIGTERM; its log:" >&2
    cat "$work/aggregator2.log" >&2
    exit 1
fi
printf '\nldpb-aggregator (two experiments) stopped with SIGTERM and exited 0.\n'

# ---- 3. the privacy core ----------------------------------------------------------------------
eps=1
n=200000
# Device rewards: a mix of binary and continuous rewards in [0,1], as in the jiang2023 preset.
awk -v n="$n" 'BEGIN { srand(7); for (i = 0; i < n; i++) {
    u = rand(); if (i % 2) print (u < 0.7 ? 1 : 0); else printf "%.6f\n", u ^ 0.25 } }' > "$work/rewards"
true_mean=$(awk '{ s += $1 } END { printf "%.4f", s / NR }' "$work/rewards")

printf '\n== 3. privatize %d rewards at epsilon %s (true mean %s, never sent), then audit ==\n' \
    "$n" "$eps" "$true_mean"
printf '%-12s %-14s %-16s %s\n' mechanism "report mean" "de-biased mean" "abs error"
for mech in linear quadratic exponential laplace; do
    "$ldpb" privatize -m "$mech" -e "$eps" < "$work/rewards" > "$work/out.$mech"
    awk -v mech="$mech" -v eps="$eps" -v truth="$true_mean" '
    { s += $1; n++ }
    END {
      m = s / n; e = exp(eps); p0 = 1 / (e + 1); span = (e - 1) / (e + 1)
      if (mech == "laplace") est = m
      else if (mech == "linear") est = (m - p0) / span
      else { est = -1 }
      if (est == -1) printf "%-12s %-14.4f %-16s %s\n", mech, m, "n/a (approx.)", "-"
      else printf "%-12s %-14.4f %-16.4f %.4f\n", mech, m, est, (est > truth ? est - truth : truth - est)
    }' "$work/out.$mech"
done
echo "(quadratic and exponential reports are not de-biasable for non-binary rewards:"
echo " the aggregator learns on their privatized scale; see docs/privacy.md)"
status=0
for mech in linear quadratic exponential laplace; do
    if "$ldpb" audit -m "$mech" -e "$eps" > "$work/audit.$mech"; then :; else status=1; fi
    tail -n 1 "$work/audit.$mech"
done
exit $status
