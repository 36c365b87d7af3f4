"""setuptools needs this file for cffi_modules, for the version (labext/package.json's: the one
place it is written) and for the files that live outside pylib/ (the chapters, the C headers) or
are built from labext/ (the widget's front end, the JupyterLab extension: built with npm when
missing, so `pip wheel .` needs no `make setup`); everything else is in pyproject.toml.

Build switches (environment variables): PAGELAB_CFLAGS (see pylib/pagelab/_ffi_build.py).
"""

import json
import shutil
import subprocess
from pathlib import Path, PurePosixPath

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "pylib" / "pagelab"
LABEXT = ROOT / "labext"
# The JupyterLab extension, built by labext's `npm run build:lab` (the widget's anywidget bundle,
# `npm run build`, goes to jupyter/static/ as package data); the wheel installs it where Jupyter
# looks, as shared data only (an editable install links it there: `jupyter-builder develop`).
LABEXTENSION = PACKAGE / "jupyter" / "labextension"
LABEXTENSION_DEST = "share/jupyter/labextensions/pagelab"

# Package data copied in from outside pylib/, beside pagelab/native/shipped.py, which finds it:
# source directory -> (destination, glob patterns). The C sources are shown in the chapters
# (pagelab.source); of the headers only the public ones (csrc/include: the cffi face and what
# `%%c` includes), once; each component keeps its private ones beside its C.
COPIED = {
    ROOT / "notebooks": ("native/chapters", ["*.ipynb"]),
    ROOT / "csrc": ("native/csrc", ["**/*.c", "include/*.h"]),
}


def _npm_build(script, built, what):
    """Run ``npm run <script>`` in labext/ when ``built`` (a glob in the package) matches nothing:
    a source tree without `make setup` still builds a whole wheel (needs Node.js and npm)."""
    if not (LABEXT / "package.json").is_file() or any(PACKAGE.glob(built)):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            f"pagelab build: {what} (pylib/pagelab/{Path(built).parent}/) is not built and npm "
            "is missing; install Node.js 20+ with npm (Debian: apt-get install nodejs npm) and "
            "build again (or install a wheel, which carries it)"
        )
    if not (LABEXT / "node_modules" / ".package-lock.json").is_file():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=LABEXT, check=True)
    subprocess.run([npm, "run", script], cwd=LABEXT, check=True)
    if not any(PACKAGE.glob(built)):
        raise SystemExit(f"pagelab build: `npm run {script}` in labext/ left no {built}")


def _front_ends():
    """Both front ends, each built when missing."""
    _npm_build("build", "jupyter/static/*.js", "the widget front end")
    _npm_build("build:lab", "jupyter/labextension/package.json", "the JupyterLab extension")


class BuildPy(build_py):
    """The usual build_py, plus the front ends (built when missing), the chapters and the
    headers as package data."""

    def run(self):
        _front_ends()
        # listed again now that it is built (install_data reads this after the build)
        self.distribution.data_files = _labextension_files()
        super().run()
        if self.editable_mode:
            return  # an editable install finds these in the checkout (pagelab/native/shipped.py)
        for source, (dest, patterns) in COPIED.items():
            target = Path(self.build_lib) / "pagelab" / dest
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for pattern in patterns:
                for path in sorted(source.glob(pattern)):
                    dest = target / path.relative_to(source)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest)


class Sdist(sdist):
    """The usual sdist, with the built front ends in it (MANIFEST.in grafts them), so an sdist
    made from a clean tree (`git archive`) installs without Node."""

    def run(self):
        _front_ends()
        super().run()


# The server extension behind the lab extension's kernel panel, enabled where Jupyter looks.
SERVER_CONFIG = (
    "etc/jupyter/jupyter_server_config.d",
    ["jupyter-config/jupyter_server_config.d/pagelab.json"],
)


def _labextension_files():
    """data_files entries installing the lab extension, when it is built, and the server
    extension's config."""
    files = {SERVER_CONFIG[0]: SERVER_CONFIG[1]}
    for path in sorted(LABEXTENSION.rglob("*")):
        if path.is_file():
            dest = PurePosixPath(LABEXTENSION_DEST) / path.parent.relative_to(LABEXTENSION)
            files.setdefault(str(dest), []).append(str(path.relative_to(ROOT)))
    return sorted(files.items())


def _version():
    """labext/package.json's version, also written to pagelab/_version.py (generated, not in git:
    importing pagelab then needs no importlib.metadata, which costs ~40 ms per worker)."""
    version = json.loads((LABEXT / "package.json").read_text())["version"]
    text = f'"""Written by setup.py from labext/package.json."""\n\n__version__ = "{version}"\n'
    module = PACKAGE / "_version.py"
    if not module.is_file() or module.read_text() != text:
        module.write_text(text)
    return version


setup(
    version=_version(),
    cffi_modules=["pylib/pagelab/_ffi_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPy, "sdist": Sdist},
    data_files=_labextension_files(),
    # cffi builds _native against the limited API (_native.abi3.so), so one wheel serves every
    # CPython from 3.10 (requires-python) on: the tag says so (cp310-abi3)
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
