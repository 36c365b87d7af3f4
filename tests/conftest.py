"""Shared fixtures: the repo root, the standalone C tools compiled once per session."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The flags every C file in csrc/ must compile cleanly with (see STYLE.md).
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Wshadow",
          "-Wmissing-prototypes", "-Werror"]


@pytest.fixture(scope="session")
def tools_dir():
    """csrc/tools/*.c built as pl-<name> in a world-readable directory (unprivileged tests)."""
    d = Path(tempfile.mkdtemp(prefix="pagelab-tools-"))
    d.chmod(0o755)
    for src in sorted((ROOT / "csrc" / "tools").glob("*.c")):
        subprocess.run(["cc", *CFLAGS, "-o", str(d / f"pl-{src.stem}"), str(src)], check=True)
    yield d
    for f in d.iterdir():
        f.unlink()
    d.rmdir()


@pytest.fixture(scope="session")
def pagelab_cmd():
    """The installed `pagelab` console script next to this interpreter."""
    return [str(Path(sys.executable).with_name("pagelab"))]


def run(cmd, **kw):
    """Run a command, capturing text output; never raises on a non-zero exit."""
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def fd_count():
    return len(os.listdir("/proc/self/fd"))
