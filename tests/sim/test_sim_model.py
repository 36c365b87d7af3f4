"""The simulator's model, checked against counts derived by hand, through the public API."""

import numpy as np
import pytest

from pagelab import Simulator

LINE = 64
PAGE = 4096
NO_LEVELS = {"l1": None, "l2": None, "llc": None, "dtlb": None, "stlb": None}


def sim(**kw):
    """A simulator with only the levels given (e.g. l1="1K:2:64"), nothing from the machine."""
    return Simulator({**NO_LEVELS, **kw})


def lines(*numbers):
    """Byte addresses of the given line numbers (64-byte lines)."""
    return np.array(numbers, dtype=np.uint64) * LINE


def counts(s, name="L1D"):
    st = s.stats()[name]
    return st.accesses, st.hits, st.misses


def test_sequential_walk_misses_once_per_line_when_larger_than_the_cache():
    """A walk over 4x the cache misses once per 64-byte line, on every pass (LRU, cyclic)."""
    s = sim(l1="1K:2:64")
    walk = np.arange(0, 4096, 8, dtype=np.uint64)  # 512 8-byte reads over 64 lines
    s.access(walk, sizes=8)
    s.access(walk, sizes=8)
    st = s.stats()["L1D"]
    assert (st.accesses, st.misses) == (1024, 128)
    assert (st.compulsory, st.capacity, st.conflict) == (64, 64, 0)


def test_working_set_that_fits_only_misses_compulsorily():
    """Eight lines in a 16-line cache: the first pass misses 8 times, the second never."""
    s = sim(l1="1K:2:64")
    ws = np.arange(0, 512, 8, dtype=np.uint64)
    s.access(ws, sizes=8)
    assert s.stats()["L1D"].misses == 8
    s.access(ws, sizes=8)
    st = s.stats()["L1D"]
    assert (st.misses, st.compulsory, st.capacity, st.conflict) == (8, 8, 0, 0)


def test_stride_onto_one_set_conflicts_direct_mapped_but_not_two_way():
    """Two lines 1 KiB apart share a set: direct-mapped they evict each other, 2-way they fit."""
    pattern = np.tile(np.array([0, 1024], dtype=np.uint64), 4)
    direct = sim(l1="1K:1:64")
    direct.access(pattern)
    st = direct.stats()["L1D"]
    assert (st.misses, st.compulsory, st.conflict, st.capacity) == (8, 2, 6, 0)
    two_way = sim(l1="1K:2:64")
    two_way.access(pattern)
    st = two_way.stats()["L1D"]
    assert (st.misses, st.compulsory, st.conflict) == (2, 2, 0)


@pytest.mark.parametrize("pages", [1, 4, 8, 9, 16])
def test_tlb_reach_misses_start_when_pages_exceed_entries(pages):
    """An 8-entry LRU DTLB holds 8 pages: cycling over more misses on every access."""
    s = sim(dtlb="8:8")
    walk = np.tile(np.arange(pages, dtype=np.uint64) * PAGE, 3)
    s.access(walk)
    st = s.stats()["DTLB"]
    assert st.accesses == 3 * pages
    assert st.misses == (pages if pages <= 8 else 3 * pages)


def test_huge_pages_cover_512_small_pages_in_one_entry():
    """With 2 MiB pages, 512 4 KiB-strided accesses are one page: one DTLB miss."""
    s = sim(dtlb="8:8", page="2m")
    s.access(np.arange(512, dtype=np.uint64) * PAGE)
    assert s.stats()["DTLB"].misses == 1


def test_stlb_sees_only_dtlb_misses():
    """The STLB is looked up only on DTLB misses, and catches pages the DTLB dropped."""
    s = sim(dtlb="4:4", stlb="16:4")
    walk = np.tile(np.arange(8, dtype=np.uint64) * PAGE, 2)
    s.access(walk)
    d, t = s.stats()["DTLB"], s.stats()["STLB"]
    assert (d.accesses, d.misses) == (16, 16)
    assert (t.accesses, t.misses) == (16, 8)


def test_lru_and_fifo_differ_on_a_hit_that_refreshes():
    """A B A C B in one 2-way set: LRU keeps A (refreshed) and loses B; FIFO loses A."""
    seq = lines(0, 1, 0, 2, 1)
    lru, fifo = sim(l1="128:2:64"), sim(l1="128:2:64", policy="fifo")
    lru.access(seq)
    fifo.access(seq)
    assert counts(lru) == (5, 1, 4)
    assert counts(fifo) == (5, 2, 3)


