"""Helpers shared by the tests (fixtures live in conftest.py)."""

import json
import os
import subprocess
from pathlib import Path

import jsonschema

import pagelab

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534  # uid and gid of the unprivileged user the profile tests run as
# The flags every C file in csrc/ must compile cleanly with (see STYLE.md).
CFLAGS = [
    "-std=c11",
    "-D_GNU_SOURCE",
    "-O2",
    "-Wall",
    "-Wextra",
    "-Wshadow",
    "-Wmissing-prototypes",
    "-Werror",
]


def run(cmd, **kw):
    """Run a command, capturing text output; never raises on a non-zero exit."""
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def json_document(text, kind):
    """Parse one `--json` document and validate it against the package's JSON Schema: the
    definition of its ``kind`` (doctor, result, run_all, stat, sim_trace, cachelab) and the whole
    schema. Raises jsonschema.ValidationError naming the first place it breaks."""
    schema = pagelab.json_schema()
    doc = json.loads(text)
    jsonschema.validate(doc, {"$defs": schema["$defs"], "$ref": f"#/$defs/{kind}"})
    jsonschema.validate(doc, schema)
    return doc


def fd_count():
    return len(os.listdir("/proc/self/fd"))


def run_blocked(tools_dir, pagelab_cmd, experiment, **params):
    """`pagelab run EXPERIMENT --json` under the seccomp launcher (the blocked profile); returns
    the JSON document after checking the run succeeded and really was blocked."""
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    p = run([str(tools_dir / "pl-noperf"), *pagelab_cmd, "run", experiment, "--json", *sets])
    assert p.returncode == 0, p.stderr
    doc = json_document(p.stdout, "result")
    assert doc["environment"]["profile"] == "blocked"
    return doc


def run_as_nobody(python, home, args, **kw):
    """``python ARGS`` as uid/gid nobody with no supplementary groups, in a clean environment
    whose HOME (and Jupyter's runtime directory) is ``home``. exec() after the uid change makes
    the process dumpable again, as a real user's is (perf_event_open checks that)."""
    env = {
        "PATH": f"{Path(python).parent}:/usr/bin:/bin",
        "HOME": str(home),
        "JUPYTER_RUNTIME_DIR": str(Path(home) / "runtime"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }
    kw.setdefault("cwd", str(home))
    return run(
        [str(python), *args], user=NOBODY, group=NOBODY, extra_groups=[], env=env, umask=0o022, **kw
    )
