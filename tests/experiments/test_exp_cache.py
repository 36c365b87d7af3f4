"""cache: the write-up's do_mem_access, its claims, the hw-or-sim adapter and the sim-mode build."""

import gc
import subprocess

import pytest

import pagelab
from described import write_tree
from helpers import CFLAGS, ROOT, fd_count, run_blocked
from pagelab.core.reading import Reading
from pagelab.experiments import cache, hw_or_sim
from pagelab.machine import caches as _caches
from pagelab.results.result import Measured

SMALL = {"sets": 256}  # 2M accesses per variant: a few ms


@pytest.fixture(scope="module")
def result():
    return pagelab.run("cache", progress=None, **SMALL)


def pmu_counts(r):
    return r["sequential"]["L1-dcache-loads"].value is not None


def test_measurements_are_labelled_and_plausible(result):
    """Both variants report clock time per access, no page faults in the hot loop, and rusage."""
    assert result.labels() == ["sequential", "random"]
    for m in result.measurements:
        ns = m["ns_per_access"]
        assert ns.source == "clock" and 0.05 < ns.value < 100, ns
        pf = m["page-faults"]
        assert pf.best_source in ("sw", "rusage") and pf.best == 0  # prefaulted before the region
        assert m["minflt"].source == "rusage" and m["minflt"].value == 0
        assert m["utime"].source == "rusage"


def test_simulated_counts_stand_in_labelled(result):
    """Without a PMU the default run simulates: each hw count is None with its reason and carries
    the simulated value as a fallback labelled sim, never as a bare number."""
    if pmu_counts(result):
        pytest.skip("this machine has a PMU: the counts are measured (hw)")
    for m in result.measurements:
        for name in cache.COUNTS:
            r = m[name]
            assert r.value is None and r.source == "hw" and r.reason
            assert r.fallback is not None and r.fallback.source == "sim"
            assert "not available here" in str(r) and "(sim)" in str(r)
        assert m["l1_load_miss_rate"].source == "sim"


def test_claims_hold_from_hw_or_sim(result):
    """By default every claim is judged, from hw where the PMU counts, else from sim."""
    for c in result.claims:
        assert c.holds is True, c
        assert ("(hw)" if pmu_counts(result) else "(sim)") in c.evidence


def test_without_the_simulator_claims_say_why_not():
    """sim=False and no PMU: the claims are not evaluated, and the reason says both halves."""
    r = pagelab.run("cache", sim=False, progress=None, **SMALL)
    if pmu_counts(r):
        pytest.skip("this machine has a PMU: the claims are judged from hw")
    for c in r.claims:
        assert c.holds is None, c
        assert "is not available here" in c.reason and "no simulated variant" in c.reason
    assert all(
        r_.fallback is None
        for m in r.measurements
        for n, r_ in m.metrics.items()
        if n in cache.COUNTS
    )


def test_claims_hold_with_the_simulator():
    """With sim=True the claims are evaluated from hw, else sim, and both hold."""
    r = pagelab.run("cache", sim=True, progress=None, **SMALL)
    for c in r.claims:
        assert c.holds is True, c
        assert "(hw)" in c.evidence or "(sim)" in c.evidence


def test_a_run_leaves_no_descriptor_behind():
    """Running an experiment closes its worker's pipes and selector at once, not at GC."""
    gc.disable()
    try:
        before = fd_count()
        pagelab.run("cache", sets=16, progress=None)
        assert fd_count() == before
    finally:
        gc.enable()


# ---- the adapter point: claims evaluate from sim readings exactly as from hw ones ----


def _model(source_of_counts):
    """Measurements shaped like a real run, counts from a simple model of the write-up's pattern."""
    counts = {"sequential": (7168 * 256, 448 * 256, 0), "random": (7168 * 256, 449 * 256, 1700)}
    measured, sim = [], hw_or_sim.Simulated()
    for label, values in counts.items():
        m = Measured(label)
        for name, v in zip(cache.COUNTS, values):
            if source_of_counts == "hw":
                m.add(Reading(name, v, "hw"))
            else:
                m.add(Reading(name, None, "hw", reason="no PMU: ENOENT"))
                sim.by_label.setdefault(label, {})[name] = Reading(name, v, "sim")
        measured.append(m)
    return measured, sim


@pytest.mark.parametrize("source", ["hw", "sim"])
def test_claim_functions_evaluate_from_either_source(source):
    """The same claim code holds on hw counts and on simulated ones, and names the source."""
    measured, sim = _model(source)
    hw_or_sim.attach(measured, sim, cache.COUNTS)
    for m in measured:
        m.add(
            hw_or_sim.ratio("l1_load_miss_rate", m["L1-dcache-load-misses"], m["L1-dcache-loads"])
        )
    by = {m.label: m for m in measured}
    p = {"passes": 16, "lines": 512, "line": 64}
    for c in (cache._l1_low(by, p, sim), cache._tlb_ratio(by, sim)):
        assert c.holds is True, c
        assert f"({source})" in c.evidence


