"""`python -m bench`'s simulator figures (issue 22), each beside its goal and, where it compares,
its reference measured in the same run: accesses per second and per path (time and callgrind's
instruction count), large and non-power-of-two levels against power-of-two ones, trace replay
against csim-ref and cachegrind, the cache workload's simulated run against cachegrind.

Each function takes the running bench (``bench._Bench``: repetitions, scratch directory,
timings kept for pyperf) and returns figures by key.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .figures import ROOT, _child_cpu, _figure, _pairs, _ratio, _thread_cpu, _unavailable

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
LAB = ("-s", "6", "-E", "8", "-b", "6")
# csim-ref against pagelab on the matrix trace's first lines, then on all of it: a cache lab's
# own traces are a few hundred to a few hundred thousand lines
TRACE_SIZES = (1_000, 100_000, 1_000_000, None)
CSIM_REF = "PAGELAB_CSIM_REF"  # the path of csim-ref, where it is not on PATH as csim-ref
D1 = (32768, 8, 64)  # the cachegrind comparison's D1 (and pagelab's L1D)
LLC_8M = "8388608,16,64"  # cachegrind's LL for the %%c comparison, pagelab's --llc=8M:16:64
# A host with a 480 MiB 16-way L3 (491,520 sets; issue 18), and the same with a 32 MiB L3, or
# with a 480 MiB 15-way L3 (524,288 sets: a power of two): a 64 MiB working set, one load per
# line in a random order (a pointer chase's), three passes.
BIG_HOST = {"l1": "48K:12:64", "l2": "2M:16:64", "llc": "480M:16:64"}
SMALL_LLC = "32M:16:64"
POT_LLC = "480M:15:64"
WORKING_SET = 64 << 20
PASSES = 3
# An L1D of 48 sets (48 KiB, 16-way) against one of 64 (48 KiB, 12-way): set numbers by
# division-free reduction against a mask, on the quick path
NPOT_L1, POT_L1 = "48K:16:64", "48K:12:64"
# bench/sim_paths.c's paths, and the accesses it counts per path under callgrind
PATHS = ("same_line", "seq8", "l1_hit", "l2_hit", "new_line", "tlb_miss")
PATH_ACCESSES = 200_000
PATH_TIMED = 4_000_000


def _peak_rss():
    """This process's peak resident set in bytes (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    raise OSError("/proc/self/status has no VmHWM line")


def working_set(llc):
    """In a process of its own: WORKING_SET through BIG_HOST's hierarchy with LLC llc
    (simulator created, fed PASSES times, reset): the thread's CPU seconds, the growth of the
    peak RSS, and the LLC's hits and misses."""
    import numpy as np

    from pagelab.sim.simulator import Simulator

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


def _cachegrind_counts(out_file):
    """Event name -> the whole program's count, from a cachegrind.out file."""
    for line in Path(out_file).read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(names, map(int, line.split()[1:])))
    raise ValueError(f"{out_file} has no summary line")


def _callgrind_total(out_file):
    """The instructions a callgrind.out file counted (its totals: or summary: line)."""
    for line in Path(out_file).read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"{out_file} has no totals line")


# --- accesses per second ------------------------------------------------------------------------


def _feed(sim, addr):
    """A timed run: the thread CPU seconds of 8-byte loads at addr through sim."""
    return lambda: _thread_cpu(lambda: sim.access(addr, sizes=8))


def accesses(b):
    import numpy as np

    from pagelab.sim.config import default_config
    from pagelab.sim.simulator import Simulator

    m = default_config()
    cfg = {"l1": m.l1, "l2": None, "llc": None, "dtlb": m.dtlb, "stlb": None}
    n = 1 << (20 if b.fast else 22)
    out = {}
    for key, stride, goal in (("seq8", 8, 3e8), ("new_line", m.l1.line, 1e8)):
        b.log(f"simulator accesses: {key}")
        addr = np.arange(n, dtype=np.uint64) * np.uint64(stride)
        sims = Simulator(cfg), Simulator({**cfg, "classify": False})
        on, off = _pairs(*(_feed(sim, addr) for sim in sims), b.n)
        b.keep(f"sim L1D+DTLB {key} (CPU s per {n} accesses)", on)
        b.keep(f"sim L1D+DTLB {key}, no classification (CPU s per {n} accesses)", off)
        out[f"sim.accesses_per_s.{key}"] = _figure(
            n / statistics.median(on),
            "accesses/s",
            f"8-byte loads through Simulator.access, this machine's L1D ({m.l1.describe()}) "
            f"and DTLB ({m.dtlb.describe()}), miss classification on; "
            + ("sequential" if key == "seq8" else "one access per line")
            + "; no_classify: the same with classification off, in turn",
            "python -m bench --json (sim.accesses_per_s)",
            goal=goal,
            no_classify=n / statistics.median(off),
        )
    return out


