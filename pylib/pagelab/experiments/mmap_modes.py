"""mmap-modes: anonymous, private-file and shared-file mappings, each with and without
MAP_POPULATE, written and then msync'd: where each one takes its faults and its disk I/O."""

import math
from dataclasses import dataclass

from ..core.reading import Reading
from ..native.scratch import MEMORY_FS, choose
from ..native.workloads import MMAP_FILL_CHUNK
from ..results.result import Claim
from .common import BLOCK, MIB, PAGE, unavailable

TIMEOUT = 300  # the defaults take ~2 s; a multi-GiB file is read 4 times and written 3
EVENTS = "page-faults,minor-faults,major-faults"
MODES = ("anon", "private", "shared")
VARIANTS = tuple(f"{m}{p}" for m in MODES for p in ("", "+populate"))
PHASES = ("mmap", "write", "msync", "munmap")
# Writes to private or anonymous memory produce no output blocks at all; this margin only keeps
# unrelated accounting (e.g. the interpreter paging its own code) from deciding the claim.
STRAY = 0.01
SUMMARY = ("page-faults", "minflt", "majflt", "inblock", "oublock", "ms")


def memory(p):
    size = p["size_mb"] * MIB
    # resident: the file's page cache plus the private copies of it (or the anonymous pages)
    return 2 * size, size + MMAP_FILL_CHUNK + size // PAGE


# ---- the run -----------------------------------------------------------------------------


def run(ctx):
    p = ctx.params
    size = p["size_mb"] * MIB
    scratch = choose(size, "mmap-modes")
    measured, raw = ctx.workload(EVENTS, scratch=scratch)
    for m in measured:
        if "minflt" in m.metrics:
            m.add(Reading("faults", m["minflt"].value + m["majflt"].value, "rusage"))
            m.add(Reading("ms", m["elapsed"].value * 1e3, "clock", "ms"))
    pages = size // PAGE
    written = math.ceil(pages / p["stride_pages"])
    shape = Shape(pages, written, scratch.fs_type, scratch.path, raw["facts"]["file"]["how"])
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
    how: str  # O_TMPFILE, or unlinked (a name for a moment: no O_TMPFILE there)

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


def _how(s):
    return "O_TMPFILE" if s.how == "O_TMPFILE" else "created with a name and unlinked at once"


def _notes(by, s):
    notes = [
        f"the file: unnamed ({_how(s)}) in {s.directory} ({s.fstype}); inblock and "
        f"oublock count {BLOCK}-byte blocks (the kernel's byte counts shifted by 9)",
        "MAP_POPULATE fills the pages in from inside mmap, through the memory manager's fault "
        "code but without a CPU page fault: rusage counts them, perf's page-faults event "
        "(raised by the CPU's fault handler, for faults in user code and the kernel's on user "
        "memory) does not",
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
    from ..results.plots import grouped_bars, side_by_side

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
