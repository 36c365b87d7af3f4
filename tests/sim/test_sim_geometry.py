"""Any geometry real hardware reports: sets that are not a power of two, 12-, 15- and 20-way
levels, 128- and 256-byte lines, fully associative levels of odd widths, huge lazy levels.

cachegrind refuses set counts that are not a power of two, so the reference here is a plain
Python model (per-set lists; line = address // line size, set = line % sets), and, for every
policy, the same per-set traffic through a small power-of-two level, which
tests/sim/test_sim_reference.py and tests/sim/test_sim_cachegrind.py check on their own.
"""

import errno
import json
import subprocess
import sys
import textwrap
from collections import OrderedDict

import numpy as np
import pytest

from pagelab import Simulator
from pagelab._native import ffi, lib
from pagelab.core.numbers import parse_size

NO_LEVELS = {"l1": None, "l2": None, "llc": None, "dtlb": None, "stlb": None}
PAGE = 4096
COUNTS = ("reads", "writes", "read_misses", "write_misses", "evictions", "writebacks")
CLASSES = ("compulsory", "capacity", "conflict")


def set_of(sets, lines):
    """The model's set numbers of lines (pl_sim_set_of)."""
    lines = np.asarray(lines, dtype=np.uint64)
    out = np.zeros(len(lines), dtype=np.uint64)
    pl, po = ffi.from_buffer("uint64_t[]", lines), ffi.from_buffer("uint64_t[]", out)
    assert lib.pl_sim_set_of(sets, pl, len(lines), po) == 0
    return [int(v) for v in out]


SET_COUNTS = [
    1, 2, 3, 5, 6, 7, 12, 15, 20, 24, 48, 96, 112, 192, 384, 480, 114688, 491520,
    (1 << 28) - 1, 1 << 28, 3 << 27, (1 << 32) - 1, (1 << 32) + 1, 10**12 + 39,
    (1 << 63) - 1, (1 << 63) + 1, (1 << 64) - 1,
]  # fmt: skip


