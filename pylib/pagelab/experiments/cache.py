"""cache: the lab write-up's do_mem_access. Working sets that fit L1, sequential vs random bases.

Loads and stores are counted in two runs of the same walk, as the write-up counted one event per
run: a PMU has few counters, and one group must fit all of its events at once."""

from ..core.errors import BadInput
from ..core.numbers import format_size
from ..machine import caches as _caches
from ..native.workloads import CACHE_LINE  # the line assumed where the machine reports none
from ..results.result import Claim
from ..sim.config import assumed_levels
from .common import MIB, per, ratio_text
from .hw_or_sim import attach, ratio, same_source, simulated, why_not

TIMEOUT = 120
# A P-core and an E-core have different L1Ds and L2s: the working sets are one core type's.
ONE_CORE_TYPE = "its working sets are sized to that core's L1D"
WRITEUP_LINES = 512  # the write-up's working set: 32 KiB, the L1D of its machine
COUNTS = ("L1-dcache-loads", "L1-dcache-load-misses", "dTLB-load-misses")
STORE_COUNTS = ("L1-dcache-stores", "L1-dcache-store-misses", "dTLB-store-misses")
EVENTS = ",".join(COUNTS + ("page-faults", "task-clock"))
FLUSH_EXTRA = 1024  # the write-up flushes with 32 KB + 1 KB: an L1D and a little more
VARIANTS = ("sequential", "random")
SUMMARY = (
    "ns_per_access",
    "l1_load_miss_rate",
    "dtlb_misses_per_set",
    "l1_store_miss_rate",
    "dtlb_store_misses_per_set",
    "page-faults",
    "minflt",
    "utime",
)
# A working set that fits L1 misses once per line when its base moves, then hits for the other
# passes: 1/16 of the loads at the write-up's 16 passes (6.25%). 10% leaves room for a few conflict
# misses from the rest of the program; a set that does not fit misses on most loads.
MISS_RATE_MAX = 0.10
# "Several times": sequential bases enter every page through a store (line 0 of a page is a
# written line), random ones mostly through a load, so the expected ratio is far above 3.
TLB_RATIO_MIN = 3.0


def _l1d():
    """(bytes, line bytes, where from): the L1D the machine reports, else the one the simulator
    assumes (and a line it does not report is CACHE_LINE, assumed)."""
    c = _caches.level(1)
    if c is not None:
        where = _caches.source()
        line = f"{c.line}-byte lines" if c.line else f"{CACHE_LINE}-byte lines assumed"
        return c.size, c.line or CACHE_LINE, f"L1d {format_size(c.size)}, {line} ({where})"
    size = assumed_levels()["l1"].size
    what = f"L1d {format_size(size)}, {CACHE_LINE}-byte lines (assumed: this machine reports none)"
    return size, CACHE_LINE, what


