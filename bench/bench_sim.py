"""Simulator throughput: simulated accesses per second through Simulator.access (one C call per
array, the same inline pl_sim_access that -DPL_SIM workloads call per access).

Run: .venv/bin/python bench/bench_sim.py (add --fast for a quick look, -o FILE to keep the
JSON). pyperf reports seconds per access; the summary at the end turns them into accesses/s.
--cpu-time times with the thread's CPU clock instead of the wall clock: on a machine shared with
other busy processes the wall clock also counts the time they take the CPU away.

Access streams, 8-byte loads:
  seq8      sequential over 64 MiB: 7 of 8 accesses hit the line of the one before
  line      one access per 64-byte line, sequential over 256 MiB: every access a new line
  ws-32k    one access per line, round and round 32 KiB (the cache workload's pattern): every
            access a new line and an L1 hit
  rand-32k  uniform over 32 KiB: L1 hits in random ways, a new line nearly every time
  rand-1g   uniform over 1 GiB: misses everywhere, a new page every time
Configurations: this machine's L1D + DTLB (with and without miss classification), and the
whole default hierarchy (L1D, L2, LLC, DTLB, STLB, classification on).

The cache workload's simulated run against cachegrind is `python -m bench`'s
sim.vs_cachegrind.speedup.
"""

import os
import time

# numpy's OpenBLAS threads spin on the other core for a while after start-up; nothing here
# uses BLAS, and they would steal CPU from the measurement
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pyperf

from pagelab import Simulator, default_config

N = 1 << 21  # accesses per array: large next to the per-call cost, small next to the caches
TARGET = 1e8  # accesses/s for L1 + DTLB (issue 4)


def streams():
    rng = np.random.default_rng(0)
    eight = ~np.uint64(7)
    return {
        "seq8": np.arange(N, dtype=np.uint64) * 8 % (64 << 20),
        "line": np.arange(N, dtype=np.uint64) * 64 % (256 << 20),
        "ws-32k": np.arange(N, dtype=np.uint64) * 64 % (32 << 10),
        "rand-32k": rng.integers(0, 32 << 10, N, dtype=np.uint64) & eight,
        "rand-1g": rng.integers(0, 1 << 30, N, dtype=np.uint64) & eight,
    }


def configs():
    m = default_config()
    l1_dtlb = {"l1": m.l1, "l2": None, "llc": None, "dtlb": m.dtlb, "stlb": None}
    return {
        "L1D+DTLB": l1_dtlb,
        "L1D+DTLB no-classify": {**l1_dtlb, "classify": False},
        "machine": None,
    }


def feed(sim, addr, clock):
    def bench(loops):
        t0 = clock()
        for _ in range(loops):
            sim.access(addr, sizes=8)
        return clock() - t0

    return bench


def add_worker_args(cmd, args):
    if args.cpu_time:
        cmd.append("--cpu-time")


def main():
    runner = pyperf.Runner(processes=6, values=3, add_cmdline_args=add_worker_args)
    runner.argparser.add_argument(
        "--cpu-time", action="store_true", help="time with the thread CPU clock, not the wall clock"
    )
    args = runner.parse_args()
    clock = time.thread_time if args.cpu_time else pyperf.perf_counter
    runner.metadata["sim_clock"] = "thread CPU time" if args.cpu_time else "wall clock"
    m = default_config()
    runner.metadata["sim_l1d"] = m.l1.describe() + f" ({m.l1.origin})"
    runner.metadata["sim_dtlb"] = m.dtlb.describe() + f" ({m.dtlb.origin})"
    results = []
    data = streams()
    for cname, spec in configs().items():
        for sname, addr in data.items():
            name = f"sim {cname}: {sname}"
            b = runner.bench_time_func(name, feed(Simulator(spec), addr, clock), inner_loops=N)
            if b is not None and not runner.args.worker:
                results.append((name, b.mean()))
    if results:
        print()
        print(f"{'benchmark':<42} {'accesses/s':>12}  {'target 1e8 (L1D+DTLB)':>22}")
        for name, seconds in results:
            rate = 1 / seconds
            verdict = "" if "machine" in name else "met" if rate >= TARGET else "missed"
            print(f"{name:<42} {rate:>12.3g}  {verdict:>22}")


if __name__ == "__main__":
    main()
