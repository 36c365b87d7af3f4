"""Every CLI verb: bad input exits 2 with exactly one clear line and runs nothing."""

import pytest

from helpers import json_document, run
from pagelab._native import lib

TOO_MANY = ",".join(f"r{i:x}" for i in range(lib.PL_MAX_EVENTS + 1))


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "required"),
        (["frobnicate"], "invalid choice"),
        (["doctor", "--bogus"], "unrecognized arguments"),
        (["stat"], "needs a command"),
        (["stat", "--"], "needs a command"),
        (["stat", "-e", "page-fault", "--", "true"], "did you mean page-faults"),
        (["stat", "-e", "", "--", "true"], "no events"),
        (
            ["stat", "-e", ",".join(f"r{i:x}" for i in range(lib.PL_MAX_EVENTS + 1)), "--", "true"],
            "at most",
        ),
        (["stat", "--", "no-such-command-pagelab"], "command not found"),
        (["stat", "--", "/etc/hostname"], "cannot run"),
    ],
)
def test_bad_input_exits_2_with_one_line(pagelab_cmd, args, needle):
    """Bad input: exit status 2, one line on stderr naming the problem, nothing on stdout."""
    p = run(pagelab_cmd + args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pagelab: error:"), p.stderr
    assert needle in lines[0]
    assert p.stdout == ""


def test_doctor_json_is_one_document(pagelab_cmd):
    """doctor --json prints exactly one JSON document with the profile and every event."""
    p = run(pagelab_cmd + ["doctor", "--json"])
    assert p.returncode == 0
    doc = json_document(p.stdout, "doctor")
    assert doc["profile"] in ("full", "software-only", "blocked")
    assert len(doc["events"]) == 25  # the event table, csrc/perf/events.c
    assert all(e["available"] or (e["reason"] and e["fix"]) for e in doc["events"])


def test_doctor_text_names_profile_and_fixes(pagelab_cmd):
    """The human report leads with the profile and lists a fix for every missing event."""
    p = run(pagelab_cmd + ["doctor"])
    assert p.returncode == 0
    assert p.stdout.startswith("profile: ")
    if "not available" in p.stdout:
        assert "to get the missing events:" in p.stdout


def test_doctor_on_this_machine_matches_its_profile(pagelab_cmd):
    """Here (a VM without PMU): software-only, sw page-faults, dTLB misses stopped by no PMU."""
    doc = json_document(run(pagelab_cmd + ["doctor", "--json"]).stdout, "doctor")
    if doc["profile"] != "software-only":
        pytest.skip(f"this machine's profile is {doc['profile']}, not software-only")
    ev = {e["name"]: e for e in doc["events"]}
    assert ev["page-faults"]["available"] and ev["page-faults"]["source"] == "sw"
    assert not ev["dTLB-load-misses"]["available"]
    assert ev["dTLB-load-misses"]["errno"] in ("ENOENT", "EOPNOTSUPP")
    assert "PMU" in ev["dTLB-load-misses"]["reason"]


def test_bench_outside_a_checkout_is_one_clear_error(pagelab_cmd, tmp_path):
    """`pagelab bench` runs the checkout's `python -m bench`; outside a checkout it says so in
    one line and exits 2, running nothing."""
    p = run([*pagelab_cmd, "bench", "--fast"], cwd=tmp_path)
    assert p.returncode == 2 and "inside one" in p.stderr and len(p.stderr.splitlines()) == 1
