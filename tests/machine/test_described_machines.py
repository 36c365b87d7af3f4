"""The described-machine matrix (issue 30): pagelab on real machines written as data
(tests/machines/*.yaml, tests/described.py), through $PAGELAB_MACHINE.

On each machine: the doctor, `stat` of cycles, instructions and page faults, `run cache` and
`run first-touch` at small sizes, and a C program through the simulator (`sim c`); the Binder pod
under the real seccomp launcher (pl-noperf). Whatever the machine, nothing raises a traceback and
every reading carries its source, or says why it is missing. Machines with a PMU run on the
emulated PMU (tests/emupmu, $PAGELAB_EMULATED_PMU), so their hardware readings are 'emulated'
and a hybrid machine's thread can be moved between core types for real; the rest run on this
host's kernel. The run's per-machine table is printed at its end (conftest.py)."""

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest
from bench.junit import nbval_outcomes

import pagelab
from described import machines, write_machine
from helpers import MATRIX_TABLE, ROOT, json_document, run
from pagelab.machine.pmus import Pmu

MACHINES = machines()
EMULATOR = "PAGELAB_EMULATED_PMU"
# nbval of chapters 00, 02, 05 and 10 (the ones that count) on two machines: two core PMUs
# (hybrid: per-part readings, core types in the doctor) and denied by the sysctl (Debian's 3:
# every event missing, rusage standing in). The seccomp-blocked path is already run on every
# chapter by test_notebooks.py (pl-noperf); the other machines differ from these two only in
# facts the steps above check, and each nbval run costs a minute or more on 2 cores.
NBVAL_MACHINES = ("alder-lake-laptop", "debian-laptop-p3")
CHAPTERS = ("00", "02", "05", "10")
TINY_C = "int main(void) { static int a[64]; for (int i = 0; i < 64; i++) a[i] += i; return 0; }\n"


def core_pmus(spec):
    """The spec's core PMUs (pagelab's rule: named cpu, or with a cpus file)."""
    return [p for p in spec.get("pmus", []) if p["name"] == "cpu" or "cpus" in p]


def steps(pagelab_cmd, tiny_c):
    return {
        "doctor": [*pagelab_cmd, "doctor", "--json"],
        "stat": [
            *pagelab_cmd,
            "stat",
            "--json",
            "-e",
            "cycles,instructions,page-faults",
            "--",
            "true",
        ],
        "cache": [
            *pagelab_cmd,
            "run",
            "cache",
            "--json",
            "--set",
            "size_mb=4",
            "--set",
            "sets=64",
            "--set",
            "passes=2",
        ],
        "first-touch": [
            *pagelab_cmd,
            "run",
            "first-touch",
            "--json",
            "--set",
            "size_mb=4",
            "--set",
            "threads=2",
            "--set",
            "rounds=2",
        ],
        "sim-c": [*pagelab_cmd, "sim", "c", str(tiny_c), "--json"],
    }


@pytest.fixture(scope="module")
def emulator(request):
    """The emulated PMU's .so (conftest.py's emulated_pmu), or None where it cannot be built."""
    try:
        return request.getfixturevalue("emulated_pmu")
    except pytest.skip.Exception:
        return None


@pytest.fixture(scope="module")
def results(request, tmp_path_factory, pagelab_cmd, tools_dir, emulator):
    """{machine: {step: CompletedProcess}}: every step on every machine, two at a time (each step
    is a short process; what the matrix checks are sources and reasons, never timings)."""
    root = tmp_path_factory.mktemp("machines")
    tiny_c = root / "tiny.c"
    tiny_c.write_text(TINY_C)

    def one(name):
        spec = MACHINES[name]
        env = {**os.environ, "PAGELAB_MACHINE": str(write_machine(root / name, spec))}
        if emulator and core_pmus(spec):
            env[EMULATOR] = str(emulator)
        prefix = [str(tools_dir / "pl-noperf")] if spec.get("blocked") else []
        return {
            s: run([*prefix, *cmd], env=env, timeout=300)
            for s, cmd in steps(pagelab_cmd, tiny_c).items()
        }

    with ThreadPoolExecutor(2) as pool:
        done = dict(zip(MACHINES, pool.map(one, MACHINES)))
    (root / "summary.txt").write_text(table(done))
    # printed after the run by conftest.py's pytest_terminal_summary, -s or not
    request.config.stash[MATRIX_TABLE] = table(done)
    return done


