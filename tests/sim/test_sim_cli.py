"""`pagelab sim trace`: both modes, JSON labelling, and one-line exits 2 on bad input."""

import json

import pytest

from helpers import json_document, run

TRACE = "==7== Lackey\nI  400000,4\n L 0,8\n S 40,8\n M 80,4\n L 1000,8\n L 0,8\n"
SMALL = ["--l1", "1K:2:64", "--l2", "none", "--llc", "none", "--tlb", "4:4", "--stlb", "none"]


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "t.trace"
    p.write_text(TRACE)
    return p


def sim_trace(pagelab_cmd, *args):
    return run([*pagelab_cmd, "sim", "trace", *map(str, args)])


def test_multilevel_text_names_geometry_counts_and_source(pagelab_cmd, trace):
    """The human report shows the geometry, a row per level and TLB, and says 'sim'."""
    r = sim_trace(pagelab_cmd, trace, *SMALL)
    assert r.returncode == 0, r.stderr
    assert "L1D   1 KiB, 2-way, 64 B lines (8 sets)" in r.stdout
    assert "DTLB  4 entries, fully associative" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("L1D "))
    assert row.split()[1:4] == ["6", "2", "4"]  # accesses (M counts twice), hits, misses
    assert "source: sim" in r.stdout


def test_json_is_one_document_with_every_count_labelled_sim(pagelab_cmd, trace):
    """--json prints one document; every metric says source 'sim'; geometry is included."""
    r = sim_trace(pagelab_cmd, trace, *SMALL, "--json")
    assert r.returncode == 0, r.stderr
    doc = json_document(r.stdout, "sim_trace")
    assert doc["params"]["config"]["levels"]["L1D"] == {
        "size": 1024,
        "ways": 2,
        "line": 64,
        "sets": 8,
        "origin": "option",
    }
    labels = [m["label"] for m in doc["measurements"]]
    assert labels == ["trace", "L1D", "DTLB"]
    metrics = [v for m in doc["measurements"] for v in m["metrics"].values()]
    assert metrics and all(v["source"] == "sim" for v in metrics)
    l1 = doc["measurements"][1]["metrics"]
    assert (l1["accesses"]["value"], l1["misses"]["value"], l1["compulsory"]["value"]) == (6, 4, 4)


def test_config_file_and_options_combine(pagelab_cmd, trace, tmp_path):
    """--config FILE sets the model; options given on the command line override it."""
    cfg = tmp_path / "sim.json"
    cfg.write_text(
        json.dumps(
            {
                "l1": "256:1:64",
                "l2": None,
                "llc": None,
                "dtlb": None,
                "stlb": None,
                "policy": "fifo",
            }
        )
    )
    r = sim_trace(pagelab_cmd, trace, "--config", cfg, "--l1", "512:2:64", "--json")
    assert r.returncode == 0, r.stderr
    doc = json_document(r.stdout, "sim_trace")
    assert doc["params"]["config"]["policy"] == "fifo"
    assert doc["params"]["config"]["levels"] == {
        "L1D": {"size": 512, "ways": 2, "line": 64, "sets": 4, "origin": "option"}
    }


def test_cachelab_json(pagelab_cmd, trace):
    """Cache-lab mode with --json gives hits/misses/evictions labelled 'sim'.

    -s 1 -E 1 -b 4: blocks 0, 4, 8, 0x100 and 0 all land in set 0, so every access misses
    except M's store; each miss after the first evicts."""
    r = sim_trace(pagelab_cmd, trace, "-s", "1", "-E", "1", "-b", "4", "--json")
    doc = json_document(r.stdout, "cachelab")
    assert {k: v["value"] for k, v in doc["measurements"][0]["metrics"].items()} == {
        "hits": 1,
        "misses": 5,
        "evictions": 4,
    }


@pytest.mark.parametrize(
    "args,message",
    [
        (["missing.trace", "-s", "1", "-E", "1", "-b", "1"], "cannot read trace missing.trace"),
        (["{bad}", "-s", "1", "-E", "1", "-b", "1"], "line 3"),
        (["{bad}", *SMALL], "line 3"),
        (["{trace}", "-s", "1", "-E", "0", "-b", "1"], "-E must be"),
        (["{trace}", "-s", "1", "-E", "1", "-b", "x"], "-b must be an integer"),
        (["{trace}", "-s", "1", "-E", "1"], "all three of -s, -E and -b"),
        (["{trace}", "-s", "1", "-E", "1", "-b", "1", "--l1", "1K:2:64"], "--l1 does not apply"),
        (["{trace}", "-v"], "-v is for cache-lab mode"),
        (["{trace}", "--l1", "48K:7:64"], "do not divide into 7 ways"),
        (["{trace}", "--policy", "mru"], "unknown policy"),
        (["{trace}", "--page", "1g"], "not 4k or 2m"),
        (["{trace}", "--config", "nowhere.json"], "cannot read config"),
        (["{trace}", "--colour"], "unrecognized arguments"),
        ([], "required: file"),
    ],
)
def test_bad_input_exits_2_with_one_line(pagelab_cmd, trace, tmp_path, args, message):
    """Missing or malformed traces, impossible geometry, unknown policy: exit 2, one line."""
    bad = tmp_path / "bad.trace"
    bad.write_text(" L 0,1\n S 4,1\n S 8;1\n")
    args = [a.format(trace=trace, bad=bad) for a in args]
    r = sim_trace(pagelab_cmd, *args)
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and message in r.stderr


def test_existing_verbs_are_still_there(pagelab_cmd):
    """Adding `sim` kept doctor, stat and lab in the command line."""
    r = run([*pagelab_cmd, "--help"])
    assert r.returncode == 0
    for verb in ("doctor", "stat", "sim", "lab"):
        assert verb in r.stdout
