"""Major faults under real memory pressure, bounded: a child cgroup v2 with memory.max.

A child process in a cgroup of its own writes a file larger than the cgroup's memory.max, then
reads it through a mapping several times. The limit forces the kernel to write back and reclaim
the file's pages inside the cgroup, so re-reading takes real major faults; the rest of the
machine never feels it (the limit bounds the child, not the machine).

Only where this machine lets the lab create a cgroup of its own: cgroup v2 mounted, the memory
controller enabled for the children of this process's cgroup, and the directory writable. pagelab
never changes a cgroup it did not create; where any of that is missing, the result says why and
the chapters fall back to the deterministic eviction of experiment ``competition``.
"""

import mmap
import os
import time
from pathlib import Path

from ..core.errors import BadInput
from ..counters.doctor import environment
from ..counters.group import Reading
from ..machine import environment as env
from ..native import scratch as _scratch
from ..native import worker as _worker
from ..results.result import Claim, Measured, Result

MIB = 1 << 20
MIN_LIMIT_MB = 8  # below this the child's own interpreter pages crowd out the file
MAX_FILE_MB = 1024
TIMEOUT = 120


def sandbox_parent(root="/"):
    """(cgroup directory, None) where a child cgroup with memory.max can be created here, else
    (None, reason). Reads only; ``root`` lets tests point it at a fake /proc and /sys."""
    root = Path(root)
    try:
        mounts = (root / "proc/self/mounts").read_text().splitlines()
        own = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError as e:
        return None, f"cannot read this process's cgroups ({e.strerror})"
    v2 = [m.split()[1] for m in mounts if len(m.split()) > 2 and m.split()[2] == "cgroup2"]
    path = next((line[3:] for line in own if line.startswith("0::")), None)
    if not v2 or path is None:
        return None, "no cgroup v2 hierarchy is mounted here"
    parent = root / v2[0].lstrip("/") / path.lstrip("/")
    try:
        controllers = (parent / "cgroup.controllers").read_text().split()
        delegated = (parent / "cgroup.subtree_control").read_text().split()
    except OSError as e:
        return None, f"cannot read the cgroup v2 files of {path} ({e.strerror})"
    if "memory" not in controllers:
        return None, (
            f"the memory controller is not available to cgroup v2 group {path} here "
            "(on this machine it is likely held by cgroup v1)"
        )
    if "memory" not in delegated:
        return None, (
            f"the memory controller is not enabled for the children of {path} "
            "(cgroup.subtree_control); pagelab never changes a cgroup it did not create"
        )
    if not os.access(parent, os.W_OK):
        return None, f"this user may not create a cgroup under {path}"
    return parent, None


