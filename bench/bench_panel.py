"""The kernel panel and autocount: how fast the panel redraws, what it costs the server, and what
autocount adds to a cell.

- ``panel_refresh_rate()``: redraws per second of the lab's kernel panel at its 10 Hz setting, in
  headless chromium against a real JupyterLab (the browser test's machinery).
- ``server_cpu_with_panel()``: CPU of a real `jupyter server` with 5 real kernels while a panel's
  WebSocket streams their samples at 10 Hz, and with no panel, alternating; percent of one core.
- ``autocount_cost()``: wall time of an empty cell with `%pagelab autocount on` and off, in an
  in-process IPython shell.

Each returns a dict; ``pagelab bench`` can call them. Run all: .venv/bin/python bench/bench_panel.py
"""

import asyncio
import contextlib
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

REFRESH_MS = 100  # the panel's default setting: 10 Hz


def panel_refresh_rate(seconds=10.0):
    """Redraws per second of the kernel panel in headless chromium, asked for 10 Hz."""
    from playwright.sync_api import sync_playwright

    from jupyter_browser import Server, launch, run_first_cell, write_cells

    root = Path(tempfile.mkdtemp(prefix="pagelab-bench-panel-"))
    write_cells(root / "panel.ipynb", ["x = 1"])
    server = Server("lab", root)
    try:
        with sync_playwright() as pw:
            context = launch(pw, root / ".chromium")
            try:
                page = context.new_page()
                run_first_cell(page, server, "/lab/tree/panel.ipynb")
                page.locator('.jp-SideBar [data-id="pagelab-kernels"]').click()
                page.wait_for_selector('[data-pagelab="kernel"]', timeout=120_000)
                time.sleep(2)  # past start-up
                read = (
                    "() => [Number(document.querySelector('[data-pagelab=\"kernel\"]')"
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
        "asked_hz": 1000 / REFRESH_MS,
        "seconds": (t1 - t0) / 1000,
        "source": "clock (browser performance.now)",
    }


def _cpu_s(pid):
    from pagelab import _rusage

    s = _rusage.proc_stat(pid)
    return s["utime"] + s["stime"]


def server_cpu_with_panel(kernels=5, seconds=10.0, rounds=3):
    """The server's CPU (all its threads, /proc/PID/stat) in percent of one core while one
    panel's WebSocket streams 10 Hz samples of ``kernels`` kernels, against the same server with
    no panel open, alternating."""
    from tornado.websocket import websocket_connect

    from jupyter_browser import Server

    async def streamed(url):
        ws = await websocket_connect(url)
        seen, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            msg = await ws.read_message()
            seen = max(seen, len(json.loads(msg)["kernels"]))
        ws.close()
        return seen

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
            f"?interval_ms={REFRESH_MS}&token={server.token}"
        )
        shares = {True: [], False: []}
        for i in range(2 * rounds):
            panel = i % 2 == 0
            time.sleep(5)  # past the previous round: the watch stops after its idle time
            c0, t0 = _cpu_s(pid), time.monotonic()
            if panel:
                seen = asyncio.run(streamed(url))
                assert seen == kernels, f"the panel saw {seen} of {kernels} kernels"
            else:
                time.sleep(seconds)
            shares[panel].append(100 * (_cpu_s(pid) - c0) / (time.monotonic() - t0))
    finally:
        for kid in ids:
            server.api(f"/api/kernels/{kid}", "DELETE")
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    with_panel, without = statistics.median(shares[True]), statistics.median(shares[False])
    return {
        "kernels": kernels,
        "asked_hz": 1000 / REFRESH_MS,
        "with_panel_cpu_percent": with_panel,
        "without_panel_cpu_percent": without,
        "panel_cpu_percent": with_panel - without,
        "target_percent": 2.0,
        "source": "rusage (/proc/PID/stat utime+stime)",
    }


def autocount_cost(runs=200):
    """Median wall time of an empty cell with autocount on, and off, and the hooks' own
    measured cost as autocount states it."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "pagelab")

    def timed():
        out = []
        for _ in range(runs):
            with contextlib.redirect_stdout(io.StringIO()):
                t0 = time.perf_counter()
                ip.run_cell("pass")
                out.append(time.perf_counter() - t0)
        return statistics.median(out)

    off = timed()
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        ip.run_line_magic("pagelab", "autocount on")
    on = timed()
    with contextlib.redirect_stdout(io.StringIO()):
        ip.run_line_magic("pagelab", "autocount off")
    return {
        "cell_on_ms": on * 1e3,
        "cell_off_ms": off * 1e3,
        "cost_ms": (on - off) * 1e3,
        "stated": said.getvalue().strip(),
        "runs": runs,
        "source": "clock",
    }


def main():
    results = {
        "autocount_cost": autocount_cost(),
        "server_cpu_with_panel": server_cpu_with_panel(),
        "panel_refresh_rate": panel_refresh_rate(),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