def paths(b):
    """Instructions (callgrind, the same on any host) and CPU time per simulated access, path by
    path, from bench/sim_paths.c built with csrc/sim."""
    meaning = "instructions per simulated access on the path ({}), miss classification on"
    src = ROOT / "bench" / "sim_paths.c"
    why = None
    if not (shutil.which("cc") and shutil.which("valgrind")):
        why = "valgrind and a C compiler are needed"
    elif not src.is_file():
        why = "needs a source checkout (bench/sim_paths.c)"
    if why:
        return {
            f"sim.path.{p}": _unavailable("instructions", meaning.format(p), why) for p in PATHS
        }
    from pagelab import _ffi_build

    exe = b.tmp / "sim-paths"
    sources = sorted(str(p) for p in (ROOT / "csrc" / "sim").glob("*.c"))
    cmd = [
        "cc",
        *_ffi_build.CFLAGS,
        "-D_GNU_SOURCE",
        f"-I{_ffi_build.INCLUDE}",
        f"-I{_ffi_build.CSRC}",
        str(src),
    ]
    subprocess.run([*cmd, *sources, "-lm", "-o", str(exe)], check=True)
    whats = _path_descriptions(src)
    out = {}
    for p in PATHS:
        b.log(f"simulator path {p}: callgrind and CPU time")
        counts, ns = {}, {}
        for classify in (1, 0):
            cg = b.tmp / f"callgrind.{p}.{classify}"
            run = [str(exe), p, str(classify)]
            subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}"]
                + ["--toggle-collect=paths_run", *run, str(PATH_ACCESSES)],
                check=True,
                capture_output=True,
            )
            counts[classify] = _callgrind_total(cg) / PATH_ACCESSES
            timed = [
                float(
                    subprocess.run(
                        [*run, str(PATH_TIMED)], check=True, capture_output=True
                    ).stdout.split()[3]
                )
                for _ in range(b.n)
            ]
            b.keep(f"sim path {p}, classify {classify} (CPU ns per access)", timed)
            ns[classify] = statistics.median(timed)
        out[f"sim.path.{p}"] = _figure(
            counts[1],
            "instructions",
            meaning.format(whats.get(p, p)) + "; no_classify: with it off; ns and "
            "ns_no_classify: CPU time per access, natively (bench/sim_paths.c)",
            f"valgrind --tool=callgrind --toggle-collect=paths_run sim-paths {p} 1 {PATH_ACCESSES}",
            source="valgrind",
            no_classify=counts[0],
            ns=ns[1],
            ns_no_classify=ns[0],
        )
    return out


def _path_descriptions(src):
    """Path name -> what it exercises, from the PATHS table of bench/sim_paths.c."""
    text = src.read_text()
    return dict(re.findall(r'\{"(\w+)", [^"]*"([^"]+)"\}', text))


# --- large and non-power-of-two levels ----------------------------------------------------------


