"""The tree is lint-clean: ruff (check and format) over Python, clang-format over C, prettier,
eslint and stylelint over the front end in labext/."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, run

BIN = Path(sys.executable).parent
PYTHON_TREES = ["pylib", "tests", "bench", "setup.py", "docs/conf.py", ".ci/normalize_notebooks.py"]


def _tool(name):
    path = BIN / name
    if not path.exists():
        path = shutil.which(name)
        if path is None:
            pytest.skip(f"{name} is not installed (make setup installs it from PyPI)")
    return str(path)


def _c_files():
    out = subprocess.run(
        ["git", "ls-files", "csrc/*.c", "csrc/*.h", "tests/emupmu/*.c"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out, "git ls-files found no C files"
    return out


def test_ruff_check_is_clean():
    """ruff check (rules in pyproject.toml) reports nothing in pylib/, tests/, bench/ and the
    build, docs and CI scripts."""
    r = subprocess.run(
        [_tool("ruff"), "check", *PYTHON_TREES], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format_leaves_python_unchanged():
    """ruff format --check: every Python file is already formatted."""
    r = subprocess.run(
        [_tool("ruff"), "format", "--check", *PYTHON_TREES],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_clang_format_leaves_c_unchanged():
    """clang-format (csrc/.clang-format, also for the tests' emulated PMU) would change no C
    file."""
    r = subprocess.run(
        [
            _tool("clang-format"),
            "--style=file:csrc/.clang-format",
            "--dry-run",
            "--Werror",
            *_c_files(),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-4000:]


def test_front_end_is_prettier_eslint_and_stylelint_clean():
    """labext's `npm run lint`: prettier (width 100) would change no TypeScript or CSS file, eslint
    (typescript-eslint with JupyterLab's conventions) and stylelint report nothing."""
    labext = ROOT / "labext"
    if shutil.which("node") is None:
        pytest.skip("node is not installed (make setup installs Debian's nodejs as root)")
    assert (labext / "node_modules" / ".bin" / "eslint").exists(), "run `make setup` (npm ci)"
    p = run(["npm", "run", "--silent", "lint"], cwd=labext, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
