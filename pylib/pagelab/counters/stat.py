"""`pagelab stat`: count events for a child command, like perf stat, with labelled fallbacks."""

import os
import shutil
import signal
import time
from dataclasses import dataclass

from .._native import ffi, lib
from .._version import __version__
from ..core.errors import BadInput
from ..core.reading import Reading
from ..machine import pmus as _pmus
from . import rusage as _rusage
from .doctor import environment
from .events import events as parse_events
from .group import CounterGroup, add_fallbacks, readings, rusage_readings


@dataclass
class StatResult:
    command: list
    exit_status: int  # as shells report it: 128 + N when signal N killed the command
    counters: list
    rusage: list
    elapsed: Reading
    signal: str | None = None  # e.g. "SIGSEGV" when a signal killed the command

    def to_dict(self):
        return {
            "experiment": "stat",
            "version": __version__,
            "params": {"command": self.command, "events": [r.name for r in self.counters]},
            "environment": environment(),
            "measurements": [
                {
                    "label": "command",
                    "metrics": {
                        r.name: r.to_dict() for r in self.counters + self.rusage + [self.elapsed]
                    },
                }
            ],
            "exit_status": self.exit_status,
            **({"signal": self.signal} if self.signal else {}),
        }

    def __str__(self):
        lines = [f" Performance counter stats for '{' '.join(self.command)}':", ""]
        if self.signal:
            lines[1:1] = [f" (killed by {self.signal}: exit status {self.exit_status})"]
        for r in self.counters:
            if r.value is None:
                lines.append(f"  {'<not available>':>20}  {r.name:<24} {r.reason}")
                if r.fallback:
                    fb = r.fallback
                    lines.append(f"  {fb.value:>20,}  {'':<24} {fb.source}: {fb.name} stands in")
                continue
            notes = [r.source] + ["scaled"] * r.scaled + ["user-space only"] * r.kernel_excluded
            value = f"{r.value / 1e6:,.2f} msec" if r.unit == "ns" else f"{r.value:,}"
            lines.append(f"  {value:>20}  {r.name:<24} {', '.join(notes)}")
            # perf stat's hybrid style: each core type's share on a line of its own
            for pmu, share in (r.parts or {}).items():
                lines.append(f"  {share:>20,}  {'':<24} {pmu}")
            if r.note:
                lines.append(f"  {'':>20}  {'':<24} {r.note}")
        usage = {r.name: r.value for r in self.rusage}
        lines += [
            "",
            f"  {self.elapsed.value:>20.6f}  seconds time elapsed (clock)",
            f"  {usage['utime']:>20.6f}  seconds user (rusage)",
            f"  {usage['stime']:>20.6f}  seconds sys (rusage)",
            "  rusage: "
            + "  ".join(
                f"{k} {usage[k]:,}"
                for k in ("minflt", "majflt", "inblock", "oublock", "nvcsw", "nivcsw")
            ),
            f"          maxrss {usage['maxrss']:,} KiB",
        ]
        return "\n".join(lines)


def stat(command, events=None, stdout=None, cpu_type=None):
    """Run ``command`` (a list: program and arguments) and count ``events`` over its lifetime.

    ``cpu_type`` (a core PMU's name, on a hybrid or big.LITTLE machine) runs the command on that
    core type's CPUs only and counts that PMU's part only.

    Counting starts at its exec (enable_on_exec) and follows its threads and children (inherit).
    ``stdout``: a file descriptor for the child's standard output (default: inherited).
    """
    if (
        not isinstance(command, (list, tuple))
        or not command
        or not all(isinstance(a, str) for a in command)
    ):
        raise BadInput("stat needs a command as a non-empty list of strings")
    if any("\0" in a for a in command):
        raise BadInput("a command argument cannot contain a NUL character")
    if stdout is not None and (isinstance(stdout, bool) or not isinstance(stdout, int)):
        raise BadInput(f"stdout must be a file descriptor (an int), not {type(stdout).__name__}")
    path = shutil.which(command[0])
    if path is None:
        raise BadInput(f"command not found: {command[0]}")
    group_events = parse_events(events)  # bad names fail before anything is spawned
    cpus = _pmus.host_cpus(cpu_type) if cpu_type is not None else None  # and bad core types

    argv_keep = [ffi.new("char[]", a.encode()) for a in command]
    argv = ffi.new("char *[]", argv_keep + [ffi.NULL])
    gate, status = ffi.new("int *"), ffi.new("int *")
    pid = lib.pl_spawn_gated(path.encode(), argv, gate, status, -1 if stdout is None else stdout)
    if pid < 0:
        raise OSError(-pid, f"cannot start {command[0]}: {os.strerror(-pid)}")
    try:
        if cpus is not None:
            os.sched_setaffinity(pid, cpus)  # before exec: the command starts there
        group = CounterGroup(
            group_events, pid, inherit=True, enable_on_exec=True, cpu_type=cpu_type
        )
    except BaseException:
        os.close(gate[0])  # the child sees EOF at its gate and exits without exec
        os.close(status[0])
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    with group:
        before = group.read() if group.opened else None
        t0 = time.perf_counter_ns()
        err = lib.pl_spawn_release(gate[0], status[0])
        try:
            _, wstatus, ru = os.wait4(pid, 0)
        except KeyboardInterrupt:
            # the child normally got the same SIGINT from the terminal; make sure it is gone
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        t1 = time.perf_counter_ns()
        after = group.read() if group.opened else None
    if err:
        raise BadInput(f"cannot run {command[0]}: {os.strerror(err)}")
    usage = _rusage.as_dict(ru)
    counters = add_fallbacks(readings(group.status, before, after), usage)
    code = os.waitstatus_to_exitcode(wstatus)
    return StatResult(
        list(command),
        128 - code if code < 0 else code,
        counters,
        rusage_readings(usage),
        Reading("elapsed", (t1 - t0) / 1e9, "clock", "s"),
        signal.Signals(-code).name if code < 0 else None,
    )
