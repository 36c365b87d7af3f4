"""competition: a victim's pages evicted on purpose come back as major faults; a competitor that
leaves memory to spare takes none of them.

The victim's file goes in the scratch directory (pagelab.native.scratch: disk-backed where there is
one). Besides regions and values, the C workload (csrc/workloads/competition.c) records typed
facts: how the file was made (O_TMPFILE or unlinked), its device, the eviction path that ran and
the errno of a MADV_PAGEOUT that failed; ``Victim`` holds them with the scratch choice.

Residency comes from mincore(2), a kernel query outside perf: it is filed under the source
``rusage``, the bucket for kernel-reported facts (getrusage, /proc). MemAvailable (/proc/meminfo)
is filed there too.
"""

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.reading import Reading
from ..machine import environment as env
from ..native.scratch import Scratch, choose
from ..native.workloads import COMPETITION_SLICES as SLICES
from ..native.workloads import COMPETITION_WRITE_CHUNK as WRITE_CHUNK
from ..results.result import Claim
from .common import BLOCK, MIB, unavailable

TIMEOUT = 300
EVENTS = "page-faults,minor-faults,major-faults"
SUMMARY = (
    "major-faults",
    "minor-faults",
    "inblock",
    "before touch",
    "after touch",
    "after eviction",
    "after pageout",
    "after re-access",
    "us_per_pass",
    "file resident",
    "anon resident",
    "alloc_s",
    "passes",
)
# Eviction may leave a few pages behind that it could not isolate at that instant (in a per-CPU
# LRU batch, locked, or mapped elsewhere); more than a tenth left means it did not work.
EVICTED_MAX_LEFT = 0.10
# The kernel counts a fault it had to retry (the page was locked for a moment, by reclaim or
# compaction) as major though it read nothing: allowed on at most 1 page in this many.
RETRIED_FAULTS = 100
# What each competitor does, for its note: in the order of the workload's competitor choices
# (sequential, random)
COMPETITORS = (
    "touched its {pages:,} pages first, then wrote one byte per page in order",
    "was the course lab's: {pages:,} pages mapped MAP_NORESERVE and never touched up front, a "
    "random page read each step and written every 8th step (a page only read maps the shared "
    "zero page)",
)
NOT_DISK = (
    "the victim's file lives on {fs} in {dir} (no disk-backed scratch directory was "
    "found): its pages are memory and cannot be evicted to disk"
)


def memory(p):
    size, rival = p["size_mb"] * MIB, p["competitor_mb"] * MIB
    mincore_vec = size // os.sysconf("SC_PAGESIZE")
    # the file's page cache, the victim's anonymous region, the competitor's region
    resident = 2 * size + rival + mincore_vec + WRITE_CHUNK
    # the competitor is forked from the worker and inherits its RLIMIT_AS: its region counts too
    return resident, resident


@dataclass(frozen=True)
class Victim:
    """Where the victim's file lived and what the workload did with it."""

    scratch: Scratch
    page_size: int
    how: str  # O_TMPFILE, or unlinked (a name for a moment: no O_TMPFILE there)
    dev: str | None  # MAJOR:MINOR of the file's device
    evict_path: str | None  # MADV_PAGEOUT or fadvise
    pageout_errno: int  # MADV_PAGEOUT on the file failed with this, so the fallback ran
    anon_pageout_errno: int  # MADV_PAGEOUT on anonymous memory failed with this


def victim(facts, scratch):
    """The Victim from the workload's typed facts (label -> name -> value) and the scratch."""
    file, evict = facts["file"], facts.get("eviction", {})
    return Victim(
        scratch,
        file["page_size"],
        file["how"],
        file.get("dev"),
        evict.get("path"),
        evict.get("pageout_errno", 0),
        facts.get("anon pageout", {}).get("errno", 0),
    )


def readahead_kb(dev, root="/"):
    """read_ahead_kb of the backing device (bdi) MAJOR:MINOR, or None if unknown."""
    try:
        return int((Path(root) / "sys/class/bdi" / dev / "read_ahead_kb").read_text())
    except (OSError, ValueError):
        return None


def task_io_accounting(root="/"):
    """True when the kernel keeps per-task I/O counts (rusage inblock/oublock are real)."""
    return (Path(root) / "proc/self/io").exists()


def run(ctx):
    p = ctx.params
    scratch = choose(p["size_mb"] * MIB, "competition")
    measured, raw = ctx.workload(EVENTS, scratch=scratch)
    f = victim(raw["facts"], scratch)
    by = {m.label: m for m in measured}
    for label in ("alone", "with competitor"):
        m = by[label]
        m.add(Reading("us_per_pass", m["elapsed"].value * 1e6 / m["passes"].value, "clock", "us"))
    swap = env.swap_total()
    claims = [
        _mincore(by, f, p),
        _major(by, f, p),
        _disk(by, f),
        _anon(by, f, swap),
        _swapped(by, f, swap),
        _competitor(by, p, f),
    ]
    return ctx.result(measured, claims, _notes(by, f, p, swap), summary=SUMMARY, figure=figure)


