"""Counter groups and readings through the real perf_event_open, on this machine's profile."""

import mmap
import os

import pytest

import pagelab
from pagelab.core.reading import Reading
from pagelab.counters import group as _counters
from pagelab.counters.doctor import profile
from pagelab.counters.events import event
from pagelab.counters.group import Counts, EventStatus, Part, readings
from pagelab.counters.reasons import Facts

PAGE = os.sysconf("SC_PAGESIZE")  # 4 KiB here, 16 KiB on Asahi, 64 KiB on some arm64


def touch_fresh_pages(n):
    """Write one byte into each of n fresh anonymous 4 KiB pages (THP off for this mapping)."""
    m = mmap.mmap(-1, n * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for off in range(0, n * PAGE, PAGE):
        m[off] = 1
    m.close()


@pytest.fixture(scope="module")
def sw_available():
    if profile() == "blocked":
        pytest.skip("perf_event_open is blocked here: software counters cannot be tested")


def test_measure_counts_first_touch_faults(sw_available):
    """measure() around touching N fresh pages sees at least N page faults, labelled sw."""
    n = 2048
    with pagelab.measure("page-faults,minor-faults") as m:
        touch_fresh_pages(n)
    pf = m["page-faults"]
    assert pf.source == "sw" and pf.available
    assert n <= pf.value < n * 1.2
    assert m["minor-faults"].value <= pf.value
    # rusage saw the same faults (process-wide, so at least as many)
    assert m["minflt"].source == "rusage" and m["minflt"].value >= n
    assert m["elapsed"].source == "clock" and m["elapsed"].value > 0


def test_unavailable_hardware_event_says_why(sw_available):
    """A hardware event that cannot open is reported as unavailable with a reason, never 0."""
    if profile() == "full":
        pytest.skip("this machine has a PMU: hardware events open, nothing to explain")
    with pagelab.measure("dTLB-load-misses,page-faults") as m:
        touch_fresh_pages(16)
    r = m["dTLB-load-misses"]
    assert r.value is None and not r.available
    assert "ENOENT" in r.reason or "EOPNOTSUPP" in r.reason
    assert "not available here" in str(r)


def test_group_on_another_process(sw_available, tools_dir):
    """A group opened on another pid with enable_on_exec counts that process's faults."""
    result = pagelab.stat([str(tools_dir / "pl-touch"), "8"], "page-faults")
    assert result.counters[0].value >= 8 * 256


def test_missing_pid_is_process_lookup_error(sw_available):
    """Opening a group on a pid that does not exist raises ProcessLookupError."""
    with pytest.raises(ProcessLookupError):
        pagelab.CounterGroup("page-faults", pid=2**22 + 12345)


@pytest.mark.parametrize("pid", [-1, 1.5, "12", True])
def test_bad_pid_is_rejected(pid):
    """A negative or non-integer pid is bad input."""
    with pytest.raises(pagelab.BadInput):
        pagelab.CounterGroup("page-faults", pid=pid)


def test_closed_group_cannot_be_read(sw_available):
    """Reading a closed group is an error, not a stale number."""
    g = pagelab.CounterGroup("page-faults")
    g.close()
    with pytest.raises(ValueError, match="closed"):
        g.read()


def _status(name):
    return [EventStatus(event(name), (Part(0, None, 0, 0, 1, opened=True),))]


def test_multiplexed_counts_are_scaled_and_marked():
    """A count that ran half the enabled time is doubled and marked scaled."""
    before = Counts((100,), (1000,), (1000,))
    after = Counts((600,), (3000,), (2000,))
    (r,) = readings(_status("cycles"), before, after, Facts(2, "disabled", (), False))
    assert (r.value, r.scaled) == (1000, True)
    assert r.to_dict()["scaled"] is True


def test_unscaled_counts_stay_exact():
    """A group that was never multiplexed reports its raw delta, not scaled."""
    (r,) = readings(_status("page-faults"), Counts((10,), (5,), (5,)), Counts((25,), (9,), (9,)))
    assert (r.value, r.scaled) == (15, False)


def test_never_scheduled_group_has_no_value():
    """A group enabled but never on a counter gives no number and says so, naming the NMI
    watchdog only where it runs."""
    facts = Facts(2, "disabled", (), False, nmi_watchdog=1)
    (r,) = readings(_status("cycles"), Counts((0,), (0,), (0,)), Counts((0,), (500,), (0,)), facts)
    assert r.value is None and "never on a counter" in r.reason and "watchdog" in r.reason
    facts = Facts(2, "disabled", (), False, nmi_watchdog=0)
    (r,) = readings(_status("cycles"), Counts((0,), (0,), (0,)), Counts((0,), (500,), (0,)), facts)
    assert "watchdog" not in r.reason


def test_readings_refuse_unknown_sources():
    """Every reading names one of the known sources."""
    with pytest.raises(ValueError):
        Reading("x", 1, "guess")


def test_rusage_fallback_is_labelled():
    """An unavailable software event gets its rusage stand-in, labelled as such."""
    r = Reading("page-faults", None, "sw", reason="denied")
    _counters.add_fallbacks([r], {"minflt": 7, "majflt": 2})
    assert r.value is None
    assert (r.fallback.name, r.fallback.value, r.fallback.source) == ("minflt+majflt", 9, "rusage")


def test_rdpmc_fast_path_matches_read():
    """Where a hardware event opens with cap_user_rdpmc, reads go through rdpmc and grow."""
    g = pagelab.CounterGroup("instructions", rdpmc=True)
    if not g.opened:
        g.close()
        pytest.skip(
            f"no hardware event opens here ({os.strerror(g.status[0].errno)}): "
            "the rdpmc path needs a PMU"
        )
    with g:
        g.enable()
        a = g.read()
        sum(range(100000))
        b = g.read()
    if not a.via_rdpmc:
        pytest.skip("the kernel does not allow user-space rdpmc here (cap_user_rdpmc=0)")
    assert b.via_rdpmc and b.values[0] > a.values[0]
