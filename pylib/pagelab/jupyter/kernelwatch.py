"""Per-kernel counters for the lab's side panel: one thread samples every kernel of the server.

Each client (an open WebSocket, or a GET poller) asks for its own events and interval. The thread
samples each kernel once per tick, at the fastest interval any client asks for (never faster than
the server's cap), over the union of the clients' events; each counter is opened once per kernel,
however many clients want it. Each client is then served its own events at its own interval from
those shared samples, so the sampling cost grows with kernels and the fastest rate, not with the
number of clients.

For each kernel process the thread keeps Probes (counters.sampler): perf events attached to the
kernel's pid where perf_event_open allows, their labelled /proc stand-ins where it does not.
Beside them, always, what /proc says about the whole process: minor and major faults, RSS,
voluntary and involuntary context switches and CPU time (source 'rusage'). Only processes of this
server's own user are watched. The thread never runs on the server's event loop. It runs while a
socket is open or a GET poller's lease lasts, then closes every counter and ends. An exception in
it is logged once and reported to every client; the thread starts again after a backoff.
"""

import logging
import math
import os
import threading
import time
from collections import deque

from ..core.errors import BadInput
from ..core.numbers import parse_int
from ..counters import events as _events
from ..counters import rusage as _rusage
from ..counters.sampler import MAX_HZ, Probe, Series

# What the panel shows without a setting: faults, scheduling and CPU time, in events that count
# in the software-only profile too.
PANEL_EVENTS = ("page-faults", "major-faults", "context-switches", "task-clock")
# The intervals a client may ask for; the lab extension's settings schema (refreshMs) allows the
# same range, and a test holds them equal.
MIN_INTERVAL_MS = round(1000 / MAX_HZ)
MAX_INTERVAL_MS = 10_000
IDLE_S = 3.0  # a GET poller keeps the sampling alive this long past its own interval
KEPT = 64  # samples kept per kernel for pollers that fell behind (6 s at 10 Hz)
BACKOFF_S = (0.1, 5.0)  # after a failed tick: the first wait, doubling up to the last
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


PROC_SERIES = [
    Series(name, unit, "rusage", note=f"{where}, whole process since it started").to_dict()
    for name, unit, where in PROC_ROWS
]


def proc_values(files):
    """The /proc rows' values now (``files``: the process's _rusage.ProcFiles), in PROC_ROWS
    order."""
    stat, status = files.read()
    return (
        stat["minflt"],
        stat["majflt"],
        status["rss"],
        status.get("nvcsw", math.nan),
        status.get("nivcsw", math.nan),
        stat["utime"] + stat["stime"],
    )


class Client:
    """What one client asked for: its events and interval (s), and when it is next due."""

    def __init__(self, events, interval):
        self.events = events
        self.names = tuple(e.name for e in events)
        self.interval = interval
        self.due = -math.inf  # watch clock: the first tick serves it
        self.since = -math.inf  # the newest sample it has been sent (sockets)
        self.sent = {}  # kernel id -> the series it has been sent (sockets)
        self.expires = math.inf  # a GET poller's lease; a socket's lasts until it closes
        self.note = ""  # what its replies say besides the samples (the server's cap)


class Watched:
    """One kernel process: its probes, each event's series and its recent samples."""

    def __init__(self, pid):
        self.pid = pid
        self.gone = False
        self.proc = _rusage.ProcFiles(pid)
        self.probes = []  # (Probe or None where it could not open, its event names)
        self.series = {}  # event name -> Series
        self.samples = deque(maxlen=KEPT)  # (t, {event name: value}, /proc values)
        self._dicts = {}  # event names -> their series as dicts, for replies

    def want(self, events):
        """Open probes for the events not counted yet; close those nobody wants any more."""
        names = {e.name for e in events}
        new = [e for e in events if e.name not in self.series]
        unwanted = [p for p in self.probes if names.isdisjoint(p[1])]
        if new or unwanted:
            self._dicts = {}
        for i in range(0, len(new), _events.MAX_EVENTS):
            chunk = new[i : i + _events.MAX_EVENTS]
            try:
                probe = Probe(chunk, self.pid)
                series = probe.series
            except ProcessLookupError:
                raise
            except OSError as e:  # e.g. out of file descriptors: say so, keep /proc
                probe, why = None, f"perf_event_open failed: {e.strerror}"
                series = [Series(ev.name, ev.unit, ev.source, reason=why) for ev in chunk]
            self.probes.append((probe, [e.name for e in chunk]))
            self.series.update((s.name, s) for s in series)
        for probe, have in unwanted:
            if probe is not None:
                probe.close()
            self.probes.remove((probe, have))
            for name in have:
                del self.series[name]

    def read(self):
        """(perf values by event name, /proc values) now; ProcessLookupError once it is gone."""
        values = {}
        for probe, names in self.probes:
            read = probe.read() if probe is not None else [math.nan] * len(names)
            values.update(zip(names, read))
        return values, proc_values(self.proc)

    def series_dicts(self, names):
        """The series a client of these events is shown: theirs, then the /proc rows."""
        out = self._dicts.get(names)
        if out is None:
            out = self._dicts[names] = [self.series[n].to_dict() for n in names] + PROC_SERIES
        return out

    def close(self):
        for probe, _ in self.probes:
            if probe is not None:
                probe.close()
        self.probes.clear()
        self.series.clear()
        self.proc.close()


