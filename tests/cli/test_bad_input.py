"""The bad-input and fault campaign's reproducers: each gives one clear line or a right answer."""

import errno
import math
import shutil
import subprocess
import sys

import pytest

import pagelab
from helpers import json_document, run
from pagelab.core.numbers import format_size, parse_int, parse_size


def one_error_line(p, status=2):
    """The single stderr line of a failed CLI run, after checking status and silence."""
    assert p.returncode == status, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    lines = [
        l for l in p.stderr.strip().splitlines() if not l.lstrip().startswith("... ")
    ]  # progress
    assert len(lines) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return lines[0]


@pytest.mark.parametrize("value", ["--5", "²", "①", "5" * 5000, "0x10", "1e3", " ", "+-1"])
def test_set_takes_only_plain_integers(pagelab_cmd, value):
    """--set with a non-ASCII digit, a double sign or a 5,000-digit number: one line, exit 2."""
    line = one_error_line(run(pagelab_cmd + ["run", "maps", "--set", f"mapping_kb={value}"]))
    assert line.startswith("pagelab: error: maps: mapping_kb must be")
    assert len(line) < 200


def test_type_config_events_read_hex_as_hex(pagelab_cmd):
    """1:ff is refused in words; 4:0x1a is config 26; 1:2 is decimal."""
    line = one_error_line(run(pagelab_cmd + ["stat", "-e", "1:ff", "--", "true"]))
    assert "CONFIG must be an integer (decimal or 0x hex), got 'ff'" in line
    assert pagelab.event("4:0x1a").config == 0x1A and pagelab.event("1:2").config == 2
    with pytest.raises(pagelab.UnknownEvent, match=r"TYPE must be in 0\.\.4294967295"):
        pagelab.event("4294967296:1")
    with pytest.raises(pagelab.UnknownEvent, match="CONFIG must be"):
        pagelab.event("1:0x10000000000000000")


def test_huge_numbers_in_sim_options_are_refused(pagelab_cmd, tmp_path):
    """A 5,000-digit --l1 size or -s is one line, not Python's int-string limit."""
    trace = tmp_path / "t.trace"
    trace.write_text(" L 10,4\n")
    big = "9" * 5000
    for args in (["--l1", f"{big}:8:64"], ["-s", big, "-E", "1", "-b", "4"], ["--seed", big]):
        line = one_error_line(run(pagelab_cmd + ["sim", "trace", str(trace), *args]))
        assert "must be" in line or "is not a size" in line
        assert len(line) < 300


def test_config_files_are_read_bounded_and_flat(pagelab_cmd, tmp_path):
    """--config of 100,000 nested [ or of /dev/zero is refused at once in one line."""
    trace = tmp_path / "t.trace"
    trace.write_text(" L 10,4\n")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    nested = tmp_path / "nested.json"
    nested.write_text('{"l1": ' + "[" * 900 + "]" * 900 + "}")
    for config, needle in (
        (deep, "nested too deeply"),
        ("/dev/zero", "longer than 1 MiB"),
        (nested, "SIZE:WAYS:LINE"),
    ):
        cmd = pagelab_cmd + ["sim", "trace", str(trace), "--config", str(config)]
        assert needle in one_error_line(run(cmd, timeout=60))


def test_fd_exhaustion_is_one_line_naming_the_limit(pagelab_cmd):
    """Out of file descriptors, each verb says so in one line and names `ulimit -n`."""
    cases = [("8", ["run", "maps"]), ("6", ["stat", "--", "true"]), ("12", ["run", "competition"])]
    for limit, args in cases:
        cmd = ["sh", "-c", f'ulimit -n {limit} && exec "$@"', "sh", *pagelab_cmd, *args]
        p = run(cmd)
        assert p.returncode == 1, (args, p.stderr)
        errors = [l for l in p.stderr.splitlines() if l.startswith("pagelab:")]
        assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
        assert "Too many open files" in errors[0] and "ulimit -n" in errors[0]


