"""run_c and simulate_c: a cell's arguments and simulator configuration checked here, in the
parent, before any worker starts; then its builds run, each in a worker of its own."""

import re
import signal

from .._native import lib
from ..core.errors import BadInput
from ..core.reading import Reading
from ..counters import events as _events
from ..native import worker as _worker
from ..sim.config import make_config
from ..sim.lines import LineCounts, LineView
from .build import MODES, cached_build, describe, sim_mode
from .result import CellResult

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
# the largest quantum of the interleaving: beyond it, a thread's whole loop runs in one turn
QUANTUM_MAX = 1_000_000


def parse_threads_model(value=None):
    """How the simulated run sees the cell's threads, as (model, quantum), from a value of
    --threads-model: "cores" (the default: every thread on a core of its own, the threads'
    accesses interleaved PL_CELL_QUANTUM at a turn), "cores:N" (N accesses a turn), or "main"
    (main()'s thread alone on one core; the others' accesses counted, not simulated)."""
    text = "cores" if value is None else value
    name, _, quantum = text.partition(":") if isinstance(text, str) else ("", "", "")
    if text == "main":
        return "main", 0
    if text == "cores":
        return "cores", lib.PL_CELL_QUANTUM
    if name == "cores" and re.fullmatch("[0-9]{1,7}", quantum) and 1 <= int(quantum) <= QUANTUM_MAX:
        return "cores", int(quantum)
    raise BadInput(
        f"unknown threads model {value!r}: use cores (every thread on a core of its own, "
        f"{lib.PL_CELL_QUANTUM} accesses a turn), cores:N (N accesses a turn, 1 to "
        f"{QUANTUM_MAX:,}) or main (main()'s thread alone; the others' accesses are counted)"
    )


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
    threads_model=None,
):
    """Compile ``source`` (C with pagelab_cell.h) and run it measured and, unless ``sim`` is
    False, simulated: ``sim`` True picks the mode from the source (sim_mode), or names it
    ("every", "marked"). ``threads_model``: how the simulated run sees threads
    (parse_threads_model says which values; None is "cores"). ``config``: the simulator's
    geometry (None: this machine's; a dict as Simulator takes), checked before anything
    runs: a refused one leaves the measured run and says why there is no simulated one.
    ``force`` rebuilds a cached build. Compiler errors raise BadInput with the compiler's
    messages (cell line numbers); a crash, a timeout or a hog raise the worker's one-line
    error for the measured run, and become the simulated column's reason for the simulated
    one.
    The result's ``lines`` holds the simulated counts line by line."""
    mode = _check(source, sim, name)
    threads = parse_threads_model(threads_model)
    events = [e.name for e in _events.events(events or CELL_EVENTS)]  # bad names fail first
    spec = refused = None
    if mode is not None:
        try:  # checked before any worker starts; a refused one costs only the simulated run
            spec = make_config(config).to_dict()
        except BadInput as e:
            refused = f"not run: {e}"
    builds = cached_build(source, mode or "every", force, name)
    measured = _execute(builds["measured"], events, None, timeout, memory)
    result = _result(measured, builds)
    if mode is None:
        result.simulated_reason = "not run (--no-sim)"
        return result
    result.mode = mode
    if refused:
        result.simulated_reason = refused
        return result
    try:
        result.simulated, result.lines, _ = _simulate(
            source, name, builds, spec, timeout, memory, threads
        )
    except (_worker.WorkerError, BadInput) as e:
        # the measured run stands; the simulated column says why it is empty
        result.simulated_reason = f"not run: {e}"
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
    threads_model=None,
):
    """Only the simulated run of ``run_c``: (the simulated readings, the LineView, the run's
    record: label, status, stdout, notes, builds). What `pagelab sim c FILE.c` shows."""
    mode = _check(source, sim, name)
    threads = parse_threads_model(threads_model)
    if mode is None:
        raise BadInput(f"simulate_c runs the simulated build: sim is True or one of {MODES}")
    spec = make_config(config).to_dict()  # checked before anything is built
    builds = cached_build(source, mode, force, name)
    return _simulate(source, name, builds, spec, timeout, memory, threads)


def _simulate(source, name, builds, spec, timeout, memory, threads):
    """The simulated build run with ``spec`` (a checked SimConfig.to_dict()) and ``threads``
    (parse_threads_model's): (its readings, its LineView, the run's record, with the builds'
    description)."""
    simulated = _execute(builds["sim"], None, spec, timeout, memory, name, threads)
    simulated["builds"] = describe(builds)
    return _sim_readings(simulated), _lines(source, name, simulated, builds, threads), simulated


def _check(source, sim, name):
    """The simulated build's mode, or None for no simulated run; BadInput for bad arguments."""
    if not isinstance(source, str) or not source.strip():
        raise BadInput("the cell is empty: write a C program with a main()")
    if not re.fullmatch(r"[\w.+-]+", name):
        raise BadInput(f"the program's name {name!r} must be a plain file name")
    if sim is False or sim is None:
        return None
    if sim is not True and sim not in MODES:
        raise BadInput(f"unknown simulation mode {sim!r}: use {' or '.join(MODES)}")
    return sim_mode(source) if sim is True else sim


def _sim_readings(raw):
    return [Reading.from_dict(n, d) for n, d in raw["metrics"].items() if d["source"] == "sim"]


def _lines(source, name, raw, builds, threads):
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
        why = (
            "(--threads-model main: the model is one core's caches)"
            if threads[0] == "main"
            else "(beyond what the cores model takes: docs/simulator.md, Threads)"
        )
        notes.append(
            f"{raw['other_threads']:,} accesses by other threads than main()'s were not "
            f"simulated {why}"
        )
    if raw["threads"] > 1:
        notes.append(
            f"{raw['threads']} threads simulated, each on a core of its own (its own caches above "
            "the last level, which is shared, and its own DTLB; MESI coherence), their accesses "
            f"interleaved {threads[1]} at a turn in the order the threads were created "
            "(docs/simulator.md)"
        )
    if raw["unrecorded"]:
        notes.append(
            f"{raw['unrecorded']:,} accesses were not simulated: more than "
            f"{lib.PL_CELL_RECORDED_MAX:,} were waiting to be interleaved"
        )
    per_thread = {
        int(no): {int(t): LineCounts(*c) for t, c in by.items()}
        for no, by in raw["per_thread"].items()
    }
    return LineView(
        name,
        source,
        lines,
        LineCounts(*raw["outside"]),
        tuple(raw["levels"]),
        notes,
        per_thread,
    )


def _execute(path, events, sim, timeout, memory, name="cell", threads=("main", 0)):
    """One run of a built cell in a worker; its failures say what most likely happened."""
    what = "simulated C cell" if sim is not None else "C cell"
    args = {"path": path, "events": events, "sim": sim, "name": name, "threads": list(threads)}
    try:
        return _worker.call(
            "pagelab.cell.execute:execute", args, timeout=timeout, address_space=memory, what=what
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
        notes.append("the compiler warned:\n" + builds["warnings"])
    return CellResult(
        raw["label"],
        readings,
        stdout=raw["stdout"],
        status=raw["status"],
        notes=notes,
        exited=raw["exited"],
        builds=describe(builds),
    )
