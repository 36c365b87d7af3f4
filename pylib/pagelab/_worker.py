"""Worker processes: risky work runs in a fresh interpreter with a timeout and an address-space
limit, returning JSON over a pipe (the pyperf pattern). Interrupting the caller kills the worker
and its whole process group, so its memory is freed and the notebook kernel survives.

The worker side is ``python -m pagelab._worker``: it reads one request on stdin, calls
``module:function(**args)`` and writes JSON lines on the result pipe: ``{"progress": text}``
any number of times, then ``{"ok": true, "result": ...}`` or ``{"ok": false, ...}``.
"""

import contextlib
import importlib
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque

from ._errors import BadInput, PagelabError

RESULT_FD_ENV = "PAGELAB_RESULT_FD"
# Room above a task's own declared address-space need: the interpreter's later allocations,
# thread stacks of the runtime, and glibc arenas.
ADDRESS_SPACE_SLACK = 512 << 20
DEFAULT_TIMEOUT = 120.0


class WorkerError(PagelabError):
    """The worker could not complete its task; the message says why in one sentence."""


class WorkerTimeout(WorkerError):
    pass


class WorkerDied(WorkerError):
    """The worker was killed by a signal; ``signal`` is its number."""

    def __init__(self, message, signum):
        super().__init__(message)
        self.signal = signum


class Interrupted(KeyboardInterrupt):
    """Ctrl-C / kernel interrupt: the worker was stopped and its memory freed."""

    def _render_traceback_(self):  # IPython shows this one line instead of a traceback
        return [f"Interrupted: {self}"]


def call(target, args, *, timeout=DEFAULT_TIMEOUT, address_space=None, what=None, on_progress=None):
    """Run ``target`` ("module:function") with keyword ``args`` in a fresh worker process.

    ``address_space``: bytes of address space the task needs beyond the interpreter's own;
    the worker's RLIMIT_AS is set to that plus ADDRESS_SPACE_SLACK. Returns the task's result.
    """
    what = what or target
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, **{RESULT_FD_ENV: str(write_fd)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "pagelab._worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(write_fd,),
        env=env,
        start_new_session=True,
    )  # its own group: Ctrl-C reaches us, and killpg reaches it all
    os.close(write_fd)
    output = deque(maxlen=20)  # the last lines the worker printed, for error messages
    messages = []
    try:
        proc.stdin.write(
            json.dumps({"target": target, "args": args, "address_space": address_space}).encode()
        )
        proc.stdin.close()
        _collect(proc, read_fd, timeout, output, messages, on_progress, what)
    except KeyboardInterrupt:
        _kill(proc)
        raise Interrupted(
            f"stopped the {what} worker (pid {proc.pid}); its memory is freed"
        ) from None
    finally:
        _kill(proc)
        os.close(read_fd)
    final = next((m for m in reversed(messages) if "ok" in m), None)
    if proc.returncode < 0:
        sig = -proc.returncode
        raise WorkerDied(
            f"the {what} worker died with {signal.Signals(sig).name}"
            + (f" ({output[-1]})" if output else ""),
            sig,
        )
    if final is None:
        tail = f": {output[-1]}" if output else ""
        raise WorkerError(
            f"the {what} worker exited with status {proc.returncode} without a result{tail}"
        )
    if not final["ok"]:
        cls = BadInput if final["error"] == "BadInput" else WorkerError
        raise cls(final["message"])
    return final["result"]


def _collect(proc, read_fd, timeout, output, messages, on_progress, what):
    # closed on every exit: a timeout's traceback would otherwise keep the epoll fd alive
    with selectors.DefaultSelector() as sel:
        _pump(sel, proc, read_fd, timeout, output, messages, on_progress, what)


