"""Shared fixtures: the standalone C tools compiled once per session, the pagelab command."""

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import CFLAGS, ROOT


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
