"""`pagelab lab` keeps a writable copy of the chapters; `make lab` serves it in a real
JupyterLab, checked headless over HTTP."""

import json
import os
import subprocess
import time
import urllib.request

import pytest

from helpers import ROOT, free_port, run, stop_group
from pagelab.cli.lab import sync_chapters


def test_make_lab_serves_jupyterlab(tmp_path):
    """make lab answers HTTP 200 on /lab with the student's copy of the chapters as its root
    (never the tracked notebooks/), then stops cleanly."""
    port = free_port()
    args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token="
    home = tmp_path / "work"
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env={**os.environ, "PAGELAB_HOME": str(home)},
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
            listing = {item["name"] for item in json.load(r)["content"]}
        assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} <= listing
        assert "conftest.py" not in listing  # the copy, not the checkout's notebooks/
    finally:
        out = stop_group(proc)
    assert "Jupyter Server" in out and "is running at" in out


@pytest.fixture
def shipped(tmp_path):
    """Two small 'shipped' chapters."""
    d = tmp_path / "shipped"
    d.mkdir()
    for name in ("00-a.ipynb", "01-b.ipynb"):
        (d / name).write_text(f'{{"chapter": "{name}"}}')
    return d


def test_first_use_copies_every_chapter(shipped, tmp_path):
    """On first use every chapter is copied and the message says which were added."""
    work = tmp_path / "work"
    sync = sync_chapters(work, source=shipped)
    assert sync.added == ["00-a.ipynb", "01-b.ipynb"] and not sync.kept
    assert (work / "01-b.ipynb").read_text() == (shipped / "01-b.ipynb").read_text()
    assert str(sync) == f"chapters in {work}: added 00-a.ipynb, 01-b.ipynb"
    assert str(sync_chapters(work, source=shipped)) == f"chapters in {work}: up to date"


def test_edited_copy_is_kept_new_and_updated_chapters_arrive(shipped, tmp_path):
    """An edited chapter is never overwritten; an untouched one is refreshed; a new one added."""
    work = tmp_path / "work"
    sync_chapters(work, source=shipped)
    (work / "00-a.ipynb").write_text("my answers")
    (shipped / "00-a.ipynb").write_text('{"chapter": "a, revised"}')
    (shipped / "01-b.ipynb").write_text('{"chapter": "b, revised"}')
    (shipped / "10-c.ipynb").write_text('{"chapter": "c"}')
    sync = sync_chapters(work, source=shipped)
    assert (sync.added, sync.updated, sync.kept) == (["10-c.ipynb"], ["01-b.ipynb"], ["00-a.ipynb"])
    assert (work / "00-a.ipynb").read_text() == "my answers"
    assert (work / "01-b.ipynb").read_text() == '{"chapter": "b, revised"}'
    assert "kept your edited 00-a.ipynb (`pagelab lab --reset`" in str(sync)


def test_reset_restores_and_backs_up_edits(shipped, tmp_path):
    """--reset restores the original of an edited chapter and moves the edit to a backup."""
    work = tmp_path / "work"
    sync_chapters(work, source=shipped)
    (work / "01-b.ipynb").write_text("my answers")
    (work / "notes.txt").write_text("mine")
    sync = sync_chapters(work, reset=True, source=shipped)
    assert sync.restored == ["01-b.ipynb"] and sync.backup.parent == work
    assert (sync.backup / "01-b.ipynb").read_text() == "my answers"
    assert (work / "01-b.ipynb").read_text() == (shipped / "01-b.ipynb").read_text()
    assert (work / "notes.txt").read_text() == "mine"
    assert f"your edited versions are in {sync.backup}" in str(sync)


def test_a_folder_pagelab_did_not_create_is_not_overwritten(shipped, tmp_path):
    """Without pagelab's record, a differing chapter counts as the student's and is kept."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "00-a.ipynb").write_text("older copy, maybe edited")
    sync = sync_chapters(work, source=shipped)
    assert sync.kept == ["00-a.ipynb"] and sync.added == ["01-b.ipynb"]
    assert (work / "00-a.ipynb").read_text() == "older copy, maybe edited"


def test_lab_without_jupyterlab_says_how_to_get_it(tmp_path, pagelab_cmd):
    """Where JupyterLab is not importable, `pagelab lab` exits 1 with the pip command to fix it
    and copies nothing."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(
        "import sys\nsys.modules['jupyterlab'] = None  # as if not installed\n"
    )
    env = {**os.environ, "PYTHONPATH": str(blocker), "PAGELAB_HOME": str(tmp_path / "work")}
    p = run([*pagelab_cmd, "lab", "--no-browser"], env=env)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        "pagelab: JupyterLab is not installed with this Python: pip install 'pagelab[lab]'"
    )
    assert not (tmp_path / "work").exists()
