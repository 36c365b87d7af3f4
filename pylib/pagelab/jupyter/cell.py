"""The student's own C, measured and simulated: what the ``%%c`` magic runs.

The cell is compiled twice with -O2 as a shared object including pagelab_cell.h: once as is (the
measured build), and once for the cache/TLB simulator. The simulated build feeds it either every
load and store of the cell ("every": the compiler's ThreadSanitizer instrumentation, with
pagelab_cell_every.h's hooks in place of libtsan) or only the cell's PL_LOAD/PL_STORE
("marked", -DPL_SIM); by default, "marked" when the cell uses them. Each build's main() then runs
in a fresh worker (csrc/cell.c loads it), so a crash, an endless loop or a memory hog ends that
worker, never the kernel. Both answers come back as labelled readings of the cell's region
(PL_REGION_BEGIN..END, else all of main()), and the simulated accesses also line by line
(pagelab.sim.lines), their call sites mapped to the cell's lines with -g and addr2line.

Builds are cached like %%cython's: in $XDG_CACHE_HOME/pagelab/cells (else ~/.cache), keyed by
the source, the mode, the flags, the compiler and its version, pagelab's version and headers.
"""

import contextlib
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .._native import ffi, lib
from .._version import __version__
from ..core.errors import BadInput
from ..core.reading import Reading
from ..counters import events as _events
from ..counters.group import CounterGroup
from ..counters.reasons import Facts
from ..native import worker as _worker
from ..native.shipped import include_dir
from ..sim.lines import COUNTS, LineCounts, LineView

HEADER = "pagelab_cell.h"
EVERY_HEADER = "pagelab_cell_every.h"  # the instrumentation's hooks and the libc wrappers
SOURCE_FILE = "cell.c"  # what is compiled: the header's include, #line, the source
MODES = ("every", "marked")
# The student's cell is GNU C (PL_KEEP uses __typeof__ and an asm barrier), built like a program
# would be but as a shared object; --no-undefined makes a missing function a link error here
# rather than a failed dlopen later; exit() is pagelab_cell.h's, which ends main() as a return
# does.
COMPILE = ["-std=gnu11", "-O2", "-Wall", "-fPIC"]
LINK = ["-shared", "-Wl,--no-undefined", "-Wl,--wrap=exit"]
# The simulated builds carry -g so that call sites map to lines. "every" is instrumented at
# compile time only (linking with -fsanitize=thread would pull in libtsan).
SIM_FLAGS = {"marked": ["-g", "-DPL_SIM"], "every": ["-g", "-fsanitize=thread", "-DPL_SIM_EVERY"]}
_MARKED = re.compile(r"\bPL_(LOAD|STORE)\s*\(")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
CELL_EVENTS = (
    "task-clock",
    "page-faults",
    "cycles",
    "instructions",
    "L1-dcache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
)
DEFAULT_TIMEOUT = 10.0  # s per run: student loops are short; an endless one is stopped here
DEFAULT_MEMORY = 1 << 30  # bytes of address space a cell may use beyond the interpreter's
OUTPUT_LIMIT = 1 << 20  # bytes of printf output kept per run (the rest is read and dropped)
FILE_LIMIT = 1 << 30  # bytes a file the cell writes may reach (scratch may be RAM: tmpfs)
# the rusage fields worth a row beside the counters (the others stay in CellResult.measured)
RUSAGE_SHOWN = ("utime", "minflt", "maxrss")


