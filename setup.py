"""setuptools needs this file for cffi_modules and for the package data that lives outside
pylib/ (the chapters, the C headers) or is built (the widget's front end); everything else is in
pyproject.toml.

Build switches (environment variables): PAGELAB_CFLAGS (see pylib/pagelab/_ffi_build.py).
"""

import shutil
import subprocess
from pathlib import Path, PurePosixPath

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "pylib" / "pagelab"
LABEXT = ROOT / "labext"
# The anywidget bundle, built from labext/ by its `npm run build`.
STATIC = PACKAGE / "static"
# Where a prebuilt JupyterLab extension would be built to (the widget cookiecutter's layout); when
# it exists the wheel installs it where Jupyter looks for extensions.
LABEXTENSION = PACKAGE / "labextension"
LABEXTENSION_DEST = "share/jupyter/labextensions/pagelab"

# Package data copied in from outside pylib/: source directory -> (destination, glob patterns).
COPIED = {
    ROOT / "notebooks": ("chapters", ["*.ipynb"]),
    ROOT / "csrc" / "include": ("include", ["*.h"]),
    ROOT / "csrc": ("csrc", ["**/*.c", "**/*.h"]),  # shown in the chapters (pagelab.source)
}


def _front_end():
    """Build the widget bundle from labext/ if it is missing (needs Node.js and npm)."""
    if not (LABEXT / "package.json").is_file() or any(STATIC.glob("*.js")):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "pagelab build: the widget front end (pylib/pagelab/static/) is not built and npm is "
            "missing; install Node.js 18+ with npm (Debian: apt-get install nodejs npm) and "
            "build again, or install a wheel, which carries the front end"
        )
    subprocess.run(
        [npm, "ci" if (LABEXT / "package-lock.json").is_file() else "install"],
        cwd=LABEXT,
        check=True,
    )
    subprocess.run([npm, "run", "build"], cwd=LABEXT, check=True)
    if not any(STATIC.glob("*.js")):
        raise SystemExit(f"pagelab build: `npm run build` in labext/ left no bundle in {STATIC}")


class BuildPy(build_py):
    """The usual build_py, plus the front end, the chapters and the headers as package data."""

    def run(self):
        _front_end()
        super().run()
        if self.editable_mode:
            return  # an editable install finds these in the checkout (pagelab/_shipped.py)
        for source, (dest, patterns) in COPIED.items():
            target = Path(self.build_lib) / "pagelab" / dest
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for pattern in patterns:
                for path in sorted(source.glob(pattern)):
                    dest = target / path.relative_to(source)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest)


def _labextension_files():
    """data_files entries installing the prebuilt lab extension, when there is one."""
    files = {}
    for path in sorted(LABEXTENSION.rglob("*")):
        if path.is_file():
            dest = PurePosixPath(LABEXTENSION_DEST) / path.parent.relative_to(LABEXTENSION)
            files.setdefault(str(dest), []).append(str(path.relative_to(ROOT)))
    return sorted(files.items())


setup(
    cffi_modules=["pylib/pagelab/_ffi_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPy},
    data_files=_labextension_files(),
)
