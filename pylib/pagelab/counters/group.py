"""Counter groups and what they read: the Pythonic layer over csrc/perf/counters.c."""

import errno as E
import os
import time
from dataclasses import dataclass, field, replace

from .._native import ffi, lib
from ..core.errors import BadInput
from ..core.reading import Reading
from ..machine import pmus as _pmus
from . import events as _events
from . import pin as _pin
from . import rusage as _rusage
from .reasons import Facts, explain

PID_MAX = (1 << 31) - 1  # pid_t is a signed 32-bit int
MAX_EVENTS = lib.PL_MAX_EVENTS


@dataclass(frozen=True)
class Counts:
    """A raw snapshot: per opened perf event (a Part), its count and its group's enabled and
    running times (ns), by slot."""

    values: tuple
    enabled: tuple
    running: tuple
    via_rdpmc: bool = False

    @classmethod
    def of(cls, c, n):
        """The first n slots of a ``struct pl_counts``."""
        return cls(
            tuple(c.value[0:n]),
            tuple(c.time_enabled[0:n]),
            tuple(c.time_running[0:n]),
            bool(c.via_rdpmc),
        )


@dataclass(frozen=True)
class Part:
    """One perf event opened for a requested event: the event itself, or on a machine with one
    core PMU per core type, its copy for one of them (``pmu``), told apart by the PMU's type in
    the upper 32 bits of config, as perf does (docs/counters.md)."""

    slot: int  # index in the C group's arrays
    pmu: str | None  # core PMU name; None for software events and machines without a PMU
    type: int
    config: int
    group: int  # perf group number: software events share one, each hardware part has its own
    opened: bool = False
    errno: int = 0
    kernel_excluded: bool = False


@dataclass(frozen=True)
class EventStatus:
    event: _events.Event
    parts: tuple  # (Part, ...)
    cpu_type: str | None = None  # counted on this core type only
    one_pmu: bool = False  # a generic event the kernel bound to one of several core PMUs

    @property
    def opened(self):
        return any(p.opened for p in self.parts)

    @property
    def errno(self):
        """The errno of the first part that failed, 0 if all opened."""
        return next((p.errno for p in self.parts if not p.opened), 0)

    @property
    def kernel_excluded(self):
        return any(p.kernel_excluded for p in self.parts if p.opened)


HW_TYPES = (lib.PERF_TYPE_HARDWARE, lib.PERF_TYPE_HW_CACHE)
# What a kernel answers for a PMU type in config it cannot take (perf_init_event: ENOENT when
# the PMU lacks PERF_PMU_CAP_EXTENDED_HW_TYPE; some drivers reject the config: EINVAL).
_NO_EXTENDED_TYPE = (E.ENOENT, E.EOPNOTSUPP, E.EINVAL)


def _refused(status):
    return all(not p.opened and p.errno in _NO_EXTENDED_TYPE for p in status.parts)


PMU_TYPE_SHIFT = 32  # perf_event.h: PERF_PMU_TYPE_SHIFT, the extended hardware event type


def plan(events, core_pmus, cpu_type=None, generic=frozenset()):
    """The perf events to open for ``events``: [[Part, ...] per event].

    Software events share one group. A generic hardware event is one part per core PMU on a
    machine with several (its config carrying the PMU's type, so each counts on its own cores,
    and pagelab adds them up), else one part; every hardware part leads a group of its own, so
    that more events than counters multiplex, as perf stat does, instead of never counting.
    ``cpu_type`` keeps only that core PMU's parts. Events named in ``generic`` are opened once,
    without a PMU type, for kernels that cannot take one (CounterGroup falls back to that).
    """
    hybrid = len(core_pmus) > 1
    if cpu_type is not None:
        names = [p.name for p in core_pmus]
        if cpu_type not in names:
            there = ", ".join(names) or "none (no hardware PMU here)"
            raise BadInput(f"no core type {cpu_type!r} on this machine; its core PMUs: {there}")
        core_pmus = [p for p in core_pmus if p.name == cpu_type]
    by_type = {p.type: p.name for p in core_pmus}
    out, slot, group = [], 0, 1
    for ev in events:
        if ev.type == lib.PERF_TYPE_SOFTWARE:
            specs = [(None, ev.type, ev.config, 0)]
        elif ev.type in HW_TYPES and hybrid and ev.name not in generic:
            specs = [
                (p.name, ev.type, ev.config | p.type << PMU_TYPE_SHIFT, None) for p in core_pmus
            ]
        elif ev.type in HW_TYPES:
            specs = [(core_pmus[0].name if len(core_pmus) == 1 else None, ev.type, ev.config, None)]
        else:  # raw codes and TYPE:CONFIG go to the PMU of that type
            specs = [(by_type.get(ev.type), ev.type, ev.config, None)]
        parts = []
        for pmu, kind, config, g in specs:
            if g is None:
                g, group = group, group + 1
            parts.append(Part(slot, pmu, kind, config, g))
            slot += 1
        out.append(parts)
    return out


