"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.
"""

from ._counters import CounterGroup, Measurement, Reading, measure
from ._doctor import doctor
from ._errors import BadInput, BudgetExceeded, CounterUnavailable, PagelabError, UnknownEvent
from ._events import DEFAULT_EVENTS, Event, event, events
from ._maps import parse_maps
from ._results import Claim, Measured, Result
from ._run import experiment_names, parameters, run, run_all
from ._stat import stat
from ._worker import Interrupted, WorkerDied, WorkerError, WorkerTimeout
from ._version import __version__

__all__ = [
    "BadInput", "BudgetExceeded", "Claim", "CounterGroup", "CounterUnavailable", "DEFAULT_EVENTS",
    "Event", "Interrupted", "Measured", "Measurement", "PagelabError", "Reading", "Result",
    "UnknownEvent", "WorkerDied", "WorkerError", "WorkerTimeout", "__version__", "doctor",
    "event", "events", "experiment_names", "measure", "parameters", "parse_maps", "run",
    "run_all", "stat",
]
