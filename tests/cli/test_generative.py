"""Generated bad (and good) input for every CLI verb and public function, with Hypothesis.

The property: the CLI exits 0 with a right answer, or 1 or 2 with one line on stderr; a function
returns a right answer or raises BadInput, PagelabError, ValueError or TypeError with one line.
Never a traceback, a hang, or a silently wrong answer. Runs are derandomised (a fixed seed, no
example database) and bounded, so the suite is the same on every run. `pagelab lab` is left out
(it execs JupyterLab with whatever it is given), and `bench` gets only arguments it must refuse
(a valid one runs the benchmark suite).
"""

import contextlib
import json
import math
import re
import signal
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import pagelab
from helpers import csim_reference, json_document
from pagelab._native import lib
from pagelab.cli import main as _cli
from pagelab.counters.events import NAMED
from pagelab.native import workloads as _workloads

# One profile for every test here: fixed seed, no database, no per-example deadline (the
# machine is shared); the whole module stays well under two minutes.
GEN = dict(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
HANG = 60  # seconds any one example may take before it counts as a hang
EXPERIMENTS = pagelab.experiment_names()
# pagelab's own errors (BadInput is also a ValueError), and ProcessLookupError for a pid that
# names no process, as os.kill reports it; a bare ValueError or TypeError would be a bug's
OK_ERRORS = (pagelab.PagelabError, ProcessLookupError)


class Hang(BaseException):
    """An example ran past HANG seconds (BaseException: no handler under test may catch it)."""


@contextlib.contextmanager
def no_hang():
    def alarm(*_):
        raise Hang(f"no answer within {HANG} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def cli(argv, tmp, child_status=None):
    """Run the real CLI in this process: (exit status, stdout, stderr lines without progress).
    Checks the shape of every outcome: 0, or 1/2 with exactly one `pagelab:` line; for `stat`
    of a command that exits with ``child_status``, that status."""
    out_path, err_path = tmp / "out", tmp / "err"
    with (
        open(out_path, "w+") as out,
        open(err_path, "w+") as err,
        no_hang(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = _cli.main([str(a) for a in argv])
    event(f"exit {code}")
    stdout = out_path.read_text()
    lines = [l for l in err_path.read_text().splitlines() if not l.lstrip().startswith("... ")]
    assert "Traceback" not in "\n".join(lines)
    if child_status is not None and code == child_status:
        return code, stdout, lines
    assert code in (0, 1, 2), (argv, code, lines)
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("pagelab: error: "), lines
        assert stdout == ""
    elif code == 1:
        assert len(lines) == 1 and lines[0].startswith("pagelab: "), lines
    return code, stdout, lines


def api(fn, *args, **kwargs):
    """Call a public function: (True, result) or (False, the one-line error)."""
    try:
        with no_hang():
            result = fn(*args, **kwargs)
        event("returned")
        return True, result
    except OK_ERRORS as e:
        event(f"raised {type(e).__name__}")
        text = str(e)
        assert text and "\n" not in text, (type(e), text)
        return False, text


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("generative")


# ---- strategies --------------------------------------------------------------------------

DIGITS = "0123456789"
TRICKY = "²³¹①٣৩߂𝟙+-_ .,eExX\t"
numbers = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.integers(0, 2**64).map(hex),
    st.text(alphabet=DIGITS + TRICKY, min_size=0, max_size=24),
    st.integers(19, 6000).map(lambda n: "9" * n),  # past int64, and past int's string limit
)
UNITS = ["", "K", "k", "M", "MiB", "G", "g", "T", "KB", "kib", "iB", "X", " K", "KK"]
sizes = st.one_of(
    numbers,
    st.builds(lambda n, u: f"{n}{u}", st.integers(-5, 2**40), st.sampled_from(UNITS)),
)
names = st.sampled_from(sorted(NAMED))
event_spec = st.one_of(
    names,
    st.builds(lambda n: f"r{n:x}", st.integers(0, 2**70)),
    st.builds(lambda t, c: f"{t}:{c}", st.integers(0, 2**40), st.integers(0, 2**70)),
    st.builds(lambda t, c: f"{t}:{c:#x}", st.integers(0, 2**33), st.integers(0, 2**66)),
    st.builds(lambda t, c: f"{t}:{c:x}", st.integers(0, 2**33), st.integers(0, 2**66)),
    st.builds(lambda t, c: f"{t}:{c}", numbers, numbers),
    st.text(alphabet=string.ascii_letters + DIGITS + "-:_ ²①", max_size=20),
)
event_specs = st.lists(event_spec, min_size=0, max_size=8).map(",".join)
geometry = st.one_of(
    st.just("none"),
    st.builds(
        lambda s, w, l: f"{s}:{w}:{l}",
        st.sampled_from(["1K", "4K", "32K", "48K", "1M", "3M", "64"]) | sizes,
        st.integers(0, 40).map(str) | numbers,
        st.sampled_from(["16", "32", "64", "128"]) | sizes,
    ),
    st.lists(sizes, min_size=0, max_size=5).map(":".join),
)
tlb_geometry = st.one_of(
    st.just("none"),
    st.builds(lambda e, w: f"{e}:{w}", st.integers(0, 5000), st.integers(0, 40)),
    st.lists(numbers, min_size=0, max_size=4).map(":".join),
)
OPS = "LSM"
record = st.builds(
    lambda op, addr, size: (op, addr, size),
    st.sampled_from("ILSM"),
    st.integers(0, 2**64 - 1),
    st.integers(1, lib.PL_SIM_MAX_ACCESS),  # what a lackey record holds (the sim tests probe it)
)


def record_line(r):
    op, addr, size = r
    return f"I  {addr:08x},{size}" if op == "I" else f" {op} {addr:08x},{size}"


BAD_LINES = [
    " X 10,4",  # no such operation
    " L zz,4",  # not hex
    " L 10,0",  # size 0
    " L 10",  # no size
    " L 10,",  # empty size
    " L ,4",  # no address
    " L 10,4x",  # junk after the size
    "garbage",
    " L 1" + "0" * 17 + ",4",  # more than 64 bits of address
    f" S 10,{lib.PL_SIM_MAX_ACCESS + 1}",  # more than a lackey record holds
]
config_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
CONFIG_KEYS = ["l1", "l2", "llc", "dtlb", "tlb", "stlb", "page", "policy", "seed", "classify", "x"]
config_doc = st.one_of(
    st.dictionaries(
        st.sampled_from(CONFIG_KEYS),
        st.one_of(
            geometry, tlb_geometry, config_value, st.sampled_from(["4k", "2m", "lru", "plru"])
        ),
        max_size=6,
    ),
    config_value,
)
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=8),
    st.lists(st.integers() | st.text(max_size=4), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
)


# ---- run --------------------------------------------------------------------------------


@settings(max_examples=500, **GEN)
@given(data=st.data())
def test_run_parameters(tmp, data):
    """`run EXP --set KEY=VALUE`: bad values exit 2 in one line; good ones validate exactly."""
    exp = data.draw(st.sampled_from(EXPERIMENTS), "experiment")
    params = _workloads.workload(exp).params
    key = data.draw(st.sampled_from([*params, "nosuch", "", "size mb"]), "key")
    value = data.draw(numbers | st.sampled_from(["huge", "small", "malloc", " 4 "]), "value")
    try:
        checked = _workloads.validate(exp, {key: value})
    except pagelab.BadInput:
        code, _, lines = cli(["run", exp, "--set", f"{key}={value}"], tmp)
        assert code == 2 and (exp in lines[0] or "--set" in lines[0])
        return
    # accepted: the value is exactly what was written, and in range (running is tested elsewhere)
    p = params[key]
    got = checked[key]
    assert p.min <= got <= p.max
    if p.choices and value.strip() in p.choices:
        assert p.choices[got] == value.strip()
    else:
        assert got == int(value.strip(), 10)


@settings(max_examples=150, **GEN)
@given(
    argv=st.lists(
        st.sampled_from(
            [
                "--set",
                "--sim",
                "--json",
                "--list",
                "all",
                "x=1",
                "-x",
                "nosuch",
                "cache=1",
                "--",
                "run",
            ]
        ),
        max_size=5,
    )
)
def test_run_argument_shapes(tmp, argv):
    """Any arrangement of run's options, without a runnable experiment, is 0 (a listing) or 2."""
    if "all" in argv and "--list" not in argv:
        argv = [a for a in argv if a != "all"]  # `run all` would run every experiment
    code, out, _ = cli(["run", *argv], tmp)
    assert code in (0, 2)
    if code == 0:
        assert out.splitlines()[0] in EXPERIMENTS


# ---- stat -------------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=250, **GEN)
@given(spec=event_specs)
def test_stat_events(tmp, spec):
    """`stat -e SPEC -- true`: parsed events are counted (or said unavailable), others exit 2."""
    ok, parsed = api(pagelab.events, spec)
    code, out, lines = cli(["stat", "--json", f"--events={spec}", "--", "true"], tmp)
    if not ok:
        assert code == 2 and lines[0] == f"pagelab: error: {parsed}"
        return
    assert code == 0
    doc = json_document(out, "stat")
    assert doc["params"]["events"] == [e.name for e in parsed]
    metrics = doc["measurements"][0]["metrics"]
    for e in parsed:
        m = metrics[e.name]
        assert (m["value"] is None) == ("reason" in m)


@pytest.mark.slow
@settings(max_examples=100, **GEN)
@given(
    status=st.integers(0, 255),
    args=st.lists(st.text(max_size=6), max_size=3),
    missing=st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6),
)
def test_stat_commands(tmp, status, args, missing):
    """stat reports the command's own status, refuses NULs and unknown commands in one line."""
    command = ["sh", "-c", f"exit {status}", "sh", *args]
    code, out, lines = cli(["stat", "--json", "--", *command], tmp, child_status=status)
    if any("\0" in a for a in args):
        assert code == 2 and "NUL" in lines[0]
    else:
        assert code == status and json_document(out, "stat")["exit_status"] == status
    code, _, lines = cli(["stat", "--", f"pagelab-no-such-{missing}"], tmp)
    assert code == 2 and "command not found" in lines[0]


# ---- sim trace ----------------------------------------------------------------------------


def plain(text):
    """The int a plain decimal string (ASCII digits, an optional sign, blanks around) spells."""
    m = re.fullmatch(r"\s*([+-]?[0-9]{1,20})\s*", text, re.ASCII)
    return int(m[1]) if m else None


@settings(max_examples=300, **GEN)
@given(
    records=st.lists(record, max_size=60),
    s=st.integers(0, 6).map(str) | numbers,
    E=st.integers(1, 4).map(str) | numbers,
    b=st.integers(0, 8).map(str) | numbers,
)
def test_sim_trace_cachelab(tmp, records, s, E, b):
    """Cache-lab mode gives csim-ref's counts for any trace, or refuses -s/-E/-b in one line."""
    trace = tmp / "cachelab.trace"
    trace.write_text("".join(record_line(r) + "\n" for r in records))
    code, out, _ = cli(["sim", "trace", trace, "-s", s, "-E", E, "-b", b], tmp)
    sv, Ev, bv = (plain(v) for v in (s, E, b))
    valid = None not in (sv, Ev, bv) and sv >= 0 and Ev >= 1 and bv >= 0
    valid = valid and sv <= 30 and bv <= 30 and Ev <= lib.PL_SIM_MAX_WAYS
    valid = valid and (Ev << sv) <= lib.PL_SIM_MAX_LINES
    if not valid:
        assert code == 2, (s, E, b, out)
        return
    assert code == 0
    h, m, e = csim_reference(records, sv, Ev, bv)
    assert out.strip().splitlines()[-1] == f"hits:{h} misses:{m} evictions:{e}"


@settings(max_examples=300, **GEN)
@given(
    l1=geometry | st.none(),
    l2=geometry | st.none(),
    tlb=tlb_geometry | st.none(),
    page=st.sampled_from(["4k", "2m", "2M", "1g", "0", "4096"]) | st.none(),
    policy=st.sampled_from(["lru", "fifo", "random", "plru", "LRU", "mru", ""]) | st.none(),
    seed=numbers | st.none(),
)
def test_sim_trace_model_options(tmp, l1, l2, tlb, page, policy, seed):
    """Model options: a consistent hierarchy simulates (hits + misses = accesses), else exit 2."""
    trace = tmp / "model.trace"
    trace.write_text(" L 1000,4\n S 2040,8\n M 1000,4\n L 7fff0000,64\n")
    argv = ["sim", "trace", trace, "--json", "--llc", "none", "--stlb", "none"]
    for flag, value in (("--l1", l1), ("--l2", l2), ("--tlb", tlb), ("--page", page)):
        if value is not None:
            argv += [flag, value]
    if policy is not None:
        argv += ["--policy", policy]
    if seed is not None:
        argv += ["--seed", seed]
    code, out, _ = cli(argv, tmp)
    assert code in (0, 2)
    if code == 0:
        check_stats(json_document(out, "sim_trace"))


def check_stats(doc):
    """Every level of a sim-trace document adds up."""
    assert doc["experiment"] == "sim-trace"
    for m in doc["measurements"]:
        v = {k: d["value"] for k, d in m["metrics"].items()}
        assert all(d["source"] == "sim" for d in m["metrics"].values())
        if "accesses" in v and "misses" in v:
            assert 0 <= v["misses"] <= v["accesses"]


@settings(max_examples=250, **GEN)
@given(doc=config_doc, raw=st.booleans())
def test_sim_trace_config_documents(tmp, doc, raw):
    """--config FILE: any JSON document (or broken text) simulates or exits 2 in one line."""
    trace = tmp / "config.trace"
    trace.write_text(" L 1000,4\n S 2040,8\n")
    config = tmp / "config.json"
    text = json.dumps(doc, allow_nan=True)
    config.write_text(text[: len(text) // 2] if raw else text)
    code, out, _ = cli(["sim", "trace", trace, "--json", "--config", config], tmp)
    assert code in (0, 2)
    if code == 0:
        assert isinstance(doc, dict) and not raw
        check_stats(json_document(out, "sim_trace"))


@settings(max_examples=250, **GEN)
@given(
    records=st.lists(record, max_size=40),
    bad=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(BAD_LINES)), max_size=2),
    noise=st.lists(st.sampled_from(["", "==12== hello", "--3-- x", "**9** y", "  "]), max_size=3),
)
def test_trace_files(tmp, records, bad, noise):
    """scan_trace and `sim trace` count every record, or name the first malformed line."""
    lines = [record_line(r) for r in records] + list(noise)
    for at, text in sorted(bad, reverse=True):
        lines.insert(min(at, len(lines)), text)
    trace = tmp / "mixed.trace"
    trace.write_text("".join(l + "\n" for l in lines))
    ok, info = api(pagelab.scan_trace, trace)
    code, _, errors = cli(["sim", "trace", trace, "-s", "2", "-E", "2", "-b", "4"], tmp)
    first_bad = next((i + 1 for i, l in enumerate(lines) if l in BAD_LINES), None)
    if first_bad is None:
        assert ok and code == 0
        ops = [r[0] for r in records]
        assert (info.instructions, info.loads, info.stores, info.modifies) == tuple(
            ops.count(o) for o in "ILSM"
        )
    else:
        assert not ok and f"line {first_bad}:" in info
        assert code == 2 and f"line {first_bad}:" in errors[0]


# ---- doctor and argv shapes -------------------------------------------------------------


@settings(max_examples=60, **GEN)
@given(
    argv=st.lists(
        st.sampled_from(
            [
                "doctor",
                "--json",
                "-e",
                "stat",
                "sim",
                "trace",
                "--",
                "-v",
                "--bogus",
                "x",
                "-s",
                "1",
                "--version",
            ]
        ),
        max_size=5,
    )
)
def test_argument_shapes(tmp, argv):
    """Any arrangement of verbs and options is a success or one line, never a traceback."""
    if argv[:1] == ["stat"]:  # no command that exists: /usr/bin/stat would run
        argv = ["stat", *(a for a in argv[1:] if a != "stat")]
    try:
        cli(argv, tmp)
    except SystemExit as e:  # --version prints and exits 0, as argparse does
        assert e.code == 0


@settings(max_examples=80, **GEN)
@given(
    files=st.lists(st.one_of(config_value, st.text(max_size=40)), max_size=3),
    raw=st.booleans(),
    as_json=st.booleans(),
)
def test_report_directories(tmp, files, raw, as_json):
    """`report DIR` over any files: a report of what is there, or one line (never a traceback)."""
    d = tmp / "class"
    d.mkdir(exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    for i, doc in enumerate(files):
        text = doc if raw and isinstance(doc, str) else json.dumps(doc, allow_nan=True)
        (d / f"m{i}.json").write_text(text)
    code, out, _ = cli(["report", d, *(["--json"] * as_json)], tmp)
    if code == 0 and as_json:
        json.loads(out)


@settings(max_examples=40, **GEN)
@given(
    extra=st.lists(st.sampled_from(["--json", "--fast", "-o", "x", "--", "-x"]), max_size=3),
    bad=st.sampled_from(["--bogus", "--fast=1", "-o", "--json=yes"]),
)
def test_bench_refuses_bad_arguments(tmp, extra, bad):
    """`bench` with a bad argument exits 2 in one line before any benchmark runs."""
    code, out, _ = cli(["bench", *extra, bad], tmp)
    assert code == 2 and out == ""


# ---- public functions -------------------------------------------------------------------


@settings(max_examples=400, **GEN)
@given(x=anything, which=st.integers(0, 12))
def test_public_functions_take_any_value(x, which):
    """Every public function given any value: a right answer, or one line of BadInput/TypeError."""
    calls = [
        lambda: pagelab.event(x),
        lambda: pagelab.events(x),
        lambda: pagelab.CounterGroup(x).close(),
        lambda: pagelab.CounterGroup(["task-clock"], pid=x).close(),
        lambda: pagelab.parse_maps(x),
        lambda: pagelab.parameters(x),
        lambda: pagelab.scan_trace(
            Path("/nonexistent", x.lstrip("/")) if isinstance(x, str) else x
        ),
        lambda: pagelab.Simulator(x),
        lambda: pagelab.Simulator({"l1": "1K:2:64", "l2": None, "llc": None}).access(x),
        lambda: pagelab.cachelab("/dev/null", x, 1, 4),
        lambda: pagelab.stat(["pagelab-no-such-command", *x] if isinstance(x, list) else x),
        lambda: pagelab.Reading("r", 1, x),
        lambda: measure_nothing(x),
    ]
    ok, result = api(calls[which])
    if ok and which == 0:
        assert isinstance(result, pagelab.Event)


@settings(max_examples=150, **GEN)
@given(timeout=anything, sim=anything, progress=anything)
def test_run_arguments(timeout, sim, progress):
    """run()'s keywords are checked before anything runs: a bad one is named in the error."""
    ok, text = api(pagelab.run, "maps", timeout=timeout, sim=sim, progress=progress, mapping_kb=0)
    assert not ok  # mapping_kb=0 is out of range: nothing may run
    good_timeout = timeout is None or (
        not isinstance(timeout, bool)
        and isinstance(timeout, (int, float))
        and 0 < timeout < math.inf
    )
    if sim not in (None, True, False):
        assert "sim must be" in text
    elif progress is not None and progress is not True and not callable(progress):
        assert "progress must be" in text
    elif not good_timeout:
        assert "timeout must be" in text
    else:
        assert "mapping_kb must be" in text


@settings(max_examples=200, **GEN)
@given(
    addresses=st.lists(st.integers(-5, 2**65), max_size=20) | anything,
    ops=st.none() | st.integers(-1, 3) | st.lists(st.integers(-1, 3), max_size=20),
    sizes=st.none() | st.integers(-1, 4096) | st.lists(st.integers(0, 4096), max_size=20),
)
def test_simulator_access_arrays(addresses, ops, sizes):
    """Simulator.access counts one access per address (M counts two), or refuses in one line."""
    sim = pagelab.Simulator({"l1": "4K:4:64", "l2": None, "llc": None, "dtlb": None, "stlb": None})
    ok, _ = api(sim.access, addresses, ops, sizes)
    if not ok:
        return
    l1 = sim.stats().levels[0]
    n = len(addresses) if isinstance(addresses, list) else 1
    assert l1.accesses >= n or n == 0 or not isinstance(addresses, list)
    assert l1.misses <= l1.accesses


def measure_nothing(events):
    with pagelab.measure(events) as m:
        pass
    return m


def test_the_suite_is_bounded():
    """The generated examples add up to a few thousand, all derandomised, so runs repeat."""
    used = [
        f._hypothesis_internal_use_settings
        for f in list(globals().values())
        if hasattr(f, "_hypothesis_internal_use_settings")
    ]
    assert len(used) >= 12
    assert 2000 <= sum(s.max_examples for s in used) <= 5000
    assert all(s.derandomize and s.database is None for s in used)
