"""`pagelab bench`: the performance figures of issue 12, each measured side by side in one run.

Every figure that compares two things (pagelab against a yardstick) times them in turn, A B A B,
and takes the median of the pair-by-pair ratios, so it holds on a machine whose speed drifts.
Whole commands are timed by their CPU time (user + system of the finished child, from
getrusage), in-process figures by the thread's CPU clock: on a shared machine the wall clock
also counts the time other processes take the CPU away. Wall-clock figures say so.

``run()`` returns one JSON-ready document (stable keys under "figures"); ``pyperf_suite()``
turns its raw timings into a pyperf BenchmarkSuite that ``python -m pyperf compare_to`` reads.
"""

import contextlib
import functools
import importlib.util
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .._version import __version__

ROOT = Path(__file__).resolve().parents[3]  # a source checkout: bench/, notebooks/
# The lackey trace of the cache-lab figures: a 512x512 int matrix filled, transposed and summed
# (about 5.7 million lines, 80 MB), built with -O1 so its loops stay real loads and stores.
MATRIX = r"""
#include <stdio.h>
#define N 512
static int a[N][N], b[N][N];
int main(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i][j] = i ^ j;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            b[j][i] = a[i][j];
    long s = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            s += b[i][j];
    printf("%ld\n", s);
    return 0;
}
"""
# The standalone side of fidelity.ratio: one workload of the C table with its parameters in
# table order, no counters, each timed region's label and CLOCK_MONOTONIC seconds on a line.
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagelab.h"

int main(int argc, char **argv)
{
    for (int i = 0; argc > 1 && i < pl_workload_count; i++) {
        const struct pl_workload *w = pl_workload_table[i];
        if (strcmp(w->name, argv[1]) != 0 || argc != 2 + w->nparams || w->nparams > 64)
            continue;
        int64_t param[64];
        for (int k = 0; k < w->nparams; k++)
            param[k] = strtoll(argv[2 + k], NULL, 10);
        static struct pl_out out;
        struct pl_ctx c = {.param = param, .out = &out};
        if (w->run(&c) < 0) {
            fprintf(stderr, "%s: %s\n", w->name, out.note);
            return 1;
        }
        for (int r = 0; r < out.nregions; r++) {
            const struct pl_snapshot *b = &out.region[r].begin, *e = &out.region[r].end;
            printf("%s\t%.9f\n", out.region[r].label,
                   (double)(e->clock.tv_sec - b->clock.tv_sec) +
                       (double)(e->clock.tv_nsec - b->clock.tv_nsec) / 1e9);
        }
        return 0;
    }
    fprintf(stderr, "usage: %s WORKLOAD PARAM...\n", argv[0]);
    return 2;
}
"""
LAB = ("-s", "6", "-E", "8", "-b", "6")
D1 = (32768, 8, 64)  # the cachegrind comparison's D1 (and pagelab's L1D)
# A host with a 480 MiB 16-way L3 (491,520 sets; issue 18), and the same with a 32 MiB L3: a
# 64 MiB working set, one load per line in a random order (a pointer chase's), three passes.
BIG_HOST = {"l1": "48K:12:64", "l2": "2M:16:64", "llc": "480M:16:64"}
SMALL_LLC = "32M:16:64"
WORKING_SET = 64 << 20
PASSES = 3
# bench/bench_live.py's figures: key -> (unit, goal, higher is better); the goals are the live
# widget's (issue 9) and the kernel panel's (issues 13 and 20)
LIVE = {
    "live.rate_hz": ("Hz", 20, True),
    "live.slowdown": ("x", 1.02, False),
    "panel.refresh_hz": ("Hz", None, True),
    "panel.server_cpu_percent": ("% of a core", 2.0, False),
    "panel.server_cpu_percent_5_clients": ("% of a core", 2.0, False),
    "panel.autocount_ms": ("ms", None, False),
}
FAST_LIVE = "--fast skips the browser, Jupyter server and widget figures (minutes of runs)"


def _figure(value, unit, meaning, command, goal=None, higher_is_better=True, reason=None, **extra):
    met = None
    if goal is not None and value is not None:
        met = value >= goal if higher_is_better else value <= goal
    d = {"value": value, "unit": unit, "source": "clock", "meaning": meaning, "command": command}
    if goal is not None:
        d["goal"] = goal
        d["better"] = "higher" if higher_is_better else "lower"
        d["met"] = met
    if value is None:
        d["reason"] = reason
    d.update(extra)
    return d


def _unavailable(unit, meaning, reason, command="pagelab bench --json"):
    return _figure(None, unit, meaning, command, reason=reason)


def _child_cpu(cmd, **kw):
    """CPU seconds (user + system) of one run of cmd, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _cachegrind_counts(out_file):
    """Event name -> the whole program's count, from a cachegrind.out file."""
    for line in Path(out_file).read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(names, map(int, line.split()[1:])))
    raise ValueError(f"{out_file} has no summary line")


