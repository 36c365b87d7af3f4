"""The machine's caches: the one reader of cache geometry.

Caches are read from sysfs, ``devices/system/cpu/cpuN/cache/index*``, of the first CPU that
describes any: some containers and arm64 VMs describe none, some only part of their CPUs. What a
machine does not report is normal, not an error: the readers return what there is, and
``missing()`` says what is not.

On a described machine (``$PAGELAB_MACHINE``, pagelab.machine.described) the tree is its
``sys/``. The tests run the experiments and chapters on described machines through it, and an
instructor can reproduce a student's report from a copy of that student's cache directory. A
described tree is read strictly: a malformed one is one clear error (BadInput), never a guess.
"""

import contextlib
import contextvars
import re
from dataclasses import dataclass

from ..core.errors import BadInput
from ..core.numbers import format_size, parse_size
from . import described as _described

CPUS = "devices/system/cpu"
# sysfs file -> field; "size" is "32K" and friends, the rest whole numbers
FIELDS = {
    "level": "level",
    "type": "type",
    "size": "size",
    "ways_of_associativity": "ways",
    "coherency_line_size": "line",
    "number_of_sets": "sets",
}
TYPES = ("Data", "Instruction", "Unified")
# The levels a student expects to hear about, by level; a machine may lack any of them (arm64
# servers often have no L3), which the readers report rather than guess.
STANDARD = {1: "L1d", 2: "L2", 3: "L3"}


@dataclass(frozen=True)
class Cache:
    """One cache as sysfs describes it; ways 0 means fully associative, None unknown."""

    level: int
    type: str  # Data, Instruction or Unified
    size: int | None
    ways: int | None
    line: int | None
    sets: int | None

    @property
    def name(self):
        """L1d, L1i, L2, L3 ...: the level, and d/i for a split level."""
        return f"L{self.level}" + {"Data": "d", "Instruction": "i"}.get(self.type, "")

    @property
    def holds_data(self):
        return self.type in ("Data", "Unified") and bool(self.size)

    def describe(self):
        ways = "fully associative" if self.ways == 0 else f"{self.ways}-way" if self.ways else ""
        line = f"{self.line} B lines" if self.line else ""
        return " ".join(p for p in (self.name, format_size(self.size or 0), ways, line) if p)

    def to_dict(self):
        return {
            "level": self.level,
            "type": self.type,
            "size": self.size,
            "ways": self.ways,
            "line": self.line,
            "sets": self.sets,
        }


def sysfs(root="/"):
    """The sysfs tree to read: the machine's (described or real) sys/."""
    return _described.resolve(root) / "sys"


def described(root="/"):
    """The described machine in use ($PAGELAB_MACHINE), or None for the machine's own sysfs."""
    d = _described.described() if str(root) == "/" else None
    return str(d) if d else None


def _cpu_dirs(tree):
    def number(d):
        return int(d.name[3:])

    try:
        cpus = [d for d in (tree / CPUS).iterdir() if re.fullmatch(r"cpu\d+", d.name)]
    except OSError:
        return []
    return sorted(cpus, key=number)


def _field(d, name, strict):
    try:
        # a copy made with tar pads sysfs files with NULs up to their stated 4 KiB
        text = (d / name).read_text().split("\0", 1)[0].strip()
    except OSError:
        text = ""
    if not text:
        return None
    try:
        if name == "size":
            return parse_size(text)
        if name == "type":
            if text not in TYPES:
                raise BadInput(f"type {text!r} is not one of {', '.join(TYPES)}")
            return text
        return int(text)
    except (BadInput, ValueError) as e:
        if strict:
            raise BadInput(f"{_described.ENV}: {d / name}: cannot read {text!r}: {e}") from None
        return None


def _index(d, strict):
    got = {field: _field(d, name, strict) for name, field in FIELDS.items()}
    if got["level"] is None or got["type"] is None or got["size"] is None:
        if strict:
            raise BadInput(f"{_described.ENV}: {d} lacks its level, type or size")
        return None
    return Cache(**got)


# Inside `once()`, the tree read at its start, by sysfs path: a run reads the machine once.
_HELD = contextvars.ContextVar("pagelab_caches_held", default=None)


@contextlib.contextmanager
def once(root="/"):
    """Serve every read of this machine's caches inside the block from one reading (a run's
    sizing, its simulator's geometry, its claims and its environment all see the same tree)."""
    token = _HELD.set({str(sysfs(root)): _read(root)})
    try:
        yield
    finally:
        _HELD.reset(token)


def read(root="/"):
    """The caches of the first CPU that describes any, lowest level first: [Cache]."""
    held = _HELD.get()
    if held is not None and str(sysfs(root)) in held:
        return list(held[str(sysfs(root))])
    return _read(root)


def _read(root):
    tree = sysfs(root)
    strict = described(root) is not None
    for cpu in _cpu_dirs(tree):
        dirs = sorted((cpu / "cache").glob("index*"), key=lambda d: d.name)
        caches = [c for c in (_index(d, strict) for d in dirs) if c is not None]
        if caches:
            return sorted(caches, key=lambda c: (c.level, TYPES.index(c.type)))
    return []


def described_cpu(root="/"):
    """The number of the CPU whose caches ``read`` reports (the first that describes any), or
    None. On a machine with several core types, the caches are that CPU's type's."""
    for cpu in _cpu_dirs(sysfs(root)):
        if any((cpu / "cache").glob("index*/level")):
            return int(cpu.name[3:])
    return None


def data_caches(root="/"):
    """The caches that hold data (data and unified, with a size), smallest level first."""
    return [c for c in read(root) if c.holds_data]


def level(n, root="/"):
    """The data or unified cache of level n, or None if the machine reports none."""
    return next((c for c in data_caches(root) if c.level == n), None)


def last_level(root="/"):
    """The last-level cache (level 3 or beyond), or None: L1 and L2 are never called LLC."""
    found = [c for c in data_caches(root) if c.level >= 3]
    return found[-1] if found else None


def missing(root="/"):
    """The standard levels (L1d, L2, L3) this machine does not report."""
    levels = {c.level for c in data_caches(root)}
    return [name for n, name in STANDARD.items() if n not in levels]


def source(root="/"):
    """Where the geometry came from, for evidence and notes: sysfs, or the described machine."""
    d = described(root)
    return f"described machine {d}" if d else "sysfs"
