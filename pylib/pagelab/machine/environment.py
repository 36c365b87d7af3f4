"""Facts about the machine, each read by a small function that takes a root path.

Tests point ``root`` at a fake tree holding proc/... and sys/...; the default "/" is the machine:
this one, or the one ``$PAGELAB_MACHINE`` describes (pagelab.machine.described). A fact that
cannot be read is None rather than a guess.
"""

import os
import re
import resource
from pathlib import Path

from .._native import lib
from ..core.numbers import int_or_none
from . import described as _described

# Half of what is free: the Jupyter server, the kernel process and the page cache the chapters
# rely on need the rest, and a 2 GiB Binder container still gets ~1 GiB of experiment memory.
BUDGET_FRACTION = 0.5

# Capability number -> name without CAP_, from linux/capability.h through the cdef.
CAPABILITIES = dict(
    sorted((getattr(lib, n), n.removeprefix("CAP_")) for n in dir(lib) if n.startswith("CAP_"))
)


# Each fact's file under the machine's root: the doctor names them as the facts' sources.
FILES = {
    "kernel": "proc/sys/kernel/osrelease",
    "cpu": "proc/cpuinfo",
    "perf_event_paranoid": "proc/sys/kernel/perf_event_paranoid",
    "nmi_watchdog": "proc/sys/kernel/nmi_watchdog",
    "status": "proc/self/status",  # seccomp mode and capabilities
    "cmdline": "proc/cmdline",
    "vsyscall": "proc/self/maps",
    "thp": "sys/kernel/mm/transparent_hugepage/enabled",
    "memory": "proc/meminfo",
    "swap": "proc/swaps",
    "cgroup": "proc/self/cgroup",
    "online_cpus": "sys/devices/system/cpu/online",
}


def sources(root="/"):
    """{fact: the path it is read from}: the machine's own, or the described machine's."""
    base = _described.resolve(root)
    return {name: str(base / rel) for name, rel in FILES.items()}


def _read(root, rel):
    return _described.read_text(root, rel)


def _status_field(root, name):
    text = _read(root, FILES["status"]) or ""
    m = re.search(rf"^{name}:\s*(\S+)", text, re.M)
    return m.group(1) if m else None


def kernel_release(root="/"):
    text = _read(root, FILES["kernel"])
    return text.strip() if text else None


def cpu_model(root="/"):
    m = re.search(r"^model name\s*:\s*(.+)$", _read(root, FILES["cpu"]) or "", re.M)
    return m.group(1).strip() if m else None


def hypervisor(root="/"):
    """True when the CPU flags say we run under a hypervisor (a VM), None if unknown."""
    m = re.search(r"^flags\s*:(.*)$", _read(root, FILES["cpu"]) or "", re.M)
    return None if m is None else "hypervisor" in m.group(1).split()


def perf_event_paranoid(root="/"):
    text = _read(root, FILES["perf_event_paranoid"])
    return int_or_none(text)


def thp_mode(root="/"):
    """always / madvise / never from the bracketed choice, or None without THP support."""
    m = re.search(r"\[(\w+)\]", _read(root, FILES["thp"]) or "")
    return m.group(1) if m else None


def vsyscall_mode(root="/"):
    """emulate / xonly / none, from the [vsyscall] mapping of this process.

    The mapping is the truth for this kernel: r-xp is 'emulate' (readable), --xp is 'xonly'
    (calls trap and are emulated, reads fault), no mapping at all is 'none'.
    """
    maps = _read(root, FILES["vsyscall"])
    if maps is None:
        return None
    for line in maps.splitlines():
        if line.endswith("[vsyscall]"):
            return "emulate" if line.split()[1].startswith("r") else "xonly"
    return "none"


def vsyscall_cmdline(root="/"):
    """The vsyscall= boot parameter, or None when the kernel default applies."""
    m = re.search(r"(?:^|\s)vsyscall=(\S+)", _read(root, FILES["cmdline"]) or "")
    return m.group(1) if m else None


def seccomp_mode(root="/"):
    """disabled / strict / filter, from the Seccomp field of /proc/self/status."""
    return {"0": "disabled", "1": "strict", "2": "filter"}.get(_status_field(root, "Seccomp"))


def capabilities(root="/"):
    """Names of the effective capabilities (without CAP_), or None if unknown."""
    field = _status_field(root, "CapEff")
    if field is None:
        return None
    bits = int(field, 16)
    return [name for bit, name in CAPABILITIES.items() if bits >> bit & 1]


def mem_available(root="/"):
    m = re.search(r"^MemAvailable:\s*(\d+) kB", _read(root, FILES["memory"]) or "", re.M)
    return int(m.group(1)) * 1024 if m else None


def swap_total(root="/"):
    """Bytes of swap configured in /proc/swaps (0: none), or None if it cannot be read."""
    text = _read(root, FILES["swap"])
    if text is None:
        return None
    # header line, then: Filename Type Size(KiB) Used Priority
    return sum(int(line.split()[2]) * 1024 for line in text.splitlines()[1:] if line.strip())


def cgroup_memory_limit(root="/"):
    """The tightest memory limit of this process's cgroup and its ancestors (v2 or v1), in bytes.

    None when there is no limit or no cgroup filesystem to read.
    """
    limits = []
    for line in (_read(root, FILES["cgroup"]) or "").splitlines():
        hier, controllers, path = line.split(":", 2)
        if hier == "0" and controllers == "":
            base, name = _described.resolve(root) / "sys/fs/cgroup", "memory.max"
        elif "memory" in controllers.split(","):
            base, name = _described.resolve(root) / "sys/fs/cgroup/memory", "memory.limit_in_bytes"
        else:
            continue
        rel = Path(path.lstrip("/"))
        # inside a cgroup namespace the listed path may not exist under the mount: use its root
        for d in [rel, *rel.parents] if (base / rel).is_dir() else [Path(".")]:
            value = int_or_none(_read(base / d, name))
            if value is not None and value >= 0:
                limits.append(value)
    # cgroup v1 spells "no limit" as a huge page-aligned number near 2**63
    limits = [v for v in limits if v < 1 << 62]
    return min(limits) if limits else None


def rlimit_as():
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def memory_budget(root="/", rlimit=None):
    """BUDGET_FRACTION of min(MemAvailable, cgroup limit, RLIMIT_AS), in bytes, with its inputs."""
    inputs = {
        "mem_available": mem_available(root),
        "cgroup_limit": cgroup_memory_limit(root),
        "rlimit_as": rlimit_as() if rlimit is None else rlimit,
    }
    known = [v for v in inputs.values() if v]
    budget = int(BUDGET_FRACTION * min(known)) if known else None
    return {"bytes": budget, "fraction": BUDGET_FRACTION, **inputs}


def nmi_watchdog(root="/"):
    """1 when the NMI watchdog holds a hardware counter on each CPU, 0 when off, None unknown."""
    return int_or_none(_read(root, FILES["nmi_watchdog"]))


def online_cpus(root="/"):
    """The machine's online CPUs (sysfs devices/system/cpu/online), or None if not listed."""
    text = _read(root, FILES["online_cpus"])
    return _described.parse_cpu_list(text) if text else None


def cpu_count():
    """CPUs this process may run on (its affinity mask): how many workers can run at once."""
    return len(os.sched_getaffinity(0))