class CounterGroup:
    """Counters for a set of events on this thread (pid 0), a child or another process.

    Events that cannot open are kept with their errno; the rest still count. Use as a context
    manager, or call close(). Reading costs one read(2) per perf group (or none with rdpmc,
    where allowed). On a machine with one core PMU per core type (Intel hybrid, arm64
    big.LITTLE) each hardware event counts on every core type and its reading is their sum;
    ``cpu_type`` counts on that core type only (pin the thread there too: pagelab.pin).
    """

    def __init__(
        self,
        events=None,
        pid=0,
        *,
        inherit=False,
        enable_on_exec=False,
        rdpmc=False,
        exclude_kernel=False,
        cpu_type=None,
    ):
        if not isinstance(pid, int) or isinstance(pid, bool) or not 0 <= pid <= PID_MAX:
            raise BadInput(f"pid must be 0 (this thread) or a positive process id, not {pid!r}")
        _events.check_backend()
        self.events = _events.events(events)
        self.pid = pid
        self._flags = (
            (lib.PL_INHERIT if inherit else 0)
            | (lib.PL_ENABLE_ON_EXEC if enable_on_exec else 0)
            | (lib.PL_USE_RDPMC if rdpmc else 0)
            | (lib.PL_EXCLUDE_KERNEL if exclude_kernel else 0)
        )
        pmus = _pmus.core()
        self._open(plan(self.events, pmus, cpu_type), cpu_type)
        # A kernel without the extended type (arm64 before it had one) refuses every per-PMU
        # part of a generic event: open those once, plain, where the kernel binds them.
        refused = {s.event.name for s in self.status if len(s.parts) > 1 and _refused(s)}
        if refused and cpu_type is None:
            lib.pl_group_close(self._group)
            self._open(plan(self.events, pmus, None, frozenset(refused)), None, refused)
        if not self.opened and all(p.errno == E.ESRCH for s in self.status for p in s.parts):
            raise ProcessLookupError(f"no process with pid {pid}")
        self._closed = False

    def _open(self, planned, cpu_type, generic=frozenset()):
        flat = [p for parts in planned for p in parts]
        if len(flat) > MAX_EVENTS:
            raise BadInput(
                f"{len(self.events)} events need {len(flat)} perf events on this machine's "
                f"core PMUs; at most {MAX_EVENTS} fit: ask for fewer"
            )
        self._group = ffi.new("struct pl_group *")
        rc = lib.pl_group_open(
            self._group,
            [p.type for p in flat],
            [p.config for p in flat],
            [p.group for p in flat],
            len(flat),
            self.pid,
            self._flags,
        )
        if rc < 0:
            raise OSError(-rc, os.strerror(-rc))
        g = self._group
        self.status = [
            EventStatus(
                ev,
                tuple(
                    replace(
                        p,
                        opened=g.fd[p.slot] >= 0,
                        errno=g.err[p.slot],
                        kernel_excluded=bool(g.kernel_excluded[p.slot]),
                    )
                    for p in parts
                ),
                cpu_type,
                ev.name in generic,
            )
            for ev, parts in zip(self.events, planned)
        ]
        self.slots = len(flat)

    @property
    def opened(self):
        return any(s.opened for s in self.status)

    def enable(self):
        """Reset the counts to zero and start counting."""
        self._check(lib.pl_group_enable(self._group))

    def disable(self):
        self._check(lib.pl_group_disable(self._group))

    def read(self):
        c = ffi.new("struct pl_counts *")
        self._check(lib.pl_group_read(self._group, c))
        return Counts.of(c, self.slots)

    def readings(self, before, after, facts=None):
        """Readings for the span between two snapshots; unopened events say why."""
        return readings(self.status, before, after, facts)

    def close(self):
        if not self._closed:
            lib.pl_group_close(self._group)
            self._closed = True

    def _check(self, rc):
        if self._closed:
            raise ValueError("counter group is closed")
        if rc < 0:
            raise OSError(-rc, os.strerror(-rc))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if hasattr(self, "_closed"):
            self.close()


