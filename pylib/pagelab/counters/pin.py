"""Pinning to one core type: a run that must see one kind of core (its caches, its PMU) runs
only on the CPUs of that core type's PMU, and its counters count only that PMU's part."""

import contextlib
import os

from ..machine import pmus as _pmus


def pin(cpu_type, pid=0):
    """Restrict process ``pid`` (0: the calling thread) to the CPUs of ``cpu_type``; returns the
    CPUs. BadInput when the machine has no such core type or none of its CPUs is ours."""
    cpus = _pmus.host_cpus(cpu_type)
    os.sched_setaffinity(pid, cpus)
    return cpus


@contextlib.contextmanager
def pinned(cpu_type):
    """The calling thread on ``cpu_type``'s CPUs for the block (nothing when None)."""
    if cpu_type is None:
        yield None
        return
    before = os.sched_getaffinity(0)
    cpus = pin(cpu_type)
    try:
        yield cpus
    finally:
        os.sched_setaffinity(0, before)
