"""mmap-modes: anonymous, private-file and shared-file mappings, each with and without
MAP_POPULATE, written and then msync'd: where each one takes its faults and its disk I/O."""

import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._counters import Reading
from .._errors import BadInput
from .._numbers import format_size
from .._results import Claim
from ._common import MIB, PAGE, unavailable

TIMEOUT = 300  # the defaults take ~2 s; a multi-GiB file is read 4 times and written 3
EVENTS = "page-faults,minor-faults,major-faults"
MODES = ("anon", "private", "shared")
VARIANTS = tuple(f"{m}{p}" for m in MODES for p in ("", "+populate"))
PHASES = ("mmap", "write", "msync", "munmap")
BLOCK = 512  # ru_inblock/ru_oublock unit: the kernel keeps bytes of I/O and reports them >> 9
FILL_CHUNK = MIB  # the C workload writes the file in 1 MiB pieces
# Filesystems that keep files in memory: no writeback and no disk, so no blocks in or out.
MEMORY_FS = {"tmpfs", "ramfs", "hugetlbfs", "devtmpfs"}
SCRATCH_ENV = "PAGELAB_SCRATCH"  # a directory for the file, chosen by the user
DISK_SHARE = 2  # the file may take at most 1/DISK_SHARE of the free space where it is made
# Writes to private or anonymous memory produce no output blocks at all; this margin only keeps
# unrelated accounting (e.g. the interpreter paging its own code) from deciding the claim.
STRAY = 0.01
SUMMARY = ("page-faults", "minflt", "majflt", "inblock", "oublock", "ms")


def memory(p):
    size = p["size_mb"] * MIB
    # resident: the file's page cache plus the private copies of it (or the anonymous pages)
    return 2 * size, size + FILL_CHUNK + size // PAGE


# ---- where the file goes -----------------------------------------------------------------


def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def filesystem_type(path, root="/"):
    """The type of the filesystem holding ``path`` (from proc/self/mountinfo), or None."""
    try:
        text = os.fsdecode((Path(root) / "proc/self/mountinfo").read_bytes())  # as paths are
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = -1, None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = _unescape(fields[4])
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= best:  # the deepest mount wins; a later one covers earlier
            best, kind = len(mount), right.split()[0]
    return kind


def choose_directory(size, candidates=None):
    """(directory, filesystem type) for the temp file: the first writable candidate on a
    block-backed filesystem with room to spare, else a memory filesystem (the claims about
    disk I/O then say they could not be evaluated). BadInput if nothing has the room.

    The candidates are $PAGELAB_SCRATCH alone when it is set, else the temp directory,
    /var/tmp and the working directory."""
    scratch = os.environ.get(SCRATCH_ENV)
    candidates = candidates or (
        [scratch] if scratch else [tempfile.gettempdir(), "/var/tmp", os.getcwd()]
    )
    memory_fs, short = None, []
    for d in dict.fromkeys(candidates):
        if not (os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)):
            continue
        st = os.statvfs(d)
        free = st.f_bavail * st.f_frsize
        kind = filesystem_type(d)
        if free < DISK_SHARE * size:
            short.append(f"{d} has {format_size(free)} free")
            continue
        if kind not in MEMORY_FS:
            return d, kind
        memory_fs = memory_fs or (d, kind)
    if memory_fs:
        return memory_fs
    if not short:
        raise BadInput(
            f"mmap-modes found no writable directory for its file among "
            f"{', '.join(candidates)} (set {SCRATCH_ENV} to one)"
        )
    raise BadInput(
        f"mmap-modes may use at most 1/{DISK_SHARE} of the free disk space for its "
        f"{format_size(size)} file ({'; '.join(short)}); choose a smaller size_mb"
    )


def task(directory, params, events):
    """In the worker: run the C workload with the temp file created in ``directory``."""
    from .._workloads import execute

    os.chdir(directory)
    return execute("mmap-modes", params, events)


# ---- the run -----------------------------------------------------------------------------


