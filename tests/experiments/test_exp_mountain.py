"""mountain: the stride x size sweep, its auto size, its claims and its figure."""

import pytest

import pagelab
from pagelab.experiments import common, mountain

QUICK = {"min_kb": 16, "max_kb": 256, "max_stride": 4, "loads": 2000, "repeats": 1}


@pytest.fixture(scope="module")
def quick():
    """A small sweep: 5 sizes x 4 strides, a fraction of a second."""
    return pagelab.run("mountain", progress=None, **QUICK)


def test_c_and_python_agree_on_the_points(quick):
    """The C sweep reports exactly sizes() x strides 1..max_stride, each a positive clock value."""
    grid = mountain.surface(quick.measurements)
    want = {(kb, s) for kb in mountain.sizes(16, 256) for s in range(1, 5)}
    assert set(grid) == want
    for m in quick.measurements:
        if m.label != "sweep":
            assert m["mb_per_s"].source == "clock" and m["mb_per_s"].value > 0, m


def test_claims_are_not_judged_without_the_llc(quick):
    """A sweep that stops below 4x the LLC judges nothing and says which size falls short."""
    for c in quick.claims:
        assert c.holds is None, c
        assert "4x" in c.reason or "no cache sizes" in c.reason, c.reason


def _grid(small_mbps, large_dense, large_line):
    g = {(kb, s): 1000.0 for kb in mountain.sizes(16, 1 << 20) for s in range(1, 9)}
    g[16, 8] = small_mbps
    g[1 << 20, 1] = large_dense
    g[1 << 20, 8] = large_line
    return g


CACHES = [("L1d", 32 << 10), ("L2", 1 << 20), ("L3", 32 << 20)]


@pytest.mark.parametrize(
    "small, dense, line, temporal, spatial",
    [
        (40000, 9000, 1500, True, True),
        (2500, 9000, 1500, False, True),
        (40000, 2500, 1500, True, False),
    ],
)
def test_claims_on_made_up_mountains(small, dense, line, temporal, spatial):
    """The claims compare the right corners of the grid against their 2x thresholds."""
    g = _grid(small, dense, line)
    assert mountain._temporal(g, CACHES, 64).holds is temporal
    assert mountain._spatial(g, CACHES, 64).holds is spatial


def test_a_128_byte_line_is_the_stride_the_claims_compare():
    """With 128-byte lines the claims read the grid at a stride of 16 words and say 128 B; a
    sweep whose strides stop at 8 words says it has no such stride."""
    g = {(kb, s): 1000.0 for kb in mountain.sizes(16, 1 << 20) for s in range(1, 17)}
    g[1 << 20, 1], g[1 << 20, 8], g[1 << 20, 16] = 9000.0, 9000.0, 1500.0
    c = mountain._spatial(g, CACHES, 128)
    assert c.holds is True and "stride 128 B (one line) 1,500 MB/s" in c.evidence, c
    short = {k: v for k, v in g.items() if k[1] <= 8}
    assert mountain._spatial(short, CACHES, 128).reason == (
        "the sweep has no stride of 16 words (one 128-byte line)"
    )


def test_claims_need_a_small_set_that_fits_the_l1():
    """A smallest set over half the L1d is not a cache-resident set: no verdict, with the reason."""
    g = {(kb, s): 1000.0 for kb in mountain.sizes(64, 1 << 20) for s in range(1, 9)}
    c = mountain._temporal(g, CACHES, 64)
    assert c.holds is None and "half the L1d (32 KiB)" in c.reason
    assert mountain._temporal(g, [], 64).reason == "this machine reports no cache sizes"


def test_default_run_is_judged_and_plotted():
    """Defaults reach 4x the LLC (where the budget allows): both claims are judged with clock
    evidence, and the figure is a surface whose throughput axis starts at zero."""
    r = pagelab.run("mountain", progress=None, loads=20000, repeats=1)
    caches = common.caches()
    if not caches or r.params["max_kb"] * 1024 < 4 * caches[-1][1]:
        pytest.skip("the budget or sysfs keeps the default sweep below 4x the LLC here")
    for c in r.claims:
        assert c.holds is not None and "(clock" in c.evidence, c
    fig = r.figure()
    assert fig.data[0].type == "surface"
    assert fig.layout.scene.zaxis.range[0] == 0


def test_bad_sweeps_are_bad_input():
    """min_kb over max_kb, or more points than one run holds, fail before anything runs."""
    with pytest.raises(pagelab.BadInput, match="must not exceed"):
        pagelab.run("mountain", min_kb=1024, max_kb=512, progress=None)
    with pytest.raises(pagelab.BadInput, match="at most 1000"):
        pagelab.run("mountain", min_kb=1, max_kb=1 << 22, max_stride=64, progress=None)
