"""LiveCounters' Python side: its messages, sources, controls, thread and fds; run handles."""

import array
import math
import mmap
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import pagelab
from helpers import fd_count
from pagelab.counters.sampler import Sampler
from pagelab.jupyter import live as _live
from pagelab.jupyter.live import LiveCounters, next_tick, samples_message
from pagelab.native import worker as _worker

NO_SUCH_EVENT = "4242:1"  # a perf type no kernel has: fails to open everywhere (ENOENT)


def recording(widget):
    """Keep what the widget sends (no front end is attached outside a kernel)."""
    sent = []
    widget.send = lambda content, buffers=None: sent.append((content, buffers))
    return sent


def test_public_names():
    """pagelab exports the widget, the run handle and start() from their own modules."""
    assert pagelab.LiveCounters is LiveCounters
    assert (
        pagelab.start.__module__ == "pagelab.experiments.runner"
        and pagelab.RunHandle.__name__ == "RunHandle"
    )


def test_samples_message_is_two_float64_buffers():
    """A batch goes out as one message: counts in the content, times and row-major totals as
    float64 buffers (NaN for unknown), not one JSON number per value."""
    content, buffers = samples_message([0.5, 1.0], [[1, math.nan], [3, 4]])
    assert content == {"type": "samples", "n": 2, "counters": 2}
    times = array.array("d", bytes(buffers[0]))
    values = array.array("d", bytes(buffers[1]))
    assert list(times) == [0.5, 1.0]
    assert values[0] == 1 and math.isnan(values[1]) and list(values[2:]) == [3, 4]


def test_sampler_keeps_its_pace_and_never_bursts():
    """On time, ticks are one period apart; after a stall the next tick is now, not a burst of
    the missed ones (synthetic clock)."""
    assert next_tick(10.0, 0.05, 10.01) == pytest.approx(10.05)
    assert next_tick(10.0, 0.05, 11.0) == 11.0
    ticks, tick = [], 0.0
    for now in (0.0, 0.5, 0.51, 0.52):  # a 0.5 s stall after the first sample
        tick = next_tick(tick, 0.1, now)
        ticks.append(tick)
    assert ticks == pytest.approx([0.1, 0.5, 0.6, 0.7])


def test_sample_sends_growing_page_faults_of_this_kernel():
    """Faulting in this (main) thread shows up in the next sample's page-faults total."""
    w = LiveCounters(["page-faults"], start=False)
    sent = recording(w)
    try:
        before = w.sample()[0]
        with mmap.mmap(-1, 16 << 20) as m:  # a fresh mapping: 4096 pages never touched before
            for off in range(0, len(m), 4096):
                m[off] = 1
        after = w.sample()[0]
        assert after - before >= 4096 * 0.9
        content, buffers = sent[-1]
        assert content["type"] == "samples" and array.array("d", bytes(buffers[1]))[0] == after
        assert w.counters[0]["source"] in ("sw", "rusage")
    finally:
        w.close()


def test_unavailable_counter_says_why_and_repr_shows_sources():
    """A counter that cannot open is NaN with its reason; the text repr names every source."""
    w = LiveCounters(["page-faults", NO_SUCH_EVENT], start=False)
    recording(w)
    try:
        values = w.sample()
        bad = w.counters[1]
        assert bad["name"] == NO_SUCH_EVENT and bad["reason"] and math.isnan(values[1])
        text = repr(w)
        assert f"{NO_SUCH_EVENT}: not available here ({bad['reason']})" in text
        assert "page-faults: " in text and f"({w.counters[0]['source']}" in text
    finally:
        w.close()


def test_bad_interval_and_target_are_bad_input():
    """Faster than 30 Hz, or a target that is not a pid or handle, is one clear BadInput."""
    with pytest.raises(pagelab.BadInput, match="at most 30 samples"):
        LiveCounters(interval_ms=10)
    with pytest.raises(pagelab.BadInput, match="target"):
        LiveCounters(target=-3)
    with pytest.raises(pagelab.BadInput, match="no process with pid"):
        LiveCounters(target=2**22 + 12345)  # above the default pid_max
    with pytest.raises(pagelab.UnknownEvent):
        LiveCounters(["page-fautls"])


def test_missing_front_end_says_how_to_build_it(monkeypatch, tmp_path):
    """Without the bundled front end the widget refuses with how to build it, opening nothing."""
    monkeypatch.setattr(_live, "BUNDLE", tmp_path / "livecounters.js")
    fds = fd_count()
    with pytest.raises(pagelab.PagelabError, match="make setup"):
        LiveCounters(start=False)
    assert fd_count() == fds


