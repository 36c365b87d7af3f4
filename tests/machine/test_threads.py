"""pagelab.watch_threads: a running program's threads from /proc and gdb, on real programs."""

import os
import shutil
import sys
import time

import pytest

from pagelab import BadInput, watch_threads
from pagelab.machine.threads import threads

# A thread that blocks on a lock its main thread holds, for as long as the program runs.
WAITER = (
    "import threading, time\n"
    "lock = threading.Lock(); lock.acquire()\n"
    "threading.Thread(target=lock.acquire, daemon=True).start()\n"
    "print('started', flush=True); time.sleep(2)\n"
)


@pytest.fixture(scope="module")
def watched():
    """One run of the waiting program, watched with gdb."""
    return watch_threads([sys.executable, "-c", WAITER], after=0.3, timeout=30)


def test_a_thread_blocked_on_a_lock_sleeps_in_the_futex_wait(watched):
    """The second thread is seen asleep (state S) in the kernel's futex wait, by its wchan."""
    waiting = watched.waiting("futex")
    assert waiting, [str(t) for t in watched.seen]
    assert all(t.state == "S" for t in waiting)
    assert watched.exit_status == 0 and watched.output == "started\n"
    assert watched.elapsed_s >= 2 and watched.voluntary_switches >= 1


def test_the_kernel_stack_or_its_reason(watched):
    """Root reads the waiting thread's kernel stack (futex frames); anyone else gets a reason."""
    thread = watched.waiting("futex")[0]
    if os.geteuid() == 0:
        assert any("futex" in frame for frame in thread.stack), thread.stack
        assert "futex" in str(thread)
    else:
        assert not thread.stack and thread.stack_reason


def test_gdb_reads_every_thread_or_says_why(watched):
    """gdb's backtraces cover the program's threads by tid, or the run says why there are none."""
    if shutil.which("gdb") is None:
        assert watched.gdb_reason == "gdb is not installed (Debian: gdb)"
        return
    if os.geteuid() != 0:
        pytest.skip("gdb attaches to a non-child only as root here (ptrace_scope)")
    assert not watched.gdb_reason, watched.gdb_reason
    tids = {t.tid for t in watched.seen}
    assert tids <= set(watched.backtraces), (tids, list(watched.backtraces))
    assert all(text.startswith("#0") for text in watched.backtraces.values())


def test_a_program_past_its_timeout_is_killed():
    """Past the timeout the program and its process group are killed, and TimeoutError raised."""
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="ran past 1 s"):
        watch_threads(["sleep", "30"], after=0, gdb=False, timeout=1)
    assert time.monotonic() - start < 10


def test_threads_of_a_gone_process_is_empty():
    """Reading the threads of a process that no longer exists gives no threads, not an error."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert threads(pid) == []


@pytest.mark.parametrize(
    "command, after",
    [([], 0.1), ("sleep", 0.1), (["no-such-command-here"], 0.1), (["sleep", "1"], 99)],
)
def test_bad_input_is_refused_before_anything_runs(command, after):
    """An empty, non-list or missing command, or a look later than the timeout, is BadInput."""
    with pytest.raises(BadInput):
        watch_threads(command, after=after, timeout=5)
