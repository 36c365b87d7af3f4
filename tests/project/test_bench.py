"""`python -m bench`: its JSON keys, its pyperf output and the generated docs/performance.md.
No test here checks a figure against a goal: performance targets live in the benchmark only."""

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from bench import run as _bench
from bench import sim_figures as _bench_sim
from bench.junit import nbval_outcomes

from helpers import ROOT, run
from pagelab.experiments import runner as _run
from pagelab.native import worker as _worker
from pagelab.native import workloads as _workloads

KEYS = {
    "import_s",
    "worker_start_s",
    "sim.accesses_per_s.seq8",
    "sim.accesses_per_s.new_line",
    *(f"sim.path.{p}" for p in ("same_line", "seq8", "l1_hit", "l2_hit", "new_line", "tlb_miss")),
    "sim.npot_vs_pot.l1",
    "sim.npot_vs_pot.llc",
    "sim.llc_480m_vs_32m.time",
    "sim.llc_480m_vs_32m.rss",
    "sim.trace_lines_per_s",
    "sim.cachelab_command_s",
    "sim.vs_csimref.speedup",
    "sim.vs_csimref.by_size",
    "sim.vs_cachegrind.speedup",
    "sim.vs_cachegrind.trace_speedup",
    "sim.vs_cachegrind.miss_agreement",
    "sim.cell_vs_cachegrind.speedup",
    "sim.cell_vs_cachegrind.n3000",
    "sim.cell_vs_cachegrind.ceiling",
    "counters.measure_overhead_us",
    "counters.floor_faults",
    "counters.floor_task_clock_us",
    "counters.read_vs_syscall",
    "counters.rdpmc_vs_syscall",
    "fidelity.ratio.cache",
    "fidelity.ratio.first_touch",
    "fidelity.same_code.cache",
    "fidelity.same_code.first_touch",
    "live.rate_hz",
    "live.slowdown",
    "panel.refresh_hz",
    "panel.server_cpu_percent",
    "panel.server_cpu_percent_5_clients",
    "panel.autocount_ms",
}
FULL_KEYS = KEYS | {"run_all_s", "nbval_s.all"}  # only without --fast
SOURCES = {"clock", "rusage", "valgrind", "objdump"}


def _doc():
    """A synthetic bench document: one met, one missed, one unavailable figure."""
    figures = {
        "import_s": _bench._figure(0.02, "s", "import", "cmd a", goal=0.05, higher_is_better=False),
        "sim.accesses_per_s.new_line": _bench._figure(3e7, "accesses/s", "new", "cmd b", goal=1e8),
        "live.rate_hz": _bench._unavailable("Hz", "rate", _bench.FAST_LIVE),
    }
    return {
        "bench": "pagelab",
        "version": "0",
        "fast": True,
        "machine": {
            "python": "3",
            "pagelab": "0",
            "cpus": 2,
            "cpu": "cpu",
            "kernel": "k",
            "profile": "software-only",
            "date": "d",
            "load_1min": [0.25, 1.5],
        },
        "clocks": "child CPU",
        "elapsed_s": 1.0,
        "figures": figures,
        "timings": {"a (s)": [0.1, 0.11, 0.12], "b (s)": [1.0, 1.1]},
    }


def test_goals_are_judged_in_the_right_direction():
    """A lower-is-better figure under its goal is met; a higher-is-better one under it is not;
    an unavailable figure says why and is neither."""
    f = _doc()["figures"]
    assert f["import_s"]["met"] is True and f["import_s"]["better"] == "lower"
    assert f["sim.accesses_per_s.new_line"]["met"] is False
    assert f["live.rate_hz"]["value"] is None and "--fast" in f["live.rate_hz"]["reason"]


