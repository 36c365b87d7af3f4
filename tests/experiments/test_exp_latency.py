"""latency: the pointer chase, its sizes, the knee analysis and the claims."""

import random

import pytest

import pagelab
from helpers import TIMED, run_blocked
from pagelab.experiments import common, latency
from pagelab.machine import caches as _caches
from pagelab.machine import environment as env

QUICK = {"loads": 4000, "repeats": 3}  # fast sweeps where no timing is judged


def l1d():
    return next((size for name, size in common.caches() if name == "L1d"), None)


@pytest.fixture(scope="module")
def default():
    """The chapter's run: default parameters (up to 4x the LLC)."""
    return pagelab.run("latency", progress=None)


def test_c_and_python_agree_on_the_sizes():
    """The labels the C sweep reports are exactly the sizes latency.sizes() computes."""
    for min_kb, max_kb, ppo in ((4, 256, 3), (1, 8, 8), (5, 100, 4)):
        r = pagelab.run(
            "latency", min_kb=min_kb, max_kb=max_kb, points_per_octave=ppo, progress=None, **QUICK
        )
        got = [int(label.split()[0]) for label in r.labels() if label.endswith(" KiB")]
        assert got == latency.sizes(min_kb, max_kb, ppo)
        assert len(set(got)) == len(got)


