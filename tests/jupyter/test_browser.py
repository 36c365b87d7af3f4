"""LiveCounters and the kernel panel in a real browser: Debian's chromium, driven by Playwright,
against a real JupyterLab (and Notebook 7) server that each test starts and stops. The widget
watches a process that keeps faulting; the panel watches the notebook's own kernel; with the
autocount setting on, a cell gets its line of counts without the magic."""

import re
import subprocess
import sys
import time

import pytest

from helpers import ROOT
from jupyter_browser import (
    FAULTER,
    PATHS,
    TOTAL,
    browser,
    live_cell,
    open_notebook,
    run_cell,
    screenshot,
)


@pytest.fixture
def faulter():
    """A process that faults until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", FAULTER])
    yield proc.pid
    proc.kill()
    proc.wait()


def _digits(selector):
    return f"() => /[0-9]/.test(document.querySelector('{selector}')?.textContent ?? '')"


def _at_least(selector, n):
    return f"""() => {{
        const t = document.querySelector('{selector}')?.textContent ?? '';
        return /[0-9]/.test(t) && Number(t.replace(/[^0-9]/g, '')) >= {n};
    }}"""


def _number(page, selector):
    return int(re.sub(r"[^0-9]", "", page.inner_text(selector)))


@pytest.mark.slow
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_live_counters_draw_growing_page_faults(app, faulter):
    """In JupyterLab 4 and Notebook 7 the widget draws a page-faults total that grows while the
    watched process faults, with its source tag, and a screenshot is saved."""
    with browser(app, f"live-{app}", [live_cell(faulter)]) as (server, page):
        run_cell(open_notebook(page, server, PATHS[app]), page)
        page.wait_for_function(_digits(TOTAL), timeout=120_000)
        first = _number(page, TOTAL)
        page.wait_for_function(_at_least(TOTAL, first + 1), timeout=60_000)
        second = _number(page, TOTAL)
        source = page.inner_text('[data-counter="page-faults"] .pl-source')
        shot = screenshot(page.locator('[data-pagelab="livecounters"]'), f"live-counters-{app}")
        print(f"screenshot: {shot}; page-faults drawn {first:,} then {second:,}")
    assert second > first
    assert source in ("sw", "rusage")


# The kernel panel's fault total and the per-cell line, for a cell that touches 256 MiB page by
# page with huge pages off: 65,536 fresh 4 KiB pages, so at least 60,000 faults (physics, with
# room for pages the allocator had already faulted in).
TOUCH_256M = (
    "import mmap\n"
    "m = mmap.mmap(-1, 256 << 20)\n"
    "m.madvise(mmap.MADV_NOHUGEPAGE)\n"
    "for o in range(0, len(m), 4096): m[o] = 1"
)
AT_LEAST = 60_000
AUTOCOUNT_LINE = re.compile(r"^pagelab: .*\bminflt ([0-9,]+) \(rusage\)", re.M)
STATUS = '[data-pagelab="kernel-status"]'


def _open_panel(page, server, app):
    """Open the kernel panel (Lab: its side-bar tab; Notebook 7: View > Left Sidebar) and wait
    for the notebook's kernel to show a page-faults total; returns (kernel id, selector)."""
    if app == "lab":
        page.locator('.jp-SideBar [data-id="pagelab-kernels"]').click()
    else:
        page.get_by_text("View", exact=True).first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Left Sidebar").first.hover()
        page.locator(".lm-Menu-itemLabel", has_text="pagelab").first.click()
    kernel_id = server.api("/api/sessions")[1][0]["kernel"]["id"]
    total = f'[data-pagelab="kernel"][data-kernel="{kernel_id}"] [data-counter="page-faults"]'
    page.wait_for_function(_digits(f"{total} .pl-total"), timeout=120_000)
    return kernel_id, total


