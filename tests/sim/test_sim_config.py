"""Simulator configuration: machine defaults (fake sysfs trees), overrides, and bad input."""

import numpy as np
import pytest

from pagelab import (
    BadInput,
    CacheGeometry,
    SimConfig,
    Simulator,
    TLBGeometry,
    cachelab,
    default_config,
    scan_trace,
)
from pagelab._native import lib
from pagelab.sim.config import ASSUMED, make_config, parse_size


def fake_sysfs(root, caches):
    """cpu0's cache directory with one index per (level, type, size, ways, line, sets)."""
    base = root / "sys/devices/system/cpu/cpu0/cache"
    for i, (level, kind, size, ways, line, sets) in enumerate(caches):
        d = base / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (
            ("level", level),
            ("type", kind),
            ("size", size),
            ("ways_of_associativity", ways),
            ("coherency_line_size", line),
            ("number_of_sets", sets),
        ):
            (d / name).write_text(f"{value}\n")
    return root


def test_defaults_come_from_sysfs_and_say_so(tmp_path):
    """L1D, L2 and LLC are read from sysfs (instruction caches ignored), origin 'sysfs'."""
    root = fake_sysfs(
        tmp_path,
        [
            (1, "Data", "48K", 12, 64, 64),
            (1, "Instruction", "32K", 8, 64, 64),
            (2, "Unified", "1280K", 20, 64, 1024),
            (3, "Unified", "24576K", 12, 64, 32768),
        ],
    )
    cfg = default_config(root)
    assert cfg.l1 == CacheGeometry(48 << 10, 12, 64, "sysfs")
    assert cfg.l2 == CacheGeometry(1280 << 10, 20, 64, "sysfs")
    assert cfg.llc == CacheGeometry(24 << 20, 12, 64, "sysfs")
    assert cfg.check() is cfg


def test_sysfs_geometry_without_power_of_two_sets_is_taken_as_reported(tmp_path):
    """A 480 MiB 16-way LLC (491,520 sets) is modelled as the machine reports it, and runs."""
    root = fake_sysfs(
        tmp_path,
        [
            (1, "Data", "48K", 12, 64, 64),
            (2, "Unified", "2048K", 16, 64, 2048),
            (3, "Unified", "491520K", 16, 64, 491520),
        ],
    )
    cfg = default_config(root)
    assert cfg.llc == CacheGeometry(480 << 20, 16, 64, "sysfs") and cfg.llc.sets == 491520
    assert Simulator(cfg).config.llc.sets == 491520


def test_missing_sysfs_falls_back_to_named_defaults(tmp_path):
    """No cache directory at all: the PL_SIM_DEFAULT_* geometry, origin 'assumed'."""
    cfg = default_config(tmp_path)
    assert cfg.l1 == CacheGeometry(
        lib.PL_SIM_DEFAULT_L1_SIZE, lib.PL_SIM_DEFAULT_L1_WAYS, lib.PL_CACHE_LINE, "assumed"
    )
    assert cfg.llc.origin == cfg.l2.origin == "assumed"


def test_a_machine_without_l3_gets_no_llc(tmp_path):
    """sysfs listing L1 and L2 only means there is no LLC to model."""
    root = fake_sysfs(
        tmp_path, [(1, "Data", "32K", 8, 64, 64), (2, "Unified", "512K", 8, 64, 1024)]
    )
    assert default_config(root).llc is None


def test_tlb_defaults_are_from_cpuid_or_named_defaults():
    """Each TLB says where it came from (CPUID, or assumed where the CPU or its hypervisor
    reports none, as a Xeon VM with leaf 0x18 zeroed does), and its geometry is one the model
    can run. Any answer a real machine gives is accepted; the described machines pin each."""
    for page in ("4k", "2m"):
        cfg = default_config(page=page)
        for _, t in cfg.tlbs:
            assert t.origin.startswith("cpuid 0x") or t.origin == ASSUMED
            assert t.entries == t.sets * t.ways
        if cfg.dtlb.origin == ASSUMED:
            assert cfg.dtlb.entries == (
                lib.PL_SIM_DEFAULT_DTLB_ENTRIES
                if page == "4k"
                else lib.PL_SIM_DEFAULT_DTLB_2M_ENTRIES
            )


