"""`pagelab stat`: a child command counted from its exec, checked against perf stat."""

import re
import shutil

import pytest

from helpers import json_document, run
from pagelab.counters.doctor import profile

MIB = 64
PAGES = MIB << 8  # 4 KiB pages in 64 MiB


@pytest.fixture(scope="module")
def sw_events():
    if profile() == "blocked":
        pytest.skip("perf_event_open is blocked here; test_profiles covers the blocked case")


def test_stat_counts_first_touch_faults_like_perf(sw_events, tools_dir, pagelab_cmd):
    """64 MiB touched once with THP off: >= 16384 faults, within 3% of perf stat's count."""
    touch = str(tools_dir / "pl-touch")
    p = run(pagelab_cmd + ["stat", "-e", "page-faults", "--json", "--", touch, str(MIB)])
    assert p.returncode == 0, p.stderr
    doc = json_document(p.stdout, "stat")
    pf = doc["measurements"][0]["metrics"]["page-faults"]
    assert pf["source"] == "sw" and pf["value"] >= PAGES
    if shutil.which("perf") is None:
        pytest.skip("perf (linux-perf) is not installed: cannot compare with perf stat")
    q = run(["perf", "stat", "-x,", "-e", "page-faults", "--", touch, str(MIB)])
    m = re.search(r"^(\d+),,page-faults", q.stderr, re.M)
    assert m, q.stderr
    assert abs(pf["value"] - int(m.group(1))) <= 0.03 * int(m.group(1))


def test_stat_json_contract(sw_events, pagelab_cmd):
    """--json prints one document with params, environment, labelled metrics and the exit status."""
    p = run(pagelab_cmd + ["stat", "--json", "--", "sh", "-c", "echo hi; exit 3"])
    assert p.returncode == 3
    doc = json_document(p.stdout, "stat")  # the command's own output went to stderr
    assert "hi" in p.stderr
    assert doc["exit_status"] == 3
    assert doc["params"]["command"] == ["sh", "-c", "echo hi; exit 3"]
    assert doc["environment"]["profile"] in ("full", "software-only", "blocked")
    metrics = doc["measurements"][0]["metrics"]
    assert {m["source"] for m in metrics.values()} <= {"hw", "sw", "rusage", "clock"}
    assert metrics["elapsed"]["source"] == "clock"
    assert metrics["minflt"]["source"] == "rusage"
    for name, m in metrics.items():
        assert m["value"] is not None or m["reason"], name


def test_stat_human_output_labels_every_line(sw_events, pagelab_cmd):
    """The perf-stat-like table names a source or a reason on every counter line."""
    p = run(pagelab_cmd + ["stat", "-e", "page-faults,cycles", "--", "true"])
    assert p.returncode == 0
    pf_line = next(l for l in p.stderr.splitlines() if " page-faults " in l)
    assert pf_line.rstrip().endswith("sw")
    cyc_line = next(l for l in p.stderr.splitlines() if " cycles " in l)
    assert cyc_line.rstrip().endswith("hw") or "<not available>" in cyc_line


def test_stat_counts_threads_and_children(sw_events, tools_dir, pagelab_cmd):
    """Counting is inherited: faults of a grandchild process are included."""
    touch = str(tools_dir / "pl-touch")
    p = run(pagelab_cmd + ["stat", "-e", "page-faults", "--json", "--", "sh", "-c", f"{touch} 16"])
    doc = json_document(p.stdout, "stat")
    assert doc["measurements"][0]["metrics"]["page-faults"]["value"] >= 16 << 8
