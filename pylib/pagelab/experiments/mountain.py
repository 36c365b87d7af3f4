"""mountain: read throughput over working-set size x stride (CS:APP's memory mountain).

The claims are physics with wide margins, judged only where the sweep brackets the caches:
- temporal locality: at a stride of one cache line every load of a working set 4x the LLC misses
  every cache, while a set that fits the L1d hits it; the small set is read >= SMALL_VS_LARGE
  times faster (L1 vs DRAM is 10x or more on any machine);
- spatial locality: in that large set, a stride of one word uses all 8 words of each line
  fetched, a stride of one line uses one; stride 1 is >= WORD_VS_LINE times faster (8x ideal).
"""

from ..core.errors import BadInput
from ..core.numbers import format_size as _size
from ..core.reading import Reading
from ..machine import caches as _caches
from ..native.workloads import CACHE_LINE  # the line assumed where the machine reports none
from ..native.workloads import MOUNTAIN_MAX_POINTS as MAX_POINTS  # one value per point
from ..native.workloads import MOUNTAIN_WORD as WORD  # bytes per load
from ..results.result import Claim
from .common import SWEEP_FACTOR, ratio_text, sweep_limits

TIMEOUT = 300
# Each core type has its own L1D and L2: a mountain's ridges belong to one of them.
ONE_CORE_TYPE = "each core type has its own cache sizes"
SMALL_VS_LARGE = 2.0  # wide margin under the >= 10x of L1 vs DRAM
WORD_VS_LINE = 2.0  # wide margin under the 8x of 8 words per line fetched


def sizes(min_kb, max_kb):
    """The working-set sizes in KiB: min_kb doubled up to max_kb (the loop in mountain.c)."""
    out, kb = [], min_kb
    while kb <= max_kb:
        out.append(kb)
        kb *= 2
    return out


def _auto_max_kb(min_kb, budget):
    """min_kb doubled until it reaches what the automatic sweep wants, within its cap
    (common.sweep_limits)."""
    want, cap, _ = sweep_limits(budget["bytes"])
    kb = min_kb
    while kb < want and kb * 2 <= cap:
        kb *= 2
    return kb


def resolve(p, budget):
    """The parameters with max_kb resolved (the result shows the max_kb that ran)."""
    max_kb = p["max_kb"] or _auto_max_kb(p["min_kb"], budget)
    if p["min_kb"] > max_kb:
        raise BadInput(f"mountain: min_kb ({p['min_kb']}) must not exceed max_kb ({max_kb})")
    points = len(sizes(p["min_kb"], max_kb)) * p["max_stride"]
    if points > MAX_POINTS:
        raise BadInput(
            f"mountain: {points} points (sizes x strides); at most {MAX_POINTS} fit one run "
            "(raise min_kb, lower max_kb or max_stride)"
        )
    return {**p, "max_kb": max_kb}


def memory(p):
    size = p["max_kb"] * 1024
    return size, size


def run(ctx):
    # what cut an automatic sweep short, if anything
    limit = sweep_limits(ctx.budget["bytes"])[2] if ctx.given["max_kb"] == 0 else None
    measured, _ = ctx.workload()
    grid = surface(measured)
    data = _caches.data_caches()  # one reading: the sizes and the line the claims compare
    found = [(c.name, c.size) for c in data]
    line = next((c.line for c in data if c.level == 1 and c.line), CACHE_LINE)
    claims = [_temporal(grid, found, line, limit), _spatial(grid, found, line, limit)]
    sweep = next((m for m in measured if m.label == "sweep"), None)
    notes = [
        "MB/s is 10^6 bytes read per second of the reading thread's CPU time "
        f"(CLOCK_THREAD_CPUTIME_ID), the fastest of {ctx.params['repeats']} repetitions of at "
        f"least {ctx.params['loads']:,} loads"
    ]
    if sweep is not None and "nivcsw" in sweep.metrics:
        notes.append(
            f"{sweep['nivcsw'].value} involuntary context switches during the sweep (rusage): "
            "another process on this core empties the caches the small sets were in"
        )
    return ctx.result(measured, claims, notes, figure=figure)


def surface(measured):
    """{(kb, stride_words): MB/s} from the per-point measurements."""
    out = {}
    for m in measured:
        parts = m.label.split()
        if len(parts) == 4 and parts[1] == "KiB" and parts[2] == "stride":
            out[int(parts[0]), int(parts[3])] = m["mb_per_s"].value
    return out


