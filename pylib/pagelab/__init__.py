"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.
"""

from ._counters import CounterGroup, Measurement, measure
from ._doctor import doctor
from ._errors import BadInput, BudgetExceeded, CounterUnavailable, PagelabError, UnknownEvent
from ._events import DEFAULT_EVENTS, Event, event, events
from ._maps import parse_maps
from ._reading import Reading
from ._results import Claim, Measured, Result
from ._run import experiment_names, parameters, run, run_all
from ._schema import json_schema
from ._sim import (
    CachelabResult,
    LevelStats,
    SimStats,
    Simulator,
    TLBStats,
    TraceInfo,
    cachelab,
    scan_trace,
)
from ._simconfig import CacheGeometry, SimConfig, TLBGeometry, default_config
from ._stat import stat
from ._version import __version__
from ._worker import Interrupted, WorkerDied, WorkerError, WorkerTimeout

__all__ = [
    "DEFAULT_EVENTS",
    "BadInput",
    "BudgetExceeded",
    "CacheGeometry",
    "CachelabResult",
    "Claim",
    "CounterGroup",
    "CounterUnavailable",
    "Event",
    "Interrupted",
    "LevelStats",
    "Measured",
    "Measurement",
    "PagelabError",
    "Reading",
    "Result",
    "SimConfig",
    "SimStats",
    "Simulator",
    "TLBGeometry",
    "TLBStats",
    "TraceInfo",
    "UnknownEvent",
    "WorkerDied",
    "WorkerError",
    "WorkerTimeout",
    "__version__",
    "cachelab",
    "default_config",
    "doctor",
    "event",
    "events",
    "experiment_names",
    "json_schema",
    "measure",
    "parameters",
    "parse_maps",
    "run",
    "run_all",
    "scan_trace",
    "stat",
]
