"""The C workload table: parameters, validation, and running a workload inside a worker."""

import os
from dataclasses import dataclass

from .._native import ffi, lib
from ..core.errors import BadInput
from ..core.numbers import parse_int, quote
from ..core.reading import Reading
from ..counters import rusage as _rusage
from ..counters.group import CounterGroup, Counts, add_fallbacks, readings, rusage_readings
from ..counters.pin import pin
from ..counters.reasons import Facts


def _s(p):
    return ffi.string(p).decode() if p != ffi.NULL else None


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    min: int
    max: int
    unit: str
    choices: tuple | None
    help: str

    def shown(self, value):
        """The value as users write it: a choice name, or the number."""
        return self.choices[value] if self.choices else value

    def describe(self):
        if self.choices:
            choices = ", ".join(self.choices)
            return f"{self.name}: one of {choices} (default {self.shown(self.default)})"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.name}: {self.min}..{self.max}{unit} (default {self.default}) - {self.help}"


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    params: dict
    index: int
    has_sim: bool


def _table():
    out = {}
    for i in range(lib.pl_workload_count):
        w = lib.pl_workload_table[i]
        params = {}
        for k in range(w.nparams):
            p = w.params[k]
            choices = _s(p.choices)
            params[_s(p.name)] = Param(
                _s(p.name),
                getattr(p, "def"),  # `def` is a keyword
                p.min,
                p.max,
                _s(p.unit),
                tuple(choices.split(",")) if choices else None,
                _s(p.help),
            )
        out[_s(w.name)] = Workload(_s(w.name), _s(w.summary), params, i, w.run_sim != ffi.NULL)
    return out


WORKLOADS = _table()


def workload(name):
    if not isinstance(name, str):
        raise BadInput(f"an experiment name is a string, not {type(name).__name__}")
    if name not in WORKLOADS:
        close = _close(name, WORKLOADS, 2)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise BadInput(f"unknown experiment {quote(name)}{hint} (known: {', '.join(WORKLOADS)})")
    return WORKLOADS[name]


def _close(word, known, n):
    import difflib  # only on a typo: not paid by every worker

    return difflib.get_close_matches(word[:64], known, n=n, cutoff=0.5)


