"""Described machines: real machines as data, written as the directory $PAGELAB_MACHINE points
pagelab's readers at.

One format, YAML with a ``source:`` saying where each fact comes from, in two directories:

- tests/machines/NAME.yaml: a whole machine (CPU, kernel, sysctls, caches, PMUs, CPUID, the
  emulated PMU's counters, host-cpus, seccomp), written by ``write_machine``;
- tests/hosts/NAME.yaml: a cache shape only (``caches:``), for the tests that run every
  experiment on many cache shapes, written by ``write_tree``.

Both write the directory layout of pylib/pagelab/machine/described.py.
"""

from pathlib import Path

import yaml

MACHINES_DIR = Path(__file__).with_name("machines")
HOSTS_DIR = Path(__file__).with_name("hosts")
TYPES = {"d": "Data", "i": "Instruction", "u": "Unified"}
VSYSCALL_MAPS = {  # the [vsyscall] line of /proc/self/maps for each mode (none: no line)
    "emulate": "ffffffffff600000-ffffffffff601000 r-xp 00000000 00:00 0 [vsyscall]\n",
    "xonly": "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n",
    "none": "",
}


def hosts():
    """{name: [cache field, ...]} for every tests/hosts/NAME.yaml, by name."""
    return {p.stem: _load(p)["caches"] for p in sorted(HOSTS_DIR.glob("*.yaml"))}


def machines():
    """{name: spec} for every tests/machines/NAME.yaml, by name."""
    return {p.stem: _load(p) for p in sorted(MACHINES_DIR.glob("*.yaml"))}


def _load(path):
    spec = yaml.safe_load(path.read_text())
    assert spec.get("source"), f"{path}: a described machine says where its facts come from"
    return spec


def write_tree(root, fields):
    """Write the sysfs cache tree of one described host under ``root``/sys; returns root (the
    value for $PAGELAB_MACHINE)."""
    machine = Path(root)
    root = machine / "sys"
    cpu = "cpu0"
    if fields and fields[0] == "cpu1":
        (root / "devices/system/cpu/cpu0").mkdir(parents=True)  # a CPU that describes nothing
        cpu, fields = "cpu1", fields[1:]
    cache = root / "devices/system/cpu" / cpu / "cache"
    cache.mkdir(parents=True)
    for i, spec in enumerate(f for f in fields if f != "empty"):
        level, kind, size, ways, line = spec.split(":")
        sets = size_bytes(size) // (int(line) * (int(ways) or size_bytes(size) // int(line)))
        _files(
            cache / f"index{i}",
            {
                "level": level,
                "type": TYPES[kind],
                "size": size,
                "ways_of_associativity": ways,
                "coherency_line_size": line,
                "number_of_sets": sets,
            },
        )
    return machine


def write_machine(root, spec):
    """Write the whole described machine of one tests/machines/*.yaml spec under ``root``;
    returns root (the value for $PAGELAB_MACHINE)."""
    machine = write_tree(root, spec["caches"])
    sys = machine / "sys"
    flags = "fpu sse2" + (" hypervisor" if spec.get("hypervisor") else "")
    cpuinfo = f"processor\t: 0\nmodel name\t: {spec['cpu']}\n"
    if spec.get("arch", "x86_64") == "x86_64":  # arm64's cpuinfo has Features, not flags
        cpuinfo += f"flags\t\t: {flags}\n"
    thp = " ".join(f"[{m}]" if m == spec["thp"] else m for m in ("always", "madvise", "never"))
    _files(
        machine,
        {
            "sys/devices/system/cpu/online": spec["online"],
            "sys/kernel/mm/transparent_hugepage/enabled": thp,
            "proc/cpuinfo": cpuinfo,
            "proc/sys/kernel/osrelease": spec["kernel"],
            "proc/sys/kernel/perf_event_paranoid": spec["paranoid"],
            "proc/sys/kernel/nmi_watchdog": spec["nmi_watchdog"],
            "proc/self/maps": VSYSCALL_MAPS[spec["vsyscall"]],
            # an unprivileged student's process: no capabilities, unless the spec says
            "proc/self/status": f"Seccomp:\t{spec.get('seccomp', 0)}\n"
            f"CapEff:\t{spec.get('capeff', '0000000000000000')}\n",
        },
    )
    (sys / "bus/event_source/devices").mkdir(parents=True)
    for pmu in spec.get("pmus", []):
        d = sys / "bus/event_source/devices" / pmu["name"]
        _files(d, {"type": pmu["type"], **({"cpus": pmu["cpus"]} if "cpus" in pmu else {})})
        _files(d / "events", {e: "event=0x00" for e in pmu.get("events", [])})
        _files(d / "caps", pmu.get("caps", {}))
    if "cpuid" in spec:
        (machine / "cpuid").write_text("".join(f"{line}\n" for line in spec["cpuid"]))
    if "emulated_pmu" in spec:
        (machine / "emulated-pmu").write_text("".join(f"{x}\n" for x in spec["emulated_pmu"]))
    if "host_cpus" in spec:
        (machine / "host-cpus").write_text(f"{spec['host_cpus']}\n")
    return machine


def _files(d, contents):
    d.mkdir(parents=True, exist_ok=True)
    for name, value in contents.items():
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value if str(value).endswith("\n") or value == "" else f"{value}\n")


def size_bytes(size):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
