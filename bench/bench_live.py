"""LiveCounters and the magics: what watching costs, and how fast the browser draws.

- ``browser_update_rate()``: redraws per second a 30 Hz widget achieves in headless chromium,
  against a real JupyterLab server (the browser test's machinery, tests/jupyter_browser.py).
- ``watched_slowdown()``: a memory-bound process timed alone and while a 30 Hz LiveCounters
  watches it, alternating in one run so drift hits both sides alike.
- ``counters_magic_cost()``: the wall time of ``%%counters`` on an empty cell, against the empty
  cell alone, in an in-process IPython shell.

Each returns a dict; ``rate_hz()`` and ``slowdown()`` are the two numbers ``pagelab bench``
reports (live.rate_hz, live.slowdown). Run all: .venv/bin/python bench/bench_live.py
"""

import contextlib
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

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
        widget = LiveCounters(["page-faults", "context-switches", "task-clock"], proc.pid, 33)
        widget.send = lambda *a, **k: (
            None
        )  # no front end: the cost on the watched side is what counts
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
    widget = LiveCounters(["page-faults", "context-switches", "task-clock"], proc.pid, 33, False)
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
    out = {"pairs": pairs, "interval_ms": 33, "source": "clock"}
    for k, name in enumerate(("wall", "cpu")):
        alone = statistics.median(r[k] for r in runs[False])
        watched = statistics.median(r[k] for r in runs[True])
        out[f"{name}_alone_s"], out[f"{name}_watched_s"] = alone, watched
        out[f"{name}_slowdown_percent"] = 100 * (watched - alone) / alone
    out["watcher_cpu_us_per_sample"] = _sample_cpu_us()
    return out


def counters_magic_cost(runs=200):
    """Median wall time of `%%counters` on an empty cell, and of the empty cell alone."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "pagelab")

    def timed(fn):
        out = []
        for _ in range(runs):
            with contextlib.redirect_stdout(io.StringIO()):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        return statistics.median(out)

    magic = timed(lambda: ip.run_cell_magic("counters", "", "pass"))
    plain = timed(lambda: ip.run_cell("pass", silent=True))
    return {
        "counters_cell_ms": magic * 1e3,
        "plain_cell_ms": plain * 1e3,
        "cost_ms": (magic - plain) * 1e3,
        "runs": runs,
        "source": "clock",
    }


def rate_hz():
    """redraws per second of a 30 Hz LiveCounters in headless chromium against a real JupyterLab
    (wall clock of the browser; goal: at least 20)"""
    return browser_update_rate()["draws_per_s"]


def slowdown():
    """CPU time of a memory-bound process watched by a 30 Hz LiveCounters over its CPU time
    alone, median of alternating runs (goal: at most 1.02)"""
    d = watched_slowdown(pairs=5)
    return d["cpu_watched_s"] / d["cpu_alone_s"]


def browser_update_rate(seconds=10.0):
    """Redraws per second of a 30 Hz LiveCounters in headless chromium (JupyterLab 4)."""
    from jupyter_browser import (
        FAULTER,
        TOTAL,
        Server,
        launch,
        missing_browser,
        run_first_cell,
        write_notebook,
    )
    from pagelab import PagelabError

    why = missing_browser()
    if why:
        raise PagelabError(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="pagelab-bench-live-"))
    faulter = subprocess.Popen([sys.executable, "-c", FAULTER])
    write_notebook(root / "live.ipynb", faulter.pid, interval_ms=33)
    server = Server("lab", root)
    try:
        with sync_playwright() as pw:
            context = launch(pw, root / ".chromium")
            try:
                page = context.new_page()
                run_first_cell(page, server, "/lab/tree/live.ipynb")
                page.wait_for_selector(TOTAL, timeout=120_000)
                time.sleep(2)  # past start-up
                read = (
                    "() => [Number(document.querySelector('[data-pagelab]').dataset.draws),"
                    " performance.now()]"
                )
                d0, t0 = page.evaluate(read)
                time.sleep(seconds)
                d1, t1 = page.evaluate(read)
            finally:
                context.close()
    finally:
        server.stop()
        faulter.kill()
        faulter.wait()
    return {
        "draws_per_s": (d1 - d0) / ((t1 - t0) / 1000),
        "asked_hz": 30,
        "seconds": (t1 - t0) / 1000,
        "source": "clock (browser performance.now)",
    }


def main():
    results = {
        "browser_update_rate": browser_update_rate(),
        "watched_slowdown": watched_slowdown(),
        "counters_magic_cost": counters_magic_cost(),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