def _fs(f):
    return f.scratch.fs_type or "an unknown filesystem"


def _not_disk(f):
    if not f.scratch.disk_backed:
        return NOT_DISK.format(fs=_fs(f), dir=f.scratch.path)
    return None


def _res(by, label, stage):
    return int(by[label][stage].value)


def _evicted(by):
    return _res(by, "file residency", "after touch") - _res(by, "file residency", "after eviction")


def _mincore(by, f, p):
    text = (
        "mincore on the victim's own file shows every page resident after touching, almost "
        "none after eviction, and all of them again after re-access"
    )
    cid = "mincore-shows-eviction"
    if why := _not_disk(f):
        return Claim(cid, text, None, reason=why)
    touched, left, back = (
        _res(by, "file residency", s) for s in ("after touch", "after eviction", "after re-access")
    )
    pages = _pages(p, f)
    holds = touched == pages and left <= EVICTED_MAX_LEFT * pages and back == pages
    return Claim(
        cid,
        text,
        holds,
        f"resident pages of {pages:,}: {touched:,} after touch, {left:,} after eviction, "
        f"{back:,} after re-access (mincore, rusage)",
    )


def _pages(p, f):
    """Pages in the victim's file, and in its anonymous region (the same size)."""
    return p["size_mb"] * MIB // f.page_size


def _faults(m, name):
    r = m[name]
    return r.best, r.best_source


def _major(by, f, p):
    text = (
        "evicted file pages come back through major faults, while pages still in memory come "
        "back as minor faults, a rare retried one aside"
    )
    cid = "evicted-pages-major-faults"
    if why := _not_disk(f):
        return Claim(cid, text, None, reason=why)
    again, first = by["file: re-access"], by["file: first touch"]
    if why := unavailable(again["major-faults"]) or unavailable(first["major-faults"]):
        return Claim(cid, text, None, reason=why)
    major, src = _faults(again, "major-faults")
    minor, _ = _faults(again, "minor-faults")
    major0, src0 = _faults(first, "major-faults")
    minor0, _ = _faults(first, "minor-faults")
    evicted = _evicted(by)
    # pages reclaim took before the first touch (memory pressure, or a host's proactive
    # reclaim: DAMON drops idle unmapped page cache within seconds) rightly come back as majors
    pages = _pages(p, f)
    gone = pages - _res(by, "file residency", "before touch")
    allowed = gone + pages // RETRIED_FAULTS
    holds = evicted > 0 and major >= 1 and major0 <= allowed
    return Claim(
        cid,
        text,
        holds,
        f"re-access after evicting {evicted:,} pages: {major:,} major + {minor:,} minor "
        f"faults ({src}); first touch of the resident file: {major0:,} major + {minor0:,} "
        f"minor ({src0}), at most {allowed:,} major allowed",
    )


def _disk(by, f):
    text = "re-reading evicted pages reads at least their size back from disk"
    cid = "evicted-pages-read-from-disk"
    if why := _not_disk(f):
        return Claim(cid, text, None, reason=why)
    if not task_io_accounting():
        return Claim(
            cid,
            text,
            None,
            reason="this kernel keeps no per-task I/O counts "
            "(CONFIG_TASK_IO_ACCOUNTING is off: /proc/self/io is missing), so rusage "
            "inblock cannot show the reads",
        )
    blocks = by["file: re-access"]["inblock"].value
    evicted = _evicted(by) * f.page_size
    holds = evicted > 0 and blocks * BLOCK >= evicted
    return Claim(
        cid,
        text,
        holds,
        f"{blocks * BLOCK / MIB:,.1f} MiB read ({blocks:,} blocks of 512 B, rusage) "
        f"for {evicted / MIB:,.1f} MiB evicted (mincore)",
    )


def _anon(by, f, swap):
    text = (
        "without swap, MADV_PAGEOUT cannot reclaim anonymous memory: it stays resident and "
        "comes back without major faults"
    )
    cid = "anon-pageout-needs-swap"
    touched, after = (_res(by, "anon residency", s) for s in ("after touch", "after pageout"))
    measured = f"{after:,} of {touched:,} anonymous pages stayed resident after MADV_PAGEOUT"
    if err := f.anon_pageout_errno:
        return _pageout_failed(cid, text, err)
    if swap is None:
        return Claim(
            cid,
            text,
            None,
            reason="/proc/swaps cannot be read, so whether this "
            f"machine has swap is unknown; measured: {measured}",
        )
    if swap > 0:
        return Claim(
            cid,
            text,
            None,
            reason=f"this machine has {swap / MIB:,.0f} MiB of swap, so "
            f"the no-swap case cannot be shown here; measured: {measured}",
        )
    again = by["anon: re-access"]
    if why := unavailable(again["major-faults"]):
        return Claim(cid, text, None, reason=why)
    major, src = _faults(again, "major-faults")
    holds = touched > 0 and after == touched and major == 0
    return Claim(
        cid,
        text,
        holds,
        f"no swap (/proc/swaps is empty): {measured}; re-access took "
        f"{major:,} major faults ({src})",
    )


