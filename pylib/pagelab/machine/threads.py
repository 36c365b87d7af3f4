"""A running program's threads as the kernel and a debugger see them: the ebizzy write-up's lock
diagnosis. Each thread's state and wait channel (/proc/PID/task/TID/stat and wchan), its kernel
stack (/proc/PID/task/TID/stack, root only: the kernel's reason stands in elsewhere), and gdb's
backtrace of every thread, all taken while the program runs, bounded by a timeout.
"""

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from ..core.errors import BadInput

POLL_S = 0.01  # between looks for a waiting thread: each look is a few small /proc reads
GDB_TRIES = 3  # attaches at most: a thread waits a fraction of the time, gdb stops them all at once
GDB_S = 30  # gdb's own limit: attaching and reading a few threads' stacks takes about a second
GDB_THREAD = re.compile(r"^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)[^\n]*$", re.M)


@dataclass(frozen=True)
class Thread:
    """One thread as /proc shows it."""

    tid: int
    state: str  # the one-letter state of /proc/PID/task/TID/stat: R, S, D, ...
    wchan: str  # the kernel function it sleeps in; "" while it runs
    stack: tuple = ()  # its kernel frames, innermost first, offsets dropped
    stack_reason: str = ""  # why there is no stack ("" when it was read)

    def __str__(self):
        where = f"sleeps in {self.wchan}" if self.wchan else "not sleeping in the kernel"
        frames = " < ".join(self.stack) if self.stack else f"stack: {self.stack_reason}"
        return f"tid {self.tid}  state {self.state}  {where}\n    {frames}"


def _read(path):
    with open(path) as f:
        return f.read()


def read_thread(pid, tid):
    """Thread ``tid`` of ``pid`` from /proc; OSError when it is gone."""
    base = f"/proc/{pid}/task/{tid}"
    stat = _read(f"{base}/stat")
    state = stat[stat.rindex(")") + 2]  # the name in parentheses may hold spaces
    wchan = _read(f"{base}/wchan").strip()
    try:
        lines = _read(f"{base}/stack").splitlines()
        stack = tuple(line.split()[-1].split("+")[0] for line in lines if line.strip())
        reason = "" if stack else "empty (the thread is not in the kernel)"
    except OSError as e:  # EACCES without CAP_SYS_ADMIN; ENOENT without CONFIG_STACKTRACE
        stack, reason = (), f"{e.strerror} ({errno.errorcode.get(e.errno, e.errno)})"
    return Thread(tid, state, "" if wchan == "0" else wchan, stack, reason)


def threads(pid):
    """Every thread of ``pid`` still there, by tid ([] once the process is gone)."""
    out = []
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
            with contextlib.suppress(OSError):  # it exited between the listing and the read
                out.append(read_thread(pid, int(name)))
    return out


def gdb_backtraces(pid, timeout=GDB_S):
    """({tid: backtrace text}, reason): gdb attached to ``pid`` for ``thread apply all bt``.

    Attaching stops every thread for as long as gdb reads them; it detaches at the end."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return {}, "gdb is not installed (Debian: gdb)"
    command = [gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"]
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, f"gdb ran past {timeout} s"
    parts = GDB_THREAD.split(p.stdout)  # [before, tid, text, tid, text, ...]
    traces = {int(tid): text.strip() for tid, text in zip(parts[1::2], parts[2::2])}
    if not traces:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {}, f"gdb read no threads: {last}"
    return traces, ""


@dataclass
class Watch:
    """What watch_threads saw of one run of a command."""

    command: list
    output: str  # the command's standard output
    exit_status: int
    elapsed_s: float  # clock
    cpu_s: float  # user + system time of the command (rusage)
    voluntary_switches: int  # times a thread blocked (rusage nvcsw)
    seen: list = field(default_factory=list)  # the threads when one waited (or at the last look)
    backtraces: dict = field(default_factory=dict)  # {tid: gdb's backtrace}, from the last attach
    gdb_reason: str = ""

    def waiting(self, wchan):
        """The threads the program started (not its main thread, which may be joining them) seen
        sleeping in a kernel function whose name holds ``wchan``."""
        return [t for t in self.seen[1:] if wchan in t.wchan]


def watch_threads(command, env=None, wait_for="futex", after=0.5, gdb=True, timeout=60):
    """Run ``command`` (a list) with ``env`` added to this environment; from ``after`` seconds on,
    look at its threads until one sleeps in a kernel function named like ``wait_for`` (or the
    command ends), then attach gdb (``gdb``) until the backtrace of a thread other than the main
    one mentions ``wait_for``, at most GDB_TRIES times. Past ``timeout`` s the command is killed and
    TimeoutError raised."""
    if not isinstance(command, (list, tuple)) or not command:
        raise BadInput("watch_threads needs a command as a non-empty list of strings")
    if not all(isinstance(a, str) for a in command) or shutil.which(command[0]) is None:
        raise BadInput(f"not a command that can run: {command!r}")
    if not isinstance(after, (int, float)) or not 0 <= after < timeout:
        raise BadInput(f"after must be at least 0 s and below the timeout ({timeout} s)")
    seen, traces, reason = [], {}, "the command ended before gdb attached" if gdb else ""
    with tempfile.TemporaryFile(mode="w+") as out:
        start = time.monotonic()
        proc = subprocess.Popen(
            list(command), stdout=out, env={**os.environ, **(env or {})}, start_new_session=True
        )
        try:
            ended = _ended(proc.pid, start + after)
            while not ended and time.monotonic() - start < timeout:
                seen = threads(proc.pid) or seen
                if any(wait_for in t.wchan for t in seen):
                    break
                ended = _ended(proc.pid, time.monotonic() + POLL_S)
            for _ in range(GDB_TRIES if gdb else 0):  # until a started thread waits in it
                if ended or any(wait_for in t for tid, t in traces.items() if tid != proc.pid):
                    break
                traces, reason = gdb_backtraces(proc.pid, min(GDB_S, timeout))
                if reason:
                    break
                ended = _ended(proc.pid, time.monotonic())
            ended = ended or _ended(proc.pid, start + timeout)
            if not ended:
                raise TimeoutError(f"{command[0]} ran past {timeout} s and was killed")
        except BaseException:  # a timeout or an interrupt: the command goes, with its threads
            os.killpg(proc.pid, signal.SIGKILL)
            os.waitpid(proc.pid, 0)
            raise
        finally:
            proc.returncode = -1  # reaped here, by wait4: Popen must not wait for it again
        status, usage = ended
        out.seek(0)
        output = out.read()
    return Watch(
        list(command),
        output,
        os.waitstatus_to_exitcode(status),
        time.monotonic() - start,
        usage.ru_utime + usage.ru_stime,
        usage.ru_nvcsw,
        seen,
        traces,
        reason,
    )


def _ended(pid, until):
    """(wait status, rusage) once ``pid`` has ended, looking until ``until`` (monotonic); None
    while it still runs."""
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage
        if time.monotonic() >= until:
            return None
        time.sleep(min(POLL_S, max(0.0, until - time.monotonic())))
