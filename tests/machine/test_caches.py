"""The one reader of cache geometry (pagelab.machine.caches): sysfs of the first CPU that
describes any, missing levels reported rather than guessed, and the $PAGELAB_MACHINE switch
that points it at a described host, strict about what it reads there."""

import json

import pytest

from described import hosts, write_tree
from helpers import run
from pagelab import BadInput, default_config, doctor
from pagelab.machine import caches as caches
from pagelab.machine.described import ENV


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Point the switch at a described host by name; returns its tree."""

    def use(name):
        tree = write_tree(tmp_path / name, hosts()[name])
        monkeypatch.setenv(ENV, str(tree))
        return tree

    return use


def test_cpu0_caches_are_read_in_level_order(tmp_path):
    """Each index directory becomes a Cache; incomplete ones on a real machine are skipped."""
    tree = write_tree(tmp_path, ["2:u:1280K:20:64", "1:i:32K:8:64", "1:d:48K:12:64"])
    (tree / "sys/devices/system/cpu/cpu0/cache/index3").mkdir()
    (tree / "sys/devices/system/cpu/cpu0/cache/index3/level").write_text("3\n")
    got = caches.read(tmp_path)
    assert [c.to_dict() for c in got] == [
        {"level": 1, "type": "Data", "size": 48 << 10, "ways": 12, "line": 64, "sets": 64},
        {"level": 1, "type": "Instruction", "size": 32 << 10, "ways": 8, "line": 64, "sets": 64},
        {"level": 2, "type": "Unified", "size": 1280 << 10, "ways": 20, "line": 64, "sets": 1024},
    ]
    assert [c.name for c in got] == ["L1d", "L1i", "L2"]
    assert caches.missing(tmp_path) == ["L3"]


def test_a_machine_that_describes_no_cache_has_every_level_missing(tmp_path):
    """No cache directory, or an empty one, is normal: no caches, every standard level missing."""
    assert caches.read(tmp_path) == []
    write_tree(tmp_path, ["empty"])
    assert caches.read(tmp_path) == [] and caches.level(1, tmp_path) is None
    assert caches.missing(tmp_path) == ["L1d", "L2", "L3"]
    assert caches.last_level(tmp_path) is None


def test_the_first_cpu_that_describes_caches_is_used(host):
    """cpu0 without a cache directory (some VMs describe only part of their CPUs): cpu1's."""
    host("cpu1-only")
    assert [c.name for c in caches.data_caches()] == ["L1d", "L2"]
    assert caches.level(2).size == 256 << 10


def test_the_switch_points_every_reader_at_the_described_host(host):
    """With $PAGELAB_MACHINE set, the doctor, the simulator's defaults and the experiments'
    sizes all see the described host, and say that it is described."""
    tree = host("xeon-480m")
    assert caches.last_level().size == 480 << 20
    assert caches.last_level().sets == 491_520
    report = doctor()
    assert f"described machine {tree}" in report.environment["caches"]
    assert [c["size"] for c in report.to_dict()["caches"]][-1] == 480 << 20
    cfg = default_config()
    assert (cfg.l1.size, cfg.l2.size, cfg.llc.size) == (48 << 10, 2 << 20, 480 << 20)
    assert str(tree) in cfg.llc.origin


INDEX0 = "sys/devices/system/cpu/cpu0/cache/index0"


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda t: None, "no sys/ directory there"),
        (lambda t: (t / INDEX0 / "size").write_text("lots\n"), "size"),
        (lambda t: (t / INDEX0 / "type").write_text("Data2\n"), "type"),
        (lambda t: (t / INDEX0 / "level").unlink(), "lacks its level"),
    ],
    ids=["missing", "bad-size", "bad-type", "no-level"],
)
def test_a_missing_or_malformed_described_tree_is_one_clear_error(
    tmp_path, monkeypatch, pagelab_cmd, spoil, message
):
    """A switch pointing at a missing or malformed tree is BadInput naming it; the CLI prints
    that one line and exits 2, for the doctor and for an experiment alike."""
    if message.startswith("no sys"):
        tree = tmp_path / "nowhere"
    else:
        tree = write_tree(tmp_path / "t", hosts()["zen4-x3d"])
        spoil(tree)
    monkeypatch.setenv(ENV, str(tree))
    with pytest.raises(BadInput, match=message):
        caches.read()
    for verb in (["doctor"], ["run", "cache", "--set", "sets=1"]):
        p = run([*pagelab_cmd, *verb])
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and ENV in lines[0] and message in lines[0], p.stderr


def test_doctor_json_names_the_missing_levels(host, pagelab_cmd):
    """`pagelab doctor --json` on an arm64 server without L3 lists its caches and says L3 is
    not reported; on a host that describes nothing, every level."""
    for name, missing in (("graviton2", ["L3"]), ("empty", ["L1d", "L2", "L3"])):
        host(name)
        p = run([*pagelab_cmd, "doctor", "--json"])
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["caches_missing"] == missing
        assert "described machine" in doc["environment"]["caches"]


def test_a_copy_made_with_tar_reads_the_same(tmp_path):
    """tar pads sysfs files with NULs up to their stated 4 KiB; the reader ignores the padding."""
    tree = write_tree(tmp_path, ["1:d:32K:8:64"])
    for f in (tree / "sys/devices/system/cpu/cpu0/cache/index0").iterdir():
        f.write_bytes(f.read_bytes() + b"\0" * 100)
    assert caches.level(1, tmp_path).to_dict() == {
        "level": 1,
        "type": "Data",
        "size": 32 << 10,
        "ways": 8,
        "line": 64,
        "sets": 64,
    }
