"""%%c's answer as text: measured and simulated readings of one region side by side."""

from pagelab import Reading
from pagelab.cell.result import CellResult


def test_side_by_side_labels_every_value_and_lists_what_perf_could_not_count():
    """Each row shows the measured value with its source (or its rusage stand-in) beside the
    simulated one, under the lines naming both builds; events perf could not count are listed
    with their reason."""
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
    builds = ["compiler: cc (x)", "measured build: -O2", "simulated build: -O2 -fsanitize=thread"]
    text = str(CellResult("region", measured, simulated, status=0, builds=builds))
    lines = text.splitlines()
    assert lines[0] == "PL_REGION_BEGIN..END, compiled -O2; main() returned 0"
    assert lines[1:4] == [f"  {b}" for b in builds]  # the header names both builds
    row = {l.split()[0]: l for l in lines[5:] if l.startswith("  ") and len(l.split()) > 1}
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


FLOOD_AND_FILE = r"""
#include <stdio.h>
#include <string.h>

int main(void)
{
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    FILE *f = fopen("big.bin", "wb");
    size_t wrote = 0;
    for (int i = 0; f && i < 4; i++)
        wrote += fwrite(block, 1, sizeof block, f);
    int closed = f ? fclose(f) : -1;
    fprintf(stderr, "file: %zu bytes, fclose %d\n", wrote, closed);
    for (int i = 0; i < 3 * 1024; i++)
        printf("%1023d\n", i);
    return closed == 0 && wrote == 4u << 20 ? 0 : 1;
}
"""


def test_output_is_capped_but_files_the_cell_writes_are_not(tmp_path, monkeypatch):
    """A cell's printf output is kept up to OUTPUT_LIMIT and the cut is noted (3 MiB printed, the
    worker survives), while a 4 MiB file the cell writes itself (in the working directory, as a
    notebook's would be) is written whole (main gives 0)."""
    from pagelab.cell.execute import OUTPUT_LIMIT
    from pagelab.cell.run import run_c

    monkeypatch.chdir(tmp_path)
    r = run_c(FLOOD_AND_FILE, sim=False)
    assert (tmp_path / "big.bin").stat().st_size == 4 << 20
    assert r.status == 0, r
    assert len(r.stdout.encode()) == OUTPUT_LIMIT
    assert r.stdout.startswith(" " * 1022 + "0\n")
    assert f"the cell's output was cut at {OUTPUT_LIMIT >> 10} KiB" in r.notes


def test_a_refused_simulator_configuration_keeps_the_measured_run(monkeypatch):
    """A configuration the simulator refuses is checked in the parent before any worker starts:
    the measured run still happens and stands, and the simulated column says why it is empty;
    simulate_c, which has nothing else to give, raises the same BadInput before building."""
    import pytest

    from pagelab import BadInput
    from pagelab.cell import run as cell_run

    started = []
    call = cell_run._worker.call
    monkeypatch.setattr(
        cell_run._worker,
        "call",
        lambda target, *a, **k: started.append(target) or call(target, *a, **k),
    )
    bad = {"l1": "32K:8:48"}  # a line that is not a power of two
    with pytest.raises(BadInput, match="line") as refused:
        cell_run.simulate_c("int main(void) { return 0; }", config=bad)
    assert started == []
    r = cell_run.run_c("int main(void) { return 3; }", config=bad)
    assert r.status == 3 and r.measured and r.simulated == []
    assert r.simulated_reason == f"not run: {refused.value}"
    assert f"simulated: not run: {refused.value}" in str(r)
    assert "pagelab.cell.execute:execute" in started and len(started) <= 2  # build, measured
