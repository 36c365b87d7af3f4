"""Every experiment module follows the one written interface (experiments/protocol.py)."""

import inspect

import pytest

from pagelab.experiments import protocol, runner
from pagelab.native import workloads


def _signature(cls, name):
    return list(inspect.signature(getattr(cls, name)).parameters)[1:]  # less self


@pytest.mark.parametrize("name", runner.experiment_names())
def test_every_experiment_module_follows_the_protocol(name):
    """Each workload's module is an Experiment with the protocol's signatures, simulates when its
    workload has a simulated build, and has nothing the runner would ignore by another name."""
    mod = runner._module(name)
    assert isinstance(mod, protocol.Experiment), name
    assert isinstance(mod.TIMEOUT, (int, float)) and mod.TIMEOUT > 0
    checks = [(protocol.Experiment, ("memory", "run"))]
    if workloads.workload(name).has_sim:
        assert hasattr(mod, "simulation"), f"{name} has a simulated build but no simulation()"
    checks.append((protocol.Simulates, ("simulation",)))
    checks.append((protocol.Resolves, ("resolve",)))
    for cls, names in checks:
        for fn in names:
            if hasattr(mod, fn):
                assert _signature(cls, fn) == list(inspect.signature(getattr(mod, fn)).parameters)
    if hasattr(mod, protocol.ONE_CORE_TYPE):
        assert isinstance(getattr(mod, protocol.ONE_CORE_TYPE), str)


def test_the_protocol_catches_a_module_without_run():
    """A module that lacks run() is not an Experiment."""
    import types

    mod = types.SimpleNamespace(TIMEOUT=1, memory=lambda p: (0, 0))
    assert not isinstance(mod, protocol.Experiment)