class KernelWatch:
    """The sampling thread, its clients and what it has seen. ``max_hz`` caps the sampling rate
    (0: the panel is turned off); ``log`` gets the thread's failures."""

    def __init__(self, max_hz=MAX_HZ, idle_s=IDLE_S, log=None):
        self.max_hz = max_hz
        self.idle_s = idle_s
        self.log = log or logging.getLogger(__name__)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        self._t0 = time.monotonic()
        self._clients = set()
        self._leases = {}  # (interval, event names) -> the GET pollers' Client
        self._kernels = {}  # kernel id -> pid: those listed that this user owns
        self._synced = None  # (kernels, event names) the probes were last opened for
        self._watched = {}  # kernel id -> Watched; only the thread changes these
        self._period = None  # the thread's sampling interval (s) now
        self.error = None  # why the last tick failed, until one succeeds
        self.failures = 0  # failed ticks since the server started
        self._streak = 0  # failed ticks since the last good one
        self.ticks = 0  # ticks taken, all kernels at once (read by tests and the bench)
        self.on_tick = None  # called from the thread with the clients now due (the stream)

    # ---- what the server calls, on its event loop ----

    def client(self, interval_ms, events):
        """A Client for this query, with the interval raised to the server's cap; BadInput or
        UnknownEvent (one sentence) for a query the lab's settings would not make."""
        if self.max_hz <= 0:
            raise BadInput(
                "the kernel panel is turned off on this server (PagelabKernels.max_rate_hz = 0)"
            )
        interval_ms = parse_int(interval_ms, "interval_ms", MIN_INTERVAL_MS, MAX_INTERVAL_MS)
        wanted = _events.events(events or PANEL_EVENTS)
        client = Client(wanted, max(interval_ms, round(1000 / self.max_hz)) / 1000)
        if client.interval > interval_ms / 1000:
            client.note = (
                f"this server samples at most {self.max_hz:g} times a second"
                " (PagelabKernels.max_rate_hz)"
            )
        return client

    def set_kernels(self, kernels):
        """The server's kernels now (id -> pid); only those of this user are watched.

        Ownership is checked at every call, not once per listing: a kernel started through
        a wrapper (setpriv, sudo) belongs to the server's user until the wrapper drops it."""
        mine = {k: pid for k, pid in kernels.items() if pid and owned(pid)}
        if mine != self._kernels:
            with self._lock:
                self._kernels = mine

    def subscribe(self, client):
        """Serve ``client`` (an open socket) from the next tick on, until ``unsubscribe``."""
        with self._lock:
            self._clients.add(client)
            self._start()

    def unsubscribe(self, client):
        with self._lock:
            self._clients.discard(client)

    def poll(self, client, since):
        """For a GET: the samples after ``since`` at the client's interval; the client's lease
        (shared by pollers asking the same) keeps the sampling alive past its interval."""
        with self._lock:
            key = (client.interval, client.names)
            lease = self._leases.get(key)
            if lease is None:
                lease = self._leases[key] = client
                self._clients.add(lease)
                self._start()
            lease.expires = time.monotonic() + lease.interval + self.idle_s
            return self._reply(lease, since)

    def replies(self, clients):
        """For sockets: what each client has not been sent yet, at its interval, a kernel's
        series only when they are new to it; as [(reply, the clients it is for)]. Clients that
        asked for the same and were sent the same (a user's tabs) share one reply."""
        groups = {}
        for c in clients:
            sent = tuple((k, id(v)) for k, v in c.sent.items())
            groups.setdefault((c.names, c.interval, c.since, sent), []).append(c)
        out = []
        with self._lock:
            for first, *others in groups.values():
                data = self._reply(first, first.since, first.sent)
                first.since = max(
                    [first.since] + [k["samples"][-1][0] for k in data["kernels"] if k["samples"]]
                )
                for c in others:
                    c.since, c.sent = first.since, dict(first.sent)
                out.append((data, [first, *others]))
        return out

    def peek(self):
        """The thread's state, without keeping it running."""
        with self._lock:
            period = self._period
            return {
                "sampling": self._thread is not None and self.error is None,
                "ticks": self.ticks,
                "clients": len(self._clients),
                "interval_ms": None if period is None else round(period * 1000),
                "events": sorted({n for c in self._clients for n in c.names}),
                "error": self.error,
                "failures": self.failures,
            }

    def _start(self):
        self._wake.set()  # a new client: tick now, at the rate it may need
        if self._thread is None:
            self._thread = threading.Thread(target=self._supervise, name="pagelab-kernelwatch")
            self._thread.daemon = True
            self._thread.start()

    def _reply(self, client, since, sent=None):
        """Each kernel's samples after ``since`` with the client's columns: the newest, and
        older ones at the client's interval. ``sent`` (a socket's): kernel id -> the series it
        has been sent, which are left out while they stay the same; it is updated."""
        slack = (self._period or client.interval) / 2  # a sample is taken at the nearest tick
        out, shown = [], {}
        for kid, pid in self._kernels.items():
            w = self._watched.get(kid)
            if w is None or w.pid != pid or not all(n in w.series for n in client.names):
                continue  # the thread has not opened it yet: it appears next time
            rows, last = [], math.inf
            for t, values, proc in reversed(w.samples):  # the newest first, and always
                if t <= since:
                    break
                if t <= last - client.interval + slack:
                    row = [t, *(values.get(n, math.nan) for n in client.names), *proc]
                    rows.append([_json_number(v) for v in row])
                    last = t
            entry = {"id": kid, "pid": pid, "samples": rows[::-1]}
            shown[kid] = series = w.series_dicts(client.names)
            if sent is None or sent.get(kid) is not series:
                entry["series"] = series
            out.append(entry)
        if sent is not None:
            sent.clear()
            sent.update(shown)
        return {
            "now": time.monotonic() - self._t0,
            "interval_ms": round(client.interval * 1000),
            "sampling_error": self.error,
            "note": client.note,
            "kernels": out,
        }

    # ---- the thread ----

    def _supervise(self):
        """Run the sampling loop; after an exception, close every counter, log it and tell every
        client why (once per run of failures; replies say it until a tick succeeds) and start
        again after a backoff."""
        while True:
            try:
                self._loop()
                return  # no client is left
            except Exception as e:
                self._streak += 1
                wait = min(BACKOFF_S[0] * 2 ** (self._streak - 1), BACKOFF_S[1])
                with self._lock:
                    self.failures += 1
                    self.error = (
                        f"sampling failed ({type(e).__name__}: {e}); retrying in {wait:g} s"
                    )
                    clients = list(self._clients)
                self._stop_watching()
                if self._streak == 1:  # once per run of failures: the log, and every client
                    self.log.exception("pagelab: the kernel-counter sampler failed; restarting")
                    if self.on_tick is not None:
                        self.on_tick(clients)
                time.sleep(wait)

    def _loop(self):
        while True:
            with self._lock:
                now = time.monotonic()
                self._expire(now)
                if not self._clients:
                    self._period = None
                    self._thread = None  # a client from now on starts a fresh thread
                    watched, self._watched, self._synced = list(self._watched.values()), {}, None
                    break
                wanted = {e.name: e for c in self._clients for e in c.events}
                if self._synced != (self._kernels, wanted.keys()):
                    self._sync(list(wanted.values()))
                    self._synced = (self._kernels, wanted.keys())
                self._wake.clear()
            t = now - self._t0
            for w in list(self._watched.values()):
                try:
                    values, proc = w.read()
                except ProcessLookupError:
                    w.gone = True
                    continue
                with self._lock:  # replies read the samples
                    w.samples.append((t, values, proc))
            with self._lock:
                for kid in [k for k, w in self._watched.items() if w.gone]:
                    self._watched.pop(kid).close()
                self.ticks += 1
                self.error = None
                self._period = min(c.interval for c in self._clients)
                due, next_tick = schedule(self._clients, t)
            if self._streak:
                self.log.info("pagelab: the kernel-counter sampler works again")
                self._streak = 0
            if self.on_tick is not None:
                self.on_tick(due)
            self._wake.wait(max(0, self._t0 + next_tick - time.monotonic()))
        for w in watched:  # this thread's own: a thread started since then opened anew
            w.close()

    def _expire(self, now):
        for key, lease in list(self._leases.items()):
            if lease.expires < now:
                del self._leases[key]
                self._clients.discard(lease)

    def _sync(self, wanted):
        """Under the lock: a Watched per listed kernel, counting the events ``wanted``."""
        for kid in [k for k, w in self._watched.items() if self._kernels.get(k) != w.pid]:
            self._watched.pop(kid).close()
        for kid, pid in self._kernels.items():
            w = self._watched.get(kid)
            try:
                w = w or Watched(pid)
                w.want(wanted)
            except ProcessLookupError:  # it ended before we got to it
                if w is not None:
                    w.close()
                self._watched.pop(kid, None)
                continue
            self._watched[kid] = w

    def _stop_watching(self):
        """Close every counter; the next tick opens them anew."""
        with self._lock:
            watched, self._watched, self._synced = list(self._watched.values()), {}, None
        for w in watched:
            w.close()


def schedule(clients, t):
    """(the clients to serve after the tick at ``t``, the time of the next tick), on the watch's
    clock. Ticks follow the fastest client: the next one is when it is due again. Every other
    client is served at the tick nearest its own time (at most half the fastest interval early),
    so it gets its own rate on average, and one that fell behind skips what it missed."""
    fastest = min(clients, key=lambda c: (c.interval, c.due))
    half = fastest.interval / 2
    due = []
    for c in clients:
        if t >= c.due - half:
            due.append(c)
            c.due = c.due + c.interval if c.due + c.interval > t else t + c.interval
    return due, fastest.due


def _json_number(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v
