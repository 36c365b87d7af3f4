"""Which machine pagelab reads its facts from: this one, or one described in a directory.

``$PAGELAB_MACHINE=DIR`` is the one switch. DIR is laid out like the machine's own root:

- ``sys/``: the cache tree (``devices/system/cpu/cpuN/cache/index*``),
  ``devices/system/cpu/online``, ``kernel/mm/transparent_hugepage/enabled`` and one
  ``bus/event_source/devices/NAME/`` per PMU (``type``, ``cpus``, ``events/*``, ``caps/*``,
  ``format/*``); no hardware PMU there, no PMU;
- ``proc/``: ``sys/kernel/{perf_event_paranoid,nmi_watchdog,osrelease}``, ``cpuinfo``, ``meminfo``,
  ``swaps``, ``cmdline``, ``self/{maps,status,cgroup}``;
- ``cpuid``: one line per leaf and subleaf, ``LEAF SUBLEAF EAX EBX ECX EDX`` in hex; a missing leaf
  reads as zeros, as a CPU that lacks it answers;
- ``host-cpus`` (optional): ``HOST=DESCRIBED`` pairs saying which of the described CPUs each CPU
  of this host stands for when a run is pinned to a core type (default: the same number).

Every reader of a machine fact (this package) takes a ``root``; "/" means "the machine", which is
DIR when the switch is set. Live readings of processes (/proc/PID/...) never go through here. A
fact the directory does not hold is unknown (None), never this host's value.
"""

import os
from pathlib import Path

from ..core.errors import BadInput

ENV = "PAGELAB_MACHINE"


def described():
    """The described machine's directory, or None when pagelab reads this machine."""
    d = os.environ.get(ENV)
    if not d:
        return None
    path = Path(d)
    if not (path / "sys").is_dir():
        raise BadInput(
            f"{ENV}={d}: no sys/ directory there; a described machine holds sys/, proc/ and "
            "cpuid as its root would (docs/counters.md, 'Described machines')"
        )
    return path


def resolve(root="/"):
    """The root to read a fact under: the described machine for "/", else ``root`` itself."""
    if str(root) == "/":
        return described() or Path("/")
    return Path(root)


def read_text(root, rel):
    """The text of ``rel`` under the machine's root, or None if it cannot be read.

    A copy made with tar pads sysfs files with NULs up to their stated 4 KiB: they are dropped.
    """
    try:
        return (resolve(root) / rel).read_text().split("\0", 1)[0]
    except OSError:
        return None


def source(root="/"):
    """Where the facts come from, for evidence and the doctor: this machine, or the directory."""
    d = described() if str(root) == "/" else Path(root)
    return f"described machine {d}" if d else "this machine"


def parse_cpu_list(text):
    """[0, 1, 2, 4] from sysfs's "0-2,4"; BadInput for anything else."""
    cpus = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise BadInput(f"not a CPU list: {text.strip()!r}") from None
        if first < 0 or last < first:
            raise BadInput(f"not a CPU list: {text.strip()!r}")
        cpus.extend(range(first, last + 1))
    return cpus


def host_cpus(described_cpus, root="/"):
    """The CPUs of this host that stand for ``described_cpus`` (see ``host-cpus`` above)."""
    allowed = sorted(os.sched_getaffinity(0))
    # the real machine's root holds no such file: only a described one is looked in
    text = read_text(root, "host-cpus") if resolve(root) != Path("/") else None
    if not text:
        return [c for c in allowed if c in set(described_cpus)]
    pairs = {}
    for word in text.split():
        host, _, stands_for = word.partition("=")
        try:
            pairs[int(host)] = int(stands_for)
        except ValueError:
            raise BadInput(f"{ENV}: host-cpus: {word!r} is not HOST=DESCRIBED") from None
    return [c for c in allowed if pairs.get(c) in set(described_cpus)]
