"""%%c's answer as text: measured and simulated readings of one region side by side."""

from pagelab import Reading
from pagelab._cell import CellResult


def test_side_by_side_labels_every_value_and_lists_what_perf_could_not_count():
    """Each row shows the measured value with its source (or its rusage stand-in) beside the
    simulated one; events perf could not count are listed with their reason."""
    pf = Reading("page-faults", None, "sw", reason="denied by a seccomp filter: EACCES")
    pf.fallback = Reading("minflt+majflt", 12, "rusage")
    measured = [
        pf,
        Reading("L1-dcache-load-misses", None, "hw", reason="no PMU: ENOENT"),
        Reading("elapsed", 0.25, "clock", "s"),
        Reading("nvcsw", 3, "rusage"),  # not one of the rusage rows shown
    ]
    simulated = [
        Reading("L1-dcache-load-misses", 997, "sim"),
        Reading("L1-dcache-loads", 1000, "sim"),
        Reading("L1-dcache-stores", 0, "sim"),  # zero stores: not worth a row
    ]
    text = str(CellResult("region", measured, simulated, status=0))
    lines = text.splitlines()
    assert lines[0] == "PL_REGION_BEGIN..END, compiled -O2; main() returned 0"
    row = {l.split()[0]: l for l in lines[2:] if l.startswith("  ") and len(l.split()) > 1}
    assert row["page-faults"].split()[1:] == ["12", "(rusage:", "minflt+majflt)"]
    assert row["L1-dcache-load-misses"].split()[1:] == ["n/a", "997", "(sim)"]
    assert row["L1-dcache-loads"].split()[1:] == ["-", "1,000", "(sim)"]
    assert row["elapsed"].split()[1:] == ["0.250000", "s", "(clock)"]
    assert "nvcsw" not in row and "L1-dcache-stores" not in row
    assert "not counted here: denied by a seccomp filter: EACCES (page-faults)" in text
    assert "not counted here: no PMU: ENOENT (L1-dcache-load-misses)" in text


def test_no_simulation_says_why():
    """Without a simulated answer the column says why, never a silent blank."""
    r = CellResult("main()", [Reading("elapsed", 1.0, "clock", "s")])
    r.simulated_reason = "the simulated C cell crashed with SIGSEGV"
    text = str(r)
    assert text.startswith("all of main(), compiled -O2")
    assert "simulated: the simulated C cell crashed with SIGSEGV" in text
