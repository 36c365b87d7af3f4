"""thread-stacks: the MAP_32BIT window, the failing call and the 2003 retry, thread stacks."""

import errno
import gc
import os
import platform
import resource
import subprocess

import pytest

import pagelab
from helpers import run, run_blocked
from pagelab.core.errors import BadInput
from pagelab.core.reading import Reading
from pagelab.experiments import thread_stacks as ts
from pagelab.experiments.runner import Context
from pagelab.native.workloads import validate
from pagelab.results.result import Measured

GIB, MIB = 1 << 30, 1 << 20
# small but complete: 160 threads of 8 MiB fill the window (~100 fit) with >= 16 creates to spare
SMALL = {"calls": 300, "threads": 160}
X86 = platform.machine() == "x86_64"
needs_x86 = pytest.mark.skipif(
    not X86, reason=f"MAP_32BIT exists only on x86-64, this is {platform.machine()}"
)


def _context(params, timeout, environment):
    """A Context for calling ts.run directly: no simulated run, address_space 0 (the worker's
    RLIMIT_AS is then its own size plus the slack)."""
    return Context(
        "thread-stacks",
        params,
        given=params,
        budget={"bytes": None},
        sim=None,
        timeout=timeout,
        progress=None,
        address_space=0,
        module=ts,
        environment=environment,
    )


@pytest.fixture(scope="module")
def result():
    if not X86:
        pytest.skip(f"MAP_32BIT exists only on x86-64, this is {platform.machine()}")
    return pagelab.run("thread-stacks", progress=None, **SMALL)


@needs_x86
def test_every_claim_holds_here(result):
    """On this (modern x86-64) kernel every claim is evaluated with its evidence. Those that
    hold with a wide margin are asserted: the window's bounds and errno are exact; a linear
    walk would add >= 1 ns per mapping (16,000: >= 16 us) to a ~1 us call; a retry is two calls
    against the 3x allowed. A create with a failing mmap first is ~1.05x a plain one against
    the 1.5x allowed: too close for a median of a few dozen creates on a busy machine."""
    timed = {"thread-create-no-cliff"}
    for c in result.claims:
        assert c.holds is not None and c.evidence, str(c)
        if c.id not in timed:
            assert c.holds is True, str(c)
    assert "medians over" in result.claim("thread-create-no-cliff").evidence


def _full(retry, plain, fail=500.0, vmas=16000):
    m = Measured("full window")
    for name, value in (("retry_ns", retry), ("plain_ns", plain), ("fail_ns", fail)):
        m.add(Reading(name, value, "clock", "ns"))
    m.add(Reading("vmas", vmas, "rusage"))
    return m


def _creates(after_old, after_new, full_at=100, made=160):
    old = Measured("threads: MAP_32BIT first")
    new = Measured("threads: MAP_STACK")
    for m, us in ((old, after_old), (new, after_new)):
        m.add(Reading("created", made, "rusage"))
        m.add(Reading("us_after_full", us, "clock", "us"))
    threads = Measured("thread creates", {"full_at": Reading("full_at", full_at, "rusage")})
    return {m.label: m for m in (old, new, threads)}


def test_timing_claims_on_made_up_numbers():
    """The retry, no-cliff and not-linear verdicts follow their thresholds: two syscalls pass,
    the 2008 slowdown (a linear walk: ~16 us more per failing call, 100x per create) fails."""
    assert ts._retry(_full(1400, 1000), None).holds is True
    assert ts._retry(_full(20000, 1000, fail=19000), None).holds is False
    assert ts._no_cliff(_creates(12.7, 11.8)).holds is True
    assert ts._no_cliff(_creates(1200.0, 11.8)).holds is False
    one = Measured("one mapping", {"fail_ns": Reading("fail_ns", 300.0, "clock", "ns")})
    assert ts._not_linear(_full(1400, 1000, fail=450), one, None).holds is True
    assert ts._not_linear(_full(17000, 1000, fail=16500), one, None).holds is False
    too_few = ts._no_cliff(_creates(12.7, 11.8, full_at=150))
    assert too_few.holds is None and "creates after it fills" in too_few.reason