@pytest.mark.parametrize("sig, code", [("SEGV", 139), ("TERM", 143), ("KILL", 137)])
def test_stat_exits_as_a_shell_does_for_a_signalled_child(pagelab_cmd, sig, code):
    """A child killed by signal N: stat exits 128+N and the report names the signal."""
    p = run(pagelab_cmd + ["stat", "--", "sh", "-c", f"kill -{sig} $$"])
    assert p.returncode == code
    assert f"killed by SIG{sig}: exit status {code}" in p.stderr
    p = run(pagelab_cmd + ["stat", "--json", "--", "sh", "-c", f"kill -{sig} $$"])
    doc = json_document(p.stdout, "stat")
    assert (doc["exit_status"], doc["signal"]) == (code, f"SIG{sig}")
    r = pagelab.stat(["sh", "-c", f"kill -{sig} $$"])
    assert (r.exit_status, r.signal, r.to_dict()["signal"]) == (code, f"SIG{sig}", f"SIG{sig}")


def test_stat_of_a_normal_exit_has_no_signal():
    """An ordinary exit keeps its status and carries no signal."""
    r = pagelab.stat(["sh", "-c", "exit 3"])
    assert r.exit_status == 3 and r.signal is None and "signal" not in r.to_dict()


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: pagelab.events(1), "not int"),
        (lambda: pagelab.CounterGroup(1.5), "not float"),
        (lambda: pagelab.scan_trace(None), "not NoneType"),
        (lambda: pagelab.run("maps", timeout="10"), "timeout must be"),
        (lambda: pagelab.run("maps", timeout=math.nan), "timeout must be"),
        (lambda: pagelab.run("maps", timeout=-1), "timeout must be"),
        (lambda: pagelab.run("maps", progress=123), "progress must be"),
        (lambda: pagelab.run("maps", sim="yes"), "sim must be"),
        (lambda: pagelab.run(["maps"]), "is a string"),
        (lambda: pagelab.CounterGroup(pid=2**31), "pid must be"),
        (lambda: pagelab.stat(["echo", "a\x00b"]), "NUL"),
        (lambda: pagelab.stat("echo hi"), "list of strings"),
    ],
)
def test_api_type_errors_are_bad_input(call, needle):
    """Wrong types and ranges in the public API raise BadInput with one line, not TypeError."""
    with pytest.raises(pagelab.BadInput, match=needle) as info:
        call()
    assert "\n" not in str(info.value)


def test_an_empty_access_list_simulates_nothing():
    """Simulator.access([]) is an empty request, not a dtype error."""
    sim = pagelab.Simulator({"l1": "1K:2:64", "l2": None, "llc": None, "dtlb": None, "stlb": None})
    sim.access([])
    assert sim.stats().levels[0].accesses == 0


def test_run_list_names_one_experiment_or_refuses(pagelab_cmd):
    """`run --list cache` lists cache's parameters only; an unknown name is refused."""
    p = run(pagelab_cmd + ["run", "--list", "cache"])
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "cache"
    assert "maps" not in p.stdout.split()
    assert "unknown experiment 'nope'" in one_error_line(
        run(pagelab_cmd + ["run", "--list", "nope"])
    )


def test_competition_names_only_the_directories_it_tried(pagelab_cmd, tmp_path):
    """With PAGELAB_SCRATCH set to a missing directory, the error names that one alone."""
    missing = tmp_path / "missing"
    cmd = ["env", f"PAGELAB_SCRATCH={missing}", *pagelab_cmd, "run", "competition"]
    line = one_error_line(run(cmd))
    assert f"among {missing} (set PAGELAB_SCRATCH" in line and "/var/tmp" not in line


def small_full_tmpfs(tmp_path):
    """A shell prefix that mounts a 64 KiB tmpfs at tmp_path/full and fills it (private mount
    namespace), or None where mounting is not allowed."""
    full = tmp_path / "full"
    full.mkdir()
    setup = f"mount -t tmpfs -o size=64k tmpfs {full} && head -c 65536 /dev/zero > {full}/fill"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", setup], capture_output=True, text=True, check=False
    )
    if not shutil.which("unshare") or probe.returncode != 0:
        return None, full
    return setup + " 2>/dev/null; ", full


def test_maps_on_a_full_tmpfs_explains_the_disk_space(pagelab_cmd, tmp_path):
    """A full scratch directory is one line about disk space (exit 2), never SIGBUS; a full
    $TMPDIR alone is passed over for the next candidate."""
    prefix, full = small_full_tmpfs(tmp_path)
    if prefix is None:
        pytest.skip("cannot mount a small tmpfs here (needs root and unshare -m)")
    cmd = " ".join(pagelab_cmd) + " run maps --json"
    p = run(["unshare", "-m", "sh", "-c", f"{prefix}PAGELAB_SCRATCH={full} exec {cmd}"])
    assert p.returncode in (1, 2)  # refused by the scratch rule, or ENOSPC from the workload
    line = one_error_line(p, status=p.returncode)
    assert "No space left on device" in line or f"{full} has 0 B free" in line
    p = run(["unshare", "-m", "sh", "-c", f"{prefix}TMPDIR={full} exec {cmd}"])
    assert p.returncode == 0, p.stderr


