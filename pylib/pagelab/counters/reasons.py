"""Why a counter did not open, and the least-privilege fix, from its errno and the machine's
facts."""

import errno as E
from dataclasses import dataclass

from ..machine import environment as env


@dataclass(frozen=True)
class Reason:
    code: str  # errno name, e.g. "ENOENT"
    cause: str  # one phrase: what stops the event here
    fix: str  # the least-privilege change that would make it work (pagelab never applies it)

    def __str__(self):
        return f"{self.cause}: {self.code}"


@dataclass(frozen=True)
class Facts:
    """The few facts needed to explain an errno, read once."""

    paranoid: int | None
    seccomp: str | None
    capabilities: tuple
    hypervisor: bool | None
    nmi_watchdog: int | None = None

    @classmethod
    def read(cls, root="/"):
        return cls(
            env.perf_event_paranoid(root),
            env.seccomp_mode(root),
            tuple(env.capabilities(root) or ()),
            env.hypervisor(root),
            env.nmi_watchdog(root),
        )


_SECCOMP_FIX = (
    "allow perf_event_open in the container's seccomp profile (Docker: --security-opt "
    "seccomp=<profile allowing perf_event_open>; Kubernetes: a Localhost seccompProfile, see "
    "pagelab's docs/deploy.md), or run outside the filter"
)
# A pod cannot set the sysctl, and capabilities.add never reaches a non-root process: only a file
# capability does, and only without no_new_privs (docs/deploy.md).
_PARANOID_FIX = (
    "have an administrator set kernel.perf_event_paranoid to 2 (in a container: on its host or "
    "Kubernetes node; a pod cannot set it), or give the lab's Python CAP_PERFMON as a file "
    "capability (setcap cap_perfmon+ep; in a pod also capabilities.add PERFMON and "
    "allowPrivilegeEscalation: true, as capabilities.add alone never reaches a non-root user)"
)


# Debian's patch denies every perf_event_open at 3 and Ubuntu's at 4 unless the caller holds
# CAP_SYS_ADMIN: CAP_PERFMON is not enough there (docs/counters.md, "perf_event_paranoid").
_DISTRO_LEVEL = 3
_DISTRO_PARANOID_FIX = (
    "have an administrator set kernel.perf_event_paranoid to 2 (in a container: on its host or "
    "Kubernetes node; a pod cannot set it): at this distribution's level every perf_event_open "
    "is denied unless the caller holds CAP_SYS_ADMIN, and CAP_PERFMON is not enough"
)


def explain(err, source, facts):
    """Reason for errno ``err`` when opening an event of ``source`` ('hw' or 'sw')."""
    code = E.errorcode.get(err, str(err))
    if err in (E.ENOENT, E.EOPNOTSUPP, E.ENODEV):
        if source == "sw":
            return Reason(code, "this kernel has no such software event", "use a newer kernel")
        if facts.hypervisor:
            return Reason(
                code,
                "no PMU: this VM exposes no hardware counters",
                "enable the virtual PMU in the hypervisor (KVM: -cpu host; cloud: a "
                "bare-metal or PMU-enabled instance type); the simulator models "
                "caches and TLBs meanwhile",
            )
        return Reason(
            code,
            "no PMU or no such event on this CPU",
            "use a raw event (rXXXX) from the CPU's manual, or the simulator",
        )
    if err in (E.EACCES, E.EPERM):
        if facts.seccomp == "filter":
            return Reason(code, "denied by a seccomp filter", _SECCOMP_FIX)
        level = "unknown" if facts.paranoid is None else facts.paranoid
        distro = facts.paranoid is not None and facts.paranoid >= _DISTRO_LEVEL
        held = "SYS_ADMIN" if "SYS_ADMIN" in facts.capabilities else None
        if held is None and "PERFMON" in facts.capabilities and not distro:
            held = "PERFMON"
        if held:
            return Reason(
                code,
                f"denied although CAP_{held} is held (an LSM policy?)",
                "check SELinux/AppArmor policy for perf_event",
            )
        if distro:
            return Reason(
                code,
                f"denied at perf_event_paranoid={level} without CAP_SYS_ADMIN",
                _DISTRO_PARANOID_FIX,
            )
        return Reason(
            code, f"denied at perf_event_paranoid={level} without CAP_PERFMON", _PARANOID_FIX
        )
    if err == E.EINVAL:
        return Reason(
            code,
            "the kernel rejected this event's configuration",
            "check the raw code or TYPE:CONFIG against the CPU's manual",
        )
    if err == E.EMFILE:
        return Reason(code, "too many open files", "raise the open-file limit (ulimit -n)")
    if err == E.ESRCH:
        return Reason(code, "no such process", "check the pid")
    return Reason(code, E.errorcode.get(err, "unknown error").lower(), "see perf_event_open(2)")
