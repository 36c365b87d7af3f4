"""thread-stacks: MAP_32BIT's 1 GiB window, and the thread-stack trap it set in 2008.

glibc once put every x86-64 thread stack in the MAP_32BIT window and retried without the flag
once the window was full (the 2003 retry); the kernels of 2008 searched the window linearly on
every failing call. This experiment fills the window, times the failing call and the retry in
it, and creates threads with 2003-style and today's stacks side by side.
"""

import errno
import os
import platform

from ..core.errors import BadInput, BudgetExceeded, PagelabError
from ..core.numbers import format_size
from ..core.reading import Reading
from ..machine import environment as env
from ..native.worker import ADDRESS_SPACE_SLACK
from ..native.workloads import MAP32_WINDOW as WINDOW
from ..results.result import Claim
from .common import HUGE_PAGE, MIB, ratio_text

TIMEOUT = 120
EVENTS = "page-faults"  # filling 1 GiB of address space should fault in nothing
GIB = 1 << 30
BASE_RANDOM = 32 * MIB  # the search base is 1 GiB plus a random offset below 32 MiB
# A 2 MiB-multiple anonymous mapping is aligned for transparent huge pages (Linux 6.7+): its
# first address may sit up to one alignment step plus one 2 MiB shift above the search base.
THP_SLACK = 2 * HUGE_PAGE
# One step of a linear walk over VMAs is at least a dependent load (>= 4 cycles, >= ~1 ns at
# <= 5 GHz); a search that is not linear must cost far less per mapping: a quarter of that.
LINEAR_NS_PER_VMA = 1.0
NOT_LINEAR_FRACTION = 0.25
# Below this many mappings, what a linear walk would add (>= 1 ns each) is not clearly apart
# from the fixed cost of descending the VMA tree (a few cache misses: hundreds of ns).
MIN_VMAS = 4096
# The retry is two calls, one of which fails before allocating anything: <= 2 plain mmaps; 3x
# leaves room for noise, while a linear walk over the default ~16,000 mappings would add >= 16 us,
# several plain mmaps more.
RETRY_MAX_RATIO = 3.0
# After the window is full a 2003-style create makes one failing mmap more than a MAP_STACK one,
# next to the >= 4 syscalls both make (mmap, mprotect, clone, futex): 1.5x is generous for that;
# in 2008 a create went from about 35,000 to 25,000,000 cycles (Pardo's report, quoted by Joe
# Damato's write-up), about 700x.
CREATE_MAX_RATIO = 1.5
MIN_AFTER_FULL = 16  # creates after the window filled needed for a steady median
# Per thread: the stack-top pages and TLS it touches, and its kernel stack (never its whole stack).
THREAD_RESIDENT = 64 * 1024
MAPS_HEADROOM = 2000  # mappings of the worker's own interpreter, libraries and arenas
SUMMARY = (
    "mappings",
    "MiB",
    "fill_ns_median",
    "page-faults",
    "vmas",
    "plain_ns",
    "fail_ns",
    "retry_ns",
    "stacks_in_window",
    "us_before_full",
    "us_after_full",
)
NOT_X86 = "MAP_32BIT exists only on x86-64; this machine is {}"


