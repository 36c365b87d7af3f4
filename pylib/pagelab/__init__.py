"""pagelab: a Jupyter teaching lab for the Linux memory system.

Every number carries its source: hw (PMU), sw (kernel software event), rusage, sim or clock.

The public names below load on first use (PEP 562), so ``import pagelab`` costs next to nothing
and a tool pays only for what it touches: ``pagelab sim trace`` never loads numpy, plotly or the
experiments.
"""

import importlib

from ._version import __version__ as __version__

_EXPORTS = {
    ".counters.group": ("CounterGroup", "Measurement", "measure"),
    ".counters.doctor": ("doctor",),
    ".core.errors": (
        "BadInput",
        "BudgetExceeded",
        "CounterUnavailable",
        "PagelabError",
        "UnknownEvent",
    ),
    ".counters.events": ("DEFAULT_EVENTS", "Event", "event", "events"),
    ".jupyter.explore": ("explore",),
    ".cell.result": ("CellResult",),
    ".cell.run": ("run_c", "simulate_c"),
    ".sim.lines": ("LineCounts", "LineView"),
    ".jupyter.live": ("LiveCounters",),
    ".machine.maps": ("parse_maps",),
    ".machine.threads": ("watch_threads",),
    ".experiments.classreport": ("ClassReport", "class_report"),
    ".core.reading": ("Reading",),
    ".sim.reclaim": ("RECLAIM_POLICIES", "ReclaimResult", "page_string", "reclaim"),
    ".results.result": ("Claim", "Measured", "Result"),
    ".experiments.runner": ("RunHandle", "experiment_names", "parameters", "run_all", "start"),
    ".jupyter.runs": ("run",),
    ".sim.samples": ("sample_program", "sample_trace"),
    ".results.schema": ("json_schema",),
    ".sim.simulator": (
        "LevelStats",
        "SimStats",
        "Simulator",
        "TLBStats",
        "TraceInfo",
        "scan_trace",
    ),
    ".sim.cachelab": ("CachelabResult", "cachelab"),
    ".sim.config": ("CacheGeometry", "SimConfig", "TLBGeometry", "default_config"),
    ".native.source": ("Source", "source"),
    ".experiments.squeeze": ("sandbox_parent", "squeeze"),
    ".counters.stat": ("stat",),
    ".counters.callpath": ("callpaths",),
    ".native.worker": ("Interrupted", "WorkerDied", "WorkerError", "WorkerTimeout"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

# the public names, written once: _EXPORTS's, and the version (built, so a linter cannot read it)
__all__ = ["__version__"]
__all__.extend(sorted(_HOME))


def __getattr__(name):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'pagelab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return __all__


def _jupyter_server_extension_points():
    """The server extension behind the lab's kernel panel (see pagelab.jupyter.serverext)."""
    return [{"module": "pagelab.jupyter.serverext"}]


def _jupyter_labextension_paths():
    """The prebuilt JupyterLab extension (built from labext/ into pagelab/jupyter/labextension)."""
    return [{"src": "jupyter/labextension", "dest": "pagelab"}]


def load_ipython_extension(ipython):
    """`%load_ext pagelab`: the magics (see pagelab.jupyter.magics)."""
    from .jupyter.magics import load

    load(ipython)


def unload_ipython_extension(ipython):
    from .jupyter.magics import unload

    unload(ipython)