@pytest.mark.parametrize("sets", SET_COUNTS)
def test_set_index_is_the_line_number_mod_sets(sets):
    """The division-free reduction equals % for every edge value of a 64-bit line number: 0,
    the top of the range, multiples of the set count and their neighbours, powers of two."""
    top = (1 << 64) - 1
    edges = {0, 1, top, top - 1, 1 << 63, (1 << 63) - 1, (1 << 32) - 1, 1 << 32}
    for q in (1, 2, 3, 1000, (1 << 32) + 7, top // sets, top // sets - 1, (top // sets) // 2):
        for d in (-2, -1, 0, 1, 2):
            edges.add(q * sets + d)
    edges |= {(1 << k) + d for k in range(64) for d in (-1, 0, 1)}
    rng = np.random.default_rng(sets % 1000)
    edges |= {int(v) for v in rng.integers(0, 1 << 63, 2000, dtype=np.uint64) * 2 + 1}
    lines = sorted(v for v in edges if 0 <= v <= top)
    assert set_of(sets, lines) == [v % sets for v in lines]


def test_set_index_of_no_sets_is_refused():
    """Zero sets is no geometry: EINVAL, nothing divided by zero."""
    one = ffi.new("uint64_t[]", [5])
    assert lib.pl_sim_set_of(0, one, 1, one) == -errno.EINVAL and one[0] == 5


def test_set_index_of_every_small_line_number():
    """For a few odd set counts, every line number below 2^20 maps to its remainder."""
    lines = np.arange(1 << 20, dtype=np.uint64)
    for sets in (3, 12, 480, 491520):
        assert set_of(sets, lines) == (lines % np.uint64(sets)).tolist()


# --- the plain model ----------------------------------------------------------------------------


class Level:
    """One set-associative array as per-set lists, least recent (LRU) or oldest (FIFO) first;
    its misses sorted into compulsory, capacity and conflict by a fully associative LRU
    shadow of the same number of lines and the set of lines ever seen."""

    def __init__(self, sets, ways, policy="lru"):
        self.sets, self.ways, self.policy = sets, ways, policy
        self.lines = {}  # set -> [line, ...]
        self.dirty = {}  # line -> dirty, for the lines held
        self.n = dict.fromkeys(COUNTS + CLASSES, 0)
        self.shadow, self.seen = OrderedDict(), set()

    def access(self, line, write):
        """True on a hit."""
        self.n["writes" if write else "reads"] += 1
        shadow_hit = line in self.shadow
        self.shadow[line] = None
        self.shadow.move_to_end(line, last=False)
        if len(self.shadow) > self.sets * self.ways:
            self.shadow.popitem()
        held = self.lines.setdefault(line % self.sets, [])
        if line in held:
            if self.policy == "lru":
                held.remove(line)
                held.append(line)
            self.dirty[line] |= write
            return True
        self.n["write_misses" if write else "read_misses"] += 1
        seen = line in self.seen
        self.seen.add(line)
        self.n["conflict" if shadow_hit else "capacity" if seen else "compulsory"] += 1
        if len(held) == self.ways:
            victim = held.pop(0)
            self.n["evictions"] += 1
            self.n["writebacks"] += self.dirty.pop(victim)
        held.append(line)
        self.dirty[line] = write
        return False


class Model:
    """pl_sim.h's hierarchy: the DTLB per page (the STLB on its misses); the first level per
    line, each miss fetched from the next level as the lines that cover it, and so on."""

    def __init__(self, cfg):
        policy = cfg.get("policy", "lru")
        self.levels, self.tlbs = [], []
        for name in ("l1", "l2", "llc"):
            if cfg.get(name):
                size, ways, line = (parse_size(v) for v in cfg[name].split(":"))
                self.levels.append((line, Level(size // line // ways, ways, policy)))
        for name in ("dtlb", "stlb"):
            if cfg.get(name):
                entries, ways = (int(v) for v in cfg[name].split(":"))
                self.tlbs.append(Level(entries // ways, ways))

    def _fetch(self, i, start, length, write):
        line, level = self.levels[i]
        for x in range(start // line, (start + length - 1) // line + 1):
            if not level.access(x, write) and i + 1 < len(self.levels):
                self._fetch(i + 1, x * line, line, write)

    def access(self, addr, size, write):
        end = addr + size - 1
        for page in range(addr // PAGE, end // PAGE + 1):
            if self.tlbs and not self.tlbs[0].access(page, write) and len(self.tlbs) > 1:
                self.tlbs[1].access(page, write)
        if self.levels:
            self._fetch(0, addr, size, write)

    def run(self, addr, ops, sizes):
        for a, o, z in zip(addr.tolist(), ops.tolist(), sizes.tolist()):
            if o in (0, 2):
                self.access(a, z, 0)
            if o in (1, 2):
                self.access(a, z, 1)


def trace(seed, n, pool, line, straddle=True):
    """n accesses (loads, stores, modifies of 1 to 16 bytes, some straddling a line unless
    straddle is false) to the lines of pool, in pairs within a line."""
    rng = np.random.default_rng(seed)
    base = rng.choice(np.asarray(pool, dtype=np.uint64), n // 2)
    offset = rng.integers(0, line if straddle else line - 16, n).astype(np.uint64)
    addr = np.repeat(base * np.uint64(line), 2) + offset
    ops = rng.integers(0, 3, n).astype(np.uint8)
    sizes = rng.choice(np.array([1, 4, 8, 8, 16], dtype=np.uint32), n)
    return addr, ops, sizes


def crowded(sets, ways, seed):
    """Line numbers that crowd a few sets (more lines than ways) plus scattered ones, so sets
    fill, evict and keep lines."""
    rng = np.random.default_rng(seed)
    hot = [s + k * sets for s in rng.integers(0, sets, 6).tolist() for k in range(ways + 3)]
    return hot + rng.integers(0, 8 * sets * ways, 3 * ways).tolist()


def counts(stats, keys=COUNTS):
    return [{k: getattr(s, k) for k in keys if hasattr(s, k)} for s in stats.levels + stats.tlbs]


def model_counts(model, keys=COUNTS):
    out = [{k: lv.n[k] for k in keys} for _, lv in model.levels]
    tlb_keys = ("reads", "writes", "read_misses", "write_misses", "evictions")
    return out + [{k: t.n[k] for k in tlb_keys} for t in model.tlbs]


GEOMETRIES = {
    # a 480 MiB 16-way LLC's 491,520 sets scaled down to 480 (15 x 32), behind a 12-way L1 of
    # 48 sets, with a 12-set DTLB and a 192-set STLB
    "480-sets": {"l1": "36K:12:64", "l2": "480K:16:64", "dtlb": "48:4", "stlb": "1536:8"},
    # a 105 MiB 15-way LLC scaled down (112 sets), under a 12-way L1 of 6 sets
    "15-way": {"l1": "4608:12:64", "llc": "105K:15:64", "dtlb": "64:4"},
    # 20 ways (wider than the order word: stamps), 96 sets, under a 10-way L1 of 3 sets
    "20-way": {"l1": "1920:10:64", "l2": "120K:20:64"},
    # 128-byte lines in L1 and L2, 256-byte lines in the LLC
    "128-byte": {"l1": "3K:12:128", "l2": "60K:10:128", "llc": "300K:20:256"},
    # fully associative: 12 ways (a scan) and 24 ways (the LRU list), and a 72-entry DTLB
    "fully-12": {"l1": "768:12:64", "l2": "1536:24:64", "dtlb": "72:72"},
}


def geometry(spec):
    """(sets, ways, line) of "SIZE:WAYS:LINE"."""
    size, ways, line = (parse_size(v) for v in spec.split(":"))
    return size // line // ways, ways, line


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("name", GEOMETRIES)
def test_counts_match_the_plain_model(name, policy):
    """Every count of every level and TLB equals the plain model's on a random trace that
    crowds some sets of the first and the last level and scatters over others."""
    cfg = {**GEOMETRIES[name], "policy": policy}
    levels = [geometry(cfg[k]) for k in ("l1", "l2", "llc") if cfg.get(k)]
    sets, ways, line = levels[0]
    last_sets, last_ways, last_line = levels[-1]
    pool = crowded(sets, ways, seed=ways) + list(range(4 * sets * ways))
    pool += [x * (last_line // line) for x in crowded(last_sets, last_ways, seed=1)]
    addr, ops, sizes = trace(len(name), 8000, pool, line)
    sim = Simulator({**NO_LEVELS, **cfg})
    sim.access(addr, ops, sizes)
    model = Model(cfg)
    model.run(addr, ops, sizes)
    assert counts(sim.stats()) == model_counts(model)
    for level in sim.stats().levels:  # every path ran
        assert level.hits > 0 and level.evictions > 0 and level.writebacks > 0, level


def test_a_huge_lazy_level_matches_the_plain_model():
    """A 480 MiB 16-way LLC (491,520 sets, allocated set by set as lines arrive) counts as the
    model says, with sets crowded past their ways and lines scattered over the whole level."""
    cfg = {"l1": "48K:12:64", "l2": "2M:16:64", "llc": "480M:16:64", "dtlb": "64:4"}
    sets = 491520
    rng = np.random.default_rng(5)
    pool = [s + k * sets for s in rng.integers(0, sets, 4).tolist() for k in range(40)]
    pool += rng.integers(0, 1 << 40, 400).tolist()
    addr, ops, sizes = trace(3, 20000, pool, 64)
    sim = Simulator({**NO_LEVELS, **cfg})
    sim.access(addr, ops, sizes)
    model = Model(cfg)
    model.run(addr, ops, sizes)
    assert counts(sim.stats()) == model_counts(model)
    assert sim.stats()["LLC"].evictions > 0


def test_classification_stays_exact_as_its_tables_grow():
    """A 2 MiB L2 (32,768 lines) classifies its misses exactly while its shadow grows from its
    first table (4,096 lines) to the whole level and beyond, and a 480-set level (491,520-like)
    classifies exactly too."""
    cfg = {"l1": "36K:12:64", "l2": "2M:16:64", "llc": "480K:16:64"}
    rng = np.random.default_rng(11)
    pool = rng.integers(0, 40000, 1200).tolist() + list(range(40000))
    addr, ops, sizes = trace(2, 120000, pool, 64)
    sim = Simulator({**NO_LEVELS, **cfg})
    sim.access(addr, ops, sizes)
    model = Model(cfg)
    model.run(addr, ops, sizes)
    keys = COUNTS + CLASSES
    assert counts(sim.stats(), keys) == model_counts(model, keys)
    l2 = sim.stats()["L2"]
    assert l2.compulsory > 32768 and l2.capacity > 0 and l2.conflict > 0


def test_reset_empties_a_lazy_level():
    """After reset a lazy level with classification counts the same trace exactly as a fresh
    simulator did, twice over."""
    cfg = {**NO_LEVELS, "l1": "48K:12:64", "llc": "480M:16:64", "policy": "fifo"}
    sets = 491520
    pool = [s + k * sets for s in range(3) for k in range(20)] * 500 + list(range(50000))
    addr, ops, sizes = trace(9, 60000, pool, 64)
    sim = Simulator(cfg)
    runs = []
    for _ in range(2):
        sim.access(addr, ops, sizes)
        runs.append(counts(sim.stats(), COUNTS + CLASSES))
        sim.reset()
    fresh = Simulator(cfg)
    fresh.access(addr, ops, sizes)
    assert runs[0] == runs[1] == counts(fresh.stats(), COUNTS + CLASSES)
    assert runs[0][1]["evictions"] > 0


ENOMEM_PROBE = textwrap.dedent(
    """
    import resource
    import numpy as np
    from pagelab import Simulator

    sweep = np.arange(0, 256 << 20, 64, dtype=np.uint64)  # 4 Mi lines of a 480 MiB LLC
    sim = Simulator({"l1": "48K:12:64", "l2": None, "llc": "480M:16:64"})
    size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) << 10
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (size + (32 << 20), hard))
    sim.access(sweep, sizes=8)
    try:
        sim.stats()
        print("no error")
    except MemoryError as e:
        print(e)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    sim.reset()
    sim.access(sweep[:100000], sizes=8)
    print(sim.stats()["LLC"].misses)
    """
)


def test_a_lazy_level_out_of_memory_says_so():
    """A lazy level that cannot grow (address space limited) keeps running, and its stats raise
    MemoryError saying the counts are incomplete; after reset, with memory, it counts again."""
    r = subprocess.run([sys.executable, "-c", ENOMEM_PROBE], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    message, misses = r.stdout.splitlines()
    assert "ran out of memory" in message and "incomplete" in message
    assert int(misses) == 100000


# --- every policy: a level of odd geometry against a small power-of-two one -------------------


@pytest.mark.parametrize("policy", ["lru", "fifo", "random", "plru"])
@pytest.mark.parametrize(
    "big,small",
    [
        ("480M:16:64", "32K:16:64"),  # 491,520 sets (15 x 2^15), lazy, against 32 sets
        ("30M:32:64", "8K:32:64"),  # 15,360 sets, 32 ways (stamps), against 4 sets
        ("960M:32:64", "8K:32:64"),  # 491,520 sets of 32 ways, lazy with stamps, against 4
        ("30K:8:128", "2K:8:128"),  # 30 sets against 2, 128-byte lines
        ("16G:16:64", "64K:16:64"),  # 2^28 lines (2^24 sets), lazy, against 64 sets
    ],
)
def test_same_traffic_per_set_gives_the_same_counts(big, small, policy):
    """Lines r + j * S (S the larger set count, a multiple of the smaller, r below the smaller)
    fall into set r of both levels, so every policy must give both the same counts: the odd
    and lazy geometries against the power-of-two one the reference tests check. (No access
    straddles lines: line r + 1 could be set 0 of the smaller level.)"""
    counts_of = {}
    for spec in (big, small):
        size, ways, line = (parse_size(v) for v in spec.split(":"))
        counts_of[spec] = size // line // ways
    S, s = counts_of[big], counts_of[small]
    assert S % s == 0
    ways = int(big.split(":")[1])
    rng = np.random.default_rng(ways)
    pool = [r + j * S for r in rng.integers(0, s, 3).tolist() for j in range(3 * ways)]
    line = parse_size(big.split(":")[2])
    addr, ops, sizes = trace(ways + len(policy), 6000, pool, line, straddle=False)
    got = []
    for spec in (big, small):
        sim = Simulator({**NO_LEVELS, "l1": spec, "policy": policy, "seed": 7, "classify": False})
        sim.access(addr, ops, sizes)
        got.append(counts(sim.stats()))
    assert got[0] == got[1]
    assert got[0][0]["evictions"] > 0 and got[0][0]["writebacks"] > 0


# --- memory ------------------------------------------------------------------------------------

RSS_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from pagelab import Simulator

    def kib(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1])

    llc = sys.argv[1]
    # a heap-like 4 MiB read in order, and 65,536 random loads over a 64 MiB mapping far away
    seq = np.arange(1 << 28, (1 << 28) + (4 << 20), 8, dtype=np.uint64)
    rng = np.random.default_rng(0)
    spread = (0x7F0000000000 + rng.integers(0, 64 << 20, 1 << 16)).astype(np.uint64)
    before = kib("VmHWM")
    sim = Simulator({"l1": "48K:12:64", "l2": "2M:16:64", "llc": llc})
    for _ in range(2):
        sim.access(seq, sizes=8)
        sim.access(spread, sizes=8)
        stats = sim.stats()
        sim.reset()
    print(json.dumps({"growth_kib": kib("VmHWM") - before, "llc": stats["LLC"].accesses}))
    """
)


@pytest.mark.parametrize("llc,lines", [("480M:16:64", 480 << 14), ("16G:16:64", 1 << 28)])
def test_huge_levels_cost_memory_for_the_lines_touched(llc, lines):
    """A simulator with a 480 MiB LLC, or one of 2^28 lines, is created, fed 4 MiB in order and
    65,536 random loads over 64 MiB twice (classifying every level) and reset each time, and
    its process's peak RSS grows by less than 64 MiB: tables for the whole capacity would take
    10 bytes a line, over 78 MB for the smaller of the two, before any classification."""
    assert lines <= lib.PL_SIM_MAX_LINES
    r = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, llc], capture_output=True, text=True, check=True
    )
    out = json.loads(r.stdout)
    assert out["llc"] > 65536  # the LLC saw the misses
    assert out["growth_kib"] < 64 << 10, out
