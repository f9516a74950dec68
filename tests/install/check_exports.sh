#!/usr/bin/env bash
# The installed libraries' symbols are their documented API and nothing else (libldpb-sim's at the
# end):
#   - every symbol the shared library exports (nm -D --defined-only) starts with ldpb_, and none
#     is protobuf-c generated code (ldpb__v1__...: descriptors, pack/unpack);
#   - the exported set is exactly the functions declared LDPB_API in the installed headers (a
#     declared function missing from the library fails, and so does an export no header declares);
#   - the static library defines the same global symbols and no other (no internal helper such as
#     ledger_parse can clash with an app's own symbols).
#
#   check_exports.sh PREFIX LIBDIR INCLUDEDIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 PREFIX LIBDIR INCLUDEDIR" >&2; exit 2; }
prefix=$1 libdir=$2 incdir=$3

fail() { echo "FAIL: $*" >&2; exit 1; }
so="$prefix/$libdir/libldpb-client.so"
ar="$prefix/$libdir/libldpb-client.a"
if [ ! -f "$so" ] || [ ! -f "$ar" ]; then fail "no installed library in $prefix/$libdir"; fi

# Declared: the identifier before the first '(' on each line that starts with LDPB_API; sim.h is
# libldpb-sim's header (checked at the end), the others libldpb-client's.
api_of() {
  cat "$@" | sed -n 's/^LDPB_API [^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p' \
    | LC_ALL=C sort -u
}
declared=$(api_of $(ls "$prefix/$incdir"/ldpb/*.h | grep -v '/sim\.h$'))
[ "$(echo "$declared" | wc -l)" -ge 40 ] || fail "found only $(echo "$declared" | wc -l) LDPB_API declarations"

exported=$(nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | LC_ALL=C sort -u)
bad=$(echo "$exported" | grep -v '^ldpb_' || true)
[ -z "$bad" ] || fail "exported symbols without the ldpb_ prefix:"$'\n'"$bad"
gen=$(echo "$exported" | grep '^ldpb__' || true)
[ -z "$gen" ] || fail "generated protobuf-c symbols are exported:"$'\n'"$gen"
if [ "$exported" != "$declared" ]; then
  diff <(echo "$declared") <(echo "$exported") >&2 || true
  fail "exported symbols (>) differ from the LDPB_API declarations of the installed headers (<)"
fi

globals=$(nm -g --defined-only "$ar" | awk 'NF >= 3 { print $3 }' | LC_ALL=C sort -u)
if [ "$globals" != "$declared" ]; then
  diff <(echo "$declared") <(echo "$globals") >&2 || true
  fail "global symbols of libldpb-client.a (>) differ from the LDPB_API declarations (<)"
fi

# libldpb-sim (ldpb/sim.h): exactly its header's API; its copies of common and the policies stay
# internal, so it loads beside libldpb-client without a clash.
sim_so="$prefix/$libdir/libldpb-sim.so"
[ -f "$sim_so" ] || fail "no installed libldpb-sim.so in $prefix/$libdir"
sim_declared=$(api_of "$prefix/$incdir/ldpb/sim.h")
sim_exported=$(nm -D --defined-only "$sim_so" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | LC_ALL=C sort -u)
if [ "$sim_exported" != "$sim_declared" ]; then
  diff <(echo "$sim_declared") <(echo "$sim_exported") >&2 || true
  fail "libldpb-sim's exported symbols (>) differ from the LDPB_API declarations of ldpb/sim.h (<)"
fi

echo "check_exports: $(echo "$exported" | wc -l) symbols exported by libldpb-client and" \
  "$(echo "$sim_exported" | wc -l) by libldpb-sim, all ldpb_, exactly the declared API"