def big_llc(b):
    """BIG_HOST against the same with a 32 MiB LLC, and against a same-sized LLC with a power of
    two of sets, each run in a fresh worker, in turn."""
    runs = {BIG_HOST["llc"]: [], SMALL_LLC: [], POT_LLC: []}

    def one(llc):
        b.log(f"simulator with a {llc} LLC, {WORKING_SET >> 20} MiB working set")
        # a fresh process each (the checkout's bench is not importable by pagelab's workers)
        cmd = [sys.executable, "-m", "bench.sim_figures", "working_set", llc]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
        runs[llc].append(json.loads(out))
        return runs[llc][-1]["cpu_s"]

    a, s = _pairs(lambda: one(BIG_HOST["llc"]), lambda: one(SMALL_LLC), 3)
    big, pot = _pairs(lambda: one(BIG_HOST["llc"]), lambda: one(POT_LLC), 3)
    b.keep("sim 480 MiB LLC, 64 MiB working set (CPU s)", a + big)
    b.keep("sim 32 MiB LLC, 64 MiB working set (CPU s)", s)
    b.keep("sim 480 MiB 15-way LLC (2^19 sets), 64 MiB working set (CPU s)", pot)
    # the big LLC's runs paired with the small one (the later ones were paired with POT_LLC)
    large, small = runs[BIG_HOST["llc"]][: len(a)], runs[SMALL_LLC]
    rss_a, rss_b = [r["rss_bytes"] for r in large], [r["rss_bytes"] for r in small]
    hierarchy = f"L1D {BIG_HOST['l1']}, L2 {BIG_HOST['l2']}, LLC 480M:16:64 (491,520 sets)"
    work = (
        f"a {WORKING_SET >> 20} MiB working set, one 8-byte load per line in a random "
        f"order, {PASSES} passes, every level classified"
    )
    return {
        "sim.llc_480m_vs_32m.time": _figure(
            _ratio(a, s),
            "x",
            f"CPU time of a simulator for {hierarchy} over the same with a 32 MiB 16-way "
            f"LLC: created, fed {work}, reset; each in a fresh worker, in turn",
            "python -m bench --json (sim.llc_480m_vs_32m)",
            goal=1.5,
            higher_is_better=False,
            reference=f"32 MiB LLC {statistics.median(s):.3g} s",
            s_480m=statistics.median(a),
            s_32m=statistics.median(s),
        ),
        "sim.llc_480m_vs_32m.rss": _figure(
            _ratio(rss_a, rss_b),
            "x",
            "growth of the worker's peak RSS (VmHWM) in those runs, 480 MiB LLC over 32 MiB: "
            "the large LLC holds every line of the working set (and its classification "
            "tracks them all), the small one half of them",
            "python -m bench --json (sim.llc_480m_vs_32m)",
            source="rusage",
            mb_480m=statistics.median(rss_a) / 1e6,
            mb_32m=statistics.median(rss_b) / 1e6,
            llc_hits_480m=large[-1]["llc_hits"],
            llc_hits_32m=small[-1]["llc_hits"],
        ),
        "sim.npot_vs_pot.llc": _figure(
            _ratio(big, pot),
            "x",
            f"the same CPU time with the 480 MiB LLC's 491,520 sets (16 ways, not a power of "
            f"two: division-free reduction, a lazy level) over a 480 MiB LLC of 524,288 sets "
            f"(15 ways, a mask), both fed {work}, in turn",
            "python -m bench --json (sim.npot_vs_pot)",
            goal=1.2,
            higher_is_better=False,
            reference=f"2^19 sets {statistics.median(pot):.3g} s",
        ),
    }


def npot_l1(b):
    """An L1D whose sets are not a power of two against a same-sized one whose are, in turn."""
    import numpy as np

    from pagelab.sim.config import default_config
    from pagelab.sim.simulator import Simulator

    n = 1 << (20 if b.fast else 22)
    addr = np.random.default_rng(1).integers(0, 256 << 10, n, dtype=np.uint64) & ~np.uint64(7)
    dtlb = default_config().dtlb
    sims = [Simulator({"l1": g, "l2": None, "llc": None, "dtlb": dtlb}) for g in (NPOT_L1, POT_L1)]
    b.log("simulator: an L1D of 48 sets against one of 64")
    npot, pot = _pairs(*(_feed(sim, addr) for sim in sims), b.n)
    b.keep(f"sim L1D {NPOT_L1} (48 sets) (CPU s per {n} accesses)", npot)
    b.keep(f"sim L1D {POT_L1} (64 sets) (CPU s per {n} accesses)", pot)
    return {
        "sim.npot_vs_pot.l1": _figure(
            _ratio(npot, pot),
            "x",
            f"CPU time of 8-byte loads at random over 256 KiB through an L1D of {NPOT_L1} (48 "
            f"sets) and this machine's DTLB, classified, over the same through {POT_L1} (64 "
            "sets), in turn",
            "python -m bench --json (sim.npot_vs_pot)",
            goal=1.2,
            higher_is_better=False,
            reference=f"64 sets {n / statistics.median(pot):.3g} accesses/s",
        )
    }


