"""Per-kernel counters for the lab's side panel: one thread samples every kernel of the server.

For each kernel process it keeps a Probe (pagelab._sampler): perf events attached to the
kernel's pid where perf_event_open allows, their labelled /proc stand-ins where it does not.
Beside them, always, what /proc says about the whole process: minor and major faults, RSS,
voluntary and involuntary context switches and CPU time (source 'rusage'). Only processes of this
server's own user are watched. The thread never runs on the server's event loop, and it ends,
closing every counter, once nobody has asked for samples for IDLE_S seconds.
"""

import math
import os
import threading
import time
from collections import deque

from . import _events, _rusage
from ._sampler import MAX_HZ, Probe, Series

# What the panel shows without a setting: faults, scheduling and CPU time, in events that count
# in the software-only profile too.
PANEL_EVENTS = ("page-faults", "major-faults", "context-switches", "task-clock")
IDLE_S = 3.0  # no request for this long: no panel is open, so stop sampling
KEPT = 64  # samples kept per kernel for pollers that fell behind (6 s at 10 Hz)
MAX_INTERVAL_MS = 10_000
# The /proc rows: name, unit, and where the number comes from.
PROC_ROWS = (
    ("minflt", "", "/proc/PID/stat"),
    ("majflt", "", "/proc/PID/stat"),
    ("rss", "KiB", "/proc/PID/status VmRSS"),
    ("nvcsw", "", "/proc/PID/status voluntary_ctxt_switches"),
    ("nivcsw", "", "/proc/PID/status nonvoluntary_ctxt_switches"),
    ("cpu-time", "s", "/proc/PID/stat utime+stime"),
)


def owned(pid):
    """Whether process ``pid`` belongs to this process's user (False if it is gone)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except FileNotFoundError:
        return False


def proc_rows():
    return [
        Series(name, unit, "rusage", note=f"{where}, whole process since it started")
        for name, unit, where in PROC_ROWS
    ]


def proc_values(pid):
    """The /proc rows' values now, in PROC_ROWS order."""
    stat, status = _rusage.proc_stat(pid), _rusage.proc_status(pid)
    return [
        stat["minflt"],
        stat["majflt"],
        status["rss"],
        status.get("nvcsw", math.nan),
        status.get("nivcsw", math.nan),
        stat["utime"] + stat["stime"],
    ]


class Watched:
    """One kernel process: its probe, its series and its recent samples."""

    def __init__(self, pid, events):
        self.pid = pid
        self.gone = False
        try:
            self.probe = Probe(events, pid)
            perf = self.probe.series
        except OSError as e:  # e.g. out of file descriptors: say so, keep /proc
            if isinstance(e, ProcessLookupError):
                raise
            self.probe = None
            reason = f"perf_event_open failed: {e.strerror}"
            perf = [Series(ev.name, ev.unit, ev.source, reason=reason) for ev in events]
        self.perf_rows = len(perf)
        self.series = perf + proc_rows()
        self.samples = deque(maxlen=KEPT)

    def sample(self, t):
        try:
            values = proc_values(self.pid)
            perf = self.probe.read() if self.probe else [math.nan] * self.perf_rows
        except ProcessLookupError:
            self.gone = True
            return
        self.samples.append((t, *perf, *values))

    def close(self):
        if self.probe is not None:
            self.probe.close()
            self.probe = None


class KernelWatch:
    """The sampling thread and what it has seen. ``request`` is all the server calls."""

    def __init__(self, idle_s=IDLE_S):
        self.idle_s = idle_s
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        self._t0 = time.monotonic()
        self._last_request = -math.inf
        self._kernels = {}  # kernel id -> pid, as the server last listed them
        self._interval = 0.1
        self._events = _events.events(PANEL_EVENTS)
        self._watched = {}  # kernel id -> Watched; only the thread touches these
        self.ticks = 0  # samples taken, all kernels at once (read by tests and the bench)
        self.on_tick = None  # called from the thread after each tick (the server's stream)

    @property
    def sampling(self):
        return self._thread is not None

    def request(self, kernels, interval_ms=100, events=None, since=-math.inf):
        """Samples newer than ``since`` for ``kernels`` (id -> pid), and keep sampling them every
        ``interval_ms`` for IDLE_S more seconds. Bad events raise UnknownEvent first."""
        wanted = _events.events(events or PANEL_EVENTS)
        interval_ms = min(max(interval_ms, 1000 // MAX_HZ), MAX_INTERVAL_MS)
        with self._lock:
            self._last_request = time.monotonic()
            self._kernels = {k: pid for k, pid in kernels.items() if pid and owned(pid)}
            self._interval = interval_ms / 1000
            if wanted != self._events:
                self._events = wanted
                self._wake.set()  # the thread reopens every probe
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="pagelab-kernelwatch")
                self._thread.daemon = True
                self._thread.start()
            return self._snapshot(since, interval_ms)

    def peek(self):
        """Whether the thread runs and how many ticks it took; does not keep it running."""
        with self._lock:
            return {"sampling": self.sampling, "ticks": self.ticks}

    def _snapshot(self, since, interval_ms):
        out = []
        for kid, pid in self._kernels.items():
            w = self._watched.get(kid)
            if w is None or w.pid != pid:
                continue  # the thread has not opened it yet: it appears next poll
            samples = [[_json_number(v) for v in s] for s in w.samples if s[0] > since]
            out.append(
                {
                    "id": kid,
                    "pid": pid,
                    "series": [s.to_dict() for s in w.series],
                    "samples": samples,
                }
            )
        return {
            "now": time.monotonic() - self._t0,
            "interval_ms": interval_ms,
            "idle_s": self.idle_s,
            "kernels": out,
        }

    # ---- the thread ----

    def _loop(self):
        events = None
        while True:
            with self._lock:
                if time.monotonic() - self._last_request > self.idle_s:
                    self._close_all()
                    self._thread = None  # a request from now on starts a fresh thread
                    return
                kernels, interval = dict(self._kernels), self._interval
                if events is not self._events:
                    events = self._events
                    self._close_all()
                self._wake.clear()
            self._sync(kernels, events)
            t = time.monotonic() - self._t0
            for w in list(self._watched.values()):
                with self._lock:  # snapshots read the samples
                    w.sample(t)
            with self._lock:
                for kid in [k for k, w in self._watched.items() if w.gone]:
                    self._watched.pop(kid).close()
                self.ticks += 1
            if self.on_tick is not None:
                self.on_tick()
            self._wake.wait(interval)

    def _sync(self, kernels, events):
        for kid in [k for k, w in self._watched.items() if kernels.get(k) != w.pid]:
            with self._lock:
                self._watched.pop(kid).close()
        for kid, pid in kernels.items():
            if kid in self._watched:
                continue
            try:
                w = Watched(pid, events)
            except ProcessLookupError:
                continue  # it ended before we got to it
            with self._lock:
                self._watched[kid] = w

    def _close_all(self):
        for w in self._watched.values():
            w.close()
        self._watched.clear()


def _json_number(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v
