"""A result's figure drawn by a real browser (Debian's chromium, driven by Playwright): in
JupyterLab, by plotly's mimetype renderer, in the theme unless the user chose a template, and in
a chapter exported with `jupyter nbconvert --to html`, by the HTML that pagelab stores beside the
plotly JSON."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jupyter_browser import (
    browser,
    launch,
    missing_browser,
    open_notebook,
    run_cell,
    screenshot,
    set_theme,
    write_cells,
)

CELL = """\
import pagelab
pagelab.run("first-touch", size_mb=4, progress=None).figure()"""
PLOT = ".js-plotly-plot"
# what plotly.js draws once it has laid a bar chart out: its SVG and the bars' paths
DRAWN = f"() => document.querySelectorAll('{PLOT} svg.main-svg .bars path').length > 0"


def _drawn(page):
    """(bars drawn, the plot's height in pixels): a collapsed div draws its bars in no room."""
    box = page.locator(PLOT).first.bounding_box()
    return page.locator(f"{PLOT} svg.main-svg .bars path").count(), box["height"] if box else 0


@pytest.mark.slow
def test_figure_draws_in_jupyterlab():
    """In JupyterLab 4 a result's figure is drawn by plotly's renderer: an SVG with its bars
    (the HTML beside the plotly JSON would need the CDN, which this machine cannot reach)."""
    with browser("lab", "figure-lab", [CELL]) as (server, page):
        run_cell(open_notebook(page, server, "/lab/tree/test.ipynb"), page)
        page.wait_for_function(DRAWN, timeout=120_000)
        bars, height = _drawn(page)
        shot = screenshot(page.locator(PLOT).first, "figure-lab")
        print(f"screenshot: {shot}; {bars} bars drawn, {height:.0f} px high")
    assert bars >= 2 and height >= 200


# The second figure of the same result, after the user chose a template of their own.
THEMES = [
    "import pagelab\nr = pagelab.run('first-touch', size_mb=4, progress=None)\nr.figure()",
    "import plotly.io as pio\npio.templates.default = 'ggplot2'\nr.figure()",
]
# each figure's backgrounds as plotly.js laid them out
BACKGROUNDS = f"""() => [...document.querySelectorAll('{PLOT}')].map(
    gd => [gd._fullLayout.paper_bgcolor, gd._fullLayout.plot_bgcolor])"""


def _backgrounds(page, n, want):
    """The figures' [paper, plot] backgrounds once there are ``n`` and the first's paper is
    ``want``."""
    page.wait_for_function(
        f"() => {{ const b = ({BACKGROUNDS})(); return b.length === {n} && b[0][0] === '{want}' }}",
        timeout=120_000,
    )
    return page.evaluate(BACKGROUNDS)


@pytest.mark.slow
def test_figures_follow_the_theme_unless_the_user_chose_a_template():
    """In JupyterLab a figure in plotly's default template is drawn in plotly_dark while the
    theme is Dark and back in the default on Light, redrawn as the user switches; a figure made
    after the user set their own template (ggplot2) keeps it in both themes."""
    with browser("lab", "figure-themes", THEMES) as (server, page):
        editor = open_notebook(page, server, "/lab/tree/test.ipynb")
        run_cell(editor, page)
        page.wait_for_function(DRAWN, timeout=120_000)
        page.locator(".jp-Cell .jp-InputArea-editor").nth(1).click()
        page.keyboard.press("Shift+Enter")
        light = _backgrounds(page, 2, "white")
        set_theme(page, "JupyterLab Dark")
        dark = _backgrounds(page, 2, "rgb(17,17,17)")
        shot = screenshot(page.locator(PLOT).first, "figure-lab-dark")
        set_theme(page, "JupyterLab Light")
        back = _backgrounds(page, 2, "white")
        print(f"screenshot: {shot}; light {light}, dark {dark}, light again {back}")
    default, ggplot2 = "#E5ECF6", "rgb(237,237,237)"
    assert light == [["white", default], ["white", ggplot2]]
    assert dark == [["rgb(17,17,17)", "rgb(17,17,17)"], ["white", ggplot2]]
    assert back == light


def _plotly_js():
    """The plotly.min.js that the installed plotly package ships (the CDN's file)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["cdn", "embed"])
def test_figure_draws_in_an_nbconvert_export(mode):
    """A notebook of two figures, executed and exported by `jupyter nbconvert --to html`, draws
    both in a browser from the stored HTML alone, every request but plotly's CDN refused. With
    PAGELAB_PLOTLYJS=cdn the CDN is asked for plotly.js (this machine cannot reach it, so the
    same file from the plotly package answers: the test checks pagelab's HTML, not the CDN);
    with embed nothing is asked, and the export carries plotly.js once."""
    why = missing_browser()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="pagelab-export-"))
    try:
        write_cells(root / "export.ipynb", [CELL, CELL])
        jupyter = str(Path(sys.executable).with_name("jupyter"))
        cmd = [jupyter, "nbconvert", "--to", "html", "--execute", str(root / "export.ipynb")]
        env = {**os.environ, "PAGELAB_PLOTLYJS": mode}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stderr[-2000:]
        html = root / "export.html"
        copies = html.read_text().count(_plotly_js().read_text()[:200])
        asked, errors = [], []
        with sync_playwright() as pw:
            context = launch(pw, root / ".chromium")
            try:

                def answer(route):
                    asked.append(route.request.url)
                    if "cdn.plot.ly" in route.request.url:
                        route.fulfill(path=str(_plotly_js()), content_type="text/javascript")
                    elif route.request.url.startswith("file://"):
                        route.continue_()
                    else:
                        route.abort()

                context.route("**/*", answer)
                page = context.new_page()
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(html.as_uri())
                both = f"() => document.querySelectorAll('{PLOT} svg.main-svg').length >= 2"
                page.wait_for_function(both, timeout=60_000)
                page.wait_for_function(DRAWN, timeout=60_000)
                plots = page.locator(PLOT)
                drawn = [plots.nth(i).locator("svg.main-svg .bars path").count() for i in range(2)]
                heights = [plots.nth(i).bounding_box()["height"] for i in range(2)]
                shot = screenshot(plots.first, f"figure-nbconvert-{mode}")
                print(f"screenshot: {shot}; bars {drawn}, heights {heights}; asked {asked}")
            finally:
                context.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert min(drawn) >= 2 and min(heights) >= 200
    cdn = [url for url in asked if "cdn.plot.ly" in url]
    if mode == "cdn":
        assert cdn and copies == 0  # drawn by the HTML's own script tag
    else:
        assert not cdn and copies == 1  # drawn by the one embedded copy
    assert not [e for e in errors if "plotly" in e.lower()], errors