def test_pyperf_suite_is_read_by_compare_to(tmp_path):
    """The raw timings are a pyperf suite that `python -m pyperf compare_to` reads."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    _bench.pyperf_suite(_doc()).dump(str(old))
    doc = _doc()
    doc["timings"]["a (s)"] = [0.2, 0.21, 0.22]
    _bench.pyperf_suite(doc).dump(str(new))
    r = run([sys.executable, "-m", "pyperf", "compare_to", str(old), str(new)])
    assert r.returncode == 0, r.stderr
    assert "a (s)" in r.stdout and "slower" in r.stdout


def test_pyperf_suite_uses_pyperfs_metadata_names(tmp_path):
    """The suite's machine facts use pyperf's own names and types (cpu_model_name, cpu_count an
    int, load_avg_1min a float: the load when the run began), which `pyperf metadata` shows
    with its labels; pagelab's own facts keep a pagelab_ prefix."""
    path = tmp_path / "suite.json"
    _bench.pyperf_suite(_doc()).dump(str(path))
    suite = json.loads(path.read_text())
    meta = suite["metadata"]
    assert meta == {
        "cpu_count": 2,
        "cpu_model_name": "cpu",
        "date": "d",
        "load_avg_1min": 0.25,
        "pagelab_profile": "software-only",
        "pagelab_version": "0",
        "platform": "Linux-k",
        "python_version": "3",
        "unit": "second",
    }
    assert not [k for k in meta if k.startswith("machine_")]
    r = run([sys.executable, "-m", "pyperf", "metadata", str(path)])
    assert r.returncode == 0, r.stderr
    assert "cpu_count: 2" in r.stdout and "load_avg_1min: 0.25" in r.stdout


def _performance_md():
    spec = importlib.util.spec_from_file_location(
        "performance_md", ROOT / "bench/performance_md.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_performance_md_lists_every_figure_and_explains_misses():
    """The generated page has a row per figure with its command, marks misses and says what
    limits them, and gives unavailable figures their reason."""
    md = _performance_md().markdown(_doc())
    for key in _doc()["figures"]:
        assert f"| `{key}` |" in md
    assert "`cmd a`" in md and "<= 0.05 met" in md and ">= 1e+08 **missed**" in md
    assert "- `sim.accesses_per_s.new_line`: 3e+07 accesses/s" in md and "pl_sim_access_slow" in md
    assert "unavailable: --fast skips" in md
    assert "csim-ref" in md and "What the fidelity ratios mean" in md


@pytest.mark.slow
def test_standalone_harness_runs_the_workload_the_worker_runs(tmp_path):
    """fidelity.ratio's standalone side: the harness built from csrc/ runs a workload of the C
    table with given parameters and reports the same timed regions as the worker does."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc) here")
    b = _bench._Bench(True, lambda msg: None)
    b.tmp = tmp_path
    exe, why = b.harness()
    assert exe is not None, why
    p = _workloads.validate("cache", {"size_mb": 1, "sets": 16, "lines": 64, "passes": 2})
    r = run([str(exe), "cache", *map(str, p.values())])
    assert r.returncode == 0, r.stderr
    standalone = {line.split("\t")[0]: line.split("\t")[1:] for line in r.stdout.splitlines()}
    raw = _worker.call(_run.WORKLOAD, {"name": "cache", "params": p, "events": None})
    assert list(standalone) == [region["label"] for region in raw["regions"]]
    assert all(float(wall) > 0 and float(cpu) >= 0 for wall, cpu in standalone.values())
    bad = run([str(exe), "cache", "1"])  # a parameter short: usage, no run
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_same_code_tells_two_builds_of_a_function_apart(tmp_path):
    """The disassembly compare behind fidelity.same_code: the same source and flags give the
    same instructions (at other addresses), other optimisation gives other ones, and a static
    name two files share is matched by its own file's neighbours."""
    if not (shutil.which("cc") and shutil.which("objdump")):
        pytest.skip("no C compiler (cc) or objdump here")
    src = {
        "a.c": "static int run(int *p, int n) { int s = 0; for (int i = 0; i < n; i++) "
        "s += p[i] * i; return s; }\nint top(int *p, int n) { return run(p, n) + 1; }\n",
        "other.c": "static int run(int x) { return x * 3; }\nint side(int x) { return run(x); }\n",
        "main.c": "int top(int *, int); int side(int);\nint main(void) { return side(2); }\n",
    }
    for name, text in src.items():
        (tmp_path / name).write_text(text)

    def build(exe, order, *flags):
        obj = ["cc", *flags, "-fno-inline", "-c", str(tmp_path / "a.c")]
        subprocess.run(obj, cwd=tmp_path, check=True)
        files = [str(tmp_path / f) for f in order]
        subprocess.run(["cc", *flags, "-fno-inline", *files, "-o", str(tmp_path / exe)], check=True)
        return _bench._bodies(_bench._functions(tmp_path / exe), _bench._layout(tmp_path / "a.o"))

    first = build("x", ("main.c", "other.c", "a.c"), "-O2")
    again = build("y", ("a.c", "main.c", "other.c"), "-O2")  # other addresses, same code
    assert first == again and set(first) == {"run", "top"}
    assert any(i.startswith("imul") for i in first["run"])  # a.c's run, not other.c's
    assert build("z", ("main.c", "other.c", "a.c"), "-O0") != first


def test_nbval_outcomes_reads_cells_and_chapter_times(tmp_path):
    """The junit reader the chapter tests and the bench share: per chapter, each cell's outcome
    and the sum of its cells' seconds."""
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="notebooks.01-read-a-memory-map.ipynb" name="Cell 0" time="1.5"/>'
        '<testcase classname="notebooks.01-read-a-memory-map.ipynb" name="Cell 1" time="0.5">'
        '<failure message="x"/></testcase>'
        '<testcase classname="notebooks.02-measure-cache-misses.ipynb" name="Cell 0" time="2"/>'
        "</testsuite></testsuites>"
    )
    outcomes, seconds = nbval_outcomes(report)
    assert outcomes == {
        "01-read-a-memory-map.ipynb": {"Cell 0": "passed", "Cell 1": "failure"},
        "02-measure-cache-misses.ipynb": {"Cell 0": "passed"},
    }
    assert seconds == {"01-read-a-memory-map.ipynb": 2.0, "02-measure-cache-misses.ipynb": 2.0}


