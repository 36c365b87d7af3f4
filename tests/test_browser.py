"""LiveCounters in a real browser: Debian's chromium, driven by Playwright, against a real
JupyterLab (and Notebook 7) server that the test starts and stops. The notebook shows a widget
watching a process that keeps faulting; the page-faults total drawn must grow."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import ROOT
from jupyter_browser import (
    FAULTER,
    TOTAL,
    Server,
    launch,
    missing_browser,
    run_first_cell,
    write_cells,
    write_notebook,
)

ARTIFACTS = ROOT / "build" / "test-artifacts"


@pytest.fixture
def faulter():
    """A process that faults until the test ends."""
    proc = subprocess.Popen([sys.executable, "-c", FAULTER])
    yield proc.pid
    proc.kill()
    proc.wait()


def _total(page):
    return int(re.sub(r"[^0-9]", "", page.inner_text(TOTAL)))


@pytest.mark.slow
@pytest.mark.parametrize(
    "app,path", [("lab", "/lab/tree/live.ipynb"), ("notebook", "/notebooks/live.ipynb")]
)
def test_live_counters_draw_growing_page_faults(app, path, faulter):
    """In JupyterLab 4 and Notebook 7 the widget draws a page-faults total that grows while the
    watched process faults, with its source tag, and a screenshot is saved."""
    why = missing_browser()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix=f"pagelab-browser-{app}-"))
    write_notebook(root / "live.ipynb", faulter)
    server = Server(app, root)
    try:
        with sync_playwright() as pw:
            try:
                context = launch(pw, root / ".chromium")
            except Exception as e:
                if os.environ.get("CI") == "true":
                    raise
                pytest.skip(f"chromium did not start here: {str(e).splitlines()[0]}")
            page = context.new_page()
            try:
                run_first_cell(page, server, path)
                page.wait_for_function(
                    f"() => /[0-9]/.test(document.querySelector('{TOTAL}')?.textContent ?? '')",
                    timeout=120_000,
                )
                first = _total(page)
                page.wait_for_function(
                    f"""() => {{
                        const t = document.querySelector('{TOTAL}')?.textContent ?? '';
                        return Number(t.replace(/[^0-9]/g, '')) > {first};
                    }}""",
                    timeout=60_000,
                )
                second = _total(page)
                row = page.locator('[data-counter="page-faults"]')
                source = row.locator(".pl-source").inner_text()
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                shot = ARTIFACTS / f"live-counters-{app}.png"
                page.locator('[data-pagelab="livecounters"]').screenshot(path=str(shot))
                print(f"screenshot: {shot}; page-faults drawn {first:,} then {second:,}")
            except Exception:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"failed-{app}.png"))
                raise
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
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


def _panel_total(kernel_id):
    return (
        f'[data-pagelab="kernel"][data-kernel="{kernel_id}"] [data-counter="page-faults"] .pl-total'
    )


def _number(page, selector):
    text = page.inner_text(selector)
    return int(re.sub(r"[^0-9]", "", text)) if re.search(r"[0-9]", text) else None


@pytest.mark.slow
def test_kernel_panel_and_autocount_see_a_256_mib_cell():
    """In JupyterLab 4 the kernel panel's page-faults total for the notebook's kernel rises by
    at least 60,000 when a cell touches 256 MiB, the cell's autocount line shows at least
    60,000 minflt, the status bar shows the kernel's RSS, and a screenshot is saved."""
    why = missing_browser()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="pagelab-browser-panel-"))
    write_cells(root / "panel.ipynb", ["%load_ext pagelab\n%pagelab autocount on", TOUCH_256M])
    server = Server("lab", root)
    try:
        with sync_playwright() as pw:
            try:
                context = launch(pw, root / ".chromium")
            except Exception as e:
                if os.environ.get("CI") == "true":
                    raise
                pytest.skip(f"chromium did not start here: {str(e).splitlines()[0]}")
            page = context.new_page()
            try:
                run_first_cell(page, server, "/lab/tree/panel.ipynb")
                page.locator(".jp-OutputArea-output", has_text="autocount on").wait_for(
                    timeout=120_000
                )
                kernel_id = server.api("/api/sessions")[1][0]["kernel"]["id"]
                page.locator('.jp-SideBar [data-id="pagelab-kernels"]').click()
                total = _panel_total(kernel_id)
                page.wait_for_function(
                    f"() => /[0-9]/.test(document.querySelector('{total}')?.textContent ?? '')",
                    timeout=120_000,
                )
                before = _number(page, total)
                page.keyboard.press("Shift+Enter")  # the second cell: touch 256 MiB
                page.wait_for_function(
                    f"""() => {{
                        const t = document.querySelector('{total}')?.textContent ?? '';
                        return Number(t.replace(/[^0-9]/g, '')) >= {before + AT_LEAST};
                    }}""",
                    timeout=180_000,
                )
                after = _number(page, total)
                # the second cell's own line (the first cell's "autocount on" names minflt too)
                line = page.locator(".jp-OutputArea-output", has_text=AUTOCOUNT_LINE).last
                line.wait_for(timeout=120_000)
                cell_text = line.inner_text()
                status = page.locator('[data-pagelab="kernel-status"]').inner_text()
                source = page.inner_text(
                    f'[data-kernel="{kernel_id}"] [data-counter="page-faults"] .pl-source'
                )
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                shot = ARTIFACTS / "kernel-panel-lab.png"
                page.screenshot(path=str(shot))
                print(f"screenshot: {shot}; panel page-faults {before:,} -> {after:,}")
                print(f"cell line: {cell_text.strip()}; status bar: {status}")
            except Exception:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "failed-kernel-panel.png"))
                raise
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert after - before >= AT_LEAST
    assert source in ("sw", "rusage")
    m = AUTOCOUNT_LINE.search(cell_text)
    assert m and int(m.group(1).replace(",", "")) >= AT_LEAST, cell_text
    assert "RSS" in status and "MiB" in status


@pytest.mark.slow
def test_kernel_panel_opens_in_notebook_7():
    """In Notebook 7 the kernel panel opens from View > Left Sidebar and shows the notebook's
    kernel with a page-faults total and its source (Notebook 7 has no status bar)."""
    why = missing_browser()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no browser: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    root = Path(tempfile.mkdtemp(prefix="pagelab-browser-panel-nb7-"))
    write_cells(root / "panel.ipynb", ["x = 1"])
    server = Server("notebook", root)
    try:
        with sync_playwright() as pw:
            try:
                context = launch(pw, root / ".chromium")
            except Exception as e:
                if os.environ.get("CI") == "true":
                    raise
                pytest.skip(f"chromium did not start here: {str(e).splitlines()[0]}")
            page = context.new_page()
            try:
                run_first_cell(page, server, "/notebooks/panel.ipynb")
                kernel_id = server.api("/api/sessions")[1][0]["kernel"]["id"]
                page.get_by_text("View", exact=True).first.click()
                page.locator(".lm-Menu-itemLabel", has_text="Left Sidebar").first.hover()
                page.locator(".lm-Menu-itemLabel", has_text="pagelab").first.click()
                total = _panel_total(kernel_id)
                page.wait_for_function(
                    f"() => /[0-9]/.test(document.querySelector('{total}')?.textContent ?? '')",
                    timeout=120_000,
                )
                source = page.inner_text(
                    f'[data-kernel="{kernel_id}"] [data-counter="page-faults"] .pl-source'
                )
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "kernel-panel-notebook.png"))
            except Exception:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / "failed-kernel-panel-notebook.png"))
                raise
            finally:
                context.close()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert source in ("sw", "rusage")
