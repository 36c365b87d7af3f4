"""binder/postBuild, run the way repo2docker runs it: a non-login shell with a bare environment,
no CC, and the compiler only under conda's name in the environment's bin/.

This machine has no conda channel, so the "environment" is a venv holding the build requirements,
and conda's compiler name is a wrapper around the system cc that records that it was used.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

from helpers import ROOT, run
from test_wheel import _NOT_SOURCE

pytestmark = pytest.mark.slow
CONDA_CC = "x86_64-conda-linux-gnu-cc"


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """A venv standing in for the conda environment, with setuptools and cffi (the build
    requirements postBuild's --no-build-isolation relies on)."""
    if shutil.which("cc") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no cc on PATH (CI=true: the build tools must be there)")
        pytest.skip("no C compiler (cc) on PATH")
    env = tmp_path_factory.mktemp("env")
    subprocess.run([sys.executable, "-m", "venv", env], check=True)
    p = run([env / "bin" / "python", "-m", "pip", "install", "-q", *_build_requires()], timeout=600)
    assert p.returncode == 0, p.stderr
    return env


def _build_requires():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]


def _post_build(prefix, tmp_path):
    src = tmp_path / "repo"
    shutil.copytree(ROOT, src, ignore=_NOT_SOURCE)
    bare = {"HOME": str(tmp_path), "PATH": f"{prefix / 'bin'}:/usr/bin:/bin"}
    return run(["bash", src / "binder" / "postBuild"], cwd=src, env=bare, timeout=600)


def test_post_build_compiles_with_condas_compiler_name(prefix, tmp_path):
    """With CC unset, postBuild finds the compiler by conda's name, builds pagelab with it, and
    the installed module works."""
    log = tmp_path / "cc.log"
    wrapper = prefix / "bin" / CONDA_CC
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec cc "$@"\n')
    wrapper.chmod(0o755)
    try:
        p = _post_build(prefix, tmp_path)
    finally:
        wrapper.unlink()
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "counters.c" in log.read_text()  # the C sources went through conda's compiler name
    # pagelab's runtime dependencies come from conda in Binder; here, from this test's venv
    site = run(
        [prefix / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    )
    (Path(site.stdout.strip()) / "borrowed-deps.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    p = run([prefix / "bin" / "pagelab", "doctor", "--json"])
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["profile"] in {"full", "software-only", "blocked"}


def test_post_build_without_the_compiler_says_so(prefix, tmp_path):
    """Without c-compiler in the environment postBuild stops at once with one clear line."""
    p = _post_build(prefix, tmp_path)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f"postBuild: {prefix}/bin/{CONDA_CC} is missing: environment.yml must list c-compiler"
    )
