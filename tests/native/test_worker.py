"""Worker processes: results over a pipe, timeouts, crashes, memory limits and interrupts."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import pagelab
from helpers import Kernel
from pagelab.native.worker import call

SELFTEST = "pagelab.native.worker:selftest"


def gone(pid):
    return not os.path.exists(f"/proc/{pid}")


def test_result_comes_back_from_a_fresh_process():
    """A task runs in another process and its JSON result is returned."""
    r = call(SELFTEST, {"mode": "echo"})
    assert r["mode"] == "echo" and r["pid"] != os.getpid()
    assert gone(r["pid"])


def test_progress_messages_reach_the_caller():
    """progress() inside a task is delivered to on_progress before the result."""
    seen = []
    call(SELFTEST, {"mode": "hold", "mib": 1}, on_progress=seen.append)
    assert len(seen) == 1 and re.fullmatch(r"holding 1 MiB in pid \d+", seen[0])


def test_timeout_stops_the_worker():
    """A task that overruns its timeout is killed and reported in one sentence."""
    seen = []
    t0 = time.monotonic()
    with pytest.raises(pagelab.WorkerTimeout, match="did not finish within 1 s"):
        call(
            SELFTEST, {"mode": "hold", "seconds": 60, "mib": 1}, timeout=1, on_progress=seen.append
        )
    assert time.monotonic() - t0 < 10
    assert gone(int(seen[0].rsplit(" ", 1)[1]))


def test_crash_becomes_an_exception_not_a_dead_caller():
    """A worker killed by SIGSEGV raises WorkerDied naming the signal; the caller lives on."""
    with pytest.raises(pagelab.WorkerDied, match="SIGSEGV") as info:
        call(SELFTEST, {"mode": "segv"}, what="selftest")
    assert info.value.signal == signal.SIGSEGV


def test_task_errors_are_reported():
    """An OSError inside the task comes back as a WorkerError with its message."""
    with pytest.raises(pagelab.WorkerError, match="failed on purpose"):
        call(SELFTEST, {"mode": "fail"})


def test_address_space_limit_is_enforced():
    """A task allocating far beyond its declared address space fails instead of growing."""
    with pytest.raises(pagelab.WorkerError, match="MemoryError"):
        call(SELFTEST, {"mode": "hold", "mib": 2048}, address_space=64 << 20)
    assert call(SELFTEST, {"mode": "hold", "mib": 64}, address_space=128 << 20)["mode"] == "hold"


def test_ctrl_c_stops_the_worker_and_frees_its_memory():
    """SIGINT to the caller kills the worker holding 256 MiB, promptly, with one clear line."""
    script = textwrap.dedent("""
        import sys
        from pagelab.native.worker import call
        def ready(msg):
            print(msg, flush=True)
        try:
            call("pagelab.native.worker:selftest", {"mode": "hold", "mib": 256, "seconds": 120},
                 on_progress=ready)
        except KeyboardInterrupt as e:
            print(f"{type(e).__name__}: {e}", flush=True)
            sys.exit(0)
        sys.exit(1)
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    line = caller.stdout.readline()
    worker = int(line.rsplit(" ", 1)[1])
    assert not gone(worker)
    t0 = time.monotonic()
    caller.send_signal(signal.SIGINT)
    out, _ = caller.communicate(timeout=20)
    assert time.monotonic() - t0 < 5
    assert caller.returncode == 0
    assert out.strip() == (
        f"Interrupted: stopped the pagelab.native.worker:selftest worker "
        f"(pid {worker}); its memory is freed"
    )
    assert gone(worker)


def test_worker_dies_with_its_caller():
    """If the caller is killed outright, the worker does not outlive it (PR_SET_PDEATHSIG)."""
    script = textwrap.dedent("""
        from pagelab.native.worker import call
        call("pagelab.native.worker:selftest", {"mode": "hold", "mib": 1, "seconds": 120},
             on_progress=lambda m: print(m, flush=True))
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker = int(caller.stdout.readline().rsplit(" ", 1)[1])
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 10
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(worker)


def reply_to(kc, msg_id):
    """The shell reply to one request (start-up may leave kernel_info replies queued)."""
    while True:
        msg = kc.get_shell_msg(timeout=20)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def test_interrupting_a_jupyter_kernel_keeps_it_alive():
    """Interrupting a notebook cell that runs a worker stops the worker; the kernel survives."""
    k = Kernel()
    try:
        msg_id = k.kc.execute(
            "from pagelab.native.worker import call\n"
            "call('pagelab.native.worker:selftest', {'mode': 'hold', 'mib': 128, 'seconds': 120},"
            " on_progress=print)"
        )
        worker = None
        deadline = time.monotonic() + 60
        while worker is None and time.monotonic() < deadline:
            msg = k.kc.get_iopub_msg(timeout=30)
            if msg["msg_type"] == "stream" and "holding" in msg["content"]["text"]:
                worker = int(msg["content"]["text"].split()[-1])
        assert worker and not gone(worker)
        k.km.interrupt_kernel()
        reply = reply_to(k.kc, msg_id)
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "Interrupted"
        assert gone(worker)
        assert k.alive()  # (a request that races the error reply is aborted by design: retried)
    finally:
        k.stop()
