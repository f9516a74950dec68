#!/usr/bin/env python3
"""Prints a TCP port on 127.0.0.1 that nothing holds now, for the shell tests' servers.

Drawn at random from outside the kernel's ephemeral range (net.ipv4.ip_local_port_range), as
tests/support/test_port.h does for the C tests: a port from that range (what a bind to port 0
returns) may be taken at any moment as the local end of another process's outgoing connection,
between this choice and the server's bind or while a server restarts on it (EADDRINUSE)."""
import random
import socket
import sys


def main():
    lo, hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        pass
    first, count = 10000, lo - 10000
    if count < 1000:  # the range starts too low: above it instead
        first, count = hi + 1, 65536 - (hi + 1)
    rng = random.SystemRandom()
    for _ in range(200):
        port = first + rng.randrange(count)
        s = socket.socket()
        try:
            # as the servers under test bind: a port whose last connection lingers in TIME_WAIT
            # is free for them too
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        print(port)
        return 0
    print("free_port.py: no free port found", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
