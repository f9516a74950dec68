#!/usr/bin/env bash
# Installs what cross-building and testing the client library for ARM needs (scripts/test-arm.sh,
# docs/install.md "ARM"): Debian's cross compiler and qemu-user (host packages), and the target
# architecture's libsodium, libprotobuf-c, nanomsg and cmocka (Debian's arm64 / armhf packages).
#
#   deps-arm.sh [aarch64|armhf]...        (default: both)
#
# The target's libraries are not installed with dpkg --add-architecture: libnanomsg5 and
# libnanomsg-dev are not multiarch (no Multi-Arch field), so they cannot sit beside the amd64 ones
# the native build needs, and a foreign architecture's index that the mirror serves inconsistently
# (armhf's bookworm-security index, here) makes every apt-get update on the machine fail. Instead
# the .debs are fetched with apt-get download through an apt state of their own (the machine's
# sources, the target architecture only, lists under /opt/ldpb-cross/apt-ARCH) and unpacked into
# /opt/ldpb-cross/TRIPLET, a sysroot outside dpkg's database (rm -rf removes it), with the
# pkg-config files pointed there. cmake/toolchain-*.cmake look there; the C library and loader
# come from the cross toolchain (/usr/TRIPLET, qemu's -L prefix).
#
# Idempotent and quiet: when everything is present it prints nothing and touches nothing.
set -euo pipefail

cross_root=${LDPB_CROSS_ROOT:-/opt/ldpb-cross}
[ $# -gt 0 ] || set -- aarch64 armhf
libs=(libsodium23 libsodium-dev libprotobuf-c1 libprotobuf-c-dev libnanomsg5 libnanomsg-dev
      libcmocka0 libcmocka-dev)
stamp_text="${libs[*]}"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "deps-arm.sh: need root or sudo" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

for target in "$@"; do
  case $target in
    aarch64) arch=arm64 triplet=aarch64-linux-gnu ;;
    armhf)   arch=armhf triplet=arm-linux-gnueabihf ;;
    *) echo "deps-arm.sh: unknown target '$target' (aarch64 or armhf)" >&2; exit 2 ;;
  esac
  missing=()
  for p in gcc-"$triplet" libc6-dev-"$arch"-cross qemu-user; do installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "deps-arm.sh: installing ${missing[*]}" >&2
    $SUDO apt-get -o DPkg::Lock::Timeout=600 -qq update >&2
    $SUDO apt-get -o DPkg::Lock::Timeout=600 -qq install -y --no-install-recommends \
      "${missing[@]}" >&2
  fi

  sysroot=$cross_root/$triplet
  if [ "$(cat "$sysroot/.complete" 2>/dev/null)" != "$stamp_text" ]; then
    echo "deps-arm.sh: unpacking Debian's $arch ${libs[*]} into $sysroot" >&2
    aptroot=$cross_root/apt-$arch
    $SUDO mkdir -p "$aptroot/lists/partial" "$aptroot/cache/archives/partial"
    $SUDO touch "$aptroot/status"
    apt_arch=(-qq -o APT::Architecture="$arch" -o APT::Architectures::="$arch"
              -o Dir::State::Lists="$aptroot/lists" -o Dir::State::status="$aptroot/status"
              -o Dir::Cache="$aptroot/cache" -o APT::Sandbox::User=root)
    # A suite whose index fails (see above) is left out; the download below fails, and says
    # so, if a package is then missing.
    $SUDO apt-get "${apt_arch[@]}" update >/dev/null 2>&1 || true
    tmp=$(mktemp -d)
    (cd "$tmp" && $SUDO apt-get "${apt_arch[@]}" download "${libs[@]/%/:$arch}" >&2)
    $SUDO rm -rf "$sysroot"
    $SUDO mkdir -p "$sysroot"
    for deb in "$tmp"/*.deb; do $SUDO dpkg-deb -x "$deb" "$sysroot"; done
    rm -rf "$tmp"
    for pc in "$sysroot/usr/lib/$triplet/pkgconfig"/*.pc; do
      $SUDO sed -i -e "s|^prefix=.*|prefix=$sysroot/usr|" -e "s|\(-[IL]\)/usr/|\1$sysroot/usr/|g" "$pc"
    done
    for m in libsodium libprotobuf-c nanomsg cmocka; do
      [ -f "$sysroot/usr/lib/$triplet/pkgconfig/$m.pc" ] \
        || { echo "deps-arm.sh: $m.pc missing after unpacking" >&2; exit 1; }
    done
    echo "$stamp_text" | $SUDO tee "$sysroot/.complete" >/dev/null
  fi
done
