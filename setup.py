"""setuptools needs this file to pass cffi_modules, and to ship the header of %%c cells
(csrc/include/pagelab_cell.h) as package data; everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CELL_HEADER = Path("csrc/include/pagelab_cell.h")


class BuildPy(build_py):
    """Copy the student-facing header into the package (pagelab/include/), where
    pagelab._cell finds it in an installed wheel."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "pagelab" / "include"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(CELL_HEADER, target / CELL_HEADER.name)


setup(
    cffi_modules=["pylib/pagelab/_ffi_build.py:ffibuilder"],
    cmdclass={"build_py": BuildPy},
)
