"""Worker processes: risky work runs in a fresh interpreter with a timeout and an address-space
limit, returning JSON over a pipe (the pyperf pattern). Whatever way a worker ends (its task
returned or failed, it crashed, it ran out of time, the caller was interrupted or died), its whole
process group is killed, so its memory is freed, nothing it started lives on, and the notebook
kernel survives.

The worker is ``python -I`` (isolated: nothing is imported from the working directory, PYTHON*
variables are ignored) started by csrc/proc/worker.c, which arms the death signal before exec. Its
environment is a whitelist (``environment``). It reads one request on stdin, calls
``module:function(**args)`` and writes JSON lines on fd 3: ``{"progress": text}`` any number of
times, then ``{"ok": true, "result": ...}`` or ``{"ok": false, ...}``.
"""

import contextlib
import importlib
import json
import os
import queue
import resource
import selectors
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from pathlib import Path

from ..core.errors import BadInput, PagelabError, os_error_line
from ..core.numbers import quote

RESULT_FD = 3
# Room above a task's own declared address-space need: the interpreter's later allocations,
# thread stacks of the runtime, and glibc arenas.
ADDRESS_SPACE_SLACK = 512 << 20
DEFAULT_TIMEOUT = 120.0
# Once a worker has exited, how long its pipes may stay open (held by a process that left its
# group) before the caller stops reading them.
ENDED_GRACE_S = 1.0
# What a worker inherits: enough to find programs, the locale, and pagelab's own settings (its
# scratch directory is chosen before it starts: pagelab.native.scratch). Allocator and loader tuning
# (MALLOC_*, GLIBC_TUNABLES, LD_PRELOAD) would change what a workload measures, so it passes
# only when named (``pass_env`` or $PAGELAB_PASS_ENV).
ENV_KEEP = ("PATH", "HOME", "LANG", "LANGUAGE")
ENV_PREFIXES = ("LC_", "PAGELAB_")
PASS_ENV = "PAGELAB_PASS_ENV"  # comma-separated names of further variables to pass
TRACEBACK_LINES = 8  # of a task's unexpected exception, sent back with its one-line message
# The package's parent directory goes last on the worker's path: the worker runs this pagelab
# even from a source tree, and nothing there can shadow the standard library.
_BOOT = (
    "import sys; p = {!r}; p in sys.path or sys.path.append(p); "
    "from pagelab.native.worker import _main; _main()"
)
_spawner = None  # the thread that forks workers for other threads (see _on_lasting_thread)
_spawn_requests = queue.SimpleQueue()
_spawner_lock = threading.Lock()


class WorkerError(PagelabError):
    """The worker could not complete its task; the message says why in one sentence.
    ``traceback`` holds the tail of the task's traceback when it failed unexpectedly."""

    def __init__(self, message, traceback=""):
        super().__init__(message)
        self.traceback = traceback

    def _render_traceback_(self):
        return super()._render_traceback_() + self.traceback.splitlines()


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


def environment(pass_env=()):
    """The environment a worker gets: the whitelist, plus the variables named in ``pass_env``
    and in $PAGELAB_PASS_ENV that are set here."""
    named = set(pass_env) | {n.strip() for n in os.environ.get(PASS_ENV, "").split(",")}
    return {
        k: v
        for k, v in os.environ.items()
        if k in ENV_KEEP or k.startswith(ENV_PREFIXES) or k in named
    }


