"""The kernel panel, its status-bar item and the LiveCounters widget as a student sees them, in a
real JupyterLab in Debian's chromium: axe-core's WCAG 2 AA rules (contrast among them) on the
Light and Dark themes with no violation, the panel in a 250 px side bar with every source tag in
sight, the command that shows it, the roles and names a screen reader gets, the widget's
JupyterLab controls; and screenshots of the three in both themes compared with the references
in tests/screenshots/ (PAGELAB_UPDATE_SCREENSHOTS=1 writes them anew)."""

import json
import os
import re
import shutil
import time

import pytest
from test_browser import _digits, _set_visibility, faulter  # noqa: F401 (a fixture)

from helpers import ROOT, run
from jupyter_browser import (
    ARTIFACTS,
    PATHS,
    browser,
    live_cell,
    open_notebook,
    run_cell,
    screenshot,
    set_theme,
)

SIDEBAR_PX = 250
WIDGET = '.jp-OutputArea [data-pagelab="livecounters"]'
PANEL = ".pagelab-panel"
STATUS = '[data-pagelab="kernel-status"]'
REGIONS = {"widget": WIDGET, "panel": PANEL, "status": STATUS}
# what the screenshots show: the panel as the side bar shows it, not the rows below the fold
SHOTS = {**REGIONS, "panel": "#jp-left-stack"}
THEMES = ("JupyterLab Light", "JupyterLab Dark")
# "4242:1" is a perf type no kernel has: a counter that says why it is unavailable, on any host
EVENTS = ["page-faults", "context-switches", "4242:1"]
SETTINGS = {
    "pagelab:plugin": {"events": ["page-faults", "4242:1"]},
    # no news pop-up over the screenshots
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
}
LABEXT_MODULES = ROOT / "labext" / "node_modules"
AXE = LABEXT_MODULES / "axe-core" / "axe.min.js"
PIXELMATCH = LABEXT_MODULES / ".bin" / "pixelmatch"
REFERENCES = ROOT / "tests" / "screenshots"
UPDATE = os.environ.get("PAGELAB_UPDATE_SCREENSHOTS") == "1"
# A screenshot matches its reference when at most MAX_DIFFERENT of its pixels differ by more than
# pixelmatch's colour threshold (its default, 0.1 of the YIQ range), anti-aliased pixels (font
# edges) not counted: font rasterisation may move; a layout, colour or text change may not.
THRESHOLD = 0.1
MAX_DIFFERENT = 0.002

# axe-core (labext's devDependency, injected into the page) on the given regions, WCAG 2.0-2.2
# A and AA rules only: the violations, how many rules passed, and the lowest contrast it
# measured (what docs/architecture.md quotes).
AXE_RUN = """
async (selectors) => {
  const r = await axe.run(
    { include: selectors.map((s) => [s]) },
    { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"] } },
  );
  const ratios = r.passes
    .filter((p) => p.id === "color-contrast")
    .flatMap((p) => p.nodes.map((n) => n.any[0]?.data?.contrastRatio))
    .filter(Number.isFinite);
  return {
    violations: r.violations.map((v) => ({
      id: v.id,
      help: v.help,
      nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary}`),
    })),
    passed: r.passes.map((p) => p.id),
    incomplete: r.incomplete.map((v) => ({
      id: v.id,
      nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${n.any.map((c) => c.message).join("; ")}`),
    })),
    contrasts: ratios.length,
    lowest: ratios.length ? Math.min(...ratios) : null,
  };
}
"""

# Every figure, source, reason, name and line that comes from the machine or the moment, set to
# a fixed text, so that a screenshot shows the look alone and is the same on any host.
FREEZE = """
(selectors) => {
  const fixed = {
    ".pl-rate": "1.2k/s", ".pl-total": "12,345", ".pl-tick-top": "2k/s", ".pl-tick-mid": "1k/s",
    ".pl-source": "sw", ".pl-reason": "unavailable: the reason, in one sentence",
    ".pl-note": "a note", ".pl-version": "pagelab 1.0.0",
    ".pl-panel-status": "1 kernel, sampled every 100 ms (pagelab 1.0.0)",
    ".pagelab-live .pl-title": "live counters: 1234",
    '[data-pagelab="kernel"] .pl-title': "python3 kernel, pid 1234",
  };
  for (const root of selectors.flatMap((s) => [...document.querySelectorAll(s)])) {
    for (const [sel, text] of Object.entries(fixed))
      root.querySelectorAll(sel).forEach((e) => (e.textContent = text));
    root.querySelectorAll(".pl-line").forEach((l) => l.setAttribute("points", "0,60 150,30 300,6"));
    if (root.matches('[data-pagelab="kernel-status"]'))
      root.textContent = "faults 1.2k/s (sw) · RSS 64 MiB";
  }
}
"""