@pytest.mark.slow
def test_kernel_panel_and_autocount_setting_see_a_256_mib_cell():
    """In JupyterLab 4 with the autocount setting on (no magic typed), the status bar says the
    notebook's kernel counts per cell; a cell touching 256 MiB then raises the panel's page-faults
    total for that kernel by at least 60,000 and gets a line showing at least 60,000 minflt; the
    status bar shows the kernel's RSS; a screenshot is saved; with the setting turned off in the
    Settings Editor the next cell gets no line. While the page is hidden the panel and the
    status bar hold no socket, so the server samples nothing, and they resume when it is shown
    (headless chromium never hides a page: the test sets document.visibilityState and fires
    visibilitychange, as a browser does when the tab goes to the background). The server
    refuses a request without its token, yet no stream socket's URL carries it: the login
    cookie authenticates them."""
    settings = {"pagelab:plugin": {"autocount": True}}
    with browser("lab", "kernel-panel", [TOUCH_256M], settings) as (server, page):
        streams = []
        page.on("websocket", lambda ws: streams.append(ws.url))
        editor = open_notebook(page, server, PATHS["lab"])
        # the setting's silent `%pagelab autocount on` has been answered: the cell comes after it
        page.wait_for_function(
            f"() => /per-cell counts$/.test(document.querySelector('{STATUS}')?.textContent)",
            timeout=120_000,
        )
        kernel_id, row = _open_panel(page, server, "lab")
        before = _number(page, f"{row} .pl-total")
        run_cell(editor, page)
        page.wait_for_function(_at_least(f"{row} .pl-total", before + AT_LEAST), timeout=180_000)
        after = _number(page, f"{row} .pl-total")
        line = page.locator(".jp-OutputArea-output", has_text=AUTOCOUNT_LINE)
        line.wait_for(timeout=120_000)
        cell_text = line.inner_text()
        status = page.inner_text(STATUS)
        source = page.inner_text(f"{row} .pl-source")
        shot = screenshot(page, "kernel-panel-lab")
        print(f"screenshot: {shot}; panel page-faults {before:,} -> {after:,}")
        print(f"cell line: {cell_text.strip()}; status bar: {status}")
        lines_after_off = _turn_autocount_off_and_run_a_cell(page)
        paused, resumed = _hide_and_show(page, server, kernel_id)
        refused = server.api("/pagelab/watch", token=False)[0]
    assert after - before >= AT_LEAST
    assert source in ("sw", "rusage")
    m = AUTOCOUNT_LINE.search(cell_text)
    assert m and int(m.group(1).replace(",", "")) >= AT_LEAST, cell_text
    assert "RSS" in status and "MiB" in status
    assert lines_after_off == 1  # the 256 MiB cell's line, and none under the later cell
    assert paused["clients"] == 0 and not paused["sampling"], paused
    assert resumed["clients"] >= 1, resumed
    assert refused == 403
    streams = [url for url in streams if "/pagelab/kernels/stream?" in url]
    assert len(streams) >= 2 and not any(server.token in url for url in streams), streams