def _pump(sel, proc, read_fd, timeout, output, messages, on_progress, what):
    deadline = time.monotonic() + timeout
    sel.register(read_fd, selectors.EVENT_READ, "result")
    sel.register(proc.stdout, selectors.EVENT_READ, "output")
    buffers = {"result": b"", "output": b""}
    open_streams = 2
    while open_streams:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WorkerTimeout(
                f"the {what} worker did not finish within {timeout:g} s and was stopped"
            )
        for key, _ in sel.select(timeout=min(left, 0.5)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                chunk = b"\n"  # flush a last unterminated line
            buffers[key.data] += chunk
            *lines, buffers[key.data] = buffers[key.data].split(b"\n")
            for line in filter(None, lines):
                if key.data == "output":
                    output.append(line.decode(errors="replace"))
                    continue
                msg = json.loads(line)
                messages.append(msg)
                if "progress" in msg and on_progress:
                    on_progress(msg["progress"])
    try:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise WorkerTimeout(
            f"the {what} worker closed its output but did not exit within "
            f"{timeout:g} s and was stopped"
        ) from None


def _kill(proc):
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream and not stream.closed:
            stream.close()


# ---- worker side -------------------------------------------------------------------------

_result_file = None


def progress(text):
    """From inside a task: tell the caller how far the work has got."""
    if _result_file:
        _send({"progress": str(text)})


def _send(msg):
    _result_file.write(json.dumps(msg) + "\n")
    _result_file.flush()


def _limit_address_space(extra):
    with open("/proc/self/status") as f:
        vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = vm + extra + ADDRESS_SPACE_SLACK
    if soft == resource.RLIM_INFINITY or want < soft:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def _main():
    global _result_file
    from ._native import lib

    _result_file = os.fdopen(int(os.environ.pop(RESULT_FD_ENV)), "w")
    if lib.pl_worker_init() != 0:
        sys.exit(1)  # the caller is already gone
    req = json.loads(sys.stdin.read())
    try:
        module, func = req["target"].split(":")
        fn = getattr(importlib.import_module(module), func)
        if req.get("address_space") is not None:
            _limit_address_space(req["address_space"])
        _send({"ok": True, "result": fn(**req["args"])})
    except BadInput as e:
        _send({"ok": False, "error": "BadInput", "message": str(e)})
    except (PagelabError, OSError, MemoryError) as e:
        _send({"ok": False, "error": type(e).__name__, "message": str(e) or type(e).__name__})


def selftest(mode, seconds=0.0, mib=0):
    """Tiny tasks that exercise the worker itself (used by the tests): echo, hold memory for a
    while, crash with SIGSEGV, or fail."""
    if mode == "hold":
        block = bytearray(mib << 20)  # zero-filled: really touches the memory
        progress(f"holding {len(block) >> 20} MiB in pid {os.getpid()}")
        time.sleep(seconds)
    elif mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "fail":
        raise OSError(5, "the task failed on purpose")
    return {"mode": mode, "pid": os.getpid()}


# ---- a call in the background ------------------------------------------------------------


class Job:
    """``call`` running in a background thread, so the caller stays responsive (e.g. while a
    LiveCounters widget watches the worker). ``pid`` is the worker's once its task has started,
    else None; ``result()`` waits and returns or raises what ``call`` would; Ctrl-C while waiting,
    or ``cancel()``, kills the worker and its process group."""

    def __init__(self, target, args, **kwargs):
        fd, self._pid_path = tempfile.mkstemp(prefix="pagelab-job-", suffix=".json")
        os.close(fd)
        self._pid = None
        self._cancelled = False
        self._outcome = None  # (True, result) or (False, exception)
        # an Event, not Thread.join: a join interrupted by Ctrl-C can mark a live thread done
        self._finished = threading.Event()
        wrapped = {"target": target, "args": args, "pid_path": self._pid_path}
        threading.Thread(
            target=self._run, args=("pagelab._worker:announced", wrapped, kwargs), daemon=True
        ).start()

    def _run(self, target, args, kwargs):
        try:
            self._outcome = (True, call(target, args, **kwargs))
        except BaseException as e:  # handed to whoever waits in result()
            what = kwargs.get("what") or args["target"]
            stopped = Interrupted(f"stopped the {what} worker; its memory is freed")
            self._outcome = (False, stopped if self._cancelled else e)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._pid_path)
            self._finished.set()

    @property
    def pid(self):
        if self._pid is None and not self.done():
            with contextlib.suppress(FileNotFoundError, ValueError), open(self._pid_path) as f:
                self._pid = json.load(f)["pid"]
        return self._pid

    def done(self):
        return self._finished.is_set()

    def cancel(self):
        """Kill the worker (waiting for it to announce itself if it has not yet)."""
        self._cancelled = True
        while not self.done():
            if self.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
            self._finished.wait(0.05)

    def result(self):
        try:
            while not self.done():
                self._finished.wait(0.1)
        except KeyboardInterrupt:
            self.cancel()
        ok, value = self._outcome
        if ok:
            return value
        raise value


def announced(target, args, pid_path):
    """Worker side of Job: write this worker's pid (a typed record, atomically), then run."""
    tmp = f"{pid_path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.replace(tmp, pid_path)
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)(**args)


if __name__ == "__main__":
    # run as `python -m`, this file is __main__; tasks import pagelab._worker, whose globals
    # (the result pipe) must be the ones set up here
    from pagelab._worker import _main as main

    main()
