"""The described-host matrix: `pagelab run all` and the cache chapters on the cache topologies of
real machines (tests/hosts/*.yaml), fed to pagelab's one cache reader through
$PAGELAB_MACHINE; and `run all` pinned to one CPU under a 1 GiB RLIMIT_AS.

Whatever the host, every experiment runs and measures, and every claim that is not a verdict on
the timing of this machine's real silicon holds, or is not evaluated and says why."""

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from bench.junit import nbval_outcomes

import pagelab
from described import hosts, size_bytes, write_tree
from helpers import ROOT, TIMED, json_document, run
from pagelab.experiments import common
from pagelab.machine import caches as _caches

HOSTS = hosts()
CHAPTERS = ("02", "03", "06", "11", "12")  # the chapters that read the machine's caches
GIB = 1 << 30
# The host whose L3 (1152 MiB) is larger than the memory budget its RLIMIT_AS leaves (1 GiB)
BUDGET_HOST, BUDGET_RLIMIT = "genoa-x-1g", 2 * GIB


def on_silicon(claim_id):
    """A verdict on timing this machine's real caches, which a described host cannot change."""
    return claim_id in TIMED or claim_id.startswith(("latency-knee-", "mountain-"))


def run_all(env, prefix=()):
    cmd = [*prefix, sys.executable, "-m", "pagelab", "run", "all", "--json"]
    p = run(cmd, env=env, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json_document(p.stdout, "run_all")


@pytest.fixture(scope="module")
def documents(trees):
    """Every described host's run all document (or the exception it raised), two hosts at a
    time: the claims the matrix checks are counts, not timings, so a neighbour cannot move them."""

    def one(name):
        try:
            return run_all(described_env(trees[name]))
        except Exception as e:  # reported by that host's own test
            return e

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(HOSTS, pool.map(one, HOSTS)))


def check(doc, fields, allow_not_run=()):
    """The matrix's promises for one run all document (see the module doc)."""
    assert [r["experiment"] for r in doc["results"]] == pagelab.experiment_names()
    for r in doc["results"]:
        name = r["experiment"]
        if name in allow_not_run and "not_run" in r:
            assert "RLIMIT_AS" in r["not_run"] and not r["measurements"], r
            continue
        assert "not_run" not in r and r["measurements"], name
        for c in r["claims"]:
            if c["holds"] is None:
                assert c["reason"], c
            elif not on_silicon(c["id"]):
                assert c["holds"] is True, (name, c)
    if fields is None:
        return
    by = {r["experiment"]: r for r in doc["results"]}
    data = [f.split(":") for f in fields if f.count(":") == 4 and f.split(":")[1] != "i"]
    sizes = {int(level): size_bytes(size) for level, _, size, _, _ in data}
    lines = {int(level): int(line) for level, _, _, _, line in data}
    # the cache experiment's working sets are an L1D's worth of the machine's own lines (64 B
    # where none is reported), at most the write-up's 512 lines
    l1d, line = sizes.get(1, 32 << 10), lines.get(1, 64)
    assert by["cache"]["params"]["lines"] == min(512, l1d // line)
    # the automatic sweeps stop at the cap however large the caches are
    assert by["latency"]["params"]["max_kb"] <= common.SWEEP_CAP_KB
    assert by["mountain"]["params"]["max_kb"] <= common.SWEEP_CAP_KB
    # a level the host does not report is not evaluated, and says so
    knees = {c["id"]: c for c in by["latency"]["claims"]}
    for level, name in _caches.STANDARD.items():
        if level not in sizes:
            claim = knees[f"latency-knee-{name.lower()}"]
            assert claim["holds"] is None and f"reports no {name}" in claim["reason"]


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Every described host's sysfs tree, written once."""
    root = tmp_path_factory.mktemp("hosts")
    return {name: write_tree(root / name, fields) for name, fields in HOSTS.items()}


def described_env(tree):
    return {**os.environ, "PAGELAB_MACHINE": str(tree)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTS))
def test_run_all_on_a_described_host(name, trees, documents):
    """run all exits 0 on the host: every experiment measures, its claims hold or say why not,
    the working sets and sweeps follow the host's caches, and the results name the host."""
    doc = documents[name]
    if isinstance(doc, Exception):
        raise doc
    assert f"described machine {trees[name]}" in doc["environment"]["caches"]
    check(doc, HOSTS[name])


