"""The live figures: the LiveCounters widget, the lab's kernel panel and autocount. What watching
costs, and how fast the browser draws.

- ``browser_update_rate()``: redraws per second of a 30 Hz LiveCounters in headless chromium,
  against a real JupyterLab (the browser test's machinery, tests/jupyter_browser.py).
- ``panel_refresh_rate()``: redraws per second of the kernel panel at its 10 Hz setting, the
  same way.
- ``watched_slowdown()``: a memory-bound process timed alone and while a 30 Hz LiveCounters
  watches it, alternating in one run so drift hits both sides alike.
- ``server_cpu_with_panel()``: CPU of a real `jupyter server` with 5 real kernels while one
  panel's WebSocket, then five, stream their samples at 10 Hz, and with no panel, alternating.
- ``counters_magic_cost()`` and ``autocount_cost()``: the wall time of an empty cell under
  ``%%counters``, and with ``%pagelab autocount on``, against the empty cell alone, in an
  in-process IPython shell.

Each returns a dict. ``python -m bench`` reports six numbers from them (FIGURES: its key -> the
function here that returns (value, details); the function's docstring is the figure's meaning).
A figure whose browser or Jupyter server is not here raises Missing with the reason.
Run all: .venv/bin/python bench/bench_live.py
"""

import asyncio
import contextlib
import functools
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

PANEL_MS = 100  # the kernel panel's default setting: 10 Hz
WIDGET_MS = 33  # the LiveCounters figures: 30 Hz
WATCHED = ["page-faults", "context-switches", "task-clock"]  # what the widget samples here
# A memory-bound loop over 64 MiB (well past any LLC here): sums a float64 array, timed by
# itself after the parent says go (once its watcher, if any, is attached).
MEMORY_BOUND = """
import sys, time
import numpy as np
a = np.ones(8 << 20)
a.sum()
sys.stdin.readline()
t0, c0 = time.perf_counter(), time.process_time()
for _ in range({reps}):
    a.sum()
print(time.perf_counter() - t0, time.process_time() - c0, flush=True)
"""


class Missing(Exception):
    """What a figure needs (chromium, playwright, JupyterLab) is not here; the message says."""


def _needs(app):
    """Missing unless chromium and playwright are here (for a browser) and ``app`` imports."""
    from jupyter_browser import missing_browser

    why = missing_browser() if app == "lab" else None
    try:
        __import__({"lab": "jupyterlab", "server": "jupyter_server"}[app])
    except ImportError:
        why = why or f"{app}: {'jupyterlab' if app == 'lab' else 'jupyter_server'} is missing"
    if why:
        raise Missing(why)


# ---- shared: a browser's redraw count, and an empty cell's time ---------------------------------


def _browser_draws(write, ready, drawn, seconds, before=None):
    """Redraws per second of the element ``drawn`` (its data-draws count) in headless chromium,
    in JupyterLab, once the notebook ``write(path)`` makes has run its first cell and ``ready``
    shows; ``before(page)`` opens what must be open first."""
    from playwright.sync_api import sync_playwright

    from jupyter_browser import Server, launch, run_first_cell

    _needs("lab")
    root = Path(tempfile.mkdtemp(prefix="pagelab-bench-live-"))
    write(root / "live.ipynb")
    server = Server("lab", root)
    try:
        with sync_playwright() as pw:
            context = launch(pw, root / ".chromium")
            try:
                page = context.new_page()
                run_first_cell(page, server, "/lab/tree/live.ipynb")
                if before:
                    before(page)
                page.wait_for_selector(ready, timeout=120_000)
                time.sleep(2)  # past start-up
                read = (
                    f"() => [Number(document.querySelector({json.dumps(drawn)})"
                    ".dataset.draws), performance.now()]"
                )
                d0, t0 = page.evaluate(read)
                time.sleep(seconds)
                d1, t1 = page.evaluate(read)
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "draws_per_s": (d1 - d0) / ((t1 - t0) / 1000),
        "seconds": (t1 - t0) / 1000,
        "source": "clock (browser performance.now)",
    }


