"""The checked-cell probe (tests/checked_probe.py) perturbs what the machine gave and leaves a
model's answer alone, so that a re-check of a model never counts as depending on the machine."""

import pagelab
from checked_probe import Perturber, is_model


def test_measured_readings_change_and_simulated_ones_stay():
    """A reading from rusage is zeroed; a simulated one, and one whose value is a labelled
    simulated fallback, stay as they are."""
    measured = pagelab.Reading("minflt", 4096, "rusage")
    simulated = pagelab.Reading("L1-dcache-load-misses", 512, "sim")
    stand_in = pagelab.Reading("dTLB-load-misses", None, "hw", reason="no PMU", fallback=simulated)
    p = Perturber("zero")
    assert p.value(measured).value == 0
    assert p.value(simulated) is simulated
    assert p.value(stand_in) is stand_in


def test_claims_on_simulated_evidence_stay_and_others_flip():
    """A claim whose evidence cites only sim is a model's and keeps its verdict; one citing the
    clock (or sim and rusage together) is the machine's and flips."""
    model = pagelab.Claim("a", "text", True, "512 misses (sim)")
    timed = pagelab.Claim("b", "text", True, "16 KiB: 47,004 MB/s (clock; cache sizes from sysfs)")
    mixed = pagelab.Claim("c", "text", True, "2 (sim) vs 4,096 (rusage)")
    p = Perturber("scramble")
    assert is_model(model) and p.value(model).holds is True
    assert not is_model(timed) and p.value(timed).holds is False
    assert not is_model(mixed) and p.value(mixed).holds is False


def test_a_models_result_stays():
    """What the page-reclaim model returns is a model's answer, whatever the perturbation."""
    result = pagelab.reclaim([1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5], 3, "fifo")
    assert is_model(result)
    for mode in ("zero", "large", "scramble"):
        assert Perturber(mode).value(result) is result