# How the panel sits in the side bar: its width, whether it scrolls sideways, and how far each
# source tag reaches past the side bar's right edge (> 0: cut off).
FIT = """
() => {
  const bar = document.getElementById("jp-left-stack").getBoundingClientRect();
  const panel = document.querySelector(".pagelab-kernels");
  const tags = [...panel.querySelectorAll(".pl-source")];
  return {
    sidebar: bar.width, scrollWidth: panel.scrollWidth, clientWidth: panel.clientWidth,
    tags: tags.length,
    overhang: Math.max(...tags.map((t) => t.getBoundingClientRect().right - bar.right)),
  };
}
"""


def _sidebar(page, width):
    """Drag the side bar's edge, as a user does, until it is ``width`` px wide."""
    stack = page.locator("#jp-left-stack")
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle").first
    for _ in range(3):
        now = stack.bounding_box()["width"]
        if round(now) == width:
            return
        box = handle.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + width - now, y, steps=5)
        page.mouse.up()
    assert round(stack.bounding_box()["width"]) == width


def _show_panel_from_the_palette(page):
    """Ctrl+Shift+C, "kernel counters", Enter: the command shows the kernel panel."""
    page.keyboard.press("Escape")  # the notebook's command mode
    page.keyboard.press("Control+Shift+C")
    page.locator("#modal-command-palette .lm-CommandPalette-input").fill("kernel counters")
    item = page.locator(".lm-CommandPalette-item", has_text="Show Kernel Counters")
    item.wait_for(timeout=30_000)
    page.keyboard.press("Enter")
    page.wait_for_function(
        _digits('[data-pagelab="kernel"] [data-counter="page-faults"] .pl-total'), timeout=120_000
    )


def _audit(page, theme):
    """axe-core's report and the panel's fit under ``theme``, once the views drew in it."""
    set_theme(page, theme)
    draws = int(page.get_attribute(WIDGET, "data-draws"))
    page.wait_for_function(
        f"() => Number(document.querySelector('{WIDGET}').dataset.draws) > {draws + 5}",
        timeout=60_000,
    )
    if not page.evaluate("() => typeof axe === 'object'"):
        page.add_script_tag(path=str(AXE))
        # JupyterLab's <body> is 0 px high with overflow hidden (the shell is positioned over the
        # viewport, so nothing is clipped); axe would take every element for clipped and skip
        # its contrast. The height of the viewport changes nothing drawn.
        page.evaluate("() => { document.body.style.height = '100vh'; }")
    return page.evaluate(AXE_RUN, list(REGIONS.values())), page.evaluate(FIT)


# While the page is hidden the kernel's socket can drop: ipywidgets then greys out a widget and
# marks it with an icon (class jupyter-widgets-disconnected, put back at each state change), and
# JupyterLab may put a dialog's backdrop over the page. Both are the page's state, not pagelab's
# look, so the screenshots leave them out (set_theme waits out the theme's splash screen).
CONNECTED = """
.jupyter-widgets-disconnected { opacity: 1 !important; filter: none !important; }
.jupyter-widgets-disconnected::before { display: none !important; }
.jp-Dialog { display: none !important; }
"""


def _compare(page, theme):
    """Screenshot each region under ``theme`` into build/test-artifacts/ and compare it with its
    reference (or write the reference, when updating); returns {name: the share of pixels that
    differ, or None when written}."""
    set_theme(page, theme)
    page.add_style_tag(content=CONNECTED)
    page.mouse.move(0, 0)  # no hover style on what is shot
    out = {}
    for region, selector in SHOTS.items():
        name = f"look-{region}-{theme.split()[-1].lower()}"
        shot = screenshot(page.locator(selector).first, name)
        reference = REFERENCES / f"{name}.png"
        if UPDATE:
            REFERENCES.mkdir(exist_ok=True)
            shutil.copyfile(shot, reference)
            out[name] = None
            continue
        assert reference.exists(), f"no {reference}: PAGELAB_UPDATE_SCREENSHOTS=1 writes it"
        diff = ARTIFACTS / f"{name}-diff.png"
        p = run([str(PIXELMATCH), str(reference), str(shot), str(diff), str(THRESHOLD)])
        m = re.search(r"different pixels: (\d+)", p.stdout)
        assert m, f"{name}: {p.stdout.strip()} (reference {reference}, now {shot})"
        width, height = (
            page.locator(selector).first.bounding_box()[k] for k in ("width", "height")
        )
        out[name] = int(m.group(1)) / max(1, round(width) * round(height))
    return out


