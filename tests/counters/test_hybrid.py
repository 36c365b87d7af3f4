"""Counting on machines with one core PMU per core type (Intel hybrid, arm64 big.LITTLE): the
plan of perf events and the rule that sums and scales their parts, on synthetic counts."""

import pytest

from pagelab import BadInput
from pagelab.counters.events import event
from pagelab.counters.group import (
    PMU_TYPE_SHIFT,
    Counts,
    EventStatus,
    Part,
    combine,
    plan,
    readings,
)
from pagelab.counters.reasons import Facts
from pagelab.machine.pmus import Pmu

CORE, ATOM = Pmu("cpu_core", 4, tuple(range(8))), Pmu("cpu_atom", 10, tuple(range(8, 16)))
CYCLES, INSTRUCTIONS = event("cycles").config, event("instructions").config
FACTS = Facts(2, "disabled", (), False, nmi_watchdog=0)


def _events(*names):
    return [event(n) for n in names]


def test_a_generic_event_is_one_part_per_core_pmu_with_its_type_in_config():
    """cycles on a hybrid machine is opened on cpu_core and on cpu_atom, each config carrying
    its PMU's type above bit 32 and leading a group of its own; software events share one."""
    cycles, faults, switches = plan(
        _events("cycles", "page-faults", "context-switches"), [CORE, ATOM]
    )
    assert [(p.pmu, p.config >> PMU_TYPE_SHIFT) for p in cycles] == [
        ("cpu_core", 4),
        ("cpu_atom", 10),
    ]
    assert all(p.config & 0xFFFFFFFF == CYCLES for p in cycles)
    assert len({p.group for p in cycles}) == 2 and faults[0].group == switches[0].group == 0
    assert 0 not in {p.group for p in cycles}
    assert [p.slot for parts in (cycles, faults, switches) for p in parts] == [0, 1, 2, 3]


def test_one_core_pmu_keeps_the_plain_generic_event():
    """With one core PMU (most machines) the event is opened as perf_event_open(2) defines it,
    without a PMU type, so kernels without the extended type count it too."""
    ((part,),) = plan(_events("instructions"), [Pmu("cpu", 4)])
    assert (part.pmu, part.config) == ("cpu", INSTRUCTIONS)
    ((part,),) = plan(_events("instructions"), [])
    assert (part.pmu, part.config) == (None, INSTRUCTIONS)


def test_cpu_type_keeps_one_part_and_a_wrong_one_is_bad_input():
    """cpu_type=cpu_atom opens the atom part only; a core type the machine lacks names the ones
    it has."""
    ((part,),) = plan(_events("cycles"), [CORE, ATOM], "cpu_atom")
    assert part.pmu == "cpu_atom" and part.config >> PMU_TYPE_SHIFT == 10
    with pytest.raises(BadInput, match="cpu_core, cpu_atom"):
        plan(_events("cycles"), [CORE, ATOM], "cpu_lowpower")
    with pytest.raises(BadInput, match="no hardware PMU"):
        plan(_events("cycles"), [], "cpu_core")


def test_a_refused_extended_type_falls_back_to_one_generic_event():
    """Events the kernel refused per PMU are planned once, plain, where the kernel binds them."""
    ((part,),) = plan(_events("cycles"), [CORE, ATOM], generic=frozenset({"cycles"}))
    assert (part.pmu, part.config) == (None, CYCLES)


def _status(cpu_type=None):
    parts = (Part(0, "cpu_core", 0, 0, 1, opened=True), Part(1, "cpu_atom", 0, 0, 2, opened=True))
    return EventStatus(event("cycles"), parts, cpu_type)


def test_parts_are_summed_unscaled_when_the_thread_moved_between_core_types():
    """A thread 600 ns on P-cores and 400 ns on E-cores: each part ran while it was there, the
    running times add up to the span, so the total is the plain sum, each part shown."""
    t = combine(_status(), None, Counts((1800, 400), (1000, 1000), (600, 400)))
    assert (t.value, t.scaled, t.parts) == (2200, False, {"cpu_core": 1800, "cpu_atom": 400})


def test_multiplexed_parts_are_scaled_by_the_span_over_their_running_sum():
    """The same run, each part on a counter half its time: both are doubled, never one core
    type extrapolated over the time the thread spent on the other."""
    second = 1_000_000_000
    t = combine(
        _status(), None, Counts((900, 200), (second, second), (3 * second // 10, second // 5))
    )
    assert t.scaled and t.value == 2200 and t.parts == {"cpu_core": 1800, "cpu_atom": 400}


def test_a_core_type_the_thread_never_used_counts_zero_not_never_scheduled():
    """Only on P-cores: the atom part ran 0 ns, which is no fault of the PMU: total = P's."""
    ((r,),) = [readings([_status()], None, Counts((5000, 0), (1000, 1000), (1000, 0)), FACTS)]
    assert (r.value, r.reason, r.parts) == (5000, None, {"cpu_core": 5000, "cpu_atom": 0})
    assert "cpu_core 5e+03 + cpu_atom 0" in str(r)


def test_never_counted_names_the_core_type_when_one_was_asked_for():
    """With cpu_type and a thread that never ran there, the reason says so, not 'held'."""
    status = EventStatus(event("cycles"), (Part(0, "cpu_atom", 0, 0, 1, opened=True),), "cpu_atom")
    (r,) = readings([status], None, Counts((0,), (1000,), (0,)), FACTS)
    assert r.value is None and "never ran on a cpu_atom core" in r.reason
    assert "held" not in r.reason


def test_a_core_type_that_cannot_count_it_is_not_extrapolated_over():
    """LLC-loads on cpu_core only (the atom PMU refuses it): the core part is not scaled over the
    time the thread spent on E-cores, and the note says which core type the number covers."""
    parts = (
        Part(0, "cpu_core", 0, 0, 1, opened=True),
        Part(1, "cpu_atom", 0, 0, 2, opened=False, errno=2),
    )
    t = combine(
        EventStatus(event("LLC-loads"), parts), None, Counts((3000, 0), (1000, 0), (600, 0))
    )
    assert (t.value, t.scaled) == (3000, False)
    assert "cpu_core only" in t.note and "cpu_atom cannot count it" in t.note


def test_parts_read_a_few_microseconds_apart_are_not_multiplexing():
    """Parts are read one after another: a shortfall of a few microseconds is the reads' skew,
    not multiplexing, so the sum stays unscaled; a real shortfall is still scaled."""
    span = 300_000_000
    t = combine(_status(), None, Counts((100, 200), (span, span + 3_000), (span - 3_000, 0)))
    assert (t.value, t.scaled) == (300, False)
    t = combine(_status(), None, Counts((100, 100), (span, span), (span // 4, span // 4)))
    assert (t.value, t.scaled) == (400, True)


def test_a_generic_fallback_that_never_ran_says_where_it_was_bound():
    """After the no-extended-type fallback, a thread that ran only on the other core type gets
    a reason naming the binding, never 'never on a counter'."""
    status = EventStatus(event("cycles"), (Part(0, None, 0, 0, 1, opened=True),), one_pmu=True)
    (r,) = readings([status], None, Counts((0,), (1000,), (0,)), FACTS)
    assert r.value is None and "where the kernel bound it" in r.reason
    assert "held" not in r.reason
