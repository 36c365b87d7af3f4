"""Event names: the named table, raw codes, TYPE:CONFIG pairs, and clear rejections."""

import pytest

import pagelab
from pagelab._native import lib


def test_named_events_carry_perf_type_and_source():
    """Named events map to the perf type and config perf(1) uses, and to their source."""
    pf = pagelab.event("page-faults")
    assert (pf.type, pf.source) == (lib.PERF_TYPE_SOFTWARE, "sw")
    tlb = pagelab.event("dTLB-load-misses")
    # PERF_COUNT_HW_CACHE_DTLB=3, OP_READ=0, RESULT_MISS=1 -> 3 | 0 << 8 | 1 << 16
    assert (tlb.type, tlb.config, tlb.source) == (lib.PERF_TYPE_HW_CACHE, 0x10003, "hw")


def test_every_event_the_issue_names_is_known():
    """The full list of perf event names from the foundation issue is accepted."""
    names = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "L1-dcache-stores",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-load-misses",
        "LLC-loads",
        "LLC-load-misses",
        "page-faults",
        "minor-faults",
        "major-faults",
        "context-switches",
        "cpu-migrations",
        "task-clock",
        "alignment-faults",
        "emulation-faults",
    ]
    assert [e.name for e in pagelab.events(names)] == names


def test_raw_and_type_config_specs():
    """rXXXX is a raw PMU code; TYPE:CONFIG takes decimal or 0x-hex config."""
    raw = pagelab.event("r01c2")
    assert (raw.type, raw.config, raw.source) == (lib.PERF_TYPE_RAW, 0x1C2, "hw")
    sw = pagelab.event("1:2")
    assert (sw.type, sw.config, sw.source) == (1, 2, "sw")
    assert pagelab.event("4:0x1a").config == 0x1A


def test_comma_lists_drop_duplicates_and_keep_order():
    """A comma-separated list parses in order, each event once."""
    assert [e.name for e in pagelab.events("minor-faults, page-faults,minor-faults")] == [
        "minor-faults",
        "page-faults",
    ]


@pytest.mark.parametrize(
    "spec, hint",
    [
        ("page-fault", "page-faults"),
        ("dtlb-load-misses", "dTLB-load-misses"),
        ("L1-dcache-misses", "L1-dcache-load-misses"),
    ],
)
def test_unknown_names_suggest_the_closest(spec, hint):
    """A misspelt name is rejected with the closest valid names suggested."""
    with pytest.raises(pagelab.UnknownEvent, match=f"unknown event '{spec}'.*{hint}"):
        pagelab.event(spec)


@pytest.mark.parametrize("spec", ["", "r", "rxyz", "1:", ":3", "1:2:3", "page faults", 7, None])
def test_malformed_specs_are_rejected(spec):
    """Garbage, empty and non-string specs raise UnknownEvent (a ValueError)."""
    with pytest.raises(ValueError):
        pagelab.events([spec])


def test_too_many_events_for_one_group():
    """More events than a group holds is refused before anything opens."""
    too_many = [f"r{i:x}" for i in range(lib.PL_MAX_EVENTS + 1)]
    with pytest.raises(pagelab.UnknownEvent, match="at most"):
        pagelab.events(too_many)


def test_empty_list_is_rejected():
    """An empty event list is an error, not a silent no-op."""
    with pytest.raises(pagelab.UnknownEvent, match="no events"):
        pagelab.events(",")