def call(
    target,
    args,
    *,
    timeout=DEFAULT_TIMEOUT,
    address_space=None,
    what=None,
    on_progress=None,
    pass_env=(),
):
    """Run ``target`` ("module:function") with keyword ``args`` in a fresh worker process.

    ``address_space``: bytes of address space the task needs beyond the interpreter's own;
    the worker's RLIMIT_AS is set to that plus ADDRESS_SPACE_SLACK. ``pass_env``: names of
    environment variables to pass beyond the whitelist. Returns the task's result.
    """
    check_timeout(timeout)
    what = what or target
    request = json.dumps({"target": target, "args": args, "address_space": address_space})
    proc, output_fd, result_fd = _start(environment(pass_env), request.encode())
    output = deque(maxlen=20)  # the last lines the worker printed, for error messages
    messages = []
    try:
        _collect(proc, result_fd, output_fd, timeout, output, messages, on_progress, what)
    except KeyboardInterrupt:
        proc.kill()
        raise Interrupted(
            f"stopped the {what} worker (pid {proc.pid}); its memory is freed"
        ) from None
    finally:
        proc.kill()
        os.close(result_fd)
        os.close(output_fd)
    final = next((m for m in reversed(messages) if "ok" in m), None)
    if proc.returncode < 0:
        sig = -proc.returncode
        last = f" (its last output: {output[-1]})" if output else ""
        raise WorkerDied(f"the {what} worker died with {signal.Signals(sig).name}{last}", sig)
    if final is None:
        tail = f": {output[-1]}" if output else ""
        raise WorkerError(
            f"the {what} worker exited with status {proc.returncode} without a result{tail}"
        )
    if not final["ok"]:
        if final["error"] == "BadInput":
            raise BadInput(final["message"])
        if "traceback" in final:
            raise WorkerError(f"the {what} task raised {final['message']}", final["traceback"])
        raise WorkerError(final["message"])
    return final["result"]


def check_timeout(timeout):
    """BadInput unless ``timeout`` is a positive, finite number of seconds."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout < float("inf")
    ):
        raise BadInput(f"timeout must be a positive number of seconds, not {quote(timeout)}")


class _Child:
    """A started worker: its pid and, once it has exited, its exit code (negative: the signal).

    The worker leads a process group of its own (csrc/proc/worker.c). It stays unreaped, a zombie,
    until ``kill()``: its pid, which names the group, cannot be reused by another process while
    ``kill()`` signals what is left of the group."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None
        self._reaped = False

    def exited(self):
        """Whether the worker has exited (its returncode is then known; it is not reaped)."""
        if self.returncode is None:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its status is lost
                info, self.returncode, self._reaped = None, 0, True
            if info is not None:
                exited = info.si_code == os.CLD_EXITED
                self.returncode = info.si_status if exited else -info.si_status
        return self.returncode is not None

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.exited():
            if time.monotonic() > deadline:
                raise TimeoutError
            time.sleep(0.01)

    def kill(self):
        """SIGKILL the worker's whole process group, on every path: whatever the worker left
        running dies with it, even after the worker itself has exited; then reap the worker."""
        if self._reaped:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): its status is lost
            self.returncode = 0 if self.returncode is None else self.returncode
        self._reaped = True


def kill_left_running(patience=1.0):
    """From inside a worker: SIGKILL every other process of its process group, what its task
    started and left running, wait (up to ``patience`` s) until they are dead and reap them
    (the worker is their subreaper); returns how many there were. The caller's kill() gets any
    that outlast the wait."""
    me, group = os.getpid(), os.getpgrp()
    killed = set()
    deadline = time.monotonic() + patience
    while left := [p for p in _group_members(group) if p != me]:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed.update(left)
        if time.monotonic() > deadline:
            break
        time.sleep(0.005)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    return len(killed)


