"""Chapters: every notebook is executed by nbval (or excluded with a reason) and well formed, in
this run's profile (as part of the suite), under the seccomp launcher and as uid nobody."""

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from bench.junit import nbval_outcomes

from helpers import NOBODY, ROOT, run, run_as_nobody

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHECK = "# NBVAL_CHECK_OUTPUT"
NBVAL = ["-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env"]
# The rule for checked cells, the one both the shape test and the probe's count apply: a chapter
# that measures compares at least MACHINE_CHECKS cells whose output depends on the machine.
MACHINE_CHECKS = 3
# Chapters that measure nothing: every number they show is a model's answer to a fixed input.
MODELS_ONLY = {
    "12-simulate-your-own-program.ipynb": "the cache simulator on a program's trace",
    "13-model-page-reclaim.ipynb": "the page-reclaim model on reference strings",
}
TIMEOUT = 900  # one profile's run of every chapter: ~2 minutes here, far longer on a busy machine


def measuring(notebooks):
    """The chapters the rule applies to: those nbval runs that measure something."""
    assert set(MODELS_ONLY) <= {nb.name for nb in NOTEBOOKS}, MODELS_ONLY
    skipped = {*excluded(), *MODELS_ONLY}
    return [nb for nb in notebooks if nb.name not in skipped]


def code_cells(nb):
    return [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]


def checked_cells(nb):
    """nbval's names ("Cell N": N counts code cells) of the chapter's checked cells."""
    return [
        f"Cell {i}" for i, c in enumerate(code_cells(nb)) if "".join(c["source"]).startswith(CHECK)
    ]


def expected_items():
    """Every code cell of every chapter nbval runs, as {chapter file name: {"Cell N", ...}}."""
    skipped = excluded()
    return {
        nb.name: {f"Cell {i}" for i in range(len(code_cells(nb)))}
        for nb in NOTEBOOKS
        if nb.name not in skipped
    }