@dataclass
class CellResult:
    """What a %%c cell did: the region's readings measured and simulated, side by side."""

    label: str  # "region" (PL_REGION_BEGIN..END) or "main()"
    measured: list
    simulated: list = field(default_factory=list)
    simulated_reason: str | None = None  # why there is no simulated answer
    stdout: str = ""
    status: int = 0
    notes: list = field(default_factory=list)
    exited: bool = False  # main() ended by calling exit(status)
    mode: str = "every"  # what the simulated build fed the simulator (MODES)
    lines: LineView | None = None  # the simulated counts line by line

    def __getitem__(self, name):
        for r in self.measured + self.simulated:
            if r.name == name:
                return r
        raise KeyError(name)

    def __str__(self):
        shown = [r for r in self.measured if r.source != "rusage" or r.name in RUSAGE_SHOWN]
        sim = {r.name: r for r in self.simulated if r.value or "store" not in r.name}
        rows = [(r, sim.pop(r.name, None)) for r in shown]
        rows += [(None, r) for r in sim.values()]
        width = max(len((m or s).name) for m, s in rows)
        what = "PL_REGION_BEGIN..END" if self.label == "region" else "all of main()"
        lines = [f"{what}, compiled -O2; {ending(self.status, self.exited)}"]
        lines.append(f"  {'':<{width}}  {'measured':<28}  simulated")
        missing = {}
        for m, s in rows:
            if m is not None and m.value is None:
                missing.setdefault(m.reason, []).append(m.name)
            left = _cell_text(m) if m else "-"
            right = _cell_text(s) if s else ("" if self.simulated else "-")
            lines.append(f"  {(m or s).name:<{width}}  {left:<28}  {right}".rstrip())
        lines += [f"  not counted here: {why} ({', '.join(n)})" for why, n in missing.items()]
        if self.simulated_reason:
            lines.append(f"  simulated: {self.simulated_reason}")
        elif self.simulated:
            fed = (
                "every load and store of the cell (compiler instrumentation)"
                if self.mode == "every"
                else "every PL_LOAD/STORE"
            )
            lines.append(f"  simulated: a model of this machine's caches and TLB, fed {fed}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _cell_text(r):
    if r.value is None:
        if r.fallback is not None:
            return f"{_number(r.fallback)} ({r.fallback.source}: {r.fallback.name})"
        return "n/a"
    tags = [r.source] + ["scaled"] * r.scaled + ["user only"] * r.kernel_excluded
    return f"{_number(r)} ({', '.join(tags)})"


def _number(r):
    if r.unit == "s":
        return f"{r.value:.6f} s"
    if r.unit == "ns":
        return f"{r.value / 1e6:,.3f} ms"
    return f"{r.value:,.0f}" + (f" {r.unit}" if r.unit else "")


def sim_mode(source):
    """The simulated build's default: "marked" when the cell writes PL_LOAD or PL_STORE (outside
    comments), else "every"."""
    return "marked" if _MARKED.search(_COMMENTS.sub("", source)) else "every"


def cache_dir():
    """Where built cells are kept: $XDG_CACHE_HOME/pagelab/cells, else ~/.cache/pagelab/cells."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pagelab", "cells")


def run_c(
    source,
    events=None,
    *,
    sim=True,
    config=None,
    timeout=DEFAULT_TIMEOUT,
    memory=DEFAULT_MEMORY,
    force=False,
    name="cell",
):
    """Compile ``source`` (C with pagelab_cell.h) and run it measured and, unless ``sim`` is
    False, simulated: ``sim`` True picks the mode from the source (sim_mode), or names it
    ("every", "marked"). ``config``: the simulator's geometry (None: this machine's; a dict as
    Simulator takes). ``force`` rebuilds a cached build. Compiler errors raise BadInput with
    gcc's messages (cell line numbers); a crash, a timeout or a hog raise the worker's one-line
    error for the measured run, and become the simulated column's reason for the simulated one.
    The result's ``lines`` holds the simulated counts line by line."""
    mode = _check(source, sim, name)
    events = [e.name for e in _events.events(events or CELL_EVENTS)]  # bad names fail first
    builds = _build(source, mode or "every", force, name)
    measured = _execute(builds["measured"], events, None, timeout, memory)
    result = _result(measured, builds)
    if mode is None:
        result.simulated_reason = "not run (--no-sim)"
        return result
    result.mode = mode
    try:
        result.simulated, result.lines, _ = _simulate(source, name, builds, config, timeout, memory)
    except _worker.WorkerError as e:
        result.simulated_reason = str(e)
    return result


def simulate_c(
    source,
    *,
    sim=True,
    config=None,
    timeout=DEFAULT_TIMEOUT,
    memory=DEFAULT_MEMORY,
    force=False,
    name="cell",
):
    """Only the simulated run of ``run_c``: (the simulated readings, the LineView, the run's
    record: label, status, stdout, notes). What `pagelab sim c FILE.c` shows."""
    builds = _build(source, _check(source, sim, name) or "every", force, name)
    return _simulate(source, name, builds, config, timeout, memory)


def _simulate(source, name, builds, config, timeout, memory):
    """The simulated build run: (its readings, its LineView, the run's record)."""
    simulated = _execute(builds["sim"], None, config or {}, timeout, memory, name)
    return _sim_readings(simulated), _lines(source, name, simulated, builds), simulated


def _check(source, sim, name):
    """The simulated build's mode, or None for no simulated run; BadInput for bad arguments."""
    if not isinstance(source, str) or not source.strip():
        raise BadInput("the cell is empty: write a C program with a main()")
    if not re.fullmatch(r"[\w.+-]+", name):
        raise BadInput(f"the program's name {name!r} must be a plain file name")
    if sim is False or sim is None:
        return None
    if sim is True:
        return sim_mode(source)
    if sim not in MODES:
        raise BadInput(f"unknown simulation mode {sim!r}: use {' or '.join(MODES)}")
    return sim


