"""Major faults caused by another process's memory pressure, bounded: a cgroup v2 memory.max.

A victim in a cgroup of its own reads a file that fits under the cgroup's memory.max, alone: no
major faults. Then a competitor in the same cgroup fills most of the limit with anonymous memory,
which cannot go to swap (the cgroup's swap is 0), so the kernel reclaims the victim's clean file
pages inside the cgroup, and the victim's next read takes major faults. The limit bounds the two
processes, not the machine; the scene itself is experiments/squeeze_scene.py.

Two ways to a cgroup of our own, detected by reading only, each gone after the run:
- a child of this process's cgroup v2 group, where the memory controller is enabled for that
  group's children and the directory is writable (containers and services set up that way);
- a transient systemd user scope (``systemd-run --user --scope -p MemoryMax=...``), where a
  systemd user manager runs and holds the memory controller for its units.
pagelab never writes to a cgroup it did not create; where neither way exists, the result says why.
"""

import contextlib
import json
import mmap
import os
import shutil
import subprocess
import sys
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
HEADROOM_MB = 16  # room under memory.max for the scene's own interpreter beside either process
MAX_MB = 1024
TIMEOUT = 120
SCENE = Path(__file__).with_name("squeeze_scene.py")
SYSTEMD_ENV = ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS")  # how systemd-run finds the manager


def _cgroup2(root):
    """(cgroup2 mount point, this process's cgroup path), or (None, reason)."""
    try:
        mounts = (root / "proc/self/mounts").read_text().splitlines()
        own = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError as e:
        return None, f"cannot read this process's cgroups ({e.strerror})"
    v2 = [m.split()[1] for m in mounts if len(m.split()) > 2 and m.split()[2] == "cgroup2"]
    path = next((line[3:] for line in own if line.startswith("0::")), None)
    if not v2 or path is None:
        return None, "no cgroup v2 hierarchy is mounted here"
    return root / v2[0].lstrip("/"), path


def sandbox_parent(root="/"):
    """(cgroup directory, None) where a child cgroup with memory.max can be created here, else
    (None, reason). Reads only; ``root`` lets tests point it at a fake /proc and /sys."""
    mount, path = _cgroup2(Path(root))
    if mount is None:
        return None, path
    parent = mount / path.lstrip("/")
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


def systemd_scope(root="/", environ=None, systemd_run=None):
    """(systemd-run's path, None) where a transient user scope can carry a MemoryMax here, else
    (None, reason). Reads only: the user manager's socket and its cgroup's controllers."""
    environ = os.environ if environ is None else environ
    systemd_run = systemd_run or shutil.which("systemd-run")
    if not systemd_run:
        return None, "systemd-run is not installed"
    runtime = environ.get("XDG_RUNTIME_DIR")
    if not runtime or not (Path(root) / runtime.lstrip("/") / "systemd/private").exists():
        return None, "no systemd user manager runs for this user (no $XDG_RUNTIME_DIR/systemd)"
    mount, _ = _cgroup2(Path(root))
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted here"
    uid = os.getuid()
    manager = mount / f"user.slice/user-{uid}.slice/user@{uid}.service"
    try:
        delegated = (manager / "cgroup.subtree_control").read_text().split()
    except OSError as e:
        return None, f"cannot read the user manager's cgroup ({e.strerror})"
    if "memory" not in delegated:
        return None, "the systemd user manager holds no memory controller for its units"
    return systemd_run, None


