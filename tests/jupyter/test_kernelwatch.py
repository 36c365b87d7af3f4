"""The kernel panel's sampler (pagelab.jupyter.kernelwatch) in this process: its schedule on
synthetic clocks, one shared set of counters for clients asking for different events, and
recovery from a fault inside its thread. The real server's side is
tests/jupyter/test_serverext.py."""

import bisect
import contextlib
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pagelab.core.errors import BadInput, UnknownEvent
from pagelab.counters.sampler import MAX_HZ
from pagelab.jupyter import kernelwatch as _kernelwatch
from pagelab.jupyter.kernelwatch import (
    MAX_INTERVAL_MS,
    MIN_INTERVAL_MS,
    PROC_ROWS,
    KernelWatch,
    schedule,
)

PROC = [name for name, _, _ in PROC_ROWS]
SCHEMA = Path(__file__).resolve().parents[2] / "labext" / "schema" / "plugin.json"


def _simulate(intervals_ms, seconds, leave=None):
    """Drive schedule() as the thread does, on a synthetic clock: {interval: [served times]}
    and the tick times. ``leave`` (interval, at s): that client leaves then."""
    watch = KernelWatch()
    clients = {ms: watch.client(ms, None) for ms in intervals_ms}
    served = {ms: [] for ms in intervals_ms}
    ticks, t = [], 0.0
    while t < seconds:
        ticks.append(t)
        if leave and t >= leave[1]:
            clients.pop(leave[0], None)
        due, next_t = schedule(set(clients.values()), t)
        for ms, c in clients.items():
            if c in due:
                served[ms].append(t)
        t = next_t
    return served, ticks


def _most_in_a_window(times, window):
    """The most of ``times`` (sorted) in any half-open window of this length."""
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


def test_each_client_is_served_at_its_own_rate_from_ticks_at_the_fastest():
    """Clients at 100, 150, 500, 1000 and 10,000 ms: ticks come every 100 ms and no more often;
    each client gets its own rate (within 1% over 10 minutes) and never more than its rate plus
    one in any window of 1 to 30 of its intervals."""
    intervals = [100, 150, 500, 1000, 10_000]
    served, ticks = _simulate(intervals, 600)
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
    assert gaps == {0.1}, gaps
    for ms in intervals:
        times, interval = served[ms], ms / 1000
        rate = (len(times) - 1) / (times[-1] - times[0])
        assert abs(rate * interval - 1) < 0.01, (ms, rate)
        for n in (1, 2, 3, 10, 30):
            assert _most_in_a_window(times, n * interval) <= n + 1, (ms, n)


def test_a_slow_client_keeps_its_time_when_the_fast_one_leaves():
    """When the 100 ms client leaves at 24.2 s, the 10 s client is still served at 30 s (ticks
    then follow it), not 10 s after the last fast tick."""
    served, ticks = _simulate([100, 10_000], 45, leave=(100, 24.2))
    assert [round(t, 6) for t in served[10_000]] == [0, 10, 20, 30, 40]
    assert [round(t, 6) for t in ticks if t > 24.3] == [30, 40]


