"""`pagelab doctor`: which profile this machine is, and why each event does or does not count.

It only reads and probes (each event is opened alone, then closed); it never writes a sysctl.
"""

import errno as E
import functools
import os
import platform
from dataclasses import dataclass

from .._version import __version__
from ..core.numbers import format_size
from ..machine import caches as _caches
from ..machine import cpuid as _cpuid
from ..machine import described as _described
from ..machine import environment as env
from ..machine import pmus as _pmus
from . import events as _events
from .group import CounterGroup
from .reasons import Facts, explain

PROFILES = {
    "full": "hardware and software counters: hw + sw + rusage; the simulator for comparison",
    "software-only": (
        "no hardware counters (no PMU): sw + rusage; caches and TLBs from the simulator"
    ),
    "blocked": (
        "perf_event_open is denied: rusage and /proc only; caches and TLBs from the simulator"
    ),
}


@dataclass(frozen=True)
class EventCheck:
    name: str
    source: str
    available: bool
    kernel_excluded: bool = False
    errno: str | None = None
    reason: str | None = None
    fix: str | None = None
    parts: dict | None = None  # {core PMU: "available" or its errno}, with several core PMUs

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if v is not None}


def check_events(facts=None):
    """Open every named event on its own and report what happened, per core type where the
    machine has several."""
    facts = facts or Facts.read()
    checks = []
    for ev in _events.NAMED.values():
        with CounterGroup([ev.name]) as g:
            s = g.status[0]
        parts = None
        if len(s.parts) > 1:
            parts = {
                p.pmu: "available" if p.opened else E.errorcode.get(p.errno, str(p.errno))
                for p in s.parts
            }
        if s.opened:
            checks.append(EventCheck(ev.name, ev.source, True, s.kernel_excluded, parts=parts))
        else:
            r = explain(s.errno, ev.source, facts)
            checks.append(
                EventCheck(ev.name, ev.source, False, False, r.code, r.cause, r.fix, parts)
            )
    return checks


def profile_of(checks):
    """full if any hardware event counts, software-only if only software ones do, else blocked."""
    if any(c.available and c.source != "sw" for c in checks):
        return "full"
    if any(c.available and c.source == "sw" for c in checks):
        return "software-only"
    return "blocked"


def environment(root="/", profile_name=None):
    """The machine facts every result carries (the "environment" object of the JSON contract).
    ``profile_name``: a profile already probed (else it is probed once per process)."""
    online = env.online_cpus(root) if _described.described() else None
    return {
        "profile": profile_name or profile(),
        "machine": _described.source(root),
        "kernel": env.kernel_release(root),
        "cpu": env.cpu_model(root),
        "cpus": len(online) if online else env.cpu_count(),
        "core_pmus": [p.name for p in _pmus.core(root)],
        "nmi_watchdog": env.nmi_watchdog(root),
        "hypervisor": env.hypervisor(root),
        "vsyscall": env.vsyscall_mode(root),
        "vsyscall_cmdline": env.vsyscall_cmdline(root),
        "thp": env.thp_mode(root),
        "perf_event_paranoid": env.perf_event_paranoid(root),
        "cap_perfmon": "PERFMON" in (env.capabilities(root) or ()),
        "seccomp": env.seccomp_mode(root),
        "uid": os.geteuid(),
        "python": platform.python_version(),
        "pagelab": __version__,
        "caches": caches_summary(root),
    }


def caches_summary(root="/"):
    """One line for every result: the data caches, what is not reported, and where they came
    from (sysfs, or a described host), so a class report shows which geometry a run saw."""
    found = ", ".join(c.describe() for c in _caches.data_caches(root))
    missing = _caches.missing(root)
    if not found:
        return f"none reported ({_caches.source(root)}); the simulator assumes its defaults"
    gap = f"; not reported: {', '.join(missing)}" if missing else ""
    return f"{found}{gap} ({_caches.source(root)})"


@functools.cache
def profile():
    """This process's profile, probed once (events do not come and go while it runs)."""
    return profile_of(check_events())