def test_tree_plru_on_a_four_way_set_hand_worked():
    """A B C D fill ways 0-3; A hits; E evicts C (the tree points right, then left), not B as
    LRU would; B hits; C evicts D. LRU on the same sequence misses once more."""
    seq = lines(0, 1, 2, 3, 0, 4, 1, 2)
    plru, lru = sim(l1="256:4:64", policy="plru"), sim(l1="256:4:64", policy="lru")
    plru.access(seq)
    lru.access(seq)
    assert counts(plru) == (8, 2, 6)
    assert counts(lru) == (8, 1, 7)
    plru.access(lines(3))  # D was the victim of the last miss
    assert counts(plru) == (9, 2, 7)


def _random_run(seed):
    s = sim(l1="256:4:64", policy="random", seed=seed)
    seq = np.random.default_rng(7).integers(0, 8, 2000).astype(np.uint64) * LINE
    s.access(seq)
    return s, seq


def test_random_policy_is_reproducible_per_seed_and_differs_between_seeds():
    """The same seed replays the same victims (also after reset); another seed does not."""
    a, seq = _random_run(1)
    b, _ = _random_run(1)
    c, _ = _random_run(2)
    assert counts(a) == counts(b)
    assert counts(a) != counts(c)
    a.reset()
    a.access(seq)
    assert counts(a) == counts(b)


def test_classification_hand_derived():
    """Direct-mapped, 4 lines: 0 4 0 is compulsory, compulsory, conflict; 0..7 then 0 ends in a
    capacity miss (a 4-line fully associative LRU cache holds only 4..7)."""
    s = sim(l1="256:1:64")
    s.access(lines(0, 4, 0))
    st = s.stats()["L1D"]
    assert (st.compulsory, st.capacity, st.conflict) == (2, 0, 1)
    s = sim(l1="256:1:64")
    s.access(lines(*range(8), 0))
    st = s.stats()["L1D"]
    assert (st.misses, st.compulsory, st.capacity, st.conflict) == (9, 8, 1, 0)