def _peak_rss():
    """This process's peak resident set in bytes (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    raise OSError("/proc/self/status has no VmHWM line")


def working_set(llc):
    """In a worker: WORKING_SET through BIG_HOST's hierarchy with LLC llc (simulator created,
    fed PASSES times, reset): the thread's CPU seconds, the growth of the peak RSS, and the
    LLC's hits and misses."""
    import numpy as np

    from ..sim.simulator import Simulator

    lines = np.random.default_rng(0).permutation(WORKING_SET // 64).astype(np.uint64)
    addr = lines * np.uint64(64)
    before = _peak_rss()
    t0 = time.thread_time()
    sim = Simulator({**BIG_HOST, "llc": llc})
    for _ in range(PASSES):
        sim.access(addr, sizes=8)
    stats = sim.stats()["LLC"]
    sim.reset()
    cpu = time.thread_time() - t0
    return {
        "cpu_s": cpu,
        "rss_bytes": _peak_rss() - before,
        "llc_hits": stats.hits,
        "llc_misses": stats.misses,
    }


def _thread_cpu(fn):
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def _pairs(a, b, n):
    """Time a() and b() in turn, n times each: ([a seconds], [b seconds])."""
    ta, tb = [], []
    for _ in range(n):
        ta.append(a())
        tb.append(b())
    return ta, tb


def _ratio(num, den):
    return statistics.median(x / y for x, y in zip(num, den))


def _spread(num, den):
    """The pair-by-pair ratios' interquartile range: how far one pair could mislead."""
    q = statistics.quantiles([x / y for x, y in zip(num, den)], n=4)
    return q[2] - q[0]


class _Bench:
    def __init__(self, fast, log):
        self.fast = fast
        self.n = 3 if fast else 7
        self.log = log
        self.timings = {}  # pyperf benchmark name -> seconds per run
        self.tmp = Path(tempfile.mkdtemp(prefix="pagelab-bench-"))
        self.exe = Path(sys.executable)
        self.pagelab = [str(self.exe.with_name("pagelab"))]
        if not Path(self.pagelab[0]).exists():
            self.pagelab = [str(self.exe), "-m", "pagelab"]

    def keep(self, name, seconds):
        self.timings[name] = list(seconds)
        return seconds

    # --- light imports and workers ------------------------------------------------------------

    def imports(self):
        self.log("import pagelab")
        a, b = _pairs(
            lambda: _child_cpu([str(self.exe), "-c", "import pagelab"]),
            lambda: _child_cpu([str(self.exe), "-c", "pass"]),
            self.n * 2,
        )
        self.keep("import pagelab (CPU s)", a)
        self.keep("python -c pass (CPU s)", b)
        return _figure(
            statistics.median(a),
            "s",
            "CPU time of `python -c 'import pagelab'` (the interpreter's start included)",
            "python -c 'import pagelab'",
            goal=0.05,
            higher_is_better=False,
            python_s=statistics.median(b),
        )

    def worker_start(self):
        from ..native import worker as _worker

        self.log("worker start")
        walls = []
        for _ in range(self.n):
            t0 = time.perf_counter()
            _worker.call("platform:python_version", {}, what="bench")
            walls.append(time.perf_counter() - t0)
        self.keep("worker start (wall s)", walls)
        return _figure(
            statistics.median(walls),
            "s",
            "wall time of one trivial task in a fresh worker process (start, run, result, exit)",
            "python -c 'from pagelab.native import worker; "
            'worker.call("platform:python_version", {})\'',
        )

    def run_all(self):
        self.log("pagelab run all (wall clock and CPU, once)")
        t0 = time.perf_counter()
        cpu = _child_cpu([*self.pagelab, "run", "all"])
        wall = time.perf_counter() - t0
        self.keep("pagelab run all (wall s)", [wall])
        self.keep("pagelab run all (CPU s)", [cpu])
        return _figure(
            wall,
            "s",
            "wall time of `pagelab run all` (every experiment, default parameters; the "
            "simulated builds first, side by side); cpu_s is its CPU time, workers included, "
            "which other load on the machine does not inflate",
            "pagelab run all",
            goal=15,
            higher_is_better=False,
            cpu_s=cpu,
        )

    # --- simulator ----------------------------------------------------------------------------

    def accesses(self):
        import numpy as np

        from ..sim.config import default_config
        from ..sim.simulator import Simulator

        m = default_config()
        cfg = {"l1": m.l1, "l2": None, "llc": None, "dtlb": m.dtlb, "stlb": None}
        n = 1 << (20 if self.fast else 22)
        out = {}
        for key, stride, goal in (("seq8", 8, 3e8), ("new_line", m.l1.line, 1e8)):
            self.log(f"simulator accesses: {key}")
            addr = np.arange(n, dtype=np.uint64) * np.uint64(stride)
            sim = Simulator(cfg)
            times = [_thread_cpu(lambda s=sim, a=addr: s.access(a, sizes=8)) for _ in range(self.n)]
            self.keep(f"sim L1D+DTLB {key} (CPU s per {n} accesses)", times)
            out[f"sim.accesses_per_s.{key}"] = _figure(
                n / statistics.median(times),
                "accesses/s",
                f"8-byte loads through Simulator.access, this machine's L1D ({m.l1.describe()}) "
                f"and DTLB ({m.dtlb.describe()}), miss classification on; "
                + ("sequential" if key == "seq8" else "one access per line"),
                "pagelab bench --json (sim.accesses_per_s)",
                goal=goal,
            )
        return out

    def big_llc(self):
        """BIG_HOST against the same with a 32 MiB LLC, each run in a fresh worker, in turn."""
        from ..native import worker as _worker

        runs = {BIG_HOST["llc"]: [], SMALL_LLC: []}

        def one(llc):
            self.log(f"simulator with a {llc} LLC, {WORKING_SET >> 20} MiB working set")
            runs[llc].append(_worker.call(f"{__name__}:working_set", {"llc": llc}, what="bench"))
            return runs[llc][-1]["cpu_s"]

        a, b = _pairs(lambda: one(BIG_HOST["llc"]), lambda: one(SMALL_LLC), 3)
        self.keep("sim 480 MiB LLC, 64 MiB working set (CPU s)", a)
        self.keep("sim 32 MiB LLC, 64 MiB working set (CPU s)", b)
        big, small = runs[BIG_HOST["llc"]], runs[SMALL_LLC]
        rss_a, rss_b = [r["rss_bytes"] for r in big], [r["rss_bytes"] for r in small]
        hierarchy = f"L1D {BIG_HOST['l1']}, L2 {BIG_HOST['l2']}, LLC 480M:16:64 (491,520 sets)"
        work = (
            f"a {WORKING_SET >> 20} MiB working set, one 8-byte load per line in a random "
            f"order, {PASSES} passes, every level classified"
        )
        return {
            "sim.llc_480m_vs_32m.time": _figure(
                _ratio(a, b),
                "x",
                f"CPU time of a simulator for {hierarchy} over the same with a 32 MiB 16-way "
                f"LLC: created, fed {work}, reset; each in a fresh worker, in turn",
                "pagelab bench --json (sim.llc_480m_vs_32m)",
                goal=1.5,
                higher_is_better=False,
                s_480m=statistics.median(a),
                s_32m=statistics.median(b),
            ),
            "sim.llc_480m_vs_32m.rss": _figure(
                _ratio(rss_a, rss_b),
                "x",
                "growth of the worker's peak RSS (VmHWM) in those runs, 480 MiB LLC over 32 MiB: "
                "the large LLC holds every line of the working set (and its classification "
                "tracks them all), the small one half of them",
                "pagelab bench --json (sim.llc_480m_vs_32m)",
                source="rusage",
                mb_480m=statistics.median(rss_a) / 1e6,
                mb_32m=statistics.median(rss_b) / 1e6,
                llc_hits_480m=big[-1]["llc_hits"],
                llc_hits_32m=small[-1]["llc_hits"],
            ),
        }

    def matrix_trace(self):
        """The lackey trace of MATRIX, or None without valgrind or a C compiler."""
        if not (shutil.which("valgrind") and shutil.which("cc")):
            return None
        src, exe, trace = self.tmp / "matrix.c", self.tmp / "matrix", self.tmp / "matrix.trace"
        src.write_text(MATRIX)
        self.log("building the lackey trace of a 512x512 matrix program (valgrind)")
        subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True)
        subprocess.run(
            ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(exe)],
            check=True,
            capture_output=True,
        )
        return trace

    def trace_figures(self, trace):
        from ..sim.cachelab import cachelab

        how = "valgrind and a C compiler are needed to make the lackey trace"
        if trace is None:
            return {
                "sim.trace_lines_per_s": _unavailable("lines/s", "", how),
                "sim.cachelab_command_s": _unavailable("s", "", how),
            }
        with open(trace, "rb") as f:
            lines = sum(1 for _ in f)
        self.log("cache-lab replay in process")
        s, e, b = (int(v) for v in LAB[1::2])
        times = [_thread_cpu(lambda: cachelab(trace, s, e, b)) for _ in range(self.n)]
        self.keep("cachelab() of the matrix trace (CPU s)", times)
        self.log("cache-lab replay, whole command")
        cmd = [*self.pagelab, "sim", "trace", str(trace), *LAB]
        whole = [_child_cpu(cmd) for _ in range(self.n)]
        self.keep("pagelab sim trace -s 6 -E 8 -b 6 (CPU s)", whole)
        return {
            "sim.trace_lines_per_s": _figure(
                lines / statistics.median(times),
                "lines/s",
                f"lackey trace lines read and simulated per second by cachelab() (-s 6 -E 8 "
                f"-b 6), in process, on the {lines:,}-line trace of a 512x512 matrix program",
                "pagelab bench --json (sim.trace_lines_per_s)",
            ),
            "sim.cachelab_command_s": _figure(
                statistics.median(whole),
                "s",
                f"CPU time of the whole command `pagelab sim trace T {' '.join(LAB)}` on that "
                "trace (start-up included): compare with csim-ref by hand, see "
                "docs/performance.md",
                f"pagelab sim trace T {' '.join(LAB)}",
                lines=lines,
            ),
            "sim.vs_csimref.speedup": _unavailable(
                "x",
                "csim-ref's CPU time over pagelab's on the same trace and -s -E -b",
                "csim-ref (CS:APP's reference binary) is not on PyPI or in Debian, and a "
                "replayer written here would measure our guess at it, not csim-ref: compare "
                "by hand with sim.cachelab_command_s (docs/performance.md says how)",
            ),
        }

    def cachegrind(self):
        if not (shutil.which("valgrind") and shutil.which("cc")):
            reason = "valgrind and a C compiler are needed"
            units = {"speedup": "x", "trace_speedup": "x", "miss_agreement": "fraction"}
            out = {f"sim.vs_cachegrind.{k}": _unavailable(u, "", reason) for k, u in units.items()}
            return {**out, "sim.cell_vs_cachegrind.speedup": _unavailable("x", "", reason)}
        return {
            **self.cachegrind_workload(),
            **self.cachegrind_trace(),
            **self.cell_vs_cachegrind(),
        }

    def _cachegrind(self, argv, out):
        """The cachegrind command at the D1 geometry, writing its counts to out."""
        d1 = ",".join(map(str, D1))
        cg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}", "--I1=32768,8,64"]
        return [*cg, "--LL=1048576,16,64", f"--cachegrind-out-file={out}", *argv]

    def cachegrind_workload(self):
        """The cache workload's simulated run (its -DPL_SIM build, L1D + DTLB, first-level
        classification, as the experiments run it) against cachegrind running the same C built
        standalone -O2 (the fidelity harness): CPU time of each run, in turn."""
        from ..experiments import cache
        from ..native import workloads as _workloads
        from ..sim.config import make_config

        meaning = (
            f"CPU time of cachegrind (D1 {':'.join(map(str, D1))}) running the cache workload "
            "built standalone -O2 over the CPU time of the workload's simulated run "
            "(-DPL_SIM, L1D of that geometry + DTLB, in process), default parameters"
        )
        exe, why = self.harness()
        if exe is None:
            return {"sim.vs_cachegrind.speedup": _unavailable("x", meaning, why)}
        # the write-up's working sets, whatever this machine's L1D (0 would leave them to it);
        # the flush before each variant resolved as a run resolves it
        p = cache.resolve(_workloads.validate("cache", {"lines": cache.WRITEUP_LINES}), None)
        # the experiments' way: L1D + the machine's DTLB, the first level classified
        spec = {"l1": D1, "l2": None, "llc": None, "stlb": None, "classify": "l1"}
        sim = make_config(spec).to_dict()
        out = self.tmp / "cachegrind-cache.out"
        cg = self._cachegrind([str(exe), "cache", *map(str, p.values())], out)
        runs = []
        self.log("the cache workload: simulated against cachegrind")
        a, b = _pairs(
            lambda: _child_cpu(cg),
            lambda: _thread_cpu(lambda: runs.append(_workloads.execute("cache", p, sim=sim))),
            max(3, self.n // 2),
        )
        self.keep("cachegrind, cache workload standalone -O2 (CPU s)", a)
        self.keep("cache workload simulated, -DPL_SIM (CPU s)", b)
        counts = _cachegrind_counts(out)
        regions = runs[-1]["regions"]

        def total(kind):
            return sum(r["metrics"][f"L1-dcache-{kind}"]["value"] for r in regions)

        ours = total("loads") + total("stores")
        theirs = counts["Dr"] + counts["Dw"]
        return {
            "sim.vs_cachegrind.speedup": _figure(
                _ratio(a, b),
                "x",
                meaning,
                "pagelab bench --json (sim.vs_cachegrind.speedup)",
                goal=10,
                sim_accesses=ours,
                cachegrind_accesses=theirs,
                sim_ns_per_access=statistics.median(b) / ours * 1e9,
                cachegrind_ns_per_access=statistics.median(a) / theirs * 1e9,
                sim_l1_misses=total("load-misses") + total("store-misses"),
                cachegrind_d1_misses=counts["D1mr"] + counts["D1mw"],
            ),
        }

    def cachegrind_trace(self):
        """The matrix program under cachegrind against its lackey trace replayed by pagelab
        through the same L1D: CPU time of each whole command, and the misses each counts."""
        from ..sim.simulator import Simulator

        src, exe = self.tmp / "matrix.c", self.tmp / "matrix-o2"
        subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
        trace = self.tmp / "matrix-o2.trace"
        subprocess.run(
            ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(exe)],
            check=True,
            capture_output=True,
        )
        out = self.tmp / "cachegrind.out"
        cg = self._cachegrind([str(exe)], out)
        level = ":".join(map(str, D1))
        ours = [*self.pagelab, "sim", "trace", str(trace), f"--l1={level}"]
        ours += ["--l2=none", "--llc=none", "--tlb=none", "--stlb=none", "--no-classify"]
        self.log("pagelab's trace replay against cachegrind")
        a, b = _pairs(lambda: _child_cpu(cg), lambda: _child_cpu(ours), max(3, self.n // 2))
        self.keep("cachegrind D1 (CPU s)", a)
        self.keep("pagelab sim trace, same D1 (CPU s)", b)
        counts = _cachegrind_counts(out)
        expected = counts["D1mr"] + counts["D1mw"]
        sim = Simulator({"l1": D1, "l2": None, "llc": None, "dtlb": None, "stlb": None})
        sim.replay(trace)
        got = sim.stats()["L1D"].misses
        return {
            "sim.vs_cachegrind.trace_speedup": _figure(
                _ratio(a, b),
                "x",
                "CPU time of cachegrind running the matrix program (-O2) over pagelab's "
                "replaying that program's lackey trace through the same L1D: both whole "
                "commands, measured in turn (pagelab's side is mostly parsing the text trace)",
                "pagelab bench --json (sim.vs_cachegrind.trace_speedup)",
            ),
            "sim.vs_cachegrind.miss_agreement": _figure(
                got / expected,
                "fraction",
                f"pagelab's L1D misses replaying the matrix program's trace over cachegrind's "
                f"D1mr + D1mw running it ({got:,} / {expected:,}): the same accesses, seen by "
                "both",
                "pagelab bench --json (sim.vs_cachegrind)",
            ),
        }

    def cell_vs_cachegrind(self):
        """bench/transpose.c simulated access by access (`pagelab sim c`, the compiler's
        instrumentation) against cachegrind running it built -O2: CPU time of each whole
        command, in turn, through the same D1 and LL and nothing else (no TLB, no classes)."""
        program = ROOT / "bench" / "transpose.c"
        key = "sim.cell_vs_cachegrind.speedup"
        meaning = (
            f"CPU time of cachegrind (D1 {':'.join(map(str, D1))}, LL 8M:16:64) running "
            "bench/transpose.c built -O2 over the CPU time of `pagelab sim c` simulating its "
            "every load and store through the same D1 and LL (no TLB, no classification; the "
            "build cached): both whole commands, measured in turn"
        )
        if not program.exists():
            return {key: _unavailable("x", meaning, "bench/transpose.c: a source checkout only")}
        exe, out = self.tmp / "transpose-o2", self.tmp / "cachegrind-transpose.out"
        subprocess.run(["cc", "-O2", "-g", "-o", str(exe), str(program)], check=True)
        d1 = ",".join(map(str, D1))
        cg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}"]
        cg += ["--I1=32768,8,64", "--LL=8388608,16,64", f"--cachegrind-out-file={out}", str(exe)]
        ours = [*self.pagelab, "sim", "c", str(program), f"--l1={':'.join(map(str, D1))}"]
        ours += ["--l2=none", "--llc=8M:16:64", "--tlb=none", "--stlb=none", "--no-classify"]
        self.log("a C program simulated by instrumentation against cachegrind")
        doc = json.loads(subprocess.run([*ours, "--json"], check=True, capture_output=True).stdout)
        a, b = _pairs(lambda: _child_cpu(cg), lambda: _child_cpu(ours), max(3, self.n // 2))
        self.keep("cachegrind, bench/transpose.c -O2 (CPU s)", a)
        self.keep("pagelab sim c bench/transpose.c, same D1 and LL (CPU s)", b)
        counts = _cachegrind_counts(out)
        metrics = doc["measurements"][0]["metrics"]
        accesses = metrics["L1-dcache-loads"]["value"] + metrics["L1-dcache-stores"]["value"]
        return {
            key: _figure(
                _ratio(a, b),
                "x",
                meaning,
                f"pagelab bench --json ({key})",
                goal=5,
                sim_accesses=accesses,
                cachegrind_accesses=counts["Dr"] + counts["Dw"],
                sim_s=statistics.median(b),
                cachegrind_s=statistics.median(a),
            )
        }

    # --- counters -----------------------------------------------------------------------------

    def counters(self):
        from ..counters.group import measure

        self.log("empty measure() brackets")
        events = "page-faults,task-clock"
        walls, faults, clocks = [], [], []
        for _ in range(50 if self.fast else 200):
            t0 = time.perf_counter()
            with measure(events) as m:
                pass
            walls.append(time.perf_counter() - t0)
            faults.append(m["page-faults"].value)
            clocks.append(m["task-clock"].value)
        self.keep("empty measure() bracket (wall s)", walls)
        opened = all(v is not None for v in faults + clocks)
        why = "page-faults and task-clock do not open here (see pagelab doctor)"
        return {
            "counters.measure_overhead_us": _figure(
                statistics.median(walls) * 1e6,
                "us",
                "wall time of an empty `with pagelab.measure('page-faults,task-clock')` block, "
                "the group's open and close included",
                "pagelab bench --json (counters)",
            ),
            "counters.floor_faults": _figure(
                statistics.median(faults) if opened else None,
                "faults",
                "page faults an empty measure() block counts (what lands inside the span)",
                "pagelab bench --json (counters)",
                reason=why,
            ),
            "counters.floor_task_clock_us": _figure(
                statistics.median(clocks) / 1e3 if opened else None,
                "us",
                "task-clock an empty measure() block counts",
                "pagelab bench --json (counters)",
                reason=why,
            ),
        }

    def read_cost(self):
        """A group read through pl_group_read against bare read(2)s of the same fd, both looped
        in C; and the same for the rdpmc path where hardware events open and rdpmc is allowed."""
        from .._native import ffi, lib
        from ..counters.group import CounterGroup

        loop = 10_000
        out = {}
        for key, events, rdpmc in (
            ("counters.read_vs_syscall", "page-faults,minor-faults,context-switches", False),
            ("counters.rdpmc_vs_syscall", "instructions,cycles", True),
        ):
            meaning = (
                f"time of a C group read ({'rdpmc' if rdpmc else 'read(2)'} path, {events}) "
                "over a bare read(2) of the same group fd, both looped in C"
            )
            with CounterGroup(events, rdpmc=rdpmc) as g:
                c = ffi.new("struct pl_counts *")
                if not g.opened:
                    out[key] = _unavailable("x", meaning, f"{events} do not open here")
                    continue
                g.enable()
                lib.pl_group_read(g._group, c)
                if rdpmc and not c.via_rdpmc:
                    out[key] = _unavailable("x", meaning, "rdpmc is not allowed here")
                    continue
                self.log(f"group read against read(2): {events}")
                a, b = _pairs(
                    lambda g=g: lib.pl_group_read_loop(g._group, loop) / 1e9,
                    lambda g=g: lib.pl_group_syscall_loop(g._group, loop) / 1e9,
                    self.n,
                )
            if min(a + b) < 0:
                out[key] = _unavailable("x", meaning, "a read failed")
                continue
            self.keep(f"{key} group read x{loop} (s)", a)
            self.keep(f"{key} bare read(2) x{loop} (s)", b)
            out[key] = _figure(
                _ratio(a, b),
                "x",
                meaning,
                "pagelab bench --json (counters)",
                read_ns=statistics.median(a) / loop * 1e9,
                syscall_ns=statistics.median(b) / loop * 1e9,
            )
        return out

    @functools.cache  # noqa: B019 (one _Bench per run: its cache goes with it)
    def harness(self):
        """HARNESS built standalone -O2 with every csrc/ source of the extension (the same
        files, compiled here, never a copy), or the reason it cannot be."""
        if not shutil.which("cc"):
            return None, "a C compiler (cc) is needed to build the standalone harness"
        if not (ROOT / "csrc").is_dir():
            return None, "needs a source checkout (csrc/) to build the standalone harness"
        from .. import _ffi_build

        main, exe = self.tmp / "harness.c", self.tmp / "harness"
        main.write_text(HARNESS)
        self.log("building the standalone -O2 harness from csrc/")
        sources = [str(ROOT / s) for s in _ffi_build._sources()]
        cmd = ["cc", *_ffi_build.CFLAGS, "-D_GNU_SOURCE", f"-I{_ffi_build.INCLUDE}"]
        subprocess.run([*cmd, *sources, str(main), "-lpthread", "-lm", "-o", str(exe)], check=True)
        return exe, None

    def fidelity(self):
        """A workload through cffi in a worker against the same source compiled standalone -O2:
        the sum of its timed regions' clock in each, A B A B, each run a fresh process."""
        from ..experiments import runner as _run
        from ..native import worker as _worker
        from ..native import workloads as _workloads

        exe, why = self.harness()
        out = {}
        # both are short (about 0.1 and 0.5 s of regions) and first-touch is fault-bound: three
        # times the usual pairs, so one preempted run cannot move the median
        for name, pairs in (("cache", 3 * self.n), ("first-touch", 3 * self.n)):
            key = f"fidelity.ratio.{name.replace('-', '_')}"
            meaning = (
                f"the {name} workload's timed regions (default parameters, no counters) through "
                "cffi in a fresh worker over the same C built standalone -O2 by the bench; "
                "1 means the lab's path adds nothing to what it measures"
            )
            if exe is None:
                out[key] = _unavailable("x", meaning, why)
                continue
            p = _workloads.validate(name, {})
            address_space = _run._module(name).memory(p)[1]
            args = {"name": name, "params": p, "events": None, "sim": None, "cwd": None}
            argv = [str(exe), name, *map(str, p.values())]

            def worker(args=args, space=address_space, what=name):
                raw = _worker.call(_run.WORKLOAD, args, address_space=space, what=what)
                return sum(r["metrics"]["elapsed"]["value"] for r in raw["regions"])

            def standalone(argv=argv):
                lines = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
                return sum(float(line.split("\t")[1]) for line in lines.splitlines())

            self.log(f"fidelity: {name} in a worker against standalone -O2 ({pairs} pairs)")
            a, b = _pairs(worker, standalone, pairs)
            self.keep(f"{name} regions via cffi in a worker (wall s)", a)
            self.keep(f"{name} regions standalone -O2 (wall s)", b)
            out[key] = _figure(
                _ratio(a, b),
                "x",
                meaning,
                f"pagelab bench --json ({key})",
                worker_s=statistics.median(a),
                standalone_s=statistics.median(b),
                pairs=pairs,
                spread=_spread(a, b),
            )
        return out

    # --- what other parts of the project provide -----------------------------------------------

    def live(self):
        """The live widget's and the kernel panel's figures, from bench/bench_live.py (FIGURES:
        key -> a function returning (value, details), its docstring the meaning)."""
        path = ROOT / "bench" / "bench_live.py"
        if self.fast or not path.is_file():
            why = FAST_LIVE if self.fast else f"needs a source checkout ({path.name})"
            return {k: _unavailable(v[0], "", why) for k, v in LIVE.items()}
        spec = importlib.util.spec_from_file_location("pagelab_bench_live", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        command = f"python {path.relative_to(ROOT)}"
        out = {}
        for key, (unit, goal, higher) in LIVE.items():
            fn = module.FIGURES[key]
            meaning = " ".join((fn.__doc__ or "").split())
            self.log(f"live figures: {key}")
            try:
                value, details = fn()
            except module.Missing as e:  # no browser or Jupyter here: the figure says so
                out[key] = _unavailable(unit, meaning, str(e), command)
                continue
            except Exception as e:  # one failing figure says why; the rest go on
                out[key] = _unavailable(unit, meaning, f"{fn.__name__}() failed: {e}", command)
                continue
            if not math.isfinite(value):
                why = f"{fn.__name__}() measured no number ({value})"
                out[key] = _unavailable(unit, meaning, why, command)
                continue
            out[key] = _figure(
                value, unit, meaning, f"python {path.relative_to(ROOT)}", goal, higher, **details
            )
        return out

    def nbval(self):
        """One nbval run over notebooks/ (as `make test` runs the chapters), its wall time and
        each chapter's from the junit report (the sum of its cells' times, the kernel's start
        included in the first)."""
        from .junit import nbval_outcomes

        meaning = "wall time of one nbval run over every chapter (`pytest notebooks`)"
        command = "pytest --nbval-lax --nbval-current-env notebooks"
        if not (ROOT / "notebooks").is_dir() or importlib.util.find_spec("nbval") is None:
            why = "needs a source checkout (notebooks/) and nbval"
            return {"nbval_s.all": _unavailable("s", meaning, why, command)}
        report = self.tmp / "nbval.xml"
        self.log("nbval over notebooks/ (wall clock, once)")
        nbval = [str(self.exe), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax"]
        nbval += ["--nbval-current-env", f"--junitxml={report}", "notebooks"]
        t0 = time.perf_counter()
        r = subprocess.run(nbval, cwd=ROOT, capture_output=True)
        wall = time.perf_counter() - t0
        self.keep("nbval notebooks/ (wall s)", [wall])
        if not report.is_file():
            why = f"nbval wrote no report (exit {r.returncode}): {r.stderr.decode()[-200:]}"
            return {"nbval_s.all": _unavailable("s", meaning, why, command)}
        outcomes, seconds = nbval_outcomes(report)
        failed = sorted(c for c, cells in outcomes.items() if set(cells.values()) != {"passed"})
        out = {
            "nbval_s.all": _figure(
                wall,
                "s",
                meaning + (f"; FAILED: {', '.join(failed)}" if failed else ""),
                command,
                passed=not failed and r.returncode == 0,
            )
        }
        for chapter in sorted(seconds):
            self.keep(f"nbval {chapter} (wall s)", [seconds[chapter]])
            out[f"nbval_s.{chapter.removesuffix('.ipynb')}"] = _figure(
                seconds[chapter],
                "s",
                "wall time of the chapter's cells in that nbval run (junit report)"
                + ("; the chapter FAILED" if chapter in failed else ""),
                f"pytest --nbval-lax --nbval-current-env notebooks/{chapter}",
                passed=chapter not in failed,
            )
        return out


def _machine(load_before):
    from ..counters.doctor import environment

    env = environment()
    return {
        "python": platform.python_version(),
        "pagelab": __version__,
        "cpus": os.cpu_count(),
        "cpu": env.get("cpu"),
        "kernel": env.get("kernel"),
        "profile": env.get("profile"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # other work on the machine: what wall-clock figures carry beside their own time
        "load_1min": [load_before, os.getloadavg()[0]],
    }


def run(fast=False, log=None):
    """Measure every figure; one JSON-ready document. ``fast`` skips `run all` and the chapters
    and takes fewer repetitions."""
    log = log or (lambda msg: None)
    b = _Bench(fast, log)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    figures = {"import_s": b.imports(), "worker_start_s": b.worker_start()}
    figures.update(b.accesses())
    figures.update(b.big_llc())
    trace = b.matrix_trace()
    figures.update(b.trace_figures(trace))
    if trace is not None:
        trace.unlink()
    figures.update(b.cachegrind())
    figures.update(b.counters())
    figures.update(b.read_cost())
    figures.update(b.fidelity())
    figures.update(b.live())
    if not fast:
        figures["run_all_s"] = b.run_all()
        figures.update(b.nbval())
    with contextlib.suppress(OSError):
        shutil.rmtree(b.tmp)
    return {
        "bench": "pagelab",
        "version": __version__,
        "fast": fast,
        "machine": _machine(load_before),
        "clocks": "whole commands: child CPU (user + system); in process: thread CPU; "
        "figures marked wall: wall clock",
        "elapsed_s": time.perf_counter() - t0,
        "figures": figures,
        "timings": b.timings,
    }


def pyperf_suite(doc):
    """The document's raw timings as a pyperf BenchmarkSuite (seconds; one run per figure)."""
    import pyperf

    from ..experiments.classreport import pyperf_metadata

    machine = pyperf_metadata({**doc["machine"], "pagelab": doc["version"]})
    benchmarks = []
    for name, values in doc["timings"].items():
        meta = {"name": name, "unit": "second", **machine}
        run_ = pyperf.Run(values, metadata=meta, collect_metadata=False)
        benchmarks.append(pyperf.Benchmark([run_]))
    return pyperf.BenchmarkSuite(benchmarks)
