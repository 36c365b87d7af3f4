"""The tree is lint-clean: ruff (check and format) over Python, clang-format over C."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

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
        ["git", "ls-files", "csrc/*.c", "csrc/*.h"],
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
    """clang-format (csrc/.clang-format) would change no C file."""
    r = subprocess.run(
        [_tool("clang-format"), "--dry-run", "--Werror", *_c_files()],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-4000:]
