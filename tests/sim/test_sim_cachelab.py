"""Cache-lab mode behaves as CS:APP's reference simulator (csim-ref), on traces made here."""

import copy
import pickle

import numpy as np
import pytest

from helpers import csim_reference, run
from pagelab import cachelab

# 2 sets of 16-byte blocks. Derived by hand for -s 1 -E 1 -b 4 (one line per set):
#   L 0 miss (set 0 <- block 0), L 8 hit, S c hit (size 8 would straddle into block 1; ignored),
#   L 10 miss (set 1 <- block 1), M 20 miss+eviction (block 2 evicts 0) then hit,
#   L 4 miss+eviction (block 0 evicts 2), M 14 hit hit, S 30 miss+eviction (block 3 evicts 1).
HAND_TRACE = """\
==4242== Lackey, an example Valgrind tool
==4242== Command: ./a.out

I  0400d7d4,8
 L 0,8
 L 8,8
 S c,8
I  0400d7d8,3
 L 10,4
 M 20,4
 L 4,1
 M 14,1
 S 30,2
==4242== Counted 1 call to main()
"""
HAND_VERBOSE = """\
L 0,8 miss
L 8,8 hit
S c,8 hit
L 10,4 miss
M 20,4 miss eviction hit
L 4,1 miss eviction
M 14,1 hit hit
S 30,2 miss eviction
hits:5 misses:5 evictions:3"""


@pytest.fixture
def hand_trace(tmp_path):
    p = tmp_path / "hand.trace"
    p.write_text(HAND_TRACE)
    return p


def test_hand_trace_counts_direct_mapped(hand_trace):
    """-s 1 -E 1 -b 4 on the hand trace: 5 hits, 5 misses, 3 evictions (derived above)."""
    r = cachelab(hand_trace, 1, 1, 4)
    assert (r.hits, r.misses, r.evictions) == (5, 5, 3)
    assert r.source == "sim"


def test_a_result_is_read_only_but_copies_and_pickles(hand_trace):
    """A result refuses assignment, and copy and pickle give an equal one (tests/checked_probe.py
    perturbs a chapter's results through copies)."""
    r = cachelab(hand_trace, 1, 1, 4)
    with pytest.raises(AttributeError, match="read-only"):
        r.hits = 0
    assert copy.copy(r) == r == pickle.loads(pickle.dumps(r))


def test_hand_trace_counts_two_way(hand_trace):
    """-s 1 -E 2 -b 4: both blocks of each set fit, so only the 4 first touches miss."""
    r = cachelab(hand_trace, 1, 2, 4)
    assert (r.hits, r.misses, r.evictions) == (6, 4, 0)


def test_verbose_lines_match_csim_ref_format(hand_trace):
    """-v prints one line per data record (I records and banners skipped), then the summary."""
    assert str(cachelab(hand_trace, 1, 1, 4, verbose=True)) == HAND_VERBOSE


def test_cli_prints_exactly_the_csim_ref_output(pagelab_cmd, hand_trace):
    """`pagelab sim trace FILE -s -E -b -v` prints the verbose lines and the summary, exit 0."""
    r = run([*pagelab_cmd, "sim", "trace", str(hand_trace), "-s", "1", "-E", "1", "-b", "4", "-v"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == HAND_VERBOSE + "\n"
    r = run([*pagelab_cmd, "sim", "trace", str(hand_trace), "-s", "1", "-E", "2", "-b", "4"])
    assert r.stdout == "hits:6 misses:4 evictions:0\n"


@pytest.mark.parametrize(
    "s,E,b", [(0, 1, 0), (1, 1, 1), (2, 2, 3), (3, 4, 4), (4, 1, 5), (0, 32, 4), (0, 100, 2)]
)  # one wide set: the hashed list
def test_generated_trace_agrees_with_a_reference_lru_model(tmp_path, s, E, b):
    """A random 3000-record trace gives the counts of an independent list-based LRU model."""
    rng = np.random.default_rng(s * 100 + E * 10 + b)
    records = [("LSM"[rng.integers(3)], int(rng.integers(0, 1 << 10))) for _ in range(3000)]
    text = "".join(
        f"I  {0x400000 + i:08x},3\n {op} {a:x},{rng.integers(1, 9)}\n"
        for i, (op, a) in enumerate(records)
    )
    p = tmp_path / "gen.trace"
    p.write_text(text)
    r = cachelab(p, s, E, b)
    assert (r.hits, r.misses, r.evictions) == csim_reference(records, s, E, b)