def _build(source, mode, force, name):
    """The builds of ``source``: the cache's, or compiled in a worker (the compiler's
    failures and limits stay there)."""
    entry, cc = cache_entry(source, mode, name)
    if not force and (entry / "build.json").exists():
        return _built(entry, json.loads((entry / "build.json").read_text()), cached=True)
    args = {"source": source, "mode": mode, "entry": str(entry), "cc": cc, "name": name}
    return _worker.call("pagelab.jupyter.cell:build", args, what="C cell compiler")


def cache_entry(source, mode, name="cell"):
    """(the cache directory of this build, the compiler command): the key is the source, the
    mode, the name, the flags, the compiler and its version, pagelab's version and headers."""
    include = include_dir()
    cc = _compiler()
    version = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout
    headers = [(include / h).read_text() for h in (HEADER, EVERY_HEADER)]
    key = json.dumps(
        [source, mode, name, cc, version, __version__, headers, COMPILE, LINK, SIM_FLAGS]
    )
    return Path(cache_dir()) / hashlib.sha256(key.encode()).hexdigest()[:32], cc


def _sim_readings(raw):
    return [Reading.from_dict(n, d) for n, d in raw["metrics"].items() if d["source"] == "sim"]


def _lines(source, name, raw, builds):
    """The LineView of a simulated run, with what it did not see."""
    lines = {}
    for no, counts in raw["lines"].items():
        lines[int(no)] = LineCounts(*counts)
    notes = [raw["scope"]]
    if builds["unseen"]:
        notes.append(
            "not simulated: the memory touched inside these library calls: "
            + ", ".join(builds["unseen"])
        )
    if raw["other_threads"]:
        notes.append(
            f"{raw['other_threads']:,} accesses by other threads than main()'s were not "
            "simulated (the model is one core's caches)"
        )
    return LineView(
        name,
        source,
        lines,
        LineCounts(*raw["outside"]),
        tuple(raw["levels"]),
        notes,
    )


def _execute(path, events, sim, timeout, memory, name="cell"):
    """One run of a built cell in a worker; its failures say what most likely happened."""
    what = "simulated C cell" if sim is not None else "C cell"
    args = {"path": path, "events": events, "sim": sim, "name": name}
    try:
        return _worker.call(
            "pagelab.jupyter.cell:execute", args, timeout=timeout, address_space=memory, what=what
        )
    except _worker.WorkerTimeout:
        raise _worker.WorkerTimeout(
            f"the {what} ran longer than {timeout:g} s and was stopped "
            "(an endless loop? --timeout S allows longer)"
        ) from None
    except _worker.WorkerDied as e:
        name = signal.Signals(e.signal).name
        hint = ""
        if e.signal in (signal.SIGSEGV, signal.SIGBUS):
            hint = (
                " (a bad pointer, or an unchecked malloc() returning NULL once the cell "
                f"reached its memory limit, --mem {memory >> 20} MiB)"
            )
        raise _worker.WorkerDied(f"the {what} crashed with {name}{hint}", e.signal) from None


def _result(raw, builds):
    readings = [Reading.from_dict(n, d) for n, d in raw["metrics"].items()]
    notes = list(raw["notes"])
    if builds["warnings"]:
        notes.append("gcc warned:\n" + builds["warnings"])
    return CellResult(
        raw["label"],
        readings,
        stdout=raw["stdout"],
        status=raw["status"],
        notes=notes,
        exited=raw["exited"],
    )


def ending(status, exited):
    """How main() ended, for the result's first line."""
    return f"main() called exit({status})" if exited else f"main() returned {status}"


# ---- inside the workers ------------------------------------------------------------------


def _compiler():
    """$CC, else cc, else the compiler Python was built with (a conda environment's, which is on
    PATH there while `cc` may not be)."""
    for candidate in (os.environ.get("CC"), "cc", sysconfig.get_config_var("CC")):
        if candidate and shutil.which(shlex.split(candidate)[0]):
            return shlex.split(candidate)
    raise BadInput("no C compiler: %%c needs cc (gcc or clang) where the kernel runs")


