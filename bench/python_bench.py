#!/usr/bin/env python3
"""The Python package's costs against the C side, measured in the same run (docs/python.md):

  privatize  CPU ns per value of ldpb.Mechanism.privatize on a float64 array (one C call)
             against bench_privatize_loop's C loop of ldpb_mech_privatize and its one C batch
             call (secure generator, one core);
  simulate   process CPU seconds of ldpb.simulate(..., threads=1) against `ldpb sim --threads 1`
             for the same batch (the engine is the same library; the difference is the wrapper);
  client     client-process CPU us per report of ldpb.Client against bench_client_loop (the C
             client), both reporting to one real ldpb-aggregator, two round trips per report and
             report_and_assign.

Figures are CPU time (time.process_time, getrusage of the children), medians of alternated runs,
so a shared machine slows both sides alike; the ratios are what to read. Prints figures only.

  python3 bench/python_bench.py [BUILD_DIR]        (default build/rel; needs numpy)
"""

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "rel"))
os.environ["LDPB_LIBRARY_PATH"] = BUILD
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import ldpb  # noqa: E402

REPS = 5


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def c_privatize_ns(mech: str, n: int) -> tuple:
    """bench_privatize_loop's CPU ns per value: a C loop of ldpb_mech_privatize, and one
    ldpb_mech_privatize_batch call (secure generator, epsilon 1, medians of 5)."""
    out = subprocess.run([os.path.join(BUILD, "bench", "bench_privatize_loop"), mech, str(n)],
                         check=True, capture_output=True, text=True).stdout.split("\t")
    return float(out[2]), float(out[4])


def py_privatize_ns(mech: str, n: int) -> float:
    m = ldpb.Mechanism(mech, 1.0)
    rng = ldpb.Rng()
    x = np.random.default_rng(1).uniform(size=n)
    m.privatize(x[:1000], rng)
    times = []
    for _ in range(REPS):
        t0 = time.process_time()
        m.privatize(x, rng)  # a fresh output array each call, as a user's call would
        times.append(time.process_time() - t0)
    return 1e9 * statistics.median(times) / n


def bench_privatize() -> None:
    print("== privatize: CPU ns per value, one core, secure generator (epsilon 1)")
    print(f"{'mechanism':<12} {'C loop':>8} {'C batch':>8} {'Python':>8} {'Py/C loop':>10} "
          f"{'Python values/s':>16}")
    for mech in ("linear", "quadratic", "exponential", "laplace"):
        n = 2_000_000 if mech == "laplace" else 5_000_000
        loops, batches, pys = [], [], []
        for _ in range(3):
            c_loop, c_batch = c_privatize_ns(mech, n)
            loops.append(c_loop)
            batches.append(c_batch)
            pys.append(py_privatize_ns(mech, n))
        cl, cb, py = (statistics.median(v) for v in (loops, batches, pys))
        print(f"{mech:<12} {cl:>8.1f} {cb:>8.1f} {py:>8.1f} {py / cl:>10.2f} "
              f"{1e3 / py:>14.1f} M")


SIM = dict(means=[0.9, 0.8, 0.7, 0.6, 0.5], algorithms=["ts", "ucb1", "ldp-ts-b", "dp-ucb"],
           mechanisms="linear", epsilons=[1], horizon=2_000_000, trials=4)


def cli_args() -> list:
    args = []
    for k, v in SIM.items():
        v = ",".join(str(x) for x in v) if isinstance(v, list) else str(v)
        args += [f"--{k.replace('_', '-')}", v]
    return args


def bench_simulate() -> None:
    print("\n== simulate: process CPU seconds, one engine thread, the same batch")
    print("   " + " ".join(cli_args()))
    tmp = tempfile.mkdtemp()
    c_times, py_times = [], []
    for _ in range(3):
        c0 = children_cpu()
        subprocess.run([os.path.join(BUILD, "tools", "ldpb"), "sim", *cli_args(), "--threads",
                        "1", "--no-plots", "--quiet", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        c_times.append(children_cpu() - c0)
        t0 = time.process_time()
        ldpb.simulate(threads=1, **SIM)
        py_times.append(time.process_time() - t0)
    c, p = statistics.median(c_times), statistics.median(py_times)
    print(f"ldpb sim (C)  {c:8.3f} s   runs {', '.join(f'{x:.3f}' for x in c_times)}")
    print(f"ldpb.simulate {p:8.3f} s   runs {', '.join(f'{x:.3f}' for x in py_times)}")
    print(f"ratio Python / C: {p / c:.3f}")


def start_daemon(tmp: str):
    ldpb_bin = os.path.join(BUILD, "tools", "ldpb")
    subprocess.run([ldpb_bin, "keygen", "--out", os.path.join(tmp, "keys")], check=True,
                   stdout=subprocess.DEVNULL)
    url = f"ipc://{tmp}/agg.sock"
    pub = os.path.join(tmp, "keys", "aggregator.pub")
    proc = subprocess.Popen([os.path.join(BUILD, "aggregator", "daemon", "ldpb-aggregator"),
                             "--listen", url, "--state-dir", os.path.join(tmp, "state"),
                             "--key", os.path.join(tmp, "keys", "aggregator.key"), "--arms",
                             "5", "--policy", "ldp-ts-b", "--mechanism", "linear",
                             "--epsilon", "1", "--log-level", "warn"],
                            stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with ldpb.Client(url, pub, timeout_ms=200, attempts=1) as c:
                c.status()
            return proc, url, pub
        except ldpb.LdpbError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the daemon did not start")


def py_client_us(url: str, pub: str, n: int, mode: str) -> float:
    with ldpb.Client(url, pub, lifetime_budget=1e6) as c:
        a = c.assign()
        t0 = time.process_time()
        for i in range(n):
            if mode == "report-and-assign":
                a, _ = c.report_and_assign(a, float(i & 1))
            else:
                c.report(a, float(i & 1))
                a = c.assign()
        return 1e6 * (time.process_time() - t0) / n


def c_client_us(url: str, pub: str, n: int, mode: str) -> float:
    out = subprocess.run([os.path.join(BUILD, "bench", "bench_client_loop"), url, pub, str(n),
                          mode], check=True, capture_output=True, text=True).stdout
    return float(out.split("\t")[3])


def bench_client(n: int = 3000) -> None:
    print(f"\n== client: client-process CPU us per report ({n} reports per run, one "
          "ldp-ts-b daemon on ipc://, in-memory ledgers)")
    tmp = tempfile.mkdtemp()
    proc, url, pub = start_daemon(tmp)
    try:
        for mode in ("two-trips", "report-and-assign"):
            cs, ps = [], []
            for _ in range(3):
                cs.append(c_client_us(url, pub, n, mode))
                ps.append(py_client_us(url, pub, n, mode))
            c, p = statistics.median(cs), statistics.median(ps)
            print(f"{mode:<18} C {c:7.2f} us   Python {p:7.2f} us   ratio {p / c:.2f}   "
                  f"(C runs {', '.join(f'{x:.1f}' for x in cs)}; Python "
                  f"{', '.join(f'{x:.1f}' for x in ps)})")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    print(f"build {BUILD}; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    bench_privatize()
    bench_simulate()
    bench_client()
    print(f"load average after: {os.getloadavg()}")
