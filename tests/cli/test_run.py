"""`pagelab run`: parameters from the C table, the memory budget, and one-line CLI errors."""

import json

import pytest

import pagelab
from helpers import run
from pagelab.machine import environment as env


def test_experiments_come_from_the_c_table():
    """The experiment list is the C workload table, and every entry has a Python module."""
    names = pagelab.experiment_names()
    assert "first-touch" in names and "vsyscall" in names
    for name in names:
        params = pagelab.parameters(name)
        for p in params.values():
            assert p.min <= p.default <= p.max, (name, p.name)
            assert p.help


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"size_mb": -1}, "size_mb must be in 1..65536 MiB, got -1"),
        ({"size_mb": 10**9}, "size_mb must be in 1..65536 MiB"),
        ({"size_mb": 1.5}, "must be an integer"),
        ({"size_mb": True}, "must be an integer"),
        ({"size_mb": "lots"}, "must be an integer"),
        ({"size": 4}, "no parameter 'size'; did you mean size_mb?"),
        ({"threads": 0}, "threads must be in 1..64"),
    ],
)
def test_bad_parameters_are_refused_before_anything_runs(params, needle):
    """Out-of-range, ill-typed and unknown parameters raise BadInput with one clear line."""
    with pytest.raises(pagelab.BadInput) as info:
        pagelab.run("first-touch", **params)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_unknown_experiment_suggests_the_closest():
    """A misspelt experiment name is refused with a suggestion and the known names."""
    with pytest.raises(pagelab.BadInput, match="did you mean first-touch"):
        pagelab.run("first-tuch")


def test_over_budget_requests_are_refused_with_the_budget():
    """A size above the memory budget raises BudgetExceeded naming the budget; nothing runs."""
    budget = env.memory_budget()["bytes"]
    size_mb = min(budget // (1 << 20) + 1024, 65536)
    if size_mb * (1 << 20) <= budget:
        pytest.skip("this machine's budget exceeds the largest size_mb first-touch accepts")
    with pytest.raises(pagelab.BudgetExceeded, match=r"memory budget is [\d.]+ [KMGT]iB"):
        pagelab.run("first-touch", size_mb=size_mb)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run"], "needs an experiment name"),
        (["run", "nope"], "unknown experiment 'nope'"),
        (["run", "first-touch", "--set", "size_mb"], "--set takes KEY=VALUE"),
        (["run", "first-touch", "--set", "size_mb=1", "--set", "size_mb=2"], "given twice"),
        (["run", "first-touch", "--set", "size_mb=-5"], "size_mb must be in"),
        (["run", "first-touch", "--set", "size_mb=99999999"], "size_mb must be in"),
        (["run", "all", "--set", "size_mb=4"], "run all takes no --set"),
    ],
)
def test_cli_run_bad_input_exits_2_with_one_line(pagelab_cmd, args, needle):
    """Every bad `pagelab run` exits 2 with one stderr line and prints nothing else."""
    p = run(pagelab_cmd + args)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr
    assert p.stdout == ""


def test_cli_run_list_shows_parameters(pagelab_cmd):
    """--list names every experiment and its parameters with ranges and defaults."""
    p = run(pagelab_cmd + ["run", "--list"])
    assert p.returncode == 0
    for name in pagelab.experiment_names():
        assert f"\n{name}\n" in f"\n{p.stdout}"
    assert "size_mb: 1..65536 MiB (default 64)" in p.stdout


def test_cli_run_json_follows_the_contract(pagelab_cmd):
    """run --json prints one document: experiment, version, params, environment, measurements
    with a source on every metric, and claims with holds and evidence."""
    p = run(
        pagelab_cmd + ["run", "first-touch", "--set", "size_mb=8", "--set", "threads=2", "--json"]
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["experiment"] == "first-touch" and doc["version"] == pagelab.__version__
    assert doc["params"] == {"size_mb": 8, "threads": 2, "rounds": 4}
    assert doc["environment"]["profile"] in ("full", "software-only", "blocked")
    for m in doc["measurements"]:
        for name, metric in m["metrics"].items():
            assert metric["source"] in ("hw", "sw", "rusage", "sim", "clock"), (m["label"], name)
    for c in doc["claims"]:
        assert set(c) >= {"id", "text", "holds", "evidence"}


def test_parameters_and_the_simulator_are_decided_once_before_anything_runs(monkeypatch):
    """A run reads the memory budget once, resolves its automatic parameters against that one
    reading, and builds and checks the simulated run's configuration in the parent: a
    configuration the model cannot take is BadInput before any worker starts."""
    from pagelab.experiments import latency
    from pagelab.experiments import runner as _run
    from pagelab.native import worker as _worker

    reads = []
    real = env.memory_budget
    monkeypatch.setattr(env, "memory_budget", lambda *a, **k: reads.append(1) or real(*a, **k))
    ctx = _run._context("latency", True, None, None, {"max_kb": 0})
    assert len(reads) == 1 and ctx.given["max_kb"] == 0 and ctx.params["max_kb"] > 0
    assert ctx.sim["levels"]["L1D"]["size"] > 0 and ctx.sim["classify"] == "l1"

    def no_worker(*args, **kwargs):
        raise AssertionError("a worker started")

    monkeypatch.setattr(_worker, "call", no_worker)
    monkeypatch.setattr(_worker, "Job", no_worker)
    monkeypatch.setattr(latency, "simulation", lambda p: ({"l1": "48K:7:64"}, {}))
    with pytest.raises(pagelab.BadInput, match="768 lines do not divide into 7 ways"):
        pagelab.run("latency", sim=True, max_kb=64, progress=None)
