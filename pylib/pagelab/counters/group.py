"""Counter groups and what they read: the Pythonic layer over csrc/perf/counters.c."""

import errno as E
import os
import time
from dataclasses import dataclass, field

from .._native import ffi, lib
from ..core.errors import BadInput
from ..core.reading import Reading
from . import events as _events
from . import rusage as _rusage
from .reasons import Facts, explain

PID_MAX = (1 << 31) - 1  # pid_t is a signed 32-bit int


@dataclass(frozen=True)
class Counts:
    """A raw snapshot of a group: counts by event index and the group's enabled/running times."""

    time_enabled: int
    time_running: int
    values: tuple
    via_rdpmc: bool = False


@dataclass(frozen=True)
class EventStatus:
    event: _events.Event
    opened: bool
    errno: int = 0
    kernel_excluded: bool = False


class CounterGroup:
    """A perf_event_open group on this thread (pid 0), a child or another process.

    Events that cannot open are kept with their errno; the rest still count. Use as a context
    manager, or call close(). Reading costs one read(2) (or none with rdpmc, where allowed).
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
    ):
        if not isinstance(pid, int) or isinstance(pid, bool) or not 0 <= pid <= PID_MAX:
            raise BadInput(f"pid must be 0 (this thread) or a positive process id, not {pid!r}")
        self.events = _events.events(events)
        self.pid = pid
        n = len(self.events)
        self._group = ffi.new("struct pl_group *")
        flags = (
            (lib.PL_INHERIT if inherit else 0)
            | (lib.PL_ENABLE_ON_EXEC if enable_on_exec else 0)
            | (lib.PL_USE_RDPMC if rdpmc else 0)
            | (lib.PL_EXCLUDE_KERNEL if exclude_kernel else 0)
        )
        rc = lib.pl_group_open(
            self._group,
            [e.type for e in self.events],
            [e.config for e in self.events],
            n,
            pid,
            flags,
        )
        if rc < 0:
            raise OSError(-rc, os.strerror(-rc))
        g = self._group
        self.status = [
            EventStatus(e, g.fd[i] >= 0, g.err[i], bool(g.kernel_excluded[i]))
            for i, e in enumerate(self.events)
        ]
        if rc == 0 and all(s.errno == E.ESRCH for s in self.status):
            raise ProcessLookupError(f"no process with pid {pid}")
        self._closed = False

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
        return Counts(
            c.time_enabled,
            c.time_running,
            tuple(c.value[i] for i in range(len(self.events))),
            bool(c.via_rdpmc),
        )

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


def readings(status, before, after, facts=None):
    """Turn two snapshots of a group (raw Counts, or None if nothing opened) into Readings."""
    out = []
    enabled = after.time_enabled - before.time_enabled if after else 0
    running = after.time_running - before.time_running if after else 0
    for i, s in enumerate(status):
        ev = s.event
        if not s.opened:
            facts = facts or Facts.read()  # only a failure needs explaining
            reason = explain(s.errno, ev.source, facts)
            out.append(Reading(ev.name, None, ev.source, ev.unit, reason=str(reason)))
            continue
        raw = after.values[i] - before.values[i]
        if running == 0 and enabled > 0:
            out.append(
                Reading(
                    ev.name,
                    None,
                    ev.source,
                    ev.unit,
                    kernel_excluded=s.kernel_excluded,
                    reason="never scheduled on the PMU (other groups held it)",
                )
            )
            continue
        scaled = 0 < running < enabled
        value = round(raw * enabled / running) if scaled else raw
        out.append(Reading(ev.name, value, ev.source, ev.unit, scaled, s.kernel_excluded))
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
    """

    def __init__(self, events=None):
        self._events = events
        self.result = Measurement()

    def __enter__(self):
        self._group = CounterGroup(self._events)
        try:
            self._group.enable()
            self._ru0 = _rusage.self_now()
            self._t0 = time.perf_counter_ns()
            self._c0 = self._group.read() if self._group.opened else None
        except BaseException:
            self._group.close()
            raise
        return self.result

    def __exit__(self, *exc):
        try:
            c1 = self._group.read() if self._group.opened else None
            t1 = time.perf_counter_ns()
            usage = _rusage.delta(self._ru0, _rusage.self_now())
        finally:
            self._group.close()
        counters = readings(self._group.status, self._c0, c1)
        self.result.counters = add_fallbacks(counters, usage)
        self.result.rusage = rusage_readings(usage)
        self.result.elapsed = Reading("elapsed", (t1 - self._t0) / 1e9, "clock", "s")
        return False
