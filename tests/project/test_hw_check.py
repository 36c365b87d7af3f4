"""`make hw-check` (bench/hw_check.py): a report with every section, on any machine, without
Jupyter."""

import importlib.util
import os
import sys

import pytest

from helpers import ROOT, run
from pagelab.machine import pmus

SCRIPT = ROOT / "bench" / "hw_check.py"
# What the check must run without: the lab's packages (a venv of cffi alone, and one carried to
# a machine without a network, has none of them).
BLOCKED = ("IPython", "ipywidgets", "anywidget", "jupyter_client", "jupyterlab", "plotly", "numpy")
BLOCKER = f"""import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"hw-check must not need {{name}}")

sys.meta_path.insert(0, _Blocked())
"""


@pytest.fixture(scope="module")
def hw_check():
    spec = importlib.util.spec_from_file_location("hw_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One --fast run with the lab's packages blocked: (its exit status, the report's text)."""
    d = tmp_path_factory.mktemp("hw-check")
    (d / "sitecustomize.py").write_text(BLOCKER)
    out = d / "report.md"
    p = run(
        [sys.executable, str(SCRIPT), "--fast", "--report", str(out)],
        env={**os.environ, "PYTHONPATH": str(d)},
        timeout=170,
    )
    assert p.returncode in (0, 1), p.stderr  # 1: a comparison disagreed on this machine
    text = out.read_text()
    assert p.stdout.strip() == text.strip()
    return p.returncode, text


def test_report_has_every_section_in_order(report, hw_check):
    """The report names the machine and holds every check's section, in order, and a verdict."""
    _, text = report
    at = [text.find(f"\n{s}\n") for s in (*hw_check.SECTIONS, "## Verdict")]
    assert -1 not in at and at == sorted(at), text
    for fact in ("- CPU: ", "- kernel: ", "- perf_event_paranoid: ", "- perf: "):
        assert fact in text


def test_verdict_matches_exit_status(report):
    """The exit status is 1 exactly when the verdict names a disagreement."""
    status, text = report
    verdict = text.split("\n## Verdict\n", 1)[1]
    assert ("FAILED" in verdict) == (status == 1)


def test_no_pmu_is_said_and_its_checks_skipped(report):
    """Without a core PMU the report says so and lists the hardware checks it skipped."""
    if pmus.core():
        pytest.skip("this machine has a hardware PMU: the check ran in full")
    _, text = report
    assert "**No hardware PMU was found**" in text
    skipped = text.split("\n## Skipped\n", 1)[1].split("\n## ", 1)[0]
    for check in ("pagelab stat against perf stat", "run cache", "rdpmc against read()"):
        assert f"- {check}" in skipped, skipped


def test_perf_stat_parts_of_a_hybrid_machine_are_summed(hw_check):
    """perf stat's one line per core PMU (cpu_core/cycles/u) is summed, each part kept, and an
    event no part counted has no total."""
    text = (
        "1234567,,cpu_core/cycles/u,123456,100.00,,\n"
        "234567,,cpu_atom/cycles/u,12345,100.00,,\n"
        "<not counted>,,cpu_atom/instructions/,0,0.00,,\n"
        "5000,,cpu_core/instructions/,0,0.00,,\n"
        "<not supported>,,cache-misses:u,0,100.00,,\n"
        "16432,,page-faults:u,75144768,100.00,,\n"
    )
    assert hw_check.parse_perf_stat(text) == {
        "cycles": (1469134, {"cpu_core": 1234567, "cpu_atom": 234567}),
        "instructions": (5000, {"cpu_atom": None, "cpu_core": 5000}),
        "cache-misses": (None, None),
        "page-faults": (16432, None),
    }
