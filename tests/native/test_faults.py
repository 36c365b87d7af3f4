"""Fault injection on the worker: planted modules, callers killed at start-up, thread spawns."""

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

from pagelab.native import worker as _worker
from pagelab.native.worker import call, environment

SELFTEST = "pagelab.native.worker:selftest"
# Kill delays spread over the worker's start-up (exec, interpreter start, import of pagelab):
# about 0.2 s here, longer on a loaded machine; trials beyond it still check a running worker.
TRIALS = 30
MAX_DELAY = 0.4


def marked(marker):
    """PIDs of this user's processes whose environment carries ``marker``."""
    found = []
    for pid in filter(str.isdecimal, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:  # gone, or not ours
            continue
    return found


def caller_script(thread, quiet=False):
    """A caller that starts a worker (from the main thread or another) and says when. The
    worker holds memory and says so, or (``quiet``) waits in pause() and never writes: a worker
    that wrote to its dead caller's pipe would die of EPIPE and hide an orphan. The caller ignores
    SIGHUP, the worker's death signal, as one started under nohup does."""
    start = "threading.Thread(target=work).start()" if thread else "work()"
    task = (
        '"signal:pause", {}'
        if quiet
        else f'{SELFTEST!r}, {{"mode": "hold", "mib": 1, "seconds": 30}}, '
        "on_progress=lambda m: print(m, flush=True)"
    )
    return textwrap.dedent(f"""
        import signal, sys, threading
        from pagelab.native.worker import call
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup: the worker must not keep it
        def work():
            print("spawning", flush=True)
            call({task})
        {start}
    """)


def children(pid):
    """The PIDs of a process's children, from /proc (empty once it is gone)."""
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += map(int, f.read().split())
    except OSError:
        pass
    return found


def kill_during_startup(thread, delay):
    """Start a caller and kill it during its worker's start-up: as soon as the worker is forked
    (``delay`` None), or ``delay`` s after the caller begins to spawn. Returns (started,
    orphans): whether the worker existed at the kill, and the PIDs alive 5 s after it."""
    marker = f"PAGELAB_FAULT_TRIAL={uuid.uuid4().hex}"
    key, value = marker.split("=")
    caller = subprocess.Popen(
        [sys.executable, "-c", caller_script(thread, quiet=True)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, key: value},
    )
    try:
        assert caller.stdout.readline().strip() == "spawning"
        if delay is None:
            deadline = time.monotonic() + 10
            while not children(caller.pid) and time.monotonic() < deadline:
                pass  # spin: the kill should land within microseconds of the fork
        else:
            time.sleep(delay)
        started = bool(children(caller.pid))
    finally:
        caller.kill()
        caller.wait()
        caller.stdout.close()
    deadline = time.monotonic() + 5
    while (left := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # only the processes this trial started, found by their marker
        os.kill(pid, signal.SIGKILL)
    return started, left


@pytest.mark.slow
@pytest.mark.parametrize("thread", [False, True], ids=["main-thread", "other-thread"])
def test_a_caller_killed_during_worker_startup_leaves_no_orphan(thread):
    """Killing the caller at any moment of its worker's start-up leaves no worker behind."""
    rng = random.Random(8)
    delays = [None] * (TRIALS // 2) + [rng.uniform(0, MAX_DELAY) for _ in range(TRIALS // 2)]
    results = [kill_during_startup(thread, d) for d in delays]
    orphans = [pids for _, pids in results if pids]
    started = sum(s for s, _ in results)
    print(f"{TRIALS} trials, {started} killed with the worker started, {len(orphans)} orphans")
    assert not orphans
    assert started >= TRIALS // 2  # every kill-at-fork trial landed during start-up


def test_a_worker_started_from_a_thread_dies_with_its_caller():
    """A worker forked for a non-main thread is killed when the caller process dies."""
    caller = subprocess.Popen(
        [sys.executable, "-c", caller_script(thread=True)], stdout=subprocess.PIPE, text=True
    )
    assert caller.stdout.readline().strip() == "spawning"
    worker = int(caller.stdout.readline().rsplit(" ", 1)[1])
    caller.kill()
    caller.wait()
    caller.stdout.close()
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{worker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{worker}")


def test_a_worker_outlives_the_thread_that_started_it():
    """A worker started by a short-lived thread (as a widget's) survives that thread's end."""
    request = json.dumps(
        {"target": SELFTEST, "args": {"mode": "hold", "seconds": 1}, "address_space": None}
    )
    started = {}
    starter = threading.Thread(
        target=lambda: started.update(w=_worker._start(environment(), request.encode()))
    )
    starter.start()
    starter.join(60)
    proc, output_fd, result_fd = started["w"]
    try:
        proc.wait(30)
        assert proc.returncode == 0  # not SIGKILLed when the starter thread exited
    finally:
        proc.kill()
        os.close(output_fd)
        os.close(result_fd)


def test_a_module_planted_in_the_cwd_is_not_imported(tmp_path, monkeypatch):
    """A selectors.py (or json.py, or pagelab/) in the working directory never runs in a worker."""
    pwned = tmp_path / "PWNED"
    for name in ("selectors", "json", "signal", "resource"):
        (tmp_path / f"{name}.py").write_text(f"open({str(pwned)!r}, 'a').write({name!r})\n")
    (tmp_path / "pagelab").mkdir()
    (tmp_path / "pagelab" / "__init__.py").write_text(f"open({str(pwned)!r}, 'a').write('pkg')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    r = call(SELFTEST, {"mode": "env"})
    assert not pwned.exists()
    assert r["flags"] == 1 and str(tmp_path) not in r["path"] and "" not in r["path"]


def test_workers_get_a_whitelisted_environment(monkeypatch):
    """Allocator and loader tuning does not leak into a worker unless the caller names it."""
    for k, v in {
        "MALLOC_ARENA_MAX": "1",
        "GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096",
        "LD_PRELOAD": "",
        "SECRET_TOKEN": "x",
        "PAGELAB_SCRATCH": "/tmp",
        "LC_ALL": "C",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("PAGELAB_PASS_ENV", raising=False)
    env = call(SELFTEST, {"mode": "env"})["environ"]
    assert {"PATH", "PAGELAB_SCRATCH", "LC_ALL"} <= set(env)
    assert not {"MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "LD_PRELOAD", "SECRET_TOKEN"} & set(env)
    env = call(SELFTEST, {"mode": "env"}, pass_env=("MALLOC_ARENA_MAX",))["environ"]
    assert env["MALLOC_ARENA_MAX"] == "1" and "GLIBC_TUNABLES" not in env
    monkeypatch.setenv("PAGELAB_PASS_ENV", "GLIBC_TUNABLES")
    assert environment()["GLIBC_TUNABLES"] == "glibc.malloc.mmap_threshold=4096"
