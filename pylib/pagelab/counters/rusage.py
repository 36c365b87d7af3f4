"""Fallback sources: getrusage / wait4 rusage and /proc/PID/stat, always labelled 'rusage'."""

import os
import resource
from pathlib import Path

from ..core.errors import BadInput

# name -> unit; the order is the order shown to users
FIELDS = {
    "utime": "s",
    "stime": "s",
    "maxrss": "KiB",
    "minflt": "",
    "majflt": "",
    "inblock": "",
    "oublock": "",
    "nvcsw": "",
    "nivcsw": "",
}

# What stands in for a software event when perf_event_open cannot count it.
SW_FALLBACK = {
    "page-faults": ("minflt", "majflt"),
    "minor-faults": ("minflt",),
    "major-faults": ("majflt",),
    "context-switches": ("nvcsw", "nivcsw"),
}


def as_dict(ru):
    """Plain numbers from a resource.struct_rusage or a cffi ``struct rusage``."""

    def seconds(tv):
        return tv if isinstance(tv, float) else tv.tv_sec + tv.tv_usec / 1e6

    out = {"utime": seconds(ru.ru_utime), "stime": seconds(ru.ru_stime)}
    out.update({f: int(getattr(ru, "ru_" + f)) for f in FIELDS if f not in out})
    return out


def self_now():
    return as_dict(resource.getrusage(resource.RUSAGE_SELF))


def delta(before, after):
    """after - before for every field; maxrss is a high-water mark, so it is taken as is."""
    return {f: after[f] if f == "maxrss" else after[f] - before[f] for f in FIELDS}


def _proc_file(pid, name, root):
    """The text of /proc/PID/NAME under root (BadInput for a bad pid; ProcessLookupError)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise BadInput(f"pid must be a positive integer, not {pid!r}")
    try:
        return (Path(root) / f"proc/{pid}/{name}").read_text()
    except FileNotFoundError:
        raise ProcessLookupError(f"no process with pid {pid}") from None


def proc_stat(pid, root="/"):
    """minflt, majflt, utime and stime (s) of another process from /proc/PID/stat."""
    return parse_stat(_proc_file(pid, "stat", root))


def parse_stat(text):
    """proc_stat's fields from the text of a /proc/PID/stat."""
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = text[text.rindex(")") + 2 :].split()
    return {
        "minflt": int(fields[7]),
        "majflt": int(fields[9]),
        "utime": int(fields[11]) / CLOCK_TICKS,
        "stime": int(fields[12]) / CLOCK_TICKS,
    }


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # /proc/PID/stat's unit of CPU time
# /proc/PID/status lines -> our names; VmRSS is in kB (KiB) there
STATUS_FIELDS = {
    "VmRSS": "rss",
    "voluntary_ctxt_switches": "nvcsw",
    "nonvoluntary_ctxt_switches": "nivcsw",
}


def proc_status(pid, root="/"):
    """rss (KiB), nvcsw and nivcsw of another process from /proc/PID/status (whole process)."""
    return parse_status(_proc_file(pid, "status", root))


def parse_status(text):
    """proc_status's fields from the text of a /proc/PID/status."""
    out = {}
    for (
        key,
        name,
    ) in STATUS_FIELDS.items():  # find(): the kernel panel reads it up to 30 times a second
        at = text.find(f"\n{key}:")
        if at >= 0:
            out[name] = int(text[at + len(key) + 2 :].split(None, 1)[0])
    out.setdefault("rss", 0)  # a zombie has no VmRSS line: it holds no memory
    return out


class ProcFiles:
    """/proc/PID/stat and /proc/PID/status of one process, kept open and read again and again
    (a kept file read from offset 0 costs a fraction of opening it anew, and it can never
    describe another process that reuses the pid). ProcessLookupError once the process is
    gone."""

    def __init__(self, pid):
        self._fds = []
        try:
            for name in ("stat", "status"):
                self._fds.append(os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC))
        except FileNotFoundError:
            self.close()
            raise ProcessLookupError(f"no process with pid {pid}") from None

    def read(self):
        """(proc_stat's fields, proc_status's fields) now."""
        stat, status = (os.pread(fd, 1 << 16, 0).decode() for fd in self._fds)
        return parse_stat(stat), parse_status(status)

    def close(self):
        for fd in self._fds:
            os.close(fd)
        self._fds = []
