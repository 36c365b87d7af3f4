"""The machine's PMUs, as sysfs lists them under ``bus/event_source/devices/``.

A *core* PMU counts what a CPU core does (cycles, instructions, cache misses). Most machines have
one, named ``cpu`` on x86 and ``armv8_pmuv3_0`` or a core's name on arm64. Heterogeneous machines
have one per core type, each with a ``cpus`` file: Intel's hybrid CPUs ``cpu_core`` and
``cpu_atom`` (and ``cpu_lowpower``), arm64 big.LITTLE one ``armv8_*`` or ``apple_*`` PMU per
cluster type. The rule is perf's (tools/perf/util/pmus.c, ``is_pmu_core``): a PMU named ``cpu``,
or one with a ``cpus`` file. Uncore PMUs have a ``cpumask`` instead and are not core PMUs.
docs/counters.md explains what this means for counting.
"""

import os
from dataclasses import dataclass, field

from ..core.errors import BadInput
from . import described as _described

DEVICES = "sys/bus/event_source/devices"


@dataclass(frozen=True)
class Pmu:
    """One PMU: its name, the perf_event_attr type the kernel gave it, and for a core PMU the
    CPUs it counts on (None: every CPU)."""

    name: str
    type: int
    cpus: tuple | None = None
    events: tuple = ()  # the names under events/ (the hardware events sysfs spells out)
    caps: dict = field(default_factory=dict)  # caps/NAME -> its text

    def to_dict(self):
        return {
            "name": self.name,
            "type": self.type,
            "cpus": list(self.cpus) if self.cpus is not None else None,
            "events": list(self.events),
            "caps": dict(self.caps),
        }

    def describe_cpus(self):
        """ "0-7,16" for a cpus list, or "all CPUs"."""
        if self.cpus is None:
            return "all CPUs"
        runs, start = [], None
        cpus = list(self.cpus)
        for i, c in enumerate(cpus):
            start = c if start is None else start
            if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
                runs.append(f"{start}-{c}" if c != start else f"{c}")
                start = None
        return ",".join(runs)


def _pmu(d, root):
    rel = f"{DEVICES}/{d.name}"
    text = _described.read_text(root, f"{rel}/type")
    if text is None:
        return None
    try:
        kind = int(text.strip())
    except ValueError:
        raise BadInput(f"{d / 'type'}: not a PMU type number: {text.strip()!r}") from None
    cpus_text = _described.read_text(root, f"{rel}/cpus")
    cpus = tuple(_described.parse_cpu_list(cpus_text)) if cpus_text is not None else None
    events = tuple(sorted(p.name for p in (d / "events").glob("*") if p.is_file()))
    caps = {
        p.name: (_described.read_text(root, f"{rel}/caps/{p.name}") or "").strip()
        for p in sorted((d / "caps").glob("*"))
        if p.is_file()
    }
    return Pmu(d.name, kind, cpus, events, caps)


def read(root="/"):
    """Every PMU the machine lists, by name: [Pmu]."""
    base = _described.resolve(root) / DEVICES
    try:
        dirs = sorted(base.iterdir(), key=lambda d: d.name)
    except OSError:
        return []
    return [p for p in (_pmu(d, root) for d in dirs) if p is not None]


def is_core(pmu):
    """perf's rule: the PMU named cpu, or one that lists the CPUs it covers."""
    return pmu.name == "cpu" or pmu.cpus is not None


def core(root="/"):
    """The core PMUs, in the kernel's type order: one on most machines, one per core type on
    hybrid and big.LITTLE machines, none in a VM without a virtual PMU."""
    return sorted((p for p in read(root) if is_core(p)), key=lambda p: p.type)


def heterogeneous(pmus):
    """True when there is more than one core PMU: each counts only on its own cores."""
    return len(pmus) > 1


def of_type(name, root="/"):
    """The core PMU called ``name`` (e.g. cpu_atom), or BadInput naming the ones there are."""
    pmus = core(root)
    for p in pmus:
        if p.name == name:
            return p
    there = ", ".join(p.name for p in pmus) or "none (no hardware PMU)"
    raise BadInput(f"no core type {name!r} on this machine; its core PMUs: {there}")


def host_cpus(name, root="/"):
    """The CPUs of this host a run may use to run on core type ``name`` (BadInput if none)."""
    pmu = of_type(name, root)
    cpus = (
        pmu.cpus
        if pmu.cpus is not None
        else _described.parse_cpu_list(
            _described.read_text(root, "sys/devices/system/cpu/online") or ""
        )
    )
    mine = _described.host_cpus(cpus, root) if cpus else sorted(os.sched_getaffinity(0))
    if not mine:
        raise BadInput(
            f"none of {name}'s CPUs ({pmu.describe_cpus()}) is one this process may run on "
            f"(its CPUs: {sorted(os.sched_getaffinity(0))})"
        )
    return mine


def holding(cpu, root="/"):
    """The core PMU whose CPUs include ``cpu`` (a CPU number of the machine), or None."""
    for p in core(root):
        if p.cpus is not None and cpu in p.cpus:
            return p
    return None
