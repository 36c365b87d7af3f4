"""The cache/TLB simulator for notebooks and the CLI: the Pythonic layer over csrc/sim.

Every count it returns is simulated and labelled source "sim". Arrays of accesses go to C in
large slices (no Python per access); traces are read once, as a stream, and parsed and simulated
in C, a slice of records per call. Between slices Python looks at its signals, so Ctrl-C (or a
notebook's interrupt) stops a long simulation within milliseconds; the counts then hold what was
simulated so far. numpy is imported only by ``Simulator.access``.
"""

import errno
import os
import threading
from dataclasses import dataclass

from .._native import ffi, lib
from ..core.errors import BadInput
from ..core.reading import Reading
from . import report as _simreport
from . import trace as _trace
from .config import SimConfig, make_config, to_native

SOURCE = "sim"
# Accesses per array call: big enough that the Python loop costs nothing, small enough that
# Ctrl-C is seen within a few milliseconds.
SLICE = 1 << 20
MAX_SIZE = lib.PL_SIM_MAX_ACCESS


class _Rates:
    """What follows from reads, writes and their misses, for caches and TLBs alike."""

    @property
    def accesses(self):
        return self.reads + self.writes

    @property
    def misses(self):
        return self.read_misses + self.write_misses

    @property
    def hits(self):
        return self.accesses - self.misses

    @property
    def miss_rate(self):
        return self.misses / self.accesses if self.accesses else None


@dataclass(frozen=True)
class LevelStats(_Rates):
    """Counts of one cache level. compulsory/capacity/conflict are None without classification."""

    name: str
    reads: int
    writes: int
    read_misses: int
    write_misses: int
    evictions: int
    writebacks: int
    compulsory: int | None
    capacity: int | None
    conflict: int | None
    source: str = SOURCE

    COUNTS = (
        "accesses",
        "reads",
        "writes",
        "hits",
        "misses",
        "read_misses",
        "write_misses",
        "evictions",
        "writebacks",
        "compulsory",
        "capacity",
        "conflict",
    )


@dataclass(frozen=True)
class TLBStats(_Rates):
    """Counts of one TLB: lookups (one per access and page it covers) and misses."""

    name: str
    reads: int
    writes: int
    read_misses: int
    write_misses: int
    evictions: int
    source: str = SOURCE

    COUNTS = ("accesses", "hits", "misses", "read_misses", "write_misses", "evictions")


@dataclass(frozen=True)
class TraceInfo:
    """What a lackey trace held: data records go to the model, instruction records do not."""

    path: str
    lines: int
    loads: int
    stores: int
    modifies: int
    instructions: int
    skipped: int

    @property
    def data_records(self):
        return self.loads + self.stores + self.modifies


@dataclass(frozen=True)
class SimStats:
    """The counts of every level and TLB of one simulator, with its configuration and the trace
    replayed last (None if none was, since creation or reset)."""

    config: SimConfig
    levels: tuple
    tlbs: tuple
    trace: TraceInfo | None = None

    def __getitem__(self, name):
        for s in self.levels + self.tlbs:
            if s.name.lower() == name.lower():
                return s
        raise KeyError(name)

    def to_dict(self, experiment="sim"):
        return _simreport.stats_dict(self, experiment)

    def __str__(self):
        return _simreport.stats_text(self)