def test_live_figures_are_the_bench_files_figures():
    """Every live/panel key of `python -m bench` names a function of bench/bench_live.py with a
    docstring (the figure's meaning), and that file has no figure the bench leaves out."""
    spec = importlib.util.spec_from_file_location("bench_live", ROOT / "bench/bench_live.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.FIGURES) == set(_bench.LIVE)
    assert all(fn.__doc__.strip() for fn in module.FIGURES.values())


@pytest.mark.slow
def test_bench_fast_json_reports_every_key():
    """`python -m bench --fast --json` prints one document with every issue-12 key, each a number
    or null with a reason, and the machine it ran on."""
    r = subprocess.run(
        [sys.executable, "-m", "bench", "--fast", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc["figures"]) >= KEYS
    for key, f in doc["figures"].items():
        assert isinstance(f["value"], (int, float)) or f["reason"], key
        assert f["command"] and f["source"] in SOURCES, key
    assert doc["machine"]["cpus"] >= 1 and doc["timings"]
    if not _bench_sim._csimref_path():
        assert "PAGELAB_CSIM_REF" in doc["figures"]["sim.vs_csimref.speedup"]["reason"]
    for key in _bench.LIVE:
        assert doc["figures"][key]["reason"] == _bench.FAST_LIVE, key
    for key in ("fidelity.ratio.cache", "fidelity.ratio.first_touch"):
        f = doc["figures"][key]
        if f["value"] is not None:  # a ratio of two positive times, each a median of pairs
            assert f["value"] > 0 and f["worker_s"] > 0 and f["standalone_s"] > 0, key
    ceiling = doc["figures"]["sim.cell_vs_cachegrind.ceiling"]
    if shutil.which("valgrind"):  # three builds of bench/transpose.c, each timed
        assert ceiling["value"] > 0 and ceiling["cachegrind_s"] > 0, ceiling
        assert ceiling["instrumented_s"] > 0 and ceiling["uninstrumented_s"] > 0, ceiling
    else:
        assert "valgrind" in ceiling["reason"]
