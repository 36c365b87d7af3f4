"""Figures display as plotly's mimetype bundle without loading plotly's renderer registry."""

import sys

from helpers import run

SHOW = """
import sys
from IPython.core.interactiveshell import InteractiveShell
import plotly.graph_objects as go
from pagelab._plots import displayable

shell = InteractiveShell.instance()
shown = []
shell.display_pub.publish = lambda data, **kw: shown.append(data)
fig = displayable(go.Figure(go.Bar(x=["a", "b"], y=[1, 2], name="sim")))
shell.display_formatter.format(fig)
renderers_loaded = "nbformat" in sys.modules or "jsonschema" in sys.modules
import plotly.io as pio  # only now: the reference bundle from plotly's own renderer
ref = pio.renderers._build_mime_bundle(fig.to_dict(), "plotly_mimetype")
print(renderers_loaded, shown == [ref], sorted(shown[0]))
"""


def test_figure_shows_plotlys_own_bundle_without_its_renderers():
    """A displayed figure publishes exactly the bundle of plotly's mimetype renderer (what
    JupyterLab's plotly extension renders and the chapters store), without importing nbformat
    and jsonschema on the way (plotly's display path costs ~2 s there)."""
    r = run([sys.executable, "-c", SHOW])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "['application/vnd.plotly.v1+json']"]
