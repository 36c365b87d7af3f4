"""The docs site builds: docs/ and every chapter (its stored outputs, never executed), with
warnings as errors, and each chapter page has its Binder button."""

import shutil
import sys
from pathlib import Path

import pytest

from helpers import ROOT, run

pytestmark = pytest.mark.slow

CHAPTERS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def test_docs_site_builds_without_warnings(tmp_path):
    """`make docs`'s build (sphinx-build -W, from the repository root with docs/conf.py) passes,
    renders every chapter and every guide, and gives each chapter a Binder link opening it in
    JupyterLab."""
    if shutil.which("sphinx-build", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("sphinx-build is not installed: make setup installs the docs group")
    out = tmp_path / "html"
    build = [Path(sys.executable).parent / "sphinx-build", "-W", "--keep-going", "-q"]
    build += ["-b", "html", "-c", ROOT / "docs", "-d", tmp_path / "doctrees", ROOT, out]
    p = run(build, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for guide in ("deploy", "instructors", "architecture"):
        assert (out / "docs" / f"{guide}.html").is_file(), guide
    for chapter in CHAPTERS:
        page = (out / "notebooks" / f"{chapter}.html").read_text()
        binder = "https://mybinder.org/v2/gh/pagelab/pagelab/main?urlpath=lab/tree"
        binder += f"/notebooks/{chapter}.ipynb"
        assert binder in page, chapter
