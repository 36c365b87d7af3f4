"""`pagelab report DIR`: class results from many machines compared, plotted and exported for
pyperf. Synthetic documents pin the arithmetic; real runs check that real documents load."""

import json
import subprocess
import sys

import jsonschema
import pytest

import pagelab
from helpers import run
from pagelab.experiments.classreport import class_report


def _doc(profile, cpu, vdso_ns, vsys_ns, holds):
    """A `pagelab run all --json` document holding one vsyscall result."""

    def reading(value, unit, source):
        return {"value": value, "unit": unit, "source": source}

    env = {
        "profile": profile,
        "cpu": cpu,
        "cpus": 4,
        "kernel": "6.1.0",
        "vsyscall": "xonly",
        "thp": "madvise",
        "perf_event_paranoid": 2,
    }
    return {
        "version": "0.1.0",
        "environment": env,
        "results": [
            {
                "experiment": "vsyscall",
                "version": "0.1.0",
                "params": {},
                "environment": env,
                "notes": [],
                "measurements": [
                    {
                        "label": "vdso",
                        "metrics": {
                            "ns_per_call": reading(vdso_ns, "ns", "clock"),
                            "faults_per_call": reading(0.0, "", "sw"),
                        },
                    },
                    {
                        "label": "vsyscall",
                        "metrics": {"ns_per_call": reading(vsys_ns, "ns", "clock")},
                    },
                ],
                "claims": [
                    {"id": "vsyscall-much-slower", "text": "t", "holds": True, "evidence": "e1"},
                    {"id": "vsyscall-fault-per-call", "text": "t", "holds": holds}
                    | (
                        {"evidence": "", "reason": "no perf here"}
                        if holds is None
                        else {"evidence": "e2"}
                    ),
                ],
            }
        ],
    }


def test_synthetic_documents_follow_the_json_schema():
    """The documents these tests compare are valid `pagelab run all --json` output."""
    schema = pagelab.json_schema()
    check = jsonschema.Draft202012Validator(
        {"$defs": schema["$defs"], **schema["$defs"]["run_all"]}
    )
    for doc in (_doc("full", "x", 1.0, 2.0, True), _doc("blocked", "y", 1.0, 2.0, None)):
        check.validate(doc)


@pytest.fixture
def classdir(tmp_path):
    d = tmp_path / "class"
    d.mkdir()
    (d / "alice.json").write_text(json.dumps(_doc("full", "Intel Core", 10.0, 1000.0, True)))
    (d / "bob.json").write_text(json.dumps(_doc("blocked", "AMD EPYC", 40.0, 500.0, None)))
    return d


def test_text_report_puts_machines_claims_and_numbers_side_by_side(classdir):
    """One row per machine with its profile and hardware, a claim matrix, and the timed headline
    numbers with unit and source for each machine."""
    text = str(class_report(classdir))
    lines = text.splitlines()
    assert any(l.split()[:3] == ["alice", "full", "Intel"] for l in lines)
    assert any(l.split()[:3] == ["bob", "blocked", "AMD"] for l in lines)
    assert any(l.split() == ["vsyscall-fault-per-call", "holds", "n/e"] for l in lines)
    row = next(l for l in lines if l.startswith("vsyscall") and "vdso" in l)
    assert row.split() == ["vsyscall", "vdso", "ns_per_call", "10", "ns", "(clock)", "40", "ns",
                           "(clock)"]  # fmt: skip
    assert "faults_per_call" not in text  # not a time: in --json only


def test_json_report_carries_every_headline_number_and_the_evidence(classdir):
    """--json keeps each machine's claims whole and every headline metric, timed or not."""
    doc = class_report(classdir).to_dict()
    assert [m["name"] for m in doc["machines"]] == ["alice", "bob"]
    assert doc["claims"]["vsyscall-fault-per-call"]["bob"]["reason"] == "no perf here"
    metrics = {(h["label"], h["metric"]) for h in doc["headline"]}
    assert {("vdso", "ns_per_call"), ("vdso", "faults_per_call")} <= metrics


