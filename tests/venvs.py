"""Fresh environments for the recipe tests (the wheel, the conda recipe, Binder): a copy of the
source tree as a clone has it, and new venvs that either install what a recipe lists or borrow
this test run's packages."""

import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from helpers import ROOT, run

# Not part of a source tree: build output (what `make setup` builds too, and the version module
# setup.py writes), caches, the venv.
NOT_SOURCE = shutil.ignore_patterns(
    "_version.py",
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "node_modules",
    "lib",
    "static",
    "labextension",
    "*.so",
    "*.o",
    "__pycache__",
    ".pytest_cache",
    ".ipynb_checkpoints",
)
NODE_MODULES = ROOT / "labext" / "node_modules"
# What puts the jupyter commands the recipes run in a venv's bin/: `jupyter labextension`,
# `jupyter server`, `jupyter-builder` (the rest of their packages can be borrowed).
JUPYTER_SCRIPTS = ("jupyter_core", "jupyterlab", "jupyter_server", "jupyter_builder")


def source_tree(dest):
    """A copy of the checkout at ``dest`` without anything built, borrowing labext's node
    modules (a link: spares a 400 MB `npm ci`)."""
    shutil.copytree(ROOT, dest, ignore=NOT_SOURCE)
    (dest / "labext" / "node_modules").symlink_to(NODE_MODULES)
    return dest


def new_venv(path, pip=False):
    """A new venv at ``path`` (with pip only when asked); its bin directory."""
    args = [sys.executable, "-m", "venv", str(path)]
    subprocess.run(args if pip else [*args, "--without-pip"], check=True)
    return Path(path) / "bin"


def pip(bin_dir, *args, timeout=600):
    """This run's pip acting on the venv of ``bin_dir``; the completed process."""
    return run(
        [sys.executable, "-m", "pip", "--python", bin_dir / "python", *args], timeout=timeout
    )


def borrow_packages(bin_dir):
    """Let the venv import this test run's packages after its own (a .pth file)."""
    site = run([bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    (Path(site.stdout.strip()) / "borrowed-deps.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )


def install_as_here(bin_dir, *dists):
    """Install ``dists`` into the venv at this run's versions, without their dependencies (those
    are borrowed): for the console scripts they bring, or to replace a venv's own older copy.
    Before borrow_packages: pip takes what is borrowed as installed."""
    pins = [f"{d}=={importlib.metadata.version(d)}" for d in dists]
    p = pip(bin_dir, "install", "-q", "--no-deps", *pins)
    assert p.returncode == 0, p.stderr


def plain(text):
    """Text without the colour codes jupyter prints even into a pipe."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def jupyter_lists(bin_dir, env):
    """(`jupyter labextension list`, `jupyter server extension list`) of the venv, as text."""
    out = []
    for cmd in (["labextension", "list"], ["server", "extension", "list"]):
        p = run([bin_dir / "jupyter", *cmd], env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        out.append(plain(p.stdout + p.stderr))
    return tuple(out)


def lab_extension_line(listing):
    """The line of `jupyter labextension list` naming pagelab, or None."""
    return next(
        (l.strip() for l in listing.splitlines() if l.strip().startswith("pagelab v")), None
    )
