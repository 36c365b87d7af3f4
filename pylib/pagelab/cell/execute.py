"""Inside a worker: one run of a built cell's main(), counted or simulated, its output kept."""

import os
import re
import resource
import shutil
import signal
import subprocess
import threading

from .._native import ffi, lib
from ..core.errors import BadInput
from ..counters.group import CounterGroup
from ..counters.reasons import Facts
from ..native import worker as _worker
from ..native.workloads import region_metrics
from ..sim.config import SimConfig, to_native
from ..sim.lines import COUNTS
from ..sim.simulator import Simulator
from .build import SOURCE_FILE

OUTPUT_LIMIT = 1 << 20  # bytes of printf output kept per run (the rest is read and dropped)
FILE_LIMIT = 1 << 30  # bytes a file the cell writes may reach (scratch may be RAM: tmpfs)


def execute(path, events=None, sim=None, name="cell", threads=("main", 0)):
    """Run a built cell's main() in this (worker) process. ``events`` are counted on this
    process (inherited by the cell's threads); ``sim`` (a SimConfig.to_dict(), checked in the
    parent) attaches the simulator instead, and the accesses come back per line of ``name``
    too. ``threads``: how the simulator sees the cell's threads, (model, quantum) as
    run.parse_threads_model returns it."""
    cell = ffi.new("struct pl_cell *")
    group = simulator = native_config = None
    if sim is None:
        group = CounterGroup(events, inherit=True)
        group.enable()
        cell.region.group = group._group if group.opened else ffi.NULL
    else:
        simulator = Simulator(SimConfig.from_dict(sim))
        cell.region.sim = simulator._sim
        model, cell.quantum = threads
        cell.threads_model = lib.PL_THREADS_CORES if model == "cores" else lib.PL_THREADS_MAIN
        native_config = to_native(simulator.config)  # alive as long as the cell
        cell.config = native_config

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
    if simulator is not None and cell.threads > 1:
        metrics["L1 coherence misses"] = {
            "value": region.end.sim.level[0].coherence - region.begin.sim.level[0].coherence,
            "source": "sim",
        }
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
    lines, outside, threads = {}, [0] * len(COUNTS), {}
    for s in counted:
        line = where.get(s.offset)
        row = lines.setdefault(line, [0] * len(COUNTS)) if line else outside
        mine = threads.setdefault(line or 0, {}).setdefault(s.thread, [0] * len(COUNTS))
        for i, n in enumerate(COUNTS):
            row[i] += getattr(s, n)
            mine[i] += getattr(s, n)
    levels = []
    if len(config.levels) > 1:
        levels.append("llc")
    if config.tlbs:
        levels.append("tlb")
    if config.classify and config.levels:
        levels.append("classes")
    several = cell.threads > 1
    if several and config.levels:
        levels.append("coherence")
    return {
        "lines": lines,
        "outside": outside,
        "levels": levels,
        "other_threads": cell.other_threads,
        "threads": cell.threads,
        # per line (0: outside), per thread: only when threads were simulated
        "per_thread": threads if several else {},
        "unrecorded": cell.unrecorded,
    }


_NO_OFFSET = (1 << 64) - 1  # csrc/cell/cell.c's site for calls from outside the cell's code
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
