"""LiveCounters: a widget whose sampling thread streams a process's counter totals to the view.

The front end is an anywidget ESM bundle built from labext/ (static/livecounters.js) and its
style sheet (static/livecounters.css: labext/style/index.css, the lab extension's style, passed
as ``_css`` too, so hosts without the lab extension draw the widget alike).
Configuration lives in synced traits; samples go out as two float64 buffers in one custom
message per tick (times, then totals row-major), and the view throttles its drawing.
"""

import array
import math
import threading
import time
from pathlib import Path

import anywidget
import traitlets

from .._version import __version__
from ..core.errors import BadInput, PagelabError
from ..counters.sampler import MAX_HZ, Sampler, describe

BUNDLE = Path(__file__).parent / "static" / "livecounters.js"
STYLE = BUNDLE.with_suffix(".css")


def _front_end():
    """The bundle's source and its style sheet."""
    for path in (BUNDLE, STYLE):
        if not path.exists():
            raise PagelabError(
                f"the LiveCounters front end is not built ({path} is missing): run `make setup` "
                "in a checkout (needs Node and npm), or install pagelab from its wheel"
            )
    return BUNDLE.read_text(), STYLE.read_text()


class LiveCounters(anywidget.AnyWidget):
    """Live rates, totals and charts of counters for this kernel, a pid or a run handle::

        w = pagelab.LiveCounters(["page-faults", "context-switches"], interval_ms=50)
        w                       # shows the widget; w.stop(), w.reset(), w.start(), w.close()

    ``target``: None (this kernel's main thread, where cells run), a pid, or a handle from
    ``pagelab.start`` (follows its workers one after another). Each counter carries its source
    (hw, sw, rusage); one that cannot be read says why. ``interval_ms`` >= 33 (at most 30 Hz).
    """

    _esm = traitlets.Unicode().tag(sync=True)  # the bundle's source, read when a widget opens
    _css = traitlets.Unicode().tag(sync=True)  # its style sheet
    counters = traitlets.List().tag(sync=True)
    running = traitlets.Bool(False).tag(sync=True)
    target = traitlets.Unicode("").tag(sync=True)
    interval_ms = traitlets.Int(100).tag(sync=True)
    version = traitlets.Unicode(__version__).tag(sync=True)

    def __init__(self, events=None, target=None, interval_ms=100, start=True):
        if not isinstance(interval_ms, int) or interval_ms < 1000 // MAX_HZ:
            raise BadInput(
                f"interval_ms must be an integer of at least {1000 // MAX_HZ} "
                f"(at most {MAX_HZ} samples a second), not {interval_ms!r}"
            )
        esm, css = _front_end()
        sampler = Sampler(events, target)  # bad events or targets fail before the widget exists
        super().__init__(
            _esm=esm,
            _css=css,
            counters=[s.to_dict() for s in sampler.series],
            target=describe(target),
            interval_ms=interval_ms,
        )
        self._sampler = sampler
        self._lock = threading.Lock()  # the sampler is read by the thread and reset from here
        self._stop = threading.Event()
        self._thread = None
        self._t0 = time.monotonic()
        self._last = (None, [math.nan] * len(sampler.series))
        self._prev = None
        self.on_msg(self._on_control)
        if start:
            self.start()

    @classmethod
    def watch(cls, handle, events=None, interval_ms=100):
        """A widget following the worker(s) of a run handle (see ``pagelab.start``)."""
        return cls(events, handle, interval_ms)

    # ---- controls ----

    def start(self):
        """Start (or resume) sampling."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="pagelab-live", daemon=True)
        self._thread.start()
        self.running = True

    def stop(self):
        """Stop sampling; the totals stay as they are."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.running = False

    def reset(self):
        """Start the totals from zero again."""
        with self._lock:
            self._sampler.reset()
            self._t0 = time.monotonic()
            self._last = (None, [math.nan] * len(self._sampler.series))
            self._prev = None
        self.send({"type": "reset"})

    def close(self):
        """Stop the thread and close every counter fd, then close the widget."""
        if hasattr(self, "_sampler"):  # not when __init__ failed before it was made
            self.stop()
            self._sampler.close()
        super().close()

    def _on_control(self, _widget, content, _buffers):
        action = content.get("type") if isinstance(content, dict) else None
        if action in ("start", "stop", "reset"):
            getattr(self, action)()

    # ---- sampling ----

    def _loop(self):
        period = self.interval_ms / 1000
        tick = time.monotonic()
        while not self._stop.is_set():
            self.sample()
            tick = next_tick(tick, period, time.monotonic())
            self._stop.wait(tick - time.monotonic())

    def sample(self):
        """Read once and send the sample to the view (the thread calls this every tick)."""
        with self._lock:
            values = self._sampler.read()
            t = time.monotonic() - self._t0
            self._prev, self._last = self._last, (t, values)
            series = [s.to_dict() for s in self._sampler.series]
        if series != self.counters:  # a handle's next worker, or its first one, opened
            self.counters = series
        self.send(*samples_message([t], [values]))
        return values

    # ---- text ----

    def totals(self):
        """The last totals by counter name (NaN where unknown)."""
        return {s["name"]: v for s, v in zip(self.counters, self._last[1])}

    def __repr__(self):
        state = "sampling" if self.running else "stopped"
        lines = [f"LiveCounters({self.target}; {state} every {self.interval_ms} ms)"]
        (t1, v1), (t0, v0) = self._last, self._prev or (None, None)
        for i, s in enumerate(self.counters):
            if s["reason"]:
                lines.append(f"  {s['name']}: not available here ({s['reason']})")
                continue
            total = "n/a" if math.isnan(v1[i]) else f"{v1[i]:,.0f}"
            rate = ""
            if t0 is not None and t1 > t0 and not math.isnan(v0[i]) and not math.isnan(v1[i]):
                rate = f"  {(v1[i] - v0[i]) / (t1 - t0):,.0f}/s"
            unit = f" {s['unit']}" if s["unit"] else ""
            note = f"; {s['note']}" if s["note"] else ""
            lines.append(f"  {s['name']}: {total}{unit}{rate} ({s['source']}{note})")
        return "\n".join(lines)


def next_tick(tick, period, now):
    """When to sample next: one period after the last tick, or now if that has passed (after a
    slow read or send the sampler skips ticks rather than bursting to catch up)."""
    return max(tick + period, now)


def samples_message(times, rows):
    """The custom message for a batch of samples: content and two float64 buffers."""
    n, m = len(times), len(rows[0]) if rows else 0
    flat = [v for row in rows for v in row]
    content = {"type": "samples", "n": n, "counters": m}
    return content, [_f64(times), _f64(flat)]


def _f64(values):
    return memoryview(array.array("d", values)).cast("B")
