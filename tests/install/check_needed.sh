#!/usr/bin/env bash
# What the installed library and the apps built against it load: the shared library NEEDs only
# libsodium, libnanomsg, libprotobuf-c, libm and libc (no GSL, SQLite, libmicrohttpd, inih,
# pthread or sanitizer runtime), an app additionally libldpb-client itself; and at run time (ldd)
# nothing is loaded beyond those and what they load themselves.
#
#   check_needed.sh PREFIX LIBDIR [PROGRAM...]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PREFIX LIBDIR [PROGRAM...]" >&2; exit 2; }
prefix=$1 libdir=$2
shift 2

fail() { echo "FAIL: $*" >&2; exit 1; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# ldd's lines: "name => /path (addr)", "name (addr)", "/path/ld-linux... (addr)"; "not found".
loaded() { ldd "$1" | awk '{ n = $1; sub(".*/", "", n); print n }'; }
paths() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'; }

so="$prefix/$libdir/libldpb-client.so"
allowed='^(libsodium\.so\.[0-9]+|libnanomsg\.so\.[0-9]+|libprotobuf-c\.so\.[0-9]+|libm\.so\.[0-9]+|libc\.so\.[0-9]+|ld-linux[-a-z0-9_]*\.so\.[0-9]+)$'

check_needed() {
  local file=$1 re=$2 bad
  [ -n "$(needed "$file")" ] || fail "$file: no NEEDED entries (not a dynamic ELF file?)"
  bad=$(needed "$file" | grep -Ev "$re" || true)
  [ -z "$bad" ] || fail "$file NEEDs more than libsodium, libnanomsg, libprotobuf-c, libm, libc:"$'\n'"$bad"
}
check_needed "$so" "$allowed"
for m in sodium nanomsg protobuf-c; do
  grep -q "^lib$m\.so\." <<<"$(needed "$so")" || fail "$so does not NEED lib$m (is it the client library?)"
done

# Run time: the allowed libraries, what they load themselves (their own ldd), the vDSO and
# libldpb-client for apps.
out=$(ldd "$so")
if grep -q 'not found' <<<"$out"; then echo "$out" >&2; fail "$so: a dependency is not found"; fi
extra=$(for p in $(paths "$so"); do loaded "$p"; done | LC_ALL=C sort -u)
runtime_ok() {
  local n=$1
  [[ $n =~ $allowed ]] || [[ $n =~ ^linux-(vdso|gate)\.so\.[0-9]+$ ]] \
    || [[ $n =~ ^libldpb-client\.so\.[0-9]+$ ]] || grep -qxF "$n" <<<"$extra"
}
for f in "$so" "$@"; do
  if [ "$f" != "$so" ]; then
    check_needed "$f" "${allowed%)\$}|libldpb-client\.so\.[0-9]+)\$"
  fi
  out=$(LD_LIBRARY_PATH="$prefix/$libdir" ldd "$f")
  if grep -q 'not found' <<<"$out"; then echo "$out" >&2; fail "$f: a library is not found"; fi
  for n in $(LD_LIBRARY_PATH="$prefix/$libdir" loaded "$f"); do
    runtime_ok "$n" || fail "$f loads $n"$'\n'"$out"
  done
done
echo "check_needed: $so and $# programs need only libsodium, libnanomsg, libprotobuf-c, libm, libc"