def readings(doc):
    """Every metric of every measurement in a pagelab JSON document."""
    for m in doc.get("measurements", []) + [
        x for r in doc.get("results", []) for x in r.get("measurements", [])
    ]:
        yield from m["metrics"].items()


def cell(p, kind):
    """One table cell: how a step went, in a few words."""
    if p.returncode != 0 or "Traceback" in p.stderr:
        return f"rc {p.returncode}"
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return "not JSON"
    if kind == "doctor":
        return doc.get("profile", "?")
    if kind == "stat":
        m = dict(readings(doc))
        return " ".join(
            f"{k}:{v['source'] if v['value'] is not None else 'missing'}"
            for k, v in m.items()
            if k in ("cycles", "page-faults")
        )
    return "ok"


def table(done):
    kinds = ["doctor", "stat", "cache", "first-touch", "sim-c"]
    rows = [["machine", "core PMUs", "paranoid", *kinds]]
    for name, steps_ in done.items():
        spec = MACHINES[name]
        pmus = "+".join(p["name"] for p in core_pmus(spec)) or "none"
        rows.append(
            [
                name,
                pmus,
                str(spec["paranoid"]) + (" seccomp" if spec.get("blocked") else ""),
                *(cell(steps_[k], k) for k in kinds),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in rows)


def test_the_matrix_holds_the_machines_the_issue_names():
    """At least 14 machines, each saying where its facts come from, among them every kind issue 30
    lists: hybrid Intel (with Meteor Lake's LP E-cores in cpu_atom), Zen 4, Zen 5 + 5c on one PMU,
    Asahi, RK3588, Graviton, paranoid 3 and 4, no PMU, and a seccomp-blocked pod."""
    assert len(MACHINES) >= 14 and all(s["source"].strip() for s in MACHINES.values())
    names = {n: [p["name"] for p in core_pmus(s)] for n, s in MACHINES.items()}
    assert names["meteor-lake-laptop"] == names["alder-lake-laptop"] == ["cpu_core", "cpu_atom"]
    assert names["zen5-laptop"] == ["cpu"] and names["graviton3"] == ["armv8_pmuv3_0"]
    assert set(names["apple-m1-asahi"]) == {"apple_icestorm_pmu", "apple_firestorm_pmu"}
    assert set(names["rk3588-board"]) == {"armv8_cortex_a55", "armv8_cortex_a76"}
    assert (
        MACHINES["debian-laptop-p3"]["paranoid"] == 3
        and MACHINES["ubuntu-desktop-p4"]["paranoid"] == 4
    )
    assert (
        not names["xeon-vm-260m"]
        and not names["ci-runner-nopmu"]
        and MACHINES["binder-pod"]["blocked"]
    )
    assert "18 0 00000000 00000000 00000000 00000000" in MACHINES["xeon-vm-260m"]["cpuid"]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MACHINES))
def test_every_step_runs_on_the_machine(name, results):
    """doctor, stat, run cache, run first-touch and sim c exit 0 with one JSON document and no
    traceback; the doctor's document is valid against pagelab's schema."""
    for step, p in results[name].items():
        assert p.returncode == 0 and "Traceback" not in p.stderr, (name, step, p.stderr[-2000:])
        json.loads(p.stdout)
    doctor = json_document(results[name]["doctor"].stdout, "doctor")
    jsonschema.validate(doctor, pagelab.json_schema())


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MACHINES))
def test_every_reading_says_where_it_came_from_or_why_not(name, results):
    """Each metric of stat, run cache and run first-touch has a source; a missing value has a
    reason. Without the emulator no reading of a hardware event may claim to be 'hw' with a value
    (this host has no PMU), and with it none is ever 'hw', only 'emulated'."""
    for step in ("stat", "cache", "first-touch"):
        doc = json.loads(results[name][step].stdout)
        for metric, r in readings(doc):
            assert r.get("source"), (name, step, metric, r)
            if r["value"] is None:
                assert r.get("reason"), (name, step, metric, r)
            assert not (r["source"] == "hw" and r["value"] is not None), (name, step, metric, r)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MACHINES))
