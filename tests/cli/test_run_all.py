"""`pagelab run all`: every experiment with its defaults, in the normal and the blocked profile."""

import pytest

import pagelab
from helpers import json_document, run

SOURCES = {"hw", "sw", "rusage", "sim", "clock"}


def check_document(doc):
    names = [r["experiment"] for r in doc["results"]]
    assert names == pagelab.experiment_names()
    for r in doc["results"]:
        assert r["claims"], r["experiment"]
        for m in r["measurements"]:
            for name, metric in m["metrics"].items():
                assert metric["source"] in SOURCES, (r["experiment"], m["label"], name)
                assert metric["value"] is not None or metric.get("reason"), (m["label"], name)
        for c in r["claims"]:
            assert c["holds"] in (True, False, None)
            assert c["evidence"] if c["holds"] is not None else c["reason"], c


@pytest.mark.slow
@pytest.mark.parametrize("blocked", [False, True], ids=["this-machine", "blocked"])
def test_run_all_covers_every_experiment_with_labelled_results(tools_dir, pagelab_cmd, blocked):
    """run all returns every experiment in table order, each reading labelled, each claim either
    judged with evidence or not evaluated with a reason; blocked, no perf value appears."""
    prefix = [str(tools_dir / "pl-noperf")] if blocked else []
    p = run(prefix + pagelab_cmd + ["run", "all", "--json"], timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json_document(p.stdout, "run_all")
    check_document(doc)
    assert doc["environment"]["profile"] == ("blocked" if blocked else pagelab.doctor().profile)
    if blocked:
        for r in doc["results"]:
            for m in r["measurements"]:
                for name, metric in m["metrics"].items():
                    if metric["source"] in ("hw", "sw"):
                        assert metric["value"] is None, (r["experiment"], m["label"], name)


def test_simulated_runs_made_ahead_are_collected_not_run_again(monkeypatch):
    """run all's first phase: the simulated builds run before any native run, side by side,
    and each experiment then collects its own finished run instead of starting another; an
    experiment whose request changed since runs its simulated build afresh."""
    from pagelab.experiments import runner as _run
    from pagelab.native import worker as _worker

    cache = _run._context(
        "cache", True, None, None, {"size_mb": 1, "sets": 16, "lines": 64, "passes": 2}
    )
    latency = _run._context("latency", True, None, None, {"max_kb": 64, "loads": 1000})
    _run._simulate_ahead([cache, latency], None)
    assert cache.ahead[1].done() and latency.ahead[1].done()

    def no_worker(*args, **kwargs):
        raise AssertionError("another simulated run started")

    monkeypatch.setattr(_worker, "call", no_worker)
    measured, _ = cache.simulated()
    assert any(r.source == "sim" for m in measured for r in m.metrics.values())
    assert cache.ahead is None
    latency.params["loads"] = 2000
    with pytest.raises(AssertionError, match="another simulated run"):
        latency.simulated()