def test_figure_plots_claims_and_ratios_to_the_class_median(classdir):
    """The heatmap scores holds 1, not evaluated 0.5; the scatter divides by the class median."""
    fig = class_report(classdir).figure()
    heat, alice, bob = fig.data
    assert [list(r) for r in heat.z] == [[1.0, 1.0], [1.0, 0.5]]
    assert alice.name == "alice" and list(alice.y) == pytest.approx([10 / 25, 1000 / 750])
    assert "40 ns (clock)" in bob.hovertext[0]


def test_pyperf_export_compares_across_machines(classdir, tmp_path):
    """The exported files are pyperf's format: `pyperf compare_to` reads them and finds bob's
    vDSO call 4x slower; each file carries its machine's profile."""
    out = tmp_path / "pyperf"
    paths = class_report(classdir).write_pyperf(out)
    assert [p.name for p in paths] == ["alice.json", "bob.json"]
    p = run([sys.executable, "-m", "pyperf", "compare_to", "--table", *map(str, paths)])
    assert p.returncode == 0, p.stderr
    row = next(l for l in p.stdout.splitlines() if "vsyscall/vdso/ns_per_call" in l)
    assert "4.00x slower" in row
    meta = json.loads(paths[1].read_text())["metadata"]
    assert meta["pagelab_profile"] == "blocked" and meta["unit"] == "second"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "is not a directory"),
        ("", "holds no *.json files"),
        ("{not json", "not a JSON file"),
        ('{"version": "1", "results": 3}', "not the output of `pagelab run all --json`"),
        ('{"environment": {}, "results": [{"experiment": "x"}]}', "a result lacks"),
        (
            '{"environment": {}, "results": [{"experiment": "x", "measurements": [], '
            '"claims": [{"id": "c"}]}]}',
            "a result lacks",
        ),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, pagelab_cmd, content, message):
    """A missing directory or a bad file exits 2 with one line naming it; no export is written."""
    d = tmp_path / "class"
    if content is not None:
        d.mkdir()
        if content:
            (d / "carol.json").write_text(content)
    out = tmp_path / "pyperf"
    p = run([*pagelab_cmd, "report", str(d), "--pyperf", str(out)])
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert message in p.stderr and not out.exists()


@pytest.mark.slow
def test_real_runs_from_two_profiles_compare(tmp_path, pagelab_cmd, tools_dir):
    """Real `pagelab run vsyscall --json` documents, one in the blocked profile (seccomp
    launcher), load and line up: same claims on both rows, profiles named."""
    d = tmp_path / "class"
    d.mkdir()
    for name, prefix in (("here", []), ("locked", [str(tools_dir / "pl-noperf")])):
        with open(d / f"{name}.json", "w") as f:
            subprocess.run([*prefix, *pagelab_cmd, "run", "vsyscall", "--json"], stdout=f,
                           check=True, timeout=300)  # fmt: skip
    report = class_report(d)
    here, locked = report.machines
    assert locked.environment["profile"] == "blocked" and here.environment["profile"] != "blocked"
    assert here.claims.keys() == locked.claims.keys() and report.claim_ids()
    p = run([*pagelab_cmd, "report", str(d), "--figure", str(tmp_path / "class.html")])
    assert p.returncode == 0, p.stderr
    assert "locked" in p.stdout and (tmp_path / "class.html").stat().st_size > 0


def test_unwritable_output_is_one_line(classdir, tmp_path, pagelab_cmd):
    """A figure path that cannot be written exits 2 with one line naming it."""
    target = tmp_path / "missing-dir" / "class.html"
    p = run([*pagelab_cmd, "report", str(classdir), "--figure", str(target)])
    assert p.returncode == 2 and p.stderr.strip() == (
        f"pagelab: error: cannot write {target}: No such file or directory"
    )