def _cell_ms(runs, setup, teardown=None):
    """Median wall time of an empty cell in an in-process IPython shell (pagelab's extension
    loaded), without and then with ``setup(ip)`` applied: (plain ms, with ms, what setup
    printed)."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "pagelab")

    def timed(cell):
        out = []
        for _ in range(runs):
            with contextlib.redirect_stdout(io.StringIO()):
                t0 = time.perf_counter()
                cell()
                out.append(time.perf_counter() - t0)
        return statistics.median(out) * 1e3

    plain = timed(lambda: ip.run_cell("pass"))
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        cell = setup(ip)
    try:
        return plain, timed(cell), said.getvalue().strip()
    finally:
        if teardown:
            with contextlib.redirect_stdout(io.StringIO()):
                teardown(ip)


# ---- the LiveCounters widget ------------------------------------------------------------------


def browser_update_rate(seconds=10.0):
    """Redraws per second of a 30 Hz LiveCounters in headless chromium (JupyterLab 4)."""
    from jupyter_browser import FAULTER, TOTAL, write_notebook

    _needs("lab")
    faulter = subprocess.Popen([sys.executable, "-c", FAULTER])
    try:
        out = _browser_draws(
            lambda path: write_notebook(path, faulter.pid, interval_ms=WIDGET_MS),
            TOTAL,
            '[data-pagelab="livecounters"]',
            seconds,
        )
    finally:
        faulter.kill()
        faulter.wait()
    return {**out, "asked_hz": 1000 / WIDGET_MS}


def _timed_child(watch, reps):
    from pagelab import LiveCounters

    proc = subprocess.Popen(
        [sys.executable, "-c", MEMORY_BOUND.format(reps=reps)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    widget = None
    if watch:
        widget = LiveCounters(WATCHED, proc.pid, WIDGET_MS)
        widget.send = lambda *a, **k: None  # no front end: the watched side's cost is what counts
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        wall, cpu = map(float, proc.stdout.readline().split())
    finally:
        if widget is not None:
            widget.close()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()
    return wall, cpu


def _sample_cpu_us(n=2000):
    """CPU time the watcher spends per sample of another process (3 events)."""
    from pagelab import LiveCounters

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    widget = LiveCounters(WATCHED, proc.pid, WIDGET_MS, False)
    widget.send = lambda *a, **k: None
    try:
        c0 = time.process_time()
        for _ in range(n):
            widget.sample()
        return (time.process_time() - c0) / n * 1e6
    finally:
        widget.close()
        proc.kill()
        proc.wait()


def watched_slowdown(pairs=9, reps=100):
    """Median wall and CPU time of the memory-bound loop alone and watched at 30 Hz, alternating
    in one run; slowdown in percent of each, and the watcher's own CPU cost per sample."""
    runs = {False: [], True: []}
    for i in range(pairs):
        for watch in (False, True) if i % 2 == 0 else (True, False):
            runs[watch].append(_timed_child(watch, reps))
    out = {"pairs": pairs, "interval_ms": WIDGET_MS, "source": "clock"}
    for k, name in enumerate(("wall", "cpu")):
        alone = statistics.median(r[k] for r in runs[False])
        watched = statistics.median(r[k] for r in runs[True])
        out[f"{name}_alone_s"], out[f"{name}_watched_s"] = alone, watched
        out[f"{name}_slowdown_percent"] = 100 * (watched - alone) / alone
    out["watcher_cpu_us_per_sample"] = _sample_cpu_us()
    return out


def counters_magic_cost(runs=200):
    """Median wall time of `%%counters` on an empty cell, and of the empty cell alone."""
    plain, magic, _ = _cell_ms(runs, lambda ip: lambda: ip.run_cell_magic("counters", "", "pass"))
    return {
        "counters_cell_ms": magic,
        "plain_cell_ms": plain,
        "cost_ms": magic - plain,
        "runs": runs,
        "source": "clock",
    }


# ---- the kernel panel and autocount -----------------------------------------------------------


def panel_refresh_rate(seconds=10.0):
    """Redraws per second of the kernel panel in headless chromium, asked for 10 Hz."""

    from jupyter_browser import write_cells

    def open_panel(page):
        page.locator('.jp-SideBar [data-id="pagelab-kernels"]').click()

    kernel = '[data-pagelab="kernel"]'
    out = _browser_draws(
        lambda path: write_cells(path, ["x = 1"]), kernel, kernel, seconds, open_panel
    )
    return {**out, "asked_hz": 1000 / PANEL_MS}


def _cpu_s(pid):
    from pagelab.counters import rusage as _rusage

    s = _rusage.proc_stat(pid)
    return s["utime"] + s["stime"]


@functools.cache
def server_cpu_with_panel(kernels=5, seconds=10.0, rounds=3):
    """The server's CPU (all its threads, /proc/PID/stat) in percent of one core while 1 and
    then 5 panels' WebSockets stream 10 Hz samples of ``kernels`` real kernels, against the same
    server with no panel open, in rounds alternating the three (cached: two figures use it)."""
    from tornado.websocket import websocket_connect

    from jupyter_browser import Server

    _needs("server")

    async def streamed(url):
        ws = await websocket_connect(url)
        seen, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            msg = await ws.read_message()
            seen = max(seen, len(json.loads(msg)["kernels"]))
        ws.close()
        return seen

    async def panels(url, n):
        return await asyncio.gather(*(streamed(url) for _ in range(n)))

    root = Path(tempfile.mkdtemp(prefix="pagelab-bench-server-"))
    server = Server("server", root)
    ids = []
    try:
        for _ in range(kernels):
            status, k = server.api("/api/kernels", "POST", {"name": "python3"})
            assert status == 201, status
            ids.append(k["id"])
        time.sleep(5)  # the kernels finish starting
        pid = server.proc.pid
        url = (
            f"ws://127.0.0.1:{server.port}/pagelab/kernels/stream"
            f"?interval_ms={PANEL_MS}&token={server.token}"
        )
        shares = {0: [], 1: [], 5: []}
        for i in range(3 * rounds):
            n = (0, 1, 5)[i % 3]
            time.sleep(1)  # past the previous round: its sockets closed, the watch stopped
            c0, t0 = _cpu_s(pid), time.monotonic()
            if n:
                seen = asyncio.run(panels(url, n))
                assert seen == [kernels] * n, f"the panels saw {seen} of {kernels} kernels"
            else:
                time.sleep(seconds)
            shares[n].append(100 * (_cpu_s(pid) - c0) / (time.monotonic() - t0))
    finally:
        for kid in ids:
            server.api(f"/api/kernels/{kid}", "DELETE")
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {
        "kernels": kernels,
        "asked_hz": 1000 / PANEL_MS,
        "one_panel_cpu_percent": statistics.median(shares[1]),
        "five_panels_cpu_percent": statistics.median(shares[5]),
        "without_panel_cpu_percent": statistics.median(shares[0]),
        "target_percent": 2.0,
        "source": "rusage (/proc/PID/stat utime+stime)",
    }


