"""Figures display as plotly's mimetype bundle, with HTML beside it, without loading plotly's
renderer registry."""

import sys

from helpers import run

SHOW = """
import json, sys
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
key = "application/vnd.plotly.v1+json"
print(json.dumps({"loaded": renderers_loaded, "same": shown[0][key] == ref[key],
                  "keys": sorted(shown[0]), "html": shown[0].get("text/html", "")}))
"""


def test_figure_shows_plotlys_own_bundle_and_html_without_its_renderers():
    """A displayed figure publishes exactly the bundle of plotly's mimetype renderer (what
    JupyterLab's plotly extension renders) plus HTML with a sized plotly div and the figure's
    data (what nbconvert shows), without importing nbformat and jsonschema on the way (plotly's
    display path costs ~2 s there)."""
    import json

    r = run([sys.executable, "-c", SHOW])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["loaded"] is False
    assert out["same"] is True
    assert out["keys"] == ["application/vnd.plotly.v1+json", "text/html"]
    html = out["html"]
    assert html.startswith('<div style="height:450px') and 'class="plotly-graph-div"' in html
    assert "cdn.plot.ly" in html and '"sim"' in html
