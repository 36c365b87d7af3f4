"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.
"""

from ._counters import CounterGroup, Measurement, Reading, measure
from ._doctor import doctor
from ._errors import BadInput, BudgetExceeded, CounterUnavailable, PagelabError, UnknownEvent
from ._events import DEFAULT_EVENTS, Event, event, events
from ._sim import (CachelabResult, LevelStats, SimStats, Simulator, TLBStats, TraceInfo, cachelab,
                   scan_trace)
from ._simconfig import CacheGeometry, SimConfig, TLBGeometry, default_config
from ._stat import stat
from ._version import __version__

__all__ = [
    "BadInput", "BudgetExceeded", "CacheGeometry", "CachelabResult", "CounterGroup",
    "CounterUnavailable", "DEFAULT_EVENTS", "Event", "LevelStats", "Measurement", "PagelabError",
    "Reading", "SimConfig", "SimStats", "Simulator", "TLBGeometry", "TLBStats", "TraceInfo",
    "UnknownEvent", "__version__", "cachelab", "default_config", "doctor", "event", "events",
    "measure", "scan_trace", "stat",
]
