#!/usr/bin/env bash
# The client library on ARM: cross-builds the client-only configuration (LDPB_CLIENT_ONLY, the
# library, examples/client_example.c and quickstart.c) with its unit tests (LDPB_CLIENT_TESTS)
# for each target with Debian's cross gcc (cmake/toolchain-TARGET.cmake), and runs them through
# CTest under qemu-user, including the end-to-end tests of the ARM client and example against
# the host's (x86-64) ldpb-aggregator over ipc:// and tcp://127.0.0.1.
#
#   test-arm.sh [--host-build DIR] [TARGET]...     TARGET: aarch64, armhf (default: both)
#
# DIR is a native build of the whole project (default build/test, as scripts/test.sh makes it);
# its ldpb-aggregator and ldpb are built if missing. The cross builds go to build/TARGET.
# Extra ctest arguments may be given in LDPB_ARM_CTEST_ARGS (e.g. "-LE stats").
set -euo pipefail
cd "$(dirname "$0")/.."

host=build/test
if [ "${1:-}" = "--host-build" ]; then
  host=$2
  shift 2
fi
[ $# -gt 0 ] || set -- aarch64 armhf
for t in "$@"; do
  [ -f "cmake/toolchain-$t.cmake" ] || { echo "test-arm.sh: unknown target '$t'" >&2; exit 2; }
done

bash scripts/deps.sh
bash scripts/deps-arm.sh "$@"
jobs=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1

if [ ! -f "$host/CMakeCache.txt" ]; then
  cmake -S . -B "$host" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$host" -j "$jobs" --target ldpb-aggregator ldpb
find_prog() {
  local p
  p=$(find "$host" -name "$1" -type f -perm -u+x -print -quit)
  [ -n "$p" ] || { echo "test-arm.sh: no $1 in $host" >&2; exit 1; }
  realpath "$p"
}
aggregator=$(find_prog ldpb-aggregator)
ldpb=$(find_prog ldpb)

for t in "$@"; do
  printf '\n==== %s: cross build, tests under qemu-user ====\n' "$t"
  cmake -S . -B "build/$t" -G Ninja -DCMAKE_TOOLCHAIN_FILE="cmake/toolchain-$t.cmake" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLDPB_CLIENT_ONLY=ON -DLDPB_CLIENT_TESTS=ON \
    -DLDPB_HOST_AGGREGATOR="$aggregator" -DLDPB_HOST_LDPB="$ldpb" >/dev/null
  cmake --build "build/$t" -j "$jobs"
  # shellcheck disable=SC2086 # LDPB_ARM_CTEST_ARGS is a list of arguments
  ctest --test-dir "build/$t" -j "$jobs" --timeout 1200 ${LDPB_ARM_CTEST_ARGS:-}
done
