"""The one version of pagelab: the Python package, the wheel and (later) the labextension."""

__version__ = "0.1.0"
