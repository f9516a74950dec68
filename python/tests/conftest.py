"""Fixtures of the Python tests: where the ldpb build is (its libraries, `ldpb` and
`ldpb-aggregator`), and a real aggregator daemon for the client tests.

The build directory comes from LDPB_BUILD_DIR (CTest sets it, and LDPB_LIBRARY_PATH), else the
first entry of LDPB_LIBRARY_PATH, else the repository's build/rel. A missing binary fails the
test that needs it: nothing here skips."""

import os
import random
import socket
import subprocess
import time

import pytest

import ldpb

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _build_dir() -> str:
    d = os.environ.get("LDPB_BUILD_DIR")
    if not d:
        paths = [p for p in os.environ.get("LDPB_LIBRARY_PATH", "").split(os.pathsep) if p]
        d = paths[0] if paths else os.path.join(REPO, "build", "rel")
        os.environ.setdefault("LDPB_LIBRARY_PATH", d)
    return os.path.abspath(d)


BUILD = _build_dir()


def tool(name: str) -> str:
    path = {"ldpb": os.path.join(BUILD, "tools", "ldpb"),
            "ldpb-aggregator": os.path.join(BUILD, "aggregator", "daemon",
                                            "ldpb-aggregator")}[name]
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} not built at {path} (set LDPB_BUILD_DIR to an ldpb build)")
    return path


def run_ldpb(*args: str, stdin: str = "") -> str:
    """Runs `ldpb ARGS...` and returns its stdout (it must exit 0)."""
    p = subprocess.run([tool("ldpb"), *args], input=stdin, capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0, f"ldpb {' '.join(args)}: exit {p.returncode}: {p.stderr}"
    return p.stdout


class Daemon:
    """An ldpb-aggregator on an ipc:// socket in a temporary directory."""

    def __init__(self, tmp: str, policy: str = "ldp-ts-b", arms: int = 3,
                 extra: tuple = ()) -> None:
        self.tmp = tmp
        run_ldpb("keygen", "--out", os.path.join(tmp, "keys"))
        self.pub = os.path.join(tmp, "keys", "aggregator.pub")
        self.url = f"ipc://{tmp}/agg.sock"
        self.log = open(os.path.join(tmp, "daemon.log"), "w")
        self.proc = subprocess.Popen(
            [tool("ldpb-aggregator"), "--listen", self.url, "--state-dir",
             os.path.join(tmp, "state"), "--key", os.path.join(tmp, "keys", "aggregator.key"),
             "--arms", str(arms), "--policy", policy, "--log-level", "warn", *extra],
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 20
        while True:
            try:
                with ldpb.Client(self.url, self.pub, timeout_ms=200, attempts=1) as c:
                    c.status()
                return
            except ldpb.LdpbError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    with open(os.path.join(tmp, "daemon.log")) as f:
                        pytest.fail("the daemon did not come up: " + f.read())
                time.sleep(0.05)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(str(tmp_path), extra=("--mechanism", "linear", "--epsilon", "1"))
    yield d
    assert d.stop() == 0, "the daemon must drain and exit 0 on SIGTERM"


def free_port() -> int:
    """A free port outside the kernel's ephemeral range (tests/support/free_port.py says why: a
    port from a bind to port 0 may be taken by another process's connection before the daemon
    binds it, or while it restarts on it)."""
    lo, hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        pass
    first, count = (10000, lo - 10000) if lo - 10000 >= 1000 else (hi + 1, 65535 - hi)
    rng = random.SystemRandom()
    for _ in range(200):
        port = first + rng.randrange(count)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise AssertionError("no free port outside the ephemeral range")


class Trap:
    """Stands in for a C library: any function looked up fails the test (to show an argument
    was refused in Python, before any C call)."""

    def __getattr__(self, name):
        raise AssertionError(f"C function {name} called")
