"""LiveCounters in a real browser: Debian's chromium, driven by Playwright, against a real
JupyterLab (and Notebook 7) server that the test starts and stops. The notebook shows a widget
watching a process that keeps faulting; the page-faults total drawn must grow."""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import ROOT
from test_lab import free_port

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
# A process that faults until it is killed: maps 4 MiB, touches every page, unmaps, again.
FAULTER = """
import mmap, time
while True:
    m = mmap.mmap(-1, 4 << 20)
    for off in range(0, len(m), 4096):
        m[off] = 1
    m.close()
    time.sleep(0.02)
"""
TOTAL = '[data-pagelab="livecounters"] [data-counter="page-faults"] .pl-total'


def _browser_or_skip():
    """Playwright's sync API with Debian's chromium, or a skip (a failure when CI=true)."""
    why = None
    if not os.path.exists(CHROMIUM):
        why = f"{CHROMIUM} is missing (make setup installs Debian's chromium as root)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = why or "the playwright package is not installed (make setup installs it)"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    return sync_playwright


def _notebook(path, pid):
    cell = (
        "import pagelab\n"
        f"w = pagelab.LiveCounters(['page-faults', 'context-switches'], target={pid},"
        " interval_ms=33)\n"
        "w"
    )
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "live",
                "metadata": {},
                "outputs": [],
                "source": cell,
            }
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


class Server:
    """A Jupyter server (`jupyter lab` or `jupyter notebook`) on its own port, token and root."""

    def __init__(self, app, root):
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = dict(os.environ)
        for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR"):
            env[var] = str(root / f".{var.lower()}")
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(root / ".workspaces")
        argv = [
            str(Path(sys.executable).with_name("jupyter")),
            app,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}",
        ]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        self.log = open(root / "server.log", "w")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(self.url("/api/status"), timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"jupyter {app} did not start; see {root / 'server.log'}")
            time.sleep(0.5)

    def wait_for_idle_kernel(self):
        """Until the page's kernel has started and is idle (asked of the server's REST API)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with urllib.request.urlopen(self.url("/api/sessions"), timeout=5) as r:
                sessions = json.load(r)
            if any(s["kernel"]["execution_state"] == "idle" for s in sessions):
                return
            time.sleep(0.5)
        raise AssertionError("the notebook's kernel did not become idle within 120 s")

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}{path}{sep}token={self.token}"

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


@pytest.fixture
def faulter():
    """A process that faults until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", FAULTER])
    yield proc.pid
    proc.kill()
    proc.wait()


def _total(page):
    return int(re.sub(r"[^0-9]", "", page.inner_text(TOTAL)))


@pytest.mark.slow
@pytest.mark.parametrize(
    "app,path", [("lab", "/lab/tree/live.ipynb"), ("notebook", "/notebooks/live.ipynb")]
)
def test_live_counters_draw_growing_page_faults(app, path, faulter):
    """In JupyterLab 4 and Notebook 7 the widget draws a page-faults total that grows while the
    watched process faults, with its source tag, and a screenshot is saved."""
    sync_playwright = _browser_or_skip()
    root = Path(tempfile.mkdtemp(prefix=f"pagelab-browser-{app}-"))
    _notebook(root / "live.ipynb", faulter)
    server = Server(app, root)
    try:
        with sync_playwright() as pw:
            try:
                context = pw.chromium.launch_persistent_context(
                    str(root / ".chromium"),
                    executable_path=CHROMIUM,
                    headless=True,
                    args=CHROMIUM_ARGS,
                    viewport={"width": 1280, "height": 800},
                )
            except Exception as e:
                if os.environ.get("CI") == "true":
                    raise
                pytest.skip(f"chromium did not start here: {str(e).splitlines()[0]}")
            page = context.new_page()
            try:
                page.goto(server.url(path), timeout=120_000)
                editor = page.locator(".jp-Cell .jp-InputArea-editor").first
                editor.wait_for(timeout=120_000)
                server.wait_for_idle_kernel()
                editor.click()
                page.keyboard.press("Shift+Enter")
                page.wait_for_function(
                    f"() => /[0-9]/.test(document.querySelector('{TOTAL}')?.textContent ?? '')",
                    timeout=120_000,
                )
                first = _total(page)
                page.wait_for_function(
                    f"""() => {{
                        const t = document.querySelector('{TOTAL}')?.textContent ?? '';
                        return Number(t.replace(/[^0-9]/g, '')) > {first};
                    }}""",
                    timeout=60_000,
                )
                second = _total(page)
                row = page.locator('[data-counter="page-faults"]')
                source = row.locator(".pl-source").inner_text()
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                shot = ARTIFACTS / f"live-counters-{app}.png"
                page.locator('[data-pagelab="livecounters"]').screenshot(path=str(shot))
                print(f"screenshot: {shot}; page-faults drawn {first:,} then {second:,}")
            except Exception:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"failed-{app}.png"))
                raise
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert second > first
    assert source in ("sw", "rusage")
