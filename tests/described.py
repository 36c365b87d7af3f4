"""Described hosts (tests/hosts/hosts.txt): the cache topology of a real machine, written as the
sys/ tree of a described machine that $PAGELAB_MACHINE points pagelab's readers at."""

from pathlib import Path

HOSTS_FILE = Path(__file__).with_name("hosts") / "hosts.txt"
TYPES = {"d": "Data", "i": "Instruction", "u": "Unified"}


def hosts():
    """{name: [field, ...]} from hosts.txt, in file order."""
    out = {}
    for line in HOSTS_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, *fields = line.split()
            out[name] = fields
    return out


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
        d = cache / f"index{i}"
        d.mkdir()
        sets = size_bytes(size) // (int(line) * (int(ways) or size_bytes(size) // int(line)))
        for name, value in {
            "level": level,
            "type": TYPES[kind],
            "size": size,
            "ways_of_associativity": ways,
            "coherency_line_size": line,
            "number_of_sets": sets,
        }.items():
            (d / name).write_text(f"{value}\n")
    return machine


def size_bytes(size):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
