"""`python -m bench`: the performance figures of issue 12, each measured side by side in one run.

Every figure that compares two things (pagelab against a yardstick) times them in turn, A B A B,
and takes the median of the pair-by-pair ratios, so it holds on a machine whose speed drifts.
Whole commands are timed by their CPU time (user + system of the finished child, from
getrusage), in-process figures by the thread's CPU clock: on a shared machine the wall clock
also counts the time other processes take the CPU away. Wall-clock figures say so.

``run()`` returns one JSON-ready document (stable keys under "figures"); ``pyperf_suite()``
turns its raw timings into a pyperf BenchmarkSuite that ``python -m pyperf compare_to`` reads.
"""

import compileall
import contextlib
import functools
import importlib.util
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pagelab
from pagelab._version import __version__

from .figures import (
    ROOT,
    _child_cpu,
    _figure,
    _pairs,
    _ratio,
    _spread,
    _unavailable,
)

# The standalone side of fidelity.ratio: one workload of the C table with its parameters in
# table order, no counters; each timed region on a line: its label, CLOCK_MONOTONIC seconds and
# CPU seconds (user + system, getrusage), as the worker's region metrics have them.
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
            const struct rusage *rb = &b->rusage, *re = &e->rusage;
            printf("%s\t%.9f\t%.6f\n", out.region[r].label,
                   (double)(e->clock.tv_sec - b->clock.tv_sec) +
                       (double)(e->clock.tv_nsec - b->clock.tv_nsec) / 1e9,
                   (double)(re->ru_utime.tv_sec - rb->ru_utime.tv_sec + re->ru_stime.tv_sec -
                            rb->ru_stime.tv_sec) +
                       (double)(re->ru_utime.tv_usec - rb->ru_utime.tv_usec +
                                re->ru_stime.tv_usec - rb->ru_stime.tv_usec) /
                           1e6);
        }
        return 0;
    }
    fprintf(stderr, "usage: %s WORKLOAD PARAM...\n", argv[0]);
    return 2;
}
"""
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


def _functions(path):
    """Function name -> [(address, instructions)] of every function of that name (static ones
    may share it), from objdump -d, with the addresses, rip-relative offsets and the padding
    after the last instruction (which differ between two binaries of the same code) left out."""
    cmd = ["objdump", "-d", "--no-show-raw-insn", str(path)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    funcs, body = {}, None
    for line in out.splitlines():
        if m := re.match(r"([0-9a-f]+) <([^>]+)>:$", line):
            body = []
            funcs.setdefault(m.group(2), []).append((int(m.group(1), 16), body))
        elif body is not None and "\t" in line:
            ins = re.sub(r"\s*#.*$", "", line.split("\t", 1)[1])
            ins = re.sub(r"\b[0-9a-f]+ <[^>]+>", "<addr>", ins)
            body.append(re.sub(r"-?0x[0-9a-f]+\(%rip\)", "(%rip)", ins).strip())
    for bodies in funcs.values():
        for _, body in bodies:
            while body and re.match(r"(data16 |cs |xchg   %ax,%ax|nop)", body[-1]):
                body.pop()
    return funcs


def _layout(obj):
    """Function name -> its offset in the .text of an object file (objdump -t)."""
    out = subprocess.run(["objdump", "-t", str(obj)], check=True, capture_output=True, text=True)
    rows = (line.split() for line in out.stdout.splitlines())
    return {r[-1]: int(r[0], 16) for r in rows if len(r) == 6 and r[2] == "F" and r[3] == ".text"}


def _bodies(funcs, layout):
    """name -> instructions of each function of an object file (its .text ``layout``) in a
    binary it was linked into: where several functions share a name, the one at its offset from
    a function whose name is the binary's alone (the linker keeps an object's .text whole)."""
    anchor = next(n for n in sorted(layout) if len(funcs.get(n, ())) == 1)
    base = funcs[anchor][0][0] - layout[anchor]
    return {
        n: next((b for a, b in funcs.get(n, ()) if a == base + off), None)
        for n, off in layout.items()
    }


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
        # Bytecode current, as an installed wheel has it: in a checkout run with
        # PYTHONDONTWRITEBYTECODE, every command would compile the modules changed since.
        compileall.compile_dir(Path(pagelab.__file__).parent, quiet=1)

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
        from pagelab.native import worker as _worker

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

    # --- counters -----------------------------------------------------------------------------

    def counters(self):
        from pagelab.counters.group import measure

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
                "python -m bench --json (counters)",
            ),
            "counters.floor_faults": _figure(
                statistics.median(faults) if opened else None,
                "faults",
                "page faults an empty measure() block counts (what lands inside the span)",
                "python -m bench --json (counters)",
                reason=why,
            ),
            "counters.floor_task_clock_us": _figure(
                statistics.median(clocks) / 1e3 if opened else None,
                "us",
                "task-clock an empty measure() block counts",
                "python -m bench --json (counters)",
                reason=why,
            ),
        }

    def read_cost(self):
        """A group read through pl_group_read against bare read(2)s of the same fd, both looped
        in C; and the same for the rdpmc path where hardware events open and rdpmc is allowed."""
        from pagelab._native import ffi, lib
        from pagelab.counters.group import CounterGroup

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
                "python -m bench --json (counters)",
                read_ns=statistics.median(a) / loop * 1e9,
                syscall_ns=statistics.median(b) / loop * 1e9,
            )
        return out

    @functools.cache  # noqa: B019 (one _Bench per run: its cache goes with it)
    def harness(self):
        """HARNESS built standalone with every csrc/ source of the extension (the same files
        and flags, compiled here, never a copy: one object per file, which same_code reads), or
        the reason it cannot be."""
        if not shutil.which("cc"):
            return None, "a C compiler (cc) is needed to build the standalone harness"
        if not (ROOT / "csrc").is_dir():
            return None, "needs a source checkout (csrc/) to build the standalone harness"
        from pagelab import _ffi_build

        main, exe, objs = self.tmp / "harness.c", self.tmp / "harness", self.tmp / "objs"
        main.write_text(HARNESS)
        objs.mkdir(exist_ok=True)
        self.log("building the standalone -O2 harness from csrc/")
        cmd = [
            "cc",
            *_ffi_build.CFLAGS,
            "-D_GNU_SOURCE",
            f"-I{_ffi_build.INCLUDE}",
            f"-I{_ffi_build.CSRC}",
            "-c",
        ]
        built = []
        for src in [*(ROOT / s for s in _ffi_build._sources()), main]:
            built.append(objs / (src.relative_to(src.parents[1]).as_posix().replace("/", "-")))
            subprocess.run([*cmd, str(src), "-o", f"{built[-1]}.o"], check=True)
        link = ["cc", *(f"{o}.o" for o in built), "-lpthread", "-lm", "-o", str(exe)]
        subprocess.run(link, check=True)
        return exe, None

    def fidelity(self):
        """A workload through cffi in a worker against the same source compiled standalone -O2:
        the CPU time of its timed regions in each, A B A B, each run a fresh process; and the
        workload's machine code in each build."""
        from pagelab.experiments import runner as _run
        from pagelab.experiments.cache import WRITEUP_LINES
        from pagelab.native import worker as _worker
        from pagelab.native import workloads as _workloads

        exe, why = self.harness()
        out = {}
        # both are short (about 0.05 and 0.5 s of regions) and first-touch is fault-bound: three
        # times the usual pairs, so one preempted run cannot move the median
        for name, pairs in (("cache", 3 * self.n), ("first-touch", 3 * self.n)):
            key = f"fidelity.ratio.{name.replace('-', '_')}"
            lines = f", {WRITEUP_LINES}-line working sets" if name == "cache" else ""
            meaning = (
                f"CPU time (user + system) of the {name} workload's timed regions (default "
                f"parameters{lines}, no counters) through cffi in a fresh worker over the same C "
                "built standalone by the bench; 1 means the lab's path adds nothing to what it "
                "measures; wall: the same for their clock time"
            )
            if exe is None:
                out[key] = _unavailable("x", meaning, why)
                continue
            p = _workloads.validate(name, {"lines": WRITEUP_LINES} if name == "cache" else {})
            address_space = _run._module(name).memory(p)[1]
            args = {"name": name, "params": p, "events": None, "sim": None, "cwd": None}
            argv = [str(exe), name, *map(str, p.values())]
            walls = {"worker": [], "standalone": []}

            def worker(args=args, space=address_space, what=name, walls=walls):
                raw = _worker.call(_run.WORKLOAD, args, address_space=space, what=what)
                m = [r["metrics"] for r in raw["regions"]]
                walls["worker"].append(sum(x["elapsed"]["value"] for x in m))
                return sum(x["utime"]["value"] + x["stime"]["value"] for x in m)

            def standalone(argv=argv, walls=walls):
                lines = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
                rows = [line.split("\t") for line in lines.splitlines()]
                walls["standalone"].append(sum(float(r[1]) for r in rows))
                return sum(float(r[2]) for r in rows)

            self.log(f"fidelity: {name} in a worker against standalone -O2 ({pairs} pairs)")
            a, b = _pairs(worker, standalone, pairs)
            self.keep(f"{name} regions via cffi in a worker (CPU s)", a)
            self.keep(f"{name} regions standalone -O2 (CPU s)", b)
            out[key] = _figure(
                _ratio(a, b),
                "x",
                meaning,
                f"python -m bench --json ({key})",
                goal=1.03,
                higher_is_better=False,
                source="rusage",
                reference=f"standalone {statistics.median(b):.3g} s",
                worker_s=statistics.median(a),
                standalone_s=statistics.median(b),
                wall=_ratio(walls["worker"], walls["standalone"]),
                pairs=pairs,
                spread=_spread(a, b),
            )
            out[f"fidelity.same_code.{name.replace('-', '_')}"] = self.same_code(name)
        return out

    def same_code(self, name):
        """How many of a workload's functions (those its csrc/workloads file defines) compile to
        other machine code in the extension than in the standalone harness: flags that differ
        between the two builds show here first (Python's own -fwrapv did)."""
        meaning = (
            f"functions of the {name} workload's C file whose instructions differ between the "
            "extension (pagelab._native) and the bench's standalone build (objdump, addresses "
            "left out); 0 means fidelity.ratio compares the same machine code"
        )
        exe, why = self.harness()
        if exe is None or not shutil.which("objdump"):
            return _unavailable("functions", meaning, why or "objdump (binutils) is needed")
        layout = _layout(self.tmp / "objs" / f"workloads-{name.replace('-', '_')}.c.o")
        ours = _bodies(_functions(importlib.util.find_spec("pagelab._native").origin), layout)
        theirs = _bodies(_functions(exe), layout)
        differ = sorted(f for f in layout if ours[f] is None or ours[f] != theirs[f])
        return _figure(
            len(differ),
            "functions",
            meaning,
            f"objdump -d of pagelab/_native*.so and the harness ({name})",
            goal=0,
            higher_is_better=False,
            source="objdump",
            compared=len(layout),
            **({"differ": ", ".join(differ)} if differ else {}),
        )

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
    from pagelab.counters.doctor import environment

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
    from . import sim_figures

    log = log or (lambda msg: None)
    b = _Bench(fast, log)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    figures = {"import_s": b.imports(), "worker_start_s": b.worker_start()}
    figures.update(sim_figures.figures(b))
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

    from pagelab.experiments.classreport import pyperf_metadata

    machine = pyperf_metadata({**doc["machine"], "pagelab": doc["version"]})
    benchmarks = []
    for name, values in doc["timings"].items():
        meta = {"name": name, "unit": "second", **machine}
        run_ = pyperf.Run(values, metadata=meta, collect_metadata=False)
        benchmarks.append(pyperf.Benchmark([run_]))
    return pyperf.BenchmarkSuite(benchmarks)
