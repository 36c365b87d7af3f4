"""The simulator against a plain Python model of the same hierarchy, on random access streams.

The C core takes shortcuts for speed: a same-line fast path, the DTLB's last page, LRU and FIFO
order packed in one word per set, one-byte fingerprints in front of the tag compares, a hashed
LRU list for wide fully associative sets and for the classification shadow. None of them may
change a count. The model below has none of them: lists, dicts and the rules of pl_sim.h.
"""

import numpy as np
import pytest

from pagelab import Simulator

NO_LEVELS = {"l1": None, "l2": None, "llc": None, "dtlb": None, "stlb": None}
GOLDEN = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


class Level:
    """One set-associative array with LRU, FIFO or tree-PLRU replacement, counted like
    struct pl_sim_counts; with ``classify``, misses are sorted into Hill's three Cs."""

    def __init__(self, sets, ways, shift, policy="lru", classify=False):
        self.sets, self.ways, self.shift, self.policy = sets, ways, shift, policy
        self.slots = [[] for _ in range(sets)]  # per set: [line, dirty] in way order
        self.order = [[] for _ in range(sets)]  # per set: ways, most recent (newest) first
        self.plru = [0] * sets
        self.depth = (ways - 1).bit_length()
        self.n = dict.fromkeys(
            ("reads", "writes", "read_misses", "write_misses", "evictions", "writebacks"), 0
        )
        self.classify = classify
        self.shadow, self.seen = [], set()  # fully associative LRU of sets * ways lines
        self.classes = dict.fromkeys(("compulsory", "capacity", "conflict"), 0)

    def _touch(self, s, way):
        if self.policy == "lru":
            self.order[s].remove(way)
            self.order[s].insert(0, way)
        elif self.policy == "plru":
            node = 0
            for level in range(self.depth):
                right = (way >> (self.depth - 1 - level)) & 1
                if right:
                    self.plru[s] &= ~(1 << node)
                else:
                    self.plru[s] |= 1 << node
                node = 2 * node + 1 + right

    def _victim(self, s):
        if self.policy == "plru":
            node = way = 0
            for _ in range(self.depth):
                right = (self.plru[s] >> node) & 1
                way = way << 1 | right
                node = 2 * node + 1 + right
            return way
        return self.order[s][-1]

    def _shadow_hit(self, line):
        hit = line in self.shadow
        if hit:
            self.shadow.remove(line)
        elif len(self.shadow) == self.sets * self.ways:
            self.shadow.pop()
        self.shadow.insert(0, line)
        return hit

    def access(self, line, write):
        """True on a hit."""
        self.n["writes" if write else "reads"] += 1
        shadow_hit = self._shadow_hit(line) if self.classify else False
        s = line % self.sets
        slots = self.slots[s]
        for way, slot in enumerate(slots):
            if slot[0] == line:
                slot[1] |= write
                self._touch(s, way)
                return True
        self.n["write_misses" if write else "read_misses"] += 1
        if self.classify:
            kind = "conflict" if shadow_hit else "capacity" if line in self.seen else "compulsory"
            self.classes[kind] += 1
            self.seen.add(line)
        if len(slots) < self.ways:
            way = len(slots)
            slots.append([line, write])
            self.order[s].insert(0, way)
        else:
            way = self._victim(s)
            self.n["evictions"] += 1
            self.n["writebacks"] += slots[way][1]
            slots[way] = [line, write]
            self.order[s].remove(way)
            self.order[s].insert(0, way)
        if self.policy == "plru":
            self._touch(s, way)
        return False


class Model:
    """The hierarchy of pl_sim.h: DTLB then STLB on its misses, one lookup per page; L1 per line,
    each L1 miss fetched from L2 as whole L2 lines, each L2 miss from the LLC."""

    def __init__(self, levels, tlbs, page_shift):
        self.levels, self.tlbs, self.page_shift = levels, tlbs, page_shift

    def _fetch(self, i, base, span, write):
        c = self.levels[i]
        first, last = base >> c.shift, (base + (1 << span) - 1) >> c.shift
        for x in range(first, last + 1):
            if not c.access(x, write) and i + 1 < len(self.levels):
                self._fetch(i + 1, x << c.shift, c.shift, write)

    def access(self, addr, size, write):
        end = min(addr + size - 1, MASK64)
        if self.tlbs:
            for p in range(addr >> self.page_shift, (end >> self.page_shift) + 1):
                if not self.tlbs[0].access(p, write) and len(self.tlbs) > 1:
                    self.tlbs[1].access(p, write)
        if self.levels:
            l1 = self.levels[0]
            for x in range(addr >> l1.shift, (end >> l1.shift) + 1):
                if not l1.access(x, write) and len(self.levels) > 1:
                    self._fetch(1, x << l1.shift, l1.shift, write)

    def run(self, addr, ops, sizes):
        for a, o, z in zip(addr.tolist(), ops.tolist(), sizes.tolist()):
            if o in (0, 2):
                self.access(a, z, 0)
            if o in (1, 2):
                self.access(a, z, 1)