def excluded():
    spec = importlib.util.spec_from_file_location("nbconf", ROOT / "notebooks" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EXCLUDED


def test_every_chapter_is_tested_or_excluded_with_a_reason():
    """nbval collects every chapter unless it is listed in notebooks/conftest.py with a reason."""
    skipped = excluded()
    assert NOTEBOOKS, "no chapters found"
    for name, reason in skipped.items():
        assert (ROOT / "notebooks" / name).exists(), f"excluded chapter {name} does not exist"
        assert reason.strip(), f"{name} is excluded without a reason"


def test_chapters_follow_the_house_shape():
    """NN-verb-phrase names; first cell a title; what you'll do/learn/need; 'On your own' close;
    a measuring chapter compares at least MACHINE_CHECKS cells, each with a stored output."""
    measures = {nb.name for nb in measuring(NOTEBOOKS)}
    for nb in NOTEBOOKS:
        assert re.fullmatch(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*\.ipynb", nb.name), nb.name
        cells = json.loads(nb.read_text())["cells"]
        first = "".join(cells[0]["source"])
        assert first.startswith("# "), f"{nb.name}: first cell is not a title"
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for phrase in ("What you'll do", "What you'll learn", "What you need", "On your own"):
            assert phrase in text, f"{nb.name}: missing '{phrase}'"
        checked = [
            c
            for c in cells
            if c["cell_type"] == "code" and "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")
        ]
        if nb.name in measures:
            assert len(checked) >= MACHINE_CHECKS, f"{nb.name}: {len(checked)} checked cells"
        for c in checked:
            assert c["outputs"], f"{nb.name}: a checked cell has no stored output to compare"


def test_chapters_use_only_the_public_api():
    """Chapters import pagelab's public API, never private modules or the cffi lib."""
    for nb in NOTEBOOKS:
        src = "\n".join(
            "".join(c["source"])
            for c in json.loads(nb.read_text())["cells"]
            if c["cell_type"] == "code"
        )
        assert not re.search(r"pagelab\._|from pagelab\.\w*_|_native|\blib\.", src), nb.name


def test_nbval_collects_every_cell_of_every_chapter():
    """nbval (as configured for `make test`) collects each chapter's every code cell, checked
    ones included: a missing plugin, option or chapter would make the run pass vacuously."""
    p = run([sys.executable, "-m", "pytest", "--collect-only", "-q", "notebooks"], cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    got = {}
    for line in p.stdout.splitlines():
        if m := re.fullmatch(r"notebooks/(\S+\.ipynb)::(Cell \d+)", line.strip()):
            got.setdefault(m[1], set()).add(m[2])
    assert got == expected_items()
    for nb in NOTEBOOKS:
        assert set(checked_cells(nb)) <= got.get(nb.name, set()), nb.name


def assert_every_cell_passed(report, output):
    outcomes, seconds = nbval_outcomes(report)
    expected = expected_items()
    assert set(outcomes) == set(expected), output
    for chapter, cells in expected.items():
        bad = {c: o for c, o in outcomes[chapter].items() if o != "passed"}
        assert not bad and set(outcomes[chapter]) == cells, (chapter, bad, output)
    print("nbval seconds per chapter:", {c: round(t, 1) for c, t in sorted(seconds.items())})


@pytest.fixture(scope="module")
def blocked_run(tools_dir, tmp_path_factory):
    """nbval over every chapter under the seccomp launcher (the blocked profile), with the
    checked-cell probe (tests/checked_probe.py) loaded into each kernel by an IPython startup
    file: (the finished process, its junit report, the probe's records by kernel)."""
    tmp = tmp_path_factory.mktemp("blocked")
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    probes = tmp / "probes"
    probes.mkdir()
    (startup / "00-checked-probe.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\nimport checked_probe\n"
        f"checked_probe.install(get_ipython(), {str(probes)!r})\n"
    )
    report = tmp / "nbval.xml"
    p = run(
        [str(tools_dir / "pl-noperf"), sys.executable, *NBVAL, f"--junitxml={report}", "notebooks"],
        cwd=ROOT,
        env={**os.environ, "IPYTHONDIR": str(tmp / "ipython")},
        timeout=TIMEOUT,
    )
    records = [
        [json.loads(line) for line in f.read_text().splitlines()] for f in probes.glob("*.jsonl")
    ]
    return p, report, records


@pytest.mark.slow
def test_chapters_pass_under_the_seccomp_launcher(blocked_run):
    """Blocked profile: with perf_event_open denied by seccomp (in the kernels and the workers
    they start), every chapter runs and every checked cell prints what it stores."""
    p, report, _ = blocked_run
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert_every_cell_passed(report, p.stdout[-4000:])


def stored_text(cell):
    """What a code cell printed (and displayed as its value) when it was last run, as text."""
    parts = []
    for o in cell["outputs"]:
        if o["output_type"] == "stream" and o["name"] == "stdout":
            parts.append("".join(o["text"]))
        elif o["output_type"] == "execute_result":
            parts.append("".join(o["data"].get("text/plain", "")) + "\n")
    return "".join(parts)


def machine_checks(nb, records):
    """(checked cells whose output depends on the machine, all checked cells) of a chapter, as
    nbval names them, judged by the probe's records of the kernel that ran it."""
    cells = [(f"Cell {i}", c) for i, c in enumerate(code_cells(nb))]
    checked = [(name, c) for name, c in cells if "".join(c["source"]).startswith(CHECK)]
    sources = ["".join(c["source"]) for _, c in checked]
    mine = next((r for r in records if [x["source"] for x in r] == sources), None)
    assert mine is not None, f"{nb.name}: no kernel probed exactly its checked cells"
    machine = []
    for (name, cell), record in zip(checked, mine):
        control = record["control"]
        # the rerun must reproduce the cell, else a changed output would prove nothing
        if control.strip() == stored_text(cell).strip() and any(
            out != control for out in record["perturbed"].values()
        ):
            machine.append(name)
    return machine, [name for name, _ in checked]


def short_of_machine_checks(records, notebooks):
    """{chapter: what it has} for each chapter with fewer than MACHINE_CHECKS checked cells that
    depend on the machine."""
    short = {}
    for nb in notebooks:
        machine, checked = machine_checks(nb, records)
        if len(machine) < MACHINE_CHECKS:
            rest = ", ".join(c for c in checked if c not in machine) or "none"
            short[nb.name] = f"{len(machine)} depend on the machine (static or a model's: {rest})"
    return short


@pytest.mark.slow
def test_every_measuring_chapter_checks_three_results_of_the_machine(blocked_run):
    """Each chapter that measures has at least three checked cells whose output changes when the
    values the machine gave are perturbed (tests/checked_probe.py): a list of names, a claim's
    text, a constant table or a re-check of a model prints the same whatever the machine did, and
    does not count."""
    _, _, records = blocked_run
    short = short_of_machine_checks(records, measuring(NOTEBOOKS))
    assert not short, short


@pytest.mark.slow
def test_a_chapter_with_two_results_of_the_machine_is_short(blocked_run):
    """The count can fail: ch05 with all but two of its machine-dependent checked cells made to
    print the same under every perturbation is reported short of three."""
    _, _, records = blocked_run
    nb = ROOT / "notebooks" / "05-count-first-touch-faults.ipynb"
    machine, _ = machine_checks(nb, records)
    assert len(machine) >= MACHINE_CHECKS, machine  # else the chapter is short already
    cells = code_cells(nb)
    made_static = {"".join(cells[int(name.split()[1])]["source"]) for name in machine[2:]}
    static = [
        [
            {**x, "perturbed": dict.fromkeys(x["perturbed"], x["control"])}
            if x["source"] in made_static
            else x
            for x in r
        ]
        for r in records
    ]
    assert nb.name in short_of_machine_checks(static, [nb])


@pytest.mark.slow
def test_chapters_pass_as_an_unprivileged_user(nobody_python):
    """Unprivileged profile: as uid nobody (perf_event_paranoid applies, no capabilities, a
    private HOME), every chapter runs and every checked cell prints what it stores."""
    python, home = nobody_python
    chapters = Path(tempfile.mkdtemp(prefix="chapters-", dir=home))
    for f in [*NOTEBOOKS, ROOT / "notebooks" / "conftest.py"]:
        shutil.copy(f, chapters)
    (chapters / "pytest.ini").write_text("[pytest]\n")  # this directory is the run's root
    shutil.chown(chapters, NOBODY, NOBODY)
    report = chapters / "nbval.xml"
    p = run_as_nobody(
        python,
        home,
        [*NBVAL, f"--junitxml={report}", "."],
        cwd=chapters,
        timeout=TIMEOUT,
    )
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert_every_cell_passed(report, p.stdout[-4000:])