def squeeze(file_mb=64, limit_mb=16, passes=3):
    """Read a ``file_mb`` file ``passes`` times in a cgroup whose memory.max is ``limit_mb``.

    Returns a Result (experiment "squeeze"): the child's rusage (majflt, oublock, nivcsw...) and
    the cgroup's memory.events, or, where no sandbox can be made here, no measurements and
    claims that say why (see ``sandbox_parent``)."""
    for name, value, low, high in (
        ("file_mb", file_mb, 1, MAX_FILE_MB),
        ("limit_mb", limit_mb, MIN_LIMIT_MB, MAX_FILE_MB),
        ("passes", passes, 2, 100),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise BadInput(f"squeeze: {name} must be an integer in {low}..{high}, got {value!r}")
    if limit_mb >= file_mb:
        raise BadInput(f"squeeze: limit_mb ({limit_mb}) must be below file_mb ({file_mb})")
    budget = env.memory_budget()["bytes"]
    if budget is not None and limit_mb * MIB > budget:
        raise BadInput(f"squeeze: limit_mb ({limit_mb}) is over the memory budget")
    params = {"file_mb": file_mb, "limit_mb": limit_mb, "passes": passes}
    parent, reason = sandbox_parent()
    if parent is not None:
        scratch = _scratch.choose(file_mb * MIB, "squeeze")
        if not scratch.disk_backed:  # a file in memory could only be evicted to swap
            reason = f"no disk-backed scratch directory ({scratch.path} is {scratch.fs_type})"
    if reason:
        return _result(params, None, reason)
    raw = _worker.call(
        "pagelab.experiments.squeeze:sandboxed",
        {"parent": str(parent), "scratch": scratch.path, **params},
        timeout=TIMEOUT,
        address_space=file_mb * MIB,
        what="squeeze",
    )
    return _result(params, raw, None)


# ---- inside the worker ----------------------------------------------------------------------


def sandboxed(parent, scratch, file_mb, limit_mb, passes):
    """Make the cgroup, run the child in it, wait, read its accounting, remove the cgroup."""
    cg = Path(parent) / f"pagelab-squeeze-{os.getpid()}"
    cg.mkdir()
    try:
        (cg / "memory.max").write_text(str(limit_mb * MIB))
        if (cg / "memory.swap.max").exists():
            (cg / "memory.swap.max").write_text("0")  # file pages only: nothing goes to swap
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(cg, scratch, file_mb, passes)  # never returns
        status, usage = _wait(pid, TIMEOUT - 10)
        elapsed = time.monotonic() - t0
        events = dict(line.split() for line in (cg / "memory.events").read_text().splitlines())
        peak = cg / "memory.peak"
        return {
            "status": status,
            "elapsed": elapsed,
            "rusage": {
                f: getattr(usage, "ru_" + f)
                for f in ("minflt", "majflt", "inblock", "oublock", "nvcsw", "nivcsw")
            },
            "events": {k: int(v) for k, v in events.items()},
            "peak": int(peak.read_text()) if peak.exists() else None,
        }
    finally:
        for _ in range(50):  # the exited child leaves the cgroup a moment after wait4
            try:
                cg.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def _wait(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage
        time.sleep(0.05)
    os.kill(pid, 9)
    _, status, usage = os.wait4(pid, 0)
    return status, usage


def _child(cg, scratch, file_mb, passes):
    """Join the cgroup, write the file, then read it through a mapping ``passes`` times."""
    code = 1
    try:
        (cg / "cgroup.procs").write_text("0")
        block = b"\1" * MIB
        with open(os.path.join(scratch, f".pagelab-squeeze-{os.getpid()}"), "w+b") as f:
            os.unlink(f.name)  # no name: the file vanishes with the child
            for _ in range(file_mb):
                f.write(block)
            f.flush()
            os.fdatasync(f.fileno())
            with mmap.mmap(f.fileno(), file_mb * MIB, prot=mmap.PROT_READ) as m:
                for _ in range(passes):
                    for off in range(0, file_mb * MIB, mmap.PAGESIZE):
                        m[off]  # one read per page: a fault wherever the limit evicted it
        code = 0
    finally:
        os._exit(code)


# ---- the result -------------------------------------------------------------------------------


def _result(params, raw, reason):
    claims_text = (
        (
            "squeeze-major-faults",
            "with memory.max below the file's size, reading the file again takes major faults "
            "(physics: pages the limit evicted must come back from disk)",
        ),
        (
            "squeeze-bounded",
            "the cgroup held the run within memory.max: the rest of the machine was never squeezed",
        ),
    )
    if raw is None:
        claims = [Claim(cid, text, None, reason=reason) for cid, text in claims_text]
        return Result("squeeze", params, environment(), [], claims, [f"no sandbox: {reason}"])
    m = Measured("sandboxed run")
    for name, value in raw["rusage"].items():
        m.add(Reading(name, value, "rusage"))
    m.add(Reading("elapsed", raw["elapsed"], "clock", "s"))
    for name in ("max", "oom", "oom_kill"):
        if name in raw["events"]:
            m.add(Reading(f"memory.events {name}", raw["events"][name], "rusage"))
    if raw["peak"] is not None:
        m.add(Reading("memory.peak", raw["peak"] / MIB, "rusage", "MiB"))
    ok = os.WIFEXITED(raw["status"]) and os.WEXITSTATUS(raw["status"]) == 0
    majflt = raw["rusage"]["majflt"]
    limit = params["limit_mb"] * MIB
    claims = [
        Claim(
            claims_text[0][0],
            claims_text[0][1],
            ok and majflt > 0,
            f"{majflt:,} major faults over {params['passes']} passes of a "
            f"{params['file_mb']} MiB file in {params['limit_mb']} MiB (rusage)"
            + ("" if ok else "; the child did not finish (killed by the limit or the timeout)"),
        ),
        Claim(
            claims_text[1][0],
            claims_text[1][1],
            raw["peak"] is None or raw["peak"] <= limit,
            "memory.peak not available in this kernel (before 5.19)"
            if raw["peak"] is None
            else f"peak {raw['peak'] / MIB:.1f} MiB of {params['limit_mb']} MiB (rusage)",
        ),
    ]
    notes = [
        "a child cgroup of our own was created for this run and removed after it; memory.max "
        "bounded the child only",
    ]
    return Result("squeeze", params, environment(), [m], claims, notes)
