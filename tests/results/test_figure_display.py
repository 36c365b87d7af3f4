"""Figures display as plotly's mimetype bundle, with HTML beside it, without loading plotly's
renderer registry; the HTML loads plotly.js from the CDN or carries it once per notebook
(PAGELAB_PLOTLYJS); a figure in plotly's default template carries the dark template for
JupyterLab's dark theme, one in a template the user chose does not."""

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from helpers import ROOT, run
from pagelab.core.errors import BadInput
from pagelab.results import plotlyjs as _plotlyjs

SHOW = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
import plotly.graph_objects as go
from pagelab.results.plots import displayable

shell = InteractiveShell.instance()
shown = []
shell.display_pub.publish = lambda data, **kw: shown.append(data)
for name in ("sim", "sw"):
    fig = displayable(go.Figure(go.Bar(x=["a", "b"], y=[1, 2], name=name)))
    shell.display_formatter.format(fig)
renderers_loaded = "nbformat" in sys.modules or "jsonschema" in sys.modules
import plotly.io as pio  # only now: the reference bundle from plotly's own renderer
ref = pio.renderers._build_mime_bundle(fig.to_dict(), "plotly_mimetype")
key = "application/vnd.plotly.v1+json"
print(json.dumps({"loaded": renderers_loaded, "same": shown[-1][key] == ref[key],
                  "keys": sorted(shown[0]), "html": [s.get("text/html", "") for s in shown]}))
"""


def _show(mode):
    """Two figures displayed in a fresh interpreter with PAGELAB_PLOTLYJS=mode."""
    r = run([sys.executable, "-c", SHOW], env={**os.environ, _plotlyjs.ENV: mode})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _plotly_js():
    """The start of the plotly.min.js the plotly package ships (what embedding copies)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return path.read_text()[:200]


def test_figure_shows_plotlys_own_bundle_and_html_without_its_renderers():
    """A displayed figure publishes exactly the bundle of plotly's mimetype renderer (what
    JupyterLab's plotly extension renders) plus HTML with a sized plotly div and the figure's
    data (what nbconvert shows), without importing nbformat and jsonschema on the way (plotly's
    display path costs ~2 s there); with PAGELAB_PLOTLYJS=cdn each loads plotly.js from the
    CDN."""
    out = _show("cdn")
    assert out["loaded"] is False
    assert out["same"] is True
    assert out["keys"] == [
        "application/vnd.pagelab.themed-figure+json",
        "application/vnd.plotly.v1+json",
        "text/html",
    ]
    for html, name in zip(out["html"], ("sim", "sw")):
        assert html.startswith('<div style="height:450px') and 'class="plotly-graph-div"' in html
        assert 'src="https://cdn.plot.ly' in html and f'"{name}"' in html
        assert _plotly_js() not in html


def test_figures_follow_the_users_template_and_offer_the_dark_one_only_for_the_default():
    """pagelab's figures no longer force a template: they take plotly's default, and then
    carry plotly_dark for JupyterLab's dark theme; with a template the user set as the default,
    or set on the figure, they use it and carry no other."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from pagelab.results.plots import Panel, grid, theme_templates

    def figure():
        return grid("t", [Panel("p", [go.Bar(x=["a"], y=[1])])])

    assert pio.templates.default == "plotly"
    fig = figure()
    assert fig.layout.template == pio.templates["plotly"]
    assert theme_templates(fig) == {"dark": pio.templates["plotly_dark"].to_plotly_json()}
    try:
        pio.templates.default = "ggplot2"
        fig = figure()
        assert fig.layout.template == pio.templates["ggplot2"]
        assert theme_templates(fig) is None
    finally:
        pio.templates.default = "plotly"
    fig = figure().update_layout(template="seaborn")
    assert theme_templates(fig) is None


def test_embedding_puts_plotly_js_in_the_first_figure_only():
    """With PAGELAB_PLOTLYJS=embed the first figure's HTML carries plotly.js itself and the
    second only draws with it: once per notebook, and never a CDN request."""
    first, second = _show("embed")["html"]
    assert first.count(_plotly_js()) == 1 and len(first) > 1_000_000
    assert _plotly_js() not in second and len(second) < 100_000
    assert 'src="https://cdn.plot.ly' not in first + second
    assert "Plotly.newPlot" in first and "Plotly.newPlot" in second


def test_auto_embeds_exactly_when_the_cdn_is_unreachable(monkeypatch):
    """auto means cdn when a connection to the CDN opens and embed when it cannot; a server
    socket on this machine stands in for a reachable CDN, a closed port for an unreachable
    one."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        assert _plotlyjs.cdn_reachable(server.getsockname()) is True
    with socket.create_server(("127.0.0.1", 0)) as closed:
        address = closed.getsockname()
    assert _plotlyjs.cdn_reachable(address) is False
    monkeypatch.delenv(_plotlyjs.ENV, raising=False)
    for reachable, expected in ((True, "cdn"), (False, "embed")):
        monkeypatch.setattr(_plotlyjs, "cdn_reachable", lambda r=reachable: r)
        assert _plotlyjs.mode() == expected


def test_bad_mode_is_one_clear_error(monkeypatch):
    """Another PAGELAB_PLOTLYJS value is BadInput naming the allowed ones."""
    monkeypatch.setenv(_plotlyjs.ENV, "offline")
    with pytest.raises(BadInput, match="PAGELAB_PLOTLYJS='offline': use one of auto, cdn, embed"):
        _plotlyjs.mode()


def test_stored_chapters_load_plotly_js_from_the_cdn():
    """The chapters' stored outputs do not carry plotly.js (4.6 MB each): they were stored with
    PAGELAB_PLOTLYJS=cdn, as docs/widget.md asks of whoever re-stores them."""
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for output in cell.get("outputs", []):
                html = "".join(output.get("data", {}).get("text/html", ""))
                assert _plotly_js() not in html, nb.name
