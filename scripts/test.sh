#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine: installs what it needs, then
#   1. builds (RelWithDebInfo, -Werror) and runs every test through CTest;
#   2. builds and runs the suite again under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. builds the libFuzzer targets with clang and runs a short fuzzing smoke of each;
#   4. cross-builds the client library and its tests for aarch64 and runs them under qemu-user,
#      against the daemon of step 1 (scripts/test-arm.sh; armhf too with LDPB_TEST_ARMHF=1).
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1

step() { printf '\n==== %s ====\n' "$*"; }

step "build and test (RelWithDebInfo)"
cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j "$jobs"
ctest --test-dir build/test -j "$jobs" --timeout 900

step "build and test under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLDPB_SANITIZE=address,undefined \
  -DLDPB_BUILD_BENCH=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  ctest --test-dir build/asan -j "$jobs" --timeout 1800 -LE no-sanitize

step "libFuzzer smoke (clang)"
CC=clang cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLDPB_FUZZ=ON \
  -DLDPB_BUILD_BENCH=OFF >/dev/null
cmake --build build/fuzz -j "$jobs"
ctest --test-dir build/fuzz -j "$jobs" -L fuzz-smoke --timeout 600

step "aarch64: the client library cross-built, tested under qemu-user"
arm_targets=aarch64
[ "${LDPB_TEST_ARMHF:-0}" = 1 ] && arm_targets="aarch64 armhf"
# shellcheck disable=SC2086
bash scripts/test-arm.sh --host-build build/test $arm_targets

step "all suites passed"
