"""maps: the memory map of a fresh process, classified region by region; two fresh processes
compared to see what address-space layout randomisation (ASLR) moves and what it leaves."""

import functools
import platform
from dataclasses import dataclass
from pathlib import Path

from ..core.reading import Reading
from ..machine.maps import KINDS, parse_maps
from ..native.scratch import choose
from ..native.workloads import ADDR_NO_RANDOMIZE, VSYSCALL_BASE
from ..native.workloads import MAPS_LARGE_BLOCK as LARGE_BLOCK
from ..native.workloads import MAPS_SMALL_BLOCK as SMALL_BLOCK
from ..results.result import Claim, Measured
from .common import MIB

TIMEOUT = 60
RUNS = 2  # two fresh processes show what moves; a chance repeat is <= 2**-13 (brk: 32 MiB range)
THREAD_STACK = 8 * MIB  # glibc's default pthread stack (RLIMIT_STACK), reserved per thread
SOURCE = "rusage"  # read from /proc/PID/maps: the /proc class of sources
SUMMARY = ("regions", "size_kib", "moved")
EXPECTED = {  # where each object the worker reports must live
    "stack variable": "stack",
    "small malloc block": "heap",
    "large malloc block": "anon",
    "anonymous mmap": "anon",
    "file mapping": "file",
    "program entry point": "text",
    "C library function": "lib",
    "extension function": "lib",
    "vdso": "vdso",
}
HEAP_LEVEL_1 = (
    "kernel.randomize_va_space=1 randomises the stack, vdso and mmap base but not "
    "the brk heap (that needs 2)"
)


def memory(p):
    mappings = 2 * p["mapping_kb"] * 1024 + SMALL_BLOCK + LARGE_BLOCK
    return mappings, mappings + p["threads"] * THREAD_STACK


