"""Small helpers the experiment modules share."""

import statistics

from ..core.numbers import format_size
from ..core.reading import Reading
from ..machine import caches as _caches
from ..native.workloads import HUGE_PAGE, PAGE  # noqa: F401 (shared by the experiment modules)
from ..sim.config import assumed_levels

MIB = 1 << 20
# Automatic sweeps (latency, mountain) reach SWEEP_FACTOR x the largest cache, past it by two
# doublings so that memory's plateau shows, but never beyond SWEEP_CAP_KB: a default run then
# takes about as long on a server with a 480 MiB L3 as on a laptop with 16 MiB, and a claim about
# a cache the sweep cannot reach says so. A student reaches further with max_kb.
SWEEP_FACTOR = 4
SWEEP_CAP_KB = 128 * 1024
ASSUMED_LLC = assumed_levels()["llc"].size  # the simulator's LLC where the machine reports none
BLOCK = 512  # the unit of rusage inblock/oublock: the kernel keeps bytes of I/O, reports them >> 9


def caches():
    """The data caches the machine reports, smallest first: [(name, bytes)], e.g. ("L1d", 32768)."""
    return [(c.name, c.size) for c in _caches.data_caches()]


def sweep_limits(budget):
    """(want, cap, why) in KiB for an automatic sweep (latency, mountain): it wants to reach
    SWEEP_FACTOR x the largest cache, may not pass cap (SWEEP_CAP_KB, the memory ``budget``
    in bytes or None), and ``why`` is the sentence a claim quotes when want is beyond cap (else
    None)."""
    found = caches()
    largest = found[-1][1] if found else ASSUMED_LLC  # what the simulator assumes then
    want = SWEEP_FACTOR * largest // 1024
    limits = [(SWEEP_CAP_KB, f"an automatic sweep stops at {format_size(SWEEP_CAP_KB << 10)}")]
    if budget is not None:
        limits.append((budget // 1024, f"the memory budget is {format_size(budget)}"))
    cap, why = min(limits)
    if want <= cap:
        return want, cap, None
    return want, cap, f"{why}; a larger max_kb reaches further, within the memory budget"


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
