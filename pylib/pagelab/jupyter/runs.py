"""pagelab.run as a notebook uses it: the runner's run, and a live view of its workers."""

from ..experiments import runner


def run(name, *, live=False, **kwargs):
    """Run experiment ``name`` (see ``pagelab.parameters(name)`` for its parameters) in worker
    processes and return its Result: labelled measurements and the claims of its write-up
    evaluated on them. ``live``: also show a LiveCounters widget following the workers while
    they run. The other keywords (``sim``, ``timeout``, ``progress`` and the parameters) are
    those of ``pagelab.experiments.runner.run``: bad parameters and requests over the memory
    budget raise BadInput before anything runs."""
    return runner.run(name, watch=_show_live if live else None, **kwargs)


def _show_live(handle):
    from IPython.display import display

    from .live import LiveCounters

    display(LiveCounters.watch(handle, interval_ms=50))