@dataclass(frozen=True)
class Total:
    """One event's count over a span, from its parts: what combine() found."""

    value: int | None  # None: it never counted (see why)
    scaled: bool = False  # multiplexed: extrapolated from the time its parts were on counters
    parts: dict | None = None  # {core PMU: its share}, on machines with several core PMUs
    why: str | None = None
    note: str | None = None


_NO_EXTENDED = "this kernel cannot open a generic event per core PMU (no extended PMU type)"
ONE_PMU_NOTE = f"counts only on the core type whose PMU the kernel bound it to: {_NO_EXTENDED}"


# The parts of one event are enabled and read one after another, a read(2) apart: a shortfall
# of running time that small is the reads, not multiplexing.
SKEW_NS = 10_000
SKEW_SHARE = 1e-3


def combine(status, before, after, facts=None):
    """The total of one event's opened parts between two snapshots (before None: from zero).

    The rule (docs/counters.md): each part counts only while the thread runs on its core type
    and its event is on a counter; every part is enabled the whole span. Without multiplexing
    the parts' running times add up to the span, and the total is the plain sum. When they add
    up to less, the events were multiplexed, and every part is scaled by span / sum of running,
    so a core type is never extrapolated to the time the thread spent on another. Where a core
    type could not open its part, the thread's time there is not counted: nothing is scaled,
    and the reading's note says which core types it covers.
    """
    opened = [p for p in status.parts if p.opened]
    missing = [p.pmu for p in status.parts if not p.opened]
    raw, enabled, running = {}, [], 0
    for p in opened:
        i = p.slot
        b = (before.values[i], before.enabled[i], before.running[i]) if before else (0, 0, 0)
        raw[p.pmu] = after.values[i] - b[0]
        enabled.append(after.enabled[i] - b[1])
        running += after.running[i] - b[2]
    span = min(enabled, default=0)
    if running == 0 and span > 0:
        return Total(None, why=_never_counted(status, facts))
    skew = 0 if len(opened) == 1 else max(SKEW_NS, span * SKEW_SHARE)
    scale = span / running if not missing and 0 < running < span - skew else 1
    parts = {k: round(v * scale) for k, v in raw.items()} if len(status.parts) > 1 else None
    note = ONE_PMU_NOTE if status.one_pmu else None
    if missing:
        covered = ", ".join(p.pmu for p in opened)
        note = f"counts on {covered} only: {', '.join(missing)} cannot count it (not scaled)"
    return Total(round(sum(raw.values()) * scale), scale != 1, parts, note=note)


def _never_counted(status, facts):
    if status.cpu_type:
        return f"counted nothing: the thread never ran on a {status.cpu_type} core"
    if status.one_pmu:
        return f"counted nothing: the thread never ran where the kernel bound it; {_NO_EXTENDED}"
    if any(not p.opened for p in status.parts):
        on = ", ".join(p.pmu for p in status.parts if p.opened)
        return f"counted nothing: the thread never ran on {on}, the only core type that counts it"
    facts = facts or Facts.read()
    watchdog = " (the NMI watchdog holds one)" if facts.nmi_watchdog else ""
    return f"never on a counter: other events held every counter{watchdog}"