def randomize_va_space(root="/"):
    """kernel.randomize_va_space: 0 off, 1 stack/vdso/mmap, 2 also the brk heap; None unknown."""
    try:
        return int((Path(root) / "proc/sys/kernel/randomize_va_space").read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Snapshot:
    """One fresh process: its map, the objects it placed, and what it says about itself."""

    text: str
    regions: list
    objects: dict  # name -> address
    personality: int
    truncated: bool

    def kind(self, kind):
        return [r for r in self.regions if r.kind == kind]

    def base(self, kind):
        found = self.kind(kind)
        return found[0].start if found else None

    def libraries(self):
        """library path -> its lowest address"""
        out = {}
        for r in self.kind("lib"):
            out.setdefault(r.path, r.start)
        return out


def snapshot(facts):
    """One process from the worker's typed facts: its map (parsed), objects and personality."""
    process = facts["process"]
    exe = process["exe"].removesuffix(" (deleted)") or None
    return Snapshot(
        process["maps"],
        parse_maps(process["maps"], executable=exe),
        dict(facts.get("object", {})),
        process["personality"],
        bool(process["truncated"]),
    )


def run(ctx):
    runs = []
    scratch = choose(0, "maps")  # the temp file is sparse: it takes no disk blocks
    for i in range(RUNS):
        if ctx.progress:
            ctx.progress(f"maps: fresh process {i + 1} of {RUNS}")
        _, raw = ctx.workload(what="maps", scratch=scratch)
        runs.append(snapshot(raw["facts"]))
    level = randomize_va_space()
    off = _aslr_off(level, runs[0].personality)
    heap_off = off or (HEAP_LEVEL_1 if level == 1 else None)
    claims = [
        _vsyscall(runs),
        _moves(runs, "vdso", off),
        _moves(runs, "stack", off),
        _moves(runs, "heap", heap_off),
        _libraries(runs, off),
        _program(runs, off),
        _objects(runs),
    ]
    notes = [f"{k}: {_movement(runs, k)}" for k in KINDS if any(r.kind(k) for r in runs)]
    notes.append(
        "addresses come from /proc/PID/maps of each worker process (labelled rusage, "
        "the /proc class of sources)"
    )
    if any(r.truncated for r in runs):
        notes.append(
            "a map was longer than the ~56 KiB the worker keeps and was cut at a whole line"
        )
    return ctx.result(
        _measurements(runs),
        claims,
        notes,
        text=runs[0].text,
        summary=SUMMARY,
        figure=functools.partial(figure, runs=runs),
    )


def _measurements(runs):
    out = []
    for kind in KINDS:
        if not any(r.kind(kind) for r in runs):
            continue
        m = Measured(kind)
        first = runs[0].kind(kind)
        m.add(Reading("regions", len(first), SOURCE))
        m.add(Reading("size_kib", sum(r.size for r in first) // 1024, SOURCE, "KiB"))
        bases = [r.base(kind) for r in runs]
        for i, b in enumerate(bases, start=1):
            m.add(
                Reading(
                    f"base_run{i}",
                    b,
                    SOURCE,
                    reason=None if b is not None else f"no {kind} region in run {i}",
                )
            )
        if None not in bases:
            m.add(Reading("moved", int(len(set(bases)) > 1), SOURCE))
        out.append(m)
    return out


def _bases(runs, kind):
    return " -> ".join("absent" if b is None else f"{b:x}" for b in (r.base(kind) for r in runs))


def _movement(runs, kind):
    bases = [r.base(kind) for r in runs]
    if None in bases:
        return _bases(runs, kind)
    return f"{_bases(runs, kind)} ({'moved' if len(set(bases)) > 1 else 'same place'})"


def _aslr_off(level, personality):
    if level == 0:
        return (
            "ASLR is off on this machine (kernel.randomize_va_space=0): nothing is "
            "randomised, so nothing is expected to move"
        )
    if personality & ADDR_NO_RANDOMIZE:
        return (
            "the worker runs with ASLR disabled for itself (personality ADDR_NO_RANDOMIZE, "
            "e.g. under `setarch -R`, inherited from the process that started it)"
        )
    return None


def _vsyscall(runs):
    text = "the [vsyscall] page sits at ffffffffff600000 in every process"
    found = [r.kind("vsyscall") for r in runs]
    if not any(found):
        why = (
            "this kernel runs with vsyscall=none: no process has a [vsyscall] mapping"
            if platform.machine() == "x86_64"
            else f"only x86-64 has a vsyscall page; this machine is {platform.machine()}"
        )
        return Claim("vsyscall-fixed", text, None, reason=why)
    starts = [f[0].start if f else None for f in found]
    holds = all(s == VSYSCALL_BASE for s in starts)
    shown = ", ".join("absent" if s is None else f"{s:x}" for s in starts)
    return Claim("vsyscall-fixed", text, holds, f"run 1, run 2: {shown} (/proc/PID/maps)")


def _moves(runs, kind, off):
    name = f"[{kind}]"
    text = f"{name} moves between two fresh processes (ASLR)"
    cid = f"aslr-{kind}"
    if off:
        return Claim(cid, text, None, reason=off)
    bases = [r.base(kind) for r in runs]
    if None in bases:
        return Claim(cid, text, None, reason=f"a run has no {name} region")
    return Claim(cid, text, bases[0] != bases[1], f"{_bases(runs, kind)} (/proc/PID/maps)")


def _libraries(runs, off):
    text = "shared libraries move between two fresh processes (ASLR of the mmap base)"
    if off:
        return Claim("aslr-libraries", text, None, reason=off)
    a, b = runs[0].libraries(), runs[1].libraries()
    common = [p for p in a if p in b]
    if not common:
        return Claim("aslr-libraries", text, None, reason="no library is mapped in both runs")
    moved = [p for p in common if a[p] != b[p]]
    libc = next((p for p in common if "/libc.so" in p or "/libc-" in p), common[0])
    return Claim(
        "aslr-libraries",
        text,
        len(moved) == len(common),
        f"{len(moved)} of {len(common)} libraries moved; {Path(libc).name}: "
        f"{a[libc]:x} -> {b[libc]:x} (/proc/PID/maps)",
    )


def elf_type(path):
    """'pie' (ET_DYN), 'fixed' (ET_EXEC) or None, from the ELF header of ``path``."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return None
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return None
    order = "little" if head[5] == 1 else "big"
    return {2: "fixed", 3: "pie"}.get(int.from_bytes(head[16:18], order))


def _program(runs, off):
    text = (
        "the program's own code moves when the executable is position-independent (PIE) "
        "and stays put when it is not"
    )
    if off:
        return Claim("aslr-program", text, None, reason=off)
    exe = next((r.path for r in runs[0].kind("text")), None)
    kind = elf_type(exe) if exe else None
    bases = [r.base("text") for r in runs]
    if kind is None or None in bases:
        return Claim(
            "aslr-program",
            text,
            None,
            reason="cannot read the executable's ELF header or find its text",
        )
    moved = bases[0] != bases[1]
    return Claim(
        "aslr-program",
        text,
        moved == (kind == "pie"),
        f"{Path(exe).name} is {'PIE' if kind == 'pie' else 'fixed-address'}; "
        f"text {_bases(runs, 'text')} (/proc/PID/maps)",
    )


def expected_kind(name):
    return "anon" if name.startswith("thread ") else EXPECTED.get(name)


def _objects(runs):
    text = (
        "every object the process placed (stack variable, heap block, mmaps, code of the "
        "program, libc and the extension, thread stacks) lies in a region of the right kind"
    )
    if any(r.truncated for r in runs):
        return Claim(
            "objects-classified",
            text,
            None,
            reason="a map was too long to keep whole, so some regions are missing",
        )
    wrong, total, plt = [], 0, False
    for i, snap in enumerate(runs, start=1):
        exe = next((r.path for r in snap.kind("text")), None)
        for name, address in snap.objects.items():
            total += 1
            region = next((r for r in snap.regions if address in r), None)
            got = region.kind if region else "no region"
            # a fixed-address (non-PIE) program that calls malloc itself gives malloc its
            # canonical address in the program's own PLT: every pointer to it points there
            if (name, got) == ("C library function", "text") and exe and elf_type(exe) == "fixed":
                plt = True
                continue
            if got != expected_kind(name):
                wrong.append(
                    f"run {i}: {name} at {address:x} is in {got}, expected {expected_kind(name)}"
                )
    if not wrong:
        return Claim(
            "objects-classified",
            text,
            True,
            f"{total} of {total} objects in the expected kind of region"
            + (
                " (malloc's address is the fixed-address program's PLT entry for it)" if plt else ""
            ),
        )
    return Claim("objects-classified", text, False, "; ".join(wrong))


# ---- figure ------------------------------------------------------------------------------

KIND_COLORS = {
    "text": "#1f77b4",
    "data": "#6baed6",
    "bss": "#c6dbef",
    "heap": "#d62728",
    "stack": "#2ca02c",
    "vdso": "#9467bd",
    "vvar": "#c5b0d5",
    "vsyscall": "#8c564b",
    "anon": "#ff7f0e",
    "file": "#e377c2",
    "lib": "#7f7f7f",
}


def figure(result, runs=None):
    """The processes' maps side by side, low addresses at the bottom, like a textbook picture.

    ``runs`` are the Snapshots of the run; without them only the first process's map (kept in
    ``result.text``) is drawn."""
    from ..results.plots import memory_map

    runs = runs or [Snapshot(result.text, parse_maps(result.text), {}, 0, False)]
    columns = {f"process {i}": snap.regions for i, snap in enumerate(runs, start=1)}
    marks = {f"process {i}": snap.objects for i, snap in enumerate(runs, start=1)}
    return memory_map(
        "the memory map of two fresh processes (from /proc/PID/maps)", columns, KIND_COLORS, marks
    )
