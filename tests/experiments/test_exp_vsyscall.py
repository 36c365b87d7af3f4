"""vsyscall: the trapped legacy page is slow and costs one perf page fault per call."""

import pytest

import pagelab
from helpers import run_blocked
from pagelab.machine import environment as env


@pytest.fixture(scope="module")
def result():
    if env.vsyscall_mode() == "none":
        pytest.skip("this kernel has vsyscall=none: there is no page to call")
    return pagelab.run("vsyscall", progress=None, calls=20000, processes=3)


def test_claims_hold_here(result):
    """vsyscall is >= 20x slower than the vDSO (a trap and an emulation against a few loads:
    100x and more on any machine, compared fastest process to fastest), one perf fault per
    call, rusage minflt flat."""
    assert {c.id: c.holds for c in result.claims} == {
        "vsyscall-much-slower": True,
        "vsyscall-fault-per-call": True,
        "vsyscall-minflt-flat": True,
    }, str(result)


def test_statistics_come_from_several_processes(result):
    """ns per call is a mean over the worker processes, with its spread and its fastest,
    labelled clock; the fastest vDSO call beats the fastest system call (no kernel entry: tens
    of times cheaper, which no preemption of all three processes at once could hide)."""
    for label in ("vdso", "syscall", "vsyscall"):
        m = result[label]
        assert m["processes"].value == 3
        assert m["ns_per_call"].source == "clock" and m["ns_per_call"].value > 0
        assert m["ns_per_call_stdev"].value >= 0
        assert 0 < m["ns_per_call_min"].value <= m["ns_per_call"].value
    assert result["vdso"]["ns_per_call_min"].value < result["syscall"]["ns_per_call_min"].value


def test_only_the_vsyscall_path_faults(result):
    """The vDSO and syscall loops take ~no page faults; the vsyscall loop ~one per call."""
    assert result["vdso"]["faults_per_call"].value < 0.01
    assert result["syscall"]["faults_per_call"].value < 0.01
    assert result["vsyscall"]["faults_per_call"].value > 0.9


def test_verdicts_are_deterministic_text(result):
    """Verdict lines are holds/fails plus the claim text: another run prints the same lines."""
    lines = result.verdicts().splitlines()
    assert len(lines) == 3 and all(
        l.startswith(("holds: ", "fails: ", "not evaluated: ")) for l in lines
    )
    again = pagelab.run("vsyscall", progress=None, calls=2000, processes=1)
    assert again.verdicts() == result.verdicts()
    assert all(c.evidence not in c.verdict for c in result.claims)


def test_blocked_profile_marks_the_perf_claim_not_evaluated(tools_dir, pagelab_cmd):
    """Without perf_event_open the fault-per-call claim says why; the others still hold."""
    if env.vsyscall_mode() == "none":
        pytest.skip("this kernel has vsyscall=none")
    doc = run_blocked(tools_dir, pagelab_cmd, "vsyscall", calls=20000, processes=2)
    claims = {c["id"]: c for c in doc["claims"]}
    assert claims["vsyscall-fault-per-call"]["holds"] is None
    assert "seccomp" in claims["vsyscall-fault-per-call"]["reason"]
    assert claims["vsyscall-much-slower"]["holds"] is True
    assert claims["vsyscall-minflt-flat"]["holds"] is True