def run(ctx):
    from .._run import measurements

    p = ctx.params
    size = p["size_mb"] * MIB
    directory, fstype = choose_directory(size)
    raw = ctx.call(
        "pagelab.experiments.mmap_modes:task", directory=directory, params=p, events=EVENTS
    )
    measured = measurements(raw)
    for m in measured:
        if "minflt" in m.metrics:
            m.add(Reading("faults", m["minflt"].value + m["majflt"].value, "rusage"))
            m.add(Reading("ms", m["elapsed"].value * 1e3, "clock", "ms"))
    pages = size // PAGE
    shape = Shape(pages, math.ceil(pages / p["stride_pages"]), fstype, directory)
    by = {m.label: m for m in measured}
    claims = [
        _shared_out(by, shape),
        _private_out(by, shape),
        _populate(by, shape),
        _shared_wp(by, shape),
        _reads(by, shape),
    ]
    return ctx.result(measured, claims, _notes(by, shape), summary=SUMMARY, figure=figure)


@dataclass(frozen=True)
class Shape:
    """What the run did: pages mapped, pages written, and where the file lived."""

    pages: int
    written: int
    fstype: str | None
    directory: str

    @property
    def on_disk(self):
        return self.fstype not in MEMORY_FS

    def no_disk(self, what):
        return (
            f"the file is on {self.fstype or 'an unknown filesystem'} ({self.directory}), "
            f"which keeps files in memory: {what}"
        )


def _sum(by, variant, metric, phases=PHASES):
    return sum(by[f"{variant}: {ph}"][metric].value for ph in phases)


def _per_page(by, label, pages):
    """Faults per page in a region: perf's page-faults, or its labelled rusage stand-in."""
    r = by[label]["page-faults"]
    return None if r.best is None else r.best / pages, r.best_source


def _ms(by, variant):
    return by[f"{variant}: msync"]["ms"].value


def _shared_out(by, s):
    text = (
        "writing through a shared file mapping produces output blocks (oublock) for every "
        "page written, by the time msync returns"
    )
    if not s.on_disk:
        return Claim(
            "shared-writes-output-blocks",
            text,
            None,
            reason=s.no_disk("nothing is written back, so no output blocks are counted"),
        )
    need = s.written * PAGE // BLOCK
    parts, holds = [], True
    for v in ("shared", "shared+populate"):
        out = _sum(by, v, "oublock", ("mmap", "write", "msync"))
        holds &= out >= need
        parts.append(
            f"{v}: {out:,} (write pass {by[f'{v}: write']['oublock'].value:,}, msync "
            f"{by[f'{v}: msync']['oublock'].value:,}; msync took {_ms(by, v):.3g} ms)"
        )
    return Claim(
        "shared-writes-output-blocks",
        text,
        holds,
        f"{'; '.join(parts)}; at least {need:,} blocks of {BLOCK} B needed (rusage, clock)",
    )


def _private_out(by, s):
    text = (
        "writing through a private file mapping produces no output blocks: the writes land "
        "in private copy-on-write pages, never in the file"
    )
    if not s.on_disk:
        return Claim(
            "private-writes-no-output-blocks",
            text,
            None,
            reason=s.no_disk("no mode produces output blocks, so there is no contrast"),
        )
    limit = STRAY * s.written * PAGE / BLOCK
    outs = {v: _sum(by, v, "oublock") for v in ("private", "private+populate")}
    shown = ", ".join(f"{v}: {o:,}" for v, o in outs.items())
    return Claim(
        "private-writes-no-output-blocks",
        text,
        all(o <= limit for o in outs.values()),
        f"{shown} output blocks over all phases (rusage); msync took {_ms(by, 'private'):.3g} ms",
    )


def _populate(by, s):
    text = (
        "MAP_POPULATE takes the page faults inside mmap for anonymous and private mappings, "
        "so their write pass takes almost none"
    )
    parts, holds = [], True
    for mode in ("anon", "private"):
        plain, plain_src = _per_page(by, f"{mode}: write", s.written)
        after, after_src = _per_page(by, f"{mode}+populate: write", s.written)
        if plain is None or after is None:
            why = unavailable(by[f"{mode}: write"]["page-faults"])
            return Claim("populate-moves-faults", text, None, reason=why)
        in_mmap = by[f"{mode}+populate: mmap"]
        taken = in_mmap["faults"].value / s.pages
        holds &= plain >= 0.9 and after < 0.01 and taken >= 0.9
        perf = in_mmap["page-faults"]
        seen = f", perf saw {perf.value:,}" if perf.available else ""
        parts.append(
            f"{mode}: write pass {plain:.2f} faults per page ({plain_src}) without, "
            f"{after:.4f} ({after_src}) with populate; mmap took {taken:.2f} per page "
            f"(rusage{seen})"
        )
    return Claim("populate-moves-faults", text, holds, "; ".join(parts))


