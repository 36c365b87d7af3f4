"""`pagelab lab` / `make lab`: JupyterLab on the student's own writable copy of the chapters.

The shipped chapters (package data, or notebooks/ in a checkout) are never served: their stored
outputs are what nbval compares. They are copied into a working directory on first use; later
runs add new chapters and refresh untouched ones, and never overwrite a copy the student changed
(`--reset` restores the originals and moves the edited versions into a backup folder).
"""

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import PagelabError
from ..native.shipped import chapters_dir

# What each copied chapter looked like when pagelab copied it, to tell edits from updates.
_MANIFEST = ".pagelab-chapters.json"


def work_dir():
    """The student's chapters: $PAGELAB_HOME, else ~/pagelab-notebooks."""
    return Path(os.environ.get("PAGELAB_HOME") or Path.home() / "pagelab-notebooks")


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Sync:
    """What one synchronisation of the working copy did, chapter by chapter."""

    where: Path
    added: list = field(default_factory=list)
    updated: list = field(default_factory=list)
    kept: list = field(default_factory=list)  # edited by the student, left alone
    restored: list = field(default_factory=list)  # edited, reset to the original (--reset)
    backup: Path | None = None

    def __str__(self):
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("updated", self.updated),
                ("restored", self.restored),
            )
            if names
        ]
        if self.backup:
            parts.append(f"your edited versions are in {self.backup}")
        if self.kept:
            parts.append(
                f"kept your edited {', '.join(self.kept)} (`pagelab lab --reset` restores the "
                "originals and keeps a backup of yours)"
            )
        return f"chapters in {self.where}: " + ("; ".join(parts) or "up to date")


def sync_chapters(dest=None, reset=False, source=None):
    """Bring the working copy ``dest`` up to date with the shipped chapters; return a Sync."""
    source = Path(source) if source else chapters_dir()
    dest = Path(dest) if dest else work_dir()
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / _MANIFEST
    try:
        copied = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        copied = {}  # first use, or a folder pagelab did not create: compare contents instead
    sync = Sync(dest)
    for chapter in sorted(source.glob("*.ipynb")):
        name, target, shipped = chapter.name, dest / chapter.name, _digest(chapter)
        if target.exists():
            current = _digest(target)
            if current == shipped:
                copied[name] = shipped
                continue
            if current != copied.get(name):  # the student changed it
                if not reset:
                    sync.kept.append(name)
                    continue
                if sync.backup is None:
                    sync.backup = dest / time.strftime("backup-%Y%m%d-%H%M%S")
                    sync.backup.mkdir(exist_ok=True)
                shutil.move(target, sync.backup / name)
                sync.restored.append(name)
            else:
                sync.updated.append(name)
        else:
            sync.added.append(name)
        shutil.copyfile(chapter, target)
        copied[name] = shipped
    manifest_path.write_text(json.dumps(copied, indent=1, sort_keys=True) + "\n")
    return sync


def lab_command(extra_args, root):
    """The argv that starts JupyterLab on ``root`` with this interpreter."""
    if importlib.util.find_spec("jupyterlab") is None:
        raise PagelabError(
            "JupyterLab is not installed with this Python: pip install 'pagelab[lab]'"
        )
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")  # lab VMs and containers often run as root
    return argv + list(extra_args)
