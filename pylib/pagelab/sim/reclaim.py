"""The page-reclaim model: replay a reference string of pages against a number of page frames.

FIFO, LRU, clock and the kernel's active/inactive lists (with the course lab's "never activate"
change) run in C (csrc/sim/reclaim.c); OPT, Belady's optimal policy, needs the future and runs
here as the lower bound. Every count is a model's, labelled source "sim".
"""

import heapq
from dataclasses import dataclass

import numpy as np

from .._native import ffi, lib
from ..core.errors import BadInput
from .trace import CHUNK, open_trace, records

SOURCE = "sim"
PAGE = lib.pl_page_size()  # the kernel's base page: page_string's default
_NATIVE = {
    "fifo": lib.PL_RECLAIM_FIFO,
    "lru": lib.PL_RECLAIM_LRU,
    "clock": lib.PL_RECLAIM_CLOCK,
    "kernel": lib.PL_RECLAIM_KERNEL,
    "never-activate": lib.PL_RECLAIM_NEVER_ACTIVATE,
}
RECLAIM_POLICIES = (*_NATIVE, "opt")


@dataclass(frozen=True)
class ReclaimResult:
    """What one policy did with one reference string and a number of frames (source "sim")."""

    policy: str
    frames: int
    refs: int
    pages: int  # distinct pages in the string: the compulsory faults
    faults: int
    evictions: int
    activations: int = 0  # kernel: inactive -> active; 0 for the other policies
    deactivations: int = 0
    source: str = SOURCE

    @property
    def fault_rate(self):
        return self.faults / self.refs if self.refs else None

    def __str__(self):
        extra = f", {self.activations:,} activations" if self.policy == "kernel" else ""
        rate = f"{self.fault_rate:.2%}" if self.refs else "none"
        return (
            f"{self.policy:<15} {self.frames:>6,} frames: {self.faults:>8,} faults "
            f"({rate} of {self.refs:,} references){extra} ({self.source})"
        )


def _dense(refs):
    """The reference string as dense int32 page ids 0..P-1, and P."""
    try:
        a = np.asarray(refs)
    except (TypeError, ValueError) as e:
        raise BadInput(f"a reference string must be a sequence of page numbers ({e})") from None
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise BadInput("a reference string must be a flat sequence of integer page numbers")
    if a.size and a.min() < 0:
        raise BadInput("page numbers must not be negative")
    uniq, dense = np.unique(a, return_inverse=True)
    return np.ascontiguousarray(dense, dtype=np.int32), len(uniq)


def reclaim(refs, frames, policy="kernel"):
    """Replay ``refs`` (page numbers, in order) with ``frames`` page frames under ``policy`` (one
    of RECLAIM_POLICIES) and count faults, evictions and, for the kernel's lists, activations."""
    if policy not in RECLAIM_POLICIES:
        raise BadInput(f"unknown policy {policy!r} (known: {', '.join(RECLAIM_POLICIES)})")
    if isinstance(frames, bool) or not isinstance(frames, int | np.integer) or frames < 1:
        raise BadInput(f"frames must be a positive integer, not {frames!r}")
    dense, pages = _dense(refs)
    if policy == "opt":
        faults = _opt(dense, int(frames))
        return ReclaimResult(
            policy, int(frames), len(dense), pages, faults, max(faults - int(frames), 0)
        )
    out = ffi.new("struct pl_reclaim_stats *")
    rc = lib.pl_reclaim_run(
        ffi.from_buffer("int32_t[]", dense),
        len(dense),
        max(pages, 1),
        int(frames),
        _NATIVE[policy],
        out,
    )
    if rc < 0:
        raise MemoryError(f"the reclaim model could not allocate state for {pages:,} pages")
    return ReclaimResult(
        policy,
        int(frames),
        out.refs,
        pages,
        out.faults,
        out.evictions,
        out.activations,
        out.deactivations,
    )


def _opt(dense, frames):
    """Belady's OPT: on a fault with all frames full, evict the page used furthest in the
    future. A max-heap of (next use, page) with stale entries skipped."""
    n = len(dense)
    next_use = np.full(n, n, dtype=np.int64)
    last = {}
    for i in range(n - 1, -1, -1):
        p = int(dense[i])
        next_use[i] = last.get(p, n)
        last[p] = i
    resident, heap, faults = {}, [], 0  # page -> its next use
    for i in range(n):
        p = int(dense[i])
        if p not in resident:
            faults += 1
            if len(resident) == frames:
                while True:
                    neg, q = heapq.heappop(heap)
                    if resident.get(q) == -neg:
                        del resident[q]
                        break
        resident[p] = int(next_use[i])
        heapq.heappush(heap, (-resident[p], p))
    return faults


def page_string(trace, page_size=PAGE):
    """The pages a valgrind lackey trace touches, in order, consecutive repeats merged (a repeat
    changes nothing for any policy here): a reference string from a real program's run."""
    if page_size < 1 or page_size & (page_size - 1):
        raise BadInput(f"page_size must be a power of two, not {page_size!r}")
    shift = page_size.bit_length() - 1
    t = open_trace(trace)
    addr, size, op = (
        np.empty(CHUNK, np.uint64),
        np.empty(CHUNK, np.uint32),
        np.empty(CHUNK, np.uint8),
    )
    buffers = (
        ffi.from_buffer("uint64_t[]", addr),
        ffi.from_buffer("uint32_t[]", size),
        ffi.from_buffer("uint8_t[]", op),
    )
    parts, prev = [], None
    for n in records(trace, t, lambda: lib.pl_trace_read(t, *buffers, CHUNK)):
        first = addr[:n] >> np.uint64(shift)
        last = (addr[:n] + size[:n].astype(np.uint64) - np.uint64(1)) >> np.uint64(shift)
        # an access that straddles two pages references both
        pages = np.column_stack((first, last)).ravel()[_keep(first, last)]
        keep = np.r_[True, pages[1:] != pages[:-1]]
        if prev is not None and pages.size and pages[0] == prev:
            keep[0] = False
        pages = pages[keep]
        if pages.size:
            prev = pages[-1]
            parts.append(pages)
    return np.concatenate(parts) if parts else np.empty(0, np.uint64)


def _keep(first, last):
    """Mask over the interleaved (first, last) pairs: every first, and a last only when the
    access crosses into the next page."""
    mask = np.ones(2 * len(first), dtype=bool)
    mask[1::2] = first != last
    return mask
