"""Counts for every cell: what ``%pagelab autocount on`` prints under each executed cell.

One counter group on the kernel's main thread (where cells run) stays open while autocount is
on; IPython's pre_run_cell and post_run_cell hooks read it and getrusage around each cell and
print one line: page faults and task-clock from perf (or their labelled rusage stand-ins), minflt
and majflt from getrusage (the whole kernel process). The hooks' own cost, measured on empty
spans when autocount is turned on, is stated in the line rather than silently subtracted.
"""

import statistics
import sys

from ..counters import rusage as _rusage
from ..counters.group import CounterGroup, add_fallbacks, readings

EVENTS = ("page-faults", "task-clock")
CALIBRATION_SPANS = 5  # empty spans measured when turned on; their median is the stated cost


class AutoCount:
    """The hooks and the counter group behind ``%pagelab autocount on``."""

    def __init__(self, shell):
        self.shell = shell
        self.group = CounterGroup(EVENTS)
        self.group.enable()
        self._start = None
        spans = [self._span() for _ in range(CALIBRATION_SPANS)]
        self.overhead = {k: statistics.median(s[k] for s in spans) for k in spans[0]}
        shell.events.register("pre_run_cell", self.pre_run_cell)
        shell.events.register("post_run_cell", self.post_run_cell)

    def close(self):
        self.shell.events.unregister("pre_run_cell", self.pre_run_cell)
        self.shell.events.unregister("post_run_cell", self.post_run_cell)
        self.group.close()

    def _read(self):
        return self.group.read() if self.group.opened else None, _rusage.self_now()

    def _counts(self, start):
        """Readings by name for the span from ``start`` to now (None where unavailable)."""
        (c0, ru0), (c1, ru1) = start, self._read()
        usage = _rusage.delta(ru0, ru1)
        counters = add_fallbacks(readings(self.group.status, c0, c1), usage)
        return counters, usage

    def _span(self):
        counters, usage = self._counts(self._read())
        out = {r.name: r.best for r in counters if r.best is not None}
        out.update(minflt=usage["minflt"], majflt=usage["majflt"])
        return out

    def pre_run_cell(self, info=None):
        self._start = self._read()

    def post_run_cell(self, result=None):
        if self._start is None:  # the cell that turned autocount on
            return
        counters, usage = self._counts(self._start)
        self._start = None
        print(line(counters, usage, self.overhead), file=sys.stdout, flush=True)

    @property
    def cost(self):
        return cost(self.overhead)


def line(counters, usage, overhead):
    """The line under a cell: each count with its source, then the hooks' own cost."""
    parts = []
    for r in counters:
        if r.best is None:
            parts.append(f"{r.name} n/a ({r.reason})")
        elif r.value is None:  # a labelled stand-in
            parts.append(f"{r.name} {_fmt(r.best, r.unit)} ({r.best_source}: {r.fallback.name})")
        else:
            parts.append(f"{r.name} {_fmt(r.value, r.unit)} ({r.source})")
    parts += [f"{f} {usage[f]:,} (rusage)" for f in ("minflt", "majflt")]
    return f"pagelab: {' · '.join(parts)} [hooks' own cost, not subtracted: {cost(overhead)}]"


def cost(overhead):
    """The hooks' own cost as text: what an empty span measured."""
    return ", ".join(
        f"{k} {_fmt(v, 'ns' if k == 'task-clock' else '')}" for k, v in overhead.items()
    )


def _fmt(value, unit):
    if unit == "ns":
        return f"{value / 1e6:,.2f} ms" if value >= 1e6 else f"{value / 1e3:,.1f} us"
    return f"{value:,.0f}"