def _group_members(group):
    """The live (not zombie) processes of process group ``group``, from /proc."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # ended while we looked
        # after the command: state, ppid, pgrp
        if int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            out.append(int(entry.name))
    return out


def _start(env, request):
    """Start a worker with ``request`` queued on its stdin: (_Child, output fd, result fd)."""
    if not sys.executable:
        raise WorkerError("cannot start a worker: this Python does not know its own executable")
    package_parent = str(Path(__file__).resolve().parents[2])
    argv = [sys.executable, "-I", "-c", _BOOT.format(package_parent)]
    opened = []
    try:
        for _ in range(3):
            opened += os.pipe()
        stdin_r, stdin_w, out_r, out_w, res_r, res_w = opened
        pid = _on_lasting_thread(_spawn, argv, env, (stdin_r, out_w, out_w, res_w))
    except BaseException as e:
        for fd in opened:
            os.close(fd)
        if isinstance(e, OSError) and len(opened) < 6:
            raise OSError(e.errno, f"cannot start a worker: {e.strerror}") from None
        raise
    for fd in (stdin_r, out_w, res_w):
        os.close(fd)
    proc = _Child(pid)
    try:  # a request larger than the pipe buffer would block here; ours are small
        with os.fdopen(stdin_w, "wb") as f:
            f.write(request)
    except BrokenPipeError:
        pass  # the worker died at once; its status says why
    except BaseException:
        proc.kill()
        os.close(out_r)
        os.close(res_r)
        raise
    return proc, out_r, res_r


def _spawn(argv, env, fds):
    from .._native import ffi, lib

    keep = [ffi.new("char[]", a.encode()) for a in argv]
    env_keep = [ffi.new("char[]", f"{k}={v}".encode()) for k, v in env.items()]
    pid = lib.pl_worker_spawn(
        keep[0],
        ffi.new("char *[]", keep + [ffi.NULL]),
        ffi.new("char *[]", env_keep + [ffi.NULL]),
        ffi.new("int[4]", fds),
        os.getpid(),
    )
    if pid < 0:
        raise OSError(-pid, f"cannot start a worker ({argv[0]}): {os.strerror(-pid)}")
    return pid


def _on_lasting_thread(fn, *args):
    """Run ``fn`` on the main thread, or on one spawner thread that lives as long as the process.

    PR_SET_PDEATHSIG fires when the thread that forked the worker exits, not the process: a
    worker forked by a short-lived thread (a widget's) would be killed when that thread ends.
    """
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return fn(*args)
    with _spawner_lock:
        if _spawner is None:  # a daemon: it still serves threads the interpreter waits for
            _spawner = threading.Thread(target=_serve, name="pagelab-spawner", daemon=True)
            _spawner.start()
    done, box = threading.Event(), []
    _spawn_requests.put((fn, args, box, done))
    done.wait()
    ok, value = box[0]
    if not ok:
        raise value
    return value


def _serve():
    while True:
        fn, args, box, done = _spawn_requests.get()
        try:
            box.append((True, fn(*args)))
        except BaseException as e:
            box.append((False, e))
        done.set()


def _collect(proc, result_fd, output_fd, timeout, output, messages, on_progress, what):
    # closed on every exit: a timeout's traceback would otherwise keep the epoll fd alive
    with selectors.DefaultSelector() as sel:
        sel.register(result_fd, selectors.EVENT_READ, "result")
        sel.register(output_fd, selectors.EVENT_READ, "output")
        _pump(sel, proc, timeout, output, messages, on_progress, what)


def _pump(sel, proc, timeout, output, messages, on_progress, what):
    deadline = time.monotonic() + timeout
    buffers = {"result": b"", "output": b""}
    open_streams = 2
    ended = None  # when the worker was seen to have exited
    while open_streams:
        now = time.monotonic()
        if ended is None and proc.exited():
            proc.kill()  # what it left running may hold the pipes open: its group dies now
            ended = now
        if ended is None and now >= deadline:
            raise WorkerTimeout(
                f"the {what} worker did not finish within {timeout:g} s and was stopped"
            )
        if ended is not None and now - ended > ENDED_GRACE_S:
            break  # a process outside its group holds the pipes; the worker's answer is in
        wait = deadline - now if ended is None else ENDED_GRACE_S - (now - ended)
        for key, _ in sel.select(timeout=min(wait, 0.5)):
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
        proc.wait(max(1.0, deadline - time.monotonic()))
    except TimeoutError:
        raise WorkerTimeout(
            f"the {what} worker closed its output but did not exit within "
            f"{timeout:g} s and was stopped"
        ) from None


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
    from .._native import lib

    if (err := lib.pl_worker_guard()) < 0:  # the caller's death now ends the whole group
        raise OSError(-err, f"pl_worker_guard: {os.strerror(-err)}")
    _result_file = os.fdopen(RESULT_FD, "w")
    req = json.loads(sys.stdin.read())
    try:
        module, func = req["target"].split(":")
        fn = getattr(importlib.import_module(module), func)
        if req.get("address_space") is not None:
            _limit_address_space(req["address_space"])
        _send({"ok": True, "result": fn(**req["args"])})
    except BadInput as e:
        _send({"ok": False, "error": "BadInput", "message": str(e)})
    except OSError as e:
        _send({"ok": False, "error": type(e).__name__, "message": os_error_line(e)})
    except (PagelabError, MemoryError) as e:
        _send({"ok": False, "error": type(e).__name__, "message": str(e) or type(e).__name__})
    except Exception as e:  # a bug: one line to read, and the end of its traceback
        lines = traceback.format_exception(type(e), e, e.__traceback__)
        first = (str(e).splitlines() or [""])[0]
        _send(
            {
                "ok": False,
                "error": type(e).__name__,
                "message": f"{type(e).__name__}: {first}" if first else type(e).__name__,
                "traceback": "\n".join("".join(lines).rstrip().splitlines()[-TRACEBACK_LINES:]),
            }
        )


def selftest(mode, seconds=0.0, mib=0):
    """Tiny tasks that exercise the worker itself (used by the tests): echo, hold memory for a
    while, crash with SIGSEGV, fail, hit a bug, or show its environment and import path."""
    if mode == "hold":
        block = bytearray(mib << 20)  # zero-filled: really touches the memory
        progress(f"holding {len(block) >> 20} MiB in pid {os.getpid()}")
        time.sleep(seconds)
    elif mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "fail":
        raise OSError(5, "the task failed on purpose")
    elif mode == "bug":
        return {}["no such key"]
    elif mode == "env":
        return {"environ": dict(os.environ), "path": sys.path, "flags": sys.flags.isolated}
    return {"mode": mode, "pid": os.getpid()}


# ---- a call in the background ------------------------------------------------------------


class Background:
    """Work (a callable) on a daemon thread: ``done()``; ``result()`` waits and returns or
    raises what the work did (Ctrl-C while waiting calls ``cancel()``); ``cancel()`` keeps
    calling the subclass's ``_stop()`` until the work has ended."""

    def __init__(self, work):
        self._cancelled = False
        self._outcome = None  # (True, result) or (False, exception)
        # an Event, not Thread.join: a join interrupted by Ctrl-C can mark a live thread done
        self._finished = threading.Event()
        threading.Thread(target=self._run, args=(work,), daemon=True).start()

    def _run(self, work):
        try:
            self._outcome = (True, work())
        except BaseException as e:  # handed to whoever waits in result()
            self._outcome = (False, self._failure(e))
        finally:
            self._ended()
            self._finished.set()

    def _failure(self, error):
        return error

    def _ended(self):
        pass

    def _stop(self):
        raise NotImplementedError

    def done(self):
        return self._finished.is_set()

    def cancel(self):
        self._cancelled = True
        while not self.done():
            self._stop()
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


class Job(Background):
    """``call`` running in a background thread, so the caller stays responsive (e.g. while a
    LiveCounters widget watches the worker). ``pid`` is the worker's once its task has started,
    else None; ``result()`` waits and returns or raises what ``call`` would; Ctrl-C while waiting,
    or ``cancel()``, kills the worker and its process group."""

    def __init__(self, target, args, **kwargs):
        fd, self._pid_path = tempfile.mkstemp(prefix="pagelab-job-", suffix=".json")
        os.close(fd)
        self._pid = None
        self._what = kwargs.get("what") or target
        wrapped = {"target": target, "args": args, "pid_path": self._pid_path}
        super().__init__(lambda: call("pagelab.native.worker:announced", wrapped, **kwargs))

    def _failure(self, error):
        if self._cancelled:
            return Interrupted(f"stopped the {self._what} worker; its memory is freed")
        return error

    def _ended(self):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._pid_path)

    @property
    def pid(self):
        if self._pid is None and not self.done():
            with contextlib.suppress(FileNotFoundError, ValueError), open(self._pid_path) as f:
                self._pid = json.load(f)["pid"]
        return self._pid

    def _stop(self):
        """Kill the worker (waiting for it to announce itself if it has not yet)."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)


def announced(target, args, pid_path):
    """Worker side of Job: write this worker's pid (a typed record, atomically), then run."""
    tmp = f"{pid_path}.tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.replace(tmp, pid_path)
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)(**args)


if __name__ == "__main__":
    # run as `python -m`, this file is __main__; tasks import pagelab.native.worker, whose globals
    # (the result pipe) must be the ones set up here
    from pagelab.native.worker import _main as main

    main()
