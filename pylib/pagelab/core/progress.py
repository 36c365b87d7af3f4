"""How a run reports its steps: a tqdm.auto bar by default (a widget in a notebook, so nothing
lands on stderr or in the saved chapter; a line on a terminal), lines for logs, or a function."""

import sys
from contextlib import contextmanager

from .errors import BadInput
from .numbers import quote


def check(progress):
    if progress is not True and progress is not None and not callable(progress):
        raise BadInput(
            "progress must be True (a progress bar), None (silent) or a function of one string, "
            f"not {quote(progress)}"
        )


def lines(text):
    """Each step as a line on stderr (the CLI's progress: it reads well in logs)."""
    print(f"  ... {text}", file=sys.stderr, flush=True)


@contextmanager
def reporting(name, progress):
    """The function a run calls with each step: for True a bar titled ``name`` showing the latest
    step and the time so far, closed (and hidden) when the run ends however it ends."""
    if progress is not True:
        yield progress
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=name, bar_format="{desc}: {elapsed} {postfix}", leave=False)

    def step(text):
        bar.set_postfix_str(text)
        bar.update()

    try:
        yield step
    finally:
        bar.close()
