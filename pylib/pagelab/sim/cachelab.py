"""Cache-lab mode: CS:APP's reference simulator (csim-ref) reproduced, count for count and, with
-v, line for line."""

from dataclasses import dataclass

from .._native import ffi, lib
from .._version import __version__
from ..core.errors import BadInput
from ..core.numbers import parse_int
from .config import CacheGeometry, SimConfig
from .simulator import SOURCE, Simulator
from .trace import CHUNK, open_trace, records, replay

_OPS = {lib.PL_OP_LOAD: "L", lib.PL_OP_STORE: "S", lib.PL_OP_MODIFY: "M"}


@dataclass(frozen=True)
class CachelabResult:
    """The answer of CS:APP's reference cache simulator (csim-ref) for one trace."""

    hits: int
    misses: int
    evictions: int
    verbose: tuple = ()  # one line per data record with -v, e.g. "M 20,1 miss hit"
    params: dict | None = None  # trace, s, E, b
    source: str = SOURCE

    @property
    def summary(self):
        return f"hits:{self.hits} misses:{self.misses} evictions:{self.evictions}"

    def to_dict(self):
        metrics = {
            k: {"value": getattr(self, k), "unit": "", "source": self.source}
            for k in ("hits", "misses", "evictions")
        }
        return {
            "experiment": "cachelab",
            "version": __version__,
            "params": self.params,
            "measurements": [{"label": "cache", "metrics": metrics}],
        }

    def __str__(self):
        return "\n".join([*self.verbose, self.summary])


def cachelab(path, s, E, b, verbose=False):
    """Cache-lab mode: one LRU level of 2**s sets, E lines each, 2**b-byte blocks, as csim-ref.

    I records are ignored, sizes are ignored (no access straddles blocks), M is a load then a
    store to the same address. Returns hits, misses, evictions (and, with verbose, one line per
    data record in csim-ref's format).
    """
    s, E, b = parse_int(s, "-s", 0), parse_int(E, "-E", 1), parse_int(b, "-b", 0)
    max_b = lib.PL_SIM_MAX_LINE.bit_length() - 1  # the model's longest line, as -b
    if b > max_b or s > max_b or (E << s) > lib.PL_SIM_MAX_LINES:
        raise BadInput(
            f"-s {s} -E {E} -b {b} is too large: at most 2**{max_b}-byte blocks and "
            f"{lib.PL_SIM_MAX_LINES} lines ((2**s) * E)"
        )
    cfg = SimConfig(
        l1=CacheGeometry((E << s) << b, E, 1 << b, "cache-lab -s -E -b"),
        policy="lru",
        classify=False,
    )
    sim = Simulator(cfg)
    # one pass; a malformed line raises before anything is printed
    lines = _verbose(sim._sim, path) if verbose else []
    if not verbose:
        replay(sim._sim, path, ignore_size=True)
    level = sim.stats().levels[0]
    return CachelabResult(
        level.hits,
        level.misses,
        level.evictions,
        tuple(lines),
        {"trace": str(path), "s": s, "E": E, "b": b},
    )


def _verbose(sim, path):
    """Cache-lab -v: one csim-ref line per data record, read and simulated in one pass."""
    t = open_trace(path)
    addr, size, op = (
        ffi.new("uint64_t[]", CHUNK),
        ffi.new("uint32_t[]", CHUNK),
        ffi.new("uint8_t[]", CHUNK),
    )
    outcome = ffi.new("uint8_t[]", CHUNK)
    lines = []
    for n in records(path, t, lambda: lib.pl_trace_read(t, addr, size, op, CHUNK)):
        lib.pl_sim_access_outcomes(sim, addr, op, ffi.NULL, n, 0, 1, outcome)
        lines += [_verbose_line(op[i], addr[i], size[i], outcome[i]) for i in range(n)]
    return lines


def _outcome_words(bits):
    words = ["hit" if bits & lib.PL_SIM_HIT else "miss"]
    if bits & lib.PL_SIM_EVICT:
        words.append("eviction")
    return words


def _verbose_line(op, addr, size, outcome):
    words = _outcome_words(outcome & 3)
    if op == lib.PL_OP_MODIFY:
        words += _outcome_words(outcome >> 2)
    return f"{_OPS[op]} {addr:x},{size} {' '.join(words)}"