# --- traces: cache-lab mode, csim-ref, cachegrind -----------------------------------------------


def matrix_trace(b):
    """The lackey trace of MATRIX, or None without valgrind or a C compiler."""
    if not (shutil.which("valgrind") and shutil.which("cc")):
        return None
    src, exe, trace = b.tmp / "matrix.c", b.tmp / "matrix", b.tmp / "matrix.trace"
    src.write_text(MATRIX)
    b.log("building the lackey trace of a 512x512 matrix program (valgrind)")
    subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True)
    subprocess.run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(exe)],
        check=True,
        capture_output=True,
    )
    return trace


def trace_figures(b, trace):
    from pagelab.sim.cachelab import cachelab

    how = "valgrind and a C compiler are needed to make the lackey trace"
    if trace is None:
        return {
            "sim.trace_lines_per_s": _unavailable("lines/s", "", how),
            "sim.cachelab_command_s": _unavailable("s", "", how),
            "sim.vs_csimref.speedup": _unavailable("x", "", how),
            "sim.vs_csimref.by_size": _unavailable("x", "", how),
        }
    with open(trace, "rb") as f:
        lines = sum(1 for _ in f)
    b.log("cache-lab replay in process")
    s, e, bb = (int(v) for v in LAB[1::2])
    times = [_thread_cpu(lambda: cachelab(trace, s, e, bb)) for _ in range(b.n)]
    b.keep("cachelab() of the matrix trace (CPU s)", times)
    b.log("cache-lab replay, whole command")
    cmd = [*b.pagelab, "sim", "trace", str(trace), *LAB]
    whole = [_child_cpu(cmd) for _ in range(b.n)]
    b.keep("pagelab sim trace -s 6 -E 8 -b 6 (CPU s)", whole)
    return {
        "sim.trace_lines_per_s": _figure(
            lines / statistics.median(times),
            "lines/s",
            f"lackey trace lines read and simulated per second by cachelab() (-s 6 -E 8 "
            f"-b 6), in process, on the {lines:,}-line trace of a 512x512 matrix program",
            "python -m bench --json (sim.trace_lines_per_s)",
        ),
        "sim.cachelab_command_s": _figure(
            statistics.median(whole),
            "s",
            f"CPU time of the whole command `pagelab sim trace T {' '.join(LAB)}` on that "
            "trace (start-up included)",
            f"pagelab sim trace T {' '.join(LAB)}",
            lines=lines,
        ),
        **csimref(b, trace, lines),
    }


def _csimref_path():
    path = os.environ.get(CSIM_REF) or shutil.which("csim-ref")
    return Path(path) if path and os.access(path, os.X_OK) else None


