"""The kernel panel and the LiveCounters widget as a student sees them, in a real JupyterLab in
Debian's chromium: every text's contrast computed from the rendered elements' styles on the
Light and Dark themes, the panel in a 250 px side bar with every source tag in sight, the command
that shows it, the roles and names a screen reader gets, the widget's JupyterLab controls; with
screenshots under build/test-artifacts/."""

import json
import re

import pytest

from jupyter_browser import live_cell, open_notebook, set_theme
from test_browser import ARTIFACTS, PATHS, _digits, _run, browser, faulter, screenshot  # noqa: F401

AA = 4.5  # WCAG 2 AA, normal text
SIDEBAR_PX = 250
WIDGET = '.jp-OutputArea [data-pagelab="livecounters"]'
PANEL = ".pagelab-panel"
# "4242:1" is a perf type no kernel has: a counter that says why it is unavailable, on any host
EVENTS = ["page-faults", "context-switches", "4242:1"]
SETTINGS = {
    "pagelab:plugin": {"events": ["page-faults", "4242:1"]},
    # no news pop-up over the screenshots
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"},
}

# Every visible text node under the given roots: its element's computed colour over the
# background its ancestors paint (alpha composited, opacity included), as a WCAG contrast ratio.
CONTRASTS = """
selectors => {
  const parse = (c) => {
    const m = /^rgba?\\(([^)]+)\\)$/.exec(c);
    if (!m) throw new Error(`a colour this test cannot read: ${c}`);
    const p = m[1].split(/[\\s,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) =>
    [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    return layers.reverse().reduce((bg, layer) => over(layer, bg), [255, 255, 255, 1]);
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) =>
      (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const rgb = (x) => `rgb(${x.slice(0, 3).map(Math.round).join(",")})`;
  const out = [];
  for (const selector of selectors) {
    for (const root of document.querySelectorAll(selector)) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        const text = n.textContent.trim();
        const box = el.getBoundingClientRect();
        const style = getComputedStyle(el);
        // hidden, or drawn for screen readers only (1 px, clipped)
        if (!text || box.width <= 1 || box.height <= 1 || style.visibility !== "visible") continue;
        let opacity = 1;
        for (let e = el; e; e = e.parentElement) opacity *= Number(getComputedStyle(e).opacity);
        const bg = background(el);
        const c = parse(style.color);
        const fg = over([c[0], c[1], c[2], c[3] * opacity], bg);
        const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
        out.push({
          where: selector, cls: el.getAttribute("class") ?? el.tagName, text: text.slice(0, 60),
          ratio: (hi + 0.05) / (lo + 0.05), fg: rgb(fg), bg: rgb(bg), bgLuminance: luminance(bg),
        });
      }
    }
  }
  return out;
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


def _look(page, theme):
    """Contrasts, the panel's fit and screenshots under ``theme``, once the views drew in it."""
    set_theme(page, theme)
    draws = int(page.get_attribute(WIDGET, "data-draws"))
    page.wait_for_function(
        f"() => Number(document.querySelector('{WIDGET}').dataset.draws) > {draws + 5}",
        timeout=60_000,
    )
    name = theme.split()[-1].lower()
    shots = [
        screenshot(page.locator(WIDGET), f"look-widget-{name}"),
        screenshot(page.locator("#jp-left-stack"), f"look-panel-{SIDEBAR_PX}px-{name}"),
        screenshot(page, f"look-lab-{name}"),
    ]
    return page.evaluate(CONTRASTS, [WIDGET, PANEL]), page.evaluate(FIT), shots


def _lowest(contrasts):
    """The lowest ratio per (where, class), lowest first: what the report quotes."""
    low = {}
    for c in contrasts:
        key = (c["where"], c["cls"])
        if key not in low or c["ratio"] < low[key]["ratio"]:
            low[key] = c
    return sorted(low.values(), key=lambda c: c["ratio"])


@pytest.mark.slow
def test_panel_and_widget_are_readable_in_light_and_dark(faulter):  # noqa: F811
    """On JupyterLab Light and Dark every text of the LiveCounters widget and of the kernel
    panel (names, figures, axes, source tags, reasons, status) has at least 4.5:1 contrast,
    computed from the rendered elements' styles; the panel, opened from the command palette,
    fits a 250 px side bar without scrolling sideways with every source tag in sight; the
    widget's controls are JupyterLab toolbar buttons that stop and start the sampling; charts
    are images named by their latest value and range, the panel a named region."""
    cells = [live_cell(faulter, events=EVENTS)]
    with browser("lab", "look", cells, SETTINGS) as (server, page):
        _run(open_notebook(page, server, PATHS["lab"]), page)
        page.wait_for_function(
            _digits(f'{WIDGET} [data-counter="page-faults"] .pl-rate'), timeout=120_000
        )
        _show_panel_from_the_palette(page)
        _sidebar(page, SIDEBAR_PX)
        looks = {theme: _look(page, theme) for theme in ("JupyterLab Light", "JupyterLab Dark")}

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
        toolbar.get_by_role("button", name="Start").click()
        page.wait_for_function(
            f"() => document.querySelector('{WIDGET}').dataset.running === 'true'", timeout=60_000
        )

    report = {}
    for theme, (contrasts, fit, shots) in looks.items():
        low = _lowest(contrasts)
        report[theme] = {"fit": fit, "screenshots": [str(s) for s in shots], "lowest": low}
        print(f"{theme}: {len(contrasts)} texts, panel {fit}; screenshots {shots}")
        for c in low:
            print(f"  {c['ratio']:5.2f}  {c['where']:<46} {c['cls']:<26} {c['text']!r}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "look-contrasts.json").write_text(json.dumps(report, indent=1))
    for theme, (contrasts, fit, _) in looks.items():
        dark = theme.endswith("Dark")
        assert all((c["bgLuminance"] < 0.2) == dark for c in contrasts), theme  # theme applied
        below = [c for c in contrasts if c["ratio"] < AA]
        assert below == [], (theme, below)
        for where in (WIDGET, PANEL):
            kinds = {k for c in contrasts if c["where"] == where for k in c["cls"].split()}
            assert {"pl-source", "pl-reason", "pl-rate", "pl-tick"} <= kinds, (theme, where)
        assert round(fit["sidebar"]) == SIDEBAR_PX and fit["scrollWidth"] <= fit["clientWidth"], fit
        assert fit["tags"] >= 3 and fit["overhang"] <= 0, fit
    assert named[0] == 1 and named[1] >= 2  # the widget's chart and the panel's
    assert "jp-ToolbarButtonComponent" in classes and "jp-Button" in classes
