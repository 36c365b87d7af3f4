"""Opening and closing many counter groups leaks neither file descriptors nor memory."""

import resource

import pytest

import pagelab
from helpers import fd_count
from pagelab.counters.doctor import profile

GROUPS = 10_000


def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


@pytest.mark.slow
def test_ten_thousand_groups_leave_fds_and_rss_flat():
    """10,000 groups opened, read and closed: fd count unchanged, RSS within 2 MiB."""
    if profile() == "blocked":
        pytest.skip("perf_event_open is blocked here: no descriptors to leak")
    events = "page-faults,minor-faults,context-switches,dTLB-load-misses"
    for _ in range(200):  # warm up allocator and caches before the baseline
        with pagelab.CounterGroup(events) as g:
            g.read()
    fds, rss = fd_count(), rss_kib()
    for _ in range(GROUPS):
        with pagelab.CounterGroup(events) as g:
            g.enable()
            g.read()
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert fds * 2 < soft  # the check would be meaningless if the limit stopped a leak early
    assert fd_count() == fds
    assert rss_kib() - rss < 2048