def test_dict_overrides_keep_the_rest_of_the_machine():
    """A dict changes only the keys it names; 'none' or None removes a level."""
    cfg = make_config({"l1": "16K:4:64", "llc": "none", "tlb": "32:4", "policy": "FIFO"})
    machine = default_config()
    assert cfg.l1 == CacheGeometry(16 << 10, 4, 64, "option")
    assert cfg.l2 == machine.l2 and cfg.llc is None and cfg.stlb == machine.stlb
    assert cfg.dtlb == TLBGeometry(32, 4, "option") and cfg.policy == "fifo"


def test_sizes_accept_suffixes():
    """32K, 1M, 1MiB, 64 and 2G are byte counts."""
    assert [parse_size(t) for t in ("32K", "1M", "1MiB", "64", "2g")] == [
        32768,
        1 << 20,
        1 << 20,
        64,
        2 << 30,
    ]


def test_config_and_stats_print_the_geometry():
    """The text report names every level's geometry and origin, and the source 'sim'."""
    s = Simulator({"l1": "32K:8:64", "l2": None, "llc": None, "dtlb": "64:4", "stlb": None})
    s.access(np.arange(0, 1 << 16, 64, dtype=np.uint64))
    text = str(s.stats())
    assert "L1D   32 KiB, 8-way, 64 B lines (64 sets)" in text and "from option" in text
    assert "DTLB  64 entries, 4-way (16 sets)" in text and "source: sim" in text


@pytest.mark.parametrize(
    "spec,message",
    [
        ({"l1": "48K:7:64"}, "768 lines do not divide into 7 ways"),
        ({"l1": "32K:8:48"}, "line size 48"),
        ({"l1": "32K:0:64"}, "ways must be"),
        ({"l1": "1000:1:64"}, "whole number of 64-byte lines"),
        ({"l1": "32K:8"}, "SIZE:WAYS:LINE"),
        ({"l1": "lots:8:64"}, "is not a size"),
        ({"l1": {"size": 1024, "ways": 2}}, "give size, ways and line"),
        ({"l2": "768K:12:64", "policy": "plru"}, "plru needs"),
        ({"policy": "mru"}, "unknown policy"),
        ({"page": "1g"}, "not 4k or 2m"),
        ({"tlb": "6:4"}, "do not divide"),
        ({"dtlb": None, "stlb": "64:4"}, "needs a DTLB"),
        ({"l1": None, "l2": None, "llc": None, "dtlb": None, "stlb": None}, "nothing to simulate"),
        ({"seed": -1}, "seed"),
        ({"seed": "x"}, "seed"),
        ({"classify": "yes"}, "classify"),
        ({"colour": "red"}, "unknown config key"),
        ({"l1": "64K:8:8192", "page": "4k"}, "larger than"),
        ({"llc": "32G:1:64"}, "more than the simulator"),
    ],
)
def test_simulator_rejects_bad_configs_with_one_line(spec, message):
    """Impossible geometry, policy, page size or key: BadInput with one line naming it."""
    with pytest.raises(BadInput, match=message) as e:
        Simulator(spec)
    assert "\n" not in str(e.value)


def test_simulator_rejects_other_config_types():
    """A config is None, a dict or a SimConfig; a SimConfig is checked too."""
    with pytest.raises(BadInput, match="dict or a SimConfig"):
        Simulator("32K:8:64")
    with pytest.raises(BadInput, match="ways must be"):
        Simulator(SimConfig(l1=CacheGeometry(1024, 0, 64)))


@pytest.fixture
def small():
    return Simulator({"l1": "1K:2:64", "l2": None, "llc": None, "dtlb": None, "stlb": None})