def test_controls_and_close_stop_the_thread_and_close_every_fd():
    """start/stop/reset from the view's messages work; close() joins the thread and leaves no fd."""
    fds = fd_count()
    w = LiveCounters(["page-faults", "context-switches"], interval_ms=33)
    sent = recording(w)
    assert w.running and w._thread.is_alive()
    w._on_control(w, {"type": "stop"}, [])
    assert not w.running and w._thread is None
    w._on_control(w, {"type": "reset"}, [])
    assert sent[-1][0] == {"type": "reset"} and math.isnan(w.totals()["page-faults"])
    w._on_control(w, {"type": "start"}, [])
    thread = w._thread
    assert w.running
    w.close()
    assert not thread.is_alive()
    assert fd_count() == fds
    assert not any(t.name == "pagelab-live" for t in threading.enumerate())


def test_blocked_profile_streams_labelled_rusage_fallback(tools_dir):
    """Under the seccomp launcher page-faults is read from rusage, labelled so, with the reason."""
    code = (
        "from pagelab.jupyter.live import LiveCounters\n"
        "w = LiveCounters(['page-faults', 'cycles'], start=False)\n"
        "w.send = lambda *a, **k: None\n"
        "w.sample(); b = bytearray(8 << 20); w.sample()\n"
        "print(repr(w)); w.close()\n"
    )
    p = subprocess.run(
        [str(tools_dir / "pl-noperf"), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    pf = next(l for l in p.stdout.splitlines() if "page-faults" in l)
    assert "(rusage; perf unavailable" in pf and "seccomp" in pf and "minflt+majflt" in pf
    total = int(pf.split(":")[1].split()[0].replace(",", ""))
    assert total >= 2048 * 0.9
    assert "cycles: not available here" in p.stdout


def _wait_for_pid(job):
    deadline = time.monotonic() + 60
    while job.pid is None:
        assert not job.done() and time.monotonic() < deadline, "the worker never started"
        time.sleep(0.02)
    return job.pid


def test_job_pid_is_its_worker_and_a_sampler_follows_it():
    """A background Job names its worker's pid, a Sampler opens on that process, cancel() kills
    the worker and result() then raises Interrupted."""
    job = _worker.Job("pagelab.native.worker:selftest", {"mode": "hold", "seconds": 60, "mib": 8})
    pid = _wait_for_pid(job)
    with open(f"/proc/{pid}/cmdline") as f:
        assert "pagelab.native.worker" in f.read()
    sampler = Sampler(["page-faults"], job)
    try:
        assert not math.isnan(sampler.read()[0])
        assert sampler._probe.pid == pid
    finally:
        sampler.close()
    job.cancel()
    with pytest.raises(_worker.Interrupted):
        job.result()
    assert not os.path.exists(f"/proc/{pid}/cmdline") or _is_zombie_or_gone(pid)


def _is_zombie_or_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_interrupt_while_waiting_on_a_job_kills_its_worker():
    """Ctrl-C (SIGINT) while result() waits stops the worker: Interrupted, and the pid is gone."""
    job = _worker.Job("pagelab.native.worker:selftest", {"mode": "hold", "seconds": 60, "mib": 1})
    pid = _wait_for_pid(job)
    main = threading.main_thread().ident
    for _ in range(5):  # a signal that lands just before result() waits is retried
        threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT)).start()
        try:
            job.result()
        except _worker.Interrupted:
            break
        except KeyboardInterrupt:
            continue
    assert job.done() and _is_zombie_or_gone(pid)


def test_start_returns_at_once_and_watch_follows_the_run():
    """pagelab.start gives a handle while the experiment runs; watching it shows its workers'
    counters and result() returns the experiment's Result."""
    handle = pagelab.start("first-touch", size_mb=8, threads=1, rounds=2)
    w = LiveCounters.watch(handle, ["page-faults"], interval_ms=33)
    recording(w)
    try:
        result = handle.result()
    finally:
        w.close()
    assert handle.done() and handle.pid is None
    assert result.experiment == "first-touch"
    assert "first-touch" in w.target


def test_start_rejects_bad_parameters_before_running():
    """Bad parameters raise BadInput from start() itself, not later from the background."""
    with pytest.raises(pagelab.BadInput):
        pagelab.start("first-touch", size_mb=0)