def csimref(b, trace, lines):
    """csim-ref (CS:APP's cache lab reference binary, where $PAGELAB_CSIM_REF or PATH has it)
    against `pagelab sim trace` in cache-lab mode, whole commands, on the matrix trace's first
    TRACE_SIZES lines: CPU time of each, in turn, and both answers compared."""
    meaning = (
        f"csim-ref's CPU time over pagelab's, whole commands (start-up included), "
        f"`{' '.join(LAB)}`, in turn"
    )
    ref = _csimref_path()
    if ref is None:
        why = (
            f"csim-ref (the cache lab handout's reference binary; not on PyPI or in Debian) "
            f"is not on PATH and ${CSIM_REF} does not name it"
        )
        return {
            "sim.vs_csimref.speedup": _unavailable("x", meaning, why),
            "sim.vs_csimref.by_size": _unavailable("x", meaning, why),
        }
    speedups, details = {}, {}
    for size in TRACE_SIZES:
        part = trace
        if size is not None and size < lines:
            part = b.tmp / f"matrix-{size}.trace"
            with open(trace, "rb") as src, open(part, "wb") as dst:
                for _, line in zip(range(size), src):
                    dst.write(line)
        n = lines if part == trace else size
        theirs = [str(ref), *LAB, "-t", str(part)]
        ours = [*b.pagelab, "sim", "trace", str(part), *LAB]
        answers = [
            subprocess.run(c, cwd=b.tmp, check=True, capture_output=True, text=True).stdout
            for c in (theirs, ours)
        ]
        if answers[0].split()[-3:] != answers[1].split()[-3:]:
            raise RuntimeError(f"csim-ref and pagelab disagree on {n} lines: {answers}")
        b.log(f"csim-ref against pagelab, {n:,} lines")
        a, p = _pairs(lambda c=theirs: _child_cpu(c, cwd=b.tmp), lambda c=ours: _child_cpu(c), b.n)
        b.keep(f"csim-ref {n} lines (CPU s)", a)
        b.keep(f"pagelab sim trace, cache-lab mode, {n} lines (CPU s)", p)
        speedups[n] = _ratio(a, p)
        details[f"x_{n}_lines"] = speedups[n]
        details[f"csimref_s_{n}_lines"] = statistics.median(a)
        details[f"pagelab_s_{n}_lines"] = statistics.median(p)
    whole = speedups[lines]
    return {
        "sim.vs_csimref.speedup": _figure(
            whole,
            "x",
            meaning + f", on the whole {lines:,}-line matrix trace (same hits, misses, evictions)",
            "python -m bench --json (sim.vs_csimref)",
            goal=2,
            reference=f"csim-ref {details[f'csimref_s_{lines}_lines']:.3g} s",
        ),
        "sim.vs_csimref.by_size": _figure(
            min(speedups.values()),
            "x",
            meaning
            + ": the smallest over the trace's first "
            + ", ".join(f"{n:,}" for n in speedups)
            + " lines (same answers at every size)",
            "python -m bench --json (sim.vs_csimref)",
            goal=2,
            reference="csim-ref, each size",
            **details,
        ),
    }


def cachegrind(b):
    from .cell_figures import SIZES, cell_ceiling, cell_vs_cachegrind

    if not (shutil.which("valgrind") and shutil.which("cc")):
        reason = "valgrind and a C compiler are needed"
        units = {"speedup": "x", "trace_speedup": "x", "miss_agreement": "fraction"}
        out = {f"sim.vs_cachegrind.{k}": _unavailable(u, "", reason) for k, u in units.items()}
        for key in [k for k, _ in SIZES.values()] + ["sim.cell_vs_cachegrind.ceiling"]:
            out[key] = _unavailable("x", "", reason)
        return out
    return {
        **cachegrind_workload(b),
        **cachegrind_trace(b),
        **cell_vs_cachegrind(b),
        **cell_ceiling(b),
    }


def _cachegrind(argv, out, ll="1048576,16,64"):
    """The cachegrind command at the D1 geometry, writing its counts to out."""
    d1 = ",".join(map(str, D1))
    cg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}", "--I1=32768,8,64"]
    return [*cg, f"--LL={ll}", f"--cachegrind-out-file={out}", *argv]


def _speedup(key, a, s, meaning, **extra):
    """Figure key: cachegrind's CPU times a over pagelab's s, pair by pair."""
    command = f"python -m bench --json ({key})"
    reference = f"cachegrind {statistics.median(a):.3g} s"
    return _figure(_ratio(a, s), "x", meaning, command, reference=reference, **extra)


