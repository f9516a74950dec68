#!/usr/bin/env bash
# The installed headers stand alone: each compiles by itself with nothing but the prefix's include
# directory (so none includes a header that is not installed, such as the generated ldpb.pb-c.h),
# as C11 under strict warnings and as C++; and a C++ program calling a function of each header
# links against the installed library (which fails without the headers' extern "C").
#
#   check_headers.sh PREFIX INCLUDEDIR LIBDIR CC CXX WORK SANITIZE
# CXX may be "" to skip the C++ checks; SANITIZE is the build's LDPB_SANITIZE ("" if none): a
# sanitized library needs its runtime linked into the program.
set -euo pipefail
[ $# -eq 7 ] || { echo "usage: $0 PREFIX INCLUDEDIR LIBDIR CC CXX WORK SANITIZE" >&2; exit 2; }
prefix=$1 incdir=$2 libdir=$3 cc=$4 cxx=$5 work=$6 sanitize=$7
san=()
[ -z "$sanitize" ] || san=("-fsanitize=$sanitize")

fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

headers=$(cd "$prefix/$incdir/ldpb" && find . -maxdepth 1 -name '*.h' | sed 's|^\./||' | LC_ALL=C sort)
[ -n "$headers" ] || fail "no headers in $prefix/$incdir/ldpb"
n=0
for h in $headers; do
  # Twice: the include guard; the typedef keeps the unit non-empty for a macro-only header.
  printf '#include <ldpb/%s>\n#include <ldpb/%s>\ntypedef int header_check;\n' "$h" "$h" >"$work/$h.c"
  "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$prefix/$incdir" "$work/$h.c" \
    || fail "ldpb/$h does not compile alone as C11"
  if [ -n "$cxx" ]; then
    "$cxx" -std=c++11 -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$prefix/$incdir" "$work/$h.c" \
      || fail "ldpb/$h does not compile as C++"
  fi
  n=$((n + 1))
done

if [ -n "$cxx" ]; then
  cat >"$work/linkage.cc" <<'CC'
// One function from each header, called from C++: a header without extern "C" leaves a mangled
// name the library does not define.
#include <ldpb/ldpb.h>
#include <cstdio>
#include <cstring>
int main()
{
    ldpb_rng_free(nullptr);                                  // rng.h
    ldpb_mech_free(nullptr);                                 // mech.h
    ldpb_ledger_close(nullptr);                              // ledger.h
    ldpb_client_free(nullptr);                               // client.h
    const char *ok = ldpb_strerror(LDPB_OK);                 // err.h
    std::printf("%s\n", ldpb_client_mech_name(LDPB_CLIENT_MECH_LINEAR));
    return ok != nullptr && std::strlen(ok) > 0 ? 0 : 1;
}
CC
  "$cxx" -std=c++11 -Wall -Wextra -Werror "${san[@]}" -I"$prefix/$incdir" "$work/linkage.cc" \
    -L"$prefix/$libdir" -lldpb-client -Wl,-rpath,"$prefix/$libdir" -o "$work/linkage" \
    || fail "a C++ program calling each header's functions does not link (extern \"C\"?)"
  [ "$("$work/linkage")" = linear ] || fail "the C++ program did not run"
  echo "check_headers: $n headers compile alone as C11 and C++; C++ links and runs"
else
  echo "check_headers: $n headers compile alone as C11 (no C++ compiler: C++ checks skipped)"
fi
