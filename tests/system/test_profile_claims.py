"""Per profile, which claims are evaluated and hold, which are judged on timing, and which say
"not evaluated" with a reason naming the cause: the contract the chapters' checked cells (the
same text everywhere) and unchecked cells (verdicts with their reasons) rest on."""

import pytest

from helpers import TIMED, json_document, run, run_as_nobody
from pagelab.experiments import common
from pagelab.machine import environment as env
from pagelab.native import scratch as _scratch

# Small but real runs: every experiment, each with its claims complete.
RUNS = {
    "maps": {},
    "cache": {"sets": 512, "sim": True},
    "latency": {},  # max_kb set below: 8x the L1d, so the L1 claims are judged
    "vsyscall": {"calls": 20000, "processes": 2},
    "first-touch": {"size_mb": 16, "threads": 2, "rounds": 3},
    "mmap-modes": {"size_mb": 8},
    "competition": {"size_mb": 8, "competitor_mb": 16, "seconds": 1},
    "thread-stacks": {"calls": 300, "threads": 160},
    "ebizzy": {"buffer_kb": 256, "records": 20, "threads": 2},
}
DISK = {  # need a disk-backed scratch file: on a memory filesystem they say so
    "shared-writes-output-blocks",
    "private-writes-no-output-blocks",
    "shared-write-faults-after-populate",
    "file-reads-from-disk",
    "mincore-shows-eviction",
    "evicted-pages-major-faults",
    "evicted-pages-read-from-disk",
}


def _args(experiment):
    params = dict(RUNS[experiment])
    if experiment == "latency":
        l1d = next((size for name, size in common.caches() if name == "L1d"), 32 << 10)
        params["max_kb"] = 8 * l1d // 1024
    sim = ["--sim"] if params.pop("sim", False) else []
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    return ["run", experiment, "--json", *sim, *sets]


def expected(claim_id, profile):
    """'holds', 'judged', or the word a not-evaluated reason must contain, for this machine."""
    if claim_id.startswith("vsyscall") and env.vsyscall_mode() == "none":
        return "vsyscall=none"
    if claim_id == "vsyscall-fault-per-call":  # perf only: rusage cannot see the trap
        if profile == "blocked":
            return "seccomp"
        if profile == "unprivileged" and env.perf_event_paranoid() > 2:
            return "paranoid"
    if claim_id == "huge-pages-cut-faults" and env.thp_mode() not in ("always", "madvise"):
        return "transparent huge pages"
    if claim_id == "anon-pageout-needs-swap" and env.swap_total():
        return "swap"
    if claim_id == "anon-pageout-swaps" and not env.swap_total():
        return "swap"
    if claim_id in DISK and not _scratch.choose(8 << 20, "mmap-modes").disk_backed:
        return "tmpfs"
    if claim_id.startswith("latency-knee-"):  # 8x L1d brackets the L1d only
        reported = {f"latency-knee-{name.lower()}" for name, _ in common.caches()}
        if claim_id not in reported:
            return "reports no"
        return "judged" if claim_id == "latency-knee-l1d" else "does not reach"
    return "judged" if claim_id in TIMED else "holds"


def _check(profile, docs):
    for doc in docs:
        assert (doc["environment"]["profile"] == "blocked") == (profile == "blocked")
        for c in doc["claims"]:
            want = expected(c["id"], profile)
            where = f"{profile}: {doc['experiment']}: {c}"
            if want == "holds":
                assert c["holds"] is True and c["evidence"], where
            elif want == "judged":
                assert c["holds"] is not None and c["evidence"], where
            else:
                assert c["holds"] is None and want in c["reason"], where


@pytest.mark.slow
def test_claims_as_root(pagelab_cmd):
    """This run's own profile (software-only here, full with a PMU): every claim is evaluated;
    all but the timing verdicts hold."""
    docs = []
    for experiment in RUNS:
        p = run([*pagelab_cmd, *_args(experiment)], timeout=300)
        assert p.returncode == 0, p.stderr
        docs.append(json_document(p.stdout, "result"))
    _check("root", docs)


@pytest.mark.slow
def test_claims_blocked(tools_dir, pagelab_cmd):
    """Blocked (perf_event_open denied by seccomp): the perf-only fault count says seccomp
    stopped it; everything else is evaluated from rusage and the clock, and holds."""
    docs = []
    for experiment in RUNS:
        p = run([str(tools_dir / "pl-noperf"), *pagelab_cmd, *_args(experiment)], timeout=300)
        assert p.returncode == 0, p.stderr
        docs.append(json_document(p.stdout, "result"))
    _check("blocked", docs)


@pytest.mark.slow
def test_claims_unprivileged(nobody_python):
    """Unprivileged (uid nobody, perf_event_paranoid applies): software events count user-space
    faults, so every claim is evaluated as for root (at paranoid 3 the fault count says why)."""
    python, home = nobody_python
    docs = []
    for experiment in RUNS:
        p = run_as_nobody(python, home, ["-m", "pagelab", *_args(experiment)], timeout=300)
        assert p.returncode == 0, p.stderr
        docs.append(json_document(p.stdout, "result"))
    _check("unprivileged", docs)