def validate(name, given):
    """Check ``given`` (name -> int, numeric string or choice name) against the C table and fill
    in defaults. Returns name -> int in table order. Raises BadInput on the first problem."""
    table = workload(name).params
    for key in given:
        if key not in table:
            close = _close(key, table, 1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise BadInput(
                f"{name} has no parameter {quote(key)}{hint} "
                f"(parameters: {', '.join(table) or 'none'})"
            )
    return {key: _value(name, p, given.get(key, p.default)) for key, p in table.items()}


def _value(exp, p, raw):
    if p.choices and isinstance(raw, str) and raw.strip() in p.choices:
        return p.choices.index(raw.strip())
    try:
        value = parse_int(raw, f"{exp}: {p.name}")
    except BadInput:
        if p.choices:
            raise BadInput(
                f"{exp}: {p.name} must be one of {', '.join(p.choices)}, got {quote(raw)}"
            ) from None
        raise
    if not p.min <= value <= p.max:
        what = f"0..{len(p.choices) - 1} or a name" if p.choices else f"{p.min}..{p.max}"
        unit = f" {p.unit}" if p.unit and not p.choices else ""
        raise BadInput(f"{exp}: {p.name} must be in {what}{unit}, got {value}")
    return value


# ---- facts both sides need: written once in csrc/workloads/pl_workloads.h, read through the cdef

PAGE = lib.pl_page_size()  # the base page, what one fault maps: the kernel's
HUGE_PAGE = lib.PL_HUGE_PAGE  # a PMD: what one transparent-huge-page fault maps
CACHE_LINE = lib.PL_CACHE_LINE  # cache: the unit of access
LATENCY_MAX_SIZES = lib.PL_LAT_MAX_SIZES  # latency: working-set sizes one run can hold
MOUNTAIN_WORD = lib.PL_MOUNTAIN_WORD  # mountain: bytes per load
MOUNTAIN_MAX_POINTS = lib.PL_MOUNTAIN_MAX_POINTS  # mountain: sizes x strides one run can hold
COMPETITION_SLICES = lib.PL_COMPETITION_SLICES  # competition: time slices per phase
COMPETITION_WRITE_CHUNK = lib.PL_COMPETITION_WRITE_CHUNK  # competition: the file's write size
MMAP_FILL_CHUNK = lib.PL_MMAP_FILL_CHUNK  # mmap-modes: the file's pwrite size
ADDR_NO_RANDOMIZE = lib.ADDR_NO_RANDOMIZE  # maps: the personality flag `setarch -R` sets
MAPS_SMALL_BLOCK = lib.PL_MAPS_SMALL_BLOCK  # maps: a malloc block from [heap]
MAPS_LARGE_BLOCK = lib.PL_MAPS_LARGE_BLOCK  # maps: a malloc block with a mapping of its own
EBIZZY_FIXED_MMAP_THRESHOLD = lib.PL_EBIZZY_FIXED_MMAP_THRESHOLD  # glibc's default, pinned
VSYSCALL_BASE = lib.PL_VSYSCALL_BASE  # the legacy vsyscall page (x86-64 ABI)
MAP32_WINDOW = (lib.PL_MAP32_WINDOW_LO, lib.PL_MAP32_WINDOW_HI)  # where MAP_32BIT searches
FAULT_PROFILE_BYTES = ffi.sizeof("struct pl_fault_profile")  # ebizzy: one thread's profile


def latency_sizes(min_kb, max_kb, ppo):
    """latency's working-set sizes in KiB, from the C function the sweep itself uses."""
    n = lib.pl_lat_sizes(min_kb, max_kb, ppo, ffi.NULL, 0)
    out = ffi.new("int64_t[]", max(n, 1))
    lib.pl_lat_sizes(min_kb, max_kb, ppo, out, n)
    return list(out[0:n])


# ---- inside the worker -------------------------------------------------------------------


def execute(name, params, events=None, sim=None, cwd=None, cpu_type=None):
    """Run workload ``name`` in this (worker) process and return its results as JSON-able data.

    ``events`` are opened as one group on this process (inherited by the workload's threads);
    whatever cannot open is reported with its reason. ``sim`` (a SimConfig.to_dict()) runs the
    -DPL_SIM build of the workload instead, with every access fed to the simulator. ``cwd`` is
    the scratch directory (pagelab.native.scratch) for workloads that make a file there.
    ``cpu_type``: this worker runs on that core type's CPUs and counts that PMU's part only.
    """
    w = workload(name)
    if cwd is not None:
        os.chdir(cwd)
    if cpu_type is not None:
        pin(cpu_type)  # the whole worker, before the workload starts any thread
    group = CounterGroup(events, inherit=True, cpu_type=cpu_type) if events else None
    try:  # closed on every path, a failing workload's too
        return _execute(w, params, group, sim)
    finally:
        if group:
            group.close()


def _execute(w, params, group, sim):
    name = w.name
    values = [params[k] for k in w.params]
    entry = lib.pl_workload_table[w.index]
    if group:
        group.enable()
    out = ffi.new("struct pl_out *")
    ctx = ffi.new("struct pl_ctx *")
    param_arr = ffi.new("int64_t[]", values or [0])
    ctx.param = param_arr
    ctx.group = group._group if group and group.opened else ffi.NULL
    ctx.out = out
    simulator = None
    if sim is not None:
        if not w.has_sim:
            raise BadInput(f"{name} has no simulated variant")
        # the model loads only in workers that simulate: a native run's worker starts lighter
        from ..sim import simulator as _sim
        from ..sim.config import SimConfig

        simulator = _sim.Simulator(SimConfig.from_dict(sim))
        ctx.sim = simulator._sim
        rc = entry.run_sim(ctx)
    else:
        rc = entry.run(ctx)
    if rc < 0:
        note = ffi.string(out.note).decode() or "the workload failed"
        raise OSError(-rc, f"{name}: {note}")
    if simulator is not None:
        simulator.stats()  # MemoryError if the model could not grow: its counts are incomplete
    facts = Facts.read()
    status = group.status if group else []
    regions = [
        {
            "label": ffi.string(r.label).decode(),
            "metrics": region_metrics(status, r, facts, simulator),
        }
        for r in out.region[0 : out.nregions]
    ]
    values_out = [
        {
            "label": ffi.string(v.label).decode(),
            "name": ffi.string(v.name).decode(),
            "value": v.value,
            "unit": ffi.string(v.unit).decode(),
            "source": ffi.string(v.source).decode(),
        }
        for v in out.value[0 : out.nvalues]
    ]
    result = {
        "regions": regions,
        "values": values_out,
        "facts": _facts(out),
        "overflow": bool(out.overflow),
    }
    if simulator is not None:
        result["sim"] = simulator.config.to_dict()
    return result


def _facts(out):
    """The workload's typed facts: label -> name -> number or text, in the order recorded."""
    facts = {}
    for f in out.fact[0 : out.nfacts]:
        if f.kind == lib.PL_FACT_TEXT:
            value = ffi.string(out.text + f.text).decode(errors="replace")
        else:
            value = f.number
        facts.setdefault(_s(f.label), {})[_s(f.name)] = value
    return facts


def region_metrics(status, r, facts, simulator=None):
    """The readings of one ``struct pl_region`` (a workload's, or a %%c cell's) as JSON-able
    dicts by name: the counters of its group (``status``) with their rusage stand-ins, rusage,
    the clock, and the simulator's counts when it ran under one."""

    slots = sum(len(s.parts) for s in status)

    def counts(snap):
        return Counts.of(snap.counts, slots)

    opened = any(s.opened for s in status)
    counters = readings(
        status, counts(r.begin) if opened else None, counts(r.end) if opened else None, facts
    )
    usage = _rusage.delta(_rusage.as_dict(r.begin.rusage), _rusage.as_dict(r.end.rusage))
    add_fallbacks(counters, usage)
    elapsed = (r.end.clock.tv_sec - r.begin.clock.tv_sec) + (
        r.end.clock.tv_nsec - r.begin.clock.tv_nsec
    ) / 1e9
    all_readings = counters + rusage_readings(usage) + [Reading("elapsed", elapsed, "clock", "s")]
    if simulator is not None:
        from ..sim.simulator import region_readings

        all_readings += region_readings(simulator.config, r.begin.sim, r.end.sim)
    return {rd.name: rd.to_dict() for rd in all_readings}