def _set_visibility(page, state):
    """What a browser does when the tab goes to the background or comes back."""
    page.evaluate(
        """state => {
            const get = () => state;
            Object.defineProperty(document, "visibilityState", {configurable: true, get});
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        state,
    )


def _hide_and_show(page, server, kernel_id):
    """Hide the page until the server has no client and stops sampling, then show it until the
    panel draws the kernel anew; returns /pagelab/watch's state at both points."""
    _set_visibility(page, "hidden")
    deadline = time.monotonic() + 60
    while (paused := server.api("/pagelab/watch")[1])["clients"] or paused["sampling"]:
        assert time.monotonic() < deadline, f"still sampling for a hidden page: {paused}"
        time.sleep(0.2)
    view = f'[data-pagelab="kernel"][data-kernel="{kernel_id}"]'
    draws = int(page.get_attribute(view, "data-draws"))
    _set_visibility(page, "visible")
    page.wait_for_function(
        f"() => Number(document.querySelector('{view}').dataset.draws) > {draws}",
        timeout=60_000,
    )
    return paused, server.api("/pagelab/watch")[1]


def _turn_autocount_off_and_run_a_cell(page):
    """Untick "Counts under every cell" in the Settings Editor, as a user would, then run a
    second cell once the status bar no longer says "per-cell counts" (the off request is on its
    way, ahead of the cell); returns how many autocount lines the notebook shows then."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Settings Editor").click()
    page.locator(".jp-PluginList-entry", has_text="pagelab kernel counters").click()
    page.locator('input[id$="pagelab:plugin_autocount"]').uncheck()
    page.wait_for_function(
        f"() => !/per-cell/.test(document.querySelector('{STATUS}')?.textContent)",
        timeout=60_000,
    )
    page.locator(".lm-TabBar-tab", has_text="test.ipynb").click()
    editor = page.locator(".jp-Cell .jp-InputArea-editor").nth(1)
    editor.click()
    page.keyboard.type("y = 2")
    page.keyboard.press("Shift+Enter")
    page.locator(".jp-InputPrompt", has_text="[2]:").wait_for(timeout=120_000)
    return page.locator(".jp-OutputArea-output", has_text=AUTOCOUNT_LINE).count()


@pytest.mark.slow
def test_kernel_panel_opens_in_notebook_7():
    """In Notebook 7 the kernel panel opens from View > Left Sidebar and shows the notebook's
    kernel with a page-faults total and its source (Notebook 7 has no status bar)."""
    with browser("notebook", "kernel-panel-notebook", ["x = 1"]) as (server, page):
        run_cell(open_notebook(page, server, PATHS["notebook"]), page)
        _, row = _open_panel(page, server, "notebook")
        source = page.inner_text(f"{row} .pl-source")
        print(f"screenshot: {screenshot(page, 'kernel-panel-notebook')}")
    assert source in ("sw", "rusage")


@pytest.mark.slow
def test_kernel_panel_says_why_an_event_cannot_be_counted():
    """With an unknown event in the panel's settings, the panel shows the server's sentence
    (the event, and where the valid names are), not a bare close code."""
    settings = {"pagelab:plugin": {"events": ["no-such-event"]}}
    with browser("lab", "kernel-panel-error", ["x = 1"], settings) as (server, page):
        open_notebook(page, server, PATHS["lab"])
        page.locator('.jp-SideBar [data-id="pagelab-kernels"]').click()
        status = '[data-pagelab="panel-status"]'
        page.wait_for_function(
            f"() => /unknown event/.test(document.querySelector('{status}')?.textContent)",
            timeout=120_000,
        )
        text = page.inner_text(status)
    assert "unknown event 'no-such-event'" in text and "pagelab doctor" in text, text


@pytest.mark.slow
def test_c_cell_shows_the_transpose_misses_line_by_line():
    """In JupyterLab a %%c cell of bench/transpose.c (plain C) shows its source with the
    simulated misses per line: the naive transpose's line marked #1 and shaded, the tiled one's
    fewer; the view is saved as c-cell-lines-transpose.png."""
    program = (ROOT / "bench" / "transpose.c").read_text()
    cells = ["%load_ext pagelab", "%%c\n" + program]
    with browser("lab", "c-cell-lines", cells) as (server, page):
        page.set_viewport_size({"width": 1800, "height": 1400})  # the whole view, side by side
        editor = open_notebook(page, server, PATHS["lab"])
        run_cell(editor, page)
        page.keyboard.press("Shift+Enter")
        view = page.locator(".pagelab-lines")
        view.wait_for(timeout=180_000)
        rows = view.locator("tr")
        hot = view.locator("tr.pagelab-hot", has_text="#1")
        hot_text, shade = hot.inner_text(), hot.get_attribute("style")
        numbers = [
            int(re.sub(r"[^0-9]", "", r.locator("td").nth(2).inner_text()) or 0)
            for r in rows.filter(has_text="b[j * N + i] = a[i * N + j]").all()
        ]
        view.scroll_into_view_if_needed()
        print(f"screenshot: {screenshot(view, 'c-cell-lines-transpose')}; L1 misses {numbers}")
    assert "b[j * N + i] = a[i * N + j]" in hot_text and "rgba(" in shade
    naive, tiled = numbers
    assert naive > 3 * tiled > 0


def _language(page, editor):
    """The CodeMirror language of an editor's content (its data-language), or None."""
    return page.locator(f"{editor} .cm-content").get_attribute("data-language")


def _wait_language(page, editor, name):
    page.wait_for_function(
        "([e, name]) => document.querySelector(`${e} .cm-content`)?.dataset.language === name",
        arg=[editor, name],
        timeout=60_000,
    )


@pytest.mark.slow
def test_c_cells_are_highlighted_as_c_in_notebooks_and_consoles():
    """In JupyterLab a cell whose first line is %%c is edited as C (CodeMirror's cpp language)
    and the others as Python, in a notebook and in a console on its kernel; typing %%c on a
    Python cell's first line turns it to C, and deleting it turns it back."""
    cells = ["%%c\nint main(void) { return 0; }", "x = 1"]
    nth = ".jp-Notebook .jp-Cell:nth-child({}) .jp-InputArea-editor"
    first, second = nth.format(1), nth.format(2)
    prompt = ".jp-CodeConsole-promptCell .jp-InputArea-editor"
    with browser("lab", "c-highlight", cells) as (server, page):
        open_notebook(page, server, PATHS["lab"])
        _wait_language(page, first, "cpp")
        _wait_language(page, second, "python")
        page.locator(second).click()
        page.keyboard.press("Control+Home")
        page.keyboard.type("%%c\n")
        _wait_language(page, second, "cpp")
        for _ in range(4):
            page.keyboard.press("Backspace")
        _wait_language(page, second, "python")
        notebook = (_language(page, first), _language(page, second))

        page.keyboard.press("Escape")
        page.keyboard.press("Control+Shift+C")
        page.locator("#modal-command-palette .lm-CommandPalette-input").fill("console for notebook")
        page.locator(".lm-CommandPalette-item", has_text="New Console for Notebook").click()
        _wait_language(page, prompt, "python")
        page.locator(prompt).click()
        page.keyboard.type("%%c")
        _wait_language(page, prompt, "cpp")
        console = _language(page, prompt)
        print(f"screenshot: {screenshot(page, 'c-highlight-console')}")
    assert notebook == ("cpp", "python") and console == "cpp"
