#!/usr/bin/env bash
# Installs every Debian package that building, testing, benchmarking and running ldpb needs.
# Idempotent and quiet: when everything is present it prints nothing and touches nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-dev clang-format
  libsodium-dev libnanomsg-dev libprotobuf-c-dev protobuf-c-compiler
  libgsl-dev libsqlite3-dev libcmocka-dev libmicrohttpd-dev libinih-dev
  libpq-dev # the PostgreSQL store (--store postgresql://...)
  postgresql # its tests: tests/support/pg_throwaway.sh runs a throwaway server, no service
  gnuplot-nox python3 python3-numpy procps
  python3-pytest python3-pip python3-setuptools python3-pandas python3-matplotlib # python/ and its tests
  default-jdk-headless junit5 # the Java binding (java/) and its JUnit 5 tests
  prometheus # for promtool only: tests/cli/test_metrics.sh checks /metrics with it
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# Debian's prometheus package also installs a Prometheus server, which its postinst enables and
# starts where systemd runs; only promtool is wanted, so a server this script brought is stopped
# and disabled again.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now prometheus.service >&2 2>/dev/null || true
fi
# Likewise Debian's postgresql creates and starts a cluster where systemd runs; the tests start
# their own throwaway server, so a service this script brought is stopped and disabled again.
if [[ " ${missing[*]} " == *" postgresql "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now postgresql.service >&2 2>/dev/null || true
fi
