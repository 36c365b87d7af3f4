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
