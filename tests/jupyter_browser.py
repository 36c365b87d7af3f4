"""A real Jupyter server and Debian's chromium for the browser tests and bench/bench_live.py:
a server on its own port, token and root directory; chromium driven by Playwright, headless, never
downloaded; a notebook whose one cell shows LiveCounters watching a pid."""

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
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import ROOT, free_port

SERVER_CONFIG = ROOT / "jupyter-config" / "jupyter_server_config.d" / "pagelab.json"
CHROMIUM = "/usr/bin/chromium"
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


def missing_browser():
    """Why the browser tests cannot run here, or None."""
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (make setup installs Debian's chromium as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (make setup installs it)"
    return None


def launch(pw, profile_dir):
    """Debian's chromium, headless, with a fresh profile and nothing phoning home."""
    return pw.chromium.launch_persistent_context(
        str(profile_dir),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 800},
    )


# Problems of the Jupyter front ends themselves, each narrowly matched, with its upstream report:
# the only console output a test lets pass.
UPSTREAM_PROBLEMS = (
    # Notebook 7's shortcuts plugin reads a plugin's settings schema before the registry holds
    # it (a race): https://github.com/jupyter/notebook/issues/7862
    re.compile(r"^uncaught: TypeError: .*reading 'schema'\)\n\s+at \S+/static/notebook/"),
)


class PageLog:
    """What a page says on its console and every URL it asks for (HTTP and WebSocket): ``problems``
    are its console errors, uncaught exceptions and module federation's "Unsatisfied version"
    warnings (a shared package the extension was built against that the page lacks); ``leaks``
    the requests to pagelab's endpoints or files that carry the server's token."""

    def __init__(self, page, token):
        self.token = token
        self.problems = []
        self.urls = []
        page.on("console", self._console)
        page.on("pageerror", lambda e: self._problem(f"uncaught: {e.stack or e}"))
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("websocket", lambda ws: self.urls.append(ws.url))

    def _console(self, msg):
        if msg.type == "error" or "Unsatisfied version" in msg.text:
            self._problem(f"console {msg.type}: {msg.text} ({msg.location.get('url')})")

    def _problem(self, text):
        if not any(known.search(text) for known in UPSTREAM_PROBLEMS):
            self.problems.append(text)

    def leaks(self):
        return [url for url in self.urls if "pagelab" in url and self.token in url]


def open_notebook(page, server, path):
    """Open the notebook at ``path`` (a /lab/tree/... or /notebooks/... URL path); returns its
    first cell's editor once the kernel is idle."""
    page.goto(server.url(path), timeout=120_000)
    editor = page.locator(".jp-Cell .jp-InputArea-editor").first
    editor.wait_for(timeout=120_000)
    server.wait_for_idle_kernel()
    return editor


def run_first_cell(page, server, path):
    """Open the notebook at ``path`` and run its first cell once its kernel is idle."""
    open_notebook(page, server, path).click()
    page.keyboard.press("Shift+Enter")


def set_theme(page, theme):
    """Choose ``theme`` ("JupyterLab Light", "JupyterLab Dark") in JupyterLab's Settings >
    Theme menu, as a user does, and wait until the page wears it."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme$")).hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{theme}$")).click()
    page.wait_for_function(
        "name => document.body.dataset.jpThemeName === name", arg=theme, timeout=60_000
    )
    # a theme change shows JupyterLab's splash screen, fading out over the page: wait it out
    page.wait_for_function(
        "() => !document.querySelector('#jupyterlab-splash, .splash-fade')", timeout=60_000
    )


def live_cell(pid, interval_ms=33, events=("page-faults", "context-switches")):
    """A cell showing LiveCounters on ``pid``."""
    return (
        "import pagelab\n"
        f"w = pagelab.LiveCounters({list(events)!r}, target={pid}, interval_ms={interval_ms})\n"
        "w"
    )


def write_notebook(path, pid, interval_ms=33):
    """A notebook whose one cell shows LiveCounters on ``pid``."""
    write_cells(path, [live_cell(pid, interval_ms)])


def write_cells(path, sources):
    """A Python 3 notebook with these code cells."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(sources)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


class Server:
    """A Jupyter server (`jupyter lab`, `notebook` or `server`) on its own port, token and root,
    with pagelab's server extension enabled by the config file the wheel ships, and the user's
    lab settings ``{plugin id: values}`` as if set in the Settings Editor. ``launcher`` runs the
    server (and so its kernels) under a command such as the seccomp launcher pl-noperf."""

    def __init__(self, app, root, args=(), env=None, lab_settings=None, launcher=()):
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = dict(os.environ) | (env or {})
        for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR"):
            env[var] = str(root / f".{var.lower()}")
        for plugin, values in (lab_settings or {}).items():
            package, name = plugin.split(":")
            settings = (
                Path(env["JUPYTERLAB_SETTINGS_DIR"]) / package / f"{name}.jupyterlab-settings"
            )
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(json.dumps(values))
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(root / ".workspaces")
        self.runtime_dir = Path(env["JUPYTER_RUNTIME_DIR"])
        config = Path(env["JUPYTER_CONFIG_DIR"]) / SERVER_CONFIG.parent.name
        config.mkdir(parents=True, exist_ok=True)
        shutil.copy(SERVER_CONFIG, config)
        argv = [
            *launcher,
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
        argv += args
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

    def api(self, path, method="GET", body=None, token=True):
        """(status, JSON or None) of a REST call, with the token in its header unless told not;
        an error's JSON body too."""
        url = f"http://127.0.0.1:{self.port}{path}"
        headers = {"Authorization": f"token {self.token}"} if token else {}
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read())
            except ValueError:
                return e.code, None

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


ARTIFACTS = ROOT / "build" / "test-artifacts"
PATHS = {"lab": "/lab/tree/test.ipynb", "notebook": "/notebooks/test.ipynb"}


@contextmanager
def browser(app, name, cells, lab_settings=None):
    """(server, page): a fresh `jupyter {app}` serving a notebook of these cells (PATHS[app]),
    with these lab settings, and a chromium page; a failure saves failed-{name}.png. The test
    fails if the page logged a console error or an "Unsatisfied version" warning, or asked
    pagelab's endpoints or files for anything with the server's token in the URL (it logs in
    once, through the page's own URL, and cookies authenticate the rest)."""
    why = missing_browser()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix=f"pagelab-browser-{name}-"))
    write_cells(root / "test.ipynb", cells)
    server = Server(app, root, lab_settings=lab_settings)
    try:
        with sync_playwright() as pw:
            try:
                context = launch(pw, root / ".chromium")
            except Exception as e:
                if os.environ.get("CI") == "true":
                    raise
                pytest.skip(f"chromium did not start here: {str(e).splitlines()[0]}")
            page = context.new_page()
            log = PageLog(page, server.token)
            try:
                yield server, page
            except Exception:
                screenshot(page, f"failed-{name}")
                raise
            finally:
                context.close()
            assert log.problems == [], log.problems
            assert log.leaks() == [], log.leaks()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def screenshot(what, name):
    """A screenshot of a page or a locator under build/test-artifacts/; returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    what.screenshot(path=str(shot))
    return shot


def run_cell(editor, page):
    """Run the cell being edited, as a student does (Shift+Enter)."""
    editor.click()
    page.keyboard.press("Shift+Enter")