def _shared_wp(by, s):
    text = (
        "a shared file mapping still faults on the first write to each page after "
        "MAP_POPULATE: clean shared pages are mapped read-only so the kernel sees them "
        "become dirty"
    )
    if not s.on_disk:
        return Claim(
            "shared-write-faults-after-populate",
            text,
            None,
            reason=s.no_disk(
                "it does not track dirty pages, so populated pages are mapped writable at once"
            ),
        )
    per, src = _per_page(by, "shared+populate: write", s.written)
    if per is None:
        return Claim(
            "shared-write-faults-after-populate",
            text,
            None,
            reason=unavailable(by["shared+populate: write"]["page-faults"]),
        )
    taken = by["shared+populate: mmap"]["faults"].value
    return Claim(
        "shared-write-faults-after-populate",
        text,
        per >= 0.9,
        f"{per:.2f} faults per page written ({src}) after mmap had populated "
        f"{s.pages:,} pages with {taken:,} faults (rusage)",
    )


def _reads(by, s):
    text = (
        "with its cached pages dropped, the file is read back from disk (inblock) by every "
        "file-backed mode; anonymous memory reads nothing"
    )
    if not s.on_disk:
        return Claim(
            "file-reads-from-disk", text, None, reason=s.no_disk("there is no disk to read from")
        )
    cached = {
        v: by[f"{v}: mmap"]["cached_before"].value
        for v in VARIANTS
        if "cached_before" in by[f"{v}: mmap"].metrics
    }
    if any(cached.values()):
        left = ", ".join(f"{v}: {int(c):,}" for v, c in cached.items() if c)
        return Claim(
            "file-reads-from-disk",
            text,
            None,
            reason=f"posix_fadvise(DONTNEED) left pages cached ({left}), so part of "
            "the file never needed reading",
        )
    parts, holds = [], True
    for v in VARIANTS:
        got = _sum(by, v, "inblock")
        if v.startswith("anon"):
            holds &= got <= STRAY * s.pages * PAGE / BLOCK
        else:  # populate reads every page; otherwise at least each page written
            need = (s.pages if "populate" in v else s.written) * PAGE // BLOCK
            holds &= got >= need
        parts.append(f"{v}: {got:,}")
    return Claim(
        "file-reads-from-disk",
        text,
        holds,
        f"blocks read in, all phases: {', '.join(parts)} (rusage; the file is "
        f"{s.pages * PAGE // BLOCK:,} blocks)",
    )


def _notes(by, s):
    notes = [
        f"the file: an unnamed O_TMPFILE in {s.directory} ({s.fstype}); inblock and "
        f"oublock count {BLOCK}-byte blocks (the kernel's byte counts shifted by 9)",
        "MAP_POPULATE faults are taken by the kernel inside mmap: rusage counts them, "
        "perf's page-faults event (which fires only for faults raised by user code) does "
        "not",
        "the kernel charges output blocks when a page is first dirtied (in the write "
        "pass); msync then waits while they are written to the disk, which is its time",
    ]
    if s.on_disk:
        major = by["private: write"]["majflt"].value
        notes.append(
            f"reading the uncached file cost only {major:,} major fault(s) for "
            f"{s.written:,} pages in the private write pass: readahead brought the "
            "rest in while the first faults were served, so they counted as minor"
        )
        per, src = _per_page(by, "shared: write", s.written)
        if per is not None and per < 0.9:
            notes.append(
                f"the shared write pass without populate took {per:.2f} faults per "
                f"page ({src}): this kernel maps a whole large folio of the page cache "
                "per fault, and dirties (and writes back) whole folios"
            )
    return notes


def figure(result):
    from .._plots import grouped_bars, side_by_side

    variants = [v for v in VARIANTS if f"{v}: mmap" in (m.label for m in result.measurements)]

    def series(metric):
        return {ph: [result[f"{v}: {ph}"][metric] for v in variants] for ph in PHASES}

    return side_by_side(
        "mmap modes: where the faults and the disk blocks land, phase by phase",
        grouped_bars("page faults (rusage)", variants, series("faults")),
        grouped_bars("blocks read (inblock)", variants, series("inblock"), legend=False),
        grouped_bars("blocks written (oublock)", variants, series("oublock"), legend=False),
        grouped_bars("time (ms, clock)", variants, series("ms"), legend=False),
    )
