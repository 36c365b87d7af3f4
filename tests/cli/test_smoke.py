"""The compiled module imports and makes one real call."""

from pagelab._native import ffi, lib


def test_native_module_reads_the_event_table():
    """The C event table is reachable through cffi and holds the perf names."""
    names = {ffi.string(lib.pl_event_table[i].name).decode() for i in range(lib.pl_event_count)}
    assert {"page-faults", "dTLB-load-misses", "cycles"} <= names
