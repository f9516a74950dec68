#!/usr/bin/env bash
# The client library builds alone: the source tree configured with LDPB_CLIENT_ONLY=ON while
# pkg-config sees nothing but libsodium, nanomsg and libprotobuf-c (copies of their .pc files in
# a directory of their own: GSL, SQLite, libmicrohttpd, inih and cmocka are invisible), then
# built, and installed: the libraries, headers and package files, and no program.
#
#   client_only.sh CMAKE GENERATOR CC SOURCE_DIR WORK BUILD_TYPE
set -euo pipefail
[ $# -eq 6 ] || { echo "usage: $0 CMAKE GENERATOR CC SOURCE_DIR WORK BUILD_TYPE" >&2; exit 2; }
cmake=$1 generator=$2 cc=$3 src=$4 work=$5 build_type=$6

fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/pkgconfig"
for m in libsodium nanomsg libprotobuf-c; do
  dir=$(pkg-config --variable=pcfiledir "$m") || fail "pkg-config does not know $m"
  cp "$dir/$m.pc" "$work/pkgconfig/"
done
export PKG_CONFIG_LIBDIR="$work/pkgconfig" PKG_CONFIG_PATH=""
unset PKG_CONFIG_SYSROOT_DIR CMAKE_PREFIX_PATH
pkg-config --exists libsodium nanomsg libprotobuf-c || fail "the three modules are not usable alone"
# The control: the rest of the project's dependencies must be out of sight, or this proves nothing.
for m in gsl sqlite3 libmicrohttpd inih cmocka; do
  ! pkg-config --exists "$m" || fail "pkg-config still finds $m"
done

"$cmake" -S "$src" -B "$work/build" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE="$build_type" -DLDPB_CLIENT_ONLY=ON >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; fail "configuring with LDPB_CLIENT_ONLY=ON"; }
"$cmake" --build "$work/build" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; fail "building with LDPB_CLIENT_ONLY=ON"; }
for d in aggregator tools bench tests; do
  [ ! -e "$work/build/$d" ] || fail "LDPB_CLIENT_ONLY=ON configured $d"
done

"$cmake" --install "$work/build" --prefix "$work/prefix" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log" >&2; fail "installing the client-only build"; }
ls "$work/prefix"/lib*/libldpb-client.so.* "$work/prefix"/lib*/libldpb-client.a \
  "$work/prefix"/include/ldpb/ldpb.h "$work/prefix"/lib*/pkgconfig/ldpb.pc >/dev/null \
  || fail "the client-only install lacks the library, its headers or ldpb.pc"
for d in bin share; do
  [ ! -e "$work/prefix/$d" ] || fail "the client-only install has $d/ (programs or daemon files)"
done

rm -rf "$work/build"
echo "client_only: configured, built and installed with only libsodium, nanomsg, libprotobuf-c"