def _ends(grid, caches, limit=None):
    """(small_kb, large_kb, why_not): the smallest size if it fits half the L1d, the largest if
    it is >= 4x the largest cache; why_not says what the sweep misses (and ``limit`` what kept
    an automatic sweep short)."""
    if not caches:
        return None, None, "this machine reports no cache sizes"
    kbs = sorted({kb for kb, _ in grid})
    l1, llc = caches[0][1], caches[-1][1]
    if kbs[0] * 1024 > l1 // 2:
        return (
            None,
            None,
            f"the smallest working set ({_size(kbs[0] * 1024)}) does not fit in half the "
            f"{caches[0][0]} ({_size(l1)})",
        )
    if kbs[-1] * 1024 < SWEEP_FACTOR * llc:
        return (
            None,
            None,
            f"the largest working set ({_size(kbs[-1] * 1024)}) is not 4x the "
            f"{caches[-1][0]} ({_size(llc)})" + (f": {limit}" if limit else ""),
        )
    return kbs[0], kbs[-1], None


def _temporal(grid, caches, line, limit=None):
    text = (
        "reading one word per cache line, a working set that fits the L1 data cache is read at "
        "least 2x faster than one 4x the last-level cache (physics: hits against misses)"
    )
    small, large, why = _ends(grid, caches, limit)
    stride = line // WORD
    if why is None and (small, stride) not in grid:
        why = f"the sweep has no stride of {stride} words (one {line}-byte line)"
    if why:
        return Claim("mountain-temporal-locality", text, None, reason=why)
    fast, slow = grid[small, stride], grid[large, stride]
    ratio = fast / slow if slow else float("inf")
    return Claim(
        "mountain-temporal-locality",
        text,
        ratio >= SMALL_VS_LARGE,
        f"{_size(small * 1024)}: {fast:,.0f} MB/s, {_size(large * 1024)}: {slow:,.0f} MB/s, "
        f"{ratio_text(ratio)} (clock; cache sizes from {_caches.source()})",
    )


def _spatial(grid, caches, line, limit=None):
    text = (
        "in a working set 4x the last-level cache, reading every word is at least 2x faster "
        "than reading one word per cache line (physics: 8 words used per line fetched, not 1)"
    )
    _, large, why = _ends(grid, caches, limit)
    stride = line // WORD
    if why is None and (large, stride) not in grid:
        why = f"the sweep has no stride of {stride} words (one {line}-byte line)"
    if why:
        return Claim("mountain-spatial-locality", text, None, reason=why)
    dense, sparse = grid[large, 1], grid[large, stride]
    ratio = dense / sparse if sparse else float("inf")
    return Claim(
        "mountain-spatial-locality",
        text,
        ratio >= WORD_VS_LINE,
        f"{_size(large * 1024)}: stride {WORD} B {dense:,.0f} MB/s, stride {line} B (one "
        f"line) {sparse:,.0f} MB/s, "
        f"{ratio_text(ratio)} (clock)",
    )


def figure(result):
    """The mountain as a plotly surface: stride (bytes) x working set (log) x MB/s, from zero."""
    import plotly.graph_objects as go

    grid = surface(result.measurements)
    kbs = sorted({kb for kb, _ in grid})
    strides = sorted({s for _, s in grid})
    z = [[grid.get((kb, s)) for s in strides] for kb in kbs]
    readings = [Reading("mb_per_s", v, "clock", "MB/s") for row in z for v in row]
    top = max((r.value for r in readings if r.value is not None), default=1)
    fig = go.Figure(
        go.Surface(
            x=[s * WORD for s in strides],
            y=kbs,
            z=z,
            colorscale="Viridis",
            colorbar={"title": "MB/s"},
            hovertemplate="stride %{x} B, %{y} KiB: %{z:,.0f} MB/s (clock)<extra></extra>",
        )
    )
    fig.update_layout(
        title="the memory mountain: read throughput (clock)",
        height=600,
        scene={
            "xaxis": {"title": "stride (bytes)"},
            "yaxis": {
                "title": "working set (KiB)",
                "type": "log",
                "tickvals": kbs,
                "ticktext": [_size(kb * 1024) for kb in kbs],
            },
            "zaxis": {"title": "read throughput (MB/s)", "range": [0, top * 1.05]},
            "camera": {"eye": {"x": 1.6, "y": -1.6, "z": 0.9}},
        },
    )
    return fig