def _quiet(page, server):
    """Until nothing draws: the widget stopped (its last samples drawn) and the page hidden, so
    that it holds no stream socket and the panel and the status-bar item wait."""
    _set_visibility(page, "hidden")
    deadline = time.monotonic() + 60
    while server.api("/pagelab/watch")[1]["clients"]:
        assert time.monotonic() < deadline, "the hidden page still holds a stream socket"
        time.sleep(0.2)
    draws = None
    while draws != (draws := page.get_attribute(WIDGET, "data-draws")):
        assert time.monotonic() < deadline, "the stopped widget still draws"
        time.sleep(0.5)


@pytest.mark.slow
def test_panel_and_widget_are_readable_in_light_and_dark(faulter):  # noqa: F811
    """On JupyterLab Light and Dark, axe-core finds no WCAG 2 AA violation (contrast, names,
    roles) in the LiveCounters widget, the kernel panel and its status-bar item, and checks the
    contrast of their texts; the panel, opened from the command palette, fits a 250 px side bar
    without scrolling sideways with every source tag in sight; the widget's controls are
    JupyterLab toolbar buttons that stop and start the sampling; charts are images named by
    their latest value and range, the panel a named region; and with the live figures set to
    fixed texts, each of the three looks like its reference screenshot in each theme."""
    assert AXE.exists() and PIXELMATCH.exists(), "labext/node_modules is missing: run `make setup`"
    cells = [live_cell(faulter, events=EVENTS)]
    with browser("lab", "look", cells, SETTINGS) as (server, page):
        run_cell(open_notebook(page, server, PATHS["lab"]), page)
        page.wait_for_function(
            _digits(f'{WIDGET} [data-counter="page-faults"] .pl-rate'), timeout=120_000
        )
        _show_panel_from_the_palette(page)
        _sidebar(page, SIDEBAR_PX)
        page.locator(STATUS).wait_for(timeout=60_000)
        audits = {theme: _audit(page, theme) for theme in THEMES}

        region = page.get_by_role("region", name="pagelab kernel counters")
        charts = page.get_by_role(
            "img", name=re.compile(r"^page-faults per second over the last 10 seconds: now ")
        )
        named = (region.count(), charts.count())
        toolbar = page.get_by_role("toolbar", name="sampling controls")
        classes = toolbar.get_by_role("button", name="Stop").get_attribute("class")
        toolbar.get_by_role("button", name="Stop").click()
        page.wait_for_function(
            f"() => document.querySelector('{WIDGET}').dataset.running === 'false'", timeout=60_000
        )
        _quiet(page, server)
        page.evaluate(FREEZE, list(REGIONS.values()))
        differences = {k: v for theme in THEMES for k, v in _compare(page, theme).items()}
        _set_visibility(page, "visible")
        toolbar.get_by_role("button", name="Start").click()
        page.wait_for_function(
            f"() => document.querySelector('{WIDGET}').dataset.running === 'true'", timeout=60_000
        )

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "look-axe.json").write_text(json.dumps(audits, indent=1))
    for theme, (axe, fit) in audits.items():
        print(
            f"{theme}: axe passed {len(axe['passed'])} rules, {axe['contrasts']} contrasts, "
            f"lowest {axe['lowest']}:1; panel {fit}"
        )
    print(f"screenshots against tests/screenshots/ (share of pixels that differ): {differences}")
    for theme, (axe, fit) in audits.items():
        assert axe["violations"] == [], (theme, axe["violations"])
        assert "color-contrast" in axe["passed"] and axe["contrasts"] >= 20, (theme, axe)
        assert round(fit["sidebar"]) == SIDEBAR_PX and fit["scrollWidth"] <= fit["clientWidth"], fit
        assert fit["tags"] >= 3 and fit["overhang"] <= 0, fit
    assert named[0] == 1 and named[1] >= 2  # the widget's chart and the panel's
    assert "jp-ToolbarButtonComponent" in classes and "jp-Button" in classes
    assert len(differences) == 2 * len(REGIONS)
    off = {k: v for k, v in differences.items() if v is not None and v > MAX_DIFFERENT}
    assert off == {}, f"{off}: see build/test-artifacts/*-diff.png"
