"""Running totals of a process's counters, read again and again: what LiveCounters samples.

A Probe opens one counter group on one process (the notebook kernel's main thread, a pid, or a
pagelab worker) and reads every event's total since the probe opened. An event that cannot open
keeps its reason; a software event with an rusage stand-in (page faults, context switches) is
read from getrusage or /proc/PID/stat instead, labelled 'rusage' with a note saying what stands
in. A Sampler follows a target whose process may change (a run handle starts one worker after
another) and keeps the totals running across them.
"""

import math
import os
import resource
from dataclasses import dataclass

from ..core.errors import BadInput
from . import events as _events
from . import rusage as _rusage
from .group import CounterGroup, combine
from .reasons import Facts, explain

# What a live widget shows without `events=`: what faulting and scheduling look like, in events
# that count in the software-only profile too.
LIVE_EVENTS = ("page-faults", "major-faults", "context-switches", "task-clock")
MAX_HZ = 30  # what a person can follow; sampling faster only costs the watched process


@dataclass(frozen=True)
class Series:
    """One counter as the view shows it: name, unit, source, and why it is unavailable."""

    name: str
    unit: str
    source: str
    reason: str = ""  # why no value can be read here ("" when it can)
    note: str = ""  # e.g. which rusage fields stand in for the perf event

    def to_dict(self):
        return {k: getattr(self, k) for k in ("name", "unit", "source", "reason", "note")}


class Probe:
    """Totals of ``events`` for process ``pid`` (None: this process), counted from now on."""

    def __init__(self, events, pid=None):
        self.pid = pid
        own = pid is None
        self._group = CounterGroup(events, os.getpid() if own else pid)
        self._group.enable()
        self._readers = []
        self.series = []
        facts = None
        for i, s in enumerate(self._group.status):
            ev = s.event
            if s.opened:
                notes = ["main thread"] + ["user-space only"] * s.kernel_excluded
                note = ", ".join(notes)
                self.series.append(Series(ev.name, ev.unit, ev.source, note=note))
                self._readers.append(("counter", i))
                continue
            facts = facts or Facts.read()
            reason = str(explain(s.errno, ev.source, facts))
            fields = _rusage.SW_FALLBACK.get(ev.name)
            if fields and (own or set(fields) <= {"minflt", "majflt"}):
                whose = "getrusage, whole kernel process" if own else "/proc/PID/stat"
                note = f"perf unavailable ({reason}); {'+'.join(fields)} from {whose}"
                self.series.append(Series(ev.name, ev.unit, "rusage", note=note))
                self._readers.append(("rusage", fields))
            else:
                self.series.append(Series(ev.name, ev.unit, ev.source, reason=reason))
                self._readers.append(("none", None))
        self.rebase()

    def rebase(self):
        """Count from zero again, from now."""
        self._base = self._raw()

    def _usage(self):
        if self.pid is None:
            return _rusage.as_dict(resource.getrusage(resource.RUSAGE_SELF))
        return _rusage.proc_stat(self.pid)

    def _raw(self):
        counts = self._group.read() if self._group.opened else None
        usage = None
        out = []
        for kind, arg in self._readers:
            if kind == "counter":
                out.append(self._scaled(counts, arg))
            elif kind == "rusage":
                if usage is None:
                    try:
                        usage = self._usage()
                    except ProcessLookupError:  # it exited: its last totals stand
                        usage = {}
                out.append(sum(usage[f] for f in arg) if usage else math.nan)
            else:
                out.append(math.nan)
        return out

    def _scaled(self, counts, i):
        total = combine(self._group.status[i], None, counts)
        return math.nan if total.value is None else float(total.value)

    def read(self):
        """Each series' total since the probe opened; NaN where it cannot be read."""
        return [r - b for r, b in zip(self._raw(), self._base)]

    def close(self):
        self._group.close()


def target_pid(target):
    """The pid a target names right now: None for this process, an int, or a handle's worker."""
    if target is None or target == "kernel":
        return None
    if isinstance(target, int) and not isinstance(target, bool):
        if target <= 0:
            raise BadInput(f"target pid must be positive, not {target}")
        try:
            os.kill(target, 0)  # signal 0: only asks whether the process exists
        except ProcessLookupError:
            raise BadInput(f"no process with pid {target}") from None
        except PermissionError:
            pass  # it exists; perf or /proc will say what can be read
        return target
    if hasattr(target, "pid"):
        return target.pid
    raise BadInput(
        f"target must be None (this kernel), a pid or a run handle, not {type(target).__name__}"
    )


def describe(target):
    if target is None or target == "kernel":
        return f"this kernel (pid {os.getpid()})"
    if isinstance(target, int):
        return f"pid {target}"
    return str(target)


class Sampler:
    """Totals for ``target``, running on across the processes a handle starts one by one."""

    def __init__(self, events, target=None):
        self.events = _events.events(events or LIVE_EVENTS)
        self.target = target
        self._static = target is None or isinstance(target, (int, str))
        self._probe = None
        self._offset = [0.0] * len(self.events)
        self._last = [math.nan] * len(self.events)
        pid = target_pid(target)  # bad targets fail here, before any thread starts
        if self._static or pid is not None:
            self._probe = Probe(self.events, pid)
        self.series = self._probe.series if self._probe else self._waiting()

    def _waiting(self):
        return [
            Series(e.name, e.unit, e.source, note="waiting for the worker to start")
            for e in self.events
        ]

    def read(self):
        """The current totals (NaN where unknown)."""
        if not self._static:
            pid = target_pid(self.target)
            if pid is not None and (self._probe is None or self._probe.pid != pid):
                self._switch(pid)
        if self._probe is not None:
            now = self._probe.read()
            self._last = [
                o + v if not math.isnan(v) else last
                for o, v, last in zip(self._offset, now, self._last)
            ]
        return list(self._last)

    def _switch(self, pid):
        if self._probe is not None:
            self._probe.close()
            # a finished worker's totals carry over into the next one's
            self._offset = [0.0 if math.isnan(v) else v for v in self._last]
        try:
            self._probe = Probe(self.events, pid)
        except ProcessLookupError:  # gone before we got to it
            self._probe = None
            return
        self.series = self._probe.series

    def reset(self):
        """Start the totals from zero again."""
        if self._probe is not None:
            self._probe.rebase()
        self._offset = [0.0] * len(self.events)
        self._last = [math.nan] * len(self.events)

    def close(self):
        if self._probe is not None:
            self._probe.close()
            self._probe = None