def test_the_doctor_reads_the_described_facts(name, results):
    """The doctor reports the described machine's kernel, CPU, paranoid level and seccomp mode,
    and names each core PMU with its CPUs (on hybrid machines, each core type)."""
    spec, doc = MACHINES[name], json.loads(results[name]["doctor"].stdout)
    text = json.dumps(doc)
    env = doc["environment"]
    assert env["kernel"] == spec["kernel"] and env["perf_event_paranoid"] == spec["paranoid"], env
    if spec.get("blocked"):
        assert env["seccomp"] == "filter" and doc["profile"] == "blocked", env
    for p in core_pmus(spec):
        assert p["name"] in text, (name, p["name"])
        if "cpus" in p:
            assert [p["name"], p["cpus"]] in pmu_cpus(doc), (name, pmu_cpus(doc))


def pmu_cpus(doc):
    """[name, "0-7"] for each core PMU the doctor lists."""
    return [[p["name"], Pmu(p["name"], p["type"], p["cpus"]).describe_cpus()] for p in doc["pmus"]]


# A command that runs on host CPU 0, then moves itself to host CPU 1 (host-cpus maps them to the
# first CPU of each core type) and runs there as long
MIGRATE = (
    "import os\nfor cpu in (0, 1):\n    os.sched_setaffinity(0, {cpu})\n    sum(range(3_000_000))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, s in MACHINES.items() if len(core_pmus(s)) > 1])
def test_a_thread_moved_between_core_types_loses_no_counts(name, tmp_path, pagelab_cmd, emulator):
    """Hybrid machines, emulated PMU: a command that runs on one core type, then the other, has
    cycles counted on both, the total is the sum of the parts, and page faults are the software
    count alone (at Ubuntu's paranoid 4, nothing counts and the reason names the level)."""
    if emulator is None:
        pytest.skip("needs the emulated PMU (tests/emupmu), which needs a C compiler (cc)")
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs host CPUs 0 and 1 to stand for the two core types")
    spec = MACHINES[name]
    env = {**os.environ, "PAGELAB_MACHINE": str(write_machine(tmp_path, spec))}
    env[EMULATOR] = str(emulator)
    cmd = [*pagelab_cmd, "stat", "--json", "-e", "cycles,page-faults", "--"]
    p = run([*cmd, sys.executable, "-c", MIGRATE], env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    got = dict(readings(json.loads(p.stdout)))
    cycles, faults = got["cycles"], got["page-faults"]
    if spec["paranoid"] > 2:  # Debian's and Ubuntu's levels: nothing to move, and it says why
        assert cycles["value"] is None and f"paranoid={spec['paranoid']}" in cycles["reason"]
        return
    assert cycles["source"] == "emulated", cycles
    if spec.get("emulated_pmu") and all("extended-type=no" in x for x in spec["emulated_pmu"]):
        return  # a kernel without the extended type: one part, said in the reading's note
    parts = cycles["parts"]
    assert set(parts) == {p["name"] for p in core_pmus(spec)} and all(parts.values()), cycles
    assert abs(cycles["value"] - sum(parts.values())) <= len(parts), cycles
    assert faults["source"] == "sw" and faults["value"] > 0, faults


@pytest.mark.slow
def test_the_counting_chapters_pass_on_a_hybrid_and_a_denied_machine(tmp_path):
    """Chapters 00, 02, 05 and 10 run top to bottom under nbval on the hybrid laptop and the
    Debian laptop at paranoid 3 (the two at once), every checked cell passing.

    Without the emulated PMU: its counts follow a synthetic rule, so chapter 02's claims about
    real caches are (rightly) not evaluated on them, while the chapters check that they hold."""
    sources = sorted(p for n in CHAPTERS for p in (ROOT / "notebooks").glob(f"{n}-*.ipynb"))
    assert len(sources) == len(CHAPTERS)

    def one(name):
        work, spec = tmp_path / name, MACHINES[name]
        work.mkdir()
        for src in [*sources, ROOT / "notebooks" / "conftest.py"]:
            shutil.copy(src, work)
        (work / "pytest.ini").write_text("[pytest]\n")  # this directory is the run's root
        env = {**os.environ, "PAGELAB_MACHINE": str(write_machine(work / "machine", spec))}
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax"]
        cmd += ["--nbval-current-env", "--junitxml=nbval.xml", *(s.name for s in sources)]
        p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        return name, p, nbval_outcomes(work / "nbval.xml")[0] if p.returncode == 0 else {}

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(one, NBVAL_MACHINES))
    for name, p, outcomes in done:
        assert p.returncode == 0, (name, p.stdout[-3000:])
        assert set(outcomes) == {s.name for s in sources}, name
        for chapter, cells in outcomes.items():
            assert all(o == "passed" for o in cells.values()), (name, chapter, cells)