@pytest.mark.parametrize("source", ["hw", "sim"])
def test_the_access_that_enters_a_page_takes_its_tlb_miss(source):
    """The store claim holds on counts shaped like the walk (sequential: stores, random: mostly
    loads), from either source, and fails on counts where every page is entered by a store."""

    def judged(seq, rnd):
        by, sim = {}, hw_or_sim.Simulated()
        for label, (loads, stores) in (("sequential", seq), ("random", rnd)):
            m = by[label] = Measured(label)
            for name, v in (("dTLB-load-misses", loads), ("dTLB-store-misses", stores)):
                if source == "hw":
                    m.add(Reading(name, v, "hw"))
                else:
                    m.add(Reading(name, None, "hw", reason="no PMU: ENOENT"))
                    sim.by_label.setdefault(label, {})[name] = Reading(name, v, "sim")
        hw_or_sim.attach(by.values(), sim, ("dTLB-load-misses", "dTLB-store-misses"))
        return cache._tlb_entry(by, sim)

    c = judged((0, 8 * 256), (7 * 256, 2 * 256))
    assert c.holds is True and f"({source})" in c.evidence, c
    assert judged((0, 8 * 256), (0, 9 * 256)).holds is False  # write_every=1: all stores


def test_sequential_bases_enter_every_page_with_a_store():
    """Simulated: a 512-line working set spans 8 pages of 4 KiB, and sequential bases take one
    dTLB store miss on each and no load miss; random ones take more load than store misses."""
    r = pagelab.run("cache", sim=True, lines=512, **SMALL, progress=None)
    seq, rnd = r["sequential"], r["random"]
    assert seq["dtlb_store_misses_per_set"].best_source in ("hw", "sim")
    if seq["dtlb_store_misses_per_set"].best_source == "sim":
        assert seq["dtlb_store_misses_per_set"].best == 512 * 64 // 4096
        assert seq["dtlb_misses_per_set"].best == 0
    assert rnd["dtlb_misses_per_set"].best > rnd["dtlb_store_misses_per_set"].best
    assert r.claim("cache-tlb-miss-on-entry").holds is True


def test_hw_is_preferred_and_sources_never_mix():
    """hw wins where it counted; a ratio is never hw over sim; sim sits beside hw for comparison."""
    hw = Reading("L1-dcache-load-misses", 10, "hw")
    loads_missing = Reading("L1-dcache-loads", None, "hw", reason="no PMU: ENOENT")
    m = Measured("x")
    m.add(hw)
    m.add(loads_missing)
    sim = hw_or_sim.Simulated(
        {
            "x": {
                "L1-dcache-load-misses": Reading("L1-dcache-load-misses", 20, "sim"),
                "L1-dcache-loads": Reading("L1-dcache-loads", 100, "sim"),
            }
        }
    )
    hw_or_sim.attach([m], sim, cache.COUNTS)
    assert m["L1-dcache-load-misses"].best == 10 and m["L1-dcache-load-misses (sim)"].value == 20
    assert m["L1-dcache-loads"].best == 100 and m["L1-dcache-loads"].best_source == "sim"
    rate = hw_or_sim.ratio("rate", m["L1-dcache-load-misses"], m["L1-dcache-loads"])
    assert rate.value is None  # 10 (hw) / 100 (sim) would be a mixed ratio
    assert hw_or_sim.same_source(m["L1-dcache-load-misses"], m["L1-dcache-loads"]) is None


# ---- bad input, the blocked profile, the sim-mode build ----


def test_bad_input_is_one_clear_error():
    """Unknown parameters, out-of-range values and a working set larger than the buffer."""
    with pytest.raises(pagelab.BadInput, match="no parameter 'set'"):
        pagelab.run("cache", set=1, progress=None)
    with pytest.raises(pagelab.BadInput, match=r"lines must be in 0\.\."):
        pagelab.run("cache", lines=-1, progress=None)
    with pytest.raises(pagelab.BadInput, match="does not fit the 1 MiB buffer"):
        pagelab.run("cache", size_mb=1, lines=1 << 15, progress=None)


def test_over_budget_is_refused_before_running():
    """A buffer larger than the memory budget raises BudgetExceeded and runs nothing."""
    from pagelab.machine import environment as env

    budget = env.memory_budget()["bytes"]
    if budget is None or budget >= 1 << 36:
        pytest.skip(f"the memory budget here ({budget}) admits even the largest buffer")
    with pytest.raises(pagelab.BudgetExceeded):
        pagelab.run("cache", size_mb=1 << 16, progress=None)


