"""The experiment interface, written once: what runner.py asks of the module of each workload in
the C table (pagelab.experiments.<name>, dashes as underscores).
tests/experiments/test_experiments_protocol.py holds every experiment module to it."""

from typing import Protocol, runtime_checkable


@runtime_checkable
class Experiment(Protocol):
    """An experiment module. Every one has these; runner.py calls them in this order."""

    TIMEOUT: float  # seconds one worker may take, unless the caller gives a timeout

    def memory(self, p: dict) -> tuple[int, int]:
        """(resident bytes, address-space bytes) a run with the resolved parameters ``p`` needs,
        checked against the memory budget before anything runs (BadInput for what cannot fit)."""

    def run(self, ctx) -> object:
        """Run the workload through ``ctx`` (runner.Context) and return its Result (its
        figure given to ``ctx.result``)."""


class Resolves(Protocol):
    """Optional: an experiment whose automatic (0) parameters depend on the machine."""

    def resolve(self, p: dict, budget: dict) -> dict:
        """``p`` with its automatic values decided, from one reading of the memory budget."""


class Simulates(Protocol):
    """Required of an experiment whose workload has a simulated build (has_sim)."""

    def simulation(self, p: dict) -> tuple[dict, dict]:
        """(the simulator configuration's overrides of this machine's, the parameter overrides)
        of the simulated run."""


# Optional, a str: why the claims need one kind of core, on a machine with several core types.
ONE_CORE_TYPE = "ONE_CORE_TYPE"