@pytest.mark.parametrize(
    "args,message",
    [
        (([-1, 5],), r"addresses must lie in \[0"),
        (([1.5, 2.0],), "addresses must be integers"),
        ((np.zeros((2, 2), dtype=np.uint64),), "one-dimensional"),
        (([2**64],), "addresses must be integers"),
        (([0, 64], [0, 3]), "ops must be 0"),
        (([0, 64], 5), "op 5"),
        (([0, 64], [0]), "must match the 2 addresses"),
        (([0, 64], None, [8, 0]), "sizes must be 1 to 512 bytes"),
        (([0, 64], None, 0), "sizes must be 1 to 512 bytes"),
        (([0, 64], None, 2**32), "sizes must lie"),
        (([0, 64], None, [8, 513]), "sizes must be 1 to 512 bytes"),
        (([0, 64], None, 2**32 - 1), "sizes must be 1 to 512 bytes"),
        ((["a"],), "must be integers"),
    ],
)
def test_access_rejects_bad_arrays(small, args, message):
    """Negative, fractional, oversized or mis-shaped inputs raise BadInput and simulate nothing."""
    with pytest.raises(BadInput, match=message):
        small.access(*args)
    assert small.stats()["L1D"].accesses == 0


def test_replay_and_scan_reject_unreadable_and_malformed_traces(small, tmp_path):
    """Missing files and malformed lines raise BadInput naming the file (and the line); a
    malformed trace simulates nothing, even the records before the bad line."""
    with pytest.raises(BadInput, match="No such file"):
        small.replay(tmp_path / "missing.trace")
    with pytest.raises(BadInput, match="Is a directory"):
        scan_trace(tmp_path)
    bad = tmp_path / "bad.trace"
    bad.write_text(" L 0,8\n L 40,8\n S 80\n")
    with pytest.raises(BadInput, match=r"bad\.trace: line 3: expected ','"):
        small.replay(bad)
    assert small.stats()["L1D"].accesses == 0


def test_replay_counts_records_and_returns_what_the_trace_held(small, tmp_path):
    """replay() simulates data records only and reports loads, stores, modifies, I records."""
    p = tmp_path / "t.trace"
    p.write_text("==1== hi\nI  400000,4\n L 0,8\n S 40,8\n M 80,4\nI  400004,2\n")
    info = small.replay(p)
    assert (info.loads, info.stores, info.modifies, info.instructions, info.skipped) == (
        1,
        1,
        1,
        2,
        1,
    )
    st = small.stats()
    assert st.trace == info and (st["L1D"].reads, st["L1D"].writes) == (2, 2)


@pytest.mark.parametrize(
    "args,message",
    [
        ((-1, 1, 1), "-s must be"),
        ((1, 0, 1), "-E must be"),
        ((1, 1, -2), "-b must be"),
        ((1.5, 1, 1), "-s must be"),
        ((1, 1, 31), "too large"),
        ((26, 8, 4), "too large"),
    ],
)
def test_cachelab_rejects_impossible_geometry(tmp_path, args, message):
    """Bad -s/-E/-b raise BadInput before the trace is read."""
    p = tmp_path / "t.trace"
    p.write_text(" L 0,1\n")
    with pytest.raises(BadInput, match=message):
        cachelab(p, *args)


def test_cachelab_rejects_missing_and_malformed_traces(tmp_path):
    """A missing trace and a malformed line are BadInput, the latter with its line number."""
    with pytest.raises(BadInput, match="No such file"):
        cachelab(tmp_path / "missing.trace", 1, 1, 1)
    p = tmp_path / "t.trace"
    p.write_text(" L 0,1\n Q 4,1\n")
    with pytest.raises(BadInput, match="line 2"):
        cachelab(p, 1, 1, 1, verbose=True)


def test_default_config_rejects_a_bad_page_size():
    """default_config(page=...) accepts 4k and 2m only."""
    with pytest.raises(BadInput, match="not 4k or 2m"):
        default_config(page="3k")