def max_map_count(root="/"):
    """vm.max_map_count, or None where it cannot be read."""
    try:
        with open(os.path.join(root, "proc/sys/vm/max_map_count")) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _check(p):
    """Sizes must be page multiples, and the mappings must fit under vm.max_map_count."""
    page = os.sysconf("SC_PAGE_SIZE")
    for key in ("chunk_kb", "stack_kb"):
        if p[key] * 1024 % page:
            raise BadInput(
                f"thread-stacks: {key} must be a multiple of the page size "
                f"({page // 1024} KiB), got {p[key]}"
            )
    need = max(GIB // (p["chunk_kb"] * 1024), 4 * p["threads"]) + MAPS_HEADROOM
    limit = max_map_count()
    if limit is not None and need > limit:
        raise BadInput(
            f"thread-stacks needs about {need:,} mappings but vm.max_map_count is "
            f"{limit:,}; choose a larger chunk_kb or fewer threads"
        )


def memory(p):
    _check(p)
    tables = 4 * MIB  # pointers and timings, a few bytes per mapping and per call
    resident = 2 * p["threads"] * THREAD_RESIDENT + tables
    # window phase: the full window plus one plain and one retried chunk; thread phase: every
    # stack of both kinds at once. The phases do not overlap.
    window = GIB + 2 * p["chunk_kb"] * 1024
    stacks = 2 * p["threads"] * p["stack_kb"] * 1024
    _fits_address_space(window, stacks, tables)
    return resident, max(window, stacks) + tables


def _fits_address_space(window, stacks, tables):
    """The address space is this experiment's real cost: refuse up front what RLIMIT_AS forbids,
    rather than let a limit pass for a full window halfway through."""
    limit = env.rlimit_as()
    extra = tables + ADDRESS_SPACE_SLACK
    if limit is None or max(window, stacks) + extra <= limit:
        return
    if window + extra > limit:
        need, what = window + extra, "the MAP_32BIT window alone"
    else:
        need = stacks + extra
        what = "the thread stacks (choose fewer threads or a smaller stack_kb)"
    raise BudgetExceeded(
        f"thread-stacks needs {need / GIB:.1f} GiB of address space for {what}, "
        f"but RLIMIT_AS is {limit / GIB:.1f} GiB"
    )


def run(ctx):
    p = ctx.params
    measured, _ = ctx.workload(EVENTS)
    by = {m.label: m for m in measured}
    fill = by["window fill"]
    if not fill["map_32bit"].value:
        why = NOT_X86.format(platform.machine())
        return ctx.result(
            measured,
            [Claim(i, t, None, reason=why) for i, t in TEXTS.items()],
            [why],
            figure=figure,
        )
    fill.add(Reading("MiB", fill["bytes"].value / MIB, fill["bytes"].source, "MiB"))
    unfilled = _unfilled(fill)
    claims = [
        _window(fill, p),
        _capacity(fill),
        _enomem(fill),
        _not_linear(by.get("full window"), by.get("one-mapping window"), unfilled),
        _retry(by.get("full window"), unfilled),
        _no_cliff(by),
    ]
    order = [
        "window fill",
        "full window",
        "one-mapping window",
        "thread creates",
        "threads: MAP_32BIT first",
        "threads: MAP_STACK",
        "fill series",
        "failing series",
    ]
    measured = [by[label] for label in order if label in by]
    return ctx.result(measured, claims, _notes(by, p), summary=SUMMARY, figure=figure)


TEXTS = {
    "map32bit-window": "MAP_32BIT mappings land in [1 GiB, 2 GiB), the first within 32 MiB "
    "above 1 GiB (the randomised base)",
    "map32bit-holds-1gib": "the window holds about 1 GiB: 1 GiB less at most the random base "
    "offset and one mapping",
    "map32bit-full-enomem": "once the window is full MAP_32BIT fails with ENOMEM, while the same "
    "call without the flag still succeeds",
    "failing-call-not-linear": "a failing MAP_32BIT call does not walk the window's mappings one "
    "by one (the 2008 gap search did)",
    "retry-two-syscalls": "the 2003 retry (MAP_32BIT, then without it) costs about two system "
    "calls, not the 2008 slowdown",
    "thread-create-no-cliff": "once the window is full, creating a thread with a MAP_32BIT-first "
    "stack costs about what a MAP_STACK stack does",
}


def _claim(cid, holds, evidence="", reason=None):
    return Claim(cid, TEXTS[cid], holds, evidence, reason)


def _hex(x):
    return f"{int(x):#x}"


def _window(fill, p):
    n = int(fill["mappings"].value)
    if not n:
        return _claim("map32bit-window", None, reason="no MAP_32BIT call succeeded at all")
    first, lo, hi = (fill[k].value for k in ("first_addr", "lowest_addr", "highest_end"))
    slack = BASE_RANDOM + (THP_SLACK if p["chunk_kb"] * 1024 % HUGE_PAGE == 0 else 0)
    holds = (
        fill["outside"].value == 0
        and lo >= WINDOW[0]
        and hi <= WINDOW[1]
        and first - WINDOW[0] < slack
    )
    return _claim(
        "map32bit-window",
        holds,
        f"{n:,} mappings from {_hex(lo)} to {_hex(hi)}, "
        f"{int(fill['outside'].value)} outside the window; the first at {_hex(first)}, "
        f"{(first - WINDOW[0]) / MIB:.2f} MiB above 1 GiB (mmap's return values)",
    )


def _capacity(fill):
    got, chunk = fill["bytes"].value, fill["chunk_bytes"].value
    if not fill["errno"].value:
        return _claim(
            "map32bit-holds-1gib",
            False,
            f"MAP_32BIT gave out {got / MIB:,.0f} MiB without failing: more than the "
            "window holds, so the flag is not confining mappings here",
        )
    holds = GIB - BASE_RANDOM - chunk < got <= GIB
    why = ""
    if not fill["plain_after_fail"].value:
        why = "; a process-wide limit, not the window, stopped the fill"
    elif not holds and chunk % HUGE_PAGE == 0:
        why = (
            "; mappings of a 2 MiB multiple are aligned for transparent huge pages, which "
            "leaves holes between them (see the notes)"
        )
    return _claim(
        "map32bit-holds-1gib",
        holds,
        f"{got / MIB:,.1f} MiB in {int(fill['mappings'].value):,} mappings of "
        f"{format_size(chunk)} before the first failure (1 GiB = 1,024 MiB){why}",
    )


def _enomem(fill):
    err = int(fill["errno"].value)
    if not err:
        return _claim(
            "map32bit-full-enomem",
            False,
            "MAP_32BIT never failed: it took one mapping more than the window can hold",
        )
    name = errno.errorcode.get(err, str(err))
    plain = bool(fill["plain_after_fail"].value)
    return _claim(
        "map32bit-full-enomem",
        err == errno.ENOMEM and plain,
        f"call {int(fill['mappings'].value) + 1:,} failed with {name} in "
        f"{fill['first_fail_ns'].value:,.0f} ns (clock); the same call without the "
        + (
            "flag then succeeded"
            if plain
            else "flag failed too: a process-wide "
            "limit (vm.max_map_count, RLIMIT_AS), not the window, stopped it"
        ),
    )


def _unfilled(fill):
    """Why no full window was timed (the C workload times only a window MAP_32BIT filled)."""
    if not fill["errno"].value:
        return "MAP_32BIT never failed, so there was no full window to time calls in"
    return (
        "a plain mmap failed right after MAP_32BIT did: a process-wide limit, not the "
        "window, stopped the fill, so no full window was timed"
    )


def _not_linear(full, one, unfilled):
    cid = "failing-call-not-linear"
    if full is None:
        return _claim(cid, None, reason=unfilled)
    if one is None or "fail_ns" not in one.metrics:
        e = int(one["errno"].value) if one is not None and "errno" in one.metrics else 0
        return _claim(
            cid,
            None,
            reason="the span of the full window could not be held by one "
            f"mapping ({errno.errorcode.get(e, e)}: another mapping lies inside it)",
        )
    n = int(full["vmas"].value)
    if n < MIN_VMAS:
        return _claim(
            cid,
            None,
            reason=f"only {n:,} mappings filled the window; at least "
            f"{MIN_VMAS:,} are needed to tell a linear search (chunk_kb <= "
            f"{GIB // MIN_VMAS // 1024})",
        )
    dense, sparse = full["fail_ns"].value, one["fail_ns"].value
    per = (dense - sparse) / (n - 1)
    bound = LINEAR_NS_PER_VMA * NOT_LINEAR_FRACTION
    return _claim(
        cid,
        per < bound,
        f"{dense:,.0f} ns with {n:,} mappings in the window vs {sparse:,.0f} ns with "
        f"one (medians, clock): {per:+.3f} ns per mapping, where a linear walk costs "
        f">= {LINEAR_NS_PER_VMA:g} ns per mapping (threshold {bound:g})",
    )


def _retry(full, unfilled):
    cid = "retry-two-syscalls"
    if full is None:
        return _claim(cid, None, reason=unfilled)
    retry, plain, fail = (full[k].value for k in ("retry_ns", "plain_ns", "fail_ns"))
    ratio = retry / plain
    return _claim(
        cid,
        ratio <= RETRY_MAX_RATIO,
        f"retry {retry:,.0f} ns = {ratio_text(ratio)} one plain mmap ({plain:,.0f} ns; "
        f"the failing call alone {fail:,.0f} ns; medians, clock; threshold "
        f"{RETRY_MAX_RATIO:g}x)",
    )


def _no_cliff(by):
    cid = "thread-create-no-cliff"
    threads = by.get("thread creates")
    old, new = by.get("threads: MAP_32BIT first"), by.get("threads: MAP_STACK")
    if threads is None or old is None or new is None:
        return _claim(cid, None, reason="the thread phase did not run")
    full_at = int(threads["full_at"].value)
    made = min(int(old["created"].value), int(new["created"].value))
    if full_at < 0 or made - full_at < MIN_AFTER_FULL:
        when = "never filled" if full_at < 0 else f"filled only at thread {full_at:,}"
        return _claim(
            cid,
            None,
            reason=f"with {made:,} threads of each kind the window {when}; "
            f"at least {MIN_AFTER_FULL} creates after it fills are needed (raise "
            "threads or stack_kb)",
        )
    a, b = old["us_after_full"].value, new["us_after_full"].value
    return _claim(
        cid,
        a <= CREATE_MAX_RATIO * b,
        f"after the window filled at thread {full_at:,}: {a:.1f} us vs {b:.1f} us per "
        f"create ({a / b:.2f}x; medians over {made - full_at:,} threads each, clock; "
        f"threshold {CREATE_MAX_RATIO:g}x)",
    )


def _notes(by, p):
    notes = []
    fill = by["window fill"]
    full = by.get("full window")
    if full is not None and full["late_successes"].value:
        late = int(full["late_successes"].value)
        notes.append(
            f"{late} MAP_32BIT call{'s' * (late > 1)} still succeeded after the first "
            "failure: the search base is random per call, and a low one can still find "
            "a hole"
        )
    notes.append(
        f"page faults while filling the window: {_faults(fill)} - the cost is "
        "address space, not memory"
    )
    if fill["nivcsw"].value:
        notes.append(
            f"the worker was preempted {fill['nivcsw'].value:,.0f} times while filling "
            "the window (rusage nivcsw); such calls stand out as slow, so the figure "
            "shows medians and the claims use medians"
        )
    if p["chunk_kb"] * 1024 % HUGE_PAGE == 0 and fill["mappings"].value:
        span = fill["highest_end"].value - fill["lowest_addr"].value
        notes.append(_holes("chunk", fill["chunk_bytes"].value, span / fill["mappings"].value))
    old, threads = by.get("threads: MAP_32BIT first"), by.get("thread creates")
    if old is not None and old["stacks_in_window"].value:
        n, stack = int(old["stacks_in_window"].value), p["stack_kb"] * 1024
        per = old["window_span"].value / n
        then = " and then it was full" if threads["full_at"].value >= 0 else ""
        notes.append(
            f"{n} 2003-style stacks of {format_size(stack)} went into the window "
            f"({n * stack / MIB:,.0f} MiB){then}; each took {per / MIB:.2f} MiB of it"
        )
        if stack % HUGE_PAGE == 0:
            notes.append(_holes("stack", stack, per))
    if threads is not None and "failed_at" in threads.metrics:
        e = int(threads["errno"].value)
        notes.append(
            f"pthread_create failed with {errno.errorcode.get(e, e)} at thread "
            f"{int(threads['failed_at'].value):,} (a pids or threads limit?); everything "
            "created was joined and the claims use those threads"
        )
    return notes


def _holes(what, size, per):
    """A note on 2 MiB-multiple mappings, which the kernel aligns for transparent huge pages."""
    if per < size + HUGE_PAGE / 2:
        return (
            f"each {what} of {format_size(size)} took {per / MIB:.2f} MiB of the window: no holes"
        )
    return (
        f"each {what} of {format_size(size)} took {per / MIB:.2f} MiB of the window: mappings of a "
        "2 MiB multiple are aligned for transparent huge pages, and on this kernel that "
        f"leaves a hole beside each bottom-up MAP_32BIT mapping (try a {what} size that is "
        "not a multiple of 2 MiB)"
    )


def _faults(m):
    r = m["page-faults"]
    if r.value is not None:
        return f"{r.value:,.0f} (sw)"
    return f"{m['minflt'].value:,.0f} (rusage minflt; perf: {r.reason})"


def _series(m, prefix):
    """A series recorded as "<prefix>@<index>" values: (indices, readings), in index order."""
    items = sorted(
        (int(name.split("@")[1]), r)
        for name, r in m.metrics.items()
        if name.startswith(prefix + "@")
    )
    return [i for i, _ in items], [r for _, r in items]


def figure(result):
    from ..results.plots import points, side_by_side

    by = {m.label: m for m in result.measurements}
    panels = []
    if "fill series" in by:
        xs, ys = _series(by["fill series"], "ns")
        window = {
            f"mmap MAP_32BIT, median of {int(by['fill series']['bucket'].value)}": (xs, ys, "lines")
        }
        if "failing series" in by:
            xs, ys = _series(by["failing series"], "ns")
            window["failing MAP_32BIT calls"] = (xs, ys, "markers")
        panels.append(
            points("MAP_32BIT calls as the window fills", window, "call", y_title="ns per call")
        )
    kinds = {}
    for label, name in (
        ("threads: MAP_32BIT first", "2003: MAP_32BIT, then retry"),
        ("threads: MAP_STACK", "today: MAP_STACK"),
    ):
        if label in by and "bucket" in by[label].metrics:
            xs, ys = _series(by[label], "us")
            kinds[f"{name}, median of {int(by[label]['bucket'].value)}"] = (xs, ys, "lines")
    if kinds:
        panels.append(
            points(
                "pthread_create as threads accumulate",
                kinds,
                "thread",
                y_title="us per create (stack + pthread_create)",
            )
        )
    if not panels:
        raise PagelabError(
            "thread-stacks has nothing to draw: "
            + (result.notes[0] if result.notes else "no series were recorded")
        )
    fig = side_by_side("the MAP_32BIT window and thread stacks", *panels)
    threads = by.get("thread creates")
    if kinds and threads is not None and threads["full_at"].value >= 0:
        fig.add_vline(
            x=threads["full_at"].value,
            line_dash="dot",
            row=1,
            col=len(panels),
            annotation_text="window full",
        )
    return fig
