#!/usr/bin/env bash
# The Python package installs offline with pip from the source tree (no build isolation, no
# index: setuptools and numpy come from Debian) and, installed, finds the C libraries through
# LDPB_LIBRARY_PATH: here the libraries of an ldpb installed with `cmake --install` (the
# install_prefix fixture), or, without LDPB_LIBRARY_PATH, says clearly what is missing.
#
#   pip_install.sh PYTHON SOURCE_DIR PREFIX LIBDIR WORK_DIR
set -euo pipefail
[ $# -eq 5 ] || { echo "usage: $0 PYTHON SOURCE_DIR PREFIX LIBDIR WORK_DIR" >&2; exit 2; }
py=$1 src=$2 prefix=$3 libdir=$4 work=$5

fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
# A copy, so pip's in-tree build files never land in the source tree.
cp -r "$src/python" "$work/src"
rm -rf "$work/src/tests"
(cd "$work" && "$py" -m pip install --no-build-isolation --no-deps --no-index --quiet \
  --disable-pip-version-check --target "$work/site" "$work/src") >"$work/pip.log" 2>&1 \
  || { cat "$work/pip.log" >&2; fail "pip install"; }
[ -f "$work/site/ldpb/__init__.py" ] || fail "pip installed no ldpb package"

cd "$work"
export PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1
# Installed, against the installed libraries only.
LDPB_LIBRARY_PATH="$prefix/$libdir" "$py" - <<'PY' || fail "the installed package did not run"
import ldpb, numpy as np
assert ldpb.__file__.startswith(__import__("os").environ["PYTHONPATH"]), ldpb.__file__
y = ldpb.privatize(np.array([0.1, 0.9]), "linear", 1.0, seed="pip")
assert set(y) <= {0.0, 1.0}
r = ldpb.simulate(means=[0.9, 0.5], algorithms="ucb1", horizon=500, trials=2, threads=1)
assert r.mean.shape == (1, len(r.t))
p = ldpb.Policy("ts", 3, seed="pip")
p.observe(p.choose(), 1.0)
paths = ldpb._lib.loaded_paths()
assert all(v.startswith(__import__("os").environ["LDPB_LIBRARY_PATH"]) for v in paths.values()), paths
print("installed package OK:", paths)
PY
# Without any library in reach: import works, the first call names what is missing.
out=$(env -u LDPB_LIBRARY_PATH "$py" -c 'import ldpb
try:
    ldpb.privatize([0.5])
except ldpb.LibraryNotFound as e:
    print(e)' 2>&1)
printf '%s\n' "$out" | grep -q 'cannot load libldpb-client.so.0' || fail "no clear message: $out"
printf '%s\n' "$out" | grep -q 'LDPB_LIBRARY_PATH' || fail "the message does not name LDPB_LIBRARY_PATH: $out"
echo "pip_install: OK"