@needs_x86
def test_window_bounds_count_and_errno(result):
    """Mappings lie in [1 GiB, 2 GiB), start within 32 MiB of 1 GiB, fill ~1 GiB, then ENOMEM."""
    w = result["window fill"]
    lo, hi, first = w["lowest_addr"].value, w["highest_end"].value, w["first_addr"].value
    assert GIB <= lo <= first < GIB + 32 * MIB and hi <= 2 * GIB
    assert w["outside"].value == 0
    chunk, n = w["chunk_bytes"].value, w["mappings"].value
    assert chunk == 64 * 1024 and w["bytes"].value == n * chunk
    assert GIB - 32 * MIB - chunk < w["bytes"].value <= GIB
    assert w["errno"].value == errno.ENOMEM and w["plain_after_fail"].value == 1


@needs_x86
def test_filling_the_window_touches_no_memory(result):
    """A gigabyte of PROT_NONE/PROT_READ mappings costs address space and no page faults."""
    pf = result["window fill"]["page-faults"]
    assert pf.best is not None and pf.best < 16, str(pf)
    assert pf.best_source in ("sw", "rusage")


@needs_x86
def test_timings_are_clock_medians_of_the_requested_calls(result):
    """Failing, plain and retry medians come from the clock, from about `calls` samples each."""
    full, one = result["full window"], result["one-mapping window"]
    for m, names in ((full, ("plain_ns", "fail_ns", "retry_ns")), (one, ("plain_ns", "fail_ns"))):
        for name in names:
            assert m[name].source == "clock" and m[name].value > 0, name
    calls = SMALL["calls"]
    late = full["late_successes"].value
    assert full["fail_samples"].value + full["retry_samples"].value + late == 2 * calls
    assert one["fail_samples"].value + one["late_successes"].value == calls
    assert full["retry_ns"].value > full["fail_ns"].value  # the pair contains a failing call
    assert full["vmas"].value >= result["window fill"]["mappings"].value
    assert one["vmas"].value >= 1


@needs_x86
def test_thread_phase_counts_add_up(result):
    """Every thread is created; 2003-style stacks fill the window, MAP_STACK ones never enter it.
    A few may still land there after the first retry: the search base is random per call."""
    old, new = result["threads: MAP_32BIT first"], result["threads: MAP_STACK"]
    full_at = result["thread creates"]["full_at"].value
    assert old["created"].value == new["created"].value == SMALL["threads"]
    assert new["stacks_in_window"].value == 0
    assert 0 < full_at <= old["stacks_in_window"].value <= GIB // (8 * MIB)
    assert "failed_at" not in result["thread creates"].metrics
    for m in (old, new):
        us = [r for name, r in m.metrics.items() if name.startswith("us@")]
        assert 0 < len(us) <= 32 and all(r.value > 0 and r.source == "clock" for r in us)


@needs_x86
def test_figure_draws_both_panels_with_sources(result):
    """The figure has the fill series, the failing calls and both thread kinds, sources named."""
    fig = result.figure()
    names = [t.name for t in fig.data]
    assert len(names) == 4 and all("(clock)" in n for n in names), names
    fill = fig.data[0]
    assert len(fill.x) <= 128 and min(fill.y) > 0
    assert min(fig.data[1].x) > max(fill.x)  # failing calls come after the fill


@needs_x86
def test_verdicts_are_the_fixed_claim_texts(result):
    """Verdict lines carry no measured numbers, so the chapter's checked cells are stable."""
    words = [c.verdict.split(": ", 1)[0] for c in result.claims]
    assert result.verdicts() == "\n".join(f"{w}: {t}" for w, t in zip(words, ts.TEXTS.values()))
    assert set(words) <= {"holds", "fails"}


