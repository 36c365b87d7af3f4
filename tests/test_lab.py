"""`make lab` starts a real JupyterLab on the chapters; checked headless over HTTP."""

import os
import signal
import socket
import subprocess
import time
import urllib.request

from helpers import ROOT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_jupyterlab():
    """make lab answers HTTP 200 on /lab with the chapters as its root, then stops cleanly."""
    port = free_port()
    args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token="
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=5) as r:
                    status = r.status
                    break
            except OSError:
                time.sleep(0.5)
        assert status == 200, f"no HTTP 200 from make lab (exit {proc.poll()})"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=5) as r:
            listing = r.read().decode()
        assert '"type": "directory"' in listing or '"type":"directory"' in listing
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    assert "Jupyter Server" in out and "is running at" in out
