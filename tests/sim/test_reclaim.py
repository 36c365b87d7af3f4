"""The page-reclaim model: policies on reference strings whose answers are known."""

import itertools

import numpy as np
import pytest

import pagelab
from helpers import run

BELADY = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5]


def faults(refs, frames, policy):
    return pagelab.reclaim(refs, frames, policy).faults


def test_fifo_shows_beladys_anomaly():
    """Belady's string: FIFO takes 9 faults with 3 frames, 10 with 4 (more frames, more faults)."""
    assert [faults(BELADY, k, "fifo") for k in (3, 4)] == [9, 10]


def test_lru_and_opt_on_beladys_string():
    """LRU: 10 then 8 faults; OPT, the lower bound: 7 then 6 (the textbook answers)."""
    assert [faults(BELADY, k, "lru") for k in (3, 4)] == [10, 8]
    assert [faults(BELADY, k, "opt") for k in (3, 4)] == [7, 6]


def test_lru_has_the_stack_property():
    """LRU never faults more with more frames, and OPT never more than any policy."""
    rng = np.random.default_rng(7)
    refs = np.concatenate([rng.integers(0, 40, 3000), rng.zipf(1.3, 3000) % 60])
    lru = [faults(refs, k, "lru") for k in range(1, 61)]
    assert all(a >= b for a, b in itertools.pairwise(lru))
    for k in (5, 20, 40):
        best = faults(refs, k, "opt")
        assert all(best <= faults(refs, k, p) for p in pagelab.RECLAIM_POLICIES)


def test_every_policy_takes_only_compulsory_faults_when_all_pages_fit():
    """With a frame per distinct page each policy faults once per page and evicts nothing."""
    refs = [5, 9, 5, 100, 9, 5, 7, 100]
    for policy in pagelab.RECLAIM_POLICIES:
        r = pagelab.reclaim(refs, 4, policy)
        assert (r.faults, r.evictions, r.pages, r.source) == (4, 0, 4, "sim"), r


def test_kernel_lists_protect_a_hot_set_from_a_scan_and_never_activate_does_not():
    """A hot set re-used between pages of a one-pass scan: the kernel's lists activate the hot
    pages and keep them; with PAGEREF_ACTIVATE turned into RECLAIM they keep faulting, like FIFO."""
    hot = list(range(8))
    refs = []
    for i in range(2000):
        refs += hot if i % 4 == 0 else []
        refs.append(1000 + i)  # each scanned page once
    kernel = pagelab.reclaim(refs, 24, "kernel")
    changed = pagelab.reclaim(refs, 24, "never-activate")
    assert kernel.activations > 0 and changed.activations == 0
    assert kernel.faults <= 2000 + 8 + 8  # the scan, the hot set once, a little slack
    assert changed.faults >= kernel.faults + 500  # the hot set refaults, round after round
    assert faults(refs, 24, "lru") <= changed.faults


def test_an_empty_string_takes_no_faults():
    """No references: no faults under any policy, and the result still prints."""
    for policy in pagelab.RECLAIM_POLICIES:
        r = pagelab.reclaim([], 4, policy)
        assert (r.faults, r.pages) == (0, 0) and "0 faults" in str(r)


def test_bad_input_is_one_clear_error():
    """Unknown policies, bad frame counts and non-integer strings are BadInput."""
    with pytest.raises(pagelab.BadInput, match="unknown policy"):
        pagelab.reclaim([1], 1, "random")
    for frames in (0, -1, 1.5, True):
        with pytest.raises(pagelab.BadInput, match="frames"):
            pagelab.reclaim([1], frames)
    for refs in ([1.5, 2.0], [[1, 2]], [-1], "abc"):
        with pytest.raises(pagelab.BadInput):
            pagelab.reclaim(refs, 2)


def test_page_string_merges_repeats_and_splits_straddling_accesses(tmp_path):
    """A lackey trace becomes page numbers in order: repeats merged, a straddling access counts
    for both pages, instruction records ignored."""
    trace = tmp_path / "t.trace"
    trace.write_text(
        "I  00400000,4\n L 00001000,8\n S 00001008,8\n M 00002ffc,8\n L 00003000,4\n L 00001000,8\n"
    )
    assert pagelab.page_string(trace).tolist() == [1, 2, 3, 1]
    with pytest.raises(pagelab.BadInput, match="power of two"):
        pagelab.page_string(trace, page_size=3000)


def test_page_string_of_a_real_program(tmp_path):
    """valgrind lackey on a real C program gives a string whose faults the model can count."""
    if run(["sh", "-c", "command -v valgrind"]).returncode:
        pytest.skip("valgrind is not installed (make setup installs it when run as root)")
    src = tmp_path / "p.c"
    src.write_text(
        "#include <stdlib.h>\nint main(void){char*p=malloc(1<<20);for(int i=0;i<1<<20;i+=4096)"
        "p[i]=1;return p[4096];}\n"
    )
    assert run(["cc", "-O1", "-o", str(tmp_path / "p"), str(src)]).returncode == 0
    trace = tmp_path / "p.trace"
    p = run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(tmp_path / "p")]
    )
    assert p.returncode == 1, p.stderr  # main returns p[4096], which is 1
    pages = pagelab.page_string(trace)
    r = pagelab.reclaim(pages, 16, "lru")
    assert r.pages >= 256  # the 1 MiB buffer alone is 256 pages
    assert r.faults >= r.pages