def _run_cc(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise BadInput(_unsupported(p.stderr) or p.stderr.strip() or f"cc failed ({p.returncode})")
    return p.stderr.strip()


def _unsupported(stderr):
    """One line naming what the instrumented build cannot simulate, from a link error about a
    hook pagelab_cell_every.h does not define (e.g. 16-byte atomics)."""
    m = re.search(r"undefined reference to .(__tsan_\w+)", stderr)
    if not m:
        return None
    return (
        f"unsupported in a simulated cell: the compiler's instrumentation calls {m[1]}, which "
        "pagelab does not model; --sim marked simulates only PL_LOAD/PL_STORE, --no-sim none"
    )


def _wrapped(include, *headers):
    """The C library functions these headers wrap (their __wrap_ definitions)."""
    text = "".join((include / h).read_text() for h in headers)
    return list(dict.fromkeys(re.findall(r"__wrap_(\w+)\(", text)))


def _commands(cc, include, mode, work):
    """The compiler commands of both builds, in work/, as (variant, [commands])."""
    c, inc = str(work / SOURCE_FILE), ["-I", str(include)]
    measured = [[*cc, *COMPILE, *LINK, *inc, "-o", str(work / "cell-measured.so"), c, "-lm"]]
    so = str(work / "cell-sim.so")
    if mode == "marked":
        return measured, [[*cc, *COMPILE, *SIM_FLAGS[mode], *LINK, *inc, "-o", so, c, "-lm"]]
    wrapped = _wrapped(include, EVERY_HEADER)
    obj = str(work / "cell-sim.o")
    nobuiltin = [f"-fno-builtin-{f}" for f in wrapped]
    wrap = "-Wl," + ",".join(f"--wrap={f}" for f in wrapped)
    return measured, [
        [*cc, *COMPILE, *SIM_FLAGS[mode], *nobuiltin, *inc, "-c", "-o", obj, c],
        [*cc, *LINK, wrap, "-o", so, obj, "-lm"],
    ]


def _unseen(work, include):
    """The library functions the instrumented cell calls whose memory is not simulated."""
    nm = shutil.which("nm")
    if not nm:
        return ["(nm was not found: the library calls could not be listed)"]
    out = subprocess.run([nm, "-u", str(work / "cell-sim.o")], capture_output=True, text=True)
    names = set()
    for line in out.stdout.splitlines():
        name = line.split()[-1].split("@")[0]
        if name.startswith(("__tsan_", "__real_", "_GLOBAL_", "__stack_chk")):
            continue
        names.add(re.sub(r"^__(\w+)_chk$", r"\1", name))  # _FORTIFY_SOURCE's checked calls
    return sorted(names - set(_wrapped(include, HEADER, EVERY_HEADER)))


def build(source, mode, entry, cc, name="cell"):
    """Compile the measured and the simulated shared objects into the cache directory
    ``entry`` with the compiler ``cc``; BadInput carries gcc's errors at the cell's line
    numbers."""
    include = include_dir()
    entry = Path(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=entry.parent))
    try:
        # the include comes first, then #line, so gcc numbers its messages as lines of the cell
        (work / SOURCE_FILE).write_text(f'#include "{HEADER}"\n#line 1 "{name}"\n{source}\n')
        first, sim = _commands(cc, include, mode, work)
        # the measured build is compiled even for `pagelab sim c`: it gives the plain errors
        warnings = _run_cc(first[0])
        for cmd in sim:
            _run_cc(cmd)
        record = {"warnings": warnings, "unseen": _unseen(work, include) if mode == "every" else []}
        (work / "build.json").write_text(json.dumps(record))
        shutil.rmtree(entry, ignore_errors=True)  # a forced rebuild replaces the old one
        # another process may have built the same cell meanwhile: theirs is as good
        with contextlib.suppress(OSError):
            work.rename(entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _built(entry, record, cached=False)


def _built(entry, record, cached):
    return {
        "measured": str(entry / "cell-measured.so"),
        "sim": str(entry / "cell-sim.so"),
        **record,
        "cached": cached,
    }


def execute(path, events=None, sim=None, name="cell"):
    """Run a built cell's main() in this (worker) process. ``events`` are counted on this
    process (inherited by the cell's threads); ``sim`` (a simulator config) attaches the
    simulator instead, and the accesses come back per line of ``name`` too."""
    from ..native.workloads import region_metrics
    from ..sim import simulator as _sim

    cell = ffi.new("struct pl_cell *")
    group = simulator = None
    if sim is None:
        group = CounterGroup(events, inherit=True)
        group.enable()
        cell.region.group = group._group if group.opened else ffi.NULL
    else:
        simulator = _sim.Simulator(sim or None)
        cell.region.sim = simulator._sim

    def run_main():
        rc = lib.pl_cell_run(str(path).encode(), cell)
        # main() has returned: the cell is over, and so is anything it left running
        return rc, _worker.kill_left_running()

    (rc, left_running), text, cut = _with_stdout(run_main)
    if rc < 0:
        raise BadInput(ffi.string(cell.error).decode())
    used = cell.begun > 0 and cell.ended > 0
    region = cell.region if used else cell.whole
    status = group.status if group else []
    metrics = region_metrics(status, region, Facts.read() if group else None, simulator)
    if group:
        group.close()
    notes = []
    if cell.begun > 1:
        notes.append(f"PL_REGION_BEGIN ran {cell.begun} times: only the first region is measured")
    if cell.begun and not cell.ended:
        notes.append("PL_REGION_BEGIN without PL_REGION_END: all of main() is measured")
    if cut:
        notes.append(f"the cell's output was cut at {OUTPUT_LIMIT >> 10} KiB")
    if left_running:
        s = "" if left_running == 1 else "es"
        notes.append(f"killed {left_running} process{s} that main() left running")
    out = {
        "label": "region" if used else "main()",
        "metrics": metrics,
        "status": cell.status,
        "exited": bool(cell.exited),
        "stdout": text,
        "notes": notes,
    }
    if simulator is not None:
        out.update(_per_line(cell, path, name, simulator.config))
        out["scope"] = (
            "per line: the first PL_REGION_BEGIN..END"
            if used
            else "per line: from PL_REGION_BEGIN to the end of main()"
            if cell.begun
            else "per line: all of main()"
        )
        lib.pl_cell_release(cell)
    return out


def _per_line(cell, path, name, config):
    """The call sites' counts added up per line of the cell (the file `name`), the rest as
    outside; with the columns the model has (see LineView.levels)."""
    sites = [cell.sites[i] for i in range(cell.nsites)]
    counted = [s for s in sites if s.reads or s.writes]
    where = _addr2line(path, [s.offset for s in counted if s.offset != _NO_OFFSET], name)
    lines, outside = {}, [0] * len(COUNTS)
    for s in counted:
        line = where.get(s.offset)
        row = lines.setdefault(line, [0] * len(COUNTS)) if line else outside
        for i, n in enumerate(COUNTS):
            row[i] += getattr(s, n)
    levels = []
    if len(config.levels) > 1:
        levels.append("llc")
    if config.tlbs:
        levels.append("tlb")
    if config.classify and config.levels:
        levels.append("classes")
    return {
        "lines": lines,
        "outside": outside,
        "levels": levels,
        "other_threads": cell.other_threads,
    }


_NO_OFFSET = (1 << 64) - 1  # csrc/cell.c's site for calls from outside the cell's code
_WHERE = re.compile(r"^(.*):(\d+)")


def _addr2line(path, offsets, name):
    """{offset: line of the cell} for the return addresses that -g maps to the cell's source
    (the file ``name``); the call is the instruction before its return address."""
    tool = shutil.which("addr2line")
    if not offsets or not tool:
        return {}
    text = "\n".join(f"{o - 1:#x}" for o in offsets)
    out = subprocess.run(
        [tool, "-e", str(path)], input=text, capture_output=True, text=True, timeout=60
    ).stdout.splitlines()
    where = {}
    for offset, line in zip(offsets, out):
        m = _WHERE.match(line)
        # (gcc names a line whose code came from a macro, PL_LOAD's, by the file compiled, with
        # the line numbers of #line)
        if m and os.path.basename(m[1]) in (name, SOURCE_FILE):
            where[offset] = int(m[2])
    return where


def _with_stdout(fn):
    """Call fn with file descriptor 1 on a pipe that a thread drains, keeping the first
    OUTPUT_LIMIT bytes, so a cell that prints forever neither fills a disk nor blocks; returns
    (fn's value, the text kept, whether any was dropped). Files the cell writes itself are capped
    at FILE_LIMIT: a write past it fails with EFBIG instead of killing the worker (SIGXFSZ)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    r, w = os.pipe()
    kept = bytearray()
    dropped = 0

    def drain():
        nonlocal dropped
        while chunk := os.read(r, 1 << 16):
            room = max(0, OUTPUT_LIMIT - len(kept))
            kept.extend(chunk[:room])
            dropped += len(chunk) - len(chunk[:room])

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    saved = os.dup(1)
    os.dup2(w, 1)
    os.close(w)
    try:
        rc = fn()
    finally:
        os.dup2(saved, 1)  # the pipe's last write end closes: the reader sees its end
        os.close(saved)
        reader.join(timeout=2)  # a process that left the group may still hold the pipe
        if not reader.is_alive():
            os.close(r)
    return rc, kept.decode(errors="replace"), dropped > 0
