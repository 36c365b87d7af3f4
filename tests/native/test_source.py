"""pagelab.source shows the real C; sample_trace ships a trace for machines without valgrind."""

import pytest

import pagelab
from helpers import ROOT


def test_a_function_comes_with_its_comment_and_whole_body():
    """source(file, name) returns the definition from the file itself, comment included."""
    s = pagelab.source("workloads/mountain.c", "mtn_pass")
    text = (ROOT / "csrc/workloads/mountain.c").read_text()
    assert s.text in text and s.text.startswith("/* The hot loop")
    assert s.text.rstrip().endswith("}") and "return s0 + s1 + s2 + s3;" in s.text
    assert text.splitlines()[s.first_line - 1] == s.text.splitlines()[0]
    assert "```c" in s._repr_markdown_() and "csrc/workloads/mountain.c" in s._repr_markdown_()


def test_macros_and_whole_files():
    """A multi-line #define is shown whole; no name gives the whole file."""
    fmt = pagelab.source("perf/counters.c", "READ_FORMAT").text
    assert fmt.startswith("#define READ_FORMAT") and "PERF_FORMAT_TOTAL_TIME_RUNNING)" in fmt
    assert pagelab.source("perf/counters.c").text == (
        ROOT / "csrc/perf/counters.c"
    ).read_text().rstrip("\n")


def test_prototypes_are_not_definitions():
    """A name that is only declared in a file is not found there."""
    with pytest.raises(pagelab.BadInput, match="defines no function"):
        pagelab.source("sim/pl_reclaim.h", "pl_reclaim_run")


@pytest.mark.parametrize("path", ["../pyproject.toml", "/etc/passwd", "nothere.c", "Makefile"])
def test_only_c_files_under_csrc(path):
    """Paths outside csrc/, missing files and non-C files are BadInput."""
    with pytest.raises(pagelab.BadInput):
        pagelab.source(path)


def test_the_shipped_trace_replays():
    """The shipped lackey trace is a valid trace with data records of the program it names."""
    info = pagelab.scan_trace(pagelab.sample_trace())
    assert info.loads > 10_000 and info.stores > 10_000 and info.instructions == 0
    assert len(pagelab.page_string(pagelab.sample_trace())) > 1000
    assert "#define INDEX" in pagelab.sample_program().read_text()