class Simulator:
    """A simulated cache/TLB hierarchy.

    ``config``: None (this machine: sysfs caches, CPUID TLBs), a SimConfig, or a dict of
    overrides such as {"l1": "32K:8:64", "l2": None, "llc": None, "stlb": None}. One simulator
    serves one thread at a time (calls are serialised by a lock).
    """

    def __init__(self, config=None):
        self.config = make_config(config)
        out = ffi.new("struct pl_sim **")
        rc = lib.pl_sim_create(to_native(self.config), out)
        if rc == -errno.ENOMEM:
            raise MemoryError("not enough memory for the simulated caches")
        if rc < 0:
            raise BadInput(f"the simulator rejected the configuration ({os.strerror(-rc)})")
        self._sim = ffi.gc(out[0], lib.pl_sim_destroy)
        self._lock = threading.Lock()
        self._trace = None

    def access(self, addresses, ops=None, sizes=None):
        """Simulate accesses in order.

        ``addresses``: integer array (or sequence) of byte addresses. ``ops``: None (all
        loads), one op for all, or an array: 0 load, 1 store, 2 modify (a load then a store).
        ``sizes``: None (1 byte each), one size for all, or an array of sizes from 1 to 512
        bytes (the widest access valgrind reports); an access that crosses a line or page
        boundary touches every line and page it covers. Interruptible: after Ctrl-C the counts
        hold the accesses simulated so far.
        """
        import numpy as np

        addr = _uint_array(addresses, np.uint64, "addresses")
        if addr.ndim != 1:
            raise BadInput(f"addresses must be one-dimensional, not of shape {addr.shape}")
        n = len(addr)
        op, op_all = _per_access(ops, np.uint8, "ops", n, 0)
        if op is not None and n and int(op.max()) > lib.PL_OP_MODIFY:
            raise BadInput("ops must be 0 (load), 1 (store) or 2 (modify)")
        if op is None and op_all > lib.PL_OP_MODIFY:
            raise BadInput(f"op {op_all} is not 0 (load), 1 (store) or 2 (modify)")
        size, size_all = _per_access(sizes, np.uint32, "sizes", n, 1)
        if size is not None and n:
            low, high = int(size.min()), int(size.max())
        else:
            low = high = size_all
        if low < 1 or high > MAX_SIZE:
            raise BadInput(
                f"sizes must be 1 to {MAX_SIZE} bytes (the widest access valgrind reports)"
            )
        pa, po, ps = _ptr("uint64_t[]", addr), _ptr("uint8_t[]", op), _ptr("uint32_t[]", size)
        with self._lock:
            for i in range(0, n, SLICE):
                lib.pl_sim_access_array(
                    self._sim,
                    pa + i,
                    po + i if op is not None else po,
                    ps + i if size is not None else ps,
                    min(SLICE, n - i),
                    op_all,
                    size_all,
                )

    def replay(self, path):
        """Replay a valgrind lackey trace (data records only) and return its TraceInfo.

        The trace is read once, front to back, so a pipe or FIFO works as a file does. A
        malformed line raises BadInput naming it; a simulator that was empty before the call is
        then empty again.
        """
        with self._lock:
            empty = self._empty()
            try:
                info = _info(path, _trace.replay(self._sim, path, ignore_size=False))
            except BadInput:
                if empty:
                    lib.pl_sim_reset(self._sim)
                raise
            self._trace = info
        return info

    def _empty(self):
        st = ffi.new("struct pl_sim_stats *")
        lib.pl_sim_stats(self._sim, st)
        return not any(c.reads or c.writes for c in (*st.level, *st.tlb))

    def stats(self):
        """Counts so far, per level and TLB, all labelled source 'sim'."""
        st = ffi.new("struct pl_sim_stats *")
        with self._lock:
            rc = lib.pl_sim_stats(self._sim, st)
            trace = self._trace
        if rc == -errno.ENOMEM:
            raise MemoryError(
                "the simulated caches or their miss classification ran out of memory as they "
                "grew; the counts are incomplete"
            )
        classify = self.config.classify
        levels = tuple(
            LevelStats(
                name,
                c.reads,
                c.writes,
                c.read_misses,
                c.write_misses,
                c.evictions,
                c.writebacks,
                *(
                    (c.compulsory, c.capacity, c.conflict)
                    if classify is True or (classify and i == 0)
                    else (None, None, None)
                ),
            )
            for i, ((name, _), c) in enumerate(zip(self.config.levels, st.level))
        )
        tlbs = tuple(
            TLBStats(name, c.reads, c.writes, c.read_misses, c.write_misses, c.evictions)
            for (name, _), c in zip(self.config.tlbs, st.tlb)
        )
        return SimStats(self.config, levels, tlbs, trace)

    def reset(self):
        """Empty every level and TLB, zero the counts, rewind the random seed."""
        with self._lock:
            lib.pl_sim_reset(self._sim)
            self._trace = None


