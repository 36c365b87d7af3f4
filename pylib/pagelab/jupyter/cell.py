"""The student's own C, measured and simulated: what the ``%%c`` magic runs.

The cell is compiled twice with -O2 as a shared object including pagelab_cell.h: once as is,
once with -DPL_SIM so that every PL_LOAD/PL_STORE also goes to the cache/TLB simulator. Each
build's main() then runs in a fresh worker (csrc/cell.c loads it), so a crash, an endless loop
or a memory hog ends that worker, never the kernel. Both answers come back as labelled readings
of the cell's region (PL_REGION_BEGIN..END, else all of main()).
"""

import os
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
from ..core.errors import BadInput
from ..core.reading import Reading
from ..counters import events as _events
from ..counters.group import CounterGroup
from ..counters.reasons import Facts
from ..native import worker as _worker
from ..native.shipped import include_dir

HEADER = "pagelab_cell.h"
# The student's cell is GNU C (PL_KEEP uses __typeof__ and an asm barrier), built like a program
# would be but as a shared object; --no-undefined makes a missing function a link error here
# rather than a failed dlopen later.
CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-fPIC", "-shared", "-Wl,--no-undefined"]
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
        lines = [f"{what}, compiled -O2; main() returned {self.status}"]
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
            lines.append(
                "  simulated: a model of this machine's caches and TLB, fed every PL_LOAD/STORE"
            )
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


def run(source, events=None, *, sim=True, timeout=DEFAULT_TIMEOUT, memory=DEFAULT_MEMORY):
    """Compile ``source`` (C with pagelab_cell.h) and run it measured and, with ``sim``,
    simulated. Compiler errors raise BadInput with gcc's messages (cell line numbers); a crash,
    a timeout or a hog raise the worker's one-line error for the measured run, and become the
    simulated column's reason for the simulated one."""
    if not isinstance(source, str) or not source.strip():
        raise BadInput("the cell is empty: write a C program with a main()")
    events = [e.name for e in _events.events(events or CELL_EVENTS)]  # bad names fail first
    work = tempfile.mkdtemp(prefix="pagelab-cell-")
    try:
        builds = _worker.call(
            "pagelab.jupyter.cell:build",
            {"source": source, "workdir": work},
            what="C cell compiler",
        )
        measured = _execute(builds["measured"], events, None, timeout, memory)
        result = _result(measured, builds)
        if not sim:
            result.simulated_reason = "not run (--no-sim)"
            return result
        try:
            simulated = _execute(builds["sim"], None, {}, timeout, memory)
        except _worker.WorkerError as e:
            result.simulated_reason = str(e)
        else:
            result.simulated = [
                Reading.from_dict(n, d)
                for n, d in simulated["metrics"].items()
                if d["source"] == "sim"
            ]
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _execute(path, events, sim, timeout, memory):
    """One run of a built cell in a worker; its failures say what most likely happened."""
    what = "simulated C cell" if sim is not None else "C cell"
    args = {"path": path, "events": events, "sim": sim}
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
        raw["label"], readings, stdout=raw["stdout"], status=raw["status"], notes=notes
    )


# ---- inside the workers ------------------------------------------------------------------


def _compiler():
    """$CC, else cc, else the compiler Python was built with (a conda environment's, which is on
    PATH there while `cc` may not be)."""
    for candidate in (os.environ.get("CC"), "cc", sysconfig.get_config_var("CC")):
        if candidate and shutil.which(shlex.split(candidate)[0]):
            return shlex.split(candidate)
    raise BadInput("no C compiler: %%c needs cc (gcc or clang) where the kernel runs")


def build(source, workdir):
    """Compile the measured and the simulated shared objects; BadInput carries gcc's errors."""
    work = Path(workdir)
    c = work / "cell.c"
    # the include comes first, then #line, so gcc numbers its messages as lines of the cell
    c.write_text(f'#include "{HEADER}"\n#line 1 "cell"\n{source}\n')
    out, warnings = {}, ""
    for variant, extra in (("measured", []), ("sim", ["-DPL_SIM"])):
        so = work / f"cell-{variant}.so"
        cmd = [*_compiler(), *CFLAGS, *extra, "-I", str(include_dir()), "-o", str(so), str(c)]
        p = subprocess.run([*cmd, "-lm"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise BadInput(p.stderr.strip() or f"cc failed with status {p.returncode}")
        if variant == "measured":
            warnings = p.stderr.strip()
        out[variant] = str(so)
    return {**out, "warnings": warnings}


def execute(path, events=None, sim=None):
    """Run a built cell's main() in this (worker) process. ``events`` are counted on this
    process (inherited by the cell's threads); ``sim`` (a simulator config) attaches the
    simulator instead."""
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
    return {
        "label": "region" if used else "main()",
        "metrics": metrics,
        "status": cell.status,
        "stdout": text,
        "notes": notes,
    }


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