@pytest.mark.slow
def test_run_all_where_the_llc_is_larger_than_the_memory_budget(trees):
    """An L3 of 1152 MiB under a 2 GiB RLIMIT_AS (a 1 GiB budget): run all still completes, the
    sweeps stay within the budget, and the LLC's claims are not evaluated, saying why."""
    prefix = ["prlimit", f"--as={BUDGET_RLIMIT}", "--"]
    doc = run_all(described_env(trees[BUDGET_HOST]), prefix)
    check(doc, HOSTS[BUDGET_HOST], allow_not_run={"thread-stacks"})
    latency = next(r for r in doc["results"] if r["experiment"] == "latency")
    l3 = next(c for c in latency["claims"] if c["id"] == "latency-knee-l3")
    assert l3["holds"] is None and "does not reach" in l3["reason"], l3


@pytest.mark.slow
def test_run_all_on_one_cpu_under_a_1_gib_rlimit_as():
    """Pinned to one CPU (taskset) with a 1 GiB RLIMIT_AS, run all completes: what cannot fit the
    address space (thread-stacks' 1 GiB window) is reported as not run, with the reason; the
    rest measure and their claims hold or say why not."""
    if not shutil.which("taskset") or not shutil.which("prlimit"):
        pytest.skip("taskset or prlimit (util-linux) is not installed")
    cpu = str(min(os.sched_getaffinity(0)))
    doc = run_all(dict(os.environ), ["taskset", "-c", cpu, "prlimit", f"--as={GIB}", "--"])
    check(doc, None, allow_not_run={"thread-stacks"})
    assert doc["environment"]["cpus"] == 1


def nbval(tree, chapters, report):
    """nbval over the cache chapters with the switch set (a copy, so the run leaves no trace)."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval-lax"]
    cmd += ["--nbval-current-env", f"--junitxml={report}", *map(str, chapters)]
    return subprocess.run(
        cmd,
        cwd=chapters[0].parent,
        env=described_env(tree),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_cache_chapters_pass_on_every_described_host(trees, tmp_path):
    """Chapters 02, 03, 06, 11 and 12 run top to bottom under nbval on every described host, and
    every checked cell prints what it stores: they assume no level, size or geometry. Two hosts
    at a time (the chapters' kernels are single-threaded)."""
    sources = sorted(p for n in CHAPTERS for p in (ROOT / "notebooks").glob(f"{n}-*.ipynb"))
    assert len(sources) == len(CHAPTERS)

    def one(name):
        work = tmp_path / name
        work.mkdir()
        for src in [*sources, ROOT / "notebooks" / "conftest.py"]:
            shutil.copy(src, work)
        (work / "pytest.ini").write_text("[pytest]\n")  # this directory is the run's root
        chapters = [work / s.name for s in sources]
        p = nbval(trees[name], chapters, work / "nbval.xml")
        outcomes, _ = nbval_outcomes(work / "nbval.xml") if p.returncode == 0 else ({}, {})
        return name, p, outcomes

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(one, HOSTS))
    for name, p, outcomes in done:
        assert p.returncode == 0, (name, p.stdout[-3000:])
        assert set(outcomes) == {s.name for s in sources}, name
        for chapter, cells in outcomes.items():
            bad = {c: o for c, o in cells.items() if o != "passed"}
            assert not bad, (name, chapter, bad)


def test_the_matrix_covers_the_hosts_the_issue_names():
    """The described hosts include the huge (480 MiB, 1152 MiB) and non-power-of-two LLCs, no L3,
    no L2, 128-byte lines, a 20-way L2, an empty cache directory and a partly described machine."""
    fields = {name: " ".join(f) for name, f in HOSTS.items()}
    assert "3:u:491520K:16:64" in fields["xeon-480m"]
    assert "3:u:107520K:15:64" in fields["sapphire-rapids"]
    assert int(fields["genoa-x-1g"].split("3:u:")[1].split("K")[0]) << 10 > GIB
    assert "3:" not in fields["graviton2"] and "2:" not in fields["no-l2"]
    assert ":128" in fields["power9-128b"] and "2:u:1280K:20:64" in fields["icelake-sp"]
    assert fields["empty"] == "empty" and fields["cpu1-only"].startswith("cpu1")