@pytest.mark.parametrize(
    "params, words",
    [
        ({"chunk_kb": 66}, "multiple of the page size"),
        ({"stack_kb": 8190}, "multiple of the page size"),
        ({"chunk_kb": 32}, "chunk_kb must be in"),
        ({"threads": 5000}, "threads must be in"),
        ({"calls": -1}, "calls must be in"),
        ({"stacks": 4}, "no parameter 'stacks'"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(params, words):
    """Sizes that are not page multiples, out-of-range or unknown parameters raise BadInput."""
    with pytest.raises(BadInput, match=words):
        pagelab.run("thread-stacks", progress=None, **params)


def test_cli_bad_size_exits_2_with_one_line(pagelab_cmd):
    """The CLI turns a size that is not a page multiple into exit 2 and one line on stderr."""
    p = run(pagelab_cmd + ["run", "thread-stacks", "--set", "chunk_kb=100", "--set", "stack_kb=6"])
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "stack_kb" in p.stderr


def test_address_space_over_rlimit_is_refused(pagelab_cmd):
    """Under an RLIMIT_AS too small for the window, the run is refused up front (exit 2)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (GIB, resource.RLIM_INFINITY))

    p = subprocess.run(
        pagelab_cmd + ["run", "thread-stacks"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert "address space" in p.stderr and "RLIMIT_AS" in p.stderr
    assert p.stderr.count("\n") == 1


def test_max_map_count_is_read_from_the_given_root(tmp_path):
    """vm.max_map_count is read from a /proc tree (None where it is missing)."""
    assert ts.max_map_count(tmp_path) is None
    (tmp_path / "proc/sys/vm").mkdir(parents=True)
    (tmp_path / "proc/sys/vm/max_map_count").write_text("65530\n")
    assert ts.max_map_count(tmp_path) == 65530


def test_memory_counts_address_space_not_ram():
    """memory(): resident stays small, address space covers the window and every stack."""
    p = validate("thread-stacks", {})
    resident, space = ts.memory(p)
    assert resident < 64 * MIB
    assert space >= max(GIB, 2 * p["threads"] * p["stack_kb"] * 1024)


def test_other_architectures_say_why_nothing_was_evaluated():
    """Where the C workload reports no MAP_32BIT (not x86-64), every claim is not evaluated with
    the reason. This machine may be x86-64, so the worker's answer is stood in for."""
    ctx = _context(validate("thread-stacks", {}), 10, {"profile": "test"})
    fill = Measured("window fill", {"map_32bit": Reading("map_32bit", 0, "rusage")})
    ctx.workload = lambda events: ([fill], {})
    res = ts.run(ctx)
    assert res.claims and all(c.holds is None and "x86-64" in c.reason for c in res.claims)


@needs_x86
def test_blocked_profile_still_evaluates_every_claim(tools_dir, pagelab_cmd):
    """With perf_event_open denied by seccomp, page faults fall back to rusage (labelled) and
    every claim is still evaluated from the clock and mmap's answers."""
    doc = run_blocked(tools_dir, pagelab_cmd, "thread-stacks", **SMALL)
    assert all(c["holds"] is True for c in doc["claims"]), doc["claims"]
    fill = next(m for m in doc["measurements"] if m["label"] == "window fill")["metrics"]
    pf = fill["page-faults"]
    assert pf["value"] is None and "seccomp" in pf["reason"]
    assert pf["fallback"]["source"] == "rusage" and pf["fallback"]["value"] < 16


@needs_x86
def test_a_process_limit_is_not_mistaken_for_a_full_window():
    """When RLIMIT_AS (not the window) stops the fill, the result says so: the ENOMEM claim fails
    with that reason and nothing is timed in a window that never filled."""
    p = validate("thread-stacks", {"threads": 16, "calls": 16})
    # address_space=0: the worker's RLIMIT_AS is its own size plus the 512 MiB slack, < 1 GiB
    res = ts.run(_context(p, 60, {}))
    enomem = res.claim("map32bit-full-enomem")
    assert enomem.holds is False and "process-wide limit" in enomem.evidence
    assert res.claim("map32bit-holds-1gib").holds is False
    for cid in ("failing-call-not-linear", "retry-two-syscalls"):
        c = res.claim(cid)
        assert c.holds is None and "process-wide limit" in c.reason, str(c)
    assert res["window fill"]["bytes"].value < GIB - 32 * MIB


@needs_x86
def test_an_in_process_run_leaves_no_descriptor_behind():
    """A run from this process closes everything it opened at once, not when the cycle collector
    gets round to it (the worker's selector once kept an epoll fd until then)."""
    before = set(os.listdir("/proc/self/fd"))
    gc.disable()
    try:
        pagelab.run("thread-stacks", progress=None, threads=16, calls=16)
        after = set(os.listdir("/proc/self/fd"))
    finally:
        gc.enable()
    assert after == before
