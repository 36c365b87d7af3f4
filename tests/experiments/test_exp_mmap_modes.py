"""mmap-modes: faults and disk blocks of anonymous, private and shared mappings, for real."""

import json
import os
import resource

import pytest

import pagelab
from helpers import run, run_blocked
from pagelab import BadInput, BudgetExceeded
from pagelab.experiments import mmap_modes as exp
from pagelab.native.scratch import ENV, MEMORY_FS, choose, filesystem_type

SIZE_MB = 8
PAGES = SIZE_MB * 256
BLOCKS = SIZE_MB * 2048  # 512-byte blocks in the file


def _block_backed_tmp():
    s = choose(SIZE_MB << 20, "mmap-modes")
    if not s.disk_backed:
        pytest.skip(f"no block-backed scratch directory here (only {s.fs_type} at {s.path})")
    return s.path


@pytest.fixture(scope="module")
def result():
    _block_backed_tmp()
    return pagelab.run("mmap-modes", size_mb=SIZE_MB, progress=None)


def test_every_claim_holds_on_a_disk_backed_file(result):
    """With the file on a real block device, every mmap-modes claim holds here."""
    for c in result.claims:
        assert c.holds is True, str(c)


def test_every_phase_of_every_variant_is_measured_with_sources(result):
    """24 regions (6 variants x 4 phases); each reading is labelled with its source."""
    for v in exp.VARIANTS:
        for ph in exp.PHASES:
            m = result[f"{v}: {ph}"]
            for name in ("minflt", "majflt", "inblock", "oublock", "faults"):
                assert m[name].source == "rusage"
            assert m["ms"].source == "clock" and m["ms"].value >= 0
            pf = m["page-faults"]
            assert pf.source == "sw" and (pf.available or pf.fallback.source == "rusage")
    for v in ("private", "private+populate", "shared", "shared+populate"):
        assert result[f"{v}: mmap"]["cached_before"].value == 0  # the cache really was dropped


def test_the_numbers_behind_the_claims_are_physical(result):
    """Shared writes are charged exactly one block per 512 bytes written, in the write pass;
    private and anonymous ones none; an uncached file is read in exactly once."""

    def near(value, expected):  # exact physics, plus a little for metadata or stray faults
        return expected <= value <= expected * 1.01 + 16

    for v in ("shared", "shared+populate"):
        assert near(result[f"{v}: write"]["oublock"].value, BLOCKS)
        assert result[f"{v}: msync"]["ms"].value > result["private: msync"]["ms"].value
    for v in ("anon", "anon+populate", "private", "private+populate"):
        assert sum(result[f"{v}: {ph}"]["oublock"].value for ph in exp.PHASES) == 0
    for v in ("private", "private+populate", "shared", "shared+populate"):
        assert near(sum(result[f"{v}: {ph}"]["inblock"].value for ph in exp.PHASES), BLOCKS)
    assert near(result["anon+populate: mmap"]["minflt"].value, PAGES)
    assert near(result["shared+populate: write"]["minflt"].value, PAGES)


def test_figure_has_four_panels_by_phase(result):
    """The figure shows faults, blocks in, blocks out and time, one bar per phase."""
    fig = result.figure()
    assert [a.text for a in fig.layout.annotations][:4] == [
        "page faults (rusage)",
        "blocks read (inblock)",
        "blocks written (oublock)",
        "time (ms, clock)",
    ]
    assert {t.name for t in fig.data} == set(exp.PHASES)


def test_rusage_blocks_are_512_bytes_here(tmp_path):
    """getrusage's oublock counts 512-byte units: writing and syncing 1 MiB costs 2048 more."""
    if filesystem_type(tmp_path) in MEMORY_FS:
        pytest.skip(f"{tmp_path} is on a memory filesystem: nothing is written back")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_oublock
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"x" * (1 << 20))
        os.fsync(fd)
    finally:
        os.close(fd)
    written = resource.getrusage(resource.RUSAGE_SELF).ru_oublock - before
    assert (1 << 20) // exp.BLOCK <= written < 2 * (1 << 20) // exp.BLOCK  # + a little metadata


def test_nothing_is_left_in_the_scratch_directory(tmp_path, pagelab_cmd):
    """The file is an unnamed O_TMPFILE: the directory it was made in stays empty."""
    if filesystem_type(tmp_path) in MEMORY_FS:
        pytest.skip(f"{tmp_path} is on a memory filesystem")
    p = run(
        [*pagelab_cmd, "run", "mmap-modes", "--set", "size_mb=1", "--json"],
        env={**os.environ, ENV: str(tmp_path)},
    )
    assert p.returncode == 0, p.stderr
    assert str(tmp_path) in " ".join(json.loads(p.stdout)["notes"])
    assert list(tmp_path.iterdir()) == []


def test_memory_filesystem_marks_disk_claims_not_evaluated(pagelab_cmd):
    """On tmpfs there is no writeback: the disk claims say so; the populate claim still holds."""
    if filesystem_type("/dev/shm") != "tmpfs" or not os.access("/dev/shm", os.W_OK):
        pytest.skip("/dev/shm is not a writable tmpfs here")
    p = run(
        [*pagelab_cmd, "run", "mmap-modes", "--set", "size_mb=2", "--json"],
        env={**os.environ, ENV: "/dev/shm"},
    )
    assert p.returncode == 0, p.stderr
    claims = {c["id"]: c for c in json.loads(p.stdout)["claims"]}
    assert claims.pop("populate-moves-faults")["holds"] is True
    for c in claims.values():
        assert c["holds"] is None and "tmpfs" in c["reason"], c


def test_blocked_profile_falls_back_to_rusage(tools_dir, pagelab_cmd):
    """Without perf_event_open, page-faults says why and rusage stands in, labelled; every
    claim is still evaluated."""
    _block_backed_tmp()
    doc = run_blocked(tools_dir, pagelab_cmd, "mmap-modes", size_mb=SIZE_MB)
    assert all(c["holds"] is True for c in doc["claims"]), doc["claims"]
    write = next(m for m in doc["measurements"] if m["label"] == "anon: write")["metrics"]
    pf = write["page-faults"]
    assert pf["value"] is None and "seccomp" in pf["reason"]
    assert pf["fallback"]["source"] == "rusage" and pf["fallback"]["value"] >= PAGES


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"size_mb": 0}, BadInput, "size_mb must be in 1..65536"),
        ({"stride_pages": 0}, BadInput, "stride_pages must be in 1..4096"),
        ({"size": 8}, BadInput, "did you mean size_mb"),
        ({"size_mb": 65536}, BudgetExceeded, "memory budget"),
    ],
)
def test_bad_input_is_rejected_before_anything_runs(params, error, message):
    """Bad or over-budget parameters raise one clear error before any worker starts."""
    with pytest.raises(error, match=message):
        pagelab.run("mmap-modes", progress=None, **params)
