"""The JSON contract's schema (pagelab/results/schema.json, package data): it is a valid draft
2020-12 schema, every `--json` output follows it (also checked where each command is tested), and it
rejects documents that break the honesty rule."""

import jsonschema
import pytest

import pagelab
from helpers import json_document, run

SCHEMA = pagelab.json_schema()


def _reading(**extra):
    return {"value": 3, "unit": "", "source": "sw", **extra}


def _result():
    return {
        "experiment": "vsyscall",
        "version": pagelab.__version__,
        "params": {"calls": 1000, "pages": "huge"},
        "environment": {
            "profile": "software-only",
            "kernel": "6.1.0",
            "cpu": None,
            "vsyscall": "xonly",
            "thp": "madvise",
            "perf_event_paranoid": 2,
        },
        "measurements": [{"label": "vdso", "metrics": {"page-faults": _reading()}}],
        "claims": [{"id": "a-claim", "text": "t", "holds": True, "evidence": "3x (clock)"}],
        "notes": [],
    }


def _errors(doc):
    return list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc))


def test_the_schema_is_valid_and_ships_in_the_package():
    """json_schema() reads the packaged file, a valid draft 2020-12 schema with one definition
    per command."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert {"doctor", "result", "run_all", "stat", "sim_trace", "cachelab"} <= set(SCHEMA["$defs"])
    assert _errors(_result()) == []


def _broken(edit):
    doc = _result()
    edit(doc)
    return doc


def _pf(d):
    return d["measurements"][0]["metrics"]["page-faults"]


@pytest.mark.parametrize(
    "why, edit",
    [
        ("a reading without its source", lambda d: _pf(d).pop("source")),
        ("an unknown source", lambda d: _pf(d).update(source="guess")),
        ("a missing value without a reason", lambda d: _pf(d).update(value=None)),
        (
            "a fallback without its name",
            lambda d: _pf(d).update(value=None, reason="r", fallback=_reading(source="rusage")),
        ),
        ("an unjudged claim without a reason", lambda d: d["claims"][0].update(holds=None)),
        ("a judged claim without evidence", lambda d: d["claims"][0].update(evidence="")),
        ("an unknown profile", lambda d: d["environment"].update(profile="fast")),
        ("no environment", lambda d: d.pop("environment")),
        ("an unknown top-level key", lambda d: d.update(text="free text")),
    ],
)
def test_the_schema_rejects_dishonest_documents(why, edit):
    """Each document breaks the contract in one way and the schema says so."""
    assert _errors(_broken(edit)), why


def test_a_labelled_fallback_is_accepted():
    """An unavailable reading with its reason and a named stand-in from another source is
    what the contract asks for."""
    doc = _result()
    doc["measurements"][0]["metrics"]["page-faults"] = _reading(
        value=None, reason="seccomp", fallback=_reading(source="rusage"), fallback_name="minflt"
    )
    assert _errors(doc) == []


def test_run_name_json_follows_the_schema(pagelab_cmd):
    """`pagelab run NAME --json` on this machine (the blocked profile is checked in every
    experiment's tests through helpers.run_blocked)."""
    p = run([*pagelab_cmd, "run", "maps", "--json"])
    assert p.returncode == 0, p.stderr
    doc = json_document(p.stdout, "result")
    assert doc["experiment"] == "maps"


def test_a_simulated_run_follows_the_schema():
    """A run with the simulated build (sim readings, hw readings with sim stand-ins where the
    machine cannot count) gives a valid document."""
    doc = pagelab.run("cache", sim=True, sets=64, progress=None).to_dict()
    assert any(r["source"] == "sim" for m in doc["measurements"] for r in m["metrics"].values())
    assert _errors(doc) == []
