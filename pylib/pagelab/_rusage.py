"""Fallback sources: getrusage / wait4 rusage and /proc/PID/stat, always labelled 'rusage'."""

import os
import resource
from pathlib import Path

from ._errors import BadInput

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
    text = _proc_file(pid, "stat", root)
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = text[text.rindex(")") + 2 :].split()
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "minflt": int(fields[7]),
        "majflt": int(fields[9]),
        "utime": int(fields[11]) / tick,
        "stime": int(fields[12]) / tick,
    }


# /proc/PID/status lines -> our names; VmRSS is in kB (KiB) there
STATUS_FIELDS = {
    "VmRSS": "rss",
    "voluntary_ctxt_switches": "nvcsw",
    "nonvoluntary_ctxt_switches": "nivcsw",
}


def proc_status(pid, root="/"):
    """rss (KiB), nvcsw and nivcsw of another process from /proc/PID/status (whole process)."""
    text = _proc_file(pid, "status", root)
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in STATUS_FIELDS:
            out[STATUS_FIELDS[key]] = int(value.split()[0])
    out.setdefault("rss", 0)  # a zombie has no VmRSS line: it holds no memory
    return out
