"""Small helpers the experiment modules share."""

import statistics

from .._reading import Reading
from .._workloads import HUGE_PAGE, PAGE  # noqa: F401 (shared by the experiment modules)

MIB = 1 << 20
BLOCK = 512  # the unit of rusage inblock/oublock: the kernel keeps bytes of I/O, reports them >> 9


def faults(m):
    """Page faults of a measurement: perf's sw count, else its labelled rusage stand-in."""
    return m["page-faults"]


def per(reading, divisor, name, unit=""):
    """A reading divided by a count, keeping its source (or its fallback's)."""
    value = reading.best
    source = reading.best_source
    return Reading(
        name,
        None if value is None else value / divisor,
        source,
        unit,
        reason=None if value is not None else reading.reason,
    )


def ratio_text(x):
    return f"{x:,.0f}x" if x >= 10 else f"{x:.2g}x"


def mean_stdev(values):
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def unavailable(reading):
    """Why a reading cannot back a claim, or None if it can."""
    if reading.best is None:
        return f"{reading.name} is not available here ({reading.reason})"
    return None
