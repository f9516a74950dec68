#!/bin/sh
# Exits 0 if this user may mount a tmpfs in a private mount namespace (what
# test_daemon_full_disk does); CMake registers that test only then.
d=$(mktemp -d) || exit 1
unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs '$d' && umount '$d'" >/dev/null 2>&1
r=$?
rmdir "$d"
exit $r
