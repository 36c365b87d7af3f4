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

--workload compares instead the cache workload's simulated run (its -DPL_SIM build, in this
process, L1-only classification as the experiments run it) with valgrind cachegrind running the
same C (csrc/workloads/cache.c, compiled standalone -O2 with a small main) at this machine's
L1D geometry: CPU time of each whole run, side by side, and each one's L1 data misses.
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


ROOT = Path(__file__).resolve().parents[1]
# The cache workload's defaults (csrc/workloads/cache.c): size_mb, sets, lines, passes,
# write_every, seed, in its parameter order.
CACHE_PARAMS = {
    "size_mb": 64,
    "sets": 4096,
    "lines": 512,
    "passes": 16,
    "write_every": 8,
    "seed": 1,
}
CACHE_MAIN = r"""
#include <stdint.h>
#include "pl_workloads.h"
int main(void)
{
    static struct pl_out out;
    int64_t param[] = {%s};
    struct pl_ctx c = {.param = param, .out = &out};
    return pl_cache_run(&c) < 0;
}
"""
# What the standalone build links: the workload, its regions (counters, steady clocks), and the
# simulated variants its table entry names.
CACHE_SOURCES = [
    "workloads/cache.c",
    "workloads/sim_variants.c",
    "workloads/latency.c",
    "out.c",
    "counters.c",
    "steady.c",
    *(f"sim/{p.name}" for p in sorted((ROOT / "csrc" / "sim").glob("*.c"))),
]


def _child_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def workload_vs_cachegrind(runs=3):
    """The cache workload's simulated run against cachegrind on the same C: a dict of CPU
    seconds (median of runs), their ratio and the L1 data misses each counted."""
    from pagelab._workloads import execute

    l1 = default_config().l1
    d1 = f"{l1.size},{l1.ways},{l1.line}"
    sim_cfg = {"l1": l1, "l2": None, "llc": None, "stlb": None}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "main.c").write_text(CACHE_MAIN % ", ".join(map(str, CACHE_PARAMS.values())))
        exe = tmp / "cache"
        subprocess.run(
            ["cc", "-O2", "-std=c11", "-D_GNU_SOURCE", f"-I{ROOT / 'csrc' / 'include'}"]
            + ["-o", str(exe), str(tmp / "main.c")]
            + [str(ROOT / "csrc" / f) for f in CACHE_SOURCES]
            + ["-lm"],
            check=True,
        )
        out = tmp / "cachegrind.out"
        cg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}"]
        cg += ["--I1=32768,8,64", "--LL=1048576,16,64", f"--cachegrind-out-file={out}", str(exe)]
        ours, theirs, result = [], [], None
        for _ in range(runs):
            t0 = time.thread_time()
            result = execute("cache", CACHE_PARAMS, sim=sim_cfg)
            ours.append(time.thread_time() - t0)
            theirs.append(_child_cpu(cg))
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("summary:"):
                counts = dict(zip(names, map(int, line.split()[1:])))
    misses = sum(
        r["metrics"][f"L1-dcache-{k}-misses"]["value"]
        for r in result["regions"]
        for k in ("load", "store")
    )
    return {
        "sim_cpu_s": statistics.median(ours),
        "cachegrind_cpu_s": statistics.median(theirs),
        "speedup": statistics.median(t / o for t, o in zip(theirs, ours)),
        "sim_l1_misses": misses,
        "cachegrind_d1_misses": counts["D1mr"] + counts["D1mw"],
        "d1": d1,
    }


def main():
    if "--workload" in sys.argv:
        if not (shutil.which("valgrind") and shutil.which("cc")):
            sys.exit("--workload needs valgrind and a C compiler")
        r = workload_vs_cachegrind()
        print(f"cache workload, L1D {r['d1']}, CPU s: simulated run {r['sim_cpu_s']:.3f}, ")
        print(f"  cachegrind {r['cachegrind_cpu_s']:.3f}: {r['speedup']:.2f}x (goal 10x)")
        print(f"  L1 data misses: simulated {r['sim_l1_misses']:,} (the two walks),")
        print(f"  cachegrind {r['cachegrind_d1_misses']:,} (the whole program)")
        return
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
