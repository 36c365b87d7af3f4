"""setuptools needs this file only to pass cffi_modules; everything else is in pyproject.toml."""

from setuptools import setup

setup(cffi_modules=["pylib/pagelab/_ffi_build.py:ffibuilder"])