def test_the_maps_workload_itself_says_enospc(tmp_path):
    """Handed a full directory anyway (it filled up after the check), the maps workload fails
    with ENOSPC in words instead of dying of SIGBUS on its first write."""
    prefix, full = small_full_tmpfs(tmp_path)
    if prefix is None:
        pytest.skip("cannot mount a small tmpfs here (needs root and unshare -m)")
    script = (
        "from pagelab.native.workloads import execute, validate\n"
        "try:\n"
        f"    execute('maps', validate('maps', {{}}), cwd={str(full)!r})\n"
        "except OSError as e:\n"
        "    print(e.errno, e.strerror)\n"
    )
    p = run(["unshare", "-m", "sh", "-c", f'{prefix}exec "$0" -c "$1"', sys.executable, script])
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{errno.ENOSPC} maps: cannot reserve a page"), p.stdout


def test_worker_errors_do_not_quote_runpy():
    """A worker's failure message never quotes runpy's 'found in sys.modules' warning."""
    from pagelab.native.worker import call

    with pytest.raises(pagelab.WorkerDied) as info:
        call("pagelab.native.worker:selftest", {"mode": "segv"}, what="selftest")
    assert str(info.value) == "the selftest worker died with SIGSEGV"


def test_a_bug_in_a_task_is_one_line_plus_the_traceback_tail():
    """An unexpected exception in the child: one line naming it, and where it happened."""
    from pagelab.native.worker import call

    with pytest.raises(pagelab.WorkerError) as info:
        call("pagelab.native.worker:selftest", {"mode": "bug"}, what="selftest")
    assert str(info.value) == "the selftest task raised KeyError: 'no such key'"
    tail = info.value.traceback.splitlines()
    assert tail[-1] == "KeyError: 'no such key'" and any("in selftest" in l for l in tail)
    assert info.value._render_traceback_()[0].startswith("WorkerError: the selftest task")


def test_one_parser_and_one_formatter():
    """Sizes and numbers parse one way everywhere; sizes print one way."""
    assert [parse_size(t) for t in ("64", "32K", "1M", "1MiB", "2g", " 4 k ")] == [
        64,
        32 << 10,
        1 << 20,
        1 << 20,
        2 << 30,
        4096,
    ]
    assert parse_int("-12") == -12 and parse_int(" 7 ") == 7 and parse_int("0x1f", hex=True) == 31
    for bad in ("²", "1_000", "0x10", "1.0", "", True, 1.0, None):
        with pytest.raises(pagelab.BadInput):
            parse_int(bad)
    with pytest.raises(pagelab.BadInput, match=r"must be in 1\.\.8, got 9"):
        parse_int("9", "ways", 1, 8)
    assert [format_size(n) for n in (0, 64, 32768, 1310720, 2 << 20, 1234567890, 16384.0)] == [
        "0 B",
        "64 B",
        "32 KiB",
        "1280 KiB",
        "2 MiB",
        "1.1 GiB",
        "16 KiB",
    ]


def test_a_failing_workload_closes_its_counter_group(monkeypatch, tmp_path):
    """The counter group a workload opened is closed when the workload fails, not leaked."""
    from helpers import fd_count
    from pagelab.native import workloads as _workloads

    monkeypatch.chdir(tmp_path)  # execute() moves into its cwd; this puts us back afterwards
    params = _workloads.validate("maps", {})
    before = fd_count()
    kept = []  # tracebacks kept alive, as a notebook keeps the last one: no __del__ to rely on
    for _ in range(3):
        with pytest.raises(OSError, match="cannot create a temp file") as info:
            _workloads.execute("maps", params, events=["task-clock", "page-faults"], cwd="/proc")
        kept.append(info.value)
    assert fd_count() == before


def test_measure_closes_its_group_when_the_block_raises():
    """An exception inside `with measure()` still closes the counter group."""
    from helpers import fd_count

    before = fd_count()
    kept = []
    for _ in range(3):
        with pytest.raises(ZeroDivisionError) as info, pagelab.measure("task-clock"):
            1 / 0  # noqa: B018
        kept.append(info.value)
    assert fd_count() == before