def _pageout_failed(cid, text, err):
    why = f"MADV_PAGEOUT failed here with {errno.errorcode.get(err, err)} (it needs Linux 5.4)"
    return Claim(cid, text, None, reason=why)


def _swapped(by, f, swap):
    text = (
        "with swap, MADV_PAGEOUT sends anonymous memory to swap: it leaves memory and comes "
        "back through major faults"
    )
    cid = "anon-pageout-swaps"
    if err := f.anon_pageout_errno:
        return _pageout_failed(cid, text, err)
    if not swap:
        return Claim(
            cid,
            text,
            None,
            reason="this machine has no swap (/proc/swaps is empty), so anonymous pages "
            "cannot leave memory: only the file's pages were evicted"
            if swap == 0
            else "/proc/swaps cannot be read, so whether this machine has swap is unknown",
        )
    again = by["anon: re-access"]
    if why := unavailable(again["major-faults"]):
        return Claim(cid, text, None, reason=why)
    touched, after = (_res(by, "anon residency", s) for s in ("after touch", "after pageout"))
    back = _res(by, "anon residency", "after re-access")
    major, src = _faults(again, "major-faults")
    minor, _ = _faults(again, "minor-faults")
    holds = touched > 0 and after <= EVICTED_MAX_LEFT * touched and back == touched and major >= 1
    return Claim(
        cid,
        text,
        holds,
        f"{touched - after:,} of {touched:,} anonymous pages left memory after MADV_PAGEOUT, "
        f"{back:,} resident after re-access (mincore); re-access took {major:,} major + "
        f"{minor:,} minor faults ({src}); swap {swap / MIB:,.0f} MiB (/proc/swaps)",
    )


def _competitor(by, p, f):
    text = (
        "a competitor that leaves memory to spare takes none of the victim's pages: no major "
        "faults and every page still resident while it runs"
    )
    cid = "competitor-with-room-takes-nothing"
    limit = env.cgroup_memory_limit()
    if limit is not None:
        return Claim(
            cid,
            text,
            None,
            reason=f"a cgroup memory limit ({limit / MIB:,.0f} MiB) "
            "applies here and MemAvailable does not show how much of it was left, so "
            "'memory to spare' cannot be established",
        )
    m = by["with competitor"]
    avail = m["mem_available_mib"].value
    used = 2 * p["size_mb"] + p["competitor_mb"]
    # "to spare": after everything was allocated, at least as much again was still available,
    # far above the watermarks where the kernel starts reclaiming
    if avail < used:
        return Claim(
            cid,
            text,
            None,
            reason=f"memory was scarce during the run: MemAvailable "
            f"{avail:,.0f} MiB with victim and competitor using {used:,} MiB",
        )
    if why := unavailable(m["major-faults"]):
        return Claim(cid, text, None, reason=why)
    major, src = _faults(m, "major-faults")
    file_res, anon_res = int(m["file resident"].value), int(m["anon resident"].value)
    pages = _pages(p, f)
    holds = major == 0 and file_res == pages and anon_res == pages
    return Claim(
        cid,
        text,
        holds,
        f"victim with the competitor: {major:,} major faults ({src}), {file_res:,} + "
        f"{anon_res:,} of {pages:,} + {pages:,} file + anonymous pages resident "
        f"(mincore); MemAvailable {avail:,.0f} MiB for {used:,} MiB in use (rusage)",
    )