def test_query_range_is_the_settings_schema_range():
    """The intervals the server accepts are exactly those the lab's settings schema allows (and
    the fastest is MAX_HZ); outside them, or not a number, is BadInput; an unknown event is
    UnknownEvent with the doctor's hint."""
    refresh = json.loads(SCHEMA.read_text())["properties"]["refreshMs"]
    assert (refresh["minimum"], refresh["maximum"]) == (MIN_INTERVAL_MS, MAX_INTERVAL_MS)
    assert round(1000 / MAX_HZ) == MIN_INTERVAL_MS
    watch = KernelWatch()
    assert watch.client(str(MIN_INTERVAL_MS), None).interval == MIN_INTERVAL_MS / 1000
    assert watch.client(MAX_INTERVAL_MS, None).interval == MAX_INTERVAL_MS / 1000
    for bad in (MIN_INTERVAL_MS - 1, MAX_INTERVAL_MS + 1, "fast", "", None):
        with pytest.raises(BadInput):
            watch.client(bad, None)
    with pytest.raises(UnknownEvent, match="unknown event 'page-fault'; did you mean"):
        watch.client(100, "page-fault")
    assert KernelWatch(max_hz=2).client(100, None).interval == 0.5
    with pytest.raises(BadInput, match="turned off"):
        KernelWatch(max_hz=0).client(100, None)


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _until(predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"not within {timeout} s"
        time.sleep(0.01)
    return value


def _perf_fds():
    """How many perf_event fds this process holds."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own fd, closed by now
            n += "perf_event" in os.readlink(f"/proc/self/fd/{fd}")
    return n


def test_clients_with_different_events_share_one_counter_each(sleeper):
    """Two clients, one asking for page-faults and one for page-faults and context-switches:
    the kernel gets one counter per event, two in all, and each client's replies hold only its
    own series and columns; once both leave, every counter is closed."""
    watch = KernelWatch()
    watch.set_kernels({"k": sleeper})
    a = watch.client(50, "page-faults")
    b = watch.client(50, "page-faults,context-switches")
    before = _perf_fds()
    watch.subscribe(a)
    watch.subscribe(b)

    def counted():
        watched = watch._watched.get("k")
        return watched and sorted(n for _, have in watched.probes for n in have)

    try:
        names = _until(lambda: counted() == ["context-switches", "page-faults"] and counted())
        ticks = watch.peek()["ticks"]
        _until(lambda: watch.peek()["ticks"] > ticks)  # a sample of both events
        replies = watch.replies([a, b])
        opened = [s for s in watch._watched["k"].series.values() if not s.reason]
        fds = _perf_fds() - before
    finally:
        watch.unsubscribe(a)
        watch.unsubscribe(b)
    assert names == ["context-switches", "page-faults"] and fds == len(opened)
    for data, (client,) in replies:
        k = data["kernels"][0]
        assert [s["name"] for s in k["series"]] == [*client.names, *PROC]
        assert all(len(row) == 1 + len(k["series"]) for row in k["samples"])
    _until(lambda: not watch.peek()["clients"] and watch._thread is None)
    assert _perf_fds() == before


def test_a_kernel_that_drops_to_another_user_leaves_the_watch(tmp_path):
    """A kernel started through a wrapper (setpriv) is this user's until the wrapper drops it
    to nobody: the same listing, given again, then no longer includes it."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping a process to another user needs root and setpriv")
    go = tmp_path / "go"
    drop = "setpriv --reuid=65534 --regid=65534 --clear-groups sleep 120"
    proc = subprocess.Popen(["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.01; done; exec {drop}"])
    watch = KernelWatch()
    try:
        watch.set_kernels({"k": proc.pid})
        before = dict(watch._kernels)
        go.touch()
        _until(lambda: os.stat(f"/proc/{proc.pid}").st_uid == 65534)
        watch.set_kernels({"k": proc.pid})
    finally:
        proc.kill()
        proc.wait()
    assert before == {"k": proc.pid} and watch._kernels == {}


def test_a_fault_in_the_thread_is_logged_once_reported_and_recovered(sleeper, monkeypatch):
    """Reading a kernel raises for a while: the failure is logged once, with its traceback,
    however often it repeats; peek() and the replies say sampling failed and why; the thread
    retries after a backoff and, once the fault is gone, samples again and logs so."""
    log = logging.getLogger("pagelab.test.kernelwatch")
    log.setLevel(logging.INFO)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log.addHandler(handler)
    failing = {"on": False}
    read = _kernelwatch.Watched.read

    def faulty(self):
        if failing["on"]:
            raise RuntimeError("injected fault")
        return read(self)

    monkeypatch.setattr(_kernelwatch.Watched, "read", faulty)
    watch = KernelWatch(log=log)
    watch.set_kernels({"k": sleeper})
    client = watch.client(50, None)
    watch.subscribe(client)
    try:
        _until(lambda: watch.peek()["ticks"] > 2)
        failing["on"] = True
        _until(lambda: watch.peek()["failures"] >= 3)
        state = watch.peek()
        (data, _), *_ = watch.replies([client])
        failing["on"] = False
        ticks = _until(lambda: watch.peek()["sampling"] and watch.peek()["ticks"])
        _until(lambda: watch.peek()["ticks"] > ticks)
    finally:
        watch.unsubscribe(client)
        log.removeHandler(handler)
    assert not state["sampling"] and "RuntimeError: injected fault" in state["error"], state
    assert data["sampling_error"] == state["error"] or "injected fault" in data["sampling_error"]
    failed = [r for r in records if r.levelno == logging.ERROR]
    assert len(failed) == 1 and failed[0].exc_info, failed
    assert any("works again" in r.getMessage() for r in records)
    assert watch.peek()["error"] is None
