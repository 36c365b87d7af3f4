"""Helpers shared by the tests (fixtures live in conftest.py)."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

import pagelab

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534  # uid and gid of the unprivileged user the profile tests run as
# The described-machine matrix's per-machine table, printed at the end of the run (conftest.py)
MATRIX_TABLE = pytest.StashKey[str]()
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

# Verdicts on timing: evaluated with evidence in every profile, holding or not with the machine
# and its noise (their logic is tested on made-up curves and rates in the experiments' tests).
TIMED = {
    "latency-plateaus",
    "vsyscall-much-slower",
    "failing-call-not-linear",
    "retry-two-syscalls",
    "thread-create-no-cliff",
    "fix-raises-throughput",
}


def checkout_state():
    """`git status --porcelain` of the checkout (untracked files listed one by one), or None where
    it is not a git checkout (an sdist) or git is missing."""
    try:
        p = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def run(cmd, **kw):
    """Run a command, capturing text output; never raises on a non-zero exit."""
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def stop_group(proc):
    """SIGTERM to the process group ``proc`` leads (SIGKILL if it lingers 30 s); its output."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out


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


class Kernel:
    """A started kernel and a client; run() returns what a cell printed, showed and raised."""

    def __init__(self, spec_dir=None, name="python3"):
        ksm = KernelSpecManager(kernel_dirs=[str(spec_dir)]) if spec_dir else KernelSpecManager()
        self.km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code, timeout=240):
        out = {"stdout": "", "stderr": "", "data": [], "error": None}

        def hook(msg):
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind in ("display_data", "execute_result"):
                out["data"].append(content["data"])
            elif kind == "error":
                out["error"] = f"{content['ename']}: {content['evalue']}"

        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=timeout)
        out["status"] = reply["content"]["status"]
        return out

    def alive(self):
        # ipykernel aborts requests that arrive right after a cell failed (stop_on_error), by
        # design; such a request is answered "aborted" without running, so ask again
        for _ in range(5):
            out = self.run("print(6 * 7)")
            if out["status"] != "aborted":
                break
            time.sleep(0.2)
        assert out["stdout"].strip() == "42", f"status {out['status']}: {out}"
        return True

    def stop(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def csim_reference(records, s, E, b):
    """CS:APP's csim-ref as an obviously-correct model: (op, addr, ...) records, "I" skipped,
    sizes ignored, M = a load then a store; a list per set, most recent last. Returns (hits,
    misses, evictions)."""
    sets = [[] for _ in range(1 << s)]
    hits = misses = evictions = 0
    for op, addr, *_ in records:
        if op == "I":
            continue
        block = addr >> b
        ways = sets[block & ((1 << s) - 1)]
        for _ in range(2 if op == "M" else 1):
            if block in ways:
                hits += 1
                ways.remove(block)
            else:
                misses += 1
                if len(ways) == E:
                    ways.pop(0)
                    evictions += 1
            ways.append(block)
    return hits, misses, evictions


def free_port():
    """A TCP port on the loopback that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
