"""Cache-lab mode: CS:APP's reference simulator (csim-ref) reproduced, count for count and, with
-v, line for line.

A whole command (`pagelab sim trace T -s S -E E -b B`) is compared with csim-ref's, start-up
included, so this module imports only the C core and the trace reader: no dataclasses, no
configuration layer, no numpy.
"""

import errno

from .._native import ffi, lib
from .._version import __version__
from ..core.errors import BadInput
from ..core.numbers import parse_int
from . import trace as _trace

SOURCE = "sim"
_OPS = {lib.PL_OP_LOAD: "L", lib.PL_OP_STORE: "S", lib.PL_OP_MODIFY: "M"}
_FIELDS = ("hits", "misses", "evictions", "verbose", "params", "source")


class CachelabResult:
    """The answer of CS:APP's reference cache simulator (csim-ref) for one trace: hits, misses,
    evictions, with -v one line per data record (e.g. "M 20,1 miss hit"), and the trace and
    -s -E -b it ran with (params)."""

    __slots__ = _FIELDS

    def __init__(self, hits, misses, evictions, verbose=(), params=None, source=SOURCE):
        for name, value in zip(_FIELDS, (hits, misses, evictions, verbose, params, source)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"CachelabResult is read-only: cannot set {name}")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in _FIELDS)

    __hash__ = None  # params is a dict

    def __reduce__(self):  # copy and pickle build it anew (__setattr__ refuses)
        return type(self), tuple(getattr(self, f) for f in _FIELDS)

    def __repr__(self):
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in _FIELDS)
        return f"CachelabResult({fields})"

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
    cfg = ffi.new("struct pl_sim_config *")
    cfg.nlevels = 1
    cfg.level[0].size, cfg.level[0].ways, cfg.level[0].line = (E << s) << b, E, 1 << b
    cfg.level[0].name = b"L1D"
    cfg.policy = lib.PL_POLICY_LRU
    why = ffi.new("char[]", 256)
    if lib.pl_sim_config_check(cfg, why, len(why)):
        raise BadInput(ffi.string(why).decode())
    out = ffi.new("struct pl_sim **")
    rc = lib.pl_sim_create(cfg, out)
    if rc == -errno.ENOMEM:
        raise MemoryError("not enough memory for the simulated cache")
    if rc < 0:
        raise BadInput(f"-s {s} -E {E} -b {b}: the simulator rejected it ({errno.errorcode[-rc]})")
    sim = ffi.gc(out[0], lib.pl_sim_destroy)
    # one pass; a malformed line raises before anything is printed
    lines = _verbose(sim, path) if verbose else []
    if not verbose:
        _trace.replay(sim, path, ignore_size=True)
    stats = ffi.new("struct pl_sim_stats *")
    if lib.pl_sim_stats(sim, stats) < 0:
        raise MemoryError("the simulated cache ran out of memory; the counts are incomplete")
    c = stats.level[0]
    misses = c.read_misses + c.write_misses
    return CachelabResult(
        c.reads + c.writes - misses,
        misses,
        c.evictions,
        tuple(lines),
        {"trace": str(path), "s": s, "E": E, "b": b},
    )


def _verbose(sim, path):
    """Cache-lab -v: one csim-ref line per data record, read and simulated in one pass."""
    t = _trace.open_trace(path)
    addr, size, op = _trace.buffers()
    outcome = ffi.new("uint8_t[]", _trace.CHUNK)
    lines = []

    def read():
        return lib.pl_trace_read(t, addr, size, op, _trace.CHUNK)

    for n in _trace.records(path, t, read):
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
