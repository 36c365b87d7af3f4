"""latency: a pointer chase over growing working sets; plateaus, and knees at the cache sizes.

The analysis works on the fastest time per load t(s) at each working-set size s, in five steps:
0. despiking: each time becomes the median of itself and its two neighbours. A curve that only
   rises (a staircase, a ramp) is left as it is; a lone slow or fast size, which noise makes and
   no cache does, takes its neighbours' level instead of making a step of its own;
1. octave rise: R(s) = t(2s) / t(s) (the first size at least twice s stands in for 2s);
2. transitions: maximal runs of sizes where R(s) >= STEP. A run from s_a to s_b is a climb from
   t(s_a) to t(e), e the first size at least twice s_b;
3. knees: in each transition, the size where the curve crosses sqrt(t(s_a) t(e)), the half-way
   point in ratio (interpolated on log-log axes). With a cache of size C and a random chase,
   latency gets half-way at ~1.2-1.5 C; a knee is compared with the sizes sysfs reports, NEAR;
4. plateaus: in each stretch between transitions (from e of one to s_a of the next), the longest
   run of sizes spanning at least SPAN whose times lie within FLAT of each other.
No step needs a plateau on both sides of a knee, so a level squeezed by noise or by a shared LLC
costs a plateau, not the knees around it.
"""

import math
import statistics

from ..core.errors import BadInput
from ..core.numbers import format_size as _size  # the one byte-size formatter
from ..core.reading import Reading
from ..machine import caches as _caches
from ..native.workloads import LATENCY_MAX_SIZES as MAX_SIZES  # one counted region per size
from ..native.workloads import latency_sizes as sizes  # the C sweep's own formula (lat_sizes)
from ..native.workloads import workload
from ..results.result import Claim
from .common import HUGE_PAGE, caches, sweep_limits
from .hw_or_sim import attach, simulated

TIMEOUT = 300
# Each core type has its own L1D and L2: knees are only meaningful on one of them.
ONE_CORE_TYPE = "each core type has its own cache sizes"
COUNTS = ("L1-dcache-load-misses", "LLC-load-misses", "dTLB-load-misses")
EVENTS = ",".join(COUNTS + ("page-faults",))
PAGES_HUGE = workload("latency").params["pages"].choices.index("huge")
# Adjacent levels of a memory hierarchy differ by 2x or more (L1 -> L2 ~3x, L2 -> L3 ~3x,
# L3 -> DRAM 3-10x), reached within an octave or two of sizes: a rise of 1.5x per octave is a
# climb; inside a level the fastest of several repetitions varies by a few percent.
STEP = 1.5
FLAT = 1.25  # a plateau varies at most this much: well under a step, well over the noise
SPAN = 2.0  # a plateau covers at least one octave of sizes
# A knee within 2x of a cache's size: associativity, replacement, sharing and the TLB shift it.
NEAR = 2.0
SIM_OVERRIDES = {"repeats": 1}  # the model has no noise to take a minimum over
SUMMARY = (
    "ns_per_load",
    "ns_per_load_max",
    "L1 misses/load",
    "LLC misses/load",
    "dTLB misses/load",
)


def _max_kb(p, budget):
    """max_kb as given, or (0) auto: what the automatic sweep wants within its cap
    (common.sweep_limits), and within MAX_SIZES sizes."""
    if p["max_kb"]:
        return p["max_kb"]
    want, cap, _ = sweep_limits(budget["bytes"])
    kb = min(want, cap)
    if kb < p["min_kb"]:
        return kb  # resolve says so
    return sizes(p["min_kb"], kb, p["points_per_octave"])[:MAX_SIZES][-1]


def resolve(p, budget):
    """The parameters with max_kb resolved (the result shows the max_kb that ran)."""
    max_kb = _max_kb(p, budget)
    if p["min_kb"] > max_kb:
        raise BadInput(f"latency: min_kb ({p['min_kb']}) must not exceed max_kb ({max_kb})")
    n = len(sizes(p["min_kb"], max_kb, p["points_per_octave"]))
    if n > MAX_SIZES:
        raise BadInput(
            f"latency: {n} working-set sizes from {p['min_kb']} to {max_kb} KiB at "
            f"{p['points_per_octave']} per octave; at most {MAX_SIZES} fit one run "
            "(raise min_kb, lower max_kb or points_per_octave)"
        )
    return {**p, "max_kb": max_kb}


