"""Event names: the C table of named perf events, raw rXXXX codes and TYPE:CONFIG pairs."""

import difflib
import re
from dataclasses import dataclass

from .._native import ffi, lib
from ..core.errors import BadInput, UnknownEvent
from ..core.numbers import parse_int, quote

MAX_EVENTS = lib.PL_MAX_EVENTS

# What a student gets from `pagelab stat` or measure() without -e: the software events that work
# almost everywhere first, then the hardware ones that explain them where a PMU exists.
DEFAULT_EVENTS = (
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "minor-faults",
    "major-faults",
    "cycles",
    "instructions",
    "branch-misses",
    "L1-dcache-load-misses",
    "dTLB-load-misses",
    "LLC-load-misses",
)


def _backend():
    """Who answers perf_event_open: (PL_PERF_*, the reason it failed to load, or "")."""
    why = ffi.new("char[]", 256)
    return lib.pl_perf_backend(why, 256), ffi.string(why).decode()


BACKEND, _BACKEND_WHY = _backend()
# The tests' emulated PMU (csrc/perf/pl_perf_sys.h) counts by a synthetic rule: never "hw".
HW_SOURCE = "emulated" if BACKEND == lib.PL_PERF_EMULATED else "hw"


def check_backend():
    """BadInput when $PAGELAB_EMULATED_PMU was asked for but could not be used: counting on the
    real PMU instead would pass the machine's readings off as the emulated machine's."""
    if BACKEND == lib.PL_PERF_FAILED:
        raise BadInput(_BACKEND_WHY)


@dataclass(frozen=True)
class Event:
    """One perf event: its name, perf_event_attr type and config, and the source it reports."""

    name: str
    type: int
    config: int
    unit: str = ""

    @property
    def source(self):
        """'sw' for kernel software events, 'hw' for everything the PMU counts ('emulated' under
        the tests' emulated PMU)."""
        return "sw" if self.type == lib.PERF_TYPE_SOFTWARE else HW_SOURCE


def _table():
    return {
        ffi.string(d.name).decode(): Event(
            ffi.string(d.name).decode(), d.type, d.config, ffi.string(d.unit).decode()
        )
        for d in (lib.pl_event_table[i] for i in range(lib.pl_event_count))
    }


NAMED = _table()

_RAW = re.compile(r"r([0-9a-fA-F]{1,16})")
_TYPE_CONFIG = re.compile(r"([0-9]+):([^:\s]+)")
U32, U64 = (1 << 32) - 1, (1 << 64) - 1  # perf_event_attr's type and config fields


def event(spec):
    """Return the Event for a name, a raw ``rXXXX`` code or a ``TYPE:CONFIG`` pair."""
    if isinstance(spec, Event):
        return spec
    if not isinstance(spec, str):
        raise UnknownEvent(f"event names are strings, not {type(spec).__name__}")
    spec = spec.strip()
    if spec in NAMED:
        return NAMED[spec]
    if m := _RAW.fullmatch(spec):
        return Event(spec, lib.PERF_TYPE_RAW, int(m.group(1), 16))
    if m := _TYPE_CONFIG.fullmatch(spec):
        try:
            kind = parse_int(m.group(1), f"event {quote(spec)}: TYPE", 0, U32)
            config = parse_int(m.group(2), f"event {quote(spec)}: CONFIG", 0, U64, hex=True)
        except BadInput as e:
            raise UnknownEvent(str(e)) from None
        return Event(spec, kind, config)
    close = difflib.get_close_matches(spec[:64], NAMED, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `pagelab doctor` lists them"
    raise UnknownEvent(f"unknown event {quote(spec)}{hint}")


def events(specs):
    """Parse a comma-separated string or a list of event specs; duplicates are dropped."""
    if specs is None:
        specs = DEFAULT_EVENTS
    if isinstance(specs, str):
        specs = [s for s in specs.split(",") if s.strip()]
    if not isinstance(specs, (list, tuple)):
        raise UnknownEvent(
            f"events are a comma-separated string or a list of names, not {type(specs).__name__}"
        )
    parsed = list(dict.fromkeys(event(s) for s in specs))
    if not parsed:
        raise UnknownEvent("no events given")
    if len(parsed) > MAX_EVENTS:
        raise UnknownEvent(f"at most {MAX_EVENTS} events fit in one group, got {len(parsed)}")
    return parsed
