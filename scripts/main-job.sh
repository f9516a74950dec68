#!/usr/bin/env bash
# The main job, end to end on a fresh Debian machine: installs what it needs, builds ldpb
# (Release), then
#   1. privatizes a stream of 200000 device rewards with each LDP mechanism at epsilon 1 using the
#      secure system RNG, and shows what the aggregator can recover: the de-biased mean of the
#      privatized reports next to the true mean, which it never sees;
#   2. audits every mechanism empirically (ldpb audit) and prints each verdict.
# Exits non-zero if any step or any audit fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DLDPB_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j "$jobs" >/dev/null
ldpb=build/release/tools/ldpb
eps=1
n=200000

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Device rewards: a mix of binary and continuous rewards in [0,1], as in algorithms.md 9.1.
awk -v n="$n" 'BEGIN { srand(7); for (i = 0; i < n; i++) {
    u = rand(); if (i % 2) print (u < 0.7 ? 1 : 0); else printf "%.6f\n", u ^ 0.25 } }' > "$work/rewards"
true_mean=$(awk '{ s += $1 } END { printf "%.4f", s / NR }' "$work/rewards")

printf '== 1. privatize %d rewards at epsilon %s (true mean %s, never sent) ==\n' "$n" "$eps" "$true_mean"
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

printf '\n== 2. empirical privacy audit of every mechanism at epsilon %s ==\n' "$eps"
status=0
for mech in linear quadratic exponential laplace; do
  if "$ldpb" audit -m "$mech" -e "$eps" > "$work/audit.$mech"; then :; else status=1; fi
  tail -n 1 "$work/audit.$mech"
done
exit $status
