"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.
"""

from ._counters import CounterGroup, Measurement, measure
from ._doctor import doctor
from ._errors import BadInput, BudgetExceeded, CounterUnavailable, PagelabError, UnknownEvent
from ._events import DEFAULT_EVENTS, Event, event, events
from ._maps import parse_maps
from ._reading import Reading
from ._reclaim import RECLAIM_POLICIES, ReclaimResult, page_string, reclaim
from ._results import Claim, Measured, Result
from ._run import experiment_names, parameters, run, run_all
from ._samples import sample_program, sample_trace
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
from ._source import Source, source
from ._squeeze import sandbox_parent, squeeze
from ._stat import stat
from ._version import __version__
from ._worker import Interrupted, WorkerDied, WorkerError, WorkerTimeout

__all__ = [
    "DEFAULT_EVENTS",
    "RECLAIM_POLICIES",
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
    "ReclaimResult",
    "Result",
    "SimConfig",
    "SimStats",
    "Simulator",
    "Source",
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
    "page_string",
    "parameters",
    "parse_maps",
    "reclaim",
    "run",
    "run_all",
    "sample_program",
    "sample_trace",
    "sandbox_parent",
    "scan_trace",
    "source",
    "squeeze",
    "stat",
]