def resolve(p, budget):
    """line as given, or (0) auto: the L1D's line; lines as given, or (0) auto: the L1D in
    lines, at most the write-up's 512; flush_kb as given, or (0) auto: the L1D and 1 KiB more,
    as the write-up flushes."""
    size, line, _ = _l1d()
    line = p["line"] or line
    if line < 8 or line & (line - 1):
        raise BadInput(f"cache: line must be a power of two of at least 8 bytes, not {line}")
    p = {**p, "line": line, "flush_kb": p["flush_kb"] or (size + FLUSH_EXTRA + 1023) // 1024}
    if p["lines"]:
        return p
    return {**p, "lines": min(WRITEUP_LINES, size // line)}


def memory(p):
    if p["lines"] * p["line"] > p["size_mb"] * MIB:
        raise BadInput(
            f"cache: a working set of {p['lines']} lines ({p['lines'] * p['line']:,} bytes) "
            f"does not fit the {p['size_mb']} MiB buffer"
        )
    size = p["size_mb"] * MIB + p["flush_kb"] * 1024
    return size, size


def simulation(p):
    """The simulated run: the simulator's defaults, the same parameters."""
    return {}, {}


def run(ctx):
    p = ctx.params
    measured, _ = ctx.workload(EVENTS)
    stores = {m.label: m for m in ctx.workload(",".join(STORE_COUNTS))[0]}
    for m in measured:
        for name in STORE_COUNTS:
            m.add(stores[m.label][name])
    sim = simulated(ctx)
    attach(measured, sim, COUNTS + STORE_COUNTS)
    accesses = p["sets"] * p["passes"] * p["lines"]
    for m in measured:
        m.add(per(m["elapsed"], accesses / 1e9, "ns_per_access", "ns"))
        m.add(ratio("l1_load_miss_rate", m["L1-dcache-load-misses"], m["L1-dcache-loads"]))
        m.add(per(m["dTLB-load-misses"], p["sets"], "dtlb_misses_per_set"))
        m.add(ratio("l1_store_miss_rate", m["L1-dcache-store-misses"], m["L1-dcache-stores"]))
        m.add(per(m["dTLB-store-misses"], p["sets"], "dtlb_store_misses_per_set"))
    by = {m.label: m for m in measured}
    claims = [_l1_low(by, p, sim), _tlb_ratio(by, sim), _tlb_entry(by, sim)]
    notes = [
        f"{accesses:,} accesses per variant ({p['sets']:,} working sets x {p['passes']} "
        f"passes x {p['lines']} lines of {p['line']} B, the stride between accesses, 1 in "
        f"{p['write_every']} written); ns_per_access is "
        "the region's wall-clock time over that count; stores are counted in a second run "
        "of the same walk (one group of counters must fit the PMU at once).",
        f"before each variant the walk writes {p['flush_kb']} KiB of other memory, as the "
        "write-up flushes its L1D before counting (outside the counted region).",
    ]
    return ctx.result(measured, claims, notes, summary=SUMMARY, figure=figure)


def _l1_low(by, p, sim):
    text = (
        "the L1D read miss rate stays low for sequential and random bases alike: each "
        "working set fits L1 and misses only when its base moves"
    )
    rates = [by[v]["l1_load_miss_rate"] for v in VARIANTS]
    if any(r.value is None for r in rates):
        names = [by[v][n] for v in VARIANTS for n in ("L1-dcache-load-misses", "L1-dcache-loads")]
        return Claim("cache-l1-miss-rate-low", text, None, reason=why_not(sim, *names))
    fits = _l1d()[2]
    worst = max(r.value for r in rates)
    return Claim(
        "cache-l1-miss-rate-low",
        text,
        worst <= MISS_RATE_MAX,
        f"sequential {rates[0].value:.2%}, random {rates[1].value:.2%} of "
        f"L1-dcache-loads miss ({rates[0].source}); compulsory share 1/{p['passes']} = "
        f"{1 / p['passes']:.2%}; threshold {MISS_RATE_MAX:.0%}; working set "
        f"{format_size(p['lines'] * p['line'])} ({p['lines']} lines of {p['line']} B, the "
        f"stride), {fits}",
    )


def _tlb_ratio(by, sim):
    text = "random bases cause several times (at least 3x) the dTLB load misses of sequential ones"
    seq, rnd = by["sequential"]["dTLB-load-misses"], by["random"]["dTLB-load-misses"]
    got = same_source(seq, rnd)
    if got is None:
        return Claim("cache-random-more-dtlb-misses", text, None, reason=why_not(sim, seq, rnd))
    (s, r), source = got
    counts = f"random {r:,.0f} vs sequential {s:,.0f} dTLB-load-misses ({source})"
    if s == 0:  # sequential bases enter each page through a store, so no load may miss at all
        return Claim(
            "cache-random-more-dtlb-misses",
            text,
            r > 0,
            f"{counts}: sequential took no load misses at all",
        )
    x = r / s
    return Claim(
        "cache-random-more-dtlb-misses", text, x >= TLB_RATIO_MIN, f"{ratio_text(x)}: {counts}"
    )


def _tlb_entry(by, sim):
    text = (
        "the access that enters a page takes its dTLB miss: sequential bases enter each page "
        "with a store (at least as many dTLB store misses as load misses), random ones mostly "
        "with a load (more load misses than store misses)"
    )
    names = [by[v][n] for v in VARIANTS for n in ("dTLB-load-misses", "dTLB-store-misses")]
    got = same_source(*names)
    if got is None:
        return Claim("cache-tlb-miss-on-entry", text, None, reason=why_not(sim, *names))
    (sl, ss, rl, rs), source = got
    return Claim(
        "cache-tlb-miss-on-entry",
        text,
        ss >= sl and rl > rs,
        f"dTLB misses: sequential {ss:,.0f} store vs {sl:,.0f} load, random {rs:,.0f} store "
        f"vs {rl:,.0f} load ({source})",
    )


def figure(result):
    from ..results.plots import bars, side_by_side

    ms = [result[v] for v in VARIANTS]
    return side_by_side(
        f"cache: {result.params['lines']}-line working sets at sequential vs random bases",
        bars("L1D load miss rate", list(VARIANTS), [m["l1_load_miss_rate"] for m in ms]),
        bars(
            "dTLB load misses per working set",
            list(VARIANTS),
            [m["dtlb_misses_per_set"] for m in ms],
        ),
        bars("ns per access", list(VARIANTS), [m["ns_per_access"] for m in ms]),
    )
