#!/usr/bin/env bash
# Apps built against the installed package, as docs/install.md tells an app developer:
#   - CMake: tests/install/consumer (find_package(ldpb CONFIG), ldpb::client and
#     ldpb::client_static) with only the prefix on CMAKE_PREFIX_PATH;
#   - pkg-config: `pkg-config --cflags --libs ldpb` (shared) and `pkg-config --static --libs ldpb`
#     with libldpb-client.a.
# Every quickstart built runs (it needs no server): a report, a retry returning the same report,
# and the ledger charged once. client_example is built here; install_example_client runs it.
#
#   build_consumers.sh CMAKE GENERATOR CC PREFIX LIBDIR SOURCE_DIR WORK VERSION SANITIZE
# SANITIZE is the build's LDPB_SANITIZE ("" if none): a sanitized library needs its runtime in
# the program, so the consumers are built with the same -fsanitize.
set -euo pipefail
[ $# -eq 9 ] || { echo "usage: $0 CMAKE GENERATOR CC PREFIX LIBDIR SOURCE_DIR WORK VERSION SANITIZE" >&2; exit 2; }
cmake=$1 generator=$2 cc=$3 prefix=$4 libdir=$5 src=$6 work=$7 version=$8 sanitize=$9

fail() { echo "FAIL: $*" >&2; exit 1; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
san=()
[ -z "$sanitize" ] || san=("-fsanitize=$sanitize" -fno-omit-frame-pointer)

# quickstart twice on a fresh ledger: the second run finds the report the first one stored.
run_quickstart() {
  local exe=$1 ledger out
  ledger="$work/$(basename "$1").ledger"
  rm -f "$ledger" "$ledger.lock"
  "$exe" "$ledger" 4.0 >/dev/null || fail "$exe (first run)"
  out=$("$exe" "$ledger" 4.0) || fail "$exe (second run)"
  grep -q 'retry returns the same report: yes' <<<"$out" || fail "$exe: $out"
  grep -q 'spent 1.000000' <<<"$out" || fail "$exe: the ledger was not charged once: $out"
  rm -f "$ledger" "$ledger.lock"
}
# (grep reads a here-string, not a pipe: with pipefail, grep -q closing a pipe early would fail.)
links_shared() { grep -qx 'libldpb-client\.so\..*' <<<"$(needed "$1")" || fail "$1 does not use libldpb-client.so"; }
links_static() { ! grep -q '^libldpb-client' <<<"$(needed "$1")" || fail "$1 uses libldpb-client.so, not the archive"; }

rm -rf "$work"
mkdir -p "$work/pc"

# ---- CMake package ---------------------------------------------------------------------------
cflags=""
[ -z "$sanitize" ] || cflags="-fsanitize=$sanitize -fno-omit-frame-pointer"
"$cmake" -S "$src/tests/install/consumer" -B "$work/cmake" -G "$generator" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" \
  -DLDPB_EXAMPLES_DIR="$src/examples" -DLDPB_EXPECT_VERSION="$version" >"$work/cmake.log" 2>&1 \
  || { cat "$work/cmake.log" >&2; fail "configuring the CMake consumer"; }
grep -q "ldpb $version from $prefix/" "$work/cmake.log" || fail "find_package found another ldpb: $(grep 'ldpb ' "$work/cmake.log")"
"$cmake" --build "$work/cmake" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; fail "building the CMake consumer"; }
links_shared "$work/cmake/quickstart"
links_shared "$work/cmake/client_example"
links_static "$work/cmake/quickstart_static"
run_quickstart "$work/cmake/quickstart"
run_quickstart "$work/cmake/quickstart_static"

# The version file: this version is accepted, the next minor (0.x) or major version is not.
mkdir -p "$work/version"
cat >"$work/version/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.21)
project(version_check LANGUAGES C) # C: the search of lib/<multiarch>/cmake needs it
find_package(ldpb ${WANT} CONFIG QUIET)
if(ldpb_FOUND AND NOT EXPECT)
  message(FATAL_ERROR "find_package(ldpb ${WANT}) accepted ldpb ${ldpb_VERSION}")
elseif(NOT ldpb_FOUND AND EXPECT)
  message(FATAL_ERROR "find_package(ldpb ${WANT}) did not find ldpb")
endif()
CM
IFS=. read -r major minor _ <<<"$version"
if [ "$major" = 0 ]; then next="0.$((minor + 1))"; else next="$((major + 1)).0"; fi
for case in "$major.$minor:ON" "$next:OFF"; do
  rm -rf "$work/version/build"
  "$cmake" -S "$work/version" -B "$work/version/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DWANT="${case%%:*}" -DEXPECT="${case##*:}" >"$work/version.log" 2>&1 \
    || { cat "$work/version.log" >&2; fail "find_package(ldpb ${case%%:*}) against $version"; }
done

# ---- pkg-config ------------------------------------------------------------------------------
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ "$(pkg-config --modversion ldpb)" = "$version" ] || fail "pkg-config --modversion ldpb"
strict=(-std=c11 -Wall -Wextra -Wpedantic -Werror "${san[@]}")
# shellcheck disable=SC2046  # word splitting of pkg-config's output is intended
"$cc" "${strict[@]}" "$src/examples/quickstart.c" $(pkg-config --cflags --libs ldpb) \
  -Wl,-rpath,"$prefix/$libdir" -o "$work/pc/quickstart" || fail "cc quickstart.c \$(pkg-config --cflags --libs ldpb)"
links_shared "$work/pc/quickstart"
run_quickstart "$work/pc/quickstart"

# Static: --static adds the private dependencies; -Bstatic picks the archive for ldpb alone.
# --as-needed drops what the dependencies' own Libs.private list but nothing here uses.
libs=$(pkg-config --static --libs ldpb)
case " $libs " in *" -lldpb-client "*) ;; *) fail "pkg-config --static --libs ldpb: no -lldpb-client: $libs" ;; esac
libs=${libs/-lldpb-client/-Wl,-Bstatic -lldpb-client -Wl,-Bdynamic}
# shellcheck disable=SC2046,SC2086
"$cc" "${strict[@]}" "$src/examples/quickstart.c" $(pkg-config --static --cflags ldpb) \
  -Wl,--as-needed $libs -o "$work/pc/quickstart_static" || fail "cc quickstart.c \$(pkg-config --static --libs ldpb)"
links_static "$work/pc/quickstart_static"
run_quickstart "$work/pc/quickstart_static"

echo "build_consumers: CMake (ldpb::client, ldpb::client_static) and pkg-config (shared, static) consumers built and run"