def readings(status, before, after, facts=None):
    """Turn two snapshots (raw Counts, or None if nothing opened) into Readings."""
    out = []
    for s in status:
        ev = s.event
        if not s.opened:
            facts = facts or Facts.read()  # only a failure needs explaining
            reason = explain(s.errno, ev.source, facts)
            out.append(Reading(ev.name, None, ev.source, ev.unit, reason=str(reason)))
            continue
        t = combine(s, before, after, facts)
        out.append(
            Reading(
                ev.name,
                t.value,
                ev.source,
                ev.unit,
                t.scaled,
                s.kernel_excluded,
                reason=t.why,
                parts=t.parts,
                note=t.note,
            )
        )
    return out


def rusage_readings(usage):
    """Readings (source 'rusage') for a dict of rusage fields."""
    return [Reading(f, usage[f], "rusage", _rusage.FIELDS[f]) for f in _rusage.FIELDS if f in usage]


def add_fallbacks(counter_readings, usage):
    """Give each unavailable software event its labelled rusage stand-in."""
    for r in counter_readings:
        if r.value is None and r.name in _rusage.SW_FALLBACK:
            parts = _rusage.SW_FALLBACK[r.name]
            r.fallback = Reading("+".join(parts), sum(usage[p] for p in parts), "rusage")
    return counter_readings


@dataclass
class Measurement:
    """What measure() saw: counter readings, rusage deltas and the wall-clock time."""

    counters: list = field(default_factory=list)
    rusage: list = field(default_factory=list)
    elapsed: Reading | None = None

    @property
    def readings(self):
        return self.counters + self.rusage + ([self.elapsed] if self.elapsed else [])

    def __getitem__(self, name):
        for r in self.readings:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self):
        return {r.name: r.to_dict() for r in self.readings}

    def __str__(self):
        return "\n".join(str(r) for r in self.readings)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


class measure:
    """Count events around a block of Python code in this thread::

        with pagelab.measure("page-faults,dTLB-load-misses") as m:
            buf = bytearray(64 << 20)
        print(m)

    What lands inside the counted span is one group read from Python: measured here (software
    profile, docs/performance.md) ~6 us of task-clock, at most a couple of page faults, ~12 us
    elapsed for an empty block. Opening and closing the group (~0.4 ms of perf_event_open and
    close) happen outside it. Only this thread is counted; rusage covers the whole process. C
    workloads count inside C around the hot loop instead (see ``pagelab.run``).

    ``cpu_type`` (a core PMU's name on a hybrid or big.LITTLE machine) keeps this thread on that
    core type for the block and counts that PMU's part only.
    """

    def __init__(self, events=None, cpu_type=None):
        self._events = events
        self._cpu_type = cpu_type
        self.result = Measurement()

    def __enter__(self):
        self._pin = _pin.pinned(self._cpu_type)
        self._pin.__enter__()
        try:
            self._group = CounterGroup(self._events, cpu_type=self._cpu_type)
        except BaseException:
            self._pin.__exit__(None, None, None)
            raise
        try:
            self._group.enable()
            self._ru0 = _rusage.self_now()
            self._t0 = time.perf_counter_ns()
            self._c0 = self._group.read() if self._group.opened else None
        except BaseException:
            self._group.close()
            self._pin.__exit__(None, None, None)
            raise
        return self.result

    def __exit__(self, *exc):
        try:
            c1 = self._group.read() if self._group.opened else None
            t1 = time.perf_counter_ns()
            usage = _rusage.delta(self._ru0, _rusage.self_now())
        finally:
            self._group.close()
            self._pin.__exit__(None, None, None)
        counters = readings(self._group.status, self._c0, c1)
        self.result.counters = add_fallbacks(counters, usage)
        self.result.rusage = rusage_readings(usage)
        self.result.elapsed = Reading("elapsed", (t1 - self._t0) / 1e9, "clock", "s")
        return False
