"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.
"""

from ._counters import CounterGroup, Measurement, Reading, measure
from ._doctor import doctor
from ._errors import BadInput, BudgetExceeded, CounterUnavailable, PagelabError, UnknownEvent
from ._events import DEFAULT_EVENTS, Event, event, events
from ._stat import stat
from ._version import __version__

__all__ = [
    "BadInput", "BudgetExceeded", "CounterGroup", "CounterUnavailable", "DEFAULT_EVENTS", "Event",
    "Measurement", "PagelabError", "Reading", "UnknownEvent", "__version__", "doctor", "event",
    "events", "measure", "stat",
]
