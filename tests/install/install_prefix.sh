#!/usr/bin/env bash
# `cmake --install` of the build into a fresh prefix, then the layout: exactly the expected files
# (the client library and the simulator's libldpb-sim with their SONAME links, the app-facing headers and nothing private, the CMake
# package, ldpb.pc, the programs, the systemd unit and example config), the install-time
# rewrites (ldpb.pc's prefix, the unit's ExecStart), and the same install staged under DESTDIR.
#
#   install_prefix.sh CMAKE BUILD_DIR PREFIX LIBDIR INCLUDEDIR BINDIR DATADIR VERSION SOVERSION TOOLS
set -euo pipefail
[ $# -eq 10 ] || { echo "usage: $0 CMAKE BUILD PREFIX LIBDIR INCLUDEDIR BINDIR DATADIR VERSION SOVERSION TOOLS" >&2; exit 2; }
cmake=$1 build=$2 prefix=$3 libdir=$4 incdir=$5 bindir=$6 datadir=$7 version=$8 so=$9 tools=${10}

fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || { cat "$prefix.log" >&2; fail "cmake --install"; }

# The exact file list (symlinks included); ldpbTargets-<config>.cmake is named by the build type.
expected=$(
  {
    [ "$tools" = 1 ] && echo "$bindir/ldpb"
    echo "$bindir/ldpb-aggregator"
    for h in client.h err.h export.h ldpb.h ledger.h mech.h rng.h sim.h; do echo "$incdir/ldpb/$h"; done
    echo "$libdir/libldpb-client.so"
    echo "$libdir/libldpb-client.so.$so"
    echo "$libdir/libldpb-client.so.$version"
    echo "$libdir/libldpb-sim.so"
    echo "$libdir/libldpb-sim.so.$so"
    echo "$libdir/libldpb-sim.so.$version"
    echo "$libdir/libldpb-client.a"
    for f in ldpbConfig.cmake ldpbConfigVersion.cmake ldpbTargets.cmake ldpbTargets-CONFIG.cmake; do
      echo "$libdir/cmake/ldpb/$f"
    done
    echo "$libdir/pkgconfig/ldpb.pc"
    echo "$datadir/ldpb/aggregator.example.conf"
    echo "$datadir/ldpb/ldpb-aggregator.service"
  } | LC_ALL=C sort)
actual=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' \
  | sed 's|/ldpbTargets-[a-z]*\.cmake$|/ldpbTargets-CONFIG.cmake|' | LC_ALL=C sort)
if [ "$expected" != "$actual" ]; then
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  fail "installed files differ from the expected list (< expected, > installed)"
fi

# The shared library: SONAME libldpb-client.so.<SOVERSION>; the links point the usual way.
lib="$prefix/$libdir/libldpb-client.so.$version"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libldpb-client.so.$so" ] || fail "SONAME is '$soname', expected libldpb-client.so.$so"
[ "$(readlink "$prefix/$libdir/libldpb-client.so.$so")" = "libldpb-client.so.$version" ] \
  || fail "libldpb-client.so.$so does not link to libldpb-client.so.$version"
[ "$(readlink "$prefix/$libdir/libldpb-client.so")" = "libldpb-client.so.$so" ] \
  || fail "libldpb-client.so does not link to libldpb-client.so.$so"

# Install-time rewrites: the .pc names this prefix and version; the unit starts this daemon.
pc="$prefix/$libdir/pkgconfig/ldpb.pc"
grep -qx "prefix=$prefix" "$pc" || fail "ldpb.pc: no 'prefix=$prefix'"
grep -qx "Version: $version" "$pc" || fail "ldpb.pc: no 'Version: $version'"
unit="$prefix/$datadir/ldpb/ldpb-aggregator.service"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ "$exec_start" = "$prefix/$bindir/ldpb-aggregator" ] || fail "unit ExecStart is '$exec_start'"
[ -x "$exec_start" ] || fail "unit ExecStart $exec_start is not an executable"
[ "$("$exec_start" --version)" = "ldpb-aggregator $version" ] || fail "$exec_start --version"
# systemd's own parser, where installed: it exits 0 on unknown keys or bad values but says so.
if command -v systemd-analyze >/dev/null; then
  v=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $v"
  [ -z "$v" ] || fail "systemd-analyze verify $unit:"$'\n'"$v"
else
  echo "install_prefix: no systemd-analyze, the unit file is not verified"
fi

# Staged: DESTDIR holds every file, which names the final prefix; nothing lands outside it.
stage="$prefix.destdir"
final="/opt/ldpb-destdir-test-$$"
rm -rf "$stage"
DESTDIR="$stage" "$cmake" --install "$build" --prefix "$final" >"$stage.log" 2>&1 \
  || { cat "$stage.log" >&2; fail "DESTDIR install"; }
[ ! -e "$final" ] || fail "DESTDIR install wrote into $final"
staged=$(cd "$stage$final" && find . \( -type f -o -type l \) | sed 's|^\./||' \
  | sed 's|/ldpbTargets-[a-z]*\.cmake$|/ldpbTargets-CONFIG.cmake|' | LC_ALL=C sort)
[ "$staged" = "$expected" ] || fail "DESTDIR install: files differ from the expected list"
grep -qx "prefix=$final" "$stage$final/$libdir/pkgconfig/ldpb.pc" || fail "DESTDIR: ldpb.pc prefix"
grep -q "^ExecStart=$final/$bindir/ldpb-aggregator " \
  "$stage$final/$datadir/ldpb/ldpb-aggregator.service" || fail "DESTDIR: unit ExecStart"
rm -rf "$stage" "$stage.log"

echo "install_prefix: $(echo "$actual" | wc -l) files in $prefix, as expected"
