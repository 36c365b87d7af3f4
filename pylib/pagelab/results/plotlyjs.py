"""Where the HTML beside a figure gets plotly.js (what an nbconvert or JupyterLab HTML export of a
notebook draws with): PAGELAB_PLOTLYJS, read at each figure.

- ``cdn``: a script tag loading plotly.js from plotly's CDN in every figure (small notebooks; the
  export needs the network to draw).
- ``embed``: the first figure this kernel shows carries plotly.js itself (about 4.6 MB, once per
  notebook run top to bottom); later figures use it. The export draws with no network.
- ``auto`` (the default): ``embed`` when this machine cannot reach the CDN (an air-gapped hub),
  else ``cdn``. The CDN is tried once per kernel, for at most a second.
"""

import functools
import os
import socket
import threading

from ..core.errors import BadInput

ENV = "PAGELAB_PLOTLYJS"
MODES = ("auto", "cdn", "embed")
CDN = ("cdn.plot.ly", 443)  # where plotly's to_html(include_plotlyjs="cdn") points
PROBE_S = 1.0  # an unreachable CDN costs the first figure this much, once

_embedded = False  # whether this kernel has shown plotly.js in a figure's HTML


@functools.cache
def cdn_reachable(address=CDN, timeout=PROBE_S):
    """Whether a TCP connection to the CDN opens within ``timeout`` (name resolution included,
    which a socket timeout does not bound: it runs in a thread we stop waiting for)."""
    opened = threading.Event()

    def probe():
        try:
            with socket.create_connection(address, timeout=timeout):
                opened.set()
        except OSError:
            pass

    threading.Thread(target=probe, daemon=True, name="pagelab-cdn-probe").start()
    return opened.wait(timeout)


def mode():
    """The mode PAGELAB_PLOTLYJS asks for, ``auto`` resolved; BadInput for another value."""
    asked = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if asked not in MODES:
        raise BadInput(f"{ENV}={asked!r}: use one of {', '.join(MODES)}")
    if asked == "auto":
        return "cdn" if cdn_reachable() else "embed"
    return asked


def include():
    """plotly's ``include_plotlyjs`` for the next figure's HTML: "cdn", or True for the first
    embedding figure of this kernel and False after it."""
    global _embedded
    if mode() == "cdn":
        return "cdn"
    first, _embedded = not _embedded, True
    return first
