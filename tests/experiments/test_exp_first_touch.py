"""first-touch: one fault per page on first touch, none on the second, and the ways around it."""

import os

import pytest

import pagelab
from helpers import run_blocked

SMALL = {"size_mb": 16, "threads": 2, "rounds": 3}
PAGES = (SMALL["size_mb"] << 20) // os.sysconf("SC_PAGESIZE")  # the kernel's page, not 4 KiB


@pytest.fixture(scope="module")
def result():
    return pagelab.run("first-touch", progress=None, **SMALL)


def test_every_claim_holds_here(result):
    """On this machine every first-touch claim is evaluated and holds."""
    if result.environment["thp"] not in ("always", "madvise"):
        pytest.skip("THP is off here: the huge-page claim cannot be evaluated")
    assert [c.holds for c in result.claims] == [True] * len(result.claims), str(result)


def test_fault_counts_match_the_pages_touched(result):
    """16 MiB is PAGES pages (4096 of 4 KiB): first touch counts ~PAGES faults, the second ~0."""
    first, second = result["first touch"], result["second touch"]
    assert PAGES <= first["page-faults"].best <= PAGES * 1.05
    assert second["page-faults"].best <= 4
    assert first["faults_per_page"].source in ("sw", "rusage")


def test_populate_faults_are_seen_by_rusage_not_perf(result):
    """MAP_POPULATE faults happen inside mmap: rusage counts them, perf's event does not."""
    m = result["populate: mmap"]
    if not m["page-faults"].available:
        pytest.skip("perf page-faults unavailable here")
    assert m["minflt"].value >= PAGES and m["page-faults"].value < 64


def test_threads_split_the_faults(result):
    """With 2 threads each takes about half of the faults, counted per thread by rusage."""
    m = result["threads=2"]
    assert m["thread0 minflt"].source == "rusage"
    assert abs(m["thread0 minflt"].value - 2048) <= 64
    assert abs(m["thread1 minflt"].value - 2048) <= 64


def test_figure_labels_its_sources(result):
    """The figure's bars carry their source in the hover data."""
    fig = result.figure()
    sources = {s for trace in fig.data for s in trace.customdata}
    assert sources <= {"sw", "rusage", "clock", "not available"} and sources & {"sw", "rusage"}


def test_blocked_profile_uses_rusage(tools_dir, pagelab_cmd):
    """Under the seccomp launcher the claims are evaluated from rusage, labelled as such."""
    doc = run_blocked(tools_dir, pagelab_cmd, "first-touch", size_mb=8, threads=2)
    first = next(m for m in doc["measurements"] if m["label"] == "first touch")["metrics"]
    assert first["page-faults"]["value"] is None and "seccomp" in first["page-faults"]["reason"]
    assert first["faults_per_page"]["source"] == "rusage"
    claim = next(c for c in doc["claims"] if c["id"] == "first-touch-fault-per-page")
    assert claim["holds"] is True and "rusage" in claim["evidence"]


def test_figure_shows_zero_bars(result):
    """The fault bars sit on linear axes and are labelled with their values, so a zero (the
    second touch) is drawn and read as a zero, never hidden by a log axis."""
    fig = result.figure()
    assert all(axis.type != "log" for axis in (fig.layout.yaxis, fig.layout.yaxis2))
    faults = fig.data[0]
    i = list(faults.x).index("second touch")
    assert faults.y[i] == 0 and faults.text[i].startswith("0 (")
