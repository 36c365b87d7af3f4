"""How simulator results read: a table for people, one JSON document for programs.

Every count is labelled source "sim"; the geometry (with where each value came from) is always
printed with the counts.
"""

from .._version import __version__
from ..core.numbers import format_size
from .config import ASSUMED

SOURCE = "sim"
MODEL = (
    "write-allocate, non-inclusive: each level sees only the misses of the level above; "
    "dirty evictions are counted as writebacks, not sent down"
)
_CACHE_COLUMNS = (
    "accesses",
    "hits",
    "misses",
    "miss rate",
    "evictions",
    "writebacks",
    "compulsory",
    "capacity",
    "conflict",
)
_TLB_COLUMNS = ("accesses", "hits", "misses", "miss rate")


def _metric(value, unit=""):
    d = {"value": value, "unit": unit, "source": SOURCE}
    if value is None:
        d["reason"] = "miss classification is off"
    return d


def _metrics(stats):
    m = {name: _metric(getattr(stats, name)) for name in stats.COUNTS}
    m["miss_rate"] = _metric(stats.miss_rate, "fraction")
    return m


def stats_dict(stats, experiment="sim"):
    """One JSON-ready document: params (geometry, model), then a measurement per level/TLB."""
    cfg = stats.config
    geometry = dict(cfg.levels + cfg.tlbs)
    measurements = []
    if stats.trace:
        t = stats.trace
        measurements.append(
            {
                "label": "trace",
                "metrics": {
                    name: _metric(getattr(t, name))
                    for name in (
                        "lines",
                        "data_records",
                        "loads",
                        "stores",
                        "modifies",
                        "instructions",
                        "skipped",
                    )
                },
            }
        )
    for s in stats.levels + stats.tlbs:
        measurements.append(
            {"label": s.name, "geometry": geometry[s.name].to_dict(), "metrics": _metrics(s)}
        )
    params = {"config": cfg.to_dict(), "model": MODEL}
    if stats.trace:
        params["trace"] = stats.trace.path
    return {
        "experiment": experiment,
        "version": __version__,
        "params": params,
        "measurements": measurements,
    }


def _count(v):
    return "-" if v is None else f"{v:,}"


def _rate(v):
    return "-" if v is None else f"{100 * v:.2f}%"


def _table(title, columns, rows):
    cells = [[title, *columns]] + rows
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))
        ).rstrip()
        for r in cells
    ]


def origin_text(origin):
    """Where a geometry came from, as the reports say it."""
    return "assumed: this machine reports none" if origin == ASSUMED else f"from {origin}"


def stats_text(stats):
    cfg = stats.config
    lines = []
    if stats.trace:
        t = stats.trace
        lines.append(
            f"trace {t.path}: {t.data_records:,} data records simulated "
            f"({t.loads:,} loads, {t.stores:,} stores, {t.modifies:,} modifies); "
            f"{t.instructions:,} instruction records not simulated"
        )
    lines.append(f"model: {MODEL}")
    lines.append(
        f"policy {cfg.policy}"
        + (f" (random seed {cfg.seed})" if cfg.policy == "random" else "")
        + f"; TLBs LRU, {format_size(cfg.page)} pages"
    )
    lines.append("geometry:")
    for name, g in cfg.levels + cfg.tlbs:
        lines.append(f"  {name:<5} {g.describe():<44} {origin_text(g.origin)}")
    if stats.levels:
        rows = [
            [
                s.name,
                _count(s.accesses),
                _count(s.hits),
                _count(s.misses),
                _rate(s.miss_rate),
                _count(s.evictions),
                _count(s.writebacks),
                _count(s.compulsory),
                _count(s.capacity),
                _count(s.conflict),
            ]
            for s in stats.levels
        ]
        lines += [""] + _table("cache", _CACHE_COLUMNS, rows)
    if stats.tlbs:
        rows = [
            [s.name, _count(s.accesses), _count(s.hits), _count(s.misses), _rate(s.miss_rate)]
            for s in stats.tlbs
        ]
        lines += [""] + _table("tlb", _TLB_COLUMNS, rows)
    lines += ["", "every count above is simulated (source: sim), not measured"]
    return "\n".join(lines)