@dataclass
class Report:
    profile: str
    environment: dict
    events: list
    caches: list  # [_caches.Cache]
    caches_missing: list  # standard levels (L1d, L2, L3) the machine does not report
    budget: dict
    capabilities: list
    facts: dict  # {fact: where it was read}
    pmus: list  # [_pmus.Pmu]: the core PMUs

    def to_dict(self):
        return {
            "version": __version__,
            "profile": self.profile,
            "profile_meaning": PROFILES[self.profile],
            "environment": self.environment,
            "capabilities": self.capabilities,
            "facts": self.facts,
            "pmus": [p.to_dict() for p in self.pmus],
            "events": [c.to_dict() for c in self.events],
            "caches": [c.to_dict() for c in self.caches],
            "caches_missing": self.caches_missing,
            "memory_budget": self.budget,
        }

    def __str__(self):
        e = self.environment
        lines = [
            f"profile: {self.profile} ({PROFILES[self.profile]})",
            f"facts from {e['machine']} (`pagelab doctor --json` names each fact's file)",
            f"kernel {e['kernel']} on {e['cpu']} ({e['cpus']} cpus"
            + (", under a hypervisor)" if e["hypervisor"] else ")"),
            f"perf_event_paranoid={e['perf_event_paranoid']}  seccomp={e['seccomp']}"
            f"  uid={e['uid']}  CAP_PERFMON={'yes' if e['cap_perfmon'] else 'no'}",
            f"vsyscall={e['vsyscall']}"
            f" (boot parameter: {e['vsyscall_cmdline'] or 'kernel default'})  THP={e['thp']}",
            f"caches: {e['caches']}",
            "memory budget: "
            + (format_size(self.budget["bytes"]) if self.budget["bytes"] else "unknown")
            + f" ({self.budget['fraction']:.0%} of the least of "
            "MemAvailable, cgroup limit, RLIMIT_AS)",
            *self._pmu_lines(),
            "",
            "events:",
        ]
        fixes = {}
        for c in self.events:
            per = f"  [{', '.join(f'{k}: {v}' for k, v in c.parts.items())}]" if c.parts else ""
            if c.available:
                note = " (user-space only: exclude_kernel=1)" if c.kernel_excluded else ""
                lines.append(f"  {c.name:<24} {c.source}  available{note}{per}")
            else:
                lines.append(
                    f"  {c.name:<24} {c.source}  not available: {c.reason} ({c.errno}){per}"
                )
                fixes.setdefault(c.fix, c.reason)
        if fixes:
            lines += ["", "to get the missing events:"] + [f"  {r}: {f}" for f, r in fixes.items()]
        return "\n".join(lines)

    def _pmu_lines(self):
        """The core PMUs: one per core type on hybrid and big.LITTLE CPUs, each with its CPUs
        and how many of the hardware events it counts."""
        if not self.pmus:
            return ["core PMUs: none (no hardware counters here)"]
        hw = [c for c in self.events if c.source != "sw"]
        lines = ["core PMUs" + (" (one per core type):" if len(self.pmus) > 1 else ":")]
        for p in self.pmus:
            counts = sum(
                1
                for c in hw
                if (c.parts or {}).get(p.name, "available" if c.available else "") == "available"
            )
            watchdog = self.environment.get("nmi_watchdog")
            held = "; the NMI watchdog holds one counter" if watchdog else ""
            lines.append(
                f"  {p.name} (type {p.type}): CPUs {p.describe_cpus()}; counts {counts} of "
                f"{len(hw)} hardware events{held}"
            )
        return lines


def facts_sources(root="/"):
    """{fact: where it is read}: each file, the cache tree, the PMUs and CPUID."""
    base = _described.resolve(root)
    return {
        **env.sources(root),
        "caches": str(_caches.sysfs(root) / _caches.CPUS),
        "pmus": str(base / _pmus.DEVICES),
        "tlbs": _cpuid.source(root),
    }


def doctor(root="/"):
    checks = check_events(Facts.read(root))
    name = profile_of(checks)
    return Report(
        name,
        environment(root, name),
        checks,
        _caches.read(root),
        _caches.missing(root),
        env.memory_budget(root),
        env.capabilities(root),
        facts_sources(root),
        _pmus.core(root),
    )