# --- traces -----------------------------------------------------------------------------------


def _info(path, t):
    return TraceInfo(
        str(path), t.line, t.loads, t.stores, t.modifies, instructions=t.instr, skipped=t.skipped
    )


def scan_trace(path):
    """Check a whole lackey trace and count its records; BadInput if it is unreadable or has a
    malformed line (the message names the line)."""
    t = _trace.open_trace(path)
    addr, size, op = _trace.buffers()
    for _ in _trace.records(path, t, lambda: lib.pl_trace_read(t, addr, size, op, _trace.CHUNK)):
        pass
    return _info(path, t)


# --- arrays -----------------------------------------------------------------------------------


def _ptr(ctype, array):
    return ffi.NULL if array is None else ffi.from_buffer(ctype, array)


def _uint_array(values, dtype, what):
    """A C-contiguous array of dtype, or BadInput if values are not integers in its range."""
    import numpy as np

    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as e:
        raise BadInput(f"{what} must be integers ({e})") from None
    if a.dtype == object:
        try:
            a = np.asarray(values, dtype=np.uint64)
        except (TypeError, ValueError, OverflowError):
            raise BadInput(f"{what} must be integers in [0, 2**64)") from None
    if a.size == 0:  # [] is float64 to numpy, but no accesses is a fine request
        a = a.astype(dtype)
    if a.dtype.kind not in "iu":
        raise BadInput(f"{what} must be integers, not {a.dtype}")
    top = np.iinfo(dtype).max
    # only the checks the source type needs: a uint64 array of addresses costs no pass at all
    if a.size and (
        (a.dtype.kind == "i" and int(a.min()) < 0)
        or (np.iinfo(a.dtype).max > top and int(a.max()) > top)
    ):
        raise BadInput(f"{what} must lie in [0, {top}]")
    # ascontiguousarray would turn a 0-d array (one value for all accesses) into shape (1,)
    return a.astype(dtype) if a.ndim == 0 else np.ascontiguousarray(a, dtype=dtype)


def _per_access(values, dtype, what, n, default):
    """(array, None) for one value per access, or (None, value) for one value for all."""
    if values is None:
        return None, default
    a = _uint_array(values, dtype, what)
    if a.ndim == 0:
        return None, int(a)
    if a.shape != (n,):
        raise BadInput(f"{what} has shape {a.shape}; it must match the {n} addresses")
    return a, 0


# --- regions of -DPL_SIM workloads ------------------------------------------------------------

_CLASSES = ("compulsory", "capacity", "conflict")


def region_readings(config, begin, end):
    """The simulator's counts between two ``struct pl_sim_stats`` snapshots of a workload region,
    as Readings with source 'sim', named as perf names the events they model (L1-dcache-*,
    LLC-*, dTLB-*), so claims read simulated and measured counts alike."""

    def delta(b, e, field):
        return getattr(e, field) - getattr(b, field)

    groups = []
    if config.levels:
        groups.append(("L1-dcache", begin.level[0], end.level[0]))
        if len(config.levels) > 1:
            last = len(config.levels) - 1
            groups.append(("LLC", begin.level[last], end.level[last]))
    if config.tlbs:
        groups.append(("dTLB", begin.tlb[0], end.tlb[0]))
    out = []
    for prefix, b, e in groups:
        out += [
            Reading(f"{prefix}-loads", delta(b, e, "reads"), "sim"),
            Reading(f"{prefix}-load-misses", delta(b, e, "read_misses"), "sim"),
            Reading(f"{prefix}-stores", delta(b, e, "writes"), "sim"),
            Reading(f"{prefix}-store-misses", delta(b, e, "write_misses"), "sim"),
        ]
    if config.classify and config.levels:
        out += [
            Reading(f"L1 {kind} misses", delta(begin.level[0], end.level[0], kind), "sim")
            for kind in _CLASSES
        ]
    return out