def _notes(by, f, p, swap):
    notes = []
    where = f"{f.scratch.path} on {_fs(f)}"
    if f.scratch.disk_backed:
        how = (
            "O_TMPFILE"
            if f.how == "O_TMPFILE"
            else "created with a name and unlinked at once: no O_TMPFILE here"
        )
        notes.append(
            f"The victim's file is unnamed ({how}; freed when closed) in {where}. "
            "mincore tells the truth about it because the victim created it: for files "
            "the caller could not write, mincore reports every page resident."
        )
    else:
        notes.append(_not_disk(f) + ".")
    if f.scratch.skipped:
        notes.append(
            "Skipped memory-only scratch directories: " + ", ".join(f.scratch.skipped) + "."
        )
    if f.evict_path == "MADV_PAGEOUT":
        notes.append("Eviction path: madvise(MADV_PAGEOUT) on the mapping.")
    else:
        err = f.pageout_errno
        why = (
            f"MADV_PAGEOUT failed with {errno.errorcode.get(err, err)}, so the fallback ran"
            if err
            else "as asked with evict=fadvise"
        )
        notes.append(f"Eviction path: munmap + posix_fadvise(POSIX_FADV_DONTNEED) + mmap ({why}).")
    ra = readahead_kb(f.dev or "")
    if not f.scratch.disk_backed:
        pass  # nothing is read back from disk: readahead plays no part
    elif p["readahead"] == 0:
        window = f"up to read_ahead_kb={ra} KiB" if ra is not None else "a readahead window"
        notes.append(
            f"Readahead: one major fault reads in {window} of the file; the later "
            "faults in that window find the pages in memory and are minor."
        )
    else:
        notes.append(
            "Readahead off (MADV_RANDOM): each fault on an evicted page reads just that "
            "page, so expect one major fault per evicted page."
        )
    touched, after = (_res(by, "anon residency", s) for s in ("after touch", "after pageout"))
    if swap == 0:
        notes.append(
            f"No swap on this machine: MADV_PAGEOUT on anonymous memory returned "
            f"success and reclaimed nothing ({after:,} of {touched:,} pages stayed "
            "resident). Anonymous pages have no file to be re-read from; without swap "
            "they cannot leave memory."
        )
    elif swap:
        notes.append(
            f"Anonymous eviction: madvise(MADV_PAGEOUT) to swap ({swap / MIB:,.0f} MiB in "
            f"/proc/swaps): {touched - after:,} of {touched:,} anonymous pages left memory, and "
            "each one read back from swap is a major fault."
        )
    alone, contested = by["alone"], by["with competitor"]
    avail = contested["mem_available_mib"].value
    notes.append(
        f"Competition: victim {2 * p['size_mb']} MiB (file + anonymous), competitor "
        f"{p['competitor_mb']} MiB, MemAvailable {avail:,.0f} MiB while both ran: pressure only "
        "matters when memory is scarce, and the memory budget keeps this experiment far from "
        "that. A pass with the competitor took "
        f"{contested['us_per_pass'].value:,.0f} us against {alone['us_per_pass'].value:,.0f} us "
        f"alone (clock; involuntary context switches {contested['nivcsw'].value:,} vs "
        f"{alone['nivcsw'].value:,}, rusage): any difference without extra faults is competition "
        "for caches, memory bandwidth and CPU time, not for pages."
    )
    rival, pages = by["competitor"], p["competitor_mb"] * MIB // f.page_size
    how = COMPETITORS[p["competitor"]].format(pages=pages)
    notes.append(
        f"The competitor {how}: it took {rival['minflt'].value:,.0f} minor and "
        f"{rival['majflt'].value:,.0f} major faults in all (rusage)."
    )
    notes.append(
        "Residency is counted with mincore(2) and MemAvailable read from /proc/meminfo: "
        "kernel-reported facts outside perf, labelled 'rusage'."
    )
    return notes


def figure(result):
    from ..results.plots import grid, grouped_bars, lines

    by = {m.label: m for m in result.measurements}
    stages = ["before touch", "after touch", "after eviction", "after re-access"]
    anon_stage = {"after eviction": "after pageout"}
    residency = grouped_bars(
        "mincore: resident pages",
        ["before touch", "after touch", "after evict/pageout", "after re-access"],
        {
            "file": [by["file residency"][s] for s in stages],
            "anonymous": [by["anon residency"][anon_stage.get(s, s)] for s in stages],
        },
        y_title="pages",
    )
    regions = ["file: first touch", "file: re-access", "anon: first touch", "anon: re-access"]
    faults = grouped_bars(
        "faults: major vs minor",
        regions,
        {
            "major": [by[r]["major-faults"] for r in regions],
            "minor": [by[r]["minor-faults"] for r in regions],
        },
        y_title="faults",
    )
    seconds = result.params["seconds"]
    x = [round(seconds * (i + 1) / SLICES, 3) for i in range(SLICES)]
    names = [f"s{i + 1:02d}" for i in range(SLICES)]
    phases = ("alone", "with competitor")
    per_pass = lines(
        "victim: time per pass",
        x,
        {ph: [by[ph][f"{n} us_per_pass"] for n in names] for ph in phases},
        "s into the phase",
        y_title="us per pass",
    )
    slice_faults = lines(
        "victim: faults per slice",
        x,
        {
            f"{ph}: {k}": [by[ph][f"{n} {k}"] for n in names]
            for ph in phases
            for k in ("majflt", "minflt")
        },
        "s into the phase",
        y_title="faults",
    )
    return grid(
        "competition: eviction and a competitor", (residency, faults), (per_pass, slice_faults)
    )