def autocount_cost(runs=200):
    """Median wall time of an empty cell with autocount on, and off, and the hooks' own
    measured cost as autocount states it."""

    def on(ip):
        ip.run_line_magic("pagelab", "autocount on")
        return lambda: ip.run_cell("pass")

    off, cell_on, said = _cell_ms(
        runs, on, lambda ip: ip.run_line_magic("pagelab", "autocount off")
    )
    return {
        "cell_on_ms": cell_on,
        "cell_off_ms": off,
        "cost_ms": cell_on - off,
        "stated": said,
        "runs": runs,
        "source": "clock",
    }


# ---- what `python -m bench` reports -------------------------------------------------------------


def rate_hz():
    """redraws per second of a 30 Hz LiveCounters in headless chromium against a real
    JupyterLab (wall clock of the browser)"""
    d = browser_update_rate()
    return d["draws_per_s"], {"asked_hz": d["asked_hz"], "seconds": d["seconds"]}


def slowdown():
    """CPU time of a memory-bound process watched by a 30 Hz LiveCounters over its CPU time
    alone, median of alternating runs"""
    d = watched_slowdown(pairs=5)
    return d["cpu_watched_s"] / d["cpu_alone_s"], {
        "wall_slowdown_percent": d["wall_slowdown_percent"],
        "watcher_cpu_us_per_sample": d["watcher_cpu_us_per_sample"],
    }


def panel_refresh_hz():
    """redraws per second of the lab's kernel panel at its 10 Hz setting, in headless chromium
    against a real JupyterLab (wall clock of the browser)"""
    d = panel_refresh_rate()
    return d["draws_per_s"], {"asked_hz": d["asked_hz"], "seconds": d["seconds"]}


def panel_server_cpu_percent():
    """CPU of a real jupyter server (all threads, /proc/PID/stat utime+stime) in percent of one
    core while a kernel panel's WebSocket streams 5 kernels at 10 Hz; median of rounds
    alternating with no panel and with 5 panels open"""
    d = server_cpu_with_panel()
    return d["one_panel_cpu_percent"], {
        "without_panel_cpu_percent": d["without_panel_cpu_percent"],
        "kernels": d["kernels"],
        "source": "rusage",
    }


def panel_server_cpu_percent_5_clients():
    """CPU of the same server while 5 kernel panels (5 WebSockets, as 5 tabs) stream the same
    5 kernels at 10 Hz each: the sampling is shared, so this grows by the cost of sending, not
    of sampling; median of the same alternating rounds"""
    d = server_cpu_with_panel()
    return d["five_panels_cpu_percent"], {
        "one_panel_cpu_percent": d["one_panel_cpu_percent"],
        "without_panel_cpu_percent": d["without_panel_cpu_percent"],
        "kernels": d["kernels"],
        "source": "rusage",
    }


def autocount_ms():
    """wall time autocount adds to an empty cell (median with `%pagelab autocount on` minus
    median without, in an in-process IPython shell)"""
    d = autocount_cost()
    return d["cost_ms"], {"cell_off_ms": d["cell_off_ms"], "stated": d["stated"]}


FIGURES = {
    "live.rate_hz": rate_hz,
    "live.slowdown": slowdown,
    "panel.refresh_hz": panel_refresh_hz,
    "panel.server_cpu_percent": panel_server_cpu_percent,
    "panel.server_cpu_percent_5_clients": panel_server_cpu_percent_5_clients,
    "panel.autocount_ms": autocount_ms,
}


def main():
    results = {
        "browser_update_rate": browser_update_rate(),
        "watched_slowdown": watched_slowdown(),
        "counters_magic_cost": counters_magic_cost(),
        "autocount_cost": autocount_cost(),
        "server_cpu_with_panel": server_cpu_with_panel(),
        "panel_refresh_rate": panel_refresh_rate(),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
