"""The blocked and unprivileged profiles, produced for real: a seccomp filter and a uid drop."""

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import NOBODY, json_document, run
from pagelab.machine import environment as env


def test_doctor_under_seccomp_is_blocked(tools_dir, pagelab_cmd):
    """Under a seccomp filter denying perf_event_open, doctor says blocked and names seccomp."""
    p = run([str(tools_dir / "pl-noperf"), *pagelab_cmd, "doctor", "--json"])
    assert p.returncode == 0, p.stderr
    doc = json_document(p.stdout, "doctor")
    assert doc["profile"] == "blocked"
    assert doc["environment"]["seccomp"] == "filter"
    pf = next(e for e in doc["events"] if e["name"] == "page-faults")
    assert pf["available"] is False and pf["errno"] == "EACCES"
    assert "seccomp" in pf["reason"] and "seccomp" in pf["fix"]


def test_stat_under_seccomp_falls_back_to_rusage(tools_dir, pagelab_cmd):
    """Blocked: page-faults is unavailable with its reason, and rusage stands in, labelled."""
    p = run(
        [
            str(tools_dir / "pl-noperf"),
            *pagelab_cmd,
            "stat",
            "-e",
            "page-faults",
            "--json",
            "--",
            str(tools_dir / "pl-touch"),
            "64",
        ]
    )
    assert p.returncode == 0, p.stderr
    pf = json_document(p.stdout, "stat")["measurements"][0]["metrics"]["page-faults"]
    assert pf["value"] is None and "seccomp" in pf["reason"]
    assert pf["fallback"]["source"] == "rusage" and pf["fallback"]["value"] >= 64 << 8


# Everything the CLI needs is imported before the uid drop: the interpreter may live under a
# directory (e.g. /root/.pyenv) that the unprivileged user cannot read. setuid() leaves the
# process non-dumpable, which would deny perf_event_open on its own children (ptrace access
# check); a real user's login process is dumpable, so restore that (PR_SET_DUMPABLE = 4).
_AS_NOBODY = textwrap.dedent(f"""
    import ctypes, json, os, sys, platform, shutil, signal, difflib, resource, locale
    import pagelab.cli.main, pagelab.counters.doctor, pagelab.counters.stat
    os.setgroups([]); os.setgid({NOBODY}); os.setuid({NOBODY})
    assert os.geteuid() == {NOBODY} and ctypes.CDLL(None).prctl(4, 1, 0, 0, 0) == 0
    sys.exit(pagelab.cli.main.main(sys.argv[1:]))
""")


def as_nobody(args):
    if os.geteuid() != 0:
        pytest.skip("dropping to an unprivileged uid needs root; this test run is unprivileged")
    return subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )


def _paranoid():
    """This kernel's level, through pagelab's own reader (any level a kernel has is accepted)."""
    level = env.perf_event_paranoid()
    if level is None:
        pytest.skip("this kernel (or sandbox) shows no perf_event_paranoid")
    return level


def test_doctor_unprivileged_gets_software_events_user_space_only():
    """At perf_event_paranoid 2 an unprivileged user still counts sw events via exclude_kernel."""
    paranoid = _paranoid()
    p = as_nobody(["doctor", "--json"])
    assert p.returncode == 0, p.stderr
    doc = json_document(p.stdout, "doctor")
    assert doc["environment"]["uid"] == NOBODY and doc["environment"]["cap_perfmon"] is False
    pf = next(e for e in doc["events"] if e["name"] == "page-faults")
    if paranoid > 2:
        assert pf["available"] is False and "paranoid" in pf["reason"]
        return
    assert doc["profile"] in ("software-only", "full")
    assert pf["available"] is True
    assert pf["kernel_excluded"] is (paranoid == 2)


def test_stat_unprivileged_counts_user_faults(tools_dir):
    """Unprivileged stat of a 64 MiB toucher counts its faults and marks them user-space only."""
    if _paranoid() != 2:
        pytest.skip("this check is for perf_event_paranoid=2, the common distribution default")
    p = as_nobody(["stat", "-e", "page-faults", "--json", "--", str(tools_dir / "pl-touch"), "64"])
    assert p.returncode == 0, p.stderr
    pf = json_document(p.stdout, "stat")["measurements"][0]["metrics"]["page-faults"]
    assert pf["source"] == "sw" and pf["kernel_excluded"] is True
    assert pf["value"] >= 64 << 8
