#!/usr/bin/env bash
# The client's footprint, reproducibly (docs/install.md, "Footprint"):
#   1. what a minimal app (bench/footprint/minimal.c: new, assign, report, free) grows by when it
#      links libldpb-client.a statically, stripped, in text/data/bss, against the same program
#      without the library (baseline.c), for x86-64, aarch64 and armhf, in two configurations:
#      "release" (CMAKE_BUILD_TYPE=Release) and "small" (MinSizeRel, -ffunction-sections
#      -fdata-sections, the app linked with --gc-sections); plus the shared libraries it needs;
#   2. on x86-64 against the real aggregator over tcp://127.0.0.1 (bench/footprint/measure.c):
#      heap allocations per client and per report, resident memory, CPU per report.
#
#   footprint.sh [--host-build DIR] [--cycles N] [--arch "x86_64 aarch64 armhf"]
#
# DIR is a native build of the whole project (default build/test); the client-only builds go to
# build/footprint-ARCH-CONFIG.
set -euo pipefail
cd "$(dirname "$0")/.."

host=build/test cycles=2000 archs="x86_64 aarch64 armhf"
while [ $# -gt 0 ]; do
  case $1 in
    --host-build) host=$2; shift 2 ;;
    --cycles) cycles=$2; shift 2 ;;
    --arch) archs=$2; shift 2 ;;
    *) echo "usage: $0 [--host-build DIR] [--cycles N] [--arch LIST]" >&2; exit 2 ;;
  esac
done

bash scripts/deps.sh
cross=()
for a in $archs; do [ "$a" = x86_64 ] || cross+=("$a"); done
[ ${#cross[@]} -eq 0 ] || bash scripts/deps-arm.sh "${cross[@]}"
jobs=$(nproc)
work=$(mktemp -d)
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. sizes ----------------------------------------------------------------------------------
tool_prefix() {
  case $1 in
    x86_64) echo "" ;;
    aarch64) echo aarch64-linux-gnu- ;;
    armhf) echo arm-linux-gnueabihf- ;;
  esac
}
triplet() {
  case $1 in
    x86_64) echo x86_64-linux-gnu ;;
    aarch64) echo aarch64-linux-gnu ;;
    armhf) echo arm-linux-gnueabihf ;;
  esac
}

# "text data bss" of a stripped copy of $1.
sizes_of() {
  local p=$1 prefix=$2
  cp "$p" "$work/stripped"
  "${prefix}strip" "$work/stripped"
  "${prefix}size" "$work/stripped" | awk 'NR == 2 { print $1, $2, $3 }'
}

printf '== 1. what libldpb-client.a adds to a minimal app (stripped, bytes) ==\n'
printf '%-8s %-8s %9s %7s %6s %9s   %s\n' arch config text data bss total "app total (text+data+bss)"
for a in $archs; do
  prefix=$(tool_prefix "$a")
  t=$(triplet "$a")
  for cfg in release small; do
    b=build/footprint-$a-$cfg
    args=(-DLDPB_CLIENT_ONLY=ON)
    # The toolchain file is read on the first configure only (CMake ignores it later).
    [ "$a" = x86_64 ] || [ -f "$b/CMakeCache.txt" ] ||
      args+=(-DCMAKE_TOOLCHAIN_FILE="cmake/toolchain-$a.cmake")
    if [ "$cfg" = release ]; then
      args+=(-DCMAKE_BUILD_TYPE=Release)
      app_flags=(-O2) link_flags=()
    else
      args+=(-DCMAKE_BUILD_TYPE=MinSizeRel "-DCMAKE_C_FLAGS=-ffunction-sections -fdata-sections")
      app_flags=(-Os -ffunction-sections -fdata-sections) link_flags=(-Wl,--gc-sections)
    fi
    cmake -S . -B "$b" -G Ninja "${args[@]}" >/dev/null
    cmake --build "$b" -j "$jobs" --target ldpb_client_static >/dev/null
    lib=$(find "$b" -name libldpb-client.a -print -quit)
    libdirs=()
    [ "$a" = x86_64 ] || libdirs=(-L"/opt/ldpb-cross/$t/usr/lib/$t")
    cc=${prefix}gcc
    "$cc" "${app_flags[@]}" bench/footprint/baseline.c -o "$work/baseline" "${link_flags[@]}"
    "$cc" "${app_flags[@]}" -Iclient/include -Icommon/include bench/footprint/minimal.c "$lib" \
      "${libdirs[@]}" -lsodium -lnanomsg -lprotobuf-c -lm -o "$work/minimal" "${link_flags[@]}"
    read -r bt bd bb < <(sizes_of "$work/baseline" "$prefix")
    read -r mt md mb < <(sizes_of "$work/minimal" "$prefix")
    printf '%-8s %-8s %9d %7d %6d %9d   %d\n' "$a" "$cfg" $((mt - bt)) $((md - bd)) $((mb - bb)) \
      $((mt + md + mb - bt - bd - bb)) $((mt + md + mb))
  done
done

printf '\n== the shared libraries the client needs (stripped text+data+bss, bytes) ==\n'
printf '%-8s %12s %12s %14s\n' arch libsodium libnanomsg libprotobuf-c
for a in $archs; do
  prefix=$(tool_prefix "$a")
  t=$(triplet "$a")
  dir=/usr/lib/$t
  [ "$a" = x86_64 ] || dir=/opt/ldpb-cross/$t/usr/lib/$t
  row=()
  for l in libsodium.so.23 libnanomsg.so.5 libprotobuf-c.so.1; do
    read -r x y z < <(sizes_of "$(realpath "$dir/$l")" "$prefix")
    row+=($((x + y + z)))
  done
  printf '%-8s %12d %12d %14d\n' "$a" "${row[@]}"
done

# ---- 2. run time, x86-64, against the real aggregator --------------------------------------------
if [ ! -f "$host/CMakeCache.txt" ]; then
  cmake -S . -B "$host" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$host" -j "$jobs" --target ldpb-aggregator ldpb footprint_measure >/dev/null
prog() { realpath "$(find "$host" -name "$1" -type f -perm -u+x -print -quit)"; }
aggregator=$(prog ldpb-aggregator) ldpb=$(prog ldpb) measure=$(prog footprint_measure)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=tcp://127.0.0.1:$port
"$ldpb" keygen --out "$work/keys" >/dev/null
"$aggregator" --listen "$url" --state-dir "$work/state" --key "$work/keys/aggregator.key" \
  --arms 3 --policy ldp-ts-b --mechanism linear --epsilon 1 --log-level warn \
  2>"$work/aggregator.log" &
daemon_pid=$!
for _ in $(seq 1 100); do
  "$ldpb" status --connect "$url" --server-key "$work/keys/aggregator.pub" --timeout-ms 200 \
    >/dev/null 2>&1 && break
  sleep 0.1
done
mkdir -p "$work/device"
printf '\n== 2. x86-64 at run time: %s assign + report cycles against ldpb-aggregator (ldp-ts-b, linear, epsilon 1), durable ledger file ==\n' "$cycles"
"$measure" "$url" "$work/keys/aggregator.pub" "$work/device" "$cycles"
kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=""
