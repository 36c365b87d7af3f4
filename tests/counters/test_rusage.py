"""The rusage fallbacks: getrusage/wait4 fields and /proc/PID/stat for other processes."""

import os
import subprocess
import sys

import pytest

from pagelab import BadInput
from pagelab.counters import rusage as _rusage


def test_proc_stat_parses_a_name_with_spaces_and_parentheses(tmp_path):
    """Fields are counted after the last ')', so a command name like 'a) (b' cannot shift them."""
    tick = os.sysconf("SC_CLK_TCK")
    stat = (
        f"4242 (a) (b c) S 1 4242 4242 0 -1 4194560 17 0 3 0 {5 * tick} {2 * tick} "
        "0 0 20 0 1 0 100 0 0\n"
    )
    (tmp_path / "proc" / "4242").mkdir(parents=True)
    (tmp_path / "proc" / "4242" / "stat").write_text(stat)
    assert _rusage.proc_stat(4242, tmp_path) == {
        "minflt": 17,
        "majflt": 3,
        "utime": 5.0,
        "stime": 2.0,
    }


def test_proc_stat_of_a_real_process_sees_its_faults():
    """A child that touched 32 MiB shows at least 8192 minor faults in /proc/PID/stat."""
    code = (
        "import mmap, sys; m = mmap.mmap(-1, 32 << 20); m.madvise(mmap.MADV_NOHUGEPAGE)\n"
        "for o in range(0, len(m), 4096): m[o] = 1\n"
        "print('ready', flush=True); sys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline() == "ready\n"
        got = _rusage.proc_stat(child.pid)
        assert got["minflt"] >= 8192 and got["majflt"] >= 0 and got["utime"] >= 0
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def test_proc_stat_rejects_bad_pids():
    """A missing process is ProcessLookupError; a non-positive or non-integer pid is BadInput."""
    with pytest.raises(ProcessLookupError):
        _rusage.proc_stat(2**22 + 12345)
    for pid in (0, -3, "12", True):
        with pytest.raises(BadInput):
            _rusage.proc_stat(pid)


def test_rusage_delta_keeps_maxrss_as_a_high_water_mark():
    """Counters are differenced; maxrss is reported as is, because it never goes down."""
    before = dict.fromkeys(_rusage.FIELDS, 1) | {"maxrss": 100}
    after = dict.fromkeys(_rusage.FIELDS, 5) | {"maxrss": 300}
    d = _rusage.delta(before, after)
    assert d["minflt"] == 4 and d["maxrss"] == 300


def test_proc_status_reads_rss_and_context_switches(tmp_path):
    """VmRSS (KiB) and both context-switch counts come from /proc/PID/status by name; a zombie
    without VmRSS holds 0 KiB; a missing process is ProcessLookupError."""
    (tmp_path / "proc" / "77").mkdir(parents=True)
    (tmp_path / "proc" / "77" / "status").write_text(
        "Name:\tpython3\nVmRSS:\t  123456 kB\nvoluntary_ctxt_switches:\t12\n"
        "nonvoluntary_ctxt_switches:\t3\n"
    )
    assert _rusage.proc_status(77, tmp_path) == {"rss": 123456, "nvcsw": 12, "nivcsw": 3}
    (tmp_path / "proc" / "77" / "status").write_text("Name:\tx\nState:\tZ (zombie)\n")
    assert _rusage.proc_status(77, tmp_path) == {"rss": 0}
    with pytest.raises(ProcessLookupError):
        _rusage.proc_status(2**22 + 12345)
    assert _rusage.proc_status(os.getpid())["rss"] > 0