def _buffer_bytes(p):
    """The chase buffer: the largest size, in whole huge pages when huge pages are asked for."""
    size = p["max_kb"] * 1024
    return -(-size // HUGE_PAGE) * HUGE_PAGE if p["pages"] == PAGES_HUGE else size


def memory(p):
    size = _buffer_bytes(p)
    return size, size + HUGE_PAGE  # + room to align the mapping to a huge page


def simulation(p):
    """The simulated run: the sizes the native run sweeps, one repetition; the model translates
    with the page size the chase really uses (the note says how much of the buffer the kernel
    gave as huge pages)."""
    return {"page": "2m" if p["pages"] == PAGES_HUGE else "4k"}, SIM_OVERRIDES


def run(ctx):
    p = ctx.params
    # what cut an automatic sweep short, if anything
    limit = sweep_limits(ctx.budget["bytes"])[2] if ctx.given["max_kb"] == 0 else None
    measured, _ = ctx.workload(EVENTS)
    sim = simulated(ctx)
    attach(measured, sim, COUNTS)
    buffer = next((m for m in measured if m.label == "buffer"), None)
    points = _points(measured)
    for m in points:
        # the native chases repeat until steady, so each size has its own count
        timed = {
            "hw": p["loads"] * m["repeats"].value,
            "sim": p["loads"] * SIM_OVERRIDES["repeats"],
        }
        _per_load(m, timed)
    curve, levels, knees, found = _analyse(points)
    claims = [
        _plateaus(levels, found, curve, limit),
        *_near(knees, found, curve, ctx.environment.get("hypervisor"), limit),
    ]
    notes = _notes(p, buffer, points, sim)
    return ctx.result(
        points + ([buffer] if buffer else []), claims, notes, summary=SUMMARY, figure=figure
    )


def _points(measured):
    """The per-size measurements (labelled "N KiB"), smallest first."""
    return [m for m in measured if m.label.endswith(" KiB")]


def _bytes(label):
    return int(label.split()[0]) * 1024


def _per_load(m, timed):
    """Miss counts per timed load, where a source (hw, else sim) counted them; ``timed`` is the
    number of timed loads by source (the simulated run repeats less)."""
    for name, short in zip(COUNTS, ("L1", "LLC", "dTLB")):
        r = m.metrics.get(name)
        if r is not None and r.best is not None:
            m.add(Reading(f"{short} misses/load", r.best / timed[r.best_source], r.best_source))


def _analyse(points):
    curve = _despike([(_bytes(m.label), m["ns_per_load"].value) for m in points])
    climbs = _transitions(curve)
    return curve, _plateaus_of(curve, climbs), _knees(curve, climbs), caches()


# ---- the analysis: pure functions of (bytes, ns) points, so tests can feed made-up curves ----


def _despike(curve):
    """Each time the median of itself and its neighbours (the ends keep theirs)."""
    t = [ns for _, ns in curve]
    return [
        (s, statistics.median(t[i - 1 : i + 2]) if 0 < i < len(t) - 1 else t[i])
        for i, (s, _) in enumerate(curve)
    ]


def _octave_up(curve, i):
    """Index of the first size at least twice curve[i]'s, or None past the sweep's end."""
    return next((j for j in range(i + 1, len(curve)) if curve[j][0] >= 2 * curve[i][0]), None)


def _transitions(curve):
    """Climbs (a, e): a run of sizes rising >= STEP per octave, from a to an octave past it."""
    rising = []
    for i, (_, t) in enumerate(curve):
        up = _octave_up(curve, i)
        rising.append(up is not None and curve[up][1] >= STEP * t)
    climbs, i = [], 0
    while i < len(curve):
        if not rising[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(curve) and rising[j + 1]:
            j += 1
        climbs.append((i, _octave_up(curve, j)))
        i = j + 1
    return climbs


def _knees(curve, climbs):
    """In each climb, where latency crosses the geometric mean of its two ends."""
    knees = []
    for a, e in climbs:
        target = math.sqrt(curve[a][1] * curve[e][1])
        k = next((k for k in range(a + 1, e + 1) if curve[k][1] >= target), e)
        (s0, t0), (s1, t1) = curve[k - 1], curve[k]
        f = (math.log(target / t0) / math.log(t1 / t0)) if t1 > t0 and target > t0 else 0.0
        knees.append({"bytes": s0 * (s1 / s0) ** min(f, 1.0), "ns": target})
    return knees


def _plateaus_of(curve, climbs):
    """In each stretch between climbs, its longest run within FLAT spanning >= SPAN:
    [{'first', 'last', 'ns'}], the median time of the run as its level."""
    bounds = [0] + [i for a, e in climbs for i in (a, e)] + [len(curve) - 1]
    found = []
    for first, last in zip(bounds[::2], bounds[1::2]):
        runs = [
            (i, j)
            for i in range(first, last + 1)
            for j in range(i + 1, last + 1)
            if curve[j][0] >= SPAN * curve[i][0] and _flat(curve[i : j + 1])
        ]
        if runs:
            i, j = max(runs, key=lambda r: (r[1] - r[0], -r[0]))
            found.append(
                {"first": i, "last": j, "ns": statistics.median(t for _, t in curve[i : j + 1])}
            )
    return found


def _flat(points):
    times = [t for _, t in points]
    return max(times) <= FLAT * min(times)


def _passed(caches, curve):
    """The caches the sweep brackets: starting at C/NEAR or below, reaching NEAR x C or beyond."""
    return [(n, c) for n, c in caches if curve[0][0] <= c / NEAR and curve[-1][0] >= c * NEAR]


def _plateaus(levels, caches, curve, limit=None):
    text = (
        "load latency forms plateaus: flat while the working set fits one level of the "
        "memory hierarchy, stepping up between levels"
    )
    # a cache's plateau after it shows once the sweep reaches ~4x its size (climb, then an octave)
    beyond = [c for _, c in caches if curve[0][0] <= c / NEAR and curve[-1][0] >= 4 * c]
    if caches and not beyond:
        return Claim(
            "latency-plateaus",
            text,
            None,
            reason=f"the sweep ({_size(curve[0][0])}-{_size(curve[-1][0])}) does not "
            "reach 4x any reported cache, so no second plateau can show"
            + (f": {limit}" if limit else ""),
        )
    needed = 3 if len(beyond) >= 2 else 2
    shown = ", ".join(
        f"{lv['ns']:.3g} ns ({_size(curve[lv['first']][0])}-{_size(curve[lv['last']][0])})"
        for lv in levels
    )
    return Claim(
        "latency-plateaus",
        text,
        len(levels) >= needed,
        f"{len(levels)} plateaus: {shown or 'none'} (clock); "
        f"at least {needed} expected from the caches the sweep reaches 4x beyond",
    )


def _near(knees, caches, curve, hypervisor=False, limit=None):
    """One claim per cache level, the standard ones (L1d, L2, L3) whether reported or not: a knee
    within NEAR x of its size. ``limit`` says what kept an automatic sweep short, if anything."""
    passed = _passed(caches, curve)
    sizes = dict(caches)
    claims = []
    for name in dict.fromkeys([*_caches.STANDARD.values(), *sizes]):
        cid = f"latency-knee-{name.lower()}"
        text = f"a knee in load latency lies within 2x of the {name} size the machine reports"
        c = sizes.get(name)
        if c is None:
            claims.append(Claim(cid, text, None, reason=f"this machine reports no {name}"))
            continue
        if (name, c) not in passed:
            claims.append(
                Claim(
                    cid,
                    text,
                    None,
                    reason=f"the sweep ({_size(curve[0][0])}-"
                    f"{_size(curve[-1][0])}) does not reach from {_size(c / NEAR)} "
                    f"to {_size(c * NEAR)}" + (f": {limit}" if limit else ""),
                )
            )
            continue
        best = min(knees, key=lambda k: abs(math.log(k["bytes"] / c)), default=None)
        ok = best is not None and c / NEAR <= best["bytes"] <= c * NEAR
        evidence = (
            f"{name} {_size(c)}: no knee"
            if best is None
            else f"{name} {_size(c)}: {'knee' if ok else 'nearest knee'} at "
            f"{_size(best['bytes'])} ({best['bytes'] / c:.2g}x)"
        )
        if not ok and hypervisor and (name, c) == caches[-1] and best and best["bytes"] < c:
            evidence += (
                "; this is a VM: the last-level cache is shared with the host and other "
                "guests, so the share it gets can be far smaller than the size reported"
            )
        claims.append(
            Claim(cid, text, ok, f"{evidence} (sizes from {_caches.source()}, knees from clock)")
        )
    return claims


def _notes(p, buffer, points, sim):
    notes = []
    if buffer is not None and "huge_kb" in buffer.metrics:
        share = buffer["huge_kb"].value * 1024 / _buffer_bytes(p)
        notes.append(
            f"{share:.0%} of the buffer was in transparent huge pages "
            "(/proc/self/smaps, rusage)"
            + (
                "; the rest adds TLB misses and can add knees at the TLB's reach"
                if p["pages"] == PAGES_HUGE and share < 0.9
                else ""
            )
        )
    switched = sum(m["nivcsw"].value for m in points if "nivcsw" in m.metrics)
    repeats = [int(m["repeats"].value) for m in points]
    spreads = [m["spread"].value for m in points if m["spread"].value >= 0]
    spread = f"; the fastest few within {max(spreads):.1%} at worst" if spreads else ""
    notes.append(
        f"ns_per_load is the chasing thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per "
        f"load, the fastest of chases of {p['loads']:,} loads, repeated until the fastest few "
        f"agree or {p['repeats']} ran ({min(repeats)}-{max(repeats)} per size{spread}): time "
        "spent preempted does not count, but what the other processes do to shared caches "
        f"does ({switched} involuntary context switches during the chases, rusage)"
    )
    if sim.reason:
        notes.append(f"miss counts per load: {sim.reason}")
    return notes


def figure(result):
    from ..results.plots import lines, markers, side_by_side, size_axis, vlines

    ms = _points(result.measurements)
    curve, _, knees, caches = _analyse(ms)
    x = [s for s, _ in curve]
    panel = lines(
        "ns per load",
        x,
        {
            f"fastest of {result.params['repeats']}": [m["ns_per_load"] for m in ms],
            "slowest": [m["ns_per_load_max"] for m in ms],
        },
        "working set",
        log_x=True,
        log_y=True,
    )
    panel.traces.append(
        markers(
            "knees",
            [k["bytes"] for k in knees],
            [Reading("knee", k["ns"], "clock", "ns") for k in knees],
        )
    )
    fig = side_by_side("latency: pointer chase, time per dependent load", panel)
    size_axis(fig, x[0], x[-1])
    vlines(fig, [(c, f"{n} {_size(c)}") for n, c in caches if x[0] <= c <= x[-1]])
    return fig