def squeeze(file_mb=32, competitor_mb=40, limit_mb=64):
    """A victim reads a ``file_mb`` file alone, then after a competitor took ``competitor_mb`` of
    anonymous memory, both in a cgroup whose memory.max is ``limit_mb``.

    Returns a Result (experiment "squeeze"): the victim's rusage per pass, the cgroup's
    memory.stat, memory.events and memory.peak, and how the competitor ended; or, where no
    sandbox can be made here, no measurements and claims that say why."""
    for name, value, low in (
        ("file_mb", file_mb, 8),
        ("competitor_mb", competitor_mb, 8),
        ("limit_mb", limit_mb, 8 + HEADROOM_MB),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_MB:
            raise BadInput(f"squeeze: {name} must be an integer in {low}..{MAX_MB}, got {value!r}")
    for name, value in (("file_mb", file_mb), ("competitor_mb", competitor_mb)):
        if value + HEADROOM_MB > limit_mb:
            raise BadInput(
                f"squeeze: {name} ({value}) must leave {HEADROOM_MB} MiB of limit_mb "
                f"({limit_mb}): each process must fit under the limit on its own"
            )
    if file_mb + competitor_mb <= limit_mb:
        raise BadInput(
            f"squeeze: file_mb + competitor_mb ({file_mb + competitor_mb}) must be more than "
            f"limit_mb ({limit_mb}), or nothing is squeezed"
        )
    budget = env.memory_budget()["bytes"]
    if budget is not None and limit_mb * MIB > budget:
        raise BadInput(f"squeeze: limit_mb ({limit_mb}) is over the memory budget")
    params = {"file_mb": file_mb, "competitor_mb": competitor_mb, "limit_mb": limit_mb}
    parent, no_child = sandbox_parent()
    systemd_run, no_scope = (None, None) if parent else systemd_scope()
    if parent is None and systemd_run is None:
        reason = f"no cgroup of our own ({no_child}), and no systemd user scope ({no_scope})"
        return _result(params, None, reason)
    scratch = _scratch.choose(file_mb * MIB, "squeeze")
    if not scratch.disk_backed:  # a file in memory could only be evicted to swap
        reason = f"no disk-backed scratch directory ({scratch.path} is {scratch.fs_type})"
        return _result(params, None, reason)
    try:
        cg = _make_cgroup(parent, limit_mb * MIB) if parent else None
    except OSError as e:
        return _result(params, None, f"cannot make a cgroup under {parent} ({e.strerror})")
    try:
        raw = _worker.call(
            "pagelab.experiments.squeeze:sandboxed",
            {
                "cgroup": str(cg) if cg else None,
                "systemd_run": systemd_run,
                "scratch": scratch.path,
                **params,
            },
            timeout=TIMEOUT,
            what="squeeze",
            pass_env=SYSTEMD_ENV,
        )
    finally:  # however the worker ended: returned, failed, timed out or interrupted
        if cg:
            _remove_cgroup(cg)
    return _result(params, raw, None)


def _make_cgroup(parent, limit):
    """The run's cgroup under ``parent``: memory.max ``limit``, no swap for its anonymous pages."""
    cg = Path(parent) / f"pagelab-squeeze-{os.getpid()}"
    with contextlib.suppress(OSError):  # an empty one an earlier run of this process left
        cg.rmdir()
    try:
        cg.mkdir()
    except FileExistsError:  # not empty: its processes still run
        raise BadInput(f"squeeze: {cg} exists: another squeeze of this process runs") from None
    try:
        (cg / "memory.max").write_text(str(limit))
        if (cg / "memory.swap.max").exists():
            (cg / "memory.swap.max").write_text("0")  # anonymous pages cannot go to swap
    except BaseException:
        cg.rmdir()
        raise
    return cg


def _remove_cgroup(cg):
    """Remove the run's cgroup once the processes in it have left (or it is already gone)."""
    for _ in range(50):  # a killed or exited scene leaves the cgroup a moment after it ends
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


# ---- inside the worker ----------------------------------------------------------------------


def sandboxed(cgroup, systemd_run, scratch, file_mb, competitor_mb, limit_mb):
    """Run the scene in ``cgroup`` (made by the caller), or in a systemd scope made here;
    return what it reported."""
    args = {"scratch": scratch, "file_mb": file_mb, "competitor_mb": competitor_mb, "join": None}
    if cgroup is None:  # systemd creates the scope and removes it when the scene ends
        limit = limit_mb * MIB
        how = f"a transient systemd user scope (systemd-run --user --scope -p MemoryMax={limit})"
        cmd = [systemd_run, "--user", "--scope", "--quiet", "--collect"]
        cmd += ["-p", f"MemoryMax={limit}", "-p", "MemorySwapMax=0", "--", *_scene(args)]
        return {"how": how, **_run_scene(cmd)}
    cg = Path(cgroup)
    how = f"a child cgroup of our own, {cg.name}, under {cg.parent}"
    return {"how": how, **_run_scene(_scene({**args, "join": str(cg / "cgroup.procs")}))}


def _scene(args):
    """The scene's command line: this interpreter, isolated (-I: no script directory on the
    path, no user site), running pagelab/experiments/squeeze_scene.py as a script."""
    return [sys.executable, "-I", str(SCENE), json.dumps(args)]


def _run_scene(cmd, timeout=TIMEOUT - 10):
    """Run the scene in the worker's process group, so that whatever ends the worker (its
    caller's timeout or interrupt) ends the scene and its competitor too; past ``timeout`` the
    worker kills them itself. Returns the scene's report, or {"error": why}."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _worker.kill_left_running()
        p.communicate()
        return {"error": f"the scene ran longer than {timeout} s and was stopped"}
    if p.returncode != 0:
        last = (err.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": f"the scene failed: {last}"}
    return {"report": json.loads(out.strip().splitlines()[-1])}


# ---- the result -------------------------------------------------------------------------------

CLAIMS = (
    (
        "squeeze-major-faults",
        "the victim's file stayed in memory while it ran alone; a competitor in the same cgroup "
        "pushed its pages out, and reading them again took major faults (physics: pages the "
        "limit evicted must come back from disk)",
    ),
    (
        "squeeze-bounded",
        "memory.max held both processes: the cgroup's peak stayed within it and nothing was "
        "killed, and the rest of the machine was never squeezed",
    ),
)


def _result(params, raw, reason):
    if raw is not None and "error" in raw:
        reason = raw["error"]
    if reason:
        claims = [Claim(cid, text, None, reason=reason) for cid, text in CLAIMS]
        return Result("squeeze", params, environment(), [], claims, [f"no sandbox: {reason}"])
    r = raw["report"]
    pages = params["file_mb"] * MIB // mmap.PAGESIZE
    measurements = []
    for label, counts in r["passes"].items():
        m = Measured(f"victim: {label}")
        for name, value in counts.items():
            m.add(Reading(name, value, "rusage"))
        measurements.append(m)
    cg = Measured("cgroup")
    for label, stat in r["stat"].items():
        if "file" in stat:
            cg.add(Reading(f"file {label}", stat["file"] / MIB, "rusage", "MiB"))
    for name in ("max", "oom", "oom_kill"):
        if name in r["events"]:
            cg.add(Reading(f"memory.events {name}", r["events"][name], "rusage"))
    if r["peak"] is not None:
        cg.add(Reading("memory.peak", r["peak"] / MIB, "rusage", "MiB"))
    measurements.append(cg)
    alone = r["passes"]["alone"]["majflt"]
    pressed = r["passes"]["after the competitor"]["majflt"]
    comp = r["competitor"]
    survived = comp["started"] and comp["exit"] == 0
    killed = r["events"].get("oom_kill", 0)
    limit = params["limit_mb"] * MIB
    within = r["peak"] is None or r["peak"] <= limit
    claims = [
        Claim(
            *CLAIMS[0],
            alone == 0 and pressed >= pages // 100,
            f"victim's major faults reading its {pages:,} pages: {alone:,} alone, {pressed:,} "
            f"after the competitor took {params['competitor_mb']} MiB of the "
            f"{params['limit_mb']} MiB (rusage)",
        ),
        Claim(
            *CLAIMS[1],
            within and survived and killed == 0,
            (
                "memory.peak not available in this kernel (before 5.19)"
                if r["peak"] is None
                else f"peak {r['peak'] / MIB:.1f} MiB of {params['limit_mb']} MiB"
            )
            + f"; oom_kill {killed}; the competitor "
            + ("exited normally" if survived else f"did not (signal {comp['signal']})")
            + " (rusage)",
        ),
    ]
    notes = [
        f"sandbox: {raw['how']}, removed after the run; memory.max {params['limit_mb']} MiB "
        "bounded the victim and the competitor only",
        "the victim's mapping is MADV_RANDOM: no readahead, so each page read back from disk is "
        "a major fault of its own",
    ]
    return Result("squeeze", params, environment(), measurements, claims, notes)