def geometry(spec):
    """(sets, ways, shift) of "SIZE:WAYS:LINE" in bytes."""
    size, ways, line = spec.split(":")
    size, ways, line = (
        int(size.removesuffix("K")) << (10 if "K" in size else 0),
        int(ways),
        int(line),
    )
    return size // line // ways, ways, line.bit_length() - 1


def build(cfg):
    """The Python model of a config dict as given to Simulator."""
    policy = cfg.get("policy", "lru")
    classify = cfg.get("classify", True)
    levels = []
    for i, name in enumerate(("l1", "l2", "llc")):
        if cfg.get(name):
            on = classify is True or (classify == "l1" and i == 0)
            levels.append(Level(*geometry(cfg[name]), policy, on))
    page_shift = 12
    tlbs = []
    for name in ("dtlb", "stlb"):
        if cfg.get(name):
            entries, ways = (int(v) for v in cfg[name].split(":"))
            tlbs.append(Level(entries // ways, ways, page_shift))
    return Model(levels, tlbs, page_shift)


def compare(cfg, addr, ops, sizes):
    """Simulator and model agree on every count of every level and TLB."""
    sim = Simulator({**NO_LEVELS, **cfg})
    sim.access(addr, ops, sizes)
    model = build(cfg)
    model.run(addr, ops, sizes)
    stats = sim.stats()
    for got, want in zip(stats.levels, model.levels):
        assert {k: getattr(got, k) for k in want.n} == want.n, got.name
        if want.classify:
            assert {k: getattr(got, k) for k in want.classes} == want.classes, got.name
    for got, want in zip(stats.tlbs, model.tlbs):
        counts = {k: getattr(got, k) for k in ("reads", "writes", "read_misses", "evictions")}
        assert counts == {k: want.n[k] for k in counts}, got.name
    return stats


def same_fingerprint_lines(sets, count, start=1):
    """Line numbers of one set whose one-byte fingerprints (pl_cache_fingerprint) are equal, so
    the set lookup must fall back on comparing whole tags."""
    top = lambda x: ((x * GOLDEN) & MASK64) >> 56  # noqa: E731
    lines, x = [], start
    while len(lines) < count:
        if top(x * sets) == top(start * sets):
            lines.append(x * sets)
        x += 1
    return lines


def stream(seed, n, lines, line_bytes=64, run=4):
    """Accesses that mix short runs within a line (the fast path), repeated lines, random lines
    of a small pool (conflicts, capacity, LRU reordering) and straddling sizes."""
    rng = np.random.default_rng(seed)
    base = rng.choice(np.asarray(lines, dtype=np.uint64), n // run)
    addr = np.repeat(base * np.uint64(line_bytes), run) + rng.integers(0, line_bytes, n).astype(
        np.uint64
    )
    ops = rng.integers(0, 3, n).astype(np.uint8)
    sizes = rng.choice(np.array([1, 2, 4, 8, 8, 8, 16, 100], dtype=np.uint32), n)
    return addr, ops, sizes


CONFIGS = [
    # 16 ways: the order word's last nibble; 12 and 24 ways: a partial word and the stamps
    {"l1": "4K:16:64", "dtlb": "16:4", "stlb": "64:16"},
    {"l1": "3K:12:64", "l2": "12K:24:64", "dtlb": "24:24"},
    {"l1": "1K:2:64", "l2": "4K:4:64", "llc": "16K:8:64", "dtlb": "4:2", "stlb": "8:2"},
    {"l1": "512:1:32", "l2": "2K:4:128", "classify": "l1"},
    {"l1": "2K:8:64", "l2": "8K:16:64", "dtlb": "72:72", "classify": False},
]


def _power_of_two_ways(cfg):
    return all(
        (w & (w - 1)) == 0 for w in (geometry(cfg[n])[1] for n in ("l1", "l2", "llc") if cfg.get(n))
    )


@pytest.mark.parametrize(
    "cfg,policy",
    [
        (cfg, policy)
        for cfg in CONFIGS
        for policy in ("lru", "fifo", "plru")
        if policy != "plru" or _power_of_two_ways(cfg)  # tree PLRU needs 2^n ways
    ],
    ids=lambda v: v if isinstance(v, str) else v["l1"],
)
def test_counts_match_a_plain_model_on_random_streams(cfg, policy):
    """Every count (and every class of miss) of every level and TLB equals the plain model's,
    for each replacement policy, on a stream of short runs over a pool of lines three times
    the first level's size."""
    sets, ways, _ = geometry(cfg["l1"])
    addr, ops, sizes = stream(len(cfg) + ways, 12_000, range(3 * sets * ways))
    stats = compare({**cfg, "policy": policy}, addr, ops, sizes)
    l1 = stats.levels[0]
    assert l1.hits > l1.misses > 0 and l1.evictions > 0  # the stream exercised both paths


@pytest.mark.parametrize("ways", [8, 16])
def test_lines_with_one_fingerprint_are_told_apart_by_their_tags(ways):
    """Lines of one set that share a fingerprint still hit and miss as their tags say."""
    sets = 4
    pool = same_fingerprint_lines(sets, ways + 3)
    addr, ops, sizes = stream(ways, 6_000, pool)
    stats = compare({"l1": f"{sets * ways * 64}:{ways}:64"}, addr, ops, sizes)
    assert stats.levels[0].hits > 0 and stats.levels[0].evictions > 0


def test_top_of_the_address_space():
    """Accesses at the last bytes of the address space (the last line, the empty-slot tag of a
    one-byte-line cache) count as the plain model says."""
    rng = np.random.default_rng(7)
    top = np.array([MASK64, MASK64 - 7, MASK64 - 63, MASK64 - 4096, 0, 64], dtype=np.uint64)
    addr = rng.choice(top, 400)
    ops = rng.integers(0, 3, 400).astype(np.uint8)
    sizes = rng.integers(1, 9, 400).astype(np.uint32)
    compare({"l1": "8:2:1", "dtlb": "4:2"}, addr, ops, sizes)
    compare({"l1": "1K:4:64", "l2": "4K:8:64", "dtlb": "4:4"}, addr, ops, sizes)


# --- the shadow's stamps, and runs -------------------------------------------------------------


def test_stamps_renumbered_many_times_keep_the_classes_exact():
    """An old line that stays in the shadow (in the level, or among its exiles once the level
    evicts it) while hot lines run the stamp clock around its ring (4,096 stamps for a 4-line
    level) keeps its place: touched again, it is the conflict or hit the plain model says."""
    rng = np.random.default_rng(11)
    blocks = []
    for old in range(16, 24):  # sets 0 and 1 of 2 in turn
        hot = rng.choice(np.array([0, 2, 5], dtype=np.uint64), 9_000)  # sets 0, 0, 1
        blocks += [np.array([old], np.uint64), hot, np.array([old], np.uint64)]
    addr = np.concatenate(blocks) * np.uint64(64)
    ops = rng.integers(0, 3, len(addr)).astype(np.uint8)
    stats = compare({"l1": "256:2:64"}, addr, ops, np.full(len(addr), 8, np.uint32))
    l1 = stats.levels[0]
    assert l1.conflict >= 4 and l1.compulsory == 11


def test_many_exiles_grow_their_table_exactly():
    """Hundreds of lines that one direct-mapped set evicts while the shadow still holds them
    are all found again: their second round is all conflict misses, as the model says."""
    lines = np.tile(np.arange(600, dtype=np.uint64) * np.uint64(1024), 2)
    stats = compare(
        {"l1": "64K:1:64"},
        lines * np.uint64(64),
        np.zeros(len(lines), np.uint8),
        np.full(len(lines), 8, np.uint32),
    )
    assert stats.levels[0].conflict == 600 and stats.levels[0].compulsory == 600


RUN_CONFIGS = [
    {"l1": "32K:8:64", "l2": "512K:8:64", "dtlb": "64:4", "stlb": "1536:12"},
    {"l1": "48K:16:64", "dtlb": "64:64"},  # 48 sets: the quick path's reduction; a wide DTLB
    {"l1": "4K:4:64", "l2": "64K:8:64", "policy": "fifo"},  # no quick path
    {"l1": "64:2:1", "classify": "l1"},  # one-byte lines, no TLB
]
RUNS = [  # base, stride (wrapping around to walk down), count, size, is_write
    (1 << 32, 64, 3000, 8, 0),
    (1 << 32, 8, 5000, 8, 1),
    ((1 << 32) + 60, 64, 700, 8, 0),  # every access straddles two lines
    (1 << 40, 4096 + 64, 900, 4, 1),  # a new page every time
    ((1 << 32) + 64 * 3000, (1 << 64) - 64, 3000, 8, 0),  # downwards
    (1 << 32, 0, 50, 1, 1),
    (1 << 32, 64, 3000, 8, 0),  # the first run again: hits now
]


@pytest.mark.parametrize("cfg", RUN_CONFIGS, ids=lambda c: c["l1"])
def test_runs_count_exactly_as_their_accesses_one_by_one(cfg):
    """pl_sim_access_run(base, stride, count) (PL_LOAD_RUN) leaves every count, class and TLB
    count where simulating each of its accesses in turn leaves them."""
    from pagelab._native import lib

    by_run, by_access = Simulator({**NO_LEVELS, **cfg}), Simulator({**NO_LEVELS, **cfg})
    for base, stride, count, size, write in RUNS:
        lib.pl_sim_access_run(by_run._sim, base, stride, count, size, write)
        addr = (base + stride * np.arange(count, dtype=object)) % (1 << 64)
        by_access.access(addr.astype(np.uint64), ops=write, sizes=size)
    l1 = by_run.stats().levels[0]
    assert by_run.stats() == by_access.stats()
    assert l1.hits > 0 and l1.misses > 0 and l1.evictions > 0