@pytest.mark.parametrize("policy", ["lru", "fifo", "random", "plru"])
def test_classes_add_up_to_misses_and_compulsory_counts_distinct_lines(policy):
    """compulsory + capacity + conflict == misses; compulsory == distinct lines touched."""
    rng = np.random.default_rng(3)
    addr = (rng.integers(0, 1 << 16, 20000) & ~7).astype(np.uint64)
    s = sim(l1="2K:4:64", l2="8K:8:64", policy=policy, seed=5)
    s.access(addr, ops=rng.integers(0, 3, len(addr)), sizes=8)
    for name in ("L1D", "L2"):
        st = s.stats()[name]
        assert st.compulsory + st.capacity + st.conflict == st.misses
    assert s.stats()["L1D"].compulsory == len(np.unique(addr // LINE))


def test_straddling_accesses_touch_every_line_and_page_they_cover():
    """8 bytes at 60 cover lines 0 and 1; 8 bytes at 4092 cover two pages; 64 at 0 one line."""
    s = sim(l1="1K:2:64", dtlb="8:8")
    s.access(np.array([60], dtype=np.uint64), sizes=8)
    assert counts(s) == (2, 0, 2)
    assert s.stats()["DTLB"].accesses == 1
    s.access(np.array([4092], dtype=np.uint64), sizes=8)
    assert s.stats()["DTLB"].accesses == 3 and s.stats()["DTLB"].misses == 2
    s = sim(l1="1K:2:64")
    s.access(np.array([0], dtype=np.uint64), sizes=64)
    assert counts(s) == (1, 0, 1)


def test_modify_is_a_load_then_a_store():
    """op 2 counts a read (the miss) and a write (a hit) on the same line."""
    s = sim(l1="1K:2:64")
    s.access(np.array([128], dtype=np.uint64), ops=2)
    st = s.stats()["L1D"]
    assert (st.reads, st.writes, st.read_misses, st.write_misses) == (1, 1, 1, 0)


def test_lower_levels_see_only_misses_of_the_level_above():
    """8 lines twice through a 4-line direct-mapped L1: all 16 miss and reach L2, which misses
    only the first 8 (compulsory) and hits the rest."""
    s = sim(l1="256:1:64", l2="1K:2:64")
    s.access(lines(*range(8), *range(8)))
    l1, l2 = s.stats()["L1D"], s.stats()["L2"]
    assert (l1.accesses, l1.misses) == (16, 16)
    assert (l2.accesses, l2.hits, l2.misses, l2.compulsory) == (16, 8, 8, 8)


def test_hierarchy_is_non_inclusive_an_l2_eviction_leaves_l1_alone():
    """A 4-line L2 under a 16-line L1 evicts lines the L1 keeps: the L1 still hits on them."""
    s = sim(l1="1K:2:64", l2="256:1:64")
    s.access(lines(*range(8)))
    assert s.stats()["L2"].evictions == 4
    s.access(lines(*range(8)))
    assert counts(s) == (16, 8, 8)
    assert s.stats()["L2"].accesses == 8


def test_dirty_evictions_are_counted_as_writebacks_and_stores_reach_l2_as_writes():
    """Store to line 0, then lines 2 and 4 into the same 1-way set: 2 evictions, 1 dirty."""
    s = sim(l1="128:1:64", l2="1K:2:64")
    s.access(lines(0), ops=1)
    s.access(lines(2, 4))
    st = s.stats()["L1D"]
    assert (st.evictions, st.writebacks) == (2, 1)
    assert s.stats()["L2"].writes == 1


def _mixed_accesses():
    """Runs within lines and pages, jumps, straddles, loads and stores: every path is taken."""
    rng = np.random.default_rng(11)
    starts = rng.integers(0, 1 << 15, 600)
    addr = np.concatenate([s + np.arange(0, rng.integers(1, 40) * 4, 4) for s in starts])
    ops = rng.integers(0, 2, len(addr)).astype(np.uint8)
    sizes = rng.integers(1, 17, len(addr)).astype(np.uint32)
    return addr.astype(np.uint64), ops, sizes


@pytest.mark.parametrize("policy", ["lru", "fifo", "random", "plru"])
def test_fast_path_counts_exactly_what_the_full_model_counts(policy):
    """Arrays (with the same-line fast path) and the full model per access agree exactly."""
    from pagelab._native import lib

    addr, ops, sizes = _mixed_accesses()
    cfg = {"l1": "1K:2:64", "l2": "4K:4:64", "dtlb": "4:2", "stlb": "8:2", "policy": policy}
    fast, full = sim(**cfg), sim(**cfg)
    fast.access(addr, ops, sizes)
    for a, o, z in zip(addr.tolist(), ops.tolist(), sizes.tolist()):
        lib.pl_sim_access_slow(full._sim, a, z, o)
    assert fast.stats() == full.stats()
    assert fast.stats()["L1D"].hits > len(addr) // 2  # the fast path did serve many


def test_the_pl_sim_hook_counts_like_arrays():
    """pl_sim_access, the PL_SIM hook of workloads, called once per access, matches arrays."""
    from pagelab._native import lib

    addr, ops, sizes = _mixed_accesses()
    cfg = {"l1": "1K:2:64", "dtlb": "4:2"}
    whole, hook = sim(**cfg), sim(**cfg)
    whole.access(addr, ops, sizes)
    for a, o, z in zip(addr.tolist(), ops.tolist(), sizes.tolist()):
        lib.pl_sim_access(hook._sim, a, z, o)
    assert whole.stats() == hook.stats()


def test_reset_forgets_everything():
    """After reset the same accesses give the same counts as on a fresh simulator."""
    s = sim(l1="1K:2:64", dtlb="8:8")
    s.access(lines(*range(40)))
    first = s.stats()
    s.reset()
    assert s.stats()["L1D"].accesses == 0
    s.access(lines(*range(40)))
    assert s.stats() == first


def test_classification_can_be_switched_off():
    """classify=False leaves the three Cs as None and every other count unchanged."""
    on, off = sim(l1="256:1:64"), sim(l1="256:1:64", classify=False)
    for s in (on, off):
        s.access(lines(0, 4, 0, 1))
    a, b = on.stats()["L1D"], off.stats()["L1D"]
    assert (b.compulsory, b.capacity, b.conflict) == (None, None, None)
    assert (a.accesses, a.misses, a.evictions) == (b.accesses, b.misses, b.evictions)


def _reference_lru(lines_seq, writes, ways):
    """One fully associative LRU set, most recent last: (misses, evictions, writebacks)."""
    held, dirty = [], {}
    misses = evictions = writebacks = 0
    for line, w in zip(lines_seq, writes):
        if line in held:
            held.remove(line)
        else:
            misses += 1
            if len(held) == ways:
                old = held.pop(0)
                evictions += 1
                writebacks += dirty.pop(old)
            dirty[line] = False
        held.append(line)
        dirty[line] = dirty[line] or bool(w)
    return misses, evictions, writebacks


@pytest.mark.parametrize("ways", [16, 17, 72])
def test_wide_fully_associative_lru_matches_a_reference(ways):
    """One set of many ways (the hashed LRU list beyond 16 ways; the scan at 16) counts misses,
    evictions and writebacks like a plain list-based LRU, for a cache and for a TLB."""
    rng = np.random.default_rng(ways)
    seq = rng.integers(0, 2 * ways, 5000)
    writes = rng.integers(0, 2, len(seq))
    s = sim(l1=f"{ways * 64}:{ways}:64", dtlb=f"{ways}:{ways}")
    s.access(seq.astype(np.uint64) * PAGE, ops=writes)
    l1, tlb = s.stats()["L1D"], s.stats()["DTLB"]
    assert (l1.misses, l1.evictions, l1.writebacks) == _reference_lru(seq, writes, ways)
    assert (tlb.misses, tlb.evictions) == _reference_lru(seq, writes, ways)[:2]