def test_blocked_profile_judges_from_the_simulator(tools_dir, pagelab_cmd):
    """Under seccomp: hw counts unavailable (EACCES) with simulated stand-ins labelled sim; the
    claims are judged from sim; faults fall back to rusage."""
    doc = run_blocked(tools_dir, pagelab_cmd, "cache", sets=256)
    for m in doc["measurements"]:
        l1 = m["metrics"]["L1-dcache-load-misses"]
        assert l1["value"] is None and "seccomp" in l1["reason"]
        assert l1["fallback"]["source"] == "sim"
        assert m["metrics"]["page-faults"]["fallback"]["source"] == "rusage"
        assert m["metrics"]["ns_per_access"]["source"] == "clock"
    for c in doc["claims"]:
        assert c["holds"] is True and "(sim)" in c["evidence"], c


def test_the_simulated_build_is_a_second_compile_of_the_same_source(tmp_path):
    """sim_variants.c compiles cache.c and latency.c again with -DPL_SIM: it defines their _sim
    entry points and no second copy of the table entries."""
    obj = tmp_path / "sim_variants.o"
    src = ROOT / "csrc" / "workloads" / "sim_variants.c"
    p = subprocess.run(
        ["cc", *CFLAGS, f"-I{ROOT / 'csrc' / 'include'}", f"-I{ROOT / 'csrc'}", "-c", str(src)]
        + ["-o", str(obj)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    symbols = subprocess.run(
        ["nm", "-g", "--defined-only", str(obj)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "pl_cache_run_sim" in symbols and "pl_latency_run_sim" in symbols
    assert not any(s.startswith("pl_wl_") for s in symbols)  # the table entries exist once


@pytest.mark.parametrize(
    "l1d, lines, flush_kb", [("24K:6", 384, 25), ("48K:12", 512, 49), (None, 512, 33)]
)
def test_working_sets_are_one_l1d_worth(tmp_path, monkeypatch, l1d, lines, flush_kb):
    """By default a working set is the L1D in its 64-byte lines, at most the write-up's 512 (32 KiB;
    assumed where no L1D is reported), so the L1 claim holds on a 24 KiB L1d too, as the
    simulator models it; the flush before counting is that L1D and 1 KiB more, as the
    write-up's 32 KB + 1 KB."""
    tree = write_tree(tmp_path, [f"1:d:{l1d}:64", "2:u:1024K:8:64"] if l1d else ["empty"])
    monkeypatch.setenv("PAGELAB_MACHINE", str(tree))
    r = pagelab.run("cache", sim=True, sets=64, progress=None)
    assert r.params["lines"] == lines and r.params["flush_kb"] == flush_kb
    claim = r.claim("cache-l1-miss-rate-low")
    assert claim.holds is True, claim
    assert f"working set {lines * 64 // 1024} KiB ({lines} lines of 64 B" in claim.evidence
    assert ("assumed" in claim.evidence) == (l1d is None)


def test_a_128_byte_line_host_walks_and_says_128_byte_strides(tmp_path, monkeypatch):
    """On a described host whose L1D has 128-byte lines the working sets are sized in its lines
    (32 KiB: 256 of them) and walked at a 128-byte stride, the simulated caches have the same
    line, so each working set still misses once per line, and the result says 128 B."""
    tree = write_tree(tmp_path, ["1:d:32K:8:128", "2:u:1024K:8:128"])
    monkeypatch.setenv("PAGELAB_MACHINE", str(tree))
    r = pagelab.run("cache", sim=True, sets=64, progress=None)
    assert r.params["line"] == 128 and r.params["lines"] == 256
    assert any("256 lines of 128 B, the stride between accesses" in n for n in r.notes), r.notes
    claim = r.claim("cache-l1-miss-rate-low")
    assert claim.holds is True, claim
    assert "32 KiB (256 lines of 128 B, the stride)" in claim.evidence
    assert "128-byte lines" in claim.evidence


def test_a_line_that_is_not_a_power_of_two_is_refused():
    """line=96 is one clear BadInput before anything runs."""
    with pytest.raises(pagelab.BadInput, match="line must be a power of two"):
        pagelab.run("cache", line=96, progress=None)


def test_a_run_reads_the_cache_tree_once(monkeypatch):
    """`run cache` sizes its working set, builds the simulator's geometry, judges its claims and
    records its environment from one reading of the machine's cache tree."""
    calls = []
    real = _caches._read
    monkeypatch.setattr(_caches, "_read", lambda root="/": calls.append(root) or real(root))
    pagelab.run("cache", sim=True, sets=1, progress=None)
    assert len(calls) == 1
