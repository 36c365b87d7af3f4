"""The version of pagelab, as installed: setup.py takes it from labext/package.json, the one
place it is written, so the wheel, the widget, the lab extension and Python agree."""

from importlib.metadata import version

__version__ = version("pagelab")