def test_claims_hold_around_the_l1():
    """Swept from 4 KiB to 8x L1d with chases repeated until the fastest agree: two plateaus and
    the knee within 2x of the L1d size (an L2 hit costs 2.5-4x an L1 hit on any core, well past
    the 1.5x a step needs, and the fastest chases agree within a few percent)."""
    size = l1d()
    if size is None:
        pytest.skip("this machine reports no L1d size in sysfs")
    r = pagelab.run("latency", max_kb=8 * size // 1024, progress=None)
    judged = [c for c in r.claims if c.holds is not None]
    assert {c.id for c in judged} == {"latency-plateaus", "latency-knee-l1d"}
    assert all(c.holds is True for c in judged), judged
    assert f"L1d {size // 1024} KiB: knee at" in r.claim("latency-knee-l1d").evidence
    for c in r.claims:
        assert c.holds is not None or "does not reach" in c.reason or "reports no" in c.reason, c


@pytest.mark.slow
def test_default_run_shows_the_hierarchy(default):
    """Defaults: every claim is judged with evidence (how many plateaus and where the outer knees
    fall depends on the machine: a VM gets a share of the LLC), memory >= 10x slower than L1, a
    knee near L1d, sources."""
    plateaus = default.claim("latency-plateaus")
    assert plateaus.holds is not None and "plateaus: " in plateaus.evidence, plateaus
    knees = {c.id: c for c in default.claims if c.id.startswith("latency-knee-")}
    reported = {f"latency-knee-{name.lower()}" for name, _ in common.caches()}
    assert set(knees) == reported | {"latency-knee-l1d", "latency-knee-l2", "latency-knee-l3"}
    for cid, k in knees.items():
        if cid not in reported:
            assert k.holds is None and "this machine reports no" in k.reason, k
        elif k.holds is None:  # a cache larger than the default sweep reaches
            assert "does not reach" in k.reason and "automatic sweep stops" in k.reason, k
        else:
            assert f"sizes from {_caches.source()}, knees from clock" in k.evidence, k
    points = latency._points(default.measurements)
    assert all(m["ns_per_load"].source == "clock" and m["ns_per_load"].value > 0 for m in points)
    first, last = points[0]["ns_per_load"].value, points[-1]["ns_per_load"].value
    assert last >= 10 * first  # DRAM vs L1: 50-200x on any machine
    _, _, found, _ = latency._analyse(points)
    if l1d():
        assert any(l1d() / 2 <= k["bytes"] <= 2 * l1d() for k in found), found


def test_auto_max_is_four_times_the_largest_cache(default):
    """max_kb=0 resolves to 4x the largest reported cache, within the sweep's cap and the
    budget, shown in params."""
    caches = common.caches()
    largest = caches[-1][1] if caches else common.ASSUMED_LLC
    top = min(4 * largest // 1024, common.SWEEP_CAP_KB, env.memory_budget()["bytes"] // 1024)
    want = latency.sizes(4, top, 4)[: latency.MAX_SIZES][-1]
    assert default.params["max_kb"] == want
    auto = latency.resolve({**default.params, "max_kb": 0}, env.memory_budget())
    assert latency.memory(auto)[0] == want * 1024


def test_huge_pages_and_noise_are_reported(default):
    """The result says how much of the buffer was huge and how often the chase was preempted."""
    notes = " ".join(default.notes)
    assert "involuntary context switches" in notes and "repeated until the fastest few" in notes
    points = latency._points(default.measurements)
    assert all(1 <= m["repeats"].value <= default.params["repeats"] for m in points)
    assert all(m["spread"].value >= 0 for m in points if m["repeats"].value >= 3)
    if env.thp_mode() in ("always", "madvise"):
        assert "of the buffer was in transparent huge pages" in notes


def test_miss_counts_come_from_the_pmu_or_the_simulator_labelled(default):
    """Misses per load are hw where the PMU counts L1D misses, else sim (the default without
    one, or where the PMU has no such event, as Apple's under Asahi), labelled."""
    points = latency._points(default.measurements)
    sources = {m["L1 misses/load"].best_source for m in points}
    counted = all(m["L1-dcache-load-misses"].value is not None for m in points)
    assert sources == ({"hw"} if counted else {"sim"})
    # a chase within L1 never misses it; one over 4x the LLC misses it on (nearly) every load
    assert points[0]["L1 misses/load"].best < 0.01
    assert points[-1]["L1 misses/load"].best > 0.9


# ---- the analysis on made-up curves: it finds real steps and refuses a ramp ----

STAIRS = [(32 << 10, 1.0), (1 << 20, 4.0), (32 << 20, 14.0), (1 << 40, 150.0)]


def curve(fn, noise=0.0, seed=7):
    rnd = random.Random(seed)
    sizes = [kb * 1024 for kb in latency.sizes(4, 128 << 10, 4)]
    return [(s, fn(s) * (1 + rnd.uniform(-noise, noise))) for s in sizes]


def staircase(s):
    """A cache of size C serves a random chase over s > C with probability C/s."""
    t, prev_c, prev_t = None, None, None
    for c, level in STAIRS:
        if t is None and s <= c:
            t = (
                level
                if prev_c is None or s <= prev_c
                else (prev_c / s) * prev_t + (1 - prev_c / s) * level
            )
        prev_c, prev_t = c, level
    return t


@pytest.mark.parametrize("noise", [0.0, 0.05])
def test_analysis_finds_the_knees_of_a_staircase(noise):
    """Knees land within 2x of 32 KiB, 1 MiB and 32 MiB, and L1, L2 and L3 show plateaus, even
    with 5% noise (memory's is still climbing at 4x the LLC in this model)."""
    c = curve(staircase, noise)
    climbs = latency._transitions(c)
    knees = latency._knees(c, climbs)
    for size in (32 << 10, 1 << 20, 32 << 20):
        assert any(size / 2 <= k["bytes"] <= 2 * size for k in knees), (size, knees)
    assert len(latency._plateaus_of(c, climbs)) == 3


@pytest.mark.parametrize("noise", [0.05, 0.10, 0.15])
def test_analysis_is_robust_to_noise(noise):
    """Over 50 noisy staircases (up to 15%, five times the spread the repeated chases reach) the
    knees and the three plateaus are found every time."""
    caches = [("L1d", 32 << 10), ("L2", 1 << 20), ("L3", 32 << 20)]
    for seed in range(50):
        c = latency._despike(curve(staircase, noise, seed))
        climbs = latency._transitions(c)
        knees = latency._knees(c, climbs)
        assert all(k.holds for k in latency._near(knees, caches, c)), (seed, knees)
        assert len(latency._plateaus_of(c, climbs)) == 3, seed


@pytest.mark.parametrize("factor", [3.0, 0.3])
def test_a_lone_outlier_makes_no_step(factor):
    """One size 3x too slow (a preemption) or too fast, anywhere on the curve, changes no claim:
    despiking gives it its neighbours' level."""
    caches = [("L1d", 32 << 10), ("L2", 1 << 20), ("L3", 32 << 20)]
    clean = curve(staircase)
    for i in range(len(clean)):
        c = list(clean)
        c[i] = (c[i][0], c[i][1] * factor)
        c = latency._despike(c)
        climbs = latency._transitions(c)
        levels = latency._plateaus_of(c, climbs)
        assert latency._plateaus(levels, caches, c).holds is True, i
        assert all(k.holds for k in latency._near(latency._knees(c, climbs), caches, c)), i


def test_despiking_keeps_a_rising_curve():
    """A curve that only rises (a staircase, a ramp) is left exactly as it was."""
    for fn in (staircase, lambda s: s**0.3):
        c = curve(fn)
        assert latency._despike(c) == c


def test_a_noisy_ramp_never_holds():
    """A smooth ramp (s^0.3, 1.23x per octave) with 5% noise has no step, in 50 tries."""
    caches = [("L1d", 32 << 10), ("L2", 1 << 20)]
    for seed in range(50):
        c = latency._despike(curve(lambda s: s**0.3, 0.05, seed))
        climbs = latency._transitions(c)
        assert latency._plateaus(latency._plateaus_of(c, climbs), caches, c).holds is False
        knees = latency._knees(c, climbs)
        assert not any(k.holds for k in latency._near(knees, caches, c)), seed


def test_analysis_refuses_a_ramp():
    """Latency rising smoothly (s^0.3) has no climbs, so no knees and one stretch: claims fail."""
    c = curve(lambda s: s**0.3)
    climbs = latency._transitions(c)
    levels = latency._plateaus_of(c, climbs)
    assert climbs == [] and len(levels) <= 1
    caches = [("L1d", 32 << 10), ("L2", 1 << 20)]
    assert latency._plateaus(levels, caches, c).holds is False
    claims = latency._near(latency._knees(c, climbs), caches, c)
    assert [k.holds for k in claims] == [False, False, None]  # this machine reports no L3


def test_claims_are_not_judged_beyond_the_sweep():
    """A sweep that cannot show a second plateau or bracket a cache leaves the claims unjudged,
    and says what kept an automatic sweep short; a level the machine does not report is not
    judged either, and says so."""
    c = curve(staircase)[:8]  # 4-14 KiB: inside L1
    caches = [("L1d", 32 << 10)]
    assert latency._plateaus([], caches, c).holds is None
    assert "does not reach 4x" in latency._plateaus([], caches, c).reason
    l1, l2, l3 = latency._near([], caches, c, limit="an automatic sweep stops at 128 MiB")
    assert (l1.holds, l2.holds, l3.holds) == (None, None, None)
    assert "does not reach" in l1.reason and l1.reason.endswith(
        "an automatic sweep stops at 128 MiB"
    )
    assert (l2.reason, l3.reason) == ("this machine reports no L2", "this machine reports no L3")
    assert [k.id for k in latency._near([], [], c)] == [
        "latency-knee-l1d",
        "latency-knee-l2",
        "latency-knee-l3",
    ]


def test_a_vm_explains_an_early_llc_knee():
    """Under a hypervisor, an LLC knee far below the reported size fails and says why."""
    c = curve(staircase)
    knees = [
        {"bytes": 40 << 10, "ns": 2},
        {"bytes": 1 << 20, "ns": 10},
        {"bytes": 6 << 20, "ns": 80},
    ]
    caches = [("L1d", 32 << 10), ("L2", 1 << 20), ("L3", 32 << 20)]
    l1, l2, l3 = latency._near(knees, caches, c + [(256 << 20, 150.0)], hypervisor=True)
    assert (l1.holds, l2.holds, l3.holds) == (True, True, False)
    assert "shared with the host and other guests" in l3.evidence


# ---- bad input and the blocked profile ----


def test_bad_input_is_one_clear_error():
    """Unknown keys, bad choices, an empty range and too many sizes are refused up front."""
    with pytest.raises(pagelab.BadInput, match="no parameter"):
        pagelab.run("latency", size_kb=4, progress=None)
    with pytest.raises(pagelab.BadInput, match="pages must be one of huge, small"):
        pagelab.run("latency", pages="medium", progress=None)
    with pytest.raises(pagelab.BadInput, match=r"min_kb .* must not exceed max_kb"):
        pagelab.run("latency", min_kb=64, max_kb=32, progress=None)
    with pytest.raises(pagelab.BadInput, match="at most 64 fit one run"):
        pagelab.run("latency", max_kb=1 << 20, points_per_octave=16, progress=None)


def test_over_budget_is_refused_before_running():
    """A sweep larger than the memory budget raises BudgetExceeded and runs nothing."""
    budget = env.memory_budget()["bytes"]
    if budget is None or budget >= 1 << 34:
        pytest.skip(f"the memory budget here ({budget}) admits even the largest sweep")
    with pytest.raises(pagelab.BudgetExceeded):
        pagelab.run("latency", min_kb=1 << 20, max_kb=1 << 24, progress=None)


def test_blocked_profile_still_times_and_judges(tools_dir, pagelab_cmd):
    """Under seccomp the chase is timed by the clock, so the L1 claims are still evaluated: the
    knee holds (see test_claims_hold_around_the_l1 for the margin), and the plateaus' flatness,
    a verdict on timing (helpers.TIMED), is judged with its evidence either way."""
    size = l1d()
    if size is None:
        pytest.skip("this machine reports no L1d size in sysfs")
    doc = run_blocked(tools_dir, pagelab_cmd, "latency", max_kb=8 * size // 1024)
    for m in doc["measurements"]:
        if m["label"].endswith(" KiB"):
            assert m["metrics"]["ns_per_load"]["source"] == "clock"
            assert "seccomp" in m["metrics"]["L1-dcache-load-misses"]["reason"]
            assert m["metrics"]["page-faults"]["fallback"]["source"] == "rusage"
    judged = {c["id"]: c for c in doc["claims"] if c["holds"] is not None}
    assert set(judged) == {"latency-plateaus", "latency-knee-l1d"}, doc["claims"]
    assert judged["latency-knee-l1d"]["holds"] is True, judged
    assert "latency-plateaus" in TIMED and "plateaus: " in judged["latency-plateaus"]["evidence"]