def cachegrind_workload(b):
    """The cache workload's simulated run (its -DPL_SIM build, L1D + DTLB, first-level
    classification, as the experiments run it) against cachegrind running the same C built
    standalone -O2 (the fidelity harness): CPU time of each run, in turn."""
    from pagelab.experiments import cache
    from pagelab.native import workloads as _workloads
    from pagelab.sim.config import make_config

    meaning = (
        f"CPU time of cachegrind (D1 {':'.join(map(str, D1))}) running the cache workload "
        "built standalone -O2 over the CPU time of the workload's simulated run "
        f"(-DPL_SIM, L1D of that geometry + DTLB, in process), {cache.WRITEUP_LINES}-line working "
        "sets, the other parameters their defaults"
    )
    exe, why = b.harness()
    if exe is None:
        return {"sim.vs_cachegrind.speedup": _unavailable("x", meaning, why)}
    # the write-up's working sets, whatever this machine's L1D (0 would leave them to it);
    # the flush before each variant resolved as a run resolves it
    p = cache.resolve(_workloads.validate("cache", {"lines": cache.WRITEUP_LINES}), None)
    # the experiments' way: L1D + the machine's DTLB, the first level classified
    spec = {"l1": D1, "l2": None, "llc": None, "stlb": None, "classify": "l1"}
    sim = make_config(spec).to_dict()
    out = b.tmp / "cachegrind-cache.out"
    cg = _cachegrind([str(exe), "cache", *map(str, p.values())], out)
    runs = []
    b.log("the cache workload: simulated against cachegrind")
    a, s = _pairs(
        lambda: _child_cpu(cg),
        lambda: _thread_cpu(lambda: runs.append(_workloads.execute("cache", p, sim=sim))),
        max(3, b.n // 2),
    )
    b.keep("cachegrind, cache workload standalone -O2 (CPU s)", a)
    b.keep("cache workload simulated, -DPL_SIM (CPU s)", s)
    counts = _cachegrind_counts(out)
    regions = runs[-1]["regions"]

    def total(kind):
        return sum(r["metrics"][f"L1-dcache-{kind}"]["value"] for r in regions)

    ours = total("loads") + total("stores")
    theirs = counts["Dr"] + counts["Dw"]
    return {
        "sim.vs_cachegrind.speedup": _speedup(
            "sim.vs_cachegrind.speedup",
            a,
            s,
            meaning,
            goal=10,
            sim_accesses=ours,
            cachegrind_accesses=theirs,
            sim_ns_per_access=statistics.median(s) / ours * 1e9,
            cachegrind_ns_per_access=statistics.median(a) / theirs * 1e9,
            sim_l1_misses=total("load-misses") + total("store-misses"),
            cachegrind_d1_misses=counts["D1mr"] + counts["D1mw"],
        ),
    }


def cachegrind_trace(b):
    """The matrix program under cachegrind against its lackey trace replayed by pagelab
    through the same L1D: CPU time of each whole command, and the misses each counts."""
    from pagelab.sim.simulator import Simulator

    src, exe = b.tmp / "matrix.c", b.tmp / "matrix-o2"
    src.write_text(MATRIX)
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    trace = b.tmp / "matrix-o2.trace"
    subprocess.run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(exe)],
        check=True,
        capture_output=True,
    )
    out = b.tmp / "cachegrind.out"
    cg = _cachegrind([str(exe)], out)
    level = ":".join(map(str, D1))
    ours = [*b.pagelab, "sim", "trace", str(trace), f"--l1={level}"]
    ours += ["--l2=none", "--llc=none", "--tlb=none", "--stlb=none", "--no-classify"]
    b.log("pagelab's trace replay against cachegrind")
    a, s = _pairs(lambda: _child_cpu(cg), lambda: _child_cpu(ours), max(3, b.n // 2))
    b.keep("cachegrind D1 (CPU s)", a)
    b.keep("pagelab sim trace, same D1 (CPU s)", s)
    counts = _cachegrind_counts(out)
    expected = counts["D1mr"] + counts["D1mw"]
    sim = Simulator({"l1": D1, "l2": None, "llc": None, "dtlb": None, "stlb": None})
    sim.replay(trace)
    got = sim.stats()["L1D"].misses
    return {
        "sim.vs_cachegrind.trace_speedup": _speedup(
            "sim.vs_cachegrind.trace_speedup",
            a,
            s,
            "CPU time of cachegrind running the matrix program (-O2) over pagelab's "
            "replaying that program's lackey trace through the same L1D: both whole "
            "commands, measured in turn (pagelab's side is mostly parsing the text trace)",
        ),
        "sim.vs_cachegrind.miss_agreement": _figure(
            got / expected,
            "fraction",
            f"pagelab's L1D misses replaying the matrix program's trace over cachegrind's "
            f"D1mr + D1mw running it ({got:,} / {expected:,}): the same accesses, seen by "
            "both",
            "python -m bench --json (sim.vs_cachegrind)",
            reference=f"cachegrind {expected:,} misses",
        ),
    }


def figures(b):
    """Every simulator figure, in the order docs/performance.md lists them."""
    out = {**accesses(b), **paths(b), **npot_l1(b), **big_llc(b)}
    trace = matrix_trace(b)
    out.update(trace_figures(b, trace))
    if trace is not None:
        trace.unlink()
    out.update(cachegrind(b))
    return out


if __name__ == "__main__" and sys.argv[1:2] == ["working_set"]:
    print(json.dumps(working_set(sys.argv[2])))
